#!/usr/bin/env python3
"""Runs real models through nxrt and onnxruntime on the same inputs and compares the outputs.

    run_model_comparison.py [--nxrt build/bin/nxrt] [--models build/models] [--only NAME ...]
                            [--threads N] [--nxrt-threads N [N ...]] [--work-dir DIR]
                            [--ort-only] [--timeout S]

For every known model (see model_inputs.py; those from export_torch_models.py and
fetch_wheel_models.py) and any other .onnx file in the models folder:
  1. build deterministic inputs and save them as WORK_DIR/<model>/inputs/<name>.npy;
  2. run onnxruntime (CPU) on them; its outputs go to WORK_DIR/<model>/onnxruntime/;
  3. run `nxrt run MODEL --input NAME=FILE.npy ... --output-dir WORK_DIR/<model>/nxrt [--threads N]`;
  4. compare every output: PASS iff shapes and dtypes match and
     max|nxrt - onnxruntime| <= 1e-4 * max(1, max|onnxruntime|)  (NaNs must be at the same places).
With --nxrt-threads 1 2 8, steps 3 and 4 run once per thread count (outputs in nxrt-<N>/), and a
model passes only if every thread count does: results must not depend on how work is split.
A known model whose file is missing is reported as SKIP. One line per model, then a final line
`N passed, N failed, N skipped`; the exit status is 1 if anything failed (2 on usage errors).
With --ort-only, nxrt is not run (inputs and reference outputs are still written) and every
model counts as skipped.
"""
import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_inputs  # noqa: E402  (sibling module)

RELATIVE_TOLERANCE = 1e-4
# nxrt run prints e.g.
# "time: runs=1 median_ms=12.3 min_ms=... first_ms=12.3 create_ms=45.6 peak_rss_mb=80.1"
NXRT_TIME_RE = re.compile(r"^time:.*$", re.MULTILINE)


@dataclass
class OutputCheck:
    """Comparison result for one output tensor."""
    name: str
    ok: bool
    max_abs_diff: float
    tolerance: float
    problem: str = ""  # why it failed, when not a plain tolerance miss


@dataclass
class ModelResult:
    name: str
    status: str                  # PASS, FAIL, SKIP
    detail: str = ""
    checks: list = field(default_factory=list)
    ort_create_s: float = 0.0
    ort_run_s: float = 0.0
    nxrt_s: float = 0.0          # wall time of the nxrt process
    nxrt_times: dict = field(default_factory=dict)  # key=value pairs of its "time:" line


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------

def compare_output(name, expected, actual):
    """Compares one nxrt output with onnxruntime's under the tolerance rule above."""
    if actual.dtype != expected.dtype:
        return OutputCheck(name, False, float("nan"), float("nan"),
                           f"dtype {actual.dtype} != expected {expected.dtype}")
    if actual.shape != expected.shape:
        return OutputCheck(name, False, float("nan"), float("nan"),
                           f"shape {actual.shape} != expected {expected.shape}")
    if expected.size == 0:
        return OutputCheck(name, True, 0.0, RELATIVE_TOLERANCE)
    if expected.dtype == np.bool_ or not np.issubdtype(expected.dtype, np.number):
        mismatches = int(np.count_nonzero(actual != expected))
        return OutputCheck(name, mismatches == 0, float(mismatches > 0), 0.0,
                           f"{mismatches} elements differ" if mismatches else "")
    exp = expected.astype(np.float64)
    act = actual.astype(np.float64)
    exp_nan, act_nan = np.isnan(exp), np.isnan(act)
    if not np.array_equal(exp_nan, act_nan):
        return OutputCheck(name, False, float("inf"), float("nan"),
                           f"NaN at {int(np.count_nonzero(exp_nan != act_nan))} differing places")
    finite = ~exp_nan
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
        diff = np.where(act[finite] == exp[finite], 0.0, np.abs(act[finite] - exp[finite]))
    max_diff = float(diff.max()) if diff.size else 0.0
    ref = exp[np.isfinite(exp)]
    ref_max = float(np.abs(ref).max()) if ref.size else 0.0
    tolerance = RELATIVE_TOLERANCE * max(1.0, ref_max)
    return OutputCheck(name, max_diff <= tolerance, max_diff, tolerance)


def worst_check(checks):
    """The check closest to (or furthest over) its tolerance, for the one-line summary."""
    def badness(c):
        if c.problem and not c.ok:
            return float("inf")
        return c.max_abs_diff / c.tolerance if c.tolerance > 0 else (0.0 if c.ok else float("inf"))
    return max(checks, key=badness)


# --------------------------------------------------------------------------------------------
# Running the two engines
# --------------------------------------------------------------------------------------------

def run_onnxruntime(model_path, threads):
    """Creates a session, builds inputs, runs once. Returns (feeds, {output: array}, create_s,
    run_s)."""
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    start = time.perf_counter()
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    create_s = time.perf_counter() - start
    feeds = model_inputs.build_inputs(model_path, session.get_inputs())
    start = time.perf_counter()
    values = session.run(None, feeds)
    run_s = time.perf_counter() - start
    outputs = {o.name: v for o, v in zip(session.get_outputs(), values)}
    return feeds, outputs, create_s, run_s


def parse_time_line(stdout):
    """{key: float} from nxrt's "time: key=value ..." line ({} when it has none)."""
    match = NXRT_TIME_RE.search(stdout)
    times = {}
    for item in (match.group(0).split()[1:] if match else []):
        key, _, value = item.partition("=")
        try:
            times[key] = float(value)
        except ValueError:
            pass
    return times


def run_nxrt(nxrt, model_path, input_paths, out_dir, threads, timeout):
    """Runs the nxrt command line. Returns (seconds, {time-line values}, error text or "")."""
    os.makedirs(out_dir, exist_ok=True)
    for stale in os.listdir(out_dir):  # never compare against a previous run's files
        if stale.endswith(".npy"):
            os.remove(os.path.join(out_dir, stale))
    cmd = [nxrt, "run", model_path]
    for name, path in input_paths.items():
        cmd += ["--input", f"{name}={path}"]
    cmd += ["--output-dir", out_dir]
    if threads:
        cmd += ["--threads", str(threads)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, {}, f"timed out after {timeout} s"
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no output)").splitlines()
        return elapsed, {}, f"nxrt exit status {proc.returncode}: " + " | ".join(lines[-3:])
    return elapsed, parse_time_line(proc.stdout), ""


def save_outputs(outputs, directory):
    os.makedirs(directory, exist_ok=True)
    for name, value in outputs.items():
        np.save(os.path.join(directory, model_inputs.sanitise_name(name) + ".npy"), value)


def compare_model(model_path, args):
    """Runs one model through both engines and returns its ModelResult."""
    name = model_inputs.model_name(model_path)
    result = ModelResult(name, "FAIL")
    work = os.path.join(args.work_dir, name)
    try:
        feeds, expected, result.ort_create_s, result.ort_run_s = run_onnxruntime(
            model_path, args.threads)
    except Exception as exc:  # a broken model or input spec: report, do not stop the suite
        result.detail = f"onnxruntime failed: {type(exc).__name__}: {exc}"
        return result
    input_paths = model_inputs.save_inputs(feeds, os.path.join(work, "inputs"))
    save_outputs(expected, os.path.join(work, "onnxruntime"))
    if args.ort_only:
        result.status = "SKIP"
        result.detail = "--ort-only: nxrt not run"
        return result

    thread_counts = args.nxrt_threads or [args.threads]
    for threads in thread_counts:
        label = f"{threads} threads: " if args.nxrt_threads else ""
        nxrt_dir = os.path.join(work, f"nxrt-{threads}" if args.nxrt_threads else "nxrt")
        result.nxrt_s, result.nxrt_times, error = run_nxrt(args.nxrt, model_path, input_paths,
                                                           nxrt_dir, threads, args.timeout)
        if error:
            result.detail = label + error
            result.checks = []
            return result
        checks = check_outputs(expected, nxrt_dir)
        for check in checks:
            check.name = label + check.name
        result.checks += checks
    result.status = "PASS" if all(c.ok for c in result.checks) else "FAIL"
    failed = [c for c in result.checks if not c.ok]
    result.detail = "; ".join(
        f"{c.name}: {c.problem or f'max diff {c.max_abs_diff:.3g} > tol {c.tolerance:.3g}'}"
        for c in failed)
    return result


def check_outputs(expected, nxrt_dir):
    """Compares every onnxruntime output with the file nxrt wrote into nxrt_dir."""
    checks = []
    for out_name, ref in expected.items():
        path = os.path.join(nxrt_dir, model_inputs.sanitise_name(out_name) + ".npy")
        if not os.path.exists(path):
            checks.append(OutputCheck(out_name, False, float("nan"), float("nan"),
                                      f"nxrt wrote no {os.path.basename(path)}"))
            continue
        try:
            actual = np.load(path, allow_pickle=False)
        except Exception as exc:
            checks.append(OutputCheck(out_name, False, float("nan"), float("nan"),
                                      f"unreadable {path}: {exc}"))
            continue
        checks.append(compare_output(out_name, ref, actual))
    return checks


# --------------------------------------------------------------------------------------------
# Reporting and driver
# --------------------------------------------------------------------------------------------

def format_line(result):
    """One summary line: name, max abs diff, tolerance, status, timings [, detail]."""
    if result.checks:
        worst = worst_check(result.checks)
        diff, tol = f"{worst.max_abs_diff:.3g}", f"{worst.tolerance:.3g}"
    else:
        diff = tol = "-"
    timing = ""
    if result.ort_create_s or result.ort_run_s:
        timing = (f"ort load {result.ort_create_s * 1e3:.0f} ms run {result.ort_run_s * 1e3:.1f} ms")
    if "create_ms" in result.nxrt_times and "first_ms" in result.nxrt_times:
        timing += (f"; nxrt load {result.nxrt_times['create_ms']:.0f} ms "
                   f"run {result.nxrt_times['first_ms']:.1f} ms")
    elif result.nxrt_s:
        timing += f"; nxrt process {result.nxrt_s * 1e3:.0f} ms"
    line = (f"{result.name:<20} max_abs_diff {diff:>9}  tol {tol:>8}  {result.status:<4}"
            f"  {timing}")
    if result.detail:
        line += f"\n    {result.detail}"
    return line


def list_models(models_dir, only):
    """Known models in their fixed order, then any other .onnx files in the folder."""
    names = model_inputs.known_model_names()
    if os.path.isdir(models_dir):
        extra = sorted(f[:-5] for f in os.listdir(models_dir)
                       if f.endswith(".onnx") and f[:-5] not in names)
        names = names + extra
    if only:
        unknown = [n for n in only if n not in names]
        names = [n for n in names if n in only] + unknown
    return names


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nxrt", default=os.path.join("build", "bin", "nxrt"),
                        help="nxrt executable (default: build/bin/nxrt)")
    parser.add_argument("--models", default=os.path.join("build", "models"),
                        help="folder with the .onnx files (default: build/models)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this model (file name without .onnx); repeatable")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for nxrt (--threads) and onnxruntime; default: their own")
    parser.add_argument("--nxrt-threads", type=int, nargs="+", metavar="N",
                        help="run nxrt once per thread count, each compared with onnxruntime")
    parser.add_argument("--work-dir", default=os.path.join("build", "model_comparison"),
                        help="where inputs and outputs are written (default: "
                             "build/model_comparison)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed for one nxrt run (default: 600)")
    parser.add_argument("--ort-only", action="store_true",
                        help="do not run nxrt; only write inputs and onnxruntime outputs")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if not args.ort_only and not os.access(args.nxrt, os.X_OK):
        print(f"error: nxrt executable not found at {args.nxrt} (use --nxrt, or --ort-only)",
              file=sys.stderr)
        return 2
    args.nxrt = os.path.abspath(args.nxrt)
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    print(f"comparing nxrt with onnxruntime {ort.__version__}: "
          f"PASS iff max|diff| <= {RELATIVE_TOLERANCE:g} * max(1, max|onnxruntime|)", flush=True)
    for name in list_models(args.models, args.only):
        path = os.path.join(args.models, name + ".onnx")
        if not os.path.exists(path):
            result = ModelResult(name, "SKIP", detail=f"{path} not found")
        else:
            result = compare_model(path, args)
        counts[result.status] += 1
        print(format_line(result), flush=True)
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
