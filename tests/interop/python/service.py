"""The Python HTTP service of the interop run: FastAPI + NeMo Lens, calling Rust through aiohttp.

    python service.py --rust-url http://127.0.0.1:PORT --spans PATH
        [--otlp-protocol grpc|http/protobuf --otlp-endpoint URL] [--baggage-keys]

Binds 127.0.0.1 on a free port and prints `LISTENING <port>`. The FastAPI app is instrumented
with NeMo Lens's `instrument_fastapi`, the aiohttp client with `instrument_aiohttp_client`.
When standard input closes, the server stops, every span is flushed and written to PATH as JSON,
and `SPANS <count>` is printed. With `--otlp-*`, every span is also exported, as it ends, by the
SDK's OTLP exporter (gRPC or HTTP/protobuf) to that endpoint (`lens watch`), and each request
handled logs one record (`handled PATH`) through Python `logging` and the OpenTelemetry
`LoggingHandler`, exported by the SDK's OTLP log exporter to the same endpoint. With
`--baggage-keys`, SERVER spans record the keys of the baggage that arrived (docs/probe.md's span
processor, `BaggageKeys` below).

Endpoints (each answers with what it saw, `describe()` of the current Context):
  GET  /health   readiness (not traced: OTEL_PYTHON_FASTAPI_EXCLUDED_URLS=health)
  POST /start    {"baggage": [[k, v], ...]}: sets that baggage, POSTs {rust}/relay
  POST /relay    POSTs {rust}/leaf
  POST /leaf     calls nothing
  POST /generate POSTs {rust}/leaf with a context-bleed bug written as users write it (the
                 `probe-bleed` scenario): the handler keeps its request's context in a module-level
                 variable (`_request_context`) for the client helper, awaits (the model's queue),
                 then the helper attaches whatever that variable holds: under concurrency, the
                 context of the last request to arrive, not its own
  POST /generate_fixed  the same, the context taken from the request (the current context)
  POST /call     {"url": URL, "propagate": bool}: POSTs {} to URL through an aiohttp session of
                 its own; with "propagate": false the aiohttp instrumentation still records its
                 CLIENT span, but the W3C headers it injected are dropped before the request is
                 sent (a client that does not inject, as the `doctor` scenario needs); answers
                 {"status": <status>, "answer": <the JSON answer>}
  GET  /tokens   a FastAPI StreamingResponse of server-sent events (the `http-stream` scenario):
                 TOKENS events, the first after FIRST_TOKEN_S, each `data: {"i": i, "sent_ns":
                 time.time_ns() when it was handed to the server}`
  POST /read_stream {"url": URL}: GETs URL through aiohttp and reads the body as it comes;
                 answers {"status", "first_ns": time.time_ns() when the first chunk arrived,
                 "chunks", "events"}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
import threading
import time

os.environ.setdefault("OTEL_PYTHON_FASTAPI_EXCLUDED_URLS", "health")

import aiohttp  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import StreamingResponse  # noqa: E402
from opentelemetry import baggage, context  # noqa: E402
from opentelemetry.sdk.trace import SpanProcessor  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from opentelemetry.instrumentation.aiohttp_client import (  # noqa: E402
    AioHttpClientInstrumentor,
    create_trace_config,
)

from nemo.lens.contrib.aiohttp import instrument_aiohttp_client  # noqa: E402
from nemo.lens.contrib.fastapi import instrument_fastapi  # noqa: E402

import common  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rust-url", required=True)
    parser.add_argument("--spans", required=True)
    parser.add_argument("--otlp-protocol", choices=["grpc", "http/protobuf"])
    parser.add_argument("--otlp-endpoint")
    parser.add_argument("--baggage-keys", action="store_true")
    args = parser.parse_args()
    rust_url = args.rust_url.rstrip("/")

    handle, exporter = common.setup("lens-interop-python", args.otlp_protocol, args.otlp_endpoint)
    log = (
        common.setup_logs("lens-interop-python", args.otlp_protocol, args.otlp_endpoint)
        if args.otlp_protocol
        else None
    )

    def handled(path: str) -> None:
        # Inside the request's FastAPI SERVER span: the record carries its ids.
        if log is not None:
            log.info("handled %s", path)

    if args.baggage_keys:
        from opentelemetry import trace

        trace.get_tracer_provider().add_span_processor(BaggageKeys())
    instrument_aiohttp_client()

    app = FastAPI()
    instrument_fastapi(app, service_name="lens-interop-python")
    timeout = aiohttp.ClientTimeout(total=20)

    async def call_rust(path: str) -> dict:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.post(f"{rust_url}{path}", json={}) as response:
                response.raise_for_status()
                return await response.json()

    @app.post("/call")
    async def call(request: Request) -> dict:
        body = await request.json()
        if body.get("propagate", True):
            session = aiohttp.ClientSession(timeout=timeout)
        else:
            # The instrumentation's own trace config (CLIENT span, then inject), then one that
            # drops what it injected; the one instrument_aiohttp_client adds is taken out.
            session = aiohttp.ClientSession(
                timeout=timeout, trace_configs=[create_trace_config(), _drop_propagation()]
            )
            AioHttpClientInstrumentor.uninstrument_session(session)
        async with session:
            async with session.post(body["url"], json={}) as response:
                return {"status": response.status, "answer": await response.json()}

    @app.get("/health")
    async def health() -> dict:
        return {"ok": True}

    @app.post("/start")
    async def start(request: Request) -> dict:
        handled("/start")
        body = await request.json()
        ctx = context.get_current()
        for key, value in body.get("baggage", []):
            ctx = baggage.set_baggage(key, value, ctx)
        token = context.attach(ctx)
        try:
            seen = common.describe()
            rust = await call_rust("/relay")
        finally:
            context.detach(token)
        return {"python_start": seen, "rust": rust}

    @app.post("/relay")
    async def relay() -> dict:
        handled("/relay")
        seen = common.describe()
        rust = await call_rust("/leaf")
        return {"python_relay": seen, "rust": rust}

    # ---- a context bleed (docs/probe.md#context-bleed): the `probe-bleed` scenario ----

    async def call_rust_in(ctx, path: str) -> dict:
        token = context.attach(ctx)
        try:
            return await call_rust(path)
        finally:
            context.detach(token)

    @app.post("/generate")
    async def generate() -> dict:
        global _request_context
        _request_context = context.get_current()
        await asyncio.sleep(QUEUE_S)
        # The bug: by now another request may have replaced the module-level context.
        return {"rust": await call_rust_in(_request_context, "/leaf")}

    @app.post("/generate_fixed")
    async def generate_fixed() -> dict:
        await asyncio.sleep(QUEUE_S)
        return {"rust": await call_rust_in(context.get_current(), "/leaf")}

    @app.post("/leaf")
    async def leaf() -> dict:
        handled("/leaf")
        return {"python_leaf": common.describe()}

    # ---- streams (docs/streaming.md): the `http-stream` scenario ----

    @app.get("/tokens")
    async def tokens() -> StreamingResponse:
        async def events():
            for i in range(TOKENS):
                await asyncio.sleep(FIRST_TOKEN_S if i == 0 else TOKEN_GAP_S)
                event = json.dumps({"i": i, "sent_ns": time.time_ns()})
                yield f"data: {event}\n\n".encode()

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/read_stream")
    async def read_stream(request: Request) -> dict:
        body = await request.json()
        first_ns = None
        chunks = 0
        data = b""
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.get(body["url"]) as response:
                async for chunk in response.content.iter_any():
                    if first_ns is None:
                        first_ns = time.time_ns()
                    chunks += 1
                    data += chunk
                status = response.status
        return {
            "status": status,
            "first_ns": first_ns,
            "chunks": chunks,
            "events": data.count(b"data: "),
        }

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    def stop_when_stdin_closes() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
    print(f"LISTENING {sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])
    count = common.write_spans(exporter, handle, args.spans)
    print(f"SPANS {count}", flush=True)
    return 0


# The `http-stream` scenario's stream: events, the wait before the first, the gap between the others.
TOKENS = 5
FIRST_TOKEN_S = 0.030
TOKEN_GAP_S = 0.005


# /generate's bug: the last request's context, kept for the client helper (module-level, shared
# by every request the event loop serves).
_request_context = None

# /generate's wait before it calls on (a request queued for the model).
QUEUE_S = 0.020


class BaggageKeys(SpanProcessor):
    """docs/probe.md's span processor: on every SERVER and CONSUMER span, the keys of the
    baggage that arrived (`lens.baggage.keys`), never the values; what lets `lens probe` see a
    Python service's baggage."""

    def on_start(self, span, parent_context=None):
        if span.kind in (SpanKind.SERVER, SpanKind.CONSUMER):
            # parent_context: the context extracted from the request, baggage included.
            span.set_attribute("lens.baggage.keys", list(baggage.get_all(parent_context)))


def _drop_propagation() -> aiohttp.TraceConfig:
    """An aiohttp trace config that removes the W3C headers from each request before it is sent."""

    async def on_request_start(_session, _ctx, params) -> None:
        for name in ("traceparent", "tracestate", "baggage"):
            params.headers.popall(name, None)

    config = aiohttp.TraceConfig()
    config.on_request_start.append(on_request_start)
    return config


if __name__ == "__main__":
    sys.exit(main())
