//! An axum router served on loopback, and a JSON POST to a service.

use std::net::SocketAddr;

use axum::Router;
use serde_json::Value;

use super::timeouts::SHUTDOWN_TIMEOUT;
use crate::check::Checks;
use crate::error::{Error, Result};

/// POSTs `body` to `url` as JSON; checks (as `check`) that the answer is a success; its JSON.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    checks: &mut Checks,
    check: &str,
) -> Result<Value> {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(Error::http(format!("POST {url}")))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(Error::http("reading the answer"))?;
    checks.check(check, status.is_success(), || {
        format!("{status}: {}", String::from_utf8_lossy(&body))
    });
    serde_json::from_slice(&body).map_err(Error::json(format!("the answer of {url}")))
}

/// An axum router served on 127.0.0.1 (port 0) until [`Served::stop`].
pub(crate) struct Served {
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    pub(super) stop: tokio::sync::oneshot::Sender<()>,
    pub(super) task: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves `router` (with the peer address as connect info, for trust policies).
pub(crate) async fn serve(router: Router) -> Result<Served> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(Error::io("binding the rust service"))?;
    let addr = listener
        .local_addr()
        .map_err(Error::io("rust service address"))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async {
            let _ignored = stopped.await;
        })
        .await
    });
    Ok(Served {
        url: format!("http://{addr}"),
        stop,
        task,
    })
}

impl Served {
    /// Stops serving once the open connections finish (so every SERVER span has ended).
    pub(crate) async fn stop(self, checks: &mut Checks) {
        let _ignored = self.stop.send(());
        match tokio::time::timeout(SHUTDOWN_TIMEOUT, self.task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => checks.fail("rust service", e),
            Ok(Err(e)) => checks.fail("rust service task", e),
            Err(_) => checks.fail("rust service", "did not shut down in time"),
        }
    }
}
