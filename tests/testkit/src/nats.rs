//! A real `nats-server` for tests (Debian's package, 2.9.x): started on 127.0.0.1 on a port
//! the server picks itself (`-p -1`, read back from its log: no race for a port), with
//! JetStream in a store directory of its own, and stopped (its directory removed) when the
//! [`NatsServer`] is dropped.
//!
//! Without the binary, [`NatsServer::start`] prints why and returns `None` (the test skips),
//! unless `LENS_NATS=require` (CI), when it fails the test.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable that makes a missing `nats-server` a failure.
pub const REQUIRE_ENV: &str = "LENS_NATS";

/// Why [`NatsServer::try_start`] has no server.
#[derive(Debug)]
pub enum NatsStartError {
    /// No `nats-server` on `PATH`.
    NotInstalled,
    /// It is installed but did not start (the reason, with its log).
    Failed(String),
}

impl std::fmt::Display for NatsStartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NatsStartError::NotInstalled => {
                f.write_str("nats-server is not installed (apt-get install nats-server)")
            }
            NatsStartError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for NatsStartError {}

/// A running `nats-server`, stopped when dropped.
#[derive(Debug)]
pub struct NatsServer {
    child: Child,
    port: u16,
    store: PathBuf,
}

impl NatsServer {
    /// Starts `nats-server -a 127.0.0.1 -p -1 -js -sd <fresh dir>` and waits until it says it
    /// is ready. `None` (and a line on stderr) when the binary is missing and
    /// `LENS_NATS` is not `require`; a panic when it cannot start otherwise.
    pub fn start() -> Option<NatsServer> {
        let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require");
        match NatsServer::try_start() {
            Ok(server) => Some(server),
            Err(NatsStartError::NotInstalled) if !required => {
                eprintln!(
                    "skipped: nats-server is not installed (apt-get install nats-server; \
                     {REQUIRE_ENV}=require makes this a failure)"
                );
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    /// [`NatsServer::start`] without a skip or a panic: why the server could not start, for a
    /// harness that reports it (the interop run).
    pub fn try_start() -> Result<NatsServer, NatsStartError> {
        NatsServer::try_start_on("127.0.0.1")
    }

    /// [`NatsServer::start`] listening on `host` (`0.0.0.0`: every interface, as the package's
    /// service starts it, its `INFO` then naming `0.0.0.0` as its host).
    pub fn start_on(host: &str) -> Option<NatsServer> {
        let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require");
        match NatsServer::try_start_on(host) {
            Ok(server) => Some(server),
            Err(NatsStartError::NotInstalled) if !required => {
                eprintln!("skipped: nats-server is not installed (apt-get install nats-server)");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    /// [`NatsServer::try_start`] listening on `host`.
    pub fn try_start_on(host: &str) -> Result<NatsServer, NatsStartError> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let store = std::env::temp_dir().join(format!(
            "lens-nats-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&store)
            .map_err(|e| NatsStartError::Failed(format!("creating {}: {e}", store.display())))?;
        let spawned = Command::new("nats-server")
            .args(["-a", host, "-p", "-1", "-js", "-sd"])
            .arg(&store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&store);
                return Err(if e.kind() == std::io::ErrorKind::NotFound {
                    NatsStartError::NotInstalled
                } else {
                    NatsStartError::Failed(format!("nats-server could not start: {e}"))
                });
            }
        };
        // The server logs to stderr: its port, then that it is ready. Read until then; keep
        // draining afterwards so that the pipe never fills.
        let Some(stderr) = child.stderr.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(NatsStartError::Failed("no stderr pipe".into()));
        };
        let mut lines = BufReader::new(stderr).lines();
        let mut port = None;
        let mut log = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap_or_default();
            log.push_str(&line);
            log.push('\n');
            if let Some(rest) = line.split("Listening for client connections on ").nth(1) {
                port = rest.trim().rsplit(':').next().and_then(|p| p.parse().ok());
            }
            if line.contains("Server is ready") {
                break;
            }
        }
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(&store);
            return Err(NatsStartError::Failed(format!(
                "nats-server did not report its port:\n{log}"
            )));
        };
        std::thread::spawn(move || for _ in lines {});
        Ok(NatsServer { child, port, store })
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}
