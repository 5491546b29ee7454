#!/usr/bin/env python3
"""The model zoo's speed table: nxrt against onnxruntime (CPU), and OpenVINO with --openvino,
on every model of tools/scripts/export_zoo_models.py, batch 1.

    bench/zoo.py [--only NAME ...] [--rounds 3] [--runs 10] [--threads 1 2] [--openvino]
                 [--with-bench-models] [--zoo-dir build/zoo] [--models-dir build/models]
                 [--nxrt build/bin/nxrt] [--json FILE]

Prepare the zoo first (tools/scripts/prepare_zoo_models.sh; with --with-bench-models also
tools/scripts/prepare_test_models.sh). The measurement is bench_vs_onnxruntime.py's
(bench_model): the same inputs for every engine (tests/models/model_inputs.py), nxrt timed by
`nxrt run --repeat RUNS`, onnxruntime and OpenVINO in this process, the engines and thread
counts interleaved in ROUNDS rounds with rotating orders, each latency the median of the
per-round medians. Session creation is not measured here (bench_vs_onnxruntime.py does).

Output: one row per model with, per thread count, nxrt's ms, onnxruntime's ms and the ratio
nxrt / onnxruntime (with --openvino also nxrt / OpenVINO); then one line per failure and the
geo-mean of each ratio column (< 1: nxrt is faster). --with-bench-models adds the models of
bench_vs_onnxruntime.py (build/models) after the zoo's. The exit status is 1 if a model is
missing or nxrt or onnxruntime failed on one (OpenVINO failures are only reported).
"""
import argparse
import json
import os
import sys

import bench_vs_onnxruntime as bvo  # bench/; it puts tests/models on sys.path
import model_inputs  # tests/models/model_inputs.py


def parse_args(argv):
    zoo = model_inputs.zoo_model_names()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="measure only this model (repeatable); default: the whole zoo")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default: 3)")
    parser.add_argument("--runs", type=int, default=10,
                        help="timed runs per engine, thread count and round (default: 10)")
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2],
                        help="thread counts (default: 1 2)")
    parser.add_argument("--openvino", action="store_true",
                        help="add OpenVINO (CPU, f32) as a second reference (pip install "
                             "openvino)")
    parser.add_argument("--with-bench-models", action="store_true",
                        help="also the models of bench_vs_onnxruntime.py and those derived "
                             "from them (int8, fused), from --models-dir")
    parser.add_argument("--zoo-dir", default=os.path.join("build", "zoo"),
                        help="the zoo's .onnx files (default: build/zoo)")
    parser.add_argument("--models-dir", default=os.path.join("build", "models"),
                        help="the bench models' .onnx files (default: build/models)")
    parser.add_argument("--nxrt", default=os.path.join("build", "bin", "nxrt"),
                        help="nxrt executable (default: build/bin/nxrt)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    models = [os.path.join(args.zoo_dir, n + ".onnx") for n in zoo]
    if args.with_bench_models:
        models += [os.path.join(args.models_dir, n + ".onnx")
                   for n in model_inputs.known_model_names()]
        # The int8 and fused models onnxruntime's tools derive from them, where made.
        models += [p for p in (os.path.join(args.models_dir, n + ".onnx")
                               for n in model_inputs.derived_model_names()) if os.path.exists(p)]
    if args.only:
        unknown = set(args.only) - {model_inputs.model_name(m) for m in models}
        if unknown:
            parser.error(f"unknown model(s): {' '.join(sorted(unknown))} (zoo: {' '.join(zoo)})")
        models = [m for m in models if model_inputs.model_name(m) in args.only]
    # bench_vs_onnxruntime's own options carry the measurement settings into bench_model().
    bench_args = bvo.parse_args(
        ["--models", *models, "--nxrt", args.nxrt, "--repeat", str(args.runs),
         "--rounds", str(args.rounds), "--threads", *map(str, args.threads), "--no-create",
         "--work-dir", os.path.join("build", "zoo_bench_inputs")]
        + (["--openvino"] if args.openvino else []))
    return args, bench_args


def columns(threads, with_openvino):
    """(title, width) of each column."""
    out = [("model", 38)]
    for t in threads:
        out += [(f"nxrt ms {t}t", 11), (f"onnxrt ms {t}t", 13), (f"ratio {t}t", 8)]
        if with_openvino:
            out += [(f"vs ov {t}t", 8)]
    return out


def line(cells, cols):
    return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, (_, w)) in enumerate(zip(cells, cols))) + " |"


def model_cells(name, rows, threads, with_openvino):
    by_threads = {row["threads"]: row for row in rows}
    cells = [name]
    for t in threads:
        row = by_threads[t]
        cells += [bvo.fmt(row["nxrt_ms"]), bvo.fmt(row["ort_ms"]), bvo.fmt(row["ratio"])]
        if with_openvino:
            cells.append(bvo.fmt(row["openvino_ratio"]))
    return cells


def main(argv=None):
    args, bench_args = parse_args(argv)
    if not os.access(bench_args.nxrt, os.X_OK):
        print(f"error: nxrt executable not found at {bench_args.nxrt} (use --nxrt)",
              file=sys.stderr)
        return 2
    bench_args.nxrt = os.path.abspath(bench_args.nxrt)
    core, engines = None, f"onnxruntime {bvo.ort.__version__}"
    if args.openvino:
        core, version = bvo.openvino_core()
        if core is None:
            return 2
        engines += f" and OpenVINO {version} (f32)"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"model zoo: nxrt vs {engines}, CPU, batch 1")
    print(f"CPU: {bvo.cpu_description()}; load average {load}")
    print(f"ms: median of {args.rounds} interleaved rounds x {args.runs} runs; ratio = nxrt / "
          "onnxruntime, vs ov = nxrt / OpenVINO (< 1: nxrt is faster)")
    cols = columns(args.threads, core is not None)
    print(line([title for title, _ in cols], cols))
    print("|" + "|".join("-" * (w + 2) for _, w in cols) + "|", flush=True)

    all_rows, notes, failed = [], [], False
    for path in bench_args.models:
        name = model_inputs.model_name(path)
        if not os.path.exists(path):
            print(line([name, f"missing: {path}"], cols[:2]), flush=True)
            notes.append(f"{name}: missing: {path}")
            failed = True
            continue
        try:
            rows, summary = bvo.bench_model(path, bench_args, core)
        except Exception as exc:  # onnxruntime cannot load it, or no inputs for it
            print(line([name, "onnxruntime failed"], cols[:2]), flush=True)
            notes.append(f"{name}: onnxruntime failed: {bvo.describe_error(exc)}")
            failed = True
            continue
        print(line(model_cells(name, rows, args.threads, core is not None), cols), flush=True)
        notes += bvo.format_rows(rows, summary, core is not None)[1]
        failed = failed or any(r["nxrt_error"] or r["ort_error"] for r in rows)
        all_rows += rows

    print("\n".join([""] + notes))
    geo_means = {}
    for key, label in (("ratio", "nxrt/onnxruntime"), ("openvino_ratio", "nxrt/openvino")):
        if key == "openvino_ratio" and core is None:
            continue
        for t in args.threads:
            value, count = bvo.geo_mean([r[key] for r in all_rows if r["threads"] == t])
            geo_means[f"{key}_{t}t"] = {"geo_mean": value, "models": count}
            print(f"geo-mean {label}, {t} thread{'s' if t > 1 else ''}: {bvo.fmt(value)} "
                  f"({count} models)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": all_rows, "geo_means": geo_means, "failures": notes}, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
