//! What happened to keys without a command saying so (a key expired, was evicted, was
//! created by a write, or a read missed it), noted while the layer above asks for it ([`crate::Store::note_key_events`],
//! for Redis's keyspace notifications) and taken from here to be published. Off by default:
//! then each such change costs one atomic load.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

use bytes::Bytes;

/// A change to a key the store notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Noted {
    /// Its TTL passed (found by a lookup or by active expiry) and it was removed.
    Expired,
    /// `maxmemory`'s policy chose it and it was removed.
    Evicted,
    /// A write stored it where no key was (Redis's `new` event).
    Created,
    /// A read ([`crate::Access::Read`], the reads counted in `keyspace_misses`) did not find
    /// it (Redis's `keymiss` event).
    Missed,
}

impl Noted {
    /// This kind's bit in the mask [`crate::Store::note_key_events`] takes.
    pub const fn bit(self) -> u8 {
        match self {
            Noted::Expired => 1,
            Noted::Evicted => 2,
            Noted::Created => 4,
            Noted::Missed => 8,
        }
    }
}

/// Changes noted and not yet taken, at most this many; later ones are dropped (and counted)
/// until the log is taken. The node takes it before every keyspace event a command publishes,
/// after every command, and after every expiry round of at most 1,000 keys, so only an
/// eviction run freeing more keys than this for one write can reach it.
pub(crate) const MAX_NOTED: usize = 65_536;

#[derive(Default)]
pub(crate) struct NoteLog {
    /// The kinds noted ([`Noted::bit`]s).
    mask: AtomicU8,
    log: parking_lot::Mutex<Vec<(Bytes, Noted)>>,
    dropped: AtomicU64,
}

impl NoteLog {
    pub(crate) fn set_mask(&self, mask: u8) {
        self.mask.store(mask, Relaxed);
        if mask == 0 {
            self.log.lock().clear();
        }
    }

    /// Notes that `what` happened to `key` (nothing unless that kind is asked for).
    pub(crate) fn note(&self, key: &[u8], what: Noted) {
        if self.mask.load(Relaxed) & what.bit() == 0 || QUIET.with(|q| q.get()) {
            return;
        }
        let mut log = self.log.lock();
        if log.len() < MAX_NOTED {
            log.push((Bytes::copy_from_slice(key), what));
        } else {
            self.dropped.fetch_add(1, Relaxed);
        }
    }

    /// Everything noted since the last call, oldest first.
    pub(crate) fn take(&self) -> Vec<(Bytes, Noted)> {
        if self.mask.load(Relaxed) == 0 {
            return Vec::new();
        }
        std::mem::take(&mut *self.log.lock())
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` without noting what its writes on this thread do to keys (a command that moves
/// keys as a whole, SWAPDB, creates none in Redis's sense). Not reentrant.
pub fn without_noting<R>(f: impl FnOnce() -> R) -> R {
    struct Loud;
    impl Drop for Loud {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(false));
        }
    }
    QUIET.with(|q| q.set(true));
    let _loud = Loud;
    f()
}
