//! Which traces and spans a page lists and highlights: the filter ([`ListFilter`]), its
//! span search, and the list ([`Session::list`]).

use std::collections::HashMap;

use crate::assemble::TraceEntry;
use crate::diagnose::Severity;
use crate::model::{Span, SpanId, Status, TraceId};
use crate::render::bounds;

use super::flow::Session;

/// How [`Session::list`] orders the traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListOrder {
    /// The latest start first.
    #[default]
    Newest,
    /// The longest first.
    Duration,
}

/// Which traces [`Session::list`] gives (and [`ListFilter::matches`] says of one trace): every
/// condition set must hold. [`ListFilter::matches_span`] says which spans of a trace meet the
/// conditions on spans (a page highlights them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListFilter {
    /// Only this trace (`None`: any).
    pub trace_id: Option<TraceId>,
    /// Only traces with a span of this service (empty: any).
    pub service: String,
    /// Only traces with a span whose name contains this, in any case (empty: any).
    pub name: String,
    /// Only traces with a span that has this attribute (its own, or its resource's):
    /// `key=value` (the value as displayed, exactly) or `key` alone (present, any value);
    /// empty: any.
    pub attribute: String,
    /// Only traces with a span whose status is an error.
    pub errors: bool,
    /// Only traces lasting at least this, from the earliest start to the latest end (a span:
    /// its own duration); 0: any.
    pub min_duration_ns: u64,
    /// The order.
    pub order: ListOrder,
    /// The most traces given (0: no limit).
    pub limit: usize,
}

/// A [`ListFilter`]'s span conditions, made ready once for many spans.
struct SpanTest<'a> {
    filter: &'a ListFilter,
    name: String,
    attribute: Option<(&'a str, Option<&'a str>)>,
}

impl<'a> SpanTest<'a> {
    fn new(filter: &'a ListFilter) -> Self {
        let attribute = filter.attribute.trim();
        SpanTest {
            filter,
            name: filter.name.to_lowercase(),
            attribute: (!attribute.is_empty()).then(|| match attribute.split_once('=') {
                Some((key, value)) => (key.trim(), Some(value)),
                None => (attribute, None),
            }),
        }
    }

    fn service(&self, span: &Span) -> bool {
        self.filter.service.is_empty() || span.service() == self.filter.service
    }

    fn name(&self, span: &Span) -> bool {
        self.name.is_empty() || span.name.to_lowercase().contains(&self.name)
    }

    fn attribute(&self, span: &Span) -> bool {
        let Some((key, value)) = self.attribute else {
            return true;
        };
        span.attributes
            .iter()
            .chain(&span.resource.attributes)
            .any(|kv| &*kv.key == key && value.is_none_or(|v| kv.value.to_string() == v))
    }

    fn error(&self, span: &Span) -> bool {
        !self.filter.errors || matches!(span.status, Status::Error(_))
    }
}

impl ListFilter {
    /// Whether `trace` is one of the traces this filter lets through (its order and limit
    /// aside); a trace with no span held is not. Each condition on spans may be met by a
    /// different span.
    pub fn matches(&self, trace: &TraceEntry) -> bool {
        let test = SpanTest::new(self);
        let any = |meets: &dyn Fn(&Span) -> bool| trace.spans.iter().any(meets);
        !trace.spans.is_empty()
            && self.trace_id.is_none_or(|id| id == trace.trace_id)
            && any(&|s| test.service(s))
            && any(&|s| test.name(s))
            && any(&|s| test.attribute(s))
            && any(&|s| test.error(s))
            && (self.min_duration_ns == 0 || {
                let (start, end) = bounds(&trace.spans);
                end.saturating_sub(start) >= self.min_duration_ns
            })
    }

    /// Whether `span` meets every condition on spans that is set: service, name, attribute,
    /// errors, and a duration of its own at least [`ListFilter::min_duration_ns`] (the trace
    /// id, order and limit aside). With none set, every span does.
    pub fn matches_span(&self, span: &Span) -> bool {
        let test = SpanTest::new(self);
        test.service(span)
            && test.name(span)
            && test.attribute(span)
            && test.error(span)
            && span.end_unix_nano.saturating_sub(span.start_unix_nano) >= self.min_duration_ns
    }
}

/// One trace in a [`TraceList`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listed {
    /// The trace.
    pub trace_id: TraceId,
    /// Its root span's name and service.
    pub name: String,
    /// The root's service.
    pub service: String,
    /// Its services in order of first appearance in the tree.
    pub services: Vec<String>,
    /// Spans held.
    pub spans: usize,
    /// Spans with an error status.
    pub errors: usize,
    /// The earliest start, in Unix nanoseconds.
    pub start_unix_nano: u64,
    /// From the earliest start to the latest end.
    pub duration_ns: u64,
    /// Whether it is complete (quiet for the window).
    pub complete: bool,
    /// Spans dropped by a bound (partial when non-zero).
    pub lost_spans: u64,
    /// Changes whenever the trace does (spans or completions): a page redraws on a change.
    pub version: u64,
    /// The highest severity among the findings held ([`Session::findings`]) that concern it
    /// (either trace of a lost hop); `None` when none does.
    pub findings: Option<Severity>,
}

/// The traces a page lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceList {
    /// The traces that match, in order, up to the limit.
    pub traces: Vec<Listed>,
    /// How many match in all.
    pub matching: usize,
    /// Every service of every trace held, sorted.
    pub services: Vec<String>,
}

impl Session {
    /// The traces held that match `filter`, in its order.
    pub fn list(&self, filter: &ListFilter) -> TraceList {
        let mut services: Vec<&str> = Vec::new();
        let mut rows: Vec<(u64, u64, TraceId)> = Vec::new();
        for (id, entry) in self.assembler.traces() {
            for span in &entry.spans {
                if !services.contains(&span.service()) {
                    services.push(span.service());
                }
            }
            if filter.matches(entry) {
                let (start, end) = bounds(&entry.spans);
                rows.push((start, end - start, *id));
            }
        }
        match filter.order {
            ListOrder::Duration => rows.sort_by_key(|r| std::cmp::Reverse(r.1)),
            ListOrder::Newest => rows.sort_by_key(|r| std::cmp::Reverse(r.0)),
        }
        let matching = rows.len();
        if filter.limit > 0 {
            rows.truncate(filter.limit);
        }
        let mut services: Vec<String> = services.into_iter().map(str::to_owned).collect();
        services.sort();
        let mut worst: HashMap<TraceId, Severity> = HashMap::new();
        for finding in &self.findings {
            for id in &finding.trace_ids {
                let severity = worst.entry(*id).or_insert(finding.severity());
                // Error sorts first.
                *severity = (*severity).min(finding.severity());
            }
        }
        TraceList {
            traces: rows
                .into_iter()
                .filter_map(|(_, _, id)| {
                    let mut listed = self.listed(&id)?;
                    listed.findings = worst.get(&id).copied();
                    Some(listed)
                })
                .collect(),
            matching,
            services,
        }
    }

    fn listed(&self, id: &TraceId) -> Option<Listed> {
        let entry = self.assembler.trace(id)?;
        let view = self.view(id)?;
        let root: &Span = view.root()?;
        Some(Listed {
            trace_id: *id,
            name: root.name.clone(),
            service: root.service().to_owned(),
            services: view.services().into_iter().map(str::to_owned).collect(),
            spans: entry.spans.len(),
            errors: entry
                .spans
                .iter()
                .filter(|s| matches!(s.status, Status::Error(_)))
                .count(),
            start_unix_nano: view.start(),
            duration_ns: view.end() - view.start(),
            complete: entry.complete,
            lost_spans: entry.lost_spans,
            version: entry.spans.len() as u64 * 1000 + u64::from(entry.completions),
            findings: None,
        })
    }

    /// The spans of trace `id` that meet `filter`'s conditions on spans
    /// ([`ListFilter::matches_span`]), in the order held; `None` when the trace is not held.
    pub fn matching_spans(&self, id: &TraceId, filter: &ListFilter) -> Option<Vec<SpanId>> {
        let trace = self.assembler.trace(id)?;
        Some(
            trace
                .spans
                .iter()
                .filter(|s| filter.matches_span(s))
                .map(|s| s.span_id)
                .collect(),
        )
    }
}
