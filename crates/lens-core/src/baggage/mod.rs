//! W3C Baggage codec: parsing incoming `baggage` header lines and building the header lens sends
//! (docs/propagation-rules.md#baggage, docs/propagation-rules.md#limits and the baggage rows of docs/propagation-rules.md#differences-from-nemo-lens).
//!
//! [`BaggageList`] keeps the members in order together with the exact `baggage` header value lens
//! would send for them, updated on every change, so injecting costs nothing but a copy.
//!
//! ```
//! use lens_core::Limits;
//! use lens_core::baggage::BaggageList;
//!
//! let limits = Limits::default();
//! let mut list = BaggageList::parse(["user=alice, job=a%20b;p1 ; p2 = x"], &limits, false);
//! assert_eq!(list.get("job").map(|e| e.value()), Some("a b"));
//! assert_eq!(list.header(), "user=alice,job=a%20b;p1;p2=x");
//!
//! list.set("rank", "3", "", &limits)?;
//! list.remove("user");
//! assert_eq!(list.header(), "job=a%20b;p1;p2=x,rank=3");
//! # Ok::<(), lens_core::baggage::BaggageError>(())
//! ```
//!
//! Cost: parsing examines every byte at most a small constant number of times, stops at the first
//! member that would break a limit, and allocates nothing in proportion to the input beyond the
//! limits (a member is decoded only once it is known that its encoded form could fit).

mod entry;
mod index;
mod issue;
mod keys;
mod list;
mod member;
mod otel;
mod parse;
mod percent;

pub use entry::BaggageEntry;
pub use issue::{BaggageIssue, BaggageIssueReason};
pub use list::{BaggageError, BaggageList};
pub(crate) use otel::{header_from_otel, list_from_otel, to_otel_baggage};
pub(crate) use parse::{SentHeader, parse_to_otel};
pub use percent::encode_value;
