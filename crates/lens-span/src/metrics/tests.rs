use opentelemetry::{Key, Value};
use opentelemetry_semantic_conventions::attribute as attr;

use crate::rpc::RpcConventions;

use super::attributes::{Attributes, Slot};
use super::kinds::{Instruments, MAX_ATTRIBUTES};

#[test]
fn a_key_set_again_is_replaced_and_others_are_not_kept() {
    let mut attributes = Attributes::new(Instruments::HttpServer);
    attributes.set(attr::HTTP_RESPONSE_STATUS_CODE, &Value::I64(200));
    attributes.set(attr::HTTP_RESPONSE_STATUS_CODE, &Value::I64(503));
    attributes.set(attr::URL_PATH, &Value::from("/users/1"));
    attributes.set(attr::HTTP_REQUEST_METHOD, &Value::from("GET"));
    assert_eq!(
        attributes.get(attr::HTTP_RESPONSE_STATUS_CODE),
        Some(&Slot::Int(503))
    );
    // In the keys' order, whatever the order they were set in.
    let (kvs, n) = attributes.take_key_values();
    let keys: Vec<&str> = kvs[..n].iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(
        keys,
        [attr::HTTP_REQUEST_METHOD, attr::HTTP_RESPONSE_STATUS_CODE]
    );
    assert_eq!(attributes.get(attr::HTTP_REQUEST_METHOD), None);
}

#[test]
fn every_kind_fits_the_inline_attributes() {
    let rpc = RpcConventions::DUPLICATE;
    for kind in [
        Instruments::HttpServer,
        Instruments::HttpClient,
        Instruments::RpcServer(rpc),
        Instruments::RpcClient(rpc),
        Instruments::Messaging,
    ] {
        assert!(kind.keys().len() <= MAX_ATTRIBUTES, "{kind:?}");
    }
    assert_eq!(Instruments::Messaging.keys().len(), MAX_ATTRIBUTES);
}

#[test]
fn each_kind_keeps_its_conventions_keys_only() {
    let keeps = |kind: Instruments, key: &'static str| kind.keeps(&Key::from_static_str(key));
    let rpc = RpcConventions::DUPLICATE;
    for key in [
        attr::URL_PATH,
        attr::URL_FULL,
        attr::URL_QUERY,
        attr::CLIENT_ADDRESS,
        attr::USER_AGENT_ORIGINAL,
        attr::HTTP_REQUEST_METHOD_ORIGINAL,
    ] {
        for kind in [
            Instruments::HttpServer,
            Instruments::HttpClient,
            Instruments::RpcServer(rpc),
            Instruments::RpcClient(rpc),
        ] {
            assert!(!keeps(kind, key), "{kind:?} {key}");
        }
    }
    assert!(keeps(Instruments::HttpServer, attr::HTTP_ROUTE));
    assert!(!keeps(Instruments::HttpServer, attr::SERVER_ADDRESS));
    assert!(keeps(Instruments::HttpClient, attr::SERVER_ADDRESS));
    assert!(!keeps(Instruments::RpcServer(rpc), attr::SERVER_PORT));
    assert!(keeps(Instruments::RpcClient(rpc), attr::SERVER_PORT));
    assert!(keeps(Instruments::RpcServer(rpc), attr::ERROR_TYPE));
}
