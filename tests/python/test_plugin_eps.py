"""The plugin-EP surface: EP libraries registered by path, EP devices, explicit devices and
policies, virtual devices, and nxrt's placement report and dry run."""

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import nxrt


def add_relu_softmax() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return make_model([helper.make_node("Add", ["x", "x"], ["a"], name="add"),
                       helper.make_node("Relu", ["a"], ["r"], name="relu"),
                       helper.make_node("Softmax", ["r"], ["y"], name="soft")], [x], [y])


X = np.array([[-1, 0.5, 2], [-3, 4, 0]], np.float32)


def cpu_result():
    return nxrt.InferenceSession(add_relu_softmax()).run(None, {"x": X})[0]


@pytest.fixture
def npu():
    nxrt.register_execution_provider_library(
        "npu_test", nxrt.example_ep_library("example_npu"),
        virtual_devices=[(nxrt.OrtHardwareDeviceType.NPU, {"arch": "nx2"})])
    yield
    nxrt.unregister_execution_provider_library("npu_test")


def test_cpu_ep_device_is_listed():
    devices = nxrt.get_ep_devices()
    cpu = [d for d in devices if d.ep_name == "CPU"]
    assert len(cpu) == 1
    assert cpu[0].device.type == nxrt.OrtHardwareDeviceType.CPU
    assert cpu[0].device.vendor and cpu[0].ep_metadata.get("version")
    assert any(h.type == nxrt.OrtHardwareDeviceType.CPU for h in nxrt.get_hardware_devices())


def test_virtual_npu_device_explicitly(npu):
    devices = [d for d in nxrt.get_ep_devices() if d.ep_name == "ExampleNpu"]
    assert len(devices) == 1
    dev = devices[0]
    assert dev.device.type == nxrt.OrtHardwareDeviceType.NPU and dev.device.is_virtual
    assert dev.device.metadata.get("arch") == "nx2"
    assert "ExampleNpu" in nxrt.get_available_providers()
    o = nxrt.SessionOptions()
    o.add_provider_for_devices([dev], {})
    s = nxrt.InferenceSession(add_relu_softmax(), o)
    assert s.get_providers() == ["ExampleNpu", "CPUExecutionProvider"]
    np.testing.assert_allclose(s.run(None, {"x": X})[0], cpu_result(), rtol=1e-6)
    report = s.assignment_report()
    npu_groups = [g for g in report["subgraphs"] if g["ep_name"] == "ExampleNpu"]
    assert npu_groups and npu_groups[0]["devices"][0]["metadata"]["is_virtual"] == "1"
    placed = {n["name"]: g["ep_name"] for g in report["subgraphs"] for n in g["nodes"]}
    assert placed["add"] == "ExampleNpu" and placed["soft"] == "CPU"
    fallback = [f for f in report["fallbacks"] if f["node"]["name"] == "soft"]
    assert fallback and fallback[0]["preferred_ep"] == "ExampleNpu"
    assert fallback[0]["assigned_ep"] == "CPU" and fallback[0]["reason"]
    # A library with a live session stays registered.
    with pytest.raises(nxrt.Error):
        nxrt.unregister_execution_provider_library("npu_test")
    del s


def test_policy_and_forbidden_fallback(npu):
    o = nxrt.SessionOptions()
    o.set_provider_selection_policy(nxrt.OrtExecutionProviderDevicePolicy.PREFER_NPU)
    s = nxrt.InferenceSession(add_relu_softmax(), o)
    assert s.get_providers()[0] == "ExampleNpu"
    np.testing.assert_allclose(s.run(None, {"x": X})[0], cpu_result(), rtol=1e-6)
    del s
    o.fallback = nxrt.FallbackMode.FORBID
    with pytest.raises(nxrt.Error, match="Softmax node 'soft'"):
        nxrt.InferenceSession(add_relu_softmax(), o)


def test_plan_placement_dry_run(npu):
    o = nxrt.SessionOptions()
    o.set_provider_selection_policy(nxrt.OrtExecutionProviderDevicePolicy.PREFER_NPU)
    plan = nxrt.plan_placement(add_relu_softmax(), o)
    placed = {n["name"]: g["ep_name"] for g in plan["subgraphs"] for n in g["nodes"]}
    assert placed == {"add": "ExampleNpu", "relu": "ExampleNpu", "soft": "CPU"}


def test_explicit_provider_with_options_and_bad_library(tmp_path):
    o = nxrt.SessionOptions()
    s = nxrt.InferenceSession(add_relu_softmax(), o, providers=[("CPUExecutionProvider", {})])
    assert s.get_providers() == ["CPUExecutionProvider"]
    with pytest.raises(nxrt.Error):
        nxrt.register_execution_provider_library("bad", str(tmp_path / "missing.so"))
    not_a_library = tmp_path / "fake.so"
    not_a_library.write_bytes(b"not an ELF file")
    with pytest.raises(nxrt.Error):
        nxrt.register_execution_provider_library("bad", str(not_a_library))
