//! `sampling-forced` on live traffic: a recorded, sampled child in another service of a parent
//! whose exporter reports trace flags and says it was not sampled (recorded anyway: a
//! `RecordOnly` sampler, a tail-sampling Collector). Where the unsampled parent exported
//! nothing, spans cannot tell: `lens probe --unsampled` (docs/doctor.md#sampling-forced).

use std::collections::HashSet;
use std::sync::Arc;

use super::finding::{Finding, Rule};
use crate::model::Span;

/// The most services remembered as reporting trace flags.
const MAX_FLAG_SERVICES: usize = 10_000;

/// Remembers `span`'s service as one whose exporter reports trace flags, when it reports the
/// sampled flag (every exported span was sampled, unless recorded only: an exporter that leaves
/// the flag off on all of them reports no flags).
pub(super) fn learn(services: &mut HashSet<Arc<str>>, span: &Span) {
    if span.flags & 0x01 != 0
        && services.len() < MAX_FLAG_SERVICES
        && !services.contains(span.service())
    {
        services.insert(Arc::clone(&span.resource.service));
    }
}

/// Whether `child` was sampled where its `parent`, in another service whose exporter reports
/// flags, says it was not.
pub(super) fn forced(parent: &Span, child: &Span) -> bool {
    parent.service() != child.service() && parent.flags & 0x01 == 0 && child.flags & 0x01 != 0
}

/// The finding for `child`, sampled under the unsampled `parent`.
pub(super) fn finding(parent: &Span, child: &Span) -> Finding {
    Finding {
        rule: Rule::SamplingForced,
        trace_ids: vec![child.trace_id],
        span_ids: vec![parent.span_id, child.span_id],
        services: vec![parent.service().to_owned(), child.service().to_owned()],
        message: format!(
            "{} sampled a request that {} did not (span {} unsampled, span {} recorded with the \
sampled flag): a hop between them forces the sampled flag on, which breaks head sampling; keep \
the flags the request came with",
            child.service(),
            parent.service(),
            parent.span_id,
            child.span_id
        ),
    }
}
