//! The demo's services, all in this process on 127.0.0.1:
//!
//! ```text
//! lens-demo ──HTTP──▶ gateway (axum) ──HTTP (reqwest)──▶ planner (axum) ──gRPC──▶ trainer (tonic)
//!   trainer ──remote call (`_otel_carrier`)──▶ rollout-worker
//!   trainer ──train_step: broadcast to 4 ranks──▶ trainer-rank-0..3
//!   rank 0 ──activations + context frame──▶ rank 1 ──▶ rank 2 ──▶ rank 3
//!   trainer ──NATS `rollout.jobs.<run>` (with --nats)──▶ rollout-worker
//!   trainer ──HTTP, SSE (with --stream)──▶ rollout-worker ──HTTP, SSE──▶ inference-engine
//! ```
//!
//! Each service has its own tracer provider (its own `service.name`); all export into one
//! [`Collector`].

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::serve::ListenerExt as _;
use axum::{Json, Router};
use lens_axum::{RequestContext, ServerLayer as HttpServerLayer};
use lens_core::LensContextExt;
use lens_dist::DistError;
use lens_reqwest::{ClientMiddleware, FilterDecision};
use lens_tonic::{ClientLayer, ClientService, JsonCodec, ServerLayer};
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, TraceId, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use reqwest_middleware::ClientWithMiddleware;
use serde::{Deserialize, Serialize};
use tonic::body::Body;
use tonic::server::{NamedService, UnaryService};
use tonic::transport::{Channel, Endpoint};
use tower_layer::Layer as _;

use super::collect::{Collector, Service};
use super::queue::{ROLLOUT_JOBS, RolloutJobs};
use super::stream::StreamGenerate;
use super::training::{remote_generate, train_step};
use crate::hops::BROADCAST_SCOPE;

/// Pipeline ranks of the training step.
pub(crate) const RANKS: usize = 4;

/// The gRPC service and method of the trainer.
const TRAINER_SERVICE: &str = "lens.demo.Trainer";
const STEP_PATH: &str = "/lens.demo.Trainer/Step";

/// Size of the activations handed from stage to stage.
pub(super) const ACTIVATIONS: usize = 4096;

/// A hop of the demo that `lens demo --break HOP` sends without context: a client or producer
/// span (lens-reqwest's, lens-tonic's, lens-nats's) whose request or message goes out with no
/// `traceparent`, as from a client that records spans but does not inject. The other hops (the
/// remote call, the broadcast, the pipeline's links) carry their context in the payload, with no
/// client span for the doctor to pair a new root with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    /// The driver's reqwest call to the gateway (HTTP).
    DemoToGateway,
    /// The gateway's reqwest call to the planner (HTTP).
    GatewayToPlanner,
    /// The planner's gRPC call to the trainer (tonic).
    PlannerToTrainer,
    /// The trainer's rollout job to the rollout worker over NATS (`--nats` only).
    TrainerToRolloutJobs,
}

impl Hop {
    /// Every hop that can be broken, in the order a request crosses them.
    pub(crate) const ALL: [Hop; 4] = [
        Hop::DemoToGateway,
        Hop::GatewayToPlanner,
        Hop::PlannerToTrainer,
        Hop::TrainerToRolloutJobs,
    ];

    /// The sending service and what it sends to: the called service, or the queue.
    pub(crate) fn ends(self) -> (&'static str, &'static str) {
        match self {
            Hop::DemoToGateway => ("lens-demo", "gateway"),
            Hop::GatewayToPlanner => ("gateway", "planner"),
            Hop::PlannerToTrainer => ("planner", "trainer"),
            Hop::TrainerToRolloutJobs => ("trainer", ROLLOUT_JOBS),
        }
    }

    /// The sending and the receiving service.
    pub(crate) fn services(self) -> (&'static str, &'static str) {
        match self {
            Hop::TrainerToRolloutJobs => ("trainer", "rollout-worker"),
            other => other.ends(),
        }
    }

    /// Whether the hop exists only with `--nats`.
    pub(crate) fn needs_nats(self) -> bool {
        self == Hop::TrainerToRolloutJobs
    }

    /// `from->to`, as `--break` takes it.
    pub(crate) fn name(self) -> String {
        let (from, to) = self.ends();
        format!("{from}->{to}")
    }

    /// The hop named `from->to` (spaces around the arrow allowed).
    pub(crate) fn parse(value: &str) -> Option<Hop> {
        let (from, to) = value.split_once("->")?;
        Hop::ALL
            .into_iter()
            .find(|hop| hop.ends() == (from.trim(), to.trim()))
    }

    /// The client filter of the calling side: a span for every request, context injected
    /// unless this is the broken hop.
    fn filter(broken: Option<Hop>, hop: Hop) -> FilterDecision {
        FilterDecision {
            span: true,
            inject: broken != Some(hop),
        }
    }
}

/// What can go wrong while the demo runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DemoError {
    /// A demo server could not listen on 127.0.0.1.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(#[from] std::io::Error),
    /// An HTTP call failed.
    #[error("HTTP call to {service} failed: {message}")]
    Http {
        /// The called service.
        service: &'static str,
        /// What failed.
        message: String,
    },
    /// The gRPC call to the trainer failed.
    #[error("gRPC call to the trainer failed: {0}")]
    Grpc(#[from] tonic::Status),
    /// The trace-context broadcast between ranks failed.
    #[error("broadcast between ranks failed: {0}")]
    Dist(#[from] DistError),
    /// The gRPC channel to the trainer could not be set up.
    #[error("gRPC channel: {0}")]
    Channel(String),
    /// The trainer could not publish its rollout job, or the worker could not subscribe.
    #[error("NATS: {0}")]
    Nats(String),
    /// A pipeline rank failed.
    #[error("pipeline rank {rank}: {message}")]
    Rank {
        /// The rank.
        rank: usize,
        /// What failed.
        message: String,
    },
}

/// The demo's request body and every reply up the chain.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TrainRequest {
    pub(crate) prompt: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TrainReply {
    /// The trace id the gateway saw.
    pub(crate) trace_id: String,
    pub(crate) loss: f64,
    pub(crate) tokens: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct StepRequest {
    prompt: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct StepReply {
    loss: f64,
    tokens: usize,
}

/// The keyword arguments of the Ray-style remote call.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct GenerateArgs {
    pub(super) prompt: String,
}

/// All services, started; [`Demo::request`] sends one request through them.
pub(crate) struct Demo {
    client: ClientWithMiddleware,
    driver: SdkTracer,
    gateway_url: String,
    services: Vec<Service>,
}

impl Demo {
    /// Starts every service on 127.0.0.1 (port 0) and returns once they listen; the `broken`
    /// hop's client sends no context. With `nats`, the trainer also publishes a rollout job
    /// per step that the rollout worker consumes.
    pub(crate) async fn start(
        collector: &Collector,
        broken: Option<Hop>,
        nats: Option<&async_nats::Client>,
        stream: bool,
    ) -> Result<Demo, DemoError> {
        let driver = Service::new(collector, "lens-demo");
        let gateway = Service::new(collector, "gateway");
        let planner = Service::new(collector, "planner");
        let trainer = Service::new(collector, "trainer");
        let worker = Service::new(collector, "rollout-worker");
        let ranks: Vec<Service> = (0..RANKS)
            .map(|r| Service::new(collector, &format!("trainer-rank-{r}")))
            .collect();

        // `--stream`: the trainer reads the rollout worker's tokens as server-sent events, the
        // worker streaming them from an inference engine.
        let engine = stream.then(|| Service::new(collector, "inference-engine"));
        let stream = match &engine {
            Some(engine) => Some(StreamGenerate::start(&trainer, &worker, engine).await?),
            None => None,
        };

        let rollout_jobs = match nats {
            Some(client) => Some(RolloutJobs::start(client, &trainer, &worker, broken).await?),
            None => None,
        };

        // trainer: tonic server with the lens server layer.
        let trainer_addr = serve_trainer(
            Trainer {
                step: StepContext {
                    trainer: trainer.tracer("trainer"),
                    worker: worker.tracer(lens_tonic::RAY_TRACER_NAME),
                    ranks: ranks.iter().map(|r| r.tracer(BROADCAST_SCOPE)).collect(),
                    rollout_jobs,
                    stream,
                },
            },
            trainer.tracer(lens_tonic::TRACER_NAME),
            trainer.meter(lens_tonic::TRACER_NAME),
        )
        .await?;

        // planner: axum, calls the trainer over gRPC through the lens client layer.
        let channel = Endpoint::from_shared(format!("http://{trainer_addr}"))
            .map_err(|e| DemoError::Channel(e.to_string()))?
            .connect_lazy();
        let grpc = ClientLayer::new()
            .with_tracer(planner.tracer(lens_tonic::TRACER_NAME))
            .with_meter(planner.meter(lens_tonic::TRACER_NAME))
            .with_server_address(trainer_addr.ip().to_string(), trainer_addr.port())
            .with_filter(move |_: &lens_tonic::RequestInfo<'_>| {
                Hop::filter(broken, Hop::PlannerToTrainer)
            })
            .layer(channel);
        let planner_app = Router::new()
            .route("/plan", post(plan))
            .with_state(grpc)
            .layer(
                HttpServerLayer::new()
                    .with_tracer(planner.tracer("lens-axum"))
                    .with_meter(planner.meter("lens-axum")),
            );
        let planner_addr = serve_http(planner_app).await?;

        // gateway: axum, calls the planner through reqwest with the lens middleware.
        let gateway_state = Gateway {
            client: traced_client(&gateway, Hop::filter(broken, Hop::GatewayToPlanner)),
            planner_url: format!("http://{planner_addr}/plan"),
        };
        let gateway_app = Router::new()
            .route("/v1/train", post(train))
            .with_state(gateway_state)
            .layer(
                HttpServerLayer::new()
                    .with_tracer(gateway.tracer("lens-axum"))
                    .with_meter(gateway.meter("lens-axum")),
            );
        let gateway_addr = serve_http(gateway_app).await?;

        let mut services = vec![driver.clone(), gateway, planner, trainer, worker];
        services.extend(ranks);
        services.extend(engine);
        Ok(Demo {
            client: traced_client(&driver, Hop::filter(broken, Hop::DemoToGateway)),
            driver: driver.tracer("lens-demo"),
            gateway_url: format!("http://{gateway_addr}/v1/train"),
            services,
        })
    }

    /// Sends request number `n` to the gateway from a root span `demo request`; returns the
    /// trace id.
    pub(crate) async fn request(&self, n: usize) -> Result<(TraceId, TrainReply), DemoError> {
        let root = self
            .driver
            .span_builder("demo request")
            .with_kind(SpanKind::Internal)
            .with_attributes([KeyValue::new("demo.request", n as i64)])
            .start_with_context(&self.driver, &Context::new());
        let trace_id = root.span_context().trace_id();
        let cx = Context::new().with_span(root);
        let cx = cx
            .with_baggage_entry("demo.request", &n.to_string())
            .unwrap_or(cx);
        let result = post_json(
            &self.client,
            "gateway",
            &self.gateway_url,
            &TrainRequest {
                prompt: format!("request {n}: explain W3C trace context"),
            },
            cx.clone(),
        )
        .await;
        if let Err(e) = &result {
            cx.span().set_status(Status::error(e.to_string()));
        }
        cx.span().end();
        result.map(|reply| (trace_id, reply))
    }

    /// What every service's instruments recorded (the request durations of lens-axum,
    /// lens-reqwest and lens-tonic), one `ResourceMetrics` a service; the first error else.
    pub(crate) fn metrics(
        &self,
    ) -> Result<Vec<opentelemetry_sdk::metrics::data::ResourceMetrics>, String> {
        self.services.iter().map(Service::metrics).collect()
    }

    /// Flushes every service's provider.
    pub(crate) fn flush(&self) {
        for service in &self.services {
            // The simple processor exports as spans end; a failed flush loses nothing here.
            let _ = service.flush();
        }
    }
}

/// `service`'s reqwest client: lens-reqwest's spans and metrics, `filter` on every request.
fn traced_client(service: &Service, filter: FilterDecision) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            ClientMiddleware::new()
                .with_tracer(service.tracer("lens-reqwest"))
                .with_meter(service.meter("lens-reqwest"))
                .with_filter(move |_: &reqwest::Request| filter),
        )
        .build()
}

async fn post_json<B: Serialize, R: for<'de> Deserialize<'de>>(
    client: &ClientWithMiddleware,
    service: &'static str,
    url: &str,
    body: &B,
    cx: Context,
) -> Result<R, DemoError> {
    let http = |message: String| DemoError::Http { service, message };
    let response = client
        .post(url)
        .json(body)
        .with_extension(cx)
        .send()
        .await
        .map_err(|e| http(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        return Err(http(format!("{status}: {text}")));
    }
    response.json().await.map_err(|e| http(e.to_string()))
}

pub(super) async fn serve_http(app: Router) -> Result<SocketAddr, DemoError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    Ok(addr)
}

// ---- gateway ----

#[derive(Clone)]
struct Gateway {
    client: ClientWithMiddleware,
    planner_url: String,
}

type HandlerError = (StatusCode, String);

fn internal(e: impl std::fmt::Display) -> HandlerError {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// `POST /v1/train`: tags the request with the tenant (baggage) and asks the planner.
async fn train(
    State(gateway): State<Gateway>,
    request: RequestContext,
    Json(body): Json<TrainRequest>,
) -> Result<Json<TrainReply>, HandlerError> {
    let cx = request.context();
    let cx = cx
        .with_baggage_entry("tenant", "acme")
        .unwrap_or_else(|_| cx.clone());
    let step: StepReply = post_json(&gateway.client, "planner", &gateway.planner_url, &body, cx)
        .await
        .map_err(internal)?;
    Ok(Json(TrainReply {
        trace_id: request
            .trace_id()
            .map(|t| t.to_string())
            .unwrap_or_default(),
        loss: step.loss,
        tokens: step.tokens,
    }))
}

// ---- planner ----

type TrainerClient = ClientService<Channel>;

/// `POST /plan`: one training step on the trainer, over gRPC.
async fn plan(
    State(channel): State<TrainerClient>,
    request: RequestContext,
    Json(body): Json<TrainRequest>,
) -> Result<Json<StepReply>, HandlerError> {
    let mut grpc = tonic::client::Grpc::new(channel);
    let call = async move {
        grpc.ready().await.map_err(internal)?;
        grpc.unary(
            tonic::Request::new(StepRequest {
                prompt: body.prompt,
            }),
            http::uri::PathAndQuery::from_static(STEP_PATH),
            JsonCodec::<StepRequest, StepReply>::new(),
        )
        .await
        .map(tonic::Response::into_inner)
        .map_err(internal)
    };
    call.with_context(request.into_context()).await.map(Json)
}

// ---- trainer ----

/// The tracers a training step uses.
#[derive(Clone)]
pub(super) struct StepContext {
    pub(super) trainer: SdkTracer,
    pub(super) worker: SdkTracer,
    pub(super) ranks: Vec<SdkTracer>,
    /// With `--nats`: where the trainer publishes a rollout job after each step.
    pub(super) rollout_jobs: Option<RolloutJobs>,
    /// With `--stream`: the streaming hop to the rollout worker.
    pub(super) stream: Option<StreamGenerate>,
}

#[derive(Clone)]
struct Trainer {
    step: StepContext,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

impl NamedService for Trainer {
    const NAME: &'static str = TRAINER_SERVICE;
}

impl tower_service::Service<http::Request<Body>> for Trainer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // The lens server layer made the SERVER span current for this call.
        let step = Step {
            tracers: self.step.clone(),
            cx: Context::current(),
        };
        match request.uri().path() {
            STEP_PATH => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<StepReply, StepRequest>::new());
                Ok(grpc.unary(step, request).await)
            }),
            _ => Box::pin(
                async move { Ok(tonic::Status::unimplemented("no such method").into_http()) },
            ),
        }
    }
}

#[derive(Clone)]
struct Step {
    tracers: StepContext,
    /// The Context of the call (its SERVER span).
    cx: Context,
}

impl UnaryService<StepRequest> for Step {
    type Response = StepReply;
    type Future = BoxFuture<Result<tonic::Response<StepReply>, tonic::Status>>;

    fn call(&mut self, request: tonic::Request<StepRequest>) -> Self::Future {
        let cx = self.cx.clone();
        let tracers = self.tracers.clone();
        let prompt = request.into_inner().prompt;
        Box::pin(async move {
            let job = tracers.rollout_jobs.as_ref().map(|_| prompt.clone());
            let mut tokens = remote_generate(&tracers.worker, &cx, prompt.clone()).await?;
            if let Some(stream) = &tracers.stream {
                tokens = stream
                    .generate(&cx, &prompt)
                    .await
                    .map_err(tonic::Status::unavailable)?;
            }
            let loss = train_step(&tracers, &cx, tokens).await?;
            if let (Some(jobs), Some(job)) = (&tracers.rollout_jobs, job) {
                jobs.publish(&cx, &job)
                    .await
                    .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
            }
            Ok(tonic::Response::new(StepReply { loss, tokens }))
        })
    }
}

async fn serve_trainer(
    trainer: Trainer,
    tracer: SdkTracer,
    meter: opentelemetry::metrics::Meter,
) -> Result<SocketAddr, DemoError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    // Without TCP_NODELAY, the response trailers can wait for a delayed ACK (tens of ms).
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .layer(ServerLayer::new().with_tracer(tracer).with_meter(meter))
            .serve_with_incoming(trainer, incoming)
            .await;
    });
    Ok(addr)
}
