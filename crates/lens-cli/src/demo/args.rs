//! The command line of `lens demo`: its flags, and the checks of the values they take.

use std::path::PathBuf;
use std::time::Duration;

use crate::flags::{ColourFlag, JsonFlag};

use super::hop::Hop;

/// `lens demo`: one traced request through a small AI system, all in this process.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Starts, on 127.0.0.1 in this process, an axum gateway, an axum planner (called \
through reqwest), a tonic trainer (called over gRPC) that dispatches a Ray-style remote call and \
runs a training step over 4 pipeline ranks (threads: the step's context broadcast to every rank, \
activations handed stage to stage with NCCL context frames, each stage's span linked to the \
previous one). With --nats, the trainer also publishes a rollout job per step to a nats-server \
that the rollout worker consumes (lens-nats on both sides). Sends a request through them and prints \
every span of its trace as a waterfall, then what the propagation doctor finds in it (nothing, \
unless --break sends a hop without context).",
    mut_arg("json", |a| a.help("Print the spans as JSON (an array) instead of the waterfall")),
    after_help = "Environment: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
names a collector when --otlp is not given; OTEL_EXPORTER_OTLP_PROTOCOL (grpc or http/protobuf, \
the default), OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds) work as \
in any OpenTelemetry SDK (and their OTEL_EXPORTER_OTLP_TRACES_* forms).

Example: lens demo --break 'gateway->planner' (quoted: `>` is a redirection in a shell) shows the \
lost-context finding of docs/doctor.md.

Exit status: 0 every trace complete, 1 a request failed, a trace is incomplete or the doctor \
found an error without --break, 2 usage error."
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(super) json: JsonFlag,

    /// Also write the waterfall as a self-contained HTML page to FILE
    #[arg(long, value_name = "FILE")]
    pub(super) html: Option<PathBuf>,

    /// Send N requests; with N > 1, print one summary line per trace (and show progress on a
    /// terminal)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(u32).range(1..=MAX_COUNT),
    )]
    pub(super) requests: u32,

    /// At most C requests in flight
    #[arg(
        long,
        value_name = "C",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(u32).range(1..=MAX_COUNT),
    )]
    pub(super) concurrency: u32,

    /// Also send the spans to the OTLP collector at URL (`http://host:4318`, or the full
    /// `.../v1/traces` URL; `http://host:4317` with OTEL_EXPORTER_OTLP_PROTOCOL=grpc). An
    /// unreachable collector gives a warning, not an error
    #[arg(long, value_name = "URL", value_parser = collector_url)]
    pub(super) otlp: Option<String>,

    /// Seconds to wait for the collector (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10)
    #[arg(long, value_name = "S", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    pub(super) otlp_timeout: Option<Duration>,

    /// Send HOP without trace context (its client records its span but injects nothing) and
    /// print the doctor's finding: lens-demo->gateway, gateway->planner, planner->trainer, or
    /// with --nats the queue hop trainer->rollout.jobs
    #[arg(long = "break", value_name = "HOP", value_parser = hop)]
    pub(super) break_hop: Option<Hop>,

    /// Add a queue hop through the nats-server at URL (`nats://host:4222`, which you run, e.g.
    /// `nats-server`): the trainer publishes a rollout job per step (subject
    /// `rollout.jobs.<run>`) that the rollout worker consumes, both through lens-nats
    #[arg(long, value_name = "URL", value_parser = nats_url)]
    pub(super) nats: Option<String>,

    /// Add a streaming hop: the trainer asks the rollout worker to generate and reads the tokens
    /// as server-sent events, the worker streaming them from an inference engine; the waterfall
    /// marks each span's first chunk and adds the "time to first chunk by hop" table
    #[arg(long)]
    pub(super) stream: bool,

    #[command(flatten)]
    pub(super) color: ColourFlag,
}

/// `--break`: a hop of the demo, `from->to`.
fn hop(value: &str) -> Result<Hop, String> {
    Hop::parse(value).ok_or_else(|| {
        let valid: Vec<String> = Hop::ALL.iter().map(|h| h.name()).collect();
        let mut message = format!(
            "no hop '{value}' in the demo; the hops that can be broken: {}",
            valid.join(", ")
        );
        if value.ends_with('-') {
            // `--break gateway->planner` unquoted: the shell took `>planner` as a redirection.
            message.push_str(" (quote the hop in a shell: --break 'gateway->planner')");
        }
        message
    })
}

/// `--nats`: `nats://host[:port]`, `host[:port]` (no other scheme: the demo's client has no
/// TLS or websocket server in mind).
fn nats_url(value: &str) -> Result<String, String> {
    let rest = value.strip_prefix("nats://").unwrap_or(value);
    let uri: Option<http::uri::Authority> = rest.parse().ok();
    // `Authority` takes any text after the colon: the port must be a number.
    let port_ok = match rest.rsplit_once(':') {
        Some((_, port)) if !rest.ends_with(']') => port.parse::<u16>().is_ok(),
        _ => true,
    };
    match uri {
        Some(authority) if !authority.host().is_empty() && !rest.contains('/') && port_ok => {
            Ok(value.to_owned())
        }
        _ => Err("expected a nats-server address, e.g. nats://127.0.0.1:4222".to_owned()),
    }
}

/// The largest `--requests` and `--concurrency`.
const MAX_COUNT: i64 = 100_000;

/// `--otlp`: an `http` or `https` URL with a host.
fn collector_url(value: &str) -> Result<String, String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|e| format!("not a URL ({e}); expected e.g. http://localhost:4318"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(value.to_owned()),
        _ => Err(
            "expected an http:// or https:// URL with a host, e.g. http://localhost:4318"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn collector_urls_need_a_scheme_and_a_host() {
        for good in [
            "http://c:4318",
            "https://collector.example/v1/traces",
            "http://[::1]:4317",
        ] {
            assert_eq!(collector_url(good).as_deref(), Ok(good), "{good}");
        }
        for bad in ["notaurl", "c:4318", "ftp://c/", "/v1/traces", "http://", ""] {
            assert!(collector_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hops_are_named_from_to_and_an_unknown_one_lists_the_valid_ones() {
        for h in Hop::ALL {
            assert_eq!(hop(&h.name()), Ok(h));
        }
        assert_eq!(hop("gateway -> planner"), Ok(Hop::GatewayToPlanner));
        assert_eq!(hop("trainer->rollout.jobs"), Ok(Hop::TrainerToRolloutJobs));
        for bad in ["planner->gateway", "gateway", "", "trainer->rollout-worker"] {
            let e = hop(bad).unwrap_err();
            assert!(
                e.contains(
                    "lens-demo->gateway, gateway->planner, planner->trainer, trainer->rollout.jobs"
                ),
                "{e}"
            );
            assert!(!e.contains("quote"), "{e}");
        }
        assert!(hop("gateway-").unwrap_err().contains("quote"));
    }

    #[test]
    fn nats_urls_are_a_host_and_port_with_or_without_the_scheme() {
        for good in [
            "nats://127.0.0.1:4222",
            "localhost:4222",
            "nats://broker",
            "[::1]:4222",
        ] {
            assert_eq!(nats_url(good).as_deref(), Ok(good), "{good}");
        }
        for bad in [
            "",
            "nats://",
            "tls://h:4222",
            "http://h:4222",
            "nats://h:4222/x",
            "h:x",
        ] {
            assert!(nats_url(bad).is_err(), "{bad}");
        }
    }
}
