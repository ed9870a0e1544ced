//! The trainer's work in the demo: the Ray-style remote call to the rollout worker, and one
//! training step over the pipeline ranks (the context broadcast to every rank, activations
//! handed stage to stage with NCCL context frames, each stage linked to the previous one).

use std::sync::mpsc;

use lens_core::{LensContextExt, extract_context};
use lens_dist::{Remote, ThreadComm, ThreadGroup, broadcast_trace_context, create_linked_span};
use lens_nccl::FrameCodec;
use lens_tonic::RemoteCall;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;

use super::error::DemoError;
use super::step::{ACTIVATIONS, GenerateArgs, RANKS, StepContext};

/// The Ray-style remote call: the trainer dispatches `RolloutWorker.generate` with the current
/// context in `_otel_carrier`; the call crosses as JSON bytes; the worker runs it in a span whose
/// parent is that carrier.
pub(super) async fn remote_generate(
    worker: &SdkTracer,
    cx: &Context,
    prompt: String,
) -> Result<usize, tonic::Status> {
    let call = {
        let _guard = cx.clone().attach();
        lens_tonic::dispatch_with_context(GenerateArgs { prompt })
    };
    let wire = serde_json::to_vec(&call).map_err(|e| tonic::Status::internal(e.to_string()))?;
    let worker = worker.clone();
    let handle = tokio::spawn(async move {
        let call: RemoteCall<GenerateArgs> =
            serde_json::from_slice(&wire).map_err(|e| tonic::Status::internal(e.to_string()))?;
        let RemoteCall { args, carrier } = call;
        let tokens = lens_tonic::traced_remote_call_with_tracer(
            &worker,
            "RolloutWorker.generate",
            carrier.as_ref(),
            async move {
                let cx = Context::current();
                let tokens = args.prompt.split_whitespace().count() * 16;
                cx.span()
                    .set_attribute(KeyValue::new("rollout.tokens", tokens as i64));
                tokens
            },
        )
        .await;
        Ok::<usize, tonic::Status>(tokens)
    });
    handle
        .await
        .map_err(|e| tonic::Status::internal(e.to_string()))?
}

/// One training step: a `train_step` span, its context broadcast to the ranks, activations
/// handed stage to stage with context frames; returns the loss from the last stage.
pub(super) async fn train_step(
    tracers: &StepContext,
    cx: &Context,
    tokens: usize,
) -> Result<f64, tonic::Status> {
    let span = tracers
        .trainer
        .span_builder("train_step")
        .with_kind(SpanKind::Internal)
        .with_attributes([
            KeyValue::new("pp.ranks", RANKS as i64),
            KeyValue::new("rollout.tokens", tokens as i64),
        ])
        .start_with_context(&tracers.trainer, cx);
    let step_cx = cx.with_span(span);
    let ranks = tracers.ranks.clone();
    let rank0_cx = step_cx.clone();
    let result = tokio::task::spawn_blocking(move || run_pipeline(&ranks, rank0_cx, tokens)).await;
    let result = match result {
        Ok(r) => r,
        Err(e) => Err(DemoError::Rank {
            rank: 0,
            message: e.to_string(),
        }),
    };
    match &result {
        Ok(loss) => step_cx
            .span()
            .set_attribute(KeyValue::new("train.loss", *loss)),
        Err(e) => step_cx.span().set_status(Status::error(e.to_string())),
    }
    step_cx.span().end();
    result.map_err(|e| tonic::Status::internal(e.to_string()))
}

/// What one stage hands to the next: the context frame and the activations (one NCCL group
/// call in a real job).
struct Handoff {
    frame: Vec<u8>,
    activations: Vec<f32>,
}

/// The ranks as threads of one process: rank 0 holds the step's context and broadcasts it;
/// each stage links to the previous stage's span through the context frame it received.
fn run_pipeline(tracers: &[SdkTracer], step_cx: Context, tokens: usize) -> Result<f64, DemoError> {
    let comms = ThreadGroup::new(tracers.len());
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..tracers.len())
        .map(|_| mpsc::channel::<Handoff>())
        .unzip();
    // Stage r receives on receivers[r] and sends on senders[r + 1].
    let mut receivers: Vec<Option<mpsc::Receiver<Handoff>>> =
        receivers.into_iter().map(Some).collect();
    let mut next: Vec<Option<mpsc::Sender<Handoff>>> =
        senders.into_iter().skip(1).map(Some).collect();
    next.push(None);
    std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .zip(tracers)
            .enumerate()
            .map(|(rank, (comm, tracer))| {
                let input = if rank == 0 {
                    None
                } else {
                    receivers[rank].take()
                };
                let output = next[rank].take();
                let cx = (rank == 0).then(|| step_cx.clone());
                s.spawn(move || stage(rank, &comm, tracer, cx, input, output, tokens))
            })
            .collect();
        let mut loss = None;
        for (rank, handle) in handles.into_iter().enumerate() {
            match handle.join() {
                Ok(Ok(Some(l))) => loss = Some(l),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(DemoError::Rank {
                        rank,
                        message: "the rank's thread panicked".into(),
                    });
                }
            }
        }
        loss.ok_or(DemoError::Rank {
            rank: tracers.len().saturating_sub(1),
            message: "no loss from the last stage".into(),
        })
    })
}

/// One pipeline rank. Returns the loss on the last stage.
fn stage(
    rank: usize,
    comm: &ThreadComm,
    tracer: &SdkTracer,
    source_cx: Option<Context>,
    input: Option<mpsc::Receiver<Handoff>>,
    output: Option<mpsc::Sender<Handoff>>,
    tokens: usize,
) -> Result<Option<f64>, DemoError> {
    let rank_err = |message: String| DemoError::Rank { rank, message };
    // Every rank joins the broadcast; rank 0 sends the step's context, the others receive it and
    // work under it (their spans get the step as remote parent).
    let carrier = {
        let _guard = source_cx.clone().map(Context::attach);
        broadcast_trace_context(comm, rank, 0)?
    };
    let parent = match (source_cx, &carrier) {
        (Some(cx), _) => cx,
        (None, Some(carrier)) => extract_context(carrier),
        (None, None) => Context::new(),
    };
    let _guard = parent.clone().attach();

    let codec = FrameCodec::default();
    let (previous, mut activations) = match input {
        Some(rx) => {
            let handoff = rx
                .recv()
                .map_err(|_| rank_err("the previous stage has gone".into()))?;
            let previous = codec
                .decode(&handoff.frame)
                .map(|carrier| extract_context(&carrier))
                .map_err(|e| rank_err(format!("context frame: {e}")))?;
            (Some(previous), handoff.activations)
        }
        None => (None, initial_activations(tokens)),
    };
    let remote = match &previous {
        Some(cx) => Remote::from(cx),
        None => Remote::None,
    };
    let mut attributes = vec![
        KeyValue::new("pp.stage", rank as i64),
        KeyValue::new("rank", rank as i64),
    ];
    if let Some(tenant) = parent.baggage_value("tenant") {
        attributes.push(KeyValue::new("tenant", tenant));
    }
    let span = create_linked_span(tracer, format!("pp_stage {rank}"), remote, attributes);
    let stage_cx = parent.with_span(span);

    forward(&mut activations, rank);
    let result = match output {
        Some(tx) => {
            let frame = codec
                .encode(&stage_cx)
                .map_err(|e| rank_err(format!("context frame: {e}")))?;
            stage_cx
                .span()
                .set_attribute(KeyValue::new("nccl.frame.bytes", frame.len() as i64));
            tx.send(Handoff { frame, activations })
                .map_err(|_| rank_err("the next stage has gone".into()))?;
            None
        }
        None => {
            let loss = activations
                .iter()
                .map(|a| f64::from(*a).powi(2))
                .sum::<f64>()
                / activations.len().max(1) as f64;
            stage_cx
                .span()
                .set_attribute(KeyValue::new("train.loss", loss));
            Some(loss)
        }
    };
    stage_cx.span().end();
    Ok(result)
}

fn initial_activations(tokens: usize) -> Vec<f32> {
    (0..ACTIVATIONS)
        .map(|i| ((i + tokens) % 97) as f32 / 97.0 - 0.5)
        .collect()
}

/// A stand-in for a pipeline stage's forward pass: a few passes of a small nonlinearity.
fn forward(activations: &mut [f32], rank: usize) {
    let w = 0.9 + rank as f32 * 0.01;
    for _ in 0..32 {
        for a in activations.iter_mut() {
            *a = (*a * w + 0.01).tanh();
        }
    }
}
