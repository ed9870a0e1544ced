//! [`PropagationLines`]: the propagation headers of a JSON carrier, as decoding reads them.

use std::borrow::Cow;

/// The lines of one propagation header in a JSON carrier.
#[derive(Debug, Default)]
pub(crate) enum JsonLines<'a> {
    /// No such key, an empty array, or a value of an ignored type.
    #[default]
    Absent,
    /// A string.
    One(Cow<'a, str>),
    /// An array of strings.
    Many(Vec<Cow<'a, str>>),
}

/// `traceparent`, `tracestate` and `baggage` of a JSON carrier.
#[derive(Debug, Default)]
pub(crate) struct PropagationLines<'a> {
    pub(crate) traceparent: JsonLines<'a>,
    pub(crate) tracestate: JsonLines<'a>,
    pub(crate) baggage: JsonLines<'a>,
}
