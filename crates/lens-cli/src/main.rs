//! `lens`: command-line tools for W3C Trace Context and W3C Baggage.
//!
//! * `lens inspect VALUE...`: decode a traceparent, tracestate or baggage value (or a
//!   `name: value` header line) and say which rule of SPEC.md rejects anything invalid.
//! * `lens demo`: one request through HTTP, gRPC, a remote call and pipeline ranks, printed
//!   as one trace (a waterfall; `--json`, `--html FILE`, `--requests N`, `--otlp URL`).
//!
//! Exit status: 0 valid, 1 invalid, 2 usage error.
#![forbid(unsafe_code)]

use std::process::ExitCode;

mod demo;
mod inspect;
mod w3c_service;

const USAGE: &str = "\
usage: lens <COMMAND> [ARGS...]

commands:
  inspect   decode and check traceparent, tracestate and baggage values
  demo      run a traced request through HTTP, gRPC, a remote call and 4 ranks; print its trace
  w3c-service  run the W3C Trace Context test service (SPEC.md section 11)
  help      print this text

`lens <COMMAND> --help` describes a command.";

/// Exit status for a command-line (usage) error.
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let mut args = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(arg) => args.push(arg),
            Err(arg) => {
                eprintln!("error: argument {arg:?} is not valid UTF-8\n\n{USAGE}");
                return ExitCode::from(USAGE_ERROR);
            }
        }
    }
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(USAGE_ERROR);
    };
    match command.as_str() {
        "inspect" => inspect::main(rest),
        "w3c-service" => w3c_service::main(rest),
        "demo" => demo::main(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        "-V" | "--version" => {
            println!("lens {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("error: unknown command `{other}`\n\n{USAGE}");
            ExitCode::from(USAGE_ERROR)
        }
    }
}
