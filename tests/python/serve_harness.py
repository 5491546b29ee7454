"""Runs `python -m nxrt.serve` as a subprocess on free loopback ports for the server's tests, and
loads nxrt.serve's modules in process for its unit tests.

Without nxrt's native extension (a source checkout before the build), `import nxrt` fails, and
`python -m nxrt.serve` with it, since Python imports the nxrt package first. The server itself
needs nothing of nxrt when it runs onnxruntime's sessions, so then the subprocess starts through
a bootstrap that registers python/nxrt as a bare package (no __init__) and runs nxrt.serve's
__main__ from it; and the unit tests load python/nxrt/serve under a private package name."""

import importlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import types
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
PACKAGE_DIR = REPO / "python" / "nxrt"


def nxrt_unavailable_reason():
    """None when nxrt (with its native extension) imports here, else why not."""
    try:
        import nxrt
    except ImportError as e:
        return f"nxrt is not importable ({e}); build it (tools/build.sh) to test it"
    if not hasattr(nxrt, "InferenceSession"):
        return "nxrt has no InferenceSession here (its native extension is missing)"
    return None


_BOOTSTRAP = (
    "import runpy, sys, types\n"
    "package = types.ModuleType('nxrt')\n"
    "package.__path__ = [sys.argv.pop(1)]\n"
    "sys.modules['nxrt'] = package\n"
    "sys.argv[0] = 'nxrt.serve'\n"
    "runpy.run_module('nxrt.serve', run_name='__main__', alter_sys=True)\n")


def serve_command() -> list:
    if nxrt_unavailable_reason() is None:
        return [sys.executable, "-m", "nxrt.serve"]
    return [sys.executable, "-c", _BOOTSTRAP, str(PACKAGE_DIR)]


def load_serve_module(name: str):
    """nxrt.serve.<name> for in-process tests, without importing the nxrt package."""
    package = "_nxrt_serve_under_test"
    if package not in sys.modules:
        module = types.ModuleType(package)
        module.__path__ = [str(PACKAGE_DIR / "serve")]
        sys.modules[package] = module
    return importlib.import_module(f"{package}.{name}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    def __init__(self, models: list, args: list, log_path: pathlib.Path):
        self.http_port, self.grpc_port = free_port(), free_port()
        self.url = f"127.0.0.1:{self.http_port}"
        self.grpc_url = f"127.0.0.1:{self.grpc_port}"
        self.log_path = log_path
        command = serve_command() + list(models) + [
            "--host", "127.0.0.1", "--port", str(self.http_port),
            "--grpc-port", str(self.grpc_port)] + list(args)
        self._log = open(log_path, "w")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                        cwd=str(REPO))
        self._wait_ready(timeout_s=90)

    def log(self) -> str:
        return self.log_path.read_text()

    def get(self, path: str):
        """(status, parsed JSON body or raw text) of a GET."""
        try:
            with urllib.request.urlopen(f"http://{self.url}{path}", timeout=10) as r:
                return r.status, _body(r.read())
        except urllib.error.HTTPError as e:
            return e.code, _body(e.read())

    def _wait_ready(self, timeout_s: float):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n"
                                   f"{self.log()}")
            try:
                if self.get("/v2/health/ready")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the server did not get ready in {timeout_s} s:\n{self.log()}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def _body(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
