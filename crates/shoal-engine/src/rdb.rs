//! Redis's DUMP payload: one value in RDB form, then the RDB version (2 bytes, little endian)
//! and a CRC-64 (Jones, 8 bytes, little endian) of everything before it. DUMP writes values
//! in the plain encodings every Redis since 4.0 loads (string, list, set, hash, sorted set
//! with binary scores) under RDB version 9, so its payloads RESTORE into Redis 6.2 to 7.2;
//! RESTORE reads what Redis 6.2 to 7.2 DUMP: those, plus strings stored as integers or LZF
//! compressed, intsets, listpacks (hashes, sets and sorted sets) and quicklists of listpacks
//! or ziplists, and ziplists (older payloads). Pure functions; every length read from a
//! payload is checked against what is left of it before anything is allocated.

use shoal_store::{Collection, Group, Hash, List, Nack, Set, Stream, StreamId, ZSet};

/// The RDB version DUMP writes (Redis 6.2's: every Redis since restores it).
pub const WRITTEN_VERSION: u16 = 9;
/// The newest RDB version RESTORE reads (Redis 7.2's).
pub const READ_VERSION: u16 = 11;

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_LIST_ZIPLIST: u8 = 10;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_ZSET_ZIPLIST: u8 = 12;
const TYPE_HASH_ZIPLIST: u8 = 13;
const TYPE_LIST_QUICKLIST: u8 = 14;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
const TYPE_STREAM_LISTPACKS: u8 = 15;
const TYPE_STREAM_LISTPACKS_2: u8 = 19;
const TYPE_SET_LISTPACK: u8 = 20;
const TYPE_STREAM_LISTPACKS_3: u8 = 21;
/// The RDB version of a stream's payload (Redis 7.0's: its stream type, 19, is read by
/// every Redis since 7.0).
const STREAM_VERSION: u16 = 10;

/// A value as DUMP takes and RESTORE gives it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(Vec<u8>),
    Coll(Collection),
}

/// Why RESTORE refuses a payload (Redis's two errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    #[error("ERR DUMP payload version or checksum are wrong")]
    VersionOrChecksum,
    #[error("ERR Bad data format")]
    BadFormat,
}

/// CRC-64 with Jones's polynomial, reflected, as Redis's `crc64` (check value of
/// "123456789": 0xe9c6d914c4b8d9ca).
pub fn crc64(data: &[u8]) -> u64 {
    crc64_update(0, data)
}

/// `crc`, the CRC-64 of some bytes, carried on over `data` (an RDB file's checksum is of
/// everything before it, written piece by piece).
pub fn crc64_update(crc: u64, data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    const TABLE: [u64; 256] = {
        let mut t = [0u64; 256];
        let mut i = 0;
        while i < 256 {
            let mut crc = i as u64;
            let mut bit = 0;
            while bit < 8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLY
                } else {
                    crc >> 1
                };
                bit += 1;
            }
            t[i] = crc;
            i += 1;
        }
        t
    };
    data.iter().fold(crc, |crc, &b| {
        TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

// ---- Snapshot files --------------------------------------------------------------------

/// The RDB version of a snapshot file (Redis 7.0's: Redis 7.0 and later load it; its keys
/// are written as DUMP writes them, streams in 7.0's form).
pub const SNAPSHOT_VERSION: u16 = 10;

const OPCODE_AUX: u8 = 0xFA;
const OPCODE_EXPIRETIME_MS: u8 = 0xFC;
const OPCODE_SELECTDB: u8 = 0xFE;
const OPCODE_EOF: u8 = 0xFF;

/// Writes an RDB file as Redis's `rdbSaveRio` lays it out: `REDIS0010`, auxiliary fields,
/// the function libraries, then each key (its database selected when it changes, its
/// expiry in milliseconds before it, its type, name and value as in its DUMP payload), the
/// end opcode and the CRC-64 of everything before it. Streams what it is given: nothing is
/// held but the checksum.
pub struct SnapshotWriter<W: std::io::Write> {
    out: W,
    crc: u64,
    db: Option<u8>,
}

impl<W: std::io::Write> SnapshotWriter<W> {
    /// Starts the file with its header and the auxiliary fields `aux` (name, value).
    pub fn start(out: W, aux: &[(&str, &str)]) -> std::io::Result<Self> {
        let mut w = SnapshotWriter {
            out,
            crc: 0,
            db: None,
        };
        w.put(format!("REDIS{SNAPSHOT_VERSION:04}").as_bytes())?;
        for (name, value) in aux {
            let mut field = vec![OPCODE_AUX];
            put_str(&mut field, name.as_bytes());
            put_str(&mut field, value.as_bytes());
            w.put(&field)?;
        }
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc = crc64_update(self.crc, bytes);
        self.out.write_all(bytes)
    }

    /// The function libraries, as FUNCTION DUMP gives them ([`dump_functions`]): their
    /// opcodes and codes are what a snapshot holds.
    pub fn functions(&mut self, payload: &[u8]) -> std::io::Result<()> {
        match payload.len().checked_sub(10) {
            Some(end) => self.put(&payload[..end]),
            None => Ok(()),
        }
    }

    /// One key of database `db`, with its DUMP payload ([`dump_entry`]) and its expiry.
    pub fn key(
        &mut self,
        db: u8,
        key: &[u8],
        payload: &[u8],
        expire_at_ms: Option<u64>,
    ) -> std::io::Result<()> {
        let Some(end) = payload.len().checked_sub(10).filter(|e| *e >= 1) else {
            return Ok(());
        };
        let mut head = Vec::with_capacity(key.len() + 16);
        if self.db != Some(db) {
            head.push(OPCODE_SELECTDB);
            put_len(&mut head, usize::from(db));
            self.db = Some(db);
        }
        if let Some(at) = expire_at_ms {
            head.push(OPCODE_EXPIRETIME_MS);
            head.extend_from_slice(&at.to_le_bytes());
        }
        head.push(payload[0]);
        put_str(&mut head, key);
        self.put(&head)?;
        self.put(&payload[1..end])
    }

    /// Ends the file (end opcode, checksum) and gives the writer back.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.put(&[OPCODE_EOF])?;
        let crc = self.crc;
        self.out.write_all(&crc.to_le_bytes())?;
        Ok(self.out)
    }
}

// ---- DUMP ---------------------------------------------------------------------------------

fn put_len(out: &mut Vec<u8>, n: usize) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&(n as u64).to_be_bytes());
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_len(out, s.len());
    out.extend_from_slice(s);
}

/// The DUMP payload of a stored key's value, a string or a collection.
pub fn dump_entry(e: &shoal_store::Entry<'_>) -> Vec<u8> {
    match e.coll {
        Some(c) => dump_collection(c),
        None => dump_string(e.value),
    }
}

/// The DUMP payload of a string's bytes.
pub fn dump_string(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 16);
    out.push(TYPE_STRING);
    put_str(&mut out, value);
    seal(out)
}

/// The DUMP payload of a collection.
pub fn dump_collection(value: &Collection) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.heap_bytes().saturating_add(16));
    match value {
        Collection::List(l) => {
            out.push(TYPE_LIST);
            put_len(&mut out, l.len());
            for e in l.iter() {
                put_str(&mut out, e);
            }
        }
        Collection::Set(s) => {
            out.push(TYPE_SET);
            put_len(&mut out, s.len());
            for m in s.iter() {
                put_str(&mut out, &m.to_bytes());
            }
        }
        Collection::Hash(h) => {
            out.push(TYPE_HASH);
            put_len(&mut out, h.len());
            for (f, v) in h.iter() {
                put_str(&mut out, f);
                put_str(&mut out, v);
            }
        }
        Collection::Stream(st) => {
            out.push(TYPE_STREAM_LISTPACKS_2);
            put_stream(&mut out, st);
            return seal_as(out, STREAM_VERSION);
        }
        Collection::ZSet(z) => {
            out.push(TYPE_ZSET_2);
            put_len(&mut out, z.len());
            for (m, s) in z.iter() {
                put_str(&mut out, m);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
    }
    seal(out)
}

/// Adds the version and the checksum.
fn seal(out: Vec<u8>) -> Vec<u8> {
    seal_as(out, WRITTEN_VERSION)
}

fn seal_as(mut out: Vec<u8>, version: u16) -> Vec<u8> {
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Redis's RDB opcode before a function library's code (`RDB_OPCODE_FUNCTION2`).
const OPCODE_FUNCTION: u8 = 245;
/// The opcode of Redis 7.0's release candidates' libraries, which Redis no longer reads.
const OPCODE_FUNCTION_PRE_GA: u8 = 246;
/// The RDB version FUNCTION DUMP writes (Redis 7.0's, so 7.0 and later restore it).
const FUNCTION_VERSION: u16 = 10;

/// FUNCTION DUMP's payload: each library's code after the function opcode, then the
/// version and the checksum.
pub fn dump_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION);
        put_str(&mut out, code);
    }
    seal_as(out, FUNCTION_VERSION)
}

/// The libraries' codes in a FUNCTION DUMP payload (Redis's `functionRestoreCommand`), no
/// more than `max_len` bytes decompressed all together; the errors as Redis words them.
pub fn restore_functions(payload: &[u8], max_len: usize) -> Result<Vec<Vec<u8>>, String> {
    let bad = || RestoreError::VersionOrChecksum.to_string();
    if payload.len() < 10 {
        return Err(bad());
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..10].try_into().expect("8 bytes"));
    if version > READ_VERSION || crc64(&payload[..payload.len() - 8]) != crc {
        return Err(bad());
    }
    let mut r = Reader {
        b: body,
        budget: max_len,
    };
    let mut codes = Vec::new();
    while let Some(kind) = r.byte() {
        match kind {
            OPCODE_FUNCTION => {}
            OPCODE_FUNCTION_PRE_GA => return Err("ERR Pre-GA function format not supported".into()),
            _ => return Err("ERR given type is not a function".into()),
        }
        let code = r.string().ok_or("ERR Failed loading library payload")?;
        codes.push(code);
    }
    Ok(codes)
}

// ---- RESTORE ------------------------------------------------------------------------------

/// The value of a DUMP payload, strings no longer than `max_len` (a decompressed string's
/// declared length is checked before it is allocated).
pub fn restore(payload: &[u8], max_len: usize) -> Result<Value, RestoreError> {
    if payload.len() < 10 {
        return Err(RestoreError::VersionOrChecksum);
    }
    let (body, footer) = payload.split_at(payload.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..10].try_into().expect("8 bytes"));
    if version > READ_VERSION || crc64(&payload[..payload.len() - 8]) != crc {
        return Err(RestoreError::VersionOrChecksum);
    }
    let mut r = Reader {
        b: body,
        budget: max_len,
    };
    let value = r.object().ok_or(RestoreError::BadFormat)?;
    match &value {
        Value::Coll(c) if c.is_empty() => Err(RestoreError::BadFormat),
        _ => Ok(value),
    }
}

struct Reader<'a> {
    b: &'a [u8],
    /// Bytes that decompressed strings may still take, all of them together.
    budget: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.b.split_first()?;
        self.b = rest;
        Some(first)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.b.len() {
            return None;
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Some(head)
    }

    /// A length, or the special string encoding it announces (`Err`).
    fn len_or_enc(&mut self) -> Option<Result<usize, u8>> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Ok(usize::from(first & 0x3f)),
            1 => Ok((usize::from(first & 0x3f) << 8) | usize::from(self.byte()?)),
            2 => match first {
                0x80 => Ok(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as usize),
                0x81 => {
                    Ok(usize::try_from(u64::from_be_bytes(self.take(8)?.try_into().ok()?)).ok()?)
                }
                _ => return None,
            },
            _ => Err(first & 0x3f),
        })
    }

    fn len(&mut self) -> Option<usize> {
        self.len_or_enc()?.ok()
    }

    /// A count of items each at least `min_bytes` long: no more than the bytes left allow.
    fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let n = self.len()?;
        (n.checked_mul(min_bytes)? <= self.b.len()).then_some(n)
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        match self.len_or_enc()? {
            Ok(n) => Some(self.take(n)?.to_vec()),
            Err(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Err(1) => {
                let v = i16::from_le_bytes(self.take(2)?.try_into().ok()?);
                Some(v.to_string().into_bytes())
            }
            Err(2) => {
                let v = i32::from_le_bytes(self.take(4)?.try_into().ok()?);
                Some(v.to_string().into_bytes())
            }
            Err(3) => {
                let clen = self.len()?;
                let ulen = self.len()?;
                let packed = self.take(clen)?;
                self.budget = self.budget.checked_sub(ulen)?;
                lzf_decompress(packed, ulen)
            }
            Err(_) => None,
        }
    }

    fn object(&mut self) -> Option<Value> {
        let kind = self.byte()?;
        let coll = match kind {
            TYPE_STRING => return Some(Value::Str(self.string()?)),
            TYPE_LIST => {
                let n = self.count(1)?;
                let mut l = List::new();
                for _ in 0..n {
                    l.push_back(&self.string()?);
                }
                Collection::List(l)
            }
            TYPE_SET => {
                let n = self.count(1)?;
                let mut s = Set::new();
                for _ in 0..n {
                    s.insert(&self.string()?);
                }
                Collection::Set(s)
            }
            TYPE_HASH => {
                let n = self.count(2)?;
                let mut h = Hash::new();
                for _ in 0..n {
                    let f = self.string()?;
                    let v = self.string()?;
                    h.insert(&f, &v);
                }
                Collection::Hash(h)
            }
            TYPE_ZSET | TYPE_ZSET_2 => {
                let n = self.count(2)?;
                let mut z = ZSet::new();
                for _ in 0..n {
                    let m = self.string()?;
                    let score = if kind == TYPE_ZSET_2 {
                        f64::from_le_bytes(self.take(8)?.try_into().ok()?)
                    } else {
                        self.old_score()?
                    };
                    if score.is_nan() {
                        return None;
                    }
                    z.insert(&m, score);
                }
                Collection::ZSet(z)
            }
            TYPE_SET_INTSET => {
                let blob = self.string()?;
                let mut s = Set::new();
                intset(&blob, |n| {
                    let mut digits = [0u8; 20];
                    s.insert(shoal_resp::format_int(n, &mut digits));
                })?;
                Collection::Set(s)
            }
            TYPE_SET_LISTPACK => {
                let mut s = Set::new();
                listpack(&self.string()?, |m| {
                    s.insert(m);
                })?;
                Collection::Set(s)
            }
            TYPE_HASH_LISTPACK | TYPE_HASH_ZIPLIST => {
                let blob = self.string()?;
                let mut h = Hash::new();
                pairs(&blob, kind == TYPE_HASH_LISTPACK, |f, v| {
                    h.insert(f, v);
                    Some(())
                })?;
                Collection::Hash(h)
            }
            TYPE_ZSET_LISTPACK | TYPE_ZSET_ZIPLIST => {
                let blob = self.string()?;
                let mut z = ZSet::new();
                pairs(&blob, kind == TYPE_ZSET_LISTPACK, |m, score| {
                    let score: f64 = std::str::from_utf8(score).ok()?.parse().ok()?;
                    if score.is_nan() {
                        return None;
                    }
                    z.insert(m, score);
                    Some(())
                })?;
                Collection::ZSet(z)
            }
            TYPE_LIST_ZIPLIST => {
                let mut l = List::new();
                ziplist(&self.string()?, |e| l.push_back(e))?;
                Collection::List(l)
            }
            TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
                let nodes = self.count(1)?;
                let mut l = List::new();
                for _ in 0..nodes {
                    // Quicklist 2 says for each node whether it holds one plain element (1)
                    // or a listpack (2).
                    let container = if kind == TYPE_LIST_QUICKLIST_2 {
                        self.len()?
                    } else {
                        2
                    };
                    let blob = self.string()?;
                    match (kind, container) {
                        (TYPE_LIST_QUICKLIST_2, 1) => l.push_back(&blob),
                        (TYPE_LIST_QUICKLIST_2, 2) => listpack(&blob, |e| l.push_back(e))?,
                        (TYPE_LIST_QUICKLIST, _) => ziplist(&blob, |e| l.push_back(e))?,
                        _ => return None,
                    }
                }
                Collection::List(l)
            }
            TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
                Collection::Stream(Box::new(self.stream(kind)?))
            }
            _ => return None,
        };
        // Bytes after the value are left alone, as Redis leaves them.
        Some(Value::Coll(coll))
    }

    fn raw_id(&mut self) -> Option<StreamId> {
        let b = self.take(16)?;
        Some(StreamId::new(
            u64::from_be_bytes(b[..8].try_into().ok()?),
            u64::from_be_bytes(b[8..].try_into().ok()?),
        ))
    }

    fn len_id(&mut self) -> Option<StreamId> {
        Some(StreamId::new(self.len64()?, self.len64()?))
    }

    /// A length that may use all 64 bits (an ID's parts, a group's `entries_read` of -1).
    fn len64(&mut self) -> Option<u64> {
        let first = *self.b.first()?;
        if first == 0x81 {
            self.byte()?;
            return Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?));
        }
        self.len().map(|n| n as u64)
    }

    fn ms_time(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A stream of RDB type 15, 19 or 21 (Redis 5 to 7.2): its listpacks' live entries,
    /// counters and consumer groups (Redis's `rdbLoadObject`).
    fn stream(&mut self, kind: u8) -> Option<Stream> {
        let nodes = self.count(2)?;
        let mut s = Stream::new();
        let mut entries = 0u64;
        for _ in 0..nodes {
            let master = self.string()?;
            if master.len() != 16 {
                return None;
            }
            let master = Reader {
                b: &master,
                budget: 0,
            }
            .raw_id()?;
            let lp = self.string()?;
            entries += stream_node(&lp, master, &mut s, &mut self.budget)?;
        }
        let length = self.len64()?;
        let last_id = self.len_id()?;
        if length != entries || s.last().is_some_and(|(top, _)| top > last_id) {
            return None;
        }
        let (first_id, max_deleted, added) = if kind == TYPE_STREAM_LISTPACKS {
            (
                s.first().map_or(StreamId::MIN, |(id, _)| id),
                StreamId::MIN,
                length,
            )
        } else {
            (self.len_id()?, self.len_id()?, self.len64()?)
        };
        s.last_id = last_id;
        s.first_id = first_id;
        s.max_deleted = max_deleted;
        s.entries_added = added;
        let groups = self.count(3)?;
        for _ in 0..groups {
            let name = self.string()?;
            let last = self.len_id()?;
            let read = if kind == TYPE_STREAM_LISTPACKS {
                s.entries_up_to(last)
            } else {
                self.len64()? as i64
            };
            let mut g = Group::new(last, read);
            let pel = self.count(17)?;
            for _ in 0..pel {
                let id = self.raw_id()?;
                let nack = Nack {
                    consumer: Box::default(),
                    delivery_ms: self.ms_time()?,
                    deliveries: self.len64()?,
                };
                if g.pel.insert(id, nack).is_some() {
                    return None;
                }
            }
            let consumers = self.count(10)?;
            for _ in 0..consumers {
                let cname = self.string()?;
                let seen = self.ms_time()?;
                let active = if kind == TYPE_STREAM_LISTPACKS_3 {
                    self.ms_time()? as i64
                } else {
                    seen as i64
                };
                let (c, created) = g.consumer(&cname, seen);
                if !created {
                    return None;
                }
                c.active_ms = active;
                let owned = self.count(16)?;
                for _ in 0..owned {
                    let id = self.raw_id()?;
                    let n = g.pel.get_mut(&id)?;
                    if !n.consumer.is_empty() {
                        return None;
                    }
                    n.consumer = cname.clone().into();
                    g.consumers.get_mut(&cname[..])?.pending.insert(id);
                }
            }
            // Every pending entry belongs to a consumer.
            if g.pel.values().any(|n| n.consumer.is_empty()) {
                return None;
            }
            if !s.create_group(&name, g) {
                return None;
            }
        }
        Some(s)
    }

    /// A score of the oldest sorted-set type: a length byte, 253-255 for nan, inf, -inf.
    fn old_score(&mut self) -> Option<f64> {
        match self.byte()? {
            253 => Some(f64::NAN),
            254 => Some(f64::INFINITY),
            255 => Some(f64::NEG_INFINITY),
            n => std::str::from_utf8(self.take(usize::from(n))?)
                .ok()?
                .parse()
                .ok(),
        }
    }
}

/// LZF's decompression (as liblzf, which Redis uses), into exactly `ulen` bytes.
fn lzf_decompress(input: &[u8], ulen: usize) -> Option<Vec<u8>> {
    // A back reference of three bytes makes at most 264: no more than 88 times the input.
    if ulen > input.len().saturating_mul(88) {
        return None;
    }
    let mut out = Vec::with_capacity(ulen);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            let lit = input.get(i..i + n)?;
            if out.len() + n > ulen {
                return None;
            }
            out.extend_from_slice(lit);
            i += n;
        } else {
            let mut n = ctrl >> 5;
            if n == 7 {
                n += usize::from(*input.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            n += 2;
            if back > out.len() || out.len() + n > ulen {
                return None;
            }
            let from = out.len() - back;
            for k in 0..n {
                let b = out[from + k];
                out.push(b);
            }
        }
    }
    (out.len() == ulen).then_some(out)
}

/// The integers of an intset, each passed to `f`: its width (2, 4 or 8), its count, then
/// the values.
fn intset(b: &[u8], mut f: impl FnMut(i64)) -> Option<()> {
    let width = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    let n = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?) as usize;
    let body = &b[8..];
    if !matches!(width, 2 | 4 | 8) || body.len() != n.checked_mul(width)? || n == 0 {
        return None;
    }
    for c in body.chunks_exact(width) {
        f(match width {
            2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
            4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            _ => i64::from_le_bytes(c.try_into().expect("8 bytes")),
        });
    }
    Some(())
}

/// The live entries of one stream listpack (master entry, then entries delta-encoded from
/// `master`), appended to `s` in order; how many. `None` when it does not parse, or its IDs
/// do not rise.
///
/// The elements are kept in one buffer with their bounds, each charged to `budget` (the
/// payload's decompression budget) with its bounds' 16 bytes while the node is read (and
/// given back after): a listpack of tiny integers takes a bounded multiple of its own size,
/// never one allocation per element.
fn stream_node(lp: &[u8], master: StreamId, s: &mut Stream, budget: &mut usize) -> Option<u64> {
    let mut bytes: Vec<u8> = Vec::new();
    let mut bounds: Vec<(usize, usize)> = Vec::new();
    let mut ok = true;
    listpack(lp, |e| match budget.checked_sub(e.len() + 16) {
        Some(left) if ok => {
            *budget = left;
            bounds.push((bytes.len(), bytes.len() + e.len()));
            bytes.extend_from_slice(e);
        }
        _ => ok = false,
    })?;
    if !ok {
        return None;
    }
    // The buffer goes with this node: what it took is given back for the next one.
    *budget += bytes.len() + 16 * bounds.len();
    let elems: Vec<&[u8]> = bounds.iter().map(|&(a, b)| &bytes[a..b]).collect();
    let int = |e: &&[u8]| -> Option<i64> { std::str::from_utf8(e).ok()?.parse().ok() };
    let mut it = elems.iter();
    let _count = int(it.next()?)?;
    let _deleted = int(it.next()?)?;
    let nfields = usize::try_from(int(it.next()?)?).ok()?;
    if nfields > elems.len() {
        return None;
    }
    let fields: Vec<&[u8]> = it.by_ref().take(nfields).copied().collect();
    if fields.len() != nfields || int(it.next()?)? != 0 {
        return None;
    }
    let mut live = 0;
    while let Some(flags) = it.next() {
        let flags = int(flags)?;
        let ms = master.ms.wrapping_add(int(it.next()?)? as u64);
        let seq = master.seq.wrapping_add(int(it.next()?)? as u64);
        let mut pairs: Vec<&[u8]> = Vec::new();
        if flags & 2 != 0 {
            for f in &fields {
                pairs.push(f);
                pairs.push(it.next()?);
            }
        } else {
            let n = usize::try_from(int(it.next()?)?).ok()?;
            if n > elems.len() {
                return None;
            }
            for _ in 0..2 * n {
                pairs.push(it.next()?);
            }
        }
        let _lp_count = it.next()?;
        if flags & 1 != 0 {
            continue;
        }
        let id = StreamId::new(ms, seq);
        if pairs.is_empty() || s.last().is_some_and(|(top, _)| top >= id) || id.is_zero() {
            return None;
        }
        s.append(id, &pairs);
        live += 1;
    }
    Some(live)
}

/// Appends one listpack element: a canonical integer as an integer, else a string.
fn lp_push(out: &mut Vec<u8>, e: &[u8]) {
    match shoal_resp::string2ll(e).filter(|n| {
        let mut digits = [0u8; 20];
        shoal_resp::format_int(*n, &mut digits) == e
    }) {
        Some(n) => lp_push_int(out, n),
        None => {
            let start = out.len();
            let n = e.len();
            if n < 64 {
                out.push(0x80 | n as u8);
            } else if n < 4096 {
                out.extend_from_slice(&[0xe0 | (n >> 8) as u8, n as u8]);
            } else {
                out.push(0xf0);
                out.extend_from_slice(&(n as u32).to_le_bytes());
            }
            out.extend_from_slice(e);
            lp_backlen(out, out.len() - start);
        }
    }
}

fn lp_push_int(out: &mut Vec<u8>, n: i64) {
    let start = out.len();
    if (0..=127).contains(&n) {
        out.push(n as u8);
    } else if (-4096..4096).contains(&n) {
        let u = (n as u16) & 0x1fff;
        out.extend_from_slice(&[0xc0 | (u >> 8) as u8, u as u8]);
    } else if let Ok(v) = i16::try_from(n) {
        out.push(0xf1);
        out.extend_from_slice(&v.to_le_bytes());
    } else if (-(1 << 23)..(1 << 23)).contains(&n) {
        out.push(0xf2);
        out.extend_from_slice(&(n as i32).to_le_bytes()[..3]);
    } else if let Ok(v) = i32::try_from(n) {
        out.push(0xf3);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.push(0xf4);
        out.extend_from_slice(&n.to_le_bytes());
    }
    lp_backlen(out, out.len() - start);
}

/// An element's length again, backwards (Redis's `lpEncodeBacklen`).
fn lp_backlen(out: &mut Vec<u8>, l: usize) {
    let n = shoal_store::listpack_backlen(l);
    for i in (0..n).rev() {
        let b = ((l >> (7 * i)) & 127) as u8;
        out.push(if i == n - 1 { b } else { b | 128 });
    }
}

/// A listpack of the elements `body` writes, which answers how many (header, elements, end
/// byte).
fn listpack_of(body: impl FnOnce(&mut Vec<u8>) -> usize) -> Vec<u8> {
    let mut lp = vec![0u8; 6];
    let count = body(&mut lp);
    lp.push(0xff);
    let total = lp.len() as u32;
    lp[..4].copy_from_slice(&total.to_le_bytes());
    lp[4..6].copy_from_slice(&(count.min(65535) as u16).to_le_bytes());
    lp
}

fn put_len64(out: &mut Vec<u8>, n: u64) {
    match usize::try_from(n) {
        Ok(n) if u32::try_from(n).is_ok() => put_len(out, n),
        _ => {
            out.push(0x81);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn put_raw_id(out: &mut Vec<u8>, id: StreamId) {
    out.extend_from_slice(&id.ms.to_be_bytes());
    out.extend_from_slice(&id.seq.to_be_bytes());
}

/// A stream as RDB type 19 (Redis 7.0's): its entries in listpacks of up to 100 entries,
/// each delta-encoded from its first, then the counters and the groups.
fn put_stream(out: &mut Vec<u8>, s: &Stream) {
    let all: Vec<(StreamId, &[u8])> = s.range(StreamId::MIN, StreamId::MAX).collect();
    let chunks: Vec<&[(StreamId, &[u8])]> = all
        .chunks(shoal_store::STREAM_NODE_MAX_ENTRIES as usize)
        .collect();
    put_len(out, chunks.len());
    for chunk in chunks {
        let (master, first) = chunk[0];
        let fields: Vec<&[u8]> = shoal_store::stream_fields(first).step_by(2).collect();
        let lp = listpack_of(|lp| {
            let mut count = 4 + fields.len();
            lp_push_int(lp, chunk.len() as i64);
            lp_push_int(lp, 0);
            lp_push_int(lp, fields.len() as i64);
            for f in &fields {
                lp_push(lp, f);
            }
            lp_push_int(lp, 0);
            for &(id, packed) in chunk {
                let own: Vec<&[u8]> = shoal_store::stream_fields(packed).collect();
                let same = own.len() == 2 * fields.len()
                    && own.iter().step_by(2).zip(&fields).all(|(a, b)| a == b);
                lp_push_int(lp, if same { 2 } else { 0 });
                lp_push_int(lp, id.ms.wrapping_sub(master.ms) as i64);
                lp_push_int(lp, id.seq.wrapping_sub(master.seq) as i64);
                if same {
                    for v in own.iter().skip(1).step_by(2) {
                        lp_push(lp, v);
                    }
                    lp_push_int(lp, fields.len() as i64 + 3);
                    count += fields.len() + 4;
                } else {
                    lp_push_int(lp, (own.len() / 2) as i64);
                    for e in &own {
                        lp_push(lp, e);
                    }
                    lp_push_int(lp, own.len() as i64 + 4);
                    count += own.len() + 5;
                }
            }
            count
        });
        let mut key = Vec::with_capacity(16);
        put_raw_id(&mut key, master);
        put_str(out, &key);
        put_str(out, &lp);
    }
    put_len(out, s.len());
    for id in [s.last_id, s.first_id, s.max_deleted] {
        put_len64(out, id.ms);
        put_len64(out, id.seq);
    }
    put_len64(out, s.entries_added);
    put_len(out, s.groups().len());
    for (name, g) in s.groups() {
        put_str(out, name);
        put_len64(out, g.last_id.ms);
        put_len64(out, g.last_id.seq);
        put_len64(out, g.entries_read as u64);
        put_len(out, g.pel.len());
        for (id, n) in &g.pel {
            put_raw_id(out, *id);
            out.extend_from_slice(&n.delivery_ms.to_le_bytes());
            put_len64(out, n.deliveries);
        }
        put_len(out, g.consumers.len());
        for (cname, c) in &g.consumers {
            put_str(out, cname);
            out.extend_from_slice(&c.seen_ms.to_le_bytes());
            put_len(out, c.pending.len());
            for id in &c.pending {
                put_raw_id(out, *id);
            }
        }
    }
}

/// The elements of a listpack (`packed`) or ziplist taken two by two (a hash's fields and
/// values, a sorted set's members and scores); `None` for an odd count or when `f` refuses.
fn pairs(b: &[u8], packed: bool, mut f: impl FnMut(&[u8], &[u8]) -> Option<()>) -> Option<()> {
    let mut first: Option<Vec<u8>> = None;
    let mut ok = true;
    let mut each = |e: &[u8]| match first.take() {
        None => first = Some(e.to_vec()),
        Some(a) => ok &= f(&a, e).is_some(),
    };
    if packed {
        listpack(b, &mut each)?;
    } else {
        ziplist(b, &mut each)?;
    }
    (ok && first.is_none()).then_some(())
}

/// An integer element as its decimal text, formatted on the stack.
fn int_element(v: i64, f: &mut impl FnMut(&[u8])) {
    let mut digits = [0u8; 20];
    f(shoal_resp::format_int(v, &mut digits));
}

/// The elements of a listpack (Redis 7's compact encoding), each passed to `f` (integers
/// as their decimal text); `None` when it does not parse.
fn listpack(b: &[u8], mut f: impl FnMut(&[u8])) -> Option<()> {
    let total = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    if total != b.len() || total < 7 {
        return None;
    }
    let mut p = &b[6..];
    loop {
        let first = *p.first()?;
        if first == 0xff {
            return (p.len() == 1).then_some(());
        }
        let used = if first & 0x80 == 0 {
            int_element(i64::from(first & 0x7f), &mut f);
            1
        } else if first & 0xc0 == 0x80 {
            let n = usize::from(first & 0x3f);
            f(p.get(1..1 + n)?);
            1 + n
        } else if first & 0xe0 == 0xc0 {
            let raw = (i64::from(first & 0x1f) << 8) | i64::from(*p.get(1)?);
            int_element(if raw >= 1 << 12 { raw - (1 << 13) } else { raw }, &mut f);
            2
        } else if first & 0xf0 == 0xe0 {
            let n = (usize::from(first & 0x0f) << 8) | usize::from(*p.get(1)?);
            f(p.get(2..2 + n)?);
            2 + n
        } else {
            match first {
                0xf0 => {
                    let n = u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize;
                    f(p.get(5..5usize.checked_add(n)?)?);
                    5 + n
                }
                0xf1..=0xf4 => {
                    let w = match first {
                        0xf1 => 2,
                        0xf2 => 3,
                        0xf3 => 4,
                        _ => 8,
                    };
                    let mut buf = [0u8; 8];
                    buf[..w].copy_from_slice(p.get(1..1 + w)?);
                    // Sign-extend from the top bit of the field.
                    let shift = 64 - 8 * w as u32;
                    int_element((i64::from_le_bytes(buf) << shift) >> shift, &mut f);
                    1 + w
                }
                _ => return None,
            }
        };
        // The entry's length again, backwards, in 1 to 5 bytes.
        let back = shoal_store::listpack_backlen(used);
        p = p.get(used.checked_add(back)?..)?;
    }
}

/// The elements of a ziplist (the compact encoding before Redis 7), each passed to `f`
/// (integers as their decimal text); `None` when it does not parse.
fn ziplist(b: &[u8], mut f: impl FnMut(&[u8])) -> Option<()> {
    let total = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?) as usize;
    if total != b.len() || total < 11 {
        return None;
    }
    let mut p = &b[10..];
    loop {
        let first = *p.first()?;
        if first == 0xff {
            return (p.len() == 1).then_some(());
        }
        // The previous entry's length: one byte, or 0xfe and four.
        let prev = if first < 0xfe { 1 } else { 5 };
        p = p.get(prev..)?;
        let enc = *p.first()?;
        let used = match enc >> 6 {
            0 => {
                let n = usize::from(enc & 0x3f);
                f(p.get(1..1 + n)?);
                1 + n
            }
            1 => {
                let n = (usize::from(enc & 0x3f) << 8) | usize::from(*p.get(1)?);
                f(p.get(2..2 + n)?);
                2 + n
            }
            2 => {
                let n = u32::from_be_bytes(p.get(1..5)?.try_into().ok()?) as usize;
                f(p.get(5..5usize.checked_add(n)?)?);
                5 + n
            }
            _ => {
                let (v, w): (i64, usize) = match enc {
                    0xc0 => (
                        i64::from(i16::from_le_bytes(p.get(1..3)?.try_into().ok()?)),
                        2,
                    ),
                    0xd0 => (
                        i64::from(i32::from_le_bytes(p.get(1..5)?.try_into().ok()?)),
                        4,
                    ),
                    0xe0 => (i64::from_le_bytes(p.get(1..9)?.try_into().ok()?), 8),
                    0xf0 => {
                        let bytes = p.get(1..4)?;
                        let raw = i32::from_le_bytes([0, bytes[0], bytes[1], bytes[2]]) >> 8;
                        (i64::from(raw), 3)
                    }
                    0xfe => (i64::from(*p.get(1)? as i8), 1),
                    0xf1..=0xfd => (i64::from(enc & 0x0f) - 1, 0),
                    _ => return None,
                };
                int_element(v, &mut f);
                1 + w
            }
        };
        p = p.get(used..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_s() {
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(crc64(b""), 0);
    }

    #[test]
    fn what_dump_writes_restore_reads() {
        let big = vec![b'x'; 70_000];
        for s in [&b""[..], b"v", b"12", &big] {
            assert_eq!(
                restore(&dump_string(s), usize::MAX),
                Ok(Value::Str(s.to_vec()))
            );
        }
        let mut h = Hash::new();
        h.insert(b"f", b"v");
        h.insert(b"g", &big);
        let mut s = Set::new();
        for m in ["1", "-7", "a"] {
            s.insert(m.as_bytes());
        }
        let mut l = List::new();
        for e in ["a", "", "c"] {
            l.push_back(e.as_bytes());
        }
        let mut z = ZSet::new();
        z.insert(b"a", 1.5);
        z.insert(b"b", f64::NEG_INFINITY);
        for c in [
            Collection::Hash(h),
            Collection::Set(s),
            Collection::List(l),
            Collection::ZSet(z),
            Collection::Stream(Box::new(sample_stream(&big))),
            Collection::Stream(Box::default()),
        ] {
            let payload = dump_collection(&c);
            let mut c = c;
            if let Collection::Stream(st) = &mut c {
                // RDB type 19 has no consumer's active time: Redis takes its seen time.
                for name in ["g", "none"] {
                    if let Some(g) = st.group_mut(name.as_bytes()) {
                        for c in g.consumers.values_mut() {
                            c.active_ms = c.seen_ms as i64;
                        }
                    }
                }
            }
            assert_eq!(restore(&payload, usize::MAX), Ok(Value::Coll(c)));
        }
    }

    #[test]
    fn damaged_payloads_are_refused_with_redis_s_errors() {
        let good = dump_string(b"value");
        let mut flipped = good.clone();
        flipped[2] ^= 1;
        assert_eq!(
            restore(&flipped, usize::MAX),
            Err(RestoreError::VersionOrChecksum)
        );
        assert_eq!(
            restore(b"short", usize::MAX),
            Err(RestoreError::VersionOrChecksum)
        );
        // A newer RDB version than Redis 7.2's.
        let mut newer = good[..good.len() - 10].to_vec();
        newer.extend_from_slice(&(READ_VERSION + 1).to_le_bytes());
        let crc = crc64(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(
            restore(&newer, usize::MAX),
            Err(RestoreError::VersionOrChecksum)
        );
        // Sealed but wrong inside: a set claiming more members than bytes, an unknown type,
        // an empty set.
        for body in [
            vec![TYPE_SET, 0x80, 0xff, 0xff, 0xff, 0xff],
            vec![99, 0],
            vec![TYPE_SET, 0],
        ] {
            assert_eq!(
                restore(&seal(body), usize::MAX),
                Err(RestoreError::BadFormat)
            );
        }
        assert_eq!(
            restore(&dump_string(b"abc"), usize::MAX),
            Ok(Value::Str(b"abc".to_vec()))
        );
        // A compressed string past what the payload may decompress to, all strings together.
        let lzf = seal(vec![TYPE_STRING, 0xc3, 5, 10, 0x00, b'a', 0xe0, 0x00, 0x00]);
        assert_eq!(restore(&lzf, 10), Ok(Value::Str(vec![b'a'; 10])));
        assert_eq!(restore(&lzf, 9), Err(RestoreError::BadFormat));
    }

    /// Mutated payloads (bytes changed, cut, repeated; then sealed with a good checksum so
    /// the reader sees them) are read or refused, never a panic; what reads writes back.
    /// 250 entries (three listpacks), fields shared or not, integers and a large value, a
    /// group with two consumers' pending entries and one without.
    fn sample_stream(big: &[u8]) -> Stream {
        let mut st = Stream::new();
        for i in 1..=250u64 {
            let n = (i * 7919).to_string();
            let id = StreamId::new(1_700_000_000_000 + i, i % 3);
            match i % 5 {
                0 => st.append(id, &[b"other", n.as_bytes(), b"x", b"-5"]),
                1 if i == 1 => st.append(id, &[b"f", big]),
                _ => st.append(id, &[b"f", n.as_bytes()]),
            }
        }
        let mut g = Group::new(StreamId::new(1_700_000_000_010, 1), 10);
        g.consumer(b"alice", 5);
        g.consumer(b"bob", 6);
        g.consumer(b"idle", 7);
        g.deliver(StreamId::new(1_700_000_000_002, 2), b"alice", 9);
        g.deliver(StreamId::new(1_700_000_000_003, 0), b"bob", 9);
        st.create_group(b"g", g);
        st.create_group(b"none", Group::new(StreamId::MIN, -1));
        st
    }

    #[test]
    fn a_long_stream_restores_within_a_budget_of_its_own_size() {
        let mut st = Stream::new();
        for i in 1..=20_000u64 {
            st.append(StreamId::new(i, 0), &[b"f", b"1"]);
        }
        let payload = dump_collection(&Collection::Stream(Box::new(st.clone())));
        // Each listpack's elements are held while it is read, then given back.
        assert_eq!(
            restore(&payload, 2 * payload.len()),
            Ok(Value::Coll(Collection::Stream(Box::new(st))))
        );
    }

    #[test]
    fn mutated_payloads_never_panic() {
        let mut z = ZSet::new();
        z.insert(b"m", 2.0);
        let mut lp = vec![0, 0, 0, 0, 2, 0, 0x82, b'a', b'b', 3, 0x05, 1, 0xff];
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        let mut hash_lp = vec![TYPE_HASH_LISTPACK];
        put_str(&mut hash_lp, &lp);
        let mut quick = vec![TYPE_LIST_QUICKLIST_2, 2, 2];
        put_str(&mut quick, &lp);
        quick.extend_from_slice(&[1, 1, b'x']);
        let bases: Vec<Vec<u8>> = vec![
            dump_string(b"some value"),
            dump_collection(&Collection::ZSet(z)),
            dump_collection(&Collection::Stream(Box::new(sample_stream(b"v")))),
            seal(hash_lp),
            seal(quick),
            seal(vec![TYPE_STRING, 0xc3, 5, 10, 0x00, b'a', 0xe0, 0x00, 0x00]),
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for base in &bases {
            assert!(restore(base, 1 << 20).is_ok(), "{base:?}");
            for _ in 0..4000 {
                let mut body = base[..base.len() - 10].to_vec();
                for _ in 0..1 + next() % 4 {
                    let at = (next() as usize) % body.len().max(1);
                    match next() % 4 {
                        0 if !body.is_empty() => body[at] = next() as u8,
                        1 => body.truncate(at),
                        2 => body.insert(at.min(body.len()), next() as u8),
                        _ => {
                            let piece = body[at.min(body.len())..].to_vec();
                            body.extend_from_slice(&piece);
                        }
                    }
                }
                if let Ok(v) = restore(&seal(body), 1 << 20) {
                    let again = match &v {
                        Value::Str(s) => dump_string(s),
                        Value::Coll(c) => dump_collection(c),
                    };
                    assert_eq!(restore(&again, usize::MAX), Ok(v));
                }
            }
        }
    }

    #[test]
    fn lzf_and_the_compact_encodings_decode() {
        // "aaaaaaaaaa" as liblzf writes it: one literal, then a back reference of 9.
        assert_eq!(
            lzf_decompress(&[0x00, b'a', 0xe0, 0x00, 0x00], 10),
            Some(b"aaaaaaaaaa".to_vec())
        );
        assert_eq!(
            lzf_decompress(&[0x00, b'a', 0xe0, 0x00, 0x00], 500),
            None,
            "past 88 times"
        );
        assert_eq!(
            lzf_decompress(&[0x20, 0x05], 3),
            None,
            "reference before the start"
        );
        // An intset of 16-bit integers 1, -2.
        let mut is = 2u32.to_le_bytes().to_vec();
        is.extend_from_slice(&2u32.to_le_bytes());
        is.extend_from_slice(&1i16.to_le_bytes());
        is.extend_from_slice(&(-2i16).to_le_bytes());
        let mut got = Vec::new();
        assert_eq!(intset(&is, |n| got.push(n)), Some(()));
        assert_eq!(got, [1, -2]);
        // A listpack of "ab", 5, -100 (13-bit), 1000 (13-bit), 70000 (24-bit).
        let mut lp = vec![0, 0, 0, 0, 5, 0];
        lp.extend_from_slice(&[0x82, b'a', b'b', 3]);
        lp.extend_from_slice(&[0x05, 1]);
        let neg = (1i64 << 13) - 100;
        lp.extend_from_slice(&[0xc0 | (neg >> 8) as u8, neg as u8, 2]);
        lp.extend_from_slice(&[0xc0 | (1000 >> 8) as u8, (1000 & 0xff) as u8, 2]);
        lp.extend_from_slice(&[0xf2, 0x70, 0x11, 0x01, 4]);
        lp.push(0xff);
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        let mut items: Vec<String> = Vec::new();
        let parsed = listpack(&lp, |b| items.push(String::from_utf8(b.to_vec()).unwrap()));
        assert_eq!(parsed, Some(()));
        assert_eq!(items, ["ab", "5", "-100", "1000", "70000"]);
        lp.pop();
        assert_eq!(listpack(&lp, |_| {}), None, "no end mark");
    }

    /// A snapshot file: Redis's header, an auxiliary field, the database selected once per
    /// run of keys, the expiry before its key, each key as its DUMP payload without the
    /// footer, the end opcode and the CRC-64 of all before it.
    #[test]
    fn a_snapshot_is_laid_out_as_redis_writes_rdb_files() {
        let mut w = SnapshotWriter::start(Vec::new(), &[("redis-ver", "7.2.4")]).unwrap();
        w.functions(&dump_functions([&b"#!lua name=x"[..]]))
            .unwrap();
        let a = dump_string(b"1");
        w.key(0, b"a", &a, None).unwrap();
        w.key(0, b"b", &dump_string(b"22"), Some(0x0102)).unwrap();
        w.key(3, b"c", &a, None).unwrap();
        let file = w.finish().unwrap();
        let mut want = b"REDIS0010".to_vec();
        want.extend_from_slice(b"\xFA\x09redis-ver\x057.2.4");
        want.extend_from_slice(b"\xF5\x0C#!lua name=x");
        want.extend_from_slice(b"\xFE\x00");
        want.extend_from_slice(&[TYPE_STRING, 1, b'a']);
        want.extend_from_slice(&a[1..a.len() - 10]);
        want.extend_from_slice(b"\xFC\x02\x01\x00\x00\x00\x00\x00\x00");
        want.extend_from_slice(&[TYPE_STRING, 1, b'b', 2, b'2', b'2']);
        want.extend_from_slice(b"\xFE\x03");
        want.extend_from_slice(&[TYPE_STRING, 1, b'c']);
        want.extend_from_slice(&a[1..a.len() - 10]);
        want.push(0xFF);
        let crc = crc64(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(file, want);
        assert_eq!(crc64_update(crc64(b"1234"), b"56789"), crc64(b"123456789"));
    }
}
