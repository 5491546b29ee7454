"""The HTTP/REST body of an inference request and response: JSON, optionally followed by the
binary tensor data extension (the JSON's length in the Inference-Header-Content-Length header,
each binary input's size in its 'binary_data_size' parameter, binary outputs on request)."""

import json

from . import datatypes, tensors
from .errors import BadRequest
from .protocol import InferRequest, InferResponse, InputTensor, RequestedOutput

HEADER_LENGTH = "Inference-Header-Content-Length"


def _json_header_length(value: str, body_size: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise BadRequest(f"{HEADER_LENGTH} must be an integer, got {value[:40]!r}") from None
    if not 0 <= n <= body_size:
        raise BadRequest(f"{HEADER_LENGTH} is {n}, the body has {body_size} bytes")
    return n


def _parse_json(text: bytes):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:  # RecursionError: absurdly deep nesting
        raise BadRequest(f"the request is not valid JSON: {str(e)[:200]}") from None


def _dict(value, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be a JSON object")
    return value


def _flag(parameters: dict, key: str, where: str) -> bool:
    value = parameters.get(key, False)
    if not isinstance(value, bool):
        raise BadRequest(f"{where}: parameter '{key}' must be true or false")
    return value


def decode_request(body: bytes, header_length) -> InferRequest:
    if header_length is not None:
        n = _json_header_length(header_length, len(body))
        doc, binary = _parse_json(body[:n]), memoryview(body)[n:]
    else:
        doc, binary = _parse_json(body), memoryview(b"")
    doc = _dict(doc, "the request")
    request_id = doc.get("id", "")
    if not isinstance(request_id, str):
        raise BadRequest("'id' must be a string")
    parameters = _dict(doc.get("parameters"), "'parameters'")
    raw_inputs = doc.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise BadRequest("the request needs a non-empty 'inputs' list")
    inputs, offset = [], 0
    for i, raw in enumerate(raw_inputs):
        tensor, offset = _decode_input(_dict(raw, f"inputs[{i}]"), i, binary, offset)
        inputs.append(tensor)
    if offset != len(binary):
        raise BadRequest(f"{len(binary) - offset} bytes of binary data belong to no input")
    outputs = None  # absent or empty: every output of the model
    if doc.get("outputs"):
        if not isinstance(doc["outputs"], list):
            raise BadRequest("'outputs' must be a list")
        outputs = [_decode_output(_dict(o, f"outputs[{i}]"), i)
                   for i, o in enumerate(doc["outputs"])]
    return InferRequest(inputs, outputs, request_id,
                        _flag(parameters, "binary_data_output", "the request"))


def _decode_input(raw: dict, i: int, binary: memoryview, offset: int):
    name = raw.get("name")
    if not isinstance(name, str):
        raise BadRequest(f"inputs[{i}] needs a 'name' string")
    where = f"input '{name}'"
    datatype = raw.get("datatype")
    if datatype not in datatypes.KNOWN:
        raise BadRequest(f"{where}: unknown datatype {str(datatype)[:40]!r}")
    shape = tensors.checked_shape(raw.get("shape"), where)
    parameters = _dict(raw.get("parameters"), f"{where}: 'parameters'")
    size = parameters.get("binary_data_size")
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise BadRequest(f"{where}: 'binary_data_size' must be a non-negative integer")
        if offset + size > len(binary):
            raise BadRequest(f"{where}: binary data is truncated: {size} bytes declared, "
                             f"{len(binary) - offset} left in the body")
        if "data" in raw:
            raise BadRequest(f"{where}: has both 'data' and 'binary_data_size'")
        array = tensors.from_raw(datatype, shape, binary[offset:offset + size], where)
        return InputTensor(name, datatype, shape, array), offset + size
    if "data" not in raw:
        raise BadRequest(f"{where}: has neither 'data' nor a 'binary_data_size' parameter")
    return InputTensor(name, datatype, shape,
                       tensors.from_json(datatype, shape, raw["data"], where)), offset


def _decode_output(raw: dict, i: int) -> RequestedOutput:
    name = raw.get("name")
    if not isinstance(name, str):
        raise BadRequest(f"outputs[{i}] needs a 'name' string")
    parameters = _dict(raw.get("parameters"), f"output '{name}': 'parameters'")
    return RequestedOutput(name, _flag(parameters, "binary_data", f"output '{name}'"))


def encode_response(response: InferResponse) -> tuple:
    """(body, headers)."""
    doc = {"model_name": response.model_name, "model_version": response.model_version,
           "outputs": []}
    if response.id:
        doc["id"] = response.id
    blobs = []
    for out in response.outputs:
        entry = {"name": out.name, "datatype": out.datatype, "shape": list(out.shape)}
        if out.binary:
            blob = tensors.to_raw(out.array, out.datatype)
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = tensors.to_json(out.array, out.datatype)
        doc["outputs"].append(entry)
    header = json.dumps(doc).encode()
    if not blobs:
        return header, {"Content-Type": "application/json"}
    return b"".join([header] + blobs), {"Content-Type": "application/octet-stream",
                                        HEADER_LENGTH: str(len(header))}
