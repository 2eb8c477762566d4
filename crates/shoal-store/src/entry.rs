//! The per-key record ([`Item`]) and its access clock ([`Clock`]: LRU or Redis-style LFU).

use crate::hash::Hash;
use crate::list::List;
use crate::rng;
use crate::set::Set;
use crate::stream::Stream;
use crate::thin::Thin;
use crate::zset::ZSet;

/// Bytes charged per entry on top of its key and value, for `used_memory` and `maxmemory`.
///
/// How it was chosen (64-bit, glibc malloc): the [`Item`] itself was 40 bytes in the shard's
/// dense `Vec` (which runs ~25% slack on average after doubling: ~10 bytes); its slot in the
/// `HashTable<u32>` is 4 bytes + 1 control byte at a load factor between 7/16 and 7/8 (~8
/// bytes); the key+value allocation pays an 8-byte malloc header plus rounding up to 16 bytes
/// (~8 bytes on average). That is ~56 bytes; volatile keys add a 16-byte expiry-heap item,
/// which we spread over all keys rather than charge separately. That is ~66 bytes, rounded to
/// 64. Measured RSS for 1M keys with 16-byte keys and 100-byte values was ~175 B/key with the
/// 32-byte item of the first version (`used_memory` said 116 + 56 = 172); the 8-byte version
/// field added 8. The thin pointer took 8 back from the item (32 bytes) and put a 4-byte
/// length in front of the allocation, which mostly fits its rounding; the charge stays 64.
pub const ENTRY_OVERHEAD: usize = 64;

/// Marks, in `Item::meta`, that 4 bytes of client flags follow the key in `data`.
const HAS_FLAGS: u32 = 1 << 31;

/// Marks, in `Item::meta`, that the item was read since its value was last set (memcached's
/// `ITEM_FETCHED`: `mg`'s `h` flag, `expired_unfetched`, `evicted_unfetched`).
const FETCHED: u32 = 1 << 30;

/// Longest key an item can hold (1 GiB - 1; the top two bits of `meta` are markers).
pub const MAX_KEY_LEN: usize = (FETCHED - 1) as usize;

/// The bits of `Item::meta` that are not the key length.
const MARKERS: u32 = HAS_FLAGS | FETCHED;

/// The type of a key's value, as TYPE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    String,
    Hash,
    Set,
    List,
    ZSet,
    Stream,
}

impl Kind {
    /// The name TYPE answers.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::List => "list",
            Kind::ZSet => "zset",
            Kind::Stream => "stream",
        }
    }
}

/// An item's allocation: a string's key, flags and value in one (their length in front),
/// or a collection beside its key; 8 bytes either way ([`Thin`]).
type Data = Thin<CollItem>;

struct CollItem {
    key: Box<[u8]>,
    value: Collection,
    /// Unix ms; 0 = no TTL.
    expire_at_ms: u64,
}

/// A value that is not a string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Collection {
    Hash(Hash),
    Set(Set),
    List(List),
    ZSet(ZSet),
    Stream(Box<Stream>),
}

impl Collection {
    pub fn kind(&self) -> Kind {
        match self {
            Collection::Hash(_) => Kind::Hash,
            Collection::Set(_) => Kind::Set,
            Collection::List(_) => Kind::List,
            Collection::ZSet(_) => Kind::ZSet,
            Collection::Stream(_) => Kind::Stream,
        }
    }

    /// Whether the key holding it goes away: an empty hash, set, list or sorted set, never a
    /// stream.
    pub fn is_empty(&self) -> bool {
        match self {
            Collection::Hash(h) => h.is_empty(),
            Collection::Set(s) => s.is_empty(),
            Collection::List(l) => l.is_empty(),
            Collection::ZSet(z) => z.is_empty(),
            // An empty stream stays a value (XGROUP CREATE MKSTREAM, XDEL of every entry),
            // as in Redis.
            Collection::Stream(_) => false,
        }
    }

    /// Redis's name for its encoding (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match self {
            Collection::Hash(h) => h.encoding(),
            Collection::Set(s) => s.encoding(),
            Collection::List(l) => l.encoding(),
            Collection::ZSet(z) => z.encoding(),
            Collection::Stream(_) => "stream",
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            Collection::Hash(h) => h.heap_bytes(),
            Collection::Set(s) => s.heap_bytes(),
            Collection::List(l) => l.heap_bytes(),
            Collection::ZSet(z) => z.heap_bytes(),
            Collection::Stream(s) => std::mem::size_of::<Stream>() + s.heap_bytes(),
        }
    }

    /// What freeing it costs, in Redis's units (`lazyfreeGetFreeEffort`): 1 for a compact
    /// encoding (one allocation), a list's chunks (Redis's quicklist nodes), else one per
    /// element (a stream's entries, where Redis counts its radix tree's nodes).
    pub fn free_effort(&self) -> usize {
        let compact = matches!(self.encoding(), "listpack" | "intset");
        match self {
            _ if compact => 1,
            Collection::Hash(h) => h.len(),
            Collection::Set(s) => s.len(),
            Collection::List(l) => l.chunks(),
            Collection::ZSet(z) => z.len(),
            Collection::Stream(s) => s.len(),
        }
    }

    /// The replication form ([`Hash::encode`], [`Set::encode`], [`List::encode`]).
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Collection::Hash(h) => h.encode(),
            Collection::Set(s) => s.encode(),
            Collection::List(l) => l.encode(),
            Collection::ZSet(z) => z.encode(),
            Collection::Stream(s) => s.encode(),
        }
    }

    /// The collection of `kind` in its replication form, or `None` when it does not decode
    /// (or `kind` is a string).
    pub fn decode(kind: Kind, b: &[u8]) -> Option<Collection> {
        match kind {
            Kind::Hash => Hash::decode(b).map(Collection::Hash),
            Kind::Set => Set::decode(b).map(Collection::Set),
            Kind::List => List::decode(b).map(Collection::List),
            Kind::ZSet => ZSet::decode(b).map(Collection::ZSet),
            Kind::Stream => Stream::decode(b).map(|s| Collection::Stream(Box::new(s))),
            Kind::String => None,
        }
    }
}

/// One stored key. A string's single heap allocation holds the key bytes, then (only when
/// they are not zero) 4 bytes of client flags, then the value bytes, then (only when the key
/// has or had a TTL: the allocation's mark, [`Thin::marked`]) 8 bytes of expiry time; a
/// collection's holds its key, the collection and its expiry time.
///
/// 24 bytes: the allocation is behind a thin pointer, and what most keys do not use lives in
/// it instead of the struct, so RESP-only data (flags 0) pays nothing for the flags Memcached
/// clients set, and a persistent key nothing for a TTL. The expiry goes at the end, where
/// setting one grows the allocation in place (as APPEND does) rather than moving the value.
pub(crate) struct Item {
    data: Data,
    /// Key length in the low 30 bits; `HAS_FLAGS` when client flags follow the key,
    /// `FETCHED` once the value was read.
    meta: u32,
    /// LRU: the low 32 bits of the last access in Unix ms (wrapping, ~49 days). LFU: Redis's
    /// layout, `(minutes & 0xFFFF) << 8 | log counter`. Reinterpreted when the policy changes,
    /// as Redis does.
    pub(crate) access: u32,
    /// Changes with every change of the key's value or flags (not its TTL, as Memcached's
    /// touch keeps the CAS unique): the CAS unique, and the order of writes to one key. See
    /// `Shard::next_version`.
    pub(crate) version: u64,
}

/// Bytes of the expiry time at the end of a marked string allocation.
const TTL_LEN: usize = 8;

fn build(key: &[u8], flags: u32, value: &[u8], expire_at_ms: u64) -> (Data, u32) {
    let key_len = u32::try_from(key.len())
        .ok()
        .filter(|&n| n as usize <= MAX_KEY_LEN)
        .expect("commands refuse keys longer than MAX_KEY_LEN");
    let flag_bytes = flags.to_be_bytes();
    let flag_bytes: &[u8] = if flags != 0 { &flag_bytes } else { &[] };
    let meta = key_len | if flags != 0 { HAS_FLAGS } else { 0 };
    let ttl = expire_at_ms.to_le_bytes();
    let ttl: &[u8] = if expire_at_ms != 0 { &ttl } else { &[] };
    (
        Thin::bytes(&[key, flag_bytes, value, ttl], expire_at_ms != 0),
        meta,
    )
}

impl Item {
    pub(crate) fn new(
        key: &[u8],
        value: &[u8],
        flags: u32,
        expire_at_ms: u64,
        access: u32,
        version: u64,
    ) -> Item {
        let (data, meta) = build(key, flags, value, expire_at_ms);
        Item {
            data,
            meta,
            access,
            version,
        }
    }

    pub(crate) fn new_coll(
        key: &[u8],
        value: Collection,
        expire_at_ms: u64,
        access: u32,
        version: u64,
    ) -> Item {
        Item {
            data: Thin::boxed(Box::new(CollItem {
                key: key.into(),
                value,
                expire_at_ms,
            })),
            meta: 0,
            access,
            version,
        }
    }

    /// Starts loading the item's allocation (its first two cache lines: the header, key and
    /// the start of the value) without waiting for it.
    pub(crate) fn hint(&self) {
        let at = self.data.addr();
        crate::hint::prefetch(at);
        crate::hint::prefetch(at.wrapping_add(64));
    }

    /// Whether the value was read since it was last set (memcached's `ITEM_FETCHED`).
    pub(crate) fn fetched(&self) -> bool {
        self.meta & FETCHED != 0
    }

    /// Notes a read of the value ([`Item::fetched`] until the next new value).
    pub(crate) fn set_fetched(&mut self, fetched: bool) {
        if fetched {
            self.meta |= FETCHED;
        } else {
            self.meta &= !FETCHED;
        }
    }

    fn key_len(&self) -> usize {
        (self.meta & !MARKERS) as usize
    }

    fn value_start(&self) -> usize {
        self.key_len() + if self.meta & HAS_FLAGS != 0 { 4 } else { 0 }
    }

    pub(crate) fn key(&self) -> &[u8] {
        match self.data.as_bytes() {
            Some(b) => &b[..self.key_len()],
            None => self.data.as_boxed().map_or(&[], |c| &c.key),
        }
    }

    /// Bytes of a string's allocation taken by its expiry time.
    fn ttl_len(&self) -> usize {
        if self.data.marked() {
            TTL_LEN
        } else {
            0
        }
    }

    /// A string's key, flags and value (its allocation less the expiry time); `None` for a
    /// collection.
    fn payload(&self) -> Option<&[u8]> {
        let b = self.data.as_bytes()?;
        Some(&b[..b.len() - self.ttl_len()])
    }

    /// A string's value; empty for a collection.
    pub(crate) fn value(&self) -> &[u8] {
        match self.payload() {
            Some(b) => &b[self.value_start()..],
            None => &[],
        }
    }

    /// Unix ms; 0 = no TTL.
    pub(crate) fn expire_at_ms(&self) -> u64 {
        if let Some(c) = self.data.as_boxed() {
            return c.expire_at_ms;
        }
        match self.data.as_bytes() {
            Some(b) if self.data.marked() => {
                let mut at = [0u8; TTL_LEN];
                at.copy_from_slice(&b[b.len() - TTL_LEN..]);
                u64::from_le_bytes(at)
            }
            _ => 0,
        }
    }

    /// Sets the expiry time (0: none). A string that never had one grows by its 8 bytes (in
    /// place where the allocator can, as APPEND); one that had keeps them, even for 0.
    pub(crate) fn set_expire_at_ms(&mut self, at: u64) {
        if let Some(c) = self.data.as_boxed_mut() {
            c.expire_at_ms = at;
            return;
        }
        if !self.data.marked() {
            if at == 0 {
                return;
            }
            let len = self.data.as_bytes().map_or(0, <[u8]>::len);
            self.data.resize(len + TTL_LEN);
            self.data.set_mark(true);
        }
        if let Some(b) = self.data.as_bytes_mut() {
            let end = b.len();
            b[end - TTL_LEN..].copy_from_slice(&at.to_le_bytes());
        }
    }

    /// Makes a string's payload (key, flags, value) `len` bytes, cutting it or zero-filling
    /// the new bytes, and keeps its expiry time at the end.
    fn resize_payload(&mut self, len: usize) {
        let at = self.expire_at_ms();
        let ttl = self.ttl_len();
        let old = self.payload().map_or(0, <[u8]>::len);
        self.data.resize(len + ttl);
        if let Some(b) = self.data.as_bytes_mut() {
            if len > old {
                // Where the expiry time was, before the payload grew over it.
                b[old..len].fill(0);
            }
            if ttl != 0 {
                b[len..].copy_from_slice(&at.to_le_bytes());
            }
        }
    }

    /// A string's payload to edit in place.
    fn payload_mut(&mut self) -> Option<&mut [u8]> {
        let ttl = self.ttl_len();
        let b = self.data.as_bytes_mut()?;
        let end = b.len() - ttl;
        Some(&mut b[..end])
    }

    pub(crate) fn kind(&self) -> Kind {
        self.coll().map_or(Kind::String, Collection::kind)
    }

    /// What freeing the item costs ([`Collection::free_effort`]; 1 for a string).
    pub(crate) fn free_effort(&self) -> usize {
        self.coll().map_or(1, Collection::free_effort)
    }

    pub(crate) fn coll(&self) -> Option<&Collection> {
        self.data.as_boxed().map(|c| &c.value)
    }

    pub(crate) fn coll_mut(&mut self) -> Option<&mut Collection> {
        self.data.as_boxed_mut().map(|c| &mut c.value)
    }

    /// Makes the item the collection `value` (a replicated state, RENAME, COPY, a STORE).
    pub(crate) fn replace_with_coll(&mut self, value: Collection) {
        if let Some(c) = self.data.as_boxed_mut() {
            c.value = value;
            return;
        }
        let key = self.key().into();
        let expire_at_ms = self.expire_at_ms();
        self.data = Thin::boxed(Box::new(CollItem {
            key,
            value,
            expire_at_ms,
        }));
        self.meta = 0;
    }

    /// Makes a collection an empty string, to edit as one (callers check the type before;
    /// this only keeps a missed check from panicking). Returns the string's payload length.
    fn make_string(&mut self) -> usize {
        if let Some(c) = self.data.as_boxed() {
            let (data, meta) = build(&c.key, 0, b"", c.expire_at_ms);
            self.data = data;
            self.meta = meta;
        }
        self.payload().map_or(0, <[u8]>::len)
    }

    /// Client flags (Memcached); 0 unless set.
    pub(crate) fn flags(&self) -> u32 {
        let Some(data) = self.payload() else {
            return 0;
        };
        if self.meta & HAS_FLAGS == 0 {
            return 0;
        }
        let k = self.key_len();
        let mut b = [0u8; 4];
        b.copy_from_slice(&data[k..k + 4]);
        u32::from_be_bytes(b)
    }

    pub(crate) fn expire_at(&self) -> Option<u64> {
        let at = self.expire_at_ms();
        (at != 0).then_some(at)
    }

    /// The public read-only view of this item.
    pub(crate) fn entry(&self) -> crate::Entry<'_> {
        crate::Entry {
            value: self.value(),
            expire_at_ms: self.expire_at(),
            version: self.version,
            flags: self.flags(),
            charge: self.charge(),
            access: self.access,
            fetched: self.fetched(),
            edited: self.edited(),
            kind: self.kind(),
            coll: self.coll(),
        }
    }

    pub(crate) fn is_expired(&self, now_ms: u64) -> bool {
        let at = self.expire_at_ms();
        at != 0 && at <= now_ms
    }

    /// Bytes this entry counts for in `used_memory`.
    pub(crate) fn charge(&self) -> u64 {
        let heap = match self.data.as_boxed() {
            None => self.payload().map_or(0, <[u8]>::len),
            Some(c) => std::mem::size_of::<CollItem>() + 16 + c.key.len() + c.value.heap_bytes(),
        };
        (heap + ENTRY_OVERHEAD) as u64
    }

    /// Appends to the value in place: the allocation is grown (realloc, often without a copy:
    /// large blocks are remapped), not rebuilt, so repeated appends stay cheap. The value is
    /// [`Item::edited`] after.
    pub(crate) fn append(&mut self, extra: &[u8]) {
        let len = self.make_string();
        self.resize_payload(len + extra.len());
        if let Some(b) = self.payload_mut() {
            b[len..].copy_from_slice(extra);
        }
        self.data.set_note(true);
    }

    /// Whether the string was edited in place (APPEND, SETRANGE, the bit commands) since its
    /// value was last set: Redis keeps such a string `raw`, whatever it holds, until a new
    /// value replaces it (OBJECT ENCODING). False for a collection.
    pub(crate) fn edited(&self) -> bool {
        self.data.noted()
    }

    /// Marks the string [`Item::edited`] (a bit command that found its bits already set
    /// edits nothing, but Redis made its value `raw` all the same).
    pub(crate) fn set_edited(&mut self) {
        self.data.set_note(true);
    }

    /// Writes `bytes` at `offset` of the value, zero-padding it first when it is shorter
    /// (SETRANGE), in place. The value is [`Item::edited`] after.
    pub(crate) fn overwrite(&mut self, offset: usize, bytes: &[u8]) {
        let len = self.make_string();
        let end = (self.value_start().checked_add(offset))
            .and_then(|at| at.checked_add(bytes.len()))
            .expect("SETRANGE's offset is bounded by proto-max-bulk-len");
        let at = end - bytes.len();
        if len < end {
            self.resize_payload(end);
        }
        if let Some(b) = self.payload_mut() {
            b[at..at + bytes.len()].copy_from_slice(bytes);
        }
        self.data.set_note(true);
    }

    /// Replace the value, and the flags when `flags` is `Some`; reuses the allocation when the
    /// layout is unchanged. A new value is not [`Item::edited`].
    pub(crate) fn replace_value(&mut self, value: &[u8], flags: Option<u32>) {
        let flags = flags.unwrap_or_else(|| self.flags());
        let start = self.value_start();
        let same_layout = (flags != 0) == (self.meta & HAS_FLAGS != 0);
        let k = self.key_len();
        match self.payload_mut() {
            Some(data) if same_layout && data.len() - start == value.len() => {
                if flags != 0 {
                    data[k..k + 4].copy_from_slice(&flags.to_be_bytes());
                }
                data[start..].copy_from_slice(value);
                self.data.set_note(false);
            }
            _ => {
                let (data, meta) = build(self.key(), flags, value, self.expire_at_ms());
                self.data = data;
                self.meta = meta;
            }
        }
    }
}

/// Redis's initial LFU counter for a new key, so fresh keys are not evicted at once.
const LFU_INIT_VAL: u32 = 5;

/// The access clock for one operation: the policy family, the time and the LFU tunables.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    pub(crate) lfu: bool,
    pub(crate) now_ms: u64,
    pub(crate) lfu_log_factor: u32,
    pub(crate) lfu_decay_time: u32,
}

impl Clock {
    fn lru_now(&self) -> u32 {
        self.now_ms as u32
    }

    fn lfu_minutes(&self) -> u32 {
        ((self.now_ms / 60_000) & 0xFFFF) as u32
    }

    /// The access word of a new key.
    pub(crate) fn initial(&self) -> u32 {
        if self.lfu {
            (self.lfu_minutes() << 8) | LFU_INIT_VAL
        } else {
            self.lru_now()
        }
    }

    /// Record an access (Redis `updateLFU` / LRU clock refresh).
    pub(crate) fn touch(&self, access: &mut u32) {
        if self.lfu {
            let counter = self.lfu_incr(self.lfu_decayed(*access));
            *access = (self.lfu_minutes() << 8) | counter;
        } else {
            *access = self.lru_now();
        }
    }

    /// An LRU access word for a last access `idle_ms` ago (RESTORE ... IDLETIME).
    /// (The clock counts milliseconds in 32 bits: an idle time past about 49 days reads as
    /// that.)
    pub(crate) fn lru_aged(&self, idle_ms: u64) -> u32 {
        let idle = u32::try_from(idle_ms).unwrap_or(u32::MAX);
        self.lru_now().wrapping_sub(idle)
    }

    /// An LFU access word holding `counter`, decayed from now (RESTORE ... FREQ).
    pub(crate) fn lfu_with(&self, counter: u8) -> u32 {
        (self.lfu_minutes() << 8) | u32::from(counter)
    }

    /// Milliseconds since the last access (LRU reading).
    pub(crate) fn lru_idle(&self, access: u32) -> u64 {
        u64::from(self.lru_now().wrapping_sub(access))
    }

    /// Milliseconds since the access `access` records: exact under LRU, whole minutes under
    /// LFU (its word keeps the minute of the last access).
    pub(crate) fn idle_ms(&self, access: u32) -> u64 {
        if self.lfu {
            u64::from(self.lfu_elapsed(access)) * 60_000
        } else {
            self.lru_idle(access)
        }
    }

    /// Minutes since the access an LFU word records (Redis `LFUTimeElapsed`).
    fn lfu_elapsed(&self, access: u32) -> u32 {
        let last = (access >> 8) & 0xFFFF;
        let now = self.lfu_minutes();
        if now >= last {
            now - last
        } else {
            65535 - last + now
        }
    }

    /// The LFU counter after decay (Redis `LFUDecrAndReturn`).
    pub(crate) fn lfu_decayed(&self, access: u32) -> u32 {
        let counter = access & 0xFF;
        let elapsed = self.lfu_elapsed(access);
        let periods = elapsed.checked_div(self.lfu_decay_time).unwrap_or(0);
        counter.saturating_sub(periods)
    }

    /// Logarithmic increment (Redis `LFULogIncr`).
    fn lfu_incr(&self, counter: u32) -> u32 {
        if counter >= 255 {
            return 255;
        }
        let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
        let p = 1.0 / (base * f64::from(self.lfu_log_factor) + 1.0);
        if rng::next_f64() < p {
            counter + 1
        } else {
            counter
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An edit of an item, for the model test below.
    #[derive(Clone, Debug)]
    enum Edit {
        Append(Vec<u8>),
        Overwrite(usize, Vec<u8>),
        Replace(Vec<u8>, Option<u32>),
        Expire(u64),
        ToCollection,
    }

    fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => prop::collection::vec(any::<u8>(), 0..40),
            1 => prop::collection::vec(any::<u8>(), 100..5_000),
        ]
    }

    fn arb_edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            arb_bytes().prop_map(Edit::Append),
            (0usize..300, arb_bytes()).prop_map(|(o, b)| Edit::Overwrite(o, b)),
            (
                arb_bytes(),
                prop::option::of(prop_oneof![Just(0u32), any::<u32>()])
            )
                .prop_map(|(v, f)| Edit::Replace(v, f)),
            prop_oneof![Just(0u64), 1u64..u64::MAX].prop_map(Edit::Expire),
            Just(Edit::ToCollection),
        ]
    }

    /// What an item should hold: `(value, flags, expiry, is a collection)`.
    type Model = (Vec<u8>, u32, u64, bool);

    fn check(it: &Item, key: &[u8], m: &Model) -> Result<(), TestCaseError> {
        let (value, flags, at, coll) = m;
        prop_assert_eq!(it.key(), key);
        prop_assert_eq!(it.value(), &value[..]);
        prop_assert_eq!(it.flags(), *flags);
        prop_assert_eq!(it.expire_at_ms(), *at);
        prop_assert_eq!(it.kind() == Kind::String, !coll);
        if !coll {
            let extra = if *flags != 0 { 4 } else { 0 };
            let charge = key.len() + extra + value.len() + ENTRY_OVERHEAD;
            prop_assert_eq!(it.charge(), charge as u64);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 256 }))]
        /// Any sequence of edits keeps the key, value, flags and expiry time a plain model
        /// holds (the record's allocation: its length header, flags and expiry trailer).
        #[test]
        fn edits_agree_with_a_model(
            key in prop::collection::vec(any::<u8>(), 0..24),
            value in arb_bytes(),
            flags in prop_oneof![Just(0u32), any::<u32>()],
            at in prop_oneof![Just(0u64), 1u64..u64::MAX],
            edits in prop::collection::vec(arb_edit(), 0..24),
        ) {
            let mut it = Item::new(&key, &value, flags, at, 0, 1);
            let mut m: Model = (value, flags, at, false);
            check(&it, &key, &m)?;
            for e in edits {
                match e {
                    Edit::Append(b) => {
                        it.append(&b);
                        if m.3 {
                            m = (Vec::new(), 0, m.2, false);
                        }
                        m.0.extend_from_slice(&b);
                    }
                    Edit::Overwrite(o, b) => {
                        it.overwrite(o, &b);
                        if m.3 {
                            m = (Vec::new(), 0, m.2, false);
                        }
                        if m.0.len() < o + b.len() {
                            m.0.resize(o + b.len(), 0);
                        }
                        m.0[o..o + b.len()].copy_from_slice(&b);
                    }
                    Edit::Replace(v, f) => {
                        it.replace_value(&v, f);
                        let flags = f.unwrap_or(if m.3 { 0 } else { m.1 });
                        m = (v, flags, m.2, false);
                    }
                    Edit::Expire(a) => {
                        it.set_expire_at_ms(a);
                        m.2 = a;
                    }
                    Edit::ToCollection => {
                        it.replace_with_coll(Collection::List(List::default()));
                        m = (Vec::new(), 0, m.2, true);
                    }
                }
                check(&it, &key, &m)?;
            }
        }
    }

    #[test]
    fn item_layout_and_accessors() {
        assert_eq!(std::mem::size_of::<Item>(), 24);
        let mut it = Item::new(b"key", b"value", 0, 0, 0, 1);
        assert_eq!(it.key(), b"key");
        assert_eq!(it.value(), b"value");
        assert_eq!(it.flags(), 0);
        assert_eq!(it.charge(), 8 + ENTRY_OVERHEAD as u64);
        it.replace_value(b"VALUE", None);
        assert_eq!(it.value(), b"VALUE");
        it.replace_value(b"longer value", None);
        assert_eq!((it.key(), it.value()), (&b"key"[..], &b"longer value"[..]));
        assert_eq!(it.expire_at(), None);
        it.set_expire_at_ms(10);
        assert!(!it.is_expired(9));
        assert!(it.is_expired(10));
        assert_eq!((it.key(), it.value()), (&b"key"[..], &b"longer value"[..]));
        assert_eq!(it.charge(), 15 + ENTRY_OVERHEAD as u64);
    }

    #[test]
    fn append_and_overwrite_edit_in_place() {
        let mut it = Item::new(b"key", b"ab", 9, 0, 0, 1);
        it.append(b"cd");
        assert_eq!(
            (it.key(), it.value(), it.flags()),
            (&b"key"[..], &b"abcd"[..], 9)
        );
        it.overwrite(1, b"XY");
        assert_eq!(it.value(), b"aXYd");
        it.overwrite(6, b"!");
        assert_eq!(it.value(), b"aXYd\0\0!");
        assert_eq!(it.charge(), (3 + 4 + 7 + ENTRY_OVERHEAD) as u64);
    }

    #[test]
    fn edits_in_place_are_noted_until_a_new_value() {
        let mut it = Item::new(b"key", b"12", 0, 0, 0, 1);
        assert!(!it.edited());
        it.append(b"3");
        assert!(it.edited());
        it.set_expire_at_ms(1_700_000_000_123);
        assert!(it.edited(), "a TTL keeps the note");
        // The same length (rewritten in place) and another one (rebuilt) both clear it.
        it.replace_value(b"456", None);
        assert!(!it.edited());
        it.overwrite(0, b"7");
        assert!(it.edited());
        it.replace_value(b"1", Some(5));
        assert!(!it.edited());
        it.set_edited();
        assert!(it.edited() && it.value() == b"1" && it.flags() == 5);
        assert_eq!(it.expire_at(), Some(1_700_000_000_123));
        let coll = Item::new_coll(b"h", Collection::Hash(Hash::default()), 0, 0, 1);
        assert!(!coll.edited());
    }

    #[test]
    fn the_expiry_time_rides_at_the_end_of_a_string() {
        let mut it = Item::new(b"key", b"ab", 9, 0, 0, 1);
        assert_eq!(it.expire_at(), None);
        it.set_expire_at_ms(0);
        assert!(!it.data.marked(), "no TTL, no room for one");
        it.set_expire_at_ms(1_700_000_000_123);
        assert_eq!(it.expire_at(), Some(1_700_000_000_123));
        assert_eq!(
            (it.key(), it.value(), it.flags()),
            (&b"key"[..], &b"ab"[..], 9)
        );
        // Every edit keeps it, and the charge does not count it.
        it.append(b"cd");
        it.overwrite(6, b"!");
        assert_eq!(it.value(), b"abcd\0\0!");
        assert_eq!(it.expire_at(), Some(1_700_000_000_123));
        assert_eq!(it.charge(), (3 + 4 + 7 + ENTRY_OVERHEAD) as u64);
        it.replace_value(b"xyz", Some(0));
        assert_eq!((it.value(), it.flags()), (&b"xyz"[..], 0));
        assert_eq!(it.expire_at(), Some(1_700_000_000_123));
        it.replace_value(b"XYZ", None);
        assert_eq!(it.value(), b"XYZ");
        // PERSIST keeps the room and writes 0.
        it.set_expire_at_ms(0);
        assert_eq!((it.expire_at(), it.is_expired(u64::MAX)), (None, false));
        assert_eq!(it.value(), b"XYZ");
        it.set_expire_at_ms(5);
        assert!(it.is_expired(5));
        // A collection keeps it beside the key, both ways.
        it.replace_with_coll(Collection::List(List::default()));
        assert_eq!((it.key(), it.expire_at()), (&b"key"[..], Some(5)));
        it.set_expire_at_ms(6);
        it.append(b"s");
        assert_eq!(
            (it.kind(), it.value(), it.expire_at()),
            (Kind::String, &b"s"[..], Some(6))
        );
        let coll = Item::new_coll(b"k", Collection::List(List::default()), 7, 0, 1);
        assert_eq!(coll.expire_at(), Some(7));
    }

    #[test]
    fn client_flags_live_between_key_and_value() {
        let mut it = Item::new(b"key", b"value", 0xDEAD_BEEF, 0, 0, 1);
        assert_eq!(
            (it.key(), it.value(), it.flags()),
            (&b"key"[..], &b"value"[..], 0xDEAD_BEEF)
        );
        assert_eq!(it.charge(), 12 + ENTRY_OVERHEAD as u64);
        // Same layout: rewritten in place; None keeps the flags.
        it.replace_value(b"VALUE", None);
        assert_eq!((it.value(), it.flags()), (&b"VALUE"[..], 0xDEAD_BEEF));
        it.replace_value(b"VALUE", Some(7));
        assert_eq!((it.value(), it.flags()), (&b"VALUE"[..], 7));
        // Flags back to 0: the 4 bytes go away.
        it.replace_value(b"v", Some(0));
        assert_eq!(
            (it.key(), it.value(), it.flags()),
            (&b"key"[..], &b"v"[..], 0)
        );
        assert_eq!(it.charge(), 4 + ENTRY_OVERHEAD as u64);
        it.replace_value(b"", Some(u32::MAX));
        assert_eq!(
            (it.key(), it.value(), it.flags()),
            (&b"key"[..], &b""[..], u32::MAX)
        );
    }

    #[test]
    fn lfu_counter_grows_and_decays() {
        let mut clock = Clock {
            lfu: true,
            now_ms: 0,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
        };
        let mut access = clock.initial();
        assert_eq!(clock.lfu_decayed(access), LFU_INIT_VAL);
        for _ in 0..1000 {
            clock.touch(&mut access);
        }
        let hot = clock.lfu_decayed(access);
        assert!(hot > LFU_INIT_VAL + 3, "counter {hot}");
        clock.now_ms += 3 * 60_000;
        assert_eq!(clock.lfu_decayed(access), hot - 3);
    }

    #[test]
    fn lru_idle_wraps() {
        let clock = Clock {
            lfu: false,
            now_ms: (1u64 << 32) + 5,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
        };
        assert_eq!(clock.lru_idle(u32::MAX), 6);
    }

    /// Every collection key pays `CollItem`'s allocation: 96 bytes with its expiry time
    /// (jemalloc's 96 class).
    /// A sorted set's order inline once made it 152 (160): 1.72 times Redis's memory for
    /// many small hashes.
    #[test]
    fn a_collection_key_allocation_stays_small() {
        assert!(size_of::<Collection>() <= 72, "{}", size_of::<Collection>());
        assert!(size_of::<CollItem>() <= 96, "{}", size_of::<CollItem>());
        assert_eq!(size_of::<Item>(), 24);
    }
}
