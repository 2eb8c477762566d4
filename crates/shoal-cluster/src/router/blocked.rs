//! Blocking commands (BLPOP, BLMOVE, BZPOPMIN, ...) that found nothing to pop.
//!
//! The command's handler asked to wait (`Session::block`). Where the keys are owned, the
//! reply becomes a future that registers the client on the keys (`shoal_engine::blocking`,
//! first come first served) and runs the command again each time one of them is written,
//! until it pops something or its timeout passes; dropping the future (the client went
//! away, CLIENT KILL) leaves the queue without taking anything.
//!
//! On a node that does not own the keys, the client's wait is a series of attempts, each
//! forwarded to the owner with the timeout cut to half the inter-node request timeout, so
//! every forwarded request is answered well within that timeout; an attempt that times out
//! is routed again (to a new owner, after a membership change). At the owner a forwarded
//! attempt waits as a local client does ([`serve_blocked`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shoal_engine::blocking::{self, Block, Registration};
use shoal_engine::client::{ClientInfo, UNBLOCK_ERROR, UNBLOCK_TIMEOUT};
use shoal_engine::clock::now_ms;
use shoal_engine::cmd::{self, CommandSpec, ReplyBudget, Session};
use shoal_resp::{Protocol, Reply};

use super::local::run_here;
use super::outbound::{send_to_copies, FailoverOrder};
use super::outcome::{encode, reply_limit, Outcome, ReplyFuture};
use crate::message::encode_command;
use crate::plan::{plan, Plan};
use crate::replicate::{unconfirmed, wait_acks};
use crate::Server;

/// What one more try of a blocked command gave.
enum Attempt {
    /// It popped: the reply (after the replicas' acks, in a cluster).
    Served(ReplyFuture),
    /// Still nothing.
    Blocked,
    /// The keys are no longer owned here.
    Moved,
}

/// The context a blocked command runs again in: its client's connection settings.
#[derive(Clone)]
struct Client {
    info: Arc<ClientInfo>,
    proto: Protocol,
    db: u8,
    budget: u64,
    internal: bool,
}

/// Shows a client as blocked (CLIENT LIST's `b`) while it lives.
struct ShownBlocked(Arc<ClientInfo>);

impl ShownBlocked {
    fn new(info: &Arc<ClientInfo>) -> ShownBlocked {
        info.unblock.store(0, Ordering::Relaxed);
        info.blocked.store(true, Ordering::Relaxed);
        ShownBlocked(info.clone())
    }
}

impl Drop for ShownBlocked {
    fn drop(&mut self) {
        self.0.blocked.store(false, Ordering::Relaxed);
    }
}

impl Client {
    fn of(session: &Session) -> Client {
        Client {
            info: session.info.clone(),
            proto: session.proto,
            db: session.db,
            budget: session.budget.left() as u64,
            internal: session.internal,
        }
    }

    /// The client's id for CLIENT UNBLOCK (`None` for another node's request).
    fn id(&self) -> Option<u64> {
        (!self.internal).then_some(self.info.id)
    }

    /// The reply CLIENT UNBLOCK asked for, if it did.
    fn unblocked(&self) -> Option<Bytes> {
        if self.internal {
            return None;
        }
        match self.info.unblock.swap(0, Ordering::Relaxed) {
            UNBLOCK_TIMEOUT => Some(encode(&Reply::NilArray, self.proto)),
            UNBLOCK_ERROR => Some(super::outcome::error_bytes(
                "UNBLOCKED client unblocked via CLIENT UNBLOCK",
            )),
            _ => None,
        }
    }

    fn session(&self) -> Session {
        let mut s = Session::new(self.info.clone(), true);
        s.proto = self.proto;
        s.db = self.db;
        s.budget = ReplyBudget::new(self.budget.max(1));
        s.internal = self.internal;
        s
    }
}

/// Runs the command once more on this node: on the store alone, or in a cluster as the
/// owner of its keys (replicating what it popped).
fn attempt(
    node: &Arc<Server>,
    client: &Client,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Attempt {
    let mut session = client.session();
    let now = now_ms();
    let proto = client.proto;
    let Some(cluster) = node.cluster.as_ref() else {
        let reply = cmd::run(&**node, &mut session, spec, args, now, None);
        if session.block.is_some() {
            return Attempt::Blocked;
        }
        let bytes = encode(&reply, proto);
        return Attempt::Served(Box::pin(async move { bytes }));
    };
    let view = cluster.view();
    if plan(&view.placement, view.me, cluster.standing(), spec, args) != Plan::Owned {
        return Attempt::Moved;
    }
    let (reply, acks) = run_here(node, cluster, &view, &mut session, spec, args, now, None);
    if session.block.is_some() {
        return Attempt::Blocked;
    }
    let bytes = encode(&reply, proto);
    let wait = cluster.timeouts.half;
    Attempt::Served(Box::pin(async move {
        if wait_acks(acks, wait).await {
            bytes
        } else {
            unconfirmed(bytes)
        }
    }))
}

/// Waits on the registration's keys, trying the command again at each signal, until it is
/// served (`Some`), the deadline passes or the keys move elsewhere (`None`).
async fn wait_here(
    node: &Arc<Server>,
    reg: &Registration,
    client: &Client,
    spec: &'static CommandSpec,
    args: &[Bytes],
    deadline: Option<tokio::time::Instant>,
) -> Option<Bytes> {
    loop {
        // Cleared before looking: a write while looking wakes the wait below at once. (The
        // first look also covers a write between the handler's look and the registration.)
        reg.clear();
        match attempt(node, client, spec, args) {
            Attempt::Served(reply) => return Some(reply.await),
            Attempt::Moved => return None,
            Attempt::Blocked => {}
        }
        match deadline {
            Some(at) => tokio::time::timeout_at(at, reg.signalled()).await.ok()?,
            None => reg.signalled().await,
        }
        if let Some(reply) = client.unblocked() {
            return Some(reply);
        }
    }
}

/// When a block ends (Unix ms), as the runtime's clock reads it.
fn deadline_of(deadline_ms: Option<u64>) -> Option<tokio::time::Instant> {
    deadline_ms
        .map(|at| tokio::time::Instant::now() + Duration::from_millis(at.saturating_sub(now_ms())))
}

/// A single node's blocked command.
pub(super) fn single(
    node: &Arc<Server>,
    session: &Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    block: Block,
) -> Outcome {
    let client = Client::of(session);
    let reg = node.engine.blocked.register(&block.keys, client.id());
    let shown = ShownBlocked::new(&client.info);
    let (node, args) = (node.clone(), args.to_vec());
    Outcome::Later(Box::pin(async move {
        let _shown = shown;
        let deadline = deadline_of(block.deadline_ms);
        match wait_here(&node, &reg, &client, spec, &args, deadline).await {
            Some(bytes) => bytes,
            None => encode(&block.timeout_reply, client.proto),
        }
    }))
}

/// A client's blocked command in a cluster: `block` when it already ran here (owned) and
/// blocked, `None` when it is to be forwarded. Each round waits here while this node owns
/// the keys, else forwards an attempt; routed again after each round. Inside a transaction
/// (`session.no_block`) a forwarded attempt waits a millisecond only.
pub(super) fn clustered(
    node: &Arc<Server>,
    session: &Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    block: Option<Block>,
) -> Outcome {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let (deadline_ms, timeout_reply) = match &block {
        Some(b) => (b.deadline_ms, b.timeout_reply.clone()),
        None => match blocking::timeout_of(spec, args, now_ms()) {
            Ok(t) => t,
            // Forwarded as it is: the owner answers the error (after the checks Redis makes
            // before the timeout's).
            Err(_) => return plain_forward(node, session, spec, args),
        },
    };
    let client = Client::of(session);
    // Registered on the keys while it waits here; on none while it forwards, for CLIENT
    // UNBLOCK to find it.
    let mut reg = Some(
        node.engine
            .blocked
            .register(block.as_ref().map_or(&[][..], |b| &b.keys[..]), client.id()),
    );
    let mut here = block.is_some();
    let shown = ShownBlocked::new(&client.info);
    // Inside a transaction: one attempt, of a millisecond.
    let deadline = match session.no_block {
        true => Some(tokio::time::Instant::now()),
        false => deadline_of(deadline_ms),
    };
    let chunk = cluster.timeouts.request / 2;
    let (node, args) = (node.clone(), args.to_vec());
    let limit = reply_limit(session);
    Outcome::Later(Box::pin(async move {
        let _shown = shown;
        let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
        let timed_out = encode(&timeout_reply, client.proto);
        loop {
            let view = cluster.view();
            match plan(&view.placement, view.me, cluster.standing(), spec, &args) {
                Plan::Owned => {
                    if !here {
                        drop(reg.take());
                        let keys = cmd::db::stored_keys(spec, &args, client.db);
                        reg = Some(node.engine.blocked.register(&keys, client.id()));
                        here = true;
                    }
                    let reg = reg.as_ref().expect("registered above");
                    if let Some(bytes) = wait_here(&node, reg, &client, spec, &args, deadline).await
                    {
                        return bytes;
                    }
                }
                Plan::Forward { owners, access } => {
                    if here {
                        drop(reg.take());
                        reg = Some(node.engine.blocked.register(&[], client.id()));
                        here = false;
                    }
                    let left =
                        deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
                    let wait = left.map_or(chunk, |l| l.min(chunk));
                    let body = encode_command(
                        client.proto,
                        client.db,
                        None,
                        &with_timeout(spec, &args, wait),
                        cluster.deadline_ms(),
                        limit,
                    );
                    let slots = spec
                        .key_positions(&args)
                        .map(|p| shoal_store::key_slot(&args[p]))
                        .collect();
                    let turn = FailoverOrder::default().turn();
                    let bytes =
                        send_to_copies(node.clone(), view, owners, body, access, turn, slots).await;
                    if bytes != timed_out {
                        return bytes;
                    }
                    if let Some(reply) = client.unblocked() {
                        return reply;
                    }
                }
                Plan::CrossSlot => {
                    return super::outcome::error_bytes(&format!(
                        "CROSSSLOT Keys in request are owned by different nodes, so {} \
                         cannot be atomic; keep them together with a {{hash tag}}",
                        spec.name.to_ascii_uppercase()
                    ))
                }
                _ => {
                    return super::outcome::error_bytes(
                        "TRYAGAIN the cluster is changing; retry in a moment",
                    )
                }
            }
            if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return timed_out;
            }
        }
    }))
}

/// A blocked command another node forwarded here: waits as a local client would, for at
/// most its (cut) timeout; answers the timeout reply when the keys move elsewhere meanwhile
/// (the sender routes its next attempt again).
pub fn serve_blocked(
    node: &Arc<Server>,
    info: &Arc<ClientInfo>,
    proto: Protocol,
    db: u8,
    args: &[Bytes],
    block: Block,
) -> ReplyFuture {
    let Some(spec) = cmd::lookup(&args[0]) else {
        return Box::pin(async move { encode(&block.timeout_reply, proto) });
    };
    let reg = node.engine.blocked.register(&block.keys, None);
    let mut client = Client {
        info: info.clone(),
        proto,
        db,
        budget: cmd::FORWARDED_REPLY_MAX as u64,
        internal: true,
    };
    client.budget = client.budget.max(1);
    let (node, args) = (node.clone(), args.to_vec());
    Box::pin(async move {
        let deadline = deadline_of(block.deadline_ms);
        match wait_here(&node, &reg, &client, spec, &args, deadline).await {
            Some(bytes) => bytes,
            None => encode(&block.timeout_reply, proto),
        }
    })
}

/// `args` with its timeout argument set to `wait` (in seconds, to the millisecond).
fn with_timeout(spec: &CommandSpec, args: &[Bytes], wait: Duration) -> Vec<Bytes> {
    let mut out = args.to_vec();
    let at = shoal_engine::blocking::timeout_at(spec, args);
    // At least a millisecond: 0 would wait for ever.
    let ms = wait.as_millis().max(1);
    out[at] = Bytes::from(format!("{}.{:03}", ms / 1000, ms % 1000));
    out
}

/// Forwards a blocking command unchanged (its timeout did not parse: the owner answers the
/// error at once).
fn plain_forward(
    node: &Arc<Server>,
    session: &Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Outcome {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let view = cluster.view();
    let Plan::Forward { owners, access } =
        plan(&view.placement, view.me, cluster.standing(), spec, args)
    else {
        return Outcome::Reply(shoal_resp::Reply::error(
            "TRYAGAIN the cluster is changing; retry in a moment",
        ));
    };
    let body = encode_command(
        session.proto,
        session.db,
        None,
        args,
        cluster.deadline_ms(),
        reply_limit(session),
    );
    let slots = spec
        .key_positions(args)
        .map(|p| shoal_store::key_slot(&args[p]))
        .collect();
    super::outbound::forward(
        node,
        view,
        owners,
        body,
        access,
        FailoverOrder::default().turn(),
        slots,
    )
}
