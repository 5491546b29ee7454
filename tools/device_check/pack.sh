#!/usr/bin/env bash
# Packs a built tree for tools/device_check/run.sh on another x86-64 machine (one with AMX or
# AVX-512, say) that has Python, numpy, onnx and onnxruntime but not our build dependencies,
# into .device_check/ (git-ignored), small enough for a 64 MiB transfer:
#   nxrt.tar.xz    build/bin/{nxrt,nxrt_unit_tests,nxrt_bench_int8_gemm} and build/lib/*.so
#                  stripped, the system libraries they link that a bare machine lacks (oneDNN,
#                  protobuf, ...), the crash reporter, and this checkout's path (the unit tests
#                  have it compiled in)
#   models/        skeletons of the models (model_skeleton.py strip): build/models' int8 and
#                  OCR models by default, or the .onnx files given
#   zoo/           with --zoo: skeletons of build/zoo's models and their input sidecars, for
#                  bench/zoo.py there
#   openvino.tar.xz  with --openvino: the installed OpenVINO version's cp312 wheel, CPU plugin
#                  and ONNX reader only (PyPI must be reachable)
#
#   tools/device_check/pack.sh [--openvino] [--zoo] [--python-version 3.12] [MODEL.onnx ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
openvino=0
zoo=0
pyver=3.12
models=()
while (($#)); do
  case $1 in
    --openvino) openvino=1 ;;
    --zoo) zoo=1 ;;
    --python-version) pyver=$2; shift ;;
    *) models+=("$1") ;;
  esac
  shift
done
if ((${#models[@]} == 0)); then
  for m in bert4_int8 bert4_qdq resnet50_int8 ddddocr_common ppocr_det ppocr_rec bert4; do
    models+=("build/models/$m.onnx")
  done
fi
out=.device_check
rm -rf "$out"
stage=$out/stage
mkdir -p "$stage/build/bin" "$stage/build/lib" "$stage/syslib"
cp build/bin/nxrt build/bin/nxrt_unit_tests build/bin/nxrt_bench_int8_gemm "$stage/build/bin/"
cp build/lib/*.so "$stage/build/lib/"
strip --strip-unneeded "$stage"/build/bin/* "$stage"/build/lib/*.so
# Libraries every Linux has (and whose newer versions the other machine's Python needs) stay
# behind; the rest travel.
for lib in $(ldd build/bin/nxrt build/bin/nxrt_unit_tests build/lib/*.so |
             awk '/=> \//{print $3}' | sort -u); do
  case $(basename "$lib") in
    libc.so* | libm.so* | libstdc++* | libgcc_s* | libz.so* | ld-linux* | libnxrt*) ;;
    *) cp -L "$lib" "$stage/syslib/" ;;
  esac
done
gcc -O1 -shared -fPIC -o "$stage/crash_report.so" tools/device_check/crash_report.c -ldl
echo "$PWD" > "$stage/build_root"
echo "== packing binaries ($(du -sh "$stage" | cut -f1) before compression)"
tar -C "$stage" -cf - . | xz -6 -T0 > "$out/nxrt.tar.xz"
rm -rf "$stage"

python3 tools/device_check/model_skeleton.py strip "${models[@]}" "$out/models"
if ((zoo)); then
  python3 tools/device_check/model_skeleton.py strip build/zoo/*.onnx "$out/zoo"
fi

if ((openvino)); then
  version=$(python3 -c "import openvino; print(openvino.__version__.split('-')[0])")
  wheels=$out/wheels
  mkdir -p "$wheels"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$wheels" "openvino==$version" openvino-telemetry
  site=$out/site
  mkdir -p "$site"
  for w in "$wheels"/*.whl; do python3 -m zipfile -e "$w" "$site"; done
  # The CPU plugin and the ONNX / IR readers are all the comparison uses.
  rm -rf "$site"/openvino/include "$site"/*.dist-info
  rm -f "$site"/openvino/libs/libopenvino_{tensorflow,tensorflow_lite,paddle,pytorch,jax,gguf}_frontend.so* \
    "$site"/openvino/libs/libopenvino_intel_{gpu,npu}_plugin.so "$site"/openvino/libs/libopenvino_c.so* \
    "$site"/openvino/libs/libopenvino_auto*_plugin.so "$site"/openvino/libs/libopenvino_hetero_plugin.so
  echo "== packing OpenVINO $version"
  tar -C "$site" -cf - . | xz -6 -T0 > "$out/openvino.tar.xz"
  rm -rf "$site" "$wheels"
fi
du -sh "$out"/*
echo "total: $(du -sh "$out" | cut -f1) (with the checkout, keep it under the transfer limit)"
