"""Python threads share one session: outputs equal serial runs, and the GIL is released while a
model runs, so other Python threads go on meanwhile."""


import threading
import time

import numpy as np
from conftest import make_model
from onnx import TensorProto, helper, numpy_helper

import nxrt


def mlp_model() -> bytes:
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((256, 512)).astype(np.float32) * 0.05, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((512, 256)).astype(np.float32) * 0.05, "w2")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 256])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 256])
    return make_model([helper.make_node("MatMul", ["x", "w1"], ["h"]),
                       helper.make_node("Tanh", ["h"], ["t"]),
                       helper.make_node("MatMul", ["t", "w2"], ["y"])], [x], [y], [w1, w2])


def test_eight_threads_match_serial():
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = 1  # parallelism comes from the Python threads here
    s = nxrt.InferenceSession(mlp_model(), options)
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((64, 256)).astype(np.float32) for _ in range(8)]
    runs = 200
    serial = [s.run(None, {"x": x})[0] for x in inputs]
    results = [[] for _ in range(8)]

    def worker(k):
        for _ in range(runs):
            results[k].append(s.run(None, {"x": inputs[k]})[0])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(8):
        assert len(results[k]) == runs
        for out in results[k]:
            np.testing.assert_array_equal(out, serial[k])


def chain_model(width: int, depth: int) -> bytes:
    """depth square MatMuls in a row: one run long enough to watch another thread during it."""
    rng = np.random.default_rng(5)
    weights, nodes, previous = [], [], "x"
    for i in range(depth):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        weights.append(numpy_helper.from_array(w, f"w{i}"))
        out = "y" if i == depth - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [previous, f"w{i}"], [out]))
        previous = out
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [width, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [width, width])
    return make_model(nodes, [x], [y], weights)


def test_gil_is_released_while_a_model_runs():
    # A thread that held the GIL through a run would stop this thread's loop for the whole run.
    # Released, the loop goes on: on a second core, or on the same core in the scheduler's time
    # slices (milliseconds), so the check holds however many cores the machine lends us.
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = 1
    s = nxrt.InferenceSession(chain_model(768, 8), options)
    x = np.random.default_rng(6).standard_normal((768, 768)).astype(np.float32)
    s.run(None, {"x": x})
    start = time.perf_counter()
    s.run(None, {"x": x})
    run_time = time.perf_counter() - start

    done = threading.Event()

    def worker():
        for _ in range(3):
            s.run(None, {"x": x})
        done.set()

    t = threading.Thread(target=worker)
    longest_gap, last = 0.0, time.perf_counter()
    t.start()
    while not done.is_set():
        now = time.perf_counter()
        longest_gap, last = max(longest_gap, now - last), now
    t.join()
    print(f"one run: {run_time * 1e3:.1f} ms; this thread's longest stop meanwhile: "
          f"{longest_gap * 1e3:.1f} ms")
    assert longest_gap < 0.5 * run_time, (
        f"this thread stopped {longest_gap * 1e3:.1f} ms while a {run_time * 1e3:.1f} ms run "
        "went on: the run held the GIL")
