"""nxrt.serve's dynamic batcher in process, with a fake session run: which requests it merges,
which it keeps apart, and that one request's failure stays its own. (Loaded from python/nxrt/serve
without importing nxrt, so these run before nxrt's native extension is built.)"""

import threading

import numpy as np
import pytest
from serve_harness import load_serve_module

batching = load_serve_module("batching")


class FakeRun:
    """Records the feeds of each run; the first run waits for `release` so that requests pile
    up behind it; a negative value in 'x' fails the run."""

    def __init__(self):
        self.runs, self.started, self.release = [], threading.Event(), threading.Event()

    def __call__(self, feeds):
        if not self.runs:
            self.started.set()
            self.release.wait(10)
        self.runs.append({n: a.shape for n, a in feeds.items()})
        if (feeds["x"] < 0).any():
            raise ValueError("negative input")
        return {"y": feeds["x"] * 2}


def batcher_with(run, max_rows=8, timeout_s=0.05):
    seen = []
    b = batching.DynamicBatcher(run, max_rows, timeout_s, lambda r, n: seen.append((r, n)))
    return b, seen


def rows(n, width, value):
    return {"x": np.full((n, width), value, dtype=np.float32)}


def test_compatible_requests_merge_and_others_wait_their_turn():
    run = FakeRun()
    b, seen = batcher_with(run)
    try:
        first = b.submit(rows(1, 9, 0))  # alone (nothing else is 9 wide), holding the batcher
        same = [b.submit(rows(1, 3, k)) for k in (1, 2)]
        other = b.submit(rows(2, 5, 7))  # inner dim 5: not mergeable with width 3
        same.append(b.submit(rows(2, 3, 3)))
        run.release.set()
        np.testing.assert_array_equal(first.result(10)["y"], np.zeros((1, 9)))
        for f, k, n in zip(same, (1, 2, 3), (1, 1, 2)):
            np.testing.assert_array_equal(f.result(10)["y"], np.full((n, 3), 2 * k))
        np.testing.assert_array_equal(other.result(10)["y"], np.full((2, 5), 14))
    finally:
        b.close()
    assert run.runs == [{"x": (1, 9)}, {"x": (4, 3)}, {"x": (2, 5)}]
    assert seen == [(1, 1), (4, 3), (2, 1)]


def test_batches_stop_at_max_rows():
    run = FakeRun()
    b, seen = batcher_with(run, max_rows=4)
    try:
        first = b.submit(rows(1, 9, 0))
        futures = [b.submit(rows(1, 2, k)) for k in range(1, 10)]
        run.release.set()
        first.result(10)
        for k, f in enumerate(futures, 1):
            np.testing.assert_array_equal(f.result(10)["y"], np.full((1, 2), 2 * k))
    finally:
        b.close()
    assert [r for r, _ in seen] == [1, 4, 4, 1]


def test_one_bad_request_fails_alone():
    run = FakeRun()
    b, seen = batcher_with(run)
    try:
        first = b.submit(rows(1, 9, 0))
        good = [b.submit(rows(1, 3, k)) for k in (1, 2)]
        bad = b.submit(rows(1, 3, -1))
        run.release.set()
        first.result(10)
        for f, k in zip(good, (1, 2)):
            np.testing.assert_array_equal(f.result(10)["y"], np.full((1, 3), 2 * k))
        with pytest.raises(ValueError, match="negative"):
            bad.result(10)
    finally:
        b.close()
    # The merged run of three failed; each then ran alone.
    assert run.runs[1] == {"x": (3, 3)} and run.runs[2:] == [{"x": (1, 3)}] * 3


def test_outputs_that_do_not_follow_the_rows_are_not_split():
    def summed(feeds):  # a reduction over the batch: merged results could not be split
        return {"y": feeds["x"].sum(axis=0, keepdims=True)}

    b, seen = batcher_with(summed, timeout_s=0.2)
    try:
        futures = [b.submit(rows(2, 3, k)) for k in (1, 2, 3)]
        for f, k in zip(futures, (1, 2, 3)):
            np.testing.assert_array_equal(f.result(10)["y"], np.full((1, 3), 2 * k))
    finally:
        b.close()
    assert all(n == 1 for _, n in seen)


def test_closing_fails_what_still_waits():
    run = FakeRun()
    b, _ = batcher_with(run, timeout_s=0.01)
    first = b.submit(rows(1, 3, 0))
    assert run.started.wait(10)  # the batcher runs `first`; what comes next waits
    waiting = b.submit(rows(1, 4, 0))
    closer = threading.Thread(target=b.close)
    closer.start()
    run.release.set()
    closer.join(10)
    first.result(10)
    with pytest.raises(Exception, match="shutting down"):
        waiting.result(10)
    with pytest.raises(Exception, match="shutting down"):
        b.submit(rows(1, 3, 0))
