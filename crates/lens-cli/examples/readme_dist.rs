//! lens-dist: one trace across four ranks, stage spans linked to the broadcast context.
use lens_dist::{Collective, ThreadGroup, broadcast_trace_context, create_linked_span};
use opentelemetry::trace::{Span, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracerProvider;

fn main() {
    let provider = SdkTracerProvider::builder().build();
    std::thread::scope(|s| {
        for comm in ThreadGroup::new(4) {
            // Ranks as threads here; MpiCollective or NcclCollective in a real job.
            let tracer = provider.tracer("job");
            s.spawn(move || -> Result<(), lens_dist::DistError> {
                let step = (comm.rank() == 0).then(|| tracer.start("train_step"));
                let _guard = step.map(|span| Context::current_with_span(span).attach());
                // Rank 0 sends its context; every rank gets the same carrier back.
                let carrier = broadcast_trace_context(&comm, comm.rank(), 0)?;
                let rank = KeyValue::new("rank", comm.rank() as i64);
                create_linked_span(&tracer, "pp_stage", &carrier, [rank]).end();
                Ok(())
            });
        }
    });
}
