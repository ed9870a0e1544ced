//! `lens check FILE...`: traces from OTLP/JSON lines (as `lens watch --save` and the
//! Collector's file exporter write them; `-` for standard input), printed as `lens watch`
//! prints them, then the propagation doctor's findings (docs/doctor.md); exit 1 on an error
//! finding (a lost hop), so that a CI job fails on one.

use std::process::ExitCode;
use std::time::Instant;

use lens_watch::diagnose::{Rule, Severity};
use lens_watch::model::TraceId;
use lens_watch::render::Output;
use lens_watch::session::{ListFilter, Session, SessionConfig};

use crate::files;
use crate::flags::{Bounds, ColourFlag, DoctorFlags, JsonFlag};
use crate::hops::HOP_NAMES;
use crate::usage::USAGE_ERROR;

/// `lens check`: the traces of OTLP/JSON files.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Reads OTLP/JSON lines (one ExportTraceServiceRequest a line, as `lens watch \
--save` and the OpenTelemetry Collector's file exporter write them; gzip- or zstd-compressed too, \
and the Collector's length-prefixed zstd records, told apart by their first bytes) from each FILE \
(`-` for standard input), groups the spans by trace and prints each trace as `lens watch` does: \
its waterfall, or with --json one JSON object a line. Then the propagation doctor's findings \
(docs/doctor.md): where context was lost between services and why, missing parents, clock skew, \
dropped flags; with --json one object a line, {\"finding\": RULE, \"severity\": ..., \"trace_ids\": \
[...], \"span_ids\": [...], \"services\": [...], \"message\": ..., \"doc\": ...}.",
    mut_arg("json", |a| a.help("Print one JSON object per trace (a line each) instead of the waterfall")),
    after_help = "--trace ID, --service NAME and --errors print only the traces that match, and \
their findings: --trace the one trace ID, --service the traces with any span of service NAME, \
--errors the traces with any span whose status is an error; given together, a trace must match \
each. Every trace is still read and counted on the status line.

Where a finding is expected, --allow RULE leaves that rule's findings out (of the \
output and of the exit status); docs/doctor.md explains each rule (an unknown id is an error \
that lists them).

Exit status: 0 no error finding (on the traces printed), 1 an error finding (context lost on a \
hop), 2 usage error (an invalid trace id too), an unreadable or invalid file (the message names the file and line) or standard output that cannot \
be written (a closed pipe, as with `| head`, is not an error: the status is the findings')."
)]
pub(crate) struct Args {
    /// OTLP/JSON lines files, as --save and the Collector's file exporter write them, gzip or
    /// zstd too (`-` for standard input)
    #[arg(value_name = "FILE", required = true)]
    files: Vec<String>,

    #[command(flatten)]
    json: JsonFlag,

    /// Leave out info findings (a hop linked by its server's trust policy: untrusted-linked)
    #[arg(long)]
    quiet: bool,

    /// Leave out the findings of RULE, where they are expected: not printed, not counted for the
    /// exit status (repeatable, e.g. --allow missing-parent --allow clock-skew)
    #[arg(long, value_name = "RULE", value_parser = rule)]
    allow: Vec<Rule>,

    /// Print only trace ID (32 hex digits) and its findings
    #[arg(long = "trace", value_name = "ID", value_parser = trace_id)]
    trace_id: Option<TraceId>,

    /// Print only the traces with a span of service NAME, and their findings
    #[arg(long, value_name = "NAME")]
    service: Option<String>,

    /// Print only the traces with a span whose status is an error, and their findings
    #[arg(long)]
    errors: bool,

    #[command(flatten)]
    doctor: DoctorFlags,

    #[command(flatten)]
    bounds: Bounds,

    #[command(flatten)]
    color: ColourFlag,
}

/// `--trace`: a trace id, 32 hex digits (either case), not all zero.
fn trace_id(value: &str) -> Result<TraceId, String> {
    TraceId::from_hex(value).ok_or_else(|| {
        format!("'{value}' is not a trace id: 32 hex digits (16 bytes), not all zero")
    })
}

/// `--allow`: a rule id of the doctor.
fn rule(value: &str) -> Result<Rule, String> {
    Rule::ALL
        .into_iter()
        .find(|r| r.id() == value)
        .ok_or_else(|| {
            let ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
            format!("no rule '{value}'; the rules: {}", ids.join(", "))
        })
}

/// Runs `lens check`.
pub(crate) fn main(args: Args) -> ExitCode {
    let mut config = SessionConfig::default();
    config.assemble = args.bounds.config();
    config.quiet = args.quiet;
    config.allow = args.allow;
    config.hop_names = HOP_NAMES;
    args.doctor.apply(&mut config.doctor);
    let mut session = Session::new(config);
    let now = Instant::now();
    for file in &args.files {
        let read = files::open(file).map(|source| source.read_into(&mut session, now));
        if let Some(e) = read.map_or_else(Some, |read| read.stopped) {
            eprintln!("error: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    }
    let output = if args.json.json {
        Output::Json
    } else {
        Output::Text {
            colour: args.color.color.enabled(),
        }
    };
    let mut wanted = ListFilter::default();
    wanted.trace_id = args.trace_id;
    wanted.service = args.service.unwrap_or_default();
    wanted.errors = args.errors;
    let mut out = String::new();
    let mut findings = Vec::new();
    let mut shown = 0;
    let done = session.flush();
    let completed = done.len();
    for done in done {
        let Some(trace) = session.assembler().trace(&done.trace_id) else {
            continue;
        };
        if !wanted.matches(trace) {
            continue;
        }
        if shown > 0 && !args.json.json {
            out.push('\n');
        }
        shown += 1;
        if let Some(view) = session.view_of(&done) {
            output.trace(&view, &mut out);
        }
        findings.extend(done.findings);
    }
    if !args.json.json && !out.is_empty() && !findings.is_empty() {
        out.push('\n');
    }
    output.findings(&findings, &mut out);
    // A reader that stopped early (`lens check x | head`): the rest was not wanted; the
    // findings still decide the exit status.
    if let Err(code) = crate::flags::print(&out) {
        return code;
    }
    eprintln!("{}", session.stats());
    let filters: Vec<&str> = [
        (wanted.trace_id.is_some(), "--trace"),
        (!wanted.service.is_empty(), "--service"),
        (wanted.errors, "--errors"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if !filters.is_empty() {
        eprintln!(
            "{shown} of {completed} traces match {}",
            filters.join(" and ")
        );
    }
    // The exit status is the findings printed: those on the traces that match.
    if findings.iter().any(|f| f.severity() == Severity::Error) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
