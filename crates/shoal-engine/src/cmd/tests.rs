//! Every command's parsing and exact reply bytes, in RESP2 and RESP3, through the real parser:
//! each request is written inline and as a multibulk array, both must parse to the same
//! arguments, then it runs once against a fresh node with a controlled clock.

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{Bytes, BytesMut};
use shoal_resp::{Limits, Protocol, RequestParser};

use super::{execute, Session};
use crate::config::{ByteSize, NodeConfig};
use crate::engine::Engine;
use crate::hooks::{ClusterInfo, Host};

struct H {
    node: Single,
    session: Session,
    now: u64,
}

/// A single node around the engine, as the tests see it: no cluster, SHUTDOWN recorded.
struct Single {
    engine: Engine,
    stopped: AtomicBool,
}

impl Host for Single {
    fn engine(&self) -> &Engine {
        &self.engine
    }
    fn cluster(&self) -> Option<&dyn ClusterInfo> {
        None
    }
    fn shutdown(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

const T0: u64 = 1_700_000_000_000;

thread_local! {
    /// Set by the `resp3` module: the same tests run again on a RESP3 connection.
    static RESP3: Cell<bool> = const { Cell::new(false) };
}

impl H {
    fn new() -> H {
        H::with(|_| {})
    }

    fn with(f: impl FnOnce(&mut NodeConfig)) -> H {
        let mut cfg = NodeConfig::default();
        f(&mut cfg);
        let engine = Engine::new(cfg, None);
        let addr: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let info = engine.clients.register(addr, addr, Box::new(|_| {}));
        let mut session = Session::new(info, !super::acl::requires_auth(&engine));
        super::acl::start_session(&engine, &mut session);
        if RESP3.with(Cell::get) {
            session.proto = Protocol::Resp3;
        }
        H {
            node: Single {
                engine,
                stopped: AtomicBool::new(false),
            },
            session,
            now: T0,
        }
    }

    fn parse(bytes: &[u8]) -> Vec<Bytes> {
        let mut buf = BytesMut::from(bytes);
        let args = RequestParser::new()
            .parse(&mut buf, &Limits::default(), true)
            .expect("request parses")
            .expect("request is complete");
        assert!(buf.is_empty(), "request fully consumed");
        args
    }

    /// Runs `line` (inline syntax) and returns the encoded reply.
    fn run(&mut self, line: &str) -> String {
        let inline = H::parse(format!("{line}\r\n").as_bytes());
        let mut array = format!("*{}\r\n", inline.len()).into_bytes();
        for a in &inline {
            array.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            array.extend_from_slice(a);
            array.extend_from_slice(b"\r\n");
        }
        assert_eq!(H::parse(&array), inline, "inline and array forms differ");
        let reply = execute(&self.node, &mut self.session, &inline, self.now);
        let mut out = BytesMut::new();
        reply.encode(self.session.proto, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Compares with the RESP2 bytes; on a RESP3 connection a null bulk is `_` instead.
    #[track_caller]
    fn check(&mut self, line: &str, expected: &str) {
        let expected = match self.session.proto {
            Protocol::Resp2 => expected.to_string(),
            Protocol::Resp3 => expected.replace(NIL, NIL3),
        };
        assert_eq!(
            self.run(line),
            expected,
            "request: {line} ({:?})",
            self.session.proto
        );
    }

    fn resp3(&mut self) {
        self.session.proto = Protocol::Resp3;
    }
}

const OK: &str = "+OK\r\n";
const NIL: &str = "$-1\r\n";
const NIL3: &str = "_\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

#[test]
fn ping_echo_select_quit() {
    let mut h = H::new();
    h.check("PING", "+PONG\r\n");
    h.check("ping hello", &bulk("hello"));
    h.check(
        "PING a b",
        "-ERR wrong number of arguments for 'ping' command\r\n",
    );
    h.check("ECHO \"a b\"", &bulk("a b"));
    h.check(
        "ECHO",
        "-ERR wrong number of arguments for 'echo' command\r\n",
    );
    h.check("SELECT 0", OK);
    h.check("SELECT 16", "-ERR DB index is out of range\r\n");
    h.check("SELECT 15", OK);
    h.check("SELECT x", NOT_INT);
    h.check("QUIT", OK);
    assert!(h.session.close);
}

#[test]
fn unknown_commands_keep_the_connection() {
    let mut h = H::new();
    h.check(
        "FOO bar 'baz qux'",
        "-ERR unknown command 'FOO', with args beginning with: 'bar' 'baz qux' \r\n",
    );
    assert!(!h.session.close);
    h.check("PING", "+PONG\r\n");
}

#[test]
fn internal_rows_are_unknown_to_clients_and_run_for_shoal_itself() {
    let mut h = H::new();
    let run = |h: &mut H, args: &[&str]| {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
        let reply = execute(&h.node, &mut h.session, &args, h.now);
        let mut out = BytesMut::new();
        reply.encode(h.session.proto, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    let set = "set k 3 0 1\r\nx\r\n";
    assert_eq!(
        run(&mut h, &["mc.write", set, "k"]),
        "-ERR unknown command 'mc.write', with args beginning with: 'set k 3 0 1  x  ' 'k' \r\n"
    );
    h.check("GET k", NIL);
    h.session.internal = true;
    assert_eq!(run(&mut h, &["mc.write", set, "k"]), "$8\r\nSTORED\r\n\r\n");
    assert_eq!(
        run(&mut h, &["mc.read", "get k\r\n", "k"]),
        "$21\r\nVALUE k 3 1\r\nx\r\nEND\r\n\r\n"
    );
    // A request that is not one whole Memcached request is refused, not half run.
    let bad = "$40\r\nSERVER_ERROR bad request between nodes\r\n\r\n";
    assert_eq!(
        run(&mut h, &["mc.write", "set k 0 0 1\r\ny\r\nget k\r\n", "k"]),
        bad
    );
    assert_eq!(run(&mut h, &["mc.read", "get k", "k"]), bad);
    h.check("GET k", "$1\r\nx\r\n");
    // COMMAND shows none of them, even asked by name.
    h.check("COMMAND INFO mc.read", "*1\r\n$-1\r\n");
    h.check("COMMAND DOCS mc.write", "*0\r\n");
    h.check(
        "COMMAND GETKEYS mc.read x k",
        "-ERR Invalid command specified\r\n",
    );
}

#[test]
fn get_set_and_options() {
    let mut h = H::new();
    h.check("GET k", NIL);
    h.check("SET k v", OK);
    h.check("GET k", &bulk("v"));
    h.check("SET k v2 NX", NIL);
    h.check("SET k v2 XX", OK);
    h.check("SET n v XX", NIL);
    h.check("SET k v3 GET", &bulk("v2"));
    h.check("SET new v GET", NIL);
    h.check("SET k v NX XX", SYNTAX);
    h.check("SET k v EX 10 PX 100", SYNTAX);
    h.check("SET k v EX", SYNTAX);
    h.check("SET k v FOO", SYNTAX);
    h.check(
        "SET k v EX 0",
        "-ERR invalid expire time in 'set' command\r\n",
    );
    h.check(
        "SET k v EX -1",
        "-ERR invalid expire time in 'set' command\r\n",
    );
    h.check("SET k v EX x", NOT_INT);
    h.check(
        "SET k v EX 9223372036854775807",
        "-ERR invalid expire time in 'set' command\r\n",
    );
    h.check("SET k v EX 10", OK);
    h.check("PTTL k", &int(10_000));
    h.check("SET k v2 KEEPTTL", OK);
    h.check("PTTL k", &int(10_000));
    h.check("SET k v3", OK);
    h.check("TTL k", &int(-1));
    h.check("SET k v PX 1500", OK);
    h.check("TTL k", &int(2));
    h.check(&format!("SET k v PXAT {}", T0 + 5000), OK);
    h.check("PEXPIRETIME k", &int((T0 + 5000) as i64));
    h.check(&format!("SET k v EXAT {}", T0 / 1000 + 7), OK);
    h.check("EXPIRETIME k", &int((T0 / 1000 + 7) as i64));
    h.check("SET k v KEEPTTL EX 5", SYNTAX);
    // A repeated option is accepted (the last value wins), as in Redis.
    h.check("SET k v EX 5 EX 10", OK);
    h.check("TTL k", &int(10));
    h.check("SET k v KEEPTTL KEEPTTL", OK);
    h.check("TTL k", &int(10));
    h.check("set k v nx get", &bulk("v"));
    h.check(
        "SET",
        "-ERR wrong number of arguments for 'set' command\r\n",
    );
}

#[test]
fn set_variants() {
    let mut h = H::new();
    h.check("SETNX a 1", &int(1));
    h.check("SETNX a 2", &int(0));
    h.check("GET a", &bulk("1"));
    h.check("SETEX b 10 v", OK);
    h.check("TTL b", &int(10));
    h.check(
        "SETEX b 0 v",
        "-ERR invalid expire time in 'setex' command\r\n",
    );
    h.check("PSETEX c 1500 v", OK);
    h.check("PTTL c", &int(1500));
    h.check(
        "PSETEX c -5 v",
        "-ERR invalid expire time in 'psetex' command\r\n",
    );
    h.check("GETSET b new", &bulk("v"));
    h.check("TTL b", &int(-1));
    h.check("GETSET none x", NIL);
    h.check("GETDEL b", &bulk("new"));
    h.check("GETDEL b", NIL);
    h.check("EXISTS b", &int(0));
}

#[test]
fn getex_changes_ttl() {
    let mut h = H::new();
    h.check("SET k v", OK);
    h.check("GETEX k", &bulk("v"));
    h.check("GETEX k EX 100", &bulk("v"));
    h.check("TTL k", &int(100));
    h.check("GETEX k PERSIST", &bulk("v"));
    h.check("TTL k", &int(-1));
    h.check("GETEX k PX 2000", &bulk("v"));
    h.check("PTTL k", &int(2000));
    h.check(
        "GETEX k EX 0",
        "-ERR invalid expire time in 'getex' command\r\n",
    );
    h.check("GETEX k EX 1 PX 1", SYNTAX);
    h.check("GETEX k PERSIST EX 1", SYNTAX);
    h.check("GETEX k PERSIST PERSIST", &bulk("v"));
    h.check("GETEX missing EX 10", NIL);
    // Redis looks the key up before checking the expire value.
    h.check("GETEX missing EX 0", NIL);
    h.check("GETEX missing PX abc", NIL);
    h.check("GETEX missing EX 1 FOO", SYNTAX);
}

#[test]
fn mget_mset_msetnx() {
    let mut h = H::new();
    h.check("MSET a 1 b 2", OK);
    h.check(
        "MGET a b c",
        &format!("*3\r\n{}{}{NIL}", bulk("1"), bulk("2")),
    );
    h.check(
        "MSET a 1 b",
        "-ERR wrong number of arguments for 'mset' command\r\n",
    );
    h.check("MSETNX c 3 a 9", &int(0));
    h.check("GET c", NIL);
    h.check("MSETNX c 3 d 4", &int(1));
    h.check("MGET c d", &format!("*2\r\n{}{}", bulk("3"), bulk("4")));
    h.resp3();
    h.check("MGET c x", &format!("*2\r\n{}{NIL3}", bulk("3")));
}

#[test]
fn append_strlen_ranges() {
    let mut h = H::new();
    h.check("APPEND k Hello", &int(5));
    h.check("APPEND k \" World\"", &int(11));
    h.check("STRLEN k", &int(11));
    h.check("STRLEN none", &int(0));
    h.check("GETRANGE k 0 4", &bulk("Hello"));
    h.check("GETRANGE k -5 -1", &bulk("World"));
    h.check("GETRANGE k 5 1", &bulk(""));
    h.check("SUBSTR k 0 -1", &bulk("Hello World"));
    h.check("GETRANGE none 0 -1", &bulk(""));
    h.check("GETRANGE k a 1", NOT_INT);
    h.check("SETRANGE k 6 Redis", &int(11));
    h.check("GET k", &bulk("Hello Redis"));
    h.check("SETRANGE pad 3 x", &int(4));
    h.check("GET pad", "$4\r\n\0\0\0x\r\n");
    h.check("SETRANGE empty 5 \"\"", &int(0));
    h.check("EXISTS empty", &int(0));
    h.check("SETRANGE k -1 x", "-ERR offset is out of range\r\n");
    h.check(
        "SETRANGE k 536870912 x",
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n",
    );
}

#[test]
fn bitmaps() {
    let mut h = H::new();
    h.check("SETBIT b 7 1", &int(0));
    h.check("SETBIT b 7 1", &int(1));
    h.check("GET b", "$1\r\n\x01\r\n");
    h.check("SETBIT b 17 1", &int(0));
    h.check("STRLEN b", &int(3));
    h.check("GETBIT b 17", &int(1));
    h.check("GETBIT b 99", &int(0));
    h.check("BITCOUNT b", &int(2));
    h.check("BITCOUNT b 1 -1", &int(1));
    h.check("BITCOUNT b 7 17 BIT", &int(2));
    h.check("BITPOS b 1", &int(7));
    h.check("BITPOS b 0 0 0", &int(0));
    h.check("BITPOS b 1 8 16 BIT", &int(-1));
    h.check(
        "SETBIT b 8589934592 1",
        "-ERR bit offset is not an integer or out of range\r\n",
    );
    h.check(
        "SETBIT b 0 2",
        "-ERR bit is not an integer or out of range\r\n",
    );
    h.check("BITPOS b 2", "-ERR The bit argument must be 1 or 0.\r\n");
    // Redis 7.2 checks the arguments before it looks the key up (7.0 answered 0 for a
    // missing key, which the differential test against 7.0 leaves out).
    h.check("BITCOUNT none 0", "-ERR syntax error\r\n");
    h.check("BITCOUNT none 0 1 WORD", "-ERR syntax error\r\n");
    h.check("BITPOS none 1 x", NOT_INT);
    h.check("BITCOUNT none", &int(0));
    h.check("BITPOS none 0", &int(0));
    h.check("SET x foof", "+OK\r\n");
    h.check("BITOP NOT y x", &int(4));
    h.check("BITOP XOR y x y", &int(4));
    h.check("BITCOUNT y", &int(32));
    h.check("BITOP AND y none", &int(0));
    h.check("EXISTS y", &int(0));
    h.check(
        "BITOP NOT y x x",
        "-ERR BITOP NOT must be called with a single source key.\r\n",
    );
}

#[test]
fn incr_family() {
    let mut h = H::new();
    h.check("INCR n", &int(1));
    h.check("INCRBY n 10", &int(11));
    h.check("DECR n", &int(10));
    h.check("DECRBY n 20", &int(-10));
    h.check("INCRBY n x", NOT_INT);
    h.check("SET s abc", OK);
    h.check("INCR s", NOT_INT);
    h.check("SET s \" 1\"", OK);
    h.check("INCR s", NOT_INT);
    h.check("SET big 9223372036854775807", OK);
    h.check("INCR big", "-ERR increment or decrement would overflow\r\n");
    h.check(
        "DECRBY n -9223372036854775808",
        "-ERR decrement would overflow\r\n",
    );
    h.check("SET t 5 EX 100", OK);
    h.check("INCR t", &int(6));
    h.check("TTL t", &int(100));
    h.check("INCRBYFLOAT f 10.5", &bulk("10.5"));
    h.check("INCRBYFLOAT f 0.1", &bulk("10.6"));
    h.check("INCRBYFLOAT f -5", &bulk("5.6"));
    // Redis 7.0's answer on x86-64 (long double, 17 decimals): not 5005.6.
    h.check("INCRBYFLOAT f 5.0e3", &bulk("5005.60000000000000009"));
    h.check("INCRBYFLOAT f abc", "-ERR value is not a valid float\r\n");
    h.check("INCRBYFLOAT hex 0x10", &bulk("16"));
    h.check("INCRBYFLOAT s 1", "-ERR value is not a valid float\r\n");
    h.check("SET inf 1", OK);
    h.check(
        "INCRBYFLOAT inf +inf",
        "-ERR increment would produce NaN or Infinity\r\n",
    );
}

#[test]
fn keyspace_basics() {
    let mut h = H::new();
    h.check("MSET a 1 b 2 c 3", OK);
    h.check("EXISTS a b x a", &int(3));
    h.check("TOUCH a x", &int(1));
    h.check("TYPE a", "+string\r\n");
    h.check("TYPE x", "+none\r\n");
    h.check("DEL a x", &int(1));
    h.check("UNLINK b c", &int(2));
    h.check("DBSIZE", &int(0));
    h.check("RANDOMKEY", NIL);
    h.check("SET only v", OK);
    h.check("RANDOMKEY", &bulk("only"));
    h.check("FLUSHALL", OK);
    h.check("FLUSHDB ASYNC", OK);
    h.check("FLUSHALL SYNC", OK);
    h.check("FLUSHALL x", SYNTAX);
    h.check("DBSIZE", &int(0));
}

#[test]
fn expire_family() {
    let mut h = H::new();
    h.check("EXPIRE none 10", &int(0));
    h.check("SET k v", OK);
    h.check("TTL k", &int(-1));
    h.check("TTL none", &int(-2));
    h.check("PTTL none", &int(-2));
    h.check("EXPIRETIME none", &int(-2));
    h.check("EXPIRETIME k", &int(-1));
    h.check("EXPIRE k 100 XX", &int(0));
    h.check("EXPIRE k 100 GT", &int(0));
    h.check("EXPIRE k 100 NX", &int(1));
    h.check("EXPIRE k 200 NX", &int(0));
    h.check("EXPIRE k 50 GT", &int(0));
    h.check("EXPIRE k 200 GT", &int(1));
    h.check("EXPIRE k 300 LT", &int(0));
    h.check("EXPIRE k 150 LT", &int(1));
    h.check("TTL k", &int(150));
    h.check("PEXPIRE k 1500", &int(1));
    h.check("PTTL k", &int(1500));
    h.check(&format!("EXPIREAT k {}", T0 / 1000 + 60), &int(1));
    h.check("TTL k", &int(60));
    h.check(&format!("PEXPIREAT k {}", T0 + 999), &int(1));
    h.check("PTTL k", &int(999));
    h.check(
        "EXPIRE k 10 NX XX",
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
    );
    h.check(
        "EXPIRE k 10 GT LT",
        "-ERR GT and LT options at the same time are not compatible\r\n",
    );
    h.check("EXPIRE k 10 FOO", "-ERR Unsupported option FOO\r\n");
    h.check("EXPIRE k x", NOT_INT);
    h.check(
        "EXPIRE k 9223372036854775807",
        "-ERR invalid expire time in 'expire' command\r\n",
    );
    h.check("PERSIST k", &int(1));
    h.check("PERSIST k", &int(0));
    h.check("EXPIRE k 10 LT", &int(1));
    h.check("EXPIRE k -1", &int(1));
    h.check("EXISTS k", &int(0));
}

/// DBSIZE counts a key whose time passed until something reclaims it, as Redis's does, in
/// database 0 (the store's total) and in a numbered one (a walk) alike.
#[test]
fn dbsize_counts_expired_keys_not_yet_reclaimed() {
    let mut h = H::new();
    for db in ["0", "1"] {
        h.check(&format!("SELECT {db}"), OK);
        h.check("SET k v PX 100", OK);
        h.check("SET other v", OK);
        h.now += 100;
        h.check("DBSIZE", &int(2));
        h.check("GET k", NIL);
        h.check("DBSIZE", &int(1));
        h.check("FLUSHDB", OK);
    }
}

#[test]
fn ttl_expires_lazily_at_the_millisecond() {
    let mut h = H::new();
    h.check("SET k v PX 100", OK);
    h.now += 99;
    h.check("GET k", &bulk("v"));
    h.check("PTTL k", &int(1));
    h.now += 1;
    h.check("GET k", NIL);
    h.check("TTL k", &int(-2));
    let stats = h.node.engine.store.stats();
    assert_eq!(stats.expired_keys, 1);
}

#[test]
fn rename_copy() {
    let mut h = H::new();
    h.check("RENAME none x", "-ERR no such key\r\n");
    h.check("SET a 1 EX 100", OK);
    h.check("RENAME a b", OK);
    h.check("GET a", NIL);
    h.check("GET b", &bulk("1"));
    h.check("TTL b", &int(100));
    h.check("RENAME b b", OK);
    h.check("SET c 3", OK);
    h.check("RENAMENX b c", &int(0));
    h.check("RENAMENX b d", &int(1));
    h.check("COPY d e", &int(1));
    h.check("COPY d e", &int(0));
    h.check("COPY d e REPLACE", &int(1));
    h.check("TTL e", &int(100));
    h.check(
        "COPY d d",
        "-ERR source and destination objects are the same\r\n",
    );
    h.check("COPY none e", &int(0));
    h.check("COPY d f DB 0", &int(1));
    h.check("COPY d g DB 16", "-ERR DB index is out of range\r\n");
    h.check("COPY d g DB 1", &int(1));
    h.check("EXISTS g", &int(0));
    h.check("COPY d g BAD", SYNTAX);
}

#[test]
fn keys_and_scan() {
    let mut h = H::new();
    for i in 0..50 {
        h.run(&format!("SET user:{i} v"));
    }
    h.check("SET other v", OK);
    let out = h.run("KEYS user:1?");
    assert!(out.starts_with("*10\r\n"), "{out}");
    let out = h.run("KEYS *");
    assert!(out.starts_with("*51\r\n"), "{out}");
    // A full SCAN returns every key exactly as KEYS does.
    let mut cursor = "0".to_string();
    let mut seen = std::collections::HashSet::new();
    loop {
        let args = vec![
            Bytes::from("SCAN"),
            Bytes::from(cursor.clone()),
            Bytes::from("MATCH"),
            Bytes::from("user:*"),
            Bytes::from("COUNT"),
            Bytes::from("7"),
        ];
        let reply = execute(&h.node, &mut h.session, &args, h.now);
        let shoal_resp::Reply::Array(parts) = reply else {
            panic!("SCAN replies an array")
        };
        let (shoal_resp::Reply::Bulk(c), shoal_resp::Reply::Array(keys)) = (&parts[0], &parts[1])
        else {
            panic!("SCAN replies [cursor, keys]")
        };
        for k in keys {
            let shoal_resp::Reply::Bulk(k) = k else {
                panic!("key is bulk")
            };
            assert!(k.starts_with(b"user:"));
            seen.insert(k.clone());
        }
        cursor = String::from_utf8(c.to_vec()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 50);
    h.check("SCAN x", "-ERR invalid cursor\r\n");
    // Redis's strtoul: a sign, a wrapped negative, nothing at all; no space, no bare sign.
    for bad in [
        "SCAN -",
        "SCAN 5x",
        "SCAN 18446744073709551616",
        "SSCAN k +",
    ] {
        h.check(bad, "-ERR invalid cursor\r\n");
    }
    assert_eq!(super::cursor_value(b""), Some(0));
    assert_eq!(super::cursor_value(b"-0"), Some(0));
    assert_eq!(super::cursor_value(b"+7"), Some(7));
    assert_eq!(super::cursor_value(b"-1"), Some(u64::MAX));
    assert_eq!(super::cursor_value(b" 1"), None);
    let out = h.run("SCAN -1");
    assert!(out.starts_with("*2\r\n$"), "{out}");
    h.check("SSCAN nokey -1", "*2\r\n$1\r\n0\r\n*0\r\n");
    h.check("SCAN 0 COUNT 0", SYNTAX);
    h.check("SCAN 0 COUNT", SYNTAX);
    h.check("SCAN 0 COUNT x", NOT_INT);
    let out = h.run("SCAN 0 TYPE hash COUNT 1000");
    assert!(out.ends_with("*0\r\n"), "{out}");
}

#[test]
fn hello_and_protocols() {
    let mut h = H::new();
    let out = h.run("HELLO 3");
    assert!(
        out.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"),
        "{out}"
    );
    assert!(out.contains("$5\r\nproto\r\n:3\r\n"), "{out}");
    h.check("GET none", NIL3);
    let out = h.run("CONFIG GET maxmemory-policy");
    assert_eq!(
        out,
        format!("%1\r\n{}{}", bulk("maxmemory-policy"), bulk("allkeys-lru"))
    );
    let out = h.run("HELLO 2");
    assert!(out.starts_with("*14\r\n"), "{out}");
    h.check("GET none", NIL);
    h.check("HELLO 4", "-NOPROTO unsupported protocol version\r\n");
    h.check(
        "HELLO x",
        "-ERR Protocol version is not an integer or out of range\r\n",
    );
    h.check("HELLO 3 FOO", "-ERR Syntax error in HELLO option 'FOO'\r\n");
    h.run("HELLO 3 SETNAME app");
    h.check("CLIENT GETNAME", &bulk("app"));
}

#[test]
fn auth_rules() {
    let mut h = H::with(|c| c.requirepass = "secret".into());
    h.check("GET k", "-NOAUTH Authentication required.\r\n");
    h.check("PING", "-NOAUTH Authentication required.\r\n");
    h.check(
        "HELLO 3",
        "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n",
    );
    h.check(
        "AUTH wrong",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    h.check(
        "AUTH other secret",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    h.check("AUTH secret", OK);
    h.check("GET k", NIL);
    h.check("RESET", "+RESET\r\n");
    h.check("GET k", "-NOAUTH Authentication required.\r\n");
    h.check("AUTH default secret", OK);
    h.check("RESET", "+RESET\r\n");
    let out = h.run("HELLO 3 AUTH default secret");
    assert!(out.starts_with("%7\r\n"), "{out}");
    h.check("GET k", NIL3);
    h.check("AUTH a b c", SYNTAX);

    let mut open = H::new();
    open.check(
        "AUTH x",
        "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n",
    );
    open.check("AUTH default anything", OK);
}

#[test]
fn client_subcommands() {
    let mut h = H::new();
    h.check("CLIENT ID", &int(1));
    h.check("CLIENT GETNAME", NIL);
    h.check("CLIENT SETNAME worker-1", OK);
    h.check("CLIENT GETNAME", &bulk("worker-1"));
    h.check(
        "CLIENT SETNAME \"a b\"",
        "-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
    );
    h.check("CLIENT SETINFO LIB-NAME redis-py", OK);
    h.check("CLIENT SETINFO LIB-VER 5.0", OK);
    h.check("CLIENT SETINFO FOO x", "-ERR Unrecognized option 'FOO'\r\n");
    let out = h.run("CLIENT INFO");
    assert!(out.contains("id=1 addr=127.0.0.1:5555"), "{out}");
    assert!(out.contains("name=worker-1"), "{out}");
    assert!(out.contains("lib-name=redis-py lib-ver=5.0"), "{out}");
    let out = h.run("CLIENT LIST");
    assert!(out.contains("id=1 "), "{out}");
    let out = h.run("CLIENT LIST ID 99");
    assert_eq!(out, "$0\r\n\r\n");
    h.check("CLIENT NO-EVICT on", OK);
    h.check("CLIENT NO-EVICT maybe", SYNTAX);
    h.check("CLIENT KILL 127.0.0.1:1", "-ERR No such client\r\n");
    h.check("CLIENT KILL USER nobody", "-ERR No such user 'nobody'\r\n");
    h.check("CLIENT KILL ID 1", &int(0));
    h.check("CLIENT KILL ID 1 SKIPME no", &int(1));
    assert!(h.session.close);
    h.check(
        "CLIENT FOO",
        "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n",
    );
    h.check(
        "CLIENT ID x",
        "-ERR wrong number of arguments for 'client|id' command\r\n",
    );
    assert!(h.run("CLIENT HELP").starts_with('*'));
}

/// Without a cluster, CLUSTER's subcommands, Redis Cluster's administration among them,
/// answer as a Redis started without `cluster-enabled`.
#[test]
fn cluster_subcommands_on_a_single_node() {
    let mut h = H::new();
    let disabled = "-ERR This instance has cluster support disabled\r\n";
    for c in [
        "CLUSTER INFO",
        "CLUSTER REPLICAS abc",
        "CLUSTER SLAVES abc",
        "CLUSTER COUNT-FAILURE-REPORTS abc",
        "CLUSTER ADDSLOTS 1",
        "CLUSTER MEET 127.0.0.1 7000",
        "CLUSTER HELP",
    ] {
        h.check(c, disabled);
    }
    h.check(
        "CLUSTER REPLICAS",
        "-ERR wrong number of arguments for 'cluster|replicas' command\r\n",
    );
    h.check(
        "CLUSTER NOSUCH",
        "-ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP.\r\n",
    );
}

#[test]
fn server_commands() {
    let mut h = H::new();
    h.check("COMMAND COUNT", &int(super::TABLE.len() as i64));
    let out = h.run("COMMAND INFO get");
    assert!(out.starts_with("*1\r\n*10\r\n$3\r\nget\r\n:2\r\n"), "{out}");
    let out = h.run("COMMAND INFO nosuch");
    assert_eq!(out, "*1\r\n$-1\r\n");
    h.check(
        "COMMAND GETKEYS MSET a 1 b 2",
        &format!("*2\r\n{}{}", bulk("a"), bulk("b")),
    );
    h.check(
        "COMMAND GETKEYS PING",
        "-ERR The command has no key arguments\r\n",
    );
    h.check(
        "COMMAND GETKEYS nosuch",
        "-ERR Invalid command specified\r\n",
    );
    h.check(
        "COMMAND GETKEYS GET",
        "-ERR Invalid number of arguments specified for command\r\n",
    );
    let out = h.run("COMMAND DOCS get");
    assert!(
        out.starts_with("*2\r\n$3\r\nget\r\n*10\r\n$7\r\nsummary\r\n"),
        "{out}"
    );
    assert!(out.contains("$9\r\narguments\r\n"), "{out}");
    let out = h.run("COMMAND LIST FILTERBY PATTERN get*");
    assert!(out.contains("$6\r\ngetdel\r\n"), "{out}");
    // Subcommands are listed as `container|sub`, as Redis 7 lists them.
    let out = h.run("COMMAND LIST FILTERBY PATTERN client|l*");
    assert_eq!(out, "*1\r\n$11\r\nclient|list\r\n");
    let out = h.run("COMMAND LIST");
    assert!(out.contains("$10\r\nconfig|get\r\n") && out.contains("$3\r\nget\r\n"));
    // ACL categories: the row's, then those its flags imply, in Redis's order.
    let out = h.run("COMMAND INFO get");
    assert!(
        out.contains("*3\r\n+@read\r\n+@string\r\n+@fast\r\n"),
        "{out}"
    );
    let out = h.run("COMMAND INFO config|get nosuch|x config|nosuch");
    assert!(
        out.starts_with("*3\r\n*10\r\n$10\r\nconfig|get\r\n") && out.ends_with("$-1\r\n$-1\r\n"),
        "{out}"
    );
    let out = h.run("COMMAND LIST FILTERBY ACLCAT read");
    assert!(
        out.contains("$3\r\nget\r\n") && !out.contains("$3\r\nset\r\n"),
        "{out}"
    );
    // A container's subcommands by their own categories (the container by its own).
    let out = h.run("COMMAND LIST FILTERBY ACLCAT scripting");
    assert!(
        out.contains("$13\r\nfunction|load\r\n")
            && out.contains("$11\r\nscript|kill\r\n")
            && out.contains("$4\r\neval\r\n"),
        "{out}"
    );
    let out = h.run("COMMAND LIST FILTERBY ACLCAT dangerous");
    assert!(
        out.contains("$4\r\nkeys\r\n") && out.contains("$8\r\nflushall\r\n"),
        "{out}"
    );
    let out = h.run("TIME");
    assert!(out.starts_with("*2\r\n$10\r\n"), "{out}");
    // LOLWUT: Redis 7's answer, the version line (its art is only versions 5's and 6's).
    h.check("LOLWUT", &bulk("Redis ver. 7.2.4\n"));
    h.check("LOLWUT VERSION 6 10 10", &bulk("Redis ver. 7.2.4\n"));
    h.check(
        "LOLWUT VERSION x",
        "-ERR value is not an integer or out of range\r\n",
    );
    // No append-only file, and a node follows no other server: said so (SAVE and BGSAVE
    // write a snapshot: `save_and_bgsave_write_a_snapshot_redis_server_loads`).
    h.check(
        "BGREWRITEAOF",
        "-ERR BGREWRITEAOF is not supported: Shoal keeps no append-only file (SAVE and BGSAVE \
         write an RDB snapshot)\r\n",
    );
    h.check("BGSAVE NOW", "-ERR syntax error\r\n");
    h.check(
        "SAVE NOW",
        "-ERR wrong number of arguments for 'save' command\r\n",
    );
    h.check("MULTI", OK);
    h.check("SAVE", "-ERR Command not allowed inside a transaction\r\n");
    h.check("DISCARD", OK);
    h.check("REPLICAOF NO ONE", OK);
    h.check("SLAVEOF no one", OK);
    h.check("REPLICAOF localhost 70000", "-ERR Invalid master port\r\n");
    h.check(
        "REPLICAOF localhost 6379",
        "-ERR REPLICAOF is not supported: a Shoal node keeps its copies on the other members of \
         its cluster (cluster-nodes, cluster-seeds), not on attached replicas\r\n",
    );
    let out = h.run("INFO");
    for field in [
        "redis_version:7.2.4",
        "shoal_version:",
        "used_memory:",
        "maxmemory:1073741824",
        "keyspace_hits:",
        "keyspace_misses:",
        "expired_keys:",
        "evicted_keys:",
        "connected_clients:1",
        "total_commands_processed:",
        "instantaneous_ops_per_sec:",
        "instantaneous_input_kbps:0.00\r\n",
        "instantaneous_output_kbps:0.00\r\n",
        "rdb_last_bgsave_status:ok\r\n",
        "rdb_saves:0\r\n",
        "aof_last_write_status:ok\r\n",
        "cluster_enabled:0",
    ] {
        assert!(out.contains(field), "INFO lacks {field}");
    }
    let out = h.run("INFO memory");
    assert!(
        out.contains("# Memory") && !out.contains("# Server"),
        "{out}"
    );
}

/// INFO latencystats follows Redis's `latency-tracking` and its percentiles.
#[test]
fn latency_tracking_shapes_info_latencystats() {
    let mut h = H::new();
    h.check("SET k v", OK);
    let out = h.run("INFO latencystats");
    assert!(out.contains("latency_percentiles_usec_set:p50="), "{out}");
    assert!(
        out.contains(",p99.9="),
        "Redis's default percentiles: {out}"
    );
    h.check(
        "CONFIG SET latency-tracking-info-percentiles \"0 50.0 100\"",
        OK,
    );
    let out = h.run("INFO latencystats");
    let line = out
        .lines()
        .find(|l| l.starts_with("latency_percentiles_usec_set:"));
    let fields: Vec<&str> = line
        .unwrap_or_default()
        .split([':', ','])
        .skip(1)
        .map(|f| f.split('=').next().unwrap_or_default())
        .collect();
    assert_eq!(fields, ["p0", "p50", "p100"], "{out}");
    h.check("CONFIG SET latency-tracking no", OK);
    let out = h.run("INFO latencystats");
    assert!(!out.contains("latency_percentiles_usec"), "{out}");
}

#[test]
fn config_get_set() {
    let mut h = H::new();
    h.check("CONFIG SET maxmemory 10mb", OK);
    assert_eq!(h.node.engine.store.maxmemory(), 10 << 20);
    h.check(
        "CONFIG GET maxmemory",
        &format!("*2\r\n{}{}", bulk("maxmemory"), bulk("10485760")),
    );
    h.check("CONFIG SET maxmemory-policy allkeys-lfu", OK);
    assert_eq!(h.node.engine.store.policy().name(), "allkeys-lfu");
    h.check(
        "CONFIG SET maxmemory-policy nope",
        "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction\r\n",
    );
    h.check(
        "CONFIG SET nosuch 1",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n",
    );
    h.check(
        "CONFIG SET proto-max-bulk-len 1gb",
        "-ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be at most 1073741819 (1gb less 5 bytes)\r\n",
    );
    h.check("CONFIG SET proto-max-bulk-len 1073741819", OK);
    // A parameter Shoal cannot change is taken at the value it has (a no-op), as tools
    // that write back CONFIG GET * need; any other value is refused.
    let threads = h.node.engine.with_settings(|c| c.threads).to_string();
    h.check(&format!("CONFIG SET threads {threads}"), OK);
    h.check(
        "CONFIG SET threads 77",
        "-ERR CONFIG SET failed (possibly related to argument 'threads') - can't set immutable config\r\n",
    );
    h.check(
        "CONFIG SET port 1",
        "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config\r\n",
    );
    // All or nothing: the valid first pair is not applied when the second fails.
    h.check("CONFIG SET timeout 5 maxclients x", "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n");
    h.check(
        "CONFIG GET timeout",
        &format!("*2\r\n{}{}", bulk("timeout"), bulk("0")),
    );
    h.check(
        "CONFIG SET timeout",
        "-ERR wrong number of arguments for 'config|set' command\r\n",
    );
    h.check(
        "CONFIG SET timeout 5 TIMEOUT 0",
        "-ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate parameter\r\n",
    );
    h.check(
        "CONFIG SET NOSUCH 1",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'NOSUCH'\r\n",
    );
    // min-replicas-to-write, also by its older name: a single node has no replica, so a
    // write is refused while it asks for one.
    h.check("CONFIG SET min-slaves-to-write 1", OK);
    h.check(
        "CONFIG GET min-replicas-to-write",
        &format!("*2\r\n{}{}", bulk("min-replicas-to-write"), bulk("1")),
    );
    h.check(
        "SET k v",
        "-NOREPLICAS Not enough good replicas to write.\r\n",
    );
    h.check("CONFIG SET min-replicas-to-write 0", OK);
    h.check("SET k v", OK);
    h.check(
        "CONFIG GET MAXMEMORY",
        &format!("*2\r\n{}{}", bulk("MAXMEMORY"), bulk("10485760")),
    );
    // maxmemory, -policy, -samples, and Redis's -clients and -eviction-tenacity, as Redis.
    let out = h.run("CONFIG GET maxmemory*");
    assert!(out.starts_with("*10\r\n"), "{out}");
    h.check("CONFIG RESETSTAT", OK);
    h.check(
        "CONFIG FOO",
        "-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n",
    );
    h.check("SHUTDOWN FOO", SYNTAX);
    h.check("SHUTDOWN ABORT", "-ERR No shutdown in progress.\r\n");
    assert!(!h.node.stopped.load(Ordering::Relaxed));
    h.check("SHUTDOWN NOSAVE", OK);
    assert!(h.node.stopped.load(Ordering::Relaxed) && h.session.close && h.session.drop_reply);
}

#[test]
fn noeviction_answers_oom() {
    let mut h = H::with(|c| {
        c.maxmemory = ByteSize(4096);
        c.maxmemory_policy = "noeviction".into();
    });
    let mut refused = false;
    for i in 0..200 {
        let out = h.run(&format!("SET key:{i} {}", "x".repeat(100)));
        if out.starts_with("-OOM") {
            assert_eq!(
                out,
                "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
            );
            refused = true;
            break;
        }
        assert_eq!(out, OK);
    }
    assert!(refused, "noeviction must refuse writes once full");
    h.check("GET key:0", &bulk(&"x".repeat(100)));
    h.check("DEL key:0", &int(1));
}

#[test]
fn allkeys_lru_always_admits_the_set() {
    let mut h = H::with(|c| c.maxmemory = ByteSize(16 * 1024));
    for i in 0..2000 {
        h.check(&format!("SET key:{i} {}", "y".repeat(64)), OK);
        h.check(&format!("GET key:{i}"), &bulk(&"y".repeat(64)));
    }
    let stats = h.node.engine.store.stats();
    assert!(stats.evicted_keys > 1000, "{stats:?}");
    assert!(stats.used_memory <= 16 * 1024 + 512, "{stats:?}");
}

/// The protocol-neutral tests again, on a RESP3 connection (nulls are `_`).
mod resp3 {
    #[test]
    fn the_harness_really_speaks_resp3() {
        super::RESP3.with(|c| c.set(true));
        assert_eq!(super::H::new().run("GET missing"), "_\r\n");
    }

    macro_rules! again_in_resp3 {
        ($($name:ident),* $(,)?) => {$(
            #[test]
            fn $name() {
                super::RESP3.with(|c| c.set(true));
                super::$name();
            }
        )*};
    }
    again_in_resp3!(
        ping_echo_select_quit,
        unknown_commands_keep_the_connection,
        get_set_and_options,
        set_variants,
        getex_changes_ttl,
        mget_mset_msetnx,
        append_strlen_ranges,
        incr_family,
        keyspace_basics,
        expire_family,
        ttl_expires_lazily_at_the_millisecond,
        rename_copy,
        keys_and_scan,
        noeviction_answers_oom,
        allkeys_lru_always_admits_the_set,
        multi_exec_discard,
    );
}

#[test]
fn multi_exec_discard() {
    let mut h = H::new();
    h.check("EXEC", "-ERR EXEC without MULTI\r\n");
    h.check("DISCARD", "-ERR DISCARD without MULTI\r\n");
    h.check("MULTI", OK);
    h.check("MULTI", "-ERR MULTI calls can not be nested\r\n");
    h.check("SET a 1", "+QUEUED\r\n");
    h.check("INCR a", "+QUEUED\r\n");
    h.check("GET a", "+QUEUED\r\n");
    h.check("GET a", "+QUEUED\r\n");
    h.check(
        "EXEC",
        &format!("*4\r\n+OK\r\n:2\r\n{}{}", bulk("2"), bulk("2")),
    );
    h.check("MULTI", OK);
    h.check("SET a 5", "+QUEUED\r\n");
    h.check("DISCARD", OK);
    h.check("GET a", &bulk("2"));
    // A rejected command dooms the transaction; runtime errors do not.
    h.check("MULTI", OK);
    h.check(
        "SET a",
        "-ERR wrong number of arguments for 'set' command\r\n",
    );
    h.check(
        "NOSUCH",
        "-ERR unknown command 'NOSUCH', with args beginning with: \r\n",
    );
    h.check("SET a 9", "+QUEUED\r\n");
    h.check(
        "EXEC",
        "-EXECABORT Transaction discarded because of previous errors.\r\n",
    );
    h.check("GET a", &bulk("2"));
    h.check("MULTI", OK);
    h.check("SET s abc", "+QUEUED\r\n");
    h.check("INCR s", "+QUEUED\r\n");
    h.check(
        "EXEC",
        "*2\r\n+OK\r\n-ERR value is not an integer or out of range\r\n",
    );
    h.check("MULTI", OK);
    h.check("EXEC", "*0\r\n");
    // A refused EXEC ends the transaction (Redis's execCommandAbort).
    h.check("MULTI", OK);
    h.check("SET a 7", "+QUEUED\r\n");
    h.check(
        "EXEC x",
        "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n",
    );
    h.check("GET a", &bulk("2"));
    h.check("EXEC", "-ERR EXEC without MULTI\r\n");
    // Outside MULTI too (fakeredis's `test_exec_bad_arguments`).
    h.check(
        "EXEC x",
        "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n",
    );
}

#[test]
fn watch_aborts_when_a_watched_key_changes() {
    let mut h = H::new();
    h.check("SET k 1", OK);
    h.check("WATCH k other", OK);
    h.check("MULTI", OK);
    h.check("WATCH k", "-ERR WATCH inside MULTI is not allowed\r\n");
    h.check("SET k 2", "+QUEUED\r\n");
    h.check("EXEC", "*1\r\n+OK\r\n");
    // Another client's write between WATCH and EXEC aborts the transaction.
    h.check("WATCH k", OK);
    h.node
        .engine
        .store
        .write(b"k", h.now, |slot| slot.set(b"changed", None));
    h.check("MULTI", OK);
    h.check("SET k 3", "+QUEUED\r\n");
    h.check("EXEC", "*-1\r\n");
    h.check("GET k", &bulk("changed"));
    // A key created after WATCH counts as a change; UNWATCH forgets.
    h.check("WATCH fresh", OK);
    h.node
        .engine
        .store
        .write(b"fresh", h.now, |slot| slot.set(b"x", None));
    h.check("UNWATCH", OK);
    h.check("MULTI", OK);
    h.check("GET fresh", "+QUEUED\r\n");
    h.check("EXEC", &format!("*1\r\n{}", bulk("x")));
    h.check("WATCH k", OK);
    h.check("RESET", "+RESET\r\n");
    h.check("MULTI", OK);
    h.check("EXEC", "*0\r\n");
}

#[test]
fn object_and_memory_usage() {
    let mut h = H::new();
    h.check("SET i 12345", OK);
    h.check("SET s hello", OK);
    h.run(&format!("SET r {}", "x".repeat(45)));
    h.check("OBJECT ENCODING i", &bulk("int"));
    h.check("OBJECT ENCODING s", &bulk("embstr"));
    h.check("OBJECT ENCODING r", &bulk("raw"));
    h.check("OBJECT ENCODING missing", NIL);
    h.check("OBJECT REFCOUNT s", &int(1));
    // A small integer is shared in Redis (refcount INT_MAX), unless an LRU or LFU policy
    // with a memory limit keeps each value's access time.
    h.check("SET n 5", OK);
    h.check("OBJECT REFCOUNT n", &int(1));
    h.check("CONFIG SET maxmemory-policy noeviction", OK);
    h.check("OBJECT REFCOUNT n", &int(2147483647));
    h.check("OBJECT REFCOUNT i", &int(1));
    h.check("CONFIG SET maxmemory-policy allkeys-lru", OK);
    h.check("CONFIG SET maxmemory 0", OK);
    h.check("OBJECT REFCOUNT n", &int(2147483647));
    h.check("CONFIG SET maxmemory 1gb", OK);
    h.now += 5_000;
    h.check("OBJECT IDLETIME s", &int(5));
    h.check(
        "OBJECT FREQ s",
        "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.\r\n",
    );
    h.check(
        "OBJECT FOO s",
        "-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n",
    );
    h.check(
        "OBJECT ENCODING",
        "-ERR wrong number of arguments for 'object|encoding' command\r\n",
    );
    let charge = (1 + 5 + shoal_store::ENTRY_OVERHEAD) as i64;
    h.check("MEMORY USAGE s", &int(charge));
    h.check("MEMORY USAGE s SAMPLES 5", &int(charge));
    h.check("MEMORY USAGE s BOGUS", SYNTAX);
    h.check("MEMORY USAGE missing", NIL);
    h.check(
        "MEMORY NOSUCH",
        "-ERR unknown subcommand 'NOSUCH'. Try MEMORY HELP.\r\n",
    );
    assert!(h
        .run("MEMORY DOCTOR")
        .contains("Hi Sam, this instance is empty"));
    h.check(
        "MEMORY STATS x",
        "-ERR wrong number of arguments for 'memory|stats' command\r\n",
    );
    h.check("CONFIG SET maxmemory-policy allkeys-lfu", OK);
    h.check("GET s", &bulk("hello"));
    let out = h.run("OBJECT FREQ s");
    assert!(out.starts_with(':'), "{out}");
}

/// CLIENT NO-TOUCH (Redis 7.2): reads and writes leave the key's LRU clock alone (OBJECT
/// IDLETIME keeps growing), TOUCH still touches, OFF and RESET end it.
#[test]
fn client_no_touch_leaves_the_access_clock_alone() {
    let mut h = H::new();
    h.check("SET k v", OK);
    h.now += 5_000;
    h.check("CLIENT NO-TOUCH ON", OK);
    h.check("GET k", &bulk("v"));
    h.check("APPEND k w", &int(2));
    h.check("OBJECT IDLETIME k", &int(5));
    h.check("TOUCH k", &int(1));
    h.check("OBJECT IDLETIME k", &int(0));
    h.now += 3_000;
    h.check("CLIENT NO-TOUCH OFF", OK);
    h.check("OBJECT IDLETIME k", &int(3));
    h.check("GET k", &bulk("vw"));
    h.check("OBJECT IDLETIME k", &int(0));
    h.check("CLIENT NO-TOUCH ON", OK);
    h.check("RESET", "+RESET\r\n");
    h.now += 2_000;
    h.check("GET k", &bulk("vw"));
    h.check("OBJECT IDLETIME k", &int(0));
    h.check("CLIENT NO-TOUCH MAYBE", "-ERR syntax error\r\n");
    h.check(
        "CLIENT NO-TOUCH",
        "-ERR wrong number of arguments for 'client|no-touch' command\r\n",
    );
}

/// Reads, blind writes and other writes are told apart by the row's flag and the arguments.
#[test]
fn access_tells_reads_blind_writes_and_other_writes_apart() {
    use super::{access, lookup, Access};
    let of = |words: &[&str]| {
        let args: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
        let spec = lookup(&args[0][..]).expect("a command of the table");
        access(spec, &args)
    };
    assert_eq!(of(&["GET", "k"]), Access::Read);
    assert_eq!(of(&["mc.read", "get k", "k"]), Access::Read);
    assert_eq!(of(&["SET", "k", "v"]), Access::BlindWrite);
    assert_eq!(of(&["MSET", "a", "1"]), Access::BlindWrite);
    assert_eq!(of(&["mc.write", "set k 0 0 1", "k"]), Access::BlindWrite);
    for write in [
        &["INCR", "k"][..],
        &["SET", "k", "v", "NX"],
        &["DEL", "k"],
        &["APPEND", "k", "v"],
        &["mc.write", "incr k 1", "k"],
        &["mc.write", "add k 0 0 1", "k"],
    ] {
        assert_eq!(of(write), Access::Write, "{write:?}");
    }
}

/// The bulk strings of an array reply (nested arrays flattened).
fn bulks(reply: &shoal_resp::Reply) -> Vec<Vec<u8>> {
    match reply {
        shoal_resp::Reply::Bulk(b) => vec![b.to_vec()],
        shoal_resp::Reply::Array(items) => items.iter().flat_map(bulks).collect(),
        _ => Vec::new(),
    }
}

impl H {
    fn exec(&mut self, args: &[&str]) -> shoal_resp::Reply {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
        execute(&self.node, &mut self.session, &args, self.now)
    }
}

#[test]
fn the_effect_of_a_far_write_is_read_from_its_arguments() {
    let effect = |line: &str| {
        let args: Vec<Bytes> = line
            .split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        super::effect_len(super::lookup(&args[0]).unwrap(), &args)
    };
    assert_eq!(effect("setbit k 4294967295 1"), 536_870_912);
    assert_eq!(effect("SETBIT k 7 1"), 1);
    assert_eq!(effect("setbit k 8 1"), 2);
    assert_eq!(effect("setrange k 536870000 x"), 536_870_001);
    // The furthest SET or INCRBY field; GET and OVERFLOW grow nothing.
    assert_eq!(
        effect("bitfield k GET u8 99999999 OVERFLOW SAT SET u8 #100 1 INCRBY i16 4000000000 1"),
        500_000_002
    );
    assert_eq!(effect("bitfield k SET u8 #100 1"), 101);
    // Wild offsets (refused by the owner) count as the largest string, no more.
    for wild in [
        "setrange k 999999999999999999 x",
        "bitfield k SET u99999999999 #99999999999 1",
        "setbit k 9223372036854775807 1",
    ] {
        assert_eq!(effect(wild), 512 << 20, "{wild}");
    }
    for none in [
        "bitfield k GET u8 99999999",
        "bitfield_ro k GET u8 99999999",
        "setrange k 10 ",
        "setbit k x 1",
        "setbit k -5 1",
        "get k",
    ] {
        assert_eq!(effect(none), 0, "{none}");
    }
}

/// Redis 7.2's `addReplyHelp` ends every HELP with `HELP` / `    Print this help.` (7.0
/// said "Prints"; fakeredis checks PUBSUB's): every command with a HELP subcommand, as a
/// client reads it, starts with Redis's first line and ends so.
#[test]
fn every_help_ends_as_redis_7_2s() {
    let mut h = H::with(|c| c.enable_debug_command = "yes".into());
    let mut seen = 0;
    for spec in super::TABLE {
        // (A single node refuses CLUSTER HELP as Redis without `cluster-enabled` does; a
        // cluster member's is checked in `tests/tests/cluster.rs`.)
        if !spec.subcommands.contains(&"help") || spec.name == "cluster" {
            continue;
        }
        let name = spec.name.to_ascii_uppercase();
        let reply = h.exec(&[&name, "HELP"]);
        let shoal_resp::Reply::Array(lines) = reply else {
            panic!("{name} HELP: {reply:?}");
        };
        let text = |r: &shoal_resp::Reply| match r {
            shoal_resp::Reply::Simple(s) => s.to_string(),
            other => panic!("{name} HELP: a line {other:?}"),
        };
        let lines: Vec<String> = lines.iter().map(text).collect();
        assert!(
            lines[0].starts_with(&format!("{name} <subcommand> [<arg> [value] [opt] ...].")),
            "{name}: {}",
            lines[0]
        );
        assert_eq!(
            lines[lines.len() - 2..],
            ["HELP".to_string(), "    Print this help.".to_string()],
            "{name}"
        );
        seen += 1;
    }
    assert!(seen >= 14, "{seen} commands with HELP");
}

#[test]
fn hash_commands_answer_in_resp2_and_resp3() {
    let mut h = H::new();
    h.check("HSET h a 1 b 2", &int(2));
    h.check(
        "HGETALL h",
        &format!("*4\r\n{}{}{}{}", bulk("a"), bulk("1"), bulk("b"), bulk("2")),
    );
    h.check("HMGET h a zz", &format!("*2\r\n{}{NIL}", bulk("1")));
    h.check("TYPE h", "+hash\r\n");
    h.check("OBJECT ENCODING h", &bulk("listpack"));
    h.check("HINCRBYFLOAT h a 0.5", &bulk("1.5"));
    h.check("HINCRBY h a 1", "-ERR hash value is not an integer\r\n");
    h.check(
        "GET h",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    h.check(
        "SCAN 0 TYPE hash",
        &format!("*2\r\n{}*1\r\n{}", bulk("0"), bulk("h")),
    );
    h.check("SCAN 0 TYPE string", &format!("*2\r\n{}*0\r\n", bulk("0")));
    h.resp3();
    h.check(
        "HGETALL h",
        &format!(
            "%2\r\n{}{}{}{}",
            bulk("a"),
            bulk("1.5"),
            bulk("b"),
            bulk("2")
        ),
    );
    h.check("HGETALL missing", "%0\r\n");
    h.check(
        "HRANDFIELD h 5 WITHVALUES",
        &format!(
            "*2\r\n*2\r\n{}{}*2\r\n{}{}",
            bulk("a"),
            bulk("1.5"),
            bulk("b"),
            bulk("2")
        ),
    );
    h.check("HGET h zz", NIL);
    h.check("HDEL h a b", &int(2));
    h.check("EXISTS h", &int(0));
}

#[test]
fn hscan_of_a_table_returns_every_field_that_stays() {
    let mut h = H::new();
    for i in 0..2000 {
        h.exec(&["HSET", "big", &format!("f{i}"), "v"]);
    }
    h.check("OBJECT ENCODING big", &bulk("hashtable"));
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    let mut rounds = 0;
    loop {
        let reply = h.exec(&["HSCAN", "big", &cursor, "COUNT", "100"]);
        let items = bulks(&reply);
        cursor = String::from_utf8(items[0].clone()).unwrap();
        for pair in items[1..].chunks(2) {
            seen.insert(pair[0].clone());
        }
        // Fields removed mid-scan move others around; those that stay are all returned.
        h.exec(&["HDEL", "big", &format!("f{}", 1990 - rounds * 3)]);
        rounds += 1;
        assert!(rounds < 100, "the scan ends");
        if cursor == "0" {
            break;
        }
    }
    for i in 0..1700 {
        assert!(seen.contains(format!("f{i}").as_bytes()), "f{i} missing");
    }
    // MATCH filters fields, COUNT bounds the work per call.
    let reply = h.exec(&["HSCAN", "big", "0", "MATCH", "f1?", "COUNT", "5000"]);
    let items = bulks(&reply);
    assert_eq!(items[0], b"0");
    assert_eq!(items.len() - 1, 20, "f10..f19, with their values");
}

#[test]
fn hrandfield_counts_follow_redis() {
    let mut h = H::new();
    for i in 0..1000 {
        h.exec(&["HSET", "big", &format!("f{i}"), "v"]);
    }
    for count in [1usize, 10, 499, 500, 501, 999] {
        let fields = bulks(&h.exec(&["HRANDFIELD", "big", &count.to_string()]));
        let distinct: std::collections::HashSet<_> = fields.iter().collect();
        assert_eq!(
            (fields.len(), distinct.len()),
            (count, count),
            "count {count}"
        );
    }
    assert_eq!(bulks(&h.exec(&["HRANDFIELD", "big", "5000"])).len(), 1000);
    assert_eq!(bulks(&h.exec(&["HRANDFIELD", "big", "-5000"])).len(), 5000);
    assert_eq!(
        bulks(&h.exec(&["HRANDFIELD", "big", "-7", "WITHVALUES"])).len(),
        14
    );
    // A huge negative count is taken (as Redis, without WITHVALUES) and stops at the client's
    // output limit: nil, and the connection is closed.
    h.check("HRANDFIELD big -9223372036854775807", NIL);
    assert!(h.session.budget.exceeded());
}

#[test]
fn a_hash_changed_after_watch_aborts_exec() {
    let mut h = H::new();
    h.check("HSET h a 1", &int(1));
    h.check("WATCH h", OK);
    h.node.engine.store.write(b"h", h.now, |slot| {
        slot.edit_hash(|hash| (hash.insert(b"b", b"2"), true))
    });
    h.check("MULTI", OK);
    h.check("HLEN h", "+QUEUED\r\n");
    h.check("EXEC", "*-1\r\n");
    h.check("WATCH h", OK);
    h.check("MULTI", OK);
    h.check("HLEN h", "+QUEUED\r\n");
    h.check("EXEC", &format!("*1\r\n{}", int(2)));
}

#[test]
fn set_commands_answer_in_resp2_and_resp3() {
    let mut h = H::new();
    h.check("SADD s 3 1 2", &int(3));
    h.check(
        "SMEMBERS s",
        &format!("*3\r\n{}{}{}", bulk("1"), bulk("2"), bulk("3")),
    );
    h.check("OBJECT ENCODING s", &bulk("intset"));
    h.check("SADD s b a", &int(2));
    h.check("OBJECT ENCODING s", &bulk("listpack"));
    h.check("TYPE s", "+set\r\n");
    h.check(
        "GET s",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    h.check(
        "SPOP s -1",
        "-ERR value is out of range, must be positive\r\n",
    );
    h.resp3();
    h.check(
        "SMEMBERS s",
        &format!(
            "~5\r\n{}{}{}{}{}",
            bulk("1"),
            bulk("2"),
            bulk("3"),
            bulk("b"),
            bulk("a")
        ),
    );
    h.check("SMEMBERS missing", "~0\r\n");
    h.check("SPOP missing 2", "~0\r\n");
    h.check("SRANDMEMBER missing 2", "*0\r\n");
    h.check("SINTER s missing", "~0\r\n");
    h.check("SREM s 1 2 3 a b", &int(5));
    h.check("EXISTS s", &int(0));
}

#[test]
fn spop_and_srandmember_counts_follow_redis() {
    let mut h = H::new();
    for i in 0..1000 {
        h.exec(&["SADD", "big", &format!("m{i}")]);
    }
    h.check("OBJECT ENCODING big", &bulk("hashtable"));
    for count in [1usize, 10, 499, 500, 501, 999] {
        let members = bulks(&h.exec(&["SRANDMEMBER", "big", &count.to_string()]));
        let distinct: std::collections::HashSet<_> = members.iter().collect();
        assert_eq!(
            (members.len(), distinct.len()),
            (count, count),
            "count {count}"
        );
    }
    assert_eq!(bulks(&h.exec(&["SRANDMEMBER", "big", "-3000"])).len(), 3000);
    let popped = bulks(&h.exec(&["SPOP", "big", "600"]));
    let distinct: std::collections::HashSet<_> = popped.iter().collect();
    assert_eq!(distinct.len(), 600);
    h.check("SCARD big", &int(400));
    for m in &popped {
        let m = String::from_utf8(m.clone()).unwrap();
        h.check(&format!("SISMEMBER big {m}"), &int(0));
    }
    assert_eq!(bulks(&h.exec(&["SPOP", "big", "1000"])).len(), 400);
    h.check("EXISTS big", &int(0));
}

#[test]
fn sscan_of_a_table_returns_every_member_that_stays() {
    let mut h = H::new();
    for i in 0..2000 {
        h.exec(&["SADD", "big", &format!("m{i}")]);
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    let mut rounds = 0;
    loop {
        let items = bulks(&h.exec(&["SSCAN", "big", &cursor, "COUNT", "100"]));
        cursor = String::from_utf8(items[0].clone()).unwrap();
        seen.extend(items[1..].iter().cloned());
        h.exec(&["SREM", "big", &format!("m{}", 1990 - rounds * 3)]);
        rounds += 1;
        assert!(rounds < 100, "the scan ends");
        if cursor == "0" {
            break;
        }
    }
    for i in 0..1700 {
        assert!(seen.contains(format!("m{i}").as_bytes()), "m{i} missing");
    }
}

#[test]
fn zscan_of_a_skiplist_returns_every_member_that_stays() {
    // fakeredis's `test_zscan_reports_the_score_a_member_has_when_it_is_returned`: a scan by
    // rank lost a member whose score rose past the cursor, and the member a new lower score
    // pushed up a rank.
    let mut h = H::new();
    for i in 0..600 {
        h.exec(&["ZADD", "z", &i.to_string(), &format!("m{i:03}")]);
    }
    h.check("OBJECT ENCODING z", &bulk("skiplist"));
    let mut seen = std::collections::HashMap::new();
    let mut cursor = "0".to_string();
    let mut rounds = 0;
    loop {
        let items = bulks(&h.exec(&["ZSCAN", "z", &cursor, "COUNT", "10"]));
        cursor = String::from_utf8(items[0].clone()).unwrap();
        for pair in items[1..].chunks(2) {
            seen.insert(pair[0].clone(), pair[1].clone());
        }
        // Every round: one member's score jumps to the top, a new member comes in below
        // all, and one removed member makes room for the last entry.
        h.exec(&[
            "ZADD",
            "z",
            &(5000 + rounds).to_string(),
            &format!("m{rounds:03}"),
        ]);
        h.exec(&[
            "ZADD",
            "z",
            &(-1 - rounds).to_string(),
            &format!("new{rounds}"),
        ]);
        h.exec(&["ZREM", "z", &format!("m{:03}", 599 - rounds)]);
        rounds += 1;
        assert!(rounds < 200, "the scan ends");
        if cursor == "0" {
            break;
        }
    }
    // The members never removed were all returned, each with a score it had.
    for i in 0..(600 - rounds) {
        let m = format!("m{i:03}");
        let score = seen
            .get(m.as_bytes())
            .unwrap_or_else(|| panic!("{m} missing"));
        let score: i64 = std::str::from_utf8(score).unwrap().parse().unwrap();
        assert!(
            score == i as i64 || score == 5000 + i as i64,
            "{m} scored {score}"
        );
    }
}

#[test]
fn set_algebra_copies_only_its_result() {
    let mut h = H::new();
    for i in 0..3000 {
        h.exec(&["SADD", "{t}big", &i.to_string()]);
    }
    h.check("SADD {t}small 5 7 x 2999", &int(4));
    h.check("SINTERSTORE {t}d {t}big {t}small", &int(3));
    h.check(
        "SMEMBERS {t}d",
        &format!("*3\r\n{}{}{}", bulk("5"), bulk("7"), bulk("2999")),
    );
    h.check("OBJECT ENCODING {t}d", &bulk("intset"));
    h.check("SDIFFSTORE {t}d {t}small {t}big", &int(1));
    h.check("SMEMBERS {t}d", &format!("*1\r\n{}", bulk("x")));
    h.check("SUNIONSTORE {t}d {t}small {t}big", &int(3001));
    h.check("SDIFFSTORE {t}d {t}small {t}small", &int(0));
    h.check("EXISTS {t}d", &int(0));
}

#[test]
fn list_commands_answer_in_resp2_and_resp3() {
    let mut h = H::new();
    h.check("RPUSH l a b c", &int(3));
    h.check("TYPE l", "+list\r\n");
    h.check("OBJECT ENCODING l", &bulk("listpack"));
    h.check("LPOP missing 2", "*-1\r\n");
    h.check("LPOP l 0", "*0\r\n");
    h.check(
        "GET l",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    h.resp3();
    h.check("LPOP missing 2", "_\r\n");
    h.check("LPOP missing", "_\r\n");
    h.check("RPOP l 2", &format!("*2\r\n{}{}", bulk("c"), bulk("b")));
    h.check("LPOS l a COUNT 0", &format!("*1\r\n{}", int(0)));
}

#[test]
fn a_long_list_spans_chunks_and_answers_by_index() {
    let mut h = H::new();
    let value = |i: usize| format!("{i:05}-{}", "x".repeat(i % 40));
    for i in 0..10_000 {
        h.exec(&["RPUSH", "l", &value(i)]);
    }
    h.check("OBJECT ENCODING l", &bulk("quicklist"));
    h.check("LLEN l", &int(10_000));
    for i in [0, 1, 4_999, 5_000, 9_998, 9_999] {
        h.check(&format!("LINDEX l {i}"), &bulk(&value(i)));
    }
    h.check("LINDEX l -10000", &bulk(&value(0)));
    let got = bulks(&h.exec(&["LRANGE", "l", "6000", "6099"]));
    let want: Vec<Vec<u8>> = (6000..6100).map(|i| value(i).into_bytes()).collect();
    assert_eq!(got, want);
    h.check("LSET l 7000 changed", OK);
    h.check("LINDEX l 7000", &bulk("changed"));
    h.check(
        &format!("LINSERT l BEFORE {} inserted", value(3000)),
        &int(10_001),
    );
    h.check("LINDEX l 3000", &bulk("inserted"));
    h.check("LREM l 0 inserted", &int(1));
    h.check("LTRIM l 100 199", OK);
    h.check("LLEN l", &int(100));
    h.check("LINDEX l 0", &bulk(&value(100)));
    h.check("OBJECT ENCODING l", &bulk("listpack"));
    let popped = bulks(&h.exec(&["LPOP", "l", "1000"]));
    assert_eq!(popped.len(), 100);
    h.check("EXISTS l", &int(0));
}

#[test]
fn review_mends_counts_watch_and_empty_values() {
    let mut h = H::new();
    h.check("HSET h a 1", &int(1));
    h.check("SADD s a", &int(1));
    let range = "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n";
    h.check("HRANDFIELD h -9223372036854775808", range);
    h.check("SRANDMEMBER s -9223372036854775808", range);
    h.check(
        "HRANDFIELD h -9223372036854775807 WITHVALUES",
        "-ERR value is out of range\r\n",
    );
    h.check(
        "HRANDFIELD h 9223372036854775807",
        &format!("*1\r\n{}", bulk("a")),
    );
    // A rewrite with the very same value aborts a transaction that watched the key.
    h.check("SET k v", OK);
    h.check("WATCH k", OK);
    h.node
        .engine
        .store
        .write(b"k", h.now, |slot| slot.set(b"v", None));
    h.check("MULTI", OK);
    h.check("GET k", "+QUEUED\r\n");
    h.check("EXEC", "*-1\r\n");
}

#[test]
fn sorted_set_commands_answer_in_resp2_and_resp3() {
    let mut h = H::new();
    h.check("ZADD z 1 a 2.5 b", &int(2));
    h.check(
        "ZRANK z b WITHSCORE",
        &format!("*2\r\n{}{}", int(1), bulk("2.5")),
    );
    h.check("ZRANK z zz WITHSCORE", "*-1\r\n");
    h.check("ZSCORE z b", &bulk("2.5"));
    h.check("OBJECT ENCODING z", &bulk("listpack"));
    h.check("ZADD z 0.1 c", &int(1));
    h.check("ZSCORE z c", &bulk("0.1"));
    h.resp3();
    h.check("ZSCORE z b", ",2.5\r\n");
    h.check(
        "ZRANGE z 0 0 WITHSCORES",
        &format!("*1\r\n*2\r\n{},0.1\r\n", bulk("c")),
    );
    h.check("ZRANK z zz WITHSCORE", "_\r\n");
    h.check("ZPOPMIN z 1", &format!("*1\r\n*2\r\n{},0.1\r\n", bulk("c")));
    h.check("ZPOPMIN z", &format!("*2\r\n{},1\r\n", bulk("a")));
}

#[test]
fn a_large_sorted_set_ranks_and_ranges_in_order() {
    let mut h = H::new();
    for i in 0..3000 {
        h.exec(&["ZADD", "z", &(i * 3 % 3001).to_string(), &format!("m{i}")]);
    }
    h.check("OBJECT ENCODING z", &bulk("skiplist"));
    h.check("ZCARD z", &int(3000));
    // Scores 0, 3, 6, ... taken mod 3001: every score distinct, so ranks follow them.
    let mut order: Vec<(i64, usize)> = (0..3000).map(|i| ((i * 3 % 3001) as i64, i)).collect();
    order.sort();
    for rank in [0usize, 1, 1499, 2999] {
        let (_, i) = order[rank];
        h.check(&format!("ZRANK z m{i}"), &int(rank as i64));
        h.check(&format!("ZREVRANK z m{i}"), &int((2999 - rank) as i64));
    }
    let got = bulks(&h.exec(&["ZRANGE", "z", "1000", "1004"]));
    let want: Vec<Vec<u8>> = order[1000..1005]
        .iter()
        .map(|(_, i)| format!("m{i}").into_bytes())
        .collect();
    assert_eq!(got, want);
    let below = order.iter().filter(|(s, _)| *s < 1500).count() as i64;
    h.check("ZREMRANGEBYSCORE z 0 (1500", &int(below));
    h.check("ZCARD z", &int(3000 - below));
    h.check("ZCOUNT z -inf +inf", &int(3000 - below));
}

#[test]
fn second_review_mends_lists_sorted_sets_databases() {
    let mut h = H::new();
    h.check("LINDEX missing x", NIL);
    h.check("LSET missing x v", "-ERR no such key\r\n");
    h.check("RPUSH l a b c", &int(3));
    h.check("LINDEX l x", NOT_INT);
    h.check("LPOS l a COUNT abc", "-ERR COUNT can't be negative\r\n");
    h.check("LPOS l a MAXLEN -1", "-ERR MAXLEN can't be negative\r\n");
    h.check(
        "LPOS l a RANK -9223372036854775808",
        "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n",
    );
    h.check("EXPIRE l 100", &int(1));
    h.check("RPOPLPUSH l l", &bulk("c"));
    h.check("TTL l", &int(100));
    h.check(
        "LRANGE l 0 -1",
        &format!("*3\r\n{}{}{}", bulk("c"), bulk("a"), bulk("b")),
    );
    h.check("ZADD z -0 m 1 n", &int(2));
    h.check("ZSCORE z m", &bulk("0"));
    h.check(
        "ZRANK z m WITHSCORE x",
        "-ERR wrong number of arguments for 'zrank' command\r\n",
    );
    h.check(
        "ZPOPMIN z 1 2",
        "-ERR wrong number of arguments for 'zpopmin' command\r\n",
    );
    h.check(
        "ZRANGEBYLEX z - + WITHSCORES",
        "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n",
    );
    h.check(
        "ZREVRANGE z 0 -1 LIMIT 0 1",
        "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n",
    );
    h.check(
        "ZRANGE z 0 -1 LIMIT 0 -1",
        &format!("*2\r\n{}{}", bulk("m"), bulk("n")),
    );
    h.check("ZCOUNT z \"\" +inf", &int(2));
    h.check("ZCOUNT z ( +inf", &int(1));
    h.check("ZINCRBY z nx m", SYNTAX);
    let int_range = "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n";
    h.check("SELECT 4294967296", int_range);
    h.check("SWAPDB 4294967296 0", "-ERR invalid first DB index\r\n");
    h.check("SWAPDB 0 x", "-ERR invalid second DB index\r\n");
    h.check("MOVE l 4294967296", int_range);
    // A sparse HyperLogLog whose runs do not cover the registers is corrupt; PFCOUNT tells
    // so when it counts, and, as Redis, not while the value caches a valid count.
    for (cache_last, reply) in [
        (0x80, "-INVALIDOBJ Corrupted HLL object detected\r\n"),
        (0x00, ":0\r\n"),
    ] {
        let mut sparse = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0".to_vec();
        sparse.push(cache_last);
        sparse.extend_from_slice(&[0x40 | 0x3F, 0xFF, 0x00]);
        let args = [
            Bytes::from_static(b"SET"),
            Bytes::from_static(b"hll"),
            Bytes::from(sparse),
        ];
        execute(&h.node, &mut h.session, &args, h.now);
        h.check("PFCOUNT hll", reply);
    }
    h.check(
        "PFCOUNT l",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
}

#[test]
fn config_shows_the_collections_thresholds() {
    let mut h = H::new();
    h.check(
        "CONFIG GET hash-max-listpack-entries",
        &format!("*2\r\n{}{}", bulk("hash-max-listpack-entries"), bulk("512")),
    );
    h.check(
        "CONFIG GET list-max-listpack-size",
        &format!("*2\r\n{}{}", bulk("list-max-listpack-size"), bulk("-2")),
    );
    // Under the names before Redis 7 too. (Setting them changes the whole process's
    // collections: `collections_follow_their_encoding_thresholds`, a `shoald` process.)
    h.check(
        "CONFIG GET zset-max-ziplist-entries",
        &format!("*2\r\n{}{}", bulk("zset-max-ziplist-entries"), bulk("128")),
    );
    h.check(
        "CONFIG SET hash-max-listpack-entries -1",
        "-ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-entries') - argument must be between 0 and 9223372036854775807 inclusive\r\n",
    );
    h.check(
        "CONFIG SET hash-max-listpack-value -1",
        "-ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-value') - argument must be a memory value\r\n",
    );
}

/// A replication delta runs its handler on the key as stored, after the arity check: a
/// command too short for its handler (from a peer) is refused, never run; a row without
/// the DELTA flag is refused too.
#[test]
fn replicated_deltas_are_checked_before_they_run() {
    use shoal_resp::Reply;
    let mut h = H::new();
    let args = |line: &str| -> Vec<Bytes> {
        line.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    };
    let run = |h: &mut H, line: &str| {
        let a = args(line);
        let spec = super::lookup(&a[0]).unwrap();
        super::run_replicated(&h.node, &mut h.session, spec, &a, h.now)
    };
    assert!(
        matches!(run(&mut h, "LSET k"), Reply::Error(_)),
        "too short"
    );
    assert!(
        matches!(run(&mut h, "SET k v"), Reply::Error(_)),
        "not a DELTA row"
    );
    assert_eq!(run(&mut h, "HSET h f v"), Reply::Int(1));
    assert_eq!(run(&mut h, "HINCRBY h n 2"), Reply::Int(2));
    h.check("HGET h n", &bulk("2"));
}

/// Streams where Redis 7.2 answers otherwise than the redis-server 7.0 the differential test
/// runs (its texts from 7.2's `t_stream.c`), and the bookkeeping no reply of 7.0 shows.
#[test]
fn streams_follow_redis_7_2() {
    let mut h = H::new();
    h.check(
        "XREAD STREAMS a b 0",
        "-ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified.\r\n",
    );
    h.check(
        "XREADGROUP GROUP g c STREAMS a b 0",
        "-ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified.\r\n",
    );
    // XSETID: the current max_deleted_entry_id is checked first.
    h.check("XADD s 1-1 f v", &bulk("1-1"));
    h.check("XADD s 2-0 f v", &bulk("2-0"));
    h.check("XDEL s 1-1", ":1\r\n");
    h.check(
        "XSETID s 1-0",
        "-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n",
    );
    // Below a deleted last entry: refused (later entries would come out of order).
    h.check("XDEL s 2-0", ":1\r\n");
    h.check("XADD s 3-0 f v", &bulk("3-0"));
    h.check("XDEL s 3-0", ":1\r\n");
    h.check("XADD s 4-0 f v", &bulk("4-0"));
    h.check("XSETID s 4-5 MAXDELETEDID 1-0", "+OK\r\n");
    h.check("XADD s 4-6 f v", &bulk("4-6"));
    h.check("XLEN s", ":2\r\n");
    // A group told it read more than was added shows a negative lag, as Redis shows it.
    h.check("XADD x 1-0 a 1", &bulk("1-0"));
    h.check("XGROUP CREATE x g $ ENTRIESREAD 5", "+OK\r\n");
    let groups = h.run("XINFO GROUPS x");
    assert!(groups.contains("$3\r\nlag\r\n:-4\r\n"), "{groups}");
    // XREADGROUP creates its consumer even with nothing to read (7.0 did not).
    h.check("XREADGROUP GROUP g alice STREAMS x >", "*-1\r\n");
    let consumers = h.run("XINFO CONSUMERS x g");
    assert!(consumers.contains("$5\r\nalice\r\n"), "{consumers}");
    assert!(
        consumers.contains("$8\r\ninactive\r\n:-1\r\n"),
        "{consumers}"
    );
    // XGROUP SETID reads ENTRIESREAD before it looks at the key.
    h.check(
        "XGROUP SETID nokey g 0 ENTRIESREAD x",
        "-ERR value is not an integer or out of range\r\n",
    );
    h.check(
        "XGROUP SETID x nogroup 0 ENTRIESREAD -5",
        "-ERR value for ENTRIESREAD must be positive or -1\r\n",
    );
    // BLOCK given twice: the last one counts, in the command and where the layer above
    // reads it (`wait`).
    h.check("XREAD BLOCK 0 BLOCK 7 STREAMS nothing $", "*-1\r\n");
    let block = h.session.block.take().expect("it waits");
    assert_eq!(block.deadline_ms, Some(h.now + 7));
    let args = H::parse(b"*6\r\n$5\r\nXREAD\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n$5\r\nBLOCK\r\n$1\r\n7\r\n$7\r\nSTREAMS\r\n");
    let spec = super::lookup(b"xread").unwrap();
    let mut args = args;
    args.extend(["nothing", "$"].map(Bytes::from));
    assert_eq!(
        super::wait::timeout_of(spec, &args, h.now).unwrap().0,
        Some(h.now + 7)
    );
    let once: Vec<Bytes> = super::wait::without_block(spec, &args).unwrap();
    assert_eq!(once, ["XREAD", "STREAMS", "nothing", "$"].map(Bytes::from));
}

/// An approximate trim goes to the replicas as the exact trim it made (Redis's
/// `streamRewriteApproxSpecifier`), and XADD's `*` as the ID it got.
#[test]
fn stream_writes_replicate_as_what_they_did() {
    let mut h = H::new();
    for i in 1..=250 {
        h.run(&format!("XADD t {i}-0 f v"));
    }
    let rewritten = |h: &mut H| -> Vec<String> {
        let again = h.session.propagate.take().expect("rewritten");
        again
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    };
    h.check("XADD t MAXLEN ~ 120 251-0 f v", &bulk("251-0"));
    assert_eq!(
        rewritten(&mut h),
        ["XADD", "t", "MAXLEN", "=", "151", "251-0", "f", "v"]
    );
    h.check("XTRIM t MAXLEN ~ 10 LIMIT 100", ":100\r\n");
    assert_eq!(rewritten(&mut h), ["XTRIM", "t", "MAXLEN", "=", "51"]);
    let id = h.run("XADD t * f v");
    let again = h.session.propagate.take().expect("rewritten");
    assert_eq!(
        format!("{}\r\n", String::from_utf8_lossy(&again[2])),
        id[id.find('\n').unwrap() + 1..]
    );
    h.run("XADD t 999999999999999-0 f v");
    assert!(
        h.session.propagate.is_none(),
        "an explicit ID goes as it is"
    );
}

/// An array of bulk strings, as `ACL USERS` and `ACL LIST` answer.
fn bulk_array(items: &[&str]) -> String {
    let mut out = format!("*{}\r\n", items.len());
    for i in items {
        out.push_str(&bulk(i));
    }
    out
}

#[test]
fn acl_setuser_getuser_and_list() {
    let mut h = H::new();
    h.check("ACL WHOAMI", &bulk("default"));
    h.check(
        "ACL LIST",
        &bulk_array(&["user default on nopass sanitize-payload ~* &* +@all"]),
    );
    h.check("ACL GETUSER nobody", NIL);
    h.check(
        "ACL SETUSER alice on >p1 ~cached:* %R~r* &ch* +@string -set +get",
        OK,
    );
    h.check(
        "ACL GETUSER alice",
        "*12\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$16\r\nsanitize-payload\r\n$9\r\npasswords\r\n*1\r\n$64\r\nf64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a\r\n$8\r\ncommands\r\n$24\r\n-@all +@string -set +get\r\n$4\r\nkeys\r\n$15\r\n~cached:* %R~r*\r\n$8\r\nchannels\r\n$4\r\n&ch*\r\n$9\r\nselectors\r\n*0\r\n",
    );
    // Redis 7.2 keeps the rules as given, without repeats.
    h.check(
        "ACL SETUSER alice -@all +client|list +client|list +config|get +config +acl|list -acl",
        OK,
    );
    h.check(
        "ACL SETUSER alice (+get ~a*) (%W~w*",
        "-ERR Unmatched parenthesis in acl selector starting at '(%W~w*'.\r\n",
    );
    h.check("ACL SETUSER alice \"(+set\" \"%W~w*)\"", OK);
    h.check(
        "ACL LIST",
        &bulk_array(&[
            "user alice on sanitize-payload #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~cached:* %R~r* resetchannels &ch* -@all +client|list +config -acl (%W~w* resetchannels -@all +set)",
            "user default on nopass sanitize-payload ~* &* +@all",
        ]),
    );
    h.check("ACL USERS", &bulk_array(&["alice", "default"]));
    // Refused rules change nothing.
    h.check(
        "ACL SETUSER alice off +nosuch",
        "-ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL\r\n",
    );
    h.check(
        "ACL SETUSER alice blah",
        "-ERR Error in ACL SETUSER modifier 'blah': Syntax error\r\n",
    );
    h.check("ACL SETUSER alice -select|0", "-ERR Error in ACL SETUSER modifier '-select|0': Unknown command or category name in ACL\r\n");
    h.check("ACL SETUSER alice +config|get|x", "-ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported\r\n");
    h.check("ACL SETUSER alice #ABC", "-ERR Error in ACL SETUSER modifier '#ABC': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters\r\n");
    h.check("ACL SETUSER alice <nope", "-ERR Error in ACL SETUSER modifier '<nope': The password you are trying to remove from the user does not exist\r\n");
    h.check("ACL SETUSER alice allkeys ~x", "-ERR Error in ACL SETUSER modifier '~x': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns\r\n");
    h.check(
        "ACL SETUSER alice \"(on)\"",
        "-ERR Error in ACL SETUSER modifier '(on)': Syntax error\r\n",
    );
    h.check(
        "ACL SETUSER \"a b\"",
        "-ERR Usernames can't contain spaces or null characters\r\n",
    );
    let out = h.run("ACL GETUSER alice");
    assert!(out.contains("$2\r\non\r\n"), "still on: {out}");
    h.check("ACL SETUSER newbie", OK);
    h.check("ACL GETUSER newbie", "*12\r\n$5\r\nflags\r\n*2\r\n$3\r\noff\r\n$16\r\nsanitize-payload\r\n$9\r\npasswords\r\n*0\r\n$8\r\ncommands\r\n$5\r\n-@all\r\n$4\r\nkeys\r\n$0\r\n\r\n$8\r\nchannels\r\n$0\r\n\r\n$9\r\nselectors\r\n*0\r\n");
    h.check(
        "ACL DELUSER default",
        "-ERR The 'default' user cannot be removed\r\n",
    );
    h.check("ACL DELUSER newbie nobody alice", &int(2));
    h.check("ACL USERS", &bulk_array(&["default"]));
    h.check("ACL LOAD", "-ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.\r\n");
}

#[test]
fn acl_cat_genpass_dryrun_and_help() {
    let mut h = H::new();
    let out = h.run("ACL CAT");
    assert!(
        out.starts_with("*21\r\n$8\r\nkeyspace\r\n$4\r\nread\r\n"),
        "{out}"
    );
    let out = h.run("ACL CAT dangerous");
    for name in [
        "flushall",
        "config|set",
        "client|kill",
        "acl|setuser",
        "keys",
    ] {
        assert!(out.contains(&format!("\r\n{name}\r\n")), "{name} in {out}");
    }
    assert!(
        !out.contains("\r\nconfig|help\r\n") && !out.contains("\r\nget\r\n"),
        "{out}"
    );
    h.check("ACL CAT nosuch", "-ERR Unknown category 'nosuch'\r\n");
    for (bits, len) in [("", 64), ("1", 1), ("5", 2), ("4096", 1024)] {
        let out = h.run(&format!("ACL GENPASS {bits}"));
        let hex = out.split("\r\n").nth(1).unwrap();
        assert_eq!(hex.len(), len, "{out}");
        assert!(hex
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }
    assert_ne!(h.run("ACL GENPASS"), h.run("ACL GENPASS"));
    h.check(
        "ACL GETUSER",
        "-ERR wrong number of arguments for 'acl|getuser' command\r\n",
    );
    h.check(
        "ACL WHOAMI x",
        "-ERR wrong number of arguments for 'acl|whoami' command\r\n",
    );
    h.check(
        "ACL CAT a b",
        "-ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.\r\n",
    );
    for bad in ["0", "4097", "-1"] {
        h.check(&format!("ACL GENPASS {bad}"), "-ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096\r\n");
    }
    h.check("ACL GENPASS x", NOT_INT);
    h.check(
        "ACL SETUSER bob on >pw ~b:* &news* +@read +set +publish +select|0",
        OK,
    );
    h.check("ACL DRYRUN bob get b:1", OK);
    h.check("ACL DRYRUN bob set b:1 x", OK);
    h.check(
        "ACL DRYRUN bob del b:1",
        &bulk("User bob has no permissions to run the 'del' command"),
    );
    h.check(
        "ACL DRYRUN bob get a:1",
        &bulk("User bob has no permissions to access the 'a:1' key"),
    );
    h.check(
        "ACL DRYRUN bob publish other x",
        &bulk("User bob has no permissions to access the 'other' channel"),
    );
    h.check(
        "ACL DRYRUN bob config get x",
        &bulk("User bob has no permissions to run the 'config|get' command"),
    );
    h.check("ACL DRYRUN bob select 0", OK);
    // XREADGROUP reads its stream (Redis 7's key spec: RO ACCESS).
    h.check("ACL SETUSER reader on %R~s* +@all", OK);
    h.check("ACL DRYRUN reader xreadgroup GROUP g c STREAMS s1 >", OK);
    h.check(
        "ACL DRYRUN reader xadd s1 * f v",
        &bulk("User reader has no permissions to access the 's1' key"),
    );
    h.check(
        "ACL DRYRUN bob select 1",
        &bulk("User bob has no permissions to run the 'select' command"),
    );
    h.check(
        "ACL DRYRUN nobody get x",
        "-ERR User 'nobody' not found\r\n",
    );
    h.check(
        "ACL DRYRUN bob nosuch x",
        "-ERR Command 'nosuch' not found\r\n",
    );
    h.check(
        "ACL DRYRUN bob client nosuch",
        "-ERR Command 'client' not found\r\n",
    );
    h.check(
        "ACL DRYRUN bob get",
        "-ERR wrong number of arguments for 'get' command\r\n",
    );
    assert!(h.run("ACL HELP").starts_with("*29\r\n"));
    h.check(
        "ACL FOO",
        "-ERR unknown subcommand 'FOO'. Try ACL HELP.\r\n",
    );
}

#[test]
fn acl_refusals_auth_and_the_log() {
    let mut h = H::new();
    h.check(
        "ACL SETUSER bob on >pw ~b:* %R~r:* &news* +@read +set +multi +exec +eval +sort",
        OK,
    );
    h.check(
        "AUTH bob wrong",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    h.check("ACL WHOAMI", &bulk("default"));
    h.check("AUTH bob pw", OK);
    h.check("GET b:1", NIL);
    h.check("GET r:1", NIL);
    h.check("SET r:1 x", "-NOPERM No permissions to access a key\r\n");
    h.check("GET a:1", "-NOPERM No permissions to access a key\r\n");
    h.check(
        "DEL b:1",
        "-NOPERM User bob has no permissions to run the 'del' command\r\n",
    );
    // A container's unknown subcommand is answered as such, before the ACL.
    h.check(
        "CLIENT MAINT_NOTIFICATIONS ON",
        "-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n",
    );
    h.check(
        "CONFIG GET maxmemory",
        "-NOPERM User bob has no permissions to run the 'config|get' command\r\n",
    );
    h.check(
        "ACL WHOAMI",
        "-NOPERM User bob has no permissions to run the 'acl|whoami' command\r\n",
    );
    // A key of database 0 spelled as a numbered database's stored key would reach it.
    h.check(
        "GET \"\\xff\\xdb\\x00\\x09b:1\"",
        "-NOPERM No permissions to access a key\r\n",
    );
    // EXISTS needs neither read nor write: any matching pattern.
    h.check("EXISTS r:1", &int(0));
    // SORT's BY and GET patterns read other keys: only for a user that may read every key.
    h.check("SORT_RO b:l", "*0\r\n");
    // SORT's STORE key is a key it writes.
    h.check(
        "SORT b:l STORE secret",
        "-NOPERM No permissions to access a key\r\n",
    );
    h.check("SORT b:l LIMIT 0 1 STORE b:out", &int(0));
    // A script's call with too few arguments answers Redis's arity error for scripts,
    // before the ACL is asked.
    let out = h.run("EVAL \"return redis.pcall('publish')\" 0");
    assert!(
        out.contains("Wrong number of args calling Redis command from script"),
        "{out}"
    );
    h.check(
        "SORT_RO b:l BY w_*",
        "-ERR BY option of SORT denied due to insufficient ACL permissions.\r\n",
    );
    h.check(
        "SORT_RO b:l GET #",
        "-ERR GET option of SORT denied due to insufficient ACL permissions.\r\n",
    );
    // A script's commands are checked against its caller.
    h.check(
        "EVAL \"return redis.pcall('del', KEYS[1])\" 1 b:1",
        "-ERR ACL failure in script: User bob has no permissions to run the 'del' command\r\n",
    );
    let out = h.run("EVAL \"return redis.call('del', KEYS[1])\" 1 b:1");
    assert!(out.starts_with("-ERR ACL failure in script: User bob has no permissions to run the 'del' command script: "), "{out}");
    // Refused while queued: the transaction is discarded.
    h.check("MULTI", OK);
    h.check(
        "DEL b:1",
        "-NOPERM User bob has no permissions to run the 'del' command\r\n",
    );
    h.check(
        "EXEC",
        "-EXECABORT Transaction discarded because of previous errors.\r\n",
    );
    // Allowed while queued, refused at EXEC: the ACL changed in between.
    h.check("MULTI", OK);
    h.check("SET b:1 v", "+QUEUED\r\n");
    h.check("GET b:1", "+QUEUED\r\n");
    let mut admin = H::new();
    admin.node = std::mem::replace(&mut h.node, admin.node);
    admin.check("ACL SETUSER bob -set", OK);
    h.node = std::mem::replace(&mut admin.node, h.node);
    h.check("EXEC", "*2\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n$-1\r\n");
    h.check("AUTH default x", OK);
    let log = h.run("ACL LOG 100");
    // Newest first: the EXEC refusal, the queued DEL, the script's, ...
    assert!(log.starts_with("*"), "{log}");
    for needle in [
        "\r\nmulti\r\n",
        "\r\nlua\r\n",
        "\r\ntoplevel\r\n",
        "\r\nauth\r\n",
        "\r\nAUTH\r\n",
        "\r\nkey\r\n",
        "\r\nr:1\r\n",
        "\r\nconfig|get\r\n",
        "user=bob",
    ] {
        assert!(log.contains(needle), "{needle:?} in {log}");
    }
    let one = h.run("ACL LOG 1");
    assert!(one.starts_with("*1\r\n*20\r\n$5\r\ncount\r\n"), "{one}");
    h.check("ACL LOG -1", "*0\r\n");
    h.check("ACL LOG RESET", OK);
    h.check("ACL LOG", "*0\r\n");
    let info = h.run("INFO stats");
    assert!(info.contains("acl_access_denied_auth:1\r\n"), "{info}");
    assert!(info.contains("acl_access_denied_key:4\r\n"), "{info}");
    // acllog-max-len bounds it (0: nothing kept).
    h.check("CONFIG SET acllog-max-len 1", OK);
    h.check("AUTH bob pw", OK);
    h.run("GET a:1");
    h.run("GET a:2");
    h.check("AUTH default x", OK);
    let log = h.run("ACL LOG");
    assert!(log.starts_with("*1\r\n") && log.contains("a:2"), "{log}");
    h.check("CONFIG SET acllog-max-len 0", OK);
    h.check("ACL LOG RESET", OK);
    h.check("AUTH bob pw", OK);
    h.run("GET a:3");
    h.check("AUTH default x", OK);
    h.check("ACL LOG", "*0\r\n");
}

#[test]
fn acl_default_user_and_requirepass() {
    let mut h = H::with(|c| c.requirepass = "secret".into());
    h.check("GET k", "-NOAUTH Authentication required.\r\n");
    h.check("AUTH secret", OK);
    let out = h.run("ACL LIST");
    assert!(out.contains("user default on sanitize-payload #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~* &* +@all"), "{out}");
    h.check("CONFIG SET requirepass \"\"", OK);
    h.check(
        "ACL LIST",
        &bulk_array(&["user default on nopass sanitize-payload ~* &* +@all"]),
    );
    h.check("AUTH x", "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n");
    h.check("CONFIG SET requirepass other", OK);
    h.check(
        "AUTH secret",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    h.check("AUTH other", OK);
    // A configured default user starts from `reset`; a user is declared once.
    let mut h = H::with(|c| c.user = vec!["default on nopass +@read".into()]);
    assert_eq!(
        super::acl::registry(&h.node.engine)
            .default_user()
            .describe(),
        b"user default on nopass sanitize-payload resetchannels -@all +@read"
    );
    h.check("GET k", "-NOPERM No permissions to access a key\r\n");
    h.check(
        "ACL LIST",
        "-NOPERM User default has no permissions to run the 'acl|list' command\r\n",
    );
    let (_, problem) = super::acl::build("", &["a on".into(), "a off".into()], "");
    assert!(problem.unwrap().contains("Duplicate user found"));
    // A user from the configuration; the last HELLO AUTH counts.
    let mut h = H::with(|c| c.user = vec!["app on >s3 ~app:* +@all".into()]);
    h.check("ACL USERS", &bulk_array(&["app", "default"]));
    let out = h.run("HELLO 2 AUTH app wrong AUTH app s3");
    assert!(out.starts_with("*14\r\n"), "{out}");
    h.check("ACL WHOAMI", &bulk("app"));
    h.check("GET other", "-NOPERM No permissions to access a key\r\n");
    assert!(h.run("CLIENT INFO").contains(" user=app "));
    h.check("CLIENT KILL USER app SKIPME no", &int(1));
    assert!(h.session.close);
    assert!(super::acl::build("", &["bad on +nosuch".into()], "")
        .1
        .is_some());
}

#[test]
fn acl_file_load_and_save() {
    let path = std::env::temp_dir().join(format!("shoal-acl-{}.acl", std::process::id()));
    std::fs::write(
        &path,
        "user app on >pw ~app:* +@all\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let file = path.to_str().unwrap().to_string();
    let mut h = H::with(|c| c.aclfile = file.clone());
    h.check("ACL USERS", &bulk_array(&["app", "default"]));
    h.check("CONFIG GET aclfile", &bulk_array(&["aclfile", &file]));
    h.check("ACL SETUSER ops on >o +@all ~*", OK);
    h.check("ACL SAVE", OK);
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains("user ops on sanitize-payload #"), "{saved}");
    assert!(
        saved.contains("\nuser default on nopass sanitize-payload ~* &* +@all\n"),
        "{saved}"
    );
    assert!(
        saved.ends_with('\n') && saved.lines().count() == 3,
        "{saved}"
    );
    // A file with a mistake changes nothing.
    std::fs::write(&path, "user app on +nosuch\n").unwrap();
    let out = h.run("ACL LOAD");
    assert!(
        out.starts_with(&format!(
            "-ERR {file}:1: Unknown command or category name in ACL. WARNING: ACL errors detected"
        )),
        "{out}"
    );
    h.check("ACL USERS", &bulk_array(&["app", "default", "ops"]));
    // A good one replaces every user; `default` as it starts when the file does not name it.
    std::fs::write(&path, "user app off\n").unwrap();
    h.check("ACL LOAD", OK);
    h.check("ACL USERS", &bulk_array(&["app", "default"]));
    h.check(
        "ACL LIST",
        &bulk_array(&[
            "user app off sanitize-payload resetchannels -@all",
            "user default on nopass sanitize-payload ~* &* +@all",
        ]),
    );
    std::fs::remove_file(&path).unwrap();
    let out = h.run("ACL LOAD");
    assert!(
        out.starts_with(&format!("-ERR Error loading ACLs, opening file '{file}'")),
        "{out}"
    );
    let both = NodeConfig {
        user: vec!["a on".into()],
        aclfile: file,
        ..NodeConfig::default()
    };
    assert!(both
        .validate()
        .unwrap_err()
        .contains("either an ACL file or declare users"));
}

#[test]
fn a_killed_client_leaves_client_list_at_once() {
    let mut h = H::new();
    let addr: SocketAddr = "127.0.0.1:6000".parse().unwrap();
    let other = h.node.engine.clients.register(addr, addr, Box::new(|_| {}));
    assert!(h.run("CLIENT LIST").contains("addr=127.0.0.1:6000"));
    h.check("CLIENT KILL ADDR 127.0.0.1:6000", &int(1));
    // Its connection has not noticed yet: it is still registered, but not listed.
    assert!(other.killed.load(Ordering::Relaxed));
    assert!(!h.run("CLIENT LIST").contains("addr=127.0.0.1:6000"));
    h.check("CLIENT KILL ADDR 127.0.0.1:6000", &int(0));
}

#[test]
fn every_row_has_an_arity() {
    // `CommandSpec::takes` reads 0 as "no argument count fits": no row may have it.
    for spec in super::TABLE.iter().chain(super::INTERNAL) {
        assert_ne!(spec.arity, 0, "{}", spec.name);
    }
}

/// A script's reply nested deeper than the converter goes ends in Redis's error element
/// (where Redis's Lua stack gives out), not a nil, and nothing overflows a worker's stack.
#[test]
fn a_script_reply_nested_too_deep_ends_in_an_error() {
    let mut h = H::new();
    for depth in [100, 100_000] {
        let out = h.run(&format!(
            "EVAL \"local a = {{}} local b = a for i = 1, {depth} do b[1] = {{}} b = b[1] end return a\" 0"
        ));
        assert!(out.starts_with("*1\r\n*1\r\n"), "{out}");
        assert!(out.ends_with("-ERR reached lua stack limit\r\n"), "{out}");
    }
    // Shallower than the bound: every level, as in Redis.
    let out = h.run(
        "EVAL \"local a = {} local b = a for i = 1, 10 do b[1] = {} b = b[1] end return a\" 0",
    );
    assert_eq!(out, format!("{}*0\r\n", "*1\r\n".repeat(10)));
}

/// The pure decisions on what a command's arguments show and whether they fit: MONITOR's
/// and the slow log's redactions, MONITOR's admin rule, a subcommand's misfit.
#[test]
fn shown_arguments_and_subcommand_misfits_follow_redis() {
    use super::{lookup_listed, monitor_args, shown_args, subcommand_misfit, Misfit};
    let args = |line: &str| -> Vec<Bytes> {
        line.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    };
    let text = |shown: &[Bytes]| {
        shown
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let spec = |line: &str| lookup_listed(line.split(' ').next().unwrap().as_bytes()).unwrap();
    for (line, want) in [
        (
            "ACL SETUSER u on >pw",
            "ACL SETUSER (redacted) (redacted) (redacted)",
        ),
        ("ACL DELUSER u", "ACL DELUSER u"),
        (
            "CONFIG SET maxmemory 1 masterauth pw",
            "CONFIG SET maxmemory 1 masterauth (redacted)",
        ),
        // Pairs off by one: the password after a sensitive name never shows.
        (
            "CONFIG SET maxmemory requirepass pw",
            "CONFIG SET maxmemory requirepass (redacted)",
        ),
        ("CONFIG SET requirepass", "CONFIG SET requirepass"),
        ("CONFIG GET requirepass", "CONFIG GET requirepass"),
        ("GET requirepass", "GET requirepass"),
    ] {
        let a = args(line);
        assert_eq!(text(&shown_args(spec(line), &a)), want, "{line}");
    }
    for (line, shown) in [
        ("MODULE LIST", false),
        ("CONFIG GET maxmemory", false),
        ("CLIENT SETNAME x", true),
        ("SLOWLOG HELP", true),
        ("SLOWLOG GET", false),
        ("CLIENT NOSUCH", false),
        ("SHUTDOWN", false),
        ("GET k", true),
    ] {
        let a = args(line);
        assert_eq!(monitor_args(spec(line), &a).is_some(), shown, "{line}");
    }
    for (line, want) in [
        ("CLIENT NOSUCH", Some(Misfit::Unknown)),
        (
            "OBJECT ENCODING",
            Some(Misfit::Arity("object|encoding".into())),
        ),
        ("OBJECT ENCODING k", None),
        // Shoal's own subcommand checks its arguments itself.
        ("CLUSTER HASKEY", None),
        // Redis's that Shoal's row does not list: its arity.
        (
            "CLUSTER LINKS x",
            Some(Misfit::Arity("cluster|links".into())),
        ),
        ("GET k", None),
    ] {
        let a = args(line);
        assert_eq!(subcommand_misfit(spec(line), &a), want, "{line}");
    }
}

/// CLIENT LIST's output figures take the mailbox in as one more chunk.
#[test]
fn a_connections_shown_output_counts_its_mailbox() {
    let b = crate::client::Buffers::default();
    b.set_output(10, 2, 300);
    assert_eq!(b.shown_output(), (10, 2, 300));
    b.mailbox.store(5000, Ordering::Relaxed);
    assert_eq!(b.shown_output(), (10, 3, 5300));
}

/// A node's answer to another node's request (acl.copy's LOADING while it copies its own
/// users) is no client's error: INFO's errorstats and total_error_replies leave it out.
#[test]
fn a_peers_request_answered_loading_is_no_clients_error() {
    let mut h = H::new();
    h.session.internal = true;
    super::acl::registry(h.node.engine()).set_copying(true);
    let args = [Bytes::from_static(b"acl.copy")];
    let reply = execute(&h.node, &mut h.session, &args, h.now);
    let mut out = BytesMut::new();
    reply.encode(h.session.proto, &mut out);
    assert!(out.starts_with(b"-LOADING"), "{out:?}");
    let commands = &h.node.engine().commands;
    assert_eq!(commands.total_errors(), 0);
    assert!(commands.errors().is_empty());
    // A client's error still counts.
    h.session.internal = false;
    h.check(
        "INCR",
        "-ERR wrong number of arguments for 'incr' command\r\n",
    );
    assert_eq!(h.node.engine().commands.total_errors(), 1);
}

/// COMMAND INFO's key specs come from Redis's table alone: every listed command and keyed
/// subcommand that has keys is in it (a new one needs its row there, not a made-up spec).
#[test]
fn every_keyed_command_has_key_specs() {
    use super::{docs, is_container, keyspecs, TABLE};
    let mut missing = Vec::new();
    for c in TABLE {
        if is_container(c) {
            for s in c.subcommands {
                let name = format!("{}|{s}", c.name);
                let keyed = docs::subcommand_meta(c.name, s).is_some_and(|(_, keyed)| keyed);
                if keyed && keyspecs::specs(&name).is_none() {
                    missing.push(name);
                }
            }
        } else if (c.first_key > 0 || c.numkeys > 0) && keyspecs::specs(c.name).is_none() {
            missing.push(c.name.to_string());
        }
    }
    assert!(missing.is_empty(), "no key specs for {missing:?}");
}
