"""The gRPC side of the protocol: GRPCInferenceService on a grpcio server.

The message classes come from kserve_v2.proto at import time (grpc.protos_and_services, which
uses grpcio-tools' compiler in process) rather than from generated files in the repository: the
.proto stays the one source, and the classes always match the protobuf runtime installed, which
generated code pins to the protobuf version that produced it."""

import concurrent.futures
import pathlib
import sys
import time

import grpc
import numpy as np

from . import core, datatypes, tensors
from .errors import BadRequest, ServeError
from .protocol import InferRequest, InputTensor, RequestedOutput



def _load_proto():
    # grpc-tools finds the .proto on sys.path under the path that names its module
    # (nxrt/serve/kserve_v2.proto -> nxrt.serve.kserve_v2_pb2): the folder that holds the nxrt
    # package is on sys.path whenever nxrt was imported the usual way, but not always otherwise.
    root = str(pathlib.Path(__file__).resolve().parents[2])
    added = root not in sys.path
    if added:
        sys.path.append(root)
    try:
        return grpc.protos_and_services("nxrt/serve/kserve_v2.proto")
    finally:
        if added:
            sys.path.remove(root)


pb, services = _load_proto()

# What a gRPC server (ours below, or Ray Serve's gRPC proxy, which takes it by import path) calls
# to route the service's methods.
add_GRPCInferenceServiceServicer_to_server = services.add_GRPCInferenceServiceServicer_to_server

# Datatype -> the InferTensorContents field that carries it when raw contents are not used.
_CONTENTS_FIELD = {
    "BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents",
    "INT32": "int_contents", "INT64": "int64_contents", "UINT8": "uint_contents",
    "UINT16": "uint_contents", "UINT32": "uint_contents", "UINT64": "uint64_contents",
    "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
}


def _from_contents(t, shape, where: str) -> np.ndarray:
    field = _CONTENTS_FIELD.get(t.datatype)
    if field is None:
        raise BadRequest(f"{where}: {t.datatype} data must come in raw_input_contents")
    values = getattr(t.contents, field)
    count = tensors.element_count(shape)
    if len(values) != count:
        raise BadRequest(f"{where}: shape {list(shape)} needs {count} elements, "
                         f"contents.{field} has {len(values)}")
    if t.datatype == "BYTES":
        out = np.empty(count, dtype=object)
        out[:] = list(values)
        return tensors.reshaped(out, shape, where)
    try:
        array = np.array(list(values), dtype=datatypes.numpy_dtype(t.datatype))
    except OverflowError as e:
        raise BadRequest(f"{where}: a value does not fit {t.datatype} ({e})") from None
    return tensors.reshaped(array, shape, where)


def decode_request(request) -> InferRequest:
    if not request.inputs:
        raise BadRequest("the request has no inputs")
    raw = request.raw_input_contents
    if raw and len(raw) != len(request.inputs):
        raise BadRequest(f"raw_input_contents has {len(raw)} entries for "
                         f"{len(request.inputs)} inputs")
    inputs = []
    for i, t in enumerate(request.inputs):
        where = f"input '{t.name}'"
        if t.datatype not in datatypes.KNOWN:
            raise BadRequest(f"{where}: unknown datatype {t.datatype[:40]!r}")
        shape = tensors.checked_shape(list(t.shape), where)
        if raw:
            if t.HasField("contents"):
                raise BadRequest(f"{where}: has contents while raw_input_contents is used")
            array = tensors.from_raw(t.datatype, shape, raw[i], where)
        else:
            array = _from_contents(t, shape, where)
        inputs.append(InputTensor(t.name, t.datatype, shape, array))
    outputs = [RequestedOutput(o.name) for o in request.outputs] or None
    return InferRequest(inputs, outputs, request.id)


def encode_response(response):
    out = pb.ModelInferResponse(model_name=response.model_name,
                                model_version=response.model_version, id=response.id)
    for t in response.outputs:
        out.outputs.add(name=t.name, datatype=t.datatype, shape=list(t.shape))
        out.raw_output_contents.append(tensors.to_raw(t.array, t.datatype))
    return out


class InferenceServicer(services.GRPCInferenceServiceServicer):
    def __init__(self, registry, metrics):
        self._registry, self._metrics = registry, metrics

    def _model(self, name: str, version: str, context):
        try:
            model = self._registry.get(name)
            model.check_version(version)
            return model
        except ServeError as e:
            context.abort(e.grpc_code, str(e))

    def ServerLive(self, request, context):
        return pb.ServerLiveResponse(live=True)

    def ServerReady(self, request, context):
        return pb.ServerReadyResponse(ready=self._registry.all_ready())

    def ModelReady(self, request, context):
        return pb.ModelReadyResponse(ready=self._model(request.name, request.version,
                                                       context).ready)

    def ServerMetadata(self, request, context):
        return pb.ServerMetadataResponse(**core.server_metadata())

    def ModelMetadata(self, request, context):
        meta = self._model(request.name, request.version, context).metadata()
        out = pb.ModelMetadataResponse(name=meta["name"], versions=meta["versions"],
                                       platform=meta["platform"])
        for spec in meta["inputs"]:
            out.inputs.add(**spec)
        for spec in meta["outputs"]:
            out.outputs.add(**spec)
        return out

    def ModelInfer(self, request, context):
        label = request.model_name if self._registry.known(request.model_name) else ""
        start = time.perf_counter()
        try:
            model = self._registry.get(request.model_name)
            model.check_version(request.model_version)
            decoded = decode_request(request)
            feeds, requested = model.prepare(decoded)
            try:
                results = model.submit(feeds).result()
            except Exception as e:
                raise core.run_failed(e) from e
            response = encode_response(model.respond(decoded, requested, results))
        except ServeError as e:
            self._metrics.request_done(label, "grpc", e.outcome)
            context.abort(e.grpc_code, str(e))
        except Exception as e:  # a bug of ours: still a status, and counted
            self._metrics.request_done(label, "grpc", "server_error")
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")
        self._metrics.request_done(label, "grpc", "success", time.perf_counter() - start)
        return response


def start_grpc_server(registry, metrics, host: str, port: int, max_request_bytes: int,
                      workers: int = 16):
    """A started grpc.Server; its bound port is server.nxrt_port."""
    server = grpc.server(
        concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="nxrt-serve-grpc"),
        options=[("grpc.max_receive_message_length", max_request_bytes),
                 ("grpc.max_send_message_length", -1)])
    add_GRPCInferenceServiceServicer_to_server(InferenceServicer(registry, metrics), server)
    port = server.add_insecure_port(f"{host}:{port}")
    if port == 0:
        raise OSError(f"cannot listen for gRPC on {host}")
    server.start()
    server.nxrt_port = port
    return server
