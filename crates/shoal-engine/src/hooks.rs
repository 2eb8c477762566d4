//! What the command layer (`cmd`) needs from the layer above it, declared here so that
//! `cmd` names no cluster or runtime type: that layer implements these traits (`Host` for the
//! node around the engine, `ClusterInfo` for its cluster, which a single node has none of).

/// A node as CLUSTER SLOTS and CLUSTER SHARDS name it: the address Redis Cluster clients use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotNode {
    pub id: String,
    pub ip: String,
    pub port: u16,
}

/// A run of consecutive slots served by the same nodes, the one that answers writes first
/// (CLUSTER SLOTS's master), then any replicas clients may read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotRange {
    pub first: u16,
    pub last: u16,
    pub nodes: Vec<SlotNode>,
}

/// The cluster as CLUSTER and INFO describe it, and the one change CLUSTER makes (FORGET).
pub trait ClusterInfo: Send + Sync {
    /// The slot map Redis Cluster clients are given (CLUSTER SLOTS, SHARDS), in slot order;
    /// `None` while this node looks for its cluster (it has no map to give).
    fn slot_ranges(&self) -> Option<Vec<SlotRange>>;
    /// CLUSTER INFO's text.
    fn cluster_info(&self) -> String;
    /// CLUSTER NODES's text, with `now_ms` as the ping times.
    fn cluster_nodes(&self, now_ms: u64) -> String;
    /// CLUSTER MYID: this node's 40-character id.
    fn my_id(&self) -> String;
    /// INFO's cluster section, after `cluster_enabled`.
    fn info_lines(&self, out: &mut String);
    /// CLUSTER FORGET: stop counting the member with node id `id`, declared down or
    /// suspected, among the members this node needs a majority of. `Err` holds the error
    /// reply's text.
    fn forget(&self, id: &str) -> Result<(), String>;
    /// WAIT: how many copies besides the owner every write this node answered is known to
    /// be on (`write-ack = all` with every member reachable: every copy acknowledged it
    /// first); `None` when writes may be acknowledged before their replicas have them.
    fn acknowledged_replicas(&self) -> Option<i64> {
        None
    }
    /// INFO's `cluster_connections`: the inter-node connections open now, made by this node
    /// or accepted from the others.
    fn connections(&self) -> u64 {
        0
    }
    /// `min-replicas-to-write`: how many copies of a key the cluster keeps besides the
    /// owner's, among the members its view holds as up (Redis's "good replicas"; the same
    /// for every slot).
    fn good_replicas(&self) -> usize {
        0
    }
}

/// The part of the local keys a fan-out's share covers (DBSIZE, KEYS, SCAN, RANDOMKEY run on
/// the slots this node answers for).
pub trait SlotScope {
    /// True if this node answers for `slot` in this fan-out.
    fn includes(&self, slot: u16) -> bool;
}

/// What a command may ask of the node it runs on beyond the engine itself: the cluster
/// (CLUSTER, INFO's cluster section) and the node's shutdown (SHUTDOWN). The layer above the
/// engine implements it; the engine names no type of that layer.
pub trait Host: Sync {
    /// The engine commands run on.
    fn engine(&self) -> &crate::engine::Engine;
    /// The cluster this node is a member of (`None` for a single node).
    fn cluster(&self) -> Option<&dyn ClusterInfo>;
    /// Asks the node to stop (SHUTDOWN): stop accepting, finish, exit.
    fn shutdown(&self);
    /// Shows a command run on behalf of `addr` (a script's calls: `lua`) to the node's
    /// MONITOR clients, if any.
    fn monitor(&self, _addr: &str, _args: &[bytes::Bytes]) {}
    /// Runs the node's cron now rather than at its next tick (a BGSAVE asked for starts at
    /// once, as Redis forks at once).
    fn wake_cron(&self) {}
    /// True while MONITOR clients would be shown what [`Host::monitor`] is given.
    fn monitoring(&self) -> bool {
        false
    }
}
