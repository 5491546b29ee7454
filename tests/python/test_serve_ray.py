"""nxrt.serve on Ray Serve (`python -m nxrt.serve ... --ray`): a small local Ray head started
here, the server deployed on it at two replicas, answers checked against onnxruntime through
tritonclient.http, both replicas seen answering (the nxrt-replica header), and no Ray process
left behind. Skipped, with the reason, where Ray Serve or the nxrt package is not installed:
Ray's workers import nxrt.serve by its real name."""

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import onnxruntime
import pytest
from conftest import make_model
from onnx import TensorProto, helper, numpy_helper
from serve_harness import REPO, free_port, nxrt_unavailable_reason

ray = pytest.importorskip("ray", reason="Ray Serve is not installed (pip install 'ray[serve]')")
serve = pytest.importorskip("ray.serve", reason="Ray Serve is not installed")
triton_http = pytest.importorskip("tritonclient.http")

if nxrt_unavailable_reason() is not None:
    pytest.skip(f"Ray's workers need the nxrt package: {nxrt_unavailable_reason()}",
                allow_module_level=True)

REPLICAS = 2


def scale_model() -> bytes:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    return make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [x], [y], [w])


def ray_processes() -> set:
    """Pids of this user's Ray processes (raylet, GCS, workers): what must be gone at the end."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    names = ("raylet", "gcs_server", "ray::", "ray/_private", "ray.util.client")
    return {int(line.split(None, 1)[0]) for line in out.splitlines()
            if any(n in line for n in names) and str(os.getpid()) != line.split(None, 1)[0]}


def wait_ready(url: str, server: subprocess.Popen, log_path, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}:\n"
                               f"{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"http://{url}/v2/health/ready", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"not ready in {timeout_s} s:\n{log_path.read_text()}")


def replica_of_one_request(url: str, row: list) -> str:
    body = json.dumps({"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP32",
                                   "data": row}]}).encode()
    request = urllib.request.Request(f"http://{url}/v2/models/scale/infer", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as r:
        return r.headers["nxrt-replica"]


@pytest.fixture
def ray_head():
    before = ray_processes()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        deadline = time.monotonic() + 20
        while ray_processes() - before and time.monotonic() < deadline:
            time.sleep(0.5)
        left = ray_processes() - before
        assert not left, f"Ray processes left behind: {sorted(left)}"


def test_two_replicas_serve_and_match_onnxruntime(ray_head, tmp_path):
    model = tmp_path / "scale.onnx"
    model.write_bytes(scale_model())
    port = free_port()
    url = f"127.0.0.1:{port}"
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "nxrt.serve", str(model), "--ray", "--address", ray_head,
             "--replicas", str(REPLICAS), "--threads", "1", "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO))
    try:
        wait_ready(url, server, log_path)
        client = triton_http.InferenceServerClient(url)
        reference = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
        feed = triton_http.InferInput("x", list(x.shape), "FP32")
        feed.set_data_from_numpy(x, binary_data=True)
        got = client.infer("scale", [feed]).as_numpy("y")
        np.testing.assert_allclose(got, reference.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)

        # The proxy spreads concurrent requests over the replicas; ask until both answered.
        seen = set()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for _ in range(10):
                seen |= set(pool.map(lambda i: replica_of_one_request(url, [i, 1.0, 2.0]),
                                     range(16)))
                if len(seen) == REPLICAS:
                    break
        assert len(seen) == REPLICAS, f"replicas that answered: {seen}"
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    assert code == 0, log_path.read_text()
    assert "stopped" in log_path.read_text()
