"""/metrics under Ray Serve: every replica's samples, whichever replica answers the scrape.

Ray's proxy sends a scrape to one replica like any request, so a replica that showed only its own
counters would make the numbers jump between scrapes. Instead each replica pushes its samples
(when they changed, at most every PUSH_INTERVAL_S, and at once before it answers a scrape) to one
small actor of the application, the hub, and answers /metrics with what the hub holds for all
replicas, each sample labelled with the replica that counted it (sum by the other labels for the
application's totals). A replica that stops pushing for STALE_AFTER_S is dropped from the hub."""

import threading
import time

import prometheus_client as prom
from prometheus_client.core import Metric

from .metrics import ServeMetrics

HUB_NAME = "nxrt_serve_metrics_hub"
HUB_NAMESPACE = "nxrt_serve"
PUSH_INTERVAL_S = 1.0
STALE_AFTER_S = 30.0


class _Hub:
    """The latest samples of each replica (a Ray actor; see create_hub)."""

    def __init__(self):
        self._by_replica = {}  # replica id -> (monotonic time, [Metric])

    def put(self, replica: str, families: list):
        self._by_replica[replica] = (time.monotonic(), families)

    def drop(self, replica: str):
        self._by_replica.pop(replica, None)

    def all(self) -> dict:
        now = time.monotonic()
        self._by_replica = {r: v for r, v in self._by_replica.items()
                            if now - v[0] < STALE_AFTER_S}
        return {r: families for r, (_, families) in self._by_replica.items()}


def create_hub():
    """The hub, owned by the caller (the `--ray` driver): it goes when the driver goes. It takes
    no CPU from the replicas."""
    import ray
    return ray.remote(num_cpus=0)(_Hub).options(
        name=HUB_NAME, namespace=HUB_NAMESPACE, get_if_exists=True).remote()


def _find_hub():
    import ray
    try:
        return ray.get_actor(HUB_NAME, namespace=HUB_NAMESPACE)
    except ValueError:  # deployed without our driver: each replica shows its own samples
        return None


class _Labelled:
    """A collector that yields the replicas' families with a `replica` label on every sample."""

    def __init__(self, by_replica: dict):
        self._by_replica = by_replica

    def collect(self):
        merged = {}
        for replica, families in sorted(self._by_replica.items()):
            for family in families:
                out = merged.get(family.name)
                if out is None:
                    out = merged[family.name] = Metric(family.name, family.documentation,
                                                       family.type, family.unit)
                for s in family.samples:
                    out.samples.append(s._replace(labels=dict(s.labels, replica=replica)))
        return list(merged.values())


class ReplicaMetrics(ServeMetrics):
    """A replica's metrics; exposition() shows every replica's."""

    def __init__(self, replica: str):
        super().__init__()
        self._replica = replica
        self._hub = _find_hub()
        self._pushed = -1
        self._stop = threading.Event()
        if self._hub is not None:
            threading.Thread(target=self._push_loop, name="nxrt-serve-metrics-push",
                             daemon=True).start()

    def _families(self) -> list:
        return list(self.registry.collect())

    def _push(self, wait: bool):
        changes = self.changes
        ref = self._hub.put.remote(self._replica, self._families())
        self._pushed = changes
        if wait:
            import ray
            ray.get(ref, timeout=10)

    def _push_loop(self):
        last_push = time.monotonic()
        while not self._stop.wait(PUSH_INTERVAL_S):
            try:
                # Pushed when something moved, and now and then regardless, so that the hub
                # does not drop an idle replica as stale.
                if self.changes != self._pushed or \
                        time.monotonic() - last_push > STALE_AFTER_S / 3:
                    self._push(wait=False)
                    last_push = time.monotonic()
            except Exception:  # the hub gone (the application shutting down): stop pushing
                return

    def exposition(self) -> tuple:
        if self._hub is None:
            return super().exposition()
        import ray
        try:
            self._push(wait=True)
            by_replica = ray.get(self._hub.all.remote(), timeout=10)
        except Exception:  # no hub to ask: this replica's own samples are still true
            by_replica = {self._replica: self._families()}
        registry = prom.CollectorRegistry(auto_describe=False)
        registry.register(_Labelled(by_replica))
        return prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST

    def close(self):
        self._stop.set()
        if self._hub is not None:
            try:
                self._hub.drop.remote(self._replica)
            except Exception:
                pass
