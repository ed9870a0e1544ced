//! Scenario NCCL bytes: NeMo Lens `serialize_context()` -> lens `extract_nccl_context`, and lens
//! `serialize_context()` -> NeMo Lens `extract_nccl_context`, for a set of contexts; byte
//! equality where docs/propagation-rules.md#json-byte-format requires it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use lens_core::{Carrier, LensContextExt, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use serde_json::json;

use crate::check::Checks;
use crate::describe::{Seen, SeenSpan, Spec, seen};
use crate::error::{Error, Result};
use crate::python::PythonProcess;
use crate::rows;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN_ID: &str = "00f067aa0ba902b7";

/// One context of the scenario.
struct Case {
    name: &'static str,
    spec: Spec,
    /// Built only in Rust: Python's API cannot make this context (see [`rust_only_cases`]).
    rust: Option<Context>,
    /// Baggage properties of Rust-only cases, per key (Python folds them into the value).
    properties: Vec<(&'static str, &'static str)>,
    /// The docs/propagation-rules.md#differences-from-nemo-lens rows this case shows.
    rows: &'static [&'static str],
}

fn case(name: &'static str, spec: Spec, rows: &'static [&'static str]) -> Case {
    Case {
        name,
        spec,
        rust: None,
        properties: Vec::new(),
        rows,
    }
}

/// Contexts both libraries can build through their APIs.
fn shared_cases() -> Vec<Case> {
    let special: &[(&str, &str)] = &[
        ("text", "hello world"),
        ("list", "a,b,c"),
        ("eq", "x=y=z"),
        ("semi", "p;q"),
        ("utf8", "naïve café ✓ 東京"),
        ("emoji", "🚀 launch"),
        ("plus", "1+1=2"),
        ("pct", "100% of %20"),
        ("quote", "say \"hi\" \\ back"),
    ];
    let many: Vec<(String, String)> = (0..100)
        .map(|i| (format!("k{i:03}"), format!("v{i}")))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    vec![
        case("sampled", Spec::span(TRACE_ID, SPAN_ID, 0x01), &[]),
        case("not sampled", Spec::span(TRACE_ID, SPAN_ID, 0x00), &[]),
        case("sampled + random", Spec::span(TRACE_ID, SPAN_ID, 0x03), &[]),
        case(
            "tracestate",
            Spec::span(TRACE_ID, SPAN_ID, 0x01)
                .tracestate(&[("congo", "t61rcWkgMzE"), ("rojo", "00f067aa0ba902b7")]),
            &[],
        ),
        case(
            "baggage, plain values",
            Spec::span(TRACE_ID, SPAN_ID, 0x01).baggage(&[
                ("tenant", "acme"),
                ("rank", "3"),
                ("run.id", "job-42_a~b"),
            ]),
            &[],
        ),
        case(
            "baggage only",
            Spec::default().baggage(&[("user", "alice")]),
            &[],
        ),
        case("empty", Spec::default(), &[]),
        case(
            "100 baggage entries",
            Spec::span(TRACE_ID, SPAN_ID, 0x01).baggage(&many),
            &[],
        ),
        case(
            "baggage with spaces, commas, =, ;, quotes, non-ASCII",
            Spec::span(TRACE_ID, SPAN_ID, 0x03)
                .tracestate(&[("vendor", "v1")])
                .baggage(special),
            &[rows::SPACE_ON_INJECT, rows::PLUS_INCOMING],
        ),
        case(
            "unknown trace-flag bits",
            Spec::span(TRACE_ID, SPAN_ID, 0xff),
            &[rows::FLAG_BITS],
        ),
        case(
            "all-zero trace-id, flags 01",
            Spec::span("00000000000000000000000000000000", SPAN_ID, 0x01).baggage(&[("k", "v")]),
            &[rows::ZERO_IDS],
        ),
        case(
            "percent-encoded spaces at the ends of a value",
            Spec::span(TRACE_ID, SPAN_ID, 0x01).baggage(&[("pad", "  both ends  ")]),
            &[
                rows::SPACE_ON_INJECT,
                rows::PLUS_INCOMING,
                rows::PADDED_VALUE,
            ],
        ),
    ]
}

/// Contexts only lens can hold: a tracestate with keys of the current W3C grammar, and baggage
/// properties as metadata. Rust -> Python only.
fn rust_only_cases() -> Result<Vec<Case>> {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", format!("00-{TRACE_ID}-{SPAN_ID}-01"));
    carrier.insert("tracestate", "1abc=x,t@1v=y,foo@@bar=z");
    let w3c_keys = lens_core::extract_context(&carrier);

    let spec = Spec::span(TRACE_ID, SPAN_ID, 0x01).baggage(&[("shard", "7"), ("job", "pretrain")]);
    let properties = spec
        .build()?
        .with_baggage_entry_and_properties("shard", "7", "p1;p2=x")
        .map_err(|e| Error::Context {
            what: "baggage with properties".into(),
            message: e.to_string(),
        })?;
    Ok(vec![
        Case {
            rust: Some(w3c_keys),
            ..case(
                "tracestate keys 1abc, t@1v, foo@@bar",
                Spec::span(TRACE_ID, SPAN_ID, 0x01).tracestate(&[
                    ("1abc", "x"),
                    ("t@1v", "y"),
                    ("foo@@bar", "z"),
                ]),
                &[rows::TRACESTATE_KEYS],
            )
        },
        Case {
            rust: Some(properties),
            properties: vec![("shard", "p1;p2=x")],
            ..case("baggage properties", spec, &[rows::PROPERTIES])
        },
    ])
}

pub(crate) fn run(oracle: &mut PythonProcess, checks: &mut Checks) -> Result<()> {
    let shared = shared_cases();
    python_to_rust(oracle, checks, &shared)?;
    let mut all = shared;
    all.extend(rust_only_cases()?);
    rust_to_python(oracle, checks, &all)
}

/// NeMo Lens serializes; lens reads the bytes (and, for shared cases, writes the same bytes).
fn python_to_rust(oracle: &mut PythonProcess, checks: &mut Checks, cases: &[Case]) -> Result<()> {
    let specs: Vec<&Spec> = cases.iter().map(|c| &c.spec).collect();
    let answer = oracle.request(&json!({"op": "serialize", "contexts": specs}))?;
    let python_bytes = decode_all(&answer["bytes_b64"])?;
    let plus_as_space = W3cPropagator::new().with_plus_as_space(true);

    for (case, py) in cases.iter().zip(&python_bytes) {
        let name = |what: &str| format!("python->rust [{}] {what}", case.name);
        for row in case.rows {
            checks.row(row);
        }
        // lens writes the bytes NeMo Lens writes (docs/propagation-rules.md#json-byte-format), but for the §9 rows.
        let cx = case.spec.build()?;
        let rust_bytes = {
            let _guard = cx.clone().attach();
            lens_nccl::serialize_context()
        };
        let expected = expected_rust_bytes(py)?;
        checks.eq(
            &name("lens serialize_context() = NeMo Lens bytes, §9 rows applied"),
            &text(&rust_bytes),
            &text(&expected),
        );
        checks.eq(
            &name("byte-identical exactly when no §9 row applies"),
            &(rust_bytes == *py),
            &case.rows.is_empty(),
        );

        // lens reads NeMo Lens's bytes.
        let extracted = lens_nccl::extract_nccl_context(py);
        let mut got = seen(&extracted);
        if let Some(span) = &mut got.span {
            span.trace_flags &= 0x03;
        }
        let want = expected_seen_in_rust(&case.spec, false);
        checks.eq(&name("extract_nccl_context: span"), &got.span, &want.span);
        checks.eq(
            &name("extract_nccl_context: baggage (default: `+` kept)"),
            &got.baggage,
            &want.baggage,
        );
        let carrier = lens_nccl::deserialize_context(py);
        checks.check(&name("deserialize_context"), carrier.is_some(), || {
            format!("rejected {:?}", text(py))
        });
        if let Some(carrier) = carrier {
            let got = seen(&plus_as_space.extract(&carrier));
            checks.eq(
                &name("baggage with plus_as_space = what Python set"),
                &got.baggage,
                &case.spec.baggage,
            );
            // Re-sent by lens: the bytes lens writes for the same context.
            let again = lens_nccl::serialize_context_from(&plus_as_space.extract(&carrier));
            checks.eq(
                &name("re-serialized by lens = lens's bytes for the context"),
                &text(&again),
                &text(&rust_bytes),
            );
        }
        checks.contexts += 1;
    }
    Ok(())
}

/// lens serializes; NeMo Lens reads the bytes.
fn rust_to_python(oracle: &mut PythonProcess, checks: &mut Checks, cases: &[Case]) -> Result<()> {
    let mut rust_bytes = Vec::with_capacity(cases.len());
    for case in cases {
        let cx = match &case.rust {
            Some(cx) => cx.clone(),
            None => case.spec.build()?,
        };
        rust_bytes.push(lens_nccl::serialize_context_from(&cx));
    }
    let encoded: Vec<String> = rust_bytes.iter().map(|b| B64.encode(b)).collect();
    let answer = oracle.request(&json!({"op": "extract_nccl", "bytes_b64": encoded}))?;
    let contexts: Vec<Seen> = serde_json::from_value(answer["contexts"].clone())
        .map_err(Error::json("extract_nccl answer"))?;
    checks.eq(
        "rust->python: one context per payload",
        &contexts.len(),
        &cases.len(),
    );
    for ((case, bytes), got) in cases.iter().zip(&rust_bytes).zip(&contexts) {
        let name = |what: &str| format!("rust->python [{}] {what}", case.name);
        for row in case.rows {
            checks.row(row);
        }
        let want = expected_seen_in_python(case);
        checks.eq(
            &format!("{} ({})", name("extract_nccl_context: span"), text(bytes)),
            &got.span,
            &want.span,
        );
        checks.eq(
            &name("extract_nccl_context: baggage"),
            &got.baggage,
            &want.baggage,
        );
        checks.contexts += 1;
    }
    Ok(())
}

/// The bytes lens writes for the context whose NeMo Lens bytes are `py`: the same, except
/// unknown flag bits cleared, no traceparent/tracestate for an all-zero id, and `%20` where
/// Python writes `+` for a space (docs/propagation-rules.md#differences-from-nemo-lens).
fn expected_rust_bytes(py: &[u8]) -> Result<Vec<u8>> {
    let carrier = Carrier::from_json_bytes(py).map_err(|e| Error::Python {
        process: "oracle.py".into(),
        message: format!("serialize_context() wrote what lens rejects: {e}"),
    })?;
    let mut out = Carrier::with_capacity(3);
    if let Some(tp) = carrier.get("traceparent") {
        let parts: Vec<&str> = tp.split('-').collect();
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        if let [version, trace, span, flags] = parts[..]
            && !zero(trace)
            && !zero(span)
        {
            let flags = u8::from_str_radix(flags, 16).unwrap_or(0) & 0x03;
            out.insert(
                "traceparent",
                format!("{version}-{trace}-{span}-{flags:02x}"),
            );
            if let Some(ts) = carrier.get("tracestate") {
                out.insert("tracestate", ts);
            }
        }
    }
    if let Some(baggage) = carrier.get("baggage") {
        out.insert("baggage", baggage.replace('+', "%20"));
    }
    Ok(out.to_json_bytes())
}

/// What lens reads from NeMo Lens's bytes for `spec` (its default decoder keeps `+`).
fn expected_seen_in_rust(spec: &Spec, plus_as_space: bool) -> Seen {
    let span = spec.span.as_ref().and_then(|s| {
        let valid = !s.trace_id.bytes().all(|b| b == b'0') && !s.span_id.bytes().all(|b| b == b'0');
        valid.then(|| SeenSpan {
            trace_id: s.trace_id.clone(),
            span_id: s.span_id.clone(),
            // Python sends every bit; whether a context holds bits other than sampled and
            // random is not specified (vectors README): compared masked, and the re-serialized
            // bytes show what lens sends on.
            trace_flags: s.trace_flags & 0x03,
            sampled: s.trace_flags & 0x01 != 0,
            is_remote: true,
            tracestate: spec.tracestate_header(),
        })
    });
    let baggage = spec
        .baggage
        .iter()
        .map(|(k, v)| {
            let v = if plus_as_space {
                v.clone()
            } else {
                v.replace(' ', "+")
            };
            (k.clone(), v)
        })
        .collect();
    Seen { span, baggage }
}

/// What NeMo Lens reads from lens's bytes for `case`.
fn expected_seen_in_python(case: &Case) -> Seen {
    let spec = &case.spec;
    let mut want = expected_seen_in_rust(spec, true);
    if let Some(span) = &mut want.span {
        // NeMo Lens drops the whole tracestate for keys it does not know (§9 "tracestate keys").
        if case.rows.contains(&rows::TRACESTATE_KEYS) {
            span.tracestate = String::new();
        }
    }
    for (k, v) in &mut want.baggage {
        // Python folds properties into the value and strips decoded spaces at the ends.
        if let Some((_, props)) = case.properties.iter().find(|(key, _)| key == k) {
            v.push(';');
            v.push_str(props);
        }
        *v = v.trim().to_owned();
    }
    want
}

fn decode_all(value: &serde_json::Value) -> Result<Vec<Vec<u8>>> {
    let list: Vec<String> =
        serde_json::from_value(value.clone()).map_err(Error::json("bytes_b64"))?;
    list.iter()
        .map(|s| {
            B64.decode(s).map_err(|e| Error::Python {
                process: "oracle.py".into(),
                message: format!("bad base64: {e}"),
            })
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn expected_rust_bytes_apply_only_the_section_9_rows() {
        let py = br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", "tracestate": "a=1", "baggage": "k=a+b,p=1%2B1"}"#;
        assert_eq!(
            text(&expected_rust_bytes(py).unwrap()),
            r#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", "tracestate": "a=1", "baggage": "k=a%20b,p=1%2B1"}"#
        );
        let zero = br#"{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "tracestate": "a=1", "baggage": "k=v"}"#;
        assert_eq!(
            text(&expected_rust_bytes(zero).unwrap()),
            r#"{"baggage": "k=v"}"#
        );
        assert_eq!(text(&expected_rust_bytes(b"{}").unwrap()), "{}");
    }

    #[test]
    fn every_shared_case_builds_in_rust() {
        for case in shared_cases() {
            assert!(case.spec.build().is_ok(), "{}", case.name);
        }
        assert_eq!(rust_only_cases().unwrap().len(), 2);
    }
}
