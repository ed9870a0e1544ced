//! A function's signature, generic parameters and where clause.

use serde_json::Value;

use super::lists::{items, joined};
use super::types::{bounds, higher_ranked, optional_ty, term, ty};

pub(super) fn function(path: &str, body: &Value) -> String {
    let header = &body["header"];
    let mut out = String::new();
    for (flag, word) in [
        ("is_const", "const "),
        ("is_async", "async "),
        ("is_unsafe", "unsafe "),
    ] {
        if header[flag].as_bool().unwrap_or(false) {
            out.push_str(word);
        }
    }
    let sig = &body["sig"];
    let inputs: Vec<String> = items(&sig["inputs"])
        .map(|input| {
            let name = input[0].as_str().unwrap_or("_");
            let ty = ty(&input[1]);
            match (name, ty.as_str()) {
                ("self", "Self") => "self".to_owned(),
                ("self", "&Self") => "&self".to_owned(),
                ("self", "&mut Self") => "&mut self".to_owned(),
                _ => format!("{name}: {ty}"),
            }
        })
        .collect();
    let output = optional_ty(" -> ", &sig["output"]);
    out.push_str(&format!(
        "fn {path}{}({}){output}{}",
        generics(&body["generics"]),
        inputs.join(", "),
        where_clause(&body["generics"])
    ));
    out
}

/// `<'a, T: Bound, const N: usize>` (synthetic parameters of `impl Trait` arguments left out).
pub(super) fn generics(generics: &Value) -> String {
    let params: Vec<String> = items(&generics["params"])
        .filter_map(|param| {
            let name = param["name"].as_str().unwrap_or("_");
            let kind = &param["kind"];
            if let Some(lifetime) = kind.get("lifetime") {
                let outlives: Vec<&str> = items(&lifetime["outlives"])
                    .filter_map(Value::as_str)
                    .collect();
                Some(if outlives.is_empty() {
                    name.to_owned()
                } else {
                    format!("{name}: {}", outlives.join(" + "))
                })
            } else if let Some(t) = kind.get("type") {
                if t["is_synthetic"].as_bool().unwrap_or(false) {
                    return None;
                }
                let bounds = bounds(&t["bounds"]);
                let mut out = name.to_owned();
                if !bounds.is_empty() {
                    out.push_str(": ");
                    out.push_str(&bounds);
                }
                if !t["default"].is_null() {
                    out.push_str(" = ");
                    out.push_str(&ty(&t["default"]));
                }
                Some(out)
            } else if let Some(c) = kind.get("const") {
                Some(format!("const {name}: {}", ty(&c["type"])))
            } else {
                Some(name.to_owned())
            }
        })
        .collect();
    joined(&params, "<", ">")
}

pub(super) fn where_clause(generics: &Value) -> String {
    let predicates: Vec<String> = items(&generics["where_predicates"])
        .map(|p| {
            if let Some(b) = p.get("bound_predicate") {
                format!(
                    "{}{}: {}",
                    higher_ranked(&b["generic_params"]),
                    ty(&b["type"]),
                    bounds(&b["bounds"])
                )
            } else if let Some(l) = p.get("lifetime_predicate") {
                let outlives: Vec<&str> = items(&l["outlives"]).filter_map(Value::as_str).collect();
                format!(
                    "{}: {}",
                    l["lifetime"].as_str().unwrap_or("'_"),
                    outlives.join(" + ")
                )
            } else if let Some(e) = p.get("eq_predicate") {
                format!("{} = {}", ty(&e["lhs"]), term(&e["rhs"]))
            } else {
                p.to_string()
            }
        })
        .collect();
    joined(&predicates, " where ", "")
}
