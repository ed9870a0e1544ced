//! [`Broker`]: where a wrapper's `server.address` / `server.port` come from, read once.

use async_nats::Client;

use crate::server::Server;

/// Where one wrapper's `server.address` / `server.port` come from: what the user set, else
/// the server its client connected to, read once (one round trip to the client's connection
/// task) before the wrapper's first span.
#[derive(Debug)]
pub(crate) struct Broker {
    client: Client,
    server: std::sync::OnceLock<Option<Server>>,
}

impl Broker {
    pub(crate) fn new(client: &Client, server: Option<Server>) -> Self {
        let broker = Broker {
            client: client.clone(),
            server: std::sync::OnceLock::new(),
        };
        if let Some(server) = server {
            let _ = broker.server.set(Some(server));
        }
        broker
    }

    /// The server, once known (`None` before [`Broker::resolve`], or when the client could
    /// not say).
    pub(crate) fn get(&self) -> Option<&Server> {
        self.server.get().and_then(Option::as_ref)
    }

    pub(crate) fn is_resolved(&self) -> bool {
        self.server.get().is_some()
    }

    /// Reads the server from the client the first time (a race reads it twice, harmlessly).
    /// Once it is known, nothing is awaited: the read of the client's server pool is a future
    /// of its own, boxed, made only before the first span, so that it takes no room in every
    /// traced call's future (which each layer of the caller's code moves).
    #[inline]
    pub(crate) async fn resolve(&self) -> Option<&Server> {
        if !self.is_resolved() {
            self.read_server().await;
        }
        self.get()
    }

    /// The first read of the server (once per wrapper: one allocation, not one per call).
    #[cold]
    fn read_server(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + Sync + '_>> {
        Box::pin(async move {
            let server = Server::connected(&self.client).await;
            let _ = self.server.set(server);
        })
    }
}
