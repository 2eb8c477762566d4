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

/// A point on the process's monotonic tick clock, for timing one command (its `usec` in
/// INFO commandstats, the slow log, the latency monitor).
///
/// Read from the CPU's time-stamp counter where the `quanta` crate finds it invariant and
/// calibrates it against the system's monotonic clock, else from that clock. In a virtual
/// machine `Instant::now()` (the vDSO's `clock_gettime`) costs about 45 ns here and a tick
/// read about 25 ns; a command reads the clock twice, and a pipelined GET costs about a
/// microsecond in all.
#[derive(Clone, Copy, Debug)]
pub struct Tick(u64);

fn tick_clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Calibrates the tick clock against the system's (a few milliseconds, once per process),
/// so that the first command does not pay for it inside its own timing.
pub fn calibrate() {
    tick_clock();
}

impl Tick {
    /// Now.
    pub fn now() -> Tick {
        Tick(tick_clock().raw())
    }

    /// Whole microseconds from this tick to now.
    pub fn elapsed_us(self) -> u64 {
        let clock = tick_clock();
        clock.delta_as_nanos(self.0, clock.raw()) / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::Tick;
    use std::time::{Duration, Instant};

    /// The tick clock agrees with the system's monotonic clock over a measured span.
    #[test]
    fn ticks_follow_the_monotonic_clock() {
        super::calibrate();
        let start = Instant::now();
        let tick = Tick::now();
        while start.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        let by_ticks = tick.elapsed_us();
        let by_std = start.elapsed().as_micros() as u64;
        // Read after the ticks, so the system clock's span is the longer one.
        assert!(by_ticks >= 29_000, "{by_ticks} µs by ticks");
        assert!(
            by_ticks <= by_std + 1_000,
            "{by_ticks} µs by ticks, {by_std} µs by std"
        );
    }
}
