"""Per-call cost of InferenceSession.run from Python, nxrt against onnxruntime, on a model whose
work is nothing (Add of two 1-element tensors): what a Python caller pays per call.

    python3 bench/python_call_overhead.py [--calls N] [--rounds R]

Prints the median microseconds per call of each, interleaved over rounds, and their ratio.
"""

import argparse
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def add_model() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "add", [x, y], [z])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def per_call_us(session, feed, calls: int) -> float:
    run = session.run
    start = time.perf_counter()
    for _ in range(calls):
        run(None, feed)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import onnxruntime

    import nxrt

    model = add_model()
    feed = {"x": np.ones(1, np.float32), "y": np.ones(1, np.float32)}
    sessions = {}
    for name, module in (("nxrt", nxrt), ("onnxruntime", onnxruntime)):
        options = module.SessionOptions()
        options.intra_op_num_threads = 1
        sessions[name] = module.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        per_call_us(sessions[name], feed, 1000)  # warm up
    times = {name: [] for name in sessions}
    for _ in range(args.rounds):
        for name, session in sessions.items():
            times[name].append(per_call_us(session, feed, args.calls))
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"session.run on a 1-element Add, {args.calls} calls x {args.rounds} rounds "
          f"(nxrt {nxrt.__version__}, onnxruntime {onnxruntime.__version__}):")
    for name, m in medians.items():
        print(f"  {name:12s} {m:7.2f} us per call")
    print(f"  ratio nxrt / onnxruntime: {medians['nxrt'] / medians['onnxruntime']:.2f}")


if __name__ == "__main__":
    main()
