//! The waterfall as HTML: a self-contained page (inline CSS, no script, no external asset), or
//! one `<section>` per trace for a live page to swap in; well-formed XML (XHTML syntax) so that
//! any XML parser can check it.

use std::fmt::Write as _;

use super::format::{format_duration, span_duration};
use super::layout::Layout;
use super::summary::summary_line;
use super::view::TraceView;
use crate::model::LogRecord;
use crate::model::Status;

/// The page's style sheet (also used by a live page).
pub const STYLE: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1d2330; background: #fafbfc; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
h2 { font: 600 1em ui-monospace, monospace; margin: 1.6em 0 .4em; }
p.summary { font-family: ui-monospace, monospace; color: #4a5160; margin: .2em 0 .8em; }
table { border-collapse: collapse; width: 100%; }
th { text-align: left; font-weight: 600; color: #4a5160; border-bottom: 1px solid #d0d4dc; padding: 4px 8px; }
td { padding: 3px 8px; border-bottom: 1px solid #eceef2; vertical-align: top; white-space: nowrap; }
td.name { font-family: ui-monospace, monospace; }
td.kind { color: #6a7180; font-size: .85em; }
td.duration { text-align: right; font-family: ui-monospace, monospace; }
td.timeline { width: 45%; min-width: 240px; }
div.track { position: relative; height: 14px; margin-top: 3px; background: #f0f2f5; border-radius: 2px; }
div.bar { position: absolute; top: 0; bottom: 0; min-width: 2px; border-radius: 2px; }
div.link { color: #6a7180; font-size: .85em; }
tr.error td.name { color: #c0392b; }
span.service { display: inline-block; width: .8em; height: .8em; border-radius: 50%; margin-right: .4em; }
footer { margin-top: 2em; color: #8a90a0; font-size: .85em; }
tr.logs td { padding: 0 8px 4px; white-space: normal; }
tr.logs summary { cursor: pointer; color: #6a7180; font-size: .85em; }
ol.logs { list-style: none; margin: 0; padding: 0; font: .85em ui-monospace, monospace; }
ol.logs li { padding: 1px 0; }
ol.logs time { color: #8a90a0; margin-right: .6em; }
span.severity { display: inline-block; min-width: 4.5em; font-weight: 600; color: #4a5160; }
li.warn span.severity { color: #b7791f; }
li.error span.severity { color: #c0392b; }
span.log-attributes { color: #8a90a0; margin-left: .8em; }
";

/// Escapes text for element content and attribute values.
pub fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Characters XML 1.0 does not allow, even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape(&mut out, text);
    out
}

/// A colour per service, in order of first appearance.
fn service_colour(index: usize) -> String {
    let hue = (index * 137 + 200) % 360;
    format!("hsl({hue}, 62%, 52%)")
}

/// A whole page for `traces` into `out`: `title` (text) as its title and heading, `footer`
/// (HTML, written as given) at its foot.
pub fn page(traces: &[TraceView<'_>], title: &str, footer: &str, out: &mut String) {
    out.reserve(4096 + traces.len() * 4096);
    out.push_str("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>");
    escape(out, title);
    out.push_str("</title>\n<style>");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<h1>");
    escape(out, title);
    out.push_str("</h1>\n");
    for trace in traces {
        self::trace(trace, out);
    }
    out.push_str("<footer>");
    out.push_str(footer);
    out.push_str("</footer>\n</body>\n</html>\n");
}

/// One trace as a `<section class="trace" data-trace-id="...">` into `out`: heading, summary
/// line and the waterfall table, one `<tr data-span-id>` per span with its attributes in the
/// bar's title (a fragment a live page swaps in).
pub fn trace(view: &TraceView<'_>, out: &mut String) {
    let trace = view.layout();
    let services = trace.services();
    let _ = write!(
        out,
        "<section class=\"trace\" data-trace-id=\"{}\">\n<h2>trace {}</h2>\n<p class=\"summary\">",
        trace.trace_id, trace.trace_id
    );
    escape(out, &summary_line(&view.summary()));
    out.push_str("</p>\n<table>\n<thead><tr><th>span</th><th>service</th><th>kind</th><th>duration</th><th>timeline</th></tr></thead>\n<tbody>\n");
    for row in &trace.rows {
        let span = row.span;
        let error = matches!(span.status, Status::Error(_));
        let parent = span
            .parent_span_id
            .map(|p| p.to_string())
            .unwrap_or_default();
        let _ = write!(
            out,
            "<tr class=\"span{}\" data-span-id=\"{}\" data-parent-id=\"{}\" data-kind=\"{}\" data-service=\"{}\">",
            if error { " error" } else { "" },
            span.span_id,
            parent,
            span.kind.name(),
            escaped(span.service()),
        );
        let _ = write!(
            out,
            "<td class=\"name\" style=\"padding-left: {:.1}em\">",
            0.5 + 1.4 * row.depth as f64
        );
        escape(out, &span.name);
        for link in &span.links {
            let _ = write!(
                out,
                "<div class=\"link\" data-link-span-id=\"{}\">↳ link → ",
                link.span_id
            );
            // A link into another trace opens it (the page follows `#trace=`).
            let across = link.trace_id != trace.trace_id;
            if across {
                let _ = write!(out, "<a href=\"#trace={}\">", link.trace_id);
            }
            match view.link_target(link.trace_id, link.span_id) {
                Some(t) => {
                    escape(out, &t.name);
                    out.push_str(" (");
                    escape(out, t.service());
                    out.push(')');
                }
                None => {
                    let _ = write!(out, "span {} of trace {}", link.span_id, link.trace_id);
                }
            }
            if across {
                out.push_str("</a>");
            }
            out.push_str("</div>");
        }
        let colour = service_colour(
            services
                .iter()
                .position(|s| *s == span.service())
                .unwrap_or(0),
        );
        let _ = write!(
            out,
            "</td><td class=\"service\"><span class=\"service\" style=\"background: {colour}\"></span>"
        );
        escape(out, span.service());
        let _ = write!(
            out,
            "</td><td class=\"kind\">{}</td><td class=\"duration\">{}</td>",
            span.kind.name(),
            format_duration(span_duration(span))
        );
        let left = trace.position(span.start_unix_nano) * 100.0;
        let width = (trace.position(span.end_unix_nano) * 100.0 - left).max(0.0);
        let mut tooltip = format!("{} · {}", span.name, format_duration(span_duration(span)));
        let first_chunk = crate::stream::first_chunk(span);
        if let Some(at) = first_chunk {
            let _ = write!(
                tooltip,
                "\nfirst chunk: {} after the span's start",
                format_duration(std::time::Duration::from_nanos(
                    at.saturating_sub(span.start_unix_nano)
                ))
            );
        }
        for kv in &span.attributes {
            let _ = write!(tooltip, "\n{} = {}", kv.key, kv.value);
        }
        let _ = write!(
            out,
            "<td class=\"timeline\"><div class=\"track\"><div class=\"bar\" style=\"left: {left:.3}%; width: {width:.3}%; background: {colour}\" title=\""
        );
        escape(out, &tooltip);
        out.push_str("\"></div>");
        if let Some(at) = first_chunk {
            first_chunk_tick(trace, span, at, out);
        }
        out.push_str("</div></td></tr>\n");
        let logs = view.logs(span.span_id);
        if !logs.is_empty() {
            let _ = writeln!(
                out,
                "<tr class=\"logs\" data-logs-for=\"{}\"><td colspan=\"5\" style=\"padding-left: {:.1}em\"><details open=\"open\"><summary>{} log record{}</summary>",
                span.span_id,
                1.9 + 1.4 * row.depth as f64,
                logs.len(),
                if logs.len() == 1 { "" } else { "s" },
            );
            self::logs(logs, Some(trace.start), out);
            out.push_str("</details></td></tr>\n");
        }
    }
    out.push_str("</tbody>\n</table>\n");
    let spans: Vec<&crate::model::Span> = trace.rows.iter().map(|r| r.span).collect();
    first_chunk_table(&crate::stream::by_hop(&spans), out);
    out.push_str("</section>\n");
}

/// The tick of a span's first chunk (at `at`, Unix nanoseconds) on its track, the figure in its
/// title (styled inline: pages without streams keep their style sheet).
fn first_chunk_tick(trace: &Layout<'_>, span: &crate::model::Span, at: u64, out: &mut String) {
    let left = trace.position(at) * 100.0;
    let _ = write!(
        out,
        "<div class=\"first-chunk\" data-first-chunk-ns=\"{}\" style=\"position: absolute; top: -3px; bottom: -3px; width: 2px; margin-left: -1px; left: {left:.3}%; background: #1d2330\" title=\"first chunk: {} after the span's start\"></div>",
        at.saturating_sub(span.start_unix_nano),
        format_duration(std::time::Duration::from_nanos(
            at.saturating_sub(span.start_unix_nano)
        ))
    );
}

/// The "time to first chunk by hop" table of a streamed trace (nothing without one), as a
/// `<table class="first-chunk-by-hop">`.
pub fn first_chunk_table(hops: &[crate::stream::StreamHop<'_>], out: &mut String) {
    let Some(outer) = hops.first() else {
        return;
    };
    let total = hops.iter().map(|h| h.added).sum::<u64>();
    out.push_str("<h3 style=\"font-size: 1em; margin: 1em 0 .3em\">time to first chunk by hop: ");
    escape(
        out,
        &format_duration(std::time::Duration::from_nanos(total)),
    );
    out.push_str(" at ");
    escape(out, outer.span.service());
    out.push_str("</h3>\n<table class=\"first-chunk-by-hop\" style=\"width: auto\">\n<thead><tr><th>part</th><th>hop</th><th>first chunk</th><th>added</th></tr></thead>\n<tbody>\n");
    for (i, hop) in hops.iter().enumerate() {
        let _ = write!(
            out,
            "<tr data-span-id=\"{}\"><td class=\"kind\">{}</td><td class=\"name\">",
            hop.span.span_id,
            hop.part.name()
        );
        match hop.part {
            crate::stream::HopPart::Network => {
                escape(out, hop.span.service());
                out.push_str(" → ");
                escape(out, hops.get(i + 1).map_or("?", |h| h.span.service()));
            }
            _ => {
                escape(out, hop.span.service());
                out.push_str(" (");
                escape(out, &hop.span.name);
                out.push(')');
            }
        }
        let _ = writeln!(
            out,
            "</td><td class=\"duration\">{}</td><td class=\"duration\">+{}</td></tr>",
            format_duration(std::time::Duration::from_nanos(hop.first_chunk_at)),
            format_duration(std::time::Duration::from_nanos(hop.added))
        );
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Log records as an `<ol class="logs">`: one `<li>` each with its time (after `start`, in Unix
/// nanoseconds, when given: a trace's start; else the time of day, UTC), severity, body and
/// attributes.
pub fn logs(logs: &[&LogRecord], start: Option<u64>, out: &mut String) {
    out.push_str("<ol class=\"logs\">\n");
    for log in logs {
        let level = match log.severity_number {
            17.. => " error",
            13..=16 => " warn",
            _ => "",
        };
        let time = match start {
            Some(start) => format!(
                "+{}",
                format_duration(std::time::Duration::from_nanos(
                    log.time().saturating_sub(start)
                ))
            ),
            None => {
                let ms = log.time() / 1_000_000;
                let s = ms / 1000;
                format!(
                    "{:02}:{:02}:{:02}.{:03}",
                    s / 3600 % 24,
                    s / 60 % 60,
                    s % 60,
                    ms % 1000
                )
            }
        };
        let _ = write!(
            out,
            "<li class=\"log{level}\"><time title=\"{} ns since the Unix epoch\">{time}</time><span class=\"severity\">",
            log.time(),
        );
        escape(out, log.severity());
        out.push_str("</span> <span class=\"body\">");
        escape(out, &log.body.to_string());
        out.push_str("</span>");
        if !log.attributes.is_empty() {
            out.push_str("<span class=\"log-attributes\">");
            for (i, kv) in log.attributes.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                escape(out, &format!("{}={}", kv.key, kv.value));
            }
            out.push_str("</span>");
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::model::{KeyValue, Value};
    use crate::testing::{TRACE, sample, view};

    #[test]
    fn page_escapes_text_and_has_every_span_and_link() {
        let mut spans = sample();
        spans[0].name = "a <b> & \"c\"".into();
        spans[0].attributes.push(KeyValue::new(
            "url.full",
            Value::String("http://x/?a=1&b=<2>".into()),
        ));
        let mut page = String::new();
        super::page(&[view(&spans)], "t <1>", "<code>f</code>", &mut page);
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<title>t &lt;1&gt;</title>"));
        assert!(page.contains("<footer><code>f</code></footer>"));
        assert!(page.contains("a &lt;b&gt; &amp; &quot;c&quot;"));
        assert!(page.contains("url.full = http://x/?a=1&amp;b=&lt;2&gt;"));
        assert!(!page.contains("<script"));
        for s in &spans {
            assert!(page.contains(&format!("data-span-id=\"{}\"", s.span_id)));
        }
        assert!(page.contains(&format!("data-trace-id=\"{TRACE}\"")));
        assert_eq!(page.matches("data-link-span-id=").count(), 1);
        assert!(page.contains("↳ link → stage a (gateway)"));
    }

    #[test]
    fn a_span_shows_its_log_records_collapsibly_under_its_row() {
        let spans = sample();
        let mut warn = crate::testing::log(Some(3), "disk <low>");
        warn.severity_number = 13;
        let info = crate::testing::log(Some(3), "ok");
        let view = view(&spans).with_logs([&warn, &info]);
        let mut page = String::new();
        super::page(&[view], "t", "", &mut page);
        assert!(roxml_free_well_formed(&page));
        let server = page.find("data-span-id=\"0000000000000003\"").unwrap();
        let logs = page
            .find("<tr class=\"logs\" data-logs-for=\"0000000000000003\">")
            .unwrap();
        let next = page.find("data-span-id=\"0000000000000004\"").unwrap();
        assert!(server < logs && logs < next);
        assert!(page.contains("<summary>2 log records</summary>"));
        assert!(page.contains("<li class=\"log warn\">"));
        assert!(page.contains("<span class=\"severity\">WARN</span> <span class=\"body\">disk &lt;low&gt;</span><span class=\"log-attributes\">k=1</span>"));
        assert_eq!(page.matches("<tr class=\"logs\"").count(), 1);
    }

    /// Every element opened is closed, in order (what an XML parser checks first).
    fn roxml_free_well_formed(page: &str) -> bool {
        let mut open: Vec<&str> = Vec::new();
        let mut rest = page;
        while let Some(at) = rest.find('<') {
            rest = &rest[at + 1..];
            let end = rest.find('>').unwrap_or(rest.len());
            let tag = &rest[..end];
            if tag.starts_with('!') || tag.ends_with('/') {
                continue;
            }
            let name = tag
                .trim_start_matches('/')
                .split([' ', '\n'])
                .next()
                .unwrap_or("");
            if tag.starts_with('/') {
                if open.pop() != Some(name) {
                    return false;
                }
            } else {
                open.push(name);
            }
        }
        open.is_empty()
    }
}
