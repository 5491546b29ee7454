#!/usr/bin/env python3
"""A small decoder-only language model with a key-value cache and 4-bit weights, in the form
onnxruntime's generative-AI tools write (random weights, nothing downloaded):

    make_decoder_model.py OUT.onnx [--layers 4] [--hidden 512] [--heads 8] [--kv-heads 2]
                                   [--vocab 8192] [--block-size 32]

Inputs:  input_ids int64 [batch, seq], attention_mask int64 [batch, past + seq],
         past_key_values.<i>.key / .value float [batch, kv_heads, past, head_dim]
Outputs: logits float [batch, seq, vocab], present.<i>.key / .value [batch, kv_heads, past +
         seq, head_dim]

Per layer: LayerNormalization, q/k/v projections and the output projection as com.microsoft
MatMulNBits (4-bit, asymmetric, blocks of --block-size along K), com.microsoft
GroupQueryAttention with rotary embedding (cos/sin caches) over the cache, residual Add, then
LayerNormalization and a SiLU-gated MLP (gate and up MatMulNBits, x * Sigmoid(x) * up, down
MatMulNBits). A final LayerNormalization and a MatMulNBits language-model head. Token embedding
by Gather.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MAX_POSITIONS = 2048


def quantize_4bit(w, block):
    """w [K, N] float -> MatMulNBits' B [N, K/block, block/2] uint8, scales [N * K/block] float,
    zero_points [N * ceil(K/block / 2)] uint8 (asymmetric, per block of K for each column)."""
    k, n = w.shape
    assert k % block == 0
    blocks = k // block
    wt = w.T.reshape(n, blocks, block)
    lo = np.minimum(wt.min(axis=2), 0.0)
    hi = np.maximum(wt.max(axis=2), 0.0)
    scale = np.where(hi > lo, (hi - lo) / 15.0, 1.0).astype(np.float32)
    zp = np.clip(np.round(-lo / scale), 0, 15).astype(np.uint8)
    q = np.clip(np.round(wt / scale[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)  # element 2i low, 2i+1 high
    zp_cols = (blocks + 1) // 2
    zp_padded = np.zeros((n, zp_cols * 2), np.uint8)
    zp_padded[:, :blocks] = zp
    zp_packed = (zp_padded[:, 0::2] | (zp_padded[:, 1::2] << 4)).astype(np.uint8)
    dequant = ((q.astype(np.float32) - zp[..., None]) * scale[..., None]).reshape(n, k).T
    return packed, scale.reshape(-1), zp_packed.reshape(-1), dequant


class Builder:
    def __init__(self, rng, block):
        self.rng = rng
        self.block = block
        self.nodes = []
        self.inits = []
        self.count = 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op, inputs, outputs=None, domain="", **attrs):
        outputs = outputs or [self.name(op.lower())]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.name(op), domain=domain,
                                           **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def linear(self, x, k, n, prefix):
        w = (self.rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        packed, scales, zps, _ = quantize_4bit(w, self.block)
        return self.node("MatMulNBits", [x, self.init(prefix + ".qweight", packed),
                                         self.init(prefix + ".scales", scales),
                                         self.init(prefix + ".qzeros", zps)],
                         domain="com.microsoft", K=k, N=n, bits=4, block_size=self.block)

    def layer_norm(self, x, hidden, prefix):
        gamma = (1.0 + 0.1 * self.rng.standard_normal(hidden)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(hidden)).astype(np.float32)
        return self.node("LayerNormalization", [x, self.init(prefix + ".gamma", gamma),
                                                self.init(prefix + ".beta", beta)],
                         axis=-1, epsilon=1e-5)


def build(args):
    rng = np.random.default_rng(17)
    b = Builder(rng, args.block_size)
    hidden, heads, kv_heads = args.hidden, args.heads, args.kv_heads
    head_dim = hidden // heads
    inter = args.intermediate or ((hidden * 8 // 3 + args.block_size - 1) // args.block_size *
                                  args.block_size)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                            ["batch", "total"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                             ["batch", "seq", args.vocab])]
    # GroupQueryAttention's lengths from the mask: seqlens_k = sum(mask) - 1 per row, and the
    # total length = the mask's width.
    mask_sum = b.node("ReduceSum", ["attention_mask", b.init("one_axis", np.array([1], np.int64))],
                      keepdims=0)
    seqlens = b.node("Cast", [b.node("Sub", [mask_sum, b.init("one", np.array(1, np.int64))])],
                     to=TensorProto.INT32)
    total = b.node("Cast", [b.node("Gather", [b.node("Shape", ["attention_mask"]),
                                              b.init("one_index", np.array(1, np.int64))],
                                   axis=0)], to=TensorProto.INT32)
    inv = 1.0 / (10000 ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    angles = np.outer(np.arange(MAX_POSITIONS), inv)
    cos = b.init("cos_cache", np.cos(angles).astype(np.float32))
    sin = b.init("sin_cache", np.sin(angles).astype(np.float32))

    embed = (0.5 * rng.standard_normal((args.vocab, hidden))).astype(np.float32)
    x = b.node("Gather", [b.init("embed_tokens", embed), "input_ids"], axis=0)
    for i in range(args.layers):
        p = f"layers.{i}"
        past_k, past_v = f"past_key_values.{i}.key", f"past_key_values.{i}.value"
        for name in (past_k, past_v):
            inputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, ["batch", kv_heads, "past", head_dim]))
        pres_k, pres_v = f"present.{i}.key", f"present.{i}.value"
        for name in (pres_k, pres_v):
            outputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, ["batch", kv_heads, "total", head_dim]))
        h = b.layer_norm(x, hidden, p + ".input_norm")
        q = b.linear(h, hidden, hidden, p + ".q_proj")
        k = b.linear(h, hidden, kv_heads * head_dim, p + ".k_proj")
        v = b.linear(h, hidden, kv_heads * head_dim, p + ".v_proj")
        attn = b.node("GroupQueryAttention", [q, k, v, past_k, past_v, seqlens, total, cos, sin],
                      [b.name("attn"), pres_k, pres_v], domain="com.microsoft",
                      num_heads=heads, kv_num_heads=kv_heads, do_rotary=1)[0]
        x = b.node("Add", [x, b.linear(attn, hidden, hidden, p + ".o_proj")])
        h = b.layer_norm(x, hidden, p + ".post_norm")
        gate = b.linear(h, hidden, inter, p + ".gate_proj")
        up = b.linear(h, hidden, inter, p + ".up_proj")
        act = b.node("Mul", [b.node("Mul", [gate, b.node("Sigmoid", [gate])]), up])
        x = b.node("Add", [x, b.linear(act, inter, hidden, p + ".down_proj")])
    h = b.layer_norm(x, hidden, "final_norm")
    b.node("MatMulNBits", [h, *[b.init("lm_head." + s, a) for s, a in
                                zip(("qweight", "scales", "qzeros"),
                                    quantize_4bit((rng.standard_normal((hidden, args.vocab)) /
                                                   np.sqrt(hidden)).astype(np.float32),
                                                  args.block_size)[:3])]],
           ["logits"], domain="com.microsoft", K=hidden, N=args.vocab, bits=4,
           block_size=args.block_size)
    graph = helper.make_graph(b.nodes, "decoder_int4", inputs, outputs, b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              producer_name="nxrt make_decoder_model.py")
    model.ir_version = 8
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("output")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--intermediate", type=int, default=0)
    ap.add_argument("--block-size", type=int, default=32)
    args = ap.parse_args()
    model = build(args)
    onnx.save(model, args.output)
    print(f"wrote {args.output}: {args.layers} layers, hidden {args.hidden}, "
          f"{args.heads}/{args.kv_heads} heads, vocab {args.vocab}, int4 blocks of "
          f"{args.block_size}")


if __name__ == "__main__":
    main()
