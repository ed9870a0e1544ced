//! How a task fails, and the exit status each way gets.

pub(crate) enum Failure {
    /// Bad command line: the message, then the usage text to show; exit 2.
    Usage(String, &'static str),
    /// A task failed: exit 1.
    Step(String),
    /// A task failed with an exit status of its own (e.g. the W3C harness's): exit with it.
    Status(u8, String),
}

pub(crate) type Result<T = (), E = Failure> = std::result::Result<T, E>;
