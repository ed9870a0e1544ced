//! Python processes: started from the venv, read line by line with timeouts, killed on drop.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{Error, Result};

/// How long a Python process may take to start (imports) or to answer one request.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(60);
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a Python process may take to flush its spans and exit after stdin closes.
pub(crate) const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// A running Python script: stdin piped (closing it asks the script to stop), stdout read line
/// by line on a thread, stderr passed through. Killed when dropped.
#[derive(Debug)]
pub(crate) struct PythonProcess {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl PythonProcess {
    /// Starts `python script args...`.
    pub(crate) fn spawn<I, S>(python: &Path, script: &Path, args: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let name = script
            .file_name()
            .map_or_else(|| "script".into(), |n| n.to_string_lossy().into_owned());
        let mut child = Command::new(python)
            .arg(script)
            .args(args)
            // No __pycache__ beside the scripts in the checkout; output unbuffered.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONUNBUFFERED", "1")
            .env_remove("PYTHONPATH")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(Error::io(format!("starting {} {name}", python.display())))?;
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(PythonProcess {
            name,
            child,
            stdin,
            lines,
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The next line of output, waiting at most `timeout`.
    pub(crate) fn read_line(&mut self, timeout: Duration) -> Result<String> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(Error::Timeout {
                what: format!("python {}", self.name),
                after: timeout,
            }),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.wait(Duration::from_secs(5)).map_or_else(
                    |_| "still running, stdout closed".to_string(),
                    |s| s.to_string(),
                );
                Err(Error::Exited {
                    process: self.name.clone(),
                    status,
                })
            }
        }
    }

    /// The next line starting with `prefix`, its remainder; other lines are echoed.
    pub(crate) fn read_tagged(&mut self, prefix: &str, timeout: Duration) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.read_line(left)?;
            match line.strip_prefix(prefix) {
                Some(rest) => return Ok(rest.trim().to_owned()),
                None => println!("  [{}] {line}", self.name),
            }
        }
    }

    /// Writes one line to the script's stdin.
    pub(crate) fn send_line(&mut self, line: &str) -> Result<()> {
        let what = format!("writing to python {}", self.name);
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Error::Python {
                process: self.name.clone(),
                message: "stdin already closed".into(),
            });
        };
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(Error::io(what))
    }

    /// Sends one JSON request line and reads one JSON answer line; an answer with an `error`
    /// member is an error.
    pub(crate) fn request(&mut self, request: &Value) -> Result<Value> {
        self.send_line(&request.to_string())?;
        let line = self.read_line(ANSWER_TIMEOUT)?;
        let answer: Value = serde_json::from_str(&line)
            .map_err(Error::json(format!("answer of python {}", self.name)))?;
        if let Some(message) = answer.get("error") {
            return Err(Error::Python {
                process: self.name.clone(),
                message: message.to_string(),
            });
        }
        Ok(answer)
    }

    /// Closes stdin: the scripts take that as the signal to flush their spans and exit.
    pub(crate) fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Waits for the process to exit, at most `timeout`.
    pub(crate) fn wait(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() >= deadline => {
                    return Err(Error::Timeout {
                        what: format!("python {} to exit", self.name),
                        after: timeout,
                    });
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(Error::io(format!("waiting for {}", self.name))(e)),
            }
        }
    }

    /// Closes stdin and waits for a clean exit.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.close_stdin();
        let status = self.wait(EXIT_TIMEOUT)?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Exited {
                process: self.name.clone(),
                status: status.to_string(),
            })
        }
    }
}

impl Drop for PythonProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ignored = self.child.kill();
            let _ignored = self.child.wait();
        }
    }
}
