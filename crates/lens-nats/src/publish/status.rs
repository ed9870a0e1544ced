//! How a publish, request or JetStream publish ended: the status recorded on its span.

use async_nats::jetstream::context::PublishErrorKind as JetStreamErrorKind;
use async_nats::{PublishErrorKind, RequestErrorKind};
use lens_span::messaging::OperationStatus;

pub(crate) fn failed_status(
    error_type: &'static str,
    error: &dyn std::fmt::Display,
) -> OperationStatus {
    OperationStatus::Failed {
        error_type: error_type.into(),
        description: error.to_string(),
    }
}

/// How a core NATS publish ended.
pub(super) fn publish_status(result: &Result<(), async_nats::PublishError>) -> OperationStatus {
    match result {
        Ok(()) => OperationStatus::Ok,
        Err(e) => failed_status(publish_error_type(e.kind()), e),
    }
}

pub(super) fn publish_error_type(kind: PublishErrorKind) -> &'static str {
    match kind {
        PublishErrorKind::MaxPayloadExceeded => "max_payload_exceeded",
        PublishErrorKind::InvalidSubject => "invalid_subject",
        PublishErrorKind::Send => "send",
    }
}

pub(super) fn request_error_type(kind: RequestErrorKind) -> &'static str {
    match kind {
        RequestErrorKind::TimedOut => "timed_out",
        RequestErrorKind::NoResponders => "no_responders",
        RequestErrorKind::InvalidSubject => "invalid_subject",
        RequestErrorKind::MaxPayloadExceeded => "max_payload_exceeded",
        RequestErrorKind::Other => "_OTHER",
    }
}

pub(super) fn jetstream_error_type(kind: JetStreamErrorKind) -> &'static str {
    match kind {
        JetStreamErrorKind::StreamNotFound => "stream_not_found",
        JetStreamErrorKind::WrongLastMessageId => "wrong_last_message_id",
        JetStreamErrorKind::WrongLastSequence => "wrong_last_sequence",
        JetStreamErrorKind::TimedOut => "timed_out",
        JetStreamErrorKind::BrokenPipe => "broken_pipe",
        JetStreamErrorKind::MaxAckPending => "max_ack_pending",
        JetStreamErrorKind::MaxPayloadExceeded => "max_payload_exceeded",
        JetStreamErrorKind::Other => "_OTHER",
    }
}
