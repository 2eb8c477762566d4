//! SORT and SORT_RO (Redis 7.2): the elements of a list, set or sorted set, sorted
//! numerically or (ALPHA) by their bytes, by themselves or by other keys' values (BY
//! pattern, `*` replaced by the element, `->field` for a hash field; a pattern without `*`,
//! or `nosort`, keeps the value's own order), LIMIT offset count, ASC/DESC, GET patterns
//! (`#` for the element), and (SORT) STORE into a list.
//!
//! As Redis: the options are read before the key's type is checked; equal numeric scores
//! are ordered by the elements' bytes, equal ALPHA keys keep the value's order; a missing
//! BY key counts as 0 (numeric) or before every other (ALPHA); a set sorted into a STORE
//! without an order is sorted ALPHA, so every copy stores the same list. In a cluster the
//! keys that BY, GET and STORE name must be in the sorted key's slot (Redis Cluster's rule),
//! so they are all on the owner.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{key_slot, Access, Collection, Kind, List};

use super::{
    db, err, is, parse_double, parse_i64, tri, Ctx, ERR_NOT_INTEGER, ERR_SYNTAX, ERR_WRONGTYPE,
};

/// The parsed options of one SORT.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    /// (offset, count) as given (negative count: to the end).
    limit: Option<(i64, i64)>,
    /// BY pattern with a `*` (sorting by other keys).
    by: Option<&'a [u8]>,
    /// BY without a `*`: keep the value's own order.
    dont_sort: bool,
    get: Vec<&'a [u8]>,
    store: Option<&'a Bytes>,
}

/// The slot a pattern's keys are in, if one (Redis's `patternHashSlot`): a `{tag}` before
/// any wildcard, or the whole pattern when it has none.
fn pattern_slot(p: &[u8]) -> Option<u16> {
    let mut open = None;
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'*' | b'?' | b'[' => return None,
            b'\\' => i += 1,
            b'{' if open.is_none() => open = Some(i),
            b'}' if open.is_some() => {
                let o = open.expect("checked");
                return (i > o + 1).then(|| key_slot(&p[o..=i]));
            }
            _ => {}
        }
        i += 1;
    }
    Some(key_slot(p))
}

fn parse<'a>(ctx: &Ctx<'_>, args: &'a [Bytes], readonly: bool) -> Result<Options<'a>, Reply> {
    let mut o = Options {
        desc: false,
        alpha: false,
        limit: None,
        by: None,
        dont_sort: false,
        get: Vec::new(),
        store: None,
    };
    let cluster = ctx.host.cluster().is_some();
    let slot = key_slot(db::split_key(&args[1]).1);
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = &args[j];
        if is(a, "ASC") {
            o.desc = false;
        } else if is(a, "DESC") {
            o.desc = true;
        } else if is(a, "ALPHA") {
            o.alpha = true;
        } else if is(a, "LIMIT") && left >= 2 {
            let (Some(start), Some(count)) = (parse_i64(&args[j + 1]), parse_i64(&args[j + 2]))
            else {
                return Err(err(ERR_NOT_INTEGER));
            };
            o.limit = Some((start, count));
            j += 2;
        } else if !readonly && is(a, "STORE") && left >= 1 {
            o.store = Some(&args[j + 1]);
            j += 1;
        } else if is(a, "BY") && left >= 1 {
            let p = &args[j + 1][..];
            if !p.contains(&b'*') {
                o.dont_sort = true;
                o.by = None;
            } else {
                if cluster && pattern_slot(p) != Some(slot) {
                    return Err(err("ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots."));
                }
                o.dont_sort = false;
                o.by = Some(p);
            }
            j += 1;
        } else if is(a, "GET") && left >= 1 {
            let p = &args[j + 1][..];
            if cluster && p != b"#" && pattern_slot(p) != Some(slot) {
                return Err(err("ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots."));
            }
            o.get.push(p);
            j += 1;
        } else {
            return Err(err(ERR_SYNTAX));
        }
        j += 1;
    }
    // Redis Cluster's rule on the cluster-client port; elsewhere the router sent it to the
    // owner of both keys (`db::store_key`).
    if let Some(dst) = o.store {
        if ctx.session.redis_cluster && key_slot(dst) != slot {
            return Err(err("CROSSSLOT Keys in request don't hash to the same slot"));
        }
    }
    Ok(o)
}

/// What `pattern` names for `element` (Redis's `lookupKeyByPattern`): the element for `#`;
/// the string at the key with the first `*` replaced, or the hash field after `->`; `None`
/// when it is missing, of another type, or the pattern has no `*`.
fn lookup(ctx: &Ctx<'_>, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let arrow = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&at| at + 2 < after.len());
    let (rest, field) = match arrow {
        Some(at) => (&after[..at], Some(&after[at + 2..])),
        None => (after, None),
    };
    let mut key = Vec::with_capacity(pattern.len() + element.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(rest);
    let key = db::stored_key(ctx.session.db, &key);
    ctx.engine.store.read(&key, ctx.now_ms, Access::Read, |e| {
        let e = e?;
        match field {
            Some(f) => e.hash()?.get(f).map(<[u8]>::to_vec),
            None => (e.kind == Kind::String).then(|| e.value.to_vec()),
        }
    })
}

/// One element with what it sorts by.
struct Item {
    element: Vec<u8>,
    score: f64,
    by: Option<Vec<u8>>,
}

fn sort_generic(ctx: &mut Ctx<'_>, args: &[Bytes], readonly: bool) -> Reply {
    let mut o = tri!(parse(ctx, args, readonly));
    // The value: its elements in its own order (a sorted set's by score).
    let value = ctx
        .engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            let Some(e) = e else {
                return Ok((Kind::List, Vec::new()));
            };
            let elements: Vec<Vec<u8>> = match (e.list(), e.set(), e.zset()) {
                (Some(l), _, _) => l.iter().map(<[u8]>::to_vec).collect(),
                (_, Some(s), _) => s.iter().map(|m| m.to_bytes()).collect(),
                (_, _, Some(z)) => z.iter().map(|(m, _)| m.to_vec()).collect(),
                _ => return Err(err(ERR_WRONGTYPE)),
            };
            Ok((e.kind, elements))
        });
    let (kind, mut elements) = tri!(value);
    // A set stored, or read by a script, without an order is sorted, so every copy stores
    // the same list and a script sees one order (Redis's rule).
    if o.dont_sort && kind == Kind::Set && (o.store.is_some() || ctx.session.scripted) {
        o.dont_sort = false;
        o.alpha = true;
        o.by = None;
    }
    let sorting = !o.dont_sort;
    if !sorting && o.desc && kind != Kind::Set {
        // The value's own order, from the other end (Redis reads lists and sorted sets so).
        elements.reverse();
    }
    let mut items: Vec<Item> = Vec::with_capacity(elements.len());
    let mut bad_score = false;
    for element in elements {
        let mut item = Item {
            element,
            score: 0.0,
            by: None,
        };
        if sorting {
            let by = match o.by {
                Some(p) => lookup(ctx, p, &item.element),
                None => Some(item.element.clone()),
            };
            if o.alpha {
                if o.by.is_some() {
                    item.by = by;
                }
            } else if let Some(v) = by {
                match sort_score(&v) {
                    Some(s) => item.score = s,
                    None if v.is_empty() => {}
                    None => bad_score = true,
                }
            }
        }
        items.push(item);
    }
    if bad_score {
        return err("ERR One or more scores can't be converted into double");
    }
    if sorting {
        let by_pattern = o.by.is_some();
        let alpha = o.alpha;
        let desc = o.desc;
        items.sort_by(|a, b| {
            let cmp = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.element.cmp(&b.element))
            } else if by_pattern {
                // A missing BY value sorts before the others.
                a.by.cmp(&b.by)
            } else {
                a.element.cmp(&b.element)
            };
            if desc {
                cmp.reverse()
            } else {
                cmp
            }
        });
    }
    // LIMIT, as Redis clamps it.
    let n = items.len() as i64;
    let (mut start, mut end) = match o.limit {
        None => (0, n - 1),
        Some((s, c)) => {
            let start = s.max(0);
            (
                start,
                if c < 0 {
                    n - 1
                } else {
                    start.saturating_add(c) - 1
                },
            )
        }
    };
    if start >= n {
        start = n - 1;
        end = n - 2;
    }
    end = end.min(n - 1);
    let chosen: &[Item] = if end < start {
        &[]
    } else {
        &items[start as usize..=end as usize]
    };
    // The output: each element, or what each GET names for it.
    let mut out: Vec<Option<Vec<u8>>> = Vec::new();
    for item in chosen {
        if o.get.is_empty() {
            out.push(Some(item.element.clone()));
        }
        for p in &o.get {
            out.push(lookup(ctx, p, &item.element));
        }
    }
    match o.store {
        Some(dst) => {
            let dst = db::stored_key(ctx.session.db, dst);
            let len = out.len() as i64;
            let existed = ctx.engine.store.write(&dst, ctx.now_ms, |slot| {
                if out.is_empty() {
                    return slot.remove();
                }
                let mut list = List::new();
                for v in &out {
                    list.push_back(v.as_deref().unwrap_or_default());
                }
                slot.set_coll(Collection::List(list));
                slot.set_expire(None);
                false
            });
            super::notify_stored(
                ctx,
                crate::notify::LIST,
                "sortstore",
                &dst,
                len > 0,
                existed,
            );
            Reply::Int(len)
        }
        None => {
            let budget = &mut ctx.session.budget;
            let mut replies = Vec::with_capacity(out.len());
            for v in out {
                if !budget.charge(v.as_ref().map_or(0, Vec::len)) {
                    return Reply::Nil;
                }
                replies.push(v.map_or(Reply::Nil, |v| Reply::Bulk(Bytes::from(v))));
            }
            Reply::Array(replies)
        }
    }
}

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
/// [STORE destination].
pub fn sort(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    sort_generic(ctx, args, false)
}

/// SORT_RO: SORT without STORE.
pub fn sort_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    sort_generic(ctx, args, true)
}

/// A value SORT orders by, as Redis reads it (`strtod`, then refused for anything left over,
/// any ERANGE (a subnormal result too) or NaN): leading blanks skipped; past a double's range,
/// too small for a normal one, or not a number, `None`.
fn sort_score(v: &[u8]) -> Option<f64> {
    let s = parse_double(v.trim_ascii_start())?;
    (s == 0.0 || s.is_infinite() || s.abs() >= f64::MIN_POSITIVE).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::pattern_slot;
    use shoal_store::key_slot;

    #[test]
    fn a_patterns_slot_is_its_tags_or_none() {
        assert_eq!(pattern_slot(b"{user}:w_*"), Some(key_slot(b"{user}")));
        assert_eq!(pattern_slot(b"w_*"), None, "a wildcard before any tag");
        assert_eq!(pattern_slot(b"w_{}*"), None, "an empty tag");
        assert_eq!(pattern_slot(b"fixed"), Some(key_slot(b"fixed")));
    }
}
