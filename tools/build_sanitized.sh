#!/usr/bin/env bash
# Configures and builds the one instrumented tree CI uses (docs/fuzzing.md): clang with
# AddressSanitizer + UBSan + libFuzzer's coverage (NXRT_FUZZ=ON), unit tests included. The
# sanitizer suites of tools/test.sh and the fuzz smoke (tests/fuzz/run_fuzz_smoke.sh) both run
# from it: two instrumented builds of the whole project cost CI about 25 minutes on a cold cache.
#   tools/build_sanitized.sh BUILD_DIR [TARGET...]      (no target: everything)
# -O1 and line tables only (OSS-Fuzz's choice): instrumented templates compile about twice as
# fast as at -O2 -g, and reports still carry file:line frames.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:?usage: build_sanitized.sh BUILD_DIR [TARGET...]}"
shift
launcher=()
if command -v ccache >/dev/null; then  # as tools/build.sh: CI's fresh clone hits the cache
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
  export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"  # debug info: see tools/build.sh
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNXRT_FUZZ=ON -DNXRT_BUILD_TESTS=ON \
  ${CMAKE_ARGS:-} >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
