//! The Memcached front end in a static cluster, over real TCP: every command on any node,
//! gets split across owners and merged in the client's key order, one keyspace with the
//! Redis protocol across nodes, flush_all on every node, failover to a replica, a real
//! Memcached client library, and libmemcached's `memccapable` against a cluster node.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use redis::Commands;
use shoal_tests::{bin, read_bin, read_exact_by, send, wait_until, TestCluster};

const T: Duration = Duration::from_secs(10);

fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s
}

/// Sends `req` and expects exactly `want` back.
#[track_caller]
fn exchange(s: &mut TcpStream, req: &str, want: &str) {
    send(s, req.as_bytes());
    let got = read_exact_by(s, want.len(), T);
    assert_eq!(String::from_utf8_lossy(&got), want, "request: {req:?}");
}

/// A RESP connection to member `i`, with the cluster's password if it has one.
fn resp(c: &TestCluster, i: usize, password: Option<&str>) -> redis::Connection {
    let auth = password.map_or(String::new(), |p| format!(":{p}@"));
    let url = format!("redis://{auth}{}/", c.members[i].addr);
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// One key owned by each member, named `{prefix}{n}`, in member order (owners from CLUSTER
/// NODES, KEYSLOT and each member's MYID).
fn one_key_per_owner(c: &TestCluster, prefix: &str) -> Vec<String> {
    keys_per_owner(c, prefix, None)
}

fn keys_per_owner(c: &TestCluster, prefix: &str, password: Option<&str>) -> Vec<String> {
    let ids: Vec<String> = (0..c.members.len())
        .map(|i| {
            redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut resp(c, i, password))
                .unwrap()
        })
        .collect();
    let mut con = resp(c, 0, password);
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con).unwrap();
    let owner_of_slot = |slot: i64| -> usize {
        let id = nodes.lines().find_map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            f[8..]
                .iter()
                .any(|r| {
                    let (lo, hi) = r.split_once('-').unwrap_or((r, r));
                    (lo.parse::<i64>().unwrap()..=hi.parse::<i64>().unwrap()).contains(&slot)
                })
                .then(|| f[0].to_string())
        });
        ids.iter()
            .position(|m| Some(m) == id.as_ref())
            .unwrap_or_else(|| panic!("slot {slot} has no owner in {nodes}"))
    };
    let mut keys: Vec<Option<String>> = vec![None; c.members.len()];
    for i in 0..1000 {
        let k = format!("{prefix}{i}");
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&k)
            .query(&mut con)
            .unwrap();
        let o = owner_of_slot(slot);
        if keys[o].is_none() {
            keys[o] = Some(k);
        }
        if keys.iter().all(Option::is_some) {
            return keys.into_iter().map(Option::unwrap).collect();
        }
    }
    panic!("no key per owner among 1000");
}

#[test]
fn every_command_works_on_any_node() {
    let c = TestCluster::start(3, |_| {});
    let keys = one_key_per_owner(&c, "k");
    // Each key is worked on through each node: once through its owner, twice forwarded.
    for (n, m) in c.members.iter().enumerate() {
        let mut s = raw(m.memcache_addr);
        for k in &keys {
            let k = format!("{k}.{n}");
            exchange(
                &mut s,
                &format!("set {k} 42 0 5\r\nhello\r\n"),
                "STORED\r\n",
            );
            exchange(
                &mut s,
                &format!("get {k}\r\n"),
                &format!("VALUE {k} 42 5\r\nhello\r\nEND\r\n"),
            );
            exchange(&mut s, &format!("add {k} 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
            exchange(&mut s, &format!("append {k} 0 0 1\r\n!\r\n"), "STORED\r\n");
            exchange(&mut s, &format!("prepend {k} 0 0 1\r\n<\r\n"), "STORED\r\n");
            // gets: the cas unique is the owner's; a cas with it stores, a second fails.
            send(&mut s, format!("gets {k}\r\n").as_bytes());
            let got = shoal_tests::read_until_end(&mut s, T);
            let head = format!("VALUE {k} 42 7 ");
            let cas: u64 = got
                .strip_prefix(&head)
                .and_then(|r| r.split("\r\n").next())
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("gets {k}: {got:?}"));
            assert_eq!(got, format!("{head}{cas}\r\n<hello!\r\nEND\r\n"));
            exchange(
                &mut s,
                &format!("cas {k} 1 0 2 {cas}\r\nok\r\n"),
                "STORED\r\n",
            );
            exchange(
                &mut s,
                &format!("cas {k} 1 0 2 {cas}\r\nno\r\n"),
                "EXISTS\r\n",
            );
            exchange(&mut s, &format!("touch {k} 100\r\n"), "TOUCHED\r\n");
            exchange(
                &mut s,
                &format!("gat 200 {k}\r\n"),
                &format!("VALUE {k} 1 2\r\nok\r\nEND\r\n"),
            );
            exchange(&mut s, &format!("set {k}.n 0 0 2\r\n10\r\n"), "STORED\r\n");
            exchange(&mut s, &format!("incr {k}.n 5\r\n"), "15\r\n");
            exchange(&mut s, &format!("decr {k}.n 20\r\n"), "0\r\n");
            exchange(&mut s, &format!("incr {k}.missing 1\r\n"), "NOT_FOUND\r\n");
            exchange(&mut s, &format!("delete {k}\r\n"), "DELETED\r\n");
            exchange(&mut s, &format!("delete {k}\r\n"), "NOT_FOUND\r\n");
            // Meta commands, with their flags, opaque and quiet mode.
            exchange(&mut s, &format!("ms {k} 2 T0 F7\r\nhi\r\n"), "HD\r\n");
            exchange(
                &mut s,
                &format!("mg {k} v f Oab k\r\n"),
                &format!("VA 2 f7 Oab k{k}\r\nhi\r\n"),
            );
            exchange(&mut s, &format!("ma {k}.n D3\r\n"), "HD\r\n");
            exchange(&mut s, &format!("ma {k}.n v\r\n"), "VA 1\r\n4\r\n");
            exchange(
                &mut s,
                &format!("md {k} q\r\nmg {k} v q\r\nmn\r\n"),
                "MN\r\n",
            );
            // noreply: nothing comes back, in order with what follows.
            exchange(
                &mut s,
                &format!("set {k} 0 0 1 noreply\r\nx\r\nincr {k} 1 noreply\r\nget {k}\r\n"),
                &format!("VALUE {k} 0 1\r\nx\r\nEND\r\n"),
            );
        }
        // Keyless commands answer here.
        exchange(&mut s, "version\r\n", "VERSION 1.6.21\r\n");
        exchange(&mut s, "verbosity 1\r\n", "OK\r\n");
        exchange(&mut s, "mn\r\n", "MN\r\n");
        exchange(&mut s, "gat 10\r\n", "END\r\n");
    }
}

#[test]
fn a_get_across_owners_answers_in_the_clients_key_order() {
    let c = TestCluster::start(3, |_| {});
    let keys = one_key_per_owner(&c, "g");
    let mut s = raw(c.members[0].memcache_addr);
    for (i, k) in keys.iter().enumerate() {
        exchange(&mut s, &format!("set {k} {i} 0 1\r\n{i}\r\n"), "STORED\r\n");
    }
    // Every node, keys of all three owners, a miss and a repeated key in between.
    let order = [&keys[2], "nothere", &keys[0], &keys[1], &keys[2]];
    let value = |k: &str| {
        let i = keys.iter().position(|x| x == k).unwrap();
        format!("VALUE {k} {i} 1\r\n{i}\r\n")
    };
    let want: String = order
        .iter()
        .filter(|k| **k != "nothere")
        .map(|k| value(k))
        .collect::<String>()
        + "END\r\n";
    for m in &c.members {
        let mut s = raw(m.memcache_addr);
        exchange(&mut s, &format!("get {}\r\n", order.join(" ")), &want);
        // gat changes the expiry of every hit at its owner and still answers in order.
        exchange(&mut s, &format!("gat 0 {}\r\n", order.join(" ")), &want);
    }
    // A pipeline of gets and sets through one node keeps its order.
    let mut s = raw(c.members[1].memcache_addr);
    let mut req = String::new();
    let mut want = String::new();
    for round in 0..20 {
        for k in &keys {
            req += &format!("set {k} 0 0 2\r\n{round:02}\r\nget {k} {}\r\n", keys[0]);
            // keys[0] comes first in each round, so it already holds this round's value.
            want += "STORED\r\n";
            want += &format!("VALUE {k} 0 2\r\n{round:02}\r\n");
            want += &format!("VALUE {} 0 2\r\n{round:02}\r\n", keys[0]);
            want += "END\r\n";
        }
    }
    exchange(&mut s, &req, &want);
}

#[test]
fn one_keyspace_with_the_redis_protocol_across_nodes() {
    let c = TestCluster::start(3, |_| {});
    let keys = one_key_per_owner(&c, "x");
    for (i, k) in keys.iter().enumerate() {
        let mut mc = raw(c.members[i].memcache_addr);
        // Written through Memcached on one node, read through RESP on the others.
        exchange(&mut mc, &format!("set {k} 9 0 3\r\nabc\r\n"), "STORED\r\n");
        for m in &c.members {
            let v: Option<String> = m.client().get(k).unwrap();
            assert_eq!(v.as_deref(), Some("abc"), "{k} through {}", m.name);
        }
        // Written through RESP on another node, read through Memcached (flags reset).
        let other = &c.members[(i + 1) % 3];
        let _: () = other.client().set(k, "resp").unwrap();
        exchange(
            &mut mc,
            &format!("get {k}\r\n"),
            &format!("VALUE {k} 0 4\r\nresp\r\nEND\r\n"),
        );
    }
    // A base64 key (meta `b` flag) is placed by the key it decodes to.
    let k = &keys[2];
    let b64 = base64(k.as_bytes());
    let mut mc = raw(c.members[0].memcache_addr);
    exchange(&mut mc, &format!("ms {b64} 2 b\r\nb6\r\n"), "HD\r\n");
    let v: Option<String> = c.members[1].client().get(k).unwrap();
    assert_eq!(v.as_deref(), Some("b6"));
}

fn base64(input: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `stats` through `s`, as name -> value.
fn stats(s: &mut TcpStream) -> std::collections::HashMap<String, String> {
    send(s, b"stats\r\n");
    shoal_tests::read_until_end(s, T)
        .lines()
        .filter_map(|l| l.strip_prefix("STAT "))
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn stats_give_the_nodes_own_figures_and_the_clusters_items() {
    let c = TestCluster::start(3, |_| {});
    let keys = one_key_per_owner(&c, "s");
    let mut s = raw(c.members[0].memcache_addr);
    for k in &keys {
        exchange(&mut s, &format!("set {k} 0 0 1\r\nv\r\n"), "STORED\r\n");
    }
    // Each key has two copies (replicas = 1): six copies in all, three items.
    assert!(wait_until(T, || {
        let mut copies = 0;
        for m in &c.members {
            let st = stats(&mut raw(m.memcache_addr));
            assert_eq!(st["cluster_nodes"], "3");
            assert_eq!(st["cluster_curr_items"], "3", "{}", m.name);
            copies += st["curr_items"].parse::<u64>().unwrap();
        }
        copies == 6
    }));
    // A command counts where it ran: at the key's owner.
    let sets: u64 = c
        .members
        .iter()
        .map(|m| {
            stats(&mut raw(m.memcache_addr))["cmd_set"]
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(sets, 3);
}

/// A read pipelined after flush_all sees the flush, on the node that owns the key too (the
/// flush is still on its way to the other nodes when the read arrives).
#[test]
fn a_read_after_flush_all_in_a_pipeline_sees_the_flush() {
    let c = TestCluster::start(3, |_| {});
    let keys = one_key_per_owner(&c, "pf");
    for (i, m) in c.members.iter().enumerate() {
        let mut s = raw(m.memcache_addr);
        for _ in 0..20 {
            let mine = &keys[i];
            exchange(&mut s, &format!("set {mine} 0 0 1\r\nv\r\n"), "STORED\r\n");
            let req = format!("flush_all\r\nget {mine}\r\nmg {mine} v\r\n");
            exchange(&mut s, &req, "OK\r\nEND\r\nEN\r\n");
        }
    }
}

/// The binary protocol through every node of a cluster: keys the text protocol cannot carry
/// (spaces, control bytes, 250 bytes that base64 makes longer than a text key), touch and
/// gat answering flags and CAS, a GETK miss carrying its key, stat, and a delayed flush.
#[test]
fn the_binary_protocol_works_through_any_node() {
    let c = TestCluster::start(3, |_| {});
    let set_extras = |flags: u32, exp: u32| [flags.to_be_bytes(), exp.to_be_bytes()].concat();
    let long: Vec<u8> = (0..250u32)
        .map(|i| {
            if i % 50 == 7 {
                b' '
            } else {
                b'a' + (i % 26) as u8
            }
        })
        .collect();
    for (n, m) in c.members.iter().enumerate() {
        let mut s = raw(m.memcache_addr);
        let keys: Vec<Vec<u8>> = vec![
            format!("plain{n}").into_bytes(),
            format!("with space {n}").into_bytes(),
            format!("ctl\x01\x7f{n}").into_bytes(),
            [&long[..249], &[b'0' + n as u8][..]].concat(),
        ];
        for key in &keys {
            send(&mut s, &bin(0x01, &set_extras(9, 0), key, b"value", 0));
            let (_, status, cas, ..) = read_bin(&mut s);
            assert_eq!(status, 0, "set {key:?}");
            // Every node reads it back, through its own owner.
            for other in &c.members {
                let mut o = raw(other.memcache_addr);
                send(&mut o, &bin(0x0c, &[], key, &[], 0));
                let (op, status, got_cas, extras, got_key, value) = read_bin(&mut o);
                assert_eq!(
                    (op, status, got_cas),
                    (0x0c, 0, cas),
                    "getk {key:?} via {}",
                    other.name
                );
                assert_eq!(extras, 9u32.to_be_bytes().to_vec());
                assert_eq!((&got_key, &value), (key, &b"value".to_vec()));
            }
            // touch: flags and CAS, no value; gat: the value too.
            send(&mut s, &bin(0x1c, &60u32.to_be_bytes(), key, &[], 0));
            let (_, status, got_cas, extras, _, value) = read_bin(&mut s);
            assert_eq!(
                (status, got_cas, extras, value),
                (0, cas, 9u32.to_be_bytes().to_vec(), Vec::new())
            );
            send(&mut s, &bin(0x1d, &0u32.to_be_bytes(), key, &[], 0));
            assert_eq!(read_bin(&mut s).5, b"value".to_vec());
            send(&mut s, &bin(0x04, &[], key, &[], 0));
            assert_eq!(read_bin(&mut s).1, 0, "delete {key:?}");
            // A GETK miss carries the key and no text.
            send(&mut s, &bin(0x0c, &[], key, &[], 0));
            let (_, status, _, _, got_key, value) = read_bin(&mut s);
            assert_eq!((status, &got_key, value), (1, key, Vec::new()));
        }
        // stat: the node's figures and the cluster's, one response each, then an empty one.
        send(&mut s, &bin(0x10, &[], &[], &[], 0));
        let mut names = Vec::new();
        loop {
            let (_, status, _, _, key, _) = read_bin(&mut s);
            assert_eq!(status, 0);
            if key.is_empty() {
                break;
            }
            names.push(String::from_utf8(key).unwrap());
        }
        assert!(names.iter().any(|k| k == "cluster_curr_items"), "{names:?}");
        send(&mut s, &bin(0x10, &[], b"nosuchgroup", &[], 0));
        assert_eq!(read_bin(&mut s).1, 1, "an unknown stats group is not found");
    }
    // A delayed flush (binary FLUSH with an expiry) empties every node.
    let mut s = raw(c.members[0].memcache_addr);
    let keys = one_key_per_owner(&c, "bf");
    for k in &keys {
        send(&mut s, &bin(0x01, &set_extras(0, 0), k.as_bytes(), b"v", 0));
        assert_eq!(read_bin(&mut s).1, 0);
    }
    // A delay past 2^31 is a Unix time after 2038 (every node reads the flush again as text,
    // where such a number would wrap to the past): nothing is flushed now.
    for far in [0x8000_0000u32, u32::MAX] {
        send(&mut s, &bin(0x08, &far.to_be_bytes(), &[], &[], 0));
        assert_eq!(read_bin(&mut s).1, 0);
    }
    let gets: String = keys.iter().map(|k| format!("mg {k} v\r\n")).collect();
    exchange(&mut s, &gets, &"VA 1\r\nv\r\n".repeat(keys.len()));
    send(&mut s, &bin(0x08, &1u32.to_be_bytes(), &[], &[], 0));
    assert_eq!(read_bin(&mut s).1, 0);
    assert!(
        wait_until(T, || c.members.iter().all(|m| m_keys(m) == 0)),
        "a delayed binary flush must empty every node"
    );
}

#[test]
fn flush_all_empties_every_node() {
    let c = TestCluster::start(3, |_| {});
    let keys = one_key_per_owner(&c, "f");
    let mut s = raw(c.members[1].memcache_addr);
    for k in &keys {
        exchange(&mut s, &format!("set {k} 0 0 1\r\nv\r\n"), "STORED\r\n");
    }
    let dbsize: i64 = redis::cmd("DBSIZE")
        .query(&mut c.members[0].client())
        .unwrap();
    assert_eq!(dbsize, 3);
    exchange(&mut s, "flush_all\r\n", "OK\r\n");
    for m in &c.members {
        assert_eq!(m_keys(m), 0, "{} still holds keys", m.name);
    }
    // A delayed flush happens on every node at the same time.
    for k in &keys {
        exchange(&mut s, &format!("set {k} 0 0 1\r\nv\r\n"), "STORED\r\n");
    }
    exchange(&mut s, "flush_all 1 noreply\r\nmn\r\n", "MN\r\n");
    assert!(
        wait_until(T, || c.members.iter().all(|m| m_keys(m) == 0)),
        "a delayed flush_all must empty every node"
    );
}

/// Keys member `m` holds: DBSIZE on its cluster-client port counts the slots it serves.
fn m_keys(m: &shoal_tests::ClusterMember) -> i64 {
    let mut con = redis::Client::open(format!("redis://{}/", m.cluster_client_addr))
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("DBSIZE").query(&mut con).unwrap()
}

#[test]
fn a_crashed_owner_fails_over_to_its_replica() {
    let mut c = TestCluster::start(3, |_| {});
    let keys = one_key_per_owner(&c, "c");
    let mut s = raw(c.members[0].memcache_addr);
    for k in &keys {
        exchange(&mut s, &format!("set {k} 5 0 4\r\nkept\r\n"), "STORED\r\n");
    }
    // The replicas have their copies (write-ack = owner replicates in the background).
    assert!(wait_until(T, || {
        keys.iter().all(|k| {
            c.members
                .iter()
                .map(|m| {
                    redis::cmd("CLUSTER")
                        .arg("HASKEY")
                        .arg(k)
                        .query::<i64>(&mut m.client())
                        .unwrap()
                })
                .sum::<i64>()
                == 2
        })
    }));
    c.crash(1);
    for k in &keys {
        exchange(
            &mut s,
            &format!("get {k}\r\n"),
            &format!("VALUE {k} 5 4\r\nkept\r\nEND\r\n"),
        );
    }
    let all = keys.join(" ");
    let want: String = keys
        .iter()
        .map(|k| format!("VALUE {k} 5 4\r\nkept\r\n"))
        .collect::<String>()
        + "END\r\n";
    exchange(&mut s, &format!("get {all}\r\n"), &want);
    // Writes to the dead owner's keys go to the next copy.
    exchange(
        &mut s,
        &format!("set {} 0 0 3\r\nnew\r\n", keys[1]),
        "STORED\r\n",
    );
    exchange(
        &mut s,
        &format!("get {}\r\n", keys[1]),
        &format!("VALUE {} 0 3\r\nnew\r\nEND\r\n", keys[1]),
    );
}

#[test]
fn a_memcached_client_library_works_through_any_node() {
    let c = TestCluster::start(3, |_| {});
    for m in &c.members {
        let url = format!("memcache://{}?protocol=ascii", m.memcache_addr);
        let client = memcache::Client::connect(url).expect("memcache client connects");
        let names: Vec<String> = (0..30).map(|i| format!("lib:{}:{i}", m.name)).collect();
        for (i, k) in names.iter().enumerate() {
            client.set(k, i as u64, 0).unwrap();
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let many: std::collections::HashMap<String, u64> = client.gets(&refs).unwrap();
        assert_eq!(many.len(), names.len());
        for (i, k) in names.iter().enumerate() {
            assert_eq!(many[k], i as u64);
        }
        assert_eq!(client.increment(&names[3], 10).unwrap(), 13);
        assert!(client.delete(&names[0]).unwrap());
        let v: Option<u64> = client.get(&names[0]).unwrap();
        assert_eq!(v, None);
    }
}

#[test]
fn memccapable_ascii_and_binary_tests_pass_on_every_cluster_node() {
    let c = TestCluster::start(3, |_| {});
    for m in &c.members {
        shoal_tests::memccapable(m.memcache_addr, "-a");
        shoal_tests::memccapable(m.memcache_addr, "-b");
    }
}

/// With `requirepass`, every node's Memcached port wants the password before anything,
/// forwarded requests included; once given, keys of every owner answer. pylibmc on the
/// binary protocol authenticates with SASL PLAIN (`tests/clients/mc_auth.py`).
#[test]
fn the_password_guards_every_nodes_memcached_port() {
    let c = TestCluster::start(3, |cfg| cfg.requirepass = "s3cret".into());
    let keys = keys_per_owner(&c, "p", Some("s3cret"));
    for m in &c.members {
        let mut s = raw(m.memcache_addr);
        for k in &keys {
            exchange(
                &mut s,
                &format!("get {k}\r\n"),
                "CLIENT_ERROR unauthenticated\r\n",
            );
        }
        exchange(
            &mut s,
            "set a 0 0 13\r\ndefault wrong\r\n",
            "CLIENT_ERROR authentication failure\r\n",
        );
        exchange(&mut s, "set a 0 0 14\r\ndefault s3cret\r\n", "STORED\r\n");
        for k in &keys {
            // Authenticated once, the connection's requests reach every owner.
            exchange(&mut s, &format!("set {k} 0 0 2\r\nok\r\n"), "STORED\r\n");
            exchange(
                &mut s,
                &format!("get {k}\r\n"),
                &format!("VALUE {k} 0 2\r\nok\r\nEND\r\n"),
            );
        }
        shoal_tests::python_client("mc_auth.py", &[&m.memcache_addr.to_string(), "s3cret"]);
    }
}

/// flush_all disabled (`memcache-disable-flush-all`, memcached's `-F`) is refused through
/// every node of a cluster, and no node's keys go.
#[test]
fn a_disabled_flush_all_is_refused_through_any_node() {
    let c = TestCluster::start(3, |c| c.memcache_disable_flush_all = true);
    let mut first = raw(c.members[0].memcache_addr);
    exchange(&mut first, "set fk 0 0 1\r\nx\r\n", "STORED\r\n");
    for m in &c.members {
        let mut s = raw(m.memcache_addr);
        exchange(
            &mut s,
            "flush_all\r\n",
            "CLIENT_ERROR flush_all not allowed\r\n",
        );
        exchange(&mut s, "get fk\r\n", "VALUE fk 0 1\r\nx\r\nEND\r\n");
    }
}

/// A binary client's multi-get through any node (pylibmc's: GETKQ ... NOOP, here every plain
/// get form over keys of every owner): each request answered in order, with its own hit or
/// miss, flags, CAS and key; a key no text request can name, a repeated key (a hit both
/// times) and a SET in the middle (answered in its place, and read back by the GET after it)
/// keep their places.
#[test]
fn a_binary_multi_get_through_any_node_answers_each_request_in_order() {
    let c = TestCluster::start(3, |_| {});
    let mut keys: Vec<Vec<u8>> = (0..40).map(|i| format!("bmg:{i}").into_bytes()).collect();
    keys.insert(17, b"bmg with space".to_vec());
    // Stored (twice: the second value counts), so both of its reads hit.
    keys.insert(31, b"bmg:4".to_vec());
    // Every third key is not stored; the others with their own flags and CAS.
    let mut stored = std::collections::HashMap::new();
    let mut s = raw(c.members[0].memcache_addr);
    for (i, key) in keys.iter().enumerate().filter(|(i, _)| i % 3 != 0) {
        let flags = 1000 + i as u32;
        let extras = [flags.to_be_bytes(), 0u32.to_be_bytes()].concat();
        let value = format!("value of {i}").into_bytes();
        send(&mut s, &bin(0x01, &extras, key, &value, 0));
        let (_, status, cas, ..) = read_bin(&mut s);
        assert_eq!(status, 0, "set {key:?}");
        stored.insert(key.clone(), (flags, cas, value));
    }
    let get_ops = [0x00u8, 0x09, 0x0c, 0x0d];
    for m in &c.members {
        let mut s = raw(m.memcache_addr);
        let mut pipeline = Vec::new();
        let mut want = Vec::new();
        let mut set_at = 0;
        type Stored = std::collections::HashMap<Vec<u8>, (u32, u64, Vec<u8>)>;
        let expect_get = |i: usize, key: &[u8], stored: &Stored| {
            let op = get_ops[i % 4];
            let keyed = op == 0x0c || op == 0x0d;
            let shown = if keyed { key.to_vec() } else { Vec::new() };
            match stored.get(key) {
                Some((flags, cas, value)) => Some((
                    op,
                    0,
                    *cas,
                    flags.to_be_bytes().to_vec(),
                    shown,
                    value.clone(),
                )),
                None if op == 0x09 || op == 0x0d => None,
                None if keyed => Some((op, 1, 0, Vec::new(), shown, Vec::new())),
                None => Some((op, 1, 0, Vec::new(), shown, b"Not found".to_vec())),
            }
        };
        for (i, key) in keys.iter().enumerate() {
            pipeline.extend(bin(get_ops[i % 4], &[], key, &[], 0));
            want.extend(expect_get(i, key, &stored));
            if i == 25 {
                set_at = want.len();
                // A SET of a key read earlier in the pipeline, and the GET right after it.
                let extras = [7u32.to_be_bytes(), 0u32.to_be_bytes()].concat();
                pipeline.extend(bin(0x01, &extras, &keys[2], b"new", 0));
                pipeline.extend(bin(0x00, &[], &keys[2], &[], 0));
            }
        }
        pipeline.extend(bin(0x0a, &[], &[], &[], 0));
        send(&mut s, &pipeline);
        let mut got = Vec::new();
        loop {
            let r = read_bin(&mut s);
            if r.0 == 0x0a {
                break;
            }
            got.push(r);
        }
        // The SET's response (with its new CAS), then the GET's, which reads what it wrote.
        // Right after the responses to the first 26 requests.
        assert_eq!(got.get(set_at).map(|r| r.0), Some(0x01), "the SET's place");
        let (_, status, new_cas, ..) = got[set_at].clone();
        assert_eq!(status, 0, "the SET via {}", m.name);
        let after = got[set_at + 1].clone();
        assert_eq!(
            (after.0, after.1, after.2, &after.3[..], &after.5[..]),
            (0x00, 0, new_cas, &7u32.to_be_bytes()[..], &b"new"[..]),
            "the GET after the SET via {}",
            m.name
        );
        got.drain(set_at..set_at + 2);
        assert_eq!(got.len(), want.len(), "responses via {}", m.name);
        for (n, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "response {n} via {}", m.name);
        }
        // Put the key back as the next node expects it.
        let (flags, _, value) = stored[&keys[2]].clone();
        let extras = [flags.to_be_bytes(), 0u32.to_be_bytes()].concat();
        send(&mut s, &bin(0x01, &extras, &keys[2], &value, 0));
        let (_, status, cas, ..) = read_bin(&mut s);
        assert_eq!(status, 0);
        stored.insert(keys[2].clone(), (flags, cas, value));
    }
}

/// A binary GET is memcached's plain get on any node: it reads a stale item (after `md ...
/// I`) without taking its recache win, which the next `mg` then wins, as on a single node
/// and in memcached (a binary get answered as an `mg` took the win itself).
#[test]
fn a_binary_get_leaves_a_stale_items_win_to_the_next_mg() {
    let c = TestCluster::start(3, |_| {});
    for (n, key) in one_key_per_owner(&c, "stale").iter().enumerate() {
        // Through a node that does not own it, and through its owner.
        for via in [(n + 1) % 3, n] {
            let mut text = raw(c.members[via].memcache_addr);
            exchange(
                &mut text,
                &format!("set {key} 0 0 1\r\nv\r\n"),
                "STORED\r\n",
            );
            exchange(&mut text, &format!("md {key} I\r\n"), "HD\r\n");
            let mut binary = raw(c.members[via].memcache_addr);
            send(&mut binary, &bin(0x00, &[], key.as_bytes(), &[], 0));
            let (_, status, _, _, _, value) = read_bin(&mut binary);
            assert_eq!((status, &value[..]), (0, &b"v"[..]), "{key} via {via}");
            exchange(&mut text, &format!("mg {key} v\r\n"), "VA 1 X W\r\nv\r\n");
        }
    }
}
