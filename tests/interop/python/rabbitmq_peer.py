"""The RabbitMQ hops of the `doctor-rabbitmq` scenario: pika and aio-pika with their OpenTelemetry
instrumentations, every span to an OTLP receiver (a running `lens watch`) as it ends.

    python rabbitmq_peer.py AMQP_URL --spans PATH [--otlp-protocol grpc|http/protobuf --otlp-endpoint URL]

On a direct exchange `lens.jobs` (queues `healthy-q` and `blind-q`, bound by their routing keys):

1. healthy: aio-pika publishes (`opentelemetry-instrumentation-aio-pika` injects the context into
   the message's headers), pika consumes (`opentelemetry-instrumentation-pika` extracts it: its
   CONSUMER span is the child of the PRODUCER span);
2. a publisher that does not propagate: pika publishes, and its publish hook empties the headers
   the instrumentation injected (as a proxy or a serializer that keeps no headers does): the
   PRODUCER span is recorded, the message goes without context, and aio-pika's CONSUMER span
   starts a trace of its own.

Then writes every span to PATH, prints `{"done": true}` and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json

import aio_pika
import pika
from opentelemetry.instrumentation.aio_pika import AioPikaInstrumentor
from opentelemetry.instrumentation.pika import PikaInstrumentor

import common

SERVICE = "lens-interop-rabbitmq"
EXCHANGE = "lens.jobs"
TIMEOUT_S = 30


def drop_context(span, body, properties):
    """pika's publish hook: runs after the instrumentation injected; the headers go empty."""
    properties.headers.clear()


def consume_one_with_pika(channel, queue: str) -> bytes:
    got: list[bytes] = []

    def on_message(ch, method, properties, body):
        got.append(body)
        ch.basic_ack(method.delivery_tag)
        ch.stop_consuming()

    channel.basic_consume(queue, on_message)
    channel.connection.call_later(TIMEOUT_S, channel.stop_consuming)
    channel.start_consuming()
    if not got:
        raise TimeoutError(f"no message on {queue} in {TIMEOUT_S} s")
    return got[0]


async def consume_one_with_aio_pika(channel, queue_name: str) -> bytes:
    queue = await channel.get_queue(queue_name)
    received: asyncio.Future = asyncio.get_running_loop().create_future()

    async def on_message(message):
        async with message.process():
            if not received.done():
                received.set_result(message.body)

    await queue.consume(on_message)
    return await asyncio.wait_for(received, TIMEOUT_S)


async def main(url: str, otlp_protocol: str | None, otlp_endpoint: str | None, spans_path: str) -> int:
    handle, exporter = common.setup(SERVICE, otlp_protocol, otlp_endpoint)
    PikaInstrumentor().instrument(publish_hook=drop_context)
    AioPikaInstrumentor().instrument()

    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.exchange_declare(EXCHANGE, "direct")
    for key in ("healthy", "blind"):
        channel.queue_declare(f"{key}-q")
        channel.queue_bind(f"{key}-q", EXCHANGE, key)

    aio_connection = await aio_pika.connect(url)
    aio_channel = await aio_connection.channel()
    exchange = await aio_channel.get_exchange(EXCHANGE)

    # 1. healthy: aio-pika -> pika.
    await exchange.publish(aio_pika.Message(b"rollout job"), routing_key="healthy")
    consume_one_with_pika(channel, "healthy-q")

    # 2. a publisher that does not propagate: pika -> aio-pika.
    channel.basic_publish(EXCHANGE, "blind", b"rollout job", pika.BasicProperties(headers={}))
    await consume_one_with_aio_pika(aio_channel, "blind-q")

    await aio_connection.close()
    connection.close()
    common.write_spans(exporter, handle, spans_path)
    print(json.dumps({"done": True}), flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--otlp-protocol")
    parser.add_argument("--otlp-endpoint")
    parser.add_argument("--spans", required=True)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.url, args.otlp_protocol, args.otlp_endpoint, args.spans)))
