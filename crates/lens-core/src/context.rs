//! What lens keeps in an opentelemetry [`Context`] beside opentelemetry's own types (docs/propagation-rules.md#opentelemetry-types),
//! and the baggage helpers built on it.
//!
//! opentelemetry's `TraceState` rejects keys the current W3C grammar allows, and its `Baggage` is
//! unordered and holds at most 64 entries. lens keeps its own ordered copies in the Context (they
//! travel with it through child spans) and injects from them as long as the opentelemetry values
//! are still the ones lens built; code that reads the opentelemetry types still sees everything
//! those types can hold.
//!
//! ```
//! use lens_core::LensContextExt;
//! use opentelemetry::Context;
//!
//! let cx = Context::new()
//!     .with_baggage_entry("user", "alice smith")
//!     .unwrap()
//!     .with_baggage_entry("tier", "gold")
//!     .unwrap();
//! let keys: Vec<String> = cx.lens_baggage().iter().map(|e| e.key().to_owned()).collect();
//! assert_eq!(keys, ["user", "tier"]);
//! assert_eq!(cx.lens_baggage().header(), "user=alice%20smith,tier=gold");
//! ```

use std::borrow::Cow;

use arrayvec::ArrayString;
use opentelemetry::baggage::{Baggage, BaggageExt};
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry::{Context, TraceId};

use crate::baggage::{
    BaggageError, BaggageList, SentHeader, list_from_otel, parse_to_otel, to_otel_baggage,
};
use crate::limits::Limits;
use crate::tracestate::TraceStateList;

/// lens's own copies, stored as one Context value so that extract adds a single entry.
#[derive(Debug, Clone, Default)]
pub(crate) struct LensState {
    pub(crate) tracestate: Option<TraceStateCopy>,
    pub(crate) baggage: Option<BaggageCopy>,
}

#[derive(Debug, Clone)]
pub(crate) struct TraceStateCopy {
    /// The trace the list belongs to: a new trace never inherits it.
    pub(crate) trace_id: TraceId,
    pub(crate) list: TraceStateList,
}

/// lens's ordered baggage, as a list or as the header that parses back into it.
#[derive(Debug, Clone)]
pub(crate) enum StoredBaggage {
    /// The list itself.
    List(BaggageList),
    /// Only the header lens sends (what inject needs); the opentelemetry `Baggage` beside it
    /// holds every member, so values are read there and the ordered list is rebuilt on demand.
    Header(HeaderText),
}

/// The baggage header lens keeps: inside its Context value up to [`INLINE_HEADER`] bytes (the
/// common few members cost extract no allocation of their own), else a `String`.
#[derive(Debug, Clone)]
pub(crate) enum HeaderText {
    Inline(ArrayString<INLINE_HEADER>),
    Heap(String),
}

/// Bytes of a baggage header that lens keeps inside its Context value.
const INLINE_HEADER: usize = 128;

impl HeaderText {
    /// Keeps the header a parse gave.
    fn of(header: SentHeader<'_>) -> HeaderText {
        match header {
            SentHeader::Slice(text) => match ArrayString::from(text) {
                Ok(inline) => HeaderText::Inline(inline),
                Err(_) => HeaderText::Heap(text.to_owned()),
            },
            SentHeader::Built(text) => HeaderText::Heap(text),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            HeaderText::Inline(text) => text,
            HeaderText::Heap(text) => text,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct BaggageCopy {
    pub(crate) stored: StoredBaggage,
    /// Address of the opentelemetry `Baggage` mirrored from `stored`: while the Context still
    /// holds that very value, nobody replaced it and `stored` is authoritative.
    otel_addr: usize,
    /// Keeps the mirrored `Baggage` alive, so its address cannot be reused by another one.
    _anchor: Context,
}

impl BaggageCopy {
    /// The header lens sends.
    pub(crate) fn header(&self) -> &str {
        match &self.stored {
            StoredBaggage::List(list) => list.header(),
            StoredBaggage::Header(header) => header.as_str(),
        }
    }

    /// The ordered list; rebuilt from the header when only that is kept.
    fn list(&self) -> Cow<'_, BaggageList> {
        match &self.stored {
            StoredBaggage::List(list) => Cow::Borrowed(list),
            // The header already fits the limits it was built under: parse it back whole.
            StoredBaggage::Header(header) => {
                Cow::Owned(BaggageList::parse([header.as_str()], &UNBOUNDED, false))
            }
        }
    }
}

/// Limits that never cut a header lens built itself.
const UNBOUNDED: Limits = Limits::DEFAULT
    .with_baggage_members(usize::MAX)
    .with_baggage_bytes(usize::MAX);

fn baggage_addr(cx: &Context) -> usize {
    std::ptr::from_ref::<Baggage>(cx.baggage()) as usize
}

/// Baggage extracted from header lines: opentelemetry's `Baggage` and lens's ordered copy;
/// `None` when no member is valid.
pub(crate) fn extract_baggage(
    lines: &[&str],
    limits: &Limits,
    plus_as_space: bool,
) -> Option<(Baggage, StoredBaggage)> {
    match parse_to_otel(lines, limits, plus_as_space) {
        Some((otel, header)) => {
            (!header.is_empty()).then(|| (otel, StoredBaggage::Header(HeaderText::of(header))))
        }
        None => {
            let list = BaggageList::parse(lines.iter().copied(), limits, plus_as_space);
            (!list.is_empty()).then(|| (to_otel_baggage(&list), StoredBaggage::List(list)))
        }
    }
}

impl LensState {
    pub(crate) fn of(cx: &Context) -> Option<&LensState> {
        cx.get::<LensState>()
    }

    /// The tracestate lens sends for `sc`, when its own copy still applies.
    pub(crate) fn tracestate_for(&self, sc: &SpanContext) -> Option<&TraceStateList> {
        let copy = self.tracestate.as_ref()?;
        (copy.trace_id == sc.trace_id() && copy.list.matches_otel(sc.trace_state()))
            .then_some(&copy.list)
    }

    /// lens's baggage copy, when `cx` (whose state this is) still holds the opentelemetry
    /// `Baggage` built from it.
    pub(crate) fn baggage_for(&self, cx: &Context) -> Option<&BaggageCopy> {
        let copy = self.baggage.as_ref()?;
        (copy.otel_addr == baggage_addr(cx)).then_some(copy)
    }
}

/// Returns `cx` with `list` as its baggage: opentelemetry's `Baggage` mirrored from it and
/// lens's ordered copy beside it. `tracestate`, when given, replaces lens's tracestate copy.
pub(crate) fn with_lens_values(
    cx: &Context,
    tracestate: Option<TraceStateCopy>,
    baggage: Option<BaggageList>,
) -> Context {
    let baggage = baggage.map(|list| (to_otel_baggage(&list), StoredBaggage::List(list)));
    with_lens_parts(cx, tracestate, baggage)
}

/// [`with_lens_values`] with the opentelemetry `Baggage` already built beside lens's copy.
pub(crate) fn with_lens_parts(
    cx: &Context,
    tracestate: Option<TraceStateCopy>,
    baggage: Option<(Baggage, StoredBaggage)>,
) -> Context {
    let previous = LensState::of(cx);
    let mut state = LensState {
        tracestate: tracestate.or_else(|| previous.and_then(|p| p.tracestate.clone())),
        baggage: None,
    };
    let cx = match baggage {
        Some((otel, stored)) => {
            let cx = cx.with_baggage(otel);
            state.baggage = Some(BaggageCopy {
                otel_addr: baggage_addr(&cx),
                _anchor: cx.clone(),
                stored,
            });
            cx
        }
        None => {
            // Keep the previous copy only while it still matches the Context's baggage.
            state.baggage = previous
                .and_then(|p| p.baggage.as_ref())
                .filter(|b| b.otel_addr == baggage_addr(cx))
                .cloned();
            cx.clone()
        }
    };
    if state.tracestate.is_none() && state.baggage.is_none() {
        return cx;
    }
    cx.with_value(state)
}

/// The Context extract gives: `cx` with the remote span (and lens's tracestate copy, when there
/// is one) and the extracted baggage (opentelemetry's and lens's copy). The baggage goes in
/// before the span, so that the anchor of lens's baggage copy holds no span.
pub(crate) fn extracted_context(
    cx: &Context,
    trace: Option<(SpanContext, Option<TraceStateCopy>)>,
    baggage: Option<(Baggage, StoredBaggage)>,
) -> Context {
    let (sc, tracestate) = match trace {
        Some((sc, copy)) => (Some(sc), copy),
        None => (None, None),
    };
    let cx = if tracestate.is_none() && baggage.is_none() {
        if sc.is_none() {
            return cx.clone();
        }
        Cow::Borrowed(cx)
    } else {
        Cow::Owned(with_lens_parts(cx, tracestate, baggage))
    };
    match sc {
        Some(sc) => cx.with_remote_span_context(sc),
        None => cx.into_owned(),
    }
}

/// lens's extension methods on [`Context`]: ordered baggage (docs/propagation-rules.md#baggage, docs/propagation-rules.md#opentelemetry-types) and trace ids.
pub trait LensContextExt {
    /// The Context's baggage in order, with properties and the header lens would send.
    ///
    /// Borrowed when lens's ordered copy still applies; rebuilt from opentelemetry's `Baggage`
    /// (in its unspecified order) when other code replaced it.
    fn lens_baggage(&self) -> Cow<'_, BaggageList>;

    /// The value of one baggage entry.
    fn baggage_value(&self, key: &str) -> Option<String>;

    /// A copy of this Context with one baggage entry set (its position kept if the key exists).
    ///
    /// Refuses keys that are not HTTP tokens and entries that would break the default limits.
    fn with_baggage_entry(&self, key: &str, value: &str) -> Result<Context, BaggageError>;

    /// Like [`LensContextExt::with_baggage_entry`], with properties (metadata) such as `"p1;p2=x"`.
    fn with_baggage_entry_and_properties(
        &self,
        key: &str,
        value: &str,
        properties: &str,
    ) -> Result<Context, BaggageError>;

    /// A copy of this Context with one baggage entry removed.
    fn without_baggage_entry(&self, key: &str) -> Context;

    /// A copy of this Context whose baggage is exactly `list` (order and properties kept).
    fn with_baggage_list(&self, list: BaggageList) -> Context;

    /// The trace id of the Context's span, when it has a valid one.
    fn trace_id(&self) -> Option<TraceId>;
}

impl LensContextExt for Context {
    fn lens_baggage(&self) -> Cow<'_, BaggageList> {
        match LensState::of(self).and_then(|state| state.baggage_for(self)) {
            Some(copy) => copy.list(),
            None => Cow::Owned(list_from_otel(self.baggage(), &Limits::DEFAULT)),
        }
    }

    fn baggage_value(&self, key: &str) -> Option<String> {
        match LensState::of(self)
            .and_then(|state| state.baggage_for(self))
            .map(|copy| &copy.stored)
        {
            Some(StoredBaggage::List(list)) => list.get(key).map(|e| e.value().to_owned()),
            // Without a list, opentelemetry's `Baggage` holds every member.
            Some(StoredBaggage::Header(_)) | None => {
                self.baggage().get(key).map(|v| v.as_str().to_owned())
            }
        }
    }

    fn with_baggage_entry(&self, key: &str, value: &str) -> Result<Context, BaggageError> {
        self.with_baggage_entry_and_properties(key, value, "")
    }

    fn with_baggage_entry_and_properties(
        &self,
        key: &str,
        value: &str,
        properties: &str,
    ) -> Result<Context, BaggageError> {
        let mut list = self.lens_baggage().into_owned();
        list.set(key, value, properties, &Limits::DEFAULT)?;
        Ok(with_lens_values(self, None, Some(list)))
    }

    fn without_baggage_entry(&self, key: &str) -> Context {
        let mut list = self.lens_baggage().into_owned();
        list.remove(key);
        with_lens_values(self, None, Some(list))
    }

    fn with_baggage_list(&self, list: BaggageList) -> Context {
        with_lens_values(self, None, Some(list))
    }

    fn trace_id(&self) -> Option<TraceId> {
        let span = self.span();
        let sc = span.span_context();
        sc.is_valid().then(|| sc.trace_id())
    }
}
