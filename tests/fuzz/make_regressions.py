#!/usr/bin/env python3
"""Writes the hand-made hostile models of tests/fuzz/regressions/ (checked in; rerun this script
to regenerate them after changing it).

    make_regressions.py [OUT_DIR]        (default: the folder of this script/regressions)

Each model needs no graph inputs (everything is an initializer), so the fuzzer, the regression
unit test and `nxrt run` all exercise the same values. Files found by the fuzzer itself
(crash inputs, minimised) live next to these and are not generated:
    pow_int64_base_nan_result.onnx   Pow(int64, float) whose result is NaN (UBSan float-cast)
    constant_value_attribute_not_a_tensor.onnx   Constant `value` holding a string: NULL tensor
    tfidf_ngram_index_overflows_buffer_pool.onnx  TfIdfVectorizer index ~7e18: the byte size
                                     wrapped and BufferPool's rounding looped for ever
    attention_zero_head_size_memcpy_null.onnx     Attention with V head size 0: memcpy from NULL
    softmax_cross_entropy_zero_classes.onnx  SoftmaxCrossEntropyLoss over 0 classes: the log-softmax
                                     seeded its column maxima from a row 0 that did not exist
    scan8_without_num_scan_inputs_shape_inference_segv.onnx, scan9_shape_inference_segv.onnx,
    maxunpool_shape_inference_segv.onnx  SIGSEGV in ONNX 1.12's shape inference (Scan-8 with a
                                     misspelt num_scan_inputs, Scan-9 with malformed attributes,
                                     MaxUnpool kernel_shape/strides not matching the rank)
    grid_sample_zero_width.onnx      bilinear GridSample of an X whose symbolic width the fuzzer
                                     fed as 0: the taps were clamped into an empty plane and read
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NAN, INF = float("nan"), float("inf")
# Values C++ cannot convert to an integer without undefined behaviour.
HOSTILE = [NAN, INF, -INF, 1e30, -1e30, 3e9, -3e9, 2.5, -0.0, 300.0]


def model(name, nodes, outputs, initializers, opset=21):
    graph = helper.make_graph(nodes, name, [], outputs, initializer=initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="nxrt-make-regressions")
    m.ir_version = 10
    return m


def out(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def f32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def cast_nan_to_int():
    targets = [("i8", TensorProto.INT8), ("u8", TensorProto.UINT8), ("i16", TensorProto.INT16),
               ("u16", TensorProto.UINT16), ("i32", TensorProto.INT32), ("u32", TensorProto.UINT32),
               ("i64", TensorProto.INT64), ("u64", TensorProto.UINT64), ("i4", TensorProto.INT4),
               ("u4", TensorProto.UINT4)]
    nodes, outs = [], []
    for suffix, t in targets:
        nodes.append(helper.make_node("Cast", ["x"], [f"y_{suffix}"], to=t))
        outs.append(out(f"y_{suffix}", t, [len(HOSTILE)]))
    # double and float16 sources take other conversion paths
    nodes.append(helper.make_node("Cast", ["x"], ["xd"], to=TensorProto.DOUBLE))
    nodes.append(helper.make_node("Cast", ["xd"], ["y_d_i32"], to=TensorProto.INT32))
    nodes.append(helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16))
    nodes.append(helper.make_node("Cast", ["xh"], ["y_h_i8"], to=TensorProto.INT8))
    outs += [out("y_d_i32", TensorProto.INT32, [len(HOSTILE)]),
             out("y_h_i8", TensorProto.INT8, [len(HOSTILE)])]
    return model("cast_nan_to_int", nodes, outs, [f32("x", HOSTILE)])


def cast_string_nan_to_int():
    x = helper.make_tensor("x", TensorProto.STRING, [4], [b"nan", b"1e300", b"-inf", b"12"])
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64),
             helper.make_node("Cast", ["x"], ["z"], to=TensorProto.INT8)]
    return model("cast_string_nan_to_int", nodes,
                 [out("y", TensorProto.INT64, [4]), out("z", TensorProto.INT8, [4])], [x])


def quantize_linear_nan():
    # uint8 / int8 outputs take the fast path, int16 / int4 / int32 the generic one; a zero scale
    # turns 0 into 0 / 0 = NaN.
    inits = [f32("x", HOSTILE), f32("s", 0.5), f32("s0", 0.0),
             numpy_helper.from_array(np.array(3, dtype=np.int8), "zp_i8"),
             numpy_helper.from_array(np.array(-7, dtype=np.int16), "zp_i16"),
             numpy_helper.from_array(np.array(1, dtype=np.int32), "zp_i32"),
             helper.make_tensor("zp_i4", TensorProto.INT4, [], [1])]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["y_u8"]),
             helper.make_node("QuantizeLinear", ["x", "s", "zp_i8"], ["y_i8"]),
             helper.make_node("QuantizeLinear", ["x", "s0"], ["y_u8_zero_scale"]),
             helper.make_node("QuantizeLinear", ["x", "s", "zp_i16"], ["y_i16"]),
             helper.make_node("QuantizeLinear", ["x", "s0", "zp_i16"], ["y_i16_zero_scale"]),
             helper.make_node("QuantizeLinear", ["x", "s", "zp_i4"], ["y_i4"]),
             helper.make_node("QuantizeLinear", ["x", "s", "zp_i32"], ["y_i32"])]
    n = len(HOSTILE)
    outs = [out("y_u8", TensorProto.UINT8, [n]), out("y_i8", TensorProto.INT8, [n]),
            out("y_u8_zero_scale", TensorProto.UINT8, [n]), out("y_i16", TensorProto.INT16, [n]),
            out("y_i16_zero_scale", TensorProto.INT16, [n]), out("y_i4", TensorProto.INT4, [n]),
            out("y_i32", TensorProto.INT32, [n])]
    return model("quantize_linear_nan", nodes, outs, inits)


def dynamic_quantize_linear_nan():
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])]
    outs = [out("y", TensorProto.UINT8, [len(HOSTILE)]), out("s", TensorProto.FLOAT, []),
            out("z", TensorProto.UINT8, [])]
    return model("dynamic_quantize_linear_nan", nodes, outs, [f32("x", HOSTILE)])


def qlinear_matmul_nan_scale():
    # y = requantize(a @ b * a_scale * b_scale / y_scale): a NaN scale gives NaN results.
    inits = [numpy_helper.from_array(np.arange(4, dtype=np.uint8).reshape(2, 2), "a"),
             f32("a_scale", NAN), numpy_helper.from_array(np.array(0, np.uint8), "a_zp"),
             numpy_helper.from_array(np.arange(4, dtype=np.uint8).reshape(2, 2), "b"),
             f32("b_scale", 1.0), numpy_helper.from_array(np.array(0, np.uint8), "b_zp"),
             f32("y_scale", 0.0), numpy_helper.from_array(np.array(5, np.uint8), "y_zp")]
    nodes = [helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp",
                                                "y_scale", "y_zp"], ["y"])]
    return model("qlinear_matmul_nan_scale", nodes, [out("y", TensorProto.UINT8, [2, 2])], inits)


def sequence_empty_bad_dtype():
    nodes = [helper.make_node("SequenceEmpty", [], ["seq"], dtype=1000),
             helper.make_node("SequenceLength", ["seq"], ["n"])]
    return model("sequence_empty_bad_dtype", nodes, [out("n", TensorProto.INT64, [])], [])


def cast_bad_to():
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=-3)]
    return model("cast_bad_to", nodes, [out("y", TensorProto.FLOAT, [2])], [f32("x", [1.0, 2.0])])


def eye_like_bad_dtype():
    inits = [numpy_helper.from_array(np.ones((2, 2), np.float32), "x")]
    nodes = [helper.make_node("EyeLike", ["x"], ["y"], dtype=4096)]
    return model("eye_like_bad_dtype", nodes, [out("y", TensorProto.FLOAT, [2, 2])], inits)


def quantize_linear_bad_output_dtype():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=77)]
    return model("quantize_linear_bad_output_dtype", nodes, [out("y", TensorProto.UINT8, [2])],
                 [f32("x", [1.0, 2.0]), f32("s", 1.0)])


def pow_int_base_float_exponent():
    # numpy would compute these in double and cast back: NaN, inf and 3 ** 1e30 have no int64.
    inits = [numpy_helper.from_array(np.array([2, 0, -1, 3], np.int64), "a"),
             f32("b", [NAN, -INF, 0.5, 1e30])]
    nodes = [helper.make_node("Pow", ["a", "b"], ["y"])]
    return model("pow_int_base_float_exponent", nodes, [out("y", TensorProto.INT64, [4])], inits)


def tfidf(name, **attrs):
    base = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0,
                ngram_counts=[0, 2], ngram_indexes=[0, 1, 2], pool_int64s=[1, 2, 1, 2])
    base.update(attrs)
    inits = [numpy_helper.from_array(np.array([1, 2, 1, 2, 2, 1], np.int64), "x")]
    nodes = [helper.make_node("TfIdfVectorizer", ["x"], ["y"], **base)]
    return model(name, nodes, [out("y", TensorProto.FLOAT, None)], inits)


def tfidf_negative_ngram_index():
    # Counted at freq[-5]: a heap overflow before the fix.
    return tfidf("tfidf_negative_ngram_index", ngram_indexes=[0, -5, 2])


def tfidf_huge_max_skip():
    # 10^18 skip distances to try: spun for ever before the fix.
    return tfidf("tfidf_huge_max_skip", max_skip_count=10**18)


def tfidf_huge_ngram_index():
    # Output [2^40] floats: must be an out-of-memory error, not an abort or a hang.
    return tfidf("tfidf_huge_ngram_index", ngram_indexes=[0, 1, 2**40])


# The ONNX 1.12 shape-inference crashes that issue 12 lists (SIGSEGV / SIGFPE / overflow while
# loading). nxrt now infers shapes itself; each must load with static shapes left unknown or fail
# with a clear error.
def x_of(shape, name="x"):
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def layer_norm_axis_outside_rank():
    nodes = [helper.make_node("LayerNormalization", ["x", "g"], ["y"], axis=7)]
    return model("layer_norm_axis_outside_rank", nodes, [out("y", TensorProto.FLOAT, None)],
                 [x_of([2, 3]), x_of([3], "g")])


def conv_transpose_weight_rank_mismatch():
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"])]
    return model("conv_transpose_weight_rank_mismatch", nodes, [out("y", TensorProto.FLOAT, None)],
                 [x_of([1, 2, 4, 4]), x_of([2, 3, 3], "w")])


def rnn_weight_shape_mismatch():
    # hidden_size 3 but W and R say 4 and 5: the merged output shapes disagree.
    nodes = [helper.make_node("RNN", ["x", "w", "r"], ["y", "h"], hidden_size=3)]
    return model("rnn_weight_shape_mismatch", nodes,
                 [out("y", TensorProto.FLOAT, None), out("h", TensorProto.FLOAT, None)],
                 [x_of([2, 1, 2]), x_of([1, 4, 2], "w"), x_of([1, 5, 5], "r")])


def pool_and_conv_zero_stride():
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[0, 0]),
             helper.make_node("Conv", ["x", "w"], ["c"], strides=[0, 1])]
    return model("pool_and_conv_zero_stride", nodes,
                 [out("p", TensorProto.FLOAT, None), out("c", TensorProto.FLOAT, None)],
                 [x_of([1, 1, 4, 4]), x_of([1, 1, 2, 2], "w")])


def loop_body_constant_shorter_than_shape():
    # The body's Constant declares 1000 floats and carries 2.
    short = TensorProto(name="v", data_type=TensorProto.FLOAT, dims=[1000], float_data=[1.0, 2.0])
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value=short),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("ReduceSum", ["c"], ["s"], keepdims=0)],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, None)])
    inits = [numpy_helper.from_array(np.array(2, np.int64), "n"),
             numpy_helper.from_array(np.array(True), "cond")]
    nodes = [helper.make_node("Loop", ["n", "cond"], ["sums"], body=body)]
    return model("loop_body_constant_shorter_than_shape", nodes,
                 [out("sums", TensorProto.FLOAT, None)], inits)


def softmax_family_empty_axis():
    # A zero-length class axis: nothing to normalise (empty outputs), and the loss names the
    # out-of-range target instead of reading past the empty input.
    x = numpy_helper.from_array(np.ones([2, 0, 3], np.float32), "x")
    t = numpy_helper.from_array(np.zeros([2, 3], np.int64), "t")
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=1),
             helper.make_node("LogSoftmax", ["x"], ["l"], axis=1),
             helper.make_node("Hardmax", ["x"], ["h"], axis=1),
             helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss", "log_prob"])]
    return model("softmax_family_empty_axis", nodes,
                 [out(n, TensorProto.FLOAT, None) for n in ("s", "l", "h", "loss", "log_prob")],
                 [x, t])


MODELS = [cast_nan_to_int, cast_string_nan_to_int, quantize_linear_nan,
          dynamic_quantize_linear_nan, qlinear_matmul_nan_scale, sequence_empty_bad_dtype,
          cast_bad_to, eye_like_bad_dtype, quantize_linear_bad_output_dtype, pow_int_base_float_exponent,
          tfidf_negative_ngram_index, tfidf_huge_max_skip, tfidf_huge_ngram_index,
          layer_norm_axis_outside_rank, conv_transpose_weight_rank_mismatch,
          rnn_weight_shape_mismatch, pool_and_conv_zero_stride,
          loop_body_constant_shorter_than_shape, softmax_family_empty_axis]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "regressions")
    os.makedirs(out_dir, exist_ok=True)
    for make in MODELS:
        path = os.path.join(out_dir, make.__name__ + ".onnx")
        with open(path, "wb") as f:
            f.write(make().SerializeToString())
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
