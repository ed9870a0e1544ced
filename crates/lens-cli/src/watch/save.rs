//! The --save file of `lens watch`: opened for appending (a line cut off by a killed run mended
//! first), each batch appended as one OTLP/JSON line.

use std::fs::File;
use std::io::{BufWriter, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use lens_watch::decode::Batch;

use crate::files;

/// The save file: shared with [`super::stop::stop_at_once`] during a stop.
pub(crate) type Save = Option<(PathBuf, BufWriter<File>)>;

/// Opens the --save file for appending (created if need be). A file that ends mid-line (a run
/// killed while writing) is mended first, so that the lines appended are whole and readable
/// after it: a last line that is a whole request gets its newline; one that is not (cut off) is
/// cut away, and said.
pub(crate) fn open_save(path: &Path) -> std::io::Result<BufWriter<File>> {
    let mut file = File::options()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let len = file.metadata()?.len();
    // Where the last line starts: after the last newline, searched for from the end.
    let mut start = len;
    let mut chunk = vec![0u8; 64 * 1024];
    while start > 0 {
        let at = start.saturating_sub(chunk.len() as u64);
        let chunk = &mut chunk[..(start - at) as usize];
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(chunk)?;
        if let Some(newline) = chunk.iter().rposition(|b| *b == b'\n') {
            start = at + newline as u64 + 1;
            break;
        }
        start = at;
        if len - start > files::MAX_RECORD as u64 {
            // Longer than any line read back: ended, and left for the reader to report.
            file.write_all(b"\n")?;
            return Ok(BufWriter::new(file));
        }
    }
    if start < len {
        let mut last = Vec::new();
        file.seek(SeekFrom::Start(start))?;
        (&mut file)
            .take(files::MAX_RECORD as u64 + 1)
            .read_to_end(&mut last)?;
        if lens_watch::decode::decode_json(&last).is_ok() {
            file.write_all(b"\n")?;
        } else {
            let cut = len - start;
            eprintln!(
                "warning: the --save file {} ends mid-line (a run cut off while writing): the \
{cut} bytes of that last line cannot be read and are cut away, so that what is appended reads \
back",
                path.display()
            );
            file.set_len(start)?;
        }
    }
    Ok(BufWriter::new(file))
}

/// Appends `batch` to the save file as one OTLP/JSON line: its spans (`resourceSpans`), or its
/// log records (`resourceLogs`).
pub(crate) fn append(file: &mut BufWriter<File>, batch: &Batch) -> std::io::Result<()> {
    let line = if !batch.spans.is_empty() {
        lens_watch::encode::to_json_line(&batch.spans)
    } else if !batch.logs.is_empty() {
        lens_watch::encode::logs_to_json_line(&batch.logs)
    } else {
        return Ok(());
    };
    file.write_all(line.as_bytes())?;
    file.write_all(b"\n")?;
    file.flush()
}
