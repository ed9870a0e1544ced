//! The order in which A/B comparisons run their arms: a Williams design, so that what an arm
//! leaves behind (spans still queued for export, a collector's work, warm or cold caches) falls
//! on every other arm alike instead of always on the same one.
//!
//! ```
//! use lens_testkit::order::{balanced_order, cycles_to_balance};
//!
//! // Four arms: four cycles, each arm right after every other arm once.
//! let rows: Vec<Vec<usize>> = (0..cycles_to_balance(4))
//!     .map(|cycle| (0..4).map(|position| balanced_order(4, cycle, position)).collect())
//!     .collect();
//! assert_eq!(rows[0], [0, 1, 3, 2]);
//! assert_eq!(rows[1], [1, 2, 0, 3]);
//! ```

/// The arm at `position` of cycle `cycle` when `n` arms each run once per cycle: row
/// `cycle % n` of the balanced Latin square whose first row is 0, 1, n-1, 2, n-2, …; for an
/// odd `n`, every second block of `n` cycles runs those rows backwards. Over
/// [`cycles_to_balance`]`(n)` cycles each arm comes right after every other arm equally often.
pub fn balanced_order(n: usize, cycle: usize, position: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let position = position % n;
    // An odd square is balanced only together with its mirror image.
    let position = if !n.is_multiple_of(2) && !(cycle / n).is_multiple_of(2) {
        n - 1 - position
    } else {
        position
    };
    let first = if position == 0 {
        0
    } else if position % 2 == 1 {
        position.div_ceil(2)
    } else {
        n - position / 2
    };
    (first + cycle) % n
}

/// How many cycles of [`balanced_order`] balance `n` arms: `n` when `n` is even, `2n` when odd.
pub fn cycles_to_balance(n: usize) -> usize {
    if n.is_multiple_of(2) { n.max(1) } else { 2 * n }
}

#[cfg(test)]
mod tests {
    use super::{balanced_order, cycles_to_balance};

    #[test]
    fn every_cycle_runs_each_arm_once_and_each_arm_follows_every_other_equally_often() {
        for n in 1..=9 {
            let cycles = cycles_to_balance(n);
            let mut follows = vec![vec![0; n]; n];
            for cycle in 0..cycles {
                let row: Vec<usize> = (0..n).map(|p| balanced_order(n, cycle, p)).collect();
                let mut sorted = row.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n {n}, cycle {cycle}");
                for pair in row.windows(2) {
                    follows[pair[0]][pair[1]] += 1;
                }
            }
            let each = if n.is_multiple_of(2) { 1 } else { 2 };
            for (a, row) in follows.iter().enumerate() {
                for (b, &count) in row.iter().enumerate() {
                    assert_eq!(count, if a == b { 0 } else { each }, "n {n}: {a} then {b}");
                }
            }
        }
    }
}
