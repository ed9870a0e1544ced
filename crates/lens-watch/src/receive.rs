//! The OTLP receivers (feature `server`): OTLP/gRPC `TraceService/Export` and
//! `LogsService/Export`, OTLP/HTTP `POST /v1/traces` and `POST /v1/logs`, as a Collector
//! receives them. Each decodes a request into a [`Batch`] (of spans, or of log records in
//! [`Batch::logs`]) and sends it on a bounded channel (a full channel holds the sender back, so
//! memory stays bounded); whoever holds the other end assembles. Logs and traces go through
//! the same code: the same limits, the same answers to bad input.
//!
//! Metrics are accepted and dropped (OTLP/gRPC `MetricsService/Export`, OTLP/HTTP
//! `POST /v1/metrics`: an empty success): an SDK that exports its metrics to the same endpoint
//! as its spans, as `OTEL_EXPORTER_OTLP_ENDPOINT` makes it, logs no error for them.
//!
//! Bad input gets an answer, never a crash: a body over [`MAX_BODY`] bytes, or one that
//! decompresses past it, is refused before it is read or decompressed whole (HTTP 413; gRPC
//! `OUT_OF_RANGE` for a message over the limit as sent, `RESOURCE_EXHAUSTED` for one that
//! decompresses past it, both from tonic's `max_decoding_message_size`); bytes that do not
//! decode get HTTP 400 (gRPC `INVALID_ARGUMENT`) with a message; spans (log records) with
//! invalid ids are counted in the reply's `partial_success` and the rest is kept.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use lens_watch::receive;
//! let (sender, mut batches) = tokio::sync::mpsc::channel(64);
//! let grpc = tokio::net::TcpListener::bind("127.0.0.1:4317").await?;
//! let http = tokio::net::TcpListener::bind("127.0.0.1:4318").await?;
//! tokio::spawn(receive::grpc::serve(grpc, sender.clone(), std::future::pending()));
//! tokio::spawn(receive::http::serve(http, receive::http::router(sender), std::future::pending()));
//! while let Some(batch) = batches.recv().await {
//!     println!("{} spans, {} rejected", batch.spans.len(), batch.rejected);
//! }
//! # Ok(()) }
//! ```

use crate::decode::Batch;

/// The largest request body accepted, compressed or not: 20 MiB.
pub const MAX_BODY: usize = 20 * 1024 * 1024;

/// Where receivers deliver decoded requests.
pub type Sender = tokio::sync::mpsc::Sender<Batch>;

/// Bodies larger than this are decompressed and decoded on a blocking thread.
const BLOCKING_THRESHOLD: usize = 64 * 1024;

/// `work`, on a blocking thread when it takes a body of `len` bytes over [`BLOCKING_THRESHOLD`]
/// (decompressing and decoding a large body takes milliseconds: off the async workers, which
/// also measurably shortens what a sender waits for: `cargo xtask bench watch`), else here.
async fn off_the_workers<T: Send + 'static>(
    len: usize,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    if len > BLOCKING_THRESHOLD {
        tokio::task::spawn_blocking(work).await
    } else {
        Ok(work())
    }
}

/// What a request exports: one receiver serves each, by the same code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signal {
    Traces,
    Logs,
}

impl Signal {
    /// Decodes a request body, protobuf or JSON.
    fn decode(self, bytes: &[u8], json: bool) -> Result<Batch, crate::decode::DecodeError> {
        use crate::decode::{decode_json, decode_logs_json, decode_logs_protobuf, decode_protobuf};
        match (self, json) {
            (Signal::Traces, false) => decode_protobuf(bytes),
            (Signal::Traces, true) => decode_json(bytes),
            (Signal::Logs, false) => decode_logs_protobuf(bytes),
            (Signal::Logs, true) => decode_logs_json(bytes),
        }
    }

    /// What was rejected, and the JSON name of its count in a partial success.
    fn rejected(self, batch: &Batch) -> (u64, &'static str) {
        match self {
            Signal::Traces => (batch.rejected, "rejectedSpans"),
            Signal::Logs => (batch.rejected_logs, "rejectedLogRecords"),
        }
    }

    /// The export response for `batch` as protobuf: a partial success when something was
    /// rejected.
    fn response(self, batch: &Batch) -> bytes::Bytes {
        use opentelemetry_proto::tonic::collector::{logs::v1 as logs, trace::v1 as trace};
        use prost::Message as _;
        let (rejected, _) = self.rejected(batch);
        let rejected = (rejected > 0).then(|| {
            (
                i64::try_from(rejected).unwrap_or(i64::MAX),
                batch.error.clone().unwrap_or_default(),
            )
        });
        match self {
            Signal::Traces => trace::ExportTraceServiceResponse {
                partial_success: rejected.map(|(rejected_spans, error_message)| {
                    trace::ExportTracePartialSuccess {
                        rejected_spans,
                        error_message,
                    }
                }),
            }
            .encode_to_vec(),
            Signal::Logs => logs::ExportLogsServiceResponse {
                partial_success: rejected.map(|(rejected_log_records, error_message)| {
                    logs::ExportLogsPartialSuccess {
                        rejected_log_records,
                        error_message,
                    }
                }),
            }
            .encode_to_vec(),
        }
        .into()
    }

    /// The export response for `batch` as OTLP/JSON.
    fn json_response(self, batch: &Batch) -> Vec<u8> {
        match self.rejected(batch) {
            (0, _) => b"{}".to_vec(),
            (rejected, name) => serde_json::json!({ "partialSuccess": {
                name: rejected.to_string(),
                "errorMessage": batch.error.clone().unwrap_or_default(),
            } })
            .to_string()
            .into_bytes(),
        }
    }
}

pub mod grpc {
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

    use super::{MAX_BODY, Sender, Signal, off_the_workers};

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
                type Future =
                    Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

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
}

pub mod http {
    //! OTLP/HTTP: `POST /v1/traces` and `POST /v1/logs`, `application/x-protobuf` or
    //! `application/json`, optionally `Content-Encoding: gzip`; the reply an
    //! `ExportTraceServiceResponse` (`ExportLogsServiceResponse`) in the request's content type,
    //! errors a `google.rpc.Status` likewise.

    use std::future::Future;
    use std::io::Read as _;

    use axum::body::Body;
    use axum::extract::{DefaultBodyLimit, State};
    use axum::response::{IntoResponse, Response};
    use axum::routing::post;
    use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
    use http::{HeaderMap, StatusCode};
    use http_body_util::BodyExt as _;
    use prost::Message as _;
    use serde_json::json;
    use tonic::Code;

    use super::{MAX_BODY, Sender, Signal, off_the_workers};

    /// The OTLP/HTTP traces path.
    pub const TRACES_PATH: &str = "/v1/traces";

    /// The OTLP/HTTP logs path.
    pub const LOGS_PATH: &str = "/v1/logs";

    /// The OTLP/HTTP metrics path: metrics are accepted and dropped.
    pub const METRICS_PATH: &str = "/v1/metrics";

    /// The content types of OTLP/HTTP.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Format {
        Protobuf,
        Json,
    }

    impl Format {
        fn content_type(self) -> &'static str {
            match self {
                Format::Protobuf => "application/x-protobuf",
                Format::Json => "application/json",
            }
        }
    }

    /// `google.rpc.Status`, the body of an OTLP/HTTP error.
    #[derive(Clone, PartialEq, prost::Message)]
    struct RpcStatus {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
    }

    /// An OTLP/HTTP error: `status`, and a `google.rpc.Status` with the gRPC `code` in the
    /// request's format.
    fn error(status: StatusCode, format: Format, code: Code, message: String) -> Response {
        let code = code as i32;
        let body = match format {
            Format::Protobuf => RpcStatus { code, message }.encode_to_vec(),
            Format::Json => json!({ "code": code, "message": message })
                .to_string()
                .into_bytes(),
        };
        (status, [(CONTENT_TYPE, format.content_type())], body).into_response()
    }

    /// The router for `POST /v1/traces`, `POST /v1/logs` (and `POST /v1/metrics`, accepted and
    /// dropped), to serve alone ([`serve`]) or merged with others.
    pub fn router(sender: Sender) -> axum::Router {
        axum::Router::new()
            .route(
                TRACES_PATH,
                post(|state, headers, body| export(Signal::Traces, state, headers, body)),
            )
            .route(
                LOGS_PATH,
                post(|state, headers, body| export(Signal::Logs, state, headers, body)),
            )
            .route(METRICS_PATH, post(ignore_metrics))
            // The limit is applied here, with the right answer (413 before reading whole).
            .layer(DefaultBodyLimit::disable())
            .with_state(sender)
    }

    /// Serves `router` on `listener` until `shutdown` completes (with `TCP_NODELAY` on every
    /// connection, as [`super::grpc::serve`]).
    pub async fn serve(
        listener: tokio::net::TcpListener,
        router: axum::Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        use axum::serve::ListenerExt as _;
        let listener = listener.tap_io(|tcp| {
            // Best effort: without it the connection still works, only slower.
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
    }

    fn media_type(headers: &HeaderMap) -> Option<Format> {
        let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
        let essence = value.split(';').next()?.trim();
        if essence.eq_ignore_ascii_case("application/x-protobuf")
            || essence.eq_ignore_ascii_case("application/protobuf")
        {
            Some(Format::Protobuf)
        } else if essence.eq_ignore_ascii_case("application/json") {
            Some(Format::Json)
        } else {
            None
        }
    }

    fn too_large(format: Format, what: &str) -> Response {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format,
            Code::ResourceExhausted,
            format!("{what} is over the limit of {MAX_BODY} bytes"),
        )
    }

    /// Why a body could not be unpacked.
    #[derive(Debug)]
    enum Unpack {
        /// It decompresses past [`MAX_BODY`].
        TooLarge,
        /// The gzip stream is broken.
        Gzip(std::io::Error),
        /// The OTLP message does not decode.
        Decode(crate::decode::DecodeError),
    }

    impl Unpack {
        /// The answer for it, in the request's format.
        fn answer(self, format: Format) -> Response {
            match self {
                Unpack::TooLarge => too_large(format, "the decompressed request body"),
                Unpack::Gzip(e) => error(
                    StatusCode::BAD_REQUEST,
                    format,
                    Code::InvalidArgument,
                    format!("the gzip body does not decompress: {e}"),
                ),
                Unpack::Decode(e) => error(
                    StatusCode::BAD_REQUEST,
                    format,
                    Code::InvalidArgument,
                    e.to_string(),
                ),
            }
        }
    }

    /// The body, gunzipped when `gzip` (at most [`MAX_BODY`] bytes out), decoded as `format`.
    fn unpack(
        signal: Signal,
        bytes: &[u8],
        gzip: bool,
        format: Format,
    ) -> Result<crate::decode::Batch, Unpack> {
        let unzipped;
        let bytes = if gzip {
            let mut out = Vec::new();
            let decoder = flate2::read::GzDecoder::new(bytes);
            match decoder.take(MAX_BODY as u64 + 1).read_to_end(&mut out) {
                Ok(n) if n > MAX_BODY => return Err(Unpack::TooLarge),
                Ok(_) => {
                    unzipped = out;
                    &unzipped[..]
                }
                Err(e) => return Err(Unpack::Gzip(e)),
            }
        } else {
            bytes
        };
        signal
            .decode(bytes, format == Format::Json)
            .map_err(Unpack::Decode)
    }

    /// `POST /v1/metrics`: the body read (up to [`MAX_BODY`]) and dropped; an empty
    /// `ExportMetricsServiceResponse` in the request's content type.
    async fn ignore_metrics(headers: HeaderMap, body: Body) -> Response {
        let format = media_type(&headers).unwrap_or(Format::Protobuf);
        if let Err(e) = http_body_util::Limited::new(body, MAX_BODY).collect().await {
            if e.is::<http_body_util::LengthLimitError>() {
                return too_large(format, "the request body");
            }
            return error(
                StatusCode::BAD_REQUEST,
                format,
                Code::InvalidArgument,
                format!("cannot read the request body: {e}"),
            );
        }
        let body: &'static [u8] = match format {
            Format::Protobuf => b"",
            Format::Json => b"{}",
        };
        (
            StatusCode::OK,
            [(CONTENT_TYPE, format.content_type())],
            body,
        )
            .into_response()
    }

    async fn export(
        signal: Signal,
        State(sender): State<Sender>,
        headers: HeaderMap,
        body: Body,
    ) -> Response {
        let Some(format) = media_type(&headers) else {
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Format::Json,
                Code::InvalidArgument,
                "Content-Type must be application/x-protobuf or application/json".to_owned(),
            );
        };
        let gzip = match headers.get(CONTENT_ENCODING).map(|v| v.to_str()) {
            None => false,
            Some(Ok(v)) if v.trim().eq_ignore_ascii_case("identity") => false,
            Some(Ok(v)) if v.trim().eq_ignore_ascii_case("gzip") => true,
            Some(_) => {
                return error(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format,
                    Code::InvalidArgument,
                    "Content-Encoding must be gzip or identity".to_owned(),
                );
            }
        };
        let declared = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY as u64) {
            return too_large(format, "the request body");
        }
        let bytes = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return too_large(format, "the request body");
            }
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format,
                    Code::InvalidArgument,
                    format!("cannot read the request body: {e}"),
                );
            }
        };
        let batch = match off_the_workers(bytes.len(), move || unpack(signal, &bytes, gzip, format))
            .await
        {
            Ok(Ok(batch)) => batch,
            Ok(Err(why)) => return why.answer(format),
            Err(e) => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format,
                    Code::Internal,
                    format!("the decoder failed: {e}"),
                );
            }
        };
        let body = match format {
            Format::Protobuf => signal.response(&batch).to_vec(),
            Format::Json => signal.json_response(&batch),
        };
        if sender.send(batch).await.is_err() {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                format,
                Code::Unavailable,
                "the receiver is shutting down".to_owned(),
            );
        }
        (
            StatusCode::OK,
            [(CONTENT_TYPE, format.content_type())],
            body,
        )
            .into_response()
    }
}
