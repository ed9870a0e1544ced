//! Recording one call: its metric state from its start to the end of its span.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use opentelemetry::{KeyValue, Value};
use opentelemetry_semantic_conventions::attribute as attr;

use super::attributes::{Attributes, Slot, active_attributes};
use super::body_bytes::{BodyBytes, Sink};
use super::kinds::Instruments;
use super::recorder::Recorder;

/// What a messaging operation records besides its duration.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum MessagingOperation {
    Send,
    Receive,
    Process,
    Other,
}

/// The request body's size, as far as it is known.
pub(super) enum RequestBytes {
    /// Not known (a client's streaming body without a length): not recorded.
    Unknown,
    /// Known when the call starts (a client's buffered body).
    Known(u64),
    /// Counted as the body is read ([`BodyBytes`]), read when the call ends.
    Counted(Arc<AtomicU64>),
}

/// What one call records when its span ends. Kept inline in the span ([`crate::LiveSpan`]):
/// nothing is allocated per call to record its metrics.
pub(crate) struct CallMetrics {
    pub(super) recorder: Arc<Recorder>,
    pub(super) start: Instant,
    pub(super) attributes: Attributes,
    /// Response body bytes sent so far (servers).
    pub(super) response_bytes: u64,
    /// Whether the response body is counted by a [`BodyBytes`] of its own (clients).
    pub(super) response_detached: bool,
    pub(super) request_bytes: RequestBytes,
    /// Messaging: how many messages the operation sent or delivered (counted when it ends).
    pub(super) messages: u64,
}

impl CallMetrics {
    /// A call starting now with the adapter's span `attributes` (before the user's hook).
    pub(crate) fn start(recorder: &Arc<Recorder>, attributes: &[KeyValue]) -> Self {
        let mut kept = Attributes::new(recorder.kind);
        for kv in attributes {
            kept.set(kv.key.as_str(), &kv.value);
        }
        if let Some(counter) = &recorder.active {
            let (kvs, n) = kept.key_values(Instruments::keeps_active);
            counter.add(1, &kvs[..n]);
        }
        CallMetrics {
            recorder: Arc::clone(recorder),
            start: Instant::now(),
            attributes: kept,
            response_bytes: 0,
            response_detached: false,
            request_bytes: RequestBytes::Unknown,
            messages: 1,
        }
    }

    /// Messaging: the operation sent or delivered `n` messages (1 unless set; 0 for a process
    /// span whose message a receive span counted).
    pub(crate) fn set_messages(&mut self, n: u64) {
        self.messages = n;
    }

    /// An attribute set on the span after it started (a status code, `error.type`).
    pub(crate) fn set(&mut self, kv: &KeyValue) {
        self.attributes.set(kv.key.as_str(), &kv.value);
    }

    /// `n` more bytes of the response body went out.
    pub(crate) fn add_body_bytes(&mut self, n: usize) {
        if self.recorder.response_size.is_some() {
            self.response_bytes = self.response_bytes.saturating_add(n as u64);
        }
    }

    /// The request body has `n` bytes (known before it is sent).
    pub(crate) fn set_request_body_size(&mut self, n: u64) {
        if self.recorder.request_size.is_some() {
            self.request_bytes = RequestBytes::Known(n);
        }
    }

    /// A counter of the request body's bytes as they are read, when its size is recorded.
    pub(crate) fn count_request_body(&mut self) -> Option<BodyBytes> {
        self.recorder.request_size.as_ref()?;
        let counter = Arc::new(AtomicU64::new(0));
        self.request_bytes = RequestBytes::Counted(Arc::clone(&counter));
        Some(BodyBytes(Sink::Shared(counter)))
    }

    /// The response body's size recorded by a counter of its own, when its body ends (a
    /// client's response outlives its span), with the call's attributes as they are now.
    pub(crate) fn count_response_body(&mut self) -> Option<BodyBytes> {
        let histogram = self.recorder.response_size.clone()?;
        self.response_detached = true;
        let (kvs, n) = self.attributes.key_values(|_| true);
        Some(BodyBytes(Sink::Record {
            histogram,
            attributes: kvs,
            len: n,
            bytes: 0,
            done: false,
        }))
    }

    /// The GenAI attributes of a data point: the operation's, then the call's `server.address`
    /// and `server.port` (clients).
    pub(super) fn gen_ai_attributes(&self, gen_ai: &crate::genai::GenAi) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(5);
        gen_ai.push_attributes(&mut attributes);
        for key in [attr::SERVER_ADDRESS, attr::SERVER_PORT] {
            if let Some(slot) = self.attributes.get(key) {
                attributes.push(KeyValue::new(key, slot.clone().into_value()));
            }
        }
        attributes
    }

    /// A GenAI call's first chunk passed `seconds` after it started.
    pub(crate) fn record_time_to_first_chunk(&self, gen_ai: &crate::genai::GenAi, seconds: f64) {
        if let Some((first, _)) = &self.recorder.gen_ai {
            first.record(seconds, &self.gen_ai_attributes(gen_ai));
        }
    }

    /// A GenAI call's stream ended complete, `seconds` per chunk after the first.
    pub(crate) fn record_time_per_chunk(&self, gen_ai: &crate::genai::GenAi, seconds: f64) {
        if let Some((_, per)) = &self.recorder.gen_ai {
            per.record(seconds, &self.gen_ai_attributes(gen_ai));
        }
    }

    /// The call ended: record its duration (and one request fewer active).
    pub(crate) fn end(mut self) {
        let elapsed = self.start.elapsed().as_secs_f64();
        if let Instruments::RpcServer(_) = self.recorder.kind {
            self.bound_rpc_method();
        }
        let recorder = &*self.recorder;
        // Messaging: which instruments the operation's type selects (read before the values
        // are moved out).
        let operation = match self.attributes.get(attr::MESSAGING_OPERATION_TYPE) {
            Some(Slot::Text(t)) => match t.as_str() {
                "process" => MessagingOperation::Process,
                "send" | "create" => MessagingOperation::Send,
                "receive" => MessagingOperation::Receive,
                _ => MessagingOperation::Other,
            },
            _ => MessagingOperation::Other,
        };
        let (kvs, n) = self.attributes.take_key_values();
        let attributes = &kvs[..n];
        match (&recorder.process_duration, operation) {
            (Some(histogram), MessagingOperation::Process) => histogram.record(elapsed, attributes),
            _ => {
                if let Some(histogram) = &recorder.duration {
                    histogram.record(elapsed, attributes);
                }
            }
        }
        let counter = match operation {
            MessagingOperation::Send => recorder.sent.as_ref(),
            MessagingOperation::Receive | MessagingOperation::Process => recorder.consumed.as_ref(),
            MessagingOperation::Other => None,
        };
        if let Some(counter) = counter
            && self.messages > 0
        {
            counter.add(self.messages, attributes);
        }
        if let Some(histogram) = &recorder.duration_ms {
            histogram.record(elapsed * 1000.0, attributes);
        }
        if let Some(histogram) = &recorder.request_size {
            let size = match &self.request_bytes {
                RequestBytes::Unknown => None,
                RequestBytes::Known(n) => Some(*n),
                RequestBytes::Counted(counter) => Some(counter.load(Ordering::Relaxed)),
            };
            if let Some(size) = size {
                histogram.record(size, attributes);
            }
        }
        if let Some(histogram) = &recorder.response_size
            && !self.response_detached
            && matches!(
                recorder.kind,
                Instruments::HttpServer | Instruments::HttpClient
            )
        {
            histogram.record(self.response_bytes, attributes);
        }
        if let Some(counter) = &recorder.active {
            // The method and the scheme are set when the call starts and never change: the
            // same series as the increment.
            let (pair, n) = active_attributes(attributes);
            counter.add(-1, &pair[..n]);
        }
    }

    /// A server answers a method it does not serve with `UNIMPLEMENTED`: its name is the
    /// caller's text, recorded as `_OTHER` (and without `rpc.service`) so that callers cannot
    /// grow the number of series.
    #[allow(deprecated)]
    pub(super) fn bound_rpc_method(&mut self) {
        let unimplemented = self.attributes.get(attr::RPC_GRPC_STATUS_CODE) == Some(&Slot::Int(12))
            || matches!(
                self.attributes.get(attr::RPC_RESPONSE_STATUS_CODE),
                Some(Slot::Text(code)) if code.as_str() == "UNIMPLEMENTED"
            );
        if !unimplemented {
            return;
        }
        if self.attributes.get(attr::RPC_METHOD).is_some() {
            self.attributes
                .set(attr::RPC_METHOD, &Value::from("_OTHER"));
        }
        self.attributes.remove(attr::RPC_SERVICE);
    }
}
