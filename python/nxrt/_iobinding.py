"""OrtValue and IOBinding: values that stay in an EP's memory between runs (onnxruntime's names).

Devices are named as in onnxruntime (`device_type`, `device_id`): "cpu" is host memory; any other
name is the memory of a registered EP, by its memory's name or its EP's name, case-insensitive
("simdevice" for the SimDevice example EP).
"""

from __future__ import annotations

import numpy as np

from . import _nxrt
from ._devices import env
from ._types import element_type_of, numpy_dtype, type_string


def _memory_for(device_type: str, device_id: int = 0) -> _nxrt.MemoryInfo | None:
    """The memory onnxruntime's (device_type, device_id) names: None for host memory, else an EP
    memory matched by its name or its EP's name."""
    wanted = str(device_type).lower()
    if wanted == "cpu":
        return None
    devices = [m for m in env().memories() if not m.host_accessible]
    for m in devices:
        if m.name.lower() == wanted and m.device_id == int(device_id):
            return m
    try:  # an EP's name (any case), also one with no EP devices listed
        m = env().ep_memory(str(device_type))
    except _nxrt.NotFound:
        m = None
    if m is not None and m.device_id == int(device_id):
        return None if m.host_accessible else m
    known = ["cpu"] + sorted({m.name.lower() for m in devices})
    raise _nxrt.InvalidArgument(
        f"nxrt: no memory for device '{device_type}' (id {device_id}); name 'cpu' or a registered "
        f"EP with its own memory (seen: {', '.join(known)})")


def _device_name(memory) -> str:
    return "cpu" if memory is None or memory.host_accessible else memory.name.lower()


def _element_type(element_type) -> int:
    """An element type given as a numpy dtype (onnxruntime's form) or an ONNX type number."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        return int(element_type)
    return element_type_of(np.dtype(element_type))


def _array_spec(array: np.ndarray):
    from ._session import _input_spec  # noqa: PLC0415 (import cycle)

    return _input_spec(array)


class OrtValue:
    """A tensor in host memory or in an EP's memory (onnxruntime.OrtValue)."""

    def __init__(self, native: _nxrt.Value):
        self._native = native

    # ---- construction ----
    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type: str = "cpu", device_id: int = 0,
                            vendor_id: int = -1) -> OrtValue:
        """A tensor holding `numpy_obj`: over the array's own memory (no copy) on the CPU, a copy
        in the device's memory otherwise."""
        spec = _array_spec(numpy_obj)
        return OrtValue(_nxrt.Value.from_spec(env(), spec, _memory_for(device_type, device_id)))

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data, onnx_element_type: int) -> OrtValue:
        array = np.ascontiguousarray(data)
        if element_type_of(array.dtype) != int(onnx_element_type):
            array = array.astype(numpy_dtype(int(onnx_element_type)))
        return OrtValue.ortvalue_from_numpy(array)

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type: str = "cpu",
                                     device_id: int = 0, vendor_id: int = -1) -> OrtValue:
        """A new tensor of this shape and type in the device's memory (zeros on the CPU)."""
        memory = _memory_for(device_type, device_id)
        code = _element_type(element_type)
        shape = [int(d) for d in shape]
        if memory is None:
            memory = env().memories()[0]
        return OrtValue(_nxrt.Value.in_memory(env(), memory, code, shape))

    # ---- what it is ----
    def shape(self) -> list[int]:
        return list(self._native.shape)

    def element_type(self) -> int:
        return self._native.element_type

    def data_type(self) -> str:
        return type_string(self._native.kind, self._native.element_type)

    def device_name(self) -> str:
        return _device_name(self._native.memory)

    def data_ptr(self) -> int:
        return self._native.data_ptr

    def is_tensor(self) -> bool:
        return self._native.kind == 0

    def is_tensor_sequence(self) -> bool:
        return self._native.kind == 1

    def has_value(self) -> bool:
        return self._native.has_value

    # ---- contents ----
    def numpy(self):
        """The contents as a numpy array (a copy; device tensors come to the host)."""
        from ._session import _to_python  # noqa: PLC0415 (import cycle)

        out = self._native.to_python(env())
        return out if type(out) is not tuple else _to_python(out)

    def update_inplace(self, np_arr) -> None:
        """Overwrites the contents with an array of the same shape and type (any memory)."""
        array = np.ascontiguousarray(np_arr)
        self._native.copy_from(env(), _array_spec(array))

    def __repr__(self) -> str:
        return f"OrtValue({self.data_type()}, shape={self.shape()}, device='{self.device_name()}')"


class IOBinding:
    """Inputs and outputs bound for InferenceSession.run_with_iobinding (onnxruntime.IOBinding):
    outputs may stay in an EP's memory, so device-resident results feed the next run without a
    trip through the host."""

    def __init__(self, session):
        self._session = session
        self._inputs: dict[str, OrtValue] = {}
        # name -> ("value", OrtValue) bound in place, or ("memory", memory or None)
        self._outputs: dict[str, tuple] = {}
        self._results: list[OrtValue] = []

    # ---- inputs ----
    def bind_cpu_input(self, name: str, arr_on_cpu) -> None:
        self._inputs[name] = OrtValue.ortvalue_from_numpy(arr_on_cpu)

    def bind_input(self, name: str, device_type, device_id, element_type, shape,
                   buffer_ptr) -> None:
        """An input over memory the caller owns (host memory only: nxrt cannot take a raw device
        pointer; bind an OrtValue made in the device's memory instead)."""
        if _memory_for(device_type, device_id) is not None:
            raise _nxrt.NotImplemented(
                "nxrt: bind_input takes a buffer_ptr in host memory only; for device memory use "
                "bind_ortvalue_input with OrtValue.ortvalue_from_numpy(array, device_type)")
        native = _nxrt.Value.over_address(_element_type(element_type),
                                          [int(d) for d in shape], int(buffer_ptr))
        self._inputs[name] = OrtValue(native)

    def bind_ortvalue_input(self, name: str, ortvalue: OrtValue) -> None:
        self._inputs[name] = ortvalue

    def synchronize_inputs(self) -> None:
        """Runs are synchronous in nxrt: nothing to wait for."""

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    # ---- outputs ----
    def bind_output(self, name: str, device_type: str = "cpu", device_id: int = 0,
                    element_type=None, shape=None, buffer_ptr=None) -> None:
        """Binds output `name` to a device: with a shape (and on the CPU optionally a buffer the
        caller owns) the run writes into that tensor; without one the run leaves the output in
        that device's memory, whatever shape it gets."""
        memory = _memory_for(device_type, device_id)
        if buffer_ptr is not None:
            if memory is not None:
                raise _nxrt.NotImplemented(
                    "nxrt: bind_output takes a buffer_ptr in host memory only; for device memory "
                    "leave it out (the runtime allocates) or bind_ortvalue_output")
            if element_type is None or shape is None:
                raise ValueError("nxrt: bind_output with buffer_ptr needs element_type and shape")
            native = _nxrt.Value.over_address(_element_type(element_type),
                                              [int(d) for d in shape], int(buffer_ptr))
            self._outputs[name] = ("value", OrtValue(native))
        elif shape is not None:
            if element_type is None:
                raise ValueError("nxrt: bind_output with a shape needs element_type")
            value = OrtValue.ortvalue_from_shape_and_type(shape, element_type, device_type,
                                                          device_id)
            self._outputs[name] = ("value", value)
        else:
            self._outputs[name] = ("memory", memory)

    def bind_ortvalue_output(self, name: str, ortvalue: OrtValue) -> None:
        self._outputs[name] = ("value", ortvalue)

    def synchronize_outputs(self) -> None:
        """Runs are synchronous in nxrt: nothing to wait for."""

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def get_outputs(self) -> list[OrtValue]:
        """The outputs of the last run_with_iobinding, in binding order."""
        return list(self._results)

    def copy_outputs_to_cpu(self) -> list:
        """The outputs of the last run as numpy arrays (copies)."""
        return [v.numpy() for v in self._results]

    # ---- used by InferenceSession.run_with_iobinding ----
    def _run(self, native_session, output_names_all, run_options) -> None:
        names = list(self._outputs) or list(output_names_all)
        memories, bound = [], []
        for name in names:
            how, what = self._outputs.get(name, ("memory", None))
            memories.append(what if how == "memory" else None)
            bound.append(what._native if how == "value" else None)
        inputs = list(self._inputs.items())
        produced = native_session.run_values(
            names, [n for n, _ in inputs], [v._native for _, v in inputs], memories, bound,
            run_options._native if run_options is not None else None)
        results = []
        for name, new in zip(names, produced):
            how, what = self._outputs.get(name, ("memory", None))
            results.append(what if new is None else OrtValue(new))
        self._results = results


__all__ = ["IOBinding", "OrtValue"]
