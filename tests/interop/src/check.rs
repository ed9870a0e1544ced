//! Counting checks: every comparison of the run is one named check, passed or failed.

use std::fmt::Debug;

/// The checks of one scenario, with how many spans and contexts they looked at.
#[derive(Debug)]
pub(crate) struct Checks {
    scenario: &'static str,
    passed: usize,
    failures: Vec<String>,
    /// Spans (both languages) whose trace id and parent were checked.
    pub(crate) spans: usize,
    /// Contexts carried across the language boundary and compared field by field.
    pub(crate) contexts: usize,
    /// The docs/propagation-rules.md#differences-from-nemo-lens rows a check of this scenario named.
    pub(crate) rows: Vec<&'static str>,
}

impl Checks {
    pub(crate) fn new(scenario: &'static str) -> Self {
        Checks {
            scenario,
            passed: 0,
            failures: Vec::new(),
            spans: 0,
            contexts: 0,
            rows: Vec::new(),
        }
    }

    pub(crate) fn scenario(&self) -> &'static str {
        self.scenario
    }

    pub(crate) fn passed(&self) -> usize {
        self.passed
    }

    pub(crate) fn failures(&self) -> &[String] {
        &self.failures
    }

    /// One check: `ok`, or a failure described by `detail`.
    pub(crate) fn check(&mut self, name: &str, ok: bool, detail: impl FnOnce() -> String) -> bool {
        if ok {
            self.passed += 1;
        } else {
            let line = format!("{}: {name}: {}", self.scenario, detail());
            println!("  FAIL {line}");
            self.failures.push(line);
        }
        ok
    }

    /// `actual == expected`.
    pub(crate) fn eq<T: PartialEq + Debug + ?Sized>(
        &mut self,
        name: &str,
        actual: &T,
        expected: &T,
    ) -> bool {
        self.check(name, actual == expected, || {
            format!("\n      got      {actual:?}\n      expected {expected:?}")
        })
    }

    /// A failure that is not a comparison (a process or request that went wrong).
    pub(crate) fn fail(&mut self, name: &str, why: impl std::fmt::Display) {
        self.check(name, false, || why.to_string());
    }

    /// Notes that a check of this scenario shows docs/propagation-rules.md#differences-from-nemo-lens row `row`.
    pub(crate) fn row(&mut self, row: &'static str) {
        if !self.rows.contains(&row) {
            self.rows.push(row);
        }
    }
}
