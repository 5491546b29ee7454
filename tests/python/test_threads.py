"""Python threads share one session: outputs equal serial runs, and the GIL is released while a
model runs, so threads finish sooner than one thread doing the same runs."""

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


def test_eight_threads_match_serial_and_overlap():
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = 1  # parallelism comes from the Python threads here
    s = nxrt.InferenceSession(mlp_model(), options)
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((64, 256)).astype(np.float32) for _ in range(8)]
    runs = 200
    serial = [s.run(None, {"x": x})[0] for x in inputs]

    start = time.perf_counter()
    for i in range(8 * runs // 4):  # a quarter of the work on one thread, for the speed check
        s.run(None, {"x": inputs[i % 8]})
    one_thread_quarter = time.perf_counter() - start

    results = [[] for _ in range(8)]

    def worker(k):
        for _ in range(runs):
            results[k].append(s.run(None, {"x": inputs[k]})[0])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    parallel = time.perf_counter() - start
    for k in range(8):
        assert len(results[k]) == runs
        for out in results[k]:
            np.testing.assert_array_equal(out, serial[k])
    # The same work on one thread would take 4 x one_thread_quarter.
    one_thread = 4 * one_thread_quarter
    print(f"8 threads x {runs} runs: {parallel:.2f} s; one thread, the same runs: {one_thread:.2f} s")
    assert parallel < 0.9 * one_thread
