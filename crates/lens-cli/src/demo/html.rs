//! The waterfall as one self-contained HTML page: inline CSS, no script, no external asset;
//! written as well-formed XML (XHTML syntax) so that any XML parser can check it.

use std::collections::HashMap;
use std::fmt::Write as _;

use opentelemetry::trace::{SpanId, Status, TraceId};

use super::collect::CollectedSpan;
use super::waterfall::{Trace, format_duration, kind_name, services, span_duration, summary_line};

const STYLE: &str = "
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
";

/// Escapes text for element content and attribute values.
fn escape(out: &mut String, text: &str) {
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

/// The page for `traces` (`all` resolves link targets by trace id and span id).
pub(crate) fn render_html(
    traces: &[Trace<'_>],
    all: &HashMap<(TraceId, SpanId), &CollectedSpan>,
) -> String {
    let mut out = String::with_capacity(4096 + traces.len() * 4096);
    let title = match traces {
        [one] => format!("lens demo: trace {}", one.trace_id),
        _ => format!("lens demo: {} traces", traces.len()),
    };
    out.push_str("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>");
    escape(&mut out, &title);
    out.push_str("</title>\n<style>");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<h1>");
    escape(&mut out, &title);
    out.push_str("</h1>\n");
    for trace in traces {
        render_trace(&mut out, trace, all);
    }
    out.push_str("<footer>Written by <code>lens demo --html</code>. Bars: start and duration of each span within its trace; hover a bar for its attributes.</footer>\n</body>\n</html>\n");
    out
}

fn render_trace(
    out: &mut String,
    trace: &Trace<'_>,
    all: &HashMap<(TraceId, SpanId), &CollectedSpan>,
) {
    let services = services(trace);
    let _ = write!(
        out,
        "<section class=\"trace\" data-trace-id=\"{}\">\n<h2>trace {}</h2>\n<p class=\"summary\">",
        trace.trace_id, trace.trace_id
    );
    escape(out, &summary_line(&trace.summary()));
    out.push_str("</p>\n<table>\n<thead><tr><th>span</th><th>service</th><th>kind</th><th>duration</th><th>timeline</th></tr></thead>\n<tbody>\n");
    for row in &trace.rows {
        let data = &row.span.data;
        let error = matches!(data.status, Status::Error { .. });
        let parent = if data.parent_span_id == SpanId::INVALID {
            String::new()
        } else {
            data.parent_span_id.to_string()
        };
        let _ = write!(
            out,
            "<tr class=\"span{}\" data-span-id=\"{}\" data-parent-id=\"{}\" data-kind=\"{}\" data-service=\"{}\">",
            if error { " error" } else { "" },
            data.span_context.span_id(),
            parent,
            kind_name(&data.span_kind),
            escaped(&row.span.service),
        );
        let _ = write!(
            out,
            "<td class=\"name\" style=\"padding-left: {:.1}em\">",
            0.5 + 1.4 * row.depth as f64
        );
        escape(out, &data.name);
        for link in &data.links.links {
            let target = all.get(&(link.span_context.trace_id(), link.span_context.span_id()));
            let _ = write!(
                out,
                "<div class=\"link\" data-link-span-id=\"{}\">↳ link → ",
                link.span_context.span_id()
            );
            match target {
                Some(t) => {
                    escape(out, &t.data.name);
                    out.push_str(" (");
                    escape(out, &t.service);
                    out.push(')');
                }
                None => {
                    let _ = write!(
                        out,
                        "span {} of trace {}",
                        link.span_context.span_id(),
                        link.span_context.trace_id()
                    );
                }
            }
            out.push_str("</div>");
        }
        let colour = service_colour(
            services
                .iter()
                .position(|s| **s == *row.span.service)
                .unwrap_or(0),
        );
        let _ = write!(
            out,
            "</td><td class=\"service\"><span class=\"service\" style=\"background: {colour}\"></span>"
        );
        escape(out, &row.span.service);
        let _ = write!(
            out,
            "</td><td class=\"kind\">{}</td><td class=\"duration\">{}</td>",
            kind_name(&data.span_kind),
            format_duration(span_duration(data))
        );
        let left = trace.position(data.start_time) * 100.0;
        let width = (trace.position(data.end_time) * 100.0 - left).max(0.0);
        let mut tooltip = format!("{} · {}", data.name, format_duration(span_duration(data)));
        for kv in &data.attributes {
            let _ = write!(tooltip, "\n{} = {}", kv.key, kv.value);
        }
        let _ = write!(
            out,
            "<td class=\"timeline\"><div class=\"track\"><div class=\"bar\" style=\"left: {left:.3}%; width: {width:.3}%; background: {colour}\" title=\""
        );
        escape(out, &tooltip);
        out.push_str("\"></div></div></td></tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::super::waterfall::tests::{TRACE, sample};
    use super::super::waterfall::{index, traces};
    use super::*;
    use opentelemetry::KeyValue;

    #[test]
    fn page_is_well_formed_self_contained_and_has_every_span() {
        let mut spans = sample();
        // Text that must be escaped, in a name and in an attribute.
        spans[0].data.name = "a <b> & \"c\"".into();
        spans[0]
            .data
            .attributes
            .push(KeyValue::new("url.full", "http://x/?a=1&b=<2>"));
        let traces = traces(&spans);
        let page = render_html(&traces, &index(&spans));
        assert!(page.starts_with("<!DOCTYPE html>"));
        let doc = roxmltree::Document::parse_with_options(
            &page,
            roxmltree::ParsingOptions {
                allow_dtd: true,
                ..Default::default()
            },
        )
        .unwrap();
        for node in doc.descendants().filter(|n| n.is_element()) {
            let tag = node.tag_name().name();
            assert!(
                !matches!(tag, "script" | "link" | "img" | "iframe" | "object"),
                "external asset element <{tag}>"
            );
            assert!(node.attribute("src").is_none() && node.attribute("href").is_none());
        }
        let rows: Vec<_> = doc
            .descendants()
            .filter(|n| n.attribute("data-span-id").is_some())
            .collect();
        assert_eq!(rows.len(), spans.len());
        for s in &spans {
            let id = s.data.span_context.span_id().to_string();
            assert!(
                rows.iter()
                    .any(|r| r.attribute("data-span-id") == Some(id.as_str()))
            );
        }
        assert!(page.contains("a &lt;b&gt; &amp; &quot;c&quot;"));
        let section = doc
            .descendants()
            .find(|n| n.has_tag_name("section"))
            .unwrap();
        assert_eq!(section.attribute("data-trace-id"), Some(TRACE));
        let links: Vec<_> = doc
            .descendants()
            .filter(|n| n.attribute("data-link-span-id").is_some())
            .collect();
        assert_eq!(links.len(), 1);
        assert!(links[0].text().unwrap().contains("stage a (gateway)"));
    }
}
