//! lens-tonic: context on gRPC calls and on Ray-style remote calls.
use std::collections::BTreeMap;

use lens_tonic::{ClientInterceptor, dispatch_with_context, traced_remote_call};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Endpoint;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // gRPC: every call carries the current context (ClientLayer adds a CLIENT span too).
    let channel = Endpoint::from_static("http://127.0.0.1:50051").connect_lazy();
    let _channel = InterceptedService::new(channel, ClientInterceptor::new());
    // Ray-style: the arguments plus `_otel_carrier`, as NeMo Lens sends them.
    let call = dispatch_with_context(BTreeMap::from([("prompt", "hi")]));
    println!("{}", serde_json::to_string(&call)?);
    let answer = traced_remote_call("Actor.generate", call.carrier.as_ref(), async { 42 }).await;
    assert_eq!(answer, 42);
    Ok(())
}
