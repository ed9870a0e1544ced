//! Stopping `lens watch`: the signals that stop it, and a second signal that ends a stop at
//! once.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::save::Save;
use super::store::Store;

/// Ends the process at the next signal (a second Ctrl-C or SIGTERM during a stop), once no
/// batch is being appended to the save file, saying what was accepted and left unwritten.
pub(super) async fn stop_at_once(
    mut signals: Signals,
    save: Arc<Mutex<Save>>,
    left: Arc<AtomicU64>,
    store: Store,
    tty: bool,
) {
    let again = signals.next().await;
    // Held until the exit: no append starts or is cut in the middle.
    let _save = save.lock().unwrap_or_else(PoisonError::into_inner);
    let open = store.lock().stats().spans.spans_open;
    if tty {
        let _ = writeln!(std::io::stderr());
    }
    eprintln!(
        "lens watch: stopped at once ({again} again): {} accepted spans left unwritten, {open} \
spans of open traces not shown",
        left.load(Ordering::Relaxed)
    );
    std::process::exit(match again {
        "SIGTERM" => 128 + 15,
        _ => 128 + 2,
    });
}

/// SIGINT (Ctrl-C) and, on Unix, SIGTERM (what containers and service managers send), each a
/// stream that keeps a signal that arrives between two waits.
pub(super) struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    pub(super) fn new() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next signal's name.
    pub(super) async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}
