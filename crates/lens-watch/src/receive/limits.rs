//! The sizes a receiver goes by: the largest body it takes, and the size from which it
//! decompresses and decodes on a blocking thread.

/// The largest request body accepted, compressed or not: 20 MiB.
pub const MAX_BODY: usize = 20 * 1024 * 1024;

/// Bodies larger than this are decompressed and decoded on a blocking thread.
const BLOCKING_THRESHOLD: usize = 64 * 1024;

/// `work`, on a blocking thread when it takes a body of `len` bytes over [`BLOCKING_THRESHOLD`]
/// (decompressing and decoding a large body takes milliseconds: off the async workers, which
/// also measurably shortens what a sender waits for: `cargo xtask bench watch`), else here.
pub(super) async fn off_the_workers<T: Send + 'static>(
    len: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    if len > BLOCKING_THRESHOLD {
        tokio::task::spawn_blocking(work).await
    } else {
        Ok(work())
    }
}
