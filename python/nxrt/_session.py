"""InferenceSession, SessionOptions and RunOptions with onnxruntime's names and behaviour."""

from __future__ import annotations

import os
import time

import numpy as np

from . import _nxrt
from ._devices import OrtEpDevice, ep_name_of, env, provider_name_of
from ._types import (STRING, ExecutionMode, FallbackMode, GraphOptimizationLevel, ModelMetadata,
                     NodeArg, OrtCompiledModelCompatibility, OrtExecutionProviderDevicePolicy,
                     element_type_of, numpy_dtype, type_string)


class SessionOptions:
    """Options for InferenceSession (onnxruntime.SessionOptions' attributes and methods)."""

    def __init__(self):
        self.intra_op_num_threads = 0  # 0: one per core
        self.inter_op_num_threads = 0  # accepted; nxrt runs nodes in order
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_profiling = False
        self.profile_file_prefix = "nxrt_profile"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.optimized_model_filepath = ""
        # nxrt only
        self.fallback = FallbackMode.ALLOW
        self.memory_limit = 0  # bytes a session may hold for values; 0: no limit
        self._config: dict[str, str] = {}
        self._devices: list[tuple[list[OrtEpDevice], dict]] = []
        self._policy: OrtExecutionProviderDevicePolicy | None = None

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise KeyError(f"nxrt: no session config entry '{key}'")
        return self._config[key]

    def add_provider_for_devices(self, devices, provider_options=None) -> None:
        """Runs the session on these EP devices (all of one EP) before any other EP."""
        devices = list(devices)
        if not devices:
            raise ValueError("nxrt: add_provider_for_devices needs at least one EP device")
        self._devices.append((devices, dict(provider_options or {})))

    def set_provider_selection_policy(self, policy: OrtExecutionProviderDevicePolicy) -> None:
        """Lets nxrt pick EP devices by policy (PREFER_CPU, PREFER_GPU, PREFER_NPU,
        MAX_PERFORMANCE, MIN_OVERALL_POWER / MAX_EFFICIENCY)."""
        self._policy = OrtExecutionProviderDevicePolicy(policy)

    def _native(self, providers, provider_options) -> tuple[_nxrt.SessionOptions, str | None]:
        o = _nxrt.SessionOptions()
        if self.intra_op_num_threads:
            o.set_intra_op_threads(int(self.intra_op_num_threads))
        level = int(self.graph_optimization_level)
        o.set_optimization_level(0 if level == 0 else 1)
        o.set_log_level(int(self.log_severity_level))
        for k, v in self._config.items():
            o.set_config(k, v)
        if self.fallback != FallbackMode.ALLOW:
            o.set_fallback(int(self.fallback))
        if self.memory_limit:
            o.set_memory_limit(int(self.memory_limit))
        profile = None
        if self.enable_profiling:
            stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
            profile = f"{self.profile_file_prefix}_{stamp}.json"
            o.set_profile_file(profile)
        explicit = bool(providers) or bool(self._devices)
        if self._policy is not None and explicit:
            raise ValueError("nxrt: a provider selection policy excludes explicit providers")
        for devices, options in self._devices:
            o.append_ep_devices(env(), [d._index for d in devices],
                                {str(k): str(v) for k, v in options.items()})
        if providers:
            for name, options in _providers_with_options(providers, provider_options):
                o.append_ep(ep_name_of(name), {str(k): str(v) for k, v in options.items()})
        if self._policy is not None:
            o.set_ep_selection_policy(int(self._policy))
        return o, profile


def _providers_with_options(providers, provider_options):
    """[(name, options)] from onnxruntime's two forms: names plus a parallel list of option
    dicts, or (name, options) tuples."""
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("nxrt: 'providers' and 'provider_options' must have the same length")
    out = []
    for i, p in enumerate(providers):
        if isinstance(p, tuple):
            name, options = p
        else:
            name, options = p, (provider_options[i] if provider_options is not None else {})
        out.append((str(name), dict(options or {})))
    return out


class RunOptions:
    """Per-run options: `terminate` stops runs in flight (from another thread), and
    `timeout_seconds` (nxrt only) bounds a run."""

    def __init__(self):
        self._native = _nxrt.RunOptions()
        self._terminate = False
        self._timeout = 0.0
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False

    @property
    def terminate(self) -> bool:
        return self._terminate

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self._terminate = bool(value)
        self._native.set_terminate(self._terminate)

    @property
    def timeout_seconds(self) -> float:
        return self._timeout

    @timeout_seconds.setter
    def timeout_seconds(self, value: float) -> None:
        self._timeout = float(value)
        self._native.set_timeout(self._timeout)


class _Prepared:
    """An input the session already put in the extension's tuple form (sequences, optionals)."""

    __slots__ = ("spec",)

    def __init__(self, spec):
        self.spec = spec


def _container_spec(kind: int, element_type: int, value, name: str):
    """The tuple form of a sequence (a list of arrays) or optional (None or a value) input."""
    if kind == 2:  # optional
        if value is None:
            return ("optional", None)
        inner = 1 if isinstance(value, (list, tuple)) else 0
        return ("optional", _container_spec(inner, element_type, value, name) if inner
                else _input_spec(value))
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"nxrt: input '{name}' is a sequence: pass a list of arrays")
    items = []
    for item in value:
        spec = _input_spec(np.asarray(item, dtype=numpy_dtype(element_type))
                           if element_type != STRING else np.asarray(item, dtype=object))
        items.append(spec)
    return ("sequence", element_type, items)


def _input_spec(value):
    """The extension's tuple form of an input it cannot take as it is (it takes C-contiguous
    arrays of numpy's own types directly): strings, lists and scalars, non-contiguous arrays,
    ml_dtypes' bfloat16 / float8 / 4-bit arrays."""
    if type(value) is _Prepared:
        return value.spec
    if isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        flat = [s.encode() if isinstance(s, str) else bytes(s) for s in value.reshape(-1).tolist()]
        return ("strings", list(value.shape), flat)
    array = np.ascontiguousarray(value)
    if array.dtype.kind in "OUS":
        return _input_spec(array)
    code = element_type_of(array.dtype)
    # A flat byte view of the array's memory (it keeps the array alive).
    return ("tensor", code, list(array.shape), array.reshape(-1).view(np.uint8))


def _to_python(out):
    kind = out[0]
    if kind == "tensor":
        _, code, shape, raw = out
        return raw.view(numpy_dtype(code)).reshape(shape)
    if kind == "strings":
        _, shape, items = out
        array = np.empty(len(items), dtype=object)
        array[:] = [b.decode("utf-8", errors="surrogateescape") for b in items]
        return array.reshape(shape)
    if kind == "sequence":
        return [_to_python(item) for item in out[1]]
    if kind == "optional":
        return None if out[1] is None else _to_python(out[1])
    raise TypeError(f"nxrt: unexpected output kind {kind}")


class InferenceSession:
    """A loaded model, ready to run (onnxruntime.InferenceSession's constructor and methods)."""

    def __init__(self, path_or_bytes, sess_options: SessionOptions | None = None,
                 providers=None, provider_options=None, **kwargs):
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            model = bytes(path_or_bytes)
            self._model_path = None
        else:
            model = os.fspath(path_or_bytes)
            self._model_path = model
        self._sess_options = sess_options or SessionOptions()
        native, self._profile = self._sess_options._native(providers, provider_options)
        self._providers = [p[0] for p in _providers_with_options(providers, provider_options)] \
            if providers else None
        self._provider_options = _providers_with_options(providers, provider_options) \
            if providers else []
        self._session = _nxrt.Session(env(), model, native)
        self._inputs = [_node_arg(t) for t in self._session.inputs()]
        self._outputs = [_node_arg(t) for t in self._session.outputs()]
        self._output_names = [o.name for o in self._outputs]
        # Inputs that are sequences or optionals: {name: (kind, element type)}.
        self._containers = {t["name"]: (t["kind"], t["element_type"])
                            for t in self._session.inputs() if t["kind"] != 0}

    # ---- onnxruntime's surface ----
    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        return []

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._session.model_meta())

    def get_providers(self) -> list[str]:
        """The EPs this session runs on, in priority order."""
        return [provider_name_of(e) for e in self._session.eps()]

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        out = {provider_name_of(e): {} for e in self._session.eps()}
        for name, options in self._provider_options:
            out[provider_name_of(ep_name_of(name))] = {str(k): str(v) for k, v in options.items()}
        return out

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_profiling_start_time_ns(self) -> int:
        return 0

    def run(self, output_names, input_feed: dict, run_options: RunOptions | None = None):
        """Runs the model: `input_feed` maps input names to numpy arrays (or values numpy can
        turn into arrays); returns the outputs named in `output_names` (all when None) in that
        order: numpy arrays, lists for sequences, None for empty optionals."""
        names = self._output_names if not output_names else list(output_names)
        if not isinstance(input_feed, dict):
            input_feed = dict(input_feed)
        if self._containers:
            input_feed = dict(input_feed)
            for name, (kind, element_type) in self._containers.items():
                if name in input_feed:
                    input_feed[name] = _Prepared(
                        _container_spec(kind, element_type, input_feed[name], name))
        outs = self._session.run(names, input_feed, _input_spec,
                                 run_options._native if run_options is not None else None)
        return [o if type(o) is not tuple else _to_python(o) for o in outs]

    def io_binding(self):
        """An IOBinding for run_with_iobinding (inputs and outputs in host or EP memory)."""
        from ._iobinding import IOBinding  # noqa: PLC0415 (import cycle)

        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options: RunOptions | None = None) -> None:
        """Runs with the inputs and outputs bound in `iobinding`; read the results with its
        get_outputs() (OrtValues, device-resident where bound so) or copy_outputs_to_cpu()."""
        iobinding._run(self._session, self._output_names, run_options)

    def run_with_ort_values(self, output_names, input_dict_ort_values: dict,
                            run_options: RunOptions | None = None) -> list:
        """run() over OrtValues (host or EP memory); returns OrtValues in host memory."""
        from ._iobinding import OrtValue  # noqa: PLC0415 (import cycle)

        names = self._output_names if not output_names else list(output_names)
        inputs = list(input_dict_ort_values.items())
        produced = self._session.run_values(
            names, [n for n, _ in inputs], [v._native for _, v in inputs], [None] * len(names),
            [None] * len(names), run_options._native if run_options is not None else None)
        return [OrtValue(v) for v in produced]

    def end_profiling(self) -> str:
        """Writes the Chrome trace now and returns its file name ("" when profiling is off)."""
        if self._profile is None:
            return ""
        self._session.end_profiling()
        return self._profile

    # ---- nxrt only ----
    def assignment_report(self) -> dict:
        """Where every node runs: subgraphs (EP, hardware devices, nodes), fallbacks (node,
        preferred EP, reason) and copies between memories."""
        return self._session.assignment_report()

    def statistic(self, key: str) -> int:
        """A set-up counter, e.g. "copies", "nodes.folded", "prepack.weights"."""
        return self._session.statistic(key)


def _node_arg(t: dict) -> NodeArg:
    return NodeArg(t["name"], type_string(t["kind"], t["element_type"]), t["shape"])


def plan_placement(path_or_bytes, sess_options: SessionOptions | None = None,
                   providers=None, provider_options=None) -> dict:
    """The placement a session would make (assignment_report's form), without creating one."""
    model = bytes(path_or_bytes) if isinstance(path_or_bytes, (bytes, bytearray, memoryview)) \
        else os.fspath(path_or_bytes)
    native, _ = (sess_options or SessionOptions())._native(providers, provider_options)
    return env().plan_placement(model, native)


class ModelCompiler:
    """Compiles a model ahead of time for the EP devices `sess_options` selects (virtual ones
    included) and writes it with each compiled group as an EPContext node (onnxruntime's
    ModelCompiler; nxrt's NxEnv_CompileModel)."""

    def __init__(self, sess_options: SessionOptions, input_model_path, *,
                 embed_compiled_data_into_model: bool = True, keep_original_nodes: bool = False,
                 providers=None, provider_options=None):
        if isinstance(input_model_path, (bytes, bytearray, memoryview)):
            raise NotImplementedError("nxrt: ModelCompiler reads a model file (give its path)")
        self._model = os.fspath(input_model_path)
        self._native, _ = (sess_options or SessionOptions())._native(providers, provider_options)
        self._flags = (0 if embed_compiled_data_into_model else 1) | \
            (2 if keep_original_nodes else 0)
        self.groups_saved = 0

    def compile_to_file(self, output_model_path) -> None:
        """Writes the compiled model; payloads go next to it unless embedded."""
        self.groups_saved = env().compile_model(self._model, self._native,
                                                os.fspath(output_model_path), self._flags)


def get_model_compatibility(model_path, ep_device) -> OrtCompiledModelCompatibility:
    """Whether a compiled model's payloads for `ep_device`'s EP run on that device (nxrt:
    from the model file, without a session)."""
    return OrtCompiledModelCompatibility(
        env().model_compatibility(os.fspath(model_path), ep_device._index))


__all__ = ["InferenceSession", "ModelCompiler", "RunOptions", "SessionOptions",
           "get_model_compatibility", "plan_placement", "STRING"]
