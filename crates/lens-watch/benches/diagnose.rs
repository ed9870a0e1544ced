//! The doctor on one completing trace pair (a CLIENT span without a child, then the new root
//! its server started: one lost hop found) while 1,000 or 10,000 other childless clients of the
//! same request wait in its index. Matching goes through an index by request and start time,
//! so the rows should be close: the time per pair does not grow with the open traces. Two
//! shapes: the server at the address the client called, and behind a load balancer (the
//! server names the Host the balancer sent, `pool:80`: paired by request and time).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_json;
use lens_watch::diagnose::{Doctor, DoctorConfig, Rule};
use lens_watch::model::TraceId;

/// One export of `service` with one span: `kind`, at `start_us` for `len_us` microseconds,
/// `POST /plan` (client: to `http://planner:8000/plan`; server: behind a balancer, naming
/// `pool:80`, when `behind`).
fn export(
    service: &str,
    trace: u64,
    kind: u8,
    (start_us, len_us): (u64, u64),
    behind: bool,
) -> String {
    let t0 = 1_700_000_000_000_000_000u64;
    let url = match (kind, behind) {
        (3, _) => r#"{"key":"url.full","value":{"stringValue":"http://planner:8000/plan"}}"#,
        (_, false) => r#"{"key":"url.path","value":{"stringValue":"/plan"}}"#,
        (_, true) => {
            r#"{"key":"url.path","value":{"stringValue":"/plan"}},{"key":"server.address","value":{"stringValue":"pool"}},{"key":"server.port","value":{"intValue":"80"}},{"key":"lens.trace.new_root","value":{"stringValue":"none"}}"#
        }
    };
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{service}"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"{trace:032x}","spanId":"{:016x}","name":"POST","kind":{kind},"startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"http.request.method","value":{{"stringValue":"POST"}}}},{url}]}}]}}]}}]}}"#,
        trace + 1,
        t0 + start_us * 1000,
        t0 + (start_us + len_us) * 1000
    )
}

/// Adds a pair of traces: a client in the middle of the open clients' time range, and its
/// server's new root (behind a balancer when `behind`); returns their ids, completed.
fn pair(assembler: &mut Assembler, open: u64, n: u64, behind: bool) -> [TraceId; 2] {
    let (client, root) = (open + 2 * n + 1, open + 2 * n + 2);
    // Between two open clients, beyond the 1 ms tolerance of either: no other client fits it
    // (behind a balancer, one would make the pair an ambiguous hop).
    let middle = open / 2 * 5000 + 2500;
    let now = Instant::now();
    for line in [
        export("gateway", client, 3, (middle, 50), false),
        export("planner", root, 2, (middle + 10, 30), behind),
    ] {
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
    }
    let ids = assembler.poll(now);
    [ids[0], ids[1]]
}

/// `open` childless clients of the same request, 5 ms apart, 0.5 ms long, in the index.
fn held(open: u64) -> (Assembler, Doctor) {
    // Traces complete at once (no quiet window): `poll` returns the new ones only.
    let mut assembler = Assembler::new(Config {
        quiet_for: Duration::ZERO,
        max_traces: 100_000,
        ..Config::default()
    });
    let mut doctor = Doctor::new(DoctorConfig::default());
    let now = Instant::now();
    for n in 1..=open {
        let line = export("gateway", n, 3, (n * 5000, 500), false);
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
    }
    for id in assembler.poll(now) {
        assert!(
            doctor
                .diagnose(assembler.trace(&id).expect("held"), &assembler)
                .is_empty()
        );
    }
    assert_eq!(doctor.candidates() as u64, open);
    (assembler, doctor)
}

fn diagnose(c: &mut Criterion) {
    let mut group = c.benchmark_group("doctor: one lost hop found");
    for (behind, shape) in [(false, "at the address"), (true, "behind a balancer")] {
        for open in [1_000u64, 10_000] {
            let (mut assembler, mut doctor) = held(open);
            // Checked before it is timed: the pair is found, and the index is as it was.
            let [client, root] = pair(&mut assembler, open, 0, behind);
            assert!(
                doctor
                    .diagnose(assembler.trace(&client).expect("held"), &assembler)
                    .is_empty()
            );
            let found = doctor.diagnose(assembler.trace(&root).expect("held"), &assembler);
            assert_eq!(found.len(), 1);
            assert_eq!(found[0].rule, Rule::LostContext);
            assert_eq!(
                found[0].message.contains("paired by request and time"),
                behind,
                "{}",
                found[0].message
            );
            assert_eq!(doctor.candidates() as u64, open);
            let mut n = 0;
            group.bench_function(format!("{shape}, {open} open childless clients"), |b| {
                // A new pair each time (a hop is matched once); only the diagnosis is timed.
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        n += 1;
                        let [client, root] = pair(&mut assembler, open, n, behind);
                        let start = Instant::now();
                        black_box(
                            doctor.diagnose(assembler.trace(&client).expect("held"), &assembler),
                        );
                        black_box(
                            doctor.diagnose(assembler.trace(&root).expect("held"), &assembler),
                        );
                        timed += start.elapsed();
                    }
                    timed
                })
            });
            assert_eq!(doctor.candidates() as u64, open);
        }
    }
    group.finish();
}

criterion_group!(benches, diagnose);
criterion_main!(benches);
