//! The collections' encoding thresholds: how large a hash, set or sorted set grows in its
//! packed form before it becomes a table (Redis's `hash-max-listpack-entries` and `-value`,
//! `set-max-intset-entries`, `set-max-listpack-*`, `zset-max-listpack-*`). One set for the
//! process, as Redis's are its server's, changed by CONFIG SET; read each time a collection
//! is made or grows, so a change applies to later writes, and a collection never goes back
//! to a packed form (as in Redis, which only repacks on loading).

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// One threshold; its default is Redis's.
pub struct Threshold(AtomicUsize);

impl Threshold {
    const fn new(default: usize) -> Threshold {
        Threshold(AtomicUsize::new(default))
    }

    pub fn get(&self) -> usize {
        self.0.load(Relaxed)
    }

    pub fn set(&self, value: usize) {
        self.0.store(value, Relaxed);
    }
}

/// Redis's defaults, in the order of the thresholds below.
pub const DEFAULTS: [usize; 7] = [512, 64, 512, 128, 64, 128, 64];

/// A hash's fields (`hash-max-listpack-entries`).
pub static HASH_ENTRIES: Threshold = Threshold::new(DEFAULTS[0]);
/// A hash's longest field or value (`hash-max-listpack-value`).
pub static HASH_VALUE: Threshold = Threshold::new(DEFAULTS[1]);
/// An intset's members (`set-max-intset-entries`).
pub static SET_INTSET_ENTRIES: Threshold = Threshold::new(DEFAULTS[2]);
/// A set's members in a listpack (`set-max-listpack-entries`).
pub static SET_ENTRIES: Threshold = Threshold::new(DEFAULTS[3]);
/// A set's longest member in a listpack (`set-max-listpack-value`).
pub static SET_VALUE: Threshold = Threshold::new(DEFAULTS[4]);
/// A sorted set's members (`zset-max-listpack-entries`).
pub static ZSET_ENTRIES: Threshold = Threshold::new(DEFAULTS[5]);
/// A sorted set's longest member (`zset-max-listpack-value`).
pub static ZSET_VALUE: Threshold = Threshold::new(DEFAULTS[6]);
