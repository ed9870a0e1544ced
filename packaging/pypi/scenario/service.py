"""A FastAPI service set up as a NeMo Lens application sets one up, for the Python team's
scenario (packaging/pypi/scenario/run.py); not part of the wheel.

    python service.py [--downstream URL]

Telemetry comes from the environment, as in any NeMo Lens deployment: `NemoLensConfig.from_env()`
(NEMO_LENS_ENABLED=1, OTEL_SERVICE_NAME) and NeMo Lens's own OTLP exporter
(OTEL_EXPORTER_OTLP_ENDPOINT, gRPC by default). The app is instrumented with NeMo Lens's
`instrument_fastapi`, the aiohttp client with `instrument_aiohttp_client`.

Binds 127.0.0.1 on a free port and prints `LISTENING <port>`. `GET /work` answers
{"trace_id": <hex>} after, with --downstream, calling `GET {downstream}/work`. When standard input
closes, the server stops, NeMo Lens flushes its spans to the exporter, and `FLUSHED` is printed.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading

import aiohttp
import uvicorn
from fastapi import FastAPI
from opentelemetry import trace

from nemo.lens import NemoLensConfig, setup_telemetry
from nemo.lens.contrib.aiohttp import instrument_aiohttp_client
from nemo.lens.contrib.fastapi import instrument_fastapi


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--downstream")
    args = parser.parse_args()

    config = NemoLensConfig.from_env()
    if not config.enabled:
        print("NEMO_LENS_ENABLED is not set", file=sys.stderr)
        return 2
    handle = setup_telemetry(config)
    instrument_aiohttp_client()
    app = FastAPI()
    instrument_fastapi(app, service_name=config.service_name)

    @app.get("/work")
    async def work() -> dict:
        if args.downstream:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as session:
                async with session.get(f"{args.downstream}/work") as response:
                    response.raise_for_status()
        ctx = trace.get_current_span().get_span_context()
        return {"trace_id": f"{ctx.trace_id:032x}"}

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
    handle.shutdown()
    print("FLUSHED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
