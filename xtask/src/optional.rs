//! The optional suites of `cargo xtask test`: those that need something beyond the Rust
//! toolchain, each with its requirement.

use std::process::Command;

use crate::workspace::cargo;
use crate::{interop, requirements};

/// A suite that needs something beyond the Rust toolchain (a Python interpreter, MPI, a GPU).
///
/// To add one, append an entry to [`OPTIONAL_STEPS`]; [`requirements`] has the usual checks.
pub(crate) struct OptionalStep {
    /// Short name, shown in progress and skip messages.
    pub(crate) name: &'static str,
    /// `Ok(())` when the suite can run here; otherwise why not (e.g. "`mpirun` is not on PATH").
    pub(crate) requires: fn() -> Result<(), String>,
    /// What to install to run it, e.g. "libopenmpi-dev openmpi-bin".
    pub(crate) install: &'static str,
    /// The command that runs the suite.
    pub(crate) command: fn() -> Command,
}

/// Optional suites, run after the workspace tests in this order. Examples of others:
///
/// ```text
/// OptionalStep {
///     name: "python interop",
///     requires: || requirements::python_at_least(3, 12).map(|_| ()),
///     install: "python3 (>= 3.12) python3-venv",
///     command: || cargo(&["test", "-p", "lens-core", "--features", "interop", "--test", "python"]),
/// },
/// OptionalStep {
///     name: "lens-dist (MPI)",
///     requires: || requirements::on_path("mpirun"),
///     install: "libopenmpi-dev openmpi-bin",
///     command: || cargo(&["test", "-p", "lens-dist", "--features", "mpi"]),
/// },
/// ```
pub(crate) const OPTIONAL_STEPS: &[OptionalStep] = &[
    OptionalStep {
        name: "lens-nccl and lens-dist clippy (feature nccl)",
        // cudarc loads CUDA and NCCL at run time, so the feature builds on any machine.
        requires: || Ok(()),
        install: "",
        command: || {
            cargo(&[
                "clippy",
                "-p",
                "lens-nccl",
                "-p",
                "lens-dist",
                "--features",
                "lens-nccl/nccl",
                "--features",
                "lens-dist/nccl",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    OptionalStep {
        name: "lens-nccl and lens-dist NCCL tests (GPU suites skip without a GPU)",
        requires: || Ok(()),
        install: "",
        command: || {
            cargo(&[
                "test",
                "-p",
                "lens-nccl",
                "-p",
                "lens-dist",
                "--features",
                "lens-nccl/nccl",
                "--features",
                "lens-dist/nccl",
            ])
        },
    },
    OptionalStep {
        name: "interop (Python NeMo Lens)",
        requires: interop::requirement,
        install: "Python >= 3.13 with venv (e.g. `pyenv install 3.13`)",
        command: interop::command,
    },
    OptionalStep {
        name: "lens-dist clippy (feature mpi)",
        requires: || requirements::on_path("mpirun"),
        install: MPI_PACKAGES,
        command: || {
            cargo(&[
                "clippy",
                "-p",
                "lens-dist",
                "--features",
                "mpi",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    MPI_TEST,
    // lens-zmq, feature zmq: zmq-sys builds libzmq 4.3 from source (a C++ compiler).
    OptionalStep {
        name: "lens-zmq clippy (feature zmq)",
        requires: || requirements::on_path("c++"),
        install: "g++",
        command: || {
            cargo(&[
                "clippy",
                "-p",
                "lens-zmq",
                "--features",
                "zmq",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    OptionalStep {
        name: "lens-zmq tests (feature zmq: PUSH/PULL, PUB/SUB, DEALER/ROUTER over inproc, ipc, tcp)",
        requires: || requirements::on_path("c++"),
        install: "g++",
        command: || cargo(&["test", "-p", "lens-zmq", "--features", "zmq"]),
    },
];

/// Debian packages lens-dist's MPI feature needs (bindgen needs libclang).
pub(crate) const MPI_PACKAGES: &str = "openmpi-bin libopenmpi-dev libclang-dev clang pkg-config";

/// lens-dist's multi-process suite: 4 ranks under mpirun (crates/lens-dist/tests/mpi.rs).
pub(crate) const MPI_TEST: OptionalStep = OptionalStep {
    name: "lens-dist mpi-test",
    requires: || requirements::on_path("mpirun"),
    install: MPI_PACKAGES,
    command: || {
        cargo(&[
            "test",
            "-p",
            "lens-dist",
            "--features",
            "mpi",
            "--test",
            "mpi",
        ])
    },
};
