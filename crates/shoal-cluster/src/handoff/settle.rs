//! The hand-off and settling state of one node: the view it last settled in, the views
//! since, which peers reported DONE, which slots are still arriving.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use shoal_store::SLOTS;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

use crate::{Cluster, MemberState, Peer, View};
use shoal_engine::config::NodeConfig;
use shoal_ring::{Member, Placement};

/// Older views kept for fetching while unsettled.
pub(super) const WINDOW: usize = 8;

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
    /// Fetches for which some key had no copy answer in time.
    pub unanswered: AtomicU64,
    /// Keys forgotten because this node no longer holds a copy of their slot.
    pub forgotten: AtomicU64,
    /// Completed scans.
    pub rounds: AtomicU64,
    /// How long the last scan that sent anything took, and the keys it sent.
    pub last_scan_ms: AtomicU64,
    pub last_scan_keys: AtomicU64,
    /// The running scan's pace so far (0 when none runs), and its time left at that pace.
    pub keys_per_sec: AtomicU64,
    pub bytes_per_sec: AtomicU64,
    pub eta_secs: AtomicU64,
}

/// Guessed earlier placements, for the view id and serving set they were made for.
pub(super) type Guesses = ((u64, u64), Arc<Vec<Placement>>);

pub(super) struct Inner {
    /// The view this node last settled in; hand-offs are planned from it. `None` for a node
    /// that joined through seeds and has not settled yet (it held nothing before).
    base: Option<Arc<View>>,
    /// Views replaced since the last settle, oldest first.
    window: Vec<Arc<View>>,
    /// Peer name -> the view id it last reported done for (0: working on a new view).
    done_from: HashMap<String, u64>,
    /// The view id this node's own scan completed for.
    my_done: u64,
    /// Slots of the view `receiving_for.1` whose local keys may be missing or stale until
    /// settled (see [`receives`]; `base` is `receiving_for.0`).
    receiving: Arc<Vec<bool>>,
    receiving_for: (u64, u64, bool),
    /// A peer reported work on another view while this node's own view did not change (the
    /// others saw a membership change this node did not, e.g. a brief false suspicion of
    /// it): until settled again every slot this node holds counts as receiving.
    peers_moving: bool,
    /// Members seen leaving since the last settle: they left the base on purpose, so they
    /// do not count toward its majority ([`cut_off`]).
    departed: HashSet<String>,
    /// For a node without a useful base: guesses of where keys were before it joined, for
    /// the view and serving set `.0`: the placement over the other serving members, and the
    /// one over every other member (joins seen by the others before this one).
    guesses: Option<Guesses>,
}

/// Hand-off and settling state of one node.
pub struct Handoff {
    inner: Mutex<Inner>,
    /// Keys with a command waiting for a fetch, each with the commands queued behind it in
    /// arrival order (see [`before`](super::before)).
    pub(super) queues: Mutex<HashMap<Bytes, super::fetch::KeyQueue>>,
    /// How many keys have a queue (so the settled fast path can skip the lock).
    pub(super) queued: std::sync::atomic::AtomicUsize,
    /// How many times this node settled (the hand-off task forgets slots once per settle).
    settles: AtomicU64,
    /// The id of the view this node settled in (0: none, or unsettled since a change).
    settled_for: AtomicU64,
    /// Publishes `settled_for` to waiters (leave).
    settled_view: watch::Sender<u64>,
    /// This node reaches no majority of the members of the view it last settled in
    /// ([`cut_off`]): it refuses commands on keys and does not settle.
    /// Shared with gossip, which declares nobody down while it is set
    /// (`GossipHandle::hold_declarations_while`).
    cut_off: Arc<AtomicBool>,
    /// A pause of the whole process not yet confirmed away: it counts as cut off
    /// (`crate::fence`).
    pub fence: Arc<crate::fence::Fence>,
    /// Wakes the hand-off task (the node settled, or started accepting).
    pub(super) wake: Notify,
    pub(super) rate: u64,
    pub stats: HandoffStats,
}

pub(super) fn lock(m: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
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
                departed: HashSet::new(),
                guesses: None,
            }),
            queues: Mutex::new(HashMap::new()),
            queued: std::sync::atomic::AtomicUsize::new(0),
            settles: AtomicU64::new(0),
            settled_for: AtomicU64::new(0),
            settled_view: watch::channel(0).0,
            cut_off: Arc::new(AtomicBool::new(false)),
            fence: Arc::default(),
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
        self.cut_off.store(false, Ordering::Release);
        self.settled_for.store(view.id, Ordering::Release);
        self.settled_view.send_replace(view.id);
    }

    /// True when this node reaches no majority of the members it last settled with
    /// ([`cut_off`]), or its process stood still and no majority has confirmed its view
    /// since (`crate::fence`).
    pub fn is_cut_off(&self) -> bool {
        self.cut_off.load(Ordering::Acquire) || self.fence.fenced()
    }

    /// The flag behind [`Handoff::is_cut_off`], for gossip to follow.
    pub fn cut_off_flag(&self) -> Arc<AtomicBool> {
        self.cut_off.clone()
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

    /// True if this node holds `slot`'s keys as one of its copies: it is a copy under
    /// `view`, under the view it last settled in, or under one of the views since (what it
    /// held then it keeps until it settles again). Only such a node can tell that a key of
    /// the slot is absent.
    pub fn holds_slot(&self, view: &View, slot: u16) -> bool {
        if view.owners(slot).contains(&view.me) {
            return true;
        }
        let inner = lock(&self.inner);
        inner.base.iter().chain(inner.window.iter()).any(|old| {
            old.owners(slot)
                .iter()
                .any(|&m| old.nodes[usize::from(m)].same_incarnation(&view.myself))
        })
    }

    /// The view this node last settled in.
    pub(super) fn base(&self) -> Option<Arc<View>> {
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
        for r in old.members.iter().chain(&new.members) {
            if r.state == MemberState::Leaving && !inner.departed.contains(&r.info.name) {
                inner.departed.insert(r.info.name.clone());
            }
        }
        self.recheck_cut_off(&inner, new);
        self.settled_for.store(0, Ordering::Release);
    }

    /// CLUSTER FORGET of member `name`, declared down or suspected: it no longer counts among
    /// the members this node needs a majority of, as one seen leaving (until the next
    /// settle).
    pub fn forget(&self, name: &str, view: &View) {
        let mut inner = lock(&self.inner);
        inner.departed.insert(name.to_owned());
        self.recheck_cut_off(&inner, view);
    }

    /// The members' liveness changed without a change of placement (a suspicion came or
    /// went): whether this node is cut off may have changed.
    pub fn members_changed(&self, view: &View) {
        let inner = lock(&self.inner);
        self.recheck_cut_off(&inner, view);
    }

    /// Sets whether this node is cut off in `new` ([`cut_off`]): a member down or
    /// suspected counts as out of reach. Suspected ones count because the others' failure
    /// detectors suspect and declare this node at about the same pace as it suspects
    /// them, but they are many and it probes one member at a time: counting only members
    /// declared down, it knew itself cut off about a second after the majority had declared
    /// it down and moved its keys, and its clients read stale values in between (the
    /// whole-cluster simulation, seeds 82 and 285). In small clusters it suspects a
    /// majority seconds before the suspicion timeout lets the others declare it down.
    fn recheck_cut_off(&self, inner: &Inner, new: &View) {
        let departed = &inner.departed;
        let cut = inner.base.as_ref().is_some_and(|base| {
            let stayed: Vec<&str> = base
                .nodes
                .iter()
                .map(|n| n.name.as_str())
                .filter(|name| !departed.contains(*name))
                .collect();
            cut_off(&stayed, |name| {
                name == new.myself.name
                    || new
                        .members
                        .iter()
                        .any(|r| r.info.name == name && r.state != MemberState::Down && !r.suspect)
            })
        });
        if cut != self.cut_off.swap(cut, Ordering::AcqRel) {
            if cut {
                tracing::warn!(
                    "this node reaches no majority of the members it last settled with: \
                     commands on keys answer CLUSTERDOWN until it does"
                );
            } else {
                tracing::info!("this node reaches a majority of its cluster again");
            }
        }
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

    pub(super) fn my_scan_done(&self, cluster: &Cluster, view: u64) {
        lock(&self.inner).my_done = view;
        self.reevaluate(cluster);
    }

    /// Recomputes whether this node is settled in the current view.
    pub fn reevaluate(&self, cluster: &Cluster) {
        let mut inner = lock(&self.inner);
        let view = cluster.view();
        // A node cut off from the majority does not settle: alone in its view it would
        // settle at once, and its new base would make it whole again.
        let settled = inner.my_done == view.id
            && !self.is_cut_off()
            && view
                .live_peers()
                .all(|(n, _)| inner.done_from.get(&n.name) == Some(&view.id));
        if settled && self.settled_for.load(Ordering::Acquire) != view.id {
            inner.base = Some(view.clone());
            self.cut_off.store(false, Ordering::Release);
            inner.departed.clear();
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
    pub(super) fn receiving(&self, view: &View) -> Arc<Vec<bool>> {
        let mut inner = lock(&self.inner);
        let base_id = inner.base.as_ref().map_or(0, |b| b.id);
        let key = (base_id, view.id, inner.peers_moving);
        if inner.receiving_for != key {
            // A base in which this node was alone says nothing about what the others hold
            // (a restart without seeds, a partition): like no base at all.
            let base = inner
                .base
                .as_ref()
                .filter(|b| b.nodes.len() > 1 && !inner.peers_moving);
            let r: Vec<bool> = (0..SLOTS)
                .map(|slot| receives(view, base.map(|b| &**b), slot))
                .collect();
            inner.receiving = Arc::new(r);
            inner.receiving_for = key;
        }
        inner.receiving.clone()
    }

    /// The views a hand-off to `current` is planned from: the last settled view and every
    /// view replaced since (a copy may have been filled, or taken writes, in any of them).
    pub(super) fn plan_bases(&self, current: &View) -> Vec<Arc<View>> {
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
    pub(super) fn settle_count(&self) -> u64 {
        self.settles.load(Ordering::Acquire)
    }

    /// The links to ask for a key's state while unsettled: the slot's other copies now,
    /// then its copies under the previous views (newest first) and under the last settled
    /// view, live ones only, each once; every other live peer when that finds none.
    pub(super) fn candidates(&self, view: &View, slot: u16) -> Vec<Arc<Peer>> {
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

/// True when a node reaches no majority of the members it last settled with: of the names in
/// `base` (its placed members), at most half are `up` now (this node and members up again
/// under a new generation count). The others, a majority, may then have declared it down
/// and serve its keys: were it to go on serving them, its clients' writes would be lost when
/// the two sides meet again (the whole-cluster simulation lost acknowledged writes that
/// way, a node cut off from all three others for longer than failure detection). A base of
/// one or two nodes needs no majority: two nodes cannot tell a crash from a partition, and
/// the survivor of a crash serves on.
pub fn cut_off(base: &[&str], up: impl Fn(&str) -> bool) -> bool {
    if base.len() < 3 {
        return false;
    }
    let reached = base.iter().filter(|name| up(name)).count();
    reached * 2 <= base.len()
}

/// True if this node's keys of `slot` may be missing or stale in `view`, settled last in
/// `base` (None: no base to go by, every slot it holds): it holds a copy now and
///
/// - held none in `base` (the slot is on its way here), or
/// - is the owner now, not in `base`, and `base`'s owner is alive but holds no copy any
///   more: a leaving node, whose last writes may still be on their way here in its
///   replication queue. Without the fetch, a write here would build on the older value.
///
/// (An owner that crashed sends nothing more: its replica just takes over.)
pub(super) fn receives(view: &View, base: Option<&View>, slot: u16) -> bool {
    let me = &view.myself;
    let owners = view.owners(slot);
    if !owners.contains(&view.me) {
        return false;
    }
    let Some(b) = base else { return true };
    let was = |m: &u16| b.nodes[usize::from(*m)].same_incarnation(me);
    if !b.owners(slot).iter().any(was) {
        return true;
    }
    let old_owner = &b.nodes[usize::from(b.owners(slot)[0])];
    owners[0] == view.me
        && !old_owner.same_incarnation(me)
        && view.is_alive(old_owner)
        && !owners
            .iter()
            .any(|&m| view.nodes[usize::from(m)].same_incarnation(old_owner))
}

#[cfg(test)]
mod tests {
    use super::cut_off;

    #[test]
    fn a_node_needs_a_majority_of_the_members_it_settled_with() {
        let cut = |base: &[&str], up: &[&str]| cut_off(base, |n| up.contains(&n));
        let four = ["a", "b", "c", "d"];
        assert!(!cut(&four, &four));
        // One crashed, or cut off: the three others go on.
        assert!(!cut(&four, &["a", "b", "c"]));
        // Two of four, or alone: no majority.
        assert!(cut(&four, &["a", "b"]));
        assert!(cut(&four, &["a"]));
        // Members that joined since do not count toward the base's majority.
        assert!(cut(&four, &["a", "e", "f"]));
        let three = ["a", "b", "c"];
        assert!(!cut(&three, &["a", "c"]));
        assert!(cut(&three, &["c"]));
        // Two nodes cannot tell a crash from a partition: the survivor serves on.
        assert!(!cut(&["a", "b"], &["a"]));
        assert!(!cut(&["a"], &["a"]));
    }
}
