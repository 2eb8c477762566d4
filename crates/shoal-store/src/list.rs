//! Redis's list value, kept as Redis's quicklist keeps it: a deque of packed chunks, each a
//! buffer of length-prefixed elements of at most [`CHUNK_BYTES`] (a larger element has a
//! chunk to itself). An element costs its bytes plus a one- or two-byte length, not an
//! allocation of its own.
//!
//! Pushes and pops at either end touch one chunk; an index walks the chunks' counts, then
//! one chunk. Edits in the middle (LSET, LINSERT, LREM, LTRIM) unpack the chunks they touch
//! and pack them again. A chunk that stops being an end is shrunk to fit, so only the two
//! end chunks keep spare capacity.
//!
//! `OBJECT ENCODING` says `listpack` while the list would fit one of Redis's listpack nodes
//! (about [`CHUNK_BYTES`]: Redis's `list-max-listpack-size -2`) and `quicklist` beyond, back
//! to `listpack` once under half of it, as Redis 7.2 converts.

use std::collections::VecDeque;

use crate::varint;

/// Bytes of a chunk (Redis's `list-max-listpack-size -2`: 8 KB nodes).
pub const CHUNK_BYTES: usize = 8192;

/// A list value (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct List {
    chunks: VecDeque<Chunk>,
    len: usize,
    /// Σ of the chunks' buffer lengths.
    bytes: usize,
    /// Past a listpack's size once, until under half of it.
    quicklist: bool,
    /// What the elements would take in one Redis listpack (its header and end not counted):
    /// the measure of Redis's encoding switch.
    lp_bytes: usize,
}

/// Bytes an element takes in a Redis listpack: an integer in canonical form as an integer
/// (1 to 9 bytes), a string with a 1-, 2- or 5-byte header; then its back-length.
pub(crate) fn lp_entry_size(v: &[u8]) -> usize {
    let enc = match crate::set::canonical_int(v) {
        Some(n) if (0..=127).contains(&n) => 1,
        Some(n) if (-4096..=4095).contains(&n) => 2,
        Some(n) if i16::try_from(n).is_ok() => 3,
        Some(n) if (-(1 << 23)..(1 << 23)).contains(&n) => 4,
        Some(n) if i32::try_from(n).is_ok() => 5,
        Some(_) => 9,
        None if v.len() <= 63 => 1 + v.len(),
        None if v.len() <= 4095 => 2 + v.len(),
        None => 5 + v.len(),
    };
    enc + listpack_backlen(enc)
}

/// The bytes a listpack entry of `len` bytes (encoding and data) spends repeating its length
/// backwards (Redis's `lpEncodeBacklen`).
pub fn listpack_backlen(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// A listpack's header and end byte.
const LP_OVERHEAD: usize = 7;
/// Redis's `list-max-listpack-size -2`: 8 KB.
const LP_LIMIT: usize = 8192;

/// A chunk's elements are `buf[head..]`: the bytes before `head` are room for pushes at the
/// front, so a push or pop at either end moves no other element (Redis's listpack moves the
/// whole node on a push at its head).
#[derive(Clone, Debug, Default)]
struct Chunk {
    buf: Vec<u8>,
    head: usize,
    count: usize,
}

/// Equal when they hold the same elements in the same order (whatever the chunks).
impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for List {}

fn entry_size(v: &[u8]) -> usize {
    varint::len(v.len()) + v.len()
}

impl Chunk {
    /// The packed elements.
    fn data(&self) -> &[u8] {
        &self.buf[self.head..]
    }

    /// Bytes of the packed elements.
    fn used(&self) -> usize {
        self.buf.len() - self.head
    }

    /// Allocated bytes not holding an element (room at the front and at the back).
    fn spare(&self) -> usize {
        self.buf.capacity() - self.used()
    }

    /// Copies the elements into a buffer of about twice the bytes they and `size` more take
    /// (within a chunk's size), with `size` bytes of room at the `front` or the back, and
    /// the rest of the room split between the two ends when the front is used (`both`).
    /// Each copy leaves room for about as many bytes as it moved, so pushes move each byte
    /// O(1) times, alternating ends included.
    fn regrow(&mut self, size: usize, front: bool, both: bool) {
        let used = self.used();
        let total = (2 * (used + size)).clamp(64, CHUNK_BYTES).max(used + size);
        let spare = total - used - size;
        let room = match (front, both) {
            (true, true) => size + spare / 2,
            (true, false) => size + spare,
            (false, true) => spare / 2,
            (false, false) => 0,
        };
        let mut buf = Vec::with_capacity(total);
        buf.resize(room, 0);
        buf.extend_from_slice(self.data());
        self.buf = buf;
        self.head = room;
    }

    /// Puts `v`, with its length, before the first element (see [`Chunk::regrow`] when
    /// there is no room; `both`: the chunk takes pushes at its back too, as a list's only
    /// chunk does).
    fn push_front(&mut self, v: &[u8], both: bool) {
        let size = entry_size(v);
        if self.head < size {
            self.regrow(size, true, both);
        }
        let start = self.head - size;
        let n = varint::write(&mut self.buf[start..], v.len());
        self.buf[start + n..self.head].copy_from_slice(v);
        self.head = start;
        self.count += 1;
    }

    /// Gives up the room at the front and any spare capacity (a chunk that stops being an
    /// end of its list takes no more pushes).
    fn shrink_to_fit(&mut self) {
        if self.head > 0 {
            self.buf.drain(..self.head);
            self.head = 0;
        }
        self.buf.shrink_to_fit();
    }

    /// The elements front to back, decoded as they are taken (a range that needs a few of a
    /// chunk's elements decodes only those).
    fn forward(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let data = self.data();
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= data.len() {
                return None;
            }
            let (n, h) = varint::get(&data[at..]);
            let item = &data[at + h..at + h + n];
            at += h + n;
            Some(item)
        })
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        let data = self.data();
        let mut out = Vec::with_capacity(self.count);
        let mut at = 0;
        while at < data.len() {
            let (n, h) = varint::get(&data[at..]);
            out.push(&data[at + h..at + h + n]);
            at += h + n;
        }
        out.into_iter()
    }

    /// The byte range of element `i` (with its length prefix), within [`Chunk::data`].
    fn span(&self, i: usize) -> (usize, usize) {
        let data = self.data();
        let mut at = 0;
        for _ in 0..i {
            let (n, h) = varint::get(&data[at..]);
            at += h + n;
        }
        let (n, h) = varint::get(&data[at..]);
        (at, at + h + n)
    }

    fn get(&self, i: usize) -> &[u8] {
        let (start, end) = self.span(i);
        let data = self.data();
        let (_, h) = varint::get(&data[start..]);
        &data[start + h..end]
    }

    fn pack(elements: &[&[u8]]) -> Chunk {
        let mut buf = Vec::with_capacity(elements.iter().map(|e| entry_size(e)).sum());
        for e in elements {
            varint::put(&mut buf, e.len());
            buf.extend_from_slice(e);
        }
        Chunk {
            buf,
            head: 0,
            count: elements.len(),
        }
    }
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its packed chunks (Redis's quicklist nodes).
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Redis's name for the encoding (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        if self.quicklist {
            "quicklist"
        } else {
            "listpack"
        }
    }

    /// O(1): the chunks' bytes and headers, and the spare capacity of the two end chunks
    /// (the others are shrunk to fit when they stop being ends).
    pub fn heap_bytes(&self) -> usize {
        let spare = |c: Option<&Chunk>| c.map_or(0, Chunk::spare);
        let ends = if self.chunks.len() > 1 {
            spare(self.chunks.front()) + spare(self.chunks.back())
        } else {
            spare(self.chunks.front())
        };
        self.chunks.capacity() * std::mem::size_of::<Chunk>()
            + self.bytes
            + ends
            + self.chunks.len() * 16
    }

    /// Gives back a chunk's memory once it is under a quarter used (pops).
    fn trim(c: &mut Chunk) {
        if c.buf.capacity() > 64 && c.used() < c.buf.capacity() / 4 {
            let mut buf = Vec::with_capacity(c.used() * 2);
            buf.extend_from_slice(c.data());
            c.buf = buf;
            c.head = 0;
        }
    }

    /// Before pushing elements of `raw` bytes in all: a `quicklist` from now on when they
    /// would not fit one listpack (Redis's `listTypeTryConvertListpack`, which counts the new
    /// elements' raw bytes).
    pub fn will_push(&mut self, raw: usize) {
        if !self.quicklist && LP_OVERHEAD + self.lp_bytes + raw > LP_LIMIT {
            self.quicklist = true;
        }
    }

    /// After elements went: a `listpack` again under half a listpack's size (Redis's
    /// `listTypeTryConvertQuicklist` when shrinking).
    fn note_size(&mut self) {
        if self.quicklist && LP_OVERHEAD + self.lp_bytes <= LP_LIMIT / 2 {
            self.quicklist = false;
        }
    }

    pub fn push_back(&mut self, v: &[u8]) {
        let size = entry_size(v);
        let fits = self
            .chunks
            .back()
            .is_some_and(|c| c.used() + size <= CHUNK_BYTES);
        if !fits {
            if let Some(last) = self.chunks.back_mut() {
                last.shrink_to_fit();
            }
            self.chunks.push_back(Chunk::default());
        }
        let c = self.chunks.back_mut().expect("a chunk at the back");
        if c.buf.len() + size > c.buf.capacity() {
            // Full at the back: a new buffer within a chunk's size (never the doubling of a
            // growing `Vec`), keeping room at the front if pushes go there too.
            let both = c.head > 0;
            c.regrow(size, false, both);
        }
        varint::put(&mut c.buf, v.len());
        c.buf.extend_from_slice(v);
        c.count += 1;
        self.len += 1;
        self.bytes += size;
        self.lp_bytes += lp_entry_size(v);
    }

    pub fn push_front(&mut self, v: &[u8]) {
        let size = entry_size(v);
        let fits = self
            .chunks
            .front()
            .is_some_and(|c| c.used() + size <= CHUNK_BYTES);
        if !fits {
            if let Some(first) = self.chunks.front_mut() {
                first.shrink_to_fit();
            }
            self.chunks.push_front(Chunk::default());
        }
        let only = self.chunks.len() == 1;
        let c = self.chunks.front_mut().expect("a chunk at the front");
        c.push_front(v, only);
        self.len += 1;
        self.bytes += size;
        self.lp_bytes += lp_entry_size(v);
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        let c = self.chunks.front_mut()?;
        let (start, end) = c.span(0);
        let (_, h) = varint::get(&c.data()[start..]);
        let v = c.data()[start + h..end].to_vec();
        c.head += end;
        c.count -= 1;
        if c.count == 0 {
            self.chunks.pop_front();
        } else {
            List::trim(c);
        }
        self.len -= 1;
        self.bytes -= end - start;
        self.lp_bytes -= lp_entry_size(&v);
        self.note_size();
        Some(v)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        let c = self.chunks.back_mut()?;
        let (start, end) = c.span(c.count - 1);
        let (_, h) = varint::get(&c.data()[start..]);
        let v = c.data()[start + h..end].to_vec();
        c.buf.truncate(c.head + start);
        c.count -= 1;
        if c.count == 0 {
            self.chunks.pop_back();
        } else {
            List::trim(c);
        }
        self.len -= 1;
        self.bytes -= end - start;
        self.lp_bytes -= lp_entry_size(&v);
        self.note_size();
        Some(v)
    }

    /// The chunk holding element `i` (`i < len`) and the element's place in it.
    fn locate(&self, mut i: usize) -> (usize, usize) {
        // From whichever end is nearer.
        if i < self.len / 2 {
            for (ci, c) in self.chunks.iter().enumerate() {
                if i < c.count {
                    return (ci, i);
                }
                i -= c.count;
            }
        } else {
            let mut from_end = self.len - 1 - i;
            for (ci, c) in self.chunks.iter().enumerate().rev() {
                if from_end < c.count {
                    return (ci, c.count - 1 - from_end);
                }
                from_end -= c.count;
            }
        }
        unreachable!("index {i} within the list's length")
    }

    /// Element `i` (`i < len`, else `None`).
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let (ci, at) = self.locate(i);
        Some(self.chunks[ci].get(at))
    }

    /// Replaces element `i` (`i < len`); false when out of range.
    pub fn set(&mut self, i: usize, v: &[u8]) -> bool {
        if i >= self.len {
            return false;
        }
        let (ci, at) = self.locate(i);
        let mut elements: Vec<Vec<u8>> = self.chunks[ci].iter().map(<[u8]>::to_vec).collect();
        elements[at] = v.to_vec();
        self.replace_chunks(ci, 1, elements);
        true
    }

    /// Inserts `v` before element `i` (`i <= len`).
    pub fn insert(&mut self, i: usize, v: &[u8]) {
        if i == 0 {
            return self.push_front(v);
        }
        if i >= self.len {
            return self.push_back(v);
        }
        let (ci, at) = self.locate(i);
        let mut elements: Vec<Vec<u8>> = self.chunks[ci].iter().map(<[u8]>::to_vec).collect();
        elements.insert(at, v.to_vec());
        self.replace_chunks(ci, 1, elements);
    }

    /// Replaces `n` chunks from `ci` with `elements`, packed into chunks of at most
    /// [`CHUNK_BYTES`].
    fn replace_chunks(&mut self, ci: usize, n: usize, elements: Vec<Vec<u8>>) {
        let removed: Vec<Chunk> = self.chunks.drain(ci..ci + n).collect();
        for c in &removed {
            self.len -= c.count;
            self.bytes -= c.used();
            self.lp_bytes -= c.iter().map(lp_entry_size).sum::<usize>();
        }
        let mut packed = Vec::new();
        let mut group: Vec<&[u8]> = Vec::new();
        let mut size = 0;
        for e in &elements {
            let s = entry_size(e);
            if !group.is_empty() && size + s > CHUNK_BYTES {
                packed.push(Chunk::pack(&group));
                group.clear();
                size = 0;
            }
            group.push(e);
            size += s;
        }
        if !group.is_empty() {
            packed.push(Chunk::pack(&group));
        }
        for (k, c) in packed.into_iter().enumerate() {
            self.len += c.count;
            self.bytes += c.used();
            self.lp_bytes += c.iter().map(lp_entry_size).sum::<usize>();
            self.chunks.insert(ci + k, c);
        }
        self.note_size();
    }

    /// Keeps elements `start..=end` only (both within the list, `start <= end`), or none.
    pub fn retain_range(&mut self, range: Option<(usize, usize)>) {
        let Some((start, end)) = range else {
            *self = List::new();
            return;
        };
        let kept: Vec<Vec<u8>> = self
            .iter()
            .skip(start)
            .take(end + 1 - start)
            .map(<[u8]>::to_vec)
            .collect();
        let mut out = List::new();
        for e in &kept {
            out.push_back(e);
        }
        out.quicklist = self.quicklist;
        out.note_size();
        *self = out;
    }

    /// Removes the elements `matches` says yes to, at most `limit` (0: all) of them, from the
    /// head (`from_tail` false) or the tail; how many went.
    pub fn remove_matching(
        &mut self,
        limit: usize,
        from_tail: bool,
        mut matches: impl FnMut(&[u8]) -> bool,
    ) -> usize {
        let mut removed = 0;
        let mut kept: Vec<Vec<u8>> = Vec::with_capacity(self.len);
        let elements: Vec<&[u8]> = self.iter().collect();
        let mut keep = vec![true; elements.len()];
        let order: Box<dyn Iterator<Item = usize>> = if from_tail {
            Box::new((0..elements.len()).rev())
        } else {
            Box::new(0..elements.len())
        };
        for i in order {
            if (limit == 0 || removed < limit) && matches(elements[i]) {
                keep[i] = false;
                removed += 1;
            }
        }
        if removed == 0 {
            return 0;
        }
        for (e, k) in elements.iter().zip(&keep) {
            if *k {
                kept.push(e.to_vec());
            }
        }
        let mut out = List::new();
        for e in &kept {
            out.push_back(e);
        }
        out.quicklist = self.quicklist;
        out.note_size();
        *self = out;
        removed
    }

    /// The elements from the head.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.chunks.iter().flat_map(Chunk::iter)
    }

    /// Elements `start..=end` (within the list), walking only the chunks they are in.
    pub fn range(&self, start: usize, end: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let (first, at) = if start < self.len {
            self.locate(start)
        } else {
            (self.chunks.len(), 0)
        };
        self.chunks
            .iter()
            .skip(first)
            .flat_map(Chunk::forward)
            .skip(at)
            .take((end + 1).saturating_sub(start))
    }

    /// The replication form: a 4-byte count, then each element with a 4-byte length.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.bytes + self.len * 4);
        out.extend_from_slice(&(self.len as u32).to_be_bytes());
        for e in self.iter() {
            out.extend_from_slice(&(e.len() as u32).to_be_bytes());
            out.extend_from_slice(e);
        }
        out
    }

    /// The list [`List::encode`] wrote, or `None` if `b` is not one.
    pub fn decode(b: &[u8]) -> Option<List> {
        let (count, mut rest) = b.split_first_chunk::<4>()?;
        let count = u32::from_be_bytes(*count) as usize;
        // An empty list is no value: a key holds none.
        if count == 0 || count > rest.len() / 4 {
            return None;
        }
        let mut list = List::new();
        for _ in 0..count {
            let (len, tail) = rest.split_first_chunk::<4>()?;
            let len = u32::from_be_bytes(*len) as usize;
            if tail.len() < len {
                return None;
            }
            let (e, tail) = tail.split_at(len);
            list.push_back(e);
            rest = tail;
        }
        list.will_push(0);
        rest.is_empty().then_some(list)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;

    fn all(l: &List) -> Vec<Vec<u8>> {
        l.iter().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn chunks_fill_and_the_encoding_follows_the_size() {
        let mut l = List::new();
        for i in 0..100 {
            l.push_back(format!("{i}").as_bytes());
        }
        assert_eq!(l.encoding(), "listpack");
        assert_eq!(l.chunks.len(), 1);
        for _ in 0..100 {
            l.will_push(100);
            l.push_front(&[b'x'; 100]);
        }
        assert_eq!(l.encoding(), "quicklist");
        assert!(l.chunks.len() > 1);
        assert_eq!(l.get(100).unwrap(), b"0");
        assert_eq!(l.get(199).unwrap(), b"99");
        while l.len() > 10 {
            l.pop_front();
        }
        assert_eq!(l.encoding(), "listpack");
        // A large element has a chunk of its own.
        l.push_back(&vec![b'y'; 3 * CHUNK_BYTES]);
        assert_eq!(l.pop_back().unwrap().len(), 3 * CHUNK_BYTES);
        let back = List::decode(&l.encode()).unwrap();
        assert_eq!(all(&back), all(&l));
        // Redis's switch: 3,000 one-byte pushes turn a quicklist at the 2,730th.
        let mut r = List::new();
        for i in 1..=3000 {
            r.will_push(1);
            r.push_back(b"x");
            if r.encoding() == "quicklist" {
                assert_eq!(i, 2730);
                break;
            }
        }
        assert_eq!(r.encoding(), "quicklist");
        for cut in 0..l.encode().len() {
            assert!(List::decode(&l.encode()[..cut]).is_none());
        }
    }

    #[test]
    fn pushes_at_the_front_leave_inner_chunks_compact() {
        let mut l = List::new();
        for i in 0..10_000u32 {
            l.push_front(format!("{i:0>100}").as_bytes());
        }
        assert_eq!(l.len(), 10_000);
        assert_eq!(l.get(0), Some(format!("{:0>100}", 9_999).as_bytes()));
        assert_eq!(l.get(9_999), Some(format!("{:0>100}", 0).as_bytes()));
        let inner = l.chunks.len() - 1;
        for c in l.chunks.iter().skip(1).take(inner - 1) {
            assert_eq!((c.head, c.buf.capacity()), (0, c.used()));
        }
        // Room is kept at the two ends only, within a chunk's size each.
        assert!(l.heap_bytes() <= l.bytes + 2 * CHUNK_BYTES + l.chunks.capacity() * 64);
        // Popping from the front and pushing at the back reuse the room.
        for _ in 0..50 {
            l.pop_front();
        }
        for i in 0..50u32 {
            l.push_back(format!("{i:0>100}").as_bytes());
        }
        assert_eq!(l.len(), 10_000);
        assert_eq!(l.get(9_999), Some(format!("{:0>100}", 49).as_bytes()));
        // No chunk's buffer grows past a chunk's size, whichever end takes the pushes.
        let mut m = List::new();
        for i in 0..5_000u32 {
            let v = format!("{i:0>90}");
            if i % 3 == 0 {
                m.push_back(v.as_bytes());
            } else {
                m.push_front(v.as_bytes());
            }
            assert!(m.chunks.iter().all(|c| c.buf.capacity() <= CHUNK_BYTES));
        }
        assert_eq!(m.len(), 5_000);
    }

    proptest! {
        #[test]
        fn behaves_as_a_deque(ops in prop::collection::vec((0u8..8, 0usize..400, 0usize..300), 1..400)) {
            let mut l = List::new();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for (op, n, size) in ops {
                let v = vec![b'a' + (n % 26) as u8; size];
                match op {
                    0 => { l.push_back(&v); model.push_back(v); }
                    1 => { l.push_front(&v); model.push_front(v); }
                    2 => prop_assert_eq!(l.pop_front(), model.pop_front()),
                    3 => prop_assert_eq!(l.pop_back(), model.pop_back()),
                    4 if !model.is_empty() => {
                        let i = n % model.len();
                        prop_assert!(l.set(i, &v));
                        model[i] = v;
                    }
                    5 => {
                        let i = n % (model.len() + 1);
                        l.insert(i, &v);
                        model.insert(i, v);
                    }
                    6 => {
                        let want = b'a' + (n % 26) as u8;
                        let removed = l.remove_matching(2, n % 2 == 0, |e| e.first() == Some(&want));
                        let mut left = 2;
                        let mut gone = 0;
                        let idx: Vec<usize> = if n % 2 == 0 { (0..model.len()).rev().collect() } else { (0..model.len()).collect() };
                        let mut drop = vec![false; model.len()];
                        for i in idx {
                            if left > 0 && model[i].first() == Some(&want) { drop[i] = true; left -= 1; gone += 1; }
                        }
                        let mut k = 0;
                        model.retain(|_| { let d = drop[k]; k += 1; !d });
                        prop_assert_eq!(removed, gone);
                    }
                    7 if !model.is_empty() => {
                        let a = n % model.len();
                        let b = (a + size) % model.len();
                        let (s, e) = (a.min(b), a.max(b));
                        l.retain_range(Some((s, e)));
                        let kept: VecDeque<Vec<u8>> = model.iter().skip(s).take(e + 1 - s).cloned().collect();
                        model = kept;
                    }
                    _ => {}
                }
                prop_assert_eq!(l.len(), model.len());
            }
            let got = all(&l);
            let want: Vec<Vec<u8>> = model.iter().cloned().collect();
            prop_assert_eq!(&got, &want);
            for (i, want) in model.iter().enumerate() {
                prop_assert_eq!(l.get(i), Some(&want[..]));
            }
            if !model.is_empty() {
                let s = model.len() / 3;
                let e = model.len() - 1;
                let r: Vec<Vec<u8>> = l.range(s, e).map(<[u8]>::to_vec).collect();
                prop_assert_eq!(r, want[s..=e].to_vec());
            }
            if !l.is_empty() {
                prop_assert_eq!(all(&List::decode(&l.encode()).unwrap()), want);
            }
            prop_assert_eq!(l.bytes, l.chunks.iter().map(Chunk::used).sum::<usize>());
        }
    }
}
