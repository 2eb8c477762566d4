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
//! pair, and keeps the best `replicas + 1` members of each slot in one flat `Vec<u16>` of
//! `SLOTS * (replicas + 1)` member indices (at most 16,384 x 3 x 2 bytes = 96 KiB for 2
//! replicas). [`diff`] compares two snapshots for the rebalancer.
//!
//! # Algorithm: weighted rendezvous (highest random weight) hashing, exact hash
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
//! the C library, `xxhash_rust::xxh3::xxh3_64_with_seed` here). The members of a slot are
//! ranked by `score` descending, ties (probability ~2^-64) broken by the smaller name bytes
//! first; the first is the owner, the next `min(replicas, members - 1)` are the replicas. A
//! member of weight `w` scores the best of `w` independent draws, so it wins a slot as often
//! as `w` unit members would together: `w` shares of the slots. Weights are integers so the
//! whole computation is integer arithmetic on a published hash: no floating point `ln` whose
//! last bit could differ between libm builds. The cost is one hash per (copy, slot), hence [`MAX_WEIGHT`].
//!
//! # Why not the `hashring` crate
//!
//! `hashring` 0.3.6 has no virtual nodes, clones the ring on every `get_with_replicas`,
//! returns consecutive ring points so "3 replicas" were often fewer than 3 machines, and hashes
//! through `std::hash::Hash`, whose output Rust does not specify: two builds of Shoal could
//! place keys differently during a rolling upgrade. Here the hash is written out above and a
//! golden test pins its output.
//!
//! # Why no balancing step (bounded loads)
//!
//! The movement rule — adding or removing one member changes a slot's owner only to the
//! added member or away from the removed one — together with history independence forces
//! rendezvous form. Proof: write `P(S)` for the owner of a slot under member set `S`. The rule
//! says `P(S + x)` is `P(S)` or `x`. Let `c = P(T)`; for every `a != c` in `T`,
//! `P(T) ∈ {P(T - a), a}` gives `P(T - a) = c`; removing members one by one down to `{c, y}`
//! gives `P({c, y}) = c` for every `y` in `T`. So the owner always beats every other member
//! head to head, the head-to-head results admit no cycle (a 3-cycle would leave a 3-set without
//! an owner), and the owner is the top of a fixed per-slot order of all possible members in
//! which a pair's order depends on that pair only. A balancing step such as bounded loads
//! (capacity `ceil(1.05 * fair share)`) makes a pair's order depend on third members, so some
//! single join or leave moves a slot between two old members. Balance can then only come
//! from the choice of per-slot orders; of the families tried (independent hashes as here,
//! Weyl sequences `a_m * slot + b_m`, XOR translations of one fixed permutation) none
//! approached 1.05 at 100 members: in 20 sets of 100 members the mean max/mean was about 1.2
//! for independent hashes, 1.19 for Weyl (worst 1.75) and 1.16 for XOR translations, which
//! also tie two members whose 14-bit translations collide. So this crate keeps the movement
//! rule exactly and independent scores, whose imbalance is that of a multinomial draw.
//!
//! # Measured (release build, 2 cores; `balance_sweep` below re-measures)
//!
//! Equal weights, 100 random name sets per N, max/mean primary slots per member, and slots
//! whose owner moves when one member joins N (as a multiple of the ideal `SLOTS / (N + 1)`)
//! or leaves N (ideal `SLOTS / N`). A join or leave moves exactly the slots of that member,
//! so movement is that member's load over the mean and shares balance's spread. The worst
//! max/mean stays within 1.05 up to N = 6 and the mean within 1.05 up to N = 14; beyond, it
//! grows like `1 + c * sqrt(N / SLOTS)` (mean 1.13 at 50, 1.20 at 100; worst seen 1.34 at
//! N = 95). Movement stays within 1.1 x ideal in every trial up to N = 22 (joins) and N = 13
//! (leaves). The 10-byte input goes through XXH3's 9-16 byte path (a 128-bit multiply); an
//! earlier version hashed the 2-byte slot with the key as seed, where XXH3's 1-3 byte path is
//! only an XOR and an avalanche, and saw a 5.9 sigma outlier (1.41 at N = 81).
//! The 1.05 balance target is therefore NOT met past small N; the movement rule is.
//!
//! | N   | max/mean mean | max/mean worst | join movement worst | leave movement worst |
//! |-----|---------------|----------------|---------------------|----------------------|
//! | 3 | 1.012 | 1.036 | 1.028 | 1.025 |
//! | 4 | 1.015 | 1.042 | 1.031 | 1.036 |
//! | 5 | 1.020 | 1.042 | 1.041 | 1.034 |
//! | 6 | 1.024 | 1.048 | 1.048 | 1.048 |
//! | 7 | 1.028 | 1.061 | 1.059 | 1.061 |
//! | 8 | 1.031 | 1.061 | 1.045 | 1.039 |
//! | 9 | 1.036 | 1.068 | 1.071 | 1.056 |
//! | 10 | 1.039 | 1.068 | 1.063 | 1.065 |
//! | 11 | 1.040 | 1.073 | 1.063 | 1.049 |
//! | 12 | 1.045 | 1.079 | 1.083 | 1.068 |
//! | 13 | 1.047 | 1.083 | 1.079 | 1.074 |
//! | 14 | 1.050 | 1.110 | 1.067 | 1.110 |
//! | 15 | 1.052 | 1.096 | 1.051 | 1.063 |
//! | 16 | 1.055 | 1.100 | 1.081 | 1.068 |
//! | 17 | 1.057 | 1.102 | 1.077 | 1.076 |
//! | 18 | 1.061 | 1.104 | 1.095 | 1.065 |
//! | 19 | 1.065 | 1.120 | 1.085 | 1.114 |
//! | 20 | 1.065 | 1.130 | 1.088 | 1.091 |
//! | 21 | 1.069 | 1.137 | 1.076 | 1.068 |
//! | 22 | 1.068 | 1.120 | 1.089 | 1.120 |
//! | 23 | 1.072 | 1.116 | 1.109 | 1.092 |
//! | 24 | 1.073 | 1.128 | 1.096 | 1.085 |
//! | 25 | 1.076 | 1.160 | 1.081 | 1.120 |
//! | 26 | 1.078 | 1.133 | 1.107 | 1.124 |
//! | 27 | 1.080 | 1.132 | 1.116 | 1.098 |
//! | 28 | 1.084 | 1.140 | 1.110 | 1.111 |
//! | 29 | 1.088 | 1.152 | 1.086 | 1.101 |
//! | 30 | 1.087 | 1.139 | 1.122 | 1.119 |
//! | 31 | 1.093 | 1.145 | 1.119 | 1.114 |
//! | 32 | 1.092 | 1.162 | 1.096 | 1.098 |
//! | 33 | 1.095 | 1.200 | 1.096 | 1.088 |
//! | 34 | 1.096 | 1.160 | 1.124 | 1.139 |
//! | 35 | 1.094 | 1.141 | 1.176 | 1.098 |
//! | 36 | 1.101 | 1.162 | 1.095 | 1.123 |
//! | 37 | 1.103 | 1.179 | 1.130 | 1.107 |
//! | 38 | 1.099 | 1.160 | 1.083 | 1.139 |
//! | 39 | 1.106 | 1.178 | 1.128 | 1.104 |
//! | 40 | 1.105 | 1.182 | 1.131 | 1.113 |
//! | 41 | 1.109 | 1.194 | 1.141 | 1.111 |
//! | 42 | 1.111 | 1.184 | 1.131 | 1.143 |
//! | 43 | 1.113 | 1.173 | 1.101 | 1.134 |
//! | 44 | 1.115 | 1.192 | 1.107 | 1.141 |
//! | 45 | 1.123 | 1.236 | 1.207 | 1.115 |
//! | 46 | 1.115 | 1.196 | 1.119 | 1.148 |
//! | 47 | 1.122 | 1.196 | 1.131 | 1.168 |
//! | 48 | 1.124 | 1.207 | 1.151 | 1.134 |
//! | 49 | 1.121 | 1.199 | 1.166 | 1.113 |
//! | 50 | 1.130 | 1.196 | 1.117 | 1.147 |
//! | 51 | 1.129 | 1.195 | 1.158 | 1.130 |
//! | 52 | 1.125 | 1.206 | 1.129 | 1.139 |
//! | 53 | 1.135 | 1.229 | 1.117 | 1.139 |
//! | 54 | 1.129 | 1.219 | 1.172 | 1.124 |
//! | 55 | 1.138 | 1.208 | 1.138 | 1.115 |
//! | 56 | 1.133 | 1.275 | 1.183 | 1.142 |
//! | 57 | 1.139 | 1.211 | 1.097 | 1.145 |
//! | 58 | 1.141 | 1.246 | 1.167 | 1.235 |
//! | 59 | 1.146 | 1.242 | 1.128 | 1.120 |
//! | 60 | 1.146 | 1.304 | 1.191 | 1.179 |
//! | 61 | 1.147 | 1.255 | 1.162 | 1.124 |
//! | 62 | 1.152 | 1.256 | 1.180 | 1.113 |
//! | 63 | 1.143 | 1.230 | 1.152 | 1.146 |
//! | 64 | 1.148 | 1.250 | 1.194 | 1.141 |
//! | 65 | 1.149 | 1.222 | 1.249 | 1.131 |
//! | 66 | 1.152 | 1.245 | 1.170 | 1.152 |
//! | 67 | 1.150 | 1.235 | 1.154 | 1.202 |
//! | 68 | 1.153 | 1.262 | 1.150 | 1.162 |
//! | 69 | 1.159 | 1.251 | 1.201 | 1.158 |
//! | 70 | 1.159 | 1.252 | 1.153 | 1.136 |
//! | 71 | 1.158 | 1.252 | 1.147 | 1.148 |
//! | 72 | 1.163 | 1.252 | 1.150 | 1.191 |
//! | 73 | 1.161 | 1.256 | 1.233 | 1.141 |
//! | 74 | 1.165 | 1.265 | 1.167 | 1.174 |
//! | 75 | 1.169 | 1.241 | 1.197 | 1.163 |
//! | 76 | 1.166 | 1.266 | 1.147 | 1.146 |
//! | 77 | 1.173 | 1.264 | 1.157 | 1.227 |
//! | 78 | 1.172 | 1.243 | 1.162 | 1.176 |
//! | 79 | 1.170 | 1.273 | 1.172 | 1.143 |
//! | 80 | 1.172 | 1.235 | 1.147 | 1.226 |
//! | 81 | 1.178 | 1.285 | 1.186 | 1.216 |
//! | 82 | 1.174 | 1.261 | 1.206 | 1.186 |
//! | 83 | 1.183 | 1.266 | 1.159 | 1.201 |
//! | 84 | 1.182 | 1.271 | 1.162 | 1.189 |
//! | 85 | 1.175 | 1.261 | 1.176 | 1.147 |
//! | 86 | 1.181 | 1.297 | 1.227 | 1.265 |
//! | 87 | 1.184 | 1.269 | 1.182 | 1.174 |
//! | 88 | 1.182 | 1.294 | 1.157 | 1.294 |
//! | 89 | 1.186 | 1.282 | 1.170 | 1.168 |
//! | 90 | 1.185 | 1.252 | 1.172 | 1.192 |
//! | 91 | 1.189 | 1.277 | 1.179 | 1.277 |
//! | 92 | 1.185 | 1.275 | 1.158 | 1.157 |
//! | 93 | 1.190 | 1.260 | 1.205 | 1.198 |
//! | 94 | 1.197 | 1.314 | 1.258 | 1.234 |
//! | 95 | 1.201 | 1.339 | 1.195 | 1.212 |
//! | 96 | 1.202 | 1.307 | 1.208 | 1.230 |
//! | 97 | 1.196 | 1.314 | 1.214 | 1.226 |
//! | 98 | 1.201 | 1.322 | 1.154 | 1.232 |
//! | 99 | 1.195 | 1.281 | 1.202 | 1.154 |
//! | 100 | 1.203 | 1.294 | 1.196 | 1.227 |
//!
//! Only slots involving the joining or leaving member ever move (exact, tested). With 2
//! replicas, a join changes the replica set of about `3 / (N + 1)` of the slots (the slots
//! whose top 3 the new member enters), the ideal for 3 copies. Building a placement takes
//! about 1.3 ms for 3 members, 5 ms for 10 and 31 ms for 100 (2 replicas, release;
//! `benches/benches/ring.rs`); `owners()` is one multiply and a slice.

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
        let mut owners = Vec::with_capacity(SLOTS * width);
        // The best `width` (score, index) so far, best first.
        let mut top: Vec<(u64, u16)> = Vec::with_capacity(width + 1);
        for slot in 0..SLOTS as u16 {
            top.clear();
            for (i, k) in keys.iter().enumerate() {
                let s = score(k, slot);
                if top.len() == width && s <= top[width - 1].0 {
                    continue;
                }
                // Members are visited in name order, so on equal scores the one already
                // kept (smaller name) stays ahead.
                let at = top.partition_point(|&(t, _)| t >= s);
                // Cast: i < MAX_MEMBERS, checked above.
                top.insert(at, (s, i as u16));
                top.truncate(width);
            }
            owners.extend(top.iter().map(|&(_, i)| i));
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
