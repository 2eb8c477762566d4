//! Blocking commands (BLPOP, BLMOVE, BZPOPMIN, ...) that found nothing to pop.
//!
//! The command's handler asked to wait (`Session::block`). Where the keys are owned, the
//! reply becomes a future that registers the client on the keys (`shoal_engine::blocking`,
//! first come first served) and runs the command again each time one of them is written,
//! until it pops something or its timeout passes; a wake-up it cannot use (the element was
//! taken, the key is of another type) goes on to the client behind it. Dropping the future
//! (the client went away, CLIENT KILL, shutdown) leaves the queue without taking anything.
//!
//! On a node that does not own the keys, the client's wait is a series of attempts, each
//! forwarded to the owner with the timeout cut to a quarter of the inter-node request
//! timeout, so that the attempt, its replicas' acks and the trip back fit well inside that
//! timeout; an attempt that times out is routed again (to a new owner, after a membership
//! change), after a pause when it ended early (a copy that does not own the keys answers
//! at once). At the owner a forwarded attempt waits as a local client does
//! ([`serve_blocked`]). At most [`crate::BLOCKED_FORWARDS`] clients of a node forward
//! their waits at once, so blocked workers cannot fill the links' request windows.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shoal_engine::blocking::{Block, Registration, Tried, Waits};
use shoal_engine::client::{ClientInfo, UNBLOCK_ERROR, UNBLOCK_TIMEOUT};
use shoal_engine::clock::now_ms;
use shoal_engine::cmd::wait;
use shoal_engine::cmd::{self, CommandSpec, ReplyBudget, Session};
use shoal_engine::hooks::ClusterInfo;
use shoal_resp::Protocol;
use tokio::time::Instant;

use super::local::run_here;
use super::outbound::{send_to_copies, FailoverOrder};
use super::outcome::{encode, error_bytes, reply_limit, Outcome, ReplyFuture};
use crate::message::encode_command;
use crate::plan::Plan;
use crate::replicate::{unconfirmed, wait_acks};
use crate::{handoff, Server};

/// What one more try of a blocked command gave.
enum Attempt {
    /// It popped: the reply (after the replicas' acks, in a cluster).
    Served(ReplyFuture),
    /// Still nothing.
    Blocked,
    /// Nothing it can take, but a key holds something (of another type): the clients
    /// behind it may.
    Passed,
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
    /// Another node's forwarded attempt.
    internal: bool,
    /// Inside a transaction: answer at once.
    no_block: bool,
    /// Its ACL user, checked again at each attempt (the users may change while it waits).
    user: Option<Arc<shoal_engine::acl::User>>,
    acl_epoch: u64,
}

/// Shows a client as blocked (CLIENT LIST's `b`) while it lives.
struct ShownBlocked(Arc<ClientInfo>);

impl ShownBlocked {
    fn new(info: &Arc<ClientInfo>) -> ShownBlocked {
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
            no_block: session.no_block,
            user: session.user.clone(),
            acl_epoch: session.acl_epoch,
        }
    }

    /// The client's id for CLIENT UNBLOCK (`None` for another node's request).
    fn id(&self) -> Option<u64> {
        (!self.internal).then_some(self.info.id)
    }

    /// A session to run the command again in.
    fn session(&self) -> Session {
        let mut s = Session::new(self.info.clone(), true);
        s.proto = self.proto;
        s.db = self.db;
        s.budget = ReplyBudget::new(self.budget.max(1));
        s.internal = self.internal;
        s.no_block = self.no_block;
        s.block_retry = true;
        s.blocked_attempt = true;
        s.user = self.user.clone();
        s.acl_epoch = self.acl_epoch;
        s
    }

    /// The refusal of another attempt when the client's user may no longer run the
    /// command (Redis 7.2 checks a blocked command again when it wakes).
    fn refused(&self, node: &Server, args: &[Bytes]) -> Option<Bytes> {
        self.user.as_ref()?;
        let reply = cmd::acl::recheck(&node.engine, &mut self.session(), args)?;
        Some(encode(&reply, self.proto))
    }

    /// What CLIENT UNBLOCK asked for, if it did: to end the wait as a timeout, or with its
    /// error, which counts as a failed call of the command (`spec`, `args`) in INFO, as in
    /// Redis.
    fn unblocked(&self, node: &Server, spec: &CommandSpec, args: &[Bytes]) -> Option<Unblocked> {
        if self.internal {
            return None;
        }
        match self.info.unblock.swap(0, Ordering::Relaxed) {
            UNBLOCK_TIMEOUT => Some(Unblocked::AsTimeout),
            UNBLOCK_ERROR => {
                let text = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
                cmd::count_failed(&node.engine, spec, args, text);
                Some(Unblocked::Error(error_bytes(text)))
            }
            _ => None,
        }
    }
}

/// How CLIENT UNBLOCK ends a wait.
enum Unblocked {
    /// As its timeout would: the command's timeout reply (a null array; WAIT's count).
    AsTimeout,
    /// With this error.
    Error(Bytes),
}

/// A served client's reply, put where its waiting future finds it by whoever served it
/// (the client itself, or a writer that woke it: `shoal_engine::blocking`).
#[derive(Default)]
struct Slot {
    reply: Option<ReplyFuture>,
    /// Served once: never again, even after the reply was taken.
    served: bool,
}

type SharedSlot = Arc<std::sync::Mutex<Slot>>;

fn take_reply(slot: &SharedSlot) -> Option<ReplyFuture> {
    slot.lock().unwrap_or_else(|e| e.into_inner()).reply.take()
}

/// Runs the command once more on this node, now: on the store alone, or in a cluster as
/// the owner of its keys, replicating what it popped. `prepared`: its keys are known to be
/// here (its own future fetched them); otherwise (a writer serving it) a node that is still
/// settling answers [`Tried::Later`], and so does one that no longer owns the keys.
fn run_attempt(
    node: &Arc<Server>,
    client: &Client,
    spec: &'static CommandSpec,
    args: &[Bytes],
    retry: bool,
    prepared: bool,
    slot: &SharedSlot,
) -> Tried {
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if slot.served {
        return Tried::Served;
    }
    // A client killed or unblocked takes nothing (it is leaving; CLIENT UNBLOCK woke it).
    if !client.internal
        && (client.info.killed.load(Ordering::Relaxed)
            || client.info.unblock.load(Ordering::Relaxed) != 0)
    {
        return Tried::Gone;
    }
    if let Some(refused) = client.refused(node, args) {
        slot.reply = Some(Box::pin(async move { refused }));
        slot.served = true;
        return Tried::Served;
    }
    let mut session = client.session();
    session.block_retry = retry;
    let proto = client.proto;
    let Some(cluster) = node.cluster.as_ref() else {
        let reply = cmd::run(&**node, &mut session, spec, args, now_ms(), None);
        if session.block.is_some() {
            return still_blocked(node, client, spec, args);
        }
        let bytes = encode(&reply, proto);
        slot.reply = Some(Box::pin(async move { bytes }));
        slot.served = true;
        return Tried::Served;
    };
    let view = cluster.view();
    if cluster.plan_in(&view, spec, args) != Plan::Owned
        || (!prepared && !cluster.handoff.settled_in(&view))
    {
        return Tried::Later;
    }
    let (reply, acks) = run_here(
        node,
        cluster,
        &view,
        &mut session,
        spec,
        args,
        now_ms(),
        None,
    );
    if session.block.is_some() {
        return still_blocked(node, client, spec, args);
    }
    let bytes = encode(&reply, proto);
    let wait = cluster.timeouts.half;
    slot.reply = Some(Box::pin(async move {
        if wait_acks(acks, wait).await {
            bytes
        } else {
            unconfirmed(bytes)
        }
    }));
    slot.served = true;
    Tried::Served
}

/// A try that took nothing: [`Tried::Passed`] when one of its keys holds something (of
/// another type: the clients behind it may take it), else [`Tried::Blocked`].
fn still_blocked(node: &Server, client: &Client, spec: &CommandSpec, args: &[Bytes]) -> Tried {
    // A stream reader that found nothing says nothing of the next one (another ID, another
    // group, or a group reader whose stream went and who must now answer its error).
    if wait::waits_on_streams(spec) {
        return Tried::Passed;
    }
    let now = now_ms();
    let held = wait::waited_keys(spec, args, client.db).iter().any(|k| {
        node.engine
            .store
            .read(k, now, shoal_store::Access::Peek, |e| e.is_some())
    });
    if held {
        Tried::Passed
    } else {
        Tried::Blocked
    }
}

/// Registers how a writer serves this client at once (as Redis serves blocked clients
/// right after the command that woke them).
fn let_writers_serve(
    node: &Arc<Server>,
    reg: &Registration,
    client: &Client,
    spec: &'static CommandSpec,
    args: &[Bytes],
    slot: &SharedSlot,
) {
    let node = Arc::downgrade(node);
    let (client, args, slot) = (client.clone(), args.to_vec(), slot.clone());
    reg.set_attempt(Box::new(move |prepared| match node.upgrade() {
        Some(node) => run_attempt(&node, &client, spec, &args, true, prepared, &slot),
        None => Tried::Later,
    }));
}

/// One more try by the client's own future: in a cluster, first waits for keys still on
/// their way here (in their turn), then runs the attempt as a writer would, but with its
/// keys known to be here. What it writes (BLMOVE's destination) serves the clients blocked
/// there.
async fn attempt(
    node: &Arc<Server>,
    reg: &Registration,
    client: &Client,
    spec: &'static CommandSpec,
    args: &[Bytes],
    retry: bool,
    slot: &SharedSlot,
) -> Attempt {
    let mut turn = handoff::KeyTurn::none();
    if let Some(cluster) = node.cluster.as_ref() {
        let view = cluster.view();
        if cluster.plan_in(&view, spec, args) != Plan::Owned {
            return Attempt::Moved;
        }
        if !cluster.handoff.settled_in(&view) {
            let keys = cmd::db::stored_keys(spec, args, client.db);
            if let handoff::Before::Wait(wait) =
                handoff::before(node, cluster, &view, &keys, now_ms())
            {
                let fetched;
                (fetched, turn) = wait.await;
                if fetched == handoff::Fetched::Unanswered {
                    return Attempt::Blocked;
                }
            }
        }
    }
    // Under the registration's lock, so no writer serves it at the same time.
    let tried = node
        .engine
        .blocked
        .serving_after(|| match reg.try_now(true) {
            // A writer's attempt is registered after the first try: that one answers the
            // command's own errors (`retry` false when the command has not run yet).
            Some(tried) if retry => tried,
            _ => run_attempt(node, client, spec, args, retry, true, slot),
        });
    drop(turn);
    match tried {
        Tried::Served => match take_reply(slot) {
            Some(reply) => Attempt::Served(reply),
            None => Attempt::Blocked,
        },
        Tried::Blocked | Tried::Gone => Attempt::Blocked,
        Tried::Passed => Attempt::Passed,
        Tried::Later => Attempt::Moved,
    }
}

/// How a wait here ended.
enum Waited {
    /// Served: the reply to send once the registration is dropped (so the next client is
    /// woken without waiting for this one's replica acks).
    Served(ReplyFuture),
    /// The deadline passed.
    TimedOut,
    /// The keys moved elsewhere.
    Moved,
}

/// Waits on the registration's keys, trying the command again at each signal, until it is
/// served (by itself, or by the writer that woke it), `until` passes or the keys move
/// elsewhere. `ran`: the command already ran once (its errors were answered), so keys of
/// another type are waited past from the first try. However it ends, no writer serves the
/// client through this wait afterwards, and what one served meanwhile is its reply.
#[allow(clippy::too_many_arguments)]
async fn wait_here(
    node: &Arc<Server>,
    reg: &Registration,
    client: &Client,
    spec: &'static CommandSpec,
    args: &[Bytes],
    until: Option<Instant>,
    ran: bool,
    slot: &SharedSlot,
    installed: bool,
) -> Waited {
    let waited =
        wait_until_served(node, reg, client, spec, args, until, ran, slot, installed).await;
    reg.withdraw();
    match (waited, take_reply(slot)) {
        (Waited::TimedOut | Waited::Moved, Some(reply)) => Waited::Served(reply),
        (waited, _) => waited,
    }
}

/// [`wait_here`]'s loop.
#[allow(clippy::too_many_arguments)]
async fn wait_until_served(
    node: &Arc<Server>,
    reg: &Registration,
    client: &Client,
    spec: &'static CommandSpec,
    args: &[Bytes],
    until: Option<Instant>,
    ran: bool,
    slot: &SharedSlot,
    installed: bool,
) -> Waited {
    // A writer may serve it from the start when its errors were answered already (its
    // attempt `installed` when it registered, or now); else after its first try, which
    // answers them.
    let mut writers_serve = ran || installed;
    if ran && !installed {
        let_writers_serve(node, reg, client, spec, args, slot);
    }
    let mut woken = false;
    loop {
        // Cleared before looking: a write while looking wakes the wait below at once. (The
        // first look also covers a write between the handler's look and the registration.)
        reg.clear();
        if let Some(reply) = take_reply(slot) {
            return Waited::Served(reply);
        }
        // CLIENT UNBLOCK: no more tries, its own or a writer's (they see the flag, or have
        // finished); one that served it before the unblock popped for it: that reply wins.
        if !client.internal && client.info.unblock.load(Ordering::Relaxed) != 0 {
            reg.withdraw();
            if let Some(how) = client.unblocked(node, spec, args) {
                if let Some(served) = take_reply(slot) {
                    return Waited::Served(served);
                }
                return match how {
                    Unblocked::AsTimeout => Waited::TimedOut,
                    Unblocked::Error(reply) => Waited::Served(Box::pin(async move { reply })),
                };
            }
        }
        match attempt(node, reg, client, spec, args, ran || woken, slot).await {
            Attempt::Served(reply) => return Waited::Served(reply),
            Attempt::Moved => return Waited::Moved,
            // Something of another type it cannot take: the client behind it may.
            Attempt::Passed => reg.pass_on(),
            Attempt::Blocked => {}
        }
        if !writers_serve {
            let_writers_serve(node, reg, client, spec, args, slot);
            writers_serve = true;
        }
        match until {
            Some(at) => {
                if tokio::time::timeout_at(at, reg.signalled()).await.is_err() {
                    return Waited::TimedOut;
                }
            }
            None => reg.signalled().await,
        }
        woken = true;
    }
}

/// When a block ends (Unix ms), as the runtime's clock reads it: a millisecond after it,
/// since both Unix ms readings (the deadline's, taken when the command was read, and now)
/// are truncated, and a client must never see its timeout answered early (it measured up to
/// a millisecond short before).
fn deadline_of(deadline_ms: Option<u64>) -> Option<Instant> {
    deadline_ms.map(|at| Instant::now() + Duration::from_millis(at.saturating_sub(now_ms()) + 1))
}

/// A wait on no key (WAIT, WAITAOF asking for more replicas than have the writes): its
/// timeout or CLIENT UNBLOCK (as a timeout, or with its error) ends it, or in a cluster
/// enough replicas having the writes again (counted every tenth of a second: a member back
/// after an outage); the answer is the count then. Counted and shown as a blocked client,
/// as in Redis.
pub(super) fn keyless(
    node: &Arc<Server>,
    session: &Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    block: Block,
) -> Outcome {
    let client = Client::of(session);
    client.info.unblock.store(0, Ordering::Relaxed);
    let waits = Waits::of(args, block.deadline_ms);
    let reg = node.engine.blocked.register_as(&[], client.id(), waits);
    let shown = ShownBlocked::new(&client.info);
    let (node, args) = (node.clone(), args.to_vec());
    let (wanted, answer) = wait::replicas_wanted(&args);
    Outcome::Later(Box::pin(async move {
        let _shown = shown;
        let until = deadline_of(block.deadline_ms);
        let acked = || {
            node.cluster
                .as_ref()
                .and_then(|c| c.acknowledged_replicas())
        };
        loop {
            reg.clear();
            match client.unblocked(&node, spec, &args) {
                Some(Unblocked::Error(reply)) => return reply,
                Some(Unblocked::AsTimeout) => break,
                None => {}
            }
            if acked().is_some_and(|n| n >= wanted) {
                break;
            }
            // A single node's count never changes: only the timeout or an unblock.
            let recount = node
                .cluster
                .as_ref()
                .map(|_| Instant::now() + Duration::from_millis(100));
            let wake = match (until, recount) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            match wake {
                Some(at) => {
                    let _ = tokio::time::timeout_at(at, reg.signalled()).await;
                    if until.is_some_and(|u| Instant::now() >= u) {
                        break;
                    }
                }
                None => reg.signalled().await,
            }
        }
        drop(reg);
        let reply = match acked() {
            Some(n) => answer(n),
            None => block.timeout_reply,
        };
        encode(&reply, client.proto)
    }))
}

/// A single node's blocked command.
pub(super) fn single(
    node: &Arc<Server>,
    session: &Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    block: Block,
) -> Outcome {
    if block.keys.is_empty() {
        return keyless(node, session, spec, args, block);
    }
    let client = Client::of(session);
    // XREAD's `$` resolved when it blocked (`Block::args`).
    let args = block.args.as_deref().unwrap_or(args);
    // A CLIENT UNBLOCK from before this wait is spent; one from the moment the client is
    // registered (and counts in blocked_clients) on must hold.
    client.info.unblock.store(0, Ordering::Relaxed);
    let waits = Waits::of(args, block.deadline_ms);
    let reg = node
        .engine
        .blocked
        .register_as(&block.keys, client.id(), waits);
    // A writer may serve it from now on, in the order it blocked.
    let slot = SharedSlot::default();
    let_writers_serve(node, &reg, &client, spec, args, &slot);
    let shown = ShownBlocked::new(&client.info);
    let (node, args) = (node.clone(), args.to_vec());
    Outcome::Later(Box::pin(async move {
        let _shown = shown;
        let until = deadline_of(block.deadline_ms);
        let waited = wait_here(&node, &reg, &client, spec, &args, until, true, &slot, true).await;
        drop(reg);
        match waited {
            Waited::Served(reply) => reply.await,
            Waited::TimedOut | Waited::Moved => encode(&block.timeout_reply, client.proto),
        }
    }))
}

/// A client's blocked command in a cluster: `block` when it already ran here (owned) and
/// blocked, `None` when it has not run yet (forwarded, or owned while keys may still be on
/// their way here). Each round waits here, for at most a quarter of the request timeout so
/// that keys arriving by hand-off are looked at, while this node owns the keys, else
/// forwards an attempt; routed again after each round. Inside a transaction
/// (`session.no_block`) it makes one attempt, answered at once.
pub(super) fn clustered(
    node: &Arc<Server>,
    session: &Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    block: Option<Block>,
) -> Outcome {
    // Inside a transaction XREAD and XREADGROUP answer at once: without BLOCK, the owner
    // does (a round of waiting there would let the transaction's later writes in).
    if session.no_block && block.is_none() {
        if let Some(once) = wait::without_block(spec, args) {
            return plain_forward(node, session, spec, &once);
        }
    }
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    // XREAD's `$` resolved when it blocked here (`Block::args`).
    let args = match block.as_ref().and_then(|b| b.args.as_deref()) {
        Some(again) => again,
        None => args,
    };
    let (deadline_ms, timeout_reply) = match &block {
        Some(b) => (b.deadline_ms, b.timeout_reply.clone()),
        None => match wait::timeout_of(spec, args, now_ms()) {
            Ok(t) => t,
            // Forwarded as it is: the owner answers the error (after the checks Redis makes
            // before the timeout's).
            Err(_) => return plain_forward(node, session, spec, args),
        },
    };
    let client = Client::of(session);
    let waited = wait::waited_keys(spec, args, client.db);
    // Registered on the keys while it waits here; on none while it forwards, for CLIENT
    // UNBLOCK to find it.
    let mut here = block.is_some();
    // Whether the command ran once already (its errors answered).
    let mut ran = block.is_some();
    // As in `single`: the flag is cleared before the client can be seen blocked.
    client.info.unblock.store(0, Ordering::Relaxed);
    let waits = Waits::of(args, deadline_ms);
    let mut reg = Some(node.engine.blocked.register_as(
        if here { &waited[..] } else { &[] },
        client.id(),
        waits,
    ));
    let shown = ShownBlocked::new(&client.info);
    let deadline = match client.no_block {
        true => Some(Instant::now()),
        false => deadline_of(deadline_ms),
    };
    let chunk = cluster.timeouts.request / 4;
    let (node, mut args) = (node.clone(), args.to_vec());
    let limit = reply_limit(session);
    Outcome::Later(Box::pin(async move {
        let _shown = shown;
        let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
        let timed_out = encode(&timeout_reply, client.proto);
        // XREAD's `$` stands for the last IDs when the client asked: resolved once at the
        // owner before the first forwarded round, so no round reads after later ones.
        let mut resolve = cmd::stream::last_ids_request(&args);
        loop {
            if ran {
                if let Some(refused) = client.refused(&node, &args) {
                    return refused;
                }
            }
            let started = Instant::now();
            let round_end = deadline.map_or(started + chunk, |d| d.min(started + chunk));
            let view = cluster.view();
            match cluster.plan_in(&view, spec, &args) {
                Plan::Owned => {
                    if resolve.is_some() {
                        // XREAD's `$` resolved here, once its keys are here (a hand-off
                        // may still bring them), before the first attempt.
                        let keys = cmd::db::stored_keys(spec, &args, client.db);
                        if let handoff::Before::Wait(wait) =
                            handoff::before(&node, cluster, &view, &keys, now_ms())
                        {
                            drop(wait.await);
                        }
                        if let Some(resolved) = cmd::stream::with_local_last_ids(
                            &node.engine.store,
                            &args,
                            client.db,
                            now_ms(),
                        ) {
                            args = resolved;
                            resolve = None;
                        }
                    }
                    if !here {
                        drop(reg.take());
                        reg = Some(node.engine.blocked.register_as(&waited, client.id(), waits));
                        here = true;
                    }
                    let r = reg.as_ref().expect("registered above");
                    let until = if client.no_block {
                        deadline
                    } else {
                        Some(round_end)
                    };
                    let slot = SharedSlot::default();
                    match wait_here(&node, r, &client, spec, &args, until, ran, &slot, false).await
                    {
                        Waited::Served(reply) => {
                            drop(reg.take());
                            return reply.await;
                        }
                        Waited::TimedOut | Waited::Moved => ran = true,
                    }
                }
                Plan::Forward { owners, access } => {
                    if here {
                        drop(reg.take());
                        reg = Some(node.engine.blocked.register_as(&[], client.id(), waits));
                        here = false;
                    }
                    // A permit first: past BLOCKED_FORWARDS clients wait their turn.
                    let permit = match deadline {
                        Some(d) => tokio::time::timeout_at(d, cluster.blocked_forwards.acquire())
                            .await
                            .ok()
                            .and_then(Result::ok),
                        None => cluster.blocked_forwards.acquire().await.ok(),
                    };
                    if let Some(_permit) = permit {
                        if let Some(req) = resolve.clone() {
                            let body = encode_command(
                                Protocol::Resp2,
                                client.db,
                                None,
                                &req,
                                cluster.deadline_ms(),
                                limit,
                            );
                            let slots = (1..req.len())
                                .map(|i| shoal_store::key_slot(&req[i]))
                                .collect();
                            let turn = FailoverOrder::default().turn();
                            let reply = send_to_copies(
                                node.clone(),
                                view.clone(),
                                owners.clone(),
                                body,
                                access,
                                turn,
                                slots,
                            )
                            .await;
                            // Not resolved (a key of another type, the owner unreachable):
                            // the owner answers, or resolves `$` in this round itself, and
                            // the next round asks again.
                            if let Some(resolved) = cmd::stream::with_last_ids(&args, &reply) {
                                args = resolved;
                                resolve = None;
                            }
                        }
                        let wait = round_end.saturating_duration_since(Instant::now());
                        let body = encode_command(
                            client.proto,
                            client.db,
                            None,
                            &with_timeout(spec, &args, wait),
                            cluster.deadline_ms(),
                            limit,
                        );
                        // Inside a transaction the owner answers at once, as the command
                        // would here: a round of waiting there would let the
                        // transaction's own later writes feed it.
                        let body = if client.no_block {
                            crate::message::at_once(body)
                        } else {
                            body
                        };
                        let slots = spec
                            .key_positions(&args)
                            .map(|p| shoal_store::key_slot(&args[p]))
                            .collect();
                        let attempt = Forwarded {
                            view,
                            owners,
                            body,
                            access,
                            slots,
                        };
                        let bytes = detached(&node, attempt, spec, &args, client.db, _permit).await;
                        if bytes != timed_out {
                            return bytes;
                        }
                        ran = true;
                    }
                }
                Plan::CrossSlot => {
                    return error_bytes(&format!(
                        "CROSSSLOT Keys in request are owned by different nodes, so {} \
                         cannot be atomic; keep them together with a {{hash tag}}",
                        spec.name.to_ascii_uppercase()
                    ))
                }
                _ => return error_bytes("TRYAGAIN the cluster is changing; retry in a moment"),
            }
            match client.unblocked(&node, spec, &args) {
                Some(Unblocked::AsTimeout) => return timed_out,
                Some(Unblocked::Error(reply)) => return reply,
                None => {}
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return timed_out;
            }
            // A round that ended early (a copy that no longer owns the keys answered at
            // once): wait for a membership change, or the rest of the round, before the next.
            if Instant::now() < round_end {
                let seen = cluster.view().id;
                let mut changes = cluster.subscribe();
                let _ = tokio::time::timeout_at(round_end, async {
                    while cluster.view().id == seen {
                        if changes.changed().await.is_err() {
                            break;
                        }
                    }
                })
                .await;
            }
        }
    }))
}

/// One forwarded attempt of a blocked command.
struct Forwarded {
    view: Arc<crate::View>,
    owners: crate::plan::Copies,
    body: Bytes,
    access: cmd::Access,
    slots: crate::plan::Slots,
}

/// Runs a forwarded attempt in a task of its own, so that its reply outlives its client: a
/// client that goes away while the owner waits for it drops only the receiving end, and
/// what the owner popped for it meanwhile is put back (`wait::undo_pop`), where before it
/// was dropped with the reply (kombu's consumer lost a message that way when it
/// reconnected). The task keeps the client's place among [`crate::BLOCKED_FORWARDS`] until
/// its attempt ends.
async fn detached(
    node: &Arc<Server>,
    attempt: Forwarded,
    spec: &'static CommandSpec,
    args: &[Bytes],
    db: u8,
    permit: tokio::sync::SemaphorePermit<'_>,
) -> Bytes {
    /// Gives the place back when the task ends, however it ends.
    struct Place(Arc<Server>);
    impl Drop for Place {
        fn drop(&mut self) {
            if let Some(cluster) = &self.0.cluster {
                cluster.blocked_forwards.add_permits(1);
            }
        }
    }
    permit.forget();
    let place = Place(node.clone());
    let (tx, rx) = tokio::sync::oneshot::channel();
    let args = args.to_vec();
    tokio::spawn(async move {
        let node = &place.0;
        let Forwarded {
            view,
            owners,
            body,
            access,
            slots,
        } = attempt;
        let turn = FailoverOrder::default().turn();
        let bytes = send_to_copies(node.clone(), view, owners, body, access, turn, slots).await;
        if let Err(bytes) = tx.send(bytes) {
            if let Some(undo) = wait::undo_pop(spec, &args, &bytes) {
                put_back(node, db, &undo).await;
            }
        }
    });
    rx.await
        .unwrap_or_else(|_| error_bytes("ERR internal error: a blocked command's attempt ended"))
}

/// Runs `undo` (what puts back a pop whose client went away) as a command of this node's
/// own, routed to wherever its key is now.
async fn put_back(node: &Arc<Server>, db: u8, undo: &[Bytes]) {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let mut session = Session::new(cluster.internal.clone(), true);
    session.db = db;
    let mut in_flight = super::InFlight::default();
    let outcome = super::dispatch(node, &mut session, &mut in_flight, undo, now_ms());
    let reply = outcome.into_future(Protocol::Resp2).await;
    if !shoal_resp::is_error(&reply) {
        cluster.stats.put_back.fetch_add(1, Ordering::Relaxed);
    } else {
        cluster
            .stats
            .put_back_failed
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            command = %String::from_utf8_lossy(&undo[0]),
            reply = %String::from_utf8_lossy(&reply).trim_end(),
            "could not put back what a blocked command popped for a client that went away"
        );
    }
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
    let args = block.args.as_deref().unwrap_or(args);
    let reg =
        node.engine
            .blocked
            .register_as(&block.keys, None, Waits::of(args, block.deadline_ms));
    let client = Client {
        info: info.clone(),
        proto,
        db,
        budget: cmd::FORWARDED_REPLY_MAX as u64,
        internal: true,
        no_block: false,
        // Another node's request: its client's user is checked there.
        user: None,
        acl_epoch: 0,
    };
    let slot = SharedSlot::default();
    let_writers_serve(node, &reg, &client, spec, args, &slot);
    let (node, args) = (node.clone(), args.to_vec());
    Box::pin(async move {
        let until = deadline_of(block.deadline_ms);
        let waited = wait_here(&node, &reg, &client, spec, &args, until, true, &slot, true).await;
        drop(reg);
        match waited {
            Waited::Served(reply) => reply.await,
            Waited::TimedOut | Waited::Moved => encode(&block.timeout_reply, proto),
        }
    })
}

/// `args` with its timeout argument set to `wait` (`wait::with_timeout`).
fn with_timeout(spec: &CommandSpec, args: &[Bytes], wait: Duration) -> Vec<Bytes> {
    wait::with_timeout(spec, args, wait.as_millis())
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
    match cluster.plan_in(&view, spec, args) {
        Plan::Forward { owners, access } => {
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
        // Owned here: the handler answers the error.
        _ => {
            let mut s = Client::of(session).session();
            s.block_retry = false;
            Outcome::Reply(cmd::run(&**node, &mut s, spec, args, now_ms(), None))
        }
    }
}
