//! Shoal's in-memory keyspace: byte-string values, per-key millisecond TTLs, byte accounting
//! against `maxmemory`, Redis's eviction policies, and cheap iteration of one cluster hash slot.
//!
//! # Concurrency model
//! No task owns the store: it is a plain `Send + Sync` structure shared by every runtime
//! thread. Keys are split over 1024 shards by hash slot (`slot % 1024`), each behind a
//! `parking_lot::Mutex` held only for one short, non-async operation; the figures read on every
//! write (`used_memory`, key counts) and the configuration are atomics. Time is passed in as
//! Unix milliseconds, so tests drive it freely; the LRU/LFU clocks derive from it.
//!
//! # Layout
//! - [`slot`]: CRC16 key -> hash slot with `{hash tag}`s, as Redis Cluster computes it.
//! - [`glob`]: Redis `stringmatchlen` for `KEYS`/`SCAN MATCH`.
//! - `entry`: the 24-byte per-key record (one allocation holding key then value, TTL, access
//!   word, version) and the LRU/LFU clock.
//! - `shard`: a dense `Vec` of entries indexed by a `hashbrown::HashTable<u32>`, a lazily
//!   validated min-heap of expiry times for active expiry, per-slot key counts, the version
//!   clock, the shard's tombstones.
//! - `noted`: keys that expired, were evicted or were created, noted for keyspace
//!   notifications.
//! - `tombstone`: bounded, short-lived records of removed keys for replication.
//! - `evict`: [`EvictionPolicy`] and victim sampling within a shard.
//! - `store`: [`Store`], the public API.
//!
//! # Replication support
//! Every item carries a version from its shard's hybrid logical clock. A cluster owner reads a
//! key's [`KeyState`] (value, flags, absolute expiry, version; or the version of its removal)
//! after a write, and replicas [`Store::apply`] it with last-writer-wins, so late or reordered
//! messages neither overwrite newer values nor resurrect removed keys. Removals are remembered
//! by tombstones, off on a single node and bounded per shard when on
//! ([`Store::set_tombstone_ttl`]); they cost the single-node GET/SET path one branch.
//!
//! # Why not a cache crate (mini-moka)
//! Measured unsuitable: no per-entry TTL, its TinyLFU admission drops fresh SETs (Redis always
//! admits a write and evicts others), and ~484 B per entry against Redis's ~208 B for 16-byte
//! keys with 100-byte values; this store uses ~183 B (item, version and accounting included).

pub mod glob;
pub mod slot;

pub mod encoding;
mod entry;
mod evict;
pub mod gate;
mod hash;
// With `thin`, the modules allowed `unsafe` code (the workspace denies it elsewhere): one
// prefetch intrinsic.
#[allow(unsafe_code)]
mod hint;
mod list;
mod noted;
mod ranked;
mod rng;
mod set;
mod shard;
mod store;
mod stream;
// The one place with `unsafe` code (the workspace denies it elsewhere): see its header.
#[allow(unsafe_code)]
mod thin;
mod tombstone;
mod varint;
mod zset;

#[cfg(test)]
mod tests;

pub use entry::{Collection, Kind, ENTRY_OVERHEAD, MAX_KEY_LEN};

/// Memcached's revalidation marks of an item (its `ITEM_STALE` and `ITEM_TOKEN_SENT`), for
/// the meta protocol's stale-while-revalidate: `md ... I` marks an item stale, and the first
/// `mg` to see it (or a vivified miss, or a TTL under `R`) is told it won the right to
/// recache it, the others that someone did. Kept beside the items for the few that have any
/// ([`Slot::marks`]); a new value has none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// Invalidated (`md I`, or a `ms I` with an older CAS): served, flagged `X`.
    pub stale: bool,
    /// A client was handed the win (`W`); the others see `Z`.
    pub token_sent: bool,
}

impl Marks {
    fn bits(self) -> u8 {
        u8::from(self.stale) | (u8::from(self.token_sent) << 1)
    }

    fn from_bits(bits: u8) -> Marks {
        Marks {
            stale: bits & 1 != 0,
            token_sent: bits & 2 != 0,
        }
    }
}
pub use evict::{EvictionPolicy, ParsePolicyError};
pub use glob::glob_match;
pub use hash::{Hash, LISTPACK_ENTRIES, LISTPACK_VALUE};
pub use list::{listpack_backlen, List};
pub use noted::{take_command_notes, without_noting, CommandNotes, Noted};
pub use rng::{random_u64, set_seed_source};
pub use set::{canonical_int, Member, Set};
pub use slot::{key_slot, push_stored_key, split_key, stored_key, SLOTS};
pub use store::{
    record_writes, take_contention, without_touching, Contention, Writes, PREFETCH_MAX,
};
pub use store::{
    Access, Entry, Garbage, KeyState, OutOfMemory, Slot, Store, StoreConfig, StoreStats,
};
pub use stream::{
    fields as stream_fields, Consumer, Group, Nack, NodeLimits, Stream, StreamId, TrimBy,
};
pub use stream::{
    NODE_MAX_BYTES as STREAM_NODE_MAX_BYTES, NODE_MAX_ENTRIES as STREAM_NODE_MAX_ENTRIES,
};
pub use zset::ZSet;
