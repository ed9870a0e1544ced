//! The instance of a service that exported a span, for naming the replica where a probe's
//! losses concentrate.

use crate::model::Span;

/// The resource attributes that name an instance, in the order they are preferred:
/// `service.instance.id`, else the host attributes.
const INSTANCE_ATTRIBUTES: [&str; 3] = ["service.instance.id", "host.name", "host.id"];

/// The instance of the service that exported `span`: its resource's `service.instance.id`, else
/// `host.name`, else `host.id`; `None` when the resource names none.
pub(crate) fn name(span: &Span) -> Option<String> {
    INSTANCE_ATTRIBUTES.iter().find_map(|key| {
        span.resource
            .attributes
            .iter()
            .find(|a| &*a.key == *key)
            .and_then(|a| a.value.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    })
}
