//! Finding a repeated key while parsing without comparing it to every member kept.

use super::entry::BaggageEntry;

/// Open-addressing hash index from key to entry position, built only once a list grows past
/// [`KeyIndex::LINEAR`] members (a plain scan is faster below that). Its size follows the number
/// of members kept, so it is bounded by the member limit.
#[derive(Default)]
pub(super) struct KeyIndex {
    /// Entry position + 1; 0 marks a free slot. The length is 0 or a power of two.
    slots: Vec<u32>,
}

impl KeyIndex {
    /// Lists up to this many members are searched linearly.
    const LINEAR: usize = 8;

    pub(super) fn hash(key: &str) -> usize {
        // FNV-1a: keys are short, and the index only has to spread them, not resist attack:
        // a collision costs one more key comparison, still bounded by the member limit.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in key.as_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        // Truncation is fine: only the low bits select a slot.
        h as usize
    }

    pub(super) fn find(&self, entries: &[BaggageEntry], key: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return entries.iter().position(|e| e.key() == key);
        }
        let mask = self.slots.len() - 1;
        let mut slot = Self::hash(key) & mask;
        loop {
            let position = usize::try_from(*self.slots.get(slot)?)
                .ok()?
                .checked_sub(1)?;
            if entries.get(position).is_some_and(|e| e.key() == key) {
                return Some(position);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Records that `entries` just gained its last member.
    pub(super) fn pushed(&mut self, entries: &[BaggageEntry]) {
        let len = entries.len();
        if len <= Self::LINEAR {
            return;
        }
        if self.slots.len() < 2 * len {
            self.slots.clear();
            self.slots.resize((2 * len).next_power_of_two().max(32), 0);
            for i in 0..len {
                self.insert(entries, i);
            }
        } else {
            self.insert(entries, len - 1);
        }
    }

    fn insert(&mut self, entries: &[BaggageEntry], position: usize) {
        let (Some(entry), Ok(stored)) = (entries.get(position), u32::try_from(position + 1)) else {
            return;
        };
        let mask = self.slots.len() - 1;
        let mut slot = Self::hash(entry.key()) & mask;
        while let Some(occupied) = self.slots.get_mut(slot) {
            if *occupied == 0 {
                *occupied = stored;
                return;
            }
            slot = (slot + 1) & mask;
        }
    }
}
