//! The sans-IO gossip state machine: foca, the timer heap, metadata and the membership view.
//!
//! Time is a `Duration` since an origin the caller picks (the driver: its start `Instant`;
//! the simulation: virtual time). The caller feeds datagrams and the current time, fires
//! due timers, and sends what [`GossipCore::poll_transmit`] yields. Nothing here blocks,
//! awaits or reads a clock, so the same code runs under tokio and in the simulation.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use foca::{Foca, Member, Notification, Runtime, State, Timer};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::codec::WireCodec;
use crate::config::GossipConfig;
use crate::envelope::{Auth, EnvelopeError, Kind};
use crate::identity::NodeId;
use crate::metadata::{MetaHandler, MetaItem, MetaTable, NodeState};
use crate::stats::{add, inc, GossipStats};

/// Whether the cluster considers a member alive (SWIM's Alive or Suspect) or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Liveness {
    Up,
    Down,
}

/// One member as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberInfo {
    pub id: NodeId,
    pub liveness: Liveness,
    /// Up but suspected (SWIM's Suspect): a probe of it went unanswered, and unless it
    /// refutes the suspicion the cluster declares it down soon. A member heard from since
    /// this node began to suspect it is not shown suspected (see `shows_suspect`).
    pub suspect: bool,
    /// The state the member announced for this generation; `None` until it arrives.
    pub state: Option<NodeState>,
}

/// The membership view: every member ever seen (down ones too), this node included,
/// sorted by name, at most one entry per name (the latest generation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// Grows by one on every change of `members`; the node turns it into placement epochs.
    pub version: u64,
    /// This node's current identity (it changes generation when it rejoins).
    pub local: NodeId,
    pub members: Vec<MemberInfo>,
}

impl Membership {
    /// The member called `name`.
    pub fn get(&self, name: &str) -> Option<&MemberInfo> {
        self.members
            .binary_search_by(|m| m.id.name().cmp(name))
            .ok()
            .map(|i| &self.members[i])
    }

    /// Members that are up.
    pub fn up(&self) -> impl Iterator<Item = &MemberInfo> {
        self.members.iter().filter(|m| m.liveness == Liveness::Up)
    }
}

/// How long a declaration held back (`GossipCore::hold_declarations`) waits before it is
/// looked at again.
const HOLD_RETRY: Duration = Duration::from_millis(500);

/// How long a held declaration may wait: past it (a node cut off for this long) foca
/// declares as usual, so that a node that cannot vouch (its peers' datagrams come from
/// addresses other than the ones they announced) is not held forever, and the survivors of
/// losing half a cluster at once see the lost members declared down in the end.
const MAX_HOLD: Duration = Duration::from_secs(60);

/// What becomes of foca's timer to declare a suspected member down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SuspicionTimer {
    /// Let foca have it: it declares the member down unless the suspicion was refuted.
    Declare,
    /// Put it off: this node is cut off from the majority.
    Hold,
    /// Clear the suspicion here (`Alive` at the next incarnation, not broadcast): the member
    /// was heard from since it was suspected, so it is alive and never learnt of the
    /// suspicion to refute it (it was raised while this node's datagrams went nowhere).
    Vouch,
}

/// The rule for a suspicion whose timeout came (`still`: foca still suspects that
/// incarnation; `heard`: the member was heard from since; `holding`: this node is cut off
/// from the majority). A node cut off declares no one down: on its side of a partition it
/// would declare the majority down, and when the partition healed every member of the
/// majority would rejoin under a new generation and be refilled. A member heard from since
/// is vouched for, held or not: its suspicion outlived the partition that raised it, and
/// without this the node would suspect it, and stay cut off, until a probe of it failed.
fn suspicion_timer(still: bool, heard: bool, holding: bool) -> SuspicionTimer {
    match (still, heard, holding) {
        (false, _, _) => SuspicionTimer::Declare,
        (true, true, _) => SuspicionTimer::Vouch,
        (true, false, true) => SuspicionTimer::Hold,
        (true, false, false) => SuspicionTimer::Declare,
    }
}

/// What a timer entry stands for.
#[derive(Debug)]
enum Due {
    Foca(Timer<NodeId>),
    SeedAnnounce,
    MetaRefresh,
    MetaRepair,
}

#[derive(Debug)]
struct TimerEntry {
    at: Duration,
    seq: u64,
    due: Due,
}

impl PartialEq for TimerEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for TimerEntry {}
impl PartialOrd for TimerEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for TimerEntry {
    /// By due time, then by submission order: timers due together fire in the order foca
    /// asked for them (out-of-order delivery breaks SWIM, foca issue #26).
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// One min-heap for every timer of the node.
#[derive(Debug, Default)]
struct TimerHeap {
    heap: BinaryHeap<Reverse<TimerEntry>>,
    seq: u64,
}

impl TimerHeap {
    fn push(&mut self, at: Duration, due: Due) {
        self.seq += 1;
        self.heap.push(Reverse(TimerEntry {
            at,
            seq: self.seq,
            due,
        }));
    }

    fn pop_due(&mut self, now: Duration) -> Option<Due> {
        if self.heap.peek()?.0.at <= now {
            self.heap.pop().map(|Reverse(e)| e.due)
        } else {
            None
        }
    }

    fn next(&self) -> Option<Duration> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }
}

/// Everything foca's runtime calls write to; bounded where it can overflow.
#[derive(Debug, Default)]
struct Io {
    timers: TimerHeap,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    out_cap: usize,
    /// A membership notification arrived: rebuild the view.
    dirty: bool,
    /// foca renewed our identity: re-announce our metadata under the new generation.
    rejoined: bool,
}

impl Io {
    fn enqueue(&mut self, stats: &GossipStats, to: SocketAddr, datagram: Vec<u8>) {
        if self.out.len() >= self.out_cap {
            inc(&stats.outbound_dropped);
            return;
        }
        inc(&stats.datagrams_out);
        add(&stats.bytes_out, datagram.len());
        self.out.push_back((to, datagram));
    }
}

/// foca's window on the world for one call: queues, never blocks.
struct CoreRuntime<'a> {
    io: &'a mut Io,
    auth: &'a Auth,
    stats: &'a GossipStats,
    now: Duration,
}

impl Runtime<NodeId> for CoreRuntime<'_> {
    fn notify(&mut self, notification: Notification<'_, NodeId>) {
        match notification {
            Notification::Rejoin(id) => {
                tracing::info!(%id, "gossip: declared down, rejoined with a new generation");
                self.io.rejoined = true;
                self.io.dirty = true;
            }
            Notification::Defunct => {
                tracing::debug!("gossip: this node is down for the cluster");
                self.io.dirty = true;
            }
            _ => self.io.dirty = true,
        }
    }

    fn send_to(&mut self, to: NodeId, data: &[u8]) {
        let datagram = self.auth.seal(Kind::Foca, data);
        self.io.enqueue(self.stats, to.gossip_addr(), datagram);
    }

    fn submit_after(&mut self, event: Timer<NodeId>, after: Duration) {
        self.io.timers.push(self.now + after, Due::Foca(event));
    }
}

type FocaInstance = Foca<NodeId, WireCodec, SmallRng, MetaHandler>;

/// The gossip state machine of one node (see module docs).
pub struct GossipCore {
    foca: FocaInstance,
    config: GossipConfig,
    auth: Auth,
    stats: Arc<GossipStats>,
    meta: Arc<Mutex<MetaTable>>,
    io: Io,
    seeds: Vec<SocketAddr>,
    state: NodeState,
    meta_version: u64,
    left: bool,
    /// Declares nobody down while set (`hold_declarations`), and since when.
    hold_declarations: bool,
    held_since: Option<Duration>,
    /// When an authentic foca datagram last came from each address (members' gossip
    /// addresses; pruned to the members).
    heard: HashMap<SocketAddr, Duration>,
    /// Since when foca suspects each member it suspects.
    suspected_at: HashMap<NodeId, Duration>,
    /// The time of the latest call that told it.
    now: Duration,
    membership: Membership,
    membership_changed: bool,
    meta_requested: HashMap<Arc<str>, Duration>,
}

impl std::fmt::Debug for GossipCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GossipCore")
            .field("identity", self.foca.identity())
            .field("members", &self.foca.num_members())
            .finish_non_exhaustive()
    }
}

fn lock(table: &Mutex<MetaTable>) -> std::sync::MutexGuard<'_, MetaTable> {
    // A poisoned lock only means a holder panicked; the table is plain data.
    table.lock().unwrap_or_else(|e| e.into_inner())
}

impl GossipCore {
    /// A node that knows no one yet. Call [`GossipCore::start`] next.
    pub fn new(
        config: GossipConfig,
        auth: Auth,
        identity: NodeId,
        state: NodeState,
        rng_seed: u64,
        stats: Arc<GossipStats>,
    ) -> Self {
        let meta = Arc::new(Mutex::new(MetaTable::default()));
        let foca = Foca::with_custom_broadcast(
            identity.clone(),
            config.foca_config(),
            SmallRng::seed_from_u64(rng_seed),
            WireCodec::new(identity.name_arc().clone()),
            MetaHandler {
                table: meta.clone(),
            },
        );
        let io = Io {
            out_cap: config.outbound_queue.max(1),
            ..Io::default()
        };
        Self {
            foca,
            config,
            auth,
            stats,
            meta,
            io,
            seeds: Vec::new(),
            state,
            meta_version: 0,
            left: false,
            hold_declarations: false,
            held_since: None,
            heard: HashMap::new(),
            suspected_at: HashMap::new(),
            now: Duration::ZERO,
            membership: Membership {
                version: 0,
                local: identity,
                members: Vec::new(),
            },
            membership_changed: false,
            meta_requested: HashMap::new(),
        }
    }

    /// Starts the periodic work (seed announces, metadata refresh and repair) and
    /// announces this node's metadata.
    pub fn start(&mut self, now: Duration) {
        self.now = self.now.max(now);
        self.io.timers.push(now, Due::SeedAnnounce);
        self.io.timers.push(
            now + self.config.metadata_refresh_interval,
            Due::MetaRefresh,
        );
        self.io
            .timers
            .push(now + self.config.metadata_repair_interval, Due::MetaRepair);
        self.publish_meta(true);
        self.after();
    }

    /// Replaces the seed addresses (the driver resolves host names periodically).
    pub fn set_seeds(&mut self, seeds: Vec<SocketAddr>) {
        self.seeds = seeds;
    }

    /// This node's current identity.
    pub fn identity(&self) -> &NodeId {
        self.foca.identity()
    }

    /// Other members foca considers active.
    pub fn num_active_members(&self) -> usize {
        self.foca.num_members()
    }

    /// The current membership view.
    pub fn membership(&self) -> &Membership {
        &self.membership
    }

    /// The view, if it changed since the last call.
    pub fn take_membership_change(&mut self) -> Option<Membership> {
        std::mem::take(&mut self.membership_changed).then(|| self.membership.clone())
    }

    /// When [`GossipCore::handle_timers`] must be called next.
    pub fn next_deadline(&self) -> Option<Duration> {
        self.io.timers.next()
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.io.out.pop_front()
    }

    /// While `hold` is set (for at most `MAX_HOLD`), foca's suspicions of others do not
    /// turn into declarations that they are down: each such timer is put off by
    /// `HOLD_RETRY` (see `GossipHandle::hold_declarations_while`). `now` is the caller's
    /// clock, as for the other calls.
    pub fn hold_declarations(&mut self, hold: bool, now: Duration) {
        self.hold_declarations = hold;
        if !hold {
            self.held_since = None;
        } else if self.held_since.is_none() {
            self.held_since = Some(now);
        }
    }

    /// What to do with foca's timer to declare a suspected member down (see
    /// [`suspicion_timer`]).
    fn on_suspicion_timeout(
        &self,
        member: &NodeId,
        incarnation: u16,
        now: Duration,
    ) -> SuspicionTimer {
        let still = self.foca.iter_membership_state().any(|m| {
            m.id() == member && m.state() == State::Suspect && m.incarnation() == incarnation
        });
        let holding = self.hold_declarations
            && self
                .held_since
                .is_some_and(|since| now.saturating_sub(since) < MAX_HOLD);
        suspicion_timer(still, self.heard_since_suspected(member), holding)
    }

    /// True if an authentic datagram came from `member` after this node began to suspect
    /// it: it is alive, and the suspicion stands only because it never learnt of it.
    fn heard_since_suspected(&self, member: &NodeId) -> bool {
        match (
            self.heard.get(&member.gossip_addr()),
            self.suspected_at.get(member),
        ) {
            (Some(heard), Some(since)) => heard > since,
            _ => false,
        }
    }

    /// What the membership shows of a suspicion: foca's, unless the member was heard from
    /// since (foca drops its timers when this node rejoins, and a suspicion its member
    /// never learnt of would stand until a probe of it fails).
    fn shows_suspect(&self, m: &foca::Member<NodeId>) -> bool {
        m.state() == State::Suspect && !self.heard_since_suspected(m.id())
    }

    /// Notes since when each suspected member is suspected.
    fn track_suspicions(&mut self) {
        let now = self.now;
        let suspects: HashSet<&NodeId> = self
            .foca
            .iter_membership_state()
            .filter(|m| m.state() == State::Suspect)
            .map(|m| m.id())
            .collect();
        if suspects.is_empty() && self.suspected_at.is_empty() {
            return;
        }
        self.suspected_at.retain(|id, _| suspects.contains(id));
        for id in suspects {
            self.suspected_at.entry(id.clone()).or_insert(now);
        }
    }

    /// Announces a new serving state to the cluster.
    pub fn set_state(&mut self, state: NodeState) {
        self.state = state;
        self.publish_meta(true);
        self.after();
    }

    /// Leaves the cluster: foca declares this identity down and gossips it. Keep calling
    /// [`GossipCore::regossip`] and flushing for a short drain so the news survives loss.
    pub fn leave(&mut self, now: Duration) {
        self.now = self.now.max(now);
        if self.left {
            return;
        }
        self.left = true;
        let mut rt = CoreRuntime {
            io: &mut self.io,
            auth: &self.auth,
            stats: &self.stats,
            now,
        };
        if let Err(e) = self.foca.leave_cluster(&mut rt) {
            tracing::warn!(error = %e, "gossip: leave_cluster failed");
        }
        self.io.dirty = true;
        self.after();
    }

    /// Gossips pending updates to a few random members now.
    pub fn regossip(&mut self, now: Duration) {
        self.now = self.now.max(now);
        let mut rt = CoreRuntime {
            io: &mut self.io,
            auth: &self.auth,
            stats: &self.stats,
            now,
        };
        if let Err(e) = self.foca.gossip(&mut rt) {
            tracing::debug!(error = %e, "gossip: regossip failed");
        }
        self.after();
    }

    /// Handles one received datagram. Anything failing the envelope check is dropped here
    /// and counted; foca only ever sees authentic payloads.
    pub fn handle_datagram(&mut self, now: Duration, from: SocketAddr, datagram: &[u8]) {
        self.now = self.now.max(now);
        inc(&self.stats.datagrams_in);
        add(&self.stats.bytes_in, datagram.len());
        let (kind, payload) = match self.auth.open(datagram) {
            Ok(v) => v,
            Err(e) => {
                let s = &self.stats;
                inc(match e {
                    EnvelopeError::TooShort => &s.dropped_too_short,
                    EnvelopeError::TooLong => &s.dropped_too_long,
                    EnvelopeError::BadMagic => &s.dropped_bad_magic,
                    EnvelopeError::UnsupportedVersion(_) => &s.dropped_bad_version,
                    EnvelopeError::BadKind(_) => &s.dropped_bad_kind,
                    EnvelopeError::WrongCluster => &s.dropped_wrong_cluster,
                    EnvelopeError::BadMac => &s.dropped_bad_mac,
                });
                tracing::trace!(%from, error = %e, "gossip: dropped datagram");
                return;
            }
        };
        match kind {
            Kind::Foca => {
                self.heard.insert(from, now);
                if self.heard.len() > 2 * self.membership.members.len() + 16 {
                    let members: HashSet<SocketAddr> = self
                        .membership
                        .members
                        .iter()
                        .map(|m| m.id.gossip_addr())
                        .collect();
                    self.heard.retain(|a, _| members.contains(a));
                }
                let mut rt = CoreRuntime {
                    io: &mut self.io,
                    auth: &self.auth,
                    stats: &self.stats,
                    now,
                };
                if let Err(e) = self.foca.handle_data(payload, &mut rt) {
                    inc(&self.stats.rejected_payloads);
                    tracing::trace!(%from, error = %e, "gossip: foca rejected a payload");
                }
            }
            Kind::MetaRequest => {
                if !self.left {
                    let reply = self.auth.seal(Kind::MetaReply, &self.own_meta().encode());
                    self.io.enqueue(&self.stats, from, reply);
                }
            }
            Kind::MetaReply => match MetaItem::decode(payload) {
                Ok(item) => {
                    lock(&self.meta).apply(item);
                }
                Err(_) => inc(&self.stats.rejected_payloads),
            },
        }
        self.after();
    }

    /// Fires every timer due at `now`, in order.
    pub fn handle_timers(&mut self, now: Duration) {
        self.now = self.now.max(now);
        while let Some(due) = self.io.timers.pop_due(now) {
            let decided = match &due {
                Due::Foca(Timer::ChangeSuspectToDown {
                    member_id,
                    incarnation,
                    ..
                }) => Some((
                    self.on_suspicion_timeout(member_id, *incarnation, now),
                    member_id.clone(),
                    *incarnation,
                )),
                _ => None,
            };
            match (decided, due) {
                (Some((SuspicionTimer::Vouch, id, incarnation)), _) => {
                    inc(&self.stats.suspicions_vouched);
                    let mut rt = CoreRuntime {
                        io: &mut self.io,
                        auth: &self.auth,
                        stats: &self.stats,
                        now,
                    };
                    let alive = Member::new(id, incarnation.saturating_add(1), State::Alive);
                    if let Err(e) = self.foca.apply_many(std::iter::once(alive), false, &mut rt) {
                        tracing::debug!(error = %e, "gossip: could not clear a suspicion");
                    }
                }
                (Some((SuspicionTimer::Hold, ..)), due) => {
                    inc(&self.stats.declarations_held);
                    self.io.timers.push(now + HOLD_RETRY, due);
                }
                (_, Due::Foca(timer)) => {
                    let mut rt = CoreRuntime {
                        io: &mut self.io,
                        auth: &self.auth,
                        stats: &self.stats,
                        now,
                    };
                    if let Err(e) = self.foca.handle_timer(timer, &mut rt) {
                        tracing::debug!(error = %e, "gossip: foca timer failed");
                    }
                }
                (_, Due::SeedAnnounce) => {
                    self.announce_to_seeds(now);
                    self.io
                        .timers
                        .push(now + self.config.seed_announce_interval, Due::SeedAnnounce);
                }
                (_, Due::MetaRefresh) => {
                    if !self.left {
                        self.publish_meta(false);
                    }
                    self.io.timers.push(
                        now + self.config.metadata_refresh_interval,
                        Due::MetaRefresh,
                    );
                }
                (_, Due::MetaRepair) => {
                    self.repair_meta(now);
                    self.io
                        .timers
                        .push(now + self.config.metadata_repair_interval, Due::MetaRepair);
                }
            }
        }
        self.after();
    }

    /// foca never retries a lost Announce and never leaves the zero-member state by
    /// itself: while alone, announce to every seed on each tick.
    fn announce_to_seeds(&mut self, now: Duration) {
        if self.left || self.foca.num_members() > 0 {
            return;
        }
        let own = self.foca.identity().gossip_addr();
        for &seed in &self.seeds {
            if seed == own {
                continue;
            }
            let mut rt = CoreRuntime {
                io: &mut self.io,
                auth: &self.auth,
                stats: &self.stats,
                now,
            };
            if let Err(e) = self.foca.announce(NodeId::seed_placeholder(seed), &mut rt) {
                tracing::debug!(%seed, error = %e, "gossip: announce failed");
            }
        }
    }

    /// Asks members whose metadata for their current generation is missing.
    fn repair_meta(&mut self, now: Duration) {
        const MAX_REQUESTS_PER_TICK: usize = 32;
        if self.left {
            return;
        }
        let missing: Vec<NodeId> = {
            let table = lock(&self.meta);
            self.foca
                .iter_members()
                .map(|m| m.id())
                .filter(|id| {
                    table
                        .get(id.name())
                        .is_none_or(|meta| meta.generation < id.generation())
                })
                .filter(|id| {
                    self.meta_requested.get(id.name_arc()).is_none_or(|&at| {
                        now.saturating_sub(at) >= self.config.metadata_repair_interval
                    })
                })
                .take(MAX_REQUESTS_PER_TICK)
                .cloned()
                .collect()
        };
        for id in missing {
            self.meta_requested.insert(id.name_arc().clone(), now);
            let request = self.auth.seal(Kind::MetaRequest, &[]);
            inc(&self.stats.meta_requests);
            self.io.enqueue(&self.stats, id.gossip_addr(), request);
        }
    }

    fn own_meta(&self) -> MetaItem {
        let id = self.foca.identity();
        MetaItem {
            name: id.name_arc().clone(),
            generation: id.generation(),
            version: self.meta_version,
            state: self.state,
        }
    }

    /// Hands our metadata item to foca for dissemination. A change (`bump`) gets a new
    /// version, which every member forwards; a refresh re-sends the same version, which
    /// only members that missed it take and forward, so refreshes cost next to nothing.
    fn publish_meta(&mut self, bump: bool) {
        if bump {
            self.meta_version += 1;
        }
        let item = self.own_meta().encode();
        if let Err(e) = self.foca.add_broadcast(&item) {
            tracing::warn!(error = %e, "gossip: could not queue the metadata broadcast");
        }
    }

    /// Bookkeeping after every interaction: follow a rejoin, rebuild the view on change.
    fn after(&mut self) {
        if std::mem::take(&mut self.io.rejoined) {
            self.publish_meta(true);
        }
        let meta_changed = std::mem::take(&mut lock(&self.meta).changed);
        self.track_suspicions();
        if std::mem::take(&mut self.io.dirty)
            || meta_changed
            || self.membership.version == 0
            || self.suspicion_changed()
        {
            self.rebuild();
        }
    }

    /// True if foca suspects a member the view does not show suspected, or the other way
    /// round (foca tells no news of suspicions).
    fn suspicion_changed(&self) -> bool {
        // The usual case: nobody suspected, now or in the view.
        if self.suspected_at.is_empty() && !self.membership.members.iter().any(|m| m.suspect) {
            return false;
        }
        self.foca.iter_membership_state().any(|m| {
            self.membership
                .get(m.id().name())
                .is_some_and(|mi| mi.id == *m.id() && mi.suspect != self.shows_suspect(m))
        })
    }

    fn rebuild(&mut self) {
        let local = self.foca.identity().clone();
        let table = lock(&self.meta);
        let state_of = |id: &NodeId| {
            table
                .get(id.name())
                .filter(|m| m.generation == id.generation())
                .map(|m| m.state)
        };
        let mut members: Vec<MemberInfo> = self
            .foca
            .iter_membership_state()
            // foca may track an old identity of ours (declared down); we list ourselves once.
            .filter(|m| m.id().name() != local.name())
            .map(|m| MemberInfo {
                id: m.id().clone(),
                liveness: if m.state() == State::Down {
                    Liveness::Down
                } else {
                    Liveness::Up
                },
                suspect: self.shows_suspect(m),
                state: state_of(m.id()),
            })
            .collect();
        members.push(MemberInfo {
            suspect: false,
            state: state_of(&local),
            id: local.clone(),
            liveness: if self.left {
                Liveness::Down
            } else {
                Liveness::Up
            },
        });
        drop(table);
        members.sort_by(|a, b| a.id.name().cmp(b.id.name()));
        if members != self.membership.members || local != self.membership.local {
            self.membership = Membership {
                version: self.membership.version + 1,
                local,
                members,
            };
            self.membership_changed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_off_node_holds_and_a_member_heard_from_is_vouched_for() {
        use SuspicionTimer::*;
        // Refuted or gone: foca's own rule.
        for (heard, holding) in [(false, false), (true, false), (false, true), (true, true)] {
            assert_eq!(suspicion_timer(false, heard, holding), Declare);
        }
        assert_eq!(suspicion_timer(true, false, false), Declare);
        assert_eq!(suspicion_timer(true, false, true), Hold);
        assert_eq!(suspicion_timer(true, true, false), Vouch);
        assert_eq!(suspicion_timer(true, true, true), Vouch);
    }

    #[test]
    fn timer_heap_fires_in_time_then_submission_order() {
        let mut h = TimerHeap::default();
        let s = Duration::from_secs;
        h.push(s(2), Due::MetaRefresh);
        h.push(s(1), Due::SeedAnnounce);
        h.push(s(1), Due::MetaRepair);
        assert_eq!(h.next(), Some(s(1)));
        assert!(matches!(h.pop_due(s(1)), Some(Due::SeedAnnounce)));
        assert!(matches!(h.pop_due(s(1)), Some(Due::MetaRepair)));
        assert!(h.pop_due(s(1)).is_none());
        assert!(matches!(h.pop_due(s(5)), Some(Due::MetaRefresh)));
    }

    fn core(name: &str, port: u16) -> GossipCore {
        let a: SocketAddr = format!("10.0.0.1:{port}").parse().unwrap();
        let id = NodeId::new(name, a, a, a, 1).unwrap();
        let auth = Auth::new("c", b"k").unwrap();
        GossipCore::new(
            GossipConfig::default(),
            auth,
            id,
            NodeState::Serving,
            7,
            Arc::default(),
        )
    }

    /// Sans-IO: two cores, bytes passed by hand.
    #[test]
    fn two_cores_meet_through_a_seed() {
        let mut a = core("a", 1);
        let mut b = core("b", 2);
        b.set_seeds(vec![a.identity().gossip_addr()]);
        a.start(Duration::ZERO);
        b.start(Duration::ZERO);
        assert_eq!(a.membership().members.len(), 1);
        b.handle_timers(Duration::ZERO);
        let mut now = Duration::ZERO;
        for _ in 0..50 {
            now += Duration::from_millis(100);
            a.handle_timers(now);
            b.handle_timers(now);
            loop {
                let mut moved = false;
                while let Some((to, d)) = a.poll_transmit() {
                    assert_eq!(to, b.identity().gossip_addr());
                    b.handle_datagram(now, a.identity().gossip_addr(), &d);
                    moved = true;
                }
                while let Some((to, d)) = b.poll_transmit() {
                    assert_eq!(to, a.identity().gossip_addr());
                    a.handle_datagram(now, b.identity().gossip_addr(), &d);
                    moved = true;
                }
                if !moved {
                    break;
                }
            }
        }
        for c in [&a, &b] {
            let m = c.membership();
            assert_eq!(m.up().count(), 2, "{m:?}");
            assert!(m
                .members
                .iter()
                .all(|x| x.state == Some(NodeState::Serving)));
        }
        let v = a.membership().version;
        b.set_state(NodeState::Leaving);
        now += Duration::from_millis(300);
        b.handle_timers(now);
        while let Some((_, d)) = b.poll_transmit() {
            a.handle_datagram(now, b.identity().gossip_addr(), &d);
        }
        assert_eq!(
            a.membership().get("b").unwrap().state,
            Some(NodeState::Leaving)
        );
        assert!(a.membership().version > v);
    }
}
