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
/// Read from the CPU's time-stamp counter, calibrated by the `quanta` crate against the
/// system's monotonic clock, when the kernel itself keeps time with it (its clocksource is
/// `tsc`: it found the counter invariant and in step across CPUs, and would have switched
/// away from it otherwise); else from the system's monotonic clock. In a virtual machine
/// `Instant::now()` (the vDSO's `clock_gettime`) costs about 45 ns here and a tick read
/// about 25 ns; a command reads the clock twice, and a pipelined GET costs about a
/// microsecond in all. A tick never goes back: a later reading that is not later gives 0.
#[derive(Clone, Copy, Debug)]
pub struct Tick(u64);

enum TickSource {
    Tsc(quanta::Clock),
    /// Nanoseconds since this instant.
    Monotonic(std::time::Instant),
}

fn tick_source() -> &'static TickSource {
    static SOURCE: OnceLock<TickSource> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
        TickSource::new(std::fs::read_to_string(path).ok().as_deref())
    })
}

impl TickSource {
    /// The counter when the kernel's clocksource (`current_clocksource`) is `tsc`.
    fn new(clocksource: Option<&str>) -> TickSource {
        match clocksource.map(str::trim) {
            Some("tsc") => TickSource::Tsc(quanta::Clock::new()),
            _ => TickSource::Monotonic(std::time::Instant::now()),
        }
    }

    fn now(&self) -> Tick {
        Tick(match self {
            TickSource::Tsc(clock) => clock.raw(),
            TickSource::Monotonic(since) => since.elapsed().as_nanos() as u64,
        })
    }

    fn elapsed_us(&self, from: Tick) -> u64 {
        let nanos = match self {
            TickSource::Tsc(clock) => clock.delta_as_nanos(from.0, clock.raw()),
            TickSource::Monotonic(since) => {
                (since.elapsed().as_nanos() as u64).saturating_sub(from.0)
            }
        };
        nanos / 1000
    }
}

/// Chooses and calibrates the tick clock (a few milliseconds, once per process), so that
/// the first command does not pay for it inside its own timing.
pub fn calibrate() {
    tick_source();
}

impl Tick {
    /// Now.
    pub fn now() -> Tick {
        tick_source().now()
    }

    /// Whole microseconds from this tick to now.
    pub fn elapsed_us(self) -> u64 {
        tick_source().elapsed_us(self)
    }
}

#[cfg(test)]
mod tests {
    use super::TickSource;
    use std::time::{Duration, Instant};

    /// Both tick sources agree with the system's monotonic clock over a measured span; the
    /// counter is taken only when the kernel keeps time with it.
    #[test]
    fn ticks_follow_the_monotonic_clock() {
        assert!(matches!(
            TickSource::new(Some("kvm-clock\n")),
            TickSource::Monotonic(_)
        ));
        assert!(matches!(TickSource::new(None), TickSource::Monotonic(_)));
        let sources = [
            TickSource::new(Some("tsc\n")),
            TickSource::Monotonic(Instant::now()),
        ];
        for source in &sources {
            let start = Instant::now();
            let tick = source.now();
            while start.elapsed() < Duration::from_millis(30) {
                std::hint::spin_loop();
            }
            let by_ticks = source.elapsed_us(tick);
            let by_std = start.elapsed().as_micros() as u64;
            // Read after the ticks, so the system clock's span is the longer one.
            assert!(by_ticks >= 29_000, "{by_ticks} µs by ticks");
            assert!(
                by_ticks <= by_std + 1_000,
                "{by_ticks} µs by ticks, {by_std} µs by std"
            );
        }
    }
}
