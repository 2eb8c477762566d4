//! Memory as the allocator sees it, and the store budget that keeps it under `maxmemory`.
//!
//! The binary picks the global allocator and installs an [`AllocatorStats`] for it
//! (`shoald` uses jemalloc); without one (in-process tests) the store's own count stands in.
//! With it, as in Redis, `used_memory` is what the allocator has handed out, so connection
//! buffers, the store's tables and the allocator's size-class rounding count too, and
//! `maxmemory` bounds that. The store counts only keys, values and a fixed per-entry
//! overhead, cheaply on every write; the cron task samples the allocator at `hz` and sets the
//! store's limit to what the allocator's total leaves, and lower still while the pages it
//! holds exceed `maxmemory` x [`RSS_AIM`] over the empty server's (fragmentation).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// One reading of the allocator's counters, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemorySample {
    /// Handed out to the program (size classes included): Redis's `used_memory`.
    pub allocated: u64,
    /// In pages the allocator uses for live allocations.
    pub active: u64,
    /// Resident in pages the allocator maps (live, dirty and metadata).
    pub resident: u64,
    /// The allocator's own metadata.
    pub metadata: u64,
}

/// Reads the process's allocator. Implemented by the binary that installs the allocator.
pub trait AllocatorStats: Send + Sync {
    /// The allocator's name for INFO (`mem_allocator`), e.g. `jemalloc-5.3.0`.
    fn name(&self) -> String;
    /// A fresh reading, or `None` if the allocator cannot tell now.
    fn sample(&self) -> Option<MemorySample>;
}

static ALLOCATOR: OnceLock<Box<dyn AllocatorStats>> = OnceLock::new();

/// Installs the process's allocator statistics (once; later calls are ignored).
pub fn install(stats: Box<dyn AllocatorStats>) {
    let _ = ALLOCATOR.set(stats);
}

/// The installed allocator, if any.
pub fn allocator() -> Option<&'static dyn AllocatorStats> {
    ALLOCATOR.get().map(|b| b.as_ref())
}

/// The pages held (live and metadata) the eviction aims at, as a multiple of `maxmemory`
/// over the empty server's. The promise is a resident size within 1.1 x `maxmemory` over
/// the empty server's; the rest is room for freed pages on their way back to the kernel.
pub const RSS_AIM: f64 = 1.0;

/// The store's limit (in its own count) that brings the allocator's figures under the
/// limits: `allocated <= maxmemory`, and the pages the allocator holds for live data and its
/// own metadata (`active + metadata`, what it cannot give back) at most `maxmemory *
/// RSS_AIM` over the empty server's (`base`). Freed pages not yet returned (dirty,
/// `resident - active - metadata`) are left to the allocator's decay: they go back within
/// about a second, and evicting for them would throw away data for memory about to be
/// returned. `store` is what the store counts now. 0 = no limit (`maxmemory` 0).
///
/// Below the limit the store may grow by the allocator bytes left, divided by the allocator
/// bytes per counted byte (an almost empty store can take writes at once); above it, the store shrinks in proportion (`store * maxmemory /
/// allocated`), which converges whatever the allocator's bytes per counted byte. Holding
/// too many pages (fragmentation) shrinks it in proportion too, but never below half of
/// `maxmemory`: evicting random keys empties pages slowly, and the cut must not compound.
pub fn store_limit(maxmemory: u64, store: u64, sample: &MemorySample, base: u64) -> u64 {
    if maxmemory == 0 {
        return 0;
    }
    let (max, s, allocated) = (maxmemory as f64, store as f64, sample.allocated as f64);
    let by_allocated = if allocated <= max {
        // Allocator bytes per counted byte, once the store is large enough to tell (an
        // almost empty store may take the whole headroom: writes must not wait).
        let k = if s >= max / 8.0 {
            (allocated / s).clamp(1.0, 8.0)
        } else {
            1.0
        };
        s + (max - allocated) / k
    } else {
        s * max / allocated
    };
    let held = (sample.active + sample.metadata).saturating_sub(base) as f64;
    let aim = max * RSS_AIM;
    let by_held = if held > aim {
        (s * aim / held).max(max / 2.0)
    } else {
        f64::MAX
    };
    let limit = by_allocated.min(by_held);
    // Never 0 (that would mean "no limit" to the store), never above maxmemory.
    (limit.max(1.0) as u64).min(maxmemory)
}

/// Whether `maxmemory` (0: no limit) is below what the empty server's allocator had handed
/// out when the node started (`empty`): Redis's `used_memory` then stays over the limit
/// whatever it evicts, and it answers commands that need memory OOM. Only the empty
/// server's size counts, not what connections hold since: their buffers come and go, and
/// an outage for a burst of idle clients would be worse than a limit passed (pure).
pub fn overfull(maxmemory: u64, empty: u64) -> bool {
    maxmemory > 0 && empty > maxmemory
}

/// The latest allocator reading and the figures derived from it, for INFO.
#[derive(Default)]
pub struct MemoryState {
    pub allocated: AtomicU64,
    pub active: AtomicU64,
    pub resident: AtomicU64,
    pub metadata: AtomicU64,
    /// The allocator's `active + metadata` when the node started (the empty server's).
    pub base_held: AtomicU64,
    /// The allocator's `allocated` when the node started (the empty server's).
    pub base_allocated: AtomicU64,
    /// False until the first reading (no allocator installed: stays false).
    pub sampled: std::sync::atomic::AtomicBool,
}

impl MemoryState {
    /// Records a reading; the first one is the empty server's base.
    pub fn record(&self, s: &MemorySample) {
        self.allocated.store(s.allocated, Relaxed);
        self.active.store(s.active, Relaxed);
        self.resident.store(s.resident, Relaxed);
        self.metadata.store(s.metadata, Relaxed);
        if !self.sampled.swap(true, Relaxed) {
            self.base_held.store(s.active + s.metadata, Relaxed);
            self.base_allocated.store(s.allocated, Relaxed);
        }
    }

    pub fn sample(&self) -> Option<MemorySample> {
        self.sampled.load(Relaxed).then(|| MemorySample {
            allocated: self.allocated.load(Relaxed),
            active: self.active.load(Relaxed),
            resident: self.resident.load(Relaxed),
            metadata: self.metadata.load(Relaxed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    /// A reading with `held` = active + metadata (all active here).
    fn at(allocated: u64, held: u64) -> MemorySample {
        MemorySample {
            allocated,
            active: held,
            resident: held + 30 * MB,
            metadata: 0,
        }
    }

    #[test]
    fn the_store_gets_what_the_allocator_leaves() {
        // No limit.
        assert_eq!(store_limit(0, 10 * MB, &at(500 * MB, 600 * MB), 0), 0);
        // 64 MB limit, the allocator holds 50 MB of which the store counts 40: the store may
        // grow by the 14 MB left, in its own bytes (40/50 of them).
        assert_eq!(
            store_limit(64 * MB, 40 * MB, &at(50 * MB, 55 * MB), 4 * MB),
            40 * MB + 14 * MB * 4 / 5
        );
        // Over by 6 MB allocated: the store shrinks in proportion, 60 x 64 / 70.
        assert_eq!(
            store_limit(64 * MB, 60 * MB, &at(70 * MB, 72 * MB), 4 * MB),
            60 * MB * 64 / 70
        );
        // Allocated fits but the pages held run 10 MB past 64 MB over the base: 60 x 64 / 74.
        // (Dirty pages, resident beyond held, do not count.)
        let l = store_limit(64 * MB, 60 * MB, &at(60 * MB, 4 * MB + 74 * MB), 4 * MB);
        assert_eq!(l, 60 * MB * 64 / 74);
        // ... but fragmentation never cuts the store below half of maxmemory.
        let l = store_limit(64 * MB, 40 * MB, &at(45 * MB, 4 * MB + 200 * MB), 4 * MB);
        assert_eq!(l, 32 * MB);
        // An empty store takes writes at once; never 0 (no limit to the store), never above
        // maxmemory.
        assert_eq!(
            store_limit(64 * MB, 0, &at(5 * MB, 5 * MB), 4 * MB),
            59 * MB
        );
        assert_eq!(store_limit(64 * MB, 0, &at(500 * MB, 500 * MB), 0), 1);
        assert_eq!(store_limit(64 * MB, 60 * MB, &at(MB, MB), 0), 64 * MB);
    }

    /// A model of the node: writes fill the store to its limit between two readings, the
    /// allocator hands out `k` bytes per counted byte plus `c` of its own, and holds 5 % more
    /// in pages. Whatever `k`, the allocator's total ends under maxmemory without throwing
    /// away much more than it must.
    #[test]
    fn the_budget_converges_for_any_bytes_per_counted_byte() {
        let max = 64 * MB;
        let c = 5 * MB;
        for k in [1.0, 1.1, 1.5, 2.0, 3.0, 4.0] {
            let mut limit = max;
            for _ in 0..200 {
                let store = limit; // writes fill the budget; evictions empty it down to it
                let allocated = (store as f64 * k) as u64 + c;
                let sample = at(allocated, allocated + allocated / 20);
                limit = store_limit(max, store, &sample, 0);
            }
            let allocated = (limit as f64 * k) as u64 + c;
            assert!(allocated <= max + max / 50, "k {k}: {allocated} over {max}");
            let fits = (max - c) as f64 / k / 1.05;
            assert!(
                limit as f64 >= fits * 0.9,
                "k {k}: store {limit}, fits {fits}"
            );
        }
    }

    #[test]
    fn overfull_when_the_empty_server_alone_passes_the_limit() {
        // The empty server took 4 MB: a 1 MB limit can never be met, a 64 MB one can.
        assert!(overfull(MB, 4 * MB));
        assert!(!overfull(64 * MB, 4 * MB));
        assert!(!overfull(4 * MB, 4 * MB));
        // No limit.
        assert!(!overfull(0, 4 * MB));
    }
}
