"""nxrt.serve: a model server speaking the KServe v2 / Triton open inference protocol over
HTTP/REST and gRPC, backed by nxrt.InferenceSession (or onnxruntime's, --session-class).

Run it as `python -m nxrt.serve model.onnx`; docs/serving.md describes the protocol coverage,
batching, metrics and errors. These modules import no runtime (the session class is imported
when a model is opened) and no transport (uvicorn, FastAPI and the gRPC service are imported
when serving starts), so the protocol core can be used and tested on its own."""

from .server import ServeConfig, serve

__all__ = ["ServeConfig", "serve"]
