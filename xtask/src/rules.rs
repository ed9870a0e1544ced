//! Checks of the citations of docs/propagation-rules.md and docs/performance.md: every citation
//! of one of their anchors in a tracked file names an anchor that the document defines. Run by
//! `cargo test -p xtask` (and so by `cargo test --workspace`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The rules document, relative to the workspace root.
pub(crate) const RULES_DOC: &str = "docs/propagation-rules.md";

/// The performance page, whose rows speed claims in the READMEs and crate docs point at.
const PERFORMANCE_DOC: &str = "docs/performance.md";

/// What the scan reads: the tracked files under these paths.
const SCANNED: &[&str] = &["crates", "tests", "docs", "xtask", "README.md"];

/// The anchors a Markdown document defines: explicit `<a id="...">` (or `name="..."`) tags, and
/// the anchors GitHub derives from headings.
pub(crate) fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for attribute in ["<a id=\"", "<a name=\""] {
        for (start, _) in markdown.match_indices(attribute) {
            let rest = &markdown[start + attribute.len()..];
            if let Some(end) = rest.find('"') {
                found.insert(rest[..end].to_string());
            }
        }
    }
    let mut in_fence = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            found.insert(heading_anchor(&line[hashes + 1..]));
        }
    }
    found
}

/// GitHub's anchor for a heading: lowercase, punctuation other than `-` and `_` removed, spaces
/// as `-`.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// Every citation of an anchor of the rules document in `text`, as (line number, anchor).
pub(crate) fn citations(text: &str) -> Vec<(usize, String)> {
    // Split so that this line is not a citation itself.
    citations_of(concat!("propagation-rules.md", "#"), text)
}

/// Every citation `<needle><anchor>` in `text` (the needle ends with `#`), as (line number,
/// anchor).
fn citations_of(needle: &str, text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        for (start, _) in line.match_indices(needle) {
            let anchor: String = line[start + needle.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            found.push((number + 1, anchor));
        }
    }
    found
}

/// The tracked text files under [`SCANNED`], as (path, contents). Files that are not UTF-8
/// (fuzz seeds) are skipped: they cite nothing.
fn tracked_text_files(root: &Path) -> Result<Vec<(String, String)>, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z", "--"])
        .args(SCANNED)
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut files = Vec::new();
    for path in output.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        // A tracked file deleted in the work tree cites nothing any more.
        let Ok(bytes) = std::fs::read(root.join(&path)) else {
            continue;
        };
        if let Ok(text) = String::from_utf8(bytes) {
            files.push((path, text));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::workspace_root;

    fn rules_doc() -> String {
        let doc = std::fs::read_to_string(workspace_root().join(RULES_DOC)).unwrap_or_default();
        assert!(!doc.is_empty(), "{RULES_DOC} is missing or empty");
        doc
    }

    fn tracked() -> Vec<(String, String)> {
        let files = tracked_text_files(&workspace_root());
        assert!(files.is_ok(), "{files:?}");
        files.unwrap_or_default()
    }

    #[test]
    fn every_cited_rule_anchor_exists() {
        let defined = anchors(&rules_doc());
        let files = tracked();
        assert!(
            files.iter().any(|(path, _)| path == RULES_DOC),
            "{RULES_DOC} is not tracked"
        );
        let mut missing = Vec::new();
        for (path, text) in &files {
            for (line, anchor) in citations(text) {
                if !defined.contains(&anchor) {
                    missing.push(format!("{path}:{line}: #{anchor}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "citations of anchors that {RULES_DOC} does not define:\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn every_cited_performance_anchor_exists() {
        let page =
            std::fs::read_to_string(workspace_root().join(PERFORMANCE_DOC)).unwrap_or_default();
        let defined = anchors(&page);
        assert!(
            defined.contains("core-extract"),
            "{PERFORMANCE_DOC}: {defined:?}"
        );
        let mut missing = Vec::new();
        let mut cited = 0;
        for (path, text) in &tracked() {
            for (line, anchor) in citations_of(concat!("performance.md", "#"), text) {
                cited += 1;
                if !defined.contains(&anchor) {
                    missing.push(format!("{path}:{line}: #{anchor}"));
                }
            }
        }
        for (start, _) in page.match_indices("](#") {
            let rest = &page[start + 3..];
            let anchor = &rest[..rest.find(')').unwrap_or(rest.len())];
            cited += 1;
            if !defined.contains(anchor) {
                missing.push(format!("{PERFORMANCE_DOC}: #{anchor}"));
            }
        }
        assert!(
            cited > 5,
            "only {cited} citations of {PERFORMANCE_DOC} found"
        );
        assert!(
            missing.is_empty(),
            "citations of anchors that {PERFORMANCE_DOC} does not define:\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn links_inside_the_rules_doc_resolve() {
        let doc = rules_doc();
        let defined = anchors(&doc);
        let mut missing = Vec::new();
        for (start, _) in doc.match_indices("](#") {
            let rest = &doc[start + 3..];
            let anchor = &rest[..rest.find(')').unwrap_or(rest.len())];
            if !defined.contains(anchor) {
                missing.push(anchor.to_string());
            }
        }
        assert!(missing.is_empty(), "unresolved links: {missing:?}");
    }

    #[test]
    fn explicit_anchors_are_unique() {
        let doc = rules_doc();
        let mut seen = BTreeSet::new();
        for (start, _) in doc.match_indices("<a id=\"") {
            let rest = &doc[start + 7..];
            let id = &rest[..rest.find('"').unwrap_or(rest.len())];
            assert!(seen.insert(id.to_string()), "anchor {id} defined twice");
        }
        assert!(seen.len() > 11, "one anchor per section and per rule");
    }

    /// The section anchors that "SPEC.md §N" citations are rewritten to, §1 to §11.
    #[test]
    fn every_section_has_its_anchor() {
        let defined = anchors(&rules_doc());
        for anchor in [
            "traceparent",
            "tracestate",
            "baggage",
            "carriers",
            "extract-and-inject",
            "json-byte-format",
            "trust",
            "limits",
            "differences-from-nemo-lens",
            "opentelemetry-types",
            "w3c-test-service",
        ] {
            assert!(defined.contains(anchor), "no section anchor #{anchor}");
        }
    }

    #[test]
    fn anchors_and_citations_are_found() {
        let doc = "<a id=\"baggage-limits\"></a>\n## Where lens differs (0.1.0)\n```\n# not a heading\n```\n";
        let defined = anchors(doc);
        assert!(defined.contains("baggage-limits"));
        assert!(defined.contains("where-lens-differs-010"));
        assert!(!defined.contains("not-a-heading"));
        // Built at run time so that the scan of this file does not see an unknown anchor.
        let text = format!(
            "see docs/{}#no-such_rule).\nnone here",
            "propagation-rules.md"
        );
        assert_eq!(citations(&text), vec![(1, "no-such_rule".to_string())]);
    }

    /// The rules ship as docs/propagation-rules.md; the internal file they were first written in is
    /// not part of the project, so no published crate may send a reader there.
    #[test]
    fn no_crate_cites_spec_md() {
        let files = tracked();
        let citing: Vec<&str> = files
            .iter()
            .filter(|(path, text)| {
                path.starts_with("crates/") && text.contains(concat!("SPEC", ".md"))
            })
            .map(|(path, _)| path.as_str())
            .collect();
        assert!(
            citing.is_empty(),
            "cite {RULES_DOC} instead of {} in: {citing:?}",
            concat!("SPEC", ".md")
        );
    }
}
