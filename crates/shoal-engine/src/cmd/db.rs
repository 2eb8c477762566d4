//! Numbered databases (SELECT, MOVE, SWAPDB, FLUSHDB, COPY ... DB) over one keyspace.
//!
//! Database 0 holds keys as they are; a key of database `n > 0` is stored under a 4-byte
//! prefix, `FF DB 00 n`, added to every key argument of a command (at its key positions)
//! before the command runs ([`rewrite`]), and taken off the keys a command lists (KEYS,
//! SCAN, RANDOMKEY). One store, so `maxmemory`, eviction, expiry and the byte accounting
//! cover every database at once, as in Redis; what costs more than in Redis: DBSIZE,
//! FLUSHDB, SWAPDB and INFO keyspace walk the keyspace once numbered databases are in use
//! (they are O(1) or O(keys of one database) in Redis). Keys of database 0 that begin with
//! the prefix's bytes are taken for another database's: the prefix is reserved.
//!
//! In a cluster every node knows the databases: a stored key has its client key's slot
//! (`shoal_store::key_slot`), so it lives with the same copies in every database, and a
//! forwarded command carries its database. SWAPDB, which would move every key of two
//! databases at once on every node, answers Redis Cluster's error there; so do SELECT,
//! MOVE and COPY ... DB on the cluster-client port, where Redis Cluster has database 0
//! only.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use shoal_resp::Reply;

use super::{err, tri, CommandSpec, Ctx};

/// Databases on a single node (Redis's default `databases`).
pub const DATABASES: i64 = 16;

pub const ERR_DB_RANGE: &str = "ERR DB index is out of range";

pub use shoal_store::{split_key, stored_key};

/// The database a queued `SELECT` (its arguments) moves a transaction to, from `db`, with
/// SELECT's own checks (a refused SELECT leaves it): EXEC's keys are each in the database
/// selected when their command runs.
pub fn after_select(args: &[Bytes], db: u8, redis_cluster: bool) -> u8 {
    match args.get(1).and_then(|a| super::parse_i64(a)) {
        Some(n) if (0..DATABASES).contains(&n) && (n == 0 || !redis_cluster) => n as u8,
        _ => db,
    }
}

/// The keys a command of `spec` names, as stored for database `db`: those at its key
/// positions, and for MOVE and COPY ... DB the key it writes in the other database (the
/// cluster replicates these and fetches them during a hand-off).
pub fn stored_keys(spec: &CommandSpec, args: &[Bytes], db: u8) -> Vec<Bytes> {
    let mut keys: Vec<Bytes> = spec
        .key_positions(args)
        .map(|i| stored_key(db, &args[i]))
        .collect();
    let db_arg = |a: &Bytes| {
        super::parse_i64(a)
            .filter(|n| (0..DATABASES).contains(n))
            .map(|n| n as u8)
    };
    match spec.name {
        "move" if args.len() == 3 => {
            if let Some(to) = db_arg(&args[2]) {
                keys.push(stored_key(to, &args[1]));
            }
        }
        "sort" | "georadius" | "georadiusbymember" => {
            keys.extend(store_key(spec, args).map(|k| stored_key(db, k)));
        }
        "copy" if args.len() > 4 => {
            // The last DB option counts, as COPY reads them.
            let mut to = None;
            let mut i = 3;
            while i < args.len() {
                if super::is(&args[i], "DB") && i + 1 < args.len() {
                    to = db_arg(&args[i + 1]);
                    i += 2;
                } else {
                    i += 1;
                }
            }
            if let (Some(to), Some(dst)) = (to, keys.get_mut(1)) {
                *dst = stored_key(to, &args[2]);
            }
        }
        _ => {}
    }
    keys
}

/// The destination a request names outside its row's key specification: SORT's STORE (the
/// last one counts, as SORT reads them) and GEORADIUS[BYMEMBER]'s STORE or STOREDIST (the
/// last one counts). A cluster places it with the other keys (`plan`) and replicates it.
pub fn store_key<'a>(spec: &CommandSpec, args: &'a [Bytes]) -> Option<&'a Bytes> {
    match spec.name {
        "sort" => args
            .windows(2)
            .skip(2)
            .filter(|w| super::is(&w[0], "STORE"))
            .last()
            .map(|w| &w[1]),
        "georadius" | "georadiusbymember" => super::geo::store_key(args),
        _ => None,
    }
}

/// True for a request of a write command that writes nothing this time: SORT, GEORADIUS
/// and GEORADIUSBYMEMBER without STORE (Redis's read forms of them); the cluster then has
/// no key state to replicate.
pub fn writes_nothing(spec: &CommandSpec, args: &[Bytes]) -> bool {
    // Their STORE key is the one [`stored_keys`] adds to the key positions' keys.
    matches!(spec.name, "sort" | "georadius" | "georadiusbymember")
        && stored_keys(spec, args, 0).len() == spec.key_positions(args).count()
}

/// The arguments of `spec` with every key argument stored for database `db` (`db > 0`), or
/// `None` when the prefix would push a key past what the store holds.
pub fn rewrite(spec: &CommandSpec, args: &[Bytes], db: u8) -> Option<Vec<Bytes>> {
    let mut out = args.to_vec();
    for i in spec.key_positions(args) {
        if args[i].len() > shoal_store::MAX_KEY_LEN - 4 {
            return None;
        }
        out[i] = stored_key(db, &args[i]);
    }
    Some(out)
}

/// An `int` argument as Redis's `getIntFromObjectOrReply` reads it: `msg` (or Redis's
/// texts) when it is not an integer or not within 32 bits.
fn int32_arg(arg: &[u8], msg: Option<&'static str>) -> Result<i64, Reply> {
    let n = match super::parse_i64(arg) {
        Some(n) => n,
        None => return Err(err(msg.unwrap_or(super::ERR_NOT_INTEGER))),
    };
    if i32::try_from(n).is_err() {
        return Err(err(msg.unwrap_or(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        )));
    }
    Ok(n)
}

/// A database number argument: `Ok(n)` within `0..DATABASES`, else Redis's errors.
fn db_arg(arg: &[u8]) -> Result<u8, Reply> {
    let n = int32_arg(arg, None)?;
    if !(0..DATABASES).contains(&n) {
        return Err(err(ERR_DB_RANGE));
    }
    Ok(n as u8)
}

/// SELECT index.
pub fn select(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let db = tri!(int32_arg(&args[1], None));
    if ctx.session.redis_cluster && db != 0 {
        return err("ERR SELECT is not allowed in cluster mode");
    }
    if !(0..DATABASES).contains(&db) {
        return err(ERR_DB_RANGE);
    }
    if db != 0 {
        ctx.engine.numbered_dbs.store(true, Relaxed);
    }
    ctx.session.db = db as u8;
    ctx.session.info.db.store(db as u8, Relaxed);
    Reply::ok()
}

/// MOVE key db: the key (its value and TTL) into database `db` when it is not there.
pub fn move_key(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if ctx.session.redis_cluster {
        return err("ERR MOVE is not allowed in cluster mode");
    }
    let to = tri!(db_arg(&args[2]));
    let (from, key) = split_key(&args[1]);
    if to == from {
        return err("ERR source and destination objects are the same");
    }
    ctx.engine.numbered_dbs.store(true, Relaxed);
    let dst = stored_key(to, key);
    if super::keys::exists_now(ctx, &dst) {
        return Reply::Int(0);
    }
    let Some(v) = super::keys::take(ctx, &args[1], true) else {
        return Reply::Int(0);
    };
    super::keys::put(ctx, &dst, v);
    ctx.notify(crate::notify::GENERIC, "move_from", &args[1]);
    ctx.notify(crate::notify::GENERIC, "move_to", &dst);
    Reply::Int(1)
}

/// Calls `f` with every stored key of database `db` (their bytes as stored).
pub fn each_key_of(ctx: &Ctx<'_>, db: u8, f: impl FnMut(&[u8])) {
    walk(ctx, db, ctx.now_ms, f);
}

/// Calls `f` with every key of database `db` live at `now_ms` (0: every stored key).
fn walk(ctx: &Ctx<'_>, db: u8, now_ms: u64, mut f: impl FnMut(&[u8])) {
    let mut cursor = 0;
    loop {
        cursor = ctx.engine.store.scan(cursor, 4096, now_ms, |k, _| {
            if split_key(k).0 == db {
                f(k);
            }
        });
        if cursor == 0 {
            return;
        }
    }
}

/// Every stored key of database `db` (copied: FLUSHDB and SWAPDB change them after).
pub fn keys_of(ctx: &Ctx<'_>, db: u8) -> Vec<Bytes> {
    let mut out = Vec::new();
    each_key_of(ctx, db, |k| out.push(Bytes::copy_from_slice(k)));
    out
}

/// How many keys database `db` holds (a walk of the keyspace, nothing copied).
pub fn count_of(ctx: &Ctx<'_>, db: u8) -> usize {
    let mut n = 0;
    each_key_of(ctx, db, |_| n += 1);
    n
}

/// How many keys database `db` stores, expired ones not yet reclaimed included, as Redis's
/// DBSIZE counts them (and as DBSIZE of database 0 counts, from the store's total).
pub fn stored_count_of(ctx: &Ctx<'_>, db: u8) -> usize {
    let mut n = 0;
    walk(ctx, db, 0, |_| n += 1);
    n
}

/// A random key of database `db`: random keys of the keyspace until one is there, then a
/// random one of a walk (so a database with few keys among many still answers).
pub fn random_key_of(ctx: &Ctx<'_>, db: u8) -> Option<Bytes> {
    for _ in 0..64 {
        let k = ctx.engine.store.random_key(ctx.now_ms)?;
        if split_key(&k).0 == db {
            return Some(Bytes::copy_from_slice(split_key(&k).1));
        }
    }
    let n = count_of(ctx, db);
    if n == 0 {
        return None;
    }
    let mut pick = super::random_below(n);
    let mut found = None;
    each_key_of(ctx, db, |k| {
        if pick == 0 && found.is_none() {
            found = Some(Bytes::copy_from_slice(split_key(k).1));
        }
        pick = pick.wrapping_sub(1);
    });
    found
}

/// SWAPDB index1 index2: every key of the one database moves to the other and back (a walk
/// of both databases' keys, where Redis swaps two pointers).
pub fn swapdb(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if ctx.host.cluster().is_some() {
        return err("ERR SWAPDB is not allowed in cluster mode");
    }
    let a = tri!(int32_arg(&args[1], Some("ERR invalid first DB index")));
    let b = tri!(int32_arg(&args[2], Some("ERR invalid second DB index")));
    if !(0..DATABASES).contains(&a) || !(0..DATABASES).contains(&b) {
        return err(ERR_DB_RANGE);
    }
    let (a, b) = (a as u8, b as u8);
    if a == b {
        return Reply::ok();
    }
    ctx.engine.numbered_dbs.store(true, Relaxed);
    let mut moved = Vec::new();
    for (from, to) in [(a, b), (b, a)] {
        for k in keys_of(ctx, from) {
            if let Some(v) = super::keys::take(ctx, &k, true) {
                moved.push((stored_key(to, split_key(&k).1), v));
            }
        }
    }
    // No key is new, as Redis swaps the databases' tables: no `new` event.
    shoal_store::without_noting(|| {
        for (k, v) in moved {
            super::keys::put(ctx, &k, v);
        }
    });
    // Clients blocked in either database may have something to pop now (as in Redis).
    ctx.engine
        .blocked
        .signal_where(|k| matches!(split_key(k).0, d if d == a || d == b));
    Reply::ok()
}

/// (keys, keys with a TTL) per database, for INFO keyspace: database 0 only until numbered
/// databases are used, then a walk of the keyspace.
pub fn keyspace(ctx: &Ctx<'_>) -> Vec<(u8, u64, u64)> {
    let store = &ctx.engine.store;
    if !ctx.engine.numbered_dbs() {
        let stats = store.stats();
        return vec![(0, stats.keys, stats.volatile_keys)];
    }
    let mut counts = [(0u64, 0u64); DATABASES as usize];
    let mut cursor = 0;
    loop {
        cursor = store.scan(cursor, 4096, ctx.now_ms, |k, e| {
            let (db, _) = split_key(k);
            if let Some(c) = counts.get_mut(usize::from(db)) {
                c.0 += 1;
                c.1 += u64::from(e.expire_at_ms.is_some());
            }
        });
        if cursor == 0 {
            break;
        }
    }
    counts
        .iter()
        .enumerate()
        .map(|(db, &(keys, volatile))| (db as u8, keys, volatile))
        .collect()
}

/// `cluster.keyspace` (internal, a fan-out's part for INFO keyspace in a cluster): keys and
/// keys with a TTL of each database, in the fan-out's scope, as 32 integers (database 0's
/// two first). Without numbered databases here, database 0's from the slots' counts (no
/// walk; the TTL count then estimated from this node's share of volatile keys).
pub fn scoped_keyspace(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let store = &ctx.engine.store;
    let in_scope = |slot: u16| ctx.scope.is_none_or(|s| s.includes(slot));
    let mut counts = [(0u64, 0u64); DATABASES as usize];
    if ctx.engine.numbered_dbs() {
        for slot in (0..shoal_store::SLOTS).filter(|&s| in_scope(s)) {
            if store.count_in_slot(slot) == 0 {
                continue;
            }
            store.for_each_in_slot(slot, ctx.now_ms, |k, e| {
                let c = &mut counts[usize::from(split_key(k).0)];
                c.0 += 1;
                c.1 += u64::from(e.expire_at_ms.is_some());
            });
        }
    } else {
        let keys: usize = (0..shoal_store::SLOTS)
            .filter(|&s| in_scope(s))
            .map(|s| store.count_in_slot(s))
            .sum();
        let stats = store.stats();
        let volatile = match stats.keys {
            0 => 0,
            all => {
                (u128::from(keys as u64) * u128::from(stats.volatile_keys) / u128::from(all)) as u64
            }
        };
        counts[0] = (keys as u64, volatile);
    }
    Reply::Array(
        counts
            .iter()
            .flat_map(|&(k, v)| [Reply::Int(k as i64), Reply::Int(v as i64)])
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_keys_split_back() {
        assert_eq!(&stored_key(0, b"k")[..], b"k");
        let k = stored_key(9, b"k");
        assert_eq!(split_key(&k), (9, &b"k"[..]));
        assert_eq!(split_key(b"plain"), (0, &b"plain"[..]));
        assert_eq!(split_key(&[0xFF, 0xDB, 0x00]), (0, &[0xFF, 0xDB, 0x00][..]));
        assert_eq!(split_key(&[0xFF, 0xDB, 0x00, 0, b'k']).0, 0);
    }

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    /// Exactly the key arguments get the database's prefix, also past the 64th argument
    /// (MSET's keys are every other one) and for a command whose keys are not all first.
    #[test]
    fn rewrite_prefixes_exactly_the_keys() {
        let mset = super::super::lookup(b"mset").unwrap();
        let mut words = vec!["MSET".to_string()];
        for i in 0..100 {
            words.push(format!("k{i}"));
            words.push(format!("v{i}"));
        }
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let given = args(&words);
        let out = rewrite(mset, &given, 3).unwrap();
        assert_eq!(out.len(), given.len());
        for (i, (o, a)) in out.iter().zip(&given).enumerate() {
            if i % 2 == 1 {
                assert_eq!(o[..], stored_key(3, a)[..], "argument {i}");
            } else {
                assert_eq!(o, a, "argument {i}");
            }
        }
        let zunion = super::super::lookup(b"zunionstore").unwrap();
        let given = args(&["ZUNIONSTORE", "dst", "2", "a", "b", "WEIGHTS", "1", "2"]);
        let out = rewrite(zunion, &given, 1).unwrap();
        let keyed: Vec<bool> = out.iter().zip(&given).map(|(o, a)| o != a).collect();
        assert_eq!(keyed, [false, true, false, true, true, false, false, false]);
    }

    #[test]
    fn rewrite_refuses_a_key_the_prefix_makes_too_long() {
        let get = super::super::lookup(b"get").unwrap();
        // Zeroed, so the gibibyte is never touched; refused before anything is copied.
        let long = Bytes::from(vec![0u8; shoal_store::MAX_KEY_LEN - 3]);
        assert!(rewrite(get, &[Bytes::from_static(b"GET"), long], 1).is_none());
        let set = super::super::lookup(b"set").unwrap();
        let ok = rewrite(set, &args(&["SET", "k", "v"]), 1).unwrap();
        assert_eq!(ok[1][..], stored_key(1, b"k")[..]);
    }
}
