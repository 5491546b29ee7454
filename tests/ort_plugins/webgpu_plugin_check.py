#!/usr/bin/env python3
"""Microsoft's WebGPU EP, the onnxruntime plugin of PyPI's onnxruntime-ep-webgpu (a kernel-based
plugin: kernel registry, device memory, its own data transfer), hosted by nxrt on Mesa's software
Vulkan renderer (lavapipe), which nxrt lists as a GPU when NXRT_SOFTWARE_GPU=1:

- without NXRT_SOFTWARE_GPU this machine has no GPU for it: `nxrt devices` lists no WebGPU EP
  device (as onnxruntime lists none on a machine without a GPU);
- with it, `nxrt devices` lists a software GPU and the plugin's EP device on it, with the plugin's
  memory; a selection policy never picks that device (prefer-gpu leaves the model on the CPU EP);
- real models run on the plugin (`nxrt run --ep WebGpuExecutionProvider`) and give onnxruntime's
  CPU EP's outputs; nodes the plugin has no kernel for (BERT's int64 shape arithmetic) run on
  nxrt's CPU EP; the plugin prefers NHWC, so convolutions and pools run channels-last, with a
  transpose only at the ends of each chain.

    webgpu_plugin_check.py --build-dir build [--plugin-dir build/ort_plugins]
                           [--models build/models]

Needs Mesa 25 or newer (tools/install_deps.sh): Dawn, inside the plugin, rejects older lavapipe.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import model_inputs  # noqa: E402
from openvino_plugin_check import compare, nxrt_listing  # noqa: E402  (shared helpers)

EP = "WebGpuExecutionProvider"
LIBRARY = "onnxruntime_ep_webgpu/libonnxruntime_providers_webgpu.so"
# (model, every node on the plugin?, nodes the plugin runs): the plugin prefers NHWC, so the
# convolutional models run channels-last with one Transpose in and one out (100 + 2, 65 + 2).
MODELS = [("mobilenet_v2", True, 102), ("squeezenet1_1", True, 67), ("bert4", False, 144)]


def check_devices(nxrt, library, env, failures):
    plain = {k: v for k, v in env.items() if k != "NXRT_SOFTWARE_GPU"}
    hardware, ep_devices = nxrt_listing(nxrt, library, plain)
    if any(d["metadata"].get("software") == "1" for d in hardware):
        failures.append("a software GPU is listed without NXRT_SOFTWARE_GPU")
    if any(d["ep"] == EP for d in ep_devices) and not any(d["type"] == "gpu" for d in hardware):
        failures.append("the plugin has an EP device on a machine without a GPU")
    hardware, ep_devices = nxrt_listing(nxrt, library, env)
    software = [d for d in hardware if d["metadata"].get("software") == "1"]
    if not software:
        failures.append("NXRT_SOFTWARE_GPU=1 lists no software GPU: is Mesa's Vulkan installed?")
        return False
    for d in software:
        print(f"  software gpu: {d['vendor']} {d['metadata'].get('vulkan_device_name')} "
              f"(Vulkan {d['metadata'].get('vulkan_api_version')})")
        if d["type"] != "gpu":
            failures.append(f"the software renderer is listed as {d['type']}, not gpu")
    mine = [d for d in ep_devices if d["ep"] == EP]
    if len(mine) != 1 or mine[0]["device"]["type"] != "gpu":
        failures.append(f"expected one {EP} device on the software GPU, got {mine}")
        return False
    print(f"  EP device: {EP} ({mine[0]['ep_vendor']}) on gpu, "
          f"version {mine[0]['metadata'].get('version')}, memory {mine[0].get('memory')}")
    return True


def nxrt_run(nxrt, path, library, env, feeds, out_dir, extra, repeat=1):
    paths = model_inputs.save_inputs(feeds, os.path.join(out_dir, "inputs"))
    cmd = [nxrt, "run", path, "--ep-library", library, "--output-dir", out_dir, "--repeat",
           str(repeat)] + extra
    for input_name, input_path in paths.items():
        cmd += ["--input", f"{input_name}={input_path}"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != 0:
        raise RuntimeError(f"nxrt run {os.path.basename(path)} failed ({run.returncode}): "
                           f"{run.stderr[-2000:]}")
    lines = run.stdout.splitlines()
    pick = lambda key: next((line for line in lines if line.startswith(key)), "")  # noqa: E731
    return pick("eps:"), pick("ep devices:"), pick("time:")


def small_model(path):
    """Relu(x) + c, Gather without its "axis" (the schema default), Reshape by a constant shape."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])
    c = numpy_helper.from_array(np.linspace(-1, 1, 6, dtype=np.float32), "c")
    rows = numpy_helper.from_array(np.array([3, 0, 2, 1], np.int64), "rows")
    shape = numpy_helper.from_array(np.array([2, 12], np.int64), "shape")
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "c"], ["a"]),
             helper.make_node("Gather", ["a", "rows"], ["g"]),
             helper.make_node("Reshape", ["g", "shape"], ["y"])]
    graph = helper.make_graph(nodes, "small", [x], [y], [c, rows, shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def run_models(nxrt, library, models_dir, env, work, failures):
    small = os.path.join(work, "small.onnx")
    small_model(small)
    cases = [(small, True, 4)] + [(os.path.join(models_dir, n + ".onnx"), w, k)
                                   for n, w, k in MODELS]
    for path, whole, expected_nodes in cases:
        name = os.path.basename(path)[:-5]
        if not os.path.exists(path):
            failures.append(f"{path} is missing (tools/scripts/prepare_test_models.sh)")
            continue
        cpu = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = model_inputs.build_inputs(path, cpu.get_inputs())
        names = [o.name for o in cpu.get_outputs()]
        out_dir = os.path.join(work, name)
        try:
            eps, where, timing = nxrt_run(
                nxrt, path, library, env, feeds, out_dir,
                ["--ep", EP, "--fallback", "forbid" if whole else "allow"], repeat=2)
        except RuntimeError as e:
            failures.append(f"{name}: {e}")
            continue
        if f"{EP}={expected_nodes} " not in eps + " ":
            failures.append(f"{name}: expected {expected_nodes} nodes on the plugin ({eps})")
        if whole and "CPU=" in eps:
            failures.append(f"{name}: nodes fell back to the CPU EP ({eps})")
        if f"{EP}=[gpu Mesa" not in where and f"{EP}=[gpu" not in where:
            failures.append(f"{name}: the plugin's device is not the software GPU ({where})")
        diff = compare(name, names, out_dir, cpu.run(None, feeds), failures, tolerance_scale=1e-4)
        print(f"  {name:13s} {eps[5:].strip():50s} max|diff| vs CPU EP {diff:.2e}; "
              f"{timing[6:].split(' create_ms')[0]}")
    # A policy never picks the software GPU: prefer-gpu finds no GPU EP device and the model
    # stays on the CPU EP.
    cpu = ort.InferenceSession(small, providers=["CPUExecutionProvider"])
    feeds = model_inputs.build_inputs(small, cpu.get_inputs())
    try:
        eps, _, _ = nxrt_run(nxrt, small, library, env, feeds, os.path.join(work, "policy"),
                             ["--policy", "prefer-gpu"])
        if EP in eps:
            failures.append(f"prefer-gpu chose the software GPU ({eps})")
        print(f"  prefer-gpu:   {eps[5:].strip()} (the software GPU is not a policy's to pick)")
    except RuntimeError as e:
        failures.append(f"prefer-gpu: {e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--plugin-dir", default=None)
    parser.add_argument("--models", default=None)
    args = parser.parse_args()
    nxrt = os.path.abspath(os.path.join(args.build_dir, "bin", "nxrt"))
    plugin_dir = args.plugin_dir or os.path.join(args.build_dir, "ort_plugins")
    library = os.path.abspath(os.path.join(plugin_dir, LIBRARY))
    models_dir = args.models or os.path.join(args.build_dir, "models")
    if not os.path.exists(library):
        print(f"FAIL: {library} is missing: run tools/scripts/fetch_ort_plugins.py")
        return 1
    env = dict(os.environ, NXRT_SOFTWARE_GPU="1")
    failures = []
    print(f"onnxruntime-ep-webgpu hosted by nxrt on a software GPU ({library})")
    if check_devices(nxrt, library, env, failures):
        with tempfile.TemporaryDirectory(prefix="nxrt-webgpu-") as work:
            run_models(nxrt, library, models_dir, env, work, failures)
    for f in failures:
        print(f"FAIL: {f}")
    print("webgpu plugin check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
