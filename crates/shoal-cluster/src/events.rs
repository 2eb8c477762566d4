//! Keyspace notifications in a cluster (`shoal_engine::hooks::EventSink`): a key's events
//! are published by the node where its writes run (its owner), and, for what the store
//! notes on its own (expired, evicted, new keys), only by the owner of its slot (a replica's
//! copy expires silently). Each event reaches this node's subscribers at once and every
//! other member's through a bounded queue that a task empties in batches
//! (`router::publish_to_others`), so a subscriber on any node hears every key's events,
//! as on a single Redis.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::Server;

/// Events waiting for the other members, at most; past it they are dropped and counted in
/// `pubsub_undelivered` (fire and forget, as Pub/Sub).
pub const MAX_QUEUED: usize = 65_536;

/// Events sent to the other members in one batch at most.
const BATCH: usize = 256;

struct Sink {
    node: Weak<Server>,
    queue: mpsc::Sender<(Bytes, Bytes)>,
}

impl shoal_engine::hooks::EventSink for Sink {
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

    fn publish(&self, channel: Bytes, message: Bytes) {
        if self.queue.try_send((channel, message)).is_err() {
            if let Some(node) = self.node.upgrade() {
                if let Some(cluster) = &node.cluster {
                    cluster
                        .stats
                        .pubsub_undelivered
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// Installs the sink on `node`'s engine and starts the task that sends its events to the
/// other members (until the node shuts down). Call once, on a cluster node, inside the
/// runtime.
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
            crate::router::publish_to_others(&node, &batch).await;
            batch.clear();
        }
    });
}
