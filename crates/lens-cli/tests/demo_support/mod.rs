//! Shared by the `demo_*` tests: run `lens demo`, read its JSON spans.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::process::{Command, Output};

use serde_json::Value;

/// `lens demo ARGS`, with no collector configured in the environment and no colour hints.
pub fn run(args: &[&str]) -> Output {
    run_with_env(args, &[])
}

/// `lens demo ARGS` with `env` set and no other `OTEL_*` variable (nor NO_COLOR).
pub fn run_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    demo_command(args, env).output().unwrap()
}

/// The `lens demo ARGS` command, environment as [`run_with_env`] sets it.
pub fn demo_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lens"));
    command.arg("demo").args(args).env_remove("NO_COLOR");
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    command
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// `lens demo --json ARGS`: the spans, after checking the run succeeded.
pub fn json_spans(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = run(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    json.as_array().unwrap().clone()
}

pub fn str_of<'a>(span: &'a Value, key: &str) -> &'a str {
    span[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {span}"))
}

pub fn trace_ids(spans: &[Value]) -> HashSet<String> {
    spans
        .iter()
        .map(|s| str_of(s, "trace_id").to_owned())
        .collect()
}

/// The span whose `span_id` is `id`.
pub fn by_id<'a>(spans: &'a [Value], id: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["span_id"] == id)
        .unwrap_or_else(|| panic!("no span {id}"))
}

/// The parent of `span` (it must be in `spans`).
pub fn parent<'a>(spans: &'a [Value], span: &Value) -> &'a Value {
    by_id(spans, str_of(span, "parent_span_id"))
}

/// The only span named `name`.
pub fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|s| s["name"] == name).collect();
    assert_eq!(found.len(), 1, "spans named {name}");
    found[0]
}

/// The spans of the demo's topology: request root, 3 CLIENT/SERVER pairs (2 HTTP, 1 gRPC),
/// the remote call, the train step and 4 ranks.
pub const SPANS_PER_TRACE: usize = 13;
