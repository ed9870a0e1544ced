//! The values lens-zmq's spans record under names of their own.

/// `messaging.system` of every span lens-zmq makes. The conventions register no value for
/// ZeroMQ; lens uses the project's own name, lowercase, as the registered values are
/// (`rabbitmq`, `kafka`) and as the `zmq` / `zeromq` libraries are named.
pub const SYSTEM: &str = "zeromq";
