//! The HTTP side every demo service shares: a traced reqwest client, a JSON POST through it, and
//! an axum server on 127.0.0.1.

use std::net::SocketAddr;

use axum::Router;
use axum::serve::ListenerExt as _;
use lens_reqwest::{ClientMiddleware, FilterDecision};
use opentelemetry::Context;
use reqwest_middleware::ClientWithMiddleware;
use serde::{Deserialize, Serialize};

use super::collect::Service;
use super::error::DemoError;

/// `service`'s reqwest client: lens-reqwest's spans and metrics, `filter` on every request.
pub(super) fn traced_client(service: &Service, filter: FilterDecision) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            ClientMiddleware::new()
                .with_tracer(service.tracer("lens-reqwest"))
                .with_meter(service.meter("lens-reqwest"))
                .with_filter(move |_: &reqwest::Request| filter),
        )
        .build()
}

pub(super) async fn post_json<B: Serialize, R: for<'de> Deserialize<'de>>(
    client: &ClientWithMiddleware,
    service: &'static str,
    url: &str,
    body: &B,
    cx: Context,
) -> Result<R, DemoError> {
    let http = |message: String| DemoError::Http { service, message };
    let response = client
        .post(url)
        .json(body)
        .with_extension(cx)
        .send()
        .await
        .map_err(|e| http(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        return Err(http(format!("{status}: {text}")));
    }
    response.json().await.map_err(|e| http(e.to_string()))
}

pub(super) async fn serve_http(app: Router) -> Result<SocketAddr, DemoError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    Ok(addr)
}
