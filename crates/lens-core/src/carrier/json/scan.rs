//! The plain run of a JSON string: the bytes up to its closing quote, an escape or a control
//! character, found eight bytes at a time.

/// Whether `c` ends the plain run of a JSON string: the closing quote, an escape, a control
/// character.
#[inline]
fn ends_plain_run(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The length of the plain run at the start of `bytes`: the offset of the first byte that
/// [`ends_plain_run`], or `bytes.len()`. Eight bytes at a time, as one `u64` (the strings of a
/// carrier are mostly long ids and plain lists, and a byte-by-byte scan was the larger part of
/// reading one). In each word a byte is flagged where it is zero after `^ '"'` or `^ '\\'`, or
/// below 0x20: the subtraction's borrow can only flag bytes above a byte already flagged, so
/// the lowest flag is exact.
#[inline]
pub(super) fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let Ok(word) = <[u8; 8]>::try_from(chunk).map(u64::from_le_bytes) else {
            break;
        };
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let stops = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGH;
        if stops != 0 {
            // Little-endian: the lowest bits are the first byte.
            return offset + (stops.trailing_zeros() / 8) as usize;
        }
        offset += 8;
    }
    let rest = chunks.remainder();
    offset
        + rest
            .iter()
            .position(|&c| ends_plain_run(c))
            .unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::{ends_plain_run, plain_run};
    use proptest::prelude::*;

    /// The plain run byte by byte: what [`plain_run`] must find, eight bytes at a time.
    fn plain_run_bytewise(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|&c| ends_plain_run(c))
            .unwrap_or(bytes.len())
    }

    /// Every byte value at every position of three words and a tail, after bytes that come
    /// close to a stop (a space, `!`, `#`, `[`, `]`, DEL, 0x80, 0xff) and before other stops,
    /// whose borrows must not flag a byte below them.
    #[test]
    fn the_run_stops_at_the_first_quote_backslash_or_control_byte_in_any_position() {
        let near = [b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff];
        for len in 0..27 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut bytes: Vec<u8> = (0..len).map(|i| near[i % near.len()]).collect();
                    bytes[at] = byte;
                    // Stops after `at` too: each kind in a later word.
                    for (i, stop) in [(at + 1, b'"'), (at + 9, 0), (at + 17, b'\\')] {
                        if let Some(b) = bytes.get_mut(i) {
                            *b = stop;
                        }
                    }
                    assert_eq!(
                        plain_run(&bytes),
                        plain_run_bytewise(&bytes),
                        "byte {byte:#04x} at {at} of {len}"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn the_run_is_the_same_eight_bytes_at_a_time(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(plain_run(&bytes), plain_run_bytewise(&bytes));
        }

        #[test]
        fn the_run_is_the_same_over_string_like_text(bytes in proptest::collection::vec(prop_oneof![
            8 => 0x20u8..0x7f,
            1 => Just(b'"'),
            1 => Just(b'\\'),
            1 => 0u8..0x20,
            2 => 0x80u8..=0xff,
        ], 0..80)) {
            prop_assert_eq!(plain_run(&bytes), plain_run_bytewise(&bytes));
        }
    }
}
