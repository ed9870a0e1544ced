//! `lens demo` with stdout not a terminal: a plain waterfall (no escape codes), every span on
//! its own row under its parent, links under the linked stages, and the summary line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use demo_support::{SPANS_PER_TRACE, run, stderr, stdout};

#[test]
fn plain_waterfall_shows_the_tree_links_and_summary() {
    let output = run(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!text.contains('\x1b'), "no colour when stdout is a pipe");
    // The waterfall, then (after a blank line) the request durations per hop.
    let (waterfall, durations) = text.split_once("\n\n").unwrap_or_else(|| panic!("{text}"));
    assert!(durations.starts_with("request durations"), "{text}");
    let lines: Vec<&str> = waterfall.lines().collect();

    let trace_id = lines[0].strip_prefix("trace ").unwrap();
    assert_eq!(trace_id.len(), 32);
    assert!(lines[1].starts_with("span") && lines[1].ends_with("timeline"));

    // One row per span (rows carry a kind), in tree order, nested as the hops go.
    let rows: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            ["INTERNAL", "CLIENT", "SERVER"]
                .iter()
                .any(|k| l.contains(k))
        })
        .collect();
    assert_eq!(rows.len(), SPANS_PER_TRACE, "{text}");
    // (name with its tree branch, service, kind, depth)
    let expected = [
        ("demo request", "lens-demo", "INTERNAL", 0),
        ("└─ POST", "lens-demo", "CLIENT", 1),
        ("└─ POST /v1/train", "gateway", "SERVER", 2),
        ("└─ POST", "gateway", "CLIENT", 3),
        ("└─ POST /plan", "planner", "SERVER", 4),
        ("└─ lens.demo.Trainer/Step", "planner", "CLIENT", 5),
        ("└─ lens.demo.Trainer/Step", "trainer", "SERVER", 6),
        ("├─ RolloutWorker.generate", "rollout-worker", "INTERNAL", 7),
        ("└─ train_step", "trainer", "INTERNAL", 7),
        ("├─ pp_stage 0", "trainer-rank-0", "INTERNAL", 8),
        ("├─ pp_stage 1", "trainer-rank-1", "INTERNAL", 8),
        ("├─ pp_stage 2", "trainer-rank-2", "INTERNAL", 8),
        ("└─ pp_stage 3", "trainer-rank-3", "INTERNAL", 8),
    ];
    for (row, (name, service, kind, depth)) in rows.iter().zip(expected) {
        let fields: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect();
        assert!(fields[0].ends_with(name), "{row:?} should show {name}");
        assert_eq!(fields[1], service, "{row:?}");
        assert_eq!(fields[2], kind, "{row:?}");
        assert!(
            ["µs", "ms", " s"].iter().any(|u| fields[3].ends_with(u)),
            "{row:?} has a duration"
        );
        assert!(row.contains('█') && row.ends_with('│'), "{row:?} has a bar");
        // Three columns of tree drawing per level.
        let name_at = row.chars().take_while(|c| !c.is_alphanumeric()).count();
        assert_eq!(name_at, depth * 3, "{row:?}");
    }

    // Stages 1..3 are followed by their link line.
    for stage in 1..4 {
        let at = lines
            .iter()
            .position(|l| l.contains(&format!("pp_stage {stage} ")))
            .unwrap();
        assert!(
            lines[at + 1].contains(&format!(
                "↳ link → pp_stage {} (trainer-rank-{})",
                stage - 1,
                stage - 1
            )),
            "{}",
            lines[at + 1]
        );
    }

    let summary = lines.last().unwrap();
    assert!(
        summary.starts_with(&format!(
            "trace {trace_id}: {SPANS_PER_TRACE} spans, complete, "
        )),
        "{summary}"
    );
    assert!(
        summary.ends_with("; 7 hops (2 http, 1 grpc, 1 remote call, 3 broadcast); 3 links"),
        "{summary}"
    );
}

#[test]
fn colour_can_be_forced() {
    let output = run(&["--color", "always"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("\x1b[1mtrace "), "{text}");
    assert!(text.contains("\x1b[36mlens-demo\x1b[0m"), "{text}");
}
