//! The whole-cluster simulation: fixed seeds in CI, a soak over many seeds
//! (`scripts/sim-soak.sh`).
//!
//! Every seed runs in a process of its own (this test binary, run again for the ignored
//! `one_seed` test): tokio numbers its tasks process-wide and the order of some task
//! operations follows those numbers, so a seed replays exactly only from a fresh process.
//! Replay one with
//! `SHOAL_SIM_SEED=<seed> SHOAL_SIM_FAULTS=all cargo test -p shoal-sim -- --ignored --exact one_seed --nocapture`.

use std::process::Command;

use shoal_sim::{run, Faults, RunReport, Scenario};

fn show(r: &RunReport) {
    eprintln!(
        "seed {}: {} ops ({} without a reply or with an error), {} acknowledged writes, {} reads and {} keys checked, {} deltas, {:?} simulated, digest {:016x}",
        r.seed, r.check.ops, r.check.unknown, r.check.acked_writes, r.check.reads_checked, r.check.keys_checked, r.deltas, r.simulated, r.digest
    );
    for f in &r.faults {
        eprintln!("  fault: {f}");
    }
    for p in &r.check.problems {
        eprintln!("  PROBLEM: {p}");
    }
    for p in &r.check.applied_twice {
        eprintln!("  applied twice: {p}");
    }
}

fn scenario(faults: &str) -> Scenario {
    // Across a cut link the clients' writes wait for their timeout (see the test below):
    // a longer load lets them write every key.
    let load = match faults {
        "link-cut" => std::time::Duration::from_secs(60),
        _ => Scenario::default().load,
    };
    Scenario {
        load,
        clock_skew: std::time::Duration::from_millis(skew_ms()),
        client_nodes: std::env::var("SHOAL_SIM_CLIENT_NODES")
            .map_or(0, |n| n.parse().expect("a count")),
        faults: match faults {
            "none" => Faults::None,
            "network" => Faults::Network,
            "crashes" => Faults::Crashes,
            "all" => Faults::All,
            "gray" => Faults::Gray,
            "isolated-tcp" => Faults::IsolatedTcp,
            "scale" => Faults::Scale,
            "link-cut" => Faults::LinkCut,
            other => panic!(
                "SHOAL_SIM_FAULTS={other}: none, network, crashes, all, gray, isolated-tcp, scale or link-cut"
            ),
        },
        ..Scenario::default()
    }
}

/// One seed (`SHOAL_SIM_SEED`, `SHOAL_SIM_FAULTS`), in the process the others start.
#[test]
#[ignore]
fn one_seed() {
    let seed: u64 = std::env::var("SHOAL_SIM_SEED")
        .expect("SHOAL_SIM_SEED")
        .parse()
        .expect("a seed");
    let faults = std::env::var("SHOAL_SIM_FAULTS").unwrap_or_else(|_| "all".into());
    let r = run(seed, &scenario(&faults));
    show(&r);
    // The whole history, one request a line, to compare two runs.
    if let Ok(path) = std::env::var("SHOAL_SIM_DUMP") {
        let text: String = r.history.iter().map(|op| format!("{op:?}\n")).collect();
        std::fs::write(&path, text).expect("history written");
    }
    // What the other nodes showed near the end of an `isolated-tcp` cut: their cluster
    // sizes, settled flags, writes and failed writes ("-" for the other fault sets).
    let isolation = r.isolation.as_ref().map_or("-".to_string(), |i| {
        let join = |v: &[Option<String>]| {
            v.iter()
                .map(|x| x.clone().unwrap_or_else(|| "?".into()))
                .collect::<Vec<_>>()
                .join(",")
        };
        format!(
            "{};{};{};{}",
            join(&i.sizes),
            join(&i.settled),
            i.writes,
            i.writes_failed
        )
    });
    // Each checked node's clock lead (name:ms,...) and each host's clock offset (ms,...).
    let leads: Vec<String> = r
        .clock_leads
        .iter()
        .map(|(n, l)| format!("{n}:{l}"))
        .collect();
    let skews: Vec<String> = r.skews_ms.iter().map(i64::to_string).collect();
    println!(
        "SIMRESULT {} {:016x} {} {} {} {} {} {} {} {} {} {} {}",
        seed,
        r.digest,
        r.check.problems.len(),
        r.check.applied_twice.len(),
        r.check.ops,
        r.check.reads_checked,
        r.check.keys_checked,
        r.clock_lead_ms,
        r.check.unknown,
        isolation,
        leads.join(","),
        skews.join(","),
        r.deltas
    );
}

/// What a seed's process reported.
struct Outcome {
    digest: String,
    problems: usize,
    twice: usize,
    ops: usize,
    reads: usize,
    keys: usize,
    clock_lead_ms: u64,
    /// Requests without a reply or with an error reply.
    unknown: usize,
    /// `sizes;settled;writes;failed` of an `isolated-tcp` run (see `one_seed`), else "-".
    isolation: String,
    /// Each checked node's clock lead: (name, ms).
    leads: Vec<(String, u64)>,
    /// Each host's clock offset (ms).
    skews_ms: Vec<i64>,
    /// Writes sent to replicas as deltas.
    deltas: u64,
    report: String,
}

/// Runs a seed, with the clock skew of `SHOAL_SIM_SKEW_MS` (0 when unset).
fn run_in_child(seed: u64, faults: &str) -> Outcome {
    run_in_child_skewed(seed, faults, skew_ms())
}

fn skew_ms() -> u64 {
    std::env::var("SHOAL_SIM_SKEW_MS").map_or(0, |s| s.parse().expect("ms"))
}

/// As [`run_in_child`], with the nodes' clocks up to `skew_ms` off either way.
fn run_in_child_skewed(seed: u64, faults: &str, skew_ms: u64) -> Outcome {
    let clients_on = std::env::var("SHOAL_SIM_CLIENT_NODES").unwrap_or_else(|_| "0".into());
    run_in_child_with(seed, faults, skew_ms, &clients_on)
}

/// As [`run_in_child_skewed`], with the clients on the first `client_nodes` nodes only
/// ("0": on every node).
fn run_in_child_with(seed: u64, faults: &str, skew_ms: u64, client_nodes: &str) -> Outcome {
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            "one_seed",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SHOAL_SIM_SEED", seed.to_string())
        .env("SHOAL_SIM_FAULTS", faults)
        .env("SHOAL_SIM_SKEW_MS", skew_ms.to_string())
        .env("SHOAL_SIM_CLIENT_NODES", client_nodes)
        .output()
        .expect("the seed's process runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("SIMRESULT ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("seed {seed} reported nothing:\n{stdout}\n{report}"));
    let f: Vec<&str> = line.split(' ').collect();
    let n = |i: usize| f[i].parse::<usize>().expect("a count");
    Outcome {
        digest: f[1].to_string(),
        problems: n(2),
        twice: n(3),
        ops: n(4),
        reads: n(5),
        keys: n(6),
        clock_lead_ms: n(7) as u64,
        unknown: n(8),
        isolation: f[9].to_string(),
        leads: f[10]
            .split(',')
            .filter_map(|p| p.split_once(':'))
            .map(|(n, l)| (n.to_string(), l.parse().expect("a lead")))
            .collect(),
        skews_ms: f[11]
            .split(',')
            .map(|v| v.parse().expect("an offset"))
            .collect(),
        deltas: f[12].parse().expect("a count"),
        report,
    }
}

/// Runs `seeds` with `faults`, each in its own process; returns the failing seeds and the
/// counters that ran an INCR twice.
fn run_seeds(faults: &str, seeds: std::ops::Range<u64>, verbose: bool) -> (Vec<u64>, usize) {
    let keys = 3 * Scenario::default().keys;
    let mut failed = Vec::new();
    let mut twice = 0;
    for seed in seeds {
        let o = run_in_child(seed, faults);
        if verbose || o.problems > 0 || o.twice > 0 {
            eprint!("{}", o.report);
        } else {
            eprintln!(
                "seed {seed}: ok ({} requests, {} without a reply or with an error, digest {})",
                o.ops, o.unknown, o.digest
            );
        }
        twice += o.twice;
        if o.problems > 0 {
            // Listed, and the soak goes on (a cluster that never settled checked nothing).
            failed.push(seed);
            continue;
        }
        assert!(
            o.ops > 1000,
            "seed {seed}: the clients made too few requests"
        );
        assert!(o.reads > 100, "seed {seed}: too few reads checked");
        assert_eq!(o.keys, keys, "seed {seed}: keys not checked");
        assert!(o.deltas > 0, "seed {seed}: no write replicated as a delta");
    }
    (failed, twice)
}

#[test]
fn network_faults_lose_nothing_and_run_nothing_twice() {
    let (failed, twice) = run_seeds("network", 0..3, true);
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
    assert_eq!(twice, 0, "an INCR ran twice without a crash");
}

#[test]
fn crashes_and_restarts_lose_no_acknowledged_write() {
    let (failed, twice) = run_seeds("crashes", 100..103, true);
    eprintln!("counters with an INCR run twice: {twice}");
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
}

/// Clocks up to 800 ms apart (each within 400 ms either way, `cluster-timeout-ms` 1000):
/// crashes and restarts still lose no acknowledged write, and the nodes measure the lead of
/// the clocks ahead of theirs. (Up to 2 s apart, 3 seeds of 10 lost writes: README.)
#[test]
fn clocks_apart_by_less_than_the_cluster_timeout_lose_nothing() {
    let mut leads = Vec::new();
    for seed in 200..202 {
        let o = run_in_child_skewed(seed, "crashes", 400);
        eprint!("{}", o.report);
        assert!(o.ops > 1000, "seed {seed}: too few requests");
        assert_eq!(o.problems, 0, "seed {seed}: {}", o.report);
        leads.push(o.clock_lead_ms);
    }
    // Four clocks drawn within 400 ms either way: some pair is well apart.
    assert!(
        leads.iter().all(|&l| l > 50 && l <= 800),
        "measured clock leads {leads:?} ms"
    );
}

#[test]
fn a_seed_replays_exactly() {
    let a = run_in_child(7, "all");
    let b = run_in_child(7, "all");
    assert!(a.ops > 1000, "too few requests");
    assert_eq!(
        a.digest, b.digest,
        "two runs of seed 7 made different histories:\n{}\n{}",
        a.report, b.report
    );
}

/// Seed 23 of the soak with every fault (it replays exactly): n0 restarts empty (n0 and n2
/// hold counter `ctr0`), then the link between n2 and n0 is held. n0's fetch of `ctr0`
/// took a "no such key" from a node that holds no copy of the slot as an answer and the
/// held n2 as gone, so it ran INCRs from nothing (answering 1 again after 8) and its result
/// later replaced n2's: 9 problems before the fix. (Its other faults may one day show the
/// open two-writer problem of the README instead: read the problems printed.)
#[test]
fn a_node_restarted_empty_runs_no_write_on_nothing() {
    let o = run_in_child(23, "all");
    assert!(o.ops > 1000, "too few requests");
    assert_eq!(o.problems, 0, "{}", o.report);
}

/// Seed 47 of the soak with every fault: node 2 is cut off from the three others for 5.1 s
/// at the end of the load (its clients still reach it; 7.7 s in the schedule before
/// restarts were followed by a pause for the refill). In that schedule, once each side
/// declared the other down, node 2 served its clients alone while the others served the
/// same keys: 74 problems (reads missing their own writes, INCRs answering one value twice).
/// A node that reaches no majority of the members it settled with now answers CLUSTERDOWN
/// (`handoff::cut_off`).
#[test]
fn a_node_cut_off_from_the_majority_serves_no_key() {
    let o = run_in_child(47, "all");
    assert!(o.ops > 1000, "too few requests");
    assert_eq!(o.problems, 0, "{}", o.report);
}

/// Seeds 82 and 285 of the soak with every fault: a node is frozen (cut off from the three
/// others) for 7.8 s and 6.5 s. Counting only members declared down, it knew itself cut
/// off about a second after the majority had declared it down and moved its keys: a client
/// read a value older than its own acknowledged write (82), and two INCRs answered 41 (285).
/// A node now counts the members it suspects as out of reach, and is cut off seconds
/// before the others can declare it down.
#[test]
fn a_node_counts_the_members_it_suspects_as_out_of_reach() {
    for seed in [82, 285] {
        let o = run_in_child(seed, "all");
        assert!(o.ops > 1000, "seed {seed}: too few requests");
        assert_eq!(o.problems, 0, "seed {seed}: {}", o.report);
    }
}

/// A node that gossip reaches but TCP does not (its TCP cut both ways from the three
/// others for 28 s, datagrams untouched: a firewall open for the gossip port only). It
/// stayed placed (each other node placed 4 members to the end): requests for its keys
/// waited for their timeout and some writes failed (3 of 72 near the end), the clients made
/// a ninth of the requests (1,102 and 1,125 against about 9,500 now), and a change of
/// membership could not have settled without its hand-off reports. The others now refuse the gossip of a member their links have not reached for 5 s
/// (`shoal_cluster::reach`), so it is declared down and they serve its keys from the other
/// copies; it refuses them in turn and is cut off. Near the end of the cut the three others
/// place three members, are settled, and take every write; after the healing it rejoins,
/// and the checker finds nothing lost.
#[test]
fn a_node_that_gossip_reaches_but_tcp_does_not_is_done_without() {
    for seed in [1, 2] {
        let o = run_in_child(seed, "isolated-tcp");
        assert!(o.ops > 1000, "seed {seed}: too few requests");
        assert_eq!(o.problems, 0, "seed {seed}: {}", o.report);
        let f: Vec<&str> = o.isolation.split(';').collect();
        assert_eq!(f.len(), 4, "seed {seed}: isolation {}", o.isolation);
        assert_eq!(f[0], "3,3,3", "seed {seed}: members placed by the others");
        assert_eq!(f[1], "1,1,1", "seed {seed}: the others settled");
        assert!(f[2].parse::<usize>().expect("writes") > 0);
        assert_eq!(f[3], "0", "seed {seed}: writes failed through the others");
    }
}

/// The clients on n0 only, so the other nodes forward one another nothing and nobody
/// forwards n0 anything, with the clocks up to 400 ms apart: n0 still learns how far ahead
/// of its own the other nodes' clocks run, from the replication they send it (stamped with
/// the sender's clock, REPLICATE_AT). That lead is what a failover at a replica orders its
/// writes past, so that the dead owner's late replication of an older write cannot win;
/// before, it came from forwarded commands' deadlines alone, and n0 knew none (lead 0).
#[test]
fn a_replica_forwarded_nothing_learns_its_owners_clock_lead() {
    let seed = 5;
    let o = run_in_child_with(seed, "none", 400, "1");
    assert_eq!(o.problems, 0, "{}", o.report);
    let n0 = o.skews_ms[0];
    let ahead = o.skews_ms.iter().max().copied().unwrap_or(0) - n0;
    assert!(
        ahead > 100,
        "seed {seed}: another clock should be well ahead of n0's: {:?}",
        o.skews_ms
    );
    let lead = o
        .leads
        .iter()
        .find(|(n, _)| n == "n0")
        .map(|(_, l)| *l as i64)
        .expect("n0's lead");
    // Transit (up to 5 ms a message here) only makes the measured lead smaller.
    assert!(
        lead <= ahead && lead + 50 >= ahead,
        "seed {seed}: n0 measured a lead of {lead} ms, the clocks say {ahead} ms ({:?})",
        o.skews_ms
    );
}

/// Scaling: a node of a new name joins during the load and another leaves gracefully (as
/// on SIGTERM), while the clients write through every node; after both the checker finds
/// every key with its two copies among the members left, and nothing lost.
#[test]
fn a_join_and_a_leave_under_load_lose_nothing() {
    let (failed, twice) = run_seeds("scale", 0..2, true);
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
    assert_eq!(twice, 0, "an INCR ran twice");
}

/// A link cut between two members of four (TCP between n0 and n1 both ways for the whole
/// 60 s load, gossip untouched, both reaching every other node) while a node joins and
/// another leaves. Both stay members: the others vouch for them in SWIM's indirect probes.
/// Two seconds into the cut, each sends its requests for the other through a member both
/// reach (`relay`), so its clients are answered as usual: without the relay each command
/// across the cut waited for its timeout (a read then went to the next copy, a write
/// answered TRYAGAIN), and these seeds made 2,022 and 4,670 requests, 8.1 % and 2.2 % of
/// them answered with an error or not at all, against 15,867 and 15,635 with 0.13 % and
/// 0.1 % now (simulated time: the same figures every run of one build).
/// After the cut heals the checker finds nothing lost and every key with its copies.
#[test]
fn a_link_cut_between_two_members_loses_nothing() {
    for seed in [0, 1] {
        let o = run_in_child(seed, "link-cut");
        eprint!("{}", o.report);
        assert!(o.ops > 10_000, "seed {seed}: too few requests");
        assert!(
            o.unknown * 100 < o.ops,
            "seed {seed}: {} of {} requests failed or got no answer",
            o.unknown,
            o.ops
        );
        assert_eq!(o.problems, 0, "seed {seed}: {}", o.report);
        assert_eq!(o.twice, 0, "seed {seed}: an INCR ran twice");
    }
}

/// `SHOAL_SIM_SEEDS=from..to` (default 0..1000), `SHOAL_SIM_FAULTS` (default all).
#[test]
#[ignore]
fn soak() {
    let range = std::env::var("SHOAL_SIM_SEEDS").unwrap_or_else(|_| "0..1000".into());
    let (a, b) = range.split_once("..").expect("SHOAL_SIM_SEEDS=from..to");
    let faults = std::env::var("SHOAL_SIM_FAULTS").unwrap_or_else(|_| "all".into());
    let (failed, twice) = run_seeds(
        &faults,
        a.parse().expect("seed")..b.parse().expect("seed"),
        false,
    );
    eprintln!("counters with an INCR run twice: {twice}; failing seeds: {failed:?}");
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
}
