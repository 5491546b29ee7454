"""Prometheus metrics of one server, in a registry of its own (two servers in one process, as in
tests, do not mix their counts). Model labels are only ever the names of served models: a
request for an unknown name is counted under model="" so clients cannot grow the label set."""

import prometheus_client as prom

from .placement import placement_of

_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class ServeMetrics:
    def __init__(self):
        self.registry = prom.CollectorRegistry()
        self.requests = prom.Counter(
            "nxrt_serve_requests", "Inference requests by model, protocol and outcome "
            "(success, client_error, not_found, server_error).",
            ["model", "protocol", "outcome"], registry=self.registry)
        self.latency = prom.Histogram(
            "nxrt_serve_request_duration_seconds", "Time from a decoded inference request to "
            "its encoded response, successful requests only.", ["model", "protocol"],
            registry=self.registry)
        self.batch_rows = prom.Histogram(
            "nxrt_serve_batch_rows", "Rows (first-axis length) in each session run.", ["model"],
            buckets=_BATCH_BUCKETS, registry=self.registry)
        self.batch_requests = prom.Histogram(
            "nxrt_serve_batch_requests", "Requests merged into each session run.", ["model"],
            buckets=_BATCH_BUCKETS, registry=self.registry)
        self.placement = prom.Gauge(
            "nxrt_serve_model_nodes", "Nodes of each served model by the EP and the hardware "
            "device that run them (nxrt sessions; subgraph bodies included).",
            ["model", "ep", "device"], registry=self.registry)
        self.fallbacks = prom.Gauge(
            "nxrt_serve_model_fallback_nodes", "Nodes of each served model that run on another "
            "EP than the one they preferred (nxrt sessions).", ["model"], registry=self.registry)
        # Bumped by every change, so that a replica on Ray pushes its samples only when they
        # moved (ray_metrics.py).
        self.changes = 0

    def model_loaded(self, model: str, session):
        placement = placement_of(session)
        if placement is None:
            return
        nodes, fallbacks = placement
        for (ep, device), count in nodes.items():
            self.placement.labels(model, ep, device).set(count)
        self.fallbacks.labels(model).set(fallbacks)
        self.changes += 1

    def request_done(self, model: str, protocol: str, outcome: str, seconds: float = None):
        self.requests.labels(model, protocol, outcome).inc()
        if seconds is not None:
            self.latency.labels(model, protocol).observe(seconds)
        self.changes += 1

    def run_observer(self, model: str):
        rows, requests = self.batch_rows.labels(model), self.batch_requests.labels(model)

        def on_run(n_rows: int, n_requests: int):
            rows.observe(n_rows)
            requests.observe(n_requests)
            self.changes += 1
        return on_run

    def exposition(self) -> tuple:
        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST
