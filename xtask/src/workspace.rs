//! The workspace xtask works in: its root, `cargo` commands run there, its target dir.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_metadata_names_an_absolute_target_dir() {
        let dir = metadata_target_dir();
        assert!(dir.as_ref().is_some_and(|d| d.is_absolute()), "{dir:?}");
    }
}
