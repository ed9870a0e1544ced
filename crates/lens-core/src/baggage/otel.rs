//! Between lens's baggage and opentelemetry's `Baggage` (SPEC.md §10): the header lens sends for
//! a `Baggage` that lens did not build, written straight from it, and the mirrors both ways.

use opentelemetry::baggage::{Baggage, BaggageMetadata};

use super::member::{properties_len, write_member};
use super::parse::OTEL_BAGGAGE_MAX;
use super::percent::encoded_len;
use super::{BaggageList, member_len};
use crate::Limits;
use crate::lexical::is_token;

/// What lens sends of one opentelemetry entry: its properties (trimmed) and their normalized
/// length, when the key is a token and the properties are valid (SPEC.md §3); `None` otherwise.
fn sendable<'b>(key: &str, metadata: &'b BaggageMetadata) -> Option<(&'b str, usize)> {
    if !is_token(key) {
        return None;
    }
    let properties = metadata.as_str().trim();
    if properties.is_empty() {
        return Some((properties, 0));
    }
    properties_len(properties).map(|len| (properties, len))
}

/// The `baggage` header lens sends for opentelemetry's `Baggage`, in its iteration order:
/// exactly [`list_from_otel`]'s header, written into one String sized once, without building
/// the list. An entry lens cannot send (a key that is not a token, invalid properties) or that
/// would break a limit is left out; later entries that fit are still sent.
pub(crate) fn header_from_otel(baggage: &Baggage, limits: &Limits) -> String {
    // First pass: the exact size of what is sent, so the String is allocated once.
    let mut size = 0usize;
    let mut count = 0usize;
    for (key, (value, metadata)) in baggage {
        let Some((_, props_len)) = sendable(key.as_str(), metadata) else {
            continue;
        };
        let len = member_len(key.as_str(), encoded_len(value.as_str()), props_len);
        let new_size = size + usize::from(count > 0) + len;
        if count >= limits.baggage_members || new_size > limits.baggage_bytes {
            continue;
        }
        size = new_size;
        count += 1;
    }
    let mut header = String::with_capacity(size);
    if size == 0 {
        return header;
    }
    // Second pass: the same decisions, in the same order (the map is not changed in between).
    let mut written = 0usize;
    for (key, (value, metadata)) in baggage {
        let Some((properties, props_len)) = sendable(key.as_str(), metadata) else {
            continue;
        };
        let len = member_len(key.as_str(), encoded_len(value.as_str()), props_len);
        let new_size = header.len() + usize::from(written > 0) + len;
        if written >= limits.baggage_members || new_size > limits.baggage_bytes {
            continue;
        }
        if written > 0 {
            header.push(',');
        }
        write_member(&mut header, key.as_str(), value.as_str(), properties);
        written += 1;
    }
    header
}

/// Rebuilds an ordered list from opentelemetry's `Baggage` (its iteration order; entries that
/// are not valid per SPEC.md §3 or would break a limit are left out).
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
            e.key().to_owned(),
            e.value().to_owned(),
            BaggageMetadata::from(e.properties()),
        );
    }
    b
}
