"""A script written for onnxruntime runs unchanged under `import nxrt as onnxruntime`, on
ResNet-50 and Silero VAD, and gives onnxruntime's outputs."""

import importlib

import numpy as np
import pytest
from conftest import real_model


def script_for_onnxruntime(onnxruntime, model_path: str, feeds: list) -> dict:
    """What an onnxruntime user writes (kept free of nxrt: it gets the module to use)."""
    report = {"available": onnxruntime.get_available_providers(),
              "ep_devices": [(d.ep_name, d.device.type) for d in onnxruntime.get_ep_devices()]}
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = onnxruntime.InferenceSession(model_path, sess_options=options,
                                           providers=["CPUExecutionProvider"])
    report["providers"] = session.get_providers()
    report["inputs"] = [(i.name, i.type, i.shape) for i in session.get_inputs()]
    report["outputs"] = [(o.name, o.type) for o in session.get_outputs()]
    names = [o.name for o in session.get_outputs()]
    results = []
    state = None
    for feed in feeds:
        feed = dict(feed)
        if state is not None:
            feed["state"] = state
        out = session.run(names, feed)
        if "stateN" in names:  # Silero VAD carries its state from frame to frame
            state = out[names.index("stateN")]
        results.append(out)
    report["results"] = results
    return report


def compare(model: str, feeds: list, tolerance: float):
    import onnxruntime
    nx = importlib.import_module("nxrt")
    want = script_for_onnxruntime(onnxruntime, model, feeds)
    got = script_for_onnxruntime(nx, model, feeds)
    assert got["providers"] == ["CPUExecutionProvider"] == want["providers"]
    assert "CPUExecutionProvider" in got["available"]
    assert got["inputs"] == want["inputs"]
    assert got["outputs"] == want["outputs"]
    assert any(name == "CPU" for name, _ in got["ep_devices"])
    for w_run, g_run in zip(want["results"], got["results"]):
        for w, g in zip(w_run, g_run):
            assert g.dtype == w.dtype and g.shape == w.shape
            scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
            assert float(np.max(np.abs(g - w))) <= tolerance * scale if w.size else True


def test_resnet50_script_unchanged():
    rng = np.random.default_rng(0)
    feeds = [{"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}]
    compare(real_model("resnet50"), feeds, 2.5e-4)


def test_silero_vad_script_unchanged():
    import onnxruntime
    model = real_model("silero_vad")
    names = [i.name for i in onnxruntime.InferenceSession(model).get_inputs()]
    if sorted(names) != ["input", "sr", "state"]:
        pytest.fail(f"unexpected Silero VAD inputs {names}")
    rng = np.random.default_rng(1)
    audio = (rng.standard_normal(512 * 8) * 0.1).astype(np.float32)
    feeds = []
    for i in range(8):
        feed = {"input": audio[i * 512:(i + 1) * 512][None, :], "sr": np.array(16000, np.int64)}
        if i == 0:
            feed["state"] = np.zeros((2, 1, 128), np.float32)
        feeds.append(feed)
    compare(model, feeds, 1e-4)
