#!/usr/bin/env bash
# Rewrites the checked-in lists of ONNX node test cases that must pass (tests/conformance/*.txt)
# from the current build. Run it after making more cases pass; CI fails when a listed case fails.
set -euo pipefail
cd "$(dirname "$0")/.."
node_dir=build/testdata/onnx-node
if [[ ! -f $node_dir/.complete ]]; then
  rm -rf "$node_dir"
  python3 tools/scripts/dump_onnx_node_tests.py "$node_dir" && touch "$node_dir/.complete"
fi
header() { echo "# ONNX node test cases that must pass ($1). Regenerate with tools/update_conformance_lists.sh."; }
build/bin/nxrt conformance "$node_dir" --write-passing /tmp/nxrt_onnx_pass.txt | tail -1
{ header "onnx $(python3 -c 'import onnx; print(onnx.__version__)') wheel"; cat /tmp/nxrt_onnx_pass.txt; } \
  > tests/conformance/onnx_node_pass.txt
build/bin/nxrt conformance /usr/share/libonnx-testdata/data/node --write-passing /tmp/nxrt_debian_pass.txt | tail -1
{ header "Debian libonnx-testdata, onnx 1.12"; cat /tmp/nxrt_debian_pass.txt; } > tests/conformance/debian_node_pass.txt
wc -l tests/conformance/*.txt
