//! Between lens's baggage and opentelemetry's `Baggage` (docs/propagation-rules.md#opentelemetry-types): the header lens sends for
//! a `Baggage` that lens did not build, written straight from it, and the mirrors both ways.

use opentelemetry::baggage::{Baggage, BaggageMetadata};

use super::keys::otel_key;
use super::list::BaggageList;
use super::member::{properties_len, write_member};
use super::parse::OTEL_BAGGAGE_MAX;
use crate::limits::Limits;

/// The properties (trimmed) lens sends with one opentelemetry entry, when they are valid
/// (docs/propagation-rules.md#baggage); `None` otherwise.
///
/// The key needs no check: opentelemetry's `Baggage` only takes keys of visible ASCII without
/// `(),/:;<=>?@[\]{}"`, which is exactly an RFC 7230 token (the test
/// `opentelemetry_baggage_keys_are_tokens` holds opentelemetry to that).
fn sendable(metadata: &str) -> Option<&str> {
    if metadata.is_empty() {
        return Some("");
    }
    let properties = metadata.trim();
    (properties.is_empty() || properties_len(properties).is_some()).then_some(properties)
}

/// The `baggage` header lens sends for opentelemetry's `Baggage`, in its iteration order:
/// exactly [`list_from_otel`]'s header, written in one pass into one String sized once, without
/// building the list. An entry lens cannot send (invalid properties) or that would break a limit
/// is left out; later entries that fit are still sent.
pub(crate) fn header_from_otel(baggage: &Baggage, limits: &Limits) -> String {
    // Common case: a few entries, walked once into a stack array (each step of opentelemetry's
    // iterator is a call), then written into one String sized once.
    let mut entries = [None; INLINE_ENTRIES];
    let mut bound = 0;
    for (count, (key, (value, metadata))) in baggage.into_iter().enumerate() {
        let Some(slot) = entries.get_mut(count) else {
            return header_from_many(baggage, limits);
        };
        let (key, value, metadata) = (key.as_str(), value.as_str(), metadata.as_str());
        // Room for every value byte escaped: no scan of the values.
        bound += key.len() + 3 * value.len() + metadata.len() + 2;
        *slot = Some((key, value, metadata));
    }
    let mut header = String::with_capacity(bound.min(limits.baggage_bytes));
    push_members(&mut header, entries.iter().flatten().copied(), limits);
    header
}

/// [`header_from_otel`] for more entries than its stack array holds: two walks.
#[cold]
fn header_from_many(baggage: &Baggage, limits: &Limits) -> String {
    let entries = || {
        baggage
            .iter()
            .map(|(k, (v, m))| (k.as_str(), v.as_str(), m.as_str()))
    };
    let bound: usize = entries()
        .map(|(k, v, m)| k.len() + 3 * v.len() + m.len() + 2)
        .sum();
    let mut header = String::with_capacity(bound.min(limits.baggage_bytes));
    push_members(&mut header, entries(), limits);
    header
}

/// How many entries [`header_from_otel`] walks on the stack.
const INLINE_ENTRIES: usize = 8;

/// Appends the members lens sends for opentelemetry's entries `(key, value, metadata)`.
fn push_members<'a>(
    header: &mut String,
    entries: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    limits: &Limits,
) {
    let mut written = 0usize;
    for (key, value, metadata) in entries {
        let Some(properties) = sendable(metadata) else {
            continue;
        };
        if written >= limits.baggage_members {
            break;
        }
        let before = header.len();
        if written > 0 {
            header.push(',');
        }
        write_member(header, key, value, properties);
        if header.len() > limits.baggage_bytes {
            // Too large: left out, as `BaggageList::set` refuses it; a later one may fit.
            header.truncate(before);
            continue;
        }
        written += 1;
    }
}

/// Rebuilds an ordered list from opentelemetry's `Baggage` (its iteration order; entries that
/// are not valid per docs/propagation-rules.md#baggage or would break a limit are left out).
pub(crate) fn list_from_otel(baggage: &Baggage, limits: &Limits) -> BaggageList {
    let mut list = BaggageList::new();
    for (key, (value, metadata)) in baggage {
        // `set` refuses exactly the entries `header_from_otel` leaves out.
        let _refused = list.set(
            key.as_str(),
            value.as_str(),
            metadata.as_str().trim(),
            limits,
        );
    }
    list
}

/// Mirrors an ordered list into opentelemetry's `Baggage` (its first 64 entries).
pub(crate) fn to_otel_baggage(list: &BaggageList) -> Baggage {
    let mut b = Baggage::new();
    for e in list.iter().take(OTEL_BAGGAGE_MAX) {
        b.insert_with_metadata(
            otel_key(e.key()),
            e.value().to_owned(),
            BaggageMetadata::from(e.properties()),
        );
    }
    b
}
