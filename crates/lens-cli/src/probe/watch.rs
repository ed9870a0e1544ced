//! `lens probe --watch URL`: the spans of the probe's request read from a running `lens watch`
//! instead of a receiver of the probe's own. The probe's own span goes to it as any exporter's
//! would (`POST /v1/traces`, OTLP/JSON); then the probe follows its trace there
//! (`GET /api/traces/{id}/paired`: complete or not, and the new roots the doctor paired with
//! its lost hops) until every trace of the route is complete and nothing has changed for
//! `--quiet-for`, and reads each one (`GET /api/traces/{id}/otlp`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lens_watch::decode::{Batch, decode_json};
use lens_watch::encode;
use lens_watch::model::{Span, TraceId};
use serde_json::Value;

/// How often the probe asks `lens watch` how its traces stand.
const POLL: Duration = Duration::from_millis(200);

/// The most traces followed (the probe's and the new roots of lost hops).
const MAX_TRACES: usize = 16;

/// A running `lens watch`.
#[derive(Debug)]
pub(super) struct Watch {
    client: reqwest::Client,
    base: String,
}

/// What `lens watch` holds of one trace: (spans, complete).
type State = BTreeMap<TraceId, (u64, bool)>;

impl Watch {
    /// The `lens watch` at `base`, once it answers `GET /api/status`.
    pub(super) async fn connect(base: &str, timeout: Duration) -> Result<Watch, String> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| e.to_string())?;
        let watch = Watch {
            client,
            base: base.to_owned(),
        };
        watch
            .get("/api/status")
            .await
            .map_err(|e| format!("no lens watch answers at {base}: {e}"))?;
        Ok(watch)
    }

    async fn get(&self, path: &str) -> Result<reqwest::Response, String> {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(format!("GET {path}: {}", response.status()))
        }
    }

    /// Sends the probe's own span, then follows trace `trace_id` and the new roots paired with
    /// it until all are complete and quiet for `quiet_for`, or `deadline`; returns their spans.
    pub(super) async fn collect(
        &self,
        trace_id: TraceId,
        own: Span,
        quiet_for: Duration,
        deadline: Instant,
    ) -> Result<Vec<Batch>, String> {
        let exported = self
            .client
            .post(format!("{}/v1/traces", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(encode::to_json_line(&[own]))
            .send()
            .await
            .map_err(|e| format!("sending the probe's span to lens watch: {e}"))?;
        if !exported.status().is_success() {
            return Err(format!(
                "lens watch refused the probe's span: {}",
                exported.status()
            ));
        }
        let mut last: Option<State> = None;
        let mut changed = Instant::now();
        let state = loop {
            let state = self.state(trace_id).await?;
            let now = Instant::now();
            if last.as_ref() != Some(&state) {
                changed = now;
            }
            let settled = state.values().all(|(_, complete)| *complete)
                && now.duration_since(changed) >= quiet_for;
            if settled || now >= deadline {
                break state;
            }
            last = Some(state);
            tokio::time::sleep(POLL.min(deadline.saturating_duration_since(now))).await;
        };
        let mut batches = Vec::new();
        for (id, (spans, _)) in state {
            if spans == 0 {
                continue;
            }
            let line = self
                .get(&format!("/api/traces/{id}/otlp"))
                .await?
                .bytes()
                .await
                .map_err(|e| e.to_string())?;
            batches.push(
                decode_json(line.trim_ascii())
                    .map_err(|e| format!("lens watch's trace {id}: {e}"))?,
            );
        }
        Ok(batches)
    }

    /// The probe's trace and the new roots paired with it, each as `lens watch` holds it.
    async fn state(&self, trace_id: TraceId) -> Result<State, String> {
        let mut state = State::new();
        let mut queue = vec![trace_id];
        while let Some(id) = queue.pop() {
            if state.contains_key(&id) || state.len() >= MAX_TRACES {
                continue;
            }
            let answer: Value = self
                .get(&format!("/api/traces/{id}/paired"))
                .await?
                .json()
                .await
                .map_err(|e| e.to_string())?;
            let of = |v: &Value| (v["spans"].as_u64().unwrap_or(0), v["complete"] == true);
            state.insert(id, of(&answer));
            for paired in answer["paired"].as_array().into_iter().flatten() {
                if let Some(next) = paired["trace_id"].as_str().and_then(TraceId::from_hex) {
                    queue.push(next);
                }
            }
        }
        Ok(state)
    }
}
