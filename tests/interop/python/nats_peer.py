"""The Python NATS peer of the interop run: nats-py with NeMo Lens's inject_context / extract_context.

    python nats_peer.py nats://127.0.0.1:PORT [--otlp-protocol grpc|http/protobuf --otlp-endpoint URL]

With the OTLP options (the `doctor` scenario), every span also goes, as it ends, to that OTLP
receiver (a running `lens watch`) through the SDK's own exporter.

NeMo Lens has no NATS helper; its page on context propagation tells users to carry the context
in the message's headers, which is what this script does, by hand, as a NeMo Lens user would:

* publishing: a PRODUCER span, `inject_context(headers)`, `nc.publish(subject, payload,
  headers=headers)` (or `nc.request(...)`, or JetStream's `js.publish(...)`);
* consuming: `extract_context(msg.headers)`, `context.attach`, a CONSUMER span.

Both kinds of span carry the messaging attributes a hand-written instrumentation records
(`messaging.system` = `nats`, `messaging.operation.name` / `.type`,
`messaging.destination.name`; JetStream: `messaging.nats.stream_sequence`).

On start it connects, subscribes to `py.core.>` (core messages), to `fan.>` (an audit subscriber
that ignores the headers: its CONSUMER span starts a trace of its own, as a subscriber with no
propagation code does; queue `fan`) and `py.svc` (requests: the reply,
`{"python_consumer": DESC}`, is published inside the CONSUMER span under a PRODUCER span `send`
of its own, with the context injected), makes a pull consumer `py-worker` on the stream `PYJOBS`
(which the Rust side created, subjects `py.js.>`), flushes, and prints `READY`.

Then reads one JSON request per line on standard input and answers one JSON line:
  {"op": "publish", "mode": "core" | "request" | "jetstream", "subject": S, "parent": DESC,
   "payload": TEXT, "inject": true | false}
      -> {"producer": DESC, "headers": {...}, "reply": {"payload": ..., "headers": {...}},
          "sequence": N}: with `parent` current (common.build_context), inside a PRODUCER span
         `send S`, headers from `inject_context`, the message sent (a request waits for its
         reply; a JetStream publish for its ack, whose sequence is returned). With
         `"inject": false` (default true), a publisher that records its span but does not
         inject: the message goes with a header of its own and no trace context
  {"op": "next", "queue": "core" | "svc" | "fan"}
      -> {"consumer": DESC, "headers": {...}, "subject": S}: what the handler of the next core
         message (or request) saw inside its CONSUMER span, and the headers that arrived
  {"op": "fetch"} -> the same for the next JetStream message (fetched, processed, acked),
         with "sequence": its stream sequence
  {"op": "finish", "spans": PATH} -> {"spans": n}: drains the connection, writes every span, exits
"""

from __future__ import annotations

import asyncio
import json
import sys

import nats
from opentelemetry import context, trace
from opentelemetry.trace import SpanKind

from nemo.lens import extract_context, inject_context

import common

TIMEOUT_S = 30
STREAM = "PYJOBS"


def messaging_attributes(operation: str, destination: str | None) -> dict:
    attributes = {
        "messaging.system": "nats",
        "messaging.operation.name": operation,
        "messaging.operation.type": operation,
    }
    if destination is None:
        attributes["messaging.destination.temporary"] = True
    else:
        attributes["messaging.destination.name"] = destination
    return attributes


def tracer():
    return trace.get_tracer("lens-interop.nats")


class Peer:
    def __init__(self, nc):
        self.nc = nc
        self.js = nc.jetstream()
        self.queues = {"core": asyncio.Queue(), "svc": asyncio.Queue(), "fan": asyncio.Queue()}
        self.pull = None

    async def start(self):
        await self.nc.subscribe("py.core.>", cb=self.on_core)
        await self.nc.subscribe("py.svc", cb=self.on_request)
        await self.nc.subscribe("fan.>", cb=self.on_ignoring)
        self.pull = await self.js.pull_subscribe("py.js.>", durable="py-worker", stream=STREAM)
        await self.nc.flush()

    def process(self, msg, extra: dict | None = None):
        """The CONSUMER span of `msg`, current under the context its headers carry."""
        attributes = messaging_attributes("process", msg.subject)
        attributes.update(extra or {})
        token = context.attach(extract_context(msg.headers or {}))
        span = tracer().start_as_current_span(
            f"process {msg.subject}", kind=SpanKind.CONSUMER, attributes=attributes
        )
        return token, span

    async def on_core(self, msg):
        token, span = self.process(msg)
        try:
            with span:
                seen = common.describe()
        finally:
            context.detach(token)
        await self.queues["core"].put(
            {"consumer": seen, "headers": dict(msg.headers or {}), "subject": msg.subject}
        )

    async def on_ignoring(self, msg):
        """An audit subscriber that never reads the trace context in the headers."""
        with tracer().start_as_current_span(
            f"process {msg.subject}",
            kind=SpanKind.CONSUMER,
            attributes=messaging_attributes("process", msg.subject),
        ):
            seen = common.describe()
        await self.queues["fan"].put(
            {"consumer": seen, "headers": dict(msg.headers or {}), "subject": msg.subject}
        )

    async def on_request(self, msg):
        token, span = self.process(msg)
        try:
            with span:
                seen = common.describe()
                # The reply goes to the requester's inbox (a temporary destination).
                with tracer().start_as_current_span(
                    "send", kind=SpanKind.PRODUCER, attributes=messaging_attributes("send", None)
                ):
                    headers: dict = {}
                    inject_context(headers)
                    body = json.dumps({"python_consumer": seen}).encode()
                    await self.nc.publish(msg.reply, body, headers=headers)
        finally:
            context.detach(token)
        await self.queues["svc"].put(
            {"consumer": seen, "headers": dict(msg.headers or {}), "subject": msg.subject}
        )

    async def publish(self, request: dict) -> dict:
        mode, subject = request["mode"], request["subject"]
        payload = request.get("payload", "").encode()
        answer: dict = {}
        token = context.attach(common.build_context(request["parent"]))
        try:
            with tracer().start_as_current_span(
                f"send {subject}",
                kind=SpanKind.PRODUCER,
                attributes=messaging_attributes("send", subject),
            ) as span:
                headers: dict = {}
                if request.get("inject", True):
                    inject_context(headers)
                else:
                    headers["x-job-kind"] = "rollout"
                answer["producer"] = common.describe()
                answer["headers"] = dict(headers)
                if mode == "core":
                    await self.nc.publish(subject, payload, headers=headers)
                    await self.nc.flush()
                elif mode == "request":
                    reply = await self.nc.request(
                        subject, payload, timeout=TIMEOUT_S, headers=headers
                    )
                    answer["reply"] = {
                        "payload": json.loads(reply.data),
                        "headers": dict(reply.headers or {}),
                    }
                elif mode == "jetstream":
                    ack = await self.js.publish(subject, payload, timeout=TIMEOUT_S, headers=headers)
                    answer["sequence"] = ack.seq
                    span.set_attribute("messaging.nats.stream_sequence", ack.seq)
                else:
                    raise ValueError(f"unknown mode {mode!r}")
        finally:
            context.detach(token)
        return answer

    async def next(self, queue: str) -> dict:
        return await asyncio.wait_for(self.queues[queue].get(), TIMEOUT_S)

    async def fetch(self) -> dict:
        (msg,) = await self.pull.fetch(batch=1, timeout=TIMEOUT_S)
        sequence = msg.metadata.sequence.stream
        token, span = self.process(msg, {"messaging.nats.stream_sequence": sequence})
        try:
            with span:
                seen = common.describe()
                await msg.ack()
        finally:
            context.detach(token)
        return {
            "consumer": seen,
            "headers": dict(msg.headers or {}),
            "subject": msg.subject,
            "sequence": sequence,
        }


async def main(url: str, otlp_protocol: str | None, otlp_endpoint: str | None) -> int:
    handle, exporter = common.setup("lens-interop-nats", otlp_protocol, otlp_endpoint)
    nc = await nats.connect(url, connect_timeout=TIMEOUT_S, allow_reconnect=False)
    peer = Peer(nc)
    await peer.start()
    print("READY", flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        if not line.strip():
            continue
        request = json.loads(line)
        op = request["op"]
        if op == "finish":
            await nc.drain()
            count = common.write_spans(exporter, handle, request["spans"])
            print(json.dumps({"spans": count}), flush=True)
            return 0
        try:
            if op == "publish":
                answer = await peer.publish(request)
            elif op == "next":
                answer = await peer.next(request["queue"])
            elif op == "fetch":
                answer = await peer.fetch()
            else:
                raise ValueError(f"unknown op {op!r}")
        except Exception as exc:  # report to the Rust side instead of dying mid-protocol
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)
    await nc.close()
    return 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--otlp-protocol")
    parser.add_argument("--otlp-endpoint")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.url, args.otlp_protocol, args.otlp_endpoint)))
