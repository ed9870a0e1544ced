"""Helpers shared by the interop scripts (run by `cargo xtask interop`, never imported by lens).

Telemetry is set up the way a NeMo Lens application sets it up: `nemo.lens.setup_telemetry` with
an enabled config, which installs the SDK TracerProvider and NeMo Lens's global propagator
(W3C TraceContext + W3C Baggage). Spans go to an in-memory exporter and are written as JSON.
"""

from __future__ import annotations

import json

from opentelemetry import baggage, trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from nemo.lens import NemoLensConfig, setup_telemetry


def setup(service_name: str, otlp_protocol: str | None = None, otlp_endpoint: str | None = None):
    """Enables NeMo Lens telemetry with an in-memory span exporter; returns (handle, exporter).

    With `otlp_protocol` (`grpc` or `http/protobuf`) and `otlp_endpoint`, every span also goes,
    as it ends, to that OTLP receiver (`lens watch`) through the SDK's own OTLP exporter.
    """
    exporter = InMemorySpanExporter()
    config = NemoLensConfig(
        enabled=True,
        service_name=service_name,
        metrics_enabled=False,
        exporter="console",
    )
    handle = setup_telemetry(config, span_exporter=exporter)
    if otlp_protocol:
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor

        if otlp_protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            otlp = OTLPSpanExporter(endpoint=otlp_endpoint, insecure=True)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            otlp = OTLPSpanExporter(endpoint=otlp_endpoint)
        trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(otlp))
    return handle, exporter


def setup_logs(service_name: str, otlp_protocol: str, otlp_endpoint: str):
    """Python `logging` through the OpenTelemetry SDK: a `LoggingHandler` on the logger returned
    (`lens-interop`), its records exported, as they are emitted, by the SDK's OTLP log exporter
    (`otlp_protocol`, as `setup`) to the receiver of `otlp_endpoint` (for HTTP, its `/v1/traces`
    becomes `/v1/logs`). A record emitted inside a span carries that span's trace and span id.
    """
    import logging

    from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    if otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        otlp = OTLPLogExporter(endpoint=otlp_endpoint, insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        endpoint = otlp_endpoint.removesuffix("/v1/traces").rstrip("/") + "/v1/logs"
        otlp = OTLPLogExporter(endpoint=endpoint)
    provider = LoggerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(otlp))
    logger = logging.getLogger("lens-interop")
    logger.setLevel(logging.INFO)
    logger.addHandler(LoggingHandler(level=logging.INFO, logger_provider=provider))
    return logger


def hex_trace_id(value: int) -> str:
    return f"{value:032x}"


def hex_span_id(value: int) -> str:
    return f"{value:016x}"


def span_json(span) -> dict:
    """One finished SDK span as JSON: ids, parent, kind, name, scope, attributes, status, end."""
    ctx = span.get_span_context()
    parent = span.parent
    return {
        "name": span.name,
        "kind": span.kind.name,
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
        "trace_id": hex_trace_id(ctx.trace_id),
        "span_id": hex_span_id(ctx.span_id),
        "trace_flags": int(ctx.trace_flags),
        "parent_span_id": hex_span_id(parent.span_id) if parent is not None else None,
        "parent_is_remote": bool(parent.is_remote) if parent is not None else None,
        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
        "status": span.status.status_code.name,
        "end_unix_nano": span.end_time,
    }


def _plain(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return [_plain(v) for v in value]


def write_spans(exporter: InMemorySpanExporter, handle, path: str) -> int:
    """Flushes the provider and writes every finished span to `path`; returns how many."""
    handle.shutdown()
    spans = [span_json(s) for s in exporter.get_finished_spans()]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spans, f, indent=1)
    return len(spans)


def describe(ctx=None) -> dict:
    """A Context (default: the current one) as the interop description the Rust side compares.

    `span`: null when the Context holds no valid span context, else its ids, flags, remote bit
    and tracestate (as header and entries); `baggage`: ordered [key, value] pairs.
    """
    sc = trace.get_current_span(ctx).get_span_context()
    span = None
    if sc.is_valid:
        span = {
            "trace_id": hex_trace_id(sc.trace_id),
            "span_id": hex_span_id(sc.span_id),
            "trace_flags": int(sc.trace_flags),
            "sampled": bool(sc.trace_flags.sampled),
            "is_remote": bool(sc.is_remote),
            "tracestate": sc.trace_state.to_header(),
        }
    pairs = [[k, str(v)] for k, v in baggage.get_all(ctx).items()]
    return {"span": span, "baggage": pairs}


def build_context(desc: dict):
    """The Context an interop description asks for: a span context (not a real span) and baggage.

    `desc`: {"span": null | {"trace_id", "span_id" (hex), "trace_flags" (int),
    "tracestate": [[k, v], ...]}, "baggage": [[k, v], ...]}.
    """
    from opentelemetry.context import Context

    ctx = Context()
    span = desc.get("span")
    if span is not None:
        sc = SpanContext(
            trace_id=int(span["trace_id"], 16),
            span_id=int(span["span_id"], 16),
            is_remote=False,
            trace_flags=TraceFlags(span["trace_flags"]),
            trace_state=TraceState([tuple(kv) for kv in span.get("tracestate", [])]),
        )
        ctx = trace.set_span_in_context(NonRecordingSpan(sc), ctx)
    for key, value in desc.get("baggage", []):
        ctx = baggage.set_baggage(key, value, ctx)
    return ctx
