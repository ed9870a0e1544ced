//! The `zeromq` scenario: pyzmq + msgspec with NeMo Lens (`tests/interop/python/zmq_peer.py`)
//! and lens-zmq on libzmq, over tcp on 127.0.0.1, both ways: the context as a frame and as a
//! `trace_headers` field of a msgspec `array_like` struct; PUSH/PULL and DEALER/ROUTER
//! request-reply; sampled and unsampled; tracestate and baggage read back on the far side; the
//! msgpack bytes of the struct round-trip through the Rust struct byte for byte.

use std::path::Path;

use lens_core::carrier::CarrierField;
use lens_zmq::{Consumer, Producer};
use opentelemetry::trace::TraceContextExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::check::Checks;
use crate::describe::{Seen, Spec, seen};
use crate::error::{Error, Result};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::rows;
use crate::spans;

/// The Rust side of the Python peer's `EngineCoreRequest` (vLLM's shape): positional.
#[derive(Debug, Serialize, Deserialize)]
struct EngineCoreRequest {
    request_id: String,
    prompt_token_ids: Vec<u32>,
    arrival_time: f64,
    priority: i32,
    #[serde(default)]
    trace_headers: CarrierField,
}

// The gRPC scenario's: no space in a baggage value (Python writes it as `+`, which lens keeps
// on the way in: docs/propagation-rules.md#differences-from-nemo-lens, shown by `ray`).
use crate::grpc::{BAGGAGE, TRACESTATE};

/// The parent context of a case: its own trace id, sampled or not, with tracestate and baggage.
fn parent(n: u8, sampled: bool) -> Spec {
    Spec::span(
        &format!("{n:02x}f7651916cd43dd8448eb211c80319c"),
        "b7ad6b7169203331",
        u8::from(sampled),
    )
    .tracestate(TRACESTATE)
    .baggage(BAGGAGE)
}

fn trace_of(spec: &Spec) -> String {
    spec.span
        .as_ref()
        .map(|s| s.trace_id.clone())
        .unwrap_or_default()
}

struct Rust {
    producer: Producer,
    consumer: Consumer,
    ctx: zmq::Context,
    pull: zmq::Socket,
    pull_at: String,
    router: zmq::Socket,
    router_at: String,
}

fn bound(ctx: &zmq::Context, kind: zmq::SocketType) -> Result<(zmq::Socket, String)> {
    let socket = ctx.socket(kind).map_err(Error::zmq("socket"))?;
    socket
        .set_rcvtimeo(20_000)
        .map_err(Error::zmq("rcvtimeo"))?;
    socket.set_linger(1000).map_err(Error::zmq("linger"))?;
    socket
        .bind("tcp://127.0.0.1:*")
        .map_err(Error::zmq("bind"))?;
    let at = socket
        .get_last_endpoint()
        .map_err(Error::zmq("endpoint"))?
        .unwrap_or_default();
    Ok((socket, at))
}

fn connected(ctx: &zmq::Context, kind: zmq::SocketType, at: &str) -> Result<zmq::Socket> {
    let socket = ctx.socket(kind).map_err(Error::zmq("socket"))?;
    socket
        .set_rcvtimeo(20_000)
        .map_err(Error::zmq("rcvtimeo"))?;
    socket.set_linger(1000).map_err(Error::zmq("linger"))?;
    socket.connect(at).map_err(Error::zmq("connect"))?;
    Ok(socket)
}

/// The context a received message carried, by carrier, and its payload frames.
fn incoming(carrier: &str, mut frames: Vec<Vec<u8>>) -> Result<(CarrierField, Vec<Vec<u8>>)> {
    if carrier == "frame" {
        let field = lens_zmq::frame::take_context_frame(&mut frames, &lens_core::Limits::DEFAULT);
        return Ok((field, frames));
    }
    let last = frames.last().cloned().unwrap_or_default();
    let request: EngineCoreRequest =
        rmp_serde::from_slice(&last).map_err(Error::zmq("decoding EngineCoreRequest"))?;
    Ok((request.trace_headers, frames))
}

/// The frames of a message sent under `sending`, by carrier.
fn outgoing(
    carrier: &str,
    sending: &lens_zmq::Sending<'_>,
    payload: &[u8],
) -> Result<Vec<Vec<u8>>> {
    if carrier == "frame" {
        return Ok(vec![payload.to_vec(), sending.context_frame()]);
    }
    let request = EngineCoreRequest {
        request_id: "rs-1".into(),
        prompt_token_ids: vec![1, 2, 3],
        arrival_time: 0.5,
        priority: 0,
        trace_headers: sending.carrier_field(),
    };
    Ok(vec![
        rmp_serde::to_vec(&request).map_err(Error::zmq("encoding"))?,
    ])
}

fn value<T: for<'de> Deserialize<'de>>(answer: &Value, key: &str) -> Result<T> {
    serde_json::from_value(answer[key].clone()).map_err(Error::json(format!("answer's {key}")))
}

/// Checks a context seen on the far side against the parent the case started from. Baggage
/// that Python injected on the way has its spaces as `+` (Python's `quote_plus`), which lens
/// keeps (docs/propagation-rules.md#differences-from-nemo-lens).
fn check_seen(
    checks: &mut Checks,
    label: &str,
    got: &Seen,
    spec: &Spec,
    parent_span: Option<&str>,
    via_python: bool,
) {
    let span = got.span.as_ref();
    checks.eq(
        &format!("{label}: trace id"),
        &span.map(|s| s.trace_id.clone()),
        &Some(trace_of(spec)),
    );
    checks.eq(
        &format!("{label}: sampled flag"),
        &span.map(|s| s.sampled),
        &spec.span.as_ref().map(|s| s.trace_flags & 1 == 1),
    );
    checks.eq(
        &format!("{label}: tracestate"),
        &span.map(|s| s.tracestate.clone()),
        &Some(spec.tracestate_header()),
    );
    let mut baggage = spec.baggage.clone();
    if via_python {
        for (_, v) in &mut baggage {
            *v = v.replace(' ', "+");
        }
        checks.row(rows::PLUS_INCOMING);
    }
    checks.eq(&format!("{label}: baggage"), &got.baggage, &baggage);
    if let Some(parent) = parent_span {
        checks.eq(
            &format!("{label}: parent span"),
            &span.map(|s| s.span_id.clone()),
            &Some(parent.to_owned()),
        );
    }
}

pub(crate) fn run(python: &Path, scripts: &Path, out: &Path, checks: &mut Checks) -> Result<()> {
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();
    let ctx = zmq::Context::new();
    let (pull, pull_at) = bound(&ctx, zmq::PULL)?;
    let (router, router_at) = bound(&ctx, zmq::ROUTER)?;
    let rust = Rust {
        producer: Producer::new().with_tracer(tracer.clone()),
        consumer: Consumer::new().with_tracer(tracer),
        ctx,
        pull,
        pull_at,
        router,
        router_at,
    };
    let mut peer = PythonProcess::spawn(
        python,
        &scripts.join("zmq_peer.py"),
        std::iter::empty::<&str>(),
    )?;
    let start: Value = serde_json::from_str(&peer.read_line(START_TIMEOUT)?)
        .map_err(Error::json("zmq_peer.py start line"))?;
    let (py_pull, py_router) = (
        start["pull"].as_str().unwrap_or_default().to_owned(),
        start["router"].as_str().unwrap_or_default().to_owned(),
    );

    let mut n = 0x10;
    for carrier in ["frame", "field"] {
        for sampled in [true, false] {
            n += 1;
            let label = format!("python->rust push/pull {carrier} sampled={sampled}");
            if let Err(e) = python_push(
                &mut peer,
                &rust,
                checks,
                &label,
                carrier,
                &parent(n, sampled),
                &exporter,
            ) {
                checks.fail(&label, e);
            }
            n += 1;
            let label = format!("python->rust dealer/router {carrier} sampled={sampled}");
            if let Err(e) = python_dealer(
                &mut peer,
                &rust,
                checks,
                &label,
                carrier,
                &parent(n, sampled),
                &exporter,
            ) {
                checks.fail(&label, e);
            }
            n += 1;
            let label = format!("rust->python push/pull {carrier} sampled={sampled}");
            if let Err(e) = rust_push(
                &mut peer,
                &rust,
                checks,
                &label,
                carrier,
                &parent(n, sampled),
                &py_pull,
            ) {
                checks.fail(&label, e);
            }
            n += 1;
            let label = format!("rust->python dealer/router {carrier} sampled={sampled}");
            if let Err(e) = rust_dealer(
                &mut peer,
                &rust,
                checks,
                &label,
                carrier,
                &parent(n, sampled),
                &py_router,
                &exporter,
            ) {
                checks.fail(&label, e);
            }
        }
    }
    if let Err(e) = byte_for_byte(&mut peer, &rust, checks) {
        checks.fail("msgspec array_like struct byte for byte", e);
    }

    let spans_path = out.join("python-spans.json");
    let answer = peer.request(&json!({"op": "finish", "spans": spans_path}))?;
    peer.finish()?;
    let python_spans = spans::read_python(&spans_path)?;
    checks.eq(
        "python reports the spans it wrote",
        &answer["spans"].as_u64(),
        &u64::try_from(python_spans.len()).ok(),
    );
    let _ignored = provider.force_flush();
    spans::take_rust(&exporter, &out.join("rust-spans.json"))?;
    Ok(())
}

/// The last finished Rust span named `name`: (its span id, its parent span id).
fn last_rust_span(
    exporter: &opentelemetry_sdk::trace::InMemorySpanExporter,
    name: &str,
) -> Option<(String, String)> {
    let spans = exporter.get_finished_spans().ok()?;
    spans.iter().rev().find(|s| s.name == name).map(|s| {
        (
            s.span_context.span_id().to_string(),
            s.parent_span_id.to_string(),
        )
    })
}

/// Python PUSH (NeMo Lens) -> Rust PULL (lens-zmq).
fn python_push(
    peer: &mut PythonProcess,
    rust: &Rust,
    checks: &mut Checks,
    label: &str,
    carrier: &str,
    spec: &Spec,
    exporter: &opentelemetry_sdk::trace::InMemorySpanExporter,
) -> Result<()> {
    let answer = peer.request(
        &json!({"op": "send", "socket": "push", "endpoint": rust.pull_at,
        "carrier": carrier, "parent": spec, "destination": "py.jobs"}),
    )?;
    let producer: Seen = value(&answer, "producer")?;
    let frames = rust.pull.recv_multipart(0).map_err(Error::zmq("recv"))?;
    let (field, payload) = incoming(carrier, frames)?;
    if carrier == "frame" {
        checks.eq(
            &format!("{label}: payload as sent"),
            &payload,
            &vec![b"payload".to_vec()],
        );
    }
    let processing = rust.consumer.process_field("py.jobs", &field, None);
    let extracted = {
        let cx = processing.context();
        let sc = cx.span().span_context().clone();
        (sc, seen(&cx))
    };
    processing.end();
    let producer_span = producer.span.as_ref().map(|s| s.span_id.clone());
    // The process span's own ids; its parent is checked through the exporter below.
    check_seen(checks, label, &extracted.1, spec, None, true);
    if spec.span.as_ref().is_some_and(|s| s.trace_flags & 1 == 1) {
        let recorded = last_rust_span(exporter, "process py.jobs");
        checks.eq(
            &format!("{label}: rust process span's parent is python's send span"),
            &recorded.map(|(_, parent)| parent),
            &producer_span,
        );
    } else {
        checks.check(
            &format!("{label}: unsampled stays unsampled"),
            !extracted.0.is_sampled(),
            || "sampled".into(),
        );
    }
    Ok(())
}

/// Python DEALER -> Rust ROUTER, the reply back in the same trace.
fn python_dealer(
    peer: &mut PythonProcess,
    rust: &Rust,
    checks: &mut Checks,
    label: &str,
    carrier: &str,
    spec: &Spec,
    exporter: &opentelemetry_sdk::trace::InMemorySpanExporter,
) -> Result<()> {
    let answer = peer.request(
        &json!({"op": "send", "socket": "dealer", "endpoint": rust.router_at,
        "carrier": carrier, "parent": spec, "destination": "py.engine"}),
    )?;
    let producer: Seen = value(&answer, "producer")?;
    let mut frames = rust.router.recv_multipart(0).map_err(Error::zmq("recv"))?;
    let identity = frames.remove(0);
    let (field, _) = incoming(carrier, frames)?;
    let processing = rust.consumer.process_field("py.engine", &field, None);
    let reply_cx = processing.in_scope(|| -> Result<opentelemetry::Context> {
        let sending = rust.producer.start_send("py.engine.replies", None);
        let mut reply = vec![identity];
        reply.extend(outgoing(carrier, &sending, b"reply")?);
        rust.router
            .send_multipart(reply, 0)
            .map_err(Error::zmq("send reply"))?;
        let cx = sending.context().clone();
        sending.end();
        Ok(cx)
    })?;
    let process_cx = processing.context();
    processing.end();
    check_seen(
        checks,
        &format!("{label}: rust process"),
        &seen(&process_cx),
        spec,
        None,
        true,
    );
    let answer = peer
        .request(&json!({"op": "reply", "carrier": carrier, "destination": "py.engine.replies"}))?;
    let extracted: Seen = value(&answer, "extracted")?;
    let reply_span = reply_cx.span().span_context().span_id().to_string();
    check_seen(
        checks,
        &format!("{label}: python reads the reply"),
        &extracted,
        spec,
        Some(&reply_span),
        true,
    );
    if spec.span.as_ref().is_some_and(|s| s.trace_flags & 1 == 1) {
        let send = last_rust_span(exporter, "send py.engine.replies");
        let process = last_rust_span(exporter, "process py.engine");
        checks.eq(
            &format!("{label}: rust reply's send span is the child of its process span"),
            &send.map(|(_, parent)| parent),
            &process.clone().map(|(id, _)| id),
        );
        checks.eq(
            &format!("{label}: rust process span's parent is python's send span"),
            &process.map(|(_, parent)| parent),
            &producer.span.map(|s| s.span_id),
        );
    }
    Ok(())
}

/// Rust PUSH (lens-zmq) -> Python PULL (NeMo Lens).
fn rust_push(
    peer: &mut PythonProcess,
    rust: &Rust,
    checks: &mut Checks,
    label: &str,
    carrier: &str,
    spec: &Spec,
    py_pull: &str,
) -> Result<()> {
    let push = connected(&rust.ctx, zmq::PUSH, py_pull)?;
    let cx = spec.build()?;
    let sent_span = {
        let _guard = cx.attach();
        let sending = rust.producer.start_send("rs.jobs", None);
        let frames = outgoing(carrier, &sending, b"payload")?;
        push.send_multipart(frames, 0).map_err(Error::zmq("send"))?;
        let id = sending.context().span().span_context().span_id();
        sending.end();
        id
    };
    let answer = peer.request(
        &json!({"op": "recv", "socket": "pull", "carrier": carrier, "destination": "rs.jobs"}),
    )?;
    let extracted: Seen = value(&answer, "extracted")?;
    // Sampled or not, the message carries the id of lens's `send` span (a non-recording one
    // under an unsampled parent).
    check_seen(
        checks,
        &format!("{label}: python extract_context"),
        &extracted,
        spec,
        Some(&sent_span.to_string()),
        false,
    );
    if carrier == "frame" {
        checks.eq(
            &format!("{label}: python payload as sent"),
            &answer["payload_hex"],
            &json!(["7061796c6f6164"]),
        );
    }
    Ok(())
}

/// Rust DEALER (lens-zmq) -> Python ROUTER (NeMo Lens), the reply back into a Rust process span.
#[allow(clippy::too_many_arguments)]
fn rust_dealer(
    peer: &mut PythonProcess,
    rust: &Rust,
    checks: &mut Checks,
    label: &str,
    carrier: &str,
    spec: &Spec,
    py_router: &str,
    exporter: &opentelemetry_sdk::trace::InMemorySpanExporter,
) -> Result<()> {
    let dealer = connected(&rust.ctx, zmq::DEALER, py_router)?;
    let cx = spec.build()?;
    {
        let _guard = cx.attach();
        let sending = rust.producer.start_send("rs.engine", None);
        let frames = outgoing(carrier, &sending, b"request")?;
        dealer
            .send_multipart(frames, 0)
            .map_err(Error::zmq("send"))?;
        sending.end();
    }
    let answer = peer.request(
        &json!({"op": "recv", "socket": "router", "carrier": carrier, "destination": "rs.engine"}),
    )?;
    let extracted: Seen = value(&answer, "extracted")?;
    check_seen(
        checks,
        &format!("{label}: python extract_context"),
        &extracted,
        spec,
        None,
        false,
    );
    let reply_producer: Seen = value(&answer, "reply_producer")?;
    let frames = dealer.recv_multipart(0).map_err(Error::zmq("recv reply"))?;
    let (field, _) = incoming(carrier, frames)?;
    let processing = rust
        .consumer
        .process_field("rs.engine.replies", &field, None);
    let got = seen(&processing.context());
    processing.end();
    let python_reply = reply_producer.span.as_ref().map(|s| s.span_id.as_str());
    check_seen(
        checks,
        &format!("{label}: rust reads the reply"),
        &got,
        spec,
        None,
        true,
    );
    if spec.span.as_ref().is_some_and(|s| s.trace_flags & 1 == 1) {
        let process = last_rust_span(exporter, "process rs.engine.replies");
        checks.eq(
            &format!("{label}: rust reply process span's parent is python's reply send span"),
            &process.map(|(_, parent)| parent),
            &python_reply.map(str::to_owned),
        );
    }
    Ok(())
}

/// msgspec's bytes of the struct through the Rust struct and back, and the reverse.
fn byte_for_byte(peer: &mut PythonProcess, rust: &Rust, checks: &mut Checks) -> Result<()> {
    let spec = parent(0x40, true);
    let answer = peer.request(&json!({"op": "encode", "parent": spec}))?;
    let python_hex = answer["hex"].as_str().unwrap_or_default().to_owned();
    let bytes = hex_decode(&python_hex);
    let request: EngineCoreRequest =
        rmp_serde::from_slice(&bytes).map_err(Error::zmq("decoding msgspec's bytes"))?;
    checks.check(
        "msgspec -> rust: trace_headers read",
        request
            .trace_headers
            .carrier()
            .is_some_and(|c| c.get("traceparent").is_some()),
        || format!("{:?}", request.trace_headers),
    );
    let again = rmp_serde::to_vec(&request).map_err(Error::zmq("encoding"))?;
    checks.eq(
        "msgspec -> rust -> bytes: identical",
        &hex_encode(&again),
        &python_hex,
    );

    let cx = spec.build()?;
    let rust_bytes = {
        let _guard = cx.attach();
        let sending = rust.producer.start_send("rs.bytes", None);
        outgoing("field", &sending, b"")?.remove(0)
    };
    let answer = peer.request(&json!({"op": "reencode", "hex": hex_encode(&rust_bytes)}))?;
    checks.eq(
        "rust -> msgspec -> bytes: identical",
        &answer["hex"].as_str().unwrap_or_default().to_owned(),
        &hex_encode(&rust_bytes),
    );
    checks.check(
        "rust -> msgspec: trace_headers holds traceparent, tracestate, baggage",
        ["traceparent", "tracestate", "baggage"]
            .iter()
            .all(|k| answer["trace_headers"].get(k).is_some()),
        || answer["trace_headers"].to_string(),
    );
    Ok(())
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_decode(text: &str) -> Vec<u8> {
    (0..text.len() / 2)
        .filter_map(|i| u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}
