//! `suite_knobs!`: the suite's knobs set on an adapter, the same way in every adapter's test.

/// Sets the suite's knobs on an adapter (they have the same names in every adapter): the random
/// flag on new traces, `filter`, and as [`Setup`](crate::suite::Setup) says the span name, the attribute hooks, the
/// classifier `classifier` with the failure hook, and a meter of `metrics` (an
/// `&Option<Metrics>`, [`metrics_for`](crate::suite::metrics_for)). The opt-in instruments are the harness's to turn on.
///
/// ```text
/// let metrics = lens_testkit::suite::metrics_for(&setup);
/// let layer = lens_testkit::suite_knobs!(ServerLayer::new().with_tracer(t), setup, |req| ...,
///     |status: &StatusCode| ..., &metrics);
/// ```
#[macro_export]
macro_rules! suite_knobs {
    ($adapter:expr, $setup:expr, $filter:expr, $classifier:expr, $metrics:expr) => {{
        let setup: $crate::suite::setup::Setup = $setup;
        let metrics: &Option<$crate::metrics::Metrics> = $metrics;
        let mut adapter = $adapter
            .with_random_flag_on_new_traces(setup.random_flag_on_new_traces)
            .with_filter($filter);
        if let Some(metrics) = metrics {
            adapter = adapter.with_meter(metrics.meter("suite"));
        }
        if setup.named {
            adapter = adapter.with_span_name(|_| $crate::suite::names::SPAN_NAME.into());
        }
        if setup.hooks {
            adapter = adapter
                .with_request_attributes(|_, attributes| {
                    attributes.push($crate::suite::knobs::__otel::KeyValue::new(
                        $crate::suite::names::REQUEST_ATTRIBUTE,
                        true,
                    ))
                })
                .with_response_attributes(|_, span| {
                    span.set_attribute($crate::suite::knobs::__otel::KeyValue::new(
                        $crate::suite::names::RESPONSE_ATTRIBUTE,
                        true,
                    ))
                });
        }
        if setup.classified {
            adapter = adapter
                .with_classifier($classifier)
                .with_on_failure(|failure, span| {
                    span.set_attribute($crate::suite::knobs::__otel::KeyValue::new(
                        $crate::suite::names::FAILURE_ATTRIBUTE,
                        failure.error_type.clone(),
                    ))
                });
        }
        adapter
    }};
}

#[doc(hidden)]
pub use opentelemetry as __otel;
