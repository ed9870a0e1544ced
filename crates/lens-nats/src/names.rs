//! [`Names`]: how a wrapper names destinations on its spans and metrics.

/// How a wrapper names destinations on its spans and metrics.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    /// Declared destination templates.
    pub(crate) templates: lens_span::messaging::DestinationTemplates,
    /// Whether the metrics carry the subject (the user said subjects are few).
    pub(crate) subjects_in_metrics: bool,
    /// Whether spans record `messaging.message.body.size` (opt-in).
    pub(crate) body_size: bool,
}
