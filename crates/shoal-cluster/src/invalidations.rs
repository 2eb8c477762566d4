//! Client-side caching in a cluster (`shoal_engine::tracking`): the invalidations this node,
//! as the owner of keys, owes the other members whose tracking clients read them, and the
//! flushes that stand in for what cannot be told for sure.
//!
//! - Each invalidation goes to a bounded queue per member, emptied in batches by a task of
//!   its own (`tracking.invalidate by key ...`, internal), in order. A batch that is lost (the
//!   queue was full, the member did not answer) is replaced by a flush (`tracking.flush`:
//!   every tracking client there drops everything), tried until the member takes it or
//!   leaves the cluster.
//! - The write that caused them answers once the members took them ([`telling`]: its reply
//!   waits beside the replicas' acks of `write-ack = all`, `replicate::wait_acks`), as Redis
//!   has sent its invalidations before a write's reply; at most half of
//!   [`Timeouts::half`](crate::Timeouts), and never failing the write (a lost batch's
//!   member is flushed instead).
//! - This node flushes its own tracking clients when the view's placement changes (a key's
//!   new owner does not know who read it), when a member becomes reachable or unreachable
//!   (reads and writes may then go to another copy): [`route_changed`], and when a
//!   connection to a member ends (it may have restarted, forgetting who read what; checked
//!   every [`RETRY`]).
//! - BCAST: the prefixes this node's BCAST clients watch go to every other member
//!   (`tracking.bcast`, internal), again whenever they change, a member joins, or a
//!   connection to it ended; each member then tells this node of every change under them.
//!   CLIENT TRACKING ON ... BCAST answers once the reachable members have them
//!   ([`Registered::wait`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use shoal_resp::Protocol;
use tokio::sync::{mpsc, oneshot};

use crate::message::encode_command;
use crate::Server;

/// Invalidations waiting to be handed to the members' queues, and waiting in each member's
/// queue, at most; past it the member is flushed instead.
pub const MAX_QUEUED: usize = 65_536;

/// Invalidations sent to a member in one request at most.
const BATCH: usize = 256;

/// How often a flush a member did not take is tried again.
const RETRY: Duration = Duration::from_millis(500);

enum Item {
    /// A key it read changed, by its client `by` (0: another); the write waits for it.
    Key {
        key: Bytes,
        by: u64,
        told: Option<Told>,
    },
    /// Everything it read here is void (the write that voided it may wait for it).
    Flush(Option<Told>),
    /// This node's BCAST clients watch these prefixes (as of this generation of them).
    Prefixes(u64, Vec<Bytes>),
}

/// A write's wait for a member to take an invalidation (or flush) it caused: its receiver
/// resolves when this is dropped, that is once the batch holding it was sent (taken or
/// not: a batch the member did not take is followed by a flush), or the item was lost
/// (the member is flushed instead).
type Told = oneshot::Sender<()>;

/// Each member's wait of the last item queued for it by the command running on this thread.
type Waits = Vec<(Arc<str>, oneshot::Receiver<()>)>;

thread_local! {
    /// While [`telling`] runs a command on this thread: its waits.
    static TOLD: RefCell<Option<Waits>> = const { RefCell::new(None) };
}

/// Runs `f` (a command that may write) and returns with its result a receiver per member
/// it queued invalidations for, resolved once that member took them (see [`Told`]): a
/// write's reply that waits for them follows every push it caused on other nodes, as in
/// Redis. Nested calls keep their own; a panic in `f` leaves the outer call's as they were.
pub fn telling<R>(f: impl FnOnce() -> R) -> (R, Vec<oneshot::Receiver<()>>) {
    /// Puts the outer call's waits back, also when `f` panics.
    struct Outer(Option<Option<Waits>>);
    impl Drop for Outer {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                TOLD.with(|t| *t.borrow_mut() = outer);
            }
        }
    }
    let mut outer = Outer(Some(TOLD.with(|t| t.borrow_mut().replace(Vec::new()))));
    let r = f();
    let outer = outer.0.take().expect("set above");
    let waits = TOLD.with(|t| std::mem::replace(&mut *t.borrow_mut(), outer));
    let waits = waits.unwrap_or_default();
    (r, waits.into_iter().map(|(_, rx)| rx).collect())
}

/// A wait for the item being queued for `member`, if a command under [`telling`] runs on
/// this thread. The member's queue goes in order, so only its last item is waited for.
fn told(member: &str) -> Option<Told> {
    TOLD.with(|t| {
        t.borrow_mut().as_mut().map(|waits| {
            let (tx, rx) = oneshot::channel();
            match waits.iter_mut().find(|(m, _)| &**m == member) {
                Some((_, last)) => *last = rx,
                None => waits.push((member.into(), rx)),
            }
            tx
        })
    })
}

/// Which generation of this node's BCAST prefixes each member has taken (`Cluster::bcast`): every change of this node's prefixes takes a new one, so a member that took
/// an older set equal to the current one (BCAST off, then on again, while the "off" is on
/// its way) still counts as lacking them.
#[derive(Debug, Default)]
pub struct Registered {
    taken: Mutex<HashMap<Arc<str>, u64>>,
    changed: tokio::sync::Notify,
    /// The generation of this node's BCAST prefixes (bumped by the tracker's sink).
    generation: Arc<AtomicU64>,
    /// Woken by the sink when the prefixes change: the members are to learn them.
    changed_here: Arc<tokio::sync::Notify>,
}

impl Registered {
    fn taken(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, u64>> {
        self.taken.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True if `member` took generation `generation` of the prefixes or a later one; one
    /// that took none (or is forgotten: its link ended) has them if they are `none`.
    fn has(&self, member: &str, generation: u64, none: bool) -> bool {
        self.taken().get(member).map_or(none, |g| *g >= generation)
    }

    /// Waits until every reachable member has this node's current BCAST prefixes, at most
    /// `limit` (a member that does not answer in time hears of them a moment later).
    pub async fn wait(&self, node: &Server, limit: Duration) {
        let Some(cluster) = &node.cluster else { return };
        // Read before the prefixes: they are then at least this generation's.
        let generation = self.generation.load(Ordering::Acquire);
        let none = node.engine.tracker.bcast_prefixes().is_empty();
        let all_have = || {
            let view = cluster.view();
            (0..view.len() as u16)
                .filter(|&m| m != view.me && view.reachable(m))
                .all(|m| self.has(&view.nodes[usize::from(m)].name, generation, none))
        };
        let _ = tokio::time::timeout(limit, async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if all_have() {
                    return;
                }
                changed.await;
            }
        })
        .await;
    }
}

struct Sink {
    queue: mpsc::Sender<(Arc<str>, Item)>,
    /// `Registered::generation` and `changed_here`.
    generation: Arc<AtomicU64>,
    changed_here: Arc<tokio::sync::Notify>,
    /// Members whose invalidations the queue above could not take: flushed instead.
    lost: Arc<Mutex<Vec<Arc<str>>>>,
}

impl Sink {
    fn put(&self, member: &str, item: Item) {
        let member: Arc<str> = member.into();
        if let Err(e) = self.queue.try_send((member, item)) {
            let (member, _) = e.into_inner();
            let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
            if !lost.contains(&member) {
                lost.push(member);
            }
        }
    }
}

impl shoal_engine::tracking::RemoteSink for Sink {
    fn invalidate(&self, member: &str, key: Bytes, by: u64) {
        let told = told(member);
        self.put(member, Item::Key { key, by, told });
    }

    fn flush(&self, member: &str) {
        self.put(member, Item::Flush(told(member)));
    }

    fn prefixes_changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.changed_here.notify_one();
    }
}

/// Installs the sink on `node`'s tracker and starts the tasks that deliver its invalidations
/// and flush this node's own tracking clients when the placement changes (until the node
/// shuts down). Call once, on a cluster node, inside the runtime.
pub fn start(node: &Arc<Server>) {
    let Some(cluster) = &node.cluster else { return };
    let (queue, mut items) = mpsc::channel(MAX_QUEUED);
    let lost = Arc::new(Mutex::new(Vec::new()));
    node.engine.tracker.set_sink(Box::new(Sink {
        queue,
        generation: cluster.bcast.generation.clone(),
        changed_here: cluster.bcast.changed_here.clone(),
        lost: lost.clone(),
    }));
    // A key's new owner does not know who read it: this node's readers drop everything.
    let mut changes = cluster.subscribe();
    let watcher = node.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = watcher.shutdown.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
            route_changed(&watcher);
        }
    });
    let changed_here = cluster.bcast.changed_here.clone();
    let node = node.clone();
    tokio::spawn(async move {
        let mut members: HashMap<Arc<str>, mpsc::Sender<Item>> = HashMap::new();
        let mut batch = Vec::with_capacity(BATCH);
        let mut tick = tokio::time::interval(RETRY);
        let mut lost_links = 0;
        loop {
            // (ticked, this node's BCAST prefixes changed)
            let (ticked, changed) = tokio::select! {
                _ = node.shutdown.cancelled() => return,
                n = items.recv_many(&mut batch, BATCH) => if n == 0 { return } else { (false, false) },
                _ = changed_here.notified() => (false, true),
                _ = tick.tick() => (true, false),
            };
            let Some(cluster) = &node.cluster else { return };
            let view = cluster.view();
            if ticked {
                // A connection to a member ended: it may have restarted and forgotten what
                // this node's clients read there.
                let now: u64 = (0..view.len() as u16)
                    .filter_map(|m| view.peer(m))
                    .map(|p| p.client.connections_lost())
                    .sum();
                if now > lost_links {
                    route_changed(&node);
                    // A member that restarted has none of this node's BCAST prefixes.
                    cluster.bcast.taken().clear();
                }
                lost_links = now;
            }
            // Each member that lacks this node's current BCAST prefixes is sent them (when
            // they changed, and on each tick until it took them).
            let woken = ticked || changed;
            // The generation read first: the prefixes read after are at least its.
            let generation = cluster.bcast.generation.load(Ordering::Acquire);
            let want = if woken {
                node.engine.tracker.bcast_prefixes()
            } else {
                Vec::new()
            };
            let lacking: Vec<(Arc<str>, Item)> = (0..view.len())
                .filter(|_| woken)
                .filter(|&m| m != usize::from(view.me))
                .map(|m| view.nodes[m].name.as_str())
                .filter(|name| !cluster.bcast.has(name, generation, want.is_empty()))
                .map(|name| (Arc::from(name), Item::Prefixes(generation, want.clone())))
                .collect();
            let in_view = |name: &str| view.nodes.iter().any(|n| n.name == name);
            // A member that left: what it read here is forgotten, its task ends.
            members.retain(|name, _| {
                let stays = in_view(name);
                if !stays {
                    node.engine.tracker.forget_member(name);
                }
                stays
            });
            let owed: Vec<Arc<str>> =
                std::mem::take(&mut *lost.lock().unwrap_or_else(|e| e.into_inner()));
            let flushes = owed.into_iter().map(|m| (m, Item::Flush(None)));
            for (member, item) in batch.drain(..).chain(flushes).chain(lacking) {
                if !in_view(&member) {
                    node.engine.tracker.forget_member(&member);
                    continue;
                }
                let queue = members
                    .entry(member.clone())
                    .or_insert_with(|| spawn_member(&node, member.clone()));
                if queue.try_send(item).is_err() {
                    // Its queue is full: a flush once it has room.
                    let mut lost = lost.lock().unwrap_or_else(|e| e.into_inner());
                    if !lost.contains(&member) {
                        lost.push(member);
                    }
                }
            }
        }
    });
}

/// The queue of member `name`'s invalidations and the task that sends them, batch by batch,
/// in order; it ends when the queue's sender is dropped and the queue is empty.
fn spawn_member(node: &Arc<Server>, name: Arc<str>) -> mpsc::Sender<Item> {
    let (queue, mut items) = mpsc::channel(MAX_QUEUED);
    let node = node.clone();
    tokio::spawn(async move {
        let mut batch = Vec::with_capacity(BATCH);
        // A batch was lost: the member flushes before it hears of anything else.
        let mut owes_flush = false;
        loop {
            let n = if owes_flush {
                // Nothing new within a while: the flush is tried again alone.
                tokio::time::timeout(RETRY, items.recv_many(&mut batch, BATCH))
                    .await
                    .unwrap_or(1)
            } else {
                items.recv_many(&mut batch, BATCH).await
            };
            if n == 0 {
                return;
            }
            // The latest prefixes sent first: they are the member's whole set.
            if let Some((generation, prefixes)) = batch.iter().rev().find_map(|i| match i {
                Item::Prefixes(g, p) => Some((*g, p.clone())),
                _ => None,
            }) {
                if send(&node, &name, Tell::Prefixes(prefixes)).await {
                    if let Some(cluster) = &node.cluster {
                        let mut taken = cluster.bcast.taken();
                        let had = taken.entry(name.clone()).or_insert(generation);
                        *had = (*had).max(generation);
                        drop(taken);
                        cluster.bcast.changed.notify_waiters();
                    }
                }
                batch.retain(|i| !matches!(i, Item::Prefixes(..)));
                if batch.is_empty() && !owes_flush {
                    continue;
                }
            }
            let mut waits = Vec::new();
            let mut changes = Vec::with_capacity(batch.len());
            let mut flushes = owes_flush;
            for item in batch.drain(..) {
                match item {
                    Item::Key { key, by, told } => {
                        changes.push((key, by));
                        waits.extend(told);
                    }
                    Item::Flush(told) => {
                        flushes = true;
                        waits.extend(told);
                    }
                    Item::Prefixes(..) => {}
                }
            }
            // A flush covers every invalidation before and with it.
            let tell = if flushes {
                Tell::Flush
            } else {
                Tell::Changes(changes)
            };
            owes_flush = !send(&node, &name, tell).await;
            // Sent (or not taken: a flush follows): the writes waiting for it answer.
            drop(waits);
        }
    });
    queue
}

/// What a member is told.
enum Tell {
    /// (stored key, its client that changed it or 0): `tracking.invalidate`.
    Changes(Vec<(Bytes, u64)>),
    /// `tracking.flush`.
    Flush,
    /// `tracking.bcast`: this node's BCAST prefixes.
    Prefixes(Vec<Bytes>),
}

/// Tells member `name` (this node too: one of its clients read on another copy here);
/// true if it took it.
async fn send(node: &Arc<Server>, name: &str, tell: Tell) -> bool {
    let Some(cluster) = &node.cluster else {
        return false;
    };
    let view = cluster.view();
    let Some(m) = (0..view.len() as u16).find(|&m| view.nodes[usize::from(m)].name == name) else {
        // It left: nothing to tell.
        return true;
    };
    if m == view.me {
        let (engine, limit) = (&node.engine, pubsub_limit(node));
        match tell {
            Tell::Changes(c) => engine
                .tracker
                .invalidated_elsewhere(&c, &engine.pubsub, limit),
            Tell::Flush => engine.tracker.flushed_elsewhere(&engine.pubsub, limit),
            // Its own clients are told by its own tracker.
            Tell::Prefixes(_) => {}
        }
        return true;
    }
    let Some(peer) = view.peer(m) else {
        return false;
    };
    let args = match tell {
        Tell::Flush => vec![Bytes::from_static(b"tracking.flush")],
        Tell::Prefixes(prefixes) => {
            let me = Bytes::copy_from_slice(view.myself.name.as_bytes());
            [Bytes::from_static(b"tracking.bcast"), me]
                .into_iter()
                .chain(prefixes)
                .collect()
        }
        Tell::Changes(changes) => {
            let mut args = Vec::with_capacity(1 + 2 * changes.len());
            args.push(Bytes::from_static(b"tracking.invalidate"));
            for (key, by) in changes {
                args.push(Bytes::from(by.to_string()));
                args.push(key);
            }
            args
        }
    };
    let body = encode_command(Protocol::Resp2, 0, None, &args, cluster.deadline_ms(), 0);
    matches!(peer.request(view.id, body).await, Ok(r) if r.body.starts_with(b"+OK"))
}

/// Where this node's requests for some keys go may have changed (a new placement, a member
/// reached again or no longer): its tracking clients drop everything they cached, since
/// the copy they read from may not tell them of the next change.
/// A read on its way learns of it too (`Tracker::arrived`).
pub fn route_changed(node: &Server) {
    let limit = pubsub_limit(node);
    node.engine
        .tracker
        .flushed_elsewhere(&node.engine.pubsub, limit);
}

/// The `pubsub` class of `client-output-buffer-limit`, which a client's invalidations count
/// against.
fn pubsub_limit(node: &Server) -> shoal_engine::config::ClassLimit {
    node.engine
        .with_settings(|s| s.client_output_buffer_limit.pubsub)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telling_waits_once_per_member_keeps_nesting_apart_and_survives_a_panic() {
        assert!(told("n1").is_none(), "nothing is captured outside telling");
        let ((), outer) = telling(|| {
            // Two items for n1 (only the last is waited for), one for n2.
            let first = told("n1").expect("captured");
            let _ = told("n2");
            let (inner_kept, inner) = telling(|| told("n3"));
            assert_eq!(inner.len(), 1, "the inner call's own");
            drop(inner_kept);
            let last = told("n1");
            // The replaced wait's sender has no receiver left; the last one has.
            assert!(first.is_closed());
            assert!(last.is_some_and(|t| !t.is_closed()));
        });
        assert_eq!(outer.len(), 2, "n1 and n2, not n3");
        let panicked = std::panic::catch_unwind(|| {
            telling(|| {
                let _ = told("n1");
                panic!("a command that panics");
            })
        });
        assert!(panicked.is_err());
        assert!(told("n1").is_none(), "the capture ended with the panic");
    }
}
