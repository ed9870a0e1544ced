//! Resident set size of this process, from `/proc/self/status` (Linux).

/// Bytes resident in memory now (`VmRSS`); `None` where `/proc` is not available.
///
/// ```
/// let rss = lens_soak::resident_bytes();
/// if cfg!(target_os = "linux") {
///     assert!(rss.is_some_and(|bytes| bytes > 0));
/// }
/// ```
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

/// The `VmRSS:   1234 kB` line of a `/proc/<pid>/status` text, in bytes.
pub(crate) fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut parts = line["VmRSS:".len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => value.checked_mul(1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::parse_vm_rss;

    #[test]
    fn vm_rss_is_read_in_bytes() {
        let status = "Name:\tx\nVmPeak:\t  9 kB\nVmRSS:\t   2048 kB\nThreads: 3\n";
        assert_eq!(parse_vm_rss(status), Some(2048 * 1024));
        assert_eq!(parse_vm_rss("VmRSS: 12 MB\n"), None);
        assert_eq!(parse_vm_rss("Name: x\n"), None);
    }
}
