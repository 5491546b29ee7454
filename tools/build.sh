#!/usr/bin/env bash
# Configures and builds nxrt into build/ (or $NXRT_BUILD_DIR). Extra arguments go to CMake.
# Uses ccache when it is installed (tools/install_deps.sh installs it): rebuilds of a fresh
# clone on the same machine (CI) then take seconds for unchanged files.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${NXRT_BUILD_DIR:-build}"
launcher=()
if command -v ccache >/dev/null; then
  # Paths below the repository are hashed relative to it, so clones in other folders share hits.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
  # Builds with debug info (the sanitizer tree) would otherwise hash the working directory too
  # (ccache's hash_dir): a clone in another folder, as CI makes, then missed every object. The
  # price: a hit's debug info names the folder of the clone that compiled it first.
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${NXRT_BUILD_TYPE:-Release}" "${launcher[@]}" "$@" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
