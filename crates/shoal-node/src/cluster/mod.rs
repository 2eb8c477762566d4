//! The cluster data path: where a key lives and how a request gets there.
//!
//! - [`View`]: one immutable snapshot of the membership: the placement (`shoal-ring`), each
//!   member's addresses, and a [`PeerClient`] (`shoal-wire`) plus a replication queue per
//!   other member. Requests load it once (lock-free, `ArcSwap`) and use that one snapshot.
//! - `router`: what the client's connection calls for every command: run it here, forward
//!   it to the key's owner, split it by owner (MGET, MSET, DEL, ...), or fan it out (DBSIZE,
//!   KEYS, SCAN, ...). This is where a request crosses to another node.
//! - `message`: the bodies inside `shoal-wire` frames: a forwarded command, a batch of
//!   replicated key states.
//! - `peer`: the receiving side: runs forwarded commands on the local store and applies
//!   replicated states (last writer wins on versions, see `shoal-store`).
//! - `replicate`: after a write at the owner, the key's resulting state goes to the other
//!   copies, batched per peer through a bounded queue.
//!
//! Membership is static here (`cluster-nodes`); gossip will swap the `View` without touching
//! the router.

mod fanout;
pub mod message;
pub mod peer;
mod replicate;
pub mod router;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use shoal_ring::{Member, NodeName, Placement};
use shoal_wire::{AuthConfig, PeerClient, PeerConfig};

use crate::config::{NodeConfig, WriteAck};

pub use message::Scope;
pub use replicate::ReplItem;

/// Requests in flight to one peer; one more fails at once with an error (never queued).
pub const PEER_MAX_IN_FLIGHT: usize = 4096;

/// One member as the cluster commands show it.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub name: String,
    /// 40 hex characters derived from the name (stable across restarts), as CLUSTER MYID.
    pub id: String,
    pub client: SocketAddr,
    pub cluster: SocketAddr,
}

/// The link to one other member.
pub struct Peer {
    pub client: PeerClient,
    repl: replicate::Queue,
    /// False since a request to it found it unreachable, until one succeeds again (what
    /// CLUSTER NODES and CLUSTER INFO show; routing does not wait for it).
    pub reachable: std::sync::atomic::AtomicBool,
}

/// One snapshot of the membership. Indices are the placement's member indices.
pub struct View {
    pub placement: Placement,
    pub nodes: Vec<NodeInfo>,
    /// This node's index.
    pub me: u16,
    /// `None` at `me`.
    peers: Vec<Option<Peer>>,
}

impl View {
    pub fn epoch(&self) -> u64 {
        self.placement.epoch()
    }

    /// Owner first, then the replicas, of `slot`.
    pub fn owners(&self, slot: u16) -> &[u16] {
        self.placement.owners(slot)
    }

    /// The member that owns `key`'s slot.
    pub fn owner_of(&self, key: &[u8]) -> u16 {
        self.owners(shoal_store::key_slot(key))[0]
    }

    pub fn peer(&self, member: u16) -> Option<&Peer> {
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
    /// Commands (or parts of split commands) sent to another node.
    pub forwarded: AtomicU64,
    /// Requests to a copy that failed (unreachable, timeout) and went to the next copy.
    pub failovers: AtomicU64,
    /// Requests that reached no copy at all.
    pub unreachable: AtomicU64,
    /// Key states queued for replicas.
    pub repl_queued: AtomicU64,
    /// Key states dropped: the queue to the peer was full or the peer could not be reached.
    pub repl_dropped: AtomicU64,
    /// Key states received from other nodes and applied (newer than the local copy).
    pub repl_applied: AtomicU64,
    /// Key states received but older than the local copy (or a tombstone): ignored.
    pub repl_stale: AtomicU64,
    /// Forwarded commands this node ran for other nodes.
    pub served: AtomicU64,
}

/// The cluster side of a node.
pub struct Cluster {
    view: ArcSwap<View>,
    pub name: String,
    pub write_ack: WriteAck,
    pub stats: Arc<ClusterStats>,
    pub auth: AuthConfig,
    /// The pseudo-client that runs requests from other nodes.
    pub internal: Arc<crate::client::ClientInfo>,
}

/// Why a cluster cannot be set up from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("{0}")]
    Config(String),
    #[error("placement: {0}")]
    Placement(#[from] shoal_ring::PlacementError),
}

/// A stable 40-hex-character id for a node name (the form Redis Cluster node ids take).
pub fn node_id(name: &str) -> String {
    let a = xxhash_rust::xxh3::xxh3_128_with_seed(name.as_bytes(), 0x5348_4f41);
    let b = xxhash_rust::xxh3::xxh3_64_with_seed(name.as_bytes(), 0x004c_4944);
    format!("{a:032x}{:08x}", b as u32)
}

impl Cluster {
    /// Builds the view from `cluster-nodes` and starts a peer client and a replication queue
    /// for every other member (connections are made lazily). Must run inside the runtime.
    pub fn from_config(config: &NodeConfig) -> Result<Cluster, ClusterError> {
        let members = config.cluster_members().map_err(ClusterError::Config)?;
        let me_name = config.resolved_node_name();
        let ring: Vec<Member> = members.iter().map(|m| Member::new(&m.name)).collect();
        let placement = Placement::new(&ring, config.replicas, 1)?;
        let me = placement
            .index_of(&NodeName(me_name.clone()))
            .ok_or_else(|| ClusterError::Config(format!("'{me_name}' is not a member")))?;
        let auth = AuthConfig::new(
            config.cluster_name.clone(),
            config.cluster_secret.as_bytes().to_vec(),
            me_name.clone(),
        );
        auth.validate()
            .map_err(|e| ClusterError::Config(e.to_string()))?;
        let write_ack = config.write_ack.parse().map_err(ClusterError::Config)?;
        let peer_config = PeerConfig {
            max_in_flight: PEER_MAX_IN_FLIGHT,
            request_timeout: Duration::from_millis(config.cluster_timeout_ms),
            connect_timeout: Duration::from_millis(config.cluster_timeout_ms.min(500)),
            ..PeerConfig::default()
        };
        replicate::ACK_WAIT_MS.store((config.cluster_timeout_ms / 2).max(1), Ordering::Relaxed);
        let stats = Arc::new(ClusterStats::default());
        let mut nodes = Vec::new();
        let mut peers = Vec::new();
        for (i, m) in placement.members().iter().enumerate() {
            let addr = members
                .iter()
                .find(|a| a.name == m.name.0)
                .expect("placement members come from the list");
            nodes.push(NodeInfo {
                name: addr.name.clone(),
                id: node_id(&addr.name),
                client: addr.client,
                cluster: addr.cluster,
            });
            if i == me {
                peers.push(None);
            } else {
                let client = PeerClient::new(addr.cluster, auth.clone(), peer_config.clone());
                let repl = replicate::Queue::start(client.clone(), stats.clone(), 1);
                peers.push(Some(Peer {
                    client,
                    repl,
                    reachable: std::sync::atomic::AtomicBool::new(true),
                }));
            }
        }
        let view = View {
            placement,
            nodes,
            me: me as u16,
            peers,
        };
        Ok(Cluster {
            view: ArcSwap::from_pointee(view),
            name: config.cluster_name.clone(),
            write_ack,
            stats,
            auth,
            internal: crate::client::ClientInfo::internal(),
        })
    }

    /// The current membership snapshot.
    pub fn view(&self) -> Arc<View> {
        self.view.load_full()
    }

    /// This node's own entry.
    pub fn me(&self) -> NodeInfo {
        let v = self.view.load();
        v.nodes[usize::from(v.me)].clone()
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
        line(format!(
            "shoal_node_name:{}",
            v.nodes[usize::from(v.me)].name
        ));
        line(format!("shoal_members:{}", v.len()));
        line(format!("shoal_epoch:{}", v.epoch()));
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
        line(format!("shoal_forwarded:{}", get(&s.forwarded)));
        line(format!("shoal_served_for_peers:{}", get(&s.served)));
        line(format!("shoal_failovers:{}", get(&s.failovers)));
        line(format!("shoal_unreachable:{}", get(&s.unreachable)));
        line(format!("shoal_repl_queued:{}", get(&s.repl_queued)));
        line(format!("shoal_repl_dropped:{}", get(&s.repl_dropped)));
        line(format!("shoal_repl_applied:{}", get(&s.repl_applied)));
        line(format!("shoal_repl_stale:{}", get(&s.repl_stale)));
        let mut peers = String::new();
        for (i, n) in v.nodes.iter().enumerate() {
            if let Some(p) = v.peer(i as u16) {
                let _ = write!(peers, "{}={},", n.name, p.client.in_flight());
            }
        }
        peers.pop();
        line(format!("shoal_peer_in_flight:{peers}"));
    }
}
