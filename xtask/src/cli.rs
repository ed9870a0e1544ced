//! The command line of `cargo xtask`: the command's task, and the exit status of its result.

use std::process::ExitCode;

use crate::bench::bench;
use crate::failure::Failure;
use crate::test_task::test;
use crate::usage::{USAGE, USAGE_ERROR};
use crate::{fuzz, gpu, interop, mpi_test::mpi_test, mutants, public_api, soak, w3c};

pub(crate) fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(USAGE_ERROR);
    };
    let result = match command.as_str() {
        "test" => test(rest),
        "bench" => bench(rest),
        "interop" => interop::interop(rest),
        "mpi-test" => mpi_test(rest),
        "gpu-test" => gpu::gpu_test(rest),
        "gpu-bench" => gpu::gpu_bench(rest),
        "fuzz" => fuzz::fuzz(rest),
        "mutants" => mutants::mutants(rest),
        "soak" => soak::soak(rest),
        "public-api" => public_api::public_api(rest),
        "w3c" => w3c::w3c(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(Failure::Usage(format!("unknown command `{other}`"), USAGE)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message, usage)) => {
            eprintln!("error: {message}\n\n{usage}");
            ExitCode::from(USAGE_ERROR)
        }
        Err(Failure::Step(message)) => {
            eprintln!("\nerror: {message}");
            ExitCode::FAILURE
        }
        Err(Failure::Status(code, message)) => {
            eprintln!("\nerror: {message}");
            ExitCode::from(code)
        }
    }
}
