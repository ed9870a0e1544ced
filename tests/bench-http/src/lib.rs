//! Bench-only crate (not published): the HTTP comparison benches of lens, kept apart from
//! lens-axum because the comparison dependency axum-tracing-opentelemetry needs Rust 1.91 while
//! the workspace MSRV is 1.88.
//!
//! ```text
//! cargo xtask bench http                              # both suites below
//! cargo bench -p lens-bench-http --bench http         # loopback throughput, A/B alternated
//! cargo bench -p lens-bench-http --bench per_request  # per-request work, no network
//! cargo run --release -p lens-bench-http --example per_request -- axum_lens_layer 20000
//! cargo run --release -p lens-bench-http --example loopback -- lens_layer 50000
//! ```
//!
//! * `benches/http.rs`: a hello-world axum handler on 127.0.0.1 under a load generator in the same
//!   process; bare axum, axum + `lens_axum::ServerLayer`, axum + axum-tracing-opentelemetry; and
//!   reqwest through reqwest-middleware alone or with `lens_reqwest::ClientMiddleware` (against a
//!   bare server). The variants, and the rules that keep them comparable, are in
//!   `benches/support/loopback.rs`.
//! * `benches/per_request.rs`: the same layers driven directly (tower `Service::call`, the
//!   middleware chain with a terminal middleware that answers at once), without sockets.
//! * `examples/per_request.rs`: the same loops as a plain binary, for
//!   `valgrind --tool=callgrind` instruction counts.
//! * `examples/loopback.rs`: one loopback variant of `benches/http.rs` on its own, for
//!   whole-process profiles (`perf`, or callgrind's instruction count of every thread: run it
//!   with two request counts and divide the difference).
#![forbid(unsafe_code)]
