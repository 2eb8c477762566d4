//! A node's identity in the gossip layer: stable name, advertised addresses, generation.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::GossipError;

/// Longest node name, in bytes (it travels behind a one-byte length).
pub const MAX_NAME_LEN: usize = 255;

/// Who a cluster member is, as foca sees it.
///
/// Membership (and, in the node, placement) is keyed by [`NodeId::name`]: foca's
/// `Identity::Addr` is the name, so at most one identity per name is ever tracked. The
/// `generation` tells incarnations of the same name apart: a restarted node starts with a
/// higher generation (the caller picks it, e.g. Unix milliseconds at start) and so replaces
/// its old self at once instead of waiting for the old identity to be declared down.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NodeId {
    name: Arc<str>,
    gossip: SocketAddr,
    client: SocketAddr,
    cluster: SocketAddr,
    /// The port (on the client address's IP) that serves Redis Cluster clients; 0 = none.
    cluster_client_port: u16,
    generation: u64,
}

impl NodeId {
    /// A node identity. `name` MUST be 1..=255 bytes; it is the node's stable key.
    pub fn new(
        name: &str,
        gossip: SocketAddr,
        client: SocketAddr,
        cluster: SocketAddr,
        generation: u64,
    ) -> Result<Self, GossipError> {
        if name.is_empty() || name.len() > MAX_NAME_LEN {
            return Err(GossipError::BadName);
        }
        Ok(Self::new_unchecked(
            name.into(),
            gossip,
            client,
            cluster,
            generation,
        ))
    }

    pub(crate) fn new_unchecked(
        name: Arc<str>,
        gossip: SocketAddr,
        client: SocketAddr,
        cluster: SocketAddr,
        generation: u64,
    ) -> Self {
        Self {
            name,
            gossip,
            client,
            cluster,
            cluster_client_port: 0,
            generation,
        }
    }

    /// The same identity, announcing `port` (0 = none) as its Redis Cluster client port.
    pub fn with_cluster_client_port(self, port: u16) -> Self {
        Self {
            cluster_client_port: port,
            ..self
        }
    }

    /// The port that serves Redis Cluster clients, on the client address's IP; 0 = none.
    pub fn cluster_client_port(&self) -> u16 {
        self.cluster_client_port
    }

    /// The identity used to announce to a seed whose name is not known yet: an empty name
    /// that the receiving codec replaces with its own (see `codec`).
    pub(crate) fn seed_placeholder(gossip: SocketAddr) -> Self {
        Self::new_unchecked("".into(), gossip, gossip, gossip, 0)
    }

    /// The stable node name (membership key).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn name_arc(&self) -> &Arc<str> {
        &self.name
    }

    /// Where this node's gossip socket listens.
    pub fn gossip_addr(&self) -> SocketAddr {
        self.gossip
    }

    /// Where this node serves RESP clients.
    pub fn client_addr(&self) -> SocketAddr {
        self.client
    }

    /// Where this node serves inter-node (cluster) traffic.
    pub fn cluster_addr(&self) -> SocketAddr {
        self.cluster
    }

    /// Incarnation counter of this name; higher wins.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The same node with the next generation.
    pub fn next_generation(&self) -> Self {
        Self {
            generation: self.generation.wrapping_add(1),
            ..self.clone()
        }
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}@{}", self.name, self.generation, self.gossip)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl foca::Identity for NodeId {
    type Addr = Arc<str>;

    /// A node declared down (false suspicion, partition) comes back at once as the next
    /// generation of itself.
    fn renew(&self) -> Option<Self> {
        Some(self.next_generation())
    }

    fn addr(&self) -> Arc<str> {
        self.name.clone()
    }

    /// Two identities with one name: the higher generation is the live one. Equal
    /// generations with different addresses mean two processes claim the same name and
    /// generation (a misconfiguration); prefer the larger gossip address so every member
    /// picks the same one.
    fn win_addr_conflict(&self, adversary: &Self) -> bool {
        (self.generation, self.gossip) > (adversary.generation, adversary.gossip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foca::Identity;

    fn id(name: &str, generation: u64) -> NodeId {
        let a: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        NodeId::new(name, a, a, a, generation).unwrap()
    }

    #[test]
    fn names_are_bounded() {
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(NodeId::new("", a, a, a, 0).is_err());
        assert!(NodeId::new(&"x".repeat(256), a, a, a, 0).is_err());
        assert!(NodeId::new(&"x".repeat(255), a, a, a, 0).is_ok());
    }

    #[test]
    fn renew_bumps_generation_and_wins() {
        let old = id("a", 7);
        let new = old.renew().unwrap();
        assert_eq!(new.generation(), 8);
        assert_eq!(new.addr(), old.addr());
        assert!(new.win_addr_conflict(&old));
        assert!(!old.win_addr_conflict(&new));
    }

    #[test]
    fn membership_key_is_the_name() {
        assert_eq!(id("a", 1).addr(), id("a", 2).addr());
        assert_ne!(id("a", 1).addr(), id("b", 1).addr());
    }

    #[test]
    fn equal_generation_conflict_is_decided_the_same_everywhere() {
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let x = NodeId::new("n", a, a, a, 1).unwrap();
        let y = NodeId::new("n", b, b, b, 1).unwrap();
        assert!(y.win_addr_conflict(&x) && !x.win_addr_conflict(&y));
    }
}
