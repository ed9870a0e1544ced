//! A short soak (the full one is `cargo xtask soak`): under concurrent clients on a multi-thread
//! runtime, every hop sees its own request's trace id and baggage, and every span is exported
//! exactly once. Memory flatness is left to the longer run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use lens_soak::{SPANS_PER_REQUEST, SoakOptions, run_soak};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_mixups_and_no_lost_spans_under_concurrency() {
    let options = SoakOptions::new(Duration::from_secs(2), 16);
    let report = run_soak(&options).await.unwrap();
    assert!(report.requests > 10, "{report:?}");
    assert_eq!(report.failed, 0, "{:?}", report.examples);
    assert_eq!(report.mixups, 0, "{:?}", report.examples);
    assert_eq!(report.spans.exported, report.requests * SPANS_PER_REQUEST);
    assert_eq!(report.spans.incomplete_requests, 0);
    assert_eq!(report.spans.foreign, 0);
    assert_eq!(report.spans.misparented, 0);
    assert_eq!(report.spans.duplicate, 0);
    let failures: Vec<String> = report
        .failures()
        .into_iter()
        .filter(|f| !f.starts_with("resident memory"))
        .collect();
    assert!(failures.is_empty(), "{failures:?}");
}
