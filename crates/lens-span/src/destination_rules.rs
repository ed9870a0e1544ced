//! Values chosen by destination pattern, the first matching rule wins: one implementation
//! behind the messaging inbound and outbound policies and the destination templates. Patterns
//! are NATS-style subjects: `.`-separated tokens, `*` for one token, `>` for one or more at the
//! end.

use std::fmt;
use std::sync::Arc;

/// Rules in the order they were added; shared (cloned with the options), never changed in place.
#[derive(Clone)]
pub(crate) struct DestinationRules<T> {
    rules: Arc<[(String, T)]>,
}

impl<T> Default for DestinationRules<T> {
    fn default() -> Self {
        DestinationRules {
            rules: Arc::from(Vec::new()),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for DestinationRules<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.rules.fmt(f)
    }
}

impl<T: Clone> DestinationRules<T> {
    /// These rules, then `value` for destinations matching `pattern`.
    pub(crate) fn with(&self, pattern: String, value: T) -> Self {
        let mut rules = self.rules.to_vec();
        rules.push((pattern, value));
        DestinationRules {
            rules: Arc::from(rules),
        }
    }
}

impl<T> DestinationRules<T> {
    /// The first rule `destination` matches: its pattern and value.
    #[inline]
    pub(crate) fn find(&self, destination: &str) -> Option<(&str, &T)> {
        self.rules
            .iter()
            .find(|(pattern, _)| subject_matches(pattern, destination))
            .map(|(pattern, value)| (pattern.as_str(), value))
    }

    /// Whether there is no rule.
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// Whether `subject` matches the NATS-style `pattern`.
fn subject_matches(pattern: &str, subject: &str) -> bool {
    let mut subject = subject.split('.');
    for token in pattern.split('.') {
        match token {
            ">" => return subject.next().is_some(),
            "*" => {
                if subject.next().is_none() {
                    return false;
                }
            }
            exact => {
                if subject.next() != Some(exact) {
                    return false;
                }
            }
        }
    }
    subject.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_patterns() {
        assert!(subject_matches("a.b", "a.b"));
        assert!(!subject_matches("a.b", "a.b.c"));
        assert!(!subject_matches("a.b.c", "a.b"));
        assert!(subject_matches("a.*", "a.b"));
        assert!(!subject_matches("a.*", "a"));
        assert!(!subject_matches("a.*", "a.b.c"));
        assert!(subject_matches("a.>", "a.b.c"));
        assert!(!subject_matches("a.>", "a"));
        assert!(subject_matches(">", "x"));
        assert!(!subject_matches("a.b", "a.x"));
    }

    #[test]
    fn the_first_matching_rule_wins_and_a_clone_does_not_see_later_rules() {
        let first = DestinationRules::default().with("a.*".to_owned(), 1);
        let both = first.with("a.b".to_owned(), 2).with(">".to_owned(), 3);
        assert_eq!(both.find("a.b"), Some(("a.*", &1)));
        assert_eq!(both.find("x.y"), Some((">", &3)));
        assert_eq!(first.find("x.y"), None);
        assert!(DestinationRules::<()>::default().is_empty());
        assert_eq!(format!("{both:?}"), r#"[("a.*", 1), ("a.b", 2), (">", 3)]"#);
    }
}
