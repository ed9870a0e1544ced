//! Baggage keys as opentelemetry [`Key`]s, the keys a process sees again and again borrowed
//! from a small table instead of copied.
//!
//! A service meets the same few baggage keys on request after request (a tenant, a user id, a
//! job name), and opentelemetry's `Baggage` owns each key it holds: one allocation per key on
//! every extract, freed wherever the Context is dropped (often another thread, where a free
//! costs more). A key this table already holds becomes a `Key` that borrows `'static` text
//! ([`Key::from_static_str`]) and costs no allocation.
//!
//! The table is bounded whatever peers send: [`SLOTS`] slots, each set once to the first key of
//! at most [`MAX_KEPT_KEY`] bytes that hashes to it (4 KiB in all). The table is a `static`
//! that owns its keys: nothing is leaked, the text is `'static` because the table is. A slot held
//! by another key or a longer key only means the key is copied, as opentelemetry does. Reading a
//! slot is an atomic load: no lock once it is set.

use std::sync::OnceLock;

use opentelemetry::Key;

use super::index::KeyIndex;

/// Slots in the table.
const SLOTS: usize = 64;

/// Longest key the table keeps.
const MAX_KEPT_KEY: usize = 64;

/// A table of kept keys.
type Table = [OnceLock<Box<str>>; SLOTS];

static KEPT: Table = [const { OnceLock::new() }; SLOTS];

/// `key` as an opentelemetry [`Key`]: borrowed from the table when it holds this key (its slot
/// is set to it now when still free), else a copy.
pub(crate) fn otel_key(key: &str) -> Key {
    match kept(&KEPT, key) {
        Some(kept) => Key::from_static_str(kept),
        None => Key::from(key.to_owned()),
    }
}

/// `table`'s copy of `key`, when its slot holds it or can take it.
#[inline]
fn kept(table: &'static Table, key: &str) -> Option<&'static str> {
    if key.len() > MAX_KEPT_KEY {
        return None;
    }
    let slot = table.get(KeyIndex::hash(key) % SLOTS)?;
    let kept: &'static str = match slot.get() {
        Some(kept) => kept,
        None => first_in_slot(slot, key),
    };
    (kept == key).then_some(kept)
}

/// Sets a free slot to `key` (a thread that loses the race drops its copy) and returns what the
/// slot holds.
#[cold]
fn first_in_slot(slot: &'static OnceLock<Box<str>>, key: &str) -> &'static str {
    slot.get_or_init(|| Box::from(key))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::OnceLock;

    use super::{MAX_KEPT_KEY, SLOTS, kept, otel_key};

    /// A table of the test's own (the process-wide one is shared by every test).
    fn table() -> &'static super::Table {
        Box::leak(Box::new([const { OnceLock::new() }; SLOTS]))
    }

    #[test]
    fn a_key_seen_again_is_the_same_static_text() {
        let table = table();
        let first = kept(table, "tenant").unwrap();
        let again = kept(table, "tenant").unwrap();
        assert!(std::ptr::eq(first, again));
        assert_eq!(first, "tenant");
    }

    #[test]
    fn a_key_longer_than_the_bound_is_never_kept() {
        let table = table();
        let long = "k".repeat(MAX_KEPT_KEY + 1);
        assert_eq!(kept(table, &long), None);
        let longest = "l".repeat(MAX_KEPT_KEY);
        assert_eq!(kept(table, &longest), Some(longest.as_str()));
    }

    #[test]
    fn keys_that_share_a_slot_keep_their_own_text() {
        let table = table();
        // Four times as many keys as slots: most share a slot with another.
        let keys: Vec<String> = (0..4 * SLOTS).map(|i| format!("k{i}")).collect();
        let first: Vec<Option<&str>> = keys.iter().map(|key| kept(table, key)).collect();
        for (key, text) in keys.iter().zip(&first) {
            assert!(text.is_none_or(|text| text == key));
        }
        // One key per slot, the first that reached it: every slot is set, and no other key
        // takes it later.
        let kept_keys = first.iter().flatten().count();
        let filled = table.iter().filter(|slot| slot.get().is_some()).count();
        assert_eq!((kept_keys, filled), (SLOTS, SLOTS));
        let again: Vec<Option<&str>> = keys.iter().map(|key| kept(table, key)).collect();
        assert_eq!(again, first);
    }

    #[test]
    fn every_key_reads_back_as_itself() {
        for key in ["a", "user_id", &"x".repeat(MAX_KEPT_KEY + 10)] {
            assert_eq!(otel_key(key).as_str(), key);
        }
    }
}
