//! Redis Cluster clients through a join and a leave: real `shoald` processes in gossip mode
//! with a cluster-client port, and five real cluster clients (redis-py's `RedisCluster` sync
//! and asyncio, ioredis's `Cluster`, node-redis's `createCluster`, each in its own process
//! with the scripts in `tests/clients/`, and the Rust `redis` crate's `ClusterClient` on a
//! thread here) writing and reading back under load while a fourth node joins and then a
//! first one leaves. Every client must see zero errors, and every write it had acknowledged
//! must read back at the end.
//!
//! Memcached clients likewise: pymemcache, pylibmc on the text protocol and pylibmc on the
//! binary protocol (`tests/clients/mc_load.py`), each on one node's Memcached port, through a
//! join and a leave.
//!
//! The scripts' packages are installed by `scripts/test.sh` (pip `redis`, `pymemcache` and
//! `pylibmc`, npm `ioredis` and `redis` into `tests/clients/node_modules`); a missing one
//! fails this test.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use support::{Client, Daemon, Resp, POLL};

const SECRET: &str = "cluster-clients-test-secret";
/// A membership change settles (a leave includes the hand-off).
const SETTLE: Duration = Duration::from_secs(90);
/// A client's start (imports, CLUSTER SLOTS, its basic round) or its final read-back.
const CLIENT_STEP: Duration = Duration::from_secs(60);

struct Node {
    daemon: Daemon,
    gossip: SocketAddr,
    cluster_client: SocketAddr,
    memcache: SocketAddr,
}

impl Node {
    fn start(name: &str, seeds: &[SocketAddr]) -> Node {
        let mut args = vec![
            "--port".to_string(),
            "0".into(),
            "--memcache-port".into(),
            "0".into(),
            "--set".into(),
            "cluster-mode=gossip".into(),
            "--set".into(),
            "cluster-port=0".into(),
            "--set".into(),
            "cluster-client-port=0".into(),
            "--set".into(),
            "write-ack=all".into(),
            "--set".into(),
            "join-timeout-ms=1500".into(),
            "--set".into(),
            format!("node-name={name}"),
        ];
        if !seeds.is_empty() {
            let seeds: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
            args.push("--set".into());
            args.push(format!("cluster-seeds={}", seeds.join(",")));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let daemon = Daemon::start(&args, &[("SHOAL_CLUSTER_SECRET", SECRET)]);
        // The log names the Memcached port first, then the cluster-client port.
        let memcache =
            support::listening_addr(&daemon.wait_line("memcached protocol listening on"))
                .expect("the Memcached address in the log");
        let cluster_client =
            support::listening_addr(&daemon.wait_line("Redis Cluster clients listening on"))
                .expect("the cluster-client address in the log");
        let line = daemon.wait_line("gossip on ");
        let gossip = line
            .split_once("gossip on ")
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .expect("the gossip address in the log");
        Node {
            daemon,
            gossip,
            cluster_client,
            memcache,
        }
    }

    fn info(&self, field: &str) -> Option<String> {
        let Resp::Bulk(text) = Client::connect(self.daemon.addr).call(&["INFO", "cluster"]) else {
            return None;
        };
        String::from_utf8_lossy(&text)
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_owned))
    }
}

/// Waits until every one of `nodes` serves, settled, in one view of `nodes.len()` members.
fn wait_settled(nodes: &[&Node]) {
    let n = nodes.len().to_string();
    let deadline = Instant::now() + SETTLE;
    loop {
        let view = nodes[0].info("shoal_view_id");
        let settled = nodes.iter().all(|node| {
            node.info("shoal_members").as_deref() == Some(n.as_str())
                && node.info("shoal_settled").as_deref() == Some("1")
                && node.info("shoal_state").as_deref() == Some("serving")
                && node.info("shoal_view_id") == view
        });
        if settled {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{n} nodes not settled within {SETTLE:?}"
        );
        thread::sleep(POLL);
    }
}

/// One client script in its own process.
struct Load {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    writes: u64,
    seen: Vec<String>,
}

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients")
}

impl Load {
    fn start(name: &'static str, program: &str, args: &[&str]) -> Load {
        let mut child = Command::new(program)
            .args(args)
            .current_dir(clients_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot run {program}: {e}"));
        let (tx, lines) = mpsc::channel();
        for out in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        Load {
            name,
            child,
            stdin,
            lines,
            writes: 0,
            seen: Vec::new(),
        }
    }

    /// Reads the client's output until `done` accepts a line; panics after `within`.
    fn wait_for(&mut self, what: &str, within: Duration, mut done: impl FnMut(&str) -> bool) {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                panic!(
                    "{}: no {what} within {within:?}; output: {:#?}",
                    self.name, self.seen
                );
            };
            if let Some(n) = line.strip_prefix("progress ") {
                self.writes = n.parse().unwrap_or(self.writes);
            }
            let accepted = done(&line);
            self.seen.push(line);
            if accepted {
                return;
            }
        }
    }

    /// Waits until the client has written `more` keys past what it had written so far.
    fn wait_progress(&mut self, more: u64) {
        let target = self.writes + more;
        self.wait_for("progress", SETTLE, |l| {
            l.strip_prefix("progress ")
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n >= target)
        });
    }

    /// Stops the load; returns the result line once the client read everything back.
    fn finish(mut self) -> String {
        let mut stdin = self.stdin.take().expect("stdin");
        writeln!(stdin, "stop").expect("tell the client to stop");
        drop(stdin);
        let mut result = String::new();
        self.wait_for("result", CLIENT_STEP * 2, |l| {
            if l.starts_with("result ") {
                result = l.to_owned();
                true
            } else {
                false
            }
        });
        let status = support::wait_with_deadline(&mut self.child, CLIENT_STEP)
            .unwrap_or_else(|| panic!("{} did not exit", self.name));
        assert!(
            status.success(),
            "{}: {status}; {result}; output: {:#?}",
            self.name,
            self.seen
        );
        result
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Rust `redis` crate's cluster client, the same load as the scripts': writes, a read-back
/// of an earlier key every fourth write, until stopped; then every acknowledged write is
/// read back. Its result line has the scripts' form.
struct RustLoad {
    stop: Arc<AtomicBool>,
    writes: Arc<AtomicU64>,
    thread: thread::JoinHandle<String>,
}

impl RustLoad {
    fn start(addr: SocketAddr) -> RustLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let writes = Arc::new(AtomicU64::new(0));
        let (s, w) = (stop.clone(), writes.clone());
        let thread = thread::spawn(move || {
            let client = redis::cluster::ClusterClient::new(vec![format!("redis://{addr}/")])
                .expect("cluster client");
            let mut c = client.get_connection().expect("cluster connection");
            let key = |i: u64| format!("rust:load:{i}");
            let (mut reads, mut errors, mut lost, mut wrong) = (0u64, 0u64, 0u64, 0u64);
            let mut last_error = String::new();
            // Reads key `j` back and counts what came.
            let mut read_back = |c: &mut redis::cluster::ClusterConnection, j: u64| {
                match redis::cmd("GET").arg(key(j)).query::<Option<String>>(c) {
                    Ok(None) => lost += 1,
                    Ok(Some(v)) if v != format!("v{j}") => wrong += 1,
                    Ok(Some(_)) => {}
                    Err(e) => {
                        errors += 1;
                        last_error = e.to_string();
                        return;
                    }
                }
                reads += 1;
            };
            let mut acked: Vec<u64> = Vec::new();
            let (mut write_errors, mut write_error) = (0u64, String::new());
            // A safety bound only: the test stops the load long before.
            let deadline = Instant::now() + Duration::from_secs(600);
            let mut i = 0u64;
            while !s.load(Ordering::Relaxed) && Instant::now() < deadline {
                match redis::cmd("SET")
                    .arg(key(i))
                    .arg(format!("v{i}"))
                    .query::<()>(&mut c)
                {
                    Ok(()) => {
                        acked.push(i);
                        w.store(acked.len() as u64, Ordering::Relaxed);
                    }
                    Err(e) => {
                        write_errors += 1;
                        write_error = e.to_string();
                    }
                }
                if let Some(&j) = acked.get(acked.len() / 2).filter(|_| i % 4 == 3) {
                    read_back(&mut c, j);
                }
                i += 1;
            }
            for &j in &acked {
                read_back(&mut c, j);
            }
            let errors = errors + write_errors;
            format!(
                "result writes={} reads={reads} errors={errors} lost={lost} wrong={wrong} \
                 last_error={last_error:?} last_write_error={write_error:?}",
                acked.len()
            )
        });
        RustLoad {
            stop,
            writes,
            thread,
        }
    }

    fn wait_progress(&self, more: u64) {
        let target = self.writes.load(Ordering::Relaxed) + more;
        let deadline = Instant::now() + SETTLE;
        while self.writes.load(Ordering::Relaxed) < target {
            assert!(
                !self.thread.is_finished(),
                "the Rust cluster client stopped"
            );
            assert!(
                Instant::now() < deadline,
                "the Rust cluster client made no progress"
            );
            thread::sleep(POLL);
        }
    }

    fn finish(self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the Rust load thread")
    }
}

fn field(result: &str, name: &str) -> u64 {
    result
        .split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {result:?}"))
}

#[test]
fn cluster_clients_ride_through_a_join_and_a_leave() {
    let n0 = Node::start("c0", &[]);
    let n1 = Node::start("c1", &[n0.gossip]);
    let n2 = Node::start("c2", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2]);
    // Each client starts from another node's cluster-client port (the one that leaves too).
    let at = |n: &Node| n.cluster_client.to_string();
    let (a0, a1, a2) = (at(&n0), at(&n1), at(&n2));
    let mut loads = vec![
        Load::start("redis-py", "python3", &["load.py", "sync", &a0]),
        Load::start("redis-py asyncio", "python3", &["load.py", "async", &a1]),
        Load::start("ioredis", "node", &["load.js", "ioredis", &a2]),
        Load::start("node-redis", "node", &["load.js", "node-redis", &a0]),
    ];
    let rust = RustLoad::start(n1.cluster_client);
    for l in &mut loads {
        l.wait_for("basic round", CLIENT_STEP, |line| line == "basic ok");
        l.wait_progress(500);
    }
    rust.wait_progress(500);
    // A fourth node joins: slots move to it, their old owners answer MOVED.
    let moved_before: u64 = [&n0, &n1, &n2]
        .iter()
        .filter_map(|n| n.info("shoal_moved_replies")?.parse::<u64>().ok())
        .sum();
    let n3 = Node::start("c3", &[n0.gossip, n1.gossip]);
    wait_settled(&[&n0, &n1, &n2, &n3]);
    for l in &mut loads {
        l.wait_progress(500);
    }
    rust.wait_progress(500);
    // The clients' slot maps were out of date after the join: once the views settled, some
    // requests were MOVED.
    let moved = || -> u64 {
        [&n0, &n1, &n2, &n3]
            .iter()
            .filter_map(|n| n.info("shoal_moved_replies")?.parse::<u64>().ok())
            .sum()
    };
    let deadline = Instant::now() + SETTLE;
    while moved() <= moved_before {
        assert!(
            Instant::now() < deadline,
            "no request was redirected after the join"
        );
        for l in &mut loads {
            l.wait_progress(100);
        }
    }
    println!("MOVED replies after the join: {}", moved() - moved_before);
    // c1 leaves (SIGTERM: it hands its slots over, then exits).
    let Node { daemon: mut d1, .. } = n1;
    d1.signal("TERM");
    let status = d1.wait_exit(SETTLE);
    assert!(status.success(), "c1 left with {status}");
    wait_settled(&[&n0, &n2, &n3]);
    for l in &mut loads {
        l.wait_progress(500);
    }
    rust.wait_progress(500);
    let mut results = vec![("redis crate", rust.finish())];
    for l in loads {
        let name = l.name;
        results.push((name, l.finish()));
    }
    for (name, result) in results {
        assert_clean(name, &result);
    }
}

/// A load's result: it wrote through every phase, read back more than it wrote, and saw no
/// error, no lost and no wrong value.
fn assert_clean(name: &str, result: &str) {
    println!("{name}: {result}");
    assert!(field(result, "writes") >= 1500, "{name}: {result}");
    assert!(
        field(result, "reads") > field(result, "writes"),
        "{name}: {result}"
    );
    for f in ["errors", "lost", "wrong"] {
        assert_eq!(field(result, f), 0, "{name}: {result}");
    }
}

#[test]
fn memcached_clients_ride_through_a_join_and_a_leave() {
    let n0 = Node::start("m0", &[]);
    let n1 = Node::start("m1", &[n0.gossip]);
    let n2 = Node::start("m2", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2]);
    // Each library talks to one node that stays; the keys' owners join and leave around it.
    let (a0, a2) = (n0.memcache.to_string(), n2.memcache.to_string());
    let mut loads = vec![
        Load::start("pymemcache", "python3", &["mc_load.py", "pymemcache", &a0]),
        Load::start("pylibmc", "python3", &["mc_load.py", "pylibmc", &a2]),
        Load::start(
            "pylibmc binary",
            "python3",
            &["mc_load.py", "pylibmc-binary", &a0],
        ),
    ];
    for l in &mut loads {
        l.wait_for("basic round", CLIENT_STEP, |line| line == "basic ok");
        l.wait_progress(500);
    }
    let n3 = Node::start("m3", &[n0.gossip, n1.gossip]);
    wait_settled(&[&n0, &n1, &n2, &n3]);
    for l in &mut loads {
        l.wait_progress(500);
    }
    // m1 leaves (SIGTERM: it hands its slots over, then exits).
    let Node { daemon: mut d1, .. } = n1;
    d1.signal("TERM");
    let status = d1.wait_exit(SETTLE);
    assert!(status.success(), "m1 left with {status}");
    wait_settled(&[&n0, &n2, &n3]);
    for l in &mut loads {
        l.wait_progress(500);
    }
    for l in loads {
        let name = l.name;
        assert_clean(name, &l.finish());
    }
}
