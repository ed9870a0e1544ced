//! The keys of the baggage a call carried, never their values: the `lens.baggage.keys`
//! attribute that lens adapters set when asked (`with_baggage_keys(true)`, off by default), so
//! that `lens check` / `lens watch` can name a hop that lost baggage
//! (docs/doctor.md#baggage-dropped).
//!
//! | span | the keys |
//! | --- | --- |
//! | SERVER (lens-axum, lens-tonic), CONSUMER `process` (lens-nats) | of the baggage the request or message brought in, as the inbound policy let it through |
//! | CLIENT (lens-reqwest, lens-tonic), PRODUCER `send` (lens-nats) | of the baggage injected into the request or message, as the outbound policy let it out |
//!
//! A string array in arrival order (the order of the `baggage` header, as lens keeps it),
//! bounded by the baggage limits (at most 180 entries by default); empty when the call carried
//! no baggage, so that "no baggage" and "not recorded" differ. Values and properties never
//! appear on the span.

use lens_core::LensContextExt as _;
use lens_core::baggage::BaggageList;
use opentelemetry::{Array, Context, KeyValue, StringValue, Value};

/// The attribute's key.
pub const BAGGAGE_KEYS: &str = "lens.baggage.keys";

/// The `lens.baggage.keys` attribute of `baggage`: its keys in order, no values.
///
/// ```
/// use lens_core::baggage::BaggageList;
/// use lens_core::Limits;
///
/// let list = BaggageList::parse(["a=1,b=2;p"], &Limits::DEFAULT, false);
/// let attribute = lens_span::baggage_keys::attribute(&list);
/// assert_eq!(attribute.key.as_str(), "lens.baggage.keys");
/// assert_eq!(attribute.value.to_string(), r#"["a","b"]"#);
/// ```
pub fn attribute(baggage: &BaggageList) -> KeyValue {
    let keys: Vec<StringValue> = baggage
        .iter()
        .map(|entry| StringValue::from(entry.key().to_owned()))
        .collect();
    KeyValue::new(BAGGAGE_KEYS, Value::Array(Array::String(keys)))
}

/// The `lens.baggage.keys` attribute of the baggage in `cx`.
pub fn of(cx: &Context) -> KeyValue {
    attribute(&cx.lens_baggage())
}
