"""nxrt: an ONNX inference runtime with plugin execution providers.

Written for onnxruntime users: `import nxrt as onnxruntime` runs scripts made for onnxruntime
(InferenceSession, SessionOptions, RunOptions, get_available_providers, the plugin-EP functions
of onnxruntime 1.22 and later). What only nxrt has: InferenceSession.assignment_report() (which
EP and hardware device runs which node, and why a node left the EP it preferred),
plan_placement() (the same without creating a session), virtual devices for EP libraries, and
the example EP libraries shipped in the package (example_ep_library()).
"""

from . import _nxrt
from ._devices import (OrtEpDevice, OrtHardwareDevice, example_ep_library, get_all_providers,
                       get_available_providers, get_device, get_ep_devices, get_hardware_devices,
                       library_dir, register_execution_provider_library,
                       unregister_execution_provider_library)
from ._nxrt import (Cancelled, Error, Fail, InvalidArgument, InvalidModel, InvalidPlugin,
                    NotFound, NotImplemented, OutOfMemory, RuntimeException)
from ._iobinding import IOBinding, OrtValue
from ._session import (InferenceSession, ModelCompiler, RunOptions, SessionOptions,
                       get_model_compatibility, plan_placement)
from ._types import (ExecutionMode, FallbackMode, GraphOptimizationLevel, ModelMetadata, NodeArg,
                     OrtCompiledModelCompatibility, OrtExecutionProviderDevicePolicy,
                     OrtHardwareDeviceType)

__version__ = _nxrt.version()
SessionIOBinding = IOBinding  # onnxruntime's other name for it


def get_version_string() -> str:
    return __version__


def get_abi_version() -> dict:
    """Versions of the C API and of the EP plugin ABI this package was built with."""
    return dict(_nxrt.abi_version())


__all__ = [
    "Cancelled", "Error", "ExecutionMode", "Fail", "FallbackMode", "GraphOptimizationLevel",
    "IOBinding", "InferenceSession", "InvalidArgument", "InvalidModel", "InvalidPlugin",
    "ModelCompiler", "ModelMetadata", "NodeArg", "NotFound", "NotImplemented",
    "OrtCompiledModelCompatibility", "OrtEpDevice", "OrtExecutionProviderDevicePolicy",
    "OrtHardwareDevice", "OrtHardwareDeviceType", "OrtValue", "OutOfMemory", "RunOptions",
    "RuntimeException", "SessionIOBinding", "SessionOptions", "example_ep_library",
    "get_abi_version", "get_all_providers", "get_available_providers", "get_device",
    "get_ep_devices", "get_hardware_devices", "get_model_compatibility", "get_version_string",
    "library_dir", "plan_placement", "register_execution_provider_library",
    "unregister_execution_provider_library", "__version__",
]
