#!/usr/bin/env python3
"""Checks QDQ models (onnxruntime.quantization.quantize_static, QDQ format) run by nxrt, whose
session folds the QuantizeLinear/DequantizeLinear islands into int8 kernels
(src/session/qdq_folding.h), against onnxruntime and against the float model.

Small convnets (conv + relu, a residual add, max pool, global average pool, a final Gemm), a
depthwise net (conv, depthwise conv + Clip, 1x1 conv) and MLPs (MatMul, bias Add, Relu, MatMul)
are built with onnx.helper, quantized per tensor and per channel with uint8 and int8 activations, and
run on inputs like the calibration data. Per case and output, with s the output's quantization
step (the largest activation scale in the model):
  - nxrt's distance to the float model may exceed onnxruntime's by at most s, and
  - max|nxrt - onnxruntime| <= 3 s (both round and may saturate u8 x s8 pairs differently),
    unless nxrt is the closer of the two to the float model (on the per-channel MLPs
    onnxruntime's QLinearMatMul was 4 s from float on one input, nxrt 1.5 s).
With --models DIR, ResNet-50 (DIR/resnet50_int8.onnx, made by tools/scripts/derive_models.py)
is also run on 4 inputs like its calibration data: nxrt's top-1 must equal onnxruntime's or the
float model's, and
its largest logit distance to the float model (DIR/resnet50.onnx) may exceed onnxruntime's by at
most 5% (+0.05). BERT-4 (DIR/bert4_qdq.onnx, QLinearMatMul after folding) runs on 3 token
sequences: its hidden states' distance to the float model may exceed onnxruntime's by at most
10% in RMS and 25% in the largest element. EfficientNet-B0 (DIR/efficientnet_b0.onnx) is
quantized here: its SiLU and squeeze-and-excitation islands must fold into byte tables and NHWC
QLinearMul, and its logits stay as close to the float model as onnxruntime's (check_efficientnet);
MobileNetV2 quantized in QOperator form runs its QLinearConvs on oneDNN in NHWC
(check_qoperator).

usage: python3 tests/eps/cpu/qdq_check.py --build-dir build [--models build/models]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)


def conv(name, x, cin, cout, k, rng, stride=1):
    w = (rng.standard_normal((cout, cin, k, k)) * (1.0 / np.sqrt(cin * k * k))).astype(np.float32)
    b = (0.1 * rng.standard_normal(cout)).astype(np.float32)
    inits = [numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")]
    node = helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name], pads=[k // 2] * 4,
                            strides=[stride, stride])
    return node, inits


def small_convnet(seed):
    """x[1,3,32,32] -> conv3x3(16)+relu -> maxpool -> [conv1x1(16)+relu -> conv3x3(16)] + skip
    -> relu -> conv3x3 stride 2 (32) + relu -> global average pool -> flatten -> gemm(10)."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def add(pair):
        nodes.append(pair[0])
        inits.extend(pair[1])

    add(conv("c1", "x", 3, 16, 3, rng))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
    nodes.append(helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]))
    add(conv("c2", "p1", 16, 16, 1, rng))
    nodes.append(helper.make_node("Relu", ["c2"], ["r2"]))
    add(conv("c3", "r2", 16, 16, 3, rng))
    nodes.append(helper.make_node("Add", ["c3", "p1"], ["s"]))
    nodes.append(helper.make_node("Relu", ["s"], ["r3"]))
    add(conv("c4", "r3", 16, 32, 3, rng, stride=2))
    nodes.append(helper.make_node("Relu", ["c4"], ["r4"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["r4"], ["g"]))
    nodes.append(helper.make_node("Flatten", ["g"], ["f"]))
    fw = (rng.standard_normal((10, 32)) * 0.3).astype(np.float32)
    fb = (0.1 * rng.standard_normal(10)).astype(np.float32)
    inits += [numpy_helper.from_array(fw, "fc_w"), numpy_helper.from_array(fb, "fc_b")]
    nodes.append(helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1))
    graph = helper.make_graph(
        nodes, "small_convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                               [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def small_dwnet(seed):
    """x[1,3,32,32] -> conv3x3(16)+relu -> depthwise 3x3 stride 2 + Clip(0, 6) -> conv1x1(8)."""
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32)
    wd = (rng.standard_normal((16, 1, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((8, 16, 1, 1)) * 0.3).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["c2"], pads=[1] * 4, group=16,
                              strides=[2, 2]),
             helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
             helper.make_node("Conv", ["r2", "w2"], ["y"])]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(wd, "wd"),
             numpy_helper.from_array(w2, "w2"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    graph = helper.make_graph(
        nodes, "small_dwnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def small_mlp(seed):
    """x[4,64] -> MatMul(64x128) -> Add(bias) -> Relu -> MatMul(128x32) -> y."""
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((64, 128)) / 8.0).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(128)).astype(np.float32)
    w2 = (rng.standard_normal((128, 32)) / 11.0).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]),
             helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]),
             helper.make_node("MatMul", ["r1", "w2"], ["y"])]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2")]
    graph = helper.make_graph(
        nodes, "small_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


class Reader(CalibrationDataReader):
    def __init__(self, name, shape, seed, count=8):
        rng = np.random.default_rng(seed)
        self.batches = iter([{name: rng.standard_normal(shape).astype(np.float32)}
                             for _ in range(count)])

    def get_next(self):
        return next(self.batches, None)


def run_nxrt(nxrt, model_path, feeds, work):
    shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
    cmd = [nxrt, "run", model_path, "--output-dir", os.path.join(work, "out")]
    for k, v in feeds.items():
        f = os.path.join(work, f"in_{k}.npy")
        np.save(f, v)
        cmd += ["--input", f"{k}={f}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"nxrt failed: {(r.stderr or r.stdout).strip()[-400:]}")
    return np.load(os.path.join(work, "out", os.listdir(os.path.join(work, "out"))[0]))


def ort_run(path, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # not its notes on unused initializers of quantized models
    sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def largest_activation_scale(model):
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return max(float(inits[n.input[1]].max()) for n in model.graph.node
               if n.op_type == "QuantizeLinear" and n.input[1] in inits)


def check_small(nxrt, work):
    failures = 0
    # uint8 weights (zero point 128) take QLinearConv's exact integer path instead of oneDNN.
    cases = [(pc, act, QuantType.QInt8) for pc in (False, True)
             for act in (QuantType.QUInt8, QuantType.QInt8)]
    cases.append((False, QuantType.QUInt8, QuantType.QUInt8))
    cases = [("convnet", [1, 3, 32, 32]) + c for c in cases]
    cases += [(name, shape, pc, act, QuantType.QInt8)
              for name, shape in (("dwnet", [1, 3, 32, 32]), ("mlp", [4, 64]))
              for pc in (False, True) for act in (QuantType.QUInt8, QuantType.QInt8)]
    for model_name, shape, per_channel, act, weights in cases:
        name = (f"{model_name} {'per-channel' if per_channel else 'per-tensor'} {act.name} "
                f"activations, {weights.name} weights")
        float_path = os.path.join(work, f"{model_name}.onnx")
        q_path = os.path.join(work,
                              f"q_{model_name}_{int(per_channel)}_{act.name}_{weights.name}.onnx")
        builders = {"convnet": small_convnet, "dwnet": small_dwnet, "mlp": small_mlp}
        onnx.save(builders[model_name](1), float_path)
        quantize_static(float_path, q_path, Reader("x", shape, 2),
                        quant_format=QuantFormat.QDQ, per_channel=per_channel,
                        activation_type=act, weight_type=weights)
        step = largest_activation_scale(onnx.load(q_path))
        worst = ""
        worst_excess = -np.inf
        ok = True
        for i in range(3):
            x = np.random.default_rng(10 + i).standard_normal(shape).astype(np.float32)
            yf = ort_run(float_path, {"x": x})
            yo = ort_run(q_path, {"x": x})
            yn = run_nxrt(nxrt, q_path, {"x": x}, work)
            d_ort, d_nx = np.abs(yo - yf).max(), np.abs(yn - yf).max()
            d_pair = np.abs(yn - yo).max()
            good = d_nx <= d_ort + step and (d_pair <= 3 * step or d_nx <= d_ort)
            if (ok and not good) or not worst or (good and d_nx - d_ort > worst_excess):
                worst_excess = d_nx - d_ort
                worst = (f"to float: nxrt {d_nx:.4f} ort {d_ort:.4f}; nxrt-ort {d_pair:.4f} "
                         f"(step {step:.4f}, input {i})")
            ok = ok and good
        print(f"{'PASS' if ok else 'FAIL'} {name}: {worst}")
        failures += 0 if ok else 1
    return failures


def check_resnet(nxrt, models, work):
    q_path = os.path.join(models, "resnet50_int8.onnx")
    f_path = os.path.join(models, "resnet50.onnx")
    if not (os.path.exists(q_path) and os.path.exists(f_path)):
        print("SKIP resnet50_int8: models missing")
        return 0
    return check_logits(nxrt, "resnet50_int8", f_path, q_path, work, 21, slack=1.05, count=4)


def check_bert(nxrt, models, work):
    """bert4_qdq (QLinearMatMul after folding) on 3 token sequences, one with padding: nxrt's
    distance to the float model's hidden states may exceed onnxruntime's by at most 10% in RMS
    and 25% in the largest element (a tail of 98304 values, where one rounding step shows)."""
    q_path = os.path.join(models, "bert4_qdq.onnx")
    f_path = os.path.join(models, "bert4.onnx")
    if not (os.path.exists(q_path) and os.path.exists(f_path)):
        print("SKIP bert4_qdq: models missing")
        return 0
    vocab = next(t.dims[0] for t in onnx.load(f_path).graph.initializer
                 if len(t.dims) == 2 and t.dims[0] > 10000)
    rng = np.random.default_rng(22)
    failures = 0
    for i in range(3):
        mask = np.ones((1, 128), np.int64)
        if i == 2:
            mask[:, 100:] = 0
        feeds = {"input_ids": rng.integers(1000, vocab, (1, 128)).astype(np.int64),
                 "attention_mask": mask}
        yf, yo = ort_run(f_path, feeds), ort_run(q_path, feeds)
        yn = run_nxrt(nxrt, q_path, feeds, work)

        def rms(d):
            return float(np.sqrt(np.mean(np.square(d))))
        r_ort, r_nx = rms(yo - yf), rms(yn - yf)
        m_ort, m_nx = np.abs(yo - yf).max(), np.abs(yn - yf).max()
        ok = r_nx <= 1.1 * r_ort and m_nx <= 1.25 * m_ort
        print(f"{'PASS' if ok else 'FAIL'} bert4_qdq input {i}: distance to float RMS/max: "
              f"ort {r_ort:.4f}/{m_ort:.3f} nxrt {r_nx:.4f}/{m_nx:.3f}; "
              f"nxrt-ort RMS {rms(yn - yo):.4f}")
        failures += 0 if ok else 1
    return failures


def profiled_ops(nxrt, model_path, work):
    """{op_type: count} of one nxrt run, from its profile (ops of another domain than ONNX's as
    "domain:op_type"); None (with a FAIL line) if it failed."""
    profile = os.path.join(work, "profile.json")
    r = subprocess.run([nxrt, "run", model_path, "--repeat", "1", "--profile", profile],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print(f"FAIL {os.path.basename(model_path)}: nxrt failed: "
              f"{(r.stderr or r.stdout).strip()[-400:]}")
        return None
    with open(profile) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    ops = {}
    for e in events:
        if e.get("cat") == "node" and str(e.get("args", {}).get("run")) == "0":
            op = e["args"].get("op_type")
            domain = e["args"].get("domain", "")
            key = f"{domain}:{op}" if domain else op
            ops[key] = ops.get(key, 0) + 1
    return ops


def check_logits(nxrt, name, f_path, q_path, work, seed, slack=1.25, count=3):
    """On `count` inputs: nxrt's top-1 equals onnxruntime's or the float model's, and its largest
    logit distance to the float model is at most `slack` x onnxruntime's + 0.05. Returns
    failures."""
    rng = np.random.default_rng(seed)
    failures = 0
    for i in range(count):
        x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
        yf, yo = ort_run(f_path, {"input": x}), ort_run(q_path, {"input": x})
        yn = run_nxrt(nxrt, q_path, {"input": x}, work)
        d_ort, d_nx = np.abs(yo - yf).max(), np.abs(yn - yf).max()
        ok = yn.argmax() in (yo.argmax(), yf.argmax()) and d_nx <= slack * d_ort + 0.05
        print(f"{'PASS' if ok else 'FAIL'} {name} input {i}: top-1 float/ort/nxrt "
              f"{yf.argmax()}/{yo.argmax()}/{yn.argmax()}, max logit distance to float: "
              f"ort {d_ort:.3f} nxrt {d_nx:.3f}, nxrt-ort {np.abs(yn - yo).max():.3f}")
        failures += 0 if ok else 1
    return failures


def quantize_image_model(f_path, q_path, quant_format, seed):
    """quantize_static of a [1, 3, 224, 224] image model: per-channel int8 weights, uint8
    activations, 8 random calibration inputs."""
    quantize_static(f_path, q_path, Reader("input", (1, 3, 224, 224), seed),
                    quant_format=quant_format, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def check_qoperator(nxrt, models, work):
    """MobileNetV2 (DIR/mobilenet_v2.onnx) quantized here in QOperator form (ONNX QLinearConv,
    com.microsoft QLinearAdd / QLinearGlobalAveragePool): its QLinearConvs must run as com.nxrt
    ones kept NHWC (at most 2 Transposes), and its logits stay as close to the float model as
    onnxruntime's (check_logits). The im2col path it took before was 45x slower."""
    f_path = os.path.join(models, "mobilenet_v2.onnx")
    if not os.path.exists(f_path):
        print("SKIP mobilenet_v2 QOperator: models missing")
        return 0
    q_path = os.path.join(work, "mobilenet_v2_qop.onnx")
    quantize_image_model(f_path, q_path, QuantFormat.QOperator, 32)
    ops = profiled_ops(nxrt, q_path, work)
    if ops is None:
        return 1
    adopted, onnx_convs = ops.get("com.nxrt:QLinearConv", 0), ops.get("QLinearConv", 0)
    ok = adopted >= 50 and onnx_convs == 0 and ops.get("Transpose", 0) <= 2
    print(f"{'PASS' if ok else 'FAIL'} mobilenet_v2 QOperator: com.nxrt QLinearConv {adopted}, "
          f"ONNX QLinearConv {onnx_convs}, Transpose {ops.get('Transpose', 0)}")
    return (0 if ok else 1) + check_logits(nxrt, "mobilenet_v2 QOperator", f_path, q_path,
                                             work, 24)


def check_efficientnet(nxrt, models, work):
    """EfficientNet-B0 (DIR/efficientnet_b0.onnx) quantized here with quantize_static (QDQ,
    per-channel int8 weights, uint8 activations, 8 random calibration inputs): its SiLU and
    squeeze-and-excitation islands must fold (com.nxrt TableLookup, no float Sigmoid left, at
    most 2 Transposes: in and out of NHWC), and on 3 inputs nxrt's top-1 must equal onnxruntime's
    or the float model's, its largest logit distance to the float model at most 25% (+0.05)
    beyond onnxruntime's."""
    f_path = os.path.join(models, "efficientnet_b0.onnx")
    if not os.path.exists(f_path):
        print("SKIP efficientnet_b0 QDQ: models missing")
        return 0
    q_path = os.path.join(work, "efficientnet_b0_qdq.onnx")
    quantize_image_model(f_path, q_path, QuantFormat.QDQ, 31)
    ops = profiled_ops(nxrt, q_path, work)
    if ops is None:
        return 1
    failures = 0
    tables, muls = ops.get("com.nxrt:TableLookup", 0), ops.get("com.microsoft:QLinearMul", 0)
    folded = tables > 0 and "Sigmoid" not in ops and ops.get("Transpose", 0) <= 2
    print(f"{'PASS' if folded else 'FAIL'} efficientnet_b0 QDQ folding: TableLookup {tables}, "
          f"Sigmoid {ops.get('Sigmoid', 0)}, QLinearMul {muls}, "
          f"Transpose {ops.get('Transpose', 0)}")
    failures += 0 if folded else 1
    return failures + check_logits(nxrt, "efficientnet_b0 QDQ", f_path, q_path, work, 23)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--models", help="folder with resnet50.onnx, resnet50_int8.onnx, bert4.onnx "
                        "and bert4_qdq.onnx")
    args = parser.parse_args()
    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    with tempfile.TemporaryDirectory() as work:
        failures = check_small(nxrt, work)
        if args.models:
            failures += check_resnet(nxrt, args.models, work)
            failures += check_bert(nxrt, args.models, work)
            failures += check_efficientnet(nxrt, args.models, work)
            failures += check_qoperator(nxrt, args.models, work)
    print(f"{'FAILED' if failures else 'OK'}: {failures} failing case(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
