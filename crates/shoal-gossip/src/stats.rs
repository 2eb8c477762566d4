//! Counters, shared between the owner task and whoever reports them (INFO, logs).

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! stats {
    ($($(#[$doc:meta])* $field:ident,)*) => {
        /// Live counters; every field only grows. Read with [`GossipStats::snapshot`].
        #[derive(Debug, Default)]
        pub struct GossipStats {
            $($(#[$doc])* pub $field: AtomicU64,)*
        }

        /// A copy of [`GossipStats`] at one moment.
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct StatsSnapshot {
            $($(#[$doc])* pub $field: u64,)*
        }

        impl GossipStats {
            pub fn snapshot(&self) -> StatsSnapshot {
                StatsSnapshot { $($field: self.$field.load(Ordering::Relaxed),)* }
            }
        }
    };
}

stats! {
    /// Datagrams received (before any check).
    datagrams_in,
    /// Bytes received (before any check).
    bytes_in,
    /// Datagrams produced for sending (envelope included).
    datagrams_out,
    /// Bytes produced for sending (envelope included).
    bytes_out,
    /// Dropped: shorter than an empty envelope.
    dropped_too_short,
    /// Dropped: longer than the largest envelope.
    dropped_too_long,
    /// Dropped: no magic (not ours at all).
    dropped_bad_magic,
    /// Dropped: a protocol version this build does not speak.
    dropped_bad_version,
    /// Dropped: unknown envelope kind.
    dropped_bad_kind,
    /// Dropped: another cluster's name.
    dropped_wrong_cluster,
    /// Dropped: MAC mismatch (wrong secret, corruption, forgery).
    dropped_bad_mac,
    /// Authentic datagrams foca or the metadata decoder rejected (malformed, from ourselves, ...).
    rejected_payloads,
    /// Outbound datagrams dropped because the outbound queue was full.
    outbound_dropped,
    /// Datagrams the socket refused (would block, unreachable, ...).
    send_errors,
    /// Commands refused because the command queue was full.
    commands_dropped,
    /// Metadata requests sent (a member's metadata was missing).
    meta_requests,
    /// Suspicions not turned into a declaration that the member is down (yet) because this
    /// node was cut off from the majority (counted each time one is put off).
    declarations_held,
    /// Suspicions cleared here because the member was heard from since it was suspected (it
    /// never learnt of the suspicion to refute it).
    suspicions_vouched,
    /// Datagrams dropped on arrival because their sender is refused (`GossipHandle::refuse`).
    refused_in,
    /// Datagrams not sent because their member is refused.
    refused_out,
}

pub(crate) fn inc(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn add(counter: &AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}
