//! What the comparison measured, and the failures it reports.

use super::mode::Mode;

/// Latencies of one arm.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ArmStats {
    /// Requests answered.
    pub requests: u64,
    /// Requests failed.
    pub failed: u64,
    /// Requests whose hops saw other ids.
    pub mixups: u64,
    /// Mean latency over all its rounds, microseconds.
    pub mean_us: f64,
    /// Median latency over all its rounds, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency over all its rounds, microseconds.
    pub p99_us: f64,
    /// Exports the processor attempted that failed (or timed out).
    pub exports_failed: u64,
    /// Exports that succeeded (only the healthy collector answers).
    pub exports_ok: u64,
    /// Mean and median latency of each of its rounds, indexed by cycle (`None`: no round in that
    /// cycle, or none of its requests answered).
    pub rounds: Vec<Option<RoundStats>>,
}

/// Latency of one round of one arm.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RoundStats {
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
}

/// Which latency of a round a ratio compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Statistic {
    /// The round's mean latency.
    Mean,
    /// The round's median latency.
    Median,
}

/// What [`run_otlp_faults`](super::run_otlp_faults) measured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OtlpReport {
    /// Per arm, in [`Mode::ALL`] order.
    pub arms: Vec<(Mode, ArmStats)>,
    /// Connections the black-hole listener accepted (the exporter did try it).
    pub black_hole_connections: u64,
    /// Exports the healthy collector answered.
    pub healthy_exports_received: u64,
    /// The allowed slow-down, in percent.
    pub max_slowdown_percent: u64,
}

impl OtlpReport {
    /// The stats of one arm.
    pub fn arm(&self, mode: Mode) -> Option<&ArmStats> {
        self.arms.iter().find(|(m, _)| *m == mode).map(|(_, s)| s)
    }

    /// The slow-down of `mode` against `against` (1.0: the same): within each cycle, the ratio
    /// of the two arms' rounds; then the median over the cycles. Pairing rounds of the same
    /// cycle cancels drift of the machine's speed, and the median a burst of other load in one
    /// round. `None` when no cycle has a round of both.
    pub fn ratio(&self, mode: Mode, against: Mode, statistic: Statistic) -> Option<f64> {
        let (a, b) = (self.arm(mode)?, self.arm(against)?);
        let pick = |r: &RoundStats| match statistic {
            Statistic::Mean => r.mean_us,
            Statistic::Median => r.p50_us,
        };
        let mut ratios: Vec<f64> = a
            .rounds
            .iter()
            .zip(&b.rounds)
            .filter_map(|(x, y)| Some(pick(x.as_ref()?) / pick(y.as_ref()?).max(f64::EPSILON)))
            .collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_unstable_by(f64::total_cmp);
        let n = ratios.len();
        Some(if n % 2 == 1 {
            ratios[n / 2]
        } else {
            (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
        })
    }

    /// Every check that failed; empty when the run passed.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let limit = 1.0 + self.max_slowdown_percent as f64 / 100.0;
        for (mode, stats) in &self.arms {
            if stats.requests == 0 {
                out.push(format!("{mode}: no request completed"));
            }
            if stats.failed > 0 {
                out.push(format!("{mode}: {} requests failed", stats.failed));
            }
            if stats.mixups > 0 {
                out.push(format!("{mode}: {} context mix-ups", stats.mixups));
            }
            if !Mode::FAULTS.contains(mode) {
                continue;
            }
            if stats.exports_ok > 0 {
                out.push(format!(
                    "{mode}: {} exports succeeded against a dead collector",
                    stats.exports_ok
                ));
            }
            for (what, statistic) in [("mean", Statistic::Mean), ("median", Statistic::Median)] {
                match self.ratio(*mode, Mode::REFERENCE, statistic) {
                    Some(r) if r > limit => out.push(format!(
                        "{mode}: {what} latency {:.1}% above the healthy collector's (limit {}%)",
                        (r - 1.0) * 100.0,
                        self.max_slowdown_percent
                    )),
                    Some(_) => {}
                    None => out.push(format!(
                        "{mode}: no cycle with a round of it and of the healthy collector"
                    )),
                }
            }
        }
        if self
            .arm(Mode::CollectorDown)
            .is_some_and(|s| s.exports_failed == 0)
        {
            out.push("collector down: the exporter never tried to export".to_owned());
        }
        if self.black_hole_connections == 0 {
            out.push("black hole: the exporter never connected".to_owned());
        }
        if self.arm(Mode::Healthy).is_some_and(|s| s.exports_ok == 0)
            || self.healthy_exports_received == 0
        {
            out.push("healthy collector: no export reached it".to_owned());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report whose arms ran `cycles` cycles; `latency(mode, cycle)` is each round's mean and
    /// median. Every other check passes.
    fn report(cycles: usize, latency: impl Fn(Mode, usize) -> f64) -> OtlpReport {
        let arms = Mode::ALL
            .iter()
            .map(|&mode| {
                let stats = ArmStats {
                    requests: 100,
                    exports_failed: u64::from(Mode::FAULTS.contains(&mode)),
                    exports_ok: u64::from(mode == Mode::Healthy),
                    rounds: (0..cycles)
                        .map(|c| {
                            Some(RoundStats {
                                mean_us: latency(mode, c),
                                p50_us: latency(mode, c),
                            })
                        })
                        .collect(),
                    ..ArmStats::default()
                };
                (mode, stats)
            })
            .collect();
        OtlpReport {
            arms,
            black_hole_connections: 1,
            healthy_exports_received: 1,
            max_slowdown_percent: 5,
        }
    }

    #[test]
    fn a_fault_arm_slower_in_every_cycle_fails() {
        let r = report(9, |mode, _| {
            if mode == Mode::CollectorDown {
                1080.0
            } else {
                1000.0
            }
        });
        let failures = r.failures();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].starts_with("collector down: mean latency 8.0% above"));
        assert!(failures[1].starts_with("collector down: median latency 8.0% above"));
    }

    #[test]
    fn one_slow_round_is_not_a_slow_down() {
        // Other load on the machine during one round of the black hole: the median over the
        // cycles does not move; a mean pooled over all rounds would (1.22x here).
        let r = report(9, |mode, cycle| {
            if mode == Mode::BlackHole && cycle == 4 {
                3000.0
            } else {
                1000.0
            }
        });
        assert_eq!(r.failures(), Vec::<String>::new());
    }

    #[test]
    fn the_machine_slowing_down_is_cancelled_by_pairing() {
        // Every arm 3% slower each cycle; the black hole 4% slower than the reference in each.
        let r = report(10, |mode, cycle| {
            let machine = 1000.0 * 1.03f64.powi(cycle as i32);
            if mode == Mode::BlackHole {
                machine * 1.04
            } else {
                machine
            }
        });
        let ratio = r.ratio(Mode::BlackHole, Mode::REFERENCE, Statistic::Median);
        assert!(ratio.is_some_and(|x| (x - 1.04).abs() < 1e-9), "{ratio:?}");
        assert_eq!(r.failures(), Vec::<String>::new());
    }

    #[test]
    fn cycles_without_a_round_of_both_are_left_out() {
        let mut r = report(3, |mode, cycle| {
            if mode == Mode::CollectorDown && cycle == 2 {
                5000.0
            } else {
                1000.0
            }
        });
        // The reference's last round answered nothing: cycle 2 cannot be compared.
        r.arms[1].1.rounds[2] = None;
        assert_eq!(
            r.ratio(Mode::CollectorDown, Mode::REFERENCE, Statistic::Mean),
            Some(1.0)
        );
        r.arms[1].1.rounds.clear();
        assert_eq!(
            r.ratio(Mode::CollectorDown, Mode::REFERENCE, Statistic::Mean),
            None
        );
        assert!(
            r.failures()
                .iter()
                .any(|f| f.starts_with("collector down: no cycle with a round"))
        );
    }

    #[test]
    fn a_healthy_collector_that_received_nothing_fails() {
        let mut r = report(3, |_, _| 1000.0);
        r.healthy_exports_received = 0;
        assert_eq!(
            r.failures(),
            vec!["healthy collector: no export reached it".to_owned()]
        );
    }
}
