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
//!
//! Modules: the decision itself is `crate::plan` (pure); `local` runs a command here (the
//! one entry: `local::run_here`); `outbound` sends it to the copies of its keys; `split`
//! splits a multi-key command by owner and merges the parts; `fanout` runs the all-node
//! commands; `gather` runs a read of several owners' keys on a scratch store; `watch` is
//! WATCH of another node's keys; `tracked` is what a tracking client's commands carry and
//! remember (CLIENT TRACKING); `outcome` is the reply type and its encoding helpers.
//! EXEC stays here beside `route`, which it calls for each queued command.

mod blocked;
mod fanout;
mod gather;
mod local;
mod outbound;
mod outcome;
mod split;
mod tracked;
mod watch;

pub use blocked::serve_blocked;
pub use fanout::{copy_from_member, publish_to, Copied};
pub use local::{
    command_keys, order_failover, parse_command, serve_after_wait, serve_command,
    serve_part_blocking,
};
pub use outbound::{fails_over, share_copies, FailoverOrder};
pub use outcome::{encode, error_bytes, Outcome, ReplyFuture};
pub use watch::before_exec;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::join_all;
use shoal_engine::cmd::{self, CommandSpec, Gather, Prepared, Route, Session};
use shoal_resp::Reply;
use shoal_store::key_slot;

use crate::message::encode_command;
use crate::plan::{
    cluster_rule, transaction_access, transaction_elsewhere, ClusterRule, Plan, Standing,
};
use crate::{handoff, Cluster, Server, View};
use local::{run_here, run_owned};
use outbound::{forward, forward_batched, FailoverOrder as Order};
use outcome::{reply_limit, with_acks};
use shoal_engine::hooks::SlotScope;

/// Runs one client request wherever it belongs. `in_flight` is the connection's: a command
/// whose reply is to come is noted in it (see [`must_wait`]), and a forwarded one takes its
/// place in its failover order.
pub fn dispatch(
    node: &Arc<Server>,
    session: &mut Session,
    in_flight: &mut InFlight,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    // Read before routing: a view change meanwhile then only makes a later command wait.
    let epoch = node.cluster.as_ref().map(|c| {
        // A process that stood still serves nothing until its view is confirmed.
        c.handoff.fence.check(now_ms);
        c.epoch()
    });
    // A tracking client's read of keys another node may own: remembered when it arrives.
    let tracked = node
        .cluster
        .as_ref()
        .and_then(|_| tracked::read_keys(node, session, args));
    let (joined, alone) = (
        in_flight.order.batches.joined,
        in_flight.order.batches.alone,
    );
    // Clients blocked on what it writes are served before its reply, as in Redis.
    let outcome = node
        .engine
        .blocked
        .serving_after(|| dispatch_now(node, session, &mut in_flight.order, args, now_ms));
    // A reply to come that is not all in batches (forwarded alone, split, fanned out,
    // blocked) closes the open batches: nothing routed after it may reach a node before it.
    let batches = &mut in_flight.order.batches;
    if matches!(outcome, Outcome::Later(_)) && (batches.joined == joined || batches.alone != alone)
    {
        batches.close();
    }
    if let Some(t) = session.tracking.as_mut() {
        // CLIENT CACHING's word lasts one command (a forwarded one too; EXEC's inner ones).
        if session.multi.is_none() && !args[0].eq_ignore_ascii_case(b"client") {
            t.caching = false;
        }
    }
    let outcome = match (outcome, tracked) {
        (Outcome::Later(reply), Some(t)) => Outcome::Later(t.arrival(node, session, reply)),
        (outcome, _) => tracked::registered(node, session, args, outcome),
    };
    if let (Outcome::Later(_), Some(epoch)) = (&outcome, epoch) {
        in_flight.note(args, epoch);
    }
    outcome
}

fn dispatch_now(
    node: &Arc<Server>,
    session: &mut Session,
    order: &mut Order,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    let Some(cluster) = node.cluster.as_ref().filter(|_| session.redis_cluster) else {
        let spec = match cmd::prepare(&node.engine, session, args) {
            Prepared::Run(spec) => spec,
            Prepared::Done(reply) => return Outcome::Reply(reply),
        };
        return match &node.cluster {
            None => {
                let reply = cmd::run(&**node, session, spec, args, now_ms, None);
                match session.block.take() {
                    Some(block) => blocked::single(node, session, spec, args, block),
                    None => Outcome::Reply(reply),
                }
            }
            Some(cluster) => route(node, cluster, session, order, spec, args, now_ms),
        };
    };
    // The cluster-client port: Redis Cluster's rule is decided once, in the check `prepare`
    // makes before a command is queued or run, and reused to run it.
    cluster
        .stats
        .cluster_port_requests
        .fetch_add(1, Ordering::Relaxed);
    let view = cluster.view();
    let decided = std::cell::Cell::new(ClusterRule::Route);
    let refuse = |spec: &CommandSpec, args: &[Bytes], session: &Session| {
        let rule = cluster_rule_of(node, cluster, &view, spec, args, session, now_ms);
        decided.set(rule);
        redirect(cluster, &view, spec, rule)
    };
    let spec = match cmd::prepare_checked(&node.engine, session, args, &refuse) {
        Prepared::Run(spec) => spec,
        Prepared::Done(reply) => return Outcome::Reply(reply),
    };
    match decided.get() {
        ClusterRule::ReadHere => {
            let (reply, _) = run_here(node, cluster, &view, session, spec, args, now_ms, None);
            Outcome::Reply(reply)
        }
        ClusterRule::Local => {
            // The slots this node answers for: those whose first reachable copy it is.
            let down = (0..view.len() as u16)
                .filter(|&m| !view.reachable(m))
                .collect();
            let scope = crate::message::Scope::new(
                crate::message::ScopeSpec {
                    owners: Vec::new(),
                    down,
                },
                view.clone(),
            );
            let scope: &dyn SlotScope = &scope;
            let (reply, _) = run_here(
                node,
                cluster,
                &view,
                session,
                spec,
                args,
                now_ms,
                Some(scope),
            );
            Outcome::Reply(reply)
        }
        ClusterRule::Route | ClusterRule::Moved { .. } | ClusterRule::CrossSlot => {
            route(node, cluster, session, order, spec, args, now_ms)
        }
    }
}

/// Redis Cluster's refusals on the cluster-client port (checked before a command is queued
/// or run): `-MOVED` to the slot's primary, `-CROSSSLOT`. A command on a slot another node
/// serves whose primary has not confirmed this node's view is served as on the plain port
/// instead (see `Cluster::may_redirect`), except WATCH, which only its owner can run: that
/// one is asked to try again.
fn redirect(
    cluster: &Cluster,
    view: &View,
    spec: &CommandSpec,
    rule: ClusterRule,
) -> Option<Reply> {
    match rule {
        ClusterRule::Moved { slot, to } => {
            cluster.stats.unowned.fetch_add(1, Ordering::Relaxed);
            if cluster.may_redirect(view, to) {
                cluster.stats.moved.fetch_add(1, Ordering::Relaxed);
                let a = view.nodes[usize::from(to)].redis_addr();
                Some(Reply::error(format!("MOVED {slot} {a}")))
            } else if spec.route == Route::Watch {
                Some(Reply::error(
                    "TRYAGAIN the cluster is changing; retry in a moment",
                ))
            } else {
                None
            }
        }
        ClusterRule::CrossSlot => Some(Reply::error(CROSSSLOT_CLUSTER)),
        ClusterRule::Route | ClusterRule::ReadHere | ClusterRule::Local => None,
    }
}

/// The answer to a command on keys while this node is cut off from the majority of its
/// cluster (`plan::Standing::CutOff`): Redis Cluster's text for a node whose cluster state
/// is `fail`.
pub(crate) const CLUSTER_DOWN: &str = "CLUSTERDOWN The cluster is down";

/// Redis Cluster's CROSSSLOT text (the cluster-client port).
const CROSSSLOT_CLUSTER: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// Bytes a forwarded command may make at its copy (`cmd::effect_len`) past which it goes
/// alone and its copies get the time to make them (`outbound::forward_large`).
const LARGE_EFFECT: usize = 1 << 20;

/// [`cluster_rule`] for a command of `session` under `view`. While the node looks for its
/// cluster everything routes as usual (keys answer TRYAGAIN); a READONLY read of a copy that
/// is still arriving here (unsettled) goes to the slot's primary instead.
fn cluster_rule_of(
    node: &Server,
    cluster: &Cluster,
    view: &View,
    spec: &CommandSpec,
    args: &[Bytes],
    session: &Session,
    now_ms: u64,
) -> ClusterRule {
    if cluster.standing_in(view) != Standing::Serving {
        return ClusterRule::Route;
    }
    let queued = session.multi.as_ref().map_or(&[][..], |tx| &tx.queue[..]);
    let rule = cluster_rule(
        spec,
        args,
        queued,
        view.me,
        session.readonly,
        |slot| view.primary(slot),
        |slot| view.owners(slot).contains(&view.me),
    );
    // A replica's copy changes by replication, which tells no tracking client: a tracking
    // client's READONLY read goes to the primary, which does.
    if rule == ClusterRule::ReadHere && session.tracking.is_some() {
        return ClusterRule::Route;
    }
    if rule == ClusterRule::ReadHere {
        let keys = spec.key_positions(args).map(|p| &args[p]);
        if !handoff::missing(node, cluster, view, keys, now_ms).is_empty() {
            let slot = spec
                .key_positions(args)
                .next()
                .map_or(0, |p| key_slot(&args[p]));
            return ClusterRule::Moved {
                slot,
                to: view.primary(slot),
            };
        }
    }
    rule
}

/// A connection's commands still on their way: the hash slots they touch (forwarded, or
/// waiting for a fetch), so what they write is not in the local store yet (a cluster-wide
/// command, FLUSHALL, a transaction across owners, ..., counts as touching every slot), the
/// oldest view they were routed by, and the order in which forwarded ones may fail over.
#[derive(Debug)]
pub struct InFlight {
    every: bool,
    /// The slots noted, each once (in `marked`'s bits too, for a test in O(1): a window of
    /// hundreds of forwarded commands is tested by every command after it).
    slots: Vec<u16>,
    /// One bit per hash slot, set for those in `slots` (allocated on the first one).
    marked: Option<Box<[u64; SLOT_WORDS]>>,
    /// The epoch of the oldest view a noted command was routed by (`u64::MAX`: none).
    since: u64,
    order: Order,
    /// A WATCH is reading what its keys hold on another node (or EXEC reads them again,
    /// `watch::before_exec`): EXEC waits for every reply before it.
    watching: bool,
}

impl Default for InFlight {
    fn default() -> InFlight {
        InFlight {
            every: false,
            slots: Vec::new(),
            marked: None,
            since: u64::MAX,
            order: Order::default(),
            watching: false,
        }
    }
}

/// Words of an [`InFlight`]'s slot bits.
const SLOT_WORDS: usize = shoal_store::SLOTS as usize / 64;

impl InFlight {
    /// Notes a command whose reply is to come and which has not run here, routed by the
    /// view of `epoch`.
    fn note(&mut self, args: &[Bytes], epoch: u64) {
        let spec = cmd::lookup(&args[0]);
        if spec
            .is_some_and(|s| matches!(s.route, Route::AllNodes(Gather::Publish | Gather::PubSub)))
        {
            // Pub/Sub touches no key: nothing after it waits for its reply.
            return;
        }
        self.since = self.since.min(epoch);
        self.watching |= spec.is_some_and(|s| s.route == Route::Watch);
        match spec {
            Some(spec) if matches!(spec.route, Route::Owner | Route::Split(_) | Route::Watch) => {
                let marked = self.marked.get_or_insert_with(|| Box::new([0; SLOT_WORDS]));
                for slot in spec.key_positions(args).map(|p| key_slot(&args[p])) {
                    let (word, bit) = (usize::from(slot) / 64, 1u64 << (slot % 64));
                    if marked[word] & bit == 0 {
                        marked[word] |= bit;
                        self.slots.push(slot);
                    }
                }
            }
            _ => self.every = true,
        }
    }

    /// Every noted command answered.
    pub fn clear(&mut self) {
        self.every = false;
        if let Some(marked) = self.marked.as_mut() {
            for &slot in &self.slots {
                marked[usize::from(slot) / 64] = 0;
            }
        }
        self.slots.clear();
        self.since = u64::MAX;
        self.order.clear();
        self.watching = false;
    }

    /// A WATCH's snapshots are still to come (then even a queued command asks
    /// [`must_wait`], so EXEC waits for them).
    pub fn watching(&self) -> bool {
        self.watching
    }

    fn touches(&self, slot: u16) -> bool {
        self.every
            || self
                .marked
                .as_ref()
                .is_some_and(|m| m[usize::from(slot) / 64] & (1 << (slot % 64)) != 0)
    }
}

/// True if `args` must wait for the commands in `in_flight` before it runs: on a slot one of
/// them touches, it would read or write, right away, a key this node owns, or it would be
/// routed by another view than they were (so it may go to another copy than they went to).
/// So a pipeline's commands on one key (one slot) take effect in order even when the key's
/// owner changed in between, or a command on it waits for a fetch, and a read after a
/// FLUSHALL (or a transaction across owners) sees it; commands on other slots go ahead, as
/// two forwarded commands to two owners may also take effect in either order. (Forwarded
/// commands on one slot in one view go to the same copy on one link, in order, and fail
/// over in order: [`FailoverOrder`].)
pub fn must_wait(node: &Server, args: &[Bytes], in_flight: &InFlight) -> bool {
    if !in_flight.every && in_flight.slots.is_empty() {
        return false;
    }
    let (Some(cluster), Some(spec)) = (&node.cluster, cmd::lookup(&args[0])) else {
        return false;
    };
    // The view only when a key is on an in-flight slot (rarely): loading it is not free.
    let view = std::cell::OnceCell::new();
    let waits_on = |slot| {
        let view = view.get_or_init(|| cluster.view());
        view.epoch() != in_flight.since || view.owners(slot)[0] == view.me
    };
    holds(waits_on, spec, args, in_flight)
}

/// [`must_wait`]'s rule, with `waits_on` telling whether a command on an in-flight slot
/// waits (this node owns it, or the view changed).
fn holds(
    waits_on: impl Fn(u16) -> bool,
    spec: &CommandSpec,
    args: &[Bytes],
    in_flight: &InFlight,
) -> bool {
    match spec.route {
        Route::Owner | Route::Split(_) | Route::Watch => spec.key_positions(args).any(|p| {
            let slot = key_slot(&args[p]);
            in_flight.touches(slot) && waits_on(slot)
        }),
        // EXEC compares what its WATCHed keys held: it waits for their snapshots.
        Route::Exec => in_flight.every || in_flight.watching,
        // Keyless writes and cluster-wide ones wait only behind a cluster-wide command.
        Route::Here | Route::AllNodes(_) | Route::Info | Route::Cluster => in_flight.every,
    }
}

fn route(
    node: &Arc<Server>,
    cluster: &Cluster,
    session: &mut Session,
    order: &mut Order,
    spec: &'static CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    let proto = session.proto;
    let view = cluster.view();
    match cluster.plan_in(&view, spec, args) {
        Plan::Here => {
            let (reply, acks) = run_here(node, cluster, &view, session, spec, args, now_ms, None);
            // WAIT asking for more replicas than have the writes: it waits out its timeout.
            // (Only a command that may wait takes a wait: none other leaves one.)
            if let Some(block) = session.block.take().filter(|_| cmd::holds_client(spec)) {
                return blocked::keyless(node, session, spec, args, block);
            }
            with_acks(reply, proto, acks, cluster.timeouts.half)
        }
        // While keys may still be arriving here, a blocking command fetches them in its wait.
        Plan::Owned
            if spec.flags & cmd::flag::BLOCKING != 0 && !cluster.handoff.settled_in(&view) =>
        {
            blocked::clustered(node, session, spec, args, None)
        }
        Plan::Owned => {
            let outcome = run_owned(node, cluster, &view, session, spec, args, now_ms);
            match session.block.take() {
                Some(block) => blocked::clustered(node, session, spec, args, Some(block)),
                None => outcome,
            }
        }
        Plan::Forward { .. } if spec.flags & cmd::flag::BLOCKING != 0 => {
            blocked::clustered(node, session, spec, args, None)
        }
        Plan::Forward { owners, access } => {
            let limit = reply_limit(session);
            // A script of a user with restrictions runs as that user there (`acl.script`), so
            // its calls are checked as they would be here.
            let as_user = cmd::acl::runs_as(session, spec, args);
            let sent = as_user.as_deref().unwrap_or(args);
            // The deadline counts from the batch's clock reading (`now_ms`), not a new one.
            let deadline = now_ms + cluster.timeouts.request.as_millis() as u64;
            let body = encode_command(proto, session.db, None, sent, deadline, limit);
            let body = tracked::carry(cluster, session, tracked::reads(spec), body);
            let slots = spec
                .key_positions(args)
                .map(|p| key_slot(&args[p]))
                .collect();
            let effect = cmd::effect_len(spec, args);
            if spec.group == "scripting" {
                // A script may run long: alone, it holds up no other command's reply.
                forward(node, view, owners, body, access, order.turn(), slots)
            } else if effect > LARGE_EFFECT {
                // A value of hundreds of MB made there: alone, given time to make it.
                let extra = shoal_wire::transfer_allowance(effect);
                outbound::forward_large(
                    node,
                    view,
                    owners,
                    body,
                    access,
                    order.turn(),
                    slots,
                    extra,
                )
            } else {
                forward_batched(node, view, owners, body, access, order, slots)
            }
        }
        Plan::Split(merge) => split::split(node, session, order, spec, args, now_ms, merge),
        Plan::AllNodes => fanout::start(node, cluster, spec, args, proto, session.db),
        Plan::InfoKeyspace => fanout::info(node, args, proto, session.info.id),
        Plan::Exec => exec(node, cluster, session, order, spec, args, now_ms),
        refused @ (Plan::TryAgain | Plan::ClusterDown) => {
            // A refused EXEC ends its transaction, as Redis's `execCommandAbort` (the
            // connection would otherwise stay in MULTI, queueing everything).
            if spec.route == Route::Exec && session.multi.take().is_some() {
                session.watched.clear();
            }
            let text = if refused == Plan::TryAgain {
                "TRYAGAIN this node is joining the cluster; retry in a moment"
            } else {
                CLUSTER_DOWN
            };
            cmd::count_rejected(&node.engine, spec, args, text);
            Outcome::Reply(Reply::error(text))
        }
        Plan::CrossSlot if gather::gathers(spec, args) => {
            gather::gather(node, cluster, session, order, spec, args, now_ms)
        }
        Plan::CrossSlot => {
            let text = format!(
                "CROSSSLOT Keys in request are owned by different nodes, so {} cannot be \
                 atomic; keep them together with a {{hash tag}}",
                spec.name.to_ascii_uppercase()
            );
            cmd::count_rejected(&node.engine, spec, args, &text);
            Outcome::Reply(Reply::error(text))
        }
        Plan::WatchElsewhere => watch::watch(node, cluster, session, order, args, now_ms),
    }
}

/// Bytes of queued arguments past which a transaction is not sent whole to another node (it
/// then runs command by command): one request of the inter-node link holds it all.
const WHOLE_TRANSACTION_MAX: usize = 64 << 20;

/// EXEC in a cluster: a transaction whose commands all run here executes as on a single
/// node (alone, `shoal_store::gate`); one whose keys all have the same copies on another node
/// is sent there whole and executes there so ([`transaction_elsewhere`]); otherwise each
/// queued command is routed on its own (in order, without isolation) and the replies are
/// gathered into EXEC's array.
fn exec(
    node: &Arc<Server>,
    cluster: &Cluster,
    session: &mut Session,
    order: &mut Order,
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
            // CONFIG, a shared setting's SET too: inside a transaction the node's alone.
            Route::Here | Route::Cluster | Route::AllNodes(Gather::Setting(_)) => true,
            Route::Exec | Route::AllNodes(_) | Route::Info => false,
            Route::Owner | Route::Split(_) | Route::Watch => {
                s.key_positions(a).all(|p| view.owner_of(&a[p]) == view.me)
            }
        }
    };
    let Some(tx) = session.multi.as_ref() else {
        return Outcome::Reply(run_here(node, cluster, &view, session, spec, args, now_ms, None).0);
    };
    // While unsettled, a transaction touching keys still on their way here runs command by
    // command (each fetches first), like one across owners.
    // Each queued command's keys in the database selected when it runs.
    let arriving = || -> bool {
        let mut db = session.db;
        tx.queue.iter().any(|a| {
            let Some(s) = cmd::lookup(&a[0]) else {
                return false;
            };
            if s.name == "select" {
                db = cmd::db::after_select(a, db, session.redis_cluster);
                return false;
            }
            let keys = cmd::db::stored_keys(s, a, db);
            !handoff::missing(node, cluster, &view, keys.iter(), now_ms).is_empty()
        })
    };
    let settled = cluster.handoff.settled_in(&view);
    // WATCHed keys owned here are compared on this store (those read on another node too:
    // copies hold the same versions).
    let all_watched_here = session
        .watched
        .iter()
        .all(|(k, _)| view.owner_of(k) == view.me);
    if tx.dirty || (tx.queue.iter().all(runs_here) && all_watched_here && (settled || !arriving()))
    {
        // Every queued command runs here: as EXEC on a single node, the queued writes
        // replicated after it.
        let (reply, acks) = run_here(node, cluster, &view, session, spec, args, now_ms, None);
        return with_acks(reply, session.proto, acks, cluster.timeouts.half);
    }
    let tx = session.multi.take().expect("checked above");
    let watched = std::mem::take(&mut session.watched);
    // The users may have changed since the commands were queued (checked here, where the
    // client is: the owners do not know its user).
    let refusals: Vec<Option<Reply>> = tx
        .queue
        .iter()
        .map(|a| cmd::acl::exec_refusal(&node.engine, session, a))
        .collect();
    // Every queued command on keys whose copies are one other node's: the transaction goes
    // there whole and runs as its EXEC, isolated as on one node (command by command, below,
    // another client's commands could run in between, and a client blocked on a key saw
    // the transaction half done). Not when a script in it would run as a restricted user
    // (`acl::runs_as`: the owner's session has no user), nor past the protocol's limits as
    // one request.
    let limits = node.engine.limits();
    let within_limits = || {
        let count: usize = tx.queue.iter().map(|a| 1 + a.len()).sum::<usize>() + 2 * watched.len();
        let bytes: usize = tx.queue.iter().flatten().map(|a| a.len() + 16).sum();
        count < limits.max_args && bytes <= WHOLE_TRANSACTION_MAX
    };
    let as_user = || {
        tx.queue
            .iter()
            .any(|a| cmd::lookup(&a[0]).is_some_and(|s| cmd::acl::runs_as(session, s, a).is_some()))
    };
    // The WATCHed keys must be there too: they are compared where it runs.
    let keys = watched.iter().map(|(k, _)| k);
    let whole = transaction_elsewhere(&view.placement, view.me, &tx.queue, keys).filter(|_| {
        settled && refusals.iter().all(Option::is_none) && within_limits() && !as_user()
    });
    if let Some((owners, slots)) = whole {
        // What each watched key held; a WATCH that got no answer counts as a change.
        let seen: Option<Vec<_>> = watched
            .iter()
            .map(|(k, seen)| Some((k.clone(), seen.get()?)))
            .collect();
        let Some(watched) = seen else {
            return Outcome::Reply(Reply::NilArray);
        };
        let tx = crate::message::Transaction {
            queue: tx.queue,
            watched,
        };
        let args = crate::message::encode_transaction(&tx);
        let deadline = now_ms + cluster.timeouts.request.as_millis() as u64;
        let limit = reply_limit(session);
        let body = encode_command(session.proto, session.db, None, &args, deadline, limit);
        let reads = tx
            .queue
            .iter()
            .any(|a| cmd::lookup(&a[0]).is_some_and(tracked::reads));
        let body = tracked::carry(cluster, session, reads, body);
        let access = transaction_access(&tx.queue);
        return forward(node, view, owners, body, access, order.turn(), slots);
    }
    // A FLUSHALL or FLUSHDB with a write after it cannot run command by command: the other
    // members flush only once this node's commands ran and replicated, so such a write
    // could lose its copies (Redis Cluster refuses a transaction across slots outright).
    let mut flushed = false;
    for a in &tx.queue {
        let Some(s) = cmd::lookup(&a[0]) else {
            continue;
        };
        if flushed && cmd::may_write(s) {
            return Outcome::Reply(Reply::error(
                "EXECABORT Transaction discarded because of: CROSSSLOT a write after \
                 FLUSHALL or FLUSHDB in a transaction across owners",
            ));
        }
        flushed |= matches!(s.route, Route::AllNodes(Gather::Flush));
    }
    // Watched keys of another node, and the transaction cannot go there whole: they were
    // read there again just before (`watch::before_exec`) and are compared here, then the
    // queue runs command by command, without isolation. While the cluster settles it is
    // aborted (the client tries again).
    let (here, elsewhere): (Vec<_>, Vec<_>) = watched
        .into_iter()
        .partition(|(k, _)| all_watched_here || view.owner_of(k) == view.me);
    for (_, seen) in &elsewhere {
        match seen {
            _ if !settled => return Outcome::Reply(Reply::NilArray),
            cmd::multi::Seen::Reread { then, now } => {
                if now.get() != Some(then) {
                    return Outcome::Reply(Reply::NilArray);
                }
            }
            // Read at WATCH time but not again: the transaction could have gone there whole
            // but for a command the user may not run, a script of a restricted user or its
            // size (so `before_exec` did not read it).
            cmd::multi::Seen::Arriving(cell) if cell.get().is_some() => {
                return Outcome::Reply(Reply::error(
                    "EXECABORT Transaction discarded because of: CROSSSLOT WATCHed keys \
                     another node owns could not be checked with this transaction",
                ));
            }
            // Its WATCH got no answer, or it was watched here and its slot moved since:
            // counted as a change.
            _ => return Outcome::Reply(Reply::NilArray),
        }
    }
    if cmd::multi::watched_changed(&node.engine, &here, now_ms) {
        return Outcome::Reply(Reply::NilArray);
    }
    let mut parts: Vec<ReplyFuture> = Vec::with_capacity(tx.queue.len());
    // A blocking command inside a transaction answers at once, as in Redis.
    let no_block = std::mem::replace(&mut session.no_block, true);
    // Each forwarded command goes alone, in order with the fan-outs among them.
    order.batches.close();
    let held = std::mem::replace(&mut order.batches.held, true);
    for a in &tx.queue {
        // Checked at its turn: an ACL SETUSER or AUTH before it in the queue counts, as in
        // Redis.
        let refused = cmd::acl::exec_refusal(&node.engine, session, a);
        let outcome = match (refused, cmd::lookup(&a[0])) {
            (Some(refused), _) => Outcome::Reply(refused),
            // Here and now, in its place among the commands run here (a fan-out would run
            // after them).
            (None, Some(s)) if matches!(s.route, Route::AllNodes(Gather::Setting(_))) => {
                Outcome::Reply(run_here(node, cluster, &view, session, s, a, now_ms, None).0)
            }
            // A cluster-wide change takes effect here in its place, then on the others.
            (None, Some(s))
                if fanout::changes_in_place(s, a)
                    && cluster.plan_in(&view, s, a) == Plan::AllNodes =>
            {
                let (local, _) = run_here(node, cluster, &view, session, s, a, now_ms, None);
                let mine = encode(&local, session.proto);
                fanout::after_here(node, s, a, session.proto, session.db, mine)
            }
            (None, Some(s)) => route(node, cluster, session, order, s, a, now_ms),
            (None, None) => Outcome::Reply(cmd::unknown_command(a)),
        };
        parts.push(outcome.into_future(session.proto));
    }
    order.batches.held = held;
    session.no_block = no_block;
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

    fn argv(s: &str) -> Vec<Bytes> {
        s.split(' ').map(|a| Bytes::from(a.to_string())).collect()
    }

    fn spec(name: &str) -> &'static CommandSpec {
        cmd::lookup(name.as_bytes()).unwrap()
    }

    #[test]
    fn in_flight_notes_the_slots_of_keyed_commands_and_every_slot_for_the_rest() {
        let mut f = InFlight::default();
        f.note(&argv("SET a 1"), 1);
        f.note(&argv("MSET b 1 c 2"), 1);
        for k in ["a", "b", "c"] {
            assert!(f.touches(key_slot(k.as_bytes())), "{k}");
        }
        assert!(!f.touches(key_slot(b"d")));
        f.note(&argv("FLUSHALL"), 1);
        assert!(
            f.touches(key_slot(b"d")),
            "a cluster-wide command touches every slot"
        );
        f.clear();
        assert!(!f.touches(key_slot(b"a")));
        // Each slot is listed once however many keys are on it (the list is bounded by
        // the slot count), and clearing forgets every one.
        let keys: Vec<String> = (0..40_000).map(|i| format!("k{i}")).collect();
        f.note(&argv(&format!("DEL {}", keys.join(" "))), 1);
        assert!(!f.every);
        let distinct: std::collections::HashSet<u16> =
            keys.iter().map(|k| key_slot(k.as_bytes())).collect();
        assert_eq!(f.slots.len(), distinct.len());
        assert!(keys.iter().all(|k| f.touches(key_slot(k.as_bytes()))));
        f.clear();
        assert!(f.slots.is_empty());
        assert!(!keys.iter().any(|k| f.touches(key_slot(k.as_bytes()))));
        f.note(&argv("SET a 1"), 1);
        f.note(&argv("SET a 2"), 1);
        assert_eq!(f.slots, [key_slot(b"a")]);
        assert!(f.touches(key_slot(b"a")) && !f.touches(key_slot(b"b")));
    }

    #[test]
    fn only_owned_keys_on_an_in_flight_slot_wait() {
        let (a, b) = (key_slot(b"a"), key_slot(b"b"));
        assert_ne!(a, b);
        let mut f = InFlight::default();
        f.note(&argv("SET a 1"), 1);
        let all = |_: u16| true;
        // A write to the same key (slot) owned here waits; one to another slot goes ahead.
        assert!(holds(all, spec("set"), &argv("SET a 2"), &f));
        assert!(holds(all, spec("mset"), &argv("MSET b 1 a 2"), &f));
        assert!(!holds(all, spec("set"), &argv("SET b 2"), &f));
        // A read of that key waits too (it must see the write); a command on a slot owned
        // elsewhere is forwarded behind it on the same link, not held.
        assert!(holds(all, spec("get"), &argv("GET a"), &f));
        assert!(!holds(all, spec("get"), &argv("GET b"), &f));
        assert!(!holds(|s| s != a, spec("set"), &argv("SET a 2"), &f));
        assert!(!holds(|s| s != a, spec("get"), &argv("GET a"), &f));
        // Keyless writes wait only behind a cluster-wide command.
        assert!(!holds(all, spec("flushall"), &argv("FLUSHALL"), &f));
        f.note(&argv("FLUSHALL"), 1);
        assert!(holds(all, spec("flushall"), &argv("FLUSHALL"), &f));
        assert!(holds(all, spec("set"), &argv("SET b 2"), &f));
        assert!(
            holds(all, spec("get"), &argv("GET b"), &f),
            "a read after a FLUSHALL"
        );
    }
}
