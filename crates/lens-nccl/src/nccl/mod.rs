//! Context frames over NCCL, in the same group call as the payload (feature `nccl`).
//!
//! ```no_run
//! use lens_nccl::nccl::{self, ContextTransport};
//! use opentelemetry::Context;
//!
//! // World size 1: send to self and receive from self in one group call.
//! let comm = nccl::comm_self(0)?;
//! let stream = comm.stream();
//! let payload = stream.clone_htod(&vec![7u8; 1 << 20]).map_err(nccl::NcclError::driver("clone_htod"))?;
//! let mut received = stream.alloc_zeros::<u8>(1 << 20).map_err(nccl::NcclError::driver("alloc"))?;
//!
//! let mut transport = ContextTransport::new(&comm)?;
//! let (_, cx) = transport.sendrecv(&comm, &payload, 0, &mut received, 0, &Context::current())?;
//! # let _ = cx;
//! # Ok::<(), lens_nccl::nccl::NcclError>(())
//! ```
//!
//! Every entry point first checks that libcuda, libnccl and a GPU are there
//! ([`available`]), and returns [`NcclError::Unavailable`] with the reason otherwise: cudarc
//! panics on its first call when a library is missing, and no panic reaches the caller.
//!
//! Both sides must use frames of the same capacity ([`crate::FrameCodec`], 4 KiB by default):
//! NCCL matches a send and a receive by their size.

mod ffi;

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

pub use cudarc;
pub use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
pub use cudarc::nccl::{Comm, Id, NcclType};

use cudarc::driver::{DriverError, PinnedHostSlice};
use cudarc::nccl::{group_end, group_start};
use opentelemetry::Context;

use crate::error::FrameError;
use crate::frame::{FrameCodec, FrameEncoding};

/// What went wrong with an NCCL transfer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NcclError {
    /// libcuda, libnccl or a GPU is missing; the reason says which and what to do.
    #[error("NCCL is unavailable: {0}")]
    Unavailable(String),
    /// An NCCL call failed.
    #[error("NCCL {op} failed: {code}")]
    Nccl {
        /// The operation.
        op: &'static str,
        /// NCCL's result code.
        code: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA {op} failed: {code}")]
    Driver {
        /// The operation.
        op: &'static str,
        /// The driver's result code.
        code: String,
    },
    /// The context frame could not be built.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// `peer` is not a rank of the communicator.
    #[error("peer {peer} is not a rank of a communicator of {world_size}")]
    PeerOutOfRange {
        /// The peer asked for.
        peer: i32,
        /// The communicator's size.
        world_size: usize,
    },
    /// cudarc panicked (caught, so that it does not reach the caller).
    #[error("cudarc panicked during {op}: {message}")]
    Panicked {
        /// The operation.
        op: &'static str,
        /// The panic message.
        message: String,
    },
}

impl NcclError {
    /// Maps a CUDA driver error of operation `op` (for `map_err`).
    pub fn driver(op: &'static str) -> impl Fn(DriverError) -> NcclError {
        move |e| NcclError::Driver {
            op,
            code: format!("{:?}", e.0),
        }
    }

    /// Maps an NCCL error of operation `op` (for `map_err`).
    pub fn nccl(op: &'static str) -> impl Fn(cudarc::nccl::result::NcclError) -> NcclError {
        move |e| NcclError::Nccl {
            op,
            code: format!("{:?}", e.0),
        }
    }
}

/// Hint printed when cudarc finds no NCCL library.
const NCCL_HINT: &str = "libnccl was not found under the names cudarc tries (libnccl.so, \
libnccl.so.<cuda major>, ...). The pip wheel nvidia-nccl-cu13 ships only libnccl.so.2: put a \
`libnccl.so` symlink to it in a folder on LD_LIBRARY_PATH before starting the process (see the \
lens-nccl docs), or install the system package that provides libnccl.so (libnccl-dev)";

/// `Ok(())` when libcuda, libnccl and at least one GPU are there; otherwise
/// [`NcclError::Unavailable`] with the reason. Checked once per process.
pub fn available() -> Result<(), NcclError> {
    static STATE: OnceLock<Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(probe)
        .clone()
        .map_err(NcclError::Unavailable)
}

fn probe() -> Result<(), String> {
    if !ffi::driver_library_present() {
        return Err(
            "the CUDA driver library (libcuda.so / libcuda.so.1) was not found: \
                    no NVIDIA driver is installed, or it is not on the library path"
                .to_owned(),
        );
    }
    if !ffi::nccl_library_present() {
        return Err(NCCL_HINT.to_owned());
    }
    match guarded("device count", || {
        CudaContext::device_count().map_err(NcclError::driver("cuDeviceGetCount"))
    }) {
        Ok(n) if n > 0 => {}
        Ok(_) => return Err("no CUDA device found".to_owned()),
        Err(e) => return Err(format!("the CUDA driver reports no usable device: {e}")),
    }
    match guarded("NCCL version", || {
        cudarc::nccl::result::get_nccl_version().map_err(NcclError::nccl("ncclGetVersion"))
    }) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("libnccl was found but does not answer: {e}")),
    }
}

/// Runs `f`, turning a cudarc panic into [`NcclError::Panicked`].
fn guarded<T>(op: &'static str, f: impl FnOnce() -> Result<T, NcclError>) -> Result<T, NcclError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(NcclError::Panicked { op, message })
        }
    }
}

/// The number of CUDA devices.
pub fn device_count() -> Result<usize, NcclError> {
    available()?;
    guarded("device count", || {
        CudaContext::device_count()
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(NcclError::driver("cuDeviceGetCount"))
    })
}

/// The NCCL version as NCCL encodes it (e.g. 22805 for 2.28.5).
pub fn nccl_version() -> Result<i32, NcclError> {
    available()?;
    guarded("NCCL version", || {
        cudarc::nccl::result::get_nccl_version().map_err(NcclError::nccl("ncclGetVersion"))
    })
}

/// A new NCCL unique id (create on one rank, hand to the others out of band).
pub fn new_id() -> Result<Id, NcclError> {
    available()?;
    guarded("ncclGetUniqueId", || {
        Id::new().map_err(NcclError::nccl("ncclGetUniqueId"))
    })
}

/// A communicator of world size 1 on device `ordinal`, on the device's default stream: sends
/// to self and receives from self.
pub fn comm_self(ordinal: usize) -> Result<Comm, NcclError> {
    let id = new_id()?;
    comm_from_rank(ordinal, 0, 1, id)
}

/// Rank `rank` of a communicator of `world_size` ranks on device `ordinal` (its default
/// stream). Blocks until every rank has joined.
pub fn comm_from_rank(
    ordinal: usize,
    rank: usize,
    world_size: usize,
    id: Id,
) -> Result<Comm, NcclError> {
    available()?;
    guarded("ncclCommInitRank", || {
        let ctx = CudaContext::new(ordinal).map_err(NcclError::driver("cuCtxCreate"))?;
        Comm::from_rank(ctx.default_stream(), rank, world_size, id)
            .map_err(NcclError::nccl("ncclCommInitRank"))
    })
}

fn check_peer(comm: &Comm, peer: i32) -> Result<(), NcclError> {
    match usize::try_from(peer) {
        Ok(p) if p < comm.world_size() => Ok(()),
        _ => Err(NcclError::PeerOutOfRange {
            peer,
            world_size: comm.world_size(),
        }),
    }
}

/// Runs `ops` inside `ncclGroupStart` / `ncclGroupEnd`; the group is always closed.
fn in_group(ops: impl FnOnce() -> Result<(), NcclError>) -> Result<(), NcclError> {
    group_start().map_err(NcclError::nccl("ncclGroupStart"))?;
    let result = ops();
    let end = group_end().map_err(NcclError::nccl("ncclGroupEnd"));
    result.and(end.map(|_| ()))
}

/// Device and pinned host buffers for context frames on one communicator's stream, reused
/// across transfers (no allocation per transfer).
///
/// A send copies the encoded frame from pinned memory to the device and sends frame and payload
/// in one NCCL group: no host synchronisation. A receive posts both receives in one group,
/// copies the frame back and waits for that copy alone (which NCCL orders after the group).
#[derive(Debug)]
pub struct ContextTransport {
    codec: FrameCodec,
    stream: Arc<CudaStream>,
    encoded: Vec<u8>,
    upload: PinnedHostSlice<u8>,
    download: PinnedHostSlice<u8>,
    send_frame: CudaSlice<u8>,
    recv_frame: CudaSlice<u8>,
}

impl ContextTransport {
    /// Buffers for frames of the default capacity (4 KiB) on `comm`'s stream.
    pub fn new(comm: &Comm) -> Result<Self, NcclError> {
        Self::with_codec(comm, FrameCodec::default())
    }

    /// Buffers for frames of `codec`'s capacity on `comm`'s stream.
    pub fn with_codec(comm: &Comm, codec: FrameCodec) -> Result<Self, NcclError> {
        available()?;
        guarded("frame buffers", || {
            let stream = comm.stream();
            let ctx = stream.context().clone();
            let n = codec.capacity();
            let alloc = NcclError::driver("frame allocation");
            Ok(ContextTransport {
                codec,
                encoded: Vec::with_capacity(n),
                upload: ffi::alloc_pinned_zeroed(&ctx, n, true).map_err(&alloc)?,
                download: ffi::alloc_pinned_zeroed(&ctx, n, false).map_err(&alloc)?,
                send_frame: stream.alloc_zeros::<u8>(n).map_err(&alloc)?,
                recv_frame: stream.alloc_zeros::<u8>(n).map_err(&alloc)?,
                stream,
            })
        })
    }

    /// The frame codec.
    pub fn codec(&self) -> &FrameCodec {
        &self.codec
    }

    fn same_stream(&self, comm: &Comm) -> bool {
        comm.stream().cu_stream() == self.stream.cu_stream()
    }

    fn check(&self, comm: &Comm, peers: &[i32]) -> Result<(), NcclError> {
        available()?;
        for &peer in peers {
            check_peer(comm, peer)?;
        }
        if !self.same_stream(comm) {
            return Err(NcclError::Unavailable(
                "this ContextTransport was made for another communicator's stream".to_owned(),
            ));
        }
        Ok(())
    }

    /// Encodes `cx` and stages the frame on the device (stream-ordered, no host wait).
    fn stage(&mut self, cx: &Context) -> Result<FrameEncoding, NcclError> {
        let encoding = self.codec.encode_into(cx, &mut self.encoded)?;
        let host = self
            .upload
            .as_mut_slice()
            .map_err(NcclError::driver("frame staging"))?;
        host.copy_from_slice(&self.encoded);
        self.stream
            .memcpy_htod(&self.upload, &mut self.send_frame)
            .map_err(NcclError::driver("frame upload"))?;
        Ok(encoding)
    }

    /// Waits for the received frame to reach the host and extracts it (the caller's current
    /// Context for a bad frame, as [`FrameCodec::extract`]).
    fn unstage(&mut self) -> Result<Context, NcclError> {
        self.stream
            .memcpy_dtoh(&self.recv_frame, &mut self.download)
            .map_err(NcclError::driver("frame download"))?;
        let host = self
            .download
            .as_slice()
            .map_err(NcclError::driver("frame download wait"))?;
        Ok(self.codec.extract(host))
    }

    /// Sends `buf` to `peer` with a frame for `cx`, both in one NCCL group call.
    pub fn send<T: NcclType, S: DevicePtr<T>>(
        &mut self,
        comm: &Comm,
        buf: &S,
        peer: i32,
        cx: &Context,
    ) -> Result<FrameEncoding, NcclError> {
        self.check(comm, &[peer])?;
        guarded("send with context", || {
            let encoding = self.stage(cx)?;
            in_group(|| {
                comm.send(&self.send_frame, peer)
                    .map_err(NcclError::nccl("ncclSend (frame)"))?;
                comm.send(buf, peer).map_err(NcclError::nccl("ncclSend"))
            })?;
            self.record_use(buf);
            Ok(encoding)
        })
    }

    /// Receives `buf` from `peer` with its context frame, both in one NCCL group call, and
    /// returns the sender's Context (the caller's current Context if the frame is bad).
    pub fn recv<T: NcclType, R: DevicePtrMut<T>>(
        &mut self,
        comm: &Comm,
        buf: &mut R,
        peer: i32,
    ) -> Result<Context, NcclError> {
        self.check(comm, &[peer])?;
        guarded("recv with context", || {
            in_group(|| {
                comm.recv(&mut self.recv_frame, peer)
                    .map_err(NcclError::nccl("ncclRecv (frame)"))?;
                comm.recv(buf, peer)
                    .map(|_| ())
                    .map_err(NcclError::nccl("ncclRecv"))
            })?;
            self.record_use_mut(buf);
            self.unstage()
        })
    }

    /// Sends `send_buf` to `send_peer` and receives `recv_buf` from `recv_peer`, each with its
    /// frame, all in one NCCL group call (a rank of a pipeline, or world size 1 to self).
    pub fn sendrecv<T: NcclType, S: DevicePtr<T>, R: DevicePtrMut<T>>(
        &mut self,
        comm: &Comm,
        send_buf: &S,
        send_peer: i32,
        recv_buf: &mut R,
        recv_peer: i32,
        cx: &Context,
    ) -> Result<(FrameEncoding, Context), NcclError> {
        self.check(comm, &[send_peer, recv_peer])?;
        guarded("sendrecv with context", || {
            let encoding = self.stage(cx)?;
            in_group(|| {
                comm.send(&self.send_frame, send_peer)
                    .map_err(NcclError::nccl("ncclSend (frame)"))?;
                comm.send(send_buf, send_peer)
                    .map_err(NcclError::nccl("ncclSend"))?;
                comm.recv(&mut self.recv_frame, recv_peer)
                    .map_err(NcclError::nccl("ncclRecv (frame)"))?;
                comm.recv(recv_buf, recv_peer)
                    .map(|_| ())
                    .map_err(NcclError::nccl("ncclRecv"))
            })?;
            self.record_use(send_buf);
            self.record_use_mut(recv_buf);
            Ok((encoding, self.unstage()?))
        })
    }

    /// cudarc records a buffer's use when the NCCL call is made, but inside a group NCCL
    /// enqueues its work at `ncclGroupEnd`: record the use again after it, so that other streams
    /// wait for the transfer itself.
    fn record_use<T, S: DevicePtr<T>>(&self, sent: &S) {
        drop(sent.device_ptr(&self.stream));
        drop(self.send_frame.device_ptr(&self.stream));
    }

    fn record_use_mut<T, R: DevicePtrMut<T>>(&self, received: &mut R) {
        drop(received.device_ptr_mut(&self.stream));
    }
}

thread_local! {
    /// One transport per thread for the free functions, rebuilt when the stream changes.
    static TRANSPORT: RefCell<Option<ContextTransport>> = const { RefCell::new(None) };
}

fn with_transport<T>(
    comm: &Comm,
    f: impl FnOnce(&mut ContextTransport) -> Result<T, NcclError>,
) -> Result<T, NcclError> {
    available()?;
    TRANSPORT.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| {
            NcclError::Unavailable("lens-nccl's per-thread transport is already in use".to_owned())
        })?;
        let reuse = slot.as_ref().is_some_and(|t| t.same_stream(comm));
        if !reuse {
            *slot = Some(ContextTransport::new(comm)?);
        }
        match slot.as_mut() {
            Some(transport) => f(transport),
            None => Err(NcclError::Unavailable("no transport".to_owned())),
        }
    })
}

/// Sends `buf` to `peer` with the current Context's frame in the same NCCL group call (NeMo
/// Lens: `serialize_context()` beside the tensor). Buffers are kept per thread and reused.
pub fn send_with_context<T: NcclType, S: DevicePtr<T>>(
    comm: &Comm,
    buf: &S,
    peer: i32,
) -> Result<FrameEncoding, NcclError> {
    let cx = Context::current();
    send_with_context_from(comm, buf, peer, &cx)
}

/// [`send_with_context`] with a given Context.
pub fn send_with_context_from<T: NcclType, S: DevicePtr<T>>(
    comm: &Comm,
    buf: &S,
    peer: i32,
    cx: &Context,
) -> Result<FrameEncoding, NcclError> {
    with_transport(comm, |t| t.send(comm, buf, peer, cx))
}

/// Receives `buf` from `peer` with its context frame in the same NCCL group call and returns
/// the sender's Context (NeMo Lens: `extract_nccl_context`; the caller's current Context when
/// the frame is bad).
pub fn recv_with_context<T: NcclType, R: DevicePtrMut<T>>(
    comm: &Comm,
    buf: &mut R,
    peer: i32,
) -> Result<Context, NcclError> {
    with_transport(comm, |t| t.recv(comm, buf, peer))
}

/// Sends and receives with frames in one NCCL group call (needed for world size 1, where a send
/// to self and its receive must be in the same group); sends the current Context.
pub fn sendrecv_with_context<T: NcclType, S: DevicePtr<T>, R: DevicePtrMut<T>>(
    comm: &Comm,
    send_buf: &S,
    send_peer: i32,
    recv_buf: &mut R,
    recv_peer: i32,
) -> Result<Context, NcclError> {
    let cx = Context::current();
    with_transport(comm, |t| {
        t.sendrecv(comm, send_buf, send_peer, recv_buf, recv_peer, &cx)
            .map(|(_, received)| received)
    })
}
