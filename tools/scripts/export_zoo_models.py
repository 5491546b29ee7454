#!/usr/bin/python3
"""Exports the model zoo: real architectures with random weights, for comparisons and benchmarks.

Run with Debian's interpreter, which is the one that sees python3-torch / python3-torchvision:

    /usr/bin/python3 tools/scripts/export_zoo_models.py [OUT_DIR] [--force] [--only NAME ...]

OUT_DIR defaults to build/zoo. Per model it writes NAME.onnx (opset 17, batch 1, static input
shapes) and NAME.json, which tests/models/model_inputs.py reads to build inputs:
    {"description": ..., "inputs": {NAME: {"shape": [...], "dtype": "float32",
     "values": "normal" | "uniform01" | "speech"}}, "outputs": [...],
     "detections": {"boxes": NAME, "scores": NAME, "labels": NAME, "score_threshold": S}
     (detectors only)}

Models (torchvision 0.14 builders with weights=None unless said otherwise):
    classification, input `input` [1,3,224,224] N(0,1), output `logits` [1,1000]:
        resnet18, densenet121, googlenet, shufflenet_v2_x1_0, mnasnet1_0, mobilenet_v3_large,
        efficientnet_v2_s, regnet_y_400mf, resnext50_32x4d, convnext_tiny, swin_t, alexnet, vgg11;
        inception_v3 at [1,3,299,299]
    segmentation, input `input` [1,3,320,320] N(0,1) (fcn_resnet50: [1,3,256,256], as its
        dilated ResNet-50 costs ~37 GMAC there, ~1 s), output `out` [1,21,H,W] (the 'out' entry of the dict):
        lraspp_mobilenet_v3_large, deeplabv3_mobilenet_v3_large, fcn_resnet50
    detection, input `images` [1,3,320,320] U(0,1) (the models normalise and resize inside):
        ssdlite320_mobilenet_v3_large, fasterrcnn_mobilenet_v3_large_320_fpn,
        retinanet_resnet50_fpn (min_size = max_size = 320);
        outputs: the dense head outputs before any TopK/NMS (SSD and RetinaNet: `bbox_regression`
        [1,A,4], `cls_logits` [1,A,91]; Faster R-CNN: the RPN's `rpn_objectness_<level>` and
        `rpn_box_deltas_<level>`), then the detections `boxes` [N,4], `scores` [N], `labels` [N]
        int64, N varying. The dense outputs are compared element-wise; the detections, which can
        legitimately differ where two candidates' scores nearly tie, are matched box by box
        (tests/models/run_model_comparison.py).
    video: r3d_18, input `input` [1,3,8,112,112] N(0,1), output `logits` [1,400]
    optical flow: raft_small, inputs `image1`, `image2` [1,3,128,128] N(0,1), 12 flow updates
        (torchvision's default), output `flow` [1,2,128,128] (the last update's)
    yolov8n_style: tools/scripts/yolo_style.py's YOLOv8-nano-style detector, input `images`
        [1,3,320,320] U(0,1), outputs `output0` [1,84,2100] (boxes xywh in pixels + class
        scores, before NMS, like an ultralytics export) and its score rows again as `scores`
        [1,80,2100] (compared at their own scale)
    wav2vec2_small: a wav2vec2-style speech encoder in plain torch (7-layer 1-D conv feature
        extractor over raw 16 kHz audio with GroupNorm and GELU, feature projection, grouped
        convolutional position embedding, 4 post-norm transformer layers of width 256, a CTC
        head of 32 tokens); input `audio` [1,16000] (1 s of voice-like audio), output
        `logits` [1,49,32]

No weights are downloaded: every model is drawn from a seed fixed per model name. Existing files
(.onnx and .json) are kept unless --force is given. Fixes for random-weight quirks (as in
export_torch_models.py, whose helpers this uses), all in one forward pass over a random batch
(`calibrate`; the Debian torch is slow, about 1 GFLOP/s for Linear layers on its reference BLAS):
  * BatchNorm running statistics are those of that batch. Only the BatchNorm layers are in
    training mode for the pass: detectors in training mode want targets, and dropout or
    stochastic depth must not change what the layers see;
  * the last Linear layer of every classifier is scaled so that its logits have std 1 (random
    weights leave them anywhere from 0.03, AlexNet, to 2.4, EfficientNetV2-S);
  * LayerNorms get random scales and shifts; ConvNeXt's layer scales (1e-6 at init: every block
    would be an identity) are drawn from U(0.2, 0.6);
  * the detectors' heads (torchvision: std 0.01-0.03, on random features a sea of near-equal
    scores) are drawn with He init; RetinaNet's and the RPN's box deltas are scaled to std 0.3
    (else most boxes collapse onto the image border) and RetinaNet's logits to N(-4, 1), as its
    focal-loss prior has them (a few percent of the scores over the 0.05 threshold).
torch 1.13's de-duplication of equal initializers is skipped (no_initializer_deduplication: it
compares every pair of weights, and random weights have none to merge).
Nothing from issue 35's list is left out: every architecture exports with torch 1.13 at opset 17.
"""
import argparse
import contextlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
import export_torch_models as etm  # noqa: E402  (sibling script)
import model_inputs  # noqa: E402  (tests/models/model_inputs.py: the zoo's model names)
from yolo_style import YoloStyle  # noqa: E402

DETECTOR_SIZE = 320


@dataclass
class Export:
    """What to export: the model, its example inputs and what model_inputs.py needs to know."""
    model: nn.Module
    inputs: dict                   # input name -> example tensor
    outputs: list                  # output names
    description: str
    values: dict = field(default_factory=dict)  # input name -> "normal" | "uniform01" | "speech"
    dynamic_axes: dict = None
    detections: dict = None  # {"boxes": NAME, "scores": NAME, "labels": NAME, "score_threshold"}


# --------------------------------------------------------------------------------------------
# Random-weight fixes
# --------------------------------------------------------------------------------------------

def calibrate(model, run, scales=()):
    """One pass over the random batch `run()` feeds `model` (torch is slow here: one pass for
    both fixes):
      * the BatchNorm running statistics become those of that batch. Unlike
        etm.recalibrate_batch_norm only the BatchNorm layers train during the pass, the rest
        stays in eval mode (detectors need no targets, dropout stays off);
      * each (layer, std) of `scales` gets its weight and bias scaled so that its output on
        that batch has standard deviation std. Random weights leave a classifier's logits
        anywhere from 0.03 (AlexNet, whose default init shrinks each layer's output) to 2.4
        (EfficientNetV2): near-0 logits make a relative tolerance meaningless, near-equal
        detection scores make a sea of ties. The layers must not feed one another."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    model.eval()
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: after one batch, exactly that batch's stats
        bn.train()
    captured = {layer: [] for layer, _ in scales}
    hooks = [layer.register_forward_hook(lambda module, args, out: captured[module].append(out))
             for layer in captured]
    try:
        with torch.no_grad():
            run()
    finally:
        for hook in hooks:
            hook.remove()
        model.eval()
    for layer, std in scales:
        # A head shared by the pyramid levels runs once per level: all of its outputs count.
        factor = std / float(torch.cat([out.flatten() for out in captured[layer]]).std())
        with torch.no_grad():
            layer.weight.mul_(factor)
            if layer.bias is not None:
                layer.bias.mul_(factor)


def redraw_he(module, generator):
    """Draws every Conv2d / Linear weight in `module` from N(0, 2/fan_in) (He) and its bias from
    N(0, 0.02^2). torchvision draws detection heads with std 0.01-0.03: on random features
    their scores then all sit near the same value (the prior), a sea of near-ties."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=generator)
                               * math.sqrt(2.0 / fan_in))
                if m.bias is not None:
                    m.bias.copy_(0.02 * torch.randn(m.bias.shape, generator=generator))


def fix_convnext_layer_scales(model, generator):
    """ConvNeXt multiplies each block's output by a learnt per-channel scale, 1e-6 at init:
    every block would be an identity. Draws them from U(0.2, 0.6)."""
    for m in model.modules():
        if hasattr(m, "layer_scale") and isinstance(m.layer_scale, nn.Parameter):
            with torch.no_grad():
                m.layer_scale.copy_(0.2 + 0.4 * torch.rand(m.layer_scale.shape,
                                                            generator=generator))


def image(generator, size, batch=1, channels=3):
    return torch.randn((batch, channels) + tuple(size), generator=generator)


# --------------------------------------------------------------------------------------------
# The families
# --------------------------------------------------------------------------------------------

def classifier(builder, size=224, **kwargs):
    """A torchvision classifier: input `input` [1,3,size,size], output `logits`."""
    def build(name, generator):
        import torchvision
        model = getattr(torchvision.models, builder)(weights=None, **kwargs)
        etm.randomise_layer_norms(model, generator)
        fix_convnext_layer_scales(model, generator)
        # Two images: one leaves the BatchNorm statistics of the 7x7 maps too noisy (another
        # image then gives EfficientNetV2-S logits of std 40 where the calibration had 1).
        last = [m for m in model.modules() if isinstance(m, nn.Linear)][-1]
        calibrate(model, lambda: model(image(generator, (size, size), batch=2)), [(last, 1.0)])
        return Export(model, {"input": image(generator, (size, size))}, ["logits"],
                      f"torchvision.models.{builder}, {size}x{size}")
    return build


class SegmentationOut(nn.Module):
    """torchvision's segmentation models return {'out': ..., 'aux': ...}; keep 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def segmenter(builder, size=320):
    def build(name, generator):
        import torchvision
        kwargs = {"weights_backbone": None}
        if builder != "lraspp_mobilenet_v3_large":  # LRASPP has no auxiliary head
            kwargs["aux_loss"] = False
        model = SegmentationOut(getattr(torchvision.models.segmentation, builder)(
            weights=None, **kwargs))
        # Two images: DeepLabV3's pooling branch has a BatchNorm over a 1x1 map.
        calibrate(model, lambda: model(image(generator, (size, size), batch=2)))
        return Export(model, {"input": image(generator, (size, size))}, ["out"],
                      f"torchvision.models.segmentation.{builder}, {size}x{size}, 'out'")
    return build


class DetectorOutputs(nn.Module):
    """images [1,3,H,W] -> (dense head outputs..., boxes, scores, labels).

    The head's outputs (before any TopK/NMS) are taken with a forward hook on `head`, so the
    graph is torchvision's own forward, with a few more outputs."""

    def __init__(self, model, head):
        super().__init__()
        self.model = model
        self.head = head

    def forward(self, images):
        captured = []
        hook = self.head.register_forward_hook(lambda module, args, out: captured.append(out))
        try:
            detections = self.model(list(images))[0]
        finally:
            hook.remove()
        out = captured[0]
        # SSD / RetinaNet heads return a dict (taken in key order), the RPN head two lists.
        dense = ([out[k] for k in sorted(out)] if isinstance(out, dict)
                 else [t for ts in out for t in ts])
        return tuple(dense) + (detections["boxes"], detections["scores"], detections["labels"])


def dense_output_names(builder):
    if builder.startswith("fasterrcnn"):  # the RPN head: objectness and deltas per FPN level
        levels = 3  # fasterrcnn_mobilenet_v3_large_320_fpn: two backbone levels + max pool
        return ([f"rpn_objectness_{i}" for i in range(levels)]
                + [f"rpn_box_deltas_{i}" for i in range(levels)])
    return ["bbox_regression", "cls_logits"]


def score_threshold(model):
    """The score under which the detector drops a detection (the comparison allows a detection
    within its tolerance of it to be missing in either runtime)."""
    roi_heads = getattr(model, "roi_heads", None)
    return float(roi_heads.score_thresh if roi_heads is not None else model.score_thresh)


def detector(builder, **kwargs):
    def build(name, generator):
        import torchvision
        model = getattr(torchvision.models.detection, builder)(
            weights=None, weights_backbone=None, **kwargs)
        if builder.startswith("fasterrcnn"):
            redraw_he(model.rpn.head, generator)
            redraw_he(model.roi_heads, generator)
            head = model.rpn.head
        else:
            redraw_he(model.head, generator)
            head = model.head
        wrapped = DetectorOutputs(model, head)
        size = (DETECTOR_SIZE, DETECTOR_SIZE)
        # Box deltas of a trained detector's scale: with He init's (std ~2-4, box coders
        # without SSD's 10/5 divisors) most boxes collapse onto the image border (zero area).
        # RetinaNet's logits N(-4, 1), as the focal-loss prior has them: a few percent over the
        # score threshold (0.05), rather than He init's N(0, 3.6) (hundreds of scores at 1.0).
        scales = []
        if builder.startswith("fasterrcnn"):
            scales = [(model.rpn.head.bbox_pred, 0.3)]
        if builder.startswith("retinanet"):
            scales = [(model.head.regression_head.bbox_reg, 0.3),
                      (model.head.classification_head.cls_logits, 1.0)]
        calibrate(wrapped, lambda: wrapped(torch.rand((2, 3) + size, generator=generator)),
                  scales)
        if builder.startswith("retinanet"):
            with torch.no_grad():
                model.head.classification_head.cls_logits.bias.fill_(-4.0)
        outputs = dense_output_names(builder) + ["boxes", "scores", "labels"]
        return Export(wrapped, {"images": torch.rand((1, 3) + size, generator=generator)},
                      outputs, f"torchvision.models.detection.{builder}, {size[0]}x{size[1]}, "
                      "dense head outputs and detections", values={"images": "uniform01"},
                      dynamic_axes={n: {0: "detections"} for n in ("boxes", "scores", "labels")},
                      detections={"boxes": "boxes", "scores": "scores", "labels": "labels",
                                  "score_threshold": score_threshold(model)})
    return build


def build_r3d_18(name, generator):
    import torchvision
    model = torchvision.models.video.r3d_18(weights=None)
    shape = (8, 112, 112)
    calibrate(model, lambda: model(image(generator, shape, batch=2)), [(model.fc, 1.0)])
    return Export(model, {"input": image(generator, shape)}, ["logits"],
                  "torchvision.models.video.r3d_18, 8 frames of 112x112")


class RaftLastFlow(nn.Module):
    """torchvision's RAFT returns the flow of every update; keep the last one."""

    def __init__(self, model, updates):
        super().__init__()
        self.model = model
        self.updates = updates

    def forward(self, image1, image2):
        return self.model(image1, image2, num_flow_updates=self.updates)[-1]


def build_raft_small(name, generator):
    import torchvision
    # RAFT-small has instance norms or none, no BatchNorm, and no quirk to fix.
    model = RaftLastFlow(torchvision.models.optical_flow.raft_small(weights=None), updates=12)
    size = (128, 128)
    return Export(model, {"image1": image(generator, size), "image2": image(generator, size)},
                  ["flow"], "torchvision.models.optical_flow.raft_small, 128x128, 12 updates, "
                  "the last flow")


class YoloOutputs(nn.Module):
    """YoloStyle's `output0` [1, 4 + classes, anchors] as an ultralytics export has it, and its
    class-score rows again as `scores`: the box rows are pixels (up to ~800), so a tolerance
    relative to output0's largest value would be 800x too loose for the probabilities."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images):
        out = self.model(images)
        return out, out[:, 4:]


def build_yolov8n_style(name, generator):
    model = YoloOutputs(YoloStyle())
    size = (320, 320)
    calibrate(model, lambda: model(torch.rand((2, 3) + size, generator=generator)))
    return Export(model, {"images": torch.rand((1, 3) + size, generator=generator)},
                  ["output0", "scores"], "tools/scripts/yolo_style.py's YoloStyle (nano "
                  "scale), 320x320", values={"images": "uniform01"})


# --------------------------------------------------------------------------------------------
# A wav2vec2-style speech encoder
# --------------------------------------------------------------------------------------------

class Wav2Vec2Style(nn.Module):
    """wav2vec2's layout (the "base" variant's post-norm transformer), scaled down.

    Raw audio [B, samples] -> 1-D convs (kernel, stride) (10,5) (3,2)x4 (2,2)x2, GroupNorm with
    one group per channel after the first, GELU after each: one frame per 320 samples (20 ms)
    -> LayerNorm + Linear to the model width -> + GELU(grouped conv position embedding)
    -> LayerNorm -> post-norm transformer layers -> Linear to the CTC vocabulary."""

    CONV_LAYERS = ((10, 5),) + ((3, 2),) * 4 + ((2, 2),) * 2

    def __init__(self, conv_channels=256, width=256, heads=4, ffn=1024, layers=4,
                 position_kernel=64, position_groups=16, vocab=32):
        super().__init__()
        convs, c_in = [], 1
        for index, (kernel, stride) in enumerate(self.CONV_LAYERS):
            convs.append(nn.Conv1d(c_in, conv_channels, kernel, stride, bias=False))
            if index == 0:
                convs.append(nn.GroupNorm(conv_channels, conv_channels))
            convs.append(nn.GELU())
            c_in = conv_channels
        self.features = nn.Sequential(*convs)
        self.projection_norm = nn.LayerNorm(conv_channels)
        self.projection = nn.Linear(conv_channels, width)
        self.position = nn.Conv1d(width, width, position_kernel, padding=position_kernel // 2,
                                  groups=position_groups)
        self.norm = nn.LayerNorm(width)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(width, heads, ffn, dropout=0.0, activation="gelu",
                                       batch_first=True) for _ in range(layers))
        self.ctc = nn.Linear(width, vocab)

    def forward(self, audio):
        x = self.features(audio[:, None, :]).transpose(1, 2)      # [B, frames, channels]
        x = self.projection(self.projection_norm(x))
        position = self.position(x.transpose(1, 2))[:, :, :-1]   # even kernel: drop one frame
        x = self.norm(x + nn.functional.gelu(position).transpose(1, 2))
        for layer in self.layers:
            x = layer(x)
        return self.ctc(x)


def build_wav2vec2_small(name, generator):
    model = Wav2Vec2Style()
    for layer in model.layers:  # non-zero biases and LayerNorm affines (torch inits them 0 / 1)
        etm.redraw_transformer_layer(layer, generator)
    etm.randomise_layer_norms(model, generator)
    etm.redraw_linear(model.ctc, generator)
    audio = 0.1 * torch.randn((1, 16000), generator=generator)  # 1 s at 16 kHz
    return Export(model, {"audio": audio}, ["logits"], "Wav2Vec2Style: a wav2vec2-style "
                  "encoder, width 256, 4 layers, 1 s of 16 kHz audio", values={"audio": "speech"})


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def zoo():
    """Model name -> build(name, generator) -> Export, in model_inputs.zoo_model_names() order."""
    models = {name: classifier(name) for name in (
        "resnet18", "densenet121", "shufflenet_v2_x1_0", "mnasnet1_0",
        "mobilenet_v3_large", "efficientnet_v2_s", "regnet_y_400mf", "resnext50_32x4d",
        "convnext_tiny", "swin_t", "alexnet", "vgg11")}
    models["googlenet"] = classifier("googlenet", aux_logits=False, init_weights=True)
    models["inception_v3"] = classifier("inception_v3", size=299, aux_logits=False,
                                        init_weights=True)
    models["lraspp_mobilenet_v3_large"] = segmenter("lraspp_mobilenet_v3_large")
    models["deeplabv3_mobilenet_v3_large"] = segmenter("deeplabv3_mobilenet_v3_large")
    models["fcn_resnet50"] = segmenter("fcn_resnet50", size=256)
    models["ssdlite320_mobilenet_v3_large"] = detector("ssdlite320_mobilenet_v3_large")
    models["fasterrcnn_mobilenet_v3_large_320_fpn"] = detector(
        "fasterrcnn_mobilenet_v3_large_320_fpn")
    models["retinanet_resnet50_fpn"] = detector(
        "retinanet_resnet50_fpn", min_size=DETECTOR_SIZE, max_size=DETECTOR_SIZE)
    models["r3d_18"] = build_r3d_18
    models["raft_small"] = build_raft_small
    models["yolov8n_style"] = build_yolov8n_style
    models["wav2vec2_small"] = build_wav2vec2_small
    order = model_inputs.zoo_model_names()
    if sorted(order) != sorted(models):  # one list of names for exporter, tests and bench
        raise SystemExit(f"model_inputs.zoo_model_names() and this script disagree: "
                         f"{sorted(set(order) ^ set(models))}")
    return {name: models[name] for name in order}


def sidecar(name, export):
    return {
        "description": f"{export.description}; random weights, seed {etm.seed_for(name)}",
        "inputs": {n: {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                       "values": export.values.get(n, "normal")}
                   for n, t in export.inputs.items()},
        "outputs": export.outputs,
        **({"detections": export.detections} if export.detections else {}),
    }


@contextlib.contextmanager
def no_initializer_deduplication():
    """torch 1.13's exporter compares every pair of weights to merge equal ones (12 of the 40 s
    densenet121 takes); random weights have none to merge."""
    saved = torch._C._jit_pass_onnx_deduplicate_initializers
    torch._C._jit_pass_onnx_deduplicate_initializers = lambda graph, params, training: params
    try:
        yield
    finally:
        torch._C._jit_pass_onnx_deduplicate_initializers = saved


def export_one(name, build, out_dir):
    torch.manual_seed(etm.seed_for(name))
    generator = torch.Generator().manual_seed(etm.seed_for(name) + 1)
    export = build(name, generator)
    path = os.path.join(out_dir, name + ".onnx")
    with no_initializer_deduplication():
        etm.export(export.model, tuple(export.inputs.values()), path, list(export.inputs),
                   export.outputs, dynamic_axes=export.dynamic_axes)
    json_path = os.path.join(out_dir, name + ".json")
    with open(json_path + ".part", "w") as f:
        json.dump(sidecar(name, export), f, indent=1)
    os.replace(json_path + ".part", json_path)
    return path


def parse_args(argv, names):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default=os.path.join("build", "zoo"),
                        help="folder for NAME.onnx and NAME.json (default: build/zoo)")
    parser.add_argument("--force", action="store_true", help="re-export existing models")
    parser.add_argument("--only", action="append", choices=names, metavar="NAME",
                        help=f"export only this model (repeatable); one of {', '.join(names)}")
    return parser.parse_args(argv)


def main(argv=None):
    models = zoo()
    args = parse_args(argv, list(models))
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    failures, total_start = [], time.perf_counter()
    for name, build in models.items():
        if args.only and name not in args.only:
            continue
        stem = os.path.join(args.out_dir, name)
        if os.path.exists(stem + ".onnx") and os.path.exists(stem + ".json") and not args.force:
            print(f"exists: {stem}.onnx (use --force to re-export)")
            continue
        start = time.perf_counter()
        try:
            path = export_one(name, build, args.out_dir)
        except Exception as exc:  # report and go on with the other models
            failures.append(name)
            print(f"ERROR: {name}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            continue
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB, "
              f"{time.perf_counter() - start:.1f} s)", flush=True)
    print(f"export took {time.perf_counter() - total_start:.0f} s"
          + (f"; FAILED: {' '.join(failures)}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
