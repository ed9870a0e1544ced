//! The walk from the crate root through public modules and re-exports: one line per item.

use std::collections::BTreeSet;

use serde_json::Value;

use super::lists::items;
use super::signature::{function, generics, where_clause};
use super::types::{bounds, optional_ty, path_of, ty};

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
