#!/usr/bin/env python3
"""Profiles a model with `nxrt run --profile` and checks the Chrome trace it writes:

1. the file validates against tests/models/chrome_trace.schema.json (the `jsonschema` package);
2. `nxrt run` reports the number of complete events the file holds;
3. the session events load, partition and create_kernels are there;
4. every run has the same node events, each inside its run event;
5. per run, the durations of the main graph's node and copy events add up to within
   --tolerance (10%) of the run event's duration, and over the timed runs to within the same
   tolerance of the mean run time `nxrt run` measured itself.

It prints the numbers: per-run ratio (node + copy time / run event), the comparison with the CLI's
wall time, and the five op types that took the most time.

Usage: profile_check.py --build-dir build --model build/models/resnet50.onnx [--repeat N]
                        [--threads N] [--tolerance 0.1] [--keep FILE]
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "chrome_trace.schema.json")


def run_cli(nxrt, model, profile, repeat, threads):
    cmd = [nxrt, "run", model, "--repeat", str(repeat), "--profile", profile]
    if threads:
        cmd += ["--threads", str(threads)]
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("nxrt run failed (%d):\n%s%s" % (proc.returncode, proc.stdout, proc.stderr))
    return proc.stdout


def parse_cli(out, profile):
    time = re.search(r"^time: runs=(\d+) median_ms=([\d.]+) min_ms=([\d.]+) mean_ms=([\d.]+) "
                     r"first_ms=([\d.]+)", out, re.M)
    if not time:
        sys.exit("no 'time:' line in the output of nxrt run:\n" + out)
    line = re.search(r"^profile: (.*) \((\d+) events\)$", out, re.M)
    if not line:
        sys.exit("no 'profile: FILE (N events)' line in the output of nxrt run:\n" + out)
    if line.group(1) != profile:
        sys.exit("nxrt run names the profile %r, expected %r" % (line.group(1), profile))
    return {"runs": int(time.group(1)), "median_ms": float(time.group(2)),
            "mean_ms": float(time.group(4)), "first_ms": float(time.group(5)),
            "events": int(line.group(2))}


def within(inner, outer, eps=0.0015):
    return (inner["tid"] == outer["tid"] and inner["ts"] + eps >= outer["ts"] and
            inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + eps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--model", required=True)
    ap.add_argument("--repeat", type=int, default=10, help="timed runs (after one warm-up run)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--keep", help="write the profile here (default: a temporary file)")
    args = ap.parse_args()

    nxrt = os.path.join(args.build_dir, "bin", "nxrt")
    with tempfile.TemporaryDirectory() as work:
        profile = args.keep or os.path.join(work, "profile.json")
        out = run_cli(nxrt, args.model, profile, args.repeat, args.threads)
        cli = parse_cli(out, profile)
        with open(profile, encoding="utf-8") as f:
            trace = json.load(f)
    with open(SCHEMA, encoding="utf-8") as f:
        schema = json.load(f)

    failures = []
    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    errors = sorted(validator_cls(schema).iter_errors(trace), key=lambda e: list(e.path))
    for e in errors[:10]:
        failures.append("schema: %s at %s" % (e.message, "/".join(str(p) for p in e.path)))
    if len(errors) > 10:
        failures.append("schema: ... and %d more errors" % (len(errors) - 10))
    print("schema: %s (%s)" % ("valid" if not errors else "%d errors" % len(errors),
                               os.path.relpath(SCHEMA)))
    if errors:
        for f in failures:
            print("FAIL " + f)
        return 1

    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    if cli["events"] != len(events):
        failures.append("nxrt run reports %d events, the file holds %d" % (cli["events"], len(events)))
    names = {e["name"] for e in events if e["cat"] == "session"}
    for step in ("load", "partition", "create_kernels"):
        if step not in names:
            failures.append("no session event '%s'" % step)

    runs = sorted((e for e in events if e["cat"] == "session" and e["name"] == "run"),
                  key=lambda e: int(e["args"]["run"]))
    expected_runs = args.repeat + 1 if args.repeat > 1 else 1
    if len(runs) != expected_runs:
        failures.append("%d run events, expected %d" % (len(runs), expected_runs))
    steps = collections.defaultdict(list)  # run index -> main-graph node and copy events
    for e in events:
        if e["cat"] in ("node", "copy") and "parent" not in e["args"]:
            steps[e["args"]["run"]].append(e)

    print("%4s %12s %12s %8s %6s %6s" % ("run", "run_ms", "nodes_ms", "ratio", "nodes", "copies"))
    node_names = None
    sums = {}
    for r in runs:
        idx = r["args"]["run"]
        mine = steps.get(idx, [])
        total = sum(e["dur"] for e in mine)
        sums[int(idx)] = total
        ratio = total / r["dur"] if r["dur"] > 0 else 0.0
        nodes = sorted(e["name"] for e in mine if e["cat"] == "node")
        copies = sum(1 for e in mine if e["cat"] == "copy")
        print("%4s %12.3f %12.3f %8.4f %6d %6d" % (idx, r["dur"] / 1e3, total / 1e3, ratio,
                                                   len(nodes), copies))
        if not nodes:
            failures.append("run %s has no node events" % idx)
        if node_names is None:
            node_names = nodes
        elif nodes != node_names:
            failures.append("run %s has other node events than run %s" % (idx, runs[0]["args"]["run"]))
        outside = [e["name"] for e in mine if not within(e, r)]
        if outside:
            failures.append("run %s: %d events outside the run event (%s ...)" %
                            (idx, len(outside), outside[0]))
        if abs(ratio - 1.0) > args.tolerance:
            failures.append("run %s: node + copy time is %.1f%% of the run event" % (idx, 100 * ratio))

    # The CLI times the runs after the first one (when --repeat > 1) with its own clock.
    timed = [r for r in runs if int(r["args"]["run"]) > 0] if args.repeat > 1 else runs
    if timed:
        mean_run_ms = sum(r["dur"] for r in timed) / len(timed) / 1e3
        mean_nodes_ms = sum(sums[int(r["args"]["run"])] for r in timed) / len(timed) / 1e3
        wall = cli["mean_ms"] if args.repeat > 1 else cli["first_ms"]
        ratio_nodes = mean_nodes_ms / wall if wall > 0 else 0.0
        ratio_run = mean_run_ms / wall if wall > 0 else 0.0
        print("timed runs: %d; CLI mean %.3f ms; run events mean %.3f ms (%.4f); "
              "node + copy mean %.3f ms (%.4f)" % (len(timed), wall, mean_run_ms, ratio_run,
                                                   mean_nodes_ms, ratio_nodes))
        if abs(ratio_nodes - 1.0) > args.tolerance:
            failures.append("node + copy time is %.1f%% of the run time nxrt run measured" %
                            (100 * ratio_nodes))

    by_op = collections.Counter()
    count = collections.Counter()
    timed_ids = {r["args"]["run"] for r in timed}
    total = 0.0
    for e in events:
        if e["cat"] == "node" and "parent" not in e["args"] and e["args"]["run"] in timed_ids:
            by_op[e["args"]["op_type"]] += e["dur"]
            count[e["args"]["op_type"]] += 1
            total += e["dur"]
    print("top ops by time (timed runs):")
    for op, us in by_op.most_common(5):
        print("  %-24s %10.3f ms/run %6.1f%%  (%d nodes/run)" %
              (op, us / 1e3 / max(len(timed), 1), 100 * us / total if total else 0,
               count[op] // max(len(timed), 1)))

    for f in failures:
        print("FAIL " + f)
    print("profile check: %s (%d events, %d runs)" % ("FAILED" if failures else "passed",
                                                     len(events), len(runs)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
