"""What both transports share: the server's metadata, and the error a failed session run turns
into."""

import importlib.metadata

from .errors import BadRequest, ServeError

SERVER_NAME = "nxrt"
EXTENSIONS = ["binary_tensor_data"]


def server_version() -> str:
    try:
        return importlib.metadata.version("nxrt")
    except importlib.metadata.PackageNotFoundError:  # a source checkout
        return "0.1.0"


def server_metadata() -> dict:
    return {"name": SERVER_NAME, "version": server_version(), "extensions": EXTENSIONS}


def run_failed(e: BaseException) -> ServeError:
    """The error to answer when the session fails on a request that passed every check: what
    is left is nearly always the data (an index out of range, shapes that do not broadcast),
    so the client hears why, as a 400."""
    if isinstance(e, ServeError):
        return e
    return BadRequest(f"the model failed on this request: {type(e).__name__}: {e}")
