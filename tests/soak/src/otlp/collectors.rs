//! The two collectors on loopback (healthy and black hole), and a port nothing listens on.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;

use crate::error::SoakError;

/// The two collectors on loopback, on a thread and runtime of their own (as another process
/// would be, so that an export waiting on them never waits for the chain's runtime):
/// * healthy: answers every `POST /v1/traces` `200 OK` with an empty body (a valid, empty
///   `ExportTraceServiceResponse`);
/// * black hole: accepts connections, keeps them open and never answers.
pub(super) struct Collectors {
    pub(super) healthy: SocketAddr,
    pub(super) black_hole: SocketAddr,
    pub(super) received: Arc<AtomicU64>,
    pub(super) accepted: Arc<AtomicU64>,
    pub(super) stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(super) thread: Option<std::thread::JoinHandle<()>>,
}

impl Collectors {
    pub(super) fn start() -> Result<Collectors, SoakError> {
        let bind = || -> Result<(std::net::TcpListener, SocketAddr), SoakError> {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.set_nonblocking(true)?;
            let addr = listener.local_addr()?;
            Ok((listener, addr))
        };
        let (healthy_listener, healthy) = bind()?;
        let (black_hole_listener, black_hole) = bind()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let received = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (received2, accepted2) = (Arc::clone(&received), Arc::clone(&accepted));
        let thread = std::thread::Builder::new()
            .name("lens-soak-collectors".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let (Ok(healthy_listener), Ok(black_hole_listener)) = (
                        tokio::net::TcpListener::from_std(healthy_listener),
                        tokio::net::TcpListener::from_std(black_hole_listener),
                    ) else {
                        return;
                    };
                    let router = Router::new().route(
                        "/v1/traces",
                        post(move |_body: Bytes| async move {
                            received2.fetch_add(1, Ordering::Relaxed);
                            ([(CONTENT_TYPE, "application/x-protobuf")], Bytes::new())
                        }),
                    );
                    let healthy = axum::serve(healthy_listener, router);
                    let black_hole = async move {
                        let mut held = Vec::new();
                        while let Ok((stream, _)) = black_hole_listener.accept().await {
                            accepted2.fetch_add(1, Ordering::Relaxed);
                            held.push(stream);
                        }
                    };
                    tokio::select! {
                        _ = healthy => {}
                        () = black_hole => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(Collectors {
            healthy,
            black_hole,
            received,
            accepted,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Collectors {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
pub(super) fn closed_port() -> Result<SocketAddr, SoakError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    drop(listener);
    Ok(addr)
}
