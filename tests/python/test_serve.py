"""nxrt.serve end to end: a server subprocess per session class (onnxruntime always, nxrt when
it is importable), talked to through the real Triton clients (tritonclient.http and .grpc) and,
for requests no client would send, through raw HTTP. Results are checked against onnxruntime run
directly on the same model."""

import concurrent.futures
import http.client
import json
import re
import signal
import socket
import struct
import subprocess
import time

import grpc
import numpy as np
import onnxruntime
import pytest
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from conftest import make_model
import onnx
from onnx import TensorProto, helper, numpy_helper
from serve_harness import ServerProcess, nxrt_unavailable_reason, serve_command
from tritonclient.grpc import service_pb2
from tritonclient.utils import InferenceServerException

NXRT_SKIP = nxrt_unavailable_reason()
SESSION_CLASSES = [
    pytest.param("onnxruntime"),
    pytest.param("nxrt", marks=pytest.mark.skipif(NXRT_SKIP is not None, reason=str(NXRT_SKIP))),
]
MAX_BATCH = 8


def mlp_model() -> bytes:
    """y = x @ w + b over [batch, 3] -> [batch, 4]."""
    rng = np.random.default_rng(11)
    w = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    return make_model([helper.make_node("MatMul", ["x", "w"], ["h"]),
                       helper.make_node("Add", ["h", "b"], ["y"])], [x], [y], [w, b])


def mixed_model() -> bytes:
    """INT64 and BOOL in: masked = where(mask, ids, 0), flipped = not mask."""
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 4])
    mask = helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", 4])
    masked = helper.make_tensor_value_info("masked", TensorProto.INT64, ["batch", 4])
    flipped = helper.make_tensor_value_info("flipped", TensorProto.BOOL, ["batch", 4])
    zero = numpy_helper.from_array(np.array(0, dtype=np.int64), "zero")
    return make_model([helper.make_node("Where", ["mask", "ids", "zero"], ["masked"]),
                       helper.make_node("Not", ["mask"], ["flipped"])],
                      [ids, mask], [masked, flipped], [zero])


def text_model() -> bytes:
    """BYTES (ONNX string) through Identity."""
    words = helper.make_tensor_value_info("words", TensorProto.STRING, ["batch"])
    same = helper.make_tensor_value_info("same", TensorProto.STRING, ["batch"])
    return make_model([helper.make_node("Identity", ["words"], ["same"])], [words], [same])


def double_model() -> bytes:
    """y = x + x over [batch, n]: requests with different n must not be merged."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "n"])
    return make_model([helper.make_node("Add", ["x", "x"], ["y"])], [x], [y])


MODELS = {"mlp": mlp_model, "mixed": mixed_model, "text": text_model, "double": double_model}


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve_models")
    paths = {}
    for name, build in MODELS.items():
        paths[name] = folder / f"{name}.onnx"
        paths[name].write_bytes(build())
    return paths


@pytest.fixture(scope="module", params=SESSION_CLASSES)
def server(request, model_files, tmp_path_factory):
    log = tmp_path_factory.mktemp("serve_log") / f"{request.param}.log"
    s = ServerProcess([str(p) for p in model_files.values()],
                      ["--session-class", request.param, "--threads", "1",
                       "--max-batch", str(MAX_BATCH), "--batch-timeout-ms", "30"], log)
    s.session_class = request.param
    yield s
    s.stop()
    # uvicorn re-raises the SIGTERM it handled once it has shut down gracefully.
    assert s.process.returncode in (0, -signal.SIGTERM), s.log()
    assert s.log().rstrip().endswith("nxrt.serve: stopped"), s.log()


def reference(model_files, name: str, feeds: dict) -> dict:
    session = onnxruntime.InferenceSession(str(model_files[name]))
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def metric_samples(server, name: str) -> dict:
    """{labels text: value} of one metric in /metrics."""
    status, text = server.get("/metrics")
    assert status == 200
    out = {}
    for line in text.splitlines():
        m = re.match(rf"{name}\{{(.*)\}} (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


# ---- health and metadata ----

def test_metrics_show_where_each_model_runs(server, model_files):
    nodes = metric_samples(server, "nxrt_serve_model_nodes")
    fallbacks = metric_samples(server, "nxrt_serve_model_fallback_nodes")
    if server.session_class == "onnxruntime":  # no placement per node to report
        assert nodes == {} and fallbacks == {}
        return
    placed = [(dict(re.findall(r'(\w+)="([^"]*)"', k)), v) for k, v in nodes.items()]
    for name, path in model_files.items():
        mine = [(labels, v) for labels, v in placed if labels["model"] == name]
        # Every node of the model is counted once, on nxrt's CPU EP and a CPU device.
        assert sum(v for _, v in mine) == len(onnx.load(str(path)).graph.node), (name, nodes)
        for labels, _ in mine:
            assert labels["ep"] == "CPU" and labels["device"].startswith("CPU:"), labels
        assert fallbacks[f'model="{name}"'] == 0

def test_health_and_metadata_http(server):
    client = triton_http.InferenceServerClient(server.url)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp")
    assert not client.is_model_ready("no_such_model")
    meta = client.get_model_metadata("mlp")
    assert meta["name"] == "mlp" and meta["versions"] == ["1"]
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 3]}]
    assert meta["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, 4]}]
    mixed = client.get_model_metadata("mixed")
    assert [(t["name"], t["datatype"]) for t in mixed["inputs"]] == [("ids", "INT64"),
                                                                     ("mask", "BOOL")]
    assert client.get_model_metadata("text")["inputs"][0]["datatype"] == "BYTES"
    assert server.get("/v2")[1]["name"] == "nxrt"
    assert server.get("/v2/health/live") == (200, {"live": True})
    assert server.get("/v2/models/mlp/versions/1/ready")[0] == 200


def test_health_and_metadata_grpc(server):
    client = triton_grpc.InferenceServerClient(server.grpc_url)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mixed")
    assert client.get_server_metadata().name == "nxrt"
    meta = client.get_model_metadata("mixed")
    assert meta.name == "mixed"
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.outputs] == [
        ("masked", "INT64", [-1, 4]), ("flipped", "BOOL", [-1, 4])]
    with pytest.raises(InferenceServerException, match="unknown model"):
        client.get_model_metadata("no_such_model")


# ---- inference: JSON, binary, gRPC ----

@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_mlp_http_matches_onnxruntime(server, model_files, binary):
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    client = triton_http.InferenceServerClient(server.url)
    tensor = triton_http.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary)
    result = client.infer("mlp", [tensor], request_id="r-7",
                          outputs=[triton_http.InferRequestedOutput("y", binary_data=binary)])
    output = result.get_output("y")
    assert ("binary_data_size" in output.get("parameters", {})) == binary
    assert output["shape"] == [5, 4]
    assert result.get_response()["id"] == "r-7"
    np.testing.assert_allclose(result.as_numpy("y"),
                               reference(model_files, "mlp", {"x": x})["y"], rtol=1e-5)


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_int64_and_bool_http(server, model_files, binary):
    rng = np.random.default_rng(2)
    ids = rng.integers(-2**40, 2**40, (3, 4), dtype=np.int64)
    mask = rng.random((3, 4)) > 0.5
    client = triton_http.InferenceServerClient(server.url)
    inputs = [triton_http.InferInput("ids", [3, 4], "INT64"),
              triton_http.InferInput("mask", [3, 4], "BOOL")]
    inputs[0].set_data_from_numpy(ids, binary_data=binary)
    inputs[1].set_data_from_numpy(mask, binary_data=binary)
    outputs = [triton_http.InferRequestedOutput(n, binary_data=binary)
               for n in ("masked", "flipped")]
    result = client.infer("mixed", inputs, outputs=outputs)
    expected = reference(model_files, "mixed", {"ids": ids, "mask": mask})
    np.testing.assert_array_equal(result.as_numpy("masked"), expected["masked"])
    np.testing.assert_array_equal(result.as_numpy("flipped"), expected["flipped"])
    assert result.as_numpy("flipped").dtype == np.bool_


def test_binary_data_output_for_every_output(server):
    """The request-level 'binary_data_output' parameter, in a hand-made request."""
    doc = {"inputs": [{"name": "ids", "datatype": "INT64", "shape": [1, 4],
                       "data": [5, 6, 7, 8]},
                      {"name": "mask", "datatype": "BOOL", "shape": [1, 4],
                       "data": [True, False, True, False]}],
           "parameters": {"binary_data_output": True}}
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    conn.request("POST", "/v2/models/mixed/infer", body=json.dumps(doc))
    r = conn.getresponse()
    body = r.read()
    conn.close()
    assert r.status == 200
    n = int(r.getheader("Inference-Header-Content-Length"))
    header = json.loads(body[:n])
    sizes = [o["parameters"]["binary_data_size"] for o in header["outputs"]]
    assert sizes == [32, 4] and len(body) == n + 36
    assert np.frombuffer(body[n:n + 32], "<i8").tolist() == [5, 0, 7, 0]
    assert np.frombuffer(body[n + 32:], np.bool_).tolist() == [False, True, False, True]


def test_only_requested_outputs_come_back(server):
    client = triton_http.InferenceServerClient(server.url)
    inputs = [triton_http.InferInput("ids", [1, 4], "INT64"),
              triton_http.InferInput("mask", [1, 4], "BOOL")]
    inputs[0].set_data_from_numpy(np.arange(4, dtype=np.int64).reshape(1, 4))
    inputs[1].set_data_from_numpy(np.ones((1, 4), dtype=bool))
    result = client.infer("mixed", inputs,
                          outputs=[triton_http.InferRequestedOutput("flipped")])
    assert [o["name"] for o in result.get_response()["outputs"]] == ["flipped"]
    assert not result.as_numpy("flipped").any()


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_bytes_http(server, binary):
    words = np.array([b"serve", b"caf\xc3\xa9", b""], dtype=object)
    client = triton_http.InferenceServerClient(server.url)
    tensor = triton_http.InferInput("words", [3], "BYTES")
    tensor.set_data_from_numpy(words, binary_data=binary)
    result = client.infer("text", [tensor],
                          outputs=[triton_http.InferRequestedOutput("same", binary_data=binary)])
    assert [bytes(w) if not isinstance(w, str) else w.encode()
            for w in result.as_numpy("same")] == list(words)


def test_grpc_infer_raw_contents(server, model_files):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    client = triton_grpc.InferenceServerClient(server.grpc_url)
    tensor = triton_grpc.InferInput("x", [4, 3], "FP32")
    tensor.set_data_from_numpy(x)  # raw_input_contents
    result = client.infer("mlp", [tensor])
    np.testing.assert_allclose(result.as_numpy("y"),
                               reference(model_files, "mlp", {"x": x})["y"], rtol=1e-5)
    ids = rng.integers(-100, 100, (2, 4), dtype=np.int64)
    mask = rng.random((2, 4)) > 0.5
    inputs = [triton_grpc.InferInput("ids", [2, 4], "INT64"),
              triton_grpc.InferInput("mask", [2, 4], "BOOL")]
    inputs[0].set_data_from_numpy(ids)
    inputs[1].set_data_from_numpy(mask)
    result = client.infer("mixed", inputs)
    expected = reference(model_files, "mixed", {"ids": ids, "mask": mask})
    np.testing.assert_array_equal(result.as_numpy("masked"), expected["masked"])
    np.testing.assert_array_equal(result.as_numpy("flipped"), expected["flipped"])
    words = np.array([b"a", b"bc"], dtype=object)
    tensor = triton_grpc.InferInput("words", [2], "BYTES")
    tensor.set_data_from_numpy(words)
    assert list(client.infer("text", [tensor]).as_numpy("same")) == [b"a", b"bc"]


def test_grpc_infer_typed_contents(server, model_files):
    """Tensor data in InferTensorContents rather than raw bytes (other clients send that)."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    request = service_pb2.ModelInferRequest(model_name="mlp")
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[2, 3])
    tensor.contents.fp32_contents.extend(x.ravel().tolist())
    client = triton_grpc.InferenceServerClient(server.grpc_url)
    response = client._client_stub.ModelInfer(request)
    y = np.frombuffer(response.raw_output_contents[0], dtype="<f4").reshape(2, 4)
    np.testing.assert_allclose(y, reference(model_files, "mlp", {"x": x})["y"], rtol=1e-5)


# ---- dynamic batching ----

def test_concurrent_requests_are_batched_and_stay_per_request(server, model_files):
    rng = np.random.default_rng(4)
    before = metric_samples(server, "nxrt_serve_batch_requests_count").get('model="mlp"', 0)
    xs = [rng.standard_normal((1 + k % 2, 3)).astype(np.float32) for k in range(32)]
    client = triton_grpc.InferenceServerClient(server.grpc_url)

    def one(x):
        tensor = triton_grpc.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        return client.infer("mlp", [tensor]).as_numpy("y")

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, xs))
    for x, y in zip(xs, results):
        np.testing.assert_allclose(y, reference(model_files, "mlp", {"x": x})["y"], rtol=1e-5)
    # HTTP clients batch with the gRPC ones: gevent greenlets send these concurrently.
    http = triton_http.InferenceServerClient(server.url, concurrency=8)
    pending = []
    for x in xs[:8]:
        tensor = triton_http.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x, binary_data=True)
        pending.append(http.async_infer("mlp", [tensor]))
    for x, p in zip(xs, pending):
        np.testing.assert_allclose(p.get_result().as_numpy("y"),
                                   reference(model_files, "mlp", {"x": x})["y"], rtol=1e-5)
    counts = metric_samples(server, "nxrt_serve_batch_requests_count")
    singles = metric_samples(server, "nxrt_serve_batch_requests_bucket")
    runs = counts['model="mlp"'] - before
    assert runs < 40, "40 requests ran in as many session runs: nothing was batched"
    assert counts['model="mlp"'] > singles['le="1.0",model="mlp"'], \
        "no session run merged more than one request"
    rows = metric_samples(server, "nxrt_serve_batch_rows_bucket")
    assert rows[f'le="{float(MAX_BATCH)}",model="mlp"'] == counts['model="mlp"'], \
        f"a batch exceeded --max-batch {MAX_BATCH}"


def test_requests_with_different_inner_dims_stay_correct(server, model_files):
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((1, 2 + k % 3)).astype(np.float32) for k in range(18)]
    client = triton_grpc.InferenceServerClient(server.grpc_url)

    def one(x):
        tensor = triton_grpc.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        return client.infer("double", [tensor]).as_numpy("y")

    with concurrent.futures.ThreadPoolExecutor(9) as pool:
        results = list(pool.map(one, xs))
    for x, y in zip(xs, results):
        assert y.shape == x.shape
        np.testing.assert_array_equal(y, x + x)


# ---- hostile requests: clean 4xx, and the server keeps serving ----

def raw_post(server, path: str, body: bytes, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    try:
        conn.request("POST", path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def infer_json(server, model: str, doc, headers=None):
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return raw_post(server, f"/v2/models/{model}/infer", body, headers)


def x_input(shape, data, datatype="FP32", **extra):
    return {"inputs": [dict({"name": "x", "datatype": datatype, "shape": shape, "data": data},
                            **extra)]}


HOSTILE_JSON = {
    "wrong shape": ("mlp", x_input([2, 4], list(range(8))), 400, "shape"),
    "wrong rank": ("mlp", x_input([6], list(range(6))), 400, "shape"),
    "data does not fill the shape": ("mlp", x_input([2, 3], [1, 2, 3]), 400, "6 elements"),
    "wrong datatype": ("mlp", x_input([1, 3], [1, 2, 3], "INT32"), 400, "datatype"),
    "unknown datatype": ("mlp", x_input([1, 3], [1, 2, 3], "FP128"), 400, "datatype"),
    "strings as floats": ("mlp", x_input([1, 3], ["1", "2", "3"]), 400, "FP32"),
    "negative dim": ("mlp", x_input([-1, 3], [1, 2, 3]), 400, "non-negative"),
    "missing input": ("mixed", {"inputs": [{"name": "ids", "datatype": "INT64", "shape": [1, 4],
                                             "data": [1, 2, 3, 4]}]}, 400, "missing"),
    "unknown input": ("mlp", {"inputs": [{"name": "z", "datatype": "FP32", "shape": [1, 3],
                                          "data": [1, 2, 3]}]}, 400, "no input"),
    "unknown output": ("mlp", dict(x_input([1, 3], [1, 2, 3]), outputs=[{"name": "q"}]), 400,
                       "no output"),
    "int64 overflow": ("mixed", {"inputs": [
        {"name": "ids", "datatype": "INT64", "shape": [1, 4], "data": [2**70, 0, 0, 0]},
        {"name": "mask", "datatype": "BOOL", "shape": [1, 4], "data": [True] * 4}]}, 400,
        "INT64"),
    "huge declared shape": ("mlp", x_input([2**40, 3], [1, 2, 3]), 400, "elements"),
    "huge rank": ("mlp", x_input([1] * 100, [1]), 400, "dimensions"),
    "dim past int64": ("mlp", x_input([2**70, 3], []), 400, "64-bit"),
    "no inputs": ("mlp", {"inputs": []}, 400, "inputs"),
    "not an object": ("mlp", [1, 2, 3], 400, "object"),
    "unknown model": ("no_such_model", x_input([1, 3], [1, 2, 3]), 404, "unknown model"),
}


@pytest.mark.parametrize("case", list(HOSTILE_JSON))
def test_hostile_json_gets_4xx(server, case):
    model, doc, status, words = HOSTILE_JSON[case]
    got, body = infer_json(server, model, doc)
    assert got == status, body
    assert set(body) == {"error"} and words in body["error"], body


@pytest.mark.parametrize("shape", [[0, 2**62], [0, 2**40, 2**40]], ids=["one", "two"])
def test_empty_tensor_with_giant_dims_is_no_crash(server, shape):
    """No data to check a huge dim against: whatever the runtime makes of it, the answer is a
    success or a 400, and the server lives on."""
    status, reply = infer_json(server, "double", x_input(shape, []))
    assert status in (200, 400), reply
    if status == 200:
        assert reply["outputs"][0]["shape"] == shape and reply["outputs"][0]["data"] == []
    assert server.get("/v2/health/live")[0] == 200


def binary_request(shape, declared_size: int, payload: bytes):
    header = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": shape,
                                     "parameters": {"binary_data_size": declared_size}}]})
    header = header.encode()
    return header + payload, {"Inference-Header-Content-Length": str(len(header))}


@pytest.mark.parametrize("case", ["truncated", "size disagrees with shape", "huge shape",
                                  "bytes left over", "header length past the body",
                                  "header length not a number"])
def test_hostile_binary_gets_400(server, case):
    payload = np.ones((2, 3), dtype="<f4").tobytes()
    body, headers = {
        "truncated": lambda: binary_request([2, 3], 24, payload[:10]),
        "size disagrees with shape": lambda: binary_request([2, 3], 12, payload[:12]),
        "huge shape": lambda: binary_request([2**50, 3], 24, payload),
        "bytes left over": lambda: binary_request([2, 3], 24, payload + b"extra"),
        "header length past the body": lambda: (
            b'{"inputs": []}', {"Inference-Header-Content-Length": "1000"}),
        "header length not a number": lambda: (
            b'{"inputs": []}', {"Inference-Header-Content-Length": "ten"}),
    }[case]()
    status, reply = infer_json(server, "mlp", body, headers)
    assert status == 400 and "error" in reply, reply


def test_hostile_bytes_tensor_gets_400(server):
    words = struct.pack("<I", 100) + b"short"  # declares 100 bytes, has 5
    header = json.dumps({"inputs": [{"name": "words", "datatype": "BYTES", "shape": [1],
                                     "parameters": {"binary_data_size": len(words)}}]}).encode()
    status, reply = infer_json(server, "text", header + words,
                               {"Inference-Header-Content-Length": str(len(header))})
    assert status == 400 and "100 bytes" in reply["error"], reply


@pytest.mark.parametrize("kind", ["random bytes", "deep nesting", "unterminated"])
def test_ten_megabytes_of_garbage_get_400(server, kind):
    size = 10 << 20
    body = {"random bytes": lambda: np.random.default_rng(6).bytes(size),
            "deep nesting": lambda: b"[" * size,
            "unterminated": lambda: b'{"inputs": [' + b"1," * (size // 2)}[kind]()
    status, reply = infer_json(server, "mlp", body)
    assert status == 400 and "not valid JSON" in reply["error"], reply


def test_compressed_body_gets_400(server):
    status, reply = infer_json(server, "mlp", b"\x1f\x8b", {"Content-Encoding": "gzip"})
    assert status == 400 and "Content-Encoding" in reply["error"], reply


def test_declared_huge_body_gets_413_without_being_sent(server):
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=30) as s:
        s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 10000000000\r\n\r\n{")
        reply = http.client.HTTPResponse(s)
        reply.begin()
        body = json.loads(reply.read())
    assert reply.status == 413, body
    assert "limit" in body["error"], body


def test_client_leaving_mid_body_is_a_client_error(server):
    before = metric_samples(server, "nxrt_serve_requests_total")
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=30) as s:
        s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 1000\r\n\r\n{\"inputs\"")
    key = 'model="mlp",outcome="client_error",protocol="http"'
    for _ in range(50):  # the server notices the disconnect on its own time
        if metric_samples(server, "nxrt_serve_requests_total").get(key, 0) > before.get(key, 0):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the abandoned request was not counted as a client error")


def test_grpc_hostile_requests(server):
    client = triton_grpc.InferenceServerClient(server.grpc_url)
    stub = client._client_stub
    bad = service_pb2.ModelInferRequest(model_name="mlp")
    bad.inputs.add(name="x", datatype="FP32", shape=[2, 3])
    bad.raw_input_contents.append(b"\0" * 10)  # 24 bytes needed
    huge = service_pb2.ModelInferRequest(model_name="mlp")
    huge.inputs.add(name="x", datatype="FP32", shape=[2**40, 2**20])
    huge.raw_input_contents.append(b"\0" * 24)
    unknown = service_pb2.ModelInferRequest(model_name="nope")
    unknown.inputs.add(name="x", datatype="FP32", shape=[1, 3])
    for request, code in [(bad, grpc.StatusCode.INVALID_ARGUMENT),
                          (huge, grpc.StatusCode.INVALID_ARGUMENT),
                          (unknown, grpc.StatusCode.NOT_FOUND)]:
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(request)
        assert e.value.code() == code, e.value.details()


def test_server_still_serves_and_counts_errors(server, model_files):
    """Runs after the hostile tests in this module: the server is still up and right."""
    x = np.ones((1, 3), dtype=np.float32)
    status, reply = infer_json(server, "mlp", x_input([1, 3], [1.0, 1.0, 1.0]))
    assert status == 200, reply
    np.testing.assert_allclose(reply["outputs"][0]["data"],
                               reference(model_files, "mlp", {"x": x})["y"].ravel(), rtol=1e-5)
    assert server.get("/v2/health/ready")[0] == 200
    assert server.process.poll() is None
    requests = metric_samples(server, "nxrt_serve_requests_total")
    assert requests['model="mlp",outcome="client_error",protocol="http"'] >= 20
    assert requests['model="",outcome="not_found",protocol="http"'] >= 1
    assert requests['model="mlp",outcome="success",protocol="grpc"'] >= 32
    assert not any("server_error" in k for k in requests), requests


# ---- without batching, and the command line's own errors ----

@pytest.mark.parametrize("session_class", SESSION_CLASSES)
def test_unbatched_server(session_class, model_files, tmp_path):
    s = ServerProcess([f"m={model_files['mlp']}"],
                      ["--session-class", session_class, "--max-batch", "1", "--workers", "2",
                       "--grpc-port", "-1"], tmp_path / "log")
    try:
        x = np.random.default_rng(8).standard_normal((2, 3)).astype(np.float32)
        client = triton_http.InferenceServerClient(s.url, concurrency=4)
        pending = []
        for _ in range(8):
            tensor = triton_http.InferInput("x", [2, 3], "FP32")
            tensor.set_data_from_numpy(x, binary_data=True)
            pending.append(client.async_infer("m", [tensor]))
        expected = reference(model_files, "mlp", {"x": x})["y"]
        for p in pending:
            np.testing.assert_allclose(p.get_result().as_numpy("y"), expected, rtol=1e-5)
        counts = metric_samples(s, "nxrt_serve_batch_requests_count")
        singles = metric_samples(s, "nxrt_serve_batch_requests_bucket")
        assert counts['model="m"'] == singles['le="1.0",model="m"'] == 8
        assert "(" + session_class + ", unbatched)" in s.log()
    finally:
        s.stop()


@pytest.mark.parametrize("args, message", [
    (["missing.onnx"], "no model file"),
    (["a=x.onnx", "b=y.onnx", "--name", "c"], "--name needs exactly one MODEL"),
    (["x.onnx", "--max-batch", "0"], "--max-batch"),
], ids=["missing file", "name with two models", "zero max batch"])
def test_command_line_errors(args, message):
    done = subprocess.run(serve_command() + args + ["--session-class", "onnxruntime"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
