//! The doctor scenario's load-balancer pools: a NeMo Lens Python client behind stock nginx
//! (Debian's, as shipped), round robin over three lens replicas, the third reached through a
//! second nginx server block that drops the trace headers (an old sidecar):
//!
//! * HTTP: `python/lb_client.py` (aiohttp, NeMo Lens `instrument_aiohttp_client`) sends
//!   [`REQUESTS`] `GET /relay?n=N`, one at a time, to `proxy_pass http://pool;` (nginx sends the
//!   upstream's name, `pool`, as `Host`) over three axum services behind lens's `ServerLayer`
//!   ([`RELAY_SERVICE`], `service.instance.id` `relay-1` to `relay-3`); the sidecar has
//!   `proxy_set_header traceparent ""; proxy_set_header tracestate ""; proxy_set_header
//!   baggage "";`.
//! * gRPC: the same client, grpcio with NeMo Lens's `inject_context` on the metadata, its CLIENT
//!   span recording the balancer's address (`server.address`/`server.port`) and `rpc.*`, sends
//!   [`REQUESTS`] unary calls to `grpc_pass grpc://pool;` over three tonic servers behind
//!   lens-tonic's `ServerLayer` ([`TRAINER_SERVICE`], `relay-1` to `relay-3`); the sidecar has
//!   `grpc_set_header traceparent "";` (and `tracestate`, `baggage`).
//!
//! Every span goes over OTLP into the scenario's `lens watch --save`. The client called the
//! balancer; the third replica saw the sidecar's `Host`/`:authority`: the addresses differ, and
//! only the request (method, path and query; the gRPC method) and the time pair the hop. The
//! scenario ([`crate::doctor`]) checks that `lens check` finds exactly the third replica's
//! requests as `lost-context`, paired by request, each naming `instance relay-3`.
//!
//! nginx runs in a directory of its own (prefix, pid file, error log and temp paths),
//! `daemon off; master_process off;`, on free ports of 127.0.0.1 (a port taken free from the
//! system, then handed to it: nginx cannot be given port 0). Without nginx the pools are
//! skipped with a note, unless `LENS_NGINX=require` (CI), when the scenario fails.

use std::convert::Infallible;
use std::future::Future;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::routing::get;
use lens_tonic::JsonCodec;
use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use serde_json::{Value, json};
use tonic::body::Body;
use tonic::server::{NamedService, UnaryService};

use crate::check::Checks;
use crate::error::{Error, Result};
use crate::http::{OtlpTargets, export_rust_as};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, Side, SpanRecord};

/// The environment variable that makes a missing nginx a failure.
const REQUIRE_ENV: &str = "LENS_NGINX";

/// Requests (and calls) through each balancer, one at a time: a third reach the third replica.
pub(crate) const REQUESTS: usize = 30;

/// lb_client.py's service name.
pub(crate) const CLIENT_SERVICE: &str = "lens-interop-python-lb";
/// The HTTP replicas' service name.
pub(crate) const RELAY_SERVICE: &str = "lens-interop-relay";
/// The gRPC replicas' service name.
pub(crate) const TRAINER_SERVICE: &str = "lens-interop-trainer";
/// The `service.instance.id` of the replica behind the dropping sidecar.
pub(crate) const LOST_INSTANCE: &str = "relay-3";

/// The gRPC method the replicas serve.
const FORWARD: &str = "/lens.interop.Relay/Forward";

/// How long nginx may take to listen, and the replicas to end their spans.
const PATIENCE: Duration = Duration::from_secs(30);

/// One pool's hops: the client traces of the requests the third replica served, and its
/// SERVER spans' ids.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    /// The client's trace ids of the lost requests.
    pub(crate) lost_traces: Vec<String>,
    /// The third replica's SERVER span ids.
    pub(crate) lost_servers: Vec<String>,
}

/// Both pools' spans and lost hops; `None` where nginx is not installed (skipped).
pub(crate) struct Pools {
    pub(crate) http: Pool,
    pub(crate) grpc: Pool,
    /// Every span of the client and the replicas.
    pub(crate) all: Vec<SpanRecord>,
}

// ---- nginx ----

/// A running nginx in a directory of its own, stopped when dropped.
struct Nginx {
    child: Child,
    dir: PathBuf,
}

/// nginx's binary: on `PATH`, else where Debian installs it (`/usr/sbin` is not on a user's
/// `PATH`).
fn nginx_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("nginx"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/sbin/nginx");
        debian.is_file().then_some(debian)
    })
}

/// A port of 127.0.0.1 free now (for nginx, which cannot be given port 0).
fn free_port() -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(Error::io("taking a free port for nginx"))
}

impl Nginx {
    /// nginx `binary` with `http` as its `http { }` block, in `dir`, listening on `ports`.
    fn start(binary: &Path, dir: &Path, http: &str, ports: &[u16]) -> Result<Nginx> {
        let _ignored = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        // nginx reads the paths of its configuration from its prefix: all of them absolute.
        let dir = &std::fs::canonicalize(dir)
            .map_err(Error::io(format!("the absolute path of {}", dir.display())))?;
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
error_log {d}/error.log warn;\nevents {{ worker_connections 256; }}\nhttp {{\n\
access_log off;\nclient_body_temp_path {d}/client_body;\nproxy_temp_path {d}/proxy;\n\
fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n{http}\n}}\n"
        );
        let conf_path = dir.join("nginx.conf");
        std::fs::write(&conf_path, conf)
            .map_err(Error::io(format!("writing {}", conf_path.display())))?;
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // What it says before its error log is open (a configuration it cannot read).
            .stderr(
                std::fs::File::create(dir.join("stderr.log"))
                    .map_err(Error::io("creating nginx's stderr.log"))?,
            )
            .spawn()
            .map_err(Error::io(format!("starting {}", binary.display())))?;
        let mut nginx = Nginx {
            child,
            dir: dir.to_owned(),
        };
        let deadline = Instant::now() + PATIENCE;
        for port in ports {
            while TcpStream::connect(("127.0.0.1", *port)).is_err() {
                if let Ok(Some(status)) = nginx.child.try_wait() {
                    return Err(Error::Nginx {
                        message: format!("exited ({status}): {}", nginx.log()),
                    });
                }
                if Instant::now() >= deadline {
                    return Err(Error::Nginx {
                        message: format!("does not listen on {port}: {}", nginx.log()),
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(nginx)
    }

    /// Its error log and standard error.
    fn log(&self) -> String {
        ["error.log", "stderr.log"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(self.dir.join(f)).ok())
            .collect::<Vec<_>>()
            .join("")
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ignored = self.child.kill();
        let _ignored = self.child.wait();
    }
}

// ---- the replicas ----

/// One replica: its spans, its resource, what it served, its server task.
struct Replica {
    recording: spans::Recording,
    resource: Resource,
    served: Arc<Mutex<Vec<String>>>,
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Replica {
    fn resource(service: &'static str, instance: &str) -> Resource {
        Resource::builder_empty()
            .with_service_name(service)
            .with_attribute(KeyValue::new("service.instance.id", instance.to_owned()))
            .build()
    }

    fn served(&self) -> Vec<String> {
        self.served.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn ended(&self) -> usize {
        self.recording
            .exporter
            .get_finished_spans()
            .map_or(0, |s| s.len())
    }
}

async fn relay(
    State(served): State<Arc<Mutex<Vec<String>>>>,
    RawQuery(query): RawQuery,
) -> &'static str {
    if let Ok(mut served) = served.lock() {
        served.push(query.unwrap_or_default());
    }
    "relayed"
}

/// An axum replica, `GET /relay` behind lens's `ServerLayer`, as `instance`.
async fn http_replica(instance: &str) -> Result<Replica> {
    let recording = spans::Recording::new();
    let served = Arc::<Mutex<Vec<String>>>::default();
    let app = Router::new()
        .route("/relay", get(relay))
        .with_state(Arc::clone(&served))
        .layer(lens_axum::ServerLayer::new().with_tracer(recording.tracer.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(Error::io("binding an HTTP replica"))?;
    let addr = listener
        .local_addr()
        .map_err(Error::io("HTTP replica address"))?;
    let task = tokio::spawn(async move {
        let _ignored = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    Ok(Replica {
        recording,
        resource: Replica::resource(RELAY_SERVICE, instance),
        served,
        addr,
        task,
    })
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A gRPC replica's service: `lens.interop.Relay/Forward` records the message and echoes it.
#[derive(Clone)]
struct Forward(Arc<Mutex<Vec<String>>>);

impl NamedService for Forward {
    const NAME: &'static str = "lens.interop.Relay";
}

impl UnaryService<String> for Forward {
    type Response = String;
    type Future = BoxFuture<Result<tonic::Response<String>, tonic::Status>>;

    fn call(&mut self, request: tonic::Request<String>) -> Self::Future {
        let message = request.into_inner();
        if let Ok(mut served) = self.0.lock() {
            served.push(message.clone());
        }
        Box::pin(async move { Ok(tonic::Response::new(message)) })
    }
}

impl tower_service::Service<http::Request<Body>> for Forward {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let forward = self.clone();
        match request.uri().path() {
            FORWARD => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
                Ok(grpc.unary(forward, request).await)
            }),
            _ => Box::pin(
                async move { Ok(tonic::Status::unimplemented("no such method").into_http()) },
            ),
        }
    }
}

/// A tonic replica behind lens-tonic's `ServerLayer`, as `instance`.
async fn grpc_replica(instance: &str) -> Result<Replica> {
    let recording = spans::Recording::new();
    let served = Arc::<Mutex<Vec<String>>>::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(Error::io("binding a gRPC replica"))?;
    let addr = listener
        .local_addr()
        .map_err(Error::io("gRPC replica address"))?;
    let layer = lens_tonic::ServerLayer::new().with_tracer(recording.tracer.clone());
    let service = Forward(Arc::clone(&served));
    let task = tokio::spawn(async move {
        let _ignored = tonic::transport::Server::builder()
            .layer(layer)
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await;
    });
    Ok(Replica {
        recording,
        resource: Replica::resource(TRAINER_SERVICE, instance),
        served,
        addr,
        task,
    })
}

/// Waits until `replicas` have ended a span for each request they served (a server span ends
/// as its response goes, maybe after the client has it), at most [`PATIENCE`].
async fn spans_ended(replicas: &[Replica]) -> Result<()> {
    let deadline = Instant::now() + PATIENCE;
    while replicas.iter().any(|r| r.ended() < r.served().len()) {
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: "the replicas' SERVER spans".into(),
                after: PATIENCE,
            });
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Stops `replicas`, exports their spans under their resources to `otlp`, and writes them to
/// `<out>/<name>-<n>-spans.json`; checks the round robin (a third each); the third replica's
/// SERVER span ids and what it served.
async fn finish_replicas(
    replicas: Vec<Replica>,
    name: &str,
    otlp: &OtlpTargets,
    out: &Path,
    checks: &mut Checks,
    all: &mut Vec<SpanRecord>,
) -> Result<(Vec<String>, Vec<String>)> {
    let mut third = (Vec::new(), Vec::new());
    for (n, replica) in replicas.into_iter().enumerate() {
        replica.task.abort();
        let served = replica.served();
        checks.eq(
            &format!("{name} round robin: replica {} served a third", n + 1),
            &served.len(),
            &(REQUESTS / 3),
        );
        let _ignored = replica.recording.provider.force_flush();
        let finished = replica
            .recording
            .exporter
            .get_finished_spans()
            .map_err(Error::http("in-memory exporter"))?;
        export_rust_as(finished, &otlp.rust, &replica.resource).await?;
        let spans = spans::take_rust(
            &replica.recording.exporter,
            &out.join(format!("{name}-{}-spans.json", n + 1)),
        )?;
        if n == 2 {
            third = (
                spans
                    .iter()
                    .filter(|s| s.kind == "SERVER")
                    .map(|s| s.span_id.clone())
                    .collect(),
                served,
            );
        }
        all.extend(spans);
    }
    Ok(third)
}

/// The upstream `pool` over the first two replicas and the sidecar, the balancer on
/// `balancer`, the sidecar on `sidecar` in front of the third replica; `pass` is `proxy_pass
/// http` or `grpc_pass grpc`, `set` `proxy_set_header` or `grpc_set_header`, `listen` what
/// follows the address in `listen` (`http2` for gRPC).
fn pool_conf(
    replicas: &[Replica],
    (balancer, sidecar): (u16, u16),
    (pass, set, listen): (&str, &str, &str),
) -> String {
    let [one, two, three] = [replicas[0].addr, replicas[1].addr, replicas[2].addr];
    format!(
        "upstream pool {{ server {one}; server {two}; server 127.0.0.1:{sidecar}; }}\n\
server {{ listen 127.0.0.1:{balancer}{listen}; location / {{ {pass}://pool; }} }}\n\
server {{ listen 127.0.0.1:{sidecar}{listen}; location / {{ {pass}://{three};\n\
{set} traceparent \"\"; {set} tracestate \"\"; {set} baggage \"\"; }} }}"
    )
}

/// Runs both pools, every span into `otlp` (the scenario's `lens watch`); `None` (and a note)
/// without nginx unless `LENS_NGINX=require`.
pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
    otlp: &OtlpTargets,
    checks: &mut Checks,
) -> Result<Option<Pools>> {
    let Some(binary) = nginx_binary() else {
        if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require") {
            return Err(Error::Nginx {
                message: format!(
                    "not installed (apt-get install nginx), and {REQUIRE_ENV}=require"
                ),
            });
        }
        println!(
            "  doctor: the nginx pools skipped: nginx is not installed (apt-get install nginx; \
             {REQUIRE_ENV}=require makes this a failure)"
        );
        return Ok(None);
    };
    let mut client = PythonProcess::spawn(
        python,
        &scripts.join("lb_client.py"),
        [
            "--otlp-protocol",
            otlp.python.0,
            "--otlp-endpoint",
            otlp.python.1.as_str(),
        ],
    )?;
    tokio::task::block_in_place(|| client.read_tagged("READY", START_TIMEOUT))?;
    let mut all = Vec::new();

    // HTTP: proxy_pass over three axum replicas.
    let mut replicas = Vec::new();
    for n in 1..=3 {
        replicas.push(http_replica(&format!("relay-{n}")).await?);
    }
    let ports = (free_port()?, free_port()?);
    let conf = pool_conf(
        &replicas,
        ports,
        ("proxy_pass http", "proxy_set_header", ""),
    );
    let nginx = Nginx::start(&binary, &out.join("nginx-http"), &conf, &[ports.0, ports.1])?;
    let mut answers = Vec::new();
    for n in 1..=REQUESTS {
        let url = format!("http://127.0.0.1:{}/relay?n={n}", ports.0);
        let answer =
            tokio::task::block_in_place(|| client.request(&json!({"op": "http", "url": url})))?;
        answers.push(answer);
    }
    checks.check(
        &format!("nginx proxy_pass: the {REQUESTS} requests answered 200 \"relayed\""),
        answers
            .iter()
            .all(|a| a["status"] == 200 && a["text"] == "relayed"),
        || format!("{answers:?}\n{}", nginx.log()),
    );
    spans_ended(&replicas).await?;
    drop(nginx);
    let (http_servers, http_served) =
        finish_replicas(replicas, "relay", otlp, out, checks, &mut all).await?;

    // gRPC: grpc_pass over three tonic replicas.
    let mut replicas = Vec::new();
    for n in 1..=3 {
        replicas.push(grpc_replica(&format!("relay-{n}")).await?);
    }
    let ports = (free_port()?, free_port()?);
    let conf = pool_conf(
        &replicas,
        ports,
        ("grpc_pass grpc", "grpc_set_header", " http2"),
    );
    let nginx = Nginx::start(&binary, &out.join("nginx-grpc"), &conf, &[ports.0, ports.1])?;
    let mut calls: Vec<(String, Value)> = Vec::new();
    for n in 1..=REQUESTS {
        let message = format!("call {n}");
        let request = json!({
            "op": "grpc",
            "target": format!("127.0.0.1:{}", ports.0),
            "method": FORWARD,
            "message": message,
        });
        let answer = tokio::task::block_in_place(|| client.request(&request))?;
        calls.push((message, answer));
    }
    checks.check(
        &format!("nginx grpc_pass: the {REQUESTS} calls answered with their message"),
        calls.iter().all(|(m, a)| a["answer"] == m.as_str()),
        || format!("{calls:?}\n{}", nginx.log()),
    );
    spans_ended(&replicas).await?;
    drop(nginx);
    let (grpc_servers, grpc_served) =
        finish_replicas(replicas, "trainer", otlp, out, checks, &mut all).await?;

    // The client's spans.
    let spans_path = out.join("lb-client-spans.json");
    let written = tokio::task::block_in_place(|| -> Result<Value> {
        let written = client.request(&json!({"op": "finish", "spans": spans_path}))?;
        client.finish()?;
        Ok(written)
    })?;
    let python_spans = spans::read_python(&spans_path)?;
    checks.eq(
        "lb_client.py reports the spans it wrote",
        &written["spans"].as_u64(),
        &u64::try_from(python_spans.len()).ok(),
    );
    // HTTP: the client traces of the requests the third replica served (by their query).
    let http_lost: Vec<String> = python_spans
        .iter()
        .filter(|s| s.is(Side::Python, "CLIENT"))
        .filter(|s| {
            let url = s.attribute("url.full").or_else(|| s.attribute("http.url"));
            url.as_deref()
                .and_then(|u| u.split_once('?'))
                .is_some_and(|(_, q)| http_served.iter().any(|served| served == q))
        })
        .map(|s| s.trace_id.clone())
        .collect();
    checks.eq(
        "python CLIENT spans of the requests the third HTTP replica served",
        &http_lost.len(),
        &(REQUESTS / 3),
    );
    // gRPC: the client traces of the calls the third replica served (by their message).
    let grpc_lost: Vec<String> = calls
        .iter()
        .filter(|(m, _)| grpc_served.contains(m))
        .filter_map(|(_, a)| a["trace_id"].as_str().map(str::to_owned))
        .collect();
    checks.eq(
        "python CLIENT spans of the calls the third gRPC replica served",
        &grpc_lost.len(),
        &(REQUESTS / 3),
    );
    all.extend(python_spans);
    Ok(Some(Pools {
        http: Pool {
            lost_traces: http_lost,
            lost_servers: http_servers,
        },
        grpc: Pool {
            lost_traces: grpc_lost,
            lost_servers: grpc_servers,
        },
        all,
    }))
}
