//! What a training step of the demo's trainer is given: its tracers, the pipeline's ranks and
//! activations, and the remote call's arguments.

use opentelemetry_sdk::trace::SdkTracer;
use serde::{Deserialize, Serialize};

use super::queue::RolloutJobs;
use super::stream::StreamGenerate;

/// Pipeline ranks of the training step.
pub(crate) const RANKS: usize = 4;

/// Size of the activations handed from stage to stage.
pub(super) const ACTIVATIONS: usize = 4096;

/// The keyword arguments of the Ray-style remote call.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct GenerateArgs {
    pub(super) prompt: String,
}

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
