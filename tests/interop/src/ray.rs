//! Scenario Ray carrier: NeMo Lens `inject_ray_context()` -> JSON -> lens `RemoteCall` /
//! `extract_ray_context`, and lens `RemoteCall` JSON -> a NeMo Lens `traced_remote_call`-wrapped
//! function receiving `_otel_carrier`. Each call is one trace: the driver's span on one side,
//! the worker's span on the other, its child.

use std::path::Path;

use lens_core::W3cPropagator;
use lens_tonic::{
    RemoteCall, dispatch_with_context, extract_ray_context, traced_remote_call_with_tracer,
};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, Tracer};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::check::Checks;
use crate::describe::{Seen, Spec, seen};
use crate::error::{Error, Result};
use crate::python::PythonProcess;
use crate::rows;
use crate::spans;

/// The remote method's keyword arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Generate {
    prompt: String,
    max_tokens: u32,
}

const BAGGAGE: &[(&str, &str)] = &[
    ("job", "rl rollout"),
    ("list", "a,b"),
    ("eq", "k=v"),
    ("semi", "x;y"),
    ("utf8", "größe ✓ 🚀"),
];

/// The parents the drivers start from: a remote parent with tracestate and baggage, a new
/// trace, and a call without carrier.
fn drivers() -> Vec<(&'static str, Spec, bool)> {
    vec![
        (
            "remote parent, tracestate, baggage",
            Spec::span("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 0x01)
                .tracestate(&[("congo", "t61rcWkgMzE")])
                .baggage(BAGGAGE),
            true,
        ),
        ("new trace, no baggage", Spec::default(), true),
        ("no carrier (`_otel_carrier` null)", Spec::default(), false),
    ]
}

fn args(i: usize) -> Generate {
    Generate {
        prompt: format!("prompt {i}: héllo, \"world\""),
        max_tokens: 16 + u32::try_from(i).unwrap_or(0),
    }
}

pub(crate) async fn run(oracle: &mut PythonProcess, checks: &mut Checks, out: &Path) -> Result<()> {
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();

    let python_drivers = python_to_rust(oracle, checks, &tracer).await?;
    let rust_drivers = rust_to_python(oracle, checks, &tracer)?;

    let python_spans_path = out.join("python-spans.json");
    let answer = oracle.request(&json!({"op": "finish", "spans": python_spans_path}))?;
    oracle.finish()?;
    let mut all = spans::read_python(&python_spans_path)?;
    checks.eq(
        "python reports the spans it wrote",
        &answer["spans"].as_u64(),
        &u64::try_from(all.len()).ok(),
    );
    let _ignored = provider.force_flush();
    all.extend(spans::take_rust(&exporter, &out.join("rust-spans.json"))?);
    checks.eq(
        "spans: one driver and one worker per call",
        &all.len(),
        &(2 * (python_drivers.len() + rust_drivers.len())),
    );

    let by_id = |id: &str| all.iter().find(|s| s.span_id == id);
    for (name, driver, worker, linked) in python_drivers.iter().chain(&rust_drivers) {
        let driver_span = by_id(driver);
        let worker_span = by_id(worker);
        checks.check(
            &format!("[{name}] both spans exported"),
            driver_span.is_some() && worker_span.is_some(),
            || format!("driver {driver} or worker {worker} missing"),
        );
        let (Some(d), Some(w)) = (driver_span, worker_span) else {
            continue;
        };
        checks.eq(
            &format!("[{name}] worker kind/name"),
            &(w.kind.as_str(), w.side != d.side),
            &("INTERNAL", true),
        );
        if *linked {
            spans::same_trace(checks, &[d.clone(), w.clone()], &d.trace_id);
            spans::parent_is(checks, Some(w), Some(d), true);
        } else {
            checks.spans += 2;
            checks.check(
                &format!("[{name}] without a carrier the worker starts its own trace"),
                w.parent_span_id.is_none() && w.trace_id != d.trace_id,
                || format!("worker {w:?}"),
            );
        }
    }
    Ok(())
}

/// (case, driver span id, worker span id, whether the worker continues the driver's trace).
type Call = (String, String, String, bool);

/// NeMo Lens drivers dispatch; lens workers receive.
async fn python_to_rust(
    oracle: &mut PythonProcess,
    checks: &mut Checks,
    tracer: &opentelemetry_sdk::trace::SdkTracer,
) -> Result<Vec<Call>> {
    let cases = drivers();
    let calls: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(i, (_, parent, carrier))| {
            json!({"parent": parent, "kwargs": args(i), "carrier": carrier})
        })
        .collect();
    let answer = oracle.request(&json!({"op": "ray_inject", "calls": calls}))?;
    let answers: Vec<InjectAnswer> = serde_json::from_value(answer["calls"].clone())
        .map_err(Error::json("ray_inject answer"))?;
    let plus_as_space = W3cPropagator::new().with_plus_as_space(true);

    let mut out = Vec::new();
    for (i, ((name, parent, carrier), answer)) in cases.iter().zip(&answers).enumerate() {
        let label = |what: &str| format!("python->rust [{name}] {what}");
        let call: RemoteCall<Generate> = match serde_json::from_str(&answer.json) {
            Ok(call) => call,
            Err(e) => {
                checks.fail(&label("RemoteCall from NeMo Lens JSON"), e);
                continue;
            }
        };
        checks.eq(&label("arguments"), &call.args, &args(i));
        checks.eq(&label("carrier present"), &call.carrier.is_some(), carrier);

        let driver = &answer.driver;
        let got = seen(&extract_ray_context(call.carrier.as_ref()));
        if *carrier {
            let Some(d) = &driver.span else {
                checks.fail(&label("driver span"), "python driver has no span");
                continue;
            };
            let span = got.span.as_ref();
            checks.eq(
                &label("extract_ray_context: trace id, parent id, sampled, tracestate, remote"),
                &span.map(|s| {
                    (
                        s.trace_id.as_str(),
                        s.span_id.as_str(),
                        s.sampled,
                        s.trace_flags & 0x03,
                        s.tracestate.as_str(),
                        s.is_remote,
                    )
                }),
                &Some((
                    d.trace_id.as_str(),
                    d.span_id.as_str(),
                    d.sampled,
                    d.trace_flags & 0x03,
                    d.tracestate.as_str(),
                    true,
                )),
            );
            checks.eq(
                &label("the parent's tracestate arrives"),
                &d.tracestate,
                &parent.tracestate_header(),
            );
            let plus: Vec<(String, String)> = parent
                .baggage
                .iter()
                .map(|(k, v)| (k.clone(), v.replace(' ', "+")))
                .collect();
            checks.eq(
                &label("baggage, default decoder (`+` kept)"),
                &got.baggage,
                &plus,
            );
            if parent.baggage.iter().any(|(_, v)| v.contains(' ')) {
                checks.row(rows::PLUS_INCOMING);
            }
            if let Some(carrier) = &call.carrier {
                checks.eq(
                    &label("baggage with plus_as_space = what Python set"),
                    &seen(&plus_as_space.extract(carrier)).baggage,
                    &parent.baggage,
                );
            }
        } else {
            checks.eq(
                &label("no carrier: the caller's (empty) Context"),
                &got,
                &Seen::default(),
            );
        }

        // The worker: lens's traced_remote_call, its span a child of the driver's. As in NeMo
        // Lens (`start_as_current_span(context=ctx)`), the Context current inside is the
        // caller's plus the span: the carrier's baggage is not current there.
        let caller_baggage = seen(&Context::current()).baggage;
        let inside = traced_remote_call_with_tracer(
            tracer,
            "Worker.generate",
            call.carrier.as_ref(),
            async { seen(&Context::current()) },
        )
        .await;
        let Some(worker) = inside.span else {
            checks.fail(&label("worker span"), "no span current in the worker");
            continue;
        };
        checks.eq(
            &label("worker: the caller's baggage is current, not the carrier's (as Python)"),
            &inside.baggage,
            &caller_baggage,
        );
        let driver_id = driver
            .span
            .as_ref()
            .map_or_else(String::new, |s| s.span_id.clone());
        out.push((
            format!("python->rust {name}"),
            driver_id,
            worker.span_id,
            *carrier,
        ));
        checks.contexts += 1;
    }
    Ok(out)
}

#[derive(Deserialize)]
struct InjectAnswer {
    json: String,
    driver: Seen,
}

#[derive(Deserialize)]
struct CallAnswer {
    worker: Seen,
    extracted: Seen,
    args: serde_json::Value,
}

/// lens drivers dispatch `RemoteCall`s; NeMo Lens workers receive them.
fn rust_to_python(
    oracle: &mut PythonProcess,
    checks: &mut Checks,
    tracer: &opentelemetry_sdk::trace::SdkTracer,
) -> Result<Vec<Call>> {
    let cases = drivers();
    let mut payloads = Vec::new();
    let mut driver_contexts = Vec::new();
    for (i, (_, parent, carrier)) in cases.iter().enumerate() {
        let parent_cx = parent.build()?;
        let span = tracer.start_with_context("rust.driver", &parent_cx);
        let cx = parent_cx.with_span(span);
        let call = if *carrier {
            let _guard = cx.clone().attach();
            dispatch_with_context(args(i))
        } else {
            RemoteCall::new(args(i), None)
        };
        payloads.push(serde_json::to_string(&call).map_err(Error::json("RemoteCall"))?);
        driver_contexts.push(cx);
    }
    let answer = oracle.request(&json!({"op": "ray_call", "json": payloads}))?;
    let answers: Vec<CallAnswer> =
        serde_json::from_value(answer["calls"].clone()).map_err(Error::json("ray_call answer"))?;

    let mut out = Vec::new();
    for (i, (((name, parent, carrier), answer), cx)) in
        cases.iter().zip(&answers).zip(&driver_contexts).enumerate()
    {
        cx.span().end();
        let label = |what: &str| format!("rust->python [{name}] {what}");
        let expected_args = serde_json::to_value(args(i)).map_err(Error::json("args"))?;
        checks.eq(&label("arguments"), &answer.args, &expected_args);
        let driver = seen(cx);
        let Some(d) = &driver.span else {
            checks.fail(&label("driver span"), "rust driver has no span");
            continue;
        };
        let Some(w) = &answer.worker.span else {
            checks.fail(&label("worker span"), "python worker has no span");
            continue;
        };
        if *carrier {
            let e = answer.extracted.span.as_ref();
            checks.eq(
                &label("extract_ray_context: trace id, parent id, flags, tracestate, remote"),
                &e.map(|s| {
                    (
                        s.trace_id.as_str(),
                        s.span_id.as_str(),
                        s.trace_flags,
                        s.tracestate.as_str(),
                        s.is_remote,
                    )
                }),
                &Some((
                    d.trace_id.as_str(),
                    d.span_id.as_str(),
                    d.trace_flags & 0x03,
                    parent.tracestate_header().as_str(),
                    true,
                )),
            );
            checks.eq(
                &label("extract_ray_context: baggage = what Rust set"),
                &answer.extracted.baggage,
                &parent.baggage,
            );
            checks.eq(
                &label("traced_remote_call worker continues the trace"),
                &w.trace_id,
                &d.trace_id,
            );
            // NeMo Lens's traced_remote_call makes only the span current
            // (`start_as_current_span(context=ctx)`), not the carrier's baggage: the wrapped
            // function sees none. lens's traced_remote_call does the same (checked on the
            // python->rust side above).
            checks.eq(
                &label("observed: NeMo Lens worker's current baggage is empty"),
                &answer.worker.baggage,
                &Vec::new(),
            );
        } else {
            checks.eq(
                &label("no carrier: extract_ray_context(None) is the caller's Context"),
                &answer.extracted,
                &Seen::default(),
            );
        }
        out.push((
            format!("rust->python {name}"),
            d.span_id.clone(),
            w.span_id.clone(),
            *carrier,
        ));
        checks.contexts += 1;
    }
    Ok(out)
}
