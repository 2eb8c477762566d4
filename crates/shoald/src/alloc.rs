//! The process allocator: jemalloc, chosen for bounded fragmentation under mixed-size
//! overwrites (measured in the README), with its statistics handed to the node so that
//! `used_memory` and eviction count what the allocator holds, as in Redis.

use shoal_node::memory::{AllocatorStats, MemorySample};
use tikv_jemalloc_ctl::{epoch, stats};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Reads jemalloc's counters (`stats.*` after advancing the epoch).
pub struct Jemalloc;

impl AllocatorStats for Jemalloc {
    fn name(&self) -> String {
        let version = tikv_jemalloc_ctl::version::read().unwrap_or("?");
        format!("jemalloc-{}", version.split('-').next().unwrap_or(version))
    }

    fn sample(&self) -> Option<MemorySample> {
        epoch::advance().ok()?;
        Some(MemorySample {
            allocated: stats::allocated::read().ok()? as u64,
            active: stats::active::read().ok()? as u64,
            resident: stats::resident::read().ok()? as u64,
            metadata: stats::metadata::read().ok()? as u64,
        })
    }
}
