"""Deterministic inputs for the real-model tests and benchmarks.

Shared by tests/models/run_model_comparison.py, bench/bench_vs_onnxruntime.py and bench/zoo.py.
Each known model has a spec: sizes for its symbolic dimensions and a generator per input. Static
dimensions always come from the model itself. Everything is drawn from a numpy Generator seeded
per model, so the same model gets the same inputs on every run and on every machine.

Models of the zoo (tools/scripts/export_zoo_models.py) come with a NAME.json next to NAME.onnx
that names each input's kind of values ("normal", "uniform01", "speech"); see sidecar_spec().
Models in neither get generic inputs: symbolic dimensions 1, floats N(0,1), integers 0,
booleans False.
"""
import json
import os
import zlib
from dataclasses import dataclass, field
from typing import Callable, Dict

import numpy as np

# onnxruntime's type strings -> numpy dtypes (the subset real models use as inputs)
ORT_TYPE_TO_NUMPY = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}

BERT_VOCAB = 30522
BERT_PADDING = 28  # the last 28 positions of the attention mask are 0


@dataclass
class InputInfo:
    """What a generator needs to know about one graph input."""
    name: str
    shape: tuple   # fully resolved, all ints
    dtype: type    # numpy dtype


@dataclass
class ModelSpec:
    """Per-model input rules.

    dims:       {input name: {axis: size}} for the symbolic dimensions of that input
    generators: {input name: fn(InputInfo, np.random.Generator) -> np.ndarray}; inputs without
                one get the generic generator
    """
    dims: Dict[str, Dict[int, int]] = field(default_factory=dict)
    generators: Dict[str, Callable] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------------------------

def generic_value(info, rng):
    """N(0,1) for floating point, zeros for integers and booleans."""
    if np.issubdtype(info.dtype, np.floating):
        return rng.standard_normal(info.shape).astype(info.dtype)
    return np.zeros(info.shape, dtype=info.dtype)


def normal_noise(info, rng):
    return rng.standard_normal(info.shape).astype(info.dtype)


def bert_token_ids(info, rng):
    """Random token ids in [0, vocab)."""
    return rng.integers(0, BERT_VOCAB, size=info.shape).astype(info.dtype)


def bert_attention_mask(info, rng):
    """1 for real tokens, 0 for the last BERT_PADDING positions (padding)."""
    mask = np.ones(info.shape, dtype=info.dtype)
    mask[..., -BERT_PADDING:] = 0
    return mask


def draw_glyph(canvas, top, left, height, width, rng):
    """Draws one glyph-like shape: a few dark strokes (bars) inside a height x width box."""
    ink = rng.uniform(10, 70)
    stroke = max(2, min(height, width) // 5)
    # Always at least one vertical and one horizontal stroke, plus a couple of random ones.
    canvas[top:top + height, left:left + stroke] = ink
    row = top + int(rng.integers(0, max(1, height - stroke)))
    canvas[row:row + stroke, left:left + width] = ink
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.5:
            col = left + int(rng.integers(0, max(1, width - stroke)))
            canvas[top:top + height, col:col + stroke] = ink
        else:
            row = top + int(rng.integers(0, max(1, height - stroke)))
            canvas[row:row + stroke, left:left + width] = ink


def draw_text_line(canvas, top, left, right, glyph_height, rng):
    """Fills canvas[top:top+glyph_height, left:right] with words of glyph-like shapes."""
    x = left
    while True:
        word_len = int(rng.integers(2, 9))
        for _ in range(word_len):
            width = int(rng.integers(glyph_height // 2, glyph_height + 1))
            if x + width > right:
                return
            draw_glyph(canvas, top, x, glyph_height, width, rng)
            x += width + int(rng.integers(2, 5))
        x += int(rng.integers(glyph_height // 2, glyph_height))  # space between words


def to_chw_image(gray, rng, noise=4.0):
    """[H, W] grey page in 0..255 -> [3, H, W] with slight per-channel sensor noise."""
    image = np.repeat(gray[None, :, :], 3, axis=0)
    image = image + rng.normal(0.0, noise, size=image.shape)
    return np.clip(image, 0, 255)


def ppocr_det_page(info, rng):
    """A synthetic document page for the PaddleOCR detector: white background, lines of dark
    glyph-like blocks, normalised like PaddleOCR's det preprocessing (x/255 - mean) / std."""
    _, _, height, width = info.shape
    page = np.full((height, width), 255.0)
    y = int(rng.integers(16, 40))
    while y + 40 < height:
        glyph_height = int(rng.integers(14, 30))
        left = int(rng.integers(16, 64))
        right = width - int(rng.integers(16, width // 3))
        draw_text_line(page, y, left, right, glyph_height, rng)
        y += glyph_height + int(rng.integers(14, 40))
    image = to_chw_image(page, rng) / 255.0
    mean = np.array([0.485, 0.456, 0.406]).reshape(3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(3, 1, 1)
    return ((image - mean) / std)[None].astype(info.dtype)


def ppocr_text_line(info, rng):
    """A text-line crop for the PaddleOCR recogniser / angle classifier: one line of glyphs
    filling most of the width, normalised like PaddleOCR's rec/cls preprocessing:
    (x/255 - 0.5) / 0.5."""
    _, _, height, width = info.shape
    line = np.full((height, width), 255.0)
    glyph_height = int(height * 0.6)
    top = (height - glyph_height) // 2
    draw_text_line(line, top, 4, width - int(rng.integers(4, width // 8)), glyph_height, rng)
    image = to_chw_image(line, rng) / 255.0
    return ((image - 0.5) / 0.5)[None].astype(info.dtype)


def captcha_line(info, rng):
    """A grey captcha-like crop for ddddocr's recogniser ([N, 1, 64, W]): a few glyphs on a
    noisy background, normalised like ddddocr: (x/255 - 0.5) / 0.5."""
    batch, _, height, width = info.shape
    image = np.full((height, width), 230.0) + rng.normal(0.0, 12.0, size=(height, width))
    glyph_height = int(height * 0.6)
    top = (height - glyph_height) // 2
    draw_text_line(image, top, 6, width - 6, glyph_height, rng)
    image = np.clip(image, 0, 255) / 255.0
    return np.broadcast_to((image - 0.5) / 0.5, (batch, 1, height, width)).astype(info.dtype)


def magika_bytes(info, rng):
    """Magika's features ([N, 2048] int32): the first and last 1024 bytes of a file, 256 where
    a short file leaves them empty. Text-like bytes (ASCII letters, spaces, newlines) with a
    different length per file, so some rows are padded."""
    batch, width = info.shape
    half = width // 2
    out = np.full((batch, width), 256, dtype=np.int64)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz  ETAOIN{}();=.,\n\t0123456789",
                             dtype=np.uint8)
    for row in range(batch):
        length = int(rng.integers(half // 4, width + 1))
        text = alphabet[rng.integers(0, alphabet.size, size=length)].astype(np.int64)
        begin = text[:half]
        end = text[-half:]
        out[row, :begin.size] = begin
        out[row, width - end.size:] = end
    return out.astype(info.dtype)


def vad_audio(info, rng):
    """Speech-like audio at 16 kHz for Silero VAD: a few harmonics with a syllable-rate
    envelope plus noise. 576 samples = 64 samples of context + one 512-sample frame."""
    n = info.shape[-1]
    t = np.arange(n) / 16000.0
    f0 = rng.uniform(100, 220)
    voice = sum(np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 2 * np.pi)) / k
                for k in range(1, 6))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4.0 * t)
    audio = 0.2 * voice * envelope + 0.01 * rng.standard_normal(n)
    return np.broadcast_to(audio, info.shape).astype(info.dtype)


def small_state(info, rng):
    """A non-zero recurrent state, as after some input, so the state path is exercised."""
    return (0.1 * rng.standard_normal(info.shape)).astype(info.dtype)


def vad_sample_rate(info, rng):
    return np.full(info.shape, 16000, dtype=info.dtype)


def pcm16_speech(info, rng):
    """Speech-like audio at 16 kHz on the int16 sample scale (openWakeWord's front end takes the
    raw PCM values as floats)."""
    return (8000.0 * vad_audio(info, rng)).astype(info.dtype)


def uniform01(info, rng):
    """Pixels in [0, 1], as torchvision's detectors take them (they normalise inside)."""
    return rng.uniform(0.0, 1.0, size=info.shape).astype(info.dtype)


# The kinds of values a zoo sidecar (NAME.json) can ask for; "speech" is 16 kHz voice-like audio.
SIDECAR_VALUES = {"normal": normal_noise, "uniform01": uniform01, "speech": vad_audio}


def model_specs():
    """Known models (by file stem) -> ModelSpec."""
    image = ModelSpec(generators={"input": normal_noise})
    bert = ModelSpec(dims={"input_ids": {0: 1, 1: 128}, "attention_mask": {0: 1, 1: 128}},
                     generators={"input_ids": bert_token_ids,
                                 "attention_mask": bert_attention_mask})
    return {
        "resnet50": image,
        "mobilenet_v2": image,
        "mobilenet_v3_small": image,
        "efficientnet_b0": image,
        "squeezenet1_1": image,
        "vit_b_16": image,
        "transformer_encoder": ModelSpec(generators={"input": normal_noise}),
        "lstm_gru": ModelSpec(generators={"input": normal_noise, "lstm_h0": small_state,
                                          "lstm_c0": small_state, "gru_h0": small_state}),
        "bert4": bert,
        # Made from bert4 and resnet50 by onnxruntime's tools (tools/scripts/derive_models.py).
        "bert4_fused": bert,
        "bert4_int8": bert,
        "resnet50_int8": image,
        "bert4_qdq": bert,
        "mobilenet_v2_fp16": image,
        "bert4_fp16": bert,
        # PaddleOCR: NCHW, H and W multiples of 32 for det; rec/cls are fixed 48-pixel lines.
        "ppocr_det": ModelSpec(dims={"x": {0: 1, 2: 640, 3: 640}},
                               generators={"x": ppocr_det_page}),
        "ppocr_rec": ModelSpec(dims={"x": {0: 1, 2: 48, 3: 320}},
                               generators={"x": ppocr_text_line}),
        "ppocr_cls": ModelSpec(dims={"x": {0: 1, 2: 48, 3: 192}},
                               generators={"x": ppocr_text_line}),
        "silero_vad": ModelSpec(dims={"input": {0: 1, 1: 576}, "state": {1: 1}},
                                generators={"input": vad_audio, "state": small_state,
                                            "sr": vad_sample_rate}),
        # Google's file-type model, a batch of 10 files; ddddocr's captcha recogniser (a CNN
        # and a 512-hidden bidirectional LSTM) on a 64 x 256 crop.
        "magika": ModelSpec(dims={"bytes": {0: 10}}, generators={"bytes": magika_bytes}),
        "ddddocr_common": ModelSpec(dims={"input1": {3: 256}},
                                    generators={"input1": captcha_line}),
        # rapidocr 3's PP-OCRv6 models take the same pages and lines as PaddleOCR v4's.
        "ppocrv6_det": ModelSpec(dims={"x": {0: 1, 2: 640, 3: 640}},
                                 generators={"x": ppocr_det_page}),
        "ppocrv6_rec": ModelSpec(dims={"x": {0: 1, 3: 320}}, generators={"x": ppocr_text_line}),
        "nudenet_320n": ModelSpec(dims={"images": {0: 1, 2: 320, 3: 320}},
                                  generators={"images": uniform01}),
        # openWakeWord: 1760 samples (110 ms at 16 kHz, its streaming chunk + context) give 8 mel
        # frames; the embedding model takes 76 of those frames of 32 mel bands.
        "oww_melspectrogram": ModelSpec(dims={"input": {0: 1, 1: 1760}},
                                        generators={"input": pcm16_speech}),
        "oww_embedding": ModelSpec(dims={"input_1": {0: 1}}, generators={"input_1": normal_noise}),
    }


# Models compared with a looser relative tolerance than run_model_comparison.py's 1e-4, and why.
# Deep stacks of 3x3 convolutions with random weights on nxrt's Winograd F(4x4, 3x3) path
# (docs/performance.md): against a float64 torch run of the same model on the same inputs, the
# largest error was, onnxruntime / nxrt / nxrt with ep.cpu.winograd=0 (2026-11-27, Zen 3):
#   inception_v3 logits            1.65e-4 / 4.57e-4 / 1.96e-4  (max |logit| 5.2)
#   fcn_resnet50 out               1.28e-4 / 4.12e-4 / 1.92e-4  (max 1.9)
#   retinanet_resnet50_fpn boxes   0.53e-4 / 1.89e-4 / 0.81e-4  (max 1.5)
# i.e. rounding of the Winograd transforms, not a wrong result.
# Float16 models (derive_models.py): onnxruntime rounds some intermediate results to float16
# where nxrt computes them in float32 (src/session/float16_upcast.h), and the outputs are float16:
# bert4_fp16's hidden states were 1.3e-3 x max|output| apart, both as close to the float32 model.
# ppocrv6_det: onnxruntime's ReduceMean over a 160 x 160 plane (the first attention block) is
# 2.8e-5 off the float64 mean (nxrt's 8e-7), and the network amplifies it: its probabilities are
# 1.6e-4 off OpenVINO's f32 ones, nxrt's 1.3e-5 (2026-11-29, Zen 4).
RELATIVE_TOLERANCE_OVERRIDES = {
    "ppocrv6_det": 3e-4,
    "mobilenet_v2_fp16": 3e-3,
    "bert4_fp16": 3e-3,
    "inception_v3": 3e-4,
    "fcn_resnet50": 3e-4,
    "retinanet_resnet50_fpn": 3e-4,
}


def relative_tolerance(name, default=1e-4):
    """The relative tolerance model `name` is compared with (see the table above)."""
    return RELATIVE_TOLERANCE_OVERRIDES.get(name, default)


def zoo_model_names():
    """The zoo of tools/scripts/export_zoo_models.py (build/zoo), in test order: classifiers,
    segmenters, detectors, video, optical flow, the YOLO-style detector, speech."""
    return ["resnet18", "densenet121", "googlenet", "inception_v3", "shufflenet_v2_x1_0",
            "mnasnet1_0", "mobilenet_v3_large", "efficientnet_v2_s", "regnet_y_400mf",
            "resnext50_32x4d", "convnext_tiny", "swin_t", "alexnet", "vgg11",
            "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "fcn_resnet50",
            "ssdlite320_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn",
            "retinanet_resnet50_fpn", "r3d_18", "raft_small", "yolov8n_style", "wav2vec2_small"]


def wheel_model_names():
    """Models from PyPI wheels (fetch_wheel_models.py) beyond those known_model_names() lists:
    compared with onnxruntime in CI, not part of bench/'s default set."""
    return ["ppocrv6_det", "ppocrv6_rec", "nudenet_320n", "oww_melspectrogram", "oww_embedding"]


def derived_model_names():
    """Models onnxruntime's optimizer and quantizer make from the exported ones."""
    return ["bert4_fused", "bert4_int8", "resnet50_int8", "bert4_qdq", "mobilenet_v2_fp16",
            "bert4_fp16"]


def known_model_names():
    """Known model names in a sensible test order (small, fast ones first)."""
    return ["squeezenet1_1", "mobilenet_v3_small", "mobilenet_v2", "efficientnet_b0",
            "resnet50", "vit_b_16", "transformer_encoder", "bert4", "lstm_gru", "ppocr_cls",
            "ppocr_rec", "ppocr_det", "silero_vad", "magika", "ddddocr_common"]


# --------------------------------------------------------------------------------------------
# Building the inputs of one model
# --------------------------------------------------------------------------------------------

def model_name(model_path):
    """Model name = file name without .onnx."""
    base = os.path.basename(model_path)
    return base[:-5] if base.endswith(".onnx") else base


def resolve_shape(name, model_shape, sizes):
    """Static dims from the model; symbolic/unknown dims from `sizes` ({axis: size}), else 1."""
    shape = []
    for axis, dim in enumerate(model_shape):
        if isinstance(dim, int) and dim >= 0:
            if axis in sizes and sizes[axis] != dim:
                raise ValueError(f"input {name}: axis {axis} is {dim} in the model, "
                                 f"spec asks for {sizes[axis]}")
            shape.append(dim)
        else:
            shape.append(int(sizes.get(axis, 1)))
    return tuple(shape)


def read_sidecar(model_path):
    """The NAME.json export_zoo_models.py writes next to NAME.onnx, or None."""
    path = os.path.splitext(model_path)[0] + ".json"
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def sidecar_spec(sidecar):
    """ModelSpec from a sidecar: each input's shape (for any symbolic axis) and its values."""
    spec = ModelSpec()
    for name, info in sidecar.get("inputs", {}).items():
        spec.dims[name] = dict(enumerate(info["shape"]))
        values = info.get("values", "normal")
        if values not in SIDECAR_VALUES:
            raise ValueError(f"input {name}: unknown values {values!r} in the sidecar")
        spec.generators[name] = SIDECAR_VALUES[values]
    return spec


def build_inputs(model_path, ort_inputs, seed=0):
    """Returns {input name: np.ndarray} for a model.

    ort_inputs: onnxruntime NodeArg list (session.get_inputs()) - gives names, types, shapes.
    The generator is seeded from the model name and `seed`, and inputs are drawn in graph order.
    """
    name = model_name(model_path)
    spec = model_specs().get(name)
    if spec is None:
        sidecar = read_sidecar(model_path)
        spec = sidecar_spec(sidecar) if sidecar else ModelSpec()
    rng = np.random.default_rng([zlib.crc32(name.encode("utf-8")), seed])
    feeds = {}
    for arg in ort_inputs:
        if arg.type not in ORT_TYPE_TO_NUMPY:
            raise ValueError(f"input {arg.name}: unsupported type {arg.type}")
        info = InputInfo(arg.name, resolve_shape(arg.name, arg.shape, spec.dims.get(arg.name, {})),
                         ORT_TYPE_TO_NUMPY[arg.type])
        generator = spec.generators.get(arg.name, generic_value)
        value = np.array(generator(info, rng), order="C")  # keeps 0-d arrays 0-d
        assert value.shape == info.shape and value.dtype == info.dtype, (arg.name, value.shape)
        feeds[arg.name] = value
    return feeds


def sanitise_name(name):
    """File name nxrt uses for a tensor name: every byte other than an ASCII letter, digit,
    '-', '_' or '.' becomes '_'."""
    out = []
    for byte in name.encode("utf-8"):
        ch = chr(byte)
        out.append(ch if (ch.isascii() and ch.isalnum()) or ch in "-_." else "_")
    return "".join(out)


def save_inputs(feeds, directory):
    """Writes each input as DIRECTORY/<sanitised name>.npy; returns {name: path}."""
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for name, value in feeds.items():
        path = os.path.join(directory, sanitise_name(name) + ".npy")
        np.save(path, value)
        paths[name] = path
    return paths
