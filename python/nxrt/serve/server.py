"""Starts a server: loads the models, then serves them over HTTP (uvicorn, in this thread, which
also handles SIGINT/SIGTERM) and gRPC (grpcio's own threads) until told to stop."""

import os
import sys
from dataclasses import dataclass, field

from .metrics import ServeMetrics
from .model import ServedModel
from .registry import ModelRegistry
from .sessions import open_session


@dataclass
class ServeConfig:
    models: list  # [(name, path)]
    host: str = "127.0.0.1"
    port: int = 8000
    grpc_port: int = 8001  # -1: no gRPC
    session_class: str = "nxrt"
    threads: int = 0
    providers: list = field(default_factory=list)
    policy: str = None
    max_batch: int = 1
    batch_timeout_ms: float = 5.0
    workers: int = 4
    max_request_bytes: int = 64 << 20


def load_models(config: ServeConfig, metrics: ServeMetrics) -> ModelRegistry:
    registry = ModelRegistry()
    try:
        for name, path in config.models:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"no model file {path}")
            try:
                session = open_session(path, config.session_class, config.threads,
                                       config.providers, config.policy)
            except (RuntimeError, ValueError):
                raise
            except Exception as e:  # the runtimes' own load errors (invalid model, ...)
                raise RuntimeError(f"cannot load {path}: {type(e).__name__}: {e}") from None
            metrics.model_loaded(name, session)
            registry.add(ServedModel(name, session, config.max_batch,
                                     config.batch_timeout_ms / 1000.0, config.workers,
                                     metrics.run_observer(name)))
    except BaseException:
        registry.close()
        raise
    return registry


def serve(config: ServeConfig):
    import uvicorn  # here, so that loading the package for its codecs needs no server stack

    from .grpc_service import start_grpc_server
    from .http_app import make_app

    metrics = ServeMetrics()
    registry = load_models(config, metrics)
    grpc_server = None

    stopped = []

    def stop_all():
        if stopped:
            return
        stopped.append(True)
        if grpc_server is not None:
            grpc_server.stop(grace=2).wait()
        registry.close()
        print("nxrt.serve: stopped", file=sys.stderr, flush=True)

    try:
        if config.grpc_port >= 0:
            grpc_server = start_grpc_server(registry, metrics, config.host, config.grpc_port,
                                            config.max_request_bytes)
        app = make_app(registry, metrics, config.max_request_bytes, stop_all)
        for name in registry.names():
            model = registry.get(name)
            mode = "batching" if model.batching else "unbatched"
            print(f"nxrt.serve: model '{name}' ({config.session_class}, {mode})",
                  file=sys.stderr)
        grpc_text = f", gRPC on {config.host}:{grpc_server.nxrt_port}" if grpc_server else ""
        print(f"nxrt.serve: HTTP on {config.host}:{config.port}{grpc_text}", file=sys.stderr,
              flush=True)
        uvicorn.Server(uvicorn.Config(app, host=config.host, port=config.port,
                                      log_level="warning", access_log=False)).run()
    finally:
        stop_all()  # again, for a failed start: stopping twice is harmless
