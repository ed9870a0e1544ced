//! The elements of a JSON array, and lists written with `, ` between their elements.

use serde_json::Value;

/// The elements of the JSON array `v` (none when it is not one).
pub(super) fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

/// `items` joined with `, ` between `open` and `close`; nothing when there are none.
pub(super) fn joined(items: &[String], open: &str, close: &str) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!("{open}{}{close}", items.join(", "))
    }
}

pub(super) fn list(values: &Value, f: impl Fn(&Value) -> Option<String>) -> String {
    items(values)
        .map(|v| f(v).unwrap_or_else(|| v.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}
