"""The process-wide environment: EP libraries, hardware and EP devices."""

from __future__ import annotations

import os
import threading

from . import _nxrt
from ._types import OrtHardwareDeviceType

_env = None
_env_lock = threading.Lock()

# onnxruntime's provider names for nxrt's EPs (both spellings are accepted everywhere).
_PROVIDER_ALIASES = {"CPUExecutionProvider": "CPU"}
_EP_TO_PROVIDER = {v: k for k, v in _PROVIDER_ALIASES.items()}


def env() -> _nxrt.Env:
    """The env every session of this process uses, created on first use (warnings and up logged;
    NXRT_LOG_LEVEL=0..4 overrides)."""
    global _env
    with _env_lock:
        if _env is None:
            _env = _nxrt.Env(int(os.environ.get("NXRT_LOG_LEVEL", "2")))
        return _env


def ep_name_of(provider: str) -> str:
    """nxrt's EP name for an onnxruntime provider name (or an EP name, unchanged)."""
    return _PROVIDER_ALIASES.get(provider, provider)


def provider_name_of(ep_name: str) -> str:
    return _EP_TO_PROVIDER.get(ep_name, ep_name)


class OrtHardwareDevice:
    """A device of this machine (or a virtual one an EP library was asked for)."""

    def __init__(self, d: dict):
        self.type = OrtHardwareDeviceType(d["type"])
        self.vendor = d["vendor"]
        self.vendor_id = d["vendor_id"]
        self.device_id = d["device_id"]
        self.metadata = dict(d["metadata"])

    @property
    def is_virtual(self) -> bool:
        return self.metadata.get("is_virtual") == "1"

    def __repr__(self) -> str:
        return f"OrtHardwareDevice(type={self.type.name}, vendor='{self.vendor}')"


class OrtEpDevice:
    """An (EP, hardware device) pair an EP library offers (get_ep_devices())."""

    def __init__(self, d: dict):
        self._index = d["index"]
        self.ep_name = d["ep_name"]
        self.ep_vendor = d["ep_vendor"]
        self.library = d["library"]
        self.device = OrtHardwareDevice(d["device"])
        self.ep_metadata = dict(d["metadata"])
        self.ep_options = dict(d["options"])

    def __repr__(self) -> str:
        return f"OrtEpDevice(ep_name='{self.ep_name}', device={self.device!r})"


def get_ep_devices() -> list[OrtEpDevice]:
    """Every EP device of the registered EP libraries (the CPU EP's always)."""
    return [OrtEpDevice(d) for d in env().ep_devices()]


def get_hardware_devices() -> list[OrtHardwareDevice]:
    """The hardware this process found (CPU, GPUs, accelerators)."""
    return [OrtHardwareDevice(d) for d in _nxrt.hardware_devices()]


def register_execution_provider_library(registration_name: str, library_path: str,
                                        virtual_devices=None) -> None:
    """Loads an EP library (a plugin built against include/nxrt/nxrt_ep_api.h) under a name.
    `virtual_devices` (nxrt only): [(OrtHardwareDeviceType, {option: value}), ...] asks the
    library for devices that are not present, e.g. to compile ahead of time for an NPU."""
    path = os.fspath(library_path)
    if virtual_devices:
        requests = [(int(t), {str(k): str(v) for k, v in opts.items()})
                    for t, opts in virtual_devices]
        env().register_ep_library_with_virtual_devices(registration_name, path, requests)
    else:
        env().register_ep_library(registration_name, path)


def unregister_execution_provider_library(registration_name: str) -> None:
    env().unregister_ep_library(registration_name)


def get_available_providers() -> list[str]:
    """EP names the registered libraries offer, the CPU EP as "CPUExecutionProvider"."""
    names = []
    for d in env().ep_devices():
        name = provider_name_of(d["ep_name"])
        if name not in names:
            names.append(name)
    return names


def get_all_providers() -> list[str]:
    return get_available_providers()


def get_device() -> str:
    """onnxruntime's build flavour string: nxrt's package always runs on the CPU EP."""
    return "CPU"


def library_dir() -> str:
    """The folder holding libnxrt and the EP libraries shipped with the package."""
    return os.path.dirname(os.path.abspath(_nxrt.__file__))


def example_ep_library(name: str) -> str:
    """The path of an example EP library shipped in the package: "sim_device", "example_gpu",
    "example_npu" or "example_compiler"."""
    return os.path.join(library_dir(), f"libnxrt_ep_{name}.so")
