"""Element types, type strings and the small value classes of the onnxruntime surface."""

from __future__ import annotations

import enum

import numpy as np

# NxElementType (ONNX TensorProto.DataType numbering) -> (onnxruntime's type name, numpy dtype).
# None: numpy has no such dtype; ml_dtypes supplies bfloat16 and the float8 types when installed.
_ELEMENT_TYPES = {
    1: ("float", np.float32),
    2: ("uint8", np.uint8),
    3: ("int8", np.int8),
    4: ("uint16", np.uint16),
    5: ("int16", np.int16),
    6: ("int32", np.int32),
    7: ("int64", np.int64),
    8: ("string", np.object_),
    9: ("bool", np.bool_),
    10: ("float16", np.float16),
    11: ("double", np.float64),
    12: ("uint32", np.uint32),
    13: ("uint64", np.uint64),
    14: ("complex64", np.complex64),
    15: ("complex128", np.complex128),
    16: ("bfloat16", None),
    17: ("float8e4m3fn", None),
    18: ("float8e4m3fnuz", None),
    19: ("float8e5m2", None),
    20: ("float8e5m2fnuz", None),
    21: ("uint4", None),
    22: ("int4", None),
    23: ("float4e2m1", None),
    24: ("float8e8m0", None),
    25: ("uint2", None),
    26: ("int2", None),
}
_ML_DTYPES = {16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
              20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 24: "float8_e8m0fnu"}

STRING = 8


def _ml_dtype(code: int):
    try:
        import ml_dtypes  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return None
    return np.dtype(getattr(ml_dtypes, _ML_DTYPES[code]))


def numpy_dtype(code: int) -> np.dtype:
    """The numpy dtype of an element type; raises NotImplementedError when numpy lacks it."""
    name, dtype = _ELEMENT_TYPES.get(code, (f"type {code}", None))
    if dtype is None and code in _ML_DTYPES:
        dtype = _ml_dtype(code)
    if dtype is None:
        raise NotImplementedError(
            f"nxrt: element type {name} has no numpy dtype here (install ml_dtypes for bfloat16, "
            "float8 and 4-bit types)")
    return np.dtype(dtype)


_BY_DTYPE = {np.dtype(d): c for c, (_, d) in _ELEMENT_TYPES.items() if d is not None and c != STRING}


def element_type_of(dtype: np.dtype) -> int:
    """The element type of a numpy dtype (ml_dtypes' types included); raises TypeError."""
    code = _BY_DTYPE.get(dtype)
    if code is not None:
        return code
    for c in _ML_DTYPES:
        ml = _ml_dtype(c)
        if ml is not None and ml == dtype:
            return c
    raise TypeError(f"nxrt: numpy arrays of dtype {dtype} cannot be model inputs")


def type_string(kind: int, element_type: int) -> str:
    """onnxruntime's NodeArg.type: tensor(float), seq(tensor(int64)), optional(tensor(float))."""
    tensor = f"tensor({_ELEMENT_TYPES.get(element_type, ('undefined', None))[0]})"
    if kind == 1:  # NX_VALUE_SEQUENCE
        return f"seq({tensor})"
    if kind == 2:  # NX_VALUE_OPTIONAL
        return f"optional({tensor})"
    return tensor


class NodeArg:
    """A graph input or output: name, type string and shape (None or names for unknown dims)."""

    def __init__(self, name: str, type: str, shape):  # noqa: A002 (onnxruntime's names)
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """What the model file says about itself (InferenceSession.get_modelmeta())."""

    def __init__(self, info: dict):
        self.producer_name = info["producer_name"]
        self.producer_version = info["producer_version"]
        self.graph_name = info["graph_name"]
        self.graph_description = info["graph_description"]
        self.domain = info["domain"]
        self.description = info["description"]
        self.version = int(info["version"] or 0)
        self.ir_version = int(info["ir_version"] or 0)
        self.custom_metadata_map = dict(info["custom_metadata_map"])


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels; nxrt has two (0: none, 1 and up: folding and fusions)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Accepted for onnxruntime scripts; nxrt runs nodes in order, in parallel inside kernels."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class OrtHardwareDeviceType(enum.IntEnum):
    """Kinds of hardware (NxDeviceType)."""

    CPU = 0
    GPU = 1
    NPU = 2
    FPGA = 3
    OTHER = 4


class OrtExecutionProviderDevicePolicy(enum.IntEnum):
    """Automatic EP selection policies (onnxruntime's names; values are nxrt's policies)."""

    PREFER_CPU = 0
    PREFER_GPU = 1
    PREFER_NPU = 2
    MAX_PERFORMANCE = 3
    MIN_OVERALL_POWER = 4
    MAX_EFFICIENCY = 4  # the most frugal devices first, as MIN_OVERALL_POWER
    DEFAULT = 0


class OrtCompiledModelCompatibility(enum.IntEnum):
    """Whether a compiled model suits a device (NxCompatibility; onnxruntime's names)."""

    EP_NOT_APPLICABLE = 0
    EP_SUPPORTED_OPTIMAL = 1
    EP_SUPPORTED_PREFER_RECOMPILATION = 2
    EP_NEEDS_RECOMPILATION = 3  # nxrt: does not run here; compiling the model again would
    EP_UNSUPPORTED = 4


class FallbackMode(enum.IntEnum):
    """Where nodes no selected EP claims go (nxrt only)."""

    ALLOW = 0
    WARN = 1
    FORBID = 2
