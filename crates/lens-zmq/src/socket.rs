//! The `zmq` crate (libzmq) integration (feature `zmq`): a traced `send_multipart` and
//! `recv_multipart` for any socket type: PUSH/PULL, PUB/SUB, DEALER/ROUTER, PAIR.

use crate::consumer::{Consumer, Processing};
use crate::producer::Producer;

impl Producer {
    /// Sends `frames` on `socket` as one multipart message to `destination`, in a `send` span,
    /// the context frame appended as the last frame. A ROUTER socket's routing id and a PUB
    /// socket's topic stay the first frame, as the caller put them.
    ///
    /// ```
    /// let ctx = zmq::Context::new();
    /// let pull = ctx.socket(zmq::PULL)?;
    /// pull.bind("inproc://doc-send")?;
    /// let push = ctx.socket(zmq::PUSH)?;
    /// push.connect("inproc://doc-send")?;
    ///
    /// let (producer, consumer) = (lens_zmq::Producer::new(), lens_zmq::Consumer::new());
    /// producer.send_multipart(&push, "jobs", vec![b"job 1".to_vec()], 0)?;
    /// let received = consumer.recv_multipart(&pull, "jobs", 0)?;
    /// assert_eq!(received.frames, [b"job 1".to_vec()]);
    /// # Ok::<(), zmq::Error>(())
    /// ```
    pub fn send_multipart(
        &self,
        socket: &zmq::Socket,
        destination: &str,
        mut frames: Vec<Vec<u8>>,
        flags: i32,
    ) -> zmq::Result<()> {
        let sending = self.send_frames(destination, &mut frames);
        match socket.send_multipart(frames, flags) {
            Ok(()) => {
                sending.end();
                Ok(())
            }
            Err(error) => {
                sending.fail(error_type(error), &error);
                Err(error)
            }
        }
    }
}

/// A message received through [`Consumer::recv_multipart`]: its frames as sent (the context
/// frame taken off) and its `process` span.
#[derive(Debug)]
pub struct Received<'c> {
    /// The message's frames, without the context frame.
    pub frames: Vec<Vec<u8>>,
    /// The message's `process` span, ended when dropped.
    pub processing: Processing<'c>,
}

impl Consumer {
    /// Receives one multipart message from `socket` (sent to `destination`), takes its context
    /// frame off and starts its `process` span. A message without a context frame is delivered
    /// as it came.
    pub fn recv_multipart(
        &self,
        socket: &zmq::Socket,
        destination: &str,
        flags: i32,
    ) -> zmq::Result<Received<'_>> {
        let mut frames = socket.recv_multipart(flags)?;
        let processing = self.process_frames(destination, &mut frames);
        Ok(Received { frames, processing })
    }
}

/// `error.type` of a failed send: libzmq's errno name, lowercase.
fn error_type(error: zmq::Error) -> &'static str {
    match error {
        zmq::Error::EAGAIN => "eagain",
        zmq::Error::EHOSTUNREACH => "ehostunreach",
        zmq::Error::ETERM => "eterm",
        zmq::Error::EINTR => "eintr",
        zmq::Error::ENOTSUP => "enotsup",
        zmq::Error::EFSM => "efsm",
        zmq::Error::ENOTSOCK => "enotsock",
        _ => "zmq_error",
    }
}
