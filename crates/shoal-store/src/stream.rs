//! Redis's stream value: entries in ID order, in the nodes Redis's approximate trimming
//! works on, and consumer groups with their pending entries.
//!
//! Redis keeps a stream's entries in listpacks of at most `stream-node-max-entries` (100)
//! entries and `stream-node-max-bytes` (4096) bytes, each delta-encoded from its first
//! entry's ID; `XTRIM ~` and `XADD ... MAXLEN ~` remove only whole listpacks, so which
//! entries go depends on where those nodes begin. [`Node`] is such a node: its entries packed
//! in one buffer (IDs as deltas, fields and values with LEB128 lengths), deleted ones kept in
//! place with a flag until the node's last live one goes, and the listpack's size as Redis
//! would reckon it, so nodes start where Redis's would and approximate trimming removes what
//! Redis would. An entry costs its fields' bytes and about five more (26 bytes of RSS for a
//! one-field entry against Redis's 21); a lookup by ID is a binary search over the nodes and
//! a scan of one.
//!
//! The commands' rules (ID parsing, replies, which consumer sees what) are in
//! `shoal-engine`'s `cmd/stream.rs`; this module holds the value and the operations whose
//! bookkeeping must stay consistent (Redis's `t_stream.c` counters: `entries_added`,
//! `max_deleted_entry_id`, `first_id`, a group's `entries_read`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hasher};

use crate::list::lp_entry_size;
use crate::varint;

/// Redis's `stream-node-max-entries` (fixed here).
pub const NODE_MAX_ENTRIES: u32 = 100;
/// Redis's `stream-node-max-bytes` (fixed here).
pub const NODE_MAX_BYTES: usize = 4096;

/// Redis's bound on one listpack (`STREAM_LISTPACK_MAX_SIZE`): what `stream-node-max-bytes`
/// 0, or more than this, means.
const LISTPACK_MAX_BYTES: u64 = 1 << 30;

/// When a stream starts a new node (Redis's `stream-node-max-bytes` and
/// `stream-node-max-entries`, read as `streamAppendItem` reads them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    bytes: u64,
    /// 0: no bound on entries.
    entries: u64,
}

impl NodeLimits {
    pub fn new(bytes: u64, entries: u64) -> NodeLimits {
        let bytes = if bytes == 0 || bytes > LISTPACK_MAX_BYTES {
            LISTPACK_MAX_BYTES
        } else {
            bytes
        };
        NodeLimits { bytes, entries }
    }

    /// An approximate trim's LIMIT when none is given (Redis: a hundred nodes' entries, at
    /// most a million; 10,000 when nodes have no entry bound).
    pub fn approx_limit(&self) -> u64 {
        match self.entries.saturating_mul(100) {
            0 => 10_000,
            n => n.min(1_000_000),
        }
    }
}

impl Default for NodeLimits {
    fn default() -> NodeLimits {
        NodeLimits::new(NODE_MAX_BYTES as u64, u64::from(NODE_MAX_ENTRIES))
    }
}

/// A stream entry's ID: milliseconds and a sequence number, ordered as a pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID (`None` past the last possible one).
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    }

    /// The ID before this one (`None` before 0-0).
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self
                .ms
                .checked_sub(1)
                .map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// How XTRIM and XADD's trimming option choose what to remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimBy {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Remove the entries below this ID.
    MinId(StreamId),
}

/// One of Redis's listpack nodes: the entries from `first` on, packed in one buffer, each
/// `flags u8 (bit 0: deleted) · ms − first.ms (LEB128) · seq, or seq − first.seq when the
/// millisecond is first's (LEB128) · fields' length (LEB128) · fields` (each field and value
/// a LEB128 length and its bytes). A deleted entry keeps its place, as in Redis, until its
/// node's last live entry goes and the node with it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Node {
    /// The node's master ID (its first entry's, deleted or not).
    first: StreamId,
    /// Its last entry's ID, deleted or not.
    last: StreamId,
    /// Entries written to it, deleted ones included.
    count: u32,
    /// Entries not deleted.
    live: u32,
    /// The listpack's size as Redis would reckon it (when to start a new node).
    lp_bytes: u32,
    /// The master entry's fields (a hash of them): entries with the same fields store only
    /// their values in Redis's listpack.
    master: u64,
    buf: Vec<u8>,
}

/// One entry of a node's buffer.
struct Packed {
    id: StreamId,
    deleted: bool,
    /// Where its fields are in the buffer.
    fields: std::ops::Range<usize>,
    /// Where the next entry starts.
    next: usize,
}

impl Node {
    /// The entry at `at` (a buffer this module wrote or [`Node::check`]ed).
    fn entry(&self, at: usize) -> Packed {
        let b = &self.buf;
        let deleted = b[at] & 1 != 0;
        let (dms, n1) = varint::get(&b[at + 1..]);
        let (seq, n2) = varint::get(&b[at + 1 + n1..]);
        let (len, n3) = varint::get(&b[at + 1 + n1 + n2..]);
        let start = at + 1 + n1 + n2 + n3;
        let ms = self.first.ms + dms as u64;
        let seq = if dms == 0 {
            self.first.seq + seq as u64
        } else {
            seq as u64
        };
        Packed {
            id: StreamId::new(ms, seq),
            deleted,
            fields: start..start + len,
            next: start + len,
        }
    }

    /// Every entry's start, in order.
    fn offsets(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.count as usize);
        let mut at = 0;
        while at < self.buf.len() {
            out.push(at);
            at = self.entry(at).next;
        }
        out
    }

    fn push(&mut self, id: StreamId, pairs: &[&[u8]]) {
        let dms = (id.ms - self.first.ms) as usize;
        let seq = if dms == 0 {
            (id.seq - self.first.seq) as usize
        } else {
            id.seq as usize
        };
        let len: usize = pairs.iter().map(|p| varint::len(p.len()) + p.len()).sum();
        self.buf
            .reserve(1 + varint::len(dms) + varint::len(seq) + varint::len(len) + len);
        self.buf.push(0);
        varint::put(&mut self.buf, dms);
        varint::put(&mut self.buf, seq);
        varint::put(&mut self.buf, len);
        for p in pairs {
            varint::put(&mut self.buf, p.len());
            self.buf.extend_from_slice(p);
        }
    }

    /// Whether a buffer from outside (a replicated value) holds whole entries that agree
    /// with the node's figures: ids rising from `first` to `last` above `after`, `count`
    /// entries of which `live` are not deleted (at least one), each with fields and values.
    fn check(&self, after: Option<StreamId>) -> Option<()> {
        let b = &self.buf;
        let (mut at, mut count, mut live) = (0usize, 0u32, 0u32);
        let mut prev = after;
        while at < b.len() {
            let flags = b[at];
            if flags > 1 {
                return None;
            }
            let (dms, n1) = varint::checked_get(b.get(at + 1..)?)?;
            let (seq, n2) = varint::checked_get(b.get(at + 1 + n1..)?)?;
            let (len, n3) = varint::checked_get(b.get(at + 1 + n1 + n2..)?)?;
            let start = at + 1 + n1 + n2 + n3;
            let fields = b.get(start..start.checked_add(len)?)?;
            let ms = self.first.ms.checked_add(dms as u64)?;
            let seq = if dms == 0 {
                self.first.seq.checked_add(seq as u64)?
            } else {
                seq as u64
            };
            let id = StreamId::new(ms, seq);
            if (count == 0 && id != self.first) || prev.is_some_and(|p| p >= id) {
                return None;
            }
            let mut rest = fields;
            let mut n = 0usize;
            while !rest.is_empty() {
                let (l, used) = varint::checked_get(rest)?;
                rest = rest.get(used..)?.get(l..)?;
                n += 1;
            }
            if n == 0 || !n.is_multiple_of(2) {
                return None;
            }
            prev = Some(id);
            count += 1;
            live += u32::from(flags == 0);
            at = start + len;
        }
        (count == self.count && live == self.live && live > 0 && prev == Some(self.last))
            .then_some(())
    }
}

/// A pending entry of a group: delivered and not acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    pub consumer: Box<[u8]>,
    /// Unix ms of the last delivery.
    pub delivery_ms: u64,
    pub deliveries: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    /// Unix ms of its last attempted interaction (XREADGROUP, XCLAIM, XAUTOCLAIM).
    pub seen_ms: u64,
    /// Unix ms of its last successful one (something read or claimed); -1: never.
    pub active_ms: i64,
    /// Its pending entries.
    pub pending: BTreeSet<StreamId>,
}

impl Consumer {
    pub fn new(now_ms: u64) -> Consumer {
        Consumer {
            seen_ms: now_ms,
            active_ms: -1,
            pending: BTreeSet::new(),
        }
    }
}

/// A consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The last ID delivered to the group's consumers.
    pub last_id: StreamId,
    /// Entries the group read (its logical position); -1: unknown.
    pub entries_read: i64,
    /// Every pending entry of the group.
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// The consumer `name`, created if absent; `true` when it was created.
    pub fn consumer(&mut self, name: &[u8], now_ms: u64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        let c = self
            .consumers
            .entry(name.into())
            .or_insert_with(|| Consumer::new(now_ms));
        (c, created)
    }

    /// Delivers `id` to `consumer` (which must exist): a new pending entry, or one taken over
    /// from whoever had it, with one delivery at `now_ms` (Redis's XREADGROUP).
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: u64) {
        let nack = Nack {
            consumer: consumer.into(),
            delivery_ms: now_ms,
            deliveries: 1,
        };
        if let Some(old) = self.pel.insert(id, nack) {
            if let Some(c) = self.consumers.get_mut(&old.consumer) {
                c.pending.remove(&id);
            }
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pending.insert(id);
        }
    }

    /// Moves the pending entry `id` to `consumer` (which must exist), keeping its delivery
    /// figures (the caller sets them).
    pub fn reassign(&mut self, id: StreamId, consumer: &[u8]) -> Option<&mut Nack> {
        let nack = self.pel.get_mut(&id)?;
        if *nack.consumer != *consumer {
            if let Some(c) = self.consumers.get_mut(&nack.consumer) {
                c.pending.remove(&id);
            }
            nack.consumer = consumer.into();
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pending.insert(id);
        }
        self.pel.get_mut(&id)
    }

    /// Acknowledges `id`; whether it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(nack) => {
                if let Some(c) = self.consumers.get_mut(&nack.consumer) {
                    c.pending.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Removes a consumer and its pending entries; how many it had.
    pub fn remove_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pending {
            self.pel.remove(id);
        }
        Some(c.pending.len())
    }
}

// IDs go into the nodes' buffers as `usize` varints.
const _: () = assert!(
    usize::BITS == 64,
    "a stream's IDs are packed as 64-bit varints"
);

/// A stream value (see the module documentation).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Stream {
    nodes: VecDeque<Node>,
    /// Live entries.
    length: usize,
    /// The last ID added (or set by XSETID).
    pub last_id: StreamId,
    /// The first entry's ID when the stream was last trimmed or its first entry deleted
    /// (Redis's `first_id`, XINFO's `recorded-first-entry-id`).
    pub first_id: StreamId,
    /// The largest ID XDEL removed.
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    groups: BTreeMap<Box<[u8]>, Group>,
    /// Σ of the nodes' buffer capacities, kept as they change: `heap_bytes` runs on every
    /// write (the store's accounting) and must not walk the nodes.
    buffers: Capacity,
}

impl Clone for Stream {
    /// A copy (COPY): its buffers' capacities are the copies' own, not the original's.
    fn clone(&self) -> Stream {
        let nodes = self.nodes.clone();
        let buffers = Capacity(nodes.iter().map(|n| n.buf.capacity()).sum());
        Stream {
            nodes,
            length: self.length,
            last_id: self.last_id,
            first_id: self.first_id,
            max_deleted: self.max_deleted,
            entries_added: self.entries_added,
            groups: self.groups.clone(),
            buffers,
        }
    }
}

/// Bytes counted for memory accounting only: two streams with the same entries are equal
/// whatever their buffers' spare room.
#[derive(Clone, Copy, Debug, Default)]
struct Capacity(usize);

impl PartialEq for Capacity {
    fn eq(&self, _: &Capacity) -> bool {
        true
    }
}

impl Eq for Capacity {}

/// An entry's fields and values, in order (field, value, field, value, ...).
pub fn fields(packed: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut rest = packed;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (len, n) = varint::get(rest);
        let (v, tail) = rest[n..].split_at(len);
        rest = tail;
        Some(v)
    })
}

/// Bytes an integer takes in a listpack, with its back-length (one byte: the encodings are
/// at most 9 bytes).
fn lp_int_size(n: i64) -> usize {
    let enc = match n {
        0..=127 => 1,
        -4096..=4095 => 2,
        _ if i16::try_from(n).is_ok() => 3,
        -8_388_608..=8_388_607 => 4,
        _ if i32::try_from(n).is_ok() => 5,
        _ => 9,
    };
    enc + 1
}

fn hash_fields<'a>(names: impl Iterator<Item = &'a [u8]>) -> u64 {
    let mut h = foldhash::fast::FixedState::with_seed(0x5eed).build_hasher();
    for n in names {
        h.write_usize(n.len());
        h.write(n);
    }
    h.finish()
}

/// An entry's packed fields with its ID, as the ranges yield it.
pub type EntryRef<'a> = (StreamId, &'a [u8]);

/// The live entries from `lo` to `hi` (both included), from either end
/// ([`Stream::range`]).
pub struct Range<'a> {
    nodes: &'a VecDeque<Node>,
    lo: StreamId,
    hi: StreamId,
    done: bool,
    /// The front's node and offset.
    front: Option<(usize, usize)>,
    /// The back's node, its entries' offsets, and how many of them are left.
    back: Option<(usize, Vec<usize>)>,
}

impl<'a> Range<'a> {
    /// Takes `id` as yielded: the other end stops before it.
    fn took(&mut self, id: StreamId, front: bool) {
        let next = if front { id.next() } else { id.prev() };
        match next {
            Some(n) if front => self.lo = n,
            Some(n) => self.hi = n,
            None => self.done = true,
        }
        if self.lo > self.hi {
            self.done = true;
        }
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = EntryRef<'a>;

    fn next(&mut self) -> Option<EntryRef<'a>> {
        if self.done {
            return None;
        }
        let nodes = self.nodes;
        let (mut i, mut at) = match self.front {
            Some(f) => f,
            None => (nodes.partition_point(|n| n.last < self.lo), 0),
        };
        while let Some(node) = nodes.get(i) {
            if at >= node.buf.len() {
                (i, at) = (i + 1, 0);
                continue;
            }
            let e = node.entry(at);
            at = e.next;
            if e.deleted || e.id < self.lo {
                continue;
            }
            if e.id > self.hi {
                break;
            }
            self.front = Some((i, at));
            self.took(e.id, true);
            return Some((e.id, &node.buf[e.fields]));
        }
        self.done = true;
        None
    }
}

impl<'a> DoubleEndedIterator for Range<'a> {
    fn next_back(&mut self) -> Option<EntryRef<'a>> {
        if self.done {
            return None;
        }
        let nodes = self.nodes;
        let (mut j, mut offsets) = match self.back.take() {
            Some(b) => b,
            None => {
                let j = nodes.partition_point(|n| n.first <= self.hi);
                match j.checked_sub(1) {
                    Some(j) => (j, nodes[j].offsets()),
                    None => {
                        self.done = true;
                        return None;
                    }
                }
            }
        };
        loop {
            let Some(at) = offsets.pop() else {
                let Some(prev) = j.checked_sub(1) else {
                    break;
                };
                j = prev;
                offsets = nodes[j].offsets();
                continue;
            };
            let node = &nodes[j];
            let e = node.entry(at);
            if e.deleted || e.id > self.hi {
                continue;
            }
            if e.id < self.lo {
                break;
            }
            self.back = Some((j, offsets));
            self.took(e.id, false);
            return Some((e.id, &node.buf[e.fields]));
        }
        self.done = true;
        None
    }
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    pub fn len(&self) -> usize {
        self.length
    }

    /// No entries (an empty stream is still a value: see `Collection::is_empty`).
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Listpack nodes (XINFO's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Where `id` is: its node and offset, deleted or not.
    fn find(&self, id: StreamId) -> Option<(usize, usize)> {
        let i = self
            .nodes
            .partition_point(|n| n.first <= id)
            .checked_sub(1)?;
        let node = &self.nodes[i];
        if node.last < id {
            return None;
        }
        let mut at = 0;
        while at < node.buf.len() {
            let e = node.entry(at);
            if e.id == id {
                return Some((i, at));
            }
            if e.id > id {
                return None;
            }
            at = e.next;
        }
        None
    }

    pub fn get(&self, id: StreamId) -> Option<&[u8]> {
        let (i, at) = self.find(id)?;
        let node = &self.nodes[i];
        let e = node.entry(at);
        (!e.deleted).then(|| &node.buf[e.fields])
    }

    /// The live entries from `lo` to `hi`, both included, in order (and reversed with
    /// `.rev()`).
    pub fn range(&self, lo: StreamId, hi: StreamId) -> Range<'_> {
        Range {
            nodes: &self.nodes,
            lo,
            hi,
            done: lo > hi,
            front: None,
            back: None,
        }
    }

    /// The last entry's ID, deleted or not: a new entry, or XSETID's last ID, may not go
    /// below it (Redis checks the last live entry only, which lets a stream hold IDs out of
    /// order once XSETID went below a deleted one).
    pub fn last_written(&self) -> Option<StreamId> {
        self.nodes.back().map(|n| n.last)
    }

    pub fn first(&self) -> Option<EntryRef<'_>> {
        self.range(StreamId::MIN, StreamId::MAX).next()
    }

    pub fn last(&self) -> Option<EntryRef<'_>> {
        self.range(StreamId::MIN, StreamId::MAX).next_back()
    }

    /// Adds an entry (`id` MUST be above every entry's; `pairs` field, value, ...), in nodes
    /// of Redis's default bounds.
    pub fn append(&mut self, id: StreamId, pairs: &[&[u8]]) {
        self.append_with(id, pairs, NodeLimits::default());
    }

    /// [`Stream::append`] with `limits` deciding when a new node starts.
    pub fn append_with(&mut self, id: StreamId, pairs: &[&[u8]], limits: NodeLimits) {
        debug_assert!(self.nodes.back().is_none_or(|n| id > n.last));
        let total: usize = pairs.iter().map(|p| p.len()).sum();
        let names = || pairs.iter().step_by(2).copied();
        let fresh = match self.nodes.back() {
            None => true,
            Some(n) => {
                u64::from(n.lp_bytes) + total as u64 >= limits.bytes
                    || (limits.entries > 0 && u64::from(n.count) >= limits.entries)
            }
        };
        if fresh {
            // The node before is closed: give its spare room back.
            if let Some(n) = self.nodes.back_mut() {
                let before = n.buf.capacity();
                n.buf.shrink_to_fit();
                self.buffers.0 -= before - n.buf.capacity();
            }
            // Header and end, count, deleted, field count, fields, terminator.
            let master =
                7 + 3 * lp_int_size(0) + names().map(lp_entry_size).sum::<usize>() + lp_int_size(0);
            self.nodes.push_back(Node {
                first: id,
                last: id,
                count: 0,
                live: 0,
                lp_bytes: master as u32,
                master: hash_fields(names()),
                buf: Vec::new(),
            });
        }
        let node = self.nodes.back_mut().expect("pushed above");
        let same = node.master == hash_fields(names());
        let nfields = pairs.len() / 2;
        let mut size = lp_int_size(0)
            + lp_int_size(id.ms.wrapping_sub(node.first.ms) as i64)
            + lp_int_size(id.seq.wrapping_sub(node.first.seq) as i64)
            + lp_int_size(nfields as i64 * if same { 1 } else { 2 } + 3);
        if same {
            size += pairs
                .iter()
                .skip(1)
                .step_by(2)
                .map(|v| lp_entry_size(v))
                .sum::<usize>();
        } else {
            size +=
                lp_int_size(nfields as i64) + pairs.iter().map(|v| lp_entry_size(v)).sum::<usize>();
        }
        node.lp_bytes = node
            .lp_bytes
            .saturating_add(u32::try_from(size).unwrap_or(u32::MAX));
        node.count += 1;
        node.live += 1;
        node.last = id;
        let before = node.buf.capacity();
        node.push(id, pairs);
        self.buffers.0 += node.buf.capacity() - before;
        self.length += 1;
        if self.length == 1 {
            self.first_id = id;
        }
        self.last_id = id;
        self.entries_added = self.entries_added.wrapping_add(1);
    }

    /// Marks the entry at node `i`, offset `at` deleted (it must be live); its node goes
    /// with its last live entry. Whether the node went.
    fn remove_at(&mut self, i: usize, at: usize) -> bool {
        let node = &mut self.nodes[i];
        node.buf[at] |= 1;
        node.live -= 1;
        self.length -= 1;
        if node.live == 0 {
            self.buffers.0 -= node.buf.capacity();
            self.nodes.remove(i);
            return true;
        }
        false
    }

    fn record_first(&mut self) {
        self.first_id = self.first().map_or(StreamId::MIN, |(id, _)| id);
    }

    /// XDEL of one ID: whether it was there. Does not update `first_id` (see
    /// [`Stream::deleted`]).
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((i, at)) = self.find(id) else {
            return false;
        };
        if self.nodes[i].entry(at).deleted {
            return false;
        }
        self.remove_at(i, at);
        if id > self.max_deleted {
            self.max_deleted = id;
        }
        true
    }

    /// After XDEL removed entries: records the new first ID (when the first entry went or
    /// the stream is empty), as Redis's `xdelCommand`.
    pub fn deleted(&mut self, first_went: bool) {
        if self.length == 0 || first_went {
            self.record_first();
        }
    }

    /// Redis's `streamTrim`: removes entries from the head by `by`; with `approx` only whole
    /// nodes, and at most `limit` entries (0: no limit; nodes whose entries would pass it
    /// stay). The entries removed.
    pub fn trim(&mut self, by: TrimBy, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some(node) = self.nodes.front() {
            if let TrimBy::MaxLen(max) = by {
                if self.length as u64 <= max {
                    break;
                }
            }
            let entries = u64::from(node.live);
            if limit > 0 && deleted + entries > limit {
                break;
            }
            let whole = match by {
                TrimBy::MaxLen(max) => self.length as u64 - entries >= max,
                TrimBy::MinId(min) => node.last < min,
            };
            if whole {
                if let Some(n) = self.nodes.pop_front() {
                    self.buffers.0 -= n.buf.capacity();
                }
                self.length -= entries as usize;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let mut at = 0;
            while at < self.nodes[0].buf.len() {
                let e = self.nodes[0].entry(at);
                let stop = match by {
                    TrimBy::MaxLen(max) => self.length as u64 <= max,
                    TrimBy::MinId(min) => e.id >= min,
                };
                if stop {
                    break;
                }
                if !e.deleted {
                    deleted += 1;
                    // The node's last live entry (its last entry, deleted, at or past
                    // MINID): the node goes with it.
                    if self.remove_at(0, at) {
                        break;
                    }
                }
                at = e.next;
            }
            break;
        }
        self.record_first();
        deleted
    }

    /// Whether an XDEL may have removed an entry between `start` and the end of the stream
    /// (Redis's `streamRangeHasTombstones`, `end` open).
    pub fn has_tombstones_from(&self, start: StreamId) -> bool {
        // A deletion before the first entry was trimmed away with it.
        self.length > 0
            && !self.max_deleted.is_zero()
            && self.first_id <= self.max_deleted
            && start <= self.max_deleted
    }

    /// How many entries were added up to and including `id`, when that can be known
    /// (Redis's `streamEstimateDistanceFromFirstEverEntry`); -1 when not.
    pub fn entries_up_to(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        let added = self.entries_added as i64;
        if self.length == 0 && id <= self.last_id {
            return added;
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return added,
            std::cmp::Ordering::Greater => return -1,
            std::cmp::Ordering::Less => {}
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return added.wrapping_sub(self.length as i64),
                std::cmp::Ordering::Equal => {
                    return added.wrapping_sub(self.length as i64).wrapping_add(1)
                }
                std::cmp::Ordering::Greater => {}
            }
        }
        -1
    }
    /// A group's lag (entries not yet read by it), when it can be known (Redis's
    /// `streamReplyWithCGLag`).
    /// (Negative when a group was told it read more than was added, as Redis shows it.)
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        let added = self.entries_added as i64;
        if g.entries_read != -1 && !self.has_tombstones_from(g.last_id) {
            return Some(added.wrapping_sub(g.entries_read));
        }
        let read = self.entries_up_to(g.last_id);
        (read != -1).then(|| added.wrapping_sub(read))
    }

    /// Moves a group's position past `id`, counting the read (Redis's XREADGROUP).
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let has_tombs = self.has_tombstones_from(id);
        let estimate = self.entries_up_to(id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(name) else {
            return;
        };
        if id > g.last_id {
            if g.entries_read != -1 && !has_tombs {
                g.entries_read = g.entries_read.wrapping_add(1);
            } else if added > 0 {
                g.entries_read = estimate;
            }
            g.last_id = id;
        }
    }

    pub fn groups(&self) -> &BTreeMap<Box<[u8]>, Group> {
        &self.groups
    }

    pub fn group(&self, name: &[u8]) -> Option<&Group> {
        self.groups.get(name)
    }

    pub fn group_mut(&mut self, name: &[u8]) -> Option<&mut Group> {
        self.groups.get_mut(name)
    }

    /// Creates a group; `false` if it exists.
    pub fn create_group(&mut self, name: &[u8], group: Group) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.groups.insert(name.into(), group);
        true
    }

    pub fn destroy_group(&mut self, name: &[u8]) -> bool {
        self.groups.remove(name).is_some()
    }

    /// Heap bytes, for `used_memory` and MEMORY USAGE: the nodes' buffers, the groups'
    /// pending entries and consumers (tree slots estimated). Walks the groups and their
    /// consumers, not the entries or the pending entries: the store calls it on every write.
    pub fn heap_bytes(&self) -> usize {
        let nodes = self.buffers.0 + self.nodes.capacity() * std::mem::size_of::<Node>();
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| {
                let consumers: usize = g.consumers.keys().map(|n| 96 + n.len()).sum();
                // Each pending entry: its slot in the group's tree (with the consumer's name,
                // about 16 bytes) and in its consumer's.
                128 + name.len() + consumers + g.pel.len() * (72 + 16 + 24)
            })
            .sum();
        nodes + groups
    }

    /// The replication form: every counter, the nodes with their buffers, and the groups.
    pub fn encode(&self) -> Vec<u8> {
        let bufs: usize = self.nodes.iter().map(|n| n.buf.len() + 68).sum();
        let mut out = Vec::with_capacity(64 + bufs);
        let id = |out: &mut Vec<u8>, id: StreamId| {
            out.extend_from_slice(&id.ms.to_be_bytes());
            out.extend_from_slice(&id.seq.to_be_bytes());
        };
        let bytes = |out: &mut Vec<u8>, b: &[u8]| {
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        };
        let u64 = |out: &mut Vec<u8>, n: u64| out.extend_from_slice(&n.to_be_bytes());
        id(&mut out, self.last_id);
        id(&mut out, self.first_id);
        id(&mut out, self.max_deleted);
        u64(&mut out, self.entries_added);
        u64(&mut out, self.nodes.len() as u64);
        for n in &self.nodes {
            id(&mut out, n.first);
            id(&mut out, n.last);
            u64(&mut out, (u64::from(n.count) << 32) | u64::from(n.live));
            u64(&mut out, u64::from(n.lp_bytes));
            u64(&mut out, n.master);
            bytes(&mut out, &n.buf);
        }
        u64(&mut out, self.groups.len() as u64);
        for (name, g) in &self.groups {
            bytes(&mut out, name);
            id(&mut out, g.last_id);
            u64(&mut out, g.entries_read as u64);
            u64(&mut out, g.consumers.len() as u64);
            for (cname, c) in &g.consumers {
                bytes(&mut out, cname);
                u64(&mut out, c.seen_ms);
                u64(&mut out, c.active_ms as u64);
            }
            u64(&mut out, g.pel.len() as u64);
            for (k, n) in &g.pel {
                id(&mut out, *k);
                bytes(&mut out, &n.consumer);
                u64(&mut out, n.delivery_ms);
                u64(&mut out, n.deliveries);
            }
        }
        out
    }

    /// The stream [`Stream::encode`] wrote, or `None` if `b` is not one (every node's
    /// buffer is read through and must agree with its figures).
    pub fn decode(b: &[u8]) -> Option<Stream> {
        let mut r = Reader(b);
        let mut s = Stream {
            last_id: r.id()?,
            first_id: r.id()?,
            max_deleted: r.id()?,
            entries_added: r.u64()?,
            ..Stream::default()
        };
        // A node takes 60 bytes and its buffer (6 at least).
        let nodes = r.count(66)?;
        for _ in 0..nodes {
            let (first, last) = (r.id()?, r.id()?);
            let counts = r.u64()?;
            let node = Node {
                first,
                last,
                count: (counts >> 32) as u32,
                live: counts as u32,
                lp_bytes: u32::try_from(r.u64()?).ok()?,
                master: r.u64()?,
                buf: r.bytes()?.to_vec(),
            };
            node.check(s.nodes.back().map(|n| n.last))?;
            s.length += node.live as usize;
            s.buffers.0 += node.buf.capacity();
            s.nodes.push_back(node);
        }
        // No entry above the last ID (the next one would go below it).
        if s.nodes.back().is_some_and(|n| n.last > s.last_id) {
            return None;
        }
        let groups = r.count(36)?;
        for _ in 0..groups {
            let name: Box<[u8]> = r.bytes()?.into();
            let mut g = Group::new(r.id()?, r.u64()? as i64);
            let consumers = r.count(20)?;
            for _ in 0..consumers {
                let cname: Box<[u8]> = r.bytes()?.into();
                let mut c = Consumer::new(r.u64()?);
                c.active_ms = r.u64()? as i64;
                if g.consumers.insert(cname, c).is_some() {
                    return None;
                }
            }
            let pel = r.count(36)?;
            for _ in 0..pel {
                let id = r.id()?;
                let consumer: Box<[u8]> = r.bytes()?.into();
                if !g.consumers.get_mut(&consumer)?.pending.insert(id) {
                    return None;
                }
                let nack = Nack {
                    consumer,
                    delivery_ms: r.u64()?,
                    deliveries: r.u64()?,
                };
                if g.pel.insert(id, nack).is_some() {
                    return None;
                }
            }
            if s.groups.insert(name, g).is_some() {
                return None;
            }
        }
        r.0.is_empty().then_some(s)
    }
}

/// Reads [`Stream::encode`]'s form, every length checked against what is left.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn u64(&mut self) -> Option<u64> {
        let (n, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_be_bytes(*n))
    }

    fn id(&mut self) -> Option<StreamId> {
        Some(StreamId::new(self.u64()?, self.u64()?))
    }

    /// A count of items of at least `min` bytes each, checked against what is left.
    fn count(&mut self, min: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.0.len() / min).then_some(n)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let (n, rest) = self.0.split_first_chunk::<4>()?;
        let n = u32::from_be_bytes(*n) as usize;
        let (v, rest) = (rest.get(..n)?, rest.get(n..)?);
        self.0 = rest;
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    fn filled(n: u64) -> Stream {
        let mut s = Stream::new();
        for i in 1..=n {
            s.append(id(i, 0), &[b"f", b"v"]);
        }
        s
    }

    #[test]
    fn ids_step_and_print_as_redis() {
        assert_eq!(id(1, u64::MAX).next(), Some(id(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(id(2, 0).prev(), Some(id(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        assert_eq!(id(5, 7).to_string(), "5-7");
    }

    #[test]
    fn an_approximate_trim_s_default_limit_is_redis_s() {
        assert_eq!(NodeLimits::default().approx_limit(), 10_000);
        assert_eq!(NodeLimits::new(0, 0).approx_limit(), 10_000);
        assert_eq!(NodeLimits::new(0, 20_000).approx_limit(), 1_000_000);
        assert_eq!(NodeLimits::new(0, 7).approx_limit(), 700);
    }

    #[test]
    fn nodes_hold_a_hundred_small_entries() {
        let s = filled(250);
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.len(), 250);
    }

    #[test]
    fn approximate_trim_removes_whole_nodes_only() {
        let mut s = filled(250);
        // Keeping 120 of 250: the first node (100) can go, the second (100) cannot.
        assert_eq!(s.trim(TrimBy::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.first_id, id(101, 0));
        // Exact: down to 120.
        assert_eq!(s.trim(TrimBy::MaxLen(120), false, 0), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first().unwrap().0, id(131, 0));
        // The limit keeps a node whose entries would pass it.
        let mut s = filled(250);
        assert_eq!(s.trim(TrimBy::MaxLen(0), true, 150), 100);
        assert_eq!(s.trim(TrimBy::MinId(id(240, 0)), false, 0), 139);
        assert_eq!(s.first().unwrap().0, id(240, 0));
    }

    #[test]
    fn large_entries_start_nodes_at_the_byte_bound() {
        let mut s = Stream::new();
        let v = vec![b'x'; 1000];
        for i in 1..=10 {
            s.append(id(i, 0), &[b"f", &v]);
        }
        // About four 1,000-byte values fit a 4,096-byte node.
        assert!(
            s.node_count() >= 3 && s.node_count() <= 4,
            "{}",
            s.node_count()
        );
    }

    #[test]
    fn deletion_counts_as_redis() {
        let mut s = filled(5);
        assert!(s.delete(id(3, 0)));
        assert!(!s.delete(id(3, 0)));
        s.deleted(false);
        assert_eq!(s.max_deleted, id(3, 0));
        assert_eq!(s.first_id, id(1, 0));
        assert!(s.delete(id(1, 0)));
        s.deleted(true);
        assert_eq!(s.first_id, id(2, 0));
        assert_eq!(s.entries_up_to(id(5, 0)), 5);
        assert_eq!(s.entries_up_to(id(6, 0)), -1);
        assert_eq!(s.entries_up_to(id(2, 0)), -1, "a deletion after it");
        let mut g = Group::new(StreamId::MIN, -1);
        assert_eq!(s.lag(&g), None);
        g.last_id = id(5, 0);
        assert_eq!(s.lag(&g), Some(0));
        // A stream whose every entry went: the node too.
        for i in [2, 4, 5] {
            assert!(s.delete(id(i, 0)));
        }
        s.deleted(false);
        assert_eq!((s.len(), s.node_count(), s.first_id), (0, 0, StreamId::MIN));
    }

    #[test]
    fn groups_move_pending_entries_between_consumers() {
        let mut g = Group::new(StreamId::MIN, 0);
        g.consumer(b"a", 1);
        g.consumer(b"b", 1);
        g.deliver(id(1, 0), b"a", 10);
        g.deliver(id(2, 0), b"a", 10);
        g.deliver(id(1, 0), b"b", 20);
        assert_eq!(g.consumers[&b"a"[..]].pending.len(), 1);
        assert_eq!(g.consumers[&b"b"[..]].pending.len(), 1);
        g.reassign(id(2, 0), b"b").unwrap().deliveries += 1;
        assert_eq!(g.pel[&id(2, 0)].deliveries, 2);
        assert!(g.consumers[&b"a"[..]].pending.is_empty());
        assert!(g.ack(id(1, 0)));
        assert!(!g.ack(id(1, 0)));
        assert_eq!(g.remove_consumer(b"b"), Some(1));
        assert!(g.pel.is_empty());
    }

    #[test]
    fn ranges_run_from_either_end_past_deleted_entries() {
        let mut s = filled(250);
        for i in [1, 2, 100, 101, 150, 250] {
            assert!(s.delete(id(i, 0)));
        }
        let ids = |it: &mut dyn Iterator<Item = EntryRef<'_>>| -> Vec<u64> {
            it.map(|(i, _)| i.ms).collect()
        };
        let want: Vec<u64> = (3..=249).filter(|i| ![100, 101, 150].contains(i)).collect();
        assert_eq!(ids(&mut s.range(StreamId::MIN, StreamId::MAX)), want);
        let mut rev = want.clone();
        rev.reverse();
        assert_eq!(ids(&mut s.range(StreamId::MIN, StreamId::MAX).rev()), rev);
        assert_eq!(ids(&mut s.range(id(99, 0), id(102, 0))), [99, 102]);
        assert_eq!(ids(&mut s.range(id(99, 0), id(102, 0)).rev()), [102, 99]);
        // Both ends of one range meet without yielding an entry twice.
        let mut r = s.range(id(10, 0), id(14, 0));
        let got = [
            r.next(),
            r.next_back(),
            r.next(),
            r.next_back(),
            r.next(),
            r.next(),
        ];
        let got: Vec<Option<u64>> = got.iter().map(|e| e.map(|(i, _)| i.ms)).collect();
        assert_eq!(
            got,
            [Some(10), Some(14), Some(11), Some(13), Some(12), None]
        );
        assert_eq!(s.get(id(100, 0)), None, "deleted");
        assert_eq!(
            fields(s.get(id(99, 0)).unwrap()).collect::<Vec<_>>(),
            [b"f", b"v"]
        );
        assert_eq!(s.first().unwrap().0, id(3, 0));
        assert_eq!(s.last().unwrap().0, id(249, 0));
        assert!(s.range(id(5, 0), id(4, 0)).next().is_none());
    }

    #[test]
    fn a_minid_trim_that_takes_a_nodes_last_live_entry_takes_the_node() {
        let mut s = filled(150);
        assert!(s.delete(id(100, 0)));
        for i in 1..=98 {
            assert!(s.delete(id(i, 0)));
        }
        // The first node holds 99 (live) and 100 (deleted, its last): MINID 100 takes 99.
        assert_eq!(s.trim(TrimBy::MinId(id(100, 0)), false, 0), 1);
        assert_eq!((s.len(), s.node_count()), (50, 1));
        assert_eq!(s.first_id, id(101, 0));
    }

    proptest::proptest! {
        /// Random appends (one or many fields, values of any size), deletions and exact
        /// trims agree with a `BTreeMap` model read from both ends, and every state
        /// survives its replication form.
        #[test]
        fn streams_behave_as_an_ordered_map(ops in proptest::collection::vec((0u8..4, 0u64..400, 0usize..3000), 1..300)) {
            let mut s = Stream::new();
            let mut model: BTreeMap<StreamId, Vec<Vec<u8>>> = BTreeMap::new();
            let mut next = 1u64;
            for (op, n, size) in ops {
                match op {
                    0 | 1 => {
                        let id = StreamId::new(next, n % 3);
                        next += 1 + n % 2;
                        let v = vec![b'v'; size % if op == 0 { 40 } else { 3000 }];
                        let pairs: Vec<Vec<u8>> = if n % 5 == 0 {
                            vec![b"a".to_vec(), v.clone(), b"b".to_vec(), n.to_string().into_bytes()]
                        } else {
                            vec![b"f".to_vec(), v]
                        };
                        let refs: Vec<&[u8]> = pairs.iter().map(|p| &p[..]).collect();
                        s.append(id, &refs);
                        model.insert(id, pairs);
                    }
                    2 => {
                        let Some(&id) = model.keys().nth(n as usize % model.len().max(1)) else {
                            continue;
                        };
                        proptest::prop_assert!(s.delete(id));
                        model.remove(&id);
                        proptest::prop_assert!(!s.delete(id));
                    }
                    _ => {
                        let keep = n as usize % 60;
                        s.trim(TrimBy::MaxLen(keep as u64), false, 0);
                        while model.len() > keep {
                            model.pop_first();
                        }
                    }
                }
                let want: Vec<(StreamId, Vec<Vec<u8>>)> =
                    model.iter().map(|(k, v)| (*k, v.clone())).collect();
                let got: Vec<(StreamId, Vec<Vec<u8>>)> = s
                    .range(StreamId::MIN, StreamId::MAX)
                    .map(|(id, p)| (id, fields(p).map(|f| f.to_vec()).collect()))
                    .collect();
                proptest::prop_assert_eq!(&got, &want);
                let mut back: Vec<StreamId> =
                    s.range(StreamId::MIN, StreamId::MAX).rev().map(|(id, _)| id).collect();
                back.reverse();
                proptest::prop_assert_eq!(back, model.keys().copied().collect::<Vec<_>>());
                proptest::prop_assert_eq!(s.len(), model.len());
                let capacity: usize = s.nodes.iter().map(|n| n.buf.capacity()).sum();
                proptest::prop_assert_eq!(s.buffers.0, capacity, "the accounting follows");
                let again = Stream::decode(&s.encode());
                proptest::prop_assert_eq!(again.as_ref(), Some(&s));
            }
        }
    }

    #[test]
    fn the_largest_ids_and_the_smallest_nodes_survive_the_replication_form() {
        let mut s = Stream::new();
        s.append(id(0, 1), &[b"f", b"v"]);
        s.append(id(0, u64::MAX), &[b"f", b"v"]);
        s.append(id(u64::MAX, 0), &[b"f", b"v"]);
        assert_eq!(Stream::decode(&s.encode()), Some(s.clone()));
        // Nodes of one tiny entry each (a large one starts the next, then goes).
        let mut s = Stream::new();
        let big = vec![b'x'; 5000];
        for i in 1..=20 {
            s.append(id(2 * i, 0), &[b"", b""]);
            s.append(id(2 * i + 1, 0), &[b"f", &big]);
        }
        for i in 1..=20 {
            assert!(s.delete(id(2 * i + 1, 0)));
        }
        assert!(s.node_count() >= 20, "{}", s.node_count());
        assert_eq!(Stream::decode(&s.encode()), Some(s.clone()));
        // A copy counts its own buffers.
        let copy = s.clone();
        let capacity: usize = copy.nodes.iter().map(|n| n.buf.capacity()).sum();
        assert_eq!(copy.buffers.0, capacity);
    }

    #[test]
    fn the_replication_form_round_trips_and_refuses_garbage() {
        let mut s = filled(150);
        s.delete(id(7, 0));
        let mut g = Group::new(id(3, 0), 3);
        g.consumer(b"c", 5);
        g.deliver(id(2, 0), b"c", 6);
        s.create_group(b"g", g);
        let b = s.encode();
        assert_eq!(Stream::decode(&b), Some(s.clone()));
        for cut in 0..b.len() {
            assert!(Stream::decode(&b[..cut]).is_none(), "cut at {cut}");
        }
        let mut long = b.clone();
        long.push(0);
        assert!(Stream::decode(&long).is_none());
    }
}
