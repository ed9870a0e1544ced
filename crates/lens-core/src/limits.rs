//! Size limits applied to everything lens reads from outside the process (docs/propagation-rules.md#limits).

/// Size limits for propagation input. The defaults are those of docs/propagation-rules.md#limits.
///
/// Every limit bounds both the work done and the memory allocated for hostile input: lens never
/// examines more than these many bytes of a value.
///
/// ```
/// use lens_core::Limits;
///
/// let limits = Limits::default().with_baggage_members(64);
/// assert_eq!(limits.baggage_members, 64);
/// assert_eq!(limits.tracestate_members, 32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Limits {
    /// Longest traceparent value examined, in bytes; a longer value is invalid (default 512).
    pub traceparent_bytes: usize,
    /// Most tracestate list members; more drops the whole tracestate (default 32).
    pub tracestate_members: usize,
    /// Longest tracestate, in bytes, all lines joined; longer drops the whole tracestate (default 8192).
    pub tracestate_bytes: usize,
    /// Most baggage members kept (default 180).
    pub baggage_members: usize,
    /// Longest baggage header lens would send, in bytes (default 8192).
    pub baggage_bytes: usize,
    /// Largest JSON carrier accepted, in bytes (default 64 KiB).
    pub carrier_bytes: usize,
    /// Deepest JSON nesting accepted in a carrier; the top-level object is level 1 (default 32).
    pub carrier_depth: usize,
}

impl Limits {
    /// The limits of docs/propagation-rules.md#limits.
    pub const DEFAULT: Limits = Limits {
        traceparent_bytes: 512,
        tracestate_members: 32,
        tracestate_bytes: 8192,
        baggage_members: 180,
        baggage_bytes: 8192,
        carrier_bytes: 64 * 1024,
        carrier_depth: 32,
    };

    /// Sets [`Limits::traceparent_bytes`].
    pub const fn with_traceparent_bytes(mut self, bytes: usize) -> Self {
        self.traceparent_bytes = bytes;
        self
    }
    /// Sets [`Limits::tracestate_members`].
    pub const fn with_tracestate_members(mut self, members: usize) -> Self {
        self.tracestate_members = members;
        self
    }
    /// Sets [`Limits::tracestate_bytes`].
    pub const fn with_tracestate_bytes(mut self, bytes: usize) -> Self {
        self.tracestate_bytes = bytes;
        self
    }
    /// Sets [`Limits::baggage_members`].
    pub const fn with_baggage_members(mut self, members: usize) -> Self {
        self.baggage_members = members;
        self
    }
    /// Sets [`Limits::baggage_bytes`].
    pub const fn with_baggage_bytes(mut self, bytes: usize) -> Self {
        self.baggage_bytes = bytes;
        self
    }
    /// Sets [`Limits::carrier_bytes`].
    pub const fn with_carrier_bytes(mut self, bytes: usize) -> Self {
        self.carrier_bytes = bytes;
        self
    }
    /// Sets [`Limits::carrier_depth`].
    pub const fn with_carrier_depth(mut self, depth: usize) -> Self {
        self.carrier_depth = depth;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
