//! `server.address` as static text: the attribute every span of a wrapper records, copied into
//! each span without a write to memory the exporting thread also writes.

use std::sync::{Arc, Mutex};

use opentelemetry::StringValue;

/// At most this many distinct addresses are made static in a process (a process talks to a
/// few brokers); beyond them an address is shared, reference-counted text.
const MAX_INTERNED: usize = 64;

/// Longer text is never made static (a DNS name has at most 253 bytes).
const MAX_LEN: usize = 253;

/// The addresses made static so far (looked up once per wrapper, never per message).
static CONFIGURED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// `address`, a broker address the user configured (a `connect` URL, `with_server`), as the
/// value of `server.address`: static text, one copy per distinct address, for the first 64
/// distinct addresses of the process (at most 253 bytes each); shared, reference-counted text
/// beyond them.
///
/// Why static: a reference count shared by every span is incremented by the publishing thread
/// as each span starts and decremented by the exporting thread as it drops exported spans, so
/// its cache line moves between the cores on each message (`cargo xtask bench nats`: 3-4
/// points of publish throughput against the same span by hand, which records a literal). A
/// static text is copied without a write. An address a server advertised (a cluster's
/// `connect_urls`) is what a peer sent: it never comes here, and stays reference-counted.
pub(crate) fn configured_address(address: String) -> StringValue {
    intern(&CONFIGURED, MAX_INTERNED, address)
}

/// An address the user did not configure (a server the cluster advertised): shared text.
pub(crate) fn advertised_address(address: String) -> StringValue {
    StringValue::from(Arc::<str>::from(address))
}

/// `text` made static in `table` (found there, or added while the table holds fewer than
/// `capacity`), else shared text. A poisoned lock (a panic elsewhere while adding) only means
/// no more text is made static.
fn intern(table: &Mutex<Vec<&'static str>>, capacity: usize, text: String) -> StringValue {
    if text.len() <= MAX_LEN
        && let Ok(mut table) = table.lock()
    {
        if let Some(interned) = table.iter().find(|t| **t == text) {
            return StringValue::from(*interned);
        }
        if table.len() < capacity {
            // Bounded: at most `capacity` texts of at most `MAX_LEN` bytes, for the process's
            // life, each one an address the user configured.
            let interned: &'static str = Box::leak(text.into_boxed_str());
            table.push(interned);
            return StringValue::from(interned);
        }
    }
    advertised_address(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Where the value's text lives: equal for two values sharing one copy.
    fn at(value: &StringValue) -> *const u8 {
        value.as_str().as_ptr()
    }

    #[test]
    fn an_address_configured_twice_is_one_static_text() {
        let table = Mutex::new(Vec::new());
        let first = intern(&table, 4, "nats.internal".to_owned());
        let again = intern(&table, 4, "nats.internal".to_owned());
        assert_eq!(first.as_str(), "nats.internal");
        assert_eq!(at(&first), at(&again));
        assert_eq!(table.lock().unwrap().len(), 1);
        // Near miss: another address is another text.
        let other = intern(&table, 4, "nats.external".to_owned());
        assert_ne!(at(&first), at(&other));
        assert_eq!(table.lock().unwrap().len(), 2);
    }

    #[test]
    fn beyond_the_bound_addresses_are_shared_text_and_the_table_stops_growing() {
        let table = Mutex::new(Vec::new());
        for i in 0..3 {
            intern(&table, 3, format!("broker-{i}"));
        }
        let beyond = intern(&table, 3, "broker-3".to_owned());
        let beyond_again = intern(&table, 3, "broker-3".to_owned());
        assert_eq!(beyond.as_str(), "broker-3");
        // Not interned: two values, two copies; the table holds three still.
        assert_ne!(at(&beyond), at(&beyond_again));
        assert_eq!(table.lock().unwrap().len(), 3);
        // One interned before the bound is still found.
        let known = intern(&table, 3, "broker-1".to_owned());
        assert_eq!(at(&known), at(&intern(&table, 3, "broker-1".to_owned())));
    }

    #[test]
    fn text_longer_than_a_dns_name_is_never_made_static() {
        let table = Mutex::new(Vec::new());
        let long = "a".repeat(MAX_LEN + 1);
        let value = intern(&table, 4, long.clone());
        assert_eq!(value.as_str(), long);
        assert!(table.lock().unwrap().is_empty());
        // Near miss: at the limit it is.
        intern(&table, 4, "a".repeat(MAX_LEN));
        assert_eq!(table.lock().unwrap().len(), 1);
    }

    #[test]
    fn an_advertised_address_is_never_made_static() {
        let a = advertised_address("10.0.0.7".to_owned());
        let b = advertised_address("10.0.0.7".to_owned());
        assert_eq!(a.as_str(), "10.0.0.7");
        assert_ne!(at(&a), at(&b));
    }
}
