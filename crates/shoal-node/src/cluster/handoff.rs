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

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use shoal_store::{key_slot, KeyState, SLOTS};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::message::{decode_replicate_result, decode_states, encode_done, encode_fetch};
use super::message::{encode_handoff, entry_len};
use super::{Cluster, NodeInfo, Peer, View};
use crate::config::NodeConfig;
use crate::node::{now_ms, Node};

/// Older views kept for fetching while unsettled.
const WINDOW: usize = 8;
/// Largest HANDOFF message.
const BATCH_BYTES: usize = 1 << 20;
/// Pause before retrying a hand-off whose sends failed.
const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// Attempts to deliver one DONE.
const DONE_ATTEMPTS: u32 = 10;

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

struct Inner {
    /// Views replaced since the last settle, oldest first.
    window: Vec<Arc<View>>,
    /// Peer name -> the view id it last reported done for.
    done_from: HashMap<String, u64>,
    /// The view id this node's own scan completed for.
    my_done: u64,
}

/// Hand-off and settling state of one node.
pub struct Handoff {
    inner: Mutex<Inner>,
    settled: AtomicBool,
    /// The id of the last view this node settled in (0: none yet).
    settled_view: watch::Sender<u64>,
    /// Wakes the hand-off task (a DONE arrived that settled the node).
    wake: Notify,
    rate: u64,
    pub stats: HandoffStats,
}

impl Handoff {
    pub fn new(config: &NodeConfig) -> Handoff {
        Handoff {
            inner: Mutex::new(Inner {
                window: Vec::new(),
                done_from: HashMap::new(),
                my_done: 0,
            }),
            settled: AtomicBool::new(false),
            settled_view: watch::channel(0).0,
            wake: Notify::new(),
            rate: config.handoff_rate.0.max(1),
            stats: HandoffStats::default(),
        }
    }

    /// A static cluster never moves keys: always settled.
    pub fn settle_static(&self, view: &View) {
        self.inner.lock().expect("handoff lock").my_done = view.id;
        self.settled.store(true, Ordering::Release);
        self.settled_view.send_replace(view.id);
    }

    /// A gossip node without seeds starts a cluster: alone and settled. One with seeds is
    /// unsettled until it found the others and their hand-offs to it completed (or, having
    /// found nobody within `join-timeout-ms`, it settles alone).
    pub fn start_gossip(&self, view: &View, config: &NodeConfig) {
        if config.cluster_seeds.is_empty() {
            self.settle_static(view);
        }
    }

    /// Wakes the hand-off task (the node started accepting, or a DONE settled it).
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    /// True once every hand-off for the current view is complete (no fetch on misses).
    pub fn is_settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    /// Waits until this node settled in a view that satisfies `f`, or `deadline` passes.
    pub async fn wait_settled(&self, cluster: &Cluster, deadline: Instant) -> bool {
        let mut rx = self.settled_view.subscribe();
        loop {
            let view = cluster.view();
            if self.is_settled() && *rx.borrow_and_update() == view.id {
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

    /// A view with another placement replaced `old`.
    pub fn view_changed(&self, old: &Arc<View>, new: &Arc<View>) {
        let mut inner = self.inner.lock().expect("handoff lock");
        if old.id != 0 {
            inner.window.push(old.clone());
            if inner.window.len() > WINDOW {
                inner.window.remove(0);
            }
        }
        inner.window.retain(|v| v.id != new.id);
        self.settled.store(false, Ordering::Release);
    }

    /// `name` finished handing off for view `view`.
    pub fn record_done(&self, cluster: &Cluster, name: &str, view: u64) {
        self.inner
            .lock()
            .expect("handoff lock")
            .done_from
            .insert(name.to_owned(), view);
        self.reevaluate(cluster);
    }

    fn my_scan_done(&self, cluster: &Cluster, view: u64) {
        self.inner.lock().expect("handoff lock").my_done = view;
        self.reevaluate(cluster);
    }

    /// Recomputes whether this node is settled in the current view.
    pub fn reevaluate(&self, cluster: &Cluster) {
        let view = cluster.view();
        let mut inner = self.inner.lock().expect("handoff lock");
        let settled = inner.my_done == view.id
            && view
                .live_peers()
                .all(|(n, _)| inner.done_from.get(&n.name) == Some(&view.id));
        let was = self.settled.swap(settled, Ordering::AcqRel);
        if settled && !was {
            inner.window.clear();
            drop(inner);
            self.settled_view.send_replace(view.id);
            self.wake.notify_one();
        }
    }

    /// The links to ask for a key's state while unsettled: the slot's other copies now,
    /// then its copies under the previous views (newest first), live ones only, each once.
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
        let inner = self.inner.lock().expect("handoff lock");
        for old in inner.window.iter().rev() {
            for &m in old.owners(slot) {
                let node = &old.nodes[usize::from(m)];
                if let Some(p) = view.link_to(node) {
                    push(p);
                }
            }
        }
        out
    }
}

/// The keys among `keys` that this node should fetch before running a command on them:
/// none once settled; else those it holds no state for (neither value nor tombstone).
pub fn missing<'a>(
    node: &Node,
    cluster: &Cluster,
    keys: impl Iterator<Item = &'a Bytes>,
    now_ms: u64,
) -> Vec<Bytes> {
    if cluster.handoff.is_settled() {
        return Vec::new();
    }
    keys.filter(|k| node.store.key_state(k, now_ms) == KeyState::Absent)
        .cloned()
        .collect()
}

/// The reply a node gives a forwarded command on a key it does not hold while it knows no
/// other copy to fetch it from (it is starting and has not heard of the others yet): the
/// sender tries the key's next copy instead (`router::send_to_copies`).
pub const NOT_HERE: &[u8] =
    b"-TRYAGAIN this node is joining and does not know the key's other copies yet\r\n";

/// Fetches the state of `keys` from their other copies (see [`Handoff`]) and applies what is
/// found with last-writer-wins. Stops asking about a key once one copy knew it. Returns
/// false if there was no other copy to ask.
pub async fn fetch(node: &Arc<Node>, view: &Arc<View>, keys: Vec<Bytes>) -> bool {
    let cluster = node.cluster.as_ref().expect("fetch runs in a cluster");
    let stats = &cluster.handoff.stats;
    stats.fetches.fetch_add(1, Ordering::Relaxed);
    let mut wanted: Vec<(Bytes, Vec<Arc<Peer>>)> = keys
        .into_iter()
        .map(|k| {
            let c = cluster.handoff.candidates(view, key_slot(&k));
            (k, c)
        })
        .collect();
    if wanted.iter().all(|(_, c)| c.is_empty()) {
        return false;
    }
    let mut order: Vec<Arc<Peer>> = Vec::new();
    for (_, c) in &wanted {
        for p in c {
            if !order.iter().any(|q| Arc::ptr_eq(q, p)) {
                order.push(p.clone());
            }
        }
    }
    for peer in order {
        let ask: Vec<Bytes> = wanted
            .iter()
            .filter(|(_, c)| c.iter().any(|q| Arc::ptr_eq(q, &peer)))
            .map(|(k, _)| k.clone())
            .collect();
        if ask.is_empty() {
            continue;
        }
        let Ok(response) = peer.client.request(view.id, encode_fetch(&ask)).await else {
            continue;
        };
        let Ok(states) = decode_states(response.body) else {
            continue;
        };
        let now = now_ms();
        for (key, state) in &states {
            node.store.apply(key, state, now);
            stats.fetched.fetch_add(1, Ordering::Relaxed);
        }
        wanted.retain(|(k, _)| !states.iter().any(|(f, _)| f == k));
        if wanted.is_empty() {
            break;
        }
    }
    true
}

/// The hand-off task (gossip mode): runs a scan after every view change, then reports DONE;
/// forgets foreign slots once settled. Ends with `stop`.
pub async fn run(node: Arc<Node>, stop: CancellationToken) {
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let mut changes = cluster.subscribe();
    let mut base = cluster.view();
    let mut delivered: HashSet<(u16, String, u64)> = HashSet::new();
    let mut forgot_for = 0u64;
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
    loop {
        changes.borrow_and_update();
        let current = cluster.view();
        let outcome = if current.id == base.id {
            Scan::Complete
        } else {
            scan(&node, &base, &current, &mut delivered, &mut limiter, &stop).await
        };
        match outcome {
            Scan::Complete => {
                if base.id != current.id {
                    tracing::info!(
                        epoch = current.epoch(),
                        sent_keys = cluster.handoff.stats.keys_sent.load(Ordering::Relaxed),
                        "hand-off complete for this membership"
                    );
                }
                base = current.clone();
                delivered.clear();
                cluster.handoff.stats.rounds.fetch_add(1, Ordering::Relaxed);
                cluster.handoff.my_scan_done(cluster, current.id);
                send_done(&node, &current, &stop);
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
        loop {
            let view = cluster.view();
            if cluster.handoff.is_settled() && view.id == base.id && forgot_for != view.id {
                forgot_for = view.id;
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
    node: &Arc<Node>,
    base: &View,
    current: &Arc<View>,
    delivered: &mut HashSet<(u16, String, u64)>,
    limiter: &mut Limiter,
    stop: &CancellationToken,
) -> Scan {
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let stats = &cluster.handoff.stats;
    let mut work = plan(base, current);
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
        let states = node.store.slot_states(*slot, now_ms());
        let mut ok_targets: Vec<&NodeInfo> = targets.iter().collect();
        for batch in batches(&states) {
            let body = encode_handoff(batch.iter().map(|(k, s)| (&k[..], s)));
            limiter.take(body.len() as u64).await;
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

/// Tells every live peer that this node's hand-off for `view` is complete (in the
/// background, retried a few times, given up when the view changes).
fn send_done(node: &Arc<Node>, view: &Arc<View>, stop: &CancellationToken) {
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let body = encode_done(view.id, &view.myself.name);
    for (peer_node, peer) in view.live_peers() {
        let (peer, body, stop, name) = (
            peer.clone(),
            body.clone(),
            stop.clone(),
            peer_node.name.clone(),
        );
        let (node, id) = (node.clone(), view.id);
        tokio::spawn(async move {
            let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
            for attempt in 0..DONE_ATTEMPTS {
                if stop.is_cancelled() || cluster.view().id != id {
                    return;
                }
                match peer.client.request(id, body.clone()).await {
                    Ok(_) => return,
                    Err(e) => {
                        tracing::debug!(node = %name, attempt, error = %e, "DONE not delivered");
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            _ = tokio::time::sleep(RETRY_PAUSE) => {}
                        }
                    }
                }
            }
        });
    }
    let _ = cluster;
}

/// After settling: drop the keys of slots this node holds no copy of any more.
fn forget_foreign_slots(node: &Node, view: &View) {
    if !view.is_member() {
        return;
    }
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let mut forgotten = 0;
    for slot in 0..SLOTS {
        if !view.owners(slot).contains(&view.me) {
            forgotten += node.store.drop_slot(slot);
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
}
