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
    child: Option<Child>,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: mpsc::Receiver<String>,
    pub grpc: String,
    pub http: String,
    /// What it said on standard error before where it listens (`--load`: what it loaded).
    pub before: Vec<String>,
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

/// `value` between `after` and the next `end` in lens watch's first line ("lens watch: OTLP/gRPC
/// on ADDR, OTLP/HTTP on http://ADDR/v1/traces, ...").
pub fn address(first: &str, after: &str, end: char) -> String {
    first
        .split(after)
        .nth(1)
        .unwrap()
        .split(end)
        .next()
        .unwrap()
        .to_owned()
}

/// How a stopped `lens watch` ended, and everything it printed.
pub struct Stopped {
    pub status: std::process::ExitStatus,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

impl Watch {
    /// `lens watch` on free ports with a 0.3 s quiet window and `extra`.
    pub fn start(extra: &[&str]) -> Watch {
        let mut args = vec!["--quiet-for", "0.3"];
        args.extend_from_slice(extra);
        Watch::with(&args)
    }

    /// `lens watch` on free ports with `args` (and no other option).
    pub fn with(args: &[&str]) -> Watch {
        Watch::spawn(args, true)
    }

    /// As [`Watch::with`], but nothing reads its standard output (a pipe): once the pipe is
    /// full, its writes wait, as to a reader that has stopped.
    pub fn with_stdout_unread(args: &[&str]) -> Watch {
        Watch::spawn(args, false)
    }

    fn spawn(args: &[&str], read_stdout: bool) -> Watch {
        let mut all = vec!["watch", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut child = command(&all)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = if read_stdout {
            lines(child.stdout.take().unwrap())
        } else {
            // Kept (in the child) unread; dropped with it.
            mpsc::channel().1
        };
        let stderr = lines(child.stderr.take().unwrap());
        let mut before = Vec::new();
        let first = loop {
            let line = stderr
                .recv_timeout(PATIENCE)
                .expect("lens watch says where it listens");
            if line.starts_with("lens watch: OTLP/gRPC on ") {
                break line;
            }
            before.push(line);
        };
        Watch {
            child: Some(child),
            stdout,
            stderr,
            grpc: address(&first, "OTLP/gRPC on ", ','),
            http: address(&first, "OTLP/HTTP on http://", '/'),
            before,
        }
    }

    /// Sends `signal` (`INT`, `TERM`) without waiting.
    pub fn signal(&self, signal: &str) {
        let child = self.child.as_ref().unwrap();
        let killed = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
    }

    /// Sends `signal` (`INT`, `TERM`) and waits for the exit; everything printed since.
    pub fn stop(mut self, signal: &str) -> Stopped {
        self.signal(signal);
        let mut child = self.child.take().unwrap();
        let (done, exited) = mpsc::channel();
        let (stdout, stderr) = (
            std::mem::replace(&mut self.stdout, mpsc::channel().1),
            std::mem::replace(&mut self.stderr, mpsc::channel().1),
        );
        // Waited for on another thread, so that a hang fails after PATIENCE.
        std::thread::spawn(move || {
            let _ = done.send(child.wait());
        });
        let status = exited
            .recv_timeout(PATIENCE)
            .expect("lens watch exits after a signal")
            .unwrap();
        // The child has exited: each iterator ends at its pipe's end.
        Stopped {
            status,
            stdout: stdout.iter().collect(),
            stderr: stderr.iter().collect(),
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
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `lens ARGS`, which must succeed; what it printed.
pub fn succeed(args: &[&str]) -> std::process::Output {
    let output = command(args).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "lens {args:?}: {stderr}");
    output
}

/// Runs `lens demo --break gateway->planner` sending to `lens watch` at `http` (its HTTP
/// address): the request crosses that hop without its context (a `lost-context` finding).
pub fn demo_broken(http: &str) {
    succeed(&[
        "demo",
        "--break",
        "gateway->planner",
        "--otlp",
        &format!("http://{http}"),
    ]);
}

/// One HTTP/1.1 request to `addr` (a JSON body when given); the status line and the body.
pub fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> (String, String) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// Runs `lens demo --requests N --concurrency 8 --otlp URL` over `protocol`; the spans it was
/// acknowledged for ("exported N spans").
pub fn demo_requests(url: &str, protocol: &str, requests: u64) -> u64 {
    let output = command(&[
        "demo",
        "--requests",
        &requests.to_string(),
        "--concurrency",
        "8",
        "--otlp",
        url,
    ])
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    .stdout(Stdio::null())
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("exported ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("the demo says what it exported: {stderr}"))
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
