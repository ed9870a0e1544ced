//! `cargo xtask`: the lens project's build tasks.
//!
//! * `cargo xtask test`: formatting, clippy, the workspace tests, then every optional
//!   (feature-gated) suite whose requirements are present on this machine.
//! * `cargo xtask bench [GROUP]`: the criterion benchmark suites.
//! * `cargo xtask public-api [--bless]`: the public API listings (see `public_api.rs`); also a
//!   step of `cargo xtask test`.
//! * `cargo xtask interop`: lens against the real Python NeMo Lens, live (see `interop.rs`).
//! * `cargo xtask w3c --harness DIR`: the official W3C Trace Context test harness against
//!   `lens w3c-service` (see `w3c.rs`); not part of `cargo xtask test`.
//!
//! Only std: every task shells out to `cargo`.
#![forbid(unsafe_code)]

mod bench;
mod cli;
mod failure;
mod fuzz;
mod gpu;
mod interop;
#[cfg(test)]
mod layout;
mod mpi_test;
mod mutants;
mod optional;
mod public_api;
#[allow(dead_code)] // used by the optional suites of later crates; see OPTIONAL_STEPS
mod requirements;
#[cfg(test)]
mod rules;
mod run;
mod soak;
mod test_task;
mod usage;
mod w3c;
mod workspace;

fn main() -> std::process::ExitCode {
    cli::main()
}
