//! Redis's hash value: fields mapped to values, in one of Redis's two encodings.
//!
//! - `listpack` while small (at most [`HASH_ENTRIES`] fields, none of its fields or values
//!   longer than [`HASH_VALUE`] bytes: `hash-max-listpack-*`, 512 and 64 by default):
//!   one buffer of length-prefixed fields and values in insertion order, searched linearly,
//!   as Redis does. Replies list fields in that order, as Redis's do.
//! - `hashtable` beyond (converted once, never back, as Redis): a dense `Vec` of entries,
//!   each holding the field's length, the field and the value (in the entry itself when they
//!   fit [`INLINE`] bytes, else in one allocation), indexed by a
//!   `hashbrown::HashTable<u32>` (the store's own layout). A lookup of a short field thus
//!   reads three cache lines (four for the quarter of entries that straddle two) (the control bytes, the index slot, the entry), as Redis's
//!   dict does (bucket, entry, key); with the bytes always in an allocation it was four,
//!   and the fourth was the costliest (perf of SADD at pipeline 16, 100,000 members).
//!   Removal swaps the last entry in,
//!   so a random field is one index away (HRANDFIELD) and a scan that walks the entries from
//!   the end never misses one that stayed (HSCAN).
//!
//! [`Hash::encode`] and [`Hash::decode`] give the form replication and hand-off carry: the
//! encoding's byte, a count, then each field and value with a 4-byte length. Decoding checks
//! every length against the bytes left before it copies anything, and rebuilds the same
//! encoding.

use std::hash::BuildHasher;
use std::sync::OnceLock;

use crate::encoding::{HASH_ENTRIES, HASH_VALUE};

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use crate::varint;

/// Redis's `hash-max-listpack-entries` default.
pub const LISTPACK_ENTRIES: usize = crate::encoding::DEFAULTS[0];
/// Redis's `hash-max-listpack-value` default.
pub const LISTPACK_VALUE: usize = crate::encoding::DEFAULTS[1];

/// The process's hash seed for fields: random per process, so field names cannot be chosen
/// to collide.
pub(crate) fn field_hasher() -> FixedState {
    static SEED: OnceLock<u64> = OnceLock::new();
    FixedState::with_seed(*SEED.get_or_init(crate::rng::seed))
}

/// A hash value (see the module documentation).
#[derive(Clone, Debug)]
pub struct Hash {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    /// `count` pairs, each `varint len, field, varint len, value`.
    Packed { buf: Vec<u8>, count: u32 },
    Table {
        entries: Vec<Entry>,
        index: HashTable<u32>,
        /// Σ of the entries' allocations (malloc-rounded), kept as they change so that
        /// `heap_bytes` (read on every access for the byte accounting) is O(1).
        bytes: usize,
    },
}

/// The most bytes (`varint field length, field, value`) a table entry holds in itself.
pub(crate) const INLINE: usize = 22;

/// A table entry's bytes, `varint field length, field, value`: in the entry when they fit
/// [`INLINE`] bytes, else in one allocation. 24 bytes either way. Measured (one server,
/// redis-benchmark at pipeline 16 on one key of 100,000 members, server CPU per request,
/// against entries that always allocate): SADD of 20-byte members a quarter less; HSET of
/// 20-byte fields with 100-byte values about even (3 % more, inside the runs' spread). A
/// 32-byte entry holding 30
/// bytes also took HSET with 3-byte values inline (15 % less) but cost 5 % on the 100-byte
/// values (its entry array no longer fit the L2 cache) and a third more memory for sets of
/// short integers, so it was not kept.
#[derive(Clone, Debug)]
enum Entry {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Entry {
    fn new(field: &[u8], value: &[u8]) -> Entry {
        let n = varint::len(field.len());
        let len = n + field.len() + value.len();
        if len <= INLINE {
            let mut bytes = [0u8; INLINE];
            varint::write(&mut bytes, field.len());
            bytes[n..n + field.len()].copy_from_slice(field);
            bytes[n + field.len()..len].copy_from_slice(value);
            return Entry::Inline {
                len: len as u8,
                bytes,
            };
        }
        let mut e = Vec::with_capacity(len);
        varint::put(&mut e, field.len());
        e.extend_from_slice(field);
        e.extend_from_slice(value);
        Entry::Heap(e.into_boxed_slice())
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Entry::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Entry::Heap(b) => b,
        }
    }

    /// (field, value).
    fn split(&self) -> (&[u8], &[u8]) {
        split(self.bytes())
    }

    fn field(&self) -> &[u8] {
        self.split().0
    }

    /// What the entry's allocation takes (its bytes, malloc's header, rounded); none inline.
    fn alloc_size(&self) -> usize {
        match self {
            Entry::Inline { .. } => 0,
            Entry::Heap(b) => (b.len() + 8).next_multiple_of(16),
        }
    }
}

/// Equal when they hold the same fields and values (whatever the order or encoding).
impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl Eq for Hash {}

impl Default for Hash {
    fn default() -> Self {
        Hash::new()
    }
}

/// The packed pairs of `buf`: (field, value, start of the pair, end of the pair).
fn packed(buf: &[u8]) -> impl Iterator<Item = (&[u8], &[u8], usize, usize)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= buf.len() {
            return None;
        }
        let start = at;
        let (flen, n) = varint::get(&buf[at..]);
        at += n;
        let field = &buf[at..at + flen];
        at += flen;
        let (vlen, n) = varint::get(&buf[at..]);
        at += n;
        let value = &buf[at..at + vlen];
        at += vlen;
        Some((field, value, start, at))
    })
}

fn split(e: &[u8]) -> (&[u8], &[u8]) {
    let (flen, n) = varint::get(e);
    (&e[n..n + flen], &e[n + flen..])
}

impl Hash {
    pub fn new() -> Hash {
        Hash {
            repr: Repr::Packed {
                buf: Vec::new(),
                count: 0,
            },
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Packed { count, .. } => *count as usize,
            Repr::Table { entries, .. } => entries.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Redis's name for the encoding (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Packed { .. } => "listpack",
            Repr::Table { .. } => "hashtable",
        }
    }

    /// Heap bytes this hash takes, for `used_memory` and MEMORY USAGE: its buffers and, in a
    /// table, each entry's allocation with its malloc header.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Packed { buf, .. } => buf.capacity(),
            Repr::Table {
                entries,
                index,
                bytes,
            } => entries.capacity() * size_of::<Entry>() + index.capacity() * 5 + bytes,
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Packed { buf, .. } => packed(buf).find(|(f, ..)| *f == field).map(|(_, v, ..)| v),
            Repr::Table { entries, index, .. } => {
                let h = field_hasher().hash_one(field);
                index
                    .find(h, |&i| entries[i as usize].field() == field)
                    .map(|&i| entries[i as usize].split().1)
            }
        }
    }

    /// Sets `field` to `value`; true if the field is new. A field already there keeps its
    /// place in a listpack, as Redis's does.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.insert_limited(field, value, HASH_ENTRIES.get(), HASH_VALUE.get())
    }

    /// [`Hash::insert`] with a listpack's limits given (a set's members live in a hash with
    /// empty values, under the set's limits).
    pub(crate) fn insert_limited(
        &mut self,
        field: &[u8],
        value: &[u8],
        max_entries: usize,
        max_len: usize,
    ) -> bool {
        if let Repr::Packed { buf, count } = &mut self.repr {
            let small = field.len() <= max_len && value.len() <= max_len;
            let found = packed(buf)
                .find(|(f, ..)| *f == field)
                .map(|(.., s, e)| (s, e));
            match found {
                Some((start, end)) if small => {
                    let mut pair = Vec::with_capacity(field.len() + value.len() + 4);
                    varint::put(&mut pair, field.len());
                    pair.extend_from_slice(field);
                    varint::put(&mut pair, value.len());
                    pair.extend_from_slice(value);
                    buf.splice(start..end, pair);
                    return false;
                }
                None if small && (*count as usize) < max_entries => {
                    varint::put(buf, field.len());
                    buf.extend_from_slice(field);
                    varint::put(buf, value.len());
                    buf.extend_from_slice(value);
                    *count += 1;
                    return true;
                }
                _ => self.convert(),
            }
        }
        let Repr::Table {
            entries,
            index,
            bytes,
        } = &mut self.repr
        else {
            unreachable!("converted above")
        };
        let hasher = field_hasher();
        let h = hasher.hash_one(field);
        if let Some(&i) = index.find(h, |&i| entries[i as usize].field() == field) {
            let e = Entry::new(field, value);
            *bytes = *bytes - entries[i as usize].alloc_size() + e.alloc_size();
            entries[i as usize] = e;
            return false;
        }
        let i = entries.len() as u32;
        let e = Entry::new(field, value);
        *bytes += e.alloc_size();
        entries.push(e);
        index.insert_unique(h, i, |&j| hasher.hash_one(entries[j as usize].field()));
        true
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Packed { buf, count } => {
                let Some((start, end)) = packed(buf)
                    .find(|(f, ..)| *f == field)
                    .map(|(.., s, e)| (s, e))
                else {
                    return false;
                };
                buf.drain(start..end);
                *count -= 1;
                true
            }
            Repr::Table {
                entries,
                index,
                bytes,
            } => {
                let hasher = field_hasher();
                let h = hasher.hash_one(field);
                let Ok(found) = index.find_entry(h, |&i| entries[i as usize].field() == field)
                else {
                    return false;
                };
                let (i, _) = found.remove();
                let i = i as usize;
                let last = entries.len() - 1;
                if i != last {
                    // The last entry moves into the hole: repoint its index slot.
                    let moved = hasher.hash_one(entries[last].field());
                    if let Some(slot) = index.find_mut(moved, |&j| j as usize == last) {
                        *slot = i as u32;
                    }
                }
                *bytes -= entries.swap_remove(i).alloc_size();
                true
            }
        }
    }

    /// Fields and values: a listpack's in insertion order, a table's in entry order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let (buf, entries): (&[u8], &[Entry]) = match &self.repr {
            Repr::Packed { buf, .. } => (buf, &[]),
            Repr::Table { entries, .. } => (&[], entries),
        };
        packed(buf)
            .map(|(f, v, ..)| (f, v))
            .chain(entries.iter().map(Entry::split))
    }

    /// The `i`th field and value in [`Hash::iter`]'s order (`i < len`): direct in a table,
    /// a walk in a listpack (at most [`LISTPACK_ENTRIES`] pairs).
    pub fn nth(&self, i: usize) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Packed { .. } => self.iter().nth(i),
            Repr::Table { entries, .. } => entries.get(i).map(Entry::split),
        }
    }

    /// Before a write of `pairs` pairs whose longest field or value is `longest` bytes:
    /// becomes a table when either passes a listpack's limits, as Redis converts on the
    /// arguments before it writes (even fields already there, or a write that then sets
    /// nothing).
    pub fn prepare(&mut self, pairs: usize, longest: usize) {
        if pairs > HASH_ENTRIES.get() || longest > HASH_VALUE.get() {
            self.convert();
        }
    }

    fn convert(&mut self) {
        let Repr::Packed { buf, count } = &self.repr else {
            return;
        };
        let hasher = field_hasher();
        let mut entries = Vec::with_capacity(*count as usize + 1);
        let mut index = HashTable::with_capacity(*count as usize + 1);
        let mut bytes = 0;
        for (f, v, ..) in packed(buf) {
            let i = entries.len() as u32;
            let e = Entry::new(f, v);
            bytes += e.alloc_size();
            entries.push(e);
            index.insert_unique(hasher.hash_one(f), i, |&j: &u32| {
                hasher.hash_one(entries[j as usize].field())
            });
        }
        self.repr = Repr::Table {
            entries,
            index,
            bytes,
        };
    }

    /// The replication form: the encoding's byte (0 listpack, 1 hashtable), a 4-byte count,
    /// then per pair a 4-byte length and the field, a 4-byte length and the value
    /// (big-endian).
    pub fn encode(&self) -> Vec<u8> {
        let size: usize = self.iter().map(|(f, v)| 8 + f.len() + v.len()).sum();
        let mut out = Vec::with_capacity(5 + size);
        out.push(u8::from(matches!(self.repr, Repr::Table { .. })));
        out.extend_from_slice(&(self.len() as u32).to_be_bytes());
        for (f, v) in self.iter() {
            out.extend_from_slice(&(f.len() as u32).to_be_bytes());
            out.extend_from_slice(f);
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(v);
        }
        out
    }

    /// The hash [`Hash::encode`] wrote, or `None` if `b` is not one (truncated, trailing
    /// bytes, no pairs, a count beyond what the bytes can hold, a field twice, an unknown
    /// encoding).
    pub fn decode(b: &[u8]) -> Option<Hash> {
        fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            if b.len() < n {
                return None;
            }
            let (head, rest) = b.split_at(n);
            *b = rest;
            Some(head)
        }
        fn len(b: &mut &[u8]) -> Option<usize> {
            let raw = take(b, 4)?;
            Some(u32::from_be_bytes(raw.try_into().ok()?) as usize)
        }
        let (&encoding, mut b) = b.split_first()?;
        let count = len(&mut b)?;
        // An empty hash is no value: a key holds none.
        if count == 0 || count > b.len() / 8 || encoding > 1 {
            return None;
        }
        let mut h = Hash::new();
        if encoding == 1 {
            h.convert();
        }
        for _ in 0..count {
            let flen = len(&mut b)?;
            let field = take(&mut b, flen)?;
            let vlen = len(&mut b)?;
            let value = take(&mut b, vlen)?;
            if !h.insert(field, value) {
                return None;
            }
        }
        b.is_empty().then_some(h)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn an_entry_is_24_bytes_and_holds_short_pairs_in_itself() {
        assert_eq!(size_of::<Entry>(), 24);
        let short = Entry::new(b"element:012345", b"xyz");
        assert!(matches!(short, Entry::Inline { .. }));
        assert_eq!(short.split(), (&b"element:012345"[..], &b"xyz"[..]));
        assert_eq!(short.alloc_size(), 0);
        let edge = Entry::new(&[b'f'; INLINE - 1], b"");
        assert!(matches!(edge, Entry::Inline { .. }));
        let long = Entry::new(&[b'f'; INLINE - 1], b"v");
        assert!(matches!(long, Entry::Heap(_)));
        assert_eq!(long.split(), (&[b'f'; INLINE - 1][..], &b"v"[..]));
        assert_eq!(long.alloc_size(), 32);
        let big = Entry::new(&[b'f'; 200], &[b'v'; 300]);
        assert_eq!(big.split(), (&[b'f'; 200][..], &[b'v'; 300][..]));
    }

    #[test]
    fn a_small_hash_is_a_listpack_in_insertion_order() {
        let mut h = Hash::new();
        assert!(h.insert(b"b", b"1"));
        assert!(h.insert(b"a", b"2"));
        assert!(!h.insert(b"b", b"3"));
        assert_eq!(h.encoding(), "listpack");
        let pairs: Vec<_> = h.iter().collect();
        assert_eq!(pairs, vec![(&b"b"[..], &b"3"[..]), (&b"a"[..], &b"2"[..])]);
        assert!(h.remove(b"b"));
        assert!(!h.remove(b"b"));
        assert_eq!(h.len(), 1);
        assert_eq!(h.get(b"a"), Some(&b"2"[..]));
    }

    #[test]
    fn it_becomes_a_table_past_redis_thresholds_and_stays_one() {
        let mut h = Hash::new();
        for i in 0..LISTPACK_ENTRIES {
            h.insert(format!("f{i}").as_bytes(), b"v");
        }
        assert_eq!(h.encoding(), "listpack");
        h.insert(b"one-more", b"v");
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), LISTPACK_ENTRIES + 1);
        for i in 0..LISTPACK_ENTRIES {
            assert!(h.remove(format!("f{i}").as_bytes()));
        }
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(
            h.iter().collect::<Vec<_>>(),
            vec![(&b"one-more"[..], &b"v"[..])]
        );

        let mut long = Hash::new();
        long.insert(b"f", &[b'x'; LISTPACK_VALUE]);
        assert_eq!(long.encoding(), "listpack");
        long.insert(b"g", &[b'x'; LISTPACK_VALUE + 1]);
        assert_eq!(long.encoding(), "hashtable");
        assert_eq!(long.get(b"f"), Some(&[b'x'; LISTPACK_VALUE][..]));
    }

    #[test]
    fn decode_refuses_what_encode_cannot_have_written() {
        let mut h = Hash::new();
        h.insert(b"field", b"value");
        h.insert(b"other", b"");
        let bytes = h.encode();
        for cut in 0..bytes.len() {
            assert!(Hash::decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(Hash::decode(&trailing).is_none());
        // A count no input of this size can hold is refused before anything is reserved.
        assert!(Hash::decode(&[0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]).is_none());
        // No pairs, or an unknown encoding.
        assert!(Hash::decode(&[0, 0, 0, 0, 0]).is_none());
        let mut unknown = bytes.clone();
        unknown[0] = 2;
        assert!(Hash::decode(&unknown).is_none());
        // A field twice.
        let mut twice = Hash::new();
        twice.insert(b"f", b"1");
        let mut dup = twice.encode();
        dup[4] = 2;
        let pair = dup[5..].to_vec();
        dup.extend_from_slice(&pair);
        assert!(Hash::decode(&dup).is_none());
        let back = Hash::decode(&bytes).expect("decodes");
        assert_eq!(
            back.iter().collect::<Vec<_>>(),
            h.iter().collect::<Vec<_>>()
        );
    }

    proptest! {
        /// Against a std map under random inserts and removes, across the conversion.
        #[test]
        fn behaves_as_a_map(ops in prop::collection::vec((any::<bool>(), 0u16..300, 0usize..80), 1..600)) {
            let mut h = Hash::new();
            let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            for (put, f, vlen) in ops {
                let field = format!("field:{f}").into_bytes();
                if put {
                    let value = vec![b'v'; vlen];
                    prop_assert_eq!(h.insert(&field, &value), model.insert(field, value).is_none());
                } else {
                    prop_assert_eq!(h.remove(&field), model.remove(&field).is_some());
                }
                prop_assert_eq!(h.len(), model.len());
            }
            for (f, v) in &model {
                prop_assert_eq!(h.get(f), Some(&v[..]));
            }
            let mut seen: Vec<(Vec<u8>, Vec<u8>)> =
                h.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            seen.sort();
            let mut want: Vec<_> = model.into_iter().collect();
            want.sort();
            prop_assert_eq!(&seen, &want);
            for i in 0..h.len() {
                prop_assert!(h.nth(i).is_some());
            }
            if !h.is_empty() {
                let back = Hash::decode(&h.encode()).expect("round trip");
                prop_assert_eq!(back.encoding(), h.encoding());
                prop_assert_eq!(&back, &h);
            }
            // The running byte count matches a recount.
            if let Repr::Table { entries, bytes, .. } = &h.repr {
                prop_assert_eq!(*bytes, entries.iter().map(Entry::alloc_size).sum::<usize>());
            }
        }
    }
}
