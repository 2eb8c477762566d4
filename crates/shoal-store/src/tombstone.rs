//! Short-lived records of removed keys ([`Tombstones`]), one set per shard, so a replica can
//! refuse a late replicated write older than a removal (last-writer-wins) instead of
//! resurrecting the key.
//!
//! Bounded: at most [`MAX_PER_SHARD`] tombstones per shard (the oldest goes first), each kept
//! for the store's tombstone TTL. Expired ones are purged lazily when met and from the front of
//! the insertion-ordered queue by `expire_cycle`. Their memory is not part of `used_memory`
//! (replication bookkeeping, not data; `maxmemory` would otherwise evict data to keep it).

use std::collections::VecDeque;

use hashbrown::HashTable;

/// Tombstones one shard holds at most; when full, recording one drops the oldest. With 1024
/// shards that is ~4.2M tombstones, at ~100 bytes each (record, table slot, queue item, key
/// allocation) plus the key bytes.
pub(crate) const MAX_PER_SHARD: usize = 4096;

/// One removed key.
struct Tomb {
    key: Box<[u8]>,
    /// The key's hash under the store's hasher, kept so neither rehashing the table nor
    /// matching a queue item needs the hasher.
    hash: u64,
    /// The version of the removal: replicated states at or below it are refused.
    version: u64,
    /// Unix ms after which the tombstone is gone.
    deadline: u64,
}

/// A shard's tombstones: a table by key plus the queue that ages them out.
#[derive(Default)]
pub(crate) struct Tombstones {
    table: HashTable<Tomb>,
    /// `(deadline, hash)` in insertion order, which is deadline order as long as time and the
    /// TTL do not go backwards (otherwise a later item can hold earlier ones back until it is
    /// due; they are still dropped when met or when the shard is full). Items go stale when their
    /// tombstone is removed or re-recorded; a popped item only removes a tombstone with the same
    /// hash and deadline, and the queue is rebuilt when stale items outnumber live ones.
    order: VecDeque<(u64, u64)>,
}

impl Tombstones {
    pub(crate) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// The removal version recorded for `key`, if its tombstone is still due at `now_ms`; an
    /// expired one is dropped on the way.
    pub(crate) fn get(&mut self, key: &[u8], hash: u64, now_ms: u64) -> Option<u64> {
        let Ok(entry) = self
            .table
            .find_entry(hash, |t| t.hash == hash && *t.key == *key)
        else {
            return None;
        };
        if entry.get().deadline <= now_ms {
            entry.remove();
            return None;
        }
        Some(entry.get().version)
    }

    /// Calls `f(key, version)` for every tombstone still due at `now_ms`.
    pub(crate) fn for_each_due(&self, now_ms: u64, mut f: impl FnMut(&[u8], u64)) {
        for t in self.table.iter() {
            if t.deadline > now_ms {
                f(&t.key, t.version);
            }
        }
    }

    /// Forget `key`'s tombstone (a newer value arrived).
    pub(crate) fn remove(&mut self, key: &[u8], hash: u64) {
        if let Ok(entry) = self
            .table
            .find_entry(hash, |t| t.hash == hash && *t.key == *key)
        {
            entry.remove();
        }
    }

    /// Record that `key` was removed at `version`, keeping the greater version if a tombstone
    /// exists (a re-recorded tombstone also gets the new deadline). True if anything changed.
    pub(crate) fn record(
        &mut self,
        key: &[u8],
        hash: u64,
        version: u64,
        now_ms: u64,
        ttl_ms: u64,
    ) -> bool {
        self.purge(now_ms);
        let deadline = now_ms.saturating_add(ttl_ms);
        if let Some(t) = self
            .table
            .find_mut(hash, |t| t.hash == hash && *t.key == *key)
        {
            if t.deadline > now_ms && t.version >= version {
                return false;
            }
            t.version = version;
            if t.deadline != deadline {
                t.deadline = deadline;
                self.push_order(deadline, hash);
            }
            return true;
        }
        while self.table.len() >= MAX_PER_SHARD && self.drop_oldest() {}
        self.table.insert_unique(
            hash,
            Tomb {
                key: key.into(),
                hash,
                version,
                deadline,
            },
            |t| t.hash,
        );
        self.push_order(deadline, hash);
        true
    }

    /// Drop the tombstones whose deadline has passed, from the front of the queue.
    pub(crate) fn purge(&mut self, now_ms: u64) {
        while let Some(&(deadline, hash)) = self.order.front() {
            if deadline > now_ms {
                break;
            }
            self.order.pop_front();
            self.remove_queued(deadline, hash);
        }
    }

    /// Deadline at the front of the queue (`u64::MAX` if none): `purge` does nothing before it.
    pub(crate) fn next_deadline(&self) -> u64 {
        self.order
            .front()
            .map_or(u64::MAX, |&(deadline, _)| deadline)
    }

    /// Drop the oldest tombstone; false if none was found. Every tombstone has a queue item
    /// with its hash and deadline (at least as many items as tombstones share both), so this
    /// finds one whenever the table is not empty.
    fn drop_oldest(&mut self) -> bool {
        while let Some((deadline, hash)) = self.order.pop_front() {
            if self.remove_queued(deadline, hash) {
                return true;
            }
        }
        debug_assert!(self.table.is_empty(), "a tombstone without a queue item");
        false
    }

    /// Remove the tombstone a queue item stands for; false if the item was stale.
    fn remove_queued(&mut self, deadline: u64, hash: u64) -> bool {
        match self
            .table
            .find_entry(hash, |t| t.hash == hash && t.deadline == deadline)
        {
            Ok(entry) => {
                entry.remove();
                true
            }
            Err(_) => false,
        }
    }

    fn push_order(&mut self, deadline: u64, hash: u64) {
        self.order.push_back((deadline, hash));
        if self.order.len() > 2 * self.table.len() + 64 {
            let mut live: Vec<(u64, u64)> =
                self.table.iter().map(|t| (t.deadline, t.hash)).collect();
            live.sort_unstable();
            self.order = live.into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keeps_the_greater_version() {
        let mut t = Tombstones::default();
        assert!(t.record(b"k", 1, 10, 0, 100));
        assert!(!t.record(b"k", 1, 9, 0, 100));
        assert!(!t.record(b"k", 1, 10, 0, 100));
        assert_eq!(t.get(b"k", 1, 50), Some(10));
        assert!(t.record(b"k", 1, 11, 50, 100));
        // The re-recorded tombstone lives to the new deadline; the stale item does not cut it.
        t.purge(120);
        assert_eq!(t.get(b"k", 1, 120), Some(11));
        assert_eq!(t.get(b"k", 1, 150), None);
        assert!(t.is_empty());
    }

    #[test]
    fn equal_hashes_keep_keys_apart() {
        let mut t = Tombstones::default();
        t.record(b"a", 7, 1, 0, 100);
        t.record(b"b", 7, 2, 0, 100);
        assert_eq!((t.get(b"a", 7, 0), t.get(b"b", 7, 0)), (Some(1), Some(2)));
        t.remove(b"a", 7);
        assert_eq!((t.get(b"a", 7, 0), t.get(b"b", 7, 0)), (None, Some(2)));
    }

    #[test]
    fn the_queue_stays_bounded_under_churn() {
        let mut t = Tombstones::default();
        for i in 0..100_000u64 {
            t.record(b"k", 1, i, i, 1_000_000);
            t.remove(b"k", 1);
            assert!(t.order.len() <= 66, "{}", t.order.len());
        }
        t.purge(u64::MAX);
        assert_eq!(t.next_deadline(), u64::MAX);
    }
}
