//! A type, its bounds and paths, as Rust writes them.

use serde_json::Value;

use super::lists::{items, joined, list};

pub(super) fn higher_ranked(params: &Value) -> String {
    let names: Vec<String> = items(params)
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    joined(&names, "for<", "> ")
}

pub(super) fn bounds(bounds: &Value) -> String {
    let all: Vec<String> = items(bounds)
        .map(|b| {
            if let Some(t) = b.get("trait_bound") {
                let modifier = match t["modifier"].as_str() {
                    Some("maybe") => "?",
                    Some("maybe_const") => "~const ",
                    _ => "",
                };
                format!(
                    "{}{modifier}{}",
                    higher_ranked(&t["generic_params"]),
                    path_of(&t["trait"])
                )
            } else if let Some(l) = b.get("outlives") {
                l.as_str().unwrap_or("'_").to_owned()
            } else if let Some(u) = b.get("use") {
                format!(
                    "use<{}>",
                    list(u, |a| {
                        a.as_str()
                            .or_else(|| a["param"].as_str())
                            .or_else(|| a["lifetime"].as_str())
                            .map(str::to_owned)
                    })
                )
            } else {
                b.to_string()
            }
        })
        .collect();
    all.join(" + ")
}

/// `Path<Args>` of a resolved path.
pub(super) fn path_of(path: &Value) -> String {
    format!(
        "{}{}",
        path["path"].as_str().unwrap_or("_"),
        args(&path["args"])
    )
}

pub(super) fn args(args: &Value) -> String {
    if args.is_null() {
        return String::new();
    }
    if let Some(angle) = args.get("angle_bracketed") {
        let mut all: Vec<String> = items(&angle["args"])
            .map(|a| {
                if let Some(t) = a.get("type") {
                    ty(t)
                } else if let Some(l) = a.get("lifetime") {
                    l.as_str().unwrap_or("'_").to_owned()
                } else if let Some(c) = a.get("const") {
                    c["expr"].as_str().unwrap_or("_").to_owned()
                } else {
                    "_".to_owned()
                }
            })
            .collect();
        for c in items(&angle["constraints"]) {
            let name = format!(
                "{}{}",
                c["name"].as_str().unwrap_or("_"),
                self::args(&c["args"])
            );
            let binding = &c["binding"];
            if let Some(eq) = binding.get("equality") {
                all.push(format!("{name} = {}", term(eq)));
            } else if let Some(b) = binding.get("constraint") {
                all.push(format!("{name}: {}", bounds(b)));
            }
        }
        return joined(&all, "<", ">");
    }
    if let Some(paren) = args.get("parenthesized") {
        let output = optional_ty(" -> ", &paren["output"]);
        return format!("({}){output}", list(&paren["inputs"], |t| Some(ty(t))));
    }
    if args.get("return_type_notation").is_some() {
        return "(..)".to_owned();
    }
    args.to_string()
}

pub(super) fn term(term: &Value) -> String {
    if let Some(t) = term.get("type") {
        ty(t)
    } else if let Some(c) = term.get("constant") {
        c["expr"].as_str().unwrap_or("_").to_owned()
    } else {
        term.to_string()
    }
}

/// `prefix` and the type `t`, or nothing when there is none (`null`).
pub(super) fn optional_ty(prefix: &str, t: &Value) -> String {
    if t.is_null() {
        String::new()
    } else {
        format!("{prefix}{}", ty(t))
    }
}

/// A type as Rust writes it.
pub(super) fn ty(t: &Value) -> String {
    let Some((kind, body)) = t.as_object().and_then(|o| o.iter().next()) else {
        return t.as_str().unwrap_or("_").to_owned();
    };
    match kind.as_str() {
        "resolved_path" => path_of(body),
        "generic" | "primitive" => body.as_str().unwrap_or("_").to_owned(),
        "borrowed_ref" => {
            let lifetime = body["lifetime"]
                .as_str()
                .map(|l| format!("{l} "))
                .unwrap_or_default();
            let mutable = if body["is_mutable"].as_bool().unwrap_or(false) {
                "mut "
            } else {
                ""
            };
            format!("&{lifetime}{mutable}{}", ty(&body["type"]))
        }
        "raw_pointer" => {
            let mutable = if body["is_mutable"].as_bool().unwrap_or(false) {
                "mut"
            } else {
                "const"
            };
            format!("*{mutable} {}", ty(&body["type"]))
        }
        "tuple" => {
            let types = list(body, |t| Some(ty(t)));
            if body.as_array().is_some_and(|a| a.len() == 1) {
                format!("({types},)")
            } else {
                format!("({types})")
            }
        }
        "slice" => format!("[{}]", ty(body)),
        "array" => format!(
            "[{}; {}]",
            ty(&body["type"]),
            body["len"].as_str().unwrap_or("_")
        ),
        "impl_trait" => format!("impl {}", bounds(body)),
        "dyn_trait" => {
            let mut parts: Vec<String> = items(&body["traits"])
                .map(|p| {
                    format!(
                        "{}{}",
                        higher_ranked(&p["generic_params"]),
                        path_of(&p["trait"])
                    )
                })
                .collect();
            if let Some(l) = body["lifetime"].as_str() {
                parts.push(l.to_owned());
            }
            format!("dyn {}", parts.join(" + "))
        }
        "qualified_path" => {
            let name = format!(
                "{}{}",
                body["name"].as_str().unwrap_or("_"),
                args(&body["args"])
            );
            let self_type = ty(&body["self_type"]);
            match body["trait"]["path"].as_str() {
                Some(tr) if !tr.is_empty() => {
                    format!("<{self_type} as {}>::{name}", path_of(&body["trait"]))
                }
                _ => format!("{self_type}::{name}"),
            }
        }
        "function_pointer" => {
            let sig = &body["sig"];
            let inputs = list(&sig["inputs"], |i| Some(ty(&i[1])));
            let output = optional_ty(" -> ", &sig["output"]);
            format!(
                "{}fn({inputs}){output}",
                higher_ranked(&body["generic_params"])
            )
        }
        "infer" => "_".to_owned(),
        "pat" => ty(&body["type"]),
        other => format!("<{other}>"),
    }
}
