"""Per-call latency when input shapes change from call to call, nxrt against onnxruntime: an OCR
pipeline's detector sees each photo's size and its recogniser each batch's widest text line.

    python3 bench/changing_shapes.py MODEL.onnx --kind det|rec [--input x] [--threads 1]
        [--shapes N] [--passes 3] [--openvino]

Both runtimes (the nxrt Python package and onnxruntime) get the same N shapes in the same order,
pass after pass: the first pass meets every shape for the first time (nxrt compiles a program per
shape for its blocked groups; docs/performance.md), later passes have seen them all. Prints the
milliseconds per call of each pass for each runtime and the ratio nxrt / onnxruntime per pass;
`--openvino` adds OpenVINO's CPU plugin (f32, the same threads), which also compiles per shape.
`--kind det` draws N image sizes (multiples of 32 from 320 to 928, as rapidocr rounds them);
`--kind rec` draws N widths of 48-pixel text lines (multiples of 24 from 96 to 936).
"""

import argparse
import time

import numpy as np
import onnxruntime as ort

import nxrt


def shapes_for(kind, count, rng):
    if kind == "det":
        sizes = np.arange(320, 960, 32)
        return [(1, 3, int(h), int(w))
                for h, w in zip(rng.choice(sizes, count), rng.choice(sizes, count))]
    widths = rng.permutation(np.arange(96, 960, 24))
    return [(1, 3, 48, int(w)) for w in np.resize(widths, count)]


def per_call_ms(lib, model, name, feeds, threads, passes):
    options = lib.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if lib is ort:
        options.log_severity_level = 3
    session = lib.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    out = []
    for _ in range(passes):
        start = time.perf_counter()
        for feed in feeds:
            session.run(None, {name: feed})
        out.append((time.perf_counter() - start) * 1e3 / len(feeds))
    return out


def openvino_per_call_ms(model, feeds, threads, passes):
    import openvino as ov  # only with --openvino
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                      "INFERENCE_NUM_THREADS": threads})
    request = compiled.create_infer_request()
    out = []
    for _ in range(passes):
        start = time.perf_counter()
        for feed in feeds:
            request.infer({0: feed})
        out.append((time.perf_counter() - start) * 1e3 / len(feeds))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--kind", choices=["det", "rec"], required=True)
    parser.add_argument("--input", default="x", help="the image input's name (default: x)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--shapes", type=int, default=12)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--openvino", action="store_true", help="add OpenVINO (f32) as a row")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    feeds = [rng.standard_normal(s).astype(np.float32)
             for s in shapes_for(args.kind, args.shapes, rng)]
    print(f"{args.model}: {len(feeds)} shapes, {args.threads} thread(s), ms per call by pass "
          "(pass 1: every shape new)")
    results = {}
    for label, lib in (("onnxruntime", ort), ("nxrt", nxrt)):
        results[label] = per_call_ms(lib, args.model, args.input, feeds, args.threads,
                                     args.passes)
        print(f"  {label:<12}" + "".join(f"{t:9.2f}" for t in results[label]))
    if args.openvino:
        openvino = openvino_per_call_ms(args.model, feeds, args.threads, args.passes)
        print(f"  {'openvino':<12}" + "".join(f"{t:9.2f}" for t in openvino))
    ratios = [a / b for a, b in zip(results["nxrt"], results["onnxruntime"])]
    print("  nxrt / ort  " + "".join(f"{r:9.2f}" for r in ratios))


if __name__ == "__main__":
    main()
