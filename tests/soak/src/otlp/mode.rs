//! Where the spans go in one arm of the comparison.

use std::fmt;

/// Where the spans go in one arm of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// No exporter (a tracer provider without span processor): what exporting costs at all.
    NoExporter,
    /// OTLP/HTTP to a collector that answers every export `200 OK`: the reference.
    Healthy,
    /// OTLP/HTTP to a port nothing listens on (connection refused).
    CollectorDown,
    /// OTLP/HTTP to a listener that accepts connections and never answers.
    BlackHole,
}

impl Mode {
    /// The arms, in the order of the first round.
    pub const ALL: [Mode; 4] = [
        Mode::NoExporter,
        Mode::Healthy,
        Mode::CollectorDown,
        Mode::BlackHole,
    ];

    /// The arms a fault is measured in.
    pub const FAULTS: [Mode; 2] = [Mode::CollectorDown, Mode::BlackHole];

    /// The arm the faults are compared with.
    pub const REFERENCE: Mode = Mode::Healthy;
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::NoExporter => "no exporter",
            Mode::Healthy => "collector healthy (reference)",
            Mode::CollectorDown => "collector down",
            Mode::BlackHole => "collector black-holing",
        })
    }
}
