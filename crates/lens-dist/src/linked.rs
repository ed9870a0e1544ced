//! [`create_linked_span`]: a span that links to a span of another rank or service, and the
//! attribute redaction NeMo Lens applies to it.

use std::borrow::Cow;

use lens_core::{Carrier, propagator};
use opentelemetry::trace::{Link, Span, SpanContext, TraceContextExt, Tracer};
use opentelemetry::{Array, Context, KeyValue, Value};

/// The remote side a linked span refers to: a Context (from [`lens_core::extract_context`]), a
/// [`Carrier`] (from [`broadcast_trace_context`](crate::broadcast_trace_context)), a span context,
/// or nothing.
///
/// Conversions exist from `&Context`, `&Carrier`, `&SpanContext`, `Option`s of those, and
/// `&Option<Carrier>` (what a broadcast returns), so the call site passes what it has.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub enum Remote<'a> {
    /// No remote side: the span has no link.
    #[default]
    None,
    /// The span of this Context (NeMo Lens `remote_context`).
    Context(&'a Context),
    /// The trace context in this carrier, extracted as `extract_context` would (NeMo Lens
    /// `remote_carrier`).
    Carrier(&'a Carrier),
    /// This span context.
    SpanContext(&'a SpanContext),
}

impl Remote<'_> {
    /// The span context to link to: the remote span context when it is valid, else `None`.
    pub fn span_context(&self) -> Option<SpanContext> {
        let sc = match *self {
            Remote::None => return None,
            Remote::Context(cx) => cx.span().span_context().clone(),
            Remote::Carrier(carrier) => {
                let propagator = propagator();
                if !propagator.propagates_trace_context() {
                    return None;
                }
                propagator.extract_span_context(carrier)?
            }
            Remote::SpanContext(sc) => sc.clone(),
        };
        sc.is_valid().then_some(sc)
    }
}

impl<'a> From<&'a Context> for Remote<'a> {
    fn from(cx: &'a Context) -> Self {
        Remote::Context(cx)
    }
}

impl<'a> From<&'a Carrier> for Remote<'a> {
    fn from(carrier: &'a Carrier) -> Self {
        Remote::Carrier(carrier)
    }
}

impl<'a> From<&'a SpanContext> for Remote<'a> {
    fn from(sc: &'a SpanContext) -> Self {
        Remote::SpanContext(sc)
    }
}

impl<'a, T> From<Option<T>> for Remote<'a>
where
    T: Into<Remote<'a>>,
{
    fn from(remote: Option<T>) -> Self {
        remote.map_or(Remote::None, Into::into)
    }
}

impl<'a> From<&'a Option<Carrier>> for Remote<'a> {
    fn from(carrier: &'a Option<Carrier>) -> Self {
        carrier.as_ref().map_or(Remote::None, Remote::Carrier)
    }
}

/// The attribute keys whose string values NeMo Lens replaces with [`Redaction::REDACTED`]
/// (`nemo.lens.DEFAULT_REDACT_KEYS`).
pub const DEFAULT_REDACT_KEYS: [&str; 8] = [
    "prompt",
    "input_text",
    "output_text",
    "text",
    "password",
    "token",
    "secret",
    "key",
];

static DEFAULT_KEYS: [Cow<'static, str>; 8] = [
    Cow::Borrowed("prompt"),
    Cow::Borrowed("input_text"),
    Cow::Borrowed("output_text"),
    Cow::Borrowed("text"),
    Cow::Borrowed("password"),
    Cow::Borrowed("token"),
    Cow::Borrowed("secret"),
    Cow::Borrowed("key"),
];

/// NeMo Lens's attribute filter (`safe_set_span_attributes`): string values of the redacted keys
/// become `"[REDACTED]"`; values that are not a scalar (bool, integer, float, string) or an array
/// of scalars are skipped.
///
/// Keys match exactly (case-sensitive), as in Python. One difference, on the safe side: an array
/// of strings under a redacted key becomes the single string `"[REDACTED]"`, where Python passes
/// the list through unredacted.
///
/// ```
/// use lens_dist::Redaction;
/// use opentelemetry::KeyValue;
///
/// let nemo = Redaction::default();
/// assert_eq!(nemo.apply(KeyValue::new("prompt", "hi")), Some(KeyValue::new("prompt", "[REDACTED]")));
/// assert_eq!(nemo.apply(KeyValue::new("prompt", 3)), Some(KeyValue::new("prompt", 3)));
/// assert_eq!(nemo.apply(KeyValue::new("Prompt", "hi")), Some(KeyValue::new("Prompt", "hi")));
///
/// let custom = Redaction::new(["api_key"]);
/// assert!(custom.is_redacted("api_key") && !custom.is_redacted("prompt"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    keys: Cow<'static, [Cow<'static, str>]>,
}

impl Default for Redaction {
    /// NeMo Lens's keys, [`DEFAULT_REDACT_KEYS`].
    fn default() -> Self {
        Redaction::DEFAULT
    }
}

impl Redaction {
    /// What a redacted value becomes.
    pub const REDACTED: &'static str = "[REDACTED]";

    /// NeMo Lens's keys, [`DEFAULT_REDACT_KEYS`] (no allocation).
    pub const DEFAULT: Redaction = Redaction {
        keys: Cow::Borrowed(&DEFAULT_KEYS),
    };

    /// Redacts the string values of exactly these keys (replacing the default set).
    pub fn new<I, K>(keys: I) -> Self
    where
        I: IntoIterator<Item = K>,
        K: Into<Cow<'static, str>>,
    {
        Redaction {
            keys: Cow::Owned(keys.into_iter().map(Into::into).collect()),
        }
    }

    /// Redacts nothing; values that are not scalars are still skipped.
    pub const fn none() -> Self {
        Redaction {
            keys: Cow::Borrowed(&[]),
        }
    }

    /// Whether string values of `key` are redacted.
    pub fn is_redacted(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    /// The keys redacted, in the order given.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.as_ref())
    }

    /// The attribute as it is set on the span: `None` when its value is skipped (not a scalar or
    /// an array of scalars), the value `"[REDACTED]"` for a string (or array of strings) under a
    /// redacted key, else unchanged.
    pub fn apply(&self, attribute: KeyValue) -> Option<KeyValue> {
        let KeyValue { key, value, .. } = attribute;
        let value = match value {
            Value::String(_) | Value::Array(Array::String(_)) if self.is_redacted(key.as_str()) => {
                Value::from(Self::REDACTED)
            }
            v @ (Value::Bool(_) | Value::I64(_) | Value::F64(_) | Value::String(_)) => v,
            Value::Array(
                a @ (Array::Bool(_) | Array::I64(_) | Array::F64(_) | Array::String(_)),
            ) => Value::Array(a),
            _ => return None,
        };
        Some(KeyValue::new(key, value))
    }
}

/// Starts a span that links to a remote span (NeMo Lens `create_linked_span`): for correlation
/// where parent and child do not fit, such as pipeline-parallel stages on different ranks.
///
/// The span is started with `tracer` under the current Context, as `tracer.start(name)` would,
/// with a [`Link`] to the remote span context when it is valid, and no link otherwise (never an
/// error). `remote` is anything that converts into a [`Remote`]: a `&Context`, a `&Carrier`, the
/// `&Option<Carrier>` from [`broadcast_trace_context`](crate::broadcast_trace_context), a
/// `&SpanContext`, or [`Remote::None`]. When the span is recording, `attributes` go through
/// [`Redaction::DEFAULT`]; [`create_linked_span_with`] takes another key set. The caller ends the
/// span.
///
/// `tracer` is any [`Tracer`]: an SDK tracer, `opentelemetry::global::tracer(..)` (a
/// `BoxedTracer`), or a reference to either; the span has the tracer's own span type.
///
/// The Python
///
/// ```python
/// carrier = broadcast_trace_context(rank, src_rank=0)
/// span = create_linked_span(tracer, "pp_stage", remote_carrier=carrier, stage=rank, prompt=text)
/// ...
/// span.end()
/// ```
///
/// is, with lens:
///
/// ```
/// use lens_dist::{broadcast_trace_context, create_linked_span, ThreadGroup};
/// use opentelemetry::trace::{Span, TraceContextExt, Tracer, TracerProvider};
/// use opentelemetry::KeyValue;
/// use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
///
/// let exporter = InMemorySpanExporter::default();
/// let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
/// let tracer = provider.tracer("pipeline");
///
/// // A job of one rank: the source's own span is what the stage links to.
/// let comm = ThreadGroup::new(1).remove(0);
/// let step = tracer.start("train_step");
/// let step_context = step.span_context().clone();
/// let _guard = opentelemetry::Context::current_with_span(step).attach();
///
/// let carrier = broadcast_trace_context(&comm, 0, 0)?;
/// let mut span = create_linked_span(
///     &tracer,
///     "pp_stage",
///     &carrier,
///     [KeyValue::new("stage", 0), KeyValue::new("prompt", "secret text")],
/// );
/// span.end();
///
/// let stage = exporter.get_finished_spans().unwrap().remove(0);
/// let link = &stage.links.links[0].span_context;
/// assert_eq!((link.trace_id(), link.span_id()), (step_context.trace_id(), step_context.span_id()));
/// assert!(stage.attributes.contains(&KeyValue::new("prompt", "[REDACTED]")));
/// # Ok::<(), lens_dist::DistError>(())
/// ```
pub fn create_linked_span<'r, T, N, R, I>(tracer: &T, name: N, remote: R, attributes: I) -> T::Span
where
    T: Tracer,
    N: Into<Cow<'static, str>>,
    R: Into<Remote<'r>>,
    I: IntoIterator<Item = KeyValue>,
{
    create_linked_span_with(tracer, name, remote, attributes, &Redaction::DEFAULT)
}

/// [`create_linked_span`] with the attribute keys to redact given.
pub fn create_linked_span_with<'r, T, N, R, I>(
    tracer: &T,
    name: N,
    remote: R,
    attributes: I,
    redaction: &Redaction,
) -> T::Span
where
    T: Tracer,
    N: Into<Cow<'static, str>>,
    R: Into<Remote<'r>>,
    I: IntoIterator<Item = KeyValue>,
{
    let mut builder = tracer.span_builder(name);
    if let Some(sc) = remote.into().span_context() {
        builder = builder.with_links(vec![Link::with_context(sc)]);
    }
    let mut span = builder.start(tracer);
    if span.is_recording() {
        for attribute in attributes {
            if let Some(attribute) = redaction.apply(attribute) {
                span.set_attribute(attribute);
            }
        }
    }
    span
}
