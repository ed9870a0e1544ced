//! Where the trace starts, and the baggage its first service sets.

/// Where the trace starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    PythonFirst,
    RustFirst,
}

/// Baggage set by the first service and read, unchanged, by every later one.
pub(super) const BAGGAGE: &[(&str, &str)] = &[
    ("tenant", "acme corp"),
    ("list", "a,b,c"),
    ("eq", "k=v=w"),
    ("semi", "x;y"),
    ("utf8", "naïve café ✓ 東京 🚀"),
    ("plus", "1+1=2"),
    ("pct", "100% sure"),
];
