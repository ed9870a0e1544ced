//! `lens check FILE...`: traces from OTLP/JSON lines (as `lens watch --save` and the
//! Collector's file exporter write them; `-` for standard input), printed as `lens watch`
//! prints them, then the propagation doctor's findings (docs/doctor.md); exit 1 on an error
//! finding (a lost hop), so that a CI job fails on one.

use std::io::BufRead as _;
use std::process::ExitCode;
use std::time::Instant;

use lens_watch::decode::decode_json;
use lens_watch::diagnose::Rule;
use lens_watch::render::Output;
use lens_watch::session::{Session, SessionConfig};

use crate::cli::USAGE_ERROR;
use crate::flags::{Bounds, ColourFlag, JsonFlag};
use crate::hops::HOP_NAMES;

/// `lens check`: the traces of OTLP/JSON files.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Reads OTLP/JSON lines (one ExportTraceServiceRequest a line, as `lens watch \
--save` and the OpenTelemetry Collector's file exporter write them) from each FILE (`-` for \
standard input), groups the spans by trace and prints each trace as `lens watch` does: its \
waterfall, or with --json one JSON object a line. Then the propagation doctor's findings \
(docs/doctor.md): where context was lost between services and why, missing parents, clock skew, \
dropped flags; with --json one object a line, {\"finding\": RULE, \"severity\": ..., \"trace_ids\": \
[...], \"span_ids\": [...], \"services\": [...], \"message\": ..., \"doc\": ...}.",
    mut_arg("json", |a| a.help("Print one JSON object per trace (a line each) instead of the waterfall")),
    after_help = "Where a finding is expected, --allow RULE leaves that rule's findings out (of the \
output and of the exit status); docs/doctor.md explains each rule (an unknown id is an error \
that lists them).

Exit status: 0 no error finding, 1 an error finding (context lost on a hop), 2 usage error, an \
unreadable or invalid file (the message names the file and line) or standard output that cannot \
be written (a closed pipe, as with `| head`, is not an error: the status is the findings')."
)]
pub(crate) struct Args {
    /// OTLP/JSON lines files (`-` for standard input)
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

    #[command(flatten)]
    bounds: Bounds,

    #[command(flatten)]
    color: ColourFlag,
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

/// Why a file cannot be read.
#[derive(Debug, thiserror::Error)]
enum CheckError {
    #[error("cannot read {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}: {why}")]
    Invalid {
        file: String,
        line: usize,
        why: String,
    },
}

/// Runs `lens check`.
pub(crate) fn main(args: Args) -> ExitCode {
    let mut config = SessionConfig::default();
    config.assemble = args.bounds.config();
    config.quiet = args.quiet;
    config.allow = args.allow;
    config.hop_names = HOP_NAMES;
    let mut session = Session::new(config);
    for file in &args.files {
        if let Err(e) = read(file, &mut session) {
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
    let mut out = String::new();
    let mut findings = Vec::new();
    for (i, done) in session.flush().into_iter().enumerate() {
        if i > 0 && !args.json.json {
            out.push('\n');
        }
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
    let stats = session.stats();
    eprintln!("{stats}");
    if stats.findings.errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Adds every span of `file` to `session`; the first bad line is an error.
fn read(file: &str, session: &mut Session) -> Result<(), CheckError> {
    let read_error = |source| CheckError::Read {
        file: file.to_owned(),
        source,
    };
    let reader: Box<dyn std::io::BufRead> = if file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(file).map_err(read_error)?,
        ))
    };
    let name = if file == "-" { "<stdin>" } else { file };
    let now = Instant::now();
    for (n, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(read_error)?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let invalid = |why: String| CheckError::Invalid {
            file: name.to_owned(),
            line: n + 1,
            why,
        };
        let batch = decode_json(&line).map_err(|e| invalid(e.to_string()))?;
        if batch.rejected > 0 {
            return Err(invalid(format!(
                "{} spans rejected: {}",
                batch.rejected,
                batch.error.unwrap_or_default()
            )));
        }
        session.ingest(batch, now);
    }
    Ok(())
}
