//! A tiny per-thread wyrand generator for sampling and the LFU counter: no locks, no extra
//! crate; and the seeds of the generator and of the store's hashing.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

static SEED_SOURCE: OnceLock<fn() -> u64> = OnceLock::new();

/// Makes `source` give every seed of the stores in this process (their hashing, their
/// sampling), once, at the start: the whole-cluster simulation draws them from its own
/// seed so that a run repeats. False when a source was installed already.
pub fn set_seed_source(source: fn() -> u64) -> bool {
    SEED_SOURCE.set(source).is_ok()
}

/// A seed: from the installed source, or from the standard library's randomly keyed
/// hasher.
pub(crate) fn seed() -> u64 {
    if let Some(source) = SEED_SOURCE.get() {
        return source();
    }
    let mut h = RandomState::new().build_hasher();
    h.write_u64(0x9E37_79B9_7F4A_7C15);
    h.finish()
}

/// A random number from this thread's generator (HRANDFIELD and the like): seeded like the
/// stores, so a simulated run repeats.
pub fn random_u64() -> u64 {
    next_u64()
}

pub(crate) fn next_u64() -> u64 {
    STATE.with(|state| {
        let s = state.get().wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    })
}

/// Uniform in `0..n` (`n > 0`).
pub(crate) fn below(n: usize) -> usize {
    ((u128::from(next_u64()) * n as u128) >> 64) as usize
}

/// Uniform in `[0, 1)`.
pub(crate) fn next_f64() -> f64 {
    (next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    #[test]
    fn below_stays_in_range_and_spreads() {
        let mut seen = [0u32; 8];
        for _ in 0..8000 {
            seen[super::below(8)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 700), "{seen:?}");
        let f = super::next_f64();
        assert!((0.0..1.0).contains(&f));
    }
}
