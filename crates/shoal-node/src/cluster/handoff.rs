//! Moving keys when the copies of a slot change (gossip mode): joins, failures, restarts
//! and leaves.
//!
//! # The rule
//!
//! Every node keeps `base`, the last view it finished handing off for. When a view with
//! another placement arrives, it compares, slot by slot, the copies under `base` with the
//! copies under the new view, by incarnation (name and generation: a restarted node lost its
//! copies). For a slot whose copies changed:
//! - the old copies still alive (placed, leaving, or this node) are assumed to hold it;
//! - the first of them in rank order is the slot's sender;
//! - the sender streams the slot's keys to each new copy that is not an old live copy,
//!   whole slot by whole slot, as HANDOFF messages (key states with versions, applied with
//!   last-writer-wins, so a write made at the new owner during the move is never overwritten
//!   by the older streamed value), paced by `handoff-rate`.
//!
//! One rule covers a join (the old owner streams to the newcomer), a failure (the surviving
//! copy re-replicates to the slot's new copy), a restart (the new generation is a new copy
//! and is refilled) and a leave (the leaving node, no longer placed but alive, streams its
//! slots to their successors). If the view changes mid-way the scan starts again against
//! the newest view; slots already delivered to the same incarnation are skipped. A send that
//! fails is retried after a pause.
//!
//! # Settling
//!
//! When its scan is complete a node sends DONE (with the view id) to every live peer. A node
//! is *settled* when its own scan and the DONE of every live peer match its current view.
//! Until then, a command on a key this node owns but does not hold first fetches the key's
//! state from its other copies and from the copies under the previous views (FETCH), so
//! clients see no cold misses during a scale-out or after a restart. Once settled, a node
//! forgets the slots it no longer holds a copy of, and a joining node announces it serves.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use shoal_store::{key_slot, KeyState, SLOTS};
use tokio::sync::{oneshot, watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::message::{decode_replicate_result, decode_states, encode_done, encode_fetch};
use super::message::{encode_handoff, entry_len};
use super::{Cluster, MemberState, NodeInfo, Peer, View};
use crate::clock::now_ms;
use crate::cluster::Server;
use crate::config::NodeConfig;
use shoal_ring::{Member, Placement};

/// Older views kept for fetching while unsettled.
const WINDOW: usize = 8;
/// Largest HANDOFF message.
const BATCH_BYTES: usize = 1 << 20;
/// Pause before retrying a hand-off whose sends failed.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// Counters behind INFO's cluster section.
#[derive(Default)]
pub struct HandoffStats {
    /// Keys, bytes and slots this node streamed to new copies.
    pub keys_sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub slots_sent: AtomicU64,
    /// Keys received in hand-off streams and applied.
    pub keys_received: AtomicU64,
    /// Slots of the running scan still to send, and the scan's total.
    pub slots_pending: AtomicU64,
    pub slots_planned: AtomicU64,
    /// Keys fetched from another copy on a miss while unsettled (found there), and fetches.
    pub fetches: AtomicU64,
    pub fetched: AtomicU64,
    /// Keys forgotten because this node no longer holds a copy of their slot.
    pub forgotten: AtomicU64,
    /// Completed scans.
    pub rounds: AtomicU64,
    /// How long the last scan that sent anything took, and the keys it sent.
    pub last_scan_ms: AtomicU64,
    pub last_scan_keys: AtomicU64,
}

/// Guessed earlier placements, for the view id and serving set they were made for.
type Guesses = ((u64, u64), Arc<Vec<Placement>>);

struct Inner {
    /// The view this node last settled in; hand-offs are planned from it. `None` for a node
    /// that joined through seeds and has not settled yet (it held nothing before).
    base: Option<Arc<View>>,
    /// Views replaced since the last settle, oldest first.
    window: Vec<Arc<View>>,
    /// Peer name -> the view id it last reported done for (0: working on a new view).
    done_from: HashMap<String, u64>,
    /// The view id this node's own scan completed for.
    my_done: u64,
    /// Slots this node holds a copy of in the view `receiving_for.1` but held none of in
    /// `base` (`receiving_for.0`): their local keys may be missing or stale until settled.
    receiving: Arc<Vec<bool>>,
    receiving_for: (u64, u64, bool),
    /// A peer reported work on another view while this node's own view did not change (the
    /// others saw a membership change this node did not, e.g. a brief false suspicion of
    /// it): until settled again every slot this node holds counts as receiving.
    peers_moving: bool,
    /// For a node without a useful base: guesses of where keys were before it joined, for
    /// the view and serving set `.0`: the placement over the other serving members, and the
    /// one over every other member (joins seen by the others before this one).
    guesses: Option<Guesses>,
}

/// Hand-off and settling state of one node.
pub struct Handoff {
    inner: Mutex<Inner>,
    /// Keys with a command waiting for a fetch, each with the commands queued behind it in
    /// arrival order (see [`before`]).
    queues: Mutex<HashMap<Bytes, VecDeque<oneshot::Sender<()>>>>,
    /// How many keys have a queue (so the settled fast path can skip the lock).
    queued: std::sync::atomic::AtomicUsize,
    /// How many times this node settled (the hand-off task forgets slots once per settle).
    settles: AtomicU64,
    /// The id of the view this node settled in (0: none, or unsettled since a change).
    settled_for: AtomicU64,
    /// Publishes `settled_for` to waiters (leave).
    settled_view: watch::Sender<u64>,
    /// Wakes the hand-off task (the node settled, or started accepting).
    wake: Notify,
    rate: u64,
    pub stats: HandoffStats,
}

fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    // A panic while holding the lock leaves plain data behind: keep using it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Handoff {
    pub fn new(config: &NodeConfig) -> Handoff {
        Handoff {
            inner: Mutex::new(Inner {
                base: None,
                window: Vec::new(),
                done_from: HashMap::new(),
                my_done: 0,
                receiving: Arc::new(Vec::new()),
                receiving_for: (u64::MAX, u64::MAX, false),
                peers_moving: false,
                guesses: None,
            }),
            queues: Mutex::new(HashMap::new()),
            queued: std::sync::atomic::AtomicUsize::new(0),
            settles: AtomicU64::new(0),
            settled_for: AtomicU64::new(0),
            settled_view: watch::channel(0).0,
            wake: Notify::new(),
            rate: config.handoff_rate.0.max(1),
            stats: HandoffStats::default(),
        }
    }

    /// Settled in `view` from the start: a static cluster (keys never move), or the first
    /// node of a gossip cluster.
    pub fn settle_static(&self, view: &Arc<View>) {
        let mut inner = lock(&self.inner);
        inner.my_done = view.id;
        inner.base = Some(view.clone());
        self.settled_for.store(view.id, Ordering::Release);
        self.settled_view.send_replace(view.id);
    }

    /// A gossip node without seeds starts a cluster: alone and settled. One with seeds is
    /// unsettled until it found the others and their hand-offs to it completed (or, with
    /// `cluster-bootstrap`, having found nobody within `join-timeout-ms`, it settles alone).
    pub fn start_gossip(&self, view: &Arc<View>, config: &NodeConfig) {
        if config.cluster_seeds.is_empty() {
            self.settle_static(view);
        }
    }

    /// Wakes the hand-off task (the node started accepting, or a DONE settled it).
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    /// True once every hand-off for `view` is complete (no fetch on misses).
    pub fn settled_in(&self, view: &View) -> bool {
        self.settled_for.load(Ordering::Acquire) == view.id
    }

    /// Waits until this node settled in its current view, or `deadline` passes.
    pub async fn wait_settled(&self, cluster: &Cluster, deadline: Instant) -> bool {
        let mut rx = self.settled_view.subscribe();
        loop {
            rx.borrow_and_update();
            if self.settled_in(&cluster.view()) {
                return true;
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                return false;
            }
        }
    }

    /// The view this node last settled in.
    fn base(&self) -> Option<Arc<View>> {
        lock(&self.inner).base.clone()
    }

    /// A view with another placement replaces `old` (called before it is published).
    pub fn view_changed(&self, old: &Arc<View>, new: &Arc<View>) {
        let mut inner = lock(&self.inner);
        if old.id != 0 {
            inner.window.push(old.clone());
            if inner.window.len() > WINDOW {
                inner.window.remove(0);
            }
        }
        inner.window.retain(|v| v.id != new.id);
        inner.my_done = 0;
        self.settled_for.store(0, Ordering::Release);
    }

    /// `name` finished handing off for view `view` (0: it is working on a new view). Kept
    /// even when `name` is not a member yet (its DONE may arrive before the gossip news of
    /// it); entries of non-members are dropped when the map outgrows the membership.
    pub fn record_done(&self, cluster: &Cluster, name: &str, view: u64) {
        {
            let mut inner = lock(&self.inner);
            inner.done_from.insert(name.to_owned(), view);
            let live = cluster.view();
            if view != live.id && self.settled_in(&live) {
                // A peer works on a membership this node has not seen (or has seen go by):
                // keys may be moving to this node without its view changing.
                inner.peers_moving = true;
                self.settled_for.store(0, Ordering::Release);
            }
            if inner.done_from.len() > 2 * live.members.len() + 16 {
                inner
                    .done_from
                    .retain(|n, _| live.members.iter().any(|m| &m.info.name == n));
            }
        }
        self.reevaluate(cluster);
    }

    fn my_scan_done(&self, cluster: &Cluster, view: u64) {
        lock(&self.inner).my_done = view;
        self.reevaluate(cluster);
    }

    /// Recomputes whether this node is settled in the current view.
    pub fn reevaluate(&self, cluster: &Cluster) {
        let mut inner = lock(&self.inner);
        let view = cluster.view();
        let settled = inner.my_done == view.id
            && view
                .live_peers()
                .all(|(n, _)| inner.done_from.get(&n.name) == Some(&view.id));
        if settled && self.settled_for.load(Ordering::Acquire) != view.id {
            inner.base = Some(view.clone());
            inner.window.clear();
            inner.peers_moving = false;
            self.settles.fetch_add(1, Ordering::AcqRel);
            self.settled_for.store(view.id, Ordering::Release);
            drop(inner);
            self.settled_view.send_replace(view.id);
            self.wake.notify_one();
        }
    }

    /// Which slots of `view` this node is receiving (see `Inner::receiving`).
    fn receiving(&self, view: &View) -> Arc<Vec<bool>> {
        let mut inner = lock(&self.inner);
        let base_id = inner.base.as_ref().map_or(0, |b| b.id);
        let key = (base_id, view.id, inner.peers_moving);
        if inner.receiving_for != key {
            let me = &view.myself;
            // A base in which this node was alone says nothing about what the others hold
            // (a restart without seeds, a partition): like no base at all.
            let base = inner
                .base
                .as_ref()
                .filter(|b| b.nodes.len() > 1 && !inner.peers_moving);
            let r: Vec<bool> = (0..SLOTS)
                .map(|slot| {
                    if !view.owners(slot).contains(&view.me) {
                        return false;
                    }
                    match base {
                        None => true,
                        Some(b) => !b
                            .owners(slot)
                            .iter()
                            .any(|&m| b.nodes[usize::from(m)].same_incarnation(me)),
                    }
                })
                .collect();
            inner.receiving = Arc::new(r);
            inner.receiving_for = key;
        }
        inner.receiving.clone()
    }

    /// The views a hand-off to `current` is planned from: the last settled view and every
    /// view replaced since (a copy may have been filled, or taken writes, in any of them).
    fn plan_bases(&self, current: &View) -> Vec<Arc<View>> {
        let inner = lock(&self.inner);
        inner
            .base
            .iter()
            // A view in which this node was alone and never settled (a start with seeds)
            // held nothing of anyone's: planning from it would echo back every key this
            // node receives.
            .chain(inner.window.iter().filter(|v| v.nodes.len() > 1))
            .filter(|v| v.id != current.id)
            .cloned()
            .collect()
    }

    /// How many times this node has settled.
    fn settle_count(&self) -> u64 {
        self.settles.load(Ordering::Acquire)
    }

    /// The links to ask for a key's state while unsettled: the slot's other copies now,
    /// then its copies under the previous views (newest first) and under the last settled
    /// view, live ones only, each once; every other live peer when that finds none.
    fn candidates(&self, view: &View, slot: u16) -> Vec<Arc<Peer>> {
        let mut out: Vec<Arc<Peer>> = Vec::new();
        let mut push = |p: &Arc<Peer>| {
            if !out.iter().any(|q| Arc::ptr_eq(q, p)) {
                out.push(p.clone());
            }
        };
        for &m in view.owners(slot) {
            if let Some(p) = view.peers.get(usize::from(m)).and_then(Option::as_ref) {
                push(p);
            }
        }
        let mut inner = lock(&self.inner);
        for old in inner.window.iter().rev().chain(inner.base.iter()) {
            for &m in old.owners(slot) {
                let node = &old.nodes[usize::from(m)];
                if let Some(p) = view.link_to(node) {
                    push(p);
                }
            }
        }
        // A node that joined (or came back) knows no earlier placement with the others in
        // it: guess where the keys were before the joins.
        if inner.base.as_ref().is_none_or(|b| b.nodes.len() < 2) {
            let others = || {
                view.members
                    .iter()
                    .filter(|r| r.info.name != view.myself.name && r.state != MemberState::Down)
            };
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            for r in others().filter(|r| r.state == MemberState::Serving) {
                h.update(r.info.name.as_bytes());
            }
            let key = (view.id, h.digest());
            if inner.guesses.as_ref().map(|g| g.0) != Some(key) {
                let replicas = view.placement.width().saturating_sub(1);
                let serving: Vec<Member> = others()
                    .filter(|r| r.state == MemberState::Serving)
                    .map(|r| Member::new(&r.info.name))
                    .collect();
                let all: Vec<Member> = others()
                    .filter(|r| r.state != MemberState::Leaving)
                    .map(|r| Member::new(&r.info.name))
                    .collect();
                let guesses: Vec<Placement> = [serving, all]
                    .iter()
                    .filter_map(|m| Placement::new(m, replicas, 0).ok())
                    .collect();
                inner.guesses = Some((key, Arc::new(guesses)));
            }
            if let Some((_, guesses)) = &inner.guesses {
                for guess in guesses.iter() {
                    for m in guess.owners(slot) {
                        let name = &guess.members()[usize::from(*m)].name.0;
                        if let Some((_, p)) = view.live_peers().find(|(n, _)| &n.name == name) {
                            push(p);
                        }
                    }
                }
            }
        }
        drop(inner);
        if out.is_empty() {
            out = view.live_peers().map(|(_, p)| p.clone()).collect();
        }
        out
    }
}

/// The keys among `keys` that this node should fetch before running a command on them:
/// none once settled; else those it holds no state for, and every key of a slot it is
/// receiving (its local copy may be older than the one on its way).
pub fn missing<'a>(
    node: &Server,
    cluster: &Cluster,
    view: &View,
    keys: impl Iterator<Item = &'a Bytes>,
    now_ms: u64,
) -> Vec<Bytes> {
    if cluster.handoff.settled_in(view) {
        return Vec::new();
    }
    let receiving = cluster.handoff.receiving(view);
    keys.filter(|k| {
        receiving.get(usize::from(key_slot(k))) == Some(&true)
            || node.engine.store.key_state(k, now_ms) == KeyState::Absent
    })
    .cloned()
    .collect()
}

/// What a command must wait for before it runs while this node is unsettled.
pub enum Before {
    /// Nothing: run it now.
    Run,
    /// A fetch of its keys, or its turn behind earlier commands on its key that wait for
    /// one. Resolves to (whether there was another copy to ask, the turn to hold until the
    /// command ran).
    Wait(Pin<Box<dyn Future<Output = (bool, KeyTurn)> + Send + 'static>>),
}

/// Holds a key's turn: dropping it lets the next command queued on the key run.
pub struct KeyTurn {
    node: Option<(Arc<Server>, Bytes)>,
}

impl KeyTurn {
    /// No turn to hold (the command did not queue).
    pub fn none() -> KeyTurn {
        KeyTurn { node: None }
    }
}

impl Drop for KeyTurn {
    fn drop(&mut self) {
        if let Some((node, key)) = self.node.take() {
            pass_turn(&node, &key, None);
        }
    }
}

/// Hands `key`'s turn to its next live waiter, or frees the key. With `own`, the caller is a
/// waiter dropped before it ran: it passes the turn on only if it had been given it.
fn pass_turn(node: &Server, key: &Bytes, own: Option<&mut oneshot::Receiver<()>>) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    let h = &cluster.handoff;
    let mut queues = h.queues.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rx) = own {
        // Under the lock: the turn cannot be handed to this waiter meanwhile.
        if rx.try_recv().is_err() {
            return;
        }
    }
    let Some(waiting) = queues.get_mut(key) else {
        return;
    };
    while let Some(next) = waiting.pop_front() {
        if next.send(()).is_ok() {
            return;
        }
    }
    queues.remove(key);
    h.queued.fetch_sub(1, Ordering::AcqRel);
}

/// A command waiting for its key's turn; dropped before it got to run, it passes on a turn
/// it was given and leaves the queue otherwise.
struct Waiter {
    node: Arc<Server>,
    key: Bytes,
    rx: Option<oneshot::Receiver<()>>,
}

impl Waiter {
    async fn turn(mut self) -> KeyTurn {
        if let Some(rx) = self.rx.as_mut() {
            let _ = rx.await;
        }
        self.rx = None;
        KeyTurn {
            node: Some((self.node.clone(), self.key.clone())),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            pass_turn(&self.node, &self.key, Some(&mut rx));
        }
    }
}

/// Decides, when a command on `keys` arrives (in arrival order), what it waits for: while
/// unsettled, a one-key command waits for its turn behind earlier ones on the same key
/// that wait for a fetch, and the first of them fetches; so commands on one key run in the
/// order they arrived (also across the moment the node settles). A multi-key command
/// fetches its missing keys without such ordering.
pub fn before(
    node: &Arc<Server>,
    cluster: &Cluster,
    view: &Arc<View>,
    keys: &[Bytes],
    now_ms: u64,
) -> Before {
    let h = &cluster.handoff;
    if keys.is_empty() || (h.settled_in(view) && h.queued.load(Ordering::Acquire) == 0) {
        return Before::Run;
    }
    if let [key] = keys {
        let mut queues = h.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(waiting) = queues.get_mut(key) {
            let (tx, rx) = oneshot::channel();
            waiting.push_back(tx);
            let waiter = Waiter {
                node: node.clone(),
                key: key.clone(),
                rx: Some(rx),
            };
            return Before::Wait(Box::pin(async move { (true, waiter.turn().await) }));
        }
        let missing = missing(node, cluster, view, keys.iter(), now_ms);
        if missing.is_empty() {
            return Before::Run;
        }
        queues.insert(key.clone(), VecDeque::new());
        h.queued.fetch_add(1, Ordering::AcqRel);
        let turn = KeyTurn {
            node: Some((node.clone(), key.clone())),
        };
        let (node, view) = (node.clone(), view.clone());
        return Before::Wait(Box::pin(async move {
            let asked = fetch(&node, &view, missing).await;
            (asked, turn)
        }));
    }
    let missing = missing(node, cluster, view, keys.iter(), now_ms);
    if missing.is_empty() {
        return Before::Run;
    }
    let (node, view) = (node.clone(), view.clone());
    Before::Wait(Box::pin(async move {
        let asked = fetch(&node, &view, missing).await;
        (asked, KeyTurn::none())
    }))
}

/// The reply a node gives a forwarded command on a key it does not hold while it knows no
/// other copy to fetch it from (it is starting and has not heard of the others yet): the
/// sender tries the key's next copy instead (`router::send_to_copies`).
pub const NOT_HERE: &[u8] =
    b"-TRYAGAIN this node is joining and does not know the key's other copies yet\r\n";

/// The reply to a forwarded command whose sender's deadline passed before it could run: the
/// sender gave up on this node and asked another copy, so running it could apply a write
/// twice, or late (a node that was frozen). Like [`NOT_HERE`], it sends the sender on.
pub const EXPIRED: &[u8] = b"-TRYAGAIN the request expired before this node could run it\r\n";

/// True for the replies that tell the sender to try the next copy.
pub fn try_next_copy(body: &[u8]) -> bool {
    body.starts_with(NOT_HERE) || body.starts_with(EXPIRED)
}

/// Fetches the state of `keys` from their other copies (see [`Handoff`]), asking every
/// candidate at once, and applies every answer with last-writer-wins (so the newest copy
/// wins even if one candidate is stale). Returns false if there was no other copy to ask.
pub async fn fetch(node: &Arc<Server>, view: &Arc<View>, keys: Vec<Bytes>) -> bool {
    let cluster = node.cluster.as_ref().expect("fetch runs in a cluster");
    let stats = &cluster.handoff.stats;
    stats.fetches.fetch_add(1, Ordering::Relaxed);
    // Candidate -> the keys to ask it for.
    let mut asks: Vec<(Arc<Peer>, Vec<Bytes>)> = Vec::new();
    for k in keys {
        for p in cluster.handoff.candidates(view, key_slot(&k)) {
            match asks.iter_mut().find(|(q, _)| Arc::ptr_eq(q, &p)) {
                Some((_, ks)) => ks.push(k.clone()),
                None => asks.push((p, vec![k.clone()])),
            }
        }
    }
    if asks.is_empty() {
        return false;
    }
    let mut requests: futures_util::stream::FuturesUnordered<_> = asks
        .iter()
        .map(|(peer, ks)| {
            let body = encode_fetch(ks);
            async move { peer.client.request(view.id, body).await }
        })
        .collect();
    // Half the inter-node timeout at most, so that a forwarded command that waited for this
    // still answers before its sender gives up; answers that came by then are applied.
    let wait = cluster.timeouts.half;
    let until = Instant::now() + wait;
    while let Ok(Some(response)) =
        tokio::time::timeout_at(until, futures_util::StreamExt::next(&mut requests)).await
    {
        let Ok(response) = response else { continue };
        let Ok(states) = decode_states(response.body) else {
            continue;
        };
        let now = now_ms();
        for (key, state) in &states {
            if node.engine.store.apply(key, state, now) {
                stats.fetched.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    true
}

/// The hand-off task (gossip mode): runs a scan after every view change, then reports DONE;
/// forgets foreign slots once settled. Ends with `stop`.
pub async fn run(node: Arc<Server>, stop: CancellationToken) {
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let mut changes = cluster.subscribe();
    let mut limiter = Limiter::new(cluster.handoff.rate);
    // A node with seeds waits until it found the cluster (or gave up looking), so that it
    // does not settle alone in the meantime.
    while !cluster.accepting.load(Ordering::Acquire) {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = cluster.handoff.wake.notified() => {}
            _ = changes.changed() => {}
        }
    }
    let mut scanned_for = 0u64;
    let mut forgot_at = 0u64;
    // (slot, new copy) pairs delivered since `base` (valid for one base).
    let mut delivered: HashSet<(u16, String, u64)> = HashSet::new();
    let mut delivered_base = u64::MAX;
    let mut reporter = Reporter::new(stop.clone());
    loop {
        changes.borrow_and_update();
        let current = cluster.view();
        let base = cluster.handoff.base();
        let base_id = base.as_ref().map_or(0, |b| b.id);
        if base_id != delivered_base {
            delivered.clear();
            delivered_base = base_id;
        }
        if current.id != scanned_for {
            reporter.update(&current, 0);
            let bases = cluster.handoff.plan_bases(&current);
            let outcome = if bases.is_empty() {
                // Nothing moved since the last settle, or nothing was held before.
                Scan::Complete
            } else {
                scan(&node, &bases, &current, &mut delivered, &mut limiter, &stop).await
            };
            match outcome {
                Scan::Complete => {
                    scanned_for = current.id;
                    cluster.handoff.stats.rounds.fetch_add(1, Ordering::Relaxed);
                    cluster.handoff.my_scan_done(cluster, current.id);
                    reporter.update(&current, current.id);
                }
                Scan::Interrupted => continue,
                Scan::Failed => {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = changes.changed() => {}
                        _ = tokio::time::sleep(RETRY_PAUSE) => {}
                    }
                    continue;
                }
                Scan::Stopped => return,
            }
        } else {
            // Same placement, maybe another live peer (a leaving one): tell it too.
            reporter.update(&current, current.id);
        }
        loop {
            let view = cluster.view();
            if view.id != current.id {
                break;
            }
            let settles = cluster.handoff.settle_count();
            if cluster.handoff.settled_in(&view) && forgot_at != settles {
                forgot_at = settles;
                tracing::info!(
                    epoch = view.epoch(),
                    "settled: every hand-off for this membership is complete"
                );
                forget_foreign_slots(&node, &view);
                super::membership::settled(&node);
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                r = changes.changed() => {
                    if r.is_err() {
                        return;
                    }
                    break;
                }
                _ = cluster.handoff.wake.notified() => {}
            }
        }
    }
}

/// Tells every live peer this node's hand-off state: 0 while it works on a new view, then
/// the view's id once done. One task per peer sends the latest state, in order on that
/// peer's connection, retrying with backoff until it is delivered or superseded.
struct Reporter {
    state: watch::Sender<u64>,
    tasks: HashMap<(String, std::net::SocketAddr), tokio::task::JoinHandle<()>>,
    stop: CancellationToken,
}

impl Reporter {
    fn new(stop: CancellationToken) -> Reporter {
        Reporter {
            state: watch::channel(0).0,
            tasks: HashMap::new(),
            stop,
        }
    }

    fn update(&mut self, view: &View, value: u64) {
        self.state.send_replace(value);
        let live: Vec<((String, std::net::SocketAddr), Arc<Peer>)> = view
            .live_peers()
            .map(|(n, p)| ((n.name.clone(), n.cluster), p.clone()))
            .collect();
        self.tasks.retain(|k, task| {
            let keep = live.iter().any(|(l, _)| l == k) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for (k, peer) in live {
            if self.tasks.contains_key(&k) {
                continue;
            }
            let rx = self.state.subscribe();
            let task = tokio::spawn(report_to(
                peer,
                view.myself.name.clone(),
                rx,
                self.stop.clone(),
            ));
            self.tasks.insert(k, task);
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
    }
}

async fn report_to(
    peer: Arc<Peer>,
    me: String,
    mut rx: watch::Receiver<u64>,
    stop: CancellationToken,
) {
    'next: loop {
        let value = *rx.borrow_and_update();
        let mut pause = Duration::from_millis(100);
        loop {
            if peer
                .client
                .request(value, encode_done(value, &me))
                .await
                .is_ok()
            {
                break;
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                r = rx.changed() => {
                    if r.is_err() {
                        return;
                    }
                    continue 'next;
                }
                _ = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(Duration::from_secs(2));
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            r = rx.changed() => if r.is_err() { return },
        }
    }
}

enum Scan {
    Complete,
    /// The view changed: scan again against the newest.
    Interrupted,
    /// Some sends failed: retry after a pause.
    Failed,
    Stopped,
}

/// What this node must send for `base -> current`: (slot, new copies to send it to).
fn plan(base: &View, current: &View) -> Vec<(u16, Vec<NodeInfo>)> {
    let me = &current.myself;
    let mut out = Vec::new();
    for slot in 0..SLOTS {
        let old: Vec<&NodeInfo> = base
            .owners(slot)
            .iter()
            .map(|&m| &base.nodes[usize::from(m)])
            .collect();
        let new: Vec<&NodeInfo> = current
            .owners(slot)
            .iter()
            .map(|&m| &current.nodes[usize::from(m)])
            .collect();
        if old.len() == new.len() && old.iter().zip(&new).all(|(a, b)| a.same_incarnation(b)) {
            continue;
        }
        let alive_old: Vec<&NodeInfo> = old.into_iter().filter(|n| current.is_alive(n)).collect();
        let Some(sender) = alive_old.first() else {
            continue; // no live copy left: nothing anyone can send
        };
        if !sender.same_incarnation(me) {
            continue;
        }
        let targets: Vec<NodeInfo> = new
            .into_iter()
            .filter(|n| !n.same_incarnation(me) && !alive_old.iter().any(|o| o.same_incarnation(n)))
            .cloned()
            .collect();
        if !targets.is_empty() {
            out.push((slot, targets));
        }
    }
    out
}

async fn scan(
    node: &Arc<Server>,
    bases: &[Arc<View>],
    current: &Arc<View>,
    delivered: &mut HashSet<(u16, String, u64)>,
    limiter: &mut Limiter,
    stop: &CancellationToken,
) -> Scan {
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let stats = &cluster.handoff.stats;
    // Every view since the last settle may have left keys somewhere: plan from each and
    // merge (a slot streamed twice is harmless, last-writer-wins).
    let mut work: Vec<(u16, Vec<NodeInfo>)> = Vec::new();
    for base in bases {
        for (slot, targets) in plan(base, current) {
            match work.binary_search_by_key(&slot, |(s, _)| *s) {
                Ok(i) => {
                    for t in targets {
                        if !work[i].1.iter().any(|o| o.same_incarnation(&t)) {
                            work[i].1.push(t);
                        }
                    }
                }
                Err(i) => work.insert(i, (slot, targets)),
            }
        }
    }
    for (slot, targets) in &mut work {
        targets.retain(|t| !delivered.contains(&(*slot, t.name.clone(), t.generation)));
    }
    work.retain(|(_, t)| !t.is_empty());
    stats
        .slots_planned
        .store(work.len() as u64, Ordering::Relaxed);
    stats
        .slots_pending
        .store(work.len() as u64, Ordering::Relaxed);
    if work.is_empty() {
        return Scan::Complete;
    }
    tracing::info!(
        slots = work.len(),
        epoch = current.epoch(),
        "handing off slots to their new copies"
    );
    let started = Instant::now();
    let keys_before = stats.keys_sent.load(Ordering::Relaxed);
    let mut failed = false;
    let mut last_log = Instant::now();
    for (n, (slot, targets)) in work.iter().enumerate() {
        if stop.is_cancelled() {
            return Scan::Stopped;
        }
        if cluster.view().id != current.id {
            return Scan::Interrupted;
        }
        let states = node.engine.store.slot_states(*slot, now_ms());
        let mut ok_targets: Vec<&NodeInfo> = targets.iter().collect();
        for batch in batches(&states) {
            let body = encode_handoff(batch.iter().map(|(k, s)| (&k[..], s)));
            // Every target gets the batch: pace the bytes that actually leave.
            limiter.take((body.len() * ok_targets.len()) as u64).await;
            let sends = ok_targets.iter().map(|t| {
                let body = body.clone();
                async move {
                    let Some(peer) = current.link_to(t) else {
                        return false;
                    };
                    match peer.client.request(current.id, body).await {
                        Ok(r) => decode_replicate_result(&r.body).is_some(),
                        Err(e) => {
                            tracing::debug!(node = %t.name, error = %e, "hand-off send failed");
                            false
                        }
                    }
                }
            });
            let results = futures_util::future::join_all(sends).await;
            let mut i = 0;
            ok_targets.retain(|_| {
                let ok = results[i];
                i += 1;
                ok
            });
            let sent = (results.iter().filter(|&&r| r).count()) as u64;
            stats
                .keys_sent
                .fetch_add(batch.len() as u64 * sent, Ordering::Relaxed);
            stats
                .bytes_sent
                .fetch_add(body.len() as u64 * sent, Ordering::Relaxed);
            if ok_targets.is_empty() {
                break;
            }
        }
        if ok_targets.len() < targets.len() {
            failed = true;
        }
        for t in ok_targets {
            delivered.insert((*slot, t.name.clone(), t.generation));
        }
        stats.slots_sent.fetch_add(1, Ordering::Relaxed);
        stats
            .slots_pending
            .store((work.len() - n - 1) as u64, Ordering::Relaxed);
        if last_log.elapsed() >= Duration::from_secs(5) {
            last_log = Instant::now();
            tracing::info!(
                done = n + 1,
                of = work.len(),
                keys_sent = stats.keys_sent.load(Ordering::Relaxed),
                "hand-off progress"
            );
        }
    }
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let keys = stats.keys_sent.load(Ordering::Relaxed) - keys_before;
    stats.last_scan_ms.store(elapsed_ms, Ordering::Relaxed);
    stats.last_scan_keys.store(keys, Ordering::Relaxed);
    tracing::info!(
        slots = work.len(),
        keys,
        elapsed_ms,
        failed,
        "hand-off scan finished"
    );
    if failed {
        Scan::Failed
    } else {
        Scan::Complete
    }
}

/// Splits a slot's states into messages of at most `BATCH_BYTES` (a larger state goes
/// alone).
fn batches(states: &[(Bytes, KeyState)]) -> Vec<&[(Bytes, KeyState)]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (i, (k, s)) in states.iter().enumerate() {
        let len = entry_len(k, s);
        if i > start && size + len > BATCH_BYTES {
            out.push(&states[start..i]);
            start = i;
            size = 0;
        }
        size += len;
    }
    if start < states.len() {
        out.push(&states[start..]);
    }
    out
}

/// After settling: drop the keys of slots this node holds no copy of any more.
fn forget_foreign_slots(node: &Server, view: &View) {
    if !view.is_member() {
        return;
    }
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let mut forgotten = 0;
    for slot in 0..SLOTS {
        if !view.owners(slot).contains(&view.me) {
            forgotten += node.engine.store.drop_slot(slot);
        }
    }
    if forgotten > 0 {
        tracing::info!(keys = forgotten, "forgot keys of slots held elsewhere now");
    }
    cluster
        .handoff
        .stats
        .forgotten
        .fetch_add(forgotten as u64, Ordering::Relaxed);
}

/// Paces the hand-off stream to `rate` bytes per second (bursts of up to one second).
struct Limiter {
    rate: u64,
    next: Instant,
}

impl Limiter {
    fn new(rate: u64) -> Limiter {
        Limiter {
            rate,
            next: Instant::now(),
        }
    }

    async fn take(&mut self, bytes: u64) {
        let now = Instant::now();
        if self.next + Duration::from_secs(1) < now {
            self.next = now - Duration::from_secs(1);
        }
        self.next += Duration::from_micros(bytes.saturating_mul(1_000_000) / self.rate);
        if self.next > now {
            tokio::time::sleep_until(self.next).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_the_size_limit() {
        let big = KeyState::Live {
            value: Bytes::from(vec![0u8; 400 << 10]),
            flags: 0,
            expire_at_ms: 0,
            version: 1,
        };
        let states: Vec<(Bytes, KeyState)> = (0..5)
            .map(|i| (Bytes::from(format!("k{i}")), big.clone()))
            .collect();
        let b = batches(&states);
        assert_eq!(b.iter().map(|b| b.len()).collect::<Vec<_>>(), vec![2, 2, 1]);
        assert!(batches(&[]).is_empty());
    }

    use super::super::{MemberRow, MemberState};
    use crate::config::NodeConfig;

    /// One member: name, generation, state.
    type Row = (&'static str, u64, MemberState);

    fn rows(members: &[Row]) -> Vec<MemberRow> {
        members
            .iter()
            .enumerate()
            .map(|(i, (name, generation, state))| MemberRow {
                info: NodeInfo::new(
                    name,
                    format!("127.0.0.1:{}", 1000 + i).parse().unwrap(),
                    format!("127.0.0.1:{}", 2000 + i).parse().unwrap(),
                    *generation,
                ),
                state: *state,
            })
            .collect()
    }

    /// Checks the hand-off rule from `base` to `current` as every live node plans it: each
    /// new copy of a slot that no live old copy is gets the slot from exactly one live
    /// node, that node held it, and nobody sends a slot to a copy that already held it.
    fn check(replicas: usize, base: &[Row], current: &[Row]) -> usize {
        let config = NodeConfig {
            cluster_mode: "gossip".into(),
            cluster_secret: "s".into(),
            replicas,
            ..NodeConfig::default()
        };
        let first = rows(current)[0].info.clone();
        let cluster = Cluster::for_gossip(&config, first).unwrap();
        let alive: Vec<&Row> = current
            .iter()
            .filter(|r| r.2 != MemberState::Down)
            .collect();
        let mut sends: HashMap<(u16, String), Vec<String>> = HashMap::new();
        for me in &alive {
            // A node that was not in `base` (a newcomer, a new incarnation) held nothing.
            if !base.iter().any(|b| b.0 == me.0 && b.1 == me.1) {
                continue;
            }
            let b = cluster.build_view(1, rows(base), me.0).unwrap();
            let c = cluster.build_view(2, rows(current), me.0).unwrap();
            for (slot, targets) in plan(&b, &c) {
                let held = b
                    .owners(slot)
                    .iter()
                    .any(|&m| b.nodes[usize::from(m)].name == me.0);
                assert!(held, "{} sends slot {slot} it did not hold", me.0);
                for t in targets {
                    sends
                        .entry((slot, t.name))
                        .or_default()
                        .push(me.0.to_string());
                }
            }
        }
        let view = cluster.build_view(2, rows(current), alive[0].0).unwrap();
        let old = cluster.build_view(1, rows(base), base[0].0).unwrap();
        let mut expected = 0;
        for slot in 0..SLOTS {
            let alive_old: Vec<&NodeInfo> = old
                .owners(slot)
                .iter()
                .map(|&m| &old.nodes[usize::from(m)])
                .filter(|n| view.is_alive(n))
                .collect();
            for &m in view.owners(slot) {
                let n = &view.nodes[usize::from(m)];
                let got = sends.remove(&(slot, n.name.clone())).unwrap_or_default();
                if alive_old.iter().any(|o| o.same_incarnation(n)) || alive_old.is_empty() {
                    assert!(
                        got.is_empty(),
                        "slot {slot} sent to {} that held it",
                        n.name
                    );
                } else {
                    assert_eq!(got.len(), 1, "slot {slot} to {}: senders {got:?}", n.name);
                    expected += 1;
                }
            }
        }
        assert!(
            sends.is_empty(),
            "sends to non-copies: {:?}",
            sends.keys().take(3)
        );
        expected
    }

    use MemberState::{Down, Joining, Leaving, Serving};

    #[tokio::test]
    async fn every_moved_copy_has_exactly_one_sender() {
        let abc = [("a", 1, Serving), ("b", 1, Serving), ("c", 1, Serving)];
        // A join: the newcomer gets its share from the old owners.
        let join = check(
            1,
            &abc,
            &[
                ("a", 1, Serving),
                ("b", 1, Serving),
                ("c", 1, Serving),
                ("d", 1, Joining),
            ],
        );
        assert!(join > 16384 / 4, "a join moves copies: {join}");
        // Two joins at once.
        assert!(
            check(
                1,
                &abc,
                &[
                    ("a", 1, Serving),
                    ("b", 1, Serving),
                    ("c", 1, Serving),
                    ("d", 1, Joining),
                    ("e", 1, Joining),
                ],
            ) > 0
        );
        // A crash: the surviving copy re-replicates.
        let crash = check(
            1,
            &abc,
            &[("a", 1, Serving), ("b", 1, Serving), ("c", 1, Down)],
        );
        assert!(crash > 0);
        // A restart: the new incarnation is refilled like a newcomer.
        let restart = check(
            1,
            &abc,
            &[("a", 1, Serving), ("b", 1, Serving), ("c", 2, Joining)],
        );
        assert!(
            restart > 16384 / 2,
            "c held two thirds of the copies: {restart}"
        );
        // A leave: the leaving node, alive but not placed, hands its slots over.
        assert!(
            check(
                1,
                &abc,
                &[("a", 1, Serving), ("b", 1, Serving), ("c", 1, Leaving)]
            ) > 0
        );
        // Three copies, two crash at once.
        let abcde = [
            ("a", 1, Serving),
            ("b", 1, Serving),
            ("c", 1, Serving),
            ("d", 1, Serving),
            ("e", 1, Serving),
        ];
        assert!(
            check(
                2,
                &abcde,
                &[
                    ("a", 1, Serving),
                    ("b", 1, Down),
                    ("c", 1, Serving),
                    ("d", 1, Down),
                    ("e", 1, Serving),
                ],
            ) > 0
        );
    }
}
