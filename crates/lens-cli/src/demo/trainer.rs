//! The demo's trainer: a tonic gRPC service whose one method runs a training step (the remote
//! call, the stream, the ranks, the rollout job).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use lens_tonic::{JsonCodec, ServerLayer};
use opentelemetry::Context;
use opentelemetry_sdk::trace::SdkTracer;
use serde::{Deserialize, Serialize};
use tonic::body::Body;
use tonic::server::{NamedService, UnaryService};

use super::error::DemoError;
use super::step::StepContext;
use super::training::{remote_generate, train_step};

/// The gRPC service and method of the trainer.
const TRAINER_SERVICE: &str = "lens.demo.Trainer";
pub(super) const STEP_PATH: &str = "/lens.demo.Trainer/Step";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct StepRequest {
    pub(super) prompt: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct StepReply {
    pub(super) loss: f64,
    pub(super) tokens: usize,
}

#[derive(Clone)]
pub(super) struct Trainer {
    pub(super) step: StepContext,
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

pub(super) async fn serve_trainer(
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
