//! The session of `lens watch`, shared by its one writer (the task that takes the batches), the
//! terminal, the page's readers and a stop.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lens_watch::session::Session;

/// The session, shared by its one writer (the task that takes the batches) and the page's
/// readers.
#[derive(Clone, Debug)]
pub(crate) struct Store(Arc<Mutex<Session>>);

impl Store {
    /// A store holding `session`.
    pub(crate) fn new(session: Session) -> Self {
        Self(Arc::new(Mutex::new(session)))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Session> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
