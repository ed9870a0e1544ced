//! What `lens probe` prints when its requests are done: the route of one request, or the routes
//! of many tallied hop by hop; and the exit status they give.

use std::process::ExitCode;

use lens_watch::probe::{Bleed, Route, Tally};

use crate::usage::USAGE_ERROR;

use super::args::Args;

/// The report of one request: its route.
pub(super) fn report_one(args: &Args, route: &Route, endpoint: &str) -> ExitCode {
    let sent = &route.sent;
    let mut out = String::new();
    if args.json.json {
        out = route.json().to_string();
        out.push('\n');
    } else {
        route.text(&mut out);
    }
    if let Err(code) = crate::flags::print(&out) {
        return code;
    }
    if route.saw_nothing() && route.sampling.is_none() {
        eprintln!(
            "lens probe: no service exported a span of trace {} within {} s: point the services' \
OTLP exporters at it ({endpoint}), or wait longer (--wait)",
            sent.trace_id,
            args.wait.as_secs_f64(),
        );
        return ExitCode::from(USAGE_ERROR);
    }
    let broken: Vec<&str> = route.broken(&args.allow).collect();
    if broken.is_empty() && route.sampling.is_some() {
        eprintln!("lens probe: the unsampled request stayed unsampled");
        ExitCode::SUCCESS
    } else if broken.is_empty() {
        eprintln!("lens probe: the context survived every hop seen");
        ExitCode::SUCCESS
    } else {
        eprintln!("lens probe: broken: {}", broken.join(", "));
        ExitCode::FAILURE
    }
}

/// The report of many requests: their routes tallied hop by hop.
pub(super) fn report_many(
    args: &Args,
    routes: &[Route],
    bleeds: &[Bleed],
    endpoint: &str,
) -> ExitCode {
    let tally = Tally::new(routes, bleeds, &args.allow);
    let mut out = String::new();
    if args.json.json {
        let mut json = tally.json();
        json["concurrency"] = args.concurrency.into();
        json["routes"] = routes.iter().map(Route::json).collect();
        out = json.to_string();
        out.push('\n');
    } else {
        tally.text(&mut out);
    }
    if let Err(code) = crate::flags::print(&out) {
        return code;
    }
    if tally.unseen == tally.requests && !args.unsampled {
        eprintln!(
            "lens probe: no service exported a span of any of the {} requests within {} s: point \
the services' OTLP exporters at it ({endpoint}), or wait longer (--wait)",
            tally.requests,
            args.wait.as_secs_f64(),
        );
        return ExitCode::from(USAGE_ERROR);
    }
    if tally.lost == 0 {
        eprintln!(
            "lens probe: the context survived every hop seen, in all {} requests",
            tally.requests
        );
        ExitCode::SUCCESS
    } else {
        let mut rules: Vec<&str> = tally
            .hops
            .iter()
            .flat_map(|h| h.rules.iter().map(|(r, _)| *r))
            .collect();
        rules.dedup();
        eprintln!(
            "lens probe: broken in {} of {} requests: {}",
            tally.lost,
            tally.requests,
            rules.join(", ")
        );
        ExitCode::FAILURE
    }
}
