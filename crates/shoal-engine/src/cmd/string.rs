//! String commands: GET, SET and its variants, MGET/MSET, APPEND, the INCR family, ranges.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{Access, PREFETCH_MAX};

use super::{
    entry_string, err, int_arg, is, parse_i64, slot_string, tri, Ctx, ERR_NOT_FLOAT,
    ERR_NOT_INTEGER, ERR_SYNTAX,
};
use crate::notify::{GENERIC, STRING};

const ERR_TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
const ERR_NOT_STRINGS: &str = "ERR The specified keys must contain string values";

fn bulk_or_nil(v: Option<Bytes>) -> Reply {
    v.map_or(Reply::Nil, Reply::Bulk)
}

pub fn get(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    ctx.engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            match entry_string(e) {
                Ok(v) => bulk_or_nil(v.map(Bytes::copy_from_slice)),
                Err(reply) => reply,
            }
        })
}

/// An expiry option's unit.
#[derive(Clone, Copy)]
pub(super) enum Unit {
    Seconds,
    Millis,
}

/// Turns an EX/PX/EXAT/PXAT argument into an absolute Unix ms time, with Redis's checks:
/// not an integer -> ERR not an integer; <= 0 or overflowing -> "invalid expire time in '<cmd>'".
pub(super) fn expire_at(
    arg: &[u8],
    unit: Unit,
    absolute: bool,
    now_ms: u64,
    cmd: &str,
) -> Result<u64, Reply> {
    let n = int_arg(arg)?;
    let invalid = || Reply::error(format!("ERR invalid expire time in '{cmd}' command"));
    if n <= 0 {
        return Err(invalid());
    }
    let ms = match unit {
        Unit::Seconds => n.checked_mul(1000).ok_or_else(invalid)?,
        Unit::Millis => n,
    };
    if absolute {
        Ok(ms as u64)
    } else {
        (ms as u64)
            .checked_add(now_ms)
            .filter(|&t| t <= i64::MAX as u64)
            .ok_or_else(invalid)
    }
}

/// TTL option of SET and GETEX. Redis refuses two different ones but accepts a repeat of the
/// same one (the last value wins, and only that value is validated).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TtlOpt {
    Ex,
    Px,
    ExAt,
    PxAt,
    Keep,
    Persist,
}

/// What SET/GETEX do with the TTL.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ttl {
    /// No option: SET clears the TTL, GETEX leaves it.
    Default,
    At(u64),
    Keep,
    Persist,
}

/// Parses the TTL options among `args[from..]`; `other` handles the command's other flags
/// (returns false for an unknown word). KEEPTTL is SET's, PERSIST is GETEX's.
fn parse_ttl_options<'a>(
    args: &'a [Bytes],
    from: usize,
    cmd: &str,
    mut other: impl FnMut(&[u8]) -> bool,
) -> Result<TtlSpec<'a>, Reply> {
    let mut seen: Option<(TtlOpt, Option<&Bytes>)> = None;
    let mut i = from;
    while i < args.len() {
        let a = &args[i][..];
        let opt = match a {
            a if is(a, "EX") => Some(TtlOpt::Ex),
            a if is(a, "PX") => Some(TtlOpt::Px),
            a if is(a, "EXAT") => Some(TtlOpt::ExAt),
            a if is(a, "PXAT") => Some(TtlOpt::PxAt),
            a if is(a, "KEEPTTL") && cmd == "set" => Some(TtlOpt::Keep),
            a if is(a, "PERSIST") && cmd == "getex" => Some(TtlOpt::Persist),
            _ => None,
        };
        match opt {
            Some(o) if seen.is_none_or(|(s, _)| s == o) => {
                if matches!(o, TtlOpt::Keep | TtlOpt::Persist) {
                    seen = Some((o, None));
                } else {
                    let value = args.get(i + 1).ok_or_else(|| err(ERR_SYNTAX))?;
                    seen = Some((o, Some(value)));
                    i += 1;
                }
            }
            None if other(a) => {}
            _ => return Err(err(ERR_SYNTAX)),
        }
        i += 1;
    }
    Ok(TtlSpec(seen))
}

/// The TTL option as given, its value not yet checked: SET checks it before touching the
/// key, GETEX only after finding the key (a missing key answers nil), as in Redis.
struct TtlSpec<'a>(Option<(TtlOpt, Option<&'a Bytes>)>);

impl TtlSpec<'_> {
    fn resolve(&self, now_ms: u64, cmd: &str) -> Result<Ttl, Reply> {
        Ok(match self.0 {
            None => Ttl::Default,
            Some((TtlOpt::Keep, _)) => Ttl::Keep,
            Some((TtlOpt::Persist, _)) => Ttl::Persist,
            Some((o, Some(v))) => {
                let (unit, absolute) = match o {
                    TtlOpt::Ex => (Unit::Seconds, false),
                    TtlOpt::Px => (Unit::Millis, false),
                    TtlOpt::ExAt => (Unit::Seconds, true),
                    _ => (Unit::Millis, true),
                };
                Ttl::At(expire_at(v, unit, absolute, now_ms, cmd)?)
            }
            Some((_, None)) => Ttl::Default,
        })
    }
}

/// True for a write whose effect and reply do not depend on the key's current state: SET
/// without NX, XX, GET or KEEPTTL, SETEX, PSETEX and MSET. Such a write may run on a copy
/// that could not learn the key's state (last-writer-wins orders it after that state);
/// anything else reads the key.
pub fn blind_write(args: &[Bytes]) -> bool {
    let Some(name) = args.first() else {
        return false;
    };
    if is(name, "SET") {
        let conditional = |a: &Bytes| ["NX", "XX", "GET", "KEEPTTL"].iter().any(|o| is(a, o));
        return args.len() >= 3 && !args[3..].iter().any(conditional);
    }
    is(name, "SETEX") || is(name, "PSETEX") || is(name, "MSET")
}

#[cfg(test)]
mod blind_tests {
    use super::*;

    fn args(words: &str) -> Vec<Bytes> {
        words
            .split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn only_writes_that_ignore_the_old_state_are_blind() {
        for blind in [
            "SET k v",
            "set k v EX 10",
            "SET k v PXAT 5",
            "SETEX k 1 v",
            "psetex k 1 v",
            "MSET a 1 b 2",
        ] {
            assert!(blind_write(&args(blind)), "{blind}");
        }
        for reads in [
            "SET k v NX",
            "SET k v xx",
            "SET k v GET",
            "SET k v KEEPTTL",
            "GET k",
            "INCR k",
            "DEL k",
            "APPEND k v",
            "SETNX k v",
            "MSETNX a 1",
            "SET k",
        ] {
            assert!(!blind_write(&args(reads)), "{reads}");
        }
        assert!(!blind_write(&[]));
    }
}

pub fn set(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (mut nx, mut xx, mut want_old) = (false, false, false);
    let spec = tri!(parse_ttl_options(args, 3, "set", |a| {
        if is(a, "NX") && !xx {
            nx = true;
        } else if is(a, "XX") && !nx {
            xx = true;
        } else if is(a, "GET") {
            want_old = true;
        } else {
            return false;
        }
        true
    }));
    let ttl = tri!(spec.resolve(ctx.now_ms, "set"));
    let value = &args[2];
    let set = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if want_old {
            slot.count_read();
        }
        let old = match want_old.then(|| slot_string(slot)).transpose() {
            Ok(old) => old.map(|v| v.map(Bytes::copy_from_slice)),
            // SET ... GET on another type sets nothing.
            Err(reply) => return Err(reply),
        };
        let exists = slot.exists();
        if (nx && exists) || (xx && !exists) {
            return Ok((false, exists, old));
        }
        match ttl {
            Ttl::Keep => slot.set_keep_ttl(value),
            Ttl::At(at) => slot.set(value, Some(at)),
            Ttl::Default | Ttl::Persist => slot.set(value, None),
        }
        Ok((true, exists, old))
    });
    if let Ok((true, existed, _)) = set {
        // A time already past (EXAT, PXAT) stores nothing here; Redis stores the key, then
        // finds it expired right after the command: its events all the same.
        let past = matches!(ttl, Ttl::At(at) if at <= ctx.now_ms);
        if past && !existed {
            ctx.notify(crate::notify::NEW, "new", &args[1]);
        }
        ctx.notify(STRING, "set", &args[1]);
        if let Ttl::At(_) = ttl {
            ctx.notify(GENERIC, "expire", &args[1]);
        }
        if past {
            ctx.notify(crate::notify::EXPIRED, "expired", &args[1]);
        }
    }
    match set {
        Err(reply) => reply,
        Ok((_, _, Some(old))) => bulk_or_nil(old),
        Ok((true, _, None)) => Reply::ok(),
        Ok((false, _, None)) => Reply::Nil,
    }
}

pub fn setnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let done = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if slot.exists() {
            false
        } else {
            slot.set(&args[2], None);
            true
        }
    });
    if done {
        ctx.notify(STRING, "set", &args[1]);
    }
    Reply::Int(i64::from(done))
}

fn set_with_ttl(ctx: &mut Ctx<'_>, args: &[Bytes], unit: Unit, cmd: &str) -> Reply {
    let at = tri!(expire_at(&args[2], unit, false, ctx.now_ms, cmd));
    ctx.engine
        .store
        .write(&args[1], ctx.now_ms, |slot| slot.set(&args[3], Some(at)));
    ctx.notify(STRING, "set", &args[1]);
    ctx.notify(GENERIC, "expire", &args[1]);
    Reply::ok()
}

pub fn setex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    set_with_ttl(ctx, args, Unit::Seconds, "setex")
}

pub fn psetex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    set_with_ttl(ctx, args, Unit::Millis, "psetex")
}

pub fn getset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        slot.count_read();
        let old = tri!(slot_string(slot)).map(Bytes::copy_from_slice);
        slot.set(&args[2], None);
        bulk_or_nil(old)
    });
    if !matches!(reply, Reply::Error(_)) {
        ctx.notify(STRING, "set", &args[1]);
    }
    reply
}

pub fn getdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        slot.count_read();
        let old = tri!(slot_string(slot)).map(Bytes::copy_from_slice);
        slot.remove();
        bulk_or_nil(old)
    });
    if matches!(reply, Reply::Bulk(_)) {
        ctx.notify(GENERIC, "del", &args[1]);
    }
    reply
}

pub fn getex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let spec = tri!(parse_ttl_options(args, 2, "getex", |_| false));
    let now = ctx.now_ms;
    let result = ctx.engine.store.write(&args[1], now, |slot| {
        slot.count_read();
        let Some(value) = slot_string(slot)?.map(Bytes::copy_from_slice) else {
            return Ok((None, None));
        };
        let event = match spec.resolve(now, "getex")? {
            // A time already past removes the key, as DEL (Redis's `del` event).
            Ttl::At(at) if at <= now => {
                slot.set_expire(Some(at));
                Some((GENERIC, "del"))
            }
            Ttl::At(at) => {
                slot.set_expire(Some(at));
                Some((GENERIC, "expire"))
            }
            Ttl::Persist => {
                let had = slot.expire_at().is_some();
                slot.set_expire(None);
                had.then_some((GENERIC, "persist"))
            }
            Ttl::Default | Ttl::Keep => None,
        };
        Ok((Some(value), event))
    });
    match result {
        Ok((v, event)) => {
            if let Some((class, event)) = event {
                ctx.notify(class, event, &args[1]);
            }
            bulk_or_nil(v)
        }
        Err(reply) => reply,
    }
}

/// MGET charges each value to the reply budget as it reads it: a request naming a huge
/// value many times stops (and the client is closed) at the output limit.
pub fn mget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let store = &ctx.engine.store;
    let mut values = Vec::with_capacity(args.len() - 1);
    for (i, k) in args[1..].iter().enumerate() {
        // The next keys' loads start side by side, a batch at a time.
        if i % PREFETCH_MAX == 0 {
            store.prefetch(args[1 + i..].iter().map(|k| &k[..]));
        }
        // Another type reads as nil, as in Redis.
        let value = store.read(k, ctx.now_ms, Access::Read, |e| {
            entry_string(e).ok().flatten().map(Bytes::copy_from_slice)
        });
        if !ctx
            .session
            .budget
            .charge(value.as_ref().map_or(0, |v| v.len()))
        {
            return Reply::Nil;
        }
        values.push(bulk_or_nil(value));
    }
    Reply::Array(values)
}

pub fn mset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if args.len().is_multiple_of(2) {
        return super::wrong_arity("mset");
    }
    for pair in args[1..].chunks_exact(2) {
        ctx.engine
            .store
            .write(&pair[0], ctx.now_ms, |slot| slot.set(&pair[1], None));
        ctx.notify(STRING, "set", &pair[0]);
    }
    Reply::ok()
}

/// MSETNX checks every key, then sets them all. Keys live in different store shards, so a
/// concurrent writer can slip in between the check and the sets (documented in the README).
pub fn msetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if args.len().is_multiple_of(2) {
        return super::wrong_arity("msetnx");
    }
    let store = &ctx.engine.store;
    let any_exists = args[1..]
        .iter()
        .step_by(2)
        .any(|k| store.read(k, ctx.now_ms, Access::Peek, |e| e.is_some()));
    if any_exists {
        return Reply::Int(0);
    }
    for pair in args[1..].chunks_exact(2) {
        store.write(&pair[0], ctx.now_ms, |slot| slot.set(&pair[1], None));
        ctx.notify(STRING, "set", &pair[0]);
    }
    Reply::Int(1)
}

fn max_len(ctx: &Ctx<'_>) -> usize {
    ctx.engine
        .with_settings(|s| usize::try_from(s.proto_max_bulk_len.0).unwrap_or(usize::MAX))
}

pub fn append(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let limit = max_len(ctx);
    let extra = &args[2];
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        let len = tri!(slot_string(slot)).map_or(0, <[u8]>::len);
        if len + extra.len() > limit {
            return err(ERR_TOO_BIG);
        }
        Reply::Int(slot.append(extra) as i64)
    });
    notify_unless_error(ctx, &reply, STRING, "append", &args[1]);
    reply
}

/// Publishes `event` for `key` unless the command answered an error.
fn notify_unless_error(ctx: &Ctx<'_>, reply: &Reply, class: u32, event: &str, key: &[u8]) {
    if !matches!(reply, Reply::Error(_)) {
        ctx.notify(class, event, key);
    }
}

pub fn strlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    ctx.engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            match entry_string(e) {
                Ok(v) => Reply::Int(v.map_or(0, <[u8]>::len) as i64),
                Err(reply) => reply,
            }
        })
}

fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], by: i64) -> Reply {
    let reply = ctx.engine.store.write(key, ctx.now_ms, |slot| {
        let current = match tri!(slot_string(slot)) {
            None => 0,
            Some(v) => match parse_i64(v) {
                Some(n) => n,
                None => return err(ERR_NOT_INTEGER),
            },
        };
        let Some(next) = current.checked_add(by) else {
            return err("ERR increment or decrement would overflow");
        };
        let mut digits = [0u8; 20];
        slot.set_keep_ttl(shoal_resp::format_int(next, &mut digits));
        Reply::Int(next)
    });
    // INCR, DECR, INCRBY and DECRBY all publish `incrby`, as in Redis.
    notify_unless_error(ctx, &reply, STRING, "incrby", key);
    reply
}

pub fn incr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    incr_by(ctx, &args[1], 1)
}

pub fn decr(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    incr_by(ctx, &args[1], -1)
}

pub fn incrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let by = tri!(int_arg(&args[2]));
    incr_by(ctx, &args[1], by)
}

pub fn decrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let by = tri!(int_arg(&args[2]));
    let Some(neg) = by.checked_neg() else {
        return err("ERR decrement would overflow");
    };
    incr_by(ctx, &args[1], neg)
}

pub fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        // Redis's order: the key's type, its value, then the increment.
        // In long double, as Redis (`crate::longdouble`).
        let text = match crate::longdouble::incr(tri!(slot_string(slot)), &args[2]) {
            Ok(text) => text,
            Err(crate::longdouble::IncrError::NotFinite) => {
                return err("ERR increment would produce NaN or Infinity")
            }
            Err(_) => return err(ERR_NOT_FLOAT),
        };
        slot.set_keep_ttl(text.as_bytes());
        Reply::bulk(text)
    });
    notify_unless_error(ctx, &reply, STRING, "incrbyfloat", &args[1]);
    reply
}

pub fn getrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let start = tri!(int_arg(&args[2]));
    let end = tri!(int_arg(&args[3]));
    ctx.engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            let v = tri!(entry_string(e)).unwrap_or_default();
            Reply::bulk(Bytes::copy_from_slice(range(v, start, end)))
        })
}

/// GETRANGE's index rules (Redis 7): negative indexes count from the end, both ends inclusive.
fn range(v: &[u8], mut start: i64, mut end: i64) -> &[u8] {
    let len = v.len() as i64;
    if (start < 0 && end < 0 && start > end) || len == 0 {
        return &[];
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0).min(len - 1);
    if start > end {
        return &[];
    }
    &v[start as usize..=end as usize]
}

pub fn setrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let offset = tri!(int_arg(&args[2]));
    if offset < 0 {
        return err("ERR offset is out of range");
    }
    let offset = offset as u64;
    let patch = &args[3];
    let limit = max_len(ctx) as u64;
    let (reply, wrote) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        let len = match slot_string(slot) {
            Ok(v) => v.map(<[u8]>::len),
            Err(reply) => return (reply, false),
        };
        if patch.is_empty() {
            return (Reply::Int(len.unwrap_or(0) as i64), false);
        }
        if offset + patch.len() as u64 > limit {
            return (err(ERR_TOO_BIG), false);
        }
        (
            Reply::Int(slot.overwrite(offset as usize, patch) as i64),
            true,
        )
    });
    if wrote {
        ctx.notify(STRING, "setrange", &args[1]);
    }
    reply
}

/// The LCS table: at `i * (b.len() + 1) + j`, the length of the LCS of `a[..i]` and
/// `b[..j]` (the caller bounds its size first).
fn lcs_table(a: &[u8], b: &[u8]) -> Vec<u32> {
    let w = b.len() + 1;
    let mut dp = vec![0u32; (a.len() + 1) * w];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            dp[i * w + j] = if a[i - 1] == b[j - 1] {
                dp[(i - 1) * w + j - 1] + 1
            } else {
                dp[(i - 1) * w + j].max(dp[i * w + j - 1])
            };
        }
    }
    dp
}

/// One matching range of LCS IDX: (start, end) in the first string, then in the second.
type LcsMatch = ((usize, usize), (usize, usize));

/// The longest common subsequence of `a` and `b` as Redis's LCS computes it: the DP table
/// of prefix lengths, then a walk back from its corner that collects the subsequence and its
/// matching ranges (last first, as Redis emits them): `((a_start, a_end), (b_start, b_end))`.
fn lcs_walk(a: &[u8], b: &[u8], dp: &[u32]) -> (Vec<u8>, Vec<LcsMatch>) {
    let w = b.len() + 1;
    let at = |i: usize, j: usize| dp[i * w + j];
    let total = at(a.len(), b.len()) as usize;
    let mut out = vec![0u8; total];
    let mut ranges = Vec::new();
    let (mut i, mut j, mut idx) = (a.len(), b.len(), total);
    // `None`: no range open.
    let mut range: Option<(usize, usize, usize, usize)> = None;
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            out[idx - 1] = a[i - 1];
            range = Some(match range {
                None => (i - 1, i - 1, j - 1, j - 1),
                // Contiguous with the open range (a match right after a match).
                Some((a_start, a_end, b_start, b_end)) => (a_start - 1, a_end, b_start - 1, b_end),
            });
            if let Some((a_start, _, b_start, _)) = range {
                if a_start == 0 || b_start == 0 {
                    emit = true;
                }
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if at(i - 1, j) > at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = range.is_some();
        }
        if emit {
            if let Some((a_start, a_end, b_start, b_end)) = range.take() {
                ranges.push(((a_start, a_end), (b_start, b_end)));
            }
        }
    }
    (out, ranges)
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN] (Redis 7). Missing keys are
/// empty strings. The table takes 4 bytes per pair of positions and is refused past
/// `proto-max-bulk-len`, as Redis does, before it is allocated.
pub fn lcs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    // The keys' types before the options, as Redis checks them.
    let other_type =
        |k: &[u8]| super::kind_of(ctx, k).is_some_and(|t| t != shoal_store::Kind::String);
    if other_type(&args[1]) || other_type(&args[2]) {
        return err(ERR_NOT_STRINGS);
    }
    let (mut idx, mut len, mut withlen, mut minlen) = (false, false, false, 0i64);
    let mut k = 3;
    while k < args.len() {
        let more = args.len() - 1 - k;
        match &args[k] {
            o if is(o, "IDX") => idx = true,
            o if is(o, "LEN") => len = true,
            o if is(o, "WITHMATCHLEN") => withlen = true,
            o if is(o, "MINMATCHLEN") && more > 0 => {
                minlen = tri!(int_arg(&args[k + 1])).max(0);
                k += 1;
            }
            _ => return err(ERR_SYNTAX),
        }
        k += 1;
    }
    if idx && len {
        return err("ERR If you want both the length and indexes, please just use IDX.");
    }
    // The lengths first: a table too large is refused before either value is copied.
    let len_of = |k: &[u8]| {
        ctx.engine.store.read(k, ctx.now_ms, Access::Read, |e| {
            entry_string(e).map(|v| v.map_or(0, <[u8]>::len))
        })
    };
    let (Ok(a_len), Ok(b_len)) = (len_of(&args[1]), len_of(&args[2])) else {
        return err(ERR_NOT_STRINGS);
    };
    if a_len >= u32::MAX as usize - 1 || b_len >= u32::MAX as usize - 1 {
        return err("ERR String too long for LCS");
    }
    let cells = (a_len as u64 + 1) * (b_len as u64 + 1);
    if cells.saturating_mul(4) > max_len(ctx) as u64 {
        return err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let a = ctx
        .engine
        .store
        .get(&args[1], ctx.now_ms)
        .unwrap_or_default();
    let b = ctx
        .engine
        .store
        .get(&args[2], ctx.now_ms)
        .unwrap_or_default();
    // (Written in between, a value may have grown: its table is bounded again.)
    if (a.len() as u64 + 1) * (b.len() as u64 + 1) * 4 > max_len(ctx) as u64 {
        return err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let dp = lcs_table(&a, &b);
    let total = i64::from(dp[dp.len() - 1]);
    if len {
        return Reply::Int(total);
    }
    let (subsequence, ranges) = lcs_walk(&a, &b, &dp);
    if !idx {
        return Reply::bulk(Bytes::from(subsequence));
    }
    let pair = |s: usize, e: usize| Reply::Array(vec![Reply::Int(s as i64), Reply::Int(e as i64)]);
    let matches = ranges
        .into_iter()
        .filter(|((s, e), _)| minlen == 0 || (e - s + 1) as i64 >= minlen)
        .map(|((a_s, a_e), (b_s, b_e))| {
            let mut m = vec![pair(a_s, a_e), pair(b_s, b_e)];
            if withlen {
                m.push(Reply::Int((a_e - a_s + 1) as i64));
            }
            Reply::Array(m)
        })
        .collect();
    Reply::Map(vec![
        (
            Reply::bulk(Bytes::from_static(b"matches")),
            Reply::Array(matches),
        ),
        (Reply::bulk(Bytes::from_static(b"len")), Reply::Int(total)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcs_walks_back_from_the_corner_of_the_table() {
        let (a, b) = (b"ohmytext", b"mynewtext");
        let dp = lcs_table(a, b);
        assert_eq!(dp[dp.len() - 1], 6);
        let (sub, ranges) = lcs_walk(a, b, &dp);
        assert_eq!(sub, b"mytext");
        // Redis's example: the last match first.
        assert_eq!(ranges, vec![((4, 7), (5, 8)), ((2, 3), (0, 1))]);
    }

    #[test]
    fn getrange_follows_redis_index_rules() {
        let v = b"This is a string";
        assert_eq!(range(v, 0, 3), b"This");
        assert_eq!(range(v, -3, -1), b"ing");
        assert_eq!(range(v, 0, -1), v);
        assert_eq!(range(v, 10, 100), b"string");
        assert_eq!(range(v, 5, 3), b"");
        assert_eq!(range(v, -1, -5), b"");
        assert_eq!(range(b"", 0, -1), b"");
        assert_eq!(range(v, -100, 3), b"This");
    }
}
