#!/usr/bin/env python3
"""Writes the ONNX backend node test cases of the installed `onnx` wheel to disk.

Recent onnx wheels build the node cases in memory; this script writes each one in the suite's
on-disk layout so `nxrt conformance` can run them:

    OUT/<case name>/model.onnx
    OUT/<case name>/test_data_set_<k>/input_<i>.pb, output_<i>.pb

Input/output files are TensorProto, SequenceProto or OptionalProto, as the suite uses.
Usage: dump_onnx_node_tests.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests


def to_proto(value, type_proto, name):
    """Serialises one test value according to the graph's declared type."""
    if isinstance(value, (onnx.TensorProto, onnx.SequenceProto, onnx.OptionalProto)):
        return value
    which = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if which == "sequence_type":
        elem = type_proto.sequence_type.elem_type
        seq = onnx.SequenceProto()
        seq.name = name
        seq.elem_type = onnx.SequenceProto.TENSOR
        for v in value:
            if isinstance(v, onnx.TensorProto):
                seq.tensor_values.append(v)
            else:
                seq.tensor_values.append(tensor_proto(v, elem.tensor_type.elem_type))
        return seq
    if which == "optional_type":
        elem = type_proto.optional_type.elem_type
        opt = onnx.OptionalProto()
        opt.name = name
        if value is None:
            opt.elem_type = onnx.OptionalProto.UNDEFINED
            return opt
        inner_which = elem.WhichOneof("value")
        if inner_which == "sequence_type":
            opt.elem_type = onnx.OptionalProto.SEQUENCE
            opt.sequence_value.CopyFrom(to_proto(value, elem, name))
        else:
            opt.elem_type = onnx.OptionalProto.TENSOR
            opt.tensor_value.CopyFrom(tensor_proto(value, elem.tensor_type.elem_type))
        return opt
    elem_type = type_proto.tensor_type.elem_type if type_proto is not None else 0
    t = tensor_proto(value, elem_type)
    t.name = name
    return t


def tensor_proto(value, elem_type):
    if isinstance(value, onnx.TensorProto):
        return value
    # ml_dtypes arrays (bfloat16, float8, int4...) carry their element type themselves.
    return numpy_helper.from_array(np.asarray(value))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: dump_onnx_node_tests.py OUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    count = 0
    for case in load_model_tests(kind="node"):
        model = case.model
        if not isinstance(model, onnx.ModelProto):
            continue
        case_dir = os.path.join(out_dir, case.name)
        os.makedirs(case_dir, exist_ok=True)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        inputs = [i for i in model.graph.input]
        init_names = {t.name for t in model.graph.initializer}
        inputs = [i for i in inputs if i.name not in init_names]
        for k, (ins, outs) in enumerate(case.data_sets or []):
            ds_dir = os.path.join(case_dir, f"test_data_set_{k}")
            os.makedirs(ds_dir, exist_ok=True)
            for i, v in enumerate(ins):
                vi = inputs[i] if i < len(inputs) else None
                proto = to_proto(v, vi.type if vi else None, vi.name if vi else f"input_{i}")
                with open(os.path.join(ds_dir, f"input_{i}.pb"), "wb") as f:
                    f.write(proto.SerializeToString())
            for i, v in enumerate(outs):
                vo = model.graph.output[i] if i < len(model.graph.output) else None
                proto = to_proto(v, vo.type if vo else None, vo.name if vo else f"output_{i}")
                with open(os.path.join(ds_dir, f"output_{i}.pb"), "wb") as f:
                    f.write(proto.SerializeToString())
        count += 1
    print(f"wrote {count} node test cases (onnx {onnx.__version__}) to {out_dir}")


if __name__ == "__main__":
    main()
