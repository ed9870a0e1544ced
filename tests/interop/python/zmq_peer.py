"""The Python ZeroMQ peer of the interop run: pyzmq and msgspec with NeMo Lens.

    python zmq_peer.py

NeMo Lens has no ZeroMQ helper; this script carries the context the two ways lens-zmq reads
and writes it, by hand, as a NeMo Lens user would:

* the frame: the last frame of a multipart message is `b"\\x00lens-ctx\\x01"` followed by
  `serialize_context()` (nemo.lens.contrib.nccl); read back with `extract_nccl_context(frame[10:])`;
* the field: a msgspec struct with `array_like=True` (the shape of vLLM's EngineCoreRequest)
  whose `trace_headers` is the dict `inject_context(d)` filled; read back with
  `extract_context(request.trace_headers or {})`.

A send is a PRODUCER span `send DEST`, a receive a CONSUMER span `process DEST` under the
extracted context (`context.attach`), with the messaging attributes a hand-written
instrumentation records (`messaging.system` = `zeromq`).

On start it binds a PULL and a ROUTER socket on tcp://127.0.0.1 (ports chosen by the system)
and prints {"pull": ENDPOINT, "router": ENDPOINT}. Then one JSON request per line on stdin:
  {"op": "send", "socket": "push" | "dealer", "endpoint": E, "carrier": "frame" | "field",
   "parent": DESC, "destination": D}
      -> {"producer": DESC, "frames_hex": [...]}: sent with `parent` current (a DEALER socket is
         kept for "reply")
  {"op": "reply", "carrier": ..., "destination": D}
      -> {"extracted": DESC, "consumer": DESC}: the reply on the last DEALER, processed
  {"op": "recv", "socket": "pull" | "router", "carrier": ..., "destination": D}
      -> {"extracted": DESC, "consumer": DESC, "payload": TEXT}: the next message, processed
         (the ROUTER replies from inside its CONSUMER span, the context as the same carrier,
         in a PRODUCER span `send D.replies`, returned as "reply_producer")
  {"op": "encode", "parent": DESC} -> {"hex": ...}: an EngineCoreRequest, trace_headers filled
  {"op": "reencode", "hex": ...} -> {"hex": ..., "trace_headers": {...}}: decoded, encoded again
  {"op": "finish", "spans": PATH} -> {"spans": n}: writes every span, exits
"""

from __future__ import annotations

import json
import sys

import msgspec
import zmq
from opentelemetry import context, trace
from opentelemetry.trace import SpanKind

from nemo.lens import extract_context, inject_context
from nemo.lens.contrib.nccl import extract_nccl_context, serialize_context

import common

MARKER = b"\x00lens-ctx\x01"
TIMEOUT_MS = 20_000


class EngineCoreRequest(msgspec.Struct, array_like=True):
    """The shape of vLLM's EngineCoreRequest: positional, with a trace_headers slot."""

    request_id: str
    prompt_token_ids: list[int]
    arrival_time: float
    priority: int
    trace_headers: dict[str, str] | None = None


ENCODER = msgspec.msgpack.Encoder()
DECODER = msgspec.msgpack.Decoder(EngineCoreRequest)


def attributes(operation: str, destination: str, size: int) -> dict:
    return {
        "messaging.system": "zeromq",
        "messaging.operation.name": operation,
        "messaging.operation.type": operation,
        "messaging.destination.name": destination,
        "messaging.message.body.size": size,
    }


def tracer():
    return trace.get_tracer("lens-interop.zeromq")


def outgoing(carrier: str, payload: bytes) -> list[bytes]:
    """The frames of a message sent with the current context, in `carrier`."""
    if carrier == "frame":
        return [payload, MARKER + serialize_context()]
    headers: dict = {}
    inject_context(headers)
    request = EngineCoreRequest("py-1", [1, 2, 3], 0.5, 0, trace_headers=headers)
    return [ENCODER.encode(request)]


def incoming(carrier: str, frames: list[bytes]):
    """(extracted Context, payload frames) of a message received."""
    if carrier == "frame":
        last = frames[-1]
        if last.startswith(MARKER):
            return extract_nccl_context(last[len(MARKER):]), frames[:-1]
        return context.Context(), frames
    request = DECODER.decode(frames[-1])
    return extract_context(dict(request.trace_headers or {})), frames


class Peer:
    def __init__(self):
        self.ctx = zmq.Context()
        self.pull = self.bound(zmq.PULL)
        self.router = self.bound(zmq.ROUTER)
        self.dealer = None

    def bound(self, kind):
        sock = self.ctx.socket(kind)
        sock.setsockopt(zmq.RCVTIMEO, TIMEOUT_MS)
        sock.setsockopt(zmq.LINGER, 1000)
        sock.bind("tcp://127.0.0.1:*")
        return sock

    def send(self, request: dict) -> dict:
        kind = {"push": zmq.PUSH, "dealer": zmq.DEALER}[request["socket"]]
        sock = self.ctx.socket(kind)
        sock.setsockopt(zmq.RCVTIMEO, TIMEOUT_MS)
        sock.setsockopt(zmq.LINGER, 1000)
        sock.connect(request["endpoint"])
        destination = request["destination"]
        token = context.attach(common.build_context(request["parent"]))
        try:
            with tracer().start_as_current_span(
                f"send {destination}",
                kind=SpanKind.PRODUCER,
                attributes=attributes("send", destination, 7),
            ):
                producer = common.describe()
                frames = outgoing(request["carrier"], b"payload")
                sock.send_multipart(frames)
        finally:
            context.detach(token)
        if request["socket"] == "dealer":
            self.dealer = sock
        return {"producer": producer, "frames_hex": [f.hex() for f in frames]}

    def process(self, carrier: str, frames: list[bytes], destination: str, reply=None) -> dict:
        extracted, payload = incoming(carrier, frames)
        token = context.attach(extracted)
        try:
            with tracer().start_as_current_span(
                f"process {destination}",
                kind=SpanKind.CONSUMER,
                attributes=attributes("process", destination, sum(map(len, payload))),
            ):
                answer = {"extracted": common.describe(extracted), "consumer": common.describe()}
                if reply is not None:
                    answer["reply_producer"] = reply()
        finally:
            context.detach(token)
        answer["payload_hex"] = [f.hex() for f in payload]
        return answer

    def reply(self, request: dict) -> dict:
        frames = self.dealer.recv_multipart()
        return self.process(request["carrier"], frames, request["destination"])

    def recv(self, request: dict) -> dict:
        carrier, destination = request["carrier"], request["destination"]
        if request["socket"] == "pull":
            return self.process(carrier, self.pull.recv_multipart(), destination)
        frames = self.router.recv_multipart()
        identity, rest = frames[0], frames[1:]

        def reply():
            with tracer().start_as_current_span(
                f"send {destination}.replies",
                kind=SpanKind.PRODUCER,
                attributes=attributes("send", f"{destination}.replies", 5),
            ):
                seen = common.describe()
                self.router.send_multipart([identity] + outgoing(carrier, b"reply"))
            return seen

        return self.process(carrier, rest, destination, reply)

    def encode(self, request: dict) -> dict:
        token = context.attach(common.build_context(request["parent"]))
        try:
            return {"hex": outgoing("field", b"")[0].hex()}
        finally:
            context.detach(token)

    def reencode(self, request: dict) -> dict:
        decoded = DECODER.decode(bytes.fromhex(request["hex"]))
        return {"hex": ENCODER.encode(decoded).hex(), "trace_headers": decoded.trace_headers}


def main() -> int:
    handle, exporter = common.setup("lens-interop-zeromq")
    peer = Peer()
    print(
        json.dumps(
            {
                "pull": peer.pull.getsockopt_string(zmq.LAST_ENDPOINT),
                "router": peer.router.getsockopt_string(zmq.LAST_ENDPOINT),
            }
        ),
        flush=True,
    )
    ops = {
        "send": peer.send,
        "reply": peer.reply,
        "recv": peer.recv,
        "encode": peer.encode,
        "reencode": peer.reencode,
    }
    for line in sys.stdin:
        request = json.loads(line)
        op = request.get("op")
        if op == "finish":
            count = common.write_spans(exporter, handle, request["spans"])
            print(json.dumps({"spans": count}), flush=True)
            return 0
        try:
            answer = ops[op](request)
        except Exception as e:  # answered, never a hang on the Rust side
            answer = {"error": f"{op}: {type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
