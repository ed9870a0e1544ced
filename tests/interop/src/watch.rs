//! Scenario watch: the HTTP scenarios again, both directions, with every span of both sides also
//! sent to a running `lens watch --json` by each SDK's own OTLP exporter: Python's
//! `opentelemetry-exporter-otlp-proto-grpc` and `-proto-http`, Rust's opentelemetry-otlp over
//! HTTP/protobuf and gRPC (crossed: each trace mixes both transports). Checked: each trace comes
//! out of `lens watch` once, whole (Python and Rust spans in one trace, every parent as both
//! SDKs recorded it), on the page, and from `lens check` on what `--save` wrote.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::check::Checks;
use crate::error::{Error, Result};
use crate::http::{self, Direction, OtlpTargets, RUST_SERVICE};
use crate::spans::{Side, SpanRecord};

/// How long to wait for `lens watch` to start and for a trace to come out of it.
const WATCH_TIMEOUT: Duration = Duration::from_secs(60);

/// The Python service's name (tests/interop/python/service.py).
pub(crate) const PYTHON_SERVICE: &str = "lens-interop-python";

/// A running `lens watch --json --save FILE`, killed on drop.
pub(crate) struct Watch {
    child: Child,
    stdout: mpsc::Receiver<String>,
    grpc: String,
    http: String,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

/// The lines of `reader`, read on a thread of their own.
pub(crate) fn lines(reader: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader)
            .lines()
            .map_while(std::result::Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn timeout(what: &str) -> Error {
    Error::Timeout {
        what: what.to_owned(),
        after: WATCH_TIMEOUT,
    }
}

/// Starts `lens watch --json --logs --quiet-for 2 --save save` on free ports (`save` emptied
/// first).
pub(crate) fn start(lens: &Path, save: &Path) -> Result<Watch> {
    let _ignored = std::fs::remove_file(save);
    let mut child = Command::new(lens)
        .args(["watch", "--json", "--logs", "--quiet-for", "2"])
        .args(["--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--save"])
        .arg(save)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Error::io(format!("starting {} watch", lens.display())))?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(Error::io("lens watch pipes")(std::io::Error::other(
            "no pipe",
        )));
    };
    let (stdout, stderr) = (lines(out), lines(err));
    let first = stderr
        .recv_timeout(WATCH_TIMEOUT)
        .map_err(|_| timeout("lens watch to start"))?;
    // Keep reading its status lines, so that its standard error never fills or closes.
    std::thread::spawn(move || stderr.iter().for_each(drop));
    // "lens watch: OTLP/gRPC on ADDR, OTLP/HTTP on http://ADDR/v1/traces, ..."
    let grpc = first
        .split("OTLP/gRPC on ")
        .nth(1)
        .and_then(|r| r.split(',').next());
    let http = first
        .split("OTLP/HTTP on http://")
        .nth(1)
        .and_then(|r| r.split('/').next());
    match (grpc, http) {
        (Some(grpc), Some(http)) => Ok(Watch {
            grpc: grpc.to_owned(),
            http: http.to_owned(),
            child,
            stdout,
        }),
        _ => Err(Error::Http {
            what: "lens watch".into(),
            message: format!("unexpected first line {first:?}"),
        }),
    }
}

impl Watch {
    /// Its OTLP/gRPC endpoint, `http://ADDR`.
    pub(crate) fn grpc_url(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// Its HTTP address, `ADDR` (OTLP/HTTP, the page and its API).
    pub(crate) fn http_addr(&self) -> &str {
        &self.http
    }

    /// Its OTLP/HTTP endpoint, `http://ADDR/v1/traces`.
    pub(crate) fn http_url(&self) -> String {
        format!("http://{}/v1/traces", self.http)
    }

    /// Reads `--json` lines until each trace of `expected` (trace id, span count) has come with
    /// that many spans (a trace shown before its late spans arrived comes again, whole); every
    /// line read (traces and findings), in order.
    pub(crate) fn read_until(&self, expected: &[(String, usize)]) -> Result<Vec<Value>> {
        let deadline = Instant::now() + WATCH_TIMEOUT;
        let mut lines = Vec::new();
        let mut waiting: Vec<&(String, usize)> = expected.iter().collect();
        while let Some((id, count)) = waiting.first() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stdout
                .recv_timeout(left)
                .map_err(|_| timeout(&format!("trace {id} with {count} spans from lens watch")))?;
            let value: Value =
                serde_json::from_str(&line).map_err(Error::json("lens watch --json"))?;
            let spans = value["spans"].as_array().map(Vec::len);
            waiting.retain(|(id, count)| value["trace_id"] != id.as_str() || spans != Some(*count));
            lines.push(value);
        }
        Ok(lines)
    }

    /// Stops `lens watch`; the `--json` lines it had written and [`Watch::read_until`] had not
    /// read.
    pub(crate) fn finish(mut self) -> Result<Vec<Value>> {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
        // Its standard output has closed: the reader thread ends and the channel with it.
        self.stdout
            .iter()
            .map(|l| serde_json::from_str(&l).map_err(Error::json("lens watch --json")))
            .collect()
    }
}

/// What `lens check` printed.
pub(crate) struct Checked {
    /// Its exit code.
    pub(crate) code: Option<i32>,
    /// Its standard output, one JSON value a line (with `--json`).
    pub(crate) lines: Vec<Value>,
    /// Its standard error.
    pub(crate) stderr: String,
}

/// Runs `lens check ARGS FILE` (ARGS with `--json`).
pub(crate) fn lens_check(lens: &Path, args: &[&str], file: &Path) -> Result<Checked> {
    let output = Command::new(lens)
        .arg("check")
        .args(args)
        .arg(file)
        .output()
        .map_err(Error::io("running lens check"))?;
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).map_err(Error::json("lens check --json")))
        .collect::<Result<Vec<Value>>>()?;
    Ok(Checked {
        code: output.status.code(),
        lines,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// The last line of `lines` that shows trace `id`.
pub(crate) fn last_trace<'a>(lines: &'a [Value], id: &str) -> Option<&'a Value> {
    lines.iter().rev().find(|l| l["trace_id"] == id)
}

/// Every span both SDKs recorded is in `trace`, with the parent and kind they recorded.
fn check_trace(checks: &mut Checks, label: &str, trace: &Value, records: &[SpanRecord]) {
    let spans = trace["spans"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for record in records {
        let found = spans
            .iter()
            .find(|s| s["span_id"] == record.span_id.as_str());
        checks.eq(
            &format!(
                "{label}: {} {} ({:?}) is in the trace with its parent",
                record.kind, record.name, record.side
            ),
            &found.map(|s| (s["kind"].as_str(), s["parent_span_id"].as_str())),
            &Some((Some(record.kind.as_str()), record.parent_span_id.as_deref())),
        );
        if let (Some(span), Some(remote)) = (found, record.parent_is_remote) {
            checks.eq(
                &format!("{label}: {} {} parent is remote", record.kind, record.name),
                &span["parent_is_remote"].as_bool(),
                &Some(remote),
            );
        }
    }
    let services: Vec<&str> = trace["services"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    checks.check(
        &format!("{label}: one trace holds both the Python and the Rust service"),
        services.contains(&PYTHON_SERVICE) && services.contains(&RUST_SERVICE),
        || format!("services {services:?}"),
    );
}

/// `trace` without its spans' `logs`.
fn without_logs(mut trace: Value) -> Value {
    if let Some(spans) = trace["spans"].as_array_mut() {
        for span in spans {
            if let Some(span) = span.as_object_mut() {
                span.remove("logs");
            }
        }
    }
    trace
}

/// The record each Python request logged (`handled PATH`, through `logging` and the
/// OpenTelemetry `LoggingHandler`, tests/interop/python/service.py) is under its FastAPI SERVER
/// span in `trace` (`--json --logs`), and in that span's row of `page`.
fn check_logs(checks: &mut Checks, label: &str, trace: &Value, page: &str, records: &[SpanRecord]) {
    let spans = trace["spans"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let servers = records
        .iter()
        .filter(|r| r.side == Side::Python && r.kind == "SERVER");
    for record in servers {
        let path = record.name.split_whitespace().last().unwrap_or_default();
        let expected = format!("handled {path}");
        let bodies: Vec<&str> = spans
            .iter()
            .find(|s| s["span_id"] == record.span_id.as_str())
            .and_then(|s| s["logs"].as_array())
            .map(|logs| logs.iter().filter_map(|l| l["body"].as_str()).collect())
            .unwrap_or_default();
        checks.eq(
            &format!(
                "{label}: the log record of {} is under its SERVER span",
                record.name
            ),
            &bodies,
            &vec![expected.as_str()],
        );
        checks.check(
            &format!(
                "{label}: the page shows the log record of {} under its span",
                record.name
            ),
            page.contains(&format!("data-logs-for=\"{}\"", record.span_id))
                && page.contains(&expected),
            || format!("no logs row for span {}", record.span_id),
        );
    }
}

pub(crate) async fn run(
    lens: &Path,
    python: &Path,
    scripts: &Path,
    out: &Path,
    checks: &mut Checks,
) -> Result<()> {
    let save = out.join("watch.jsonl");
    let watch = start(lens, &save)?;
    let (grpc, http_url) = (watch.grpc_url(), watch.http_url());
    let runs = [
        (
            "python-first",
            Direction::PythonFirst,
            OtlpTargets {
                python: ("grpc", grpc.clone()),
                rust: (opentelemetry_otlp::Protocol::HttpBinary, http_url.clone()),
            },
        ),
        (
            "rust-first",
            Direction::RustFirst,
            OtlpTargets {
                python: ("http/protobuf", http_url.clone()),
                rust: (opentelemetry_otlp::Protocol::Grpc, grpc.clone()),
            },
        ),
    ];
    let client = reqwest::Client::new();
    let mut traces = Vec::new();
    for (label, direction, targets) in runs {
        let dir = out.join(label);
        std::fs::create_dir_all(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let records = http::run(python, scripts, &dir, direction, Some(&targets), checks).await?;
        let Some(id) = records.first().map(|r| r.trace_id.clone()) else {
            checks.fail(label, "no spans recorded");
            continue;
        };
        let lines =
            tokio::task::block_in_place(|| watch.read_until(&[(id.clone(), records.len())]))?;
        let Some(trace) = last_trace(&lines, &id).cloned() else {
            checks.fail(label, "lens watch did not show the trace");
            continue;
        };
        check_trace(checks, label, &trace, &records);
        checks.spans += records.len();

        // The page shows the same trace, every span a row.
        let page = client
            .get(format!("http://{}/api/traces/{id}", watch.http))
            .send()
            .await
            .map_err(Error::http("the lens watch page"))?
            .text()
            .await
            .map_err(Error::http("the lens watch page"))?;
        let missing: Vec<&str> = records
            .iter()
            .map(|r| r.span_id.as_str())
            .filter(|s| !page.contains(&format!("data-span-id=\"{s}\"")))
            .collect();
        checks.check(
            &format!("{label}: the page shows every span"),
            missing.is_empty(),
            || format!("missing {missing:?}"),
        );
        check_logs(checks, label, &trace, &page, &records);
        // `lens check` shows no logs (it has no --logs): the rest of the trace is the same.
        traces.push((label, id, without_logs(trace)));
    }
    drop(watch);

    // What --save wrote reads back, with `lens check --json`, as the same traces.
    let checked = lens_check(lens, &["--json"], &save)?;
    checks.check(
        "lens check reads what --save wrote",
        checked.code == Some(0),
        || checked.stderr.clone(),
    );
    let checked = checked.lines;
    for (label, id, trace) in &traces {
        let again = checked.iter().find(|t| t["trace_id"] == id.as_str());
        checks.eq(
            &format!("{label}: lens check shows the trace lens watch showed"),
            &again,
            &Some(trace),
        );
    }
    Ok(())
}
