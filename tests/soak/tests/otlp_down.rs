//! With the OTLP collector down (connection refused) or black-holing (accepts, never answers),
//! requests still succeed, each hop with its own context, and the exporter did try to export;
//! with a healthy collector, its exports arrive. The latency comparison (at most 5% slower than
//! with the healthy collector) is a measurement: `cargo xtask soak` makes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use lens_soak::{Mode, OtlpOptions, run_otlp_faults};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_collector_fails_no_request() {
    let mut options = OtlpOptions::new(Duration::from_millis(1600), 4);
    options.round = Duration::from_millis(200);
    let report = run_otlp_faults(&options).await.unwrap();
    for mode in Mode::ALL {
        let arm = report.arm(mode).unwrap();
        assert!(arm.requests > 0, "{mode}: {arm:?}");
        assert_eq!(arm.failed, 0, "{mode}");
        assert_eq!(arm.mixups, 0, "{mode}");
    }
    for mode in Mode::FAULTS {
        let arm = report.arm(mode).unwrap();
        assert_eq!(
            arm.exports_ok, 0,
            "{mode}: an export succeeded without a collector"
        );
    }
    assert!(report.arm(Mode::Healthy).unwrap().exports_ok > 0);
    assert!(report.healthy_exports_received > 0);
    assert!(report.arm(Mode::CollectorDown).unwrap().exports_failed > 0);
    assert!(report.black_hole_connections > 0);
}
