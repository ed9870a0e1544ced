//! The instrumentation scope of an adapter's spans: its crate name and version and the schema
//! URL of the semantic conventions its attributes follow.

use opentelemetry::InstrumentationScope;
use opentelemetry::global::BoxedTracer;

/// The schema URL of the semantic conventions lens's spans follow (1.42).
pub const SCHEMA_URL: &str = opentelemetry_semantic_conventions::SCHEMA_URL;

/// The scope `name`, `version`, [`SCHEMA_URL`].
///
/// ```
/// let scope = lens_span::scope::scope("lens-axum", "0.1.0");
/// assert_eq!(scope.version(), Some("0.1.0"));
/// assert_eq!(scope.schema_url(), Some(lens_span::scope::SCHEMA_URL));
/// ```
pub fn scope(name: &'static str, version: &'static str) -> InstrumentationScope {
    InstrumentationScope::builder(name)
        .with_version(version)
        .with_schema_url(SCHEMA_URL)
        .build()
}

/// The tracer of scope [`scope`]`(name, version)` from the global tracer provider, as it is now.
pub fn global_tracer(name: &'static str, version: &'static str) -> BoxedTracer {
    opentelemetry::global::tracer_with_scope(scope(name, version))
}
