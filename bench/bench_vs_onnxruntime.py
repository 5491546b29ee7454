#!/usr/bin/env python3
"""Latency, session creation time and peak memory of nxrt against onnxruntime (CPU), batch 1,
on the same inputs; optionally OpenVINO (CPU) as a second reference.

    bench_vs_onnxruntime.py [--models NAME ...] [--threads 1 2] [--repeat 20] [--rounds 3]
                            [--nxrt build/bin/nxrt] [--models-dir build/models] [--json FILE]
                            [--ort-only] [--openvino] [--no-create]

--models takes model names (looked up as MODELS_DIR/NAME.onnx) or paths to .onnx files; the
default is every model tests/models/model_inputs.py knows (the 13 of tools/scripts/
prepare_test_models.sh). Inputs are the deterministic ones of model_inputs.py, saved as .npy and
given to every engine.

Latency. nxrt is timed by its own command line, `nxrt run MODEL --input NAME=FILE ... --threads
T --repeat N`, which prints `time: runs=N median_ms=... create_ms=... peak_rss_mb=...`;
onnxruntime is timed in this process with intra_op_num_threads=T and inter_op_num_threads=1
(a few warm-up runs, then N timed runs); with --openvino, OpenVINO compiles the same .onnx for
its CPU device with INFERENCE_NUM_THREADS=T, PERFORMANCE_HINT=LATENCY and
INFERENCE_PRECISION_HINT=f32 (no bf16 downconversion) and is timed like onnxruntime. The
engines and thread counts are interleaved in R rounds (the orders rotate between rounds), so
that noise from other work on the machine hits all of them alike; each engine's latency is the
median of its per-round medians. Model load time is not included.

Session creation and peak memory are measured for nxrt and onnxruntime (onnxruntime's not with
--no-create), each in a fresh process holding one session: nxrt's are the create_ms and peak_rss_mb of the `nxrt run` processes
above (peak_rss_mb is the process's VmHWM); onnxruntime's come from a separate Python process,
run once per round and thread count, that imports numpy and onnxruntime, loads the inputs,
times the InferenceSession construction (same options as above), runs the model 3 times and
reports its VmHWM (/proc/self/status). Both memory figures are whole-process peaks, so the
onnxruntime one includes the Python interpreter, numpy and the onnxruntime module: the header
gives that baseline (the same process with no session). nxrt runs the model --repeat N
times, the onnxruntime process 3 times; neither peak grows by more than 1 MB after the first
run. Per model, create ms is the median over every thread count and round, peak RSS the
largest.

Output: a header (engine versions, CPU model, how each column is measured), then a markdown
table with one row per (model, thread count): latency of each engine and the nxrt /
onnxruntime ratio; the first row of each model also has both create times, their ratio and
both peak RSS figures. After the table: one line per failure, then geo-mean lines of the
latency ratio per thread count, of the create ratio and, with --openvino, of nxrt / OpenVINO
latency per thread count. Ratios below 1 mean nxrt is faster. --json FILE writes everything as
JSON too. The exit status is 1 if a model is missing or nxrt or onnxruntime failed on one
(OpenVINO failures are only reported). Timings under 1 ms move by several percent between
processes.
"""
import argparse
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "models"))
import model_inputs  # noqa: E402  (tests/models/model_inputs.py)

TIME_LINE_RE = re.compile(r"^time:(.*)$", re.MULTILINE)
PROBE_RUNS = 3

# Runs in a fresh interpreter: argv[1] is a JSON object {"model", "inputs", "threads", "runs"};
# without "model" it only reports the memory after the imports. Prints one JSON object.
ORT_PROBE = r"""
import json
import sys
import time


def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0  # kB
    return None


import numpy as np
import onnxruntime as ort

config = json.loads(sys.argv[1])
result = {"import_rss_mb": status_mb("VmRSS"), "import_peak_rss_mb": status_mb("VmHWM")}
if config.get("model"):
    feeds = {name: np.load(path) for name, path in config["inputs"].items()}
    options = ort.SessionOptions()
    options.intra_op_num_threads = config["threads"]
    options.inter_op_num_threads = 1
    start = time.perf_counter()
    session = ort.InferenceSession(config["model"], options, providers=["CPUExecutionProvider"])
    result["create_ms"] = (time.perf_counter() - start) * 1e3
    for _ in range(config["runs"]):
        session.run(None, feeds)
    result["peak_rss_mb"] = status_mb("VmHWM")
print(json.dumps(result))
"""


class EngineError(RuntimeError):
    pass


def resolve_model(spec, models_dir):
    """A model name or a path -> path of the .onnx file."""
    if spec.endswith(".onnx") or os.sep in spec:
        return spec
    return os.path.join(models_dir, spec + ".onnx")


def run_process(cmd, timeout):
    """Runs `cmd`; returns its stdout, or raises EngineError with the tail of its output."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise EngineError(f"timed out after {timeout} s") from exc
    if proc.returncode != 0:
        lines = (proc.stderr.strip() or proc.stdout.strip() or "(no output)").splitlines()
        raise EngineError(f"exit status {proc.returncode}: " + " | ".join(lines[-2:]))
    return proc.stdout


# --------------------------------------------------------------------------------------------
# The engines
# --------------------------------------------------------------------------------------------

def nxrt_measure(nxrt, model_path, input_paths, threads, repeat, timeout):
    """Runs `nxrt run ... --threads T --repeat N` once; returns the {key: float} of its
    `time:` line (median_ms, create_ms, peak_rss_mb, ...)."""
    cmd = [nxrt, "run", model_path]
    for name, path in input_paths.items():
        cmd += ["--input", f"{name}={path}"]
    cmd += ["--threads", str(threads), "--repeat", str(repeat)]
    match = TIME_LINE_RE.search(run_process(cmd, timeout))
    values = {}
    for item in (match.group(1).split() if match else []):
        key, _, value = item.partition("=")
        try:
            values[key] = float(value)
        except ValueError:
            pass
    if "median_ms" not in values:
        raise EngineError("no 'time: ... median_ms=' line in nxrt's output")
    return values


def ort_session(model_path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])


def ort_probe(model_path, input_paths, threads, timeout):
    """onnxruntime's session creation time and peak RSS, from a fresh Python process (see
    ORT_PROBE); without a model, the memory of that process after its imports."""
    config = {"runs": PROBE_RUNS, "threads": threads}
    if model_path:
        config.update(model=model_path, inputs=input_paths)
    out = run_process([sys.executable, "-c", ORT_PROBE, json.dumps(config)], timeout)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise EngineError(f"unreadable probe output: {out.strip()[-200:]!r}") from exc


def openvino_compile(core, model_path, threads):
    config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
              "INFERENCE_PRECISION_HINT": "f32"}
    return core.compile_model(model_path, "CPU", config).create_infer_request()


def median_ms(run, repeat, warmup):
    """Calls run() `warmup` times, then `repeat` timed times; returns the median in ms."""
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


# --------------------------------------------------------------------------------------------
# Measuring one model
# --------------------------------------------------------------------------------------------

def median_or_none(values):
    return statistics.median(values) if values else None


def ratio_or_none(a, b):
    return a / b if a is not None and b else None


def new_row(model_path, threads):
    return {"model": model_inputs.model_name(model_path), "threads": threads,
            "nxrt_rounds_ms": [], "ort_rounds_ms": [], "openvino_rounds_ms": [],
            "nxrt_create_ms": [], "nxrt_peak_rss_mb": [], "ort_create_ms": [],
            "ort_peak_rss_mb": [], "nxrt_error": "", "ort_error": "", "openvino_error": ""}


def measure_engine(engine, row, session, request, feeds, input_paths, model_path, args):
    """One round of one engine at the row's thread count; appends to the row."""
    threads = row["threads"]
    # Let the other engines' worker threads (onnxruntime's spin-wait) go idle.
    time.sleep(args.settle)
    if engine == "ort":
        row["ort_rounds_ms"].append(median_ms(lambda: session.run(None, feeds),
                                              args.repeat, args.warmup))
    elif engine == "openvino" and not row["openvino_error"]:
        try:
            row["openvino_rounds_ms"].append(median_ms(lambda: request.infer(feeds),
                                                       args.repeat, args.warmup))
        except Exception as exc:
            row["openvino_error"] = describe_error(exc)
    elif engine == "ort-probe" and not row["ort_error"]:
        try:
            probe = ort_probe(model_path, input_paths, threads, args.timeout)
            row["ort_create_ms"].append(probe["create_ms"])
            row["ort_peak_rss_mb"].append(probe["peak_rss_mb"])
        except EngineError as exc:
            row["ort_error"] = f"onnxruntime probe: {exc}"
    elif engine == "nxrt" and not args.ort_only and not row["nxrt_error"]:
        try:
            times = nxrt_measure(args.nxrt, model_path, input_paths, threads, args.repeat,
                                 args.timeout)
            row["nxrt_rounds_ms"].append(times["median_ms"])
            if "create_ms" in times:
                row["nxrt_create_ms"].append(times["create_ms"])
            if "peak_rss_mb" in times:  # nxrt builds before peak_rss_mb have none
                row["nxrt_peak_rss_mb"].append(times["peak_rss_mb"])
        except EngineError as exc:
            row["nxrt_error"] = str(exc)


def finish_row(row):
    for engine in ("nxrt", "ort", "openvino"):
        row[f"{engine}_ms"] = median_or_none(row[f"{engine}_rounds_ms"])
    row["ratio"] = ratio_or_none(row["nxrt_ms"], row["ort_ms"])
    row["openvino_ratio"] = ratio_or_none(row["nxrt_ms"], row["openvino_ms"])
    return row


def describe_error(exc, limit=300):
    """One line about an exception: its type and the last line of its message (OpenVINO's
    multi-line messages end with the summary)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def summarise_model(rows):
    """Per-model create time (median over all rows and rounds) and peak RSS (largest)."""
    def collect(key):
        return [v for row in rows for v in row[key]]
    summary = {"model": rows[0]["model"]}
    for engine in ("nxrt", "ort"):
        summary[f"{engine}_create_ms"] = median_or_none(collect(f"{engine}_create_ms"))
        peaks = collect(f"{engine}_peak_rss_mb")
        summary[f"{engine}_peak_rss_mb"] = max(peaks) if peaks else None
    summary["create_ratio"] = ratio_or_none(summary["nxrt_create_ms"], summary["ort_create_ms"])
    return summary


def bench_model(model_path, args, core):
    """Benchmarks one model at every thread count; returns (rows, per-model summary).

    Every round measures every thread count and every engine, the orders rotating between
    rounds: a stretch of time in which the machine is slower (another tenant on the second
    core) then hits both engines and both thread counts alike, and the 1 -> 2 thread speed-up
    compares rounds taken side by side, not minutes apart."""
    name = model_inputs.model_name(model_path)
    rows, sessions, requests = [], [], []
    feeds = input_paths = None
    for threads in args.threads:
        start = time.perf_counter()
        session = ort_session(model_path, threads)
        create_ms = (time.perf_counter() - start) * 1e3
        if feeds is None:  # the same inputs for every engine and thread count
            feeds = model_inputs.build_inputs(model_path, session.get_inputs())
            input_paths = {k: os.path.abspath(v) for k, v in model_inputs.save_inputs(
                feeds, os.path.join(args.work_dir, name)).items()}
        row = new_row(model_path, threads)
        row["ort_create_inprocess_ms"] = create_ms  # this process's nth session: warm
        request = None
        if core is not None:
            try:
                request = openvino_compile(core, model_path, threads)
            except Exception as exc:  # the reference cannot run this model: say so, go on
                row["openvino_error"] = describe_error(exc)
        rows.append(row)
        sessions.append(session)
        requests.append(request)
    engines = (["nxrt", "ort"] + (["ort-probe"] if args.create else [])
               + (["openvino"] if core is not None else []))
    for round_index in range(args.rounds):
        shift = round_index % len(engines)
        for k in range(len(rows)):
            i = (k + round_index) % len(rows)
            for engine in engines[shift:] + engines[:shift]:
                if engine == "openvino" and requests[i] is None:
                    continue
                measure_engine(engine, rows[i], sessions[i], requests[i], feeds, input_paths,
                               model_path, args)
    del sessions, requests  # frees the sessions and compiled models before the next model
    return [finish_row(row) for row in rows], summarise_model(rows)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def table_columns(with_openvino):
    """(title, width) of each column."""
    columns = [("model", 20), ("threads", 7), ("nxrt ms", 10), ("onnxrt ms", 10), ("ratio", 6)]
    if with_openvino:
        columns.append(("openvino ms", 11))
    columns += [("nxrt create ms", 14), ("onnxrt create ms", 16), ("create ratio", 12),
                ("nxrt peak MB", 12), ("onnxrt peak MB", 14)]
    return columns


def table_line(cells, columns):
    out = []
    for (title, width), cell in zip(columns, cells):
        out.append(cell.ljust(width) if title == "model" else cell.rjust(width))
    return "| " + " | ".join(out) + " |"


def format_rows(rows, summary, with_openvino):
    """(table lines of one model, notes on what failed)."""
    columns = table_columns(with_openvino)
    lines, notes = [], []
    for index, row in enumerate(rows):
        cells = [row["model"], str(row["threads"]), fmt(row["nxrt_ms"]), fmt(row["ort_ms"]),
                 fmt(row["ratio"])]
        if with_openvino:
            cells.append(fmt(row["openvino_ms"]))
        if index == 0:
            cells += [fmt(summary["nxrt_create_ms"], 1), fmt(summary["ort_create_ms"], 1),
                      fmt(summary["create_ratio"]), fmt(summary["nxrt_peak_rss_mb"], 0),
                      fmt(summary["ort_peak_rss_mb"], 0)]
        else:
            cells += [""] * 5
        lines.append(table_line(cells, columns))
        for engine in ("nxrt", "ort", "openvino"):
            note = row[f"{engine}_error"]
            if note and (engine, note) not in notes:
                notes.append((engine, note))
    names = {"nxrt": "nxrt", "ort": "onnxruntime", "openvino": "OpenVINO"}
    return lines, [f"{rows[0]['model']}: {names[e]} failed: {note}" for e, note in notes]


def geo_mean(values):
    values = [v for v in values if v is not None and v > 0]
    return (math.exp(sum(math.log(v) for v in values) / len(values)), len(values)) if values \
        else (None, 0)


def geo_mean_lines(rows, summaries, threads, with_openvino):
    results, lines = {}, []

    def add(key, label, values):
        value, count = geo_mean(values)
        results[key] = {"geo_mean": value, "models": count}
        lines.append(f"geo-mean {label}: {fmt(value)} ({count} models)")

    for t in threads:
        plural = "thread" if t == 1 else "threads"
        add(f"latency_ratio_{t}t", f"nxrt/onnxruntime latency ratio, {t} {plural}",
            [r["ratio"] for r in rows if r["threads"] == t])
    add("create_ratio", "nxrt/onnxruntime create ratio",
        [s["create_ratio"] for s in summaries])
    if with_openvino:
        for t in threads:
            plural = "thread" if t == 1 else "threads"
            add(f"openvino_latency_ratio_{t}t", f"nxrt/openvino latency ratio, {t} {plural}",
                [r["openvino_ratio"] for r in rows if r["threads"] == t])
    return lines, results


def cpu_description():
    """CPU model name, logical CPU count and the SIMD extensions that matter for kernels."""
    name, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and name in ("", platform.machine()):
                    name = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
            if f in flags]
    text = f"{name}, {os.cpu_count()} logical CPUs"
    return text + (f", {' '.join(simd)}" if simd else "")


def print_header(args, info):
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    engines = f"onnxruntime {info['onnxruntime']}"
    if info.get("openvino"):
        engines += f" and OpenVINO {info['openvino']}"
    print(f"nxrt vs {engines} (CPU), batch 1")
    print(f"CPU: {info['cpu']}; load average {load}")
    # Thread-runtime settings change nxrt's multi-threaded numbers a lot on a busy machine.
    settings = [f"{k}={os.environ[k]}"
                for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
                if k in os.environ]
    if settings:
        print("environment: " + " ".join(settings))
    print(f"latency: median ms of {args.rounds} interleaved rounds x {args.repeat} runs; "
          "ratio = nxrt / onnxruntime (< 1: nxrt is faster)")
    print("create ms: session creation in a fresh process (nxrt run's create_ms; onnxruntime: "
          "InferenceSession() in a new python), median over thread counts and rounds")
    baseline = info.get("ort_import_peak_rss_mb")
    print("peak MB: whole-process peak RSS (VmHWM), largest over thread counts and rounds; "
          f"nxrt: the nxrt run process; onnxruntime: a python process after creating the "
          f"session and {PROBE_RUNS} runs (python + numpy + onnxruntime imports alone: "
          f"{fmt(baseline, 0)} MB)")
    columns = table_columns(bool(info.get("openvino")))
    print(table_line([title for title, _ in columns], columns))
    print("|" + "|".join("-" * (width + 2) for _, width in columns) + "|", flush=True)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def parse_args(argv):
    default_models = model_inputs.known_model_names()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=default_models,
                        help="model names in --models-dir, or .onnx paths (default: "
                             f"{' '.join(default_models)})")
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
                        help="onnxruntime / OpenVINO warm-up runs per round (default: 3)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds allowed for one nxrt or probe process (default: 600)")
    parser.add_argument("--settle", type=float, default=0.2,
                        help="seconds of pause before each measurement, so that the other "
                             "engines' threads are idle (default: 0.2)")
    parser.add_argument("--work-dir", default=os.path.join("build", "bench_inputs"),
                        help="where the input .npy files are written (default: "
                             "build/bench_inputs)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--no-create", dest="create", action="store_false",
                        help="do not measure onnxruntime's session creation and peak memory "
                             "(its probe process per round and thread count)")
    parser.add_argument("--ort-only", action="store_true", help="do not run nxrt")
    parser.add_argument("--openvino", action="store_true",
                        help="add OpenVINO (CPU) latency as a second reference (needs the "
                             "openvino package)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.rounds < 1 or args.warmup < 0 or min(args.threads) < 1:
        parser.error("--repeat, --rounds and --threads must be >= 1, --warmup >= 0")
    return args



def openvino_core():
    """(openvino.Core(), its version "2026.4.1") for --openvino, or (None, None) after saying
    that the package is missing."""
    try:
        import openvino
    except ImportError:
        print(f"error: --openvino given, but the openvino package is not installed for "
              f"{sys.executable} (pip install openvino)", file=sys.stderr)
        return None, None
    return openvino.Core(), openvino.__version__.split("-")[0]  # 2026.4.1-22982-e213a14-...

def main(argv=None):
    args = parse_args(argv)
    if not args.ort_only:
        if not os.access(args.nxrt, os.X_OK):
            print(f"error: nxrt executable not found at {args.nxrt} (use --nxrt or --ort-only)",
                  file=sys.stderr)
            return 2
        args.nxrt = os.path.abspath(args.nxrt)
    info = {"onnxruntime": ort.__version__, "cpu": cpu_description(), "repeat": args.repeat,
            "rounds": args.rounds, "threads": args.threads}
    core = None
    if args.openvino:
        core, version = openvino_core()
        if core is None:
            return 2
        info["openvino"] = version
    try:
        info["ort_import_peak_rss_mb"] = ort_probe(None, None, 1, args.timeout)[
            "import_peak_rss_mb"]
    except EngineError as exc:
        print(f"warning: onnxruntime memory baseline: {exc}", file=sys.stderr)
    print_header(args, info)

    rows, summaries, notes, failed = [], [], [], False
    for spec in args.models:
        path = resolve_model(spec, args.models_dir)
        name = model_inputs.model_name(path)
        if not os.path.exists(path):
            print(f"| {name:<20} | missing: {path}", flush=True)
            notes.append(f"{name}: missing: {path}")
            failed = True
            continue
        try:
            model_rows, summary = bench_model(path, args, core)
        except Exception as exc:  # onnxruntime cannot load it, or no inputs for it
            print(f"| {name:<20} | onnxruntime failed", flush=True)
            notes.append(f"{name}: onnxruntime failed: {describe_error(exc)}")
            failed = True
            continue
        lines, model_notes = format_rows(model_rows, summary, core is not None)
        print("\n".join(lines), flush=True)
        rows += model_rows
        summaries.append(summary)
        notes += model_notes
        failed = failed or any(r["nxrt_error"] or r["ort_error"] for r in model_rows)
    lines, geo_means = [], {}
    if not args.ort_only:  # every ratio has nxrt's figure on top
        lines, geo_means = geo_mean_lines(rows, summaries, args.threads, core is not None)
    print("\n".join([""] + notes + lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**info, "rows": rows, "models": summaries, "geo_means": geo_means,
                       "failures": notes}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
