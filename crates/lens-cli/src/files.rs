//! The one reader of span files, for `lens check FILE...` and `lens watch --load FILE...`:
//! OTLP/JSON `ExportTraceServiceRequest`s into a lens-watch [`Session`], streamed a record at a
//! time (never the whole file in memory); a record that is an `ExportLogsServiceRequest`
//! (`{"resourceLogs": ...}`, as `lens watch --save` writes log records) gives its log records.
//!
//! What it reads, told apart by the file's first bytes (not its name):
//!
//! * lines, one request a line: what `lens watch --save` writes, and the OpenTelemetry
//!   Collector's `file` exporter with `format: json` and no compression;
//! * the same lines gzip-compressed (`gzip spans.jsonl`; several members, one after another, are
//!   one stream) or zstd-compressed (`zstd spans.jsonl`, or the Collector's file exporter with
//!   `compression: zstd` and its native-compression feature gate: one zstd stream of lines);
//! * the Collector's file exporter with `compression: zstd` as it writes by default: each
//!   request compressed on its own, preceded by its length (4 bytes, big-endian).
//!
//! Blank lines are skipped. Reading stops at the first record that is not a request, or holds a
//! span that cannot be kept, or is cut off (a file that ends mid-line), or cannot be
//! decompressed: what came before it is in the session, and [`Read::stopped`] names the file,
//! the line (or record) and what was wrong. What a command does with that is its own: `lens
//! check` exits 2, `lens watch --load` warns and goes on.

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _};
use std::time::Instant;

use lens_watch::decode::{Batch, DecodeError, decode_json, decode_logs_json};
use lens_watch::session::Session;

/// The longest record read (a line, or a request decompressed): as much as one OTLP/HTTP
/// request may hold (the receivers' limit), with room for the JSON being larger than protobuf.
pub(crate) const MAX_RECORD: usize = 4 * lens_watch::receive::MAX_BODY;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Why a file cannot be read, or where reading it stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    /// It cannot be opened (or its first bytes read).
    #[error("cannot read {file}: {source}")]
    Open {
        /// As given on the command line.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A record that is not what it should be: reading stopped before it.
    #[error("{file}:{line}: {why}")]
    Invalid {
        /// As given on the command line (`<stdin>` for `-`).
        file: String,
        /// The line, or the record of a length-prefixed file, counted from 1.
        line: u64,
        /// What is wrong with it.
        why: String,
    },
}

/// How the records of a file are laid out.
enum Records {
    /// One request a line, plain or decompressed as a stream (with the compression's name:
    /// how a failure to read on is said).
    Lines(Box<dyn BufRead>, Option<&'static str>),
    /// The Collector's length-prefixed zstd records.
    Prefixed(Box<dyn BufRead>),
}

/// A file opened for reading: its name and its records.
pub(crate) struct Source {
    name: String,
    records: Records,
}

/// What [`Source::read_into`] read.
#[derive(Debug)]
pub(crate) struct Read {
    /// The name read (`<stdin>` for `-`).
    pub(crate) name: String,
    /// Spans given to the session.
    pub(crate) spans: u64,
    /// Where reading stopped before the end, and why.
    pub(crate) stopped: Option<FileError>,
}

/// Opens `file` (`-` for standard input) and tells its layout from its first bytes.
pub(crate) fn open(file: &str) -> Result<Source, FileError> {
    let open_error = |source| FileError::Open {
        file: file.to_owned(),
        source,
    };
    let (name, mut raw): (&str, Box<dyn std::io::Read>) = if file == "-" {
        ("<stdin>", Box::new(std::io::stdin().lock()))
    } else {
        (file, Box::new(File::open(file).map_err(open_error)?))
    };
    let mut head = Vec::with_capacity(8);
    (&mut raw)
        .take(8)
        .read_to_end(&mut head)
        .map_err(open_error)?;
    let raw = BufReader::new(std::io::Cursor::new(head.clone()).chain(raw));
    let records = if head.starts_with(&GZIP_MAGIC) {
        let decoder = flate2::bufread::MultiGzDecoder::new(raw);
        Records::Lines(Box::new(BufReader::new(decoder)), Some("gzip"))
    } else if head.starts_with(&ZSTD_MAGIC) {
        let decoder = zstd::stream::read::Decoder::with_buffer(raw).map_err(open_error)?;
        Records::Lines(Box::new(BufReader::new(decoder)), Some("zstd"))
    } else if head.get(4..8) == Some(&ZSTD_MAGIC[..]) {
        Records::Prefixed(Box::new(raw))
    } else {
        Records::Lines(Box::new(raw), None)
    };
    Ok(Source {
        name: name.to_owned(),
        records,
    })
}

/// One record of a file.
enum Record {
    /// A request's bytes; `cut`: the last line, without its newline (the file may end
    /// mid-line).
    Request { cut: bool },
    /// Blank: skipped.
    Blank,
    /// The end of the file.
    End,
}

/// Why the next record cannot be read: `cannot read on: ...`.
fn cannot_read(e: std::io::Error) -> String {
    format!("cannot read on: {e}")
}

impl Records {
    /// Reads the next record into `buf`; `Err` says why it is bad.
    fn next(&mut self, buf: &mut Vec<u8>) -> Result<Record, String> {
        buf.clear();
        match self {
            Records::Lines(reader, compression) => {
                let read = reader
                    .take(MAX_RECORD as u64 + 1)
                    .read_until(b'\n', buf)
                    .map_err(|e| match compression {
                        Some(name) => format!("cannot decompress ({name}): {e}"),
                        None => cannot_read(e),
                    })?;
                if read == 0 {
                    return Ok(Record::End);
                }
                let cut = buf.last() != Some(&b'\n');
                if !cut {
                    buf.pop();
                } else if buf.len() > MAX_RECORD {
                    return Err(format!("a line longer than {MAX_RECORD} bytes"));
                }
                Ok(if buf.iter().all(u8::is_ascii_whitespace) {
                    Record::Blank
                } else {
                    Record::Request { cut }
                })
            }
            Records::Prefixed(reader) => {
                let mut length = Vec::with_capacity(4);
                reader
                    .take(4)
                    .read_to_end(&mut length)
                    .map_err(cannot_read)?;
                let length = match <[u8; 4]>::try_from(length.as_slice()) {
                    Ok(bytes) => u32::from_be_bytes(bytes) as usize,
                    Err(_) if length.is_empty() => return Ok(Record::End),
                    Err(_) => return Err("the file ends in a record's length".to_owned()),
                };
                if length > MAX_RECORD {
                    return Err(format!(
                        "a record of {length} bytes, over the limit of {MAX_RECORD}"
                    ));
                }
                let mut compressed = Vec::new();
                reader
                    .take(length as u64)
                    .read_to_end(&mut compressed)
                    .map_err(cannot_read)?;
                if compressed.len() < length {
                    return Err(format!(
                        "the file ends mid-record ({} of its {length} bytes)",
                        compressed.len()
                    ));
                }
                let decompress = |e: std::io::Error| format!("cannot decompress the record: {e}");
                zstd::stream::read::Decoder::new(compressed.as_slice())
                    .map_err(decompress)?
                    .take(MAX_RECORD as u64 + 1)
                    .read_to_end(buf)
                    .map_err(decompress)?;
                if buf.len() > MAX_RECORD {
                    return Err(format!(
                        "a record that decompresses past {MAX_RECORD} bytes"
                    ));
                }
                Ok(Record::Request { cut: false })
            }
        }
    }
}

/// A record: a trace request, or (with no span, and a `resourceLogs` key) a logs request. Only
/// a record with no span is looked at again, so reading spans costs what it did.
fn decode(record: &[u8]) -> Result<Batch, DecodeError> {
    let batch = decode_json(record)?;
    if batch.spans.is_empty() && batch.rejected == 0 && contains(record, b"\"resourceLogs\"") {
        return decode_logs_json(record);
    }
    Ok(batch)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

impl Source {
    /// Gives every span of the file to `session` (arrived at `now`), up to the first bad
    /// record.
    pub(crate) fn read_into(mut self, session: &mut Session, now: Instant) -> Read {
        let mut buf = Vec::new();
        let mut spans = 0;
        let mut line = 0;
        let stopped = loop {
            line += 1;
            let why = match self.records.next(&mut buf) {
                Ok(Record::End) => break None,
                Ok(Record::Blank) => continue,
                Ok(Record::Request { cut }) => match decode(&buf) {
                    Err(e) if cut => format!("the file ends mid-line: {e}"),
                    Err(e) => e.to_string(),
                    Ok(batch) if batch.rejected + batch.rejected_logs > 0 => format!(
                        "{} {} rejected: {}",
                        batch.rejected + batch.rejected_logs,
                        if batch.rejected > 0 {
                            "spans"
                        } else {
                            "log records"
                        },
                        batch.error.unwrap_or_default()
                    ),
                    Ok(batch) => {
                        spans += batch.spans.len() as u64;
                        session.ingest(batch, now);
                        continue;
                    }
                },
                Err(why) => why,
            };
            break Some(FileError::Invalid {
                file: self.name.clone(),
                line,
                why,
            });
        };
        Read {
            name: self.name,
            spans,
            stopped,
        }
    }
}
