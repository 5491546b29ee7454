"""The same server as a Ray Serve application (`python -m nxrt.serve ... --ray`): each replica
loads its own sessions and answers HTTP through the very FastAPI app of http_app.py, built inside
the replica (Ray Serve's ingress with a per-replica app), so the protocol exists once. Ray Serve's
own HTTP proxy is the front door; gRPC is not offered under Ray (docs/serving.md says why)."""

import os
import signal
import sys
import threading

from .metrics import ServeMetrics
from .server import ServeConfig, load_models

REPLICA_HEADER = "nxrt-replica"  # which replica answered: for tests, load checks and debugging
APP_NAME = "nxrt"


def _tag_responses(asgi_app, replica_id: str):
    """The ASGI app, with every HTTP response carrying the replica's id in REPLICA_HEADER."""
    tag = (REPLICA_HEADER.encode(), replica_id.encode())

    async def tagged(scope, receive, send):
        async def send_tagged(message):
            if message["type"] == "http.response.start":
                message = dict(message, headers=list(message.get("headers", [])) + [tag])
            await send(message)
        await asgi_app(scope, receive, send_tagged)
    return tagged


def _deployment_class():
    # Imported here so that `python -m nxrt.serve` without --ray never needs Ray installed.
    from ray import serve

    from .http_app import make_app

    @serve.ingress()
    class NxrtReplica:
        def __init__(self, config: ServeConfig):
            self._metrics = ServeMetrics()
            self._registry = load_models(config, self._metrics)
            self._max_request_bytes = config.max_request_bytes

        def __serve_build_asgi_app__(self):
            replica_id = serve.get_replica_context().replica_id.unique_id
            app = make_app(self._registry, self._metrics, self._max_request_bytes)
            return _tag_responses(app, replica_id)

        def __del__(self):  # Ray Serve calls it when the replica is shut down
            registry = getattr(self, "_registry", None)
            if registry is not None:
                registry.close()

    return NxrtReplica


def ray_application(config: ServeConfig, replicas: int):
    """The bound Ray Serve application: `replicas` copies, each reserving the CPUs its session
    uses (--threads, at least 1) so that Ray spreads them over nodes with room."""
    from ray import serve

    cpus = max(config.threads, 1)
    deployment = serve.deployment(_deployment_class(), name="nxrt_models",
                                  num_replicas=replicas,
                                  ray_actor_options={"num_cpus": cpus},
                                  # Requests wait in the proxy rather than piling onto one
                                  # replica: batching inside a replica needs several at once.
                                  max_ongoing_requests=max(config.workers, config.max_batch) * 2)
    return deployment.bind(config)


def _check_models(config: ServeConfig):
    # Replicas load the models on their own nodes; a local typo is still caught here, early.
    for _name, path in config.models:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no model file {path}")


def _replica_failure(serve) -> str:
    """The last line of why replicas failed to start (a model that cannot be loaded, ...), as
    Ray Serve's status reports it, or ''."""
    try:
        deployments = serve.status().applications[APP_NAME].deployments
        message = " ".join(d.message for d in deployments.values() if d.message)
    except Exception:  # a status we cannot read adds nothing
        return ""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return f"({lines[-1]})" if lines else ""


def serve_on_ray(config: ServeConfig, replicas: int, address: str = None):
    """Deploys on Ray (a local instance when address is None, else ray://host:port or 'auto')
    and blocks until SIGINT/SIGTERM, then removes the application and disconnects."""
    if address is None:
        _check_models(config)
        # Ray's workers do not run in our directory: give them paths that hold anywhere.
        config.models = [(name, os.path.abspath(path)) for name, path in config.models]
    try:
        import ray
        from ray import serve
    except ImportError as e:
        raise RuntimeError(f"--ray needs Ray Serve: pip install 'ray[serve]' ({e})") from None

    if address is None:  # our own instance: no dashboard, nothing the server does not need
        ray.init(include_dashboard=False, log_to_driver=False)
    else:  # a cluster someone runs: its settings are theirs
        ray.init(address=address, log_to_driver=False)
    # After ray.init, which installs a SIGTERM handler of its own that ends the process at once:
    # ours lets the application be removed from the cluster first.
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        serve.start(http_options={"host": config.host, "port": config.port})
        try:
            serve.run(ray_application(config, replicas), name=APP_NAME, route_prefix="/")
        except Exception as e:  # Ray's own message names no cause: find the replica's
            raise RuntimeError(f"{e} {_replica_failure(serve)}".strip()) from None
        print(f"nxrt.serve: {replicas} Ray Serve replica(s) ({config.session_class}); "
              f"HTTP on {config.host}:{config.port}, no gRPC under Ray", file=sys.stderr,
              flush=True)
        stop.wait()
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
            print("nxrt.serve: stopped", file=sys.stderr, flush=True)
