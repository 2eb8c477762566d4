//! Keyspace notifications in a cluster (`shoal_engine::notify::EventSink`): a key's events
//! are published by the node where its command runs (its owner, or the copy standing in for
//! it), and what the store notes outside any command (active expiry, eviction by the cron)
//! only by the owner of the key's slot (a replica's copy expires silently). Each event
//! reaches this node's subscribers at once and every other member's through a bounded queue
//! per member, emptied in batches by a task of its own (`router::publish_to`), so a member
//! that is slow or out of reach delays and loses only its own events. A subscriber on any
//! node so hears every key's events, as on a single Redis. What a script publishes
//! (`shoal_engine::cmd::pubsub`) goes the same way, since a script runs where its keys are,
//! not through the router's fan-out.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::Server;

/// Events waiting to be handed to the members' queues, and waiting in each member's queue,
/// at most; past it they are dropped and counted in `pubsub_undelivered` (fire and forget,
/// as Pub/Sub).
pub const MAX_QUEUED: usize = 65_536;

/// Events sent to a member in one batch at most.
const BATCH: usize = 256;

/// A message for the other members: (shard channel, channel, message).
type Event = (bool, Bytes, Bytes);

struct Sink {
    node: Weak<Server>,
    queue: mpsc::Sender<Event>,
}

impl Sink {
    fn count_lost(&self, n: u64) {
        if let Some(node) = self.node.upgrade() {
            if let Some(cluster) = &node.cluster {
                cluster
                    .stats
                    .pubsub_undelivered
                    .fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

impl shoal_engine::notify::EventSink for Sink {
    fn speaks_for(&self, slot: u16) -> bool {
        let Some(node) = self.node.upgrade() else {
            return false;
        };
        let Some(cluster) = &node.cluster else {
            return true;
        };
        let view = cluster.view();
        view.owners(slot).first() == Some(&view.me)
    }

    fn publish(&self, shard: bool, channel: Bytes, message: Bytes) {
        if self.queue.try_send((shard, channel, message)).is_err() {
            self.count_lost(1);
        }
    }
}

/// Installs the sink on `node`'s engine and starts the task that hands its events to the
/// other members' queues (until the node shuts down). Call once, on a cluster node, inside
/// the runtime.
pub fn start(node: &Arc<Server>) {
    let (queue, mut events) = mpsc::channel(MAX_QUEUED);
    let sink = Sink {
        node: Arc::downgrade(node),
        queue,
    };
    if node.engine.event_sink.set(Box::new(sink)).is_err() {
        return;
    }
    let node = node.clone();
    tokio::spawn(async move {
        let mut members: HashMap<String, mpsc::Sender<Event>> = HashMap::new();
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                _ = node.shutdown.cancelled() => return,
                n = events.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return;
                    }
                }
            }
            let Some(cluster) = &node.cluster else { return };
            let view = cluster.view();
            let others: Vec<&str> = (0..view.len())
                .filter(|&m| m != usize::from(view.me))
                .map(|m| view.nodes[m].name.as_str())
                .collect();
            // A member that left: its task ends once its queue is empty.
            members.retain(|name, _| others.contains(&name.as_str()));
            let mut lost = 0;
            for name in others {
                let queue = members
                    .entry(name.to_string())
                    .or_insert_with(|| spawn_member(&node, name.to_string()));
                for e in &batch {
                    if queue.try_send(e.clone()).is_err() {
                        lost += 1;
                    }
                }
            }
            if lost > 0 {
                cluster
                    .stats
                    .pubsub_undelivered
                    .fetch_add(lost, Ordering::Relaxed);
            }
            batch.clear();
        }
    });
}

/// The queue of member `name`'s events and the task that sends them, batch by batch, in
/// order; it ends when the queue's sender is dropped and the queue is empty.
fn spawn_member(node: &Arc<Server>, name: String) -> mpsc::Sender<Event> {
    let (queue, mut events) = mpsc::channel(MAX_QUEUED);
    let node = node.clone();
    tokio::spawn(async move {
        let mut batch = Vec::with_capacity(BATCH);
        while events.recv_many(&mut batch, BATCH).await > 0 {
            crate::router::publish_to(&node, &name, &batch).await;
            batch.clear();
        }
    });
    queue
}
