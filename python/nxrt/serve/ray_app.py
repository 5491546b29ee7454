"""The same server as a Ray Serve application (`python -m nxrt.serve ... --ray`): each replica
loads its own sessions and answers HTTP through the very FastAPI app of http_app.py, built inside
the replica (Ray Serve's ingress with a per-replica app), and gRPC through the very servicer of
grpc_service.py, whose methods the replica exposes under the protocol's method names for Ray
Serve's gRPC proxy. So the protocol exists once. /metrics shows every replica (ray_metrics.py)."""

import os
import signal
import sys
import threading

from .server import ServeConfig, load_models

REPLICA_HEADER = "nxrt-replica"  # which replica answered: for tests, load checks and debugging
APP_NAME = "nxrt"
# Ray Serve's gRPC proxy imports this to route the KServe v2 service's methods.
GRPC_SERVICER_FUNCTION = "nxrt.serve.grpc_service.add_GRPCInferenceServiceServicer_to_server"
GRPC_METHODS = ("ServerLive", "ServerReady", "ModelReady", "ServerMetadata", "ModelMetadata",
                "ModelInfer")


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


class _Aborted(Exception):
    """Raised where grpcio's context.abort would end the call; the status is on the context."""


class _RayContext:
    """What the servicer needs of a grpc.ServicerContext (abort), on Ray Serve's context: the
    code and details set there are what the proxy answers with when the method raises."""

    def __init__(self, grpc_context):
        self._context = grpc_context  # None: a call through a DeploymentHandle, not the proxy

    def abort(self, code, details: str):
        if self._context is not None:
            self._context.set_code(code)
            self._context.set_details(details)
        raise _Aborted(f"{code}: {details}")


def _grpc_method(name: str):
    def method(self, request, grpc_context=None):
        return getattr(self._grpc, name)(request, _RayContext(grpc_context))
    method.__name__ = name
    return method


def _deployment_class():
    # Imported here so that `python -m nxrt.serve` without --ray never needs Ray installed.
    from ray import serve

    from .grpc_service import InferenceServicer
    from .http_app import make_app
    from .ray_metrics import ReplicaMetrics

    class NxrtReplica:
        def __init__(self, config: ServeConfig):
            self._replica_id = serve.get_replica_context().replica_id.unique_id
            self._metrics = ReplicaMetrics(self._replica_id)
            self._registry = load_models(config, self._metrics)
            self._grpc = InferenceServicer(self._registry, self._metrics)
            self._max_request_bytes = config.max_request_bytes

        def __serve_build_asgi_app__(self):
            app = make_app(self._registry, self._metrics, self._max_request_bytes)
            return _tag_responses(app, self._replica_id)

        def __del__(self):  # Ray Serve calls it when the replica is shut down
            metrics = getattr(self, "_metrics", None)
            if metrics is not None:
                metrics.close()
            registry = getattr(self, "_registry", None)
            if registry is not None:
                registry.close()

    for name in GRPC_METHODS:
        setattr(NxrtReplica, name, _grpc_method(name))
    return serve.ingress()(NxrtReplica)


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


def _absolute_model_paths(config: ServeConfig, on_cluster: bool):
    """Ray's workers do not run in our directory: paths that hold anywhere. On a cluster a model
    may exist only on the worker nodes, so a path not found here is left as given."""
    models = []
    for name, path in config.models:
        if os.path.isfile(path):
            path = os.path.abspath(path)
        elif not on_cluster:  # a local typo is caught here, early
            raise FileNotFoundError(f"no model file {path}")
        models.append((name, path))
    config.models = models


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
    """Deploys on Ray (a local instance when address is None, else host:port of a running
    cluster's GCS, ray://host:port or 'auto') and blocks until SIGINT/SIGTERM, then removes the
    application (and, on our own local instance, Ray Serve and Ray) and disconnects."""
    _absolute_model_paths(config, on_cluster=address is not None)
    try:
        import ray
        from ray import serve
        from ray.serve.config import gRPCOptions
    except ImportError as e:
        raise RuntimeError(f"--ray needs Ray Serve: pip install 'ray[serve]' ({e})") from None

    from .ray_metrics import create_hub

    if address is None:  # our own instance: no dashboard, nothing the server does not need
        ray.init(include_dashboard=False, log_to_driver=False)
    else:  # a cluster someone runs: its settings are theirs
        try:
            ray.init(address=address, log_to_driver=False)
        except ConnectionError as e:
            hint = ""
            if "RAY_AUTH_MODE" not in os.environ:
                # Ray never turns token authentication on for an explicit address by itself.
                hint = (" (a cluster with token authentication needs RAY_AUTH_MODE=token here, "
                        "and its token in ~/.ray/auth_token, RAY_AUTH_TOKEN or "
                        "RAY_AUTH_TOKEN_PATH)")
            raise RuntimeError(f"{e}{hint}") from None
    # After ray.init, which installs a SIGTERM handler of its own that ends the process at once:
    # ours lets the application be removed from the cluster first.
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    deployed = False
    try:
        grpc_options = None
        if config.grpc_port >= 0:
            grpc_options = gRPCOptions(port=config.grpc_port,
                                       grpc_servicer_functions=[GRPC_SERVICER_FUNCTION])
        # On a cluster whose Serve already runs, its proxies keep their ports (Ray's rule).
        serve.start(http_options={"host": config.host, "port": config.port},
                    grpc_options=grpc_options)
        hub = create_hub()  # noqa: F841 (held: the hub lives as long as this driver)
        try:
            deployed = True
            serve.run(ray_application(config, replicas), name=APP_NAME, route_prefix="/")
        except Exception as e:  # Ray's own message names no cause: find the replica's
            raise RuntimeError(f"{e} {_replica_failure(serve)}".strip()) from None
        grpc_text = f", gRPC on {config.host}:{config.grpc_port}" if grpc_options else ""
        print(f"nxrt.serve: {replicas} Ray Serve replica(s) ({config.session_class}); "
              f"HTTP on {config.host}:{config.port}{grpc_text}", file=sys.stderr, flush=True)
        stop.wait()
    finally:
        try:
            if address is None:
                serve.shutdown()
            elif deployed:  # someone else's cluster: take away only what we added
                serve.delete(APP_NAME)
        finally:
            ray.shutdown()
            print("nxrt.serve: stopped", file=sys.stderr, flush=True)
