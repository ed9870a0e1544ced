//! The command line of `lens probe`: its flags, the checks of the values they take, and the
//! request they describe.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use lens_watch::diagnose::Rule;

use crate::flags::JsonFlag;

use super::send::{Request, Target};

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
    pub(super) target: Target,

    /// The HTTP request method
    #[arg(short = 'X', long = "request", value_name = "METHOD", value_parser = method)]
    pub(super) method: Option<reqwest::Method>,

    /// A request header (gRPC metadata, NATS message header), `Name: value` (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = header)]
    pub(super) headers: Vec<(String, String)>,

    /// The request body (gRPC: the raw protobuf message; NATS: the payload); `@FILE` reads it
    /// from FILE. Makes the HTTP method POST unless -X is given
    #[arg(short = 'd', long = "data", value_name = "DATA")]
    pub(super) data: Option<String>,

    /// Seconds without a new span, after the response, before the route is read
    #[arg(long, value_name = "S", default_value = "2", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    pub(super) quiet_for: Duration,

    /// The most seconds to wait for spans after the response
    #[arg(long, value_name = "S", default_value = "10", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    pub(super) wait: Duration,

    /// Seconds the request may take
    #[arg(long, value_name = "S", default_value = "30", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    pub(super) timeout: Duration,

    /// Send N requests, each with its own trace, and tally the routes hop by hop, naming the
    /// receiving instances (`service.instance.id`, else the host) where losses concentrate
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(super) repeat: u32,

    /// With --repeat: how many requests are in flight at a time
    #[arg(long, value_name = "C", default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub(super) concurrency: u32,

    /// Send the requests unsampled (traceparent flags 02: the random flag kept), after one
    /// sampled request that shows the route: any span recorded for them is sampling-forced
    #[arg(long)]
    pub(super) unsampled: bool,

    /// Leave out what breaks RULE (repeatable): lost-context, missing-parent, flag-dropped,
    /// tracestate-dropped, baggage-dropped, sampling-forced, context-bleed
    #[arg(long, value_name = "RULE", value_parser = rule)]
    pub(super) allow: Vec<String>,

    /// Read the spans from the `lens watch` at URL (its HTTP address, e.g.
    /// http://127.0.0.1:4318) instead of receiving them: the services keep exporting to it
    #[arg(long, value_name = "URL", value_parser = watch_url, conflicts_with_all = ["grpc", "http", "repeat", "unsampled"])]
    pub(super) watch: Option<String>,

    /// The OTLP/gRPC address to receive spans on (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4317")]
    pub(super) grpc: SocketAddr,

    /// The OTLP/HTTP address to receive spans on (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4318")]
    pub(super) http: SocketAddr,

    #[command(flatten)]
    pub(super) json: JsonFlag,
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
pub(super) fn body(data: Option<&str>) -> Result<Option<Vec<u8>>, String> {
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

/// The request the user asked for, with `body`.
pub(super) fn request(args: &Args, body: Option<Vec<u8>>) -> Request<'_> {
    Request {
        target: &args.target,
        method: args.method.as_ref(),
        headers: &args.headers,
        body,
        timeout: args.timeout,
    }
}
