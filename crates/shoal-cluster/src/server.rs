//! `Server`: one running node as the layers above the engine see it: the engine, the
//! cluster it is a member of (if any), and its shutdown signal.

use tokio_util::sync::CancellationToken;

use super::Cluster;
use shoal_engine::engine::Engine;
use shoal_engine::hooks::{ClusterInfo, Host};
use shoal_store::PREFETCH_MAX;

/// One node: the engine commands run on, plus where they run in a cluster.
pub struct Server {
    /// One node's data, settings, clients and statistics.
    pub engine: Engine,
    /// The cluster side (placement, peers, replication); `None` for a single node.
    pub cluster: Option<Cluster>,
    /// Cancelled to stop the node: by the daemon on SIGTERM/SIGINT, or by SHUTDOWN.
    pub shutdown: CancellationToken,
    /// The connections that asked for MONITOR.
    pub monitors: super::monitor::Monitors,
    /// Wakes the node's cron before its tick ([`Host::wake_cron`]).
    pub cron_wake: tokio::sync::Notify,
}

impl Server {
    pub fn new(engine: Engine, cluster: Option<Cluster>) -> Server {
        Server {
            engine,
            cluster,
            shutdown: CancellationToken::new(),
            monitors: Default::default(),
            cron_wake: tokio::sync::Notify::new(),
        }
    }

    /// Starts loading the data of `keys` of database `db`, the keys of a client's requests
    /// about to run ([`shoal_store::Store::prefetch`], at most its `PREFETCH_MAX`). In a
    /// cluster only those whose slot this node owns: the others are sent to their owners,
    /// which look ahead themselves (`PeerService::look_ahead`).
    pub fn prefetch(&self, db: u8, keys: &[&[u8]]) {
        // One key has nothing to overlap with: spare an unpipelined request the view, its
        // slot and a numbered database's buffer.
        if keys.len() < 2 {
            return;
        }
        if db == 0 {
            return self.prefetch_stored(keys);
        }
        // A numbered database's keys are stored under its prefix: their stored forms side
        // by side in one buffer.
        let n = keys.len().min(PREFETCH_MAX);
        let mut buf = Vec::with_capacity(keys[..n].iter().map(|k| k.len() + 4).sum());
        let mut ends = [0; PREFETCH_MAX];
        for (end, key) in ends.iter_mut().zip(&keys[..n]) {
            shoal_store::push_stored_key(&mut buf, db, key);
            *end = buf.len();
        }
        let mut stored: [&[u8]; PREFETCH_MAX] = [&[]; PREFETCH_MAX];
        let mut start = 0;
        for (key, &end) in stored.iter_mut().zip(&ends[..n]) {
            *key = &buf[start..end];
            start = end;
        }
        self.prefetch_stored(&stored[..n]);
    }

    /// [`Server::prefetch`] of keys as stored.
    fn prefetch_stored(&self, keys: &[&[u8]]) {
        let Some(cluster) = &self.cluster else {
            self.engine.store.prefetch(keys.iter().copied());
            return;
        };
        let view = cluster.view_now();
        let mine = keys.iter().copied().filter(|key| {
            view.placement.owners(shoal_store::key_slot(key)).first() == Some(&view.me)
        });
        self.engine.store.prefetch(mine);
    }
}

impl Host for Server {
    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn cluster(&self) -> Option<&dyn ClusterInfo> {
        self.cluster.as_ref().map(|c| c as &dyn ClusterInfo)
    }

    fn shutdown(&self) {
        self.shutdown.cancel();
    }

    fn monitor(&self, addr: &str, args: &[bytes::Bytes]) {
        if self.monitors.active() {
            let micros = shoal_engine::clock::now_us();
            self.monitors.feed(crate::monitor::line(micros, addr, args));
        }
    }

    fn monitoring(&self) -> bool {
        self.monitors.active()
    }

    fn wake_cron(&self) {
        self.cron_wake.notify_one();
    }
}
