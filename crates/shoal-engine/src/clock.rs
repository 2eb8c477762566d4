//! The node's clock: wall-clock Unix milliseconds, the time base of TTLs and deadlines.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock Unix time in milliseconds, the time base of TTLs.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
