//! The top-level README's examples are the `examples/readme_*.rs` programs of this crate (which
//! `cargo test` builds), word for word; its run command is the demo; its links resolve.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// (path named by an `<!-- example: PATH -->` marker, the rust block after it)
fn examples(readme: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = readme;
    while let Some(at) = rest.find("<!-- example: ") {
        rest = &rest[at + "<!-- example: ".len()..];
        let (path, after) = rest.split_once(" -->").unwrap();
        let block = after
            .trim_start()
            .strip_prefix("```rust\n")
            .unwrap_or_else(|| panic!("a rust block after the marker for {path}"));
        let (code, _) = block.split_once("\n```").unwrap();
        out.push((path.to_owned(), code.to_owned()));
        rest = after;
    }
    out
}

#[test]
fn every_readme_example_is_a_built_example_program() {
    let readme = readme();
    let examples = examples(&readme);
    let paths: Vec<&str> = examples.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "crates/lens-cli/examples/readme_core.rs",
            "crates/lens-cli/examples/readme_axum.rs",
            "crates/lens-cli/examples/readme_reqwest.rs",
            "crates/lens-cli/examples/readme_tonic.rs",
            "crates/lens-cli/examples/readme_nccl.rs",
            "crates/lens-cli/examples/readme_dist.rs",
        ]
    );
    for (path, code) in &examples {
        let file = std::fs::read_to_string(root().join(path)).unwrap();
        assert_eq!(file.trim_end(), code.trim_end(), "README block for {path}");
        assert!(code.lines().count() <= 25, "{path} is short");
    }
}

#[test]
fn readme_runs_the_demo_and_links_resolve() {
    let readme = readme();
    // The first command block installs `lens` and runs the demo.
    let first = readme.split("```sh\n").nth(1).unwrap();
    let first: Vec<&str> = first[..first.find("```").unwrap()].lines().collect();
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(
        first[0].starts_with("cargo install --locked --path crates/lens-cli ")
            && first[0].contains("cargo install --locked lens-cli"),
        "{first:?}"
    );
    assert_eq!(first[1], "lens demo");
    assert!(readme.contains("```sh\ncargo xtask test\n```"));
    let mut rest = readme.as_str();
    let mut links = 0;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let target = &rest[..rest.find(')').unwrap()];
        if !target.starts_with("http") {
            // A fragment names an anchor inside the file (the anchors are checked by xtask).
            let path = target.split('#').next().unwrap_or(target);
            assert!(root().join(path).exists(), "README links to {target}");
            links += 1;
        }
    }
    assert!(links >= 10, "{links} links");
}

/// Once installed, the command is `lens`: no page tells a user to run it through cargo.
#[test]
fn every_page_runs_the_installed_lens() {
    let mut pages = vec![
        root().join("README.md"),
        root().join("packaging/pypi/README.md"),
    ];
    for dir in ["docs", "crates"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            pages.push(path.join("README.md"));
            pages.push(path);
        }
    }
    let mut read = 0;
    for page in pages
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let Ok(text) = std::fs::read_to_string(page) else {
            continue;
        };
        read += 1;
        for (n, line) in text.lines().enumerate() {
            assert!(
                !line.contains("cargo run --release -p lens-cli")
                    && !line.contains("cargo run -p lens-cli"),
                "{}:{}: {line}",
                page.display(),
                n + 1
            );
        }
    }
    assert!(read >= 20, "{read} pages");
}

/// The first fenced block of `text` starts before its first `## ` heading.
fn example_comes_first(text: &str) -> bool {
    match (text.find("```"), text.find("\n## ")) {
        (Some(code), Some(heading)) => code < heading,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Every published crate (and lens-cli) has a README, and it and the crate docs open with an
/// example.
#[test]
fn every_crate_readme_and_crate_doc_starts_with_an_example() {
    let mut crates = 0;
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        // Library crates and the `lens` command; not bench-only or test-harness crates.
        let is_cli = dir.ends_with("lens-cli");
        if manifest.contains("publish = false") && !is_cli {
            continue;
        }
        crates += 1;
        let readme = std::fs::read_to_string(dir.join("README.md"))
            .unwrap_or_else(|_| panic!("{} has a README.md", dir.display()));
        assert!(example_comes_first(&readme), "{}/README.md", dir.display());
        if let Ok(lib) = std::fs::read_to_string(dir.join("src/lib.rs")) {
            let docs: String = lib
                .lines()
                .filter_map(|l| l.strip_prefix("//!"))
                .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
                .collect();
            assert!(example_comes_first(&docs), "{}/src/lib.rs", dir.display());
        }
    }
    assert!(crates >= 7, "{crates} crates");
}
