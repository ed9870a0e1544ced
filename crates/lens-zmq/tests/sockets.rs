//! The `zmq` integration (feature `zmq`): PUSH/PULL, PUB/SUB (XPUB, so that the test knows the
//! subscription arrived instead of sleeping) and DEALER/ROUTER request-reply, over inproc, ipc
//! and tcp on 127.0.0.1 (port chosen by the system); and untraced peers on either side.
#![cfg(feature = "zmq")]
#![allow(clippy::unwrap_used)]

mod common;

use common::{Setup, attr};
use opentelemetry::trace::SpanId;

/// The three transports: an endpoint to bind, per test and transport.
fn endpoints(name: &str) -> Vec<String> {
    let dir = std::env::temp_dir();
    vec![
        format!("inproc://{name}"),
        format!(
            "ipc://{}/lens-zmq-{}-{name}.sock",
            dir.display(),
            std::process::id()
        ),
        "tcp://127.0.0.1:*".to_owned(),
    ]
}

/// Binds `socket` to `endpoint`, returning the endpoint a peer connects to.
fn bind(socket: &zmq::Socket, endpoint: &str) -> String {
    socket.bind(endpoint).unwrap();
    socket.get_last_endpoint().unwrap().unwrap()
}

fn pair(
    ctx: &zmq::Context,
    bound: zmq::SocketType,
    connected: zmq::SocketType,
    endpoint: &str,
) -> (zmq::Socket, zmq::Socket) {
    let a = ctx.socket(bound).unwrap();
    let at = bind(&a, endpoint);
    let b = ctx.socket(connected).unwrap();
    b.connect(&at).unwrap();
    (a, b)
}

#[test]
fn push_pull_over_every_transport() {
    for endpoint in endpoints("push-pull") {
        let setup = Setup::new();
        let ctx = zmq::Context::new();
        let (pull, push) = pair(&ctx, zmq::PULL, zmq::PUSH, &endpoint);
        let frames = vec![b"a".to_vec(), b"bc".to_vec()];
        setup
            .producer()
            .send_multipart(&push, "jobs", frames.clone(), 0)
            .unwrap();
        let consumer = setup.consumer();
        let received = consumer.recv_multipart(&pull, "jobs", 0).unwrap();
        assert_eq!(received.frames, frames, "{endpoint}");
        drop(received);
        let send = setup.span("send jobs");
        let process = setup.span("process jobs");
        assert_eq!(
            process.parent_span_id,
            send.span_context.span_id(),
            "{endpoint}"
        );
        assert_eq!(
            attr(&process, "messaging.message.body.size").as_deref(),
            Some("3")
        );
    }
}

#[test]
fn pub_sub_topic_stays_the_first_frame() {
    for endpoint in endpoints("pub-sub") {
        let setup = Setup::new();
        let ctx = zmq::Context::new();
        let (xpub, sub) = pair(&ctx, zmq::XPUB, zmq::SUB, &endpoint);
        sub.set_subscribe(b"engine").unwrap();
        // The subscription reached the publisher: no message is dropped for a slow joiner.
        assert_eq!(xpub.recv_bytes(0).unwrap(), b"\x01engine");
        let producer = setup.producer();
        producer
            .send_multipart(
                &xpub,
                "engine.outputs",
                vec![b"other".to_vec(), b"x".to_vec()],
                0,
            )
            .unwrap();
        producer
            .send_multipart(
                &xpub,
                "engine.outputs",
                vec![b"engine.out".to_vec(), b"y".to_vec()],
                0,
            )
            .unwrap();
        let consumer = setup.consumer();
        let received = consumer.recv_multipart(&sub, "engine.outputs", 0).unwrap();
        assert_eq!(
            received.frames,
            [b"engine.out".to_vec(), b"y".to_vec()],
            "{endpoint}"
        );
        drop(received);
        let process = setup.span("process engine.outputs");
        let sends: Vec<_> = setup
            .spans()
            .into_iter()
            .filter(|s| s.name == "send engine.outputs")
            .collect();
        assert_eq!(sends.len(), 2);
        assert_eq!(
            process.parent_span_id,
            sends[1].span_context.span_id(),
            "{endpoint}"
        );
    }
}

#[test]
fn dealer_router_request_reply_one_trace() {
    for endpoint in endpoints("dealer-router") {
        let setup = Setup::new();
        let ctx = zmq::Context::new();
        let (router, dealer) = pair(&ctx, zmq::ROUTER, zmq::DEALER, &endpoint);
        let (producer, consumer) = (setup.producer(), setup.consumer());
        producer
            .send_multipart(&dealer, "engine", vec![b"req".to_vec()], 0)
            .unwrap();
        // The ROUTER sees [routing id, payload]: the context frame was last, and is gone.
        let request = consumer.recv_multipart(&router, "engine", 0).unwrap();
        assert_eq!(request.frames.len(), 2, "{endpoint}");
        assert_eq!(request.frames[1], b"req");
        let identity = request.frames[0].clone();
        request.processing.in_scope(|| {
            producer
                .send_multipart(
                    &router,
                    "engine.replies",
                    vec![identity, b"rep".to_vec()],
                    0,
                )
                .unwrap();
        });
        drop(request);
        let reply = consumer
            .recv_multipart(&dealer, "engine.replies", 0)
            .unwrap();
        assert_eq!(reply.frames, [b"rep".to_vec()]);
        drop(reply);
        let spans = [
            setup.span("send engine"),
            setup.span("process engine"),
            setup.span("send engine.replies"),
            setup.span("process engine.replies"),
        ];
        for hop in spans.windows(2) {
            assert_eq!(
                hop[1].parent_span_id,
                hop[0].span_context.span_id(),
                "{endpoint}: {}",
                hop[1].name
            );
        }
    }
}

#[test]
fn untraced_peers_on_either_side() {
    let setup = Setup::new();
    let ctx = zmq::Context::new();
    let (pull, push) = pair(&ctx, zmq::PULL, zmq::PUSH, "tcp://127.0.0.1:*");
    // An untraced sender: delivered as sent, a new trace whose cause is `none`.
    push.send_multipart([b"plain".to_vec()], 0).unwrap();
    let consumer = setup.consumer();
    let received = consumer.recv_multipart(&pull, "jobs", 0).unwrap();
    assert_eq!(received.frames, [b"plain".to_vec()]);
    drop(received);
    let process = setup.span("process jobs");
    assert_eq!(process.parent_span_id, SpanId::INVALID);
    assert_eq!(
        attr(&process, "lens.trace.new_root").as_deref(),
        Some("none")
    );
    // An untraced receiver sees the context frame as the last frame: marker then JSON.
    setup
        .producer()
        .send_multipart(&push, "jobs", vec![b"p".to_vec()], 0)
        .unwrap();
    let raw = pull.recv_multipart(0).unwrap();
    assert_eq!(raw.len(), 2);
    assert!(raw[1].starts_with(b"\x00lens-ctx\x01{\"traceparent\": \"00-"));
}

#[test]
fn a_failed_send_records_the_error_and_returns_it() {
    let setup = Setup::new();
    let ctx = zmq::Context::new();
    let push = ctx.socket(zmq::PUSH).unwrap();
    // No peer: a non-blocking send has nowhere to go.
    let err = setup
        .producer()
        .send_multipart(&push, "jobs", vec![b"p".to_vec()], zmq::DONTWAIT)
        .unwrap_err();
    assert_eq!(err, zmq::Error::EAGAIN);
    let send = setup.span("send jobs");
    assert_eq!(attr(&send, "error.type").as_deref(), Some("eagain"));
}
