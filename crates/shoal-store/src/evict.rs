//! Eviction policies (Redis `maxmemory-policy`) and choosing a victim within one shard.

use std::fmt;
use std::str::FromStr;

use foldhash::fast::FixedState;

use crate::entry::Clock;
use crate::noted::{NoteLog, Noted};
use crate::rng;
use crate::shard::Shard;

/// What to do when `used_memory` exceeds `maxmemory`; Redis's `maxmemory-policy` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum EvictionPolicy {
    /// Refuse writes with `OOM` instead of evicting.
    NoEviction = 0,
    /// Evict the least recently used key among samples.
    #[default]
    AllKeysLru = 1,
    /// Evict the least frequently used key among samples.
    AllKeysLfu = 2,
    /// Evict any key.
    AllKeysRandom = 3,
    /// LRU among keys with a TTL.
    VolatileLru = 4,
    /// LFU among keys with a TTL.
    VolatileLfu = 5,
    /// Any key with a TTL.
    VolatileRandom = 6,
    /// The key with the nearest expiry among samples.
    VolatileTtl = 7,
}

const ALL_POLICIES: [EvictionPolicy; 8] = [
    EvictionPolicy::NoEviction,
    EvictionPolicy::AllKeysLru,
    EvictionPolicy::AllKeysLfu,
    EvictionPolicy::AllKeysRandom,
    EvictionPolicy::VolatileLru,
    EvictionPolicy::VolatileLfu,
    EvictionPolicy::VolatileRandom,
    EvictionPolicy::VolatileTtl,
];

impl EvictionPolicy {
    /// The Redis configuration name, e.g. `"allkeys-lru"`.
    pub fn name(self) -> &'static str {
        match self {
            EvictionPolicy::NoEviction => "noeviction",
            EvictionPolicy::AllKeysLru => "allkeys-lru",
            EvictionPolicy::AllKeysLfu => "allkeys-lfu",
            EvictionPolicy::AllKeysRandom => "allkeys-random",
            EvictionPolicy::VolatileLru => "volatile-lru",
            EvictionPolicy::VolatileLfu => "volatile-lfu",
            EvictionPolicy::VolatileRandom => "volatile-random",
            EvictionPolicy::VolatileTtl => "volatile-ttl",
        }
    }

    /// Whether only keys with a TTL may be evicted.
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileLfu
                | EvictionPolicy::VolatileRandom
                | EvictionPolicy::VolatileTtl
        )
    }

    /// Whether the access word holds an LFU counter (otherwise an LRU clock).
    pub fn is_lfu(self) -> bool {
        matches!(
            self,
            EvictionPolicy::AllKeysLfu | EvictionPolicy::VolatileLfu
        )
    }

    pub(crate) fn from_u8(v: u8) -> EvictionPolicy {
        ALL_POLICIES
            .get(usize::from(v))
            .copied()
            .unwrap_or_default()
    }
}

impl fmt::Display for EvictionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `maxmemory-policy` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid maxmemory-policy")]
pub struct ParsePolicyError;

impl FromStr for EvictionPolicy {
    type Err = ParsePolicyError;

    /// Redis names, ASCII case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_POLICIES
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or(ParsePolicyError)
    }
}

/// What one eviction attempt in a shard did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Victim {
    /// Nothing eligible (or only the protected key).
    None,
    /// An already-expired key was found among the samples and reclaimed.
    Expired,
    Evicted,
}

/// Sample the shard by `policy` and remove the best candidate. `keep` is never removed.
pub(crate) fn evict_one(
    shard: &mut Shard,
    hasher: &FixedState,
    noted: &NoteLog,
    policy: EvictionPolicy,
    clock: &Clock,
    samples: usize,
    keep: Option<&[u8]>,
) -> Victim {
    let random = matches!(
        policy,
        EvictionPolicy::AllKeysRandom | EvictionPolicy::VolatileRandom
    );
    // Random policies take the first sampled key, so they sample once at a random index.
    let samples = if random { 1 } else { samples.max(1) };
    let now = clock.now_ms;
    let mut best: Option<(u64, usize)> = None;
    let mut consider = |shard: &Shard, idx: usize| {
        let item = &shard.items[idx];
        if keep == Some(item.key()) {
            return;
        }
        let score = if item.is_expired(now) {
            u64::MAX
        } else {
            match policy {
                EvictionPolicy::AllKeysLru | EvictionPolicy::VolatileLru => {
                    clock.lru_idle(item.access)
                }
                EvictionPolicy::AllKeysLfu | EvictionPolicy::VolatileLfu => {
                    255 - u64::from(clock.lfu_decayed(item.access))
                }
                EvictionPolicy::VolatileTtl => u64::MAX - 1 - item.expire_at_ms(),
                _ => 0,
            }
        };
        match best {
            Some((s, _)) if s >= score => {}
            _ => best = Some((score, idx)),
        }
    };
    let len = shard.items.len();
    if len == 0 {
        return Victim::None;
    }
    if policy.is_volatile() {
        shard.sample_volatile(samples, |i| consider(shard, i));
    } else if samples >= len && !random {
        (0..len).for_each(|i| consider(shard, i));
    } else {
        for _ in 0..samples {
            consider(shard, rng::below(len));
        }
    }
    let Some((_, idx)) = best else {
        return Victim::None;
    };
    let expired = shard.items[idx].is_expired(now);
    let item = shard.remove_at(hasher, idx);
    if expired {
        shard.stats.count_expired(&item);
        noted.note(item.key(), Noted::Expired);
        Victim::Expired
    } else {
        shard.stats.count_evicted(&item);
        noted.note(item.key(), Noted::Evicted);
        Victim::Evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in ALL_POLICIES {
            assert_eq!(p.name().parse::<EvictionPolicy>(), Ok(p));
            assert_eq!(p.name().to_uppercase().parse::<EvictionPolicy>(), Ok(p));
            assert_eq!(EvictionPolicy::from_u8(p as u8), p);
        }
        assert_eq!(EvictionPolicy::default().name(), "allkeys-lru");
        assert!("lru".parse::<EvictionPolicy>().is_err());
        assert!(EvictionPolicy::VolatileTtl.is_volatile());
        assert!(!EvictionPolicy::AllKeysLfu.is_volatile());
        assert!(EvictionPolicy::VolatileLfu.is_lfu());
    }
}
