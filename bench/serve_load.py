#!/usr/bin/env python3
"""Throughput and latency of nxrt.serve under bounded concurrent load on localhost.

    bench/serve_load.py MODEL.onnx [--clients 8] [--requests 200 | --seconds S] [--grpc]
                        [--threads T] [--no-ray] [--python PY] [--only LABEL ...]

Starts each server configuration itself (python -m nxrt.serve on free loopback ports), waits
until it is ready, sends a few warm-up requests, then lets N client threads (one tritonclient
client each, HTTP by default, gRPC with --grpc) send the same single-row request back to back
until REQUESTS have been answered (or SECONDS have passed), stops the server and prints one
markdown table row: requests/s, p50 and p99 latency in ms. The configurations:

  nxrt                     nxrt sessions, no batching
  onnxruntime              the same server code on onnxruntime sessions (--session-class)
  nxrt batch 8             nxrt with dynamic batching (--max-batch 8)
  onnxruntime batch 8      onnxruntime with dynamic batching
  nxrt ray 1 replica       on Ray Serve (--ray; gRPC through Ray's proxy): skipped with --no-ray
  nxrt ray 2 replicas

Batching needs a dynamic first dim: a model whose inputs and outputs all have a fixed first dim
of 1 (ResNet-50 as exported) is served from a copy with that dim made symbolic, which is said
in the output. Clients and servers share the machine: on a small or busy one, numbers compare
configurations with each other, not with other machines."""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np
import onnx

ONNX_TO_TRITON = {"tensor(float)": "FP32", "tensor(double)": "FP64", "tensor(int64)": "INT64",
                  "tensor(int32)": "INT32", "tensor(bool)": "BOOL", "tensor(uint8)": "UINT8",
                  "tensor(int8)": "INT8", "tensor(float16)": "FP16"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_symbolic_batch(path: str, work: str) -> str:
    """`path`, or a copy whose inputs' and outputs' fixed first dim 1 is made 'batch' (so the
    server can batch it); the copy only when every input and output starts with a fixed 1."""
    model = onnx.load(path)
    values = list(model.graph.input) + list(model.graph.output)
    inits = {i.name for i in model.graph.initializer}
    values = [v for v in values if v.name not in inits]
    dims = [v.type.tensor_type.shape.dim for v in values]
    if not all(len(d) and d[0].HasField("dim_value") and d[0].dim_value == 1 for d in dims):
        return path
    for d in dims:
        d[0].dim_param = "batch"
    del model.graph.value_info[:]  # inferred shapes would still say 1
    copy = os.path.join(work, os.path.basename(path))
    onnx.save(model, copy)
    print(f"note: serving a copy of {path} with a symbolic first dim, so that it can batch",
          file=sys.stderr)
    return copy


def request_arrays(path: str) -> dict:
    import onnxruntime  # only for the input metadata
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    arrays = {}
    for i in session.get_inputs():
        if i.type not in ONNX_TO_TRITON:
            raise SystemExit(f"input {i.name} has type {i.type}, not one this benchmark sends")
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        if i.type == "tensor(float)":
            arrays[i.name] = rng.standard_normal(shape).astype(np.float32)
        else:
            np_type = {"INT64": np.int64, "INT32": np.int32, "BOOL": np.bool_,
                       "UINT8": np.uint8, "INT8": np.int8, "FP64": np.float64,
                       "FP16": np.float16}[ONNX_TO_TRITON[i.type]]
            arrays[i.name] = np.ones(shape, dtype=np_type)
    return arrays


class Server:
    def __init__(self, python: str, model: str, extra: list, grpc: bool, log_path: str):
        self.http_port = free_port()
        self.grpc_port = free_port() if grpc else -1
        command = [python, "-m", "nxrt.serve", model, "--name", "bench", "--port",
                   str(self.http_port), "--grpc-port", str(self.grpc_port)] + extra
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_ready(180)

    def _wait_ready(self, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {open(self.log_path).read()[-2000:]}")
            try:
                url = f"http://127.0.0.1:{self.http_port}/v2/models/bench/ready"
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"server not ready in {timeout_s} s: {open(self.log_path).read()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def make_client(grpc: bool, server: Server, arrays: dict):
    """A function sending one inference request through a client of its own."""
    if grpc:
        import tritonclient.grpc as triton
        client = triton.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    else:
        import tritonclient.http as triton
        client = triton.InferenceServerClient(f"127.0.0.1:{server.http_port}",
                                              connection_timeout=120, network_timeout=120)
    inputs = []
    for name, a in arrays.items():
        datatype = {np.float32: "FP32", np.float64: "FP64", np.int64: "INT64",
                    np.int32: "INT32", np.bool_: "BOOL", np.uint8: "UINT8", np.int8: "INT8",
                    np.float16: "FP16"}[a.dtype.type]
        i = triton.InferInput(name, list(a.shape), datatype)
        i.set_data_from_numpy(a) if grpc else i.set_data_from_numpy(a, binary_data=True)
        inputs.append(i)
    return lambda: client.infer("bench", inputs)


def load(server: Server, arrays: dict, clients: int, requests: int, seconds: float,
         grpc: bool) -> dict:
    latencies, errors, lock = [], [], threading.Lock()
    budget = [requests]
    # Every client is made and warmed up (first runs allocate and tune) in its own thread:
    # tritonclient.http's connections belong to the thread that made them (gevent).
    ready = threading.Barrier(clients + 1)
    stop_at = []

    def take() -> bool:
        with lock:
            if stop_at:
                return time.monotonic() < stop_at[0]
            if budget[0] <= 0:
                return False
            budget[0] -= 1
            return True

    def client_loop():
        try:
            send = make_client(grpc, server, arrays)
            send()
        except Exception as e:
            with lock:
                errors.append(f"warm-up: {type(e).__name__}: {e}")
            ready.wait()
            return
        ready.wait()
        while take():
            t = time.perf_counter()
            try:
                send()
            except Exception as e:  # a failed request is reported, not timed
                with lock:
                    errors.append(f"{type(e).__name__}: {e}")
                continue
            with lock:
                latencies.append(time.perf_counter() - t)

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for t in threads:
        t.start()
    ready.wait()
    start = time.perf_counter()
    if seconds:
        stop_at.append(time.monotonic() + seconds)
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ms = np.array(latencies) * 1000 if latencies else np.array([np.nan])
    return {"done": len(latencies), "errors": errors, "rps": len(latencies) / wall,
            "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99))}


def configurations(args) -> list:
    threads = ["--threads", str(args.threads)] if args.threads else []
    configs = [("nxrt", ["--session-class", "nxrt"]),
               ("onnxruntime", ["--session-class", "onnxruntime"]),
               ("nxrt batch 8", ["--session-class", "nxrt", "--max-batch", "8"]),
               ("onnxruntime batch 8", ["--session-class", "onnxruntime", "--max-batch", "8"])]
    if not args.no_ray:
        configs += [("nxrt ray 1 replica", ["--ray", "--replicas", "1"]),
                    ("nxrt ray 2 replicas", ["--ray", "--replicas", "2"])]
    if args.only:
        configs = [c for c in configs if c[0] in args.only]
    return [(label, extra + threads) for label, extra in configs]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--requests", type=int, default=200, help="answered requests per server")
    p.add_argument("--seconds", type=float, help="instead of --requests: load time per server")
    p.add_argument("--grpc", action="store_true", help="gRPC clients instead of HTTP")
    p.add_argument("--threads", type=int, default=0, help="--threads of each server")
    p.add_argument("--no-ray", action="store_true", help="leave out the Ray Serve rows")
    p.add_argument("--python", default=sys.executable, help="the Python running the servers")
    p.add_argument("--only", action="append", metavar="LABEL", help="only this configuration")
    args = p.parse_args()
    if args.clients < 1 or args.requests < 1 or (args.seconds is not None and args.seconds <= 0):
        p.error("--clients and --requests must be at least 1, --seconds positive")
    if not os.path.isfile(args.model):
        p.error(f"no model file {args.model}")
    with tempfile.TemporaryDirectory() as work:
        model = with_symbolic_batch(args.model, work)
        arrays = request_arrays(model)
        bound = f"{args.seconds} s" if args.seconds else f"{args.requests} requests"
        print(f"{os.path.basename(args.model)}, {args.clients} clients, "
              f"{'gRPC' if args.grpc else 'HTTP'}, {bound} per server\n")
        print("| server | requests/s | p50 ms | p99 ms | answered | errors |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for label, extra in configurations(args):
            log_path = os.path.join(work, label.replace(" ", "_") + ".log")
            try:
                server = Server(args.python, model, extra, args.grpc, log_path)
            except RuntimeError as e:
                print(f"| {label} | did not start: {str(e)[-300:]!r} | | | | |", flush=True)
                continue
            try:
                r = load(server, arrays, args.clients, args.requests, args.seconds, args.grpc)
            finally:
                server.stop()
            print(f"| {label} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p99']:.1f} | "
                  f"{r['done']} | {len(r['errors'])} |", flush=True)
            if r["errors"]:
                print(f"  first error: {r['errors'][0][:300]}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
