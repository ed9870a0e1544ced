//! [`Lines`]: the lines a JSON carrier holds for one key.

/// The lines of one key: one line (the common case) without a `Vec` of its own.
#[derive(Clone, Debug)]
pub(crate) enum Lines {
    One(String),
    Many(Vec<String>),
}

impl Lines {
    pub(crate) fn as_slice(&self) -> &[String] {
        match self {
            Lines::One(line) => std::slice::from_ref(line),
            Lines::Many(lines) => lines,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    pub(super) fn push(&mut self, line: String) {
        match self {
            Lines::One(first) => {
                let first = std::mem::take(first);
                *self = Lines::Many(vec![first, line]);
            }
            Lines::Many(lines) => lines.push(line),
        }
    }

    /// Several lines as stored: one line needs no `Vec`.
    pub(crate) fn from_vec(mut lines: Vec<String>) -> Self {
        match lines.pop() {
            Some(line) if lines.is_empty() => Lines::One(line),
            Some(line) => {
                lines.push(line);
                Lines::Many(lines)
            }
            None => Lines::Many(lines),
        }
    }
}

impl PartialEq for Lines {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Lines {}
