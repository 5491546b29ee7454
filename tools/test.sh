#!/usr/bin/env bash
# Installs what is missing, builds, and runs every nxrt test suite:
#   1. unit tests (GoogleTest via CTest)
#   2. ONNX backend node tests of the pinned onnx wheel, against tests/conformance/onnx_node_pass.txt
#   3. Debian's onnx-1.12 node tests, against tests/conformance/debian_node_pass.txt
#   4. real models (torchvision exports, BERT, LSTM+GRU, PaddleOCR v4 and PP-OCRv6, Silero VAD,
#      Magika, ddddocr, NudeNet (YOLOv8n), openWakeWord,
#      float16 conversions of MobileNetV2 and BERT)
#      compared with onnxruntime (and a zoo of 23 more architectures: classifiers, segmenters,
#      detectors, video, optical flow, a YOLOv8-style detector, speech; none may run a oneDNN
#      reference primitive), and their static types/shapes (nxrt info --values) compared
#      with onnx's shape inference; onnxruntime's com.microsoft transformer and quantized ops,
#      its quantizer's models and an int4 decoder against it; Intel's OpenVINO EP, an onnxruntime
#      plugin from PyPI, hosted by nxrt's ORT plugin adapter
#   5. the Python package: a wheel built with pip, installed into a fresh virtualenv, pytest
#   6. the unit tests and node tests again under AddressSanitizer + UBSan (skip: NXRT_SKIP_SANITIZE=1)
#   7. the session fuzzer (libFuzzer): regression corpus + 60 s smoke (skip: NXRT_SKIP_FUZZ=1)
#   6 and 7 share one clang build with both instrumentations (tools/build_sanitized.sh).
# Exits non-zero if any suite fails. The last line sums up the suites.
set -uo pipefail
cd "$(dirname "$0")/.."

failed_suites=()
passed_suites=()
# Each suite's wall time goes into the summary: CI has a time limit, and the slow suite should be
# visible without timestamps.
run_suite() {
  local name="$1" started=$SECONDS
  shift
  echo
  echo "=============== $name ==============="
  if "$@"; then
    passed_suites+=("$name ($((SECONDS - started)) s)")
  else
    failed_suites+=("$name ($((SECONDS - started)) s)")
    echo "!! suite '$name' FAILED"
  fi
}

set -e
tools/install_deps.sh --torch
build_started=$SECONDS
tools/build.sh
echo "build: $((SECONDS - build_started)) s"
set +e

node_dir=build/testdata/onnx-node
if [[ ! -f $node_dir/.complete ]]; then
  rm -rf "$node_dir"
  python3 tools/scripts/dump_onnx_node_tests.py "$node_dir" && touch "$node_dir/.complete"
fi

# Every system file the build read must come from a package install_deps.sh installs: a package
# someone installed by hand on this machine must not hide a missing install step.
run_suite "build dependencies all installed by tools/install_deps.sh" python3 tools/check_deps.py build
run_suite "src/ layering: no upward include (docs/architecture.md)" python3 tools/scripts/check_layers.py
run_suite "unit tests" ctest --test-dir build --output-on-failure -j 2
run_suite "onnx node tests (onnx $(python3 -c 'import onnx; print(onnx.__version__)'))" \
  build/bin/nxrt conformance "$node_dir" --expect tests/conformance/onnx_node_pass.txt
run_suite "debian onnx-1.12 node tests" \
  build/bin/nxrt conformance /usr/share/libonnx-testdata/data/node --expect tests/conformance/debian_node_pass.txt
run_suite "debian onnx-1.12 pytorch-converted, pytorch-operator, simple tests" \
  build/bin/nxrt conformance /usr/share/libonnx-testdata/data/pytorch-converted \
  /usr/share/libonnx-testdata/data/pytorch-operator /usr/share/libonnx-testdata/data/simple \
  --expect tests/conformance/debian_pytorch_simple_pass.txt
models=""
for m in resnet50 mobilenet_v2 mobilenet_v3_small efficientnet_b0 squeezenet1_1 vit_b_16 transformer_encoder bert4 \
    lstm_gru ppocr_det ppocr_rec ppocr_cls silero_vad magika ddddocr_common bert4_fused \
    mobilenet_v2_fp16 bert4_fp16 ppocrv6_det ppocrv6_rec nudenet_320n oww_melspectrogram oww_embedding; do
  models+=" --only $m"
done
run_suite "plugin ABI history: each frozen header version (tests/plugins/abi_vN) only appends" \
  python3 tests/plugins/abi_history_check.py
run_suite "SimDevice example EP (CLI, mixed placement vs numpy)" \
  python3 eps/examples/sim_device/demo_model.py --build-dir build
run_suite "nxrt compile: ahead of time for a virtual NPU, loaded in new processes" \
  python3 tests/tools/aot_compile_check.py --build-dir build
run_suite "nxrt certify: conformance kit on SimDevice, ExampleCompiler, ExampleNpu (+ failing EPs, an onnxruntime plugin)" \
  python3 tests/tools/certify_check.py --build-dir build
run_suite "real models vs onnxruntime, nxrt at 1, 2 and 8 threads" bash -c \
  "tools/scripts/prepare_test_models.sh build/models && python3 tests/models/run_model_comparison.py --models build/models --nxrt build/bin/nxrt --nxrt-threads 1 2 8 $models"
run_suite "model zoo (23 architectures, random weights) vs onnxruntime, nxrt at 1 and 2 threads" bash -c \
  "tools/scripts/prepare_zoo_models.sh build/zoo && python3 tests/models/run_model_comparison.py --zoo --models build/zoo --nxrt build/bin/nxrt --nxrt-threads 1 2"
run_suite "com.microsoft transformer kernels vs onnxruntime (+ bert4 fused by its optimizer)" \
  python3 tests/eps/cpu/contrib_transformer_check.py --build-dir build
run_suite "com.microsoft quantized kernels vs onnxruntime (+ its quantizer's models, ddddocr's)" \
  python3 tests/eps/cpu/contrib_quantized_check.py --build-dir build
run_suite "QDQ models folded into int8 kernels vs onnxruntime and the float model (+ ResNet-50 int8)" \
  python3 tests/eps/cpu/qdq_check.py --build-dir build --models build/models
run_suite "int4 decoder with a KV cache: greedy generation vs onnxruntime" \
  python3 bench/decoder_tokens.py --model build/models/decoder_int4.onnx --nxrt build/bin/nxrt --check-only
run_suite "shape inference vs onnx" \
  python3 tests/models/shape_inference_check.py --build-dir build --models build/models
run_suite "control flow: seed models (If, Loop, Scan) on the CPU EP" \
  python3 tests/models/control_flow_seed.py --build-dir build
run_suite "control flow: seed models on SimDevice (device memory, device helpers)" \
  python3 tests/models/control_flow_seed.py --build-dir build \
  --ep-library build/lib/libnxrt_ep_sim_device.so --ep SimDevice
run_suite "Silero VAD per frame vs onnxruntime (If, carried state)" \
  python3 tests/models/silero_vad_compare.py --build-dir build --model build/models/silero_vad.onnx
run_suite "nxrt partition: ResNet-50 / Silero VAD tables, DOT, HTML in headless Chromium" \
  python3 tests/tools/partition_html_check.py --build-dir build --models build/models
run_suite "device check: model skeletons round trip (tools/device_check)" \
  python3 tests/tools/model_skeleton_check.py --build-dir build --models build/models
run_suite "profile: ResNet-50 Chrome trace (schema, node durations vs run time)" \
  python3 tests/models/profile_check.py --build-dir build --model build/models/resnet50.onnx
run_suite "onnxruntime plugin EPs: OpenVINO's plugin (PyPI) hosted, its EP devices vs onnxruntime's" bash -c \
  "python3 tools/scripts/fetch_ort_plugins.py build/ort_plugins && python3 tests/ort_plugins/openvino_plugin_check.py --build-dir build --plugin-dir build/ort_plugins"
run_suite "onnxruntime plugin EPs: WebGPU's plugin (PyPI, kernel-based) on Mesa's software Vulkan GPU" bash -c \
  "python3 tools/scripts/fetch_ort_plugins.py build/ort_plugins && python3 tests/ort_plugins/webgpu_plugin_check.py --build-dir build --plugin-dir build/ort_plugins"

# The Python package as a user gets it: a wheel built by pip from the repository (ccache makes
# its second compile of the C++ cheap), installed into a fresh virtualenv, tested with pytest.
python_package() {
  local dist=build/python-dist venv=build/python-venv
  rm -rf "$dist" "$venv"
  CC=cc CXX=c++ CMAKE_GENERATOR=Ninja CMAKE_C_COMPILER_LAUNCHER=ccache \
    CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD" \
    python3 -m pip wheel . --no-deps --no-build-isolation -q -w "$dist" || return 1
  python3 -m venv "$venv" || return 1
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$dist"/nxrt-*.whl \
    -r tools/scripts/requirements.txt || return 1
  (cd tests/python && NXRT_MODELS_DIR="$PWD/../../build/models" \
    NXRT_ORT_PLUGINS_DIR="$PWD/../../build/ort_plugins" \
    "../../$venv/bin/python" -m pytest -q -p no:cacheprovider .)
}
run_suite "python package: wheel in a fresh virtualenv, pytest (tests/python)" python_package
# After the package suite: `nxrt serve` execs the Python server, found in build/python-venv.
run_suite "nxrt serve: the CLI hands over to python -m nxrt.serve (build/python-venv)" \
  python3 tests/tools/serve_cli_check.py --build-dir build --python build/python-venv/bin/python

# One instrumented tree (clang: ASan + UBSan + libFuzzer coverage, tools/build_sanitized.sh) serves
# the sanitizer suites and the fuzz smoke.
sanitized_dir=build-sanitize
if [[ "${NXRT_SKIP_SANITIZE:-0}" != 1 ]]; then
  echo
  echo "=============== sanitizer build (clang: ASan + UBSan + fuzzer coverage) ==============="
  build_started=$SECONDS
  if tools/build_sanitized.sh "$sanitized_dir"; then
    echo "sanitizer build: $((SECONDS - build_started)) s"
    # intercept_tls_get_addr=0: the sanitizer runtimes of GCC 12 and clang 14 guess a dynamic TLS
    # block's bounds from a pre-2.25 glibc header whenever its address is 16 bytes past a page;
    # on newer glibc that reads garbage and LeakSanitizer's tracer dies with SIGSEGV at exit
    # (google/sanitizers#1322) in whichever test the heap layout hits. Blocks stay reachable
    # through the thread's DTV, so leak checking keeps working. allocator_may_return_null=1: a
    # hostile model's terabyte tensor must fail as it does without ASan (malloc returns NULL,
    # nxrt reports out of memory), not abort the test.
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0:allocator_may_return_null=1
    export UBSAN_OPTIONS=print_stacktrace=1
    # LeakSanitizer stops every thread of the process with ptrace at exit; on sandboxed CI
    # machines that fails once OpenMP has started worker threads (oneDNN primitives do so for
    # their reorders even when a kernel runs on one thread). One OpenMP thread keeps leak
    # checking reliable; the threaded paths run in the Release suites above.
    export OMP_NUM_THREADS=1
    run_suite "unit tests (sanitizers)" ctest --test-dir "$sanitized_dir" --output-on-failure -j 2
    # Memory errors abort the run (non-zero exit); pass counts are checked by the Release run.
    run_suite "onnx node tests (sanitizers)" "$sanitized_dir/bin/nxrt" conformance "$node_dir"
    # An EP that keeps a host handle past its lifetime, or a host that hands out a freed one,
    # is a use-after-free here (every certify area touches set-up, runs and release).
    run_suite "nxrt certify SimDevice (sanitizers)" "$sanitized_dir/bin/nxrt" certify \
      --ep-library "$sanitized_dir/lib/libnxrt_ep_sim_device.so" --ep SimDevice --node-tests "$node_dir"
    # The same with streams (plugin ABI 13): SimDevice's worker threads run the queued kernels and
    # copies, and the host frees what they read only after the run synchronised.
    run_suite "nxrt certify SimDevice with streams (sanitizers)" "$sanitized_dir/bin/nxrt" certify \
      --ep-library "$sanitized_dir/lib/libnxrt_ep_sim_device.so" --ep SimDevice:async=1 \
      --virtual npu --node-tests "$node_dir"
  else
    failed_suites+=("sanitizer build")
  fi
fi

if [[ "${NXRT_SKIP_FUZZ:-0}" != 1 ]]; then
  # Builds only the fuzzer when the sanitizer suites were skipped; sets its own sanitizer
  # options (docs/fuzzing.md).
  run_suite "fuzz: regression corpus + 60 s smoke" tests/fuzz/run_fuzz_smoke.sh "$sanitized_dir"
fi

echo
echo "=============== summary ==============="
for s in "${passed_suites[@]}"; do echo "PASS  $s"; done
for s in "${failed_suites[@]}"; do echo "FAIL  $s"; done
echo "suites: ${#passed_suites[@]} passed, ${#failed_suites[@]} failed in $((SECONDS / 60)) min"
[[ ${#failed_suites[@]} == 0 ]]
