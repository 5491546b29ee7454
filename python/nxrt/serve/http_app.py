"""The HTTP/REST side of the protocol, as a FastAPI app served by uvicorn. Every answer that is
not a success is the protocol's error body {"error": "..."} with a 4xx/5xx status."""

import asyncio
import contextlib
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from . import core, http_codec
from .errors import BadRequest, RequestTooLarge, ServeError, Unavailable


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BadRequest("Content-Length must be an integer")
        if int(declared) > limit:
            raise RequestTooLarge(f"the request has {declared} bytes, the limit is {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:  # a chunked body has no Content-Length to refuse it by
            raise RequestTooLarge(f"the request exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _decode(model, body: bytes, header_length):
    decoded = http_codec.decode_request(body, header_length)
    return (decoded,) + model.prepare(decoded)


def make_app(registry, metrics, max_request_bytes: int, on_shutdown=lambda: None) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        # uvicorn ends the process by re-raising SIGTERM/SIGINT once HTTP has shut down, so
        # whatever else must stop cleanly (gRPC, the sessions) stops here.
        await asyncio.get_running_loop().run_in_executor(None, on_shutdown)

    app = FastAPI(title="nxrt serve", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)

    @app.exception_handler(ServeError)
    async def _serve_error(_request, e: ServeError):
        return error_response(e.http_status, str(e))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request, e: StarletteHTTPException):
        return error_response(e.status_code, str(e.detail))

    @app.get("/v2")
    async def server_metadata():
        return core.server_metadata()

    @app.get("/v2/health/live")
    async def live():
        return {"live": True}

    @app.get("/v2/health/ready")
    async def ready():
        if not registry.all_ready():
            return error_response(503, "not every model is ready")
        return {"ready": True}

    @app.get("/v2/models/{name}")
    @app.get("/v2/models/{name}/versions/{version}")
    async def model_metadata(name: str, version: str = ""):
        model = registry.get(name)
        model.check_version(version)
        return model.metadata()

    @app.get("/v2/models/{name}/ready")
    @app.get("/v2/models/{name}/versions/{version}/ready")
    async def model_ready(name: str, version: str = ""):
        model = registry.get(name)
        model.check_version(version)
        if not model.ready:
            raise Unavailable(f"model '{name}' is not ready")
        return {"name": name, "ready": True}

    @app.post("/v2/models/{name}/infer")
    @app.post("/v2/models/{name}/versions/{version}/infer")
    async def infer(name: str, request: Request, version: str = ""):
        label = name if registry.known(name) else ""
        start = time.perf_counter()
        try:
            model = registry.get(name)
            model.check_version(version)
            encoding = request.headers.get("content-encoding", "identity").lower()
            if encoding != "identity":
                raise BadRequest(f"Content-Encoding {encoding[:40]!r} is not supported")
            body = await _read_body(request, max_request_bytes)
            # Decoding and encoding are CPU work on client-sized data: off the event loop, so
            # one large request does not stall the others.
            decoded, feeds, requested = await asyncio.to_thread(
                _decode, model, body, request.headers.get(http_codec.HEADER_LENGTH))
            try:
                results = await asyncio.wrap_future(model.submit(feeds))
            except Exception as e:
                raise core.run_failed(e) from e
            content, headers = await asyncio.to_thread(
                lambda: http_codec.encode_response(model.respond(decoded, requested, results)))
        except ServeError as e:
            metrics.request_done(label, "http", e.outcome)
            return error_response(e.http_status, str(e))
        except ClientDisconnect:  # gone before its body arrived: nobody reads the answer
            metrics.request_done(label, "http", "client_error")
            return error_response(400, "the client disconnected")
        except Exception as e:  # a bug of ours: still an error body, and counted
            metrics.request_done(label, "http", "server_error")
            return error_response(500, f"internal error: {type(e).__name__}: {e}")
        metrics.request_done(label, "http", "success", time.perf_counter() - start)
        return Response(content, headers=headers)

    @app.get("/metrics")
    async def prometheus():
        # In a thread: on Ray the exposition waits on the other replicas' samples.
        body, content_type = await asyncio.get_running_loop().run_in_executor(
            None, metrics.exposition)
        return Response(body, media_type=content_type)

    return app
