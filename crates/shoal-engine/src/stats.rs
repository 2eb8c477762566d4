//! Counters a node keeps for INFO and Memcached's `stats`, and this process's resource use.

use std::sync::atomic::{AtomicU64, Ordering, Ordering::Relaxed};
use std::sync::Mutex;

/// Counters behind INFO stats. Connections add their counts once per batch, not per command.
#[derive(Default)]
pub struct Stats {
    pub total_commands_processed: AtomicU64,
    pub total_connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub total_net_input_bytes: AtomicU64,
    pub total_net_output_bytes: AtomicU64,
    /// Instantaneous ops/sec, sampled by the cron task (Redis keeps 16 samples; so do we).
    pub ops_samples: Mutex<OpsSamples>,
}

#[derive(Default)]
pub struct OpsSamples {
    last_ms: u64,
    last_ops: u64,
    samples: [u64; 16],
    next: usize,
}

impl Stats {
    /// Records one ops/sec sample; called by the cron task.
    pub fn sample_ops(&self, now_ms: u64) {
        let ops = self.total_commands_processed.load(Ordering::Relaxed);
        let mut s = self.ops_samples.lock().expect("ops sample lock poisoned");
        if s.last_ms != 0 && now_ms > s.last_ms {
            let rate = (ops - s.last_ops) * 1000 / (now_ms - s.last_ms);
            let i = s.next;
            s.samples[i] = rate;
            s.next = (i + 1) % s.samples.len();
        }
        s.last_ms = now_ms;
        s.last_ops = ops;
    }

    pub fn instantaneous_ops(&self) -> u64 {
        let s = self.ops_samples.lock().expect("ops sample lock poisoned");
        s.samples.iter().sum::<u64>() / s.samples.len() as u64
    }

    pub fn reset(&self) {
        for c in [
            &self.total_commands_processed,
            &self.total_connections_received,
            &self.rejected_connections,
            &self.total_net_input_bytes,
            &self.total_net_output_bytes,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Counters behind `stats`, Memcached's names.
#[derive(Default)]
pub struct McStats {
    pub cmd_get: AtomicU64,
    pub cmd_set: AtomicU64,
    pub cmd_flush: AtomicU64,
    pub cmd_touch: AtomicU64,
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
    /// Writes refused for want of memory (memcached's `store_no_memory`).
    pub store_no_memory: AtomicU64,
}

impl McStats {
    /// The hit and miss counters of incr (true) or decr.
    pub fn arith_counters(&self, incr: bool) -> (&AtomicU64, &AtomicU64) {
        if incr {
            (&self.incr_hits, &self.incr_misses)
        } else {
            (&self.decr_hits, &self.decr_misses)
        }
    }

    pub fn reset(&self) {
        for c in [
            &self.cmd_get,
            &self.cmd_set,
            &self.cmd_flush,
            &self.cmd_touch,
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
        ] {
            c.store(0, Relaxed);
        }
    }
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
