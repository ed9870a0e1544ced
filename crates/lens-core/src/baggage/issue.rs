//! [`BaggageIssue`]: why a member was dropped while parsing.

use std::fmt;

/// Why a member was dropped while parsing (for `lens inspect` to explain rejections).
///
/// ```
/// use lens_core::Limits;
/// use lens_core::baggage::{BaggageIssue, BaggageIssueReason, BaggageList};
///
/// let mut issues = Vec::new();
/// let list = BaggageList::parse_reporting(
///     ["a b=1, c=2"],
///     &Limits::default(),
///     false,
///     |issue| issues.push(issue),
/// );
/// assert_eq!(list.header(), "c=2");
/// assert_eq!(
///     issues,
///     [BaggageIssue { member: "a b=1", reason: BaggageIssueReason::InvalidKey }]
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaggageIssue<'a> {
    /// The raw member text, spaces and tabs around it removed.
    pub member: &'a str,
    /// Why it was dropped.
    pub reason: BaggageIssueReason,
}

impl fmt::Display for BaggageIssue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "baggage member `{}` dropped: {}",
            self.member, self.reason
        )
    }
}

/// The docs/propagation-rules.md#baggage rule that made the parser drop a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BaggageIssueReason {
    /// The key is empty or not an HTTP token.
    InvalidKey,
    /// The member has no `=` between key and value.
    MissingEquals,
    /// The value holds a raw character outside the baggage value octets.
    InvalidValueCharacter,
    /// A property after the value is not `key`, or `key = value`, with a token key.
    InvalidProperty,
    /// Keeping the member would exceed the member limit; it and every later member are dropped.
    TooManyMembers,
    /// Keeping the member would make the header too long; it and every later member are dropped.
    TooLarge,
}

impl fmt::Display for BaggageIssueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::InvalidKey => {
                "a baggage key must be an HTTP token (letters, digits and !#$%&'*+-.^_`|~), \
                 taken literally (docs/propagation-rules.md#baggage)"
            }
            Self::MissingEquals => {
                "a baggage member must be `key=value`, and this one has no `=` (docs/propagation-rules.md#baggage)"
            }
            Self::InvalidValueCharacter => {
                "a raw space inside the value, `\"`, `,`, `;`, `\\`, a control or a non-ASCII \
                 character is not allowed in a baggage value, so the member is dropped \
                 (docs/propagation-rules.md#baggage)"
            }
            Self::InvalidProperty => {
                "every baggage property after the value must be `key` or `key=value` with a \
                 token key (docs/propagation-rules.md#baggage)"
            }
            Self::TooManyMembers => {
                "baggage keeps at most the member limit (180 by default); the first member \
                 over it and every member after it are dropped (docs/propagation-rules.md#baggage)"
            }
            Self::TooLarge => {
                "the baggage header lens would send is limited (8192 bytes by default); the \
                 first member that would break it and every member after it are dropped \
                 (docs/propagation-rules.md#baggage)"
            }
        })
    }
}
