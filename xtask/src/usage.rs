//! The usage text of `cargo xtask`, its exit status for usage errors, and its help flags.

pub(crate) const USAGE: &str = "\
usage: cargo xtask <COMMAND> [OPTIONS]

commands:
  test     run the project's checks: fmt, clippy, workspace tests, optional suites
  bench    run criterion benchmark suites
  interop  run the live interop scenarios against the Python NeMo Lens
  mpi-test run lens-dist's multi-process MPI suite (4 ranks under mpirun)
  gpu-test  build and run the NCCL GPU tests (exits 0 having run nothing without a GPU)
  gpu-bench measure the added latency of a context frame on a 1 MiB NCCL self send/recv
  fuzz     run every cargo-fuzz target for a while (cargo xtask fuzz --seconds N)
  mutants  cargo-mutants over lens-core's codec modules (slow; not part of `test`)
  soak     load and fault checks of the HTTP chain (cargo xtask soak --seconds N --concurrency C)
  public-api  the public API of every published library crate against tests/public-api/listings
  w3c      the W3C Trace Context test harness against lens w3c-service (cargo xtask w3c --harness DIR)
  help     print this text

`cargo xtask <COMMAND> --help` describes a command.";

/// Exit status for usage errors.
pub(crate) const USAGE_ERROR: u8 = 2;

pub(crate) fn is_help(arg: &str) -> bool {
    matches!(arg, "-h" | "--help" | "help")
}
