//! What `TracedBody` marks on a span as a response body goes through it: nothing for a
//! one-frame response; for a streamed one, when its head and its first chunk passed (events at
//! their times, attributes in seconds from the span's start), how many chunks and how it ended,
//! including a stream the peer abandoned or reset.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http_body::Frame;
use lens_span::stream::{
    CHUNKS, END, FIRST_CHUNK_EVENT, HEAD_EVENT, TIME_TO_FIRST_CHUNK, TIME_TO_HEAD,
};
use lens_span::{AtLastFrame, TracedBody};
use opentelemetry::Value;
use support::frames::{Frames, Reset, Spans, attribute, events, poll};

fn seconds(value: Option<Value>) -> f64 {
    match value {
        Some(Value::F64(s)) => s,
        other => panic!("a figure in seconds, got {other:?}"),
    }
}

/// Waits until the wall clock has moved past `t` (the marks are wall-clock times).
fn after(t: SystemTime) {
    while SystemTime::now() <= t {
        std::thread::yield_now();
    }
}

#[test]
fn one_frame_records_nothing_extra() {
    let spans = Spans::new();
    let mut body = TracedBody::new(Frames::data(1), Some(spans.server()), AtLastFrame);
    assert!(poll(&mut body).is_some());
    assert!(poll(&mut body).is_none());
    drop(body);
    let span = spans.ended();
    assert!(events(&span).is_empty(), "{:?}", span.events);
    for key in [TIME_TO_FIRST_CHUNK, TIME_TO_HEAD, CHUNKS, END] {
        assert_eq!(attribute(&span, key), None, "{key}");
    }
}

#[test]
fn one_frame_dropped_at_its_end_records_nothing_extra() {
    // hyper drops a server's body once it says it has ended, without polling its end.
    let spans = Spans::new();
    let mut body = TracedBody::new(Frames::data(1), Some(spans.server()), AtLastFrame);
    assert!(poll(&mut body).is_some());
    drop(body);
    let span = spans.ended();
    assert!(events(&span).is_empty());
    assert_eq!(attribute(&span, END), None);
}

#[test]
fn a_stream_marks_its_first_chunk_at_its_time() {
    let spans = Spans::new();
    let live = spans.server();
    let started = live.start_time();
    let mut body = TracedBody::new(Frames::data(3), Some(live), AtLastFrame);
    after(started + Duration::from_millis(2));
    let before_first = SystemTime::now();
    assert!(poll(&mut body).is_some());
    let after_first = SystemTime::now();
    assert!(poll(&mut body).is_some());
    assert!(poll(&mut body).is_some());
    assert!(poll(&mut body).is_none());
    let span = spans.ended();

    assert_eq!(events(&span), [FIRST_CHUNK_EVENT]);
    let at = span.events[0].timestamp;
    assert!(
        before_first <= at && at <= after_first,
        "the event is at the first frame"
    );
    let figure = seconds(attribute(&span, TIME_TO_FIRST_CHUNK));
    let expected = at.duration_since(span.start_time).unwrap().as_secs_f64();
    assert!((figure - expected).abs() < 1e-6, "{figure} vs {expected}");
    assert!(figure >= 0.002);
    assert_eq!(attribute(&span, CHUNKS), Some(Value::I64(3)));
    assert_eq!(attribute(&span, END), Some(Value::from("complete")));
    assert_eq!(
        attribute(&span, TIME_TO_HEAD),
        None,
        "a server has no head mark"
    );
    assert_eq!(
        span.start_time, started,
        "the span records the start the marks use"
    );
}

#[test]
fn a_client_stream_marks_its_head_then_its_first_chunk() {
    let spans = Spans::new();
    let live = spans.client();
    let started = live.start_time();
    after(started + Duration::from_millis(1));
    let head = SystemTime::now();
    let mut body = TracedBody::new(Frames::data(2), Some(live), AtLastFrame).with_head(head);
    after(head + Duration::from_millis(1));
    while poll(&mut body).is_some() {}
    let span = spans.ended();

    assert_eq!(events(&span), [HEAD_EVENT, FIRST_CHUNK_EVENT]);
    assert_eq!(span.events[0].timestamp, head);
    let to_head = seconds(attribute(&span, TIME_TO_HEAD));
    let to_first = seconds(attribute(&span, TIME_TO_FIRST_CHUNK));
    assert!(
        to_head >= 0.001 && to_first >= to_head + 0.001,
        "{to_head} {to_first}"
    );
    assert_eq!(attribute(&span, CHUNKS), Some(Value::I64(2)));
}

#[test]
fn a_client_one_frame_response_records_no_head_mark() {
    let spans = Spans::new();
    let head = SystemTime::now();
    let mut body =
        TracedBody::new(Frames::data(1), Some(spans.client()), AtLastFrame).with_head(head);
    while poll(&mut body).is_some() {}
    let span = spans.ended();
    assert!(events(&span).is_empty());
    assert_eq!(attribute(&span, TIME_TO_HEAD), None);
}

#[test]
fn a_stream_abandoned_after_three_chunks_ends_with_the_marks_it_reached() {
    let spans = Spans::new();
    let mut body = TracedBody::new(Frames::data(10), Some(spans.server()), AtLastFrame);
    for _ in 0..3 {
        assert!(poll(&mut body).is_some());
    }
    assert!(
        spans.exporter.get_finished_spans().unwrap().is_empty(),
        "still going"
    );
    drop(body); // the client went away
    let span = spans.ended();
    assert_eq!(events(&span), [FIRST_CHUNK_EVENT]);
    assert_eq!(attribute(&span, CHUNKS), Some(Value::I64(3)));
    assert_eq!(attribute(&span, END), Some(Value::from("abandoned")));
}

#[test]
fn a_stream_cut_after_its_first_chunk_still_counts_as_a_stream() {
    let spans = Spans::new();
    let mut body = TracedBody::new(Frames::data(5), Some(spans.server()), AtLastFrame);
    assert!(poll(&mut body).is_some());
    drop(body);
    let span = spans.ended();
    assert_eq!(events(&span), [FIRST_CHUNK_EVENT]);
    assert_eq!(attribute(&span, CHUNKS), Some(Value::I64(1)));
    assert_eq!(attribute(&span, END), Some(Value::from("abandoned")));
}

#[test]
fn a_reset_stream_ends_failed_with_its_marks() {
    let spans = Spans::new();
    let mut frames = Frames::data(3);
    frames.0.push_back(Err(Reset));
    frames
        .0
        .push_back(Ok(Frame::data(Bytes::from_static(b"never"))));
    let mut body =
        TracedBody::new(frames, Some(spans.client()), AtLastFrame).with_head(SystemTime::now());
    for _ in 0..3 {
        assert!(poll(&mut body).unwrap().is_ok());
    }
    assert!(poll(&mut body).unwrap().is_err());
    let span = spans.ended();
    assert_eq!(events(&span), [HEAD_EVENT, FIRST_CHUNK_EVENT]);
    assert_eq!(attribute(&span, CHUNKS), Some(Value::I64(3)));
    assert_eq!(attribute(&span, END), Some(Value::from("failed")));
    assert!(
        attribute(&span, "error.type").is_some(),
        "the failure is recorded too"
    );
}

#[test]
fn empty_data_frames_are_not_chunks() {
    let spans = Spans::new();
    let mut frames = Frames::data(1);
    frames.0.push_back(Ok(Frame::data(Bytes::new())));
    let mut body = TracedBody::new(frames, Some(spans.server()), AtLastFrame);
    while poll(&mut body).is_some() {}
    let span = spans.ended();
    assert!(events(&span).is_empty());
    assert_eq!(attribute(&span, CHUNKS), None);
}

#[test]
fn trailers_end_a_complete_stream() {
    let spans = Spans::new();
    let mut frames = Frames::data(2);
    frames
        .0
        .push_back(Ok(Frame::trailers(http::HeaderMap::new())));
    let mut body = TracedBody::new(frames, Some(spans.server()), AtLastFrame);
    while poll(&mut body).is_some() {}
    let span = spans.ended();
    assert_eq!(attribute(&span, END), Some(Value::from("complete")));
    assert_eq!(attribute(&span, CHUNKS), Some(Value::I64(2)));
}
