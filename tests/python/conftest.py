"""Shared helpers of the nxrt package's tests: small models made with onnx.helper, and where the
real models of the test suite are (NXRT_MODELS_DIR, default build/models)."""

import os
import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

REPO = pathlib.Path(__file__).resolve().parents[2]


def models_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("NXRT_MODELS_DIR", REPO / "build" / "models"))


def real_model(name: str) -> str:
    path = models_dir() / f"{name}.onnx"
    if not path.exists():
        pytest.fail(f"{path} is missing: run tools/scripts/prepare_test_models.sh build/models")
    return str(path)


def make_model(nodes, inputs, outputs, initializers=(), opset=17, **model_fields) -> bytes:
    graph = helper.make_graph(nodes, model_fields.pop("graph_name", "g"), inputs, outputs,
                              list(initializers), doc_string=model_fields.pop("graph_doc", ""))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              **model_fields)
    model.ir_version = 8
    return model.SerializeToString()


def add_model(elem=TensorProto.FLOAT, shape=("batch", 3)) -> bytes:
    """z = x + y over [batch, 3] (a symbolic first dim)."""
    x = helper.make_tensor_value_info("x", elem, list(shape))
    y = helper.make_tensor_value_info("y", elem, list(shape))
    z = helper.make_tensor_value_info("z", elem, list(shape))
    return make_model([helper.make_node("Add", ["x", "y"], ["z"])], [x, y], [z])


@pytest.fixture
def rng():
    return np.random.default_rng(7)


__all__ = ["add_model", "make_model", "models_dir", "real_model", "onnx"]
