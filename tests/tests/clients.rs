//! A real node driven by the `redis` crate, RESP2 and RESP3.

use std::collections::HashSet;
use std::time::Duration;

use redis::{Commands, Value};
use shoal_tests::{info_field, wait_until, TestNode};

#[test]
fn strings_round_trip_in_resp2_and_resp3() {
    let node = TestNode::start();
    for mut con in [node.client(), node.client_resp3()] {
        let _: () = con.set("greeting", "hello").unwrap();
        let v: String = con.get("greeting").unwrap();
        assert_eq!(v, "hello");
        let missing: Option<String> = con.get("nope").unwrap();
        assert_eq!(missing, None);
        let n: i64 = con.incr("counter", 5).unwrap();
        assert!(n % 5 == 0 && n > 0);
        let vals: Vec<Option<String>> = con.mget(&["greeting", "nope"]).unwrap();
        assert_eq!(vals, vec![Some("hello".to_string()), None]);
        let err = redis::cmd("INCR")
            .arg("greeting")
            .query::<i64>(&mut con)
            .unwrap_err();
        assert_eq!(err.code(), Some("ERR"));
        assert!(
            err.to_string()
                .contains("value is not an integer or out of range"),
            "{err}"
        );
    }
}

#[test]
fn resp3_types_reach_the_client() {
    let node = TestNode::start();
    let mut con = node.client_resp3();
    let hello: Value = redis::cmd("HELLO").arg(3).query(&mut con).unwrap();
    let Value::Map(fields) = hello else {
        panic!("HELLO 3 replies a map, got {hello:?}")
    };
    assert!(fields.contains(&(Value::BulkString(b"proto".to_vec()), Value::Int(3))));
    let nil: Value = redis::cmd("GET").arg("missing").query(&mut con).unwrap();
    assert_eq!(nil, Value::Nil);
    let cfg: Value = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query(&mut con)
        .unwrap();
    assert!(
        matches!(cfg, Value::Map(_)),
        "CONFIG GET in RESP3 is a map: {cfg:?}"
    );
    // RESP2 on another connection sees a flat array for the same command.
    let mut con2 = node.client();
    let cfg2: Value = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query(&mut con2)
        .unwrap();
    assert!(
        matches!(cfg2, Value::Array(ref a) if a.len() == 2),
        "{cfg2:?}"
    );
}

#[test]
fn pipelining_ten_thousand_commands() {
    let node = TestNode::start();
    let mut con = node.client();
    let mut pipe = redis::pipe();
    for i in 0..5_000 {
        pipe.cmd("SET").arg(format!("p:{i}")).arg(i).ignore();
    }
    for i in 0..5_000 {
        pipe.cmd("GET").arg(format!("p:{i}"));
    }
    let values: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(values, (0..5_000).collect::<Vec<i64>>());
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 5_000);
}

/// A pipeline on a numbered database: its keys are looked ahead at under the database's
/// prefix, and every reply is the value set there (keys of all sizes around the look-ahead's
/// 512-byte bound), with nothing in database 0.
#[test]
fn pipelining_in_a_numbered_database() {
    let node = TestNode::start();
    let mut con = node.client();
    let _: () = redis::cmd("SELECT").arg(3).query(&mut con).unwrap();
    let key = |i: usize| format!("{i}:{}", "k".repeat(i % 7 * 100));
    let mut pipe = redis::pipe();
    for i in 0..2_000 {
        pipe.cmd("SET").arg(key(i)).arg(i).ignore();
    }
    for i in 0..2_000 {
        pipe.cmd("GET").arg(key(i));
    }
    let values: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(values, (0..2_000).collect::<Vec<i64>>());
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 2_000);
    let _: () = redis::cmd("SELECT").arg(0).query(&mut con).unwrap();
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 0);
}

#[test]
fn keys_and_values_are_binary_safe() {
    let node = TestNode::start();
    let mut con = node.client();
    let key: Vec<u8> = (0u8..=255).collect();
    let mut value: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    value.extend_from_slice(b"\r\n\0$*-+:");
    let _: () = con.set(&key, &value).unwrap();
    let back: Vec<u8> = con.get(&key).unwrap();
    assert_eq!(back, value);
    let len: usize = con.strlen(&key).unwrap();
    assert_eq!(len, value.len());
    let keys: Vec<Vec<u8>> = con.keys("*").unwrap();
    assert_eq!(keys, vec![key.clone()]);
    let _: () = con.set("", "empty key").unwrap();
    let v: String = con.get("").unwrap();
    assert_eq!(v, "empty key");
}

#[test]
fn expiry_is_visible_through_ttl_and_disappearance() {
    let node = TestNode::start();
    let mut con = node.client();
    let _: () = redis::cmd("SET")
        .arg("short")
        .arg("v")
        .arg("PX")
        .arg(150)
        .query(&mut con)
        .unwrap();
    let _: () = con.set_ex("long", "v", 100).unwrap();
    let pttl: i64 = con.pttl("short").unwrap();
    assert!((1..=150).contains(&pttl), "{pttl}");
    let ttl: i64 = con.ttl("long").unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    assert!(
        wait_until(Duration::from_secs(5), || {
            con.get::<_, Option<String>>("short").unwrap().is_none()
        }),
        "key with PX 150 did not expire"
    );
    let ttl: i64 = con.ttl("short").unwrap();
    assert_eq!(ttl, -2);
    let exists: bool = con.exists("long").unwrap();
    assert!(exists);
}

#[test]
fn active_expiry_frees_keys_nobody_touches() {
    let node = TestNode::start();
    let mut con = node.client();
    let mut pipe = redis::pipe();
    for i in 0..2_000 {
        pipe.cmd("SET")
            .arg(format!("e:{i}"))
            .arg("v")
            .arg("PX")
            .arg(100)
            .ignore();
    }
    let _: () = pipe.query(&mut con).unwrap();
    let _: () = con.set("keep", "v").unwrap();
    // Nothing reads the keys again: only active expiry can remove them.
    assert!(
        wait_until(Duration::from_secs(10), || {
            redis::cmd("DBSIZE").query::<i64>(&mut con).unwrap() == 1
        }),
        "active expiry did not reclaim untouched keys"
    );
    let expired: u64 = info_field(&mut con, "expired_keys").parse().unwrap();
    assert!(expired >= 2_000, "{expired}");
}

#[test]
fn eviction_keeps_memory_near_the_limit() {
    let limit = 2 * 1024 * 1024;
    let node = TestNode::with(|c| c.maxmemory = shoal_node::ByteSize(limit));
    let mut con = node.client();
    let value = "v".repeat(1000);
    for batch in 0..20 {
        let mut pipe = redis::pipe();
        for i in 0..500 {
            pipe.cmd("SET").arg(format!("k:{batch}:{i}")).arg(&value);
        }
        let replies: Vec<String> = pipe.query(&mut con).unwrap();
        assert!(replies.iter().all(|r| r == "OK"), "a SET was refused");
        // The last write is always there.
        let last: String = con.get(format!("k:{batch}:499")).unwrap();
        assert_eq!(last, value);
    }
    let used: u64 = info_field(&mut con, "used_memory").parse().unwrap();
    let evicted: u64 = info_field(&mut con, "evicted_keys").parse().unwrap();
    assert!(evicted > 5_000, "evicted_keys {evicted}");
    assert!(
        used <= limit + 2048,
        "used_memory {used} above maxmemory {limit}"
    );
    assert!(used > limit / 2, "used_memory {used} far below the limit");
    let maxmemory: u64 = info_field(&mut con, "maxmemory").parse().unwrap();
    assert_eq!(maxmemory, limit);
}

#[test]
fn noeviction_refuses_writes_with_redis_oom_error() {
    let node = TestNode::with(|c| {
        c.maxmemory = shoal_node::ByteSize(64 * 1024);
        c.maxmemory_policy = "noeviction".into();
    });
    let mut con = node.client();
    let value = "v".repeat(1000);
    let mut refused = None;
    for i in 0..1000 {
        if let Err(e) = con.set::<_, _, ()>(format!("k{i}"), &value) {
            refused = Some(e);
            break;
        }
    }
    let e = refused.expect("writes must be refused once full");
    assert_eq!(e.code(), Some("OOM"));
    // Reads and deletes still work.
    let v: String = con.get("k0").unwrap();
    assert_eq!(v, value);
    let n: i64 = con.del("k0").unwrap();
    assert_eq!(n, 1);
}

#[test]
fn auth_is_required_when_configured() {
    let node = TestNode::with(|c| c.requirepass = "s3cret".into());
    let mut con = node.client();
    let e = con.get::<_, Option<String>>("k").unwrap_err();
    assert_eq!(e.code(), Some("NOAUTH"));
    let e = redis::cmd("AUTH")
        .arg("wrong")
        .query::<()>(&mut con)
        .unwrap_err();
    assert_eq!(e.code(), Some("WRONGPASS"));
    let _: () = redis::cmd("AUTH").arg("s3cret").query(&mut con).unwrap();
    let _: () = con.set("k", "v").unwrap();
    // A client configured with the password (HELLO 3 AUTH ... in RESP3) works directly.
    let url = format!("redis://:s3cret@{}/?protocol=resp3", node.addr);
    let mut con3 = redis::Client::open(url).unwrap().get_connection().unwrap();
    let v: String = con3.get("k").unwrap();
    assert_eq!(v, "v");
    let url = format!("redis://default:s3cret@{}/", node.addr);
    let mut con2 = redis::Client::open(url).unwrap().get_connection().unwrap();
    let v: String = con2.get("k").unwrap();
    assert_eq!(v, "v");
}

#[test]
fn scan_walks_every_key_once_with_match_and_count() {
    let node = TestNode::start();
    let mut con = node.client();
    let mut pipe = redis::pipe();
    for i in 0..3_000 {
        pipe.cmd("SET").arg(format!("s:{i}")).arg(i).ignore();
    }
    pipe.cmd("SET").arg("other").arg(1).ignore();
    let _: () = pipe.query(&mut con).unwrap();
    let keys: HashSet<String> = con.scan_match("s:*").unwrap().collect();
    assert_eq!(keys.len(), 3_000);
    let all: Vec<String> = con.keys("*").unwrap();
    assert_eq!(all.len(), 3_001);
}

#[test]
fn client_list_kill_and_setname() {
    let node = TestNode::start();
    let mut a = node.client();
    let mut b = node.client();
    let _: () = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg("victim")
        .query(&mut b)
        .unwrap();
    let b_id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut b).unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut a).unwrap();
    assert!(
        list.contains(&format!("id={b_id} ")) && list.contains("name=victim"),
        "{list}"
    );
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(b_id)
        .query(&mut a)
        .unwrap();
    assert_eq!(killed, 1);
    assert!(
        redis::cmd("PING").query::<String>(&mut b).is_err(),
        "a killed client's connection must be closed"
    );
    let clients: i64 = info_field(&mut a, "connected_clients").parse().unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || info_field(
            &mut a,
            "connected_clients"
        ) == "1"),
        "connected_clients still {clients}"
    );
}

/// A client that closed is no longer counted by the next request of another client, as on
/// Redis's one thread, though its own worker may not have noticed yet (Perl Redis.pm's
/// `50-fork_safe.t` asks INFO right after the previous test's client closed). Each round
/// closes one client and asks on a new one.
#[test]
fn a_closed_client_is_not_counted_by_the_next_request() {
    let node = TestNode::start();
    let mut counted_twice = Vec::new();
    for round in 0..300 {
        let mut gone = node.client();
        let _: String = redis::cmd("PING").query(&mut gone).unwrap();
        drop(gone);
        let mut asking = node.client();
        let clients = info_field(&mut asking, "connected_clients");
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut asking).unwrap();
        if clients != "1" || list.lines().count() != 1 {
            counted_twice.push((round, clients, list));
        }
    }
    assert!(counted_twice.is_empty(), "{counted_twice:?}");
}

/// A client that sent its requests and shut its writing side is still served and counted
/// while they run, the caller included (`printf 'CLIENT LIST\r\nINFO clients\r\n' | nc -N`),
/// as Redis reads a half-closed client's requests before its end.
#[test]
fn a_half_closed_client_counts_while_its_requests_run() {
    let node = TestNode::start();
    let mut c = node.raw();
    // Requests enough that the end arrives long before the last of them runs (a reader
    // thread, so the replies cannot fill both directions' buffers).
    let mut requests = b"PING\r\n".repeat(20_000);
    requests.extend_from_slice(b"CLIENT LIST\r\nINFO clients\r\n");
    let mut writer = c.try_clone().unwrap();
    let sent = std::thread::spawn(move || {
        std::io::Write::write_all(&mut writer, &requests).unwrap();
        writer.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let (bytes, closed) = shoal_tests::read_to_close(&mut c, Duration::from_secs(10));
    sent.join().unwrap();
    assert!(closed);
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(text.matches("+PONG\r\n").count(), 20_000);
    let port = c.local_addr().unwrap().port();
    assert!(text.contains(&format!("addr=127.0.0.1:{port} ")), "{text}");
    assert!(text.contains("connected_clients:1\r\n"), "{text}");
}

/// The server's end of a loopback connection from `client_port` to `server_port`, as the
/// kernel lists it in /proc/net/tcp: its timer kind (2 = keepalive) and the time left on
/// it in clock ticks (1/100 s).
fn server_socket_timer(server_port: u16, client_port: u16) -> Option<(u32, u64)> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let local = format!("0100007F:{server_port:04X}");
    let remote = format!("0100007F:{client_port:04X}");
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) != Some(&&local[..]) || f.get(2) != Some(&&remote[..]) {
            return None;
        }
        let (kind, left) = f.get(5)?.split_once(':')?;
        Some((
            u32::from_str_radix(kind, 16).ok()?,
            u64::from_str_radix(left, 16).ok()?,
        ))
    })
}

/// `tcp-keepalive` as in Redis: 300 s by default, so an idle client's socket has the
/// kernel's keepalive timer running with about that long left; CONFIG SET changes it for
/// the connections accepted after; 0 sets none.
#[test]
fn tcp_keepalive_arms_the_kernels_timer_on_new_client_sockets() {
    let node = TestNode::start();
    let mut admin = node.client();
    let get: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("tcp-keepalive")
        .query(&mut admin)
        .unwrap();
    assert_eq!(get, ["tcp-keepalive", "300"]);
    let timer_of_a_new_client = || {
        let mut c = node.raw();
        // Served once, so the node has accepted and set it up.
        shoal_tests::send(&mut c, b"PING\r\n");
        let mut pong = [0u8; 7];
        std::io::Read::read_exact(&mut c, &mut pong).unwrap();
        let port = c.local_addr().unwrap().port();
        // Until the PONG's ACK is in, the kernel shows its retransmit timer (kind 1).
        let mut timer = None;
        let settled = wait_until(Duration::from_secs(5), || {
            timer = server_socket_timer(node.addr.port(), port);
            timer.is_some_and(|(kind, _)| kind != 1)
        });
        assert!(
            settled,
            "the server's socket is listed, its reply acknowledged: {timer:?}"
        );
        timer.expect("listed")
    };
    let (kind, left) = timer_of_a_new_client();
    assert_eq!(kind, 2, "keepalive timer");
    assert!((250 * 100..=300 * 100).contains(&left), "{left} ticks left");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tcp-keepalive")
        .arg("60")
        .query(&mut admin)
        .unwrap();
    let (kind, left) = timer_of_a_new_client();
    assert_eq!(kind, 2, "keepalive timer");
    assert!(left <= 60 * 100, "{left} ticks left");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tcp-keepalive")
        .arg("0")
        .query(&mut admin)
        .unwrap();
    assert_eq!(timer_of_a_new_client().0, 0, "no timer without keepalive");
    assert!(redis::cmd("CONFIG")
        .arg("SET")
        .arg("tcp-keepalive")
        .arg("-1")
        .query::<()>(&mut admin)
        .is_err());
}

#[test]
fn maxclients_refuses_with_redis_error() {
    let node = TestNode::with(|c| c.maxclients = 2);
    let mut a = node.client();
    let _b = node.client();
    let mut third = node.raw();
    let (bytes, closed) = shoal_tests::read_to_close(&mut third, Duration::from_secs(5));
    assert_eq!(bytes, b"-ERR max number of clients reached\r\n");
    assert!(closed);
    let rejected: u64 = info_field(&mut a, "rejected_connections").parse().unwrap();
    assert_eq!(rejected, 1);
}

#[test]
fn idle_clients_are_closed_after_timeout() {
    let node = TestNode::with(|c| c.timeout = 1);
    let mut raw = node.raw();
    shoal_tests::send(&mut raw, b"PING\r\n");
    let (bytes, closed) = shoal_tests::read_to_close(&mut raw, Duration::from_secs(8));
    assert_eq!(bytes, b"+PONG\r\n");
    assert!(closed, "idle client was not closed");
}

/// `timeout` past the idle trim (2 s): a client idle after a whole request, and one that
/// sent part of a request and stopped, on either port, are closed (the trim neither restarts
/// the idle clock nor keeps a half-sent request alive).
#[test]
fn idle_clients_are_closed_after_a_timeout_longer_than_the_trim() {
    let node = TestNode::with(|c| {
        c.timeout = 3;
        c.memcache_port = Some(0);
    });
    let mut whole = node.raw();
    shoal_tests::send(&mut whole, b"PING\r\n");
    let mut half = node.raw();
    shoal_tests::send(&mut half, b"*2\r\n$3\r\nGET");
    let mut mc = std::net::TcpStream::connect(node.memcache_addr.unwrap()).unwrap();
    shoal_tests::send(&mut mc, b"set k 0 0 10\r\nabc");
    let deadline = Duration::from_secs(20);
    let (bytes, closed) = shoal_tests::read_to_close(&mut whole, deadline);
    assert_eq!((bytes.as_slice(), closed), (&b"+PONG\r\n"[..], true));
    assert_eq!(
        shoal_tests::read_to_close(&mut half, deadline),
        (Vec::new(), true)
    );
    assert_eq!(
        shoal_tests::read_to_close(&mut mc, deadline),
        (Vec::new(), true)
    );
}

#[test]
fn client_reply_off_and_skip() {
    let node = TestNode::start();
    let mut raw = node.raw();
    let mut exchange = |request: &[u8], want: &[u8]| {
        shoal_tests::send(&mut raw, request);
        let got = shoal_tests::read_exact_by(&mut raw, want.len(), Duration::from_secs(5));
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
    };
    exchange(
        b"CLIENT REPLY OFF\r\nSET a 1\r\nCLIENT REPLY ON\r\nGET a\r\nCLIENT REPLY SKIP\r\nGET a\r\nPING\r\n",
        b"+OK\r\n$1\r\n1\r\n+PONG\r\n",
    );
    // Queued in MULTI, CLIENT REPLY OFF takes effect after EXEC, whose reply is still sent.
    exchange(
        b"MULTI\r\nCLIENT REPLY OFF\r\nEXEC\r\nPING\r\nCLIENT REPLY ON\r\n",
        b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n+OK\r\n",
    );
    // RESET turns replies back on and answers (a client library recovers a connection so);
    // after a SKIP, the RESET is the skipped command (Redis 7.0.15's replies).
    exchange(
        b"CLIENT REPLY OFF\r\nRESET\r\nPING\r\nCLIENT REPLY SKIP\r\nRESET\r\nPING\r\n",
        b"+RESET\r\n+PONG\r\n+PONG\r\n",
    );
}

#[test]
fn atomic_pipelines_use_multi_exec() {
    let node = TestNode::start();
    for mut con in [node.client(), node.client_resp3()] {
        let (a, b): (i64, String) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("tx")
            .arg("41")
            .ignore()
            .cmd("INCR")
            .arg("tx")
            .cmd("GET")
            .arg("tx")
            .query(&mut con)
            .unwrap();
        assert_eq!((a, b.as_str()), (42, "42"));
        // WATCH + a concurrent change aborts: the redis crate returns None for a null EXEC.
        let _: () = redis::cmd("WATCH").arg("tx").query(&mut con).unwrap();
        let mut other = node.client();
        let _: () = other.set("tx", "changed").unwrap();
        let aborted: Option<(String,)> = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg("tx")
            .arg("mine")
            .query(&mut con)
            .unwrap();
        assert_eq!(aborted, None);
        let v: String = con.get("tx").unwrap();
        assert_eq!(v, "changed");
    }
}

/// CLIENT LIST shows a connection's buffers as they are: a command still arriving in
/// `qbuf`, a MULTI queue in `multi` and `multi-mem` with the flag `x`, and replies a client
/// does not read in `obl`/`oll`/`omem` with the events `rw`.
#[test]
fn client_list_shows_the_buffers_as_they_are() {
    use shoal_tests::{read_exact_by, send};
    let node = TestNode::start();
    let mut watcher = node.client();
    let fields =
        |watcher: &mut redis::Connection, id: i64| -> std::collections::HashMap<String, String> {
            let line: String = redis::cmd("CLIENT")
                .arg("LIST")
                .arg("ID")
                .arg(id)
                .query(watcher)
                .unwrap();
            line.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
    let deadline = Duration::from_secs(10);
    // A raw connection and its id (CLIENT ID's reply, `:id\r\n`, read byte by byte).
    let connect = || {
        let mut s = node.raw();
        send(&mut s, b"CLIENT ID\r\n");
        let mut line = Vec::new();
        while !line.ends_with(b"\r\n") {
            line.extend(read_exact_by(&mut s, 1, deadline));
        }
        let id: i64 = String::from_utf8_lossy(&line[1..line.len() - 2])
            .parse()
            .unwrap();
        (s, id)
    };
    let (mut a, id) = connect();
    let f = fields(&mut watcher, id);
    assert_eq!(
        (f["qbuf"].as_str(), f["multi"].as_str(), f["flags"].as_str()),
        ("0", "-1", "N")
    );
    assert!(f["rbs"].parse::<u64>().unwrap() > 0, "{f:?}");
    // The asking connection's own command is in its query buffer while it runs, as in
    // Redis: `*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n`, 26 bytes.
    let own: String = redis::cmd("CLIENT")
        .arg("INFO")
        .query(&mut watcher)
        .unwrap();
    assert!(own.contains(" qbuf=26 "), "{own}");

    // A command half sent waits in the query buffer.
    send(&mut a, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhel");
    assert!(wait_until(deadline, || fields(&mut watcher, id)["qbuf"] != "0"));
    send(&mut a, b"lo\r\n");
    assert_eq!(read_exact_by(&mut a, 5, deadline), b"+OK\r\n");
    assert!(wait_until(deadline, || fields(&mut watcher, id)["qbuf"] == "0"));

    // A blocked command is no longer in the query buffer (Redis trimmed it).
    send(&mut a, b"BLPOP qlist 0\r\n");
    assert!(wait_until(deadline, || {
        let f = fields(&mut watcher, id);
        f["flags"] == "b" && f["qbuf"] == "0"
    }));
    let _: () = redis::cmd("RPUSH")
        .arg("qlist")
        .arg("x")
        .query(&mut watcher)
        .unwrap();
    assert_eq!(
        read_exact_by(&mut a, 22, deadline),
        b"*2\r\n$5\r\nqlist\r\n$1\r\nx\r\n"
    );

    // A transaction's queue.
    send(&mut a, b"MULTI\r\nSET k v\r\nGET k\r\n");
    assert_eq!(
        read_exact_by(&mut a, 5 + 9 + 9, deadline),
        b"+OK\r\n+QUEUED\r\n+QUEUED\r\n"
    );
    let f = fields(&mut watcher, id);
    assert_eq!(
        (
            f["multi"].as_str(),
            f["multi-mem"].as_str(),
            f["flags"].as_str()
        ),
        ("2", "9", "x"),
        "SET k v and GET k are 9 bytes of arguments"
    );
    send(&mut a, b"EXEC\r\n");
    assert_eq!(
        read_exact_by(&mut a, 15, deadline),
        b"*2\r\n+OK\r\n$1\r\nv\r\n"
    );
    let f = fields(&mut watcher, id);
    assert_eq!(
        (
            f["multi"].as_str(),
            f["multi-mem"].as_str(),
            f["flags"].as_str()
        ),
        ("-1", "0", "N")
    );

    // Replies a client does not read wait in its output buffers.
    let big = "x".repeat(1 << 20);
    let _: () = watcher.set("big", &big).unwrap();
    let (mut b, id_b) = connect();
    send(&mut b, "GET big\r\n".repeat(32).as_bytes());
    assert!(wait_until(deadline, || {
        let f = fields(&mut watcher, id_b);
        let held: u64 = f["obl"].parse::<u64>().unwrap() + f["omem"].parse::<u64>().unwrap();
        held > 0 && f["events"] == "rw" && f["tot-mem"].parse::<u64>().unwrap() >= held
    }));
}

/// A connection idle for two seconds gives its buffers back, as Redis frees an idle client's
/// query buffer: CLIENT LIST shows `qbuf=0 qbuf-free=0 rbs=0`, on the RESP and the Memcached
/// port. The next requests (larger than the first small read) are served whole, and the
/// buffers come back.
#[test]
fn an_idle_client_gives_its_buffers_back() {
    use shoal_tests::{read_exact_by, send};
    let node = TestNode::with(|c| c.memcache_port = Some(0));
    let mut watcher = node.client();
    let deadline = Duration::from_secs(15);
    // CLIENT LIST's fields of the connection whose local port is `port`.
    let mut fields = |port: u16| -> std::collections::HashMap<String, String> {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query(&mut watcher)
            .unwrap();
        let line = list
            .lines()
            .find(|l| l.contains(&format!("addr=127.0.0.1:{port} ")))
            .unwrap_or_else(|| panic!("no client from port {port} in {list}"))
            .to_string();
        line.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let trimmed = |f: &std::collections::HashMap<String, String>| {
        (
            f["qbuf"].as_str(),
            f["qbuf-free"].as_str(),
            f["rbs"].as_str(),
        ) == ("0", "0", "0")
    };
    let value = "v".repeat(300);

    let mut r = node.raw();
    send(&mut r, b"PING\r\n");
    assert_eq!(read_exact_by(&mut r, 7, deadline), b"+PONG\r\n");
    let rport = r.local_addr().unwrap().port();
    assert!(fields(rport)["rbs"].parse::<u64>().unwrap() > 0);
    assert!(wait_until(deadline, || trimmed(&fields(rport))));
    let f = fields(rport);
    assert!(f["idle"].parse::<u64>().unwrap() >= 2, "{f:?}");
    let set = format!(
        "*3\r\n$3\r\nSET\r\n$4\r\nidle\r\n$300\r\n{value}\r\n*2\r\n$3\r\nGET\r\n$4\r\nidle\r\n"
    );
    send(&mut r, set.as_bytes());
    let want = format!("+OK\r\n$300\r\n{value}\r\n");
    assert_eq!(read_exact_by(&mut r, want.len(), deadline), want.as_bytes());
    assert!(fields(rport)["rbs"].parse::<u64>().unwrap() > 0);

    let mut m = std::net::TcpStream::connect(node.memcache_addr.unwrap()).unwrap();
    send(&mut m, b"version\r\n");
    let mut version = Vec::new();
    while !version.ends_with(b"\r\n") {
        version.extend(read_exact_by(&mut m, 1, deadline));
    }
    assert!(version.starts_with(b"VERSION "), "{version:?}");
    let mport = m.local_addr().unwrap().port();
    assert!(wait_until(deadline, || trimmed(&fields(mport))));
    send(
        &mut m,
        format!("set mc 0 0 300\r\n{value}\r\nget mc\r\n").as_bytes(),
    );
    let want = format!("STORED\r\nVALUE mc 0 300\r\n{value}\r\nEND\r\n");
    assert_eq!(read_exact_by(&mut m, want.len(), deadline), want.as_bytes());
}

/// The latency monitor samples a command that runs past `latency-monitor-threshold`: KEYS
/// over 50,000 keys takes well over a millisecond, so it shows in LATENCY LATEST, HISTORY,
/// DOCTOR and GRAPH; RESET forgets it.
#[test]
fn the_latency_monitor_samples_a_slow_command() {
    let node = TestNode::start();
    let mut c = node.client();
    for chunk in 0..50 {
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            pipe.cmd("SET")
                .arg(format!("k{chunk}:{i}"))
                .arg("v")
                .ignore();
        }
        let () = pipe.query(&mut c).unwrap();
    }
    config_set(&mut c, "latency-monitor-threshold", "1");
    let keys: Vec<String> = c.keys("*").unwrap();
    assert_eq!(keys.len(), 50_000);
    // MEMORY STATS counts them, and the connections' buffers.
    let stats: std::collections::HashMap<String, redis::Value> =
        redis::cmd("MEMORY").arg("STATS").query(&mut c).unwrap();
    let int = |k: &str| match &stats[k] {
        redis::Value::Int(n) => *n,
        other => panic!("{k}: {other:?}"),
    };
    assert_eq!(int("keys.count"), 50_000);
    assert!(int("dataset.bytes") > 50_000 * 10, "{stats:?}");
    assert!(int("clients.normal") > 0, "{stats:?}");
    let latest: Vec<(String, i64, i64, i64)> =
        redis::cmd("LATENCY").arg("LATEST").query(&mut c).unwrap();
    let (name, at, ms, max) = latest
        .iter()
        .find(|e| e.0 == "command")
        .cloned()
        .unwrap_or_else(|| panic!("no command event in {latest:?}"));
    assert_eq!(name, "command");
    assert!(at > 1_700_000_000 && ms >= 1 && max >= ms, "{latest:?}");
    let history: Vec<(i64, i64)> = redis::cmd("LATENCY")
        .arg("HISTORY")
        .arg("command")
        .query(&mut c)
        .unwrap();
    assert!(!history.is_empty());
    let doctor: String = redis::cmd("LATENCY").arg("DOCTOR").query(&mut c).unwrap();
    assert!(doctor.contains("1. command: "), "{doctor}");
    let graph: String = redis::cmd("LATENCY")
        .arg("GRAPH")
        .arg("command")
        .query(&mut c)
        .unwrap();
    assert!(graph.starts_with("command - high "), "{graph}");
    let reset: i64 = redis::cmd("LATENCY").arg("RESET").query(&mut c).unwrap();
    assert!(reset >= 1);
    let latest: Vec<(String, i64, i64, i64)> =
        redis::cmd("LATENCY").arg("LATEST").query(&mut c).unwrap();
    assert!(latest.is_empty(), "{latest:?}");
}

/// Active expiry's rounds are sampled too (`expire-cycle`, as Redis's): 100,000 keys that
/// expire together keep a round busy for its whole budget (a quarter of the cron's period),
/// far past the 1 ms threshold.
#[test]
fn the_latency_monitor_samples_a_slow_expiry_round() {
    let node = TestNode::start();
    let mut c = node.client();
    config_set(&mut c, "latency-monitor-threshold", "1");
    for chunk in 0..100 {
        let mut pipe = redis::pipe();
        for i in 0..1000 {
            pipe.cmd("SET")
                .arg(format!("k{chunk}:{i}"))
                .arg("v")
                .arg("PX")
                .arg(300)
                .ignore();
        }
        let () = pipe.query(&mut c).unwrap();
    }
    assert!(
        wait_until(Duration::from_secs(20), || {
            redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap() == 0
        }),
        "the keys never expired"
    );
    let latest: Vec<(String, i64, i64, i64)> =
        redis::cmd("LATENCY").arg("LATEST").query(&mut c).unwrap();
    assert!(
        latest.iter().any(|e| e.0 == "expire-cycle" && e.2 >= 1),
        "{latest:?}"
    );
}

/// A client that names a database in its URL (`redis://host:port/9`, as redis-py's and many
/// frameworks' settings do) gets its own keyspace, apart from database 0.
#[test]
fn a_database_named_in_the_url_is_a_keyspace_of_its_own() {
    let node = TestNode::start();
    let url = format!("{}/9", node.url().trim_end_matches('/'));
    let mut nine = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("connects to database 9");
    let mut zero = node.client();
    let _: () = nine.set("k", "nine").unwrap();
    let _: () = zero.set("k", "zero").unwrap();
    let v: String = nine.get("k").unwrap();
    assert_eq!(v, "nine");
    let v: String = zero.get("k").unwrap();
    assert_eq!(v, "zero");
    let _: () = redis::cmd("FLUSHDB").query(&mut nine).unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut nine).unwrap();
    assert_eq!(n, 0);
    let v: String = zero.get("k").unwrap();
    assert_eq!(v, "zero", "FLUSHDB leaves the other databases alone");
}

/// EXEC runs alone, as in Redis's single thread: clients on the node's other worker threads
/// never see a transaction half done. A counter that every transaction raises twice is
/// never read odd, and a list a transaction pushes to and deletes is never popped from (and
/// its DEL always finds the key). Before the gate (`shoal_store::gate`) a reader saw an odd
/// value about once in a thousand transactions.
#[test]
fn no_client_sees_a_transaction_half_done() {
    let node = TestNode::start();
    const TRANSACTIONS: usize = 3_000;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let mut con = node.client();
            con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let done = done.clone();
            std::thread::spawn(move || {
                let (mut odd, mut popped, mut reads) = (0u64, 0u64, 0u64);
                // Bounded: the writer ends within its count; so do these, at the latest
                // after 2,000,000 reads.
                while !done.load(std::sync::atomic::Ordering::Relaxed) && reads < 2_000_000 {
                    let (n, item): (Option<i64>, Option<String>) = redis::pipe()
                        .get("ctr")
                        .lpop("tx:list", None)
                        .query(&mut con)
                        .unwrap();
                    reads += 1;
                    if n.is_some_and(|n| n % 2 != 0) {
                        odd += 1;
                    }
                    if item.is_some() {
                        popped += 1;
                    }
                }
                (odd, popped, reads)
            })
        })
        .collect();
    let mut con = node.client();
    con.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut deletes = 0;
    for _ in 0..TRANSACTIONS {
        // Commands between the two INCRs widen the window a reader could look through.
        let mut pipe = redis::pipe();
        pipe.atomic().incr("ctr", 1);
        for _ in 0..8 {
            pipe.cmd("SET").arg("pad").arg("x").ignore();
        }
        let (_, _, (pushed, deleted)): (i64, i64, (i64, i64)) = pipe
            .incr("ctr", 1)
            .cmd("LPUSH")
            .arg("tx:list")
            .arg("a")
            .cmd("DEL")
            .arg("tx:list")
            .query(&mut con)
            .map(|(a, b, c, d)| (a, b, (c, d)))
            .unwrap();
        assert_eq!(pushed, 1);
        deletes += deleted;
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut total = 0;
    for r in readers {
        let (odd, popped, reads) = r.join().unwrap();
        assert_eq!(
            odd, 0,
            "a reader saw the counter between a transaction's two INCRs"
        );
        assert_eq!(
            popped, 0,
            "a reader popped what a transaction pushed and deleted"
        );
        total += reads;
    }
    assert_eq!(
        deletes, TRANSACTIONS as i64,
        "every DEL in a transaction found its list"
    );
    assert!(total > 0);
    let n: i64 = con.get("ctr").unwrap();
    assert_eq!(n, 2 * TRANSACTIONS as i64);
}

/// A transaction queued while memory was there, with EXEC coming once it is not: discarded
/// whole (`EXECABORT ... because of: OOM ...`), nothing written, as Redis's EXEC does;
/// without writes it runs.
#[test]
fn exec_out_of_memory_discards_a_writing_transaction_whole() {
    let node = TestNode::start();
    let mut con = node.client();
    let mut admin = node.client();
    config_set(&mut admin, "maxmemory-policy", "noeviction");
    let _: () = con.set("x", "0").unwrap();
    let _: () = redis::cmd("MULTI").query(&mut con).unwrap();
    for c in [
        redis::cmd("SET").arg("x").arg("1").clone(),
        redis::cmd("GET").arg("x").clone(),
    ] {
        let queued: String = c.query(&mut con).unwrap();
        assert_eq!(queued, "QUEUED");
    }
    config_set(&mut admin, "maxmemory", "1");
    let e = redis::cmd("EXEC").query::<Value>(&mut con).unwrap_err();
    assert_eq!(e.code(), Some("EXECABORT"), "{e}");
    assert!(
        e.to_string()
            .contains("Transaction discarded because of: OOM command not allowed"),
        "{e}"
    );
    config_set(&mut admin, "maxmemory", "0");
    let x: String = con.get("x").unwrap();
    assert_eq!(x, "0", "nothing of the discarded transaction ran");
    // The connection is out of MULTI: a command runs at once.
    let n: i64 = con.incr("x", 1).unwrap();
    assert_eq!(n, 1);
}

/// CLIENT LIST and CLIENT INFO name a container's subcommand as Redis 7 does
/// (`cmd=client|info`), and a plain command by its name.
#[test]
fn client_list_names_the_subcommand() {
    let node = TestNode::start();
    let mut con = node.client();
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut con).unwrap();
    assert!(info.contains(" cmd=client|info "), "{info}");
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    assert!(list.contains(" cmd=client|list "), "{list}");
    let mut other = node.client();
    let _: Option<String> = other.get("x").unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    assert!(list.lines().any(|l| l.contains(" cmd=get ")), "{list}");
}

/// redis-py's Pub/Sub (sync and asyncio, RESP2 and RESP3, handlers, its health-check PING,
/// 200 pipelined publishes in order) against one node.
#[test]
fn redis_py_pubsub() {
    let node = TestNode::start();
    let a = node.addr.to_string();
    shoal_tests::python_client("pubsub.py", &[&a, &a]);
}

/// LASTSAVE answers the node's start (Shoal keeps no snapshot), as a Redis that never saved
/// answers its own start: in the past, no earlier than the uptime allows.
#[test]
fn lastsave_is_the_start_of_the_node() {
    let node = TestNode::start();
    let mut con = node.client();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let last: i64 = redis::cmd("LASTSAVE").query(&mut con).unwrap();
    let uptime: i64 = info_field(&mut con, "uptime_in_seconds").parse().unwrap();
    assert!(last <= now, "LASTSAVE {last} is after now {now}");
    assert!(
        last >= now - uptime - 2,
        "LASTSAVE {last} is before the start ({now} - {uptime} s)"
    );
}

/// redis-py's `Lock` and `register_script` (EVALSHA, and SCRIPT LOAD when it answers
/// NOSCRIPT), RESP2 and RESP3.
#[test]
fn redis_py_locks_and_scripts_work() {
    let node = TestNode::start();
    shoal_tests::python_client("scripts.py", &[&node.addr.to_string()]);
}

/// redis-py's function API (FUNCTION LOAD, FCALL, FCALL_RO, LIST, DUMP, RESTORE, DELETE,
/// STATS), RESP2 and RESP3: on a single node, loaded through one node of a cluster and
/// called through all three, and through redis-py's RedisCluster on the cluster-client
/// port.
#[test]
fn redis_py_functions_work() {
    let node = TestNode::start();
    shoal_tests::python_client("functions.py", &[&node.addr.to_string()]);
    let cluster = shoal_tests::TestCluster::start(3, |_| {});
    let addrs: Vec<String> = cluster.members.iter().map(|m| m.addr.to_string()).collect();
    let addrs: Vec<&str> = addrs.iter().map(String::as_str).collect();
    shoal_tests::python_client("functions.py", &addrs);
    let port = cluster.members[1].cluster_client_addr.to_string();
    shoal_tests::python_client("functions.py", &["cluster", &port]);
}

/// ACL users through redis-py (tests/clients/acl.py): made with `acl_setuser`, read back,
/// logged in with a username and refused what they were not given, in RESP2 and RESP3; on a
/// single node, and in a cluster, made through one node and used through every node.
#[test]
fn redis_py_acl_users_work() {
    let node = TestNode::start();
    shoal_tests::python_client("acl.py", &[&node.addr.to_string()]);
    let cluster = shoal_tests::TestCluster::start(3, |_| {});
    let addrs: Vec<String> = cluster.members.iter().map(|m| m.addr.to_string()).collect();
    let addrs: Vec<&str> = addrs.iter().map(String::as_str).collect();
    shoal_tests::python_client("acl.py", &addrs);
}

/// redis-py's stream API as a job queue uses it (XADD, XREAD, XREADGROUP, XACK, XPENDING,
/// XCLAIM, XAUTOCLAIM, XINFO with Redis 7.2's fields, XTRIM, XDEL), RESP2 and RESP3, on a
/// single node and through a cluster node that does not own the stream.
#[test]
fn redis_py_streams_work() {
    let node = TestNode::start();
    shoal_tests::python_client("streams.py", &[&node.addr.to_string()]);
    let cluster = shoal_tests::TestCluster::start(3, |_| {});
    let addr = cluster.members[0].addr.to_string();
    shoal_tests::python_client("streams.py", &[&addr]);
}

/// A script runs whole, with no other client's command in between on either worker: four
/// clients incrementing one counter by a read and a write each lose no increment.
#[test]
fn scripts_run_atomically() {
    let node = TestNode::start();
    const PER: usize = 300;
    let script = "local v = tonumber(redis.call('GET', KEYS[1]) or '0') \
                  redis.call('SET', KEYS[1], v + 1) return v + 1";
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let mut con = node.client();
            std::thread::spawn(move || {
                for _ in 0..PER {
                    let _: i64 = redis::cmd("EVAL")
                        .arg(script)
                        .arg(1)
                        .arg("counter")
                        .query(&mut con)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut con = node.client();
    let n: i64 = redis::cmd("GET").arg("counter").query(&mut con).unwrap();
    assert_eq!(n as usize, 4 * PER);
}

/// A SELECT inside a script changes the script's database only (Redis 7): the caller is
/// back in its own afterwards; commands that act on the connection are refused.
#[test]
fn a_script_s_select_stays_in_the_script() {
    let node = TestNode::start();
    let mut con = node.client();
    let r: String = redis::cmd("EVAL")
        .arg("redis.call('SELECT', 1) return redis.call('SET', KEYS[1], 'in1')")
        .arg(1)
        .arg("k")
        .query(&mut con)
        .unwrap();
    assert_eq!(r, "OK");
    let here: Option<String> = con.get("k").unwrap();
    assert_eq!(here, None, "the caller is still in database 0");
    let _: () = redis::cmd("SELECT").arg(1).query(&mut con).unwrap();
    let there: Option<String> = con.get("k").unwrap();
    assert_eq!(there.as_deref(), Some("in1"));
    for call in [
        "redis.call('QUIT')",
        "redis.call('CLIENT', 'KILL', 'ID', '1')",
    ] {
        let e = redis::cmd("EVAL")
            .arg(call)
            .arg(0)
            .query::<()>(&mut con)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not allowed from script"), "{call}: {e}");
    }
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

/// What a script cannot do: run precompiled bytecode, reach the loaders, the shared
/// libraries' tables or the node's internal commands, or build an unbounded reply.
#[test]
fn scripts_stay_in_their_sandbox() {
    let node = TestNode::start();
    let mut con = node.client();
    let mut error = |script: &[u8]| -> String {
        redis::cmd("EVAL")
            .arg(script)
            .arg(0)
            .query::<redis::Value>(&mut con)
            .unwrap_err()
            .to_string()
    };
    assert!(error(b"\x1bLuaQ\x00\x01\x04\x08").contains("Error compiling script"));
    for script in [
        // Text may be loaded (as in Redis), a precompiled chunk not: nil, then called;
        // also what string.dump makes (it is there, as in Redis).
        "return loadstring('\\27Lua')()",
        "return loadstring(string.dump(function() end))()",
        "return setmetatable(redis, {})",
        "coroutine.create = nil",
        "string.rep = nil",
        "redis.call = nil",
        "redis = 1",
        "cjson = nil",
        "return redis.call('cluster.floor', '1')",
        "return redis.call('mc.flush', '0')",
    ] {
        let e = error(script.as_bytes());
        assert!(
            e.starts_with("An error was signalled") || e.contains("ERR"),
            "{script}: {e}"
        );
    }
    // A table holding one string many times over, or itself.
    let e = error(
        b"local s = string.rep('x', 1000000) local t = {} for i = 1, 100 do t[i] = s end return t",
    );
    assert!(e.contains("reply is too large"), "{e}");
    let e = error(b"local t = {} for i = 1, 100 do t[i] = t end return t");
    assert!(e.contains("reply is too large"), "{e}");
    // An encoder's output is bounded like the Lua heap: 400 copies of a 1 MB string.
    let e = error(b"local s = string.rep('x', 1048576) local t = {} for i = 1, 400 do t[i] = s end return #cjson.encode(t)");
    assert!(e.contains("Lua heap") || e.contains("memory"), "{e}");
    // A script runs under the Lua heap's limit (its small setup does not).
    let e =
        error(b"local t = {} for i = 1, 200 do t[i] = string.rep('x', 1048576) .. i end return #t");
    assert!(e.contains("memory"), "{e}");
    // The bundled libraries bound their nesting: deep input is an error, not a crash.
    for (script, want) in [
        (
            "local t = {} local c = t for i = 1, 100000 do c[1] = {} c = c[1] end return cjson.encode(t)",
            "excessive nesting (129)",
        ),
        (
            "return cjson.decode(string.rep('[', 100000))",
            "too many nested data structures (129)",
        ),
        (
            "return cmsgpack.unpack(string.rep(string.char(0x91), 100000) .. string.char(1))",
            "Too deeply nested data in input.",
        ),
    ] {
        let e = error(script.as_bytes());
        assert!(e.contains(want), "{script}: {e}");
    }
    let depth: i64 = redis::cmd("EVAL")
        .arg(
            "local t = 1 for i = 1, 100 do t = {t} end local d = cjson.decode(cjson.encode(t)) \
              local n = 0 while type(d) == 'table' do d = d[1] n = n + 1 end return n",
        )
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(depth, 100, "100 levels go both ways");
    // The node and its Lua are fine after all that.
    let n: i64 = redis::cmd("EVAL")
        .arg("return #KEYS")
        .arg(1)
        .arg("k")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 1);
}

/// What function libraries keep of each worker's Lua heap is bounded (32 MB together): a
/// library holding 12 MB (its own string: equal strings are one in Lua) loads twice, a
/// third is refused, and every worker runs the two
/// loaded ones (each compiles them on first use) across many connections.
#[test]
fn function_libraries_keep_a_bounded_lua_heap() {
    let node = TestNode::start();
    let mut con = node.client();
    let lib = |i: usize| {
        format!(
            "#!lua name=big{i}\nlocal big = ('N{i}'):rep(6 * 1024 * 1024)\n\
             redis.register_function('len{i}', function() return #big end)"
        )
    };
    for i in 0..2 {
        let name: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg(lib(i))
            .query(&mut con)
            .unwrap();
        assert_eq!(name, format!("big{i}"));
    }
    let e = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib(2))
        .query::<String>(&mut con)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("would keep more than 32 MB of Lua memory"),
        "{e}"
    );
    // INFO memory counts them as Redis does.
    assert_eq!(
        shoal_tests::info_field(&mut con, "number_of_libraries"),
        "2"
    );
    assert_eq!(
        shoal_tests::info_field(&mut con, "number_of_functions"),
        "2"
    );
    for _ in 0..8 {
        let mut c = node.client();
        for i in 0..2 {
            let n: i64 = redis::cmd("FCALL")
                .arg(format!("len{i}"))
                .arg(0)
                .query(&mut c)
                .unwrap();
            assert_eq!(n, 12 * 1024 * 1024);
        }
    }
    // Replacing one frees its place.
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(lib(1).replace("6 * 1024", "1024"))
        .query(&mut con)
        .unwrap();
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib(2))
        .query(&mut con)
        .unwrap();
    assert_eq!(name, "big2");
}

/// Each `redis.call` inside a script has the caller's whole output budget (its reply goes to
/// the script): three reads of 600 KB under a 1 MB limit all return their value, and one
/// read past the limit is an error, never a silent nil.
#[test]
fn a_script_s_calls_each_have_the_output_budget() {
    let node = TestNode::with(|c| c.client_output_buffer_limit.normal.hard = 1 << 20);
    let mut con = node.client();
    let _: () = con.set("big", vec![b'v'; 600 * 1024]).unwrap();
    let n: i64 = redis::cmd("EVAL")
        .arg("local n = 0 for i = 1, 3 do n = n + #redis.call('MGET', KEYS[1])[1] end return n")
        .arg(1)
        .arg("big")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 3 * 600 * 1024);
    let e = redis::cmd("EVAL")
        .arg("return #redis.call('MGET', KEYS[1], KEYS[1])")
        .arg(1)
        .arg("big")
        .query::<i64>(&mut con)
        .unwrap_err()
        .to_string();
    assert!(e.contains("output limit"), "{e}");
}

/// UNLINK and FLUSHALL ASYNC free large values on a background thread (Redis's lazy free):
/// the keys are gone at once, INFO counts what was handed over (`lazyfree_pending_objects`)
/// and freed (`lazyfreed_objects`); a small value is freed at once; DEL and FLUSHALL do the
/// same under `lazyfree-lazy-user-del` and `lazyfree-lazy-user-flush`.
#[test]
fn unlink_and_async_flushes_free_large_values_in_the_background() {
    let node = TestNode::start();
    let mut con = node.client();
    let freed = |con: &mut redis::Connection, n: u64| {
        wait_until(Duration::from_secs(10), || {
            info_field(con, "lazyfreed_objects") == n.to_string()
                && info_field(con, "lazyfree_pending_objects") == "0"
        })
    };
    let big_set = |con: &mut redis::Connection, key: &str| {
        let members: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
        let added: i64 = con.sadd(key, &members).unwrap();
        assert_eq!(added, 1000);
    };
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    big_set(&mut con, "big");
    let _: () = con.set("small", "v").unwrap();
    let n: i64 = redis::cmd("UNLINK")
        .arg("big")
        .arg("small")
        .arg("none")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(con.exists::<_, i64>("big").unwrap(), 0, "gone at once");
    assert!(
        freed(&mut con, 1),
        "the large set is freed in the background"
    );
    // A small value is freed at once, a large one by DEL too only when asked.
    big_set(&mut con, "big");
    let _: i64 = con.del("big").unwrap();
    assert!(freed(&mut con, 1));
    config_set(&mut con, "lazyfree-lazy-user-del", "yes");
    big_set(&mut con, "big");
    let _: i64 = con.del("big").unwrap();
    assert!(freed(&mut con, 2));
    // A flush: every key, at once.
    for i in 0..10 {
        let _: () = con.set(format!("k{i}"), i).unwrap();
    }
    let _: () = redis::cmd("FLUSHALL").arg("ASYNC").query(&mut con).unwrap();
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut con).unwrap(), 0);
    assert!(freed(&mut con, 12));
    let _: () = con.set("k", 1).unwrap();
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    assert!(freed(&mut con, 12), "a plain FLUSHALL frees at once");
    config_set(&mut con, "lazyfree-lazy-user-flush", "yes");
    let _: () = con.set("k", 1).unwrap();
    let _: () = redis::cmd("FLUSHDB").query(&mut con).unwrap();
    assert!(freed(&mut con, 13));
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut con)
        .unwrap();
    assert_eq!(info_field(&mut con, "lazyfreed_objects"), "0");
}

/// Over `maxmemory`, keys are evicted before any command, a read too, as Redis's
/// `processCommand` does: here the limit is passed under `noeviction` (nothing may go), then
/// the policy allows eviction, and the next read (DBSIZE) makes room first.
#[test]
fn a_read_over_the_memory_limit_evicts_first() {
    let node = TestNode::start();
    let mut con = node.client();
    let value = "x".repeat(1000);
    for i in 0..200 {
        let _: () = con.set(format!("k{i}"), &value).unwrap();
    }
    config_set(&mut con, "maxmemory-policy", "noeviction");
    config_set(&mut con, "maxmemory", "100000");
    let refused = con.set::<_, _, ()>("more", "v").unwrap_err();
    assert!(refused.to_string().contains("OOM"), "{refused}");
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut con).unwrap(), 200);
    config_set(&mut con, "maxmemory-policy", "allkeys-random");
    let left: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert!(left < 200, "DBSIZE evicted nothing first: {left} keys");
    let evicted: i64 = info_field(&mut con, "evicted_keys").parse().unwrap();
    assert_eq!(evicted, 200 - left);
}

/// CONFIG SET `name` `value`, which must succeed.
fn config_set(con: &mut redis::Connection, name: &str, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(con)
        .unwrap_or_else(|e| panic!("CONFIG SET {name} {value}: {e}"));
}

/// A fresh directory for a test's Unix sockets (its paths stay well within a socket
/// address's 107 bytes).
fn socket_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("shoal-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// A node with both Unix sockets (`r.sock` for RESP, `m.sock` for Memcached) in a fresh
/// directory, its settings otherwise changed by `f`; with the two paths.
fn unix_node(
    test: &str,
    f: impl FnOnce(&mut shoal_node::NodeConfig),
) -> (TestNode, std::path::PathBuf, std::path::PathBuf) {
    let dir = socket_dir(test);
    let (resp, mc) = (dir.join("r.sock"), dir.join("m.sock"));
    let node = TestNode::with(|c| {
        c.unixsocket = resp.to_str().unwrap().into();
        c.memcache_unixsocket = mc.to_str().unwrap().into();
        f(c);
    });
    (node, resp, mc)
}

fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("socket file")
        .permissions()
        .mode()
        & 0o777
}

/// `unixsocket` and `memcache-unixsocket`: redis-py, pymemcache and pylibmc (text and
/// binary) on the sockets, each reading what the others wrote, CLIENT LIST's `U` and
/// `<path>:0` addresses, CLIENT KILL ADDR; the files take their permissions and go when the
/// node stops.
#[test]
fn unix_sockets_serve_redis_and_memcached_clients() {
    let (node, resp, mc) = unix_node("unix-clients", |c| {
        c.unixsocketperm = "770".parse().unwrap();
    });
    assert_eq!(mode_of(&resp), 0o770);
    assert_eq!(mode_of(&mc), 0o700, "memcached's -a default");
    let port = node.addr.port().to_string();
    shoal_tests::python_client(
        "unix.py",
        &[resp.to_str().unwrap(), mc.to_str().unwrap(), &port],
    );
    node.stop();
    assert!(!resp.exists() && !mc.exists(), "the socket files stay");
    let _ = std::fs::remove_dir_all(resp.parent().unwrap());
}

/// A socket file left at the path (a node that was killed) is replaced, as Redis and
/// memcached replace it; any other file there is refused and left as it was.
#[test]
fn a_stale_socket_file_is_replaced_and_another_file_refused() {
    use std::io::{Read, Write};
    let dir = socket_dir("unix-stale");
    let path = dir.join("shoal.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).expect("a socket file"));
    assert!(path.exists() && std::os::unix::net::UnixStream::connect(&path).is_err());
    let node = TestNode::with(|c| c.unixsocket = path.to_str().unwrap().into());
    let mut s = std::os::unix::net::UnixStream::connect(&path).expect("the node listens");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    let mut reply = [0u8; 7];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+PONG\r\n");
    node.stop();
    assert!(!path.exists());

    std::fs::write(&path, b"not a socket").unwrap();
    let config = shoal_node::NodeConfig {
        port: 0,
        unixsocket: path.to_str().unwrap().into(),
        ..Default::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let refused = runtime
        .block_on(shoal_node::start(config, None))
        .err()
        .expect("a node must not start over a file that is not a socket")
        .to_string();
    assert!(
        refused.contains(path.to_str().unwrap()) && refused.contains("not a socket"),
        "{refused}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"not a socket");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that writes a whole pipeline before it reads any reply (hiredis's throughput
/// test, redis-py's pipelines) is read and served on while its replies wait, as Redis reads
/// on: stopping to read would leave both ends waiting for the other for ever. On Unix
/// sockets, whose buffers hold far less than the pipeline and its replies, in both
/// protocols; the writes would time out on a node that stopped reading (or that stopped
/// at 1 MiB of input it read and did not serve).
#[test]
fn a_pipeline_written_before_any_reply_is_read_is_served() {
    use std::io::{Read, Write};
    let (node, resp, mc) = unix_node("unix-pipeline", |_| {});
    let value = "v".repeat(5_000);
    let key = "k".repeat(240);
    let mut con = node.client();
    let _: () = con.set(&key, &value).unwrap();
    // Writes `requests` whole (each write may wait 10 s at most), then reads `expected`
    // bytes of replies.
    let round_trip = |path: &std::path::Path, requests: Vec<u8>, expected: usize| {
        let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&requests)
            .expect("the node reads the pipeline while its replies wait");
        let mut got = vec![0u8; expected];
        s.read_exact(&mut got).expect("every reply");
        got
    };
    // 1.6 MB of requests: more than a read takes at once (1 MiB), so the node also serves
    // input it holds while the output waits, not only what it reads then.
    const N: usize = 6_000;
    let get = format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
    let reply = format!("${}\r\n{value}\r\n", value.len());
    // Then a 3 MB value, arriving while the GETs' replies wait: read on past 1 MiB.
    let big = "b".repeat(3 << 20);
    let mut requests = get.repeat(N).into_bytes();
    requests.extend_from_slice(
        format!(
            "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n{big}\r\n",
            big.len()
        )
        .as_bytes(),
    );
    let got = round_trip(&resp, requests, reply.len() * N + 5);
    let (gets, set) = got.split_at(reply.len() * N);
    assert!(gets.chunks(reply.len()).all(|r| r == reply.as_bytes()));
    assert_eq!(set, b"+OK\r\n");
    let stored: String = con.get("big").unwrap();
    assert_eq!(stored.len(), big.len());
    let get = format!("get {key}\r\n");
    let reply = format!("VALUE {key} 0 {}\r\n{value}\r\nEND\r\n", value.len());
    let got = round_trip(&mc, get.repeat(N).into_bytes(), reply.len() * N);
    assert!(got.chunks(reply.len()).all(|r| r == reply.as_bytes()));
    drop(node);
    let _ = std::fs::remove_dir_all(resp.parent().unwrap());
}

/// With `requirepass`, the Unix sockets ask for the password as the TCP ports do: RESP
/// answers NOAUTH until AUTH, Memcached `CLIENT_ERROR unauthenticated`.
#[test]
fn unix_sockets_require_the_password() {
    use std::io::{Read, Write};
    let (node, resp, mc) = unix_node("unix-auth", |c| c.requirepass = "s3cret".into());
    let exchange = |s: &mut std::os::unix::net::UnixStream, request: &str, reply: &str| {
        s.write_all(request.as_bytes()).unwrap();
        let mut got = vec![0u8; reply.len()];
        s.read_exact(&mut got).unwrap();
        assert_eq!(String::from_utf8_lossy(&got), reply, "{request:?}");
    };
    let connect = |path: &std::path::Path| {
        let s = std::os::unix::net::UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    };
    let mut r = connect(&resp);
    exchange(&mut r, "PING\r\n", "-NOAUTH Authentication required.\r\n");
    exchange(&mut r, "AUTH s3cret\r\n", "+OK\r\n");
    exchange(&mut r, "PING\r\n", "+PONG\r\n");
    let mut m = connect(&mc);
    exchange(&mut m, "get k\r\n", "CLIENT_ERROR unauthenticated\r\n");
    drop(node);
    let _ = std::fs::remove_dir_all(resp.parent().unwrap());
}
