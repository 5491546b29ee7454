#!/usr/bin/env python3
"""Intel's OpenVINO EP, the onnxruntime plugin of PyPI's onnxruntime-ep-openvino, hosted by nxrt:
the EP devices nxrt lists for it (`nxrt devices --json --ep-library`) are the ones onnxruntime
lists after register_execution_provider_library, with the same metadata and options; and real
models run on it through nxrt (`nxrt run --ep OpenVINOExecutionProvider`) give onnxruntime's
outputs (its CPU EP's, and where onnxruntime can use the plugin, the plugin's under onnxruntime);
and `nxrt compile --ep OpenVINOExecutionProvider` writes the plugin's own EPContext model, which
runs in a new nxrt process with the same outputs (and, where onnxruntime can use the plugin, in
onnxruntime too, as onnxruntime's compiled model runs in nxrt).

    openvino_plugin_check.py --build-dir build [--plugin-dir build/ort_plugins]
                             [--models build/models]

The plugin offers only devices whose PCI vendor id is Intel's. On another CPU both runtimes list
none; nxrt can present the CPU to onnxruntime plugins as Intel's (NXRT_ORT_PLUGIN_CPU_VENDOR_ID),
and the check then also expects the plugin's CPU devices (OpenVINO's CPU plugin runs on any
x86-64 CPU), which onnxruntime cannot list there.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import model_inputs  # noqa: E402

EP = "OpenVINOExecutionProvider"
# OpenVINO's CPU plugin infers in bf16 by default on CPUs that have it (AVX512_BF16 on Zen 4,
# AMX on Xeons): mobilenet_v2's logits then differ from float32 by 0.05. The comparisons are of
# float32 results, so every run here asks the plugin for float32 (its "precision" option is
# ignored for the CPU; the hint goes through load_config).
EP_OPTIONS = {"load_config": json.dumps({"CPU": {"INFERENCE_PRECISION_HINT": "f32"}},
                                        separators=(",", ":"))}
EP_WITH_OPTIONS = EP + ":" + ",".join(f"{k}={v}" for k, v in EP_OPTIONS.items())
LIBRARY = "onnxruntime_ep_openvino/libonnxruntime_providers_openvino_plugin.so"
DEVICE_TYPES = {"CPU": "cpu", "GPU": "gpu", "NPU": "npu"}


def onnxruntime_devices(library, registration="openvino"):
    ort.register_execution_provider_library(registration, library)
    try:
        out = []
        for d in ort.get_ep_devices():
            if not d.ep_name.startswith(EP):
                continue
            out.append({"ep": d.ep_name, "ep_vendor": d.ep_vendor,
                        "type": DEVICE_TYPES[str(d.device.type).split(".")[-1]],
                        "metadata": dict(d.ep_metadata), "options": dict(d.ep_options)})
        return out
    finally:
        ort.unregister_execution_provider_library(registration)


def nxrt_listing(nxrt, library, env=None, extra=()):
    """`nxrt devices --json --ep-library LIBRARY [EXTRA...]`: the hardware devices and the
    library's EP devices, as nxrt prints them."""
    run = subprocess.run([nxrt, "devices", "--json", "--ep-library", library, *extra],
                         capture_output=True, text=True, env=env, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"nxrt devices failed ({run.returncode}):\n{run.stderr}")
    listing = json.loads(run.stdout)
    libraries = [lib for lib in listing["ep_libraries"] if lib["path"] == library]
    if len(libraries) != 1:
        raise RuntimeError(f"nxrt devices does not list {library}")
    return listing["hardware_devices"], libraries[0]["ep_devices"]


def nxrt_devices(nxrt, library, env=None, extra=()):
    hardware, ep_devices = nxrt_listing(nxrt, library, env, extra)
    out = []
    for d in ep_devices:
        metadata = {k: v for k, v in d["metadata"].items() if k != "library_path"}
        out.append({"ep": d["ep"], "ep_vendor": d["ep_vendor"], "type": d["device"]["type"],
                    "metadata": metadata, "options": d["options"],
                    "virtual": d["device"].get("metadata", {}).get("is_virtual") == "1"})
    return out, hardware


def check_virtual_devices(nxrt, library, env):
    """The plugin's virtual NPUs (one per NPU generation): onnxruntime lists them for a
    registration name ending in ".virtual"; nxrt for a --virtual request, filtered by its
    options. Compiling for them needs Intel's NPU compiler, which no wheel ships: not tried."""
    failures = []
    platforms = lambda devices: sorted(d["metadata"].get("npu_platform", "?") for d in devices
                                       if d["type"] == "npu")
    expected = platforms(onnxruntime_devices(library, "openvino.virtual"))
    got, _ = nxrt_devices(nxrt, library, env, ["--virtual", "npu"])
    print(f"virtual NPUs: onnxruntime (openvino.virtual) {expected}; nxrt --virtual npu "
          f"{platforms(got)}")
    if not expected or platforms(got) != expected:
        failures.append(f"virtual NPUs differ: onnxruntime {expected}, nxrt {platforms(got)}")
    if not all(d["virtual"] for d in got if d["type"] == "npu"):
        failures.append("a virtual NPU is not marked is_virtual")
    if expected:
        one, _ = nxrt_devices(nxrt, library, env, ["--virtual", f"npu:npu_platform={expected[0]}"])
        print(f"  --virtual npu:npu_platform={expected[0]}: {platforms(one)}")
        if platforms(one) != [expected[0]]:
            failures.append(f"--virtual npu:npu_platform={expected[0]} gave {platforms(one)}")
    return failures


# Models and whether every node must run on the plugin (Silero VAD has nodes it declines: those
# fall back to nxrt's CPU EP).
MODELS = [("resnet50", True), ("mobilenet_v2", True), ("bert4", True), ("ppocr_det", True),
          ("ppocr_rec", True), ("vit_b_16", True), ("silero_vad", False)]


def run_models(nxrt, library, models_dir, env, onnxruntime_has_plugin, work):
    failures = []
    for name, whole in MODELS:
        path = os.path.join(models_dir, name + ".onnx")
        if not os.path.exists(path):
            failures.append(f"{path} is missing (tools/scripts/prepare_test_models.sh)")
            continue
        cpu = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = model_inputs.build_inputs(path, cpu.get_inputs())
        names = [o.name for o in cpu.get_outputs()]
        references = {"onnxruntime CPU EP": cpu.run(None, feeds)}
        if onnxruntime_has_plugin:
            options = ort.SessionOptions()
            devices = [d for d in ort.get_ep_devices() if d.ep_name == EP]
            options.add_provider_for_devices(devices, dict(EP_OPTIONS))
            references["onnxruntime + plugin"] = ort.InferenceSession(
                path, sess_options=options).run(None, feeds)
        out_dir = os.path.join(work, name)
        try:
            eps, timing = nxrt_run(nxrt, path, library, env, feeds, out_dir,
                                   fallback="forbid" if whole else "allow", repeat=3)
        except RuntimeError as e:
            failures.append(f"{name}: {e}")
            continue
        if "OpenVINOExecutionProvider" not in eps:
            failures.append(f"{name}: nothing ran on the plugin ({eps})")
        if whole and "CPU=" in eps:
            failures.append(f"{name}: nodes fell back to the CPU EP ({eps})")
        if not whole and "CPU=" not in eps:
            failures.append(f"{name}: expected some nodes on nxrt's CPU EP ({eps})")
        # OpenVINO's float32 kernels round differently from onnxruntime's: 2e-3 x scale.
        worst = [f"{label} {compare(f'{name} vs {label}', names, out_dir, reference, failures):.2e}"
                 for label, reference in references.items()]
        print(f"  {name:13s} {eps[5:].strip():55s} max|diff| {', '.join(worst)}; "
              f"{timing[6:].split(' first_ms')[0]}")
    return failures


# Compiled ahead of time through the plugin's own EPContext path (embedded and external blobs).
COMPILED = [("mobilenet_v2", "--embed"), ("ppocr_rec", "--external")]


def nxrt_run(nxrt, path, library, env, feeds, out_dir, fallback="forbid", repeat=1):
    """Runs `path` on the plugin in a new nxrt process, outputs into `out_dir`; returns its
    "eps:" and "time:" lines."""
    paths = model_inputs.save_inputs(feeds, os.path.join(out_dir, "inputs"))
    cmd = [nxrt, "run", path, "--ep-library", library, "--ep", EP_WITH_OPTIONS, "--fallback",
           fallback, "--output-dir", out_dir, "--repeat", str(repeat)]
    for input_name, input_path in paths.items():
        cmd += ["--input", f"{input_name}={input_path}"]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != 0:
        raise RuntimeError(f"nxrt run {os.path.basename(path)} failed ({run.returncode}): "
                           f"{run.stderr[-2000:]}")
    lines = run.stdout.splitlines()
    eps = next((line for line in lines if line.startswith("eps:")), "")
    timing = next((line for line in lines if line.startswith("time:")), "")
    return eps, timing


def compare(label, names, got_dir, expected_outputs, failures, tolerance_scale=2e-3):
    worst = 0.0
    for output_name, expected in zip(names, expected_outputs):
        got = np.load(os.path.join(got_dir, model_inputs.sanitise_name(output_name) + ".npy"))
        expected = np.asarray(expected)
        if got.shape != expected.shape:
            failures.append(f"{label} {output_name}: shape {got.shape}, expected {expected.shape}")
            continue
        diff = float(np.max(np.abs(got.astype(np.float64) - expected))) if got.size else 0.0
        scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
        worst = max(worst, diff)
        if not diff <= tolerance_scale * scale:
            failures.append(f"{label} {output_name}: max |diff| {diff:.3g}")
    return worst


def compile_models(nxrt, library, models_dir, env, onnxruntime_has_plugin, work):
    failures = []
    for name, mode in COMPILED:
        path = os.path.join(models_dir, name + ".onnx")
        if not os.path.exists(path):
            failures.append(f"{path} is missing (tools/scripts/prepare_test_models.sh)")
            continue
        out_dir = os.path.join(work, "compiled_" + name)
        os.makedirs(out_dir, exist_ok=True)
        compiled = os.path.join(out_dir, name + "_ctx.onnx")
        run = subprocess.run([nxrt, "compile", path, "-o", compiled, "--ep-library", library,
                              "--ep", EP_WITH_OPTIONS, "--fallback", "forbid", mode],
                             capture_output=True, text=True, env=env, timeout=900)
        if run.returncode != 0:
            failures.append(f"{name}: nxrt compile failed ({run.returncode}): "
                            f"{run.stderr[-2000:]}")
            continue
        import onnx  # noqa: PLC0415 (only this check needs it)
        model = onnx.load(compiled, load_external_data=False)
        contexts = [n for n in model.graph.node if n.op_type == "EPContext"]
        sources = {onnx.helper.get_attribute_value(a).decode()
                   for n in contexts for a in n.attribute if a.name == "source"}
        files = sorted(f for f in os.listdir(out_dir) if f != os.path.basename(compiled))
        print(f"  {name:13s} compiled {mode}: {len(contexts)} EPContext node(s) of {sorted(sources)}"
              f", {len(model.graph.node) - len(contexts)} other node(s); files beside: {files}")
        if not contexts or len(model.graph.node) != len(contexts):
            failures.append(f"{name}: expected only EPContext nodes, got "
                            f"{[n.op_type for n in model.graph.node]}")
        cpu = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = model_inputs.build_inputs(path, cpu.get_inputs())
        names = [o.name for o in cpu.get_outputs()]
        expected = cpu.run(None, feeds)
        try:
            eps, _ = nxrt_run(nxrt, compiled, library, env, feeds, os.path.join(out_dir, "nxrt"))
        except RuntimeError as e:
            failures.append(f"{name}: the compiled model: {e}")
            continue
        if "CPU=" in eps or EP not in eps:
            failures.append(f"{name}: the compiled model did not run on the plugin alone ({eps})")
        diff = compare(f"{name} compiled, run in nxrt", names, os.path.join(out_dir, "nxrt"),
                       expected, failures)
        line = f"    run in a new nxrt process: {eps[5:].strip()}, max|diff| vs CPU EP {diff:.2e}"
        if onnxruntime_has_plugin:
            options = ort.SessionOptions()
            options.add_provider_for_devices(
                [d for d in ort.get_ep_devices() if d.ep_name == EP], dict(EP_OPTIONS))
            ort_out = ort.InferenceSession(compiled, sess_options=options).run(None, feeds)
            worst = max(float(np.max(np.abs(np.asarray(a, np.float64) - b)))
                        for a, b in zip(ort_out, expected))
            line += f"; in onnxruntime + plugin: max|diff| {worst:.2e}"
            if worst > 2e-3 * max(1.0, max(float(np.max(np.abs(b))) for b in expected)):
                failures.append(f"{name}: nxrt's compiled model in onnxruntime differs by {worst}")
            # onnxruntime's own compiled model, run in nxrt.
            ort_compiled = os.path.join(out_dir, name + "_ort_ctx.onnx")
            options = ort.SessionOptions()
            options.add_provider_for_devices(
                [d for d in ort.get_ep_devices() if d.ep_name == EP], dict(EP_OPTIONS))
            options.add_session_config_entry("ep.context_enable", "1")
            options.add_session_config_entry("ep.context_file_path", ort_compiled)
            options.add_session_config_entry("ep.context_embed_mode",
                                             "1" if mode == "--embed" else "0")
            ort.InferenceSession(path, sess_options=options)
            try:
                eps, _ = nxrt_run(nxrt, ort_compiled, library, env, feeds,
                                  os.path.join(out_dir, "from_ort"))
                diff = compare(f"{name} compiled by onnxruntime, run in nxrt", names,
                               os.path.join(out_dir, "from_ort"), expected, failures)
                line += f"; onnxruntime's compiled model in nxrt: {eps[5:].strip()}, {diff:.2e}"
            except RuntimeError as e:
                failures.append(f"{name}: onnxruntime's compiled model: {e}")
        print(line)
    return failures


def key(d):
    return (d["ep"], d["type"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--plugin-dir", default=None)
    parser.add_argument("--models", default=None, help="folder of the real models "
                        "(default: BUILD_DIR/models)")
    args = parser.parse_args()
    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    library = os.path.realpath(os.path.join(args.plugin_dir or os.path.join(args.build_dir,
                                                                            "ort_plugins"), LIBRARY))
    failures = []

    expected = sorted(onnxruntime_devices(library), key=key)
    # Listed as onnxruntime lists them: the CPU with its own vendor id.
    plain = {k: v for k, v in os.environ.items() if k != "NXRT_ORT_PLUGIN_CPU_VENDOR_ID"}
    got, hardware = nxrt_devices(nxrt, library, plain)
    got = sorted(got, key=key)
    print(f"onnxruntime {ort.__version__}: {len(expected)} EP devices of {EP}*; "
          f"nxrt: {len(got)}")
    if [key(d) for d in expected] != [key(d) for d in got]:
        failures.append(f"EP devices differ: onnxruntime {[key(d) for d in expected]}, "
                        f"nxrt {[key(d) for d in got]}")
    else:
        for e, g in zip(expected, got):
            for field in ("ep_vendor", "metadata", "options"):
                if e[field] != g[field]:
                    failures.append(f"{key(e)} {field}: onnxruntime {e[field]}, nxrt {g[field]}")
            print(f"  {e['ep']} on {e['type']}: ov_device={e['metadata'].get('ov_device')}, "
                  f"{len(e['metadata'])} metadata entries equal")

    cpu_vendor = next((h["vendor_id"] for h in hardware if h["type"] == "cpu"), None)
    if cpu_vendor != 0x8086:
        # Presented as Intel's, the CPU gets the plugin's two CPU EP devices.
        env = dict(os.environ, NXRT_ORT_PLUGIN_CPU_VENDOR_ID="0x8086")
        presented, _ = nxrt_devices(nxrt, library, env)
        names = sorted(d["ep"] for d in presented if d["type"] == "cpu")
        print(f"CPU vendor 0x{cpu_vendor or 0:04x}; presented as Intel's, nxrt lists {names}")
        if names != [EP, EP + ".AUTO"]:
            failures.append(f"with NXRT_ORT_PLUGIN_CPU_VENDOR_ID=0x8086 expected {EP} and "
                            f"{EP}.AUTO on the CPU, got {names}")
        for d in presented:
            if d["metadata"].get("ov_device") != "CPU":
                failures.append(f"{d['ep']}: ov_device {d['metadata'].get('ov_device')}, not CPU")

    failures += check_virtual_devices(nxrt, library, plain)

    # Models: where onnxruntime lists no device for the plugin, nxrt presents the CPU as Intel's.
    env = dict(plain)
    if not expected:
        env["NXRT_ORT_PLUGIN_CPU_VENDOR_ID"] = "0x8086"
    with tempfile.TemporaryDirectory(prefix="nxrt-ov-plugin-") as work:
        print(f"models on {EP} through nxrt, against onnxruntime:")
        models = args.models or os.path.join(args.build_dir, "models")
        failures += run_models(nxrt, library, models, env, bool(expected), work)
        print(f"compiled ahead of time by {EP} (nxrt compile), run again:")
        failures += compile_models(nxrt, library, models, env, bool(expected), work)

    for f in failures:
        print("FAIL:", f)
    print("openvino plugin check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
