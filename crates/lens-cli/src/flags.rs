//! The flags several commands share (`--json`, `--color`), and what every command does with
//! standard output.

use std::io::Write as _;
use std::process::ExitCode;

use crate::usage::USAGE_ERROR;

/// `--json`, `--json=true` or `--json=false` (and clap's other boolish words): a switch that
/// scripts can also pass a value to. Each command sets its own help with `mut_arg("json", ...)`.
#[derive(Debug, clap::Args)]
pub(crate) struct JsonFlag {
    /// Print JSON
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        default_value = "false",
        hide_default_value = true,
        hide_possible_values = true,
        value_parser = clap::builder::BoolishValueParser::new(),
    )]
    pub(crate) json: bool,
}

/// `--color WHEN` (alias `--colour`), the same in every command that draws a waterfall.
#[derive(Clone, Copy, Debug, clap::Args)]
pub(crate) struct ColourFlag {
    /// Colour: auto (when stdout is a terminal and NO_COLOR is unset), always or never
    #[arg(
        long,
        visible_alias = "colour",
        value_name = "WHEN",
        value_enum,
        ignore_case = true,
        default_value = "auto"
    )]
    pub(crate) color: Colour,
}

/// Colour: auto (when stdout is a terminal and NO_COLOR is unset), always or never.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Colour {
    Auto,
    Always,
    Never,
}

impl Colour {
    /// Whether to colour standard output.
    pub(crate) fn enabled(self) -> bool {
        use std::io::IsTerminal as _;
        match self {
            Colour::Always => true,
            Colour::Never => false,
            Colour::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }
}

/// `--max-traces` and `--max-spans-per-trace`: the bounds of `lens watch` and `lens check`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub(crate) struct Bounds {
    /// The most traces held; beyond it whole traces are evicted, complete ones first, oldest
    /// first (and counted)
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_traces: u64,

    /// The most spans held for one trace; later ones are dropped (and counted) and the trace is
    /// marked partial
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    max_spans_per_trace: u64,
}

impl Bounds {
    /// The assembler's configuration with these bounds.
    pub(crate) fn config(self) -> lens_watch::assemble::Config {
        lens_watch::assemble::Config {
            max_traces: usize::try_from(self.max_traces).unwrap_or(usize::MAX),
            max_spans_per_trace: usize::try_from(self.max_spans_per_trace).unwrap_or(usize::MAX),
            ..lens_watch::assemble::Config::default()
        }
    }
}

/// The doctor's options, the same for `lens watch` and `lens check`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub(crate) struct DoctorFlags {
    /// The doctor's pairing window over a queue, in seconds: how long after a message is sent a
    /// consumer's new trace may start and still be taken for its lost hop, where the two sides
    /// record no message id in common (default 2; docs/doctor.md#over-a-queue)
    #[arg(long, value_name = "SECONDS", value_parser = queue_window)]
    queue_window: Option<u64>,
}

impl DoctorFlags {
    /// Sets what was given on the doctor's configuration.
    pub(crate) fn apply(self, config: &mut lens_watch::diagnose::DoctorConfig) {
        if let Some(window) = self.queue_window {
            config.queue_window_nanos = window;
        }
    }
}

/// `--queue-window`: seconds in (0, 3600], as nanoseconds.
fn queue_window(value: &str) -> Result<u64, String> {
    match value.parse::<f64>() {
        // In range, the product is at most 3.6e12: it fits a u64.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(seconds) if seconds > 0.0 && seconds <= 3600.0 => Ok((seconds * 1e9) as u64),
        _ => Err(format!(
            "'{value}' is not a pairing window: seconds, more than 0 and at most 3600"
        )),
    }
}

/// Writes `out` to standard output (and flushes it). A reader that has gone (a closed pipe, as
/// with `lens check x | head`) is no error: `Ok(false)`, nothing more is to be written and the
/// command ends quietly with its own status. Any other failure is said, and is exit 2.
pub(crate) fn print(out: &str) -> Result<bool, ExitCode> {
    if out.is_empty() {
        return Ok(true);
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => {
            eprintln!("error: cannot write the traces: {e}");
            Err(ExitCode::from(USAGE_ERROR))
        }
    }
}

/// Binds `addr`, the OTLP receiver address of `command`'s `flag` (`--grpc`, `--http`), not
/// blocking; a clear usage error (naming the port and the flag) when it cannot.
pub(crate) fn bind_receiver(
    command: &str,
    addr: std::net::SocketAddr,
    flag: &str,
) -> Result<std::net::TcpListener, ExitCode> {
    std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| {
            let message = if e.kind() == std::io::ErrorKind::AddrInUse {
                format!(
                    "port {} is already in use ({flag} {addr}): another `lens watch`, `lens probe` \
or an OpenTelemetry Collector may be running; stop it or pass {flag} with another address",
                    addr.port()
                )
            } else {
                format!("cannot listen on {addr} ({flag}): {e}")
            };
            crate::usage::usage_error(command, message)
        })
}

/// Seconds in (0, 600]: the timeouts and waits of `lens demo` and `lens probe`.
pub(crate) fn seconds_up_to_ten_minutes(value: &str) -> Result<std::time::Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 600.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| "expected seconds in (0, 600]".to_owned())
}
