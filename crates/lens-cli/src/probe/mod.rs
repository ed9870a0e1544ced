//! `lens probe URL`: a traceroute for trace context. Sends one HTTP request carrying a context
//! made to be recognised, receives what the services export (OTLP, on the usual ports), and
//! prints the path the request took, hop by hop, with what of its context survived each hop
//! (lens-watch's [`probe`](lens_watch::probe) module builds and judges the route).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use lens_watch::decode::Batch;
use lens_watch::diagnose::Rule;
use lens_watch::model::{SpanId, TraceId};
use lens_watch::probe::{Bleed, Route, Sent, Tally, find_bleeds};
use lens_watch::receive;
use lens_watch::session::{Session, SessionConfig};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator};
use tokio::sync::mpsc;

use crate::runtime::runtime;
use crate::usage::{USAGE_ERROR, usage_error};
use send::{Request, Target};

mod send;
mod watch;
use crate::flags::JsonFlag;
use crate::hops::HOP_NAMES;

/// The foreign vendor entry of the probe's `tracestate` (the W3C specification's example).
const VENDOR_ENTRY: &str = "rojo=00f067aa0ba902b7";

/// The baggage key the probe sends (its value: the probe's trace id).
const BAGGAGE_KEY: &str = "lens.probe";

/// The rules the probe reports, for `--allow`.
const RULES: [Rule; 7] = [
    Rule::LostContext,
    Rule::MissingParent,
    Rule::FlagDropped,
    Rule::TracestateDropped,
    Rule::BaggageDropped,
    Rule::SamplingForced,
    Rule::ContextBleed,
];

/// `lens probe`: one request with a recognisable context; the route it took, hop by hop.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Sends one request to TARGET (an HTTP request, a gRPC call or a NATS message) \
carrying a fresh trace context (traceparent with \
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
    after_help = "Examples:
  lens probe -X POST -H 'content-type: application/json' -d '{\"prompt\": \"hi\"}' http://127.0.0.1:8080/v1/train
  lens probe grpc://127.0.0.1:50051
  lens probe -d 'job 1' nats://127.0.0.1:4222/jobs.rollout

Exit status: 0 the context survived every hop seen, 1 something was lost or dropped in any \
request (less --allow RULE), 2 usage error, a request that could not be sent, a receiver port in use, or no \
span of the request arrived within --wait."
)]
pub(crate) struct Args {
    /// Where to send the request: http://HOST:PORT/PATH, grpc://HOST:PORT (the standard
    /// health check; grpc://HOST:PORT/pkg.Service/Method with a raw protobuf body from -d @FILE)
    /// or nats://HOST:PORT/SUBJECT (a message published with -d as its payload). No TLS
    #[arg(value_name = "TARGET", value_parser = Target::parse)]
    target: Target,

    /// The HTTP request method
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = method)]
    method: Option<reqwest::Method>,

    /// A request header (gRPC metadata, NATS message header), `Name: value` (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = header)]
    headers: Vec<(String, String)>,

    /// The request body (gRPC: the raw protobuf message; NATS: the payload); `@FILE` reads it
    /// from FILE. Makes the HTTP method POST unless -X is given
    #[arg(short = 'd', long = "data", value_name = "DATA")]
    data: Option<String>,

    /// Seconds without a new span, after the response, before the route is read
    #[arg(long, value_name = "S", default_value = "2", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    quiet_for: Duration,

    /// The most seconds to wait for spans after the response
    #[arg(long, value_name = "S", default_value = "10", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    wait: Duration,

    /// Seconds the request may take
    #[arg(long, value_name = "S", default_value = "30", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    timeout: Duration,

    /// Send N requests, each with its own trace, and tally the routes hop by hop, naming the
    /// receiving instances (`service.instance.id`, else the host) where losses concentrate
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    repeat: u32,

    /// With --repeat: how many requests are in flight at a time
    #[arg(long, value_name = "C", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1_000))]
    concurrency: u32,

    /// Send the requests unsampled (traceparent flags 02: the random flag kept), after one
    /// sampled request that shows the route: any span recorded for them is sampling-forced
    #[arg(long)]
    unsampled: bool,

    /// Leave out what breaks RULE (repeatable): lost-context, missing-parent, flag-dropped,
    /// tracestate-dropped, baggage-dropped, sampling-forced, context-bleed
    #[arg(long, value_name = "RULE", value_parser = rule)]
    allow: Vec<String>,

    /// Read the spans from the `lens watch` at URL (its HTTP address, e.g.
    /// http://127.0.0.1:4318) instead of receiving them: the services keep exporting to it
    #[arg(long, value_name = "URL", value_parser = watch_url, conflicts_with_all = ["grpc", "http", "repeat", "unsampled"])]
    watch: Option<String>,

    /// The OTLP/gRPC address to receive spans on (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4317")]
    grpc: SocketAddr,

    /// The OTLP/HTTP address to receive spans on (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4318")]
    http: SocketAddr,

    #[command(flatten)]
    json: JsonFlag,
}

/// `--watch`: an `http://` URL with a host, without a path.
fn watch_url(value: &str) -> Result<String, String> {
    match Target::parse(value) {
        Ok(Target::Http(url)) => Ok(url.trim_end_matches('/').to_owned()),
        _ => {
            Err("expected the HTTP address of a lens watch, e.g. http://127.0.0.1:4318".to_owned())
        }
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

/// Runs `lens probe`.
pub(crate) fn main(args: Args) -> ExitCode {
    let body = match body(args.data.as_deref()) {
        Ok(body) => body,
        Err(message) => return usage_error("probe", message),
    };
    let receivers = if args.watch.is_some() {
        None
    } else {
        let grpc = match crate::flags::bind_receiver("probe", args.grpc, "--grpc") {
            Ok(l) => l,
            Err(code) => return code,
        };
        let http = match crate::flags::bind_receiver("probe", args.http, "--http") {
            Ok(l) => l,
            Err(code) => return code,
        };
        Some((grpc, http))
    };
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
    };
    let code = runtime.block_on(run(args, body, receivers));
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

/// Where the spans come from: a receiver of the probe's own, or a running `lens watch`.
enum Source {
    /// The probe's receivers feed this channel.
    Own(mpsc::Receiver<Batch>),
    /// A `lens watch` at this base URL.
    Watch(watch::Watch),
}

/// Starts the probe's own receivers on `grpc` and `http`; what they receive, and where.
fn own_receivers(
    grpc: std::net::TcpListener,
    http: std::net::TcpListener,
) -> std::io::Result<(mpsc::Receiver<Batch>, String)> {
    let grpc = tokio::net::TcpListener::from_std(grpc)?;
    let http = tokio::net::TcpListener::from_std(http)?;
    let endpoint = format!("http://{}", http.local_addr()?);
    let grpc_addr = grpc.local_addr()?;
    let (sender, batches) = mpsc::channel::<Batch>(256);
    let grpc_sender = sender.clone();
    tokio::spawn(async move {
        let _ = receive::grpc::serve(grpc, grpc_sender, std::future::pending()).await;
    });
    let router = receive::http::router(sender);
    tokio::spawn(async move {
        let _ = receive::http::serve(http, router, std::future::pending()).await;
    });
    eprintln!("lens probe: receiving OTLP on {endpoint} (and OTLP/gRPC on {grpc_addr})");
    Ok((batches, endpoint))
}

async fn run(
    args: Args,
    body: Option<Vec<u8>>,
    receivers: Option<(std::net::TcpListener, std::net::TcpListener)>,
) -> ExitCode {
    let (source, endpoint) = match (receivers, &args.watch) {
        (Some((grpc, http)), _) => match own_receivers(grpc, http) {
            Ok((batches, endpoint)) => (Source::Own(batches), format!("OTLP/HTTP on {endpoint}")),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(USAGE_ERROR);
            }
        },
        (None, Some(url)) => match watch::Watch::connect(url, args.timeout).await {
            Ok(watch) => (
                Source::Watch(watch),
                format!("from the lens watch at {url}"),
            ),
            Err(why) => {
                eprintln!("error: {why}");
                return ExitCode::from(USAGE_ERROR);
            }
        },
        (None, None) => return ExitCode::from(USAGE_ERROR),
    };
    let mut config = SessionConfig::default();
    config.hop_names = HOP_NAMES;
    let mut session = Session::new(config);
    let sents = match source {
        Source::Own(mut batches) => {
            let sending = send_all(&args, body, &mut session, &mut batches).await;
            let (sents, answered) = match sending {
                Ok(sent) => sent,
                Err(why) => {
                    eprintln!("error: {why}");
                    return ExitCode::from(USAGE_ERROR);
                }
            };
            eprintln!(
                "lens probe: {answered}; waiting for spans ({endpoint}, at most {} s)",
                args.wait.as_secs_f64()
            );
            // Spans until none has arrived for --quiet-for (from the response), at most --wait.
            let answered = Instant::now();
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
            sents
        }
        Source::Watch(watch) => {
            let sent = fresh();
            let request = request(&args, body);
            let what = request.describe();
            let outcome = match request.send(&sent, &baggage(&sent)).await {
                Ok(outcome) => outcome,
                Err(why) => {
                    eprintln!("error: {what}: {why}");
                    return ExitCode::from(USAGE_ERROR);
                }
            };
            let answered = Instant::now();
            eprintln!(
                "lens probe: {what} answered {} in {:.1} ms; waiting for spans ({endpoint}, at most {} s)",
                outcome.answer,
                outcome.took.as_secs_f64() * 1e3,
                args.wait.as_secs_f64()
            );
            let deadline = answered + args.wait;
            match watch
                .collect(sent.trace_id, outcome.span, args.quiet_for, deadline)
                .await
            {
                Ok(batches) => {
                    for batch in batches {
                        session.ingest(batch, Instant::now());
                    }
                }
                Err(why) => {
                    eprintln!("error: {why}");
                    return ExitCode::from(USAGE_ERROR);
                }
            }
            vec![sent]
        }
    };
    session.flush();

    // With --unsampled the first request is the sampled one that shows the route.
    let (reference, sents) = match sents.split_first() {
        Some((first, rest)) if args.unsampled => (Some(Route::build(first, &session)), rest),
        _ => (None, sents.as_slice()),
    };
    let routes: Vec<Route> = sents
        .iter()
        .map(|sent| {
            let mut route = Route::build(sent, &session);
            if let Some(reference) = &reference {
                route.compare_sampling(reference);
            }
            route
        })
        .collect();
    if let Some(reference) = &reference
        && reference.saw_nothing()
        && routes.iter().all(Route::saw_nothing)
    {
        eprintln!(
            "lens probe: no service exported a span even of the sampled request (trace {}) \
within {} s: an unsampled request that leaves nothing proves nothing; point the services' OTLP \
exporters at it ({endpoint}), or wait longer (--wait)",
            reference.sent.trace_id,
            args.wait.as_secs_f64(),
        );
        return ExitCode::from(USAGE_ERROR);
    }
    match routes.as_slice() {
        [route] => report_one(&args, route, &endpoint),
        _ => report_many(&args, &routes, &find_bleeds(&routes, &session), &endpoint),
    }
}

/// The report of one request: its route.
fn report_one(args: &Args, route: &Route, endpoint: &str) -> ExitCode {
    let sent = &route.sent;
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
    if route.saw_nothing() && route.sampling.is_none() {
        eprintln!(
            "lens probe: no service exported a span of trace {} within {} s: point the services' \
OTLP exporters at it ({endpoint}), or wait longer (--wait)",
            sent.trace_id,
            args.wait.as_secs_f64(),
        );
        return ExitCode::from(USAGE_ERROR);
    }
    let broken: Vec<&str> = route.broken(&args.allow).collect();
    if broken.is_empty() && route.sampling.is_some() {
        eprintln!("lens probe: the unsampled request stayed unsampled");
        ExitCode::SUCCESS
    } else if broken.is_empty() {
        eprintln!("lens probe: the context survived every hop seen");
        ExitCode::SUCCESS
    } else {
        eprintln!("lens probe: broken: {}", broken.join(", "));
        ExitCode::FAILURE
    }
}

/// The report of many requests: their routes tallied hop by hop.
fn report_many(args: &Args, routes: &[Route], bleeds: &[Bleed], endpoint: &str) -> ExitCode {
    let tally = Tally::new(routes, bleeds, &args.allow);
    let mut out = String::new();
    if args.json.json {
        let mut json = tally.json();
        json["concurrency"] = args.concurrency.into();
        json["routes"] = routes.iter().map(Route::json).collect();
        out = json.to_string();
        out.push('\n');
    } else {
        tally.text(&mut out);
    }
    if let Err(code) = crate::flags::print(&out) {
        return code;
    }
    if tally.unseen == tally.requests && !args.unsampled {
        eprintln!(
            "lens probe: no service exported a span of any of the {} requests within {} s: point \
the services' OTLP exporters at it ({endpoint}), or wait longer (--wait)",
            tally.requests,
            args.wait.as_secs_f64(),
        );
        return ExitCode::from(USAGE_ERROR);
    }
    if tally.lost == 0 {
        eprintln!(
            "lens probe: the context survived every hop seen, in all {} requests",
            tally.requests
        );
        ExitCode::SUCCESS
    } else {
        let mut rules: Vec<&str> = tally
            .hops
            .iter()
            .flat_map(|h| h.rules.iter().map(|(r, _)| *r))
            .collect();
        rules.dedup();
        eprintln!(
            "lens probe: broken in {} of {} requests: {}",
            tally.lost,
            tally.requests,
            rules.join(", ")
        );
        ExitCode::FAILURE
    }
}

/// The request the user asked for, with `body`.
fn request(args: &Args, body: Option<Vec<u8>>) -> Request<'_> {
    Request {
        target: &args.target,
        method: args.method.as_ref(),
        headers: &args.headers,
        body,
        timeout: args.timeout,
    }
}

/// The `baggage` header of `sent`: the probe's key, its trace id as the value.
fn baggage(sent: &Sent) -> String {
    format!("{BAGGAGE_KEY}={}", sent.trace_id)
}

/// Sends `--repeat` requests, `--concurrency` at a time, each with a fresh context, ingesting
/// the spans that arrive meanwhile; the contexts sent (in the order sent) and what answered, in
/// words. The probe's own span of each goes into `session`.
async fn send_all(
    args: &Args,
    body: Option<Vec<u8>>,
    session: &mut Session,
    batches: &mut mpsc::Receiver<Batch>,
) -> Result<(Vec<Sent>, String), String> {
    let what = request(args, None).describe();
    let started = Instant::now();
    let mut sents: Vec<Sent> = (0..args.repeat)
        .map(|_| {
            let sent = fresh();
            if args.unsampled {
                sent.unsampled()
            } else {
                sent
            }
        })
        .collect();
    if args.unsampled {
        sents.insert(0, fresh());
    }
    let mut sending = futures_util::stream::iter(sents.clone())
        .map(|sent| {
            let request = request(args, body.clone());
            async move {
                let baggage = baggage(&sent);
                request.send(&sent, &baggage).await
            }
        })
        .buffer_unordered(args.concurrency as usize);
    let mut answers: Vec<(String, usize)> = Vec::new();
    let mut took = Duration::ZERO;
    let mut open = true;
    while open {
        tokio::select! {
            outcome = sending.next() => match outcome {
                Some(Ok(outcome)) => {
                    took += outcome.took;
                    match answers.iter_mut().find(|(a, _)| *a == outcome.answer) {
                        Some((_, n)) => *n += 1,
                        None => answers.push((outcome.answer, 1)),
                    }
                    session.ingest(Batch::new(vec![outcome.span]), Instant::now());
                }
                Some(Err(why)) => return Err(format!("{what}: {why}")),
                None => open = false,
            },
            Some(batch) = batches.recv() => session.ingest(batch, Instant::now()),
        }
    }
    drop(sending);
    let elapsed = started.elapsed();
    let answered = if sents.len() == 1 {
        format!(
            "{what} answered {} in {:.1} ms",
            answers.first().map_or("", |(a, _)| a.as_str()),
            took.as_secs_f64() * 1e3
        )
    } else {
        let answers: Vec<String> = answers.iter().map(|(a, n)| format!("{a} {n}")).collect();
        format!(
            "{} requests{} ({} at a time) to {what} answered ({}) in {:.1} ms ({:.1} ms each on average)",
            sents.len(),
            if args.unsampled {
                format!(" (1 sampled, {} unsampled)", args.repeat)
            } else {
                String::new()
            },
            args.concurrency,
            answers.join(", "),
            elapsed.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e3 / sents.len() as f64
        )
    };
    Ok((sents, answered))
}
