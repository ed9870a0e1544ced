//! A span from its start to its end: [`SpanOptions`] (the knobs every adapter has) start it,
//! [`LiveSpan`] records its outcome and ends it exactly once (at the end of the response, or
//! when dropped), and [`poll_in`] runs the work inside it and ends it on a panic.

mod adapter;
mod in_span;
mod live_span;
mod options;
mod responder;
mod start;

pub use adapter::{Adapter, FilterDecision};
pub use in_span::{InSpan, in_span, poll_in};
pub use live_span::LiveSpan;
pub use options::SpanOptions;
pub use responder::Responder;
