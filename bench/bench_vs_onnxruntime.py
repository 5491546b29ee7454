#!/usr/bin/env python3
"""Latency of nxrt against onnxruntime (CPU), batch 1, on the same inputs.

    bench_vs_onnxruntime.py [--models resnet50 bert4] [--threads 1 2] [--repeat 20] [--rounds 3]
                            [--nxrt build/bin/nxrt] [--models-dir build/models] [--json FILE]
                            [--ort-only]

--models takes model names (looked up as MODELS_DIR/NAME.onnx) or paths to .onnx files. Inputs
are the deterministic ones of tests/models/model_inputs.py, saved as .npy and given to both.

nxrt is timed by its own command line, `nxrt run MODEL --input NAME=FILE ... --threads T
--repeat N`, which prints `time: runs=N median_ms=... min_ms=... mean_ms=... first_ms=...`;
onnxruntime is timed in this process with intra_op_num_threads=T and inter_op_num_threads=1:
a few warm-up runs, then N timed runs. The two are interleaved in R rounds (alternating which
goes first), so that noise from other work on the machine hits both; each engine's latency is
the median of its per-round medians. Model load time is not included for either.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "models"))
import model_inputs  # noqa: E402  (tests/models/model_inputs.py)

MEDIAN_RE = re.compile(r"^time:.*\bmedian_ms=([0-9.eE+-]+)", re.MULTILINE)


class NxrtError(RuntimeError):
    pass


def resolve_model(spec, models_dir):
    """A model name or a path -> path of the .onnx file."""
    if spec.endswith(".onnx") or os.sep in spec:
        return spec
    return os.path.join(models_dir, spec + ".onnx")


def nxrt_median_ms(nxrt, model_path, input_paths, threads, repeat, timeout):
    """Runs `nxrt run ... --threads T --repeat N` once and returns its reported median (ms)."""
    cmd = [nxrt, "run", model_path]
    for name, path in input_paths.items():
        cmd += ["--input", f"{name}={path}"]
    cmd += ["--threads", str(threads), "--repeat", str(repeat)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise NxrtError(f"timed out after {timeout} s") from exc
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no output)").splitlines()
        raise NxrtError(f"exit status {proc.returncode}: " + " | ".join(lines[-2:]))
    match = MEDIAN_RE.search(proc.stdout) or MEDIAN_RE.search(proc.stderr)
    if not match:
        raise NxrtError("no 'time: ... median_ms=' line in nxrt's output")
    return float(match.group(1))


def ort_session(model_path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])


def ort_median_ms(session, feeds, repeat, warmup):
    """Warm-up runs, then `repeat` timed runs; returns the median in ms."""
    for _ in range(warmup):
        session.run(None, feeds)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feeds)
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def bench_model(model_path, args):
    """Benchmarks one model at every thread count; returns a list of result rows (dicts)."""
    name = model_inputs.model_name(model_path)
    rows = []
    feeds = input_paths = None
    for threads in args.threads:
        session = ort_session(model_path, threads)
        if feeds is None:  # same inputs for every thread count
            feeds = model_inputs.build_inputs(model_path, session.get_inputs())
            input_paths = model_inputs.save_inputs(feeds, os.path.join(args.work_dir, name))
        row = {"model": name, "threads": threads, "nxrt_rounds_ms": [], "ort_rounds_ms": [],
               "nxrt_error": ""}
        for round_index in range(args.rounds):
            nxrt_first = round_index % 2 == 0  # alternate the order between rounds
            for engine in (("nxrt", "ort") if nxrt_first else ("ort", "nxrt")):
                # Let the other engine's worker threads (onnxruntime's spin-wait) go idle.
                time.sleep(args.settle)
                if engine == "ort":
                    row["ort_rounds_ms"].append(
                        ort_median_ms(session, feeds, args.repeat, args.warmup))
                elif not args.ort_only and not row["nxrt_error"]:
                    try:
                        row["nxrt_rounds_ms"].append(nxrt_median_ms(
                            args.nxrt, model_path, input_paths, threads, args.repeat,
                            args.timeout))
                    except NxrtError as exc:
                        row["nxrt_error"] = str(exc)
        del session
        row["ort_ms"] = statistics.median(row["ort_rounds_ms"])
        row["nxrt_ms"] = statistics.median(row["nxrt_rounds_ms"]) if row["nxrt_rounds_ms"] \
            else None
        row["ratio"] = row["nxrt_ms"] / row["ort_ms"] if row["nxrt_ms"] else None
        print(format_row(row), flush=True)
        rows.append(row)
    return rows


def format_row(row):
    nxrt = f"{row['nxrt_ms']:.2f}" if row["nxrt_ms"] is not None else "-"
    ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
    line = (f"| {row['model']:<20} | {row['threads']:>7} | {nxrt:>12} | {row['ort_ms']:>12.2f} "
            f"| {ratio:>10} |")
    if row["nxrt_error"]:
        line += f"  nxrt failed: {row['nxrt_error']}"
    return line


def print_header(args):
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"nxrt vs onnxruntime {ort.__version__} (CPU), batch 1, median latency in ms "
          f"({args.rounds} rounds x {args.repeat} runs each, interleaved); load average {load}")
    # Thread-runtime settings change nxrt's multi-threaded numbers a lot on a busy machine.
    settings = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                                  "GOMP_SPINCOUNT") if k in os.environ]
    if settings:
        print("environment: " + " ".join(settings))
    print("ratio = nxrt / onnxruntime: ratio < 1 means nxrt is faster")
    print(f"| {'model':<20} | {'threads':>7} | {'nxrt ms':>12} | {'onnxrt ms':>12} | "
          f"{'ratio':>10} |")
    print(f"|{'-' * 22}|{'-' * 9}|{'-' * 14}|{'-' * 14}|{'-' * 12}|", flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "bert4"],
                        help="model names in --models-dir, or .onnx paths "
                             "(default: resnet50 bert4)")
    parser.add_argument("--models-dir", default=os.path.join("build", "models"),
                        help="where model names are looked up (default: build/models)")
    parser.add_argument("--nxrt", default=os.path.join("build", "bin", "nxrt"),
                        help="nxrt executable (default: build/bin/nxrt)")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2],
                        help="thread counts to measure (default: 1 2)")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per round (20)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds per engine (default: 3)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="onnxruntime warm-up runs per round (default: 3)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed for one nxrt process (default: 600)")
    parser.add_argument("--settle", type=float, default=0.2,
                        help="seconds of pause before each measurement, so that the other "
                             "engine's threads are idle (default: 0.2)")
    parser.add_argument("--work-dir", default=os.path.join("build", "bench_inputs"),
                        help="where the input .npy files are written (default: "
                             "build/bench_inputs)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--ort-only", action="store_true", help="measure onnxruntime only")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.rounds < 1 or args.warmup < 0 or min(args.threads) < 1:
        parser.error("--repeat, --rounds and --threads must be >= 1, --warmup >= 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    if not args.ort_only:
        if not os.access(args.nxrt, os.X_OK):
            print(f"error: nxrt executable not found at {args.nxrt} (use --nxrt or --ort-only)",
                  file=sys.stderr)
            return 2
        args.nxrt = os.path.abspath(args.nxrt)
    print_header(args)
    rows, failed = [], False
    for spec in args.models:
        path = resolve_model(spec, args.models_dir)
        if not os.path.exists(path):
            print(f"| {model_inputs.model_name(path):<20} | missing: {path}", flush=True)
            failed = True
            continue
        for row in bench_model(path, args):
            rows.append(row)
            failed = failed or bool(row["nxrt_error"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"onnxruntime": ort.__version__, "repeat": args.repeat,
                       "rounds": args.rounds, "rows": rows}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
