//! How a usage error found after parsing is reported: exit status 2 and clap's own message
//! format for the subcommand.

use std::fmt::Display;
use std::process::ExitCode;
use std::sync::OnceLock;

/// Exit status for a command-line (usage) error.
pub(crate) const USAGE_ERROR: u8 = 2;

/// The definition of the whole command line (`Cli::command`), registered by the dispatcher
/// before a command runs: the commands report usage errors through this module, so it cannot
/// import the dispatcher (which imports them) without a circle.
static COMMAND_LINE: OnceLock<fn() -> clap::Command> = OnceLock::new();

/// Registers the definition of the command line that usage errors are reported against.
pub(crate) fn register(command_line: fn() -> clap::Command) {
    let _ = COMMAND_LINE.set(command_line);
}

/// Reports a usage error found after parsing (`lens SUBCOMMAND ...`) the way clap reports its
/// own: one message, the usage line and a hint; exit status 2.
pub(crate) fn usage_error(subcommand: &str, message: impl Display) -> ExitCode {
    let mut command = COMMAND_LINE
        .get()
        .map_or_else(|| clap::Command::new("lens"), |command_line| command_line());
    command.build();
    let error = match command.find_subcommand_mut(subcommand) {
        Some(sub) => sub.error(clap::error::ErrorKind::ValueValidation, message),
        None => command.error(clap::error::ErrorKind::ValueValidation, message),
    };
    let _ = error.print();
    ExitCode::from(USAGE_ERROR)
}
