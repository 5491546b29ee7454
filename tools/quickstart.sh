#!/usr/bin/env bash
# Quick start: installs what is missing, builds nxrt, fetches the PaddleOCR text detector from
# the rapidocr-onnxruntime wheel on PyPI, and runs it with `nxrt run` on a synthetic 640x640
# document page (dark glyph-like strokes on white).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install_deps.sh
tools/build.sh
python3 tools/scripts/fetch_wheel_models.py build/models >/dev/null
python3 - <<'PY'
import sys
import numpy as np
sys.path.insert(0, "tests/models")
from model_inputs import InputInfo, ppocr_det_page
page = ppocr_det_page(InputInfo("x", (1, 3, 640, 640), np.float32), np.random.default_rng(0))
np.save("build/models/quickstart_page.npy", page)
PY
build/bin/nxrt run build/models/ppocr_det.onnx --input x=build/models/quickstart_page.npy \
  --output-dir build/quickstart --repeat 5
echo "detector output map written to build/quickstart/ (one .npy per output)"
