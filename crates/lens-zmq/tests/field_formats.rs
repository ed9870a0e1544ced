//! The carrier field in a positional-array struct (msgspec `array_like`, the shape of vLLM's
//! `EngineCoreRequest`) and in maps, through msgpack (rmp-serde) and JSON: filled by a
//! producer, read by a consumer, one trace.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Setup, attr};
use lens_core::carrier::{Carrier, CarrierField};
use serde::{Deserialize, Serialize};

/// The shape of vLLM's `EngineCoreRequest` (a msgspec struct with `array_like=True`): encoded
/// as a positional array, `trace_headers` a map of strings or nil.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct EngineCoreRequest {
    request_id: String,
    prompt_token_ids: Vec<u32>,
    arrival_time: f64,
    priority: i32,
    #[serde(default)]
    trace_headers: CarrierField,
}

fn request(trace_headers: CarrierField) -> EngineCoreRequest {
    EngineCoreRequest {
        request_id: "r-1".into(),
        prompt_token_ids: vec![1, 2, 300],
        arrival_time: 1.5,
        priority: 0,
        trace_headers,
    }
}

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn msgpack_positional_array_bytes_are_msgspecs() {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", TP);
    let bytes = rmp_serde::to_vec(&request(carrier.into())).unwrap();
    // What msgspec.msgpack.encode writes for the array_like struct: a 5-array, fixstr,
    // array of ints (uint16 for 300), float64, int, a fixmap of one fixstr to a str8.
    let mut want = vec![
        0x95, 0xa3, b'r', b'-', b'1', 0x93, 0x01, 0x02, 0xcd, 0x01, 0x2c,
    ];
    want.push(0xcb);
    want.extend_from_slice(&1.5f64.to_be_bytes());
    want.extend_from_slice(&[0x00, 0x81, 0xab]);
    want.extend_from_slice(b"traceparent");
    want.extend_from_slice(&[0xd9, 55]);
    want.extend_from_slice(TP.as_bytes());
    assert_eq!(bytes, want);
    let back: EngineCoreRequest = rmp_serde::from_slice(&bytes).unwrap();
    assert_eq!(rmp_serde::to_vec(&back).unwrap(), bytes, "byte for byte");
    // None is nil; a short array (msgspec's omit_defaults drops trailing defaults) decodes.
    let none = rmp_serde::to_vec(&request(CarrierField::Absent)).unwrap();
    assert_eq!(none.last(), Some(&0xc0));
    let mut short = none.clone();
    short[0] = 0x94;
    short.pop();
    let back: EngineCoreRequest = rmp_serde::from_slice(&short).unwrap();
    assert!(back.trace_headers.is_absent());
}

#[test]
fn producer_fills_the_field_consumer_continues_the_trace_msgpack_and_json() {
    for format in ["msgpack", "json", "msgpack-map"] {
        let setup = Setup::new();
        let producer = setup.producer();
        let consumer = setup.consumer();
        let sending = producer.start_send("engine.requests", None);
        let message = request(sending.carrier_field());
        let bytes = match format {
            "msgpack" => rmp_serde::to_vec(&message).unwrap(),
            "msgpack-map" => rmp_serde::to_vec_named(&message).unwrap(),
            _ => serde_json::to_vec(&message).unwrap(),
        };
        sending.end();
        let got: EngineCoreRequest = match format {
            "json" => serde_json::from_slice(&bytes).unwrap(),
            _ => rmp_serde::from_slice(&bytes).unwrap(),
        };
        assert_eq!(got.request_id, "r-1");
        consumer
            .process_field("engine.requests", &got.trace_headers, Some(bytes.len()))
            .end();
        let send = setup.span("send engine.requests");
        let process = setup.span("process engine.requests");
        assert_eq!(
            process.span_context.trace_id(),
            send.span_context.trace_id(),
            "{format}"
        );
        assert_eq!(
            process.parent_span_id,
            send.span_context.span_id(),
            "{format}"
        );
        assert_eq!(attr(&process, "lens.trace.new_root"), None);
        assert_eq!(
            attr(&process, "messaging.system").as_deref(),
            Some("zeromq")
        );
        assert_eq!(
            attr(&process, "messaging.destination.name").as_deref(),
            Some("engine.requests")
        );
        assert_eq!(
            attr(&process, "messaging.message.body.size"),
            Some(bytes.len().to_string())
        );
    }
}

#[test]
fn a_rust_struct_as_a_map_json_with_python_dict_shape() {
    // What NeMo Lens's inject_context(d) leaves in a dict, json.dumps'd.
    let json = format!(
        r#"{{"request_id": "r-1", "prompt_token_ids": [1], "arrival_time": 0.0, "priority": 0, "trace_headers": {{"traceparent": "{TP}", "tracestate": "a=1", "baggage": "k=v"}}}}"#
    );
    let got: EngineCoreRequest = serde_json::from_str(&json).unwrap();
    let carrier = got.trace_headers.carrier().unwrap();
    assert_eq!(carrier.get("tracestate"), Some("a=1"));
    let setup = Setup::new();
    let consumer = setup.consumer();
    let processing = consumer.process_field("engine.requests", &got.trace_headers, None);
    let baggage = processing.in_scope(|| {
        use lens_core::LensContextExt;
        opentelemetry::Context::current().baggage_value("k")
    });
    assert_eq!(baggage.as_deref(), Some("v"));
    processing.end();
    let process = setup.span("process engine.requests");
    assert_eq!(process.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert_eq!(process.span_context.trace_state().header(), "a=1");
}
