//! Sorted set commands (Redis 7.2): ZADD (NX XX GT LT CH INCR), ZINCRBY, ZSCORE, ZMSCORE,
//! ZCARD, ZCOUNT, ZLEXCOUNT, ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES), ZRANGEBYSCORE,
//! ZREVRANGEBYSCORE, ZREVRANGE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZRANK and ZREVRANK
//! (WITHSCORE), ZREM, ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX, ZPOPMIN, ZPOPMAX,
//! ZMPOP, ZRANDMEMBER, ZSCAN, the blocking BZPOPMIN, BZPOPMAX and BZMPOP (see
//! `crate::blocking`); the set algebra, ZUNION and its kin, is in `zcombine`.
//!
//! Every command answers WRONGTYPE on a key of another type; a sorted set left empty is
//! removed. Scores are replied as Redis 7.2 writes doubles (bulk strings in RESP2, doubles in
//! RESP3); replies that list members charge the client's reply budget per item.

use bytes::Bytes;
use shoal_resp::{Protocol, Reply};
use shoal_store::{glob_match, Kind, Slot, ZSet};

use crate::notify::ZSET;

use super::{
    distinct, err, int_arg, is, parse_f64, random_below, scan_reply, tri, Ctx, ReplyBudget,
    ERR_SYNTAX, ERR_WRONGTYPE,
};

const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
const ERR_RANGE_FLOAT: &str = "ERR min or max is not a float";
const ERR_RANGE_LEX: &str = "ERR min or max not valid string range item";
const ERR_NAN: &str = "ERR resulting score is not a number (NaN)";

/// WRONGTYPE unless the key is absent or a sorted set.
fn check_slot(slot: &Slot<'_>) -> Result<(), Reply> {
    super::check_kind::<ZSet>(slot)
}

/// Runs `f` on the sorted set at `key` (`None`: absent); WRONGTYPE for another type.
pub(super) fn with_zset(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(Option<&ZSet>, &mut ReplyBudget, Protocol) -> Reply,
) -> Reply {
    super::with_typed(ctx, key, f)
}

/// A score as a reply: a double (RESP3 writes it as such, RESP2 as a bulk string).
fn score_reply(s: f64) -> Reply {
    Reply::Double(s)
}

/// A score argument (ZADD, ZINCRBY): Redis's `string2d` (no NaN, nothing out of range).
fn score_arg(arg: &[u8]) -> Option<f64> {
    super::parse_double(arg)
}

/// Members (with their scores when asked) as a reply: RESP3 pairs for WITHSCORES.
pub(super) fn members_reply<'a>(
    items: impl Iterator<Item = (&'a [u8], f64)>,
    with_scores: bool,
    budget: &mut ReplyBudget,
    proto: Protocol,
) -> Reply {
    let mut out = Vec::new();
    for (m, s) in items {
        if !budget.charge(m.len() + if with_scores { 24 } else { 0 }) {
            return Reply::Nil;
        }
        let member = Reply::Bulk(Bytes::copy_from_slice(m));
        match (with_scores, proto) {
            (false, _) => out.push(member),
            (true, Protocol::Resp3) => out.push(Reply::Array(vec![member, score_reply(s)])),
            (true, _) => out.extend([member, score_reply(s)]),
        }
    }
    Reply::Array(out)
}

/// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...].
pub fn zadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if is(a, "NX") {
            nx = true;
        } else if is(a, "XX") {
            xx = true;
        } else if is(a, "GT") {
            gt = true;
        } else if is(a, "LT") {
            lt = true;
        } else if is(a, "CH") {
            ch = true;
        } else if is(a, "INCR") {
            incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &args[i..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return err(ERR_SYNTAX);
    }
    if nx && xx {
        return err("ERR XX and NX options at the same time are not compatible");
    }
    if ((gt || lt) && nx) || (gt && lt) {
        return err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && pairs.len() > 2 {
        return err("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks_exact(2) {
        match score_arg(&p[0]) {
            Some(s) => scores.push(s),
            None => return err(ERR_NOT_FLOAT),
        }
    }
    let n = pairs.len() / 2;
    let longest = pairs.chunks_exact(2).map(|p| p[1].len()).max().unwrap_or(0);
    let (reply, changed) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false);
        }
        if xx && !slot.exists() {
            // Nothing to update: no key is created.
            return (if incr { Reply::Nil } else { Reply::Int(0) }, false);
        }
        slot.edit_zset(
            || ZSet::for_members(n, longest),
            |z| {
                z.prepare(n, longest);
                let (mut added, mut updated) = (0i64, 0i64);
                let mut result = None;
                for (p, &score) in pairs.chunks_exact(2).zip(&scores) {
                    let member = &p[1];
                    let current = z.score(member);
                    let mut new = score;
                    match current {
                        Some(_) if nx => continue,
                        None if xx => continue,
                        Some(cur) => {
                            if incr {
                                new = cur + score;
                                if new.is_nan() {
                                    let changed = added + updated > 0;
                                    return ((err(ERR_NAN), changed), changed);
                                }
                            }
                            if (gt && new <= cur) || (lt && new >= cur) {
                                continue;
                            }
                            result = Some(new);
                            if new != cur {
                                z.insert(member, new);
                                updated += 1;
                            }
                        }
                        None => {
                            z.insert(member, new);
                            added += 1;
                            result = Some(new);
                        }
                    }
                }
                let changed = added + updated > 0;
                let reply = if incr {
                    result.map_or(Reply::Nil, score_reply)
                } else {
                    Reply::Int(if ch { added + updated } else { added })
                };
                ((reply, changed), changed)
            },
        )
    });
    if changed {
        ctx.notify(ZSET, if incr { "zincr" } else { "zadd" }, &args[1]);
    }
    reply
}

pub fn zincrby(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    // Redis reads ZINCRBY through ZADD's option parser: a flag there leaves one argument.
    if ["NX", "XX", "GT", "LT", "CH", "INCR"]
        .iter()
        .any(|f| is(&args[2], f))
    {
        return err(ERR_SYNTAX);
    }
    let Some(by) = score_arg(&args[2]) else {
        return err(ERR_NOT_FLOAT);
    };
    let (reply, changed) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false);
        }
        let member = &args[3];
        slot.edit_zset(
            || ZSet::for_members(1, member.len()),
            |z| {
                let old = z.score(member);
                let new = old.unwrap_or(0.0) + by;
                if new.is_nan() {
                    return ((err(ERR_NAN), false), false);
                }
                // Unchanged scores are no change (WATCH), as in Redis.
                let changed = old != Some(new);
                if changed {
                    z.insert(member, new);
                }
                ((score_reply(new), changed), changed)
            },
        )
    });
    if changed {
        ctx.notify(ZSET, "zincr", &args[1]);
    }
    reply
}

pub fn zscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_zset(ctx, &args[1], |z, _, _| {
        z.and_then(|z| z.score(&args[2]))
            .map_or(Reply::Nil, score_reply)
    })
}

pub fn zmscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_zset(ctx, &args[1], |z, _, _| {
        Reply::Array(
            args[2..]
                .iter()
                .map(|m| z.and_then(|z| z.score(m)).map_or(Reply::Nil, score_reply))
                .collect(),
        )
    })
}

pub fn zcard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_zset(ctx, &args[1], |z, _, _| {
        Reply::Int(z.map_or(0, ZSet::len) as i64)
    })
}

/// A score bound: `(` makes it exclusive; `-inf`, `+inf` and `inf` as strtod reads them.
#[derive(Clone, Copy, Debug)]
struct Bound {
    value: f64,
    exclusive: bool,
}

fn score_bound(arg: &[u8]) -> Option<Bound> {
    let (exclusive, text) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    // strtod, as Redis reads a bound: nothing at all is 0, leading blanks are skipped, but
    // blanks alone are no number.
    let value = if text.is_empty() {
        0.0
    } else {
        parse_f64(text.trim_ascii_start()).filter(|v| !v.is_nan())?
    };
    Some(Bound { value, exclusive })
}

impl Bound {
    fn above_min(self, s: f64) -> bool {
        if self.exclusive {
            s > self.value
        } else {
            s >= self.value
        }
    }

    fn below_max(self, s: f64) -> bool {
        if self.exclusive {
            s < self.value
        } else {
            s <= self.value
        }
    }
}

/// A lex bound: `[x` inclusive, `(x` exclusive, `-` and `+` the ends.
#[derive(Clone, Debug)]
enum Lex {
    Min,
    Max,
    Incl(Bytes),
    Excl(Bytes),
}

fn lex_bound(arg: &Bytes) -> Option<Lex> {
    match arg.first() {
        Some(b'-') if arg.len() == 1 => Some(Lex::Min),
        Some(b'+') if arg.len() == 1 => Some(Lex::Max),
        Some(b'[') => Some(Lex::Incl(arg.slice(1..))),
        Some(b'(') => Some(Lex::Excl(arg.slice(1..))),
        _ => None,
    }
}

impl Lex {
    /// Where the bound sits among strings: `-` below all, `+` above all.
    fn rank(&self) -> (u8, &[u8]) {
        match self {
            Lex::Min => (0, &[]),
            Lex::Incl(b) | Lex::Excl(b) => (1, b),
            Lex::Max => (2, &[]),
        }
    }

    /// Redis's test for lex ranges that are always empty (`zslParseLexRange`'s callers):
    /// the minimum above the maximum, or equal to it with either end exclusive.
    fn empty_range(min: &Lex, max: &Lex) -> bool {
        match min.rank().cmp(&max.rank()) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => matches!(min, Lex::Excl(_)) || matches!(max, Lex::Excl(_)),
            std::cmp::Ordering::Less => false,
        }
    }

    fn above_min(&self, m: &[u8]) -> bool {
        match self {
            Lex::Min => true,
            Lex::Max => false,
            Lex::Incl(b) => m >= &b[..],
            Lex::Excl(b) => m > &b[..],
        }
    }

    fn below_max(&self, m: &[u8]) -> bool {
        match self {
            Lex::Min => false,
            Lex::Max => true,
            Lex::Incl(b) => m <= &b[..],
            Lex::Excl(b) => m < &b[..],
        }
    }
}

/// The members a score range covers, ascending (or descending with `rev`).
fn by_score<'a>(
    z: &'a ZSet,
    min: Bound,
    max: Bound,
    rev: bool,
) -> Box<dyn Iterator<Item = (&'a [u8], f64)> + 'a> {
    if rev {
        Box::new(
            z.to_score_rev(max.value)
                .skip_while(move |(_, s)| !max.below_max(*s))
                .take_while(move |(_, s)| min.above_min(*s)),
        )
    } else {
        Box::new(
            z.from_score(min.value)
                .skip_while(move |(_, s)| !min.above_min(*s))
                .take_while(move |(_, s)| max.below_max(*s)),
        )
    }
}

/// Redis's `zzlIsInLexRange` / `zslIsInLexRange`: a lex range can cover members only if it
/// is not empty by its bounds, the last member is at least the minimum and the first at
/// most the maximum (which matters for mixed scores).
fn lex_in_range(z: &ZSet, min: &Lex, max: &Lex) -> bool {
    let (Some(first), Some(last)) = (z.iter().next(), z.iter().next_back()) else {
        return false;
    };
    !Lex::empty_range(min, max) && min.above_min(last.0) && max.below_max(first.0)
}

/// The members a lex range covers. Redis assumes one score for all: in a listpack it walks
/// from the end it starts at, in a skiplist it finds the range's start by a descent; so
/// does this (a walk, or a binary search of the order), so that a set of mixed scores
/// answers as Redis's does at least while it is small.
fn by_lex<'a>(
    z: &'a ZSet,
    min: Lex,
    max: Lex,
    rev: bool,
) -> Box<dyn Iterator<Item = (&'a [u8], f64)> + 'a> {
    if !lex_in_range(z, &min, &max) {
        return Box::new(std::iter::empty());
    }
    if z.encoding() == "listpack" {
        return if rev {
            Box::new(
                z.iter()
                    .rev()
                    .skip_while(move |(m, _)| !max.below_max(m))
                    .take_while(move |(m, _)| min.above_min(m)),
            )
        } else {
            Box::new(
                z.iter()
                    .skip_while(move |(m, _)| !min.above_min(m))
                    .take_while(move |(m, _)| max.below_max(m)),
            )
        };
    }
    if rev {
        let it = match z.below_member(|m| max.below_max(m)) {
            0 => Box::new(std::iter::empty()),
            n => z.down_from_rank(n - 1),
        };
        Box::new(it.take_while(move |(m, _)| min.above_min(m)))
    } else {
        let it = z.from_rank(z.below_member(|m| !min.above_min(m)));
        Box::new(it.take_while(move |(m, _)| max.below_max(m)))
    }
}

pub fn zcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (Some(min), Some(max)) = (score_bound(&args[2]), score_bound(&args[3])) else {
        return err(ERR_RANGE_FLOAT);
    };
    with_zset(ctx, &args[1], |z, _, _| {
        // Two positions, as Redis's spans give them: O(log n), not a walk of the range.
        Reply::Int(z.map_or(0, |z| {
            z.below_score(max.value, !max.exclusive)
                .saturating_sub(z.below_score(min.value, min.exclusive))
        }) as i64)
    })
}

pub fn zlexcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (Some(min), Some(max)) = (lex_bound(&args[2]), lex_bound(&args[3])) else {
        return err(ERR_RANGE_LEX);
    };
    with_zset(ctx, &args[1], |z, _, _| {
        Reply::Int(z.map_or(0, |z| {
            if z.encoding() == "listpack" {
                return by_lex(z, min.clone(), max.clone(), false).count();
            }
            if !lex_in_range(z, &min, &max) {
                return 0;
            }
            z.below_member(|m| max.below_max(m))
                .saturating_sub(z.below_member(|m| !min.above_min(m)))
        }) as i64)
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// What a ZRANGE-family request asks for.
struct RangeReq {
    by: By,
    rev: bool,
    limit: Option<(i64, i64)>,
    with_scores: bool,
}

/// The ZRANGE family: `min` and `max` as the client gave them (REV swaps their meaning as in
/// Redis: ZRANGE ... REV takes max first).
fn range_generic(ctx: &mut Ctx<'_>, key: &Bytes, a: &Bytes, b: &Bytes, req: RangeReq) -> Reply {
    range_into(ctx, key, a, b, req, None)
}

/// [`range_generic`], or with `store` ZRANGESTORE's: the members (and scores) go into the
/// sorted set `store` names, replacing whatever it held (an empty result removes it), and
/// the reply is their number.
fn range_into(
    ctx: &mut Ctx<'_>,
    key: &Bytes,
    a: &Bytes,
    b: &Bytes,
    req: RangeReq,
    store: Option<&Bytes>,
) -> Reply {
    if req.limit.is_some_and(|l| l != (0, -1)) && req.by == By::Rank {
        return err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if req.with_scores && req.by == By::Lex {
        return err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    // In REV order the first bound given is the maximum.
    let (lo, hi) = if req.rev && req.by != By::Rank {
        (b, a)
    } else {
        (a, b)
    };
    enum Parsed {
        Rank(i64, i64),
        Score(Bound, Bound),
        Lex(Lex, Lex),
    }
    let parsed = match req.by {
        By::Rank => Parsed::Rank(tri!(int_arg(lo)), tri!(int_arg(hi))),
        By::Score => match (score_bound(lo), score_bound(hi)) {
            (Some(x), Some(y)) => Parsed::Score(x, y),
            _ => return err(ERR_RANGE_FLOAT),
        },
        By::Lex => match (lex_bound(lo), lex_bound(hi)) {
            (Some(x), Some(y)) => Parsed::Lex(x, y),
            _ => return err(ERR_RANGE_LEX),
        },
    };
    let (offset, count) = req.limit.unwrap_or((0, -1));
    let mut stored: Option<Vec<(Vec<u8>, f64)>> = None;
    let reply = with_zset(ctx, key, |z, budget, proto| {
        let Some(z) = z else {
            if store.is_some() {
                stored = Some(Vec::new());
            }
            return Reply::Array(Vec::new());
        };
        let items: Box<dyn Iterator<Item = (&[u8], f64)>> = match parsed {
            Parsed::Rank(start, end) => match super::list::range(z.len(), start, end) {
                None => {
                    if store.is_some() {
                        stored = Some(Vec::new());
                    }
                    return Reply::Array(Vec::new());
                }
                Some((s, e)) => {
                    let it = if req.rev {
                        z.down_from_rank(z.len() - 1 - s)
                    } else {
                        z.from_rank(s)
                    };
                    Box::new(it.take(e + 1 - s))
                }
            },
            Parsed::Score(min, max) => by_score(z, min, max, req.rev),
            Parsed::Lex(min, max) => by_lex(z, min, max, req.rev),
        };
        if offset < 0 {
            if store.is_some() {
                stored = Some(Vec::new());
            }
            return Reply::Array(Vec::new());
        }
        let take = if count < 0 {
            usize::MAX
        } else {
            count as usize
        };
        let items = items
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .take(take);
        if store.is_some() {
            // A copy bounded by the source, as SINTERSTORE's; no reply budget is spent.
            stored = Some(items.map(|(m, s)| (m.to_vec(), s)).collect());
            return Reply::Nil;
        }
        members_reply(items, req.with_scores, budget, proto)
    });
    let (Some(dst), Some(items)) = (store, stored) else {
        return reply;
    };
    let longest = items.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let mut z = ZSet::for_members(items.len(), longest);
    for (m, s) in &items {
        z.insert(m, *s);
    }
    let n = z.len() as i64;
    let existed = ctx.engine.store.write(dst, ctx.now_ms, |slot| {
        let existed = slot.exists();
        slot.set_coll(shoal_store::Collection::ZSet(z));
        slot.set_expire(None);
        existed
    });
    super::notify_stored(ctx, ZSET, "zrangestore", dst, n > 0, existed);
    Reply::Int(n)
}

/// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count].
pub fn zrangestore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let req = tri!(range_options(args, 5, true));
    if req.with_scores {
        return err(ERR_SYNTAX);
    }
    range_into(ctx, &args[2], &args[3], &args[4], req, Some(&args[1]))
}

/// The options after ZRANGE's bounds (or the older commands'); `allow` says which.
fn range_options(args: &[Bytes], from: usize, by_allowed: bool) -> Result<RangeReq, Reply> {
    let mut req = RangeReq {
        by: By::Rank,
        rev: false,
        limit: None,
        with_scores: false,
    };
    let mut i = from;
    while i < args.len() {
        let a = &args[i];
        if is(a, "WITHSCORES") {
            req.with_scores = true;
        } else if is(a, "LIMIT") && i + 2 < args.len() {
            req.limit = Some((int_arg(&args[i + 1])?, int_arg(&args[i + 2])?));
            i += 2;
        } else if by_allowed && is(a, "BYSCORE") {
            req.by = By::Score;
        } else if by_allowed && is(a, "BYLEX") {
            req.by = By::Lex;
        } else if by_allowed && is(a, "REV") {
            req.rev = true;
        } else {
            return Err(err(ERR_SYNTAX));
        }
        i += 1;
    }
    Ok(req)
}

pub fn zrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let req = tri!(range_options(args, 4, true));
    range_generic(ctx, &args[1], &args[2], &args[3], req)
}

fn legacy(ctx: &mut Ctx<'_>, args: &[Bytes], by: By, rev: bool, with: bool) -> Reply {
    let mut req = tri!(range_options(args, 4, false));
    if !with && req.with_scores && by != By::Lex {
        return err(ERR_SYNTAX);
    }
    req.by = by;
    req.rev = rev;
    range_generic(ctx, &args[1], &args[2], &args[3], req)
}

pub fn zrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    legacy(ctx, args, By::Score, false, true)
}

pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    legacy(ctx, args, By::Score, true, true)
}

pub fn zrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    legacy(ctx, args, By::Lex, false, false)
}

pub fn zrevrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    legacy(ctx, args, By::Lex, true, false)
}

pub fn zrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    // Options as ZRANGE reads them (LIMIT then answers its error).
    let mut req = tri!(range_options(args, 4, false));
    req.by = By::Rank;
    req.rev = true;
    range_generic(ctx, &args[1], &args[2], &args[3], req)
}

fn rank_generic(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> Reply {
    if args.len() > 4 {
        return super::wrong_arity(if rev { "zrevrank" } else { "zrank" });
    }
    let with = match args.get(3) {
        None => false,
        Some(a) if is(a, "WITHSCORE") => true,
        Some(_) => return err(ERR_SYNTAX),
    };
    with_zset(ctx, &args[1], |z, _, proto| {
        let Some(z) = z else {
            return if with { Reply::NilArray } else { Reply::Nil };
        };
        let Some(rank) = z.rank(&args[2]) else {
            return if with { Reply::NilArray } else { Reply::Nil };
        };
        let rank = if rev { z.len() - 1 - rank } else { rank };
        if with {
            let s = z.score(&args[2]).unwrap_or(0.0);
            let _ = proto;
            Reply::Array(vec![Reply::Int(rank as i64), score_reply(s)])
        } else {
            Reply::Int(rank as i64)
        }
    })
}

pub fn zrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    rank_generic(ctx, args, false)
}

pub fn zrevrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    rank_generic(ctx, args, true)
}

pub fn zrem(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (reply, gone) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false);
        }
        if !slot.exists() {
            return (Reply::Int(0), false);
        }
        let n = slot.edit_zset(ZSet::new, |z| {
            let n = args[2..].iter().filter(|m| z.remove(m)).count();
            (n as i64, n > 0)
        });
        (Reply::Int(n), !slot.exists())
    });
    if !matches!(reply, Reply::Int(0) | Reply::Error(_)) {
        super::notify_change(ctx, ZSET, "zrem", &args[1], gone);
    }
    reply
}

/// ZREMRANGEBYRANK / BYSCORE / BYLEX.
fn remrange(ctx: &mut Ctx<'_>, args: &[Bytes], by: By) -> Reply {
    enum Parsed {
        Rank(i64, i64),
        Score(Bound, Bound),
        Lex(Lex, Lex),
    }
    let parsed = match by {
        By::Rank => Parsed::Rank(tri!(int_arg(&args[2])), tri!(int_arg(&args[3]))),
        By::Score => match (score_bound(&args[2]), score_bound(&args[3])) {
            (Some(a), Some(b)) => Parsed::Score(a, b),
            _ => return err(ERR_RANGE_FLOAT),
        },
        By::Lex => match (lex_bound(&args[2]), lex_bound(&args[3])) {
            (Some(a), Some(b)) => Parsed::Lex(a, b),
            _ => return err(ERR_RANGE_LEX),
        },
    };
    let (reply, gone) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false);
        }
        if !slot.exists() {
            return (Reply::Int(0), false);
        }
        let n = slot.edit_zset(ZSet::new, |z| {
            let doomed: Vec<Vec<u8>> = match &parsed {
                Parsed::Rank(start, end) => match super::list::range(z.len(), *start, *end) {
                    None => Vec::new(),
                    Some((s, e)) => z
                        .from_rank(s)
                        .take(e + 1 - s)
                        .map(|(m, _)| m.to_vec())
                        .collect(),
                },
                Parsed::Score(min, max) => by_score(z, *min, *max, false)
                    .map(|(m, _)| m.to_vec())
                    .collect(),
                Parsed::Lex(min, max) => by_lex(z, min.clone(), max.clone(), false)
                    .map(|(m, _)| m.to_vec())
                    .collect(),
            };
            for m in &doomed {
                z.remove(m);
            }
            (doomed.len() as i64, !doomed.is_empty())
        });
        (Reply::Int(n), !slot.exists())
    });
    if !matches!(reply, Reply::Int(0) | Reply::Error(_)) {
        let event = match by {
            By::Rank => "zremrangebyrank",
            By::Score => "zremrangebyscore",
            By::Lex => "zremrangebylex",
        };
        super::notify_change(ctx, ZSET, event, &args[1], gone);
    }
    reply
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    remrange(ctx, args, By::Rank)
}

pub fn zremrangebyscore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    remrange(ctx, args, By::Score)
}

pub fn zremrangebylex(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    remrange(ctx, args, By::Lex)
}

fn pop_generic(ctx: &mut Ctx<'_>, args: &[Bytes], highest: bool) -> Reply {
    let count = match args.len() {
        2 => None,
        3 => match super::parse_i64(&args[2]) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return err("ERR value is out of range, must be positive"),
        },
        _ => return super::wrong_arity(if highest { "zpopmax" } else { "zpopmin" }),
    };
    let proto = ctx.session.proto;
    let (reply, popped, gone) = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if let Err(e) = check_slot(slot) {
            return (e, false, false);
        }
        if !slot.exists() || count == Some(0) {
            return (Reply::Array(Vec::new()), false, false);
        }
        let n = count.unwrap_or(1);
        let reply = slot.edit_zset(ZSet::new, |z| {
            let mut popped = Vec::new();
            for _ in 0..n.min(z.len() as u64) {
                let Some((m, s)) = z.pop(highest) else { break };
                popped.push((m, s));
            }
            let reply = match (count, proto) {
                (Some(_), Protocol::Resp3) => Reply::Array(
                    popped
                        .into_iter()
                        .map(|(m, s)| {
                            Reply::Array(vec![Reply::Bulk(Bytes::from(m)), score_reply(s)])
                        })
                        .collect(),
                ),
                _ => Reply::Array(
                    popped
                        .into_iter()
                        .flat_map(|(m, s)| [Reply::Bulk(Bytes::from(m)), score_reply(s)])
                        .collect(),
                ),
            };
            (reply, true)
        });
        (reply, true, !slot.exists())
    });
    if popped {
        let event = if highest { "zpopmax" } else { "zpopmin" };
        super::notify_change(ctx, ZSET, event, &args[1], gone);
    }
    reply
}

pub fn zpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    pop_generic(ctx, args, false)
}

pub fn zpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    pop_generic(ctx, args, true)
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: pops from the first non-empty
/// sorted set, answering its name and the members with their scores (pairs in RESP2 too);
/// a null array when every set is empty.
pub fn zmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (keys, highest, count) = tri!(super::mpop_args(args, 1, ["MIN", "MAX"]));
    mpop(ctx, keys, highest, count, false).unwrap_or(Reply::NilArray)
}

/// BZPOPMIN key [key ...] timeout: the first non-empty sorted set's name, member and
/// score, or a wait.
pub fn bzpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    super::block_pop(ctx, args, |ctx, keys| mpop(ctx, keys, false, 1, true))
}

/// BZPOPMAX key [key ...] timeout.
pub fn bzpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    super::block_pop(ctx, args, |ctx, keys| mpop(ctx, keys, true, 1, true))
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
pub fn bzmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    super::block_mpop(ctx, args, ["MIN", "MAX"], |ctx, keys, highest, count| {
        mpop(ctx, keys, highest, count, false)
    })
}

/// Pops up to `count` members from the first of `keys` that holds a sorted set, answering
/// its name and the members with their scores (`flat`: BZPOPMIN's name, member, score);
/// `None` when none does.
fn mpop(ctx: &mut Ctx<'_>, keys: &[Bytes], highest: bool, count: u64, flat: bool) -> Option<Reply> {
    let engine = ctx.engine;
    let budget = &mut ctx.session.budget;
    for key in keys {
        let retry = ctx.session.block_retry;
        let popped = engine.store.write(key, ctx.now_ms, |slot| {
            if let Err(e) = check_slot(slot) {
                // Woken again: a key that became another type is waited past (Redis keeps
                // the client blocked).
                return (!retry).then_some((e, false, false));
            }
            if !slot.exists() {
                return None;
            }
            let reply = slot.edit_zset(ZSet::new, |z| {
                let mut out = Vec::new();
                for _ in 0..count.min(z.len() as u64) {
                    let Some((m, s)) = z.pop(highest) else { break };
                    budget.charge(m.len() + 24);
                    out.push(Reply::Array(vec![
                        Reply::Bulk(Bytes::from(m)),
                        score_reply(s),
                    ]));
                }
                let name = Bytes::copy_from_slice(super::db::split_key(key).1);
                let reply = if budget.exceeded() {
                    Reply::Nil
                } else if flat {
                    let pairs = out.into_iter().flat_map(|p| match p {
                        Reply::Array(pair) => pair,
                        other => vec![other],
                    });
                    Reply::Array([Reply::Bulk(name)].into_iter().chain(pairs).collect())
                } else {
                    Reply::Array(vec![Reply::Bulk(name), Reply::Array(out)])
                };
                (reply, true)
            });
            Some((reply, true, !slot.exists()))
        });
        if let Some((reply, popped, gone)) = popped {
            if popped {
                let event = if highest { "zpopmax" } else { "zpopmin" };
                super::notify_change(ctx, ZSET, event, key, gone);
            }
            return Some(reply);
        }
    }
    None
}

/// ZRANDMEMBER key [count [WITHSCORES]].
pub fn zrandmember(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if args.len() == 2 {
        return with_zset(ctx, &args[1], |z, _, _| match z.filter(|z| !z.is_empty()) {
            Some(z) => z
                .at_rank(random_below(z.len()))
                .map_or(Reply::Nil, |(m, _)| Reply::Bulk(Bytes::copy_from_slice(m))),
            None => Reply::Nil,
        });
    }
    let count = tri!(int_arg(&args[2]));
    if count == i64::MIN {
        return err(super::hash::ERR_COUNT_RANGE);
    }
    let with = match args.get(3) {
        None => false,
        Some(a) if args.len() == 4 && is(a, "WITHSCORES") => true,
        Some(_) => return err(ERR_SYNTAX),
    };
    if with && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return err("ERR value is out of range");
    }
    with_zset(ctx, &args[1], |z, budget, proto| {
        let Some(z) = z.filter(|z| count != 0 && !z.is_empty()) else {
            return Reply::Array(Vec::new());
        };
        let all: Vec<(&[u8], f64)> = z.iter().collect();
        let len = all.len();
        let picks: Vec<usize> = if count < 0 {
            let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
            let mut v = Vec::new();
            for _ in 0..n {
                v.push(random_below(len));
                if !budget.charge(all[*v.last().expect("pushed")].0.len()) {
                    return Reply::Nil;
                }
            }
            v
        } else if count as u64 >= len as u64 {
            (0..len).collect()
        } else {
            distinct(len, count as usize)
        };
        members_reply(picks.into_iter().map(|i| all[i]), with, budget, proto)
    })
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: a listpack answers whole in score order
/// with cursor 0, as Redis walks its listpack; a skiplist's cursor counts the members still
/// to visit from the end (O(n) per call here).
pub fn zscan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let cursor = tri!(super::scan_cursor(&args[2]));
    match super::kind_of(ctx, &args[1]) {
        None => return Reply::Array(vec![Reply::bulk("0"), Reply::Array(Vec::new())]),
        Some(Kind::ZSet) => {}
        Some(_) => return err(ERR_WRONGTYPE),
    }
    let (count, pattern) = tri!(super::scan_options(args));
    with_zset(ctx, &args[1], |z, budget, _| {
        let Some(z) = z else {
            return scan_reply(0, Vec::new());
        };
        let len = z.len();
        let packed = z.encoding() == "listpack";
        // A skiplist's entries from the last one down, the cursor counting those still to
        // visit (see `shoal_store::ZSet::nth_entry`); a listpack whole, as Redis.
        let (from, left) = if packed {
            (0, len)
        } else {
            let left = match usize::try_from(cursor) {
                Ok(0) | Err(_) => len,
                Ok(c) => c.min(len),
            };
            (left.saturating_sub(count), left)
        };
        let next = if packed { 0 } else { from };
        let entries: Box<dyn Iterator<Item = (&[u8], f64)>> = if packed {
            z.iter()
        } else {
            Box::new((from..left).rev().filter_map(|i| z.nth_entry(i)))
        };
        let mut out = Vec::new();
        for (m, s) in entries {
            if pattern.is_some_and(|p| !glob_match(p, m, false)) {
                continue;
            }
            if !budget.charge(m.len() + 24) {
                return Reply::Nil;
            }
            out.push(Reply::Bulk(Bytes::copy_from_slice(m)));
            // A bulk string in RESP3 too, as Redis's scan replies: a listpack's score as it
            // stores it, a skiplist's as `%.17g`.
            out.push(Reply::Bulk(if packed {
                shoal_resp::double_bytes(s)
            } else {
                Bytes::from(g17(s))
            }));
        }
        scan_reply(next as u64, out)
    })
}

/// C's `%.17g` (what Redis 7.2's ZSCAN of a skiplist writes, through `%.17Lg`).
fn g17(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.into();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{d:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |t: &str| -> String {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa), exp.abs());
    }
    let decimals = usize::try_from(16 - exp).unwrap_or(0);
    trim(&format!("{d:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse_as_redis_reads_them() {
        let b = score_bound(b"(1.5").unwrap();
        assert!(b.exclusive && b.value == 1.5);
        assert!(score_bound(b"-inf").unwrap().value.is_infinite());
        assert!(score_bound(b"+inf").unwrap().value > 0.0);
        assert!(score_bound(b"x").is_none());
        assert!(score_bound(b"nan").is_none());
        assert!(matches!(
            lex_bound(&Bytes::from_static(b"-")),
            Some(Lex::Min)
        ));
        assert!(matches!(
            lex_bound(&Bytes::from_static(b"[a")),
            Some(Lex::Incl(_))
        ));
        assert!(lex_bound(&Bytes::from_static(b"a")).is_none());
        assert_eq!(g17(0.1), "0.10000000000000001");
        assert_eq!(g17(1.5), "1.5");
        assert_eq!(g17(100.0), "100");
        assert_eq!(g17(1e20), "1e+20");
        assert_eq!(g17(-2.5e-7), "-2.4999999999999999e-07");
    }
}
