//! Hash commands (Redis 7.2): HSET, HSETNX, HMSET, HGET, HMGET, HGETALL, HKEYS, HVALS, HDEL,
//! HEXISTS, HLEN, HSTRLEN, HINCRBY, HINCRBYFLOAT, HRANDFIELD, HSCAN.
//!
//! Every command answers WRONGTYPE on a key of another type; a write that leaves a hash
//! empty removes the key (`Slot::edit_hash`). Replies that list fields charge each item to
//! the client's reply budget as they are built, so a huge hash stops at the output limit
//! instead of growing an unbounded reply.

use bytes::Bytes;
use shoal_resp::{Protocol, Reply};
use shoal_store::{glob_match, Hash, Kind, Slot};

use super::{
    distinct, err, int_arg, is, parse_i64, random_below, scan_reply, tri, wrong_arity, Ctx,
    ReplyBudget, ERR_NOT_FLOAT, ERR_SYNTAX, ERR_WRONGTYPE,
};
use crate::notify::HASH;

/// WRONGTYPE unless the key is absent or a hash.
fn check_slot(slot: &Slot<'_>) -> Result<(), Reply> {
    super::check_kind::<Hash>(slot)
}

/// Runs `f` on the hash at `key` (`None`: absent); WRONGTYPE for another type.
fn with_hash(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(Option<&Hash>, &mut ReplyBudget) -> Reply,
) -> Reply {
    super::with_typed(ctx, key, |h, budget, _| f(h, budget))
}

/// A bulk item charged to the budget; `None` once the budget is spent (the caller answers
/// nil and the connection is closed at the output limit).
fn charged(budget: &mut ReplyBudget, b: &[u8]) -> Option<Reply> {
    budget
        .charge(b.len())
        .then(|| Reply::Bulk(Bytes::copy_from_slice(b)))
}

/// Field-value pairs as Redis answers them: a flat array in RESP2, a map in RESP3.
fn pairs_reply(proto: Protocol, pairs: Vec<(Reply, Reply)>) -> Reply {
    match proto {
        Protocol::Resp3 => Reply::Map(pairs),
        _ => Reply::Array(pairs.into_iter().flat_map(|(f, v)| [f, v]).collect()),
    }
}

/// HSET and HMSET: field-value pairs after the key; the number of new fields.
fn set_pairs(ctx: &mut Ctx<'_>, args: &[Bytes], name: &str) -> Result<i64, Reply> {
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return Err(wrong_arity(name));
    }
    ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        check_slot(slot)?;
        Ok(slot.edit_hash(|h| {
            let longest = args[2..].iter().map(|a| a.len()).max().unwrap_or(0);
            h.prepare(args.len() / 2 - 1, longest);
            let added = args[2..]
                .chunks_exact(2)
                .filter(|p| h.insert(&p[0], &p[1]))
                .count();
            (added as i64, true)
        }))
    })
}

pub fn hset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let added = tri!(set_pairs(ctx, args, "hset"));
    ctx.notify(HASH, "hset", &args[1]);
    Reply::Int(added)
}

pub fn hmset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    tri!(set_pairs(ctx, args, "hmset"));
    ctx.notify(HASH, "hset", &args[1]);
    Reply::ok()
}

pub fn hsetnx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        let set = slot.edit_hash(|h| {
            let fresh = h.get(&args[2]).is_none();
            if fresh {
                h.insert(&args[2], &args[3]);
            }
            (fresh, fresh)
        });
        Reply::Int(i64::from(set))
    });
    if let Reply::Int(1) = reply {
        ctx.notify(HASH, "hset", &args[1]);
    }
    reply
}

pub fn hget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_hash(ctx, &args[1], |h, _| {
        h.and_then(|h| h.get(&args[2]))
            .map_or(Reply::Nil, |v| Reply::Bulk(Bytes::copy_from_slice(v)))
    })
}

pub fn hmget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_hash(ctx, &args[1], |h, budget| {
        let mut out = Vec::with_capacity(args.len() - 2);
        for f in &args[2..] {
            match h.and_then(|h| h.get(f)) {
                Some(v) => match charged(budget, v) {
                    Some(r) => out.push(r),
                    None => return Reply::Nil,
                },
                None => out.push(Reply::Nil),
            }
        }
        Reply::Array(out)
    })
}

pub fn hgetall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let proto = ctx.session.proto;
    with_hash(ctx, &args[1], |h, budget| {
        let Some(h) = h else {
            return pairs_reply(proto, Vec::new());
        };
        let mut pairs = Vec::with_capacity(h.len());
        for (f, v) in h.iter() {
            // Pushed as built (see `lrange`).
            if !budget.charge(f.len()) || !budget.charge(v.len()) {
                return Reply::Nil;
            }
            pairs.push((
                Reply::Bulk(Bytes::copy_from_slice(f)),
                Reply::Bulk(Bytes::copy_from_slice(v)),
            ));
        }
        pairs_reply(proto, pairs)
    })
}

fn keys_or_values(ctx: &mut Ctx<'_>, key: &[u8], values: bool) -> Reply {
    with_hash(ctx, key, |h, budget| {
        let Some(h) = h else {
            return Reply::Array(Vec::new());
        };
        let mut out = Vec::with_capacity(h.len());
        for (f, v) in h.iter() {
            let item = if values { v } else { f };
            // Pushed as built (see `lrange`).
            if !budget.charge(item.len()) {
                return Reply::Nil;
            }
            out.push(Reply::Bulk(Bytes::copy_from_slice(item)));
        }
        Reply::Array(out)
    })
}

pub fn hkeys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    keys_or_values(ctx, &args[1], false)
}

pub fn hvals(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    keys_or_values(ctx, &args[1], true)
}

pub fn hdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (reply, gone) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false);
        }
        if !slot.exists() {
            return (Reply::Int(0), false);
        }
        let removed = slot.edit_hash(|h| {
            let n = args[2..].iter().filter(|f| h.remove(f)).count();
            (n as i64, n > 0)
        });
        (Reply::Int(removed), !slot.exists())
    });
    if !matches!(reply, Reply::Int(0) | Reply::Error(_)) {
        super::notify_change(ctx, HASH, "hdel", &args[1], gone);
    }
    reply
}

pub fn hexists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_hash(ctx, &args[1], |h, _| {
        Reply::Int(i64::from(h.is_some_and(|h| h.get(&args[2]).is_some())))
    })
}

pub fn hlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_hash(ctx, &args[1], |h, _| {
        Reply::Int(h.map_or(0, Hash::len) as i64)
    })
}

pub fn hstrlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_hash(ctx, &args[1], |h, _| {
        Reply::Int(h.and_then(|h| h.get(&args[2])).map_or(0, <[u8]>::len) as i64)
    })
}

pub fn hincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let by = tri!(int_arg(&args[3]));
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        slot.edit_hash(|h| {
            let current = match h.get(&args[2]) {
                None => 0,
                Some(v) => match parse_i64(v) {
                    Some(n) => n,
                    None => return (err("ERR hash value is not an integer"), false),
                },
            };
            let Some(next) = current.checked_add(by) else {
                return (err("ERR increment or decrement would overflow"), false);
            };
            let mut digits = [0u8; 20];
            h.insert(&args[2], shoal_resp::format_int(next, &mut digits));
            (Reply::Int(next), true)
        })
    });
    if !matches!(reply, Reply::Error(_)) {
        ctx.notify(HASH, "hincrby", &args[1]);
    }
    reply
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    // In long double, as Redis (`crate::longdouble`): the increment first.
    match crate::longdouble::check(&args[3]) {
        Ok(()) => {}
        Err(crate::longdouble::IncrError::IncrementNotFinite) => {
            return err("ERR value is NaN or Infinity")
        }
        Err(_) => return err(ERR_NOT_FLOAT),
    }
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        slot.edit_hash(|h| {
            let text = match crate::longdouble::incr(h.get(&args[2]), &args[3]) {
                Ok(text) => text,
                Err(crate::longdouble::IncrError::Current) => {
                    return (err("ERR hash value is not a float"), false)
                }
                Err(_) => return (err("ERR increment would produce NaN or Infinity"), false),
            };
            h.insert(&args[2], text.as_bytes());
            (Reply::bulk(text), true)
        })
    });
    if !matches!(reply, Reply::Error(_)) {
        ctx.notify(HASH, "hincrbyfloat", &args[1]);
    }
    reply
}

/// Redis's text for a count of `i64::MIN` (HRANDFIELD, SRANDMEMBER).
pub(super) const ERR_COUNT_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

/// HRANDFIELD key [count [WITHVALUES]].
pub fn hrandfield(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let proto = ctx.session.proto;
    if args.len() == 2 {
        return with_hash(ctx, &args[1], |h, _| match h.filter(|h| !h.is_empty()) {
            Some(h) => h
                .nth(random_below(h.len()))
                .map_or(Reply::Nil, |(f, _)| Reply::Bulk(Bytes::copy_from_slice(f))),
            None => Reply::Nil,
        });
    }
    let count = tri!(int_arg(&args[2]));
    let with_values = match args.get(3) {
        None => false,
        Some(a) if args.len() == 4 && is(a, "WITHVALUES") => true,
        Some(_) => return err(ERR_SYNTAX),
    };
    if count == i64::MIN {
        return err(ERR_COUNT_RANGE);
    }
    // Only with values, as Redis: the reply holds twice as many items.
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return err("ERR value is out of range");
    }
    with_hash(ctx, &args[1], |h, budget| {
        let Some(h) = h.filter(|h| count != 0 && !h.is_empty()) else {
            return Reply::Array(Vec::new());
        };
        let len = h.len();
        // Which entries, by index: with repeats for a negative count, else distinct ones
        // (all of them when the count reaches the size).
        let picks: Box<dyn Iterator<Item = usize>> = if count < 0 {
            let n = count.unsigned_abs();
            Box::new((0..n).map(|_| random_below(len)))
        } else if count as u64 >= len as u64 {
            Box::new(0..len)
        } else {
            Box::new(distinct(len, count as usize).into_iter())
        };
        // A listpack is walked once, not once per pick.
        let packed: Option<Vec<(&[u8], &[u8])>> =
            (h.encoding() == "listpack").then(|| h.iter().collect());
        let mut out = Vec::new();
        for i in picks {
            let pair = match &packed {
                Some(all) => all.get(i).copied(),
                None => h.nth(i),
            };
            let Some((f, v)) = pair else { continue };
            let Some(field) = charged(budget, f) else {
                return Reply::Nil;
            };
            if !with_values {
                out.push(field);
                continue;
            }
            let Some(value) = charged(budget, v) else {
                return Reply::Nil;
            };
            match proto {
                Protocol::Resp3 => out.push(Reply::Array(vec![field, value])),
                _ => out.extend([field, value]),
            }
        }
        Reply::Array(out)
    })
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]. A listpack hash answers whole with
/// cursor 0, as Redis's does; a table's cursor counts the entries still to visit from the
/// end, so a field present throughout the scan is returned (removals move the last entry,
/// already visited, into the hole).
pub fn hscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let cursor = tri!(super::scan_cursor(&args[2]));
    match super::kind_of(ctx, &args[1]) {
        None => return scan_reply(0, Vec::new()),
        Some(Kind::Hash) => {}
        Some(_) => return err(ERR_WRONGTYPE),
    }
    let (count, pattern) = tri!(super::scan_options(args));
    with_hash(ctx, &args[1], |h, budget| {
        let Some(h) = h else {
            return scan_reply(0, Vec::new());
        };
        let len = h.len();
        let (picked, next): (Pairs<'_>, usize) = if h.encoding() == "listpack" {
            (Box::new(h.iter()), 0)
        } else {
            let left = match usize::try_from(cursor) {
                Ok(0) => len,
                Ok(c) => c.min(len),
                Err(_) => len,
            };
            let from = left.saturating_sub(count);
            (Box::new((from..left).rev().filter_map(|i| h.nth(i))), from)
        };
        let mut out = Vec::new();
        for (f, v) in picked {
            if pattern.is_some_and(|p| !glob_match(p, f, false)) {
                continue;
            }
            match (charged(budget, f), charged(budget, v)) {
                (Some(f), Some(v)) => out.extend([f, v]),
                _ => return Reply::Nil,
            }
        }
        scan_reply(next as u64, out)
    })
}

/// Fields and values, from whichever walk a reply takes.
type Pairs<'a> = Box<dyn Iterator<Item = (&'a [u8], &'a [u8])> + 'a>;
