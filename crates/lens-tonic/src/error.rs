//! Errors of lens-tonic.

/// What can go wrong in lens-tonic. Propagation itself never fails: malformed metadata is
/// ignored as docs/propagation-rules.md says.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A message could not be encoded as JSON ([`crate::JsonCodec`]).
    #[error("encoding a gRPC message as JSON failed: {0}")]
    JsonEncode(#[source] serde_json::Error),
    /// A message was not the JSON expected ([`crate::JsonCodec`]).
    #[error("decoding a gRPC JSON message failed: {0}")]
    JsonDecode(#[source] serde_json::Error),
}

impl From<Error> for tonic::Status {
    /// Encoding errors are `INTERNAL`, decoding errors `INVALID_ARGUMENT`.
    fn from(e: Error) -> Self {
        match e {
            Error::JsonEncode(_) => tonic::Status::internal(e.to_string()),
            Error::JsonDecode(_) => tonic::Status::invalid_argument(e.to_string()),
        }
    }
}
