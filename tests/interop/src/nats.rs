//! Scenario `nats`, both directions, over a real `nats-server` the scenario starts (127.0.0.1, a
//! port the server picks, JetStream in a temporary store: lens-testkit's `nats` module), against
//! `tests/interop/python/nats_peer.py` (nats-py with NeMo Lens's `inject_context` /
//! `extract_context` on the message headers, as the NeMo Lens page tells users to):
//!
//! * Python to Rust: a Python PRODUCER span, `inject_context(headers)`, then
//!   `nc.publish(subject, payload, headers=headers)` (or `nc.request`, or JetStream's
//!   `js.publish`) into lens-nats's `Consumer`: a core subscriber, a responder whose reply is
//!   published through a `TracedClient` inside the `process` span, and a JetStream pull
//!   consumer taken one by one and acked.
//! * Rust to Python: lens-nats's `TracedClient` (publish, request) and `TracedJetStream` into
//!   Python handlers that run `extract_context(msg.headers)` + `attach` + a CONSUMER span (the
//!   responder's reply under a PRODUCER span of its own, injected).
//!
//! Each message is its own trace, started from a parent context with a known trace id; sampled
//! and unsampled, with tracestate and baggage. The checks read what each handler saw (trace,
//! flags, tracestate, baggage), the headers that arrived, and the spans both sides exported: one
//! trace, the CONSUMER span the child of the PRODUCER span across the language boundary, the
//! kinds and messaging attributes (JetStream: the same stream sequence on both sides); for an
//! unsampled trace, that neither side exported a span of it.
//!
//! Then, from Python: three JetStream messages pulled by lens-nats as one batch
//! (`Consumer::receive`: a `receive` span linked to every PRODUCER span, each `process` span the
//! child of its PRODUCER span), and one core message into a consumer that asks for links only
//! (`ConsumerParent::Links`: a new trace, `lens.trace.new_root` = `linked`, a link to the
//! PRODUCER span, the baggage kept).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use lens_core::W3cPropagator;
use lens_nats::ConsumerParent;
use lens_testkit::nats::NatsServer;
use opentelemetry::Context;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{TraceContextExt, Tracer};
use serde::Deserialize;
use serde_json::json;

use crate::check::Checks;
use crate::describe::{Seen, Spec, seen};
use crate::error::{Error, Result};
use crate::grpc::{BAGGAGE, TRACESTATE};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, Side, SpanRecord};

/// How long the Rust side waits for a message the Python side sent.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(30);

/// Who publishes to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    PythonToRust,
    RustToPython,
}

/// How the message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Core publish to a subscriber.
    Core,
    /// A request, answered by the other side inside its `process` span.
    Request,
    /// A JetStream publish (up to the ack), pulled by a durable consumer and acked.
    JetStream,
}

struct Case {
    name: &'static str,
    direction: Direction,
    mode: Mode,
    /// The first byte of the trace id, in hex: the case's own trace.
    id: &'static str,
    parent: Spec,
    /// The Rust publisher starts a span of its own under `parent` (else `parent` is the parent).
    caller_span: bool,
}

impl Case {
    /// `rs.*` subjects are consumed by the Rust side, `py.*` by the Python side.
    fn subject(&self) -> String {
        let side = match self.direction {
            Direction::PythonToRust => "rs",
            Direction::RustToPython => "py",
        };
        match self.mode {
            Mode::Core => format!("{side}.core.{}", self.id),
            Mode::Request => format!("{side}.svc"),
            Mode::JetStream => format!("{side}.js.{}", self.id),
        }
    }

    fn trace_id(&self) -> &str {
        self.parent
            .span
            .as_ref()
            .map_or("", |s| s.trace_id.as_str())
    }

    fn flags(&self) -> u8 {
        self.parent.span.as_ref().map_or(0, |s| s.trace_flags)
    }

    fn sampled(&self) -> bool {
        self.flags() & 1 == 1
    }

    fn label(&self, what: &str) -> String {
        let d = match self.direction {
            Direction::PythonToRust => "python->rust",
            Direction::RustToPython => "rust->python",
        };
        format!("{d} [{}] {what}", self.name)
    }

    fn sides(&self) -> (Side, Side) {
        match self.direction {
            Direction::PythonToRust => (Side::Python, Side::Rust),
            Direction::RustToPython => (Side::Rust, Side::Python),
        }
    }
}

fn cases() -> Vec<Case> {
    let trace = |t: &str| format!("{t}f7651916cd43dd8448eb211c80319c");
    let parent = |t: &str, flags: u8| Spec::span(&trace(t), "b7ad6b7169203331", flags);
    let mut out = Vec::new();
    for direction in [Direction::PythonToRust, Direction::RustToPython] {
        let ids: [&'static str; 5] = match direction {
            Direction::PythonToRust => ["3a", "3b", "3c", "3d", "3e"],
            Direction::RustToPython => ["4a", "4b", "4c", "4d", "4e"],
        };
        let rust_caller = direction == Direction::RustToPython;
        let case = |name, mode, id: &'static str, parent: Spec, caller_span| Case {
            name,
            direction,
            mode,
            id,
            parent,
            caller_span,
        };
        out.extend([
            case(
                "core publish, sampled, tracestate, baggage",
                Mode::Core,
                ids[0],
                parent(ids[0], 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                rust_caller,
            ),
            case(
                "core publish, unsampled, baggage",
                Mode::Core,
                ids[1],
                parent(ids[1], 0x00).baggage(BAGGAGE),
                false,
            ),
            case(
                "request/reply, sampled, tracestate, baggage",
                Mode::Request,
                ids[2],
                parent(ids[2], 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                rust_caller,
            ),
            case(
                "JetStream, sampled, tracestate, baggage",
                Mode::JetStream,
                ids[3],
                parent(ids[3], 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                false,
            ),
            case(
                "JetStream, unsampled, baggage",
                Mode::JetStream,
                ids[4],
                parent(ids[4], 0x00).baggage(&[("job", "rl rollout")]),
                rust_caller,
            ),
        ]);
    }
    out
}

/// What a consumer's handler saw of one message (the Python peer answers in the same JSON).
#[derive(Clone, Debug, Default, Deserialize)]
struct Handled {
    /// The Context current in the handler (inside its `process` span).
    consumer: Seen,
    /// `traceparent`, `tracestate`, `baggage` as they arrived.
    headers: BTreeMap<String, String>,
    subject: String,
    /// JetStream: the message's stream sequence.
    sequence: Option<u64>,
}

/// The W3C headers of a NATS message.
fn w3c_headers(message: &async_nats::Message) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(headers) = &message.headers {
        for name in ["traceparent", "tracestate", "baggage"] {
            if let Some(value) = headers.get(name) {
                out.insert(name.to_owned(), value.as_str().to_owned());
            }
        }
    }
    out
}

impl Handled {
    fn rust(message: &async_nats::Message, consumer: Seen, sequence: Option<u64>) -> Self {
        Handled {
            consumer,
            headers: w3c_headers(message),
            subject: message.subject.to_string(),
            sequence,
        }
    }
}

/// What the Python publisher reports (`nats_peer.py`'s `publish`).
#[derive(Debug, Default, Deserialize)]
struct Published {
    /// The Context inside its PRODUCER span.
    producer: Option<Seen>,
    /// What `inject_context` wrote.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    reply: Option<PythonReply>,
    sequence: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct PythonReply {
    payload: serde_json::Value,
    headers: BTreeMap<String, String>,
}

/// What one case showed, besides the spans.
#[derive(Debug, Default)]
struct Observed {
    /// The publisher side: the Python producer's own report (Python publishers only).
    published: Published,
    /// The Rust publisher's own span (when the case has one).
    caller: Option<String>,
    handled: Handled,
    /// Request/reply: what the reply said the responder saw, and the reply's headers.
    reply: Option<(Seen, BTreeMap<String, String>)>,
}

/// The Rust side: lens-nats over one client.
struct Rust {
    client: async_nats::Client,
    producer: lens_nats::TracedClient,
    jetstream: lens_nats::TracedJetStream,
    core: lens_nats::TracedSubscriber,
    pulled: lens_nats::TracedMessages,
    /// `rs.linked.>`: a consumer that asks for links only (`ConsumerParent::Links`).
    linked: lens_nats::TracedSubscriber,
    /// The lens consumer, for a pulled batch (`Consumer::receive`).
    consumer: lens_nats::Consumer,
    /// The pull consumer `rs-batch` on the stream `RSBATCH` (`rs.batch.>`).
    batch: consumer::PullConsumer,
    /// What the responder task's handler saw of each request, in order.
    requests: tokio::sync::mpsc::UnboundedReceiver<Result<Handled, String>>,
    responder: tokio::task::JoinHandle<()>,
}

pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
    checks: &mut Checks,
) -> Result<()> {
    let server = NatsServer::try_start().map_err(Error::nats("starting nats-server"))?;
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();
    let mut rust = start_rust(&server, &tracer).await?;

    let mut peer = PythonProcess::spawn(python, &scripts.join("nats_peer.py"), [server.url()])?;
    tokio::task::block_in_place(|| peer.read_tagged("READY", START_TIMEOUT))?;

    let cases = cases();
    let mut observed = Vec::new();
    for case in &cases {
        let seen = match case.direction {
            Direction::PythonToRust => python_to_rust(&mut peer, &mut rust, case).await,
            Direction::RustToPython => rust_to_python(&mut peer, &rust, &tracer, case).await,
        };
        match seen {
            Ok(seen) => observed.push(Some(seen)),
            Err(e) => {
                checks.fail(&case.label("message could not go"), e);
                observed.push(None);
            }
        }
    }

    let batch = python_batch_to_rust(&mut peer, &rust).await;
    let linked = python_to_rust_linked(&mut peer, &mut rust).await;

    let spans_path = out.join("python-spans.json");
    let mut all = tokio::task::block_in_place(|| -> Result<Vec<SpanRecord>> {
        let answer = peer.request(&json!({"op": "finish", "spans": spans_path}))?;
        peer.finish()?;
        let spans = spans::read_python(&spans_path)?;
        checks.eq(
            "python reports the spans it wrote",
            &answer["spans"].as_u64(),
            &u64::try_from(spans.len()).ok(),
        );
        Ok(spans)
    })?;
    rust.responder.abort();
    drop(rust.client);
    let _ignored = provider.force_flush();
    all.extend(spans::take_rust(&exporter, &out.join("rust-spans.json"))?);

    for (case, seen) in cases.iter().zip(&observed) {
        if let Some(seen) = seen {
            check_context(checks, case, seen);
            check_spans(checks, case, seen, &all, server.port());
        }
    }
    match batch {
        Ok(batch) => check_batch(checks, &batch, &all),
        Err(e) => checks.fail(&batch_label("the batch could not go"), e),
    }
    match linked {
        Ok(linked) => check_linked(checks, &linked, &all),
        Err(e) => checks.fail(&linked_label("the message could not go"), e),
    }
    Ok(())
}

/// Streams `PYJOBS` (`py.js.>`) and `RSJOBS` (`rs.js.>`), lens-nats's wrappers on the Rust
/// side (its consumer reading Python's `+` for a space in baggage, as the gRPC server does), the
/// responder task on `rs.svc`; flushed, so that the server knows every subscription.
async fn start_rust(
    server: &NatsServer,
    tracer: &opentelemetry_sdk::trace::SdkTracer,
) -> Result<Rust> {
    let client = async_nats::connect(server.url())
        .await
        .map_err(Error::nats("connecting to nats-server"))?;
    let js = jetstream::new(client.clone());
    let mut streams = Vec::new();
    for (name, subjects) in [
        ("PYJOBS", "py.js.>"),
        ("RSJOBS", "rs.js.>"),
        ("RSBATCH", "rs.batch.>"),
    ] {
        let stream = js
            .create_stream(stream::Config {
                name: name.into(),
                subjects: vec![subjects.into()],
                ..Default::default()
            })
            .await
            .map_err(Error::nats(format!("creating stream {name}")))?;
        streams.push(stream);
    }
    let pull = streams[1]
        .create_consumer(consumer::pull::Config {
            durable_name: Some("rs-worker".into()),
            ..Default::default()
        })
        .await
        .map_err(Error::nats("creating consumer rs-worker"))?;
    let batch = streams[2]
        .create_consumer(consumer::pull::Config {
            durable_name: Some("rs-batch".into()),
            ..Default::default()
        })
        .await
        .map_err(Error::nats("creating consumer rs-batch"))?;

    let consumer = lens_nats::Consumer::new()
        .with_tracer(tracer.clone())
        .with_propagator(W3cPropagator::new().with_plus_as_space(true));
    let producer = || lens_nats::Producer::new().with_tracer(tracer.clone());
    let subscribe = |subject: &'static str| {
        let client = client.clone();
        async move {
            client
                .subscribe(subject)
                .await
                .map_err(Error::nats(format!("subscribing to {subject}")))
        }
    };
    let core = consumer.subscriber(&client, subscribe("rs.core.>").await?);
    let linked = lens_nats::Consumer::new()
        .with_tracer(tracer.clone())
        .with_propagator(W3cPropagator::new().with_plus_as_space(true))
        .with_consumer_parent(ConsumerParent::Links)
        .subscriber(&client, subscribe("rs.linked.>").await?);
    let mut requests = consumer.subscriber(&client, subscribe("rs.svc").await?);
    let pulled = consumer.messages(
        &client,
        pull.messages()
            .await
            .map_err(Error::nats("pulling from rs-worker"))?,
    );
    let responder_client = producer().client(client.clone());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let responder = tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            let consumer = request.in_span(async { seen(&Context::current()) }).await;
            let handled = Handled::rust(&request, consumer.clone(), None);
            // The reply says what the handler saw, published inside the `process` span.
            let answer = match request.reply.clone() {
                Some(reply) => {
                    let body = json!({"rust_consumer": consumer}).to_string();
                    request
                        .in_span(responder_client.publish(reply, body.into()))
                        .await
                        .map(|()| handled)
                        .map_err(|e| format!("publishing the reply: {e}"))
                }
                None => Err("the request has no reply subject".to_owned()),
            };
            drop(request);
            if tx.send(answer).is_err() {
                break;
            }
        }
    });
    client
        .flush()
        .await
        .map_err(Error::nats("flushing the subscriptions"))?;
    Ok(Rust {
        producer: producer().client(client.clone()),
        jetstream: producer().jetstream(js),
        client,
        core,
        pulled,
        linked,
        consumer,
        batch,
        requests: rx,
        responder,
    })
}

/// The Python peer publishes; a lens-nats consumer handles the message.
async fn python_to_rust(
    peer: &mut PythonProcess,
    rust: &mut Rust,
    case: &Case,
) -> Result<Observed> {
    let mode = match case.mode {
        Mode::Core => "core",
        Mode::Request => "request",
        Mode::JetStream => "jetstream",
    };
    let answer = tokio::task::block_in_place(|| {
        peer.request(&json!({
            "op": "publish",
            "mode": mode,
            "subject": case.subject(),
            "parent": case.parent,
            "payload": case.name,
        }))
    })?;
    let published: Published =
        serde_json::from_value(answer).map_err(Error::json("nats_peer publish answer"))?;
    let timeout = |what: &str| Error::Timeout {
        what: format!("the rust consumer: {what}"),
        after: RECEIVE_TIMEOUT,
    };
    let mut reply = None;
    let handled = match case.mode {
        Mode::Core => {
            let message = tokio::time::timeout(RECEIVE_TIMEOUT, rust.core.next())
                .await
                .map_err(|_| timeout("core message"))?
                .ok_or_else(|| timeout("core subscription ended"))?;
            let consumer = message.in_span(async { seen(&Context::current()) }).await;
            Handled::rust(&message, consumer, None)
        }
        Mode::Request => {
            let handled = tokio::time::timeout(RECEIVE_TIMEOUT, rust.requests.recv())
                .await
                .map_err(|_| timeout("request"))?
                .ok_or_else(|| timeout("responder ended"))?
                .map_err(|message| Error::Nats {
                    what: "the rust responder".into(),
                    message,
                })?;
            if let Some(r) = &published.reply {
                let said: Option<Seen> =
                    serde_json::from_value(r.payload["rust_consumer"].clone()).ok();
                reply = said.map(|s| (s, r.headers.clone()));
            }
            handled
        }
        Mode::JetStream => {
            let message = tokio::time::timeout(RECEIVE_TIMEOUT, rust.pulled.next())
                .await
                .map_err(|_| timeout("JetStream message"))?
                .ok_or_else(|| timeout("pull stream ended"))?
                .map_err(Error::nats("pulling a JetStream message"))?;
            let (consumer, acked) = message
                .in_span(async { (seen(&Context::current()), message.ack().await) })
                .await;
            acked.map_err(Error::nats("acking"))?;
            let sequence = message.info().ok().map(|i| i.stream_sequence);
            Handled::rust(&message.message, consumer, sequence)
        }
    };
    Ok(Observed {
        published,
        caller: None,
        handled,
        reply,
    })
}

/// A lens-nats producer publishes; the Python peer's handler handles the message.
async fn rust_to_python(
    peer: &mut PythonProcess,
    rust: &Rust,
    tracer: &opentelemetry_sdk::trace::SdkTracer,
    case: &Case,
) -> Result<Observed> {
    let mut cx = case.parent.build()?;
    if case.caller_span {
        let span = tracer.start_with_context("rust.caller", &cx);
        cx = cx.with_span(span);
    }
    let subject = case.subject();
    let payload = bytes::Bytes::from_static(case.name.as_bytes());
    let mut published = Published::default();
    let mut reply = None;
    match case.mode {
        Mode::Core => {
            rust.producer
                .publish(subject, payload)
                .with_context(cx.clone())
                .await
                .map_err(Error::nats("publishing"))?;
        }
        Mode::Request => {
            let answer = rust
                .producer
                .request(subject, payload)
                .with_context(cx.clone())
                .await
                .map_err(Error::nats("requesting"))?;
            let body: serde_json::Value =
                serde_json::from_slice(&answer.payload).map_err(Error::json("the python reply"))?;
            let said: Option<Seen> = serde_json::from_value(body["python_consumer"].clone()).ok();
            reply = said.map(|s| (s, w3c_headers(&answer)));
        }
        Mode::JetStream => {
            let ack = rust
                .jetstream
                .publish(subject, payload)
                .with_context(cx.clone())
                .await
                .map_err(Error::nats("publishing to JetStream"))?
                .await
                .map_err(Error::nats("the JetStream ack"))?;
            published.sequence = Some(ack.sequence);
        }
    }
    let caller = case
        .caller_span
        .then(|| cx.span().span_context().span_id().to_string());
    cx.span().end();
    let request = match case.mode {
        Mode::Core => json!({"op": "next", "queue": "core"}),
        Mode::Request => json!({"op": "next", "queue": "svc"}),
        Mode::JetStream => json!({"op": "fetch"}),
    };
    let answer = tokio::task::block_in_place(|| peer.request(&request))?;
    let handled: Handled =
        serde_json::from_value(answer).map_err(Error::json("nats_peer handler answer"))?;
    Ok(Observed {
        published,
        caller,
        handled,
        reply,
    })
}

/// `00-<trace>-<span>-<flags>` split in three.
fn traceparent(value: Option<&String>) -> Option<(String, String, String)> {
    let mut parts = value?.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (version == "00" && parts.next().is_none())
        .then(|| (trace.to_owned(), span.to_owned(), flags.to_owned()))
}

/// What the handler saw and what arrived in the headers.
fn check_context(checks: &mut Checks, case: &Case, observed: &Observed) {
    let label = |what: &str| case.label(what);
    let handled = &observed.handled;
    checks.eq(
        &label("handled on its subject"),
        &handled.subject,
        &case.subject(),
    );
    let span = handled.consumer.span.as_ref();
    checks.eq(
        &label("handler: trace id, flags, tracestate of the producer's context"),
        &span.map(|s| (s.trace_id.as_str(), s.trace_flags, s.tracestate.as_str())),
        &Some((
            case.trace_id(),
            case.flags(),
            case.parent.tracestate_header().as_str(),
        )),
    );
    checks.eq(
        &label("handler: baggage as the producer set it"),
        &handled.consumer.baggage,
        &case.parent.baggage,
    );
    let arrived = traceparent(handled.headers.get("traceparent"));
    checks.eq(
        &label("traceparent header: the trace id and flags"),
        &arrived.as_ref().map(|(t, _, f)| (t.as_str(), f.as_str())),
        &Some((case.trace_id(), format!("{:02x}", case.flags()).as_str())),
    );
    checks.eq(
        &label("tracestate header"),
        &handled.headers.get("tracestate").map(String::as_str),
        &(!case.parent.tracestate_header().is_empty())
            .then(|| case.parent.tracestate_header())
            .as_deref(),
    );
    checks.check(
        &label("baggage header present"),
        handled.headers.contains_key("baggage"),
        || format!("headers {:?}", handled.headers),
    );
    if case.direction == Direction::PythonToRust {
        let producer = observed
            .published
            .producer
            .as_ref()
            .and_then(|p| p.span.as_ref());
        checks.eq(
            &label("inject_context wrote the PRODUCER span's context"),
            &arrived.as_ref().map(|(_, s, _)| s.as_str()),
            &producer.map(|p| p.span_id.as_str()),
        );
        checks.eq(
            &label("the headers arrived as inject_context wrote them"),
            &handled.headers,
            &observed.published.headers,
        );
    }
    if case.mode == Mode::JetStream {
        checks.eq(
            &label("the consumer's message has the sequence of the publisher's ack"),
            &handled.sequence,
            &observed.published.sequence,
        );
        checks.check(
            &label("a stream sequence was read"),
            handled.sequence.is_some_and(|s| s > 0),
            || format!("{:?}", handled.sequence),
        );
    }
    if case.mode == Mode::Request {
        checks.eq(
            &label("the reply says what the responder's handler saw"),
            &observed.reply.as_ref().map(|(s, _)| s),
            &Some(&handled.consumer),
        );
        let reply_traceparent = traceparent(
            observed
                .reply
                .as_ref()
                .and_then(|(_, h)| h.get("traceparent")),
        );
        checks.eq(
            &label("the reply's traceparent: the same trace"),
            &reply_traceparent.as_ref().map(|(t, _, _)| t.as_str()),
            &Some(case.trace_id()),
        );
    }
    checks.contexts += 1;
}

/// The spans both sides exported for `case`.
fn check_spans(
    checks: &mut Checks,
    case: &Case,
    observed: &Observed,
    all: &[SpanRecord],
    port: u16,
) {
    let label = |what: &str| case.label(what);
    let trace: Vec<SpanRecord> = all
        .iter()
        .filter(|s| s.trace_id == case.trace_id())
        .cloned()
        .collect();
    if !case.sampled() {
        checks.check(
            &label("unsampled: no span of the trace exported on either side"),
            trace.is_empty(),
            || {
                format!(
                    "{:?}",
                    trace.iter().map(|s| (&s.side, &s.name)).collect::<Vec<_>>()
                )
            },
        );
        return;
    }
    let subject = case.subject();
    let (producer_side, consumer_side) = case.sides();
    let send = format!("send {subject}");
    let process = format!("process {subject}");
    let producer = spans::one(checks, &trace, producer_side, "PRODUCER", &send, |s| {
        s.name == send
    });
    let consumer = spans::one(checks, &trace, consumer_side, "CONSUMER", &process, |s| {
        s.name == process
    });
    let caller = observed
        .caller
        .as_deref()
        .and_then(|id| trace.iter().find(|s| s.span_id == id));
    let settle = case.mode == Mode::JetStream && consumer_side == Side::Rust;
    // A Rust requester's wait for the reply is a `receive` span of its own, a Rust JetStream
    // publisher's ack a `publish_ack` span.
    let rust_producer = producer_side == Side::Rust;
    let expected = 2
        + usize::from(observed.caller.is_some())
        + usize::from(case.mode == Mode::Request)
        + usize::from(case.mode == Mode::Request && rust_producer)
        + usize::from(case.mode == Mode::JetStream && rust_producer)
        + usize::from(settle);
    checks.eq(
        &label("spans of the trace (both sides)"),
        &trace.len(),
        &expected,
    );
    checks.spans += trace.len();

    spans::parent_is(checks, consumer, producer, true);
    match caller {
        Some(caller) => spans::parent_is(checks, producer, Some(caller), false),
        None => {
            let parent = case.parent.span.as_ref().map(|s| s.span_id.as_str());
            checks.eq(
                &label("the PRODUCER span's parent is the message's parent context"),
                &producer.and_then(|p| p.parent_span_id.as_deref()),
                &parent,
            );
        }
    }
    checks.eq(
        &label("the handler runs in the CONSUMER span"),
        &observed
            .handled
            .consumer
            .span
            .as_ref()
            .map(|s| s.span_id.as_str()),
        &consumer.map(|c| c.span_id.as_str()),
    );
    let arrived = traceparent(observed.handled.headers.get("traceparent"));
    checks.eq(
        &label("the traceparent header names the PRODUCER span"),
        &arrived.as_ref().map(|(_, s, _)| s.as_str()),
        &producer.map(|p| p.span_id.as_str()),
    );

    // The messaging attributes, on both sides' spans (lens's also name the server).
    for (span, operation, destination) in [
        (producer, "send", &subject),
        (consumer, "process", &subject),
    ] {
        let Some(span) = span else { continue };
        checks.eq(
            &label(&format!(
                "{:?} {} span: messaging attributes",
                span.side, span.kind
            )),
            &(
                span.attribute("messaging.system"),
                span.attribute("messaging.operation.name"),
                span.attribute("messaging.operation.type"),
                span.attribute("messaging.destination.name"),
            ),
            &(
                Some("nats".to_owned()),
                Some(operation.to_owned()),
                Some(operation.to_owned()),
                Some(destination.clone()),
            ),
        );
        if span.side == Side::Rust {
            checks.eq(
                &label(&format!(
                    "Rust {} span: server.address, server.port",
                    span.kind
                )),
                &(
                    span.attribute("server.address"),
                    span.attribute("server.port"),
                ),
                &(Some("127.0.0.1".to_owned()), Some(port.to_string())),
            );
        }
        if case.mode == Mode::JetStream {
            // A Rust publisher records the ack on its `publish_ack` span, the child of `send`.
            let acked = format!("publish_ack {subject}");
            let recorded = match (span.side, span.kind.as_str()) {
                (Side::Rust, "PRODUCER") => trace
                    .iter()
                    .find(|s| s.side == Side::Rust && s.name == acked)
                    .and_then(|s| s.attribute("messaging.nats.stream_sequence")),
                _ => span.attribute("messaging.nats.stream_sequence"),
            };
            checks.eq(
                &label(&format!(
                    "{:?} {} span: the stream sequence",
                    span.side, span.kind
                )),
                &recorded,
                &observed.handled.sequence.map(|s| s.to_string()),
            );
        }
    }
    if case.mode == Mode::Request {
        // The reply goes to the requester's inbox: a temporary destination, a span named `send`.
        let reply = spans::one(
            checks,
            &trace,
            consumer_side,
            "PRODUCER",
            "the reply",
            |s| s.name == "send",
        );
        spans::parent_is(checks, reply, consumer, false);
        checks.eq(
            &label("the reply's send span: a temporary destination"),
            &reply.and_then(|r| r.attribute("messaging.destination.temporary")),
            &Some("true".to_owned()),
        );
        let reply_traceparent = traceparent(
            observed
                .reply
                .as_ref()
                .and_then(|(_, h)| h.get("traceparent")),
        );
        checks.eq(
            &label("the reply's traceparent names the reply's send span"),
            &reply_traceparent.as_ref().map(|(_, s, _)| s.as_str()),
            &reply.map(|r| r.span_id.as_str()),
        );
    }
    if settle {
        let ack = format!("ack {subject}");
        let ack_span = spans::one(checks, &trace, Side::Rust, "CLIENT", &ack, |s| {
            s.name == ack
        });
        spans::parent_is(checks, ack_span, consumer, false);
    }
    for span in &trace {
        checks.eq(
            &label(&format!(
                "{:?} {} {:?}: trace flags",
                span.side, span.kind, span.name
            )),
            &span.trace_flags,
            &case.flags(),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A pulled batch, and a consumer that asks for links only (Python to Rust)

/// Messages in the pulled batch.
const BATCH: usize = 3;

fn batch_parent() -> Spec {
    Spec::span("5af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 0x01)
        .tracestate(TRACESTATE)
        .baggage(BAGGAGE)
}

fn linked_parent() -> Spec {
    Spec::span("5bf7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 0x01).baggage(BAGGAGE)
}

fn batch_label(what: &str) -> String {
    format!("python->rust [JetStream batch of {BATCH} via Consumer::receive] {what}")
}

fn linked_label(what: &str) -> String {
    format!("python->rust [core publish into a ConsumerParent::Links consumer] {what}")
}

/// What the batch showed: the Python publishes, the `receive` span, each message's handler.
struct BatchObserved {
    published: Vec<Published>,
    receive: Option<String>,
    handled: Vec<Handled>,
}

/// The Python peer publishes [`BATCH`] JetStream messages (each in its own PRODUCER span, one
/// trace); lens-nats pulls them as one batch (`fetch`) and processes each.
async fn python_batch_to_rust(peer: &mut PythonProcess, rust: &Rust) -> Result<BatchObserved> {
    let parent = batch_parent();
    let mut published = Vec::new();
    for n in 0..BATCH {
        let answer = tokio::task::block_in_place(|| {
            peer.request(&json!({
                "op": "publish",
                "mode": "jetstream",
                "subject": format!("rs.batch.{n}"),
                "parent": parent,
                "payload": "batch",
            }))
        })?;
        published.push(
            serde_json::from_value::<Published>(answer)
                .map_err(Error::json("nats_peer publish answer"))?,
        );
    }
    // Every message is stored (acked to Python) before the fetch: the batch holds all three.
    let pull = rust.batch.fetch().max_messages(BATCH).messages();
    let batch = rust
        .consumer
        .receive(&rust.client, "RSBATCH", pull)
        .await
        .map_err(Error::nats("receiving the batch"))?;
    let receive = batch
        .receive_span_context()
        .map(|sc| sc.span_id().to_string());
    let mut handled = Vec::new();
    for message in batch {
        let consumer = message.in_span(async { seen(&Context::current()) }).await;
        let sequence = message.info().ok().map(|i| i.stream_sequence);
        handled.push(Handled::rust(&message.message, consumer, sequence));
    }
    Ok(BatchObserved {
        published,
        receive,
        handled,
    })
}

/// The Python peer publishes one core message into a consumer that asks for links only.
async fn python_to_rust_linked(
    peer: &mut PythonProcess,
    rust: &mut Rust,
) -> Result<(Published, Handled)> {
    let answer = tokio::task::block_in_place(|| {
        peer.request(&json!({
            "op": "publish",
            "mode": "core",
            "subject": "rs.linked.5b",
            "parent": linked_parent(),
            "payload": "linked",
        }))
    })?;
    let published: Published =
        serde_json::from_value(answer).map_err(Error::json("nats_peer publish answer"))?;
    let message = tokio::time::timeout(RECEIVE_TIMEOUT, rust.linked.next())
        .await
        .map_err(|_| Error::Timeout {
            what: "the rust consumer: the linked message".into(),
            after: RECEIVE_TIMEOUT,
        })?
        .ok_or_else(|| Error::Nats {
            what: "the rust consumer".into(),
            message: "the linked subscription ended".into(),
        })?;
    let consumer = message.in_span(async { seen(&Context::current()) }).await;
    Ok((published, Handled::rust(&message, consumer, None)))
}

/// The batch: one CLIENT `receive` span that links to every Python PRODUCER span, each message's
/// CONSUMER `process` span the child of its PRODUCER span and linked to the `receive` span.
fn check_batch(checks: &mut Checks, observed: &BatchObserved, all: &[SpanRecord]) {
    let parent = batch_parent();
    let trace_id = parent.span.as_ref().map_or("", |s| s.trace_id.as_str());
    checks.eq(
        &batch_label("messages in the batch, in order"),
        &observed
            .handled
            .iter()
            .map(|h| h.subject.as_str())
            .collect::<Vec<_>>(),
        &(0..BATCH)
            .map(|n| format!("rs.batch.{n}"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let receive = observed
        .receive
        .as_deref()
        .and_then(|id| all.iter().find(|s| s.span_id == id));
    checks.eq(
        &batch_label("the receive span: Rust CLIENT `receive RSBATCH`, a root, 3 messages"),
        &receive.map(|r| {
            (
                r.side,
                r.kind.as_str(),
                r.name.as_str(),
                r.parent_span_id.is_none(),
                r.attribute("messaging.batch.message_count"),
            )
        }),
        &Some((
            Side::Rust,
            "CLIENT",
            "receive RSBATCH",
            true,
            Some(BATCH.to_string()),
        )),
    );
    let producers: Vec<Option<&SpanRecord>> = observed
        .published
        .iter()
        .map(|p| {
            let id = p.producer.as_ref().and_then(|s| s.span.as_ref())?;
            all.iter()
                .find(|s| s.side == Side::Python && s.span_id == id.span_id)
        })
        .collect();
    let mut linked: Vec<(String, String)> = receive
        .map(|r| {
            r.links
                .iter()
                .map(|l| (l.trace_id.clone(), l.span_id.clone()))
                .collect()
        })
        .unwrap_or_default();
    linked.sort();
    let mut expected: Vec<(String, String)> = producers
        .iter()
        .flatten()
        .map(|p| (p.trace_id.clone(), p.span_id.clone()))
        .collect();
    expected.sort();
    checks.eq(
        &batch_label("the receive span links to every Python PRODUCER span, across the boundary"),
        &linked,
        &expected,
    );
    checks.eq(
        &batch_label("a Python PRODUCER span per message"),
        &expected.len(),
        &BATCH,
    );
    for (n, (handled, producer)) in observed.handled.iter().zip(&producers).enumerate() {
        let label = |what: &str| batch_label(&format!("message {n}: {what}"));
        let span = handled.consumer.span.as_ref();
        checks.eq(
            &label("handler: trace id, flags, tracestate, baggage of the producer's context"),
            &(
                span.map(|s| (s.trace_id.as_str(), s.trace_flags, s.tracestate.as_str())),
                &handled.consumer.baggage,
            ),
            &(
                Some((trace_id, 0x01, parent.tracestate_header().as_str())),
                &parent.baggage,
            ),
        );
        let process = span.and_then(|s| all.iter().find(|r| r.span_id == s.span_id));
        checks.eq(
            &label("the handler ran in a Rust CONSUMER `process` span"),
            &process.map(|p| (p.side, p.kind.as_str(), p.name.clone())),
            &Some((Side::Rust, "CONSUMER", format!("process rs.batch.{n}"))),
        );
        spans::parent_is(checks, process, *producer, true);
        checks.check(
            &label("the process span links to the receive span"),
            process.is_some_and(|p| {
                observed
                    .receive
                    .as_deref()
                    .is_some_and(|r| p.links.iter().any(|l| l.span_id == r))
            }),
            || format!("{:?}", process.map(|p| &p.links)),
        );
        checks.eq(
            &label("the stream sequence: Python's ack, the message, both spans"),
            &(
                handled.sequence,
                process.and_then(|p| p.attribute("messaging.nats.stream_sequence")),
                producer.and_then(|p| p.attribute("messaging.nats.stream_sequence")),
            ),
            &(
                observed.published.get(n).and_then(|p| p.sequence),
                observed
                    .published
                    .get(n)
                    .and_then(|p| p.sequence)
                    .map(|s| s.to_string()),
                observed
                    .published
                    .get(n)
                    .and_then(|p| p.sequence)
                    .map(|s| s.to_string()),
            ),
        );
        checks.contexts += 1;
    }
    let trace: Vec<&SpanRecord> = all.iter().filter(|s| s.trace_id == trace_id).collect();
    checks.eq(
        &batch_label("spans of the producers' trace: 3 PRODUCER, 3 CONSUMER"),
        &trace.len(),
        &(2 * BATCH),
    );
    checks.spans += trace.len() + usize::from(receive.is_some());
}

/// Links only: the `process` span starts a new trace that links to the Python PRODUCER span,
/// records why (`lens.trace.new_root` = `linked`), and the message's baggage is still current.
fn check_linked(
    checks: &mut Checks,
    (published, handled): &(Published, Handled),
    all: &[SpanRecord],
) {
    let parent = linked_parent();
    let trace_id = parent.span.as_ref().map_or("", |s| s.trace_id.as_str());
    let producer = published
        .producer
        .as_ref()
        .and_then(|p| p.span.as_ref())
        .and_then(|p| {
            all.iter()
                .find(|s| s.side == Side::Python && s.span_id == p.span_id)
        });
    checks.eq(
        &linked_label("one Python PRODUCER span `send rs.linked.5b` in the producer's trace"),
        &producer.map(|p| (p.kind.as_str(), p.name.as_str(), p.trace_id.as_str())),
        &Some(("PRODUCER", "send rs.linked.5b", trace_id)),
    );
    let span = handled.consumer.span.as_ref();
    checks.check(
        &linked_label("handler: a new trace, sampled"),
        span.is_some_and(|s| s.trace_id != trace_id && s.sampled),
        || format!("{span:?}"),
    );
    checks.eq(
        &linked_label("handler: the message's baggage (the policy trusts it)"),
        &handled.consumer.baggage,
        &parent.baggage,
    );
    let process = span.and_then(|s| all.iter().find(|r| r.span_id == s.span_id));
    checks.eq(
        &linked_label("the Rust CONSUMER span: a root, `lens.trace.new_root` = linked"),
        &process.map(|p| {
            (
                p.kind.as_str(),
                p.name.as_str(),
                p.parent_span_id.is_none(),
                p.attribute("lens.trace.new_root"),
            )
        }),
        &Some((
            "CONSUMER",
            "process rs.linked.5b",
            true,
            Some("linked".to_owned()),
        )),
    );
    checks.eq(
        &linked_label("the CONSUMER span links to the Python PRODUCER span, across the boundary"),
        &process.map(|p| p.links.clone()),
        &producer.map(|p| {
            vec![spans::LinkRecord {
                trace_id: p.trace_id.clone(),
                span_id: p.span_id.clone(),
            }]
        }),
    );
    checks.spans += usize::from(producer.is_some()) + usize::from(process.is_some());
    checks.contexts += 1;
}
