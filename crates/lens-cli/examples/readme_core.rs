//! lens-core: extract a context from a carrier and inject it again.
use lens_core::{Carrier, LensContextExt, extract_context, inject_context_from};
use opentelemetry::trace::TraceContextExt;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut incoming = Carrier::new(); // or MapCarrier(&HashMap), HeaderCarrier(&HeaderMap)
    incoming.insert(
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    );
    incoming.insert("baggage", "tenant=acme");
    let cx = extract_context(&incoming).with_baggage_entry("step", "7")?;
    assert!(cx.span().span_context().is_remote());
    let mut outgoing = Carrier::new();
    inject_context_from(&cx, &mut outgoing);
    assert_eq!(outgoing.get("baggage"), Some("tenant=acme,step=7"));
    Ok(())
}
