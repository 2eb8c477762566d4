//! One of the store's 1024 shards: a dense `Vec<Item>` indexed by a `HashTable<u32>`, a lazy
//! min-heap of expiry times, the tombstones of removed keys, and the shard's counters. Always
//! used under the shard's mutex.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use crate::entry::Item;
use crate::noted::{NoteLog, Noted};
use crate::slot::{key_slot, SLOTS};
use crate::tombstone::Tombstones;

/// Number of shards; a key's shard is `key_slot(key) % SHARDS`, so one hash slot lives in
/// exactly one shard and slot iteration touches one shard only.
pub(crate) const SHARDS: usize = 1024;

/// Hash slots per shard (slot / SHARDS indexes [`Shard::slot_counts`]).
pub(crate) const SLOTS_PER_SHARD: usize = SLOTS as usize / SHARDS;

pub(crate) fn shard_of_slot(slot: u16) -> usize {
    usize::from(slot) % SHARDS
}

/// A slot's place among its shard's slots (`[0, SLOTS_PER_SHARD)`).
pub(crate) fn sub_slot(slot: u16) -> usize {
    usize::from(slot) / SHARDS
}

/// The hash slot at `sub` of shard `shard` (the inverse of [`shard_of_slot`], [`sub_slot`]).
pub(crate) fn slot_at(shard: usize, sub: usize) -> u16 {
    (sub * SHARDS + shard) as u16
}

/// Counters that are bumped under the shard lock and summed by `Store::stats`.
/// In declaration order (`repr(C)`): the two every read bumps first, near the hot fields
/// of [`Shard`].
#[derive(Default, Clone, Copy)]
#[repr(C)]
pub(crate) struct ShardStats {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) expired: u64,
    pub(crate) evicted: u64,
    /// Of `expired`, the keys found expired by a command's lookup (memcached's `get_expired`).
    pub(crate) expired_on_access: u64,
    /// Of `expired` and `evicted`, the items never read (memcached's `expired_unfetched`,
    /// `evicted_unfetched`).
    pub(crate) expired_unfetched: u64,
    pub(crate) evicted_unfetched: u64,
    /// Writes that changed a key's value, TTL or presence here, one per key a command
    /// changed (Redis's `dirty`, which INFO shows as `rdb_changes_since_last_save`).
    pub(crate) changes: u64,
}

impl ShardStats {
    /// Counts `item`, just removed as expired.
    pub(crate) fn count_expired(&mut self, item: &Item) {
        self.expired += 1;
        self.expired_unfetched += u64::from(!item.fetched());
    }

    /// Counts `item`, just evicted.
    pub(crate) fn count_evicted(&mut self, item: &Item) {
        self.evicted += 1;
        self.evicted_unfetched += u64::from(!item.fetched());
    }
}

/// Fields in declaration order (`repr(C)`): what every lookup touches (the lock before
/// them, the items, the index, the counters a read bumps) and then what a write of an
/// existing key does (the version clock, the tombstones' check) in the cell's first three
/// cache lines, which `Store::prefetch` loads; the rest after.
#[derive(Default)]
#[repr(C)]
pub(crate) struct Shard {
    /// Dense storage: removal is `swap_remove`, random sampling is a random index.
    pub(crate) items: Vec<Item>,
    /// The thread that took the lock last ([`crate::Contention`]; 0: none yet).
    pub(crate) holder: u32,
    /// Items with a TTL.
    pub(crate) volatile: usize,
    /// Σ `Item::charge` of `items`.
    pub(crate) used: u64,
    /// Indices into `items`, hashed by key.
    table: HashTable<u32>,
    pub(crate) stats: ShardStats,
    /// The last version handed out or seen in a replicated state (see `next_version`).
    last_version: u64,
    /// Versions handed out for writes that stood (`next_version`, less the ones an edit
    /// that changed nothing gave back): what [`crate::Store::write`] counts changes by.
    pub(crate) bumps: u64,
    /// This shard's place in the low bits of a version taken from the clock
    /// ([`Shard::with_index`]), so two shards' first writes in one millisecond differ.
    spread: u64,
    /// Removed keys, while replication needs them (empty unless the store's tombstone TTL is
    /// set). A key never has both an item and a tombstone: `insert` drops the tombstone.
    pub(crate) tombs: Tombstones,
    /// `(expire_at_ms, key hash)` of volatile keys, min first. Items go stale when a key is
    /// removed or its TTL changes; they are checked on pop and the heap is rebuilt when stale
    /// items outnumber live ones.
    expiry: BinaryHeap<Reverse<(u64, u64)>>,
    /// Keys per hash slot held by this shard (indexed by slot / SHARDS), for `COUNTKEYSINSLOT`.
    pub(crate) slot_counts: [u32; SLOTS_PER_SHARD],
    /// Memcached's revalidation marks ([`crate::Marks`]) of the few items that have any, by
    /// key hash: `(version, marks)`, valid while the item keeps that version (so any new
    /// value clears them, and a removed key's entry is ignored, then dropped).
    pub(crate) marks: hashbrown::HashMap<u64, (u64, u8), FixedState>,
}

/// Most items with [`crate::Marks`] per shard; past it the marks of items no longer there
/// (or changed) are dropped, and if that frees none, no new mark is taken
/// ([`crate::Slot::set_marks`] says so, and the caller deletes the item instead).
pub(crate) const MARKS_MAX: usize = 256;

impl Shard {
    /// Shard `idx` of the store, empty. Its versions start at `(ms << 12) | idx << 2`: keys in
    /// different shards written in the same millisecond get different versions, as memcached's
    /// CAS uniques differ between keys, unless a shard's fifth write in that millisecond
    /// reaches the next shard's start (a key's own versions grow either way).
    pub(crate) fn with_index(idx: usize) -> Shard {
        Shard {
            spread: ((idx % SHARDS) as u64) << 2,
            ..Shard::default()
        }
    }

    /// The key index's room (keys it takes before it grows) and its size in bytes.
    pub(crate) fn index_size(&self) -> (usize, usize) {
        (self.table.capacity(), self.table.allocation_size())
    }

    /// Index of `key`, expired or not.
    pub(crate) fn find(&self, key: &[u8], hash: u64) -> Option<usize> {
        let items = &self.items;
        self.table
            .find(hash, |&i| items[i as usize].key() == key)
            .map(|&i| i as usize)
    }

    /// Where a key of this hash likely is (the first entry whose hash bits match; the key
    /// is not compared, which would wait for its allocation), with the load of its record
    /// started: the first step of [`crate::Store::prefetch`].
    pub(crate) fn hint_record(&self, hash: u64) -> Option<u32> {
        let items = &self.items;
        self.table
            .find(hash, |&i| {
                if let Some(item) = items.get(i as usize) {
                    crate::hint::prefetch(item);
                }
                true
            })
            .copied()
    }

    /// Starts the load of the allocation of the item at `idx` (whose record
    /// [`Shard::hint_record`] asked for): the second step of [`crate::Store::prefetch`].
    pub(crate) fn hint_data(&self, idx: u32) {
        if let Some(item) = self.items.get(idx as usize) {
            item.hint();
        }
    }

    /// Index of `key` if it is live; an expired entry is removed and counted as expired.
    pub(crate) fn lookup(
        &mut self,
        hasher: &FixedState,
        noted: &NoteLog,
        key: &[u8],
        hash: u64,
        now_ms: u64,
    ) -> Option<usize> {
        let i = self.find(key, hash)?;
        if self.items[i].is_expired(now_ms) {
            let item = self.remove_at(hasher, i);
            self.stats.count_expired(&item);
            self.stats.expired_on_access += 1;
            noted.note(key, Noted::Expired);
            return None;
        }
        Some(i)
    }

    /// Index of `key` if it is live; an expired entry stays (`Store::hold_expiry`).
    pub(crate) fn find_live(&self, key: &[u8], hash: u64, now_ms: u64) -> Option<usize> {
        self.find(key, hash)
            .filter(|&i| !self.items[i].is_expired(now_ms))
    }

    /// Add a new item (the key MUST be absent), dropping its tombstone; returns its index.
    pub(crate) fn insert(&mut self, hasher: &FixedState, hash: u64, item: Item) -> usize {
        if !self.tombs.is_empty() {
            self.tombs.remove(item.key(), hash);
        }
        let idx = self.items.len();
        let idx32 = u32::try_from(idx).expect("a shard holds fewer than 2^32 keys");
        self.used += item.charge();
        self.slot_counts[sub_slot(key_slot(item.key()))] += 1;
        let at = item.expire_at_ms();
        self.items.push(item);
        let items = &self.items;
        self.table
            .insert_unique(hash, idx32, |&i| hasher.hash_one(items[i as usize].key()));
        // After the item is in: the push may rebuild the heap, which keeps only entries
        // of items it finds.
        if at != 0 {
            self.volatile += 1;
            self.push_expiry(at, hash);
        }
        idx
    }

    /// Remove the item at `idx`; the last item moves into its place.
    pub(crate) fn remove_at(&mut self, hasher: &FixedState, idx: usize) -> Item {
        let hash = hasher.hash_one(self.items[idx].key());
        match self.table.find_entry(hash, |&i| i as usize == idx) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => unreachable!("the table indexes every item"),
        }
        let item = self.items.swap_remove(idx);
        if idx < self.items.len() {
            let moved_from = self.items.len() as u32;
            let moved_hash = hasher.hash_one(self.items[idx].key());
            let slot = self
                .table
                .find_mut(moved_hash, |&i| i == moved_from)
                .expect("the table indexes every item");
            *slot = idx as u32;
        }
        self.used -= item.charge();
        self.slot_counts[sub_slot(key_slot(item.key()))] -= 1;
        // Give memory back after mass removals, as Redis shrinks its dicts.
        let len = self.items.len();
        if self.items.capacity() > 64 && len < self.items.capacity() / 4 {
            self.items.shrink_to(len * 2);
            let items = &self.items;
            self.table
                .shrink_to(len * 2, |&i| hasher.hash_one(items[i as usize].key()));
        }
        if item.expire_at_ms() != 0 {
            self.volatile -= 1;
        }
        item
    }

    /// Replaces the value (and the flags when `Some`) and sets the item's version: a fresh
    /// `next_version` for a local write, the replicated one for an applied state.
    pub(crate) fn replace_value(
        &mut self,
        idx: usize,
        value: &[u8],
        flags: Option<u32>,
        version: u64,
    ) {
        let item = &mut self.items[idx];
        self.used -= item.charge();
        item.replace_value(value, flags);
        item.version = version;
        item.set_fetched(false);
        self.used += item.charge();
    }

    /// Makes the item at `idx` the collection `value`, with `version`.
    pub(crate) fn replace_coll(&mut self, idx: usize, value: crate::Collection, version: u64) {
        let item = &mut self.items[idx];
        self.used -= item.charge();
        item.replace_with_coll(value);
        item.version = version;
        item.set_fetched(false);
        self.used += item.charge();
    }

    /// Edits the item at `idx` in place with a new version, keeping the byte accounting.
    pub(crate) fn edit(&mut self, idx: usize, now_ms: u64, f: impl FnOnce(&mut Item)) {
        let old = self.items[idx].version;
        let version = self.next_version(Some(old), now_ms);
        let item = &mut self.items[idx];
        self.used -= item.charge();
        f(item);
        item.version = version;
        item.set_fetched(false);
        self.used += item.charge();
    }

    /// A version greater than every one this shard handed out, near `now_ms << 12` (a hybrid
    /// logical clock: wall time in the high bits, a counter below for many writes in one ms).
    /// A key always lives in one shard, so its versions strictly grow.
    /// `old` is the key's version before this write (`None`: a new key), noted for
    /// [`crate::record_writes`]; a version forced there is taken instead of the clock's.
    pub(crate) fn next_version(&mut self, old: Option<u64>, now_ms: u64) -> u64 {
        self.bumps += 1;
        let forced = RECORDING.with(|r| {
            let mut rec = r.get();
            let forced = if rec.on { rec.forced.take() } else { None };
            if rec.on {
                rec.count += 1;
                if rec.count == 1 {
                    rec.base = old;
                }
            }
            r.set(rec);
            forced
        });
        let v = match forced {
            Some(v) => {
                self.last_version = self.last_version.max(v);
                v
            }
            None => {
                let v = (self.last_version + 1).max((now_ms << 12) | self.spread);
                self.last_version = v;
                v
            }
        };
        RECORDING.with(|r| {
            let mut rec = r.get();
            if rec.on {
                rec.new = v;
            }
            r.set(rec);
        });
        v
    }

    /// The greatest version this shard handed out or saw.
    pub(crate) fn clock(&self) -> u64 {
        self.last_version
    }

    /// Raise the clock past a version seen in a replicated state or tombstone, so every later
    /// local write orders after it (a replica promoted to owner keeps versions growing).
    pub(crate) fn observe_version(&mut self, version: u64) {
        self.last_version = self.last_version.max(version);
    }

    /// Set the TTL of the item at `idx` (0 = none).
    pub(crate) fn set_expire(&mut self, idx: usize, hash: u64, at: u64) {
        let old = self.items[idx].expire_at_ms();
        if old == at {
            return;
        }
        self.items[idx].set_expire_at_ms(at);
        match (old, at) {
            (0, _) => self.volatile += 1,
            (_, 0) => self.volatile -= 1,
            _ => {}
        }
        if at != 0 {
            self.push_expiry(at, hash);
        }
    }

    fn push_expiry(&mut self, at: u64, hash: u64) {
        self.expiry.push(Reverse((at, hash)));
        if self.expiry.len() > 2 * self.volatile + 64 {
            self.rebuild_expiry();
        }
    }

    /// Drops the heap's stale entries: those no item's expiry time matches any more, and
    /// duplicates. Every volatile item has an entry (`insert` and `set_expire` push one), so
    /// what is kept still covers them all. It looks up the heap's entries rather than walking
    /// the items, which would read every item's allocation for its time.
    fn rebuild_expiry(&mut self) {
        let mut heap = std::mem::take(&mut self.expiry).into_vec();
        heap.sort_unstable();
        heap.dedup();
        heap.retain(|&Reverse((at, hash))| {
            self.table
                .iter_hash(hash)
                .any(|&i| self.items[i as usize].expire_at_ms() == at)
        });
        self.expiry = BinaryHeap::from(heap);
    }

    /// Earliest expiry time in the heap (a lower bound: the top may be stale) or, earlier,
    /// the deadline at the front of the tombstone queue; `u64::MAX` if none.
    pub(crate) fn next_expiry(&self) -> u64 {
        let keys = self.expiry.peek().map_or(u64::MAX, |Reverse((at, _))| *at);
        if self.tombs.is_empty() {
            keys
        } else {
            keys.min(self.tombs.next_deadline())
        }
    }

    /// Active expiry: remove up to about `max` due keys; returns how many were removed.
    pub(crate) fn pop_expired(
        &mut self,
        hasher: &FixedState,
        noted: &NoteLog,
        now_ms: u64,
        max: usize,
    ) -> usize {
        let mut removed = 0;
        while removed < max {
            match self.expiry.peek() {
                Some(&Reverse((at, hash))) if at <= now_ms => {
                    self.expiry.pop();
                    // Every due key among the candidates for this hash; a stale item finds none.
                    loop {
                        let items = &self.items;
                        let due = self
                            .table
                            .iter_hash(hash)
                            .map(|&i| i as usize)
                            .find(|&i| items[i].is_expired(now_ms));
                        let Some(idx) = due else { break };
                        let item = self.remove_at(hasher, idx);
                        self.stats.count_expired(&item);
                        noted.note(item.key(), Noted::Expired);
                        removed += 1;
                    }
                }
                _ => break,
            }
        }
        removed
    }

    /// Call `f` with indices of up to about `samples` volatile items, drawn from the expiry heap
    /// (all of them when the heap is small). Falls back to walking `items` when every drawn heap
    /// item was stale, so a shard with volatile keys always yields at least one.
    pub(crate) fn sample_volatile(&self, samples: usize, mut f: impl FnMut(usize)) {
        let heap = self.expiry.as_slice();
        let mut found = 0;
        let mut visit = |hash: u64, f: &mut dyn FnMut(usize)| {
            for &i in self.table.iter_hash(hash) {
                if self.items[i as usize].expire_at_ms() != 0 {
                    f(i as usize);
                    found += 1;
                }
            }
        };
        if samples >= heap.len() {
            for &Reverse((_, hash)) in heap {
                visit(hash, &mut f);
            }
        } else {
            for _ in 0..samples {
                let Reverse((_, hash)) = heap[crate::rng::below(heap.len())];
                visit(hash, &mut f);
            }
        }
        if found == 0 && self.volatile > 0 {
            let len = self.items.len();
            let start = crate::rng::below(len);
            let mut taken = 0;
            for k in 0..len {
                let i = (start + k) % len;
                if self.items[i].expire_at_ms() != 0 {
                    f(i);
                    taken += 1;
                    if taken >= samples.max(1) {
                        break;
                    }
                }
            }
        }
    }

    /// Drop every key and tombstone, keeping the statistics and the version clock (versions
    /// never repeat: a client may hold a CAS unique from before the flush).
    pub(crate) fn clear(&mut self) {
        *self = Shard {
            stats: self.stats,
            last_version: self.last_version,
            spread: self.spread,
            holder: self.holder,
            ..Shard::default()
        };
    }

    /// Drops the marks of items no longer there or changed since (see [`MARKS_MAX`]).
    pub(crate) fn prune_marks(&mut self) {
        let (items, table) = (&self.items, &self.table);
        self.marks.retain(|&hash, &mut (version, _)| {
            table
                .iter_hash(hash)
                .any(|&i| items[i as usize].version == version)
        });
    }

    pub(crate) fn count_in_slot(&self, slot: u16) -> usize {
        self.slot_counts[sub_slot(slot)] as usize
    }

    /// Forgets every item whose slot `drop` marks (indexed by [`sub_slot`]), in one walk;
    /// returns how many went.
    pub(crate) fn drop_sub_slots(
        &mut self,
        hasher: &FixedState,
        drop: &[bool; SLOTS_PER_SHARD],
    ) -> usize {
        let wanted = (0..SLOTS_PER_SHARD).any(|sub| drop[sub] && self.slot_counts[sub] > 0);
        if !wanted {
            return 0;
        }
        let mut dropped = 0;
        let mut i = 0;
        while i < self.items.len() {
            if drop[sub_slot(key_slot(self.items[i].key()))] {
                self.remove_at(hasher, i);
                dropped += 1;
            } else {
                i += 1;
            }
        }
        dropped
    }
}

/// What [`crate::record_writes`] notes of the writes on this thread.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Recording {
    pub(crate) on: bool,
    pub(crate) count: u32,
    pub(crate) base: Option<u64>,
    pub(crate) new: u64,
    pub(crate) forced: Option<u64>,
}

thread_local! {
    pub(crate) static RECORDING: std::cell::Cell<Recording> =
        const { std::cell::Cell::new(Recording { on: false, count: 0, base: None, new: 0, forced: None }) };
}

/// Takes back the last version noted by [`Shard::next_version`] (an edit that changed
/// nothing keeps its version: it was no write).
pub(crate) fn unnote_version() {
    RECORDING.with(|r| {
        let mut rec = r.get();
        if rec.on && rec.count > 0 {
            rec.count -= 1;
            if rec.count == 0 {
                rec.base = None;
                rec.new = 0;
            }
        }
        r.set(rec);
    });
}
