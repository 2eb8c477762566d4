//! The node's clock: wall-clock Unix time, the time base of TTLs, versions and deadlines.
//!
//! It reads the system clock, unless a process installs another source once at its start:
//! the whole-cluster simulation (`crates/shoal-sim`) gives every node its simulated time.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

static SOURCE: OnceLock<fn() -> u64> = OnceLock::new();

/// Makes `source` (Unix microseconds) the clock of every node in this process. Only the
/// first call counts; false when a source was installed already.
pub fn set_source(source: fn() -> u64) -> bool {
    SOURCE.set(source).is_ok()
}

/// Wall-clock Unix time in microseconds.
pub fn now_us() -> u64 {
    match SOURCE.get() {
        Some(source) => source(),
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0),
    }
}

/// Wall-clock Unix time in milliseconds, the time base of TTLs.
pub fn now_ms() -> u64 {
    now_us() / 1000
}
