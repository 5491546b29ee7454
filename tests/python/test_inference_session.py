"""InferenceSession, SessionOptions, RunOptions and the value conversions, on small models."""

import os
import threading
import time

import numpy as np
import pytest
from conftest import add_model, make_model
from onnx import TensorProto, helper

import nxrt


def test_run_add_matches_numpy(rng):
    s = nxrt.InferenceSession(add_model())
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = rng.standard_normal((4, 3)).astype(np.float32)
    (z,) = s.run(None, {"x": x, "y": y})
    assert z.dtype == np.float32 and z.shape == (4, 3)
    np.testing.assert_array_equal(z, x + y)
    # Output names select and order the outputs; a list of one name works as onnxruntime's.
    (z2,) = s.run(["z"], {"x": x, "y": y})
    np.testing.assert_array_equal(z2, z)


def test_inputs_outputs_describe_types_and_symbolic_dims():
    s = nxrt.InferenceSession(add_model(TensorProto.INT64))
    (x, y) = s.get_inputs()
    assert (x.name, x.type, x.shape) == ("x", "tensor(int64)", ["batch", 3])
    (z,) = s.get_outputs()
    assert (z.name, z.type, z.shape) == ("z", "tensor(int64)", ["batch", 3])
    assert "NodeArg(name='x'" in repr(x)


def test_model_from_bytes_path_and_pathlike(tmp_path):
    model = add_model()
    path = tmp_path / "add.onnx"
    path.write_bytes(model)
    for source in (model, str(path), path):
        s = nxrt.InferenceSession(source)
        (z,) = s.run(None, {"x": np.ones((1, 3), np.float32), "y": np.ones((1, 3), np.float32)})
        np.testing.assert_array_equal(z, np.full((1, 3), 2, np.float32))


def test_inputs_that_need_conversion(rng):
    s = nxrt.InferenceSession(add_model(TensorProto.DOUBLE))
    x = rng.standard_normal((3, 6))
    y = rng.standard_normal((3, 3))
    # A non-contiguous view, a nested list and a Fortran-ordered array all give the same result.
    (z,) = s.run(None, {"x": x[:, ::2], "y": y.tolist()})
    np.testing.assert_array_equal(z, x[:, ::2] + y)
    (z,) = s.run(None, {"x": np.asfortranarray(x[:, :3]), "y": y})
    np.testing.assert_array_equal(z, x[:, :3] + y)


@pytest.mark.parametrize("elem, dtype", [
    (TensorProto.FLOAT16, np.float16), (TensorProto.INT32, np.int32), (TensorProto.UINT8, np.uint8),
    (TensorProto.INT8, np.int8), (TensorProto.UINT64, np.uint64), (TensorProto.INT16, np.int16),
])
def test_numeric_types_round_trip(elem, dtype):
    s = nxrt.InferenceSession(add_model(elem))
    x = np.arange(6, dtype=dtype).reshape(2, 3)
    (z,) = s.run(None, {"x": x, "y": x})
    assert z.dtype == dtype
    np.testing.assert_array_equal(z, x + x)


def test_bool_and_string_tensors():
    a = helper.make_tensor_value_info("a", TensorProto.BOOL, [2])
    b = helper.make_tensor_value_info("b", TensorProto.BOOL, [2])
    o = helper.make_tensor_value_info("o", TensorProto.BOOL, [2])
    s = nxrt.InferenceSession(make_model([helper.make_node("And", ["a", "b"], ["o"])], [a, b], [o]))
    (out,) = s.run(None, {"a": np.array([True, True]), "b": np.array([True, False])})
    assert out.dtype == np.bool_ and out.tolist() == [True, False]

    t = helper.make_tensor_value_info("t", TensorProto.STRING, [3])
    u = helper.make_tensor_value_info("u", TensorProto.STRING, [3])
    s = nxrt.InferenceSession(make_model([helper.make_node("Identity", ["t"], ["u"])], [t], [u]))
    (out,) = s.run(None, {"t": np.array(["a", "bé", ""], dtype=object)})
    assert out.dtype == object and out.tolist() == ["a", "bé", ""]
    (out,) = s.run(None, {"t": np.array(["x", "yy", "zzz"])})  # numpy's own str dtype
    assert out.tolist() == ["x", "yy", "zzz"]


def test_sequence_output_is_a_list_and_empty_optional_is_none():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    s = nxrt.InferenceSession(make_model(
        [helper.make_node("SequenceConstruct", ["x", "x"], ["s"])], [x], [seq]))
    assert s.get_outputs()[0].type == "seq(tensor(float))"
    (out,) = s.run(None, {"x": np.array([1, 2], np.float32)})
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_array_equal(out[1], [1, 2])

    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    o = helper.make_value_info("o", opt_type)
    empty = helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(
        TensorProto.FLOAT, [2]))
    s = nxrt.InferenceSession(make_model([empty], [], [o], opset=18))
    assert s.run(None, {}) == [None]


def test_outputs_outlive_the_session(rng):
    s = nxrt.InferenceSession(add_model())
    x = rng.standard_normal((2, 3)).astype(np.float32)
    (z,) = s.run(None, {"x": x, "y": x})
    del s
    np.testing.assert_array_equal(z, x + x)  # the array owns its buffer


def test_modelmeta_and_providers():
    model = make_model([helper.make_node("Identity", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                       graph_name="meta_graph", graph_doc="graph words", producer_name="tester",
                       producer_version="9.9", domain="ai.test", model_version=7,
                       doc_string="model words")
    m = onnx_with_metadata(model, {"author": "nxrt", "licence": "none"})
    s = nxrt.InferenceSession(m, providers=["CPUExecutionProvider"])
    meta = s.get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.domain, meta.version) == (
        "tester", "meta_graph", "ai.test", 7)
    assert (meta.description, meta.graph_description) == ("model words", "graph words")
    assert meta.custom_metadata_map == {"author": "nxrt", "licence": "none"}
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert s.get_provider_options() == {"CPUExecutionProvider": {}}
    assert "CPUExecutionProvider" in nxrt.get_available_providers()
    assert nxrt.get_device() == "CPU"


def onnx_with_metadata(model: bytes, props: dict) -> bytes:
    import onnx
    proto = onnx.load_from_string(model)
    helper.set_model_props(proto, props)
    return proto.SerializeToString()


def test_errors_are_nxrt_exceptions(tmp_path):
    with pytest.raises(nxrt.InvalidModel, match="not a valid ONNX model"):
        nxrt.InferenceSession(b"\x08\x07garbage")
    with pytest.raises(nxrt.NotFound):
        nxrt.InferenceSession(str(tmp_path / "missing.onnx"))
    s = nxrt.InferenceSession(add_model())
    x = np.ones((1, 3), np.float32)
    with pytest.raises(nxrt.InvalidArgument, match="'nope' is not an input"):
        s.run(None, {"x": x, "nope": x})
    with pytest.raises(nxrt.InvalidArgument):
        s.run(None, {"x": x, "y": np.ones((1, 3), np.int64)})  # wrong element type
    with pytest.raises(nxrt.Error):
        s.run(["no_such_output"], {"x": x, "y": x})
    with pytest.raises(nxrt.NotFound, match="NoSuchExecutionProvider"):
        nxrt.InferenceSession(add_model(), providers=["NoSuchExecutionProvider"])
    assert issubclass(nxrt.InvalidArgument, nxrt.Error) and issubclass(nxrt.Error, RuntimeError)


def test_session_options(tmp_path):
    o = nxrt.SessionOptions()
    o.intra_op_num_threads = 2
    o.graph_optimization_level = nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL
    o.add_session_config_entry("session.intra_op_spin_us", "50")
    assert o.get_session_config_entry("session.intra_op_spin_us") == "50"
    o.enable_profiling = True
    o.profile_file_prefix = str(tmp_path / "trace")
    s = nxrt.InferenceSession(add_model(), o)
    x = np.ones((2, 3), np.float32)
    s.run(None, {"x": x, "y": x})
    trace = s.end_profiling()
    assert trace.startswith(str(tmp_path / "trace")) and os.path.getsize(trace) > 0
    import json
    events = json.load(open(trace))["traceEvents"]
    assert any(e.get("name") == "run" for e in events)
    bad = nxrt.SessionOptions()
    bad.add_session_config_entry("session.intra_op_spin_us", "-5")
    with pytest.raises(nxrt.InvalidArgument, match="intra_op_spin_us"):
        nxrt.InferenceSession(add_model(), bad)


def slow_model() -> bytes:
    """A Loop of many MatMuls: long enough to stop from another thread."""
    body_in = [helper.make_tensor_value_info("i", TensorProto.INT64, []),
               helper.make_tensor_value_info("c", TensorProto.BOOL, []),
               helper.make_tensor_value_info("a", TensorProto.FLOAT, [256, 256])]
    body_out = [helper.make_tensor_value_info("c2", TensorProto.BOOL, []),
                helper.make_tensor_value_info("a2", TensorProto.FLOAT, [256, 256])]
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]),
                              helper.make_node("MatMul", ["a", "a"], ["m"]),
                              helper.make_node("Tanh", ["m"], ["a2"])], "body", body_in, body_out)
    loop = helper.make_node("Loop", ["n", "", "a0"], ["a_out"], body=body)
    return make_model([loop], [helper.make_tensor_value_info("n", TensorProto.INT64, []),
                               helper.make_tensor_value_info("a0", TensorProto.FLOAT, [256, 256])],
                      [helper.make_tensor_value_info("a_out", TensorProto.FLOAT, [256, 256])])


def test_run_options_terminate_and_timeout():
    s = nxrt.InferenceSession(slow_model())
    feed = {"n": np.array(1_000_000, np.int64), "a0": np.eye(256, dtype=np.float32)}
    ro = nxrt.RunOptions()
    threading.Timer(0.2, lambda: setattr(ro, "terminate", True)).start()
    start = time.perf_counter()
    with pytest.raises(nxrt.Cancelled):
        s.run(None, feed, ro)
    assert time.perf_counter() - start < 30
    ro = nxrt.RunOptions()
    ro.timeout_seconds = 0.2
    with pytest.raises(nxrt.Cancelled):
        s.run(None, feed, ro)
    # The session still runs afterwards.
    (out,) = s.run(None, {"n": np.array(2, np.int64), "a0": np.eye(256, dtype=np.float32)})
    want = np.eye(256)
    for _ in range(2):
        want = np.tanh(want @ want)
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-6)


def test_version_and_abi():
    assert nxrt.__version__ == nxrt.get_version_string() and nxrt.__version__.count(".") == 2
    abi = nxrt.get_abi_version()
    assert abi["c_api"] >= 3 and abi["ep_api"] >= 1


def test_bfloat16_through_ml_dtypes():
    import ml_dtypes  # onnx depends on it, so the test virtualenv has it
    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    b = helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [4])
    s = nxrt.InferenceSession(make_model(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT),
         helper.make_node("Identity", ["x"], ["b"])], [x], [y, b]))
    values = np.array([1.5, -2.0, 0.0, 3.25], dtype=ml_dtypes.bfloat16)
    y_out, b_out = s.run(None, {"x": values})
    np.testing.assert_array_equal(y_out, [1.5, -2.0, 0.0, 3.25])
    assert b_out.dtype == values.dtype
    np.testing.assert_array_equal(b_out.astype(np.float32), values.astype(np.float32))


def test_sequence_and_optional_inputs():
    seq_in = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    n = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    cat = helper.make_tensor_value_info("c", TensorProto.FLOAT, None)
    s = nxrt.InferenceSession(make_model(
        [helper.make_node("SequenceLength", ["s"], ["n"]),
         helper.make_node("ConcatFromSequence", ["s"], ["c"], axis=0)], [seq_in], [n, cat]))
    assert s.get_inputs()[0].type == "seq(tensor(float))"
    parts = [np.array([1, 2], np.float32), np.array([3.5], np.float32), [4.0, 5.0]]
    length, joined = s.run(None, {"s": parts})
    assert int(length) == 3
    np.testing.assert_array_equal(joined, [1, 2, 3.5, 4, 5])
    length, _ = s.run(["n", "c"], {"s": parts[:1]})
    assert int(length) == 1
    with pytest.raises(TypeError, match="is a sequence"):
        s.run(None, {"s": np.ones(2, np.float32)})

    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    o = helper.make_value_info("o", opt_type)
    has = helper.make_tensor_value_info("has", TensorProto.BOOL, [])
    s = nxrt.InferenceSession(make_model(
        [helper.make_node("OptionalHasElement", ["o"], ["has"])], [o], [has], opset=18))
    assert s.get_inputs()[0].type == "optional(tensor(float))"
    assert bool(s.run(None, {"o": np.ones(2, np.float32)})[0]) is True
    assert bool(s.run(None, {"o": None})[0]) is False
