//! Replication: after a write runs at a key's owner, the key's resulting state (value,
//! flags, absolute expiry, version; or a tombstone) goes to the key's other copies.
//!
//! One bounded queue and one sender task per peer. The task takes whatever is queued (up to
//! `BATCH_BYTES`), sends it as one REPLICATE message, waits for the answer, and repeats, so
//! batches grow with the load and one peer never has more than one batch in flight. A small
//! batch that no client waits for lingers a millisecond first, for more to join it
//! ([`lingers`]), as Redis writes its replication stream once per event-loop turn. The
//! queue is bounded in items and in bytes; when full, the state is dropped and counted
//! (`shoal_repl_dropped`): a slow or dead replica never blocks or grows the owner. The
//! receiver applies each state with last-writer-wins on versions (`Store::apply`), so a
//! batch that arrives late or twice changes nothing newer.
//!
//! A barrier can follow the states through the queue ([`Queue::drained`]): it resolves
//! once the peer answered for every state queued before it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use shoal_store::{key_slot, KeyState};
use shoal_wire::WireError;

use crate::relay::Route;
use tokio::sync::{mpsc, oneshot};

use super::message::{change_len, decode_replicate_result, encode_replicate_at, Change};
use super::{ClusterStats, View};
use crate::Server;

/// Items one peer's queue holds at most.
const QUEUE_ITEMS: usize = 65_536;
/// Bytes one peer's queue holds at most (a single larger state is still taken when the queue
/// is empty).
const QUEUE_BYTES: usize = 64 << 20;
/// Largest batch sent at once (a single larger state goes alone).
const BATCH_BYTES: usize = 1 << 20;
/// How long a small batch nobody waits for lingers for more states to join it.
const LINGER: std::time::Duration = std::time::Duration::from_millis(1);
/// Batches of at least this many bytes go at once.
const LINGER_BELOW: usize = 64 << 10;

/// Whether a batch of `bytes` waits for more (up to [`LINGER`] from when it started to)
/// before it goes: only a small one that nobody waits for (no `write-ack = all` write, no
/// barrier). Unpipelined writes otherwise go a few at a time, and each batch costs its
/// replica a wake-up, a read and an answer, and this node another for the answer.
fn lingers(bytes: usize, waited_for: bool) -> bool {
    bytes > 0 && bytes < LINGER_BELOW && !waited_for
}

/// One key's change (its state, or a delta) on its way to one replica.
pub struct ReplItem {
    pub key: Bytes,
    pub change: Change,
    /// With `write-ack = all`: told how the replica answered.
    pub ack: Option<oneshot::Sender<Ack>>,
}

/// What a replication queue carries: key states, and barriers that resolve once every
/// state queued before them has been answered for ([`Queue::drained`]).
enum Msg {
    Item(ReplItem),
    Barrier(oneshot::Sender<()>),
}

/// The sending side of one peer's replication queue.
pub struct Queue {
    tx: mpsc::Sender<Msg>,
    bytes: Arc<AtomicUsize>,
    /// What the sender task needs, until the first state or barrier starts it.
    unstarted: Mutex<Option<Unstarted>>,
    started: AtomicBool,
}

struct Unstarted {
    rx: mpsc::Receiver<Msg>,
    client: Arc<Route>,
    stats: Arc<ClusterStats>,
    epoch: Arc<AtomicU64>,
}

impl Queue {
    /// The peer's queue. Its sender task starts with the first state or barrier queued, on
    /// that caller's runtime: in the daemon a worker thread whose clients write, so its
    /// writes, and the link they go on, stay on its thread (`shoal_node::workers`). It ends
    /// when the queue is dropped.
    pub fn start(client: Arc<Route>, stats: Arc<ClusterStats>, epoch: Arc<AtomicU64>) -> Queue {
        let (tx, rx) = mpsc::channel(QUEUE_ITEMS);
        Queue {
            tx,
            bytes: Arc::new(AtomicUsize::new(0)),
            unstarted: Mutex::new(Some(Unstarted {
                rx,
                client,
                stats,
                epoch,
            })),
            started: AtomicBool::new(false),
        }
    }

    /// Starts the sender task if it has not started (only inside a runtime: outside, what
    /// is queued waits for the next call from inside one).
    fn run_sender(&self) {
        if self.started.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut unstarted = self.unstarted.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(u) = unstarted.take() {
            runtime.spawn(run(u.rx, u.client, u.stats, u.epoch, self.bytes.clone()));
        }
        self.started.store(true, Ordering::Release);
    }

    /// Resolves once the peer answered for every state in the queue when called (or the
    /// queue's task ended): a barrier goes through the queue behind them. A leaving node
    /// waits for this before it sends a command on, so its last writes reach the next copy
    /// before the command does. Never resolves when the queue is full (callers bound the
    /// wait).
    pub fn drained(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let queued = self.tx.try_send(Msg::Barrier(tx)).is_ok();
        self.run_sender();
        async move {
            if queued {
                let _ = rx.await;
            } else {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Bytes waiting in the queue.
    pub fn queued_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// True when nothing waits in the queue (a batch may still be on its way).
    pub fn is_empty(&self) -> bool {
        self.bytes.load(Ordering::Relaxed) == 0
    }

    /// Queues `item`, or drops it (counted) when the queue is full.
    fn push(&self, item: ReplItem, stats: &ClusterStats) {
        let size = change_len(&item.key, &item.change);
        let queued = self.bytes.load(Ordering::Relaxed);
        if queued > 0 && queued + size > QUEUE_BYTES {
            stats.repl_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.bytes.fetch_add(size, Ordering::Relaxed);
        match self.tx.try_send(Msg::Item(item)) {
            Ok(()) => {
                stats.repl_queued.fetch_add(1, Ordering::Relaxed);
                self.run_sender();
            }
            Err(_) => {
                self.bytes.fetch_sub(size, Ordering::Relaxed);
                stats.repl_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

async fn run(
    mut rx: mpsc::Receiver<Msg>,
    client: Arc<Route>,
    stats: Arc<ClusterStats>,
    epoch: Arc<AtomicU64>,
    bytes: Arc<AtomicUsize>,
) {
    let mut batch = Vec::new();
    let mut barriers = Vec::new();
    while let Some(first) = rx.recv().await {
        // Collect a batch; a barrier ends it (what follows it goes in the next one).
        let mut size = 0;
        let mut next = Some(first);
        let mut waited_for = false;
        // One timer for the batch's whole linger (armed when it starts to linger).
        let linger = tokio::time::sleep(LINGER);
        tokio::pin!(linger);
        let mut lingering = false;
        loop {
            while let Some(msg) = next.take() {
                match msg {
                    Msg::Item(item) => {
                        size += change_len(&item.key, &item.change);
                        waited_for |= item.ack.is_some();
                        batch.push(item);
                    }
                    Msg::Barrier(done) => {
                        barriers.push(done);
                        break;
                    }
                }
                if size < BATCH_BYTES {
                    next = rx.try_recv().ok();
                }
            }
            // Whatever joined while it lingered is judged too: a write someone waits for,
            // or a barrier, ends the wait at once.
            if !lingers(size, waited_for || !barriers.is_empty()) {
                break;
            }
            if !lingering {
                lingering = true;
                linger.as_mut().reset(tokio::time::Instant::now() + LINGER);
            }
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(msg) => next = Some(msg),
                    None => break,
                },
                _ = linger.as_mut() => break,
            }
        }
        if !batch.is_empty() {
            bytes.fetch_sub(size, Ordering::Relaxed);
            let ack = send_batch(&client, &stats, &epoch, &batch).await;
            for item in batch.drain(..) {
                if let Some(tx) = item.ack {
                    let _ = tx.send(ack);
                }
            }
        }
        for done in barriers.drain(..) {
            let _ = done.send(());
        }
    }
}

/// How a replica answered for a state it was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    /// It applied the state (or holds a newer one).
    Applied,
    /// Its process is gone (connection refused or lost): it holds no copy that could be
    /// read stale, and its next incarnation is refilled by the hand-off.
    Gone,
    /// It refused the state, failed the request or did not answer in time: it may be alive
    /// and hold an older state.
    Failed,
}

/// Sends one batch as a REPLICATE message; tells how the peer answered.
async fn send_batch(
    client: &Route,
    stats: &ClusterStats,
    epoch: &AtomicU64,
    batch: &[ReplItem],
) -> Ack {
    // Stamped with this node's clock: the replica learns how far ahead of its own it runs
    // (the lead its failovers order past, `Cluster::failover_ahead_ms`).
    let body = encode_replicate_at(
        shoal_engine::clock::now_ms(),
        batch.iter().map(|i| (&i.key[..], &i.change)),
    );
    match client.request(epoch.load(Ordering::Relaxed), body).await {
        Ok(r) if decode_replicate_result(&r.body).is_some() => Ack::Applied,
        Ok(r) => {
            stats
                .repl_dropped
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            tracing::warn!(
                peer = %client.direct().addr(),
                reply = %String::from_utf8_lossy(&r.body[..r.body.len().min(200)]),
                "replication batch refused"
            );
            Ack::Failed
        }
        Err(e) => {
            stats
                .repl_dropped
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
            tracing::debug!(peer = %client.direct().addr(), error = %e, "replication batch failed");
            match e {
                WireError::PeerUnavailable(u) if u.refused() || u.lost() => Ack::Gone,
                _ => Ack::Failed,
            }
        }
    }
}

/// The replicas' acks of a write (with `write-ack = all`).
/// What a write's reply waits for ([`wait_acks`]).
#[derive(Default)]
pub struct Acks {
    /// With `write-ack = all`: one per state queued for a replica.
    pub replicas: Vec<oneshot::Receiver<Ack>>,
    /// While clients track: one per member told of its invalidations
    /// (`invalidations::telling`); never a reason to fail the write.
    pub told: Vec<oneshot::Receiver<()>>,
    /// Bytes of the states `replicas` wait for: a large one gets the time to travel
    /// ([`wait_acks`]).
    pub bytes: usize,
}

impl Acks {
    /// Only the members told of invalidations.
    pub fn told(told: Vec<oneshot::Receiver<()>>) -> Acks {
        Acks {
            replicas: Vec::new(),
            told,
            bytes: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty() && self.told.is_empty()
    }
}

/// After a write ran here: queues the resulting state of each of `keys` for the key's other
/// copies under `view` (the view the command was routed under) and under `now` (the view
/// current after it ran). With `want_ack`, returns one receiver per queued state (resolved
/// once the replica answered, whether it applied the state, held a newer one or refused a
/// slot its own view does not give it yet; a dropped state's receiver resolves at once with
/// an error). Sending to both closes a race with the hand-off: a slot the hand-off under
/// `now` already streamed to a new copy would otherwise never carry this write there, and
/// that copy, the slot's new owner, would answer reads with the older value. Awaiting the
/// new copy too keeps read-your-writes there: once the client has its reply, the new owner
/// holds the write.
#[allow(clippy::too_many_arguments)]
pub fn replicate_keys<'a>(
    node: &Server,
    view: &View,
    now: &View,
    stats: &ClusterStats,
    keys: impl Iterator<Item = &'a Bytes>,
    now_ms: u64,
    want_ack: bool,
    delta: Option<(&Bytes, Change)>,
) -> Acks {
    let mut acks = Vec::new();
    let mut bytes = 0;
    if view.placement.width() < 2 && now.placement.width() < 2 {
        return Acks::default();
    }
    let same = std::ptr::eq(view, now) || view.id == now.id;
    for key in keys {
        let slot = key_slot(key);
        // A collection's write as its command when the caller made one (see `Change`),
        // else the key's whole state.
        let change = match &delta {
            Some((k, d)) if *k == key => {
                stats.repl_deltas.fetch_add(1, Ordering::Relaxed);
                d.clone()
            }
            _ => {
                let state = node.engine.store.key_state(key, now_ms);
                if state == KeyState::Absent {
                    continue;
                }
                Change::State(state)
            }
        };
        // Counted once, however many replicas it goes to: they take it side by side.
        if want_ack {
            bytes += change_len(key, &change);
        }
        let mut send = |peer: &crate::Peer| {
            let ack = want_ack.then(|| {
                let (tx, rx) = oneshot::channel();
                acks.push(rx);
                tx
            });
            peer.repl.push(
                ReplItem {
                    key: key.clone(),
                    change: change.clone(),
                    ack,
                },
                stats,
            );
        };
        let routed = view.owners(slot);
        for &m in routed.iter().filter(|&&m| m != view.me) {
            if let Some(peer) = view.peer(m) {
                send(peer);
            }
        }
        if same {
            continue;
        }
        let routed_to = |n: &crate::NodeInfo| {
            routed
                .iter()
                .any(|&m| view.nodes[usize::from(m)].same_incarnation(n))
        };
        for &m in now.owners(slot).iter().filter(|&&m| m != now.me) {
            if routed_to(&now.nodes[usize::from(m)]) {
                continue;
            }
            if let Some(peer) = now.peer(m) {
                send(peer);
            }
        }
    }
    Acks {
        replicas: acks,
        told: Vec::new(),
        bytes,
    }
}

/// Waits for every replica's answer, at most `wait` (half the inter-node timeout,
/// `Timeouts::half`: a stalled replica delays the reply instead of making the forwarding
/// node give up on the owner). True if every replica applied the write or is gone; false if
/// one may be alive without it (it refused it, failed, or did not answer in time), and a
/// read that fails over to it could then miss the write: the client is told
/// ([`unconfirmed`]). Beside them, the members told of the write's invalidations, at most
/// `wait / 2` from now, whatever becomes of them (a member that did not take them in time
/// is flushed if its batch is lost: the write stands).
pub async fn wait_acks(acks: Acks, wait: std::time::Duration) -> bool {
    let Acks {
        replicas,
        told,
        bytes,
    } = acks;
    // A large state gets half its transfer allowance more: the forwarding node, whose
    // timer has the whole allowance for the request that carried it, still waits.
    let wait = wait + shoal_wire::transfer_allowance(bytes) / 2;
    let replicas = async {
        if replicas.is_empty() {
            return true;
        }
        let all = async {
            let mut confirmed = true;
            for ack in replicas {
                confirmed &= matches!(ack.await, Ok(Ack::Applied | Ack::Gone));
            }
            confirmed
        };
        tokio::time::timeout(wait, all).await.unwrap_or(false)
    };
    let told = async {
        if !told.is_empty() {
            let all = async {
                for member in told {
                    let _ = member.await;
                }
            };
            let _ = tokio::time::timeout(wait / 2, all).await;
        }
    };
    tokio::join!(replicas, told).0
}

/// The reply to a write with `write-ack = all` that a replica did not confirm
/// ([`wait_acks`]): Redis's error for a write without enough replicas, saying what happened.
/// The write ran here and stays (it may reach the replica later, or by the hand-off); an
/// error reply (the write did nothing) is kept as it is.
pub fn unconfirmed(reply: Bytes) -> Bytes {
    if reply.starts_with(b"-") {
        return reply;
    }
    Bytes::from_static(UNCONFIRMED)
}

const UNCONFIRMED: &[u8] = b"-NOREPLICAS Not enough good replicas to write: it ran on the key's \
owner, but a replica did not confirm it in time (it may have one copy only)\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_small_batch_nobody_waits_for_lingers() {
        assert!(lingers(100, false));
        assert!(lingers(LINGER_BELOW - 1, false));
        // Large enough, or waited for (write-ack = all, a barrier): goes.
        assert!(!lingers(LINGER_BELOW, false));
        assert!(!lingers(100, true));
        // Nothing to send (only a barrier): nothing to linger for.
        assert!(!lingers(0, false));
    }
}
