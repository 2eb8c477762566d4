//! What the command layer (`cmd`) needs from the cluster layer above it, declared here so
//! that `cmd` names no cluster type: the cluster implements these traits, and a single node
//! has no implementation (`Node::cluster_info` is `None`).

/// The cluster as CLUSTER and INFO describe it.
pub trait ClusterInfo: Send + Sync {
    /// CLUSTER INFO's text.
    fn cluster_info(&self) -> String;
    /// CLUSTER NODES's text, with `now_ms` as the ping times.
    fn cluster_nodes(&self, now_ms: u64) -> String;
    /// CLUSTER MYID: this node's 40-character id.
    fn my_id(&self) -> String;
    /// INFO's cluster section, after `cluster_enabled`.
    fn info_lines(&self, out: &mut String);
}

/// The part of the local keys a fan-out's share covers (DBSIZE, KEYS, SCAN, RANDOMKEY run on
/// the slots this node answers for).
pub trait SlotScope {
    /// True if this node answers for `slot` in this fan-out.
    fn includes(&self, slot: u16) -> bool;
}
