"""One served model: its session, its protocol metadata, the checks a request must pass against
it, and the runner (direct or batching) its requests go through."""

from dataclasses import dataclass

import numpy as np

from . import datatypes
from .batching import DirectRunner, DynamicBatcher
from .errors import BadRequest
from .protocol import InferRequest, InferResponse, OutputTensor

VERSION = "1"  # one version per model name for now


@dataclass
class TensorSpec:
    name: str
    datatype: str  # None: a type the protocol cannot carry (sequence, map, ...)
    shape: list  # -1 for a dynamic dim; None when the model does not give the rank

    def metadata(self) -> dict:
        return {"name": self.name, "datatype": self.datatype or "UNSUPPORTED",
                "shape": self.shape if self.shape is not None else []}


def _spec(node_arg) -> TensorSpec:
    shape = None
    if node_arg.shape is not None:
        shape = [d if isinstance(d, int) and d >= 0 else -1 for d in node_arg.shape]
    return TensorSpec(node_arg.name, datatypes.from_onnx_type(node_arg.type), shape)


def _shape_fits(shape: tuple, spec: list) -> bool:
    if spec is None:  # the model leaves the rank open: the runtime checks what it gets
        return True
    return len(shape) == len(spec) and all(s in (-1, d) for d, s in zip(shape, spec))


class ServedModel:
    def __init__(self, name: str, session, max_batch: int = 1, batch_timeout_s: float = 0.005,
                 workers: int = 4, on_run=lambda rows, requests: None, platform: str = "onnx"):
        self.name, self.session, self.platform = name, session, platform
        self.inputs = [_spec(a) for a in session.get_inputs()]
        self.outputs = [_spec(a) for a in session.get_outputs()]
        self._inputs = {s.name: s for s in self.inputs}
        self._outputs = {s.name: s for s in self.outputs}
        self.batching = max_batch > 1 and self._rows_are_independent()
        run = self._run_all
        if self.batching:
            self._runner = DynamicBatcher(run, max_batch, batch_timeout_s, on_run, name)
        else:
            self._runner = DirectRunner(run, workers, on_run)
        self.ready = True

    def _rows_are_independent(self) -> bool:
        specs = self.inputs + self.outputs
        return all(s.shape and s.shape[0] == -1 for s in specs)

    def metadata(self) -> dict:
        return {"name": self.name, "versions": [VERSION], "platform": self.platform,
                "inputs": [s.metadata() for s in self.inputs],
                "outputs": [s.metadata() for s in self.outputs]}

    def check_version(self, version: str):
        if version not in ("", VERSION):
            raise BadRequest(f"model '{self.name}' has no version '{version}' "
                             f"(it has: {VERSION})")

    def _feeds(self, request: InferRequest) -> dict:
        feeds = {}
        for t in request.inputs:
            spec = self._inputs.get(t.name)
            if spec is None:
                raise BadRequest(f"model '{self.name}' has no input '{t.name}' (inputs: "
                                 f"{', '.join(self._inputs)})")
            if t.name in feeds:
                raise BadRequest(f"input '{t.name}' is given twice")
            if t.datatype != spec.datatype:
                raise BadRequest(f"input '{t.name}' has datatype {t.datatype}, the model "
                                 f"expects {spec.datatype}")
            if not _shape_fits(t.shape, spec.shape):
                raise BadRequest(f"input '{t.name}' has shape {list(t.shape)}, the model "
                                 f"expects {spec.shape} (-1: any size)")
            array = t.array
            if spec.datatype == "BYTES":  # the runtimes take text for ONNX string tensors
                array = _as_text(array, t.name)
            feeds[t.name] = array
        missing = [n for n in self._inputs if n not in feeds]
        if missing:
            raise BadRequest(f"missing input(s) {', '.join(missing)} of model '{self.name}'")
        return feeds

    def _requested(self, request: InferRequest) -> list:
        if request.outputs is None:
            return [(s, request.binary_outputs) for s in self.outputs]
        chosen = []
        for o in request.outputs:
            spec = self._outputs.get(o.name)
            if spec is None:
                raise BadRequest(f"model '{self.name}' has no output '{o.name}' (outputs: "
                                 f"{', '.join(self._outputs)})")
            chosen.append((spec, o.binary or request.binary_outputs))
        return chosen

    def prepare(self, request: InferRequest):
        """Checks the request against the model; what `respond` needs once the run is done."""
        return self._feeds(request), self._requested(request)

    def submit(self, feeds: dict):
        """A concurrent.futures.Future of {output name: array}."""
        return self._runner.submit(feeds)

    def respond(self, request: InferRequest, requested: list, results: dict) -> InferResponse:
        outputs = []
        for spec, binary in requested:
            array = np.asarray(results[spec.name])
            datatype = spec.datatype or datatypes.from_numpy(array.dtype)
            outputs.append(OutputTensor(spec.name, datatype, tuple(array.shape), array, binary))
        return InferResponse(self.name, VERSION, outputs, request.id)

    def _run_all(self, feeds: dict) -> dict:
        names = [s.name for s in self.outputs]
        return dict(zip(names, self.session.run(names, feeds)))

    def close(self):
        self.ready = False
        self._runner.close()


def _as_text(array: np.ndarray, name: str) -> np.ndarray:
    out = np.empty(array.shape, dtype=object)
    flat_in, flat_out = array.ravel(), out.reshape(-1)
    for i, item in enumerate(flat_in):
        try:
            flat_out[i] = item.decode("utf-8") if isinstance(item, bytes) else str(item)
        except UnicodeDecodeError:
            raise BadRequest(f"input '{name}': element {i} is not UTF-8 text, which ONNX "
                             f"string tensors need") from None
    return out
