#!/usr/bin/env python3
"""Fails when the build used a system file that tools/install_deps.sh does not install.

A clean CI run on a machine where someone once installed a package by hand hides a missing
install step (this happened with OpenCL, which Debian's libdnnl-dev only recommends). After a
build this script collects every system file the build read -- headers (ninja's dependency log),
libraries and CMake files (build.ninja, CMakeCache.txt) -- finds the Debian package that owns
each, and checks that package is one install_deps.sh names or one of their dependencies
(Depends/Pre-Depends, recursively; Recommends do not count, apt does not install them with
--no-install-recommends). A file no package owns (a hand-made install under /usr) fails too.

usage: tools/check_deps.py [BUILD_DIR]
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def listed_packages():
    """Every package name in install_deps.sh's packages=(...) and packages+=(...) arrays."""
    text = open(os.path.join(ROOT, "tools", "install_deps.sh")).read()
    names = set()
    for body in re.findall(r"packages\+?=\(([^)]*)\)", text):
        names.update(body.split())
    if not names:
        sys.exit("check_deps: no package list found in tools/install_deps.sh")
    return names


def essential_packages():
    """Packages every Debian system has (Essential: yes), like coreutils."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Essential}\\n"],
                         capture_output=True, text=True, check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.endswith(" yes")}


def dependency_closure(packages):
    """The packages plus everything they depend on (installed ones), recursively."""
    out = subprocess.run(
        ["apt-cache", "depends", "--recurse", "--installed", "--no-recommends", "--no-suggests",
         "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + sorted(packages),
        capture_output=True, text=True, check=False).stdout
    closure = set(packages)
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"^\|?(?:Pre)?Depends: (\S+)", line)
        name = m.group(1) if m else (line if line and ":" not in line else None)
        if name:
            closure.add(name.strip("<>").split(":")[0])
    return closure


def system_files(build_dir):
    """Absolute paths of files outside the tree that the build read."""
    files = set()
    deps = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], capture_output=True,
                          text=True, check=False).stdout
    for line in deps.splitlines():
        if line.startswith("    /"):
            files.add(line.strip())
    for name in ("build.ninja", "CMakeCache.txt"):
        path = os.path.join(build_dir, name)
        if os.path.exists(path):
            files.update(re.findall(r"(/usr/[^\s;:\"'$]+)", open(path, errors="replace").read()))
    return {f for f in files if f.startswith("/usr/") and os.path.isfile(f)}


def owners(files):
    """file -> owning package (None when no package owns it). Tries the path as given, then the
    resolved path and its merged-/usr twin (/usr/lib/x -> /lib/x), as dpkg records them."""
    def candidates(f):
        real = os.path.realpath(f)
        seen = []
        for c in (f, real):
            for variant in (c, re.sub(r"^/usr(/lib|/bin|/sbin)", r"\1", c)):
                if variant not in seen:
                    seen.append(variant)
        return seen

    result = {f: None for f in files}
    pending = {f: candidates(f) for f in files}
    while pending:
        query = {cands[0]: f for f, cands in pending.items()}
        out = subprocess.run(["dpkg-query", "-S"] + sorted(query), capture_output=True,
                             text=True, check=False).stdout
        for line in out.splitlines():
            if ": " not in line or line.startswith("diversion"):
                continue
            pkgs, path = line.split(": ", 1)
            if path in query:
                result[query[path]] = pkgs.split(",")[0].strip().split(":")[0]
        pending = {f: cands[1:] for f, cands in pending.items()
                   if result[f] is None and len(cands) > 1}
    return result


def main():
    build_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    if not os.path.exists(os.path.join(build_dir, "build.ninja")):
        sys.exit(f"check_deps: {build_dir} is not a configured build folder")
    listed = listed_packages()
    allowed = dependency_closure(listed | essential_packages())
    files = system_files(build_dir)
    owned = owners(files)
    unowned = sorted(f for f, p in owned.items() if p is None)
    missing = {}
    for f, p in owned.items():
        if p is not None and p not in allowed:
            missing.setdefault(p, []).append(f)
    packages = sorted({p for p in owned.values() if p})
    print(f"check_deps: {len(files)} system files from {len(packages)} Debian packages; "
          f"{len(listed)} listed in tools/install_deps.sh, {len(allowed)} with dependencies")
    for p, fs in sorted(missing.items()):
        print(f"MISSING  {p}: not installed by tools/install_deps.sh, but the build read "
              f"{sorted(fs)[0]}" + (f" (+{len(fs) - 1} more)" if len(fs) > 1 else ""))
    for f in unowned:
        print(f"UNOWNED  {f}: no Debian package owns it (installed by hand?)")
    if missing or unowned:
        print("check_deps: add the packages above to tools/install_deps.sh")
        return 1
    print("check_deps: every system file the build read comes from a package install_deps.sh "
          "installs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
