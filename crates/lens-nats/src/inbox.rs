//! Reply inboxes: the prefix of a client's, and whether a subject is under it (a temporary
//! destination).

use async_nats::Client;

/// The prefix of `client`'s reply inboxes (`_INBOX.` unless configured), read once: replies
/// go to subjects under it, temporary destinations.
pub(crate) fn inbox_prefix(client: &Client) -> String {
    let inbox = client.new_inbox();
    match inbox.rsplit_once('.') {
        Some((prefix, _)) => format!("{prefix}."),
        None => inbox,
    }
}

pub(crate) fn is_temporary(inbox_prefix: &str, subject: &str) -> bool {
    !inbox_prefix.is_empty() && subject.starts_with(inbox_prefix)
}
