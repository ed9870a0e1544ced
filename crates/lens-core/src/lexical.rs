//! Lexical rules shared by the header grammars: optional whitespace and splitting on one ASCII
//! separator. Plain byte loops: header parts are short, and `str::split`'s generic searcher (or
//! memchr) costs more than the scan itself on them.

/// Removes spaces and tabs (and only those: SPEC.md §1-§3) at both ends.
#[inline]
pub(crate) fn trim_ows(s: &str) -> &str {
    let b = s.as_bytes();
    let Some(start) = b.iter().position(|&c| c != b' ' && c != b'\t') else {
        return "";
    };
    let end = b
        .iter()
        .rposition(|&c| c != b' ' && c != b'\t')
        .map_or(start, |i| i + 1);
    // Both ends sit next to ASCII bytes (or the string's ends), so they are char boundaries.
    s.get(start..end).unwrap_or_default()
}

/// Splits at the first `sep` (an ASCII byte), which belongs to neither part.
#[inline]
pub(crate) fn split_once_byte(s: &str, sep: u8) -> Option<(&str, &str)> {
    let at = s.as_bytes().iter().position(|&c| c == sep)?;
    // `sep` is ASCII, so both sides of it are char boundaries.
    Some((s.get(..at)?, s.get(at + 1..)?))
}

/// Iterates over the parts of `s` between `sep` bytes (like `str::split` with a char).
#[inline]
pub(crate) fn split_byte(s: &str, sep: u8) -> SplitByte<'_> {
    SplitByte { rest: Some(s), sep }
}

/// Iterator of [`split_byte`].
#[derive(Clone, Debug)]
pub(crate) struct SplitByte<'a> {
    rest: Option<&'a str>,
    sep: u8,
}

impl<'a> Iterator for SplitByte<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match split_once_byte(rest, self.sep) {
            Some((part, tail)) => {
                self.rest = Some(tail);
                Some(part)
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}
