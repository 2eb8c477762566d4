//! Freeing removed values off the worker threads (Redis's lazy free): UNLINK, FLUSHALL and
//! FLUSHDB ASYNC (and DEL, FLUSHALL, FLUSHDB under `lazyfree-lazy-user-del` and
//! `lazyfree-lazy-user-flush`) hand what they removed to one background thread when freeing
//! it would take long: a collection of more than [`THRESHOLD`] elements, or a whole flush.
//! The keys are gone at once either way; only the memory comes back later.
//!
//! The queue is bounded ([`QUEUE`] batches): when it is full, the caller frees its garbage
//! itself, as it would without lazy free. INFO shows `lazyfree_pending_objects` (keys handed
//! over, not freed yet) and `lazyfreed_objects` (keys freed there since CONFIG RESETSTAT).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};

use shoal_store::Garbage;

/// Redis's `LAZYFREE_THRESHOLD`: a value whose freeing costs more goes to the background.
pub const THRESHOLD: usize = 64;

/// Batches of garbage the background thread may have queued.
const QUEUE: usize = 1024;

#[derive(Default)]
struct Counts {
    pending: AtomicU64,
    freed: AtomicU64,
}

/// The node's lazy free: its counters and, once first used, its thread.
#[derive(Default)]
pub struct LazyFree {
    counts: Arc<Counts>,
    sender: OnceLock<Option<SyncSender<Garbage>>>,
}

impl LazyFree {
    /// Frees `garbage` on the background thread if that is worth it (`always`: a flush), else
    /// here, now.
    pub fn free(&self, garbage: Garbage, always: bool) {
        if garbage.keys() == 0 || !(always || garbage.effort() > THRESHOLD) {
            return;
        }
        let keys = garbage.keys() as u64;
        self.counts.pending.fetch_add(keys, Relaxed);
        let refused = match self.sender() {
            Some(tx) => match tx.try_send(garbage) {
                Ok(()) => None,
                Err(TrySendError::Full(g) | TrySendError::Disconnected(g)) => Some(g),
            },
            None => Some(garbage),
        };
        if let Some(garbage) = refused {
            self.counts.pending.fetch_sub(keys, Relaxed);
            drop(garbage);
        }
    }

    /// Keys handed over and not freed yet (INFO's `lazyfree_pending_objects`).
    pub fn pending(&self) -> u64 {
        self.counts.pending.load(Relaxed)
    }

    /// Keys freed on the background thread (INFO's `lazyfreed_objects`).
    pub fn freed(&self) -> u64 {
        self.counts.freed.load(Relaxed)
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.counts.freed.store(0, Relaxed);
    }

    /// The background thread's queue, started on first use (`None`: it could not start; the
    /// caller frees its garbage itself).
    fn sender(&self) -> Option<&SyncSender<Garbage>> {
        let sender = self.sender.get_or_init(|| {
            let (tx, rx) = sync_channel::<Garbage>(QUEUE);
            let counts = Arc::clone(&self.counts);
            let started = std::thread::Builder::new()
                .name("shoal-lazyfree".into())
                .spawn(move || {
                    for garbage in rx {
                        let keys = garbage.keys() as u64;
                        drop(garbage);
                        counts.pending.fetch_sub(keys, Relaxed);
                        counts.freed.fetch_add(keys, Relaxed);
                    }
                });
            started.ok().map(|_| tx)
        });
        sender.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_store::{Store, StoreConfig};

    fn wait_freed(lazy: &LazyFree, n: u64) {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while lazy.freed() < n || lazy.pending() != 0 {
            assert!(std::time::Instant::now() < end, "not freed in time");
            std::thread::yield_now();
        }
    }

    #[test]
    fn large_values_and_flushes_go_to_the_thread_small_ones_stay() {
        let store = Store::new(StoreConfig::default());
        let lazy = LazyFree::default();
        store.set(b"s", b"small", None, 0);
        let mut set = shoal_store::Set::new();
        for i in 0..1000 {
            set.insert(format!("m{i}").as_bytes());
        }
        store.write(b"big", 0, |slot| {
            slot.set_coll(shoal_store::Collection::Set(set))
        });
        lazy.free(store.take(b"s", 0).unwrap(), false);
        assert_eq!(
            (lazy.pending(), lazy.freed()),
            (0, 0),
            "a string is freed at once"
        );
        lazy.free(store.take(b"big", 0).unwrap(), false);
        wait_freed(&lazy, 1);
        for i in 0..10 {
            store.set(format!("k{i}").as_bytes(), b"v", None, 0);
        }
        lazy.free(store.clear_into_garbage(), true);
        wait_freed(&lazy, 11);
        assert!(store.is_empty());
        lazy.reset();
        assert_eq!(lazy.freed(), 0);
    }
}
