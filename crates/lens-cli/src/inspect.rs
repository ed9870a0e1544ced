//! `lens inspect`: decode traceparent, tracestate and baggage values and explain rejections.
//!
//! Every value is read by lens-core's own parsers; this module only decides which parser a
//! value goes to and presents what the parser says (as text, or one JSON object per value).

use std::fmt::Write as _;
use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;

use lens_core::Limits;
use lens_core::baggage::{BaggageIssueReason, BaggageList};
use lens_core::lexical::{is_token, trim_ows};
use lens_core::traceparent::{FLAG_RANDOM, FLAG_SAMPLED, KNOWN_FLAGS, TraceParent};
use lens_core::tracestate::TraceStateList;
use serde::Serialize;
use serde_json::{Value, json};

mod nccl;

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

/// A command-line mistake: reported as a usage error, exit 2.
struct Usage(String);

/// What `lens inspect` found in one value (or in the lines of one header): the `--json` object,
/// and the text printed without `--json`.
#[derive(Debug, Serialize)]
pub(crate) struct Inspection {
    /// `traceparent`, `tracestate`, `baggage` or `nccl`.
    kind: &'static str,
    /// The value's lines as received.
    input: Vec<String>,
    /// How the kind was decided, when neither `--as` nor a header name did.
    #[serde(skip_serializing_if = "Option::is_none")]
    read_as: Option<&'static str>,
    /// Nothing was rejected or dropped.
    valid: bool,
    /// The decoded fields (members, for lists).
    fields: serde_json::Map<String, Value>,
    /// Each rejection, with the rule that rejects it.
    rejections: Vec<Rejection>,
    /// Remarks that do not make the value invalid (repeated keys, unknown flag bits).
    notes: Vec<String>,
    /// The header lens would send on; `null` when it would send none.
    sent: Option<String>,
    #[serde(skip)]
    text: String,
}

/// One thing a parser rejected.
#[derive(Debug, Serialize)]
struct Rejection {
    /// The list member dropped (tracestate and baggage members).
    #[serde(skip_serializing_if = "Option::is_none")]
    member: Option<String>,
    /// lens-core's message.
    reason: String,
    /// The rule the message cites (docs/propagation-rules.md#traceparent`).
    rule: Option<String>,
    /// What lens does about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    effect: Option<String>,
}

impl Rejection {
    fn new(member: Option<&str>, reason: String, effect: Option<&str>) -> Rejection {
        Rejection {
            member: member.map(str::to_owned),
            rule: cited_rule(&reason),
            reason,
            effect: effect.map(str::to_owned),
        }
    }
}

/// The rule a lens-core message cites: its last parenthesised docs/propagation-rules.md ...` reference.
fn cited_rule(message: &str) -> Option<String> {
    let start = message.rfind("(docs/propagation-rules.md")? + 1;
    let len = message[start..].find(')')?;
    Some(message[start..start + len].to_owned())
}

impl Inspection {
    fn new(kind: &'static str, lines: &[&str]) -> Inspection {
        Inspection {
            kind,
            input: lines.iter().map(|l| trim_ows(l).to_owned()).collect(),
            read_as: None,
            valid: true,
            fields: serde_json::Map::new(),
            rejections: Vec::new(),
            notes: Vec::new(),
            sent: None,
            text: String::new(),
        }
    }

    fn field(&mut self, name: &str, value: impl Into<Value>) {
        self.fields.insert(name.to_owned(), value.into());
    }

    fn note(&mut self, text: String) {
        let _ = writeln!(self.text, "  note: {text}");
        self.notes.push(text);
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
fn inspect_header(
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
fn split_header(line: &str) -> Option<(&str, &str)> {
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

const TRACEPARENT_EFFECT: &str = "no remote parent (a new trace starts), and the tracestate is dropped with it (docs/propagation-rules.md#traceparent)";

fn traceparent(i: &mut Inspection, lines: &[&str], limits: &Limits) {
    let parsed = TraceParent::parse_lines(lines.iter().copied(), limits.traceparent_bytes);
    let tp = match parsed {
        Ok(tp) => tp,
        Err(error) => {
            let _ = writeln!(i.text, "invalid: {error}");
            let _ = writeln!(i.text, "  effect: {TRACEPARENT_EFFECT}");
            i.valid = false;
            i.rejections.push(Rejection::new(
                None,
                error.to_string(),
                Some(TRACEPARENT_EFFECT),
            ));
            return;
        }
    };
    let _ = writeln!(i.text, "valid");
    let version_note = if tp.version == 0 {
        ""
    } else {
        " (a later version, read with the version-00 layout; lens sends version 00)"
    };
    let _ = writeln!(i.text, "  version    {:02x}{version_note}", tp.version);
    let _ = writeln!(i.text, "  trace-id   {}", tp.trace_id);
    let _ = writeln!(i.text, "  parent-id  {}", tp.parent_id);
    let mut flags = vec![if tp.is_sampled() {
        "sampled"
    } else {
        "not sampled"
    }];
    if tp.is_random() {
        flags.push("random");
    }
    let _ = writeln!(
        i.text,
        "  flags      {:02x}: {}",
        tp.flags,
        flags.join(", ")
    );
    i.field("version", format!("{:02x}", tp.version));
    i.field("trace_id", tp.trace_id.to_string());
    i.field("parent_id", tp.parent_id.to_string());
    i.field("flags", format!("{:02x}", tp.flags));
    i.field("sampled", tp.is_sampled());
    i.field("random", tp.is_random());
    let unknown = tp.flags & !KNOWN_FLAGS;
    if unknown != 0 {
        let note = format!(
            "unknown bits {unknown:02x} are sent on as 0; only sampled ({FLAG_SAMPLED:02x}) \
             and random ({FLAG_RANDOM:02x}) are kept (docs/propagation-rules.md#traceparent)"
        );
        let _ = writeln!(i.text, "             {note}");
        i.notes.push(note);
    }
    let sent = tp.to_string();
    let _ = writeln!(i.text, "  sent as    {sent}");
    i.sent = Some(sent);
}

const TRACESTATE_EFFECT: &str = "the whole tracestate is dropped; the traceparent is kept (docs/propagation-rules.md#tracestate)";

/// Members of a list as received (lines split at commas, empty members ignored).
fn received_members(lines: &[&str]) -> usize {
    lines
        .iter()
        .flat_map(|line| line.split(','))
        .filter(|member| !trim_ows(member).is_empty())
        .count()
}

fn tracestate(i: &mut Inspection, lines: &[&str], limits: &Limits) {
    let list = match TraceStateList::parse(lines.iter().copied(), limits) {
        Ok(list) => list,
        Err(error) => {
            let _ = writeln!(i.text, "invalid: {error}");
            let _ = writeln!(i.text, "  effect: {TRACESTATE_EFFECT}");
            i.valid = false;
            i.rejections.push(Rejection::new(
                None,
                error.to_string(),
                Some(TRACESTATE_EFFECT),
            ));
            return;
        }
    };
    let received = received_members(lines);
    let _ = writeln!(i.text, "valid: {} member{}", list.len(), plural(list.len()));
    let width = list.members().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut members = Vec::with_capacity(list.len());
    for (key, value) in list.members() {
        let _ = writeln!(i.text, "  {key:<width$}  {value:?}");
        members.push(json!({ "key": key, "value": value }));
    }
    i.field("members", members);
    let repeated = received.saturating_sub(list.len());
    if repeated > 0 {
        i.note(format!(
            "{repeated} repeated key{} dropped; the first (leftmost) member of a key is \
             kept (docs/propagation-rules.md#tracestate)",
            plural(repeated)
        ));
    }
    if list.is_empty() {
        let _ = writeln!(
            i.text,
            "  sent as    (no tracestate header: the list is empty, docs/propagation-rules.md#tracestate)"
        );
    } else {
        let _ = writeln!(i.text, "  sent as    {}", list.header());
        i.sent = Some(list.header().to_owned());
    }
}

fn baggage(i: &mut Inspection, lines: &[&str], limits: &Limits, plus_as_space: bool) {
    let mut issues = Vec::new();
    let mut hit_limit = false;
    let list =
        BaggageList::parse_reporting(lines.iter().copied(), limits, plus_as_space, |issue| {
            hit_limit |= matches!(
                issue.reason,
                BaggageIssueReason::TooManyMembers | BaggageIssueReason::TooLarge
            );
            issues.push(Rejection::new(
                Some(issue.member),
                issue.reason.to_string(),
                None,
            ));
        });
    let received = received_members(lines);
    if issues.is_empty() {
        let _ = writeln!(i.text, "valid: {} member{}", list.len(), plural(list.len()));
    } else if hit_limit {
        let _ = writeln!(
            i.text,
            "invalid: a limit was reached; {} of {received} member{} kept",
            list.len(),
            plural(received)
        );
    } else {
        let _ = writeln!(
            i.text,
            "invalid: {} member{} dropped; {} kept",
            issues.len(),
            plural(issues.len()),
            list.len()
        );
    }
    let width = list.iter().map(|e| e.key().len()).max().unwrap_or(0);
    let mut members = Vec::with_capacity(list.len());
    for entry in list.iter() {
        let _ = write!(i.text, "  {:<width$}  {:?}", entry.key(), entry.value());
        if !entry.properties().is_empty() {
            let _ = write!(i.text, "  properties: {}", entry.properties());
        }
        i.text.push('\n');
        members.push(json!({
            "key": entry.key(),
            "value": entry.value(),
            "properties": entry.properties(),
        }));
    }
    i.field("members", members);
    for issue in &issues {
        let _ = writeln!(
            i.text,
            "  dropped `{}`: {}",
            issue.member.as_deref().unwrap_or(""),
            issue.reason
        );
    }
    i.valid = issues.is_empty();
    i.rejections = issues;
    // After a limit, the members that follow are dropped unexamined: no duplicate count then.
    let merged = received.saturating_sub(list.len() + i.rejections.len());
    if merged > 0 && !hit_limit {
        i.note(format!(
            "{merged} repeated key{} merged; the last value wins, at the position where \
             the key first appeared (docs/propagation-rules.md#baggage)",
            plural(merged)
        ));
    }
    if list.is_empty() {
        let _ = writeln!(
            i.text,
            "  sent as    (no baggage header: nothing is left to send)"
        );
    } else {
        let _ = writeln!(i.text, "  sent as    {}", list.header());
        i.sent = Some(list.header().to_owned());
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cited_rule_is_the_last_spec_reference() {
        assert_eq!(
            cited_rule("value is 600 bytes; at most 512 (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#limits)").as_deref(),
            Some("docs/propagation-rules.md#traceparent, docs/propagation-rules.md#limits")
        );
        assert_eq!(
            cited_rule("key (a) is bad (docs/propagation-rules.md#baggage)").as_deref(),
            Some("docs/propagation-rules.md#baggage")
        );
        assert_eq!(cited_rule("no rule here"), None);
    }

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
