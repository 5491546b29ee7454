#!/usr/bin/env python3
"""Intel's OpenVINO EP, the onnxruntime plugin of PyPI's onnxruntime-ep-openvino, hosted by nxrt:
the EP devices nxrt lists for it (`nxrt devices --json --ep-library`) are the ones onnxruntime
lists after register_execution_provider_library, with the same metadata and options.

    openvino_plugin_check.py --build-dir build [--plugin-dir build/ort_plugins]

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

import onnxruntime as ort

EP = "OpenVINOExecutionProvider"
LIBRARY = "onnxruntime_ep_openvino/libonnxruntime_providers_openvino_plugin.so"
DEVICE_TYPES = {"CPU": "cpu", "GPU": "gpu", "NPU": "npu"}


def onnxruntime_devices(library):
    ort.register_execution_provider_library("openvino", library)
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
        ort.unregister_execution_provider_library("openvino")


def nxrt_devices(nxrt, library, env=None):
    run = subprocess.run([nxrt, "devices", "--json", "--ep-library", library],
                         capture_output=True, text=True, env=env, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"nxrt devices failed ({run.returncode}):\n{run.stderr}")
    listing = json.loads(run.stdout)
    libraries = [lib for lib in listing["ep_libraries"] if lib["path"] == library]
    if len(libraries) != 1:
        raise RuntimeError(f"nxrt devices does not list {library}")
    out = []
    for d in libraries[0]["ep_devices"]:
        metadata = {k: v for k, v in d["metadata"].items() if k != "library_path"}
        out.append({"ep": d["ep"], "ep_vendor": d["ep_vendor"], "type": d["device"]["type"],
                    "metadata": metadata, "options": d["options"]})
    return out, listing["hardware_devices"]


def key(d):
    return (d["ep"], d["type"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--plugin-dir", default=None)
    args = parser.parse_args()
    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    library = os.path.realpath(os.path.join(args.plugin_dir or os.path.join(args.build_dir,
                                                                            "ort_plugins"), LIBRARY))
    failures = []

    expected = sorted(onnxruntime_devices(library), key=key)
    got, hardware = nxrt_devices(nxrt, library)
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

    for f in failures:
        print("FAIL:", f)
    print("openvino plugin check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
