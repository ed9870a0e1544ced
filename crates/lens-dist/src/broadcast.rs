//! [`broadcast_trace_context`]: NeMo Lens's protocol for sharing one trace across the ranks.

use lens_core::{Carrier, propagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;

use crate::collective::{Collective, check_root};
use crate::error::DistError;

/// Broadcasts the current Context of rank `src_rank` to every rank of `comm` (NeMo Lens
/// `broadcast_trace_context(rank, src_rank)`); collective: every rank calls it with the same
/// `src_rank`.
///
/// The protocol is NeMo Lens's, byte for byte: the source injects its current Context into a
/// [`Carrier`] with lens-core's propagator and encodes it as Python's `json.dumps` does
/// ([`Carrier::to_json_bytes`], docs/propagation-rules.md#json-byte-format); the length is broadcast as an int64, then, when it
/// is not 0, the bytes as uint8. Every rank then returns the same value:
///
/// - `Ok(Some(carrier))`: the source's trace context (`traceparent`, `tracestate`, `baggage`),
///   ready for [`lens_core::extract_context`] or [`create_linked_span`](crate::create_linked_span).
/// - `Ok(None)`: the source had no context to send. A lens source whose context injects nothing
///   broadcasts length 0 and skips the byte broadcast (Python receivers return `None` for it, as
///   their code does for length 0); a carrier that arrives but holds no key (the `{}` a Python
///   source sends when it has no context) is also `None`, so that `None` means "no context"
///   whichever language the source rank runs.
/// - `Err(DistError::Carrier)`: the bytes are not a JSON carrier (docs/propagation-rules.md#carriers: not UTF-8, not
///   strict JSON, not an object, nested too deep). Python raises there; lens returns the error on
///   every rank that received the bytes, after the broadcast completed, so no rank is left
///   waiting. `Err(DistError::InvalidLength)`: the length is negative or over
///   [`Limits::carrier_bytes`](lens_core::Limits::carrier_bytes) (64 KiB by default); every
///   rank, the source included, skips the byte broadcast and returns this error.
/// - `Err(DistError::InvalidRank)` before any communication when `src_rank` is not a rank of
///   `comm` (on every rank alike) or `rank` is not `comm.rank()`.
///
/// ```
/// use lens_dist::{broadcast_trace_context, Collective, ThreadGroup};
/// use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
/// use opentelemetry::Context;
///
/// // Four ranks, one thread each; rank 0 runs inside a trace.
/// let comms = ThreadGroup::new(4);
/// let results: Vec<_> = std::thread::scope(|s| {
///     let handles: Vec<_> = comms
///         .into_iter()
///         .map(|comm| {
///             s.spawn(move || {
///                 let rank = comm.rank();
///                 let cx = if rank == 0 {
///                     Context::new().with_remote_span_context(SpanContext::new(
///                         TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
///                         SpanId::from_hex("00f067aa0ba902b7").unwrap(),
///                         TraceFlags::SAMPLED,
///                         true,
///                         TraceState::NONE,
///                     ))
///                 } else {
///                     Context::new()
///                 };
///                 let _guard = cx.attach();
///                 broadcast_trace_context(&comm, rank, 0)
///             })
///         })
///         .collect();
///     handles.into_iter().map(|h| h.join().unwrap()).collect()
/// });
/// for result in results {
///     let carrier = result?.expect("rank 0 had a context");
///     assert_eq!(
///         carrier.get("traceparent"),
///         Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
///     );
/// }
/// # Ok::<(), lens_dist::DistError>(())
/// ```
pub fn broadcast_trace_context<C: Collective + ?Sized>(
    comm: &C,
    rank: usize,
    src_rank: usize,
) -> Result<Option<Carrier>, DistError> {
    if rank == src_rank {
        Context::map_current(|cx| broadcast_trace_context_from(comm, rank, src_rank, cx))
    } else {
        broadcast_trace_context_from(comm, rank, src_rank, &Context::new())
    }
}

/// [`broadcast_trace_context`] with the source rank's Context given rather than taken from
/// [`Context::current`]. `cx` is read on the source rank only; other ranks may pass any Context.
pub fn broadcast_trace_context_from<C: Collective + ?Sized>(
    comm: &C,
    rank: usize,
    src_rank: usize,
    cx: &Context,
) -> Result<Option<Carrier>, DistError> {
    check_root(comm, src_rank, "source rank")?;
    let own = comm.rank();
    if rank != own {
        return Err(DistError::InvalidRank {
            what: "rank",
            rank,
            size: comm.size(),
            own,
        });
    }
    let propagator = propagator();
    let limit = propagator.limits().carrier_bytes;

    // The source: its carrier and bytes; length 0 when the context injects nothing.
    let mut source = None;
    let mut len: i64 = 0;
    if rank == src_rank {
        let mut carrier = Carrier::with_capacity(3);
        propagator.inject_context(cx, &mut carrier);
        if !carrier.is_empty() {
            let bytes = carrier.to_json_bytes();
            len = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
            source = Some((carrier, bytes));
        }
    }

    comm.broadcast_i64(&mut len, src_rank)?;
    if len == 0 {
        return Ok(None);
    }
    // Every rank sees the same length, so every rank takes the same branch here.
    let Some(n) = usize::try_from(len).ok().filter(|&n| n <= limit) else {
        return Err(DistError::InvalidLength { len, limit });
    };

    match source {
        // The source: `n` is its own byte count.
        Some((carrier, mut bytes)) => {
            comm.broadcast_bytes(&mut bytes, src_rank)?;
            Ok(Some(carrier))
        }
        None => {
            let mut bytes = vec![0u8; n];
            comm.broadcast_bytes(&mut bytes, src_rank)?;
            let carrier = Carrier::from_json_bytes_with_limits(&bytes, propagator.limits())?;
            Ok((!carrier.is_empty()).then_some(carrier))
        }
    }
}
