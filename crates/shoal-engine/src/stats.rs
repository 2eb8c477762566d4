//! Counters a node keeps for INFO and Memcached's `stats`, and this process's resource use.

use std::sync::atomic::{AtomicU64, Ordering, Ordering::Relaxed};
use std::sync::Mutex;

/// A count that every worker adds to on every batch: one copy per thread shard, each in
/// its own cache line, summed when read. One shared atomic would move its line between the
/// cores on every add (with two workers, each `lock add` waited for the other core's line).
#[derive(Default)]
pub struct Counter {
    shards: [Padded; crate::cmdstats::SHARDS],
}

#[derive(Default)]
#[repr(align(128))]
struct Padded(AtomicU64);

impl Counter {
    /// Adds `n` to this thread's copy.
    pub fn add(&self, n: u64) {
        self.shards[crate::cmdstats::shard()]
            .0
            .fetch_add(n, Relaxed);
    }

    /// The sum of every thread's copy.
    pub fn get(&self) -> u64 {
        self.shards
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(s.0.load(Relaxed)))
    }

    /// Back to zero (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for s in &self.shards {
            s.0.store(0, Relaxed);
        }
    }
}

/// Counters behind INFO stats. Connections add their counts once per batch, not per command.
#[derive(Default)]
pub struct Stats {
    pub total_commands_processed: Counter,
    pub total_connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub total_net_input_bytes: Counter,
    pub total_net_output_bytes: Counter,
    /// Time the cron's active expiry took, in µs (Redis's `expire_cycle_cpu_milliseconds`).
    pub expire_cycle_us: AtomicU64,
    /// Active expiry rounds that stopped at their time budget with keys left to remove
    /// (Redis's `expired_time_cap_reached_count`).
    pub expire_time_cap_reached: AtomicU64,
    /// Instantaneous commands, input bytes and output bytes per second, sampled by the cron
    /// task (Redis's `instantaneous_*`: 16 samples each).
    rates: Mutex<[Rate; 3]>,
}

/// The rate of a growing count: the mean of its last 16 samples per second (pure).
#[derive(Default, Clone, Copy)]
pub struct Rate {
    last_ms: u64,
    last: u64,
    samples: [u64; 16],
    next: usize,
}

impl Rate {
    /// Takes one sample: the count is `value` at `now_ms` (a count that went down, reset by
    /// CONFIG RESETSTAT, samples 0).
    pub fn record(&mut self, value: u64, now_ms: u64) {
        if self.last_ms != 0 && now_ms > self.last_ms {
            let rate = value.saturating_sub(self.last) * 1000 / (now_ms - self.last_ms);
            self.samples[self.next] = rate;
            self.next = (self.next + 1) % self.samples.len();
        }
        self.last_ms = now_ms;
        self.last = value;
    }

    /// Per second, over the samples taken.
    pub fn per_second(&self) -> u64 {
        self.samples.iter().sum::<u64>() / self.samples.len() as u64
    }
}

impl Stats {
    /// Records one sample of each rate; called by the cron task.
    pub fn sample_rates(&self, now_ms: u64) {
        let counts = [
            &self.total_commands_processed,
            &self.total_net_input_bytes,
            &self.total_net_output_bytes,
        ];
        let mut rates = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        for (rate, count) in rates.iter_mut().zip(counts) {
            rate.record(count.get(), now_ms);
        }
    }

    /// `instantaneous_ops_per_sec`.
    pub fn instantaneous_ops(&self) -> u64 {
        self.rates.lock().unwrap_or_else(|e| e.into_inner())[0].per_second()
    }

    /// `instantaneous_input_kbps` and `instantaneous_output_kbps` (KiB per second).
    pub fn instantaneous_kbps(&self) -> (f64, f64) {
        let rates = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        let kbps = |r: &Rate| r.per_second() as f64 / 1024.0;
        (kbps(&rates[1]), kbps(&rates[2]))
    }

    pub fn reset(&self) {
        for c in [
            &self.total_commands_processed,
            &self.total_net_input_bytes,
            &self.total_net_output_bytes,
        ] {
            c.reset();
        }
        for c in [
            &self.total_connections_received,
            &self.rejected_connections,
            &self.expire_cycle_us,
            &self.expire_time_cap_reached,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        *self.rates.lock().unwrap_or_else(|e| e.into_inner()) = Default::default();
    }
}

/// Counters behind `stats`, Memcached's names.
#[derive(Default)]
pub struct McStats {
    pub cmd_get: AtomicU64,
    pub cmd_set: AtomicU64,
    pub cmd_flush: AtomicU64,
    pub cmd_touch: AtomicU64,
    /// Meta commands (`mg`, `ms`, `md`, `ma`, `mn`, `me`).
    pub cmd_meta: AtomicU64,
    pub get_hits: AtomicU64,
    pub get_misses: AtomicU64,
    pub delete_hits: AtomicU64,
    pub delete_misses: AtomicU64,
    pub incr_hits: AtomicU64,
    pub incr_misses: AtomicU64,
    pub decr_hits: AtomicU64,
    pub decr_misses: AtomicU64,
    pub cas_hits: AtomicU64,
    pub cas_misses: AtomicU64,
    pub cas_badval: AtomicU64,
    pub touch_hits: AtomicU64,
    pub touch_misses: AtomicU64,
    pub total_items: AtomicU64,
    pub auth_cmds: AtomicU64,
    pub auth_errors: AtomicU64,
    /// Writes refused as larger than the item size limit (memcached's `store_too_large`).
    pub store_too_large: AtomicU64,
    /// Connections `timeout` closed, on either port (memcached's `idle_kicks`).
    pub idle_kicks: AtomicU64,
    /// Writes refused for want of memory (memcached's `store_no_memory`).
    pub store_no_memory: AtomicU64,
    /// The store's counters at the last `stats reset` (what `stats` shows of them is the
    /// difference).
    store_base: std::sync::Mutex<shoal_store::StoreStats>,
    /// `stats detail`: counts per key prefix, while on.
    pub prefixes: crate::prefixes::PrefixStats,
    /// `lru_crawler disable` was the last word: memcached's crawler answers as off (crawl
    /// and metadump refused) until `lru_crawler enable`.
    crawler_off: std::sync::atomic::AtomicBool,
}

impl McStats {
    /// memcached's LRU crawler as the client last set it (`lru_crawler enable|disable`):
    /// on from the start.
    pub fn crawler_on(&self) -> bool {
        !self.crawler_off.load(Ordering::Relaxed)
    }

    pub fn set_crawler(&self, on: bool) {
        self.crawler_off.store(!on, Ordering::Relaxed);
    }

    /// The hit and miss counters of incr (true) or decr.
    pub fn arith_counters(&self, incr: bool) -> (&AtomicU64, &AtomicU64) {
        if incr {
            (&self.incr_hits, &self.incr_misses)
        } else {
            (&self.decr_hits, &self.decr_misses)
        }
    }

    /// The store's counters at the last reset (zero if none).
    pub fn store_base(&self) -> shoal_store::StoreStats {
        *self.store_base.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The store's counters were zeroed (CONFIG RESETSTAT): they count from zero again.
    pub fn store_counters_zeroed(&self) {
        *self.store_base.lock().unwrap_or_else(|e| e.into_inner()) = Default::default();
    }

    /// `stats reset`: zeroes the counters; the store's (`store`, now) count from here.
    pub fn reset(&self, store: shoal_store::StoreStats) {
        *self.store_base.lock().unwrap_or_else(|e| e.into_inner()) = store;
        self.prefixes.clear();
        for c in [
            &self.cmd_get,
            &self.cmd_set,
            &self.cmd_flush,
            &self.cmd_touch,
            &self.cmd_meta,
            &self.get_hits,
            &self.get_misses,
            &self.delete_hits,
            &self.delete_misses,
            &self.incr_hits,
            &self.incr_misses,
            &self.decr_hits,
            &self.decr_misses,
            &self.cas_hits,
            &self.cas_misses,
            &self.cas_badval,
            &self.touch_hits,
            &self.touch_misses,
            &self.total_items,
            &self.auth_cmds,
            &self.auth_errors,
            &self.store_too_large,
            &self.store_no_memory,
            &self.idle_kicks,
        ] {
            c.store(0, Relaxed);
        }
    }
}

/// The machine's memory in bytes (`MemTotal` of /proc/meminfo, Redis's
/// `total_system_memory`), if it can be read.
pub fn system_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_total(&info)
}

/// `MemTotal:   24576000 kB` -> bytes.
fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// User and system CPU seconds of this process.
pub fn cpu_times() -> (f64, f64) {
    let (_, user, sys) = process_usage();
    (user, sys)
}

/// Resident set size and CPU times of this process, from /proc (zeros where unavailable).
pub fn process_usage() -> (u64, f64, f64) {
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096);
    let (user, sys) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((
                f.get(11)?.parse::<f64>().ok()?,
                f.get(12)?.parse::<f64>().ok()?,
            ))
        })
        .map_or((0.0, 0.0), |(u, s)| (u / 100.0, s / 100.0));
    (rss, user, sys)
}

#[cfg(test)]
mod tests {
    use super::{parse_mem_total, Counter, Rate};

    #[test]
    fn a_counter_sums_what_every_thread_added() {
        let counter = Counter::default();
        std::thread::scope(|s| {
            for t in 1..=6u64 {
                let counter = &counter;
                s.spawn(move || (0..1000).for_each(|_| counter.add(t)));
            }
        });
        counter.add(5);
        assert_eq!(counter.get(), 21_000 + 5);
        counter.reset();
        assert_eq!(counter.get(), 0);
    }

    #[test]
    fn total_memory_is_memtotal_in_bytes() {
        let info = "MemTotal:       24576000 kB\nMemFree:  100 kB\n";
        assert_eq!(parse_mem_total(info), Some(24_576_000 * 1024));
        assert_eq!(parse_mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_mem_total("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn a_rate_is_the_mean_of_its_last_sixteen_samples_per_second() {
        let mut r = Rate::default();
        r.record(0, 1_000);
        assert_eq!(r.per_second(), 0, "one reading is no sample");
        // 1,600 in 100 ms: 16,000 a second, one sample of 16.
        r.record(1_600, 1_100);
        assert_eq!(r.per_second(), 1_000);
        for i in 2..=17 {
            r.record(1_600 * i, 1_000 + 100 * i);
        }
        assert_eq!(r.per_second(), 16_000, "the oldest samples give way");
        // A count reset (CONFIG RESETSTAT) samples 0, not a wrapped figure.
        r.record(0, 2_800);
        assert_eq!(r.per_second(), 15_000);
        // A clock that did not move takes no sample.
        r.record(5, 2_800);
        assert_eq!(r.per_second(), 15_000);
    }
}
