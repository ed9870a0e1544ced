//! [`Collective`]: the two broadcasts the trace-context protocol needs, on any engine.

use crate::error::DistError;

/// A communicator of ranks that can broadcast from a root rank: the operations NeMo Lens's
/// `broadcast_trace_context` needs from `torch.distributed` (a broadcast of one int64, then one of
/// uint8 bytes).
///
/// Every rank of the communicator must make the same calls in the same order, with the same root
/// and the same buffer length, as with any collective. Implementations: [`ThreadGroup`] (one
/// rank per thread, for tests), `MpiCollective` (feature `mpi`) and `NcclCollective` (feature
/// `nccl`).
///
/// [`ThreadGroup`]: crate::ThreadGroup
pub trait Collective {
    /// This process's (or thread's) rank in the communicator, `0..size()`.
    fn rank(&self) -> usize;

    /// The number of ranks in the communicator.
    fn size(&self) -> usize;

    /// Broadcasts one `i64` from `root`: on `root`, `value` is sent; on every other rank it is
    /// overwritten with the root's value.
    fn broadcast_i64(&self, value: &mut i64, root: usize) -> Result<(), DistError>;

    /// Broadcasts bytes from `root`: on `root`, `buf` is sent; on every other rank it is
    /// overwritten with the root's bytes. `buf` has the same length on every rank.
    fn broadcast_bytes(&self, buf: &mut [u8], root: usize) -> Result<(), DistError>;
}

impl<C: Collective + ?Sized> Collective for &C {
    fn rank(&self) -> usize {
        (**self).rank()
    }

    fn size(&self) -> usize {
        (**self).size()
    }

    fn broadcast_i64(&self, value: &mut i64, root: usize) -> Result<(), DistError> {
        (**self).broadcast_i64(value, root)
    }

    fn broadcast_bytes(&self, buf: &mut [u8], root: usize) -> Result<(), DistError> {
        (**self).broadcast_bytes(buf, root)
    }
}

/// `Err(InvalidRank)` unless `root < comm.size()`.
pub(crate) fn check_root<C: Collective + ?Sized>(
    comm: &C,
    root: usize,
    what: &'static str,
) -> Result<(), DistError> {
    let size = comm.size();
    if root < size {
        Ok(())
    } else {
        Err(DistError::InvalidRank {
            what,
            rank: root,
            size,
            own: comm.rank(),
        })
    }
}
