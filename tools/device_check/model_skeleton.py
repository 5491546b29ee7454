#!/usr/bin/env python3
"""Carries models to another machine without their weights, which would not fit its transfer
limit (tools/device_check/README.md):

    model_skeleton.py strip MODEL.onnx... OUT_DIR   large float/int8 tensors emptied, their
                                                    dtype, shape, mean, std and range kept in
                                                    OUT_DIR/NAME.onnx.json
    model_skeleton.py fill SKELETON_DIR OUT_DIR     the tensors drawn again from a fixed seed

Initializers and Constant values of 4096 elements or more (in subgraphs too) are stripped.
Filled values are drawn from a normal distribution with the original mean and standard
deviation, clipped to the original range (and rounded for integer types), so the work per run
is the same; outputs differ from the original model's, so a filled model checks speed and
agreement between engines, not the original's results. A model's input sidecar (NAME.json
next to NAME.onnx, tests/models/model_inputs.py) travels too.
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper

STRIP = {onnx.TensorProto.FLOAT, onnx.TensorProto.INT8, onnx.TensorProto.UINT8,
         onnx.TensorProto.FLOAT16}


def tensors(g):
    """The graph's initializers and its Constant nodes' tensors (named after their output)."""
    yield from g.initializer
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    a.t.name = n.output[0]
                    yield a.t


def all_tensors(model):
    """tensors() of the main graph and of every subgraph (If / Loop / Scan bodies)."""
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    graphs.append(a.g)
                graphs.extend(a.graphs)
        yield from tensors(g)


def strip(srcs, outdir):
    os.makedirs(outdir, exist_ok=True)
    for src in srcs:
        m = onnx.load(src)
        stats = {}
        for init in all_tensors(m):
            if init.data_type not in STRIP:
                continue
            arr = numpy_helper.to_array(init)
            if arr.size < 4096:
                continue
            f = arr.astype(np.float64)
            stats[init.name] = dict(dtype=int(init.data_type), dims=list(init.dims),
                                    mean=float(f.mean()), std=float(f.std()),
                                    min=float(f.min()), max=float(f.max()))
            init.ClearField("raw_data")
            init.ClearField("float_data")
            init.ClearField("int32_data")
            init.ClearField("data_location")
            init.ClearField("external_data")
        name = os.path.basename(src)
        onnx.save(m, os.path.join(outdir, name))
        sidecar = os.path.splitext(src)[0] + ".json"
        if os.path.exists(sidecar):
            shutil.copy(sidecar, outdir)
        with open(os.path.join(outdir, name + ".json"), "w") as f:
            json.dump(stats, f)
        print(name, len(stats), "stripped")


def fill(skeldir, outdir):
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(1)
    for name in sorted(os.listdir(skeldir)):
        if not name.endswith(".onnx"):
            continue
        m = onnx.load(os.path.join(skeldir, name))
        stats = json.load(open(os.path.join(skeldir, name + ".json")))
        for init in all_tensors(m):
            s = stats.get(init.name)
            if s is None:
                continue
            dt = onnx.helper.tensor_dtype_to_np_dtype(s["dtype"])
            shape = s["dims"]
            arr = np.clip(rng.normal(s["mean"], s["std"], size=shape), s["min"], s["max"])
            if np.issubdtype(dt, np.integer):
                arr = np.rint(arr)
            arr = arr.astype(dt)
            init.raw_data = arr.tobytes()
        onnx.save(m, os.path.join(outdir, name))
        sidecar = os.path.join(skeldir, os.path.splitext(name)[0] + ".json")
        if os.path.exists(sidecar):
            shutil.copy(sidecar, outdir)
        print("filled", name, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "strip":
        strip(sys.argv[2:-1], sys.argv[-1])
    else:
        fill(sys.argv[2], sys.argv[3])
