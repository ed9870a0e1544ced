//! The hand-written traceparent floors: what encoding and parsing 55 bytes cost with no
//! validation at all.

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Hand-written floor: hex digits into a fixed buffer, nothing else.
pub(crate) fn encode_floor(trace: &[u8; 16], span: &[u8; 8], flags: u8) -> [u8; 55] {
    let mut out = [b'-'; 55];
    out[0] = b'0';
    out[1] = b'0';
    for (i, b) in trace.iter().enumerate() {
        out[3 + 2 * i] = HEX[(b >> 4) as usize];
        out[4 + 2 * i] = HEX[(b & 15) as usize];
    }
    for (i, b) in span.iter().enumerate() {
        out[36 + 2 * i] = HEX[(b >> 4) as usize];
        out[37 + 2 * i] = HEX[(b & 15) as usize];
    }
    out[53] = HEX[(flags >> 4) as usize];
    out[54] = HEX[(flags & 15) as usize];
    out
}

fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        _ => c.wrapping_sub(b'a').wrapping_add(10),
    }
}

/// Hand-written floor: 55 bytes into ids and flags, no validation.
pub(crate) fn parse_floor(s: &[u8]) -> ([u8; 16], [u8; 8], u8) {
    let mut trace = [0u8; 16];
    let mut span = [0u8; 8];
    for (i, t) in trace.iter_mut().enumerate() {
        *t = (nibble(s[3 + 2 * i]) << 4) | nibble(s[4 + 2 * i]);
    }
    for (i, t) in span.iter_mut().enumerate() {
        *t = (nibble(s[36 + 2 * i]) << 4) | nibble(s[37 + 2 * i]);
    }
    (trace, span, (nibble(s[53]) << 4) | nibble(s[54]))
}
