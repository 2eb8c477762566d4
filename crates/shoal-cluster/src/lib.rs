//! Shoal's cluster layer: where a command runs and how keys move between nodes. It sits on
//! the engine (`shoal-engine`) and the cluster's leaf crates (`shoal-ring`, `shoal-wire`,
//! `shoal-gossip`); the front ends (`shoal-node`) call it.
//!
//! - [`Server`]: one node: the engine, its cluster (if any), its shutdown signal; it
//!   implements the engine's `Host` hooks.
//! - `plan`: the routing decision, a pure function of the command's row and the placement.
//! - [`View`]: one immutable snapshot of the membership: the placement (`shoal-ring`), each
//!   member's addresses, and a [`PeerClient`] (`shoal-wire`) plus a replication queue per
//!   other member. Requests load it once (lock-free, `ArcSwap`) and use that one snapshot.
//! - `router`: what the client's connection calls for every command (`dispatch`): run it
//!   here (`router::local`), forward it to the key's owner (`router::outbound`: where a
//!   request crosses to another node), split it by owner (MGET, MSET, DEL, ...), or fan it
//!   out (`fanout`: DBSIZE, KEYS, SCAN, ...).
//! - `message`: the bodies inside `shoal-wire` frames: a forwarded command, a batch of
//!   replicated key states.
//! - `peer`: the receiving side: runs forwarded commands on the local store and applies
//!   replicated states (last writer wins on versions, see `shoal-store`).
//! - `replicate`: after a write at the owner, the key's resulting state goes to the other
//!   copies, batched per peer through a bounded queue.
//! - `membership`: gossip mode: turns each `shoal-gossip` membership into a new `View`.
//! - `handoff`: gossip mode: moves keys when the copies of a slot change (`plan`, `stream`,
//!   `report`, fetch on a miss until the cluster settled in `fetch`, `settle`).
//! - `reach`: gossip mode: probes the other members over the links and refuses the gossip
//!   of those the links have not reached for a while, so that the cluster does without them.
//! - `describe`: CLUSTER INFO / NODES and INFO's cluster section.
//! - `monitor`: MONITOR's lines and their bounded broadcast to the monitoring connections.
//! - `events`, `invalidations`: what the owner of keys tells the other members: keyspace
//!   notifications, and CLIENT TRACKING's invalidations for their clients' reads.
//!
//! With a static `cluster-nodes` list the `View` never changes; in gossip mode every change
//! of the members installs a new one (a new epoch) without touching the router.

pub mod copies;
mod describe;
pub mod events;
pub mod fence;
pub mod handoff;
pub mod invalidations;
pub mod membership;
pub mod message;
pub mod monitor;
pub mod peer;
pub mod plan;
pub mod reach;
pub mod relay;
mod replicate;
pub mod router;
mod server;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use shoal_ring::{Member, Placement};
use shoal_wire::{AuthConfig, PeerClient, PeerConfig};
use tokio::sync::watch;

use shoal_engine::config::{NodeConfig, WriteAck};

pub use message::Scope;
pub use replicate::ReplItem;
pub use server::Server;

/// Requests in flight to one peer, per link (one link per worker thread); more wait for a
/// place, in order (`PEER_MAX_QUEUED`). 32 connections' full windows of forwarded replies
/// (`shoal_node`'s `MAX_PENDING`, 512) fit in it. A peer's server refuses requests past
/// its own bound, this same figure (earlier releases: 4,096; see the README on rolling
/// upgrades).
pub const PEER_MAX_IN_FLIGHT: usize = 16384;

/// Requests waiting for a place on one link, beyond `PEER_MAX_IN_FLIGHT`; one more fails
/// with "too many requests in flight". 256 more full client windows: the wait is bounded by
/// the request timeout anyway (a request that times out queued fails unsent).
pub const PEER_MAX_QUEUED: usize = 8 * PEER_MAX_IN_FLIGHT;

/// One member as the cluster commands show it.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub name: String,
    /// 40 hex characters derived from the name (stable across restarts), as CLUSTER MYID.
    pub id: String,
    pub client: SocketAddr,
    pub cluster: SocketAddr,
    /// Where Redis Cluster clients reach the node (`cluster-client-port`), if it serves them.
    pub cluster_client: Option<SocketAddr>,
    /// Bumped by every restart (gossip mode; 0 with a static list). A copy held by an older
    /// generation of a node is gone.
    pub generation: u64,
}

impl NodeInfo {
    pub fn new(name: &str, client: SocketAddr, cluster: SocketAddr, generation: u64) -> NodeInfo {
        NodeInfo {
            name: name.to_owned(),
            id: node_id(name),
            client,
            cluster,
            cluster_client: None,
            generation,
        }
    }

    /// The same node, serving Redis Cluster clients at `addr`.
    pub fn with_cluster_client(self, addr: Option<SocketAddr>) -> NodeInfo {
        NodeInfo {
            cluster_client: addr,
            ..self
        }
    }

    /// The address the Redis Cluster commands (CLUSTER SLOTS, SHARDS, NODES) and MOVED give
    /// for this node: its cluster-client port, else its plain client port.
    pub fn redis_addr(&self) -> SocketAddr {
        self.cluster_client.unwrap_or(self.client)
    }

    /// True if `other` is this very incarnation of the node.
    pub fn same_incarnation(&self, other: &NodeInfo) -> bool {
        self.name == other.name && self.generation == other.generation
    }
}

/// A member's state as the cluster commands show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberState {
    /// In the placement, still filling from the other copies.
    Joining,
    Serving,
    /// Out of the placement, handing its slots to the others before it leaves.
    Leaving,
    /// Declared down by gossip.
    Down,
}

impl MemberState {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberState::Joining => "joining",
            MemberState::Serving => "serving",
            MemberState::Leaving => "leaving",
            MemberState::Down => "down",
        }
    }

    /// True if the member takes part in the placement.
    pub fn placed(self) -> bool {
        matches!(self, MemberState::Joining | MemberState::Serving)
    }
}

/// One known member, for the cluster commands and for building a `View`.
#[derive(Clone, Debug)]
pub struct MemberRow {
    pub info: NodeInfo,
    pub state: MemberState,
    /// Gossip suspects it (a probe went unanswered): placement ignores this, but a node
    /// counts it as out of reach when it asks whether it is cut off (`handoff::cut_off`).
    pub suspect: bool,
}

/// `View::me` of a node that is not in the placement (it is leaving).
pub const NOT_MEMBER: u16 = u16::MAX;

/// The link to one other member.
pub struct Peer {
    /// Its direct link (what `reach` probes).
    pub client: PeerClient,
    /// How requests reach it: on `client`, or through a relay while that link is cut.
    pub route: Arc<relay::Route>,
    repl: replicate::Queue,
    /// False since a request to it found it unreachable, until one succeeds again (what
    /// CLUSTER NODES and CLUSTER INFO show; routing does not wait for it).
    pub reachable: AtomicBool,
    /// Commands forwarded to it, by outcome.
    pub forwards: ForwardOutcomes,
    /// Whether it takes BATCH requests ([`batching`]): a node of an
    /// earlier release does not, and gets one request per command.
    pub batches: std::sync::atomic::AtomicU8,
    /// Unix ms before which it is not asked again whether it takes batches.
    pub probe_after_ms: AtomicU64,
}

/// Whether a member takes BATCH requests ([`Peer::batches`]; `router::outbound::Batches`).
pub mod batching {
    /// Not known yet: no probe answered.
    pub const UNKNOWN: u8 = 0;
    /// A probe is on its way.
    pub const PROBING: u8 = 1;
    pub const YES: u8 = 2;
    /// It answered as a node of an earlier release.
    pub const NO: u8 = 3;
}

/// Commands forwarded to one peer, by outcome (the metrics' `shoal_forward_outcomes`).
#[derive(Debug, Default)]
pub struct ForwardOutcomes {
    /// It answered (a reply, an error reply included).
    pub answered: AtomicU64,
    /// It answered that the next copy should run it (starting, leaving, expired).
    pub next_copy: AtomicU64,
    /// It could not be reached in time: the command went to the next copy, if any.
    pub unreachable: AtomicU64,
    /// The request failed otherwise (refused handshake, overload, a bad frame).
    pub failed: AtomicU64,
}

impl ForwardOutcomes {
    /// (outcome, count) for each outcome.
    pub fn counts(&self) -> [(&'static str, u64); 4] {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        [
            ("answered", get(&self.answered)),
            ("next_copy", get(&self.next_copy)),
            ("unreachable", get(&self.unreachable)),
            ("failed", get(&self.failed)),
        ]
    }
}

impl Peer {
    /// Sends a request body to this peer and waits for its response: on its link, or
    /// through a relay while that link is cut (`relay`).
    pub async fn request(
        &self,
        epoch: u64,
        body: bytes::Bytes,
    ) -> Result<shoal_wire::Response, shoal_wire::WireError> {
        self.route.request(epoch, body).await
    }

    /// [`Peer::request`], waiting `extra` longer for the answer (a command whose effect at
    /// the peer is much larger than the request: `shoal_engine::cmd::effect_len`).
    pub async fn request_allowing(
        &self,
        epoch: u64,
        body: bytes::Bytes,
        extra: std::time::Duration,
    ) -> Result<shoal_wire::Response, shoal_wire::WireError> {
        self.route.request_allowing(epoch, body, extra).await
    }

    /// Bytes waiting in the replication queue to this peer.
    pub fn repl_queued_bytes(&self) -> usize {
        self.repl.queued_bytes()
    }
}

/// One snapshot of the membership. Indices are the placement's member indices.
pub struct View {
    pub placement: Placement,
    pub nodes: Vec<NodeInfo>,
    /// This node's index, or [`NOT_MEMBER`] while it is leaving.
    pub me: u16,
    /// `None` at `me`.
    peers: Vec<Option<Arc<Peer>>>,
    /// A fingerprint of the placement members (names and generations): equal on two nodes
    /// that place keys alike. It travels in every inter-node frame.
    pub id: u64,
    /// This node.
    pub myself: NodeInfo,
    /// Every known member, this node included, by name.
    pub members: Vec<MemberRow>,
    /// Live members outside the placement (leaving), with their links.
    leaving: Vec<(NodeInfo, Arc<Peer>)>,
}

impl View {
    /// True if this node is in the placement.
    pub fn is_member(&self) -> bool {
        self.me != NOT_MEMBER
    }

    /// True when no replication queue to a live peer holds anything.
    pub fn replication_idle(&self) -> bool {
        self.live_peers().all(|(_, p)| p.repl.is_empty())
    }

    /// Resolves once the copies of `slots` (in this view) answered for each state queued for
    /// them so far: the ones a command on those slots goes to next.
    pub fn replication_drained(
        &self,
        slots: &[u16],
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut peers: Vec<&Peer> = Vec::new();
        for &slot in slots {
            for p in self.owners(slot).iter().filter_map(|&m| self.peer(m)) {
                if !peers.iter().any(|q| std::ptr::eq(*q, p)) {
                    peers.push(p);
                }
            }
        }
        let all = futures_util::future::join_all(peers.iter().map(|p| p.repl.drained()));
        async move {
            all.await;
        }
    }

    /// The other live members (placed or leaving) with their links.
    pub fn live_peers(&self) -> impl Iterator<Item = (&NodeInfo, &Arc<Peer>)> {
        self.nodes
            .iter()
            .zip(&self.peers)
            .filter_map(|(n, p)| p.as_ref().map(|p| (n, p)))
            .chain(self.leaving.iter().map(|(n, p)| (n, p)))
    }

    /// True if `node` (this incarnation) is alive in this view: placed, leaving, or me.
    pub fn is_alive(&self, node: &NodeInfo) -> bool {
        self.myself.same_incarnation(node)
            || self.live_peers().any(|(n, _)| n.same_incarnation(node))
    }

    /// The link to the live peer named `name` at cluster address `addr`, if any.
    pub fn link_at(&self, name: &str, addr: std::net::SocketAddr) -> Option<&Arc<Peer>> {
        self.live_peers()
            .find(|(n, _)| n.name == name && n.cluster == addr)
            .map(|(_, p)| p)
    }

    /// The link to `node` (this incarnation), if it is a live peer.
    pub fn link_to(&self, node: &NodeInfo) -> Option<&Arc<Peer>> {
        self.live_peers()
            .find(|(n, _)| n.same_incarnation(node))
            .map(|(_, p)| p)
    }
    pub fn epoch(&self) -> u64 {
        self.placement.epoch()
    }

    /// Owner first, then the replicas, of `slot`.
    pub fn owners(&self, slot: u16) -> &[u16] {
        self.placement.owners(slot)
    }

    /// The copy of `slot` that Redis Cluster clients are sent to (CLUSTER SLOTS's master,
    /// MOVED's target): the owner, or the first reachable copy while the owner cannot be
    /// reached (the one forwarded requests fail over to).
    pub fn primary(&self, slot: u16) -> u16 {
        let owners = self.owners(slot);
        owners
            .iter()
            .copied()
            .find(|&m| self.reachable(m))
            .unwrap_or(owners[0])
    }

    /// The member that owns `key`'s slot.
    pub fn owner_of(&self, key: &[u8]) -> u16 {
        self.owners(shoal_store::key_slot(key))[0]
    }

    pub fn peer(&self, member: u16) -> Option<&Peer> {
        self.peers
            .get(usize::from(member))
            .and_then(Option::as_ref)
            .map(|p| &**p)
    }

    /// [`View::peer`], shared.
    pub fn peer_shared(&self, member: u16) -> Option<&Arc<Peer>> {
        self.peers.get(usize::from(member)).and_then(Option::as_ref)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True unless the last request to `member` found it unreachable (always true for me).
    pub fn reachable(&self, member: u16) -> bool {
        self.peer(member)
            .is_none_or(|p| p.reachable.load(Ordering::Relaxed))
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Counters behind INFO's cluster section.
#[derive(Default)]
pub struct ClusterStats {
    /// Inter-node connections other members made to this node, open now (with the ones
    /// this node made, INFO's `cluster_connections`).
    pub inbound_links: AtomicU64,
    /// Commands (or parts of split commands) sent to another node.
    pub forwarded: AtomicU64,
    /// BATCH requests sent (commands of one client's pipeline for one node, together; a
    /// member's probe too) and the commands they carried (also counted in `forwarded`, but
    /// for the probes' PINGs).
    pub batches_sent: AtomicU64,
    pub batched: AtomicU64,
    /// CONTINUE requests sent: a batch whose answer came in pieces (`message`).
    pub batch_continued: AtomicU64,
    /// BATCH requests served for other nodes (their commands count in `served`).
    pub batches_served: AtomicU64,
    /// Requests to a copy that failed (unreachable, timeout) and went to the next copy.
    pub failovers: AtomicU64,
    /// Requests that reached no copy at all.
    pub unreachable: AtomicU64,
    /// Forwarded commands sent back to their sender (`handoff::OTHER_VIEW`): this node is
    /// not the key's owner in its view, which differs from the sender's (or an earlier
    /// command of the link on the same slot was sent back).
    pub other_view_sent_back: AtomicU64,
    /// Commands sent again after a copy sent them back for another view.
    pub other_view_resent: AtomicU64,
    /// Requests this node sent through a relay, its link to their target being cut
    /// (`relay`).
    pub relayed: AtomicU64,
    /// Requests this node passed on for another member as a relay.
    pub relays_served: AtomicU64,
    /// Writes answered with an error rather than sent to the next copy: their copy did not
    /// answer and may be alive, or may have run them (`router::on_failure`).
    pub writes_not_failed_over: AtomicU64,
    /// Key states queued for replicas.
    pub repl_queued: AtomicU64,
    /// Key states dropped: the queue to the peer was full or the peer could not be reached.
    pub repl_dropped: AtomicU64,
    /// Key states received from other nodes and applied (newer than the local copy).
    pub repl_applied: AtomicU64,
    /// Key states received but older than the local copy (or a tombstone): ignored.
    pub repl_stale: AtomicU64,
    /// Writes of collections sent to replicas as their command (a delta), not their state.
    pub repl_deltas: AtomicU64,
    /// Deltas received and run on the version they were made on.
    pub repl_deltas_applied: AtomicU64,
    /// Deltas received for another version than the one held here: the key's state was
    /// fetched from the sender instead.
    pub repl_deltas_refetched: AtomicU64,
    /// Key states received for slots this node, settled, holds no copy of (the sender
    /// routes by another view): ignored, so a late message cannot bring back a slot this
    /// node forgot. Counted in `repl_stale` too.
    pub repl_foreign: AtomicU64,
    /// Replicated keys this node, leaving, passed on to their copies in its own view (the
    /// sender had not heard of the leave).
    pub repl_passed_on: AtomicU64,
    /// Keys of split commands (MGET, MSET, ...) and multi-key memcached gets sent again one
    /// by one: their part's copy sent it back for another view and they no longer share
    /// their copies.
    pub split_resent: AtomicU64,
    /// Forwarded commands this node ran for other nodes.
    pub served: AtomicU64,
    /// Inter-node requests whose sender had another view of the membership.
    pub other_view: AtomicU64,
    /// Requests on the cluster-client port answered MOVED (the client's slot map is old).
    pub moved: AtomicU64,
    /// Requests on the cluster-client port.
    pub cluster_port_requests: AtomicU64,
    /// Requests on the cluster-client port for slots another node serves (answered MOVED, or
    /// forwarded while the views settle): what a leaving node waits to stop.
    pub unowned: AtomicU64,
    /// Forwarded commands that arrived after their sender's deadline, not run.
    pub expired: AtomicU64,
    /// Published messages that did not reach some member (out of reach, or its link over
    /// its window of requests): Pub/Sub is fire and forget, but counted.
    pub pubsub_undelivered: AtomicU64,
    /// The most any sender's clock was seen ahead of this node's (ms), from the deadlines
    /// of forwarded commands (see `peer::sender_lead_ms`).
    pub peer_clock_lead_ms: AtomicU64,
    /// Keyed commands a leaving node sent on to the next copy (their sender had not heard
    /// of the leave yet).
    pub sent_on_leaving: AtomicU64,
    /// What blocked commands forwarded from here popped for clients that had gone away by
    /// the time the reply came, put back (`router::blocked`).
    pub put_back: AtomicU64,
    /// Such put-backs that failed (the key became another type, no memory under
    /// `noeviction`, the cluster changing): those elements are lost, and logged.
    pub put_back_failed: AtomicU64,
    /// Members whose gossip this node refuses now, as its links have not reached them for
    /// a while (see `reach`).
    pub peers_refused: AtomicU64,
}

/// How the members are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The `cluster-nodes` list: fixed for the life of the process.
    Static,
    /// SWIM gossip (`shoal-gossip`): members come and go, keys move with them.
    Gossip,
}

/// The cluster side of a node.
pub struct Cluster {
    view: ArcSwap<View>,
    pub name: String,
    pub mode: Mode,
    pub write_ack: WriteAck,
    pub stats: Arc<ClusterStats>,
    pub auth: AuthConfig,
    /// The pseudo-client that runs requests from other nodes.
    pub internal: Arc<shoal_engine::client::ClientInfo>,
    /// Hand-off and settling (gossip mode; always settled with a static list).
    pub handoff: handoff::Handoff,
    /// The gossip task (gossip mode, once started).
    pub gossip: std::sync::OnceLock<shoal_gossip::GossipHandle>,
    replicas: usize,
    peer_config: PeerConfig,
    /// The current view's id, which the replication queues put in their frames.
    view_id: Arc<AtomicU64>,
    /// Links by (name, inter-node address), reused from view to view.
    pool: Mutex<HashMap<(String, SocketAddr), Arc<Peer>>>,
    /// Serialises `install`.
    installing: Mutex<()>,
    /// Tells the hand-off task that a view with another id was installed.
    changes: watch::Sender<u64>,
    /// False while a starting gossip node looks for the cluster (keyed commands answer
    /// TRYAGAIN).
    pub accepting: AtomicBool,
    /// This node's inter-node timeouts (`cluster-timeout-ms`), per node so that two nodes in
    /// one process keep their own.
    pub timeouts: Timeouts,
    /// Why a starting gossip node has not joined yet (shown in INFO and logged); `None` once
    /// it joined, or before the first diagnosis.
    pub join_problem: Mutex<Option<String>>,
    /// Which members have this node's BCAST tracking prefixes (`invalidations`).
    pub bcast: invalidations::Registered,
    /// The latest gossip membership (gossip mode).
    membership: Mutex<Option<shoal_gossip::Membership>>,
    /// This node's own state (gossip mode).
    local_state: Mutex<MemberState>,
    /// Permits for clients whose blocked wait is forwarded to another node, so that
    /// thousands of them cannot fill the links' request windows (`router::blocked`).
    pub blocked_forwards: tokio::sync::Semaphore,
}

/// Clients of one node whose blocked waits may be forwarded at once; more wait their turn.
pub const BLOCKED_FORWARDS: usize = 1024;

/// How long this node waits on others, from `cluster-timeout-ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// A request to another node: past it the next copy is tried, and the COMMAND it sent
    /// carries this deadline so the receiver does not run it late.
    pub request: Duration,
    /// The replicas' acks with `write-ack = all`, and a fetch during hand-off: half the
    /// request timeout, so the forwarded command that waited still answers in time.
    pub half: Duration,
}

impl Timeouts {
    pub fn new(cluster_timeout_ms: u64) -> Timeouts {
        Timeouts {
            request: Duration::from_millis(cluster_timeout_ms),
            half: Duration::from_millis((cluster_timeout_ms / 2).max(1)),
        }
    }
}

impl Cluster {
    /// Whether this node takes commands on keys now.
    /// Where a command on `args` runs under `view` ([`plan::plan`], with this node's
    /// standing for that view: [`Cluster::standing_in`]).
    pub fn plan_in(
        &self,
        view: &View,
        spec: &'static shoal_engine::cmd::CommandSpec,
        args: &[bytes::Bytes],
    ) -> plan::Plan {
        plan::plan(&view.placement, view.me, self.standing_in(view), spec, args)
    }

    /// [`Cluster::standing`] for a command routed by `view`: cut off when the view is one
    /// from before this node rejoined after a pause ([`fence::Fence::stale`]), whatever the
    /// fence says now.
    pub fn standing_in(&self, view: &View) -> plan::Standing {
        if self.handoff.fence.stale(view.myself.generation) {
            return plan::Standing::CutOff;
        }
        self.standing()
    }

    pub fn standing(&self) -> plan::Standing {
        if !self.accepting.load(Ordering::Acquire) {
            plan::Standing::Looking
        } else if self.handoff.is_cut_off() {
            plan::Standing::CutOff
        } else {
            plan::Standing::Serving
        }
    }

    /// How far ahead of this node's clock a failover's write orders (ms): one more than the
    /// most any peer's clock was seen ahead of this one (`shoal_peer_clock_lead_ms`, from
    /// the deadlines of the commands it forwarded), at most `cluster-timeout-ms`. The lost
    /// owner's last writes, whose replication may arrive after the failover, carry versions
    /// from its clock; a failover that ran only 1 ms ahead lost to them when that clock ran
    /// further ahead (README, "pipelined write overtaken by its older value").
    pub fn failover_ahead_ms(&self) -> u64 {
        let timeout = self.timeouts.request.as_millis() as u64;
        1 + self
            .stats
            .peer_clock_lead_ms
            .load(Ordering::Relaxed)
            .min(timeout)
    }

    /// The deadline (Unix ms) a COMMAND sent now carries.
    pub fn deadline_ms(&self) -> u64 {
        shoal_engine::clock::now_ms() + self.timeouts.request.as_millis() as u64
    }
}

/// Why a cluster cannot be set up from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    Config(String),
    #[error("placement: {0}")]
    Placement(#[from] shoal_ring::PlacementError),
}

fn unspecified() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 0))
}

/// A stable 40-hex-character id for a node name (the form Redis Cluster node ids take).
pub fn node_id(name: &str) -> String {
    let a = xxhash_rust::xxh3::xxh3_128_with_seed(name.as_bytes(), 0x5348_4f41);
    let b = xxhash_rust::xxh3::xxh3_64_with_seed(name.as_bytes(), 0x004c_4944);
    format!("{a:032x}{:08x}", b as u32)
}

/// The id of a view: the placed members' names and generations, the copy count, and the
/// leaving members (a leaving node that vanishes before its hand-off completed changes who
/// must send its slots, so it must start a new hand-off round).
fn fingerprint(nodes: &[NodeInfo], leaving: &[NodeInfo], width: usize) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::with_seed(width as u64);
    // Builds that place slots differently never share a view id.
    h.update(&shoal_ring::ALGORITHM_VERSION.to_le_bytes());
    for n in nodes {
        h.update(n.name.as_bytes());
        h.update(&[0]);
        h.update(&n.generation.to_le_bytes());
    }
    h.update(&[0xff]);
    for n in leaving {
        h.update(n.name.as_bytes());
        h.update(&[0]);
        h.update(&n.generation.to_le_bytes());
    }
    h.digest()
}

impl Cluster {
    /// Builds the view from `cluster-nodes` and starts a peer client and a replication queue
    /// for every other member (connections are made lazily). Must run inside the runtime.
    /// `links`: TLS for the inter-node links (`tls-cluster`).
    pub fn from_config(
        config: &NodeConfig,
        links: Option<shoal_tls::Tls>,
    ) -> Result<Cluster, ClusterError> {
        let members = config.cluster_members().map_err(ClusterError::Config)?;
        let me_name = config.resolved_node_name();
        let rows: Vec<MemberRow> = members
            .iter()
            .map(|m| MemberRow {
                info: NodeInfo::new(&m.name, m.client, m.cluster, 0)
                    .with_cluster_client(m.cluster_client),
                state: MemberState::Serving,
                suspect: false,
            })
            .collect();
        if !rows.iter().any(|r| r.info.name == me_name) {
            return Err(ClusterError::Config(format!("'{me_name}' is not a member")));
        }
        let cluster = Cluster::new(config, Mode::Static, &me_name, links)?;
        let view = Arc::new(cluster.build_view(1, rows, &me_name)?);
        cluster.view_id.store(view.id, Ordering::Relaxed);
        cluster.handoff.settle_static(&view);
        cluster.view.store(view);
        Ok(cluster)
    }

    /// A gossip-mode cluster that knows only `myself` (joining) until gossip tells more.
    /// `links`: TLS for the inter-node links (`tls-cluster`).
    pub fn for_gossip(
        config: &NodeConfig,
        myself: NodeInfo,
        links: Option<shoal_tls::Tls>,
    ) -> Result<Cluster, ClusterError> {
        let cluster = Cluster::new(config, Mode::Gossip, &myself.name, links)?;
        let name = myself.name.clone();
        let rows = vec![MemberRow {
            info: myself,
            state: MemberState::Joining,
            suspect: false,
        }];
        let view = Arc::new(cluster.build_view(1, rows, &name)?);
        cluster.view_id.store(view.id, Ordering::Relaxed);
        cluster.handoff.start_gossip(&view, config);
        cluster.view.store(view);
        cluster
            .accepting
            .store(config.cluster_seeds.is_empty(), Ordering::Relaxed);
        Ok(cluster)
    }

    fn new(
        config: &NodeConfig,
        mode: Mode,
        me_name: &str,
        links: Option<shoal_tls::Tls>,
    ) -> Result<Cluster, ClusterError> {
        let mut auth = AuthConfig::new(
            config.cluster_name.clone(),
            config.cluster_secret.as_bytes().to_vec(),
            me_name.to_owned(),
        );
        auth.tls = links;
        auth.validate()
            .map_err(|e| ClusterError::Config(e.to_string()))?;
        let write_ack = config.write_ack.parse().map_err(ClusterError::Config)?;
        let peer_config = PeerConfig {
            max_in_flight: PEER_MAX_IN_FLIGHT,
            max_queued: PEER_MAX_QUEUED,
            request_timeout: Duration::from_millis(config.cluster_timeout_ms),
            connect_timeout: Duration::from_millis(config.cluster_timeout_ms.min(500)),
            ..PeerConfig::default()
        };
        // A placeholder until the first real view is stored.
        let placeholder = View {
            placement: Placement::new(&[Member::new(me_name)], 0, 0)?,
            nodes: Vec::new(),
            me: NOT_MEMBER,
            peers: Vec::new(),
            id: 0,
            myself: NodeInfo::new(me_name, unspecified(), unspecified(), 0),
            members: Vec::new(),
            leaving: Vec::new(),
        };
        Ok(Cluster {
            view: ArcSwap::from_pointee(placeholder),
            name: config.cluster_name.clone(),
            mode,
            write_ack,
            stats: Arc::new(ClusterStats::default()),
            auth,
            internal: shoal_engine::client::ClientInfo::internal(),
            handoff: handoff::Handoff::new(config),
            gossip: std::sync::OnceLock::new(),
            replicas: config.replicas,
            peer_config,
            view_id: Arc::new(AtomicU64::new(0)),
            pool: Mutex::new(HashMap::new()),
            installing: Mutex::new(()),
            changes: watch::channel(0).0,
            accepting: AtomicBool::new(true),
            timeouts: Timeouts::new(config.cluster_timeout_ms),
            join_problem: Mutex::new(None),
            bcast: Default::default(),
            membership: Mutex::new(None),
            local_state: Mutex::new(MemberState::Joining),
            blocked_forwards: tokio::sync::Semaphore::new(BLOCKED_FORWARDS),
        })
    }

    /// A view of `rows` (every known member, `me_name` among them) with epoch `epoch`.
    fn build_view(
        &self,
        epoch: u64,
        mut rows: Vec<MemberRow>,
        me_name: &str,
    ) -> Result<View, ClusterError> {
        rows.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        let me_row = rows
            .iter()
            .find(|r| r.info.name == me_name)
            .cloned()
            .ok_or_else(|| ClusterError::Config(format!("'{me_name}' is not a member")))?;
        let mut placed: Vec<&MemberRow> = rows.iter().filter(|r| r.state.placed()).collect();
        if placed.is_empty() {
            // The last member leaving keeps its keys where they are.
            placed.push(&me_row);
        }
        let ring: Vec<Member> = placed.iter().map(|r| Member::new(&r.info.name)).collect();
        let placement = Placement::new(&ring, self.replicas, epoch)?;
        let mut nodes = Vec::with_capacity(placed.len());
        let mut peers = Vec::with_capacity(placed.len());
        let mut me = NOT_MEMBER;
        let mut used = Vec::new();
        for (i, m) in placement.members().iter().enumerate() {
            let row = placed
                .iter()
                .find(|r| r.info.name == m.name.0)
                .expect("placement members come from the rows");
            if row.info.name == me_name {
                me = i as u16;
                peers.push(None);
            } else {
                peers.push(Some(self.link(&row.info)));
                used.push((row.info.name.clone(), row.info.cluster));
            }
            nodes.push(row.info.clone());
        }
        let mut leaving = Vec::new();
        for r in &rows {
            if r.state == MemberState::Leaving && r.info.name != me_name {
                leaving.push((r.info.clone(), self.link(&r.info)));
                used.push((r.info.name.clone(), r.info.cluster));
            }
        }
        self.pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|k, _| used.contains(k));
        let mut leaving_me: Vec<NodeInfo> = leaving.iter().map(|(n, _)| n.clone()).collect();
        if me == NOT_MEMBER {
            // This node leaving is part of every node's view of it.
            leaving_me.push(me_row.info.clone());
            leaving_me.sort_by(|a, b| a.name.cmp(&b.name));
        }
        let id = fingerprint(&nodes, &leaving_me, placement.width());
        Ok(View {
            placement,
            nodes,
            me,
            peers,
            id,
            myself: me_row.info,
            members: rows,
            leaving,
        })
    }

    /// The link to `node`, reused when one to the same name and address exists.
    fn link(&self, node: &NodeInfo) -> Arc<Peer> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        pool.entry((node.name.clone(), node.cluster))
            .or_insert_with(|| {
                let client =
                    PeerClient::new(node.cluster, self.auth.clone(), self.peer_config.clone());
                let route = Arc::new(relay::Route::new(
                    node.name.clone(),
                    client.clone(),
                    self.timeouts.half,
                    self.stats.clone(),
                ));
                let repl = replicate::Queue::start(
                    route.clone(),
                    self.stats.clone(),
                    self.view_id.clone(),
                );
                Arc::new(Peer {
                    client,
                    route,
                    repl,
                    reachable: AtomicBool::new(true),
                    forwards: ForwardOutcomes::default(),
                    batches: Default::default(),
                    probe_after_ms: AtomicU64::new(0),
                })
            })
            .clone()
    }

    /// Installs a view of `rows` (gossip mode); the caller holds `installing`. A view whose
    /// placement differs gets the next epoch and starts a hand-off; one that only changes
    /// states (joining to serving, a down member noted) keeps the epoch.
    fn install_locked(&self, rows: Vec<MemberRow>) -> Result<Arc<View>, ClusterError> {
        let old = self.view();
        let me_name = old.myself.name.clone();
        let probe = self.build_view(old.epoch(), rows.clone(), &me_name)?;
        let view = if probe.id == old.id {
            Arc::new(probe)
        } else {
            Arc::new(self.build_view(old.epoch() + 1, rows, &me_name)?)
        };
        if view.id != old.id {
            // Unsettle before the new view is visible.
            self.handoff.view_changed(&old, &view);
        } else {
            // Cut off or not, before the view is visible.
            self.handoff.members_changed(&view);
        }
        self.view_id.store(view.id, Ordering::Relaxed);
        self.view.store(view.clone());
        // A node that rejoined after a pause is a joiner: it fetches before it serves. The
        // fence lifts only once the view is published, so a thread that sees it lifted
        // (and reads the view after it) routes by this view, never by the one from before
        // the pause, which still counted this node's old copies as current (a GET answered
        // a pre-pause value that way, once in CI: `a_node_paused_past_failure_detection_
        // serves_no_stale_value`; a helper's diagnosis).
        self.handoff.fence.installed(view.myself.generation);
        if view.id != old.id {
            self.changes.send_replace(view.epoch());
        } else {
            self.handoff.reevaluate(self);
        }
        Ok(view)
    }

    /// True when a cluster client may be sent to member `to` with `-MOVED` under `view`: `to`
    /// answered last under the same placement. Otherwise the two may place the slot
    /// differently for a moment (one has heard of a join or a leave, the other not yet) and
    /// send the client back and forth until it gives up (ioredis and redis-py follow 16
    /// redirections with no pause between them); the request is then served as on the plain
    /// port (forwarded), which needs no agreement, and MOVED resumes once `to` answers under
    /// this view. Two nodes never send a client to each other for one slot: each would need
    /// the other's latest answer to carry its own view, and under one view both agree on the
    /// slot's primary.
    pub fn may_redirect(&self, view: &View, to: u16) -> bool {
        view.peer(to)
            .is_some_and(|p| p.client.peer_epoch() == view.id)
    }

    /// Notified whenever a view with another placement is installed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The current membership snapshot.
    pub fn view(&self) -> Arc<View> {
        self.view.load_full()
    }

    /// The current view, for a look that ends before the next await (no reference count
    /// taken).
    pub(crate) fn view_now(&self) -> arc_swap::Guard<Arc<View>> {
        self.view.load()
    }

    /// The current view's epoch (it grows with every view change on this node).
    pub fn epoch(&self) -> u64 {
        self.view.load().epoch()
    }

    /// This node's own entry.
    pub fn me(&self) -> NodeInfo {
        self.view.load().myself.clone()
    }

    /// This node's state as INFO and CLUSTER NODES show it: `serving` in a static cluster.
    pub fn state_name(&self) -> &'static str {
        match self.mode {
            Mode::Static => "serving",
            Mode::Gossip => self.local_state().as_str(),
        }
    }

    /// Lines for INFO's cluster section (after `cluster_enabled`).
    pub fn info_lines(&self, b: &mut String) {
        let v = self.view.load();
        let s = &self.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut line = |text: String| {
            b.push_str(&text);
            b.push_str("\r\n");
        };
        line(format!("shoal_cluster_name:{}", self.name));
        line(format!("shoal_node_name:{}", v.myself.name));
        line(format!(
            "shoal_mode:{}",
            match self.mode {
                Mode::Static => "static",
                Mode::Gossip => "gossip",
            }
        ));
        line(format!("shoal_state:{}", self.state_name()));
        let problem = self.join_problem.lock().unwrap_or_else(|e| e.into_inner());
        line(format!(
            "shoal_join_problem:{}",
            problem.as_deref().unwrap_or("")
        ));
        drop(problem);
        line(format!("shoal_members:{}", v.len()));
        line(format!(
            "shoal_known_members:{}",
            v.members.len().max(v.len())
        ));
        line(format!("shoal_epoch:{}", v.epoch()));
        line(format!("shoal_view_id:{:016x}", v.id));
        let h = &self.handoff.stats;
        line(format!(
            "shoal_settled:{}",
            u8::from(self.handoff.settled_in(&v))
        ));
        line(format!(
            "shoal_handoff_slots_pending:{}",
            get(&h.slots_pending)
        ));
        line(format!(
            "shoal_handoff_slots_planned:{}",
            get(&h.slots_planned)
        ));
        line(format!("shoal_handoff_slots_sent:{}", get(&h.slots_sent)));
        line(format!("shoal_handoff_keys_sent:{}", get(&h.keys_sent)));
        line(format!("shoal_handoff_bytes_sent:{}", get(&h.bytes_sent)));
        line(format!(
            "shoal_handoff_keys_received:{}",
            get(&h.keys_received)
        ));
        line(format!("shoal_handoff_rounds:{}", get(&h.rounds)));
        line(format!(
            "shoal_handoff_last_scan_ms:{}",
            get(&h.last_scan_ms)
        ));
        line(format!(
            "shoal_handoff_last_scan_keys:{}",
            get(&h.last_scan_keys)
        ));
        line(format!(
            "shoal_handoff_keys_per_sec:{}",
            get(&h.keys_per_sec)
        ));
        line(format!(
            "shoal_handoff_bytes_per_sec:{}",
            get(&h.bytes_per_sec)
        ));
        line(format!("shoal_handoff_eta_secs:{}", get(&h.eta_secs)));
        line(format!("shoal_fetches_on_miss:{}", get(&h.fetches)));
        line(format!("shoal_fetches_unanswered:{}", get(&h.unanswered)));
        line(format!("shoal_fetched_keys:{}", get(&h.fetched)));
        line(format!("shoal_forgotten_keys:{}", get(&h.forgotten)));
        line(format!("shoal_other_view_requests:{}", get(&s.other_view)));
        line(format!("shoal_moved_replies:{}", get(&s.moved)));
        line(format!(
            "shoal_cluster_port_requests:{}",
            get(&s.cluster_port_requests)
        ));
        line(format!(
            "shoal_cluster_port_unowned_requests:{}",
            get(&s.unowned)
        ));
        line(format!("shoal_expired_requests:{}", get(&s.expired)));
        line(format!(
            "shoal_pubsub_undelivered:{}",
            get(&s.pubsub_undelivered)
        ));
        line(format!(
            "shoal_peer_clock_lead_ms:{}",
            get(&s.peer_clock_lead_ms)
        ));
        if let Some(g) = self.gossip.get() {
            let g = g.stats().snapshot();
            line(format!("shoal_gossip_datagrams_in:{}", g.datagrams_in));
            line(format!("shoal_gossip_datagrams_out:{}", g.datagrams_out));
            line(format!("shoal_gossip_bytes_in:{}", g.bytes_in));
            line(format!("shoal_gossip_bytes_out:{}", g.bytes_out));
            line(format!(
                "shoal_gossip_rejected_wrong_cluster:{}",
                g.dropped_wrong_cluster
            ));
            line(format!(
                "shoal_gossip_rejected_bad_mac:{}",
                g.dropped_bad_mac
            ));
            line(format!(
                "shoal_gossip_rejected_other:{}",
                g.dropped_too_short
                    + g.dropped_too_long
                    + g.dropped_bad_magic
                    + g.dropped_bad_version
                    + g.dropped_bad_kind
            ));
            line(format!(
                "shoal_gossip_declarations_held:{}",
                g.declarations_held
            ));
            line(format!(
                "shoal_gossip_suspicions_vouched:{}",
                g.suspicions_vouched
            ));
            line(format!("shoal_peers_refused:{}", get(&s.peers_refused)));
            line(format!(
                "shoal_gossip_refused_datagrams:{}",
                g.refused_in + g.refused_out
            ));
        }
        line(format!("shoal_copies:{}", v.placement.width()));
        line(format!(
            "shoal_write_ack:{}",
            match self.write_ack {
                WriteAck::Owner => "owner",
                WriteAck::All => "all",
            }
        ));
        line(format!(
            "shoal_owned_slots:{}",
            v.placement.slots_of(usize::from(v.me)).count()
        ));
        line(format!(
            "shoal_cut_off:{}",
            u8::from(self.handoff.is_cut_off())
        ));
        line(format!(
            "shoal_pauses:{}",
            self.handoff.fence.stalls.load(Ordering::Relaxed)
        ));
        line(format!(
            "shoal_paused_unconfirmed:{}",
            u8::from(self.handoff.fence.fenced())
        ));
        line(format!("shoal_forwarded:{}", get(&s.forwarded)));
        line(format!("shoal_served_for_peers:{}", get(&s.served)));
        line(format!("shoal_forward_batches:{}", get(&s.batches_sent)));
        line(format!("shoal_forward_batched:{}", get(&s.batched)));
        line(format!(
            "shoal_forward_batch_continued:{}",
            get(&s.batch_continued)
        ));
        let batching = v
            .peers
            .iter()
            .flatten()
            .filter(|p| p.batches.load(Ordering::Relaxed) == batching::YES)
            .count();
        line(format!("shoal_peers_taking_batches:{batching}"));
        line(format!("shoal_batches_served:{}", get(&s.batches_served)));
        line(format!("shoal_failovers:{}", get(&s.failovers)));
        line(format!("shoal_unreachable:{}", get(&s.unreachable)));
        line(format!(
            "shoal_writes_not_failed_over:{}",
            get(&s.writes_not_failed_over)
        ));
        line(format!(
            "shoal_other_view_sent_back:{}",
            get(&s.other_view_sent_back)
        ));
        line(format!(
            "shoal_other_view_resent:{}",
            get(&s.other_view_resent)
        ));
        line(format!("shoal_relayed:{}", get(&s.relayed)));
        line(format!("shoal_relays_served:{}", get(&s.relays_served)));
        line(format!(
            "shoal_peers_relayed:{}",
            v.peers
                .iter()
                .flatten()
                .filter(|p| p.route.via().is_some())
                .count()
        ));
        line(format!("shoal_repl_queued:{}", get(&s.repl_queued)));
        line(format!("shoal_repl_dropped:{}", get(&s.repl_dropped)));
        line(format!("shoal_repl_applied:{}", get(&s.repl_applied)));
        line(format!("shoal_repl_stale:{}", get(&s.repl_stale)));
        line(format!("shoal_repl_foreign:{}", get(&s.repl_foreign)));
        line(format!("shoal_repl_passed_on:{}", get(&s.repl_passed_on)));
        line(format!("shoal_split_resent:{}", get(&s.split_resent)));
        line(format!("shoal_repl_deltas:{}", get(&s.repl_deltas)));
        line(format!(
            "shoal_repl_deltas_applied:{}",
            get(&s.repl_deltas_applied)
        ));
        line(format!(
            "shoal_repl_deltas_refetched:{}",
            get(&s.repl_deltas_refetched)
        ));
        line(format!("shoal_sent_on_leaving:{}", get(&s.sent_on_leaving)));
        line(format!("shoal_blocked_pops_put_back:{}", get(&s.put_back)));
        line(format!(
            "shoal_blocked_pops_put_back_failed:{}",
            get(&s.put_back_failed)
        ));
        let mut peers = String::new();
        let mut queued = String::new();
        for (i, n) in v.nodes.iter().enumerate() {
            if let Some(p) = v.peer(i as u16) {
                let _ = write!(peers, "{}={},", n.name, p.client.in_flight());
                let _ = write!(queued, "{}={},", n.name, p.client.queued());
            }
        }
        peers.pop();
        queued.pop();
        line(format!("shoal_peer_in_flight:{peers}"));
        line(format!("shoal_peer_queued:{queued}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str, timeout_ms: u64) -> NodeConfig {
        NodeConfig {
            node_name: name.into(),
            cluster_secret: "s".into(),
            cluster_nodes: vec!["a=127.0.0.1:1@2".into(), "b=127.0.0.1:3@4".into()],
            cluster_timeout_ms: timeout_ms,
            ..NodeConfig::default()
        }
    }

    /// Two nodes in one process keep their own timeouts (they were process-wide statics).
    #[tokio::test]
    async fn timeouts_belong_to_each_node() {
        let a = Cluster::from_config(&config("a", 200), None).unwrap();
        let b = Cluster::from_config(&config("b", 4000), None).unwrap();
        assert_eq!(a.timeouts.request, Duration::from_millis(200));
        assert_eq!(a.timeouts.half, Duration::from_millis(100));
        assert_eq!(b.timeouts.request, Duration::from_millis(4000));
        assert_eq!(b.timeouts.half, Duration::from_millis(2000));
        let (da, db) = (a.deadline_ms(), b.deadline_ms());
        assert!(db >= da + 3000, "{da} {db}");
        assert_eq!(Timeouts::new(1).half, Duration::from_millis(1));
    }
}
