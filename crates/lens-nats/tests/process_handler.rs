//! `Processing::process`: an async handler returning `Result`, its `Err` and its panic
//! recorded on the `process` span as every lens adapter records a handler's failure;
//! `fail` callable while the span is current; `Producer` is `Clone`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Setup, attr, named};
use futures_util::{FutureExt, StreamExt};
use opentelemetry::trace::{Status, TraceContextExt};

#[tokio::test]
async fn an_err_is_recorded_on_the_span() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut jobs = setup
        .consumer()
        .subscriber(&setup.client, setup.client.subscribe("jobs").await.unwrap());
    let producer = lens_nats::Producer::new().with_tracer(setup.tracer());
    let traced = producer.clone().client(setup.client.clone());
    traced.publish("jobs", vec![0xff].into()).await.unwrap();
    let job = jobs.next().await.unwrap();
    let span_id = job.context().span().span_context().span_id();
    let result = job
        .process(async |job| {
            // The process span is current in the handler.
            assert_eq!(
                opentelemetry::Context::current()
                    .span()
                    .span_context()
                    .span_id(),
                span_id
            );
            std::str::from_utf8(&job.payload).map(str::len)
        })
        .await;
    assert!(result.is_err());
    let spans = setup.recorder.wait_for(2).await;
    let process = named(&spans, "process jobs");
    assert_eq!(
        attr(process, "error.type"),
        Some("core::str::error::Utf8Error".into())
    );
    assert!(matches!(process.status, Status::Error { .. }));
}

#[tokio::test]
async fn ok_leaves_the_span_unset() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut jobs = setup
        .consumer()
        .subscriber(&setup.client, setup.client.subscribe("jobs").await.unwrap());
    setup.producer().publish("jobs", "x".into()).await.unwrap();
    let job = jobs.next().await.unwrap();
    // A handler's future can be spawned.
    let handled = tokio::spawn(job.process(async |job| {
        tokio::task::yield_now().await;
        Ok::<_, std::io::Error>(job.payload.len())
    }));
    let n = handled.await.unwrap().unwrap();
    assert_eq!(n, 1);
    let spans = setup.recorder.wait_for(2).await;
    let process = named(&spans, "process jobs");
    assert_eq!(attr(process, "error.type"), None);
    assert_eq!(process.status, Status::Unset);
}

#[tokio::test]
async fn a_panic_is_recorded_and_goes_on() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut jobs = setup
        .consumer()
        .subscriber(&setup.client, setup.client.subscribe("jobs").await.unwrap());
    setup.producer().publish("jobs", "x".into()).await.unwrap();
    let job = jobs.next().await.unwrap();
    let panicked = std::panic::AssertUnwindSafe(
        job.process(async |_| -> Result<(), String> { panic!("handler bug") }),
    )
    .catch_unwind()
    .await;
    assert!(panicked.is_err(), "the panic goes on");
    let spans = setup.recorder.wait_for(2).await;
    let process = named(&spans, "process jobs");
    assert_eq!(attr(process, "error.type"), Some("panic".into()));
}

#[tokio::test]
async fn fail_inside_in_span() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut jobs = setup
        .consumer()
        .subscriber(&setup.client, setup.client.subscribe("jobs").await.unwrap());
    setup.producer().publish("jobs", "x".into()).await.unwrap();
    let job = jobs.next().await.unwrap();
    job.in_span(async { job.fail("rejected", "bad job") }).await;
    drop(job);
    let spans = setup.recorder.wait_for(2).await;
    let process = named(&spans, "process jobs");
    assert_eq!(attr(process, "error.type"), Some("rejected".into()));
    assert!(matches!(&process.status, Status::Error { description } if description == "bad job"));
}
