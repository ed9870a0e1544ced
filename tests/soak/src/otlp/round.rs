//! One round of one arm: concurrent clients for the round's time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::chain::{Outcome, RequestId, send};

/// Runs `concurrency` clients against `url` for `round`; latencies of the answered requests,
/// failures, mix-ups.
pub(super) async fn round(
    client: &reqwest::Client,
    url: &str,
    nonce: u64,
    next: &Arc<AtomicU64>,
    concurrency: usize,
    round: Duration,
) -> (Vec<u32>, u64, u64) {
    let deadline = Instant::now() + round;
    let results = Arc::new(Mutex::new((Vec::new(), 0u64, 0u64)));
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (client, url, next, results) = (
            client.clone(),
            url.to_owned(),
            Arc::clone(next),
            Arc::clone(&results),
        );
        tasks.push(tokio::spawn(async move {
            let mut local = (Vec::new(), 0u64, 0u64);
            while Instant::now() < deadline {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let start = Instant::now();
                let outcome = send(&client, &url, RequestId { nonce, index }).await;
                let micros = u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX);
                match outcome {
                    Outcome::Ok => local.0.push(micros),
                    Outcome::Failed(_) => local.1 += 1,
                    Outcome::MixedUp { .. } => local.2 += 1,
                }
            }
            let mut all = results.lock().unwrap_or_else(PoisonError::into_inner);
            all.0.extend_from_slice(&local.0);
            all.1 += local.1;
            all.2 += local.2;
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let mut all = results.lock().unwrap_or_else(PoisonError::into_inner);
    (std::mem::take(&mut all.0), all.1, all.2)
}
