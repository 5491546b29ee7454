"""python -m nxrt.serve MODEL.onnx [NAME=MODEL.onnx ...] [options]: serves ONNX models over the
KServe v2 / Triton inference protocol (HTTP/REST and gRPC). docs/serving.md has the details."""

import argparse
import os
import sys

from .server import ServeConfig, serve
from .sessions import SESSION_CLASSES


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m nxrt.serve",
        description="Serves ONNX models over the KServe v2 / Triton inference protocol "
                    "(HTTP/REST and gRPC); docs/serving.md has the details.")
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help="an .onnx file, served under its file name without .onnx, or NAME=FILE")
    p.add_argument("--name", help="the name to serve the model under (one MODEL only)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default %(default)s)")
    p.add_argument("--grpc-port", type=int, default=8001,
                   help="gRPC port, -1 for no gRPC (default %(default)s)")
    p.add_argument("--session-class", choices=SESSION_CLASSES, default="nxrt",
                   help="the runtime behind the models (default %(default)s)")
    p.add_argument("--threads", type=int, default=0,
                   help="intra-op threads per session, 0: the runtime's default")
    p.add_argument("--ep", action="append", default=[], metavar="PROVIDER",
                   help="an execution provider, in order of preference (repeatable)")
    p.add_argument("--policy", help="a device selection policy instead of --ep "
                   "(PREFER_CPU, PREFER_GPU, PREFER_NPU, MAX_PERFORMANCE, MIN_OVERALL_POWER)")
    p.add_argument("--max-batch", type=int, default=1,
                   help="rows per batched run; 1 (default) turns dynamic batching off")
    p.add_argument("--batch-timeout-ms", type=float, default=5.0,
                   help="how long a request may wait for others to batch with "
                   "(default %(default)s)")
    p.add_argument("--workers", type=int, default=4,
                   help="concurrent runs per unbatched model (default %(default)s)")
    p.add_argument("--max-request-mb", type=float, default=64,
                   help="largest request body accepted (default %(default)s)")
    ray = p.add_argument_group("Ray Serve (docs/serving.md)")
    ray.add_argument("--ray", action="store_true",
                     help="serve as a Ray Serve application (HTTP and gRPC through Ray Serve's "
                     "proxies on --port and --grpc-port)")
    ray.add_argument("--replicas", type=int, default=1,
                     help="copies of the server under --ray, one session each (default "
                     "%(default)s)")
    ray.add_argument("--address", help="an existing Ray cluster under --ray: its GCS "
                     "HOST:PORT, ray://HOST:PORT or auto (default: start a local Ray instance)")
    return p


def _named_models(args, parser) -> list:
    models = []
    for m in args.models:
        name, sep, path = m.partition("=")
        if not sep:
            name, path = os.path.splitext(os.path.basename(m))[0], m
        models.append((name, path))
    if args.name:
        if len(models) != 1:
            parser.error("--name needs exactly one MODEL (use NAME=FILE for several)")
        models = [(args.name, models[0][1])]
    return models


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.max_batch < 1 or args.batch_timeout_ms < 0 or args.workers < 1:
        parser.error("--max-batch and --workers must be at least 1, --batch-timeout-ms >= 0")
    if args.ep and args.policy:
        parser.error("--ep and --policy exclude each other")
    if not args.ray and (args.replicas != 1 or args.address):
        parser.error("--replicas and --address need --ray")
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    config = ServeConfig(models=_named_models(args, parser), host=args.host, port=args.port,
                         grpc_port=args.grpc_port, session_class=args.session_class,
                         threads=args.threads, providers=args.ep, policy=args.policy,
                         max_batch=args.max_batch, batch_timeout_ms=args.batch_timeout_ms,
                         workers=args.workers,
                         max_request_bytes=int(args.max_request_mb * (1 << 20)))
    try:
        if args.ray:
            from .ray_app import serve_on_ray  # Ray only when asked for
            serve_on_ray(config, args.replicas, args.address)
        else:
            serve(config)
    except (OSError, RuntimeError, ValueError) as e:
        print(f"nxrt.serve: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
