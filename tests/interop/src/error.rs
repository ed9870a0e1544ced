//! The harness's errors: what stopped a scenario before its checks could run.

use std::time::Duration;

/// Why a scenario could not run to its checks.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// Starting, talking to or reading files of a process failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A JSON message or file did not have the expected shape.
    #[error("{what}: {source}")]
    Json {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    /// A Python process answered with an error, or not as the protocol says.
    #[error("python {process}: {message}")]
    Python { process: String, message: String },
    /// A Python process ended early.
    #[error("python {process} exited early ({status})")]
    Exited { process: String, status: String },
    /// Something did not happen in time.
    #[error("{what}: no answer within {} s", .after.as_secs())]
    Timeout { what: String, after: Duration },
    /// An HTTP request of the harness failed.
    #[error("{what}: {message}")]
    Http { what: String, message: String },
    /// The NATS side of the harness (its server, client, streams) failed.
    #[error("{what}: {message}")]
    Nats { what: String, message: String },
    /// A ZeroMQ socket of the harness failed (the `zeromq` scenario).
    #[error("{what}: {message}")]
    Zmq { what: String, message: String },
    /// nginx (the `doctor` scenario's load balancer) is missing or did not start.
    #[error("nginx: {message}")]
    Nginx { message: String },
    /// A context description could not be built into a Rust Context.
    #[error("context {what}: {message}")]
    Context { what: String, message: String },
}

impl Error {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }

    pub(crate) fn json(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> Error {
        let what = what.into();
        move |source| Error::Json { what, source }
    }

    pub(crate) fn nats<E: std::fmt::Display>(what: impl Into<String>) -> impl FnOnce(E) -> Error {
        let what = what.into();
        move |e| Error::Nats {
            what,
            message: e.to_string(),
        }
    }

    pub(crate) fn zmq<E: std::fmt::Display>(what: impl Into<String>) -> impl FnOnce(E) -> Error {
        let what = what.into();
        move |e| Error::Zmq {
            what,
            message: e.to_string(),
        }
    }

    pub(crate) fn http<E: std::fmt::Display>(what: impl Into<String>) -> impl FnOnce(E) -> Error {
        let what = what.into();
        move |e| Error::Http {
            what,
            message: e.to_string(),
        }
    }
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
