//! Where receivers deliver what they decoded.

use crate::decode::Batch;

/// Where receivers deliver decoded requests.
pub type Sender = tokio::sync::mpsc::Sender<Batch>;
