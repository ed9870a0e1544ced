//! lens-dist: one trace across all ranks of a distributed job, wire-compatible with NVIDIA NeMo
//! Lens's `broadcast_trace_context` and `create_linked_span`.
//!
//! Ranks of a distributed job are separate processes. The source rank broadcasts its trace
//! context over the job's collective engine ([`broadcast_trace_context`], NeMo Lens's protocol:
//! an int64 length, then the `json.dumps` bytes of the W3C carrier), so every rank works in the
//! same trace; pipeline stages correlate with links rather than parents
//! ([`create_linked_span`]).
//!
//! ```
//! use lens_dist::{broadcast_trace_context, create_linked_span, Collective, ThreadGroup};
//! use opentelemetry::trace::{Span, TraceContextExt, Tracer, TracerProvider};
//! use opentelemetry::{Context, KeyValue};
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//!
//! // Four ranks (threads here; MPI processes or NCCL devices in a real job). Rank 0 holds the
//! // job's root span; every rank makes a stage span linked to it.
//! std::thread::scope(|s| {
//!     for comm in ThreadGroup::new(4) {
//!         let tracer = provider.tracer("job");
//!         s.spawn(move || -> Result<(), lens_dist::DistError> {
//!             let rank = comm.rank();
//!             let root = (rank == 0).then(|| tracer.start("job"));
//!             let cx = root.map_or_else(Context::new, Context::current_with_span);
//!             let _guard = cx.attach();
//!
//!             let carrier = broadcast_trace_context(&comm, rank, 0)?;
//!             let mut stage = create_linked_span(
//!                 &tracer,
//!                 format!("stage {rank}"),
//!                 &carrier,
//!                 [KeyValue::new("rank", rank as i64)],
//!             );
//!             stage.end();
//!             Ok(())
//!         });
//!     }
//! });
//!
//! let spans = exporter.get_finished_spans().unwrap();
//! let job = spans.iter().find(|s| s.name == "job").unwrap();
//! let stages: Vec<_> = spans.iter().filter(|s| s.name.starts_with("stage")).collect();
//! assert_eq!(stages.len(), 4);
//! for stage in stages {
//!     assert_eq!(stage.links.links[0].span_context.span_id(), job.span_context.span_id());
//! }
//! ```
//!
//! # Collective engines
//!
//! [`Collective`] is the two broadcasts the protocol needs. Implementations:
//! - [`ThreadGroup`]: ranks as threads of one process, for tests.
//! - `MpiCollective` (feature `mpi`): MPI through the `mpi` crate (Debian: `openmpi-bin
//!   libopenmpi-dev`, and `libclang-dev clang` to build).
//! - `NcclCollective` (feature `nccl`): NCCL on lens-nccl's communicator (cudarc, loading
//!   `libcuda` and `libnccl` at run time); without them or a GPU, a [`DistError::Unavailable`]
//!   with lens-nccl's reason rather than a panic. How `libnccl.so` is found: the lens-nccl crate
//!   docs, "Finding NCCL".
//!
//! # Where lens differs from NeMo Lens 0.1.0
//! - A source rank with no context broadcasts length 0 (Python sends `{}`), and a carrier with
//!   no key arrives as `None` (Python returns `{}`): `None` means "no context" on every rank.
//! - Received bytes that are not a JSON carrier: [`DistError::Carrier`] (Python raises
//!   `JSONDecodeError`); a length over the carrier limit: [`DistError::InvalidLength`].
//! - An array of strings under a redacted key is redacted too ([`Redaction`]).
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod broadcast;
mod collective;
mod error;
mod linked;
#[cfg(feature = "mpi")]
mod mpi_backend;
#[cfg(feature = "nccl")]
mod nccl;
mod thread;

/// The `mpi` crate lens-dist is built with (feature `mpi`), for its `Universe` and communicators.
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub use ::mpi;
pub use broadcast::{broadcast_trace_context, broadcast_trace_context_from};
pub use collective::Collective;
pub use error::DistError;
pub use linked::{
    DEFAULT_REDACT_KEYS, Redaction, Remote, create_linked_span, create_linked_span_with,
};
#[cfg(feature = "mpi")]
#[cfg_attr(docsrs, doc(cfg(feature = "mpi")))]
pub use mpi_backend::MpiCollective;
#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
pub use nccl::{NcclCollective, NcclId, nccl_available};
pub use thread::{ThreadComm, ThreadGroup};
