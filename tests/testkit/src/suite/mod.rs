//! The behaviour suite every lens adapter runs: one list of scenarios and checks, the same for
//! lens-axum, lens-reqwest and lens-tonic's layers, so that the adapters cannot drift apart.
//!
//! An adapter's test implements [`Harness`]: it builds its adapter as a [`Setup`] says (through
//! the knobs every adapter has), sends one [`Call`] through it, and reports what it saw as
//! [`Observed`]. [`run`] goes through every scenario and panics with the scenario's name on the
//! first failed check.
//!
//! The conventions a harness follows:
//! - servers: the handler answers as [`Call::respond`] says (header or message [`RESPOND`]) and
//!   reports the trace context it would send on ([`outgoing_of_current`]), the outgoing call made
//!   from the handler;
//! - clients: the caller's Context is what [`Call::headers`] describe (extracted with
//!   [`caller_context`]); the request carries [`Call::preset`] (a stale `traceparent`) before
//!   the adapter injects; the peer answers as [`Call::respond`] says and reports the propagation
//!   headers it received;
//! - the filter skips the requests that carry the header [`SKIP_HEADER`]; with [`Setup::named`]
//!   every span is named [`SPAN_NAME`]; with [`Setup::hooks`] the request hook adds
//!   [`REQUEST_ATTRIBUTE`] = `true` and the response hook [`RESPONSE_ATTRIBUTE`] = `true`;
//! - with [`Setup::classified`] the harness's classifier (the macro's last argument) calls the
//!   caller's error (HTTP 404, gRPC `NOT_FOUND`) a failure with `error.type` [`CLASSIFIED_ERROR`]
//!   and nothing else one, and the failure hook adds [`FAILURE_ATTRIBUTE`] = the `error.type`;
//! - with [`Setup::metrics`] the adapter records its metrics with a meter of the suite's
//!   [`Metrics`](crate::metrics::Metrics) (the macro's last argument, [`metrics_for`]) and
//!   every opt-in instrument it has on (HTTP: body sizes; HTTP servers: active requests); the
//!   harness reports what was collected once the call is over ([`Observed::metrics`]) and the
//!   bytes of the response body the caller received ([`Observed::response_bytes`], HTTP);
//! - [`Respond::Cancel`]: the peer sends a first part and then nothing; the caller reads the
//!   first part and goes away (drops the response or the stream).
//!
//! The metrics part checks the same things for every adapter: one duration per call whatever
//! the way out (response, error, panic, stream, cancel), in the conventions' unit and buckets;
//! its attributes exactly the span's attributes among the instrument's keys (so never a user's
//! hook's, never the path or the peer's address), `error.type` the span's, never an error's
//! message; HTTP servers' active requests back to 0; HTTP body sizes one per call, the response's
//! the bytes the caller received; nothing for a request the filter skipped.

// `knobs`, `names` and `setup` are public (hidden) for the expansion of `suite_knobs!` in the
// adapters' tests; their items are re-exported here.
mod call;
mod harness;
#[doc(hidden)]
pub mod knobs;
mod metric_checks;
#[doc(hidden)]
pub mod names;
mod scenarios;
#[doc(hidden)]
pub mod setup;
mod span_attribute;

pub use call::{Call, Observed, Respond};
pub use harness::{
    Harness, caller_context, carrier_lines, collected, metrics_for, outgoing_of_current,
    propagation_lines,
};
pub use names::{
    CLASSIFIED_ERROR, FAILURE_ATTRIBUTE, PARENT_ID, REQUEST_ATTRIBUTE, RESPOND, RESPONSE_ATTRIBUTE,
    SKIP_HEADER, SPAN_NAME, TRACE_ID,
};
pub use scenarios::run;
pub use setup::{Protocol, Setup, Side};
