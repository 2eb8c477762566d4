//! Gossip settings and the foca configuration derived from them.

use std::num::{NonZeroU32, NonZeroU8, NonZeroUsize};
use std::time::Duration;

use foca::PeriodicParams;

use crate::envelope::MAX_PAYLOAD;

/// Gossip settings. `Default` suits a LAN cluster of up to ~10 nodes; set
/// `cluster_size_hint` for larger ones.
#[derive(Debug, Clone)]
pub struct GossipConfig {
    /// Expected number of members. foca's `Config::new_lan` derives from it how often an
    /// update is retransmitted (4·log10(n+1), tripled here) and how long a suspect stays up
    /// (4 s·max(1, log10 n), never below `min_suspicion`).
    pub cluster_size_hint: NonZeroU32,
    /// Multiplier on foca's `max_transmissions`. 3 removed the tail where the last of 10 to
    /// 100 nodes heard of a failure 15 to 110 s late, at no measurable steady-state cost.
    pub max_transmissions_factor: u8,
    /// Lower bound on the suspicion timeout. A 1.5 s timeout never converged for 3 nodes at
    /// 5 % loss; keep this at 3 s or more for small clusters.
    pub min_suspicion: Duration,
    /// How often to announce to the seeds while no other member is known (foca never
    /// retries a lost Announce and never leaves the zero-member state by itself).
    pub seed_announce_interval: Duration,
    /// How often seed host names are resolved again (a Kubernetes headless Service name
    /// gains and loses pod addresses).
    pub seed_resolve_interval: Duration,
    /// How often foca announces to members it believes down; this is what heals a
    /// partition (the other side answers `TurnUndead`, renews its identity and rejoins).
    pub announce_to_down_interval: Duration,
    /// How often this node re-sends its own metadata broadcast, unchanged.
    pub metadata_refresh_interval: Duration,
    /// How often a member whose metadata is unknown is asked for it directly.
    pub metadata_repair_interval: Duration,
    /// After `leave`, how long to keep gossiping the departure before the task exits.
    pub leave_drain: Duration,
    /// Outbound datagrams queued between two socket flushes; more are dropped (counted).
    pub outbound_queue: usize,
    /// Commands queued for the owner task.
    pub command_queue: usize,
}

impl Default for GossipConfig {
    fn default() -> Self {
        Self {
            cluster_size_hint: NonZeroU32::new(10).expect("10 is non-zero"),
            max_transmissions_factor: 3,
            min_suspicion: Duration::from_secs(3),
            seed_announce_interval: Duration::from_secs(1),
            seed_resolve_interval: Duration::from_secs(30),
            announce_to_down_interval: Duration::from_secs(10),
            metadata_refresh_interval: Duration::from_secs(30),
            metadata_repair_interval: Duration::from_millis(500),
            leave_drain: Duration::from_millis(500),
            outbound_queue: 1024,
            command_queue: 64,
        }
    }
}

impl GossipConfig {
    /// The foca configuration: `Config::new_lan(cluster_size_hint)` with
    ///
    /// - probe every 1 s, direct-ack wait 500 ms, 3 indirect probes (new_lan);
    /// - `max_transmissions` × `max_transmissions_factor`;
    /// - suspicion `max(new_lan's, min_suspicion)`: 4 s up to 10 nodes, 8 s at 100,
    ///   10.8 s at 500;
    /// - periodic gossip every 200 ms to 3 members, periodic announce every 30 s to 1
    ///   member (new_lan), announce to 2 down members every `announce_to_down_interval`;
    /// - `notify_down_members` (a member declared down learns it and renews its identity);
    /// - packets of at most `MAX_PAYLOAD` bytes (before the envelope).
    pub fn foca_config(&self) -> foca::Config {
        let mut c = foca::Config::new_lan(self.cluster_size_hint);
        let tx =
            u16::from(c.max_transmissions.get()) * u16::from(self.max_transmissions_factor.max(1));
        c.max_transmissions = NonZeroU8::new(tx.min(255) as u8)
            .expect("product of non-zero values, clamped to 1..=255");
        c.suspect_to_down_after = c.suspect_to_down_after.max(self.min_suspicion);
        c.max_packet_size = NonZeroUsize::new(MAX_PAYLOAD).expect("constant is non-zero");
        c.periodic_announce_to_down_members = Some(PeriodicParams {
            frequency: self.announce_to_down_interval,
            num_members: NonZeroUsize::new(2).expect("2 is non-zero"),
        });
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_foca_config() {
        let c = GossipConfig::default().foca_config();
        assert_eq!(c.probe_period, Duration::from_secs(1));
        assert_eq!(c.max_transmissions.get(), 12);
        assert_eq!(c.suspect_to_down_after, Duration::from_secs(4));
        let big = GossipConfig {
            cluster_size_hint: NonZeroU32::new(500).unwrap(),
            ..GossipConfig::default()
        }
        .foca_config();
        assert_eq!(big.max_transmissions.get(), 30);
        assert!(big.suspect_to_down_after > Duration::from_secs(10));
    }
}
