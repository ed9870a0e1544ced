//! The relay service on the wire: its names, the health answer, the attribute a handler's span
//! records what it saw under, and the timeouts.

use std::time::Duration;

pub(super) const SERVICE: &str = "lens.interop.Relay";
pub(super) const UNARY: &str = "/lens.interop.Relay/Unary";
pub(super) const STREAM: &str = "/lens.interop.Relay/Stream";
pub(super) const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";
/// Where the Python health handler records what it saw (`grpc_peer.py`).
pub(super) const SEEN_ATTRIBUTE: &str = "lens_interop.seen";
/// A `HealthCheckResponse` with status SERVING, as protobuf bytes in base64.
pub(super) const SERVING_B64: &str = "CAE=";
pub(super) const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(30);
