//! Placeholder until the carriers bench lands.
fn main() {}
