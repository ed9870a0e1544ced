//! The `lens.trace.new_root` attribute: why a lens server or consumer started a new trace.
//! lens-span writes it (`lens_span::new_root`); a test of the workspace reads back every value
//! lens-span writes with [`NewRootCause::parse`], so the two cannot drift.

use crate::model::{Span, Value};

/// The attribute a lens server (lens-axum, lens-tonic) sets on a SERVER span that starts a new
/// trace, saying why: see [`NewRootCause`].
pub const NEW_ROOT_ATTRIBUTE: &str = "lens.trace.new_root";

/// Why a lens server or consumer started a new trace, from [`NEW_ROOT_ATTRIBUTE`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewRootCause {
    /// No traceparent received (`none`).
    NoTraceparent,
    /// A traceparent rejected by the rule at this anchor of docs/propagation-rules.md
    /// (`rejected:<anchor>`).
    Rejected(String),
    /// A valid traceparent the policy did not trust and ignored (`untrusted:ignored`).
    UntrustedIgnored,
    /// A valid traceparent the policy did not trust, linked to (`untrusted:linked`).
    UntrustedLinked,
    /// A message consumer that asked for links only: a valid, trusted context, linked to by
    /// choice (`linked`).
    Linked,
}

impl NewRootCause {
    /// The attribute's value.
    pub fn value(&self) -> String {
        match self {
            NewRootCause::NoTraceparent => "none".to_owned(),
            NewRootCause::Rejected(anchor) => format!("rejected:{anchor}"),
            NewRootCause::UntrustedIgnored => "untrusted:ignored".to_owned(),
            NewRootCause::UntrustedLinked => "untrusted:linked".to_owned(),
            NewRootCause::Linked => "linked".to_owned(),
        }
    }

    /// From the attribute's value; `None` for a value this version does not know.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "none" => Some(NewRootCause::NoTraceparent),
            "untrusted:ignored" => Some(NewRootCause::UntrustedIgnored),
            "untrusted:linked" => Some(NewRootCause::UntrustedLinked),
            "linked" => Some(NewRootCause::Linked),
            _ => value
                .strip_prefix("rejected:")
                .map(|a| NewRootCause::Rejected(a.to_owned())),
        }
    }

    pub(super) fn of(span: &Span) -> Option<Self> {
        span.attribute(NEW_ROOT_ATTRIBUTE)
            .and_then(Value::as_str)
            .and_then(Self::parse)
    }
}
