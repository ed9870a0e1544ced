//! [`ThreadGroup`]: an in-process communicator, one rank per thread, for tests and examples.

use std::borrow::Cow;
use std::sync::mpsc::{Receiver, Sender, channel};

use crate::collective::{Collective, check_root};
use crate::error::DistError;

const BACKEND: &str = "thread group";

/// Builds in-process communicators: [`ThreadGroup::new`]`(n)` returns the `n` ranks of one group,
/// each a [`ThreadComm`] to move to its own thread.
///
/// Broadcasts go over one channel per (source, destination) pair, so they arrive in the order
/// each root sent them, as on a real collective engine. A rank whose peer has gone (its
/// [`ThreadComm`] dropped) gets [`DistError::Collective`] instead of waiting for ever.
///
/// ```
/// use lens_dist::{Collective, ThreadGroup};
///
/// let comms = ThreadGroup::new(3);
/// let got: Vec<i64> = std::thread::scope(|s| {
///     let handles: Vec<_> = comms
///         .into_iter()
///         .map(|comm| {
///             s.spawn(move || {
///                 let mut value = if comm.rank() == 2 { 42 } else { 0 };
///                 comm.broadcast_i64(&mut value, 2).map(|()| value)
///             })
///         })
///         .collect();
///     handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
/// });
/// assert_eq!(got, [42, 42, 42]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ThreadGroup;

impl ThreadGroup {
    /// The `size` ranks of a new group, in rank order (empty for 0).
    #[allow(clippy::new_ret_no_self)] // a group is its ranks
    pub fn new(size: usize) -> Vec<ThreadComm> {
        // to[src][dst] sends into from[dst][src].
        let mut to: Vec<Vec<Sender<Message>>> =
            (0..size).map(|_| Vec::with_capacity(size)).collect();
        let mut from: Vec<Vec<Option<Receiver<Message>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        for (src, senders) in to.iter_mut().enumerate() {
            for receivers in from.iter_mut() {
                let (tx, rx) = channel();
                senders.push(tx);
                receivers[src] = Some(rx);
            }
        }
        to.into_iter()
            .zip(from)
            .enumerate()
            .map(|(rank, (to, from))| ThreadComm {
                rank,
                to,
                from: from.into_iter().flatten().collect(),
            })
            .collect()
    }
}

#[derive(Debug)]
enum Message {
    I64(i64),
    Bytes(Vec<u8>),
}

impl Message {
    fn kind(&self) -> &'static str {
        match self {
            Message::I64(_) => "broadcast_i64",
            Message::Bytes(_) => "broadcast_bytes",
        }
    }
}

/// One rank of a [`ThreadGroup`]: a [`Collective`] for the thread that owns it.
///
/// It is `Send` but not `Sync`: each rank belongs to one thread at a time.
#[derive(Debug)]
pub struct ThreadComm {
    rank: usize,
    /// `to[dst]`: messages from this rank to `dst`.
    to: Vec<Sender<Message>>,
    /// `from[src]`: messages from `src` to this rank.
    from: Vec<Receiver<Message>>,
}

impl ThreadComm {
    fn send_all(
        &self,
        message: impl Fn() -> Message,
        operation: &'static str,
    ) -> Result<(), DistError> {
        for (dst, tx) in self.to.iter().enumerate() {
            if dst != self.rank && tx.send(message()).is_err() {
                return Err(gone(operation, dst));
            }
        }
        Ok(())
    }

    fn receive(&self, root: usize, operation: &'static str) -> Result<Message, DistError> {
        let rx = self.from.get(root).ok_or_else(|| gone(operation, root))?;
        let message = rx.recv().map_err(|_| gone(operation, root))?;
        if message.kind() == operation {
            Ok(message)
        } else {
            Err(DistError::Collective {
                backend: BACKEND,
                operation,
                message: Cow::Owned(format!(
                    "rank {root} called {} where rank {} called {operation}",
                    message.kind(),
                    self.rank
                )),
            })
        }
    }
}

fn gone(operation: &'static str, peer: usize) -> DistError {
    DistError::Collective {
        backend: BACKEND,
        operation,
        message: Cow::Owned(format!("rank {peer} has left the group")),
    }
}

impl Collective for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.to.len()
    }

    fn broadcast_i64(&self, value: &mut i64, root: usize) -> Result<(), DistError> {
        const OP: &str = "broadcast_i64";
        check_root(self, root, "root rank")?;
        if root == self.rank {
            let v = *value;
            return self.send_all(|| Message::I64(v), OP);
        }
        if let Message::I64(v) = self.receive(root, OP)? {
            *value = v;
        }
        Ok(())
    }

    fn broadcast_bytes(&self, buf: &mut [u8], root: usize) -> Result<(), DistError> {
        const OP: &str = "broadcast_bytes";
        check_root(self, root, "root rank")?;
        if root == self.rank {
            return self.send_all(|| Message::Bytes(buf.to_vec()), OP);
        }
        if let Message::Bytes(bytes) = self.receive(root, OP)? {
            if bytes.len() != buf.len() {
                return Err(DistError::Collective {
                    backend: BACKEND,
                    operation: OP,
                    message: Cow::Owned(format!(
                        "rank {root} sent {} bytes, rank {} expected {}",
                        bytes.len(),
                        self.rank,
                        buf.len()
                    )),
                });
            }
            buf.copy_from_slice(&bytes);
        }
        Ok(())
    }
}
