//! `lens w3c-service --listen ADDR`: the service under test of the W3C Trace Context test suite
//! (docs/propagation-rules.md#w3c-test-service), built only from the lens axum layer (inbound) and the lens reqwest middleware
//! (outbound), with nothing special-cased.
//!
//! The harness POSTs a JSON array of `{"url": "...", "arguments": [...]}`; for each element, in
//! order, the service POSTs `url` with the JSON of `arguments` as body, from a new CLIENT span
//! (so a new parent-id per call), and answers 200 once every call has completed.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lens_axum::ServerLayer;
use lens_reqwest::ClientMiddleware;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use reqwest_middleware::ClientWithMiddleware;
use serde_json::Value;

/// The address served when `--listen` is not given. Not 7777: the official harness binds
/// 127.0.0.1:7777 itself, so a service there could never run beside it.
const DEFAULT_LISTEN: &str = "127.0.0.1:7778";

/// `lens w3c-service`: the service under test of the W3C Trace Context test suite.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Runs the service under test of the W3C Trace Context test suite \
(docs/propagation-rules.md#w3c-test-service) on ADDR. Prints `listening on http://ADDR` once ready.

Each POST (any path) carries a JSON array of {\"url\", \"arguments\"}: the service POSTs the \
arguments to each url in order, from a new client span each, then answers 200.",
    after_help = "Exit status: 0 stopped, 1 the address cannot be served, 2 usage error."
)]
pub(crate) struct Args {
    /// The address to listen on (the default leaves 7777 to the harness; port 0 picks a free
    /// port)
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
}

/// Runs `lens w3c-service`.
pub(crate) fn main(args: Args) -> ExitCode {
    let addr = args.listen;
    let Some(runtime) = crate::runtime::runtime() else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(serve(addr)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The service: the lens layer in, the lens middleware out.
pub(crate) fn router(provider: &SdkTracerProvider) -> Router {
    let tracer = provider.tracer("lens-w3c-service");
    let client = reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default(),
    )
    .with(ClientMiddleware::new().with_tracer(tracer.clone()))
    .build();
    Router::new()
        .fallback(move |method: Method, body: Bytes| {
            let client = client.clone();
            async move { handle(&client, &method, &body).await }
        })
        .layer(ServerLayer::new().with_tracer(tracer))
}

async fn serve(addr: SocketAddr) -> std::io::Result<()> {
    // Spans are recorded (the sampler decides as usual) and exported nowhere.
    let provider = SdkTracerProvider::builder().build();
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    println!("listening on http://{local}");
    axum::serve(
        listener,
        router(&provider).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}

/// The harness's request, answered: 200 with a JSON array (one entry per call: its HTTP status,
/// or why it failed) as `application/json`; errors in the request as plain text.
async fn handle(client: &ClientWithMiddleware, method: &Method, body: &[u8]) -> Response {
    if method != Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, "POST only\n").into_response();
    }
    let Ok(Value::Array(calls)) = serde_json::from_slice::<Value>(body) else {
        return (
            StatusCode::BAD_REQUEST,
            "expected a JSON array of {\"url\", \"arguments\"}\n",
        )
            .into_response();
    };
    let mut results = Vec::with_capacity(calls.len());
    for call in &calls {
        let Some(url) = call.get("url").and_then(Value::as_str) else {
            results.push(Value::String("missing url".to_owned()));
            continue;
        };
        let arguments = call
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Array(Vec::new()));
        let payload = serde_json::to_vec(&arguments).unwrap_or_default();
        let outcome = client
            .post(url)
            .header(header::CONTENT_TYPE, "application/json")
            .body(payload)
            .send()
            .await;
        results.push(match outcome {
            Ok(res) => {
                let status = res.status().as_u16();
                // Read the body so the call has completed before the next one starts.
                let _ = res.bytes().await;
                Value::from(status)
            }
            Err(e) => Value::String(e.to_string()),
        });
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Value::Array(results).to_string(),
    )
        .into_response()
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use std::net::SocketAddr;

    use super::DEFAULT_LISTEN;

    /// The port the official W3C harness binds (test.py: `HARNESS_PORT`, default 7777).
    const HARNESS_PORT: u16 = 7777;

    #[test]
    fn default_address_leaves_the_harness_port_free_and_is_documented() {
        let addr: SocketAddr = DEFAULT_LISTEN
            .parse()
            .unwrap_or_else(|e| panic!("DEFAULT_LISTEN {DEFAULT_LISTEN:?} is not an address: {e}"));
        assert!(addr.ip().is_loopback(), "{addr}");
        assert_ne!(
            addr.port(),
            HARNESS_PORT,
            "the harness binds {HARNESS_PORT} itself"
        );
        // The command's own definition: the dispatcher above it is not imported from here.
        let mut command =
            <super::Args as clap::Args>::augment_args(clap::Command::new("w3c-service"));
        let help = command.render_long_help().to_string();
        assert!(
            help.contains(&format!("default: {DEFAULT_LISTEN}")),
            "usage must name the default: {help}"
        );
    }
}
