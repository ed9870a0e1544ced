//! `lens demo --html FILE`: a well-formed, self-contained page with a row (and a timeline bar)
//! for every span of the trace.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use demo_support::{SPANS_PER_TRACE, run, stderr, str_of};
use serde_json::Value;

#[test]
fn html_page_is_well_formed_self_contained_and_has_every_span() {
    let dir = std::env::temp_dir().join(format!("lens-demo-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.html");
    let output = run(&["--json", "--html", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let spans: Vec<Value> = serde_json::from_slice::<Value>(&output.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(spans.len(), SPANS_PER_TRACE);

    let page = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    let doc = roxmltree::Document::parse_with_options(
        &page,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .unwrap();

    // Self-contained: nothing is fetched.
    for node in doc.descendants().filter(|n| n.is_element()) {
        let tag = node.tag_name().name();
        assert!(
            !matches!(
                tag,
                "script" | "link" | "img" | "iframe" | "object" | "embed"
            ),
            "<{tag}>"
        );
        assert!(node.attribute("src").is_none() && node.attribute("href").is_none());
    }
    assert!(doc.descendants().any(|n| n.has_tag_name("style")));

    let trace_id = str_of(&spans[0], "trace_id");
    let section = doc
        .descendants()
        .find(|n| n.has_tag_name("section"))
        .unwrap();
    assert_eq!(section.attribute("data-trace-id"), Some(trace_id));

    // A row per span with its name, service, kind and a positioned bar.
    let rows: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("tr") && n.attribute("data-span-id").is_some())
        .collect();
    assert_eq!(rows.len(), spans.len());
    for span in &spans {
        let row = rows
            .iter()
            .find(|r| r.attribute("data-span-id") == Some(str_of(span, "span_id")))
            .unwrap_or_else(|| panic!("no row for {span}"));
        assert_eq!(row.attribute("data-kind"), Some(str_of(span, "kind")));
        assert_eq!(row.attribute("data-service"), Some(str_of(span, "service")));
        let parent = span["parent_span_id"].as_str().unwrap_or("");
        assert_eq!(row.attribute("data-parent-id"), Some(parent));
        let name_cell = row.children().find(|c| c.has_tag_name("td")).unwrap();
        assert_eq!(name_cell.text(), Some(str_of(span, "name")));
        let bar = row
            .descendants()
            .find(|n| n.attribute("class") == Some("bar"))
            .unwrap();
        let style = bar.attribute("style").unwrap();
        assert!(
            style.contains("left: ") && style.contains("width: "),
            "{style}"
        );
    }
    // The three stage links are shown.
    let links = doc
        .descendants()
        .filter(|n| n.attribute("data-link-span-id").is_some())
        .count();
    assert_eq!(links, 3);
}
