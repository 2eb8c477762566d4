//! The receiving side of the inter-node protocol: what this node does with the requests
//! other nodes send it.
//!
//! A forwarded command runs on the local store without being routed again (the sender
//! already chose this node: it owns the key, or it is the next copy after an unreachable
//! owner) and its reply goes back encoded in the client's protocol. A replication batch is
//! applied key by key with last-writer-wins (`Store::apply`). Both run synchronously in
//! arrival order (`Handled::Ready`), so what one node sends for one client executes in that
//! order; only `write-ack = all` defers the answer until the replicas acknowledged.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use shoal_wire::{Handled, PeerHandler, Response};

use shoal_store::{KeyState, PREFETCH_MAX};

use super::handoff::{self, Before, Fetched};
use super::message::{
    decode_request, decode_states, encode_batch_answer, encode_fetch, encode_relay_answer,
    encode_relay_failure, encode_relayed, encode_replicate, encode_replicate_result,
    peek_command_key, Change, RelayFailure, Request, KIND_BATCH,
};
use super::replicate::{replicate_keys, unconfirmed, wait_acks};
use super::router::{
    command_keys, error_bytes, order_failover, parse_command, serve_after_wait, serve_blocked,
    serve_command, serve_part_blocking,
};
use super::View;
use crate::{Cluster, Server};
use shoal_engine::clock::now_ms;
use shoal_engine::cmd::runs_in_doubt;

/// Serves the inter-node requests of one node.
pub struct PeerService {
    node: Arc<Server>,
    /// Links to members this node relays for that are not in its view (declared down or
    /// gone here and not yet at the sender, or joined there and not yet here), by name and
    /// cluster address; at most [`MAX_STRANGERS`].
    strangers: std::sync::Mutex<HashMap<(String, std::net::SocketAddr), shoal_wire::PeerClient>>,
    /// Batches' replies waiting for their senders' CONTINUE.
    held: Arc<HeldAnswers>,
}

/// Links to members outside the view a node keeps for relaying at most.
const MAX_STRANGERS: usize = 16;

impl PeerService {
    pub fn new(node: Arc<Server>) -> PeerService {
        PeerService {
            node,
            strangers: std::sync::Mutex::new(HashMap::new()),
            held: Arc::default(),
        }
    }

    /// The link a relay sends on to member `name` at `addr`: the view's when it names that
    /// member at that address, else one of its own (a process that is gone refuses it, as
    /// it would the sender's).
    fn relay_link(
        &self,
        cluster: &Cluster,
        view: &View,
        name: &str,
        addr: std::net::SocketAddr,
    ) -> shoal_wire::PeerClient {
        if let Some(p) = view.link_at(name, addr) {
            return p.client.clone();
        }
        let mut strangers = self.strangers.lock().unwrap_or_else(|e| e.into_inner());
        let key = (name.to_owned(), addr);
        if !strangers.contains_key(&key) && strangers.len() >= MAX_STRANGERS {
            // One makes room (the links of the others in use stay).
            if let Some(old) = strangers.keys().next().cloned() {
                strangers.remove(&old);
            }
        }
        strangers
            .entry(key)
            .or_insert_with(|| {
                shoal_wire::PeerClient::new(addr, cluster.auth.clone(), cluster.peer_config.clone())
            })
            .clone()
    }
}

type Deferred = Pin<Box<dyn Future<Output = Response> + Send + 'static>>;

/// What the peer service keeps per inter-node connection.
pub struct PeerConn {
    /// The node name the peer authenticated as in the handshake.
    name: String,
    /// Slots of the commands this node sent back on this link (`handoff::OTHER_VIEW`): how
    /// many are still to come again (marked resent), and since when. While some are, the
    /// link's other commands on those slots are sent back too, so none overtakes one sent
    /// back (a pipeline's `SET k b` ran before its own `SET k a` did otherwise, when this
    /// node's view changed between the two). Forgotten after three times
    /// `cluster-timeout-ms` (the sender stops sending again after twice that).
    sent_back: HashMap<u16, (u32, Instant)>,
    /// The requests another member relays here from members whose own link to this node is
    /// cut (`relay`), each origin served as a link of its own, by name.
    relayed: HashMap<String, PeerConn>,
    /// Counts the connection in `ClusterStats::inbound_links` while it is open (a relayed
    /// origin's state is no connection: `None`).
    _inbound: Option<Inbound>,
}

impl PeerConn {
    /// The state of a link (or a relayed origin's) from the node named `name`, counted as
    /// no connection.
    fn named(name: &str) -> PeerConn {
        PeerConn {
            name: name.to_owned(),
            sent_back: HashMap::new(),
            relayed: HashMap::new(),
            _inbound: None,
        }
    }
}

/// An inter-node connection this node accepted, counted in `ClusterStats::inbound_links`
/// until it is dropped.
struct Inbound(Arc<Server>);

impl Inbound {
    fn new(node: &Arc<Server>) -> Option<Inbound> {
        let cluster = node.cluster.as_ref()?;
        cluster.stats.inbound_links.fetch_add(1, Ordering::Relaxed);
        Some(Inbound(node.clone()))
    }
}

impl Drop for Inbound {
    fn drop(&mut self) {
        if let Some(cluster) = &self.0.cluster {
            cluster.stats.inbound_links.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Origins one link relays for at most (a member relays for members of the cluster; a
/// link naming more starts over).
const MAX_RELAYED_ORIGINS: usize = 256;

impl PeerHandler for PeerService {
    type Fut = Deferred;
    type Conn = PeerConn;

    fn connect(&self, peer_node: &str) -> PeerConn {
        PeerConn {
            _inbound: Inbound::new(&self.node),
            ..PeerConn::named(peer_node)
        }
    }

    /// The keys of the commands about to run here start loading side by side
    /// ([`shoal_store::Store::prefetch`]).
    fn look_ahead(&self, bodies: &[&[u8]]) {
        let keys = bodies.iter().filter_map(|b| peek_command_key(b));
        self.node.engine.store.prefetch(keys);
    }

    fn handle(&self, conn: &mut PeerConn, sender_view: u64, body: Bytes) -> Handled<Deferred> {
        if body.first() == Some(&KIND_BATCH) {
            return self.handle_batch(conn, sender_view, body);
        }
        // Clients blocked on what a forwarded write writes are served before its answer.
        let blocked = self.node.engine.blocked.clone();
        blocked.serving_after(|| self.handle_now(conn, sender_view, body))
    }
}

/// The replies of a batch that did not fit its ANSWER, until the sender asks for them with
/// CONTINUE (`message`): every command of a batch runs, and its answer goes in pieces of
/// at most [`ANSWER_PIECE`] (or one reply), so that each fits a frame. Held for the member
/// that sent the batch, under a token that starts at a random number (a CONTINUE meant for
/// an earlier process at this address finds nothing), for `hold` since the last piece went:
/// what a sender that went away left is dropped at the next call.
pub struct HeldAnswers {
    next: std::sync::atomic::AtomicU64,
    held: std::sync::Mutex<HashMap<u64, Held>>,
}

struct Held {
    sender: String,
    since: Instant,
    replies: std::collections::VecDeque<Bytes>,
}

impl Default for HeldAnswers {
    fn default() -> HeldAnswers {
        let mut start = [0u8; 8];
        // Without randomness (it never fails on Linux) tokens start at 1.
        let _ = shoal_net::fill_random(&mut start);
        HeldAnswers {
            next: std::sync::atomic::AtomicU64::new(u64::from_le_bytes(start) >> 1),
            held: std::sync::Mutex::default(),
        }
    }
}

/// Reply bytes of one ANSWER, but for one reply alone (which may be as long as a frame
/// carries).
const ANSWER_PIECE: usize = 16 << 20;

impl HeldAnswers {
    /// The ANSWER of a batch's `replies` for `sender`: the first piece, the rest held for
    /// `hold` (a sender that does not ask by then has given up).
    fn answer(&self, sender: &str, replies: Vec<Bytes>, hold: Duration) -> Bytes {
        let mut replies: std::collections::VecDeque<Bytes> = replies.into();
        let piece = take_piece(&mut replies);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|_, h| h.since.elapsed() < hold);
        if replies.is_empty() {
            return encode_batch_answer(0, &piece);
        }
        let token = self.next.fetch_add(1, Ordering::Relaxed).max(1);
        let sender = sender.to_owned();
        let since = Instant::now();
        held.insert(
            token,
            Held {
                sender,
                since,
                replies,
            },
        );
        encode_batch_answer(token, &piece)
    }

    /// The next piece of the replies `token` holds for `sender`, or `None` if they are gone.
    fn next_piece(&self, sender: &str, token: u64, hold: Duration) -> Option<Bytes> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|_, h| h.since.elapsed() < hold);
        let h = held.get_mut(&token).filter(|h| h.sender == sender)?;
        let piece = take_piece(&mut h.replies);
        if h.replies.is_empty() {
            held.remove(&token);
            return Some(encode_batch_answer(0, &piece));
        }
        h.since = Instant::now();
        Some(encode_batch_answer(token, &piece))
    }
}

/// The first replies of `replies` up to [`ANSWER_PIECE`] bytes (at least one).
fn take_piece(replies: &mut std::collections::VecDeque<Bytes>) -> Vec<Bytes> {
    let mut piece = Vec::new();
    let mut bytes = 0;
    while let Some(r) = replies.front() {
        if !piece.is_empty() && bytes + r.len() > ANSWER_PIECE {
            break;
        }
        bytes += r.len();
        piece.extend(replies.pop_front());
    }
    piece
}

impl PeerService {
    /// A BATCH: its commands are handled in order, each as if it had come in a request of
    /// its own (clients blocked on what one writes are served before the next runs, as
    /// after each command of a pipeline on a single node), and answered together once the
    /// last has its answer.
    fn handle_batch(
        &self,
        conn: &mut PeerConn,
        sender_view: u64,
        body: Bytes,
    ) -> Handled<Deferred> {
        let node = &self.node;
        let cluster = node
            .cluster
            .as_ref()
            .expect("peer service runs in a cluster");
        let parts = match decode_request(body, |_| Ok(Vec::new())) {
            Ok(Request::Batch(parts)) => parts,
            other => {
                let e = other
                    .err()
                    .map_or_else(|| "not a batch".to_owned(), |e| e.to_string());
                tracing::warn!(error = %e, "bad inter-node message");
                return Handled::Ready(Response {
                    epoch: cluster.view().id,
                    body: error_bytes(&format!("ERR bad inter-node message: {e}")),
                });
            }
        };
        cluster.stats.batches_served.fetch_add(1, Ordering::Relaxed);
        let mut answers = Vec::with_capacity(parts.len());
        for (i, part) in parts.iter().cloned().enumerate() {
            // The keys of the next few start loading side by side, as for requests of their
            // own (`look_ahead`).
            if i % PREFETCH_MAX == 0 {
                let mut next: [&[u8]; PREFETCH_MAX] = [&[]; PREFETCH_MAX];
                let mut n = 0;
                for (slot, b) in next.iter_mut().zip(&parts[i..]) {
                    *slot = b;
                    n += 1;
                }
                self.look_ahead(&next[..n]);
            }
            // One command's panic is its own error answer, as for a request of its own.
            let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.handle(conn, sender_view, part)
            }))
            .unwrap_or_else(|_| {
                Handled::Ready(Response {
                    epoch: cluster.view().id,
                    body: error_bytes("ERR internal error running a forwarded command"),
                })
            });
            answers.push(handled);
        }
        let epoch = cluster.view().id;
        let (held, hold) = (self.held.clone(), 3 * cluster.timeouts.request);
        let sender = conn.name.clone();
        if answers.iter().all(|a| matches!(a, Handled::Ready(_))) {
            let replies = answers
                .into_iter()
                .map(|a| match a {
                    Handled::Ready(r) => r.body,
                    Handled::Later(_) => error_bytes("ERR internal error"),
                })
                .collect();
            return Handled::Ready(Response {
                epoch,
                body: held.answer(&sender, replies, hold),
            });
        }
        // The replies still to come wait side by side (each its own timeout, as alone).
        Handled::Later(Box::pin(async move {
            let replies = futures_util::future::join_all(answers.into_iter().map(|a| async {
                match a {
                    Handled::Ready(r) => r.body,
                    Handled::Later(f) => f.await.body,
                }
            }))
            .await;
            Response {
                epoch,
                body: held.answer(&sender, replies, hold),
            }
        }))
    }

    fn handle_now(&self, conn: &mut PeerConn, sender_view: u64, body: Bytes) -> Handled<Deferred> {
        let node = &self.node;
        let cluster = node
            .cluster
            .as_ref()
            .expect("peer service runs in a cluster");
        let view = cluster.view();
        // Frames carry the sender's view id: a difference means one side has not heard of a
        // membership change yet (gossip converges within seconds). The request is served
        // anyway: writes replicate to the copies this node's view names, and the hand-off
        // moves keys once both sides agree.
        if sender_view != view.id {
            cluster.stats.other_view.fetch_add(1, Ordering::Relaxed);
        }
        let epoch = view.id;
        let now = now_ms();
        cluster.handoff.fence.check(now);
        let body_len = body.len();
        let reply = |body: Bytes| Handled::Ready(Response { epoch, body });
        match decode_request(body, |b| parse_command(node, b)) {
            // A fan-out's part (KEYS, SCAN, DBSIZE, RANDOMKEY over a scope) may walk the
            // whole store: on the blocking pool, so the forwarded requests behind it on this
            // connection are not held up.
            Ok(Request::Command {
                proto,
                db,
                scope: Some(scope),
                args,
                ..
            }) => {
                let work = serve_part_blocking(self.node.clone(), view, proto, db, scope, args);
                Handled::Later(Box::pin(async move {
                    let body = work
                        .await
                        .unwrap_or_else(|| error_bytes("ERR internal error in a fan-out part"));
                    Response { epoch, body }
                }))
            }
            Ok(Request::Command {
                proto,
                db,
                scope,
                args,
                deadline_ms,
                reply_limit,
                failover,
                resent,
                once,
                origin,
            }) => {
                // A failover runs a millisecond ahead (see `message`).
                let now = now + u64::from(failover);
                cluster.stats.served.fetch_add(1, Ordering::Relaxed);
                let timeout = cluster.timeouts.request.as_millis() as u64;
                note_sender_lead(
                    cluster,
                    &conn.name,
                    sender_lead_ms(deadline_ms, timeout, now),
                );
                // A large request's sender waits longer for it, and so may it run later.
                let allowance = || shoal_wire::transfer_allowance(body_len).as_millis() as u64;
                if deadline_ms != 0 && now > deadline_ms && now > deadline_ms + allowance() {
                    // The sender gave up on this node (it was frozen, or far behind) and
                    // asked the next copy: running this now could apply a write twice.
                    let n = cluster.stats.expired.fetch_add(1, Ordering::Relaxed) + 1;
                    if n.is_power_of_two() {
                        tracing::warn!(
                            expired = n,
                            late_ms = now - deadline_ms - allowance(),
                            "forwarded commands arrived after their deadline and were not run \
                             (this node stalled, or clocks differ by more than cluster-timeout-ms)"
                        );
                    }
                    return reply(Bytes::from_static(handoff::EXPIRED));
                }
                if cluster.handoff.fence.fenced() {
                    // This process stood still: it may or may not have been declared down.
                    return reply(Bytes::from_static(handoff::PAUSED));
                }
                if cluster.handoff.is_cut_off() {
                    // This node reaches no majority of its cluster: the sender is one of
                    // the few it still reaches, and the others may serve the keys already.
                    return reply(Bytes::from_static(handoff::CUT_OFF));
                }
                // Read again after the fence: one lifted since the first read is lifted
                // under a newer view (`Cluster::install_locked`), which this command must
                // run by (the older one may count this node's pre-pause copies as current).
                let view = cluster.view();
                if cluster.handoff.fence.stale(view.myself.generation) {
                    return reply(Bytes::from_static(handoff::PAUSED));
                }
                // The common case (settled, same view, no failover) needs none of this.
                let unsettled = !cluster.handoff.settled_in(&view);
                let keys = if unsettled
                    || sender_view != view.id
                    || failover
                    || resent
                    || !conn.sent_back.is_empty()
                {
                    command_keys(&args, db).unwrap_or_default()
                } else {
                    Vec::new()
                };
                if failover {
                    order_failover(node, cluster, &keys, now);
                }
                if sender_view != view.id && !failover && sends_on_leaving(cluster, &view, &keys) {
                    // This node is leaving and the sender has not heard yet: were it to run
                    // the command, it and the key's next owner (which the sender's view
                    // names next, and which others already use) would both write the key.
                    // Answered once the writes this node ran have reached their copies, so
                    // the command reaches the next copy after them.
                    cluster
                        .stats
                        .sent_on_leaving
                        .fetch_add(1, Ordering::Relaxed);
                    let slots: Vec<u16> = keys.iter().map(|k| shoal_store::key_slot(k)).collect();
                    let (drained, wait) = (view.replication_drained(&slots), cluster.timeouts.half);
                    return Handled::Later(Box::pin(async move {
                        let _ = tokio::time::timeout(wait, drained).await;
                        Response {
                            epoch,
                            body: Bytes::from_static(handoff::LEAVING),
                        }
                    }));
                }
                let hold = 3 * cluster.timeouts.request;
                if !failover
                    && (held_back(conn, &keys, resent, hold)
                        || (sender_view != view.id && owned_elsewhere(&view, &keys)))
                {
                    send_back(conn, &keys, hold);
                    cluster
                        .stats
                        .other_view_sent_back
                        .fetch_add(1, Ordering::Relaxed);
                    return reply(Bytes::from_static(handoff::OTHER_VIEW));
                }
                if failover && sender_view != view.id && not_here(node, &view, &keys, now) {
                    // A failover from a sender with another view, and this node holds no copy
                    // of the key (it forgot the slot, or never had it): the next copy
                    // answers. (Any other command on a key not owned here was sent back.)
                    return reply(Bytes::from_static(handoff::NOT_HERE));
                }
                if let Before::Wait(wait) = handoff::before(node, cluster, &view, &keys, now) {
                    // Unsettled and the key may not be here yet: fetch it from its other
                    // copies first (in arrival order per key), so a read sees no cold miss
                    // and a write builds on the value.
                    let node = self.node.clone();
                    return Handled::Later(Box::pin(async move {
                        let (fetched, turn) = wait.await;
                        if fetched == Fetched::NoCopy && sender_view != view.id {
                            return Response {
                                epoch,
                                body: Bytes::from_static(handoff::NOT_HERE),
                            };
                        }
                        if fetched == Fetched::Unanswered && !runs_in_doubt(&args) {
                            return Response {
                                epoch,
                                body: Bytes::from_static(handoff::UNANSWERED),
                            };
                        }
                        let bytes = serve_after_wait(
                            &node,
                            &view,
                            proto,
                            db,
                            scope,
                            &args,
                            turn,
                            u64::from(failover),
                            reply_limit,
                            once,
                            origin,
                        )
                        .await;
                        Response { epoch, body: bytes }
                    }));
                }
                let (bytes, acks, block) = serve_command(
                    node,
                    cluster,
                    &view,
                    &cluster.internal,
                    proto,
                    db,
                    scope,
                    &args,
                    now,
                    reply_limit,
                    origin,
                );
                if let Some(block) = block.filter(|_| !once) {
                    // A blocking command that found nothing: it waits here, for the (cut)
                    // timeout the sender gave it (unless it is to answer at once: then its
                    // reply is what it answered, as inside MULTI).
                    let wait = serve_blocked(node, &cluster.internal, proto, db, &args, block);
                    return Handled::Later(Box::pin(async move {
                        Response {
                            epoch,
                            body: wait.await,
                        }
                    }));
                }
                if acks.is_empty() {
                    reply(bytes)
                } else {
                    let ack_wait = cluster.timeouts.half;
                    Handled::Later(Box::pin(async move {
                        let body = if wait_acks(acks, ack_wait).await {
                            bytes
                        } else {
                            unconfirmed(bytes)
                        };
                        Response { epoch, body }
                    }))
                }
            }
            Ok(Request::Fetch(keys)) => {
                // Not inside a transaction: a new copy must not take half of one.
                let entered = node.engine.store.enter();
                let states: Vec<(Bytes, KeyState)> = keys
                    .into_iter()
                    .map(|k| {
                        let s = node.engine.store.key_state(&k, now);
                        (k, s)
                    })
                    .collect();
                drop(entered);
                // "Absent" is an answer only from a copy of the key's slot: another node
                // (asked as a guess, or as a copy in the asker's view that this node has not
                // installed yet) cannot tell, and its "absent" let a node restarted empty
                // run an INCR on nothing while the real copy sat behind a partition (the
                // whole-cluster simulation, seed 23 of its `all` faults).
                if states.iter().any(|(k, s)| {
                    *s == KeyState::Absent
                        && !cluster.handoff.holds_slot(&view, shoal_store::key_slot(k))
                }) {
                    return reply(Bytes::from_static(CANNOT_TELL));
                }
                reply(encode_replicate(states.iter().map(|(k, s)| (&k[..], s))))
            }
            Ok(Request::Done { view: id, name }) => {
                // The report counts for the node the connection authenticated as (for a
                // RELAYED one, the origin the relay authenticated): a peer does not report
                // for another one by naming it.
                if name != conn.name {
                    tracing::warn!(
                        peer = %conn.name,
                        named = %name,
                        "a hand-off report names another node than its sender; counted for the sender"
                    );
                }
                cluster.handoff.record_done(cluster, &conn.name, id);
                reply(Bytes::new())
            }
            Ok(Request::Handoff(entries)) => {
                // Slots with the same new copies (up to 1 MiB of them). Refused as a
                // whole while this node, settled, holds no copy of one of them: the sender
                // counts the send as failed and tries again once the two views agree (the
                // slot may be on its way here under a view this node has not heard of yet).
                if sender_view != view.id
                    && entries.iter().any(|(key, _)| foreign(cluster, &view, key))
                {
                    return reply(Bytes::from_static(NOT_A_COPY));
                }
                let applied = node.engine.store.apply_all(&entries, now) as u32;
                cluster
                    .handoff
                    .stats
                    .keys_received
                    .fetch_add(u64::from(applied), Ordering::Relaxed);
                if applied > 0 && node.engine.store.maxmemory() > 0 {
                    let _ = node.engine.store.ensure_memory(now);
                }
                reply(encode_replicate_result(
                    applied,
                    entries.len() as u32 - applied,
                ))
            }
            Ok(Request::Replicate(entries)) => {
                let entries: Vec<(Bytes, Change)> = entries
                    .into_iter()
                    .map(|(k, s)| (k, Change::State(s)))
                    .collect();
                self.replicated(conn, &view, sender_view, &entries, now)
            }
            Ok(Request::ReplicateAt {
                sent_at_ms,
                entries,
            }) => {
                note_sender_lead(cluster, &conn.name, sender_lead_at(sent_at_ms, now));
                self.replicated(conn, &view, sender_view, &entries, now)
            }
            Ok(Request::Relay {
                target,
                addr,
                inner,
            }) => {
                // The sender's link to `target` is cut: sent on from here, on this node's
                // own link, never relayed again; answered before the sender's own wait
                // ends, so it learns what the target did rather than timing out on us.
                cluster.stats.relays_served.fetch_add(1, Ordering::Relaxed);
                if target == view.myself.name {
                    return reply(encode_relay_failure(
                        RelayFailure::Failed,
                        "a member cannot relay to itself",
                    ));
                }
                let client = self.relay_link(cluster, &view, &target, addr);
                let body = encode_relayed(&conn.name, &inner);
                // A large request's sender waits its transfer allowance longer, and so may we.
                let wait =
                    cluster.timeouts.request * 3 / 4 + shoal_wire::transfer_allowance(inner.len());
                let mut sent: Pin<Box<dyn Future<Output = _> + Send>> =
                    Box::pin(tokio::time::timeout(wait, async move {
                        client.request(sender_view, body).await
                    }));
                // Queued on the link now, in the order the sender's link delivered it (a
                // later RELAY for the same target cannot pass it on the way there).
                let first = sent.as_mut().poll(&mut std::task::Context::from_waker(
                    futures_util::task::noop_waker_ref(),
                ));
                Handled::Later(Box::pin(async move {
                    let result = match first {
                        std::task::Poll::Ready(r) => r,
                        std::task::Poll::Pending => sent.await,
                    };
                    let body = match result {
                        Ok(Ok(r)) => encode_relay_answer(r.epoch, &r.body),
                        Ok(Err(e)) => encode_relay_failure(RelayFailure::of(&e), &e.to_string()),
                        Err(_) => encode_relay_failure(
                            RelayFailure::Timeout,
                            "the member did not answer the relay in time",
                        ),
                    };
                    Response { epoch, body }
                }))
            }
            Ok(Request::Relayed { origin, inner }) => {
                // Served as if `origin` had sent it on a link of its own: its hand-off
                // reports count for it, its deltas' fetches go to it, its sent-back
                // commands are its own.
                if conn.relayed.len() >= MAX_RELAYED_ORIGINS && !conn.relayed.contains_key(&origin)
                {
                    conn.relayed.clear();
                }
                let sub = conn
                    .relayed
                    .entry(origin)
                    .or_insert_with_key(|origin| PeerConn::named(origin));
                self.handle(sub, sender_view, inner)
            }
            // Only a request of its own is a batch (`handle`), not one inside another.
            Ok(Request::Batch(_)) => reply(error_bytes("ERR bad inter-node message: nested batch")),
            Ok(Request::Continue(token)) => {
                match self
                    .held
                    .next_piece(&conn.name, token, 3 * cluster.timeouts.request)
                {
                    Some(body) => reply(body),
                    None => reply(error_bytes(
                        "ERR the replies of that batch of commands are no longer held here",
                    )),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "bad inter-node message");
                reply(error_bytes(&format!("ERR bad inter-node message: {e}")))
            }
        }
    }
}

impl PeerService {
    /// Applies a batch of replicated changes and answers it. Deltas made on another version
    /// than the one held here first fetch the keys' states from the sender (their owner), so
    /// an acknowledged write is here either way. A leaving node passes the keys on
    /// ([`passes_on`]) before it answers.
    fn replicated(
        &self,
        conn: &PeerConn,
        view: &Arc<View>,
        sender_view: u64,
        entries: &[(Bytes, Change)],
        now: u64,
    ) -> Handled<Deferred> {
        let node = &self.node;
        let cluster = node
            .cluster
            .as_ref()
            .expect("peer service runs in a cluster");
        let epoch = view.id;
        let (applied, stale, refetch) =
            apply_replicated(node, cluster, view, sender_view, entries, now);
        let pass_on: Vec<Bytes> = if passes_on(view) {
            entries.iter().map(|(k, _)| k.clone()).collect()
        } else {
            Vec::new()
        };
        if refetch.is_empty() && pass_on.is_empty() {
            return Handled::Ready(Response {
                epoch,
                body: encode_replicate_result(applied, stale),
            });
        }
        let (node, view, sender) = (node.clone(), view.clone(), conn.name.clone());
        Handled::Later(Box::pin(async move {
            let mut applied = applied;
            if !refetch.is_empty() {
                match refetch_from(&node, &view, &sender, &refetch).await {
                    Some(n) => applied += n,
                    None => {
                        return Response {
                            epoch,
                            body: error_bytes("ERR could not fetch the keys of deltas"),
                        }
                    }
                }
            }
            if !pass_on.is_empty() {
                let cluster = node
                    .cluster
                    .as_ref()
                    .expect("peer service runs in a cluster");
                cluster
                    .stats
                    .repl_passed_on
                    .fetch_add(pass_on.len() as u64, Ordering::Relaxed);
                let acks = replicate_keys(
                    &node,
                    &view,
                    &view,
                    &cluster.stats,
                    pass_on.iter(),
                    now_ms(),
                    true,
                    None,
                );
                if !wait_acks(acks, cluster.timeouts.half).await {
                    return Response {
                        epoch,
                        body: error_bytes(
                            "ERR this node is leaving and the keys' copies did not confirm the \
                             writes it passed on",
                        ),
                    };
                }
            }
            Response {
                epoch,
                body: encode_replicate_result(applied, stale),
            }
        }))
    }
}

/// True when this node passes replicated changes on to the keys' copies in its own view: it
/// is leaving. Such changes come from a sender that has not heard of the leave, or that
/// queued them under a view where this node was still a copy. This node may have streamed
/// the keys' slots to their new copies already, and leaves soon: a write that reached only
/// this node and its owner would have one copy left (the scale-out test lost a copy of a
/// key that way, once in CI, after a failover to a replica that still had the old view).
/// Passed on as the states held here; the answer waits until the copies answered.
fn passes_on(view: &View) -> bool {
    !view.is_member()
}

/// Applies a batch of replicated changes: key states with last-writer-wins, deltas run on
/// the version they were made on (`apply_delta`). Returns (applied, stale) and the keys
/// whose deltas found another version here, to be fetched from the sender.
fn apply_replicated(
    node: &Server,
    cluster: &Cluster,
    view: &View,
    sender_view: u64,
    entries: &[(Bytes, Change)],
    now: u64,
) -> (u32, u32, Vec<Bytes>) {
    let (mut applied, mut stale) = (0u32, 0u32);
    let mut refetch: std::collections::HashSet<Bytes> = std::collections::HashSet::new();
    // Only a sender with another view can name a slot this node is no copy of.
    let check = sender_view != view.id;
    for (i, (key, change)) in entries.iter().enumerate() {
        // The next keys' loads start side by side, a batch at a time.
        if i % shoal_store::PREFETCH_MAX == 0 {
            let keys = entries[i..].iter().map(|(key, _)| &key[..]);
            node.engine.store.prefetch(keys);
        }
        if check && foreign(cluster, view, key) {
            cluster.stats.repl_foreign.fetch_add(1, Ordering::Relaxed);
            stale += 1;
            continue;
        }
        match change {
            Change::State(state) => {
                if node.engine.store.apply(key, state, now) {
                    applied += 1;
                } else {
                    stale += 1;
                }
            }
            Change::Delta {
                base,
                version,
                expire_at_ms,
                command,
                clock_ms,
            } => match apply_delta(
                node,
                cluster,
                key,
                *base,
                *version,
                *expire_at_ms,
                command,
                now,
                *clock_ms,
            ) {
                Some(true) => {
                    cluster
                        .stats
                        .repl_deltas_applied
                        .fetch_add(1, Ordering::Relaxed);
                    applied += 1;
                }
                Some(false) => stale += 1,
                None => {
                    cluster
                        .stats
                        .repl_deltas_refetched
                        .fetch_add(1, Ordering::Relaxed);
                    refetch.insert(key.clone());
                }
            },
        }
    }
    cluster
        .stats
        .repl_applied
        .fetch_add(u64::from(applied), Ordering::Relaxed);
    cluster
        .stats
        .repl_stale
        .fetch_add(u64::from(stale), Ordering::Relaxed);
    if applied > 0 && node.engine.store.maxmemory() > 0 {
        // Copies count against maxmemory like any key; make room as a write would.
        let _ = node.engine.store.ensure_memory(now);
    }
    (applied, stale, refetch.into_iter().collect())
}

/// Runs a delta (a write's command) on `key` if this node holds the version it was made on:
/// `Some(true)` run, with the owner's version and expiry; `Some(false)` this node holds that
/// version or a newer one already; `None` it holds another, or the command did not run as
/// one write on that version: the copy here is then dropped (it cannot be trusted) and the
/// key's state fetched from the sender takes its place.
#[allow(clippy::too_many_arguments)]
fn apply_delta(
    node: &Server,
    cluster: &Cluster,
    key: &Bytes,
    base: u64,
    version: u64,
    expire_at_ms: u64,
    command: &Bytes,
    now: u64,
    clock_ms: u64,
) -> Option<bool> {
    let store = &node.engine.store;
    let held = store.read(key, now, shoal_store::Access::Peek, |e| {
        e.map(|e| e.version)
    });
    match held {
        Some(v) if v >= version => return Some(false),
        Some(v) if v == base => {}
        _ => return None,
    }
    let args = parse_command(node, command.clone()).ok()?;
    let spec = shoal_engine::cmd::lookup(args.first()?)?;
    // The command's one key must be this key.
    let mut keys = spec.key_positions(&args);
    if keys.next().map(|i| &args[i]) != Some(key) || keys.next().is_some() {
        return None;
    }
    let mut session = shoal_engine::cmd::Session::new(cluster.internal.clone(), true);
    session.internal = true;
    let (reply, writes) = shoal_store::record_writes(Some(version), || {
        // A time-dependent command runs on the owner's clock (see `Change::Delta`).
        let at = if clock_ms != 0 { clock_ms } else { now };
        shoal_engine::cmd::run_replicated(node, &mut session, spec, &args, at)
    });
    let ran = !matches!(reply, shoal_resp::Reply::Error(_))
        && writes.count == 1
        && writes.base == Some(base);
    if !ran {
        // Another writer changed the key between the look and the run, or the run went
        // otherwise: whatever it left is not the owner's value.
        if writes.count > 0 {
            store.forget(key);
        }
        return None;
    }
    store.write(key, now, |slot| {
        if slot.expire_at() != (expire_at_ms != 0).then_some(expire_at_ms) {
            slot.set_expire((expire_at_ms != 0).then_some(expire_at_ms));
        }
    });
    Some(true)
}

/// Fetches `keys`' states from the member named `sender` and applies them, in requests of
/// at most [`REFETCH_CHUNK`] keys one after another (a replica far behind, restarted or a new
/// copy before its hand-off, asks for many large keys), all within half the inter-node
/// timeout; the number applied, or `None` when the sender could not be asked or did not
/// answer them all in time.
async fn refetch_from(
    node: &Arc<Server>,
    view: &Arc<View>,
    sender: &str,
    keys: &[Bytes],
) -> Option<u32> {
    let cluster = node.cluster.as_ref()?;
    let m = view.nodes.iter().position(|n| n.name == sender)?;
    let peer = view.peer(m as u16)?;
    let until = tokio::time::Instant::now() + cluster.timeouts.half;
    let mut applied = 0;
    for chunk in keys.chunks(REFETCH_CHUNK) {
        let asked = peer.request(view.id, encode_fetch(chunk));
        let response = tokio::time::timeout_at(until, asked).await.ok()?.ok()?;
        let states = decode_states(response.body).ok()?;
        let now = now_ms();
        // The view may have changed during the fetch: a slot this node no longer holds a
        // copy of is not brought back.
        let current = cluster.view();
        let asked: std::collections::HashSet<&Bytes> = chunk.iter().collect();
        for (k, state) in &states {
            if asked.contains(k)
                && !foreign(cluster, &current, k)
                && node.engine.store.apply(k, state, now)
            {
                applied += 1;
            }
        }
    }
    Some(applied)
}

/// Keys one FETCH of `refetch_from` asks for.
const REFETCH_CHUNK: usize = 64;

/// How far ahead of this node's clock the sender's was at least (ms), from a forwarded
/// command's deadline (the sender's clock when it sent it plus `timeout_ms`): the time in
/// transit only makes it smaller, so a lead is certain. A sender behind this node is seen
/// by that sender instead, in the commands this node sends it.
fn sender_lead_ms(deadline_ms: u64, timeout_ms: u64, now_ms: u64) -> u64 {
    if deadline_ms == 0 {
        return 0;
    }
    deadline_ms.saturating_sub(timeout_ms.saturating_add(now_ms))
}

/// The same from a stamped REPLICATE (the sender's clock when it sent it). The queues of an
/// owner replicate to its replicas all the time, so a replica knows the lead of the owner
/// whose writes it takes over on a failover even when that owner forwards it nothing (its
/// clients are Redis Cluster clients, or all on other nodes).
fn sender_lead_at(sent_at_ms: u64, now_ms: u64) -> u64 {
    sent_at_ms.saturating_sub(now_ms)
}

/// Records a sender's clock lead and warns (now and then) when it is over half of
/// `cluster-timeout-ms`: deadlines and versions compare the nodes' clocks, and the
/// whole-cluster simulation lost acknowledged writes once clocks were up to 2 s apart with
/// `cluster-timeout-ms` 1000 (none up to 1 s apart; README, "The whole-cluster simulation").
fn note_sender_lead(cluster: &Cluster, sender: &str, lead: u64) {
    let timeout = cluster.timeouts.request.as_millis() as u64;
    let seen = &cluster.stats.peer_clock_lead_ms;
    // Read first: the lead is almost always 0 or no record, and a read-modify-write on
    // every forwarded command would bounce the counter's cache line between threads.
    if lead <= seen.load(Ordering::Relaxed) {
        return;
    }
    let before = seen.fetch_max(lead, Ordering::Relaxed);
    // Once per doubling of the largest lead seen, past the bound.
    if lead > timeout / 2 && lead > before.saturating_mul(2).max(timeout / 2) {
        tracing::warn!(
            peer = %sender,
            lead_ms = lead,
            cluster_timeout_ms = timeout,
            "a peer's clock is ahead of this node's by more than half of cluster-timeout-ms: \
             keep the nodes' clocks in step (NTP), or forwarded commands expire and \
             acknowledged writes can be lost to older ones"
        );
    }
}

/// The answer to a FETCH that names a key this node neither has nor holds the slot of:
/// not key states, so the asker counts this node as not having answered.
const CANNOT_TELL: &[u8] = b"-TRYAGAIN this node holds no copy of the key's slot\r\n";

/// The answer to a HANDOFF of a slot this node holds no copy of (see [`foreign`]).
const NOT_A_COPY: &[u8] =
    b"-TRYAGAIN this node holds no copy of the slot in its view of the membership\r\n";

/// True if a replicated or handed-off state of `key` must be refused: this node settled in
/// its view and holds no copy of the key's slot there, so it has forgotten the slot (or
/// never had it) and keeping the state would bring the slot back for good (no later settle
/// forgets it). While unsettled, states are taken: the next settle forgets what is foreign.
fn foreign(cluster: &Cluster, view: &View, key: &[u8]) -> bool {
    view.is_member()
        && cluster.handoff.settled_in(view)
        && !view.owners(shoal_store::key_slot(key)).contains(&view.me)
}

/// True if a keyed command from a sender with another view is sent on to its next copy
/// because this node is leaving: it serves no slot in its own view. Only with replicas: the
/// sender's view then names another copy of every key (it has this node and at least one
/// more member); without them it is sent back like a command from another view
/// ([`owned_elsewhere`]) and comes again once the sender heard of the leave. Not for
/// a failover either (checked by the caller): the sender could not reach the copy before
/// this one, and this node may be its last.
fn sends_on_leaving(cluster: &Cluster, view: &View, keys: &[Bytes]) -> bool {
    !view.is_member() && cluster.replicas > 0 && !keys.is_empty()
}

/// True when this node is not the owner, in its view, of some of `keys` (see
/// [`handoff::OTHER_VIEW`]): a sender routing by another view took it for their owner. Two
/// nodes joining at once lost an acknowledged INCR of the scale-out test that way: a node
/// that had heard of both joins ran the INCRs of a sender that had heard of one, while the
/// owner in its own view ran the others'. Reads are sent back too, so that a pipeline's
/// read follows its writes to the owner.
fn owned_elsewhere(view: &View, keys: &[Bytes]) -> bool {
    keys.iter()
        .any(|k| view.owners(shoal_store::key_slot(k)).first() != Some(&view.me))
}

/// True when a command on `keys` must be sent back because an earlier command of the link
/// on one of their slots was, and has not come again yet (see `PeerConn::sent_back`). A
/// command that comes again (`resent`) counts off its slots first.
fn held_back(conn: &mut PeerConn, keys: &[Bytes], resent: bool, hold: Duration) -> bool {
    if conn.sent_back.is_empty() {
        return false;
    }
    let slots = || keys.iter().map(|k| shoal_store::key_slot(k));
    if resent {
        // Commands come again in the order they were sent back: this one is the earliest
        // still to come on its slots.
        for slot in slots() {
            if let Some((n, _)) = conn.sent_back.get_mut(&slot) {
                *n = n.saturating_sub(1);
            }
        }
    }
    conn.sent_back
        .retain(|_, (n, since)| *n > 0 && since.elapsed() < hold);
    !resent && slots().any(|slot| conn.sent_back.contains_key(&slot))
}

/// Notes that a command on `keys` was sent back on this link.
fn send_back(conn: &mut PeerConn, keys: &[Bytes], hold: Duration) {
    let now = Instant::now();
    for k in keys {
        let (n, since) = conn
            .sent_back
            .entry(shoal_store::key_slot(k))
            .or_insert((0, now));
        if since.elapsed() >= hold {
            *n = 0;
        }
        *n += 1;
        *since = now;
    }
}

/// True if this node holds no copy of the one key of a command under its own view and
/// does not have it either.
fn not_here(node: &Server, view: &View, keys: &[Bytes], now: u64) -> bool {
    // One slot (a key, or MOVE's key in two databases): no copy of it here, none held.
    let Some(first) = keys.first() else {
        return false;
    };
    let slot = shoal_store::key_slot(first);
    keys.iter().all(|k| shoal_store::key_slot(k) == slot)
        && !view.owners(slot).contains(&view.me)
        && keys
            .iter()
            .all(|k| node.engine.store.key_state(k, now) == KeyState::Absent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_answer_past_a_piece_is_held_and_given_in_order() {
        use crate::message::{decode_batch_answer, BatchAnswer};
        let held = HeldAnswers::default();
        let hold = Duration::from_secs(60);
        let n1 = "n1";
        let reply = |i: u8, len: usize| Bytes::from(vec![i; len]);
        // Small replies: one answer, nothing held.
        let small = vec![reply(1, 10), reply(2, 10)];
        let answer = held.answer(n1, small.clone(), hold);
        assert_eq!(
            decode_batch_answer(answer, 2),
            BatchAnswer::Replies {
                replies: small,
                more: 0
            }
        );
        // 10 MB each: a piece holds one (two would pass 16 MB), and one longer than a piece
        // goes alone in its own.
        let big = vec![
            reply(1, 10 << 20),
            reply(2, 10 << 20),
            reply(3, 20 << 20),
            reply(4, 1),
        ];
        let mut got = Vec::new();
        let mut body = held.answer(n1, big.clone(), hold);
        loop {
            let BatchAnswer::Replies { replies, more } = decode_batch_answer(body, 4 - got.len())
            else {
                panic!("an answer");
            };
            assert!(
                replies.len() == 1 || replies.iter().map(Bytes::len).sum::<usize>() <= 16 << 20
            );
            got.extend(replies);
            if more == 0 {
                break;
            }
            // Only for the member that sent the batch.
            assert_eq!(held.next_piece("n2", more, hold), None);
            body = held.next_piece(n1, more, hold).expect("held");
        }
        assert_eq!(got, big);
        assert!(held.held.lock().unwrap().is_empty(), "nothing left held");
        assert_eq!(held.next_piece(n1, 12345, hold), None);
        // A sender that never asks: dropped once `hold` passed (at the next answer held).
        let two = || vec![reply(1, 10 << 20), reply(2, 10 << 20)];
        let body = held.answer(n1, two(), Duration::ZERO);
        assert!(
            matches!(decode_batch_answer(body, 2), BatchAnswer::Replies { more, .. } if more != 0)
        );
        held.answer(n1, two(), Duration::ZERO);
        assert_eq!(held.held.lock().unwrap().len(), 1, "the older one is gone");
        let BatchAnswer::Replies { more, .. } =
            decode_batch_answer(held.answer(n1, two(), hold), 2)
        else {
            panic!("an answer");
        };
        assert!(
            held.next_piece(n1, more, Duration::ZERO).is_none(),
            "expired"
        );
    }

    /// `SET k a; SET k b` on one link, the first sent back: the second is sent back too
    /// until the first comes again, so it cannot overtake it; other slots go on.
    #[test]
    fn a_links_commands_on_a_slot_sent_back_wait_for_it() {
        let mut conn = PeerConn::named("n1");
        let hold = Duration::from_secs(3);
        let k = [Bytes::from_static(b"k")];
        let other = [Bytes::from_static(b"other")];
        assert_ne!(
            shoal_store::key_slot(&k[0]),
            shoal_store::key_slot(&other[0])
        );
        assert!(!held_back(&mut conn, &k, false, hold));
        send_back(&mut conn, &k, hold); // SET k a
        assert!(held_back(&mut conn, &k, false, hold)); // SET k b
        send_back(&mut conn, &k, hold);
        assert!(!held_back(&mut conn, &other, false, hold));
        // SET k a comes again and runs; SET k b, not yet again, is still owed.
        assert!(!held_back(&mut conn, &k, true, hold));
        assert!(held_back(&mut conn, &k, false, hold));
        send_back(&mut conn, &k, hold); // a GET k behind them
        assert!(!held_back(&mut conn, &k, true, hold)); // SET k b
        assert!(!held_back(&mut conn, &k, true, hold)); // GET k
        assert!(!held_back(&mut conn, &k, false, hold));
        assert!(conn.sent_back.is_empty());
        // A command that never comes again (it went to another node) is forgotten.
        send_back(&mut conn, &k, Duration::ZERO);
        assert!(!held_back(&mut conn, &k, false, Duration::ZERO));
    }

    #[test]
    fn a_sender_lead_is_read_off_the_deadline() {
        // Sent at 10_000 by the sender's clock with a 1 s timeout.
        assert_eq!(sender_lead_ms(11_000, 1_000, 10_000), 0, "clocks in step");
        assert_eq!(
            sender_lead_ms(11_000, 1_000, 9_200),
            800,
            "sender 800 ms ahead"
        );
        assert_eq!(
            sender_lead_ms(11_000, 1_000, 10_300),
            0,
            "behind, or in transit"
        );
        assert_eq!(sender_lead_ms(0, 1_000, 10_000), 0);
    }

    #[test]
    fn a_stamped_replication_tells_the_lead_of_its_sender() {
        assert_eq!(sender_lead_at(10_400, 10_000), 400, "ahead");
        assert_eq!(sender_lead_at(10_000, 10_000), 0, "in step");
        assert_eq!(sender_lead_at(9_700, 10_000), 0, "behind, or in transit");
    }
}
