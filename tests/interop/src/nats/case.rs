//! The cases of the scenario: who publishes to whom, how, and with which parent context.

use crate::describe::Spec;
use crate::grpc::{BAGGAGE, TRACESTATE};
use crate::spans::Side;

/// Who publishes to whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direction {
    PythonToRust,
    RustToPython,
}

/// How the message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// Core publish to a subscriber.
    Core,
    /// A request, answered by the other side inside its `process` span.
    Request,
    /// A JetStream publish (up to the ack), pulled by a durable consumer and acked.
    JetStream,
}

pub(super) struct Case {
    pub(super) name: &'static str,
    pub(super) direction: Direction,
    pub(super) mode: Mode,
    /// The first byte of the trace id, in hex: the case's own trace.
    pub(super) id: &'static str,
    pub(super) parent: Spec,
    /// The Rust publisher starts a span of its own under `parent` (else `parent` is the parent).
    pub(super) caller_span: bool,
}

impl Case {
    /// `rs.*` subjects are consumed by the Rust side, `py.*` by the Python side.
    pub(super) fn subject(&self) -> String {
        let side = match self.direction {
            Direction::PythonToRust => "rs",
            Direction::RustToPython => "py",
        };
        match self.mode {
            Mode::Core => format!("{side}.core.{}", self.id),
            Mode::Request => format!("{side}.svc"),
            Mode::JetStream => format!("{side}.js.{}", self.id),
        }
    }

    pub(super) fn trace_id(&self) -> &str {
        self.parent
            .span
            .as_ref()
            .map_or("", |s| s.trace_id.as_str())
    }

    pub(super) fn flags(&self) -> u8 {
        self.parent.span.as_ref().map_or(0, |s| s.trace_flags)
    }

    pub(super) fn sampled(&self) -> bool {
        self.flags() & 1 == 1
    }

    pub(super) fn label(&self, what: &str) -> String {
        let d = match self.direction {
            Direction::PythonToRust => "python->rust",
            Direction::RustToPython => "rust->python",
        };
        format!("{d} [{}] {what}", self.name)
    }

    pub(super) fn sides(&self) -> (Side, Side) {
        match self.direction {
            Direction::PythonToRust => (Side::Python, Side::Rust),
            Direction::RustToPython => (Side::Rust, Side::Python),
        }
    }
}

pub(super) fn cases() -> Vec<Case> {
    let trace = |t: &str| format!("{t}f7651916cd43dd8448eb211c80319c");
    let parent = |t: &str, flags: u8| Spec::span(&trace(t), "b7ad6b7169203331", flags);
    let mut out = Vec::new();
    for direction in [Direction::PythonToRust, Direction::RustToPython] {
        let ids: [&'static str; 5] = match direction {
            Direction::PythonToRust => ["3a", "3b", "3c", "3d", "3e"],
            Direction::RustToPython => ["4a", "4b", "4c", "4d", "4e"],
        };
        let rust_caller = direction == Direction::RustToPython;
        let case = |name, mode, id: &'static str, parent: Spec, caller_span| Case {
            name,
            direction,
            mode,
            id,
            parent,
            caller_span,
        };
        out.extend([
            case(
                "core publish, sampled, tracestate, baggage",
                Mode::Core,
                ids[0],
                parent(ids[0], 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                rust_caller,
            ),
            case(
                "core publish, unsampled, baggage",
                Mode::Core,
                ids[1],
                parent(ids[1], 0x00).baggage(BAGGAGE),
                false,
            ),
            case(
                "request/reply, sampled, tracestate, baggage",
                Mode::Request,
                ids[2],
                parent(ids[2], 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                rust_caller,
            ),
            case(
                "JetStream, sampled, tracestate, baggage",
                Mode::JetStream,
                ids[3],
                parent(ids[3], 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                false,
            ),
            case(
                "JetStream, unsampled, baggage",
                Mode::JetStream,
                ids[4],
                parent(ids[4], 0x00).baggage(&[("job", "rl rollout")]),
                rust_caller,
            ),
        ]);
    }
    out
}
