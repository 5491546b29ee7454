#!/usr/bin/python3
"""Exports test models from PyTorch to ONNX (opset 17, batch 1, random weights, fixed seeds).

Run with Debian's interpreter, which is the one that sees python3-torch / python3-torchvision:

    /usr/bin/python3 tools/scripts/export_torch_models.py [OUT_DIR] [--force] [--only NAME ...]

OUT_DIR defaults to build/models. Models written (NAME.onnx):

    resnet50, mobilenet_v2, mobilenet_v3_small, efficientnet_b0, squeezenet1_1, vit_b_16
        torchvision classifiers; input `input` float32 [1,3,224,224], output `logits` [1,1000]
    transformer_encoder
        torch.nn.TransformerEncoder (d_model 256, 4 heads, FFN 2048, 2 layers, batch_first);
        input `input` float32 [1,64,256], output `output` [1,64,256]
    bert4
        4-layer BERT-style encoder made of plain torch modules (hidden 768, 12 heads,
        intermediate 3072, vocab 30522, seq 128); inputs `input_ids`, `attention_mask`
        int64 [1,128]; output `last_hidden_state` float32 [1,128,768]
    lstm_gru
        a small recurrent model: nn.LSTM (64 -> 128) followed by nn.GRU (128 -> 128), one layer
        each, batch_first, 48 time steps; inputs `input` float32 [1,48,64] and the initial
        states `lstm_h0`, `lstm_c0`, `gru_h0` float32 [1,1,128]; outputs `output` float32
        [1,48,128] (the GRU's outputs) and the final states `lstm_h`, `lstm_c`, `gru_h`
        float32 [1,1,128]

No weights are downloaded: every model is randomly initialised from a seed fixed per model, so
the files are the same on every run with the same torch version. Existing files are kept unless
--force is given. Fixes for quirks of random-weight export (see shared/ENVIRONMENT-NOTES.md):
  * BatchNorm running statistics are recomputed on one random batch (otherwise MobileNet and
    EfficientNet logits collapse to ~0, which makes a comparison meaningless); MobileNetV3's
    classifier layers are also drawn again (N(0, 1/fan_in)), as its default init leaves the
    logits around 0.01;
  * the copies of the TransformerEncoderLayer inside nn.TransformerEncoder start out identical
    (and the exporter would share their weights), so each layer's weights are drawn again;
  * torchvision's ViT has a zero-initialised classification head (all logits would be 0), so
    the head is drawn again; its LayerNorms also get random scales and shifts;
  * attention is exported with autograd enabled (nn.MultiheadAttention's fused inference path
    does not export).
"""
import argparse
import math
import os
import sys
import time
import zlib

import torch
from torch import nn

OPSET = 17
IMAGE_SHAPE = (1, 3, 224, 224)


# --------------------------------------------------------------------------------------------
# Helpers shared by the models
# --------------------------------------------------------------------------------------------

def seed_for(name):
    """A fixed seed per model name, so each model's weights do not depend on export order."""
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def randomise_layer_norms(module, generator):
    """Gives every LayerNorm a non-trivial scale and shift (default is 1 and 0), so a
    runtime that mishandles them is caught by the comparison."""
    for m in module.modules():
        if isinstance(m, nn.LayerNorm) and m.elementwise_affine:
            with torch.no_grad():
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=generator))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=generator))


def recalibrate_batch_norm(model, input_shape, generator, batch=4):
    """Replaces BatchNorm running statistics (mean 0, var 1 at init) by the statistics of one
    random batch, so that activations keep a sensible scale through the network in eval mode."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: after one batch, exactly that batch's stats
    x = torch.randn((batch,) + tuple(input_shape[1:]), generator=generator)
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()


def export(model, args, path, input_names, output_names, dynamic_axes=None, opset=OPSET):
    """Exports `model` at `opset` with static shapes to `path` (written atomically).
    dynamic_axes (torch.onnx.export's) names the axes that are not static, e.g. the number of
    detections a detector's outputs have."""
    model.eval()
    tmp_path = path + ".part"
    # Autograd stays enabled: nn.MultiheadAttention only takes its exportable path when
    # gradients are on (its fused "fast path" has no ONNX symbolic).
    with torch.enable_grad():
        torch.onnx.export(model, args, tmp_path, opset_version=opset,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes, do_constant_folding=True)
    os.replace(tmp_path, path)


# --------------------------------------------------------------------------------------------
# torchvision image classifiers
# --------------------------------------------------------------------------------------------

def redraw_linear(linear, generator):
    """Draws an nn.Linear's weights from N(0, 1/fan_in) (outputs keep the scale of the inputs)
    and its bias from N(0, 0.02^2)."""
    with torch.no_grad():
        linear.weight.copy_(torch.randn(linear.weight.shape, generator=generator)
                            / math.sqrt(linear.in_features))
        linear.bias.copy_(0.02 * torch.randn(linear.bias.shape, generator=generator))


# Classifiers whose Linear layers are drawn again: torchvision initialises MobileNetV3's two
# classifier layers with N(0, 0.01^2), which leaves its logits around 0.01 (MobileNetV2 has one
# such layer and logits around 0.2).
REDRAW_CLASSIFIER = ("mobilenet_v3_small",)


def export_torchvision(name, path):
    import torchvision  # imported here so that the transformer models do not need it

    torch.manual_seed(seed_for(name))
    generator = torch.Generator().manual_seed(seed_for(name) + 1)
    model = getattr(torchvision.models, name)(weights=None)
    recalibrate_batch_norm(model, IMAGE_SHAPE, generator)
    if name in REDRAW_CLASSIFIER:
        for m in model.classifier.modules():
            if isinstance(m, nn.Linear):
                redraw_linear(m, generator)
    x = torch.randn(IMAGE_SHAPE, generator=generator)
    export(model, (x,), path, ["input"], ["logits"])


def export_vit(name, path):
    """torchvision ViT: its head starts at zero, so it is drawn again (logits of about unit
    scale); LayerNorms get random affine parameters."""
    import torchvision

    torch.manual_seed(seed_for(name))
    generator = torch.Generator().manual_seed(seed_for(name) + 1)
    model = getattr(torchvision.models, name)(weights=None)
    redraw_linear(model.heads.head, generator)
    randomise_layer_norms(model, generator)
    x = torch.randn(IMAGE_SHAPE, generator=generator)
    export(model, (x,), path, ["input"], ["logits"])


# --------------------------------------------------------------------------------------------
# A small recurrent model: LSTM then GRU
# --------------------------------------------------------------------------------------------

LSTM_GRU_STEPS = 48
LSTM_GRU_FEATURES = 64
LSTM_GRU_HIDDEN = 128


class LstmGru(nn.Module):
    """nn.LSTM followed by nn.GRU (one layer each, batch_first), with explicit initial states
    in and final states out, as a streaming model would have."""

    def __init__(self, features=LSTM_GRU_FEATURES, hidden=LSTM_GRU_HIDDEN):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, x, lstm_h0, lstm_c0, gru_h0):
        y, (lstm_h, lstm_c) = self.lstm(x, (lstm_h0, lstm_c0))
        y, gru_h = self.gru(y, gru_h0)
        return y, lstm_h, lstm_c, gru_h


def export_lstm_gru(name, path):
    torch.manual_seed(seed_for(name))  # nn.LSTM / nn.GRU draw U(-1/sqrt(H), 1/sqrt(H))
    generator = torch.Generator().manual_seed(seed_for(name) + 1)
    model = LstmGru()
    x = torch.randn((1, LSTM_GRU_STEPS, LSTM_GRU_FEATURES), generator=generator)
    states = tuple(0.1 * torch.randn((1, 1, LSTM_GRU_HIDDEN), generator=generator)
                   for _ in range(3))
    export(model, (x,) + states, path, ["input", "lstm_h0", "lstm_c0", "gru_h0"],
           ["output", "lstm_h", "lstm_c", "gru_h"])


# --------------------------------------------------------------------------------------------
# torch.nn.TransformerEncoder
# --------------------------------------------------------------------------------------------

def redraw_transformer_layer(layer, generator):
    """Draws fresh weights for one TransformerEncoderLayer (matrices Xavier-uniform as torch
    does, biases small random values) and random LayerNorm affine parameters."""
    with torch.no_grad():
        for pname, p in layer.named_parameters():
            if "norm" in pname:
                continue
            if p.dim() >= 2:
                bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
                p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)
            else:
                p.copy_(0.02 * torch.randn(p.shape, generator=generator))
    randomise_layer_norms(layer, generator)


def export_transformer_encoder(name, path):
    torch.manual_seed(seed_for(name))
    generator = torch.Generator().manual_seed(seed_for(name) + 1)
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    # nn.TransformerEncoder deep-copies `layer`, so all layers start with the same weights.
    for sub in model.layers:
        redraw_transformer_layer(sub, generator)
    x = torch.randn((1, 64, 256), generator=generator)
    export(model, (x,), path, ["input"], ["output"])


# --------------------------------------------------------------------------------------------
# A BERT-style encoder from plain modules
# --------------------------------------------------------------------------------------------

class BertEmbeddings(nn.Module):
    """Token + position + segment embeddings, then LayerNorm."""

    def __init__(self, vocab, hidden, max_positions, segments, eps):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.segment = nn.Embedding(segments, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        self.register_buffer("position_ids", torch.arange(max_positions).unsqueeze(0),
                             persistent=False)

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        positions = self.position_ids[:, :seq]
        segments = torch.zeros_like(input_ids)  # single-segment input: all segment 0
        x = self.word(input_ids) + self.position(positions) + self.segment(segments)
        return self.norm(x)


class BertSelfAttention(nn.Module):
    """Multi-head self-attention with an additive mask, output projection, residual, LayerNorm."""

    def __init__(self, hidden, heads, eps):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).transpose(1, 2)  # [B, H, S, D]

    def forward(self, x, additive_mask):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + additive_mask, dim=-1)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(x.shape)
        return self.norm(x + self.out(context))


class BertLayer(nn.Module):
    """Self-attention block followed by a GELU feed-forward block (post-LayerNorm)."""

    def __init__(self, hidden, heads, intermediate, eps):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads, eps)
        self.ffn_in = nn.Linear(hidden, intermediate)
        self.ffn_out = nn.Linear(intermediate, hidden)
        self.gelu = nn.GELU()  # exact (erf) GELU
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, additive_mask):
        x = self.attention(x, additive_mask)
        return self.norm(x + self.ffn_out(self.gelu(self.ffn_in(x))))


class BertEncoder(nn.Module):
    def __init__(self, vocab=30522, hidden=768, heads=12, intermediate=3072, layers=4,
                 max_positions=512, segments=2, eps=1e-12):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, hidden, max_positions, segments, eps)
        self.layers = nn.ModuleList(
            BertLayer(hidden, heads, intermediate, eps) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        # [B, S] with 1 = attend, 0 = padding  ->  [B, 1, 1, S] with 0 or -10000
        mask = attention_mask[:, None, None, :].to(torch.float32)
        additive_mask = (1.0 - mask) * -10000.0
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x, additive_mask)
        return x


def init_bert_weights(model, generator):
    """BERT-style N(0, 0.02) weights; biases and LayerNorm affine parameters are also random
    (instead of 0 / 1) so that every parameter influences the output."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                m.weight.copy_(0.02 * torch.randn(m.weight.shape, generator=generator))
            if isinstance(m, nn.Linear):
                m.bias.copy_(0.02 * torch.randn(m.bias.shape, generator=generator))
    randomise_layer_norms(model, generator)


def export_bert4(name, path, seq=128, vocab=30522):
    torch.manual_seed(seed_for(name))
    generator = torch.Generator().manual_seed(seed_for(name) + 1)
    model = BertEncoder(vocab=vocab)
    init_bert_weights(model, generator)
    input_ids = torch.randint(0, vocab, (1, seq), generator=generator, dtype=torch.int64)
    attention_mask = torch.ones((1, seq), dtype=torch.int64)
    attention_mask[:, seq - 28:] = 0
    export(model, (input_ids, attention_mask), path,
           ["input_ids", "attention_mask"], ["last_hidden_state"])


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------

def model_exporters():
    """Model name -> function(name, path) that writes it."""
    exporters = {name: export_torchvision
                 for name in ("resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
                              "squeezenet1_1")}
    exporters["vit_b_16"] = export_vit
    exporters["transformer_encoder"] = export_transformer_encoder
    exporters["bert4"] = export_bert4
    exporters["lstm_gru"] = export_lstm_gru
    return exporters


def parse_args(argv, names):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default=os.path.join("build", "models"),
                        help="folder for the .onnx files (default: build/models)")
    parser.add_argument("--force", action="store_true", help="re-export existing models")
    parser.add_argument("--only", action="append", choices=names, metavar="NAME",
                        help=f"export only this model (repeatable); one of {', '.join(names)}")
    return parser.parse_args(argv)


def main(argv=None):
    exporters = model_exporters()
    args = parse_args(argv, list(exporters))
    os.makedirs(args.out_dir, exist_ok=True)
    failures = 0
    for name, exporter in exporters.items():
        if args.only and name not in args.only:
            continue
        path = os.path.join(args.out_dir, name + ".onnx")
        if os.path.exists(path) and not args.force:
            print(f"exists: {path} (use --force to re-export)")
            continue
        start = time.perf_counter()
        try:
            exporter(name, path)
        except Exception as exc:  # report and go on with the other models
            failures += 1
            print(f"ERROR: {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB, "
              f"{time.perf_counter() - start:.1f} s)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
