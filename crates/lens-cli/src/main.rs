//! `lens`: command-line tools for W3C Trace Context and W3C Baggage.
//!
//! * `lens inspect VALUE...` (or `lens inspect -` for standard input): decode a traceparent,
//!   tracestate or baggage value (or a `name: value` header line) and say which rule of docs/propagation-rules.md
//!   rejects anything invalid; `--json` for one JSON object per value.
//! * `lens demo`: one request through HTTP, gRPC, a remote call and pipeline ranks, printed
//!   as one trace (a waterfall; `--json`, `--html FILE`, `--requests N`, `--otlp URL`).
//! * `lens watch`: receive OTLP/gRPC and OTLP/HTTP from every service and show each trace as
//!   it completes (waterfall or `--json`; `--save FILE`; a live page on the HTTP port).
//! * `lens check FILE...`: the traces of OTLP/JSON lines files (as `lens watch --save` and
//!   the Collector's file exporter write them), printed as `lens watch` prints them.
//! * `lens probe URL`: one request with a recognisable context, and the route it took, hop by
//!   hop, with what of its context survived each hop.
//! * `lens w3c-service`: the service under test of the W3C Trace Context test suite.
//! * `lens completions SHELL`: a completion script for the shell.
//!
//! Exit status: 0 success (valid), 1 failure (invalid), 2 usage error.
#![forbid(unsafe_code)]

use std::process::ExitCode;

mod check;
mod cli;
mod demo;
mod files;
mod flags;
mod hops;
mod inspect;
mod probe;
mod runtime;
mod usage;
mod w3c_service;
mod watch;

fn main() -> ExitCode {
    cli::main()
}
