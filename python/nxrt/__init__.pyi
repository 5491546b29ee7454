# Type stubs of the nxrt package (python/nxrt): the onnxruntime-shaped surface and nxrt's own.
import enum
import os
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np

__version__: str

class Error(RuntimeError): ...
class Fail(Error): ...
class InvalidArgument(Error): ...
class NotFound(Error): ...
class NotImplemented(Error): ...  # noqa: A001 (onnxruntime's name)
class InvalidModel(Error): ...
class InvalidPlugin(Error): ...
class RuntimeException(Error): ...
class OutOfMemory(Error): ...
class Cancelled(Error): ...

class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99

class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1

class OrtHardwareDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    NPU = 2
    FPGA = 3
    OTHER = 4

class OrtExecutionProviderDevicePolicy(enum.IntEnum):
    PREFER_CPU = 0
    PREFER_GPU = 1
    PREFER_NPU = 2
    MAX_PERFORMANCE = 3
    MIN_OVERALL_POWER = 4
    MAX_EFFICIENCY = 4
    DEFAULT = 0

class FallbackMode(enum.IntEnum):
    ALLOW = 0
    WARN = 1
    FORBID = 2

class NodeArg:
    name: str
    type: str
    shape: list[Union[int, str, None]] | None

class ModelMetadata:
    producer_name: str
    producer_version: str
    graph_name: str
    graph_description: str
    domain: str
    description: str
    version: int
    ir_version: int
    custom_metadata_map: dict[str, str]

class OrtHardwareDevice:
    type: OrtHardwareDeviceType
    vendor: str
    vendor_id: int
    device_id: int
    metadata: dict[str, str]
    @property
    def is_virtual(self) -> bool: ...

class OrtEpDevice:
    ep_name: str
    ep_vendor: str
    library: str
    device: OrtHardwareDevice
    ep_metadata: dict[str, str]
    ep_options: dict[str, str]

_Providers = Sequence[Union[str, tuple[str, Mapping[str, Any]]]]
_Model = Union[str, bytes, bytearray, memoryview, os.PathLike[str]]

class SessionOptions:
    intra_op_num_threads: int
    inter_op_num_threads: int
    graph_optimization_level: GraphOptimizationLevel
    execution_mode: ExecutionMode
    enable_profiling: bool
    profile_file_prefix: str
    log_severity_level: int
    log_verbosity_level: int
    logid: str
    enable_cpu_mem_arena: bool
    enable_mem_pattern: bool
    enable_mem_reuse: bool
    optimized_model_filepath: str
    fallback: FallbackMode
    memory_limit: int
    def __init__(self) -> None: ...
    def add_session_config_entry(self, key: str, value: str) -> None: ...
    def get_session_config_entry(self, key: str) -> str: ...
    def add_provider_for_devices(self, devices: Iterable[OrtEpDevice],
                                 provider_options: Mapping[str, Any] | None = ...) -> None: ...
    def set_provider_selection_policy(self, policy: OrtExecutionProviderDevicePolicy) -> None: ...

class RunOptions:
    terminate: bool
    timeout_seconds: float
    log_severity_level: int
    log_verbosity_level: int
    logid: str
    only_execute_path_to_fetches: bool
    def __init__(self) -> None: ...

class InferenceSession:
    def __init__(self, path_or_bytes: _Model, sess_options: SessionOptions | None = ...,
                 providers: _Providers | None = ...,
                 provider_options: Sequence[Mapping[str, Any]] | None = ...,
                 **kwargs: Any) -> None: ...
    def get_inputs(self) -> list[NodeArg]: ...
    def get_outputs(self) -> list[NodeArg]: ...
    def get_overridable_initializers(self) -> list[NodeArg]: ...
    def get_modelmeta(self) -> ModelMetadata: ...
    def get_providers(self) -> list[str]: ...
    def get_provider_options(self) -> dict[str, dict[str, str]]: ...
    def get_session_options(self) -> SessionOptions: ...
    def get_profiling_start_time_ns(self) -> int: ...
    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            run_options: RunOptions | None = ...) -> list[Any]: ...
    def end_profiling(self) -> str: ...
    def assignment_report(self) -> dict[str, Any]: ...
    def statistic(self, key: str) -> int: ...

def plan_placement(path_or_bytes: _Model, sess_options: SessionOptions | None = ...,
                   providers: _Providers | None = ...,
                   provider_options: Sequence[Mapping[str, Any]] | None = ...) -> dict[str, Any]: ...
def get_available_providers() -> list[str]: ...
def get_all_providers() -> list[str]: ...
def get_device() -> str: ...
def get_ep_devices() -> list[OrtEpDevice]: ...
def get_hardware_devices() -> list[OrtHardwareDevice]: ...
def register_execution_provider_library(
    registration_name: str, library_path: Union[str, os.PathLike[str]],
    virtual_devices: Sequence[tuple[OrtHardwareDeviceType, Mapping[str, Any]]] | None = ...
) -> None: ...
def unregister_execution_provider_library(registration_name: str) -> None: ...
def library_dir() -> str: ...
def example_ep_library(name: str) -> str: ...
def get_version_string() -> str: ...
def get_abi_version() -> dict[str, int]: ...
