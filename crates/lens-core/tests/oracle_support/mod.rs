//! Reference implementations of docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage, written as plainly as the rules read: split
//! on `,`, trim, split on `=`, check each character. Slow and allocating, on purpose: they are
//! the oracle the one fast codec in `src/` is compared with on arbitrary input, and share no
//! code with it.

use lens_core::Limits;

fn trim(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

/// docs/propagation-rules.md#tracestate: the members kept, or `None` when the whole tracestate is dropped.
pub(crate) fn tracestate(lines: &[&str], limits: &Limits) -> Option<Vec<(String, String)>> {
    let joined = lines.join(",");
    if joined.len() > limits.tracestate_bytes {
        return None;
    }
    let mut kept: Vec<(String, String)> = Vec::new();
    let mut count = 0;
    for raw in joined.split(',') {
        let member = trim(raw);
        if member.is_empty() {
            continue;
        }
        count += 1;
        if count > limits.tracestate_members {
            return None;
        }
        let (key, value) = member.split_once('=')?;
        let key_ok = key.len() <= 256
            && key.chars().enumerate().all(|(i, c)| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || (i > 0 && matches!(c, '_' | '-' | '*' | '/' | '@'))
            })
            && !key.is_empty();
        let value_ok = !value.is_empty()
            && value.len() <= 256
            && !value.ends_with(' ')
            && value
                .chars()
                .all(|c| (' '..='~').contains(&c) && c != ',' && c != '=');
        if !key_ok || !value_ok {
            return None;
        }
        if !kept.iter().any(|(k, _)| k == key) {
            kept.push((key.to_owned(), value.to_owned()));
        }
    }
    Some(kept)
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

fn is_octet(c: char) -> bool {
    c.is_ascii() && ('!'..='~').contains(&c) && !matches!(c, '"' | ',' | ';' | '\\')
}

fn properties(raw: &str) -> Option<String> {
    let mut parts = Vec::new();
    for part in raw.split(';') {
        let part = trim(part);
        match part.split_once('=') {
            Some((k, v)) => {
                let (k, v) = (trim(k), trim(v));
                if !is_token(k) || !v.chars().all(is_octet) {
                    return None;
                }
                parts.push(format!("{k}={v}"));
            }
            None if is_token(part) => parts.push(part.to_owned()),
            None => return None,
        }
    }
    Some(parts.join(";"))
}

fn decode(raw: &str, plus_as_space: bool) -> String {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'%' if i + 2 < b.len() && hex(b[i + 1]).is_some() && hex(b[i + 2]).is_some() => {
                out.push((hex(b[i + 1]).unwrap() * 16 + hex(b[i + 2]).unwrap()) as u8);
                i += 3;
            }
            b'+' if plus_as_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// docs/propagation-rules.md#baggage percent-encoding of a value.
pub(crate) fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// One member as lens sends it.
pub(crate) fn member(key: &str, value: &str, properties: &str) -> String {
    if properties.is_empty() {
        format!("{key}={}", encode(value))
    } else {
        format!("{key}={};{properties}", encode(value))
    }
}

/// docs/propagation-rules.md#baggage: the members kept, in order (key, decoded value, normalized properties), and the
/// header lens sends for them.
pub(crate) fn baggage(
    lines: &[&str],
    limits: &Limits,
    plus_as_space: bool,
) -> (Vec<(String, String, String)>, String) {
    let mut kept: Vec<(String, String, String)> = Vec::new();
    let header_len = |kept: &[(String, String, String)]| {
        kept.iter()
            .map(|(k, v, p)| member(k, v, p).len())
            .sum::<usize>()
            + kept.len().saturating_sub(1)
    };
    'all: for line in lines {
        for raw in line.split(',') {
            let m = trim(raw);
            if m.is_empty() {
                continue;
            }
            let Some((key, rest)) = m.split_once('=') else {
                continue;
            };
            let key = trim(key);
            let (value, props) = match rest.split_once(';') {
                Some((v, p)) => (trim(v), Some(p)),
                None => (trim(rest), None),
            };
            if !is_token(key) || !value.chars().all(is_octet) {
                continue;
            }
            let props = match props.map(properties) {
                Some(None) => continue,
                Some(Some(p)) => p,
                None => String::new(),
            };
            let mut next = kept.clone();
            let entry = (key.to_owned(), decode(value, plus_as_space), props);
            match next.iter_mut().find(|(k, _, _)| k == key) {
                Some(slot) => *slot = entry,
                None => {
                    if kept.len() >= limits.baggage_members {
                        break 'all;
                    }
                    next.push(entry);
                }
            }
            if header_len(&next) > limits.baggage_bytes {
                break 'all;
            }
            kept = next;
        }
    }
    let header = kept
        .iter()
        .map(|(k, v, p)| member(k, v, p))
        .collect::<Vec<_>>()
        .join(",");
    (kept, header)
}
