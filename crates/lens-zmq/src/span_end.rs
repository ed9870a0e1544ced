//! How a message's span ends, on either side: its status recorded through the options'
//! responder and the messaging classifier.

use lens_span::messaging::{MessagingErrors, OperationStatus};
use lens_span::{LiveSpan, SpanOptions};

use crate::adapter::Zmq;

/// The status of a failed `send` or `process`: `error_type` a low-cardinality name for why,
/// the description the error's text.
pub(crate) fn failed(error_type: &'static str, error: &dyn std::fmt::Display) -> OperationStatus {
    OperationStatus::Failed {
        error_type: error_type.into(),
        description: error.to_string(),
    }
}

/// Records `status` on the span, when there is one, and ends it (taken: it ends once).
pub(crate) fn finish<P>(
    options: &SpanOptions<Zmq, P>,
    span: &mut Option<LiveSpan>,
    status: OperationStatus,
) {
    if let Some(mut span) = span.take() {
        options
            .responder()
            .respond(&mut span, &status, &status, &MessagingErrors);
    }
}
