//! Running a command here, in a cluster: the one entry, [`run_here`], runs it on the local
//! store and queues the new state of every key it wrote for the key's other copies. The
//! rest are the ways a command comes to run here: as the owner of its keys ([`run_owned`],
//! which first fetches keys still on their way here), sent by another node
//! ([`serve_command`]), or after a wait for its key's turn ([`serve_after_wait`],
//! [`serve_body_here`]).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use shoal_engine::client::ClientInfo;
use shoal_engine::cmd::{self, flag, CommandSpec, Prepared, Route, Session};
use shoal_engine::config::WriteAck;
use shoal_engine::hooks::SlotScope;
use shoal_resp::{Protocol, Reply};

use super::outcome::{encode, error_bytes, reply_limit, with_acks, Outcome};
use crate::message::{decode_request, Change, Request, Scope, ScopeSpec};
use crate::replicate::{replicate_keys, unconfirmed, wait_acks, Acks};
use crate::{handoff, Cluster, Server, View};

/// Runs a prepared command on this node's store, then queues the new state of each key it
/// wrote for that key's other copies (the keys at the command's key positions when it
/// writes; for EXEC, the keys of the queued writes). Every command that runs here in a
/// cluster runs through this function (save MSET's odd-count error, which writes nothing).
/// Returns the reply and what it is to wait for: with `write-ack = all` the replicas'
/// acks, and while some client tracks, the other members' taking of the invalidations it
/// caused (`invalidations::telling`), so that its reply follows them as in Redis.
#[allow(clippy::too_many_arguments)]
pub fn run_here(
    node: &Server,
    cluster: &Cluster,
    view: &View,
    session: &mut Session,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
    scope: Option<&dyn SlotScope>,
) -> (Reply, Acks) {
    // EXEC writes what its queue writes; read the queue before EXEC takes it (each
    // command in the database selected when it runs: a queued SELECT changes it).
    let queued: Option<Vec<Bytes>> = (spec.route == Route::Exec).then(|| {
        let mut db = session.db;
        session.multi.as_ref().map_or_else(Vec::new, |tx| {
            let mut keys = Vec::new();
            for a in &tx.queue {
                let Some(s) = cmd::lookup(&a[0]) else {
                    continue;
                };
                if s.name == "select" {
                    db = cmd::db::after_select(a, db, session.redis_cluster);
                } else if cmd::may_write(s) {
                    keys.extend(cmd::db::stored_keys(s, a, db));
                }
            }
            keys
        })
    });
    let db = session.db;
    // A deterministic write of one key notes the versions it takes: one write on a live key
    // can go to the replicas as its command (a delta) instead of the key's state.
    let may_delta = spec.flags & flag::DELTA != 0 && session.multi.is_none();
    let run = |session: &mut Session| {
        if may_delta {
            shoal_store::record_writes(None, || cmd::run(node, session, spec, args, now_ms, scope))
        } else {
            let reply = cmd::run(node, session, spec, args, now_ms, scope);
            (reply, shoal_store::Writes::default())
        }
    };
    // While some client tracks, the members told of what it changed (see above).
    let ((reply, writes), told) = if node.engine.tracker.active() {
        crate::invalidations::telling(|| run(session))
    } else {
        (run(session), Vec::new())
    };
    // What the replicas run in its place, when its own arguments would not give the same
    // result there (XADD's `*`).
    let propagate = session.propagate.take();
    // The copies to send to are those of the view the command was routed under (their acks
    // are awaited) and of the view current now, after the write (it may have changed while
    // the command waited for a fetch, or since its batch was read): a hand-off that started
    // under the newer view may have streamed the slot before this write, and would never
    // send it to the slot's new copies.
    let now_view = cluster.view_now();
    if view.placement.width() < 2 && now_view.placement.width() < 2 {
        return (reply, Acks::told(told));
    }
    // What to send: the queued writes' keys (EXEC), or the command's, with its delta.
    let (keys, delta) = match queued {
        Some(keys) => (keys, None),
        // A deterministic write that changed nothing (SADD of a member already there, HSET
        // of the same value) has nothing to send: its replicas hold the same state.
        None if may_delta && writes.count == 0 => return (reply, Acks::told(told)),
        // SORT or GEORADIUS without STORE: a read, whose key's state the replicas hold.
        None if cmd::db::writes_nothing(spec, args) => return (reply, Acks::told(told)),
        None if cmd::may_write(spec) => {
            let keys = cmd::db::stored_keys(spec, args, db);
            let delta = (may_delta && keys.len() == 1)
                .then(|| {
                    let args = propagate.as_deref().unwrap_or(args);
                    delta_of(node, spec, args, db, &keys[0], writes, now_ms)
                })
                .flatten();
            (keys, delta)
        }
        None => return (reply, Acks::told(told)),
    };
    let delta = delta.map(|d| (&keys[0], d));
    let mut acks = replicate_keys(
        node,
        view,
        &now_view,
        &cluster.stats,
        keys.iter(),
        now_ms,
        cluster.write_ack == WriteAck::All,
        delta,
    );
    acks.told = told;
    (reply, acks)
}

/// The delta of a write that ran here (see `message::Change`), when one is right and worth
/// it: exactly one write, on a key that existed (at version `writes.base`), and the key
/// still at the version that write gave it (no other client's write came in between) and
/// larger than the command. The command travels with the key as stored.
fn delta_of(
    node: &Server,
    spec: &CommandSpec,
    args: &[Bytes],
    db: u8,
    key: &Bytes,
    writes: shoal_store::Writes,
    now_ms: u64,
) -> Option<Change> {
    let base = writes.base.filter(|_| writes.count == 1)?;
    // The command's size as a RESP multibulk, before building it: most keys are small and
    // go as their state.
    let digits = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let size = 3
        + digits(args.len())
        + args
            .iter()
            .map(|a| 5 + digits(a.len() + 4 * usize::from(db != 0)) + a.len())
            .sum::<usize>()
        + 4 * usize::from(db != 0);
    let expire = node
        .engine
        .store
        .read(key, now_ms, shoal_store::Access::Peek, |e| {
            e.filter(|e| e.version == writes.new && e.charge > 2 * size as u64)
                .map(|e| e.expire_at_ms.unwrap_or(0))
        })?;
    let stored_args;
    let args = if db == 0 {
        args
    } else {
        // (Its keys fitted: the command ran.)
        stored_args = cmd::db::rewrite(spec, args, db)?;
        &stored_args[..]
    };
    let mut command = BytesMut::with_capacity(size);
    crate::message::put_multibulk(&mut command, args);
    Some(Change::Delta {
        base,
        version: writes.new,
        expire_at_ms: expire,
        command: command.freeze(),
        // A stream command's result depends on the time (delivery times, idle checks).
        clock_ms: if spec.group == "stream" { now_ms } else { 0 },
    })
}

/// The keys a command names (by its key specification), as stored for database `db`, if
/// it is a known command.
pub fn command_keys(args: &[Bytes], db: u8) -> Option<Vec<Bytes>> {
    if let Some(tx) = crate::message::decode_transaction(args) {
        // A forwarded transaction (`message::TRANSACTION`): its commands' keys.
        let keys = tx
            .queue
            .iter()
            .filter_map(|a| Some(cmd::db::stored_keys(cmd::lookup(a.first()?)?, a, db)));
        return Some(keys.flatten().collect());
    }
    Some(cmd::db::stored_keys(cmd::lookup(args.first()?)?, args, db))
}

/// Before a failover runs here (the keys' owner could not be reached): orders its writes of
/// `keys` after every version the lost owner may have given them, also in replication still
/// on its way here ([`Cluster::failover_ahead_ms`]).
pub fn order_failover(node: &Server, cluster: &Cluster, keys: &[Bytes], now_ms: u64) {
    let version = (now_ms + cluster.failover_ahead_ms()) << 12;
    for key in keys {
        node.engine.store.order_after(key, version);
    }
}

/// Runs a command here, as the owner of its keys (see [`run_here`]); with `write-ack = all`
/// the reply waits for the replicas. While the cluster is unsettled, keys still on their way
/// here are fetched from their other copies first.
pub fn run_owned(
    node: &Arc<Server>,
    cluster: &Cluster,
    view: &View,
    session: &mut Session,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    // WATCH needs no fetch: a key that arrives later counts as changed, and EXEC aborts.
    if spec.route != Route::Watch && !cluster.handoff.settled_in(view) {
        let keys = cmd::db::stored_keys(spec, args, session.db);
        let view = cluster.view();
        if let handoff::Before::Wait(wait) = handoff::before(node, cluster, &view, &keys, now_ms) {
            // Unsettled and a key may not be here yet: fetch it from its other copies first
            // (in arrival order per key), then run the command as a forwarded one runs.
            let node = node.clone();
            let (proto, args, limit) = (session.proto, args.to_vec(), reply_limit(session));
            let (db, once) = (session.db, session.no_block);
            // A tracking client's read remembers this node as the reader, as another node's
            // would (`super::tracked`).
            let origin = super::tracked::origin(cluster, session, super::tracked::reads(spec));
            return Outcome::Later(Box::pin(async move {
                let (fetched, turn) = wait.await;
                if fetched == handoff::Fetched::Unanswered && !cmd::runs_in_doubt(&args) {
                    return Bytes::from_static(handoff::UNANSWERED);
                }
                serve_after_wait(
                    &node, &view, proto, db, None, &args, turn, 0, limit, once, origin,
                )
                .await
            }));
        }
    }
    let (reply, acks) = run_here(node, cluster, view, session, spec, args, now_ms, None);
    with_acks(reply, session.proto, acks, cluster.timeouts.half)
}

/// Runs a COMMAND body on this node (a failover to ourselves),
/// `ahead` milliseconds ahead (see `message`), after what `handoff::before` asks for.
pub async fn serve_body_here(
    node: &Arc<Server>,
    view: &Arc<View>,
    body: Bytes,
    ahead: u64,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    match decode_request(body, |b| parse_command(node, b)) {
        Ok(Request::Command {
            proto,
            db,
            scope,
            args,
            reply_limit,
            once,
            origin,
            ..
        }) => {
            let mut turn = handoff::KeyTurn::none();
            if scope.is_none() {
                let keys = command_keys(&args, db).unwrap_or_default();
                let now = shoal_engine::clock::now_ms();
                if ahead > 0 {
                    order_failover(node, cluster, &keys, now);
                }
                if let handoff::Before::Wait(wait) =
                    handoff::before(node, cluster, view, &keys, now)
                {
                    let fetched;
                    (fetched, turn) = wait.await;
                    if fetched == handoff::Fetched::Unanswered && !cmd::runs_in_doubt(&args) {
                        return Bytes::from_static(handoff::UNANSWERED);
                    }
                }
            }
            serve_after_wait(
                node,
                view,
                proto,
                db,
                scope,
                &args,
                turn,
                ahead,
                reply_limit,
                once,
                origin,
            )
            .await
        }
        Ok(_) => error_bytes("ERR unexpected inter-node message"),
        Err(e) => error_bytes(&format!("ERR bad inter-node message: {e}")),
    }
}

/// Parses the RESP command inside a COMMAND body with the node's request limits.
pub fn parse_command(node: &Server, body: Bytes) -> Result<Vec<Bytes>, String> {
    let mut buf = BytesMut::from(&body[..]);
    let mut parser = shoal_resp::RequestParser::new();
    match parser.parse(&mut buf, &node.engine.limits(), true) {
        Ok(Some(args)) if buf.is_empty() => Ok(args),
        Ok(Some(_)) => Err("trailing bytes after the command".into()),
        Ok(None) => Err("incomplete command".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs a fan-out's part (KEYS, SCAN, DBSIZE, RANDOMKEY over `scope`), for this node's own
/// share or another node's request, on the blocking pool: it may walk the whole store, and
/// nothing else on the worker (other connections, the replication it sends) should wait for
/// it. Reads only, so they need no ordering. `None` if the part panicked.
pub async fn serve_part_blocking(
    node: Arc<Server>,
    view: Arc<View>,
    proto: Protocol,
    db: u8,
    scope: ScopeSpec,
    args: Vec<Bytes>,
) -> Option<Bytes> {
    let part = tokio::task::spawn_blocking(move || {
        let cluster = node.cluster.as_ref().expect("a fan-out runs in a cluster");
        let (bytes, _, _) = serve_command(
            &node,
            cluster,
            &view,
            &cluster.internal,
            proto,
            db,
            Some(scope),
            &args,
            shoal_engine::clock::now_ms(),
            0,
            None,
        );
        bytes
    });
    part.await.ok()
}

/// Runs a command that another node sent (or a fan-out's local part) here, without routing
/// it again (see [`run_here`]). Returns the reply in `proto`, with `write-ack = all` the
/// acks to wait for, and a blocking command's wait when it found nothing (then the reply
/// is only its timeout reply: see [`super::serve_blocked`]).
#[allow(clippy::too_many_arguments)]
pub fn serve_command(
    node: &Server,
    cluster: &Cluster,
    view: &Arc<View>,
    info: &Arc<ClientInfo>,
    proto: Protocol,
    db: u8,
    scope: Option<ScopeSpec>,
    args: &[Bytes],
    now_ms: u64,
    reply_limit: u64,
    origin: Option<crate::message::Origin>,
) -> (Bytes, Acks, Option<shoal_engine::blocking::Block>) {
    let mut session = Session::new(info.clone(), true);
    session.proto = proto;
    session.db = db;
    session.origin = origin;
    if db != 0 {
        // A client of another node selected it: this node's listings sort by database too.
        node.engine
            .numbered_dbs
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    // Sent by another node, or a fan-out's own part: may carry a Memcached request.
    session.internal = true;
    if reply_limit > 0 {
        session.budget = cmd::ReplyBudget::new(reply_limit.min(cmd::FORWARDED_REPLY_MAX as u64));
    }
    let scope = scope.map(|s| Scope::new(s, view.clone()));
    // A client's transaction sent whole (`message::TRANSACTION`): run as its EXEC here.
    let exec = [Bytes::from_static(b"EXEC")];
    let args = match crate::message::decode_transaction(args) {
        Some(tx) => {
            session.multi = Some(cmd::multi::Multi {
                queue: tx.queue,
                dirty: false,
            });
            // What its watched keys held at WATCH time, on the client's node: compared
            // here, where EXEC runs.
            session.watched = tx
                .watched
                .into_iter()
                .map(|(key, seen)| (key, cmd::multi::Seen::Now(seen)))
                .collect();
            &exec[..]
        }
        None if args
            .first()
            .is_some_and(|a| crate::message::is_transaction(a)) =>
        {
            let reply = Reply::error("ERR malformed forwarded transaction");
            return (encode(&reply, proto), Acks::default(), None);
        }
        None => args,
    };
    let (reply, acks) = match cmd::prepare(&node.engine, &mut session, args) {
        Prepared::Done(reply) => (reply, Acks::default()),
        Prepared::Run(spec) => {
            let scope = scope.as_ref().map(|s| s as &dyn SlotScope);
            run_here(node, cluster, view, &mut session, spec, args, now_ms, scope)
        }
    };
    let reply = if session.budget.exceeded() {
        Reply::error("ERR reply exceeds the client output buffer limit")
    } else {
        reply
    };
    (encode(&reply, proto), acks, session.block.take())
}

/// [`serve_command`] once a command's wait is over (a fetch, its key's turn): runs it on the
/// local store, hands the key's turn on, then waits for the replicas' acks.
#[allow(clippy::too_many_arguments)]
pub async fn serve_after_wait(
    node: &Arc<Server>,
    view: &Arc<View>,
    proto: Protocol,
    db: u8,
    scope: Option<ScopeSpec>,
    args: &[Bytes],
    turn: handoff::KeyTurn,
    ahead: u64,
    reply_limit: u64,
    once: bool,
    origin: Option<crate::message::Origin>,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    // The view may have changed while waiting: replicate to the copies it names now. A scope
    // keeps the view it was resolved against.
    let now_view;
    let view = if scope.is_none() {
        now_view = cluster.view();
        &now_view
    } else {
        view
    };
    let (bytes, acks, block) = serve_command(
        node,
        cluster,
        view,
        &cluster.internal,
        proto,
        db,
        scope,
        args,
        shoal_engine::clock::now_ms() + ahead,
        reply_limit,
        origin,
    );
    drop(turn);
    if let Some(block) = block.filter(|_| !once) {
        return super::serve_blocked(node, &cluster.internal, proto, db, args, block).await;
    }
    if wait_acks(acks, cluster.timeouts.half).await {
        bytes
    } else {
        unconfirmed(bytes)
    }
}
