//! The Memcached front end over real TCP: raw protocol exchanges, a real Memcached client
//! library (the `memcache` crate), libmemcached's `memccapable`, and one keyspace shared
//! with the Redis protocol. `.ci/run` installs libmemcached-tools; a missing memccapable
//! fails the test rather than skipping it.

use std::time::Duration;

use redis::Commands;
use shoal_tests::{bin, read_bin, read_exact_by, send, wait_until, TestNode};

const T: Duration = Duration::from_secs(10);

fn node() -> TestNode {
    TestNode::with(|c| c.memcache_port = Some(0))
}

fn raw(node: &TestNode) -> std::net::TcpStream {
    let s = std::net::TcpStream::connect(node.memcache_addr.expect("memcache listener")).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s
}

/// A connection past `maxclients` is told so in memcached 1.6's words and closed (memcached's
/// own `t/maxconns.t` reads them).
#[test]
fn a_connection_past_maxclients_gets_memcacheds_refusal() {
    let node = TestNode::with(|c| {
        c.memcache_port = Some(0);
        c.maxclients = 1;
    });
    let mut first = raw(&node);
    exchange(&mut first, "version\r\n", "VERSION 1.6.21\r\n");
    let mut second = raw(&node);
    let (bytes, closed) = shoal_tests::read_to_close(&mut second, T);
    assert_eq!(bytes, b"ERROR Too many open connections\r\n");
    assert!(closed);
}

/// Sends `req` and expects exactly `want` back.
#[track_caller]
fn exchange(s: &mut std::net::TcpStream, req: &str, want: &str) {
    send(s, req.as_bytes());
    let got = read_exact_by(s, want.len(), T);
    assert_eq!(String::from_utf8_lossy(&got), want, "request: {req:?}");
}

#[test]
fn storage_and_retrieval_commands() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "set k 42 0 5\r\nhello\r\n", "STORED\r\n");
    exchange(&mut s, "get k\r\n", "VALUE k 42 5\r\nhello\r\nEND\r\n");
    exchange(&mut s, "add k 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    exchange(&mut s, "add n 0 0 1\r\nx\r\n", "STORED\r\n");
    exchange(&mut s, "replace missing 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    exchange(&mut s, "append k 0 0 3\r\n!!!\r\n", "STORED\r\n");
    exchange(&mut s, "prepend k 0 0 2\r\n>>\r\n", "STORED\r\n");
    exchange(
        &mut s,
        "get k\r\n",
        "VALUE k 42 10\r\n>>hello!!!\r\nEND\r\n",
    );
    exchange(&mut s, "append missing 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    exchange(
        &mut s,
        "get k n missing\r\n",
        "VALUE k 42 10\r\n>>hello!!!\r\nVALUE n 0 1\r\nx\r\nEND\r\n",
    );
    exchange(&mut s, "delete n\r\n", "DELETED\r\n");
    exchange(&mut s, "delete n\r\n", "NOT_FOUND\r\n");
    exchange(&mut s, "set flags 4294967295 0 1\r\nf\r\n", "STORED\r\n");
    exchange(
        &mut s,
        "get flags\r\n",
        "VALUE flags 4294967295 1\r\nf\r\nEND\r\n",
    );
    // noreply: nothing comes back, the next command answers normally.
    exchange(
        &mut s,
        "set q 0 0 1 noreply\r\nq\r\nget q\r\n",
        "VALUE q 0 1\r\nq\r\nEND\r\n",
    );
}

/// The CAS unique of `key`, read with `gets`.
fn cas_of(s: &mut std::net::TcpStream, key: &str) -> u64 {
    send(s, format!("gets {key}\r\n").as_bytes());
    let text = shoal_tests::read_until_end(s, T);
    let header = text.lines().next().unwrap();
    header
        .split(' ')
        .nth(4)
        .expect("gets returns a cas")
        .parse()
        .unwrap()
}

#[test]
fn cas_uniques_change_with_every_change() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "set c 0 0 1\r\na\r\n", "STORED\r\n");
    let first = cas_of(&mut s, "c");
    exchange(&mut s, "cas c 0 0 1 12345\r\nb\r\n", "EXISTS\r\n");
    exchange(
        &mut s,
        &format!("cas c 0 0 1 {first}\r\nb\r\n"),
        "STORED\r\n",
    );
    exchange(
        &mut s,
        &format!("cas c 0 0 1 {first}\r\nc\r\n"),
        "EXISTS\r\n",
    );
    let second = cas_of(&mut s, "c");
    assert_ne!(first, second);
    // A change through the Redis protocol changes the unique too.
    let mut con = node.client();
    let _: () = con.append("c", "!").unwrap();
    assert_ne!(cas_of(&mut s, "c"), second);
    exchange(&mut s, "cas nope 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n");
}

#[test]
fn incr_decr_touch_and_errors() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "set n 5 0 2\r\n10\r\n", "STORED\r\n");
    exchange(&mut s, "incr n 5\r\n", "15\r\n");
    exchange(&mut s, "decr n 100\r\n", "0\r\n");
    exchange(
        &mut s,
        "set big 0 0 20\r\n18446744073709551615\r\n",
        "STORED\r\n",
    );
    exchange(&mut s, "incr big 2\r\n", "1\r\n");
    exchange(&mut s, "incr missing 1\r\n", "NOT_FOUND\r\n");
    exchange(&mut s, "set word 0 0 3\r\nabc\r\n", "STORED\r\n");
    exchange(
        &mut s,
        "incr word 1\r\n",
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
    );
    // The number alone (memcached would pad it with spaces to the old length: see README).
    exchange(&mut s, "get n\r\n", "VALUE n 5 1\r\n0\r\nEND\r\n");
    exchange(&mut s, "touch n 100\r\n", "TOUCHED\r\n");
    exchange(&mut s, "touch missing 100\r\n", "NOT_FOUND\r\n");
    let mut con = node.client();
    let ttl: i64 = con.ttl("n").unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    exchange(&mut s, "bogus\r\n", "ERROR\r\n");
    let long_key = "k".repeat(251);
    exchange(
        &mut s,
        &format!("get {long_key}\r\n"),
        "CLIENT_ERROR bad command line format\r\n",
    );
    exchange(
        &mut s,
        "set k 0 0 3\r\nabcde\r\n",
        "CLIENT_ERROR bad data chunk\r\nERROR\r\n",
    );
    // The connection keeps working after client errors.
    exchange(&mut s, "version\r\n", "VERSION 1.6.21\r\n");
}

#[test]
fn oversized_items_are_refused_after_their_data() {
    let node = TestNode::with(|c| {
        c.memcache_port = Some(0);
        c.memcache_max_item_size = shoal_node::ByteSize(4096);
    });
    let mut s = raw(&node);
    let data = "x".repeat(10_000);
    exchange(
        &mut s,
        &format!("set big 0 0 {}\r\n{data}\r\n", data.len()),
        "SERVER_ERROR object too large for cache\r\n",
    );
    exchange(&mut s, "get big\r\n", "END\r\n");
    // Counted as memcached counts it.
    let text = stats(&mut s, "stats");
    assert!(text.contains("STAT store_too_large 1\r\n"), "{text}");
    assert!(text.contains("STAT store_no_memory 0\r\n"), "{text}");
}

/// An HTTP request line sent to the Memcached port is hung up on without a reply, as
/// memcached does (a web page cannot script the cache across protocols); an unknown command
/// that is no HTTP line is still answered ERROR.
#[test]
fn an_http_request_line_is_hung_up_on() {
    let node = node();
    for line in [
        "GET / HTTP/1.0\r\n",
        "PUT /asdf/asd/fasdfasdf/sadf HTTP/1.1\r\n",
        "DELETE HTTP/1.1\r\n",
    ] {
        let mut s = raw(&node);
        send(&mut s, line.as_bytes());
        let (reply, closed) = shoal_tests::read_to_close(&mut s, T);
        assert!(
            reply.is_empty() && closed,
            "{line:?}: {reply:?}, closed {closed}"
        );
    }
    let mut s = raw(&node);
    exchange(&mut s, "bogus HTTP\r\n", "ERROR\r\n");
}

#[test]
fn expiry_times_follow_memcached() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "set neg 0 -1 1\r\nx\r\n", "STORED\r\n");
    exchange(&mut s, "get neg\r\n", "END\r\n");
    exchange(&mut s, "set rel 0 100 1\r\nx\r\n", "STORED\r\n");
    let far_future = 2_000_000_000u64; // an absolute Unix time (> 30 days), in 2033
    exchange(
        &mut s,
        &format!("set abs 0 {far_future} 1\r\nx\r\n"),
        "STORED\r\n",
    );
    // Past 32 bits a time wraps, as memcached reads it into an `int32_t`: 4,000,000,000 is
    // negative there, so the item is gone at once.
    exchange(&mut s, "set wraps 0 4000000000 1\r\nx\r\n", "STORED\r\n");
    exchange(&mut s, "get wraps\r\n", "END\r\n");
    // A gats to a past time (libmemcached's -1) answers the item with its CAS, then it is
    // gone.
    exchange(&mut s, "set gc 3 0 1\r\nx\r\n", "STORED\r\n");
    let gets = answer_up_to(&mut s, "gets gc\r\n", "END\r\n");
    assert!(gets.starts_with("VALUE gc 3 1 ") && !gets.starts_with("VALUE gc 3 1 0\r\n"));
    assert_eq!(
        answer_up_to(&mut s, "gats 4294967295 gc\r\n", "END\r\n"),
        gets
    );
    exchange(&mut s, "get gc\r\n", "END\r\n");
    exchange(&mut s, "set past 0 1000000000 1\r\nx\r\n", "STORED\r\n");
    exchange(&mut s, "get past\r\n", "END\r\n");
    let mut con = node.client();
    let rel: i64 = con.ttl("rel").unwrap();
    assert!((99..=100).contains(&rel), "{rel}");
    let abs: i64 = redis::cmd("EXPIRETIME").arg("abs").query(&mut con).unwrap();
    assert_eq!(abs, far_future as i64);
    exchange(&mut s, "set short 0 1 1\r\nx\r\n", "STORED\r\n");
    assert!(
        wait_until(Duration::from_secs(5), || {
            !con.exists::<_, bool>("short").unwrap()
        }),
        "a 1-second item did not expire"
    );
}

#[test]
fn one_keyspace_for_both_protocols() {
    let node = node();
    let mut s = raw(&node);
    let mut con = node.client();
    let _: () = con.set("from-redis", "r-value").unwrap();
    exchange(
        &mut s,
        "get from-redis\r\n",
        "VALUE from-redis 0 7\r\nr-value\r\nEND\r\n",
    );
    exchange(&mut s, "set from-mc 7 0 4\r\nmemc\r\n", "STORED\r\n");
    let v: String = con.get("from-mc").unwrap();
    assert_eq!(v, "memc");
    // INCR over RESP keeps the Memcached flags; SET resets them.
    exchange(&mut s, "set counter 9 0 1\r\n1\r\n", "STORED\r\n");
    let n: i64 = con.incr("counter", 1).unwrap();
    assert_eq!(n, 2);
    exchange(
        &mut s,
        "get counter\r\n",
        "VALUE counter 9 1\r\n2\r\nEND\r\n",
    );
    let _: () = con.set("counter", "3").unwrap();
    exchange(
        &mut s,
        "get counter\r\n",
        "VALUE counter 0 1\r\n3\r\nEND\r\n",
    );
    // A counter a memcached decr made shorter stays a number INCR takes.
    exchange(&mut s, "set c 0 0 3\r\n100\r\n", "STORED\r\n");
    exchange(&mut s, "decr c 1\r\n", "99\r\n");
    let n: i64 = con.incr("c", 1).unwrap();
    assert_eq!(n, 100);
    exchange(&mut s, "flush_all\r\n", "OK\r\n");
    let size: i64 = redis::cmd("DBSIZE").query(&mut con).unwrap();
    assert_eq!(size, 0);
}

/// A hash, set or list written through RESP is not a Memcached item: reads miss, edits find
/// nothing, and only a plain write replaces it.
#[test]
fn a_collection_is_no_memcached_item() {
    let node = node();
    let mut s = raw(&node);
    let mut con = node.client();
    let _: i64 = redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query(&mut con)
        .unwrap();
    let _: i64 = redis::cmd("EXPIRE")
        .arg("h")
        .arg(100)
        .query(&mut con)
        .unwrap();
    exchange(&mut s, "get h\r\n", "END\r\n");
    exchange(&mut s, "gat 0 h\r\n", "END\r\n");
    exchange(&mut s, "append h 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    exchange(&mut s, "prepend h 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    exchange(&mut s, "incr h 1\r\n", "NOT_FOUND\r\n");
    exchange(&mut s, "touch h 0\r\n", "NOT_FOUND\r\n");
    exchange(&mut s, "mg h v T0\r\n", "EN\r\n");
    exchange(&mut s, "mg h v N30\r\n", "EN\r\n");
    exchange(&mut s, "ma h\r\n", "NF\r\n");
    exchange(&mut s, "add h 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    // Untouched by all of the above: still a hash with its TTL.
    let t: String = redis::cmd("TYPE").arg("h").query(&mut con).unwrap();
    assert_eq!(t, "hash");
    let ttl: i64 = con.ttl("h").unwrap();
    assert!(ttl > 90, "{ttl}");
    exchange(&mut s, "set h 0 0 1\r\nx\r\n", "STORED\r\n");
    exchange(&mut s, "get h\r\n", "VALUE h 0 1\r\nx\r\nEND\r\n");
    let _: i64 = redis::cmd("SADD")
        .arg("s")
        .arg("m")
        .query(&mut con)
        .unwrap();
    exchange(&mut s, "delete s\r\n", "DELETED\r\n");
    let n: i64 = redis::cmd("EXISTS").arg("s").query(&mut con).unwrap();
    assert_eq!(n, 0);
}

#[test]
fn meta_commands() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "ms mk 2 F5 T100\r\nhi\r\n", "HD\r\n");
    exchange(&mut s, "mg mk v f t\r\n", "VA 2 f5 t100\r\nhi\r\n");
    exchange(&mut s, "mg mk s k Oab\r\n", "HD s2 kmk Oab\r\n");
    exchange(&mut s, "mg missing v\r\n", "EN\r\n");
    exchange(&mut s, "mg missing v k Oab\r\n", "EN kmissing Oab\r\n");
    exchange(&mut s, "mg missing v q\r\nmn\r\n", "MN\r\n");
    exchange(&mut s, "ms mk 1 ME\r\nx\r\n", "NS\r\n");
    exchange(&mut s, "ms mk 2 MA\r\n!!\r\n", "HD\r\n");
    exchange(&mut s, "mg mk v\r\n", "VA 4\r\nhi!!\r\n");
    exchange(&mut s, "ma cnt N0 J10\r\n", "HD\r\n");
    exchange(&mut s, "ma cnt D5 v\r\n", "VA 2\r\n15\r\n");
    exchange(&mut s, "ma cnt MD D20 v\r\n", "VA 1\r\n0\r\n");
    exchange(&mut s, "ma nothere\r\n", "NF\r\n");
    exchange(&mut s, "md mk q\r\nmn\r\n", "MN\r\n");
    exchange(&mut s, "md mk\r\n", "NF\r\n");
    // base64 keys.
    exchange(&mut s, "ms Zm9v 1 b\r\nz\r\n", "HD\r\n");
    exchange(&mut s, "get foo\r\n", "VALUE foo 0 1\r\nz\r\nEND\r\n");
    exchange(&mut s, "mg YmFy b v k\r\n", "EN kYmFy b\r\n");
    // As memcached 1.6.18: letters outside its mg/ms table are refused.
    exchange(&mut s, "mg foo v zz\r\n", "CLIENT_ERROR invalid flag\r\n");
    exchange(
        &mut s,
        "ms foo 1 E55\r\nx\r\n",
        "CLIENT_ERROR invalid flag\r\n",
    );
    // touch keeps the CAS unique, as in memcached: touch then cas works.
    exchange(&mut s, "set t 0 0 1\r\nx\r\n", "STORED\r\n");
    let before = cas_of(&mut s, "t");
    exchange(&mut s, "touch t 100\r\n", "TOUCHED\r\n");
    assert_eq!(cas_of(&mut s, "t"), before);
    exchange(
        &mut s,
        &format!("cas t 0 0 1 {before}\r\ny\r\n"),
        "STORED\r\n",
    );
}

/// What `request` is answered, byte by byte up to `end`.
fn answer_up_to(s: &mut std::net::TcpStream, request: &str, end: &str) -> String {
    send(s, request.as_bytes());
    let mut text = String::new();
    while !text.ends_with(end) {
        let chunk = read_exact_by(s, 1, T);
        assert!(!chunk.is_empty(), "{request:?} got no {end:?}: {text:?}");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text
}

/// The lines a `stats` request (`request` without its line end) answers, up to its END.
fn stats(s: &mut std::net::TcpStream, request: &str) -> String {
    answer_up_to(s, &format!("{request}\r\n"), "END\r\n")
}

#[test]
fn stats_report_the_fields_exporters_read() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "set a 0 0 1\r\n1\r\n", "STORED\r\n");
    exchange(
        &mut s,
        "get a\r\nget b\r\n",
        "VALUE a 0 1\r\n1\r\nEND\r\nEND\r\n",
    );
    let text = stats(&mut s, "stats");
    let stat = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("STAT {name} ")))
            .unwrap_or_else(|| panic!("stats lacks {name}"))
            .to_string()
    };
    assert_eq!(stat("pid"), std::process::id().to_string());
    assert_eq!(stat("curr_items"), "1");
    assert_eq!(stat("get_hits"), "1");
    assert_eq!(stat("get_misses"), "1");
    assert_eq!(stat("cmd_set"), "1");
    assert_eq!(stat("limit_maxbytes"), "1073741824");
    // With no maxmemory, the machine's memory (memcached always has a limit, and tools take
    // `limit_maxbytes - bytes` as the room left: 0 made memcstat --analyze wrap around).
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .query(&mut node.client())
        .expect("CONFIG SET");
    let unlimited = stats(&mut s, "stats");
    let limit: u64 = unlimited
        .lines()
        .find_map(|l| l.strip_prefix("STAT limit_maxbytes "))
        .and_then(|v| v.trim().parse().ok())
        .expect("limit_maxbytes");
    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    let total_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .expect("MemTotal");
    assert_eq!(limit, total_kb * 1024);
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "1gb"])
        .query(&mut node.client())
        .expect("CONFIG SET");
    // Every item is in class 1 (no slab classes here), which cachedump lists.
    exchange(
        &mut s,
        "stats cachedump 1 1\r\n",
        "ITEM a [1 b; 0 s]\r\nEND\r\n",
    );
    exchange(&mut s, "stats cachedump 2 0\r\n", "END\r\n");
    exchange(
        &mut s,
        "stats cachedump 64 1\r\n",
        "CLIENT_ERROR Illegal slab id\r\n",
    );
    exchange(
        &mut s,
        "stats cachedump 1\r\n",
        "CLIENT_ERROR bad command line\r\n",
    );
    let items = stats(&mut s, "stats items");
    assert!(items.contains("STAT items:1:number 1\r\n"), "{items}");
    exchange(&mut s, "cache_memlimit 50\r\n", "OK\r\n");
    assert_eq!(node.engine().store.maxmemory(), 50 << 20);
    for field in [
        "uptime",
        "total_items",
        "bytes",
        "curr_connections",
        "evictions",
        "threads",
        "cmd_get",
    ] {
        stat(field);
    }
    // `stats settings`: the limits in memcached's names (exporters read them).
    let text = stats(&mut s, "stats settings");
    for (name, want) in [
        ("maxbytes", "52428800"),
        ("item_size_max", "1048576"),
        ("cas_enabled", "yes"),
        ("evictions", "on"),
        ("inter", "127.0.0.1"),
        ("domain_socket", "NULL"),
        ("flush_enabled", "yes"),
        ("idle_timeout", "0"),
        ("ssl_enabled", "no"),
    ] {
        let line = format!("STAT {name} {want}\r\n");
        assert!(text.contains(&line), "{line:?} in {text}");
    }
    assert!(text.contains("STAT maxconns "), "{text}");
}

/// One reply line (up to its `\r\n`).
fn reply_line(s: &mut std::net::TcpStream, request: &str) -> String {
    answer_up_to(s, request, "\r\n")
}

/// `mg`'s `h` (read before?) and `l` (seconds since the last access) tell the item's state
/// before this read, and `u` leaves both as they were, as memcached's `t/metaget.t` checks.
#[test]
fn meta_get_tells_whether_and_when_an_item_was_read() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "ms hit 3 T100\r\nhit\r\n", "HD\r\n");
    exchange(&mut s, "mg hit h\r\n", "HD h0\r\n");
    exchange(&mut s, "mg hit h\r\n", "HD h1\r\n");
    exchange(&mut s, "ms hit 3 T100\r\nnew\r\n", "HD\r\n");
    exchange(&mut s, "mg hit h\r\n", "HD h0\r\n");
    exchange(&mut s, "ms nu 3 T100\r\nhit\r\n", "HD\r\n");
    exchange(&mut s, "mg nu u h\r\n", "HD h0\r\n");
    exchange(&mut s, "mg nu h\r\n", "HD h0\r\n");
    exchange(&mut s, "mg nu u h\r\n", "HD h1\r\n");
    // A plain get counts as a read too, and me shows it.
    exchange(&mut s, "set g 0 0 1\r\nx\r\n", "STORED\r\n");
    assert!(reply_line(&mut s, "me g\r\n").contains(" fetch=no "));
    exchange(&mut s, "get g\r\n", "VALUE g 0 1\r\nx\r\nEND\r\n");
    exchange(&mut s, "mg g h\r\n", "HD h1\r\n");
    // `l`: reads with `u` do not reset it, so it grows to a second; a plain read resets it.
    let idle = |s: &mut std::net::TcpStream, req: &str| -> u64 {
        let line = reply_line(s, req);
        line.trim_end()
            .strip_prefix("HD l")
            .unwrap_or_else(|| panic!("{req:?} answered {line:?}"))
            .parse()
            .unwrap()
    };
    exchange(&mut s, "ms la 2 T100\r\nla\r\n", "HD\r\n");
    assert!(
        wait_until(Duration::from_secs(5), || idle(&mut s, "mg la u l\r\n")
            >= 1),
        "l never reached a second"
    );
    assert!(idle(&mut s, "mg la l\r\n") >= 1);
    assert_eq!(idle(&mut s, "mg la u l\r\n"), 0);
}

/// CAS uniques differ between keys, also for keys written in the same millisecond (memcached's
/// `t/cas.t` checks two keys set in a row).
#[test]
fn cas_uniques_differ_between_keys() {
    let node = node();
    let mut s = raw(&node);
    let mut all = std::collections::HashSet::new();
    for i in 0..20 {
        exchange(&mut s, &format!("set c{i} 0 0 1\r\nx\r\n"), "STORED\r\n");
    }
    for i in 0..20 {
        assert!(
            all.insert(cas_of(&mut s, &format!("c{i}"))),
            "c{i}'s CAS repeats"
        );
    }
}

#[test]
fn a_memcached_client_library_works_unchanged() {
    let node = node();
    let url = format!("memcache://{}?protocol=ascii", node.memcache_addr.unwrap());
    let client = memcache::Client::connect(url).expect("memcache client connects");
    client.set("lib", "value", 0).unwrap();
    let v: Option<String> = client.get("lib").unwrap();
    assert_eq!(v.as_deref(), Some("value"));
    let _ = client.add("lib", "other", 0);
    let v: Option<String> = client.get("lib").unwrap();
    assert_eq!(v.as_deref(), Some("value"), "add must not replace");
    client.append("lib", "+").unwrap();
    client.prepend("lib", "-").unwrap();
    let v: Option<String> = client.get("lib").unwrap();
    assert_eq!(v.as_deref(), Some("-value+"));
    client.set("n", 1u64, 100).unwrap();
    assert_eq!(client.increment("n", 41).unwrap(), 42);
    assert_eq!(client.decrement("n", 2).unwrap(), 40);
    let many: std::collections::HashMap<String, String> =
        client.gets(&["lib", "n", "none"]).unwrap();
    assert_eq!(many.len(), 2);
    assert!(client.delete("lib").unwrap());
    assert!(!client.delete("lib").unwrap());
    assert!(client.touch("n", 10).unwrap());
    let version = client.version().unwrap();
    assert!(version[0].1.starts_with("1.6."), "{version:?}");
    client.flush().unwrap();
    let v: Option<String> = client.get("n").unwrap();
    assert_eq!(v, None);
}

#[test]
fn memccapable_ascii_tests_pass() {
    let node = node();
    shoal_tests::memccapable(node.memcache_addr.unwrap(), "-a");
}

#[test]
fn noreply_silences_arithmetic_errors_and_a_later_flush_cancels_a_delayed_one() {
    let node = node();
    let mut s = raw(&node);
    exchange(&mut s, "set w 0 0 1\r\nx\r\n", "STORED\r\n");
    // memcached: a well-formed noreply request gets no reply, even when it fails.
    exchange(&mut s, "incr w 1 noreply\r\nmn\r\n", "MN\r\n");
    exchange(&mut s, "flush_all 100\r\n", "OK\r\n");
    assert_ne!(
        node.engine()
            .flush_at
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    exchange(&mut s, "flush_all\r\n", "OK\r\n");
    assert_eq!(
        node.engine()
            .flush_at
            .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "an immediate flush_all must cancel the pending delayed one"
    );
}

#[test]
fn a_multi_get_of_large_values_streams_instead_of_buffering() {
    // The output limit is far below the reply: the values must be streamed key by key.
    let node = TestNode::with(|c| {
        c.memcache_port = Some(0);
        c.client_output_buffer_limit.normal.hard = 1 << 20;
    });
    let mut s = raw(&node);
    let value = "v".repeat(100_000);
    exchange(
        &mut s,
        &format!("set big 0 0 {}\r\n{value}\r\n", value.len()),
        "STORED\r\n",
    );
    let keys = vec!["big"; 300].join(" ");
    send(&mut s, format!("get {keys}\r\n").as_bytes());
    let one = format!("VALUE big 0 {}\r\n{value}\r\n", value.len());
    let want = one.len() * 300 + "END\r\n".len();
    let got = read_exact_by(&mut s, want, T);
    assert_eq!(got.len(), want, "the multi-get reply was cut off");
    assert!(got.ends_with(b"END\r\n"));
}

/// The binary protocol on the same port: storage, retrieval with flags and CAS, the quiet
/// forms in a pipeline ended by NOOP, incr with an initial value, one keyspace with the text
/// protocol, and an oversized body refused from its header, then a close.
#[test]
fn the_binary_protocol_speaks_the_same_keyspace() {
    let node = node();
    let mut s = raw(&node);
    let set_extras = |flags: u32, exp: u32| [flags.to_be_bytes(), exp.to_be_bytes()].concat();
    // A header in two pieces is answered once whole.
    let get = bin(0x00, &[], b"k", &[], 0);
    send(&mut s, &get[..10]);
    send(&mut s, &get[10..]);
    let (op, status, _, _, _, value) = read_bin(&mut s);
    assert_eq!((op, status, value), (0x00, 0x0001, b"Not found".to_vec()));
    send(&mut s, &bin(0x01, &set_extras(7, 0), b"k", b"hello", 0));
    let (_, status, cas, ..) = read_bin(&mut s);
    assert_eq!(status, 0);
    assert_ne!(cas, 0, "a set answers the item's new CAS");
    send(&mut s, &bin(0x0c, &[], b"k", &[], 0));
    let (op, status, got_cas, extras, key, value) = read_bin(&mut s);
    assert_eq!((op, status, got_cas), (0x0c, 0, cas));
    assert_eq!(
        (extras, key, value),
        (
            7u32.to_be_bytes().to_vec(),
            b"k".to_vec(),
            b"hello".to_vec()
        )
    );
    // add of an existing key, a set with a stale CAS, replace of a missing key.
    send(&mut s, &bin(0x02, &set_extras(0, 0), b"k", b"x", 0));
    assert_eq!(read_bin(&mut s).1, 0x0002);
    send(&mut s, &bin(0x01, &set_extras(0, 0), b"k", b"x", cas + 1));
    assert_eq!(read_bin(&mut s).1, 0x0002);
    send(&mut s, &bin(0x03, &set_extras(0, 0), b"nope", b"x", 0));
    assert_eq!(read_bin(&mut s).1, 0x0001);
    // The text protocol sees the same item.
    exchange(&mut s, "get k\r\n", "VALUE k 7 5\r\nhello\r\nEND\r\n");
    // Quiet gets answer hits only; NOOP closes the batch.
    let mut batch = bin(0x09, &[], b"k", &[], 0);
    batch.extend(bin(0x09, &[], b"missing", &[], 0));
    batch.extend(bin(0x11, &set_extras(0, 0), b"q", b"quiet", 0));
    batch.extend(bin(0x0a, &[], &[], &[], 0));
    send(&mut s, &batch);
    let (op, status, _, _, _, value) = read_bin(&mut s);
    assert_eq!((op, status, value), (0x09, 0, b"hello".to_vec()));
    assert_eq!(
        read_bin(&mut s).0,
        0x0a,
        "the miss and the quiet set answer nothing"
    );
    // incr with an initial value creates the counter, then counts.
    let arith = |delta: u64, initial: u64, exp: u32| {
        [
            &delta.to_be_bytes()[..],
            &initial.to_be_bytes(),
            &exp.to_be_bytes(),
        ]
        .concat()
    };
    send(&mut s, &bin(0x05, &arith(5, 10, 0), b"n", &[], 0));
    assert_eq!(read_bin(&mut s).5, 10u64.to_be_bytes().to_vec());
    send(&mut s, &bin(0x05, &arith(5, 10, 0), b"n", &[], 0));
    assert_eq!(read_bin(&mut s).5, 15u64.to_be_bytes().to_vec());
    send(&mut s, &bin(0x06, &arith(1, 0, u32::MAX), b"none", &[], 0));
    assert_eq!(read_bin(&mut s).1, 0x0001, "no initial value: not found");
    send(&mut s, &bin(0x05, &arith(1, 0, 0), b"k", &[], 0));
    assert_eq!(read_bin(&mut s).1, 0x0006, "non-numeric value");
    // delete, version, an unknown opcode.
    send(&mut s, &bin(0x04, &[], b"k", &[], 0));
    assert_eq!(read_bin(&mut s).1, 0);
    send(&mut s, &bin(0x0b, &[], &[], &[], 0));
    assert_eq!(read_bin(&mut s).5, b"1.6.21".to_vec());
    send(&mut s, &bin(0x55, &[], &[], &[], 0));
    assert_eq!(read_bin(&mut s).1, 0x0081);
    // A body over the limit is refused once its key has come (the old value it names goes,
    // as memcached reads the key first too) and skipped as it comes, as memcached swallows
    // it: the connection goes on.
    let huge = bin(0x01, &set_extras(0, 0), b"big", &vec![b'v'; 3 << 20], 0);
    send(&mut s, &huge[..24 + 8 + 3]);
    let r = read_bin(&mut s);
    assert_eq!(r.1, 0x0003, "status Too large");
    send(&mut s, &huge[24 + 8 + 3..]);
    send(&mut s, &bin(0x0a, &[], &[], &[], 0));
    assert_eq!(read_bin(&mut s).1, 0, "the NOOP after it");
}

#[test]
fn memccapable_binary_tests_pass() {
    let node = node();
    shoal_tests::memccapable(node.memcache_addr.unwrap(), "-b");
}

/// SASL on the binary protocol: with `requirepass`, only SASL and VERSION pass before PLAIN
/// authentication with the password (user `default`), anything else is refused and closed
/// from its header; a wrong password is refused. An ACL user allowed everything logs in
/// too, one with restrictions does not (the Memcached commands are not checked one by one);
/// a name Shoal has no user of logs in as `default` (memcached's clients name their own).
/// Without a password SASL is an unknown command, as in memcached without `-S`.
#[test]
fn binary_clients_authenticate_with_sasl_plain() {
    let guarded = TestNode::with(|c| {
        c.memcache_port = Some(0);
        c.requirepass = "s3cret".into();
        c.user = vec![
            "admin on >adm ~* &* +@all".into(),
            "limited on >lim ~x:* +@all".into(),
        ];
    });
    // A request other than SASL or VERSION: refused from its header, and closed (memcached).
    let mut s = raw(&guarded);
    send(&mut s, &bin(0x00, &[], b"k", &[], 0));
    let (reply, closed) = shoal_tests::read_to_close(&mut s, T);
    assert_eq!(&reply[6..8], &[0x00, 0x20], "unauthenticated");
    assert!(closed);
    // So is a SASL body larger than credentials need, before it is read.
    let mut s = raw(&guarded);
    let mut big = bin(0x21, &[], b"PLAIN", &[], 0);
    big[8..12].copy_from_slice(&(1u32 << 20).to_be_bytes());
    send(&mut s, &big);
    let (reply, closed) = shoal_tests::read_to_close(&mut s, T);
    assert_eq!(&reply[6..8], &[0x00, 0x20]);
    assert!(closed);
    let mut s = raw(&guarded);
    send(&mut s, &bin(0x0b, &[], &[], &[], 0));
    assert_eq!(read_bin(&mut s).1, 0, "VERSION passes");
    send(&mut s, &bin(0x20, &[], &[], &[], 0));
    assert_eq!(read_bin(&mut s).5, b"PLAIN".to_vec());
    send(&mut s, &bin(0x21, &[], b"PLAIN", b"\0default\0wrong", 0));
    assert_eq!(read_bin(&mut s).1, 0x0020, "a wrong password");
    send(&mut s, &bin(0x21, &[], b"CRAM-MD5", b"x", 0));
    assert_eq!(read_bin(&mut s).1, 0x0020, "another mechanism");
    send(&mut s, &bin(0x21, &[], b"PLAIN", b"\0limited\0lim", 0));
    assert_eq!(read_bin(&mut s).1, 0x0020, "a user with restrictions");
    // A user Shoal knows logs in with its own password only, not `requirepass`.
    send(&mut s, &bin(0x21, &[], b"PLAIN", b"\0admin\0s3cret", 0));
    assert_eq!(
        read_bin(&mut s).1,
        0x0020,
        "a known user, another's password"
    );
    // A name Shoal has no user of (a memcached client's own SASL user, here with
    // memcached's realm and an authorization id) logs in as `default` with its password,
    // never with a wrong one.
    send(
        &mut s,
        &bin(0x21, &[], b"PLAIN", b"app\0app@memcached.realm\0wrong", 0),
    );
    assert_eq!(
        read_bin(&mut s).1,
        0x0020,
        "an unknown name, a wrong password"
    );
    let mut named = raw(&guarded);
    send(
        &mut named,
        &bin(0x21, &[], b"PLAIN", b"app\0app@memcached.realm\0s3cret", 0),
    );
    assert_eq!(read_bin(&mut named).5, b"Authenticated".to_vec());
    send(&mut named, &bin(0x00, &[], b"k", &[], 0));
    assert_eq!(read_bin(&mut named).1, 0x0001, "logged in: a plain miss");
    // So does memcached's text login.
    let mut text = raw(&guarded);
    exchange(
        &mut text,
        "set a 0 0 12\r\nadmin s3cret\r\n",
        "CLIENT_ERROR authentication failure\r\n",
    );
    exchange(
        &mut text,
        "set a 0 0 9\r\napp wrong\r\n",
        "CLIENT_ERROR authentication failure\r\n",
    );
    exchange(&mut text, "set a 0 0 10\r\napp s3cret\r\n", "STORED\r\n");
    exchange(&mut text, "get k\r\n", "END\r\n");
    let mut admin = raw(&guarded);
    send(&mut admin, &bin(0x21, &[], b"PLAIN", b"\0admin\0adm", 0));
    assert_eq!(read_bin(&mut admin).5, b"Authenticated".to_vec());
    send(&mut s, &bin(0x21, &[], b"PLAIN", b"\0default\0s3cret", 0));
    let (_, status, _, _, _, value) = read_bin(&mut s);
    assert_eq!((status, value), (0, b"Authenticated".to_vec()));
    send(&mut s, &bin(0x00, &[], b"k", &[], 0));
    assert_eq!(read_bin(&mut s).1, 0x0001, "authenticated: a plain miss");
    // Without a password there is no SASL.
    let open = node();
    let mut s = raw(&open);
    send(&mut s, &bin(0x20, &[], &[], &[], 0));
    assert_eq!(read_bin(&mut s).1, 0x0081);
    send(&mut s, &bin(0x00, &[], b"k", &[], 0));
    assert_eq!(read_bin(&mut s).1, 0x0001);
}

/// A RESP3 client tracking keys (client-side caching) is told when a Memcached write
/// changes one, and when flush_all empties the store.
#[test]
fn memcached_writes_invalidate_tracked_keys() {
    let node = node();
    let mut reader = node.raw();
    reader.set_read_timeout(Some(T)).unwrap();
    let cmd = |s: &mut std::net::TcpStream, args: &[&str], want: &str| {
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        send(s, req.as_bytes());
        let got = read_exact_by(s, want.len(), T);
        assert_eq!(String::from_utf8_lossy(&got), want, "{args:?}");
    };
    send(&mut reader, b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n");
    // HELLO's map ends with the modules entry, an empty array.
    let mut hello = Vec::new();
    while !hello.ends_with(b"$7\r\nmodules\r\n*0\r\n") {
        hello.extend(read_exact_by(&mut reader, 1, T));
    }
    cmd(&mut reader, &["CLIENT", "TRACKING", "ON"], "+OK\r\n");
    cmd(&mut reader, &["GET", "mk"], "_\r\n");
    let mut mc = raw(&node);
    exchange(&mut mc, "set mk 0 0 1\r\nv\r\n", "STORED\r\n");
    let push = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nmk\r\n";
    assert_eq!(
        String::from_utf8_lossy(&read_exact_by(&mut reader, push.len(), T)),
        push
    );
    // A get changes nothing: nothing is sent (the PING's answer comes next).
    cmd(&mut reader, &["GET", "mk"], "$1\r\nv\r\n");
    exchange(&mut mc, "get mk\r\n", "VALUE mk 0 1\r\nv\r\nEND\r\n");
    cmd(&mut reader, &["PING"], "+PONG\r\n");
    exchange(&mut mc, "flush_all\r\n", "OK\r\n");
    let all = ">2\r\n$10\r\ninvalidate\r\n_\r\n";
    assert_eq!(
        String::from_utf8_lossy(&read_exact_by(&mut reader, all.len(), T)),
        all
    );
}

/// The Memcached port runs its commands unchecked, so only a user allowed everything may
/// use it: once the default user is restricted (ACL SETUSER through RESP), a connection
/// that relied on it is closed at its next request and a new one must log in, which an
/// unrestricted user can.
#[test]
fn a_restricted_default_user_makes_memcached_log_in() {
    let node = node();
    let mut before = raw(&node);
    exchange(&mut before, "set k 0 0 1\r\nv\r\n", "STORED\r\n");
    let mut resp = node.client();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "default", "resetkeys", "~pub:*"])
        .query(&mut resp)
        .unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "admin", "on", ">adm", "~*", "&*", "+@all"])
        .query(&mut resp)
        .unwrap();
    send(&mut before, b"get k\r\n");
    let (reply, closed) = shoal_tests::read_to_close(&mut before, T);
    assert!(
        closed,
        "the connection relying on the default user is closed"
    );
    assert!(reply.is_empty(), "{}", String::from_utf8_lossy(&reply));
    let mut after = raw(&node);
    exchange(&mut after, "get k\r\n", "CLIENT_ERROR unauthenticated\r\n");
    exchange(&mut after, "set x 0 0 9\r\nadmin adm\r\n", "STORED\r\n");
    exchange(&mut after, "get k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n");
}

/// `memcache-disable-flush-all` (memcached's `-F`): flush_all is counted and refused, in
/// text (`CLIENT_ERROR flush_all not allowed`, nothing with noreply) and binary (memcached's
/// AUTH_ERROR), and the keys stay; `stats settings` says so; RESP's FLUSHALL still works.
#[test]
fn flush_all_can_be_disabled_as_memcached_dash_f() {
    let node = TestNode::with(|c| {
        c.memcache_port = Some(0);
        c.memcache_disable_flush_all = true;
    });
    let mut s = raw(&node);
    exchange(&mut s, "set k 0 0 1\r\nx\r\n", "STORED\r\n");
    exchange(
        &mut s,
        "flush_all\r\n",
        "CLIENT_ERROR flush_all not allowed\r\n",
    );
    exchange(&mut s, "flush_all 0 noreply\r\nmn\r\n", "MN\r\n");
    exchange(&mut s, "get k\r\n", "VALUE k 0 1\r\nx\r\nEND\r\n");
    send(&mut s, b"stats settings\r\n");
    let settings = shoal_tests::read_until_end(&mut s, T);
    assert!(settings.contains("STAT flush_enabled no\r\n"), "{settings}");
    send(&mut s, b"stats\r\n");
    let stats = shoal_tests::read_until_end(&mut s, T);
    assert!(stats.contains("STAT cmd_flush 2\r\n"), "{stats}");
    let mut b = raw(&node);
    send(&mut b, &bin(0x08, &[], b"", b"", 0));
    let (op, status, ..) = read_bin(&mut b);
    assert_eq!((op, status), (0x08, 0x20), "binary FLUSH: AUTH_ERROR");
    exchange(&mut s, "get k\r\n", "VALUE k 0 1\r\nx\r\nEND\r\n");
    let mut c = node.client();
    let () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    exchange(&mut s, "get k\r\n", "END\r\n");
}

/// With `timeout` set (memcached's `-o idle_timeout`), `stats` counts the connections it
/// closed as `idle_kicks`, as memcached does.
#[test]
fn stats_count_connections_closed_for_idleness() {
    let node = TestNode::with(|c| {
        c.memcache_port = Some(0);
        c.timeout = 1;
    });
    let mut idle = raw(&node);
    let text = stats(&mut idle, "stats");
    assert!(text.contains("STAT idle_kicks 0\r\n"), "{text}");
    // Nothing sent: the node closes it after a second.
    let (rest, closed) = shoal_tests::read_to_close(&mut idle, T);
    assert!(closed && rest.is_empty(), "{rest:?}");
    let mut fresh = raw(&node);
    let text = stats(&mut fresh, "stats");
    assert!(text.contains("STAT idle_kicks 1\r\n"), "{text}");
    // Without a timeout memcached leaves the field out.
    let plain = TestNode::with(|c| c.memcache_port = Some(0));
    let text = stats(&mut raw(&plain), "stats");
    assert!(!text.contains("idle_kicks"), "{text}");
}

/// `lru_crawler metadump all` lists every item in memcached's format (what memcached-tool's
/// `dump` and `keys` read), streamed in pieces past the output bound, then END; class
/// lists name class 1 or answer an empty dump, a bad one BADCLASS; none while the crawler
/// is disabled.
#[test]
fn lru_crawler_metadump_lists_every_item() {
    let node = node();
    let mut s = raw(&node);
    let mut load = String::new();
    for i in 0..5000 {
        load.push_str(&format!("set key/{i:05} 0 0 1 noreply\r\nx\r\n"));
    }
    send(&mut s, load.as_bytes());
    exchange(
        &mut s,
        "get key/00007\r\n",
        "VALUE key/00007 0 1\r\nx\r\nEND\r\n",
    );
    let dump = answer_up_to(&mut s, "lru_crawler metadump all\r\n", "END\r\n");
    let lines: Vec<&str> = dump.lines().filter(|l| l.starts_with("key=")).collect();
    assert_eq!(lines.len(), 5000);
    let seven = lines
        .iter()
        .find(|l| l.starts_with("key=key%2F00007 "))
        .expect("key/00007 listed, uri-encoded");
    assert!(
        seven.contains(" exp=-1 ") && seven.contains(" fetch=yes cls=1 size="),
        "{seven}"
    );
    assert!(lines.iter().filter(|l| l.contains(" fetch=no ")).count() == 4999);
    // `me <key> b` reads a base64 key (memcached's `me aw== b` after `ms aw== 1 b`), and
    // shows it as given.
    exchange(&mut s, "ms aw== 1 b\r\nx\r\n", "HD\r\n");
    let me = reply_line(&mut s, "me aw== b\r\n");
    assert!(
        me.starts_with("ME aw== exp=-1 ") && me.ends_with(" size=61\r\n"),
        "{me}"
    );
    // Sizes as memcached 1.6.18 gives them for these items (its `ITEM_ntotal`: the client
    // flags take 4 bytes unless they are 0), in the dump and in `me`.
    exchange(
        &mut s,
        "set zz1 5 0 10\r\n0123456789\r\nset zz0 0 0 10\r\n0123456789\r\n",
        "STORED\r\nSTORED\r\n",
    );
    let dump = answer_up_to(&mut s, "lru_crawler metadump all\r\n", "END\r\n");
    let size_of = |key: &str| {
        let line = dump.lines().find(|l| l.starts_with(&format!("key={key} ")));
        line.and_then(|l| l.rsplit(' ').next()).map(str::to_owned)
    };
    assert_eq!(size_of("zz1").as_deref(), Some("size=76"), "{dump}");
    assert_eq!(size_of("zz0").as_deref(), Some("size=72"), "{dump}");
    assert!(reply_line(&mut s, "me zz1\r\n").ends_with(" size=76\r\n"));
    assert!(reply_line(&mut s, "me zz0\r\n").ends_with(" size=72\r\n"));
    let by_hash = answer_up_to(&mut s, "lru_crawler metadump hash\r\n", "END\r\n");
    assert_eq!(
        by_hash.lines().filter(|l| l.starts_with("key=")).count(),
        5003
    );
    exchange(&mut s, "lru_crawler metadump 2,3\r\n", "END\r\n");
    exchange(
        &mut s,
        "lru_crawler metadump 99\r\n",
        "BADCLASS invalid class id\r\n",
    );
    // The crawler's knobs are answered as memcached's; while it is disabled, a crawl and a
    // dump are refused, as in memcached.
    exchange(&mut s, "lru_crawler crawl all\r\n", "OK\r\n");
    exchange(&mut s, "lru_crawler disable\r\n", "OK\r\n");
    let settings = answer_up_to(&mut s, "stats settings\r\n", "END\r\n");
    assert!(settings.contains("STAT lru_crawler no\r\n"), "{settings}");
    exchange(
        &mut s,
        "lru_crawler metadump all\r\n",
        "CLIENT_ERROR lru crawler disabled\r\n",
    );
    exchange(
        &mut s,
        "lru_crawler crawl 1\r\n",
        "CLIENT_ERROR lru crawler disabled\r\n",
    );
    exchange(&mut s, "lru_crawler enable\r\n", "OK\r\n");
    let dump = answer_up_to(&mut s, "lru_crawler metadump all\r\n", "END\r\n");
    assert_eq!(dump.lines().filter(|l| l.starts_with("key=")).count(), 5003);
}

/// `stats conns` lists the listening sockets and the connections by descriptor, in
/// memcached's lines: the descriptor is the one CLIENT LIST shows as `fd`, and a request
/// half sent shows as `conn_nread`, the connection asking as `conn_parse_cmd`.
#[test]
fn stats_conns_lists_the_sockets_as_memcached_does() {
    let node = node();
    let mc = node.memcache_addr.unwrap();
    let mut a = raw(&node);
    send(&mut a, b"set foo 0 0 6\r\n");
    let a_port = a.local_addr().unwrap().port();
    let mut b = raw(&node);
    let b_port = b.local_addr().unwrap().port();
    let mut stats = || {
        send(&mut b, b"stats conns\r\n");
        shoal_tests::read_until_end(&mut b, T)
    };
    // `<fd>:<name> <value>` of the entry whose `addr` is `addr`.
    let entry = |stats: &str, addr: &str| -> std::collections::HashMap<String, String> {
        let fd = stats
            .lines()
            .find_map(|l| {
                let (fd, rest) = l.strip_prefix("STAT ")?.split_once(':')?;
                (rest == format!("addr tcp:{addr}")).then(|| fd.to_string())
            })
            .unwrap_or_else(|| panic!("no entry for {addr} in {stats}"));
        stats
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("STAT {fd}:")))
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([("fd".to_string(), fd.clone())])
            .collect()
    };
    let mut seen = String::new();
    assert!(
        wait_until(T, || {
            seen = stats();
            entry(&seen, &format!("127.0.0.1:{a_port}"))["state"] == "conn_nread"
        }),
        "{seen}"
    );
    let listening = entry(&seen, &mc.to_string());
    assert_eq!(listening["state"], "conn_listening");
    // Only the Memcached listeners: a tool that looks for the listening port finds this one.
    assert!(
        !seen.contains(&format!("addr tcp:{}\r\n", node.addr)),
        "the RESP port is listed: {seen}"
    );
    assert!(!listening.contains_key("listen_addr"));
    let a_entry = entry(&seen, &format!("127.0.0.1:{a_port}"));
    assert_eq!(a_entry["listen_addr"], format!("tcp:{mc}"));
    assert!(a_entry["secs_since_last_cmd"].parse::<u64>().is_ok());
    let b_entry = entry(&seen, &format!("127.0.0.1:{b_port}"));
    assert_eq!(b_entry["state"], "conn_parse_cmd");
    // The descriptor is CLIENT LIST's `fd`.
    let mut con = node.client();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    let line = list
        .lines()
        .find(|l| l.contains(&format!("addr=127.0.0.1:{a_port} ")))
        .unwrap();
    assert!(line.contains(&format!(" fd={} ", a_entry["fd"])), "{line}");
    // The rest of the request: it is stored, and the connection waits for the next.
    exchange(&mut a, "fooval\r\n", "STORED\r\n");
    assert!(wait_until(T, || {
        let now = stats();
        entry(&now, &format!("127.0.0.1:{a_port}"))["state"] == "conn_waiting"
    }));
}
