//! Process-level tests of the `shoald` binary: configuration precedence, start-up errors,
//! AUTH and graceful shutdown on SIGTERM / SIGINT.
//!
//! Each test starts the real binary (`CARGO_BIN_EXE_shoald`) on `127.0.0.1` with `--port 0`
//! and reads the bound address back from the start-up log line on stderr. Clients are plain
//! `std::net::TcpStream`s speaking RESP2 by hand. Nothing sleeps until something is ready:
//! every wait is on a condition (a log line, an exit status, a reply) with a deadline, and
//! socket reads carry a timeout so a server that stops answering fails the test instead of
//! hanging it. Inherited `SHOAL_*` variables are removed so the caller's environment cannot
//! change what a test sees. Linux only: signals go through kill(1), and whether the daemon
//! catches them is read from `/proc/PID/status`.

mod support;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

// ---- start-up ---------------------------------------------------------------------------

#[test]
fn starts_without_a_config_file_and_answers_ping() {
    let daemon = Daemon::start(&["--port", "0"], &[]);
    assert!(daemon.addr.ip().is_loopback(), "default bind is loopback");
    assert_ne!(daemon.addr.port(), 0, "the actual port is logged, not 0");
    let line = &daemon.start_line;
    assert!(
        line.contains(&format!("listening on 127.0.0.1:{}", daemon.addr.port())),
        "{line}"
    );
    // 1gb, the built-in maxmemory, and the default policy.
    assert!(line.contains("maxmemory 1073741824 bytes"), "{line}");
    assert!(line.contains("allkeys-lru"), "{line}");
    assert!(
        line.contains(&format!("shoald {}", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );

    let mut client = daemon.connect();
    client.send_raw(b"*1\r\n$4\r\nPING\r\n");
    assert_eq!(client.read(), Resp::Simple("PONG".into()));
    assert_eq!(client.call(&["SET", "k", "v"]), Resp::ok());
    assert_eq!(client.call(&["GET", "k"]), Resp::bulk("v"));
}

/// `threads` sets the worker count (memcached's `-t`): memcached's `stats threads` reports
/// the workers actually running, CONFIG GET the setting, and CLIENT LIST's `io-thread` shows
/// the connections spread over them, each worker serving as many as the others or one more.
#[test]
fn threads_sets_the_worker_count() {
    for n in ["1", "3"] {
        let set = format!("threads={n}");
        let daemon = Daemon::start(&["--port", "0", "--memcache-port", "0", "--set", &set], &[]);
        let mut mc = TcpStream::connect(daemon.memcache_addr()).expect("memcached port");
        mc.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        mc.write_all(b"stats\r\n").expect("write stats");
        let mut stats = Vec::new();
        let mut chunk = [0u8; 4096];
        while !stats.ends_with(b"END\r\n") {
            let got = mc.read(&mut chunk).expect("read stats");
            assert!(got > 0, "connection closed in the middle of stats");
            stats.extend_from_slice(&chunk[..got]);
        }
        let stats = String::from_utf8(stats).expect("stats are text");
        assert!(
            stats.contains(&format!("STAT threads {n}\r\n")),
            "threads={n}: {stats}"
        );
        assert_eq!(daemon.connect().config_get("threads"), n);
        let mut clients: Vec<Client> = (0..6).map(|_| daemon.connect()).collect();
        for c in &mut clients {
            assert_eq!(c.call(&["PING"]), Resp::Simple("PONG".into()));
        }
        let list = match clients[0].call(&["CLIENT", "LIST"]) {
            Resp::Bulk(b) => String::from_utf8(b).expect("CLIENT LIST is text"),
            other => panic!("CLIENT LIST: {other:?}"),
        };
        // Workers are numbered from 1 (0 is the main thread, as in Redis).
        let workers: usize = n.parse().unwrap();
        let mut served = vec![0usize; workers + 1];
        for line in list.lines() {
            let thread = line
                .split(' ')
                .find_map(|f| f.strip_prefix("io-thread="))
                .unwrap_or_else(|| panic!("no io-thread in {line}"));
            let thread: usize = thread.parse().expect("io-thread is a number");
            assert!(
                (1..=workers).contains(&thread),
                "io-thread {thread} of {workers}: {list}"
            );
            served[thread] += 1;
        }
        // The 6 clients and the memcached connection.
        assert_eq!(served.iter().sum::<usize>(), 7, "{list}");
        let (least, most) = (served[1..].iter().min(), served[1..].iter().max());
        assert!(most.unwrap() - least.unwrap() <= 1, "{served:?}: {list}");
    }
}

/// The `io-thread` of each named connection in CLIENT LIST.
fn io_threads(client: &mut Client) -> std::collections::HashMap<String, usize> {
    let list = match client.call(&["CLIENT", "LIST"]) {
        Resp::Bulk(b) => String::from_utf8(b).expect("CLIENT LIST is text"),
        other => panic!("CLIENT LIST: {other:?}"),
    };
    let field = |line: &str, name: &str| {
        line.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .map(str::to_owned)
    };
    list.lines()
        .filter_map(|line| {
            let name = field(line, "name=")?;
            let thread = field(line, "io-thread=")?.parse().ok()?;
            Some((name, thread))
        })
        .collect()
}

/// Polls `cond` until it holds or `within` passes; true if it held.
fn wait_until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Connections that work on one key from both workers move to one of them (the key's shard's
/// home, `shoal_node::workers::Affinity`), so the key stops changing threads for every
/// command; connections spread over many keys stay where they are. No command is lost or
/// run twice by a move: each loader's INCRs, pipelined in batches written in two pieces
/// that split a command, all count.
#[test]
fn connections_on_one_hot_key_gather_on_one_worker() {
    let daemon = Daemon::start(&["--port", "0", "--set", "threads=2"], &[]);
    // Four loaders on the hot key and two on many keys.
    let (hot, spread, mut admin) = named_on_two_workers(&daemon, "hot", "spread");
    let before = io_threads(&mut admin);

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Small batches: the workers then take the key's shard from each other often enough
    // (once in 16 commands moves a connection) also when they share a core.
    const BATCH: usize = 4;
    const MAX_BATCHES: usize = 500_000;
    let run = |mut c: Client, key: Option<&'static str>| {
        until_stopped(&stop, MAX_BATCHES, move |round| {
            let mut out = Vec::new();
            for i in 0..BATCH {
                let k = match key {
                    Some(k) => k.to_owned(),
                    None => format!("spread:{round}:{i}"),
                };
                encode(&[b"INCR", k.as_bytes()], &mut out);
            }
            let cut = out.len() / 2 + 3;
            c.send_raw(&out[..cut]);
            c.send_raw(&out[cut..]);
            for _ in 0..BATCH {
                match c.read() {
                    Resp::Int(_) => {}
                    other => panic!("INCR: {other:?}"),
                }
            }
        })
    };
    let loaders: Vec<_> = hot.into_iter().map(|c| run(c, Some("hot"))).collect();
    let others: Vec<_> = spread.into_iter().map(|c| run(c, None)).collect();
    // Until the hot loaders share a worker, or one of them is done (all its batches sent).
    let mut gathered = false;
    wait_until(Duration::from_secs(60), || {
        let on = workers_of(&mut admin, "hot");
        gathered = on.as_ref().is_some_and(|on| on.len() == 1);
        gathered || on.is_none()
    });
    // While every loader still runs.
    let after = io_threads(&mut admin);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent: u64 = loaders
        .into_iter()
        .map(|l| l.join().expect("loader") * BATCH as u64)
        .sum();
    for o in others {
        o.join().expect("spread loader");
    }
    assert!(gathered, "the hot key's connections stay apart: {after:?}");
    for i in 0..2 {
        let name = format!("spread{i}");
        assert_eq!(
            before[&name], after[&name],
            "{name} moved: {before:?} {after:?}"
        );
    }
    assert_eq!(admin.call(&["GET", "hot"]), Resp::bulk(&sent.to_string()));
}

/// Connections named `<movers>0..3` and `<stayers>0..1`, then `admin`, on a daemon with two
/// workers: accepted in turn, so both workers serve some movers (checked).
fn named_on_two_workers(
    daemon: &Daemon,
    movers: &str,
    stayers: &str,
) -> (Vec<Client>, Vec<Client>, Client) {
    let start = |name: &str| {
        let mut c = daemon.connect();
        assert_eq!(c.call(&["CLIENT", "SETNAME", name]), Resp::ok());
        c
    };
    let moving: Vec<Client> = (0..4).map(|i| start(&format!("{movers}{i}"))).collect();
    let staying: Vec<Client> = (0..2).map(|i| start(&format!("{stayers}{i}"))).collect();
    let mut admin = start("admin");
    let before = io_threads(&mut admin);
    let workers: std::collections::HashSet<usize> =
        (0..4).map(|i| before[&format!("{movers}{i}")]).collect();
    assert_eq!(
        workers.len(),
        2,
        "{movers} start on both workers: {before:?}"
    );
    (moving, staying, admin)
}

/// Runs `step` with each round's number on a thread of its own, until `stop` is set or
/// `max` rounds ran; joins with the rounds run.
fn until_stopped(
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    max: usize,
    mut step: impl FnMut(usize) + Send + 'static,
) -> std::thread::JoinHandle<u64> {
    let stop = stop.clone();
    std::thread::spawn(move || {
        let mut rounds = 0;
        for round in 0..max {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            step(round);
            rounds += 1;
        }
        rounds
    })
}

/// The workers the connections named `<prefix>0..3` are on now; `None` once one is gone.
fn workers_of(admin: &mut Client, prefix: &str) -> Option<std::collections::HashSet<usize>> {
    let now = io_threads(admin);
    (0..4)
        .map(|i| now.get(&format!("{prefix}{i}")).copied())
        .collect()
}

/// Transactions (scripts, EXEC) keep every other worker out while they run, so clients
/// that keep running them gather on one worker (`workers::TRANSACTIONS_HOME`), where they
/// do not wake each other, while clients of plain commands stay where they were; nothing
/// is lost on the way.
#[test]
fn connections_running_transactions_gather_on_one_worker() {
    let daemon = Daemon::start(&["--port", "0", "--set", "threads=2"], &[]);
    // Two clients of scripts, two of MULTI/EXEC, two of plain INCRs.
    let (tx, plain, mut admin) = named_on_two_workers(&daemon, "tx", "plain");
    let before = io_threads(&mut admin);

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    const MAX_ROUNDS: usize = 200_000;
    // Each client INCRs keys of its own, one per round, so no key is hot.
    let run = |mut c: Client, name: String, kind: usize| {
        let rounds = until_stopped(&stop, MAX_ROUNDS, {
            let name = name.clone();
            move |round| {
                let key = format!("{name}:{}", round % 1000);
                let mut out = Vec::new();
                match kind {
                    0 => encode(
                        &[
                            b"EVAL",
                            b"return redis.call('INCR', KEYS[1])",
                            b"1",
                            key.as_bytes(),
                        ],
                        &mut out,
                    ),
                    1 => {
                        encode(&[b"MULTI"], &mut out);
                        encode(&[b"INCR", key.as_bytes()], &mut out);
                        encode(&[b"EXEC"], &mut out);
                    }
                    _ => encode(&[b"INCR", key.as_bytes()], &mut out),
                }
                c.send_raw(&out);
                let last = match kind {
                    1 => {
                        assert_eq!(c.read(), Resp::ok());
                        assert_eq!(c.read(), Resp::Simple("QUEUED".into()));
                        match c.read() {
                            Resp::Array(mut a) if a.len() == 1 => a.remove(0),
                            other => panic!("EXEC: {other:?}"),
                        }
                    }
                    _ => c.read(),
                };
                assert!(matches!(last, Resp::Int(_)), "{name}: {last:?}");
            }
        });
        (name, rounds)
    };
    let mut loaders: Vec<_> = tx
        .into_iter()
        .enumerate()
        .map(|(i, c)| run(c, format!("tx{i}"), i % 2))
        .collect();
    loaders.extend(
        plain
            .into_iter()
            .enumerate()
            .map(|(i, c)| run(c, format!("plain{i}"), 2)),
    );
    let mut gathered = false;
    wait_until(Duration::from_secs(60), || {
        let on = workers_of(&mut admin, "tx");
        gathered = on.as_ref().is_some_and(|on| on == &[1].into());
        gathered || on.is_none()
    });
    let after = io_threads(&mut admin);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let done: Vec<(String, u64)> = loaders
        .into_iter()
        .map(|(name, l)| (name, l.join().expect("loader")))
        .collect();
    assert!(gathered, "the transactions' clients stay apart: {after:?}");
    for i in 0..2 {
        let name = format!("plain{i}");
        assert_eq!(
            before[&name], after[&name],
            "{name} moved: {before:?} {after:?}"
        );
    }
    // Every INCR counted once: each key holds the rounds that named it.
    for (name, rounds) in done {
        let expect = rounds / 1000 + u64::from(rounds % 1000 > 0);
        assert_eq!(
            admin.call(&["GET", &format!("{name}:0")]),
            Resp::bulk(&expect.to_string()),
            "{name} after {rounds} rounds"
        );
    }
}

#[test]
fn example_config_holds_every_key_at_its_default() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/shoal.toml");
    let text = std::fs::read_to_string(&path).expect("read config/shoal.toml");
    let table: toml::Table = text.parse().expect("config/shoal.toml is TOML");
    let mut in_file: Vec<&str> = table.keys().map(String::as_str).collect();
    // Keys without a default value (off unless set) appear as a commented example line.
    for key in shoal_node::config::OPTIONAL_KEYS {
        assert!(
            text.contains(&format!("# {key} = ")),
            "config/shoal.toml must show optional key {key} commented out"
        );
        in_file.push(key);
    }
    let mut known = shoal_node::config::CONFIG_KEYS.to_vec();
    in_file.sort_unstable();
    known.sort_unstable();
    assert_eq!(
        in_file, known,
        "config/shoal.toml must set every key, and only those"
    );

    // Loaded by the real binary, the file yields exactly the built-in defaults.
    let path = path.to_str().expect("UTF-8 path");
    let from_file = Daemon::start(&["--config", path, "--port", "0"], &[])
        .connect()
        .config_all();
    let built_in = Daemon::start(&["--port", "0"], &[]).connect().config_all();
    assert_eq!(from_file, built_in);
    assert_eq!(from_file["maxmemory"], "1073741824");
}

#[test]
fn precedence_is_flag_then_env_then_file_then_default() {
    let file = TempConfig::new(
        "maxmemory = \"10mb\"\nmaxmemory-policy = \"allkeys-lfu\"\ntimeout = 7\nhz = 15\n",
    );
    let daemon = Daemon::start(
        &[
            "--config",
            file.path(),
            "--port",
            "0",
            "--maxmemory",
            "30mb",
            "--set",
            "hz=20",
        ],
        &[("SHOAL_MAXMEMORY", "20mb"), ("SHOAL_TIMEOUT", "9")],
    );
    assert!(
        daemon
            .start_line
            .contains("maxmemory 31457280 bytes (allkeys-lfu)"),
        "{}",
        daemon.start_line
    );
    let mut client = daemon.connect();
    // flag (30mb) > env (20mb) > file (10mb)
    assert_eq!(client.config_get("maxmemory"), "31457280");
    // file only
    assert_eq!(client.config_get("maxmemory-policy"), "allkeys-lfu");
    // env (9) > file (7)
    assert_eq!(client.config_get("timeout"), "9");
    // --set (20) > file (15)
    assert_eq!(client.config_get("hz"), "20");
    // set nowhere: the default
    assert_eq!(client.config_get("maxmemory-samples"), "5");
    assert_eq!(client.config_get("maxclients"), "10000");
}

#[test]
fn environment_alone_overrides_the_file() {
    let file = TempConfig::new("maxmemory = \"10mb\"\nmaxmemory-policy = \"allkeys-lfu\"\n");
    let daemon = Daemon::start(
        &["--config", file.path(), "--port", "0"],
        &[
            ("SHOAL_MAXMEMORY", "20mb"),
            ("SHOAL_MAXMEMORY_POLICY", "volatile-ttl"),
        ],
    );
    let mut client = daemon.connect();
    assert_eq!(client.config_get("maxmemory"), "20971520");
    assert_eq!(client.config_get("maxmemory-policy"), "volatile-ttl");
}

// ---- rejected configurations -------------------------------------------------------------

/// Runs with a configuration that must be refused: non-zero exit, quickly, and `expect` in
/// the message on stderr.
fn assert_refused(args: &[&str], env: &[(&str, &str)], expect: &[&str]) {
    let run = run_to_exit(args, env, ERROR_EXIT_DEADLINE);
    assert!(
        !run.status.success(),
        "{args:?} {env:?} should be refused; status {}, stderr:\n{}",
        run.status,
        run.stderr
    );
    assert!(
        run.status.code().is_some(),
        "exited, not killed: {}",
        run.status
    );
    for e in expect {
        assert!(
            run.stderr.contains(e),
            "{args:?} {env:?}: stderr should mention {e:?}:\n{}",
            run.stderr
        );
    }
    assert!(
        !run.stderr.contains("listening on"),
        "{args:?}: refused configuration must not start serving:\n{}",
        run.stderr
    );
}

#[test]
fn unknown_key_in_the_file_is_refused() {
    let file = TempConfig::new("port = 0\nmaxmemroy = \"1gb\"\n");
    assert_refused(&["--config", file.path()], &[], &["maxmemroy"]);
}

#[test]
fn invalid_policy_is_refused() {
    let file = TempConfig::new("port = 0\nmaxmemory-policy = \"allkeys-fifo\"\n");
    assert_refused(
        &["--config", file.path()],
        &[],
        &["maxmemory-policy", "allkeys-fifo"],
    );
}

#[test]
fn malformed_size_is_refused() {
    let file = TempConfig::new("port = 0\nmaxmemory = \"12xb\"\n");
    assert_refused(&["--config", file.path()], &[], &["12xb"]);
    assert_refused(&["--port", "0", "--maxmemory", "lots"], &[], &["lots"]);
    assert_refused(&["--port", "0"], &[("SHOAL_MAXMEMORY", "-1mb")], &["-1mb"]);
}

#[test]
fn other_bad_invocations_are_refused() {
    let file = TempConfig::new("port = 0\nmaxmemory = \n");
    assert_refused(&["--config", file.path()], &[], &[file.path()]);
    let missing =
        std::env::temp_dir().join(format!("shoald-test-{}-missing.toml", std::process::id()));
    let missing = missing.to_str().expect("UTF-8 path");
    assert_refused(&["--config", missing], &[], &["cannot read", missing]);
    assert_refused(
        &["--port", "0", "--set", "nosuchkey=1"],
        &[],
        &["nosuchkey"],
    );
    assert_refused(&["--port", "0", "--set", "hz"], &[], &["KEY=VALUE"]);
    assert_refused(&["--port", "0", "--log-level", "loud"], &[], &["loud"]);
    assert_refused(&["--port", "0", "--set", "hz=0"], &[], &["hz"]);
    // ACL users: a refused rule, an ACL file that cannot be read, both at once.
    assert_refused(
        &["--port", "0", "--set", "user=app on +nosuch"],
        &[],
        &["user 'app'", "Unknown command or category name in ACL"],
    );
    assert_refused(
        &["--port", "0", "--set", &format!("aclfile={missing}")],
        &[],
        &["Error loading ACLs, opening file", missing],
    );
    assert_refused(
        &["--port", "0", "--set", "user=a on", "--set", "aclfile=x"],
        &[],
        &["either an ACL file or declare users"],
    );
}

#[test]
fn port_in_use_is_refused() {
    let first = Daemon::start(&["--port", "0"], &[]);
    let port = first.addr.port().to_string();
    assert_refused(&["--port", &port], &[], &["cannot listen on", &port]);
    // The first one is unharmed.
    assert_eq!(first.connect().call(&["PING"]), Resp::Simple("PONG".into()));
}

// ---- CLI ----------------------------------------------------------------------------------

#[test]
fn help_lists_the_flags_and_the_environment() {
    let run = run_to_exit(&["--help"], &[], ERROR_EXIT_DEADLINE);
    assert!(run.status.success(), "--help: {}", run.status);
    for flag in [
        "--config",
        "--bind",
        "--port",
        "--maxmemory",
        "--requirepass",
        "--log-level",
        "--set",
        "SHOAL_",
    ] {
        assert!(
            run.stdout.contains(flag),
            "--help should mention {flag}:\n{}",
            run.stdout
        );
    }

    let run = run_to_exit(&["--version"], &[], ERROR_EXIT_DEADLINE);
    assert!(run.status.success(), "--version: {}", run.status);
    assert!(
        run.stdout.contains(env!("CARGO_PKG_VERSION")),
        "{}",
        run.stdout
    );
}

// ---- AUTH ---------------------------------------------------------------------------------

#[test]
fn requirepass_gates_commands_until_auth() {
    let daemon = Daemon::start(&["--port", "0", "--requirepass", "s3cret"], &[]);
    let mut client = daemon.connect();
    let noauth = Resp::Error("NOAUTH Authentication required.".into());
    assert_eq!(client.call(&["GET", "k"]), noauth);
    assert_eq!(client.call(&["SET", "k", "v"]), noauth);
    assert_eq!(
        client.call(&["AUTH", "wrong"]),
        Resp::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
    );
    assert_eq!(client.call(&["GET", "k"]), noauth);
    assert_eq!(client.call(&["AUTH", "s3cret"]), Resp::ok());
    assert_eq!(
        client.call(&["GET", "k"]),
        Resp::Nil,
        "the refused SET stored nothing"
    );
    assert_eq!(client.call(&["SET", "k", "v"]), Resp::ok());
    assert_eq!(client.call(&["GET", "k"]), Resp::bulk("v"));

    // Authentication is per connection.
    let mut other = daemon.connect();
    assert_eq!(other.call(&["GET", "k"]), noauth);
}

#[test]
fn requirepass_from_the_environment_may_be_all_digits() {
    // Redis accepts `requirepass 123456`; so must SHOAL_REQUIREPASS and --set.
    let daemon = Daemon::start(&["--port", "0"], &[("SHOAL_REQUIREPASS", "123456")]);
    let mut client = daemon.connect();
    assert_eq!(
        client.call(&["GET", "k"]),
        Resp::Error("NOAUTH Authentication required.".into())
    );
    assert_eq!(client.call(&["AUTH", "123456"]), Resp::ok());

    let daemon = Daemon::start(&["--port", "0", "--set", "requirepass=123456"], &[]);
    assert_eq!(daemon.connect().call(&["AUTH", "123456"]), Resp::ok());
}

// ---- graceful shutdown --------------------------------------------------------------------

/// Sends a pipelined batch of SETs in one write, signals the daemon, and checks that every
/// reply still arrives, then EOF, then exit status 0, then refused connections.
fn drains_pipeline_then_exits_on(signal: &str) {
    const BATCH: usize = 1000;
    let mut daemon = Daemon::start(&["--port", "0"], &[]);
    let mut client = daemon.connect();
    let mut batch = Vec::new();
    for i in 0..BATCH {
        let key = format!("key:{i}");
        let value = format!("value:{i}");
        encode(&[b"SET", key.as_bytes(), value.as_bytes()], &mut batch);
    }
    // Signal once the daemon has executed the whole batch, with the replies unread by the
    // client. Signalling while the batch is still being executed is what the contract
    // promises too, but today it loses replies (see
    // `replies_blocked_on_a_slow_reader_are_still_delivered`), and requests still in the
    // kernel's buffer are not promised an answer at all.
    let mut gauge = StatGauge::commands_executed(&daemon);
    client.send_raw(&batch);
    gauge.wait_for(BATCH);
    daemon.signal(signal);

    for i in 0..BATCH {
        match client.try_read() {
            Ok(Some(r)) => assert_eq!(r, Resp::ok(), "reply {i}"),
            Ok(None) => panic!("connection closed after {i} of {BATCH} replies"),
            Err(e) => panic!("after {i} of {BATCH} replies: {e}"),
        }
    }
    match client.try_read() {
        Ok(None) => {}
        Ok(Some(r)) => panic!("unexpected extra reply {r:?}"),
        Err(e) => panic!("expected EOF after the last reply, got {e}"),
    }

    let status = daemon.wait_exit(SHUTDOWN_DEADLINE);
    assert_eq!(
        status.code(),
        Some(0),
        "exit status after {signal}: {status}"
    );
    let log = daemon.rest_of_log().join("\n");
    assert!(log.contains("shutting down"), "{log}");
    let err = TcpStream::connect(daemon.addr).expect_err("connected to a stopped daemon");
    assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
}

#[test]
fn sigterm_answers_the_pipeline_then_exits_zero() {
    drains_pipeline_then_exits_on("TERM");
}

#[test]
fn sigint_answers_the_pipeline_then_exits_zero() {
    drains_pipeline_then_exits_on("INT");
}

#[test]
fn signal_right_after_the_start_line_is_graceful() {
    // The start line is the readiness signal supervisors and tests wait for; a SIGTERM sent
    // right after it must already be a graceful shutdown, not the default action.
    let mut daemon = Daemon::start(&["--port", "0"], &[]);
    let caught = daemon.caught_signals();
    daemon.signal_now("TERM");
    let status = daemon.wait_exit(SHUTDOWN_DEADLINE);
    assert_eq!(
        caught & HANDLED_SIGNALS,
        HANDLED_SIGNALS,
        "SIGINT/SIGTERM not yet caught when the start line was logged (SigCgt {caught:x}); \
         exit after SIGTERM: {status}"
    );
    assert_eq!(status.code(), Some(0), "{status}");
}

#[test]
fn idle_clients_do_not_hold_up_shutdown() {
    // A shutdown deadline far beyond the exit deadline: exiting in time proves idle
    // connections are closed at once rather than waited out.
    let mut daemon = Daemon::start(&["--port", "0", "--set", "shutdown-timeout-ms=60000"], &[]);
    let mut idle = daemon.connect();
    assert_eq!(idle.call(&["PING"]), Resp::Simple("PONG".into()));
    let mut silent = daemon.connect();
    // A request cut in half: nothing the server could answer.
    silent.send_raw(b"*2\r\n$3\r\nGET\r\n$1");

    let started = Instant::now();
    daemon.signal("TERM");
    let status = daemon.wait_exit(SHUTDOWN_DEADLINE);
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(idle.try_read(), Ok(None)), "idle client sees EOF");
    assert!(
        matches!(silent.try_read(), Ok(None) | Err(_)),
        "half-sent client is closed"
    );
}

#[test]
fn replies_blocked_on_a_slow_reader_are_still_delivered() {
    // 64 GETs of a 1 MiB value: far more than the socket buffers hold, so the daemon is
    // blocked writing replies to a client that has not read yet when SIGTERM arrives. The
    // requests were all read, so by `shutdown-timeout-ms`'s contract ("waits for
    // connections to answer what they already read") every reply must still arrive.
    const GETS: usize = 64;
    const VALUE: usize = 1 << 20;
    let mut daemon = Daemon::start(&["--port", "0"], &[]);
    let mut client = daemon.connect();
    let value = "x".repeat(VALUE);
    assert_eq!(client.call(&["SET", "big", &value]), Resp::ok());
    let mut batch = Vec::new();
    for _ in 0..GETS {
        encode(&[b"GET", b"big"], &mut batch);
    }
    let mut gauge = StatGauge::bytes_read(&daemon);
    client.send_raw(&batch);
    gauge.wait_for(batch.len());
    daemon.signal("TERM");

    for i in 0..GETS {
        match client.try_read() {
            Ok(Some(Resp::Bulk(b))) => assert_eq!(b.len(), VALUE, "reply {i}"),
            Ok(Some(r)) => panic!("reply {i}: unexpected {r:?}"),
            Ok(None) => panic!("connection closed after {i} of {GETS} replies"),
            Err(e) => panic!("after {i} of {GETS} replies: {e}"),
        }
    }
    assert!(
        matches!(client.try_read(), Ok(None)),
        "EOF after the last reply"
    );
    let status = daemon.wait_exit(SHUTDOWN_DEADLINE);
    assert_eq!(status.code(), Some(0), "{status}");
}

#[test]
fn shutdown_command_stops_the_daemon_gracefully() {
    let mut daemon = Daemon::start(&["--port", "0"], &[]);
    let mut other = daemon.connect();
    assert_eq!(other.call(&["SET", "k", "v"]), Resp::ok());
    let mut s = TcpStream::connect(daemon.addr).expect("connect");
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.write_all(b"SHUTDOWN ABORT\r\n").unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"-ERR No shutdown in progress.\r\n");
    // As Redis: no reply, the connection closes, the process exits 0.
    s.write_all(b"SHUTDOWN NOSAVE\r\n").unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .expect("read until the server closes");
    assert!(rest.is_empty(), "SHUTDOWN replied {rest:?}");
    let status = daemon.wait_exit(SHUTDOWN_DEADLINE);
    assert!(status.success(), "{status}");
    assert!(daemon
        .rest_of_log()
        .iter()
        .any(|l| l.contains("SHUTDOWN requested")));
}

/// SHUTDOWN SAVE writes a snapshot, then stops: the file is Redis's RDB (its header), with
/// the key; if the snapshot cannot be written the node stays up and says so, as Redis, and
/// SHUTDOWN SAVE FORCE stops it anyway.
#[test]
fn shutdown_save_writes_a_snapshot_first() {
    let dir = std::env::temp_dir().join(format!("shoal-shutdown-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = format!("dir={}", dir.display());
    let mut daemon = Daemon::start(&["--port", "0", "--set", &dir_arg], &[]);
    let mut c = daemon.connect();
    assert_eq!(c.call(&["SET", "saved-key", "v"]), Resp::ok());
    assert_eq!(
        c.call(&["SHUTDOWN", "SAVE", "NOSAVE"]),
        Resp::Error("ERR syntax error".into())
    );
    c.send_raw(b"SHUTDOWN SAVE\r\n");
    let status = daemon.wait_exit(SHUTDOWN_DEADLINE);
    assert!(status.success(), "{status}");
    let file = std::fs::read(dir.join("dump.rdb")).expect("dump.rdb written");
    assert!(
        file.starts_with(b"REDIS0010"),
        "{:?}",
        &file[..file.len().min(16)]
    );
    assert!(
        file.windows(9).any(|w| w == b"saved-key"),
        "the key is in the snapshot"
    );
    // A directory that is gone: refused, the node runs on; FORCE stops it.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let mut daemon = Daemon::start(&["--port", "0", "--set", &dir_arg], &[]);
    let mut c = daemon.connect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        c.call(&["SHUTDOWN", "SAVE"]),
        Resp::Error("ERR Errors trying to SHUTDOWN. Check logs.".into())
    );
    assert_eq!(c.call(&["PING"]), Resp::Simple("PONG".into()));
    c.send_raw(b"SHUTDOWN SAVE FORCE\r\n");
    let status = daemon.wait_exit(SHUTDOWN_DEADLINE);
    assert!(status.success(), "{status}");
}

// ---- a cluster of processes -------------------------------------------------------------

/// `n` distinct free loopback ports: all bound at once (so they differ), then released for
/// the daemons to take.
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("local addr").port())
        .collect()
}

/// A static cluster of `n` processes (`n0`, `n1`, ...; `write-ack = all`) on free ports:
/// `start(i)` starts member `i`, again after it was killed too (on the same ports).
struct StaticCluster {
    ports: Vec<u16>,
    nodes: String,
}

impl StaticCluster {
    fn new(n: usize) -> StaticCluster {
        let ports = free_ports(2 * n);
        let nodes: Vec<String> = (0..n)
            .map(|i| format!("n{i}=127.0.0.1:{}@{}", ports[2 * i], ports[2 * i + 1]))
            .collect();
        let nodes = format!("cluster-nodes={}", nodes.join(","));
        StaticCluster { ports, nodes }
    }

    fn start(&self, i: usize) -> Daemon {
        let port = self.ports[2 * i].to_string();
        let name = format!("node-name=n{i}");
        let args = [
            "--port",
            &port,
            "--set",
            &name,
            "--set",
            &self.nodes,
            "--set",
            "write-ack=all",
        ];
        Daemon::start(&args, &[("SHOAL_CLUSTER_SECRET", "process-test-secret")])
    }
}

/// Kills `daemon` with SIGKILL (kill(1)) and waits until it is gone.
fn sigkill(mut daemon: Daemon) {
    let status = Command::new("kill")
        .arg("-KILL")
        .arg(daemon.child.id().to_string())
        .status()
        .expect("run kill(1)");
    assert!(status.success());
    daemon.wait_exit(SHUTDOWN_DEADLINE);
}

/// Three `shoald` processes form a cluster from a static node list; after SIGKILL of one,
/// every key stays readable and writable through the two survivors, without errors.
#[test]
fn a_cluster_survives_sigkill_of_one_of_three_processes() {
    let cluster = StaticCluster::new(3);
    let nodes = cluster.nodes.clone();
    let mut daemons: Vec<Daemon> = (0..3).map(|i| cluster.start(i)).collect();
    let keys: Vec<String> = (0..300).map(|i| format!("pkey:{i}")).collect();
    {
        let mut c = daemons[0].connect();
        for k in &keys {
            assert_eq!(c.call(&["SET", k, k]), Resp::ok());
        }
        assert_eq!(c.call(&["DBSIZE"]), Resp::Int(300));
    }
    sigkill(daemons.remove(1));
    for d in &daemons {
        let mut c = d.connect();
        for k in &keys {
            assert_eq!(c.call(&["GET", k]), Resp::bulk(k), "{k} via {}", d.addr);
        }
    }
    for d in &daemons {
        let mut c = d.connect();
        for k in &keys {
            assert_eq!(
                c.call(&["SET", k, "after"]),
                Resp::ok(),
                "{k} via {}",
                d.addr
            );
        }
        assert_eq!(c.call(&["DBSIZE"]), Resp::Int(300));
    }
    // A cluster without a secret refuses to start, naming what is missing.
    let finished = run_to_exit(
        &["--port", "0", "--set", "node-name=n0", "--set", &nodes],
        &[],
        ERROR_EXIT_DEADLINE,
    );
    assert!(!finished.status.success());
    assert!(
        finished.stderr.contains("cluster-secret"),
        "{}",
        finished.stderr
    );
    // So does one with the manifest's example secret, or a short one, unless told otherwise.
    let args = ["--port", "0", "--set", "node-name=n0", "--set", &nodes];
    for (secret, why) in [
        ("REPLACE-ME-with-openssl-rand-hex-32", "example"),
        ("letmein", "7 bytes"),
    ] {
        let finished = run_to_exit(
            &args,
            &[("SHOAL_CLUSTER_SECRET", secret)],
            ERROR_EXIT_DEADLINE,
        );
        assert!(!finished.status.success());
        assert!(finished.stderr.contains(why), "{}", finished.stderr);
    }
    // (A gossip node without seeds: the static list's ports are taken by the nodes above.)
    let allowed = Daemon::start(
        &[
            "--port",
            "0",
            "--set",
            "cluster-mode=gossip",
            "--set",
            "cluster-port=0",
            "--set",
            "allow-weak-cluster-secret=true",
        ],
        &[("SHOAL_CLUSTER_SECRET", "letmein")],
    );
    let mut c = allowed.connect();
    assert_eq!(c.call(&["PING"]), Resp::Simple("PONG".into()));
}

/// WAIT in a cluster counts the replicas again while it waits: with `write-ack = all`, a
/// `WAIT 1 0` asked while the other member is down (SIGKILL) blocks, and answers 1 once
/// that member is back (started again on its ports), not never.
#[test]
fn wait_answers_once_a_killed_replica_is_back() {
    let cluster = StaticCluster::new(2);
    let first = cluster.start(0);
    let second = cluster.start(1);
    let mut c = first.connect();
    let acked = |c: &mut Client| c.call(&["WAIT", "1", "50"]);
    assert!(
        wait_until(Duration::from_secs(20), || acked(&mut c) == Resp::Int(1)),
        "both members reachable"
    );
    sigkill(second);
    // A static cluster learns a member is down from a request to it: reads of keys it
    // owns (each read fails over to the copy here).
    assert!(
        wait_until(Duration::from_secs(20), || {
            for i in 0..20 {
                c.call(&["GET", &format!("k{i}")]);
            }
            acked(&mut c) == Resp::Int(0)
        }),
        "the killed member seen unreachable"
    );
    let mut waiting = first.connect();
    waiting.send_raw(b"WAIT 1 0\r\n");
    let blocked = |c: &mut Client| {
        matches!(c.call(&["INFO", "clients"]),
            Resp::Bulk(b) if String::from_utf8_lossy(&b).contains("blocked_clients:1\r\n"))
    };
    assert!(
        wait_until(Duration::from_secs(10), || blocked(&mut c)),
        "WAIT 1 0 blocks while the replica is away"
    );
    let _back = cluster.start(1);
    assert_eq!(waiting.read(), Resp::Int(1));
}

// ---- a busy script ----------------------------------------------------------------------

/// Polls PING on `client` until it is answered BUSY (a script is past its threshold);
/// returns the error's text.
fn busy_error(client: &mut Client) -> String {
    let mut text = String::new();
    let seen = wait_until(Duration::from_secs(20), || match client.call(&["PING"]) {
        Resp::Error(e) if e.starts_with("BUSY ") => {
            text = e;
            true
        }
        _ => false,
    });
    assert!(seen, "no BUSY while the script runs");
    text
}

/// Sends `args` on a connection of its own, named `name`, on the other worker than `near`'s
/// (`threads = 2`: a script holds its own worker's connections until it ends, as Redis's
/// one thread holds everyone), and reads the reply in a thread.
fn call_in_thread(
    daemon: &Daemon,
    near: &mut Client,
    name: &str,
    args: &'static [&'static str],
) -> std::thread::JoinHandle<Resp> {
    // A new connection goes to the worker serving the fewest; one just closed may still
    // count there for a moment, so connect again until it is the other.
    let mut client = None;
    let apart = wait_until(Duration::from_secs(10), || {
        let mut c = daemon.connect();
        assert_eq!(c.call(&["CLIENT", "SETNAME", name]), Resp::ok());
        let threads = io_threads(near);
        let other_worker = threads.get(name) != threads.get("near");
        if other_worker {
            client = Some(c);
        }
        other_worker
    });
    assert!(apart, "a connection on the other worker");
    let mut client = client.expect("kept");
    std::thread::spawn(move || client.call(args))
}

/// A script past `busy-reply-threshold` keeps running, as in Redis: the other clients are
/// answered BUSY (but for MULTI, DISCARD, SCRIPT KILL, ...), SCRIPT KILL stops one that has
/// not written (also one that catches errors with `pcall` or runs in coroutines), one that wrote is UNKILLABLE
/// and runs to its end, FUNCTION KILL and STATS do the same for functions, and SHUTDOWN
/// needs NOSAVE, which ends the script and the node.
#[test]
fn a_busy_script_answers_others_busy_until_script_kill() {
    let mut daemon = Daemon::start(&["--port", "0", "--set", "threads=2"], &[]);
    let mut other = daemon.connect();
    assert_eq!(other.call(&["CLIENT", "SETNAME", "near"]), Resp::ok());
    assert_eq!(
        other.call(&["CONFIG", "SET", "lua-time-limit", "50"]),
        Resp::ok()
    );
    let is_error = |r: &Resp, prefix: &str| matches!(r, Resp::Error(e) if e.starts_with(prefix));
    for script in [
        &["EVAL", "while true do end", "0"][..],
        &[
            "EVAL",
            "while true do pcall(function() while true do end end) end",
            "0",
        ],
        // Nor one that runs in coroutines: resume does not catch the kill, wrap passes it.
        &[
            "EVAL",
            "while true do coroutine.resume(coroutine.create(function() while true do end end)) end",
            "0",
        ],
        &[
            "EVAL",
            "local co = coroutine.wrap(function() while true do coroutine.yield() end end) \
             while true do pcall(co) end",
            "0",
        ],
    ] {
        let script: &'static [&'static str] = Box::leak(script.to_vec().into_boxed_slice());
        let run = call_in_thread(&daemon, &mut other, "script", script);
        let busy = busy_error(&mut other);
        assert!(
            busy.contains("You can only call SCRIPT KILL or SHUTDOWN NOSAVE"),
            "{busy}"
        );
        // Redis lets MULTI and DISCARD through; what would be queued is refused.
        assert_eq!(other.call(&["MULTI"]), Resp::ok());
        let r = other.call(&["SET", "k", "v"]);
        assert!(is_error(&r, "BUSY "), "{r:?}");
        assert_eq!(other.call(&["DISCARD"]), Resp::ok());
        let r = other.call(&["FUNCTION", "KILL"]);
        assert!(is_error(&r, "BUSY "), "FUNCTION KILL of a script: {r:?}");
        let r = other.call(&["SHUTDOWN"]);
        assert!(is_error(&r, "BUSY "), "SHUTDOWN without NOSAVE: {r:?}");
        assert_eq!(other.call(&["SCRIPT", "KILL"]), Resp::ok());
        let r = run.join().unwrap();
        assert!(
            is_error(&r, "ERR Script killed by user with SCRIPT KILL"),
            "{r:?}"
        );
        assert_eq!(other.call(&["PING"]), Resp::Simple("PONG".into()));
    }
    let r = other.call(&["SCRIPT", "KILL"]);
    assert!(is_error(&r, "NOTBUSY "), "{r:?}");

    // A script that wrote runs to its end (about 1.5 s by the server's clock).
    let run = call_in_thread(
        &daemon,
        &mut other,
        "writer",
        &[
            "EVAL",
            "redis.call('SET', 'written', '1') \
             local t = redis.call('TIME') \
             while true do \
               local n = redis.call('TIME') \
               if (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > 1500000 then break end \
             end \
             return 'done'",
            "0",
        ],
    );
    busy_error(&mut other);
    let r = other.call(&["SCRIPT", "KILL"]);
    assert!(is_error(&r, "UNKILLABLE "), "{r:?}");
    assert_eq!(run.join().unwrap(), Resp::bulk("done"));
    assert_eq!(other.call(&["GET", "written"]), Resp::bulk("1"));

    // A function: FUNCTION STATS shows it, SCRIPT KILL names FUNCTION KILL, which stops it.
    let lib =
        "#!lua name=spinlib\nredis.register_function('spin', function() while true do end end)";
    assert_eq!(
        other.call(&["FUNCTION", "LOAD", lib]),
        Resp::bulk("spinlib")
    );
    let run = call_in_thread(&daemon, &mut other, "fcall", &["FCALL", "spin", "0"]);
    let busy = busy_error(&mut other);
    assert!(busy.contains("You can only call FUNCTION KILL"), "{busy}");
    let stats = other.call(&["FUNCTION", "STATS"]);
    let Resp::Array(fields) = &stats else {
        panic!("FUNCTION STATS: {stats:?}")
    };
    let Some(Resp::Array(running)) = fields.get(1) else {
        panic!("running_script: {stats:?}")
    };
    assert_eq!(fields[0], Resp::bulk("running_script"));
    assert_eq!(
        running[..4],
        [
            Resp::bulk("name"),
            Resp::bulk("spin"),
            Resp::bulk("command"),
            Resp::Array(vec![
                Resp::bulk("FCALL"),
                Resp::bulk("spin"),
                Resp::bulk("0")
            ]),
        ]
    );
    assert_eq!(running[4], Resp::bulk("duration_ms"));
    assert!(matches!(running[5], Resp::Int(ms) if ms >= 50), "{stats:?}");
    let r = other.call(&["SCRIPT", "KILL"]);
    assert!(is_error(&r, "BUSY "), "SCRIPT KILL of a function: {r:?}");
    assert_eq!(other.call(&["FUNCTION", "KILL"]), Resp::ok());
    let r = run.join().unwrap();
    assert!(is_error(&r, "ERR Script killed by user"), "{r:?}");

    // SHUTDOWN NOSAVE ends a script that wrote, and the node.
    let run = call_in_thread(
        &daemon,
        &mut other,
        "last",
        &[
            "EVAL",
            "redis.call('SET', 'w2', '1') while true do end",
            "0",
        ],
    );
    busy_error(&mut other);
    let mut out = Vec::new();
    encode(&[b"SHUTDOWN", b"NOSAVE"], &mut out);
    other.send_raw(&out);
    assert!(daemon.wait_exit(Duration::from_secs(20)).success());
    assert!(
        matches!(run.join().unwrap(), Resp::Error(_)),
        "the script ended with an error"
    );
}

/// With one worker, held whole by a busy script that wrote before it ran long (so it did
/// not move: `a_long_script_moves_off_its_worker`): a new connection is served by the main
/// thread instead, so a client can still get in; there, EXEC is refused as Redis refuses
/// it (EXECABORT, the transaction ended), FUNCTION STATS answers BUSY for a script (not a
/// function), and a Memcached request gets an error instead of waiting. The connections of
/// the held worker wait, and are answered once it is free.
#[test]
fn a_busy_script_leaves_new_connections_a_way_in() {
    let daemon = Daemon::start(
        &["--port", "0", "--memcache-port", "0", "--set", "threads=1"],
        &[],
    );
    let mc_addr = daemon.memcache_addr();
    let mut other = daemon.connect();
    assert_eq!(
        other.call(&["CONFIG", "SET", "busy-reply-threshold", "50"]),
        Resp::ok()
    );
    let mut held_mc = std::net::TcpStream::connect(mc_addr).unwrap();
    held_mc.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut script = daemon.connect();
    // Written first, then about 1.5 s by the server's clock.
    let run = std::thread::spawn(move || {
        script.call(&[
            "EVAL",
            "redis.call('SET', 'written', '1') \
             local t = redis.call('TIME') \
             while true do \
               local n = redis.call('TIME') \
               if (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > 1500000 then break end \
             end \
             return 'done'",
            "0",
        ])
    });
    // A connection made once the script is busy answers BUSY at once.
    let mut fresh = None;
    let busy = wait_until(Duration::from_secs(20), || {
        let mut c = daemon.connect();
        c.reader
            .get_ref()
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut out = Vec::new();
        encode(&[b"PING"], &mut out);
        c.send_raw(&out);
        match c.try_read() {
            Ok(Some(Resp::Error(e))) if e.starts_with("BUSY ") => {
                fresh = Some(c);
                true
            }
            _ => false,
        }
    });
    assert!(busy, "a new connection gets in while the script runs");
    let mut c = fresh.unwrap();
    c.reader
        .get_ref()
        .set_read_timeout(Some(IO_TIMEOUT))
        .unwrap();
    // The held worker's Memcached client waits; a new one is answered an error.
    held_mc.write_all(b"get foo\r\n").unwrap();
    let mut mc = std::net::TcpStream::connect(mc_addr).unwrap();
    mc.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    mc.write_all(b"get foo\r\n").unwrap();
    let mut line = [0u8; 64];
    let n = mc.read(&mut line).unwrap();
    assert!(
        line[..n].starts_with(b"SERVER_ERROR busy"),
        "{:?}",
        &line[..n]
    );
    assert_eq!(c.call(&["MULTI"]), Resp::ok());
    assert!(matches!(c.call(&["INCR", "x"]), Resp::Error(e) if e.starts_with("BUSY ")));
    let exec = c.call(&["EXEC"]);
    assert!(
        matches!(&exec, Resp::Error(e) if e.starts_with("EXECABORT Transaction discarded because of: BUSY ")),
        "{exec:?}"
    );
    assert_eq!(
        c.call(&["DISCARD"]),
        Resp::Error("ERR DISCARD without MULTI".into())
    );
    assert!(matches!(c.call(&["FUNCTION", "STATS"]), Resp::Error(e) if e.starts_with("BUSY ")));
    assert!(matches!(c.call(&["SCRIPT", "KILL"]), Resp::Error(e) if e.starts_with("UNKILLABLE ")));
    assert_eq!(run.join().unwrap(), Resp::bulk("done"));
    let n = held_mc.read(&mut line).unwrap();
    assert_eq!(&line[..n], b"END\r\n", "answered once the worker is free");
    assert_eq!(other.call(&["PING"]), Resp::Simple("PONG".into()));
}

/// A client's script that runs long without having changed anything stops on its worker
/// and runs again, from the start, on a thread of its own (`shoal_node::moved`): with one
/// worker, the clients that worker serves are answered meanwhile (BUSY once the script is
/// busy, as Redis answers everyone), also a Memcached client; SCRIPT KILL from one of them
/// stops it. The moved client's session comes back with the reply: its database, its
/// name, and the commands it pipelined behind the script, answered in order after it. A
/// moved script that ends replies as it would have, counted once in INFO commandstats.
#[test]
fn a_long_script_moves_off_its_worker() {
    let daemon = Daemon::start(
        &["--port", "0", "--memcache-port", "0", "--set", "threads=1"],
        &[],
    );
    // Connected before the script: all on the one worker.
    let mut other = daemon.connect();
    let mut held_mc = std::net::TcpStream::connect(daemon.memcache_addr()).unwrap();
    held_mc.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    let mut script = daemon.connect();
    assert_eq!(script.call(&["CLIENT", "SETNAME", "mover"]), Resp::ok());
    assert_eq!(script.call(&["SELECT", "3"]), Resp::ok());
    assert_eq!(script.call(&["SET", "k", "in-3"]), Resp::ok());
    let threads = io_threads(&mut other);
    assert_eq!(threads.get("mover"), Some(&1), "{threads:?}");

    // One that ends: about 300 ms of reads by the server's clock, then its reply.
    assert_eq!(other.call(&["CONFIG", "RESETSTAT"]), Resp::ok());
    let r = script.call(&[
        "EVAL",
        "local t = redis.call('TIME') \
         while true do \
           local n = redis.call('TIME') \
           if (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > 300000 then break end \
         end \
         return redis.call('GET', KEYS[1])",
        "1",
        "k",
    ]);
    assert_eq!(r, Resp::bulk("in-3"));
    // Stopping to move runs nothing more, not even an `xpcall` handler (Lua 5.1 calls it
    // before the error unwinds): the handler's write would be made twice.
    let r = script.call(&[
        "EVAL",
        "return xpcall(function() \
           local t = redis.call('TIME') \
           while true do \
             local n = redis.call('TIME') \
             if (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > 300000 then break end \
           end \
           return 1 \
         end, function(e) redis.call('INCR', 'handled') return e end)",
        "0",
    ]);
    assert_eq!(r, Resp::Int(1), "xpcall's true");
    assert_eq!(
        script.call(&["GET", "handled"]),
        Resp::Nil,
        "the handler never ran"
    );
    let stats = match other.call(&["INFO", "commandstats"]) {
        Resp::Bulk(b) => String::from_utf8(b).unwrap(),
        r => panic!("INFO: {r:?}"),
    };
    assert!(
        stats.contains("cmdstat_eval:calls=2,"),
        "each counted once: {stats}"
    );
    assert_eq!(
        script.call(&["GET", "k"]),
        Resp::bulk("in-3"),
        "still in db 3"
    );
    // With keyspace notifications on, a key read publishes (a key miss here): the script
    // stays where it is, so each of its reads counts once.
    assert_eq!(
        other.call(&["CONFIG", "SET", "notify-keyspace-events", "Km"]),
        Resp::ok()
    );
    assert_eq!(other.call(&["CONFIG", "RESETSTAT"]), Resp::ok());
    let r = script.call(&[
        "EVAL",
        "local n = 0 \
         local t = redis.call('TIME') \
         while true do \
           redis.call('GET', 'nokey') n = n + 1 \
           local now = redis.call('TIME') \
           if (now[1] - t[1]) * 1000000 + (now[2] - t[2]) > 300000 then break end \
         end \
         return n",
        "0",
    ]);
    let Resp::Int(reads) = r else {
        panic!("EVAL: {r:?}")
    };
    let stats = match other.call(&["INFO", "stats"]) {
        Resp::Bulk(b) => String::from_utf8(b).unwrap(),
        r => panic!("INFO: {r:?}"),
    };
    assert!(
        stats.contains(&format!("keyspace_misses:{reads}\r\n")),
        "{reads} reads: {stats}"
    );
    assert_eq!(
        other.call(&["CONFIG", "SET", "notify-keyspace-events", ""]),
        Resp::ok()
    );

    // One that runs for ever, with a PING pipelined behind it.
    assert_eq!(
        other.call(&["CONFIG", "SET", "busy-reply-threshold", "50"]),
        Resp::ok()
    );
    let mut out = Vec::new();
    encode(&[b"EVAL", b"while true do end", b"0"], &mut out);
    encode(&[b"PING"], &mut out);
    script.send_raw(&out);
    // Served by the held worker, answered all the same.
    let busy = busy_error(&mut other);
    assert!(busy.contains("SCRIPT KILL"), "{busy}");
    held_mc.write_all(b"get foo\r\n").unwrap();
    let mut line = [0u8; 64];
    let n = held_mc.read(&mut line).unwrap();
    assert!(
        line[..n].starts_with(b"SERVER_ERROR busy"),
        "{:?}",
        String::from_utf8_lossy(&line[..n])
    );
    assert_eq!(other.call(&["SCRIPT", "KILL"]), Resp::ok());
    let killed = script.read();
    assert!(
        matches!(&killed, Resp::Error(e) if e.starts_with("ERR Script killed by user")),
        "{killed:?}"
    );
    assert_eq!(script.read(), Resp::Simple("PONG".into()));
    assert_eq!(
        script.call(&["GET", "k"]),
        Resp::bulk("in-3"),
        "still in db 3"
    );
    assert_eq!(script.call(&["CLIENT", "GETNAME"]), Resp::bulk("mover"));
    held_mc.write_all(b"get foo\r\n").unwrap();
    let n = held_mc.read(&mut line).unwrap();
    assert_eq!(&line[..n], b"END\r\n");

    // A function moves too, and FUNCTION KILL stops it.
    let lib =
        "#!lua name=spinlib\nredis.register_function('spin', function() while true do end end)";
    assert_eq!(
        other.call(&["FUNCTION", "LOAD", lib]),
        Resp::bulk("spinlib")
    );
    let mut out = Vec::new();
    encode(&[b"FCALL", b"spin", b"0"], &mut out);
    script.send_raw(&out);
    let busy = busy_error(&mut other);
    assert!(busy.contains("FUNCTION KILL"), "{busy}");
    assert_eq!(other.call(&["FUNCTION", "KILL"]), Resp::ok());
    let killed = script.read();
    assert!(
        matches!(&killed, Resp::Error(e) if e.starts_with("ERR Script killed by user")),
        "{killed:?}"
    );
    assert_eq!(script.call(&["GET", "k"]), Resp::bulk("in-3"));
}

/// A CLIENT PAUSE WRITE that gets in between a moved script's two runs holds the second
/// run until the pause ends, as it holds any command that may write: nothing the script
/// writes lands inside an acknowledged pause (the script either wrote before the pause's
/// OK, or after CLIENT UNPAUSE).
#[test]
fn a_pause_between_a_moved_script_s_runs_holds_it() {
    let daemon = Daemon::start(&["--port", "0", "--set", "threads=2"], &[]);
    let mut script = daemon.connect();
    let mut pauser = daemon.connect();
    let mut admin = daemon.connect();
    let unix_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    // About 450 ms of reads, then a write stamped with the server's clock (ms).
    let mut out = Vec::new();
    encode(
        &[
            b"EVAL",
            b"local t = redis.call('TIME') \
              while true do \
                local n = redis.call('TIME') \
                if (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > 450000 then break end \
              end \
              local n = redis.call('TIME') \
              redis.call('SET', 'stamp', n[1] * 1000 + math.floor(n[2] / 1000)) \
              return 'done'",
            b"0",
        ],
        &mut out,
    );
    script.send_raw(&out);
    // While its first run holds the store (or before it starts).
    assert_eq!(
        pauser.call(&["CLIENT", "PAUSE", "60000", "WRITE"]),
        Resp::ok()
    );
    let paused_at = unix_ms();
    // Long enough for the script to end if nothing held it.
    script
        .reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let stamp = |admin: &mut Client| match admin.call(&["GET", "stamp"]) {
        Resp::Bulk(b) => String::from_utf8(b).unwrap().parse::<i64>().unwrap(),
        r => panic!("stamp: {r:?}"),
    };
    match script.try_read() {
        Ok(Some(r)) => {
            // It ended: then it wrote before the pause was acknowledged.
            assert_eq!(r, Resp::bulk("done"));
            let at = stamp(&mut admin);
            assert!(
                at <= paused_at,
                "written at {at}, inside the pause from {paused_at}"
            );
        }
        _ => {
            assert_eq!(
                admin.call(&["GET", "stamp"]),
                Resp::Nil,
                "held: nothing written"
            );
            let unpaused_at = unix_ms();
            assert_eq!(admin.call(&["CLIENT", "UNPAUSE"]), Resp::ok());
            script
                .reader
                .get_ref()
                .set_read_timeout(Some(IO_TIMEOUT))
                .unwrap();
            assert_eq!(script.read(), Resp::bulk("done"));
            let at = stamp(&mut admin);
            assert!(
                at >= unpaused_at,
                "written at {at}, before the unpause at {unpaused_at}"
            );
        }
    }
}

/// The collections' encoding thresholds are Redis's settings: CONFIG SET changes how large
/// a hash, set or sorted set grows packed (under the names before Redis 7 too), for later
/// writes; `list-max-listpack-size` is kept and shown (lists keep 8 KB nodes). A process of
/// its own: the thresholds are the whole process's, as Redis's are its server's.
#[test]
fn collections_follow_their_encoding_thresholds() {
    let daemon = Daemon::start(&["--port", "0"], &[]);
    let mut c = daemon.connect();
    let encoding = |c: &mut Client, key: &str| c.call(&["OBJECT", "ENCODING", key]);
    let set = |c: &mut Client, name: &str, value: &str| {
        assert_eq!(
            c.call(&["CONFIG", "SET", name, value]),
            Resp::ok(),
            "{name}"
        );
    };
    // Sorted sets: with no room in a listpack, the first member makes a skiplist.
    set(&mut c, "zset-max-ziplist-entries", "0");
    assert_eq!(
        c.call(&["CONFIG", "GET", "zset-max-listpack-entries"]),
        Resp::Array(vec![
            Resp::bulk("zset-max-listpack-entries"),
            Resp::bulk("0")
        ])
    );
    c.call(&["ZADD", "z", "1", "a"]);
    assert_eq!(encoding(&mut c, "z"), Resp::bulk("skiplist"));
    set(&mut c, "zset-max-listpack-entries", "128");
    set(&mut c, "zset-max-listpack-value", "4");
    c.call(&["ZADD", "z2", "1", "abcd"]);
    assert_eq!(encoding(&mut c, "z2"), Resp::bulk("listpack"));
    c.call(&["ZADD", "z2", "2", "abcde"]);
    assert_eq!(encoding(&mut c, "z2"), Resp::bulk("skiplist"));
    // Hashes: two fields fit, a third converts; a longer value fits under a larger limit
    // (a size, as Redis takes it).
    set(&mut c, "hash-max-listpack-entries", "2");
    c.call(&["HSET", "h", "a", "1", "b", "2"]);
    assert_eq!(encoding(&mut c, "h"), Resp::bulk("listpack"));
    c.call(&["HSET", "h", "c", "3"]);
    assert_eq!(encoding(&mut c, "h"), Resp::bulk("hashtable"));
    set(&mut c, "hash-max-ziplist-value", "1kb");
    assert_eq!(
        c.call(&["CONFIG", "GET", "hash-max-listpack-value"]),
        Resp::Array(vec![
            Resp::bulk("hash-max-listpack-value"),
            Resp::bulk("1024")
        ])
    );
    let long = "x".repeat(500);
    c.call(&["HSET", "h2", "f", &long]);
    assert_eq!(encoding(&mut c, "h2"), Resp::bulk("listpack"));
    // Sets: an intset of two, a listpack of one.
    set(&mut c, "set-max-intset-entries", "2");
    c.call(&["SADD", "s", "1", "2"]);
    assert_eq!(encoding(&mut c, "s"), Resp::bulk("intset"));
    c.call(&["SADD", "s", "3"]);
    assert_eq!(encoding(&mut c, "s"), Resp::bulk("hashtable"));
    set(&mut c, "set-max-listpack-entries", "1");
    c.call(&["SADD", "s2", "a"]);
    assert_eq!(encoding(&mut c, "s2"), Resp::bulk("listpack"));
    c.call(&["SADD", "s2", "b"]);
    assert_eq!(encoding(&mut c, "s2"), Resp::bulk("hashtable"));
    // Lists: kept and shown.
    set(&mut c, "list-max-ziplist-size", "5");
    assert_eq!(
        c.call(&["CONFIG", "GET", "list-max-listpack-size"]),
        Resp::Array(vec![Resp::bulk("list-max-listpack-size"), Resp::bulk("5")])
    );
    // What is there stays as it is; back to the defaults, new ones are packed again.
    set(&mut c, "hash-max-listpack-entries", "512");
    assert_eq!(encoding(&mut c, "h"), Resp::bulk("hashtable"));
    c.call(&["HSET", "h3", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(encoding(&mut c, "h3"), Resp::bulk("listpack"));
}

/// INFO clients counts, as Redis 7.2 does, the clients subscribed to anything, the clients
/// watching keys, the keys clients wait on (and those an XREADGROUP waits on, which their
/// deletion wakes), the blocked clients with a timeout; a single node has no cluster
/// connections.
#[test]
fn info_clients_counts_subscribers_watchers_and_blocking_keys() {
    let daemon = Daemon::start(&["--port", "0"], &[]);
    let mut admin = daemon.connect();
    let field = |admin: &mut Client, name: &str| -> Option<String> {
        let text = match admin.call(&["INFO", "clients"]) {
            Resp::Bulk(b) => String::from_utf8(b).unwrap(),
            r => panic!("INFO: {r:?}"),
        };
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_owned))
    };
    assert_eq!(field(&mut admin, "pubsub_clients").as_deref(), Some("0"));
    assert_eq!(
        field(&mut admin, "cluster_connections").as_deref(),
        Some("0")
    );
    assert_eq!(
        field(&mut admin, "clients_in_timeout_table").as_deref(),
        Some("0")
    );
    let mut sub = daemon.connect();
    let mut out = Vec::new();
    encode(&[b"SUBSCRIBE", b"ch"], &mut out);
    sub.send_raw(&out);
    assert!(matches!(sub.read(), Resp::Array(_)), "subscribed");
    let mut watcher = daemon.connect();
    assert_eq!(watcher.call(&["WATCH", "a", "b"]), Resp::ok());
    let mut blocker = daemon.connect();
    let mut out = Vec::new();
    encode(&[b"BLPOP", b"l1", b"l2", b"0"], &mut out);
    blocker.send_raw(&out);
    let seen = wait_until(Duration::from_secs(10), || {
        field(&mut admin, "total_blocking_keys").as_deref() == Some("2")
    });
    assert!(seen, "two keys waited on");
    // Waiting for ever is not in the timeout table; a timeout is.
    assert_eq!(
        field(&mut admin, "clients_in_timeout_table").as_deref(),
        Some("0")
    );
    let mut timed = daemon.connect();
    let mut out = Vec::new();
    encode(&[b"BLPOP", b"l3", b"100"], &mut out);
    timed.send_raw(&out);
    assert!(
        wait_until(Duration::from_secs(10), || {
            field(&mut admin, "clients_in_timeout_table").as_deref() == Some("1")
        }),
        "a client waits with a timeout"
    );
    assert_eq!(
        field(&mut admin, "total_blocking_keys_on_nokey").as_deref(),
        Some("0")
    );
    assert_eq!(
        admin.call(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]),
        Resp::ok()
    );
    let mut reader = daemon.connect();
    let mut out = Vec::new();
    encode(
        &[
            b"XREADGROUP",
            b"GROUP",
            b"g",
            b"c",
            b"BLOCK",
            b"0",
            b"STREAMS",
            b"s",
            b">",
        ],
        &mut out,
    );
    reader.send_raw(&out);
    assert!(
        wait_until(Duration::from_secs(10), || {
            field(&mut admin, "total_blocking_keys_on_nokey").as_deref() == Some("1")
        }),
        "a group reader waits on a key its deletion wakes"
    );
    assert_eq!(
        field(&mut admin, "total_blocking_keys").as_deref(),
        Some("4")
    );
    assert_eq!(admin.call(&["DEL", "s"]), Resp::Int(1));
    assert!(
        matches!(reader.read(), Resp::Error(_)),
        "woken by the deletion"
    );
    assert_eq!(admin.call(&["LPUSH", "l3", "y"]), Resp::Int(1));
    assert_eq!(
        timed.read(),
        Resp::Array(vec![Resp::bulk("l3"), Resp::bulk("y")])
    );
    assert_eq!(
        field(&mut admin, "clients_in_timeout_table").as_deref(),
        Some("0")
    );
    assert_eq!(
        field(&mut admin, "total_blocking_keys_on_nokey").as_deref(),
        Some("0")
    );
    assert_eq!(field(&mut admin, "pubsub_clients").as_deref(), Some("1"));
    assert_eq!(field(&mut admin, "watching_clients").as_deref(), Some("1"));
    assert_eq!(watcher.call(&["UNWATCH"]), Resp::ok());
    assert_eq!(field(&mut admin, "watching_clients").as_deref(), Some("0"));
    assert_eq!(admin.call(&["LPUSH", "l1", "x"]), Resp::Int(1));
    assert_eq!(
        blocker.read(),
        Resp::Array(vec![Resp::bulk("l1"), Resp::bulk("x")])
    );
    assert_eq!(
        field(&mut admin, "total_blocking_keys").as_deref(),
        Some("0")
    );
}

/// `maxmemory` below what the empty server itself holds (allocator statistics: a `shoald`
/// process), as `CONFIG SET maxmemory 1`: Redis's `used_memory` stays over the limit
/// whatever it evicts, so with a policy that evicts every key goes and commands that need
/// memory (SET, a script without `no-writes`, a write in a script) are answered OOM, while
/// reads, DEL and `no-writes` scripts run; the replies are Redis 7.0's.
#[test]
fn a_maxmemory_below_the_empty_servers_size_refuses_writes_as_redis_does() {
    let daemon = Daemon::start(&["--port", "0", "--set", "threads=1"], &[]);
    let mut c = daemon.connect();
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    assert_eq!(
        c.call(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        Resp::ok()
    );
    assert_eq!(c.call(&["SET", "a", "b"]), Resp::ok());
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "1"]), Resp::ok());
    assert_eq!(c.call(&["SET", "k", "v"]), Resp::Error(oom.into()));
    assert_eq!(c.call(&["DBSIZE"]), Resp::Int(0), "every key evicted");
    assert_eq!(c.call(&["GET", "a"]), Resp::Nil);
    assert_eq!(
        c.call(&["EVAL", "#!lua\nreturn 1", "0"]),
        Resp::Error(oom.into())
    );
    assert_eq!(
        c.call(&["EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"]),
        Resp::Error(format!(
            "{oom} script: ee5bed0f6963e93a14eebfb64f07c299c1b4313f, on @user_script:1."
        ))
    );
    assert_eq!(
        c.call(&["EVAL", "#!lua flags=no-writes\nreturn 2", "0"]),
        Resp::Int(2)
    );
    assert_eq!(c.call(&["DEL", "a"]), Resp::Int(0));
    assert_eq!(c.call(&["CONFIG", "SET", "maxmemory", "0"]), Resp::ok());
    assert_eq!(c.call(&["SET", "k", "v"]), Resp::ok());
    assert_eq!(c.call(&["GET", "k"]), Resp::bulk("v"));
}

/// Connections on the Unix sockets (`unixsocket`, `memcache-unixsocket`) are handed to the
/// workers like TCP ones (each worker serves some), answer there, and the files go when
/// SIGTERM stops the daemon.
#[test]
fn unix_socket_connections_are_served_by_the_workers() {
    let dir = std::env::temp_dir().join(format!("shoald-unix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (resp, mc) = (dir.join("r.sock"), dir.join("m.sock"));
    let set_resp = format!("unixsocket={}", resp.display());
    let set_mc = format!("memcache-unixsocket={}", mc.display());
    let mut daemon = Daemon::start(
        &[
            "--port",
            "0",
            "--set",
            "threads=2",
            "--set",
            &set_resp,
            "--set",
            &set_mc,
        ],
        &[],
    );
    daemon.wait_line(&format!("RESP listening on Unix socket {}", resp.display()));
    daemon.wait_line(&format!(
        "memcached protocol listening on Unix socket {}",
        mc.display()
    ));
    daemon.wait_line(
        "no requirepass: the RESP and memcached ports and Unix sockets accept any client",
    );
    let ask = |path: &std::path::Path, request: &[u8], end: &[u8]| {
        let mut s = std::os::unix::net::UnixStream::connect(path).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(end) {
            let n = s.read(&mut buf).expect("a reply within 10 s");
            assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        (s, got)
    };
    let clients: Vec<_> = (0..4)
        .map(|i| {
            let name = format!("CLIENT SETNAME unix{i}\r\n");
            ask(&resp, name.as_bytes(), b"+OK\r\n").0
        })
        .collect();
    let mut admin = daemon.connect();
    let threads = io_threads(&mut admin);
    let served: std::collections::HashSet<usize> =
        (0..4).map(|i| threads[&format!("unix{i}")]).collect();
    assert_eq!(
        served,
        [1, 2].into(),
        "both workers serve Unix clients: {threads:?}"
    );
    let (_, reply) = ask(&mc, b"set k 0 0 2\r\nhi\r\nget k\r\n", b"END\r\n");
    assert_eq!(reply, b"STORED\r\nVALUE k 0 2\r\nhi\r\nEND\r\n");
    assert_eq!(admin.call(&["GET", "k"]), Resp::bulk("hi"));
    drop(clients);
    daemon.signal("TERM");
    assert!(daemon.wait_exit(Duration::from_secs(20)).success());
    assert!(!resp.exists() && !mc.exists(), "the socket files stay");
    let _ = std::fs::remove_dir_all(&dir);
}
