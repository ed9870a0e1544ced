//! The Python service (tests/interop/python/service.py), started and ready.

use std::path::Path;
use std::time::{Duration, Instant};

use super::otlp_export::OtlpTargets;
use super::timeouts::READY_TIMEOUT;
use crate::check::Checks;
use crate::error::{Error, Result};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, SpanRecord};

/// tests/interop/python/service.py, running and ready; its spans go to `<out>/python-spans.json`.
pub(crate) struct PythonService {
    pub(super) process: PythonProcess,
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    pub(super) spans: std::path::PathBuf,
}

impl PythonService {
    /// Starts service.py (calling the Rust service at `rust_url`; with `otlp`, also exporting
    /// there) and waits until it answers `GET /health`.
    pub(crate) async fn start(
        python: &Path,
        scripts: &Path,
        rust_url: &str,
        out: &Path,
        otlp: Option<&OtlpTargets>,
        client: &reqwest::Client,
    ) -> Result<Self> {
        Self::start_with(python, scripts, rust_url, out, otlp, client, &[]).await
    }

    /// [`PythonService::start`] with `extra` arguments for service.py.
    pub(crate) async fn start_with(
        python: &Path,
        scripts: &Path,
        rust_url: &str,
        out: &Path,
        otlp: Option<&OtlpTargets>,
        client: &reqwest::Client,
        extra: &[&str],
    ) -> Result<Self> {
        let spans = out.join("python-spans.json");
        let mut args = vec![
            "--rust-url".to_owned(),
            rust_url.to_owned(),
            "--spans".to_owned(),
            spans.to_string_lossy().into_owned(),
        ];
        if let Some(otlp) = otlp {
            args.extend([
                "--otlp-protocol".to_owned(),
                otlp.python.0.to_owned(),
                "--otlp-endpoint".to_owned(),
                otlp.python.1.clone(),
            ]);
        }
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let mut process = PythonProcess::spawn(python, &scripts.join("service.py"), args)?;
        let port = tokio::task::block_in_place(|| process.read_tagged("LISTENING", START_TIMEOUT))?;
        let url = format!("http://127.0.0.1:{port}");
        wait_ready(client, &url).await?;
        Ok(PythonService {
            process,
            url,
            spans,
        })
    }

    /// Stops the service: it flushes every span (and exports them) and writes them; those spans.
    pub(crate) fn stop(mut self, checks: &mut Checks) -> Result<Vec<SpanRecord>> {
        tokio::task::block_in_place(|| {
            self.process.close_stdin();
            let count = self.process.read_tagged("SPANS", START_TIMEOUT)?;
            self.process.finish()?;
            let spans = spans::read_python(&self.spans)?;
            checks.eq(
                "python reports the spans it wrote",
                &count,
                &spans.len().to_string(),
            );
            Ok(spans)
        })
    }
}

/// Polls `GET /health` until it answers 200 (bounded).
pub(super) async fn wait_ready(client: &reqwest::Client, base: &str) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let ok = client
            .get(format!("{base}/health"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ok {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: format!("{base}/health"),
                after: READY_TIMEOUT,
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
