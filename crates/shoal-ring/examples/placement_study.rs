//! Measurement study: deterministic slot placements computed from the member list alone.
//!
//! Compares, for N in 3, 5, 10, 20, 50, 100 and 20 random name sets per N (seeded, so every run
//! prints the same numbers), with 1 replica (2 copies per slot):
//!
//! * `crate`: the crate's placement ([`Placement::new`]); when this study was made it was
//!   plain per-slot rendezvous, it now has bounded loads at 105 % (the study's `bl-slot
//!   floor1.05` family, with its own slot order and replica ranks placed slot by slot);
//! * `hrw`: plain per-slot rendezvous;
//! * `bl-slot`: rendezvous with bounded loads per slot, capacity `ceil(c * SLOTS / N)`, slots
//!   visited in a hashed, member-independent order, each to its best-scoring member with room;
//! * `hrw-gG`: rendezvous over groups of `G` consecutive slots, `score(member, group)`;
//! * `bl-gG`: bounded loads over whole groups (capacity `ceil(c * groups / N)` groups);
//! * `grbl-gG`: group-ranked bounded loads: members ranked per group of `G` slots, groups
//!   visited in hashed order, but capacity counted in slots (`ceil(c * SLOTS / N)`): a member
//!   that fills up inside a group takes that group's first slots, the rest go to the next
//!   member of the group's ranking with room;
//! * `bl-slot floor1.05`: as `bl-slot c1.05` with capacity `floor(1.05 * SLOTS / N)`;
//! * `greedy-slot`: bounded loads where the visiting order is all (member, slot) pairs by
//!   score, best first (a stable assignment with both sides ranking by the score);
//! * `fitted`: weighted rendezvous with real weights refitted from the loads (see [`fitted`]);
//! * `ring-vV`: a consistent-hash ring, V points per member, bounded loads in ring order;
//! * `maglev-slot`: Maglev lookup-table filling (per-member permutations, round robin);
//! * `contiguous`: members sorted by name, N equal contiguous ranges, replica = next member.
//!
//! Replicas: for the bounded variants the replica pass is a second bounded pass (same order,
//! same capacity, excluding the slot's owner); for `hrw*`, `fitted` and `maglev*` the replica
//! is the best-scoring non-owner member of the slot's unit; for `contiguous` the next member.
//!
//! Run with `cargo run --release -p shoal-ring --example placement_study`.

use std::time::Instant;

use shoal_ring::{Member, Placement, NAME_SEED, SLOTS};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Name sets per N.
const SETS: usize = 20;
const NS: [usize; 6] = [3, 5, 10, 20, 50, 100];
/// Seed of the member-independent visiting order of slots / groups.
const ORDER_SEED: u64 = 0x6f72_6465_7273_6565;
/// Seeds of Maglev's per-member offset and skip.
const MAGLEV_SEED_OFFSET: u64 = 0x6d61_676c_6576_6f66;
const MAGLEV_SEED_SKIP: u64 = 0x6d61_676c_6576_736b;
const NONE: u16 = u16::MAX;

/// splitmix64: a small deterministic generator, so runs are reproducible without `rand`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone, Debug)]
struct Node {
    id: u32,
    name: String,
    /// `XXH3_64(name, NAME_SEED)`: the crate's key for weight 1.
    key: u64,
}

fn node(id: u32, name: String) -> Node {
    let key = xxh3_64_with_seed(name.as_bytes(), NAME_SEED);
    Node { id, name, key }
}

/// The crate's score with the slot replaced by any 16-bit unit (slot or group index).
fn score(key: u64, unit: u16) -> u64 {
    let mut input = [0u8; 10];
    input[..8].copy_from_slice(&key.to_le_bytes());
    input[8..].copy_from_slice(&unit.to_le_bytes());
    xxh3_64_with_seed(&input, 0)
}

/// Owner and replica of every slot, as indices into the name-sorted member list.
struct Layout {
    owner: Vec<u16>,
    replica: Vec<u16>,
}

#[derive(Clone, Copy, Debug)]
enum Order {
    /// Units in the order of a member-independent hash.
    Hashed,
    /// All (member, unit) pairs by score, best first.
    Greedy,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `Placement::new` of the crate.
    Crate,
    /// Plain rendezvous over groups of `g` slots.
    Hrw {
        g: usize,
    },
    /// Bounded loads over units of `g` slots; `whole`: capacity in whole groups, else in slots.
    Bounded {
        g: usize,
        c: f64,
        whole: bool,
        order: Order,
        floor: bool,
    },
    /// Weighted rendezvous whose real weights are fitted to the member list (see [`fitted`]).
    Fitted {
        band: Option<f64>,
    },
    /// Consistent-hash ring, `v` points per member, bounded loads in ring order.
    Ring {
        v: u16,
        c: f64,
    },
    Maglev {
        g: usize,
    },
    Contiguous,
}

struct Cand {
    label: String,
    kind: Kind,
}

/// Members of every unit ranked by score, best first; ties to the smaller name (index).
/// `ranks[u * n..][..n]`.
fn rank_units(nodes: &[Node], units: usize) -> Vec<u16> {
    let n = nodes.len();
    let mut ranks = Vec::with_capacity(units * n);
    let mut sc: Vec<(u64, u16)> = Vec::with_capacity(n);
    for u in 0..units {
        sc.clear();
        sc.extend(
            nodes
                .iter()
                .enumerate()
                .map(|(i, m)| (score(m.key, u as u16), i as u16)),
        );
        sc.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        ranks.extend(sc.iter().map(|&(_, i)| i));
    }
    ranks
}

/// Best and second best member of every unit, expanded to slots.
fn hrw(nodes: &[Node], g: usize) -> Layout {
    let units = SLOTS / g;
    let mut owner = Vec::with_capacity(SLOTS);
    let mut replica = Vec::with_capacity(SLOTS);
    for u in 0..units {
        let mut best = (0u64, NONE);
        let mut second = (0u64, NONE);
        for (i, m) in nodes.iter().enumerate() {
            let s = score(m.key, u as u16);
            let i = i as u16;
            if best.1 == NONE || s > best.0 {
                second = best;
                best = (s, i);
            } else if second.1 == NONE || s > second.0 {
                second = (s, i);
            }
        }
        for _ in 0..g {
            owner.push(best.1);
            replica.push(second.1);
        }
    }
    Layout { owner, replica }
}

fn crate_placement(nodes: &[Node]) -> Layout {
    let members: Vec<Member> = nodes.iter().map(|m| Member::new(m.name.clone())).collect();
    let p = Placement::new(&members, 1, 0).expect("valid member list");
    let mut owner = Vec::with_capacity(SLOTS);
    let mut replica = Vec::with_capacity(SLOTS);
    for s in 0..SLOTS as u16 {
        let o = p.owners(s);
        owner.push(o[0]);
        replica.push(o[1]);
    }
    Layout { owner, replica }
}

/// Bounded loads. Units of `g` slots; every slot of a unit is offered to the unit's ranking
/// in ascending slot order, so a member that fills up mid-unit keeps the unit's first slots.
/// `floor`: capacity `floor(c * SLOTS / N)` when that still holds every slot, so that
/// max/mean <= c exactly.
fn bounded(nodes: &[Node], g: usize, c: f64, whole: bool, order: Order, floor: bool) -> Layout {
    let n = nodes.len();
    let units = SLOTS / g;
    let cap = if whole {
        (c * units as f64 / n as f64).ceil() as usize * g
    } else if floor && (c * SLOTS as f64 / n as f64).floor() as usize * n >= SLOTS {
        (c * SLOTS as f64 / n as f64).floor() as usize
    } else {
        (c * SLOTS as f64 / n as f64).ceil() as usize
    };
    let ranks = rank_units(nodes, units);
    let mut owner = vec![NONE; SLOTS];
    let mut replica = vec![NONE; SLOTS];
    let mut room = vec![cap; n];
    let mut rroom = vec![cap; n];
    match order {
        Order::Hashed => {
            let mut seq: Vec<u16> = (0..units as u16).collect();
            seq.sort_by_key(|&u| (xxh3_64_with_seed(&u.to_le_bytes(), ORDER_SEED), u));
            for &u in &seq {
                let rank = &ranks[usize::from(u) * n..][..n];
                for o in &mut owner[usize::from(u) * g..][..g] {
                    let i = *rank
                        .iter()
                        .find(|&&i| room[usize::from(i)] > 0)
                        .expect("total capacity >= SLOTS");
                    *o = i;
                    room[usize::from(i)] -= 1;
                }
            }
            for &u in &seq {
                let rank = &ranks[usize::from(u) * n..][..n];
                for s in usize::from(u) * g..(usize::from(u) + 1) * g {
                    let o = owner[s];
                    if let Some(&i) = rank.iter().find(|&&i| i != o && rroom[usize::from(i)] > 0) {
                        replica[s] = i;
                        rroom[usize::from(i)] -= 1;
                    }
                }
            }
        }
        Order::Greedy => {
            let mut pairs: Vec<(u64, u16, u16)> = Vec::with_capacity(units * n);
            for u in 0..units {
                for (i, m) in nodes.iter().enumerate() {
                    pairs.push((score(m.key, u as u16), i as u16, u as u16));
                }
            }
            pairs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
            let mut left = vec![g; units];
            for &(_, i, u) in &pairs {
                let (i, u) = (usize::from(i), usize::from(u));
                if room[i] == 0 || left[u] == 0 {
                    continue;
                }
                for o in &mut owner[u * g..][..g] {
                    if *o == NONE && room[i] > 0 {
                        *o = i as u16;
                        room[i] -= 1;
                        left[u] -= 1;
                    }
                }
            }
            let mut left = vec![g; units];
            for &(_, i, u) in &pairs {
                let (iu, u) = (usize::from(i), usize::from(u));
                if rroom[iu] == 0 || left[u] == 0 {
                    continue;
                }
                for s in u * g..(u + 1) * g {
                    if replica[s] == NONE && owner[s] != i && rroom[iu] > 0 {
                        replica[s] = i;
                        rroom[iu] -= 1;
                        left[u] -= 1;
                    }
                }
            }
        }
    }
    // A replica can be left without a member with room when only the slot's owner still has
    // room (rare, at the very end of the pass): overload the best other member.
    for s in 0..SLOTS {
        if replica[s] == NONE {
            let u = s / g;
            let rank = &ranks[u * n..][..n];
            replica[s] = *rank.iter().find(|&&i| i != owner[s]).expect("n >= 2");
        }
    }
    Layout { owner, replica }
}

/// Maglev table filling over units of `g` slots (the table size, a power of two, takes odd
/// skips so every member's sequence is a permutation). Replica: best other rendezvous score.
fn maglev(nodes: &[Node], g: usize) -> Layout {
    let n = nodes.len();
    let units = SLOTS / g;
    let perm: Vec<(usize, usize)> = nodes
        .iter()
        .map(|m| {
            let k = m.key.to_le_bytes();
            let offset = (xxh3_64_with_seed(&k, MAGLEV_SEED_OFFSET) % units as u64) as usize;
            let skip =
                (xxh3_64_with_seed(&k, MAGLEV_SEED_SKIP) % (units as u64 / 2)) as usize * 2 + 1;
            (offset, skip)
        })
        .collect();
    let mut next = vec![0usize; n];
    let mut table = vec![NONE; units];
    let mut filled = 0;
    'fill: loop {
        for i in 0..n {
            let (offset, skip) = perm[i];
            loop {
                let u = (offset + next[i] * skip) % units;
                next[i] += 1;
                if table[u] == NONE {
                    table[u] = i as u16;
                    filled += 1;
                    break;
                }
            }
            if filled == units {
                break 'fill;
            }
        }
    }
    let mut owner = Vec::with_capacity(SLOTS);
    let mut replica = Vec::with_capacity(SLOTS);
    for (u, &o) in table.iter().enumerate() {
        let r = nodes
            .iter()
            .enumerate()
            .filter(|&(i, _)| i as u16 != o)
            .max_by(|a, b| {
                score(a.1.key, u as u16)
                    .cmp(&score(b.1.key, u as u16))
                    .then(b.0.cmp(&a.0))
            })
            .map(|(i, _)| i as u16)
            .expect("n >= 2");
        for _ in 0..g {
            owner.push(o);
            replica.push(r);
        }
    }
    Layout { owner, replica }
}

/// Weighted rendezvous with real weights: owner = argmin over members of `E(m, slot) / w_m`
/// with `E = -ln(u)`, `u` the score as a fraction of 2^64 (an Exp(1) draw, so member `m` wins
/// a slot with probability `w_m / sum w`). Weights start at 1 and are refitted from the loads
/// for `FIT_ITERS` rounds: with `band = None` every member is scaled by mean/load (towards
/// exact balance); with `band = Some(b)` only members above `b * mean` are scaled down to it.
/// Replica: second best with the same weights. (Floating point: a study, not a spec.)
fn fitted(nodes: &[Node], band: Option<f64>) -> Layout {
    const FIT_ITERS: usize = 30;
    let n = nodes.len();
    let mut e = Vec::with_capacity(SLOTS * n);
    for s in 0..SLOTS {
        for m in nodes {
            let u = (score(m.key, s as u16) >> 11) as f64 / (1u64 << 53) as f64;
            e.push(-(u + 0.5 / (1u64 << 53) as f64).ln());
        }
    }
    let mut w = vec![1.0f64; n];
    let mean = SLOTS as f64 / n as f64;
    let assign = |w: &[f64], owner: &mut Vec<u16>, replica: &mut Vec<u16>| {
        owner.clear();
        replica.clear();
        for s in 0..SLOTS {
            let row = &e[s * n..][..n];
            let (mut b, mut bi, mut c, mut ci) = (f64::INFINITY, NONE, f64::INFINITY, NONE);
            for (i, (&x, &wi)) in row.iter().zip(w).enumerate() {
                let v = x / wi;
                if v < b {
                    (c, ci) = (b, bi);
                    (b, bi) = (v, i as u16);
                } else if v < c {
                    (c, ci) = (v, i as u16);
                }
            }
            owner.push(bi);
            replica.push(ci);
        }
    };
    let mut owner = Vec::with_capacity(SLOTS);
    let mut replica = Vec::with_capacity(SLOTS);
    for _ in 0..FIT_ITERS {
        assign(&w, &mut owner, &mut replica);
        let mut load = vec![0usize; n];
        for &o in &owner {
            load[usize::from(o)] += 1;
        }
        for (wi, &l) in w.iter_mut().zip(&load) {
            let l = (l as f64).max(1.0);
            match band {
                None => *wi *= mean / l,
                Some(b) if l > b * mean => *wi *= b * mean / l,
                Some(_) => {}
            }
        }
    }
    assign(&w, &mut owner, &mut replica);
    Layout { owner, replica }
}

/// Ring consistent hashing with bounded loads: `v` points per member at
/// `XXH3_64(key ++ point index, 0)`'s top 32 bits; slot `s` sits at `s << 18` and the slots
/// are visited in order 0..SLOTS, each taking the first point clockwise whose member has room.
/// Replica: the next point clockwise after that with another member that has replica room.
fn ring(nodes: &[Node], v: u16, c: f64) -> Layout {
    let n = nodes.len();
    let cap = (c * SLOTS as f64 / n as f64).ceil() as usize;
    let mut points: Vec<(u32, u16)> = Vec::with_capacity(n * usize::from(v));
    for (i, m) in nodes.iter().enumerate() {
        for p in 0..v {
            points.push(((score(m.key, p) >> 32) as u32, i as u16));
        }
    }
    points.sort_unstable();
    let len = points.len();
    let mut room = vec![cap; n];
    let mut rroom = vec![cap; n];
    let mut owner = Vec::with_capacity(SLOTS);
    let mut replica = Vec::with_capacity(SLOTS);
    for s in 0..SLOTS {
        let pos = (s as u32) << 18;
        let start = points.partition_point(|&(p, _)| p < pos);
        let mut k = start;
        let o = loop {
            let (_, i) = points[k % len];
            if room[usize::from(i)] > 0 {
                room[usize::from(i)] -= 1;
                break i;
            }
            k += 1;
        };
        let mut r = NONE;
        for j in 1..=len {
            let (_, i) = points[(k + j) % len];
            if i != o && rroom[usize::from(i)] > 0 {
                r = i;
                break;
            }
        }
        if r == NONE {
            r = (1..=len)
                .map(|j| points[(k + j) % len].1)
                .find(|&i| i != o)
                .expect("n >= 2");
        } else {
            rroom[usize::from(r)] -= 1;
        }
        owner.push(o);
        replica.push(r);
    }
    Layout { owner, replica }
}

fn contiguous(nodes: &[Node]) -> Layout {
    let n = nodes.len();
    let owner: Vec<u16> = (0..SLOTS).map(|s| (s * n / SLOTS) as u16).collect();
    let replica = owner
        .iter()
        .map(|&o| ((usize::from(o) + 1) % n) as u16)
        .collect();
    Layout { owner, replica }
}

/// Builds `kind` for `nodes` (any order) and returns (owner ids, replica ids, the sorted
/// members' index layout, the sorted members).
fn build(kind: Kind, nodes: &[Node]) -> (Layout, Vec<Node>) {
    let mut sorted = nodes.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let layout = match kind {
        Kind::Crate => crate_placement(&sorted),
        Kind::Hrw { g } => hrw(&sorted, g),
        Kind::Bounded {
            g,
            c,
            whole,
            order,
            floor,
        } => bounded(&sorted, g, c, whole, order, floor),
        Kind::Fitted { band } => fitted(&sorted, band),
        Kind::Ring { v, c } => ring(&sorted, v, c),
        Kind::Maglev { g } => maglev(&sorted, g),
        Kind::Contiguous => contiguous(&sorted),
    };
    (layout, sorted)
}

fn ids(idx: &[u16], sorted: &[Node]) -> Vec<u32> {
    idx.iter().map(|&i| sorted[usize::from(i)].id).collect()
}

fn max_over_mean(idx: &[u16], n: usize) -> f64 {
    let mut count = vec![0usize; n];
    for &i in idx {
        count[usize::from(i)] += 1;
    }
    *count.iter().max().expect("n >= 1") as f64 / (SLOTS as f64 / n as f64)
}

fn runs<T: PartialEq>(it: impl Iterator<Item = T>) -> usize {
    let mut count = 0;
    let mut last: Option<T> = None;
    for x in it {
        if last.as_ref() != Some(&x) {
            count += 1;
        }
        last = Some(x);
    }
    count
}

/// Slots whose owner differs.
fn owner_moves(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

/// Slots whose unordered copy set {owner, replica} differs.
fn set_moves(ao: &[u32], ar: &[u32], bo: &[u32], br: &[u32]) -> usize {
    (0..SLOTS)
        .filter(|&s| {
            let a = (ao[s].min(ar[s]), ao[s].max(ar[s]));
            let b = (bo[s].min(br[s]), bo[s].max(br[s]));
            a != b
        })
        .count()
}

#[derive(Default)]
struct Stat {
    sum: f64,
    max: f64,
    k: usize,
}

impl Stat {
    fn add(&mut self, x: f64) {
        self.sum += x;
        self.max = self.max.max(x);
        self.k += 1;
    }
    fn mean(&self) -> f64 {
        self.sum / self.k as f64
    }
    fn mw(&self) -> String {
        format!("{:.3}/{:.3}", self.mean(), self.max)
    }
}

#[derive(Default)]
struct Row {
    bal: Stat,
    rbal: Stat,
    join: Stat,
    leave: Stat,
    set_join: Stat,
    set_leave: Stat,
    ranges: Stat,
    pair_ranges: Stat,
    ms: Stat,
}

fn candidates() -> Vec<Cand> {
    let mut v = vec![
        Cand {
            label: "crate".into(),
            kind: Kind::Crate,
        },
        Cand {
            label: "hrw".into(),
            kind: Kind::Hrw { g: 1 },
        },
    ];
    for c in [1.03, 1.05, 1.08, 1.10] {
        v.push(Cand {
            label: format!("bl-slot c{c:.2}"),
            kind: Kind::Bounded {
                g: 1,
                c,
                whole: false,
                order: Order::Hashed,
                floor: false,
            },
        });
    }
    v.push(Cand {
        label: "bl-slot floor1.05".into(),
        kind: Kind::Bounded {
            g: 1,
            c: 1.05,
            whole: false,
            order: Order::Hashed,
            floor: true,
        },
    });
    for g in [4, 16, 64, 128] {
        v.push(Cand {
            label: format!("hrw-g{g}"),
            kind: Kind::Hrw { g },
        });
    }
    for g in [16, 64] {
        v.push(Cand {
            label: format!("bl-g{g} c1.05"),
            kind: Kind::Bounded {
                g,
                c: 1.05,
                whole: true,
                order: Order::Hashed,
                floor: false,
            },
        });
    }
    for (g, c) in [(4, 1.05), (16, 1.05), (64, 1.05), (64, 1.10), (128, 1.05)] {
        v.push(Cand {
            label: format!("grbl-g{g} c{c:.2}"),
            kind: Kind::Bounded {
                g,
                c,
                whole: false,
                order: Order::Hashed,
                floor: false,
            },
        });
    }
    v.push(Cand {
        label: "greedy-slot c1.05".into(),
        kind: Kind::Bounded {
            g: 1,
            c: 1.05,
            whole: false,
            order: Order::Greedy,
            floor: false,
        },
    });
    v.push(Cand {
        label: "fitted exact".into(),
        kind: Kind::Fitted { band: None },
    });
    v.push(Cand {
        label: "fitted cap1.04".into(),
        kind: Kind::Fitted { band: Some(1.04) },
    });
    for vp in [16, 64] {
        v.push(Cand {
            label: format!("ring-v{vp} c1.05"),
            kind: Kind::Ring { v: vp, c: 1.05 },
        });
    }
    v.push(Cand {
        label: "maglev-slot".into(),
        kind: Kind::Maglev { g: 1 },
    });
    v.push(Cand {
        label: "contiguous".into(),
        kind: Kind::Contiguous,
    });
    v
}

fn main() {
    let started = Instant::now();
    let cands = candidates();
    // Consistency check: the generic per-slot rendezvous is the crate's placement while no
    // cap binds (3 members).
    {
        let mut rng = Rng(1);
        let nodes: Vec<Node> = (0..3)
            .map(|i| node(i, format!("node-{:016x}", rng.next())))
            .collect();
        let (a, _) = build(Kind::Crate, &nodes);
        let (b, _) = build(Kind::Hrw { g: 1 }, &nodes);
        assert!(
            a.owner == b.owner && a.replica == b.replica,
            "hrw-g1 != crate"
        );
    }
    println!(
        "placement study: {SETS} name sets per N, 1 replica; cells are mean/worst over sets \
         unless noted"
    );
    println!(
        "bal = max/mean owned slots; rbal = same for replica slots; join/leave = moved owners / \
         ideal (SLOTS/(N+1), SLOTS/N);"
    );
    println!(
        "set j/l = slots whose {{owner,replica}} set changed / ideal (2*SLOTS/(N+1), 2*SLOTS/N), \
         mean; rng = owner ranges, pair = (owner,replica) ranges, mean; ms = mean build time"
    );
    for &n in &NS {
        let mut rows: Vec<Row> = cands.iter().map(|_| Row::default()).collect();
        let mut rng = Rng(0x5eed_0000 + n as u64);
        let mut next_id = 0u32;
        let mut fresh = |rng: &mut Rng| {
            next_id += 1;
            node(next_id, format!("node-{:016x}", rng.next()))
        };
        for _ in 0..SETS {
            let base: Vec<Node> = (0..n).map(|_| fresh(&mut rng)).collect();
            let mut joined = base.clone();
            joined.push(fresh(&mut rng));
            let mut left = base.clone();
            left.remove(rng.below(n));
            for (cand, row) in cands.iter().zip(rows.iter_mut()) {
                let t = Instant::now();
                let (b, bs) = build(cand.kind, &base);
                row.ms.add(t.elapsed().as_secs_f64() * 1e3);
                let (j, js) = build(cand.kind, &joined);
                let (l, ls) = build(cand.kind, &left);
                for lay in [&b, &j, &l] {
                    assert!(lay.owner.iter().zip(&lay.replica).all(|(o, r)| o != r));
                }
                row.bal.add(max_over_mean(&b.owner, n));
                row.rbal.add(max_over_mean(&b.replica, n));
                row.ranges.add(runs(b.owner.iter()) as f64);
                row.pair_ranges
                    .add(runs(b.owner.iter().zip(&b.replica)) as f64);
                let (bo, br) = (ids(&b.owner, &bs), ids(&b.replica, &bs));
                let (jo, jr) = (ids(&j.owner, &js), ids(&j.replica, &js));
                let (lo, lr) = (ids(&l.owner, &ls), ids(&l.replica, &ls));
                let ideal_j = SLOTS as f64 / (n + 1) as f64;
                let ideal_l = SLOTS as f64 / n as f64;
                row.join.add(owner_moves(&bo, &jo) as f64 / ideal_j);
                row.leave.add(owner_moves(&bo, &lo) as f64 / ideal_l);
                row.set_join
                    .add(set_moves(&bo, &br, &jo, &jr) as f64 / (2.0 * ideal_j).min(SLOTS as f64));
                row.set_leave
                    .add(set_moves(&bo, &br, &lo, &lr) as f64 / (2.0 * ideal_l).min(SLOTS as f64));
            }
        }
        println!();
        println!("N = {n}");
        println!(
            "{:<17}  {:<11}  {:<11}  {:<11}  {:<11}  {:<11}  {:>5}  {:>5}  {:>6}",
            "candidate", "bal", "rbal", "join", "leave", "set j/l", "rng", "pair", "ms"
        );
        for (cand, row) in cands.iter().zip(&rows) {
            println!(
                "{:<17}  {}  {}  {}  {}  {:.3}/{:.3}  {:>5.0}  {:>5.0}  {:>6.2}",
                cand.label,
                row.bal.mw(),
                row.rbal.mw(),
                row.join.mw(),
                row.leave.mw(),
                row.set_join.mean(),
                row.set_leave.mean(),
                row.ranges.mean(),
                row.pair_ranges.mean(),
                row.ms.mean(),
            );
        }
    }
    println!();
    println!("total run time: {:.1} s", started.elapsed().as_secs_f64());
}
