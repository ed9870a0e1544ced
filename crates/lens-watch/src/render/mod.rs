//! The one waterfall: a trace laid out as a tree by parent (with links, services, kinds,
//! durations and time bars) in a [`TraceView`] that has everything a renderer needs resolved,
//! its summary, and its renderings, each `(what, out: &mut String)`: [`Output::trace`] and
//! [`Output::findings`] for a terminal (text, colour optional) or JSON lines, [`html::trace`] and
//! [`html::page`] for a page.

mod format;
mod hops;
mod layout;
mod output;
mod summary;
mod view;

pub mod html;
pub mod json;
pub mod map;
pub mod text;

pub(crate) use format::counted;
pub use format::{format_duration, span_duration};
pub use hops::{HopNames, hop_label};
pub use layout::{Layout, Row, bounds, layout, layouts};
pub use output::Output;
pub use summary::{Summary, summary_line};
pub use view::TraceView;

#[cfg(test)]
mod tests;
