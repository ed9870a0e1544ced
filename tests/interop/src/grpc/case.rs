//! The cases of the scenario: who calls whom, how, the parent context and the expected answer.

use tonic::Code;

use super::wire::{HEALTH_CHECK, STREAM, UNARY};
use crate::describe::Spec;

/// Who calls whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    PythonToRust,
    RustToPython,
}

pub(crate) const BAGGAGE: &[(&str, &str)] = &[
    ("tenant", "acme corp"),
    ("list", "a,b,c"),
    ("eq", "k=v=w"),
    ("utf8", "naïve café ✓ 東京 🚀"),
    ("pct", "100% sure"),
];
pub(crate) const TRACESTATE: &[(&str, &str)] =
    &[("congo", "t61rcWkgMzE"), ("rojo", "00f067aa0ba902b7")];

/// How the Rust client sends its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Via {
    /// `ClientLayer`: a CLIENT span, the parent of the Python SERVER span.
    Layer,
    /// `ClientInterceptor`: no span; the caller's span is the parent of the Python SERVER span.
    Interceptor,
}

/// The service a call goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// `lens.interop.Relay`: JSON messages that say what the handler saw.
    Relay,
    /// `grpc.health.v1.Health/Check`: on the Rust side the server and client tonic-health
    /// generated from protobuf; on the Python side protobuf bytes written by hand, the handler's
    /// view in its span's attribute [`SEEN_ATTRIBUTE`](super::wire::SEEN_ATTRIBUTE).
    Health,
}

/// One call: its parent context, unary or streaming (with how many messages and the final
/// status), and for Rust callers how the context is sent.
pub(super) struct Case {
    pub(super) name: &'static str,
    pub(super) parent: Spec,
    pub(super) streaming: bool,
    pub(super) items: usize,
    pub(super) code: Code,
    pub(super) via: Via,
    /// The Rust caller starts a span of its own under `parent` (else `parent` is the parent).
    pub(super) caller_span: bool,
    pub(super) target: Target,
}

impl Case {
    pub(super) fn method(&self) -> &'static str {
        match (self.target, self.streaming) {
            (Target::Health, _) => HEALTH_CHECK,
            (Target::Relay, false) => UNARY,
            (Target::Relay, true) => STREAM,
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
}

pub(super) fn cases(direction: Direction) -> Vec<Case> {
    // Trace ids 1a..., 1b... (python->rust) and 2a..., 2b... (rust->python): one per call.
    let (a, b, c, d, e, f, g) = match direction {
        Direction::PythonToRust => ("1a", "1b", "1c", "1d", "1e", "1f", "10"),
        Direction::RustToPython => ("2a", "2b", "2c", "2d", "2e", "2f", "20"),
    };
    let trace = |t: &str| format!("{t}f7651916cd43dd8448eb211c80319c");
    let parent = |t: &str, flags: u8| Spec::span(&trace(t), "b7ad6b7169203331", flags);
    let case = |name, parent, streaming, items, code, via, caller_span| Case {
        name,
        parent,
        streaming,
        items,
        code,
        via,
        caller_span,
        target: Target::Relay,
    };
    let mut out = vec![
        case(
            "unary, sampled, tracestate, baggage",
            parent(a, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
            false,
            1,
            Code::Ok,
            Via::Layer,
            true,
        ),
        case(
            "unary, random flag (-03)",
            parent(b, 0x03).baggage(&[("job", "rl rollout")]),
            false,
            1,
            Code::Ok,
            Via::Layer,
            false,
        ),
        case(
            "server-streaming, 3 messages, OK",
            parent(c, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
            true,
            3,
            Code::Ok,
            Via::Layer,
            true,
        ),
        case(
            "server-streaming, 2 messages, then UNAVAILABLE in the trailers",
            parent(d, 0x01).baggage(BAGGAGE),
            true,
            2,
            Code::Unavailable,
            Via::Layer,
            true,
        ),
        case(
            "server-streaming, no message, UNAVAILABLE (trailers-only)",
            parent(g, 0x01).baggage(BAGGAGE),
            true,
            0,
            Code::Unavailable,
            Via::Layer,
            true,
        ),
        Case {
            target: Target::Health,
            ..case(
                "tonic-health Check (generated from protobuf), tracestate, baggage",
                parent(f, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                false,
                1,
                Code::Ok,
                Via::Layer,
                true,
            )
        },
    ];
    if direction == Direction::RustToPython {
        out.push(case(
            "unary, ClientInterceptor, tracestate, baggage",
            parent(e, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
            false,
            1,
            Code::Ok,
            Via::Interceptor,
            true,
        ));
    }
    out
}

/// The gRPC status name grpcio uses (`grpc.StatusCode[...]`).
pub(super) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Unavailable => "UNAVAILABLE",
        _ => "UNKNOWN",
    }
}
