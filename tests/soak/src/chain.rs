//! The chain under load: client → front (axum + [`ServerLayer`]) → reqwest + [`ClientMiddleware`] →
//! back (axum + [`ServerLayer`]), on loopback, every request with its own trace id and baggage.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use lens_axum::{RequestContext, ServerLayer};
use lens_core::LensContextExt;
use lens_reqwest::ClientMiddleware;
use opentelemetry::Context;
use opentelemetry::trace::{TraceId, Tracer};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::task::JoinHandle;

use crate::error::SoakError;

/// Name of the front SERVER span.
pub const FRONT_SPAN: &str = "GET /front";
/// Name of the back SERVER span.
pub const BACK_SPAN: &str = "GET /back";

/// Baggage key holding the request index.
const REQ_KEY: &str = "soak.req";
/// A baggage member whose value is percent-encoded on the wire (`a b`).
const NOTE: &str = "a b";

/// One request of a run: its trace id is `nonce` (8 bytes) then `index` (8 bytes), its parent
/// span id `index + 1`, its baggage `soak.req=<index>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestId {
    /// The run's nonce: the high half of every trace id of the run.
    pub nonce: u64,
    /// The request's number within the run.
    pub index: u64,
}

impl RequestId {
    /// The request's trace id.
    pub fn trace_id(&self) -> TraceId {
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&self.nonce.to_be_bytes());
        bytes[8..].copy_from_slice(&self.index.to_be_bytes());
        TraceId::from_bytes(bytes)
    }

    /// The `traceparent` the client sends (sampled).
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace_id(), self.parent_span_id())
    }

    /// The `baggage` the client sends.
    pub fn baggage(&self) -> String {
        format!(
            "{REQ_KEY}={},soak.run={:016x},note=a%20b",
            self.index, self.nonce
        )
    }

    /// What each hop must report for this request: its trace id, the request's baggage and the
    /// current Context's trace id inside the handler.
    fn expected_hop(&self) -> String {
        let tid = self.trace_id();
        format!("{tid} {} {NOTE} {tid}", self.index)
    }

    /// The body the front answers when neither hop mixed this request up with another.
    pub fn expected_body(&self) -> String {
        let hop = self.expected_hop();
        format!("{hop}|{hop}")
    }
}

/// What one hop saw: the request's trace id, baggage, and the current Context's trace id.
fn report_hop(cx: &RequestContext) -> String {
    let tid = cx
        .trace_id()
        .map_or_else(|| "-".to_owned(), |t| t.to_string());
    let req = cx
        .context()
        .baggage_value(REQ_KEY)
        .unwrap_or_else(|| "-".to_owned());
    let note = cx
        .context()
        .baggage_value("note")
        .unwrap_or_else(|| "-".to_owned());
    let current =
        Context::map_current(|c| c.trace_id()).map_or_else(|| "-".to_owned(), |t| t.to_string());
    format!("{tid} {req} {note} {current}")
}

struct Front {
    client: ClientWithMiddleware,
    back_url: String,
}

async fn front(
    State(state): State<Arc<Front>>,
    cx: RequestContext,
) -> Result<String, (StatusCode, String)> {
    let here = report_hop(&cx);
    let response = state
        .client
        .get(&state.back_url)
        .send()
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?;
    if !response.status().is_success() {
        return Err((StatusCode::BAD_GATEWAY, response.status().to_string()));
    }
    let back = response
        .text()
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, e.to_string()))?;
    Ok(format!("{here}|{back}"))
}

async fn back(cx: RequestContext) -> String {
    report_hop(&cx)
}

/// The two servers of a chain, serving until dropped.
#[derive(Debug)]
pub struct Chain {
    front: SocketAddr,
    back: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl Chain {
    /// Starts the back and front servers on 127.0.0.1 (port 0), both layers and the front's
    /// client middleware creating spans with `tracer`. Call from within a Tokio runtime.
    pub async fn start<T>(tracer: T) -> Result<Chain, SoakError>
    where
        T: Tracer + Clone + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        let layer = ServerLayer::new().with_tracer(tracer.clone());
        let back_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let back_addr = back_listener.local_addr()?;
        let back_router = Router::new().route("/back", get(back)).layer(layer.clone());
        let back_task = tokio::spawn(async move {
            let _ = axum::serve(back_listener, back_router).await;
        });

        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| SoakError::Client(e.to_string()))?;
        let client = ClientBuilder::new(client)
            .with(ClientMiddleware::new().with_tracer(tracer))
            .build();
        let state = Arc::new(Front {
            client,
            back_url: format!("http://{back_addr}/back"),
        });
        let front_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let front_addr = front_listener.local_addr()?;
        let front_router = Router::new()
            .route("/front", get(front))
            .with_state(state)
            .layer(layer);
        let front_task = tokio::spawn(async move {
            let _ = axum::serve(front_listener, front_router).await;
        });
        Ok(Chain {
            front: front_addr,
            back: back_addr,
            tasks: vec![back_task, front_task],
        })
    }

    /// The front server's address.
    pub fn front_addr(&self) -> SocketAddr {
        self.front
    }

    /// The back server's address.
    pub fn back_addr(&self) -> SocketAddr {
        self.back
    }

    /// The URL the client calls.
    pub fn url(&self) -> String {
        format!("http://{}/front", self.front)
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// How one request went.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Every hop saw this request's own trace id and baggage.
    Ok,
    /// The request failed (transport error or a status other than 200).
    Failed(String),
    /// A hop saw another request's ids, or none: the body, then what was expected.
    MixedUp {
        /// What the front answered.
        body: String,
        /// What it should have answered.
        expected: String,
    },
}

/// Sends request `id` to `url` (a chain's [`Chain::url`]) and checks what every hop saw.
pub async fn send(client: &reqwest::Client, url: &str, id: RequestId) -> Outcome {
    let response = client
        .get(url)
        .header("traceparent", id.traceparent())
        .header("baggage", id.baggage())
        .send()
        .await;
    let response = match response {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let status = response.status();
    let body = match response.text().await {
        Ok(body) => body,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    if status != reqwest::StatusCode::OK {
        return Outcome::Failed(format!("{status}: {body}"));
    }
    let expected = id.expected_body();
    if body == expected {
        Outcome::Ok
    } else {
        Outcome::MixedUp { body, expected }
    }
}
