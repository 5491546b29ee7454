#!/usr/bin/env python3
"""Writes the seed corpus of nxrt_session_fuzzer: the model.onnx of every ONNX node test case.

    make_seed_corpus.py OUT_DIR [NODE_TEST_DIR ...]

NODE_TEST_DIR defaults to build/testdata/onnx-node (written by
tools/scripts/dump_onnx_node_tests.py) and Debian's /usr/share/libonnx-testdata/data/node.
Each model becomes OUT_DIR/<source>-<case>.onnx; identical models are written once. Models
larger than --max-bytes are left out: libFuzzer mutates small inputs far faster and node tests
are small anyway. The corpus is generated into the build directory, never checked in.
"""
import argparse
import hashlib
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("sources", nargs="*",
                    default=["build/testdata/onnx-node", "/usr/share/libonnx-testdata/data/node"])
    ap.add_argument("--max-bytes", type=int, default=64 * 1024)
    args = ap.parse_args()

    os.makedirs(args.out_dir, exist_ok=True)
    seen = set()
    written = 0
    for tag, src in enumerate(args.sources):
        if not os.path.isdir(src):
            print(f"make_seed_corpus: {src} does not exist, skipped", file=sys.stderr)
            continue
        for case in sorted(os.listdir(src)):
            path = os.path.join(src, case, "model.onnx")
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            digest = hashlib.sha1(data).hexdigest()
            if len(data) > args.max_bytes or digest in seen:
                continue
            seen.add(digest)
            with open(os.path.join(args.out_dir, f"s{tag}-{case}.onnx"), "wb") as f:
                f.write(data)
            written += 1
    print(f"make_seed_corpus: wrote {written} seed models to {args.out_dir}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
