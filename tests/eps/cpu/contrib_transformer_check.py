#!/usr/bin/env python3
"""Checks nxrt's CPU kernels for onnxruntime's com.microsoft transformer operators against
onnxruntime itself.

Each case builds a one-node model (domain com.microsoft; opsets "" 17 and com.microsoft 1) whose
outputs carry no declared type or shape, runs it with onnxruntime's CPU provider and with
`nxrt run`, and compares every output: same shape and dtype, max |nxrt - ort| <= 1e-4 *
max(1, max |ort|). Prints one line per case and "N passed, N failed" last; exits 1 on a failure.

    python3 tests/eps/cpu/contrib_transformer_check.py --build-dir build [--filter TEXT]
        [--threads N] [--bert-model PATH]

The last case fuses tests/models' bert4 (default <build-dir>/models/bert4.onnx) with
onnxruntime's transformer optimizer (Attention, SkipLayerNormalization, BiasGelu) and compares
the fused model; it is skipped, with the reason printed, when the model or the optimizer is
missing.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

RNG_SEED = 1234


class Case:
    def __init__(self, name, op, inputs, outputs, attrs=None, tol=1e-4, ort_nodes=None,
                 domain="com.microsoft"):
        self.name = name
        self.domain = domain  # onnxruntime registers a few of its ops in the ONNX domain
        # onnxruntime has no CPU kernel for a few ops (BiasAdd): ort_nodes then gives an
        # equivalent standard-ONNX subgraph for onnxruntime to run instead.
        self.ort_nodes = ort_nodes
        self.op = op
        self.inputs = inputs  # [(name, array or None)]; None = optional input left out
        self.outputs = outputs  # output names; "" = optional output not requested
        self.attrs = attrs or {}
        self.tol = tol

    def model(self, for_ort=False):
        present = [(n, a) for n, a in self.inputs if a is not None]
        node_inputs = [n if a is not None else "" for n, a in self.inputs]
        while node_inputs and node_inputs[-1] == "":
            node_inputs.pop()
        nodes = [helper.make_node(self.op, node_inputs, self.outputs, domain=self.domain,
                                  **self.attrs)]
        if for_ort and self.ort_nodes is not None:
            nodes = self.ort_nodes
        graph = helper.make_graph(
            nodes, self.name.replace(" ", "_"),
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
             for n, a in present],
            # Untyped outputs: the kernels must give their own types and shapes.
            [onnx.ValueInfoProto(name=o) for o in self.outputs if o])
        return helper.make_model(
            graph, ir_version=8,
            opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def rand(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Cases, one generator per operator family.

def gelu_cases(rng):
    cases = []
    for shape in [(2, 3, 8), (1, 7, 768), (4, 128, 96)]:
        x = rand(rng, *shape, scale=2.0)
        b = rand(rng, shape[-1])
        cases.append(Case(f"BiasGelu {shape}", "BiasGelu", [("A", x), ("B", b)], ["Y"]))
        cases.append(Case(f"FastGelu bias {shape}", "FastGelu", [("X", x), ("bias", b)], ["Y"]))
        cases.append(Case(f"FastGelu {shape}", "FastGelu", [("X", x)], ["Y"]))
        cases.append(Case(f"QuickGelu {shape}", "QuickGelu", [("X", x)], ["Y"]))
        cases.append(Case(f"QuickGelu alpha=1.0 {shape}", "QuickGelu", [("X", x)], ["Y"],
                          {"alpha": 1.0}))
    # onnxruntime implements BiasAdd for CUDA only: its CPU reference is Add(Add(X, bias), skip).
    ref = [helper.make_node("Add", ["X", "bias"], ["xb"]), helper.make_node("Add", ["xb", "skip"], ["Y"])]
    for shape in [(2, 4, 32), (1, 64, 320)]:
        cases.append(Case(f"BiasAdd {shape} (ort: Add, Add)", "BiasAdd",
                          [("X", rand(rng, *shape)), ("bias", rand(rng, shape[-1])),
                           ("skip", rand(rng, *shape))], ["Y"], ort_nodes=ref))
    return cases


def skip_ln_cases(rng):
    cases = []
    for shape in [(2, 3, 8), (3, 33, 768), (5, 64)]:
        h = shape[-1]
        x, s = rand(rng, *shape), rand(rng, *shape)
        g, b, bias = rand(rng, h), rand(rng, h), rand(rng, h)
        cases.append(Case(f"SkipLN all outputs {shape}", "SkipLayerNormalization",
                          [("x", x), ("skip", s), ("gamma", g), ("beta", b), ("bias", bias)],
                          ["y", "mean", "inv_std", "sum"], {"epsilon": 1e-5}))
        cases.append(Case(f"SkipLN no beta/bias {shape}", "SkipLayerNormalization",
                          [("x", x), ("skip", s), ("gamma", g)], ["y"]))
        cases.append(Case(f"SkipLN bias, no beta, sum only {shape}", "SkipLayerNormalization",
                          [("x", x), ("skip", s), ("gamma", g), ("beta", None), ("bias", bias)],
                          ["y", "", "", "sum"]))
        cases.append(Case(f"SkipSimplifiedLN {shape}", "SkipSimplifiedLayerNormalization",
                          [("x", x), ("skip", s), ("gamma", g), ("bias", bias)],
                          ["y", "", "inv_std", "sum"], {"epsilon": 1e-6}))
        cases.append(Case(f"SkipSimplifiedLN no bias {shape}", "SkipSimplifiedLayerNormalization",
                          [("x", x), ("skip", s), ("gamma", g)], ["y"]))
    # SimplifiedLayerNormalization (RMS norm; onnxruntime registers it in the ONNX domain):
    # the last axis, two axes, and the optional inv_std_var.
    for shape, axis, with_inv in [((2, 3, 8), -1, True), ((3, 33, 768), -1, False),
                                  ((4, 6, 10), 1, True)]:
        norm_shape = shape[axis:]
        cases.append(Case(f"SimplifiedLN {shape} axis={axis}", "SimplifiedLayerNormalization",
                          [("x", rand(rng, *shape)), ("scale", rand(rng, *norm_shape))],
                          ["y", "inv_std"] if with_inv else ["y"],
                          {"axis": axis, "epsilon": 1e-6}, domain=""))
    x = rand(rng, 3, 5, 16)
    for sshape in [(1, 5, 16), (5, 16)]:
        cases.append(Case(f"SkipLN shared skip {sshape}", "SkipLayerNormalization",
                          [("x", x), ("skip", rand(rng, *sshape)), ("gamma", rand(rng, 16)),
                           ("beta", rand(rng, 16))], ["y"]))
    return cases


def embed_ln_cases(rng):
    cases = []
    for (B, S, H, V) in [(2, 5, 8, 30), (3, 64, 128, 1000), (1, 1, 16, 10)]:
        ids = rng.integers(0, V, (B, S)).astype(np.int32)
        seg = rng.integers(0, 2, (B, S)).astype(np.int32)
        word, posemb, segemb = rand(rng, V, H), rand(rng, S + 3, H), rand(rng, 2, H)
        g, b = rand(rng, H), rand(rng, H)
        lengths = rng.integers(1, S + 1, B)
        mask = (np.arange(S)[None, :] < lengths[:, None]).astype(np.int32)
        full = [("input_ids", ids), ("segment_ids", seg), ("word_embedding", word),
                ("position_embedding", posemb), ("segment_embedding", segemb), ("gamma", g),
                ("beta", b)]
        tag = f"B={B} S={S} H={H}"
        cases.append(Case(f"EmbedLN mask, sum {tag}", "EmbedLayerNormalization",
                          full + [("mask", mask)], ["y", "mask_index", "embedding_sum"],
                          {"epsilon": 1e-5}))
        cases.append(Case(f"EmbedLN no mask {tag}", "EmbedLayerNormalization", full,
                          ["y", "mask_index"]))
        cases.append(Case(f"EmbedLN no segment {tag}", "EmbedLayerNormalization",
                          [("input_ids", ids), ("segment_ids", None), ("word_embedding", word),
                           ("position_embedding", posemb), ("segment_embedding", None),
                           ("gamma", g), ("beta", b), ("mask", mask)], ["y", "mask_index"]))
        pos = rng.integers(0, S + 3, (1, S)).astype(np.int32)
        cases.append(Case(f"EmbedLN position_ids [1,S] {tag}", "EmbedLayerNormalization",
                          full + [("mask", None), ("position_ids", pos)], ["y", "mask_index"]))
        pos = rng.integers(0, S + 3, (B, S)).astype(np.int32)
        cases.append(Case(f"EmbedLN position_ids [B,S] {tag}", "EmbedLayerNormalization",
                          full + [("mask", mask), ("position_ids", pos)], ["y", "mask_index"]))
    return cases


def lengths_mask(rng, B, S, T):
    """A 0/1 int32 [B, T] right-padding mask with at least one key per row."""
    lengths = rng.integers(1, T + 1, B)
    return (np.arange(T)[None, :] < lengths[:, None]).astype(np.int32), lengths.astype(np.int32)


def attention_cases(rng):
    cases = []
    for (B, S, hidden, N) in [(2, 8, 32, 4), (1, 1, 16, 2), (2, 128, 768, 12)]:
        x = rand(rng, B, S, hidden)
        w = rand(rng, hidden, 3 * hidden, scale=hidden ** -0.5)
        bias = rand(rng, 3 * hidden)
        tag = f"B={B} S={S} hidden={hidden} N={N}"
        base = [("input", x), ("weights", w), ("bias", bias)]
        attrs = {"num_heads": N}
        mask2, lengths = lengths_mask(rng, B, S, S)
        cases.append(Case(f"Attention no mask {tag}", "Attention", base, ["y"], attrs))
        cases.append(Case(f"Attention mask [B] {tag}", "Attention", base + [("mask", lengths)],
                          ["y"], attrs))
        cases.append(Case(f"Attention mask [B,S] {tag}", "Attention", base + [("mask", mask2)],
                          ["y"], attrs))
        mask3 = (rng.random((B, S, S)) > 0.3).astype(np.int32)
        mask3[:, :, 0] = 1
        cases.append(Case(f"Attention mask [B,S,S] {tag}", "Attention",
                          base + [("mask", mask3)], ["y"], attrs))
        cases.append(Case(f"Attention unidirectional, present {tag}", "Attention",
                          base + [("mask", mask2)], ["y", "present"],
                          {"num_heads": N, "unidirectional": 1}))
    B, S, hidden, N = 2, 6, 24, 3
    x = rand(rng, B, S, hidden)
    # Q/K of 24, V of 12: qkv_hidden_sizes.
    w = rand(rng, hidden, 60, scale=0.3)
    cases.append(Case("Attention qkv_hidden_sizes [24,24,12], scale", "Attention",
                      [("input", x), ("weights", w), ("bias", rand(rng, 60))], ["y"],
                      {"num_heads": N, "qkv_hidden_sizes": [24, 24, 12], "scale": 0.25}))
    w = rand(rng, hidden, 3 * hidden, scale=0.3)
    bias = rand(rng, 3 * hidden)
    # onnxruntime 1.31's CPU Attention crashes without bias: its reference gets a zero bias.
    zero = helper.make_node("Constant", [], ["zero_bias"],
                            value=helper.make_tensor("z", onnx.TensorProto.FLOAT, [3 * hidden],
                                                     [0.0] * (3 * hidden)))
    ref = [zero, helper.make_node("Attention", ["input", "weights", "zero_bias"], ["y"],
                                  domain="com.microsoft", num_heads=N)]
    cases.append(Case("Attention without bias (ort: zero bias)", "Attention",
                      [("input", x), ("weights", w)], ["y"], {"num_heads": N}, ort_nodes=ref))
    ab = rand(rng, 1, N, S, S)
    cases.append(Case("Attention attention_bias [1,N,S,S]", "Attention",
                      [("input", x), ("weights", w), ("bias", bias), ("mask", None),
                       ("past", None), ("attention_bias", ab)], ["y"], {"num_heads": N}))
    mask2, lengths = lengths_mask(rng, B, S, S)
    cases.append(Case("Attention mask [B,S], mask_filter_value=-1000", "Attention",
                      [("input", x), ("weights", w), ("bias", bias), ("mask", mask2)], ["y"],
                      {"num_heads": N, "mask_filter_value": -1000.0}))
    starts = np.minimum(rng.integers(0, 3, B), lengths - 1).astype(np.int32)
    cases.append(Case("Attention mask [2B] end/start positions", "Attention",
                      [("input", x), ("weights", w), ("bias", bias),
                       ("mask", np.concatenate([lengths, starts]))], ["y"], {"num_heads": N}))
    ab = rand(rng, B, N, S, S)
    cases.append(Case("Attention attention_bias [B,N,S,S] + mask [B] + unidirectional",
                      "Attention",
                      [("input", x), ("weights", w), ("bias", bias), ("mask", lengths),
                       ("past", None), ("attention_bias", ab)], ["y"],
                      {"num_heads": N, "unidirectional": 1}))
    # GPT-2 decoding: past [2, B, N, P, H], one and several new tokens, causal, [B, T] mask.
    for S_new in (1, 3):
        P, H = 5, hidden // N
        x = rand(rng, B, S_new, hidden)
        past = rand(rng, 2, B, N, P, H)
        mask, _ = lengths_mask(rng, B, S_new, P + S_new)
        mask[:, -S_new:] = 1
        cases.append(Case(f"Attention past/present causal S={S_new}", "Attention",
                          [("input", x), ("weights", w), ("bias", bias), ("mask", mask),
                           ("past", past)], ["y", "present"],
                          {"num_heads": N, "unidirectional": 1}))
        cases.append(Case(f"Attention past/present no mask S={S_new}", "Attention",
                          [("input", x), ("weights", w), ("bias", bias), ("mask", None),
                           ("past", past)], ["y", "present"], {"num_heads": N}))
    return cases


def unpacked_mha(packed, parts, axis, attrs):
    """onnxruntime's CPU MultiHeadAttention rejects packed QKV/KV: the reference splits the
    packed tensor (along its "3"/"2" axis), flattens each part to [B, S, N*H] and runs the
    separate-input form."""
    names = [f"{packed}_{i}" for i in range(parts)]
    flat = [f"{n}_flat" for n in names]
    nodes = [helper.make_node("Split", [packed], names, axis=axis),
             helper.make_node("Constant", [], ["flat_shape"],
                              value=helper.make_tensor("v", onnx.TensorProto.INT64, [3],
                                                       [0, 0, -1]))]
    nodes += [helper.make_node("Reshape", [n, "flat_shape"], [f]) for n, f in zip(names, flat)]
    return nodes, flat


def mha_cases(rng):
    cases = []
    for (B, S, L, N, H) in [(2, 7, 7, 4, 8), (2, 5, 9, 2, 16), (1, 128, 128, 12, 64)]:
        D = N * H
        q, k, v = rand(rng, B, S, D), rand(rng, B, L, D), rand(rng, B, L, D)
        bias = rand(rng, 3 * D)
        tag = f"B={B} S={S} L={L} N={N} H={H}"
        attrs = {"num_heads": N}
        cases.append(Case(f"MHA separate {tag}", "MultiHeadAttention",
                          [("q", q), ("k", k), ("v", v)], ["y"], attrs))
        cases.append(Case(f"MHA separate bias {tag}", "MultiHeadAttention",
                          [("q", q), ("k", k), ("v", v), ("bias", bias)], ["y"], attrs))
        mask, lengths = lengths_mask(rng, B, S, L)
        cases.append(Case(f"MHA key_padding_mask [B,L] {tag}", "MultiHeadAttention",
                          [("q", q), ("k", k), ("v", v), ("bias", bias), ("mask", mask)], ["y"],
                          attrs))
        cases.append(Case(f"MHA key_padding_mask [B] {tag}", "MultiHeadAttention",
                          [("q", q), ("k", k), ("v", v), ("bias", None), ("mask", lengths)],
                          ["y"], attrs))
        ab = rand(rng, B, 1, S, L)
        cases.append(Case(f"MHA attention_bias [B,1,S,L] {tag}", "MultiHeadAttention",
                          [("q", q), ("k", k), ("v", v), ("bias", None), ("mask", None),
                           ("attention_bias", ab)], ["y"], attrs))
        kv = rand(rng, B, L, N, 2, H)
        ref, (kf, vf) = unpacked_mha("kv", 2, 3, attrs)
        ref.append(helper.make_node("MultiHeadAttention", ["q", kf, vf], ["y"],
                                    domain="com.microsoft", **attrs))
        cases.append(Case(f"MHA packed KV {tag} (ort: split)", "MultiHeadAttention",
                          [("q", q), ("kv", kv)], ["y"], attrs, ort_nodes=ref))
        kb, vb = rand(rng, B, N, L, H), rand(rng, B, N, L, H)
        cases.append(Case(f"MHA K/V [B,N,L,H] {tag}", "MultiHeadAttention",
                          [("q", q), ("k", kb), ("v", vb)], ["y"], attrs))
        if S == L:
            qkv = rand(rng, B, S, N, 3, H)
            ref, (qf, kf, vf) = unpacked_mha("qkv", 3, 3, attrs)
            ref.append(helper.make_node("MultiHeadAttention", [qf, kf, vf], ["y"],
                                        domain="com.microsoft", **attrs))
            cases.append(Case(f"MHA packed QKV {tag} (ort: split)", "MultiHeadAttention",
                              [("qkv", qkv)], ["y"], attrs, ort_nodes=ref))
    B, S, N, H = 2, 6, 3, 8
    q, k, v = rand(rng, B, S, N * H), rand(rng, B, S, N * H), rand(rng, B, S, N * H)
    mask3 = (rng.random((B, S, S)) > 0.3).astype(np.int32)
    mask3[:, :, 0] = 1
    cases.append(Case("MHA unidirectional, mask [B,S,T], mask_filter_value=-500",
                      "MultiHeadAttention",
                      [("q", q), ("k", k), ("v", v), ("bias", rand(rng, 3 * N * H)),
                       ("mask", mask3)], ["y"],
                      {"num_heads": N, "unidirectional": 1, "mask_filter_value": -500.0}))
    # Decoder self-attention with a cache: past_key/past_value -> present, causal.
    B, N, H, P = 2, 4, 8, 6
    D = N * H
    for S in (1, 4):
        q, k, v = rand(rng, B, S, D), rand(rng, B, S, D), rand(rng, B, S, D)
        pk, pv = rand(rng, B, N, P, H), rand(rng, B, N, P, H)
        bias = rand(rng, 3 * D)
        mask, _ = lengths_mask(rng, B, S, P + S)
        mask[:, -S:] = 1
        ins = [("q", q), ("k", k), ("v", v), ("bias", bias), ("mask", mask),
               ("attention_bias", None), ("past_key", pk), ("past_value", pv)]
        cases.append(Case(f"MHA past/present S={S}", "MultiHeadAttention", ins,
                          ["y", "present_key", "present_value"], {"num_heads": N}))
        cases.append(Case(f"MHA past/present unidirectional S={S}", "MultiHeadAttention", ins,
                          ["y", "present_key", "present_value"],
                          {"num_heads": N, "unidirectional": 1, "scale": 0.2}))
    return cases


def rotary_cases(rng):
    cases = []
    for (B, S, N, H, max_pos) in [(2, 3, 2, 8, 16), (1, 64, 32, 128, 256), (4, 1, 8, 64, 512)]:
        tag = f"B={B} S={S} N={N} H={H}"
        x = rand(rng, B, S, N * H)
        x4 = rand(rng, B, N, S, H)
        cos, sin = rand(rng, max_pos, H // 2), rand(rng, max_pos, H // 2)
        pos = rng.integers(0, max_pos - S, (B, S)).astype(np.int64)
        start = np.array([max_pos - S - 1], np.int64)
        for inter in (0, 1):
            attrs = {"interleaved": inter}
            cases.append(Case(f"Rotary [B,S,D] pos [B,S] interleaved={inter} {tag}",
                              "RotaryEmbedding",
                              [("x", x), ("pos", pos), ("cos", cos), ("sin", sin)], ["y"], attrs))
            cases.append(Case(f"Rotary [B,N,S,H] interleaved={inter} {tag}", "RotaryEmbedding",
                              [("x", x4), ("pos", pos), ("cos", cos), ("sin", sin)], ["y"],
                              attrs))
        cases.append(Case(f"Rotary start position [1] {tag}", "RotaryEmbedding",
                          [("x", x), ("pos", start), ("cos", cos), ("sin", sin)], ["y"]))
        rd = H // 2
        cases.append(Case(f"Rotary partial rotary_embedding_dim={rd} {tag}", "RotaryEmbedding",
                          [("x", x), ("pos", pos), ("cos", cos[:, : rd // 2].copy()),
                           ("sin", sin[:, : rd // 2].copy())], ["y"],
                          {"rotary_embedding_dim": rd, "num_heads": N}))
    return cases


def gqa_cases(rng):
    """Decoder self-attention with a KV cache: the first prompt, then one token per step."""
    cases = []
    for (B, N, kvN, H, S_prompt) in [(1, 8, 2, 16, 7), (1, 32, 8, 128, 33), (2, 4, 4, 16, 5)]:
        tag = f"B={B} N={N} kvN={kvN} H={H}"
        attrs = {"num_heads": N, "kv_num_heads": kvN}
        max_pos = 128
        cos, sin = rand(rng, max_pos, H // 2), rand(rng, max_pos, H // 2)
        variants = [("", {}), (" rotary", {"do_rotary": 1}),
                    (" rotary interleaved", {"do_rotary": 1, "rotary_interleaved": 1}),
                    (" window=4 softcap=2", {"local_window_size": 4, "softcap": 2.0}),
                    (" scale=0.1", {"scale": 0.1})]
        for S, P in [(S_prompt, 0), (1, S_prompt), (1, 40)]:
            q = rand(rng, B, S, N * H)
            k, v = rand(rng, B, S, kvN * H), rand(rng, B, S, kvN * H)
            T = P + S
            seqlens = np.full(B, T - 1, np.int32)
            total = np.array(T, np.int32)
            past = [("past_key", None), ("past_value", None)]
            if P:
                past = [("past_key", rand(rng, B, kvN, P, H)),
                        ("past_value", rand(rng, B, kvN, P, H))]
            step = "prompt" if P == 0 else f"decode P={P}"
            for vname, extra in variants:
                rot = [("cos", cos), ("sin", sin)] if extra.get("do_rotary") else []
                ins = ([("q", q), ("k", k), ("v", v)] + past +
                       [("seqlens_k", seqlens), ("total_seq_len", total)] + rot)
                cases.append(Case(f"GQA {step}{vname} {tag}", "GroupQueryAttention", ins,
                                  ["y", "present_key", "present_value"], {**attrs, **extra}))
            packed = np.concatenate([q, k, v], axis=2)
            ins = ([("qkv", packed), ("k", None), ("v", None)] + past +
                   [("seqlens_k", seqlens), ("total_seq_len", total)])
            cases.append(Case(f"GQA {step} packed QKV {tag}", "GroupQueryAttention", ins,
                              ["y", "present_key", "present_value"], attrs))
    # Batched sequences of different lengths: right-padded prompt, then a decode step where each
    # sequence's past fills a different part of the buffer.
    B, N, kvN, H, S, buf = 2, 4, 2, 16, 6, 9
    seqlens = np.array([S - 1, S - 3], np.int32)
    ins = [("q", rand(rng, B, S, N * H)), ("k", rand(rng, B, S, kvN * H)),
           ("v", rand(rng, B, S, kvN * H)), ("past_key", None), ("past_value", None),
           ("seqlens_k", seqlens), ("total_seq_len", np.array(S, np.int32))]
    cases.append(Case("GQA right-padded prompt, B=2", "GroupQueryAttention", ins,
                      ["y", "present_key", "present_value"],
                      {"num_heads": N, "kv_num_heads": kvN}))
    seqlens = np.array([buf, buf - 3], np.int32)
    ins = [("q", rand(rng, B, 1, N * H)), ("k", rand(rng, B, 1, kvN * H)),
           ("v", rand(rng, B, 1, kvN * H)), ("past_key", rand(rng, B, kvN, buf, H)),
           ("past_value", rand(rng, B, kvN, buf, H)), ("seqlens_k", seqlens),
           ("total_seq_len", np.array(buf + 1, np.int32))]
    cases.append(Case("GQA decode, B=2 of different lengths", "GroupQueryAttention", ins,
                      ["y", "present_key", "present_value"],
                      {"num_heads": N, "kv_num_heads": kvN}))
    # A past buffer longer than the sequence (shared-buffer style): present keeps its length.
    B, N, kvN, H, P, buf = 1, 4, 2, 8, 5, 12
    pk, pv = np.zeros((B, kvN, buf, H), np.float32), np.zeros((B, kvN, buf, H), np.float32)
    pk[:, :, :P], pv[:, :, :P] = rand(rng, B, kvN, P, H), rand(rng, B, kvN, P, H)
    ins = [("q", rand(rng, B, 1, N * H)), ("k", rand(rng, B, 1, kvN * H)),
           ("v", rand(rng, B, 1, kvN * H)), ("past_key", pk), ("past_value", pv),
           ("seqlens_k", np.array([P], np.int32)), ("total_seq_len", np.array(P + 1, np.int32))]
    cases.append(Case("GQA decode into a longer past buffer", "GroupQueryAttention", ins,
                      ["y", "present_key", "present_value"],
                      {"num_heads": N, "kv_num_heads": kvN}))
    return cases


FAMILIES = [gelu_cases, skip_ln_cases, embed_ln_cases, attention_cases, mha_cases,
            rotary_cases, gqa_cases]


# ---------------------------------------------------------------------------------------------

def run_nxrt(build_dir, model_path, case, feeds, out_dir, threads):
    cmd = [os.path.join(build_dir, "bin", "nxrt"), "run", model_path, "--output-dir", out_dir]
    if threads:
        cmd += ["--threads", str(threads)]
    for n, a in feeds.items():
        p = os.path.join(out_dir, f"in_{n}.npy")
        np.save(p, a)
        cmd += ["--input", f"{n}={p}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError("nxrt failed: " + (proc.stderr or proc.stdout).strip()[-600:])
    return [np.load(os.path.join(out_dir, f"{o}.npy")) for o in case.outputs if o]


def check(case, build_dir, tmp, threads):
    model = case.model()
    d = tempfile.mkdtemp(dir=tmp)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    feeds = {n: a for n, a in case.inputs if a is not None}
    ort_path = path
    if case.ort_nodes is not None:
        ort_path = os.path.join(d, "ort_model.onnx")
        onnx.save(case.model(for_ort=True), ort_path)
    sess = ort.InferenceSession(ort_path, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = run_nxrt(build_dir, path, case, feeds, d, threads)
    names = [o for o in case.outputs if o]
    worst = 0.0
    for name, w, g in zip(names, want, got):
        if w.shape != g.shape or w.dtype != g.dtype:
            return False, f"{name}: ort {w.dtype}{list(w.shape)} vs nxrt {g.dtype}{list(g.shape)}"
        if w.size == 0:
            continue
        if w.dtype.kind in "iub":
            if not np.array_equal(w, g):
                return False, f"{name}: integer values differ"
            continue
        diff = float(np.max(np.abs(w.astype(np.float64) - g.astype(np.float64))))
        limit = case.tol * max(1.0, float(np.max(np.abs(w))))
        if not diff <= limit:
            return False, f"{name}: max diff {diff:.3g} > {limit:.3g}"
        worst = max(worst, diff)
    return True, f"max diff {worst:.2g}"


def bert_case(model, build_dir, tmp, threads):
    """(ok or None for skipped, detail): the fused bert4 against onnxruntime."""
    if not os.path.exists(model):
        return None, f"skipped: no model at {model} (tools/scripts/prepare_test_models.sh puts it there)"
    fused = os.path.join(tmp, "bert4_fused.onnx")
    # opt_level 0: the Python fusions only (the onnxruntime pass wants torch installed).
    proc = subprocess.run(
        [sys.executable, "-m", "onnxruntime.transformers.optimizer", "--input", model,
         "--output", fused, "--model_type", "bert", "--num_heads", "12", "--hidden_size", "768",
         "--opt_level", "0"], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or not os.path.exists(fused):
        return None, "skipped: the transformer optimizer failed: " + proc.stderr.strip()[-300:]
    ops = {n.op_type for n in onnx.load(fused, load_external_data=False).graph.node
           if n.domain == "com.microsoft"}
    rng = np.random.default_rng(RNG_SEED)
    ids = rng.integers(0, 30522, (1, 128)).astype(np.int64)
    mask = np.ones((1, 128), np.int64)
    mask[0, 100:] = 0
    feeds = {"input_ids": ids, "attention_mask": mask}
    sess = ort.InferenceSession(fused, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    d = tempfile.mkdtemp(dir=tmp)
    case = Case("bert4", "", [], ["last_hidden_state"])
    got = run_nxrt(build_dir, fused, case, feeds, d, threads)[0]
    if got.shape != want.shape:
        return False, f"shape {got.shape} vs onnxruntime {want.shape}"
    diff = float(np.max(np.abs(got - want)))
    limit = 1e-4 * max(1.0, float(np.max(np.abs(want))))
    return diff <= limit, f"com.microsoft ops {sorted(ops)}: max diff {diff:.2g} (limit {limit:.2g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--filter", default="", help="run only cases whose name contains this")
    ap.add_argument("--threads", type=int, default=0, help="nxrt's thread count (0: its default)")
    ap.add_argument("--bert-model", default="",
                    help="bert4.onnx for the fused-model case (default <build-dir>/models/)")
    args = ap.parse_args()
    # onnxruntime warns when its shape inference of a contrib op disagrees with the run (GQA's
    # present length); only errors matter here.
    ort.set_default_logger_severity(3)
    rng = np.random.default_rng(RNG_SEED)
    cases = [c for fam in FAMILIES for c in fam(rng)]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if args.filter and args.filter not in case.name:
                continue
            try:
                ok, detail = check(case, args.build_dir, tmp, args.threads)
            except Exception as e:  # a failure to run is a failed case
                ok, detail = False, f"{type(e).__name__}: {str(e).strip()[-400:]}"
            print(f"{'PASS' if ok else 'FAIL'} {case.op}: {case.name}: {detail}", flush=True)
            passed += ok
            failed += not ok
        if not args.filter or args.filter in "bert4 fused":
            model = args.bert_model or os.path.join(args.build_dir, "models", "bert4.onnx")
            try:
                ok, detail = bert_case(model, args.build_dir, tmp, args.threads)
            except Exception as e:
                ok, detail = False, f"{type(e).__name__}: {str(e).strip()[-400:]}"
            label = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
            print(f"{label} bert4 fused by onnxruntime.transformers.optimizer: {detail}", flush=True)
            if ok is not None:
                passed += ok
                failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
