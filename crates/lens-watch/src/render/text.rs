//! The waterfall as text: a header, one row per span (tree, name, service, kind, duration, a
//! time bar), a line per link, a line per log record given to the view (severity and body,
//! indented under its span), the "time to first chunk by hop" table of a streamed trace, the
//! summary line; ANSI colours on request. A span's first chunk ([`crate::stream`]) is a `┃` in
//! its bar.

use std::fmt::Write as _;

use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

use super::format::{format_duration, span_duration};
use super::layout::Layout;
use super::summary::summary_line;
use super::view::TraceView;
use crate::model::{Span, SpanId, Status, TraceId};
use crate::stream::{HopPart, StreamHop};

/// The mark of a span's first chunk in its bar.
pub const FIRST_CHUNK_MARK: char = '┃';

/// Width of the time bar, in characters.
pub const BAR_WIDTH: usize = 40;

/// The widest the name column grows (tree prefix included), in characters.
const NAME_WIDTH_MAX: usize = 56;

/// Colours for services, in order of first appearance (ANSI foreground codes).
const ANSI_PALETTE: [&str; 8] = ["36", "32", "33", "35", "34", "96", "92", "95"];
const ANSI_DIM: &str = "2";
const ANSI_BOLD: &str = "1";
const ANSI_RED: &str = "31";
const ANSI_YELLOW: &str = "33";

struct Painter {
    colour: bool,
}

impl Painter {
    fn paint(&self, out: &mut String, code: &str, text: &str) {
        if self.colour && !text.is_empty() {
            let _ = write!(out, "\x1b[{code}m{text}\x1b[0m");
        } else {
            out.push_str(text);
        }
    }
}

fn pad(out: &mut String, width: usize, used: usize) {
    for _ in used..width {
        out.push(' ');
    }
}

/// `text` cut to at most `max` terminal columns (display width: a CJK character or an emoji
/// takes two), with `…` where it was cut; and the columns it takes.
fn truncate(text: &str, max: usize) -> (String, usize) {
    let width = text.width();
    if width <= max {
        return (text.to_owned(), width);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    (out, used + 1)
}

/// The span a link points at (by id, in any trace `trace` resolves), as `name (service)`.
pub fn link_target(trace: &TraceView<'_>, to_trace: TraceId, span: SpanId) -> String {
    match trace.link_target(to_trace, span) {
        Some(target) => format!("{} ({})", target.name, target.service()),
        None => format!("span {span} of trace {to_trace}"),
    }
}

/// Writes the waterfall of `view` (header, one row per span, a line per link, the summary
/// line); ANSI colours when `colour`.
pub fn render(view: &TraceView<'_>, colour: bool, out: &mut String) {
    let trace = view.layout();
    let p = Painter { colour };
    let services = trace.services();
    let service_width = services
        .iter()
        .map(|s| s.width())
        .max()
        .unwrap_or(0)
        .max("service".len());
    let name_width = trace
        .rows
        .iter()
        .map(|r| r.prefix.width() + r.span.name.width())
        .max()
        .unwrap_or(0)
        .clamp("span".len(), NAME_WIDTH_MAX);
    let kind_width = "INTERNAL".len();
    let duration_width = 9;

    p.paint(out, ANSI_BOLD, &format!("trace {}", trace.trace_id));
    out.push('\n');
    let mut header = String::new();
    header.push_str("span");
    pad(&mut header, name_width, 4);
    let _ = write!(
        header,
        "  {:<service_width$}  {:<kind_width$}  {:>duration_width$}  timeline",
        "service", "kind", "duration"
    );
    p.paint(out, ANSI_DIM, &header);
    out.push('\n');

    for row in &trace.rows {
        let span = row.span;
        let service = span.service();
        let colour_code = service_colour(&services, service);
        let prefix_len = row.prefix.width();
        let (name, name_len) = truncate(&span.name, name_width.saturating_sub(prefix_len));
        p.paint(out, ANSI_DIM, &row.prefix);
        let error = matches!(span.status, Status::Error(_));
        p.paint(out, if error { ANSI_RED } else { ANSI_BOLD }, &name);
        pad(out, name_width, prefix_len + name_len);
        out.push_str("  ");
        p.paint(out, colour_code, service);
        pad(out, service_width, service.width());
        out.push_str("  ");
        let kind = span.kind.name();
        p.paint(out, ANSI_DIM, kind);
        pad(out, kind_width, kind.len());
        let _ = write!(
            out,
            "  {:>duration_width$}  ",
            format_duration(span_duration(span))
        );
        let (from, to) = bar_cells(trace, span);
        out.push('│');
        pad(out, from, 0);
        match first_chunk_cell(trace, span, from, to) {
            Some(mark) => {
                p.paint(out, colour_code, &"█".repeat(mark - from));
                p.paint(out, ANSI_BOLD, &FIRST_CHUNK_MARK.to_string());
                p.paint(out, colour_code, &"█".repeat(to - mark - 1));
            }
            None => p.paint(out, colour_code, &"█".repeat(to - from)),
        }
        pad(out, BAR_WIDTH, to);
        out.push('│');
        if error {
            out.push(' ');
            p.paint(out, ANSI_RED, "error");
        }
        out.push('\n');
        for link in &span.links {
            let target = link_target(view, link.trace_id, link.span_id);
            p.paint(out, ANSI_DIM, &row.continuation);
            p.paint(out, ANSI_DIM, &format!("↳ link → {target}"));
            out.push('\n');
        }
        for log in view.logs(span.span_id) {
            p.paint(out, ANSI_DIM, &row.continuation);
            let severity = log.severity();
            let code = match log.severity_number {
                17.. => ANSI_RED,
                13..=16 => ANSI_YELLOW,
                _ => ANSI_DIM,
            };
            p.paint(
                out,
                code,
                if severity.is_empty() { "LOG" } else { severity },
            );
            out.push(' ');
            // One line a record.
            out.push_str(&log.body.to_string().replace(['\n', '\r'], " "));
            out.push('\n');
        }
    }
    let spans: Vec<&Span> = trace.rows.iter().map(|r| r.span).collect();
    first_chunk_table(&crate::stream::by_hop(&spans), out);
    out.push_str(&summary_line(&view.summary()));
    out.push('\n');
}

/// The cell of `span`'s first chunk in its bar `from..to`, when it records one.
fn first_chunk_cell(trace: &Layout<'_>, span: &Span, from: usize, to: usize) -> Option<usize> {
    let at = crate::stream::first_chunk(span)?;
    let cell = (trace.position(at) * BAR_WIDTH as f64).floor() as usize;
    Some(cell.clamp(from, to - 1))
}

/// The "time to first chunk by hop" table (nothing for a trace without one): a row per part,
/// from the outermost server inward, when its first chunk passed (after the outermost server's
/// start) and what it added to the outer time to first chunk.
pub fn first_chunk_table(hops: &[StreamHop<'_>], out: &mut String) {
    let Some(outer) = hops.first() else {
        return;
    };
    let total = hops.iter().map(|h| h.added).sum::<u64>();
    let _ = writeln!(
        out,
        "time to first chunk by hop: {} at {} ({})",
        format_duration(std::time::Duration::from_nanos(total)),
        outer.span.service(),
        outer.span.name
    );
    let rows: Vec<(String, String, String)> = hops
        .iter()
        .enumerate()
        .map(|(i, hop)| {
            let what = match hop.part {
                HopPart::Network => {
                    let to = hops.get(i + 1).map_or("?", |h| h.span.service());
                    format!("network  {} → {to}", hop.span.service())
                }
                part => format!(
                    "{:<8} {} ({})",
                    part.name(),
                    hop.span.service(),
                    hop.span.name
                ),
            };
            (
                what,
                format_duration(std::time::Duration::from_nanos(hop.first_chunk_at)),
                format_duration(std::time::Duration::from_nanos(hop.added)),
            )
        })
        .collect();
    let width = rows.iter().map(|r| r.0.width()).max().unwrap_or(0).max(3);
    let _ = writeln!(
        out,
        "  {:<width$}  {:>11}  {:>10}",
        "hop", "first chunk", "added"
    );
    for (what, at, added) in rows {
        let used = what.width();
        out.push_str("  ");
        out.push_str(&what);
        pad(out, width, used);
        let _ = writeln!(out, "  {at:>11}  {:>10}", format!("+{added}"));
    }
}

fn service_colour(services: &[&str], service: &str) -> &'static str {
    let i = services.iter().position(|s| *s == service).unwrap_or(0);
    ANSI_PALETTE[i % ANSI_PALETTE.len()]
}

/// The bar's first cell and one past its last, out of [`BAR_WIDTH`]; at least one cell.
fn bar_cells(trace: &Layout<'_>, span: &Span) -> (usize, usize) {
    let width = BAR_WIDTH as f64;
    let from = (trace.position(span.start_unix_nano) * width).floor() as usize;
    let to = (trace.position(span.end_unix_nano) * width).ceil() as usize;
    let from = from.min(BAR_WIDTH - 1);
    (from, to.clamp(from + 1, BAR_WIDTH))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::model::Resource;
    use crate::testing::{TRACE, sample, view};

    fn plain(spans: &[Span]) -> String {
        let mut out = String::new();
        render(&view(spans), false, &mut out);
        out
    }

    #[test]
    fn plain_text_has_no_escape_codes_and_shows_every_span_and_link() {
        let text = plain(&sample());
        assert!(!text.contains('\x1b'), "{text}");
        for name in ["request", "POST", "POST /v1", "stage a", "stage b"] {
            assert!(text.lines().any(|l| l.contains(name)), "{name} in {text}");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("trace {TRACE}"));
        assert!(lines[1].starts_with("span") && lines[1].contains("timeline"));
        // stage b's link line sits under it and names its target and service.
        let b = lines.iter().position(|l| l.contains("stage b")).unwrap();
        assert!(
            lines[b + 1].contains("↳ link → stage a (gateway)"),
            "{}",
            lines[b + 1]
        );
        assert!(lines[b].contains("gateway") && lines[b].contains("INTERNAL"));
        assert!(lines[b].contains("200 µs"));
        assert!(lines.last().unwrap().starts_with("trace "));
    }

    #[test]
    fn wide_characters_line_up_by_display_width() {
        let mut spans = sample();
        let wide = Arc::new(Resource::for_service("训练网关"));
        for span in &mut spans {
            if span.service() == "gateway" {
                span.resource = Arc::clone(&wide);
            }
        }
        spans[0].name = "阶段 b 🚀".to_owned();
        let text = plain(&spans);
        // The terminal column where each row's timeline starts, and where its kind starts.
        let column = |line: &str, at: usize| line[..at].width();
        let rows: Vec<&str> = text.lines().filter(|l| l.contains('│')).collect();
        assert_eq!(rows.len(), 5, "{text}");
        let bars: Vec<usize> = rows
            .iter()
            .map(|l| column(l, l.find('│').unwrap()))
            .collect();
        assert!(bars.iter().all(|c| *c == bars[0]), "{bars:?}\n{text}");
        let kinds: Vec<usize> = rows
            .iter()
            .map(|l| {
                let at = ["INTERNAL", "CLIENT", "SERVER"]
                    .iter()
                    .find_map(|k| l.find(k))
                    .unwrap();
                column(l, at)
            })
            .collect();
        assert!(kinds.iter().all(|c| *c == kinds[0]), "{kinds:?}\n{text}");
    }

    #[test]
    fn truncation_counts_columns() {
        assert_eq!(truncate("训练网关", 8), ("训练网关".to_owned(), 8));
        // Five columns: two wide characters and the ellipsis.
        assert_eq!(truncate("训练网关", 6), ("训练…".to_owned(), 5));
        assert_eq!(truncate("abcdef", 4), ("abc…".to_owned(), 4));
    }

    #[test]
    fn bars_are_placed_by_time() {
        let text = plain(&sample());
        let bar = |name: &str| -> String {
            let line = text.lines().find(|l| l.contains(name)).unwrap();
            let start = line.find('│').unwrap();
            line[start..].chars().skip(1).take(BAR_WIDTH).collect()
        };
        // The root spans the whole trace; stage a covers 300..500 µs of 1000: cells 12..20.
        assert_eq!(bar("request"), "█".repeat(BAR_WIDTH));
        let a = bar("stage a");
        assert_eq!(a.chars().position(|c| c == '█'), Some(12));
        assert_eq!(a.chars().filter(|c| *c == '█').count(), 8);
    }

    #[test]
    fn colour_uses_one_code_per_service() {
        let spans = sample();
        let mut out = String::new();
        render(&view(&spans), true, &mut out);
        let client = out
            .lines()
            .find(|l| l.contains("INTERNAL") && l.contains("request"))
            .unwrap();
        let gateway = out.lines().find(|l| l.contains("POST /v1")).unwrap();
        assert!(client.contains("\x1b[36mclient"), "{client:?}");
        assert!(gateway.contains("\x1b[32mgateway"), "{gateway:?}");
        // Stripped of escapes, the coloured text is the plain text.
        let mut stripped = String::new();
        let mut chars = out.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                stripped.push(c);
            }
        }
        assert_eq!(stripped, plain(&spans));
    }
}
