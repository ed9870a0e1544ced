"""The Python gRPC peer of the interop run: grpcio with NeMo Lens's inject_context / extract_context.

    python grpc_peer.py --spans PATH

NeMo Lens has no gRPC helper; its documentation tells users to carry the context in gRPC
metadata with `inject_context` / `extract_context`, which is what this script does, with plain
`grpcio` (no generated code: methods are called and served by path, messages are JSON bytes).

Serves `lens.interop.Relay` on 127.0.0.1 (a free port) and prints `LISTENING <port>`:
  /lens.interop.Relay/Unary   (unary)            -> {"python_server": DESC}
  /lens.interop.Relay/Stream  (server-streaming) {"items": K, "code": NAME}
                              -> K x {"python_server": DESC}, then status NAME (e.g. "OK")
Each handler runs `extract_context(dict(context.invocation_metadata()))`, attaches it, and starts
its SERVER span (named `lens.interop.Relay/<Method>`) under it; DESC describes the current
Context inside that span (`common.describe`).

Then reads one JSON request per line on standard input and answers one JSON line:
  {"op": "call", "target": "127.0.0.1:PORT", "method": "/pkg.Service/Method",
   "streaming": bool, "parent": DESC, "request": {...}}
      -> {"client": DESC, "metadata": {...}, "answers": [...], "code": NAME, "details": str}:
         with `parent` current (common.build_context), inside a CLIENT span named after the
         method, `inject_context(carrier)` fills the metadata, and the call is made with it
  {"op": "finish", "spans": PATH} -> {"spans": n}: stops the server, writes every span, exits
"""

from __future__ import annotations

import contextlib
import json
import sys
from concurrent import futures

import grpc
from opentelemetry import context, trace
from opentelemetry.trace import SpanKind

from nemo.lens import extract_context, inject_context

import common

SERVICE = "lens.interop.Relay"
TIMEOUT_S = 30


@contextlib.contextmanager
def server_span(method: str, grpc_context):
    """The SERVER span of `method`, current under the context the call's metadata carries."""
    token = context.attach(extract_context(dict(grpc_context.invocation_metadata())))
    try:
        tracer = trace.get_tracer("lens-interop.grpc-server")
        with tracer.start_as_current_span(f"{SERVICE}/{method}", kind=SpanKind.SERVER):
            yield
    finally:
        context.detach(token)


def unary(_request: bytes, grpc_context) -> bytes:
    with server_span("Unary", grpc_context):
        return json.dumps({"python_server": common.describe()}).encode()


def stream(request: bytes, grpc_context):
    """The span stays open while the messages are sent; the status follows the last one."""
    request = json.loads(request)
    with server_span("Stream", grpc_context):
        for _ in range(int(request["items"])):
            yield json.dumps({"python_server": common.describe()}).encode()
        code = grpc.StatusCode[request.get("code", "OK")]
        if code != grpc.StatusCode.OK:
            grpc_context.set_code(code)
            grpc_context.set_details(f"as asked: {code.name}")


def call(request: dict) -> dict:
    method = request["method"]
    token = context.attach(common.build_context(request["parent"]))
    try:
        tracer = trace.get_tracer("lens-interop.grpc-client")
        with tracer.start_as_current_span(method.lstrip("/"), kind=SpanKind.CLIENT):
            carrier: dict = {}
            inject_context(carrier)
            client = common.describe()
            body = json.dumps(request.get("request", {})).encode()
            answers, code, details = [], "OK", ""
            with grpc.insecure_channel(request["target"]) as channel:
                try:
                    if request.get("streaming"):
                        responses = channel.unary_stream(method)(
                            body, metadata=tuple(carrier.items()), timeout=TIMEOUT_S
                        )
                        for item in responses:
                            answers.append(json.loads(item))
                    else:
                        answer = channel.unary_unary(method)(
                            body, metadata=tuple(carrier.items()), timeout=TIMEOUT_S
                        )
                        answers.append(json.loads(answer))
                except grpc.RpcError as exc:
                    code, details = exc.code().name, exc.details() or ""
    finally:
        context.detach(token)
    return {
        "client": client,
        "metadata": carrier,
        "answers": answers,
        "code": code,
        "details": details,
    }


def main() -> int:
    handle, exporter = common.setup("lens-interop-grpc")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"LISTENING {port}", flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request["op"]
        if op == "finish":
            server.stop(grace=5).wait()
            count = common.write_spans(exporter, handle, request["spans"])
            print(json.dumps({"spans": count}), flush=True)
            return 0
        try:
            if op != "call":
                raise ValueError(f"unknown op {op!r}")
            answer = call(request)
        except Exception as exc:  # report to the Rust side instead of dying mid-protocol
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)
    server.stop(grace=5).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
