"""Opens the session behind a served model with the runtime chosen on the command line: nxrt's
InferenceSession, or onnxruntime's (the benchmark compares both behind the same server code).

The runtime module is imported only here and only when a session is opened, so the rest of the
server never depends on nxrt's native extension being importable."""

import importlib

SESSION_CLASSES = ("nxrt", "onnxruntime")


def runtime_module(session_class: str):
    if session_class not in SESSION_CLASSES:
        raise ValueError(f"unknown session class '{session_class}' "
                         f"(one of: {', '.join(SESSION_CLASSES)})")
    try:
        module = importlib.import_module(session_class)
    except ImportError as e:
        raise RuntimeError(f"the {session_class} runtime cannot be imported: {e}") from None
    if not hasattr(module, "InferenceSession"):
        # nxrt's package directory without its native extension (a source checkout).
        raise RuntimeError(f"the {session_class} runtime has no InferenceSession here (is its "
                           f"native extension built?); try --session-class onnxruntime")
    return module


def open_session(model_path: str, session_class: str = "nxrt", threads: int = 0,
                 providers=None, policy: str = None):
    module = runtime_module(session_class)
    options = module.SessionOptions()
    if threads:
        options.intra_op_num_threads = int(threads)
    if policy:
        try:
            value = module.OrtExecutionProviderDevicePolicy.__members__[policy.upper()]
        except (AttributeError, KeyError):
            raise ValueError(f"unknown device policy '{policy}'") from None
        options.set_provider_selection_policy(value)
    return module.InferenceSession(model_path, options,
                                   providers=list(providers) if providers else None)
