#!/usr/bin/env python3
"""`nxrt serve`: the CLI hands over to `python -m nxrt.serve` (tools/nxrt/cmd_serve.cc). Checks
that a Python without the package gets the install hint and exit status 2, that `--help` is the
server's own usage, and that a served model answers /v2/health/ready and stops cleanly on
SIGTERM (the signal reaches the server: the CLI exec'd it).

  python3 tests/tools/serve_cli_check.py --build-dir build [--python build/python-venv/bin/python]
The interpreter: --python, else NXRT_PYTHON, else build/python-venv/bin/python where it exists
(tools/test.sh installs the package there), else python3. Where that cannot import nxrt.serve,
the checks needing it are skipped with the reason. Ends with 'N passed, N failed, N skipped'."""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from onnx import TensorProto, helper

results = {"passed": 0, "failed": 0, "skipped": 0}


def report(outcome: str, name: str, detail: str = ""):
    results[outcome] += 1
    print(f"{outcome.upper()}: {name}" + (f": {detail}" if detail else ""), flush=True)


def check(name: str, ok: bool, detail: str = ""):
    report("passed" if ok else "failed", name, "" if ok else detail)


def interpreter(args) -> str:
    if args.python:
        return os.path.abspath(args.python) if os.sep in args.python else args.python
    if os.environ.get("NXRT_PYTHON"):
        return os.environ["NXRT_PYTHON"]
    venv = os.path.join(args.build_dir, "python-venv", "bin", "python")
    return os.path.abspath(venv) if os.path.exists(venv) else "python3"


def serve_unavailable(python: str):
    """None when `python` imports the server, else why not."""
    probe = subprocess.run([python, "-c", "import nxrt.serve.server, uvicorn"],
                           capture_output=True, text=True)
    if probe.returncode == 0:
        return None
    return f"{python} cannot import nxrt.serve: {probe.stderr.strip().splitlines()[-1:]}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_add_model(path: str):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def check_missing_package(nxrt: str):
    env = dict(os.environ, NXRT_PYTHON="/nonexistent/python3")
    r = subprocess.run([nxrt, "serve", "model.onnx"], capture_output=True, text=True, env=env)
    check("no Python: exit status 2", r.returncode == 2, f"got {r.returncode}: {r.stderr}")
    check("no Python: the install hint", "nxrt serve needs the nxrt Python package" in r.stderr,
          r.stderr)


def check_help(nxrt: str, env: dict):
    r = subprocess.run([nxrt, "serve", "--help"], capture_output=True, text=True, env=env)
    check("serve --help: exit status 0", r.returncode == 0, f"got {r.returncode}: {r.stderr}")
    check("serve --help: the server's usage", "--max-batch" in r.stdout and "--ray" in r.stdout,
          r.stdout[:400])
    r = subprocess.run([nxrt, "serve"], capture_output=True, text=True, env=env)
    check("serve without a model: usage error, exit status 2",
          r.returncode == 2 and "usage" in r.stderr, f"got {r.returncode}: {r.stderr}")


def check_serving(nxrt: str, env: dict, work: str):
    model = os.path.join(work, "twice.onnx")
    write_add_model(model)
    port = free_port()
    log_path = os.path.join(work, "serve.log")
    with open(log_path, "w") as log:
        server = subprocess.Popen([nxrt, "serve", model, "--port", str(port), "--grpc-port",
                                   "-1", "--threads", "1"], stdout=log, stderr=subprocess.STDOUT,
                                  env=env)
    ready, deadline = False, time.monotonic() + 60
    try:
        while not ready and time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready",
                                            timeout=5) as r:
                    ready = r.status == 200
            except OSError:
                time.sleep(0.3)
        check("serve MODEL: /v2/health/ready answers 200", ready, open(log_path).read())
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            code = "killed after 30 s"
    # uvicorn re-raises the SIGTERM it handled once it has shut down gracefully: the status
    # is the signal's, as the server's own (python -m nxrt.serve) would be.
    log = open(log_path).read()
    check("serve MODEL: SIGTERM reaches the server, which stops cleanly",
          code in (0, -signal.SIGTERM) and "nxrt.serve: stopped" in log, f"got {code}: {log}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--python", help="the interpreter nxrt serve runs (NXRT_PYTHON)")
    p.add_argument("--nxrt", help="the nxrt binary (default BUILD_DIR/bin/nxrt)")
    args = p.parse_args()
    nxrt = os.path.abspath(args.nxrt or os.path.join(args.build_dir, "bin", "nxrt"))
    if not os.path.exists(nxrt):
        print(f"FAIL: no nxrt binary at {nxrt}: build it first (tools/build.sh)")
        return 1
    check_missing_package(nxrt)
    python = interpreter(args)
    env = dict(os.environ, NXRT_PYTHON=python)
    reason = serve_unavailable(python)
    if reason is not None:
        report("skipped", "serve --help and serving a model", reason)
    else:
        check_help(nxrt, env)
        with tempfile.TemporaryDirectory() as work:
            check_serving(nxrt, env, work)
    print(f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
