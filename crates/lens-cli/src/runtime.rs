//! The async runtime the networked commands (`demo`, `watch`, `probe`, `w3c-service`) run on.

/// The multi-threaded tokio runtime a command runs on; `None` (with the reason printed) when
/// it cannot start.
pub(crate) fn runtime() -> Option<tokio::runtime::Runtime> {
    // Two workers at least: `lens watch` answers a second Ctrl-C from a task of its own while
    // another is held up writing to a slow standard output.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            None
        }
    }
}
