#!/usr/bin/env python3
"""Checks the CPU EP's com.microsoft quantization kernels against onnxruntime.

Each case builds a small model with onnx.helper (or takes one from onnxruntime's quantizer or
the ddddocr wheel), feeds deterministic random inputs to onnxruntime's CPU provider and to
`nxrt run`, and compares every output: floats within 1e-4 * max(1, max|ort|), integers
exactly. See uint8_weight_reference and reference_options for the two ways the onnxruntime
reference run differs from a default session, and why.

usage: python3 tests/eps/cpu/contrib_quantized_check.py --build-dir build [--ddddocr-dir DIR]
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
NP_TO_ONNX = {np.float32: TensorProto.FLOAT, np.int8: TensorProto.INT8,
              np.uint8: TensorProto.UINT8, np.int32: TensorProto.INT32,
              np.int64: TensorProto.INT64}


# onnxruntime's x86 kernels for uint8 activations times int8 weights use VPMADDUBSW on CPUs
# without AVX-VNNI: the products of each pair of consecutive k are summed in int16 with
# saturation, so onnxruntime's result is not the exact product there (onnxruntime's quantization
# docs describe this and suggest reduce_range or uint8 weights). nxrt computes the exact product.
# To compare against the exact math, onnxruntime runs an equivalent model whose int8 weights
# (and zero points) are shifted by +128 to uint8: (w + 128) - (zp + 128) = w - zp, so the real
# values are unchanged and onnxruntime takes its uint8 x uint8 path, which does not saturate.
# nxrt always runs the original model.
U8S8_WEIGHTS = {  # op: [(weight input, zero point input, scale input for the zp's shape)]
    "DynamicQuantizeLSTM": [(1, 9, 8), (2, 11, 10)],
    "DynamicQuantizeMatMul": [(1, 3, 2)],
    "MatMulIntegerToFloat": [(1, 5, 3)],
    "MatMulInteger": [(1, 3, None)],
    "ConvInteger": [(1, 3, None)],
    "QLinearConv": [(3, 5, 4)],
    "QLinearMatMul": [(3, 5, 4)],
    "QGemm": [(3, 5, 4)],
    "QAttention": [(1, 7, 4)],
}
ACTIVATION_ZERO_POINT = {"MatMulIntegerToFloat": 4, "MatMulInteger": 2, "ConvInteger": 2,
                         "QLinearConv": 2, "QLinearMatMul": 2, "QGemm": 2, "QAttention": 6}
FLOAT_ACTIVATION_OPS = {"DynamicQuantizeLSTM", "DynamicQuantizeMatMul"}


def uint8_weight_reference(model):
    """The model with every int8 weight of a uint8-activation product re-expressed as uint8."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    producers = {o: n.op_type for n in g.node for o in n.output}
    input_types = {i.name: i.type.tensor_type.elem_type for i in g.input}
    changed = False
    for idx, node in enumerate(g.node):
        if node.op_type not in U8S8_WEIGHTS:
            continue
        if node.op_type not in FLOAT_ACTIVATION_OPS:
            a = node.input[0]
            zi = ACTIVATION_ZERO_POINT[node.op_type]
            a_zp = node.input[zi] if zi < len(node.input) else ""
            a_is_u8 = (producers.get(a) == "DynamicQuantizeLinear"
                       or input_types.get(a) == TensorProto.UINT8
                       or (a in inits and inits[a].data_type == TensorProto.UINT8)
                       or (a_zp in inits and inits[a_zp].data_type == TensorProto.UINT8))
            if not a_is_u8:
                continue
        ins = list(node.input)
        for wi, zi, si in U8S8_WEIGHTS[node.op_type]:
            if wi >= len(ins) or ins[wi] not in inits:
                continue
            w = numpy_helper.to_array(inits[ins[wi]])
            if w.dtype != np.int8:
                continue
            while len(ins) <= zi:
                ins.append("")
            if ins[zi]:
                zp = numpy_helper.to_array(inits[ins[zi]])
            elif si is not None:
                zp = np.zeros(numpy_helper.to_array(inits[ins[si]]).shape, np.int8)
            else:
                zp = np.int8(0)
            tag = f"_u8ref{idx}_{wi}"
            g.initializer.append(tensor(ins[wi] + tag, (w.astype(np.int16) + 128).astype(np.uint8)))
            g.initializer.append(tensor(f"zp{tag}",
                                        (np.asarray(zp).astype(np.int16) + 128).astype(np.uint8)))
            ins[wi], ins[zi] = ins[wi] + tag, f"zp{tag}"
            changed = True
        del node.input[:]
        node.input.extend(ins)
    return m if changed else model


def reference_options():
    # One intra-op thread: onnxruntime's quantized LSTM splits the batch over its threads and
    # quantizes each part of H_{t-1} with its own range, so its numbers depend on the thread
    # count. With one thread the range covers the whole batch, which is what nxrt does always.
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return so


class Checker:
    def __init__(self, build_dir, work):
        self.nxrt = os.path.join(build_dir, "bin", "nxrt")
        self.work = work
        self.passed = 0
        self.failed = 0
        self.count = 0

    def run(self, name, model, feeds, rtol_scale=1e-4, compare=None, int_tol=0, reference=None):
        """Runs `model` (ModelProto or path) in both runtimes and compares all outputs."""
        self.count += 1
        case_dir = os.path.join(self.work, f"case{self.count}")
        os.makedirs(case_dir)
        if not isinstance(model, onnx.ModelProto):
            path, model = model, onnx.load(model)
        else:
            path = os.path.join(case_dir, "model.onnx")
            onnx.save(model, path)
        try:
            ref = uint8_weight_reference(model if reference is None else reference)
            ref_path = path
            if ref is not model:
                ref_path = os.path.join(case_dir, "reference.onnx")
                onnx.save(ref, ref_path)
            sess = ort.InferenceSession(ref_path, reference_options(),
                                        providers=["CPUExecutionProvider"])
            names = [o.name for o in sess.get_outputs()]
            expected = dict(zip(names, sess.run(None, feeds)))
            cmd = [self.nxrt, "run", path, "--output-dir", os.path.join(case_dir, "out")]
            for k, v in feeds.items():
                f = os.path.join(case_dir, f"in_{len(cmd)}.npy")
                np.save(f, v)
                cmd += ["--input", f"{k}={f}"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError(f"nxrt failed: {(r.stderr or r.stdout).strip()[-400:]}")
            worst = ""
            ok = True
            for n in names:
                got = np.load(os.path.join(case_dir, "out", f"{n}.npy"))
                exp = expected[n]
                if got.shape != exp.shape or got.dtype != exp.dtype:
                    ok = False
                    worst = f"{n}: {got.dtype}{got.shape} vs ort {exp.dtype}{exp.shape}"
                    break
                if exp.size == 0:
                    continue
                if compare is not None:
                    good, detail = compare(got, exp)
                    ok = ok and good
                    worst += f" {n}:{detail}"
                    continue
                if np.issubdtype(exp.dtype, np.floating):
                    diff = float(np.max(np.abs(got.astype(np.float64) - exp)))
                    tol = rtol_scale * max(1.0, float(np.max(np.abs(exp))))
                    worst += f" {n}:{diff:.2e}/{tol:.1e}"
                    ok = ok and diff <= tol
                else:
                    diff = int(np.max(np.abs(got.astype(np.int64) - exp.astype(np.int64))))
                    worst += f" {n}:{diff}"
                    ok = ok and diff <= int_tol
            self.report(name, ok, worst.strip())
        except Exception as e:  # one broken case must not stop the others
            self.report(name, False, str(e).splitlines()[0][:300] if str(e) else repr(e))

    def expect_error(self, name, model, feeds, needles):
        """Runs `model` in nxrt, which must fail cleanly with every string of `needles` in its
        message."""
        self.count += 1
        case_dir = os.path.join(self.work, f"case{self.count}")
        os.makedirs(case_dir)
        path = os.path.join(case_dir, "model.onnx")
        onnx.save(model, path)
        cmd = [self.nxrt, "run", path]
        for k, v in feeds.items():
            f = os.path.join(case_dir, f"in_{len(cmd)}.npy")
            np.save(f, v)
            cmd += ["--input", f"{k}={f}"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        message = (r.stderr + r.stdout).strip()
        missing = [n for n in needles if n not in message]
        ok = r.returncode == 1 and not missing
        errors = [line for line in message.splitlines() if "error" in line]
        detail = (errors or message.splitlines() or [f"exit {r.returncode}"])[-1][:300]
        if missing:
            detail = f"exit {r.returncode}, message lacks {missing}: {detail}"
        self.report(name, ok, detail)

    def report(self, name, ok, detail):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def tensor(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def vinfo(name, dtype, shape):
    return helper.make_tensor_value_info(name, NP_TO_ONNX[dtype], shape)


def make_model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=OPSETS)
    m.ir_version = 8
    return m


def qweight(rng, dtype, shape):
    lo, hi = (-128, 128) if dtype == np.int8 else (0, 256)
    return rng.integers(lo, hi, size=shape).astype(dtype)


# ---- DynamicQuantizeLSTM -------------------------------------------------------------------

def lstm_cases(c, rng):
    configs = [
        # (direction, wtype, per_column, zero_points, batch, with B/init/P, seq, input, hidden)
        # onnxruntime requires int8 weights' zero points to be 0, and nonzero zero points only
        # per direction.
        ("forward", np.int8, False, False, 1, False, 5, 8, 6),
        ("forward", np.int8, True, False, 1, True, 6, 12, 8),
        ("reverse", np.uint8, False, True, 1, True, 4, 7, 5),
        ("bidirectional", np.int8, True, False, 1, True, 7, 16, 16),
        ("bidirectional", np.uint8, True, False, 1, False, 3, 5, 4),
        ("forward", np.int8, False, False, 3, True, 5, 10, 8),
        ("bidirectional", np.int8, True, False, 2, True, 6, 9, 7),
        # sequence_lens: only lengths equal to X's (shorter ones are refused, see the kernel)
        ("bidirectional", np.uint8, False, True, 3, True, 5, 6, 4, [5, 5, 5]),
        ("forward", np.int8, False, False, 2, False, 4, 6, 4, [4, 4]),
        ("reverse", np.uint8, False, True, 2, True, 6, 5, 4, [6, 6]),
    ]
    for direction, wt, per_col, zps, batch, extras, S, I, H, *lens in configs:
        D = 2 if direction == "bidirectional" else 1
        G = 4 * H
        W = qweight(rng, wt, (D, I, G))
        R = qweight(rng, wt, (D, H, G))
        sshape = (D, G) if per_col else (D,)
        w_scale = rng.uniform(0.002, 0.02, sshape).astype(np.float32)
        r_scale = rng.uniform(0.002, 0.02, sshape).astype(np.float32)
        if zps:
            w_zp = qweight(rng, wt, sshape)
            r_zp = qweight(rng, wt, sshape)
        else:
            w_zp = np.zeros(sshape, wt)
            r_zp = np.zeros(sshape, wt)
        inits = [tensor("W", W), tensor("R", R), tensor("w_scale", w_scale),
                 tensor("w_zp", w_zp), tensor("r_scale", r_scale), tensor("r_zp", r_zp)]
        names = ["X", "W", "R", "", "", "", "", "", "w_scale", "w_zp", "r_scale", "r_zp"]
        feeds = {"X": rng.standard_normal((S, batch, I)).astype(np.float32)}
        inputs = [vinfo("X", np.float32, [S, batch, I])]
        if extras:
            inits.append(tensor("B", rng.standard_normal((D, 8 * H)).astype(np.float32) * 0.1))
            inits.append(tensor("P", rng.standard_normal((D, 3 * H)).astype(np.float32) * 0.1))
            names[3] = "B"
            names[7] = "P"
            for n in ("h0", "c0"):
                feeds[n] = (rng.standard_normal((D, batch, H)) * 0.5).astype(np.float32)
                inputs.append(vinfo(n, np.float32, [D, batch, H]))
            names[5], names[6] = "h0", "c0"
        if lens:
            inits.append(tensor("lens", np.array(lens[0], np.int32)))
            names[4] = "lens"
        node = helper.make_node("DynamicQuantizeLSTM", names, ["Y", "Y_h", "Y_c"],
                                domain="com.microsoft", direction=direction, hidden_size=H)
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                for n in ("Y", "Y_h", "Y_c")]
        m = make_model([node], inputs, outs, inits)
        label = (f"DynamicQuantizeLSTM {direction} {np.dtype(wt).name} "
                 f"{'per-column' if per_col else 'per-direction'} zp={zps} batch={batch} "
                 f"extras={extras} S={S} I={I} H={H}" + (f" sequence_lens={lens[0]}" if lens else ""))
        c.run(label, m, feeds)


# ---- MatMulIntegerToFloat / DynamicQuantizeMatMul ------------------------------------------

def matmul_cases(c, rng):
    for at, bt, a_zp, b_zp, per_col, bias, a_shape, N in [
        (np.uint8, np.int8, True, False, False, False, (4, 16), 8),
        (np.uint8, np.int8, True, True, True, True, (2, 3, 32), 24),
        (np.uint8, np.uint8, True, True, False, True, (1, 64), 40),
        (np.int8, np.int8, False, False, True, False, (5, 7), 3),
        (np.int8, np.int8, True, True, True, True, (6, 33), 17),  # (onnxruntime has no s8 x u8)
        (np.uint8, np.int8, False, True, True, True, (1, 1, 128), 256),
    ]:
        K = a_shape[-1]
        B = qweight(rng, bt, (K, N))
        bs_shape = (N,) if per_col else ()
        b_scale = rng.uniform(0.001, 0.05, bs_shape).astype(np.float32)
        inits = [tensor("B", B), tensor("a_scale", np.float32(0.037)),
                 tensor("b_scale", b_scale)]
        names = ["A", "B", "a_scale", "b_scale", "", "", ""]
        if a_zp:
            inits.append(tensor("a_zp", qweight(rng, at, ())))
            names[4] = "a_zp"
        if b_zp:
            inits.append(tensor("b_zp", qweight(rng, bt, bs_shape)))
            names[5] = "b_zp"
        if bias:
            inits.append(tensor("bias", rng.standard_normal(N).astype(np.float32)))
            names[6] = "bias"
        while names[-1] == "":
            names.pop()
        node = helper.make_node("MatMulIntegerToFloat", names, ["Y"], domain="com.microsoft")
        m = make_model([node], [vinfo("A", at, list(a_shape))],
                       [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
        feeds = {"A": qweight(rng, at, a_shape)}
        c.run(f"MatMulIntegerToFloat A={np.dtype(at).name}{list(a_shape)} "
              f"B={np.dtype(bt).name}[{K},{N}] a_zp={a_zp} b_zp={b_zp} per_column={per_col} "
              f"bias={bias}", m, feeds)

    for bt, b_zp, per_col, bias, a_shape, N in [
        (np.int8, False, False, False, (4, 16), 8),
        (np.int8, False, True, True, (1, 64), 48),
        (np.uint8, True, False, True, (2, 5, 24), 12),
        (np.uint8, True, True, False, (3, 40), 33),
        (np.int8, True, True, True, (1, 1, 256), 128),
    ]:
        K = a_shape[-1]
        bs_shape = (N,) if per_col else ()
        inits = [tensor("B", qweight(rng, bt, (K, N))),
                 tensor("b_scale", rng.uniform(0.001, 0.05, bs_shape).astype(np.float32))]
        names = ["A", "B", "b_scale", "", ""]
        if b_zp:
            inits.append(tensor("b_zp", qweight(rng, bt, bs_shape)))
            names[3] = "b_zp"
        if bias:
            inits.append(tensor("bias", rng.standard_normal(N).astype(np.float32)))
            names[4] = "bias"
        while names[-1] == "":
            names.pop()
        node = helper.make_node("DynamicQuantizeMatMul", names, ["Y"], domain="com.microsoft")
        m = make_model([node], [vinfo("A", np.float32, list(a_shape))],
                       [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)
        feeds = {"A": rng.standard_normal(a_shape).astype(np.float32)}
        c.run(f"DynamicQuantizeMatMul A={list(a_shape)} B={np.dtype(bt).name}[{K},{N}] "
              f"b_zp={b_zp} per_column={per_col} bias={bias}", m, feeds)

    # The standard MatMulInteger: its 2-D-B path now shares the packed int16 product.
    for at, bt, a_shape, b_shape, a_zp_shape, b_zp_shape in [
        (np.uint8, np.int8, (2, 5, 24), (24, 12), (), (12,)),
        (np.uint8, np.uint8, (30,), (30, 7), (), ()),
        (np.int8, np.int8, (4, 16), (16, 9), (), ()),  # (onnxruntime has no per-row A zero point)
        (np.uint8, np.uint8, (2, 3, 8), (2, 8, 5), (), ()),  # batched B: packed per entry
    ]:
        inits = [tensor("B", qweight(rng, bt, b_shape)), tensor("a_zp", qweight(rng, at, a_zp_shape)),
                 tensor("b_zp", qweight(rng, bt, b_zp_shape))]
        node = helper.make_node("MatMulInteger", ["A", "B", "a_zp", "b_zp"], ["Y"])
        m = make_model([node], [vinfo("A", at, list(a_shape))], [vinfo("Y", np.int32, None)], inits)
        c.run(f"MatMulInteger A={np.dtype(at).name}{list(a_shape)} B={np.dtype(bt).name}"
              f"{list(b_shape)} a_zp{list(a_zp_shape)} b_zp{list(b_zp_shape)}", m,
              {"A": qweight(rng, at, a_shape)})

    # A B given at run time, batched and broadcast against A: one product per entry of B.
    a_shape, b_shape = (3, 1, 4, 24), (2, 24, 5)
    node = helper.make_node("MatMulInteger", ["A", "B", "a_zp"], ["Y"])
    m = make_model([node], [vinfo("A", np.uint8, list(a_shape)), vinfo("B", np.uint8, list(b_shape))],
                   [vinfo("Y", np.int32, None)], [tensor("a_zp", np.array(120, np.uint8))])
    c.run(f"MatMulInteger A=uint8{list(a_shape)} B=uint8{list(b_shape)} (run-time B)", m,
          {"A": qweight(rng, np.uint8, a_shape), "B": qweight(rng, np.uint8, b_shape)})

    # QLinearMatMul: the blocked 8-bit GEMM, requantized in its epilogue (int8 or uint8 out).
    for at, bt, a_shape, b_shape, per_col, b_input in [
        (np.uint8, np.int8, (2, 5, 40), (40, 33), True, False),
        (np.uint8, np.uint8, (37,), (37, 21), False, False),
        (np.int8, np.int8, (4, 64), (64, 20), True, False),
        (np.uint8, np.uint8, (3, 4, 24), (3, 24, 18), False, True),
    ]:
        k = a_shape[-1]
        ia, na = qparams(rng, at, "a")
        b_scale = rng.uniform(0.005, 0.02, (b_shape[-1],) if per_col else ()).astype(np.float32)
        lo, hi = (-10, 10) if bt == np.int8 else (118, 138)
        b_zp = rng.integers(lo, hi, b_scale.shape).astype(bt)
        iy, ny = qparams(rng, at, "y")
        # Outputs spread over the 8-bit range: the sums' spread is about 74^2 sqrt(k).
        y_scale = float(numpy_helper.to_array(ia[0])) * 0.0125 * 74 * 74 * np.sqrt(k) / 50
        iy[0] = tensor("y_scale", np.float32(y_scale))
        inits = ia + [tensor("b_scale", b_scale), tensor("b_zp", b_zp)] + iy
        inputs = [vinfo("A", at, list(a_shape))]
        feeds = {"A": qweight(rng, at, a_shape)}
        if b_input:
            inputs.append(vinfo("B", bt, list(b_shape)))
            feeds["B"] = qweight(rng, bt, b_shape)
        else:
            inits.append(tensor("B", qweight(rng, bt, b_shape)))
        node = helper.make_node("QLinearMatMul", ["A", *na, "B", "b_scale", "b_zp", *ny], ["Y"])
        m = make_model([node], inputs, [vinfo("Y", at, None)], inits)
        c.run(f"QLinearMatMul A={np.dtype(at).name}{list(a_shape)} B={np.dtype(bt).name}"
              f"{list(b_shape)} per_column={per_col} run_time_B={b_input}", m, feeds, int_tol=1)

    # The standard ConvInteger: rows of taps onto the blocked 8-bit GEMM (the last case's
    # 128 x 3 x 3 taps span two K blocks of the VNNI and AMX paths).
    for xt, wt, x_shape, w_shape, attrs, w_zp_shape in [
        (np.uint8, np.uint8, (1, 3, 9, 9), (4, 3, 3, 3), dict(pads=[1, 1, 1, 1]), ()),
        (np.uint8, np.int8, (2, 4, 8, 7), (6, 2, 3, 2), dict(group=2, strides=[2, 1]), ()),
        (np.uint8, np.uint8, (1, 6, 7, 7), (6, 1, 3, 3),
         dict(group=6, pads=[1, 1, 1, 1], dilations=[2, 2]), ()),  # (ort: per-tensor w_zp only)
        (np.uint8, np.int8, (1, 5, 12), (3, 5, 4), dict(pads=[2, 1]), ()),
        (np.uint8, np.int8, (1, 128, 10, 10), (20, 128, 3, 3), dict(pads=[1, 1, 1, 1]), ()),
    ]:
        inits = [tensor("W", qweight(rng, wt, w_shape)), tensor("x_zp", qweight(rng, xt, ())),
                 tensor("w_zp", qweight(rng, wt, w_zp_shape) // 2)]
        node = helper.make_node("ConvInteger", ["X", "W", "x_zp", "w_zp"], ["Y"], **attrs)
        m = make_model([node], [vinfo("X", xt, list(x_shape))], [vinfo("Y", np.int32, None)], inits)
        c.run(f"ConvInteger X={np.dtype(xt).name}{list(x_shape)} W={np.dtype(wt).name}"
              f"{list(w_shape)} {attrs} w_zp{list(w_zp_shape)}", m, {"X": qweight(rng, xt, x_shape)})


# ---- MatMulNBits ---------------------------------------------------------------------------

def nbits_cases(c, rng):
    for K, N, bs, zp_kind, bias, a_shape_prefix, *level in [
        (64, 32, 16, False, False, (1,)),
        (64, 48, 16, "packed", True, (5,)),
        (128, 40, 32, "packed", False, (1, 1)),
        (100, 24, 32, "packed", True, (3,)),
        (256, 64, 128, False, True, (1,)),
        (256, 20, 128, "packed", False, (2, 3)),
        (96, 33, 32, "float", True, (1,)),
        (160, 16, 32, "float", False, (4,)),
        (4096 // 4, 512, 32, "packed", True, (1,)),
        # More than 16 rows: panels of B dequantized to float, then SGEMMs.
        (64, 40, 32, "packed", True, (20,)),
        (200, 24, 16, "float", False, (2, 17)),
        (256, 32, 128, False, True, (33,)),
        (96, 130, 32, "packed", True, (2, 12)),  # three 64-column panels, the last partial
        # accuracy_level 4 lets onnxruntime quantize A to int8 per block; nxrt stays in fp32,
        # which every level allows: compared with onnxruntime's fp32 (level 0) result.
        (128, 48, 32, "packed", True, (1,), 4),
        (256, 40, 16, False, False, (3, 5), 4),
    ]:
        blocks = (K + bs - 1) // bs
        q = rng.integers(0, 16, size=(N, blocks * bs)).astype(np.uint8)
        q[:, K:] = 0
        packed = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(N, blocks, bs // 2)
        scales = rng.uniform(0.01, 0.1, (N * blocks,)).astype(np.float32)
        inits = [tensor("B", packed), tensor("scales", scales)]
        names = ["A", "B", "scales", "", "", ""]
        if zp_kind == "packed":
            z = rng.integers(0, 16, size=(N, blocks + (blocks % 2))).astype(np.uint8)
            inits.append(tensor("zp", (z[:, 0::2] | (z[:, 1::2] << 4)).astype(np.uint8)))
            names[3] = "zp"
        elif zp_kind == "float":
            inits.append(tensor("zp", rng.uniform(0, 15, (N * blocks,)).astype(np.float32)))
            names[3] = "zp"
        if bias:
            inits.append(tensor("bias", rng.standard_normal(N).astype(np.float32)))
            names[5] = "bias"
        while names[-1] == "":
            names.pop()
        a_shape = list(a_shape_prefix) + [K]

        def model_at(accuracy_level):
            node = helper.make_node("MatMulNBits", names, ["Y"], domain="com.microsoft", K=K,
                                    N=N, bits=4, block_size=bs, accuracy_level=accuracy_level)
            return make_model([node], [vinfo("A", np.float32, a_shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], inits)

        accuracy_level = level[0] if level else 0
        feeds = {"A": rng.standard_normal(a_shape).astype(np.float32)}
        c.run(f"MatMulNBits A={a_shape} N={N} block={bs} zero_points={zp_kind or 'none'} "
              f"bias={bias} accuracy_level={accuracy_level}"
              + (" (vs onnxruntime at level 0)" if accuracy_level else ""),
              model_at(accuracy_level), feeds, reference=model_at(0))


# ---- QLinear* (quantize_static's QOperator format) -----------------------------------------
# These requantize through a float intermediate (a sum or product of scaled values, a sigmoid)
# whose last bit can differ from onnxruntime's vectorized code, which moves a value lying on a
# rounding boundary by one code: integer outputs may differ by 1.

def qparams(rng, dtype, prefix, with_zp=True, nonzero_zp=True):
    inits = [tensor(f"{prefix}_scale", np.float32(rng.uniform(0.01, 0.1)))]
    zp = ""
    if with_zp:
        lo, hi = (-20, 20) if dtype == np.int8 else (100, 150)
        value = rng.integers(lo, hi) if nonzero_zp else 0
        inits.append(tensor(f"{prefix}_zp", np.array(value, dtype)))
        zp = f"{prefix}_zp"
    return inits, [f"{prefix}_scale", zp]


def qlinear_cases(c, rng):
    def out_of(dt):
        return [vinfo("Y", dt, None)]
    for op in ("QLinearAdd", "QLinearMul"):
        for dt, a_shape, b_shape, zps in [
            (np.uint8, [2, 3, 4, 5], [2, 3, 4, 5], True),
            (np.int8, [2, 3, 4, 5], [1, 3, 1, 1], True),
            (np.uint8, [4, 5], [1], False),
            (np.int8, [3, 1, 6], [2, 1], False),
            # Runs of 8 lanes plus a tail: a bias along the last axis, a column broadcast.
            (np.uint8, [2, 5, 19], [19], True),
            (np.int8, [3, 33], [3, 1], True),
        ]:
            # onnxruntime's type inference fails without the zero points: zps=False gives zeros.
            ia, na = qparams(rng, dt, "a", True, zps)
            ib, nb = qparams(rng, dt, "b", True, zps)
            ic, nc = qparams(rng, dt, "c", True, zps)
            node = helper.make_node(op, ["A", *na, "B", *nb, *nc], ["Y"], domain="com.microsoft")
            m = make_model([node], [vinfo("A", dt, a_shape), vinfo("B", dt, b_shape)], out_of(dt),
                           ia + ib + ic)
            feeds = {"A": qweight(rng, dt, a_shape), "B": qweight(rng, dt, b_shape)}
            c.run(f"{op} {np.dtype(dt).name} {a_shape} x {b_shape} zero_points={zps}", m, feeds,
                  int_tol=1)
    for op, attrs in (("QLinearSigmoid", {}), ("QLinearLeakyRelu", {}),
                      ("QLinearLeakyRelu", {"alpha": 0.2})):
        for dt, zps in ((np.uint8, True), (np.int8, True), (np.uint8, False), (np.int8, False)):
            ix, nx = qparams(rng, dt, "x", zps)
            iy, ny = qparams(rng, dt, "y", zps)
            node = helper.make_node(op, ["X", *nx, *ny], ["Y"], domain="com.microsoft", **attrs)
            m = make_model([node], [vinfo("X", dt, [2, 3, 16, 16])], out_of(dt), ix + iy)
            c.run(f"{op} {attrs} {np.dtype(dt).name} zero_points={zps}", m,
                  {"X": qweight(rng, dt, (2, 3, 16, 16))}, int_tol=1)
    for dt, shape, channels_last in ((np.uint8, [2, 8, 5, 7], 0), (np.int8, [1, 16, 9, 9], 0),
                                     (np.uint8, [2, 5, 7, 8], 1), (np.int8, [3, 4, 10], 0)):
        ix, nx = qparams(rng, dt, "x")
        iy, ny = qparams(rng, dt, "y")
        node = helper.make_node("QLinearGlobalAveragePool", ["X", *nx, *ny], ["Y"],
                                domain="com.microsoft", channels_last=channels_last)
        m = make_model([node], [vinfo("X", dt, shape)], out_of(dt), ix + iy)
        c.run(f"QLinearGlobalAveragePool {np.dtype(dt).name} {shape} channels_last={channels_last}",
              m, {"X": qweight(rng, dt, shape)}, int_tol=1)
    for dt, shapes, axis, same_as_output in (
            (np.uint8, [[1, 3, 4, 4], [1, 5, 4, 4]], 1, 0),
            (np.int8, [[2, 3, 4], [2, 3, 2], [2, 3, 1]], -1, 1),
            (np.uint8, [[2, 6], [3, 6]], 0, 1)):
        iy, ny = qparams(rng, dt, "y")
        inits, names, inputs, feeds = list(iy), list(ny), [], {}
        for k, shape in enumerate(shapes):
            if k == same_as_output:  # shares the output's parameters: the copy path
                names += [f"X{k}", *ny]
            else:
                ik, nk = qparams(rng, dt, f"x{k}")
                inits += ik
                names += [f"X{k}", *nk]
            inputs.append(vinfo(f"X{k}", dt, shape))
            feeds[f"X{k}"] = qweight(rng, dt, shape)
        node = helper.make_node("QLinearConcat", names, ["Y"], domain="com.microsoft", axis=axis)
        m = make_model([node], inputs, out_of(dt), inits)
        c.run(f"QLinearConcat {np.dtype(dt).name} {shapes} axis={axis}", m, feeds, int_tol=1)


def qgemm_cases(c, rng):
    for at, bt, trans_a, trans_b, per_col, with_c, quant_out, alpha, (M, K, N) in [
        (np.uint8, np.uint8, 0, 0, False, False, False, 1.0, (4, 16, 8)),
        (np.uint8, np.int8, 0, 1, True, True, False, 1.0, (3, 32, 10)),
        (np.int8, np.int8, 1, 0, False, True, True, 0.5, (5, 24, 6)),
        (np.uint8, np.int8, 0, 1, True, True, True, 1.0, (1, 40, 12)),
        (np.uint8, np.uint8, 1, 1, True, False, True, 2.0, (6, 9, 7)),
    ]:
        a_shape = (K, M) if trans_a else (M, K)
        b_shape = (N, K) if trans_b else (K, N)
        bs_shape = (N,) if per_col else ()
        ia, na = qparams(rng, at, "a")
        inits = ia + [tensor("B", qweight(rng, bt, b_shape)),
                      tensor("b_scale", rng.uniform(0.01, 0.05, bs_shape).astype(np.float32)),
                      tensor("b_zp", qweight(rng, bt, bs_shape) // 4)]
        names = ["A", *na, "B", "b_scale", "b_zp"]
        if with_c or quant_out:
            names.append("C" if with_c else "")
        if with_c:
            inits.append(tensor("C", rng.integers(-2000, 2000, N).astype(np.int32)))
        out_type = np.float32
        if quant_out:
            iy, ny = qparams(rng, at, "y")
            iy[0] = tensor("y_scale", np.float32(rng.uniform(1.0, 4.0)))
            inits += iy
            names += ny
            out_type = at
        node = helper.make_node("QGemm", names, ["Y"], domain="com.microsoft", transA=trans_a,
                                transB=trans_b, alpha=alpha)
        m = make_model([node], [vinfo("A", at, list(a_shape))], [vinfo("Y", out_type, None)],
                       inits)
        c.run(f"QGemm A={np.dtype(at).name}{list(a_shape)} B={np.dtype(bt).name}{list(b_shape)} "
              f"transA={trans_a} transB={trans_b} per_column={per_col} C={with_c} "
              f"quantized_output={quant_out} alpha={alpha}", m,
              {"A": qweight(rng, at, a_shape)}, int_tol=1)


def weight_operand_cases(c, rng):
    """The 8-bit weight operand (int8_weights.h) packed per run when it is no constant, and
    broken ones refused with the op and the input named, whether constant or fed."""
    M, K, N = 5, 40, 12
    # uint8 weights: a fed int8 B can't be re-expressed for the reference (uint8_weight_reference)
    at, bt = np.uint8, np.uint8
    B = qweight(rng, bt, (N, K))
    b_scale = rng.uniform(0.01, 0.05, (N,)).astype(np.float32)
    b_zp = qweight(rng, bt, (N,)) // 4
    ia, na = qparams(rng, at, "a")
    node = helper.make_node("QGemm", ["A", *na, "B", "b_scale", "b_zp"], ["Y"],
                            domain="com.microsoft", transB=1)
    fed = [vinfo("A", at, [M, K]), vinfo("B", bt, [N, K]), vinfo("b_scale", np.float32, [N]),
           vinfo("b_zp", bt, [N])]
    m = make_model([node], fed, [vinfo("Y", np.float32, None)], ia)
    feeds = {"A": qweight(rng, at, (M, K)), "B": B, "b_scale": b_scale, "b_zp": b_zp}
    c.run("QGemm transB=1 with B, b_scale and b_zp fed at run time", m, feeds, int_tol=1)

    node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "b_scale", "b_zp"], ["Y"],
                            domain="com.microsoft")
    m = make_model([node], [vinfo("A", np.float32, [3, K]), vinfo("B", bt, [K, N]),
                            vinfo("b_scale", np.float32, [N]), vinfo("b_zp", bt, [N])],
                   [vinfo("Y", np.float32, None)], [])
    feeds = {"A": rng.standard_normal((3, K)).astype(np.float32), "B": B.T.copy(),
             "b_scale": b_scale, "b_zp": b_zp}
    c.run("DynamicQuantizeMatMul with B, b_scale and b_zp fed at run time", m, feeds)

    # A scale of N + 1 values: refused at the run, constant (packing deferred) or fed.
    bad_scale = rng.uniform(0.01, 0.05, (N + 1,)).astype(np.float32)
    node = helper.make_node("QGemm", ["A", *na, "B", "b_scale", "b_zp"], ["Y"],
                            domain="com.microsoft", transB=1)
    m = make_model([node], [vinfo("A", at, [M, K])], [vinfo("Y", np.float32, None)],
                   ia + [tensor("B", B), tensor("b_scale", bad_scale), tensor("b_zp", b_zp)])
    c.expect_error("QGemm with a constant b_scale of N + 1 values", m,
                   {"A": qweight(rng, at, (M, K))}, ["QGemm", "b_scale", f"{N} elements"])
    node = helper.make_node("MatMulIntegerToFloat", ["A", "B", "a_scale", "b_scale"], ["Y"],
                            domain="com.microsoft")
    m = make_model([node], [vinfo("A", at, [M, K]), vinfo("B", bt, [K, N]),
                            vinfo("b_scale", np.float32, [N + 1])],
                   [vinfo("Y", np.float32, None)], [tensor("a_scale", np.float32(0.02))])
    c.expect_error("MatMulIntegerToFloat with a fed b_scale of N + 1 values", m,
                   {"A": qweight(rng, at, (M, K)), "B": B.T.copy(), "b_scale": bad_scale},
                   ["MatMulIntegerToFloat", "b_scale", f"{N} elements"])
    # A 3-D B where the op takes a matrix.
    node = helper.make_node("MatMulIntegerToFloat", ["A", "B", "a_scale", "b_scale"], ["Y"],
                            domain="com.microsoft")
    m = make_model([node], [vinfo("A", at, [M, K])], [vinfo("Y", np.float32, None)],
                   [tensor("a_scale", np.float32(0.02)), tensor("B", qweight(rng, bt, (2, K, N))),
                    tensor("b_scale", b_scale)])
    c.expect_error("MatMulIntegerToFloat with a 3-D B", m, {"A": qweight(rng, at, (M, K))},
                   ["MatMulIntegerToFloat", "B must be 2-D"])


def qavgpool_cases(c, rng):
    for dt, shape, attrs in [
        (np.uint8, [1, 3, 8, 8], dict(kernel_shape=[2, 2], strides=[2, 2])),
        (np.int8, [2, 4, 9, 7], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
        (np.uint8, [1, 2, 9, 7], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      count_include_pad=1, strides=[2, 2])),
        (np.int8, [1, 2, 10, 10], dict(kernel_shape=[3, 2], strides=[2, 3], ceil_mode=1)),
        (np.uint8, [1, 2, 10, 10], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1,
                                        pads=[1, 1, 1, 1], count_include_pad=1)),
        (np.uint8, [2, 3, 11], dict(kernel_shape=[4], auto_pad="SAME_UPPER")),
        (np.int8, [1, 2, 4, 5, 6], dict(kernel_shape=[2, 2, 2], strides=[1, 2, 2])),
    ]:
        ix, nx = qparams(rng, dt, "x")
        iy, ny = qparams(rng, dt, "y")
        node = helper.make_node("QLinearAveragePool", ["X", *nx, *ny], ["Y"],
                                domain="com.microsoft", **attrs)
        m = make_model([node], [vinfo("X", dt, shape)], [vinfo("Y", dt, None)], ix + iy)
        c.run(f"QLinearAveragePool {np.dtype(dt).name} {shape} {attrs}", m,
              {"X": qweight(rng, dt, shape)}, int_tol=1)


def qsoftmax_cases(c, rng):
    # onnxruntime's QLinearSoftmax output scale is normally 1/256 (uint8) or 1/128 (int8).
    for case in [
        (np.uint8, [2, 10], -1, 13),
        (np.int8, [2, 10], -1, 13),
        (np.uint8, [2, 3, 7], 1, 13),
        (np.int8, [2, 3, 7], 1, 13),
        (np.uint8, [2, 3, 4], 1, 12),
        (np.int8, [4, 6, 5], -1, 11),
        (np.uint8, [3, 1000], -1, 13),
        (np.uint8, [3, 20], -1, 13, 0.005, 7),  # another output scale and zero point
        (np.int8, [3, 20], 0, 13, 0.004, -100),
    ]:
        dt, shape, axis, opset = case[:4]
        ix, nx = qparams(rng, dt, "x")
        y_scale = np.float32(1 / 256 if dt == np.uint8 else 1 / 128)
        y_zp = np.array(0 if dt == np.uint8 else -128, dt)
        if len(case) > 4:
            y_scale, y_zp = np.float32(case[4]), np.array(case[5], dt)
        inits = ix + [tensor("y_scale", y_scale), tensor("y_zp", y_zp)]
        node = helper.make_node("QLinearSoftmax", ["X", *nx, "y_scale", "y_zp"], ["Y"],
                                domain="com.microsoft", axis=axis, opset=opset)
        m = make_model([node], [vinfo("X", dt, shape)], [vinfo("Y", dt, None)], inits)
        c.run(f"QLinearSoftmax {np.dtype(dt).name} {shape} axis={axis} opset={opset}", m,
              {"X": qweight(rng, dt, shape)}, int_tol=1)


# ---- onnxruntime's quantizer ---------------------------------------------------------------

def quantizer_cases(c, rng, work):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    S, N, I, H = 6, 1, 16, 12
    for direction in ("forward", "bidirectional"):
        D = 2 if direction == "bidirectional" else 1
        # quantize_dynamic only rewrites LSTMs with enough weights; keep the model small anyway.
        W = rng.standard_normal((D, 4 * H, I)).astype(np.float32) * 0.3
        R = rng.standard_normal((D, 4 * H, H)).astype(np.float32) * 0.3
        B = rng.standard_normal((D, 8 * H)).astype(np.float32) * 0.1
        node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h", "Y_c"],
                                direction=direction, hidden_size=H)
        m = make_model([node], [vinfo("X", np.float32, [S, N, I])],
                       [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                        for n in ("Y", "Y_h", "Y_c")],
                       [tensor("W", W), tensor("R", R), tensor("B", B)])
        src = os.path.join(work, f"lstm_{direction}.onnx")
        dst = os.path.join(work, f"lstm_{direction}_q.onnx")
        onnx.save(m, src)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
        ops = sorted({n.op_type for n in onnx.load(dst).graph.node})
        c.run(f"quantize_dynamic LSTM {direction} -> {ops}", dst,
              {"X": rng.standard_normal((S, N, I)).astype(np.float32)})

    # onnxruntime's optimizer fuses BERT's attention into com.microsoft Attention, which
    # quantize_dynamic turns into QAttention (8-bit input and weights, per-tensor or per-column
    # weight scales), with a padding mask.
    for wt, per_channel in ((QuantType.QInt8, False), (QuantType.QInt8, True),
                            (QuantType.QUInt8, False)):
        W = rng.standard_normal((16, 48)).astype(np.float32) * 0.3
        Bq = rng.standard_normal(48).astype(np.float32) * 0.1
        node = helper.make_node("Attention", ["X", "W", "B", "mask"], ["Y"],
                                domain="com.microsoft", num_heads=2)
        m = make_model([node], [vinfo("X", np.float32, [2, 5, 16]), vinfo("mask", np.int32, [2])],
                       [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                       [tensor("W", W), tensor("B", Bq)])
        src = os.path.join(work, "attention.onnx")
        dst = os.path.join(work, f"attention_q_{wt.name}_{per_channel}.onnx")
        onnx.save(m, src)
        quantize_dynamic(src, dst, weight_type=wt, per_channel=per_channel,
                         op_types_to_quantize=["Attention"])
        ops = sorted({n.op_type for n in onnx.load(dst).graph.node})
        c.run(f"quantize_dynamic Attention {wt.name} per_channel={per_channel} -> {ops}", dst,
              {"X": rng.standard_normal((2, 5, 16)).astype(np.float32),
               "mask": np.array([5, 3], np.int32)})

    for wt, per_channel in ((QuantType.QInt8, False), (QuantType.QUInt8, False),
                            (QuantType.QInt8, True)):
        W1 = rng.standard_normal((32, 48)).astype(np.float32) * 0.2
        W2 = rng.standard_normal((48, 10)).astype(np.float32) * 0.2
        nodes = [helper.make_node("MatMul", ["X", "W1"], ["h"]),
                 helper.make_node("Relu", ["h"], ["r"]),
                 helper.make_node("MatMul", ["r", "W2"], ["Y"])]
        m = make_model(nodes, [vinfo("X", np.float32, [3, 32])],
                       [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                       [tensor("W1", W1), tensor("W2", W2)])
        src = os.path.join(work, "mlp.onnx")
        dst = os.path.join(work, f"mlp_q_{wt.name}_{per_channel}.onnx")
        onnx.save(m, src)
        quantize_dynamic(src, dst, weight_type=wt, per_channel=per_channel)
        ops = sorted({n.op_type for n in onnx.load(dst).graph.node})
        c.run(f"quantize_dynamic MLP {wt.name} per_channel={per_channel} -> {ops}", dst,
              {"X": rng.standard_normal((3, 32)).astype(np.float32)})


def dynamic_cnn_cases(c, rng, work):
    """quantize_dynamic on a MobileNet-style CNN: every Conv becomes DynamicQuantizeLinear +
    ConvInteger, the depthwise ones (group = channels) on nxrt's depthwise path (6.3x slower
    than onnxruntime on MobileNetV2 before it), with uint8 and int8 weights."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def f32(name, shape, scale):
        return tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def conv(x, y, w, b, **attrs):
        return helper.make_node("Conv", [x, w, b], [y], **attrs)

    nodes = [
        conv("X", "c1", "w1", "b1", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Clip", ["c1", "lo", "hi"], ["r1"]),
        conv("r1", "d1", "wd1", "bd1", pads=[1, 1, 1, 1], group=16),
        helper.make_node("Clip", ["d1", "lo", "hi"], ["r2"]),
        conv("r2", "p1", "wp1", "bp1"),
        conv("p1", "d2", "wd2", "bd2", pads=[2, 2, 2, 2], strides=[2, 2], group=24),
        helper.make_node("Relu", ["d2"], ["r3"]),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "wm"], ["Y"]),
    ]
    inits = [f32("w1", (16, 3, 3, 3), 0.3), f32("b1", (16,), 0.1),
             f32("wd1", (16, 1, 3, 3), 0.4), f32("bd1", (16,), 0.1),
             f32("wp1", (24, 16, 1, 1), 0.3), f32("bp1", (24,), 0.1),
             f32("wd2", (24, 1, 5, 5), 0.2), f32("bd2", (24,), 0.1),
             f32("wm", (24, 10), 0.5), tensor("lo", np.float32(0)), tensor("hi", np.float32(6))]
    m = make_model(nodes, [vinfo("X", np.float32, [2, 3, 40, 36])],
                   [vinfo("Y", np.float32, None)], inits)
    m.opset_import.pop()  # standard domain only; the quantizer adds com.microsoft
    src = os.path.join(work, "dw_cnn.onnx")
    onnx.save(m, src)
    for wt in (QuantType.QUInt8, QuantType.QInt8):
        dst = os.path.join(work, f"dw_cnn_q_{wt.name}.onnx")
        quantize_dynamic(src, dst, weight_type=wt)
        ops = sorted({n.op_type for n in onnx.load(dst).graph.node})
        c.run(f"quantize_dynamic depthwise CNN {wt.name} -> {ops}", dst,
              {"X": rng.standard_normal((2, 3, 40, 36)).astype(np.float32)})


def static_cnn_cases(c, rng, work):
    """quantize_static (QOperator format) on a small CNN built from the ops nxrt supports."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    def f32(name, shape, scale):
        return tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    nodes = [
        helper.make_node("Conv", ["X", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        # depthwise: with uint8 weights QLinearConv's depthwise path (depthwise_integer_conv.h)
        helper.make_node("Conv", ["r1", "wdw", "bdw"], ["dw"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Conv", ["dw", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c2"], ["s2"]),
        helper.make_node("Mul", ["c2", "s2"], ["m2"]),
        helper.make_node("Add", ["m2", "r1"], ["a2"]),
        helper.make_node("LeakyRelu", ["a2"], ["l2"], alpha=0.1),
        helper.make_node("AveragePool", ["l2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxPool", ["l2"], ["mp"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p2", "w3", "b3"], ["c3"]),
        helper.make_node("Concat", ["p2", "c3", "mp"], ["cat"], axis=1),
        helper.make_node("GlobalAveragePool", ["cat"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "wm"], ["Y"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["Y2"], transB=1),
    ]
    inits = [f32("w1", (8, 3, 3, 3), 0.3), f32("b1", (8,), 0.1), f32("wdw", (8, 1, 3, 3), 0.4),
             f32("bdw", (8,), 0.1), f32("w2", (8, 8, 3, 3), 0.2),
             f32("b2", (8,), 0.1), f32("w3", (4, 8, 1, 1), 0.3), f32("b3", (4,), 0.1),
             f32("wm", (20, 5), 0.5), f32("wg", (6, 20), 0.5), f32("bg", (6,), 0.1)]
    m = make_model(nodes, [vinfo("X", np.float32, [1, 3, 16, 16])],
                   [vinfo("Y", np.float32, None), vinfo("Y2", np.float32, None)], inits)
    m.opset_import.pop()  # standard domain only; the quantizer adds com.microsoft
    src = os.path.join(work, "cnn.onnx")
    onnx.save(m, src)
    calibration = [{"X": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calibration)

        def get_next(self):
            return next(self.it, None)

    for act, weight in ((QuantType.QUInt8, QuantType.QUInt8), (QuantType.QInt8, QuantType.QInt8),
                        (QuantType.QUInt8, QuantType.QInt8)):
        dst = os.path.join(work, f"cnn_q_{act.name}_{weight.name}.onnx")
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QOperator,
                        activation_type=act, weight_type=weight)
        ops = sorted({n.op_type for n in onnx.load(dst).graph.node if n.domain})
        c.run(f"quantize_static CNN act={act.name} weight={weight.name} -> {ops}", dst,
              {"X": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)})

    # A small self-attention block: the transformer-side QOperator ops.
    D = 16
    nodes = [
        helper.make_node("MatMul", ["X", "wq"], ["q"]),
        helper.make_node("MatMul", ["X", "wk"], ["k"]),
        helper.make_node("MatMul", ["X", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["ctx"]),
        helper.make_node("MatMul", ["ctx", "wo"], ["o"]),
        helper.make_node("Add", ["o", "X"], ["Y"]),
    ]
    inits = [f32("wq", (D, D), 0.3), f32("wk", (D, D), 0.3), f32("wv", (D, D), 0.3),
             f32("wo", (D, D), 0.3), tensor("scale", np.float32(D ** -0.5))]
    m = make_model(nodes, [vinfo("X", np.float32, [1, 8, D])], [vinfo("Y", np.float32, None)],
                   inits)
    m.opset_import.pop()
    src = os.path.join(work, "attention.onnx")
    onnx.save(m, src)
    calibration = [{"X": rng.standard_normal((1, 8, D)).astype(np.float32)} for _ in range(4)]
    for act, weight in ((QuantType.QUInt8, QuantType.QUInt8), (QuantType.QInt8, QuantType.QInt8)):
        dst = os.path.join(work, f"attention_q_{act.name}_{weight.name}.onnx")
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QOperator,
                        activation_type=act, weight_type=weight)
        ops = sorted({n.op_type for n in onnx.load(dst).graph.node if n.op_type.startswith("Q")})
        c.run(f"quantize_static attention block act={act.name} weight={weight.name} -> {ops}",
              dst, {"X": rng.standard_normal((1, 8, D)).astype(np.float32)})


# ---- ddddocr -------------------------------------------------------------------------------

# The wheel whose models were checked (tools/scripts/fetch_wheel_models.py takes the same one).
DDDDOCR = "ddddocr==1.6.1"

def ddddocr_models(work, given):
    if given:
        return sorted(glob.glob(os.path.join(given, "*.onnx"))), ""
    dl = os.path.join(work, "ddddocr")
    r = subprocess.run([sys.executable, "-m", "pip", "download", DDDDOCR, "--no-deps", "-q",
                        "-d", dl], capture_output=True, text=True, timeout=90)
    wheels = glob.glob(os.path.join(dl, "*.whl"))
    if r.returncode != 0 or not wheels:
        return [], "pip download ddddocr failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(dl)
    return sorted(glob.glob(os.path.join(dl, "**", "*.onnx"), recursive=True)), ""


def argmax_compare(got, exp):
    """Equal class choices along the last axis (the decoded characters); reports the logit gap."""
    same = np.array_equal(np.argmax(got, -1), np.argmax(exp, -1))
    diff = float(np.max(np.abs(got.astype(np.float64) - exp)))
    return same, f"argmax {'equal' if same else 'DIFFERS'}, logits max diff {diff:.2e}"


def quantized_lstm_submodels(model, feeds, work):
    """Each DynamicQuantizeLSTM of `model` alone, with its real weights and the inputs onnxruntime
    computes for it on `feeds`."""
    inits = {t.name: t for t in model.graph.initializer}
    nodes = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLSTM"]
    if not nodes:
        return []
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    wanted = sorted({i for n in nodes for i in n.input if i and i not in inits})
    for i in wanted:
        probe.graph.output.append(helper.make_empty_tensor_value_info(i))
    path = os.path.join(work, "probe.onnx")
    onnx.save(probe, path)
    sess = ort.InferenceSession(path, reference_options(), providers=["CPUExecutionProvider"])
    values = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    out = []
    for node in nodes:
        ins = [i for i in node.input if i and i not in inits]
        sub = helper.make_graph(
            [node], "lstm",
            [helper.make_tensor_value_info(i, TensorProto.FLOAT, None) for i in ins],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output if o],
            [inits[i] for i in node.input if i in inits])
        m = helper.make_model(sub, opset_imports=OPSETS)
        m.ir_version = 8
        out.append((node.name, m, {i: values[i] for i in ins}))
    return out


def ddddocr_cases(c, work, given):
    rng = np.random.default_rng(4321)  # its own stream: the inputs do not move with other cases
    models, why = ddddocr_models(work, given)
    if not models:
        print(f"SKIP ddddocr: {why or 'no .onnx files found'}")
        return
    for path in models:
        model = onnx.load(path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {}
        for i in sess.get_inputs():
            # The OCR models take [1, 1, 64, width] images, the detector [1, 3, 416, 416].
            shape = [d if isinstance(d, int) else 96 for d in i.shape]
            feeds[i.name] = rng.uniform(0, 1, shape).astype(np.float32)
        label = f"ddddocr {os.path.basename(path)} inputs {[list(v.shape) for v in feeds.values()]}"
        if any(n.op_type == "DynamicQuantizeLinear" for n in model.graph.node):
            # 22 DynamicQuantizeLinear sit between the convolutions: a one-ulp difference in a
            # float op before one of them (a Sigmoid, say) moves a uint8 code by one, and that
            # change grows through the later layers, so the logits agree only to ~1e-2. The
            # decoded characters (argmax per column) must agree; the quantized LSTM is compared
            # strictly on its own below.
            c.run(label + " decoded classes", model, feeds, compare=argmax_compare)
        else:
            c.run(label, model, feeds)
        # The quantized LSTM also on its own, with its real weights and the inputs onnxruntime
        # computes for it.
        for name, sub, sub_feeds in quantized_lstm_submodels(model, feeds, work):
            c.run(f"ddddocr {os.path.basename(path)} node {name} alone", sub, sub_feeds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--ddddocr-dir", help="folder with the ddddocr wheel's .onnx files "
                    "(downloaded with pip when not given)")
    args = ap.parse_args()
    ort.set_default_logger_severity(3)
    rng = np.random.default_rng(1234)
    with tempfile.TemporaryDirectory() as work:
        c = Checker(args.build_dir, work)
        lstm_cases(c, rng)
        matmul_cases(c, rng)
        nbits_cases(c, rng)
        qlinear_cases(c, rng)
        qgemm_cases(c, rng)
        weight_operand_cases(c, rng)
        qavgpool_cases(c, rng)
        qsoftmax_cases(c, rng)
        quantizer_cases(c, rng, work)
        dynamic_cnn_cases(c, rng, work)
        static_cnn_cases(c, rng, work)
        ddddocr_cases(c, work, args.ddddocr_dir)
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
