//! The probe's request, by target: an HTTP request, a gRPC unary call (the standard health check
//! by default) or a NATS message, each carrying the probe's context, and the probe's own span
//! for it (the client side of the first hop, with the attributes the doctor pairs hops by).

use std::str::FromStr as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf as _, BufMut as _};
use lens_watch::model::{KeyValue, Span, SpanKind, Value};
use lens_watch::probe::Sent;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// The method a `grpc://HOST:PORT` target calls when it names none.
pub(super) const HEALTH_CHECK: &str = "grpc.health.v1.Health/Check";

/// Where the probe's request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// An `http://` URL.
    Http(String),
    /// `grpc://HOST:PORT[/pkg.Service/Method]`.
    Grpc {
        /// `HOST:PORT`.
        authority: String,
        /// `pkg.Service/Method`.
        method: String,
    },
    /// `nats://HOST:PORT/SUBJECT`.
    Nats {
        /// `HOST:PORT`.
        authority: String,
        /// The subject.
        subject: String,
    },
}

impl Target {
    /// `http://...`, `grpc://HOST:PORT[/pkg.Service/Method]` or `nats://HOST:PORT/SUBJECT`.
    pub(crate) fn parse(value: &str) -> Result<Target, String> {
        let Some((scheme, rest)) = value.split_once("://") else {
            return Err(EXPECTED.to_owned());
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() || authority.parse::<http::uri::Authority>().is_err() {
            return Err(format!("no host in '{value}': {EXPECTED}"));
        }
        match scheme {
            "http" => {
                value
                    .parse::<http::Uri>()
                    .map_err(|e| format!("not a URL ({e}): {EXPECTED}"))?;
                Ok(Target::Http(value.to_owned()))
            }
            "https" => Err(
                "https is not supported: lens is built without TLS; probe the service over plain \
HTTP (inside the cluster, or through a port-forward)"
                    .to_owned(),
            ),
            "grpc" => {
                let method = if path.is_empty() { HEALTH_CHECK } else { path };
                match method.split_once('/') {
                    Some((service, name))
                        if !service.is_empty() && !name.is_empty() && !name.contains('/') =>
                    {
                        Ok(Target::Grpc {
                            authority: authority.to_owned(),
                            method: method.to_owned(),
                        })
                    }
                    _ => Err(format!(
                        "'{method}' is not a gRPC method: expected grpc://HOST:PORT/pkg.Service/Method"
                    )),
                }
            }
            "nats" if !path.is_empty() && !path.contains(['/', ' ']) => Ok(Target::Nats {
                authority: authority.to_owned(),
                subject: path.to_owned(),
            }),
            "nats" => Err("expected nats://HOST:PORT/SUBJECT (a subject to publish to)".to_owned()),
            _ => Err(format!("no '{scheme}://' targets: {EXPECTED}")),
        }
    }
}

const EXPECTED: &str = "expected http://HOST[:PORT]/PATH, grpc://HOST:PORT[/pkg.Service/Method] or nats://HOST:PORT/SUBJECT";

/// What went out: when, what answered, and the probe's own span for it.
pub(super) struct Outcome {
    /// What the target answered, in words (`200 OK`, `gRPC OK`, `published`).
    pub(super) answer: String,
    /// How long the request took.
    pub(super) took: Duration,
    /// The probe's own span.
    pub(super) span: Span,
}

/// The request, as the user gave it.
pub(super) struct Request<'a> {
    pub(super) target: &'a Target,
    pub(super) method: Option<&'a reqwest::Method>,
    pub(super) headers: &'a [(String, String)],
    pub(super) body: Option<Vec<u8>>,
    pub(super) timeout: Duration,
}

impl Request<'_> {
    /// The target in words, for messages: `POST http://...`, `gRPC grpc.health.v1.Health/Check
    /// on HOST:PORT`, `NATS publish to SUBJECT on HOST:PORT`.
    pub(super) fn describe(&self) -> String {
        match self.target {
            Target::Http(url) => format!("{} {url}", self.http_method()),
            Target::Grpc { authority, method } => format!("gRPC {method} on {authority}"),
            Target::Nats { authority, subject } => {
                format!("NATS publish to {subject} on {authority}")
            }
        }
    }

    fn http_method(&self) -> reqwest::Method {
        match (self.method, &self.body) {
            (Some(method), _) => method.clone(),
            (None, Some(_)) => reqwest::Method::POST,
            (None, None) => reqwest::Method::GET,
        }
    }

    /// The trace headers the probe sends, then the user's.
    fn headers(&self, sent: &Sent, baggage: &str) -> Vec<(String, String)> {
        let mut all = vec![
            ("traceparent".to_owned(), sent.traceparent()),
            ("tracestate".to_owned(), sent.trace_state.clone()),
            ("baggage".to_owned(), baggage.to_owned()),
        ];
        all.extend(self.headers.iter().cloned());
        all
    }

    /// Sends the request with `sent`'s context (and `baggage` as the `baggage` header); an
    /// error says why it could not be sent or got no answer.
    pub(super) async fn send(self, sent: &Sent, baggage: &str) -> Result<Outcome, String> {
        let headers = self.headers(sent, baggage);
        let start = SystemTime::now();
        let (answer, kind, attributes) = match self.target {
            Target::Http(url) => self.http(url, &headers).await?,
            Target::Grpc { authority, method } => self.grpc(authority, method, &headers).await?,
            Target::Nats { authority, subject } => self.nats(authority, subject, &headers).await?,
        };
        let end = SystemTime::now();
        Ok(Outcome {
            answer,
            took: end.duration_since(start).unwrap_or_default(),
            span: sent.span(kind, attributes, unix_nanos(start), unix_nanos(end)),
        })
    }

    async fn http(
        &self,
        url: &str,
        headers: &[(String, String)],
    ) -> Result<(String, SpanKind, Vec<KeyValue>), String> {
        let method = self.http_method();
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .build()
            .map_err(|e| e.to_string())?;
        let mut request = client.request(method.clone(), url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(body) = &self.body {
            request = request.body(body.clone());
        }
        let response = request.send().await.map_err(|e| {
            let why = if e.is_timeout() {
                self.no_answer()
            } else if e.is_connect() {
                "cannot connect".to_owned()
            } else {
                "the request failed".to_owned()
            };
            format!("{why}: {e}")
        })?;
        let status = response.status();
        let mut span = Sent::http_client_attributes(url, method.as_str());
        span.push(KeyValue::new(
            "http.response.status_code",
            Value::Int(i64::from(status.as_u16())),
        ));
        Ok((status.to_string(), SpanKind::Client, span))
    }

    fn no_answer(&self) -> String {
        format!(
            "no answer within {} s (--timeout)",
            self.timeout.as_secs_f64()
        )
    }

    async fn grpc(
        &self,
        authority: &str,
        method: &str,
        headers: &[(String, String)],
    ) -> Result<(String, SpanKind, Vec<KeyValue>), String> {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{authority}"))
            .map_err(|e| e.to_string())?
            .connect_timeout(self.timeout)
            .timeout(self.timeout)
            .connect()
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready()
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        // An empty body is an empty message: the health check of the whole server.
        let mut request = tonic::Request::new(self.body.clone().unwrap_or_default());
        for (name, value) in headers {
            let key = tonic::metadata::MetadataKey::from_str(&name.to_ascii_lowercase())
                .map_err(|_| format!("'{name}' is not a gRPC metadata key"))?;
            let value = value
                .parse()
                .map_err(|_| format!("'{value}' is not a gRPC metadata value"))?;
            request.metadata_mut().insert(key, value);
        }
        let path = http::uri::PathAndQuery::from_str(&format!("/{method}"))
            .map_err(|e| format!("'{method}': {e}"))?;
        let code = match grpc.unary(request, path, RawCodec).await {
            Ok(_) => tonic::Code::Ok,
            Err(status) if status.code() == tonic::Code::DeadlineExceeded => {
                return Err(self.no_answer());
            }
            Err(status) if status.code() == tonic::Code::Unavailable => {
                return Err(format!("unavailable: {}", status.message()));
            }
            Err(status) => status.code(),
        };
        let (service, name) = method.split_once('/').unwrap_or((method, ""));
        let (host, port) = split_authority(authority);
        let text = |v: &str| Value::String(v.to_owned());
        let attributes = vec![
            KeyValue::new("rpc.system", text("grpc")),
            KeyValue::new("rpc.service", text(service)),
            KeyValue::new("rpc.method", text(name)),
            KeyValue::new("server.address", text(host)),
            KeyValue::new("server.port", Value::Int(i64::from(port))),
            KeyValue::new("rpc.grpc.status_code", Value::Int(code as i64)),
        ];
        Ok((format!("gRPC {code:?}"), SpanKind::Client, attributes))
    }

    async fn nats(
        &self,
        authority: &str,
        subject: &str,
        headers: &[(String, String)],
    ) -> Result<(String, SpanKind, Vec<KeyValue>), String> {
        let client = async_nats::ConnectOptions::new()
            .name("lens-probe")
            .connection_timeout(self.timeout)
            .connect(authority)
            .await
            .map_err(|e| format!("cannot connect: {e}"))?;
        let mut map = async_nats::HeaderMap::new();
        for (name, value) in headers {
            map.insert(name.as_str(), value.as_str());
        }
        let payload = self.body.clone().unwrap_or_default();
        let size = payload.len();
        client
            .publish_with_headers(subject.to_owned(), map, payload.into())
            .await
            .map_err(|e| format!("cannot publish: {e}"))?;
        tokio::time::timeout(self.timeout, client.flush())
            .await
            .map_err(|_| self.no_answer())?
            .map_err(|e| format!("cannot publish: {e}"))?;
        let (host, port) = split_authority(authority);
        let text = |v: &str| Value::String(v.to_owned());
        let attributes = vec![
            KeyValue::new("messaging.system", text("nats")),
            KeyValue::new("messaging.operation.name", text("send")),
            KeyValue::new("messaging.operation.type", text("send")),
            KeyValue::new("messaging.destination.name", text(subject)),
            KeyValue::new("messaging.message.body.size", Value::Int(size as i64)),
            KeyValue::new("server.address", text(host)),
            KeyValue::new("server.port", Value::Int(i64::from(port))),
        ];
        Ok(("published".to_owned(), SpanKind::Producer, attributes))
    }
}

/// `HOST:PORT` (or `[v6]:PORT`) to its parts; port 0 when there is none.
fn split_authority(authority: &str) -> (&str, u16) {
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().unwrap_or(0)),
        _ => (authority, 0),
    };
    (host.trim_start_matches('[').trim_end_matches(']'), port)
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A gRPC codec of raw bytes: the probe sends the body as given and reads the answer as bytes.
#[derive(Clone, Copy, Debug, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn targets_are_http_grpc_or_nats() {
        assert_eq!(
            Target::parse("http://h:8080/x?y=1"),
            Ok(Target::Http("http://h:8080/x?y=1".into()))
        );
        assert_eq!(
            Target::parse("grpc://h:50051"),
            Ok(Target::Grpc {
                authority: "h:50051".into(),
                method: HEALTH_CHECK.into()
            })
        );
        assert_eq!(
            Target::parse("grpc://h:50051/lens.demo.Trainer/Step"),
            Ok(Target::Grpc {
                authority: "h:50051".into(),
                method: "lens.demo.Trainer/Step".into()
            })
        );
        assert_eq!(
            Target::parse("nats://127.0.0.1:4222/jobs.rollout"),
            Ok(Target::Nats {
                authority: "127.0.0.1:4222".into(),
                subject: "jobs.rollout".into()
            })
        );
        for (bad, says) in [
            ("https://h/", "without TLS"),
            ("h:80", "expected http://"),
            ("http:///x", "no host"),
            ("grpc://h:1/Check", "not a gRPC method"),
            ("grpc://h:1/a/b/c", "not a gRPC method"),
            ("nats://h:4222", "a subject"),
            ("ftp://h/", "no 'ftp://' targets"),
        ] {
            let e = Target::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(split_authority("h:1"), ("h", 1));
        assert_eq!(split_authority("[::1]:2"), ("::1", 2));
        assert_eq!(split_authority("h"), ("h", 0));
    }
}
