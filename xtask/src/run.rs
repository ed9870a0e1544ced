//! Running a step's command: echoed first, its failure a [`Failure::Step`].

use std::path::Path;
use std::process::Command;

use crate::failure::{Failure, Result};

/// Runs `command`, echoing it first; a spawn failure or non-zero exit fails step `name`.
pub(crate) fn run(name: &str, mut command: Command) -> Result {
    let shown = show(&command);
    println!("\n==> [{name}] {shown}");
    let status = command
        .status()
        .map_err(|e| Failure::Step(format!("step `{name}` could not start `{shown}`: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        let code = status.code().map_or_else(
            || "killed by a signal".to_string(),
            |c| format!("exit status {c}"),
        );
        Err(Failure::Step(format!(
            "step `{name}` failed ({code}): {shown}"
        )))
    }
}

/// `command` as a shell-like line, with the program shown by its file name.
pub(crate) fn show(command: &Command) -> String {
    let program = Path::new(command.get_program())
        .file_name()
        .map_or_else(
            || command.get_program().to_string_lossy(),
            |n| n.to_string_lossy(),
        )
        .into_owned();
    std::iter::once(program)
        .chain(command.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::cargo;

    #[test]
    fn commands_are_shown_by_program_name() {
        let command = cargo(&["fmt", "--all"]);
        assert!(
            show(&command).ends_with("cargo fmt --all"),
            "{}",
            show(&command)
        );
    }
}
