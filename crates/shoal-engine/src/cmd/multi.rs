//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Queueing follows Redis: between MULTI and EXEC every command is checked (known, arity,
//! authentication) and answered `+QUEUED`; a rejected one marks the transaction, and EXEC
//! then answers EXECABORT. WATCH snapshots each key's value and TTL; EXEC aborts (null
//! reply) when any of them differs. As in Redis, EXEC runs the queued commands with no other
//! client's command in between, from the WATCH check on, on every worker thread
//! (`shoal_store::gate`); out of memory, commands are not queued and an EXEC with a write
//! is discarded whole.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{Access, Kind};

use super::{err, execute, flag, lookup, Ctx, ERR_NOREPLICAS, ERR_OOM};

/// A transaction being queued.
#[derive(Default)]
pub struct Multi {
    pub queue: Vec<Vec<Bytes>>,
    /// A command was rejected while queueing: EXEC must abort.
    pub dirty: bool,
}

/// A watched key (as stored: in its database) and what it held at WATCH time.
pub type Watched = (Bytes, Seen);

/// A watched key's type, version and expiry: every write of a value takes a new version, so
/// a key rewritten with the very same value aborts the transaction too, as in Redis. Copies
/// of a key hold the same version, so a snapshot read on one copy is compared on another.
pub type Snapshot = (Kind, u64, Option<u64>);

/// What a watched key held at WATCH time.
#[derive(Debug, Clone)]
pub enum Seen {
    /// Read here.
    Now(Option<Snapshot>),
    /// Read on the node that owns the key (in a cluster): filled when its answer comes;
    /// empty when it never came (WATCH failed), which counts as a change.
    Arriving(std::sync::Arc<std::sync::OnceLock<Option<Snapshot>>>),
    /// Read on the owner at WATCH time (`then`) and read there again just before an EXEC
    /// that cannot run there (`now`, filled when the answer comes): the key changed if they
    /// differ.
    Reread {
        then: Option<Snapshot>,
        now: std::sync::Arc<std::sync::OnceLock<Option<Snapshot>>>,
    },
}

impl Seen {
    /// The snapshot taken at WATCH time, once known.
    pub fn get(&self) -> Option<Option<Snapshot>> {
        match self {
            Seen::Now(s) => Some(*s),
            Seen::Arriving(cell) => cell.get().copied(),
            Seen::Reread { then, .. } => Some(*then),
        }
    }
}

/// The bytes of a snapshot as one node sends it to another ([`SNAPSHOT_LEN`] of them): the
/// type (0 for no key), the version and the expiry (`u64::MAX` for none), big-endian.
pub fn snapshot_bytes(seen: Option<Snapshot>, out: &mut Vec<u8>) {
    let (kind, version, expiry) = match seen {
        None => (0, 0, u64::MAX),
        Some((kind, version, expiry)) => (
            1 + KINDS.iter().position(|&k| k == kind).unwrap_or(0) as u8,
            version,
            expiry.unwrap_or(u64::MAX),
        ),
    };
    out.push(kind);
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&expiry.to_be_bytes());
}

/// The snapshot [`snapshot_bytes`] wrote, if `b` is one.
pub fn snapshot_from(b: &[u8]) -> Option<Option<Snapshot>> {
    let b: &[u8; SNAPSHOT_LEN] = b.try_into().ok()?;
    let word = |at: usize| u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let (version, expiry) = (word(1), word(9));
    match b[0] {
        0 => Some(None),
        k => Some(Some((
            *KINDS.get(usize::from(k) - 1)?,
            version,
            (expiry != u64::MAX).then_some(expiry),
        ))),
    }
}

/// The length of a snapshot's bytes ([`snapshot_bytes`]).
pub const SNAPSHOT_LEN: usize = 17;

/// The types in the order their snapshot byte (less one) names them.
const KINDS: [Kind; 6] = [
    Kind::String,
    Kind::Hash,
    Kind::Set,
    Kind::List,
    Kind::ZSet,
    Kind::Stream,
];

pub fn multi(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    if ctx.session.multi.is_some() {
        return err("ERR MULTI calls can not be nested");
    }
    ctx.session.multi = Some(Multi::default());
    Reply::ok()
}

pub fn discard(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    if ctx.session.multi.take().is_none() {
        return err("ERR DISCARD without MULTI");
    }
    ctx.session.watched.clear();
    Reply::ok()
}

fn snapshot(ctx: &Ctx<'_>, key: &[u8]) -> Option<Snapshot> {
    snapshot_at(ctx.engine, key, ctx.now_ms)
}

fn snapshot_at(node: &crate::engine::Engine, key: &[u8], now_ms: u64) -> Option<Snapshot> {
    node.store.read(key, now_ms, Access::Peek, |e| {
        e.map(|e| (e.kind, e.version, e.expire_at_ms))
    })
}

/// True if any watched key changed since WATCH (EXEC must then abort).
pub fn watched_changed(node: &crate::engine::Engine, watched: &[Watched], now_ms: u64) -> bool {
    watched
        .iter()
        .any(|(k, seen)| seen.get() != Some(snapshot_at(node, k, now_ms)))
}

/// `multi.snapshot key [key ...]` (internal): each key's [`Snapshot`] as [`snapshot_bytes`]
/// writes it, one after the other in a bulk string, for a WATCH on a node that does not
/// own the keys.
pub fn snapshots(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut out = Vec::with_capacity(SNAPSHOT_LEN * (args.len() - 1));
    for key in &args[1..] {
        snapshot_bytes(snapshot(ctx, key), &mut out);
    }
    Reply::Bulk(out.into())
}

/// WATCH's answer inside MULTI (here and in a cluster's WATCH of another node's keys).
pub const ERR_WATCH_IN_MULTI: &str = "ERR WATCH inside MULTI is not allowed";

pub fn watch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if ctx.session.multi.is_some() {
        return err(ERR_WATCH_IN_MULTI);
    }
    for key in &args[1..] {
        if ctx.session.watched.iter().any(|(k, _)| k == key) {
            continue;
        }
        let seen = snapshot(ctx, key);
        ctx.session.watched.push((key.clone(), Seen::Now(seen)));
    }
    Reply::ok()
}

pub fn unwatch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    ctx.session.watched.clear();
    Reply::ok()
}

pub fn exec(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let Some(tx) = ctx.session.multi.take() else {
        return err("ERR EXEC without MULTI");
    };
    let watched = std::mem::take(&mut ctx.session.watched);
    if tx.dirty {
        return err("EXECABORT Transaction discarded because of previous errors.");
    }
    // Out of memory since the commands were queued: a transaction that would write is
    // discarded whole, as Redis's `rejectCommand` does to EXEC, rather than run in part.
    let store = &ctx.engine.store;
    if store.maxmemory() > 0
        && tx
            .queue
            .iter()
            .any(|a| lookup(&a[0]).is_some_and(|s| s.flags & flag::DENYOOM != 0))
        && store.ensure_memory(ctx.now_ms).is_err()
    {
        return Reply::error(format!(
            "EXECABORT Transaction discarded because of: {ERR_OOM}"
        ));
    }
    // Too few replicas for its writes (`min-replicas-to-write`): discarded whole too, never
    // run in part.
    let writes = || {
        tx.queue
            .iter()
            .any(|a| lookup(&a[0]).is_some_and(|spec| spec.flags & flag::WRITE != 0))
    };
    if super::lacks_replicas(ctx.host) && writes() {
        return Reply::error(format!(
            "EXECABORT Transaction discarded because of: {ERR_NOREPLICAS}"
        ));
    }
    // As in Redis, no other client's command runs between the WATCH check and the last
    // queued command, on any worker thread.
    // A script busy past its threshold discards it, as Redis rejects EXEC then.
    let engine = ctx.engine;
    let busy = || engine.running.is_busy();
    engine
        .store
        .exclusive_unless(&busy, || run_queue(ctx, &tx.queue, &watched))
        .unwrap_or_else(|| {
            let busy = engine.running.refusal();
            Reply::error(format!(
                "EXECABORT Transaction discarded because of: {busy}"
            ))
        })
}

fn run_queue(ctx: &mut Ctx<'_>, queue: &[Vec<Bytes>], watched: &[Watched]) -> Reply {
    if watched_changed(ctx.engine, watched, ctx.now_ms) {
        return Reply::NilArray;
    }
    // The replies add up: each one is charged to the reply budget (those that charged their
    // items themselves, MGET and the like, are not charged twice). At the first that does
    // not fit the replies are dropped, and the rest of the transaction still runs, as Redis
    // runs a transaction to its end before it closes the client: each later command with
    // the budget EXEC started with (a write finishes, a read stops where it would have, its
    // reply dropped), and the spent budget then closes the client.
    let mut replies = Vec::with_capacity(queue.len());
    let (start, mut spent) = (ctx.session.budget, None);
    for args in queue {
        if spent.is_some() {
            ctx.session.budget = start;
        }
        // The users may have changed since the command was queued.
        if let Some(refused) = super::acl::exec_refusal(ctx.engine, ctx.session, args) {
            if spent.is_none() {
                replies.push(refused);
            }
            continue;
        }
        let before = ctx.session.budget.left();
        // A blocking command inside a transaction answers at once, as in Redis.
        let no_block = std::mem::replace(&mut ctx.session.no_block, true);
        let reply = execute(ctx.host, ctx.session, args, ctx.now_ms);
        ctx.session.no_block = no_block;
        if spent.is_some() {
            continue;
        }
        let charged_itself = ctx.session.budget.left() != before;
        if ctx.session.budget.exceeded()
            || (!charged_itself && !ctx.session.budget.charge(reply.size_hint()))
        {
            spent = Some(ctx.session.budget);
            replies = Vec::new();
            continue;
        }
        replies.push(reply);
    }
    if let Some(budget) = spent {
        ctx.session.budget = budget;
        return Reply::Nil;
    }
    Reply::Array(replies)
}
