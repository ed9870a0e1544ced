//! A running `lens watch` for the tests, and `lens demo --otlp` to send it a trace.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The longest a test waits for a line before failing (a bound on failure, not a timing).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A running `lens watch`, killed when dropped.
pub struct Watch {
    pub child: Child,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: mpsc::Receiver<String>,
    pub grpc: String,
    pub http: String,
}

pub fn lines(reader: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lens"));
    command.args(args);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    command
}

impl Watch {
    pub fn start(extra: &[&str]) -> Watch {
        let mut args = vec![
            "watch",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--quiet-for",
            "0.3",
        ];
        args.extend_from_slice(extra);
        let mut child = command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = lines(child.stdout.take().unwrap());
        let stderr = lines(child.stderr.take().unwrap());
        let first = stderr
            .recv_timeout(PATIENCE)
            .expect("lens watch says where it listens");
        // "lens watch: OTLP/gRPC on ADDR, OTLP/HTTP on http://ADDR/v1/traces, ..."
        let grpc = first
            .split("OTLP/gRPC on ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_owned();
        let http = first
            .split("OTLP/HTTP on http://")
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        Watch {
            child,
            stdout,
            stderr,
            grpc,
            http,
        }
    }

    pub fn next_stdout(&self) -> String {
        self.stdout
            .recv_timeout(PATIENCE)
            .expect("a line on standard output")
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `lens demo --json` sending to `url` (with `protocol`), spans and metrics; the demo's
/// trace id.
pub fn demo_into(url: &str, protocol: &str) -> String {
    let output = command(&["demo", "--json", "--otlp", url])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("exported 13 spans"), "{stderr}");
    // The metrics go to the same endpoint: accepted (and dropped), no warning.
    assert!(
        stderr.contains("exported the metrics of 4 services"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    let spans: Value = serde_json::from_slice(&output.stdout).unwrap();
    spans[0]["trace_id"].as_str().unwrap().to_owned()
}
