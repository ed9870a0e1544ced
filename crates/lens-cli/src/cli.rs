//! The `lens` command line: its commands, and the dispatch of each to the module that runs it.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

use crate::{check, demo, inspect, probe, usage, w3c_service, watch};

/// `lens -V`: the package version and, where known, the first 12 digits of the commit
/// (build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), env!("LENS_BUILD_COMMIT_SHORT"));

/// `lens --version`: the package version, the commit, and the optional parts (cargo features)
/// compiled in (build.rs).
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\n",
    env!("LENS_BUILD_COMMIT"),
    "\nNCCL: ",
    env!("LENS_BUILD_NCCL"),
    "\nMPI: ",
    env!("LENS_BUILD_MPI"),
);

/// Command-line tools for W3C Trace Context and W3C Baggage.
#[derive(Debug, Parser)]
#[command(
    name = "lens",
    version = VERSION,
    long_version = LONG_VERSION,
    propagate_version = true,
    subcommand_required = true,
    arg_required_else_help = true,
    after_help = "`lens help <COMMAND>` or `lens <COMMAND> --help` describes a command.\n\
                  Exit status: 0 success, 1 failure (an invalid value, a failed request), 2 usage error."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decode and check traceparent, tracestate, baggage and NCCL context values
    Inspect(inspect::Args),
    /// Run a traced request through HTTP, gRPC, a remote call and 4 ranks; print its trace
    Demo(demo::Args),
    /// Receive OTLP from every service and show each trace as it completes (and on a live page)
    Watch(watch::Args),
    /// Print the traces of OTLP/JSON files (as `lens watch --save` writes them), or only those
    /// that match
    Check(check::Args),
    /// Send one request with a recognisable context and print the route it took, hop by hop,
    /// with what of its context survived each hop
    Probe(probe::Args),
    /// Run the W3C Trace Context test service (docs/propagation-rules.md#w3c-test-service)
    #[command(name = "w3c-service")]
    W3cService(w3c_service::Args),
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell) on stdout
    Completions {
        /// The shell to complete for
        #[arg(value_enum, ignore_case = true)]
        shell: clap_complete::Shell,
    },
}

/// Parses the command line and runs the command.
pub(crate) fn main() -> ExitCode {
    // Usage errors exit 2 (help and --version exit 0), before any work starts.
    let cli = Cli::parse();
    usage::register(Cli::command);
    match cli.command {
        Command::Inspect(args) => inspect::main(args),
        Command::Demo(args) => demo::main(args),
        Command::Watch(args) => watch::main(args),
        Command::Check(args) => check::main(args),
        Command::Probe(args) => probe::main(args),
        Command::W3cService(args) => w3c_service::main(args),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "lens", &mut script);
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(&script).and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: cannot write the completion script: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
