//! Redis's set value, in Redis 7.2's three encodings:
//!
//! - `intset` while every member is an integer in canonical form and there are at most
//!   [`SET_INTSET_ENTRIES`] of them (512 by default; `crate::encoding`): a sorted `Vec<i64>`, so members list in ascending order, as
//!   Redis's do;
//! - `listpack` while small (at most [`SET_ENTRIES`] members of at most [`SET_VALUE`]
//!   bytes, 128 and 64 by default): members in insertion order, searched linearly;
//! - `hashtable` beyond (for good).
//!
//! The listpack and the table are a [`Hash`]'s with empty values (one more byte per
//! member), so the two types share their tested code. The replication form is the
//! encoding's byte, a count, then each member with a 4-byte length; decoding checks every
//! length against the bytes left before it copies anything, and rebuilds the same encoding.

use crate::encoding::{SET_ENTRIES, SET_INTSET_ENTRIES, SET_VALUE};
use crate::hash::Hash;

/// Redis's `set-max-intset-entries` default.
#[cfg(test)]
const INTSET_ENTRIES: usize = crate::encoding::DEFAULTS[2];
/// Redis's `set-max-listpack-value` default.
#[cfg(test)]
const LISTPACK_VALUE: usize = crate::encoding::DEFAULTS[4];

/// A set value (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    repr: Repr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Repr {
    Ints(Vec<i64>),
    /// A listpack or a table, told apart by the hash's own encoding.
    Members(Hash),
}

impl Default for Set {
    fn default() -> Self {
        Set::new()
    }
}

/// The integer a member stands for, when it is one in canonical form (what Redis's
/// `string2ll` takes: no sign but a leading `-`, no leading zeros, no spaces, within i64).
pub fn canonical_int(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    // Digits only, no sign but a leading minus, no leading zero, no "-0": then the text is
    // the number's own, and parsing it is the only check left (range).
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    let neg = digits.len() != b.len();
    match digits {
        [] => return None,
        [b'0'] if !neg => return Some(0),
        [b'0', ..] => return None,
        _ => {}
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

impl Set {
    /// An empty intset (what SINTERSTORE and the like start from, as Redis).
    pub fn new() -> Set {
        Set {
            repr: Repr::Ints(Vec::new()),
        }
    }

    /// The set SADD creates for `first` and `size_hint` members (Redis's `setTypeCreate`):
    /// an intset for an integer when the hint fits one, else a listpack when it fits one,
    /// else a table.
    pub fn for_members(first: &[u8], size_hint: usize) -> Set {
        if canonical_int(first).is_some() && size_hint <= SET_INTSET_ENTRIES.get() {
            return Set::new();
        }
        let mut members = Hash::new();
        if size_hint > SET_ENTRIES.get() {
            members.prepare(usize::MAX, 0);
        }
        Set {
            repr: Repr::Members(members),
        }
    }

    /// Before adding `size_hint` members to an existing set (Redis's `setTypeMaybeConvert`):
    /// becomes a table when they cannot fit its encoding.
    pub fn prepare(&mut self, size_hint: usize) {
        let convert = match &self.repr {
            Repr::Ints(_) => size_hint > SET_INTSET_ENTRIES.get(),
            Repr::Members(h) => h.encoding() == "listpack" && size_hint > SET_ENTRIES.get(),
        };
        if convert {
            self.make_table();
        }
    }

    fn make_table(&mut self) {
        let mut members = self.take_members();
        members.prepare(usize::MAX, 0);
        self.repr = Repr::Members(members);
    }

    /// The members as a listpack (a table past a listpack's size), from whatever encoding;
    /// leaves an empty intset behind.
    fn take_members(&mut self) -> Hash {
        match std::mem::replace(&mut self.repr, Repr::Ints(Vec::new())) {
            Repr::Members(h) => h,
            Repr::Ints(ints) => {
                let mut h = Hash::new();
                if ints.len() > SET_ENTRIES.get() {
                    h.prepare(usize::MAX, 0);
                }
                for n in ints {
                    h.insert_limited(
                        n.to_string().as_bytes(),
                        b"",
                        SET_ENTRIES.get(),
                        SET_VALUE.get(),
                    );
                }
                h
            }
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Ints(v) => v.len(),
            Repr::Members(h) => h.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Redis's name for the encoding (OBJECT ENCODING).
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Ints(_) => "intset",
            Repr::Members(h) => h.encoding(),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match &self.repr {
            Repr::Ints(v) => v.capacity() * 8,
            Repr::Members(h) => h.heap_bytes(),
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Ints(v) => canonical_int(member).is_some_and(|n| v.binary_search(&n).is_ok()),
            Repr::Members(h) => h.get(member).is_some(),
        }
    }

    /// Adds `member`; true if it is new. Converts as Redis's `setTypeAdd` does.
    pub fn insert(&mut self, member: &[u8]) -> bool {
        if let Repr::Ints(v) = &mut self.repr {
            match canonical_int(member) {
                Some(n) => {
                    let Err(at) = v.binary_search(&n) else {
                        return false;
                    };
                    v.insert(at, n);
                    if v.len() > SET_INTSET_ENTRIES.get() {
                        self.make_table();
                    }
                    return true;
                }
                None => {
                    let fits = v.len() < SET_ENTRIES.get() && member.len() <= SET_VALUE.get();
                    let members = self.take_members();
                    self.repr = Repr::Members(members);
                    if !fits {
                        self.make_table();
                    }
                }
            }
        }
        let Repr::Members(h) = &mut self.repr else {
            unreachable!("members above")
        };
        if h.get(member).is_some() {
            return false;
        }
        h.insert_limited(member, b"", SET_ENTRIES.get(), SET_VALUE.get())
    }

    /// Removes `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Ints(v) => match canonical_int(member).map(|n| v.binary_search(&n)) {
                Some(Ok(at)) => {
                    v.remove(at);
                    true
                }
                _ => false,
            },
            Repr::Members(h) => h.remove(member),
        }
    }

    /// The members: an intset's ascending, a listpack's in insertion order, a table's in
    /// entry order. Integers are written out in decimal.
    pub fn iter(&self) -> impl Iterator<Item = Member<'_>> + '_ {
        let (ints, members): (&[i64], Option<&Hash>) = match &self.repr {
            Repr::Ints(v) => (v, None),
            Repr::Members(h) => (&[], Some(h)),
        };
        ints.iter().map(|&n| Member::Int(n)).chain(
            members
                .into_iter()
                .flat_map(|h| h.iter().map(|(f, _)| Member::Bytes(f))),
        )
    }

    /// The `i`th member in [`Set::iter`]'s order (`i < len`): direct in an intset or a
    /// table, a walk in a listpack.
    pub fn nth(&self, i: usize) -> Option<Member<'_>> {
        match &self.repr {
            Repr::Ints(v) => v.get(i).map(|&n| Member::Int(n)),
            Repr::Members(h) => h.nth(i).map(|(f, _)| Member::Bytes(f)),
        }
    }

    /// The replication form (see the module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(5 + self.len() * 8);
        out.push(match self.encoding() {
            "intset" => 0,
            "listpack" => 1,
            _ => 2,
        });
        out.extend_from_slice(&(self.len() as u32).to_be_bytes());
        for m in self.iter() {
            let b = m.to_bytes();
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(&b);
        }
        out
    }

    /// The set [`Set::encode`] wrote, or `None` if `b` is not one (truncated, trailing
    /// bytes, a count the bytes cannot hold, a member twice, a non-integer in an intset).
    pub fn decode(b: &[u8]) -> Option<Set> {
        let (&enc, mut rest) = b.split_first()?;
        let take = |rest: &mut &[u8], n: usize| -> Option<Vec<u8>> {
            if rest.len() < n {
                return None;
            }
            let (head, tail) = rest.split_at(n);
            *rest = tail;
            Some(head.to_vec())
        };
        let count_raw = take(&mut rest, 4)?;
        let count = u32::from_be_bytes(count_raw.try_into().ok()?) as usize;
        // An empty set is no value: a key holds none.
        if count == 0 || count > rest.len() / 4 {
            return None;
        }
        let mut set = match enc {
            0 => Set::new(),
            1 => Set {
                repr: Repr::Members(Hash::new()),
            },
            2 => {
                let mut h = Hash::new();
                h.prepare(usize::MAX, 0);
                Set {
                    repr: Repr::Members(h),
                }
            }
            _ => return None,
        };
        for _ in 0..count {
            let len_raw = take(&mut rest, 4)?;
            let len = u32::from_be_bytes(len_raw.try_into().ok()?) as usize;
            if rest.len() < len {
                return None;
            }
            let (member, tail) = rest.split_at(len);
            rest = tail;
            if enc == 0 && canonical_int(member).is_none() {
                return None;
            }
            if !set.insert(member) {
                return None;
            }
        }
        rest.is_empty().then_some(set)
    }
}

/// One member as stored: an intset's integer, or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl Member<'_> {
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            Member::Int(n) => n.to_string().into_bytes(),
            Member::Bytes(b) => b.to_vec(),
        }
    }

    pub fn len(self) -> usize {
        match self {
            Member::Int(n) => {
                let mut digits = usize::from(n < 0);
                let mut m = n.unsigned_abs();
                loop {
                    digits += 1;
                    m /= 10;
                    if m == 0 {
                        return digits;
                    }
                }
            }
            Member::Bytes(b) => b.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn integers_are_canonical_only() {
        assert_eq!(canonical_int(b"12"), Some(12));
        assert_eq!(canonical_int(b"-12"), Some(-12));
        assert_eq!(canonical_int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b"012"[..],
            b"+1",
            b" 1",
            b"1 ",
            b"",
            b"-0",
            b"9223372036854775808",
            b"1.0",
        ] {
            assert_eq!(
                canonical_int(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn encodings_follow_redis() {
        let mut s = Set::for_members(b"3", 3);
        for m in [&b"3"[..], b"1", b"2", b"1"] {
            s.insert(m);
        }
        assert_eq!(s.encoding(), "intset");
        let all: Vec<_> = s.iter().map(Member::to_bytes).collect();
        assert_eq!(all, vec![b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]);
        s.insert(b"x");
        assert_eq!(s.encoding(), "listpack");
        assert!(s.contains(b"2") && s.contains(b"x"));
        s.insert(&[b'y'; LISTPACK_VALUE + 1]);
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(s.len(), 5);

        let mut ints = Set::new();
        for i in 0..=INTSET_ENTRIES {
            ints.insert(i.to_string().as_bytes());
        }
        assert_eq!(ints.encoding(), "hashtable");
        assert_eq!(Set::for_members(b"a", 200).encoding(), "hashtable");
        assert_eq!(Set::for_members(b"1", 600).encoding(), "hashtable");
        let mut lp = Set::for_members(b"a", 1);
        lp.insert(b"a");
        lp.prepare(129);
        assert_eq!(lp.encoding(), "hashtable");
    }

    #[test]
    fn decode_refuses_what_encode_cannot_have_written() {
        let mut s = Set::new();
        s.insert(b"1");
        s.insert(b"-5");
        let bytes = s.encode();
        for cut in 0..bytes.len() {
            assert!(Set::decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        assert_eq!(Set::decode(&bytes), Some(s.clone()));
        let mut lp = Set::for_members(b"a", 1);
        lp.insert(b"a");
        let mut wrong = lp.encode();
        wrong[0] = 0;
        assert!(Set::decode(&wrong).is_none(), "a non-integer in an intset");
        assert!(Set::decode(&[1, 0xFF, 0xFF, 0xFF, 0xFF]).is_none());
        assert!(Set::decode(&[0, 0, 0, 0, 0]).is_none(), "no members");
    }

    proptest! {
        #[test]
        fn behaves_as_a_set(ops in prop::collection::vec((any::<bool>(), 0u16..700, any::<bool>()), 1..900)) {
            let mut s = Set::new();
            let mut model = HashSet::new();
            for (add, n, text) in ops {
                let m = if text { format!("m{n}") } else { n.to_string() }.into_bytes();
                if add {
                    prop_assert_eq!(s.insert(&m), model.insert(m.clone()));
                } else {
                    prop_assert_eq!(s.remove(&m), model.remove(&m));
                }
                prop_assert_eq!(s.len(), model.len());
            }
            let seen: HashSet<Vec<u8>> = s.iter().map(Member::to_bytes).collect();
            prop_assert_eq!(&seen, &model);
            for m in &model {
                prop_assert!(s.contains(m));
            }
            if !s.is_empty() {
                prop_assert_eq!(Set::decode(&s.encode()), Some(s.clone()));
            }
        }
    }
}
