"""Ahead-of-time compilation from Python (ModelCompiler, get_model_compatibility): a model compiled
for a virtual NPU of an arch this machine lacks (ExampleCompiler) holds EPContext nodes, runs
on that NPU with onnxruntime's outputs, and an NPU of another arch is told apart."""

import numpy as np
import onnx
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import nxrt


def model_bytes() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return make_model([helper.make_node("Add", ["x", "x"], ["a"], name="add"),
                       helper.make_node("Relu", ["a"], ["r"], name="relu"),
                       helper.make_node("Softmax", ["r"], ["y"], name="softmax")], [x], [y])


@pytest.fixture
def npu(request):
    arch = request.param
    nxrt.register_execution_provider_library(
        f"compiler_{arch}", nxrt.example_ep_library("example_compiler"),
        virtual_devices=[(nxrt.OrtHardwareDeviceType.NPU, {"arch": arch})])
    yield [d for d in nxrt.get_ep_devices() if d.ep_name == "ExampleCompiler"][0]
    nxrt.unregister_execution_provider_library(f"compiler_{arch}")


def options_on(device) -> nxrt.SessionOptions:
    o = nxrt.SessionOptions()
    o.add_provider_for_devices([device], {})
    return o


X = np.array([[-1, 0.5, 2], [3, -4, 0]], np.float32)


@pytest.mark.parametrize("npu", ["a1"], indirect=True)
@pytest.mark.parametrize("embed", [True, False])
def test_compile_and_run_on_the_virtual_npu(npu, embed, tmp_path):
    src = tmp_path / "model.onnx"
    src.write_bytes(model_bytes())
    out = tmp_path / "compiled.onnx"
    compiler = nxrt.ModelCompiler(options_on(npu), src, embed_compiled_data_into_model=embed)
    compiler.compile_to_file(out)
    assert compiler.groups_saved == 1
    m = onnx.load(str(out), load_external_data=False)
    assert [n.op_type for n in m.graph.node] == ["EPContext", "Softmax"]
    assert (tmp_path / "compiled_ExampleCompiler_fused_0.ctx").exists() != embed
    assert nxrt.get_model_compatibility(out, npu) == \
        nxrt.OrtCompiledModelCompatibility.EP_SUPPORTED_OPTIMAL
    assert nxrt.get_model_compatibility(src, npu) == \
        nxrt.OrtCompiledModelCompatibility.EP_NOT_APPLICABLE
    s = nxrt.InferenceSession(out, options_on(npu))
    groups = s.assignment_report()["subgraphs"]
    assert groups[0]["ep_name"] == "ExampleCompiler"
    assert groups[0]["nodes"][0]["op_type"] == "EPContext"
    import onnxruntime
    want = onnxruntime.InferenceSession(str(src)).run(None, {"x": X})[0]
    np.testing.assert_allclose(s.run(None, {"x": X})[0], want, rtol=1e-6, atol=1e-7)


def test_another_arch_is_reported_and_refused(tmp_path):
    src = tmp_path / "model.onnx"
    src.write_bytes(model_bytes())
    out = tmp_path / "for_a1.onnx"
    lib = nxrt.example_ep_library("example_compiler")
    nxrt.register_execution_provider_library(
        "compiler_a1", lib, virtual_devices=[(nxrt.OrtHardwareDeviceType.NPU, {"arch": "a1"})])
    try:
        a1 = [d for d in nxrt.get_ep_devices() if d.ep_name == "ExampleCompiler"][0]
        nxrt.ModelCompiler(options_on(a1), src, keep_original_nodes=True).compile_to_file(out)
    finally:
        nxrt.unregister_execution_provider_library("compiler_a1")
    nxrt.register_execution_provider_library(
        "compiler_a2", lib, virtual_devices=[(nxrt.OrtHardwareDeviceType.NPU, {"arch": "a2"})])
    try:
        a2 = [d for d in nxrt.get_ep_devices() if d.ep_name == "ExampleCompiler"][0]
        assert nxrt.get_model_compatibility(out, a2) == \
            nxrt.OrtCompiledModelCompatibility.EP_NEEDS_RECOMPILATION
        # The original nodes were kept: they run instead of the payload.
        s = nxrt.InferenceSession(out, options_on(a2))
        ops = [n["op_type"] for g in s.assignment_report()["subgraphs"] for n in g["nodes"]]
        assert "EPContext" not in ops
        del s  # released before its EP library is unregistered
        options = options_on(a2)
        options.fallback = nxrt.FallbackMode.FORBID
        with pytest.raises(nxrt.Error, match="needs recompilation"):
            nxrt.InferenceSession(out, options)
    finally:
        nxrt.unregister_execution_provider_library("compiler_a2")
