//! One arm: its provider, chain and counters.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

use super::exporter::{Counted, otlp_exporter};
use super::mode::Mode;
use super::options::OtlpOptions;
use super::report::RoundStats;
use crate::chain::Chain;
use crate::error::SoakError;

/// One arm: its provider, chain and counters.
pub(super) struct Arm {
    pub(super) mode: Mode,
    pub(super) provider: SdkTracerProvider,
    pub(super) chain: Chain,
    pub(super) exports_ok: Arc<AtomicU64>,
    pub(super) exports_failed: Arc<AtomicU64>,
    pub(super) latencies_us: Vec<u32>,
    pub(super) rounds: Vec<Option<RoundStats>>,
    pub(super) failed: u64,
    pub(super) mixups: u64,
}

pub(super) async fn arm(
    mode: Mode,
    target: Option<SocketAddr>,
    options: &OtlpOptions,
) -> Result<Arm, SoakError> {
    let exports_ok = Arc::new(AtomicU64::new(0));
    let exports_failed = Arc::new(AtomicU64::new(0));
    let provider = match target {
        None => SdkTracerProvider::builder().build(),
        Some(addr) => {
            let exporter = Counted {
                inner: otlp_exporter(addr, options.export_timeout)?,
                ok: Arc::clone(&exports_ok),
                failed: Arc::clone(&exports_failed),
            };
            // The SDK's defaults (queue 2048, batches of 512) but a short delay, so that
            // exports are attempted throughout the short rounds.
            let config = BatchConfigBuilder::default()
                .with_scheduled_delay(Duration::from_millis(200))
                .build();
            SdkTracerProvider::builder()
                .with_span_processor(
                    BatchSpanProcessor::builder(exporter)
                        .with_batch_config(config)
                        .build(),
                )
                .build()
        }
    };
    let chain = Chain::start(provider.tracer("lens-soak")).await?;
    Ok(Arm {
        mode,
        provider,
        chain,
        exports_ok,
        exports_failed,
        latencies_us: Vec::new(),
        rounds: Vec::new(),
        failed: 0,
        mixups: 0,
    })
}
