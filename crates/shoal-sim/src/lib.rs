//! A deterministic simulation of a whole Shoal cluster.
//!
//! The real node code (`shoal_node::start`, every layer below it) runs on turmoil's
//! simulated hosts and network: `shoal-net`'s `sim` feature swaps tokio's sockets for
//! turmoil's and draws the nodes' randomness from the run's seed, `shoal_engine::clock`
//! reads the simulated time and `shoal_store::set_seed_source` seeds the stores. One seed
//! fixes the fault schedule, the client workload, turmoil's choices (latencies, host order)
//! and the nodes' randomness: run in a fresh process (tokio numbers tasks process-wide)
//! with `--cfg tokio_unstable` (so turmoil can seed tokio), a seed replays exactly.
//!
//! A run: `nodes` nodes form a gossip cluster (`replicas = 1`, `write-ack = all`);
//! `clients` clients send SET, DEL, GET and INCR on a small key set through random nodes
//! while faults are injected (see [`Faults`]); then every fault is healed, the checker waits
//! until every node is settled, reads every key through every node and every copy where it
//! is, counts each key's copies, and [`history::check`] judges the history.

pub mod history;
pub mod resp;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use history::{Kind, Op, Outcome};
use resp::{Client, Reply};
use shoal_node::NodeConfig;

/// The client port of every simulated node (each host has its own address).
const PORT: u16 = 6379;
/// The Redis Cluster client port, where READONLY reads a node's own copy.
const CLUSTER_CLIENT_PORT: u16 = 6380;
/// Node i's inter-node port, TCP and gossip UDP alike: the UDP faults of
/// `shoal_net::faults` tell the nodes' datagrams apart by it.
fn bus_port(i: usize) -> u16 {
    17000 + i as u16
}
const SECRET: &str = "simulated-cluster-secret-0123456789";
/// How long a client waits for one reply before it counts the request as unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(3);

/// What one run does.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub nodes: usize,
    pub clients: usize,
    /// Register keys (SET/DEL/GET) and as many counters (INCR).
    pub keys: usize,
    /// Clients send requests from `start` for `load` of simulated time.
    pub start: Duration,
    pub load: Duration,
    /// Which faults are injected during the load; all are healed when it ends.
    pub faults: Faults,
    /// How long the cluster may take to settle after the faults healed.
    pub settle: Duration,
    /// Each node's clock is off by up to this much, either way (drawn from the seed).
    pub clock_skew: Duration,
    /// Clients connect to the first this many nodes only (0: to every node). With 1, the
    /// other nodes forward one another nothing: what they know of each other's clocks
    /// comes from replication alone.
    pub client_nodes: usize,
}

impl Default for Scenario {
    fn default() -> Scenario {
        Scenario {
            nodes: 4,
            clients: 3,
            keys: 24,
            start: Duration::from_secs(6),
            load: Duration::from_secs(30),
            faults: Faults::All,
            settle: Duration::from_secs(60),
            clock_skew: Duration::ZERO,
            client_nodes: 0,
        }
    }
}

/// The fault sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Faults {
    None,
    /// Slow links, lost datagrams, gossip partitions (one way and both ways, UDP only).
    Network,
    /// Those and nodes crashed and restarted empty: what Shoal keeps every acknowledged
    /// write through today (an INCR in flight at a crash can run twice, see
    /// [`history::Report::applied_twice`]).
    Crashes,
    /// Also links that hold TCP (partitions, held links, frozen nodes): the sender of a
    /// forwarded write gives up on a live owner and fails over to the next copy, so two
    /// nodes write one key. Issue #15's open part.
    All,
    /// Those and gray failures: TCP cut while gossip still gets through (both ways or one
    /// way), and slow nodes (every link of one node slow). A set of its own, so that the
    /// schedules of the seeds of the other sets stay as they were.
    Gray,
    /// One fault for the whole load: the last node's TCP cut both ways from every other
    /// node from 2 s into the load until it ends, gossip untouched (a firewall that lets
    /// the gossip port through but not the cluster port). 4 s before the end the run
    /// notes what the other nodes show ([`RunReport::isolation`]).
    IsolatedTcp,
    /// Scaling, no other fault: a node of a new name joins during the load and another
    /// leaves gracefully (as on SIGTERM), at times drawn from the seed.
    Scale,
    /// Scaling across a cut link: TCP between n0 and n1 cut both ways from 2 s into the
    /// load until it ends (gossip untouched, and both reach every other node), while a
    /// node of a new name joins and another leaves as in [`Faults::Scale`]. The others
    /// vouch for both in SWIM's indirect probes, so both stay members. (The test binary
    /// runs it with a 60 s load.)
    LinkCut,
}

/// When the node of a new name joins and which node leaves when ([`Faults::Scale`]).
#[derive(Debug, Clone, Copy)]
struct ScalePlan {
    joiner: usize,
    join_at: Duration,
    leaver: usize,
    leave_at: Duration,
}

fn scale_plan(seed: u64, sc: &Scenario) -> Option<ScalePlan> {
    if !matches!(sc.faults, Faults::Scale | Faults::LinkCut) {
        return None;
    }
    let mut rng = Rng::new(seed ^ 0x5CA1_E000_0000_0000);
    let ms = |rng: &mut Rng, from: u64, span: u64| Duration::from_millis(from + rng.below(span));
    Some(ScalePlan {
        joiner: sc.nodes,
        join_at: sc.start + ms(&mut rng, 2000, 8000),
        leaver: rng.below(sc.nodes as u64) as usize,
        leave_at: sc.start + ms(&mut rng, 12_000, 12_000),
    })
}

/// The simulated hosts running a node: the scenario's nodes, and the joiner of
/// [`Faults::Scale`].
fn hosts(sc: &Scenario) -> usize {
    sc.nodes + usize::from(matches!(sc.faults, Faults::Scale | Faults::LinkCut))
}

/// What the nodes other than the isolated one showed near the end of an
/// [`Faults::IsolatedTcp`] run.
#[derive(Debug, Clone, Default)]
pub struct Isolation {
    /// Each other node's `cluster_size` (placed members).
    pub sizes: Vec<Option<String>>,
    /// Each other node's `shoal_settled`.
    pub settled: Vec<Option<String>>,
    /// SETs of `keys` keys of their own through each other node, and how many of them
    /// did not answer OK.
    pub writes: usize,
    pub writes_failed: usize,
}

/// What a run did and found.
#[derive(Debug)]
pub struct RunReport {
    pub seed: u64,
    pub faults: Vec<String>,
    pub check: history::Report,
    /// A digest of the whole history (operations, outcomes, times): equal for two runs of
    /// one seed when the run is deterministic.
    pub digest: u64,
    pub simulated: Duration,
    /// Every request the clients sent, in the order their outcomes were recorded.
    pub history: Vec<Op>,
    /// The largest lead of another node's clock any node measured (INFO cluster
    /// `shoal_peer_clock_lead_ms`).
    pub clock_lead_ms: u64,
    /// Each checked node's `shoal_peer_clock_lead_ms` once the cluster settled (before the
    /// checker's reads), with its name.
    pub clock_leads: Vec<(String, u64)>,
    /// Each node's clock offset (ms), by host.
    pub skews_ms: Vec<i64>,
    /// With [`Faults::IsolatedTcp`]: what the other nodes showed near the end of the cut.
    pub isolation: Option<Isolation>,
    /// Writes the nodes sent to replicas as deltas (INFO `shoal_repl_deltas`, summed over
    /// the nodes that were up at the end).
    pub deltas: u64,
}

impl RunReport {
    pub fn ok(&self) -> bool {
        self.check.problems.is_empty()
    }
}

/// SplitMix64: the runs' own choices, reproducible from the seed.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        shoal_net::splitmix64(&mut self.0)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn node_name(i: usize) -> String {
    format!("n{i}")
}

/// The simulated wall clock, the nodes' time base (turmoil's per-host time since its
/// epoch, which is fixed so that runs repeat).
fn sim_clock_us() -> u64 {
    let now = turmoil::since_epoch().map_or(0, |d| d.as_micros() as u64);
    now.saturating_add_signed(host_skew_us())
}

thread_local! {
    /// Each node's clock offset (µs), by the tokio runtime its host runs on (turmoil gives
    /// every host a runtime of its own, and a new one when it restarts).
    static SKEWS: RefCell<std::collections::HashMap<tokio::runtime::Id, i64>> =
        RefCell::new(std::collections::HashMap::new());
}

fn host_skew_us() -> i64 {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return 0;
    };
    SKEWS.with(|s| s.borrow().get(&handle.id()).copied().unwrap_or(0))
}

/// The stores' hash and sampling seeds, drawn from the run's seed.
fn sim_seed() -> u64 {
    shoal_net::random_u64().unwrap_or(0)
}

/// Simulated time since the run began, the clients' timeline.
fn now_us() -> u64 {
    turmoil::sim_elapsed().map_or(0, |d| d.as_micros() as u64)
}

fn config(i: usize, nodes: usize, first_start: bool) -> NodeConfig {
    let name = node_name(i);
    NodeConfig {
        bind: "0.0.0.0".into(),
        port: PORT,
        node_name: name.clone(),
        cluster_mode: "gossip".into(),
        cluster_secret: SECRET.into(),
        cluster_announce_ip: turmoil::lookup(name.as_str()).to_string(),
        cluster_port: Some(bus_port(i)),
        cluster_client_port: Some(CLUSTER_CLIENT_PORT),
        gossip_port: Some(bus_port(i)),
        cluster_seeds: (0..nodes)
            .filter(|&j| j != i)
            .map(|j| format!("{}:{}", node_name(j), bus_port(j)))
            .collect(),
        // The first node founds the cluster on the first start only; a restart joins.
        cluster_bootstrap: i == 0 && first_start,
        join_timeout_ms: 2000,
        replicas: 1,
        // An acknowledged write waits for its replica (for half of `cluster-timeout-ms`
        // at most), so a crash right after the acknowledgement loses nothing (with `owner`,
        // one that had not reached the replica is lost with its only copy, as documented).
        write_ack: "all".into(),
        ..NodeConfig::default()
    }
}

/// One fault, over a span of simulated time, between two nodes or on one.
#[derive(Debug, Clone)]
enum Fault {
    /// Both ways: datagrams dropped, TCP held (real TCP resends through a partition; a
    /// held segment arrives when it heals, as a resent one would).
    Partition(usize, usize),
    /// Datagrams from the first to the second dropped (TCP untouched).
    OneWay(usize, usize),
    /// Datagrams dropped both ways, TCP untouched: gossip says down, the links work.
    UdpOnly(usize, usize),
    /// Everything held, then delivered at once (delay and reordering).
    Hold(usize, usize),
    /// 20 % of the datagrams dropped both ways.
    Lossy(usize, usize),
    /// Up to 400 ms per message (segments overtake each other).
    Slow(usize, usize),
    /// Every link of the node held: to the others it is frozen, then thaws.
    Freeze(usize),
    /// Crashed (sockets gone, memory lost), then started again empty once the others
    /// declared it down (after 10 s or more).
    Crash(usize),
    /// Crashed, then started again empty within 1-3 s, before the others noticed.
    QuickRestart(usize),
    /// TCP cut both ways, datagrams untouched: gossip says up, the links carry nothing.
    TcpOnly(usize, usize),
    /// TCP segments from the first to the second cut (so a request from the second runs at
    /// the first and its answer is lost), datagrams untouched.
    TcpOneWay(usize, usize),
    /// Every link of the node slow (up to 400 ms per message, gossip included).
    SlowNode(usize),
}

struct Scheduled {
    at: Duration,
    until: Duration,
    fault: Fault,
}

fn schedule(rng: &mut Rng, sc: &Scenario) -> Vec<Scheduled> {
    let mut out = Vec::new();
    if matches!(sc.faults, Faults::None | Faults::Scale) || sc.nodes < 2 {
        return out;
    }
    if sc.faults == Faults::LinkCut {
        out.push(Scheduled {
            at: sc.start + Duration::from_secs(2),
            until: sc.start + sc.load,
            fault: Fault::TcpOnly(0, 1),
        });
        return out;
    }
    if sc.faults == Faults::IsolatedTcp {
        let x = sc.nodes - 1;
        for b in 0..x {
            out.push(Scheduled {
                at: sc.start + Duration::from_secs(2),
                until: sc.start + sc.load,
                fault: Fault::TcpOnly(x, b),
            });
        }
        return out;
    }
    let begin = sc.start + Duration::from_secs(2);
    let end = sc.start + sc.load;
    let mut at = begin;
    // One fault at a time, each 1-8 s, with 0-3 s of calm between: at most one node is
    // away at once, so every key keeps a live copy (replicas = 1).
    while at + Duration::from_secs(1) < end {
        let len = Duration::from_millis(1000 + rng.below(7000));
        let a = rng.below(sc.nodes as u64) as usize;
        let b = (a + 1 + rng.below(sc.nodes as u64 - 1) as usize) % sc.nodes;
        let kinds = match sc.faults {
            Faults::Network => 4,
            Faults::Crashes => 5,
            Faults::All => 9,
            _ => 12,
        };
        let fault = match rng.below(kinds) {
            0 => Fault::OneWay(a, b),
            1 => Fault::UdpOnly(a, b),
            2 => Fault::Lossy(a, b),
            3 => Fault::Slow(a, b),
            4 => Fault::Crash(a),
            5 => Fault::Partition(a, b),
            6 => Fault::Hold(a, b),
            7 => Fault::Freeze(a),
            8 => Fault::QuickRestart(a),
            9 => Fault::TcpOnly(a, b),
            10 => Fault::TcpOneWay(a, b),
            _ => Fault::SlowNode(a),
        };
        let len = match fault {
            // Gossip declares a silent node down in about 6 s here.
            Fault::Crash(_) => Duration::from_millis(10_000 + rng.below(5000)),
            Fault::QuickRestart(_) => Duration::from_millis(1000 + rng.below(2000)),
            _ => len,
        };
        // A crash's restart may come after the load: the healing restarts it.
        let until = if let Fault::Crash(_) = fault {
            at + len
        } else {
            (at + len).min(end)
        };
        // A restarted node is away until its copies are back (it rejoins about a second
        // after it starts, then is refilled): the next fault waits for that, or it could
        // take the only other copy of a key the newcomer has not received yet (seeds 47
        // and 58 did, with two of a counter's copies gone at once).
        let refill = match fault {
            Fault::Crash(_) | Fault::QuickRestart(_) => Duration::from_secs(3),
            _ => Duration::ZERO,
        };
        out.push(Scheduled { at, until, fault });
        at = until + refill + Duration::from_millis(rng.below(3000));
    }
    out
}

fn apply(sim: &mut turmoil::Sim<'_>, f: &Fault, on: bool, nodes: usize) {
    use shoal_net::faults::udp_drop;
    let n = |i: &usize| node_name(*i);
    let p = |i: &usize| bus_port(*i);
    let hold = |sim: &mut turmoil::Sim<'_>, a: &usize, b: &usize| {
        if on {
            sim.hold(n(a), n(b))
        } else {
            sim.release(n(a), n(b))
        }
    };
    let all = if on { 1.0 } else { 0.0 };
    let ip = |sim: &turmoil::Sim<'_>, i: &usize| sim.lookup(node_name(*i).as_str());
    let slow = |sim: &mut turmoil::Sim<'_>, a: &usize, b: &usize| {
        let max = Duration::from_millis(if on { 400 } else { 5 });
        sim.set_link_max_message_latency(n(a), n(b), max)
    };
    match f {
        Fault::Partition(a, b) => {
            hold(sim, a, b);
            udp_drop(p(a), p(b), all);
            udp_drop(p(b), p(a), all);
        }
        Fault::OneWay(a, b) => udp_drop(p(a), p(b), all),
        Fault::UdpOnly(a, b) => {
            udp_drop(p(a), p(b), all);
            udp_drop(p(b), p(a), all);
        }
        Fault::Hold(a, b) => hold(sim, a, b),
        Fault::Lossy(a, b) => {
            let loss = if on { 0.2 } else { 0.0 };
            udp_drop(p(a), p(b), loss);
            udp_drop(p(b), p(a), loss);
        }
        Fault::Freeze(a) => {
            for b in (0..nodes).filter(|b| b != a) {
                hold(sim, a, &b);
            }
        }
        Fault::Slow(a, b) => slow(sim, a, b),
        Fault::SlowNode(a) => {
            for b in (0..nodes).filter(|b| b != a) {
                slow(sim, a, &b);
            }
        }
        Fault::TcpOnly(a, b) => {
            shoal_net::faults::tcp_cut(ip(sim, a), ip(sim, b), on);
            shoal_net::faults::tcp_cut(ip(sim, b), ip(sim, a), on);
        }
        Fault::TcpOneWay(a, b) => shoal_net::faults::tcp_cut(ip(sim, a), ip(sim, b), on),
        Fault::Crash(a) | Fault::QuickRestart(a) if on => sim.crash(n(a)),
        Fault::Crash(a) | Fault::QuickRestart(a) => sim.bounce(n(a)),
    }
}

/// Shared between the simulated clients and the driver (one thread runs them all).
#[derive(Default)]
struct Shared {
    ops: RefCell<Vec<Op>>,
    clients_done: Cell<usize>,
    healed: Cell<bool>,
    finals: RefCell<BTreeMap<String, Vec<Option<String>>>>,
    /// The largest `shoal_peer_clock_lead_ms` of the nodes at the end.
    clock_lead: Cell<u64>,
    /// Each checked node's, with its name.
    clock_leads: RefCell<Vec<(String, u64)>>,
    /// `shoal_repl_deltas` summed over the nodes at the end.
    deltas: std::cell::Cell<u64>,
    isolation: RefCell<Option<Isolation>>,
    problems: RefCell<Vec<String>>,
}

fn register_key(i: u64) -> String {
    format!("k{i}")
}

fn counter_key(i: u64) -> String {
    format!("ctr{i}")
}

/// A key clients APPEND unique tokens to: past a few dozen bytes its writes replicate as
/// deltas (the command, not the value), so faults meet that path too.
fn log_key(i: u64) -> String {
    format!("log{i}")
}

/// Classifies a reply to a single-key command.
fn outcome(reply: Reply) -> Outcome {
    match reply {
        Reply::Status(s) => Outcome::Ok(Some(s)),
        Reply::Int(n) => Outcome::Ok(Some(n.to_string())),
        Reply::Bulk(v) => Outcome::Ok(v.map(|b| String::from_utf8_lossy(&b).into_owned())),
        // Even a TRYAGAIN may follow a first attempt that ran on a copy that then did not
        // answer: an error leaves open whether the command ran.
        Reply::Error(_) | Reply::Array(_) => Outcome::Unknown,
    }
}

async fn client_loop(id: usize, seed: u64, sc: Scenario, shared: Rc<Shared>) {
    let mut rng = Rng::new(seed ^ (0xC11E_0000 + id as u64));
    tokio::time::sleep(sc.start).await;
    let end = (sc.start + sc.load).as_micros() as u64;
    let mut conn: Option<Client> = None;
    let mut seq = 0u64;
    while now_us() < end {
        let Some(c) = conn.as_mut() else {
            let reach = match sc.client_nodes {
                0 => hosts(&sc),
                n => n.min(hosts(&sc)),
            };
            let node = node_name(rng.below(reach as u64) as usize);
            match tokio::time::timeout(Duration::from_secs(1), Client::connect((&node, PORT))).await
            {
                Ok(Ok(c)) => conn = Some(c),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
            continue;
        };
        let k = rng.below(sc.keys as u64);
        let roll = rng.below(100);
        seq += 1;
        let kind = match roll {
            0..=34 => Kind::Set {
                key: register_key(k),
                value: format!("c{id}-{seq}"),
            },
            35..=44 => Kind::Del {
                key: register_key(k),
            },
            45..=72 => Kind::Get {
                key: register_key(k),
            },
            73..=85 => Kind::Append {
                key: log_key(k),
                token: format!("c{id}-{seq};"),
            },
            _ => Kind::Incr {
                key: counter_key(k),
            },
        };
        let args: Vec<&[u8]> = match &kind {
            Kind::Set { key, value } => vec![b"SET", key.as_bytes(), value.as_bytes()],
            Kind::Del { key } => vec![b"DEL", key.as_bytes()],
            Kind::Get { key } => vec![b"GET", key.as_bytes()],
            Kind::Incr { key } => vec![b"INCR", key.as_bytes()],
            Kind::Append { key, token } => vec![b"APPEND", key.as_bytes(), token.as_bytes()],
        };
        let invoked = now_us();
        let (completed, result) = match tokio::time::timeout(OP_TIMEOUT, c.call(&args)).await {
            Ok(Ok(reply)) => (Some(now_us()), outcome(reply)),
            // No reply: it may still run within `history::UNKNOWN_SPAN`.
            _ => {
                // A late reply would answer the next request: start over.
                conn = None;
                (None, Outcome::Unknown)
            }
        };
        shared.ops.borrow_mut().push(Op {
            client: id,
            kind,
            invoked,
            completed,
            outcome: result,
        });
        // Now and then a client moves to another node.
        if rng.chance(2) {
            conn = None;
        }
    }
    shared.clients_done.set(shared.clients_done.get() + 1);
}

/// A checker's connection to one port of one node: (re)connects when needed and forgets a
/// connection whose reply did not come (a late reply would answer the next request).
struct Conn {
    node: String,
    port: u16,
    /// On the cluster-client port: READONLY first, so the node reads its own copy.
    readonly: bool,
    client: Option<Client>,
}

impl Conn {
    fn new(i: usize, port: u16, readonly: bool) -> Conn {
        Conn {
            node: node_name(i),
            port,
            readonly,
            client: None,
        }
    }

    async fn call(&mut self, args: &[&[u8]]) -> Option<Reply> {
        for _ in 0..3 {
            if self.client.is_none() {
                let connect = Client::connect((&self.node, self.port));
                let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_secs(1), connect).await
                else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                if self.readonly {
                    let ok = tokio::time::timeout(OP_TIMEOUT, c.call(&[b"READONLY"])).await;
                    if !matches!(ok, Ok(Ok(Reply::Status(_)))) {
                        continue;
                    }
                }
                self.client = Some(c);
            }
            let c = self.client.as_mut()?;
            match tokio::time::timeout(OP_TIMEOUT, c.call(args)).await {
                Ok(Ok(reply)) => return Some(reply),
                _ => self.client = None,
            }
        }
        None
    }

    /// A field of CLUSTER INFO, or of INFO's cluster section with `info`.
    async fn field(&mut self, field: &str, info: bool) -> Option<String> {
        let args: &[&[u8]] = if info {
            &[b"INFO", b"cluster"]
        } else {
            &[b"CLUSTER", b"INFO"]
        };
        let Some(Reply::Bulk(Some(text))) = self.call(args).await else {
            return None;
        };
        let text = String::from_utf8_lossy(&text).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    }
}

fn text(v: Option<Vec<u8>>) -> Option<String> {
    v.map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// After the load and the healing: waits until every node is settled with every member
/// placed, then reads every key through every node (the owner's answer), reads each copy
/// where it is (READONLY on the cluster-client port) and counts the copies.
async fn checker(sc: Scenario, members: Vec<usize>, shared: Rc<Shared>) {
    while shared.clients_done.get() < sc.clients || !shared.healed.get() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = tokio::time::Instant::now() + sc.settle;
    let mut conns: Vec<Conn> = members.iter().map(|&i| Conn::new(i, PORT, false)).collect();
    let mut local: Vec<Conn> = members
        .iter()
        .map(|&i| Conn::new(i, CLUSTER_CLIENT_PORT, true))
        .collect();
    let want = members.len().to_string();
    // Each node's (settled, placed members, epoch): a pass counts only if nothing changed
    // while it read (a late failure declaration after the healing makes a node rejoin and
    // be refilled, and a copy being refilled is not read where it is).
    async fn states(conns: &mut [Conn]) -> Vec<[Option<String>; 3]> {
        let mut out = Vec::new();
        for c in conns.iter_mut() {
            out.push([
                c.field("shoal_settled", false).await,
                c.field("cluster_size", false).await,
                c.field("cluster_current_epoch", false).await,
            ]);
        }
        out
    }
    loop {
        let before = states(&mut conns).await;
        if !before
            .iter()
            .all(|[s, m, _]| s.as_deref() == Some("1") && m.as_deref() == Some(want.as_str()))
        {
            if tokio::time::Instant::now() > deadline {
                shared.problems.borrow_mut().push(format!(
                    "the cluster did not settle within {:?} of the healing: (settled, members, epoch) per node {before:?}",
                    sc.settle
                ));
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        // The clock leads before the read pass, whose reads through every node are
        // forwarded commands that tell their receivers the senders' leads: what a node
        // learnt during the load, from the load.
        let mut leads = Vec::new();
        let mut deltas = 0;
        for c in conns.iter_mut() {
            let sent = c.field("shoal_repl_deltas", true).await;
            deltas += sent.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            let lead = c.field("shoal_peer_clock_lead_ms", true).await;
            leads.push((
                c.node.clone(),
                lead.and_then(|v| v.parse().ok()).unwrap_or(0),
            ));
        }
        let (mut problems, finals) = read_all(&sc, &mut conns, &mut local).await;
        if states(&mut conns).await != before {
            if tokio::time::Instant::now() <= deadline {
                continue;
            }
            problems.push(format!(
                "the views kept changing for {:?} after the healing",
                sc.settle
            ));
        }
        for (_, lead) in &leads {
            shared.clock_lead.set(shared.clock_lead.get().max(*lead));
        }
        *shared.clock_leads.borrow_mut() = leads;
        shared.deltas.set(deltas);
        shared.problems.borrow_mut().extend(problems);
        shared.finals.borrow_mut().extend(finals);
        return;
    }
}

/// With [`Faults::IsolatedTcp`]: 4 s before the load ends, what every node but the
/// isolated one shows, and whether writes through each of them succeed.
async fn watch_isolation(sc: Scenario, shared: Rc<Shared>) {
    tokio::time::sleep(sc.start + sc.load - Duration::from_secs(4)).await;
    let mut seen = Isolation::default();
    for i in 0..sc.nodes - 1 {
        let mut c = Conn::new(i, PORT, false);
        seen.sizes.push(c.field("cluster_size", false).await);
        seen.settled.push(c.field("shoal_settled", false).await);
        for k in 0..sc.keys {
            let key = format!("w{k}");
            let reply = c.call(&[b"SET", key.as_bytes(), b"v"]).await;
            seen.writes += 1;
            if !matches!(reply, Some(Reply::Status(_))) {
                seen.writes_failed += 1;
            }
        }
    }
    *shared.isolation.borrow_mut() = Some(seen);
}

/// One pass of the checker over every key: its problems and each key's answers per node.
async fn read_all(
    sc: &Scenario,
    conns: &mut [Conn],
    local: &mut [Conn],
) -> (Vec<String>, BTreeMap<String, Vec<Option<String>>>) {
    let mut problems = Vec::new();
    let mut finals = BTreeMap::new();
    let mut problem = |p: String| problems.push(p);
    for k in 0..sc.keys as u64 {
        for key in [register_key(k), counter_key(k), log_key(k)] {
            let mut seen = Vec::new();
            let mut copies = Vec::new();
            for (i, c) in conns.iter_mut().enumerate() {
                match c.call(&[b"GET", key.as_bytes()]).await {
                    Some(Reply::Bulk(v)) => seen.push(text(v)),
                    other => problem(format!("{key}: the final GET answered {other:?}")),
                }
                match c.call(&[b"CLUSTER", b"HASKEY", key.as_bytes()]).await {
                    Some(Reply::Int(1)) => match local[i].call(&[b"GET", key.as_bytes()]).await {
                        Some(Reply::Bulk(v)) => copies.push(text(v)),
                        other => problem(format!(
                            "{key}: the read of {}'s copy answered {other:?}",
                            local[i].node
                        )),
                    },
                    Some(Reply::Int(0)) => {}
                    other => problem(format!("{key}: CLUSTER HASKEY answered {other:?}")),
                }
            }
            if seen.windows(2).any(|w| w[0] != w[1]) {
                problem(format!("{key}: the nodes answer differently: {seen:?}"));
            }
            if copies.iter().any(|c| Some(c) != seen.first()) {
                problem(format!(
                    "{key}: the copies differ: {copies:?}, the owner answers {:?}",
                    seen.first()
                ));
            }
            let present = seen.iter().any(Option::is_some);
            if present && copies.len() != 2 {
                problem(format!(
                    "{key}: {} copies after settling, expected 2",
                    copies.len()
                ));
            }
            finals.insert(key, seen);
        }
    }
    (problems, finals)
}

static LOGGING: std::sync::Once = std::sync::Once::new();

/// Log lines carry the simulated time (seconds since the run began).
struct SimTime;

impl tracing_subscriber::fmt::time::FormatTime for SimTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        write!(w, "{:>10.6}", now_us() as f64 / 1e6)
    }
}

/// Node logs on stderr when `SHOAL_SIM_LOG` names a level (`info`, `debug`).
fn init_logging() {
    LOGGING.call_once(|| {
        if let Ok(level) = std::env::var("SHOAL_SIM_LOG") {
            if let Ok(level) = level.parse::<tracing_subscriber::filter::LevelFilter>() {
                let _ = tracing_subscriber::fmt()
                    .with_max_level(level)
                    .with_timer(SimTime)
                    .with_writer(std::io::stderr)
                    .try_init();
            }
        }
    });
}

fn digest(ops: &[Op]) -> u64 {
    // FNV-1a over the history's debug text: stable across runs of one build.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{ops:?}").bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Runs one seed of `sc`.
pub fn run(seed: u64, sc: &Scenario) -> RunReport {
    init_logging();
    shoal_node::clock::set_source(sim_clock_us);
    shoal_store::set_seed_source(sim_seed);
    let mut rng = Rng::new(seed);
    // Apart from `rng`, so that the fault schedule of a seed does not depend on the skew.
    let mut skew_rng = Rng::new(seed ^ 0x0005_CE3D_C10C_0000);
    SKEWS.with(|s| s.borrow_mut().clear());
    shoal_net::seed(seed);
    let total = sc.start + sc.load + sc.settle + Duration::from_secs(120);
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .epoch(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000))
        .simulation_duration(total)
        .min_message_latency(Duration::from_micros(100))
        .max_message_latency(Duration::from_millis(5))
        .tcp_capacity(1 << 16)
        .udp_capacity(1 << 12)
        .enable_random_order()
        .build();
    let scale = scale_plan(seed, sc);
    let nodes = hosts(sc);
    let mut skews_ms = Vec::new();
    for i in 0..nodes {
        let starts = Rc::new(Cell::new(0u32));
        let max = sc.clock_skew.as_micros() as u64;
        let skew = (skew_rng.below(2 * max + 1) as i64) - max as i64;
        skews_ms.push(skew / 1000);
        // The joiner starts at its time; the leaver leaves at its time.
        let join_at = scale.filter(|p| p.joiner == i).map(|p| p.join_at);
        let leave_at = scale.filter(|p| p.leaver == i).map(|p| p.leave_at);
        sim.host(node_name(i), move || {
            let first = starts.get() == 0;
            starts.set(starts.get() + 1);
            let config = config(i, nodes, first);
            async move {
                let runtime = tokio::runtime::Handle::current().id();
                SKEWS.with(|s| s.borrow_mut().insert(runtime, skew));
                let since_start = || Duration::from_micros(now_us());
                if let Some(at) = join_at {
                    tokio::time::sleep(at.saturating_sub(since_start())).await;
                }
                let node = shoal_node::start(config, None).await?;
                if let Some(at) = leave_at {
                    tokio::select! {
                        _ = node.stopping() => {}
                        _ = tokio::time::sleep(at.saturating_sub(since_start())) => {
                            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                            node.leave(deadline).await;
                            node.shutdown();
                        }
                    }
                }
                node.wait().await;
                Ok(())
            }
        });
    }
    let shared = Rc::new(Shared::default());
    for id in 0..sc.clients {
        let (sc, shared) = (sc.clone(), shared.clone());
        sim.client(format!("c{id}"), async move {
            client_loop(id, seed, sc, shared).await;
            Ok(())
        });
    }
    {
        let (sc, shared) = (sc.clone(), shared.clone());
        // Every node at the end: the leaver is gone.
        let members = (0..nodes)
            .filter(|&i| scale.is_none_or(|p| p.leaver != i))
            .collect();
        sim.client("check", async move {
            checker(sc, members, shared).await;
            Ok(())
        });
    }
    if sc.faults == Faults::IsolatedTcp {
        let (sc, shared) = (sc.clone(), shared.clone());
        sim.client("watch", async move {
            watch_isolation(sc, shared).await;
            Ok(())
        });
    }
    let plan = schedule(&mut rng, sc);
    let mut faults: Vec<String> = plan
        .iter()
        .map(|s| format!("{:?} from {:?} to {:?}", s.fault, s.at, s.until))
        .collect();
    faults.extend(scale.map(|p| format!("{p:?}")));
    let mut events: Vec<(Duration, usize, bool)> = plan
        .iter()
        .enumerate()
        .flat_map(|(i, s)| [(s.at, i, true), (s.until, i, false)])
        .collect();
    // At one instant, a fault ends before the next begins (undoing the old one must not
    // undo the new one).
    events.sort_by_key(|e| (e.0, e.2));
    let heal_at = sc.start + sc.load;
    let mut next = 0;
    let mut error = None;
    loop {
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
        let now = sim.elapsed();
        while next < events.len() && events[next].0 <= now {
            let (_, i, on) = events[next];
            apply(&mut sim, &plan[i].fault, on, sc.nodes);
            next += 1;
        }
        if now >= heal_at && next == events.len() && !shared.healed.get() {
            shared.healed.set(true);
        }
    }
    let simulated = sim.elapsed();
    let isolation = shared.isolation.borrow().clone();
    let clock_leads = shared.clock_leads.borrow().clone();
    let ops = shared.ops.borrow().clone();
    let mut check = history::check(&ops, &shared.finals.borrow());
    check
        .problems
        .extend(shared.problems.borrow().iter().cloned());
    if let Some(e) = error {
        check.problems.push(format!("the simulation stopped: {e}"));
    }
    RunReport {
        seed,
        faults,
        check,
        digest: digest(&ops),
        simulated,
        history: ops,
        clock_lead_ms: shared.clock_lead.get(),
        clock_leads,
        skews_ms,
        isolation,
        deltas: shared.deltas.get(),
    }
}
