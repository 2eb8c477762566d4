//! Redis's sorted set value, in Redis 7.2's two encodings:
//!
//! - `listpack` while small (at most [`ZSET_ENTRIES`] members of at most [`ZSET_VALUE`]
//!   bytes, 128 and 64 by default; `crate::encoding`): a `Vec` sorted by (score, member), searched linearly;
//! - `skiplist` beyond (for good): an ordered set of (score, member) beside a map from member
//!   to score, the member's bytes shared between the two (`Arc`), as Redis shares one string
//!   between its skiplist and its dict. The order is a [`Ranked`] set, which knows positions
//!   as Redis's skiplist does with its spans: a rank (ZRANK, ZRANGE by index, ZCOUNT, the
//!   start of a score range) takes O(log n), not a walk. The map is [`Scores`]: dense
//!   entries that a score change leaves in place and a removal fills with the last, so a
//!   ZSCAN that walks them from the end returns every member that stayed, whatever its
//!   score did meanwhile (a walk by rank missed a member whose score rose past the cursor).
//!
//! Members are ordered by score, then by their bytes; scores are never NaN, and -0 and 0
//! compare equal, as in Redis. The replication form is the encoding's byte, a count, then
//! each member with a 4-byte length and its score's 8 bytes (IEEE 754, big-endian).

use std::cmp::Ordering;
use std::sync::Arc;

use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::encoding::{ZSET_ENTRIES, ZSET_VALUE};
use crate::hash::field_hasher;
use crate::ranked::Ranked;

/// Redis's `zset-max-listpack-entries` default.
#[cfg(test)]
const LISTPACK_ENTRIES: usize = crate::encoding::DEFAULTS[5];
/// Redis's `zset-max-listpack-value` default.
#[cfg(test)]
const LISTPACK_VALUE: usize = crate::encoding::DEFAULTS[6];

/// A score in the order Redis gives them (no NaN; -0 equals 0).
#[derive(Clone, Copy, Debug)]
struct Score(f64);

impl PartialEq for Score {
    fn eq(&self, other: &Score) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Score) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

type Item = (Score, Arc<[u8]>);

/// A sorted set value (see the module documentation).
#[derive(Clone, Debug)]
pub struct ZSet {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    Packed(Vec<Item>),
    Tree {
        /// Boxed, so that `Collection` (as large as its largest type) stays 72 bytes: a
        /// collection key's allocation is then 96 bytes, not 160.
        ordered: Box<Ranked<Item>>,
        scores: Scores,
        /// Σ member lengths, for an O(1) byte count.
        bytes: usize,
    },
}

/// A skiplist's member → score map: a dense `Vec` of entries indexed by a
/// `HashTable<u32>` (the layout of `crate::hash`'s tables). A score change leaves an entry
/// where it is; a removal moves the last entry into the hole, so a walk from the last entry
/// down (ZSCAN, whose cursor counts the entries still to visit) returns every member present
/// throughout, as Redis's dict scan does.
#[derive(Clone, Debug, Default)]
struct Scores {
    entries: Vec<(Arc<[u8]>, f64)>,
    index: HashTable<u32>,
}

impl Scores {
    fn with_capacity(n: usize) -> Scores {
        Scores {
            entries: Vec::with_capacity(n),
            index: HashTable::with_capacity(n),
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    /// Places held, for the byte accounting: entries (24 bytes) and index slots (4 bytes and
    /// a control byte).
    fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<(Arc<[u8]>, f64)>()
            + self.index.capacity() * 5
    }

    fn find(&self, member: &[u8]) -> Option<usize> {
        let h = field_hasher().hash_one(member);
        let entries = &self.entries;
        self.index
            .find(h, |&i| &entries[i as usize].0[..] == member)
            .map(|&i| i as usize)
    }

    fn get(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|i| self.entries[i].1)
    }

    /// Sets the score of a member that is there; its entry (member bytes and old score).
    fn set(&mut self, member: &[u8], score: f64) -> Option<(Arc<[u8]>, f64)> {
        let i = self.find(member)?;
        let e = &mut self.entries[i];
        let old = std::mem::replace(&mut e.1, score);
        Some((e.0.clone(), old))
    }

    /// Adds a member that is not there.
    fn insert_new(&mut self, member: Arc<[u8]>, score: f64) {
        let hasher = field_hasher();
        let h = hasher.hash_one(&member[..]);
        let i = u32::try_from(self.entries.len()).expect("a sorted set holds fewer than 2^32");
        self.entries.push((member, score));
        let entries = &self.entries;
        self.index
            .insert_unique(h, i, |&j| hasher.hash_one(&entries[j as usize].0[..]));
    }

    /// Removes `member`: its entry, the last entry taking its place.
    fn remove(&mut self, member: &[u8]) -> Option<(Arc<[u8]>, f64)> {
        let hasher = field_hasher();
        let h = hasher.hash_one(member);
        let entries = &self.entries;
        let found = self
            .index
            .find_entry(h, |&i| &entries[i as usize].0[..] == member)
            .ok()?;
        let (i, _) = found.remove();
        let i = i as usize;
        let last = self.entries.len() - 1;
        if i != last {
            // The last entry moves into the hole: repoint its index slot.
            let moved = hasher.hash_one(&self.entries[last].0[..]);
            if let Some(slot) = self.index.find_mut(moved, |&j| j as usize == last) {
                *slot = i as u32;
            }
        }
        let removed = self.entries.swap_remove(i);
        if self.entries.capacity() > 64 && self.entries.len() < self.entries.capacity() / 4 {
            self.shrink();
        }
        Some(removed)
    }

    fn shrink(&mut self) {
        let n = self.entries.len() * 2;
        self.entries.shrink_to(n);
        let (hasher, entries) = (field_hasher(), &self.entries);
        self.index
            .shrink_to(n, |&j| hasher.hash_one(&entries[j as usize].0[..]));
    }

    /// The `i`th entry (`i < len`), in the order a removal keeps dense.
    fn nth(&self, i: usize) -> Option<(&[u8], f64)> {
        self.entries.get(i).map(|(m, s)| (&m[..], *s))
    }
}

/// Equal when they hold the same members with the same scores.
impl PartialEq for ZSet {
    fn eq(&self, other: &ZSet) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits())
    }
}

impl Eq for ZSet {}

impl Default for ZSet {
    fn default() -> Self {
        ZSet::new()
    }
}

impl ZSet {
    pub fn new() -> ZSet {
        ZSet {
            repr: Repr::Packed(Vec::new()),
        }
    }

    /// The set ZADD creates for `size_hint` members whose longest is `longest` bytes (Redis's
    /// `zsetTypeCreate`): a listpack when they fit one, else a skiplist.
    pub fn for_members(size_hint: usize, longest: usize) -> ZSet {
        let mut z = ZSet::new();
        z.prepare(size_hint, longest);
        z
    }

    /// Before adding `size_hint` members whose longest is `longest` bytes: becomes a skiplist
    /// when they cannot fit a listpack (Redis's `zsetTypeMaybeConvert`).
    pub fn prepare(&mut self, size_hint: usize, longest: usize) {
        if size_hint > ZSET_ENTRIES.get() || longest > ZSET_VALUE.get() {
            self.convert();
        }
    }

    fn convert(&mut self) {
        let Repr::Packed(items) = &mut self.repr else {
            return;
        };
        let items = std::mem::take(items);
        let mut scores = Scores::with_capacity(items.len());
        let mut bytes = 0;
        for (s, m) in &items {
            scores.insert_new(m.clone(), s.0);
            bytes += m.len();
        }
        self.repr = Repr::Tree {
            ordered: Box::new(items.into_iter().collect()),
            scores,
            bytes,
        };
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Packed(v) => v.len(),
            Repr::Tree { ordered, .. } => ordered.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Redis's name for the encoding (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Packed(_) => "listpack",
            Repr::Tree { .. } => "skiplist",
        }
    }

    /// O(1): what the members, scores and the two structures take, estimated per member.
    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Packed(v) => {
                v.capacity() * std::mem::size_of::<Item>()
                    + v.iter()
                        .map(|(_, m)| (m.len() + 24).next_multiple_of(16))
                        .sum::<usize>()
            }
            Repr::Tree {
                ordered,
                scores,
                bytes,
            } => {
                // Per member: an Arc'd copy (16 bytes of counts + malloc's); the order's
                // chunks (score and Arc per slot) and its boxed head; the map's entries and
                // index slots (which stay after removals, until it shrinks).
                let head = (std::mem::size_of::<Ranked<Item>>() + 8).next_multiple_of(16);
                scores.len() * 24 + head + ordered.heap_bytes() + scores.heap_bytes() + bytes
            }
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Packed(v) => v.iter().find(|(_, m)| &m[..] == member).map(|(s, _)| s.0),
            Repr::Tree { scores, .. } => scores.get(member),
        }
    }

    /// Sets `member`'s score (`score` is not NaN); the previous score, if any.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        if let Repr::Packed(v) = &self.repr {
            let new = !v.iter().any(|(_, m)| &m[..] == member);
            if member.len() > ZSET_VALUE.get() || (new && v.len() >= ZSET_ENTRIES.get()) {
                self.convert();
            }
        }
        // A member of a skiplist that is there already keeps its map entry and its bytes:
        // only its place in the order moves (one lookup, no allocation).
        if let Repr::Tree {
            ordered, scores, ..
        } = &mut self.repr
        {
            if let Some((m, old)) = scores.set(member, score) {
                let was = (Score(old), m);
                ordered.remove(&was);
                ordered.insert((Score(score), was.1));
                return Some(old);
            }
        }
        let old = self.remove_score(member);
        match &mut self.repr {
            Repr::Packed(v) => {
                // A listpack keeps a whole score as an integer, so -0 reads back as 0.
                let score = if score == 0.0 { 0.0 } else { score };
                let item = (Score(score), Arc::from(member));
                let at = v.partition_point(|x| *x < item);
                v.insert(at, item);
            }
            Repr::Tree {
                ordered,
                scores,
                bytes,
            } => {
                let m: Arc<[u8]> = Arc::from(member);
                scores.insert_new(m.clone(), score);
                ordered.insert((Score(score), m));
                *bytes += member.len();
            }
        }
        old
    }

    /// Removes `member`; its score if it was there.
    pub fn remove_score(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Packed(v) => {
                let at = v.iter().position(|(_, m)| &m[..] == member)?;
                Some(v.remove(at).0 .0)
            }
            Repr::Tree {
                ordered,
                scores,
                bytes,
            } => {
                let (m, s) = scores.remove(member)?;
                ordered.remove(&(Score(s), m));
                *bytes -= member.len();
                Some(s)
            }
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> bool {
        self.remove_score(member).is_some()
    }

    /// Members and scores in ascending order.
    pub fn iter(&self) -> Box<dyn DoubleEndedIterator<Item = (&[u8], f64)> + '_> {
        match &self.repr {
            Repr::Packed(v) => Box::new(v.iter().map(|(s, m)| (&m[..], s.0))),
            Repr::Tree { ordered, .. } => Box::new(ordered.iter().map(|(s, m)| (&m[..], s.0))),
        }
    }

    /// Members with a score below `score` (or at most `score`, `or_equal`): O(log n).
    pub fn below_score(&self, score: f64, or_equal: bool) -> usize {
        let below = |(s, _): &Item| {
            if or_equal {
                *s <= Score(score)
            } else {
                *s < Score(score)
            }
        };
        match &self.repr {
            Repr::Packed(v) => v.partition_point(below),
            Repr::Tree { ordered, .. } => ordered.rank_by(below),
        }
    }

    /// Members for which `below` holds, when it holds for a prefix of the order (a lex
    /// bound over members of one score, as Redis's lex ranges assume): O(log n).
    pub fn below_member(&self, mut below: impl FnMut(&[u8]) -> bool) -> usize {
        match &self.repr {
            Repr::Packed(v) => v.partition_point(|(_, m)| below(m)),
            Repr::Tree { ordered, .. } => ordered.rank_by(|(_, m)| below(m)),
        }
    }

    /// Members and scores from position `rank` on, ascending.
    pub fn from_rank(&self, rank: usize) -> Box<dyn Iterator<Item = (&[u8], f64)> + '_> {
        match &self.repr {
            Repr::Packed(v) => Box::new(
                v.get(rank..)
                    .unwrap_or_default()
                    .iter()
                    .map(|(s, m)| (&m[..], s.0)),
            ),
            Repr::Tree { ordered, .. } => {
                Box::new(ordered.iter_from(rank).map(|(s, m)| (&m[..], s.0)))
            }
        }
    }

    /// Members and scores from position `rank` (ascending order's) down to the first.
    pub fn down_from_rank(&self, rank: usize) -> Box<dyn Iterator<Item = (&[u8], f64)> + '_> {
        match &self.repr {
            Repr::Packed(v) => {
                let end = rank.saturating_add(1).min(v.len());
                Box::new(v[..end].iter().rev().map(|(s, m)| (&m[..], s.0)))
            }
            Repr::Tree { ordered, .. } => {
                Box::new(ordered.iter_down_from(rank).map(|(s, m)| (&m[..], s.0)))
            }
        }
    }

    /// Members and scores from the first with a score of at least `min` (then ascending).
    pub fn from_score(&self, min: f64) -> Box<dyn Iterator<Item = (&[u8], f64)> + '_> {
        self.from_rank(self.below_score(min, false))
    }

    /// Members and scores from the last with a score of at most `max` (then descending).
    pub fn to_score_rev(&self, max: f64) -> Box<dyn Iterator<Item = (&[u8], f64)> + '_> {
        match self.below_score(max, true) {
            0 => Box::new(std::iter::empty()),
            n => self.down_from_rank(n - 1),
        }
    }

    /// The member and score at position `rank` in ascending order.
    pub fn at_rank(&self, rank: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Packed(v) => v.get(rank).map(|(s, m)| (&m[..], s.0)),
            Repr::Tree { ordered, .. } => ordered.get(rank).map(|(s, m)| (&m[..], s.0)),
        }
    }

    /// The `i`th member of a skiplist's map in its entry order (`i < len`: what ZSCAN walks
    /// from the end, see [`Scores`]); a listpack's in ascending order.
    pub fn nth_entry(&self, i: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Packed(v) => v.get(i).map(|(s, m)| (&m[..], s.0)),
            Repr::Tree { scores, .. } => scores.nth(i),
        }
    }

    /// The 0-based rank of `member` in ascending order (O(log n) in a skiplist).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Packed(v) => v.iter().position(|(_, m)| &m[..] == member),
            Repr::Tree {
                ordered, scores, ..
            } => {
                let s = Score(scores.get(member)?);
                Some(ordered.rank_by(|(x, m)| (*x, &m[..]) < (s, member)))
            }
        }
    }

    /// Removes and returns the lowest (or highest) member.
    pub fn pop(&mut self, highest: bool) -> Option<(Vec<u8>, f64)> {
        if let Repr::Tree {
            ordered,
            scores,
            bytes,
        } = &mut self.repr
        {
            let (s, m) = ordered.pop(highest)?;
            scores.remove(&m[..]);
            *bytes -= m.len();
            return Some((m.to_vec(), s.0));
        }
        let (m, s) = {
            let mut it = self.iter();
            let (m, s) = if highest { it.next_back()? } else { it.next()? };
            (m.to_vec(), s)
        };
        self.remove(&m);
        Some((m, s))
    }

    /// The replication form (see the module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(5 + self.len() * 16);
        out.push(u8::from(matches!(self.repr, Repr::Tree { .. })));
        out.extend_from_slice(&(self.len() as u32).to_be_bytes());
        for (m, s) in self.iter() {
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
            out.extend_from_slice(&s.to_bits().to_be_bytes());
        }
        out
    }

    /// The sorted set [`ZSet::encode`] wrote, or `None` if `b` is not one (no members,
    /// truncated, trailing bytes, a member twice, a NaN score, an unknown encoding).
    pub fn decode(b: &[u8]) -> Option<ZSet> {
        let (&encoding, rest) = b.split_first()?;
        let (count, mut rest) = rest.split_first_chunk::<4>()?;
        let count = u32::from_be_bytes(*count) as usize;
        if count == 0 || count > rest.len() / 12 || encoding > 1 {
            return None;
        }
        let mut z = ZSet::new();
        if encoding == 1 {
            z.convert();
        }
        for _ in 0..count {
            let (len, tail) = rest.split_first_chunk::<4>()?;
            let len = u32::from_be_bytes(*len) as usize;
            if tail.len() < len {
                return None;
            }
            let (m, tail) = tail.split_at(len);
            let (score, tail) = tail.split_first_chunk::<8>()?;
            let score = f64::from_bits(u64::from_be_bytes(*score));
            if score.is_nan() || z.insert(m, score).is_some() {
                return None;
            }
            rest = tail;
        }
        rest.is_empty().then_some(z)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn order_is_score_then_member_and_encodings_follow_redis() {
        let mut z = ZSet::new();
        z.insert(b"b", 1.0);
        z.insert(b"a", 1.0);
        z.insert(b"c", -0.0);
        z.insert(b"d", 0.0);
        let order: Vec<&[u8]> = z.iter().map(|(m, _)| m).collect();
        assert_eq!(order, vec![&b"c"[..], b"d", b"a", b"b"]);
        assert_eq!(z.encoding(), "listpack");
        assert_eq!(z.rank(b"a"), Some(2));
        for i in 0..LISTPACK_ENTRIES {
            z.insert(format!("m{i}").as_bytes(), i as f64);
        }
        assert_eq!(z.encoding(), "skiplist");
        assert_eq!(z.rank(b"a"), Some(3));
        assert_eq!(z.score(b"m5"), Some(5.0));
        assert_eq!(
            ZSet::for_members(1, LISTPACK_VALUE + 1).encoding(),
            "skiplist"
        );
        let back = ZSet::decode(&z.encode()).unwrap();
        assert_eq!(back, z);
        assert_eq!(back.encoding(), "skiplist");
        assert!(ZSet::decode(&[0, 0, 0, 0, 0]).is_none());
        let bytes = z.encode();
        for cut in 0..bytes.len() {
            assert!(ZSet::decode(&bytes[..cut]).is_none());
        }
    }

    proptest! {
        #[test]
        fn behaves_as_a_model(ops in prop::collection::vec((any::<bool>(), 0u16..300, -50i32..50), 1..500)) {
            let mut z = ZSet::new();
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            for (add, n, s) in ops {
                let m = format!("m{n}").into_bytes();
                if add {
                    prop_assert_eq!(z.insert(&m, f64::from(s)), model.insert(m, f64::from(s)));
                } else {
                    prop_assert_eq!(z.remove_score(&m), model.remove(&m));
                }
                prop_assert_eq!(z.len(), model.len());
            }
            let mut want: Vec<(Vec<u8>, f64)> = model.into_iter().collect();
            want.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then(a.0.cmp(&b.0)));
            let got: Vec<(Vec<u8>, f64)> = z.iter().map(|(m, s)| (m.to_vec(), s)).collect();
            prop_assert_eq!(&got, &want);
            for (i, (m, s)) in want.iter().enumerate() {
                prop_assert_eq!(z.rank(m), Some(i));
                prop_assert_eq!(z.at_rank(i), Some((&m[..], *s)));
            }
            prop_assert_eq!(z.at_rank(want.len()), None);
            prop_assert_eq!(z.below_score(0.0, true), want.iter().filter(|w| w.1 <= 0.0).count());
            prop_assert_eq!(z.below_score(0.0, false), want.iter().filter(|w| w.1 < 0.0).count());
            let rev: Vec<f64> = z.to_score_rev(0.0).map(|(_, s)| s).collect();
            let want_rev: Vec<f64> = want.iter().rev().map(|w| w.1).filter(|&s| s <= 0.0).collect();
            prop_assert_eq!(rev, want_rev);
            if !z.is_empty() {
                prop_assert_eq!(ZSet::decode(&z.encode()), Some(z.clone()));
                let from: Vec<f64> = z.from_score(0.0).map(|(_, s)| s).collect();
                let want_from: Vec<f64> = want.iter().map(|w| w.1).filter(|&s| s >= 0.0).collect();
                prop_assert_eq!(from, want_from);
            }
        }
    }
}
