//! The listing: every public item reachable from the crate root (through public modules and
//! re-exports), with its signature, one line each, sorted.

mod listing;
mod lists;
mod signature;
mod types;

pub(crate) use listing::listing;
