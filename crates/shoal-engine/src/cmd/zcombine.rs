//! Sorted-set algebra (Redis 7.2): ZUNION, ZINTER, ZDIFF, their STORE forms, and
//! ZINTERCARD.
//!
//! The inputs are sorted sets or sets (a set's members score 1), named after a `numkeys`
//! count. As Redis does: every input's type is checked before the options are read; the
//! union and the intersection visit the inputs from the smallest to the largest (so float
//! sums add in Redis's order), each score multiplied by its input's weight, a NaN product or
//! sum counting as 0; the difference keeps the first input's scores. Results are replied
//! or stored in score order. Each input is read under its own shard's lock; only the result
//! is copied (and, for an intersection, the smallest input).

use std::collections::HashMap;

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{Access, Collection, Entry, Kind, ZSet};

use crate::notify::ZSET;

use super::{err, is, parse_double, parse_i64, tri, Ctx, ERR_SYNTAX, ERR_WRONGTYPE};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's `zunionInterAggregate`.
    fn apply(self, acc: &mut f64, v: f64) {
        match self {
            Aggregate::Sum => {
                *acc += v;
                if acc.is_nan() {
                    *acc = 0.0;
                }
            }
            Aggregate::Min => *acc = acc.min(v),
            Aggregate::Max => *acc = acc.max(v),
        }
    }
}

/// What a request asks for, once parsed.
struct Request<'a> {
    keys: &'a [Bytes],
    /// Each input's cardinality (0 when missing), in key order.
    sizes: Vec<usize>,
    weights: Vec<f64>,
    aggregate: Aggregate,
    with_scores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    limit: u64,
}

/// The output a command wants.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Output {
    Reply,
    Store,
    Cardinality,
}

/// One input, read under its shard's lock.
enum Input<'a> {
    Missing,
    ZSet(&'a ZSet),
    Set(&'a shoal_store::Set),
}

impl<'a> Input<'a> {
    fn of(e: Option<Entry<'a>>) -> Result<Input<'a>, Reply> {
        let Some(e) = e else {
            return Ok(Input::Missing);
        };
        match e.kind {
            Kind::ZSet => Ok(e.zset().map_or(Input::Missing, Input::ZSet)),
            Kind::Set => Ok(e.set().map_or(Input::Missing, Input::Set)),
            _ => Err(err(ERR_WRONGTYPE)),
        }
    }

    fn len(&self) -> usize {
        match self {
            Input::Missing => 0,
            Input::ZSet(z) => z.len(),
            Input::Set(s) => s.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Input::Missing => None,
            Input::ZSet(z) => z.score(member),
            Input::Set(s) => s.contains(member).then_some(1.0),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Input::Missing => {}
            Input::ZSet(z) => z.iter().for_each(|(m, s)| f(m, s)),
            Input::Set(s) => s.iter().for_each(|m| f(&m.to_bytes(), 1.0)),
        }
    }
}

/// Reads `key` as an input for `f`.
fn with_input<R>(ctx: &Ctx<'_>, key: &[u8], f: impl FnOnce(&Input<'_>) -> R) -> Result<R, Reply> {
    ctx.engine.store.read(key, ctx.now_ms, Access::Read, |e| {
        Input::of(e).map(|i| f(&i))
    })
}

/// Parses a request whose count is at `at`: the count, each input's type, then the options
/// (in Redis's order of checks, so WRONGTYPE comes before a bad option).
fn parse<'a>(
    ctx: &Ctx<'_>,
    args: &'a [Bytes],
    at: usize,
    op: Op,
    out: Output,
) -> Result<Request<'a>, Reply> {
    let Some(n) = parse_i64(&args[at]) else {
        return Err(err(super::ERR_NOT_INTEGER));
    };
    if n < 1 {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        return Err(Reply::error(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let rest = args.len() - at - 1;
    if n as u64 > rest as u64 {
        return Err(err(ERR_SYNTAX));
    }
    let n = n as usize;
    let keys = &args[at + 1..at + 1 + n];
    let mut sizes = Vec::with_capacity(n);
    for k in keys {
        sizes.push(with_input(ctx, k, |i| i.len())?);
    }
    let mut req = Request {
        keys,
        sizes,
        weights: vec![1.0; n],
        aggregate: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    let mut i = at + 1 + n;
    while i < args.len() {
        let remaining = args.len() - i;
        let a = &args[i];
        let weighted = op != Op::Diff && out != Output::Cardinality;
        if weighted && remaining > n && is(a, "WEIGHTS") {
            for (w, arg) in req.weights.iter_mut().zip(&args[i + 1..]) {
                *w = parse_double(arg).ok_or_else(|| err("ERR weight value is not a float"))?;
            }
            i += 1 + n;
        } else if weighted && remaining >= 2 && is(a, "AGGREGATE") {
            let b = &args[i + 1];
            req.aggregate = if is(b, "SUM") {
                Aggregate::Sum
            } else if is(b, "MIN") {
                Aggregate::Min
            } else if is(b, "MAX") {
                Aggregate::Max
            } else {
                return Err(err(ERR_SYNTAX));
            };
            i += 2;
        } else if out == Output::Reply && is(a, "WITHSCORES") {
            req.with_scores = true;
            i += 1;
        } else if out == Output::Cardinality && remaining >= 2 && is(a, "LIMIT") {
            req.limit = match parse_i64(&args[i + 1]) {
                Some(l) if l >= 0 => l as u64,
                _ => return Err(err("ERR LIMIT can't be negative")),
            };
            i += 2;
        } else {
            return Err(err(ERR_SYNTAX));
        }
    }
    Ok(req)
}

/// A weighted score, a NaN product counting as 0 (Redis's rule).
fn weighted(weight: f64, score: f64) -> f64 {
    let s = weight * score;
    if s.is_nan() {
        0.0
    } else {
        s
    }
}

/// The result of `op` over the request's inputs, unordered.
fn compute(ctx: &Ctx<'_>, req: &Request<'_>, op: Op) -> Result<Vec<(Vec<u8>, f64)>, Reply> {
    // The union and the intersection visit the inputs from the smallest (a stable order,
    // as glibc's qsort sorts them).
    let mut order: Vec<usize> = (0..req.keys.len()).collect();
    if op != Op::Diff {
        order.sort_by_key(|&i| req.sizes[i]);
    }
    match op {
        Op::Union => {
            let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
            for &i in &order {
                let w = req.weights[i];
                with_input(ctx, &req.keys[i], |input| {
                    input.for_each(|m, s| {
                        let s = weighted(w, s);
                        match acc.get_mut(m) {
                            Some(cur) => req.aggregate.apply(cur, s),
                            None => {
                                acc.insert(m.to_vec(), s);
                            }
                        }
                    })
                })?;
            }
            Ok(acc.into_iter().collect())
        }
        Op::Inter => {
            let first = order[0];
            if req.sizes[first] == 0 {
                return Ok(Vec::new());
            }
            let w = req.weights[first];
            let mut acc = Vec::with_capacity(req.sizes[first]);
            with_input(ctx, &req.keys[first], |input| {
                input.for_each(|m, s| acc.push((m.to_vec(), weighted(w, s))))
            })?;
            for &i in &order[1..] {
                if acc.is_empty() {
                    break;
                }
                let w = req.weights[i];
                with_input(ctx, &req.keys[i], |input| {
                    acc.retain_mut(|(m, score)| match input.score(m) {
                        Some(s) => {
                            // Only the first input's product is cleared of NaN (as Redis).
                            req.aggregate.apply(score, w * s);
                            true
                        }
                        None => false,
                    })
                })?;
            }
            Ok(acc)
        }
        Op::Diff => {
            let mut acc = Vec::with_capacity(req.sizes[0]);
            with_input(ctx, &req.keys[0], |input| {
                input.for_each(|m, s| acc.push((m.to_vec(), s)))
            })?;
            for k in &req.keys[1..] {
                if acc.is_empty() {
                    break;
                }
                with_input(ctx, k, |input| {
                    if input.len() > 0 {
                        acc.retain(|(m, _)| input.score(m).is_none());
                    }
                })?;
            }
            Ok(acc)
        }
    }
}

/// Runs `op` for a request whose count is at `at`, with `dst` for the STORE forms.
fn generic(ctx: &mut Ctx<'_>, args: &[Bytes], at: usize, op: Op, out: Output) -> Reply {
    let req = tri!(parse(ctx, args, at, op, out));
    let mut items = tri!(compute(ctx, &req, op));
    match out {
        Output::Cardinality => {
            let n = items.len() as u64;
            Reply::Int(if req.limit > 0 { n.min(req.limit) } else { n } as i64)
        }
        Output::Store => {
            let dst = &args[1];
            let n = items.len() as i64;
            let now = ctx.now_ms;
            let event = match op {
                Op::Union => "zunionstore",
                Op::Inter => "zinterstore",
                Op::Diff => "zdiffstore",
            };
            if items.is_empty() {
                let existed = ctx.engine.store.write(dst, now, |slot| slot.remove());
                super::notify_stored(ctx, ZSET, event, dst, false, existed);
                return Reply::Int(0);
            }
            let longest = items.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
            let mut z = ZSet::for_members(items.len(), longest);
            for (m, s) in &items {
                z.insert(m, *s);
            }
            ctx.engine.store.write(dst, now, |slot| {
                slot.set_coll(Collection::ZSet(z));
                slot.set_expire(None);
            });
            ctx.notify(ZSET, event, dst);
            Reply::Int(n)
        }
        Output::Reply => {
            items.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            let proto = ctx.session.proto;
            super::zset::members_reply(
                items.iter().map(|(m, s)| (&m[..], *s)),
                req.with_scores,
                &mut ctx.session.budget,
                proto,
            )
        }
    }
}

/// ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES].
pub fn zunion(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    generic(ctx, args, 1, Op::Union, Output::Reply)
}

/// ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES].
pub fn zinter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    generic(ctx, args, 1, Op::Inter, Output::Reply)
}

/// ZDIFF numkeys key [key ...] [WITHSCORES].
pub fn zdiff(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    generic(ctx, args, 1, Op::Diff, Output::Reply)
}

/// ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...].
pub fn zunionstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    generic(ctx, args, 2, Op::Union, Output::Store)
}

/// ZINTERSTORE destination numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...].
pub fn zinterstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    generic(ctx, args, 2, Op::Inter, Output::Store)
}

/// ZDIFFSTORE destination numkeys key [key ...].
pub fn zdiffstore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    generic(ctx, args, 2, Op::Diff, Output::Store)
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit].
pub fn zintercard(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    generic(ctx, args, 1, Op::Inter, Output::Cardinality)
}
