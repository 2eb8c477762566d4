//! Gossip mode: `shoal-gossip` tells who is in the cluster; this module turns each new
//! membership into a `View` and drives this node's own state (joining, serving, leaving).
//!
//! - A member is placed when it is up and announced joining or serving (or has not
//!   announced yet); leaving and down members are not. This node uses its own state directly.
//! - Placement is keyed by the stable name; a restarted node's higher generation makes it a
//!   new incarnation, so its slots are refilled (see `handoff`).
//! - A node with seeds answers keyed commands with TRYAGAIN until it found another member.
//!   Until then it says why every `join-timeout-ms`, in the log and INFO: no seed resolves,
//!   the seeds name only itself, a seed refuses it (a handshake probe on the seed's port
//!   tells a wrong secret or cluster name), or nothing answers. It never serves as a cluster
//!   of one by accident: only with `cluster-bootstrap` does it start a new cluster alone.
//!   A node without seeds starts a new cluster at once.
//! - It announces `serving` once it settled in a view with its peers (`handoff`).
//! - `leave`: announce `leaving` (the others stop placing keys here), hand every slot to its
//!   successors, wait until every peer reported done, then leave the gossip cluster.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use shoal_gossip::{Auth, Gossip, GossipConfig, Liveness, Membership, NodeId, NodeState};
use shoal_net::UdpSocket;
use shoal_wire::{AuthConfig, HandshakeError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Cluster, MemberRow, MemberState, NodeInfo};
use crate::Server;
use shoal_engine::config::NodeConfig;

/// How long a node waits for the gossip task to announce its departure.
const LEAVE_GOSSIP_WAIT: Duration = Duration::from_secs(3);
/// How long a leaving node waits for its replication queues to empty.
const REPLICATION_DRAIN: Duration = Duration::from_secs(2);

/// The rows of a view from a gossip membership, with this node in `my_state`.
pub fn rows(m: &Membership, my_state: MemberState) -> Vec<MemberRow> {
    let me = m.local.name();
    let mut out: Vec<MemberRow> = m
        .members
        .iter()
        .filter(|mi| mi.id.name() != me)
        .map(|mi| MemberRow {
            info: info_of(&mi.id),
            state: match (mi.liveness, mi.state) {
                (Liveness::Down, _) => MemberState::Down,
                (Liveness::Up, Some(NodeState::Serving)) => MemberState::Serving,
                (Liveness::Up, Some(NodeState::Leaving)) => MemberState::Leaving,
                (Liveness::Up, Some(NodeState::Joining) | None) => MemberState::Joining,
            },
            suspect: mi.suspect,
        })
        .collect();
    out.push(MemberRow {
        info: info_of(&m.local),
        state: my_state,
        suspect: false,
    });
    out
}

fn info_of(id: &NodeId) -> NodeInfo {
    NodeInfo::new(
        id.name(),
        id.client_addr(),
        id.cluster_addr(),
        id.generation(),
    )
    .with_cluster_client(
        (id.cluster_client_port() != 0)
            .then(|| SocketAddr::new(id.client_addr().ip(), id.cluster_client_port())),
    )
}

fn gossip_state(s: MemberState) -> NodeState {
    match s {
        MemberState::Serving => NodeState::Serving,
        MemberState::Leaving => NodeState::Leaving,
        MemberState::Joining | MemberState::Down => NodeState::Joining,
    }
}

impl Cluster {
    /// This node's own state.
    pub fn local_state(&self) -> MemberState {
        *self.local_state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why this node should get no client traffic from a load balancer now, if it should
    /// not (the metrics port's `/readyz`): it is still looking for its cluster, joining (its
    /// copies are arriving: a rolling restart must wait for it to fill before it stops the
    /// next node, or two copies of a key could be gone at once), leaving, or cut off from
    /// the majority of its cluster (commands on keys answer CLUSTERDOWN). A serving node
    /// stays ready while it receives copies for another node's change.
    pub fn not_ready(&self) -> Option<&'static str> {
        if !self.accepting.load(Ordering::Acquire) {
            return Some("looking for its cluster");
        }
        if self.mode != super::Mode::Gossip {
            return None;
        }
        if self.handoff.is_cut_off() {
            return Some("cut off: it reaches no majority of its cluster");
        }
        match self.local_state() {
            MemberState::Joining => Some("joining: its copies are still arriving"),
            MemberState::Leaving => Some("leaving the cluster"),
            MemberState::Serving | MemberState::Down => None,
        }
    }

    /// Rebuilds the view from the latest membership and this node's state, both read under
    /// the install lock so that two rebuilds cannot publish out of order.
    fn reinstall(&self) {
        let _guard = self.installing.lock().unwrap_or_else(|e| e.into_inner());
        let rows = {
            let m = self.membership.lock().unwrap_or_else(|e| e.into_inner());
            let Some(m) = m.as_ref() else { return };
            rows(m, self.local_state())
        };
        if let Err(e) = self.install_locked(rows) {
            tracing::error!(error = %e, "cannot build a view of the membership");
        }
    }

    /// Sets this node's own state, rebuilds the view and tells the cluster: the view first,
    /// so a leaving node routes and refuses by its new view before any other node acts on
    /// the news (see `peer`).
    fn set_local_state(&self, state: MemberState) {
        {
            let mut s = self.local_state.lock().unwrap_or_else(|e| e.into_inner());
            if *s == state {
                return;
            }
            *s = state;
        }
        self.reinstall();
        if let Some(g) = self.gossip.get() {
            if let Err(e) = g.set_state(gossip_state(state)) {
                tracing::warn!(error = %e, "could not announce the node's state");
            }
        }
    }
}

/// What gossip mode needs from the start-up: the bound UDP socket and the advertised
/// addresses.
pub struct GossipStart {
    pub socket: UdpSocket,
    pub gossip_addr: SocketAddr,
    pub client_addr: SocketAddr,
    pub cluster_addr: SocketAddr,
    /// The announced Redis Cluster client port (`cluster-client-port`), 0 = none.
    pub cluster_client_port: u16,
}

/// This node's identity for gossip: a new generation on every start (milliseconds since the
/// epoch, so a restart is always higher).
pub fn identity(config: &NodeConfig, addrs: &GossipStart) -> Result<NodeId, String> {
    let generation = shoal_engine::clock::now_ms();
    NodeId::new(
        &config.resolved_node_name(),
        addrs.gossip_addr,
        addrs.client_addr,
        addrs.cluster_addr,
        generation,
    )
    .map(|id| id.with_cluster_client_port(addrs.cluster_client_port))
    .map_err(|e| e.to_string())
}

/// The cluster's name in gossip datagrams: `cluster-name`, marked `+tls` with
/// `tls-cluster`. Nodes that differ in `tls-cluster` could gossip but not open links to each
/// other (a member no request reaches); with the mark they drop each other's datagrams as
/// another cluster's, and the node that cannot join says why (`join_problem`).
pub fn gossip_name(config: &NodeConfig) -> String {
    if config.tls_cluster {
        format!("{}+tls", config.cluster_name)
    } else {
        config.cluster_name.clone()
    }
}

/// Starts gossip, the membership follower, the hand-off task, the link prober (`reach`)
/// and the join timer.
pub fn start(
    node: &Arc<Server>,
    config: &NodeConfig,
    addrs: GossipStart,
    identity: NodeId,
    shutdown: CancellationToken,
) -> Result<(), String> {
    let cluster = node.cluster.as_ref().expect("gossip runs in a cluster");
    let auth = Auth::new(&gossip_name(config), config.cluster_secret.as_bytes())
        .map_err(|e| e.to_string())?;
    let addrs_gossip = addrs.gossip_addr;
    let (handle, mut rx) = Gossip::start(
        GossipConfig::default(),
        auth,
        identity,
        NodeState::Joining,
        addrs.socket,
        config.cluster_seeds.clone(),
        shutdown.clone(),
    );
    // The queue is empty this early: this cannot fail.
    // Cut off, or fenced after a pause (`crate::fence`): `Handoff::is_cut_off` says both.
    let (cut_off, fence) = (
        cluster.handoff.cut_off_flag(),
        cluster.handoff.fence.clone(),
    );
    let held = move || cut_off.load(Ordering::Acquire) || fence.fenced();
    if let Err(e) = handle.hold_declarations_while(held) {
        tracing::error!(error = %e, "gossip would declare members down while cut off");
    }
    let _ = cluster.gossip.set(handle);
    {
        let node = node.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let cluster = node.cluster.as_ref().expect("gossip runs in a cluster");
            loop {
                let m = rx.borrow_and_update().clone();
                let others = m.up().count() > 1;
                *cluster.membership.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
                cluster.reinstall();
                if others && !cluster.accepting.swap(true, Ordering::AcqRel) {
                    tracing::info!("joined the cluster");
                    *cluster
                        .join_problem
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = None;
                    cluster.handoff.poke();
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    r = rx.changed() => if r.is_err() { return },
                }
            }
        });
    }
    tokio::spawn(super::handoff::run(node.clone(), shutdown.clone(), settled));
    tokio::spawn(super::reach::run(node.clone(), shutdown.clone()));
    // The simulation's time is its own: no pulse of real time there.
    if !shoal_net::SIMULATED {
        crate::fence::spawn_pulse(&cluster.handoff.fence);
    }
    if !cluster.accepting.load(Ordering::Acquire) {
        tokio::spawn(watch_join(
            node.clone(),
            config.clone(),
            addrs_gossip,
            shutdown,
        ));
    }
    Ok(())
}

/// Until this node found another member: every `join-timeout-ms`, logs and shows in INFO why
/// it has not joined; with `cluster-bootstrap`, starts a new cluster alone after the first
/// period instead.
async fn watch_join(
    node: Arc<Server>,
    config: NodeConfig,
    own: SocketAddr,
    stop: CancellationToken,
) {
    let cluster = node.cluster.as_ref().expect("gossip runs in a cluster");
    let period = Duration::from_millis(config.join_timeout_ms.max(100));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        if cluster.accepting.load(Ordering::Acquire) {
            break;
        }
        if config.cluster_bootstrap {
            if !cluster.accepting.swap(true, Ordering::AcqRel) {
                tracing::warn!(
                    "no other member found through the seeds: starting a new cluster \
                     (cluster-bootstrap is set)"
                );
                cluster.handoff.poke();
            }
            break;
        }
        let probe_port = config.gossip_port.is_none() || config.gossip_port == config.cluster_port;
        let why = diagnose(&config.cluster_seeds, own, &cluster.auth, probe_port).await;
        if cluster.accepting.load(Ordering::Acquire) {
            break;
        }
        tracing::warn!(
            "not serving, answering TRYAGAIN: {why}; waiting to join (cluster-bootstrap would \
             start a new cluster)"
        );
        *cluster
            .join_problem
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
    *cluster
        .join_problem
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = None;
}

/// What came of asking one seed address.
#[derive(Debug, PartialEq, Eq)]
pub enum SeedCheck {
    /// This node's own address.
    Itself,
    /// The node there accepts this one's secret and cluster name (its name).
    Accepts(String),
    /// The node there refused this one.
    Refused(HandshakeError),
    /// Nothing answered the handshake (or it was not tried).
    Silent(String),
}

/// Resolves the seeds and asks each address (over TCP on the same port, where the gossip
/// and cluster ports are one) whether it would accept this node.
async fn diagnose(seeds: &[String], own: SocketAddr, auth: &AuthConfig, probe: bool) -> String {
    let mut checks = Vec::new();
    let mut unresolved = Vec::new();
    for seed in seeds {
        match shoal_net::lookup_host(seed.as_str()).await {
            Ok(addrs) => {
                for addr in addrs {
                    let check = if addr == own {
                        SeedCheck::Itself
                    } else if probe {
                        match shoal_wire::probe(addr, auth, PROBE_LIMIT).await {
                            Ok(name) => SeedCheck::Accepts(name),
                            Err(e) if e.is_refusal() => SeedCheck::Refused(e),
                            Err(e) => SeedCheck::Silent(e.to_string()),
                        }
                    } else {
                        SeedCheck::Silent("no gossip answer".into())
                    };
                    checks.push((addr, check));
                }
            }
            Err(e) => unresolved.push(format!("{seed} ({e})")),
        }
    }
    join_problem(&checks, &unresolved)
}

/// How long one seed probe may take.
const PROBE_LIMIT: Duration = Duration::from_secs(1);

/// The sentence that says why a node has not joined, from what its seeds answered.
pub fn join_problem(checks: &[(SocketAddr, SeedCheck)], unresolved: &[String]) -> String {
    if checks.is_empty() {
        return if unresolved.is_empty() {
            "no cluster-seeds".to_owned()
        } else {
            format!("no seed resolves: {}", unresolved.join(", "))
        };
    }
    if checks.iter().all(|(_, c)| *c == SeedCheck::Itself) {
        return "the cluster-seeds name only this node".to_owned();
    }
    // "addr (detail), ..." of the seeds whose check `detail` picks.
    let list = |detail: fn(&SeedCheck) -> Option<String>| -> String {
        let found: Vec<String> = checks
            .iter()
            .filter_map(|(a, c)| detail(c).map(|d| format!("{a} ({d})")))
            .collect();
        found.join(", ")
    };
    let refused = list(|c| match c {
        SeedCheck::Refused(e) => Some(e.to_string()),
        _ => None,
    });
    if !refused.is_empty() {
        let tls = checks
            .iter()
            .any(|(_, c)| matches!(c, SeedCheck::Refused(HandshakeError::Tls(_))));
        return if tls {
            format!(
                "refused by {refused}: check that tls-cluster, the certificates and the CA \
                 agree on every node"
            )
        } else {
            format!("refused by {refused}: check cluster-secret and cluster-name")
        };
    }
    let accepting = list(|c| match c {
        SeedCheck::Accepts(name) => Some(name.clone()),
        _ => None,
    });
    if !accepting.is_empty() {
        return format!("{accepting} accept this node over TCP but no gossip answered over UDP");
    }
    let silent = list(|c| match c {
        SeedCheck::Silent(e) => Some(e.clone()),
        _ => None,
    });
    // A TLS listener closes a plain handshake without a word, and a plain one a TLS
    // handshake: either side sees the connection end mid-handshake.
    let cut = [
        HandshakeError::Closed.to_string(),
        HandshakeError::Io(std::io::ErrorKind::UnexpectedEof).to_string(),
    ];
    let closed = checks
        .iter()
        .any(|(_, c)| matches!(c, SeedCheck::Silent(e) if cut.contains(e)));
    if closed {
        return format!(
            "no seed answers: {silent} (a seed that closes the handshake unanswered may \
             differ from this node in tls-cluster)"
        );
    }
    format!("no seed answers: {silent}")
}

/// Called by the hand-off task each time the node settled: a joining node now serves.
pub fn settled(node: &Server) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    if cluster.mode == super::Mode::Gossip
        && cluster.local_state() == MemberState::Joining
        && cluster.accepting.load(Ordering::Acquire)
    {
        tracing::info!("settled: serving");
        cluster.set_local_state(MemberState::Serving);
    }
}

/// Leaves the cluster gracefully: announce leaving, hand every slot over, wait until every
/// peer settled without this node (or `deadline`), then leave the gossip cluster. Returns
/// true if the hand-off completed in time.
pub async fn leave(node: &Server, deadline: Instant) -> bool {
    let Some(cluster) = node.cluster.as_ref() else {
        return true;
    };
    if cluster.mode != super::Mode::Gossip {
        return true;
    }
    tracing::info!("leaving the cluster: handing every slot to its successors");
    cluster.set_local_state(MemberState::Leaving);
    let done = cluster.handoff.wait_settled(cluster, deadline).await;
    if done {
        tracing::info!("hand-off complete: leaving");
    } else {
        tracing::warn!("leave deadline passed before the hand-off completed: leaving anyway");
    }
    // Let the replication queues hand over the last writes this node took (bounded).
    let drain = Instant::now() + REPLICATION_DRAIN;
    while !cluster.view().replication_idle() && Instant::now() < drain.min(deadline) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Cluster-aware clients still send this node the slots it owned. While the others see it
    // leaving (before the gossip leave below), it answers them MOVED, so each client
    // refreshes its slot map; close their connections only once none has asked anything for
    // a while, so nothing is in flight when they close.
    if cluster.me().cluster_client.is_some() {
        let quiet_since = drain_cluster_clients(node, cluster, deadline).await;
        tracing::info!(
            quiet_ms = quiet_since.as_millis() as u64,
            "cluster clients have moved on"
        );
    }
    if let Some(g) = cluster.gossip.get() {
        let _ = tokio::time::timeout(LEAVE_GOSSIP_WAIT, g.leave()).await;
    }
    done
}

/// How long no request for a key may reach the cluster-client port before a leaving node
/// takes its clients to have moved on.
const CLIENT_QUIET: Duration = Duration::from_secs(1);
/// Longest a leaving node waits for them.
const CLIENT_DRAIN_MAX: Duration = Duration::from_secs(10);

/// Waits until no request for a key has reached the cluster-client port for
/// [`CLIENT_QUIET`] (PING, INFO and CLUSTER SLOTS do not count: health checks keep coming),
/// or no cluster-client connection is left, at most [`CLIENT_DRAIN_MAX`] or until
/// `deadline`; returns how long it was quiet. A leaving node serves no slot, so every such
/// request is answered MOVED (or forwarded while views settle): once they stop, its clients
/// have their new slot maps. Best effort: a client that keeps sending is cut off at the end.
async fn drain_cluster_clients(node: &Server, cluster: &Cluster, deadline: Instant) -> Duration {
    let connected = || {
        node.engine
            .clients
            .all()
            .iter()
            .any(|c| c.redis_cluster.load(Ordering::Relaxed))
    };
    let count = || cluster.stats.unowned.load(Ordering::Relaxed);
    let end = (Instant::now() + CLIENT_DRAIN_MAX).min(deadline);
    let mut last = count();
    let mut quiet_from = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    while connected() {
        tick.tick().await;
        let now = Instant::now();
        let n = count();
        if n != last {
            last = n;
            quiet_from = now;
        }
        if now - quiet_from >= CLIENT_QUIET || now >= end {
            break;
        }
    }
    quiet_from.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn join_problem_names_the_cause() {
        assert_eq!(join_problem(&[], &[]), "no cluster-seeds");
        assert_eq!(
            join_problem(&[], &["shoal-0.x:7000 (no such host)".into()]),
            "no seed resolves: shoal-0.x:7000 (no such host)"
        );
        assert_eq!(
            join_problem(&[(at(1), SeedCheck::Itself)], &[]),
            "the cluster-seeds name only this node"
        );
        let refused = join_problem(
            &[
                (at(1), SeedCheck::Itself),
                (at(2), SeedCheck::Silent("connection refused".into())),
                (at(3), SeedCheck::Refused(HandshakeError::WrongSecret)),
            ],
            &[],
        );
        assert_eq!(
            refused,
            "refused by 127.0.0.1:3 (wrong cluster secret): check cluster-secret and cluster-name"
        );
        assert_eq!(
            join_problem(&[(at(2), SeedCheck::Accepts("n2".into()))], &[]),
            "127.0.0.1:2 (n2) accept this node over TCP but no gossip answered over UDP"
        );
        assert_eq!(
            join_problem(
                &[
                    (at(1), SeedCheck::Itself),
                    (at(2), SeedCheck::Silent("connection refused".into()))
                ],
                &[]
            ),
            "no seed answers: 127.0.0.1:2 (connection refused)"
        );
        // tls-cluster on one side only: a TLS error, or a plain handshake closed unanswered.
        let tls = join_problem(
            &[(
                at(2),
                SeedCheck::Refused(HandshakeError::Tls("corrupt message".into())),
            )],
            &[],
        );
        assert!(tls.contains("tls-cluster"), "{tls}");
        let closed = join_problem(
            &[(at(2), SeedCheck::Silent(HandshakeError::Closed.to_string()))],
            &[],
        );
        assert!(closed.contains("tls-cluster"), "{closed}");
        let eof = join_problem(
            &[(
                at(2),
                SeedCheck::Silent(
                    HandshakeError::Io(std::io::ErrorKind::UnexpectedEof).to_string(),
                ),
            )],
            &[],
        );
        assert!(eof.contains("tls-cluster"), "{eof}");
    }

    #[test]
    fn tls_cluster_marks_the_gossip_name() {
        let mut config = NodeConfig::default();
        assert_eq!(gossip_name(&config), "shoal");
        config.tls_cluster = true;
        assert_eq!(gossip_name(&config), "shoal+tls");
    }
}
