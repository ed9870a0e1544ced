//! How a messaging operation ended ([`OperationStatus`]) and what its default classifier
//! ([`MessagingErrors`]) makes of it.

use std::borrow::Cow;

use crate::classify::{Classify, Outcome};

/// What the classifier of a messaging adapter sees: how an operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperationStatus {
    /// The operation succeeded (a publish acknowledged, a settlement sent).
    Ok,
    /// The operation failed; `error_type` is the adapter's low-cardinality name for why.
    Failed {
        /// The `error.type` of the failure.
        error_type: Cow<'static, str>,
        /// A description for the span status.
        description: String,
    },
}

/// The default classifier of messaging operations: a failed operation is an error, nothing
/// else is.
#[derive(Clone, Copy, Debug, Default)]
pub struct MessagingErrors;

impl Classify<OperationStatus> for MessagingErrors {
    fn classify(&self, status: &OperationStatus) -> Outcome {
        match status {
            OperationStatus::Ok => Outcome::Success,
            OperationStatus::Failed {
                error_type,
                description,
            } => Outcome::failure(error_type.clone(), description.clone()),
        }
    }
}
