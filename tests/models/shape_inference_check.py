#!/usr/bin/env python3
"""Checks nxrt's static type and shape inference against ONNX's (onnx.shape_inference) on the
real models.

For every model, `nxrt info MODEL --values` lists each value of the main graph with the static
type the loader knows (declared or inferred by src/graph/shape_inference.cc). Where nxrt knows
something, ONNX must agree:
  - the element type must be ONNX's when ONNX infers one;
  - the rank must be ONNX's when both know the rank;
  - a dimension nxrt knows must equal ONNX's when ONNX knows it, and must not be one ONNX
    gives a symbolic name from the model (`batch`, `p2o.DynamicDimension.0`, ...), which would
    mean nxrt fixed a size that depends on the inputs. ONNX's own placeholders (`unk__N`)
    and negative dim values (malformed, as in ppocr_cls) count as unknown.
A value nxrt leaves unknown is fine (that only costs an optimisation). The script prints the
coverage over node outputs: the fraction with a known element type, a known rank and a fully
static shape, for nxrt and for ONNX. It exits 1 on any disagreement.

Usage: shape_inference_check.py --build-dir build --models build/models [--only NAME ...]
"""
import argparse
import os
import subprocess
import sys

import onnx
from onnx import shape_inference

MODELS = ["resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "squeezenet1_1",
          "vit_b_16", "transformer_encoder", "bert4", "lstm_gru", "ppocr_det", "ppocr_rec",
          "ppocr_cls", "silero_vad"]

# ONNX TensorProto data types by the names nxrt prints (Nx_ElementTypeName).
ONNX_TYPE_NAMES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz",
    19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
    24: "float8e8m0", 25: "uint2", 26: "int2",
}


def parse_nxrt_type(text):
    """'float[1,?]' -> ('float', [1, None]); 'float' -> ('float', None); '?' -> (None, None).
    Sequences and optionals -> None (not compared)."""
    if text.startswith(("sequence<", "optional<")):
        return None
    if "[" not in text:
        return (None if text == "?" else text, None)
    elem, dims = text[:-1].split("[", 1)
    shape = [] if dims == "" else [None if d == "?" else int(d) for d in dims.split(",")]
    return (None if elem == "?" else elem, shape)


def nxrt_values(nxrt, model):
    proc = subprocess.run([nxrt, "info", model, "--values"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("nxrt info --values failed (%d):\n%s%s" % (proc.returncode, proc.stdout,
                                                           proc.stderr))
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("values ("))
    values = {}
    for line in lines[start + 1:]:
        name, _, text = line.strip().rpartition(": ")
        values[name] = parse_nxrt_type(text)
    return values


def onnx_dim(d):
    """A dim as (value or None, symbolic name or None); ONNX's unk__N placeholders are unknown."""
    if d.HasField("dim_value"):
        return (d.dim_value, None) if d.dim_value >= 0 else (None, None)  # -1: malformed
    if d.HasField("dim_param") and not d.dim_param.startswith("unk__"):
        return (None, d.dim_param)
    return (None, None)


def onnx_values(model):
    """Name -> (elem type name or None, [dims] or None) from ONNX's inference (main graph)."""
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    g = inferred.graph
    values = {}
    for t in g.initializer:
        values[t.name] = (ONNX_TYPE_NAMES.get(t.data_type), [(d, None) for d in t.dims])
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        elem = ONNX_TYPE_NAMES.get(tt.elem_type)
        shape = [onnx_dim(d) for d in tt.shape.dim] if tt.HasField("shape") else None
        old = values.get(vi.name)
        if old and old[1] is not None and shape is None:
            shape = old[1]
        values[vi.name] = (elem or (old[0] if old else None), shape)
    return values


def compare(name, ours, theirs):
    """Disagreements for one value (a list of messages)."""
    elem, shape = ours
    o_elem, o_shape = theirs
    problems = []
    if elem is not None and o_elem is not None and elem != o_elem:
        problems.append("element type %s, onnx says %s" % (elem, o_elem))
    if shape is not None and o_shape is not None:
        if len(shape) != len(o_shape):
            problems.append("rank %d, onnx says %d" % (len(shape), len(o_shape)))
        else:
            for i, (d, (ov, op)) in enumerate(zip(shape, o_shape)):
                if d is None:
                    continue
                if ov is not None and ov != d:
                    problems.append("dim %d is %d, onnx says %d" % (i, d, ov))
                elif op is not None:
                    problems.append("dim %d is %d, onnx says symbolic '%s'" % (i, d, op))
    return ["%s: %s" % (name, p) for p in problems]


def coverage(values, names):
    typed = ranked = static = 0
    for n in names:
        v = values.get(n)
        if not v:
            continue
        elem, shape = v
        typed += elem is not None
        if shape is not None:
            ranked += 1
            static += all((d if not isinstance(d, tuple) else d[0]) is not None for d in shape)
    total = max(len(names), 1)
    return typed / total, ranked / total, static / total


def node_outputs(model):
    names = []
    for n in model.graph.node:
        if n.op_type == "Constant":  # nxrt folds these into initializers
            continue
        names.extend(o for o in n.output if o)
    return names


def check_model(nxrt, path):
    model = onnx.load(path)
    ours = nxrt_values(nxrt, path)
    theirs = onnx_values(model)
    problems = []
    for name, v in sorted(ours.items()):
        if v is None or (v[0] is None and v[1] is None) or name not in theirs:
            continue
        problems += compare(name, v, theirs[name])
    outs = node_outputs(model)
    return problems, coverage(ours, outs), coverage(theirs, outs), len(outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--models", default="build/models")
    ap.add_argument("--only", action="append", help="model name (repeatable)")
    args = ap.parse_args()
    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    failed = False
    print("%-20s %6s  %-23s  %-23s" % ("model", "values", "nxrt type/rank/static",
                                        "onnx type/rank/static"))
    for m in args.only or MODELS:
        path = os.path.join(args.models, m + ".onnx")
        if not os.path.isfile(path):
            print("%-20s missing (%s); run tools/scripts/prepare_test_models.sh" % (m, path))
            failed = True
            continue
        problems, ours, theirs, count = check_model(nxrt, path)
        fmt = lambda c: "%5.1f%% %5.1f%% %5.1f%%" % tuple(100 * x for x in c)
        print("%-20s %6d  %-23s  %-23s %s" % (m, count, fmt(ours), fmt(theirs),
                                              "ok" if not problems else "DISAGREES"))
        for p in problems[:20]:
            print("    " + p)
        if len(problems) > 20:
            print("    ... and %d more" % (len(problems) - 20))
        failed = failed or bool(problems)
    print("FAILED: nxrt's static types disagree with onnx" if failed else "all agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
