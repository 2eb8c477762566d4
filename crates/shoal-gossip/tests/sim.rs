//! Deterministic simulation of the gossip layer on virtual time.
//!
//! Real foca instances (through [`GossipCore`]: our identity, codec, envelope and
//! metadata), one event heap (deliveries and node wake-ups), a seeded RNG, simulated
//! latency, loss, partitions, crashes and restarts. Each test prints its seed; replay one
//! with `SHOAL_SIM_SEED=<seed> cargo test -p shoal-gossip --test sim <name>`.
//!
//! Figures (detection time at 3/10/100/500 nodes, bytes per second per node):
//! `cargo test --release -p shoal-gossip --test sim figures -- --ignored --nocapture`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use shoal_gossip::{Auth, GossipConfig, GossipCore, GossipStats, Liveness, NodeId, NodeState};

const MS: Duration = Duration::from_millis(1);

fn seed_or(default: u64) -> u64 {
    let seed = std::env::var("SHOAL_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    eprintln!("sim seed = {seed} (replay: SHOAL_SIM_SEED={seed})");
    seed
}

fn addr_of(i: usize) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 0, (i / 256) as u8, (i % 256) as u8)),
        7946,
    )
}

struct SimNode {
    core: GossipCore,
    stats: Arc<GossipStats>,
    alive: bool,
    /// Partition group; datagrams only cross between equal groups.
    group: u8,
    bytes_sent: u64,
    scheduled_wake: Option<Duration>,
    seen_version: u64,
}

enum Event {
    Deliver {
        to: usize,
        from: usize,
        data: Vec<u8>,
    },
    Wake(usize),
}

struct Entry {
    at: Duration,
    seq: u64,
    event: Event,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

struct Sim {
    now: Duration,
    seq: u64,
    rng: SmallRng,
    heap: BinaryHeap<Reverse<Entry>>,
    nodes: Vec<SimNode>,
    by_addr: HashMap<SocketAddr, usize>,
    config: GossipConfig,
    auth: Auth,
    seeds: Vec<SocketAddr>,
    /// Probability that a datagram is lost.
    loss: f64,
    latency_ms: (u64, u64),
    /// (name, generation) whose Down is being timed, and when each node first saw it.
    watch: Option<(String, u64)>,
    down_seen: Vec<Option<Duration>>,
}

impl Sim {
    fn new(seed: u64, config: GossipConfig) -> Self {
        Self {
            now: Duration::ZERO,
            seq: 0,
            rng: SmallRng::seed_from_u64(seed),
            heap: BinaryHeap::new(),
            nodes: Vec::new(),
            by_addr: HashMap::new(),
            config,
            auth: Auth::new("sim", b"cluster secret").unwrap(),
            seeds: (0..3).map(addr_of).collect(),
            loss: 0.0,
            latency_ms: (1, 5),
            watch: None,
            down_seen: Vec::new(),
        }
    }

    fn push(&mut self, at: Duration, event: Event) {
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            at,
            seq: self.seq,
            event,
        }));
    }

    fn make_core(
        &mut self,
        i: usize,
        generation: u64,
        auth: Auth,
    ) -> (GossipCore, Arc<GossipStats>) {
        let a = addr_of(i);
        let id = NodeId::new(&format!("node-{i}"), a, a, a, generation).unwrap();
        let stats = Arc::new(GossipStats::default());
        let mut core = GossipCore::new(
            self.config.clone(),
            auth,
            id,
            NodeState::Serving,
            self.rng.random(),
            stats.clone(),
        );
        core.set_seeds(self.seeds.clone());
        core.start(self.now);
        (core, stats)
    }

    /// Adds node `nodes.len()`, with the cluster's credentials unless `auth` is given.
    fn add_node(&mut self, auth: Option<Auth>) -> usize {
        let i = self.nodes.len();
        let auth = auth.unwrap_or_else(|| self.auth.clone());
        let (core, stats) = self.make_core(i, 1, auth);
        self.nodes.push(SimNode {
            core,
            stats,
            alive: true,
            group: 0,
            bytes_sent: 0,
            scheduled_wake: None,
            seen_version: 0,
        });
        self.down_seen.push(None);
        self.by_addr.insert(addr_of(i), i);
        self.pump(i);
        i
    }

    fn crash(&mut self, i: usize) {
        self.nodes[i].alive = false;
    }

    /// Restarts a crashed node empty, with the next generation.
    fn restart(&mut self, i: usize) {
        let generation = self.nodes[i].core.identity().generation() + 1;
        let (core, stats) = self.make_core(i, generation, self.auth.clone());
        let n = &mut self.nodes[i];
        n.core = core;
        n.stats = stats;
        n.alive = true;
        n.scheduled_wake = None;
        n.seen_version = 0;
        self.pump(i);
    }

    /// Sends what node `i` queued and schedules its next wake-up.
    fn pump(&mut self, i: usize) {
        while let Some((to, data)) = self.nodes[i].core.poll_transmit() {
            self.nodes[i].bytes_sent += data.len() as u64;
            if self.rng.random_bool(self.loss) {
                continue;
            }
            let Some(&to) = self.by_addr.get(&to) else {
                continue;
            };
            let lat = self.rng.random_range(self.latency_ms.0..=self.latency_ms.1);
            self.push(
                self.now + Duration::from_millis(lat),
                Event::Deliver { to, from: i, data },
            );
        }
        if let Some(at) = self.nodes[i].core.next_deadline() {
            let n = &mut self.nodes[i];
            if n.scheduled_wake.is_none_or(|w| at < w || w < self.now) {
                n.scheduled_wake = Some(at);
                self.push(at.max(self.now), Event::Wake(i));
            }
        }
        self.observe(i);
    }

    fn observe(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let m = node.core.membership();
        if m.version == node.seen_version {
            return;
        }
        node.seen_version = m.version;
        if let Some((name, generation)) = &self.watch {
            if self.down_seen[i].is_none()
                && m.get(name).is_some_and(|x| {
                    x.liveness == Liveness::Down || x.id.generation() > *generation
                })
            {
                self.down_seen[i] = Some(self.now);
            }
        }
    }

    fn step(&mut self) -> bool {
        let Some(Reverse(e)) = self.heap.pop() else {
            return false;
        };
        self.now = self.now.max(e.at);
        match e.event {
            Event::Deliver { to, from, data } => {
                let (t, f) = (&self.nodes[to], &self.nodes[from]);
                if t.alive && t.group == f.group {
                    self.nodes[to]
                        .core
                        .handle_datagram(self.now, addr_of(from), &data);
                    self.pump(to);
                }
            }
            Event::Wake(i) => {
                if self.nodes[i].alive && self.nodes[i].scheduled_wake == Some(e.at) {
                    self.nodes[i].scheduled_wake = None;
                    self.nodes[i].core.handle_timers(self.now);
                    self.pump(i);
                }
            }
        }
        true
    }

    fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.heap.peek().is_some_and(|Reverse(e)| e.at <= end) {
            self.step();
        }
        self.now = end;
    }

    /// Runs until `pred` holds (checked every `every`) or `limit` passes; returns the time taken.
    fn run_until(
        &mut self,
        limit: Duration,
        every: Duration,
        mut pred: impl FnMut(&Sim) -> bool,
    ) -> Option<Duration> {
        let start = self.now;
        while self.now - start <= limit {
            if pred(self) {
                return Some(self.now - start);
            }
            self.run_for(every);
        }
        None
    }

    fn live(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].alive)
    }

    /// Every live cluster node sees exactly the live cluster nodes up, at their current
    /// generation, with their metadata, and nobody else up.
    fn converged(&self, members: &[usize]) -> bool {
        let live: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| self.nodes[i].alive)
            .collect();
        live.iter().all(|&i| {
            let m = self.nodes[i].core.membership();
            m.up().count() == live.len()
                && live.iter().all(|&j| {
                    let id = self.nodes[j].core.identity();
                    m.get(id.name()).is_some_and(|x| {
                        x.liveness == Liveness::Up
                            && x.id.generation() == id.generation()
                            && x.state == Some(NodeState::Serving)
                    })
                })
        })
    }

    fn watch_down(&mut self, i: usize) {
        let id = self.nodes[i].core.identity();
        self.watch = Some((id.name().to_owned(), id.generation()));
        self.down_seen = vec![None; self.nodes.len()];
    }
}

fn cluster(seed: u64, n: usize, config: GossipConfig, loss: f64) -> Sim {
    let mut sim = Sim::new(seed, config);
    sim.loss = loss;
    for _ in 0..n {
        sim.add_node(None);
        sim.run_for(10 * MS);
    }
    sim
}

fn config_for(n: u32) -> GossipConfig {
    GossipConfig {
        cluster_size_hint: NonZeroU32::new(n).unwrap(),
        ..GossipConfig::default()
    }
}

/// Convergence time after the last node started.
fn converge(sim: &mut Sim, limit: Duration) -> Duration {
    let all: Vec<usize> = (0..sim.nodes.len()).collect();
    let every = if all.len() > 50 { 500 * MS } else { 50 * MS };
    sim.run_until(limit, every, |s| s.converged(&all))
        .unwrap_or_else(|| panic!("no convergence within {limit:?} at t={:?}", sim.now))
}

/// Crashes node `victim` and returns (first, last) time a survivor marked it down.
fn detect(sim: &mut Sim, victim: usize, limit: Duration) -> (Duration, Duration) {
    sim.watch_down(victim);
    sim.crash(victim);
    let t0 = sim.now;
    let survivors: Vec<usize> = sim.live().collect();
    let every = 10 * MS;
    sim.run_until(limit, every, |s| {
        survivors.iter().all(|&i| s.down_seen[i].is_some())
    })
    .unwrap_or_else(|| {
        let missing: Vec<_> = survivors
            .iter()
            .filter(|&&i| sim.down_seen[i].is_none())
            .collect();
        panic!("survivors {missing:?} did not mark node {victim} down within {limit:?}")
    });
    let times: Vec<Duration> = survivors
        .iter()
        .map(|&i| sim.down_seen[i].unwrap() - t0)
        .collect();
    (*times.iter().min().unwrap(), *times.iter().max().unwrap())
}

/// The detection bound the tests assert, derived from the foca config: up to 2 probe
/// periods until some survivor probes the crashed node, 1 probe period of direct and
/// indirect probing before it is suspected, the suspicion timeout, and 2 probe periods for
/// the suspicion (each member runs its own timer) to reach every survivor.
fn detection_bound(config: &GossipConfig) -> Duration {
    let f = config.foca_config();
    f.suspect_to_down_after + 5 * f.probe_period
}

#[test]
fn three_nodes_converge() {
    let mut sim = cluster(seed_or(1), 3, config_for(3), 0.01);
    converge(&mut sim, Duration::from_secs(10));
}

#[test]
fn ten_nodes_converge_with_loss() {
    let mut sim = cluster(seed_or(2), 10, config_for(10), 0.05);
    converge(&mut sim, Duration::from_secs(30));
}

/// The issue measured a 1.5 s suspicion never converging for 3 nodes at 5 % loss. With the
/// configured (>= 3 s) suspicion, over two minutes sampled every 10 ms, no member is ever
/// seen down and the cluster ends converged. Lost refutations do make a node renew its
/// identity now and then (a new generation, same name; printed), which placement keyed by
/// name can ignore.
#[test]
fn three_nodes_at_five_percent_loss_never_see_a_false_down() {
    let mut sim = cluster(seed_or(8), 3, config_for(3), 0.05);
    converge(&mut sim, Duration::from_secs(20));
    for _ in 0..12_000 {
        sim.run_for(10 * MS);
        for n in &sim.nodes {
            let m = n.core.membership();
            assert!(
                m.members.iter().all(|x| x.liveness == Liveness::Up),
                "false down at {:?}: {m:?}",
                sim.now
            );
        }
    }
    let renewals: u64 = sim
        .nodes
        .iter()
        .map(|n| n.core.identity().generation() - 1)
        .sum();
    eprintln!("identity renewals in 120 s at 5 % loss: {renewals}");
    assert!(sim.converged(&[0, 1, 2]));
}

#[test]
fn crashed_node_is_down_everywhere_within_bound() {
    for (n, seed) in [(3usize, 3u64), (10, 4)] {
        let seed = seed_or(seed);
        let config = config_for(n as u32);
        let bound = detection_bound(&config);
        for round in 0..3u64 {
            let mut sim = cluster(seed + round * 1000, n, config.clone(), 0.01);
            converge(&mut sim, Duration::from_secs(30));
            sim.run_for(Duration::from_secs(5));
            let victim = n - 1 - round as usize;
            let (_first, last) = detect(&mut sim, victim, Duration::from_secs(60));
            assert!(
                last <= bound,
                "n={n} seed={} took {last:?} > bound {bound:?}",
                seed + round * 1000
            );
        }
    }
}

#[test]
fn partition_heals() {
    let mut sim = cluster(seed_or(5), 6, config_for(6), 0.01);
    converge(&mut sim, Duration::from_secs(20));
    for i in 3..6 {
        sim.nodes[i].group = 1;
    }
    // Both sides mark the other side down.
    let (a, b): (Vec<usize>, Vec<usize>) = ((0..3).collect(), (3..6).collect());
    let split = sim.run_until(Duration::from_secs(60), 100 * MS, |s| {
        a.iter()
            .chain(&b)
            .all(|&i| s.nodes[i].core.membership().up().count() == 3)
    });
    assert!(split.is_some(), "sides never split");
    for i in 3..6 {
        sim.nodes[i].group = 0;
    }
    let all: Vec<usize> = (0..6).collect();
    let healed = sim.run_until(Duration::from_secs(90), 100 * MS, |s| s.converged(&all));
    assert!(healed.is_some(), "partition did not heal");
    eprintln!("partition healed in {:?}", healed.unwrap());
}

/// Node 0 is cut off from the three others for longer than failure detection, then the
/// partition heals. Returns the generations the four nodes end with.
fn cut_off_then_healed(seed: u64, hold: bool) -> (Vec<u64>, u64) {
    let mut sim = cluster(seed, 4, config_for(4), 0.0);
    converge(&mut sim, Duration::from_secs(20));
    sim.run_for(Duration::from_secs(5));
    sim.nodes[0].group = 1;
    // What the cluster does once node 0 reaches no majority (`hold_declarations_while`).
    let now = sim.now;
    sim.nodes[0].core.hold_declarations(hold, now);
    let others_see_it_down = sim.run_until(Duration::from_secs(60), 100 * MS, |s| {
        (1..4).all(|i| {
            s.nodes[i]
                .core
                .membership()
                .get("node-0")
                .is_some_and(|m| m.liveness == Liveness::Down)
        })
    });
    assert!(
        others_see_it_down.is_some(),
        "node 0 was never declared down"
    );
    sim.run_for(Duration::from_secs(10));
    let downs = sim.nodes[0]
        .core
        .membership()
        .members
        .iter()
        .filter(|m| m.liveness == Liveness::Down)
        .count();
    if hold {
        assert_eq!(downs, 0, "node 0 declared members down while holding");
        let m = sim.nodes[0].core.membership();
        assert!(
            m.members.iter().filter(|m| m.suspect).count() == 3,
            "node 0 should suspect the three others: {m:?}"
        );
    } else {
        assert_eq!(
            downs, 3,
            "node 0 alone should declare the three others down"
        );
    }
    // The cluster lifts the hold once node 0 reaches a majority again: here, once the
    // healed cluster converged.
    sim.nodes[0].group = 0;
    let all: Vec<usize> = (0..4).collect();
    let healed = sim.run_until(Duration::from_secs(90), 100 * MS, |s| s.converged(&all));
    assert!(healed.is_some(), "the partition did not heal");
    let now = sim.now;
    sim.nodes[0].core.hold_declarations(false, now);
    sim.run_for(Duration::from_secs(20));
    assert!(sim.converged(&all), "the cluster did not stay converged");
    let held = sim.nodes[0].stats.snapshot().declarations_held;
    (
        sim.nodes
            .iter()
            .map(|n| n.core.identity().generation())
            .collect(),
        held,
    )
}

/// A node cut off from the majority holds its declarations (the cluster asks it to): when
/// the partition heals only it rejoins under a new generation. Without holding, its news
/// that the three others are down makes them rejoin too (each then refilled as new).
#[test]
fn a_cut_off_node_that_holds_its_declarations_is_the_only_one_to_rejoin() {
    let seed = seed_or(11);
    let (generations, held) = cut_off_then_healed(seed, true);
    assert!(held > 0, "no declaration was held");
    assert!(generations[0] > 1, "node 0 was declared down: it rejoins");
    assert_eq!(&generations[1..], &[1, 1, 1], "the majority rejoined");
    let (generations, held) = cut_off_then_healed(seed, false);
    assert_eq!(held, 0);
    assert!(
        generations[1..].iter().any(|&g| g > 1),
        "without holding, the majority is declared down too: {generations:?}"
    );
}

#[test]
fn restarted_node_replaces_its_old_self() {
    let mut sim = cluster(seed_or(6), 5, config_for(5), 0.01);
    converge(&mut sim, Duration::from_secs(20));
    let old_generation = sim.nodes[4].core.identity().generation();
    sim.crash(4);
    sim.run_for(500 * MS);
    sim.restart(4);
    let all: Vec<usize> = (0..5).collect();
    // Well before the old identity could be declared down by probing.
    let t = sim
        .run_until(Duration::from_secs(3), 10 * MS, |s| s.converged(&all))
        .expect("restarted node did not rejoin");
    eprintln!("restart rejoined in {t:?}");
    for i in 0..4 {
        let m = sim.nodes[i].core.membership();
        assert_eq!(
            m.members.iter().filter(|x| x.id.name() == "node-4").count(),
            1
        );
        assert!(m.get("node-4").unwrap().id.generation() > old_generation);
    }
}

#[test]
fn wrong_secret_or_cluster_never_appears() {
    let mut sim = cluster(seed_or(7), 3, config_for(3), 0.0);
    converge(&mut sim, Duration::from_secs(10));
    let bad_secret = sim.add_node(Some(Auth::new("sim", b"guessed").unwrap()));
    let other_cluster = sim.add_node(Some(Auth::new("other", b"cluster secret").unwrap()));
    sim.run_for(Duration::from_secs(20));
    for i in 0..3 {
        let m = sim.nodes[i].core.membership();
        assert_eq!(m.members.len(), 3, "{m:?}");
        assert!(m.get("node-3").is_none() && m.get("node-4").is_none());
    }
    for i in [bad_secret, other_cluster] {
        assert_eq!(sim.nodes[i].core.membership().members.len(), 1);
    }
    let s: Vec<_> = (0..3).map(|i| sim.nodes[i].stats.snapshot()).collect();
    assert!(s.iter().map(|s| s.dropped_bad_mac).sum::<u64>() > 0);
    assert!(s.iter().map(|s| s.dropped_wrong_cluster).sum::<u64>() > 0);
    assert!(s.iter().all(|s| s.rejected_payloads == 0), "{s:?}");
}

/// One figure row: convergence, detection (first/last survivor) and steady-state traffic.
fn figure(n: usize, seed: u64) {
    let config = config_for(n as u32);
    let mut sim = cluster(seed, n, config.clone(), 0.0);
    let conv = converge(&mut sim, Duration::from_secs(300));
    // Let join-time broadcasts die out, then measure steady-state traffic.
    sim.run_for(Duration::from_secs(30));
    let before: u64 = sim.nodes.iter().map(|x| x.bytes_sent).sum();
    let window = Duration::from_secs(30);
    sim.run_for(window);
    let after: u64 = sim.nodes.iter().map(|x| x.bytes_sent).sum();
    let bps = (after - before) as f64 / n as f64 / window.as_secs_f64();
    let (first, last) = detect(&mut sim, n / 2, Duration::from_secs(120));
    eprintln!(
        "FIGURE n={n} seed={seed}: converged {:.1}s after last start; crash detected first {:.2}s, \
         everywhere {:.2}s (bound {:.1}s, suspicion {:.1}s); steady state {bps:.0} B/s per node sent",
        conv.as_secs_f64(),
        first.as_secs_f64(),
        last.as_secs_f64(),
        detection_bound(&config).as_secs_f64(),
        config.foca_config().suspect_to_down_after.as_secs_f64(),
    );
}

#[test]
fn figures_small() {
    for (n, seed) in [(3, 11), (10, 12)] {
        figure(n, seed_or(seed));
    }
}

/// `cargo test --release -p shoal-gossip --test sim figures_100 -- --ignored --nocapture`
#[test]
#[ignore]
fn figures_100() {
    figure(100, seed_or(13));
}

/// `cargo test --release -p shoal-gossip --test sim figures_500 -- --ignored --nocapture`
#[test]
#[ignore]
fn figures_500() {
    figure(500, seed_or(14));
}

/// Sweep of seeds for the detection bound:
/// `cargo test --release -p shoal-gossip --test sim detection_sweep -- --ignored --nocapture`
#[test]
#[ignore]
fn detection_sweep() {
    for n in [3usize, 10] {
        let config = config_for(n as u32);
        let mut worst = Duration::ZERO;
        for seed in 0..50 {
            let mut sim = cluster(seed, n, config.clone(), 0.01);
            converge(&mut sim, Duration::from_secs(30));
            sim.run_for(Duration::from_secs(5));
            let (_, last) = detect(&mut sim, n - 1, Duration::from_secs(60));
            assert!(
                last <= detection_bound(&config),
                "n={n} seed={seed}: {last:?}"
            );
            worst = worst.max(last);
        }
        eprintln!("n={n}: worst detection over 50 seeds {worst:?}");
    }
}
