use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

fn members(names: &[&str]) -> Vec<Member> {
    names.iter().map(|n| Member::new(*n)).collect()
}

fn named(n: usize, tag: u64) -> Vec<Member> {
    (0..n)
        .map(|i| Member::new(format!("node-{tag:x}-{i}")))
        .collect()
}

/// Primary slot count per member.
fn loads(p: &Placement) -> Vec<usize> {
    let mut l = vec![0; p.members().len()];
    for s in 0..SLOTS as u16 {
        l[usize::from(p.owners(s)[0])] += 1;
    }
    l
}

fn max_over_mean(p: &Placement) -> f64 {
    let l = loads(p);
    *l.iter().max().unwrap() as f64 * l.len() as f64 / SLOTS as f64
}

/// A member list of `n` random distinct names.
fn member_set(n: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Member>> {
    prop::collection::btree_set("[a-z0-9.:-]{1,12}", n)
        .prop_map(|names| names.into_iter().map(Member::new).collect())
}

#[test]
fn errors() {
    assert_eq!(Placement::new(&[], 1, 0), Err(PlacementError::NoMembers));
    assert_eq!(
        Placement::new(&members(&["a", "b", "a"]), 1, 0),
        Err(PlacementError::DuplicateName("a".into()))
    );
    let mut m = members(&["a", "b"]);
    m[1].weight = 0;
    assert_eq!(
        Placement::new(&m, 1, 0),
        Err(PlacementError::ZeroWeight("b".into()))
    );
    m[1].weight = MAX_WEIGHT + 1;
    assert_eq!(
        Placement::new(&m, 1, 0),
        Err(PlacementError::WeightTooLarge {
            name: "b".into(),
            weight: MAX_WEIGHT + 1
        })
    );
    let many = named(MAX_MEMBERS + 1, 0);
    assert_eq!(
        Placement::new(&many, 0, 0),
        Err(PlacementError::TooManyMembers(MAX_MEMBERS + 1))
    );
}

#[test]
fn accessors() {
    let p = Placement::new(&members(&["c", "a", "b"]), 5, 42).unwrap();
    assert_eq!(p.epoch(), 42);
    let names: Vec<&str> = p.members().iter().map(|m| m.name.0.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(p.width(), 3, "replicas are capped at members - 1");
    assert_eq!(p.index_of(&"b".into()), Some(1));
    assert_eq!(p.index_of(&"z".into()), None);
    let mut seen = BTreeSet::new();
    for m in 0..3 {
        let slots: Vec<u16> = p.slots_of(m).collect();
        let from_ranges: Vec<u16> = p
            .slot_ranges_of(m)
            .iter()
            .flat_map(|&(a, b)| a..=b)
            .collect();
        assert_eq!(slots, from_ranges);
        for w in p.slot_ranges_of(m).windows(2) {
            assert!(w[0].1 + 1 < w[1].0, "ranges are maximal");
        }
        for &s in &slots {
            assert_eq!(p.owner(s).name, p.members()[m].name);
            assert!(seen.insert(s));
        }
    }
    assert_eq!(seen.len(), SLOTS);

    let single = Placement::new(&members(&["only"]), 2, 0).unwrap();
    assert_eq!(single.owners(SLOTS as u16 - 1), &[0]);
    assert_eq!(single.slot_ranges_of(0), vec![(0, SLOTS as u16 - 1)]);
}

/// Pins the hash: if this fails, placement changed and a rolling upgrade would disagree on
/// owners. Change it only together with a deliberate, announced placement version change.
#[test]
fn golden() {
    let p = Placement::new(&members(&["alpha", "beta", "gamma"]), 2, 0).unwrap();
    let got: Vec<(u16, Vec<&str>)> = [0u16, 1, 2, 100, 5000, 12182, 16383]
        .iter()
        .map(|&s| {
            (
                s,
                p.owners(s)
                    .iter()
                    .map(|&i| p.members()[usize::from(i)].name.0.as_str())
                    .collect(),
            )
        })
        .collect();
    let want: Vec<(u16, Vec<&str>)> = GOLDEN.iter().map(|(s, o)| (*s, o.to_vec())).collect();
    assert_eq!(got, want);
    assert_eq!(loads(&p), GOLDEN_LOADS);
}

const GOLDEN: [(u16, [&str; 3]); 7] = [
    (0, ["beta", "alpha", "gamma"]),
    (1, ["gamma", "alpha", "beta"]),
    (2, ["gamma", "alpha", "beta"]),
    (100, ["gamma", "beta", "alpha"]),
    (5000, ["alpha", "beta", "gamma"]),
    (12182, ["gamma", "alpha", "beta"]),
    (16383, ["alpha", "gamma", "beta"]),
];
const GOLDEN_LOADS: [usize; 3] = [5475, 5504, 5405];

#[test]
fn names_matter() {
    let a = Placement::new(&members(&["a", "b", "c"]), 1, 0).unwrap();
    let b = Placement::new(&members(&["a", "b", "d"]), 1, 0).unwrap();
    let moved = diff(&a, &b);
    assert!(!moved.is_empty());
    for m in &moved {
        assert!(
            m.old.contains(&"c".into()) || m.new.contains(&"d".into()),
            "{m:?}"
        );
    }
}

#[test]
fn weights() {
    let mut m = named(4, 7);
    m[0].weight = 2;
    m[3].weight = 3;
    let p = Placement::new(&m, 1, 0).unwrap();
    let l = loads(&p);
    let unit = SLOTS as f64 / 7.0;
    for (member, load) in p.members().iter().zip(&l) {
        let want = unit * f64::from(member.weight);
        assert!(
            (*load as f64 - want).abs() < 0.1 * want,
            "{member:?} got {load}, want ~{want}"
        );
    }
}

/// Copies per member at each rank (owner = rank 0).
fn rank_loads(p: &Placement, rank: usize) -> Vec<usize> {
    let mut l = vec![0; p.members().len()];
    for s in 0..SLOTS as u16 {
        l[usize::from(p.owners(s)[rank])] += 1;
    }
    l
}

/// Slots whose owner differs between two placements.
fn owner_moves(a: &Placement, b: &Placement) -> usize {
    diff(a, b).iter().filter(|m| m.old[0] != m.new[0]).count()
}

#[test]
fn a_join_moves_about_the_ideal_share() {
    let base = named(10, 3);
    let mut grown = base.clone();
    grown.push(Member::new("newcomer"));
    let old = Placement::new(&base, 2, 0).unwrap();
    let new = Placement::new(&grown, 2, 1).unwrap();
    let moves = diff(&old, &new);
    let ideal = 3.0 * SLOTS as f64 / 11.0;
    assert!(
        (moves.len() as f64) < 1.25 * ideal,
        "{} replica-set changes, ideal {ideal}",
        moves.len()
    );
    let owners = owner_moves(&old, &new) as f64;
    let ideal = SLOTS as f64 / 11.0;
    assert!(owners < 1.25 * ideal, "{owners} owner moves, ideal {ideal}");
    // Most changed slots changed because the newcomer took a copy of them.
    let with_newcomer = moves
        .iter()
        .filter(|m| m.new.contains(&"newcomer".into()))
        .count();
    assert!(
        with_newcomer * 10 >= moves.len() * 9,
        "{with_newcomer} of {}",
        moves.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn order_does_not_matter(
        set in member_set(1..=12),
        replicas in 0usize..4,
        seed in any::<u64>(),
    ) {
        let a = Placement::new(&set, replicas, 9).unwrap();
        let mut shuffled = set.clone();
        // A deterministic shuffle from the seed.
        let len = shuffled.len();
        for i in (1..len).rev() {
            let j = (seed.rotate_left(i as u32) % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        let b = Placement::new(&shuffled, replicas, 9).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn replicas_are_distinct(set in member_set(1..=12), replicas in 0usize..5) {
        let p = Placement::new(&set, replicas, 0).unwrap();
        prop_assert_eq!(p.width(), (replicas + 1).min(set.len()));
        for s in 0..SLOTS as u16 {
            let o = p.owners(s);
            let distinct: BTreeSet<u16> = o.iter().copied().collect();
            prop_assert_eq!(distinct.len(), o.len());
        }
    }

    /// Every member's copies at every rank stay within its cap: at most 5 % over its share
    /// (see `LOAD_FACTOR_PERCENT`).
    #[test]
    fn balanced(set in member_set(3..=40), replicas in 0usize..3) {
        let p = Placement::new(&set, replicas, 0).unwrap();
        let cap = cap(1, set.len() as u64) as usize;
        for rank in 0..p.width() {
            let most = rank_loads(&p, rank).into_iter().max().unwrap();
            prop_assert!(most <= cap, "rank {} holds {} > cap {} ({} members)", rank, most, cap, set.len());
        }
        let share = SLOTS as f64 / set.len() as f64;
        prop_assert!(max_over_mean(&p) <= (cap as f64 / share).max(1.05) + 1e-9);
    }

    /// Joining and leaving are the same pair of placements read both ways: `with` has the
    /// extra member, `without` does not. Bounded loads may move a slot between two other
    /// members (a cap that no longer binds, or binds elsewhere), but few: the owner changes
    /// stay within a third over the ideal share, and the newcomer takes about its share.
    #[test]
    fn a_join_or_leave_moves_little(
        set in member_set(2..=16),
        extra in "[A-Z]{1,8}",
        replicas in 0usize..3,
    ) {
        let without = Placement::new(&set, replicas, 0).unwrap();
        let mut grown = set.clone();
        grown.push(Member::new(extra.clone()));
        let with = Placement::new(&grown, replicas, 1).unwrap();
        let n = grown.len();
        let ideal = SLOTS as f64 / n as f64;
        let moved = owner_moves(&without, &with);
        prop_assert!((moved as f64) <= 1.35 * ideal,
            "{} owner moves joining {} members, ideal {}", moved, n - 1, ideal);
        let x = with.index_of(&NodeName(extra)).unwrap();
        let took = with.slots_of(x).count() as f64;
        prop_assert!(took >= 0.8 * ideal && took <= cap(1, n as u64) as f64,
            "the newcomer owns {} slots, ideal {}", took, ideal);
    }
}

/// Balance and movement over every N from 3 to 100, the figures in the crate docs. Run:
/// `CARGO_TARGET_DIR=/tmp/target-ring cargo test --release -p shoal-ring -- --ignored --nocapture balance_sweep`
/// (`SHOAL_RING_TRIALS` sets the random name sets per N, default 20).
#[test]
#[ignore]
fn balance_sweep() {
    let trials: u64 = std::env::var("SHOAL_RING_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(20);
    println!(
        "| N | max/mean mean | max/mean worst | join movement mean | join worst | leave movement mean | leave worst | owner ranges |"
    );
    for n in (3..=20usize).chain((25..=100).step_by(5)) {
        let (mut sum, mut worst) = (0.0f64, 0.0f64);
        let (mut join_sum, mut join_worst, mut leave_sum, mut leave_worst) =
            (0.0, 0.0f64, 0.0, 0.0f64);
        let mut ranges = 0usize;
        for t in 0..trials {
            let set = named(n + 1, t * 1000 + n as u64);
            let with = Placement::new(&set, 1, 0).unwrap();
            let without = Placement::new(&set[..n], 1, 0).unwrap();
            let r = max_over_mean(&without);
            sum += r;
            worst = worst.max(r);
            ranges += (0..n)
                .map(|m| without.slot_ranges_of(m).len())
                .sum::<usize>();
            let moved = owner_moves(&without, &with) as f64;
            // Joining N: ideal SLOTS / (N + 1); the same pair read backwards is N + 1 minus
            // one, ideal SLOTS / (N + 1) too, reported against the set of N + 1.
            let join = moved * (n + 1) as f64 / SLOTS as f64;
            join_sum += join;
            join_worst = join_worst.max(join);
            // Leaving: the first member of a set of N leaves (ideal SLOTS / N).
            let smaller = Placement::new(&set[1..n], 1, 1).unwrap();
            let leave = owner_moves(&without, &smaller) as f64 * n as f64 / SLOTS as f64;
            leave_sum += leave;
            leave_worst = leave_worst.max(leave);
        }
        let t = trials as f64;
        println!(
            "| {n} | {:.3} | {worst:.3} | {:.3} | {join_worst:.3} | {:.3} | {leave_worst:.3} | {} |",
            sum / t,
            join_sum / t,
            leave_sum / t,
            ranges / trials as usize
        );
    }
}

/// Pins bounded loads where they bind (20 members, caps at 860 slots per rank): the slot
/// order, the caps and the per-rank choice. Change it only with `ALGORITHM_VERSION`.
#[test]
fn golden_bounded() {
    let m = named(20, 0x60_1d);
    let p = Placement::new(&m, 1, 0).unwrap();
    let owners: Vec<(u16, u16, u16)> = [0u16, 1, 777, 8191, 12345, 16383]
        .iter()
        .map(|&s| (s, p.owners(s)[0], p.owners(s)[1]))
        .collect();
    assert_eq!(owners, GOLDEN_BOUNDED);
    assert_eq!(rank_loads(&p, 0), GOLDEN_BOUNDED_LOADS);
    let cap = cap(1, 20) as usize;
    assert!(
        rank_loads(&p, 0).iter().filter(|&&l| l == cap).count() >= 2,
        "caps bind"
    );
}

const GOLDEN_BOUNDED: [(u16, u16, u16); 6] = [
    (0, 0, 3),
    (1, 11, 14),
    (777, 15, 10),
    (8191, 19, 7),
    (12345, 17, 15),
    (16383, 0, 12),
];
const GOLDEN_BOUNDED_LOADS: [usize; 20] = [
    845, 860, 767, 828, 805, 823, 767, 843, 825, 810, 820, 851, 814, 806, 834, 860, 772, 816, 818,
    820,
];
