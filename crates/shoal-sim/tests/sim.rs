//! The whole-cluster simulation over a fixed set of seeds (CI), and a soak over many
//! (`scripts/sim-soak.sh`, or `SHOAL_SIM_SEEDS=from..to cargo test --release -p shoal-sim
//! -- --ignored soak`). A failing seed is printed with its faults and problems; run it
//! alone with `SHOAL_SIM_SEEDS=<seed>..<seed+1>`.

use shoal_sim::{run, Faults, RunReport, Scenario};

fn show(r: &RunReport) {
    eprintln!(
        "seed {}: {} ops, {} acknowledged writes, {} reads and {} keys checked, {:?} simulated, digest {:016x}",
        r.seed, r.check.ops, r.check.acked_writes, r.check.reads_checked, r.check.keys_checked, r.simulated, r.digest
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

fn seeds(default: std::ops::Range<u64>) -> std::ops::Range<u64> {
    match std::env::var("SHOAL_SIM_SEEDS") {
        Ok(s) => {
            let (a, b) = s.split_once("..").expect("SHOAL_SIM_SEEDS=from..to");
            a.parse().expect("seed")..b.parse().expect("seed")
        }
        Err(_) => default,
    }
}

/// Runs `seeds` of `sc`; returns the failing seeds and how many counters ran an INCR twice.
fn run_seeds(sc: &Scenario, seeds: std::ops::Range<u64>) -> (Vec<u64>, usize) {
    let mut failed = Vec::new();
    let mut twice = 0;
    for seed in seeds {
        let r = run(seed, sc);
        show(&r);
        assert!(
            r.check.ops > 1000,
            "seed {seed}: the clients made too few requests"
        );
        assert!(
            r.check.reads_checked > 100,
            "seed {seed}: too few reads checked"
        );
        assert_eq!(
            r.check.keys_checked,
            2 * sc.keys,
            "seed {seed}: keys not checked"
        );
        twice += r.check.applied_twice.len();
        if !r.ok() {
            failed.push(seed);
        }
    }
    (failed, twice)
}

#[test]
fn network_faults_lose_nothing_and_run_nothing_twice() {
    let sc = Scenario {
        faults: Faults::Network,
        ..Scenario::default()
    };
    let (failed, twice) = run_seeds(&sc, seeds(0..3));
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
    assert_eq!(twice, 0, "an INCR ran twice without a crash");
}

#[test]
fn crashes_and_restarts_lose_no_acknowledged_write() {
    let sc = Scenario {
        faults: Faults::Crashes,
        ..Scenario::default()
    };
    let (failed, twice) = run_seeds(&sc, seeds(100..103));
    eprintln!("counters with an INCR run twice: {twice}");
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
}

#[test]
#[ignore]
fn soak() {
    let mut failed = Vec::new();
    let faults = match std::env::var("SHOAL_SIM_FAULTS").as_deref() {
        Ok("network") => Faults::Network,
        Ok("crashes") => Faults::Crashes,
        _ => Faults::All,
    };
    let sc = Scenario {
        faults,
        ..Scenario::default()
    };
    for seed in seeds(0..1000) {
        let r = run(seed, &sc);
        if !r.ok() {
            show(&r);
            failed.push(seed);
        } else {
            eprintln!("seed {seed}: ok ({} ops)", r.check.ops);
        }
    }
    assert!(failed.is_empty(), "failing seeds: {failed:?}");
}
