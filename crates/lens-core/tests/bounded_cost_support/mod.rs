//! A counting global allocator for the `bounded_cost_*` tests: per thread, the bytes allocated
//! and the peak of live bytes while a closure runs.
//!
//! Each test crate that declares `mod bounded_cost_support;` gets this allocator as its global
//! allocator. Counts are per thread, so tests running in parallel do not disturb each other.
#![allow(unsafe_code)]
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// What one measured closure allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Allocated {
    /// Number of allocations (a growing `realloc` counts as one).
    pub(crate) count: usize,
    /// Bytes requested in total (for a `realloc`, the new size).
    pub(crate) total: usize,
    /// Most bytes live at once, counted from the start of the closure.
    pub(crate) peak: usize,
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
    static TOTAL: Cell<usize> = const { Cell::new(0) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn record(grow: isize, requested: usize) {
    // `try_with`: never touch a thread-local that is being torn down.
    let on = ON.try_with(Cell::get).unwrap_or(false);
    if !on {
        return;
    }
    let _ = COUNT.try_with(|c| c.set(c.get() + usize::from(requested > 0)));
    let _ = TOTAL.try_with(|t| t.set(t.get() + requested));
    let _ = LIVE.try_with(|live| {
        let now = live.get() + grow;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

/// The system allocator, counting.
pub(crate) struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the bookkeeping only touches `Cell`s in const-initialised thread-locals (no
// allocation, no destructor), so it cannot re-enter the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size() as isize, layout.size());
        // SAFETY: forwarded unchanged (see the impl's comment).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size() as isize, layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record(-(layout.size() as isize), 0);
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size as isize - layout.size() as isize, new_size);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns what it allocated on this thread; its result is dropped inside the
/// measurement (so `peak` includes what `f` returned).
pub(crate) fn measure<R>(f: impl FnOnce() -> R) -> Allocated {
    COUNT.with(|c| c.set(0));
    TOTAL.with(|t| t.set(0));
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    ON.with(|on| on.set(true));
    let result = f();
    drop(result);
    ON.with(|on| on.set(false));
    Allocated {
        count: COUNT.with(Cell::get),
        total: TOTAL.with(Cell::get),
        peak: usize::try_from(PEAK.with(Cell::get)).unwrap_or(0),
    }
}

/// `n` bytes of `pattern` repeated (cut at a pattern boundary, so the result may be shorter).
pub(crate) fn repeat_to(pattern: &str, n: usize) -> String {
    pattern.repeat(n / pattern.len())
}
