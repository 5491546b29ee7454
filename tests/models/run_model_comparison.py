#!/usr/bin/env python3
"""Runs real models through nxrt and onnxruntime on the same inputs and compares the outputs.

    run_model_comparison.py [--zoo] [--nxrt build/bin/nxrt] [--models build/models]
                            [--only NAME ...] [--threads N] [--nxrt-threads N [N ...]]
                            [--work-dir DIR] [--ort-only] [--timeout S]

For every known model (see model_inputs.py; those from export_torch_models.py and
fetch_wheel_models.py; with --zoo, the zoo of export_zoo_models.py, in build/zoo by default) and
any other .onnx file in the models folder:
  1. build deterministic inputs and save them as WORK_DIR/<model>/inputs/<name>.npy;
  2. run onnxruntime (CPU) on them; its outputs go to WORK_DIR/<model>/onnxruntime/;
  3. run `nxrt run MODEL --input NAME=FILE.npy ... --output-dir WORK_DIR/<model>/nxrt [--threads N]`;
  4. compare every output: PASS iff shapes and dtypes match and
     max|nxrt - onnxruntime| <= 1e-4 * max(1, max|onnxruntime|)  (NaNs must be at the same places).
With --nxrt-threads 1 2 8, steps 3 and 4 run once per thread count (outputs in nxrt-<N>/), and a
model passes only if every thread count does: results must not depend on how work is split.
Detectors (a NAME.json sidecar naming their `detections` outputs) have a variable number of
detections after TopK and NMS, where two candidates whose scores nearly tie may come out in
either order, or either one may be kept: their boxes, scores and labels are matched detection by
detection (same label, score and box within the tolerance above) instead of element by element.
A detection without a match passes only when a near-tie explains it: its score is within the
tie margin (4 x the largest score difference of the matched detections, at most the tolerance)
of the score threshold or, when both runtimes return the same number of detections, of the
lowest score kept (the count cut-off), or an unmatched detection of the other runtime with the
same label, a score that close and an overlapping box (IoU > 0.3) took its place (NMS kept the
other of a near-tied pair); and such detections are at most 2 or 2% of them (ties that often are
not chance). They are counted in the model's line. Detectors' dense head outputs (before
TopK/NMS) are compared element by element like any output.
`nxrt run` prints `reference primitives: CPU=<n>` (oneDNN reference implementations the session
created); a model fails if any count is above 0. An nxrt that prints no such line is noted at
the end, and the check is not done.
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
# "reference primitives: CPU=0": oneDNN reference implementations created, per EP.
NXRT_REFERENCE_RE = re.compile(r"^reference primitives:(.*)$", re.MULTILINE)
# Two detections of the same label whose boxes overlap this much were NMS competitors.
NMS_COMPETITOR_IOU = 0.3


@dataclass
class OutputCheck:
    """Comparison result for one output tensor."""
    name: str
    ok: bool
    max_abs_diff: float
    tolerance: float
    problem: str = ""  # why it failed, when not a plain tolerance miss
    note: str = ""     # what a passing check had to allow (detections: near-tie swaps)


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
    reference_primitives: dict = None  # {EP: largest count of the runs}; None: not printed


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------

def compare_output(name, expected, actual, relative_tolerance=RELATIVE_TOLERANCE):
    """Compares one nxrt output with onnxruntime's under the tolerance rule above (a few models
    have a documented tolerance of their own: model_inputs.relative_tolerance)."""
    if actual.dtype != expected.dtype:
        return OutputCheck(name, False, float("nan"), float("nan"),
                           f"dtype {actual.dtype} != expected {expected.dtype}")
    if actual.shape != expected.shape:
        return OutputCheck(name, False, float("nan"), float("nan"),
                           f"shape {actual.shape} != expected {expected.shape}")
    if expected.size == 0:
        return OutputCheck(name, True, 0.0, relative_tolerance)
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
    tolerance = relative_tolerance * max(1.0, ref_max)
    return OutputCheck(name, max_diff <= tolerance, max_diff, tolerance)


def worst_check(checks):
    """The check closest to (or furthest over) its tolerance, for the one-line summary."""
    def badness(c):
        if c.problem and not c.ok:
            return float("inf")
        return c.max_abs_diff / c.tolerance if c.tolerance > 0 else (0.0 if c.ok else float("inf"))
    return max(checks, key=badness)


def box_area(boxes):
    """Areas of [..., 4] boxes [x1, y1, x2, y2] (0 for degenerate ones)."""
    return np.prod(np.clip(boxes[..., 2:] - boxes[..., :2], 0, None), axis=-1)


def box_iou(box, boxes):
    """IoU of one [x1, y1, x2, y2] box with each row of boxes [N, 4]."""
    lo = np.maximum(box[:2], boxes[:, :2])
    hi = np.minimum(box[2:], boxes[:, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
    union = box_area(box) + box_area(boxes) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def match_detections(expected, actual, box_tol, score_tol):
    """Pairs each expected detection with an unmatched actual one of the same label whose score
    and box are within the tolerances (the closest box). expected / actual: (boxes [N,4],
    scores [N], labels [N]) as float64 / int64. Returns (pairs, unmatched expected indices,
    unmatched actual indices)."""
    (e_boxes, e_scores, e_labels), (a_boxes, a_scores, a_labels) = expected, actual
    free = np.ones(len(a_scores), dtype=bool)
    pairs, lost = [], []
    for i in np.argsort(-e_scores, kind="stable"):
        box_diff = np.abs(a_boxes - e_boxes[i]).max(axis=1) if len(a_scores) else np.zeros(0)
        fits = (free & (a_labels == e_labels[i]) & (np.abs(a_scores - e_scores[i]) <= score_tol)
                & (box_diff <= box_tol))
        if fits.any():
            j = int(np.argmin(np.where(fits, box_diff, np.inf)))
            free[j] = False
            pairs.append((int(i), j))
        else:
            lost.append(int(i))
    return pairs, lost, [int(j) for j in np.flatnonzero(free)]


def compare_detections(names, expected, actual, score_threshold):
    """Checks a detector's (boxes, scores, labels) outputs by matching detections (see the
    module's docstring). names: the three output names; expected / actual: the arrays."""
    problems = [f"{n}: dtype {a.dtype} != expected {e.dtype}" for n, e, a in
                zip(names, expected, actual) if a.dtype != e.dtype]
    count = actual[1].shape[0] if actual[1].ndim == 1 else -1
    if [a.shape for a in actual] != [(count, 4), (count,), (count,)]:
        problems.append(f"shapes {[a.shape for a in actual]} are not [N,4], [N], [N]")
    if problems:
        return [OutputCheck(names[0], False, float("nan"), float("nan"), "; ".join(problems))]
    exp = tuple(x.astype(np.int64 if x.dtype.kind in "iu" else np.float64) for x in expected)
    act = tuple(x.astype(np.int64 if x.dtype.kind in "iu" else np.float64) for x in actual)
    box_tol = RELATIVE_TOLERANCE * max(1.0, float(np.abs(exp[0]).max(initial=0.0)))
    score_tol = RELATIVE_TOLERANCE * max(1.0, float(np.abs(exp[1]).max(initial=0.0)))
    pairs, lost, extra = match_detections(exp, act, box_tol, score_tol)
    e_idx = [i for i, _ in pairs]
    a_idx = [j for _, j in pairs]
    box_diff = float(np.abs(exp[0][e_idx] - act[0][a_idx]).max(initial=0.0))
    score_diff = float(np.abs(exp[1][e_idx] - act[1][a_idx]).max(initial=0.0))
    # Two candidates can only change places if their scores differ by less than the two
    # runtimes' scores of one candidate do (floor: float32 rounding of the largest score).
    tie = min(score_tol, max(4 * score_diff, 1e-7 * max(1.0, float(np.abs(exp[1]).max(
        initial=0.0)))))

    def excused(own, i, other, others):
        """Why detection i of `own` may lack a match, or "" (see the docstring)."""
        boxes, scores, labels = own
        if score_threshold is not None and abs(scores[i] - score_threshold) <= tie:
            return "at the score threshold"
        if len(exp[1]) == len(act[1]) and scores[i] <= other[1].min(initial=np.inf) + tie:
            return "at the count cut-off"
        rivals = [j for j in others if other[2][j] == labels[i]
                  and abs(other[1][j] - scores[i]) <= tie
                  and box_iou(boxes[i], other[0][j:j + 1])[0] > NMS_COMPETITOR_IOU]
        return "near-tie NMS swap" if rivals else ""

    unexplained, allowed = [], {}
    for own, other, indices, others, who in ((exp, act, lost, extra, "onnxruntime"),
                                             (act, exp, extra, lost, "nxrt")):
        for i in indices:
            why = excused(own, i, other, others)
            if why:
                allowed[why] = allowed.get(why, 0) + 1
            else:
                unexplained.append(f"{who}'s label {own[2][i]} score {own[1][i]:.6g} box "
                                   f"{np.round(own[0][i], 2).tolist()}")
    excused = sum(allowed.values())
    if excused > max(2, 0.02 * len(exp[1])):
        unexplained.insert(0, f"{excused} near-ties are too many to be chance")
    note = ", ".join(f"{n} unmatched: {why}" for why, n in allowed.items())
    checks = [OutputCheck(names[0], True, box_diff, box_tol,
                          note=f"{len(pairs)} of {len(exp[1])} detections matched ({note}; "
                               f"tie margin {tie:.2g})" if note else ""),
              OutputCheck(names[1], True, score_diff, score_tol),
              OutputCheck(names[2], True, 0.0, 0.0)]
    if unexplained:
        checks.append(OutputCheck(
            "detections", False, float("nan"), float("nan"),
            f"{len(lost) + len(extra)} detections without a match ({len(pairs)} matched of "
            f"{len(exp[1])} / {len(act[1])}), e.g. " + "; ".join(unexplained[:3])))
    return checks


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


def parse_reference_primitives(stdout):
    """{EP: count} from nxrt's "reference primitives: CPU=0" line, or None without one."""
    match = NXRT_REFERENCE_RE.search(stdout)
    if not match:
        return None
    counts = {}
    for item in match.group(1).split():
        key, _, value = item.partition("=")
        counts[key] = int(value) if value.isdigit() else -1  # unreadable: counts as a failure
    return counts


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
    """Runs the nxrt command line. Returns (seconds, its stdout, error text or "")."""
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
        return time.perf_counter() - start, "", f"timed out after {timeout} s"
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no output)").splitlines()
        return elapsed, "", f"nxrt exit status {proc.returncode}: " + " | ".join(lines[-3:])
    return elapsed, proc.stdout, ""


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

    sidecar = model_inputs.read_sidecar(model_path) or {}
    thread_counts = args.nxrt_threads or [args.threads]
    for threads in thread_counts:
        label = f"{threads} threads: " if args.nxrt_threads else ""
        nxrt_dir = os.path.join(work, f"nxrt-{threads}" if args.nxrt_threads else "nxrt")
        result.nxrt_s, stdout, error = run_nxrt(args.nxrt, model_path, input_paths, nxrt_dir,
                                                threads, args.timeout)
        if error:
            result.detail = label + error
            result.checks = []
            return result
        result.nxrt_times = parse_time_line(stdout)
        checks = check_outputs(expected, nxrt_dir, sidecar.get("detections"),
                               model_inputs.relative_tolerance(result.name))
        references = parse_reference_primitives(stdout)
        if references is not None:
            result.reference_primitives = {
                ep: max(n, (result.reference_primitives or {}).get(ep, 0))
                for ep, n in references.items()}
            if any(n != 0 for n in references.values()):
                counts = " ".join(f"{ep}={n}" for ep, n in references.items())
                checks.append(OutputCheck("reference primitives", False, float("nan"),
                                          float("nan"), f"{counts} (must be 0)"))
        for check in checks:
            check.name = label + check.name
        result.checks += checks
    result.status = "PASS" if all(c.ok for c in result.checks) else "FAIL"
    failed = [c for c in result.checks if not c.ok]
    result.detail = "; ".join(
        [f"{c.name}: {c.problem or f'max diff {c.max_abs_diff:.3g} > tol {c.tolerance:.3g}'}"
         for c in failed] + [f"{c.name}: {c.note}" for c in result.checks if c.note])
    return result


def check_outputs(expected, nxrt_dir, detections=None, relative_tolerance=RELATIVE_TOLERANCE):
    """Compares every onnxruntime output with the file nxrt wrote into nxrt_dir; the outputs a
    detector's sidecar names in `detections` are matched detection by detection."""
    checks, actual = [], {}
    group = [detections[k] for k in ("boxes", "scores", "labels")] if detections else []
    for out_name, ref in expected.items():
        path = os.path.join(nxrt_dir, model_inputs.sanitise_name(out_name) + ".npy")
        if not os.path.exists(path):
            checks.append(OutputCheck(out_name, False, float("nan"), float("nan"),
                                      f"nxrt wrote no {os.path.basename(path)}"))
            continue
        try:
            value = np.load(path, allow_pickle=False)
        except Exception as exc:
            checks.append(OutputCheck(out_name, False, float("nan"), float("nan"),
                                      f"unreadable {path}: {exc}"))
            continue
        if out_name in group:
            actual[out_name] = value
        else:
            checks.append(compare_output(out_name, ref, value, relative_tolerance))
    if group and len(actual) == len(group):
        checks += compare_detections(group, [expected[n] for n in group],
                                     [actual[n] for n in group],
                                     detections.get("score_threshold"))
    return checks


# --------------------------------------------------------------------------------------------
# Reporting and driver
# --------------------------------------------------------------------------------------------

def format_line(result, width=20):
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
    if result.reference_primitives is not None:
        timing += "; reference primitives " + " ".join(
            f"{ep}={n}" for ep, n in result.reference_primitives.items())
    line = (f"{result.name:<{width}} max_abs_diff {diff:>9}  tol {tol:>8}  {result.status:<4}"
            f"  {timing}")
    if result.detail:
        line += f"\n    {result.detail}"
    return line


def list_models(models_dir, only, zoo=False):
    """Known models (of the zoo with `zoo`; else the bench's, then the other wheel models) in
    their fixed order, then any other .onnx files in the folder."""
    names = (model_inputs.zoo_model_names() if zoo
             else model_inputs.known_model_names() + model_inputs.wheel_model_names())
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
    parser.add_argument("--zoo", action="store_true",
                        help="the known models are the zoo's (tools/scripts/export_zoo_models.py)"
                             "; the defaults become --models build/zoo --work-dir "
                             "build/zoo_comparison")
    parser.add_argument("--nxrt", default=os.path.join("build", "bin", "nxrt"),
                        help="nxrt executable (default: build/bin/nxrt)")
    parser.add_argument("--models",
                        help="folder with the .onnx files (default: build/models)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this model (file name without .onnx); repeatable")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads for nxrt (--threads) and onnxruntime; default: their own")
    parser.add_argument("--nxrt-threads", type=int, nargs="+", metavar="N",
                        help="run nxrt once per thread count, each compared with onnxruntime")
    parser.add_argument("--work-dir",
                        help="where inputs and outputs are written (default: "
                             "build/model_comparison)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed for one nxrt run (default: 600)")
    parser.add_argument("--ort-only", action="store_true",
                        help="do not run nxrt; only write inputs and onnxruntime outputs")
    args = parser.parse_args(argv)
    args.models = args.models or os.path.join("build", "zoo" if args.zoo else "models")
    args.work_dir = args.work_dir or os.path.join(
        "build", "zoo_comparison" if args.zoo else "model_comparison")
    return args


def main(argv=None):
    args = parse_args(argv)
    if not args.ort_only and not os.access(args.nxrt, os.X_OK):
        print(f"error: nxrt executable not found at {args.nxrt} (use --nxrt, or --ort-only)",
              file=sys.stderr)
        return 2
    args.nxrt = os.path.abspath(args.nxrt)
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    print(f"comparing nxrt with onnxruntime {ort.__version__}: "
          f"PASS iff max|diff| <= {RELATIVE_TOLERANCE:g} * max(1, max|onnxruntime|) "
          f"(a few models: model_inputs.RELATIVE_TOLERANCE_OVERRIDES)", flush=True)
    start, unreported = time.perf_counter(), []
    names = list_models(args.models, args.only, args.zoo)
    for name in names:
        path = os.path.join(args.models, name + ".onnx")
        if not os.path.exists(path):
            result = ModelResult(name, "SKIP", detail=f"{path} not found")
        else:
            result = compare_model(path, args)
        if result.status != "SKIP" and result.checks and result.reference_primitives is None:
            unreported.append(name)
        counts[result.status] += 1
        print(format_line(result, max([20] + [len(n) for n in names])), flush=True)
    if unreported:
        print(f"note: nxrt printed no 'reference primitives:' line for {len(unreported)} models,"
              " so their count of oneDNN reference primitives was not checked")
    print(f"took {time.perf_counter() - start:.0f} s")
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
