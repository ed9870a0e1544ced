//! `lens probe URL`: a traceroute for trace context. Sends one HTTP request carrying a context
//! made to be recognised, receives what the services export (OTLP, on the usual ports), and
//! prints the path the request took, hop by hop, with what of its context survived each hop
//! (lens-watch's [`probe`](lens_watch::probe) module builds and judges the route).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use lens_watch::decode::Batch;
use lens_watch::model::{SpanId, TraceId};
use lens_watch::probe::{Route, Sent, find_bleeds};
use lens_watch::receive;
use lens_watch::session::{Session, SessionConfig};
use opentelemetry_sdk::trace::{IdGenerator as _, RandomIdGenerator};
use tokio::sync::mpsc;

use crate::hops::HOP_NAMES;
use crate::runtime::runtime;
use crate::usage::{USAGE_ERROR, usage_error};

mod args;
mod report;
mod send;
mod watch;

pub(crate) use args::Args;
use args::{body, request};
use report::{report_many, report_one};

/// The foreign vendor entry of the probe's `tracestate` (the W3C specification's example).
const VENDOR_ENTRY: &str = "rojo=00f067aa0ba902b7";

/// The baggage key the probe sends (its value: the probe's trace id).
const BAGGAGE_KEY: &str = "lens.probe";

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
