//! Ray-style remote calls: the W3C carrier travels with the call's arguments under the keyword
//! `_otel_carrier`, as NeMo Lens's `nemo.lens.contrib.ray` sends it.

use std::borrow::Cow;
use std::future::Future;

use lens_core::Carrier;
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, Tracer};
use serde::{Deserialize, Serialize};

/// The keyword under which NeMo Lens passes the carrier to a remote call.
pub const OTEL_CARRIER_FIELD: &str = "_otel_carrier";

/// The instrumentation scope of [`traced_remote_call`]'s spans (NeMo Lens's tracer name).
pub const RAY_TRACER_NAME: &str = "nemo.lens.ray";

/// The current Context as a carrier, for a remote call (NeMo Lens `inject_ray_context`).
///
/// The carrier holds `traceparent`, `tracestate` and `baggage` as lens's process-wide propagator
/// writes them; [`Carrier::to_json_bytes`] encodes it exactly as Python's `json.dumps`.
///
/// ```
/// use lens_core::LensContextExt;
/// use lens_tonic::inject_ray_context;
/// use opentelemetry::Context;
///
/// let cx = Context::new().with_baggage_entry("job", "pretrain").unwrap();
/// let _guard = cx.attach();
/// assert_eq!(inject_ray_context().to_json_bytes(), br#"{"baggage": "job=pretrain"}"#);
/// ```
pub fn inject_ray_context() -> Carrier {
    let mut carrier = Carrier::with_capacity(3);
    lens_core::inject_context(&mut carrier);
    carrier
}

/// The Context a remote call runs in (NeMo Lens `extract_ray_context`, docs/propagation-rules.md#extract-and-inject).
///
/// `None` (no carrier was sent, or it was `null`) returns the caller's current Context, as
/// Python does; a carrier is extracted as usual, starting from an empty Context.
///
/// ```
/// use lens_core::Carrier;
/// use lens_tonic::extract_ray_context;
/// use opentelemetry::trace::TraceContextExt;
///
/// let mut carrier = Carrier::new();
/// carrier.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// let cx = extract_ray_context(Some(&carrier));
/// assert!(cx.span().span_context().is_remote());
/// ```
pub fn extract_ray_context(carrier: Option<&Carrier>) -> Context {
    lens_core::extract_carrier_context(carrier)
}

/// A remote call's keyword arguments plus the carrier under `_otel_carrier`.
///
/// Serialised with serde, `args` is flattened beside the carrier, so the JSON form is the
/// keyword-argument object a Python driver passes, `{..kwargs, "_otel_carrier": {...}}`, and the
/// carrier is the same JSON object `inject_ray_context()` returns in Python. `args` must therefore
/// serialise as a map (a struct with named fields, or a map). A missing or `null` carrier
/// deserialises as `None`, which [`RemoteCall::context`] treats as Python does (docs/propagation-rules.md#extract-and-inject).
///
/// ```
/// use lens_tonic::RemoteCall;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Generate { prompt: String }
///
/// let call: RemoteCall<Generate> = serde_json::from_str(
///     r#"{"prompt": "hi", "_otel_carrier": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}"#,
/// ).unwrap();
/// assert_eq!(call.args.prompt, "hi");
/// assert_eq!(
///     call.context().span().span_context().trace_id().to_string(),
///     "4bf92f3577b34da6a3ce929d0e0e4736"
/// );
/// # use opentelemetry::trace::TraceContextExt;
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteCall<T> {
    /// The call's keyword arguments.
    #[serde(flatten)]
    pub args: T,
    /// The propagated context (`_otel_carrier`); `None` when the caller sent none.
    #[serde(rename = "_otel_carrier", default)]
    pub carrier: Option<Carrier>,
}

impl<T> RemoteCall<T> {
    /// A call with these arguments and carrier.
    pub fn new(args: T, carrier: Option<Carrier>) -> Self {
        RemoteCall { args, carrier }
    }

    /// The Context the call runs in: [`extract_ray_context`] of its carrier.
    pub fn context(&self) -> Context {
        extract_ray_context(self.carrier.as_ref())
    }

    /// Runs `f(args)` in a span named `name` whose parent is the carrier's Context (see
    /// [`traced_remote_call`]: the carrier's baggage is not made current, as in Python).
    pub fn run<N, F, Fut>(
        self,
        name: N,
        f: F,
    ) -> impl Future<Output = Fut::Output> + use<T, N, F, Fut>
    where
        N: Into<Cow<'static, str>>,
        F: FnOnce(T) -> Fut,
        Fut: Future,
    {
        let RemoteCall { args, carrier } = self;
        traced_remote_call(name, carrier.as_ref(), f(args))
    }
}

/// A [`RemoteCall`] carrying `args` and the current Context (NeMo Lens
/// `ray_dispatch_with_context` with no pre-built carrier).
///
/// ```
/// use lens_tonic::dispatch_with_context;
///
/// let call = dispatch_with_context(vec![("prompt", "hi")].into_iter().collect::<std::collections::BTreeMap<_, _>>());
/// assert!(call.carrier.is_some());
/// assert_eq!(serde_json::to_string(&call).unwrap(), r#"{"prompt":"hi","_otel_carrier":{}}"#);
/// ```
pub fn dispatch_with_context<T>(args: T) -> RemoteCall<T> {
    RemoteCall {
        args,
        carrier: Some(inject_ray_context()),
    }
}

/// Runs `future` inside an INTERNAL span named `name` whose parent is the carrier's Context
/// (NeMo Lens `traced_remote_call`): the span is current while the future is polled and ends
/// when it completes (or is dropped, or panics: status Error, `error.type` = `panic`). The span
/// comes from the global tracer provider, scope [`RAY_TRACER_NAME`]; `None` for the carrier
/// parents the span on the current Context. A trace that the call starts is marked random.
///
/// As in Python (`start_as_current_span(name, context=ctx)`), only the span is taken from the
/// carrier: the Context current inside the future is the caller's current Context (as it is
/// when `traced_remote_call` is called) with the new span. The carrier's baggage is **not**
/// current there; read it with [`extract_ray_context`] (or [`RemoteCall::context`]) when needed.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lens_tonic::{dispatch_with_context, traced_remote_call};
///
/// let call = dispatch_with_context(());
/// let answer = traced_remote_call("Actor.generate", call.carrier.as_ref(), async { 42 }).await;
/// assert_eq!(answer, 42);
/// # }
/// ```
pub fn traced_remote_call<N, F>(
    name: N,
    carrier: Option<&Carrier>,
    future: F,
) -> impl Future<Output = F::Output> + use<N, F>
where
    N: Into<Cow<'static, str>>,
    F: Future,
{
    traced_remote_call_with_tracer(
        &lens_span::scope::global_tracer(RAY_TRACER_NAME, env!("CARGO_PKG_VERSION")),
        name,
        carrier,
        future,
    )
}

/// [`traced_remote_call`] with the given tracer.
pub fn traced_remote_call_with_tracer<T, N, F>(
    tracer: &T,
    name: N,
    carrier: Option<&Carrier>,
    future: F,
) -> impl Future<Output = F::Output> + use<T, N, F>
where
    T: Tracer,
    N: Into<Cow<'static, str>>,
    T::Span: Send + Sync + 'static,
    F: Future,
{
    let parent = extract_ray_context(carrier);
    let builder = tracer.span_builder(name).with_kind(SpanKind::Internal);
    // Python's `start_as_current_span(context=ctx)` parents the span on `ctx` but attaches
    // `set_span_in_context(span)`, i.e. the caller's current context plus the span: the
    // carrier's baggage does not become current. The span shows the trace's random flag (a
    // `-03` caller stays `-03` on calls made inside), as lens-span's lifecycle does everywhere,
    // and ends when the future completes, is dropped or panics.
    lens_span::in_span(tracer, builder, &parent, future)
}
