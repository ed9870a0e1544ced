//! A/B interleaved rounds: every variant of an operation runs a batch in turn, round after
//! round, and each round gives one ratio per variant against the same round's reference. The
//! median of those ratios (quartiles beside it) does not move with the machine's load the way
//! separate measurements do on a shared 2-core VM.

use std::time::Instant;

pub(crate) const ROUNDS: usize = 41;
pub(crate) const BATCH: usize = 5_000;

pub(crate) type Op<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// Runs the operations alternately and prints, per operation, its median time, the median
/// (quartiles) of its per-round ratio to the first operation (the floor), and the same against
/// the second (lens): on the stock row that is how many times faster lens is.
///
/// For profiling: `LENS_AB_ONLY=text` runs only the comparisons whose title contains `text`, and
/// `LENS_AB_OP=name` only the operation of that name in them (printing nothing).
pub(crate) fn compare(title: &str, mut ops: Vec<Op<'_>>) {
    if std::env::var("LENS_AB_ONLY").is_ok_and(|only| !title.contains(&only)) {
        return;
    }
    if let Ok(name) = std::env::var("LENS_AB_OP") {
        for (_, op) in ops.iter_mut().filter(|(n, _)| *n == name) {
            for _ in 0..ROUNDS * BATCH {
                op();
            }
        }
        return;
    }
    let mut times = vec![Vec::with_capacity(ROUNDS); ops.len()];
    // Warm-up round, not recorded.
    for round in 0..=ROUNDS {
        // Rotate the order, so that no variant always runs right after the same one.
        for k in 0..ops.len() {
            let i = (k + round) % ops.len();
            let (_, op) = &mut ops[i];
            let start = Instant::now();
            for _ in 0..BATCH {
                op();
            }
            if round > 0 {
                times[i].push(start.elapsed().as_nanos() as f64 / BATCH as f64);
            }
        }
    }
    println!("{title}");
    println!(
        "  {:<32}      median   / floor (q1-q3)        / lens (q1-q3)",
        ""
    );
    let q = |v: &[f64], f: usize| v[(v.len() - 1) * f / 4];
    let ratios = |i: usize, of: usize| {
        let mut r: Vec<f64> = times[i]
            .iter()
            .zip(&times[of])
            .map(|(a, b)| a / b)
            .collect();
        r.sort_by(f64::total_cmp);
        format!("{:.3} ({:.3}-{:.3})", q(&r, 2), q(&r, 1), q(&r, 3))
    };
    for (i, (name, _)) in ops.iter().enumerate() {
        let mut t = times[i].clone();
        t.sort_by(f64::total_cmp);
        let vs_lens = if ops.len() > 1 {
            ratios(i, 1)
        } else {
            String::new()
        };
        println!(
            "  {name:<32} {:>8.1} ns   {:<22} {vs_lens}",
            q(&t, 2),
            ratios(i, 0),
        );
    }
}
