"""Tensor data on the wire <-> numpy arrays, for both transports: the JSON form (a flat or nested
list), the raw form (little-endian bytes in row-major order; BYTES as 4-byte little-endian
lengths each followed by the element's bytes) and back.

Every declared shape is checked against the data actually sent before any array is made, so a
request that declares a huge shape with little data costs nothing but an error."""

import math
import struct

import numpy as np

from . import datatypes
from .errors import BadRequest

MAX_RANK = 32  # ONNX tensors in practice stay far below; a deeper shape is a malformed request
MAX_DIM = 2**63 - 1  # ONNX dims are int64


def checked_shape(shape, where: str) -> tuple:
    if not isinstance(shape, (list, tuple)):
        raise BadRequest(f"{where}: 'shape' must be a list of integers")
    if len(shape) > MAX_RANK:
        raise BadRequest(f"{where}: shape has {len(shape)} dimensions (at most {MAX_RANK})")
    for d in shape:
        # bool is an int in Python; a shape of [true] is still a malformed request.
        if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d <= MAX_DIM:
            raise BadRequest(f"{where}: shape {list(shape)[:MAX_RANK]} must hold non-negative "
                             f"64-bit integers")
    return tuple(shape)


def reshaped(array: np.ndarray, shape, where: str) -> np.ndarray:
    try:
        return array.reshape(shape)
    except ValueError as e:  # an empty tensor with dims numpy cannot index, say
        raise BadRequest(f"{where}: shape {list(shape)} cannot be made: {e}") from None


def element_count(shape) -> int:
    return math.prod(shape)  # exact in Python ints, however large the declared dims


def from_raw(datatype: str, shape, raw, where: str) -> np.ndarray:
    count = element_count(shape)
    if datatype == "BYTES":
        return reshaped(_bytes_from_raw(raw, count, where), shape, where)
    dtype = datatypes.wire_dtype(datatype)
    expected = count * dtype.itemsize
    if len(raw) != expected:
        raise BadRequest(f"{where}: shape {list(shape)} of {datatype} needs {expected} bytes of "
                         f"data, got {len(raw)}")
    array = reshaped(np.frombuffer(raw, dtype=dtype), shape, where)
    return array.astype(dtype.newbyteorder("="), copy=False)


def _bytes_from_raw(raw, count: int, where: str) -> np.ndarray:
    raw = memoryview(raw)
    if count > len(raw) // 4:  # each element carries at least its 4-byte length
        raise BadRequest(f"{where}: {count} BYTES elements cannot fit in {len(raw)} bytes")
    out = np.empty(count, dtype=object)
    pos = 0
    for i in range(count):
        if pos + 4 > len(raw):
            raise BadRequest(f"{where}: BYTES data ends inside element {i}'s length")
        (n,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        if pos + n > len(raw):
            raise BadRequest(f"{where}: BYTES element {i} declares {n} bytes, "
                             f"only {len(raw) - pos} remain")
        out[i] = bytes(raw[pos:pos + n])
        pos += n
    if pos != len(raw):
        raise BadRequest(f"{where}: {len(raw) - pos} bytes left over after {count} BYTES elements")
    return out


def _flatten(data, where: str) -> list:
    """Row-major flattening of nested lists, without recursion (nesting depth is the client's)."""
    if not isinstance(data, list):
        return [data]
    flat, stack = [], [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                if len(stack) > MAX_RANK:
                    raise BadRequest(f"{where}: 'data' is nested deeper than {MAX_RANK} levels")
                stack.append(iter(item))
                break
            flat.append(item)
        else:
            stack.pop()
    return flat


# numpy kinds a JSON list may come out as, for each kind of datatype: floats accept integers
# too, integers only integers, BOOL only true/false. Strings are never numbers here.
_ACCEPTED_KINDS = {"b": "b", "i": "iu", "u": "iu", "f": "iuf"}


def from_json(datatype: str, shape, data, where: str) -> np.ndarray:
    flat = _flatten(data, where)
    count = element_count(shape)
    if len(flat) != count:
        raise BadRequest(f"{where}: shape {list(shape)} needs {count} elements, "
                         f"'data' has {len(flat)}")
    if datatype == "BYTES":
        out = np.empty(count, dtype=object)
        for i, item in enumerate(flat):
            if not isinstance(item, str):
                raise BadRequest(f"{where}: BYTES data must be strings, element {i} is "
                                 f"{type(item).__name__}")
            out[i] = item.encode("utf-8")
        return reshaped(out, shape, where)
    dtype = datatypes.numpy_dtype(datatype)
    try:
        probe = np.array(flat)
        if count and probe.dtype.kind not in _ACCEPTED_KINDS[dtype.kind]:
            raise BadRequest(f"{where}: 'data' does not hold {datatype} values")
        return reshaped(np.array(flat, dtype=dtype), shape, where)
    except (ValueError, TypeError, OverflowError) as e:
        raise BadRequest(f"{where}: 'data' does not hold {datatype} values ({e})") from None


def to_raw(array: np.ndarray, datatype: str) -> bytes:
    if datatype == "BYTES":
        parts = []
        for item in array.ravel():
            b = item.encode("utf-8") if isinstance(item, str) else bytes(item)
            parts.append(struct.pack("<I", len(b)))
            parts.append(b)
        return b"".join(parts)
    return np.ascontiguousarray(array, dtype=datatypes.wire_dtype(datatype)).tobytes()


def to_json(array: np.ndarray, datatype: str) -> list:
    if datatype == "BYTES":
        out = []
        for item in array.ravel():
            if isinstance(item, str):
                out.append(item)
                continue
            try:
                out.append(bytes(item).decode("utf-8"))
            except UnicodeDecodeError:
                raise BadRequest("a BYTES output is not UTF-8 text: request it with "
                                 "binary_data") from None
        return out
    return array.ravel().tolist()
