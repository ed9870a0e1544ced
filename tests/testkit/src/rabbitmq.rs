//! A real RabbitMQ broker for tests (Debian's `rabbitmq-server` package, 3.10.x): a node of its
//! own (its name, Mnesia and log directories, `HOME` for the Erlang cookie, no plugins) in a
//! fresh directory, with its own `epmd`, its AMQP listener on 127.0.0.1 and its distribution
//! port on free ports; stopped (both process groups, the directory removed) when the
//! [`RabbitMq`] is dropped. A port taken between choosing it and the broker binding it is
//! retried with new ports.
//!
//! Without the package, [`RabbitMq::start`] prints why and returns `None` (the test skips),
//! unless `LENS_RABBITMQ=require` (CI), when it fails the test.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The environment variable that makes a missing `rabbitmq-server` a failure.
pub const REQUIRE_ENV: &str = "LENS_RABBITMQ";

/// The broker's start script, run directly (the `/usr/sbin` wrapper switches to the `rabbitmq`
/// user and its shared node); `LENS_RABBITMQ_SERVER` overrides it.
const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

/// How long the broker may take to boot (about 10 s on a busy 2-core machine).
const BOOT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why [`RabbitMq::try_start`] has no broker.
#[derive(Debug)]
pub enum RabbitMqStartError {
    /// No `rabbitmq-server` (or no `epmd`) installed.
    NotInstalled,
    /// It is installed but did not start (the reason, with its log).
    Failed(String),
}

impl std::fmt::Display for RabbitMqStartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RabbitMqStartError::NotInstalled => {
                f.write_str("rabbitmq-server is not installed (apt-get install rabbitmq-server)")
            }
            RabbitMqStartError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for RabbitMqStartError {}

/// A running RabbitMQ node, stopped when dropped.
#[derive(Debug)]
pub struct RabbitMq {
    server: Child,
    epmd: Child,
    port: u16,
    dir: PathBuf,
}

impl RabbitMq {
    /// Starts a node and waits until its AMQP listener is up. `None` (and a line on stderr)
    /// when the package is missing and `LENS_RABBITMQ` is not `require`; a panic when it
    /// cannot start otherwise.
    pub fn start() -> Option<RabbitMq> {
        let required = std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require");
        match RabbitMq::try_start() {
            Ok(server) => Some(server),
            Err(RabbitMqStartError::NotInstalled) if !required => {
                eprintln!(
                    "skipped: rabbitmq-server is not installed (apt-get install rabbitmq-server; \
                     {REQUIRE_ENV}=require makes this a failure)"
                );
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    /// [`RabbitMq::start`] without a skip or a panic (three tries, new ports each).
    pub fn try_start() -> Result<RabbitMq, RabbitMqStartError> {
        let server = std::env::var_os("LENS_RABBITMQ_SERVER")
            .map_or_else(|| PathBuf::from(SERVER), PathBuf::from);
        if !server.exists() {
            return Err(RabbitMqStartError::NotInstalled);
        }
        let mut last = String::new();
        for _ in 0..3 {
            match start_once(&server) {
                Ok(node) => return Ok(node),
                Err(RabbitMqStartError::Failed(why)) => last = why,
                Err(e) => return Err(e),
            }
        }
        Err(RabbitMqStartError::Failed(last))
    }

    /// The AMQP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `amqp://guest:guest@127.0.0.1:<port>/` (the default user, allowed from loopback).
    pub fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/", self.port)
    }
}

impl Drop for RabbitMq {
    fn drop(&mut self) {
        stop(&mut self.server);
        stop(&mut self.epmd);
        // SIGKILL is delivered, not awaited: the Erlang VM may hold its listener a moment longer
        // (longer on a loaded machine). Gone means the port refuses connections: wait for that,
        // bounded, so that a node is really gone once dropped.
        let deadline = Instant::now() + STOP_TIMEOUT;
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How long a dropped node may take to close its AMQP port.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Ends `child`'s process group (the start script, the Erlang VM and its helpers).
fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

fn free_port() -> Result<u16, RabbitMqStartError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| RabbitMqStartError::Failed(format!("choosing a port: {e}")))
}

fn failed(what: &str, e: impl std::fmt::Display) -> RabbitMqStartError {
    RabbitMqStartError::Failed(format!("{what}: {e}"))
}

fn start_once(server: &Path) -> Result<RabbitMq, RabbitMqStartError> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("lens-rabbitmq-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| failed(&format!("creating {}", dir.display()), e))?;
    std::fs::write(dir.join("enabled_plugins"), "[].\n")
        .map_err(|e| failed("writing enabled_plugins", e))?;
    let (epmd_port, amqp, dist) = (free_port()?, free_port()?, free_port()?);
    let epmd = Command::new("epmd")
        .args(["-port", &epmd_port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    let mut epmd = match epmd {
        Ok(child) => child,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(if e.kind() == std::io::ErrorKind::NotFound {
                RabbitMqStartError::NotInstalled
            } else {
                failed("epmd could not start", e)
            });
        }
    };
    let path = |name: &str| dir.join(name).into_os_string();
    let spawned = Command::new(server)
        .current_dir(&dir)
        .env("HOME", &dir)
        .env("ERL_EPMD_PORT", epmd_port.to_string())
        .env(
            "RABBITMQ_NODENAME",
            format!("lens-{}-{n}@localhost", std::process::id()),
        )
        .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
        .env("RABBITMQ_NODE_PORT", amqp.to_string())
        .env("RABBITMQ_DIST_PORT", dist.to_string())
        .env("RABBITMQ_MNESIA_BASE", path("mnesia"))
        .env("RABBITMQ_LOG_BASE", path("log"))
        .env("RABBITMQ_LOGS", "-")
        .env("RABBITMQ_ENABLED_PLUGINS_FILE", path("enabled_plugins"))
        .env("RABBITMQ_PID_FILE", path("pid"))
        .env("RABBITMQ_CONFIG_FILE", path("rabbitmq"))
        .env("RABBITMQ_ADVANCED_CONFIG_FILE", path("advanced.config"))
        .env("RABBITMQ_CONF_ENV_FILE", path("rabbitmq-env.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            stop(&mut epmd);
            let _ = std::fs::remove_dir_all(&dir);
            return Err(failed("rabbitmq-server could not start", e));
        }
    };
    let give_up = |child: &mut Child, epmd: &mut Child, why: String| {
        stop(child);
        stop(epmd);
        let _ = std::fs::remove_dir_all(&dir);
        RabbitMqStartError::Failed(why)
    };
    // The node logs to stdout: read until its AMQP listener is up; keep draining afterwards
    // so that the pipe never fills.
    let Some(stdout) = child.stdout.take() else {
        return Err(give_up(&mut child, &mut epmd, "no stdout pipe".into()));
    };
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                // Nobody reads any more: keep draining.
                continue;
            }
        }
    });
    let listening = format!("started TCP listener on 127.0.0.1:{amqp}");
    let deadline = Instant::now() + BOOT_TIMEOUT;
    let mut log = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                log.push_str(&line);
                log.push('\n');
                if line.contains(&listening) {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(give_up(
                    &mut child,
                    &mut epmd,
                    format!("rabbitmq-server did not start in {BOOT_TIMEOUT:?}:\n{log}"),
                ));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(give_up(
                    &mut child,
                    &mut epmd,
                    format!("rabbitmq-server exited while starting:\n{log}"),
                ));
            }
        }
    }
    drop(rx);
    Ok(RabbitMq {
        server: child,
        epmd,
        port: amqp,
        dir,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{Read as _, Write as _};

    use super::RabbitMq;

    #[test]
    fn a_node_answers_amqp_and_goes_when_dropped() {
        let Some(node) = RabbitMq::start() else {
            return;
        };
        let port = node.port();
        // The AMQP handshake: the protocol header answered by the server's Connection.Start
        // (a method frame: type 1).
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(b"AMQP\x00\x00\x09\x01").unwrap();
        let mut frame_type = [0u8; 1];
        stream.read_exact(&mut frame_type).unwrap();
        assert_eq!(frame_type[0], 1);
        drop(stream);
        drop(node);
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}
