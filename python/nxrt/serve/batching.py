"""How a model's session runs requests: one at a time each on a worker thread (DirectRunner), or
gathered into batches along the first axis (DynamicBatcher).

The batcher holds the first waiting request for at most `timeout_s` while compatible requests
arrive, up to `max_rows` rows in all; requests are compatible when every input has the same
dtype and the same dims after the first. The batch runs once, concatenated on axis 0, and each
request gets its own rows of every output back. Requests are independent rows only if the model
says so (a dynamic first dim on every input and output), which the caller checks."""

import collections
import concurrent.futures
import threading
import time

import numpy as np

from .errors import Unavailable


def _rows_and_key(feeds: dict):
    """The request's rows, and what another request must match to share its batch (None: it
    runs on its own, as when its inputs disagree on the first dim)."""
    firsts = {a.shape[0] if a.ndim else None for a in feeds.values()}
    if len(firsts) != 1 or None in firsts:
        return 1, None
    return firsts.pop(), tuple(sorted((n, a.dtype.str, a.shape[1:]) for n, a in feeds.items()))


class _Job:
    __slots__ = ("feeds", "rows", "key", "future")

    def __init__(self, feeds: dict):
        self.feeds = feeds
        self.future = concurrent.futures.Future()
        self.rows, self.key = _rows_and_key(feeds)


class DirectRunner:
    """Runs each request as it comes, `workers` at a time."""

    def __init__(self, run, workers: int, on_run):
        self._run, self._on_run = run, on_run
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, "nxrt-serve-run")

    def submit(self, feeds: dict) -> concurrent.futures.Future:
        return self._pool.submit(self._one, feeds)

    def _one(self, feeds):
        out = self._run(feeds)
        self._on_run(_rows_and_key(feeds)[0], 1)
        return out

    def close(self):
        self._pool.shutdown(wait=True, cancel_futures=True)


class DynamicBatcher:
    def __init__(self, run, max_rows: int, timeout_s: float, on_run, name: str = ""):
        self._run, self._on_run = run, on_run
        self._max_rows, self._timeout_s = max_rows, timeout_s
        self._waiting = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=f"nxrt-serve-batch-{name}",
                                        daemon=True)
        self._thread.start()

    def submit(self, feeds: dict) -> concurrent.futures.Future:
        job = _Job(feeds)
        with self._cond:
            if self._closed:
                raise Unavailable("the server is shutting down")
            self._waiting.append(job)
            self._cond.notify()
        return job.future

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()

    def _loop(self):
        while True:
            group = self._gather()
            if group is None:
                return
            self._run_group(group)

    def _gather(self):
        """The next batch: the oldest waiting request and those that fit with it. Requests
        that do not fit stay in the queue, in order, for a later batch."""
        with self._cond:
            while not self._waiting and not self._closed:
                self._cond.wait()
            if self._closed:
                for job in self._waiting:
                    job.future.set_exception(Unavailable("the server is shutting down"))
                self._waiting.clear()
                return None
            head = self._waiting.popleft()
            group, rows = [head], head.rows
            if head.key is None:
                return group
            deadline = time.monotonic() + self._timeout_s
            while rows < self._max_rows:
                kept = collections.deque()
                while self._waiting:
                    job = self._waiting.popleft()
                    if job.key == head.key and rows + job.rows <= self._max_rows:
                        group.append(job)
                        rows += job.rows
                    else:
                        kept.append(job)
                self._waiting = kept
                remaining = deadline - time.monotonic()
                if rows >= self._max_rows or remaining <= 0 or self._closed:
                    break
                self._cond.wait(remaining)
            return group

    def _run_group(self, group):
        if len(group) > 1:
            try:
                merged = {n: np.concatenate([j.feeds[n] for j in group]) for n in group[0].feeds}
                out = self._run(merged)
                total = sum(j.rows for j in group)
                if all(a.ndim and a.shape[0] == total for a in out.values()):
                    self._on_run(total, len(group))
                    start = 0
                    for job in group:
                        job.future.set_result({n: a[start:start + job.rows]
                                               for n, a in out.items()})
                        start += job.rows
                    return
                # The outputs' first dim does not follow the inputs' rows, so they cannot be
                # split back: run the requests one by one (correct, just unbatched).
            except Exception:
                pass  # one request's bad data must not fail the others: retry them alone
        for job in group:
            try:
                out = self._run(job.feeds)
                self._on_run(job.rows, 1)
                job.future.set_result(out)
            except Exception as e:
                job.future.set_exception(e)
