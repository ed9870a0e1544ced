//! Carriers (stub, being written).
