#!/usr/bin/env bash
# CI smoke for nxrt_session_fuzzer (docs/fuzzing.md):
#   1. configures and builds the fuzz build (tools/build_sanitized.sh: clang, NXRT_FUZZ=ON, so
#      ASan + UBSan + libFuzzer coverage) into BUILD_DIR;
#   2. replays every file of tests/fuzz/regressions once: none may crash;
#   3. fuzzes for FUZZ_SECONDS (default 60) from the ONNX node-test seed corpus.
# A crash, sanitizer report or leak fails the script. A timeout or out-of-memory fails it only
# if the saved input reproduces it when run again alone: two shared cores make a slow but
# finite model flaky. (The harness bounds every run with a 2 s time limit and a 512 MiB session
# memory limit, so a Loop with a huge trip count ends in a clean error.)
#   tests/fuzz/run_fuzz_smoke.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${1:?usage: run_fuzz_smoke.sh BUILD_DIR}"
seconds="${FUZZ_SECONDS:-60}"

# The instrumented tree CI shares with its sanitizer suites; only the fuzzer and what it loads are
# built here (nothing, when tools/test.sh built the tree already).
tools/build_sanitized.sh "$build_dir" nxrt_session_fuzzer
fuzzer="$build_dir/bin/nxrt_session_fuzzer"

# OpenMP workers and LeakSanitizer's ptrace do not mix in sandboxes (as for tools/test.sh's
# sanitizer suites). A huge allocation requested by a hostile model returns NULL (nxrt reports
# out of memory) instead of aborting; libFuzzer's malloc limit stays above ASan's maximum so
# only real RSS growth counts. intercept_tls_get_addr=0 as in tools/test.sh: LeakSanitizer's
# tracer otherwise dies at exit on a misread dynamic TLS block.
export OMP_NUM_THREADS=1
export ASAN_OPTIONS="detect_leaks=1:intercept_tls_get_addr=0:allocator_may_return_null=1:max_allocation_size_mb=2048:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
limits=(-timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=4096)

echo "== regression corpus (tests/fuzz/regressions)"
if ! "$fuzzer" "${limits[@]}" tests/fuzz/regressions/*; then
  echo "!! a file of tests/fuzz/regressions failed (the report is above): FAIL"
  exit 1
fi

echo "== seed corpus"
python3 tests/fuzz/make_seed_corpus.py "$build_dir/fuzz/seeds"
mkdir -p "$build_dir/fuzz/corpus" "$build_dir/fuzz/artifacts"
rm -f "$build_dir"/fuzz/artifacts/*

echo "== ${seconds} s smoke"
status=0
"$fuzzer" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$build_dir/fuzz/artifacts/" "$build_dir/fuzz/corpus" "$build_dir/fuzz/seeds" ||
  status=$?
((status == 0)) && exit 0

# Decide by the artifact libFuzzer saved: crashes and leaks fail at once; timeouts and OOMs only
# when they come back.
shopt -s nullglob
artifacts=("$build_dir"/fuzz/artifacts/*)
if ((${#artifacts[@]} == 0)); then
  echo "!! the fuzzer failed (exit $status) without saving an input: FAIL"
  exit 1
fi
for a in "${artifacts[@]}"; do
  case "$(basename "$a")" in
    timeout-* | oom-* | slow-unit-*)
      echo "== re-running $a"
      if "$fuzzer" "${limits[@]}" "$a"; then
        echo "!! $(basename "$a") did not reproduce: not counted (see docs/fuzzing.md)"
      else
        echo "!! $(basename "$a") reproduces: FAIL"
        exit 1
      fi
      ;;
    *)
      echo "!! fuzzer found $a: FAIL (reproduce with: $fuzzer $a)"
      # CI's clone is thrown away: the log's tail keeps a small input, to reproduce from.
      if (($(stat -c %s "$a") <= 8192)); then
        echo "!! the input as base64 (base64 -d > crash.onnx):"
        base64 -w 0 "$a"
        echo
      fi
      exit 1
      ;;
  esac
done
exit 0
