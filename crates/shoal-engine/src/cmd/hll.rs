//! HyperLogLog (Redis 7.2): PFADD, PFCOUNT, PFMERGE, on string values in Redis's own format,
//! so counts are Redis's to the unit: the same hash (MurmurHash64A, seed `0xadc83b19`), the
//! same 16,384 six-bit registers, the same estimator (Ertl's, as Redis 5+).
//!
//! A value is Redis's header (`HYLL`, the encoding, 3 unused bytes, an 8-byte cached count
//! whose top bit marks it stale) and its registers, sparse or dense as in Redis: a new
//! HyperLogLog is sparse (runs of ZERO, XZERO and VAL opcodes, tens of bytes for a few
//! elements) and turns dense (12,304 bytes) for good once its sparse form would pass 3,000
//! bytes (`hll-sparse-max-bytes`) or a register passes 32, which the sparse form cannot
//! hold. A changed sparse value is written out again from its registers, in the shortest
//! runs (Redis edits it in place; the two agree in the cases the differential test
//! compares). PFMERGE writes a sparse result when every input was sparse, as Redis.
//! PFCOUNT of one key answers from the cached count while it is valid, and otherwise
//! counts and writes the count into the cache (in place, the key's version kept: the
//! registers did not change), as Redis; of several keys it counts their union each time.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::Access;

use super::{err, slot_string, string_of, tri, Ctx};

const P: u32 = 14;
const REGISTERS: usize = 1 << P;
const Q: u32 = 64 - P;
const BITS: usize = 6;
const HEADER: usize = 16;
const DENSE_SIZE: usize = HEADER + (REGISTERS * BITS).div_ceil(8);
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

const ERR_INVALID: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const ERR_CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

/// Redis's MurmurHash64A (little-endian reads).
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element updates and the value it offers (Redis's `hllPatLen`).
fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, 0xadc8_3b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// The registers of a HyperLogLog value, one byte each; or Redis's error: WRONGTYPE for a
/// header that is not one, INVALIDOBJ for sparse runs that do not cover the registers.
fn registers(value: &[u8]) -> Result<Vec<u8>, &'static str> {
    if !header_ok(value) {
        return Err(ERR_INVALID);
    }
    decode(value).ok_or(ERR_CORRUPT)
}

/// Whether `value` has a HyperLogLog's header, and a dense one its size (Redis's
/// `isHLLObjectOrReply`).
fn header_ok(value: &[u8]) -> bool {
    value.len() >= HEADER
        && &value[..4] == b"HYLL"
        && value[4] <= 1
        && (value[4] == 1 || value.len() == DENSE_SIZE)
}

/// The registers of a value whose header was checked; `None` for corrupt sparse runs.
fn decode(value: &[u8]) -> Option<Vec<u8>> {
    let body = &value[HEADER..];
    let mut regs = vec![0u8; REGISTERS];
    match value[4] {
        0 => {
            if value.len() != DENSE_SIZE {
                return None;
            }
            for (i, r) in regs.iter_mut().enumerate() {
                let bit = i * BITS;
                let (byte, shift) = (bit / 8, bit % 8);
                let b0 = u16::from(body[byte]);
                let b1 = u16::from(body.get(byte + 1).copied().unwrap_or(0));
                *r = (((b0 >> shift) | (b1 << (8 - shift))) & 0x3F) as u8;
            }
        }
        1 => {
            // Sparse: ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy, VAL 1vvvvvxx.
            let mut at = 0usize;
            let mut i = 0;
            while i < body.len() {
                let op = body[i];
                let (run, val) = if op & 0xC0 == 0 {
                    i += 1;
                    (usize::from(op & 0x3F) + 1, 0)
                } else if op & 0xC0 == 0x40 {
                    let next = *body.get(i + 1)?;
                    i += 2;
                    ((usize::from(op & 0x3F) << 8 | usize::from(next)) + 1, 0)
                } else {
                    i += 1;
                    (usize::from(op & 0x3) + 1, ((op >> 2) & 0x1F) + 1)
                };
                if at + run > REGISTERS {
                    return None;
                }
                regs[at..at + run].fill(val);
                at += run;
            }
            if at != REGISTERS {
                return None;
            }
        }
        _ => return None,
    }
    Some(regs)
}

/// Redis's `hll-sparse-max-bytes`: a sparse value longer than this (header included) is
/// written dense.
const SPARSE_MAX_BYTES: usize = 3000;

/// The sparse value of `regs` (the cached count marked stale), if it can be one: every
/// register at most 32, and at most [`SPARSE_MAX_BYTES`].
fn sparse(regs: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80");
    let mut i = 0;
    while i < regs.len() {
        let v = regs[i];
        let run = regs[i..].iter().take_while(|&&r| r == v).count();
        if v == 0 {
            let mut left = run;
            while left > 0 {
                let n = left.min(1 << 14);
                if n <= 64 {
                    out.push((n - 1) as u8);
                } else {
                    out.push(0x40 | ((n - 1) >> 8) as u8);
                    out.push(((n - 1) & 0xFF) as u8);
                }
                left -= n;
            }
        } else {
            if v > 32 {
                return None;
            }
            let mut left = run;
            while left > 0 {
                let n = left.min(4);
                out.push(0x80 | ((v - 1) << 2) | (n - 1) as u8);
                left -= n;
            }
        }
        if out.len() > SPARSE_MAX_BYTES {
            return None;
        }
        i += run;
    }
    Some(out)
}

/// The value of `regs`: sparse when it was (or is new) and still fits, dense otherwise.
fn encode(regs: &[u8], was_sparse: bool) -> Vec<u8> {
    match was_sparse.then(|| sparse(regs)).flatten() {
        Some(v) => v,
        None => dense(regs),
    }
}

/// `new`, a value written over `old`, with `old`'s cached count kept and marked stale, as
/// Redis marks the cache of a value it changes in place (a new value's is zero).
fn stale_cache_of(old: Option<&[u8]>, mut new: Vec<u8>) -> Vec<u8> {
    let kept = old.filter(|o| header_ok(o)).and_then(|o| o.get(8..HEADER));
    if let (Some(cache), Some(to)) = (kept, new.get_mut(8..HEADER)) {
        to.copy_from_slice(cache);
    }
    if let Some(last) = new.get_mut(HEADER - 1) {
        *last |= 0x80;
    }
    new
}

/// Whether a checked HyperLogLog value is sparse.
fn is_sparse(value: &[u8]) -> bool {
    value.get(4) == Some(&1)
}

/// A dense value of `regs` (the cached count marked stale).
fn dense(regs: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; DENSE_SIZE];
    out[..4].copy_from_slice(b"HYLL");
    out[15] = 0x80;
    let body = &mut out[HEADER..];
    for (i, &v) in regs.iter().enumerate() {
        let bit = i * BITS;
        let (byte, shift) = (bit / 8, bit % 8);
        let v = u16::from(v) << shift;
        body[byte] |= v as u8;
        if let Some(next) = body.get_mut(byte + 1) {
            *next |= (v >> 8) as u8;
        }
    }
    out
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// Redis's `hllCount`: Ertl's estimator over the registers' histogram.
fn count(regs: &[u8]) -> u64 {
    let m = REGISTERS as f64;
    let mut histo = [0u32; 64];
    for &r in regs {
        histo[usize::from(r)] += 1;
    }
    let mut z = m * tau((m - f64::from(histo[Q as usize + 1])) / m);
    for j in (1..=Q as usize).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

/// PFADD key [element ...]: 1 if a register changed (or the key was created).
pub fn pfadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        let current = tri!(slot_string(slot));
        let (mut regs, created, was_sparse) = match current {
            None => (vec![0u8; REGISTERS], true, true),
            Some(v) => match registers(v) {
                Ok(r) => (r, false, is_sparse(v)),
                Err(text) => return err(text),
            },
        };
        let mut changed = false;
        for e in &args[2..] {
            let (i, v) = pattern(e);
            if regs[i] < v {
                regs[i] = v;
                changed = true;
            }
        }
        if created || changed {
            let value = stale_cache_of(current, encode(&regs, was_sparse));
            slot.set_keep_ttl(&value);
        }
        // A HyperLogLog is a `raw` string in Redis (made so, and unshared when added to).
        slot.set_edited();
        Reply::Int(i64::from(created || changed))
    });
    if let Reply::Int(1) = reply {
        ctx.notify(crate::notify::STRING, "pfadd", &args[1]);
    }
    reply
}

/// The registers of `key` and whether its value is sparse (`None` when absent), or the
/// reply that refuses it.
fn read_registers(ctx: &Ctx<'_>, key: &[u8]) -> Result<Option<(Vec<u8>, bool)>, Reply> {
    ctx.engine
        .store
        .read(key, ctx.now_ms, Access::Read, |e| match e {
            None => Ok(None),
            Some(e) => {
                let v = string_of(e.kind, e.value)?;
                registers(v).map(|r| Some((r, is_sparse(v)))).map_err(err)
            }
        })
}

/// The count a value's header caches, if it is valid (the top bit of its last byte clear).
fn cached_count(value: &[u8]) -> Option<u64> {
    let cache: [u8; 8] = value.get(8..HEADER)?.try_into().ok()?;
    (cache[7] & 0x80 == 0).then(|| u64::from_le_bytes(cache))
}

/// PFCOUNT key [key ...]: the count of one, or of the union of several.
pub fn pfcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if let [_, key] = args {
        return ctx.engine.store.write(key, ctx.now_ms, |slot| {
            slot.count_read();
            let Some(v) = tri!(slot_string(slot)) else {
                return Reply::Int(0);
            };
            if !header_ok(v) {
                return err(ERR_INVALID);
            }
            // Redis unshares the value first: `raw` from here (OBJECT ENCODING).
            slot.set_edited();
            let Some(v) = slot.value() else {
                return Reply::Int(0);
            };
            if let Some(n) = cached_count(v) {
                return Reply::Int(n as i64);
            }
            // The header was checked above.
            let Some(regs) = decode(v) else {
                return err(ERR_CORRUPT);
            };
            let n = count(&regs);
            slot.patch(8, &n.to_le_bytes());
            Reply::Int(n as i64)
        });
    }
    let mut union = vec![0u8; REGISTERS];
    for key in &args[1..] {
        if let Some((regs, _)) = tri!(read_registers(ctx, key)) {
            for (u, r) in union.iter_mut().zip(regs) {
                *u = (*u).max(r);
            }
        }
    }
    Reply::Int(count(&union) as i64)
}

/// PFMERGE destkey [sourcekey ...]: the union into `destkey` (dense if any input was, as
/// Redis).
pub fn pfmerge(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut union = vec![0u8; REGISTERS];
    let mut all_sparse = true;
    for key in &args[1..] {
        if let Some((regs, was_sparse)) = tri!(read_registers(ctx, key)) {
            all_sparse &= was_sparse;
            for (u, r) in union.iter_mut().zip(regs) {
                *u = (*u).max(r);
            }
        }
    }
    let value = encode(&union, all_sparse);
    let reply = ctx
        .engine
        .store
        .write(&args[1], ctx.now_ms, |slot| match slot_string(slot) {
            Err(reply) => reply,
            Ok(old) => {
                let value = stale_cache_of(old, value);
                slot.set_keep_ttl(&value);
                slot.set_edited();
                Reply::ok()
            }
        });
    if !matches!(reply, Reply::Error(_)) {
        ctx.notify(crate::notify::STRING, "pfadd", &args[1]);
    }
    reply
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key: Redis's look inside a HyperLogLog value
/// (its registers, which turns a sparse one dense as in Redis; its sparse runs as
/// `z:len`, `Z:len`, `v:value,len`; its encoding), or TODENSE (1 if it was sparse). The key
/// and its value are checked before the subcommand, as Redis does.
pub fn pfdebug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    ctx.engine.store.write(&args[2], ctx.now_ms, |slot| {
        let v = match slot_string(slot) {
            Err(reply) => return reply,
            Ok(None) => return err("ERR The specified key does not exist"),
            Ok(Some(v)) if !header_ok(v) => return err(ERR_INVALID),
            Ok(Some(_)) => {
                // Redis unshares the value before any subcommand: `raw` from here.
                slot.set_edited();
                slot.value().unwrap_or_default()
            }
        };
        let sparse = is_sparse(v);
        match &sub[..] {
            b"getreg" | b"todense" => {
                let Some(regs) = decode(v) else {
                    return err(ERR_CORRUPT);
                };
                if sparse {
                    // Dense from now on, the cached count kept (Redis's `hllSparseToDense`).
                    let mut value = dense(&regs);
                    value[8..HEADER].copy_from_slice(&v[8..HEADER]);
                    slot.set_keep_ttl(&value);
                    slot.set_edited();
                }
                if sub == b"todense" {
                    Reply::Int(i64::from(sparse))
                } else {
                    Reply::Array(regs.into_iter().map(|r| Reply::Int(r.into())).collect())
                }
            }
            b"decode" if !sparse => err("ERR HLL encoding is not sparse"),
            b"decode" => Reply::Bulk(Bytes::from(sparse_runs(&v[HEADER..]))),
            b"encoding" => Reply::Simple(if sparse { "sparse" } else { "dense" }.into()),
            _ => Reply::error(format!(
                "ERR Unknown PFDEBUG subcommand '{}'",
                String::from_utf8_lossy(&args[1])
            )),
        }
    })
}

/// A sparse value's runs as PFDEBUG DECODE shows them: `z:len` (ZERO), `Z:len` (XZERO),
/// `v:value,len` (VAL), space-separated; a cut XZERO ends it.
fn sparse_runs(body: &[u8]) -> String {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let op = body[i];
        if op & 0xC0 == 0 {
            runs.push(format!("z:{}", (op & 0x3F) + 1));
            i += 1;
        } else if op & 0xC0 == 0x40 {
            let Some(&next) = body.get(i + 1) else { break };
            runs.push(format!(
                "Z:{}",
                (usize::from(op & 0x3F) << 8 | usize::from(next)) + 1
            ));
            i += 2;
        } else {
            runs.push(format!("v:{},{}", ((op >> 2) & 0x1F) + 1, (op & 0x3) + 1));
            i += 1;
        }
    }
    runs.join(" ")
}

/// PFSELFTEST: checks the register layouts (dense and sparse round trips of varied
/// registers) and the estimate's error at growing counts (within five standard errors,
/// 1.04/sqrt(16,384) each); OK, or Redis's `TESTFAILED` error saying which failed.
pub fn pfselftest(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let mut regs = vec![0u8; REGISTERS];
    for round in 0..8usize {
        for (i, r) in regs.iter_mut().enumerate() {
            *r = ((i * 31 + round * 17) % 64) as u8;
        }
        if registers(&dense(&regs)).as_deref() != Ok(&regs[..]) {
            return err("TESTFAILED Register error in the dense layout");
        }
        // Few enough set (one in 97, up to 32) for the sparse form.
        let few: Vec<u8> = regs
            .iter()
            .enumerate()
            .map(|(i, &r)| if i % 97 == 0 { r % 33 } else { 0 })
            .collect();
        if sparse(&few).and_then(|v| registers(&v).ok()).as_deref() != Some(&few[..]) {
            return err("TESTFAILED Register error in the sparse layout");
        }
    }
    let mut regs = vec![0u8; REGISTERS];
    let max_error = 5.0 * 1.04 / (REGISTERS as f64).sqrt();
    let mut next_check = 10u64;
    for n in 1..=100_000u64 {
        let (i, v) = pattern(&n.to_le_bytes());
        regs[i] = regs[i].max(v);
        if n == next_check {
            next_check *= 10;
            let got = count(&regs) as f64;
            let error = (got - n as f64).abs() / n as f64;
            // Small counts are exact or nearly: one off is allowed.
            if error > max_error && (got - n as f64).abs() > 1.0 {
                return Reply::error(format!(
                    "TESTFAILED Too big error. card:{n} abserr:{}",
                    (got - n as f64).abs()
                ));
            }
        }
    }
    Reply::ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_runs_read_as_redis_decodes_them() {
        // ZERO of 3, VAL 2 x1, XZERO of 300, VAL 32 x4.
        let body = [0x02, 0x84, 0x41, 0x2B, 0xFF];
        assert_eq!(sparse_runs(&body), "z:3 v:2,1 Z:300 v:32,4");
        assert_eq!(sparse_runs(&[0x41]), "", "a cut XZERO ends it");
    }

    #[test]
    fn registers_round_trip_through_the_dense_layout() {
        let mut regs = vec![0u8; REGISTERS];
        for (i, r) in regs.iter_mut().enumerate() {
            *r = (i * 7 % 52) as u8;
        }
        let v = dense(&regs);
        assert_eq!(v.len(), DENSE_SIZE);
        assert_eq!(registers(&v).unwrap(), regs);
        assert_eq!(registers(b"HYLL"), Err(ERR_INVALID));
        assert_eq!(registers(&v[..v.len() - 1]), Err(ERR_INVALID));
        // Sparse: one XZERO run over every register is an empty HyperLogLog.
        let mut sparse = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        sparse.extend_from_slice(&[0x40 | 0x3F, 0xFF]);
        assert_eq!(registers(&sparse).unwrap(), vec![0u8; REGISTERS]);
        sparse.push(0x00);
        assert_eq!(
            registers(&sparse),
            Err(ERR_CORRUPT),
            "runs past the registers"
        );
    }

    #[test]
    fn sparse_values_round_trip_and_turn_dense_when_they_must() {
        let empty = sparse(&vec![0u8; REGISTERS]).unwrap();
        assert_eq!(empty.len(), HEADER + 2, "one XZERO of 16,384");
        assert_eq!(registers(&empty).unwrap(), vec![0u8; REGISTERS]);
        let mut regs = vec![0u8; REGISTERS];
        regs[0] = 1;
        regs[70] = 3;
        regs[71] = 3;
        regs[16383] = 32;
        let v = sparse(&regs).unwrap();
        assert_eq!(registers(&v).unwrap(), regs);
        regs[5] = 33;
        assert!(sparse(&regs).is_none(), "a register past 32");
        assert_eq!(encode(&regs, true).len(), DENSE_SIZE);
        let many: Vec<u8> = (0..REGISTERS).map(|i| (i % 2) as u8 + 1).collect();
        assert!(sparse(&many).is_none(), "past 3,000 bytes");
        assert_eq!(
            encode(&[0u8; REGISTERS], false).len(),
            DENSE_SIZE,
            "dense stays dense"
        );
    }

    #[test]
    fn empty_counts_zero_and_counts_grow() {
        assert_eq!(count(&vec![0u8; REGISTERS]), 0);
        let mut regs = vec![0u8; REGISTERS];
        for i in 0..1000u32 {
            let (r, v) = pattern(format!("e{i}").as_bytes());
            regs[r] = regs[r].max(v);
        }
        let n = count(&regs);
        assert!((980..=1020).contains(&n), "{n}");
    }
}
