"""The Python client of the doctor scenario's load-balancer pools: NeMo Lens over aiohttp and grpcio.

    python lb_client.py --otlp-protocol grpc|http/protobuf --otlp-endpoint URL

Telemetry as a NeMo Lens application sets it up (`common.setup`, service `lens-interop-python-lb`),
every span exported, as it ends, by the SDK's OTLP exporter to `lens watch`. Prints `READY`, then
reads one JSON request per line on standard input and answers one JSON line:

  {"op": "http", "url": URL}
      -> {"status": S, "text": BODY}: `GET URL` through aiohttp, whose CLIENT span NeMo Lens's
         `instrument_aiohttp_client` records (a root: the request has no parent), the W3C
         headers injected by it
  {"op": "grpc", "target": "127.0.0.1:PORT", "method": "/pkg.Service/Method", "message": TEXT}
      -> {"answer": TEXT, "trace_id": HEX, "span_id": HEX}: a unary call with grpcio, the message
         JSON, inside a CLIENT span (a root) carrying the OpenTelemetry RPC conventions' client
         attributes (`rpc.system`, `rpc.service`, `rpc.method`, `server.address`/`server.port`:
         the target called, the balancer's address), NeMo Lens's `inject_context(carrier)` on the
         call's metadata (NeMo Lens has no gRPC helper; its documentation says to do this)
  {"op": "finish", "spans": PATH} -> {"spans": n}: writes every span to PATH, exits
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import aiohttp
import grpc
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from nemo.lens import inject_context
from nemo.lens.contrib.aiohttp import instrument_aiohttp_client

import common

SERVICE_NAME = "lens-interop-python-lb"
TIMEOUT_S = 30


async def http_get(session: aiohttp.ClientSession, url: str) -> dict:
    async with session.get(url) as response:
        return {"status": response.status, "text": await response.text()}


def grpc_call(channels: dict, request: dict) -> dict:
    target, method = request["target"], request["method"]
    service, _, name = method.lstrip("/").rpartition("/")
    host, _, port = target.rpartition(":")
    tracer = trace.get_tracer("lens-interop.lb-client")
    attributes = {
        "rpc.system": "grpc",
        "rpc.service": service,
        "rpc.method": name,
        "server.address": host,
        "server.port": int(port),
    }
    with tracer.start_as_current_span(
        method.lstrip("/"), kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        carrier: dict = {}
        inject_context(carrier)
        channel = channels.get(target)
        if channel is None:
            channel = channels[target] = grpc.insecure_channel(target)
        body = json.dumps(request["message"]).encode()
        answer = channel.unary_unary(method)(
            body, metadata=tuple(carrier.items()), timeout=TIMEOUT_S
        )
        ctx = span.get_span_context()
    return {
        "answer": json.loads(answer),
        "trace_id": common.hex_trace_id(ctx.trace_id),
        "span_id": common.hex_span_id(ctx.span_id),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--otlp-protocol", required=True, choices=["grpc", "http/protobuf"])
    parser.add_argument("--otlp-endpoint", required=True)
    args = parser.parse_args()
    handle, exporter = common.setup(SERVICE_NAME, args.otlp_protocol, args.otlp_endpoint)
    instrument_aiohttp_client()

    loop = asyncio.new_event_loop()
    session = loop.run_until_complete(_session())
    channels: dict = {}
    print("READY", flush=True)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            op = request["op"]
            if op == "finish":
                loop.run_until_complete(session.close())
                for channel in channels.values():
                    channel.close()
                count = common.write_spans(exporter, handle, request["spans"])
                print(json.dumps({"spans": count}), flush=True)
                return 0
            try:
                if op == "http":
                    answer = loop.run_until_complete(http_get(session, request["url"]))
                elif op == "grpc":
                    answer = grpc_call(channels, request)
                else:
                    raise ValueError(f"unknown op {op!r}")
            except Exception as exc:  # report to the Rust side instead of dying mid-protocol
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(answer), flush=True)
    finally:
        loop.close()
    return 0


async def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S))


if __name__ == "__main__":
    sys.exit(main())
