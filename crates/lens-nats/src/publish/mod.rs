//! The producer side: a PRODUCER `send` span per message, the current context and baggage
//! injected into the message's headers.

mod client;
mod jetstream;
mod producer;
mod publish_ack;
mod request;
mod shared;
mod status;

pub use client::TracedClient;
pub use jetstream::TracedJetStream;
pub use producer::Producer;
pub use publish_ack::TracedPublishAck;
pub(crate) use status::failed_status;
