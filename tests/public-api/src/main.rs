//! `lens-public-api JSON...`: prints the public API of each crate whose rustdoc JSON is given
//! (`cargo rustdoc -p CRATE --lib -- -Z unstable-options --output-format json`), one sorted
//! line per item. `cargo xtask public-api` runs it for every published crate and compares the
//! listings with docs/public-api/ (`--bless` writes them).
#![forbid(unsafe_code)]

mod render;

use std::process::ExitCode;

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: lens-public-api RUSTDOC-JSON...");
        return ExitCode::from(2);
    }
    for path in paths {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("cannot read {path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let json: serde_json::Value = match serde_json::from_str(&text) {
            Ok(json) => json,
            Err(e) => {
                eprintln!("{path} is not JSON: {e}");
                return ExitCode::FAILURE;
            }
        };
        match render::listing(&json) {
            Ok(lines) => {
                for line in lines {
                    println!("{line}");
                }
            }
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
