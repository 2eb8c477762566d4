//! Whether the inter-node links reach the other members (gossip mode), and refusing those
//! they do not.
//!
//! Gossip runs over UDP and the links over TCP, so a member can be up to gossip and out of
//! reach of every link: a firewall that lets the gossip port through but not the cluster
//! port, a half-broken network. Left alone, such a member stays placed: requests for its keys
//! fail (a write answers TRYAGAIN, as the member may still run it), and no change of the
//! membership settles, since its hand-off reports cannot arrive.
//!
//! So every [`PROBE_EVERY`] this node asks each other member for nothing (an empty FETCH)
//! over its link. A member that has answered neither a probe nor any other request on the
//! link for [`refuse_after`] is *refused*: this node drops its gossip datagrams both ways
//! ([`shoal_gossip::GossipHandle::refuse`]), so that to this node it is silent. A node
//! refuses only while the members it does not refuse are a majority of those it knows
//! ([`may_refuse`]): refusing is how a majority does without a member it cannot reach, and
//! a node that cannot reach half of the others is the one out of reach. So two nodes cut
//! from each other (a cluster of two, or two halves of four) refuse nobody and stay as they
//! were: up to gossip, their requests across the cut failing. When no member reaches it over TCP, none answers
//! for it in SWIM's indirect probes either, and the cluster declares it down: its slots go
//! to their other copies, and the cluster settles without it. On its side, refused by
//! every member, it hears from nobody, suspects them all and is cut off (CLUSTERDOWN). When
//! a probe is answered again this node lifts the refusal; the member learns it was
//! declared down, rejoins under a new generation and is refilled.
//!
//! A member that some members reach and others do not (a cut between two nodes) stays up:
//! the others answer for it in the indirect probes. Once its probes have all failed for
//! [`cut_after`], this node's requests to it go through a member whose probes answer
//! ([`relays`], `relay`), until one of its own probes is answered again.
//!
//! `next` is the decision, a pure function; `run` is the task.
//!
//! A static cluster has no gossip to refuse and no membership to change: there a member is
//! marked unreachable when a request to it fails, and [`run_static`] probes each member so
//! marked every [`PROBE_EVERY`] until one answers, so that it counts as reachable again
//! (WAIT's count, CLUSTER NODES' `fail?`, the slots a node answers for in a fan-out) without
//! waiting for a client's request to go there.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use shoal_gossip::Liveness;
use shoal_wire::{PeerClient, WireError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::message::encode_fetch;
use crate::{Cluster, Server};

/// How often each other member is probed.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// How often while this node's view waits to be confirmed after a pause (`fence`).
const FENCED_PROBE_EVERY: Duration = Duration::from_millis(100);
/// How long a refused member that gossip no longer lists is still probed (so that a
/// member whose firewall is fixed later can come back); then it is forgotten.
const FORGET_REFUSED_AFTER: Duration = Duration::from_secs(600);

/// The probe rounds' beat: every [`PROBE_EVERY`], a late round not made up for.
fn probe_rounds() -> tokio::time::Interval {
    let mut tick = tokio::time::interval(PROBE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// How long a member's probes must all fail before it is refused: five `cluster-timeout-ms`,
/// at least 5 s (longer than a frozen link or a restart takes, which gossip handles).
pub fn refuse_after(request_timeout: Duration) -> Duration {
    (request_timeout * 5).max(Duration::from_secs(5))
}

/// How long a member's probes must all fail before requests to it go through a relay: two
/// `cluster-timeout-ms`, at least 2 s (two probes in a row, each waiting its timeout).
pub fn cut_after(request_timeout: Duration) -> Duration {
    (request_timeout * 2).max(Duration::from_secs(2))
}

/// Whether requests to a member go through a relay: while it is refused, or its probes have
/// all failed for `after` ([`cut_after`]). One answered probe ends it.
pub fn is_cut(state: Reach, now: Duration, after: Duration) -> bool {
    match state {
        Reach::Reached => false,
        Reach::Failing { since } => now.saturating_sub(since) >= after,
        Reach::Refused { .. } => true,
    }
}

/// The relay of each member (`states`: name, reach, its relay now; out in name order): for
/// a member whose link is cut ([`is_cut`]), its relay now while that one's link is not cut
/// itself, else the first member after it in name order (wrapping round) whose last probe
/// was answered; `None` for the others, and for a cut member when no member answers. A
/// relay is kept through a probe or two it misses: each change makes the member's requests
/// wait for those relayed before (`relay::Route`).
pub fn relays<'a>(
    states: &[(&'a str, Reach, Option<&'a str>)],
    now: Duration,
    after: Duration,
) -> Vec<(&'a str, Option<&'a str>)> {
    let mut sorted: Vec<(&str, Reach, Option<&str>)> = states.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    sorted.dedup_by(|a, b| a.0 == b.0);
    let n = sorted.len();
    let usable = |v: &str| {
        sorted
            .iter()
            .any(|&(m, r, _)| m == v && !is_cut(r, now, after))
    };
    sorted
        .iter()
        .enumerate()
        .map(|(i, &(name, reach, current))| {
            if !is_cut(reach, now, after) {
                return (name, None);
            }
            let via = current.filter(|&v| v != name && usable(v)).or_else(|| {
                (1..n)
                    .map(|k| sorted[(i + k) % n])
                    .find(|(_, r, _)| *r == Reach::Reached)
                    .map(|(v, _, _)| v)
            });
            (name, via)
        })
        .collect()
}

/// What the links know of one member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The last probe was answered (or none failed yet).
    Reached,
    /// Every probe since `since` failed.
    Failing { since: Duration },
    /// Refused since `since` (this node drops its gossip).
    Refused { since: Duration },
}

/// How one probe went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The member answered the probe (an error reply is an answer), or any other request
    /// on the link since the last probe.
    Answered,
    /// Nothing answered: the link could not be set up, broke, answered nothing in time, or
    /// is so stuck that requests queue up unsent (`Overloaded`) with no response coming.
    Failed,
}

impl Probe {
    /// `heard`: the link received a response since the last probe.
    fn of(result: &Result<shoal_wire::Response, WireError>, heard: bool) -> Probe {
        match result {
            Ok(_) | Err(WireError::Remote { .. }) => Probe::Answered,
            Err(_) if heard => Probe::Answered,
            Err(_) => Probe::Failed,
        }
    }
}

/// Whether this node may refuse `refused` of the `members` it knows (itself, the members up
/// to gossip, and those it refuses already): only while the others are a majority.
pub fn may_refuse(members: usize, refused: usize) -> bool {
    members.saturating_sub(refused) * 2 > members
}

/// The state after a probe that ended at `now` (time since the task started).
pub fn next(state: Reach, probe: Probe, now: Duration, after: Duration) -> Reach {
    match (state, probe) {
        (_, Probe::Answered) => Reach::Reached,
        (Reach::Reached, Probe::Failed) => Reach::Failing { since: now },
        (Reach::Failing { since }, Probe::Failed) if now.saturating_sub(since) >= after => {
            Reach::Refused { since: now }
        }
        (state, Probe::Failed) => state,
    }
}

/// One member as the task tracks it (in a `BTreeMap` by name, so that the probes go out
/// in the same order every run: the whole-cluster simulation replays a seed exactly).
struct Tracked {
    cluster: SocketAddr,
    gossip: SocketAddr,
    /// The incarnation the state is about.
    generation: u64,
    reach: Reach,
    /// The link's response count at the last probe (see `PeerClient::responses`).
    responses: u64,
    /// Gossip shows it up now.
    up: bool,
    /// A link of the task's own, for a member that is not in the view (declared down while
    /// refused); members in the view are probed over the view's link.
    own: Option<PeerClient>,
}

/// The probing task (gossip mode): runs until `stop`.
pub async fn run(node: Arc<Server>, stop: CancellationToken) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    let start = Instant::now();
    let after = refuse_after(cluster.timeouts.request);
    let cut = cut_after(cluster.timeouts.request);
    let mut tracked: BTreeMap<String, Tracked> = BTreeMap::new();
    let mut told: Option<HashSet<SocketAddr>> = None;
    // Refusals held back by the majority rule (logged when that starts).
    let mut withheld = false;
    let mut tick = probe_rounds();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
            // A pause of the process: a round at once, to confirm the view (`fence`), and
            // rounds at a quicker pace until one does: once it has rejoined, the others
            // send it commands that it refuses until then.
            _ = cluster.handoff.fence.seen.notified() => {}
            _ = tokio::time::sleep(FENCED_PROBE_EVERY), if cluster.handoff.fence.fenced() => {}
        }
        let up = follow_membership(cluster, &mut tracked, start.elapsed());
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = probe_all(cluster, &mut tracked, start, after) => {}
        }
        set_relays(cluster, &tracked, start.elapsed(), cut);
        let refusing: Vec<(&String, &Tracked)> = tracked
            .iter()
            .filter(|(_, t)| matches!(t.reach, Reach::Refused { .. }))
            .collect();
        let members = 1 + up + refusing.iter().filter(|(_, t)| !t.up).count();
        let refused: HashSet<SocketAddr> = if may_refuse(members, refusing.len()) {
            refusing.iter().map(|(_, t)| t.gossip).collect()
        } else {
            HashSet::new()
        };
        let withholding = refused.is_empty() && !refusing.is_empty();
        if withholding && !withheld {
            tracing::warn!(
                unreachable = refusing.len(),
                members,
                "the links reach no majority of the members: refusing none (this node is \
                 the one out of reach, or the cluster is split in halves)"
            );
        }
        withheld = withholding;
        cluster
            .stats
            .peers_refused
            .store(refused.len() as u64, Ordering::Relaxed);
        if told.as_ref() != Some(&refused) {
            if let Some(g) = cluster.gossip.get() {
                // A full queue is retried on the next tick (`told` stays as it was).
                if g.refuse(refused.clone()).is_ok() {
                    told = Some(refused);
                }
            }
        }
    }
}

/// Adds the members gossip shows up, starts afresh for a member gossip shows under a new
/// generation or address, and drops the ones it no longer shows up unless they are refused
/// (those are dropped `FORGET_REFUSED_AFTER` after they were refused).
///
/// A new generation ends a refusal at once: it is a new process (a restart), heard of
/// through the other members. A node that had refused a member that crashed would
/// otherwise drop the restarted member's gossip until its own next probe, while the
/// others already placed it again: the views would differ for longer than gossip takes.
///
/// Returns how many other members gossip shows up.
fn follow_membership(
    cluster: &Cluster,
    tracked: &mut BTreeMap<String, Tracked>,
    now: Duration,
) -> usize {
    // (name, cluster address, gossip address, generation, up)
    let known: Vec<(String, SocketAddr, SocketAddr, u64, bool)> = {
        let m = cluster.membership.lock().unwrap_or_else(|e| e.into_inner());
        let Some(m) = m.as_ref() else { return 0 };
        let me = m.local.name();
        m.members
            .iter()
            .filter(|mi| mi.id.name() != me)
            .map(|mi| {
                (
                    mi.id.name().to_owned(),
                    mi.id.cluster_addr(),
                    mi.id.gossip_addr(),
                    mi.id.generation(),
                    mi.liveness == Liveness::Up,
                )
            })
            .collect()
    };
    let up: HashSet<&str> = known.iter().filter(|k| k.4).map(|k| k.0.as_str()).collect();
    tracked.retain(|name, t| match t.reach {
        Reach::Refused { since } => {
            up.contains(name.as_str()) || now.saturating_sub(since) < FORGET_REFUSED_AFTER
        }
        _ => up.contains(name.as_str()),
    });
    let count = up.len();
    for t in tracked.values_mut() {
        t.up = false;
    }
    for (name, cluster_addr, gossip, generation, is_up) in known {
        let fresh = Tracked {
            cluster: cluster_addr,
            gossip,
            generation,
            reach: Reach::Reached,
            responses: 0,
            up: is_up,
            own: None,
        };
        match tracked.get_mut(&name) {
            Some(t)
                if t.generation != generation
                    || t.cluster != cluster_addr
                    || t.gossip != gossip =>
            {
                // Another process, or moved (a new pod address): what was known is about
                // the old one.
                *t = fresh;
            }
            Some(t) => t.up = is_up,
            None if is_up => {
                tracked.insert(name, fresh);
            }
            None => {}
        }
    }
    count
}

/// Points each member's route at its relay ([`relays`]), or back at its link.
fn set_relays(
    cluster: &Cluster,
    tracked: &BTreeMap<String, Tracked>,
    now: Duration,
    cut: Duration,
) {
    let view = cluster.view();
    // Members with a link in the view, at the address probed: only they are relayed to and
    // through.
    let links: Vec<(&str, Reach, &std::sync::Arc<crate::Peer>)> = tracked
        .iter()
        .filter_map(|(n, t)| view.link_at(n, t.cluster).map(|p| (n.as_str(), t.reach, p)))
        .collect();
    let now_vias: Vec<Option<(String, std::net::SocketAddr)>> =
        links.iter().map(|(_, _, p)| p.route.via()).collect();
    let states: Vec<(&str, Reach, Option<&str>)> = links
        .iter()
        .zip(&now_vias)
        .map(|((n, r, _), v)| (*n, *r, v.as_ref().map(|(name, _)| name.as_str())))
        .collect();
    for (name, via) in relays(&states, now, cut) {
        let Some((_, _, peer)) = links.iter().find(|(n, _, _)| *n == name) else {
            continue;
        };
        let next = via.and_then(|v| {
            links
                .iter()
                .find(|(n, _, _)| *n == v)
                .map(|(_, _, p)| crate::relay::Via {
                    name: v.to_owned(),
                    client: p.client.clone(),
                })
        });
        // Unchanged when it names the same member at the same address (a relay that
        // restarted elsewhere is a new one).
        if peer.route.via() == next.as_ref().map(|v| (v.name.clone(), v.client.addr())) {
            continue;
        }
        match &next {
            Some(v) => tracing::warn!(
                member = %name,
                relay = %v.name,
                "the inter-node link to the member answers nothing while gossip reaches it: \
                 requests to it go through another member"
            ),
            None => {
                tracing::info!(member = %name, "requests to the member go straight to it again")
            }
        }
        peer.route.set_via(next);
    }
}

/// A static cluster's probe of the members a request found unreachable (see the module's
/// docs): each is asked for nothing over its link every [`PROBE_EVERY`]; an answer marks it
/// reachable again. Never marks a member unreachable: that stays the requests' finding.
pub async fn run_static(node: Arc<Server>, stop: CancellationToken) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    let mut tick = probe_rounds();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let view = cluster.view();
        let probes = view
            .live_peers()
            .filter(|(_, p)| !p.reachable.load(Ordering::Relaxed))
            .map(|(info, p)| {
                let (name, peer, id, node) = (info.name.clone(), p.clone(), view.id, &node);
                async move {
                    // At most a round each, so one member that answers nothing does not
                    // hold up noticing another one back.
                    let asked = peer.client.request(id, encode_fetch(&[]));
                    let answered = tokio::time::timeout(PROBE_EVERY, asked).await;
                    if matches!(answered, Ok(Ok(_)))
                        && !peer.reachable.swap(true, Ordering::Relaxed)
                    {
                        tracing::info!(member = %name, "the member answers again");
                        crate::invalidations::route_changed(node);
                    }
                }
            });
        let probes: Vec<_> = probes.collect();
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = futures_util::future::join_all(probes) => {}
        }
    }
}

/// Probes every tracked member at once and updates its state; logs refusals and their end.
async fn probe_all(
    cluster: &Cluster,
    tracked: &mut BTreeMap<String, Tracked>,
    start: Instant,
    after: Duration,
) {
    let view = cluster.view();
    let round = cluster.handoff.fence.now_ms();
    let probes = tracked.iter_mut().map(|(name, t)| {
        let link = view.link_at(name, t.cluster).cloned();
        let client = match &link {
            Some(p) => {
                t.own = None;
                p.client.clone()
            }
            None => t
                .own
                .get_or_insert_with(|| {
                    PeerClient::new(t.cluster, cluster.auth.clone(), cluster.peer_config.clone())
                })
                .clone(),
        };
        let id = view.id;
        async move {
            let result = client.request(id, encode_fetch(&[])).await;
            // Any response on the link since the last probe counts: a link busy with other
            // requests may refuse the probe (`Overloaded`) while it answers them. (When the
            // member moves between the view's link and this task's own, the counts of two
            // links are compared once: at worst a refusal comes one probe later.)
            let responses = client.responses();
            let probe = Probe::of(&result, responses > t.responses);
            t.responses = responses;
            // Whether the member answered from the same view (it places keys as this node
            // does), if it answered.
            let answer = result.as_ref().ok().map(|r| r.epoch == id);
            // What CLUSTER NODES (`fail?`) and MOVED's choice of copy go by, as a request's
            // outcome would set it.
            if let Some(p) = link {
                p.reachable
                    .store(probe == Probe::Answered, Ordering::Relaxed);
            }
            (name, t, probe, answer)
        }
    });
    let (mut agreeing, mut differing) = (0, 0);
    for (name, t, probe, answer) in futures_util::future::join_all(probes).await {
        if view.nodes.iter().any(|n| &n.name == name) {
            match answer {
                Some(true) => agreeing += 1,
                Some(false) => differing += 1,
                None => {}
            }
        }
        let before = t.reach;
        t.reach = next(before, probe, start.elapsed(), after);
        match (before, t.reach) {
            (Reach::Refused { .. }, Reach::Reached) => tracing::info!(
                member = %name,
                cluster_addr = %t.cluster,
                "the inter-node link reaches the member again: its gossip is no longer refused"
            ),
            (Reach::Failing { .. }, Reach::Refused { .. }) => tracing::warn!(
                member = %name,
                cluster_addr = %t.cluster,
                "gossip reaches the member but the inter-node link (TCP) has not for {after:?}: \
                 refusing its gossip so that the cluster does without it (check that the \
                 cluster port is open between the nodes)"
            ),
            _ => {}
        }
    }
    // After a pause, a majority that answered from this node's view lifts the fence (and
    // the node may settle now: the hand-off's reports may all have come while it was fenced).
    let fence = &cluster.handoff.fence;
    if fence.fenced()
        && crate::fence::confirms(view.nodes.len(), agreeing, view.is_member(), differing)
        && fence.confirmed(round)
    {
        cluster.handoff.reevaluate(cluster);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AFTER: Duration = Duration::from_secs(5);

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn requests_go_through_a_relay_only_after_two_failed_probes_or_a_refusal() {
        let cut = cut_after(Duration::from_millis(1000));
        assert_eq!(cut, s(2));
        assert!(!is_cut(Reach::Reached, s(100), cut));
        assert!(!is_cut(Reach::Failing { since: s(10) }, s(11), cut));
        assert!(is_cut(Reach::Failing { since: s(10) }, s(12), cut));
        assert!(is_cut(Reach::Refused { since: s(15) }, s(15), cut));
        assert_eq!(cut_after(Duration::from_secs(3)), s(6));
    }

    #[test]
    fn a_cut_member_goes_through_the_next_reached_member_in_name_order() {
        let cut = s(2);
        let failing = Reach::Failing { since: s(10) };
        let states = [
            ("n3", Reach::Reached, None),
            ("n1", failing, None),
            ("n2", Reach::Refused { since: s(1) }, None),
            ("n4", Reach::Reached, None),
        ];
        // At 11 s n1 has failed for 1 s only; n2 is refused: n3 is the next reached after it.
        assert_eq!(
            relays(&states, s(11), cut),
            vec![("n1", None), ("n2", Some("n3")), ("n3", None), ("n4", None)]
        );
        // From 12 s n1 is cut too: n2 after it is not reached, so n3.
        assert_eq!(relays(&states, s(12), cut)[0], ("n1", Some("n3")));
        // Wrapping round: the last name's relay is the first reached one.
        let states = [
            ("a", Reach::Reached, None),
            ("b", Reach::Reached, None),
            ("c", failing, None),
        ];
        assert_eq!(relays(&states, s(20), cut)[2], ("c", Some("a")));
        // Nobody answers: no relay, requests go straight (and wait) as before.
        let states = [("a", failing, None), ("b", failing, None)];
        assert_eq!(relays(&states, s(20), cut), vec![("a", None), ("b", None)]);
        // A relay that missed a probe is kept until its own link counts as cut; then the
        // next reached member takes over.
        let states = [
            ("a", Reach::Failing { since: s(19) }, None),
            ("b", Reach::Reached, None),
            ("c", failing, Some("a")),
        ];
        assert_eq!(relays(&states, s(20), cut)[2], ("c", Some("a")));
        assert_eq!(relays(&states, s(21), cut)[2], ("c", Some("b")));
        // A link that answers again goes straight, whatever its relay was.
        let states = [
            ("a", Reach::Reached, None),
            ("c", Reach::Reached, Some("a")),
        ];
        assert_eq!(relays(&states, s(21), cut)[1], ("c", None));
    }

    #[test]
    fn a_member_is_refused_only_after_its_probes_failed_for_the_whole_span() {
        let mut r = Reach::Reached;
        r = next(r, Probe::Failed, s(10), AFTER);
        assert_eq!(r, Reach::Failing { since: s(10) });
        r = next(r, Probe::Failed, s(14), AFTER);
        assert_eq!(r, Reach::Failing { since: s(10) });
        r = next(r, Probe::Failed, s(15), AFTER);
        assert_eq!(r, Reach::Refused { since: s(15) });
        // Refused stays refused while probes fail.
        assert_eq!(next(r, Probe::Failed, s(100), AFTER), r);
    }

    #[test]
    fn one_answer_ends_a_failing_span_and_a_refusal() {
        let failing = Reach::Failing { since: s(10) };
        assert_eq!(next(failing, Probe::Answered, s(14), AFTER), Reach::Reached);
        // After an answer the span starts again.
        let r = next(Reach::Reached, Probe::Failed, s(16), AFTER);
        assert_eq!(next(r, Probe::Failed, s(20), AFTER), r);
        let refused = Reach::Refused { since: s(15) };
        assert_eq!(next(refused, Probe::Answered, s(30), AFTER), Reach::Reached);
    }

    #[test]
    fn any_response_on_the_link_counts_as_an_answer() {
        let overloaded: Result<shoal_wire::Response, WireError> = Err(WireError::Overloaded);
        // A busy link that answers other requests is reached; a stuck one, whose requests
        // queue up unsent and get no answer, is not.
        assert_eq!(Probe::of(&overloaded, true), Probe::Answered);
        assert_eq!(Probe::of(&overloaded, false), Probe::Failed);
        assert_eq!(Probe::of(&Err(WireError::Timeout), false), Probe::Failed);
        assert_eq!(Probe::of(&Err(WireError::Timeout), true), Probe::Answered);
        let remote = Err(WireError::Remote {
            code: shoal_wire::ErrorCode::Internal,
            message: String::new(),
        });
        assert_eq!(Probe::of(&remote, false), Probe::Answered);
    }

    #[test]
    fn a_node_refuses_only_while_the_others_are_a_majority() {
        // Three members: one may be refused, not two.
        assert!(may_refuse(3, 1));
        assert!(!may_refuse(3, 2));
        // Two members (a cut between the only two nodes): neither refuses the other, or
        // both would serve every key alone.
        assert!(!may_refuse(2, 1));
        // Four: one, not two (two halves cut from each other stay as they were).
        assert!(may_refuse(4, 1));
        assert!(!may_refuse(4, 2));
        // A node that cannot reach any other refuses nobody: it is the one out of reach.
        assert!(!may_refuse(4, 3));
        assert!(may_refuse(5, 2));
        assert!(may_refuse(1, 0));
    }

    #[test]
    fn the_span_is_five_request_timeouts_and_at_least_five_seconds() {
        assert_eq!(refuse_after(Duration::from_millis(1000)), s(5));
        assert_eq!(refuse_after(Duration::from_millis(100)), s(5));
        assert_eq!(refuse_after(Duration::from_secs(3)), s(15));
    }
}
