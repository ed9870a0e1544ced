//! What marking a stream costs per frame: nothing allocated once the first chunk is marked,
//! however many frames follow. Counted on this thread only.
#![allow(clippy::unwrap_used, clippy::expect_used, unsafe_code)]

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use lens_span::{AtLastFrame, TracedBody};
use support::frames::{Frames, Spans, poll};

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

fn record() {
    if ON.try_with(Cell::get).unwrap_or(false) {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every method forwards to `System` unchanged; the bookkeeping touches only `Cell`s in
// const-initialised thread-locals (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record();
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    COUNT.with(|c| c.set(0));
    ON.with(|on| on.set(true));
    f();
    ON.with(|on| on.set(false));
    COUNT.with(Cell::get)
}

#[test]
fn frames_after_the_first_chunk_allocate_nothing() {
    let spans = Spans::new();
    let mut body = TracedBody::new(Frames::data(1002), Some(spans.server()), AtLastFrame);
    // The first two frames: the first chunk is marked (its event and attributes).
    assert!(poll(&mut body).is_some());
    assert!(poll(&mut body).is_some());
    let n = allocations(|| {
        for _ in 0..1000 {
            assert!(poll(&mut body).is_some());
        }
    });
    assert_eq!(n, 0, "allocations over 1000 frames");
}

#[test]
fn the_first_frame_allocates_nothing() {
    let spans = Spans::new();
    let mut body = TracedBody::new(Frames::data(3), Some(spans.client()), AtLastFrame)
        .with_head(std::time::SystemTime::now());
    let n = allocations(|| {
        assert!(poll(&mut body).is_some());
    });
    assert_eq!(
        n, 0,
        "a one-frame response pays no allocation for its marks"
    );
}
