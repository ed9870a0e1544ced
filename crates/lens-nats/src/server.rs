//! The broker's address as spans record it (`server.address`, `server.port`): one the user
//! configured, or one the cluster advertised.

use async_nats::Client;
use opentelemetry::StringValue;

use crate::interned;

/// The broker's address for `server.address` / `server.port`.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    pub(crate) address: StringValue,
    pub(crate) port: Option<u16>,
}

impl Server {
    /// A server the user configured (`with_server`, a `connect` URL): its address static text
    /// (`interned::configured_address` says why).
    pub(crate) fn configured(address: String, port: Option<u16>) -> Self {
        Server {
            address: interned::configured_address(address),
            port,
        }
    }

    /// A server the cluster advertised: what a peer sent, shared text.
    fn advertised(address: String, port: Option<u16>) -> Self {
        Server {
            address: interned::advertised_address(address),
            port,
        }
    }

    /// The server `client` connected to, as the user named it (the URL or the options given
    /// to `connect`): never the address the server says it listens on (its `INFO` host, which
    /// is `0.0.0.0` for a server listening on every interface). Of a pool of several servers,
    /// the one whose last connection attempt succeeded (a configured one before one the
    /// cluster advertised); `None` when the client cannot say (it is closed).
    pub(crate) async fn connected(client: &Client) -> Option<Server> {
        let pool = client.server_pool().await.ok()?;
        let connected = |s: &&async_nats::Server| s.did_connect && s.failed_attempts == 0;
        let only = match pool.as_slice() {
            [only] => Some(only),
            _ => None,
        };
        let server = pool
            .iter()
            .filter(connected)
            .find(|s| !s.is_discovered)
            .or_else(|| pool.iter().find(connected))
            .or(only)?;
        let host = server.addr.host();
        if host.is_empty() {
            return None;
        }
        let port = Some(server.addr.port());
        Some(if server.is_discovered {
            Server::advertised(host.to_owned(), port)
        } else {
            Server::configured(host.to_owned(), port)
        })
    }
}
