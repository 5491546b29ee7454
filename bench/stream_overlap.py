#!/usr/bin/env python3
"""Copy/compute overlap with streams (plugin ABI 13), measured on SimDevice.

Builds a model of P independent parts, y_i = Relu(x_i @ W), so a run copies P inputs to the
device and P outputs back around P MatMul -> Relu chains. Each copy is made slow with SimDevice's
virtual NPU option copy_latency_us (a slow link). `nxrt run` times the model with SimDevice
synchronous (async=0: every copy and kernel done before the next starts) and asynchronous
(async=1: kernels, copies in and copies out on three streams, a worker thread each), and reads
the profile of the asynchronous runs for the time each stream was busy. Prints, per mode, the
median run, and for streams the busy time of each stream: their sum is what a synchronous run
would take, their maximum the best that overlapping can do.

  python3 bench/stream_overlap.py [--build-dir build] [--parts 4] [--latency-us 20000]
                                  [--rows 256] [--k 256] [--n 256] [--repeat 10]
"""

import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_model(parts, rows, k, n):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((k, n)) * 0.05).astype(np.float32), "w")
    nodes, inputs, outputs = [], [], []
    for p in range(parts):
        nodes.append(helper.make_node("MatMul", [f"x{p}", "w"], [f"m{p}"], name=f"matmul{p}"))
        nodes.append(helper.make_node("Relu", [f"m{p}"], [f"y{p}"], name=f"relu{p}"))
        inputs.append(helper.make_tensor_value_info(f"x{p}", TensorProto.FLOAT, [rows, k]))
        outputs.append(helper.make_tensor_value_info(f"y{p}", TensorProto.FLOAT, [rows, n]))
    graph = helper.make_graph(nodes, "parts", inputs, outputs, [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run(nxrt, lib, model, latency, mode, repeat, profile):
    cmd = [str(nxrt), "run", str(model), "--ep-library", str(lib), "--virtual",
           f"npu:copy_latency_us={latency}", "--ep", f"SimDevice:async={mode}", "--fallback",
           "forbid", "--threads", "1", "--repeat", str(repeat), "--profile", str(profile)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    m = re.search(r"median_ms=([\d.]+)", out)
    return float(m.group(1))


def busy_ms(profile, category):
    """ms each track (stream or thread) spent in events of `category`, over the last run."""
    events = [e for e in json.loads(pathlib.Path(profile).read_text())["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") == category]
    last = max(int(e["args"].get("run", "0")) for e in events)
    names = {e["tid"]: e["args"]["name"]
             for e in json.loads(pathlib.Path(profile).read_text())["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    busy = collections.Counter()
    for e in events:
        if int(e["args"].get("run", "0")) == last:
            busy[names.get(e["tid"], str(e["tid"]))] += e["dur"] / 1000.0
    return busy


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--latency-us", type=int, default=20000)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    build = pathlib.Path(args.build_dir).resolve()
    nxrt, lib = build / "bin" / "nxrt", build / "lib" / "libnxrt_ep_sim_device.so"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        model = tmp / "parts.onnx"
        onnx.save(build_model(args.parts, args.rows, args.k, args.n), model)
        sync_ms = run(nxrt, lib, model, args.latency_us, 0, args.repeat, tmp / "sync.json")
        sync_busy = busy_ms(tmp / "sync.json", "node") + busy_ms(tmp / "sync.json", "copy")
        async_ms = run(nxrt, lib, model, args.latency_us, 1, args.repeat, tmp / "async.json")
        streams = busy_ms(tmp / "async.json", "stream")
    print(f"model: {args.parts} parts of MatMul [{args.rows}x{args.k}] x [{args.k}x{args.n}] -> "
          f"Relu; {2 * args.parts} copies of {args.latency_us / 1000:.1f} ms latency each")
    print(f"{'mode':<14} {'median run ms':>14}")
    print(f"{'synchronous':<14} {sync_ms:>14.1f}   (busy: {sum(sync_busy.values()):.1f} ms "
          "in kernels and copies)")
    print(f"{'streams':<14} {async_ms:>14.1f}")
    for name, ms in sorted(streams.items()):
        print(f"  {name:<44} busy {ms:8.1f} ms")
    total, longest = sum(streams.values()), max(streams.values()) if streams else 0.0
    print(f"sum of the streams' busy time {total:.1f} ms, the busiest {longest:.1f} ms; "
          f"streams / synchronous = {async_ms / sync_ms:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
