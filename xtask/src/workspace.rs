//! The workspace xtask works in: its root, its crates, `cargo` commands run there, its target
//! dir.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (the folder above `xtask/`).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// `target_directory` from `cargo metadata` (read without a JSON parser: it is a plain path).
pub(crate) fn metadata_target_dir() -> Option<PathBuf> {
    let output = cargo(&["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(output.stdout).ok()?;
    let key = "\"target_directory\":\"";
    let start = text.find(key)? + key.len();
    let end = start + text[start..].find('"')?;
    Some(PathBuf::from(text[start..end].replace("\\\\", "\\")))
}

/// A `cargo` command with `args`, run from the workspace root. Uses the cargo that started
/// xtask (`$CARGO`) when there is one.
pub(crate) fn cargo(args: &[&str]) -> Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(program);
    command.args(args).current_dir(workspace_root());
    command
}

/// Where the workspace's crates are, relative to its root: each folder under these holding a
/// `src/` is a crate, checked for every rule (a new crate is checked without being listed).
#[cfg(test)] // read by the layout check, a test
pub(crate) const CRATE_FOLDERS: &[&str] = &["crates", "tests"];

/// Every crate of the workspace with a `src/` (under [`CRATE_FOLDERS`], and `xtask`), relative to
/// the workspace root, sorted.
#[cfg(test)]
pub(crate) fn workspace_crates(root: &Path) -> Result<Vec<String>, String> {
    let mut crates = vec!["xtask".to_owned()];
    for folder in CRATE_FOLDERS {
        let entries = std::fs::read_dir(root.join(folder))
            .map_err(|e| format!("{folder}: cannot list it: {e}"))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{folder}: {e}"))?;
            if entry.path().join("src").is_dir() {
                crates.push(format!("{folder}/{}", entry.file_name().to_string_lossy()));
            }
        }
    }
    crates.sort();
    Ok(crates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_metadata_names_an_absolute_target_dir() {
        let dir = metadata_target_dir();
        assert!(dir.as_ref().is_some_and(|d| d.is_absolute()), "{dir:?}");
    }
}
