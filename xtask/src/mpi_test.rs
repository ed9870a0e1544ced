//! `cargo xtask mpi-test`: lens-dist's multi-process MPI suite alone.

use crate::failure::{Failure, Result};
use crate::optional::{MPI_PACKAGES, MPI_TEST};
use crate::run::run;
use crate::usage::USAGE;

/// `cargo xtask mpi-test`: [`MPI_TEST`] alone; fails when MPI is missing.
pub(crate) fn mpi_test(args: &[String]) -> Result {
    if let Some(arg) = args.first() {
        return Err(Failure::Usage(
            format!("`mpi-test` takes no arguments (got `{arg}`)"),
            USAGE,
        ));
    }
    (MPI_TEST.requires)().map_err(|why| {
        Failure::Step(format!(
            "cannot run mpi-test: {why}; install {MPI_PACKAGES}"
        ))
    })?;
    run(MPI_TEST.name, (MPI_TEST.command)())
}
