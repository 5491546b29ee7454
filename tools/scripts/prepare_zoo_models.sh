#!/usr/bin/env bash
# Prepares the model zoo (tools/scripts/export_zoo_models.py) for
# `tests/models/run_model_comparison.py --zoo` and bench/zoo.py.
#
#   tools/scripts/prepare_zoo_models.sh [OUT_DIR]        (default: build/zoo)
#
# 1. pip-installs tools/scripts/requirements.txt into `python3` (or $PYTHON) if the pinned
#    onnx / onnxruntime / numpy versions are not already there;
# 2. if any zoo model (NAME.onnx or its NAME.json) is missing: apt-installs python3-torch and
#    python3-torchvision (only if missing; they are visible to Debian's /usr/bin/python3 only)
#    and exports the missing models with /usr/bin/python3 (about 5 minutes for all of them on
#    2 cores).
# Idempotent: when everything is in place it installs nothing, exports nothing and takes about
# a second (two Python start-ups).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# OUT_DIR is relative to the caller's directory; the default is relative to the repository.
out_dir="$(realpath -m "${1:-$repo_root/build/zoo}")"
cd "$repo_root"
python="${PYTHON:-python3}"
scripts="tools/scripts"

# --- 1. pinned Python packages for the comparison and benchmark scripts -----------------------
# shellcheck source=prepare_common.sh
source "$scripts/prepare_common.sh"
ensure_pinned_python_packages

# --- 2. the zoo, exported from torch ------------------------------------------------------------
# The list of names lives in tests/models/model_inputs.py (the exporter checks it has the same).
mapfile -t zoo_models < <("$python" -c \
    'import sys; sys.path.insert(0, "tests/models"); import model_inputs
print("\n".join(model_inputs.zoo_model_names()))')
missing=()
for name in "${zoo_models[@]}"; do
    [[ -f "$out_dir/$name.onnx" && -f "$out_dir/$name.json" ]] || missing+=("$name")
done
if ((${#missing[@]})); then
    ensure_debian_torch
    echo "== exporting ${missing[*]}"
    only_args=()
    for name in "${missing[@]}"; do only_args+=(--only "$name"); done
    # torch.onnx's warnings (one per traced control-flow decision) would drown the log.
    /usr/bin/python3 -W ignore "$scripts/export_zoo_models.py" "$out_dir" "${only_args[@]}"
fi
for name in "${zoo_models[@]}"; do
    if [[ ! -f "$out_dir/$name.onnx" || ! -f "$out_dir/$name.json" ]]; then
        echo "error: $out_dir/$name.onnx or its .json is missing" >&2
        exit 1
    fi
done
echo "zoo ready in $out_dir (${#zoo_models[@]} models)"
