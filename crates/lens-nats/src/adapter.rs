//! lens-nats as a lens-span adapter: what its hooks see of an operation ([`MessageInfo`]) and
//! the adapter type that names it.

use async_nats::header::HeaderMap;
use lens_span::messaging::{OperationStatus, OperationType};

/// What the hooks of lens-nats see of one operation (`with_filter`, `with_span_name`,
/// `with_request_attributes`).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct MessageInfo<'a> {
    /// The subject (for a `receive`: the destination named in
    /// [`Consumer::receive`](crate::Consumer::receive)).
    pub subject: &'a str,
    /// The message's headers as the caller set them (publish) or as they arrived (process).
    pub headers: Option<&'a HeaderMap>,
    /// The payload (empty for a `receive`).
    pub payload: &'a [u8],
    /// Which operation.
    pub operation: OperationType,
}

/// lens-nats as a lens-span adapter: what its hooks and its classifier see.
#[derive(Debug)]
pub(crate) struct Nats;

impl lens_span::Adapter for Nats {
    type Request<'a> = MessageInfo<'a>;
    type Response<'a> = OperationStatus;
    type Status = OperationStatus;
}
