//! Errors of the soak and fault runs.

/// Why a run could not be carried out (a failed *check* is not an error: see the reports).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SoakError {
    /// Binding or serving on loopback failed.
    #[error("loopback I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(String),
    /// The OTLP exporter could not be built.
    #[error("OTLP exporter: {0}")]
    Exporter(String),
    /// The options are out of range.
    #[error("invalid options: {0}")]
    Options(String),
}
