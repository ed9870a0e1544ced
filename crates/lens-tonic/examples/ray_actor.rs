//! Placeholder until the example lands.
fn main() {}
