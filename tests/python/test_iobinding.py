"""IOBinding and OrtValue: inputs and outputs bound in host memory or in an EP's own memory
(the SimDevice example EP), outputs left on the device for the next run, and onnxruntime's
IOBinding script giving onnxruntime's results."""

import ctypes

import numpy as np
import pytest
from conftest import add_model

import nxrt

X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.full((2, 3), 0.5, np.float32)


@pytest.fixture
def sim():
    path = nxrt.example_ep_library("sim_device")
    nxrt.register_execution_provider_library("sim_iobinding", path)
    # SimDevice's test hook: tensors copied into, out of or within its memory (the library is
    # loaded once per process, so ctypes sees the same counter).
    copies = ctypes.CDLL(path).SimDevice_Copies
    copies.restype = ctypes.c_size_t
    yield copies
    nxrt.unregister_execution_provider_library("sim_iobinding")


def iobinding_script(onnxruntime, model: bytes):
    """What an onnxruntime user writes with IOBinding on the CPU (free of nxrt)."""
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_ortvalue_input("y", onnxruntime.OrtValue.ortvalue_from_numpy(Y))
    binding.bind_output("z")
    binding.synchronize_inputs()
    session.run_with_iobinding(binding)
    binding.synchronize_outputs()
    first = binding.copy_outputs_to_cpu()[0]
    value = binding.get_outputs()[0]
    facts = (value.device_name(), value.shape(), value.data_type(), value.element_type(),
             value.is_tensor())
    # Into a tensor the caller made, then reused with new contents.
    out = onnxruntime.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "cpu", 0)
    binding.bind_ortvalue_output("z", out)
    session.run_with_iobinding(binding)
    second = out.numpy()
    x2 = onnxruntime.OrtValue.ortvalue_from_numpy(X * 2)
    x2.update_inplace(X * 3)
    third = session.run_with_ort_values(["z"], {"x": x2, "y": binding_value(onnxruntime)})
    return first, facts, second, third[0].numpy()


def binding_value(onnxruntime):
    return onnxruntime.OrtValue.ortvalue_from_numpy(Y)


def test_onnxruntime_iobinding_script_runs_unchanged():
    import onnxruntime
    want = iobinding_script(onnxruntime, add_model())
    got = iobinding_script(nxrt, add_model())
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] == ("cpu", [2, 3], "tensor(float)", 1, True)
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], X * 3 + Y)
    np.testing.assert_array_equal(got[3], want[3])


def test_cpu_output_into_callers_buffer():
    session = nxrt.InferenceSession(add_model())
    binding = session.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_cpu_input("y", Y)
    mine = np.full((2, 3), -1, np.float32)
    binding.bind_output("z", "cpu", 0, np.float32, mine.shape, mine.ctypes.data)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(mine, X + Y)  # written in place
    # An input over the caller's pointer too (the caller keeps the array alive).
    x10 = X * 10
    binding.bind_input("x", "cpu", 0, np.float32, x10.shape, x10.ctypes.data)
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(mine, x10 + Y)


def test_outputs_stay_in_device_memory_and_chain_without_copies(sim):
    session = nxrt.InferenceSession(add_model(), providers=["SimDevice"])
    assert session.get_providers()[0] == "SimDevice"
    binding = session.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_ortvalue_input("y", nxrt.OrtValue.ortvalue_from_numpy(Y, "SimDevice", 0))
    binding.bind_output("z", "simdevice")  # no shape: the runtime allocates on the device
    before = sim()
    session.run_with_iobinding(binding)
    assert sim() == before + 1  # x goes up; z stays on the device
    z = binding.get_outputs()[0]
    assert z.device_name() == "simdevice" and z.shape() == [2, 3]
    np.testing.assert_array_equal(z.numpy(), X + Y)

    # The device output feeds the next run, whose output stays there too: no copy at all.
    chained = session.io_binding()
    chained.bind_ortvalue_input("x", z)
    chained.bind_ortvalue_input("y", nxrt.OrtValue.ortvalue_from_numpy(Y, "simdevice"))
    out = nxrt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "simdevice")
    chained.bind_ortvalue_output("z", out)
    before = sim()
    for _ in range(3):
        session.run_with_iobinding(chained)
    assert sim() == before
    assert chained.get_outputs()[0] is out
    np.testing.assert_array_equal(out.numpy(), X + 2 * Y)
    np.testing.assert_array_equal(chained.copy_outputs_to_cpu()[0], X + 2 * Y)

    # New contents in device memory, then the output back on the host.
    out.update_inplace(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(out.numpy(), np.ones((2, 3), np.float32))
    chained.clear_binding_outputs()
    chained.bind_output("z", "cpu")
    session.run_with_iobinding(chained)
    assert chained.get_outputs()[0].device_name() == "cpu"
    np.testing.assert_array_equal(chained.copy_outputs_to_cpu()[0], X + 2 * Y)


def test_cpu_model_output_asked_on_the_device_is_copied_there(sim):
    session = nxrt.InferenceSession(add_model())  # CPU only
    binding = session.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_cpu_input("y", Y)
    binding.bind_output("z", "SimDevice")
    session.run_with_iobinding(binding)
    z = binding.get_outputs()[0]
    assert z.device_name() == "simdevice"
    np.testing.assert_array_equal(z.numpy(), X + Y)


def test_without_bound_outputs_every_output_comes_back_on_the_host():
    session = nxrt.InferenceSession(add_model())
    binding = session.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_cpu_input("y", Y)
    session.run_with_iobinding(binding)
    [z] = binding.get_outputs()
    assert z.device_name() == "cpu"
    np.testing.assert_array_equal(z.numpy(), X + Y)


def test_iobinding_errors(sim):
    session = nxrt.InferenceSession(add_model())
    binding = session.io_binding()
    with pytest.raises(nxrt.InvalidArgument, match="no memory for device 'cuda'"):
        binding.bind_output("z", "cuda")
    with pytest.raises(nxrt.NotImplemented, match="host memory only"):
        binding.bind_input("x", "simdevice", 0, np.float32, [2, 3], 1234)
    value = nxrt.OrtValue.ortvalue_from_numpy(X, "simdevice")
    with pytest.raises(nxrt.InvalidArgument, match="shape must match"):
        value.update_inplace(np.ones((3, 2), np.float32))
    # A bound output of the wrong shape is refused with both shapes named; the binding stays
    # usable once fixed.
    binding.bind_cpu_input("x", X)
    binding.bind_cpu_input("y", Y)
    binding.bind_ortvalue_output("z", nxrt.OrtValue.ortvalue_from_shape_and_type([3, 2],
                                                                                  np.float32))
    with pytest.raises(nxrt.InvalidArgument, match=r"float\[2,3\]"):
        session.run_with_iobinding(binding)
    binding.bind_output("z")
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], X + Y)
    del value  # released before the fixture unregisters SimDevice
