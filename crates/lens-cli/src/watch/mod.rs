//! `lens watch`: receive OTLP (gRPC and HTTP) from every service, assemble the traces and show
//! each as it completes: the waterfall (or `--json`) on standard output, a status line on
//! standard error, and a live page on the HTTP port.
//!
//! lens-watch's receivers (in their tasks) → a bounded channel → the [`Session`] (one task, its
//! only writer: `--save`, assembly, the doctor) → the terminal ([`terminal`]) and the page's
//! API ([`page`]). A stop ([`stop`]) drains what was accepted first.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use lens_watch::assemble::Config;
use lens_watch::decode::Batch;
use lens_watch::receive;
use lens_watch::render::Output;
use lens_watch::session::{Session, SessionConfig};
use tokio::sync::mpsc;

use crate::files::Source;
use crate::flags::{Bounds, ColourFlag, DoctorFlags, JsonFlag, bind_receiver};
use crate::hops::HOP_NAMES;
use crate::runtime::runtime;
use crate::usage::usage_error;
use load::{load, open_loads};
use save::{Save, append, open_save};
use stop::{Signals, stop_at_once};
use store::Store;
use terminal::{Shown, Terminal};

mod load;
mod page;
mod save;
mod stop;
mod store;
mod terminal;

/// `lens watch`: an OTLP receiver that shows every trace as it completes.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Receives OpenTelemetry traces over OTLP/gRPC (--grpc, default 127.0.0.1:4317) \
and OTLP/HTTP (--http, default 127.0.0.1:4318: POST /v1/traces, protobuf or JSON, gzip) from any \
number of services, groups the spans by trace, and prints each trace once it has received no new \
span for --quiet-for seconds: its waterfall (or with --json one JSON object a line), and a status \
line on standard error, each followed by the propagation doctor's findings on it \
(docs/doctor.md: where context was lost between services and why). The page at http://ADDR/ on the HTTP port lists the traces live. Point \
any SDK at it: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 (or :4317 with \
OTEL_EXPORTER_OTLP_PROTOCOL=grpc); `lens demo --otlp http://127.0.0.1:4318` sends it a trace. \
--load FILE first shows (and counts) the traces of files as `lens check` reads them: OTLP/JSON \
lines as --save and the Collector's file exporter write them, gzip or zstd too; a file is read up \
to a bad or cut line, with one warning naming the line. \
OTLP logs are received too (gRPC LogsService, HTTP POST /v1/logs): the page shows each span's log \
records under it and lists those of no span; --logs prints them under their spans here.",
    mut_arg("json", |a| a.help("Print one JSON object per completed trace (a line each) instead of the waterfall")),
    after_help = "Logs: OTLP logs are received too (gRPC LogsService, HTTP POST /v1/logs, protobuf \
or JSON): the page shows each span's log records under it and lists those of no span; --logs \
prints them under their spans here; the newest --max-logs are held; --save writes them as \
resourceLogs lines, which --load reads back.

--save FILE --load FILE keeps a session across restarts: what was saved before is \
shown, what arrives now is appended to FILE, and no span is shown or written twice (the file is \
read whole before anything is received). A --load file is read up to a bad or cut line, with one \
warning naming it; the watch opens all the same.

Ctrl-C (SIGINT) or SIGTERM stops it without losing what it acknowledged: new \
exports are answered \"unavailable\" (exporters retry them), every batch already accepted is \
saved (--save) and shown, traces still open are shown marked as cut short, and a last line \
accounts for every span received. A second Ctrl-C stops at once and says how many accepted \
spans it left unwritten.

Exit status: 0 stopped (Ctrl-C or SIGTERM), 1 the --save file could not be written, 2 usage \
error, a --load file that cannot be opened or an address that cannot be listened on, 130 (143) a second Ctrl-C (SIGTERM) stopped it \
at once."
)]
pub(crate) struct Args {
    /// The OTLP/gRPC address (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4317")]
    grpc: SocketAddr,

    /// The OTLP/HTTP address, also serving the page (port 0 picks a free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4318")]
    http: SocketAddr,

    #[command(flatten)]
    json: JsonFlag,

    /// Leave out info findings (a hop linked by its server's trust policy: untrusted-linked)
    #[arg(long)]
    quiet: bool,

    /// Append every span (and log record) received to FILE as OTLP/JSON lines (for `lens check
    /// FILE`, and `--load FILE` next time)
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,

    /// First show the spans of FILE (OTLP/JSON lines as --save writes them or the Collector's
    /// file exporter does; gzip or zstd too); repeatable, and FILE may be the --save file
    #[arg(long, value_name = "FILE", num_args = 1.., action = clap::ArgAction::Append)]
    load: Vec<String>,

    /// Seconds without a new span after which a trace is complete (a late span reopens it)
    #[arg(long, value_name = "S", default_value = "2", value_parser = seconds)]
    quiet_for: Duration,

    #[command(flatten)]
    doctor: DoctorFlags,

    #[command(flatten)]
    bounds: Bounds,

    /// Print each span's log records (severity and body) under it in the waterfall, or in its
    /// "logs" with --json
    #[arg(long)]
    logs: bool,

    /// The most log records held (the oldest are dropped first, and counted in the status line)
    #[arg(long, value_name = "N", default_value = "100000")]
    max_logs: usize,

    #[command(flatten)]
    color: ColourFlag,
}

/// `--quiet-for`: seconds in [0, 3600].
fn seconds(value: &str) -> Result<Duration, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 3600.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "expected seconds in [0, 3600]".to_owned())
}

/// Batches waiting for the session; a full channel holds the receivers back.
const CHANNEL: usize = 256;

/// Runs `lens watch`.
pub(crate) fn main(args: Args) -> ExitCode {
    // The --save file first: `--save F --load F` on a first run finds F, empty.
    let save = match &args.save {
        None => None,
        Some(path) => match open_save(path) {
            Ok(file) => Some((path.clone(), file)),
            Err(e) => {
                return usage_error(
                    "watch",
                    format!("cannot write the --save file {}: {e}", path.display()),
                );
            }
        },
    };
    let sources = match open_loads(&args.load) {
        Ok(sources) => sources,
        Err(message) => return usage_error("watch", message),
    };
    let grpc = match bind_receiver("watch", args.grpc, "--grpc") {
        Ok(l) => l,
        Err(code) => return code,
    };
    let http = match bind_receiver("watch", args.http, "--http") {
        Ok(l) => l,
        Err(code) => return code,
    };
    for (flag, addr) in [("--grpc", args.grpc), ("--http", args.http)] {
        if !addr.ip().is_loopback() {
            eprintln!(
                "warning: {flag} {addr} is not a loopback address: the traces received, and the page \
(--http), are reachable by anyone who can reach that port"
            );
        }
    }
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
    };
    let output = if args.json.json {
        Output::Json
    } else {
        Output::Text {
            colour: args.color.color.enabled(),
        }
    };
    let mut config = SessionConfig::default();
    config.assemble = Config {
        quiet_for: args.quiet_for,
        ..args.bounds.config()
    };
    config.quiet = args.quiet;
    config.hop_names = HOP_NAMES;
    config.max_logs = args.max_logs;
    args.doctor.apply(&mut config.doctor);
    let shown = Shown {
        output,
        logs: args.logs,
    };
    let code = runtime.block_on(run(grpc, http, config, shown, save, sources));
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// Why the loop stopped taking batches.
enum Ended {
    /// A signal: drain what was accepted, then stop.
    Signal(&'static str),
    /// Standard output was closed: drain quietly, then stop.
    Closed,
    /// The receivers are gone, or the save file failed: show what is held, then stop.
    Done,
}

async fn run(
    grpc: std::net::TcpListener,
    http: std::net::TcpListener,
    config: SessionConfig,
    shown: Shown,
    mut save: Save,
    sources: Vec<Source>,
) -> ExitCode {
    let (grpc, http) = match (
        tokio::net::TcpListener::from_std(grpc),
        tokio::net::TcpListener::from_std(http),
    ) {
        (Ok(g), Ok(h)) => (g, h),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (grpc_addr, http_addr) = match (grpc.local_addr(), http.local_addr()) {
        (Ok(g), Ok(h)) => (g, h),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut signals = match Signals::new() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("error: cannot listen for signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let max_traces = config.assemble.max_traces;
    // The files are read whole before the servers start: the spans received from now on (and
    // appended to --save, which may be one of them) are not read back.
    let mut session = Session::new(config);
    let loaded = load(sources, &mut session);
    let store = Store::new(session);
    let (sender, mut batches) = mpsc::channel::<Batch>(CHANNEL);
    // The servers run until everything accepted has been saved and shown, answering
    // "unavailable" (retryable) once the channel is closed, then stop gracefully.
    let (stop_servers, servers_stop) = tokio::sync::watch::channel(false);
    let until_stopped = |mut stop: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stop.wait_for(|stopped| *stopped).await;
    };
    let grpc_sender = sender.clone();
    let grpc_stopped = until_stopped(servers_stop.clone());
    let grpc_server = tokio::spawn(async move {
        if let Err(e) = receive::grpc::serve(grpc, grpc_sender, grpc_stopped).await {
            eprintln!("error: the OTLP/gRPC receiver stopped: {e}");
        }
    });
    let router = receive::http::router(sender.clone()).merge(page::router(store.clone()));
    let http_stopped = until_stopped(servers_stop);
    let http_server = tokio::spawn(async move {
        if let Err(e) = receive::http::serve(http, router, http_stopped).await {
            eprintln!("error: the OTLP/HTTP receiver stopped: {e}");
        }
    });
    drop(sender);
    eprintln!(
        "lens watch: OTLP/gRPC on {grpc_addr}, OTLP/HTTP on http://{http_addr}/v1/traces (and /v1/logs), the page on http://{http_addr}/ (Ctrl-C to stop)"
    );

    let mut terminal = Terminal::new(store.clone(), shown, max_traces);
    let mut saved: u64 = 0;
    let mut code = ExitCode::SUCCESS;
    if loaded > 0 {
        // What the files held is shown first, each trace complete as the file left it.
        let done = store.lock().flush_by_start();
        if let Err(code) = terminal.show(&done, false) {
            return code;
        }
    }
    let ended = loop {
        let deadline = store.lock().next_deadline();
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            batch = batches.recv() => match batch {
                Some(batch) => {
                    if take(&mut save, &store, batch, &mut saved).is_err() {
                        code = ExitCode::FAILURE;
                        break Ended::Done;
                    }
                }
                None => break Ended::Done,
            },
            () = sleep => {}
            signal = signals.next() => break Ended::Signal(signal),
        }
        let done = store.lock().poll(Instant::now());
        match terminal.show(&done, false) {
            Ok(true) => {}
            Ok(false) => break Ended::Closed,
            Err(code) => return code,
        }
    };

    let first = match ended {
        Ended::Done => {
            let done = store.lock().flush();
            return match terminal.show(&done, true) {
                Err(code) => code,
                Ok(_) => code,
            };
        }
        Ended::Signal(signal) => signal,
        Ended::Closed => "standard output closed",
    };
    // Stop accepting (new exports are answered "unavailable", which exporters retry), then
    // save and assemble every batch already accepted: its sender was told "success".
    batches.close();
    let mut accepted = Vec::new();
    while let Some(batch) = batches.recv().await {
        accepted.push(batch);
    }
    let left = Arc::new(AtomicU64::new(
        accepted.iter().map(|b| b.spans.len() as u64).sum(),
    ));
    terminal.clear_status();
    eprintln!(
        "lens watch: stopping ({first}): saving and showing the {} spans accepted and not yet \
assembled, then every trace still open; {} again stops at once",
        left.load(Ordering::Relaxed),
        if matches!(ended, Ended::Signal(_)) {
            first
        } else {
            "Ctrl-C"
        }
    );
    let save = Arc::new(Mutex::new(save));
    // A second signal ends the run from its own task, even while this one is held up by a
    // slow standard output; it waits for a batch being appended, so the file ends whole.
    tokio::spawn(stop_at_once(
        signals,
        Arc::clone(&save),
        Arc::clone(&left),
        store.clone(),
        terminal.tty(),
    ));
    for batch in accepted {
        let spans = batch.spans.len() as u64;
        let taken = {
            // `left` changes under the lock that `stop_at_once` takes: a batch is either
            // written or left, never both.
            let mut save = save.lock().unwrap_or_else(PoisonError::into_inner);
            let taken = take(&mut save, &store, batch, &mut saved);
            left.fetch_sub(spans, Ordering::Relaxed);
            taken
        };
        if taken.is_err() {
            code = ExitCode::FAILURE;
            break;
        }
    }
    // Traces whose quiet window has passed are shown as usual; the rest are cut short.
    let done = store.lock().stop(Instant::now());
    if let Err(code) = terminal.show(&done, true) {
        return code;
    }
    let stats = store.lock().stats();
    let saved = save
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
        .then_some(saved);
    let loaded = if loaded > 0 {
        format!(" ({loaded} of the spans received were loaded by --load, not saved again)")
    } else {
        String::new()
    };
    eprintln!(
        "lens watch: stopped ({first}): {}{loaded}",
        stats.spans.account(saved)
    );
    let _ = stop_servers.send(true);
    // In-flight answers (all "unavailable" by now) get a moment to go out.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = grpc_server.await;
        let _ = http_server.await;
    })
    .await;
    code
}

/// Appends `batch` to the save file (if any; a failure is said and ends the run) and gives it
/// to the session.
fn take(save: &mut Save, store: &Store, batch: Batch, saved: &mut u64) -> Result<(), ()> {
    if let Some((path, file)) = save {
        if let Err(e) = append(file, &batch) {
            eprintln!(
                "error: cannot append to the --save file {}: {e}",
                path.display()
            );
            return Err(());
        }
        *saved += batch.spans.len() as u64;
    }
    store.lock().ingest(batch, Instant::now());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_windows_are_seconds_up_to_an_hour() {
        assert_eq!(seconds("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        for bad in ["-1", "3601", "NaN", "x"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
