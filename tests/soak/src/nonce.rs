//! A run's nonce, which tells its trace ids from another run's.

/// A run's nonce: the high half of its trace ids (never zero, so that no trace id is all zeros).
pub(crate) fn nonce() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    RandomState::new().hash_one(time) | 1
}
