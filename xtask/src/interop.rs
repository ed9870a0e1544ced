//! `cargo xtask interop`: lens against the real Python NeMo Lens, live.
//!
//! 1. Finds a Python of at least [`MIN_PYTHON`] (`$LENS_INTEROP_PYTHON`, then `PATH`, then pyenv's
//!    versions).
//! 2. Creates a virtual environment under `$LENS_INTEROP_CACHE` (default
//!    `<target-dir>/interop-venv/`), keyed by the Python version and a hash of
//!    `tests/interop/requirements.txt`, and installs that pinned list from PyPI. A ready venv (its
//!    marker file written after a successful install) is reused as it is.
//! 3. Builds and runs the harness `lens-interop` (`tests/interop`), which starts the Python
//!    scripts of `tests/interop/python/`, runs every scenario and checks the result.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::failure::{Failure, Result};
use crate::run::run;
use crate::workspace::{cargo, workspace_root};

pub(crate) const HELP: &str = "\
usage: cargo xtask interop [--only SCENARIO]

Checks lens against the real Python library NVIDIA NeMo Lens 0.1.0, live: HTTP both ways (FastAPI +
aiohttp with NeMo Lens, axum + reqwest with lens), gRPC both ways (grpcio with NeMo Lens's
inject_context / extract_context on the metadata, tonic with lens-tonic; unary and
server-streaming), NCCL context bytes both ways, Ray-style remote-call carriers both ways, NATS
both ways over a nats-server the run starts (nats-py with NeMo Lens's inject_context /
extract_context on the headers, lens-nats; core, request/reply, JetStream), both SDKs' OTLP
exporters into `lens watch`, and the propagation doctor (`lens check`) on live hops, some of
them broken (behind Debian's nginx too). Scenarios and checks: docs/interop-with-python.md.

--only SCENARIO runs one scenario: nccl, ray, http-python-first, http-rust-first,
grpc-python-to-rust, grpc-rust-to-python, nats, zeromq, watch, doctor, doctor-rabbitmq, probe,
probe-bleed or http-stream (default: all).
The nats scenario needs `nats-server` on PATH (Debian's nats-server package); the doctor
scenario's load-balancer pools need nginx (Debian's nginx package; skipped without it unless
LENS_NGINX=require).

Needs a Python >= 3.13 (nemo-lens 0.1.0 requires it), looked for in this order:
  $LENS_INTEROP_PYTHON, python3.14 / python3.13 / python3 / python on PATH, then
  $PYENV_ROOT/versions/*/bin/python3 (default ~/.pyenv), newest first.
The first run creates a venv in $LENS_INTEROP_CACHE (default <target-dir>/interop-venv/) and
installs tests/interop/requirements.txt from PyPI (network needed once); later runs reuse it until that
file or the Python changes.

`cargo xtask test` runs this step when such a Python is found and otherwise says why it skipped
it; with LENS_INTEROP=require (as .ci/run sets it) a missing Python fails the run instead.";

/// nemo-lens 0.1.0 declares `Requires-Python: >=3.13`.
pub(crate) const MIN_PYTHON: (u32, u32) = (3, 13);

/// The pinned Python packages, relative to the workspace root.
const REQUIREMENTS: &str = "tests/interop/requirements.txt";

/// Written into a venv once its packages are installed; holds the venv's key.
const READY_MARKER: &str = "lens-interop-ready";

/// Infix of the folder a venv is built in before it is renamed into place.
const BUILDING: &str = ".building-";

/// Upper bounds: asking a Python its version, creating a venv, installing the packages, and the
/// whole harness run (it has its own tighter timeouts inside).
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
const VENV_TIMEOUT: Duration = Duration::from_secs(120);
const PIP_TIMEOUT: Duration = Duration::from_secs(900);
const HARNESS_TIMEOUT: Duration = Duration::from_secs(300);

/// A Python interpreter and its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Python {
    pub(crate) path: PathBuf,
    pub(crate) version: (u32, u32, u32),
}

/// `cargo xtask interop`.
pub(crate) fn interop(args: &[String]) -> Result {
    let only = match args {
        [] => None,
        [arg] if crate::usage::is_help(arg) => {
            println!("{HELP}");
            return Ok(());
        }
        [flag, scenario] if flag == "--only" && !scenario.starts_with('-') => Some(scenario),
        _ => {
            return Err(Failure::Usage(
                format!(
                    "`interop` takes only `--only SCENARIO` (got `{}`)",
                    args.join(" ")
                ),
                HELP,
            ));
        }
    };
    let python = find_python(MIN_PYTHON).map_err(|why| {
        Failure::Step(format!(
            "interop: {why}; install Python >= {}.{} (e.g. `pyenv install 3.13`) or set LENS_INTEROP_PYTHON",
            MIN_PYTHON.0, MIN_PYTHON.1
        ))
    })?;
    let (major, minor, patch) = python.version;
    println!(
        "interop: Python {major}.{minor}.{patch} at {}",
        python.path.display()
    );

    let root = workspace_root();
    let target = target_dir();
    let cache = std::env::var_os("LENS_INTEROP_CACHE")
        .filter(|c| !c.is_empty())
        .map_or_else(|| target.join("interop-venv"), PathBuf::from);
    let venv_python = ensure_venv(&python, &root, &cache)?;

    // lens-cli too: the `watch` scenario runs `lens watch` and `lens check`.
    run(
        "interop build",
        cargo(&["build", "--quiet", "-p", "lens-interop", "-p", "lens-cli"]),
    )?;
    let bin = |name: &str| {
        target
            .join("debug")
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
    };
    let mut command = Command::new(bin("lens-interop"));
    command
        .arg("--python")
        .arg(&venv_python)
        .arg("--scripts")
        .arg(root.join("tests").join("interop").join("python"))
        .arg("--out")
        .arg(target.join("interop"))
        .arg("--lens")
        .arg(bin("lens"))
        .current_dir(&root);
    // The harness checks the name (and lists the scenarios when it is not one).
    if let Some(scenario) = only {
        command.arg("--only").arg(scenario);
    }
    run_bounded("interop", command, HARNESS_TIMEOUT)
}

/// `Ok(())` when `cargo xtask interop` can run here (for `cargo xtask test`'s optional steps).
///
/// With `LENS_INTEROP=require`, always `Ok(())`: the step then runs and fails, naming what is
/// missing, instead of being skipped.
pub(crate) fn requirement() -> Result<(), String> {
    if std::env::var("LENS_INTEROP").is_ok_and(|v| v == "require") {
        return Ok(());
    }
    find_python(MIN_PYTHON).map(|_| ())
}

/// `cargo xtask interop`, run by `cargo xtask test` through this same xtask binary.
pub(crate) fn command() -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("xtask"));
    let mut command = Command::new(exe);
    command.arg("interop").current_dir(workspace_root());
    command
}

// ---------------------------------------------------------------------------------------------
// Finding Python

/// The first Python of at least `min` among [`candidates`].
pub(crate) fn find_python(min: (u32, u32)) -> Result<Python, String> {
    let mut seen = Vec::new();
    for candidate in candidates() {
        match probe(&candidate) {
            Some(version) if (version.0, version.1) >= min => {
                return Ok(Python {
                    path: candidate,
                    version,
                });
            }
            Some((a, b, c)) => seen.push(format!("{} is {a}.{b}.{c}", candidate.display())),
            None => {}
        }
    }
    let found = if seen.is_empty() {
        "no working Python found".to_string()
    } else {
        format!("only older ones found ({})", seen.join(", "))
    };
    Err(format!(
        "no Python >= {}.{} on PATH or under pyenv: {found}",
        min.0, min.1
    ))
}

/// Where to look, in order: `$LENS_INTEROP_PYTHON`; `python3.14`, `python3.13`, `python3`,
/// `python` on `PATH` (pyenv shims of versions not selected fail to run and are passed over);
/// then every `versions/*/bin/python3` of pyenv, newest version first.
fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(explicit) = std::env::var_os("LENS_INTEROP_PYTHON").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(explicit));
    }
    for name in ["python3.14", "python3.13", "python3", "python"] {
        if let Ok(path) = crate::requirements::find_on_path(name) {
            out.push(path);
        }
    }
    let pyenv_root = std::env::var_os("PYENV_ROOT")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    if let Some(root) = pyenv_root {
        out.extend(pyenv_pythons(&root.join("versions")));
    }
    out
}

/// `dir/*/bin/python3` for every folder of `dir` named like a CPython version (`3.13.0`), newest
/// first. Other folders (virtualenvs, `pypy3.10-7.3`) are left out.
fn pyenv_pythons(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut versions: Vec<((u32, u32, u32), PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version = parse_version(&name)?;
            let python = e.path().join("bin").join("python3");
            python.is_file().then_some((version, python))
        })
        .collect();
    versions.sort_by_key(|v| std::cmp::Reverse(v.0));
    versions.into_iter().map(|(_, p)| p).collect()
}

/// `"3.13.0"` (or `"3 13 0"`) as numbers; `None` for anything else (`3.13.0a1`, `3.13t`).
pub(crate) fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().split(['.', ' ']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((major, minor, patch))
}

/// The version `python` reports, if it runs and can create virtual environments.
fn probe(python: &Path) -> Option<(u32, u32, u32)> {
    let mut command = Command::new(python);
    command.args([
        "-c",
        "import sys, venv, ensurepip; print(*sys.version_info[:3])",
    ]);
    let (status, stdout, _) = output_bounded(command, PROBE_TIMEOUT).ok()?;
    if !status.success() {
        return None;
    }
    parse_version(&stdout)
}

// ---------------------------------------------------------------------------------------------
// The virtual environment

/// The venv's Python, creating the venv and installing the requirements when no ready one exists.
fn ensure_venv(python: &Python, root: &Path, cache: &Path) -> Result<PathBuf> {
    let requirements = root.join(REQUIREMENTS);
    let pinned = std::fs::read(&requirements).map_err(|e| {
        Failure::Step(format!(
            "interop: cannot read {}: {e}",
            requirements.display()
        ))
    })?;
    let (major, minor, patch) = python.version;
    let key = format!(
        "py{major}.{minor}.{patch}-{:016x}",
        venv_hash(&pinned, &python.path)
    );
    let venv = cache.join(&key);
    if is_ready(&venv, &key) {
        println!("interop: reusing {}", venv.display());
        return Ok(venv_python(&venv));
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| Failure::Step(format!("interop: cannot create {}: {e}", cache.display())))?;
    remove_stale_builds(cache);

    // Built in a folder of this run's own, then renamed into place: runs that share the cache (a
    // shared target dir, CI's cache folder) never see a half-built venv. A moved venv still works
    // started as `bin/python` (its pyvenv.cfg sits beside `bin/`); only console-script shebangs
    // keep the old path, and the harness starts none.
    let building = cache.join(format!("{key}{BUILDING}{}", std::process::id()));
    let _ignored = std::fs::remove_dir_all(&building);
    let python_in = venv_python(&building);

    let mut create = Command::new(&python.path);
    create.arg("-m").arg("venv").arg(&building);
    run_bounded("interop venv", create, VENV_TIMEOUT)?;

    let mut install = Command::new(&python_in);
    install
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-input",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements);
    run_bounded("interop pip install", install, PIP_TIMEOUT)?;

    let mut check = Command::new(&python_in);
    check.args([
        "-c",
        "import nemo.lens, nemo.lens.contrib.fastapi, nemo.lens.contrib.aiohttp, \
         nemo.lens.contrib.nccl, nemo.lens.contrib.ray, fastapi, uvicorn, aiohttp, nats, \
         opentelemetry.sdk.trace, opentelemetry.instrumentation.fastapi, \
         opentelemetry.instrumentation.aiohttp_client",
    ]);
    run_bounded("interop import check", check, PROBE_TIMEOUT)?;

    let marker = building.join(READY_MARKER);
    std::fs::write(&marker, &key)
        .map_err(|e| Failure::Step(format!("interop: cannot write {}: {e}", marker.display())))?;
    if std::fs::rename(&building, &venv).is_err() {
        if is_ready(&venv, &key) {
            // Another run finished the same venv first: use that one.
            let _ignored = std::fs::remove_dir_all(&building);
        } else {
            // A venv of this key that never became ready: replace it.
            let _ignored = std::fs::remove_dir_all(&venv);
            std::fs::rename(&building, &venv).map_err(|e| {
                Failure::Step(format!(
                    "interop: cannot move {} to {}: {e}",
                    building.display(),
                    venv.display()
                ))
            })?;
        }
    }
    println!("interop: venv ready at {}", venv.display());
    Ok(venv_python(&venv))
}

/// A venv whose packages were installed in full (its marker holds `key`).
fn is_ready(venv: &Path, key: &str) -> bool {
    std::fs::read_to_string(venv.join(READY_MARKER)).is_ok_and(|k| k.trim() == key)
        && venv_python(venv).is_file()
}

/// Removes build folders of runs that stopped half-way (older than an hour).
fn remove_stale_builds(cache: &Path) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry.file_name().to_string_lossy().contains(BUILDING)
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > Duration::from_secs(3600));
        if stale {
            let _ignored = std::fs::remove_dir_all(entry.path());
        }
    }
}

pub(crate) fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

/// FNV-1a (64 bits) of the requirements and the interpreter's path: a new pin, or another
/// Python of the same version, gives a new venv.
pub(crate) fn venv_hash(requirements: &[u8], python: &Path) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let path = python.to_string_lossy();
    for byte in requirements
        .iter()
        .chain(&[0u8])
        .chain(path.as_bytes().iter())
    {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `$CARGO_TARGET_DIR`, else cargo's target directory for this workspace.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => workspace_root().join(dir),
        None => crate::workspace::metadata_target_dir()
            .unwrap_or_else(|| workspace_root().join("target")),
    }
}

// ---------------------------------------------------------------------------------------------
// Bounded processes

/// Runs `command` with inherited output, echoing it first; kills it after `timeout`.
pub(crate) fn run_bounded(name: &str, mut command: Command, timeout: Duration) -> Result {
    let shown = crate::run::show(&command);
    println!("\n==> [{name}] {shown}");
    let child = command
        .spawn()
        .map_err(|e| Failure::Step(format!("step `{name}` could not start `{shown}`: {e}")))?;
    match wait_bounded(child, timeout) {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(Failure::Step(format!(
            "step `{name}` failed ({}): {shown}",
            status.code().map_or_else(
                || "killed by a signal".to_string(),
                |c| format!("exit status {c}")
            )
        ))),
        Err(why) => Err(Failure::Step(format!("step `{name}` {why}: {shown}"))),
    }
}

/// Runs `command` with captured output; kills it after `timeout`.
fn output_bounded(
    mut command: Command,
    timeout: Duration,
) -> std::result::Result<(ExitStatus, String, String), String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().map(read_in_background);
    let stderr = child.stderr.take().map(read_in_background);
    let status = wait_bounded(child, timeout)?;
    let collect = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok((status, collect(stdout), collect(stderr)))
}

fn read_in_background(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ignored = pipe.read_to_string(&mut text);
        text
    })
}

/// Waits for `child` at most `timeout` (polling its status), killing it when time runs out.
pub(crate) fn wait_bounded(
    mut child: Child,
    timeout: Duration,
) -> std::result::Result<ExitStatus, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ignored = child.kill();
                let _ignored = child.wait();
                return Err(format!("timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                let _ignored = child.kill();
                return Err(format!("could not be waited for: {e}"));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_only_plain_cpython_numbers() {
        assert_eq!(parse_version("3.13.0"), Some((3, 13, 0)));
        assert_eq!(parse_version("3 12 1\n"), Some((3, 12, 1)));
        assert_eq!(parse_version("3.13"), None);
        assert_eq!(parse_version("3.13.0a1"), None);
        assert_eq!(parse_version("3.13.0.1"), None);
        assert_eq!(parse_version("miniconda3-latest"), None);
    }

    #[test]
    fn pyenv_versions_come_newest_first_and_skip_other_folders() {
        let dir = std::env::temp_dir().join(format!("xtask-pyenv-{}", std::process::id()));
        for name in [
            "3.9.18", "3.13.0", "3.12.1", "3.10.13", "venv-foo", "3.14.0",
        ] {
            let bin = dir.join(name).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            if name != "3.14.0" {
                std::fs::write(bin.join("python3"), b"").unwrap();
            }
        }
        std::fs::create_dir_all(dir.join("venv-foo").join("bin")).unwrap();
        let found: Vec<String> = pyenv_pythons(&dir)
            .iter()
            .map(|p| {
                p.parent()
                    .and_then(Path::parent)
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        // 3.14.0 has no python3; venv-foo is not a version.
        assert_eq!(found, ["3.13.0", "3.12.1", "3.10.13", "3.9.18"]);
    }

    #[test]
    fn the_venv_key_changes_with_the_pins_and_the_interpreter() {
        let a = venv_hash(b"nemo-lens==0.1.0\n", Path::new("/usr/bin/python3"));
        assert_eq!(
            a,
            venv_hash(b"nemo-lens==0.1.0\n", Path::new("/usr/bin/python3"))
        );
        assert_ne!(
            a,
            venv_hash(b"nemo-lens==0.1.1\n", Path::new("/usr/bin/python3"))
        );
        assert_ne!(
            a,
            venv_hash(b"nemo-lens==0.1.0\n", Path::new("/opt/py/bin/python3"))
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_process_past_its_deadline_is_killed() {
        let child = Command::new("sleep").arg("30").spawn().unwrap();
        let started = Instant::now();
        let result = wait_bounded(child, Duration::from_millis(200));
        assert!(result.is_err(), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
