#!/usr/bin/env python3
"""Silero VAD (the `silero-vad` wheel's silero_vad.onnx, whose graph is one If choosing the 8 kHz
or 16 kHz network) over a generated 16 kHz signal: silence, a voiced-like harmonic tone with
vibrato, noise, and a second tone. Each 512-sample frame runs through nxrt (its C API through
ctypes, carrying the recurrent state from frame to frame) and through onnxruntime; the per-frame
speech probabilities must agree within 1e-4.

Usage: silero_vad_compare.py --build-dir build [--model PATH] [--seconds S]
The model comes from the installed silero_vad package or, failing that, from the wheel fetched
from PyPI with `pip download --no-deps silero-vad`.
"""
import argparse
import ctypes as C
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np


def find_model(work):
    try:
        import silero_vad  # noqa: F401

        path = os.path.join(os.path.dirname(silero_vad.__file__), "data", "silero_vad.onnx")
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "silero-vad", "-d",
                    work], check=True)
    wheel = glob.glob(os.path.join(work, "silero_vad-*.whl"))[0]
    with zipfile.ZipFile(wheel) as z:
        z.extract("silero_vad/data/silero_vad.onnx", work)
    return os.path.join(work, "silero_vad", "data", "silero_vad.onnx")


def make_signal(seconds, rate=16000):
    rng = np.random.default_rng(7)
    t = np.arange(int(seconds * rate)) / rate
    x = np.zeros_like(t)
    quarter = len(t) // 4
    # A voiced-like sound: a 140 Hz fundamental with harmonics, slow vibrato, syllable envelope.
    f0 = 140 * (1 + 0.03 * np.sin(2 * np.pi * 5 * t))
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 3 * t)) / 2
    x[quarter:2 * quarter] = 0.3 * (voiced * envelope)[quarter:2 * quarter]
    x[2 * quarter:3 * quarter] = 0.05 * rng.standard_normal(quarter)
    x[3 * quarter:] = 0.2 * (voiced * envelope)[3 * quarter:]
    x += 0.002 * rng.standard_normal(len(t))
    return x.astype(np.float32)


class Nxrt:
    """The few C API calls needed to run a model with float/int64 tensors."""

    def __init__(self, build_dir):
        lib = C.CDLL(os.path.join(build_dir, "lib", "libnxrt.so"))
        self.lib = lib
        P = C.c_void_p
        lib.NxStatus_GetMessage.restype = C.c_char_p
        lib.NxStatus_GetMessage.argtypes = [P]
        lib.NxStatus_Release.argtypes = [P]
        for name in ("NxEnv_Create", "NxSession_CreateFromFile", "NxValue_CreateTensorWithData",
                     "NxSession_Run"):
            getattr(lib, name).restype = P
        lib.NxEnv_Create.argtypes = [C.c_int, P, P, C.POINTER(P)]
        lib.NxSession_CreateFromFile.argtypes = [P, C.c_char_p, P, C.POINTER(P)]
        lib.NxValue_CreateTensorWithData.argtypes = [C.c_int, C.POINTER(C.c_int64), C.c_size_t, P,
                                                     C.c_size_t, C.POINTER(P)]
        lib.NxSession_Run.argtypes = [P, C.POINTER(C.c_char_p), C.POINTER(P), C.c_size_t,
                                      C.POINTER(C.c_char_p), C.c_size_t, C.POINTER(P)]
        lib.NxValue_Release.argtypes = [P]
        lib.NxValue_GetConstData.restype = P
        lib.NxValue_GetConstData.argtypes = [P]
        lib.NxValue_GetElementCount.restype = C.c_size_t
        lib.NxValue_GetElementCount.argtypes = [P]
        lib.NxSession_Release.argtypes = [P]
        lib.NxEnv_Release.argtypes = [P]
        self.env = P()
        self.check(lib.NxEnv_Create(2, None, None, C.byref(self.env)))

    def check(self, status):
        if status:
            msg = self.lib.NxStatus_GetMessage(status).decode()
            self.lib.NxStatus_Release(status)
            raise RuntimeError(msg)

    def session(self, path):
        s = C.c_void_p()
        self.check(self.lib.NxSession_CreateFromFile(self.env, path.encode(), None, C.byref(s)))
        return s

    def run(self, session, feeds, outputs):
        types = {np.dtype(np.float32): 1, np.dtype(np.int64): 7}
        keep, values = [], []
        for arr in feeds.values():
            arr = np.require(arr, requirements="C")  # keeps 0-d arrays 0-d
            dims = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
            v = C.c_void_p()
            self.check(self.lib.NxValue_CreateTensorWithData(
                types[arr.dtype], dims, arr.ndim, arr.ctypes.data, arr.nbytes, C.byref(v)))
            keep.append(arr)
            values.append(v)
        in_names = (C.c_char_p * len(feeds))(*[k.encode() for k in feeds])
        in_values = (C.c_void_p * len(values))(*[v.value for v in values])
        out_names = (C.c_char_p * len(outputs))(*[k.encode() for k, _ in outputs])
        out_values = (C.c_void_p * len(outputs))()
        try:
            self.check(self.lib.NxSession_Run(session, in_names, in_values, len(values), out_names,
                                              len(outputs), out_values))
        finally:
            for v in values:
                self.lib.NxValue_Release(v)
        results = []
        for (name, shape), v in zip(outputs, out_values):
            n = self.lib.NxValue_GetElementCount(v)
            data = np.ctypeslib.as_array(C.cast(self.lib.NxValue_GetConstData(v),
                                                C.POINTER(C.c_float)), shape=(n,)).copy()
            self.lib.NxValue_Release(v)
            results.append(data.reshape(shape))
        return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--model")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as work:
        model = args.model or find_model(work)
        signal = make_signal(args.seconds)
        frame = 512
        sr = np.array(16000, np.int64)
        nx = Nxrt(args.build_dir)
        session = nx.session(model)
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        state_nx = np.zeros((2, 1, 128), np.float32)
        state_ref = state_nx.copy()
        # The model keeps 64 samples of context from the previous frame.
        context = np.zeros(64, np.float32)
        probs_nx, probs_ref = [], []
        for start in range(0, len(signal) - frame + 1, frame):
            chunk = np.concatenate([context, signal[start:start + frame]])[None, :]
            context = signal[start + frame - 64:start + frame]
            p_nx, state_nx = nx.run(session, {"input": chunk, "state": state_nx, "sr": sr},
                                    [("output", (1, 1)), ("stateN", (2, 1, 128))])
            p_ref, state_ref = ref.run(None, {"input": chunk, "state": state_ref, "sr": sr})
            probs_nx.append(float(p_nx.ravel()[0]))
            probs_ref.append(float(np.asarray(p_ref).ravel()[0]))
        nx.lib.NxSession_Release(session)
        diff = np.abs(np.array(probs_nx) - np.array(probs_ref))
        speech = sum(p > 0.5 for p in probs_ref)
        print(f"silero_vad: {len(diff)} frames ({speech} with speech probability > 0.5 by "
              f"onnxruntime), max |prob diff| {diff.max():.3g} (tolerance {args.tolerance:g})")
        ok = diff.max() <= args.tolerance
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
