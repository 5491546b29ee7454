"""An inference request and response as both transports see them once decoded: names, datatypes,
shapes and numpy arrays. The HTTP and gRPC codecs translate to and from these."""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class InputTensor:
    name: str
    datatype: str
    shape: tuple
    array: np.ndarray


@dataclass
class RequestedOutput:
    name: str
    binary: bool = False  # HTTP only: send this output in the binary data extension


@dataclass
class InferRequest:
    inputs: list
    outputs: list = None  # None: every output of the model
    id: str = ""
    binary_outputs: bool = False  # HTTP 'binary_data_output': every output in binary form


@dataclass
class OutputTensor:
    name: str
    datatype: str
    shape: tuple
    array: np.ndarray
    binary: bool = False


@dataclass
class InferResponse:
    model_name: str
    model_version: str
    outputs: list = field(default_factory=list)
    id: str = ""
