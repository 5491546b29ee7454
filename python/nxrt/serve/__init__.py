"""nxrt.serve: a model server speaking the KServe v2 / Triton open inference protocol over
HTTP/REST and gRPC, backed by nxrt.InferenceSession (or onnxruntime's, --session-class).

Run it as `python -m nxrt.serve model.onnx`; docs/serving.md describes the protocol coverage,
batching, metrics and errors. Importing this package loads no runtime and no server stack: the
session class is imported when a model is opened, uvicorn and grpcio when serving starts."""

from .server import ServeConfig, serve

__all__ = ["ServeConfig", "serve"]
