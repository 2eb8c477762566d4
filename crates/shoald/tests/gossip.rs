//! Real `shoald` processes in gossip mode on loopback, each with a client load running while
//! the membership changes and every read checked (issue #4, section 5):
//!
//! - `scale_out_crash_restart_and_leave_lose_nothing`: (a) 3 nodes with 100,000 keys, a 4th
//!   joins: zero misses; (b) SIGKILL one of 4: zero keys lost, and the only client errors
//!   are for commands whose outcome a node could not know (an INCR in flight to the killed
//!   node, a read whose key's copies did not answer); the killed node restarts empty and is
//!   refilled; (c) SIGTERM one of 4: zero keys lost, zero errors; then two nodes join at
//!   once, and one node freezes (SIGSTOP) until it is declared down and thaws: nothing
//!   lost, no stale value served, and writes to its keys answer TRYAGAIN (or "may have run")
//!   until it is declared down, rather than get a second writer.
//! - `rolling_restart_loses_nothing`: (d) each of 3 nodes restarted in turn.
//! - `a_node_paused_past_failure_detection_serves_no_stale_value`: a node stopped until
//!   declared down serves none of its old values on waking (the pause fence).
//! - `wrong_secret_or_cluster_name_never_joins`: (e).
//!
//! Every port is picked by the kernel (port 0) and read back from the daemon's log. The
//! tests wait on conditions with deadlines, never by sleeping, and run one at a time (a
//! cluster's failure detector should not compete with another cluster for two cores).
//! Writes use `write-ack = all`, so an acknowledged write survives the loss of one node.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

const SHOALD: &str = env!("CARGO_BIN_EXE_shoald");
const SECRET: &str = "gossip-process-test-secret";
/// Start-up (both addresses in the log).
const START: Duration = Duration::from_secs(20);
/// A membership change settles (failure detection takes about 6 s of it).
const SETTLE: Duration = Duration::from_secs(90);
/// Longest a load runs, whatever happens.
const LOAD_MAX: Duration = Duration::from_secs(180);
const POLL: Duration = Duration::from_millis(50);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// One `shoald` process.
struct Proc {
    name: String,
    child: Child,
    resp: SocketAddr,
    gossip: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    fn start(name: &str, seeds: &[SocketAddr]) -> Proc {
        Proc::start_with(name, seeds, SECRET, &[])
    }

    fn start_with(name: &str, seeds: &[SocketAddr], secret: &str, extra: &[&str]) -> Proc {
        let seeds: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
        let mut args: Vec<String> = [
            "--port",
            "0",
            "--log-level",
            "info",
            "--set",
            "cluster-mode=gossip",
            "--set",
            "cluster-port=0",
            "--set",
            "write-ack=all",
            "--set",
            "join-timeout-ms=1500",
            "--set",
            "leave-timeout-ms=60000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push("--set".into());
        args.push(format!("node-name={name}"));
        if !seeds.is_empty() {
            args.push("--set".into());
            args.push(format!("cluster-seeds={}", seeds.join(",")));
        }
        for e in extra {
            args.push("--set".into());
            args.push(e.to_string());
        }
        let mut child = Command::new(SHOALD)
            .args(&args)
            .env_clear()
            .env("SHOAL_CLUSTER_SECRET", secret)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn shoald");
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        {
            let log = log.clone();
            thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(a) = between(&line, "listening on ", " (RESP)") {
                        let _ = tx.send(("resp", a));
                    }
                    if let Some(a) = between(&line, "gossip on ", " (UDP)") {
                        let _ = tx.send(("gossip", a));
                    }
                    log.lock().unwrap().push(line);
                }
            });
        }
        let (mut resp, mut gossip) = (None, None);
        let deadline = Instant::now() + START;
        while resp.is_none() || gossip.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(("resp", a)) => resp = Some(a),
                Ok((_, a)) => gossip = Some(a),
                Err(_) => panic!(
                    "{name} did not start within {START:?}: {:?}",
                    log.lock().unwrap()
                ),
            }
        }
        Proc {
            name: name.into(),
            child,
            resp: resp.unwrap(),
            gossip: gossip.unwrap(),
            log,
        }
    }

    fn con(&self) -> redis::Connection {
        let client = redis::Client::open(format!("redis://{}/", self.resp)).expect("client");
        let con = client
            .get_connection_with_timeout(Duration::from_secs(5))
            .expect("connect");
        con.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        con
    }

    /// The inter-node port: the bus port of its own line in CLUSTER NODES.
    fn bus_port(&self) -> u16 {
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.con())
            .expect("CLUSTER NODES");
        nodes
            .lines()
            .find(|l| l.contains("myself"))
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|a| a.split('@').nth(1))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no bus port for myself in {nodes}"))
    }

    fn info(&self) -> HashMap<String, String> {
        let text: String = redis::cmd("INFO")
            .arg("cluster")
            .query(&mut self.con())
            .expect("INFO cluster");
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.trim().to_string()))
            .collect()
    }

    fn stat(&self, field: &str) -> u64 {
        self.info()
            .get(field)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{} has no numeric {field}", self.name))
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill(1)")
            .success();
        assert!(ok, "kill -{sig} {}", self.name);
    }

    /// Waits for the process to exit; true if it exited with success.
    fn wait_exit(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.success();
            }
            assert!(
                Instant::now() < deadline,
                "{} did not exit within {within:?}: {:?}",
                self.name,
                self.tail()
            );
            thread::sleep(POLL);
        }
    }

    fn tail(&self) -> Vec<String> {
        let log = self.log.lock().unwrap();
        log[log.len().saturating_sub(30)..].to_vec()
    }

    /// Whether any line the process logged so far contains `text` (not only the last
    /// lines: a loaded machine logs more after it).
    fn logged(&self, text: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(text))
    }

    /// The metrics port's address, from the log (started with `metrics-port=0`).
    fn metrics(&self) -> SocketAddr {
        let find = || {
            let log = self.log.lock().unwrap();
            log.iter()
                .find_map(|l| between(l, "health checks on http://", "/metrics"))
        };
        wait_until("the metrics port in the log", START, &[self], || {
            find().is_some()
        });
        find().unwrap()
    }

    /// `GET path` on the metrics port: (status, body).
    fn http_get(&self, path: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(self.metrics()).expect("metrics port");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: shoal\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).expect("an HTTP answer");
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        (status, body)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn between(line: &str, start: &str, end: &str) -> Option<SocketAddr> {
    let from = line.find(start)? + start.len();
    let to = from + line[from..].find(end)?;
    line[from..to].parse().ok()
}

/// Polls `f` until it is true; panics with `what` after `within`.
fn wait_until(what: &str, within: Duration, procs: &[&Proc], mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !f() {
        if Instant::now() >= deadline {
            let logs: Vec<_> = procs.iter().map(|p| (&p.name, p.tail())).collect();
            panic!("{what}: not within {within:?}; logs: {logs:#?}");
        }
        thread::sleep(POLL);
    }
}

/// Waits until every one of `procs` serves, settled, in one and the same view of
/// `procs.len()` members. Returns how long that took.
fn wait_settled(procs: &[&Proc]) -> Duration {
    let started = Instant::now();
    let n = procs.len().to_string();
    wait_until("cluster settled", SETTLE, procs, || {
        let infos: Vec<_> = procs.iter().map(|p| p.info()).collect();
        let view = infos[0].get("shoal_view_id").cloned();
        infos.iter().all(|i| {
            i.get("shoal_members") == Some(&n)
                && i.get("shoal_settled").map(String::as_str) == Some("1")
                && i.get("shoal_state").map(String::as_str) == Some("serving")
                && i.get("shoal_view_id") == view.as_ref()
        })
    });
    started.elapsed()
}

fn key(i: u64) -> String {
    format!("key:{i}")
}

fn value(i: u64) -> String {
    format!("value-{i}-{}", "x".repeat((i % 7) as usize * 10))
}

/// Writes keys `0..n` through `p`, 1,000 per pipeline.
fn fill(p: &Proc, n: u64) {
    let mut con = p.con();
    for start in (0..n).step_by(1000) {
        let mut pipe = redis::pipe();
        for i in start..(start + 1000).min(n) {
            pipe.cmd("SET").arg(key(i)).arg(value(i)).ignore();
        }
        let () = pipe.query(&mut con).expect("fill");
    }
    let mut pipe = redis::pipe();
    for c in 0..COUNTERS {
        pipe.cmd("SET")
            .arg(format!("ctr:{c}"))
            .arg(COUNTER_START)
            .ignore();
    }
    let () = pipe.query(&mut con).expect("fill counters");
}

/// Milliseconds since the first call (the loads' clock, to order their answers).
fn since_first_load() -> u64 {
    static FIRST: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    FIRST.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// Every counter holds its start value plus the acknowledged INCRs of `loads` (plus at most
/// one per INCR whose outcome the client could not know); no two acknowledged INCRs of a
/// counter answered the same value, and none answered more than the final value.
fn check_counters(p: &Proc, loads: &[&LoadResult]) {
    let mut con = p.con();
    let mut pipe = redis::pipe();
    for c in 0..COUNTERS {
        pipe.cmd("GET").arg(format!("ctr:{c}"));
    }
    let got: Vec<Option<i64>> = pipe.query(&mut con).expect("read counters");
    let mut total = 0;
    for (c, v) in (0..COUNTERS).zip(got) {
        let acked: i64 = loads.iter().filter_map(|r| r.incrs.get(&c)).sum();
        let unsure = loads
            .iter()
            .map(|r| r.unsure.iter().filter(|&&u| u == c).count() as i64)
            .sum::<i64>();
        let v = v.unwrap_or_else(|| panic!("counter ctr:{c} lost"));
        let mut answers: Vec<(i64, u64, &str)> = loads
            .iter()
            .flat_map(|r| {
                r.answers
                    .get(&c)
                    .into_iter()
                    .flatten()
                    .map(|&(n, at)| (n, at, r.tag.as_str()))
            })
            .collect();
        answers.sort_unstable();
        let alike = answers.windows(2).any(|w| w[0].0 == w[1].0);
        let above = answers.last().is_some_and(|a| a.0 > v);
        assert!(
            !alike && !above,
            "ctr:{c} = {v}: acknowledged INCRs answered (value, ms, load) {answers:?}"
        );
        assert!(
            v >= COUNTER_START + acked && v <= COUNTER_START + acked + unsure,
            "ctr:{c} = {v}, expected {} (+ at most {unsure})",
            COUNTER_START + acked
        );
        total += acked;
    }
    println!("counters: {total} acknowledged INCRs all present");
}

/// Reads keys `0..n` through `p`; returns (misses, wrong values).
fn verify(p: &Proc, n: u64) -> (u64, u64) {
    let mut con = p.con();
    let (mut misses, mut wrong) = (0, 0);
    for start in (0..n).step_by(1000) {
        let end = (start + 1000).min(n);
        let mut pipe = redis::pipe();
        for i in start..end {
            pipe.cmd("GET").arg(key(i));
        }
        let got: Vec<Option<String>> = pipe.query(&mut con).expect("verify");
        for (i, v) in (start..end).zip(got) {
            match v {
                None => misses += 1,
                Some(v) if v != value(i) => wrong += 1,
                Some(_) => {}
            }
        }
    }
    (misses, wrong)
}

/// Sum of CLUSTER LOCALKEYS (copies held) and the cluster's DBSIZE, through each node.
fn copies(procs: &[&Proc]) -> (u64, u64) {
    let mut held = 0;
    for p in procs {
        let n: u64 = redis::cmd("CLUSTER")
            .arg("LOCALKEYS")
            .query(&mut p.con())
            .expect("LOCALKEYS");
        held += n;
    }
    let size: u64 = redis::cmd("DBSIZE")
        .query(&mut procs[0].con())
        .expect("DBSIZE");
    (held, size)
}

/// Asserts that the nodes hold two copies of every key between them. On failure it names
/// the keys held once or more than twice, with the nodes that hold them, and whether the
/// counts still differ a few seconds later (a copy in flight, or one never sent).
fn assert_two_copies(procs: &[&Proc], context: &str) {
    let (held, size) = copies(procs);
    if held == 2 * size {
        return;
    }
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut procs[0].con())
        .expect("KEYS");
    let mut holders: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in procs {
        let mut pipe = redis::pipe();
        for k in &keys {
            pipe.cmd("CLUSTER").arg("HASKEY").arg(k);
        }
        let has: Vec<u8> = pipe.query(&mut p.con()).expect("HASKEY");
        for (k, h) in keys.iter().zip(has) {
            if h == 1 {
                holders.entry(k).or_default().push(&p.name);
            }
        }
    }
    let odd: Vec<_> = keys
        .iter()
        .map(|k| (k, holders.get(k.as_str()).cloned().unwrap_or_default()))
        .filter(|(_, h)| h.len() != 2)
        .take(20)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut later = copies(procs);
    while later.0 != 2 * later.1 && Instant::now() < deadline {
        later = copies(procs);
    }
    for p in procs {
        eprintln!("{}: {:#?}", p.name, p.tail());
    }
    panic!(
        "{context}: {held} copies of {size} keys; odd keys and their holders: {odd:?}; \
         5 s later: {later:?}"
    );
}

/// Counters `ctr:0..COUNTERS` start at `COUNTER_START` (written by `fill`); loads INCR them
/// while keys move, and every acknowledged INCR must show in the final values.
const COUNTERS: u64 = 200;
const COUNTER_START: i64 = 1000;

#[derive(Debug, Default)]
struct LoadResult {
    reads: u64,
    misses: u64,
    wrong: u64,
    errors: Vec<String>,
    /// Load keys whose SET was acknowledged.
    written: Vec<String>,
    /// Acknowledged INCRs per counter, and counters whose INCR had an unknown outcome.
    incrs: HashMap<u64, i64>,
    unsure: Vec<u64>,
    /// Each acknowledged INCR's answer per counter, with when it came (ms since the test
    /// binary's first load): two answers alike, or a final value below the highest, mean a
    /// write was lost or ran on an old value.
    answers: HashMap<u64, Vec<(i64, u64)>>,
    /// `ord:{tag}:{c}` keys: the last round whose pipelined `SET a; SET b` was acknowledged,
    /// and the rounds whose pair got an error (either write may have run).
    ordered: HashMap<u64, u64>,
    ordered_unsure: HashMap<u64, Vec<u64>>,
    /// Reads of an `ord:` key right after its pair that saw the second write, and those
    /// that did not.
    ordered_reads: u64,
    reordered: Vec<String>,
    tag: String,
}

/// A client load on one node: pipelines of 50 GETs of random pre-written keys (every
/// reply checked) and one SET of a fresh key, until stopped (or `LOAD_MAX`).
struct Load {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<LoadResult>,
}

impl Load {
    fn start(p: &Proc, keys: u64, tag: &str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let addr = p.resp;
        let tag = tag.to_string();
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let client = redis::Client::open(format!("redis://{addr}/")).expect("client");
            let mut con = client
                .get_connection_with_timeout(Duration::from_secs(5))
                .expect("connect");
            con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut r = LoadResult {
                tag: tag.clone(),
                ..LoadResult::default()
            };
            let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ tag.len() as u64;
            let started = Instant::now();
            let mut round = 0u64;
            while !flag.load(Ordering::Relaxed) && started.elapsed() < LOAD_MAX {
                round += 1;
                let mut pipe = redis::pipe();
                let mut asked = Vec::with_capacity(50);
                for _ in 0..50 {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let i = seed % keys;
                    asked.push(i);
                    pipe.cmd("GET").arg(key(i));
                }
                // An MGET of some of them, split by their owners (and sent again key by key
                // when a part's copies change on its way).
                let mget = &asked[..8];
                pipe.cmd("MGET")
                    .arg(mget.iter().map(|&i| key(i)).collect::<Vec<_>>());
                let fresh = format!("load:{tag}:{round}");
                pipe.cmd("SET").arg(&fresh).arg(&fresh);
                let counter = seed % COUNTERS;
                // Two writes of one key, pipelined: the second must win.
                let ord = format!("ord:{tag}:{}", counter % 20);
                pipe.cmd("SET").arg(&ord).arg(format!("{round}-a"));
                pipe.cmd("SET").arg(&ord).arg(format!("{round}-b"));
                pipe.cmd("GET").arg(&ord);
                pipe.cmd("INCR").arg(format!("ctr:{counter}"));
                // A split write, then a write of one of its keys: the second must win (a
                // part sent again key by key keeps its place in the connection's order).
                let (mx, my) = (
                    format!("mo:{tag}:{}:x", counter % 20),
                    format!("mo:{tag}:{}:y", counter % 20),
                );
                pipe.cmd("MSET")
                    .arg(&mx)
                    .arg(format!("{round}-a"))
                    .arg(&my)
                    .arg(format!("{round}-a"));
                pipe.cmd("SET").arg(&mx).arg(format!("{round}-b"));
                pipe.cmd("GET").arg(&mx);
                // Sent as a whole and read reply by reply: an error reply to one command
                // (`pipe.query` would fail the whole pipeline on it) leaves the others known.
                let sent = pipe.get_packed_pipeline();
                match redis::ConnectionLike::req_packed_commands(&mut con, &sent, 0, 59) {
                    Ok(mut got) => {
                        let read = got.pop().map(|v| redis::from_redis_value::<String>(&v));
                        let b = got.pop().map(|v| redis::from_redis_value::<String>(&v));
                        let a = got.pop().map(|v| redis::from_redis_value::<String>(&v));
                        let ok = |w: &Option<redis::RedisResult<String>>| matches!(w, Some(Ok(v)) if v == "OK");
                        if ok(&a) && ok(&b) {
                            match read {
                                Some(Ok(v)) if v == format!("{round}-b") => r.ordered_reads += 1,
                                Some(Ok(v)) => {
                                    let again: Vec<redis::RedisResult<Option<String>>> = (0..3)
                                        .map(|_| redis::cmd("GET").arg(&mx).query(&mut con))
                                        .collect();
                                    r.reordered.push(format!(
                                        "{mx}: read {v} after {round}-b; again {again:?}"
                                    ))
                                }
                                other => r.errors.push(format!("GET {mx}: {other:?}")),
                            }
                        } else {
                            r.errors.push(format!("MSET then SET: {:?}", (a, b)));
                        }
                        match got.pop().map(|v| redis::from_redis_value::<i64>(&v)) {
                            Some(Ok(n)) => {
                                *r.incrs.entry(counter).or_default() += 1;
                                r.answers
                                    .entry(counter)
                                    .or_default()
                                    .push((n, since_first_load()));
                            }
                            other => {
                                r.unsure.push(counter);
                                r.errors.push(format!("INCR: {other:?}"));
                            }
                        }
                        let read = got.pop().map(|v| redis::from_redis_value::<String>(&v));
                        let b = got.pop().map(|v| redis::from_redis_value::<String>(&v));
                        let a = got.pop().map(|v| redis::from_redis_value::<String>(&v));
                        let acked = |w: &Option<redis::RedisResult<String>>| matches!(w, Some(Ok(v)) if v == "OK");
                        if acked(&b) {
                            // The second write is the pair's last: the first, sent before it
                            // on the same connection, ran before it or not at all.
                            r.ordered.insert(counter % 20, round);
                            if !acked(&a) {
                                r.errors.push(format!("SET pair, first: {a:?}"));
                            } else {
                                // The read right after the pair sees the second write.
                                match read {
                                    Some(Ok(v)) if v == format!("{round}-b") => {
                                        r.ordered_reads += 1
                                    }
                                    Some(Ok(v)) => {
                                        r.reordered.push(format!("{ord}: read {v} after {round}-b"))
                                    }
                                    other => r.errors.push(format!("GET {ord}: {other:?}")),
                                }
                            }
                        } else {
                            r.ordered_unsure
                                .entry(counter % 20)
                                .or_default()
                                .push(round);
                            r.errors.push(format!("SET pair: {:?}", (a, b)));
                        }
                        let ok = got.pop().map(|v| redis::from_redis_value::<String>(&v));
                        match got
                            .pop()
                            .map(|v| redis::from_redis_value::<Vec<Option<String>>>(&v))
                        {
                            Some(Ok(values)) if values.len() == mget.len() => {
                                for (i, v) in mget.iter().zip(values) {
                                    r.reads += 1;
                                    match v {
                                        None => r.misses += 1,
                                        Some(v) if v == value(*i) => {}
                                        Some(_) => r.wrong += 1,
                                    }
                                }
                            }
                            other => r.errors.push(format!("MGET: {other:?}")),
                        }
                        for (i, v) in asked.iter().zip(got) {
                            r.reads += 1;
                            match redis::from_redis_value::<Option<String>>(&v) {
                                Ok(None) => r.misses += 1,
                                Ok(Some(v)) if v == value(*i) => {}
                                Ok(Some(_)) => r.wrong += 1,
                                Err(e) => r.errors.push(format!("GET: {e}")),
                            }
                        }
                        if let Some(Ok(ok)) = &ok {
                            if ok == "OK" {
                                r.written.push(fresh);
                            }
                        } else {
                            r.errors.push(format!("SET: {ok:?}"));
                        }
                    }
                    Err(e) => {
                        r.unsure.push(counter);
                        r.ordered_unsure
                            .entry(counter % 20)
                            .or_default()
                            .push(round);
                        r.errors.push(e.to_string());
                        if r.errors.len() > 100 {
                            break;
                        }
                        if let Ok(c) = client.get_connection_with_timeout(Duration::from_secs(5)) {
                            con = c;
                        }
                    }
                }
            }
            r
        });
        Load { stop, handle }
    }

    fn finish(self) -> LoadResult {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("load thread")
    }
}

/// Checks a load's outcome: no miss, no wrong value, no error, at least some traffic.
fn check_load(what: &str, r: &LoadResult) {
    check_load_with(what, r, None);
}

/// Like [`check_load`], but errors are allowed where a node could not know a command's
/// outcome or refused to make a second writer: those containing one of `allowed`, at most
/// 100 of them (a load stops after 100 failed pipelines anyway). Any other error fails.
fn check_load_in_doubt(what: &str, r: &LoadResult, allowed: &[&str]) {
    check_load_with(what, r, Some(allowed));
}

/// In-doubt errors when a node is SIGKILLed: an INCR in flight to it may have run there,
/// and a read whose key's copies did not answer its fetch answers TRYAGAIN. (A killed node
/// still completes connects from its backlog, then resets them: before that counted as
/// gone, writes to and replicated to it answered TRYAGAIN and NOREPLICAS in 3 runs of 13.)
const KILL_DOUBT: &[&str] = &["may have run", "the key's other copies did not answer"];

/// In-doubt errors while a node is frozen, before it is declared down: writes to its keys
/// answer TRYAGAIN (or, sent before it froze, "may have run"), those of keys it is a
/// replica of NOREPLICAS, a read whose fetch it did not answer TRYAGAIN, and the thawed
/// node, until it hears the others are up, CLUSTERDOWN; forwarded to it, until a majority
/// confirmed its view, a write answers that it was paused (TRYAGAIN).
const FREEZE_DOUBT: &[&str] = &[
    "may have run",
    "the key's copy",
    "the key's other copies did not answer",
    "NOREPLICAS",
    "The cluster is down",
    "this node was paused",
];

fn check_load_with(what: &str, r: &LoadResult, doubt: Option<&[&str]>) {
    println!(
        "{what}: {} reads, {} misses, {} wrong, {} errors, {} writes",
        r.reads,
        r.misses,
        r.wrong,
        r.errors.len(),
        r.written.len()
    );
    assert!(r.reads > 0, "{what}: the load made no request");
    assert!(
        r.reordered.is_empty(),
        "{what}: pipelined writes seen out of order: {:?}",
        r.reordered
    );
    let first: Vec<&String> = r.errors.iter().take(5).collect();
    assert_eq!(r.misses, 0, "{what}: misses (errors: {first:?})");
    assert_eq!(r.wrong, 0, "{what}: wrong values (errors: {first:?})");
    let Some(allowed) = doubt else {
        assert!(r.errors.is_empty(), "{what}: errors {:?}", r.errors);
        return;
    };
    let mut kinds: std::collections::BTreeMap<&str, usize> = Default::default();
    for e in &r.errors {
        let kind = allowed.iter().find(|k| e.contains(*k)).unwrap_or(&"other");
        *kinds.entry(kind).or_default() += 1;
    }
    if !r.errors.is_empty() {
        println!(
            "{what}: errors by kind {kinds:?}, first {:?}",
            r.errors.first()
        );
    }
    let other: Vec<&String> = r
        .errors
        .iter()
        .filter(|e| !allowed.iter().any(|kind| e.contains(kind)))
        .collect();
    assert!(other.is_empty(), "{what}: errors {other:?}");
    assert!(r.errors.len() <= 100, "{what}: {kinds:?}");
}

/// Every acknowledged load write reads back through `p`, and of each pipelined pair of
/// writes to one key the second one stuck.
fn check_written(p: &Proc, loads: &[&LoadResult]) {
    let mut con = p.con();
    for r in loads {
        for (c, round) in &r.ordered {
            let k = format!("ord:{}:{c}", r.tag);
            let v: Option<String> = redis::cmd("GET").arg(&k).query(&mut con).expect("GET");
            let v = v.unwrap_or_else(|| panic!("{k} lost"));
            // A later phase's load with the same tag does not exist: tags are unique. A
            // later pair that got an error may have written either of its values.
            let later: Vec<String> = r
                .ordered_unsure
                .get(c)
                .into_iter()
                .flatten()
                .filter(|&&u| u > *round)
                .flat_map(|u| [format!("{u}-a"), format!("{u}-b")])
                .collect();
            assert!(
                v == format!("{round}-b") || later.contains(&v),
                "{k}: pipelined writes reordered or lost: {v}, expected {round}-b or one of \
                 {later:?}"
            );
        }
    }
    for r in loads {
        for chunk in r.written.chunks(1000) {
            let mut pipe = redis::pipe();
            for k in chunk {
                pipe.cmd("GET").arg(k);
            }
            let got: Vec<Option<String>> = pipe.query(&mut con).expect("read load writes");
            for (k, v) in chunk.iter().zip(got) {
                assert_eq!(v.as_deref(), Some(k.as_str()), "acknowledged write lost");
            }
        }
    }
}

/// Prints the cluster counters and log tails of `procs` (for a failing check).
fn dump(procs: &[&Proc]) {
    for p in procs {
        let i = p.info();
        let stats: Vec<String> = i
            .iter()
            .filter(|(k, _)| {
                [
                    "shoal_view_id",
                    "shoal_repl_dropped",
                    "shoal_failovers",
                    "shoal_unreachable",
                    "shoal_fetched_keys",
                    "shoal_expired_requests",
                    "shoal_other_view_requests",
                    "shoal_repl_stale",
                ]
                .contains(&k.as_str())
            })
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        eprintln!("{}: {}\n{:#?}", p.name, stats.join(" "), p.tail());
    }
}

fn hand_off_sent(procs: &[&Proc]) -> (u64, u64) {
    procs.iter().fold((0, 0), |(k, b), p| {
        (
            k + p.stat("shoal_handoff_keys_sent"),
            b + p.stat("shoal_handoff_bytes_sent"),
        )
    })
}

/// A leaving node runs no keyed command for a node that has not heard of the leave yet: it
/// answers "leaving", and the sender tries the key's next copy, which owns the key once the
/// node is gone (and which the nodes that heard already use). Were it to run them, it and
/// the next owner would both write the key while the views differ, and one of two
/// acknowledged INCRs could be lost, as (c) of the test above once lost one.
#[test]
fn a_leaving_node_sends_commands_from_an_older_view_on() {
    use shoal_cluster::message::encode_command;
    let _serial = serial();
    // A slow hand-off keeps n1 leaving for a few seconds.
    let start = |name: &str, seeds: &[SocketAddr]| {
        Proc::start_with(
            name,
            seeds,
            SECRET,
            &["handoff-rate=100kb", "metrics-port=0"],
        )
    };
    let n0 = start("n0", &[]);
    let n1 = start("n1", &[n0.gossip]);
    let n2 = start("n2", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2]);
    const KEYS: u64 = 10_000;
    fill(&n0, KEYS);
    // n1's inter-node address: the bus port of its own line in CLUSTER NODES.
    let bus = n1.bus_port();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let auth = shoal_wire::AuthConfig::new("shoal", SECRET, "n-test");
    let peer = rt.block_on(async {
        shoal_wire::PeerClient::new(
            SocketAddr::from(([127, 0, 0, 1], bus)),
            auth,
            Default::default(),
        )
    });
    // Frames carry the sender's view id; 1 is no view of this cluster.
    let send = |args: &[&str]| {
        let args: Vec<bytes::Bytes> = args
            .iter()
            .map(|a| bytes::Bytes::from(a.to_string()))
            .collect();
        let body = encode_command(shoal_resp::Protocol::Resp2, 0, None, &args, 0, 0);
        let r = rt.block_on(peer.request(1, body)).expect("answered");
        String::from_utf8_lossy(&r.body).into_owned()
    };
    // Serving, n1 runs a command from another view on a key it holds a copy of.
    let held = (0..KEYS)
        .find(|&i| send(&["GET", &key(i)]).contains(&value(i)))
        .expect("n1 holds a copy of some key");
    let k = key(held);
    assert_eq!(n1.http_get("/readyz"), (200, "ready\n".into()));
    n1.signal("TERM");
    // Its state is set before its view is rebuilt without it: wait for both.
    wait_until("n1 leaving", SETTLE, &[&n1], || {
        let info = n1.info();
        info.get("shoal_state").map(String::as_str) == Some("leaving")
            && info.get("shoal_owned_slots").map(String::as_str) == Some("0")
    });
    // A leaving node takes no new traffic from a load balancer, and is still alive.
    assert_eq!(
        n1.http_get("/readyz"),
        (503, "not ready: leaving the cluster\n".into())
    );
    assert_eq!(n1.http_get("/healthz").0, 200);
    let (get, set) = (send(&["GET", &k]), send(&["SET", &k, "late"]));
    for reply in [&get, &set] {
        assert!(
            reply.starts_with("-TRYAGAIN this node is leaving"),
            "{reply:?}"
        );
    }
    assert!(n1.stat("shoal_sent_on_leaving") >= 2);
    // A replicated state from a node that has not heard of the leave (an owner, or a copy a
    // failover ran the write on) may come after n1 streamed the slot away: n1 passes it on
    // to the key's copies in its own view (n0 and n2 hold every slot now) before it answers.
    // Once n0 and n2 have n1's view, they take it at once (a copy whose view is behind
    // refuses it and gets the slot by the hand-off later).
    let view_id = |p: &Proc| p.info().get("shoal_view_id").cloned();
    wait_until(
        "every node has the view of the leave",
        SETTLE,
        &[&n0, &n1, &n2],
        || {
            let v = view_id(&n1);
            v.is_some() && view_id(&n0) == v && view_id(&n2) == v
        },
    );
    let state = shoal_store::KeyState::Live {
        kind: shoal_store::Kind::String,
        value: bytes::Bytes::from_static(b"passed"),
        flags: 0,
        expire_at_ms: 0,
        // A version as the nodes make them: the Unix ms shifted by 12.
        version: (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64)
            << 12,
    };
    let body = shoal_cluster::message::encode_replicate([(&b"passed-on"[..], &state)].into_iter());
    let r = rt.block_on(peer.request(1, body)).expect("answered");
    assert!(!r.body.starts_with(b"-"), "{:?}", r.body);
    for p in [&n0, &n2] {
        let has: u8 = redis::cmd("CLUSTER")
            .arg("HASKEY")
            .arg("passed-on")
            .query(&mut p.con())
            .unwrap();
        assert_eq!(
            has, 1,
            "{} holds the state the leaving node passed on",
            p.name
        );
    }
    assert!(n1.stat("shoal_repl_passed_on") >= 1);
    let mut n1 = n1;
    assert!(n1.wait_exit(SETTLE), "n1 leaves");
    wait_settled(&[&n0, &n2]);
    // The refused write ran nowhere; everything n1 held is still there.
    let v: Option<String> = redis::cmd("GET").arg(&k).query(&mut n0.con()).unwrap();
    assert_eq!(v, Some(value(held)));
    assert_eq!(verify(&n2, KEYS), (0, 0), "read after the leave");
    let v: Option<String> = redis::cmd("GET")
        .arg("passed-on")
        .query(&mut n2.con())
        .unwrap();
    assert_eq!(v.as_deref(), Some("passed"));
}

#[test]
fn scale_out_crash_restart_and_leave_lose_nothing() {
    let _serial = serial();
    const KEYS: u64 = 100_000;
    // A slow hand-off (about 3 s per join), so the loads run while slots are in transit.
    let start = |name: &str, seeds: &[SocketAddr]| {
        Proc::start_with(name, seeds, SECRET, &["handoff-rate=1mb"])
    };
    let mut history: Vec<LoadResult> = Vec::new();
    let n0 = start("n0", &[]);
    let n1 = start("n1", &[n0.gossip]);
    let n2 = start("n2", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2]);
    fill(&n0, KEYS);

    // (a) A 4th node joins under load: no read misses a key written before the join.
    let (sent_before, bytes_before) = hand_off_sent(&[&n0, &n1, &n2]);
    let loads = [Load::start(&n0, KEYS, "a0"), Load::start(&n1, KEYS, "a1")];
    let joined = Instant::now();
    let n3 = start("n3", &[n0.gossip, n1.gossip]);
    let took = wait_settled(&[&n0, &n1, &n2, &n3]);
    let results: Vec<LoadResult> = loads.into_iter().map(Load::finish).collect();
    let (sent, bytes) = hand_off_sent(&[&n0, &n1, &n2]);
    let (sent, bytes) = (sent - sent_before, bytes - bytes_before);
    println!(
        "(a) join settled {:.1} s after the start; hand-off {sent} keys, {bytes} bytes \
         ({:.0} keys/s, {:.2} MB/s over the settle time); fetched on miss by n3: {}",
        joined.elapsed().as_secs_f64(),
        sent as f64 / took.as_secs_f64(),
        bytes as f64 / took.as_secs_f64() / 1e6,
        n3.stat("shoal_fetched_keys")
    );
    for (i, r) in results.iter().enumerate() {
        check_load(&format!("(a) load {i}"), r);
    }
    assert!(sent > 0, "the newcomer received no keys");
    assert!(
        n3.stat("shoal_fetched_keys") > 0,
        "no key was fetched while in transit: the test did not test the fetch"
    );
    assert_eq!(verify(&n3, KEYS), (0, 0), "(a) read through the newcomer");
    check_written(&n3, &results.iter().collect::<Vec<_>>());
    history.extend(results);
    check_counters(&n3, &history.iter().collect::<Vec<_>>());
    assert_two_copies(&[&n0, &n1, &n2, &n3], "after the join");

    // (b) SIGKILL one of 4 under load: nothing lost (requests to the killed node fail over
    // to the next copy). Errors only where a node could not know an outcome: an INCR in
    // flight to the killed node may have run there ("may have run"), and a read whose
    // key's copies did not answer its fetch answers TRYAGAIN.
    let loads = [Load::start(&n0, KEYS, "b0"), Load::start(&n3, KEYS, "b3")];
    let mut n2 = n2;
    n2.signal("KILL");
    let _ = n2.wait_exit(Duration::from_secs(10));
    let took = wait_settled(&[&n0, &n1, &n3]);
    let results: Vec<LoadResult> = loads.into_iter().map(Load::finish).collect();
    println!(
        "(b) SIGKILL: the 3 survivors settled {:.1} s later",
        took.as_secs_f64()
    );
    if results.iter().any(|r| r.wrong > 0 || r.misses > 0) {
        dump(&[&n0, &n1, &n3]);
    }
    for (i, r) in results.iter().enumerate() {
        // The pipelines in flight to the node as it dies read their pair's second write too
        // (they fail over in the order they were sent: `router::FailoverOrder`).
        check_load_in_doubt(&format!("(b) load {i}"), r, KILL_DOUBT);
    }
    assert_eq!(verify(&n1, KEYS), (0, 0), "(b) read after the crash");
    check_written(&n1, &results.iter().collect::<Vec<_>>());
    history.extend(results);
    check_counters(&n1, &history.iter().collect::<Vec<_>>());
    assert_two_copies(&[&n0, &n1, &n3], "re-replicated after the crash");
    // CLUSTER NODES shows the dead member as down (`fail`, no slots), the others with slots.
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut n0.con())
        .expect("CLUSTER NODES");
    assert_eq!(nodes.lines().count(), 4, "{nodes}");
    let dead = nodes
        .lines()
        .find(|l| l.contains(&n2.resp.to_string()))
        .unwrap_or_else(|| panic!("the killed node is listed: {nodes}"));
    let fields: Vec<&str> = dead.split(' ').collect();
    assert_eq!(fields[2], "master,fail", "{dead}");
    assert_eq!(fields.len(), 8, "a down member owns no slots: {dead}");
    for p in [&n0, &n1, &n3] {
        let line = nodes
            .lines()
            .find(|l| l.contains(&p.resp.to_string()))
            .unwrap_or_else(|| panic!("{} is listed: {nodes}", p.name));
        assert!(
            line.split(' ').count() > 8,
            "a serving member owns slots: {line}"
        );
        assert!(!line.contains("fail"), "{line}");
    }
    let info: String = redis::cmd("CLUSTER")
        .arg("INFO")
        .query(&mut n1.con())
        .expect("CLUSTER INFO");
    assert!(info.contains("shoal_state:serving"), "{info}");
    assert!(info.contains("shoal_settled:1"), "{info}");
    assert!(info.contains("cluster_state:ok"), "{info}");

    // The killed node restarts empty under the same name, is refilled, and reads through
    // it miss nothing.
    let loads = [Load::start(&n0, KEYS, "r0")];
    let n2 = start("n2", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2, &n3]);
    let results: Vec<LoadResult> = loads.into_iter().map(Load::finish).collect();
    check_load("restart load", &results[0]);
    assert_eq!(verify(&n2, KEYS), (0, 0), "read through the restarted node");
    history.extend(results);
    check_counters(&n2, &history.iter().collect::<Vec<_>>());
    assert_two_copies(&[&n0, &n1, &n2, &n3], "after the restart");

    // (c) SIGTERM one of 4 under load: it hands off and leaves; nothing lost, no error.
    let loads = [Load::start(&n0, KEYS, "c0"), Load::start(&n3, KEYS, "c3")];
    let mut n1 = n1;
    n1.signal("TERM");
    assert!(
        n1.wait_exit(Duration::from_secs(90)),
        "a leaving node exits cleanly"
    );
    assert!(n1.logged("hand-off complete: leaving"), "{:?}", n1.tail());
    wait_settled(&[&n0, &n2, &n3]);
    let results: Vec<LoadResult> = loads.into_iter().map(Load::finish).collect();
    for (i, r) in results.iter().enumerate() {
        check_load(&format!("(c) load {i}"), r);
    }
    assert_eq!(verify(&n2, KEYS), (0, 0), "(c) read after the leave");
    check_written(&n2, &results.iter().collect::<Vec<_>>());
    history.extend(results);
    check_counters(&n0, &history.iter().collect::<Vec<_>>());
    assert_two_copies(&[&n0, &n2, &n3], "after the leave");

    // (f) Two nodes join at the same moment under load.
    let loads = [Load::start(&n0, KEYS, "f0"), Load::start(&n2, KEYS, "f2")];
    let n4 = start("n4", &[n0.gossip]);
    let n5 = start("n5", &[n2.gossip]);
    wait_settled(&[&n0, &n2, &n3, &n4, &n5]);
    let results: Vec<LoadResult> = loads.into_iter().map(Load::finish).collect();
    if results.iter().any(|r| r.misses > 0) {
        for p in [&n0, &n2, &n3, &n4, &n5] {
            let i = p.info();
            let keys = [
                "shoal_view_id",
                "shoal_epoch",
                "shoal_handoff_keys_sent",
                "shoal_handoff_keys_received",
                "shoal_fetches_on_miss",
                "shoal_fetched_keys",
                "shoal_forgotten_keys",
                "shoal_other_view_requests",
                "shoal_expired_requests",
            ];
            let stats: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}={}", i.get(*k).cloned().unwrap_or_default()))
                .collect();
            eprintln!("{}: {}\n{:#?}", p.name, stats.join(" "), p.tail());
        }
    }
    for (i, r) in results.iter().enumerate() {
        check_load(&format!("(f) load {i}"), r);
    }
    assert_eq!(verify(&n5, KEYS), (0, 0), "(f) read after two joins");
    check_written(&n4, &results.iter().collect::<Vec<_>>());
    history.extend(results);
    check_counters(&n5, &history.iter().collect::<Vec<_>>());
    assert_two_copies(&[&n0, &n2, &n3, &n4, &n5], "after two joins");

    // (g) One node freezes (SIGSTOP) long enough to be declared down, then thaws and
    // rejoins as a new incarnation; writes made meanwhile must win over its stale copies.
    let loads = [Load::start(&n0, KEYS, "g0"), Load::start(&n4, KEYS, "g4")];
    n3.signal("STOP");
    wait_until("n3 declared down", SETTLE, &[&n0], || {
        n0.info().get("shoal_members").map(String::as_str) == Some("4")
    });
    n3.signal("CONT");
    wait_settled(&[&n0, &n2, &n3, &n4, &n5]);
    let results: Vec<LoadResult> = loads.into_iter().map(Load::finish).collect();
    for (i, r) in results.iter().enumerate() {
        // Writes to the frozen node's keys answer TRYAGAIN (or, sent before it froze, "may
        // have run"), and those of keys it is a replica of NOREPLICAS, until it is declared
        // down: a second writer, or a stale copy read later, could lose writes.
        check_load_in_doubt(&format!("(g) load {i}"), r, FREEZE_DOUBT);
    }
    assert_eq!(
        verify(&n3, KEYS),
        (0, 0),
        "(g) read through the thawed node"
    );
    check_written(&n3, &results.iter().collect::<Vec<_>>());
    history.extend(results);
    check_counters(&n3, &history.iter().collect::<Vec<_>>());
    assert_two_copies(&[&n0, &n2, &n3, &n4, &n5], "after the last step");
}

#[test]
fn rolling_restart_loses_nothing() {
    let _serial = serial();
    const KEYS: u64 = 20_000;
    let mut procs = vec![Proc::start("r0", &[])];
    procs.push(Proc::start("r1", &[procs[0].gossip]));
    procs.push(Proc::start("r2", &[procs[0].gossip]));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    fill(&procs[0], KEYS);
    let mut written = Vec::new();
    for i in 0..3 {
        let other = (i + 1) % 3;
        let load = Load::start(&procs[other], KEYS, &format!("d{i}"));
        procs[i].signal("TERM");
        assert!(procs[i].wait_exit(Duration::from_secs(90)), "clean exit");
        let seeds: Vec<SocketAddr> = (0..3)
            .filter(|&j| j != i)
            .map(|j| procs[j].gossip)
            .collect();
        procs[i] = Proc::start(&format!("r{i}"), &seeds);
        wait_settled(&procs.iter().collect::<Vec<_>>());
        let r = load.finish();
        if r.misses > 0 || r.wrong > 0 {
            dump(&procs.iter().collect::<Vec<_>>());
        }
        check_load(&format!("(d) restart of r{i}"), &r);
        written.push(r);
        assert_eq!(verify(&procs[i], KEYS), (0, 0), "after restarting r{i}");
    }
    check_written(&procs[0], &written.iter().collect::<Vec<_>>());
    check_counters(&procs[1], &written.iter().collect::<Vec<_>>());
    assert_two_copies(
        &procs.iter().collect::<Vec<_>>(),
        "after the rolling restart",
    );
}

/// A node that joins (or comes back) has no function libraries of its own: it copies
/// those of another member (`function.copy` there, `function.adopt` here), so an FCALL
/// forwarded to it for the keys it now owns finds its function; a library loaded later
/// reaches every member, the joiner included; two nodes that crash and come back together
/// both copy from the one that kept the libraries.
#[test]
fn a_joining_node_copies_the_function_libraries() {
    let _serial = serial();
    let mut procs = vec![Proc::start("f0", &[])];
    procs.push(Proc::start("f1", &[procs[0].gossip]));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    let lib = "#!lua name=counters\nredis.register_function('bump', function(keys, args) \
               return redis.call('INCRBY', keys[1], args[1]) end)";
    let loaded: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .query(&mut procs[0].con())
        .expect("FUNCTION LOAD");
    assert_eq!(loaded, "counters");
    procs.push(Proc::start("f2", &[procs[0].gossip]));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    let libraries = |p: &Proc| -> usize {
        let list: Vec<redis::Value> = redis::cmd("FUNCTION")
            .arg("LIST")
            .query(&mut p.con())
            .expect("FUNCTION LIST");
        list.len()
    };
    wait_until(
        "the joiner copied the library",
        SETTLE,
        &[&procs[2]],
        || libraries(&procs[2]) == 1,
    );
    // Through every node, on keys of every owner (the joiner owns about a third).
    for (i, p) in procs.iter().enumerate() {
        let mut con = p.con();
        for k in 0..30 {
            let n: i64 = redis::cmd("FCALL")
                .arg("bump")
                .arg(1)
                .arg(format!("fn:{k}"))
                .arg(i + 1)
                .query(&mut con)
                .unwrap_or_else(|e| panic!("FCALL through {} on fn:{k}: {e}", p.name));
            assert_eq!(
                n,
                (1..=i as i64 + 1).sum::<i64>(),
                "fn:{k} through {}",
                p.name
            );
        }
    }
    // A library loaded through the joiner reaches the others.
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=more\nredis.register_function('two', function() return 2 end)")
        .query(&mut procs[2].con())
        .expect("FUNCTION LOAD through the joiner");
    for p in &procs {
        let two: i64 = redis::cmd("FCALL")
            .arg("two")
            .arg(0)
            .query(&mut p.con())
            .unwrap();
        assert_eq!(two, 2, "through {}", p.name);
        assert_eq!(libraries(p), 2, "{}'s libraries", p.name);
    }
    // Two nodes crash and come back together: each copies from the one that kept the
    // libraries, not from the other (which has none to give while it copies).
    for i in [1, 2] {
        procs[i].signal("KILL");
        // Killed: not a success, but gone.
        let _ = procs[i].wait_exit(Duration::from_secs(30));
    }
    let seed = procs[0].gossip;
    procs[1] = Proc::start("f1", &[seed]);
    procs[2] = Proc::start("f2", &[seed]);
    wait_settled(&procs.iter().collect::<Vec<_>>());
    for p in &procs[1..] {
        wait_until(
            "a restarted node copied the libraries",
            SETTLE,
            &[p],
            || libraries(p) == 2,
        );
    }
    for p in &procs {
        for k in 0..30 {
            let n: i64 = redis::cmd("FCALL")
                .arg("bump")
                .arg(1)
                .arg(format!("after:{k}"))
                .arg(2)
                .query(&mut p.con())
                .unwrap_or_else(|e| panic!("FCALL through {} after the restarts: {e}", p.name));
            assert_eq!(n % 2, 0);
        }
    }
}

/// A tracking client is told to drop everything (a null invalidation) when a node joins:
/// its keys' new owners do not know what it read. What it reads after the join is told
/// again when it changes, through whichever node writes it.
#[test]
fn a_tracking_client_is_flushed_when_a_node_joins() {
    let _serial = serial();
    let mut procs = vec![Proc::start("c0", &[])];
    procs.push(Proc::start("c1", &[procs[0].gossip]));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    let mut a = std::net::TcpStream::connect(procs[0].resp).expect("connect");
    a.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut got = Vec::new();
    // Reads what comes until `want` is in it (what came before stays in `got`).
    let mut read_until = |a: &mut std::net::TcpStream, want: &str, procs: &[&Proc]| {
        let mut buf = [0u8; 4096];
        wait_until(want, SETTLE, procs, || {
            if let Ok(n) = std::io::Read::read(a, &mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
            String::from_utf8_lossy(&got).contains(want)
        });
        let text = String::from_utf8_lossy(&got).into_owned();
        got.clear();
        text
    };
    std::io::Write::write_all(&mut a, b"HELLO 3\r\nCLIENT TRACKING ON\r\nPING\r\n").unwrap();
    read_until(&mut a, "+PONG\r\n", &[&procs[0]]);
    let keys: Vec<String> = (0..20).map(|i| format!("tracked:{i}")).collect();
    let gets: String = keys.iter().map(|k| format!("GET {k}\r\n")).collect();
    std::io::Write::write_all(&mut a, format!("{gets}PING\r\n").as_bytes()).unwrap();
    let replies = read_until(&mut a, "+PONG\r\n", &[&procs[0]]);
    assert!(!replies.contains("invalidate"), "{replies:?}");
    procs.push(Proc::start("c2", &[procs[0].gossip]));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    let all: Vec<&Proc> = procs.iter().collect();
    read_until(&mut a, ">2\r\n$10\r\ninvalidate\r\n_\r\n", &all);
    // Read again under the new view, then written through the joiner: told per key.
    std::io::Write::write_all(&mut a, format!("{gets}PING\r\n").as_bytes()).unwrap();
    read_until(&mut a, "+PONG\r\n", &all);
    let mut via_joiner = procs[2].con();
    for k in &keys {
        let _: () = redis::cmd("SET")
            .arg(k)
            .arg("v")
            .query(&mut via_joiner)
            .unwrap();
    }
    let mut told = String::new();
    let mut buf = [0u8; 4096];
    // (A null tells it too: one more view change after the settling would send one.)
    wait_until("every key's invalidation", SETTLE, &all, || {
        if let Ok(n) = std::io::Read::read(&mut a, &mut buf) {
            told.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        told.contains("invalidate\r\n_\r\n")
            || keys
                .iter()
                .all(|k| told.contains(&format!("${}\r\n{k}\r\n", k.len())))
    });
}

/// A script busy on the owner of its keys (which need not be the node its client asked) is
/// stopped by SCRIPT KILL sent to any node: the kill goes to every member, and answers OK
/// when one of them stopped its script, NOTBUSY when none runs one.
#[test]
fn script_kill_through_any_node_stops_a_busy_script() {
    let _serial = serial();
    let extra = ["threads=4", "busy-reply-threshold=50"];
    let mut procs = vec![Proc::start_with("k0", &[], SECRET, &extra)];
    procs.push(Proc::start_with("k1", &[procs[0].gossip], SECRET, &extra));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    // A short read timeout: a connection that lands on the worker running the script waits
    // for it (Shoal's workers each serve their own connections), so another is tried.
    let quick = |p: &Proc| -> Option<redis::Connection> {
        let client = redis::Client::open(format!("redis://{}/", p.resp)).ok()?;
        let con = client
            .get_connection_with_timeout(Duration::from_secs(1))
            .ok()?;
        con.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
        Some(con)
    };
    // Killed through the node that does not run it, then through the one that does.
    for through_owner in [false, true] {
        let mut con = procs[0].con();
        let run = thread::spawn(move || {
            redis::cmd("EVAL")
                .arg("redis.call('GET', KEYS[1]) while true do end")
                .arg(1)
                .arg("busy")
                .query::<String>(&mut con)
                .map_err(|e| e.to_string())
        });
        let busy = |p: &Proc| {
            let Some(mut con) = quick(p) else {
                return false;
            };
            let r: redis::RedisResult<String> = redis::cmd("PING").query(&mut con);
            matches!(r, Err(e) if e.code() == Some("BUSY"))
        };
        let mut owner = 0;
        wait_until(
            "the owner is busy",
            SETTLE,
            &[&procs[0], &procs[1]],
            || match procs.iter().position(busy) {
                Some(i) => {
                    owner = i;
                    true
                }
                None => false,
            },
        );
        let asked = &procs[if through_owner { owner } else { 1 - owner }];
        let mut killed = None;
        wait_until("SCRIPT KILL answered", SETTLE, &[asked], || {
            match quick(asked)
                .map(|mut con| redis::cmd("SCRIPT").arg("KILL").query::<String>(&mut con))
            {
                None => false,
                Some(Ok(ok)) => {
                    killed = Some(ok);
                    true
                }
                // A connection on a worker, or a link to the owner, held by the script:
                // another connection is tried.
                Some(Err(e)) => {
                    let held = e.is_timeout() || e.to_string().contains("did not answer");
                    assert!(held, "SCRIPT KILL through {}: {e}", asked.name);
                    false
                }
            }
        });
        assert_eq!(killed.as_deref(), Some("OK"));
        let e = run.join().unwrap().unwrap_err();
        assert!(e.contains("Script killed by user"), "{e}");
    }
    let r: redis::RedisResult<String> = redis::cmd("SCRIPT").arg("KILL").query(&mut procs[0].con());
    assert_eq!(r.unwrap_err().code(), Some("NOTBUSY"));
}

/// ACL users made at run time reach a node that joins or comes back (`acl.copy` there,
/// `acl.adopt` here), so their clients log in through it; a user of a node's own
/// configuration stays as configured; an ACL SETUSER through one node leaves every node
/// with the same user, also a node that had it otherwise.
#[test]
fn a_joining_node_copies_the_acl_users() {
    let _serial = serial();
    let mut procs = vec![Proc::start("u0", &[])];
    procs.push(Proc::start("u1", &[procs[0].gossip]));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    let acl = |p: &Proc, args: &[&str]| -> redis::RedisResult<redis::Value> {
        redis::cmd("ACL").arg(args).query(&mut p.con())
    };
    let logs_in = |p: &Proc, user: &str, pass: &str| -> bool {
        let url = format!("redis://{user}:{pass}@{}/", p.resp);
        redis::Client::open(url)
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok()
    };
    let line = |p: &Proc, user: &str| -> Option<String> {
        let list: Vec<String> = redis::cmd("ACL")
            .arg("LIST")
            .query(&mut p.con())
            .expect("ACL LIST");
        list.into_iter()
            .find(|l| l.starts_with(&format!("user {user} ")))
    };
    acl(
        &procs[0],
        &["SETUSER", "alice", "on", ">pw", "~app:*", "+@all"],
    )
    .unwrap();
    // A joiner configured with a user of its own name "carol", unknown to the others.
    procs.push(Proc::start_with(
        "u2",
        &[procs[0].gossip],
        SECRET,
        &["user=carol on >mine ~* +@all"],
    ));
    wait_settled(&procs.iter().collect::<Vec<_>>());
    wait_until("the joiner copied the users", SETTLE, &[&procs[2]], || {
        line(&procs[2], "alice").is_some()
    });
    assert!(
        logs_in(&procs[2], "alice", "pw"),
        "alice through the joiner"
    );
    assert!(logs_in(&procs[2], "carol", "mine"));
    assert!(
        !logs_in(&procs[0], "carol", "mine"),
        "carol is the joiner's own"
    );
    // Rules given through one node reach every node: a node that has the user applies
    // them as given (alice, everywhere); one that lacks it takes the user whole as the
    // node asked has it (carol, configured on u2 only: u0 made her from the rules, off, and
    // u1 took that; u2 added the password to its own).
    acl(
        &procs[2],
        &["SETUSER", "alice", ">pw2", "-flushall", "(~x* +get)"],
    )
    .unwrap();
    acl(&procs[0], &["SETUSER", "carol", ">theirs"]).unwrap();
    let lines: Vec<Option<String>> = procs.iter().map(|p| line(p, "alice")).collect();
    assert!(lines[0].is_some(), "{lines:?}");
    assert!(lines.iter().all(|l| *l == lines[0]), "alice: {lines:?}");
    assert_eq!(line(&procs[0], "carol"), line(&procs[1], "carol"));
    assert_ne!(line(&procs[0], "carol"), line(&procs[2], "carol"));
    for p in &procs {
        assert!(
            logs_in(p, "alice", "pw2") && logs_in(p, "alice", "pw"),
            "{}",
            p.name
        );
    }
    assert!(!logs_in(&procs[0], "carol", "theirs") && !logs_in(&procs[1], "carol", "theirs"));
    assert!(logs_in(&procs[2], "carol", "theirs") && logs_in(&procs[2], "carol", "mine"));
    // A node that crashes misses users made and deleted meanwhile, and copies them when
    // it comes back: a deleted one does not come back with it.
    procs[1].signal("KILL");
    let _ = procs[1].wait_exit(Duration::from_secs(30));
    acl(&procs[0], &["SETUSER", "bob", "on", ">b", "+ping"]).unwrap();
    // Quotes in a name and in patterns, a selector's too: copied exactly.
    let erin = ["SETUSER", "e'rin", "on", ">e", "~it's*", "(\"~q'*\" +get)"];
    acl(&procs[0], &erin).unwrap();
    acl(&procs[2], &["DELUSER", "alice"]).unwrap();
    procs[1] = Proc::start("u1", &[procs[0].gossip]);
    wait_settled(&procs.iter().collect::<Vec<_>>());
    wait_until(
        "the restarted node copied the users",
        SETTLE,
        &[&procs[1]],
        || line(&procs[1], "bob").is_some(),
    );
    assert!(logs_in(&procs[1], "bob", "b"));
    let erin = line(&procs[0], "e'rin");
    assert!(
        erin.as_deref()
            .is_some_and(|l| l.contains("~it's*") && l.contains("(~q'*")),
        "{erin:?}"
    );
    assert_eq!(line(&procs[1], "e'rin"), erin);
    for p in &procs {
        assert!(
            !logs_in(p, "alice", "pw2"),
            "alice deleted, through {}",
            p.name
        );
        assert_eq!(line(p, "bob"), line(&procs[0], "bob"), "{}", p.name);
    }
}

/// A leave that cannot finish (a hand-off paced to 64 kB/s) ends at `leave-timeout-ms`, or
/// at once on a second SIGTERM; either way the other nodes keep every key (the first node
/// holds a copy of each).
#[test]
fn a_deadline_or_a_second_sigterm_cuts_a_leave_short() {
    let _serial = serial();
    const KEYS: u64 = 20_000;
    let slow = |name: &str, seeds: &[SocketAddr], timeout: &str| {
        Proc::start_with(
            name,
            seeds,
            SECRET,
            &["handoff-rate=64kb", &format!("leave-timeout-ms={timeout}")],
        )
    };
    let a = Proc::start("s0", &[]);
    let mut b = slow("s1", &[a.gossip], "1000");
    wait_settled(&[&a, &b]);
    fill(&a, KEYS);
    // With a third node, b's leave has slots to stream to it, slowly.
    let c = slow("s2", &[a.gossip], "60000");
    wait_settled(&[&a, &b, &c]);
    let started = Instant::now();
    b.signal("TERM");
    assert!(b.wait_exit(Duration::from_secs(30)));
    let log = b.log.lock().unwrap().join("\n");
    assert!(
        log.contains("leave deadline passed"),
        "the deadline ended the leave after {:?}: {log}",
        started.elapsed()
    );
    wait_settled(&[&a, &c]);
    assert_eq!(
        verify(&a, KEYS),
        (0, 0),
        "after a leave cut short by its deadline"
    );

    let mut c = c;
    let d = slow("s3", &[a.gossip], "60000");
    wait_settled(&[&a, &c, &d]);
    c.signal("TERM");
    wait_until("c starts leaving", SETTLE, &[&c], || {
        c.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("leaving the cluster"))
    });
    c.signal("TERM");
    assert!(c.wait_exit(Duration::from_secs(15)));
    let log = c.log.lock().unwrap().join("\n");
    assert!(log.contains("second signal"), "{log}");
    wait_settled(&[&a, &d]);
    assert_eq!(
        verify(&a, KEYS),
        (0, 0),
        "after a leave cut short by a second SIGTERM"
    );
}

/// With `tls-cluster`, a node joins and is handed its keys over TLS links (the gossip
/// datagrams stay authenticated UDP), and every key reads back through it.
#[test]
fn a_gossip_cluster_over_tls_hands_keys_off() {
    let _serial = serial();
    let certs = shoal_tests::TestCerts::make("gossip");
    let settings = [
        format!("tls-cert-file={}", certs.path("node.crt")),
        format!("tls-key-file={}", certs.path("node.key")),
        format!("tls-ca-cert-file={}", certs.path("ca.crt")),
        "tls-cluster=yes".to_string(),
    ];
    let extra: Vec<&str> = settings.iter().map(String::as_str).collect();
    let n0 = Proc::start_with("t0", &[], SECRET, &extra);
    const KEYS: u64 = 5_000;
    fill(&n0, KEYS);
    let n1 = Proc::start_with("t1", &[n0.gossip], SECRET, &extra);
    wait_settled(&[&n0, &n1]);
    assert!(hand_off_sent(&[&n0]).0 > 0, "nothing was handed off");
    // n1 holds copies it received, and reads every key (its own or forwarded).
    let held: u64 = redis::cmd("CLUSTER")
        .arg("LOCALKEYS")
        .query(&mut n1.con())
        .expect("LOCALKEYS");
    assert!(held > 0);
    assert_eq!(verify(&n1, KEYS), (0, 0));
    assert!(n1.stat("shoal_forwarded") > 0);
    // The links are TLS: a peer that knows the secret but speaks plain TCP is refused.
    let bus = n0.bus_port();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let plain = shoal_wire::AuthConfig::new("shoal", SECRET, "plain");
    let probe = rt.block_on(shoal_wire::probe(
        SocketAddr::from(([127, 0, 0, 1], bus)),
        &plain,
        Duration::from_secs(5),
    ));
    assert!(probe.is_err(), "a plain peer was accepted: {probe:?}");
}

/// A command on a key the joiner owns but has not received yet fetches it from the key's
/// other copies first; when none answers (here both are frozen), a read answers TRYAGAIN,
/// never nil for a key that exists (issue #15; before, it ran on the absent key). Once the
/// others thaw, every key reads back.
#[test]
fn a_read_whose_fetch_gets_no_answer_is_not_nil() {
    use std::io::{Read, Write};
    let _serial = serial();
    // A slow hand-off keeps the joiner receiving while the others freeze.
    let slow = ["handoff-rate=64kb"];
    let n0 = Proc::start_with("f0", &[], SECRET, &slow);
    let n1 = Proc::start_with("f1", &[n0.gossip], SECRET, &slow);
    wait_settled(&[&n0, &n1]);
    const KEYS: u64 = 10_000;
    fill(&n0, KEYS);
    // f2 gives up on a frozen node soon (fetches after 100 ms, forwards after 200 ms), so the
    // reads below end well before the frozen nodes are declared down (about 5 s).
    let n2 = Proc::start_with(
        "f2",
        &[n0.gossip],
        SECRET,
        &["handoff-rate=64kb", "cluster-timeout-ms=200"],
    );
    wait_until("f2 receives its slots", SETTLE, &[&n2], || {
        let i = n2.info();
        i.get("shoal_members").map(String::as_str) == Some("3")
            && i.get("shoal_settled").map(String::as_str) == Some("0")
            && i.get("shoal_handoff_keys_received")
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|n| n > 0)
    });
    n0.signal("STOP");
    n1.signal("STOP");
    // GETs in one pipeline, read raw: each reply is a value, or an error (TRYAGAIN for the
    // joiner's own keys, a timeout for keys it forwards), never nil. Then blind SETs of new
    // keys, which need no other copy's answer: those f2 owns run there (answered
    // NOREPLICAS, as their replica is frozen); the others answer TRYAGAIN (their owner does
    // not answer and may be alive).
    const READS: u64 = 400;
    const WRITES: u64 = 100;
    let mut s = std::net::TcpStream::connect(n2.resp).expect("connect f2");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = Vec::new();
    for i in 0..READS {
        let k = key(i);
        req.extend_from_slice(format!("*2\r\n$3\r\nGET\r\n${}\r\n{k}\r\n", k.len()).as_bytes());
    }
    let blind = |i: u64| format!("blind:{i}");
    for i in 0..WRITES {
        let k = blind(i);
        req.extend_from_slice(
            format!("*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n$1\r\nv\r\n", k.len()).as_bytes(),
        );
    }
    let mut written = Vec::new();
    s.write_all(&req).expect("send the pipeline");
    let (mut nils, mut values, mut tryagain, mut replies) = (0u64, 0u64, 0u64, 0u64);
    let mut buf = Vec::new();
    let mut pos = 0;
    let deadline = Instant::now() + SETTLE;
    while replies < READS + WRITES {
        assert!(Instant::now() < deadline, "only {replies} replies");
        // One reply: a line, plus a bulk's payload.
        let Some(end) = buf[pos..].windows(2).position(|w| w == b"\r\n") else {
            let mut chunk = [0u8; 65536];
            let n = s.read(&mut chunk).expect("read replies");
            assert!(n > 0, "f2 closed the connection");
            buf.extend_from_slice(&chunk[..n]);
            continue;
        };
        let line = &buf[pos..pos + end];
        let total = if line == b"$-1" {
            nils += 1;
            end + 2
        } else if line == b"+OK" {
            assert!(replies >= READS, "+OK to a GET");
            written.push(blind(replies - READS));
            end + 2
        } else if line.starts_with(b"-") {
            if line.starts_with(b"-TRYAGAIN") {
                tryagain += 1;
            }
            // A write whose replica (frozen) did not confirm it ran here all the same.
            if line.starts_with(b"-NOREPLICAS") {
                assert!(replies >= READS, "NOREPLICAS to a GET");
                written.push(blind(replies - READS));
            }
            end + 2
        } else if line.starts_with(b"$") {
            let len: usize = std::str::from_utf8(&line[1..]).unwrap().parse().unwrap();
            if buf.len() < pos + end + 2 + len + 2 {
                let mut chunk = [0u8; 65536];
                let n = s.read(&mut chunk).expect("read replies");
                assert!(n > 0, "f2 closed the connection");
                buf.extend_from_slice(&chunk[..n]);
                continue;
            }
            values += 1;
            end + 2 + len + 2
        } else {
            panic!("unexpected reply {:?}", String::from_utf8_lossy(line));
        };
        pos += total;
        replies += 1;
    }
    // The reads ended before failure detection (seconds) made f2 the only member: after
    // that f2 would hold the only copy, and nil would be its honest answer.
    assert_eq!(
        n2.stat("shoal_members"),
        3,
        "the frozen nodes were declared down too soon"
    );
    n0.signal("CONT");
    n1.signal("CONT");
    assert_eq!(
        nils, 0,
        "nil for keys that exist ({values} values, {tryagain} TRYAGAIN)"
    );
    assert!(tryagain > 0, "no fetch went unanswered ({values} values)");
    assert!(n2.stat("shoal_fetches_unanswered") > 0);
    assert!(!written.is_empty(), "no blind write ran");
    wait_settled(&[&n0, &n1, &n2]);
    for k in &written {
        let v: Option<String> = redis::cmd("GET").arg(k).query(&mut n0.con()).unwrap();
        assert_eq!(v.as_deref(), Some("v"), "{k}, acknowledged, is lost");
    }
    assert_eq!(verify(&n2, KEYS), (0, 0), "read after the thaw");
}

/// A node paused (SIGSTOP) until the others declared it down wakes with its old view: it
/// counts itself the owner of its keys and reaches everyone. What it finds on waking (here
/// a pipeline of GETs sent while it was stopped) must not be served from its copies, which
/// writes through the others have overtaken meanwhile: its pulse thread saw the pause, so
/// it answers CLUSTERDOWN until a majority confirms its view (after it rejoined, its keys
/// are fetched from their copies first). Every reply is the new value or an error, never
/// the old one, and the node serves the new values once it has rejoined.
#[test]
fn a_node_paused_past_failure_detection_serves_no_stale_value() {
    use std::io::{Read, Write};
    let _serial = serial();
    let n0 = Proc::start("p0", &[]);
    let n1 = Proc::start("p1", &[n0.gossip]);
    let n2 = Proc::start("p2", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2]);
    const KEYS: u64 = 300;
    let k = |i: u64| format!("paused:{i}");
    let mut pipe = redis::pipe();
    for i in 0..KEYS {
        pipe.cmd("SET").arg(k(i)).arg("old").ignore();
    }
    let () = pipe.query(&mut n0.con()).expect("write the old values");
    let mut s = std::net::TcpStream::connect(n2.resp).expect("connect p2");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let gets: Vec<u8> = (0..KEYS)
        .flat_map(|i| {
            let key = k(i);
            format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).into_bytes()
        })
        .collect();
    // Reads the replies to one pipeline of GETs: (new values, errors); an old value fails.
    let read_replies = |s: &mut std::net::TcpStream, round: &str| {
        let (mut fresh, mut errors, mut replies) = (0u64, 0u64, 0u64);
        let mut buf: Vec<u8> = Vec::new();
        let mut pos = 0;
        while replies < KEYS {
            let line_end = buf[pos..].windows(2).position(|w| w == b"\r\n");
            let whole = line_end.and_then(|end| {
                let line = &buf[pos..pos + end];
                if let Some(len) = line.strip_prefix(b"$").filter(|l| l != b"-1") {
                    let len: usize = std::str::from_utf8(len).unwrap().parse().unwrap();
                    (buf.len() >= pos + end + 2 + len + 2).then_some((end, end + 4 + len))
                } else {
                    Some((end, end + 2))
                }
            });
            let Some((end, total)) = whole else {
                let mut chunk = [0u8; 65536];
                let n = s.read(&mut chunk).expect("read replies");
                assert!(n > 0, "p2 closed the connection");
                buf.extend_from_slice(&chunk[..n]);
                continue;
            };
            let line = &buf[pos..pos + end];
            match line {
                b"$3" => {
                    let v = String::from_utf8_lossy(&buf[pos + end + 2..pos + end + 5]);
                    assert_ne!(
                        v, "old",
                        "{round}: p2 served a value overwritten while it was paused"
                    );
                    assert_eq!(v, "new", "{round}");
                    fresh += 1;
                }
                b"$-1" => panic!("{round}: nil for a key that exists"),
                l if l.starts_with(b"-") => errors += 1,
                l => panic!("{round}: unexpected reply {:?}", String::from_utf8_lossy(l)),
            }
            pos += total;
            replies += 1;
        }
        (fresh, errors)
    };
    n2.signal("STOP");
    wait_until("p2 declared down", SETTLE, &[&n0, &n1], || {
        [&n0, &n1]
            .iter()
            .all(|p| p.info().get("shoal_members").map(String::as_str) == Some("2"))
    });
    let mut pipe = redis::pipe();
    for i in 0..KEYS {
        pipe.cmd("SET").arg(k(i)).arg("new").ignore();
    }
    let () = pipe.query(&mut n0.con()).expect("write the new values");
    // Waiting in p2's socket when it wakes.
    s.write_all(&gets).expect("send the GETs");
    n2.signal("CONT");
    let (fresh, errors) = read_replies(&mut s, "on waking");
    println!("on waking: {fresh} new values, {errors} errors");
    // Round after round without a pause between them, so that a round falls into the
    // moment the fence lifts under the rejoin (a round read by the view from before the
    // pause served old values there, once in CI).
    let deadline = Instant::now() + SETTLE;
    loop {
        s.write_all(&gets).expect("send the GETs");
        let (fresh, _) = read_replies(&mut s, "after waking");
        if fresh == KEYS {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "p2 serves every key within {SETTLE:?}"
        );
    }
    assert!(n2.stat("shoal_pauses") >= 1, "p2 saw no pause");
    wait_settled(&[&n0, &n1, &n2]);
    assert_eq!(n2.stat("shoal_paused_unconfirmed"), 0);
}

/// Losing half of a cluster at once leaves the survivors cut off (CLUSTERDOWN on keys) until
/// the lost members come back, or until an operator forgets them: CLUSTER FORGET on every
/// survivor, for members declared down or suspected only. (Cut off, the survivors declare
/// nobody down for 60 s, `MAX_HOLD`: the lost ones stay suspected.)
#[test]
fn forgetting_the_lost_half_lets_the_survivors_serve() {
    let _serial = serial();
    let n0 = Proc::start("h0", &[]);
    let n1 = Proc::start("h1", &[n0.gossip]);
    let n2 = Proc::start("h2", &[n0.gossip]);
    let n3 = Proc::start("h3", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2, &n3]);
    let id = |p: &Proc| -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut p.con())
            .unwrap()
    };
    let forget = |on: &Proc, id: &str| -> Result<String, String> {
        redis::cmd("CLUSTER")
            .arg("FORGET")
            .arg(id)
            .query::<String>(&mut on.con())
            .map_err(|e| e.to_string())
    };
    let lost = [id(&n2), id(&n3)];
    let refused = forget(&n0, &lost[0]).expect_err("a live member is not forgotten");
    assert!(
        refused.contains("only a member declared down or suspected"),
        "{refused}"
    );
    let refused = forget(&n0, &id(&n0)).expect_err("nor this node");
    assert!(refused.contains("can't forget myself"), "{refused}");
    let refused = forget(&n0, "0123456789012345678901234567890123456789").expect_err("unknown");
    assert!(refused.contains("Unknown node"), "{refused}");
    n2.signal("KILL");
    n3.signal("KILL");
    wait_until("the survivors cut off", SETTLE, &[&n0, &n1], || {
        [&n0, &n1].iter().all(|p| p.stat("shoal_cut_off") == 1)
    });
    let down = redis::cmd("SET")
        .arg("after")
        .arg("1")
        .query::<()>(&mut n0.con())
        .expect_err("a cut-off node serves no key");
    assert_eq!(down.code(), Some("CLUSTERDOWN"), "{down}");
    for p in [&n0, &n1] {
        for id in &lost {
            assert_eq!(forget(p, id).as_deref(), Ok("OK"));
        }
    }
    wait_settled(&[&n0, &n1]);
    for p in [&n0, &n1] {
        assert_eq!(p.stat("shoal_cut_off"), 0);
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut p.con())
            .unwrap();
        assert!(info.contains("cluster_state:ok"), "{info}");
    }
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("1")
        .query(&mut n0.con())
        .unwrap();
    let v: Option<String> = redis::cmd("GET").arg("after").query(&mut n1.con()).unwrap();
    assert_eq!(v.as_deref(), Some("1"));
}

#[test]
fn wrong_secret_or_cluster_name_never_joins() {
    let _serial = serial();
    let n0 = Proc::start("e0", &[]);
    let n1 = Proc::start("e1", &[n0.gossip]);
    wait_settled(&[&n0, &n1]);
    let wrong_secret = Proc::start_with("intruder", &[n0.gossip], "not-the-cluster-secret", &[]);
    let wrong_name = Proc::start_with(
        "stranger",
        &[n0.gossip],
        SECRET,
        &["cluster-name=another-cluster"],
    );
    // The right secret and name, but TLS links where the cluster has plain ones: it could
    // gossip but reach no one over TCP, so the two drop each other's datagrams.
    let certs = shoal_tests::TestCerts::make("mismatch");
    let tls_settings = [
        format!("tls-cert-file={}", certs.path("node.crt")),
        format!("tls-key-file={}", certs.path("node.key")),
        format!("tls-ca-cert-file={}", certs.path("ca.crt")),
        "tls-cluster=yes".to_string(),
    ];
    let tls_args: Vec<&str> = tls_settings.iter().map(String::as_str).collect();
    let with_tls = Proc::start_with("tls-only", &[n0.gossip], SECRET, &tls_args);
    // Both keep announcing to the seed while alone; wait until n0 dropped both kinds.
    wait_until("n0 rejects both", SETTLE, &[&n0], || {
        let i = n0.info();
        let get = |k: &str| i.get(k).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        get("shoal_gossip_rejected_bad_mac") > 0 && get("shoal_gossip_rejected_wrong_cluster") > 0
    });
    for p in [&n0, &n1] {
        assert_eq!(p.stat("shoal_members"), 2, "{}", p.name);
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut p.con())
            .expect("CLUSTER NODES");
        assert_eq!(nodes.lines().count(), 2, "{nodes}");
        for bad in [&wrong_secret, &wrong_name, &with_tls] {
            assert!(
                !nodes.contains(&bad.resp.to_string()),
                "{} appears: {nodes}",
                bad.name
            );
        }
    }
    // Neither serves as a cluster of its own: both answer TRYAGAIN and say why (issue #10,
    // item 5; before, each served alone once join-timeout-ms passed).
    for (bad, why) in [
        (&wrong_secret, "wrong cluster secret"),
        (&wrong_name, "cluster name mismatch"),
    ] {
        assert_eq!(bad.stat("shoal_members"), 1, "{}", bad.name);
        assert_waits_to_join(bad, &["refused by", why]);
    }
    assert_eq!(with_tls.stat("shoal_members"), 1);
    assert_waits_to_join(&with_tls, &["tls-cluster"]);
}

/// A node that has not joined answers TRYAGAIN to keyed commands, is `joining`, and says
/// why (every `needles` in INFO's `shoal_join_problem` and in its log).
fn assert_waits_to_join(p: &Proc, needles: &[&str]) {
    wait_until(
        &format!("{} says why it waits", p.name),
        SETTLE,
        &[p],
        || {
            let problem = p
                .info()
                .get("shoal_join_problem")
                .cloned()
                .unwrap_or_default();
            needles.iter().all(|n| problem.contains(n))
        },
    );
    let info = p.info();
    assert_eq!(info["shoal_state"], "joining", "{}", p.name);
    for cmd in [
        redis::cmd("GET").arg("k").clone(),
        redis::cmd("SET").arg("k").arg("v").clone(),
    ] {
        let r: redis::RedisResult<Option<String>> = cmd.query(&mut p.con());
        let e = r.expect_err("a node that has not joined must not answer keyed commands");
        assert_eq!(e.kind(), redis::ErrorKind::TryAgain, "{}: {e}", p.name);
    }
    // Nor give Redis Cluster clients a slot map: it has none yet.
    let r: redis::RedisResult<redis::Value> =
        redis::cmd("CLUSTER").arg("SLOTS").query(&mut p.con());
    let e = r.expect_err("a node that has not joined has no slot map");
    assert_eq!(e.kind(), redis::ErrorKind::TryAgain, "{}: {e}", p.name);
    let log = p.log.lock().unwrap();
    assert!(
        log.iter()
            .any(|l| l.contains("not serving") && needles.iter().all(|n| l.contains(n))),
        "{}: no log line says why: {:?}",
        p.name,
        &log[log.len().saturating_sub(10)..]
    );
}

/// A port free on 127.0.0.1 for both TCP and UDP at the time of the call (bound, read back,
/// released), for a node that must name its own address before it starts.
fn free_port() -> u16 {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    let port = tcp.local_addr().expect("local addr").port();
    std::net::UdpSocket::bind(("127.0.0.1", port)).expect("the same port is free for UDP");
    port
}

/// A node whose only seed is itself (a restarted first node, the old `scripts/gossip.sh`
/// layout) waits and says so, instead of serving an empty cluster of one; with
/// `cluster-bootstrap` it starts a new cluster, as the operator asked.
#[test]
fn a_node_whose_only_seed_is_itself_does_not_serve_alone() {
    let _serial = serial();
    let port = free_port();
    let me: SocketAddr = ([127, 0, 0, 1], port).into();
    let cluster_port = format!("cluster-port={port}");
    let lonely = Proc::start_with("lonely", &[me], SECRET, &[&cluster_port, "metrics-port=0"]);
    assert_waits_to_join(&lonely, &["name only this node"]);
    // Alive, but no traffic for it yet.
    assert_eq!(lonely.http_get("/healthz").0, 200);
    assert_eq!(
        lonely.http_get("/readyz"),
        (503, "not ready: looking for its cluster\n".into())
    );
    drop(lonely);

    let port = free_port();
    let me: SocketAddr = ([127, 0, 0, 1], port).into();
    let cluster_port = format!("cluster-port={port}");
    let first = Proc::start_with(
        "first",
        &[me],
        SECRET,
        &[&cluster_port, "cluster-bootstrap=true"],
    );
    wait_until("the bootstrap node serves", SETTLE, &[&first], || {
        first.info()["shoal_state"] == "serving"
    });
    let _: () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query(&mut first.con())
        .expect("SET on a bootstrapped node");
    assert!(first.logged("starting a new cluster"), "{:?}", first.tail());
}

/// Figures for the README: a 4th node joins a 3-node cluster holding `SHOAL_FIGURES_KEYS`
/// keys (default 1,000,000, values of 12 to 72 bytes) while two client loads read; prints the
/// hand-off rate and the hit rate the loads saw. Run it on a release build:
/// `SHOAL_FIGURES_KEYS=1000000 cargo test --release -p shoald --test gossip -- --ignored --nocapture handoff_figures`
#[test]
#[ignore]
fn handoff_figures() {
    let _serial = serial();
    let keys: u64 = std::env::var("SHOAL_FIGURES_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let n0 = Proc::start("f0", &[]);
    let n1 = Proc::start("f1", &[n0.gossip]);
    let n2 = Proc::start("f2", &[n0.gossip]);
    wait_settled(&[&n0, &n1, &n2]);
    let filled = Instant::now();
    fill(&n0, keys);
    println!(
        "fill: {keys} keys in {:.1} s",
        filled.elapsed().as_secs_f64()
    );
    let loads = [Load::start(&n0, keys, "f0"), Load::start(&n1, keys, "f1")];
    let joined = Instant::now();
    let n3 = Proc::start("f3", &[n0.gossip]);
    let settle = wait_settled(&[&n0, &n1, &n2, &n3]);
    let results: Vec<LoadResult> = loads.into_iter().map(Load::finish).collect();
    let senders = [&n0, &n1, &n2];
    let sent: u64 = senders
        .iter()
        .map(|p| p.stat("shoal_handoff_last_scan_keys"))
        .sum();
    let bytes: u64 = senders
        .iter()
        .map(|p| p.stat("shoal_handoff_bytes_sent"))
        .sum();
    let scan_ms = senders
        .iter()
        .map(|p| p.stat("shoal_handoff_last_scan_ms"))
        .max()
        .unwrap_or(0)
        .max(1);
    let reads: u64 = results.iter().map(|r| r.reads).sum();
    let misses: u64 = results.iter().map(|r| r.misses).sum();
    let errors: usize = results.iter().map(|r| r.errors.len()).sum();
    println!(
        "join of a 4th node to 3 holding {keys} keys: settled {:.1} s after its start \
         ({:.1} s after it served its first view); hand-off {sent} keys, {:.1} MB in {:.2} s \
         = {:.0} keys/s, {:.1} MB/s (three senders in parallel); client loads: {reads} reads, \
         {misses} misses (hit rate {:.3} %), {errors} errors; keys fetched on a miss by the \
         newcomer: {}",
        joined.elapsed().as_secs_f64(),
        settle.as_secs_f64(),
        bytes as f64 / 1e6,
        scan_ms as f64 / 1000.0,
        sent as f64 * 1000.0 / scan_ms as f64,
        bytes as f64 / 1e3 / scan_ms as f64,
        100.0 * (reads - misses) as f64 / reads.max(1) as f64,
        n3.stat("shoal_fetched_keys")
    );
    assert_eq!(misses, 0);
}
