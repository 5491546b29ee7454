#!/usr/bin/env python3
"""tools/device_check/model_skeleton.py on real models: a skeleton is small, and the model filled
from it has the original's graph and tensors (names, dtypes, shapes; a subgraph's Constant
values too), statistics close to the originals', and runs in nxrt; a float model's outputs
match onnxruntime's (the comparison a device run makes; onnxruntime's AVX2 8-bit products
saturate, so an int8 model is only run).

  python3 tests/tools/model_skeleton_check.py --build-dir build --models build/models
Exits non-zero on the first failed check.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "device_check"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import model_inputs  # noqa: E402
import model_skeleton  # noqa: E402

# Model -> whether its outputs are compared with onnxruntime's. Silero VAD: If bodies with
# Constant weights; bert4_int8: int8 weights (quantize_dynamic).
MODELS = {"silero_vad": True, "bert4_int8": False}


def tensor_table(model):
    return {t.name: (t.data_type, tuple(t.dims)) for t in model_skeleton.all_tensors(model)}


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check(name, compare, args, work):
    src = os.path.join(args.models, name + ".onnx")
    skeletons, filled = os.path.join(work, "skeletons"), os.path.join(work, "filled")
    model_skeleton.strip([src], skeletons)
    model_skeleton.fill(skeletons, filled)
    original, result = onnx.load(src), onnx.load(os.path.join(filled, name + ".onnx"))
    size = os.path.getsize(src)
    skeleton_size = os.path.getsize(os.path.join(skeletons, name + ".onnx"))
    if skeleton_size * 4 > size:
        fail(f"{name}: skeleton {skeleton_size} bytes of {size}")
    if [n.op_type for n in original.graph.node] != [n.op_type for n in result.graph.node]:
        fail(f"{name}: the nodes differ")
    want, got = tensor_table(original), tensor_table(result)
    if want != got:
        fail(f"{name}: tensors differ: {sorted(set(want.items()) ^ set(got.items()))[:4]}")
    drawn = 0
    originals = {t.name: t for t in model_skeleton.all_tensors(original)}
    for t in model_skeleton.all_tensors(result):
        a = numpy_helper.to_array(originals[t.name]).astype(np.float64)
        b = numpy_helper.to_array(t).astype(np.float64)
        if a.size < 4096:
            if not np.array_equal(a, b):
                fail(f"{name}: small tensor {t.name} changed")
            continue
        drawn += 1
        off_mean = abs(b.mean() - a.mean()) > 0.1 * a.std() + 1e-6
        if b.min() < a.min() or b.max() > a.max() or off_mean:
            fail(f"{name}: {t.name} drawn outside the original's range or mean")
    if drawn == 0:
        fail(f"{name}: no tensor was stripped")
    # Both engines on the filled model, on the harness's inputs.
    path = os.path.join(filled, name + ".onnx")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = model_inputs.build_inputs(path, session.get_inputs())
    outputs = os.path.join(work, "outputs")
    cmd = [os.path.join(args.build_dir, "bin", "nxrt"), "run", path, "--output-dir", outputs]
    for key, npy in model_inputs.save_inputs(feeds, os.path.join(work, "inputs")).items():
        cmd += ["--input", f"{key}={npy}"]
    subprocess.run(cmd, check=True, capture_output=True)
    def nxrt_output(out):
        return np.load(os.path.join(outputs, model_inputs.sanitise_name(out.name) + ".npy"))

    for out in session.get_outputs():
        if not np.all(np.isfinite(nxrt_output(out))):
            fail(f"{name}: output {out.name} is not finite")
    if compare:
        for out, want_value in zip(session.get_outputs(), session.run(None, feeds)):
            got_value = nxrt_output(out)
            if not np.allclose(got_value, want_value, rtol=1e-3, atol=1e-3):
                fail(f"{name}: output {out.name} differs from onnxruntime's")
    print(f"ok  {name}: skeleton {skeleton_size / 1e3:.0f} kB of {size / 1e6:.1f} MB, "
          f"{drawn} tensors drawn again, " + ("outputs match onnxruntime" if compare else "runs"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--models", default=os.path.join("build", "models"))
    args = ap.parse_args()
    for name, compare in MODELS.items():
        with tempfile.TemporaryDirectory() as work:
            check(name, compare, args, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
