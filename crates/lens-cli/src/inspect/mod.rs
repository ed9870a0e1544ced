//! `lens inspect`: decode traceparent, tracestate and baggage values and explain rejections.
//!
//! Every value is read by lens-core's own parsers; this module only decides which parser a
//! value goes to and presents what the parser says (as text, or one JSON object per value).
//!
//! Here: the command, its arguments and standard input. [`classify`] decides which header a
//! value is, [`headers`] reads the three header values, [`nccl`] NCCL bytes and frames, and
//! [`inspection`] is what each gives back.

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;

use lens_core::lexical::trim_ows;

mod classify;
mod headers;
mod inspection;
mod nccl;

use classify::{Usage, inspect_header, split_header};
use headers::Kind;
use inspection::{Inspection, plural, shown};

/// `lens inspect`: decode and check traceparent, tracestate, baggage and NCCL context values.
///
/// Prints each field of every value; for anything rejected, the rule of docs/propagation-rules.md that rejects it.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Decodes a traceparent, tracestate or baggage header value and prints each \
field; for anything rejected, prints the rule of docs/propagation-rules.md that rejects it.

VALUE is a header value (`00-4bf9...-01`) or a header line (`baggage: user=alice`; the name is \
case-insensitive). Several VALUEs are several lines of one header, read as lens reads them \
(traceparent lines must agree; tracestate and baggage lines form one list).

`-` reads standard input, one value or header line per line: a dump of request headers can be \
piped in. Lines of each of the three headers are read together as one header; each line without \
a header name is a value of its own; other headers and request or status lines are skipped.

Without a header name or --as, a value shaped like a traceparent (two characters, `-`, then hex \
digits and dashes, no `=`) is read as a traceparent; otherwise the content decides between \
tracestate and baggage.

NCCL context bytes (NeMo Lens `serialize_context()`, lens-nccl) are read too: JSON text \
(`{\"traceparent\": ...}`), or base64 of that JSON or of a lens-nccl context frame. The frame's \
header and checksum are checked, then the JSON carrier, then each header in it.",
    mut_arg("json", |a| a.help(
        "Print one JSON object per value (kind, valid, fields, rejections with their rule, what \
would be sent), one per line"
    )),
    after_help = "Exit status: 0 valid, 1 invalid (something was rejected or dropped), 2 usage error."
)]
pub(crate) struct Args {
    /// Header values or `name: value` header lines; `-` reads them from standard input
    #[arg(value_name = "VALUE", required = true)]
    values: Vec<String>,

    /// Read the values as KIND (case-insensitive)
    #[arg(long = "as", value_name = "KIND", value_enum, ignore_case = true)]
    kind: Option<KindArg>,

    /// Baggage: decode `+` in values as a space (Python senders; docs/propagation-rules.md#baggage)
    #[arg(long)]
    plus_as_space: bool,

    #[command(flatten)]
    json: crate::flags::JsonFlag,
}

/// The kinds `--as` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum KindArg {
    /// A traceparent header value
    Traceparent,
    /// A tracestate header value
    Tracestate,
    /// A baggage header value
    Baggage,
    /// NCCL context bytes: JSON text, or base64 of it or of a lens-nccl context frame
    Nccl,
}

impl KindArg {
    /// The header kind, `None` for NCCL bytes.
    fn header(self) -> Option<Kind> {
        match self {
            KindArg::Traceparent => Some(Kind::TraceParent),
            KindArg::Tracestate => Some(Kind::TraceState),
            KindArg::Baggage => Some(Kind::Baggage),
            KindArg::Nccl => None,
        }
    }
}

/// Runs `lens inspect`.
pub(crate) fn main(args: Args) -> ExitCode {
    let plus_as_space = args.plus_as_space;
    let inspections = match args.values.as_slice() {
        [dash] if dash == "-" => match read_stdin() {
            Ok(lines) => inspect_stdin(&lines, args.kind, plus_as_space),
            Err(message) => Err(Usage(message)),
        },
        values if values.iter().any(|v| v == "-") => Err(Usage(
            "`-` (read standard input) cannot be combined with other VALUEs".into(),
        )),
        values => {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            inspect_values(&values, args.kind, plus_as_space)
        }
    };
    let inspections = match inspections {
        Ok(inspections) => inspections,
        Err(Usage(message)) => return crate::usage::usage_error("inspect", message),
    };
    let mut out = String::new();
    for (i, inspection) in inspections.iter().enumerate() {
        if args.json.json {
            match serde_json::to_string(inspection) {
                Ok(line) => out.push_str(&line),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            }
            out.push('\n');
        } else {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&inspection.text);
        }
    }
    let written = {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush())
    };
    if written.is_ok() && inspections.iter().all(|i| i.valid) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The lines of standard input, line endings removed.
fn read_stdin() -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for line in std::io::stdin().lock().split(b'\n') {
        let mut line = line.map_err(|e| format!("cannot read standard input: {e}"))?;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        // Bytes that are not UTF-8 become U+FFFD, which every parser rejects as non-ASCII.
        lines.push(String::from_utf8_lossy(&line).into_owned());
    }
    Ok(lines)
}

/// Standard input: the lines of each of the three headers are one header (in order of their
/// first line); every line without a header name is one value; anything else in a header dump
/// (other headers, the request or status line, blank lines) is skipped.
fn inspect_stdin(
    lines: &[String],
    forced: Option<KindArg>,
    plus_as_space: bool,
) -> Result<Vec<Inspection>, Usage> {
    enum Group<'a> {
        Header(Kind, Vec<&'a str>),
        Value(&'a str),
    }
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut skipped = 0usize;
    for line in lines {
        let line = line.as_str();
        if trim_ows(line).is_empty() {
            continue;
        }
        match split_header(line) {
            Some((name, _)) => match Kind::from_name(name) {
                Some(kind) => {
                    let found = groups.iter_mut().find_map(|g| match g {
                        Group::Header(k, lines) if *k == kind => Some(lines),
                        _ => None,
                    });
                    match found {
                        Some(lines) => lines.push(line),
                        None => groups.push(Group::Header(kind, vec![line])),
                    }
                }
                None => skipped += 1,
            },
            None if is_http_start_line(line) => skipped += 1,
            None => groups.push(Group::Value(line)),
        }
    }
    if skipped > 0 {
        eprintln!(
            "note: skipped {skipped} line{} of standard input that {} not a traceparent, \
             tracestate or baggage value or header",
            plural(skipped),
            if skipped == 1 { "is" } else { "are" }
        );
    }
    if groups.is_empty() {
        return Err(Usage(
            "standard input holds no traceparent, tracestate or baggage value or header".into(),
        ));
    }
    let mut inspections = Vec::new();
    for group in groups {
        match group {
            Group::Header(_, lines) => {
                inspections.extend(inspect_values(&lines, None, plus_as_space)?);
            }
            Group::Value(value) => {
                inspections.extend(inspect_values(&[value], forced, plus_as_space)?);
            }
        }
    }
    Ok(inspections)
}

/// `GET /path HTTP/1.1` or `HTTP/1.1 200 OK`: the first line of a request or response dump.
fn is_http_start_line(line: &str) -> bool {
    let mut words = line.split_ascii_whitespace();
    let first = words.next().unwrap_or("");
    let last = words.last().unwrap_or("");
    first.starts_with("HTTP/") || last.starts_with("HTTP/")
}

/// Inspects `values`, the lines of one header (or NCCL values, one inspection each).
fn inspect_values(
    values: &[&str],
    forced: Option<KindArg>,
    plus_as_space: bool,
) -> Result<Vec<Inspection>, Usage> {
    if forced == Some(KindArg::Nccl) {
        return values
            .iter()
            .map(|value| match nccl::detect(value) {
                Some(input) => Ok(nccl::inspect(&input, plus_as_space)),
                None => Err(Usage(format!(
                    "`{}` is neither JSON text nor base64 of a JSON carrier or a context frame",
                    shown(value)
                ))),
            })
            .collect();
    }
    if let ([value], None) = (values, forced)
        && let Some(input) = nccl::detect(value)
    {
        return Ok(vec![nccl::inspect(&input, plus_as_space)]);
    }
    Ok(vec![inspect_header(
        values,
        forced.and_then(KindArg::header),
        plus_as_space,
    )?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_status_lines_are_start_lines() {
        assert!(is_http_start_line("GET /v1/train HTTP/1.1"));
        assert!(is_http_start_line("HTTP/2 200"));
        assert!(!is_http_start_line("userId=alice"));
        assert!(!is_http_start_line(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
    }
}
