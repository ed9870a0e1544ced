//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export` and
//! `opentelemetry.proto.collector.logs.v1.LogsService/Export`, gzip accepted.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::BufMut as _;
use bytes::{Buf as _, Bytes};
use tonic::Status;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};

use super::channel::Sender;
use super::limits::{MAX_BODY, off_the_workers};
use super::signal::Signal;

/// The gRPC method path.
pub const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// The gRPC method path of logs, served by [`LogsService`].
pub const LOGS_EXPORT_PATH: &str = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

/// The gRPC method path of metrics, accepted and dropped by [`IgnoredMetrics`].
pub const METRICS_EXPORT_PATH: &str =
    "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

/// The OTLP trace service, for a tonic server (see [`serve`]).
#[derive(Clone, Debug)]
pub struct TraceService {
    sender: Sender,
}

impl TraceService {
    /// A service delivering to `sender`.
    pub fn new(sender: Sender) -> Self {
        TraceService { sender }
    }
}

impl tonic::server::NamedService for TraceService {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
}

/// The OTLP logs service, for a tonic server beside [`TraceService`] (see [`serve`]): the
/// log records in [`Batch::logs`](crate::decode::Batch::logs).
#[derive(Clone, Debug)]
pub struct LogsService {
    sender: Sender,
}

impl LogsService {
    /// A service delivering to `sender`.
    pub fn new(sender: Sender) -> Self {
        LogsService { sender }
    }
}

impl tonic::server::NamedService for LogsService {
    const NAME: &'static str = "opentelemetry.proto.collector.logs.v1.LogsService";
}

/// Requests taken as their (decompressed) bytes, decoded by [`Export`] as the HTTP receiver
/// decodes protobuf; undecodable bytes are `INVALID_ARGUMENT` there (prost's own codec says
/// `INTERNAL`, which tells an exporter to retry). Responses are given encoded.
#[derive(Clone, Copy, Debug, Default)]
struct OtlpCodec;

#[derive(Debug)]
struct BytesDecoder;

#[derive(Debug)]
struct ResponseEncoder;

impl Codec for OtlpCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = ResponseEncoder;
    type Decoder = BytesDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ResponseEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        BytesDecoder
    }
}

impl Decoder for BytesDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

impl Encoder for ResponseEncoder {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

/// Decodes an export of `signal` and delivers it.
#[derive(Clone, Debug)]
struct Export(Sender, Signal);

impl tonic::server::UnaryService<Bytes> for Export {
    type Response = Bytes;
    type Future =
        Pin<Box<dyn Future<Output = Result<tonic::Response<Self::Response>, Status>> + Send>>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let (sender, signal) = (self.0.clone(), self.1);
        Box::pin(async move {
            let bytes = request.into_inner();
            let batch = off_the_workers(bytes.len(), move || signal.decode(&bytes, false))
                .await
                .map_err(|e| Status::internal(format!("the decoder failed: {e}")))?
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            let response = signal.response(&batch);
            sender
                .send(batch)
                .await
                .map_err(|_| Status::unavailable("the receiver is shutting down"))?;
            Ok(tonic::Response::new(response))
        })
    }
}

/// Serves `unary` at `path` over OTLP's gRPC framing: gzip both ways, [`MAX_BODY`] as the
/// limit. What [`TraceService`], [`LogsService`] and [`IgnoredMetrics`] each are, with
/// their own method.
fn serve_unary<B, U>(
    request: http::Request<B>,
    path: &'static str,
    unary: U,
) -> Pin<Box<dyn Future<Output = Result<http::Response<tonic::body::Body>, Infallible>> + Send>>
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
    U: tonic::server::UnaryService<Bytes, Response = Bytes> + Send + 'static,
    U::Future: Send,
{
    if request.uri().path() != path {
        return Box::pin(async move {
            Ok(Status::unimplemented(format!("only {path} is served")).into_http())
        });
    }
    Box::pin(async move {
        let mut grpc = tonic::server::Grpc::new(OtlpCodec)
            .accept_compressed(CompressionEncoding::Gzip)
            .send_compressed(CompressionEncoding::Gzip)
            // tonic 0.14 applies it twice (`tonic/src/codec/decode.rs`, `decode_chunk`): to
            // the frame's length header before the body is read (OUT_OF_RANGE), and to the
            // decompressed size, decompressing into a buffer `limit`ed to it
            // (RESOURCE_EXHAUSTED): a gzip bomb costs MAX_BODY bytes at most.
            .max_decoding_message_size(MAX_BODY);
        Ok(grpc.unary(unary, request).await)
    })
}

/// The tower `Service` of a gRPC service of OTLP: `$unary` (made from `self`) at `$path`,
/// through [`serve_unary`].
macro_rules! otlp_service {
    ($service:ty, $path:expr, |$this:ident| $unary:expr) => {
        impl<B> tower_service::Service<http::Request<B>> for $service
        where
            B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
            B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send + 'static,
        {
            type Response = http::Response<tonic::body::Body>;
            type Error = Infallible;
            type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

            fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
                Poll::Ready(Ok(()))
            }

            fn call(&mut self, request: http::Request<B>) -> Self::Future {
                let $this = self;
                serve_unary(request, $path, $unary)
            }
        }
    };
}

otlp_service!(TraceService, EXPORT_PATH, |this| Export(
    this.sender.clone(),
    Signal::Traces
));

otlp_service!(LogsService, LOGS_EXPORT_PATH, |this| Export(
    this.sender.clone(),
    Signal::Logs
));

/// The OTLP metrics service, answering every export with an empty success and dropping
/// what it carries (`lens watch` shows traces): for a tonic server beside
/// [`TraceService`] (see [`serve`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct IgnoredMetrics;

impl tonic::server::NamedService for IgnoredMetrics {
    const NAME: &'static str = "opentelemetry.proto.collector.metrics.v1.MetricsService";
}

#[derive(Clone, Copy, Debug)]
struct Drop;

impl tonic::server::UnaryService<Bytes> for Drop {
    // An empty `ExportMetricsServiceResponse`: an empty message is zero bytes.
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Self::Response>, Status>>;

    fn call(&mut self, _request: tonic::Request<Bytes>) -> Self::Future {
        std::future::ready(Ok(tonic::Response::new(Bytes::new())))
    }
}

otlp_service!(IgnoredMetrics, METRICS_EXPORT_PATH, |_this| Drop);

/// Serves OTLP/gRPC on `listener` until `shutdown` completes (with `TCP_NODELAY` on every
/// connection: with Nagle's algorithm, small replies wait for delayed ACKs, tens of
/// milliseconds an export).
pub async fn serve(
    listener: tokio::net::TcpListener,
    sender: Sender,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    tonic::transport::Server::builder()
        .add_service(TraceService::new(sender.clone()))
        .add_service(LogsService::new(sender))
        .add_service(IgnoredMetrics)
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
}
