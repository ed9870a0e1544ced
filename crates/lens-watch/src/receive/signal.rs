//! What a request exports, traces or logs, and what differs between them: the decoder, the
//! count of what it rejected, and the answer.

use crate::decode::Batch;

/// What a request exports: one receiver serves each, by the same code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Signal {
    Traces,
    Logs,
}

impl Signal {
    /// Decodes a request body, protobuf or JSON.
    pub(super) fn decode(
        self,
        bytes: &[u8],
        json: bool,
    ) -> Result<Batch, crate::decode::DecodeError> {
        use crate::decode::{decode_json, decode_logs_json, decode_logs_protobuf, decode_protobuf};
        match (self, json) {
            (Signal::Traces, false) => decode_protobuf(bytes),
            (Signal::Traces, true) => decode_json(bytes),
            (Signal::Logs, false) => decode_logs_protobuf(bytes),
            (Signal::Logs, true) => decode_logs_json(bytes),
        }
    }

    /// What was rejected, and the JSON name of its count in a partial success.
    pub(super) fn rejected(self, batch: &Batch) -> (u64, &'static str) {
        match self {
            Signal::Traces => (batch.rejected, "rejectedSpans"),
            Signal::Logs => (batch.rejected_logs, "rejectedLogRecords"),
        }
    }

    /// The export response for `batch` as protobuf: a partial success when something was
    /// rejected.
    pub(super) fn response(self, batch: &Batch) -> bytes::Bytes {
        use opentelemetry_proto::tonic::collector::{logs::v1 as logs, trace::v1 as trace};
        use prost::Message as _;
        let (rejected, _) = self.rejected(batch);
        let rejected = (rejected > 0).then(|| {
            (
                i64::try_from(rejected).unwrap_or(i64::MAX),
                batch.error.clone().unwrap_or_default(),
            )
        });
        match self {
            Signal::Traces => trace::ExportTraceServiceResponse {
                partial_success: rejected.map(|(rejected_spans, error_message)| {
                    trace::ExportTracePartialSuccess {
                        rejected_spans,
                        error_message,
                    }
                }),
            }
            .encode_to_vec(),
            Signal::Logs => logs::ExportLogsServiceResponse {
                partial_success: rejected.map(|(rejected_log_records, error_message)| {
                    logs::ExportLogsPartialSuccess {
                        rejected_log_records,
                        error_message,
                    }
                }),
            }
            .encode_to_vec(),
        }
        .into()
    }

    /// The export response for `batch` as OTLP/JSON.
    pub(super) fn json_response(self, batch: &Batch) -> Vec<u8> {
        match self.rejected(batch) {
            (0, _) => b"{}".to_vec(),
            (rejected, name) => serde_json::json!({ "partialSuccess": {
                name: rejected.to_string(),
                "errorMessage": batch.error.clone().unwrap_or_default(),
            } })
            .to_string()
            .into_bytes(),
        }
    }
}
