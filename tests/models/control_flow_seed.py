#!/usr/bin/env python3
"""The control-flow models of the design seed, rebuilt here with onnx.helper, run through
`nxrt run` and checked against the stated outputs (and onnxruntime when installed):

  if_mul        A bool[1], B float[3,2]: C = B*2 if A else B*3
  loop_sub_one  MAX_ITERS int64[1] = 3, A float[1] = 10: each iteration subtracts 1;
                C = 7 (final), D = [9, 8, 7] (per-iteration scan output)
  scan_mul      X float[3,3]: Y = X*2 row by row in scan order

Usage: control_flow_seed.py --build-dir build [--ep-library PATH --ep NAME]
With --ep, the control-flow node must also be placed on that EP.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper


def if_mul():
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    three = helper.make_tensor("three", TensorProto.FLOAT, [1], [3.0])
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["B", "two"], ["then_out"])], "then",
        [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [3, 2])], [two])
    else_g = helper.make_graph(
        [helper.make_node("Mul", ["B", "three"], ["else_out"])], "else",
        [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [3, 2])], [three])
    node = helper.make_node("If", ["A"], ["C"], then_branch=then_g, else_branch=else_g)
    g = helper.make_graph([node], "if_mul",
                          [helper.make_tensor_value_info("A", TensorProto.BOOL, [1]),
                           helper.make_tensor_value_info("B", TensorProto.FLOAT, [3, 2])],
                          [helper.make_tensor_value_info("C", TensorProto.FLOAT, [3, 2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def loop_sub_one():
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Sub", ["a_in", "one"], ["a_out"]),
         helper.make_node("Identity", ["a_out"], ["scan_out"])],
        "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a_out", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [1])],
        [one])
    node = helper.make_node("Loop", ["MAX_ITERS", "", "A"], ["C", "D"], body=body)
    g = helper.make_graph([node], "loop_sub_one",
                          [helper.make_tensor_value_info("MAX_ITERS", TensorProto.INT64, [1]),
                           helper.make_tensor_value_info("A", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("C", TensorProto.FLOAT, [1]),
                           helper.make_tensor_value_info("D", TensorProto.FLOAT, [3, 1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def scan_mul():
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_row", "two"], ["y_row"])], "body",
        [helper.make_tensor_value_info("x_row", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y_row", TensorProto.FLOAT, [3])], [two])
    node = helper.make_node("Scan", ["X"], ["Y"], body=body, num_scan_inputs=1)
    g = helper.make_graph([node], "scan_mul",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 3])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


B = np.array([2, 3, 4, -5, 6, 7], np.float32).reshape(3, 2)
X = np.array([1, 2, 3, 10, 20, 30, 100, 200, 300], np.float32).reshape(3, 3)
CASES = [
    ("if_mul_true", if_mul, {"A": np.array([True]), "B": B}, {"C": B * 2}),
    ("if_mul_false", if_mul, {"A": np.array([False]), "B": B}, {"C": B * 3}),
    ("loop_sub_one", loop_sub_one,
     {"MAX_ITERS": np.array([3], np.int64), "A": np.array([10], np.float32)},
     {"C": np.array([7], np.float32), "D": np.array([[9], [8], [7]], np.float32)}),
    ("scan_mul", scan_mul, {"X": X}, {"Y": X * 2}),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--ep-library", action="append", default=[])
    ap.add_argument("--ep", action="append", default=[])
    args = ap.parse_args()
    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for name, make, inputs, expected in CASES:
            model = make()
            onnx.checker.check_model(model)
            path = os.path.join(work, name + ".onnx")
            onnx.save(model, path)
            cmd = [nxrt, "run", path, "--output-dir", os.path.join(work, name)]
            for lib in args.ep_library:
                cmd += ["--ep-library", lib]
            for ep in args.ep:
                cmd += ["--ep", ep]
            for k, v in inputs.items():
                f = os.path.join(work, f"{name}_{k}.npy")
                np.save(f, v)
                cmd += ["--input", f"{k}={f}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: nxrt exited {r.returncode}: {r.stderr.strip()}")
                failed += 1
                continue
            ok = True
            ref = ort.InferenceSession(path).run(None, inputs) if ort else None
            for i, (k, want) in enumerate(expected.items()):
                got = np.load(os.path.join(work, name, k + ".npy"))
                if got.shape != want.shape or not np.allclose(got, want):
                    print(f"FAIL {name}: {k} = {got.tolist()}, expected {want.tolist()}")
                    ok = False
                if ref is not None and not np.allclose(ref[i], got):
                    print(f"FAIL {name}: {k} differs from onnxruntime {ref[i].tolist()}")
                    ok = False
            eps = [l for l in r.stdout.splitlines() if l.startswith("eps:")]
            if args.ep:
                # The control-flow node itself must run on the EP asked for.
                want = args.ep[0].split(":")[0] + "=1 "
                if not eps or want not in eps[0] + " ":
                    print(f"FAIL {name}: the control-flow node did not run on {args.ep[0]}: {eps}")
                    ok = False
            print(("PASS " if ok else "FAIL ") + name + ("  " + eps[0] if eps else ""))
            failed += 0 if ok else 1
    print("all passed" if failed == 0 else f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
