"""The errors a request can end in, each with the HTTP status and gRPC code the protocol answers
with. Everything the transports catch derives from ServeError, so nothing a client sends can
turn into an unhandled exception (a 500 or a dropped connection)."""

import grpc


class ServeError(Exception):
    http_status = 500
    grpc_code = grpc.StatusCode.INTERNAL
    outcome = "server_error"  # the metrics label


class BadRequest(ServeError):
    """The request is malformed or does not fit the model (shape, datatype, names, sizes)."""
    http_status = 400
    grpc_code = grpc.StatusCode.INVALID_ARGUMENT
    outcome = "client_error"


class ModelNotFound(ServeError):
    http_status = 404
    grpc_code = grpc.StatusCode.NOT_FOUND
    outcome = "not_found"

    def __init__(self, name: str):
        super().__init__(f"unknown model '{name}'")


class RequestTooLarge(ServeError):
    http_status = 413
    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED
    outcome = "client_error"


class Unavailable(ServeError):
    """The model is not ready (still loading, or shutting down)."""
    http_status = 503
    grpc_code = grpc.StatusCode.UNAVAILABLE
    outcome = "server_error"
