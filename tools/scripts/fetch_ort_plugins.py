#!/usr/bin/env python3
"""Fetches the onnxruntime plugin EP libraries that nxrt's ORT plugin host is tested with.

    fetch_ort_plugins.py [OUT_DIR] [--force]       (OUT_DIR defaults to build/ort_plugins)

Plugins (wheel versions and SHA-256 digests are pinned):

    OUT_DIR/onnxruntime_ep_openvino/libonnxruntime_providers_openvino_plugin.so
        Intel's OpenVINO EP as an onnxruntime plugin, onnxruntime-ep-openvino 1.8.1 (bundles
        OpenVINO and TBB next to the plugin; needs no libonnxruntime)
    OUT_DIR/onnxruntime_ep_webgpu/libonnxruntime_providers_webgpu.so
        Microsoft's WebGPU EP as an onnxruntime plugin, onnxruntime-ep-webgpu 0.4.0 (Dawn built
        in; loads the system's Vulkan at run time; a kernel-based plugin, API level 24)

The wheel is downloaded with `python -m pip download --no-deps` into a temporary folder, checked
against its pinned digest, and its package folder is extracted to OUT_DIR. A plugin already in
place (a `.complete` marker holding the digest) is not downloaded again.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

PLUGINS = (
    # (project, version, wheel SHA-256, package folder inside the wheel, library in it)
    ("onnxruntime-ep-openvino", "1.8.1",
     "3832643158c8c187fcab6db661cde2a8c06a2b3559d95d0f2411ac0e51c5e924",
     "onnxruntime_ep_openvino", "libonnxruntime_providers_openvino_plugin.so"),
    ("onnxruntime-ep-webgpu", "0.4.0",
     "5d8c961eda91a88961cad1fb7621f389f006b18497d6ea9ecf96f729f066cbfb",
     "onnxruntime_ep_webgpu", "libonnxruntime_providers_webgpu.so"),
)


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(project, version, sha256, package, out_dir):
    target = os.path.join(out_dir, package)
    marker = os.path.join(target, ".complete")
    if os.path.exists(marker) and open(marker).read().strip() == sha256:
        print(f"  exists: {target}")
        return
    with tempfile.TemporaryDirectory(prefix="nxrt-ort-plugin-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", tmp, f"{project}=={version}"]
        print("  $", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
        if len(wheels) != 1:
            raise RuntimeError(f"expected one wheel, found {wheels}")
        wheel = os.path.join(tmp, wheels[0])
        digest = sha256_of(wheel)
        if digest != sha256:
            raise RuntimeError(f"{wheels[0]}: SHA-256 {digest} does not match pinned {sha256}")
        partial = target + ".part"
        shutil.rmtree(partial, ignore_errors=True)
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if not member.startswith(package + "/") or member.endswith("/"):
                    continue
                dest = os.path.join(partial, member[len(package) + 1:])
                if os.path.commonpath([partial, os.path.realpath(dest)]) != partial:
                    raise RuntimeError(f"{member}: leaves the package folder")
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with zf.open(member) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        with open(os.path.join(partial, ".complete"), "w") as f:
            f.write(sha256 + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    print(f"  wrote {target}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default=os.path.join("build", "ort_plugins"))
    parser.add_argument("--force", action="store_true", help="download and extract again")
    args = parser.parse_args(argv)
    out_dir = os.path.realpath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    for project, version, sha256, package, library in PLUGINS:
        if args.force:
            shutil.rmtree(os.path.join(out_dir, package), ignore_errors=True)
        try:
            fetch(project, version, sha256, package, out_dir)
        except (subprocess.CalledProcessError, RuntimeError, OSError) as exc:
            print(f"ERROR: {project}=={version}: {exc}", file=sys.stderr)
            return 1
        if not os.path.exists(os.path.join(out_dir, package, library)):
            print(f"ERROR: {project}: {library} missing after extraction", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
