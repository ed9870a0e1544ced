//! The Python peer calls the Rust server, one call per case.

use std::net::SocketAddr;

use lens_core::W3cPropagator;
use lens_tonic::ServerLayer;
use opentelemetry_sdk::trace::SdkTracer;
use serde_json::{Value, json};
use tonic::transport::Server;

use super::case::{Case, Direction, Target, code_name};
use super::handler_checks::{Observed, check_handler, label};
use super::rust_to_python::CallAnswer;
use super::server::Relay;
use super::wire::{SERVING_B64, SHUTDOWN_TIMEOUT};
use crate::check::Checks;
use crate::describe::Seen;
use crate::error::{Error, Result};
use crate::python::PythonProcess;

/// The Python peer calls the Rust server, one call per case.
pub(super) async fn python_to_rust(
    peer: &mut PythonProcess,
    tracer: &SdkTracer,
    cases: &[Case],
    checks: &mut Checks,
) -> Result<Vec<Observed>> {
    // The Rust server receives from Python senders, which encode a space in baggage as `+`:
    // lens's opt-in for exactly that (docs/propagation-rules.md#baggage, `plus_as_space`).
    let layer = ServerLayer::new()
        .with_tracer(tracer.clone())
        .with_propagator(W3cPropagator::new().with_plus_as_space(true));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(Error::io("binding the rust gRPC server"))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(Error::io("rust gRPC server address"))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // Serves "" (the whole server) as SERVING.
    let (_reporter, health) = tonic_health::server::health_reporter();
    let server = tokio::spawn(async move {
        Server::builder()
            .layer(layer)
            .add_service(Relay)
            .add_service(health)
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                async {
                    let _ignored = stopped.await;
                },
            )
            .await
    });

    let mut observed = Vec::new();
    for case in cases {
        let label = |what: &str| label(Direction::PythonToRust, case, what);
        let mut request = json!({
            "op": "call",
            "target": addr.to_string(),
            "method": case.method(),
            "streaming": case.streaming,
            "parent": case.parent,
            "request": {"items": case.items, "code": case.code as i32},
        });
        if case.target == Target::Health {
            // An empty HealthCheckRequest (service "") is zero protobuf bytes.
            request["raw_b64"] = json!("");
        }
        let answer = tokio::task::block_in_place(|| peer.request(&request))?;
        let answer: CallAnswer =
            serde_json::from_value(answer).map_err(Error::json("grpc_peer call answer"))?;
        checks.eq(
            &label("python client: final status"),
            &answer.code.as_str(),
            &code_name(case.code),
        );
        let client = answer.client.span.as_ref();
        let traceparent =
            client.map(|s| format!("00-{}-{}-{:02x}", s.trace_id, s.span_id, case.flags()));
        checks.eq(
            &label("inject_context wrote the python CLIENT span into the metadata"),
            &answer.metadata.get("traceparent").and_then(Value::as_str),
            &traceparent.as_deref(),
        );
        let handler = match case.target {
            Target::Relay => {
                let seen: Vec<Seen> = answer
                    .answers
                    .iter()
                    .filter_map(|a| serde_json::from_value(a["rust_server"].clone()).ok())
                    .collect();
                check_handler(checks, Direction::PythonToRust, case, &seen)
            }
            Target::Health => {
                // tonic-health's handler says nothing of its Context: the spans show the hop.
                checks.eq(
                    &label("tonic-health answers SERVING"),
                    &answer.answers,
                    &vec![json!({"raw_b64": SERVING_B64})],
                );
                None
            }
        };
        observed.push(Observed {
            caller: None,
            handler,
        });
    }

    let _ignored = stop.send(());
    match tokio::time::timeout(SHUTDOWN_TIMEOUT, server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => checks.fail("rust gRPC server", e),
        Ok(Err(e)) => checks.fail("rust gRPC server task", e),
        Err(_) => checks.fail("rust gRPC server", "did not shut down in time"),
    }
    Ok(observed)
}
