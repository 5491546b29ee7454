"""onnxruntime plugin EP libraries through the package, with unchanged onnxruntime code: Intel's
OpenVINO plugin (PyPI onnxruntime-ep-openvino, fetched by tools/scripts/fetch_ort_plugins.py into
NXRT_ORT_PLUGINS_DIR, default build/ort_plugins) registered, its EP devices listed, a session
made with add_provider_for_devices, outputs compared with onnxruntime's CPU EP; and Microsoft's
WebGPU plugin (PyPI onnxruntime-ep-webgpu) the same way on Mesa's software Vulkan GPU."""

import gc
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnxruntime as real_onnxruntime
import pytest
from conftest import REPO, real_model

import nxrt as onnxruntime  # the code below is onnxruntime's

PLUGIN = "onnxruntime_ep_openvino/libonnxruntime_providers_openvino_plugin.so"
EP = "OpenVINOExecutionProvider"
# OpenVINO's CPU plugin infers in bf16 by default where the CPU has it (AVX512_BF16, AMX); the
# comparison is with float32, so ask for float32 (through load_config: the plugin ignores its
# "precision" option for the CPU).
F32 = {"load_config": '{"CPU":{"INFERENCE_PRECISION_HINT":"f32"}}'}


@pytest.fixture
def openvino_library(monkeypatch):
    root = pathlib.Path(os.environ.get("NXRT_ORT_PLUGINS_DIR", REPO / "build" / "ort_plugins"))
    path = root / PLUGIN
    if not path.exists():
        pytest.fail(f"{path} is missing: run tools/scripts/fetch_ort_plugins.py")
    # The plugin offers only Intel devices; nxrt can present any CPU to plugins as Intel's
    # (docs/ort-plugins.md). Read once per process, before the first plugin asks.
    monkeypatch.setenv("NXRT_ORT_PLUGIN_CPU_VENDOR_ID", "0x8086")
    onnxruntime.register_execution_provider_library("openvino", str(path))
    yield str(path)
    gc.collect()  # a failed test's traceback may still hold its session
    onnxruntime.unregister_execution_provider_library("openvino")


def test_openvino_plugin_runs_with_onnxruntime_code(openvino_library):
    devices = [d for d in onnxruntime.get_ep_devices() if d.ep_name == EP]
    assert len(devices) == 1
    assert devices[0].ep_vendor == "Intel"
    assert devices[0].ep_metadata["ov_device"] == "CPU"
    assert devices[0].device.type == onnxruntime.OrtHardwareDeviceType.CPU

    options = onnxruntime.SessionOptions()
    options.add_provider_for_devices(devices, F32)
    model = real_model("mobilenet_v2")
    session = onnxruntime.InferenceSession(model, sess_options=options)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    name = session.get_inputs()[0].name
    got = session.run(None, {name: x})[0]
    want = real_onnxruntime.InferenceSession(
        model, providers=["CPUExecutionProvider"]).run(None, {name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    del session


def test_unregistered_plugin_is_gone(openvino_library):
    onnxruntime.unregister_execution_provider_library("openvino")
    assert not [d for d in onnxruntime.get_ep_devices() if d.ep_name == EP]
    onnxruntime.register_execution_provider_library("openvino", openvino_library)  # for teardown


def test_a_virtual_registration_lists_the_plugins_virtual_npus(openvino_library):
    # onnxruntime's convention, unchanged code: a name ending in ".virtual" lets the plugin make
    # virtual devices; OpenVINO's makes one NPU per generation.
    onnxruntime.register_execution_provider_library("openvino_npu.virtual", openvino_library)
    try:
        npus = [d for d in onnxruntime.get_ep_devices()
                if d.ep_name == EP and d.device.type == onnxruntime.OrtHardwareDeviceType.NPU]
        assert sorted(d.ep_metadata["npu_platform"] for d in npus) == [
            "4000", "5010", "5020", "6010"]
        assert all(d.device.metadata["is_virtual"] == "1" for d in npus)
        assert all(d.ep_metadata["ov_device"] == "NPU" for d in npus)
    finally:
        onnxruntime.unregister_execution_provider_library("openvino_npu.virtual")
    # nxrt's own form: a request for one generation.
    onnxruntime.register_execution_provider_library(
        "openvino_5010", openvino_library,
        virtual_devices=[(onnxruntime.OrtHardwareDeviceType.NPU, {"npu_platform": "5010"})])
    try:
        npus = [d for d in onnxruntime.get_ep_devices()
                if d.ep_name == EP and d.device.type == onnxruntime.OrtHardwareDeviceType.NPU]
        assert [d.ep_metadata["npu_platform"] for d in npus] == ["5010"]
    finally:
        onnxruntime.unregister_execution_provider_library("openvino_5010")


# Microsoft's WebGPU plugin (PyPI onnxruntime-ep-webgpu, also fetched by fetch_ort_plugins.py) on
# Mesa's software Vulkan GPU, which nxrt lists only when NXRT_SOFTWARE_GPU=1 is set before the
# first device discovery: hence a fresh process running onnxruntime's own calls.
WEBGPU_SCRIPT = r'''
import sys
import numpy as np
import onnxruntime as real_onnxruntime
import nxrt as onnxruntime

onnxruntime.register_execution_provider_library("webgpu", sys.argv[1])
devices = [d for d in onnxruntime.get_ep_devices() if d.ep_name == "WebGpuExecutionProvider"]
assert len(devices) == 1, devices
assert devices[0].device.type == onnxruntime.OrtHardwareDeviceType.GPU
assert devices[0].device.metadata["software"] == "1"
options = onnxruntime.SessionOptions()
options.add_provider_for_devices(devices, {})
session = onnxruntime.InferenceSession(sys.argv[2], sess_options=options)
x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
name = session.get_inputs()[0].name
got = session.run(None, {name: x})[0]
want = real_onnxruntime.InferenceSession(
    sys.argv[2], providers=["CPUExecutionProvider"]).run(None, {name: x})[0]
np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
del session
onnxruntime.unregister_execution_provider_library("webgpu")
print("webgpu ok")
'''


def test_webgpu_plugin_runs_on_the_software_gpu():
    root = pathlib.Path(os.environ.get("NXRT_ORT_PLUGINS_DIR", REPO / "build" / "ort_plugins"))
    library = root / "onnxruntime_ep_webgpu/libonnxruntime_providers_webgpu.so"
    if not library.exists():
        pytest.fail(f"{library} is missing: run tools/scripts/fetch_ort_plugins.py")
    run = subprocess.run([sys.executable, "-c", WEBGPU_SCRIPT, str(library),
                          real_model("squeezenet1_1")],
                         env=dict(os.environ, NXRT_SOFTWARE_GPU="1"), capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "webgpu ok" in run.stdout
