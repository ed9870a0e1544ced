//! Baggage (stub, being written).
