#!/usr/bin/env bash
# Installs what building and testing nxrt needs, skipping what is already there.
#   tools/install_deps.sh          build dependencies (Debian) + Python test tools (PyPI)
#   tools/install_deps.sh --torch  also Debian's torch/torchvision, for exporting test models
set -euo pipefail
cd "$(dirname "$0")/.."

want_torch=0
[[ "${1:-}" == "--torch" ]] && want_torch=1

packages=(cmake ninja-build g++ libprotobuf-dev protobuf-compiler libonnx-dev libdnnl-dev ocl-icd-opencl-dev libgtest-dev libgmock-dev ccache
          libonnx-testdata python3-numpy chromium graphviz
          clang libclang-rt-dev libomp-dev)  # the fuzz build: clang, libFuzzer, clang's OpenMP
if [[ $want_torch == 1 ]]; then packages+=(python3-torch python3-torchvision python3-onnx); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing Debian packages: ${missing[*]}"
  SUDO=""
  [[ $(id -u) != 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A software Vulkan (Mesa's lavapipe) to run a GPU plugin EP on a machine without a GPU: the test
# of onnxruntime-ep-webgpu under NXRT_SOFTWARE_GPU=1. Its Dawn needs Mesa 25 or newer; Debian 12
# ships 22.3, so there it comes from bookworm-backports (Debian's own archive).
mesa_vulkan_ok() {
  dpkg-query -W -f='${Status}' libvulkan1 2>/dev/null | grep -q "install ok installed" &&
    dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null | grep -qE '^(2[5-9]|[3-9][0-9])[.]'
}
if ! mesa_vulkan_ok; then
  echo "== installing Mesa's Vulkan drivers (25 or newer)"
  SUDO=""
  [[ $(id -u) != 0 ]] && SUDO="sudo"
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  from=()
  if [[ $codename == bookworm ]]; then
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm-backports" \
        "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
        $SUDO tee /etc/apt/sources.list.d/nxrt-bookworm-backports.sources >/dev/null
    fi
    from=(-t bookworm-backports)
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${from[@]}" mesa-vulkan-drivers libvulkan1 >/dev/null
fi

if ! python3 -c "import onnx, onnxruntime, numpy, pytest, nanobind, scikit_build_core" 2>/dev/null || \
   ! python3 - <<'PY' 2>/dev/null
import sys, importlib.metadata as md
want = dict(l.split("==") for l in open("tools/scripts/requirements.txt") if "==" in l and not l.startswith("#"))
sys.exit(any(md.version(k) != v.strip() for k, v in want.items()))
PY
then
  echo "== installing Python test tools (tools/scripts/requirements.txt)"
  python3 -m pip install -q --disable-pip-version-check -r tools/scripts/requirements.txt
fi
