#!/usr/bin/env python3
"""Tokens per second of a decoder-only language model with a key-value cache and int4 weights
(tools/scripts/make_decoder_model.py: com.microsoft MatMulNBits and GroupQueryAttention), nxrt
against onnxruntime, on the same inputs:

    decoder_tokens.py [--model build/models/decoder_int4.onnx] [--nxrt build/bin/nxrt]
                      [--threads 1 2] [--prompt 32] [--past 127] [--generate 16]
                      [--repeat 30] [--rounds 3]

1. Agreement: greedy generation of --generate tokens after a --prompt token prompt, step by
   step with the cache, in onnxruntime (this process) and in nxrt (`nxrt run` per step, the
   cache passed as .npy files). The tokens must be equal and the logits close.
2. Speed, per thread count, engines interleaved over --rounds rounds: the prompt step (seq =
   --prompt, empty cache) and one decode step (seq = 1 after a cache of --past tokens); each
   engine's figure is the median of its per-round medians of --repeat runs (nxrt: `nxrt run
   --repeat`, which reports median_ms; onnxruntime: timed here). Decode tokens per second =
   1000 / decode ms.
Prints a markdown table and the nxrt / onnxruntime ratios; exit status 1 when the engines
disagree (tokens, or logits by more than 1e-3) or nxrt fails. --check-only stops after the
agreement (CI runs that).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

# Both engines dequantize the 4-bit weights and compute in float32; only summation order
# differs.
LOGIT_TOLERANCE = 1e-3
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "scripts"))


def model_shape(path):
    m = onnx.load(path, load_external_data=False)
    layers = sum(1 for i in m.graph.input if i.name.endswith(".key"))
    past = next(i for i in m.graph.input if i.name.endswith(".key"))
    dims = past.type.tensor_type.shape.dim
    return layers, dims[1].dim_value, dims[3].dim_value


def feeds_for(ids, past, layers, kv_heads, head_dim, rng=None):
    """input_ids [1, S], attention_mask [1, past + S], caches (random when rng, else given)."""
    s = ids.shape[1]
    f = {"input_ids": ids.astype(np.int64),
         "attention_mask": np.ones((1, (past if isinstance(past, int) else
                                        past[0].shape[2]) + s), np.int64)}
    for i in range(layers):
        for j, kind in enumerate(("key", "value")):
            if isinstance(past, int):
                cache = (rng.standard_normal((1, kv_heads, past, head_dim)).astype(np.float32)
                         if rng is not None else np.zeros((1, kv_heads, past, head_dim),
                                                          np.float32))
            else:
                cache = past[2 * i + j]
            f[f"past_key_values.{i}.{kind}"] = cache
    return f


def run_nxrt(nxrt, model, feeds, work, threads, repeat=1):
    args = []
    for name, value in feeds.items():
        path = os.path.join(work, name + ".npy")
        np.save(path, value)
        args += ["--input", f"{name}={path}"]
    out = os.path.join(work, "out")
    cmd = [nxrt, "run", model, *args, "--threads", str(threads), "--repeat", str(repeat),
           "--output-dir", out]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nxrt failed: {proc.stderr.strip()}")
    m = re.search(r"median_ms=([0-9.]+)", proc.stdout)
    return out, float(m.group(1)) if m else float("nan")


def greedy(ort_session, nxrt, model, layers, kv_heads, head_dim, prompt, steps, work):
    rng = np.random.default_rng(5)
    ids = rng.integers(1, 1000, size=(1, prompt))
    ort_past, nx_past = 0, 0
    tokens_ort, tokens_nx, worst = [], [], 0.0
    out_names = [o.name for o in ort_session.get_outputs()]
    for step in range(steps):
        f_ort = feeds_for(ids if step == 0 else np.array([[tokens_ort[-1]]]), ort_past, layers,
                          kv_heads, head_dim)
        res = ort_session.run(None, f_ort)
        f_nx = feeds_for(ids if step == 0 else np.array([[tokens_nx[-1]]]), nx_past, layers,
                         kv_heads, head_dim)
        out_dir, _ = run_nxrt(nxrt, model, f_nx, work, 1)
        nx = [np.load(os.path.join(out_dir, n + ".npy")) for n in out_names]
        worst = max(worst, float(np.abs(nx[0] - res[0]).max()))
        tokens_ort.append(int(res[0][0, -1].argmax()))
        tokens_nx.append(int(nx[0][0, -1].argmax()))
        ort_past, nx_past = res[1:], nx[1:]
    return tokens_ort, tokens_nx, worst


def time_ort(session, feeds, repeat):
    for _ in range(3):
        session.run(None, feeds)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="build/models/decoder_int4.onnx")
    ap.add_argument("--nxrt", default="build/bin/nxrt")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--past", type=int, default=127)
    ap.add_argument("--generate", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--check-only", action="store_true",
                    help="only the greedy-generation agreement (for CI), no timing")
    args = ap.parse_args()
    if not os.path.exists(args.model):
        import make_decoder_model
        subprocess.run([sys.executable, make_decoder_model.__file__, args.model], check=True)
    layers, kv_heads, head_dim = model_shape(args.model)
    status = 0
    with tempfile.TemporaryDirectory() as work:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        session = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
        t_ort, t_nx, worst = greedy(session, args.nxrt, args.model, layers, kv_heads, head_dim,
                                    args.prompt, args.generate, work)
        same = t_ort == t_nx
        print(f"greedy generation, {args.generate} tokens after a {args.prompt}-token prompt: "
              f"{'tokens equal' if same else 'TOKENS DIFFER'}; max |logit diff| {worst:.2e}")
        if not same:
            print(f"  onnxruntime: {t_ort}\n  nxrt:        {t_nx}")
            status = 1
        if worst > LOGIT_TOLERANCE:
            print(f"  logits differ by more than {LOGIT_TOLERANCE}")
            status = 1
        if args.check_only:
            return status
        rng = np.random.default_rng(9)
        phases = {"prompt": feeds_for(rng.integers(1, 1000, (1, args.prompt)), 0, layers,
                                      kv_heads, head_dim),
                  "decode": feeds_for(rng.integers(1, 1000, (1, 1)), args.past, layers, kv_heads,
                                      head_dim, rng)}
        print("\n| threads | phase | onnxruntime ms | nxrt ms | ratio | tokens/s ort | "
              "tokens/s nxrt |\n|---|---|---|---|---|---|---|")
        for threads in args.threads:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            session = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
            for phase, feeds in phases.items():
                ort_ms, nx_ms = [], []
                for _ in range(args.rounds):
                    ort_ms.append(time_ort(session, feeds, args.repeat))
                    nx_ms.append(run_nxrt(args.nxrt, args.model, feeds, work, threads,
                                          args.repeat)[1])
                o, n = statistics.median(ort_ms), statistics.median(nx_ms)
                tokens = args.prompt if phase == "prompt" else 1
                print(f"| {threads} | {phase} | {o:.2f} | {n:.2f} | {n / o:.2f} | "
                      f"{1000 * tokens / o:.0f} | {1000 * tokens / n:.0f} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
