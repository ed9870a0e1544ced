//! `cargo xtask bench nats`: what lens-nats costs per message, against a local `nats-server` the
//! bench starts (lens-testkit's `nats` module; without the binary it says so and stops, or fails
//! with `LENS_NATS=require`).
//!
//! Fixture: one async-nats client on a current-thread tokio runtime (the publishing loop and the
//! client's connection task share one thread, so that thread's time is the client's whole cost;
//! it is timed by its CPU time, `CLOCK_THREAD_CPUTIME_ID`, the wall clock off Linux, so that
//! another process taking the CPU, or the server, does not count against an arm), a
//! 128-byte payload, spans sampled (a sampled parent) but for the unsampled arm, a batch span
//! processor into a discarding exporter, lens's propagator installed as the global one for the
//! by-hand arms.
//!
//! * Publish throughput, five arms alternated in rounds (the order from [`order`], a balanced
//!   design: each arm follows each other arm equally often; the exporter idle as each arm's
//!   loop starts): `bare`
//!   (async-nats `publish_with_headers` with a `traceparent` header of the same 55 bytes lens
//!   writes), `hand` (the least code that does it by hand, what the NeMo Lens page shows: a
//!   PRODUCER span, inject through the global propagator into a fresh `HeaderMap`, publish),
//!   `conv` (the same by hand with the span name and the six attributes lens records by default), `lens`
//!   (`TracedClient::publish`) and `lens, unsampled` (the same under an unsampled parent: the
//!   span not recorded, the context still injected). Each arm publishes [`PER_ROUND`] messages
//!   and flushes; the ratio `bare time / arm time` (the arm's throughput as a share of bare
//!   async-nats, the client thread being what bounds it) is taken per round, and its median and
//!   quartiles printed.
//! * Consume: the same five arms on the receiving side, each draining [`PER_ROUND`] messages
//!   published before its timed loop (carrying a sampled `traceparent`, an unsampled one for
//!   the unsampled arm) and already in the subscription's buffer (a fence message published
//!   after them has arrived: NATS keeps one publisher's order), with no span current in the loop: `bare` reads the payload, `hand`
//!   extracts the context, starts a CONSUMER span under it and makes it current while reading
//!   (`conv`: with lens's span name and attributes), `lens` takes each message from a
//!   `TracedSubscriber` and reads it inside `in_span`. Printed: ns per message and the ratio to
//!   bare (median and quartiles).
//! * Allocations per message (a counting global allocator, every thread): each arm of both
//!   sides over [`ALLOC_MESSAGES`] messages after as many unmeasured ones.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unsafe_code
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_nats::header::HeaderMap;
use bytes::Bytes;
use futures_util::StreamExt;
use lens_testkit::nats::NatsServer;
use opentelemetry::context::FutureExt as _;
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};

/// The system allocator, counting every allocation (a reallocation counts as one).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to `System` unchanged; the counter is an atomic, which neither
// allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Messages per arm per round, timed rounds, messages per allocation count.
const PER_ROUND: usize = 2_000;
const ROUNDS: usize = 300;
const ALLOC_MESSAGES: usize = 5_000;
const PAYLOAD: [u8; 128] = [b'x'; 128];
/// A `traceparent` of the length lens writes (55 bytes), for the bare arm and the consumers.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const UNSAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        black_box(batch);
        Ok(())
    }
}

/// The CPU time of this thread (`CLOCK_THREAD_CPUTIME_ID`), on Linux.
#[cfg(target_os = "linux")]
fn on_cpu() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(Duration::new(
        u64::try_from(t.tv_sec).ok()?,
        u32::try_from(t.tv_nsec).ok()?,
    ))
}

/// Elsewhere: none (the wall clock is used).
#[cfg(not(target_os = "linux"))]
fn on_cpu() -> Option<Duration> {
    None
}

/// A stopwatch of the thread's time on a CPU, else of the wall clock.
struct Stopwatch(Result<Duration, Instant>);

impl Stopwatch {
    fn start() -> Self {
        Stopwatch(on_cpu().ok_or_else(Instant::now))
    }

    fn elapsed(&self) -> Duration {
        match self.0 {
            Ok(cpu) => on_cpu().unwrap_or(cpu).saturating_sub(cpu),
            Err(wall) => wall.elapsed(),
        }
    }
}

/// A `HeaderMap` as an opentelemetry carrier, as a user writes it by hand.
struct Headers<'a>(&'a mut HeaderMap);

impl Injector for Headers<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key, value);
    }
}

struct ReadHeaders<'a>(&'a HeaderMap);

impl Extractor for ReadHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| k.as_ref()).collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arm {
    /// async-nats alone (the same header bytes, no span).
    Bare,
    /// By hand: a span named by a constant, no attributes, the propagator.
    Hand,
    /// By hand with the conventions lens records: the span named `send {subject}` /
    /// `process {subject}` and the same six attributes.
    Conventions,
    /// lens-nats.
    Lens,
    /// lens-nats under an unsampled parent (publishing) or from an unsampled message
    /// (consuming): a span that is not recorded, the context still injected or made current.
    Unsampled,
}

const ARMS: [Arm; 5] = [
    Arm::Bare,
    Arm::Hand,
    Arm::Conventions,
    Arm::Lens,
    Arm::Unsampled,
];

/// The bench's parent, its trace sampled or not.
fn parent(flags: TraceFlags) -> Context {
    Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        flags,
        true,
        TraceState::NONE,
    ))
}

/// The attributes lens-nats records on a `send` / `process` span of a core message.
fn conventions(operation: &'static str, subject: &str, port: u16) -> Vec<KeyValue> {
    vec![
        KeyValue::new("messaging.system", "nats"),
        KeyValue::new("messaging.operation.name", operation),
        KeyValue::new("messaging.operation.type", operation),
        KeyValue::new("server.address", "127.0.0.1"),
        KeyValue::new("server.port", i64::from(port)),
        KeyValue::new("messaging.destination.name", subject.to_owned()),
    ]
}

struct Bench {
    client: async_nats::Client,
    traced: lens_nats::TracedClient,
    consumer: lens_nats::Consumer,
    tracer: SdkTracer,
    /// Flushed before each timed loop: see [`Bench::idle_exporter`].
    provider: SdkTracerProvider,
    payload: Bytes,
    port: u16,
    /// The parent of the unsampled arm (built once: its cost is not the arm's).
    unsampled: Context,
}

impl Bench {
    async fn publish(&self, arm: Arm, subject: &'static str) {
        match arm {
            Arm::Bare => {
                let mut headers = HeaderMap::new();
                headers.insert("traceparent", TRACEPARENT);
                self.client
                    .publish_with_headers(subject, headers, self.payload.clone())
                    .await
                    .unwrap();
            }
            Arm::Hand | Arm::Conventions => {
                let builder = if arm == Arm::Hand {
                    self.tracer.span_builder(subject)
                } else {
                    self.tracer
                        .span_builder(format!("send {subject}"))
                        .with_attributes(conventions("send", subject, self.port))
                };
                let span = builder.with_kind(SpanKind::Producer).start(&self.tracer);
                let cx = Context::current_with_span(span);
                let mut headers = HeaderMap::new();
                global::get_text_map_propagator(|p| {
                    p.inject_context(&cx, &mut Headers(&mut headers));
                });
                self.client
                    .publish_with_headers(subject, headers, self.payload.clone())
                    .await
                    .unwrap();
                cx.span().end();
            }
            Arm::Lens => self
                .traced
                .publish(subject, self.payload.clone())
                .await
                .unwrap(),
            Arm::Unsampled => self
                .traced
                .publish(subject, self.payload.clone())
                .with_context(self.unsampled.clone())
                .await
                .unwrap(),
        }
    }

    /// Exports every span ended so far (untimed), so that an arm's loop starts with the
    /// exporting thread idle: each arm pays for exporting its own spans (the exporting thread
    /// shares the allocator and the cores with the client's), not for the arm's before it.
    fn idle_exporter(&self) {
        self.provider.force_flush().unwrap();
    }

    /// Publishes `n` messages with `arm`, then flushes (they reached the server).
    async fn publish_many(&self, arm: Arm, n: usize) -> Duration {
        self.idle_exporter();
        let started = Stopwatch::start();
        for _ in 0..n {
            self.publish(arm, "bench.publish").await;
        }
        self.client.flush().await.unwrap();
        started.elapsed()
    }

    /// Publishes `n` messages with a `traceparent` to `subject` (untimed): sampled, but for
    /// the unsampled arm. Returns once they are all in the subscription's buffer: the fence
    /// published after them has arrived.
    async fn feed(&self, subject: &'static str, n: usize, fence: &mut async_nats::Subscriber) {
        let traceparent = if subject == subject_of(Arm::Unsampled) {
            UNSAMPLED
        } else {
            TRACEPARENT
        };
        for _ in 0..n {
            let mut headers = HeaderMap::new();
            headers.insert("traceparent", traceparent);
            self.client
                .publish_with_headers(subject, headers, self.payload.clone())
                .await
                .unwrap();
        }
        self.client
            .publish(FENCE, Bytes::from_static(b"fence"))
            .await
            .unwrap();
        self.client.flush().await.unwrap();
        fence.next().await.unwrap();
    }

    /// Drains `n` messages with `arm` from the subscribers of `subject`.
    async fn consume(&self, arm: Arm, subscribers: &mut Subscribers, n: usize) -> Duration {
        // A consumer loop with no span of its own: lens's `process` span then has no link to
        // add (the by-hand arms add none either).
        let _no_span = Context::new().attach();
        self.idle_exporter();
        let started = Stopwatch::start();
        for _ in 0..n {
            match arm {
                Arm::Bare => {
                    let message = subscribers.bare.next().await.unwrap();
                    black_box(message.payload.len());
                }
                Arm::Hand | Arm::Conventions => {
                    let message = if arm == Arm::Hand {
                        subscribers.hand.next().await.unwrap()
                    } else {
                        subscribers.conventions.next().await.unwrap()
                    };
                    let parent = match &message.headers {
                        Some(h) => global::get_text_map_propagator(|p| p.extract(&ReadHeaders(h))),
                        None => Context::new(),
                    };
                    let builder = if arm == Arm::Hand {
                        self.tracer.span_builder(message.subject.to_string())
                    } else {
                        self.tracer
                            .span_builder(format!("process {}", message.subject))
                            .with_attributes(conventions("process", &message.subject, self.port))
                    };
                    let span = builder
                        .with_kind(SpanKind::Consumer)
                        .start_with_context(&self.tracer, &parent);
                    let cx = parent.with_span(span);
                    {
                        let _current = cx.clone().attach();
                        black_box(message.payload.len());
                    }
                    cx.span().end();
                }
                Arm::Lens | Arm::Unsampled => {
                    let traced = if arm == Arm::Lens {
                        &mut subscribers.lens
                    } else {
                        &mut subscribers.unsampled
                    };
                    let message = traced.next().await.unwrap();
                    message
                        .in_span(async { black_box(message.payload.len()) })
                        .await;
                }
            }
        }
        started.elapsed()
    }
}

struct Subscribers {
    bare: async_nats::Subscriber,
    hand: async_nats::Subscriber,
    conventions: async_nats::Subscriber,
    lens: lens_nats::TracedSubscriber,
    unsampled: lens_nats::TracedSubscriber,
    fence: async_nats::Subscriber,
}

/// Published after each batch fed to a subscriber; its arrival means the batch arrived.
const FENCE: &str = "bench.fence";

fn subject_of(arm: Arm) -> &'static str {
    match arm {
        Arm::Bare => "bench.in.bare",
        Arm::Hand => "bench.in.hand",
        Arm::Conventions => "bench.in.conventions",
        Arm::Lens => "bench.in.lens",
        Arm::Unsampled => "bench.in.unsampled",
    }
}

/// The order of the arms (their places in [`ARMS`]) in round `round`: a Williams design, ten
/// orders repeated, in which each arm runs right after each other arm equally often (twice in
/// ten rounds) and in each place equally often. An arm's time depends on the arm before it (the
/// allocator's and the caches' state it leaves: the same code measured 92% of conv's
/// throughput right after conv, 97% right before it), so a fixed rotation, where an arm mostly
/// follows the same one, would charge one arm for its neighbour.
fn order(round: usize) -> [usize; 5] {
    const FIRST: [usize; 5] = [0, 1, 4, 2, 3];
    let shift = round % 5;
    let mut order = FIRST.map(|i| (i + shift) % 5);
    if (round / 5) % 2 == 1 {
        order.reverse();
    }
    order
}

/// (median, first quartile, third quartile) of `values`.
fn quartiles(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

fn main() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    lens_core::install().unwrap();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Discard).build())
        .build();
    let tracer = provider.tracer("bench");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Spans sampled: a sampled remote parent, current for the whole run.
    let _parent = parent(TraceFlags::SAMPLED).attach();
    runtime.block_on(async {
        let client = async_nats::connect(server.url()).await.unwrap();
        let bench = Bench {
            traced: lens_nats::Producer::new()
                .with_tracer(tracer.clone())
                .client(client.clone()),
            consumer: lens_nats::Consumer::new().with_tracer(tracer.clone()),
            client,
            tracer: tracer.clone(),
            provider: provider.clone(),
            payload: Bytes::from_static(&PAYLOAD),
            port: server.port(),
            unsampled: parent(TraceFlags::NOT_SAMPLED),
        };
        let mut subscribers = Subscribers {
            bare: bench.client.subscribe(subject_of(Arm::Bare)).await.unwrap(),
            hand: bench.client.subscribe(subject_of(Arm::Hand)).await.unwrap(),
            conventions: bench
                .client
                .subscribe(subject_of(Arm::Conventions))
                .await
                .unwrap(),
            lens: bench.consumer.subscriber(
                &bench.client,
                bench.client.subscribe(subject_of(Arm::Lens)).await.unwrap(),
            ),
            fence: bench.client.subscribe(FENCE).await.unwrap(),
            unsampled: bench.consumer.subscriber(
                &bench.client,
                bench
                    .client
                    .subscribe(subject_of(Arm::Unsampled))
                    .await
                    .unwrap(),
            ),
        };
        bench.client.flush().await.unwrap();

        println!(
            "lens-nats bench: nats-server on 127.0.0.1:{}, {}-byte payload, {PER_ROUND} messages per arm \
             per round, {ROUNDS} rounds, arms alternated",
            server.port(),
            PAYLOAD.len()
        );

        // Warm-up: every path once, unmeasured.
        for arm in ARMS {
            bench.publish_many(arm, PER_ROUND).await;
            bench.feed(subject_of(arm), PER_ROUND, &mut subscribers.fence).await;
            bench.consume(arm, &mut subscribers, PER_ROUND).await;
        }

        // Publish throughput.
        let mut times: [Vec<Duration>; 5] = Default::default();
        for round in 0..ROUNDS {
            for i in order(round) {
                times[i].push(bench.publish_many(ARMS[i], PER_ROUND).await);
            }
        }
        println!("\npublish ({PER_ROUND} messages and a flush per arm per round):");
        report(&times);
        // The target's own ratio, per round: conv's time over lens's (lens's throughput as a
        // share of conv's).
        let (conv, lens) = (place(Arm::Conventions), place(Arm::Lens));
        let (m, q1, q3) = per_round(&times[conv], &times[lens]);
        println!(
            "  lens vs conv: throughput {:.1}% of conv's (q1 {:.1}%, q3 {:.1}%)",
            m * 100.0,
            q1 * 100.0,
            q3 * 100.0
        );

        // Consume: the messages are published before each arm's timed loop.
        let mut times: [Vec<Duration>; 5] = Default::default();
        for round in 0..ROUNDS {
            for i in order(round) {
                bench
                    .feed(subject_of(ARMS[i]), PER_ROUND, &mut subscribers.fence)
                    .await;
                times[i].push(bench.consume(ARMS[i], &mut subscribers, PER_ROUND).await);
            }
        }
        println!("\nconsume ({PER_ROUND} messages drained per arm per round):");
        report(&times);
        // Lens's time over conv's, per round: its cost per message as a share of conv's.
        let (m, q1, q3) = per_round(&times[lens], &times[conv]);
        println!(
            "  lens vs conv: cost {:.1}% of conv's (q1 {:.1}%, q3 {:.1}%)",
            m * 100.0,
            q1 * 100.0,
            q3 * 100.0
        );

        // Allocations per message, every thread counted.
        println!("\nallocations per message ({ALLOC_MESSAGES} messages after as many unmeasured):");
        for arm in ARMS {
            bench.publish_many(arm, ALLOC_MESSAGES).await;
            let before = allocations();
            bench.publish_many(arm, ALLOC_MESSAGES).await;
            let published = (allocations() - before) as f64 / ALLOC_MESSAGES as f64;
            bench
                .feed(subject_of(arm), 2 * ALLOC_MESSAGES, &mut subscribers.fence)
                .await;
            bench.consume(arm, &mut subscribers, ALLOC_MESSAGES).await;
            let before = allocations();
            bench.consume(arm, &mut subscribers, ALLOC_MESSAGES).await;
            let consumed = (allocations() - before) as f64 / ALLOC_MESSAGES as f64;
            println!("  {:<15} published {published:>6.1}   consumed {consumed:>6.1}", name(arm));
        }
    });
    drop(provider);
}

/// The place of `arm` in [`ARMS`] (and in the times).
fn place(arm: Arm) -> usize {
    ARMS.iter().position(|a| *a == arm).unwrap()
}

/// (median, first quartile, third quartile) of `a / b`, round by round.
fn per_round(a: &[Duration], b: &[Duration]) -> (f64, f64, f64) {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
        .collect();
    quartiles(&mut ratios)
}

fn name(arm: Arm) -> &'static str {
    match arm {
        Arm::Bare => "bare",
        Arm::Hand => "hand",
        Arm::Conventions => "conv",
        Arm::Lens => "lens",
        Arm::Unsampled => "lens, unsampled",
    }
}

/// Per arm: ns per message (median, quartiles) and the ratio to bare per round.
fn report(times: &[Vec<Duration>; 5]) {
    let per_message = |d: &Duration| d.as_nanos() as f64 / PER_ROUND as f64;
    for (i, arm) in ARMS.iter().enumerate() {
        let mut ns: Vec<f64> = times[i].iter().map(per_message).collect();
        let (m, q1, q3) = quartiles(&mut ns);
        let mut line = format!(
            "  {:<15} {m:>8.0} ns/message (q1 {q1:.0}, q3 {q3:.0}), {:.0} messages/s",
            name(*arm),
            1e9 / m
        );
        if *arm != Arm::Bare {
            // bare time / arm time: the arm's throughput as a share of bare async-nats.
            let mut share: Vec<f64> = times[0]
                .iter()
                .zip(&times[i])
                .map(|(b, a)| b.as_secs_f64() / a.as_secs_f64())
                .collect();
            let (m, q1, q3) = quartiles(&mut share);
            let mut added: Vec<f64> = times[0]
                .iter()
                .zip(&times[i])
                .map(|(b, a)| per_message(a) - per_message(b))
                .collect();
            let (a, aq1, aq3) = quartiles(&mut added);
            line.push_str(&format!(
                "; throughput vs bare {:.1}% (q1 {:.1}%, q3 {:.1}%), +{a:.0} ns/message (q1 {aq1:.0}, q3 {aq3:.0})",
                m * 100.0,
                q1 * 100.0,
                q3 * 100.0
            ));
        }
        println!("{line}");
    }
}
