//! Which header a value of `lens inspect` is read as: by `--as`, by a header name, by the
//! traceparent shape, or (between tracestate and baggage) by its content.

use std::fmt::Write as _;

use lens_core::Limits;
use lens_core::baggage::BaggageList;
use lens_core::lexical::{is_token, trim_ows};
use lens_core::tracestate::TraceStateList;

use super::headers::{Kind, baggage, traceparent, tracestate};
use super::inspection::{Inspection, shown};

/// A command-line mistake: reported as a usage error, exit 2.
pub(super) struct Usage(pub(super) String);

/// How the kind of the values was decided.
enum Decided {
    /// By `--as` or a header name.
    Explicit,
    /// By the traceparent shape.
    Shape,
    /// By content, between tracestate and baggage.
    Content,
}

/// Inspects the lines of one header.
pub(super) fn inspect_header(
    values: &[&str],
    forced: Option<Kind>,
    plus_as_space: bool,
) -> Result<Inspection, Usage> {
    let limits = Limits::default();
    let mut lines: Vec<&str> = Vec::with_capacity(values.len());
    let mut kind = forced;
    let mut decided = Decided::Explicit;
    for value in values {
        let (line_kind, line) = classify(value, forced)?;
        lines.push(line);
        match (kind, line_kind) {
            (_, None) => {}
            (None, Some(k)) => {
                kind = Some(k);
                decided = if forced.is_none() && split_header(value).is_none() {
                    Decided::Shape
                } else {
                    Decided::Explicit
                };
            }
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                return Err(Usage(format!(
                    "the values are lines of different headers ({} and {}); inspect them separately",
                    a.name(),
                    b.name()
                )));
            }
        }
    }
    let kind = match kind {
        Some(kind) => kind,
        None => {
            decided = Decided::Content;
            detect_list_kind(&lines, &limits, plus_as_space)
        }
    };

    let mut inspection = Inspection::new(kind.name(), &lines);
    for line in &lines {
        let _ = writeln!(inspection.text, "{}: {}", kind.name(), shown(line));
    }
    match decided {
        Decided::Explicit => {}
        Decided::Shape => {
            inspection.read_as = Some("shape");
            let _ = writeln!(
                inspection.text,
                "(read as traceparent by its shape; use --as to read it as another kind)"
            );
        }
        Decided::Content => {
            inspection.read_as = Some("content");
            let other = if kind == Kind::Baggage {
                Kind::TraceState
            } else {
                Kind::Baggage
            };
            let _ = writeln!(
                inspection.text,
                "(read as {} by its content; use --as {} to read it as {})",
                kind.name(),
                other.name(),
                other.name()
            );
        }
    }
    match kind {
        Kind::TraceParent => traceparent(&mut inspection, &lines, &limits),
        Kind::TraceState => tracestate(&mut inspection, &lines, &limits),
        Kind::Baggage => baggage(&mut inspection, &lines, &limits, plus_as_space),
    }
    Ok(inspection)
}

/// Splits a `name: value` header line; `None` when `line` does not start with an HTTP token
/// followed by `:`.
pub(super) fn split_header(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once(':')?;
    is_token(name).then_some((name, value))
}

/// Whether `value` looks like a traceparent: two letters or digits, `-`, a hex digit, only hex
/// digits and dashes up to the first other character, and no `=` anywhere.
fn traceparent_shaped(value: &str) -> bool {
    let bytes = trim_ows(value).as_bytes();
    bytes.len() >= 4
        && bytes[0].is_ascii_alphanumeric()
        && bytes[1].is_ascii_alphanumeric()
        && bytes[2] == b'-'
        && bytes[3].is_ascii_hexdigit()
        && !bytes.contains(&b'=')
}

/// The kind of one value (when it shows one) and the header value proper.
fn classify(value: &str, forced: Option<Kind>) -> Result<(Option<Kind>, &str), Usage> {
    let header = split_header(value).and_then(|(name, rest)| Some((Kind::from_name(name)?, rest)));
    if let Some((named, rest)) = header {
        return match forced {
            Some(forced) if forced != named => Err(Usage(format!(
                "`--as {}` given for a {} header line",
                forced.name(),
                named.name()
            ))),
            _ => Ok((Some(named), rest)),
        };
    }
    if forced.is_some() {
        return Ok((forced, value));
    }
    if traceparent_shaped(value) {
        return Ok((Some(Kind::TraceParent), value));
    }
    if let Some((name, _)) = split_header(value) {
        return Err(Usage(format!(
            "unknown header `{name}` (lens inspects traceparent, tracestate and baggage; \
             use --as KIND to read the whole value as one of them)"
        )));
    }
    if trim_ows(value).is_empty() {
        return Err(Usage(
            "empty VALUE: give --as KIND to inspect an empty header".into(),
        ));
    }
    Ok((None, value))
}

/// Tracestate or baggage, decided by content: key characters only one of the two grammars
/// allows decide first, then which of the two parses without complaint; baggage when both
/// (or neither) do.
fn detect_list_kind(lines: &[&str], limits: &Limits, plus_as_space: bool) -> Kind {
    let (mut tracestate_signs, mut baggage_signs) = (0usize, 0usize);
    for member in lines.iter().flat_map(|line| line.split(',')) {
        let member = trim_ows(member);
        if member.is_empty() {
            continue;
        }
        if member.contains([';', '%']) {
            baggage_signs += 1;
        }
        let key = trim_ows(member.split_once('=').map_or(member, |(k, _)| k));
        if key.contains(['@', '/']) {
            tracestate_signs += 1;
        }
        if key
            .bytes()
            .any(|b| b.is_ascii_uppercase() || b"!#$%&'+.^`|~".contains(&b))
        {
            baggage_signs += 1;
        }
    }
    match (tracestate_signs > 0, baggage_signs > 0) {
        (true, false) => return Kind::TraceState,
        (false, true) => return Kind::Baggage,
        _ => {}
    }
    let tracestate_valid = TraceStateList::parse(lines.iter().copied(), limits).is_ok();
    let mut baggage_clean = true;
    let list = BaggageList::parse_reporting(lines.iter().copied(), limits, plus_as_space, |_| {
        baggage_clean = false;
    });
    baggage_clean &= !list.is_empty();
    if tracestate_valid && !baggage_clean {
        Kind::TraceState
    } else {
        Kind::Baggage
    }
}
