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

use super::channel::Sender;
use super::limits::{MAX_BODY, off_the_workers};
use super::signal::Signal;

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
    let batch =
        match off_the_workers(bytes.len(), move || unpack(signal, &bytes, gzip, format)).await {
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
