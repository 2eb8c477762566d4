//! Stream commands (Redis 7.2): XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID, XREAD,
//! XREADGROUP, XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER), XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM and XINFO (STREAM, GROUPS, CONSUMERS), with Redis's argument checks in
//! Redis's order and its error texts (`t_stream.c`).
//!
//! The value and its bookkeeping are `shoal_store::Stream`. XREAD and XREADGROUP with BLOCK
//! that find nothing ask to wait (`crate::blocking`); XREAD's `$` is resolved once, when the
//! command first runs, and the wait runs the command with the resolved IDs
//! ([`crate::blocking::Block::args`]).

use bytes::Bytes;
use shoal_resp::{Protocol, Reply};
use shoal_store::{stream_fields, Group, Stream, StreamId, TrimBy};

use super::{
    err, is, parse_i64, sub_syntax, subcommand, tri, Ctx, ReplyBudget, ERR_NOT_INTEGER, ERR_SYNTAX,
    ERR_WRONGTYPE,
};
use crate::notify::STREAM;

const ERR_INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const ERR_START: &str = "ERR invalid start ID for the interval";
const ERR_END: &str = "ERR invalid end ID for the interval";

impl super::Typed for Stream {
    const KIND: shoal_store::Kind = shoal_store::Kind::Stream;
    fn of(c: &shoal_store::Collection) -> Option<&Self> {
        match c {
            shoal_store::Collection::Stream(s) => Some(s),
            _ => None,
        }
    }
}

/// The client's name of a stored key (without a numbered database's prefix).
fn client_key(key: &[u8]) -> Bytes {
    Bytes::copy_from_slice(super::db::split_key(key).1)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- IDs ----------------------------------------------------------------------------------

/// Redis's `string2ull`: a canonical integer, or what C's `strtoull` reads whole (leading
/// blanks, a sign: a minus negates).
fn ull(b: &[u8]) -> Option<u64> {
    if let Some(n) = parse_i64(b) {
        return u64::try_from(n).ok();
    }
    let s = std::str::from_utf8(b).ok()?;
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'+') => (false, &t[1..]),
        Some(b'-') => (true, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(if neg { n.wrapping_neg() } else { n })
}

/// Redis's `streamGenericParseIDOrReply`: `ms-seq`, `ms` (seq `missing_seq`), `-` and `+`
/// unless `strict`, and `ms-*` where `auto_seq` allows it. The ID and whether its sequence
/// was given.
fn parse_id(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    auto_seq: bool,
) -> Result<(StreamId, bool), Reply> {
    let invalid = || err(ERR_INVALID_ID);
    if arg.len() > 127 {
        return Err(invalid());
    }
    match arg {
        b"-" | b"+" if strict => return Err(invalid()),
        b"-" => return Ok((StreamId::MIN, true)),
        b"+" => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(at) => (&arg[..at], Some(&arg[at + 1..])),
        None => (arg, None),
    };
    let ms = ull(ms).ok_or_else(invalid)?;
    match seq {
        Some(b"*") if auto_seq => Ok((StreamId::new(ms, 0), false)),
        Some(seq) => Ok((StreamId::new(ms, ull(seq).ok_or_else(invalid)?), true)),
        None => Ok((StreamId::new(ms, missing_seq), true)),
    }
}

/// A strict ID (no `-`, `+`), missing sequence 0.
fn strict_id(arg: &[u8]) -> Result<StreamId, Reply> {
    parse_id(arg, 0, true, false).map(|(id, _)| id)
}

/// One end of a range: an ID, `-`/`+`, or `(ID` (exclusive; moved one step inwards).
fn range_start(arg: &[u8]) -> Result<StreamId, Reply> {
    if arg.len() > 1 && arg[0] == b'(' {
        let (id, _) = parse_id(&arg[1..], 0, true, false)?;
        return id.next().ok_or_else(|| err(ERR_START));
    }
    parse_id(arg, 0, false, false).map(|(id, _)| id)
}

fn range_end(arg: &[u8]) -> Result<StreamId, Reply> {
    if arg.len() > 1 && arg[0] == b'(' {
        let (id, _) = parse_id(&arg[1..], u64::MAX, true, false)?;
        return id.prev().ok_or_else(|| err(ERR_END));
    }
    parse_id(arg, u64::MAX, false, false).map(|(id, _)| id)
}

fn id_reply(id: StreamId) -> Reply {
    Reply::Bulk(Bytes::from(id.to_string()))
}

/// An entry as Redis replies with it: `[id, [field, value, ...]]`; `None` past the budget.
fn entry_reply(id: StreamId, packed: &[u8], budget: &mut ReplyBudget) -> Option<Reply> {
    let mut fv = Vec::new();
    for v in stream_fields(packed) {
        if !budget.charge(v.len()) {
            return None;
        }
        fv.push(Reply::Bulk(Bytes::copy_from_slice(v)));
    }
    Some(Reply::Array(vec![id_reply(id), Reply::Array(fv)]))
}

/// Entries as replies, at most `count` (0: all); `None` past the budget.
fn entries_reply<'a>(
    entries: impl Iterator<Item = (StreamId, &'a [u8])>,
    count: usize,
    budget: &mut ReplyBudget,
) -> Option<Vec<Reply>> {
    let take = if count == 0 { usize::MAX } else { count };
    let mut out = Vec::new();
    for (id, packed) in entries.take(take) {
        out.push(entry_reply(id, packed, budget)?);
    }
    Some(out)
}

fn with_stream(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(Option<&Stream>, &mut ReplyBudget, Protocol) -> Reply,
) -> Reply {
    super::with_typed(ctx, key, f)
}

fn check_slot(slot: &shoal_store::Slot<'_>) -> Result<(), Reply> {
    super::check_kind::<Stream>(slot)
}

// ---- XADD, XTRIM --------------------------------------------------------------------------

/// XADD's and XTRIM's options (Redis's `streamParseAddOrTrimArgsOrReply`).
struct AddOrTrim {
    trim: Option<TrimBy>,
    approx: bool,
    limit: u64,
    no_mkstream: bool,
    /// XADD's ID: `None` for `*`, else the ID and whether its sequence was given.
    id: Option<(StreamId, bool)>,
    /// Where XADD's ID is.
    at: usize,
}

fn add_or_trim_args(
    args: &[Bytes],
    xadd: bool,
    nodes: shoal_store::NodeLimits,
) -> Result<AddOrTrim, Reply> {
    let mut o = AddOrTrim {
        trim: None,
        approx: false,
        limit: 0,
        no_mkstream: false,
        id: None,
        at: args.len(),
    };
    let mut limit_given = false;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i][..];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "MAXLEN") || is(opt, "MINID")) && more > 0 {
            if o.trim.is_some() {
                return Err(err(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            o.approx = false;
            let next = &args[i + 1][..];
            if more >= 2 && next == b"~" {
                o.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            if is(opt, "MAXLEN") {
                let n = parse_i64(&args[i + 1]).ok_or_else(|| err(ERR_NOT_INTEGER))?;
                if n < 0 {
                    return Err(err("ERR The MAXLEN argument must be >= 0."));
                }
                o.trim = Some(TrimBy::MaxLen(n as u64));
            } else {
                o.trim = Some(TrimBy::MinId(strict_id(&args[i + 1])?));
            }
            i += 1;
        } else if is(opt, "LIMIT") && more > 0 {
            let n = parse_i64(&args[i + 1]).ok_or_else(|| err(ERR_NOT_INTEGER))?;
            if n < 0 {
                return Err(err("ERR The LIMIT argument must be >= 0."));
            }
            o.limit = n as u64;
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "NOMKSTREAM") {
            o.no_mkstream = true;
        } else if xadd {
            o.id = Some(parse_id(opt, 0, true, true)?);
            break;
        } else {
            return Err(err(ERR_SYNTAX));
        }
        i += 1;
    }
    o.at = i;
    if o.limit > 0 && o.trim.is_none() {
        return Err(err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && o.trim.is_none() {
        return Err(err(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if limit_given {
        if !o.approx {
            return Err(err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if o.approx {
        o.limit = nodes.approx_limit();
    }
    Ok(o)
}

/// The ID XADD gives a new entry after `last` (Redis's `streamAppendItem`), `None` when it
/// would not be above `last`.
fn next_id(last: StreamId, given: Option<(StreamId, bool)>, now_ms: u64) -> Option<StreamId> {
    let id = match given {
        None if last.ms < now_ms => StreamId::new(now_ms, 0),
        None => last.next()?,
        Some((id, true)) => id,
        Some((id, false)) if id.ms == last.ms => last.next().filter(|n| n.ms == id.ms)?,
        Some((id, false)) => id,
    };
    (id > last).then_some(id)
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
pub fn xadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let nodes = ctx.engine.stream_nodes();
    let o = tri!(add_or_trim_args(args, true, nodes));
    let fields_at = o.at + 1;
    let n = args.len().saturating_sub(fields_at);
    if n < 2 || n % 2 == 1 {
        return super::wrong_arity("xadd");
    }
    if let Some((id, true)) = o.id {
        if id.is_zero() {
            return err("ERR The ID specified in XADD must be greater than 0-0");
        }
    }
    let pairs: Vec<&[u8]> = args[fields_at..].iter().map(|a| &a[..]).collect();
    let now = ctx.now_ms;
    let mut trimmed = false;
    let mut added = None;
    let mut kept = 0;
    let reply = ctx.engine.store.write(&args[1], now, |slot| {
        tri!(check_slot(slot));
        if !slot.exists() && o.no_mkstream {
            return Reply::Nil;
        }
        slot.edit_stream(|s| {
            if s.last_id == StreamId::MAX {
                return (
                    err("ERR The stream has exhausted the last possible ID, unable to add more items"),
                    false,
                );
            }
            let Some(id) = next_id(s.last_id, o.id, now) else {
                return (
                    err("ERR The ID specified in XADD is equal or smaller than the target stream top item"),
                    false,
                );
            };
            s.append_with(id, &pairs, nodes);
            if let Some(by) = o.trim {
                trimmed = s.trim(by, o.approx, o.limit) > 0;
            }
            kept = s.len();
            added = Some(id);
            (id_reply(id), true)
        })
    });
    if let Some(id) = added {
        // Replicas add the entry under the ID it got here, not one of their own clock, and
        // trim what was trimmed here.
        let approx = o.trim.is_some() && o.approx;
        if o.id != Some((id, true)) || approx {
            let mut again = if approx {
                exact_trim(args, &o, kept)
            } else {
                args.to_vec()
            };
            let at = again.len() - (args.len() - o.at);
            again[at] = Bytes::from(id.to_string());
            ctx.session.propagate = Some(again);
        }
        ctx.notify(STREAM, "xadd", &args[1]);
        if trimmed {
            ctx.notify(STREAM, "xtrim", &args[1]);
        }
    }
    reply
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub fn xtrim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let o = tri!(add_or_trim_args(args, false, ctx.engine.stream_nodes()));
    let by = o.trim.expect("checked by add_or_trim_args");
    let mut kept = None;
    let deleted = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        if !slot.exists() {
            return Reply::Int(0);
        }
        slot.edit_stream(|s| {
            let n = s.trim(by, o.approx, o.limit);
            kept = Some(s.len());
            (Reply::Int(n as i64), n > 0)
        })
    });
    if matches!(deleted, Reply::Int(n) if n > 0) {
        ctx.notify(STREAM, "xtrim", &args[1]);
    }
    if let Some(kept) = kept.filter(|_| o.approx) {
        // Replicas remove what was removed here, whatever their nodes.
        ctx.session.propagate = Some(exact_trim(args, &o, kept));
    }
    deleted
}

/// XADD's or XTRIM's arguments with an approximate trim made exact: `MAXLEN = <entries
/// left>`, no LIMIT (Redis's `streamRewriteApproxSpecifier`), so a replica removes the same
/// entries whatever its nodes' layout. XADD's ID and fields follow.
fn exact_trim(args: &[Bytes], o: &AddOrTrim, kept: usize) -> Vec<Bytes> {
    let mut out = vec![args[0].clone(), args[1].clone()];
    if o.no_mkstream {
        out.push(Bytes::from_static(b"NOMKSTREAM"));
    }
    out.push(Bytes::from_static(b"MAXLEN"));
    out.push(Bytes::from_static(b"="));
    out.push(Bytes::from(kept.to_string()));
    out.extend_from_slice(&args[o.at.min(args.len())..]);
    out
}

// ---- Reads --------------------------------------------------------------------------------

pub fn xlen(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    with_stream(ctx, &args[1], |s, _, _| {
        Reply::Int(s.map_or(0, Stream::len) as i64)
    })
}

fn range(ctx: &mut Ctx<'_>, args: &[Bytes], rev: bool) -> Reply {
    let (lo, hi) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let start = tri!(range_start(lo));
    let end = tri!(range_end(hi));
    let mut count = None;
    let mut j = 4;
    while j < args.len() {
        if is(&args[j], "COUNT") && j + 1 < args.len() {
            let n = tri!(parse_i64(&args[j + 1]).ok_or_else(|| err(ERR_NOT_INTEGER)));
            count = Some(n.max(0) as usize);
            j += 2;
        } else {
            return err(ERR_SYNTAX);
        }
    }
    with_stream(ctx, &args[1], |s, budget, _| {
        let Some(s) = s else {
            return Reply::Array(Vec::new());
        };
        if count == Some(0) {
            return Reply::NilArray;
        }
        let entries = s.range(start, end);
        let out = if rev {
            entries_reply(entries.rev(), count.unwrap_or(0), budget)
        } else {
            entries_reply(entries, count.unwrap_or(0), budget)
        };
        out.map_or(Reply::Nil, Reply::Array)
    })
}

/// XRANGE key start end [COUNT count]
pub fn xrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    range(ctx, args, false)
}

/// XREVRANGE key end start [COUNT count]
pub fn xrevrange(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    range(ctx, args, true)
}

// ---- XDEL, XSETID -------------------------------------------------------------------------

/// XDEL key id [id ...]
pub fn xdel(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let deleted = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        if !slot.exists() {
            return Reply::Int(0);
        }
        let mut ids = Vec::with_capacity(args.len() - 2);
        for a in &args[2..] {
            ids.push(tri!(strict_id(a)));
        }
        slot.edit_stream(|s| {
            let first = s.first_id;
            let mut n = 0;
            let mut first_went = false;
            for id in ids {
                if s.delete(id) {
                    first_went |= id == first;
                    n += 1;
                }
            }
            if n > 0 {
                s.deleted(first_went);
            }
            (Reply::Int(n), n > 0)
        })
    });
    if matches!(deleted, Reply::Int(n) if n > 0) {
        ctx.notify(STREAM, "xdel", &args[1]);
    }
    deleted
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub fn xsetid(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (id, _) = tri!(parse_id(&args[2], 0, true, false));
    let mut added = None;
    let mut max_deleted = None;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if is(&args[i], "ENTRIESADDED") && more > 0 {
            let n = tri!(parse_i64(&args[i + 1]).ok_or_else(|| err(ERR_NOT_INTEGER)));
            if n < 0 {
                return err("ERR entries_added must be positive");
            }
            added = Some(n as u64);
            i += 2;
        } else if is(&args[i], "MAXDELETEDID") && more > 0 {
            let m = tri!(strict_id(&args[i + 1]));
            if id < m {
                return err("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
            }
            max_deleted = Some(m);
            i += 2;
        } else {
            return err(ERR_SYNTAX);
        }
    }
    let reply = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        if !slot.exists() {
            return err("ERR no such key");
        }
        slot.edit_stream(|s| {
            // Redis 7.2's order (7.0 had no check against the current max_deleted_entry_id).
            if id < s.max_deleted {
                return (
                    err("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"),
                    false,
                );
            }
            // The floor is the last entry, deleted or not (Redis: the last live one; below a
            // deleted one, later entries would come out of order).
            if s.last_written().is_some_and(|top| id < top) {
                return (
                    err("ERR The ID specified in XSETID is smaller than the target stream top item"),
                    false,
                );
            }
            if !s.is_empty() && added.is_some_and(|n| (s.len() as u64) > n) {
                return (
                    err("ERR The entries_added specified in XSETID is smaller than the target stream length"),
                    false,
                );
            }
            s.last_id = id;
            if let Some(n) = added {
                s.entries_added = n;
            }
            if let Some(m) = max_deleted.filter(|m| !m.is_zero()) {
                s.max_deleted = m;
            }
            (Reply::ok(), true)
        })
    });
    if matches!(reply, Reply::Simple(_)) {
        ctx.notify(STREAM, "xsetid", &args[1]);
    }
    reply
}

// ---- XREAD, XREADGROUP --------------------------------------------------------------------

/// Where the keys of XREAD and XREADGROUP are: after the first STREAMS that is not an
/// option's argument, half of the rest (Redis's `xreadGetKeys`). `None` on a syntax error.
pub fn streams_keys(args: &[Bytes]) -> Option<(usize, usize)> {
    let mut i = 1;
    while i < args.len() {
        let a = &args[i][..];
        if is(a, "BLOCK") || is(a, "COUNT") {
            i += 2;
        } else if is(a, "GROUP") {
            i += 3;
        } else if is(a, "NOACK") {
            i += 1;
        } else if is(a, "STREAMS") {
            let n = args.len() - i - 1;
            if n == 0 || !n.is_multiple_of(2) {
                return None;
            }
            return Some((i + 1, i + 1 + n / 2));
        } else {
            return None;
        }
    }
    None
}

/// What XREAD or XREADGROUP asked for, from its options.
struct ReadArgs<'a> {
    block: Option<Option<u64>>,
    count: usize,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    keys: &'a [Bytes],
    ids: &'a [Bytes],
    /// Where the IDs start.
    ids_at: usize,
}

fn read_args<'a>(ctx: &Ctx<'_>, args: &'a [Bytes], group_cmd: bool) -> Result<ReadArgs<'a>, Reply> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        keys: &[],
        ids: &[],
        ids_at: 0,
    };
    let mut streams_at = 0;
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        let o = &args[i][..];
        if is(o, "BLOCK") && more > 0 {
            if ctx.session.scripted {
                return Err(Reply::error(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&args[0])
                )));
            }
            i += 1;
            r.block = Some(super::wait::parse_timeout_ms(&args[i], ctx.now_ms)?);
        } else if is(o, "COUNT") && more > 0 {
            i += 1;
            let n = parse_i64(&args[i]).ok_or_else(|| err(ERR_NOT_INTEGER))?;
            r.count = n.max(0) as usize;
        } else if is(o, "STREAMS") && more > 0 {
            streams_at = i + 1;
            let n = args.len() - streams_at;
            if !n.is_multiple_of(2) {
                // Redis 7.2's text (7.0 said "XREAD" and '$' for both).
                return Err(Reply::error(format!(
                    "ERR Unbalanced '{}' list of streams: for each stream key an ID or '{}' must be specified.",
                    if group_cmd { "xreadgroup" } else { "xread" },
                    if group_cmd { '>' } else { '$' }
                )));
            }
            r.keys = &args[streams_at..streams_at + n / 2];
            r.ids = &args[streams_at + n / 2..];
            r.ids_at = streams_at + n / 2;
            break;
        } else if is(o, "GROUP") && more >= 2 {
            if !group_cmd {
                return Err(err(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some((&args[i + 1], &args[i + 2]));
            i += 2;
        } else if is(o, "NOACK") {
            if !group_cmd {
                return Err(err(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.noack = true;
        } else {
            return Err(err(ERR_SYNTAX));
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(err(ERR_SYNTAX));
    }
    if group_cmd && r.group.is_none() {
        return Err(err("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(r)
}

/// Where one key of a read starts.
#[derive(Clone, Copy)]
enum Start {
    /// After this ID (XREAD, or a consumer's history in XREADGROUP).
    After(StreamId),
    /// `>`: the group's new entries.
    New,
}

/// The reply of XREAD and XREADGROUP: per key that had something, its name and entries
/// (a map in RESP3); a null array when none had.
fn read_reply(parts: Vec<(Bytes, Vec<Reply>)>, proto: Protocol) -> Reply {
    if parts.is_empty() {
        return Reply::NilArray;
    }
    match proto {
        Protocol::Resp2 => Reply::Array(
            parts
                .into_iter()
                .map(|(k, e)| Reply::Array(vec![Reply::Bulk(k), Reply::Array(e)]))
                .collect(),
        ),
        _ => Reply::Map(
            parts
                .into_iter()
                .map(|(k, e)| (Reply::Bulk(k), Reply::Array(e)))
                .collect(),
        ),
    }
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
pub fn xread(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let r = tri!(read_args(ctx, args, false));
    // Check every key's type and resolve `$` before anything is read, as Redis does.
    let mut from = Vec::with_capacity(r.keys.len());
    let mut resolved = false;
    for (key, id) in r.keys.iter().zip(r.ids) {
        let last = ctx
            .engine
            .store
            .read(key, ctx.now_ms, shoal_store::Access::Peek, |e| match e {
                None => Ok(None),
                Some(e) => match e.coll.and_then(<Stream as super::Typed>::of) {
                    Some(s) => Ok(Some(s.last_id)),
                    None => Err(err(ERR_WRONGTYPE)),
                },
            });
        let last = match last {
            // A waiting XREAD waits past a key of another type (Redis keeps it blocked).
            Err(_) if ctx.session.block_retry => {
                from.push(None);
                continue;
            }
            last => tri!(last),
        };
        if id[..] == *b"$" {
            from.push(Some(last.unwrap_or_default()));
            resolved = true;
        } else if id[..] == *b">" {
            return err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
        } else {
            from.push(Some(tri!(strict_id(id))));
        }
    }
    let proto = ctx.session.proto;
    let mut parts = Vec::new();
    for (key, after) in r.keys.iter().zip(&from) {
        let Some(start) = after.and_then(StreamId::next) else {
            continue;
        };
        let got = with_stream(ctx, key, |s, budget, _| {
            let Some(s) = s else {
                return Reply::Array(Vec::new());
            };
            entries_reply(s.range(start, StreamId::MAX), r.count, budget)
                .map_or(Reply::Nil, Reply::Array)
        });
        match got {
            Reply::Array(e) if e.is_empty() => {}
            Reply::Array(e) => parts.push((client_key(key), e)),
            other => return other,
        }
    }
    if !parts.is_empty() || r.block.is_none() {
        return read_reply(parts, proto);
    }
    let deadline = r.block.expect("checked above");
    if resolved && !ctx.session.no_block {
        // The wait reads after the IDs `$` stood for now, not after later ones. The command
        // is run again as the client sent it: its keys without a numbered database's
        // prefix, which each run adds (kept, they were prefixed twice and never woke).
        let mut again = args.to_vec();
        for (i, id) in from.iter().enumerate() {
            if let Some(id) = id {
                again[r.ids_at + i] = Bytes::from(id.to_string());
            }
            again[r.ids_at - r.keys.len() + i] = client_key(&r.keys[i]);
        }
        super::block_on(ctx, r.keys, deadline, Reply::NilArray);
        if let Some(b) = ctx.session.block.as_mut() {
            b.args = Some(again);
        }
        return Reply::NilArray;
    }
    super::block_on(ctx, r.keys, deadline, Reply::NilArray)
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key
/// [key ...] id [id ...]
pub fn xreadgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let r = tri!(read_args(ctx, args, true));
    let (group, consumer) = r.group.expect("checked by read_args");
    let mut from = Vec::with_capacity(r.keys.len());
    for (key, id) in r.keys.iter().zip(r.ids) {
        let found =
            ctx.engine
                .store
                .read(key, ctx.now_ms, shoal_store::Access::Peek, |e| match e {
                    None => Ok(None),
                    Some(e) => match e.coll.and_then(<Stream as super::Typed>::of) {
                        Some(s) => Ok(Some(s.group(group).is_some())),
                        None => Err(err(ERR_WRONGTYPE)),
                    },
                });
        // (A waiting reader whose stream went, changed type or lost its group answers the
        // error it now gets: Redis 7.2 runs the command again.)
        if tri!(found) != Some(true) {
            return Reply::error(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                lossy(super::db::split_key(key).1),
                lossy(group)
            ));
        }
        if id[..] == *b"$" {
            return err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
        } else if id[..] == *b">" {
            from.push(Start::New);
        } else {
            from.push(Start::After(tri!(strict_id(id))));
        }
    }
    let proto = ctx.session.proto;
    let now = ctx.now_ms;
    let mut parts = Vec::new();
    for (key, start) in r.keys.iter().zip(from) {
        let engine = ctx.engine;
        let budget = &mut ctx.session.budget;
        let mut created = false;
        let got = engine.store.write(key, now, |slot| {
            slot.stream()?;
            slot.edit_stream(|s| {
                read_group(
                    s,
                    group,
                    consumer,
                    start,
                    r.count,
                    r.noack,
                    now,
                    budget,
                    &mut created,
                )
            })
        });
        if created {
            ctx.notify(STREAM, "xgroup-createconsumer", key);
        }
        if let Some(e) = got {
            parts.push((client_key(key), e));
        }
    }
    if !parts.is_empty() || r.block.is_none() {
        return read_reply(parts, proto);
    }
    let deadline = r.block.expect("checked above");
    super::block_on(ctx, r.keys, deadline, Reply::NilArray)
}

/// One key of XREADGROUP under its lock (Redis's `xreadCommand` with a group, then
/// `streamReplyWithRange`): `Some(entries)` when it answers for the key (history always
/// does, even empty), `None` when nothing new; and whether the stream changed.
#[allow(clippy::too_many_arguments)]
fn read_group(
    s: &mut Stream,
    group: &[u8],
    consumer: &[u8],
    from: Start,
    count: usize,
    noack: bool,
    now: u64,
    budget: &mut ReplyBudget,
    created: &mut bool,
) -> (Option<Vec<Reply>>, bool) {
    let Some(g) = s.group_mut(group) else {
        return (None, false);
    };
    let (c, made) = g.consumer(consumer, now);
    c.seen_ms = now;
    *created = made;
    let mut left = if count == 0 { usize::MAX } else { count };
    // Every entry the command takes is taken whatever the reply budget (an entry past it
    // is delivered all the same and the client is closed, as Redis would close it), so a
    // replica running the same command takes the same ones. IDs are read in batches, not
    // collected whole.
    let mut out = Vec::new();
    match from {
        Start::After(after) => {
            // The consumer's history: its pending entries after `after`.
            let mut from = after.next();
            while let Some(at) = from.filter(|_| left > 0) {
                let batch: Vec<StreamId> = s
                    .group(group)
                    .and_then(|g| g.consumers.get(consumer))
                    .map(|c| c.pending.range(at..).take(left.min(256)).copied().collect())
                    .unwrap_or_default();
                if batch.is_empty() {
                    break;
                }
                for id in batch {
                    left -= 1;
                    from = id.next();
                    match s.get(id) {
                        Some(packed) => {
                            if let Some(e) = entry_reply(id, packed, budget) {
                                out.push(e);
                            }
                            let g = s.group_mut(group).expect("looked up above");
                            if let Some(n) = g.pel.get_mut(&id) {
                                n.delivery_ms = now;
                                n.deliveries = n.deliveries.saturating_add(1);
                            }
                        }
                        // Deleted since it was delivered: its ID with no fields.
                        None => {
                            if budget.charge(40) {
                                out.push(Reply::Array(vec![id_reply(id), Reply::NilArray]));
                            }
                        }
                    }
                }
            }
            (Some(out), true)
        }
        Start::New => {
            let mut from = g.last_id.next();
            let mut any = false;
            while let Some(at) = from.filter(|_| left > 0) {
                let batch: Vec<(StreamId, Option<Reply>)> = s
                    .range(at, StreamId::MAX)
                    .take(left.min(256))
                    .map(|(id, packed)| (id, entry_reply(id, packed, budget)))
                    .collect();
                if batch.is_empty() {
                    break;
                }
                any = true;
                for (id, reply) in batch {
                    left -= 1;
                    from = id.next();
                    out.extend(reply);
                    s.advance_group(group, id);
                    if !noack {
                        let g = s.group_mut(group).expect("looked up above");
                        g.deliver(id, consumer, now);
                        if let Some(c) = g.consumers.get_mut(consumer) {
                            c.active_ms = now as i64;
                        }
                    }
                }
            }
            (any.then_some(out), true)
        }
    }
}

/// The internal command a node that does not own XREAD's keys sends their owner before it
/// forwards a blocking XREAD with `$`: its rounds of waiting (`router::blocked`) then read
/// after the IDs `$` stood for when the client asked, not after later ones. `None` when no
/// ID is `$` (or the command is not an XREAD).
pub fn last_ids_request(args: &[Bytes]) -> Option<Vec<Bytes>> {
    if !args[0].eq_ignore_ascii_case(b"xread") {
        return None;
    }
    let (first, end) = streams_keys(args)?;
    let n = end - first;
    let ids = &args[end..end + n];
    if !ids.iter().any(|id| id[..] == *b"$") {
        return None;
    }
    let mut req = vec![Bytes::from_static(b"x.lastids")];
    req.extend_from_slice(&args[first..end]);
    Some(req)
}

/// `args` (an XREAD) with each `$` replaced by its key's last ID from `reply`, the RESP2
/// reply of [`last_ids_request`]'s command; `None` when the reply is not one.
pub fn with_last_ids(args: &[Bytes], reply: &[u8]) -> Option<Vec<Bytes>> {
    let rest = reply.strip_prefix(b"$")?;
    let line = rest.iter().position(|&b| b == b'\r')?;
    let len: usize = std::str::from_utf8(&rest[..line]).ok()?.parse().ok()?;
    let text = rest.get(line + 2..line.checked_add(2 + len)?)?;
    let ids = text
        .split(|&b| b == b' ')
        .map(|id| strict_id(id).ok())
        .collect::<Option<Vec<StreamId>>>()?;
    substitute_dollars(args, &ids)
}

/// `args` (an XREAD) with the `$` of key `i` replaced by `ids[i]`; `None` when the counts
/// differ.
fn substitute_dollars(args: &[Bytes], ids: &[StreamId]) -> Option<Vec<Bytes>> {
    let (first, end) = streams_keys(args)?;
    if ids.len() != end - first {
        return None;
    }
    let mut out = args.to_vec();
    for (i, id) in ids.iter().enumerate() {
        if out[end + i][..] == *b"$" {
            out[end + i] = Bytes::from(id.to_string());
        }
    }
    Some(out)
}

/// `args` (an XREAD; keys as the client named them, in database `db`) with each `$`
/// replaced by its key's last ID in this node's store (0-0 for an absent key): for a wait
/// run here, before its first attempt. `None` when no ID is `$`, or a key holds another
/// type (the command answers that itself).
pub fn with_local_last_ids(
    store: &shoal_store::Store,
    args: &[Bytes],
    db: u8,
    now_ms: u64,
) -> Option<Vec<Bytes>> {
    let req = last_ids_request(args)?;
    let mut ids = Vec::with_capacity(req.len() - 1);
    for key in &req[1..] {
        let key = super::db::stored_key(db, key);
        ids.push(store.read(&key, now_ms, shoal_store::Access::Peek, |e| {
            match e {
                None => Some(StreamId::MIN),
                Some(e) => e
                    .coll
                    .and_then(<Stream as super::Typed>::of)
                    .map(|s| s.last_id),
            }
        })?);
    }
    substitute_dollars(args, &ids)
}

/// `x.lastids key [key ...]` (internal, see [`last_ids_request`]): each key's last ID, 0-0
/// for an absent key, space-separated; WRONGTYPE for a key of another type.
pub fn last_ids(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut out = Vec::new();
    for key in &args[1..] {
        let last = ctx
            .engine
            .store
            .read(key, ctx.now_ms, shoal_store::Access::Peek, |e| match e {
                None => Some(StreamId::MIN),
                Some(e) => e
                    .coll
                    .and_then(<Stream as super::Typed>::of)
                    .map(|s| s.last_id),
            });
        let Some(last) = last else {
            return err(ERR_WRONGTYPE);
        };
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(last.to_string().as_bytes());
    }
    Reply::Bulk(Bytes::from(out))
}

// ---- XGROUP -------------------------------------------------------------------------------

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Print this help.",
];

fn entries_read_arg(arg: &[u8]) -> Result<i64, Reply> {
    let n = parse_i64(arg).ok_or_else(|| err(ERR_NOT_INTEGER))?;
    if n < 0 && n != -1 {
        return Err(err("ERR value for ENTRIESREAD must be positive or -1"));
    }
    Ok(n)
}

/// XGROUP CREATE | SETID | DESTROY | CREATECONSUMER | DELCONSUMER | HELP
pub fn xgroup(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = tri!(subcommand(
        "xgroup",
        args,
        &[
            ("help", 2),
            ("create", -5),
            ("setid", -5),
            ("destroy", 4),
            ("createconsumer", 5),
            ("delconsumer", 5),
        ],
    ));
    if &sub[..] == b"help" {
        return super::conn::help_reply(XGROUP_HELP);
    }
    let mut mkstream = false;
    let mut entries_read = -1i64;
    if &sub[..] == b"create" {
        let mut i = 5;
        while i < args.len() {
            if is(&args[i], "MKSTREAM") {
                mkstream = true;
                i += 1;
            } else if is(&args[i], "ENTRIESREAD") && i + 1 < args.len() {
                entries_read = tri!(entries_read_arg(&args[i + 1]));
                i += 2;
            } else {
                return sub_syntax("XGROUP", &args[1]);
            }
        }
    }
    // SETID's ENTRIESREAD is read before the key, as Redis reads it.
    if &sub[..] == b"setid" && args.len() == 7 {
        if !is(&args[5], "ENTRIESREAD") {
            return sub_syntax("XGROUP", &args[1]);
        }
        entries_read = tri!(entries_read_arg(&args[6]));
    }
    let (key, name) = (&args[2], &args[3][..]);
    let client = lossy(super::db::split_key(key).1);
    let now = ctx.now_ms;
    let mut event = None;
    let reply = ctx.engine.store.write(key, now, |slot| {
        tri!(check_slot(slot));
        if !slot.exists() && !mkstream {
            return err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
        }
        let has_group = has_group(slot, name);
        if !has_group && matches!(&sub[..], b"setid" | b"createconsumer" | b"delconsumer") {
            return Reply::error(format!(
                "NOGROUP No such consumer group '{}' for key name '{client}'",
                lossy(name)
            ));
        }
        match &sub[..] {
            b"create" => {
                if args.len() > 8 {
                    return sub_syntax("XGROUP", &args[1]);
                }
                let id = if args[4][..] == *b"$" {
                    slot.stream().map_or(StreamId::MIN, |s| s.last_id)
                } else {
                    tri!(strict_id(&args[4]))
                };
                if has_group {
                    return err("BUSYGROUP Consumer Group name already exists");
                }
                slot.edit_stream(|s| {
                    s.create_group(name, Group::new(id, entries_read));
                    event = Some("xgroup-create");
                    (Reply::ok(), true)
                })
            }
            b"setid" => {
                if args.len() != 5 && args.len() != 7 {
                    return sub_syntax("XGROUP", &args[1]);
                }
                let id = if args[4][..] == *b"$" {
                    slot.stream().map_or(StreamId::MIN, |s| s.last_id)
                } else {
                    tri!(parse_id(&args[4], 0, false, false)).0
                };
                slot.edit_stream(|s| {
                    let g = s.group_mut(name).expect("checked above");
                    g.last_id = id;
                    g.entries_read = entries_read;
                    event = Some("xgroup-setid");
                    (Reply::ok(), true)
                })
            }
            b"destroy" => {
                if !has_group {
                    return Reply::Int(0);
                }
                slot.edit_stream(|s| {
                    s.destroy_group(name);
                    event = Some("xgroup-destroy");
                    (Reply::Int(1), true)
                })
            }
            b"createconsumer" => slot.edit_stream(|s| {
                let g = s.group_mut(name).expect("checked above");
                let (_, created) = g.consumer(&args[4], now);
                if created {
                    event = Some("xgroup-createconsumer");
                }
                (Reply::Int(i64::from(created)), created)
            }),
            _ => slot.edit_stream(|s| {
                let g = s.group_mut(name).expect("checked above");
                match g.remove_consumer(&args[4]) {
                    Some(n) => {
                        event = Some("xgroup-delconsumer");
                        (Reply::Int(n as i64), true)
                    }
                    None => (Reply::Int(0), false),
                }
            }),
        }
    });
    if let Some(e) = event {
        ctx.notify(STREAM, e, key);
    }
    reply
}

// ---- XACK, XPENDING, XCLAIM, XAUTOCLAIM ---------------------------------------------------

/// Whether the key holds a stream with the group `name`.
fn has_group(slot: &shoal_store::Slot<'_>, name: &[u8]) -> bool {
    slot.stream().is_some_and(|s| s.group(name).is_some())
}

fn no_group(key: &[u8], group: &[u8]) -> Reply {
    Reply::error(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        lossy(super::db::split_key(key).1),
        lossy(group)
    ))
}

/// XACK key group id [id ...]
pub fn xack(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        tri!(check_slot(slot));
        if !has_group(slot, &args[2]) {
            return Reply::Int(0);
        }
        let mut ids = Vec::with_capacity(args.len() - 3);
        for a in &args[3..] {
            ids.push(tri!(strict_id(a)));
        }
        slot.edit_stream(|s| {
            let g = s.group_mut(&args[2]).expect("checked above");
            let n = ids.into_iter().filter(|&id| g.ack(id)).count();
            (Reply::Int(n as i64), n > 0)
        })
    })
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return err(ERR_SYNTAX);
    }
    let mut detail = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if is(&args[3], "IDLE") {
            min_idle = tri!(parse_i64(&args[4]).ok_or_else(|| err(ERR_NOT_INTEGER)));
            if argc < 8 {
                return err(ERR_SYNTAX);
            }
            at += 2;
        }
        let count = tri!(parse_i64(&args[at + 2]).ok_or_else(|| err(ERR_NOT_INTEGER))).max(0);
        let start = tri!(range_start(&args[at]));
        let end = tri!(range_end(&args[at + 1]));
        let consumer = args.get(at + 3).map(|c| &c[..]);
        detail = Some((min_idle, start, end, count as usize, consumer));
    }
    let now = ctx.now_ms;
    with_stream(ctx, &args[1], |s, budget, _| {
        let Some(g) = s.and_then(|s| s.group(&args[2])) else {
            return no_group(&args[1], &args[2]);
        };
        let Some((min_idle, start, end, count, consumer)) = detail else {
            if g.pel.is_empty() {
                return Reply::Array(vec![Reply::Int(0), Reply::Nil, Reply::Nil, Reply::NilArray]);
            }
            let first = g.pel.keys().next().copied().unwrap_or_default();
            let last = g.pel.keys().next_back().copied().unwrap_or_default();
            let consumers = g
                .consumers
                .iter()
                .filter(|(_, c)| !c.pending.is_empty())
                .map(|(name, c)| {
                    budget.charge(name.len());
                    Reply::Array(vec![
                        Reply::Bulk(Bytes::copy_from_slice(name)),
                        Reply::Bulk(Bytes::from(c.pending.len().to_string())),
                    ])
                })
                .collect();
            return Reply::Array(vec![
                Reply::Int(g.pel.len() as i64),
                id_reply(first),
                id_reply(last),
                Reply::Array(consumers),
            ]);
        };
        let ids: Box<dyn Iterator<Item = &StreamId>> = match consumer {
            Some(name) => match g.consumers.get(name) {
                Some(c) if start <= end => Box::new(c.pending.range(start..=end)),
                Some(_) => Box::new(std::iter::empty()),
                None => return Reply::Array(Vec::new()),
            },
            None if start <= end => Box::new(g.pel.range(start..=end).map(|(k, _)| k)),
            None => Box::new(std::iter::empty()),
        };
        let mut out = Vec::new();
        for id in ids {
            if out.len() >= count {
                break;
            }
            let Some(n) = g.pel.get(id) else {
                continue;
            };
            let idle = now.saturating_sub(n.delivery_ms) as i64;
            if min_idle > 0 && idle < min_idle {
                continue;
            }
            if !budget.charge(n.consumer.len() + 40) {
                return Reply::Nil;
            }
            out.push(Reply::Array(vec![
                id_reply(*id),
                Reply::Bulk(Bytes::copy_from_slice(&n.consumer)),
                Reply::Int(idle),
                Reply::Int(n.deliveries as i64),
            ]));
        }
        Reply::Array(out)
    })
}

/// How XCLAIM and XAUTOCLAIM take a pending entry.
struct Claim {
    /// Its new delivery time.
    delivery: u64,
    /// Its delivery count (XCLAIM's RETRYCOUNT); `None`: one more, unless `justid`.
    deliveries: Option<u64>,
    justid: bool,
    now: u64,
}

impl Claim {
    /// Moves the pending entry `id` of `group` (it must be pending, and in the stream) to
    /// `consumer` (which must exist), and adds its reply to `out`. The entry is claimed
    /// whatever the reply budget (see `read_group`).
    fn take(
        &self,
        s: &mut Stream,
        group: &[u8],
        id: StreamId,
        consumer: &[u8],
        budget: &mut ReplyBudget,
        out: &mut Vec<Reply>,
    ) {
        let g = s.group_mut(group).expect("the caller found the group");
        let n = g
            .reassign(id, consumer)
            .expect("the caller found it pending");
        n.delivery_ms = self.delivery;
        match self.deliveries {
            Some(d) => n.deliveries = d,
            None if !self.justid => n.deliveries = n.deliveries.saturating_add(1),
            None => {}
        }
        if let Some(c) = g.consumers.get_mut(consumer) {
            c.active_ms = self.now as i64;
        }
        if self.justid {
            if budget.charge(24) {
                out.push(id_reply(id));
            }
        } else if let Some(packed) = s.get(id) {
            out.extend(entry_reply(id, packed, budget));
        }
    }
}

/// Milliseconds since `at` (Redis's `now - delivery_time`, without overflowing on a time
/// from a payload).
fn idle_of(now: u64, at: u64) -> i64 {
    (now as i64).wrapping_sub(at as i64)
}

/// A long argument with its own error text.
fn long_arg(arg: &[u8], text: &'static str) -> Result<i64, Reply> {
    parse_i64(arg).ok_or_else(|| err(text))
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
pub fn xclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let now = ctx.now_ms;
    let engine = ctx.engine;
    let budget = &mut ctx.session.budget;
    let mut created = false;
    let reply = engine.store.write(&args[1], now, |slot| {
        tri!(check_slot(slot));
        if !has_group(slot, &args[2]) {
            return no_group(&args[1], &args[2]);
        }
        let min_idle = tri!(long_arg(
            &args[4],
            "ERR Invalid min-idle-time argument for XCLAIM"
        ))
        .max(0);
        let mut ids = Vec::new();
        let mut j = 5;
        while j < args.len() {
            match parse_id(&args[j], 0, true, false) {
                Ok((id, _)) => ids.push(id),
                Err(_) => break,
            }
            j += 1;
        }
        let (mut force, mut justid) = (false, false);
        let mut retrycount = -1i64;
        let mut delivery: Option<i64> = None;
        let mut last_id = StreamId::MIN;
        while j < args.len() {
            let more = args.len() - 1 - j;
            let opt = &args[j][..];
            if is(opt, "FORCE") {
                force = true;
            } else if is(opt, "JUSTID") {
                justid = true;
            } else if is(opt, "IDLE") && more > 0 {
                j += 1;
                let idle = tri!(long_arg(
                    &args[j],
                    "ERR Invalid IDLE option argument for XCLAIM"
                ));
                delivery = Some((now as i64).wrapping_sub(idle));
            } else if is(opt, "TIME") && more > 0 {
                j += 1;
                delivery = Some(tri!(long_arg(
                    &args[j],
                    "ERR Invalid TIME option argument for XCLAIM"
                )));
            } else if is(opt, "RETRYCOUNT") && more > 0 {
                j += 1;
                retrycount = tri!(long_arg(
                    &args[j],
                    "ERR Invalid RETRYCOUNT option argument for XCLAIM"
                ));
            } else if is(opt, "LASTID") && more > 0 {
                j += 1;
                last_id = tri!(strict_id(&args[j]));
            } else {
                return Reply::error(format!("ERR Unrecognized XCLAIM option '{}'", lossy(opt)));
            }
            j += 1;
        }
        let delivery = match delivery {
            Some(t) if t >= 0 && t <= now as i64 => t as u64,
            _ => now,
        };
        let consumer = &args[3][..];
        slot.edit_stream(|s| {
            let g = s.group_mut(&args[2]).expect("checked above");
            if last_id > g.last_id {
                g.last_id = last_id;
            }
            let (c, made) = g.consumer(consumer, now);
            c.seen_ms = now;
            created = made;
            let mut out = Vec::new();
            for id in ids {
                let exists = s.get(id).is_some();
                let g = s.group_mut(&args[2]).expect("checked above");
                if !exists {
                    // Deleted from the stream: its pending entry goes too.
                    g.ack(id);
                    continue;
                }
                let fresh = force && !g.pel.contains_key(&id);
                if fresh {
                    g.pel.insert(
                        id,
                        shoal_store::Nack {
                            consumer: Box::default(),
                            delivery_ms: now,
                            deliveries: 1,
                        },
                    );
                }
                let Some(n) = g.pel.get(&id) else {
                    continue;
                };
                if !fresh && min_idle > 0 && idle_of(now, n.delivery_ms) < min_idle {
                    continue;
                }
                let deliveries = (retrycount >= 0).then_some(retrycount as u64);
                let claim = Claim {
                    delivery,
                    deliveries,
                    justid,
                    now,
                };
                claim.take(s, &args[2], id, consumer, budget, &mut out);
            }
            (Reply::Array(out), true)
        })
    });
    if created {
        ctx.notify(STREAM, "xgroup-createconsumer", &args[1]);
    }
    reply
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let min_idle = tri!(long_arg(
        &args[4],
        "ERR Invalid min-idle-time argument for XAUTOCLAIM"
    ))
    .max(0);
    let start = tri!(range_start(&args[5]));
    let mut count = 100usize;
    let mut justid = false;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if is(&args[j], "COUNT") && more > 0 {
            let max = i64::MAX / 16;
            match parse_i64(&args[j + 1]) {
                Some(n) if (1..=max).contains(&n) => count = n as usize,
                _ => return err("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if is(&args[j], "JUSTID") {
            justid = true;
        } else {
            return err(ERR_SYNTAX);
        }
        j += 1;
    }
    let now = ctx.now_ms;
    let engine = ctx.engine;
    let budget = &mut ctx.session.budget;
    let mut created = false;
    let consumer = &args[3][..];
    let reply = engine.store.write(&args[1], now, |slot| {
        tri!(check_slot(slot));
        if !has_group(slot, &args[2]) {
            return no_group(&args[1], &args[2]);
        }
        slot.edit_stream(|s| {
            let g = s.group_mut(&args[2]).expect("checked above");
            let (c, made) = g.consumer(consumer, now);
            c.seen_ms = now;
            created = made;
            let mut attempts = count.saturating_mul(10);
            let mut left = count;
            let mut out = Vec::new();
            let mut deleted = Vec::new();
            let mut at = Some(start);
            let next_pending = |s: &Stream, from: Option<StreamId>| {
                from.and_then(|f| {
                    s.group(&args[2])
                        .and_then(|g| g.pel.range(f..).next().map(|(k, _)| *k))
                })
            };
            let mut cursor = None;
            loop {
                if attempts == 0 || left == 0 {
                    cursor = next_pending(s, at);
                    break;
                }
                attempts -= 1;
                let Some(id) = next_pending(s, at) else {
                    break;
                };
                at = id.next();
                let exists = s.get(id).is_some();
                let g = s.group_mut(&args[2]).expect("checked above");
                if !exists {
                    g.ack(id);
                    if budget.charge(24) {
                        deleted.push(id_reply(id));
                    }
                    left -= 1;
                    continue;
                }
                let n = &g.pel[&id];
                if min_idle > 0 && idle_of(now, n.delivery_ms) < min_idle {
                    continue;
                }
                let claim = Claim {
                    delivery: now,
                    deliveries: None,
                    justid,
                    now,
                };
                claim.take(s, &args[2], id, consumer, budget, &mut out);
                left -= 1;
            }
            let cursor = cursor.unwrap_or(StreamId::MIN);
            (
                Reply::Array(vec![
                    id_reply(cursor),
                    Reply::Array(out),
                    Reply::Array(deleted),
                ]),
                true,
            )
        })
    });
    if created {
        ctx.notify(STREAM, "xgroup-createconsumer", &args[1]);
    }
    reply
}

// ---- XINFO --------------------------------------------------------------------------------

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Print this help.",
];

fn field(name: &'static str, value: Reply) -> (Reply, Reply) {
    (Reply::bulk(name), value)
}

fn opt_int(n: Option<i64>) -> Reply {
    n.map_or(Reply::Nil, Reply::Int)
}

fn entries_read(g: &Group) -> Reply {
    if g.entries_read == -1 {
        Reply::Nil
    } else {
        Reply::Int(g.entries_read)
    }
}

/// XINFO STREAM key [FULL [COUNT count]] | GROUPS key | CONSUMERS key group | HELP
pub fn xinfo(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = tri!(subcommand(
        "xinfo",
        args,
        &[("help", 2), ("stream", -3), ("groups", 3), ("consumers", 4)],
    ));
    if &sub[..] == b"help" {
        return super::conn::help_reply(XINFO_HELP);
    }
    let now = ctx.now_ms;
    let key = args[2].clone();
    with_stream(ctx, &key, |s, budget, _| {
        let Some(s) = s else {
            return err("ERR no such key");
        };
        match &sub[..] {
            b"consumers" => {
                let Some(g) = s.group(&args[3]) else {
                    return Reply::error(format!(
                        "NOGROUP No such consumer group '{}' for key name '{}'",
                        lossy(&args[3]),
                        lossy(super::db::split_key(&key).1)
                    ));
                };
                Reply::Array(
                    g.consumers
                        .iter()
                        .map(|(name, c)| {
                            budget.charge(name.len() + 64);
                            Reply::Map(vec![
                                field("name", Reply::Bulk(Bytes::copy_from_slice(name))),
                                field("pending", Reply::Int(c.pending.len() as i64)),
                                field("idle", Reply::Int(now.saturating_sub(c.seen_ms) as i64)),
                                field(
                                    "inactive",
                                    Reply::Int(if c.active_ms < 0 {
                                        -1
                                    } else {
                                        (now as i64).wrapping_sub(c.active_ms)
                                    }),
                                ),
                            ])
                        })
                        .collect(),
                )
            }
            b"groups" => Reply::Array(
                s.groups()
                    .iter()
                    .map(|(name, g)| {
                        budget.charge(name.len() + 64);
                        Reply::Map(vec![
                            field("name", Reply::Bulk(Bytes::copy_from_slice(name))),
                            field("consumers", Reply::Int(g.consumers.len() as i64)),
                            field("pending", Reply::Int(g.pel.len() as i64)),
                            field("last-delivered-id", id_reply(g.last_id)),
                            field("entries-read", entries_read(g)),
                            field("lag", opt_int(s.lag(g))),
                        ])
                    })
                    .collect(),
            ),
            _ => stream_info(s, &args[1], &args[3..], budget),
        }
    })
}

/// XINFO STREAM's reply, its FULL form when asked.
fn stream_info(s: &Stream, sub: &[u8], opts: &[Bytes], budget: &mut ReplyBudget) -> Reply {
    let full = match opts.first() {
        None => None,
        Some(a) if is(a, "FULL") => match &opts[1..] {
            [] => Some(10usize),
            [c, n] if is(c, "COUNT") => match parse_i64(n) {
                Some(n) if n < 0 => Some(10),
                Some(n) => Some(n as usize),
                None => return err(ERR_NOT_INTEGER),
            },
            _ => return sub_syntax("XINFO", sub),
        },
        Some(_) => return sub_syntax("XINFO", sub),
    };
    // Redis's radix tree holds one key per listpack; its node count is estimated as Redis's
    // tree of 16-byte IDs would have about one node per key plus the root's path.
    let keys = s.node_count();
    let mut m = vec![
        field("length", Reply::Int(s.len() as i64)),
        field("radix-tree-keys", Reply::Int(keys as i64)),
        field(
            "radix-tree-nodes",
            Reply::Int(if keys == 0 { 1 } else { keys as i64 + 1 }),
        ),
        field("last-generated-id", id_reply(s.last_id)),
        field("max-deleted-entry-id", id_reply(s.max_deleted)),
        field("entries-added", Reply::Int(s.entries_added as i64)),
        field("recorded-first-entry-id", id_reply(s.first_id)),
    ];
    let entry = |e: Option<(StreamId, &[u8])>, budget: &mut ReplyBudget| match e {
        None => Reply::Nil,
        Some((id, packed)) => entry_reply(id, packed, budget).unwrap_or(Reply::Nil),
    };
    let Some(count) = full else {
        m.push(field("groups", Reply::Int(s.groups().len() as i64)));
        m.push(field("first-entry", entry(s.first(), budget)));
        m.push(field("last-entry", entry(s.last(), budget)));
        return Reply::Map(m);
    };
    let take = if count == 0 { usize::MAX } else { count };
    let Some(entries) = entries_reply(s.range(StreamId::MIN, StreamId::MAX), count, budget) else {
        return Reply::Nil;
    };
    m.push(field("entries", Reply::Array(entries)));
    let groups = s
        .groups()
        .iter()
        .map(|(name, g)| {
            budget.charge(name.len() + 64);
            let pending = g
                .pel
                .iter()
                .take(take)
                .map(|(id, n)| {
                    budget.charge(n.consumer.len() + 48);
                    Reply::Array(vec![
                        id_reply(*id),
                        Reply::Bulk(Bytes::copy_from_slice(&n.consumer)),
                        Reply::Int(n.delivery_ms as i64),
                        Reply::Int(n.deliveries as i64),
                    ])
                })
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cname, c)| {
                    budget.charge(cname.len() + 64);
                    let pending = c
                        .pending
                        .iter()
                        .take(take)
                        .filter_map(|id| g.pel.get(id).map(|n| (id, n)))
                        .map(|(id, n)| {
                            budget.charge(40);
                            Reply::Array(vec![
                                id_reply(*id),
                                Reply::Int(n.delivery_ms as i64),
                                Reply::Int(n.deliveries as i64),
                            ])
                        })
                        .collect();
                    Reply::Map(vec![
                        field("name", Reply::Bulk(Bytes::copy_from_slice(cname))),
                        field("seen-time", Reply::Int(c.seen_ms as i64)),
                        field("active-time", Reply::Int(c.active_ms)),
                        field("pel-count", Reply::Int(c.pending.len() as i64)),
                        field("pending", Reply::Array(pending)),
                    ])
                })
                .collect();
            Reply::Map(vec![
                field("name", Reply::Bulk(Bytes::copy_from_slice(name))),
                field("last-delivered-id", id_reply(g.last_id)),
                field("entries-read", entries_read(g)),
                field("lag", opt_int(s.lag(g))),
                field("pel-count", Reply::Int(g.pel.len() as i64)),
                field("pending", Reply::Array(pending)),
                field("consumers", Reply::Array(consumers)),
            ])
        })
        .collect();
    m.push(field("groups", Reply::Array(groups)));
    if budget.exceeded() {
        return Reply::Nil;
    }
    Reply::Map(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::from(s.to_string())
    }

    #[test]
    fn ids_parse_as_redis_parses_them() {
        assert_eq!(
            parse_id(b"5", 7, true, false).unwrap(),
            (StreamId::new(5, 7), true)
        );
        assert_eq!(
            parse_id(b"5-3", 0, true, false).unwrap().0,
            StreamId::new(5, 3)
        );
        assert_eq!(
            parse_id(b"5-*", 0, true, true).unwrap(),
            (StreamId::new(5, 0), false)
        );
        assert!(parse_id(b"5-*", 0, true, false).is_err());
        assert!(parse_id(b"-", 0, true, false).is_err());
        assert_eq!(parse_id(b"+", 0, false, false).unwrap().0, StreamId::MAX);
        assert!(parse_id(b"5-", 0, false, false).is_err());
        assert!(parse_id(b"-5", 0, false, false).is_err());
        assert!(parse_id(b"1-2-3", 0, false, false).is_err());
        assert_eq!(
            parse_id(b"18446744073709551615-18446744073709551615", 0, true, false)
                .unwrap()
                .0,
            StreamId::MAX
        );
        assert!(parse_id(b"18446744073709551616", 0, true, false).is_err());
        assert_eq!(ull(b"007"), Some(7));
        assert_eq!(ull(b" +7"), Some(7));
        assert_eq!(ull(b"-0"), Some(0));
        assert_eq!(ull(b"-7"), None);
        assert!(range_start(b"(18446744073709551615-18446744073709551615").is_err());
        assert!(range_end(b"(0-0").is_err());
        assert_eq!(range_start(b"(5").unwrap(), StreamId::new(5, 1));
    }

    #[test]
    fn new_ids_follow_the_clock_and_the_last_id() {
        let last = StreamId::new(100, 5);
        assert_eq!(next_id(last, None, 200), Some(StreamId::new(200, 0)));
        assert_eq!(
            next_id(last, None, 50),
            Some(StreamId::new(100, 6)),
            "a clock behind"
        );
        assert_eq!(
            next_id(last, Some((StreamId::new(100, 0), false)), 0),
            Some(StreamId::new(100, 6))
        );
        assert_eq!(next_id(last, Some((StreamId::new(99, 0), false)), 0), None);
        assert_eq!(next_id(last, Some((StreamId::new(100, 5), true)), 0), None);
        assert_eq!(
            next_id(
                StreamId::new(7, u64::MAX),
                Some((StreamId::new(7, 0), false)),
                0
            ),
            None,
            "the sequence of that millisecond is spent"
        );
    }

    #[test]
    fn the_keys_follow_the_streams_option() {
        let args: Vec<Bytes> = [
            "xreadgroup",
            "GROUP",
            "streams",
            "c",
            "COUNT",
            "1",
            "STREAMS",
            "a",
            "b",
            ">",
            ">",
        ]
        .iter()
        .map(|s| b(s))
        .collect();
        assert_eq!(streams_keys(&args), Some((7, 9)));
        let odd: Vec<Bytes> = ["xread", "STREAMS", "a", "b", "c"]
            .iter()
            .map(|s| b(s))
            .collect();
        assert_eq!(streams_keys(&odd), None);
        let bad: Vec<Bytes> = ["xread", "FOO", "STREAMS", "a", "0"]
            .iter()
            .map(|s| b(s))
            .collect();
        assert_eq!(streams_keys(&bad), None);
    }
}
