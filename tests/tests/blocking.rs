//! Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP)
//! with a real client library: woken by a write from another connection, in the order the
//! clients blocked, at their timeout, never for a client that went away, answering at once
//! inside MULTI; in a cluster also through nodes that do not own the key, for longer than
//! one forwarded request may take.

use std::thread::JoinHandle;
use std::time::Duration;

use redis::Value;
use shoal_tests::{info_field, read_exact_by, send, wait_until, TestCluster, TestNode};

const WAIT: Duration = Duration::from_secs(10);

fn blocked(con: &mut redis::Connection) -> i64 {
    info_field(con, "blocked_clients").parse().unwrap()
}

/// Runs `args` on a connection of its own to `url`, in a thread (it blocks).
fn spawn(url: &str, args: &[&str]) -> JoinHandle<Value> {
    let h = spawn_result(url, args);
    std::thread::spawn(move || {
        h.join()
            .expect("client thread")
            .expect("blocking command answers")
    })
}

/// Joins a blocked client's thread, failing after `WAIT` instead of hanging.
fn answer(h: JoinHandle<Value>) -> Value {
    assert!(
        wait_until(WAIT, || h.is_finished()),
        "the blocked client was not served"
    );
    h.join().expect("client thread")
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn array(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| bulk(s)).collect())
}

fn run(con: &mut redis::Connection, line: &str) -> Value {
    let mut parts = line.split(' ');
    let mut cmd = redis::cmd(parts.next().unwrap());
    for a in parts {
        cmd.arg(a);
    }
    cmd.query(con).unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn blocked_clients_are_served_in_the_order_they_blocked() {
    let node = TestNode::start();
    let mut admin = node.client();
    let mut waiting = Vec::new();
    for i in 0..3 {
        waiting.push(spawn(&node.url(), &["BLPOP", "q", "other", "10"]));
        assert!(wait_until(WAIT, || blocked(&mut admin) == i + 1));
    }
    // One push of three elements serves the three clients, first blocked first served.
    run(&mut admin, "RPUSH q a b c");
    let got: Vec<Value> = waiting.into_iter().map(answer).collect();
    assert_eq!(
        got,
        [array(&["q", "a"]), array(&["q", "b"]), array(&["q", "c"])]
    );
    assert_eq!(blocked(&mut admin), 0);
    assert_eq!(run(&mut admin, "EXISTS q"), Value::Int(0));

    // A push of one element serves one client; the next push the next one.
    let first = spawn(&node.url(), &["BRPOP", "r", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    let second = spawn(&node.url(), &["BRPOP", "r", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 2));
    run(&mut admin, "LPUSH r x");
    assert_eq!(answer(first), array(&["r", "x"]));
    assert!(
        wait_until(WAIT, || blocked(&mut admin) == 1),
        "the second still waits"
    );
    run(&mut admin, "LPUSH r y");
    assert_eq!(answer(second), array(&["r", "y"]));
}

/// A blocked client's next commands wait for it, as in Redis: a pipelined push after a
/// BLPOP does not feed the BLPOP (it times out first), and commands sent while it waits are
/// answered once it is served, without more input.
#[test]
fn commands_behind_a_blocked_one_wait_for_it() {
    let node = TestNode::start();
    let mut raw = node.raw();
    send(
        &mut raw,
        b"*3\r\n$5\r\nBLPOP\r\n$1\r\nk\r\n$3\r\n0.2\r\n*3\r\n$5\r\nRPUSH\r\n$1\r\nk\r\n$1\r\nx\r\n",
    );
    let want = b"*-1\r\n:1\r\n";
    assert_eq!(read_exact_by(&mut raw, want.len(), WAIT), want);

    // Blocked, then a PING on the same connection: both answered once a push arrives.
    let mut admin = node.client();
    run(&mut admin, "DEL k");
    send(&mut raw, b"*3\r\n$5\r\nBLPOP\r\n$1\r\nk\r\n$1\r\n0\r\n");
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    send(&mut raw, b"*1\r\n$4\r\nPING\r\n");
    run(&mut admin, "RPUSH k y");
    let want = b"*2\r\n$1\r\nk\r\n$1\r\ny\r\n+PONG\r\n";
    assert_eq!(read_exact_by(&mut raw, want.len(), WAIT), want);
}

/// A key that becomes another type keeps its waiters blocked (Redis's behaviour), and a
/// wake-up one waiter cannot use goes on to the next.
#[test]
fn waiters_stay_blocked_through_another_type_and_pass_wakeups_on() {
    let node = TestNode::start();
    let mut admin = node.client();
    let h = spawn(&node.url(), &["BLPOP", "t", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    run(&mut admin, "SET t string");
    run(&mut admin, "DEL t");
    run(&mut admin, "RPUSH t x");
    assert_eq!(
        answer(h),
        array(&["t", "x"]),
        "no WRONGTYPE for the SET in between"
    );

    // A BZPOPMIN waiter first, a BLPOP waiter second: a list push serves the second.
    let z = spawn(&node.url(), &["BZPOPMIN", "mixed", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    let l = spawn(&node.url(), &["BLPOP", "mixed", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 2));
    run(&mut admin, "RPUSH mixed 1");
    assert_eq!(answer(l), array(&["mixed", "1"]));
    run(&mut admin, "DEL mixed");
    run(&mut admin, "ZADD mixed 2 m");
    assert_eq!(answer(z), array(&["mixed", "m", "2"]));
}

#[test]
fn every_blocking_command_is_woken_by_the_write_it_waits_for() {
    let node = TestNode::start();
    let mut admin = node.client();
    let cases: &[(&[&str], &str, Value)] = &[
        (
            &["BRPOP", "l1", "l2", "10"],
            "RPUSH l2 a b",
            array(&["l2", "b"]),
        ),
        (
            &["BLMOVE", "src", "dst", "LEFT", "RIGHT", "10"],
            "RPUSH src x",
            bulk("x"),
        ),
        (
            &["BRPOPLPUSH", "src2", "dst2", "10"],
            "LPUSH src2 y",
            bulk("y"),
        ),
        (
            &["BLMPOP", "10", "2", "m1", "m2", "RIGHT", "COUNT", "2"],
            "RPUSH m2 1 2 3",
            Value::Array(vec![bulk("m2"), array(&["3", "2"])]),
        ),
        // Written by another command than a push: LMOVE into the key.
        (
            &["BLPOP", "moved", "10"],
            "LMOVE m2 moved LEFT LEFT",
            array(&["moved", "1"]),
        ),
        (
            &["BZPOPMIN", "z1", "z2", "10"],
            "ZADD z2 5 a 1 b",
            array(&["z2", "b", "1"]),
        ),
        (
            &["BZPOPMAX", "z3", "10"],
            "ZADD z3 1 a 2 b",
            array(&["z3", "b", "2"]),
        ),
        (
            &["BZMPOP", "10", "1", "z4", "MIN", "COUNT", "5"],
            "ZADD z4 1 a",
            Value::Array(vec![bulk("z4"), Value::Array(vec![array(&["a", "1"])])]),
        ),
        // A STORE form writes the key too.
        (
            &["BZPOPMIN", "z5", "10"],
            "ZUNIONSTORE z5 1 z3",
            array(&["z5", "a", "1"]),
        ),
    ];
    for (blocking, write, want) in cases {
        let h = spawn(&node.url(), blocking);
        assert!(
            wait_until(WAIT, || blocked(&mut admin) == 1),
            "{blocking:?} blocks"
        );
        run(&mut admin, write);
        assert_eq!(&answer(h), want, "{blocking:?} after {write}");
        assert_eq!(blocked(&mut admin), 0);
    }
    assert_eq!(run(&mut admin, "LRANGE dst 0 -1"), array(&["x"]));
    assert_eq!(run(&mut admin, "LRANGE dst2 0 -1"), array(&["y"]));
}

#[test]
fn a_timeout_answers_nil_and_a_client_that_left_takes_nothing() {
    let node = TestNode::start();
    let mut con = node.client();
    assert_eq!(run(&mut con, "BLPOP none 0.05"), Value::Nil);
    assert_eq!(run(&mut con, "BLMOVE none d LEFT LEFT 0.05"), Value::Nil);
    assert_eq!(run(&mut con, "BZMPOP 0.05 1 none MIN"), Value::Nil);
    // Something to pop: no wait at all.
    run(&mut con, "RPUSH ready 1");
    assert_eq!(run(&mut con, "BLPOP ready 0"), array(&["ready", "1"]));
    // Another type: WRONGTYPE at once, as Redis.
    run(&mut con, "SET s x");
    let e = redis::cmd("BLPOP")
        .arg("s")
        .arg(0)
        .query::<Value>(&mut con)
        .unwrap_err();
    assert_eq!(e.code(), Some("WRONGTYPE"));
    // Inside a transaction a blocking command answers at once.
    let tx: Value = redis::pipe()
        .atomic()
        .cmd("BLPOP")
        .arg("none")
        .arg(0)
        .cmd("BZPOPMIN")
        .arg("none")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(tx, Value::Array(vec![Value::Nil, Value::Nil]));

    // A client that goes away while blocked leaves the queue and pops nothing.
    let mut raw = node.raw();
    send(&mut raw, b"*3\r\n$5\r\nBLPOP\r\n$4\r\ngone\r\n$1\r\n0\r\n");
    assert!(wait_until(WAIT, || blocked(&mut con) == 1));
    drop(raw);
    assert!(
        wait_until(WAIT, || blocked(&mut con) == 0),
        "the wait was dropped"
    );
    run(&mut con, "RPUSH gone x");
    assert_eq!(run(&mut con, "LRANGE gone 0 -1"), array(&["x"]));

    // So does one that CLIENT KILL closes.
    let mut victim = node.client();
    run(&mut victim, "CLIENT SETNAME victim");
    let id = run(&mut victim, "CLIENT ID");
    let waiting = std::thread::spawn(move || {
        redis::cmd("BLPOP")
            .arg("killed")
            .arg(0)
            .query::<Value>(&mut victim)
            .is_err()
    });
    assert!(wait_until(WAIT, || blocked(&mut con) == 1));
    let Value::Int(id) = id else { panic!("{id:?}") };
    assert_eq!(
        run(&mut con, &format!("CLIENT KILL ID {id}")),
        Value::Int(1)
    );
    assert!(wait_until(WAIT, || waiting.is_finished()));
    assert!(
        waiting.join().unwrap(),
        "the killed client got an error, no element"
    );
    assert_eq!(blocked(&mut con), 0);
    run(&mut con, "RPUSH killed x");
    assert_eq!(run(&mut con, "LLEN killed"), Value::Int(1));
}

/// Blocks a named client on `key` in a thread; returns its id and the thread, once it waits.
fn blocked_client(
    url: &str,
    admin: &mut redis::Connection,
    key: &str,
) -> (i64, JoinHandle<redis::RedisResult<Value>>) {
    let mut con = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .unwrap();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut con).unwrap();
    let key = key.to_string();
    let h =
        std::thread::spawn(move || redis::cmd("BLPOP").arg(key).arg(0).query::<Value>(&mut con));
    assert!(
        wait_until(WAIT, || {
            let list: String = redis::cmd("CLIENT").arg("LIST").query(admin).unwrap();
            list.lines()
                .any(|l| l.starts_with(&format!("id={id} ")) && l.contains(" flags=b "))
        }),
        "CLIENT LIST shows the client blocked"
    );
    (id, h)
}

#[test]
fn client_unblock_ends_a_wait_as_a_timeout_or_an_error() {
    let node = TestNode::start();
    let mut admin = node.client();
    assert_eq!(run(&mut admin, "CLIENT UNBLOCK 999999"), Value::Int(0));
    let (id, h) = blocked_client(&node.url(), &mut admin, "u");
    assert_eq!(
        run(&mut admin, &format!("CLIENT UNBLOCK {id}")),
        Value::Int(1)
    );
    assert!(wait_until(WAIT, || h.is_finished()));
    assert_eq!(h.join().unwrap().unwrap(), Value::Nil, "as a timeout");
    let (id, h) = blocked_client(&node.url(), &mut admin, "u");
    assert_eq!(
        run(&mut admin, &format!("CLIENT UNBLOCK {id} ERROR")),
        Value::Int(1)
    );
    assert!(wait_until(WAIT, || h.is_finished()));
    let e = h.join().unwrap().unwrap_err();
    assert_eq!(e.code(), Some("UNBLOCKED"), "{e}");
    assert_eq!(blocked(&mut admin), 0);
    // Counted as Redis counts it: an error reply, and a failed call of BLPOP.
    let info: String = redis::cmd("INFO")
        .arg("errorstats")
        .query(&mut admin)
        .unwrap();
    assert!(info.contains("errorstat_UNBLOCKED:count=1"), "{info}");
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut admin)
        .unwrap();
    let blpop = info.lines().find(|l| l.starts_with("cmdstat_blpop:"));
    assert!(
        blpop.is_some_and(|l| l.contains("failed_calls=1")),
        "{info}"
    );
    let e = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(id)
        .arg("LATER")
        .query::<Value>(&mut admin)
        .unwrap_err();
    assert!(
        e.to_string().contains("reason should be TIMEOUT or ERROR"),
        "{e}"
    );
    // Nothing was popped meanwhile.
    run(&mut admin, "RPUSH u x");
    assert_eq!(run(&mut admin, "LLEN u"), Value::Int(1));
}

#[test]
fn a_client_in_a_numbered_database_waits_for_its_own_databases_key() {
    let node = TestNode::start();
    let mut db0 = node.client();
    let url = format!("{}1", node.url());
    let h = spawn(&url, &["BLPOP", "k", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut db0) == 1));
    run(&mut db0, "RPUSH k in-db-0");
    assert_eq!(
        blocked(&mut db0),
        1,
        "a push to database 0 wakes nobody in database 1"
    );
    let mut db1 = redis::Client::open(url.as_str())
        .and_then(|c| c.get_connection())
        .unwrap();
    run(&mut db1, "RPUSH k in-db-1");
    assert_eq!(answer(h), array(&["k", "in-db-1"]));
    assert_eq!(run(&mut db0, "LRANGE k 0 -1"), array(&["in-db-0"]));
    // MOVE from database 0 wakes a waiter of database 1.
    let h = spawn(&url, &["BLPOP", "k", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut db0) == 1));
    assert_eq!(run(&mut db0, "MOVE k 1"), Value::Int(1));
    assert_eq!(answer(h), array(&["k", "in-db-0"]));
    // So does SWAPDB, which brings database 0's list into database 1.
    let h = spawn(&url, &["BLPOP", "swapped", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut db0) == 1));
    run(&mut db0, "RPUSH swapped s");
    assert_eq!(run(&mut db0, "SWAPDB 0 1"), Value::Okay);
    assert_eq!(answer(h), array(&["swapped", "s"]));
}

fn forwarded(con: &mut redis::Connection) -> u64 {
    info_field(con, "shoal_forwarded").parse().unwrap()
}

#[test]
fn in_a_cluster_a_client_blocked_on_any_node_is_woken_by_a_push_through_any_other() {
    // A short inter-node timeout: a forwarded wait is cut into attempts of 150 ms.
    let c = TestCluster::start(3, |cfg| cfg.cluster_timeout_ms = 300);
    let key = (0..)
        .map(|i| format!("queue:{i}"))
        .find(|k| c.owner_index(k) == 1)
        .unwrap();
    let mut n0 = c.members[0].client();
    let mut n1 = c.members[1].client();
    let mut n2 = c.members[2].client();

    // Blocked through n0, which forwards to the owner n1, for longer than one attempt.
    let before = forwarded(&mut n0);
    let h = spawn(&c.members[0].url(), &["BLPOP", &key, "10"]);
    assert!(
        wait_until(WAIT, || forwarded(&mut n0) >= before + 3),
        "the wait goes on past the first forwarded attempt"
    );
    assert!(!h.is_finished());
    // Pushed through n2: the owner n1 serves the waiting client of n0.
    let _: i64 = redis::cmd("RPUSH")
        .arg(&key)
        .arg("v")
        .query(&mut n2)
        .unwrap();
    assert_eq!(answer(h), array(&[&key, "v"]));
    let len: i64 = redis::cmd("LLEN").arg(&key).query(&mut n1).unwrap();
    assert_eq!(len, 0, "popped at the owner, once");

    // Blocked on the owner itself, pushed through a node that forwards the push.
    let h = spawn(&c.members[1].url(), &["BZPOPMAX", &key, "10"]);
    assert!(wait_until(WAIT, || blocked(&mut n1) == 1));
    let _: i64 = redis::cmd("ZADD")
        .arg(&key)
        .arg(3)
        .arg("m")
        .query(&mut n0)
        .unwrap();
    assert_eq!(answer(h), array(&[&key, "m", "3"]));

    // CLIENT UNBLOCK reaches a client whose wait is forwarded, at the end of an attempt.
    let (id, h) = blocked_client(&c.members[2].url(), &mut n2, &key);
    assert_eq!(
        run(&mut n2, &format!("CLIENT UNBLOCK {id} ERROR")),
        Value::Int(1)
    );
    assert!(wait_until(WAIT, || h.is_finished()));
    assert_eq!(h.join().unwrap().unwrap_err().code(), Some("UNBLOCKED"));

    // A timeout through a non-owner answers nil after the client's timeout, not an attempt's.
    let started = std::time::Instant::now();
    let v: Value = redis::cmd("BLPOP")
        .arg(&key)
        .arg(0.4)
        .query(&mut n2)
        .unwrap();
    assert_eq!(v, Value::Nil);
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    // The pops replicated: no copy still holds the key.
    for m in &c.members {
        let n: i64 = redis::cmd("CLUSTER")
            .arg("HASKEY")
            .arg(&key)
            .query(&mut m.client())
            .unwrap();
        assert_eq!(n, 0, "{}", m.name);
    }
}

/// kombu's consumer lost a message when it reconnected: its BRPOP, forwarded by a node that
/// does not own the queue, went on waiting at the owner after the client had gone, popped
/// the next message for it, and the reply was dropped. Now what such an attempt pops is put
/// back (a list's elements at the end they left, a sorted set's members with `ZADD NX`).
#[test]
fn a_pop_for_a_client_that_went_away_through_a_non_owner_is_put_back() {
    // Attempts of 5 s: the owner is still waiting for the client when the push comes.
    let c = TestCluster::start(3, |cfg| cfg.cluster_timeout_ms = 20_000);
    let list = (0..)
        .map(|i| format!("q:{i}"))
        .find(|k| c.owner_index(k) == 1)
        .unwrap();
    let zset = (0..)
        .map(|i| format!("z:{i}"))
        .find(|k| c.owner_index(k) == 1)
        .unwrap();
    let mut n0 = c.members[0].client();
    let mut n1 = c.members[1].client();
    let mut n2 = c.members[2].client();
    run(&mut n2, &format!("RPUSH {list} old"));
    let waits = [
        format!(
            "*3\r\n$5\r\nBRPOP\r\n${}\r\n{list}\r\n$1\r\n0\r\n",
            list.len()
        ),
        // In RESP3, where the popped score is a double.
        format!(
            "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*3\r\n$8\r\nBZPOPMIN\r\n${}\r\n{zset}\r\n$1\r\n0\r\n",
            zset.len()
        ),
    ];
    for (key, wait) in [(&list, &waits[0]), (&zset, &waits[1])] {
        // BRPOP takes "old" at once; the next one waits.
        if key == &list {
            assert_eq!(
                run(&mut n0, &format!("BRPOP {list} 0")),
                array(&[&list, "old"])
            );
        }
        let before = forwarded(&mut n0);
        let mut raw = std::net::TcpStream::connect(c.members[0].addr).unwrap();
        send(&mut raw, wait.as_bytes());
        assert!(
            wait_until(WAIT, || blocked(&mut n0) == 1
                && forwarded(&mut n0) > before),
            "the client waits at n0, its attempt forwarded to the owner n1"
        );
        drop(raw);
        assert!(
            wait_until(WAIT, || blocked(&mut n0) == 0),
            "n0 saw the client go"
        );
    }
    run(&mut n2, &format!("RPUSH {list} a b"));
    run(&mut n2, &format!("ZADD {zset} 1.5 m 2 n"));
    assert!(
        wait_until(WAIT, || info_field(&mut n0, "shoal_blocked_pops_put_back")
            == "2"),
        "both attempts popped for a client that was gone, and n0 put it back"
    );
    // BRPOP took "b" from the right: it is back there, after "a".
    assert_eq!(
        run(&mut n1, &format!("LRANGE {list} 0 -1")),
        array(&["a", "b"])
    );
    assert_eq!(
        run(&mut n1, &format!("ZRANGE {zset} 0 -1 WITHSCORES")),
        array(&["m", "1.5", "n", "2"])
    );
}

/// As in Redis, the clients a write wakes are served before the write answers: once
/// `LPUSH src e` has replied, a BRPOPLPUSH blocked on `src` has moved `e` to `dst`, so the
/// writer's next command (pipelined or not) sees `dst` with it and `src` empty. A chain
/// (the moved element wakes a client blocked on `dst`) is served in the same step.
#[test]
fn a_write_answers_after_the_clients_it_woke_were_served() {
    let node = TestNode::start();
    let mut admin = node.client();
    for round in 0..100 {
        let mover = spawn(&node.url(), &["BRPOPLPUSH", "src", "dst", "10"]);
        assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
        if round % 2 == 0 {
            assert_eq!(run(&mut admin, "LPUSH src e"), Value::Int(1));
            assert_eq!(run(&mut admin, "LLEN dst"), Value::Int(1), "round {round}");
            assert_eq!(run(&mut admin, "LLEN src"), Value::Int(0), "round {round}");
        } else {
            // In one pipeline.
            let got: Vec<Value> = redis::pipe()
                .cmd("LPUSH")
                .arg("src")
                .arg("e")
                .cmd("LLEN")
                .arg("dst")
                .cmd("LLEN")
                .arg("src")
                .query(&mut admin)
                .unwrap();
            assert_eq!(
                got,
                [Value::Int(1), Value::Int(1), Value::Int(0)],
                "round {round}"
            );
        }
        assert_eq!(answer(mover), bulk("e"));
        run(&mut admin, "DEL dst");
    }
    // A chain: a BLMOVE from a to b, and a BLPOP on b behind it.
    let mover = spawn(&node.url(), &["BLMOVE", "a", "b", "LEFT", "LEFT", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    let popper = spawn(&node.url(), &["BLPOP", "b", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 2));
    assert_eq!(run(&mut admin, "RPUSH a x"), Value::Int(1));
    assert_eq!(run(&mut admin, "EXISTS a b"), Value::Int(0), "both served");
    assert_eq!(answer(mover), bulk("x"));
    assert_eq!(answer(popper), array(&["b", "x"]));
}

/// The same in a cluster: the client blocked at the key's owner, the writer on another
/// node, which forwards the push; the owner serves the blocked client before it answers.
#[test]
fn in_a_cluster_a_write_answers_after_the_clients_it_woke_were_served() {
    let cluster = TestCluster::start(3, |_| {});
    let mut writer = cluster.members[0].client();
    for round in 0..30 {
        let src = (0..)
            .map(|i| format!("{{q{round}.{i}}}src"))
            .find(|k| cluster.owner_index(k) != 0)
            .unwrap();
        let dst = src.replace("src", "dst");
        let owner = &cluster.members[cluster.owner_index(&src)];
        let mut at_owner = owner.client();
        let mover = spawn(&owner.url(), &["BRPOPLPUSH", &src, &dst, "10"]);
        assert!(wait_until(WAIT, || blocked(&mut at_owner) == 1));
        let got: Vec<Value> = redis::pipe()
            .cmd("LPUSH")
            .arg(&src)
            .arg("e")
            .cmd("LLEN")
            .arg(&dst)
            .query(&mut writer)
            .unwrap();
        assert_eq!(got, [Value::Int(1), Value::Int(1)], "round {round}");
        assert_eq!(answer(mover), bulk("e"));
    }
}

/// A write right behind a CLIENT KILL or CLIENT UNBLOCK (one pipeline) leaves the element:
/// the writer does not serve a client that is leaving (Redis keeps it too), and the
/// unblocked one answers nil.
#[test]
fn a_write_right_after_kill_or_unblock_pops_nothing_for_that_client() {
    let node = TestNode::start();
    let mut admin = node.client();
    for round in 0..20 {
        let (id, h) = blocked_client(&node.url(), &mut admin, "gone");
        let got: Vec<Value> = redis::pipe()
            .cmd("CLIENT")
            .arg("UNBLOCK")
            .arg(id)
            .cmd("RPUSH")
            .arg("gone")
            .arg("x")
            .cmd("LLEN")
            .arg("gone")
            .query(&mut admin)
            .unwrap();
        assert_eq!(
            got,
            [Value::Int(1), Value::Int(1), Value::Int(1)],
            "round {round}"
        );
        assert!(wait_until(WAIT, || h.is_finished()));
        assert_eq!(h.join().unwrap().unwrap(), Value::Nil, "round {round}");
        run(&mut admin, "DEL gone");

        let (id, h) = blocked_client(&node.url(), &mut admin, "gone");
        let got: Vec<Value> = redis::pipe()
            .cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(id)
            .cmd("RPUSH")
            .arg("gone")
            .arg("y")
            .cmd("LLEN")
            .arg("gone")
            .query(&mut admin)
            .unwrap();
        assert_eq!(
            got,
            [Value::Int(1), Value::Int(1), Value::Int(1)],
            "round {round}"
        );
        assert!(wait_until(WAIT, || h.is_finished()));
        assert!(
            h.join().unwrap().is_err(),
            "the killed client's connection closed"
        );
        run(&mut admin, "DEL gone");
    }
}

/// SWAPDB that brings a list to clients blocked on it serves them before its reply, in the
/// order they blocked, also a client blocked on several keys (Redis's behaviour).
#[test]
fn swapdb_serves_the_clients_it_brings_a_list_to() {
    let node = TestNode::start();
    let mut admin = node.client();
    run(&mut admin, "SELECT 1");
    run(&mut admin, "RPUSH k1 a b");
    run(&mut admin, "SELECT 0");
    let both = spawn(&node.url(), &["BLPOP", "k1", "k2", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    let one = spawn(&node.url(), &["BLPOP", "k1", "10"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 2));
    let got: Vec<Value> = redis::pipe()
        .cmd("SWAPDB")
        .arg(0)
        .arg(1)
        .cmd("LPUSH")
        .arg("k2")
        .arg("x")
        .cmd("EXISTS")
        .arg("k1")
        .query(&mut admin)
        .unwrap();
    assert_eq!(got, [Value::Okay, Value::Int(1), Value::Int(0)]);
    assert_eq!(answer(both), array(&["k1", "a"]));
    assert_eq!(answer(one), array(&["k1", "b"]));
    assert_eq!(run(&mut admin, "LLEN k2"), Value::Int(1));
}

/// While clients are paused the keyspace stays as it is, as in Redis 7: a key past its TTL
/// reads as gone (GET, EXISTS, RANDOMKEY) but is not removed or counted in `expired_keys`
/// until the pause ends (Redis's `unit/pause` "active and passive expires are skipped during
/// client pause", whose transaction this repeats: the keys cannot expire before the pause).
#[test]
fn a_client_pause_keeps_expired_keys_until_it_ends() {
    let node = TestNode::start();
    let mut admin = node.client();
    let expired =
        |con: &mut redis::Connection| -> u64 { info_field(con, "expired_keys").parse().unwrap() };
    let before = expired(&mut admin);
    let _: Value = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("foo{t}")
        .arg("bar")
        .arg("PX")
        .arg(10)
        .cmd("SET")
        .arg("bar{t}")
        .arg("foo")
        .arg("PX")
        .arg(10)
        .cmd("CLIENT")
        .arg("PAUSE")
        .arg(60000)
        .arg("WRITE")
        .query(&mut admin)
        .unwrap();
    assert!(wait_until(WAIT, || run(&mut admin, "GET foo{t}")
        == Value::Nil
        && run(&mut admin, "GET bar{t}") == Value::Nil));
    assert_eq!(run(&mut admin, "EXISTS foo{t}"), Value::Int(0));
    assert_eq!(run(&mut admin, "RANDOMKEY"), Value::Nil);
    assert_eq!(run(&mut admin, "DBSIZE"), Value::Int(2), "still stored");
    assert_eq!(expired(&mut admin), before, "none expired");
    assert_eq!(run(&mut admin, "CLIENT UNPAUSE"), Value::Okay);
    assert_eq!(run(&mut admin, "GET foo{t}"), Value::Nil);
    assert_eq!(run(&mut admin, "GET bar{t}"), Value::Nil);
    assert_eq!(expired(&mut admin), before + 2);
    assert_eq!(run(&mut admin, "DBSIZE"), Value::Int(0));
}

/// CLIENT PAUSE WRITE holds writes and `may-replicate` commands (PUBLISH, PFCOUNT, an EXEC
/// with a write, a script not declared `no-writes`) until CLIENT UNPAUSE, counted as
/// blocked, while reads, read-only scripts and commands with
/// errors answer at once; CLIENT PAUSE ALL holds everything until its end, which comes by
/// itself (Redis 7's `unit/pause` cases).
#[test]
fn client_pause_holds_writes_until_unpause_or_its_end() {
    let node = TestNode::start();
    let mut admin = node.client();
    run(&mut admin, "SET foo before");
    run(&mut admin, "PFADD hll a");
    let library = "#!lua name=lib\nredis.register_function{function_name='ro', \
                   callback=function() return 'ro' end, flags={'no-writes'}}";
    let loaded: Value = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(library)
        .query(&mut admin)
        .unwrap();
    assert_eq!(loaded, bulk("lib"));
    assert_eq!(run(&mut admin, "CLIENT PAUSE 60000 WRITE"), Value::Okay);
    assert_eq!(run(&mut admin, "GET foo"), bulk("before"), "reads go on");
    assert_eq!(
        redis::cmd("SET").arg("foo").query::<Value>(&mut admin).unwrap_err().to_string(),
        "An error was signalled by the server - ResponseError: wrong number of arguments for 'set' command",
        "an error answers at once"
    );
    let set = spawn(&node.url(), &["SET", "foo", "after"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    let publish = spawn(&node.url(), &["PUBLISH", "ch", "m"]);
    let pfcount = spawn(&node.url(), &["PFCOUNT", "hll"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 3));
    // A script may write unless it says otherwise (Redis 7's `unit/pause` cases).
    let script = spawn(&node.url(), &["EVAL", "return 1", "0"]);
    let shebang = spawn(&node.url(), &["EVAL", "#!lua\nreturn 2", "0"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 5));
    let read_only: Value = redis::cmd("EVAL")
        .arg("#!lua flags=no-writes\nreturn redis.call('get', 'foo')")
        .arg(0)
        .query(&mut admin)
        .unwrap();
    assert_eq!(read_only, bulk("before"));
    assert_eq!(run(&mut admin, "FCALL ro 0"), bulk("ro"));
    let eval_ro: Value = redis::cmd("EVAL_RO")
        .arg("return 3")
        .arg(0)
        .query(&mut admin)
        .unwrap();
    assert_eq!(eval_ro, Value::Int(3));
    assert_eq!(
        run(&mut admin, "GET foo"),
        bulk("before"),
        "the write waits"
    );
    // A transaction with a write waits at EXEC; one that only reads does not.
    let url = node.url();
    let tx = std::thread::spawn(move || {
        let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
        redis::pipe()
            .atomic()
            .cmd("INCR")
            .arg("n")
            .query::<Value>(&mut con)
            .unwrap()
    });
    assert!(wait_until(WAIT, || blocked(&mut admin) == 6));
    let reads: Value = redis::pipe()
        .atomic()
        .cmd("GET")
        .arg("foo")
        .query(&mut admin)
        .unwrap();
    assert_eq!(reads, Value::Array(vec![bulk("before")]));
    assert_eq!(run(&mut admin, "CLIENT UNPAUSE"), Value::Okay);
    assert_eq!(answer(set), Value::Okay);
    assert_eq!(answer(publish), Value::Int(0));
    assert_eq!(answer(pfcount), Value::Int(1));
    assert_eq!(answer(script), Value::Int(1));
    assert_eq!(answer(shebang), Value::Int(2));
    assert!(wait_until(WAIT, || tx.is_finished()));
    assert_eq!(tx.join().unwrap(), Value::Array(vec![Value::Int(1)]));
    assert_eq!(blocked(&mut admin), 0);

    // ALL holds reads too, and ends by itself.
    assert_eq!(run(&mut admin, "CLIENT PAUSE 300 ALL"), Value::Okay);
    let get = spawn(&node.url(), &["GET", "foo"]);
    assert_eq!(answer(get), bulk("after"), "answered once the pause ended");
    let e = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(10)
        .arg("SOME")
        .query::<Value>(&mut admin)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("CLIENT PAUSE mode must be WRITE or ALL"),
        "{e}"
    );
}

/// Runs `args` on a connection of its own to `url`, in a thread, keeping an error reply.
fn spawn_result(url: &str, args: &[&str]) -> JoinHandle<redis::RedisResult<Value>> {
    let url = url.to_string();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        let mut con = redis::Client::open(url)
            .and_then(|c| c.get_connection())
            .expect("connects");
        let mut cmd = redis::cmd(&args[0]);
        for a in &args[1..] {
            cmd.arg(a);
        }
        cmd.query(&mut con)
    })
}

/// Consumer `c` of group `g` waiting for new entries of `key`, for ever.
fn group_reader(url: &str, key: &str) -> JoinHandle<redis::RedisResult<Value>> {
    spawn_result(
        url,
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "0",
            "STREAMS",
            key,
            ">",
        ],
    )
}

/// XREAD's and XREADGROUP's reply for one key and its entries (id, field, value).
fn stream_reply(key: &str, entries: &[(&str, &str, &str)]) -> Value {
    let entries = entries
        .iter()
        .map(|(id, f, v)| Value::Array(vec![bulk(id), array(&[f, v])]))
        .collect();
    Value::Array(vec![Value::Array(vec![bulk(key), Value::Array(entries)])])
}

/// A blocking command that waited is one call in INFO commandstats, however many times it
/// tried (Redis's test suite counted three), and its error at the end is the call's failure.
#[test]
fn a_command_that_waited_is_one_call() {
    let node = TestNode::start();
    let mut admin = node.client();
    run(&mut admin, "CONFIG RESETSTAT");
    run(&mut admin, "XGROUP CREATE s g $ MKSTREAM");
    let list = spawn(&node.url(), &["BLPOP", "q", "0"]);
    let group = group_reader(&node.url(), "s");
    assert!(wait_until(WAIT, || blocked(&mut admin) == 2));
    // A write to another key of the list's does not serve it, but wakes it to look.
    run(&mut admin, "RPUSH other x");
    run(&mut admin, "XADD elsewhere * f v");
    run(&mut admin, "RPUSH q a");
    answer(list);
    run(&mut admin, "XGROUP DESTROY s g");
    assert!(wait_until(WAIT, || group.is_finished()));
    assert!(group.join().unwrap().is_err());
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut admin)
        .unwrap();
    let row = |name: &str| {
        stats
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
            .to_string()
    };
    assert!(row("blpop").contains(":calls=1,"), "{}", row("blpop"));
    let xreadgroup = row("xreadgroup");
    assert!(
        xreadgroup.contains(":calls=1,") && xreadgroup.ends_with("failed_calls=1"),
        "{xreadgroup}"
    );
}

/// A flush ends a group reader's wait with NOGROUP, as DEL does (Redis 7.2's
/// `signalDeletedKeyAsReady`): FLUSHALL, FLUSHDB of a numbered database, Memcached's
/// flush_all. A list reader waits on, and takes what comes after the flush.
#[test]
fn a_flush_ends_the_wait_of_group_readers() {
    let node = TestNode::with(|c| c.memcache_port = Some(0));
    let mut admin = node.client();
    type Flush<'a> = &'a dyn Fn(&mut redis::Connection);
    let flushes: [(&str, Flush); 4] = [
        ("", &|c| {
            run(c, "FLUSHALL");
        }),
        ("9", &|c| {
            run(c, "SELECT 9");
            run(c, "FLUSHDB");
            run(c, "SELECT 0");
        }),
        ("", &|_| {
            let mut s = std::net::TcpStream::connect(node.memcache_addr.unwrap()).unwrap();
            send(&mut s, b"flush_all\r\n");
            assert_eq!(read_exact_by(&mut s, 4, WAIT), b"OK\r\n");
        }),
        // A delayed one, carried out by the node's cron a second later.
        ("", &|_| {
            let mut s = std::net::TcpStream::connect(node.memcache_addr.unwrap()).unwrap();
            send(&mut s, b"flush_all 1\r\n");
            assert_eq!(read_exact_by(&mut s, 4, WAIT), b"OK\r\n");
        }),
    ];
    for (db, flush) in flushes {
        let url = format!("{}{db}", node.url());
        let mut con = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .unwrap();
        run(&mut con, "XGROUP CREATE ms g $ MKSTREAM");
        let group = group_reader(&url, "ms");
        let list = spawn(&url, &["BLPOP", "q", "0"]);
        assert!(wait_until(WAIT, || blocked(&mut admin) == 2));
        flush(&mut admin);
        assert!(wait_until(WAIT, || group.is_finished()), "flush {db:?}");
        let e = group.join().unwrap().unwrap_err();
        assert_eq!(e.code(), Some("NOGROUP"), "{e}");
        assert!(!list.is_finished());
        run(&mut con, "RPUSH q after");
        assert_eq!(answer(list), Value::Array(vec![bulk("q"), bulk("after")]));
    }
}

/// XREAD BLOCK with `$` in a numbered database wakes for a new entry, on one node and
/// through a cluster node (the command it ran again at each wake-up had its keys prefixed
/// twice and waited for ever: Redis's own test suite found it).
#[test]
fn a_stream_reader_in_a_numbered_database_wakes() {
    let node = TestNode::start();
    let c = TestCluster::start(3, |cfg| cfg.cluster_timeout_ms = 300);
    let key = (0..)
        .map(|i| format!("events:{i}"))
        .find(|k| c.owner_index(k) == 1)
        .unwrap();
    for (url, other) in [
        (node.url(), node.url()),
        (c.members[0].url(), c.members[2].url()),
    ] {
        let in_db = format!("{url}9");
        let mut writer = redis::Client::open(format!("{other}9"))
            .and_then(|c| c.get_connection())
            .unwrap();
        let mut admin = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .unwrap();
        let reader = spawn(&in_db, &["XREAD", "BLOCK", "10000", "STREAMS", &key, "$"]);
        assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
        run(&mut writer, &format!("XADD {key} 5-1 new 1"));
        assert_eq!(answer(reader), stream_reply(&key, &[("5-1", "new", "1")]));
        // Database 0 holds no such stream.
        let len: i64 = redis::cmd("XLEN").arg(&key).query(&mut admin).unwrap();
        assert_eq!(len, 0);
    }
}

/// XREAD BLOCK and XREADGROUP BLOCK, as in Redis: `$` means the entries added after the
/// client asked (also when more come before it is served), every XREAD waiting on a stream
/// gets the new entry, the XREADGROUP clients of one group share the entries in the order
/// they blocked, a timeout answers nil, and a stream or group that goes away ends the
/// group readers' wait with Redis 7.2's errors.
#[test]
fn stream_readers_wait_for_new_entries() {
    let node = TestNode::start();
    let mut admin = node.client();
    run(&mut admin, "XADD s 1-1 old 1");
    run(&mut admin, "XGROUP CREATE s g $");
    let r1 = spawn(
        &node.url(),
        &["XREAD", "BLOCK", "10000", "STREAMS", "s", "$"],
    );
    let r2 = spawn(
        &node.url(),
        &[
            "XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "other", "s", "0", "$",
        ],
    );
    assert!(wait_until(WAIT, || blocked(&mut admin) == 2));
    let g1 = spawn(
        &node.url(),
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "alice",
            "BLOCK",
            "10000",
            "STREAMS",
            "s",
            ">",
        ],
    );
    assert!(wait_until(WAIT, || blocked(&mut admin) == 3));
    let g2 = spawn(
        &node.url(),
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "bob",
            "BLOCK",
            "10000",
            "STREAMS",
            "s",
            ">",
        ],
    );
    assert!(wait_until(WAIT, || blocked(&mut admin) == 4));
    // One entry: both XREADs and the first group reader get it; the second waits on.
    run(&mut admin, "XADD s 2-1 a 1");
    assert_eq!(answer(r1), stream_reply("s", &[("2-1", "a", "1")]));
    assert_eq!(answer(r2), stream_reply("s", &[("2-1", "a", "1")]));
    assert_eq!(answer(g1), stream_reply("s", &[("2-1", "a", "1")]));
    assert!(
        wait_until(WAIT, || blocked(&mut admin) == 1),
        "bob still waits"
    );
    run(&mut admin, "XADD s 3-1 b 2");
    assert_eq!(answer(g2), stream_reply("s", &[("3-1", "b", "2")]));
    // Each entry is pending for the reader it went to.
    let Value::Array(pending) = run(&mut admin, "XPENDING s g - + 10") else {
        panic!("XPENDING answers an array");
    };
    let owners: Vec<(Value, Value)> = pending
        .into_iter()
        .map(|e| match e {
            Value::Array(f) => (f[0].clone(), f[1].clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        owners,
        [(bulk("2-1"), bulk("alice")), (bulk("3-1"), bulk("bob"))]
    );

    // A key of another type is waited past by XREAD; a timeout answers nil.
    let r3 = spawn(&node.url(), &["XREAD", "BLOCK", "300", "STREAMS", "t", "$"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    run(&mut admin, "SET t x");
    assert_eq!(answer(r3), Value::Nil);

    // The stream deleted (with an XREAD waiting ahead of the group reader: it stays), the
    // group destroyed, or the key made a string, under a waiting group reader: Redis 7.2
    // runs the command again, which answers its error.
    run(&mut admin, "XGROUP CREATE u g $ MKSTREAM");
    run(&mut admin, "XGROUP CREATE w g $ MKSTREAM");
    let xread = spawn(&node.url(), &["XREAD", "BLOCK", "500", "STREAMS", "s", "$"]);
    assert!(wait_until(WAIT, || blocked(&mut admin) == 1));
    let gone = group_reader(&node.url(), "s");
    let destroyed = group_reader(&node.url(), "u");
    let retyped = group_reader(&node.url(), "w");
    assert!(wait_until(WAIT, || blocked(&mut admin) == 4));
    run(&mut admin, "DEL s");
    run(&mut admin, "XGROUP DESTROY u g");
    run(&mut admin, "SET w x");
    assert!(wait_until(WAIT, || {
        gone.is_finished() && destroyed.is_finished() && retyped.is_finished()
    }));
    for (h, key) in [(gone, "s"), (destroyed, "u")] {
        let e = h.join().unwrap().unwrap_err();
        assert_eq!(e.code(), Some("NOGROUP"), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("No such key '{key}' or consumer group 'g'")),
            "{e}"
        );
    }
    let e = retyped.join().unwrap().unwrap_err();
    assert_eq!(e.code(), Some("WRONGTYPE"), "{e}");
    assert_eq!(
        answer(xread),
        Value::Nil,
        "the XREAD waits on, to its timeout"
    );
    assert_eq!(blocked(&mut admin), 0);
}

/// Through a node that does not own the stream, an XREAD BLOCK waits past many forwarded
/// rounds and gets exactly the entries added after it asked (`$` is resolved once, at the
/// owner, before the first round), and a group reader is served by an XADD through a third
/// node.
#[test]
fn in_a_cluster_stream_readers_wait_through_any_node() {
    let c = TestCluster::start(3, |cfg| cfg.cluster_timeout_ms = 300);
    let key = (0..)
        .map(|i| format!("events:{i}"))
        .find(|k| c.owner_index(k) == 1)
        .unwrap();
    let mut n0 = c.members[0].client();
    let mut n2 = c.members[2].client();
    run(&mut n2, &format!("XADD {key} 1-1 old 1"));
    run(&mut n2, &format!("XGROUP CREATE {key} g $"));
    let before = forwarded(&mut n0);
    let reader = spawn(
        &c.members[0].url(),
        &["XREAD", "BLOCK", "10000", "STREAMS", &key, "$"],
    );
    assert!(
        wait_until(WAIT, || forwarded(&mut n0) >= before + 4),
        "the wait goes on past the first forwarded rounds"
    );
    let group = spawn(
        &c.members[0].url(),
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "10000",
            "STREAMS",
            &key,
            ">",
        ],
    );
    let at = forwarded(&mut n0);
    assert!(wait_until(WAIT, || forwarded(&mut n0) >= at + 2));
    assert!(!reader.is_finished() && !group.is_finished());
    run(&mut n2, &format!("XADD {key} 2-1 new 2"));
    assert_eq!(answer(reader), stream_reply(&key, &[("2-1", "new", "2")]));
    assert_eq!(answer(group), stream_reply(&key, &[("2-1", "new", "2")]));
    // Inside MULTI it answers at once, without the transaction's later write.
    let mut p = redis::pipe();
    p.atomic()
        .cmd("XREAD")
        .arg("BLOCK")
        .arg(0)
        .arg("STREAMS")
        .arg(&key)
        .arg("$")
        .cmd("XADD")
        .arg(&key)
        .arg("3-1")
        .arg("x")
        .arg("y");
    let (read, id): (Value, String) = p.query(&mut n0).unwrap();
    assert_eq!((read, id.as_str()), (Value::Nil, "3-1"));
}

/// Inside MULTI a blocking command answers at once, as in Redis, also in a cluster through
/// a node that does not own its key: the transaction's own later push does not feed it.
#[test]
fn in_a_cluster_a_blocking_command_in_multi_does_not_take_the_transactions_push() {
    let c = TestCluster::start(3, |_| {});
    let key = (0..)
        .map(|i| format!("txq:{i}"))
        .find(|k| c.owner_index(k) == 1)
        .unwrap();
    let mut n0 = c.members[0].client();
    for round in 0..20 {
        // Fresh keys each round, in the owner's slot.
        let (list, zset) = (format!("{{{key}}}:l{round}"), format!("{{{key}}}:z{round}"));
        let stream = format!("{{{key}}}:s{round}");
        let mut p = redis::pipe();
        p.atomic()
            .cmd("BLPOP")
            .arg(&list)
            .arg(0)
            .cmd("LPUSH")
            .arg(&list)
            .arg("v")
            .cmd("BZPOPMIN")
            .arg(&zset)
            .arg(0)
            .cmd("ZADD")
            .arg(&zset)
            .arg(1)
            .arg("m")
            .cmd("XREAD")
            .arg("BLOCK")
            .arg(0)
            .arg("STREAMS")
            .arg(&stream)
            .arg("$")
            .cmd("XADD")
            .arg(&stream)
            .arg("1-1")
            .arg("f")
            .arg("v");
        let (popped, len, zpopped, added, read, id): (Value, i64, Value, i64, Value, String) =
            p.query(&mut n0).unwrap();
        assert_eq!(
            (popped, zpopped, read),
            (Value::Nil, Value::Nil, Value::Nil),
            "round {round}"
        );
        assert_eq!((len, added, id.as_str()), (1, 1, "1-1"), "round {round}");
    }
}

/// WAIT answers how many replicas have the connection's writes (after its timeout when it
/// asks for more): none on a single node (as a Redis without replicas), a key's replicas in
/// a cluster with `write-ack = all` while every member is reachable (each acknowledged write
/// went to all of them), none once one is not. WAITAOF counts them too (with no local
/// append-only file).
#[test]
fn wait_counts_the_replicas_that_have_the_writes() {
    let node = TestNode::start();
    let mut admin = node.client();
    run(&mut admin, "SET k v");
    assert_eq!(run(&mut admin, "WAIT 1 10"), Value::Int(0));
    assert_eq!(run(&mut admin, "WAIT 0 0"), Value::Int(0));
    assert_eq!(
        run(&mut admin, "WAITAOF 0 1 10"),
        Value::Array(vec![Value::Int(0), Value::Int(0)])
    );

    let mut c = TestCluster::start(3, |cfg| {
        cfg.write_ack = "all".into();
        cfg.cluster_timeout_ms = 300;
    });
    let mut n0 = c.members[0].client();
    run(&mut n0, "SET k v");
    assert_eq!(run(&mut n0, "WAIT 1 0"), Value::Int(1));
    assert_eq!(
        run(&mut n0, "WAIT 2 10"),
        Value::Int(1),
        "one replica a key"
    );
    assert_eq!(
        run(&mut n0, "WAITAOF 0 1 0"),
        Value::Array(vec![Value::Int(0), Value::Int(1)])
    );
    // A member down: a write may have been acknowledged without its replica.
    c.crash(2);
    let mut i = 0;
    assert!(
        wait_until(WAIT, || {
            // Writes reach the member that is down, or fail to: then it counts as so.
            for _ in 0..10 {
                i += 1;
                let _: redis::RedisResult<Value> = redis::cmd("SET")
                    .arg(format!("w{i}"))
                    .arg("v")
                    .query(&mut n0);
            }
            run(&mut n0, "WAIT 1 10") == Value::Int(0)
        }),
        "a write's replica may be the member that is down"
    );
}

/// A blocked command is checked against its user's ACL again when it wakes (Redis 7.2):
/// a user that lost the key while it waited gets NOPERM and the pushed element stays. On
/// a single node and on the cluster node that owns the key (through another node the
/// check is made before each forwarded round of waiting: see the README).
#[test]
fn a_blocked_command_is_checked_again_when_it_wakes() {
    let single = TestNode::start();
    let cluster = TestCluster::start(3, |_| {});
    let key = (0..)
        .map(|i| format!("q{i}"))
        .find(|k| cluster.owner_index(k) == 0)
        .unwrap();
    for (url, mut admin) in [
        (single.url(), single.client()),
        (cluster.members[0].url(), cluster.members[0].client()),
    ] {
        run(&mut admin, "ACL SETUSER waiter on >pw ~q* +@all");
        let before = blocked(&mut admin);
        let user_url = url.replacen("redis://", "redis://waiter:pw@", 1);
        let waiting = spawn_result(&user_url, &["BLPOP", &key, "10"]);
        assert!(
            wait_until(WAIT, || blocked(&mut admin) > before),
            "the client blocked"
        );
        run(&mut admin, "ACL SETUSER waiter resetkeys ~other*");
        run(&mut admin, &format!("RPUSH {key} x"));
        assert!(wait_until(WAIT, || waiting.is_finished()));
        let e = waiting.join().unwrap().unwrap_err();
        assert_eq!(e.code(), Some("NOPERM"), "{e}");
        assert_eq!(run(&mut admin, &format!("LLEN {key}")), Value::Int(1));
        run(&mut admin, &format!("DEL {key}"));
    }
}

/// WAIT asking for more replicas than have this connection's writes blocks its client until
/// its timeout (0: for ever) and then answers how many do, as Redis does (a single node
/// has none; go-redis's `should Wait` timed it): its later commands wait behind it, CLIENT
/// UNBLOCK ends it as a timeout, and inside MULTI it answers at once. Through a cluster
/// node too.
#[test]
fn wait_for_more_replicas_than_there_are_blocks_until_its_timeout() {
    let node = TestNode::start();
    let mut admin = node.client();
    let mut c = node.client();
    assert_eq!(
        run(&mut c, "WAIT 0 0"),
        Value::Int(0),
        "nothing to wait for"
    );
    let started = std::time::Instant::now();
    assert_eq!(run(&mut c, "WAIT 1 150"), Value::Int(0));
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "answered before its timeout: {:?}",
        started.elapsed()
    );
    // For ever, a PING pipelined behind it, until CLIENT UNBLOCK.
    let mut raw = std::net::TcpStream::connect(node.addr).unwrap();
    send(&mut raw, b"WAIT 1 0\r\nPING\r\n");
    assert!(
        wait_until(WAIT, || blocked(&mut admin) == 1),
        "the WAIT blocks its client"
    );
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin).unwrap();
    let id = list
        .lines()
        .find(|l| l.contains(" flags=b ") && l.contains(" cmd=wait "))
        .and_then(|l| l.strip_prefix("id="))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("the waiting client in {list}"));
    assert_eq!(
        run(&mut admin, &format!("CLIENT UNBLOCK {id}")),
        Value::Int(1)
    );
    assert_eq!(read_exact_by(&mut raw, 9, WAIT), b":0\r\n+PONG\r\n");
    assert_eq!(blocked(&mut admin), 0);
    // Inside MULTI: at once.
    let answers: Value = redis::pipe()
        .atomic()
        .cmd("WAIT")
        .arg(1)
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(answers, Value::Array(vec![Value::Int(0)]));

    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    let started = std::time::Instant::now();
    assert_eq!(run(&mut c, "WAIT 5 150"), Value::Int(0));
    assert!(started.elapsed() >= Duration::from_millis(150));
}
