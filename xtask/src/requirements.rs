//! Checks for [`OptionalStep::requires`](crate::optional::OptionalStep::requires).

use std::path::PathBuf;
use std::process::Command;

/// `Ok(path)` when `program` is an executable file in a `PATH` directory.
pub(crate) fn find_on_path(program: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| format!("`{program}` is not on PATH"))
}

/// `Ok(())` when `program` is on `PATH`.
pub(crate) fn on_path(program: &str) -> Result<(), String> {
    find_on_path(program).map(|_| ())
}

/// The first of `python3.N` (N from 14 down), `python3`, `python` on `PATH` that reports a
/// version of at least `major.minor`.
pub(crate) fn python_at_least(major: u32, minor: u32) -> Result<PathBuf, String> {
    let mut names: Vec<String> = (minor..=14).rev().map(|m| format!("python3.{m}")).collect();
    names.push("python3".into());
    names.push("python".into());
    for name in &names {
        let Ok(path) = find_on_path(name) else {
            continue;
        };
        let Ok(out) = Command::new(&path)
            .args(["-c", "import sys; print(*sys.version_info[:2])"])
            .output()
        else {
            continue;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.split_whitespace().map(str::parse::<u32>);
        if let (Some(Ok(found_major)), Some(Ok(found_minor))) = (parts.next(), parts.next())
            && out.status.success()
            && (found_major, found_minor) >= (major, minor)
        {
            return Ok(path);
        }
    }
    Err(format!("no Python >= {major}.{minor} on PATH"))
}

#[cfg(unix)]
fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &std::path::Path) -> bool {
    path.is_file() || path.with_extension("exe").is_file()
}
