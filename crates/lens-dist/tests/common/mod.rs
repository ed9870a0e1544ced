//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::cell::RefCell;

use lens_dist::{Collective, DistError, ThreadComm, ThreadGroup};

/// Runs `f(comm)` on `size` threads, one rank each; the results in rank order.
pub fn run_ranks<R, F>(size: usize, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(ThreadComm) -> R + Sync,
{
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = ThreadGroup::new(size)
            .into_iter()
            .map(|comm| s.spawn(move || f(comm)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rank thread panicked"))
            .collect()
    })
}

/// One collective call as a rank saw it after the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    I64 { root: usize, value: i64 },
    Bytes { root: usize, bytes: Vec<u8> },
}

/// A [`Collective`] that records every call (the wire, as this rank saw it).
pub struct Recording<C> {
    pub inner: C,
    pub calls: RefCell<Vec<Call>>,
}

impl<C> Recording<C> {
    pub fn new(inner: C) -> Self {
        Recording {
            inner,
            calls: RefCell::new(Vec::new()),
        }
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.borrow().clone()
    }
}

impl<C: Collective> Collective for Recording<C> {
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    fn size(&self) -> usize {
        self.inner.size()
    }

    fn broadcast_i64(&self, value: &mut i64, root: usize) -> Result<(), DistError> {
        self.inner.broadcast_i64(value, root)?;
        self.calls.borrow_mut().push(Call::I64 {
            root,
            value: *value,
        });
        Ok(())
    }

    fn broadcast_bytes(&self, buf: &mut [u8], root: usize) -> Result<(), DistError> {
        self.inner.broadcast_bytes(buf, root)?;
        self.calls.borrow_mut().push(Call::Bytes {
            root,
            bytes: buf.to_vec(),
        });
        Ok(())
    }
}
