#!/usr/bin/env python3
"""Derives the models onnxruntime's own tools write from the exported ones, for the comparison
and benchmark harness:

    derive_models.py MODELS_DIR [--only NAME ...]

  bert4_fused.onnx   bert4 through onnxruntime.transformers' optimizer (model_type bert): the
                     com.microsoft Attention, SkipLayerNormalization, BiasGelu, ... it fuses
  bert4_int8.onnx    bert4 through onnxruntime.quantization.quantize_dynamic (int8 weights,
                     activations quantized per run)
  resnet50_int8.onnx resnet50 through quantize_static (QDQ format, int8 per-channel weights,
                     calibrated on 8 deterministic images)
  mobilenet_v2_fp16.onnx, bert4_fp16.onnx
                     mobilenet_v2 and bert4 through onnxruntime.transformers' float16 converter
                     (float16 weights, activations, inputs and outputs), as models exported for
                     GPUs come
  bert4_qdq.onnx     bert4 through quantize_static (QDQ format, uint8 activations, int8
                     per-channel weights, every op type the quantizer takes), calibrated on 8
                     deterministic token sequences: the MatMuls become QLinearMatMul in nxrt

Files that exist are kept (delete one to make it again). Everything is made from the models
in MODELS_DIR with fixed seeds: nothing is downloaded.
"""
import argparse
import os
import sys

import numpy as np
import onnx


def fuse_bert(src, dst):
    from onnxruntime.transformers import optimizer
    model = onnx.load(src)
    # Hidden size from the first attention projection's weight; BERT's heads are 64 wide.
    hidden = next(init.dims[0] for init in model.graph.initializer if len(init.dims) == 2
                  and init.dims[0] == init.dims[1])
    # opt_level 0: onnxruntime's own graph optimizations would need torch at import time; the
    # fusions themselves are the optimizer's Python passes.
    fused = optimizer.optimize_model(src, model_type="bert", num_heads=hidden // 64,
                                     hidden_size=hidden, opt_level=0)
    fused.save_model_to_file(dst)


def quantize_bert(src, dst):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    quantize_dynamic(src, dst, weight_type=QuantType.QInt8)


class ImageReader:
    """Calibration data: 8 images of N(0, 1) noise, like the harness's inputs."""

    def __init__(self, input_name, shape, count=8):
        rng = np.random.default_rng(8)
        self.batches = iter([{input_name: rng.standard_normal(shape).astype(np.float32)}
                             for _ in range(count)])

    def get_next(self):
        return next(self.batches, None)


def quantize_resnet(src, dst):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    model = onnx.load(src)
    inp = model.graph.input[0]
    shape = [d.dim_value if d.dim_value > 0 else 1 for d in inp.type.tensor_type.shape.dim]
    quantize_static(src, dst, ImageReader(inp.name, shape), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)


class TokenReader:
    """Calibration data: 8 sequences of 128 tokens drawn from bert4's vocabulary, no padding."""

    def __init__(self, model, count=8):
        vocab = next(init.dims[0] for init in model.graph.initializer
                     if len(init.dims) == 2 and init.dims[0] > 10000)
        rng = np.random.default_rng(9)
        self.batches = iter([{"input_ids": rng.integers(1000, vocab, (1, 128)).astype(np.int64),
                              "attention_mask": np.ones((1, 128), np.int64)}
                             for _ in range(count)])

    def get_next(self):
        return next(self.batches, None)


def quantize_bert_static(src, dst):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    quantize_static(src, dst, TokenReader(onnx.load(src)), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)


def to_float16(src, dst):
    from onnxruntime.transformers.float16 import convert_float_to_float16
    onnx.save(convert_float_to_float16(onnx.load(src), keep_io_types=False), dst)


DERIVED = {
    "bert4_fused": ("bert4", fuse_bert),
    "bert4_int8": ("bert4", quantize_bert),
    "resnet50_int8": ("resnet50", quantize_resnet),
    "bert4_qdq": ("bert4", quantize_bert_static),
    "mobilenet_v2_fp16": ("mobilenet_v2", to_float16),
    "bert4_fp16": ("bert4", to_float16),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models_dir")
    ap.add_argument("--only", action="append", default=[])
    args = ap.parse_args()
    for name, (source, make) in DERIVED.items():
        if args.only and name not in args.only:
            continue
        dst = os.path.join(args.models_dir, name + ".onnx")
        src = os.path.join(args.models_dir, source + ".onnx")
        if os.path.exists(dst):
            print(f"  exists: {dst}")
            continue
        if not os.path.exists(src):
            print(f"error: {src} is missing (run prepare_test_models.sh)", file=sys.stderr)
            return 1
        print(f"== deriving {name} from {source}")
        tmp = dst + ".tmp.onnx"
        make(src, tmp)
        os.replace(tmp, dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
