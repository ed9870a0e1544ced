//! Encoding the carrier as JSON, exactly as Python's `json.dumps` would (docs/propagation-rules.md#json-byte-format).

use crate::carrier::lines::Lines;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `{"k": "v", "k2": ["a", "b"]}` exactly as Python's `json.dumps` (ensure_ascii) would.
pub(crate) fn write_carrier(entries: &[(String, Lines)], out: &mut Vec<u8>) {
    // Exact when nothing needs escaping; escapes only grow the Vec further.
    let mut estimate = 2;
    for (k, lines) in entries {
        estimate += k.len() + 6;
        for line in lines.as_slice() {
            estimate += line.len() + 4;
        }
    }
    out.reserve(estimate);

    out.push(b'{');
    let mut first = true;
    for (key, lines) in entries {
        if lines.is_empty() {
            continue;
        }
        write_key(&mut first, key, out);
        let lines = lines.as_slice();
        if let [line] = lines {
            write_string(line, out);
        } else {
            out.push(b'[');
            for (i, line) in lines.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                write_string(line, out);
            }
            out.push(b']');
        }
    }
    out.push(b'}');
}

/// Appends `{"k": "v", ...}` for single-line fields, exactly as [`write_carrier`] writes a carrier
/// holding them in this order (Python's `json.dumps`); `None` fields are left out.
pub(crate) fn write_fields(fields: &[(&str, Option<String>)], out: &mut Vec<u8>) {
    let estimate: usize = fields
        .iter()
        .filter_map(|(k, v)| Some(k.len() + v.as_ref()?.len() + 8))
        .sum();
    out.reserve(estimate + 2);
    out.push(b'{');
    let mut first = true;
    for (key, value) in fields {
        let Some(value) = value else {
            continue;
        };
        write_key(&mut first, key, out);
        write_string(value, out);
    }
    out.push(b'}');
}

/// Appends `"key": ` to an object being written, after `, ` unless it is the `first` member.
fn write_key(first: &mut bool, key: &str, out: &mut Vec<u8>) {
    if !*first {
        out.extend_from_slice(b", ");
    }
    *first = false;
    write_string(key, out);
    out.extend_from_slice(b": ");
}

fn write_u_escape(unit: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[((unit >> 12) & 0xf) as usize],
        HEX[((unit >> 8) & 0xf) as usize],
        HEX[((unit >> 4) & 0xf) as usize],
        HEX[(unit & 0xf) as usize],
    ]);
}

/// Appends `s` as a JSON string, escaped as Python's `json.dumps` does with `ensure_ascii=True`.
fn write_string(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.push(b'"');
    // Header values are almost always printable ASCII without `"` or `\`: checked without
    // branching per byte (so the compiler can vectorize it), then copied whole.
    let plain = bytes.iter().fold(true, |plain, &b| {
        plain & (b.wrapping_sub(0x20) < 0x5f) & (b != b'"') & (b != b'\\')
    });
    if plain {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut run_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[run_start..i]);
        if b < 0x80 {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                _ => write_u_escape(u32::from(b), out),
            }
            i += 1;
        } else {
            // `i` is at the lead byte of a character: `s` is valid UTF-8 and every byte before
            // it in this loop was ASCII or a whole character.
            let Some(c) = s.get(i..).and_then(|rest| rest.chars().next()) else {
                // Unreachable for a valid `str`; stop rather than loop.
                break;
            };
            let cp = u32::from(c);
            if cp > 0xffff {
                let v = cp - 0x1_0000;
                write_u_escape(0xd800 | (v >> 10), out);
                write_u_escape(0xdc00 | (v & 0x3ff), out);
            } else {
                write_u_escape(cp, out);
            }
            i += c.len_utf8();
        }
        run_start = i;
    }
    out.extend_from_slice(&bytes[run_start.min(bytes.len())..]);
    out.push(b'"');
}
