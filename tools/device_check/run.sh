#!/usr/bin/env bash
# Runs on the other machine, from the checkout's root, what tools/device_check/pack.sh packed:
#   1. the CPU it is (lscpu) and what nxrt discovers;
#   2. the 8-bit GEMM tests one by one (Int8Gemm*), each under the crash reporter, and the
#      GEMM's speed per micro-kernel (nxrt_bench_int8_gemm: GMAC/s on BERT's shapes);
#   3. the whole unit-test binary (gtest brief: failures only);
#   4. per int8 model, nxrt run with ep.cpu.amx=0 and =1 (time, reference primitives) and a
#      per-op profile of each;
#   5. bench/bench_vs_onnxruntime.py on every model (--openvino when it was packed);
#   6. bench/zoo.py on the zoo when it was packed (pack.sh --zoo).
# Everything goes to stdout and $OUT/log.txt ($OUT defaults to /tmp/device_check_out); steps
# have their own time limits so that one stuck step cannot use up the lease:
#   UNIT_LIMIT (s, default 150), BENCH_LIMIT (default 240), BENCH_ARGS (default
#   "--threads 1 2 --rounds 2 --repeat 10"), ZOO_LIMIT (default 300), ZOO_ARGS (default
#   "--threads 1 2 --rounds 1 --runs 5").
root=$PWD
out=${OUT:-/tmp/device_check_out}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
start=$(date +%s)
step() { echo "## t=$(($(date +%s) - start))s $*"; }
pack=.device_check

step cpu
lscpu | grep -E "Model name|^CPU\(s\)|Thread|L2|L3"
lscpu | grep Flags | tr ' ' '\n' | grep -E "avx512|amx|vnni" | tr '\n' ' '
echo
tar -xJf "$pack/nxrt.tar.xz"
# The unit tests look for the EP libraries under the build path they were compiled with.
build_root=$(cat build_root)
if [[ $build_root != "$root" && ! -e $build_root ]]; then
  mkdir -p "$(dirname "$build_root")" && ln -s "$root" "$build_root"
fi
export LD_LIBRARY_PATH=$root/syslib
crash=$root/crash_report.so
site=/tmp/device_check_site
mkdir -p "$site"
[[ -f $pack/openvino.tar.xz ]] && { tar -xJf "$pack/openvino.tar.xz" -C "$site" & }
ov_pid=$!
(python3 tools/device_check/model_skeleton.py fill "$pack/models" models > /dev/null
 [[ -d $pack/zoo ]] && python3 tools/device_check/model_skeleton.py fill "$pack/zoo" zoo > /dev/null) &
fill_pid=$!
build/bin/nxrt devices | head -9

step int8-gemm-tests
for t in $(build/bin/nxrt_unit_tests --gtest_list_tests --gtest_filter='Int8Gemm*' |
           awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
  echo "-- $t"
  timeout 60 env LD_PRELOAD="$crash" build/bin/nxrt_unit_tests --gtest_filter="$t" 2>&1 |
    grep -E "^\[  (PASSED|FAILED|SKIPPED)|CRASH|  rip|  bt|Failure|Expected|Which|nxrt CPU EP" | head -24
done

step int8-gemm-bench
timeout 60 env LD_PRELOAD="$crash" build/bin/nxrt_bench_int8_gemm --runs 10

step unit-tests
timeout "${UNIT_LIMIT:-150}" env LD_PRELOAD="$crash" build/bin/nxrt_unit_tests --gtest_brief=1 \
  > "$out/unit.txt" 2>&1
echo "unit tests: exit status $?"
grep -E "^\[  FAILED|CRASH|  rip|  bt|tests from.*ran|^\[  (PASSED|SKIPPED)" "$out/unit.txt" | head -40

wait "$fill_pid"
[[ -f $pack/openvino.tar.xz ]] && wait "$ov_pid"
export PYTHONPATH=$site PYTHONUNBUFFERED=1

step int8-models
for model in models/*.onnx; do
  grep -q -E "int8|Integer|QLinear|DynamicQuantize" <<<"$(python3 -c "
import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False)
print(' '.join({n.op_type for n in m.graph.node}), sys.argv[1])" "$model")" || continue
  for amx in 0 1; do
    echo "-- $model amx=$amx"
    timeout 60 env LD_PRELOAD="$crash" build/bin/nxrt run "$model" --threads 1 --repeat 10 \
      --ep "CPU:amx=$amx" --profile "/tmp/profile_$amx.json" 2>&1 |
      grep -E "^time|reference primitives|rror|CRASH|  rip|  bt|nxrt CPU EP" | head -12
    [[ -f /tmp/profile_$amx.json ]] && python3 tools/device_check/profile_summary.py \
      "/tmp/profile_$amx.json" --top 8
    rm -f "/tmp/profile_$amx.json"
  done
done

step bench
openvino=()
python3 -c "import openvino" 2>/dev/null && openvino=(--openvino)
names=()
for model in models/*.onnx; do names+=("$(basename "$model" .onnx)"); done
# shellcheck disable=SC2086
timeout "${BENCH_LIMIT:-240}" python3 bench/bench_vs_onnxruntime.py --models-dir models \
  --models "${names[@]}" ${BENCH_ARGS:---threads 1 2 --rounds 2 --repeat 10} --no-create \
  "${openvino[@]}" --json "$out/bench.json" 2>&1 | grep -v "W:onnxruntime"

if [[ -d zoo ]]; then
  step zoo
  # shellcheck disable=SC2086
  timeout "${ZOO_LIMIT:-300}" python3 bench/zoo.py --zoo-dir zoo --models-dir models \
    ${ZOO_ARGS:---threads 1 2 --rounds 1 --runs 5} "${openvino[@]}" --json "$out/zoo.json" 2>&1 |
    grep -v "W:onnxruntime"
fi
step done
