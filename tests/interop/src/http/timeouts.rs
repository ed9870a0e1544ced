//! How long a request, a service's start and its shutdown may take.

use std::time::Duration;

pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
pub(super) const READY_TIMEOUT: Duration = Duration::from_secs(30);
pub(super) const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);
