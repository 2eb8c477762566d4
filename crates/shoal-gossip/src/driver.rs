//! The tokio driver: one owner task runs a [`GossipCore`] over a UDP socket.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shoal_net::UdpSocket;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::GossipConfig;
use crate::core::{GossipCore, Membership};
use crate::envelope::Auth;
use crate::identity::NodeId;
use crate::metadata::NodeState;
use crate::stats::{inc, GossipStats};
use crate::GossipError;

/// What [`GossipHandle::hold_declarations_while`] asks.
struct Hold(Box<dyn Fn() -> bool + Send + Sync>);

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hold")
    }
}

/// Commands for the owner task.
#[derive(Debug)]
enum GossipCmd {
    SetState(NodeState),
    /// Newly resolved seed addresses (from the resolver task).
    Seeds(Vec<SocketAddr>),
    /// While it says so, this node declares no member down.
    HoldDeclarations(Hold),
    /// Datagrams from and to these addresses are dropped (replaces the previous set).
    Refuse(HashSet<SocketAddr>),
    /// Leave the cluster, drain, stop; answered when the task is about to exit.
    Leave(oneshot::Sender<()>),
}

/// Talks to the gossip owner task. Cheap to clone.
#[derive(Debug, Clone)]
pub struct GossipHandle {
    cmds: mpsc::Sender<GossipCmd>,
    stats: Arc<GossipStats>,
}

impl GossipHandle {
    /// Announces this node's serving state. Fails fast if the command queue is full.
    pub fn set_state(&self, state: NodeState) -> Result<(), GossipError> {
        self.try_send(GossipCmd::SetState(state))
    }

    /// Queues `cmd` for the owner task, or fails at once (a full queue is counted).
    fn try_send(&self, cmd: GossipCmd) -> Result<(), GossipError> {
        self.cmds.try_send(cmd).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                inc(&self.stats.commands_dropped);
                GossipError::Overloaded
            }
            mpsc::error::TrySendError::Closed(_) => GossipError::Stopped,
        })
    }

    /// While `hold` answers true (asked at each turn of the timers), this node declares no
    /// member down: its suspicions stay suspicions (they still show in the membership), and
    /// members declared down by others still go down. The cluster holds while this node is
    /// cut off from the majority: on that side of a partition it would declare the majority
    /// down, and when the partition heals that news would make every member of the majority
    /// rejoin under a new generation (and be refilled), instead of only this node; and
    /// while a pause of its process waits to be confirmed (its timers ran late). Fails fast
    /// as [`GossipHandle::set_state`] does.
    pub fn hold_declarations_while(
        &self,
        hold: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Result<(), GossipError> {
        self.try_send(GossipCmd::HoldDeclarations(Hold(Box::new(hold))))
    }

    /// Drops every datagram from and to `addrs` (gossip addresses), replacing the previous
    /// set; an empty set drops nothing. To gossip, such a member is silent, and this node
    /// silent to it: unless another member still reaches it (SWIM's indirect probes), it is
    /// declared down. The cluster refuses members its inter-node links (TCP) have not
    /// reached for a while, so that a member gossip reaches but TCP does not (a firewall
    /// that lets the gossip port through but not the cluster port) goes down instead of
    /// staying placed with keys nobody can reach. Fails fast as [`GossipHandle::set_state`].
    pub fn refuse(&self, addrs: HashSet<SocketAddr>) -> Result<(), GossipError> {
        self.try_send(GossipCmd::Refuse(addrs))
    }

    /// Leaves the cluster gracefully (foca `leave_cluster`, then `leave_drain` of
    /// re-gossiping) and waits until the task has stopped.
    pub async fn leave(&self) -> Result<(), GossipError> {
        let (tx, rx) = oneshot::channel();
        self.cmds
            .send(GossipCmd::Leave(tx))
            .await
            .map_err(|_| GossipError::Stopped)?;
        rx.await.map_err(|_| GossipError::Stopped)
    }

    /// The live counters.
    pub fn stats(&self) -> &Arc<GossipStats> {
        &self.stats
    }
}

/// Starts gossip membership.
pub struct Gossip;

impl Gossip {
    /// Spawns the owner task (and a seed resolver task) on the current tokio runtime.
    ///
    /// `socket` is bound by the caller (tests bind `127.0.0.1:0`); `identity.gossip_addr()`
    /// MUST be where peers reach it. `seeds` are `host:port` strings, resolved now and every
    /// `seed_resolve_interval`. Cancelling `shutdown` stops the tasks at once without
    /// leaving (use [`GossipHandle::leave`] for a graceful exit).
    pub fn start(
        config: GossipConfig,
        auth: Auth,
        identity: NodeId,
        state: NodeState,
        socket: UdpSocket,
        seeds: Vec<String>,
        shutdown: CancellationToken,
    ) -> (GossipHandle, watch::Receiver<Membership>) {
        let stats = Arc::new(GossipStats::default());
        let rng_seed = shoal_net::random_u64().unwrap_or_else(|_| identity.generation());
        let mut core = GossipCore::new(
            config.clone(),
            auth.clone(),
            identity,
            state,
            rng_seed,
            stats.clone(),
        );
        let origin = Instant::now();
        core.start(Duration::ZERO);
        let (members_tx, members_rx) = watch::channel(core.membership().clone());
        let (cmd_tx, cmd_rx) = mpsc::channel(config.command_queue.max(1));
        let task_stop = shutdown.child_token();
        tokio::spawn(spawn_resolver(
            seeds,
            config.seed_resolve_interval,
            cmd_tx.clone(),
            task_stop.clone(),
        ));
        let owner = Owner {
            core,
            socket,
            origin,
            members_tx,
            stats: stats.clone(),
            max_datagram: auth.max_datagram(),
            leave_drain: config.leave_drain,
            hold: None,
            refused: HashSet::new(),
        };
        tokio::spawn(async move {
            owner.run(cmd_rx, shutdown).await;
            task_stop.cancel();
        });
        (
            GossipHandle {
                cmds: cmd_tx,
                stats,
            },
            members_rx,
        )
    }
}

/// How long after the start seeds are resolved every second (a Kubernetes pod's DNS records
/// appear a few seconds after the pod), before `seed_resolve_interval` applies.
const FAST_RESOLVE_FOR: Duration = Duration::from_secs(30);

/// Resolves the seed list now, every second during `FAST_RESOLVE_FOR`, then every
/// `interval`; a name that fails to resolve is skipped this round (it may be a pod that does
/// not exist yet).
async fn spawn_resolver(
    seeds: Vec<String>,
    interval: Duration,
    cmds: mpsc::Sender<GossipCmd>,
    stop: CancellationToken,
) {
    let interval = interval.max(Duration::from_millis(100));
    let fast_until = Instant::now() + FAST_RESOLVE_FOR;
    let mut first = true;
    loop {
        if !first {
            let wait = if Instant::now() < fast_until {
                interval.min(Duration::from_secs(1))
            } else {
                interval
            };
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
        first = false;
        let mut addrs = Vec::new();
        for seed in &seeds {
            match shoal_net::lookup_host(seed.as_str()).await {
                Ok(found) => addrs.extend(found),
                Err(e) => tracing::debug!(%seed, error = %e, "gossip: seed did not resolve"),
            }
        }
        addrs.sort();
        addrs.dedup();
        // Full queue: the next round sends a fresh list anyway.
        if let Err(mpsc::error::TrySendError::Closed(_)) = cmds.try_send(GossipCmd::Seeds(addrs)) {
            return;
        }
    }
}

struct Owner {
    core: GossipCore,
    socket: UdpSocket,
    origin: Instant,
    members_tx: watch::Sender<Membership>,
    stats: Arc<GossipStats>,
    max_datagram: usize,
    leave_drain: Duration,
    /// While it answers true, no member is declared down here (`hold_declarations_while`).
    hold: Option<Hold>,
    /// Gossip addresses whose datagrams are dropped both ways (`refuse`).
    refused: HashSet<SocketAddr>,
}

impl Owner {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    async fn run(mut self, mut cmds: mpsc::Receiver<GossipCmd>, shutdown: CancellationToken) {
        // One byte more than the largest valid datagram, so an oversized one is seen as such
        // (recv truncates to the buffer) and dropped by the envelope check.
        let mut buf = vec![0u8; self.max_datagram + 1];
        loop {
            self.flush();
            let deadline = self
                .core
                .next_deadline()
                .map(|d| self.origin + d)
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                biased;
                // Cancel safe: nothing is half-done when another arm wins.
                _ = shutdown.cancelled() => return,
                // Cancel safe: a timer, recreated each turn from the heap's head.
                _ = tokio::time::sleep_until(deadline) => {
                    let now = self.now();
                    let hold = self.hold.as_ref().is_some_and(|h| (h.0)());
                    self.core.hold_declarations(hold, now);
                    self.core.handle_timers(now);
                }
                // Cancel safe: recv_from either returned a datagram or consumed nothing.
                res = self.socket.recv_from(&mut buf) => match res {
                    Ok((_, from)) if self.refused.contains(&from) => {
                        inc(&self.stats.refused_in);
                    }
                    Ok((n, from)) => {
                        let now = self.now();
                        self.core.handle_datagram(now, from, &buf[..n]);
                    }
                    // ICMP port unreachable from a dead peer shows up here on some systems.
                    Err(e) => tracing::trace!(error = %e, "gossip: recv failed"),
                },
                // Cancel safe: mpsc::Receiver::recv loses nothing when dropped.
                cmd = cmds.recv() => match cmd {
                    Some(GossipCmd::SetState(state)) => self.core.set_state(state),
                    Some(GossipCmd::Seeds(seeds)) => self.core.set_seeds(seeds),
                    Some(GossipCmd::HoldDeclarations(hold)) => self.hold = Some(hold),
                    Some(GossipCmd::Refuse(addrs)) => self.refused = addrs,
                    Some(GossipCmd::Leave(done)) => {
                        self.leave(&shutdown).await;
                        let _ = done.send(());
                        return;
                    }
                    None => return,
                },
            }
        }
    }

    /// foca's `leave_cluster`, then re-gossip the departure every 100 ms for
    /// `leave_drain` so it survives a lost datagram.
    async fn leave(&mut self, shutdown: &CancellationToken) {
        let now = self.now();
        self.core.leave(now);
        self.flush();
        let end = Instant::now() + self.leave_drain;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep_until(end) => return,
                _ = tick.tick() => {
                    let now = self.now();
                    self.core.regossip(now);
                    self.flush();
                }
            }
        }
    }

    /// Sends everything queued without waiting: a full socket buffer drops the datagram
    /// (counted), as UDP would. Publishes a changed membership view.
    fn flush(&mut self) {
        while let Some((to, datagram)) = self.core.poll_transmit() {
            if self.refused.contains(&to) {
                inc(&self.stats.refused_out);
                continue;
            }
            if let Err(e) = self.socket.try_send_to(&datagram, to) {
                inc(&self.stats.send_errors);
                tracing::trace!(%to, error = %e, "gossip: send failed");
            }
        }
        if let Some(m) = self.core.take_membership_change() {
            self.members_tx.send_replace(m);
        }
    }
}
