#!/usr/bin/env python3
"""`nxrt certify` end to end: the conformance kit passes the example EPs (SimDevice with device
memory and loop/scan helpers, ExampleCompiler compiling for a virtual NPU, ExampleNpu) with every
area that applies to them actually exercised, writes JSON and HTML reports that agree with the
printed table, and fails (exit status 1) an EP whose kernels misbehave, a library that does not
load, and a library whose EP claims nodes it cannot run (the frozen version-1 EP: no
broadcasting); an onnxruntime plugin EP library goes through the ORT adapter."""

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

AREAS = ["abi", "ops", "copies", "control-flow", "prepack", "threads", "streams", "compile",
         "release"]
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped$")


def certify(nxrt, *args):
    proc = subprocess.run([str(nxrt), "certify", *map(str, args)], capture_output=True, text=True,
                          timeout=1200)
    return proc.returncode, proc.stdout, proc.stderr


def table(stdout):
    """area -> (passed, failed, skipped) from the printed table."""
    rows = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] in AREAS and all(p.isdigit() for p in parts[1:4]):
            rows[parts[0]] = tuple(int(p) for p in parts[1:4])
    return rows


class Checker:
    def __init__(self):
        self.failures = 0

    def expect(self, ok, what, context=""):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures += 1
            if context:
                print(context[-4000:])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    args = ap.parse_args()
    build = pathlib.Path(args.build_dir).resolve()
    nxrt = build / "bin" / "nxrt"
    lib = build / "lib"
    c = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)

        # SimDevice: device memory, data transfer, loop/scan helpers, a packing MatMul.
        report = tmp / "sim.json"
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_ep_sim_device.so",
                               "--ep", "SimDevice", "--report", report)
        last = out.strip().splitlines()[-1] if out.strip() else ""
        m = SUMMARY.match(last)
        rows = table(out)
        c.expect(rc == 0 and m and m.group(2) == "0", "SimDevice certifies (exit 0, 0 failed)",
                 out + err)
        c.expect(sorted(rows) == sorted(AREAS), "the table lists every area", out)
        c.expect(rows.get("ops", (0,))[0] >= 100, "SimDevice: >= 100 node tests on the EP passed", out)
        c.expect(rows.get("copies", (0,))[0] >= 9, "SimDevice: copies in and out of its memory", out)
        c.expect(rows.get("control-flow", (0,))[0] == 5, "SimDevice: If, Loop, Scan bodies on it", out)
        c.expect(rows.get("prepack", (0,))[0] >= 1, "SimDevice: constant weights packed", out)
        c.expect(rows.get("threads", (0,))[0] >= 2, "SimDevice: concurrent runs", out)
        c.expect(rows.get("release", (0,))[0] == 3, "SimDevice: memory returned, registers again", out)
        c.expect(rows.get("streams") == (0, 0, 1), "SimDevice synchronous: streams skipped", out)
        data = json.loads(report.read_text())
        c.expect(data["ep"] == "SimDevice" and data["abi_version"] >= 1, "JSON report: EP and ABI version")
        c.expect(m and (data["passed"], data["failed"], data["skipped"]) ==
                 tuple(int(g) for g in m.groups()), "JSON totals equal the printed summary")
        c.expect(all(tuple(a[k] for k in ("passed", "failed", "skipped")) == rows.get(a["area"])
                     for a in data["areas"]), "JSON per-area counts equal the printed table")
        c.expect(len(data["checks"]) == sum(data[k] for k in ("passed", "failed", "skipped")) and
                 all(ch["status"] in ("passed", "failed", "skipped") for ch in data["checks"]),
                 "JSON lists every check with its status")

        # SimDevice asynchronous (ABI 13 streams): queued runs, spans, a run after a failed one.
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_ep_sim_device.so",
                               "--ep", "SimDevice:async=1", "--virtual", "npu:copy_latency_us=100")
        rows = table(out)
        c.expect(rc == 0 and rows.get("streams") == (4, 0, 0),
                 "SimDevice async=1: the streams area passes all 4 checks", out + err)

        # ExampleCompiler on a virtual NPU: compiled groups saved and loaded again.
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_ep_example_compiler.so",
                               "--virtual", "npu:arch=a1")
        rows = table(out)
        c.expect(rc == 0 and SUMMARY.match(out.strip().splitlines()[-1]), "ExampleCompiler certifies",
                 out + err)
        c.expect(rows.get("compile", (0,))[0] >= 5,
                 "ExampleCompiler: compile round trip (embedded, external, compatibility)", out)
        c.expect(rows.get("ops", (0,))[0] >= 50, "ExampleCompiler: node tests of its ops", out)

        # ExampleNpu on a virtual NPU.
        html = tmp / "npu.html"
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_ep_example_npu.so",
                               "--virtual", "npu:arch=nx1", "--report", html)
        c.expect(rc == 0, "ExampleNpu certifies", out + err)
        text = html.read_text() if html.exists() else ""
        c.expect(text.startswith("<!DOCTYPE html>") and "ExampleNpu" in text and
                 all(f'id="{a}"' in text for a in AREAS), "HTML report with a section per area")

        # A misbehaving EP (kernels that fail, give wrong types, allocate twice) must fail.
        html = tmp / "bad.html"
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_test_failing_kernel_ep.so",
                               "--report", html)
        m = SUMMARY.match(out.strip().splitlines()[-1]) if out.strip() else None
        c.expect(rc == 1 and m and int(m.group(2)) > 0, "a misbehaving EP fails certification",
                 out + err)
        c.expect("FAIL [control-flow]" in out and "failed on purpose" in out,
                 "the failures name the check and carry the EP's message", out)
        c.expect('class="failed"' in html.read_text(), "HTML report marks failed checks")

        # An EP that claims what it cannot run (no broadcasting) fails its node tests.
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_ep_frozen_abi_v1.so")
        c.expect(rc == 1 and "FAIL [ops] test_add_bcast" in out,
                 "an EP claiming nodes it cannot run fails the ops area", out + err)

        # An onnxruntime plugin EP library (tests' C plugin) certified through nxrt's ORT
        # adapter: the abi area names the interface and counts the slot calls nxrt lacks (the
        # plugin calls OrtApi::CreateEnv on purpose); its ops run (no broadcasting: some fail).
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_test_ort_ep.so", "--verbose")
        c.expect("PASS [abi] onnxruntime plugin interface" in out and "API level 24" in out,
                 "an onnxruntime plugin is certified through the adapter", out + err)
        c.expect("FAIL [abi] onnxruntime API slots nxrt lacks: 1 calls" in out,
                 "calls to slots nxrt does not implement are counted", out + err)
        c.expect(re.search(r"^PASS \[ops\] test_add\b(?!_)", out, re.M) is not None and
                 "FAIL [ops] test_add_bcast" in out,
                 "the plugin's nodes run through the adapter", out + err)

        # A library that does not exist, and a bad command line.
        rc, out, err = certify(nxrt, "--ep-library", tmp / "missing.so")
        c.expect(rc == 1 and "FAIL [abi] library registers" in out, "a missing library fails",
                 out + err)
        rc, out, err = certify(nxrt)
        c.expect(rc == 2 and "--ep-library" in err, "no --ep-library is a usage error", err)
        rc, out, err = certify(nxrt, "--ep-library", lib / "libnxrt_ep_sim_device.so", "--report",
                               tmp / "r.txt")
        c.expect(rc == 2 and ".json" in err, "a report name without .json/.html is refused", err)

    print(f"certify check: {c.failures} failure(s)")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
