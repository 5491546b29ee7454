#!/usr/bin/env python3
"""`nxrt compile` end to end, each step in its own process: compile a model for a virtual NPU of
an arch this machine does not have (ExampleCompiler), read the written model with the onnx
package (EPContext nodes, compatibility metadata, onnx.checker), show it with `nxrt info`, run it
in a new process that creates that virtual NPU and compare with onnxruntime on the original
model, for embedded and external payloads; a run on an NPU of another arch must fail with a
clear message, or, compiled with --keep-original, run the original nodes."""

import argparse
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper


def make_model(path: pathlib.Path) -> None:
    """Two groups ExampleCompiler compiles (split by Softmax, which it does not), and a constant."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    half = numpy_helper.from_array(np.array([0.5], np.float32), "half")
    nodes = [
        helper.make_node("Add", ["x", "x"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "half"], ["m"], name="scale"),
        helper.make_node("Softmax", ["m"], ["s"], name="softmax"),
        helper.make_node("Tanh", ["s"], ["t"], name="tanh"),
        helper.make_node("Sub", ["t", "s"], ["y"], name="sub"),
    ]
    graph = helper.make_graph(nodes, "aot", [x], [y], [half])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def run(cmd, expect_ok=True):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if expect_ok and proc.returncode != 0:
        raise SystemExit(f"FAILED: {' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}")
    return proc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    args = ap.parse_args()
    build = pathlib.Path(args.build_dir).resolve()
    nxrt = build / "bin" / "nxrt"
    lib = build / "lib" / "libnxrt_ep_example_compiler.so"
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        model = tmp / "model.onnx"
        make_model(model)
        x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
        np.save(tmp / "x.npy", x)
        want = onnxruntime.InferenceSession(str(model)).run(None, {"x": x})[0]
        npu = ["--ep-library", lib, "--virtual", "npu:arch=a7", "--ep", "ExampleCompiler"]
        for mode in ("--embed", "--external"):
            out = tmp / f"compiled{mode.replace('--', '_')}.onnx"
            proc = run([nxrt, "compile", model, "-o", out, mode] + npu)
            lines = proc.stdout.strip().splitlines()
            groups = [ln for ln in lines if ln.startswith("group ")]
            checks = {
                "two progress lines": len(groups) == 2,
                "summary line": "2 groups saved as EPContext nodes" in lines[-1],
            }
            m = onnx.load(str(out), load_external_data=False)
            onnx.checker.check_model(m)
            ops = [n.op_type for n in m.graph.node]
            ctx = [n for n in m.graph.node if n.op_type == "EPContext"]
            attrs = [{a.name: helper.get_attribute_value(a) for a in n.attribute} for n in ctx]
            meta = {p.key: p.value for p in m.metadata_props}
            checks.update({
                "EPContext x2 + Softmax": sorted(ops) == ["EPContext", "EPContext", "Softmax"],
                "com.microsoft domain": all(n.domain == "com.microsoft" for n in ctx),
                "source": all(a["source"] == b"ExampleCompiler" for a in attrs),
                "embed_mode": all(a["embed_mode"] == (1 if mode == "--embed" else 0)
                                  for a in attrs),
                "original node names": any(b"add, relu, scale" in a["notes"] for a in attrs),
                "compatibility metadata": meta.get("ep_compatibility_info.ExampleCompiler")
                == "ExampleCompiler;version=1;format=nxc1;arch=a7",
            })
            if mode == "--external":
                checks["payload files"] = all(
                    (tmp / a["ep_cache_context"].decode()).is_file() for a in attrs)
            info = run([nxrt, "info", out]).stdout
            checks["nxrt info"] = "compiled groups (2 EPContext nodes)" in info and \
                "arch=a7" in info
            outdir = tmp / f"out{mode}"
            proc = run([nxrt, "run", out, "--input", f"x={tmp / 'x.npy'}", "--output-dir",
                        outdir] + npu)
            got = np.load(outdir / "y.npy")
            checks["outputs match onnxruntime"] = bool(np.allclose(got, want, atol=1e-6))
            other = ["--ep-library", lib, "--virtual", "npu:arch=b1", "--ep", "ExampleCompiler"]
            proc = run([nxrt, "run", out] + other, expect_ok=False)
            checks["another arch refused"] = proc.returncode != 0 and \
                "needs recompilation" in proc.stderr
            # Kept original nodes: the other arch runs them instead, with a warning.
            kept = tmp / f"kept{mode.replace('--', '_')}.onnx"
            run([nxrt, "compile", model, "-o", kept, mode, "--keep-original"] + npu)
            onnx.checker.check_model(onnx.load(str(kept), load_external_data=False))
            outdir = tmp / f"kept_out{mode}"
            proc = run([nxrt, "run", kept, "--input", f"x={tmp / 'x.npy'}", "--output-dir",
                        outdir] + other, expect_ok=False)
            checks["kept nodes run on another arch"] = proc.returncode == 0 and \
                "original nodes instead" in proc.stderr and \
                bool(np.allclose(np.load(outdir / "y.npy"), want, atol=1e-6))
            for name, ok in checks.items():
                print(f"{'ok  ' if ok else 'FAIL'} {mode[2:]:8} {name}")
                failures += 0 if ok else 1
    print(f"{'passed' if failures == 0 else f'{failures} checks failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
