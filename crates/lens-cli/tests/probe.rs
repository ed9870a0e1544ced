//! `lens probe URL` through a chain of real services in this test: a lens axum gateway that
//! calls a lens axum planner through lens-reqwest, with a small proxy in between written here
//! that forwards the request as it came, or drops or rewrites one trace header. Each service
//! exports its spans over OTLP/HTTP (opentelemetry-otlp) to the probe's own receiver, once the
//! probe says where it listens. The probe's report names the broken hop and what broke, and
//! nothing on the healthy ones; the healthy chain exits 0.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod watch_support;

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use lens_axum::{RequestContext, ServerLayer};
use lens_reqwest::ClientMiddleware;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use reqwest_middleware::ClientWithMiddleware;
use serde_json::Value;

/// Every span a service's provider ended, kept until the probe says where to send them.
#[derive(Clone, Debug, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        self.0.lock().unwrap().extend(batch);
        std::future::ready(Ok(()))
    }
}

/// One service: its provider (its own `service.name`) and the spans it ended.
struct Service {
    provider: SdkTracerProvider,
    kept: Kept,
    resource: Resource,
}

impl Service {
    fn new(name: &'static str) -> Self {
        Service::with_resource(Resource::builder_empty().with_service_name(name).build())
    }

    /// One instance of a replicated service: `service.instance.id` = `instance`.
    fn instance(name: &'static str, instance: &str) -> Self {
        let resource = Resource::builder_empty()
            .with_service_name(name)
            .with_attribute(opentelemetry::KeyValue::new(
                "service.instance.id",
                instance.to_owned(),
            ))
            .build();
        Service::with_resource(resource)
    }

    fn with_resource(resource: Resource) -> Self {
        let kept = Kept::default();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_simple_exporter(kept.clone())
            .build();
        Service {
            provider,
            kept,
            resource,
        }
    }

    /// Sends the spans ended so far to the OTLP/HTTP receiver at `endpoint`.
    async fn export_to(&self, endpoint: &str) {
        let spans = std::mem::take(&mut *self.kept.0.lock().unwrap());
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{endpoint}/v1/traces"))
            .build()
            .unwrap();
        exporter.set_resource(&self.resource);
        exporter.export(spans).await.unwrap();
    }

    fn count(&self) -> usize {
        self.kept.0.lock().unwrap().len()
    }
}

/// What the proxy between the gateway and the planner does to the request's trace headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Proxy {
    /// Forwards every header as it came.
    Pass,
    /// Drops `tracestate`.
    DropTracestate,
    /// Drops `baggage`.
    DropBaggage,
    /// Puts a span of its own (never exported) in `traceparent`, as a load balancer that traces
    /// itself without exporting.
    Reparent,
    /// Drops every trace header.
    DropAll,
    /// Writes the sampled flag into `traceparent` whatever came (as NVIDIA Dynamo's
    /// `create_traceparent` always writes `-01`).
    ForceSampled,
}

#[derive(Clone)]
struct Forward {
    client: reqwest::Client,
    to: String,
    proxy: Proxy,
}

async fn forward(
    State(f): State<Forward>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, String) {
    forward_to(&f.client, &f.to, f.proxy, &headers, body).await
}

/// A load balancer: each request to the next of `to` in turn, each with what its proxy does.
#[derive(Clone)]
struct RoundRobin {
    client: reqwest::Client,
    to: Arc<Vec<(String, Proxy)>>,
    next: Arc<std::sync::atomic::AtomicUsize>,
}

async fn balance(
    State(b): State<RoundRobin>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, String) {
    let n = b.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (to, proxy) = &b.to[n % b.to.len()];
    forward_to(&b.client, to, *proxy, &headers, body).await
}

async fn forward_to(
    client: &reqwest::Client,
    to: &str,
    proxy: Proxy,
    headers: &HeaderMap,
    body: String,
) -> (StatusCode, String) {
    let f = Forward {
        client: client.clone(),
        to: to.to_owned(),
        proxy,
    };
    let mut out = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let drop = match f.proxy {
            Proxy::Pass | Proxy::Reparent | Proxy::ForceSampled => false,
            Proxy::DropTracestate => name == "tracestate",
            Proxy::DropBaggage => name == "baggage",
            Proxy::DropAll => ["traceparent", "tracestate", "baggage"].contains(&name.as_str()),
        };
        if !drop && name != "content-length" {
            out.append(name.clone(), value.clone());
        }
    }
    if f.proxy == Proxy::Reparent
        && let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok())
    {
        // Same trace and flags, the proxy's own span id.
        let rewritten = format!("{}eeeeeeeeeeeeeeee{}", &tp[..36], &tp[52..]);
        out.insert("traceparent", rewritten.parse().unwrap());
    }
    if f.proxy == Proxy::ForceSampled
        && let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok())
    {
        let forced = format!("{}01", &tp[..53]);
        out.insert("traceparent", forced.parse().unwrap());
    }
    let response = f
        .client
        .post(&f.to)
        .headers(out)
        .body(body)
        .send()
        .await
        .unwrap();
    (
        StatusCode::from_u16(response.status().as_u16()).unwrap(),
        response.text().await.unwrap(),
    )
}

#[derive(Clone)]
struct Gateway {
    client: ClientWithMiddleware,
    next: String,
}

async fn train(State(g): State<Gateway>, cx: RequestContext, body: String) -> (StatusCode, String) {
    let response = g
        .client
        .post(&g.next)
        .body(body)
        .with_extension(cx.into_context())
        .send()
        .await
        .unwrap();
    (
        StatusCode::from_u16(response.status().as_u16()).unwrap(),
        "trained".to_owned(),
    )
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    addr
}

/// The chain: gateway -> proxy -> planner; returns the gateway's URL and the services.
async fn chain(proxy: Proxy) -> (String, Vec<Service>) {
    let gateway = Service::new("gateway");
    let planner = Service::new("planner");
    let server = |s: &Service| {
        ServerLayer::new()
            .with_tracer(opentelemetry::trace::TracerProvider::tracer(
                &s.provider,
                "lens-axum",
            ))
            // What lets the probe see the baggage: the keys that arrived, never the values.
            .with_baggage_keys(true)
    };
    let planner_addr = serve(
        Router::new()
            .route("/plan", post(|| async { "planned" }))
            .layer(server(&planner)),
    )
    .await;
    let proxy_addr = serve(
        Router::new()
            .route("/plan", post(forward))
            .with_state(Forward {
                client: reqwest::Client::new(),
                to: format!("http://{planner_addr}/plan"),
                proxy,
            }),
    )
    .await;
    let client =
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(ClientMiddleware::new().with_tracer(
                opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "lens-reqwest"),
            ))
            .build();
    let gateway_addr = serve(
        Router::new()
            .route("/train", post(train))
            .with_state(Gateway {
                client,
                next: format!("http://{proxy_addr}/plan"),
            })
            .layer(server(&gateway)),
    )
    .await;
    (
        format!("http://{gateway_addr}/train"),
        vec![gateway, planner],
    )
}

/// A replica pool: gateway -> a round-robin balancer -> planner-1, planner-2, planner-3 (each
/// its own `service.instance.id`); the balancer drops every trace header on its way to
/// planner-2 when `bad`. Returns the gateway's URL and the services.
async fn pool(bad: bool) -> (String, Vec<Service>) {
    let gateway = Service::new("gateway");
    let mut to = Vec::new();
    let mut services = Vec::new();
    for n in 1..=3 {
        let planner = Service::instance("planner", &format!("planner-{n}"));
        let addr = serve(
            Router::new()
                .route("/plan", post(|| async { "planned" }))
                .layer(ServerLayer::new().with_tracer(
                    opentelemetry::trace::TracerProvider::tracer(&planner.provider, "lens-axum"),
                )),
        )
        .await;
        let proxy = if bad && n == 2 {
            Proxy::DropAll
        } else {
            Proxy::Pass
        };
        to.push((format!("http://{addr}/plan"), proxy));
        services.push(planner);
    }
    let balancer = serve(
        Router::new()
            .route("/plan", post(balance))
            .with_state(RoundRobin {
                client: reqwest::Client::new(),
                to: Arc::new(to),
                next: Arc::default(),
            }),
    )
    .await;
    let client =
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(ClientMiddleware::new().with_tracer(
                opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "lens-reqwest"),
            ))
            .build();
    let gateway_addr =
        serve(
            Router::new()
                .route("/train", post(train))
                .with_state(Gateway {
                    client,
                    next: format!("http://{balancer}/plan"),
                })
                .layer(ServerLayer::new().with_tracer(
                    opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "lens-axum"),
                )),
        )
        .await;
    services.push(gateway);
    (format!("http://{gateway_addr}/train"), services)
}

/// A gateway with a context-bleed bug, as users write it: a variable holding the last
/// request's context, which its client then uses. The barrier lets two requests in before
/// either calls on, so the second's context is the last for both. With `batch`, the same call
/// goes out on purpose from a batch span in the last request's trace that links to the
/// request it serves (two requests legitimately sharing a trace: no bleed).
#[derive(Clone)]
struct Leaky {
    client: ClientWithMiddleware,
    next: String,
    last: Arc<Mutex<Option<opentelemetry::Context>>>,
    together: Arc<tokio::sync::Barrier>,
    batch: Option<opentelemetry_sdk::trace::SdkTracer>,
}

async fn leaky_train(State(g): State<Leaky>, cx: RequestContext, body: String) -> String {
    use opentelemetry::trace::{TraceContextExt as _, Tracer as _};
    let own = cx.into_context();
    *g.last.lock().unwrap() = Some(own.clone());
    g.together.wait().await;
    let last = g.last.lock().unwrap().clone().unwrap();
    let cx = match &g.batch {
        None => last,
        Some(tracer) => {
            let link = opentelemetry::trace::Link::with_context(own.span().span_context().clone());
            let span = tracer
                .span_builder("batch")
                .with_links(vec![link])
                .start_with_context(tracer, &last);
            last.with_span(span)
        }
    };
    g.client
        .post(&g.next)
        .body(body)
        .with_extension(cx)
        .send()
        .await
        .unwrap();
    "trained".to_owned()
}

/// gateway (with the bleed bug, or batching on purpose) -> planner (instance planner-1).
async fn leaky(batch: bool) -> (String, Vec<Service>) {
    let gateway = Service::new("gateway");
    let planner = Service::instance("planner", "planner-1");
    let planner_addr =
        serve(
            Router::new()
                .route("/plan", post(|| async { "planned" }))
                .layer(ServerLayer::new().with_tracer(
                    opentelemetry::trace::TracerProvider::tracer(&planner.provider, "lens-axum"),
                )),
        )
        .await;
    let client =
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(ClientMiddleware::new().with_tracer(
                opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "lens-reqwest"),
            ))
            .build();
    let gateway_addr =
        serve(
            Router::new()
                .route("/train", post(leaky_train))
                .with_state(Leaky {
                    client,
                    next: format!("http://{planner_addr}/plan"),
                    last: Arc::default(),
                    together: Arc::new(tokio::sync::Barrier::new(2)),
                    batch: batch.then(|| {
                        opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "batcher")
                    }),
                })
                .layer(ServerLayer::new().with_tracer(
                    opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "lens-axum"),
                )),
        )
        .await;
    (
        format!("http://{gateway_addr}/train"),
        vec![gateway, planner],
    )
}

/// A free port on 127.0.0.1 (taken from the OS, then released for nginx to bind).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Debian's nginx, started with its own prefix and config in a temporary directory; stopped
/// when dropped.
struct Nginx {
    child: std::process::Child,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// nginx, when installed: `None` (with a note) where it is not, unless `LENS_NGINX=require`.
fn nginx_binary() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var("LENS_NGINX").as_deref() != Ok("require"),
            "LENS_NGINX=require and no nginx (apt-get install nginx)"
        );
        eprintln!("skipped: no nginx (apt-get install nginx; LENS_NGINX=require makes this fail)");
    }
    found
}

/// nginx on a free port: `upstream` round robin over `planners`; the last one reached through
/// a server of nginx's own that drops the trace headers (`proxy_set_header traceparent "";`)
/// when `bad`. Returns nginx and its address.
async fn nginx_pool(
    binary: &std::path::Path,
    planners: &[SocketAddr],
    bad: bool,
) -> (Nginx, String) {
    let dir = std::env::temp_dir().join(format!(
        "lens-probe-nginx-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let (front, back) = (free_port(), free_port());
    let (last, rest) = planners.split_last().unwrap();
    let mut servers: Vec<String> = rest.iter().map(|a| format!("server {a};")).collect();
    servers.push(if bad {
        format!("server 127.0.0.1:{back};")
    } else {
        format!("server {last};")
    });
    let conf = format!(
        r#"worker_processes 1;
error_log {dir}/logs/error.log;
pid {dir}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream planners {{ {servers} }}
    server {{
        listen 127.0.0.1:{front};
        location / {{ proxy_pass http://planners; }}
    }}
    # The bad replica: an old image behind a proxy that does not pass the trace headers.
    server {{
        listen 127.0.0.1:{back};
        location / {{
            proxy_set_header traceparent "";
            proxy_set_header tracestate "";
            proxy_set_header baggage "";
            proxy_pass http://{last};
        }}
    }}
}}
"#,
        dir = dir.display(),
        servers = servers.join(" "),
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(binary)
        .arg("-p")
        .arg(&dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .args(["-g", "daemon off;"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let nginx = Nginx { child, dir };
    // Ready when it accepts connections.
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", front))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "nginx did not start: {:?}",
            std::fs::read_to_string(nginx.dir.join("logs/error.log"))
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (nginx, format!("http://127.0.0.1:{front}"))
}

/// gateway -> nginx (round robin) -> planner-1, planner-2, planner-3 (each its own
/// `service.instance.id`); nginx reaches planner-3 through headers dropped when `bad`.
async fn nginx_chain(binary: &std::path::Path, bad: bool) -> (Nginx, String, Vec<Service>) {
    let gateway = Service::new("gateway");
    let mut addrs = Vec::new();
    let mut services = Vec::new();
    for n in 1..=3 {
        let planner = Service::instance("planner", &format!("planner-{n}"));
        addrs.push(
            serve(
                Router::new()
                    .route("/plan", post(|| async { "planned" }))
                    .layer(ServerLayer::new().with_tracer(
                        opentelemetry::trace::TracerProvider::tracer(
                            &planner.provider,
                            "lens-axum",
                        ),
                    )),
            )
            .await,
        );
        services.push(planner);
    }
    let (nginx, base) = nginx_pool(binary, &addrs, bad).await;
    let client =
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(ClientMiddleware::new().with_tracer(
                opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "lens-reqwest"),
            ))
            .build();
    let gateway_addr =
        serve(
            Router::new()
                .route("/train", post(train))
                .with_state(Gateway {
                    client,
                    next: format!("{base}/plan"),
                })
                .layer(ServerLayer::new().with_tracer(
                    opentelemetry::trace::TracerProvider::tracer(&gateway.provider, "lens-axum"),
                )),
        )
        .await;
    services.push(gateway);
    (nginx, format!("http://{gateway_addr}/train"), services)
}

/// `lens probe --json ARGS URL` against `services`: the exit code and the route.
async fn probe(
    url: &str,
    services: &[Service],
    spans: usize,
    args: &[&str],
) -> (Option<i32>, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, out) = probe_text(url, services, spans, &all).await;
    let route = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    (code, route)
}

/// `lens probe ARGS URL` against `services`: their spans go to the probe's receiver once it has
/// its answer and `spans` of them have ended. Returns the exit code and standard output.
async fn probe_text(
    url: &str,
    services: &[Service],
    spans: usize,
    args: &[&str],
) -> (Option<i32>, String) {
    // With --watch the spans go to that lens watch; else to the probe's own receiver.
    let watch = args
        .iter()
        .position(|a| *a == "--watch")
        .map(|i| args[i + 1].to_owned());
    let receivers: &[&str] = if watch.is_some() {
        &[]
    } else {
        &["--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"]
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_lens"))
        .arg("probe")
        .args(receivers)
        .args(["--quiet-for", "3", "--wait", "30"])
        // A body, unless the test gives its own.
        .args(if args.contains(&"-d") {
            &[][..]
        } else {
            &["-d", "{}"][..]
        })
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut endpoint = watch;
    let mut said = Vec::new();
    loop {
        let line = tokio::task::block_in_place(|| rx.recv_timeout(Duration::from_secs(30)))
            .unwrap_or_else(|e| panic!("{e}: {said:?}"));
        said.push(line.clone());
        if let Some(rest) = line.strip_prefix("lens probe: receiving OTLP on ") {
            endpoint = rest.split_whitespace().next().map(str::to_owned);
        }
        if line.contains(" answered ") {
            break;
        }
    }
    let endpoint = endpoint.unwrap_or_else(|| panic!("no endpoint in {said:?}"));
    // The servers' spans end as their responses go: wait for them, then export.
    let deadline = Instant::now() + Duration::from_secs(30);
    while services.iter().map(Service::count).sum::<usize>() < spans {
        assert!(Instant::now() < deadline, "spans did not end");
        tokio::task::yield_now().await;
    }
    for service in services {
        service.export_to(&endpoint).await;
    }
    let output = tokio::task::block_in_place(|| child.wait_with_output()).unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

/// The hop from `from` to `to` in the route.
fn hop<'a>(route: &'a Value, from: &str, to: &str) -> &'a Value {
    route["hops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["from"] == from && h["to"] == to)
        .unwrap_or_else(|| panic!("no hop {from} -> {to} in {route:#}"))
}

fn assert_healthy(hop: &Value) {
    assert_eq!(hop["broken"], serde_json::json!([]), "{hop:#}");
    assert_eq!(hop["trace"], "kept", "{hop:#}");
    assert_eq!(hop["parent"], "kept", "{hop:#}");
    assert_eq!(hop["tracestate"], "kept", "{hop:#}");
    assert_eq!(hop["baggage"], "kept", "{hop:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_healthy_chain_keeps_the_context_on_every_hop_and_exits_0() {
    let (url, services) = chain(Proxy::Pass).await;
    let (code, route) = probe(&url, &services, 3, &[]).await;
    assert_eq!(code, Some(0), "{route:#}");
    assert_healthy(hop(&route, "lens probe", "gateway"));
    assert_healthy(hop(&route, "gateway", "planner"));
    assert_eq!(route["hops"].as_array().unwrap().len(), 2, "{route:#}");
    assert_eq!(route["spans"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_drops_tracestate_is_named_and_the_other_hop_is_healthy() {
    let (url, services) = chain(Proxy::DropTracestate).await;
    let (code, route) = probe(&url, &services, 3, &[]).await;
    assert_eq!(code, Some(1));
    assert_healthy(hop(&route, "lens probe", "gateway"));
    let broken = hop(&route, "gateway", "planner");
    assert_eq!(
        broken["broken"],
        serde_json::json!(["tracestate-dropped"]),
        "{broken:#}"
    );
    assert_eq!(
        broken["tracestate"]["dropped"],
        serde_json::json!(["lens", "rojo"])
    );
    assert_eq!(broken["baggage"], "kept");

    // --allow takes it out of the exit status, not out of the report.
    let (url, services) = chain(Proxy::DropTracestate).await;
    let (code, route) = probe(&url, &services, 3, &["--allow", "tracestate-dropped"]).await;
    assert_eq!(code, Some(0));
    assert_eq!(
        hop(&route, "gateway", "planner")["broken"],
        serde_json::json!(["tracestate-dropped"])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_drops_baggage_is_named() {
    let (url, services) = chain(Proxy::DropBaggage).await;
    let (code, route) = probe(&url, &services, 3, &[]).await;
    assert_eq!(code, Some(1));
    assert_healthy(hop(&route, "lens probe", "gateway"));
    let broken = hop(&route, "gateway", "planner");
    assert_eq!(
        broken["broken"],
        serde_json::json!(["baggage-dropped"]),
        "{broken:#}"
    );
    assert_eq!(broken["tracestate"], "kept");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_puts_its_own_span_in_traceparent_is_an_unreported_hop() {
    let (url, services) = chain(Proxy::Reparent).await;
    let (code, route) = probe(&url, &services, 3, &[]).await;
    assert_eq!(code, Some(1));
    assert_healthy(hop(&route, "lens probe", "gateway"));
    // Through the proxy: the gateway's call, and a parent nobody exported; the rest arrived.
    let broken = hop(&route, "gateway", "planner");
    assert_eq!(
        broken["parent"]["reparented"], "eeeeeeeeeeeeeeee",
        "{broken:#}"
    );
    assert_eq!(
        broken["broken"],
        serde_json::json!(["missing-parent"]),
        "{broken:#}"
    );
    assert_eq!(
        (&broken["tracestate"], &broken["baggage"]),
        (&"kept".into(), &"kept".into())
    );
    assert_eq!(route["hops"].as_array().unwrap().len(), 2, "{route:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_drops_every_trace_header_loses_the_trace_and_the_probe_names_the_new_one() {
    let (url, services) = chain(Proxy::DropAll).await;
    let (code, route) = probe(&url, &services, 3, &[]).await;
    assert_eq!(code, Some(1));
    assert_healthy(hop(&route, "lens probe", "gateway"));
    let lost = hop(&route, "gateway", "planner");
    assert_eq!(
        lost["broken"],
        serde_json::json!(["lost-context"]),
        "{lost:#}"
    );
    let new_trace = lost["trace"]["lost"]["new_trace_id"].as_str().unwrap();
    assert_ne!(new_trace, route["trace_id"].as_str().unwrap());
    assert_eq!(lost["trace"]["lost"]["cause"], "none");
}

#[tokio::test(flavor = "multi_thread")]
async fn repeated_requests_name_the_replica_that_loses_the_context() {
    let (url, services) = pool(true).await;
    let args = ["--repeat", "12", "--concurrency", "3"];
    let (code, tally) = probe(&url, &services, 3 * 12, &args).await;
    assert_eq!(code, Some(1), "{tally:#}");
    assert_eq!(
        (tally["requests"].as_u64(), tally["lost"].as_u64()),
        (Some(12), Some(4)),
        "{tally:#}"
    );
    assert_eq!(tally["routes"].as_array().unwrap().len(), 12);
    let hops = tally["hops"].as_array().unwrap();
    let first = hops.iter().find(|h| h["from"] == "lens probe").unwrap();
    assert_eq!(
        (first["crossed"].as_u64(), first["lost"].as_u64()),
        (Some(12), Some(0))
    );
    let hop = hops
        .iter()
        .find(|h| h["from"] == "gateway" && h["lost"] != 0)
        .unwrap_or_else(|| panic!("{tally:#}"));
    assert_eq!(hop["lost"], 4, "{hop:#}");
    assert_eq!(hop["rules"]["lost-context"], 4, "{hop:#}");
    // Where the losses concentrate: planner-2, every request it received.
    let worst = &hop["instances"][0];
    assert_eq!(
        (&worst["instance"], &worst["lost"], &worst["crossed"]),
        (&"planner-2".into(), &4.into(), &4.into()),
        "{hop:#}"
    );

    // The same, in words.
    let (url, services) = pool(true).await;
    let (code, text) = probe_text(&url, &services, 3 * 12, &args).await;
    assert_eq!(code, Some(1));
    assert!(
        text.contains("gateway -> planner (http): 8 of 12 kept, 4 of 12 lost (lost-context 4; planner instance planner-2: 4 of 4)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn repeated_requests_through_a_healthy_pool_exit_0() {
    let (url, services) = pool(false).await;
    let (code, tally) = probe(
        &url,
        &services,
        3 * 9,
        &["--repeat", "9", "--concurrency", "3"],
    )
    .await;
    assert_eq!(code, Some(0), "{tally:#}");
    assert_eq!(tally["lost"], 0);
    let hop = tally["hops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["from"] == "gateway")
        .unwrap();
    assert_eq!(
        (hop["crossed"].as_u64(), hop["lost"].as_u64()),
        (Some(9), Some(0)),
        "{hop:#}"
    );
    assert_eq!(hop["instances"].as_array().unwrap().len(), 3, "{hop:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unsampled_request_that_stays_unsampled_exits_0_and_says_the_hops_stayed_silent() {
    let (url, services) = chain(Proxy::Pass).await;
    // The sampled request that shows the route: 3 spans; the unsampled one: none.
    let (code, route) = probe(&url, &services, 3, &["--unsampled"]).await;
    assert_eq!(code, Some(0), "{route:#}");
    assert!(
        route["sent"]["traceparent"]
            .as_str()
            .unwrap()
            .ends_with("-02"),
        "{route:#}"
    );
    assert_eq!(route["spans"], 0, "{route:#}");
    assert_eq!(route["sampling"]["forced"], Value::Null, "{route:#}");
    assert_eq!(
        (
            route["sampling"]["silent_hops"].as_u64(),
            route["sampling"]["hops"].as_u64()
        ),
        (Some(2), Some(2)),
        "{route:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hop_that_forces_the_sampled_flag_is_sampling_forced() {
    let (url, services) = chain(Proxy::ForceSampled).await;
    // 3 spans of the sampled request, and the planner's span of the unsampled one.
    let (code, route) = probe(&url, &services, 4, &["--unsampled"]).await;
    assert_eq!(code, Some(1), "{route:#}");
    let forced = &route["sampling"]["forced"];
    assert_eq!(
        (&forced["from"], &forced["to"]),
        (&"gateway".into(), &"planner".into()),
        "{route:#}"
    );
    assert_eq!(forced["flags"], "01", "{route:#}");
    assert_eq!(
        route["sampling"]["broken"],
        serde_json::json!(["sampling-forced"])
    );
    // The gateway kept the flag: its hop stayed silent.
    assert_eq!(
        (
            route["sampling"]["silent_hops"].as_u64(),
            route["sampling"]["hops"].as_u64()
        ),
        (Some(1), Some(2)),
        "{route:#}"
    );

    let (url, services) = chain(Proxy::ForceSampled).await;
    let (code, text) = probe_text(&url, &services, 4, &["--unsampled"]).await;
    assert_eq!(code, Some(1));
    assert!(
        text.contains("SAMPLING FORCED: gateway -> planner (http): planner recorded a span of the unsampled request")
            && text.contains("1 of 2 hops stayed silent as it should"),
        "{text}"
    );

    // Allowed: reported, exit 0.
    let (url, services) = chain(Proxy::ForceSampled).await;
    let (code, _) = probe(
        &url,
        &services,
        4,
        &["--unsampled", "--allow", "sampling-forced"],
    )
    .await;
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn repeated_unsampled_requests_count_the_forced_ones() {
    let (url, services) = chain(Proxy::ForceSampled).await;
    let (code, tally) = probe(
        &url,
        &services,
        3 + 5,
        &["--unsampled", "--repeat", "5", "--concurrency", "5"],
    )
    .await;
    assert_eq!(code, Some(1), "{tally:#}");
    assert_eq!(
        (tally["requests"].as_u64(), tally["lost"].as_u64()),
        (Some(5), Some(5)),
        "{tally:#}"
    );
    let hop = &tally["hops"][0];
    assert_eq!(
        (&hop["from"], &hop["to"], &hop["rules"]["sampling-forced"]),
        (&"gateway".into(), &"planner".into(), &5.into()),
        "{tally:#}"
    );
    assert_eq!(
        (tally["silent_hops"].as_u64(), tally["silent_of"].as_u64()),
        (Some(5), Some(10)),
        "{tally:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_that_uses_the_last_requests_context_is_context_bleed() {
    let (url, services) = leaky(false).await;
    let args = ["--repeat", "4", "--concurrency", "2"];
    let (code, tally) = probe(&url, &services, 3 * 4, &args).await;
    assert_eq!(code, Some(1), "{tally:#}");
    let bleeds = tally["bleeds"].as_array().unwrap();
    assert_eq!(bleeds.len(), 2, "{tally:#}");
    for bleed in bleeds {
        assert_eq!(
            (&bleed["from"], &bleed["to"], &bleed["to_instance"]),
            (&"gateway".into(), &"planner".into(), &"planner-1".into()),
            "{bleed:#}"
        );
        assert_ne!(bleed["request"], bleed["into"]);
    }
    assert_eq!(tally["lost"], 4, "{tally:#}");
    let hop = tally["hops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["from"] == "gateway")
        .unwrap();
    assert_eq!(hop["rules"]["context-bleed"], 2, "{hop:#}");

    let (url, services) = leaky(false).await;
    let (code, text) = probe_text(&url, &services, 3 * 4, &args).await;
    assert_eq!(code, Some(1));
    assert!(
        text.contains("CONTEXT BLEED: gateway -> planner (http): a call of request "),
        "{text}"
    );
    assert!(text.contains("planner instance planner-1)"), "{text}");

    // Allowed: reported nowhere as a loss, exit 0.
    let (url, services) = leaky(false).await;
    let (code, tally) = probe(
        &url,
        &services,
        3 * 4,
        &[
            "--repeat",
            "4",
            "--concurrency",
            "2",
            "--allow",
            "context-bleed",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{tally:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_requests_sharing_a_trace_through_a_link_are_no_bleed() {
    // The same shape of traces, but the call goes out from a batch span that links to the
    // request it serves: on purpose.
    let (url, services) = leaky(true).await;
    let (code, tally) = probe(
        &url,
        &services,
        4 * 4,
        &["--repeat", "4", "--concurrency", "2"],
    )
    .await;
    assert_eq!(tally["bleeds"], serde_json::json!([]), "{tally:#}");
    assert_eq!(code, Some(0), "{tally:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn behind_nginx_round_robin_the_replica_that_drops_the_headers_is_named() {
    let Some(binary) = nginx_binary() else {
        return;
    };
    let args = ["--repeat", "12", "--concurrency", "3"];
    let (_nginx, url, services) = nginx_chain(&binary, true).await;
    let (code, tally) = probe(&url, &services, 3 * 12, &args).await;
    assert_eq!(code, Some(1), "{tally:#}");
    assert_eq!(tally["lost"], 4, "{tally:#}");
    let hops = tally["hops"].as_array().unwrap();
    // One hop, gateway -> planner: the doctor pairs the four new traces the bad replica started
    // with the gateway's calls by request and time (behind the balancer the addresses differ),
    // so the losses are named where they concentrate, planner-3: 4 of 4.
    let hop = hops
        .iter()
        .find(|h| h["from"] == "gateway" && h["to"] == "planner")
        .unwrap_or_else(|| panic!("{tally:#}"));
    assert_eq!(
        (hop["crossed"].as_u64(), hop["lost"].as_u64()),
        (Some(12), Some(4)),
        "{hop:#}"
    );
    assert_eq!(hop["rules"]["lost-context"], 4, "{hop:#}");
    let mut instances: Vec<(&str, u64, u64)> = hop["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["instance"].as_str().unwrap(),
                i["crossed"].as_u64().unwrap(),
                i["lost"].as_u64().unwrap(),
            )
        })
        .collect();
    instances.sort_unstable();
    assert_eq!(
        instances,
        [
            ("planner-1", 4, 0),
            ("planner-2", 4, 0),
            ("planner-3", 4, 4)
        ],
        "{hop:#}"
    );
    assert!(
        !hops
            .iter()
            .any(|h| h["from"] == "gateway" && h["to"].is_null()),
        "no unpaired receiver: {tally:#}"
    );

    // The healthy pool: exit 0.
    let (_nginx, url, services) = nginx_chain(&binary, false).await;
    let (code, tally) = probe(&url, &services, 3 * 12, &args).await;
    assert_eq!(code, Some(0), "{tally:#}");
}

/// `lens probe ARGS` with its receivers on free ports: exit code, stdout, stderr, and how long
/// it took.
fn probe_alone(args: &[&str]) -> (Option<i32>, String, String, Duration) {
    let mut all = vec!["--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"];
    all.extend_from_slice(args);
    probe_alone_at(&all)
}

/// `lens probe ARGS`: exit code, stdout, stderr, and how long it took.
fn probe_alone_at(args: &[&str]) -> (Option<i32>, String, String, Duration) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_lens"))
        .arg("probe")
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
        started.elapsed(),
    )
}

#[test]
fn an_address_that_refuses_is_a_clear_error_and_exit_2() {
    // A port nothing listens on: taken from the OS, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/x");
    let (code, out, err, _) = probe_alone(&[&url]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("GET {url}: cannot connect")), "{err}");
    for target in [
        format!("grpc://127.0.0.1:{port}"),
        format!("nats://127.0.0.1:{port}/jobs"),
    ] {
        let (code, _, err, _) = probe_alone(&["--timeout", "5", &target]);
        assert_eq!(code, Some(2), "{target}: {err}");
        assert!(err.contains(": cannot connect"), "{target}: {err}");
    }
    assert!(out.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_times_out_is_exit_2_within_the_timeout() {
    // A server that accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let url = format!("http://{addr}/slow");
    let (code, _, err, took) =
        tokio::task::block_in_place(|| probe_alone(&["--timeout", "1", &url]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no answer within 1 s (--timeout)"), "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_that_never_exports_is_unseen_and_exit_2_after_the_wait() {
    let addr = serve(Router::new().route("/x", axum::routing::get(|| async { "ok" }))).await;
    let url = format!("http://{addr}/x");
    let (code, out, err, took) =
        tokio::task::block_in_place(|| probe_alone(&["--quiet-for", "1", "--wait", "2", &url]));
    assert_eq!(code, Some(2), "{err}");
    assert!(out.contains("lens probe -> ? (http): not seen"), "{out}");
    assert!(err.contains("no service exported a span of trace"), "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn bad_arguments_are_usage_errors() {
    for (args, says) in [
        (vec!["https://127.0.0.1:1/"], "https is not supported"),
        (vec!["127.0.0.1:1"], "expected http://HOST"),
        (vec!["grpc://h:1/Check"], "not a gRPC method"),
        (vec!["nats://h:4222"], "a subject to publish to"),
        (
            vec!["-H", "no colon", "http://h/"],
            "expected `Name: value`",
        ),
        (
            vec!["-X", "BAD METHOD", "http://h/"],
            "is not an HTTP method",
        ),
        (
            vec!["--allow", "nope", "http://h/"],
            "the rules: lost-context",
        ),
        (
            vec!["-d", "@/nonexistent/body", "http://h/"],
            "cannot read the --data file",
        ),
    ] {
        let (code, _, err, _) = probe_alone(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_text_report_names_each_hop_in_order_and_what_broke() {
    let (url, services) = chain(Proxy::DropAll).await;
    let (code, out) = probe_text(&url, &services, 3, &[]).await;
    assert_eq!(code, Some(1));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("trace "), "{out}");
    assert!(
        lines[0].contains("tracestate lens=probe,rojo=00f067aa0ba902b7, baggage keys lens.probe"),
        "{out}"
    );
    assert!(
        lines[1].starts_with(" 1. lens probe -> gateway (http): trace kept, parent kept, flags 03 kept, tracestate kept, baggage kept"),
        "{out}"
    );
    assert!(
        lines[2].starts_with(" 2. gateway -> planner (http): TRACE LOST: planner started trace "),
        "{out}"
    );
    assert!(lines[2].ends_with("(it received no traceparent)"), "{out}");
    println!("{out}");
}

// ---- gRPC and NATS targets ----

/// A gRPC service `lens.test.Health/Check` (JSON `null` in, `null` out) behind lens-tonic's
/// server layer with `policy`; returns its address.
async fn grpc_service(service: &Service, policy: lens_core::policy::InboundPolicy) -> SocketAddr {
    use std::convert::Infallible;
    use std::task::{Context, Poll};

    #[derive(Clone)]
    struct Health;
    impl tonic::server::NamedService for Health {
        const NAME: &'static str = "lens.test.Health";
    }
    #[derive(Clone)]
    struct Check;
    impl tonic::server::UnaryService<()> for Check {
        type Response = ();
        type Future = std::future::Ready<Result<tonic::Response<()>, tonic::Status>>;
        fn call(&mut self, _: tonic::Request<()>) -> Self::Future {
            std::future::ready(Ok(tonic::Response::new(())))
        }
    }
    impl tower_service::Service<http::Request<tonic::body::Body>> for Health {
        type Response = http::Response<tonic::body::Body>;
        type Error = Infallible;
        type Future = std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>,
        >;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
            Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(lens_tonic::JsonCodec::<(), ()>::new());
                Ok(grpc.unary(Check, request).await)
            })
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let layer = lens_tonic::ServerLayer::new()
        .with_tracer(opentelemetry::trace::TracerProvider::tracer(
            &service.provider,
            "lens-tonic",
        ))
        .with_inbound_policy(policy)
        .with_baggage_keys(true);
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .layer(layer)
            .add_service(Health)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await
            .unwrap();
    });
    addr
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grpc_call_carries_the_context_in_its_metadata() {
    let trainer = Service::new("trainer");
    let addr = grpc_service(&trainer, lens_core::policy::InboundPolicy::trust_all()).await;
    let target = format!("grpc://{addr}/lens.test.Health/Check");
    let (code, route) = probe(&target, std::slice::from_ref(&trainer), 1, &["-d", "null"]).await;
    assert_eq!(code, Some(0), "{route:#}");
    let first = hop(&route, "lens probe", "trainer");
    assert_healthy(first);
    assert_eq!(first["kind"], "grpc");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grpc_server_that_ignores_the_context_loses_the_first_hop() {
    let trainer = Service::new("trainer");
    let addr = grpc_service(&trainer, lens_core::policy::InboundPolicy::ignore_all()).await;
    let target = format!("grpc://{addr}/lens.test.Health/Check");
    let (code, route) = probe(&target, std::slice::from_ref(&trainer), 1, &["-d", "null"]).await;
    assert_eq!(code, Some(1), "{route:#}");
    // The doctor paired the probe's own CLIENT span with the server's new root, by method and
    // address.
    let lost = hop(&route, "lens probe", "trainer");
    assert_eq!(
        lost["broken"],
        serde_json::json!(["lost-context"]),
        "{lost:#}"
    );
    assert!(
        lost["trace"]["lost"]["cause"]
            .as_str()
            .unwrap()
            .starts_with("untrusted"),
        "{lost:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_nats_message_carries_the_context_in_its_headers() {
    let Some(nats) = lens_testkit::nats::NatsServer::start() else {
        return;
    };
    let worker = Service::new("rollout-worker");
    let client = async_nats::connect(nats.url()).await.unwrap();
    let subscriber = client.subscribe("jobs.rollout").await.unwrap();
    client.flush().await.unwrap();
    let mut jobs = lens_nats::Consumer::new()
        .with_tracer(opentelemetry::trace::TracerProvider::tracer(
            &worker.provider,
            "lens-nats",
        ))
        .with_baggage_keys(true)
        .subscriber(&client, subscriber);
    tokio::spawn(async move {
        use futures_util::StreamExt as _;
        while let Some(job) = jobs.next().await {
            drop(job);
        }
    });
    let target = format!("nats://127.0.0.1:{}/jobs.rollout", nats.port());
    let (code, route) = probe(&target, std::slice::from_ref(&worker), 1, &["-d", "job 1"]).await;
    assert_eq!(code, Some(0), "{route:#}");
    let first = hop(&route, "lens probe", "rollout-worker");
    assert_healthy(first);
    assert_eq!(first["kind"], "messaging");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_watch_the_probe_reads_the_route_from_a_running_lens_watch() {
    let watch = watch_support::Watch::start(&[]);
    let base = format!("http://{}", watch.http);
    // A lost hop: lens watch pairs it, and the probe follows the pairing to the new trace.
    let (url, services) = chain(Proxy::DropAll).await;
    let (code, route) = probe(&url, &services, 3, &["--watch", &base]).await;
    assert_eq!(code, Some(1), "{route:#}");
    assert_healthy(hop(&route, "lens probe", "gateway"));
    let lost = hop(&route, "gateway", "planner");
    assert_eq!(
        lost["broken"],
        serde_json::json!(["lost-context"]),
        "{lost:#}"
    );
    assert_eq!(lost["trace"]["lost"]["cause"], "none");

    // Healthy through the same lens watch.
    let (url, services) = chain(Proxy::Pass).await;
    let (code, route) = probe(&url, &services, 3, &["--watch", &base]).await;
    assert_eq!(code, Some(0), "{route:#}");
    assert_healthy(hop(&route, "gateway", "planner"));

    // Nothing answering at the address: exit 2 before any request.
    let (code, _, err, _) =
        probe_alone_at(&["--watch", "http://127.0.0.1:9", "http://127.0.0.1:9/"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("no lens watch answers at http://127.0.0.1:9"),
        "{err}"
    );
}
