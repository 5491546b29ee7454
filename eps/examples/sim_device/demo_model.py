#!/usr/bin/env python3
"""Runs small models through `nxrt run` with and without the SimDevice example EP.

    demo_model.py [--build-dir build] [--work-dir DIR]

For each model below it writes NAME/model.onnx and its inputs (.npy) into a work directory (a
temporary one unless --work-dir is given), then runs

    BUILD/bin/nxrt run MODEL --input NAME=FILE.npy ... --output-dir OUT
    BUILD/bin/nxrt run MODEL ... --ep-library BUILD/lib/libnxrt_ep_sim_device.so --ep SimDevice

and checks that
  - both runs match numpy (max abs error <= 1e-5 * max(1, max|expected|)), and onnxruntime too;
  - the SimDevice run places the expected nodes (`eps: SimDevice=N CPU=M nodes`);
  - it prints the expected `copies: K`: the times a value crosses between host and SimDevice
    memory in one run, counted by hand below. Graph inputs start in host memory and graph
    outputs end there. Constants are not counted: a pre-packed weight never moves, and other
    initializers a SimDevice kernel reads are uploaded once, when the session is created.
Exit status 0 when everything matches, 1 otherwise.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
TOLERANCE = 1e-5


def make_model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(
        nodes,
        "sim_device_demo",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def host_to_device_model(rng):
    """Inputs on the host, a CPU-only node (Sigmoid) in the middle:

        X -> MatMul(W) -> Add(bias) -> Relu -> R -> Sigmoid (CPU) -> Mul(., R) -> Reshape -> Y

    Copies per run: X host->SimDevice (MatMul), R SimDevice->host (Sigmoid), the Sigmoid output
    host->SimDevice (Mul), Y SimDevice->host (graph output) = 4. W is pre-packed by MatMul (no
    copy, ever); bias is uploaded once at session creation; the Reshape shape is a host input
    (read where it is). Expected placement: SimDevice 5 nodes, CPU 1 (Sigmoid)."""
    w = rng.standard_normal((4, 5)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    shape = np.array([3, -1], dtype=np.int64)
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["mm"]),
        helper.make_node("Add", ["mm", "bias"], ["biased"]),
        helper.make_node("Relu", ["biased"], ["R"]),
        helper.make_node("Sigmoid", ["R"], ["sig"]),
        helper.make_node("Mul", ["sig", "R"], ["swish"]),
        helper.make_node("Reshape", ["swish", "shape"], ["Y"]),
    ]
    model = make_model(nodes, [("X", TensorProto.FLOAT, [2, 3, 4])],
                       [("Y", TensorProto.FLOAT, [3, 10])], {"W": w, "bias": bias, "shape": shape})
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    r = np.maximum(x @ w + bias, 0)
    expected = {"Y": (sigmoid(r) * r).reshape(3, 10)}
    return model, {"X": x}, expected, {"SimDevice": 5, "CPU": 1}, 4


def device_inputs_model(rng):
    """Inputs consumed straight by SimDevice nodes, a non-constant MatMul B, a shape that is a
    graph input, and a batched MatMul that SimDevice declines (GetCapability) so the CPU runs it:

        T1 = Sub(A, B)          A [2,3,4], B [4] (broadcast)
        T2 = Mul(T1, A)
        T3 = MatMul(T2, C)      C [4,3] is an input: transposed into scratch in every run
        Y  = Reshape(T3, S)     S int64 [2], a host input
        Z  = MatMul(T2, E)      E [2,4,3]: batched B, left to the CPU EP

    Copies per run: A, B and C host->SimDevice (A once for both Sub and Mul), T2
    SimDevice->host (the CPU MatMul), Y SimDevice->host (graph output) = 5. S stays on the host;
    Z is produced on the host. Expected placement: SimDevice 4 nodes, CPU 1."""
    nodes = [
        helper.make_node("Sub", ["A", "B"], ["T1"]),
        helper.make_node("Mul", ["T1", "A"], ["T2"]),
        helper.make_node("MatMul", ["T2", "C"], ["T3"]),
        helper.make_node("Reshape", ["T3", "S"], ["Y"]),
        helper.make_node("MatMul", ["T2", "E"], ["Z"]),
    ]
    inputs = [("A", TensorProto.FLOAT, [2, 3, 4]), ("B", TensorProto.FLOAT, [4]),
              ("C", TensorProto.FLOAT, [4, 3]), ("S", TensorProto.INT64, [2]),
              ("E", TensorProto.FLOAT, [2, 4, 3])]
    model = make_model(nodes, inputs, [("Y", TensorProto.FLOAT, ["rows", "cols"]),
                                       ("Z", TensorProto.FLOAT, [2, 3, 3])], {})
    feeds = {
        "A": rng.standard_normal((2, 3, 4)).astype(np.float32),
        "B": rng.standard_normal(4).astype(np.float32),
        "C": rng.standard_normal((4, 3)).astype(np.float32),
        "S": np.array([6, 3], dtype=np.int64),
        "E": rng.standard_normal((2, 4, 3)).astype(np.float32),
    }
    t2 = (feeds["A"] - feeds["B"]) * feeds["A"]
    expected = {"Y": (t2 @ feeds["C"]).reshape(6, 3), "Z": t2 @ feeds["E"]}
    return model, feeds, expected, {"SimDevice": 4, "CPU": 1}, 5


def threaded_matmul_model(rng):
    """Large enough for MatMul to split its 128 rows over the session's threads:

        X [4,32,64] -> MatMul(W [64,48]) -> Relu -> Y

    Copies per run: X in, Y out = 2. Expected placement: SimDevice 2 nodes, CPU 0."""
    w = (rng.standard_normal((64, 48)) / 8).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["X", "W"], ["mm"]),
             helper.make_node("Relu", ["mm"], ["Y"])]
    model = make_model(nodes, [("X", TensorProto.FLOAT, [4, 32, 64])],
                       [("Y", TensorProto.FLOAT, [4, 32, 48])], {"W": w})
    x = rng.standard_normal((4, 32, 64)).astype(np.float32)
    return model, {"X": x}, {"Y": np.maximum(x @ w, 0)}, {"SimDevice": 2, "CPU": 0}, 2


MODELS = {
    "host_to_device": host_to_device_model,
    "device_inputs": device_inputs_model,
    "threaded_matmul": threaded_matmul_model,
}


def run_nxrt(nxrt, model_path, input_files, out_dir, ep_library=None):
    cmd = [nxrt, "run", model_path, "--output-dir", out_dir]
    for name, path in input_files.items():
        cmd += ["--input", f"{name}={path}"]
    if ep_library:
        cmd += ["--ep-library", ep_library, "--ep", "SimDevice"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                           f"{proc.stdout}{proc.stderr}")
    eps_line = re.search(r"^eps:(.*) nodes$", proc.stdout, re.M).group(1)
    eps = {name: int(n) for name, n in re.findall(r"(\w+)=(\d+)", eps_line)}
    copies = int(re.search(r"^copies: (\d+)$", proc.stdout, re.M).group(1))
    return eps, copies, proc.stdout


def compare(name, got, want):
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{name}: {got.dtype}{list(got.shape)} vs expected {want.dtype}{list(want.shape)}"
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    limit = TOLERANCE * max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    return None if err <= limit else f"{name}: max abs error {err:.3g} > {limit:.3g}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--work-dir", help="keep models, inputs and outputs here")
    args = parser.parse_args()
    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    library = os.path.join(args.build_dir, "lib", "libnxrt_ep_sim_device.so")
    for path in (nxrt, library):
        if not os.path.exists(path):
            sys.exit(f"missing {path}: build first (tools/build.sh)")
    work = args.work_dir or tempfile.mkdtemp(prefix="sim_device_demo_")
    os.makedirs(work, exist_ok=True)
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None

    failures = 0
    rng = np.random.default_rng(7)
    for model_name, build in MODELS.items():
        model, feeds, expected, want_eps, want_copies = build(rng)
        folder = os.path.join(work, model_name)
        os.makedirs(folder, exist_ok=True)
        model_path = os.path.join(folder, "model.onnx")
        onnx.save(model, model_path)
        input_files = {}
        for name, value in feeds.items():
            input_files[name] = os.path.join(folder, f"input_{name}.npy")
            np.save(input_files[name], value)
        problems = []
        if ort is not None:  # the numpy reference itself, checked against onnxruntime
            session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
            names = [o.name for o in session.get_outputs()]
            for out, value in zip(names, session.run(None, feeds)):
                if (p := compare(f"onnxruntime {out}", value, expected[out])) is not None:
                    problems.append(p)
        lines = []
        for label, ep_library in (("cpu", None), ("sim", library)):
            out_dir = os.path.join(folder, f"out_{label}")
            eps, copies, _ = run_nxrt(nxrt, model_path, input_files, out_dir, ep_library)
            for out, want in expected.items():
                got = np.load(os.path.join(out_dir, f"{out}.npy"))
                if (p := compare(f"{label} {out}", got, want)) is not None:
                    problems.append(p)
            eps_text = " ".join(f"{k}={v}" for k, v in eps.items())
            lines.append(f"  {label}: eps {eps_text}, copies {copies}")
            if label == "sim":
                if any(eps.get(k, 0) != want_eps.get(k, 0) for k in set(eps) | set(want_eps)):
                    problems.append(f"placement {eps_text} != expected {want_eps}")
                if copies != want_copies:
                    problems.append(f"copies {copies} != expected {want_copies}")
        status = "PASS" if not problems else "FAIL"
        failures += bool(problems)
        print(f"{status} {model_name} (expected copies {want_copies})")
        for line in lines + [f"  ! {p}" for p in problems]:
            print(line)
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    print("all passed" if not failures else f"{failures} model(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
