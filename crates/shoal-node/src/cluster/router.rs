//! The router: where each client command runs.
//!
//! `dispatch` is what a client connection calls for every request. After the usual checks
//! (`cmd::prepare`) a command is, by its key specification:
//! - keyless (PING, CONFIG, CLIENT, ...): run here;
//! - one key: run here when this node owns the key's slot (then the key's new state is
//!   replicated), otherwise forwarded to the owner, whose reply bytes are returned verbatim;
//!   read-modify-write commands therefore always run at the owner;
//! - MGET, MSET, DEL, UNLINK, EXISTS, TOUCH: split by the keys' copies, the parts run at
//!   once (here or forwarded), the replies merged in the client's order;
//! - MSETNX, RENAME, RENAMENX, COPY: run at the one owner of all their keys, or refused with
//!   CROSSSLOT when the keys have different owners (they could not be atomic);
//! - DBSIZE, KEYS, SCAN, RANDOMKEY, FLUSHALL, FLUSHDB, INFO keyspace: fanned out (`fanout`).
//!
//! A forwarded request that cannot reach the owner (refused, reset, timed out) goes at once
//! to the next copy; a client sees an error only when no copy answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::join_all;
use shoal_resp::{array_elements, integer_value, is_error, Protocol, Reply};
use shoal_store::key_slot;
use shoal_wire::{ErrorCode, WireError};

use super::message::{decode_request, encode_command, Request, Scope, ScopeSpec};
use super::plan::{plan, Plan};
use super::replicate::{replicate_keys, wait_acks};
use super::{fanout, handoff, message, Cluster, View};
use crate::client::ClientInfo;
use crate::cluster::Server;
use crate::cmd::{self, flag, CommandSpec, Merge, Prepared, Route, Session};
use crate::config::WriteAck;

/// A reply still to come, as encoded bytes in the client's protocol.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Bytes> + Send + 'static>>;

/// The result of routing one command.
pub enum Outcome {
    /// Answered here, now.
    Reply(Reply),
    /// Answered later (forwarded, fanned out, or waiting for replica acks).
    Later(ReplyFuture),
}

/// Runs one client request wherever it belongs.
pub fn dispatch(node: &Arc<Server>, session: &mut Session, args: &[Bytes], now_ms: u64) -> Outcome {
    let spec = match cmd::prepare(&node.engine, session, args) {
        Prepared::Run(spec) => spec,
        Prepared::Done(reply) => return Outcome::Reply(reply),
    };
    match &node.cluster {
        None => Outcome::Reply(cmd::run(&**node, session, spec, args, now_ms, None)),
        Some(cluster) => route(node, cluster, session, spec, args, now_ms),
    }
}

/// True if `args` would write keys this node owns, right away. A connection that still
/// waits for forwarded replies holds such a command back until they are in, so a pipeline's
/// writes cannot become visible before the commands sent earlier ran. A read of an owned key
/// is not held: reading an older value is something a single node could also have answered.
pub fn writes_local_keys(node: &Server, args: &[Bytes]) -> bool {
    let Some(cluster) = &node.cluster else {
        return false;
    };
    let Some(spec) = cmd::lookup(&args[0]) else {
        return false;
    };
    if spec.flags & flag::WRITE == 0 {
        return false;
    }
    match spec.route {
        Route::Owner | Route::Split(_) | Route::Watch => {
            let view = cluster.view();
            key_positions(spec, args)
                .iter()
                .any(|&p| view.owner_of(&args[p]) == view.me)
        }
        Route::Here | Route::AllNodes(_) | Route::Info | Route::Exec | Route::Cluster => false,
    }
}

/// The keys a command names (by its key specification), if it is a known command.
pub fn command_keys(args: &[Bytes]) -> Option<Vec<Bytes>> {
    Some(cmd::lookup(args.first()?)?.keys(args))
}

/// The argument positions of a command's keys (Redis's first/last/step key spec).
pub fn key_positions(spec: &CommandSpec, args: &[Bytes]) -> Vec<usize> {
    spec.key_positions(args.len()).collect()
}

fn route(
    node: &Arc<Server>,
    cluster: &Cluster,
    session: &mut Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    let proto = session.proto;
    let view = cluster.view();
    let accepting = cluster.accepting.load(Ordering::Acquire);
    match plan(&view.placement, view.me, accepting, spec, args) {
        Plan::Here => Outcome::Reply(cmd::run(&**node, session, spec, args, now_ms, None)),
        Plan::Owned(positions) => {
            run_owned(node, cluster, &view, session, spec, args, now_ms, positions)
        }
        Plan::Forward { owners, write } => {
            let limit = reply_limit(session);
            let body = encode_command(proto, None, args, cluster.deadline_ms(), limit);
            forward(node, view, owners, body, write)
        }
        Plan::Split(merge) => split(node, cluster, session, spec, args, now_ms, merge),
        Plan::AllNodes => fanout::start(node, cluster, spec, args, proto),
        Plan::InfoKeyspace => fanout::info(node, args, proto),
        Plan::Exec => exec(node, cluster, session, spec, args, now_ms),
        Plan::TryAgain => Outcome::Reply(Reply::error(
            "TRYAGAIN this node is joining the cluster; retry in a moment",
        )),
        Plan::CrossSlot => Outcome::Reply(Reply::error(format!(
            "CROSSSLOT Keys in request are owned by different nodes, so {} cannot be \
             atomic; keep them together with a {{hash tag}}",
            spec.name.to_ascii_uppercase()
        ))),
        Plan::WatchNotOwned => Outcome::Reply(Reply::error(
            "ERR WATCH is supported only for keys this node owns in a Shoal cluster \
             (see CLUSTER KEYSLOT and CLUSTER NODES)",
        )),
    }
}

/// Runs a command here, as the owner of its keys, then queues the keys' new states for
/// their replicas (write commands only). With `write-ack = all` the reply waits for them.
#[allow(clippy::too_many_arguments)]
fn run_owned(
    node: &Arc<Server>,
    cluster: &Cluster,
    view: &View,
    session: &mut Session,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
    keys: impl Iterator<Item = usize> + Clone,
) -> Outcome {
    // WATCH needs no fetch: a key that arrives later counts as changed, and EXEC aborts.
    if spec.name != "watch" && !cluster.handoff.settled_in(view) {
        let keys: Vec<Bytes> = keys.clone().filter_map(|i| args.get(i).cloned()).collect();
        let view = cluster.view();
        if let handoff::Before::Wait(wait) = handoff::before(node, cluster, &view, &keys, now_ms) {
            // Unsettled and a key may not be here yet: fetch it from its other copies first
            // (in arrival order per key), then run the command as a forwarded one runs.
            let node = node.clone();
            let (proto, args, limit) = (session.proto, args.to_vec(), reply_limit(session));
            return Outcome::Later(Box::pin(async move {
                let (_, turn) = wait.await;
                serve_after_wait(&node, &view, proto, None, &args, turn, 0, limit).await
            }));
        }
    }
    let reply = cmd::run(&**node, session, spec, args, now_ms, None);
    if spec.flags & flag::WRITE == 0 {
        return Outcome::Reply(reply);
    }
    let want_ack = cluster.write_ack == WriteAck::All;
    let acks = replicate_keys(
        node,
        view,
        &cluster.stats,
        keys.filter_map(|i| args.get(i)),
        now_ms,
        want_ack,
    );
    if acks.is_empty() {
        return Outcome::Reply(reply);
    }
    let bytes = encode(&reply, session.proto);
    let ack_wait = cluster.timeouts.half;
    Outcome::Later(Box::pin(async move {
        wait_acks(acks, ack_wait).await;
        bytes
    }))
}

pub fn encode(reply: &Reply, proto: Protocol) -> Bytes {
    let mut b = BytesMut::new();
    reply.encode(proto, &mut b);
    b.freeze()
}

/// An error reply's bytes (the same in RESP2 and RESP3).
pub fn error_bytes(text: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(text.len() + 3);
    b.put_u8(b'-');
    b.put_slice(text.replace(['\r', '\n'], " ").as_bytes());
    b.put_slice(b"\r\n");
    b.freeze()
}

fn forward(
    node: &Arc<Server>,
    view: Arc<View>,
    owners: Vec<u16>,
    body: Bytes,
    write: bool,
) -> Outcome {
    Outcome::Later(Box::pin(send_to_copies(
        node.clone(),
        view,
        owners,
        body,
        write,
    )))
}

/// Whether a failed request should go to the next copy: when the copy cannot be reached
/// (connection refused or reset, no answer in time, shutting down), reads and writes alike,
/// as the cluster issue asks: a cache stays available, and last-writer-wins on versions
/// settles a write that both a slow owner and its replica applied (a retried INCR may then
/// count twice). A handshake refusal (another secret or cluster name) is a configuration
/// error: reads go on, writes do not, so a misconfigured pair cannot make a second writer
/// for good.
pub fn fails_over(e: &WireError, write: bool) -> bool {
    match e {
        WireError::PeerUnavailable(_) | WireError::Timeout => true,
        WireError::Remote { code, .. } => *code == ErrorCode::ShuttingDown,
        WireError::Refused(_) => !write,
        WireError::Overloaded | WireError::Frame(_) => false,
    }
}

/// Sends a COMMAND body to the first copy that answers, in `owners` order (this node runs
/// it itself when its turn comes), and returns the reply bytes.
pub async fn send_to_copies(
    node: Arc<Server>,
    view: Arc<View>,
    owners: Vec<u16>,
    body: Bytes,
    write: bool,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let mut last_error = String::new();
    for (i, &m) in owners.iter().enumerate() {
        if i > 0 {
            cluster.stats.failovers.fetch_add(1, Ordering::Relaxed);
        }
        if m == view.me {
            // This node is the next copy: run it here, a millisecond ahead when it is a
            // failover (see `message`).
            return serve_body_here(&node, &view, body, u64::from(i > 0)).await;
        }
        let Some(peer) = view.peer(m) else { continue };
        cluster.stats.forwarded.fetch_add(1, Ordering::Relaxed);
        let name = &view.nodes[usize::from(m)].name;
        // A later attempt gets a deadline of its own.
        let attempt = if i == 0 {
            body.clone()
        } else {
            message::restamp(&body, cluster.deadline_ms())
        };
        match peer.client.request(view.id, attempt).await {
            Ok(response) => {
                peer.reachable.store(true, Ordering::Relaxed);
                if handoff::try_next_copy(&response.body) && i + 1 < owners.len() {
                    // A copy that is starting, or that got the request too late: the next
                    // copy has the key.
                    last_error = format!(
                        "{name}: {}",
                        String::from_utf8_lossy(&response.body).trim_end()
                    );
                    continue;
                }
                return response.body;
            }
            Err(e) if fails_over(&e, write) => {
                peer.reachable.store(false, Ordering::Relaxed);
                tracing::debug!(node = %name, error = %e, "copy unreachable, trying the next");
                last_error = format!("{name}: {e}");
            }
            Err(e) => {
                cluster.stats.unreachable.fetch_add(1, Ordering::Relaxed);
                return error_bytes(&format!("ERR request to node {name} failed: {e}"));
            }
        }
    }
    cluster.stats.unreachable.fetch_add(1, Ordering::Relaxed);
    error_bytes(&format!(
        "CLUSTERDOWN no copy of this key is reachable (last error: {last_error})"
    ))
}

/// What a forwarded command's reply may take: the client's budget (0 = only the frame's).
fn reply_limit(session: &Session) -> u64 {
    match session.budget.left() {
        n if n >= cmd::FORWARDED_REPLY_MAX => 0,
        n => n as u64,
    }
}

/// Runs a COMMAND body on this node (a failover to ourselves, or a fan-out's local part),
/// `ahead` milliseconds ahead (see `message`), after what `handoff::before` asks for.
async fn serve_body_here(node: &Arc<Server>, view: &Arc<View>, body: Bytes, ahead: u64) -> Bytes {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    match decode_request(body, |b| parse_command(node, b)) {
        Ok(Request::Command {
            proto,
            scope,
            args,
            reply_limit,
            ..
        }) => {
            let mut turn = handoff::KeyTurn::none();
            if scope.is_none() {
                let keys = command_keys(&args).unwrap_or_default();
                let now = crate::clock::now_ms();
                if let handoff::Before::Wait(wait) =
                    handoff::before(node, cluster, view, &keys, now)
                {
                    turn = wait.await.1;
                }
            }
            serve_after_wait(node, view, proto, scope, &args, turn, ahead, reply_limit).await
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

/// Runs a command that another node sent (or a fan-out's local part) on the local store,
/// without routing it again, and replicates what it wrote to the keys' other copies. Returns
/// the reply in `proto` and, with `write-ack = all`, the acks to wait for.
#[allow(clippy::too_many_arguments)]
pub fn serve_command(
    node: &Server,
    cluster: &Cluster,
    view: &Arc<View>,
    info: &Arc<ClientInfo>,
    proto: Protocol,
    scope: Option<ScopeSpec>,
    args: &[Bytes],
    now_ms: u64,
    reply_limit: u64,
) -> (Bytes, Vec<tokio::sync::oneshot::Receiver<bool>>) {
    let mut session = Session::new(info.clone(), true);
    session.proto = proto;
    if reply_limit > 0 {
        session.budget = cmd::ReplyBudget::new(reply_limit.min(cmd::FORWARDED_REPLY_MAX as u64));
    }
    let scope = scope.map(|s| Scope::new(s, view.clone()));
    let mut acks = Vec::new();
    let reply = match cmd::prepare(&node.engine, &mut session, args) {
        Prepared::Done(reply) => reply,
        Prepared::Run(spec) => {
            let scope = scope.as_ref().map(|s| s as &dyn crate::hooks::SlotScope);
            let reply = cmd::run(node, &mut session, spec, args, now_ms, scope);
            if spec.flags & flag::WRITE != 0 {
                let positions = key_positions(spec, args);
                acks = replicate_keys(
                    node,
                    view,
                    &cluster.stats,
                    positions.iter().map(|&i| &args[i]),
                    now_ms,
                    cluster.write_ack == WriteAck::All,
                );
            }
            reply
        }
    };
    let reply = if session.budget.exceeded() {
        Reply::error("ERR reply exceeds the client output buffer limit")
    } else {
        reply
    };
    (encode(&reply, proto), acks)
}

/// [`serve_command`] once a command's wait is over (a fetch, its key's turn): runs it on the
/// local store, hands the key's turn on, then waits for the replicas' acks.
#[allow(clippy::too_many_arguments)]
pub async fn serve_after_wait(
    node: &Arc<Server>,
    view: &Arc<View>,
    proto: Protocol,
    scope: Option<ScopeSpec>,
    args: &[Bytes],
    turn: handoff::KeyTurn,
    ahead: u64,
    reply_limit: u64,
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
    let (bytes, acks) = serve_command(
        node,
        cluster,
        view,
        &cluster.internal,
        proto,
        scope,
        args,
        crate::clock::now_ms() + ahead,
        reply_limit,
    );
    drop(turn);
    wait_acks(acks, cluster.timeouts.half).await;
    bytes
}

/// MGET, MSET, DEL, UNLINK, EXISTS, TOUCH: one part per set of copies, run at once, merged
/// in the client's key order.
fn split(
    node: &Arc<Server>,
    cluster: &Cluster,
    session: &mut Session,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
    merge: Merge,
) -> Outcome {
    let step = if merge == Merge::AllOk { 2 } else { 1 };
    if !(args.len() - 1).is_multiple_of(step) {
        // MSET with an odd count: the local handler gives Redis's error.
        return Outcome::Reply(cmd::run(&**node, session, spec, args, now_ms, None));
    }
    let proto = session.proto;
    let view = cluster.view();
    let mut groups: Vec<(&[u16], Vec<usize>)> = Vec::new();
    for pos in (1..args.len()).step_by(step) {
        let owners = view.owners(key_slot(&args[pos]));
        match groups.iter_mut().find(|(o, _)| *o == owners) {
            Some((_, g)) => g.push(pos),
            None => groups.push((owners, vec![pos])),
        }
    }
    if groups.len() == 1 {
        let owners = groups[0].0;
        if owners[0] == view.me {
            let positions = groups.pop().map(|(_, p)| p).unwrap_or_default();
            return run_owned(
                node,
                cluster,
                &view,
                session,
                spec,
                args,
                now_ms,
                positions.into_iter(),
            );
        }
        let owners = owners.to_vec();
        let write = spec.flags & flag::WRITE != 0;
        let body = encode_command(
            proto,
            None,
            args,
            cluster.deadline_ms(),
            reply_limit(session),
        );
        return forward(node, view.clone(), owners, body, write);
    }
    let mut positions = Vec::with_capacity(groups.len());
    let mut parts: Vec<ReplyFuture> = Vec::with_capacity(groups.len());
    for (owners, group) in &groups {
        let mut sub = Vec::with_capacity(1 + group.len() * step);
        sub.push(args[0].clone());
        for &p in group {
            sub.extend_from_slice(&args[p..p + step]);
        }
        let part: ReplyFuture = if owners[0] == view.me {
            let keys = (1..sub.len()).step_by(step);
            match run_owned(node, cluster, &view, session, spec, &sub, now_ms, keys) {
                Outcome::Reply(r) => {
                    let bytes = encode(&r, proto);
                    Box::pin(async move { bytes })
                }
                Outcome::Later(f) => f,
            }
        } else {
            Box::pin(send_to_copies(
                node.clone(),
                view.clone(),
                owners.to_vec(),
                encode_command(
                    proto,
                    None,
                    &sub,
                    cluster.deadline_ms(),
                    reply_limit(session),
                ),
                spec.flags & flag::WRITE != 0,
            ))
        };
        positions.push(group.clone());
        parts.push(part);
    }
    let keys = (args.len() - 1) / step;
    Outcome::Later(Box::pin(async move {
        let replies = join_all(parts).await;
        merge_parts(merge, keys, step, &positions, &replies)
    }))
}

fn merge_parts(
    merge: Merge,
    keys: usize,
    step: usize,
    positions: &[Vec<usize>],
    replies: &[Bytes],
) -> Bytes {
    if let Some(e) = replies.iter().find(|r| is_error(r)) {
        return e.clone();
    }
    let bad = || error_bytes("ERR unexpected reply from another node");
    match merge {
        Merge::AllOk => Bytes::from_static(b"+OK\r\n"),
        Merge::Sum => {
            let mut sum = 0i64;
            for r in replies {
                match integer_value(r) {
                    Some(n) => sum += n,
                    None => return bad(),
                }
            }
            Bytes::from(format!(":{sum}\r\n"))
        }
        Merge::Values => {
            let mut slots: Vec<&[u8]> = vec![&[]; keys];
            for (group, reply) in positions.iter().zip(replies) {
                let Ok(elements) = array_elements(reply) else {
                    return bad();
                };
                if elements.len() != group.len() {
                    return bad();
                }
                for (&p, range) in group.iter().zip(elements) {
                    slots[(p - 1) / step] = &reply[range];
                }
            }
            let mut out =
                BytesMut::with_capacity(slots.iter().map(|s| s.len()).sum::<usize>() + 16);
            out.put_slice(format!("*{keys}\r\n").as_bytes());
            for s in slots {
                out.put_slice(s);
            }
            out.freeze()
        }
    }
}

/// EXEC in a cluster: a transaction whose commands all run here executes as on a single
/// node; otherwise each queued command is routed on its own (in order, without isolation,
/// as Shoal's EXEC never isolates) and the replies are gathered into EXEC's array.
fn exec(
    node: &Arc<Server>,
    cluster: &Cluster,
    session: &mut Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    let view = cluster.view();
    let runs_here = |a: &Vec<Bytes>| -> bool {
        let Some(s) = cmd::lookup(&a[0]) else {
            return true;
        };
        match s.route {
            Route::Here | Route::Cluster => true,
            Route::Exec | Route::AllNodes(_) | Route::Info => false,
            Route::Owner | Route::Split(_) | Route::Watch => key_positions(s, a)
                .iter()
                .all(|&p| view.owner_of(&a[p]) == view.me),
        }
    };
    let Some(tx) = session.multi.as_ref() else {
        return Outcome::Reply(cmd::run(&**node, session, spec, args, now_ms, None));
    };
    // While unsettled, a transaction touching keys still on their way here runs command by
    // command (each fetches first), like one across owners.
    let arriving = |a: &Vec<Bytes>| -> bool {
        cmd::lookup(&a[0]).is_some_and(|s| {
            let keys = key_positions(s, a);
            !handoff::missing(node, cluster, &view, keys.iter().map(|&p| &a[p]), now_ms).is_empty()
        })
    };
    let settled = cluster.handoff.settled_in(&view);
    if tx.dirty || (tx.queue.iter().all(runs_here) && (settled || !tx.queue.iter().any(arriving))) {
        let queued = tx.queue.clone();
        let reply = cmd::run(&**node, session, spec, args, now_ms, None);
        if view.placement.width() > 1 {
            let mut keys: Vec<Bytes> = Vec::new();
            for a in &queued {
                if let Some(s) = cmd::lookup(&a[0]).filter(|s| s.flags & flag::WRITE != 0) {
                    keys.extend(key_positions(s, a).into_iter().map(|p| a[p].clone()));
                }
            }
            let acks = replicate_keys(
                node,
                &view,
                &cluster.stats,
                keys.iter(),
                now_ms,
                cluster.write_ack == WriteAck::All,
            );
            if !acks.is_empty() {
                let bytes = encode(&reply, session.proto);
                let ack_wait = cluster.timeouts.half;
                return Outcome::Later(Box::pin(async move {
                    wait_acks(acks, ack_wait).await;
                    bytes
                }));
            }
        }
        return Outcome::Reply(reply);
    }
    let tx = session.multi.take().expect("checked above");
    let watched = std::mem::take(&mut session.watched);
    if cmd::multi::watched_changed(&node.engine, &watched, now_ms) {
        return Outcome::Reply(Reply::NilArray);
    }
    let mut parts: Vec<ReplyFuture> = Vec::with_capacity(tx.queue.len());
    for a in &tx.queue {
        let outcome = match cmd::lookup(&a[0]) {
            Some(s) => route(node, cluster, session, s, a, now_ms),
            None => Outcome::Reply(cmd::unknown_command(a)),
        };
        parts.push(match outcome {
            Outcome::Reply(r) => {
                let bytes = encode(&r, session.proto);
                Box::pin(async move { bytes })
            }
            Outcome::Later(f) => f,
        });
    }
    let n = parts.len();
    Outcome::Later(Box::pin(async move {
        let replies = join_all(parts).await;
        let mut out = BytesMut::new();
        out.put_slice(format!("*{n}\r\n").as_bytes());
        for r in replies {
            out.put_slice(&r);
        }
        out.freeze()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_wire::Unavailable;

    #[test]
    fn unreachable_copies_fail_over_refusals_only_for_reads() {
        let unreachable = [
            WireError::PeerUnavailable(Unavailable::Connect(std::io::ErrorKind::ConnectionRefused)),
            WireError::PeerUnavailable(Unavailable::ConnectTimeout),
            WireError::PeerUnavailable(Unavailable::ConnectionLost),
            WireError::Timeout,
        ];
        for e in &unreachable {
            assert!(fails_over(e, true) && fails_over(e, false), "{e}");
        }
        let refused = WireError::Refused(shoal_wire::HandshakeError::Config("x"));
        assert!(!fails_over(&refused, true) && fails_over(&refused, false));
        assert!(!fails_over(&WireError::Overloaded, false));
    }

    #[test]
    fn key_positions_follow_the_key_spec() {
        let args =
            |s: &str| -> Vec<Bytes> { s.split(' ').map(|a| Bytes::from(a.to_string())).collect() };
        let spec = |n: &str| cmd::lookup(n.as_bytes()).unwrap();
        assert_eq!(
            key_positions(spec("mset"), &args("MSET a 1 b 2")),
            vec![1, 3]
        );
        assert_eq!(
            key_positions(spec("del"), &args("DEL a b c")),
            vec![1, 2, 3]
        );
        assert_eq!(
            key_positions(spec("copy"), &args("COPY a b REPLACE")),
            vec![1, 2]
        );
        assert_eq!(
            key_positions(spec("object"), &args("OBJECT ENCODING k")),
            vec![2]
        );
        assert!(key_positions(spec("object"), &args("OBJECT HELP")).is_empty());
        assert!(key_positions(spec("ping"), &args("PING")).is_empty());
    }
}
