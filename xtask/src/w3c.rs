//! `cargo xtask w3c`: the official W3C Trace Context test harness against `lens w3c-service`.
//!
//! 1. Builds `lens` (release) and prepares a Python venv with aiohttp (`<target-dir>/w3c-venv`).
//! 2. Starts `lens w3c-service --listen 127.0.0.1:0`, reads the address it prints and waits until
//!    it accepts connections.
//! 3. Runs the harness's `test.py` (a checkout the user provides; nothing is downloaded or
//!    vendored) with `SPEC_LEVEL=2` and `STRICT_LEVEL=2` (Trace Context Level 2 tests included,
//!    strict tests included), then each extra test file, against the service.
//! 4. Stops the service on every way out ([`Service`]'s `Drop`) and exits with the harness's status.
//!
//! Results and the known failures: docs/w3c-conformance.md.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::failure::{Failure, Result};
use crate::interop::{run_bounded, target_dir, venv_python, wait_bounded};
use crate::run::run;
use crate::workspace::cargo;

pub(crate) const HELP: &str = "\
usage: cargo xtask w3c --harness DIR [--level2 FILE...] [--venv DIR] [-- TEST-PY-ARGS...]

Runs the official W3C Trace Context test harness against `lens w3c-service`
(docs/propagation-rules.md#w3c-test-service).
Results and the known failures: docs/w3c-conformance.md.

  --harness DIR     the `test/` folder of a checkout of https://github.com/w3c/trace-context
                    (test.py, client.py, server.py, tracecontext/). Nothing is downloaded or
                    vendored; get it with
                      git clone --depth 1 https://github.com/w3c/trace-context
                      cargo xtask w3c --harness trace-context/test
  --level2 FILE...  more test files in test.py's style (they `import test`), each run after
                    test.py against the same service (with DIR on PYTHONPATH)
  --venv DIR        the Python venv to use (default <target-dir>/w3c-venv): used as it is when
                    it can import aiohttp; otherwise created with `python3 -m venv` if missing,
                    then given `pip install aiohttp` (PyPI needed once)
  -- ARGS           passed to test.py after the service URL (test names, e.g. AdvancedTest)

Steps: builds `lens` (release); starts `lens w3c-service --listen 127.0.0.1:0` (a free port) and
waits until it accepts connections; runs `python test.py http://127.0.0.1:PORT/test` in DIR with
SPEC_LEVEL=2 and STRICT_LEVEL=2, then each --level2 file; stops the service. The harness binds 127.0.0.1:7777
itself (HARNESS_PORT changes that), so that port must be free.

Exit status: 0 when every run passed; otherwise the sum of the runs' exit statuses (test.py exits
with its number of errors + failures), at most 255; 2 for a usage error (e.g. no --harness).
Not part of `cargo xtask test` or CI: it runs third-party code and needs PyPI once.";

/// Upper bounds: creating the venv, installing aiohttp, checking an import, the service's start,
/// and one harness run (test.py takes about a second; each of its calls times out after 5 s).
const VENV_TIMEOUT: Duration = Duration::from_secs(120);
const PIP_TIMEOUT: Duration = Duration::from_secs(600);
const IMPORT_TIMEOUT: Duration = Duration::from_secs(30);
const SERVICE_TIMEOUT: Duration = Duration::from_secs(30);
const HARNESS_TIMEOUT: Duration = Duration::from_secs(600);

/// The command line of `cargo xtask w3c`.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    harness: PathBuf,
    level2: Vec<PathBuf>,
    venv: Option<PathBuf>,
    /// After `--`: passed to test.py.
    extra: Vec<String>,
}

/// `Ok(None)` for `--help`.
fn parse_args(args: &[String]) -> Result<Option<Options>> {
    let (ours, extra) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut harness = None;
    let mut venv = None;
    let mut level2 = Vec::new();
    let mut iter = ours.iter().peekable();
    while let Some(arg) = iter.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| iter.next().cloned())
                .filter(|v| !v.is_empty() && !v.starts_with("--"))
                .map(PathBuf::from)
                .ok_or_else(|| Failure::Usage(format!("`{name}` needs a value"), HELP))
        };
        match name {
            "-h" | "--help" | "help" => return Ok(None),
            "--harness" => harness = Some(value()?),
            "--venv" => venv = Some(value()?),
            "--level2" => {
                level2.push(value()?);
                // `--level2 A B C`: every following argument up to the next option.
                while let Some(file) = iter.next_if(|a| !a.starts_with('-')) {
                    level2.push(PathBuf::from(file));
                }
            }
            other => {
                return Err(Failure::Usage(
                    format!("unexpected argument `{other}`"),
                    HELP,
                ));
            }
        }
    }
    let Some(harness) = harness else {
        return Err(Failure::Usage(
            "no --harness DIR given: the W3C test harness is not part of lens (see below for how \
             to get it)"
                .to_owned(),
            HELP,
        ));
    };
    Ok(Some(Options {
        harness,
        level2,
        venv,
        extra: extra.to_vec(),
    }))
}

/// `cargo xtask w3c`.
pub(crate) fn w3c(args: &[String]) -> Result {
    let Some(options) = parse_args(args)? else {
        println!("{HELP}");
        return Ok(());
    };
    let harness = harness_dir(&options.harness)?;
    let level2 = options
        .level2
        .iter()
        .map(|file| {
            std::path::absolute(file)
                .ok()
                .filter(|f| f.is_file())
                .ok_or_else(|| Failure::Step(format!("w3c: no test file {}", file.display())))
        })
        .collect::<Result<Vec<_>>>()?;
    harness_port_is_free()?;

    let target = target_dir();
    run(
        "w3c build",
        cargo(&["build", "--release", "-p", "lens-cli", "--bin", "lens"]),
    )?;
    let lens = target
        .join("release")
        .join(format!("lens{}", std::env::consts::EXE_SUFFIX));
    let venv = match options.venv {
        Some(dir) => std::path::absolute(&dir).unwrap_or(dir),
        None => target.join("w3c-venv"),
    };
    let python = ensure_venv(&venv)?;

    let service = Service::start(&lens)?;
    let endpoint = format!("http://{}/test", service.addr);
    println!("w3c: lens w3c-service listening at {endpoint}");

    let mut runs = vec![(harness.join("test.py"), options.extra)];
    runs.extend(level2.into_iter().map(|file| (file, Vec::new())));
    let mut outcomes = Vec::with_capacity(runs.len());
    for (file, extra) in runs {
        let name = file.file_name().map_or_else(
            || file.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        let mut command = Command::new(&python);
        command
            .arg(&file)
            .arg(&endpoint)
            .args(&extra)
            .current_dir(&harness)
            // test.py's defaults are SPEC_LEVEL=1 (which skips the Level 2 tests) and
            // STRICT_LEVEL=2: ask for both explicitly.
            .env("SPEC_LEVEL", "2")
            .env("STRICT_LEVEL", "2")
            .env("PYTHONUNBUFFERED", "1")
            .env("PYTHONPATH", python_path(&harness));
        println!("\n==> [w3c {name}] {}", crate::run::show(&command));
        let child = command
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| Failure::Step(format!("w3c: cannot start {}: {e}", python.display())))?;
        let status = wait_bounded(child, HARNESS_TIMEOUT)
            .map_err(|why| Failure::Step(format!("w3c: {name} {why}")))?;
        // Killed by a signal: counted as one failure.
        outcomes.push((name, status.code().unwrap_or(1)));
    }
    drop(service);

    println!();
    for (name, code) in &outcomes {
        match code {
            0 => println!("w3c: {name}: all tests passed"),
            n => println!("w3c: {name}: exit status {n} (errors + failures)"),
        }
    }
    match exit_status(outcomes.iter().map(|(_, code)| *code)) {
        0 => Ok(()),
        code => Err(Failure::Status(
            code,
            "w3c: some harness tests failed (the known ones: docs/w3c-conformance.md)".to_owned(),
        )),
    }
}

/// The sum of the runs' exit statuses, at most 255 (a negative status counts as 255).
fn exit_status(codes: impl Iterator<Item = i32>) -> u8 {
    let total = codes
        .map(|c| u32::try_from(c).map_or(255, |c| c.min(255)))
        .fold(0u32, u32::saturating_add);
    u8::try_from(total).unwrap_or(u8::MAX)
}

/// `dir` made absolute, once it looks like w3c/trace-context's `test/` folder.
fn harness_dir(dir: &Path) -> Result<PathBuf> {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let missing: Vec<&str> = ["test.py", "client.py", "server.py", "tracecontext"]
        .into_iter()
        .filter(|name| !absolute.join(name).exists())
        .collect();
    if missing.is_empty() {
        Ok(absolute)
    } else {
        Err(Failure::Step(format!(
            "w3c: {} is not the test/ folder of https://github.com/w3c/trace-context (no {})",
            dir.display(),
            missing.join(", ")
        )))
    }
}

/// The harness binds `HARNESS_BIND_HOST:HARNESS_BIND_PORT` (default 127.0.0.1:7777) itself; fails
/// early, with a clear message, when something already listens there.
fn harness_port_is_free() -> Result {
    let var = |names: [&str; 2], default: &str| {
        names
            .iter()
            .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
            .unwrap_or_else(|| default.to_owned())
    };
    let host = var(["HARNESS_BIND_HOST", "HARNESS_HOST"], "127.0.0.1");
    let port = var(["HARNESS_BIND_PORT", "HARNESS_PORT"], "7777");
    let Some(addr) = format!("{host}:{port}")
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
    else {
        return Ok(()); // Not ours to judge: the harness reports it.
    };
    if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok() {
        return Err(Failure::Step(format!(
            "w3c: something already listens on {addr}, where the harness binds its own server; \
             stop it, or set HARNESS_PORT to another port"
        )));
    }
    Ok(())
}

/// `harness` first, then any `PYTHONPATH` already set (extra test files `import test`).
fn python_path(harness: &Path) -> std::ffi::OsString {
    let existing = std::env::var_os("PYTHONPATH").unwrap_or_default();
    let paths = std::iter::once(harness.to_path_buf()).chain(std::env::split_paths(&existing));
    std::env::join_paths(paths).unwrap_or_else(|_| harness.as_os_str().to_owned())
}

// ---------------------------------------------------------------------------------------------
// The venv

/// The venv's Python: `venv` as it is when it can import aiohttp; otherwise created (when it has
/// no Python) and given aiohttp.
fn ensure_venv(venv: &Path) -> Result<PathBuf> {
    let python = venv_python(venv);
    if python.is_file() && imports_aiohttp(&python) {
        println!("w3c: reusing {}", venv.display());
        return Ok(python);
    }
    if !python.is_file() {
        let python3 = crate::requirements::find_on_path("python3").map_err(|why| {
            Failure::Step(format!(
                "w3c: {why}; install Python 3 (with venv, e.g. Debian's python3-venv), or pass \
                 --venv DIR of a venv that has aiohttp"
            ))
        })?;
        let mut create = Command::new(python3);
        create.arg("-m").arg("venv").arg(venv);
        run_bounded("w3c venv", create, VENV_TIMEOUT).map_err(|e| {
            hint(
                e,
                "`python3 -m venv` failed: on Debian/Ubuntu install python3-venv; or pass --venv \
                 DIR of a venv that has aiohttp",
            )
        })?;
    }
    let mut install = Command::new(&python);
    install.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-input",
        "--disable-pip-version-check",
        "aiohttp",
    ]);
    run_bounded("w3c pip install", install, PIP_TIMEOUT).map_err(|e| {
        hint(
            e,
            "`pip install aiohttp` failed: PyPI must be reachable the first time; or pass --venv \
             DIR of a venv that has aiohttp",
        )
    })?;
    if !imports_aiohttp(&python) {
        return Err(Failure::Step(format!(
            "w3c: {} cannot import aiohttp after `pip install aiohttp`",
            python.display()
        )));
    }
    println!("w3c: venv ready at {}", venv.display());
    Ok(python)
}

fn imports_aiohttp(python: &Path) -> bool {
    let mut command = Command::new(python);
    command
        .args(["-c", "import aiohttp, multidict"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
        .spawn()
        .ok()
        .and_then(|child| wait_bounded(child, IMPORT_TIMEOUT).ok())
        .is_some_and(|status| status.success())
}

/// `failure` with a line saying what to do about it.
fn hint(failure: Failure, what_to_do: &str) -> Failure {
    match failure {
        Failure::Step(message) => Failure::Step(format!("{message}\n{what_to_do}")),
        other => other,
    }
}

// ---------------------------------------------------------------------------------------------
// The service

/// A running `lens w3c-service`; killed (and waited for) when dropped, so on every way out.
struct Service {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

impl Service {
    /// Starts `lens w3c-service` on a free port of 127.0.0.1 and waits until it accepts
    /// connections.
    fn start(lens: &Path) -> Result<Service> {
        let mut command = Command::new(lens);
        command
            .args(["w3c-service", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        println!("\n==> [w3c service] {}", crate::run::show(&command));
        let mut child = command
            .spawn()
            .map_err(|e| Failure::Step(format!("w3c: cannot start {}: {e}", lens.display())))?;
        let stdout = child.stdout.take();
        // From here on the guard owns the child: any failure below kills it.
        let mut service = Service {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let (first_line, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            let mut lines = BufReader::new(stdout).lines();
            let _ignored = first_line.send(lines.next());
            // Anything the service prints later, shown as it comes.
            for line in lines.map_while(std::io::Result::ok) {
                println!("lens w3c-service: {line}");
            }
        });
        let line = match rx.recv_timeout(SERVICE_TIMEOUT) {
            Ok(Some(Ok(line))) => line,
            Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = service.child.wait().ok();
                return Err(Failure::Step(format!(
                    "w3c: lens w3c-service ended before it was listening ({status:?})"
                )));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(Failure::Step(format!(
                    "w3c: lens w3c-service printed nothing within {} s",
                    SERVICE_TIMEOUT.as_secs()
                )));
            }
        };
        service.addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| {
                Failure::Step(format!(
                    "w3c: unexpected first line from lens w3c-service: {line:?}"
                ))
            })?;
        service.wait_until_accepting()?;
        Ok(service)
    }

    fn wait_until_accepting(&mut self) -> Result {
        let deadline = Instant::now() + SERVICE_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Failure::Step(format!(
                    "w3c: lens w3c-service exited ({status}) before accepting connections"
                )));
            }
            if Instant::now() >= deadline {
                return Err(Failure::Step(format!(
                    "w3c: lens w3c-service did not accept connections on {} within {} s",
                    self.addr,
                    SERVICE_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn arguments() {
        let parsed = |list: &[&str]| parse_args(&args(list)).ok().flatten();
        assert_eq!(
            parsed(&[
                "--harness",
                "t",
                "--level2",
                "a.py",
                "b.py",
                "--venv=v",
                "--",
                "X",
                "-v"
            ]),
            Some(Options {
                harness: "t".into(),
                level2: vec!["a.py".into(), "b.py".into()],
                venv: Some("v".into()),
                extra: args(&["X", "-v"]),
            })
        );
        assert_eq!(
            parsed(&["--level2=a.py", "--harness=t", "--level2", "b.py"]),
            Some(Options {
                harness: "t".into(),
                level2: vec!["a.py".into(), "b.py".into()],
                venv: None,
                extra: Vec::new(),
            })
        );
        assert!(matches!(parse_args(&args(&["--help"])), Ok(None)));
    }

    #[test]
    fn without_a_harness_it_is_a_usage_error_that_says_how_to_get_one() {
        for list in [&[][..], &["--level2", "a.py"], &["--", "--harness", "t"]] {
            match parse_args(&args(list)) {
                Err(Failure::Usage(_, usage)) => {
                    assert!(usage.contains("git clone"), "{usage}");
                    assert!(usage.contains("https://github.com/w3c/trace-context"));
                }
                _ => panic!("{list:?} must be a usage error"),
            }
        }
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        for list in [
            &["--harness"][..],
            &["--harness", "--venv", "v"],
            &["--harness", "t", "--level2"],
            &["--harness", "t", "--nope"],
            &["--harness", "t", "stray"],
        ] {
            assert!(
                matches!(parse_args(&args(list)), Err(Failure::Usage(..))),
                "{list:?}"
            );
        }
    }

    #[test]
    fn the_exit_status_sums_the_runs_up_to_255() {
        assert_eq!(exit_status([0, 0].into_iter()), 0);
        assert_eq!(exit_status([3, 0].into_iter()), 3);
        assert_eq!(exit_status([3, 2].into_iter()), 5);
        assert_eq!(exit_status([200, 100].into_iter()), 255);
        assert_eq!(exit_status([0, -1].into_iter()), 255);
    }

    #[test]
    fn a_folder_that_is_not_the_harness_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("xtask-w3c-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("tracecontext")).unwrap();
        std::fs::write(dir.join("test.py"), b"").unwrap();
        let result = harness_dir(&dir);
        std::fs::write(dir.join("client.py"), b"").unwrap();
        std::fs::write(dir.join("server.py"), b"").unwrap();
        let complete = harness_dir(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        match result {
            Err(Failure::Step(message)) => {
                assert!(message.contains("client.py, server.py"), "{message}");
            }
            _ => panic!("an incomplete folder must be refused"),
        }
        assert!(complete.is_ok_and(|d| d.is_absolute()));
    }

    #[test]
    fn extra_test_files_find_the_harness_first_on_pythonpath() {
        let harness = Path::new("/h/test");
        let joined = python_path(harness);
        let first = std::env::split_paths(&joined).next().unwrap();
        assert_eq!(first, harness);
    }
}
