//! Shoal's placement: hash slot -> owner and replicas.
//!
//! # Role
//!
//! A key lives in one of [`SLOTS`] hash slots (CRC16, computed elsewhere by
//! `shoal_store::key_slot`; this crate only sees slot ids). A [`Placement`] maps every slot to
//! its owner plus `replicas` distinct other members, from nothing but the member list. It is
//! pure and synchronous, does no I/O and takes no locks: a `Placement` is an immutable snapshot
//! tagged with an epoch, which the node publishes behind an `ArcSwap`/`Arc` and request handlers
//! read freely. Every node that sees the same members (in any order, whatever the history)
//! computes the byte-identical placement, so nodes agree on owners without exchanging tables.
//!
//! # Layout
//!
//! One module. [`Placement::new`] sorts the members by name, scores every (member, slot)
//! pair, and keeps `replicas + 1` members of each slot (the best with room, see below) in
//! one flat `Vec<u16>` of
//! `SLOTS * (replicas + 1)` member indices (at most 16,384 x 3 x 2 bytes = 96 KiB for 2
//! replicas). [`diff`] compares two snapshots for the rebalancer.
//!
//! # Algorithm: weighted rendezvous (highest random weight) hashing with bounded loads
//!
//! For member `m` with name bytes `name` (UTF-8 of [`NodeName`]) and weight `w >= 1`, for
//! each copy `i` in `0..w`:
//!
//! ```text
//! key(m, i)      = XXH3_64(name, seed = NAME_SEED + i)            (u64, wrapping add)
//! score(m, slot) = max over i in 0..w of
//!                  XXH3_64(key(m, i) as 8 bytes LE ++ slot as 2 bytes LE, seed = 0)
//! NAME_SEED      = 0x7368_6f61_6c72_6e67                           ("shoalrng" in ASCII)
//! ```
//!
//! `XXH3_64` is the 64-bit XXH3 of xxHash 0.8 with a 64-bit seed (`XXH3_64bits_withSeed` in
//! the C library, `xxhash_rust::xxh3::xxh3_64_with_seed` here). For each slot the members
//! are ranked by `score` descending, ties (probability ~2^-64) broken by the smaller name
//! bytes first. A member of weight `w` scores the best of `w` independent draws, so it wins
//! a slot as often as `w` unit members would together: `w` shares of the slots. Weights are
//! integers so the whole computation is integer arithmetic on a published hash: no floating
//! point `ln` whose last bit could differ between libm builds.
//!
//! Plain rendezvous gives each slot to the top of its ranking; its balance is that of a
//! multinomial draw, max/mean 1.20 on average at 100 members (1.34 worst seen). So loads are
//! bounded: each member may hold at most `cap(m)` copies of each rank (owner = rank 0, first
//! replica = rank 1, ...):
//!
//! ```text
//! share(m) = SLOTS * w(m) / sum of all weights
//! cap(m)   = max(ceil(share(m)), floor(share(m) * LOAD_FACTOR_PERCENT / 100))   (105 %)
//! ```
//!
//! (the caps always add up to at least SLOTS). The slots are placed one by one in the order
//! of `XXH3_64(slot as 2 bytes LE, seed = ORDER_SEED)` ascending (ties by slot number;
//! `ORDER_SEED = 0x7368_6f61_6c6f_7264`, "shoalord"), an order no member influences; each
//! slot's rank `r` goes to the best-ranked member that is not already one of its copies and
//! holds fewer than `cap` copies of rank `r`. The first `min(replicas + 1, members)` ranks
//! are the owner and the replicas. While no cap binds (every trial up to 6 members, most up
//! to 10) this is exactly plain rendezvous.
//!
//! # Why not the `hashring` crate
//!
//! `hashring` 0.3.6 has no virtual nodes, clones the ring on every `get_with_replicas`,
//! returns consecutive ring points so "3 replicas" were often fewer than 3 machines, and hashes
//! through `std::hash::Hash`, whose output Rust does not specify: two builds of Shoal could
//! place keys differently during a rolling upgrade. Here the hash is written out above and a
//! golden test pins its output.
//!
//! # Why bounded loads, and not fewer ranges
//!
//! Plain rendezvous has the ideal movement rule (a join or leave moves only the slots of the
//! member that comes or goes) and no balancing: any balancing step breaks that rule, since
//! a pair's order then depends on third members (history independence plus the rule forces
//! rendezvous form). The goal set for Shoal was balance within 1.05 at 3 to 100 members and
//! movement within 1.25x the ideal share; a study of candidates (per-slot rendezvous, bounded
//! loads at 1.03 to 1.10, rendezvous over groups of 4 to 128 consecutive slots with and
//! without bounds, a hash ring with bounded loads, Maglev, refitted weights, contiguous
//! ranges; 20 name sets per N) found:
//! - bounded loads at 1.05 per slot: balance <= 1.050 at every N; mean movement <= 1.25x up
//!   to 100 members (1.23-1.26x at 100), worst trial 1.34-1.43x at 100 (table below; the
//!   study, `examples/placement_study.rs`, has other name sets);
//! - fewer ranges always cost balance or movement: grouping G consecutive slots makes each
//!   member's load noisier (spread ~sqrt(N * G / SLOTS)); plain group rendezvous balances to
//!   1.43 (G = 4) and 1.89 (G = 16) at 100 members; bounded groups move 1.8x (G = 4, 4,100
//!   ranges) to 4.2x (G = 64, 340 ranges) at 100 members; a hash ring with 64 points per
//!   member moves 1.7x (5,100 ranges); Maglev moves 2.4x; contiguous ranges move N/3 times
//!   the ideal. Movement stays near 1x only with about 100 units (slots, groups or points)
//!   per member, so no scheme cuts the ranges much past 20 members without breaking a goal.
//!
//! So slots stay independent (about 11,000 owner ranges at 3 members, 16,000 at 100; what
//! that costs Redis Cluster clients is measured in the README) and loads are bounded.
//!
//! # Measured (release build; `balance_sweep` below re-measures)
//!
//! Equal weights, 1 replica, 20 random name sets per N. Balance is max/mean owned slots of a
//! set of N; join movement is the owner changes when one member joins N, over the ideal
//! `SLOTS / (N + 1)`; leave movement the owner changes when one of N leaves, over `SLOTS / N`;
//! owner ranges are maximal runs of consecutive slots with one owner (CLUSTER SLOTS's entries).
//!
//! | N | max/mean mean | max/mean worst | join movement mean | join worst | leave movement mean | leave worst | owner ranges |
//! |---|---|---|---|---|---|---|---|
//! | 3 | 1.011 | 1.022 | 0.999 | 1.016 | 0.999 | 1.015 | 10911 |
//! | 4 | 1.013 | 1.027 | 1.003 | 1.024 | 1.004 | 1.027 | 12306 |
//! | 5 | 1.021 | 1.034 | 1.008 | 1.041 | 1.003 | 1.022 | 13100 |
//! | 6 | 1.023 | 1.036 | 0.998 | 1.031 | 0.996 | 1.019 | 13661 |
//! | 7 | 1.028 | 1.050 | 1.006 | 1.042 | 0.997 | 1.036 | 14046 |
//! | 8 | 1.033 | 1.050 | 0.997 | 1.045 | 1.001 | 1.038 | 14337 |
//! | 9 | 1.037 | 1.050 | 1.007 | 1.057 | 1.007 | 1.037 | 14563 |
//! | 10 | 1.038 | 1.050 | 0.999 | 1.049 | 0.991 | 1.044 | 14725 |
//! | 11 | 1.035 | 1.049 | 0.999 | 1.050 | 0.998 | 1.032 | 14894 |
//! | 12 | 1.042 | 1.050 | 1.003 | 1.054 | 1.010 | 1.053 | 15022 |
//! | 13 | 1.040 | 1.050 | 1.009 | 1.058 | 1.000 | 1.041 | 15114 |
//! | 14 | 1.043 | 1.049 | 1.000 | 1.055 | 1.004 | 1.046 | 15220 |
//! | 15 | 1.046 | 1.049 | 1.006 | 1.059 | 1.008 | 1.051 | 15295 |
//! | 16 | 1.044 | 1.050 | 1.016 | 1.055 | 1.006 | 1.057 | 15359 |
//! | 17 | 1.046 | 1.049 | 0.999 | 1.047 | 1.009 | 1.057 | 15416 |
//! | 18 | 1.048 | 1.049 | 1.010 | 1.060 | 1.005 | 1.068 | 15471 |
//! | 19 | 1.048 | 1.049 | 1.014 | 1.063 | 1.012 | 1.059 | 15525 |
//! | 20 | 1.048 | 1.050 | 1.020 | 1.061 | 1.014 | 1.071 | 15574 |
//! | 25 | 1.050 | 1.050 | 1.013 | 1.084 | 1.032 | 1.067 | 15726 |
//! | 30 | 1.049 | 1.049 | 1.035 | 1.101 | 1.022 | 1.082 | 15840 |
//! | 35 | 1.049 | 1.049 | 1.032 | 1.107 | 1.026 | 1.109 | 15919 |
//! | 40 | 1.050 | 1.050 | 1.045 | 1.116 | 1.047 | 1.113 | 15978 |
//! | 45 | 1.049 | 1.049 | 1.057 | 1.137 | 1.068 | 1.134 | 16023 |
//! | 50 | 1.050 | 1.050 | 1.080 | 1.183 | 1.062 | 1.157 | 16058 |
//! | 55 | 1.047 | 1.047 | 1.093 | 1.172 | 1.083 | 1.145 | 16089 |
//! | 60 | 1.047 | 1.047 | 1.092 | 1.177 | 1.100 | 1.216 | 16106 |
//! | 65 | 1.047 | 1.047 | 1.112 | 1.192 | 1.105 | 1.186 | 16127 |
//! | 70 | 1.047 | 1.047 | 1.128 | 1.244 | 1.147 | 1.235 | 16149 |
//! | 75 | 1.048 | 1.048 | 1.147 | 1.239 | 1.127 | 1.231 | 16165 |
//! | 80 | 1.050 | 1.050 | 1.168 | 1.261 | 1.174 | 1.323 | 16178 |
//! | 85 | 1.048 | 1.048 | 1.143 | 1.244 | 1.138 | 1.276 | 16190 |
//! | 90 | 1.049 | 1.049 | 1.168 | 1.283 | 1.170 | 1.291 | 16203 |
//! | 95 | 1.049 | 1.049 | 1.206 | 1.307 | 1.190 | 1.299 | 16210 |
//! | 100 | 1.050 | 1.050 | 1.249 | 1.338 | 1.231 | 1.355 | 16219 |
//!
//! With 2 replicas a join changes the replica set of about `3 / (N + 1)` of the slots, the
//! ideal for 3 copies. Building a placement is measured in `benches/benches/ring.rs`;
//! `owners()` is one multiply and a slice.

use std::fmt;

use thiserror::Error;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Number of hash slots, as in Redis Cluster.
pub const SLOTS: usize = 16384;

/// Most members a placement holds: member indices are `u16`.
pub const MAX_MEMBERS: usize = u16::MAX as usize + 1;

/// Largest member weight. Building costs one hash per (weight unit, slot), so weights are
/// meant as small relative capacities (1 = a standard node).
pub const MAX_WEIGHT: u32 = 64;

/// Seed of the name hash; part of the placement's specification (see the crate docs).
pub const NAME_SEED: u64 = 0x7368_6f61_6c72_6e67;

/// The placement algorithm's version: 2 since bounded loads (1 was plain rendezvous). Two
/// builds with different versions may place a slot differently, so a cluster mixes them only
/// by a full restart; the cluster layer puts it in every view id so such nodes see their
/// views differ.
pub const ALGORITHM_VERSION: u64 = 2;

/// Seed of the hash that orders the slots for placing them ("shoalord"); part of the
/// specification.
pub const ORDER_SEED: u64 = 0x7368_6f61_6c6f_7264;

/// How far above its weighted share of the slots a member's copies of one rank (owner,
/// first replica, ...) may go, in percent: the bounded load of the crate docs.
pub const LOAD_FACTOR_PERCENT: u64 = 105;

/// Members ranked fully for a slot before the rest are ranked too (only when every one of
/// them is at its cap).
const HEAD_EXTRA: usize = 8;

/// A member's cap of copies at each rank: its weighted share of the slots times
/// [`LOAD_FACTOR_PERCENT`], rounded down, but never below the share rounded up, so the caps
/// of all members always hold every slot.
fn cap(weight: u32, total_weight: u64) -> u32 {
    let share = SLOTS as u64 * u64::from(weight);
    let at_least = share.div_ceil(total_weight);
    let loaded = share * LOAD_FACTOR_PERCENT / (100 * total_weight);
    // At most SLOTS: fits.
    at_least.max(loaded) as u32
}

/// The order slots are placed in: by a hash of the slot number alone (ties by number), so
/// where caps bind does not depend on any member and falls on scattered slots. The same for
/// every placement, so computed once.
fn slot_order() -> &'static [u16] {
    static ORDER: std::sync::OnceLock<Vec<u16>> = std::sync::OnceLock::new();
    ORDER.get_or_init(|| {
        // Cast: slot numbers 0..16384 fit in u16.
        let mut order: Vec<u16> = (0..SLOTS as u16).collect();
        order.sort_unstable_by_key(|&s| (xxh3_64_with_seed(&s.to_le_bytes(), ORDER_SEED), s));
        order
    })
}

/// The stable name of a member; its UTF-8 bytes are all that placement hashes, so it MUST
/// NOT change across restarts of the same node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeName(pub String);

impl fmt::Display for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for NodeName {
    fn from(s: &str) -> Self {
        NodeName(s.to_owned())
    }
}

/// One member of the cluster as placement sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: NodeName,
    /// Relative capacity, `1..=MAX_WEIGHT`: a member of weight 2 gets about twice the slots
    /// of a member of weight 1.
    pub weight: u32,
}

impl Member {
    /// A member of weight 1.
    pub fn new(name: impl Into<String>) -> Self {
        Member {
            name: NodeName(name.into()),
            weight: 1,
        }
    }
}

/// Why a member list cannot be placed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PlacementError {
    #[error("placement needs at least one member")]
    NoMembers,
    #[error("member name '{0}' appears more than once")]
    DuplicateName(NodeName),
    #[error("member '{0}' has weight 0")]
    ZeroWeight(NodeName),
    #[error("member '{name}' has weight {weight}, more than {max}", max = MAX_WEIGHT)]
    WeightTooLarge { name: NodeName, weight: u32 },
    #[error("{0} members, more than {max}", max = MAX_MEMBERS)]
    TooManyMembers(usize),
}

/// An immutable snapshot of slot ownership for one member list.
///
/// Cheap to read from many threads at once (no interior mutability); replace the whole
/// snapshot when membership changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    epoch: u64,
    /// Sorted by name, so indices mean the same thing on every node.
    members: Vec<Member>,
    /// Owner plus replicas per slot: `min(replicas + 1, members.len())`.
    width: usize,
    /// `SLOTS * width` indices into `members`; slot `s` is `owners[s * width..][..width]`,
    /// owner first.
    owners: Vec<u16>,
}

/// One slot whose ordered owner list (owner, then replicas) differs between two placements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotMove {
    pub slot: u16,
    pub old: Vec<NodeName>,
    pub new: Vec<NodeName>,
}

/// The rendezvous score of a member for a slot, exactly as specified in the crate docs.
/// `keys` are the member's per-weight-unit keys from [`member_keys`].
fn score(keys: &[u64], slot: u16) -> u64 {
    let mut input = [0u8; 10];
    input[8..].copy_from_slice(&slot.to_le_bytes());
    keys.iter()
        .map(|&k| {
            input[..8].copy_from_slice(&k.to_le_bytes());
            xxh3_64_with_seed(&input, 0)
        })
        .max()
        .expect("weight >= 1 is checked in Placement::new")
}

fn member_keys(member: &Member) -> Vec<u64> {
    (0..member.weight)
        .map(|i| {
            xxh3_64_with_seed(
                member.name.0.as_bytes(),
                NAME_SEED.wrapping_add(u64::from(i)),
            )
        })
        .collect()
}

impl Placement {
    /// Places every slot on `min(replicas + 1, members.len())` distinct members. `members`
    /// may come in any order; `epoch` is carried along untouched for the caller's versioning.
    pub fn new(
        members: &[Member],
        replicas: usize,
        epoch: u64,
    ) -> Result<Placement, PlacementError> {
        if members.is_empty() {
            return Err(PlacementError::NoMembers);
        }
        if members.len() > MAX_MEMBERS {
            return Err(PlacementError::TooManyMembers(members.len()));
        }
        let mut members = members.to_vec();
        members.sort_by(|a, b| a.name.cmp(&b.name));
        for pair in members.windows(2) {
            if pair[0].name == pair[1].name {
                return Err(PlacementError::DuplicateName(pair[0].name.clone()));
            }
        }
        for m in &members {
            if m.weight == 0 {
                return Err(PlacementError::ZeroWeight(m.name.clone()));
            }
            if m.weight > MAX_WEIGHT {
                return Err(PlacementError::WeightTooLarge {
                    name: m.name.clone(),
                    weight: m.weight,
                });
            }
        }

        let width = replicas.saturating_add(1).min(members.len());
        let keys: Vec<Vec<u64>> = members.iter().map(member_keys).collect();
        let total_weight: u64 = members.iter().map(|m| u64::from(m.weight)).sum();
        let caps: Vec<u32> = members
            .iter()
            .map(|m| cap(m.weight, total_weight))
            .collect();
        let n = members.len();
        let mut owners = vec![0u16; SLOTS * width];
        // Copies each member holds at each rank (owner = rank 0), against its cap.
        let mut counts = vec![0u32; n * width];
        let mut ranked: Vec<(u64, u16)> = Vec::with_capacity(n);
        for &slot in slot_order() {
            ranked.clear();
            // Cast: i < MAX_MEMBERS, checked above.
            ranked.extend(
                keys.iter()
                    .enumerate()
                    .map(|(i, k)| (score(k, slot), i as u16)),
            );
            // Best first; equal scores (probability ~2^-64): the smaller name first.
            let best_first = |a: &(u64, u16), b: &(u64, u16)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
            // Usually one of the first few has room: rank only those, the rest if needed.
            let head = (width + HEAD_EXTRA).min(n);
            if head < n {
                ranked.select_nth_unstable_by(head - 1, best_first);
            }
            ranked[..head].sort_unstable_by(best_first);
            let row = usize::from(slot) * width;
            for rank in 0..width {
                let counts = &mut counts[rank * n..][..n];
                let taken = &owners[row..row + rank];
                let fits = |&&(_, i): &&(u64, u16)| {
                    !taken.contains(&i) && counts[usize::from(i)] < caps[usize::from(i)]
                };
                let pick = match ranked[..head].iter().find(fits) {
                    Some(&(_, i)) => i,
                    None => {
                        ranked[head..].sort_unstable_by(best_first);
                        let any = |&&(_, i): &&(u64, u16)| !taken.contains(&i);
                        // Unweighted, the caps add up to at least SLOTS and no member has
                        // been seen at a cap with room elsewhere; with weights (or a width
                        // close to the member count) the member with room may already hold
                        // a copy of this slot, and the best other member goes over its cap.
                        ranked[head..]
                            .iter()
                            .find(fits)
                            .or_else(|| ranked.iter().find(any))
                            .expect("width <= members")
                            .1
                    }
                };
                counts[usize::from(pick)] += 1;
                owners[row + rank] = pick;
            }
        }
        Ok(Placement {
            epoch,
            members,
            width,
            owners,
        })
    }

    /// The epoch given to [`Placement::new`].
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The members, sorted by name; owner indices point into this slice.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Copies of each slot: `min(replicas + 1, members().len())`.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Owner first, then the replicas in preference order, as indices into [`members`].
    /// Panics if `slot >= SLOTS`.
    ///
    /// [`members`]: Placement::members
    pub fn owners(&self, slot: u16) -> &[u16] {
        let start = usize::from(slot) * self.width;
        &self.owners[start..start + self.width]
    }

    /// The owner (primary) of `slot`. Panics if `slot >= SLOTS`.
    pub fn owner(&self, slot: u16) -> &Member {
        &self.members[usize::from(self.owners(slot)[0])]
    }

    /// The slots whose primary is `members()[member]`, ascending.
    pub fn slots_of(&self, member: usize) -> impl Iterator<Item = u16> + '_ {
        self.owners
            .iter()
            .step_by(self.width)
            .enumerate()
            .filter(move |&(_, &o)| usize::from(o) == member)
            // Cast: enumerate runs over SLOTS entries, all < 2^16.
            .map(|(s, _)| s as u16)
    }

    /// Inclusive ranges of consecutive slots whose primary is `members()[member]`,
    /// ascending, as `CLUSTER NODES` / `CLUSTER SLOTS` list them.
    pub fn slot_ranges_of(&self, member: usize) -> Vec<(u16, u16)> {
        let mut ranges: Vec<(u16, u16)> = Vec::new();
        for s in self.slots_of(member) {
            match ranges.last_mut() {
                Some((_, end)) if *end + 1 == s => *end = s,
                _ => ranges.push((s, s)),
            }
        }
        ranges
    }

    /// The index of the member called `name` in [`members`](Placement::members).
    pub fn index_of(&self, name: &NodeName) -> Option<usize> {
        self.members.binary_search_by(|m| m.name.cmp(name)).ok()
    }

    fn owner_names(&self, slot: u16) -> impl Iterator<Item = &NodeName> + '_ {
        self.owners(slot)
            .iter()
            .map(|&i| &self.members[usize::from(i)].name)
    }
}

/// Every slot whose ordered owner list (owner, then replicas, compared by name) differs
/// between `old` and `new`, ascending by slot.
pub fn diff(old: &Placement, new: &Placement) -> Vec<SlotMove> {
    (0..SLOTS as u16)
        .filter(|&s| !old.owner_names(s).eq(new.owner_names(s)))
        .map(|s| SlotMove {
            slot: s,
            old: old.owner_names(s).cloned().collect(),
            new: new.owner_names(s).cloned().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
