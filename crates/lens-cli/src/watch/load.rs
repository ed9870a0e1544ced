//! The --load files of `lens watch`: each opened once, read into the session before anything is
//! received.

use std::path::PathBuf;
use std::time::Instant;

use lens_watch::session::Session;

use crate::files::{self, Source};

/// Opens the --load files, each once (a file given twice, or by two names, is read once);
/// the message of a usage error when one cannot be opened.
pub(crate) fn open_loads(files: &[String]) -> Result<Vec<Source>, String> {
    let mut seen = Vec::new();
    let mut sources = Vec::new();
    for file in files {
        let id = std::fs::canonicalize(file).unwrap_or_else(|_| PathBuf::from(file));
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        sources.push(files::open(file).map_err(|e| format!("--load: {e}"))?);
    }
    Ok(sources)
}

/// Reads the --load files into `session`, saying on standard error how many spans each gave
/// (and, where one stopped early, one warning naming the line and what was wrong with it); the
/// spans loaded in all.
pub(crate) fn load(sources: Vec<Source>, session: &mut Session) -> u64 {
    let now = Instant::now();
    let mut spans = 0;
    for source in sources {
        let read = source.read_into(session, now);
        spans += read.spans;
        match read.stopped {
            None => eprintln!("lens watch: loaded {} spans from {}", read.spans, read.name),
            Some(e) => eprintln!(
                "warning: --load {e}; loaded the {} spans before it, not the rest of {}",
                read.spans, read.name
            ),
        }
    }
    spans
}
