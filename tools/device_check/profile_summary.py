#!/usr/bin/env python3
"""Summarises an `nxrt run --profile` trace: time per op type and the slowest nodes, per run
(the first run, which includes one-time work, is left out when there are others).

    profile_summary.py TRACE.json [--top N]
"""
import argparse
import collections
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    with open(args.trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    nodes = [e for e in events if e.get("cat") == "node"]
    runs = sorted({e["args"].get("run") for e in nodes})
    if len(runs) > 1:
        nodes = [e for e in nodes if e["args"].get("run") != runs[0]]
        runs = runs[1:]
    per_run = max(1, len(runs))
    by_op = collections.defaultdict(float)
    by_node = collections.defaultdict(float)
    shapes = {}
    for e in nodes:
        by_op[e["args"]["op_type"]] += e["dur"] / per_run
        by_node[(e["name"], e["args"]["op_type"])] += e["dur"] / per_run
        shapes[e["name"]] = e["args"].get("input_shapes", "")
    total = sum(by_op.values()) or 1.0
    print(f"== {args.trace}: {total / 1000:.2f} ms of nodes per run ({per_run} runs)")
    for op, us in sorted(by_op.items(), key=lambda x: -x[1])[: args.top]:
        print(f"  op   {op:26s} {us / 1000:8.3f} ms {100 * us / total:5.1f}%")
    for (name, op), us in sorted(by_node.items(), key=lambda x: -x[1])[: args.top]:
        print(f"  node {op:20s} {us / 1000:8.3f} ms  {name[:56]}  {shapes[name][:60]}")


if __name__ == "__main__":
    main()
