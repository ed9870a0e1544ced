//! Request metrics, as the semantic conventions 1.42 define them, recorded by the span
//! lifecycle: a call's duration is recorded when its span ends (end of the response body, an
//! error, a panic, or the call dropped), with the bounded subset of the span's attributes that
//! the conventions name for the instrument. Off by default: without a meter
//! ([`SpanOptions::set_meter`](crate::SpanOptions::set_meter)) nothing is built per request.
//!
//! | [`Instruments`] | instrument | attributes |
//! | --- | --- | --- |
//! | `HttpServer` | `http.server.request.duration` (s); opt-in `http.server.active_requests`, `http.server.{request,response}.body.size` (By) | `http.request.method` (`_OTHER` outside the known set), `url.scheme`, `http.route` (the matched route only), `network.protocol.version`, `http.response.status_code`, `error.type` |
//! | `HttpClient` | `http.client.request.duration` (s), per attempt; opt-in `http.client.{request,response}.body.size` (By) | `http.request.method`, `server.address`, `server.port`, `network.protocol.version`, `http.response.status_code`, `error.type` |
//! | `Messaging` | `messaging.client.operation.duration` (s) for send, receive and settle, `messaging.process.duration` (s) for process; counters `messaging.client.sent.messages` (send) and `messaging.client.consumed.messages` (receive, and process unless a receive counted its message) | `messaging.system`, `messaging.operation.name`, `messaging.operation.type`, `messaging.destination.name` (only where the adapter says destinations are low-cardinality, never a temporary one), `messaging.destination.template`, `messaging.consumer.group.name`, `messaging.destination.subscription.name`, `error.type`, `server.address`, `server.port` |
//! | `RpcServer` / `RpcClient` | `rpc.{server,client}.call.duration` (s) under `rpc` / `rpc/dup`, `rpc.{server,client}.duration` (ms) without the opt-in or under `rpc/dup` | the RPC attributes of the chosen conventions, `error.type`; clients `server.address`, `server.port`; on a server an `UNIMPLEMENTED` call's method is `_OTHER` |
//!
//! The attributes are taken from the adapter's own span attributes, never from the
//! request-attribute hook's, so a user's hook cannot grow the number of series. A call's metric
//! state lives inline in its span ([`crate::LiveSpan`]): recording allocates nothing per call.
//!
//! Body sizes count the bytes of the body's data frames as they go through, not
//! `Content-Length`: a server's response body through [`crate::TracedBody`], any other body
//! through [`crate::CountedBody`] with a [`BodyBytes`] from the span.

mod attributes;
mod body_bytes;
mod call;
mod kinds;
mod recorder;
#[cfg(test)]
mod tests;

pub use body_bytes::BodyBytes;
pub(crate) use call::CallMetrics;
pub use kinds::{DURATION_BUCKETS_S, Instruments};
pub(crate) use recorder::{OptIn, Recorder};
