//! Keyspace commands: DEL, EXISTS, TTLs, RENAME/COPY, KEYS/SCAN, DBSIZE, FLUSH*.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{glob_match, key_slot, Access, Collection, Kind};

use std::sync::atomic::Ordering::Relaxed;

use super::{db, err, int_arg, is, tri, Ctx, ERR_NO_SUCH_KEY, ERR_SYNTAX};
use crate::engine::Engine;
use crate::notify::GENERIC;

/// DEL key [key ...]: as UNLINK under `lazyfree-lazy-user-del yes`.
pub fn del(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    delete(ctx, args, lazy_setting(ctx, "lazyfree-lazy-user-del"))
}

/// UNLINK key [key ...]: the keys go at once; a large value is freed on another thread
/// (`crate::lazyfree`).
pub fn unlink(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    delete(ctx, args, true)
}

/// Whether the lazy free setting `name` (`lazyfree-lazy-user-del`, `-user-flush`) is on.
fn lazy_setting(ctx: &Ctx<'_>, name: &str) -> bool {
    ctx.engine
        .with_settings(|s| super::inert::get(&s.inert, name).as_deref() == Some("yes"))
}

fn delete(ctx: &mut Ctx<'_>, args: &[Bytes], lazily: bool) -> Reply {
    let store = &ctx.engine.store;
    let mut n = 0;
    for k in &args[1..] {
        let Some(garbage) = store.take(k, ctx.now_ms) else {
            continue;
        };
        if lazily {
            ctx.engine.lazyfree.free(garbage, false);
        }
        ctx.notify(GENERIC, "del", k);
        n += 1;
    }
    Reply::Int(n)
}

fn count_live(ctx: &Ctx<'_>, keys: &[Bytes], access: Access) -> Reply {
    let store = &ctx.engine.store;
    let n = keys
        .iter()
        .filter(|k| store.read(k, ctx.now_ms, access, |e| e.is_some()))
        .count();
    Reply::Int(n as i64)
}

pub fn exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    count_live(ctx, &args[1..], Access::Inspect)
}

pub fn touch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    count_live(ctx, &args[1..], Access::Read)
}

pub fn type_(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let kind = ctx
        .engine
        .store
        .read(&args[1], ctx.now_ms, Access::Inspect, |e| e.map(|e| e.kind));
    Reply::Simple(kind.map_or("none", Kind::name).into())
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with NX / XX / GT / LT (Redis 7).
fn expire_generic(ctx: &mut Ctx<'_>, args: &[Bytes], millis: bool, absolute: bool) -> Reply {
    let cmd = match (millis, absolute) {
        (false, false) => "expire",
        (true, false) => "pexpire",
        (false, true) => "expireat",
        (true, true) => "pexpireat",
    };
    let n = tri!(int_arg(&args[2]));
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for a in &args[3..] {
        match &a[..] {
            o if is(o, "NX") => nx = true,
            o if is(o, "XX") => xx = true,
            o if is(o, "GT") => gt = true,
            o if is(o, "LT") => lt = true,
            o => {
                return Reply::error(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(o)
                ))
            }
        }
    }
    if nx && (xx || gt || lt) {
        return err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return err("ERR GT and LT options at the same time are not compatible");
    }
    let invalid = || Reply::error(format!("ERR invalid expire time in '{cmd}' command"));
    let ms = if millis {
        n
    } else {
        tri!(n.checked_mul(1000).ok_or_else(invalid))
    };
    let when = if absolute {
        ms
    } else {
        tri!(ms.checked_add(ctx.now_ms as i64).ok_or_else(invalid))
    };
    let now = ctx.now_ms as i64;
    let changed = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        if !slot.exists() {
            return None;
        }
        let current = slot.expire_at().map(|t| t as i64);
        let refused = (nx && current.is_some())
            || (xx && current.is_none())
            || (gt && current.is_none_or(|c| when <= c))
            || (lt && current.is_some_and(|c| when >= c));
        if refused {
            return None;
        }
        if when <= now {
            slot.remove();
            Some("del")
        } else {
            slot.set_expire(Some(when as u64));
            Some("expire")
        }
    });
    if let Some(event) = changed {
        ctx.notify(GENERIC, event, &args[1]);
    }
    Reply::Int(i64::from(changed.is_some()))
}

pub fn expire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, false, false)
}

pub fn pexpire(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, true, false)
}

pub fn expireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, false, true)
}

pub fn pexpireat(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    expire_generic(ctx, args, true, true)
}

/// TTL family: -2 no key, -1 no TTL; seconds are rounded as Redis does ((ms + 500) / 1000).
fn ttl_generic(ctx: &mut Ctx<'_>, args: &[Bytes], millis: bool, absolute: bool) -> Reply {
    let now = ctx.now_ms;
    let t = ctx.engine.store.read(&args[1], now, Access::Inspect, |e| {
        e.map(|e| e.expire_at_ms)
    });
    Reply::Int(match t {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let v = if absolute { at } else { at.saturating_sub(now) } as i64;
            if millis {
                v
            } else {
                (v + 500) / 1000
            }
        }
    })
}

pub fn ttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, false, false)
}

pub fn pttl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, true, false)
}

pub fn expiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, false, true)
}

pub fn pexpiretime(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    ttl_generic(ctx, args, true, true)
}

pub fn persist(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let done = ctx.engine.store.write(&args[1], ctx.now_ms, |slot| {
        slot.expire_at().is_some() && slot.set_expire(None)
    });
    if done {
        ctx.notify(GENERIC, "persist", &args[1]);
    }
    Reply::Int(i64::from(done))
}

/// A value of any type with its TTL and whether it was edited in place (a `raw` string: Redis
/// moves and copies the object, its encoding with it), as RENAME, COPY and MOVE carry it.
pub(super) type Carried = (Value, Option<u64>, bool);

use crate::rdb::Value;

/// Makes the slot's key `value` with expiry `ttl` (None: none).
fn place(slot: &mut shoal_store::Slot<'_>, value: Value, ttl: Option<u64>) {
    match value {
        Value::Str(v) => slot.set(&v, ttl),
        Value::Coll(c) => {
            slot.set_coll(c);
            slot.set_expire(ttl);
        }
    }
}

/// The value at `key` with its TTL, removed from there if `remove` (RENAME, MOVE); without
/// `remove` (COPY) a read of the key, counted as Redis counts its source's lookup.
pub(super) fn take(ctx: &Ctx<'_>, key: &[u8], remove: bool) -> Option<Carried> {
    ctx.engine.store.write(key, ctx.now_ms, |slot| {
        if !remove {
            slot.count_read();
        }
        let value = match slot.coll() {
            Some(c) => Value::Coll(c.clone()),
            None => Value::Str(slot.value()?.to_vec()),
        };
        let v = (value, slot.expire_at(), slot.edited());
        if remove {
            slot.remove();
        }
        Some(v)
    })
}

/// Stores a carried value at `key`; true if a key was there (replaced: Redis deletes and
/// adds it, a `new` event).
pub(super) fn put(ctx: &Ctx<'_>, key: &[u8], (value, ttl, edited): Carried) -> bool {
    ctx.engine.store.write(key, ctx.now_ms, |slot| {
        let existed = slot.exists();
        place(slot, value, ttl);
        if edited {
            slot.set_edited();
        }
        existed
    })
}

pub(super) fn exists_now(ctx: &Ctx<'_>, key: &[u8]) -> bool {
    ctx.engine
        .store
        .read(key, ctx.now_ms, Access::Peek, |e| e.is_some())
}

/// RENAME/RENAMENX move the value and its TTL. Source and destination may sit in different
/// store shards: the move is not atomic against a concurrent writer of the destination.
fn rename_generic(ctx: &mut Ctx<'_>, args: &[Bytes], nx: bool) -> Reply {
    let (src, dst) = (&args[1], &args[2]);
    if !exists_now(ctx, src) {
        return err(ERR_NO_SUCH_KEY);
    }
    if src == dst {
        return if nx { Reply::Int(0) } else { Reply::ok() };
    }
    if nx && exists_now(ctx, dst) {
        return Reply::Int(0);
    }
    let replaced = match take(ctx, src, true) {
        Some(v) => put(ctx, dst, v),
        None => return err(ERR_NO_SUCH_KEY),
    };
    if replaced {
        ctx.notify(crate::notify::NEW, "new", dst);
    }
    ctx.notify(GENERIC, "rename_from", src);
    ctx.notify(GENERIC, "rename_to", dst);
    if nx {
        Reply::Int(1)
    } else {
        Reply::ok()
    }
}

pub fn rename(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    rename_generic(ctx, args, false)
}

pub fn renamenx(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    rename_generic(ctx, args, true)
}

pub fn copy(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut replace = false;
    let (src_db, dst_key) = db::split_key(&args[2]);
    let mut to_db = src_db;
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "REPLACE") {
            replace = true;
        } else if is(&args[i], "DB") && i + 1 < args.len() {
            let n = tri!(int_arg(&args[i + 1]));
            if ctx.session.redis_cluster && n != 0 {
                return err("ERR Copying to another database is not allowed in cluster mode");
            }
            if !(0..db::DATABASES).contains(&n) {
                return err(db::ERR_DB_RANGE);
            }
            to_db = n as u8;
            i += 1;
        } else {
            return err(ERR_SYNTAX);
        }
        i += 1;
    }
    if to_db != 0 {
        ctx.engine.numbered_dbs.store(true, Relaxed);
    }
    let src = &args[1];
    let dst = &db::stored_key(to_db, dst_key);
    if src == dst {
        return err("ERR source and destination objects are the same");
    }
    let Some(v) = take(ctx, src, false) else {
        return Reply::Int(0);
    };
    if !replace && exists_now(ctx, dst) {
        return Reply::Int(0);
    }
    if put(ctx, dst, v) {
        ctx.notify(crate::notify::NEW, "new", dst);
    }
    ctx.notify(GENERIC, "copy_to", dst);
    Reply::Int(1)
}

/// DUMP key: the value in Redis's RDB form (`crate::rdb`), which RESTORE takes here and in
/// Redis; nil when the key is absent. The payload counts against the reply budget.
pub fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let payload = ctx
        .engine
        .store
        .read(&args[1], ctx.now_ms, Access::Read, |e| {
            e.map(|e| crate::rdb::dump_entry(&e))
        });
    match payload {
        None => Reply::Nil,
        Some(p) if ctx.session.budget.charge(p.len()) => Reply::Bulk(Bytes::from(p)),
        // Past the output limit: the connection is closed.
        Some(_) => Reply::Nil,
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]: the key
/// made from a DUMP payload of Redis 6.2 to 7.2 or of Shoal (`crate::rdb`), with Redis's
/// checks in Redis's order and its errors.
pub fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<u64>, Option<u8>) = (None, None);
    let mut i = 4;
    while i < args.len() {
        let more = i + 1 < args.len();
        if is(&args[i], "REPLACE") {
            replace = true;
        } else if is(&args[i], "ABSTTL") {
            absttl = true;
        } else if is(&args[i], "IDLETIME") && more && freq.is_none() {
            let n = tri!(int_arg(&args[i + 1]));
            if n < 0 {
                return err("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = Some((n as u64).saturating_mul(1000));
            i += 1;
        } else if is(&args[i], "FREQ") && more && idle.is_none() {
            let n = tri!(int_arg(&args[i + 1]));
            if !(0..=255).contains(&n) {
                return err("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = Some(n as u8);
            i += 1;
        } else {
            return err(ERR_SYNTAX);
        }
        i += 1;
    }
    let key = &args[1];
    if !replace && exists_now(ctx, key) {
        return err("BUSYKEY Target key name already exists.");
    }
    let ttl = tri!(int_arg(&args[2]));
    if ttl < 0 {
        return err("ERR Invalid TTL value, must be >= 0");
    }
    let max = ctx
        .engine
        .with_settings(|s| usize::try_from(s.proto_max_bulk_len.0).unwrap_or(usize::MAX));
    let value = match crate::rdb::restore(&args[3], max) {
        Ok(v) => v,
        Err(e) => return Reply::error(e.to_string()),
    };
    let now = ctx.now_ms;
    let at = match (ttl, absttl) {
        (0, _) => None,
        (t, true) => Some(t as u64),
        (t, false) => Some(now.saturating_add(t as u64)),
    };
    if at.is_some_and(|at| at <= now) {
        // Already expired: nothing is stored, and a key it replaces is gone.
        if replace && ctx.engine.store.remove(key, now) {
            ctx.notify(GENERIC, "del", key);
        }
        return Reply::ok();
    }
    let written = shoal_store::without_touching(|| {
        ctx.engine.store.write(key, now, |slot| {
            let existed = slot.exists();
            // Checked again under the key's lock: another client may have made it since.
            if existed && !replace {
                return None;
            }
            place(slot, value, at);
            slot.set_access(idle, freq);
            Some(existed)
        })
    });
    let Some(replaced) = written else {
        return err("BUSYKEY Target key name already exists.");
    };
    if replaced {
        // Redis deletes the old key and adds the new one.
        ctx.notify(crate::notify::NEW, "new", key);
    }
    ctx.notify(GENERIC, "restore", key);
    Reply::ok()
}

/// Walks the whole keyspace with the store's SCAN cursor.
/// Every key matching `pattern`, each charged to the reply budget (empty once exceeded).
fn all_keys(ctx: &mut Ctx<'_>, pattern: &[u8]) -> Vec<Reply> {
    let match_all = pattern == b"*";
    let db = ctx.session.db;
    let mut out = Vec::new();
    let mut budget = ctx.session.budget;
    let mut cursor = 0;
    loop {
        cursor = ctx
            .engine
            .store
            .scan(cursor, 4096, ctx.now_ms, |stored, _| {
                let (kdb, k) = db::split_key(stored);
                if kdb == db
                    && (match_all || glob_match(pattern, k, false))
                    && ctx.in_scope(stored)
                    && budget.charge(k.len())
                {
                    out.push(Reply::Bulk(Bytes::copy_from_slice(k)));
                }
            });
        if cursor == 0 || budget.exceeded() {
            ctx.session.budget = budget;
            return out;
        }
    }
}

pub fn keys(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    Reply::Array(all_keys(ctx, &args[1]))
}

pub fn scan(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let cursor = match super::cursor_value(&args[1]) {
        Some(c) => c,
        None => return err("ERR invalid cursor"),
    };
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut want_type: Option<&Bytes> = None;
    let mut i = 2;
    while i < args.len() {
        let Some(value) = args.get(i + 1) else {
            return err(ERR_SYNTAX);
        };
        if is(&args[i], "COUNT") {
            let n = tri!(int_arg(value));
            if n < 1 {
                return err(ERR_SYNTAX);
            }
            count = usize::try_from(n).unwrap_or(usize::MAX).min(1 << 20);
        } else if is(&args[i], "MATCH") {
            pattern = Some(value).filter(|p| &p[..] != b"*").map(|p| &p[..]);
        } else if is(&args[i], "TYPE") {
            want_type = Some(value);
        } else {
            return err(ERR_SYNTAX);
        }
        i += 2;
    }
    let mut keys = Vec::new();
    let mut budget = ctx.session.budget;
    let db = ctx.session.db;
    let next = ctx
        .engine
        .store
        .scan(cursor, count, ctx.now_ms, |stored, e| {
            let (kdb, k) = db::split_key(stored);
            if kdb == db
                && want_type.is_none_or(|t| is(t, e.kind.name()))
                && pattern.is_none_or(|p| glob_match(p, k, false))
                && ctx.in_scope(stored)
                && budget.charge(k.len())
            {
                keys.push(Reply::Bulk(Bytes::copy_from_slice(k)));
            }
        });
    ctx.session.budget = budget;
    Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(keys)])
}

pub fn randomkey(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    if ctx.engine.numbered_dbs() && ctx.scope.is_none() {
        // Random keys until one is in the selected database, then a walk to its first.
        return db::random_key_of(ctx, ctx.session.db).map_or(Reply::Nil, Reply::Bulk);
    }
    let Some(scope) = ctx.scope else {
        return ctx
            .engine
            .store
            .random_key(ctx.now_ms)
            .map_or(Reply::Nil, Reply::Bulk);
    };
    // In a fan-out: random local keys until one is in scope (and in the client's
    // database), then a walk of the slots in scope (so a node whose in-scope keys are few
    // still finds one).
    let db = ctx.session.db;
    let mine = |k: &[u8]| db::split_key(k).0 == db;
    let client_key = |k: &[u8]| Bytes::copy_from_slice(db::split_key(k).1);
    for _ in 0..32 {
        match ctx.engine.store.random_key(ctx.now_ms) {
            None => return Reply::Nil,
            Some(k) if scope.includes(key_slot(&k)) && mine(&k) => {
                return Reply::Bulk(client_key(&k))
            }
            Some(_) => {}
        }
    }
    let start = key_slot(&ctx.now_ms.to_le_bytes());
    for i in 0..shoal_store::SLOTS {
        let slot = (start + i) % shoal_store::SLOTS;
        if !scope.includes(slot) || ctx.engine.store.count_in_slot(slot) == 0 {
            continue;
        }
        let mut found = None;
        ctx.engine.store.for_each_in_slot(slot, ctx.now_ms, |k, _| {
            if found.is_none() && mine(k) {
                found = Some(client_key(k));
            }
        });
        if let Some(k) = found {
            return Reply::Bulk(k);
        }
    }
    Reply::Nil
}

pub fn dbsize(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    match ctx.scope {
        None if ctx.engine.numbered_dbs() => {
            Reply::Int(db::stored_count_of(ctx, ctx.session.db) as i64)
        }
        None => Reply::Int(ctx.engine.store.len() as i64),
        Some(scope) if ctx.engine.numbered_dbs() => {
            // A slot holds every database's keys: count the client's.
            let db = ctx.session.db;
            let mut n = 0usize;
            for s in (0..shoal_store::SLOTS).filter(|&s| scope.includes(s)) {
                if ctx.engine.store.count_in_slot(s) > 0 {
                    // At time 0 nothing is expired: expired keys not yet reclaimed count,
                    // as in database 0 and in Redis.
                    ctx.engine.store.for_each_in_slot(s, 0, |k, _| {
                        n += usize::from(db::split_key(k).0 == db);
                    });
                }
            }
            Reply::Int(n as i64)
        }
        Some(scope) => {
            let n: usize = (0..shoal_store::SLOTS)
                .filter(|&s| scope.includes(s))
                .map(|s| ctx.engine.store.count_in_slot(s))
                .sum();
            Reply::Int(n as i64)
        }
    }
}

/// FLUSHALL, FLUSHDB [ASYNC | SYNC]: ASYNC (or no option under `lazyfree-lazy-user-flush
/// yes`) frees the keys' memory on another thread (`crate::lazyfree`).
pub fn flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let lazily = match args.get(1) {
        None => lazy_setting(ctx, "lazyfree-lazy-user-flush"),
        Some(a) if args.len() == 2 && is(a, "ASYNC") => true,
        Some(a) if args.len() == 2 && is(a, "SYNC") => false,
        Some(_) => return err(ERR_SYNTAX),
    };
    if is(&args[0], "FLUSHDB") && ctx.engine.numbered_dbs() {
        // One database of several: its keys only, and its floor only (the others' states
        // are still taken).
        let mut garbage = shoal_store::Garbage::default();
        for k in db::keys_of(ctx, ctx.session.db) {
            match ctx.engine.store.take(&k, ctx.now_ms) {
                Some(g) if lazily => garbage.push(g),
                _ => {}
            }
        }
        ctx.engine.lazyfree.free(garbage, true);
        ctx.engine
            .store
            .raise_db_floor(ctx.session.db, ctx.now_ms << 12);
        let flushed = ctx.session.db;
        ctx.engine
            .blocked
            .signal_where(|k| db::split_key(k).0 == flushed);
        return Reply::ok();
    }
    if lazily {
        let garbage = ctx.engine.store.clear_into_garbage();
        ctx.engine.lazyfree.free(garbage, true);
    } else {
        ctx.engine.store.clear();
    }
    // The clients blocked on keys that are gone try again, as after a DEL (Redis's
    // `signalDeletedKeyAsReady`): a group reader answers NOGROUP, the others wait on.
    ctx.engine.blocked.signal_where(|_| true);
    // In a cluster, replication messages of writes from before the flush may still be on
    // their way: they must not bring keys back (a single node receives none). The node that
    // ran FLUSHALL then raises every node's floor to the greatest one (`cluster.floor`);
    // FLUSHDB raises its database's only (another database's keys may arrive here later).
    if is(&args[0], "FLUSHDB") {
        ctx.engine
            .store
            .raise_db_floor(ctx.session.db, ctx.now_ms << 12);
    } else {
        ctx.engine.store.raise_floor(ctx.now_ms << 12);
    }
    Reply::ok()
}

/// `cluster.floor <version> [db]` (internal: the second step of a cluster's FLUSHALL, or of
/// a FLUSHDB with the database): raises this node's version floor (every database's, or
/// `db`'s) and clocks to at least `version` and answers the floor.
pub fn floor(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let v = match int_arg(&args[1]) {
        Ok(v) if v >= 0 => v as u64,
        Ok(_) => return err(super::ERR_NOT_INTEGER),
        Err(e) => return e,
    };
    let floor = match args.get(2).map(|a| int_arg(a)) {
        None => ctx.engine.store.raise_floor(v),
        Some(Ok(db)) if (0..db::DATABASES).contains(&db) => {
            ctx.engine.store.raise_db_floor(db as u8, v)
        }
        Some(Ok(_)) => return err(db::ERR_DB_RANGE),
        Some(Err(e)) => return e,
    };
    Reply::Int(floor.min(i64::MAX as u64) as i64)
}

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Print this help.",
];

/// OBJECT ENCODING's answer for a string value, by Redis's rules: a value as SET stores it
/// is `int` when it is a decimal that fits an i64, up to 44 bytes `embstr`, else `raw`; one
/// `edited` in place since (APPEND, SETRANGE, the bit commands, HyperLogLogs) is `raw`.
pub(super) fn encoding(value: &[u8], edited: bool) -> &'static str {
    if edited {
        "raw"
    } else if value.len() <= 20 && super::parse_i64(value).is_some() {
        "int"
    } else if value.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

/// Redis's `OBJ_SHARED_INTEGERS`: the integers it keeps one shared object of.
const SHARED_INTEGERS: i64 = 10_000;

pub fn object(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    if &sub[..] == b"help" {
        return super::conn::help_reply(OBJECT_HELP);
    }
    if !matches!(&sub[..], b"encoding" | b"freq" | b"idletime" | b"refcount") {
        return super::unknown_subcommand("object", &args[1]);
    }
    if args.len() != 3 {
        return super::wrong_arity(&format!("object|{}", String::from_utf8_lossy(&sub)));
    }
    let lfu = matches!(
        ctx.engine.store.policy(),
        shoal_store::EvictionPolicy::AllKeysLfu | shoal_store::EvictionPolicy::VolatileLfu
    );
    let (store, now) = (&ctx.engine.store, ctx.now_ms);
    let seen = store.read(&args[2], now, Access::Count, |e| {
        e.map(|e| {
            let small_int = e.coll.is_none()
                && encoding(e.value, e.edited) == "int"
                && super::parse_i64(e.value).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n));
            (
                e.coll
                    .map_or_else(|| encoding(e.value, e.edited), Collection::encoding),
                e.access,
                small_int,
            )
        })
    });
    let Some((enc, access, small_int)) = seen else {
        return Reply::Nil;
    };
    // Redis shares the integers 0..9999 (one object, refcount INT_MAX) unless an LRU or LFU
    // policy with a memory limit needs each value's own access time.
    let lru_or_lfu = matches!(
        store.policy(),
        shoal_store::EvictionPolicy::AllKeysLru
            | shoal_store::EvictionPolicy::VolatileLru
            | shoal_store::EvictionPolicy::AllKeysLfu
            | shoal_store::EvictionPolicy::VolatileLfu
    );
    let shared = small_int && (store.maxmemory() == 0 || !lru_or_lfu);
    match &sub[..] {
        b"encoding" => Reply::bulk(enc),
        b"refcount" if shared => Reply::Int(i64::from(i32::MAX)),
        b"refcount" => Reply::Int(1),
        b"freq" if !lfu => err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."),
        b"freq" => Reply::Int(i64::from(store.lfu_frequency(access, now))),
        _ if lfu => err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."),
        _ => Reply::Int((store.idle_ms(access, now) / 1000) as i64),
    }
}

const MEMORY_HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value (Shoal: what the key counts for",
    "    in used_memory and maxmemory).",
    "HELP",
    "    Print this help.",
];

pub fn memory(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    match &sub[..] {
        b"help" => super::conn::help_reply(MEMORY_HELP),
        b"stats" if args.len() == 2 => memory_stats(ctx.engine),
        b"doctor" if args.len() == 2 => Reply::Verbatim(memory_doctor(ctx.engine).into()),
        // Shoal does not print jemalloc's report; Redis says this for other allocators.
        b"malloc-stats" if args.len() == 2 => Reply::Verbatim(
            "Stats not supported for the current allocator"
                .to_string()
                .into(),
        ),
        // The allocator returns pages on its own schedule (Redis asks jemalloc to purge).
        b"purge" if args.len() == 2 => Reply::ok(),
        b"stats" | b"doctor" | b"malloc-stats" | b"purge" => {
            super::wrong_arity(&format!("memory|{}", String::from_utf8_lossy(&sub)))
        }
        b"usage" => {
            if args.len() < 3 {
                return super::wrong_arity("memory|usage");
            }
            // `SAMPLES n`, as often as given; a negative count is a syntax error, as in
            // Redis (the count changes nothing here: the size is the key's own count).
            let mut rest = args[3..].chunks(2);
            for pair in &mut rest {
                match pair {
                    [k, v] if is(k, "SAMPLES") => {
                        if tri!(int_arg(v)) < 0 {
                            return err(ERR_SYNTAX);
                        }
                    }
                    _ => return err(ERR_SYNTAX),
                }
            }
            ctx.engine
                .store
                .read(&args[2], ctx.now_ms, Access::Peek, |e| {
                    e.map_or(Reply::Nil, |e| Reply::Int(e.charge as i64))
                })
        }
        _ => super::unknown_subcommand("memory", &args[1]),
    }
}

/// The figures MEMORY STATS and MEMORY DOCTOR read, in bytes.
struct MemoryFigures {
    used: u64,
    peak: u64,
    startup: u64,
    clients: u64,
    keys: u64,
    dataset: u64,
    rss: u64,
    sample: crate::memory::MemorySample,
}

fn memory_figures(node: &Engine) -> MemoryFigures {
    use std::sync::atomic::Ordering::Relaxed;
    let used = node.used_memory();
    let clients = node
        .clients
        .all()
        .iter()
        .map(|c| {
            let b = &c.buffers;
            // The output as CLIENT LIST shows it: a subscriber's waiting messages too.
            let (obl, _, omem) = b.shown_output();
            b.rbs.load(Relaxed) + obl + omem + b.multi_mem.load(Relaxed)
        })
        .sum();
    let stats = node.store.stats();
    MemoryFigures {
        used,
        peak: node.peak_memory(used),
        startup: node.memory.base_held.load(Relaxed).min(used),
        clients,
        keys: stats.keys,
        dataset: stats.used_memory,
        rss: crate::stats::process_usage().0,
        sample: node.memory.sample().unwrap_or_default(),
    }
}

/// MEMORY STATS: Redis's fields in Redis's order, with Shoal's figures: `startup.allocated`
/// is what the allocator held when the node started, `clients.normal` the client
/// connections' buffers (CLIENT LIST's), `dataset.bytes` what the store counts for its keys;
/// Shoal has no replication backlog, AOF, Lua or functions (0). Without jemalloc's
/// statistics the allocator figures are 0.
fn memory_stats(node: &Engine) -> Reply {
    let m = memory_figures(node);
    let s = m.sample;
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let diff = |a: u64, b: u64| Reply::Int(a as i64 - b as i64);
    let int = |v: u64| Reply::Int(i64::try_from(v).unwrap_or(i64::MAX));
    let overhead = m.startup + m.clients;
    let net = m.used.saturating_sub(m.startup);
    let fields: Vec<(&str, Reply)> = vec![
        ("peak.allocated", int(m.peak)),
        ("total.allocated", int(m.used)),
        ("startup.allocated", int(m.startup)),
        ("replication.backlog", int(0)),
        ("clients.slaves", int(0)),
        ("clients.normal", int(m.clients)),
        ("cluster.links", int(0)),
        ("aof.buffer", int(0)),
        ("lua.caches", int(0)),
        ("functions.caches", int(0)),
        ("overhead.total", int(overhead)),
        ("keys.count", int(m.keys)),
        (
            "keys.bytes-per-key",
            int(net.checked_div(m.keys).unwrap_or(0)),
        ),
        ("dataset.bytes", int(m.dataset)),
        (
            "dataset.percentage",
            Reply::Double(ratio(m.dataset, net) * 100.0),
        ),
        (
            "peak.percentage",
            Reply::Double(ratio(m.used, m.peak) * 100.0),
        ),
        ("allocator.allocated", int(s.allocated)),
        ("allocator.active", int(s.active)),
        ("allocator.resident", int(s.resident)),
        (
            "allocator-fragmentation.ratio",
            Reply::Double(ratio(s.active, s.allocated)),
        ),
        ("allocator-fragmentation.bytes", diff(s.active, s.allocated)),
        (
            "allocator-rss.ratio",
            Reply::Double(ratio(s.resident, s.active)),
        ),
        ("allocator-rss.bytes", diff(s.resident, s.active)),
        (
            "rss-overhead.ratio",
            Reply::Double(ratio(m.rss, s.resident)),
        ),
        ("rss-overhead.bytes", diff(m.rss, s.resident)),
        ("fragmentation", Reply::Double(ratio(m.rss, m.used))),
        ("fragmentation.bytes", diff(m.rss, m.used)),
    ];
    Reply::Map(
        fields
            .into_iter()
            .map(|(k, v)| (Reply::bulk(k), v))
            .collect(),
    )
}

/// MEMORY DOCTOR: Redis's answer for an instance using under 5 MB; otherwise the issues
/// Redis looks for that apply to Shoal (a peak well above the present use, high
/// fragmentation, large client buffers), or Redis's all-clear.
fn memory_doctor(node: &Engine) -> String {
    let m = memory_figures(node);
    if m.used < 5 << 20 {
        return "Hi Sam, this instance is empty or is using very little memory, my issues \
                detector can't be used in these conditions. Please, leave for your mission on \
                Earth and fill it with some data. The new Sam and I will be back to our \
                programming as soon as I finished rebooting.\n"
            .into();
    }
    let mut issues = Vec::new();
    if m.peak as f64 > m.used as f64 * 1.5 {
        issues.push(format!(
            " * Peak memory: In the past this instance used more than 150% the memory that is \
             currently using ({} bytes at peak, {} now). Memory is returned to the system \
             lazily, so RSS can stay high.",
            m.peak, m.used
        ));
    }
    if m.rss as f64 > m.used as f64 * 1.4 && m.rss > m.used + (10 << 20) {
        issues.push(format!(
            " * High total RSS: This instance has a memory fragmentation and RSS overhead \
             greater than 1.4 ({:.2}): eviction keeps the allocator's pages under maxmemory \
             too (see Memory in the README).",
            m.rss as f64 / m.used as f64
        ));
    }
    if m.keys > 0 && m.clients > m.used / 2 {
        issues.push(format!(
            " * Big client buffers: The client connections hold {} bytes, more than half of \
             the memory used. Check CLIENT LIST for clients with large omem or qbuf.",
            m.clients
        ));
    }
    if issues.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account \
                for what occurs on this base.\n"
            .into();
    }
    format!(
        "Sam, I detected a few issues in this Redis instance memory implants:\n\n{}\n\nI'm \
         here to keep you safe, Sam. I want to help you.\n",
        issues.join("\n\n")
    )
}

// ---- MIGRATE -------------------------------------------------------------------------

/// MIGRATE's keys, as positions in `args` (`first..end`): the key argument, or with the KEYS
/// option every argument after it (Redis's `migrateGetKeys`: AUTH's and AUTH2's arguments
/// are skipped on the way; KEYS with a key argument that is not empty names none, an empty
/// range).
pub fn migrate_keys(args: &[Bytes]) -> (usize, usize) {
    let mut i = 6;
    while i < args.len() {
        let a = &args[i];
        if is(a, "KEYS") {
            if !args[3].is_empty() {
                return (0, 0);
            }
            return (i + 1, args.len());
        } else if is(a, "AUTH") {
            i += 1;
        } else if is(a, "AUTH2") {
            i += 2;
        }
        i += 1;
    }
    (3, 4.min(args.len()))
}

/// MIGRATE's arguments as the slow log and MONITOR show them: AUTH's and AUTH2's passwords
/// (and AUTH2's user name) `(redacted)`, as Redis shows them.
pub fn migrate_redacted(args: &[Bytes]) -> Vec<Bytes> {
    let mut shown = args.to_vec();
    let mut i = 6;
    while i < shown.len() {
        let hidden = if is(&shown[i], "KEYS") {
            break;
        } else if is(&shown[i], "AUTH") {
            1
        } else if is(&shown[i], "AUTH2") {
            2
        } else {
            0
        };
        for a in shown.iter_mut().skip(i + 1).take(hidden) {
            *a = Bytes::from_static(b"(redacted)");
        }
        i += hidden + 1;
    }
    shown
}

/// Longest reply line MIGRATE reads from its target (as Redis's).
const MIGRATE_LINE: usize = 1024;

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2
/// username password] [KEYS key ...]: sends the keys to another Redis (or Shoal) as
/// RESTOREs, over a connection of its own, and deletes those it took unless COPY, as
/// Redis's `migrateCommand` (its checks, replies and one retry after a broken connection).
/// Like Redis's, it holds its thread until the target answered or `timeout` ms passed.
pub fn migrate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (mut copy, mut replace) = (false, false);
    let mut auth: Option<(Option<&Bytes>, &Bytes)> = None;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let a = &args[j];
        if is(a, "COPY") {
            copy = true;
        } else if is(a, "REPLACE") {
            replace = true;
        } else if is(a, "AUTH") && more >= 1 {
            auth = Some((None, &args[j + 1]));
            j += 1;
        } else if is(a, "AUTH2") && more >= 2 {
            auth = Some((Some(&args[j + 1]), &args[j + 2]));
            j += 2;
        } else if is(a, "KEYS") {
            if !args[3].is_empty() {
                return err(
                    "ERR When using MIGRATE KEYS option, the key argument must be set \
                     to the empty string",
                );
            }
            break;
        } else {
            return err(ERR_SYNTAX);
        }
        j += 1;
    }
    let (Some(timeout), Some(dbid)) = (super::parse_i64(&args[5]), super::parse_i64(&args[4]))
    else {
        return err(super::ERR_NOT_INTEGER);
    };
    let timeout =
        std::time::Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let (first, end) = migrate_keys(args);
    // The keys that are here, each with its TTL and DUMP payload.
    let store = &ctx.engine.store;
    let now = ctx.now_ms;
    let found: Vec<(&Bytes, u64, Vec<u8>)> = args[first..end]
        .iter()
        .filter_map(|k| {
            store.read(k, now, Access::Read, |e| {
                e.map(|e| {
                    let payload = crate::rdb::dump_entry(&e);
                    let ttl = e.expire_at_ms.map_or(0, |at| at.saturating_sub(now).max(1));
                    (k, ttl, payload)
                })
            })
        })
        .collect();
    if found.is_empty() {
        return Reply::Simple("NOKEY".into());
    }
    // AUTH, SELECT, then one RESTORE a key, sent at once; the replies read in turn.
    let mut request = Vec::new();
    let mut encode = |parts: &[&[u8]]| {
        request.extend_from_slice(format!("*{}\r\n", parts.len()).as_bytes());
        for p in parts {
            request.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
            request.extend_from_slice(p);
            request.extend_from_slice(b"\r\n");
        }
    };
    match auth {
        Some((Some(user), pass)) => encode(&[b"AUTH", user, pass]),
        Some((None, pass)) => encode(&[b"AUTH", pass]),
        None => {}
    }
    encode(&[b"SELECT", dbid.to_string().as_bytes()]);
    for (key, ttl, payload) in &found {
        // The key as the client named it (without its database's prefix here).
        let name = db::split_key(key).1;
        let ttl = ttl.to_string();
        let mut parts: Vec<&[u8]> = vec![b"RESTORE", name, ttl.as_bytes(), payload];
        if replace {
            parts.push(b"REPLACE");
        }
        encode(&parts);
    }
    let header = usize::from(auth.is_some()) + 1;
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    let port: u16 = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // One retry when the connection broke before any RESTORE was answered, but not after
    // a timeout (Redis retries a cached connection the target may have closed).
    let mut outcome = migrate_exchange(&host, port, &request, header, found.len(), timeout);
    let retry = match &outcome {
        Err(MigrateIo::Write { timed_out }) => !timed_out,
        Err(MigrateIo::Read { timed_out, lines }) => !timed_out && lines.len() <= header,
        _ => false,
    };
    if retry {
        outcome = migrate_exchange(&host, port, &request, header, found.len(), timeout);
    }
    let (lines, failure) = match outcome {
        Ok(lines) => (lines, None),
        Err(MigrateIo::Connect) => {
            return err("IOERR error or timeout connecting to the client");
        }
        Err(MigrateIo::Write { .. }) => {
            return err("IOERR error or timeout writing to target instance");
        }
        Err(MigrateIo::Read { lines, .. }) => (
            lines,
            Some(err("IOERR error or timeout reading to target instance")),
        ),
    };
    // The first error the target answered (AUTH's, SELECT's, then a RESTORE's) is the
    // reply; each key whose RESTORE was answered OK goes (unless COPY) all the same.
    let (head, restores) = lines.split_at(header.min(lines.len()));
    let target_error = head
        .iter()
        .chain(restores)
        .find(|l| l.first() == Some(&b'-'))
        .map(|l| {
            Reply::error(format!(
                "ERR Target instance replied with error: {}",
                String::from_utf8_lossy(&l[1..])
            ))
        });
    let head_failed = head.iter().any(|l| l.first() == Some(&b'-'));
    if !copy && !head_failed {
        for ((key, _, _), line) in found.iter().zip(restores) {
            if line.first() != Some(&b'-') && store.remove(key, now) {
                ctx.notify(GENERIC, "del", key);
            }
        }
    }
    target_error.or(failure).unwrap_or_else(Reply::ok)
}

/// How MIGRATE's exchange with its target failed.
enum MigrateIo {
    /// No connection in time (or no such host).
    Connect,
    /// The request could not be sent whole.
    Write { timed_out: bool },
    /// A reply did not come: the lines read before it.
    Read {
        timed_out: bool,
        lines: Vec<Vec<u8>>,
    },
}

/// Connects to `host:port`, sends `request` and reads `header + keys` reply lines, each
/// bounded by [`MIGRATE_LINE`], every step within `timeout`.
fn migrate_exchange(
    host: &str,
    port: u16,
    request: &[u8],
    header: usize,
    keys: usize,
    timeout: std::time::Duration,
) -> Result<Vec<Vec<u8>>, MigrateIo> {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::ToSocketAddrs;
    let timed_out = |e: &std::io::Error| {
        matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        )
    };
    let addr = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or(MigrateIo::Connect)?;
    // Redis connects without waiting and only a connection not made in time fails here; a
    // refused one fails at the write.
    let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| {
        if timed_out(&e) {
            MigrateIo::Connect
        } else {
            MigrateIo::Write { timed_out: false }
        }
    })?;
    let _ = stream.set_nodelay(true);
    stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| stream.set_read_timeout(Some(timeout)))
        .map_err(|_| MigrateIo::Connect)?;
    stream.write_all(request).map_err(|e| MigrateIo::Write {
        timed_out: timed_out(&e),
    })?;
    let mut reader = BufReader::new(stream);
    let mut lines = Vec::with_capacity(header + keys);
    for _ in 0..header + keys {
        let mut line = Vec::new();
        let read = (&mut reader)
            .take(MIGRATE_LINE as u64)
            .read_until(b'\n', &mut line);
        match read {
            Ok(n) if n > 0 && line.ends_with(b"\n") => {
                line.truncate(line.len() - 1);
                if line.ends_with(b"\r") {
                    line.truncate(line.len() - 1);
                }
                lines.push(line);
            }
            Ok(_) => {
                return Err(MigrateIo::Read {
                    timed_out: false,
                    lines,
                })
            }
            Err(e) => {
                return Err(MigrateIo::Read {
                    timed_out: timed_out(&e),
                    lines,
                })
            }
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod migrate_tests {
    use super::{migrate_keys, migrate_redacted};
    use bytes::Bytes;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|a| {
                Bytes::from(if a == "''" {
                    String::new()
                } else {
                    a.to_string()
                })
            })
            .collect()
    }

    #[test]
    fn migrate_finds_its_keys_and_hides_its_passwords() {
        assert_eq!(migrate_keys(&args("MIGRATE h 1 k 0 5")), (3, 4));
        assert_eq!(
            migrate_keys(&args("MIGRATE h 1 '' 0 5 AUTH KEYS KEYS a b")),
            (9, 11),
            "AUTH's password is no keyword"
        );
        assert_eq!(migrate_keys(&args("MIGRATE h 1 k 0 5 KEYS a")), (0, 0));
        let shown = migrate_redacted(&args("MIGRATE h 1 '' 0 5 AUTH2 u p COPY KEYS AUTH x"));
        let shown: Vec<&[u8]> = shown.iter().map(|b| &b[..]).collect();
        assert_eq!(
            shown,
            [
                &b"MIGRATE"[..],
                b"h",
                b"1",
                b"",
                b"0",
                b"5",
                b"AUTH2",
                b"(redacted)",
                b"(redacted)",
                b"COPY",
                b"KEYS",
                b"AUTH",
                b"x"
            ]
        );
    }
}
