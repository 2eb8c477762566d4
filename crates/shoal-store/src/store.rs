//! [`Store`]: 1024 mutex-guarded shards plus global atomics for the figures read on every write
//! (`used_memory`, key counts) and for the configuration.

use std::hash::BuildHasher;
use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
};

use bytes::Bytes;
use foldhash::fast::FixedState;

use crate::entry::Collection;
use crate::entry::{Clock, Item, Kind};
use crate::evict::{evict_one, EvictionPolicy, Victim};
use crate::hash::Hash;
use crate::list::List;
use crate::rng;
use crate::set::Set;
use crate::shard::{shard_of_slot, slot_at, sub_slot, Shard, SHARDS, SLOTS_PER_SHARD};
use crate::slot::{key_slot, SLOTS};
use crate::stream::Stream;
use crate::zset::ZSet;

/// Store configuration; every field can be changed at run time through the `Store` setters.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Bytes (see [`Store::used_memory`]); 0 = unlimited.
    pub maxmemory: u64,
    pub policy: EvictionPolicy,
    /// Keys sampled per eviction (`maxmemory-samples`).
    pub samples: usize,
    /// `lfu-log-factor`: higher makes the LFU counter grow more slowly.
    pub lfu_log_factor: u32,
    /// `lfu-decay-time`: minutes per decrement of an idle key's LFU counter; 0 = never.
    pub lfu_decay_time: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            maxmemory: 0,
            policy: EvictionPolicy::AllKeysLru,
            samples: 5,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
        }
    }
}

/// How a read counts as an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A command read (GET): touch LRU/LFU and count a keyspace hit or miss.
    Read,
    /// A Memcached read (get, gets): [`Access::Read`], and the item counts as fetched
    /// (`mg`'s `h`). Not RESP's reads: marking every GET costs it about 7 % of its CPU at
    /// pipeline 16, for a flag only Memcached shows.
    Fetch,
    /// Touch LRU/LFU only (a read inside a write).
    Touch,
    /// Count a keyspace hit or miss, but leave LRU/LFU (EXISTS, TYPE, TTL: Redis's
    /// `LOOKUP_NOTOUCH`).
    Inspect,
    /// Count a keyspace hit or miss without a `keymiss` or touching (OBJECT: Redis's
    /// `LOOKUP_NOTOUCH | LOOKUP_NONOTIFY`).
    Count,
    /// Neither (OBJECT, DEBUG, a read inside a write).
    Peek,
}

/// An entry seen under its shard's lock: live, or (for [`Store::read_raw`]) one whose time
/// is up and that is still held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub value: &'a [u8],
    /// Unix ms, `None` for a persistent key.
    pub expire_at_ms: Option<u64>,
    /// Changes with every change of the key (Memcached's CAS unique).
    pub version: u64,
    /// Client flags set through the Memcached protocol (0 otherwise).
    pub flags: u32,
    /// Bytes the entry counts for in `used_memory` (MEMORY USAGE).
    pub charge: u64,
    /// The raw access word (LRU clock or LFU counter); read it with
    /// [`Store::idle_ms`] / [`Store::lfu_frequency`].
    pub access: u32,
    /// Whether the value was read since it was set (memcached's `ITEM_FETCHED`).
    pub fetched: bool,
    /// Whether the string was edited in place since its value was set (APPEND, SETRANGE,
    /// the bit commands): OBJECT ENCODING `raw`, as Redis.
    pub edited: bool,
    /// The value's type; `value` is empty for a collection.
    pub kind: Kind,
    /// The value, for a collection.
    pub coll: Option<&'a Collection>,
}

impl<'a> Entry<'a> {
    /// The value, for a hash.
    pub fn hash(&self) -> Option<&'a Hash> {
        match self.coll {
            Some(Collection::Hash(h)) => Some(h),
            _ => None,
        }
    }

    /// The value, for a set.
    pub fn set(&self) -> Option<&'a Set> {
        match self.coll {
            Some(Collection::Set(s)) => Some(s),
            _ => None,
        }
    }

    /// The value, for a sorted set.
    pub fn zset(&self) -> Option<&'a ZSet> {
        match self.coll {
            Some(Collection::ZSet(z)) => Some(z),
            _ => None,
        }
    }

    /// The value, for a list.
    pub fn list(&self) -> Option<&'a List> {
        match self.coll {
            Some(Collection::List(l)) => Some(l),
            _ => None,
        }
    }

    /// The value, for a stream.
    pub fn stream(&self) -> Option<&'a Stream> {
        match self.coll {
            Some(Collection::Stream(s)) => Some(s),
            _ => None,
        }
    }
}

/// What the store knows of one key, for replication: an owner reads it with
/// [`Store::key_state`] after a write and sends it; a replica hands it to [`Store::apply`].
///
/// States of one key are ordered by version, last writer wins; at equal versions a deletion
/// wins over a live value (`Deleted { version: v }` removes a live item at `v`, and
/// `Live { version: v, .. }` is refused by a tombstone at `v`). A local store never issues one
/// version twice, so such a tie only arises from two owners' clocks colliding, and the rule
/// makes every replica settle on the same state whatever order the messages arrive in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyState {
    /// A live key. `expire_at_ms`: Unix ms, 0 = no TTL. `value`: a string's bytes, or a
    /// collection in its replication form ([`Collection::encode`]).
    Live {
        kind: Kind,
        value: Bytes,
        flags: u32,
        expire_at_ms: u64,
        version: u64,
    },
    /// Removed by a write (DEL, GETDEL, SET with a past expiry, ...) at `version`, and the
    /// tombstone is still kept.
    Deleted { version: u64 },
    /// Neither a live key nor a tombstone.
    Absent,
}

/// `maxmemory` is exceeded and nothing may be evicted.
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
#[error("OOM command not allowed when used memory > 'maxmemory'.")]
pub struct OutOfMemory;

/// Items removed from the store and not freed yet ([`Store::take`],
/// [`Store::clear_into_garbage`]): dropping it frees them, on whichever thread drops it.
#[derive(Default)]
pub struct Garbage {
    /// One key's item ([`Store::take`], without an allocation of its own).
    one: Option<Item>,
    /// Items gathered one by one ([`Garbage::push`]).
    items: Vec<Item>,
    /// Whole shards' items ([`Store::clear_into_garbage`]).
    chunks: Vec<Vec<Item>>,
    keys: usize,
    effort: usize,
}

impl Garbage {
    /// Adds `other`'s items to these.
    pub fn push(&mut self, other: Garbage) {
        self.keys += other.keys;
        self.effort += other.effort;
        self.items.extend(other.one);
        self.items.extend(other.items);
        self.chunks.extend(other.chunks);
    }

    /// The keys it holds.
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// What freeing it costs, in Redis's units (one per element of a large collection, 1
    /// for a string or a compact collection).
    pub fn effort(&self) -> usize {
        self.effort
    }
}

/// Figures for `INFO` (`keyspace_hits`, `expired_keys`, ...).
#[derive(Clone, Copy, Debug, Default)]
pub struct StoreStats {
    pub keys: u64,
    pub volatile_keys: u64,
    pub used_memory: u64,
    pub expired_keys: u64,
    pub evicted_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    /// Of `expired_keys`, those a command's lookup found expired.
    pub expired_on_access: u64,
    /// Of `expired_keys` and `evicted_keys`, the keys never read since their last value.
    pub expired_unfetched: u64,
    pub evicted_unfetched: u64,
    /// Changes of a key's value, TTL or presence since the start: every write that took a
    /// new version, every TTL set or removed, every key removed by a command (Redis's
    /// `dirty`, counted per key rather than per element).
    pub changes: u64,
    /// The key index: room for this many keys before it grows, in this many bytes.
    pub index_capacity: u64,
    pub index_bytes: u64,
}

/// A shard with the lock-free hints that let scans and sampling skip it without locking (active
/// expiry's is `Store::next_expiry`). Aligned so two shards' locks never share a cache line
/// (128: adjacent-line prefetch).
#[repr(align(128))]
#[derive(Default)]
struct ShardCell {
    /// `parking_lot`'s: with many clients on one hot key the two workers hand this lock
    /// over all the time, and its spin-then-park costs less there than `std`'s (server CPU
    /// per request at pipeline 16, five alternating runs: LPUSH 18 % less, SADD 10 % less,
    /// ZADD 4 % more, HSET, GET and SET even). No poisoning: a closure that panics leaves
    /// the shard consistent between our own operations, so it keeps serving.
    shard: parking_lot::Mutex<Shard>,
    /// Copies of the shard's key count and volatile count, written under the lock after
    /// every operation that changed them.
    len: AtomicU32,
    volatile: AtomicU32,
}

/// Most keys [`Store::prefetch`] looks at in one call.
pub const PREFETCH_MAX: usize = 16;

/// State shared by all shards.
struct Shared {
    /// Keyed by a random seed per store (`rng::seed`), so clients cannot pick keys that
    /// collide.
    hasher: FixedState,
    maxmemory: AtomicU64,
    /// What the process holds besides the keys exceeds `maxmemory` on its own
    /// ([`Store::set_overfull`]).
    overfull: AtomicBool,
    policy: AtomicU8,
    samples: AtomicUsize,
    lfu_log_factor: AtomicU32,
    lfu_decay_time: AtomicU32,
    used: AtomicU64,
    keys: AtomicU64,
    volatile: AtomicU64,
    /// Milliseconds a removal's tombstone is kept; 0 = none recorded (single node).
    tombstone_ttl: AtomicU64,
    /// Shard where the last `expire_cycle` stopped.
    expire_cursor: AtomicUsize,
    /// `apply` refuses states older than these, one per database (set by FLUSHALL, and
    /// FLUSHDB for its database, in a cluster).
    apply_floor: [AtomicU64; DATABASES],
    /// A key of a database other than 0 was stored here once (by a command, replication,
    /// hand-off or fetch): listings must then tell the databases apart.
    numbered: AtomicBool,
    /// Until when (Unix ms) the keyspace stays as it is: no key expires or is evicted
    /// (`Store::hold_expiry`).
    held_until: AtomicU64,
    /// Keys expired, evicted, created or missed, while noted (`Store::note_key_events`).
    noted: crate::noted::NoteLog,
    /// Reads the process's memory again and sets `maxmemory` from it (the engine's, see
    /// [`Store::set_remeasure`]); when it last ran (Unix ms).
    remeasure: std::sync::OnceLock<Remeasure>,
    remeasured_at: AtomicU64,
}

/// Re-reads the process's memory and sets the store's limit ([`Store::set_remeasure`]).
pub type Remeasure = Box<dyn Fn() + Send + Sync>;

/// Least time between two remeasures before evicting (ms).
const REMEASURE_EVERY_MS: u64 = 10;

/// The shard locks this thread took over from another thread since [`take_contention`]
/// last ran: a key that connections on several threads work on at once makes its shard's
/// lock, and its data, change threads for nearly every command (`shoal_node::workers`
/// moves such keys' connections to one thread). Only a run of hand-overs of one shard
/// counts, so keys spread over many shards never add up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Contention {
    /// Hand-overs of `shard`, counted since they moved to it.
    pub handovers: u32,
    /// The shard of the last hand-over (`key_slot % 1024`).
    pub shard: u16,
    /// Transactions (EXEC, scripts) this thread ran with every other thread kept out
    /// ([`crate::gate`]): threads that run them side by side keep waking each other.
    pub exclusive: u32,
}

impl Contention {
    /// Counts a hand-over of shard `shard`: one of another shard starts the count again.
    fn note(self, shard: u16) -> Contention {
        let handovers = if shard == self.shard {
            self.handovers
        } else {
            0
        };
        Contention {
            handovers: handovers.saturating_add(1),
            shard,
            exclusive: self.exclusive,
        }
    }
}

thread_local! {
    static CONTENTION: std::cell::Cell<Contention> = const {
        std::cell::Cell::new(Contention { handovers: 0, shard: 0, exclusive: 0 })
    };
    /// This thread's tag in [`Shard::holder`] (0: not drawn yet).
    static THREAD_TAG: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// This thread's tag, drawn on first use (never 0).
fn thread_tag() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    THREAD_TAG.with(|t| match t.get() {
        0 => {
            let tag = NEXT.fetch_add(1, Relaxed).max(1);
            t.set(tag);
            tag
        }
        tag => tag,
    })
}

/// The hand-overs and transactions this thread counted since the last call (and starts
/// a new count).
pub fn take_contention() -> Contention {
    Contention {
        exclusive: crate::gate::take_exclusive(),
        ..CONTENTION.with(|c| c.take())
    }
}

thread_local! {
    /// Inside [`without_touching`].
    static UNTOUCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn untouched() -> bool {
    UNTOUCHED.with(std::cell::Cell::get)
}

/// Runs `f` with the keys it reads or writes on this thread keeping their LRU/LFU clocks
/// (CLIENT NO-TOUCH); hits and misses still count. A key `f` creates starts its clock as
/// any new key.
pub fn without_touching<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            UNTOUCHED.with(|u| u.set(self.0));
        }
    }
    let _restore = Restore(UNTOUCHED.with(|u| u.replace(true)));
    f()
}

/// The versions the writes of one [`record_writes`] call took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    /// How many versions were handed out.
    pub count: u32,
    /// The key's version before the first (`None`: the first created the key).
    pub base: Option<u64>,
    /// The last version handed out.
    pub new: u64,
}

/// Runs `f` and notes the versions its store writes take on this thread (a replication
/// delta is only right for exactly one write on the version its replica holds); with
/// `forced`, the first write takes that version instead of the shard clock's (a replica
/// applying a delta gives the key the owner's version). Not reentrant.
pub fn record_writes<R>(forced: Option<u64>, f: impl FnOnce() -> R) -> (R, Writes) {
    use crate::shard::{Recording, RECORDING};
    /// Turns the recording off however `f` ends (a panic included), so no later write on
    /// this thread is noted or takes the forced version.
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            RECORDING.with(|r| r.set(Recording::default()));
        }
    }
    RECORDING.with(|r| {
        r.set(Recording {
            on: true,
            forced,
            ..Recording::default()
        })
    });
    let off = Off;
    let out = f();
    let rec = RECORDING.with(|r| r.get());
    drop(off);
    (
        out,
        Writes {
            count: rec.count,
            base: rec.base,
            new: rec.new,
        },
    )
}

/// Databases a stored key may belong to (its prefix's number, `slot::split_key`).
pub const DATABASES: usize = 16;

impl Shared {
    fn policy(&self) -> EvictionPolicy {
        EvictionPolicy::from_u8(self.policy.load(Relaxed))
    }

    fn clock(&self, now_ms: u64) -> Clock {
        Clock {
            lfu: self.policy().is_lfu(),
            now_ms,
            lfu_log_factor: self.lfu_log_factor.load(Relaxed),
            lfu_decay_time: self.lfu_decay_time.load(Relaxed),
        }
    }
}

/// The keyspace. `Send + Sync`; every method takes `&self` and locks at most one shard at a
/// time, briefly. Closures passed to [`Store::read`], [`Store::write`], [`Store::scan`] and the
/// slot iterators run under a shard lock: they MUST NOT call back into the store.
pub struct Store {
    cells: Box<[ShardCell]>,
    /// Each shard's earliest heap expiry or tombstone deadline (`u64::MAX`: none), written
    /// under its lock when it changes. Apart from the cells, so that the expiry cycle reads
    /// 8 KB in a row instead of one line of each cell (a line the workers write), and a
    /// write that leaves it alone does not write it.
    next_expiry: Box<[AtomicU64]>,
    shared: Shared,
    /// Commands enter it; EXEC runs alone in it (`gate`).
    gate: crate::gate::Gate,
}

/// One key's place in the store, under its shard's lock. An expired entry has already been
/// removed (and counted as expired), so it reads as absent.
pub struct Slot<'a> {
    shard: &'a mut Shard,
    shared: &'a Shared,
    key: &'a [u8],
    hash: u64,
    idx: Option<usize>,
    clock: Clock,
    /// A TTL was set or removed, the key removed or its bytes patched (a new value shows in
    /// the shard's `bumps`): [`Store::write`] counts the change.
    changed: bool,
}

impl<'a> Slot<'a> {
    /// `key`'s place in its locked shard; an expired entry is removed first (and counted).
    fn open(
        shard: &'a mut Shard,
        shared: &'a Shared,
        key: &'a [u8],
        hash: u64,
        now_ms: u64,
    ) -> Slot<'a> {
        let idx = shard.lookup(&shared.hasher, &shared.noted, key, hash, now_ms);
        Slot {
            shard,
            shared,
            key,
            hash,
            idx,
            clock: shared.clock(now_ms),
            changed: false,
        }
    }

    /// Stores a new item for this slot's key (noting a numbered database's key).
    fn insert_item(&mut self, item: Item) {
        if crate::slot::split_key(self.key).0 != 0 {
            self.shared.numbered.store(true, Relaxed);
        }
        self.idx = Some(self.shard.insert(&self.shared.hasher, self.hash, item));
    }

    /// [`Slot::insert_item`] for a command's write, noted as created (a replicated state is
    /// not: the owner's command noted it).
    fn create_item(&mut self, item: Item) {
        self.insert_item(item);
        self.shared.noted.note(self.key, crate::Noted::Created);
    }

    pub fn key(&self) -> &[u8] {
        self.key
    }

    /// Sets the key's access clock as a new key's, or as RESTORE's IDLETIME (under any policy
    /// but LFU: last accessed `idle_ms` ago) or FREQ (under an LFU policy: that counter) ask;
    /// the other family's figure is ignored, as in Redis. Run the write under
    /// [`without_touching`] so that its end does not touch the key again.
    pub fn set_access(&mut self, idle_ms: Option<u64>, freq: Option<u8>) {
        let Some(i) = self.idx else { return };
        let access = &mut self.shard.items[i].access;
        *access = match (self.clock.lfu, idle_ms, freq) {
            (true, _, Some(f)) => self.clock.lfu_with(f),
            (false, Some(idle), _) => self.clock.lru_aged(idle),
            _ => self.clock.initial(),
        };
    }

    /// Counts this look at the key as a command's read (Redis's `lookupKeyRead` inside a
    /// write: GETSET, GETDEL, GETEX, SET ... GET, COPY's source): a keyspace hit or miss,
    /// and a miss noted for `keymiss`.
    pub fn count_read(&mut self) {
        if self.idx.is_some() {
            self.shard.stats.hits += 1;
        } else {
            self.shard.stats.misses += 1;
            self.shared.noted.note(self.key, crate::Noted::Missed);
        }
    }

    /// The key's string value: `None` when it is absent or holds another type (check
    /// [`Slot::kind`] to tell them apart).
    pub fn value(&self) -> Option<&[u8]> {
        self.idx
            .filter(|&i| self.shard.items[i].kind() == Kind::String)
            .map(|i| self.shard.items[i].value())
    }

    pub fn expire_at(&self) -> Option<u64> {
        self.idx.and_then(|i| self.shard.items[i].expire_at())
    }

    pub fn exists(&self) -> bool {
        self.idx.is_some()
    }

    /// Memcached's revalidation marks of the key's current value (none for a new value).
    pub fn marks(&self) -> crate::Marks {
        let Some(i) = self.idx else {
            return crate::Marks::default();
        };
        let version = self.shard.items[i].version;
        match self.shard.marks.get(&self.hash) {
            Some(&(v, bits)) if v == version => crate::Marks::from_bits(bits),
            _ => crate::Marks::default(),
        }
    }

    /// Sets the marks of the key's current value (nothing for an absent key); false when
    /// its shard holds as many marked items as it may (the marks are not kept: a stale
    /// value should then go, as a miss is safe where a stale value read as fresh is not).
    pub fn set_marks(&mut self, marks: crate::Marks) -> bool {
        let Some(i) = self.idx else { return true };
        let version = self.shard.items[i].version;
        if marks == crate::Marks::default() {
            self.shard.marks.remove(&self.hash);
            return true;
        }
        let hash = self.hash;
        let full = |s: &crate::shard::Shard| {
            s.marks.len() >= crate::shard::MARKS_MAX && !s.marks.contains_key(&hash)
        };
        if full(self.shard) {
            self.shard.prune_marks();
            if full(self.shard) {
                return false;
            }
        }
        self.shard.marks.insert(hash, (version, marks.bits()));
        true
    }

    /// Gives the key's value a new version (a new CAS unique) without changing it, as
    /// memcached's `md ... I` does when it marks an item stale.
    pub fn renew_version(&mut self) {
        let Some(i) = self.idx else { return };
        let now = self.clock.now_ms;
        let old = self.shard.items[i].version;
        self.shard.items[i].version = self.shard.next_version(Some(old), now);
    }

    /// Whether the key's value was read since it was set (memcached's `h` meta flag).
    pub fn fetched(&self) -> Option<bool> {
        self.idx.map(|i| self.shard.items[i].fetched())
    }

    /// Counts this look at the key as a read of its value ([`Slot::fetched`] from now on),
    /// unless the write runs [`without_touching`].
    pub fn note_fetch(&mut self) {
        if let (Some(i), false) = (self.idx, untouched()) {
            self.shard.items[i].set_fetched(true);
        }
    }

    /// Milliseconds since the key was last accessed (memcached's `l` meta flag, OBJECT
    /// IDLETIME), as its clock tells: to the minute under an LFU policy.
    pub fn idle_ms(&self) -> Option<u64> {
        self.idx
            .map(|i| self.clock.idle_ms(self.shard.items[i].access))
    }

    /// The key's version: it changes with every change of the key.
    pub fn version(&self) -> Option<u64> {
        self.idx.map(|i| self.shard.items[i].version)
    }

    /// The key's client flags (Memcached), 0 when never set.
    pub fn flags(&self) -> Option<u32> {
        self.idx.map(|i| self.shard.items[i].flags())
    }

    /// The type of the key's value, if it exists.
    pub fn kind(&self) -> Option<Kind> {
        self.idx.map(|i| self.shard.items[i].kind())
    }

    /// The key's collection, if it holds one.
    pub fn coll(&self) -> Option<&Collection> {
        self.idx.and_then(|i| self.shard.items[i].coll())
    }

    /// The key's hash, if it is one.
    pub fn hash(&self) -> Option<&Hash> {
        match self.coll() {
            Some(Collection::Hash(h)) => Some(h),
            _ => None,
        }
    }

    /// The key's set, if it is one.
    pub fn set_value(&self) -> Option<&Set> {
        match self.coll() {
            Some(Collection::Set(s)) => Some(s),
            _ => None,
        }
    }

    /// The key's stream, if it holds one.
    pub fn stream(&self) -> Option<&Stream> {
        match self.coll() {
            Some(Collection::Stream(s)) => Some(s),
            _ => None,
        }
    }

    /// Edits the key's collection, creating it with `create` (no TTL) when the key is absent;
    /// the caller checked that the key is absent or of `kind`, `create`'s (another value is
    /// replaced rather than panicking). `f` says whether it changed the collection: only a
    /// change takes a new version (WATCH and replication see it), and a collection left empty
    /// removes the key, as Redis removes empty collections.
    pub fn edit_coll<R>(
        &mut self,
        kind: Kind,
        create: impl FnOnce() -> Collection,
        f: impl FnOnce(&mut Collection) -> (R, bool),
    ) -> R {
        let now = self.clock.now_ms;
        let Some(i) = self.idx else {
            let mut c = create();
            let (r, changed) = f(&mut c);
            if changed && !c.is_empty() {
                let version = self.shard.next_version(None, now);
                let item = Item::new_coll(self.key, c, 0, self.clock.initial(), version);
                self.create_item(item);
            }
            return r;
        };
        // A new value only when the key holds another kind: the usual edit allocates none.
        if self.shard.items[i].kind() != kind {
            let version = self
                .shard
                .next_version(Some(self.shard.items[i].version), now);
            self.shard.replace_coll(i, create(), version);
        }
        let mut out = None;
        let mut changed = false;
        let edit = |item: &mut Item| {
            let c = item.coll_mut().expect("made a collection above");
            let (r, c) = f(c);
            out = Some(r);
            changed = c;
        };
        // The version changes only with the value: edit under a copy of the accounting.
        let before = self.shard.items[i].version;
        self.shard.edit(i, now, edit);
        let r = out.expect("the edit ran");
        if !changed {
            // Nothing changed: the key keeps its version, and the write is not one.
            self.shard.items[i].version = before;
            self.shard.bumps -= 1;
            crate::shard::unnote_version();
        } else if self.shard.items[i].coll().is_some_and(Collection::is_empty) {
            self.remove();
        }
        r
    }

    /// [`Slot::edit_coll`] for a hash (an absent key starts empty).
    pub fn edit_hash<R>(&mut self, f: impl FnOnce(&mut Hash) -> (R, bool)) -> R {
        self.edit_coll(
            Kind::Hash,
            || Collection::Hash(Hash::new()),
            |c| match c {
                Collection::Hash(h) => f(h),
                _ => unreachable!("edit_coll made it a hash"),
            },
        )
    }

    /// [`Slot::edit_coll`] for a set (an absent key starts as `create` makes it).
    pub fn edit_set<R>(
        &mut self,
        create: impl FnOnce() -> Set,
        f: impl FnOnce(&mut Set) -> (R, bool),
    ) -> R {
        self.edit_coll(
            Kind::Set,
            || Collection::Set(create()),
            |c| match c {
                Collection::Set(s) => f(s),
                _ => unreachable!("edit_coll made it a set"),
            },
        )
    }

    /// [`Slot::edit_coll`] for a sorted set (an absent key starts as `create` makes it).
    pub fn edit_zset<R>(
        &mut self,
        create: impl FnOnce() -> ZSet,
        f: impl FnOnce(&mut ZSet) -> (R, bool),
    ) -> R {
        self.edit_coll(
            Kind::ZSet,
            || Collection::ZSet(create()),
            |c| match c {
                Collection::ZSet(z) => f(z),
                _ => unreachable!("edit_coll made it a sorted set"),
            },
        )
    }

    /// [`Slot::edit_coll`] for a list (an absent key starts empty).
    pub fn edit_list<R>(&mut self, f: impl FnOnce(&mut List) -> (R, bool)) -> R {
        self.edit_coll(
            Kind::List,
            || Collection::List(List::new()),
            |c| match c {
                Collection::List(l) => f(l),
                _ => unreachable!("edit_coll made it a list"),
            },
        )
    }

    /// [`Slot::edit_coll`] for a stream (an absent key starts empty; a stream left empty
    /// stays, as in Redis).
    pub fn edit_stream<R>(&mut self, f: impl FnOnce(&mut Stream) -> (R, bool)) -> R {
        self.edit_coll(
            Kind::Stream,
            || Collection::Stream(Box::default()),
            |c| match c {
                Collection::Stream(s) => f(s),
                _ => unreachable!("edit_coll made it a stream"),
            },
        )
    }

    /// Create or replace the key's value with a collection, keeping its TTL (RENAME, COPY
    /// and the STORE commands set TTLs themselves); an empty one removes the key.
    pub fn set_coll(&mut self, value: Collection) {
        if value.is_empty() {
            self.remove();
            return;
        }
        let now = self.clock.now_ms;
        let old = self.idx.map(|i| self.shard.items[i].version);
        let version = self.shard.next_version(old, now);
        match self.idx {
            Some(i) => self.shard.replace_coll(i, value, version),
            None => {
                let item = Item::new_coll(self.key, value, 0, self.clock.initial(), version);
                self.create_item(item);
            }
        }
    }

    /// Create or replace the value and TTL (client flags back to 0); an `expire_at_ms <= now`
    /// removes the key instead.
    pub fn set(&mut self, value: &[u8], expire_at_ms: Option<u64>) {
        self.set_with_flags(value, expire_at_ms, 0);
    }

    /// Create or replace the value, TTL and client flags; an `expire_at_ms <= now` removes the
    /// key instead.
    pub fn set_with_flags(&mut self, value: &[u8], expire_at_ms: Option<u64>, flags: u32) {
        let at = match expire_at_ms {
            Some(at) if at <= self.clock.now_ms => {
                self.remove();
                return;
            }
            Some(at) => at,
            None => 0,
        };
        self.put(value, Some(flags), Some(at));
    }

    /// Replace the value, keeping the current TTL and flags (none if the key is new).
    pub fn set_keep_ttl(&mut self, value: &[u8]) {
        self.put(value, None, None);
    }

    /// Writes the value; `None` keeps the current flags / TTL (or 0 for a new key).
    fn put(&mut self, value: &[u8], flags: Option<u32>, at: Option<u64>) {
        let now = self.clock.now_ms;
        match self.idx {
            Some(i) => {
                let version = self
                    .shard
                    .next_version(Some(self.shard.items[i].version), now);
                self.shard.replace_value(i, value, flags, version);
                if let Some(at) = at {
                    self.shard.set_expire(i, self.hash, at);
                }
            }
            None => {
                let version = self.shard.next_version(None, now);
                let item = Item::new(
                    self.key,
                    value,
                    flags.unwrap_or(0),
                    at.unwrap_or(0),
                    self.clock.initial(),
                    version,
                );
                self.create_item(item);
            }
        }
    }

    /// Change the TTL of an existing key (`None` = persist). False if the key is absent; an
    /// `expire_at_ms <= now` removes the key (and returns true). The version stays, as
    /// Memcached's `touch` leaves the CAS unique alone (a client may `touch` then `cas`).
    pub fn set_expire(&mut self, expire_at_ms: Option<u64>) -> bool {
        let Some(i) = self.idx else {
            return false;
        };
        match expire_at_ms {
            Some(at) if at <= self.clock.now_ms => {
                self.remove();
            }
            at => {
                let at = at.unwrap_or(0);
                self.shard.set_expire(i, self.hash, at);
                self.changed = true;
            }
        }
        true
    }

    /// True if a key was removed. With tombstones on (see [`Store::set_tombstone_ttl`]) the
    /// removal is recorded at a fresh version, which [`Store::key_state`] then reports.
    pub fn remove(&mut self) -> bool {
        self.take().is_some()
    }

    /// [`Slot::remove`], handing the removed item over to be freed by the caller (UNLINK frees
    /// a large one on another thread).
    pub fn take(&mut self) -> Option<Garbage> {
        let i = self.idx.take()?;
        let old = self.shard.items[i].version;
        let item = self.shard.remove_at(&self.shared.hasher, i);
        let ttl = self.shared.tombstone_ttl.load(Relaxed);
        if ttl != 0 {
            let now = self.clock.now_ms;
            let version = self.shard.next_version(Some(old), now);
            self.shard
                .tombs
                .record(self.key, self.hash, version, now, ttl);
        }
        self.changed = true;
        Some(Garbage {
            effort: item.free_effort(),
            keys: 1,
            one: Some(item),
            ..Garbage::default()
        })
    }

    /// Appends to the value without copying it (APPEND); an absent key is created with
    /// `bytes` as its value and no TTL. Returns the new length.
    pub fn append(&mut self, bytes: &[u8]) -> usize {
        match self.idx {
            Some(i) => {
                self.shard
                    .edit(i, self.clock.now_ms, |item| item.append(bytes));
                self.shard.items[i].value().len()
            }
            None => {
                self.put(bytes, None, None);
                bytes.len()
            }
        }
    }

    /// Writes `bytes` at `offset` of the value, zero-padding a shorter value first
    /// (SETRANGE), without copying the value; an absent key is created. Returns the new
    /// length.
    pub fn overwrite(&mut self, offset: usize, bytes: &[u8]) -> usize {
        if self.idx.is_none() {
            self.put(b"", None, None);
        }
        let i = self
            .idx
            .expect("the key exists: it was just created if absent");
        self.shard
            .edit(i, self.clock.now_ms, |item| item.overwrite(offset, bytes));
        self.shard.items[i].value().len()
    }

    /// Whether the key's string was edited in place since its value was set
    /// ([`Entry::edited`]); false for an absent key or a collection.
    pub fn edited(&self) -> bool {
        self.idx.is_some_and(|i| self.shard.items[i].edited())
    }

    /// Notes that a string was edited in place (OBJECT ENCODING then `raw`, as Redis), for a
    /// bit command that found what it writes already there. Nothing else changes; nothing
    /// happens to an absent key or a collection.
    pub fn set_edited(&mut self) {
        if let Some(i) = self.idx {
            let item = &mut self.shard.items[i];
            if item.kind() == Kind::String {
                item.set_edited();
            }
        }
    }

    /// Writes `bytes` over a string value's bytes from `offset`, in place and keeping its
    /// version: for a change that leaves what the value means as it was (a HyperLogLog's
    /// cached count, which Redis's PFCOUNT writes back). Its copies elsewhere may keep the
    /// bytes as they were. False, and nothing changes, when the key is absent, not a
    /// string, or the bytes would pass the value's end.
    pub fn patch(&mut self, offset: usize, bytes: &[u8]) -> bool {
        let Some(i) = self.idx else {
            return false;
        };
        let item = &mut self.shard.items[i];
        let fits = offset
            .checked_add(bytes.len())
            .is_some_and(|end| end <= item.value().len());
        if item.kind() != Kind::String || !fits {
            return false;
        }
        item.overwrite(offset, bytes);
        // A change for `rdb_changes_since_last_save` (Redis counts PFCOUNT's write-back).
        self.changed = true;
        true
    }

    /// Edit the value in place (APPEND, SETRANGE). An absent key gets created with an empty
    /// value and no TTL; an existing key keeps its TTL and flags. If `f` panics nothing
    /// changes.
    pub fn modify<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let mut value = self.value().map(<[u8]>::to_vec).unwrap_or_default();
        let r = f(&mut value);
        self.put(&value, None, None);
        r
    }
}

/// Replicated states (see [`Store::apply`]).
impl Slot<'_> {
    fn apply_live(&mut self, payload: Payload<'_>, at: u64, version: u64) -> bool {
        let now = self.clock.now_ms;
        match self.idx {
            Some(i) => {
                let item = &self.shard.items[i];
                let same = match &payload {
                    Payload::Str(value, flags) => {
                        item.kind() == Kind::String
                            && item.value() == &value[..]
                            && item.flags() == *flags
                    }
                    Payload::Coll(c) => item.coll() == Some(c),
                };
                if version < item.version
                    || (version == item.version && same && item.expire_at_ms() == at)
                {
                    return false;
                }
                match payload {
                    Payload::Str(value, flags) => {
                        self.shard.replace_value(i, value, Some(flags), version)
                    }
                    Payload::Coll(c) => self.shard.replace_coll(i, c, version),
                }
                self.shard.set_expire(i, self.hash, at);
                self.clock.touch(&mut self.shard.items[i].access);
            }
            None => {
                if !self.shard.tombs.is_empty() {
                    if let Some(dead) = self.shard.tombs.get(self.key, self.hash, now) {
                        if dead >= version {
                            return false;
                        }
                    }
                }
                let item = match payload {
                    Payload::Str(value, flags) => {
                        Item::new(self.key, value, flags, at, self.clock.initial(), version)
                    }
                    Payload::Coll(c) => {
                        Item::new_coll(self.key, c, at, self.clock.initial(), version)
                    }
                };
                self.insert_item(item);
            }
        }
        true
    }

    fn apply_removal(&mut self, version: u64) -> bool {
        let removed = match self.idx {
            Some(i) if self.shard.items[i].version > version => return false,
            Some(i) => {
                self.shard.remove_at(&self.shared.hasher, i);
                self.idx = None;
                true
            }
            None => false,
        };
        let ttl = self.shared.tombstone_ttl.load(Relaxed);
        let recorded = ttl != 0
            && self
                .shard
                .tombs
                .record(self.key, self.hash, version, self.clock.now_ms, ttl);
        removed || recorded
    }
}

/// A replicated live value, decoded.
enum Payload<'a> {
    Str(&'a [u8], u32),
    Coll(Collection),
}

/// A replicated state as [`Store::apply`] takes it: its version, and for a live one the
/// value with its expiry (`None`: a removal, also what an expired live state amounts to).
struct Ready<'a> {
    version: u64,
    live: Option<(Payload<'a>, u64)>,
}

impl Ready<'_> {
    /// Applies the state to `key` in its locked shard; true if it changed anything.
    fn apply(self, shard: &mut Shard, shared: &Shared, key: &[u8], hash: u64, now_ms: u64) -> bool {
        shard.observe_version(self.version);
        let mut slot = Slot::open(shard, shared, key, hash, now_ms);
        match self.live {
            Some((payload, at)) => slot.apply_live(payload, at, self.version),
            None => slot.apply_removal(self.version),
        }
    }
}

/// A live item's state for replication (its value copied out).
fn live_state(item: &Item) -> KeyState {
    KeyState::Live {
        kind: item.kind(),
        value: match item.coll() {
            Some(c) => Bytes::from(c.encode()),
            None => Bytes::copy_from_slice(item.value()),
        },
        flags: item.flags(),
        expire_at_ms: item.expire_at_ms(),
        version: item.version,
    }
}

/// SCAN cursor layout: shard index in bits 32.., and in the low 32 bits the number of positions
/// of that shard still to visit (`[0, n)`), 0 meaning "start the shard afresh".
const CURSOR_SHIFT: u32 = 32;

impl Store {
    /// Enters the store for one command ([`crate::gate`]): at once, unless another
    /// thread's transaction runs, then once it ended. Enter at the top of a command, with
    /// no other lock held.
    pub fn enter(&self) -> crate::gate::Entered<'_> {
        self.gate.enter()
    }

    /// Enters the store unless another thread's transaction waits or runs (background work
    /// that can wait for its next round).
    pub fn try_enter(&self) -> Option<crate::gate::Entered<'_>> {
        self.gate.try_enter()
    }

    /// Runs `f` (a transaction's commands) with no command of another thread running on
    /// this store in between ([`crate::gate`]).
    pub fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        self.gate.exclusive(f)
    }

    /// [`Store::enter`], giving up (`None`) once `busy()` holds while another thread's
    /// transaction keeps this command out (a script past its time: see [`crate::gate`]).
    pub fn enter_unless(&self, busy: &dyn Fn() -> bool) -> Option<crate::gate::Entered<'_>> {
        self.gate.enter_unless(busy)
    }

    /// [`Store::exclusive`], giving up (`None`, `f` not run) once `busy()` holds while
    /// another thread's transaction keeps this one waiting.
    pub fn exclusive_unless<R>(&self, busy: &dyn Fn() -> bool, f: impl FnOnce() -> R) -> Option<R> {
        self.gate.exclusive_unless(busy, f)
    }

    pub fn new(config: StoreConfig) -> Store {
        let cells: Box<[ShardCell]> = (0..SHARDS)
            .map(|i| ShardCell {
                shard: parking_lot::Mutex::new(Shard::with_index(i)),
                ..ShardCell::default()
            })
            .collect();
        Store {
            cells,
            next_expiry: (0..SHARDS).map(|_| AtomicU64::new(u64::MAX)).collect(),
            gate: crate::gate::Gate::default(),
            shared: Shared {
                hasher: FixedState::with_seed(crate::rng::seed()),
                maxmemory: AtomicU64::new(config.maxmemory),
                overfull: AtomicBool::new(false),
                policy: AtomicU8::new(config.policy as u8),
                samples: AtomicUsize::new(config.samples),
                lfu_log_factor: AtomicU32::new(config.lfu_log_factor),
                lfu_decay_time: AtomicU32::new(config.lfu_decay_time),
                used: AtomicU64::new(0),
                keys: AtomicU64::new(0),
                volatile: AtomicU64::new(0),
                tombstone_ttl: AtomicU64::new(0),
                expire_cursor: AtomicUsize::new(0),
                apply_floor: Default::default(),
                numbered: AtomicBool::new(false),
                held_until: AtomicU64::new(0),
                noted: Default::default(),
                remeasure: std::sync::OnceLock::new(),
                remeasured_at: AtomicU64::new(0),
            },
        }
    }

    pub fn set_maxmemory(&self, bytes: u64) {
        self.shared.maxmemory.store(bytes, Relaxed);
    }

    pub fn maxmemory(&self) -> u64 {
        self.shared.maxmemory.load(Relaxed)
    }

    /// Installs what reads the process's memory again before the store evicts (once).
    /// The limit comes from a reading at `hz` of everything the allocator handed out, and
    /// what is not keys (a connection's 300 MB request, freed once it ran) may be gone by
    /// the next write: evicting by the old reading threw away the very value that request
    /// wrote, with memory to spare. At most one reading per [`REMEASURE_EVERY_MS`].
    pub fn set_remeasure(&self, remeasure: Remeasure) {
        let _ = self.shared.remeasure.set(remeasure);
    }

    /// Runs the remeasure if one is installed and none ran in the last
    /// [`REMEASURE_EVERY_MS`]; true if it ran.
    fn remeasured(&self, now_ms: u64) -> bool {
        let Some(remeasure) = self.shared.remeasure.get() else {
            return false;
        };
        let last = self.shared.remeasured_at.load(Relaxed);
        if now_ms < last.saturating_add(REMEASURE_EVERY_MS)
            || self
                .shared
                .remeasured_at
                .compare_exchange(last, now_ms, Relaxed, Relaxed)
                .is_err()
        {
            return false;
        }
        remeasure();
        true
    }

    /// Whether the process's memory besides the keys (buffers, scripts, tables; the caller
    /// reads the allocator) exceeds `maxmemory` by itself: then, as in Redis whose
    /// `used_memory` counts them, no eviction can bring memory under the limit, and
    /// [`Store::ensure_memory`] evicts what it can and answers out of memory.
    pub fn set_overfull(&self, overfull: bool) {
        self.shared.overfull.store(overfull, Relaxed);
    }

    pub fn set_policy(&self, p: EvictionPolicy) {
        self.shared.policy.store(p as u8, Relaxed);
    }

    pub fn policy(&self) -> EvictionPolicy {
        self.shared.policy()
    }

    pub fn set_samples(&self, n: usize) {
        self.shared.samples.store(n, Relaxed);
    }

    pub fn samples(&self) -> usize {
        self.shared.samples.load(Relaxed)
    }

    pub fn set_lfu_log_factor(&self, factor: u32) {
        self.shared.lfu_log_factor.store(factor, Relaxed);
    }

    pub fn lfu_log_factor(&self) -> u32 {
        self.shared.lfu_log_factor.load(Relaxed)
    }

    pub fn set_lfu_decay_time(&self, minutes: u32) {
        self.shared.lfu_decay_time.store(minutes, Relaxed);
    }

    pub fn lfu_decay_time(&self) -> u32 {
        self.shared.lfu_decay_time.load(Relaxed)
    }

    fn lock(&self, idx: usize) -> parking_lot::MutexGuard<'_, Shard> {
        let mut shard = self.cells[idx].shard.lock();
        let me = thread_tag();
        if shard.holder != me {
            if shard.holder != 0 {
                CONTENTION.with(|c| c.set(c.get().note(idx as u16)));
            }
            shard.holder = me;
        }
        shard
    }

    /// The lock of `key`'s shard, taken (tests).
    #[cfg(test)]
    pub(crate) fn lock_shard_of(&self, key: &[u8]) -> parking_lot::MutexGuard<'_, Shard> {
        self.cells[shard_of_slot(key_slot(key))].shard.lock()
    }

    /// How many items of shard `idx` have revalidation marks kept (tests).
    #[cfg(test)]
    pub(crate) fn marks_held(&self, idx: usize) -> usize {
        self.with_shard(idx, |shard, _| shard.marks.len())
    }

    /// Run `f` on shard `idx` under its lock, then publish the shard's changed figures.
    fn with_shard<R>(&self, idx: usize, f: impl FnOnce(&mut Shard, &Shared) -> R) -> R {
        let mut guard = Published::new(self, idx);
        f(&mut guard.shard, &self.shared)
    }

    /// Starts loading what commands on `keys` (stored keys, as in [`Store::read`]) will
    /// read, the keys' loads side by side: their shards, index entries, records and
    /// allocations. A key's lookup otherwise waits for each of these in turn, a cache miss
    /// each once the keys outgrow the CPU's caches, and most of a pipelined GET's time.
    /// A hint for a batch of commands about to run: it changes nothing, and skips a key whose
    /// shard another thread holds. Looks at the first [`PREFETCH_MAX`] keys, and at none when
    /// there is only one (nothing to overlap its loads with).
    pub fn prefetch<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) {
        let mut list: [&[u8]; PREFETCH_MAX] = [&[]; PREFETCH_MAX];
        let mut n = 0;
        for (slot, key) in list.iter_mut().zip(keys) {
            *slot = key;
            n += 1;
        }
        if n < 2 {
            return;
        }
        let mut at = [(0usize, 0u64); PREFETCH_MAX];
        for (&key, at) in list[..n].iter().zip(&mut at) {
            let idx = shard_of_slot(key_slot(key));
            // The lock and the fields a lookup or a write touches (`Shard`'s order).
            let cell = &self.cells[idx] as *const ShardCell;
            crate::hint::prefetch(cell);
            crate::hint::prefetch(cell.wrapping_byte_add(64));
            crate::hint::prefetch(cell.wrapping_byte_add(128));
            *at = (idx, self.shared.hasher.hash_one(key));
        }
        // Every lock first, held to the end: taking one is a full fence on x86, which would
        // make each key's index loads wait for the previous key's. `try_lock` never waits,
        // so holding several cannot deadlock. A key whose shard an earlier key's guard holds
        // (keys of one hash tag) uses that guard: `via[k]` is the guard key k reads through.
        let mut held: [Option<parking_lot::MutexGuard<'_, Shard>>; PREFETCH_MAX] =
            Default::default();
        let mut via = [0; PREFETCH_MAX];
        for k in 0..n {
            let idx = at[k].0;
            via[k] = k;
            if let Some(j) = (0..k).find(|&j| at[j].0 == idx && held[via[j]].is_some()) {
                via[k] = via[j];
            } else {
                held[k] = self.cells[idx].shard.try_lock();
            }
        }
        let mut found = [None; PREFETCH_MAX];
        for k in 0..n {
            if let Some(shard) = &held[via[k]] {
                found[k] = shard.hint_record(at[k].1);
            }
        }
        for k in 0..n {
            if let (Some(shard), Some(i)) = (&held[via[k]], found[k]) {
                shard.hint_data(i);
            }
        }
    }

    /// Look `key` up and pass its live entry (or `None`) to `f`.
    pub fn read<R>(
        &self,
        key: &[u8],
        now_ms: u64,
        access: Access,
        f: impl FnOnce(Option<Entry<'_>>) -> R,
    ) -> R {
        self.read_as::<false, R>(key, now_ms, access, f)
    }

    /// [`Store::read`] with [`Access::Peek`] that also sees a key whose time is up and that
    /// is still held (no access or cron removed it yet), and leaves it (DEBUG OBJECT: Redis's
    /// `dictFind`).
    pub fn read_raw<R>(
        &self,
        key: &[u8],
        now_ms: u64,
        f: impl FnOnce(Option<Entry<'_>>) -> R,
    ) -> R {
        self.read_as::<true, R>(key, now_ms, Access::Peek, f)
    }

    fn read_as<const RAW: bool, R>(
        &self,
        key: &[u8],
        now_ms: u64,
        access: Access,
        f: impl FnOnce(Option<Entry<'_>>) -> R,
    ) -> R {
        let hash = self.shared.hasher.hash_one(key);
        let held = self.held(now_ms);
        self.with_shard(shard_of_slot(key_slot(key)), |shard, shared| {
            let idx = if RAW {
                shard.find(key, hash)
            } else if held {
                shard.find_live(key, hash, now_ms)
            } else {
                shard.lookup(&shared.hasher, &shared.noted, key, hash, now_ms)
            };
            if matches!(
                access,
                Access::Read | Access::Fetch | Access::Inspect | Access::Count
            ) {
                match idx {
                    Some(_) => shard.stats.hits += 1,
                    None => {
                        shard.stats.misses += 1;
                        if access != Access::Count {
                            shared.noted.note(key, crate::Noted::Missed);
                        }
                    }
                }
            }
            let touches = matches!(access, Access::Read | Access::Fetch | Access::Touch);
            if let (Some(i), true) = (idx, touches && !untouched()) {
                let item = &mut shard.items[i];
                shared.clock(now_ms).touch(&mut item.access);
                if access == Access::Fetch {
                    item.set_fetched(true);
                }
            }
            f(idx.map(|i| {
                let item = &shard.items[i];
                item.entry()
            }))
        })
    }

    /// Lock `key`'s place and let `f` inspect and change it. A key that was there and that
    /// `f` leaves in place counts as accessed (LRU/LFU).
    pub fn write<R>(&self, key: &[u8], now_ms: u64, f: impl FnOnce(&mut Slot<'_>) -> R) -> R {
        let hash = self.shared.hasher.hash_one(key);
        self.with_shard(shard_of_slot(key_slot(key)), |shard, shared| {
            let bumps = shard.bumps;
            let mut slot = Slot::open(shard, shared, key, hash, now_ms);
            // A key the write found is accessed (Redis's lookupKeyWrite); one it created
            // keeps a new key's clock (an LFU counter of 5, as Redis's).
            let found = slot.idx.is_some();
            let r = f(&mut slot);
            if let (Some(i), true, false) = (slot.idx, found, untouched()) {
                slot.clock.touch(&mut slot.shard.items[i].access);
            }
            // One change per key a command changed, however many steps it took.
            if slot.changed || slot.shard.bumps != bumps {
                slot.shard.stats.changes += 1;
            }
            r
        })
    }

    /// A copy of `key`'s value (counts as a read: hit/miss, LRU/LFU).
    pub fn get(&self, key: &[u8], now_ms: u64) -> Option<Bytes> {
        self.read(key, now_ms, Access::Read, |e| {
            e.map(|e| Bytes::copy_from_slice(e.value))
        })
    }

    /// Store `value` under `key` with an optional absolute expiry (a convenience over
    /// [`Store::write`]).
    pub fn set(&self, key: &[u8], value: &[u8], expire_at_ms: Option<u64>, now_ms: u64) {
        self.write(key, now_ms, |slot| slot.set(value, expire_at_ms));
    }

    /// True if a live key was removed (recording a tombstone, as [`Slot::remove`]).
    pub fn remove(&self, key: &[u8], now_ms: u64) -> bool {
        self.write(key, now_ms, |slot| slot.remove())
    }

    /// [`Store::remove`], handing the removed item over to be freed by the caller.
    pub fn take(&self, key: &[u8], now_ms: u64) -> Option<Garbage> {
        self.write(key, now_ms, |slot| slot.take())
    }

    /// Drops `key`'s item without a tombstone or a version (a replica's copy it cannot
    /// trust: the state fetched next, at any version, takes its place).
    pub fn forget(&self, key: &[u8]) -> bool {
        let hash = self.shared.hasher.hash_one(key);
        self.with_shard(shard_of_slot(key_slot(key)), |shard, shared| {
            match shard.find(key, hash) {
                Some(i) => {
                    shard.remove_at(&shared.hasher, i);
                    true
                }
                None => false,
            }
        })
    }

    /// Keys held, including expired ones not yet reclaimed (like Redis `DBSIZE`).
    pub fn len(&self) -> usize {
        self.shared.keys.load(Relaxed) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys with a TTL.
    pub fn volatile_len(&self) -> usize {
        self.shared.volatile.load(Relaxed) as usize
    }

    /// Remove every key and tombstone (`FLUSHALL`); statistics are kept.
    pub fn clear(&self) {
        for idx in 0..SHARDS {
            self.with_shard(idx, |shard, _| shard.clear());
        }
    }

    /// [`Store::clear`], handing every removed item over to be freed by the caller (FLUSHALL
    /// ASYNC): each shard's lock is held only to move its items out. Its effort is counted
    /// as one per key (a flush is freed in the background whatever it costs).
    pub fn clear_into_garbage(&self) -> Garbage {
        let mut garbage = Garbage::default();
        for idx in 0..SHARDS {
            let items = self.with_shard(idx, |shard, _| {
                let items = std::mem::take(&mut shard.items);
                shard.clear();
                items
            });
            if !items.is_empty() {
                garbage.keys += items.len();
                garbage.effort += items.len();
                garbage.chunks.push(items);
            }
        }
        garbage
    }

    /// One step of a `SCAN`. A full iteration (cursor 0 until 0 comes back) returns every key
    /// present for the whole iteration at least once, despite concurrent inserts and removals,
    /// and may return some twice. Each shard's dense vector is walked from the end towards 0:
    /// `swap_remove` only ever moves the last element, which is either already visited or, once
    /// the vector has shrunk below the walk position, still unvisited and moved to a lower
    /// (unvisited) index. Expired entries are skipped. `count` is a hint of entries to visit.
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
        now_ms: u64,
        mut f: impl FnMut(&[u8], Entry<'_>),
    ) -> u64 {
        let count = count.max(1);
        let mut shard_idx = (cursor >> CURSOR_SHIFT) as usize;
        let mut remaining = (cursor & u64::from(u32::MAX)) as usize;
        let mut visited = 0;
        while shard_idx < SHARDS {
            let fresh = remaining == 0;
            if fresh && self.cells[shard_idx].len.load(Relaxed) == 0 {
                shard_idx += 1;
                continue;
            }
            let left = self.with_shard(shard_idx, |shard, _| {
                let mut pos = if fresh {
                    shard.items.len()
                } else {
                    remaining.min(shard.items.len())
                };
                while pos > 0 && visited < count {
                    pos -= 1;
                    visited += 1;
                    let item = &shard.items[pos];
                    if !item.is_expired(now_ms) {
                        f(item.key(), item.entry());
                    }
                }
                pos
            });
            if left > 0 {
                return ((shard_idx as u64) << CURSOR_SHIFT) | left as u64;
            }
            shard_idx += 1;
            remaining = 0;
            if visited >= count {
                break;
            }
        }
        if shard_idx >= SHARDS {
            0
        } else {
            (shard_idx as u64) << CURSOR_SHIFT
        }
    }

    /// How many shards [`Store::each_in_shard`] walks (every key is in one).
    pub fn shards(&self) -> usize {
        SHARDS
    }

    /// Calls `f` with every live entry of shard `shard` under one hold of its lock: each key
    /// once, none missed (a snapshot's walk, one shard at a time; [`Store::scan`] may repeat
    /// a key when one is removed between its steps). `f` runs under the shard's lock: it
    /// MUST NOT call back into the store, and should not block.
    pub fn each_in_shard(&self, shard: usize, now_ms: u64, mut f: impl FnMut(&[u8], Entry<'_>)) {
        if shard >= SHARDS || self.cells[shard].len.load(Relaxed) == 0 {
            return;
        }
        self.with_shard(shard, |shard, _| {
            for item in shard.items.iter() {
                if !item.is_expired(now_ms) {
                    f(item.key(), item.entry());
                }
            }
        });
    }

    /// A shard accepted by `want` (judged from the lock-free hints): a few random probes, then a
    /// walk from a random start. `None` if no shard qualifies.
    fn pick_shard(&self, want: impl Fn(&ShardCell) -> bool) -> Option<usize> {
        for _ in 0..8 {
            let i = rng::below(SHARDS);
            if want(&self.cells[i]) {
                return Some(i);
            }
        }
        let start = rng::below(SHARDS);
        (0..SHARDS)
            .map(|k| (start + k) % SHARDS)
            .find(|&i| want(&self.cells[i]))
    }

    /// A random live key, `None` if there is none. Expired keys met on the way are reclaimed
    /// (passed over while [`Store::hold_expiry`] holds).
    pub fn random_key(&self, now_ms: u64) -> Option<Bytes> {
        let held = self.held(now_ms);
        for _ in 0..64 {
            let idx = self.pick_shard(|c| c.len.load(Relaxed) > 0)?;
            let found = self.with_shard(idx, |shard, shared| {
                if shard.items.is_empty() {
                    return None;
                }
                let i = rng::below(shard.items.len());
                if shard.items[i].is_expired(now_ms) {
                    // Held: passed over, not removed (`Store::hold_expiry`).
                    if !held {
                        let item = shard.remove_at(&shared.hasher, i);
                        shard.stats.count_expired(&item);
                        shared.noted.note(item.key(), crate::Noted::Expired);
                    }
                    return None;
                }
                Some(Bytes::copy_from_slice(shard.items[i].key()))
            });
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Call `f` for every live key in hash slot `slot`.
    pub fn for_each_in_slot(&self, slot: u16, now_ms: u64, mut f: impl FnMut(&[u8], Entry<'_>)) {
        if slot >= SLOTS {
            return;
        }
        self.with_shard(shard_of_slot(slot), |shard, _| {
            if shard.count_in_slot(slot) == 0 {
                return;
            }
            for item in &shard.items {
                if !item.is_expired(now_ms) && key_slot(item.key()) == slot {
                    f(item.key(), item.entry());
                }
            }
        });
    }

    /// Up to `max` live keys of hash slot `slot` (CLUSTER GETKEYSINSLOT); stops walking the
    /// slot's shard once it has them.
    pub fn keys_in_slot(&self, slot: u16, now_ms: u64, max: usize) -> Vec<Bytes> {
        let mut keys = Vec::new();
        if slot >= SLOTS || max == 0 {
            return keys;
        }
        self.with_shard(shard_of_slot(slot), |shard, _| {
            if shard.count_in_slot(slot) == 0 {
                return;
            }
            for item in &shard.items {
                if keys.len() == max {
                    break;
                }
                if !item.is_expired(now_ms) && key_slot(item.key()) == slot {
                    keys.push(Bytes::copy_from_slice(item.key()));
                }
            }
        });
        keys
    }

    /// The state of every live key in hash slot `slot` (values copied out), and of every
    /// removal still remembered by a tombstone, for handing a slot to another node (so the
    /// receiver refuses an older copy of a deleted key). Holds the slot's shard lock while
    /// copying.
    pub fn slot_states(&self, slot: u16, now_ms: u64) -> Vec<(Bytes, KeyState)> {
        self.slots_states(&[slot], now_ms)
            .pop()
            .expect("one list per slot")
    }

    /// Which walk of the store reads `slot`: [`Store::slots_states`] reads the slots of one
    /// group in one walk, so a caller handing many slots over asks for a group at a time.
    pub fn slot_group(slot: u16) -> usize {
        shard_of_slot(slot)
    }

    /// [`Store::slot_states`] of each of `slots`, in their order, walking each shard the
    /// slots live in once (a shard holds [`SLOTS_PER_SHARD`] slots: handing over several of
    /// one shard reads its keys once, not once per slot). Slots beyond the keyspace get an
    /// empty list. Holds one shard lock at a time, while copying that shard's slots.
    pub fn slots_states(&self, slots: &[u16], now_ms: u64) -> Vec<Vec<(Bytes, KeyState)>> {
        let mut out: Vec<Vec<(Bytes, KeyState)>> = slots.iter().map(|_| Vec::new()).collect();
        // Positions in `slots`, shard by shard.
        let mut order: Vec<usize> = (0..slots.len()).filter(|&i| slots[i] < SLOTS).collect();
        order.sort_unstable_by_key(|&i| (shard_of_slot(slots[i]), i));
        for group in order.chunk_by(|&a, &b| shard_of_slot(slots[a]) == shard_of_slot(slots[b])) {
            // Where each of the shard's slots goes (the first position naming it).
            let mut at = [usize::MAX; SLOTS_PER_SHARD];
            for &i in group.iter().rev() {
                at[sub_slot(slots[i])] = i;
            }
            self.with_shard(shard_of_slot(slots[group[0]]), |shard, _| {
                shard.tombs.for_each_due(now_ms, |key, version| {
                    let i = at[sub_slot(key_slot(key))];
                    if i != usize::MAX {
                        out[i].push((Bytes::copy_from_slice(key), KeyState::Deleted { version }));
                    }
                });
                let held = (0..SLOTS_PER_SHARD)
                    .any(|sub| at[sub] != usize::MAX && shard.slot_counts[sub] > 0);
                if !held {
                    return;
                }
                for item in &shard.items {
                    let i = at[sub_slot(key_slot(item.key()))];
                    if i != usize::MAX && !item.is_expired(now_ms) {
                        out[i].push((Bytes::copy_from_slice(item.key()), live_state(item)));
                    }
                }
            });
            // A slot named twice gets the same states at each position.
            for &i in group {
                let first = at[sub_slot(slots[i])];
                if first != i {
                    out[i] = out[first].clone();
                }
            }
        }
        out
    }

    /// Forgets every key of hash slot `slot` without recording tombstones or counting them as
    /// deleted, expired or evicted: this node no longer holds a copy of the slot. Returns how
    /// many keys went.
    pub fn drop_slot(&self, slot: u16) -> usize {
        if slot >= SLOTS {
            return 0;
        }
        let mut drop = [false; SLOTS_PER_SHARD];
        drop[sub_slot(slot)] = true;
        self.with_shard(shard_of_slot(slot), |shard, shared| {
            shard.drop_sub_slots(&shared.hasher, &drop)
        })
    }

    /// [`Store::drop_slot`] for every slot `drop` accepts, walking each shard that holds keys
    /// of them once. Returns how many keys went.
    pub fn drop_slots(&self, drop: impl Fn(u16) -> bool) -> usize {
        let mut dropped = 0;
        for idx in 0..SHARDS {
            if self.cells[idx].len.load(Relaxed) == 0 {
                continue;
            }
            let mut subs = [false; SLOTS_PER_SHARD];
            for (sub, d) in subs.iter_mut().enumerate() {
                *d = drop(slot_at(idx, sub));
            }
            if subs.contains(&true) {
                dropped += self.with_shard(idx, |shard, shared| {
                    shard.drop_sub_slots(&shared.hasher, &subs)
                });
            }
        }
        dropped
    }

    /// Keys held in hash slot `slot` (including expired ones not yet reclaimed, like `len`).
    pub fn count_in_slot(&self, slot: u16) -> usize {
        if slot >= SLOTS {
            return 0;
        }
        self.with_shard(shard_of_slot(slot), |shard, _| shard.count_in_slot(slot))
    }

    /// Keeps the keyspace as it is until `until_ms` (Unix ms; 0 ends it at once), as Redis
    /// does while clients are paused (CLIENT PAUSE): active expiry and eviction stop, and a
    /// read of an expired key answers as if it were gone but leaves it (it goes, and counts
    /// in `expired_keys`, on the first access after). Writes still remove what they find
    /// expired (only writes that are not paused run: a peer's, the Memcached port's).
    pub fn hold_expiry(&self, until_ms: u64) {
        self.shared.held_until.store(until_ms, Relaxed);
    }

    /// Notes, from now on, the changes of the kinds in `mask` (an OR of [`crate::Noted::bit`]s; 0:
    /// none, the default, which also drops what was noted): keys that expire, are evicted,
    /// are created by a write ([`Slot`]'s), or that a read misses, for
    /// [`Store::take_key_events`] (Redis's `expired`, `evicted`, `new` and `keymiss`
    /// keyspace notifications).
    pub fn note_key_events(&self, mask: u8) {
        self.shared.noted.set_mask(mask);
    }

    /// The changes noted outside any command since the last call (active expiry, eviction
    /// by the cron, a replica's lookups), oldest first; a command's own go to its thread's
    /// buffer ([`crate::CommandNotes`], [`crate::take_command_notes`]). Empty while none are
    /// noted. At most 65,536 wait; later ones are dropped until this is called
    /// ([`Store::key_events_dropped`] counts them).
    pub fn take_key_events(&self) -> Vec<(Bytes, crate::Noted)> {
        self.shared.noted.take()
    }

    /// True while some kind of change is noted (`note_key_events` with a mask not 0).
    pub fn notes_wanted(&self) -> bool {
        self.shared.noted.wanted()
    }

    /// Changes not noted because the log was full.
    pub fn key_events_dropped(&self) -> u64 {
        self.shared.noted.dropped()
    }

    fn held(&self, now_ms: u64) -> bool {
        now_ms < self.shared.held_until.load(Relaxed)
    }

    /// Active expiry: remove up to about `max_keys` due keys, visiting shards round-robin from
    /// where the previous call stopped, and drop the due tombstones of the shards visited.
    /// Returns how many keys were removed (none while [`Store::hold_expiry`] holds).
    pub fn expire_cycle(&self, now_ms: u64, max_keys: usize) -> usize {
        let held = self.held(now_ms);
        let start = self.shared.expire_cursor.load(Relaxed) % SHARDS;
        let mut removed = 0;
        for k in 0..SHARDS {
            if removed >= max_keys {
                break;
            }
            let idx = (start + k) % SHARDS;
            // Covers tombstones too; a shard left with only stale heap items is visited once,
            // which drains them.
            if self.next_expiry[idx].load(Relaxed) > now_ms {
                continue;
            }
            removed += self.with_shard(idx, |shard, shared| {
                if !shard.tombs.is_empty() {
                    shard.tombs.purge(now_ms);
                }
                if held {
                    return 0;
                }
                shard.pop_expired(&shared.hasher, &shared.noted, now_ms, max_keys - removed)
            });
            if removed >= max_keys {
                self.shared.expire_cursor.store(idx, Relaxed);
                return removed;
            }
        }
        self.shared
            .expire_cursor
            .store((start + 1) % SHARDS, Relaxed);
        removed
    }

    /// Evict keys by the policy until `used_memory <= maxmemory` (no-op when maxmemory is 0).
    /// Call before executing a write, as Redis does. `Err` for `noeviction`, for volatile
    /// policies without volatile keys, or when nothing more can be evicted (all of it when
    /// [`Store::set_overfull`] says the rest of the process is over the limit alone).
    pub fn ensure_memory(&self, now_ms: u64) -> Result<(), OutOfMemory> {
        self.evict_until_fits(now_ms, None)
    }

    /// Like [`Store::ensure_memory`] but never evicts `keep`: call after a write to bring
    /// memory back under the limit while guaranteeing the write just made survives.
    pub fn ensure_memory_keep(&self, now_ms: u64, keep: &[u8]) -> Result<(), OutOfMemory> {
        self.evict_until_fits(now_ms, Some(keep))
    }

    /// Whether the store is over `maxmemory` now (a command would evict first), unless a
    /// pause holds eviction back.
    pub fn over_budget(&self, now_ms: u64) -> bool {
        let max = self.maxmemory();
        max > 0
            && (self.shared.overfull.load(Relaxed) || self.used_memory() > max)
            && !self.held(now_ms)
    }

    fn evict_until_fits(&self, now_ms: u64, keep: Option<&[u8]>) -> Result<(), OutOfMemory> {
        // While held, as Redis while clients are paused: nothing is evicted and the command
        // goes on (Redis's `isSafeToPerformEvictions`).
        if !self.over_budget(now_ms) {
            return Ok(());
        }
        // Over by the last reading: read again before throwing keys away.
        if self.remeasured(now_ms) && !self.over_budget(now_ms) {
            return Ok(());
        }
        let max = self.maxmemory();
        let over = |store: &Self| store.shared.overfull.load(Relaxed) || store.used_memory() > max;
        let policy = self.policy();
        let volatile = policy.is_volatile();
        // Nothing the policy may take: fail at once, not after a search (every command of a
        // store that stays over its limit comes here).
        let candidates = if volatile {
            self.volatile_len()
        } else {
            self.len()
        };
        if policy == EvictionPolicy::NoEviction
            || candidates == 0
            || (keep.is_some() && self.len() == 1)
        {
            return Err(OutOfMemory);
        }
        let samples = self.samples();
        // Bounds so a wrong figure or a racing writer cannot keep us here forever.
        let mut rounds_left = self.len() + SHARDS;
        let mut misses_left = 64;
        while over(self) {
            if rounds_left == 0 || misses_left == 0 {
                return Err(OutOfMemory);
            }
            rounds_left -= 1;
            let idx = if volatile {
                self.pick_shard(|c| c.volatile.load(Relaxed) > 0)
            } else {
                self.pick_shard(|c| c.len.load(Relaxed) > 0)
            };
            let Some(idx) = idx else {
                return Err(OutOfMemory);
            };
            let victim = self.with_shard(idx, |shard, shared| {
                let clock = shared.clock(now_ms);
                evict_one(
                    shard,
                    &shared.hasher,
                    &shared.noted,
                    policy,
                    &clock,
                    samples,
                    keep,
                )
            });
            if victim == Victim::None {
                misses_left -= 1;
            }
        }
        Ok(())
    }

    /// Σ (key + value + [`crate::ENTRY_OVERHEAD`]) over all keys held.
    pub fn used_memory(&self) -> u64 {
        self.shared.used.load(Relaxed)
    }

    pub fn stats(&self) -> StoreStats {
        let mut stats = StoreStats {
            keys: self.len() as u64,
            volatile_keys: self.volatile_len() as u64,
            used_memory: self.used_memory(),
            ..StoreStats::default()
        };
        for idx in 0..SHARDS {
            let (s, (capacity, bytes)) = {
                let shard = self.lock(idx);
                (shard.stats, shard.index_size())
            };
            stats.expired_keys += s.expired;
            stats.evicted_keys += s.evicted;
            stats.keyspace_hits += s.hits;
            stats.keyspace_misses += s.misses;
            stats.expired_on_access += s.expired_on_access;
            stats.expired_unfetched += s.expired_unfetched;
            stats.evicted_unfetched += s.evicted_unfetched;
            stats.changes += s.changes;
            stats.index_capacity += capacity as u64;
            stats.index_bytes += bytes as u64;
        }
        stats
    }

    /// Milliseconds since the last access, from an entry's access word (OBJECT IDLETIME,
    /// under an LRU policy; to the minute under LFU).
    pub fn idle_ms(&self, access: u32, now_ms: u64) -> u64 {
        self.shared.clock(now_ms).idle_ms(access)
    }

    /// The decayed logarithmic access counter, from an entry's access word read under an LFU
    /// policy (OBJECT FREQ).
    pub fn lfu_frequency(&self, access: u32, now_ms: u64) -> u32 {
        self.shared.clock(now_ms).lfu_decayed(access)
    }

    /// Turn tombstones on (`ms > 0`: every removal by a write, through [`Slot::remove`],
    /// [`Store::remove`] or a `Slot::set*` / `Slot::set_expire` with a past expiry, records the
    /// key and a fresh version for `ms` milliseconds) or off (0, the default for a single node:
    /// nothing recorded, existing tombstones dropped; a removal racing with the switch may
    /// still leave one that lives out its TTL). Expiry and eviction never record one: every
    /// replica expires a key at the same absolute time, and eviction is a local decision.
    ///
    /// Tombstones are bounded in number (4096 per shard, the oldest dropped first), not
    /// counted in `used_memory`, and a replicated state older than a tombstone that was
    /// dropped or timed out is applied again: choose `ms` above the longest replication delay.
    pub fn set_tombstone_ttl(&self, ms: u64) {
        self.shared.tombstone_ttl.store(ms, Relaxed);
        if ms == 0 {
            for idx in 0..SHARDS {
                self.with_shard(idx, |shard, _| shard.tombs = Default::default());
            }
        }
    }

    /// Milliseconds a tombstone is kept; 0 = off.
    pub fn tombstone_ttl(&self) -> u64 {
        self.shared.tombstone_ttl.load(Relaxed)
    }

    /// Tombstones held (for INFO), including expired ones not yet purged, as [`Store::len`]
    /// counts expired keys.
    pub fn tombstones(&self) -> usize {
        (0..SHARDS).map(|idx| self.lock(idx).tombs.len()).sum()
    }

    /// What the store knows of `key`, without counting a hit or miss or touching LRU/LFU (like
    /// [`Access::Peek`]). An expired key reads as `Absent`, or `Deleted` while a tombstone is
    /// kept. Right after a write under the same key it gives the write's resulting version,
    /// also for a removal (its tombstone's), provided tombstones are on.
    pub fn key_state(&self, key: &[u8], now_ms: u64) -> KeyState {
        let hash = self.shared.hasher.hash_one(key);
        let held = self.held(now_ms);
        self.with_shard(shard_of_slot(key_slot(key)), |shard, shared| {
            let live = if held {
                shard.find_live(key, hash, now_ms)
            } else {
                shard.lookup(&shared.hasher, &shared.noted, key, hash, now_ms)
            };
            if let Some(i) = live {
                return live_state(&shard.items[i]);
            }
            if shard.tombs.is_empty() {
                return KeyState::Absent;
            }
            match shard.tombs.get(key, hash, now_ms) {
                Some(version) => KeyState::Deleted { version },
                None => KeyState::Absent,
            }
        })
    }

    /// Apply a replicated state with last-writer-wins (see [`KeyState`] for the order); true if
    /// it changed anything.
    ///
    /// - `Live { version: v, .. }` is taken when there is neither a live item nor a tombstone,
    ///   or `v >=` the live item's version (equal: the same write re-sent or a TTL change, so
    ///   value, flags and expiry are taken), or `v >` the tombstone's. The item gets version
    ///   `v` exactly, and its tombstone goes. A `Live` whose `expire_at_ms` has passed is the
    ///   removal it amounts to and is applied as `Deleted { version: v }`, so that a late
    ///   short-TTL write still replaces the older value it overwrote on the owner.
    /// - `Deleted { version: v }` removes a live item whose version is `<= v` and records (or
    ///   raises) the tombstone to `v` when tombstones are on; without an item it only records.
    /// - `Absent` does nothing.
    ///
    /// Every call raises the shard's clock to `v`, so later local writes get greater versions
    /// (a replica promoted to owner after a failover). An applied value counts in
    /// `used_memory` as a local write does; apply does not evict: run
    /// [`Store::ensure_memory`] as for any write.
    pub fn apply(&self, key: &[u8], state: &KeyState, now_ms: u64) -> bool {
        let Some(ready) = self.prepare(key, state, now_ms) else {
            return false;
        };
        let hash = self.shared.hasher.hash_one(key);
        self.with_shard(shard_of_slot(key_slot(key)), |shard, shared| {
            ready.apply(shard, shared, key, hash, now_ms)
        })
    }

    /// [`Store::apply`] for each of `entries`, in order, taking a shard's lock once for each
    /// run of entries in that shard (a hand-off message lists its slots shard by shard: one
    /// lock per shard). Returns how many changed something.
    pub fn apply_all(&self, entries: &[(Bytes, KeyState)], now_ms: u64) -> usize {
        let mut applied = 0;
        let shards: Vec<usize> = entries
            .iter()
            .map(|(key, _)| shard_of_slot(key_slot(key)))
            .collect();
        let mut start = 0;
        while start < entries.len() {
            let idx = shards[start];
            let end = start + shards[start..].iter().take_while(|&&s| s == idx).count();
            // Decoded before the lock is taken: a large collection's decoding does not hold
            // up the shard's other users.
            let ready: Vec<Option<(Ready<'_>, u64)>> = entries[start..end]
                .iter()
                .map(|(key, state)| {
                    let ready = self.prepare(key, state, now_ms)?;
                    Some((ready, self.shared.hasher.hash_one(key)))
                })
                .collect();
            self.with_shard(idx, |shard, shared| {
                for ((key, _), ready) in entries[start..end].iter().zip(ready) {
                    if let Some((ready, hash)) = ready {
                        applied += usize::from(ready.apply(shard, shared, key, hash, now_ms));
                    }
                }
            });
            start = end;
        }
        applied
    }

    /// A replicated state made ready to apply, or `None` when [`Store::apply`] refuses it
    /// without looking at the key (below the floor, absent, a collection that does not
    /// decode).
    fn prepare<'s>(&self, key: &[u8], state: &'s KeyState, now_ms: u64) -> Option<Ready<'s>> {
        Some(match state {
            KeyState::Live { version, .. } | KeyState::Deleted { version }
                if *version < self.floor_of(key) =>
            {
                return None;
            }
            KeyState::Absent => return None,
            KeyState::Deleted { version } => Ready {
                version: *version,
                live: None,
            },
            KeyState::Live {
                kind,
                value,
                flags,
                expire_at_ms,
                version,
            } => {
                let expired = *expire_at_ms != 0 && *expire_at_ms <= now_ms;
                let payload = match kind {
                    Kind::String => Payload::Str(value, *flags),
                    // A collection that does not decode is no state at all: refused.
                    kind => Payload::Coll(Collection::decode(*kind, value)?),
                };
                Ready {
                    version: *version,
                    live: (!expired).then_some((payload, *expire_at_ms)),
                }
            }
        })
    }

    /// From now on `apply` refuses every state with a version below `version`: after a
    /// FLUSHALL, replication messages of writes from before it (still queued somewhere) must
    /// not bring keys back. Never lowers the floor.
    pub fn refuse_versions_below(&self, version: u64) {
        for floor in &self.shared.apply_floor {
            floor.fetch_max(version, Relaxed);
        }
    }

    /// The floor `apply` holds `key`'s states to (its database's).
    fn floor_of(&self, key: &[u8]) -> u64 {
        let db = usize::from(crate::slot::split_key(key).0).min(DATABASES - 1);
        self.shared.apply_floor[db].load(Relaxed)
    }

    /// Whether a key of a database other than 0 was ever stored here.
    pub fn has_numbered_keys(&self) -> bool {
        self.shared.numbered.load(Relaxed)
    }

    /// Raises the clock of `key`'s shard to at least `version`, so the key's next write here
    /// gets a greater version (a failover orders its write after the lost owner's).
    pub fn order_after(&self, key: &[u8], version: u64) {
        self.lock(shard_of_slot(key_slot(key)))
            .observe_version(version);
    }

    /// After a flush: raises the floor ([`refuse_versions_below`](Self::refuse_versions_below))
    /// to at least `at_least` and above every version this store handed out or saw, raises
    /// every shard's clock to it, so every later local write orders after it, and returns
    /// the floor. The node that ran a cluster's FLUSHALL raises every node to the greatest
    /// floor any node returned: writes from before the flush are then refused everywhere and
    /// writes after it taken everywhere, however far apart the nodes' clocks are.
    pub fn raise_floor(&self, at_least: u64) -> u64 {
        self.raise_floors(at_least, 0..DATABASES)
    }

    /// [`raise_floor`](Self::raise_floor) for database `db` alone (FLUSHDB): the other
    /// databases' states are still taken.
    pub fn raise_db_floor(&self, db: u8, at_least: u64) -> u64 {
        let db = usize::from(db).min(DATABASES - 1);
        self.raise_floors(at_least, db..db + 1)
    }

    fn raise_floors(&self, at_least: u64, dbs: std::ops::Range<usize>) -> u64 {
        let floors = &self.shared.apply_floor[dbs];
        let mut top = floors.iter().fold(at_least, |t, f| t.max(f.load(Relaxed)));
        for idx in 0..SHARDS {
            top = top.max(self.lock(idx).clock().saturating_add(1));
        }
        for idx in 0..SHARDS {
            self.lock(idx).observe_version(top);
        }
        for floor in floors {
            floor.fetch_max(top, Relaxed);
        }
        top
    }

    /// The version below which `apply` refuses database 0's states (0: none; see
    /// [`refuse_versions_below`](Self::refuse_versions_below)).
    pub fn floor(&self) -> u64 {
        self.shared.apply_floor[0].load(Relaxed)
    }

    /// Zeroes the expired/evicted/hit/miss counters (CONFIG RESETSTAT); the count of changes
    /// stays, as Redis's `dirty` does.
    pub fn reset_stats(&self) {
        for idx in 0..SHARDS {
            let mut shard = self.lock(idx);
            shard.stats = crate::shard::ShardStats {
                changes: shard.stats.changes,
                ..Default::default()
            };
        }
    }
}

/// A locked shard that publishes its key count, volatile count, used bytes and next expiry to
/// the lock-free copies when dropped, also when a caller's closure panics mid-operation.
struct Published<'a> {
    store: &'a Store,
    cell: &'a ShardCell,
    next_expiry: &'a AtomicU64,
    shard: parking_lot::MutexGuard<'a, Shard>,
    before: (usize, usize, u64),
}

impl<'a> Published<'a> {
    fn new(store: &'a Store, idx: usize) -> Self {
        let shard = store.lock(idx);
        let before = (shard.items.len(), shard.volatile, shard.used);
        Published {
            store,
            cell: &store.cells[idx],
            next_expiry: &store.next_expiry[idx],
            shard,
            before,
        }
    }
}

impl Drop for Published<'_> {
    fn drop(&mut self) {
        let (len0, vol0, used0) = self.before;
        let (len1, vol1, used1) = (self.shard.items.len(), self.shard.volatile, self.shard.used);
        let shared = &self.store.shared;
        if len1 != len0 {
            self.cell.len.store(len1 as u32, Relaxed);
            shared
                .keys
                .fetch_add((len1 as u64).wrapping_sub(len0 as u64), Relaxed);
        }
        if vol1 != vol0 {
            self.cell.volatile.store(vol1 as u32, Relaxed);
            shared
                .volatile
                .fetch_add((vol1 as u64).wrapping_sub(vol0 as u64), Relaxed);
        }
        if used1 != used0 {
            shared.used.fetch_add(used1.wrapping_sub(used0), Relaxed);
        }
        let next = self.shard.next_expiry();
        if self.next_expiry.load(Relaxed) != next {
            self.next_expiry.store(next, Relaxed);
        }
    }
}

impl Default for Store {
    fn default() -> Self {
        Store::new(StoreConfig::default())
    }
}
