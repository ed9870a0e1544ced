//! lens-zmq as a lens-span adapter: what its hooks see of a message ([`MessageInfo`]) and the
//! adapter type that names it.

use lens_span::messaging::{OperationStatus, OperationType};

/// What the hooks of lens-zmq see of one message (`with_filter`, `with_span_name`,
/// `with_request_attributes`).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct MessageInfo<'a> {
    /// The destination: the name both sides give the channel.
    pub destination: &'a str,
    /// The payload's size in bytes, when known.
    pub body_size: Option<usize>,
    /// Which operation (`send` or `process`).
    pub operation: OperationType,
}

/// lens-zmq as a lens-span adapter: what its hooks and its classifier see.
#[derive(Debug)]
pub(crate) struct Zmq;

impl lens_span::Adapter for Zmq {
    type Request<'a> = MessageInfo<'a>;
    type Response<'a> = OperationStatus;
    type Status = OperationStatus;
}
