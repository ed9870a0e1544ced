//! lens-axum: a SERVER span for every request of an axum app.
use std::net::SocketAddr;

use axum::{Router, routing::get};
use lens_axum::{RequestContext, ServerLayer};

async fn hello(cx: RequestContext) -> String {
    format!("trace {:?}", cx.trace_id()) // the SERVER span is also Context::current()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let app = Router::new()
        .route("/hello", get(hello))
        .layer(ServerLayer::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}
