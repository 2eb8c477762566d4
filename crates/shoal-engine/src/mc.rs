//! Memcached's semantics on the store: executes the commands `shoal-memcache` parses on the
//! same store the Redis protocol uses, so both see one keyspace. The front end that reads
//! them off a connection is `shoal_node::memcache`.
//!
//! How the two protocols meet: a value is the same bytes in both. Memcached's 32-bit client
//! flags are kept beside the value (a Redis `SET` resets them to 0; `APPEND`, `SETRANGE`,
//! `INCR` and the like keep them), and a key's CAS unique is its store version, which every
//! change of the key (from either protocol) replaces. Expiry times follow Memcached: up to
//! 30 days is relative, larger is a Unix time, negative is already expired.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::{Bytes, BytesMut};
use shoal_memcache::reply::{self, Status};
use shoal_memcache::{Command, MetaFlags, StoreMode};
use shoal_store::{Access, PREFETCH_MAX};

use crate::engine::Engine;
use crate::prefixes::Op;

/// The Memcached release whose protocol behaviour Shoal follows (`version`, `stats`).
pub const MEMCACHED_VERSION: &str = "1.6.21";

/// Memcached's boundary between relative and absolute expiry times.
const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;

pub fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// A Memcached exptime as the store's absolute expiry: `None` = never; a time at or before
/// `now` (negative, or an absolute time in the past) makes the store drop the item.
pub fn expire_at(exptime: i64, now_ms: u64) -> Option<u64> {
    match exptime {
        0 => None,
        e if e < 0 => Some(0),
        e if e > REALTIME_MAXDELTA => Some((e as u64).saturating_mul(1000)),
        e => Some(now_ms + e as u64 * 1000),
    }
}

/// The request limits of the Memcached protocol on `node` (its `memcache-max-item-size`).
pub fn limits(node: &Engine) -> shoal_memcache::Limits {
    node.with_settings(limits_of)
}

/// The request limits of the Memcached protocol under `settings`.
pub fn limits_of(settings: &crate::NodeConfig) -> shoal_memcache::Limits {
    shoal_memcache::Limits {
        max_item_size: usize::try_from(settings.memcache_max_item_size.0).unwrap_or(usize::MAX),
        ..shoal_memcache::Limits::default()
    }
}

/// What the front end does after a command.
pub enum Flow {
    Continue,
    Close,
    /// A multi-key get filled the output: flush, then resume it.
    Paused(PendingGet),
}

/// A get/gets/gat/gats whose reply is being written key by key, so a request naming many
/// large values never holds more than `pause_at` plus one value of reply in memory.
pub struct PendingGet {
    keys: Vec<Bytes>,
    next: usize,
    with_cas: bool,
    touch: Option<i64>,
    /// `lru_crawler metadump` instead: the store scan's cursor to go on from.
    dump: Option<u64>,
}

/// Writes the values of `get.keys[get.next..]`, pausing once the output passes `pause_at`.
pub fn get_keys(
    node: &Engine,
    mut get: PendingGet,
    now: u64,
    out: &mut BytesMut,
    pause_at: usize,
) -> Flow {
    if let Some(cursor) = get.dump {
        return metadump(node, cursor, now, out, pause_at);
    }
    let (store, st) = (&node.store, &node.mc_stats);
    let first = get.next;
    while get.next < get.keys.len() {
        if out.len() >= pause_at {
            return Flow::Paused(get);
        }
        // The next keys' loads start side by side, a batch at a time.
        if (get.next - first).is_multiple_of(PREFETCH_MAX) {
            store.prefetch(get.keys[get.next..].iter().map(|k| &k[..]));
        }
        let key = &get.keys[get.next];
        get.next += 1;
        bump(&st.cmd_get);
        let with_cas = get.with_cas;
        let hit = match get.touch {
            None => read_item(node, key, now, |found| {
                if let Some((flags, cas, value)) = found {
                    reply::value(out, key, flags, value, with_cas.then_some(cas));
                }
            }),
            Some(exptime) => {
                bump(&st.cmd_touch);
                store.write(key, now, |slot| {
                    let Some(value) = slot.value().map(Bytes::copy_from_slice) else {
                        return false;
                    };
                    let flags = slot.flags().unwrap_or(0);
                    // Read before the touch, which drops an item touched to a past time
                    // (libmemcached's -1) and keeps the CAS of any other.
                    let cas = slot.version().unwrap_or(0);
                    slot.note_fetch();
                    slot.set_expire(expire_at(exptime, now));
                    reply::value(out, key, flags, &value, with_cas.then_some(cas));
                    true
                })
            }
        };
        bump(if hit { &st.get_hits } else { &st.get_misses });
        st.prefixes.record(key, Op::Get { hit });
        if get.touch.is_some() {
            bump(if hit {
                &st.touch_hits
            } else {
                &st.touch_misses
            });
        }
    }
    reply::end(out);
    Flow::Continue
}

/// Reads `key` as a Memcached get does: `answer` is given the item's client flags, CAS and
/// value under the key's lock, or `None` (a key of another type than string, written through
/// RESP, reads as a miss); true for a hit.
fn read_item(
    node: &Engine,
    key: &[u8],
    now: u64,
    answer: impl FnOnce(Option<(u32, u64, &[u8])>),
) -> bool {
    node.store.read(key, now, Access::Fetch, |e| {
        let found = e.filter(|e| e.kind == shoal_store::Kind::String);
        let hit = found.is_some();
        answer(found.map(|e| (e.flags, e.version, e.value)));
        hit
    })
}

/// The get of one key a binary GET, GETQ, GETK or GETKQ makes on a single node (memcached's
/// plain get, as the text `get` of one key: counted in `cmd_get` and the hits or misses, and
/// in INFO's keyspace hits and misses; a key of another type reads as a miss): `answer` is
/// given the item's client flags, CAS and value under the key's lock, or `None`. False, with
/// `answer` not called, when a Redis script is running past its threshold (the caller
/// answers [`BUSY`]).
pub fn get_one(
    node: &Engine,
    key: &[u8],
    now: u64,
    answer: impl FnOnce(Option<(u32, u64, &[u8])>),
) -> bool {
    // The keyspace notifications of what the store notes (a key found expired, a miss),
    // published once out of the gate, as `execute` does.
    let hit = node.as_command(|| {
        let busy = || node.running.is_busy();
        let _entered = node.store.enter_unless(&busy)?;
        Some(read_item(node, key, now, answer))
    });
    let Some(hit) = hit else {
        return false;
    };
    let st = &node.mc_stats;
    bump(&st.cmd_get);
    bump(if hit { &st.get_hits } else { &st.get_misses });
    st.prefixes.record(key, Op::Get { hit });
    true
}

fn status(out: &mut BytesMut, noreply: bool, s: Status) {
    if !noreply {
        reply::status(out, s);
    }
}

/// Counts a hit or a miss and answers `found` or NOT_FOUND (unless noreply).
fn outcome(
    out: &mut BytesMut,
    noreply: bool,
    hit: bool,
    (hits, misses): (&AtomicU64, &AtomicU64),
    found: Status,
) {
    bump(if hit { hits } else { misses });
    status(out, noreply, if hit { found } else { Status::NotFound });
}

/// Memcached's answer when memory is full and nothing may be evicted.
const OOM: &[u8] = b"SERVER_ERROR out of memory storing object\r\n";
/// Answers a write refused for want of memory, and counts it.
fn no_memory(node: &Engine, out: &mut BytesMut) {
    bump(&node.mc_stats.store_no_memory);
    out.extend_from_slice(OOM);
}

/// The answer while a Redis script runs past its threshold (`crate::busy`).
pub const BUSY: &[u8] = b"SERVER_ERROR busy: a Redis script is running\r\n";

/// Executes one command, writing its reply to `out`; a multi-key get pauses once `out`
/// holds `pause_at` bytes.
pub fn execute(node: &Engine, cmd: Command, now: u64, out: &mut BytesMut, pause_at: usize) -> Flow {
    // Client-side caching: the keys a Memcached write changes are invalidated as a RESP
    // write's are (flush_all: every key).
    let written = match node.tracker.active().then(|| placement(&cmd)) {
        Some(Placement::Keys { keys, write: true }) => {
            let marks = crate::tracking::marks(&node.store, &keys, now);
            Some((keys, marks))
        }
        Some(Placement::Flush) => Some((Vec::new(), Vec::new())),
        _ => None,
    };
    // The keyspace notifications of what the store notes for it (keys expired, created,
    // missed; a Memcached write publishes no command event of its own).
    let flow = node.as_command(|| run(node, cmd, now, out, pause_at));
    if let Some((keys, marks)) = written {
        let limit = node.with_settings(|s| s.client_output_buffer_limit.pubsub);
        if keys.is_empty() {
            node.tracker.invalidate_all(&node.pubsub, limit);
        } else {
            let changed = crate::tracking::changed(&node.store, keys, marks, now);
            node.tracker
                .invalidate(&changed, 0, None, &node.pubsub, limit);
        }
    }
    flow
}

fn run(node: &Engine, cmd: Command, now: u64, out: &mut BytesMut, pause_at: usize) -> Flow {
    let store = &node.store;
    // Not inside another client's EXEC or script (`shoal_store::gate`); a script past its
    // threshold is answered with an error rather than waited for (`crate::busy`), as the
    // worker serves other connections too.
    let busy = || node.running.is_busy();
    let Some(_entered) = store.enter_unless(&busy) else {
        if !quiet(&cmd) {
            out.extend_from_slice(BUSY);
        }
        return Flow::Continue;
    };
    let st = &node.mc_stats;
    if cmd.is_meta() {
        bump(&st.cmd_meta);
    }
    match cmd {
        Command::Store {
            mode,
            key,
            flags,
            exptime,
            data,
            cas,
            noreply,
        } => {
            bump(&st.cmd_set);
            // Counted before it is tried, as memcached counts it.
            st.prefixes.record(&key, Op::Set);
            if store.maxmemory() > 0 && store.ensure_memory(now).is_err() {
                if !noreply {
                    no_memory(node, out);
                }
                return Flow::Continue;
            }
            let ttl = expire_at(exptime, now);
            let result = store.write(&key, now, |slot| {
                let exists = slot.exists();
                match mode {
                    StoreMode::Set => {}
                    StoreMode::Add if exists => return Status::NotStored,
                    StoreMode::Replace | StoreMode::Append | StoreMode::Prepend if !exists => {
                        return Status::NotStored
                    }
                    // Nothing to append to in a key of another type (a RESP hash), nor past
                    // the item size.
                    StoreMode::Append | StoreMode::Prepend
                        if !joined_fits(node, slot, &key, data.len()) =>
                    {
                        return Status::NotStored
                    }
                    StoreMode::Cas if !exists => return Status::NotFound,
                    StoreMode::Cas if slot.version() != Some(cas) => return Status::Exists,
                    _ => {}
                }
                match mode {
                    StoreMode::Append => {
                        slot.append(&data);
                    }
                    StoreMode::Prepend => slot.modify(|v| {
                        v.splice(0..0, data.iter().copied());
                    }),
                    _ => slot.set_with_flags(&data, ttl, flags),
                }
                Status::Stored
            });
            match (mode, result) {
                (StoreMode::Cas, Status::Stored) => bump(&st.cas_hits),
                (StoreMode::Cas, Status::NotFound) => bump(&st.cas_misses),
                (StoreMode::Cas, Status::Exists) => bump(&st.cas_badval),
                _ => {}
            }
            if result == Status::Stored {
                bump(&st.total_items);
            }
            status(out, noreply, result);
        }
        Command::Get {
            keys,
            with_cas,
            touch,
        } => {
            let get = PendingGet {
                keys,
                next: 0,
                with_cas,
                touch,
                dump: None,
            };
            return get_keys(node, get, now, out, pause_at);
        }
        Command::Delete { key, noreply } => {
            st.prefixes.record(&key, Op::Delete);
            let deleted = store.remove(&key, now);
            let counters = (&st.delete_hits, &st.delete_misses);
            outcome(out, noreply, deleted, counters, Status::Deleted);
        }
        Command::Arith {
            incr,
            key,
            delta,
            noreply,
        } => {
            let result = store.write(&key, now, |slot| arith(slot, incr, delta));
            let (hits, misses) = st.arith_counters(incr);
            match result {
                Ok(Some(n)) => {
                    bump(hits);
                    if !noreply {
                        reply::number(out, n);
                    }
                }
                Ok(None) => {
                    bump(misses);
                    status(out, noreply, Status::NotFound);
                }
                Err(()) if noreply => {}
                Err(()) => out.extend_from_slice(
                    b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
                ),
            }
        }
        Command::Touch {
            key,
            exptime,
            noreply,
        } => {
            bump(&st.cmd_touch);
            // A key of another type (a RESP collection) is not found, and keeps its TTL.
            // memcached's touch fetches the item (`mg`'s `h` says so after it).
            let touched = store.write(&key, now, |slot| {
                let touched = slot.value().is_some() && slot.set_expire(expire_at(exptime, now));
                if touched {
                    slot.note_fetch();
                }
                touched
            });
            let counters = (&st.touch_hits, &st.touch_misses);
            outcome(out, noreply, touched, counters, Status::Touched);
        }
        Command::FlushAll { delay, noreply } => {
            bump(&st.cmd_flush);
            // Counted, then refused, as memcached's -F.
            if node.with_settings(|s| s.memcache_disable_flush_all) {
                if !noreply {
                    out.extend_from_slice(b"CLIENT_ERROR flush_all not allowed\r\n");
                }
                return Flow::Continue;
            }
            flush_all(node, delay, now);
            status(out, noreply, Status::Ok);
        }
        Command::Version => reply::version(out, MEMCACHED_VERSION),
        Command::Verbosity { noreply } => status(out, noreply, Status::Ok),
        Command::Slabs(slabs) => {
            let quiet = matches!(slabs, shoal_memcache::Slabs::Automove { noreply: true, .. });
            if !quiet {
                out.extend_from_slice(slabs.answer().as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        Command::Lru(lru) => {
            let (answer, on) = lru.answer(node.mc_stats.crawler_on());
            node.mc_stats.set_crawler(on);
            if let Some(answer) = answer {
                out.extend_from_slice(answer.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        Command::Stats { arg } => stats(node, arg.as_deref(), now, out),
        Command::Quit => return Flow::Close,
        Command::CacheMemlimit { megabytes, noreply } => {
            // memcached's limit in MiB is Shoal's maxmemory (shared with the RESP side).
            let bytes = megabytes.saturating_mul(1024 * 1024);
            let _one_writer = node.settings_writer();
            node.update_settings(|s| s.maxmemory = crate::config::ByteSize(bytes));
            node.refresh_memory();
            status(out, noreply, Status::Ok);
        }
        Command::MetaNoop => reply::meta(out, "MN", None, &[]),
        Command::MetaDebug { key, b64 } => meta_debug(node, key, b64, now, out),
        Command::MetaDump { .. } if !node.mc_stats.crawler_on() => {
            out.extend_from_slice(b"CLIENT_ERROR lru crawler disabled\r\n");
        }
        Command::MetaDump { classes } => {
            // Every item is in class 1 (see `items`); memcached's class ids run to 63.
            let ids: Option<Vec<u32>> = std::str::from_utf8(&classes).ok().and_then(|c| {
                c.split(',')
                    .map(|id| id.parse().ok().filter(|&id| id < SLAB_CLASSES))
                    .collect()
            });
            match ids {
                // `hash` (memcached 1.6's walk of its hash table) lists every item as `all`.
                _ if matches!(&classes[..], b"all" | b"hash") => {
                    return metadump(node, 0, now, out, pause_at)
                }
                Some(ids) if ids.contains(&1) => return metadump(node, 0, now, out, pause_at),
                Some(_) => reply::end(out),
                None => out.extend_from_slice(b"BADCLASS invalid class id\r\n"),
            }
        }
        Command::MetaGet { key, flags } => meta_get(node, key, &flags, now, out),
        Command::MetaSet { key, data, flags } => meta_set(node, key, data, &flags, now, out),
        Command::MetaDelete { key, flags } => meta_delete(node, key, &flags, now, out),
        Command::MetaArith { key, flags } => meta_arith(node, key, &flags, now, out),
    }
    Flow::Continue
}

// ---- In a cluster ----------------------------------------------------------------------

/// The internal command rows that carry a Memcached request through the cluster layer (see
/// `cmd::memcache`): the layer places, forwards, fails over and replicates by these rows, as
/// it does any command. `[name, request text, keys...]`; `mc.flush` is `[name, request]`.
pub const TUNNEL_READ: &str = "mc.read";
pub const TUNNEL_WRITE: &str = "mc.write";
pub const TUNNEL_FLUSH: &str = "mc.flush";

/// Where a Memcached request runs in a cluster.
#[derive(Debug, PartialEq)]
pub enum Placement {
    /// On the node the client is connected to: keyless requests (version, stats, verbosity,
    /// quit, cache_memlimit, mn), and a meta request whose base64 key does not decode (it
    /// answers its error here).
    Here,
    /// At the copies of these keys (as the store names them: base64 keys decoded); `write`
    /// when the request may change them, so their new state is replicated.
    Keys { keys: Vec<Bytes>, write: bool },
    /// flush_all: on every node.
    Flush,
}

/// Decides where `cmd` runs in a cluster (pure).
pub fn placement(cmd: &Command) -> Placement {
    let one = |key: &Bytes, write: bool| Placement::Keys {
        keys: vec![key.clone()],
        write,
    };
    let meta = |key: &Bytes, flags: &MetaFlags, write: bool| {
        if !flags.has(b'b') {
            return one(key, write);
        }
        match shoal_memcache::base64::decode(key) {
            Some(k) if !k.is_empty() => Placement::Keys {
                keys: vec![Bytes::from(k)],
                write,
            },
            _ => Placement::Here,
        }
    };
    match cmd {
        Command::Store { key, .. }
        | Command::Delete { key, .. }
        | Command::Arith { key, .. }
        | Command::Touch { key, .. } => one(key, true),
        // `gat <exptime>` with no key: answered here (`END`).
        Command::Get { keys, .. } if keys.is_empty() => Placement::Here,
        Command::Get { keys, touch, .. } => Placement::Keys {
            keys: keys.clone(),
            write: touch.is_some(),
        },
        // mg writes when it touches (T) or creates on a miss (N).
        Command::MetaGet { key, flags } => meta(key, flags, flags.has(b'T') || flags.has(b'N')),
        Command::MetaSet { key, flags, .. }
        | Command::MetaDelete { key, flags }
        | Command::MetaArith { key, flags } => meta(key, flags, true),
        Command::MetaDebug { key, b64 } => {
            let b = MetaFlags {
                items: if *b64 {
                    vec![(b'b', Bytes::new())]
                } else {
                    vec![]
                },
            };
            meta(key, &b, false)
        }
        // This node's items (memcached's are its own too).
        Command::MetaDump { .. } => Placement::Here,
        Command::FlushAll { .. } => Placement::Flush,
        Command::Version
        | Command::Verbosity { .. }
        | Command::Stats { .. }
        | Command::Quit
        | Command::CacheMemlimit { .. }
        | Command::Slabs(_)
        | Command::Lru(_)
        | Command::MetaNoop => Placement::Here,
    }
}

/// The internal command that carries `cmd` to the copies of `keys` (see [`placement`]).
pub fn tunnel(cmd: &Command, keys: &[Bytes], write: bool) -> Vec<Bytes> {
    let mut text = BytesMut::new();
    cmd.encode(&mut text);
    let name = if write { TUNNEL_WRITE } else { TUNNEL_READ };
    let mut args = Vec::with_capacity(2 + keys.len());
    args.push(Bytes::from_static(name.as_bytes()));
    args.push(text.freeze());
    args.extend(keys.iter().cloned());
    args
}

/// The internal command that runs flush_all on every node. A delay becomes the Unix time it
/// ends at, so every node flushes at the same moment whenever the request reaches it.
pub fn tunnel_flush(delay: i64, noreply: bool, now_ms: u64) -> Vec<Bytes> {
    let delay = match delay {
        d if d > 0 && d <= REALTIME_MAXDELTA => (now_ms / 1000) as i64 + d,
        d => d,
    };
    let mut text = BytesMut::new();
    Command::FlushAll { delay, noreply }.encode(&mut text);
    vec![Bytes::from_static(TUNNEL_FLUSH.as_bytes()), text.freeze()]
}

/// True if `cmd` asks for no reply (`noreply`; meta commands' `q` still answers errors and
/// misses, so they are not quiet here).
pub fn quiet(cmd: &Command) -> bool {
    match cmd {
        Command::Store { noreply, .. }
        | Command::Delete { noreply, .. }
        | Command::Arith { noreply, .. }
        | Command::Touch { noreply, .. }
        | Command::FlushAll { noreply, .. }
        | Command::Verbosity { noreply }
        | Command::CacheMemlimit { noreply, .. }
        | Command::Slabs(shoal_memcache::Slabs::Automove { noreply, .. }) => *noreply,
        _ => false,
    }
}

/// Runs the Memcached request `text` that came through the cluster layer (one of the
/// tunnel rows), with `limits`, returning its reply bytes; a multi-key get whose reply would
/// pass `max_reply` bytes (plus one value) answers an error instead.
pub fn run_tunneled(
    node: &Engine,
    text: &[u8],
    limits: &shoal_memcache::Limits,
    now: u64,
    max_reply: usize,
) -> Bytes {
    let mut input = BytesMut::from(text);
    let mut parser = shoal_memcache::Parser::new();
    let mut out = BytesMut::new();
    match parser.parse(&mut input, limits) {
        Ok(Some(cmd)) if input.is_empty() => match execute(node, cmd, now, &mut out, max_reply) {
            Flow::Continue | Flow::Close => {}
            Flow::Paused(_) => {
                out.clear();
                out.extend_from_slice(
                    b"SERVER_ERROR reply exceeds the client output buffer limit\r\n",
                );
            }
        },
        Ok(_) => out.extend_from_slice(b"SERVER_ERROR bad request between nodes\r\n"),
        Err(e) => reply::error(&mut out, &e),
    }
    out.freeze()
}

/// Whether `slot` holds a string that `more` bytes appended or prepended leave within the
/// item size (memcached answers NOT_STORED when the joined item cannot be allocated).
fn joined_fits(node: &Engine, slot: &shoal_store::Slot<'_>, key: &[u8], more: usize) -> bool {
    let Some(value) = slot.value() else {
        return false;
    };
    let flags = slot.flags().unwrap_or(0);
    shoal_memcache::item_fits(&limits(node), key.len(), flags, value.len() + more)
}

/// incr/decr on a slot: Ok(None) for a missing key, Err for a non-numeric value. Incr wraps
/// at 2^64 and decr stops at 0, as in Memcached; flags and TTL stay.
fn arith(slot: &mut shoal_store::Slot<'_>, incr: bool, delta: u64) -> Result<Option<u64>, ()> {
    let Some(value) = slot.value() else {
        return Ok(None);
    };
    let current = parse_u64(value).ok_or(())?;
    let next = if incr {
        current.wrapping_add(delta)
    } else {
        current.saturating_sub(delta)
    };
    // Written as the number alone. memcached rewrites a number no longer than the value in
    // place, padded with spaces to the value's length ("99 " after 100 is decremented); here
    // the key is shared with the Redis protocol, whose INCR refuses such a value.
    let marks = slot.marks();
    slot.set_keep_ttl(next.to_string().as_bytes());
    // A stale item stays stale through a count (memcached counts in the item), and its win
    // stays handed out or not.
    if marks != shoal_store::Marks::default() {
        slot.set_marks(marks);
    }
    Ok(Some(next))
}

/// A stored counter as memcached's `safe_strtoull` reads it: leading white space, an optional
/// `+`, digits, then the end or white space (`"12 a"` is 12).
fn parse_u64(v: &[u8]) -> Option<u64> {
    let mut i = v.iter().take_while(|c| c.is_ascii_whitespace()).count();
    if v.get(i) == Some(&b'+') {
        i += 1;
    }
    let digits = v[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let end = i + digits;
    if v.get(end).is_some_and(|c| !c.is_ascii_whitespace()) {
        return None;
    }
    std::str::from_utf8(&v[i..end]).ok()?.parse().ok()
}

/// flush_all: now, or at a later time (seconds from now, or a Unix time above 30 days) that
/// the cron task carries out (within 1/hz of it).
fn flush_all(node: &Engine, delay: i64, now: u64) {
    if delay <= 0 {
        // The latest flush_all wins, as memcached's single oldest_live time: a pending
        // delayed flush is cancelled.
        node.flush_at.store(0, Relaxed);
        node.store.clear();
        // As FLUSHALL: the Redis clients blocked on keys that are gone try again.
        node.blocked.signal_where(|_| true);
        // In a cluster, replication of writes from before the flush must not bring keys back
        // (as FLUSHALL).
        node.store.raise_floor(now << 12);
    } else {
        let at = expire_at(delay, now).unwrap_or(now);
        node.flush_at.store(at, Relaxed);
    }
}

/// memcached's memory limit for `maxmemory`: with none (0), the machine's memory. memcached
/// always has one (`-m 0` is refused), and tools take `limit_maxbytes - bytes` as the room
/// left (`memcstat --analyze` printed 18446744073674682878 bytes free for a limit of 0).
fn maxbytes_of(maxmemory: u64) -> u64 {
    match maxmemory {
        0 => crate::stats::system_memory().unwrap_or(u64::from(u32::MAX)),
        m => m,
    }
}

/// `stats settings`: memcached's names for what this node's settings amount to (exporters
/// read `maxbytes`, `maxconns` and `item_size_max`); the slab allocator's have no
/// counterpart here and are left out.
fn settings(node: &Engine, out: &mut BytesMut) {
    let (maxbytes, maxconns, port, threads, policy, item_max) = node.with_settings(|c| {
        (
            c.maxmemory.0,
            c.maxclients,
            c.memcache_port.unwrap_or(0),
            c.threads,
            c.maxmemory_policy.clone(),
            c.memcache_max_item_size.0,
        )
    });
    let (bind, idle_timeout, tls) =
        node.with_settings(|c| (c.bind.clone(), c.timeout, c.tls_memcache));
    let (socket, perm) =
        node.with_settings(|c| (c.memcache_unixsocket.clone(), c.memcache_unixsocketperm));
    // The users as the node built them (at start); mc names no command-layer module.
    let open = node
        .acl
        .get()
        .is_none_or(|r| r.default_user().lets_anyone_in());
    let auth = if !open { "yes" } else { "no" };
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    reply::stat(out, "maxbytes", maxbytes_of(maxbytes));
    reply::stat(out, "maxconns", maxconns);
    reply::stat(out, "tcpport", port);
    reply::stat(out, "udpport", 0);
    reply::stat(out, "inter", bind);
    reply::stat(out, "verbosity", 0);
    reply::stat(
        out,
        "evictions",
        if policy == "noeviction" { "off" } else { "on" },
    );
    // memcached's `-s` and `-a` (its umask line is the socket's permissions, in octal).
    let socket = if socket.is_empty() {
        "NULL".into()
    } else {
        socket
    };
    reply::stat(out, "domain_socket", socket);
    reply::stat(out, "umask", perm);
    reply::stat(out, "shutdown_command", "no");
    reply::stat(out, "num_threads", threads);
    let detail = node.mc_stats.prefixes.enabled();
    reply::stat(out, "detail_enabled", if detail { "yes" } else { "no" });
    reply::stat(out, "cas_enabled", "yes");
    reply::stat(out, "binding_protocol", "auto-negotiate");
    reply::stat(out, "auth_enabled_sasl", auth);
    reply::stat(out, "auth_enabled_ascii", auth);
    reply::stat(out, "item_size_max", item_max);
    // On unless `lru_crawler disable` (its crawl and metadump answer as off then).
    let crawler = node.mc_stats.crawler_on();
    reply::stat(out, "lru_crawler", if crawler { "yes" } else { "no" });
    let enabled = !node.with_settings(|s| s.memcache_disable_flush_all);
    reply::stat(out, "flush_enabled", if enabled { "yes" } else { "no" });
    reply::stat(out, "idle_timeout", idle_timeout);
    reply::stat(out, "track_sizes", "no");
    reply::stat(out, "ssl_enabled", if tls { "yes" } else { "no" });
    reply::end(out);
}

/// Memcached's slab classes (`stats cachedump`'s ids are below it).
const SLAB_CLASSES: u32 = 64;

/// Most bytes of `stats cachedump`'s answer, as memcached.
const CACHEDUMP_MAX: usize = 2 * 1024 * 1024;

/// `stats items`: Shoal has no slab classes, so every item is in class 1 (the class
/// `stats cachedump` lists), and memcached's LRU segments and crawler figures are 0.
fn items(node: &Engine, out: &mut BytesMut) {
    let store = node.store.stats();
    if store.keys > 0 {
        let base = node.mc_stats.store_base();
        let since = |now: u64, then: u64| now.saturating_sub(then);
        let outofmemory = node.mc_stats.store_no_memory.load(Relaxed);
        for (name, n) in [
            ("number", store.keys),
            ("number_hot", 0),
            ("number_warm", 0),
            ("number_cold", store.keys),
            ("age_hot", 0),
            ("age_warm", 0),
            ("age", 0),
            ("mem_requested", store.used_memory),
            ("evicted", since(store.evicted_keys, base.evicted_keys)),
            ("evicted_nonzero", 0),
            ("evicted_time", 0),
            ("outofmemory", outofmemory),
            ("tailrepairs", 0),
            ("reclaimed", since(store.expired_keys, base.expired_keys)),
            (
                "expired_unfetched",
                since(store.expired_unfetched, base.expired_unfetched),
            ),
            (
                "evicted_unfetched",
                since(store.evicted_unfetched, base.evicted_unfetched),
            ),
            ("evicted_active", 0),
        ] {
            reply::stat(out, &format!("items:1:{name}"), n);
        }
    }
    reply::end(out);
}

/// memcached's slab page (1 MB), for `stats slabs`' pages.
const SLAB_PAGE: u64 = 1 << 20;

/// `stats slabs`: Shoal's items as memcached's one class 1 (see [`items`]): its chunk is the
/// bytes the store counts per item on average (key, value and the entry), its pages the 1 MB
/// pages those bytes would fill, its per-class counters the node's (all in the one class);
/// `active_slabs` and `total_malloced` (those pages' bytes) close it, as in memcached.
fn slabs(node: &Engine, out: &mut BytesMut) {
    let store = node.store.stats();
    let s = &node.mc_stats;
    let v = |c: &AtomicU64| c.load(Relaxed);
    let pages = store.used_memory.div_ceil(SLAB_PAGE);
    if let Some(chunk) = store.used_memory.checked_div(store.keys) {
        let chunk = chunk.max(1);
        let per_page = (SLAB_PAGE / chunk).max(1);
        // Never fewer chunks than items (large items round the pages down).
        let total = (pages * per_page).max(store.keys);
        for (name, n) in [
            ("chunk_size", chunk),
            ("chunks_per_page", per_page),
            ("total_pages", pages),
            ("total_chunks", total),
            ("used_chunks", store.keys),
            ("free_chunks", total.saturating_sub(store.keys)),
            ("free_chunks_end", 0),
            ("get_hits", v(&s.get_hits)),
            ("cmd_set", v(&s.cmd_set)),
            ("delete_hits", v(&s.delete_hits)),
            ("incr_hits", v(&s.incr_hits)),
            ("decr_hits", v(&s.decr_hits)),
            ("cas_hits", v(&s.cas_hits)),
            ("cas_badval", v(&s.cas_badval)),
            ("touch_hits", v(&s.touch_hits)),
        ] {
            reply::stat(out, &format!("1:{name}"), n);
        }
    }
    reply::stat(out, "active_slabs", u64::from(store.keys > 0));
    reply::stat(out, "total_malloced", pages * SLAB_PAGE);
    reply::end(out);
}

/// Whether the stored `key` is an item the Memcached protocol sees: a string of database 0.
fn memcached_item(key: &[u8], e: &shoal_store::Entry<'_>) -> bool {
    shoal_store::split_key(key).0 == 0 && e.kind == shoal_store::Kind::String
}

/// memcached's size of an item (`ITEM_ntotal`), as its dumps and `me` show it: the 48-byte
/// header, the CAS, the key and its NUL, the value and its CRLF, and the client flags
/// unless they are 0.
fn item_size(key: &[u8], e: &shoal_store::Entry<'_>) -> usize {
    48 + 8 + key.len() + 1 + e.value.len() + 2 + if e.flags != 0 { 4 } else { 0 }
}

/// `lru_crawler metadump`'s lines from the store scan's `cursor` on, memcached's format
/// (`key=<uri-encoded> exp=<unix s | -1> la=<unix s> cas=<n> fetch=<yes|no> cls=1
/// size=<bytes>`, each ending in a bare newline), pausing once the output passes
/// `pause_at`; END after the last.
fn metadump(node: &Engine, mut cursor: u64, now: u64, out: &mut BytesMut, pause_at: usize) -> Flow {
    let store = &node.store;
    loop {
        cursor = store.scan(cursor, 64, now, |key, e| {
            if !memcached_item(key, &e) {
                return;
            }
            out.extend_from_slice(b"key=");
            for &b in key {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                    out.extend_from_slice(&[b]);
                } else {
                    out.extend_from_slice(format!("%{b:02X}").as_bytes());
                }
            }
            let exp = e.expire_at_ms.map_or(-1, |at| (at / 1000) as i64);
            let la = now.saturating_sub(store.idle_ms(e.access, now)) / 1000;
            let size = item_size(key, &e);
            let fetch = if e.fetched { "yes" } else { "no" };
            out.extend_from_slice(
                format!(
                    " exp={exp} la={la} cas={} fetch={fetch} cls=1 size={size}\n",
                    e.version
                )
                .as_bytes(),
            );
        });
        if cursor == 0 {
            reply::end(out);
            return Flow::Continue;
        }
        if out.len() >= pause_at {
            return Flow::Paused(PendingGet {
                keys: Vec::new(),
                next: 0,
                with_cas: false,
                touch: None,
                dump: Some(cursor),
            });
        }
    }
}

/// `stats cachedump <class> <limit>`: `ITEM <key> [<bytes> b; <expiry> s]` for up to `limit`
/// items (0: all) of class 1, every Memcached-visible item (see [`items`]), at most 2 MB of
/// it; nothing for another class.
fn cachedump(node: &Engine, arg: &[u8], now: u64, out: &mut BytesMut) {
    let words: Vec<&[u8]> = arg
        .split(|&b| b == b' ')
        .filter(|w| !w.is_empty())
        .collect();
    if words.len() < 3 {
        out.extend_from_slice(b"CLIENT_ERROR bad command line\r\n");
        return;
    }
    let number = |w: &[u8]| std::str::from_utf8(w).ok()?.parse::<u32>().ok();
    let (Some(class), Some(limit)) = (number(words[1]), number(words[2])) else {
        out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
        return;
    };
    if class >= SLAB_CLASSES {
        out.extend_from_slice(b"CLIENT_ERROR Illegal slab id\r\n");
        return;
    }
    let start = out.len();
    let mut shown = 0u32;
    let mut full = false;
    if class == 1 {
        let mut cursor = 0;
        loop {
            cursor = node.store.scan(cursor, 128, now, |key, e| {
                let wanted = limit == 0 || shown < limit;
                if full || !wanted || !memcached_item(key, &e) {
                    return;
                }
                let line = format!(
                    "ITEM {} [{} b; {} s]\r\n",
                    String::from_utf8_lossy(key),
                    e.value.len(),
                    e.expire_at_ms.map_or(0, |at| at / 1000)
                );
                if out.len() - start + line.len() + 5 > CACHEDUMP_MAX {
                    full = true;
                    return;
                }
                out.extend_from_slice(line.as_bytes());
                shown += 1;
            });
            if cursor == 0 || full || (limit != 0 && shown >= limit) {
                break;
            }
        }
    }
    reply::end(out);
}

/// A `set` refused as too large, whose stale value `forget` removes: counted for `stats
/// detail` as the set memcached counts before it tries a store (the removal, run
/// [`crate::prefixes::muted`], counts nothing).
pub fn count_refused_set(node: &Engine, forget: &Command) {
    let key = match forget {
        Command::Delete { key, .. } => Some(key.clone()),
        Command::MetaDelete { key, flags } => meta_key(key.clone(), flags, &mut BytesMut::new()),
        _ => None,
    };
    if let Some(key) = key {
        node.mc_stats.prefixes.record(&key, Op::Set);
    }
}

/// memcached's name for what a connection is doing, from what its I/O loop last published:
/// `awaiting` the rest of a request it has part of, `running` what it read (its batch: the
/// connection asking is one), `output` bytes waiting to be written.
fn conn_state(awaiting: bool, running: bool, output: u64) -> &'static str {
    match () {
        // First: a batch's replies waiting on a slow reader (its input is still published).
        _ if output > 0 => "conn_mwrite",
        _ if awaiting => "conn_nread",
        _ if running => "conn_parse_cmd",
        _ => "conn_waiting",
    }
}

/// `stats conns`: the listening sockets, then the connections, by descriptor, in memcached's
/// lines (`<fd>:addr`, `listen_addr`, `state`, `secs_since_last_cmd`; addresses as
/// `ClientAddr::memcached_text` writes them), the Memcached listeners' and every
/// connection's of either protocol.
fn conns(node: &Engine, now: u64, out: &mut BytesMut) {
    let mut lines: Vec<(i32, String)> = node
        .clients
        .listeners()
        .into_iter()
        .map(|(fd, addr)| {
            let uptime = node.uptime_secs();
            let addr = addr.memcached_text();
            let text = format!(
                "STAT {fd}:addr {addr}\r\nSTAT {fd}:state conn_listening\r\nSTAT {fd}:secs_since_last_cmd {uptime}\r\n"
            );
            (fd, text)
        })
        .collect();
    for c in node.clients.all() {
        let fd = c.fd.load(Relaxed);
        let b = &c.buffers;
        // While its batch runs, qbuf holds all the connection read (see `Buffers`).
        let state = conn_state(
            b.awaiting.load(Relaxed),
            b.qbuf.load(Relaxed) > 0,
            b.obl.load(Relaxed) + b.omem.load(Relaxed),
        );
        let idle = now.saturating_sub(c.last_interaction_ms.load(Relaxed)) / 1000;
        let text = format!(
            "STAT {fd}:addr {}\r\nSTAT {fd}:listen_addr {}\r\nSTAT {fd}:state {state}\r\nSTAT {fd}:secs_since_last_cmd {idle}\r\n",
            // memcached shows a Unix socket's client as an address of no family (accept
            // names no peer there) and the socket's path as where it listens.
            if c.addr.is_unix() {
                "?:<AF 0>".to_string()
            } else {
                c.addr.memcached_text()
            },
            c.laddr.memcached_text()
        );
        lines.push((fd, text));
    }
    lines.sort_by_key(|(fd, _)| *fd);
    for (_, text) in lines {
        out.extend_from_slice(text.as_bytes());
    }
    reply::end(out);
}

/// `stats detail on|off|dump` (`arg` is `detail` and what follows), as memcached answers it.
fn detail(node: &Engine, arg: &[u8], out: &mut BytesMut) {
    let prefixes = &node.mc_stats.prefixes;
    match arg.split(|&b| b == b' ').filter(|w| !w.is_empty()).nth(1) {
        Some(b"on") => {
            prefixes.set_enabled(true);
            out.extend_from_slice(b"OK\r\n");
        }
        Some(b"off") => {
            prefixes.set_enabled(false);
            out.extend_from_slice(b"OK\r\n");
        }
        Some(b"dump") => prefixes.dump(out),
        _ => out.extend_from_slice(b"CLIENT_ERROR usage: stats detail on|off|dump\r\n"),
    }
}

fn stats(node: &Engine, arg: Option<&[u8]>, now: u64, out: &mut BytesMut) {
    match arg {
        None => {}
        Some(a) if a.starts_with(b"cachedump") => {
            cachedump(node, a, now, out);
            return;
        }
        Some(b"items") => {
            items(node, out);
            return;
        }
        Some(b"settings") => {
            settings(node, out);
            return;
        }
        Some(b"slabs") => {
            slabs(node, out);
            return;
        }
        Some(a) if a.starts_with(b"detail") && a.get(6).is_none_or(|&b| b == b' ') => {
            detail(node, a, out);
            return;
        }
        Some(b"conns") => {
            conns(node, now, out);
            return;
        }
        // memcached without `-o track_sizes`; Shoal keeps no histogram of item sizes.
        Some(b"sizes" | b"sizes_disable") => {
            reply::stat(out, "sizes_status", "disabled");
            reply::end(out);
            return;
        }
        Some(b"sizes_enable") => {
            reply::stat(out, "sizes_status", "error");
            reply::stat(out, "sizes_error", "not_supported");
            reply::end(out);
            return;
        }
        Some(b"reset") => {
            node.mc_stats.reset(node.store.stats());
            out.extend_from_slice(b"RESET\r\n");
            return;
        }
        Some(_) => {
            out.extend_from_slice(b"ERROR\r\n");
            return;
        }
    }
    let s = &node.mc_stats;
    // The store's counters since the last `stats reset` (CONFIG RESETSTAT zeroes them too).
    let store = node.store.stats();
    let base = s.store_base();
    let since = |now: u64, then: u64| now.saturating_sub(then);
    let (user, sys) = crate::stats::cpu_times();
    let v = |c: &AtomicU64| c.load(Relaxed);
    let clients = node.clients.all();
    let buffers = |f: fn(&crate::client::Buffers) -> u64| -> u64 {
        clients.iter().map(|c| f(&c.buffers)).sum()
    };
    reply::stat(out, "pid", std::process::id());
    reply::stat(out, "uptime", node.uptime_secs());
    reply::stat(out, "time", now / 1000);
    reply::stat(out, "version", MEMCACHED_VERSION);
    // Where memcached names its libevent.
    reply::stat(out, "shoal_version", crate::SHOAL_VERSION);
    reply::stat(out, "pointer_size", usize::BITS);
    reply::stat(out, "rusage_user", format!("{user:.6}"));
    reply::stat(out, "rusage_system", format!("{sys:.6}"));
    reply::stat(out, "max_connections", node.with_settings(|c| c.maxclients));
    reply::stat(out, "curr_connections", node.clients.len());
    reply::stat(
        out,
        "total_connections",
        node.stats.total_connections_received.load(Relaxed),
    );
    reply::stat(
        out,
        "rejected_connections",
        node.stats.rejected_connections.load(Relaxed),
    );
    reply::stat(out, "connection_structures", node.clients.len());
    // Replies waiting to be written, and the connections' input buffers.
    reply::stat(out, "response_obj_oom", 0);
    reply::stat(out, "response_obj_count", buffers(|b| b.oll.load(Relaxed)));
    reply::stat(
        out,
        "response_obj_bytes",
        buffers(|b| b.obl.load(Relaxed) + b.omem.load(Relaxed)),
    );
    reply::stat(
        out,
        "read_buf_count",
        buffers(|b| u64::from(b.rbs.load(Relaxed) > 0)),
    );
    reply::stat(out, "read_buf_bytes", buffers(|b| b.rbs.load(Relaxed)));
    reply::stat(
        out,
        "read_buf_bytes_free",
        buffers(|b| b.qbuf_free.load(Relaxed)),
    );
    reply::stat(out, "read_buf_oom", 0);
    reply::stat(out, "reserved_fds", crate::fdlimit::RESERVED_FDS);
    for (name, c) in [
        ("cmd_get", &s.cmd_get),
        ("cmd_set", &s.cmd_set),
        ("cmd_flush", &s.cmd_flush),
        ("cmd_touch", &s.cmd_touch),
        ("cmd_meta", &s.cmd_meta),
        ("get_hits", &s.get_hits),
        ("get_misses", &s.get_misses),
    ] {
        reply::stat(out, name, v(c));
    }
    reply::stat(
        out,
        "get_expired",
        since(store.expired_on_access, base.expired_on_access),
    );
    // A flush removes the items at once: no later read finds one.
    reply::stat(out, "get_flushed", 0);
    for (name, c) in [
        ("delete_misses", &s.delete_misses),
        ("delete_hits", &s.delete_hits),
        ("incr_misses", &s.incr_misses),
        ("incr_hits", &s.incr_hits),
        ("decr_misses", &s.decr_misses),
        ("decr_hits", &s.decr_hits),
        ("cas_misses", &s.cas_misses),
        ("cas_hits", &s.cas_hits),
        ("cas_badval", &s.cas_badval),
        ("touch_hits", &s.touch_hits),
        ("touch_misses", &s.touch_misses),
        ("store_too_large", &s.store_too_large),
        ("store_no_memory", &s.store_no_memory),
        ("auth_cmds", &s.auth_cmds),
        ("auth_errors", &s.auth_errors),
    ] {
        reply::stat(out, name, v(c));
    }
    if node.with_settings(|c| c.timeout) > 0 {
        reply::stat(out, "idle_kicks", v(&s.idle_kicks));
    }
    reply::stat(out, "bytes_read", node.stats.total_net_input_bytes.get());
    reply::stat(
        out,
        "bytes_written",
        node.stats.total_net_output_bytes.get(),
    );
    let maxmemory = node.with_settings(|s| s.maxmemory.0);
    reply::stat(out, "limit_maxbytes", maxbytes_of(maxmemory));
    reply::stat(out, "accepting_conns", 1);
    // Shoal never stops listening: a connection past maxclients is refused.
    reply::stat(out, "listen_disabled_num", 0);
    reply::stat(out, "time_in_listen_disabled_us", 0);
    reply::stat(out, "threads", node.threads.load(Relaxed));
    reply::stat(out, "conn_yields", 0);
    // The key index: its room as a power of two, its bytes; it grows shard by shard, never
    // all at once.
    let power = store
        .index_capacity
        .max(1)
        .next_power_of_two()
        .trailing_zeros();
    reply::stat(out, "hash_power_level", power);
    reply::stat(out, "hash_bytes", store.index_bytes);
    reply::stat(out, "hash_is_expanding", 0);
    // No slabs, no LRU crawler, no watchers: memcached's counters of those stay 0.
    for name in [
        "slab_reassign_rescues",
        "slab_reassign_chunk_rescues",
        "slab_reassign_evictions_nomem",
        "slab_reassign_inline_reclaim",
        "slab_reassign_busy_items",
        "slab_reassign_busy_deletes",
        "slab_reassign_running",
        "slabs_moved",
        "malloc_fails",
        "log_worker_dropped",
        "log_worker_written",
        "log_watcher_skipped",
        "log_watcher_sent",
        "log_watchers",
        "unexpected_napi_ids",
        "round_robin_fallback",
    ] {
        reply::stat(out, name, 0);
    }
    reply::stat(out, "bytes", store.used_memory);
    reply::stat(out, "curr_items", store.keys);
    reply::stat(out, "total_items", v(&s.total_items));
    reply::stat(out, "slab_global_page_pool", 0);
    for (name, now, then) in [
        (
            "expired_unfetched",
            store.expired_unfetched,
            base.expired_unfetched,
        ),
        (
            "evicted_unfetched",
            store.evicted_unfetched,
            base.evicted_unfetched,
        ),
        ("evictions", store.evicted_keys, base.evicted_keys),
        ("reclaimed", store.expired_keys, base.expired_keys),
    ] {
        reply::stat(out, name, since(now, then));
    }
    reply::stat(out, "crawler_reclaimed", 0);
    reply::stat(out, "crawler_items_checked", 0);
    reply::stat(out, "lrutail_reflocked", 0);
    reply::end(out);
}

// ---- Meta commands -------------------------------------------------------------------

/// The key a meta command names: base64-decoded when the `b` flag is given.
fn meta_key(key: Bytes, flags: &MetaFlags, out: &mut BytesMut) -> Option<Bytes> {
    if !flags.has(b'b') {
        return Some(key);
    }
    match shoal_memcache::base64::decode(&key) {
        Some(k) if !k.is_empty() => Some(Bytes::from(k)),
        _ => {
            out.extend_from_slice(b"CLIENT_ERROR error decoding key\r\n");
            None
        }
    }
}

/// The numeric token of a meta flag that [`meta_preparse`] read (so it reads), if given.
fn meta_value<T: std::str::FromStr>(flags: &MetaFlags, f: u8) -> Option<T> {
    flags.number::<T>(f).and_then(Result::ok)
}

/// memcached's `_meta_flag_preparse` reads every flag's token first (numbers where it wants
/// them, a one-letter mode), whatever the command (mg and ms take N, R, C, J, D and M too,
/// and check them so), and goes on after an error: the last unreadable token's error is
/// the answer. Err: the error is written.
fn meta_preparse(flags: &MetaFlags, out: &mut BytesMut) -> Result<(), ()> {
    let mut error: Option<&[u8]> = None;
    for (f, token) in &flags.items {
        let bad: Option<&[u8]> = match f {
            b'N' | b'T' | b'R' if matches!(flags.number::<i64>(*f), Some(Err(()))) => {
                Some(b"CLIENT_ERROR bad token in command line format\r\n")
            }
            b'C' if matches!(flags.number::<u64>(*f), Some(Err(()))) => {
                Some(b"CLIENT_ERROR bad token in command line format\r\n")
            }
            b'J' if matches!(flags.number::<u64>(*f), Some(Err(()))) => {
                Some(b"CLIENT_ERROR invalid numeric initial value\r\n")
            }
            b'D' if matches!(flags.number::<u64>(*f), Some(Err(()))) => {
                Some(b"CLIENT_ERROR invalid numeric delta value\r\n")
            }
            b'M' if token.len() != 1 => Some(b"CLIENT_ERROR incorrect length for M token\r\n"),
            _ => None,
        };
        error = bad.or(error);
    }
    match error {
        Some(e) => {
            out.extend_from_slice(e);
            Err(())
        }
        None => Ok(()),
    }
}

/// A flag's numeric token read past the pre-parse (ms's F), with the command's error text.
fn meta_number_or<T: std::str::FromStr>(
    flags: &MetaFlags,
    f: u8,
    out: &mut BytesMut,
    text: &str,
) -> Result<Option<T>, ()> {
    match flags.number::<T>(f) {
        None => Ok(None),
        Some(Ok(n)) => Ok(Some(n)),
        Some(Err(())) => {
            out.extend_from_slice(format!("CLIENT_ERROR {text}\r\n").as_bytes());
            Err(())
        }
    }
}

/// What a meta reply may echo about an item.
struct ItemView<'a> {
    key: &'a [u8],
    value: &'a [u8],
    flags: u32,
    cas: u64,
    expire_at: Option<u64>,
    /// Read since it was set (`h`), and last accessed this long ago (`l`).
    fetched: bool,
    idle_ms: u64,
}

/// What a meta reply may echo about the key in `slot`, if it exists.
fn item_view<'a>(slot: &'a shoal_store::Slot<'_>, key: &'a [u8]) -> Option<ItemView<'a>> {
    Some(ItemView {
        key,
        value: slot.value()?,
        flags: slot.flags().unwrap_or(0),
        cas: slot.version().unwrap_or(0),
        expire_at: slot.expire_at(),
        fetched: slot.fetched().unwrap_or(false),
        idle_ms: slot.idle_ms().unwrap_or(0),
    })
}

/// The return flags a meta command asked for, in the order it asked, as (letter, token).
fn return_flags(req: &MetaFlags, item: Option<&ItemView<'_>>, now: u64) -> Vec<(u8, Vec<u8>)> {
    let mut ret = Vec::new();
    for (f, token) in &req.items {
        if let (b'k', Some(i)) = (f, item) {
            push_key(&mut ret, req, i.key);
            continue;
        }
        let t: Option<Vec<u8>> = match (f, item) {
            (b'O', _) => Some(token.to_vec()),
            (b'c', Some(i)) => Some(i.cas.to_string().into_bytes()),
            (b'f', Some(i)) => Some(i.flags.to_string().into_bytes()),
            (b's', Some(i)) => Some(i.value.len().to_string().into_bytes()),
            (b't', Some(i)) => Some(match i.expire_at {
                None => b"-1".to_vec(),
                Some(at) => (at.saturating_sub(now).div_ceil(1000))
                    .to_string()
                    .into_bytes(),
            }),
            (b'h', Some(i)) => Some(if i.fetched { b"1" } else { b"0" }.to_vec()),
            (b'l', Some(i)) => Some((i.idle_ms / 1000).to_string().into_bytes()),
            _ => None,
        };
        if let Some(t) = t {
            ret.push((*f, t));
        }
    }
    ret
}

/// The `k` return flag, followed by `b` when the key travels in base64 (Memcached's order).
fn push_key(ret: &mut Vec<(u8, Vec<u8>)>, req: &MetaFlags, key: &[u8]) {
    if req.has(b'b') {
        ret.push((b'k', shoal_memcache::base64::encode(key)));
        ret.push((b'b', Vec::new()));
    } else {
        ret.push((b'k', key.to_vec()));
    }
}

/// On a miss Memcached still echoes the opaque and, when asked, the key (as sent).
fn miss_flags(req: &MetaFlags, key: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut ret = Vec::new();
    for (f, token) in &req.items {
        match f {
            b'O' => ret.push((b'O', token.to_vec())),
            b'k' => push_key(&mut ret, req, key),
            _ => {}
        }
    }
    ret
}

fn write_meta(out: &mut BytesMut, code: &str, value: Option<&[u8]>, ret: &[(u8, Vec<u8>)]) {
    let flags: Vec<(u8, &[u8])> = ret.iter().map(|(f, t)| (*f, t.as_slice())).collect();
    reply::meta(out, code, value, &flags);
}

fn meta_get(node: &Engine, key: Bytes, flags: &MetaFlags, now: u64, out: &mut BytesMut) {
    let Some(key) = meta_key(key, flags, out) else {
        return;
    };
    if meta_preparse(flags, out).is_err() {
        return;
    }
    let touch = meta_value::<i64>(flags, b'T');
    let vivify = meta_value::<i64>(flags, b'N');
    let recache = meta_value::<i64>(flags, b'R');
    let st = &node.mc_stats;
    bump(&st.cmd_get);
    // `u`: the item keeps its place in the LRU, its access time and its fetched state.
    if flags.has(b'u') {
        shoal_store::without_touching(|| {
            meta_get_item(node, &key, flags, now, out, (touch, vivify, recache))
        });
    } else {
        meta_get_item(node, &key, flags, now, out, (touch, vivify, recache));
    }
}

/// `mg`'s work under the key's lock; `h` and `l` tell the item's state before this read.
fn meta_get_item(
    node: &Engine,
    key: &[u8],
    flags: &MetaFlags,
    now: u64,
    out: &mut BytesMut,
    (touch, vivify, recache): (Option<i64>, Option<i64>, Option<i64>),
) {
    let st = &node.mc_stats;
    // Counted for `stats detail` once the key's lock is released.
    let mut hit = false;
    node.store.write(key, now, |slot| {
        let mut won = false;
        let mut created = false;
        let past = |at: Option<u64>| at.is_some_and(|at| at <= now);
        let mut vivified_past = false;
        if slot.kind().is_some_and(|k| k != shoal_store::Kind::String) {
            // A RESP collection: a miss, neither touched nor replaced by a vivified item.
            bump(&st.get_misses);
            if !flags.has(b'q') {
                write_meta(out, "EN", None, &miss_flags(flags, key));
            }
            return;
        }
        if !slot.exists() {
            bump(&st.get_misses);
            match vivify {
                // Vivify on miss: an empty item with that TTL; this client wins the recache.
                Some(_) if node.store.maxmemory() > 0 && node.store.ensure_memory(now).is_err() => {
                    no_memory(node, out);
                    return;
                }
                Some(ttl) => {
                    let at = expire_at(ttl, now);
                    vivified_past = past(at);
                    slot.set_with_flags(b"", if vivified_past { Some(now + 1) } else { at }, 0);
                    won = true;
                    created = true;
                }
                None => {
                    if !flags.has(b'q') {
                        write_meta(out, "EN", None, &miss_flags(flags, key));
                    }
                    return;
                }
            }
        } else {
            bump(&st.get_hits);
            hit = true;
        }
        // A touch (or a vivified miss) to a time already past answers as an item about to
        // expire (its value, `t` 0 or 1, the recache won under `R`), as memcached does, and
        // then the item is gone.
        let touched = touch.map(|ttl| expire_at(ttl, now));
        let gone_after = past(touched.flatten()) || vivified_past;
        if touched.is_some() {
            bump(&st.cmd_touch);
        }
        if gone_after {
            slot.set_expire(Some(now + 1));
        } else if let Some(at) = touched {
            slot.set_expire(at);
        }
        // Stale-while-revalidate: a TTL under `R` seconds wins the recache once, as does a
        // stale item's first reader (and a vivified miss); who comes after a win sees Z.
        let marks = slot.marks();
        let recache_at = recache.and_then(|r| expire_at(r, now));
        if let (Some(at), Some(r)) = (slot.expire_at(), recache_at) {
            won |= !marks.token_sent && !created && at < r;
        }
        won |= marks.stale && !marks.token_sent;
        // No room to note the win (many at once): later readers may win too.
        if won {
            let _ = slot.set_marks(shoal_store::Marks {
                token_sent: true,
                ..marks
            });
        }
        let Some(view) = item_view(slot, key) else {
            // (Not reached: the item was there or was vivified, and a past time waits
            // until after the reply.)
            if !flags.has(b'q') {
                write_meta(out, "EN", None, &miss_flags(flags, key));
            }
            return;
        };
        let mut ret = return_flags(flags, Some(&view), now);
        // Memcached's order: Z, X, then W.
        for (flag, shown) in [(b'Z', marks.token_sent), (b'X', marks.stale), (b'W', won)] {
            if shown {
                ret.push((flag, Vec::new()));
            }
        }
        let code = if flags.has(b'v') { "VA" } else { "HD" };
        write_meta(out, code, flags.has(b'v').then_some(view.value), &ret);
        slot.note_fetch();
        if gone_after {
            slot.set_expire(Some(0));
        }
    });
    st.prefixes.record(key, Op::Get { hit });
}

fn meta_set(
    node: &Engine,
    key: Bytes,
    data: Bytes,
    flags: &MetaFlags,
    now: u64,
    out: &mut BytesMut,
) {
    let Some(key) = meta_key(key, flags, out) else {
        return;
    };
    node.mc_stats.prefixes.record(&key, Op::Set);
    // One error, as memcached: its flag pre-parse first, then F (1.6.18's words for it).
    if meta_preparse(flags, out).is_err() {
        return;
    }
    let Ok(client_flags) = meta_number_or::<u32>(flags, b'F', out, "bad command line format")
    else {
        return;
    };
    let ttl = meta_value::<i64>(flags, b'T');
    let compare = meta_value::<u64>(flags, b'C');
    // Upper case only, as memcached reads them (its length checked by the pre-parse).
    let mode = match flags.token(b'M') {
        None => StoreMode::Set,
        Some(b"S") => StoreMode::Set,
        Some(b"E") => StoreMode::Add,
        Some(b"A") => StoreMode::Append,
        Some(b"P") => StoreMode::Prepend,
        Some(b"R") => StoreMode::Replace,
        Some(_) => {
            out.extend_from_slice(b"CLIENT_ERROR invalid mode for ms M token\r\n");
            return;
        }
    };
    bump(&node.mc_stats.cmd_set);
    if node.store.maxmemory() > 0 && node.store.ensure_memory(now).is_err() {
        no_memory(node, out);
        return;
    }
    let at = ttl.and_then(|t| expire_at(t, now));
    // memcached's add mode takes no CAS: it stores a missing key and leaves one that is there.
    let compare = compare.filter(|_| !matches!(mode, StoreMode::Add));
    node.store.write(&key, now, |slot| {
        let exists = slot.exists();
        // `I` with a CAS older than the item's: stored, but as stale, keeping the item's TTL
        // and whether a win was handed out (memcached's `CAS_STALE`).
        // (Only a set or a replace: an append or prepend with an old CAS is EX, as memcached.)
        let stale_write = flags.has(b'I')
            && matches!(mode, StoreMode::Set | StoreMode::Replace)
            && compare.is_some_and(|c| slot.version().is_some_and(|v| c < v));
        let code = match (mode, compare) {
            // An append or prepend with a CAS to a missing key: not stored, as memcached.
            (StoreMode::Append | StoreMode::Prepend, Some(_)) if !exists => "NS",
            (_, Some(_)) if !exists => "NF",
            (_, Some(_)) if stale_write => "HD",
            (_, Some(c)) if slot.version() != Some(c) => "EX",
            (StoreMode::Add, _) if exists => "NS",
            (StoreMode::Replace | StoreMode::Append | StoreMode::Prepend, _) if !exists => "NS",
            (StoreMode::Append | StoreMode::Prepend, _)
                if !joined_fits(node, slot, &key, data.len()) =>
            {
                "NS"
            }
            _ => "HD",
        };
        if code == "HD" && stale_write {
            let token_sent = slot.marks().token_sent;
            let kept = slot.expire_at();
            slot.set_with_flags(&data, kept, client_flags.unwrap_or(0));
            let marked = slot.set_marks(shoal_store::Marks {
                stale: true,
                token_sent,
            });
            if !marked {
                slot.remove();
            }
            bump(&node.mc_stats.total_items);
        } else if code == "HD" {
            match mode {
                StoreMode::Append => {
                    slot.append(&data);
                }
                StoreMode::Prepend => slot.modify(|v| {
                    v.splice(0..0, data.iter().copied());
                }),
                _ => slot.set_with_flags(&data, at, client_flags.unwrap_or(0)),
            }
            bump(&node.mc_stats.total_items);
        }
        if code == "HD" && flags.has(b'q') {
            return;
        }
        // What memcached's ms returns: the new item's CAS (0 when nothing was stored), the
        // key and the opaque, whatever the outcome; no other flag.
        let cas = if code == "HD" { slot.version() } else { None };
        let mut ret = Vec::new();
        for (f, token) in &flags.items {
            match f {
                b'c' => ret.push((b'c', cas.unwrap_or(0).to_string().into_bytes())),
                b'k' => push_key(&mut ret, flags, &key),
                b'O' => ret.push((b'O', token.to_vec())),
                _ => {}
            }
        }
        write_meta(out, code, None, &ret);
    });
}

fn meta_delete(node: &Engine, key: Bytes, flags: &MetaFlags, now: u64, out: &mut BytesMut) {
    let Some(key) = meta_key(key, flags, out) else {
        return;
    };
    node.mc_stats.prefixes.record(&key, Op::Delete);
    if meta_preparse(flags, out).is_err() {
        return;
    }
    let compare = meta_value::<u64>(flags, b'C');
    let ttl = meta_value::<i64>(flags, b'T');
    node.store.write(&key, now, |slot| {
        let code = match compare {
            _ if !slot.exists() => "NF",
            Some(c) if slot.version() != Some(c) => "EX",
            // `I`: not deleted but marked stale, with a new CAS (and `T`'s TTL), and the
            // next reader wins its recache (memcached's stale-while-revalidate).
            _ if flags.has(b'I') => {
                if let Some(t) = ttl {
                    slot.set_expire(expire_at(t, now));
                }
                slot.renew_version();
                let kept = slot.set_marks(shoal_store::Marks {
                    stale: true,
                    token_sent: false,
                });
                // No room to mark it (many invalidated at once): deleted, a safe miss.
                if !kept {
                    slot.remove();
                }
                "HD"
            }
            _ => {
                slot.remove();
                "HD"
            }
        };
        bump(if code == "HD" {
            &node.mc_stats.delete_hits
        } else {
            &node.mc_stats.delete_misses
        });
        if code == "HD" && flags.has(b'q') {
            return;
        }
        write_meta(out, code, None, &miss_flags(flags, &key));
    });
}

fn meta_arith(node: &Engine, key: Bytes, flags: &MetaFlags, now: u64, out: &mut BytesMut) {
    let Some(key) = meta_key(key, flags, out) else {
        return;
    };
    // One error at most, the pre-parse's (the text parser answers md's and ma's unreadable
    // tokens itself; the binary protocol's translations give readable ones).
    if meta_preparse(flags, out).is_err() {
        return;
    }
    let initial = meta_value::<u64>(flags, b'J');
    let delta = meta_value::<u64>(flags, b'D');
    let vivify = meta_value::<i64>(flags, b'N');
    let ttl = meta_value::<i64>(flags, b'T');
    let compare = meta_value::<u64>(flags, b'C');
    let incr = match flags.token(b'M') {
        None => true,
        Some(b"I" | b"+") => true,
        Some(b"D" | b"-") => false,
        Some(_) => {
            out.extend_from_slice(b"CLIENT_ERROR invalid mode for ma M token\r\n");
            return;
        }
    };
    let delta = delta.unwrap_or(1);
    node.store.write(&key, now, |slot| {
        // The counter's value, as `v` returns it (the number, not the stored text, which
        // keeps its length with spaces; see `arith`).
        let mut number = None;
        let mut created = false;
        let code = if slot.kind().is_some_and(|k| k != shoal_store::Kind::String) {
            // A RESP collection: not found, and not replaced by a vivified counter.
            "NF"
        } else if !slot.exists() {
            match vivify {
                Some(t) => {
                    let start = initial.unwrap_or(0);
                    number = Some(start);
                    // A T flag's TTL wins over N's, as memcached sets it on the new item.
                    let at = expire_at(ttl.unwrap_or(t), now);
                    slot.set_with_flags(start.to_string().as_bytes(), at, 0);
                    created = true;
                    "HD"
                }
                None => "NF",
            }
        } else if compare.is_some_and(|c| slot.version() != Some(c)) {
            "EX"
        } else {
            match arith(slot, incr, delta) {
                Ok(n) => {
                    number = n;
                    if let Some(t) = ttl {
                        slot.set_expire(expire_at(t, now));
                    }
                    "HD"
                }
                Err(()) => {
                    out.extend_from_slice(
                        b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
                    );
                    return;
                }
            }
        };
        let (hits, misses) = node.mc_stats.arith_counters(incr);
        bump(if code == "HD" { hits } else { misses });
        // memcached's `q` hides a counted HD, not the one of a counter N created.
        if code == "HD" && flags.has(b'q') && !created {
            return;
        }
        // What memcached's ma returns: t, c and k (with b) and O when it counted; k and O
        // when it did not (f, s, h and l not at all).
        let ret = if code == "HD" {
            let view = item_view(slot, &key);
            let mut ret = return_flags(flags, view.as_ref(), now);
            ret.retain(|(f, _)| matches!(f, b't' | b'c' | b'k' | b'b' | b'O'));
            ret
        } else {
            miss_flags(flags, &key)
        };
        match (code, number) {
            ("HD", Some(n)) if flags.has(b'v') => {
                write_meta(out, "VA", Some(n.to_string().as_bytes()), &ret)
            }
            _ => write_meta(out, code, None, &ret),
        }
    });
}

/// `me`: memcached's debug line of an item; a base64 key (`b64`) is shown as given.
fn meta_debug(node: &Engine, key: Bytes, b64: bool, now: u64, out: &mut BytesMut) {
    let shown = key.clone();
    let key = if b64 {
        match shoal_memcache::base64::decode(&key) {
            Some(k) if !k.is_empty() => Bytes::from(k),
            _ => {
                out.extend_from_slice(b"CLIENT_ERROR bad command line format\r\n");
                return;
            }
        }
    } else {
        key
    };
    let key = &key[..];
    let line = node.store.read(key, now, Access::Peek, |e| {
        e.map(|e| {
            let exp = e
                .expire_at_ms
                .map_or(-1, |at| at.saturating_sub(now).div_ceil(1000) as i64);
            format!(
                "ME {} exp={exp} la={} cas={} fetch={} cls=1 size={}\r\n",
                String::from_utf8_lossy(&shown),
                node.store.idle_ms(e.access, now) / 1000,
                e.version,
                if e.fetched { "yes" } else { "no" },
                item_size(key, &e)
            )
        })
    });
    match line {
        Some(l) => out.extend_from_slice(l.as_bytes()),
        None => reply::meta(out, "EN", None, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_state_is_named_as_memcached_names_it() {
        assert_eq!(conn_state(false, false, 0), "conn_waiting");
        assert_eq!(
            conn_state(false, true, 0),
            "conn_parse_cmd",
            "running its batch"
        );
        assert_eq!(
            conn_state(true, false, 0),
            "conn_nread",
            "a request half in"
        );
        assert_eq!(conn_state(false, false, 5), "conn_mwrite");
        assert_eq!(
            conn_state(false, true, 5),
            "conn_mwrite",
            "its replies wait"
        );
    }

    fn parse(text: &str) -> Command {
        let mut buf = BytesMut::from(text);
        shoal_memcache::Parser::new()
            .parse(&mut buf, &shoal_memcache::Limits::default())
            .unwrap()
            .unwrap()
    }

    fn keys(list: &[&'static str], write: bool) -> Placement {
        Placement::Keys {
            keys: list
                .iter()
                .map(|k| Bytes::from_static(k.as_bytes()))
                .collect(),
            write,
        }
    }

    #[test]
    fn placement_follows_the_keys_and_whether_they_change() {
        for (text, want) in [
            ("set a 0 0 1\r\nx\r\n", keys(&["a"], true)),
            ("cas a 0 0 1 5\r\nx\r\n", keys(&["a"], true)),
            ("get a b a\r\n", keys(&["a", "b", "a"], false)),
            ("gats 10 a b\r\n", keys(&["a", "b"], true)),
            ("gat 10\r\n", Placement::Here),
            ("delete a\r\n", keys(&["a"], true)),
            ("incr a 1\r\n", keys(&["a"], true)),
            ("touch a 1\r\n", keys(&["a"], true)),
            ("mg a v\r\n", keys(&["a"], false)),
            ("mg a v T30\r\n", keys(&["a"], true)),
            ("mg a N30\r\n", keys(&["a"], true)),
            ("ms a 1\r\nx\r\n", keys(&["a"], true)),
            ("md a q\r\n", keys(&["a"], true)),
            ("ma a\r\n", keys(&["a"], true)),
            ("me a\r\n", keys(&["a"], false)),
            // A base64 key is placed by what it decodes to; one that does not decode
            // answers its error where it arrived.
            ("mg Zm9v b v\r\n", keys(&["foo"], false)),
            ("mg !!!! b v\r\n", Placement::Here),
            ("flush_all 10\r\n", Placement::Flush),
            ("version\r\n", Placement::Here),
            ("stats\r\n", Placement::Here),
            ("mn\r\n", Placement::Here),
            ("verbosity 1\r\n", Placement::Here),
            ("cache_memlimit 100\r\n", Placement::Here),
            ("quit\r\n", Placement::Here),
        ] {
            assert_eq!(placement(&parse(text)), want, "{text:?}");
        }
    }

    #[test]
    fn a_tunneled_request_is_the_request_then_its_keys() {
        let cmd = parse("gat 5 a b\r\n");
        let keys = [Bytes::from_static(b"a"), Bytes::from_static(b"b")];
        let args = tunnel(&cmd, &keys, true);
        assert_eq!(args[0], TUNNEL_WRITE.as_bytes());
        assert_eq!(parse(std::str::from_utf8(&args[1]).unwrap()), cmd);
        assert_eq!(&args[2..], &keys);
        assert_eq!(tunnel(&cmd, &keys, false)[0], TUNNEL_READ.as_bytes());
        // A relative flush delay becomes the Unix time it ends at; absolute ones stay.
        let now = 1_700_000_000_500;
        let flush = |d| parse(std::str::from_utf8(&tunnel_flush(d, false, now)[1]).unwrap());
        let at = |delay| Command::FlushAll {
            delay,
            noreply: false,
        };
        assert_eq!(flush(10), at(1_700_000_010));
        assert_eq!(flush(0), at(0));
        assert_eq!(flush(1_800_000_000), at(1_800_000_000));
        assert!(quiet(&parse("set a 0 0 1 noreply\r\nx\r\n")));
        assert!(!quiet(&parse("mg a q\r\n")));
    }

    #[test]
    fn exptime_follows_memcached() {
        let now = 1_700_000_000_000;
        assert_eq!(expire_at(0, now), None);
        assert_eq!(expire_at(10, now), Some(now + 10_000));
        assert_eq!(
            expire_at(REALTIME_MAXDELTA, now),
            Some(now + REALTIME_MAXDELTA as u64 * 1000)
        );
        assert_eq!(
            expire_at(REALTIME_MAXDELTA + 1, now),
            Some((REALTIME_MAXDELTA as u64 + 1) * 1000)
        );
        assert_eq!(expire_at(1_800_000_000, now), Some(1_800_000_000_000));
        assert_eq!(expire_at(-1, now), Some(0));
    }

    #[test]
    fn counters_parse_like_safe_strtoull() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"12  "), Some(12));
        assert_eq!(parse_u64(b" 12"), Some(12));
        assert_eq!(parse_u64(b"+5"), Some(5));
        assert_eq!(parse_u64(b"12 a"), Some(12));
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b"+"), None);
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"abc"), None);
        assert_eq!(parse_u64(b""), None);
    }
}
