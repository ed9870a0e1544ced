//! The listing: every public item reachable from the crate root (through public modules and
//! re-exports), with its signature, one line each, sorted.

use std::collections::BTreeSet;

use serde_json::Value;

/// The rustdoc JSON format versions this renderer reads.
const FORMATS: std::ops::RangeInclusive<u64> = 50..=70;

/// The listing of the crate documented in `json`.
pub(crate) fn listing(json: &Value) -> Result<Vec<String>, String> {
    let format = json["format_version"].as_u64().unwrap_or_default();
    if !FORMATS.contains(&format) {
        return Err(format!(
            "rustdoc JSON format {format}, this renderer reads {FORMATS:?}"
        ));
    }
    let root = id_key(&json["root"]).ok_or("no root module")?;
    let mut out = Listing {
        index: &json["index"],
        lines: BTreeSet::new(),
        seen: BTreeSet::new(),
    };
    let name = out.item(&root)["name"]
        .as_str()
        .unwrap_or("crate")
        .to_owned();
    out.module(&root, &name);
    // The format first: a listing made by another rustdoc may differ in form alone.
    let mut lines = vec![format!("# rustdoc JSON format {format}")];
    lines.extend(out.lines);
    Ok(lines)
}

fn id_key(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

struct Listing<'a> {
    index: &'a Value,
    lines: BTreeSet<String>,
    /// (item, path) pairs already listed: a re-export cycle ends.
    seen: BTreeSet<(String, String)>,
}

impl<'a> Listing<'a> {
    fn item(&self, id: &str) -> &'a Value {
        &self.index[id]
    }

    fn is_public(item: &Value) -> bool {
        item["visibility"] == "public"
    }

    fn module(&mut self, id: &str, path: &str) {
        let items = self.item(id)["inner"]["module"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for child in items {
            let Some(child) = id_key(&child) else {
                continue;
            };
            let item = self.item(&child);
            if !Self::is_public(item) {
                continue;
            }
            if let Some(import) = item["inner"].get("use") {
                self.reexport(import, path);
                continue;
            }
            let name = item["name"].as_str().unwrap_or("_");
            self.entry(&child, &format!("{path}::{name}"));
        }
    }

    /// `pub use`: the item under its new path when it is this crate's, else a line naming it.
    fn reexport(&mut self, import: &Value, path: &str) {
        let name = import["name"].as_str().unwrap_or("_");
        let source = import["source"].as_str().unwrap_or("_");
        let target = id_key(&import["id"]).filter(|id| self.item(id).is_object());
        match (target, import["is_glob"].as_bool().unwrap_or(false)) {
            (Some(id), true) => self.module(&id, path),
            (Some(id), false) => self.entry(&id, &format!("{path}::{name}")),
            (None, true) => {
                self.lines
                    .insert(format!("pub use {path}::* = {source}::*"));
            }
            (None, false) => {
                self.lines
                    .insert(format!("pub use {path}::{name} = {source}"));
            }
        }
    }

    fn entry(&mut self, id: &str, path: &str) {
        if !self.seen.insert((id.to_owned(), path.to_owned())) {
            return;
        }
        let item = self.item(id);
        let inner = &item["inner"];
        let deprecated = if item["deprecation"].is_null() {
            ""
        } else {
            "#[deprecated] "
        };
        let Some((kind, body)) = inner.as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        let line = match kind.as_str() {
            "module" => {
                self.module(id, path);
                format!("pub mod {path}")
            }
            "struct" => {
                self.fields(body, path);
                self.impls(body, path);
                format!("pub struct {path}{}", generics(&body["generics"]))
            }
            "union" => format!("pub union {path}{}", generics(&body["generics"])),
            "enum" => {
                for variant in items(&body["variants"]) {
                    if let Some(variant) = id_key(variant) {
                        self.variant(&variant, path);
                    }
                }
                self.impls(body, path);
                format!("pub enum {path}{}", generics(&body["generics"]))
            }
            "trait" => {
                for member in items(&body["items"]) {
                    if let Some(member) = id_key(member) {
                        self.member(&member, path, "");
                    }
                }
                let bounds = bounds(&body["bounds"]);
                let colon = if bounds.is_empty() { "" } else { ": " };
                format!(
                    "pub trait {path}{}{colon}{bounds}",
                    generics(&body["generics"])
                )
            }
            "function" => format!("pub {}", function(path, body)),
            "constant" => format!("pub const {path}: {}", ty(&body["type"])),
            "static" => format!("pub static {path}: {}", ty(&body["type"])),
            "type_alias" => format!(
                "pub type {path}{} = {}",
                generics(&body["generics"]),
                ty(&body["type"])
            ),
            "macro" => format!("pub macro {}!", path.rsplit("::").next().unwrap_or(path)),
            "proc_macro" => format!("pub proc macro {path}"),
            other => format!("pub {other} {path}"),
        };
        self.lines.insert(format!("{deprecated}{line}"));
    }

    fn fields(&mut self, body: &Value, path: &str) {
        let kind = &body["kind"];
        let fields: Vec<Value> = if let Some(plain) = kind.get("plain") {
            plain["fields"].as_array().cloned().unwrap_or_default()
        } else if let Some(tuple) = kind.get("tuple") {
            tuple.as_array().cloned().unwrap_or_default()
        } else {
            Vec::new()
        };
        for (i, field) in fields.iter().enumerate() {
            let Some(field) = id_key(field) else { continue };
            let item = self.item(&field);
            if !Self::is_public(item) {
                continue;
            }
            let name = match item["name"].as_str() {
                Some(name) if name.parse::<usize>().is_err() => name.to_owned(),
                _ => i.to_string(),
            };
            self.lines.insert(format!(
                "pub {path}.{name}: {}",
                ty(&item["inner"]["struct_field"])
            ));
        }
    }

    fn variant(&mut self, id: &str, path: &str) {
        let item = self.item(id);
        let name = item["name"].as_str().unwrap_or("_");
        let kind = &item["inner"]["variant"]["kind"];
        let shape = if let Some(tuple) = kind.get("tuple") {
            let types: Vec<String> = items(tuple)
                .filter_map(id_key)
                .map(|f| ty(&self.item(&f)["inner"]["struct_field"]))
                .collect();
            format!("({})", types.join(", "))
        } else if let Some(fields) = kind.get("struct") {
            let fields: Vec<String> = items(&fields["fields"])
                .filter_map(id_key)
                .map(|f| {
                    let field = self.item(&f);
                    format!(
                        "{}: {}",
                        field["name"].as_str().unwrap_or("_"),
                        ty(&field["inner"]["struct_field"])
                    )
                })
                .collect();
            format!(" {{ {} }}", fields.join(", "))
        } else {
            String::new()
        };
        self.lines.insert(format!("pub {path}::{name}{shape}"));
    }

    /// The inherent impls' public items and the trait impls (not auto traits, not blanket
    /// impls: what every type gets says nothing of this one).
    fn impls(&mut self, body: &Value, path: &str) {
        for imp in items(&body["impls"]) {
            let Some(imp) = id_key(imp) else { continue };
            let inner = &self.item(&imp)["inner"]["impl"];
            if inner["is_synthetic"].as_bool().unwrap_or(false)
                || !inner["blanket_impl"].is_null()
                || inner["trait"]["path"] == "StructuralPartialEq"
            {
                continue;
            }
            let impl_generics = generics(&inner["generics"]);
            let target = ty(&inner["for"]);
            if inner["trait"].is_null() {
                for member in items(&inner["items"]) {
                    if let Some(member) = id_key(member)
                        && Self::is_public(self.item(&member))
                    {
                        self.member(&member, path, &impl_generics);
                    }
                }
            } else {
                let where_clause = where_clause(&inner["generics"]);
                if where_clause.contains("$crate::__private") {
                    // pin-project-lite's `Unpin`: the same as the fields' own.
                    continue;
                }
                let negative = if inner["is_negative"].as_bool().unwrap_or(false) {
                    "!"
                } else {
                    ""
                };
                self.lines.insert(format!(
                    "impl{impl_generics} {negative}{} for {target}{where_clause}",
                    path_of(&inner["trait"]),
                ));
            }
        }
    }

    /// A method, associated type or constant of a type or trait at `path`.
    fn member(&mut self, id: &str, path: &str, impl_generics: &str) {
        let item = self.item(id);
        let name = item["name"].as_str().unwrap_or("_");
        let Some((kind, body)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        let line = match kind.as_str() {
            "function" => function(&format!("{path}::{name}"), body),
            "assoc_type" => {
                let bounds = bounds(&body["bounds"]);
                let colon = if bounds.is_empty() { "" } else { ": " };
                let value = optional_ty(" = ", &body["type"]);
                format!(
                    "type {path}::{name}{}{colon}{bounds}{value}",
                    generics(&body["generics"])
                )
            }
            "assoc_const" => format!("const {path}::{name}: {}", ty(&body["type"])),
            other => format!("{other} {path}::{name}"),
        };
        let on = if impl_generics.is_empty() {
            String::new()
        } else {
            format!("impl{impl_generics} ")
        };
        self.lines.insert(format!("pub {on}{line}"));
    }
}

fn function(path: &str, body: &Value) -> String {
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
fn generics(generics: &Value) -> String {
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

fn where_clause(generics: &Value) -> String {
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

/// The elements of the JSON array `v` (none when it is not one).
fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

/// `items` joined with `, ` between `open` and `close`; nothing when there are none.
fn joined(items: &[String], open: &str, close: &str) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!("{open}{}{close}", items.join(", "))
    }
}

fn higher_ranked(params: &Value) -> String {
    let names: Vec<String> = items(params)
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    joined(&names, "for<", "> ")
}

fn bounds(bounds: &Value) -> String {
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

fn list(values: &Value, f: impl Fn(&Value) -> Option<String>) -> String {
    items(values)
        .map(|v| f(v).unwrap_or_else(|| v.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `Path<Args>` of a resolved path.
fn path_of(path: &Value) -> String {
    format!(
        "{}{}",
        path["path"].as_str().unwrap_or("_"),
        args(&path["args"])
    )
}

fn args(args: &Value) -> String {
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

fn term(term: &Value) -> String {
    if let Some(t) = term.get("type") {
        ty(t)
    } else if let Some(c) = term.get("constant") {
        c["expr"].as_str().unwrap_or("_").to_owned()
    } else {
        term.to_string()
    }
}

/// `prefix` and the type `t`, or nothing when there is none (`null`).
fn optional_ty(prefix: &str, t: &Value) -> String {
    if t.is_null() {
        String::new()
    } else {
        format!("{prefix}{}", ty(t))
    }
}

/// A type as Rust writes it.
fn ty(t: &Value) -> String {
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
