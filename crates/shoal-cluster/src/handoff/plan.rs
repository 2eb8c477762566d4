//! The hand-off plan: for each slot whose copies changed between the settled view and the
//! current one, which live copy sends it to which new copies.

use shoal_store::SLOTS;

use crate::{NodeInfo, View};

/// What this node must send for `base -> current`: (slot, new copies to send it to).
pub(super) fn plan(base: &View, current: &View) -> Vec<(u16, Vec<NodeInfo>)> {
    let me = &current.myself;
    let mut out = Vec::new();
    for slot in 0..SLOTS {
        let old: Vec<&NodeInfo> = base
            .owners(slot)
            .iter()
            .map(|&m| &base.nodes[usize::from(m)])
            .collect();
        let new: Vec<&NodeInfo> = current
            .owners(slot)
            .iter()
            .map(|&m| &current.nodes[usize::from(m)])
            .collect();
        if old.len() == new.len() && old.iter().zip(&new).all(|(a, b)| a.same_incarnation(b)) {
            continue;
        }
        let alive_old: Vec<&NodeInfo> = old.into_iter().filter(|n| current.is_alive(n)).collect();
        let Some(sender) = alive_old.first() else {
            continue; // no live copy left: nothing anyone can send
        };
        if !sender.same_incarnation(me) {
            continue;
        }
        let targets: Vec<NodeInfo> = new
            .into_iter()
            .filter(|n| !n.same_incarnation(me) && !alive_old.iter().any(|o| o.same_incarnation(n)))
            .cloned()
            .collect();
        if !targets.is_empty() {
            out.push((slot, targets));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::Cluster;
    use crate::{MemberRow, MemberState};
    use shoal_engine::config::NodeConfig;

    /// One member: name, generation, state.
    type Row = (&'static str, u64, MemberState);

    fn rows(members: &[Row]) -> Vec<MemberRow> {
        members
            .iter()
            .enumerate()
            .map(|(i, (name, generation, state))| MemberRow {
                info: NodeInfo::new(
                    name,
                    format!("127.0.0.1:{}", 1000 + i).parse().unwrap(),
                    format!("127.0.0.1:{}", 2000 + i).parse().unwrap(),
                    *generation,
                ),
                state: *state,
                suspect: false,
            })
            .collect()
    }

    /// Checks the hand-off rule from `base` to `current` as every live node plans it: each
    /// new copy of a slot that no live old copy is gets the slot from exactly one live
    /// node, that node held it, and nobody sends a slot to a copy that already held it.
    fn check(replicas: usize, base: &[Row], current: &[Row]) -> usize {
        let config = NodeConfig {
            cluster_mode: "gossip".into(),
            cluster_secret: "s".into(),
            replicas,
            ..NodeConfig::default()
        };
        let first = rows(current)[0].info.clone();
        let cluster = Cluster::for_gossip(&config, first, None).unwrap();
        let alive: Vec<&Row> = current
            .iter()
            .filter(|r| r.2 != MemberState::Down)
            .collect();
        let mut sends: HashMap<(u16, String), Vec<String>> = HashMap::new();
        for me in &alive {
            // A node that was not in `base` (a newcomer, a new incarnation) held nothing.
            if !base.iter().any(|b| b.0 == me.0 && b.1 == me.1) {
                continue;
            }
            let b = cluster.build_view(1, rows(base), me.0).unwrap();
            let c = cluster.build_view(2, rows(current), me.0).unwrap();
            for (slot, targets) in plan(&b, &c) {
                let held = b
                    .owners(slot)
                    .iter()
                    .any(|&m| b.nodes[usize::from(m)].name == me.0);
                assert!(held, "{} sends slot {slot} it did not hold", me.0);
                for t in targets {
                    sends
                        .entry((slot, t.name))
                        .or_default()
                        .push(me.0.to_string());
                }
            }
        }
        let view = cluster.build_view(2, rows(current), alive[0].0).unwrap();
        let old = cluster.build_view(1, rows(base), base[0].0).unwrap();
        let mut expected = 0;
        for slot in 0..SLOTS {
            let alive_old: Vec<&NodeInfo> = old
                .owners(slot)
                .iter()
                .map(|&m| &old.nodes[usize::from(m)])
                .filter(|n| view.is_alive(n))
                .collect();
            for &m in view.owners(slot) {
                let n = &view.nodes[usize::from(m)];
                let got = sends.remove(&(slot, n.name.clone())).unwrap_or_default();
                if alive_old.iter().any(|o| o.same_incarnation(n)) || alive_old.is_empty() {
                    assert!(
                        got.is_empty(),
                        "slot {slot} sent to {} that held it",
                        n.name
                    );
                } else {
                    assert_eq!(got.len(), 1, "slot {slot} to {}: senders {got:?}", n.name);
                    expected += 1;
                }
            }
        }
        assert!(
            sends.is_empty(),
            "sends to non-copies: {:?}",
            sends.keys().take(3)
        );
        expected
    }

    use MemberState::{Down, Joining, Leaving, Serving};

    #[tokio::test]
    async fn a_promoted_owner_fetches_only_from_a_leaving_owner() {
        let base = [
            ("a", 1, Serving),
            ("b", 1, Serving),
            ("c", 1, Serving),
            ("d", 1, Serving),
        ];
        let config = NodeConfig {
            cluster_mode: "gossip".into(),
            cluster_secret: "s".into(),
            replicas: 1,
            ..NodeConfig::default()
        };
        let cluster = Cluster::for_gossip(&config, rows(&base)[0].info.clone(), None).unwrap();
        for gone in [Leaving, Down] {
            let mut current = base;
            current[2].2 = gone;
            let (mut promoted, mut arriving) = (0, 0);
            for me in ["a", "b", "d"] {
                let b = cluster.build_view(1, rows(&base), me).unwrap();
                let v = cluster.build_view(2, rows(&current), me).unwrap();
                for slot in 0..SLOTS {
                    let name = |view: &View, i: usize| {
                        view.nodes[usize::from(view.owners(slot)[i])].name.clone()
                    };
                    let was = b
                        .owners(slot)
                        .iter()
                        .any(|&m| b.nodes[usize::from(m)].name == me);
                    let is = v.owners(slot).contains(&v.me);
                    let took_over = name(&b, 0) == "c" && name(&v, 0) == me;
                    let expected = is && (!was || (took_over && gone == Leaving));
                    assert_eq!(
                        crate::handoff::settle::receives(&v, Some(&b), slot),
                        expected,
                        "{me}, slot {slot}, c {gone:?}"
                    );
                    promoted += usize::from(took_over && was);
                    arriving += usize::from(is && !was);
                }
            }
            // c owned about a quarter of the slots; its replica takes over each.
            assert!(promoted > SLOTS as usize / 8, "{promoted}");
            assert!(arriving > SLOTS as usize / 8, "{arriving}");
        }
    }

    #[tokio::test]
    async fn every_moved_copy_has_exactly_one_sender() {
        let abc = [("a", 1, Serving), ("b", 1, Serving), ("c", 1, Serving)];
        // A join: the newcomer gets its share from the old owners.
        let join = check(
            1,
            &abc,
            &[
                ("a", 1, Serving),
                ("b", 1, Serving),
                ("c", 1, Serving),
                ("d", 1, Joining),
            ],
        );
        assert!(join > 16384 / 4, "a join moves copies: {join}");
        // Two joins at once.
        assert!(
            check(
                1,
                &abc,
                &[
                    ("a", 1, Serving),
                    ("b", 1, Serving),
                    ("c", 1, Serving),
                    ("d", 1, Joining),
                    ("e", 1, Joining),
                ],
            ) > 0
        );
        // A crash: the surviving copy re-replicates.
        let crash = check(
            1,
            &abc,
            &[("a", 1, Serving), ("b", 1, Serving), ("c", 1, Down)],
        );
        assert!(crash > 0);
        // A restart: the new incarnation is refilled like a newcomer.
        let restart = check(
            1,
            &abc,
            &[("a", 1, Serving), ("b", 1, Serving), ("c", 2, Joining)],
        );
        assert!(
            restart > 16384 / 2,
            "c held two thirds of the copies: {restart}"
        );
        // A leave: the leaving node, alive but not placed, hands its slots over.
        assert!(
            check(
                1,
                &abc,
                &[("a", 1, Serving), ("b", 1, Serving), ("c", 1, Leaving)]
            ) > 0
        );
        // Three copies, two crash at once.
        let abcde = [
            ("a", 1, Serving),
            ("b", 1, Serving),
            ("c", 1, Serving),
            ("d", 1, Serving),
            ("e", 1, Serving),
        ];
        assert!(
            check(
                2,
                &abcde,
                &[
                    ("a", 1, Serving),
                    ("b", 1, Down),
                    ("c", 1, Serving),
                    ("d", 1, Down),
                    ("e", 1, Serving),
                ],
            ) > 0
        );
    }
}
