// Sends two traces to an OTLP/HTTP JSON endpoint with the OpenTelemetry JS SDK's own exporter
// (@opentelemetry/exporter-trace-otlp-http), then prints what it sent as one JSON line.
//
//   node send.mjs http://127.0.0.1:4318/v1/traces
//
// Trace 1: `GET /checkout` (SERVER, attributes of every type) with a child `db.query` (CLIENT,
// an event, an error status). Trace 2: `async job` (CONSUMER), a new root linked to the first.
import { SpanKind, SpanStatusCode, context, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

const url = process.argv[2];
if (!url) {
  console.error("usage: node send.mjs OTLP_HTTP_TRACES_URL");
  process.exit(2);
}
const provider = new TracerProvider({
  resource: resourceFromAttributes({ "service.name": "js-frontend" }),
  spanProcessors: [new SimpleSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })],
});
const tracer = provider.getTracer("lens-otlp-js", "1.0.0");

const root = tracer.startSpan("GET /checkout", {
  kind: SpanKind.SERVER,
  attributes: {
    "http.request.method": "GET",
    "http.response.status_code": 200,
    ratio: 0.5,
    cached: false,
    tags: ["a", "b"],
  },
});
const child = tracer.startSpan(
  "db.query",
  { kind: SpanKind.CLIENT, attributes: { "db.system.name": "postgresql" } },
  trace.setSpan(context.active(), root),
);
child.addEvent("rows", { count: 3 });
child.setStatus({ code: SpanStatusCode.ERROR, message: "timeout" });
child.end();
root.end();
const job = tracer.startSpan("async job", {
  kind: SpanKind.CONSUMER,
  root: true,
  links: [{ context: root.spanContext() }],
});
job.end();

await provider.forceFlush();
await provider.shutdown();
console.log(
  JSON.stringify({
    trace_id: root.spanContext().traceId,
    root: root.spanContext().spanId,
    child: child.spanContext().spanId,
    job_trace_id: job.spanContext().traceId,
    job: job.spanContext().spanId,
  }),
);
