//! The table of request durations per hop that `lens demo` prints after the waterfall, read
//! from the histograms the adapters recorded (lens-reqwest and lens-tonic's client on the
//! calling side, lens-axum and lens-tonic's server on the called side; for the queue hop,
//! lens-nats's send and process durations), not timed here.

use std::time::Duration;

use opentelemetry::Key;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};

use super::hop::Hop;

/// The calling side's duration histograms, the first recorded wins: HTTP, then gRPC's current
/// conventions, then the older ones (`OTEL_SEMCONV_STABILITY_OPT_IN` decides which exist).
const CLIENT: [&str; 3] = [
    "http.client.request.duration",
    "rpc.client.call.duration",
    "rpc.client.duration",
];
/// The called side's.
const SERVER: [&str; 3] = [
    "http.server.request.duration",
    "rpc.server.call.duration",
    "rpc.server.duration",
];

/// The queue hop's: the trainer's `send` operations, and the worker's processing.
const SEND: [&str; 1] = ["messaging.client.operation.duration"];
const PROCESS: [&str; 1] = ["messaging.process.duration"];

/// One histogram, all its series (status codes, ...) together.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Recorded {
    /// The instrument and its unit, `http.client.request.duration (s)`.
    pub(crate) instrument: String,
    /// Measurements.
    pub(crate) count: u64,
    /// Their sum, in seconds.
    pub(crate) sum: f64,
    /// The greatest, in seconds.
    pub(crate) max: f64,
}

impl Recorded {
    fn mean(&self) -> Duration {
        seconds(self.sum / self.count.max(1) as f64)
    }
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// The histogram named one of `names` (the first recorded) of `service`, in seconds; `None`
/// when the service recorded none of them (or in a unit other than `s` and `ms`).
fn recorded(metrics: &[ResourceMetrics], service: &str, names: &[&str]) -> Option<Recorded> {
    let key = Key::from_static_str("service.name");
    let resource = metrics.iter().find(|rm| {
        rm.resource()
            .get(&key)
            .is_some_and(|v| v.as_str() == service)
    })?;
    let all: Vec<_> = resource
        .scope_metrics()
        .flat_map(|scope| scope.metrics())
        .collect();
    names.iter().find_map(|name| {
        let metric = all.iter().find(|m| m.name() == *name)?;
        let scale = match metric.unit() {
            "s" => 1.0,
            "ms" => 1e-3,
            _ => return None,
        };
        let (mut count, mut sum, mut max) = (0, 0.0, 0.0_f64);
        let mut add = |n: u64, s: f64, m: Option<f64>| {
            count += n;
            sum += s * scale;
            max = max.max(m.unwrap_or(0.0) * scale);
        };
        match metric.data() {
            AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                for p in h.data_points() {
                    add(p.count(), p.sum(), p.max());
                }
            }
            AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                for p in h.data_points() {
                    add(p.count(), p.sum() as f64, p.max().map(|m| m as f64));
                }
            }
            _ => return None,
        }
        Some(Recorded {
            instrument: format!("{name} ({})", metric.unit()),
            count,
            sum,
            max,
        })
    })
}

/// One hop: what its client and its server recorded.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    /// The hop.
    pub(crate) hop: Hop,
    /// The calling service's duration histogram.
    pub(crate) client: Option<Recorded>,
    /// The called service's.
    pub(crate) server: Option<Recorded>,
}

/// A row for each hop of the demo that records request durations on both sides (the queue
/// hop only when it ran: with `--nats`).
pub(crate) fn rows(metrics: &[ResourceMetrics]) -> Vec<Row> {
    Hop::ALL
        .iter()
        .filter_map(|hop| {
            let (from, to) = hop.services();
            let (client, server) = if hop.needs_nats() {
                (&SEND[..], &PROCESS[..])
            } else {
                (&CLIENT[..], &SERVER[..])
            };
            let row = Row {
                hop: *hop,
                client: recorded(metrics, from, client),
                server: recorded(metrics, to, server),
            };
            let ran = !hop.needs_nats() || row.client.is_some() || row.server.is_some();
            ran.then_some(row)
        })
        .collect()
}

/// The table, one line a hop (client: the caller's histogram, server: the called service's),
/// and a line naming the histograms it was read from:
///
/// ```text
/// request durations   requests  client mean  client max  server mean  server max
/// lens-demo->gateway         1      14.0 ms     14.0 ms      13.3 ms     13.3 ms
/// ```
pub(crate) fn table(rows: &[Row], out: &mut String) {
    let cell = |r: &Option<Recorded>, max: bool| match r {
        Some(r) if r.count > 0 => {
            lens_watch::render::format_duration(if max { seconds(r.max) } else { r.mean() })
        }
        _ => "-".to_owned(),
    };
    let lines: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let count = |r: &Option<Recorded>| r.as_ref().map_or(0, |r| r.count);
            let (c, s) = (count(&row.client), count(&row.server));
            let requests = if c == s {
                c.to_string()
            } else {
                format!("{c}/{s}")
            };
            [
                row.hop.name(),
                requests,
                cell(&row.client, false),
                cell(&row.client, true),
                cell(&row.server, false),
                cell(&row.server, true),
            ]
        })
        .collect();
    let header = [
        "request durations",
        "requests",
        "client mean",
        "client max",
        "server mean",
        "server max",
    ];
    let width = |i: usize| {
        lines
            .iter()
            .map(|l| l[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let mut line = |cells: &[&str]| {
        let mut text = format!("{:<w$}", cells[0], w = widths[0]);
        for (i, c) in cells.iter().enumerate().skip(1) {
            text.push_str(&format!("  {c:>w$}", w = widths[i]));
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&header);
    for l in &lines {
        line(&l.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let mut instruments: Vec<&str> = rows
        .iter()
        .flat_map(|r| [&r.client, &r.server])
        .filter_map(|r| r.as_ref().map(|r| r.instrument.as_str()))
        .collect();
    instruments.sort_unstable();
    instruments.dedup();
    out.push_str(&format!("(from {})\n", instruments.join(", ")));
}
