#!/usr/bin/env python3
"""Pre-packed weight sharing: N sessions of one model in one env, with sharing on and off.

    bench/prepack_sharing.py MODEL.onnx [--lib build/lib/libnxrt.so] [--sessions 2]

For each mode it creates the sessions one after another in a fresh process (so resident memory
is comparable) and prints per session: creation time and the session statistics (PrePackWeight
calls, packed weights, shared hits, initializers released); then the env statistics (shared
packed weights and their bytes, all packed bytes in use) and the process's resident memory
growth. Sharing on should pack each weight once and hold one packed copy however many sessions
there are.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

STATS = ("prepack.calls", "prepack.weights", "prepack.shared_hits", "initializers.released",
         "initializers.released_bytes")
ENV_STATS = ("prepack.shared_weights", "prepack.shared_bytes", "prepack.bytes_in_use")


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def child(lib_path, model, sessions, share):
    lib = ctypes.CDLL(lib_path)
    P = ctypes.c_void_p
    lib.NxStatus_GetMessage.restype = ctypes.c_char_p

    def ck(st):
        if st:
            raise RuntimeError(lib.NxStatus_GetMessage(P(st)).decode())

    def stat(fn, obj, key):
        v = ctypes.c_int64()
        ck(fn(obj, key.encode(), ctypes.byref(v)))
        return v.value

    env, opt = P(), P()
    ck(lib.NxEnv_Create(2, None, None, ctypes.byref(env)))
    ck(lib.NxSessionOptions_Create(ctypes.byref(opt)))
    ck(lib.NxSessionOptions_SetIntraOpThreads(opt, 1))
    ck(lib.NxSessionOptions_SetConfig(opt, b"session.share_prepacked_weights", b"1" if share else b"0"))
    base = rss_mb()
    out = {"sessions": []}
    handles = []
    for _ in range(sessions):
        s = P()
        t0 = time.perf_counter()
        ck(lib.NxSession_CreateFromFile(env, model.encode(), opt, ctypes.byref(s)))
        ms = (time.perf_counter() - t0) * 1000
        handles.append(s)
        out["sessions"].append({"create_ms": ms, **{k: stat(lib.NxSession_GetStatistic, s, k) for k in STATS}})
    out["env"] = {k: stat(lib.NxEnv_GetStatistic, env, k) for k in ENV_STATS}
    out["rss_growth_mb"] = rss_mb() - base
    print(json.dumps(out))
    for s in handles:
        lib.NxSession_Release(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--lib", default="build/lib/libnxrt.so")
    ap.add_argument("--sessions", type=int, default=2)
    ap.add_argument("--child", choices=["on", "off"])
    a = ap.parse_args()
    if a.child:
        child(a.lib, a.model, a.sessions, a.child == "on")
        return
    print(f"model: {os.path.basename(a.model)}  sessions: {a.sessions}  (one thread each)")
    results = {}
    for mode in ("off", "on"):
        r = subprocess.run([sys.executable, __file__, a.model, "--lib", a.lib, "--sessions", str(a.sessions),
                            "--child", mode], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"sharing {mode}: {r.stderr.strip()}")
        res = json.loads(r.stdout.strip().splitlines()[-1])
        results[mode] = res
        print(f"sharing {mode}:")
        for i, s in enumerate(res["sessions"]):
            print(f"  session {i}: create_ms={s['create_ms']:.1f} calls={s['prepack.calls']} "
                  f"weights={s['prepack.weights']} shared_hits={s['prepack.shared_hits']} "
                  f"released={s['initializers.released']} released_mb={s['initializers.released_bytes'] / 2**20:.1f}")
        e = res["env"]
        print(f"  env: shared_weights={e['prepack.shared_weights']} shared_mb={e['prepack.shared_bytes'] / 2**20:.1f} "
              f"packed_mb_in_use={e['prepack.bytes_in_use'] / 2**20:.1f} rss_growth_mb={res['rss_growth_mb']:.1f}")
    off, on = results["off"], results["on"]
    print(f"ratio on/off: packed bytes {on['env']['prepack.bytes_in_use'] / max(1, off['env']['prepack.bytes_in_use']):.2f}, "
          f"rss growth {on['rss_growth_mb'] / max(1e-9, off['rss_growth_mb']):.2f}, "
          f"last session create {on['sessions'][-1]['create_ms'] / off['sessions'][-1]['create_ms']:.2f}")


if __name__ == "__main__":
    main()
