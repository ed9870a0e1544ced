//! [`MpiCollective`]: the [`Collective`] of an MPI communicator (feature `mpi`).

use std::borrow::Cow;

use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;

use crate::collective::{Collective, check_root};
use crate::error::DistError;

const BACKEND: &str = "MPI";

/// An MPI communicator as a [`Collective`]: `MPI_Bcast` of one `MPI_INT64_T`, then of
/// `MPI_UINT8_T` bytes, the same calls as `torch.distributed` with the MPI backend.
///
/// MPI's default error handler aborts the job on a communication error, so the broadcasts return
/// errors only for arguments lens checks first (a root out of range, a buffer longer than an MPI
/// count). The MPI library is linked when the binary is built: on a machine without it, the
/// program does not start (the loader names the missing `libmpi`), which no library code can turn
/// into an error.
///
/// ```no_run
/// use lens_dist::{broadcast_trace_context, Collective, MpiCollective};
///
/// let universe = MpiCollective::initialize()?;
/// let comm = MpiCollective::world(&universe);
/// let carrier = broadcast_trace_context(&comm, comm.rank(), 0)?;
/// # Ok::<(), lens_dist::DistError>(())
/// ```
#[derive(Debug)]
pub struct MpiCollective<C = SimpleCommunicator> {
    comm: C,
    rank: usize,
    size: usize,
}

impl MpiCollective<SimpleCommunicator> {
    /// Initialises MPI (`MPI_Init`); keep the returned [`Universe`] alive while MPI is in use (MPI
    /// is finalised when it is dropped).
    ///
    /// Errors with [`DistError::Unavailable`] when MPI was initialised before in this process.
    pub fn initialize() -> Result<Universe, DistError> {
        mpi::initialize().ok_or(DistError::Unavailable {
            backend: BACKEND,
            reason: Cow::Borrowed(
                "MPI is already initialised in this process; use MpiCollective::new with a communicator of it",
            ),
        })
    }

    /// The world communicator of `universe` (`MPI_COMM_WORLD`).
    pub fn world(universe: &Universe) -> Self {
        MpiCollective::new(universe.world())
    }
}

impl<C: Communicator> MpiCollective<C> {
    /// Wraps a communicator.
    pub fn new(comm: C) -> Self {
        // MPI ranks and sizes are non-negative.
        let rank = usize::try_from(comm.rank()).unwrap_or(0);
        let size = usize::try_from(comm.size()).unwrap_or(0);
        MpiCollective { comm, rank, size }
    }

    /// The communicator.
    pub fn communicator(&self) -> &C {
        &self.comm
    }

    /// The communicator, unwrapped.
    pub fn into_inner(self) -> C {
        self.comm
    }

    fn root(&self, root: usize) -> Result<mpi::Rank, DistError> {
        check_root(self, root, "root rank")?;
        // root < size, and size came from an MPI int.
        mpi::Rank::try_from(root).map_err(|_| DistError::InvalidRank {
            what: "root rank",
            rank: root,
            size: self.size,
            own: self.rank,
        })
    }
}

impl<C: Communicator> Collective for MpiCollective<C> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn broadcast_i64(&self, value: &mut i64, root: usize) -> Result<(), DistError> {
        let root = self.root(root)?;
        self.comm.process_at_rank(root).broadcast_into(value);
        Ok(())
    }

    fn broadcast_bytes(&self, buf: &mut [u8], root: usize) -> Result<(), DistError> {
        let root = self.root(root)?;
        if mpi::Count::try_from(buf.len()).is_err() {
            return Err(DistError::Collective {
                backend: BACKEND,
                operation: "broadcast_bytes",
                message: Cow::Owned(format!("{} bytes do not fit in an MPI count", buf.len())),
            });
        }
        self.comm.process_at_rank(root).broadcast_into(buf);
        Ok(())
    }
}
