//! The carrier's rule for a key that repeats (Python dict semantics, docs/propagation-rules.md#carriers):
//! the last value wins, at the key's first position. One implementation for the JSON parser and
//! the serde deserializer.

use std::borrow::Cow;
use std::collections::HashMap;

/// From this many keys on, a repeated key is found through a hash index instead of a linear
/// scan, so that work stays linear in the input.
const INDEX_FROM: usize = 16;

/// Keys in first-seen order, each with its last value.
pub(super) struct LastWins<V> {
    entries: Vec<(String, V)>,
    index: Option<HashMap<String, usize>>,
}

impl<V> LastWins<V> {
    /// Room for `hint` keys (at most [`INDEX_FROM`]: a hint comes from the peer).
    pub(super) fn with_capacity(hint: usize) -> Self {
        LastWins {
            entries: Vec::with_capacity(hint.min(INDEX_FROM)),
            index: None,
        }
    }

    /// Sets `key` to `value`: in place where the key was seen before (the key is then not
    /// copied), else at the end.
    pub(super) fn insert(&mut self, key: Cow<'_, str>, value: V) {
        let existing = match &self.index {
            Some(map) => map.get(key.as_ref()).copied(),
            None => self.entries.iter().position(|(k, _)| *k == key),
        };
        if let Some(i) = existing {
            self.entries[i].1 = value;
            return;
        }
        let key = key.into_owned();
        if let Some(map) = &mut self.index {
            map.insert(key.clone(), self.entries.len());
        }
        self.entries.push((key, value));
        if self.index.is_none() && self.entries.len() >= INDEX_FROM {
            self.index = Some(
                self.entries
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect(),
            );
        }
    }

    /// The keys in first-seen order, each with its last value.
    pub(super) fn into_entries(self) -> Vec<(String, V)> {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_and_values(keys: &[&str]) -> Vec<(String, usize)> {
        let mut map = LastWins::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            map.insert(Cow::Borrowed(*key), i);
        }
        map.into_entries()
    }

    #[test]
    fn a_repeated_key_keeps_its_first_position_and_takes_the_last_value() {
        assert_eq!(
            keys_and_values(&["a", "b", "a"]),
            vec![("a".to_owned(), 2), ("b".to_owned(), 1)]
        );
    }

    #[test]
    fn the_rule_holds_past_the_point_where_the_index_is_built() {
        let mut keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        keys.push("k3".to_owned());
        keys.push("k39".to_owned());
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let entries = keys_and_values(&refs);
        assert_eq!(entries.len(), 40);
        assert_eq!(entries[3], ("k3".to_owned(), 40));
        assert_eq!(entries[39], ("k39".to_owned(), 41));
        assert_eq!(entries[4], ("k4".to_owned(), 4));
    }
}
