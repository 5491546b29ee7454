"""The protocol's tensor datatypes (FP32, INT64, BYTES, ...) against numpy dtypes and the ONNX
type strings that InferenceSession.get_inputs() reports ('tensor(float)')."""

import numpy as np

from .errors import BadRequest

# ONNX element type (as NodeArg.type spells it inside 'tensor(...)') -> protocol datatype.
_ONNX_TO_PROTOCOL = {
    "bool": "BOOL", "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64",
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "float16": "FP16",
    "float": "FP32", "double": "FP64", "string": "BYTES", "bfloat16": "BF16",
}

# Fixed-size datatypes; BYTES is variable-size and handled apart. BF16 has no numpy dtype, so
# models with BF16 inputs are served with metadata but their inference requests are refused.
_NUMPY = {
    "BOOL": np.dtype(np.bool_), "UINT8": np.dtype(np.uint8), "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32), "UINT64": np.dtype(np.uint64), "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16), "INT32": np.dtype(np.int32), "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16), "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64),
}
# The wire is little-endian whatever the host is.
_WIRE = {k: v.newbyteorder("<") for k, v in _NUMPY.items()}

KNOWN = frozenset(_NUMPY) | {"BYTES", "BF16"}


def from_onnx_type(type_string: str) -> str:
    """'tensor(float)' -> 'FP32'; None where the protocol has no such datatype (sequences, maps,
    optionals): such models still load, and requests naming those inputs get a clear 400."""
    if not type_string.startswith("tensor(") or not type_string.endswith(")"):
        return None
    return _ONNX_TO_PROTOCOL.get(type_string[len("tensor("):-1])


def numpy_dtype(datatype: str) -> np.dtype:
    dtype = _NUMPY.get(datatype)
    if dtype is None:
        raise BadRequest(f"datatype {datatype} is not supported for tensor data here")
    return dtype


def wire_dtype(datatype: str) -> np.dtype:
    return _WIRE[datatype] if datatype in _WIRE else numpy_dtype(datatype)


def from_numpy(dtype: np.dtype) -> str:
    if dtype.kind in "OUS":
        return "BYTES"
    for name, d in _NUMPY.items():
        if d == dtype:
            return name
    raise TypeError(f"no protocol datatype for numpy dtype {dtype}")
