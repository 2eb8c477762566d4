//! Set commands (Redis 7.2): SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
//! SRANDMEMBER, SMOVE, SSCAN, SINTER, SUNION, SDIFF and their STORE forms, SINTERCARD.
//!
//! Every command answers WRONGTYPE on a key of another type (in Redis's order of checks); a
//! set left empty is removed. The multi-key commands read one key at a time under its own
//! shard's lock and never copy more than their result: SINTER takes the smallest set's
//! members and filters them through the others, SDIFF the first set's. Replies that list
//! members charge the client's reply budget per item as they are built.

use std::collections::HashSet;

use bytes::Bytes;
use shoal_resp::{Protocol, Reply};
use shoal_store::{glob_match, Access, Collection, Kind, Member, Set, Slot};

use crate::notify::SET;

use super::{
    distinct, err, int_arg, random_below, scan_reply, tri, Ctx, ReplyBudget, ERR_SYNTAX,
    ERR_WRONGTYPE,
};

/// WRONGTYPE unless the key is absent or a set.
fn check_slot(slot: &Slot<'_>) -> Result<(), Reply> {
    super::check_kind::<Set>(slot)
}

/// Runs `f` on the set at `key` (`None`: absent); WRONGTYPE for another type.
fn with_set(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(Option<&Set>, &mut ReplyBudget) -> Reply,
) -> Reply {
    super::with_typed(ctx, key, |s, budget, _| f(s, budget))
}

/// A member as a bulk reply, charged to the budget; `None` once the budget is spent.
fn charged(budget: &mut ReplyBudget, m: Member<'_>) -> Option<Reply> {
    budget
        .charge(m.len())
        .then(|| Reply::Bulk(Bytes::from(m.to_bytes())))
}

/// Members as Redis answers a set: an array in RESP2, a set in RESP3.
fn set_reply(proto: Protocol, items: Vec<Reply>) -> Reply {
    match proto {
        Protocol::Resp3 => Reply::Set(items),
        _ => Reply::Array(items),
    }
}

/// Every member of `members` as a reply, or nil once the budget is spent.
fn members_reply<'a>(
    proto: Protocol,
    budget: &mut ReplyBudget,
    members: impl Iterator<Item = Member<'a>>,
) -> Reply {
    let mut out = Vec::with_capacity(members.size_hint().0);
    for m in members {
        // Pushed as built (see `lrange`).
        if !budget.charge(m.len()) {
            return Reply::Nil;
        }
        out.push(Reply::Bulk(Bytes::from(m.to_bytes())));
    }
    set_reply(proto, out)
}

pub fn sadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let hint = args.len() - 2;
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        let added = slot.edit_set(
            || Set::for_members(&args[2], hint),
            |s| {
                s.prepare(hint);
                let n = args[2..].iter().filter(|m| s.insert(m)).count();
                (n as i64, n > 0)
            },
        );
        Reply::Int(added)
    });
    if !matches!(reply, Reply::Int(0) | Reply::Error(_)) {
        ctx.notify(SET, "sadd", &args[1]);
    }
    reply
}

pub fn srem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (reply, gone) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false);
        }
        if !slot.exists() {
            return (Reply::Int(0), false);
        }
        let removed = slot.edit_set(Set::new, |s| {
            let n = args[2..].iter().filter(|m| s.remove(m)).count();
            (n as i64, n > 0)
        });
        (Reply::Int(removed), !slot.exists())
    });
    if !matches!(reply, Reply::Int(0) | Reply::Error(_)) {
        super::notify_change(ctx, SET, "srem", &args[1], gone);
    }
    reply
}

pub fn smembers(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let proto = ctx.session.proto;
    with_set(ctx, &args[1], |s, budget| match s {
        Some(s) => members_reply(proto, budget, s.iter()),
        None => set_reply(proto, Vec::new()),
    })
}

pub fn sismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_set(ctx, &args[1], |s, _| {
        Reply::Int(i64::from(s.is_some_and(|s| s.contains(&args[2]))))
    })
}

pub fn smismember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_set(ctx, &args[1], |s, _| {
        Reply::Array(
            args[2..]
                .iter()
                .map(|m| Reply::Int(i64::from(s.is_some_and(|s| s.contains(m)))))
                .collect(),
        )
    })
}

pub fn scard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_set(ctx, &args[1], |s, _| {
        Reply::Int(s.map_or(0, Set::len) as i64)
    })
}

/// SPOP key [count].
pub fn spop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let proto = ctx.session.proto;
    let count = match args.len() {
        2 => None,
        3 => match super::parse_i64(&args[2]) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return err("ERR value is out of range, must be positive"),
        },
        _ => return err(ERR_SYNTAX),
    };
    let engine = ctx.engine;
    let budget = &mut ctx.session.budget;
    // (reply, popped any, left the set empty)
    let (reply, popped, gone) = engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false, false);
        }
        let Some(len) = slot.set_value().map(Set::len).filter(|&n| n > 0) else {
            let reply = match count {
                None => Reply::Nil,
                Some(_) => set_reply(proto, Vec::new()),
            };
            return (reply, false, false);
        };
        let reply = spop_from(slot, proto, budget, len, count);
        let popped = count != Some(0);
        (reply, popped, popped && !slot.exists())
    });
    if popped {
        super::notify_change(ctx, SET, "spop", &args[1], gone);
    }
    reply
}

/// SPOP's pops from a set of `len > 0` members (`count`: its count argument).
fn spop_from(
    slot: &mut Slot<'_>,
    proto: Protocol,
    budget: &mut ReplyBudget,
    len: usize,
    count: Option<u64>,
) -> Reply {
    {
        let Some(count) = count else {
            return slot.edit_set(Set::new, |s| {
                let m = s.nth(random_below(len)).map(Member::to_bytes);
                match m {
                    Some(m) => {
                        s.remove(&m);
                        (Reply::Bulk(Bytes::from(m)), true)
                    }
                    None => (Reply::Nil, false),
                }
            });
        };
        if count == 0 {
            return set_reply(proto, Vec::new());
        }
        let picks: Vec<usize> = if count >= len as u64 {
            (0..len).collect()
        } else {
            distinct(len, count as usize)
        };
        slot.edit_set(Set::new, |s| {
            let popped: Vec<Vec<u8>> = picks
                .iter()
                .filter_map(|&i| s.nth(i).map(Member::to_bytes))
                .collect();
            let mut out = Vec::with_capacity(popped.len());
            for m in &popped {
                s.remove(m);
            }
            for m in popped {
                // Popped whatever the budget: the client is closed if the reply is too big.
                budget.charge(m.len());
                out.push(Reply::Bulk(Bytes::from(m)));
            }
            if budget.exceeded() {
                return (Reply::Nil, true);
            }
            (set_reply(proto, out), true)
        })
    }
}

/// SRANDMEMBER key [count]: distinct members for a positive count, repeats for a negative
/// one.
pub fn srandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let count = match args.len() {
        2 => None,
        3 => match tri!(int_arg(&args[2])) {
            i64::MIN => return err(super::hash::ERR_COUNT_RANGE),
            n => Some(n),
        },
        _ => return err(ERR_SYNTAX),
    };
    with_set(ctx, &args[1], |s, budget| {
        let Some(count) = count else {
            return match s.filter(|s| !s.is_empty()) {
                Some(s) => s
                    .nth(random_below(s.len()))
                    .map_or(Reply::Nil, |m| Reply::Bulk(Bytes::from(m.to_bytes()))),
                None => Reply::Nil,
            };
        };
        let Some(s) = s.filter(|s| count != 0 && !s.is_empty()) else {
            return Reply::Array(Vec::new());
        };
        let len = s.len();
        // A listpack is walked once, not once per pick.
        let listed: Option<Vec<Member<'_>>> =
            (s.encoding() == "listpack").then(|| s.iter().collect());
        let at = |i: usize| match &listed {
            Some(all) => all.get(i).copied(),
            None => s.nth(i),
        };
        let picks: Box<dyn Iterator<Item = usize>> = if count < 0 {
            Box::new((0..count.unsigned_abs()).map(|_| random_below(len)))
        } else if count as u64 >= len as u64 {
            Box::new(0..len)
        } else {
            Box::new(distinct(len, count as usize).into_iter())
        };
        let mut out = Vec::new();
        for i in picks {
            let Some(m) = at(i) else { continue };
            match charged(budget, m) {
                Some(r) => out.push(r),
                None => return Reply::Nil,
            }
        }
        Reply::Array(out)
    })
}

/// SMOVE source destination member. The two keys may live in different store shards: the
/// move is not atomic against a concurrent writer of the destination (as RENAME).
pub fn smove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (src, dst, member) = (&args[1], &args[2], &args[3]);
    let store = &ctx.engine.store;
    let now = ctx.now_ms;
    let kind_of = |k: &[u8]| store.read(k, now, Access::Peek, |e| e.map(|e| e.kind));
    let Some(src_kind) = kind_of(src) else {
        return Reply::Int(0);
    };
    if src_kind != Kind::Set || kind_of(dst).is_some_and(|k| k != Kind::Set) {
        return err(ERR_WRONGTYPE);
    }
    if src == dst {
        return with_set(ctx, src, |s, _| {
            Reply::Int(i64::from(s.is_some_and(|s| s.contains(member))))
        });
    }
    let (removed, src_gone) = store.write(src, now, |slot| {
        let removed = slot.set_value().is_some()
            && slot.edit_set(Set::new, |s| {
                let r = s.remove(member);
                (r, r)
            });
        (removed, !slot.exists())
    });
    if !removed {
        return Reply::Int(0);
    }
    // Redis's order: the source's events, then the destination's (`new`, `sadd`).
    super::notify_change(ctx, SET, "srem", src, src_gone);
    let moved = store.write(dst, now, |slot| {
        // Another writer may have made it another type since the check above.
        if check_slot(slot).is_err() {
            return None;
        }
        Some(slot.edit_set(
            || Set::for_members(member, 1),
            |s| {
                let r = s.insert(member);
                (r, r)
            },
        ))
    });
    if let Some(added) = moved {
        if added {
            ctx.notify(SET, "sadd", dst);
        }
    } else {
        // The destination became another type meanwhile: the member goes back.
        let back = store.write(src, now, |slot| {
            check_slot(slot).is_ok()
                && slot.edit_set(
                    || Set::for_members(member, 1),
                    |s| {
                        let r = s.insert(member);
                        (r, r)
                    },
                )
        });
        if back {
            ctx.notify(SET, "sadd", src);
        }
        return err(ERR_WRONGTYPE);
    }
    Reply::Int(1)
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]: an intset or a listpack answers whole
/// with cursor 0, as Redis's do; a table's cursor counts the members still to visit from
/// the end (as HSCAN's).
pub fn sscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let cursor = tri!(super::scan_cursor(&args[2]));
    match super::kind_of(ctx, &args[1]) {
        None => return scan_reply(0, Vec::new()),
        Some(Kind::Set) => {}
        Some(_) => return err(ERR_WRONGTYPE),
    }
    let (count, pattern) = tri!(super::scan_options(args));
    with_set(ctx, &args[1], |s, budget| {
        let Some(s) = s else {
            return scan_reply(0, Vec::new());
        };
        let len = s.len();
        let (picked, next): (Box<dyn Iterator<Item = Member<'_>> + '_>, usize) =
            if s.encoding() != "hashtable" {
                (Box::new(s.iter()), 0)
            } else {
                let left = match usize::try_from(cursor) {
                    Ok(0) | Err(_) => len,
                    Ok(c) => c.min(len),
                };
                let from = left.saturating_sub(count);
                (Box::new((from..left).rev().filter_map(|i| s.nth(i))), from)
            };
        let mut out = Vec::new();
        for m in picked {
            if let Some(p) = pattern {
                if !glob_match(p, &m.to_bytes(), false) {
                    continue;
                }
            }
            match charged(budget, m) {
                Some(r) => out.push(r),
                None => return Reply::Nil,
            }
        }
        scan_reply(next as u64, out)
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The result of SINTER / SUNION / SDIFF over `keys`, as members, or the reply that ends
/// the command (WRONGTYPE at the first key of another type, whichever keys are missing).
fn combine(ctx: &Ctx<'_>, keys: &[Bytes], op: Op) -> Result<Vec<Vec<u8>>, Reply> {
    let store = &ctx.engine.store;
    let now = ctx.now_ms;
    let read = |k: &[u8], f: &mut dyn FnMut(Option<&Set>)| -> Result<(), Reply> {
        store.read(k, now, Access::Read, |e| {
            let s = match e {
                None => None,
                Some(e) => Some(e.set().ok_or_else(|| err(ERR_WRONGTYPE))?),
            };
            f(s);
            Ok(())
        })
    };
    match op {
        Op::Inter => {
            // Sizes first: the smallest set is the one copied.
            let mut sizes = Vec::with_capacity(keys.len());
            for k in keys {
                let mut len = None;
                read(k, &mut |s| len = s.map(Set::len))?;
                sizes.push(len);
            }
            // A missing key is an empty set: so is the intersection.
            let Some(sizes) = sizes.into_iter().collect::<Option<Vec<usize>>>() else {
                return Ok(Vec::new());
            };
            let (first, _) = sizes
                .iter()
                .enumerate()
                .min_by_key(|&(_, n)| n)
                .expect("SINTER names a key");
            let mut members: Vec<Vec<u8>> = Vec::new();
            read(&keys[first], &mut |s| {
                members = s.map_or_else(Vec::new, |s| s.iter().map(Member::to_bytes).collect());
            })?;
            for (i, k) in keys.iter().enumerate() {
                if i == first || members.is_empty() {
                    continue;
                }
                read(k, &mut |s| {
                    members.retain(|m| s.is_some_and(|s| s.contains(m)))
                })?;
            }
            Ok(members)
        }
        Op::Union => {
            let mut seen: HashSet<Vec<u8>> = HashSet::new();
            let mut members = Vec::new();
            for k in keys {
                read(k, &mut |s| {
                    for m in s.into_iter().flat_map(Set::iter) {
                        let m = m.to_bytes();
                        if seen.insert(m.clone()) {
                            members.push(m);
                        }
                    }
                })?;
            }
            Ok(members)
        }
        Op::Diff => {
            let mut members: Vec<Vec<u8>> = Vec::new();
            read(&keys[0], &mut |s| {
                members = s.map_or_else(Vec::new, |s| s.iter().map(Member::to_bytes).collect());
            })?;
            for k in &keys[1..] {
                read(k, &mut |s| {
                    if let Some(s) = s {
                        members.retain(|m| !s.contains(m));
                    }
                })?;
            }
            Ok(members)
        }
    }
}

fn combine_reply(ctx: &mut Ctx<'_>, args: &[Bytes], op: Op) -> Reply {
    let members = tri!(combine(ctx, &args[1..], op));
    let proto = ctx.session.proto;
    let budget = &mut ctx.session.budget;
    if op == Op::Inter {
        // In the smallest set's order, as Redis replies while it walks that set.
        let mut out = Vec::with_capacity(members.len());
        for m in members {
            if !budget.charge(m.len()) {
                return Reply::Nil;
            }
            out.push(Reply::Bulk(Bytes::from(m)));
        }
        return set_reply(proto, out);
    }
    // Redis gathers a union or a difference in a new set (an intset first) and replies in
    // its order: ascending when every member is an integer.
    let mut set = Set::new();
    for m in &members {
        set.insert(m);
    }
    members_reply(proto, budget, set.iter())
}

/// The STORE forms: the result replaces the destination whatever its type (an empty result
/// removes it); the reply is its size.
fn combine_store(ctx: &mut Ctx<'_>, args: &[Bytes], op: Op) -> Reply {
    let members = tri!(combine(ctx, &args[2..], op));
    let mut set = Set::new();
    for m in &members {
        set.insert(m);
    }
    let n = set.len() as i64;
    let existed = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        let existed = slot.exists();
        slot.set_coll(Collection::Set(set));
        slot.set_expire(None);
        existed
    });
    let event = match op {
        Op::Inter => "sinterstore",
        Op::Union => "sunionstore",
        Op::Diff => "sdiffstore",
    };
    super::notify_stored(ctx, SET, event, &args[1], n > 0, existed);
    Reply::Int(n)
}

pub fn sinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    combine_reply(ctx, args, Op::Inter)
}

pub fn sunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    combine_reply(ctx, args, Op::Union)
}

pub fn sdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    combine_reply(ctx, args, Op::Diff)
}

pub fn sinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    combine_store(ctx, args, Op::Inter)
}

pub fn sunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    combine_store(ctx, args, Op::Union)
}

pub fn sdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    combine_store(ctx, args, Op::Diff)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit].
pub fn sintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let n = match super::parse_i64(&args[1]) {
        Some(n) if n > 0 => n as u64,
        _ => return err("ERR numkeys should be greater than 0"),
    };
    if n > (args.len() - 2) as u64 {
        return err("ERR Number of keys can't be greater than number of args");
    }
    let keys = &args[2..2 + n as usize];
    let mut limit = 0;
    let mut i = 2 + keys.len();
    while i < args.len() {
        if super::is(&args[i], "LIMIT") && i + 1 < args.len() {
            limit = match super::parse_i64(&args[i + 1]) {
                Some(l) if l >= 0 => l as u64,
                _ => return err("ERR LIMIT can't be negative"),
            };
            i += 2;
        } else {
            return err(ERR_SYNTAX);
        }
    }
    let n = tri!(combine(ctx, keys, Op::Inter)).len() as u64;
    Reply::Int(if limit > 0 { n.min(limit) } else { n } as i64)
}
