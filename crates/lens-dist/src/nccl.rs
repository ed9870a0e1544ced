//! [`NcclCollective`]: the [`Collective`] of an NCCL communicator (feature `nccl`), built on
//! lens-nccl's communicator ([`lens_nccl::nccl`]): the same check for CUDA, NCCL and a GPU, the
//! same reasons when one is missing, the same way of finding `libnccl.so` (see the lens-nccl
//! crate docs, "Finding NCCL").

use std::borrow::Cow;
use std::sync::Arc;

use lens_nccl::nccl::cudarc::driver::{CudaStream, DeviceRepr, DriverError, ValidAsZeroBits};
use lens_nccl::nccl::cudarc::nccl::result::NcclError as NcclResultError;
use lens_nccl::nccl::{self, Comm, Id, NcclError, NcclType};

use crate::collective::{Collective, check_root};
use crate::error::DistError;

const BACKEND: &str = "NCCL";

/// `Ok(())` when the CUDA driver (`libcuda`), NCCL (`libnccl`) and a GPU are there (lens-nccl's
/// [`nccl::available`], checked once per process); otherwise [`DistError::Unavailable`] with
/// lens-nccl's reason, which names what is missing and how to fix it. Every constructor of the
/// NCCL backend checks this first, so a machine without them gets an error, never a panic.
pub fn nccl_available() -> Result<(), DistError> {
    nccl::available().map_err(|e| from_nccl("init", e))
}

/// lens-nccl's error as a [`DistError`]: `Unavailable` stays `Unavailable`, with the same reason.
fn from_nccl(operation: &'static str, e: NcclError) -> DistError {
    match e {
        NcclError::Unavailable(reason) => DistError::Unavailable {
            backend: BACKEND,
            reason: Cow::Owned(reason),
        },
        other => DistError::Collective {
            backend: BACKEND,
            operation,
            message: Cow::Owned(other.to_string()),
        },
    }
}

fn nccl_error(operation: &'static str, e: NcclResultError) -> DistError {
    DistError::Collective {
        backend: BACKEND,
        operation,
        message: Cow::Owned(format!("{:?}", e.0)),
    }
}

fn driver_error(operation: &'static str, e: DriverError) -> DistError {
    DistError::Collective {
        backend: BACKEND,
        operation,
        message: Cow::Owned(e.to_string()),
    }
}

/// An NCCL unique id (`ncclUniqueId`): made on one rank with [`NcclId::new`], sent to the others
/// out of band (as its 128 bytes), and given to [`NcclCollective::from_rank`] on every rank.
#[derive(Debug, Clone, Copy)]
pub struct NcclId(Id);

impl NcclId {
    /// A new unique id (`ncclGetUniqueId`). [`DistError::Unavailable`] without CUDA or NCCL.
    pub fn new() -> Result<Self, DistError> {
        nccl::new_id()
            .map(NcclId)
            .map_err(|e| from_nccl("get_unique_id", e))
    }

    /// The id's 128 bytes, to send to the other ranks.
    pub fn to_bytes(&self) -> [u8; 128] {
        self.0.internal().map(|c| c as u8)
    }

    /// The id from the bytes of [`NcclId::to_bytes`].
    pub fn from_bytes(bytes: [u8; 128]) -> Self {
        NcclId(Id::uninit(bytes.map(|b| b as core::ffi::c_char)))
    }
}

/// An NCCL communicator as a [`Collective`]: `ncclBroadcast` of one `ncclInt64`, then of
/// `ncclUint8` bytes, through device buffers on the communicator's stream, as
/// `torch.distributed` does with the NCCL backend. Each call waits for its stream.
///
/// ```no_run
/// use lens_dist::{broadcast_trace_context, NcclCollective};
///
/// // World size 1 on GPU 0; with N ranks, every rank calls `from_rank` with the same id.
/// let comm = NcclCollective::single(0)?;
/// let carrier = broadcast_trace_context(&comm, 0, 0)?;
/// # Ok::<(), lens_dist::DistError>(())
/// ```
#[derive(Debug)]
pub struct NcclCollective {
    comm: Comm,
    stream: Arc<CudaStream>,
}

impl NcclCollective {
    /// Joins rank `rank` of `world_size` ranks on GPU `device` (`ncclCommInitRank`); blocks until
    /// every rank has joined with the same `id`. One rank per process or per thread.
    pub fn from_rank(
        device: usize,
        rank: usize,
        world_size: usize,
        id: NcclId,
    ) -> Result<Self, DistError> {
        nccl_available()?;
        if rank >= world_size || i32::try_from(world_size).is_err() {
            return Err(DistError::InvalidRank {
                what: "rank",
                rank,
                size: world_size,
                own: rank,
            });
        }
        let comm = nccl::comm_from_rank(device, rank, world_size, id.0)
            .map_err(|e| from_nccl("init", e))?;
        let stream = comm.stream();
        Ok(NcclCollective { comm, stream })
    }

    /// A communicator of one rank on GPU `device`.
    pub fn single(device: usize) -> Result<Self, DistError> {
        let id = NcclId::new()?;
        NcclCollective::from_rank(device, 0, 1, id)
    }

    /// Wraps a communicator made with lens-nccl ([`nccl::comm_from_rank`], [`nccl::comm_self`]).
    pub fn new(comm: Comm) -> Self {
        let stream = comm.stream();
        NcclCollective { comm, stream }
    }

    /// The communicator (cudarc's, as lens-nccl's NCCL transport takes it).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    fn root(&self, root: usize) -> Result<i32, DistError> {
        check_root(self, root, "root rank")?;
        // root < world_size, which from_rank checked fits in an i32.
        i32::try_from(root).map_err(|_| DistError::InvalidRank {
            what: "root rank",
            rank: root,
            size: self.size(),
            own: self.rank(),
        })
    }

    fn broadcast<T>(
        &self,
        host: &mut [T],
        root: usize,
        operation: &'static str,
    ) -> Result<(), DistError>
    where
        T: DeviceRepr + ValidAsZeroBits + NcclType + Copy,
    {
        let root = self.root(root)?;
        if host.is_empty() {
            return Ok(());
        }
        let err = |e| driver_error(operation, e);
        let mut device = self.stream.clone_htod(&*host).map_err(err)?;
        self.comm
            .broadcast_in_place(&mut device, root)
            .map_err(|e| nccl_error(operation, e))?;
        self.stream.memcpy_dtoh(&device, host).map_err(err)?;
        self.stream.synchronize().map_err(err)
    }
}

impl Collective for NcclCollective {
    fn rank(&self) -> usize {
        self.comm.rank()
    }

    fn size(&self) -> usize {
        self.comm.world_size()
    }

    fn broadcast_i64(&self, value: &mut i64, root: usize) -> Result<(), DistError> {
        self.broadcast(std::slice::from_mut(value), root, "broadcast_i64")
    }

    fn broadcast_bytes(&self, buf: &mut [u8], root: usize) -> Result<(), DistError> {
        self.broadcast(buf, root, "broadcast_bytes")
    }
}
