//! Checks of the source layout (one concern per file, docs/architecture.md#source-layout): in
//! every crate of the workspace ([`workspace_crates`](crate::workspace::workspace_crates)), no file under `src/` holds more than
//! [`MAX_LINES`] lines before its tests, a module is laid out as `x/mod.rs` (never `x.rs` beside
//! `x/`), and no two files import each other, directly or round a circle.
//! Run by `cargo test -p xtask` (and so by `cargo test --workspace`).
//!
//! The import graph is read by a small scanner, not a parser: comments, strings and character
//! literals are blanked out, then every path that starts with `crate::`, `super::` or `self::`
//! (in `use` trees, grouped `{a, b::c}` ones included, and in code) is resolved to the deepest
//! module file it names, and every `mod x;` declaration is an edge from the declaring file to
//! `x`'s file. A child that uses an item of its parent's file is therefore an edge back to the
//! parent, a circle with the parent's `mod` edge. Tests are not structure: the item that follows
//! a `#[cfg(test)]` attribute is skipped, and a file declared there (`mod tests;`) is not scanned.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// The most lines a source file may hold before its first `#[cfg(test)]` line.
pub(crate) const MAX_LINES: usize = 600;

/// What the rules say, appended to every report.
const RULE: &str = "one concern per file, no two files importing each other, shared items in a \
module that imports none of its users (docs/architecture.md#source-layout)";

/// The `.rs` files of one crate's `src/`: path relative to `src/` (with `/`), and text.
pub(crate) type Sources = BTreeMap<String, String>;

/// Reads every `.rs` file under `crate_dir/src`.
pub(crate) fn read_sources(crate_dir: &Path) -> Result<Sources, String> {
    let mut sources = Sources::new();
    let src = crate_dir.join("src");
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry
                .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
                .path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let relative = path
                    .strip_prefix(&src)
                    .map_err(|e| e.to_string())?
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                sources.insert(relative, text);
            }
        }
    }
    Ok(sources)
}

/// The lines of `text` before its first line starting `#[cfg(test)]` (all of them without one).
pub(crate) fn lines_before_tests(text: &str) -> usize {
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .count()
}

/// Every file of `sources` longer than [`MAX_LINES`] before its tests, with its count.
pub(crate) fn long_files(sources: &Sources) -> Vec<(String, usize)> {
    sources
        .iter()
        .map(|(path, text)| (path.clone(), lines_before_tests(text)))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .collect()
}

/// Every module laid out both ways: `x.rs` beside a directory `x/`.
pub(crate) fn mixed_layouts(sources: &Sources) -> Vec<String> {
    let dirs: BTreeSet<&str> = sources
        .keys()
        .filter_map(|path| path.rsplit_once('/').map(|(dir, _)| dir))
        .collect();
    sources
        .keys()
        .filter(|path| {
            path.strip_suffix(".rs")
                .is_some_and(|module| dirs.contains(module))
        })
        .cloned()
        .collect()
}

/// The module path of a file (`a/b.rs` and `a/b/mod.rs`: `[a, b]`; `main.rs`, `lib.rs`: the
/// root); `None` for a file of its own crate (`src/bin/`).
fn module_path(file: &str) -> Option<Vec<String>> {
    if file.starts_with("bin/") {
        return None;
    }
    let mut parts: Vec<String> = file.split('/').map(str::to_owned).collect();
    let last = parts.pop()?;
    match last.as_str() {
        "mod.rs" => {}
        "main.rs" | "lib.rs" if parts.is_empty() => {}
        _ => parts.push(last.strip_suffix(".rs")?.to_owned()),
    }
    Some(parts)
}

/// `text` with comments, string and character literals blanked out (newlines kept).
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"..", r#".."#, br"..": no escapes; ends at `"` and as many `#`.
            let open = chars[i..].iter().position(|&c| c == '"').unwrap_or(0) + i;
            i = open + 1;
            while i < chars.len() {
                if chars[i] == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    blank(&mut out, c);
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a), left as it is.
            if next == Some('\\') {
                // Past the quote, the backslash and the escaped character (maybe a quote).
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// At a raw string literal (`r"`, `r#"`, `br"`, not inside an identifier): its `#` count.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// The tokens of stripped code: identifiers, `::`, and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_owned());
            i += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}

/// What one file refers to: the module paths it names (absolute, with item names after the
/// module), and the modules it declares (`mod x;`, absolute) outside and inside its tests.
#[derive(Debug, Default)]
struct References {
    paths: Vec<Vec<String>>,
    declared: Vec<Vec<String>>,
    declared_for_tests: Vec<Vec<String>>,
}

/// Scans the file whose module path is `module`.
fn references(module: &[String], text: &str) -> References {
    let tokens = tokens(&strip(text));
    let mut found = References::default();
    // Inline modules (`mod x { .. }`) open here: their name and the depth inside their braces.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let here = || {
            let mut path = module.to_vec();
            path.extend(inline.iter().map(|(name, _)| name.clone()));
            path
        };
        match tokens[i].as_str() {
            "#" if is_cfg_test(&tokens[i..]) => {
                let (end, declared) = skip_item(&tokens, i);
                if let Some(name) = declared {
                    let mut path = here();
                    path.push(name);
                    found.declared_for_tests.push(path);
                }
                i = end;
                continue;
            }
            "mod" if tokens.get(i + 2).map(String::as_str) == Some(";") => {
                let mut path = here();
                path.push(tokens[i + 1].clone());
                found.declared.push(path);
            }
            "mod" if tokens.get(i + 2).map(String::as_str) == Some("{") => {
                inline.push((tokens[i + 1].clone(), depth + 1));
            }
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            "crate" | "super" | "self"
                if tokens.get(i + 1).map(String::as_str) == Some("::")
                    && (i == 0 || tokens[i - 1] != "::") =>
            {
                let (end, paths) = use_tree(&tokens, i, &here());
                found.paths.extend(paths);
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Whether `tokens` start with `# [ cfg ( test ) ]`.
fn is_cfg_test(tokens: &[String]) -> bool {
    let wanted = ["#", "[", "cfg", "(", "test", ")", "]"];
    tokens.len() >= wanted.len() && wanted.iter().zip(tokens).all(|(w, t)| w == t)
}

/// Skips the attributes at `start` and the item after them (to its `;` or its closing `}`);
/// where the item after them, and the name of the module it declares if it is `mod x;`.
fn skip_item(tokens: &[String], start: usize) -> (usize, Option<String>) {
    let mut i = start;
    // The attributes: `#`, `[`, up to the matching `]`.
    while tokens.get(i).map(String::as_str) == Some("#") {
        let mut brackets = 0usize;
        i += 1;
        while i < tokens.len() {
            match tokens[i].as_str() {
                "[" => brackets += 1,
                "]" => {
                    brackets -= 1;
                    if brackets == 0 {
                        i += 1;
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    let item = i;
    let mut braces = 0usize;
    while i < tokens.len() {
        match tokens[i].as_str() {
            ";" if braces == 0 => {
                let declared = (tokens.get(item).map(String::as_str) == Some("mod")
                    && i == item + 2)
                    .then(|| tokens[item + 1].clone());
                return (i + 1, declared);
            }
            "{" => braces += 1,
            "}" => {
                braces = braces.saturating_sub(1);
                if braces == 0 {
                    return (i + 1, None);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (i, None)
}

/// The use tree (or path in code) at `start` (`crate`, `super` or `self`, then `::`), in the
/// module `here`: where it ends, and each absolute path it names.
fn use_tree(tokens: &[String], start: usize, here: &[String]) -> (usize, Vec<Vec<String>>) {
    let mut base = here.to_vec();
    let mut i = start;
    match tokens[i].as_str() {
        "crate" => base.clear(),
        "super" => {
            while tokens.get(i).map(String::as_str) == Some("super")
                && tokens.get(i + 1).map(String::as_str) == Some("::")
            {
                if base.pop().is_none() {
                    return (i + 2, Vec::new());
                }
                i += 2;
            }
            i -= 2;
        }
        _ => {}
    }
    let mut paths = Vec::new();
    let end = subtree(tokens, i + 2, base, &mut paths);
    (end, paths)
}

/// The rest of a use tree from `i`, below `prefix`: each path into `paths`; where it ends.
fn subtree(
    tokens: &[String],
    mut i: usize,
    mut prefix: Vec<String>,
    paths: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                while i < tokens.len() && tokens[i] != "}" {
                    if tokens[i] == "," {
                        i += 1;
                        continue;
                    }
                    i = subtree(tokens, i, prefix.clone(), paths);
                    // `as name` after a path.
                    if tokens.get(i).map(String::as_str) == Some("as") {
                        i += 2;
                    }
                }
                return i + 1;
            }
            Some("self" | "*") => {
                paths.push(prefix);
                return i + 1;
            }
            Some(ident) if ident.starts_with(|c: char| c.is_alphabetic() || c == '_') => {
                prefix.push(ident.to_owned());
                i += 1;
                if tokens.get(i).map(String::as_str) == Some("::") {
                    i += 1;
                    continue;
                }
                paths.push(prefix);
                return i;
            }
            _ => {
                paths.push(prefix);
                return i;
            }
        }
    }
}

/// The file-level import graph of `sources`: for each file, the files it refers to (itself
/// left out). Test files (declared in a `#[cfg(test)]` item) and `src/bin/` files have none.
pub(crate) fn import_graph(sources: &Sources) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<Vec<String>, String> = sources
        .keys()
        .filter_map(|file| module_path(file).map(|m| (m, file.clone())))
        .collect();
    // The deepest module file a path names.
    let resolve = |path: &[String]| -> Option<&String> {
        (0..=path.len()).rev().find_map(|n| modules.get(&path[..n]))
    };
    let scanned: Vec<(String, References)> = sources
        .iter()
        .filter_map(|(file, text)| Some((file.clone(), references(&module_path(file)?, text))))
        .collect();
    let tests: BTreeSet<&String> = scanned
        .iter()
        .flat_map(|(_, r)| r.declared_for_tests.iter())
        .filter_map(|path| modules.get(path))
        .collect();
    let mut graph = BTreeMap::new();
    for (file, found) in &scanned {
        let mut edges = BTreeSet::new();
        if !tests.contains(file) {
            for path in found.paths.iter().chain(&found.declared) {
                if let Some(to) = resolve(path)
                    && to != file
                    && !tests.contains(to)
                {
                    edges.insert(to.clone());
                }
            }
        }
        graph.insert(file.clone(), edges);
    }
    graph
}

/// Each circle of `graph` (a strongly connected set of more than one file): its files, and one
/// path round it (`a -> b -> a`).
pub(crate) fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<(Vec<String>, String)> {
    // Tarjan's algorithm; its recursion is at most as deep as a crate has files.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        sets: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                set.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                s.sets.push(set);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        sets: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    let mut sets = state.sets;
    sets.sort();
    sets.into_iter()
        .map(|set| {
            let round = path_round(graph, &set);
            (set, round)
        })
        .collect()
}

/// The shortest path from the first file of `set` back to it, within `set`, as `a -> b -> a`.
fn path_round(graph: &BTreeMap<String, BTreeSet<String>>, set: &[String]) -> String {
    let start = &set[0];
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(v).into_iter().flatten() {
            if !set.contains(w) {
                continue;
            }
            if w == start {
                // Back along the way the search came: v, .., start; then round to start.
                let mut path = vec![v.as_str()];
                let mut at = v;
                while let Some(&from) = came_from.get(at) {
                    path.push(from);
                    at = from;
                }
                path.reverse();
                path.push(start);
                return path.join(" -> ");
            }
            if w != start && !came_from.contains_key(w) {
                came_from.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    set.join(" -> ")
}

/// The report on one crate (`name`, its sources): empty when it keeps the rules checked.
pub(crate) fn report(name: &str, sources: &Sources, every_rule: bool) -> String {
    let mut out = String::new();
    if every_rule {
        for (file, lines) in long_files(sources) {
            let _ = writeln!(
                out,
                "{name}/src/{file}: {lines} lines before its tests, more than {MAX_LINES}: split \
it by concern"
            );
        }
        for file in mixed_layouts(sources) {
            let module = file.trim_end_matches(".rs");
            let _ = writeln!(
                out,
                "{name}/src/{file} beside {name}/src/{module}/: one module layout, \
{module}/mod.rs"
            );
        }
    }
    for (set, round) in cycles(&import_graph(sources)) {
        let _ = writeln!(
            out,
            "{name}/src: these files import each other in a circle: {} ({round}); move what they \
share into a file of its own that imports none of them",
            set.join(", ")
        );
    }
    if !out.is_empty() {
        let _ = writeln!(out, "the rule: {RULE}");
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::workspace::workspace_root;

    fn sources(files: &[(&str, &str)]) -> Sources {
        files
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
            .collect()
    }

    fn edges(sources: &Sources, from: &str) -> Vec<String> {
        import_graph(sources)[from].iter().cloned().collect()
    }

    /// The report on the crate at `name` (relative to the workspace root): the real tree.
    fn check(name: &str, every_rule: bool) -> String {
        let sources = read_sources(&workspace_root().join(name)).unwrap();
        assert!(!sources.is_empty(), "{name}: no sources");
        report(name, &sources, every_rule)
    }

    #[test]
    fn every_crate_keeps_one_concern_per_file_and_no_circle() {
        let crates = crate::workspace::workspace_crates(&workspace_root()).unwrap();
        // The list is read from the folders: every published crate and the internal ones.
        for name in [
            "crates/lens-core",
            "crates/lens-cli",
            "tests/interop",
            "xtask",
        ] {
            assert!(crates.iter().any(|c| c == name), "{name} not in {crates:?}");
        }
        let published = std::fs::read_dir(workspace_root().join("crates"))
            .unwrap()
            .count();
        assert!(crates.iter().filter(|c| c.starts_with("crates/")).count() == published);
        let out: String = crates.iter().map(|name| check(name, true)).collect();
        assert!(out.is_empty(), "{out}");
    }

    #[test]
    fn a_child_using_its_parents_items_is_a_circle() {
        let tree = sources(&[
            (
                "main.rs",
                "mod cli;\nmod inspect;\nfn main() { cli::main() }\n",
            ),
            (
                "cli.rs",
                "use crate::inspect;\npub(crate) fn usage_error() {}\npub(crate) fn main() { inspect::main() }\n",
            ),
            (
                "inspect/mod.rs",
                "mod nccl;\n// crate::cli in a comment is no reference\npub(crate) fn main() { crate::cli::usage_error() }\n",
            ),
            ("inspect/nccl.rs", "use super::{Kind, shown};\n"),
        ]);
        let found = cycles(&import_graph(&tree));
        // One circle: cli.rs and inspect/mod.rs, which inspect/nccl.rs joins through its parent.
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, ["cli.rs", "inspect/mod.rs", "inspect/nccl.rs"]);
        assert_eq!(found[0].1, "cli.rs -> inspect/mod.rs -> cli.rs");
        assert_eq!(edges(&tree, "inspect/nccl.rs"), ["inspect/mod.rs"]);
        let out = report("crates/x", &tree, true);
        assert!(
            out.contains(
                "crates/x/src: these files import each other in a circle: cli.rs, inspect/mod.rs, \
inspect/nccl.rs (cli.rs -> inspect/mod.rs -> cli.rs)"
            ),
            "{out}"
        );
        assert!(out.contains("docs/architecture.md"), "{out}");
    }

    #[test]
    fn a_shared_module_that_imports_none_of_its_users_is_no_circle() {
        let tree = sources(&[
            (
                "main.rs",
                "mod cli;\nmod inspect;\nmod usage;\nfn main() { cli::main() }\n",
            ),
            (
                "cli.rs",
                "use crate::{inspect, usage};\npub(crate) fn main() { usage::register(); inspect::main() }\n",
            ),
            (
                "usage.rs",
                "pub(crate) fn usage_error() { let s = \"crate::cli::x\"; }\n",
            ),
            (
                "inspect/mod.rs",
                "mod headers;\nmod nccl;\nuse crate::usage::usage_error;\nuse headers::Kind;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::cli;\n}\n",
            ),
            (
                "inspect/headers.rs",
                "pub(super) enum Kind { A }\nfn f<'a>(x: &'a str) -> [char; 3] { ['x', '\\'', '\\\\'] }\nconst S: &str = \"crate::cli \\\" crate::cli\";\n",
            ),
            (
                "inspect/nccl.rs",
                "use super::headers::Kind;\nuse super::super::usage;\n",
            ),
        ]);
        let graph = import_graph(&tree);
        assert!(cycles(&graph).is_empty(), "{graph:?}");
        assert_eq!(edges(&tree, "usage.rs"), Vec::<String>::new());
        // Names in strings and after character literals are no references.
        assert_eq!(edges(&tree, "inspect/headers.rs"), Vec::<String>::new());
        assert_eq!(
            edges(&tree, "inspect/nccl.rs"),
            ["inspect/headers.rs", "usage.rs"]
        );
        assert_eq!(
            edges(&tree, "inspect/mod.rs"),
            ["inspect/headers.rs", "inspect/nccl.rs", "usage.rs"]
        );
        assert_eq!(report("crates/x", &tree, true), "");
    }

    #[test]
    fn grouped_use_trees_resolve_to_the_deepest_module_file() {
        let tree = sources(&[
            ("lib.rs", "pub mod a;\npub mod b;\n"),
            ("a.rs", "pub mod inner;\n"),
            (
                "a/inner.rs",
                "use crate::{b::{self, deep::Thing as T}, a};\n",
            ),
            (
                "b/mod.rs",
                "pub mod deep;\nfn f() { let _ = r#\"crate::a\"#; }\n",
            ),
            ("b/deep.rs", "pub struct Thing;\n"),
        ]);
        assert_eq!(
            edges(&tree, "a/inner.rs"),
            ["a.rs", "b/deep.rs", "b/mod.rs"]
        );
        assert_eq!(edges(&tree, "b/mod.rs"), ["b/deep.rs"]);
        assert_eq!(mixed_layouts(&tree), ["a.rs"]);
    }

    #[test]
    fn a_test_file_using_its_parent_is_no_circle() {
        let tree = sources(&[
            ("lib.rs", "pub mod probe;\n"),
            (
                "probe/mod.rs",
                "pub fn judge() {}\n#[cfg(test)]\nmod tests;\n",
            ),
            (
                "probe/tests.rs",
                "use super::*;\nuse crate::probe::judge;\n",
            ),
        ]);
        assert!(cycles(&import_graph(&tree)).is_empty());
    }

    #[test]
    fn a_long_file_is_found_with_its_count() {
        let long = "fn f() {}\n".repeat(MAX_LINES + 1);
        let tree = sources(&[("main.rs", "mod long;\n"), ("long.rs", &long)]);
        assert_eq!(long_files(&tree), [("long.rs".to_owned(), MAX_LINES + 1)]);
        let out = report("crates/x", &tree, true);
        assert!(
            out.contains("crates/x/src/long.rs: 601 lines before its tests"),
            "{out}"
        );
        assert!(report("crates/x", &tree, false).is_empty());
    }

    #[test]
    fn a_file_of_600_lines_and_its_tests_passes() {
        let mut text = "fn f() {}\n".repeat(MAX_LINES);
        text.push_str("#[cfg(test)]\nmod tests {\n");
        text.push_str(&"    fn g() {}\n".repeat(300));
        text.push_str("}\n");
        assert_eq!(lines_before_tests(&text), MAX_LINES);
        let tree = sources(&[("main.rs", "mod full;\n"), ("full.rs", &text)]);
        assert!(long_files(&tree).is_empty());
        assert_eq!(report("crates/x", &tree, true), "");
    }
}
