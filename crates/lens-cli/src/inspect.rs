//! `lens inspect`: decode traceparent, tracestate and baggage values and explain rejections.

use std::fmt::Write as _;
use std::process::ExitCode;

use lens_core::Limits;
use lens_core::baggage::{BaggageIssueReason, BaggageList};
use lens_core::traceparent::{FLAG_RANDOM, FLAG_SAMPLED, KNOWN_FLAGS, TraceParent};
use lens_core::tracestate::TraceStateList;

use crate::USAGE_ERROR;

mod nccl;

const HELP: &str = "\
usage: lens inspect [--as KIND] [--plus-as-space] VALUE...

Decodes a traceparent, tracestate or baggage header value and prints each field; for anything
rejected, prints the rule of SPEC.md that rejects it.

VALUE is a header value (`00-4bf9...-01`) or a header line (`baggage: user=alice`; the name is
case-insensitive). Several VALUEs are several lines of one header, read as lens reads them
(traceparent lines must agree; tracestate and baggage lines form one list).

Without a header name or --as, a value shaped like a traceparent (two characters, `-`, then hex
digits and dashes, no `=`) is read as a traceparent; otherwise the content decides between
tracestate and baggage.

NCCL context bytes (NeMo Lens `serialize_context()`, lens-nccl) are read too: JSON text
(`{\"traceparent\": ...}`), or base64 of that JSON or of a lens-nccl context frame. The frame's
header and checksum are checked, then the JSON carrier, then each header in it.

options:
  --as KIND         read the values as KIND: traceparent, tracestate, baggage or nccl
  --plus-as-space   baggage: decode `+` in values as a space (Python senders; SPEC.md §3)
  -h, --help        print this text

exit status: 0 valid, 1 invalid (something was rejected or dropped), 2 usage error";

/// The header kinds `lens inspect` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    TraceParent,
    TraceState,
    Baggage,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::TraceParent, Kind::TraceState, Kind::Baggage];

    fn name(self) -> &'static str {
        match self {
            Kind::TraceParent => "traceparent",
            Kind::TraceState => "tracestate",
            Kind::Baggage => "baggage",
        }
    }

    /// The kind whose header name is `name` (case-insensitive).
    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }
}

/// A command-line mistake: reported with the help text, exit 2.
struct Usage(String);

struct Options {
    kind: Option<Kind>,
    plus_as_space: bool,
    values: Vec<String>,
}

/// Runs `lens inspect` with `args` (everything after `inspect`).
pub(crate) fn main(args: &[String]) -> ExitCode {
    if let Some(code) = nccl::main_if_nccl(args) {
        return code;
    }
    let result = parse_args(args).and_then(|options| match options {
        None => {
            println!("{HELP}");
            Ok(true)
        }
        Some(options) => run(&options),
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(Usage(message)) => {
            eprintln!("error: {message}\n\n{HELP}");
            ExitCode::from(USAGE_ERROR)
        }
    }
}

/// `Ok(None)` when help was asked for.
fn parse_args(args: &[String]) -> Result<Option<Options>, Usage> {
    let mut options = Options {
        kind: None,
        plus_as_space: false,
        values: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let kind_name = match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--plus-as-space" => {
                options.plus_as_space = true;
                continue;
            }
            "--" => {
                options.values.extend(args.by_ref().cloned());
                break;
            }
            "--as" => match args.next() {
                Some(name) => name.as_str(),
                None => return Err(Usage("`--as` needs a KIND".into())),
            },
            other => match other.strip_prefix("--as=") {
                Some(name) => name,
                None if other.starts_with("--") => {
                    return Err(Usage(format!("unknown option `{other}`")));
                }
                None => {
                    options.values.push(other.to_owned());
                    continue;
                }
            },
        };
        let kind = Kind::from_name(kind_name).ok_or_else(|| {
            Usage(format!(
                "unknown KIND `{kind_name}` (expected traceparent, tracestate or baggage)"
            ))
        })?;
        options.kind = Some(kind);
    }
    if options.values.is_empty() {
        return Err(Usage("no VALUE to inspect".into()));
    }
    Ok(Some(options))
}

/// How the kind of the values was decided.
enum Decided {
    /// By `--as` or a header name.
    Explicit,
    /// By the traceparent shape.
    Shape,
    /// By content, between tracestate and baggage.
    Content,
}

/// Inspects the values; `Ok(true)` when everything is valid.
fn run(options: &Options) -> Result<bool, Usage> {
    let limits = Limits::default();
    let mut lines: Vec<&str> = Vec::with_capacity(options.values.len());
    let mut kind = options.kind;
    let mut decided = Decided::Explicit;
    for value in &options.values {
        let (line_kind, line) = classify(value, options.kind)?;
        lines.push(line);
        match (kind, line_kind) {
            (_, None) => {}
            (None, Some(k)) => {
                kind = Some(k);
                decided = if options.kind.is_none() && split_header(value).is_none() {
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
            detect_list_kind(&lines, &limits, options.plus_as_space)
        }
    };

    let mut out = String::new();
    for line in &lines {
        let _ = writeln!(out, "{}: {}", kind.name(), shown(line));
    }
    match decided {
        Decided::Explicit => {}
        Decided::Shape => {
            let _ = writeln!(
                out,
                "(read as traceparent by its shape; use --as to read it as another kind)"
            );
        }
        Decided::Content => {
            let other = if kind == Kind::Baggage {
                Kind::TraceState
            } else {
                Kind::Baggage
            };
            let _ = writeln!(
                out,
                "(read as {} by its content; use --as {} to read it as {})",
                kind.name(),
                other.name(),
                other.name()
            );
        }
    }
    let valid = match kind {
        Kind::TraceParent => traceparent(&mut out, &lines, &limits),
        Kind::TraceState => tracestate(&mut out, &lines, &limits),
        Kind::Baggage => baggage(&mut out, &lines, &limits, options.plus_as_space),
    };
    print!("{out}");
    Ok(valid)
}

/// Splits a `name: value` header line; `None` when `line` does not start with an HTTP token
/// followed by `:`.
fn split_header(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once(':')?;
    let is_token = !name.is_empty() && name.bytes().all(is_tchar);
    is_token.then_some((name, value))
}

/// RFC 7230 tchar.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Spaces and tabs around a value are not part of it.
fn trim_ows(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
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

fn traceparent(out: &mut String, lines: &[&str], limits: &Limits) -> bool {
    let parsed = TraceParent::parse_lines(lines.iter().copied(), limits.traceparent_bytes);
    let tp = match parsed {
        Ok(tp) => tp,
        Err(error) => {
            let _ = writeln!(out, "invalid: {error}");
            let _ = writeln!(
                out,
                "  effect: no remote parent (a new trace starts), and the tracestate is dropped \
                 with it (SPEC §1)"
            );
            return false;
        }
    };
    let _ = writeln!(out, "valid");
    let version_note = if tp.version == 0 {
        ""
    } else {
        " (a later version, read with the version-00 layout; lens sends version 00)"
    };
    let _ = writeln!(out, "  version    {:02x}{version_note}", tp.version);
    let _ = writeln!(out, "  trace-id   {}", tp.trace_id);
    let _ = writeln!(out, "  parent-id  {}", tp.parent_id);
    let mut flags = vec![if tp.is_sampled() {
        "sampled"
    } else {
        "not sampled"
    }];
    if tp.is_random() {
        flags.push("random");
    }
    let _ = writeln!(out, "  flags      {:02x}: {}", tp.flags, flags.join(", "));
    let unknown = tp.flags & !KNOWN_FLAGS;
    if unknown != 0 {
        let _ = writeln!(
            out,
            "             unknown bits {unknown:02x} are sent on as 0; only sampled ({FLAG_SAMPLED:02x}) \
             and random ({FLAG_RANDOM:02x}) are kept (SPEC §1)"
        );
    }
    let _ = writeln!(out, "  sent as    {tp}");
    true
}

fn tracestate(out: &mut String, lines: &[&str], limits: &Limits) -> bool {
    let list = match TraceStateList::parse(lines.iter().copied(), limits) {
        Ok(list) => list,
        Err(error) => {
            let _ = writeln!(out, "invalid: {error}");
            let _ = writeln!(
                out,
                "  effect: the whole tracestate is dropped; the traceparent is kept (SPEC §2)"
            );
            return false;
        }
    };
    let received = lines
        .iter()
        .flat_map(|line| line.split(','))
        .filter(|member| !trim_ows(member).is_empty())
        .count();
    let _ = writeln!(out, "valid: {} member{}", list.len(), plural(list.len()));
    let width = list.members().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in list.members() {
        let _ = writeln!(out, "  {key:<width$}  {value:?}");
    }
    let repeated = received.saturating_sub(list.len());
    if repeated > 0 {
        let _ = writeln!(
            out,
            "  note: {repeated} repeated key{} dropped; the first (leftmost) member of a key is \
             kept (SPEC §2)",
            plural(repeated)
        );
    }
    if list.is_empty() {
        let _ = writeln!(
            out,
            "  sent as    (no tracestate header: the list is empty, SPEC §2)"
        );
    } else {
        let _ = writeln!(out, "  sent as    {}", list.header());
    }
    true
}

fn baggage(out: &mut String, lines: &[&str], limits: &Limits, plus_as_space: bool) -> bool {
    let mut issues = Vec::new();
    let mut hit_limit = false;
    let list =
        BaggageList::parse_reporting(lines.iter().copied(), limits, plus_as_space, |issue| {
            hit_limit |= matches!(
                issue.reason,
                BaggageIssueReason::TooManyMembers | BaggageIssueReason::TooLarge
            );
            issues.push(format!("  dropped `{}`: {}", issue.member, issue.reason));
        });
    let received = lines
        .iter()
        .flat_map(|line| line.split(','))
        .filter(|member| !trim_ows(member).is_empty())
        .count();
    if issues.is_empty() {
        let _ = writeln!(out, "valid: {} member{}", list.len(), plural(list.len()));
    } else if hit_limit {
        let _ = writeln!(
            out,
            "invalid: a limit was reached; {} of {received} member{} kept",
            list.len(),
            plural(received)
        );
    } else {
        let _ = writeln!(
            out,
            "invalid: {} member{} dropped; {} kept",
            issues.len(),
            plural(issues.len()),
            list.len()
        );
    }
    let width = list.iter().map(|e| e.key().len()).max().unwrap_or(0);
    for entry in list.iter() {
        let _ = write!(out, "  {:<width$}  {:?}", entry.key(), entry.value());
        if !entry.properties().is_empty() {
            let _ = write!(out, "  properties: {}", entry.properties());
        }
        out.push('\n');
    }
    for issue in &issues {
        let _ = writeln!(out, "{issue}");
    }
    // After a limit, the members that follow are dropped unexamined: no duplicate count then.
    let merged = received.saturating_sub(list.len() + issues.len());
    if merged > 0 && !hit_limit {
        let _ = writeln!(
            out,
            "  note: {merged} repeated key{} merged; the last value wins, at the position where \
             the key first appeared (SPEC §3)",
            plural(merged)
        );
    }
    if list.is_empty() {
        let _ = writeln!(
            out,
            "  sent as    (no baggage header: nothing is left to send)"
        );
    } else {
        let _ = writeln!(out, "  sent as    {}", list.header());
    }
    issues.is_empty()
}

/// A value as received, quoted and escaped; a long one cut short, with its length.
fn shown(line: &str) -> String {
    const SHOWN_CHARS: usize = 160;
    let line = trim_ows(line);
    match line.char_indices().nth(SHOWN_CHARS) {
        None => format!("{line:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &line[..cut], line.len()),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
