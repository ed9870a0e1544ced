//! `lens probe URL`: a traceroute for trace context. Sends one HTTP request carrying a context
//! made to be recognised, receives what the services export (OTLP, on the usual ports), and
//! prints the path the request took, hop by hop, with what of its context survived each hop
//! (lens-watch's [`probe`](lens_watch::probe) module builds and judges the route).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lens_watch::decode::Batch;
use lens_watch::diagnose::Rule;
use lens_watch::model::{KeyValue, SpanId, TraceId, Value};
use lens_watch::probe::{Route, Sent};
use lens_watch::receive;
use lens_watch::session::{Session, SessionConfig};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator};
use tokio::sync::mpsc;

use crate::cli::{USAGE_ERROR, runtime, usage_error};
use crate::flags::JsonFlag;
use crate::hops::HOP_NAMES;

/// The foreign vendor entry of the probe's `tracestate` (the W3C specification's example).
const VENDOR_ENTRY: &str = "rojo=00f067aa0ba902b7";

/// The baggage key the probe sends (its value: the probe's trace id).
const BAGGAGE_KEY: &str = "lens.probe";

/// The rules the probe reports, for `--allow`.
const RULES: [Rule; 5] = [
    Rule::LostContext,
    Rule::MissingParent,
    Rule::FlagDropped,
    Rule::TracestateDropped,
    Rule::BaggageDropped,
];

/// `lens probe`: one request with a recognisable context; the route it took, hop by hop.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Sends one HTTP request to URL carrying a fresh trace context (traceparent with \
the sampled and random flags, -03; a tracestate with a `lens` entry and a foreign vendor's; a \
baggage entry `lens.probe`), receives the spans the services export over OTLP on the usual \
ports (as `lens watch` does: point the services at it), waits until they stop arriving (at \
least --quiet-for after the response, at most --wait), and prints the path the request took, \
hop by hop: who called whom and, for the context on that hop, whether the trace was kept or \
lost (the new trace and why), whether the parent is the caller's span or one nobody exported (an \
unreported proxy in between), and whether the flags, the tracestate and the baggage arrived. A \
hop whose receiving side exported nothing is said to be unseen, never guessed. Baggage is seen \
only where a service records the keys it received (`lens.baggage.keys`; docs/probe.md).",
    mut_arg("json", |a| a.help("Print the route as one JSON object")),
    after_help = "Example: lens probe -X POST -H 'content-type: application/json' -d '{\"prompt\": \"hi\"}' \
http://127.0.0.1:8080/v1/train

Exit status: 0 the context survived every hop seen, 1 something was lost or dropped (less \
--allow RULE), 2 usage error, a request that could not be sent, a receiver port in use, or no \
span of the request arrived within --wait."
)]
pub(crate) struct Args {
    /// The URL to send the request to (http://; lens has no TLS)
    #[arg(value_name = "URL", value_parser = target_url)]
    url: String,

    /// The request method
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = method)]
    method: Option<reqwest::Method>,

    /// A request header, `Name: value` (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = header)]
    headers: Vec<(String, String)>,

    /// The request body; `@FILE` reads it from FILE. Makes the method POST unless -X is given
    #[arg(short = 'd', long = "data", value_name = "DATA")]
    data: Option<String>,

    /// Seconds without a new span, after the response, before the route is read
    #[arg(long, value_name = "S", default_value = "2", value_parser = seconds)]
    quiet_for: Duration,

    /// The most seconds to wait for spans after the response
    #[arg(long, value_name = "S", default_value = "10", value_parser = seconds)]
    wait: Duration,

    /// Seconds the request may take
    #[arg(long, value_name = "S", default_value = "30", value_parser = seconds)]
    timeout: Duration,

    /// Leave out what breaks RULE (repeatable): lost-context, missing-parent, flag-dropped,
    /// tracestate-dropped, baggage-dropped
    #[arg(long, value_name = "RULE", value_parser = rule)]
    allow: Vec<String>,

    /// The OTLP/gRPC address to receive spans on (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4317")]
    grpc: SocketAddr,

    /// The OTLP/HTTP address to receive spans on (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4318")]
    http: SocketAddr,

    #[command(flatten)]
    json: JsonFlag,
}

/// `URL`: http or https with a host.
fn target_url(value: &str) -> Result<String, String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|e| format!("not a URL ({e}); expected e.g. http://127.0.0.1:8080/v1/train"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http"), Some(host)) if !host.is_empty() => Ok(value.to_owned()),
        (Some("https"), _) => Err(
            "https is not supported: lens is built without TLS; probe the service over plain \
HTTP (inside the cluster, or through a port-forward)"
                .to_owned(),
        ),
        _ => Err(
            "expected an http:// URL with a host, e.g. http://127.0.0.1:8080/v1/train".to_owned(),
        ),
    }
}

/// `-X`: an HTTP method (a token: GET, POST, PURGE, ...).
fn method(value: &str) -> Result<reqwest::Method, String> {
    reqwest::Method::from_bytes(value.as_bytes())
        .map_err(|_| format!("'{value}' is not an HTTP method"))
}

/// `-H`: `Name: value`.
fn header(value: &str) -> Result<(String, String), String> {
    let (name, text) = value
        .split_once(':')
        .ok_or_else(|| "expected `Name: value`".to_owned())?;
    let name = name.trim();
    http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("'{name}' is not a header name"))?;
    let text = text.trim();
    http::HeaderValue::from_str(text).map_err(|_| format!("'{text}' is not a header value"))?;
    Ok((name.to_owned(), text.to_owned()))
}

/// Seconds in (0, 600].
fn seconds(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 600.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "expected seconds in (0, 600]".to_owned())
}

/// `--allow`: a rule the probe reports.
fn rule(value: &str) -> Result<String, String> {
    RULES
        .iter()
        .find(|r| r.id() == value)
        .map(|r| r.id().to_owned())
        .ok_or_else(|| {
            let ids: Vec<&str> = RULES.iter().map(|r| r.id()).collect();
            format!("no rule '{value}'; the rules: {}", ids.join(", "))
        })
}

/// The request body: `-d DATA`, or the contents of FILE for `-d @FILE`.
fn body(data: Option<&str>) -> Result<Option<Vec<u8>>, String> {
    match data {
        None => Ok(None),
        Some(data) => match data.strip_prefix('@') {
            Some(file) => std::fs::read(PathBuf::from(file))
                .map(Some)
                .map_err(|e| format!("cannot read the --data file {file}: {e}")),
            None => Ok(Some(data.as_bytes().to_vec())),
        },
    }
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Runs `lens probe`.
pub(crate) fn main(args: Args) -> ExitCode {
    let body = match body(args.data.as_deref()) {
        Ok(body) => body,
        Err(message) => return usage_error("probe", message),
    };
    let bind = |addr: SocketAddr, flag: &str| {
        std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| {
                let message = if e.kind() == std::io::ErrorKind::AddrInUse {
                    format!(
                        "port {} is already in use ({flag} {addr}): a `lens watch` or a Collector \
may be running; stop it, or pass {flag} with another address and point the services there",
                        addr.port()
                    )
                } else {
                    format!("cannot listen on {addr} ({flag}): {e}")
                };
                usage_error("probe", message)
            })
    };
    let grpc = match bind(args.grpc, "--grpc") {
        Ok(l) => l,
        Err(code) => return code,
    };
    let http = match bind(args.http, "--http") {
        Ok(l) => l,
        Err(code) => return code,
    };
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
    };
    let code = runtime.block_on(run(args, body, grpc, http));
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// The probe's context: a fresh trace and span, sampled and random.
fn fresh() -> Sent {
    let ids = RandomIdGenerator::default();
    let trace_id = TraceId(ids.new_trace_id().to_bytes());
    let span_id = SpanId(ids.new_span_id().to_bytes());
    Sent::new(
        trace_id,
        span_id,
        &format!("lens=probe,{VENDOR_ENTRY}"),
        [BAGGAGE_KEY],
    )
}

async fn run(
    args: Args,
    body: Option<Vec<u8>>,
    grpc: std::net::TcpListener,
    http: std::net::TcpListener,
) -> ExitCode {
    let (grpc, http) = match (
        tokio::net::TcpListener::from_std(grpc),
        tokio::net::TcpListener::from_std(http),
    ) {
        (Ok(g), Ok(h)) => (g, h),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let endpoint = http.local_addr().map_or_else(
        |_| "the --http address".to_owned(),
        |a| format!("http://{a}"),
    );
    let grpc_addr = grpc
        .local_addr()
        .map_or_else(|_| args.grpc.to_string(), |a| a.to_string());
    let (sender, mut batches) = mpsc::channel::<Batch>(256);
    let grpc_sender = sender.clone();
    tokio::spawn(async move {
        let _ = receive::grpc::serve(grpc, grpc_sender, std::future::pending()).await;
    });
    let router = receive::http::router(sender);
    tokio::spawn(async move {
        let _ = receive::http::serve(http, router, std::future::pending()).await;
    });

    eprintln!("lens probe: receiving OTLP on {endpoint} (and OTLP/gRPC on {grpc_addr})");
    let sent = fresh();
    let method = match (&args.method, &body) {
        (Some(method), _) => method.clone(),
        (None, Some(_)) => reqwest::Method::POST,
        (None, None) => reqwest::Method::GET,
    };
    let client = match reqwest::Client::builder().timeout(args.timeout).build() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let mut request = client
        .request(method.clone(), &args.url)
        .header("traceparent", sent.traceparent())
        .header("tracestate", &sent.trace_state)
        .header("baggage", format!("{BAGGAGE_KEY}={}", sent.trace_id));
    for (name, value) in &args.headers {
        request = request.header(name, value);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let start = SystemTime::now();
    let response = request.send().await;
    let end = SystemTime::now();
    let answered = Instant::now();
    let status = match response {
        Ok(response) => response.status(),
        Err(e) => {
            let why = if e.is_timeout() {
                format!(
                    "no answer within {} s (--timeout)",
                    args.timeout.as_secs_f64()
                )
            } else if e.is_connect() {
                "cannot connect".to_owned()
            } else {
                "the request failed".to_owned()
            };
            eprintln!("error: {method} {}: {why}: {e}", args.url);
            return ExitCode::from(USAGE_ERROR);
        }
    };
    eprintln!(
        "lens probe: {method} {} answered {status} in {:.1} ms; waiting for spans (OTLP/HTTP on \
{endpoint}, at most {} s)",
        args.url,
        end.duration_since(start).unwrap_or_default().as_secs_f64() * 1e3,
        args.wait.as_secs_f64()
    );

    let mut config = SessionConfig::default();
    config.hop_names = HOP_NAMES;
    let mut session = Session::new(config);
    let mut own = sent.client_span(
        &args.url,
        method.as_str(),
        unix_nanos(start),
        unix_nanos(end),
    );
    own.attributes.push(KeyValue::new(
        "http.response.status_code",
        Value::Int(i64::from(status.as_u16())),
    ));
    session.ingest(Batch::new(vec![own]), answered);

    // Spans until none has arrived for --quiet-for (counted from the response), at most --wait.
    let deadline = answered + args.wait;
    let mut last = answered;
    loop {
        let quiet_until = (last + args.quiet_for).min(deadline);
        match tokio::time::timeout_at(quiet_until.into(), batches.recv()).await {
            Ok(Some(batch)) => {
                last = Instant::now();
                session.ingest(batch, last);
            }
            Ok(None) | Err(_) => break,
        }
    }
    session.flush();

    let route = Route::build(&sent, &session);
    let mut out = String::new();
    if args.json.json {
        out = route.json().to_string();
        out.push('\n');
    } else {
        route.text(&mut out);
    }
    if let Err(code) = crate::flags::print(&out) {
        return code;
    }
    if route.saw_nothing() {
        eprintln!(
            "lens probe: no service exported a span of trace {} within {} s: point the services' \
OTLP exporters at this probe (OTEL_EXPORTER_OTLP_ENDPOINT={endpoint}), or wait longer (--wait)",
            sent.trace_id,
            args.wait.as_secs_f64(),
        );
        return ExitCode::from(USAGE_ERROR);
    }
    let broken: Vec<&str> = route.broken(&args.allow).collect();
    if broken.is_empty() {
        eprintln!("lens probe: the context survived every hop seen");
        ExitCode::SUCCESS
    } else {
        eprintln!("lens probe: broken: {}", broken.join(", "));
        ExitCode::FAILURE
    }
}
