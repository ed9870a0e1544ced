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

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use lens_axum::{RequestContext, ServerLayer as HttpServerLayer};
use lens_core::LensContextExt;
use lens_tonic::{ClientLayer, ClientService, JsonCodec};
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, TraceId, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;
use reqwest_middleware::ClientWithMiddleware;
use serde::{Deserialize, Serialize};
use tonic::transport::{Channel, Endpoint};
use tower_layer::Layer as _;

use super::collect::{Collector, Service};
use super::error::DemoError;
use super::hop::Hop;
use super::queue::RolloutJobs;
use super::step::{RANKS, StepContext};
use super::stream::StreamGenerate;
use super::trainer::{STEP_PATH, StepReply, StepRequest, Trainer, serve_trainer};
use super::web::{post_json, serve_http, traced_client};
use crate::hops::BROADCAST_SCOPE;

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
