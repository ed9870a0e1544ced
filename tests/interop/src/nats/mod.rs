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

mod batch;
mod batch_checks;
mod case;
mod context_checks;
mod exchange;
mod observed;
mod rust_side;
mod scenario;
mod span_checks;

pub(crate) use scenario::run;
