//! The doctor on one completing trace pair (a CLIENT span without a child, then the new root
//! its server started: one lost hop found) while 1,000 or 10,000 other childless clients of the
//! same request wait in its index. Matching goes through an index by request and start time,
//! so the two rows should be close: the time per pair does not grow with the open traces.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_json;
use lens_watch::diagnose::{Doctor, DoctorConfig, Rule};

/// One export of `service` with one span: `kind`, at `start_us` for `len_us` microseconds,
/// `POST /plan` (client: to `http://planner:8000/plan`).
fn export(service: &str, trace: u64, kind: u8, start_us: u64, len_us: u64) -> String {
    let t0 = 1_700_000_000_000_000_000u64;
    let url = if kind == 3 {
        r#"{"key":"url.full","value":{"stringValue":"http://planner:8000/plan"}}"#
    } else {
        r#"{"key":"url.path","value":{"stringValue":"/plan"}}"#
    };
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{service}"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"{trace:032x}","spanId":"{:016x}","name":"POST","kind":{kind},"startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[{{"key":"http.request.method","value":{{"stringValue":"POST"}}}},{url}]}}]}}]}}]}}"#,
        trace + 1,
        t0 + start_us * 1000,
        t0 + (start_us + len_us) * 1000
    )
}

fn held(open: u64) -> (Assembler, Doctor, [lens_watch::model::TraceId; 2]) {
    let mut assembler = Assembler::new(Config {
        max_traces: 100_000,
        ..Config::default()
    });
    let mut doctor = Doctor::new(DoctorConfig::default());
    let now = Instant::now();
    // `open` childless clients of the same request, 1 ms apart, 0.5 ms long.
    for n in 1..=open {
        let line = export("gateway", n, 3, n * 1000, 500);
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
    }
    let client = open + 1;
    let root = open + 2;
    // The pair: a client in the middle of the others' time range, and its server's new root.
    let middle = open / 2 * 1000 + 200;
    for line in [
        export("gateway", client, 3, middle, 50),
        export("planner", root, 2, middle + 10, 30),
    ] {
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
    }
    let ids = assembler.flush();
    for id in &ids[..ids.len() - 2] {
        assert!(doctor.diagnose(&assembler, *id).is_empty());
    }
    assert_eq!(doctor.candidates() as u64, open);
    (assembler, doctor, [ids[ids.len() - 2], ids[ids.len() - 1]])
}

fn diagnose(c: &mut Criterion) {
    let mut group = c.benchmark_group("doctor: one lost hop found");
    for open in [1_000u64, 10_000] {
        let (assembler, mut doctor, [client, root]) = held(open);
        // Checked before it is timed: the pair is found, and the index is as it was.
        assert!(doctor.diagnose(&assembler, client).is_empty());
        let found = doctor.diagnose(&assembler, root);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule, Rule::LostContext);
        assert_eq!(doctor.candidates() as u64, open);
        group.bench_function(format!("{open} open childless clients"), |b| {
            b.iter(|| {
                black_box(doctor.diagnose(&assembler, client));
                black_box(doctor.diagnose(&assembler, root))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, diagnose);
criterion_main!(benches);
