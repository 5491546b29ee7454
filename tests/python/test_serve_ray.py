"""nxrt.serve on Ray Serve (`python -m nxrt.serve ... --ray`), both ways docs/serving.md shows:

- on a Ray cluster started here with `ray start --head` (the server joins it with --address):
  two replicas, tritonclient over HTTP and gRPC with answers equal to onnxruntime's, both
  replicas seen answering, gRPC errors with the protocol's status codes, /metrics summing every
  replica whichever one answers the scrape, and on SIGTERM only our application leaves the
  cluster;
- on the server's own local Ray instance (no --address), which it shuts down on SIGTERM.

Each test checks that no Ray process outlives it. Skipped, with the reason, where Ray Serve or the
nxrt package is not installed: Ray's workers import nxrt.serve by its real name."""

import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import grpc
import numpy as np
import onnxruntime
import pytest
from conftest import make_model
from onnx import TensorProto, helper, numpy_helper
from serve_harness import REPO, free_port, nxrt_unavailable_reason

ray = pytest.importorskip("ray", reason="Ray Serve is not installed (pip install 'ray[serve]')")
serve = pytest.importorskip("ray.serve", reason="Ray Serve is not installed")
triton_http = pytest.importorskip("tritonclient.http")
triton_grpc = pytest.importorskip("tritonclient.grpc")
from tritonclient.utils import InferenceServerException  # noqa: E402

if nxrt_unavailable_reason() is not None:
    pytest.skip(f"Ray's workers need the nxrt package: {nxrt_unavailable_reason()}",
                allow_module_level=True)

REPLICAS = 2
RAY_CLI = [sys.executable, "-c", "import sys; from ray.scripts.scripts import main; "
           "sys.argv[0] = 'ray'; main()"]


def scale_model() -> bytes:
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4) / 7, "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    return make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [x], [y], [w])


def ray_processes() -> set:
    """Pids of this user's Ray processes (raylet, GCS, workers): what must be gone at the end."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    names = ("raylet", "gcs_server", "ray::", "ray/_private", "ray.util.client",
             "ray/dashboard")
    return {int(line.split(None, 1)[0]) for line in out.splitlines()
            if any(n in line for n in names) and str(os.getpid()) != line.split(None, 1)[0]}


def wait_gone(before: set, timeout_s=30):
    deadline = time.monotonic() + timeout_s
    while ray_processes() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    left = ray_processes() - before
    assert not left, f"Ray processes left behind: {sorted(left)}"


def wait_ready(url: str, server: subprocess.Popen, log_path, timeout_s=90):
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


def successes_by_replica(url: str) -> dict:
    """{replica: successful requests} from /metrics."""
    with urllib.request.urlopen(f"http://{url}/metrics", timeout=20) as r:
        text = r.read().decode()
    out = {}
    for labels, value in re.findall(r"^nxrt_serve_requests_total\{(.*)\} (\S+)$", text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if labels["outcome"] == "success":
            out[labels["replica"]] = out.get(labels["replica"], 0) + float(value)
    return out


def placement_replicas(url: str) -> set:
    with urllib.request.urlopen(f"http://{url}/metrics", timeout=20) as r:
        text = r.read().decode()
    return set(re.findall(r'^nxrt_serve_model_nodes\{.*model="scale".*replica="([^"]+)".*\} 1\.0$',
                          text, re.M))


class RayServer:
    """`python -m nxrt.serve scale.onnx --ray ...` on free ports, its log in a file."""

    def __init__(self, tmp_path, extra_args: list, env: dict = None):
        self.model = tmp_path / "scale.onnx"
        self.model.write_bytes(scale_model())
        self.http_port, self.grpc_port = free_port(), free_port()
        self.url, self.grpc_url = f"127.0.0.1:{self.http_port}", f"127.0.0.1:{self.grpc_port}"
        self.log_path = tmp_path / "server.log"
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "nxrt.serve", str(self.model), "--ray",
                 "--replicas", str(REPLICAS), "--threads", "1", "--port", str(self.http_port),
                 "--grpc-port", str(self.grpc_port)] + extra_args,
                stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO), env=env)
        self.reference = onnxruntime.InferenceSession(str(self.model),
                                                      providers=["CPUExecutionProvider"])

    def __enter__(self):
        try:
            wait_ready(self.url, self.process, self.log_path)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise

    def __exit__(self, *exc):
        self.stop()

    def check_http_and_grpc_answers(self):
        x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
        expected = self.reference.run(None, {"x": x})[0]

        http = triton_http.InferenceServerClient(self.url)
        feed = triton_http.InferInput("x", list(x.shape), "FP32")
        feed.set_data_from_numpy(x, binary_data=True)
        np.testing.assert_allclose(http.infer("scale", [feed]).as_numpy("y"), expected,
                                   rtol=1e-5, atol=1e-6)

        client = triton_grpc.InferenceServerClient(self.grpc_url)
        assert client.is_server_live() and client.is_server_ready()
        assert client.is_model_ready("scale")
        meta = client.get_model_metadata("scale", as_json=True)
        assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": ["-1", "3"]}]
        feed = triton_grpc.InferInput("x", list(x.shape), "FP32")
        feed.set_data_from_numpy(x)
        np.testing.assert_allclose(client.infer("scale", [feed]).as_numpy("y"), expected,
                                   rtol=1e-5, atol=1e-6)
        return 2  # successful inference requests sent

    def check_grpc_errors(self):
        """The protocol's status codes come through Ray's proxy, not a generic INTERNAL."""
        client = triton_grpc.InferenceServerClient(self.grpc_url)
        wrong = triton_grpc.InferInput("x", [2, 5], "FP32")
        wrong.set_data_from_numpy(np.zeros((2, 5), np.float32))
        for model, feed, code, words in (
                ("scale", wrong, grpc.StatusCode.INVALID_ARGUMENT, "shape"),
                ("no_such_model", wrong, grpc.StatusCode.NOT_FOUND, "no_such_model")):
            with pytest.raises(InferenceServerException) as e:
                client.infer(model, [feed])
            assert e.value.status() == str(code), (e.value.status(), e.value.message())
            assert words in e.value.message(), e.value.message()


@pytest.fixture
def ray_cluster(tmp_path):
    """A one-node Ray cluster of its own (`ray start --head`) with token authentication, as Ray
    sets clusters up by default: (its GCS address, the environment a client needs to join it).
    Stopped after."""
    before = ray_processes()
    port = free_port()
    token = tmp_path / "ray_token"
    token.write_text(os.urandom(16).hex())
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN_PATH=str(token))
    started = subprocess.run(
        RAY_CLI + ["start", "--head", f"--port={port}", "--num-cpus=2",
                   "--include-dashboard=false", "--disable-usage-stats"],
        capture_output=True, text=True, env=env, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        subprocess.run(RAY_CLI + ["stop", "--force"], capture_output=True, env=env, timeout=120)
        wait_gone(before)


def test_two_replicas_on_a_ray_cluster(ray_cluster, tmp_path):
    address, env = ray_cluster
    with RayServer(tmp_path, ["--address", address], env) as server:
        sent = server.check_http_and_grpc_answers()

        # The proxy spreads concurrent requests over the replicas; ask until both answered.
        seen = set()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for _ in range(10):
                seen |= set(pool.map(lambda i: replica_of_one_request(server.url,
                                                                      [i, 1.0, 2.0]),
                                     range(16)))
                sent += 16
                if len(seen) == REPLICAS:
                    break
        assert len(seen) == REPLICAS, f"replicas that answered: {seen}"
        server.check_grpc_errors()

        # Whichever replica answers the scrape, /metrics counts every replica's requests
        # (pushed within about a second) and shows where each replica runs the model.
        deadline, counts = time.monotonic() + 20, {}
        while time.monotonic() < deadline:
            counts = successes_by_replica(server.url)
            if sum(counts.values()) == sent and set(counts) == seen:
                break
            time.sleep(0.5)
        assert set(counts) == seen and sum(counts.values()) == sent, (counts, sent)
        assert placement_replicas(server.url) == seen

        assert server.stop() == 0, server.log_path.read_text()
    log = server.log_path.read_text()
    assert "gRPC on" in log and "stopped" in log, log

    # The cluster is someone else's: it still runs, with our application gone from it.
    status = subprocess.run(
        [sys.executable, "-c", "import ray, json; from ray import serve; "
         f"ray.init(address='{address}', log_to_driver=False); "
         "print(json.dumps(sorted(serve.status().applications)))"],
        capture_output=True, text=True, timeout=120, env=env)
    assert status.returncode == 0, status.stderr
    assert "nxrt" not in json.loads(status.stdout.strip().splitlines()[-1]), status.stdout


def test_local_ray_instance_is_started_and_shut_down(tmp_path):
    before = ray_processes()
    with RayServer(tmp_path, []) as server:
        server.check_http_and_grpc_answers()
        assert server.stop() == 0, server.log_path.read_text()
    assert "stopped" in server.log_path.read_text()
    wait_gone(before)
