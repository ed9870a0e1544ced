//! The doctor on case files of what messaging instrumentations write (Kafka, celery;
//! tests/cases/messaging/: each file says what it records, from which code, and the findings
//! `lens check` must give), in both orders of completion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Instant;

use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_json;
use lens_watch::diagnose::{Doctor, DoctorConfig};
use serde_json::{Value, json};

/// (rule id, services) of every finding on these export requests, judged in this order.
fn findings(requests: &[Value]) -> Vec<Value> {
    let mut assembler = Assembler::new(Config::default());
    let now = Instant::now();
    for request in requests {
        let batch = decode_json(request.to_string().as_bytes()).unwrap();
        assert_eq!(batch.rejected, 0, "{request}");
        assembler.insert(batch.spans, now);
    }
    let mut doctor = Doctor::new(DoctorConfig::default());
    assembler
        .flush()
        .into_iter()
        .flat_map(|id| doctor.diagnose(assembler.trace(&id).unwrap(), &assembler))
        .map(|f| json!({"finding": f.rule.id(), "services": f.services}))
        .collect()
}

#[test]
fn every_messaging_case_gives_its_findings() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases/messaging");
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let case: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let requests = case["requests"].as_array().unwrap();
        let expect = case["expect"].as_array().unwrap();
        assert!(
            case["about"].is_string() && case["source"].is_string(),
            "{path:?}"
        );
        let mut reversed = requests.clone();
        reversed.reverse();
        for order in [requests.clone(), reversed] {
            assert_eq!(&findings(&order), expect, "{path:?}: {}", case["about"]);
        }
        cases += 1;
    }
    assert!(cases >= 11, "{cases} cases in {dir:?}");
}
