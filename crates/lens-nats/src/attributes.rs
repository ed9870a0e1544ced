//! The values and attribute names lens-nats's spans record under names of their own:
//! `messaging.system`, and the JetStream attributes (`messaging.nats.*`).

/// `messaging.system` of every span lens-nats makes.
pub const SYSTEM: &str = "nats";

/// The JetStream stream of a message (publish: from the ack; process: from the message).
pub const STREAM: &str = "messaging.nats.stream";

/// The message's sequence in its JetStream stream (publish: from the ack; process: from the
/// message), the same number on both sides.
pub const SEQUENCE: &str = "messaging.nats.stream_sequence";

/// Whether the stream found a JetStream publish a duplicate (its `Nats-Msg-Id` seen within the
/// stream's duplicate window: not stored again), from the publish's ack.
pub const DUPLICATE: &str = "messaging.nats.duplicate";
