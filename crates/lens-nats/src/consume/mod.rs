//! The consumer side: a CONSUMER `process` span per message, current while the user handles
//! it; a CLIENT `receive` span per pulled batch; CLIENT `settle` spans for JetStream acks.

mod consumer;
mod message;
mod processing;
mod receive;
mod settle;
mod shared;
mod stream;
mod subscription;

pub use consumer::Consumer;
pub use message::NatsMessage;
pub use processing::Processing;
pub use receive::ReceivedBatch;
pub use stream::{ConsumerShared, Delivery, TracedMessages, TracedStream, TracedSubscriber};
pub use subscription::Subscription;
