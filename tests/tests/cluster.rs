//! The cluster data path, end to end: three real nodes on 127.0.0.1 talking the inter-node
//! protocol over real TCP, driven by the `redis` crate. Placement decides which keys each
//! node owns, so every test uses enough keys that all three nodes own some.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use redis::{Commands, Value};
use shoal_tests::{info_field, read_to_close, send, wait_until, TestCluster, TEST_SECRET};

const KEYS: usize = 300;

fn key(i: usize) -> String {
    format!("key:{i}")
}

/// The first of the names `name(0)`, `name(1)`, ... that `ok` takes (a key on the node a
/// test needs).
fn first_name(name: impl Fn(usize) -> String, mut ok: impl FnMut(&str) -> bool) -> String {
    (0..).map(name).find(|n| ok(n)).unwrap()
}

/// A subscriber on each connection, subscribed by `how`, whose reads give up after 10 s.
fn subscribers(
    conns: &mut [redis::Connection],
    how: impl Fn(&mut redis::PubSub<'_>) -> redis::RedisResult<()>,
) -> Vec<redis::PubSub<'_>> {
    let mut subs: Vec<redis::PubSub<'_>> = conns.iter_mut().map(|c| c.as_pubsub()).collect();
    for sub in &mut subs {
        sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        how(sub).unwrap();
    }
    subs
}

/// The id of the node that owns `k`'s slot, from CLUSTER NODES and CLUSTER KEYSLOT.
fn owner_of(c: &mut redis::Connection, k: &str) -> String {
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(c).unwrap();
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(k)
        .query(c)
        .unwrap();
    for line in nodes.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        for r in &f[8..] {
            let (lo, hi) = r.split_once('-').unwrap_or((r, r));
            if (lo.parse::<i64>().unwrap()..=hi.parse::<i64>().unwrap()).contains(&slot) {
                return f[0].to_string();
            }
        }
    }
    panic!("slot {slot} has no owner in CLUSTER NODES");
}

/// How many nodes hold a copy of `k`, as each reports for itself.
fn holders(clients: &mut [redis::Connection], k: &str) -> i64 {
    clients
        .iter_mut()
        .map(|c| {
            redis::cmd("CLUSTER")
                .arg("HASKEY")
                .arg(k)
                .query::<i64>(c)
                .unwrap()
        })
        .sum()
}

fn my_id(c: &mut redis::Connection) -> String {
    redis::cmd("CLUSTER").arg("MYID").query(c).unwrap()
}

/// 1 if the node `c` is connected to holds a copy of `k`, else 0.
fn haskey(c: &mut redis::Connection, k: &str) -> i64 {
    redis::cmd("CLUSTER").arg("HASKEY").arg(k).query(c).unwrap()
}

/// Two keys named `prefix...` written through node 0: one whose slot node `n` holds a copy
/// of, and one whose slot it holds none of. Needs `write-ack = all`, so that the copies are
/// in place when a write returns.
fn keys_on_and_off(clients: &mut [redis::Connection], n: usize, prefix: &str) -> (String, String) {
    let (mut on, mut off) = (None, None);
    for i in 0..1000 {
        let k = format!("{prefix}{i}");
        let _: () = clients[0].set(&k, "x").unwrap();
        let side = if haskey(&mut clients[n], &k) == 1 {
            &mut on
        } else {
            &mut off
        };
        side.get_or_insert(k);
        if on.is_some() && off.is_some() {
            break;
        }
    }
    (
        on.expect("a key on the node"),
        off.expect("a key off the node"),
    )
}

/// An inter-node client of the cluster's secret, as a node named `n-test`.
fn peer_client(rt: &tokio::runtime::Runtime, addr: std::net::SocketAddr) -> shoal_wire::PeerClient {
    let auth = shoal_wire::AuthConfig::new("shoal", TEST_SECRET, "n-test");
    rt.block_on(async { shoal_wire::PeerClient::new(addr, auth, Default::default()) })
}

/// Every key written through any node reads back through every node.
#[test]
fn any_node_answers_any_key() {
    let cluster = TestCluster::start(3, |_| {});
    let mut clients: Vec<_> = cluster.members.iter().map(|m| m.client()).collect();
    // The nodes' own requests to each other as they start (a copy of the users and the
    // function libraries, answered LOADING while the asked node copies its own) are no
    // client's errors: INFO shows none before any client asked anything.
    for c in &mut clients {
        let errors: String = redis::cmd("INFO").arg("errorstats").query(c).unwrap();
        assert!(!errors.contains("errorstat_"), "{errors}");
        assert_eq!(info_field(c, "total_error_replies"), "0");
    }
    for i in 0..KEYS {
        let c = &mut clients[i % 3];
        let _: () = c.set(key(i), format!("v{i}")).unwrap();
    }
    for c in &mut clients {
        for i in 0..KEYS {
            let v: Option<String> = c.get(key(i)).unwrap();
            assert_eq!(v.as_deref(), Some(&*format!("v{i}")), "{}", key(i));
        }
    }
    // Two thirds of the requests to each node belong to the other two.
    for c in &mut clients {
        let forwarded: u64 = info_field(c, "shoal_forwarded").parse().unwrap();
        assert!(forwarded > 100, "forwarded {forwarded}");
        assert_eq!(info_field(c, "shoal_members"), "3");
    }
    // Read-modify-write runs at the owner: concurrent INCRs through all nodes add up.
    std::thread::scope(|s| {
        for m in &cluster.members {
            s.spawn(move || {
                let mut c = m.client();
                for _ in 0..100 {
                    let _: i64 = c.incr("counter", 1).unwrap();
                }
            });
        }
    });
    let total: i64 = clients[1].get("counter").unwrap();
    assert_eq!(total, 300);
    // Errors come back verbatim from the owner.
    let _: () = clients[0].set("text", "abc").unwrap();
    for c in &mut clients {
        let e = c.incr::<_, _, i64>("text", 1).unwrap_err();
        assert_eq!(e.code(), Some("ERR"), "{e}");
        assert!(e.to_string().contains("not an integer"), "{e}");
    }
}

/// With `replicas = 1` each key lives on exactly two nodes, as each node reports itself.
#[test]
fn each_key_has_exactly_two_copies() {
    let cluster = TestCluster::start(3, |_| {});
    let mut clients: Vec<_> = cluster.members.iter().map(|m| m.client()).collect();
    for i in 0..KEYS {
        let _: () = clients[i % 3].set(key(i), i).unwrap();
    }
    let local = |clients: &mut Vec<redis::Connection>| -> i64 {
        clients
            .iter_mut()
            .map(|c| {
                redis::cmd("CLUSTER")
                    .arg("LOCALKEYS")
                    .query::<i64>(c)
                    .unwrap()
            })
            .sum()
    };
    // Replication to the second copy is asynchronous with write-ack = owner.
    assert!(
        wait_until(Duration::from_secs(10), || local(&mut clients)
            == 2 * KEYS as i64),
        "copies: {}",
        local(&mut clients)
    );
    for i in 0..KEYS {
        assert_eq!(holders(&mut clients, &key(i)), 2, "{}", key(i));
    }
    // DBSIZE counts each key once, whichever node is asked.
    for c in &mut clients {
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(c).unwrap(), KEYS as i64);
    }
    // Deletes replicate too.
    for i in 0..KEYS / 2 {
        let n: i64 = clients[(i + 1) % 3].del(key(i)).unwrap();
        assert_eq!(n, 1);
    }
    assert!(wait_until(Duration::from_secs(10), || local(&mut clients)
        == KEYS as i64));
}

/// `write-ack = all`: once the client has the reply, both copies hold the write.
#[test]
fn write_ack_all_waits_for_the_replica() {
    let cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let mut clients: Vec<_> = cluster.members.iter().map(|m| m.client()).collect();
    for i in 0..60 {
        let _: () = clients[i % 3].set(key(i), "x").unwrap();
        assert_eq!(holders(&mut clients, &key(i)), 2, "{}", key(i));
    }
}

/// MGET, MSET, DEL, UNLINK, EXISTS and TOUCH over keys of all three owners, in order.
#[test]
fn multi_key_commands_split_across_owners() {
    let cluster = TestCluster::start(3, |_| {});
    let mut a = cluster.members[0].client();
    let mut b = cluster.members[1].client();
    let mut pairs = Vec::new();
    for i in 0..40 {
        pairs.push((key(i), format!("v{i}")));
    }
    let _: () = a.mset(&pairs).unwrap();
    // Missing keys in between stay in their places.
    let mut asked = Vec::new();
    let mut expected = Vec::new();
    for i in 0..40 {
        asked.push(key(i));
        expected.push(Some(format!("v{i}")));
        asked.push(format!("missing:{i}"));
        expected.push(None);
    }
    let got: Vec<Option<String>> = b.mget(&asked).unwrap();
    assert_eq!(got, expected);
    // RESP3 encodes the missing ones as nulls of its own.
    let mut b3 = cluster.members[1].client_resp3();
    let got: Vec<Option<String>> = b3.mget(&asked).unwrap();
    assert_eq!(got, expected);
    let raw: Value = redis::cmd("MGET")
        .arg("missing:1")
        .arg(key(1))
        .query(&mut b3)
        .unwrap();
    assert_eq!(
        raw,
        Value::Array(vec![Value::Nil, Value::BulkString(b"v1".to_vec())])
    );

    let exists: i64 = redis::cmd("EXISTS")
        .arg(&asked)
        .arg(key(0))
        .query(&mut b)
        .unwrap();
    assert_eq!(exists, 41, "duplicates count twice, as in Redis");
    let touched: i64 = redis::cmd("TOUCH").arg(&asked).query(&mut b).unwrap();
    assert_eq!(touched, 40);
    let deleted: i64 = b.del(&asked[..40]).unwrap();
    assert_eq!(deleted, 20);
    let unlinked: i64 = redis::cmd("UNLINK").arg(&asked).query(&mut a).unwrap();
    assert_eq!(unlinked, 20);
    let exists: i64 = redis::cmd("EXISTS").arg(&asked).query(&mut a).unwrap();
    assert_eq!(exists, 0);
    // A wrong arity is answered as Redis does, without reaching any other node.
    let e = redis::cmd("MSET")
        .arg("a")
        .arg("1")
        .arg("b")
        .query::<()>(&mut a)
        .unwrap_err();
    assert!(e.to_string().contains("wrong number of arguments"), "{e}");
}

/// Keys of different owners cannot be renamed or MSETNX'd atomically: a clear CROSSSLOT;
/// with a hash tag they share a slot and work anywhere.
#[test]
fn cross_owner_atomic_commands_are_refused_clearly() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    let first = key(0);
    let first_owner = owner_of(&mut c, &first);
    let other = (1..100)
        .map(key)
        .find(|k| owner_of(&mut c, k) != first_owner)
        .expect("some key has another owner");
    let _: () = c.set(&first, "v").unwrap();
    let e = c.rename::<_, _, ()>(&first, &other).unwrap_err();
    assert_eq!(e.code(), Some("CROSSSLOT"), "{e}");
    let e = redis::cmd("MSETNX")
        .arg(&first)
        .arg(1)
        .arg(&other)
        .arg(2)
        .query::<i64>(&mut c)
        .unwrap_err();
    assert_eq!(e.code(), Some("CROSSSLOT"), "{e}");
    // Counted as Redis counts a refusal: the command's rejected_calls, the error's
    // errorstat and total_error_replies (rq's workers swallow the LMOVE's error; only
    // these show it).
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
    for _ in 0..3 {
        let e = redis::cmd("LMOVE")
            .arg(&first)
            .arg(&other)
            .arg("LEFT")
            .arg("RIGHT")
            .query::<Option<String>>(&mut c)
            .unwrap_err();
        assert_eq!(e.code(), Some("CROSSSLOT"), "{e}");
    }
    let info: String = redis::cmd("INFO").arg("everything").query(&mut c).unwrap();
    for line in [
        "errorstat_CROSSSLOT:count=3",
        "total_error_replies:3",
        "cmdstat_lmove:calls=0,",
    ] {
        assert!(info.contains(line), "{line} in {info}");
    }
    assert!(info.contains(",rejected_calls=3,failed_calls=0"), "{info}");
    // Same hash tag, same slot: fine from every node.
    for (i, m) in cluster.members.iter().enumerate() {
        let mut c = m.client();
        let _: () = c.set(format!("{{tag}}a{i}"), "v").unwrap();
        let _: () = c
            .rename(format!("{{tag}}a{i}"), format!("{{tag}}b{i}"))
            .unwrap();
        let v: String = c.get(format!("{{tag}}b{i}")).unwrap();
        assert_eq!(v, "v");
        let n: i64 = redis::cmd("MSETNX")
            .arg(format!("{{tag}}x{i}"))
            .arg(1)
            .arg(format!("{{tag}}y{i}"))
            .arg(2)
            .query(&mut c)
            .unwrap();
        assert_eq!(n, 1);
    }
}

/// DBSIZE, KEYS, SCAN, RANDOMKEY, INFO keyspace and FLUSHALL see the whole cluster.
#[test]
fn cluster_wide_commands_fan_out() {
    let cluster = TestCluster::start(3, |_| {});
    let mut clients: Vec<_> = cluster.members.iter().map(|m| m.client()).collect();
    for i in 0..KEYS {
        let _: () = clients[0].set(key(i), i).unwrap();
    }
    let all: BTreeSet<String> = (0..KEYS).map(key).collect();
    for c in &mut clients {
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(c).unwrap(), KEYS as i64);
        let keys: Vec<String> = c.keys("*").unwrap();
        assert_eq!(keys.len(), KEYS, "each key once");
        assert_eq!(keys.into_iter().collect::<BTreeSet<_>>(), all);
        let some: Vec<String> = c.keys("key:1?").unwrap();
        assert_eq!(some.len(), 10);
        let scanned: BTreeSet<String> = c.scan::<String>().unwrap().collect();
        assert_eq!(scanned, all);
        let matched: HashSet<String> = c.scan_match::<_, String>("key:2*").unwrap().collect();
        assert_eq!(matched.len(), 1 + 10 + 100);
        let r: String = redis::cmd("RANDOMKEY").query(c).unwrap();
        assert!(all.contains(&r), "{r}");
        let info: String = redis::cmd("INFO").arg("keyspace").query(c).unwrap();
        assert!(
            info.contains(&format!("db0:keys={KEYS},")),
            "INFO keyspace: {info}"
        );
    }
    let _: () = redis::cmd("FLUSHALL").query(&mut clients[2]).unwrap();
    for c in &mut clients {
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(c).unwrap(), 0);
        let r: Option<String> = redis::cmd("RANDOMKEY").query(c).unwrap();
        assert_eq!(r, None);
    }
    // Fewer keys than COUNT, on every node: one SCAN call returns them all and cursor 0,
    // as one Redis does (redis-py's own test); past COUNT the walk goes on in later calls.
    let few: Vec<String> = (0..3)
        .flat_map(|n| {
            let on = |t: &str| cluster.owner_index(t) == n;
            [
                first_name(|i| format!("f{i}"), on),
                first_name(|i| format!("g{i}"), on),
            ]
        })
        .collect();
    for k in &few {
        let _: () = clients[0].set(k, 1).unwrap();
    }
    for c in &mut clients {
        let (cursor, keys): (u64, Vec<String>) = redis::cmd("SCAN").arg(0).query(c).unwrap();
        assert_eq!(cursor, 0);
        assert_eq!(
            keys.into_iter().collect::<BTreeSet<_>>(),
            few.iter().cloned().collect::<BTreeSet<_>>()
        );
        let (cursor, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(0)
            .arg("COUNT")
            .arg(1)
            .query(c)
            .unwrap();
        assert!(
            cursor != 0 && !keys.is_empty() && keys.len() < few.len(),
            "{cursor} {keys:?}"
        );
    }
}

/// A pipeline mixing keys of every owner is answered in order.
#[test]
fn pipelines_keep_their_order_across_owners() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[1].client();
    let mut pipe = redis::pipe();
    for i in 0..500 {
        pipe.set(key(i), i).ignore();
        pipe.get(key(i));
        pipe.incr(key(i), 1);
    }
    let replies: Vec<i64> = pipe.query(&mut c).unwrap();
    let expected: Vec<i64> = (0..500).flat_map(|i| [i, i + 1]).collect();
    assert_eq!(replies, expected);
    // MULTI/EXEC across owners runs every command and returns their replies in order.
    let (a, b, n): (String, String, i64) = redis::pipe()
        .atomic()
        .set(key(1), "one")
        .ignore()
        .set(key(2), "two")
        .ignore()
        .get(key(1))
        .get(key(2))
        .del(&[key(1), key(2)])
        .query(&mut c)
        .unwrap();
    assert_eq!((a.as_str(), b.as_str(), n), ("one", "two", 2));
}

/// Pipelines reads of keys all over the cluster through `c` until its node sends batches to
/// both other members (each first answers a probe, sent when a command first could join a
/// batch for it).
fn until_batching(c: &mut redis::Connection) {
    let up = wait_until(Duration::from_secs(10), || {
        let mut pipe = redis::pipe();
        for i in 0..32 {
            pipe.get(format!("warm:{i}"));
        }
        let _: Vec<Option<String>> = pipe.query(c).unwrap();
        info_field(c, "shoal_peers_taking_batches") == "2"
    });
    assert!(up, "both members take batches");
}

/// INFO clients' `cluster_connections` counts the inter-node connections open now, both
/// ways: a node that forwarded to both others holds its own to each, and each of them one
/// from it at least; a member that crashes takes its connections with it.
#[test]
fn info_counts_the_cluster_connections_open() {
    let mut cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[1].client();
    until_batching(&mut c);
    let open = |c: &mut redis::Connection| -> u64 {
        info_field(c, "cluster_connections").parse().unwrap()
    };
    let before = open(&mut c);
    assert!(before >= 2, "links to both others: {before}");
    for n in [0, 2] {
        let theirs = open(&mut cluster.members[n].client());
        assert!(theirs >= 1, "n{n} holds n1's link: {theirs}");
    }
    cluster.crash(2);
    let fewer = wait_until(Duration::from_secs(10), || open(&mut c) < before);
    assert!(
        fewer,
        "the crashed member's connections are no longer counted"
    );
}

/// A pipeline's commands for one node travel together (BATCH requests) and still take
/// effect in the client's order, also around commands that go on their own (a value too
/// long to join a batch, a write split across owners), which close the open batches.
#[test]
fn pipelined_commands_for_one_node_travel_in_batches_in_order() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[1].client();
    let me = my_id(&mut c);
    // Keys other nodes own, so that every command on them is forwarded.
    let keys: Vec<String> = (0..)
        .map(|i| format!("batch:{i}"))
        .filter(|k| owner_of(&mut c, k) != me)
        .take(100)
        .collect();
    let big = "b".repeat(20_000);
    until_batching(&mut c);
    let mut pipe = redis::pipe();
    let mut expected = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let other = &keys[(i + 37) % keys.len()];
        pipe.set(k, "a").ignore();
        pipe.get(k);
        expected.push("a".to_string());
        // Alone (past a batch part's size): the GET after it must not overtake it.
        pipe.set(k, &big).ignore();
        pipe.strlen(k);
        expected.push(big.len().to_string());
        // Split by owner when the two keys' owners differ.
        pipe.mset(&[(k.as_str(), "c"), (other.as_str(), "d")])
            .ignore();
        pipe.get(k);
        expected.push("c".to_string());
        pipe.incr(format!("{k}:n"), 1).ignore();
        pipe.incr(format!("{k}:n"), 1);
        expected.push("2".to_string());
    }
    let replies: Vec<String> = pipe.query(&mut c).unwrap();
    assert!(replies == expected, "replies in the client's order");
    let stat = |c: &mut redis::Connection, f: &str| -> u64 { info_field(c, f).parse().unwrap() };
    let (batches, batched) = (
        stat(&mut c, "shoal_forward_batches"),
        stat(&mut c, "shoal_forward_batched"),
    );
    // (Two are the members' probes, of one PING each.)
    assert!(
        batches > 2 && batched >= 2 * batches - 2,
        "{batches} batches of {batched}"
    );
    let served: u64 = [0, 2]
        .iter()
        .map(|&n| stat(&mut cluster.members[n].client(), "shoal_batches_served"))
        .sum();
    assert_eq!(served, batches, "each batch is served once");
}

/// A batch whose replies pass 16 MB is answered in pieces (each fits a frame; the sender
/// asks for the next with CONTINUE), every reply in order, also with the next batch
/// already on its way behind it.
#[test]
fn a_batch_of_large_replies_is_answered_in_pieces() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[1].client();
    let me = my_id(&mut c);
    let first = first_name(|i| format!("large:{i}"), |k| owner_of(&mut c, k) != me);
    let owner = owner_of(&mut c, &first);
    // Keys of one other node, so that every command below joins one batch.
    let keys: Vec<String> = (0..)
        .map(|i| format!("large:{i}"))
        .filter(|k| owner_of(&mut c, k) == owner)
        .take(24)
        .collect();
    let value = |i: usize| format!("{i:08}").repeat(128 * 1024);
    for (i, k) in keys.iter().enumerate() {
        let _: () = c.set(k, value(i)).unwrap();
    }
    until_batching(&mut c);
    let last = &keys[keys.len() - 1];
    let mut pipe = redis::pipe();
    let mut expected = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        pipe.get(k);
        pipe.set(k, i).ignore();
        pipe.get(k);
        expected.extend([value(i), i.to_string()]);
    }
    // Past a batch's 256 commands: the next batch is on its way before the first answer's
    // last piece has come.
    for _ in 0..300 {
        pipe.exists(&keys[0]);
        expected.push("1".into());
    }
    pipe.get(last);
    expected.push((keys.len() - 1).to_string());
    pipe.set(last, "end").ignore();
    pipe.get(last);
    expected.push("end".into());
    let replies: Vec<String> = pipe.query(&mut c).unwrap();
    assert!(replies == expected, "every reply, in order");
    let pieces: u64 = info_field(&mut c, "shoal_forward_batch_continued")
        .parse()
        .unwrap();
    assert!(pieces > 0, "the answer came in pieces");
}

/// A client blocked on the key's owner is served as soon as a batched write gives it
/// something, before the next command of the batch runs, as after each command of a
/// pipeline on one node (Redis serves blocked clients after every command).
#[test]
fn a_batched_write_serves_blocked_clients_before_the_next_command() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[1].client();
    let me = my_id(&mut c);
    let q = first_name(|i| format!("queue:{i}"), |k| owner_of(&mut c, k) != me);
    let owner_id = owner_of(&mut c, &q);
    let owner = (0..3)
        .find(|&n| my_id(&mut cluster.members[n].client()) == owner_id)
        .unwrap();
    let mut waiter = cluster.members[owner].client();
    let blpop = std::thread::spawn({
        let q = q.clone();
        move || -> Option<(String, String)> {
            redis::cmd("BLPOP")
                .arg(&q)
                .arg(10)
                .query(&mut waiter)
                .unwrap()
        }
    });
    let mut watch = cluster.members[owner].client();
    assert!(
        wait_until(Duration::from_secs(10), || info_field(
            &mut watch,
            "blocked_clients"
        ) == "1"),
        "the waiter blocks"
    );
    let (pushed, popped): (i64, Option<String>) = redis::pipe()
        .rpush(&q, "x")
        .lpop(&q, None)
        .query(&mut c)
        .unwrap();
    assert_eq!(
        (pushed, popped),
        (1, None),
        "the blocked client took it first"
    );
    assert_eq!(blpop.join().unwrap(), Some((q.clone(), "x".to_string())));
}

/// A pipeline far deeper than a connection's window of forwarded replies, sent through a
/// non-owner by a client that closes its sending side right after (`nc -N`, `redis-cli
/// --pipe`): every reply comes back, in order, before the node closes, also those of
/// commands read while forwarded replies were on their way and of the ones after the end
/// of the input was seen.
#[test]
fn a_deep_pipeline_closed_after_sending_gets_every_reply() {
    let cluster = TestCluster::start(3, |_| {});
    let mut s = std::net::TcpStream::connect(cluster.members[1].addr).unwrap();
    let n = 3000;
    let mut request = Vec::new();
    let mut expected = Vec::new();
    for i in 0..n {
        let (k, v) = (key(i), format!("value-{i}"));
        request.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${}\r\n{v}\r\n*2\r\n$3\r\nGET\r\n${}\r\n{k}\r\n",
                k.len(),
                v.len(),
                k.len()
            )
            .as_bytes(),
        );
        expected.extend_from_slice(format!("+OK\r\n${}\r\n{v}\r\n", v.len()).as_bytes());
    }
    send(&mut s, &request);
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let (out, closed) = read_to_close(&mut s, Duration::from_secs(60));
    assert!(closed, "the node closes after the last reply");
    assert_eq!(out.len(), expected.len());
    assert!(out == expected, "replies in order");
}

/// A read pipelined after FLUSHALL sees the flush on every node, also for keys the node
/// itself owns (the flush is still on its way to the others when the read arrives).
#[test]
fn a_read_after_flushall_in_a_pipeline_sees_the_flush() {
    let cluster = TestCluster::start(3, |_| {});
    for m in &cluster.members {
        let mut c = m.client();
        for _ in 0..10 {
            let keys: Vec<String> = (0..30).map(key).collect();
            for k in &keys {
                let _: () = c.set(k, "v").unwrap();
            }
            let mut pipe = redis::pipe();
            pipe.cmd("FLUSHALL").ignore();
            for k in &keys {
                pipe.get(k);
            }
            let got: Vec<Option<String>> = pipe.query(&mut c).unwrap();
            assert!(got.iter().all(Option::is_none), "{} read {got:?}", m.name);
        }
    }
}

/// `min-replicas-to-write` counts the copies the cluster keeps of a key besides its owner's:
/// with one replica a key, 1 lets every write through and 2 refuses them all (NOREPLICAS,
/// as Redis; reads go on); a cluster without replicas refuses writes at 1.
#[test]
fn min_replicas_to_write_counts_the_keys_replicas() {
    let cluster = TestCluster::start(3, |c| c.min_replicas_to_write = 1);
    let mut c = cluster.members[0].client();
    for i in 0..KEYS {
        let _: () = c.set(key(i), format!("v{i}")).unwrap();
    }
    for m in &cluster.members {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("min-replicas-to-write")
            .arg(2)
            .query(&mut m.client())
            .unwrap();
    }
    for i in 0..KEYS {
        let e = c.set::<_, _, ()>(key(i), "w").unwrap_err();
        assert_eq!(e.code(), Some("NOREPLICAS"), "{}: {e}", key(i));
        let v: Option<String> = c.get(key(i)).unwrap();
        assert_eq!(v.as_deref(), Some(&*format!("v{i}")));
    }
    let bare = TestCluster::start(2, |c| {
        c.replicas = 0;
        c.min_replicas_to_write = 1;
    });
    let mut c = bare.members[1].client();
    let e = c.set::<_, _, ()>("k", "v").unwrap_err();
    assert_eq!(e.code(), Some("NOREPLICAS"), "{e}");
}

/// One node dies: every key stays readable and writable through the survivors, and the
/// cluster-wide commands still count every key once.
#[test]
fn a_crashed_node_loses_nothing_that_had_a_copy() {
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    {
        let mut c = cluster.members[0].client();
        for i in 0..KEYS {
            let _: () = c.set(key(i), format!("v{i}")).unwrap();
        }
    }
    cluster.crash(1);
    for m in cluster.live() {
        let mut c = m.client();
        for i in 0..KEYS {
            let v: Option<String> = c.get(key(i)).unwrap();
            assert_eq!(
                v.as_deref(),
                Some(&*format!("v{i}")),
                "{} via {}",
                key(i),
                m.name
            );
        }
    }
    for m in cluster.live() {
        let mut c = m.client();
        for i in 0..KEYS {
            let _: () = c.set(key(i), format!("w{i}")).unwrap();
        }
        assert_eq!(
            redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(),
            KEYS as i64
        );
        let scanned: HashSet<String> = c.scan::<String>().unwrap().collect();
        assert_eq!(scanned.len(), KEYS);
        let keys: Vec<String> = c.keys("*").unwrap();
        assert_eq!(keys.len(), KEYS);
        let failovers: u64 = info_field(&mut c, "shoal_failovers").parse().unwrap();
        assert!(failovers > 0);
    }
    let mut c = cluster.members[2].client();
    let got: Vec<String> = c.mget((0..KEYS).map(key).collect::<Vec<_>>()).unwrap();
    assert_eq!(got, (0..KEYS).map(|i| format!("w{i}")).collect::<Vec<_>>());
    // The survivors show the dead node as unreachable, its slots served by copies.
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut c).unwrap();
    let dead = nodes
        .lines()
        .filter(|l| l.contains("master,fail? ") && l.contains(" disconnected"))
        .count();
    assert_eq!(dead, 1, "{nodes}");
    let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c).unwrap();
    assert!(info.contains("cluster_state:ok\r\n"), "{info}");
    assert!(!info.contains("cluster_slots_pfail:0\r\n"), "{info}");
    // FLUSHALL cannot reach the dead node: it says so instead of a plain OK.
    let e = redis::cmd("FLUSHALL").query::<()>(&mut c).unwrap_err();
    assert_eq!(e.code(), Some("CLUSTERDOWN"), "{e}");
    assert!(e.to_string().contains("n1"), "{e}");
    // INFO still answers.
    assert_eq!(info_field(&mut c, "shoal_members"), "3");
}

/// Hashes, sets, lists and sorted sets are placed, forwarded and replicated like strings: written
/// through any node, held by two, read back whole through any node after their owner
/// crashed.
#[test]
fn collections_have_two_copies_and_survive_their_owners_crash() {
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let mut clients: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    for i in 0..KEYS {
        let k = format!("hash:{i}");
        let via = &mut clients[i % 3];
        let added: i64 = redis::cmd("HSET")
            .arg(&k)
            .arg("a")
            .arg(i)
            .arg("b")
            .arg("x")
            .query(via)
            .unwrap();
        assert_eq!(added, 2);
        let _: i64 = redis::cmd("HINCRBY")
            .arg(&k)
            .arg("a")
            .arg(1)
            .query(via)
            .unwrap();
        let _: i64 = redis::cmd("HDEL").arg(&k).arg("b").query(via).unwrap();
        assert_eq!(holders(&mut clients, &k), 2, "{k}");
        let s = format!("set:{i}");
        let via = &mut clients[(i + 1) % 3];
        let added: i64 = redis::cmd("SADD")
            .arg(&s)
            .arg(i)
            .arg("x")
            .arg("y")
            .query(via)
            .unwrap();
        assert_eq!(added, 3);
        let _: i64 = redis::cmd("SREM").arg(&s).arg("y").query(via).unwrap();
        assert_eq!(holders(&mut clients, &s), 2, "{s}");
        let l = format!("list:{i}");
        let via = &mut clients[(i + 2) % 3];
        let n: i64 = redis::cmd("RPUSH")
            .arg(&l)
            .arg("a")
            .arg(i)
            .arg("c")
            .query(via)
            .unwrap();
        assert_eq!(n, 3);
        let _: String = redis::cmd("LPOP").arg(&l).query(via).unwrap();
        assert_eq!(holders(&mut clients, &l), 2, "{l}");
        let z = format!("zset:{i}");
        let via = &mut clients[i % 3];
        let n: i64 = redis::cmd("ZADD")
            .arg(&z)
            .arg(i)
            .arg("m")
            .arg(1.5)
            .arg("n")
            .query(via)
            .unwrap();
        assert_eq!(n, 2);
        assert_eq!(holders(&mut clients, &z), 2, "{z}");
    }
    // A table-sized hash, one field changed after it was replicated.
    let mut c = cluster.members[0].client();
    let mut hset = redis::cmd("HSET");
    hset.arg("big");
    for f in 0..2000 {
        hset.arg(format!("f{f}")).arg("v");
    }
    let _: i64 = hset.query(&mut c).unwrap();
    let _: i64 = redis::cmd("HSET")
        .arg("big")
        .arg("f7")
        .arg("changed")
        .query(&mut c)
        .unwrap();
    cluster.crash(cluster.owner_index("big"));
    for m in cluster.live() {
        let mut c = m.client();
        for i in 0..KEYS {
            let k = format!("hash:{i}");
            let all: Vec<(String, String)> = redis::cmd("HGETALL").arg(&k).query(&mut c).unwrap();
            assert_eq!(
                all,
                vec![("a".to_string(), (i + 1).to_string())],
                "{k} via {}",
                m.name
            );
            let t: String = redis::cmd("TYPE").arg(&k).query(&mut c).unwrap();
            assert_eq!(t, "hash");
            let s = format!("set:{i}");
            let mut members: Vec<String> = redis::cmd("SMEMBERS").arg(&s).query(&mut c).unwrap();
            members.sort();
            assert_eq!(
                members,
                vec![i.to_string(), "x".to_string()],
                "{s} via {}",
                m.name
            );
            let l = format!("list:{i}");
            let all: Vec<String> = redis::cmd("LRANGE")
                .arg(&l)
                .arg(0)
                .arg(-1)
                .query(&mut c)
                .unwrap();
            assert_eq!(
                all,
                vec![i.to_string(), "c".to_string()],
                "{l} via {}",
                m.name
            );
            let z = format!("zset:{i}");
            let score: String = redis::cmd("ZSCORE").arg(&z).arg("m").query(&mut c).unwrap();
            assert_eq!(score, i.to_string(), "{z} via {}", m.name);
        }
        let n: i64 = redis::cmd("HLEN").arg("big").query(&mut c).unwrap();
        assert_eq!(n, 2000, "via {}", m.name);
        let v: String = redis::cmd("HGET")
            .arg("big")
            .arg("f7")
            .query(&mut c)
            .unwrap();
        assert_eq!(v, "changed", "via {}", m.name);
        let e = redis::cmd("GET")
            .arg("big")
            .query::<String>(&mut c)
            .unwrap_err();
        assert_eq!(e.code(), Some("WRONGTYPE"), "{e}");
    }
}

/// On the cluster-client port only database 0 exists, as in Redis Cluster: SELECT, MOVE and
/// COPY ... DB answer its errors. On the plain port they work; SWAPDB is refused on both.
#[test]
fn the_cluster_client_port_has_database_zero_only() {
    let cluster = TestCluster::start(3, |_| {});
    let url = format!("redis://{}/", cluster.members[0].cluster_client_addr);
    let mut c = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .unwrap();
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    let mut plain = cluster.members[0].client();
    for (cmd, text) in [
        (vec!["SELECT", "1"], "SELECT is not allowed in cluster mode"),
        (
            vec!["MOVE", "{k}a", "1"],
            "MOVE is not allowed in cluster mode",
        ),
        (
            vec!["SWAPDB", "0", "1"],
            "SWAPDB is not allowed in cluster mode",
        ),
        (
            vec!["COPY", "{k}a", "{k}b", "DB", "1"],
            "Copying to another database is not allowed in cluster mode",
        ),
    ] {
        let e = redis::cmd(cmd[0])
            .arg(&cmd[1..])
            .query::<()>(&mut c)
            .unwrap_err();
        assert!(e.to_string().contains(text), "{cmd:?}: {e}");
        let on_plain = redis::cmd(cmd[0])
            .arg(&cmd[1..])
            .query::<redis::Value>(&mut plain);
        assert_eq!(
            on_plain.is_err(),
            cmd[0] == "SWAPDB",
            "{cmd:?} on the plain port: {on_plain:?}"
        );
        let _: () = redis::cmd("SELECT").arg(0).query(&mut plain).unwrap();
    }
}

/// CLUSTER INFO / NODES / MYID / KEYSLOT / COUNTKEYSINSLOT in Redis's formats.
#[test]
fn cluster_commands_describe_the_cluster() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c).unwrap();
    assert!(info.contains("cluster_state:ok\r\n"), "{info}");
    assert!(info.contains("cluster_known_nodes:3\r\n"), "{info}");
    assert!(info.contains("cluster_slots_assigned:16384\r\n"), "{info}");
    // A member's HELP, in Redis 7.2's form (a single node refuses it, as Redis without
    // `cluster-enabled`).
    let help: Vec<String> = redis::cmd("CLUSTER").arg("HELP").query(&mut c).unwrap();
    assert!(
        help[0].starts_with("CLUSTER <subcommand> [<arg> [value] [opt] ...]."),
        "{help:?}"
    );
    assert_eq!(help[help.len() - 2..], ["HELP", "    Print this help."]);
    let id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut c).unwrap();
    assert_eq!(id.len(), 40);
    assert!(id.chars().all(|ch| ch.is_ascii_hexdigit()));
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut c).unwrap();
    let lines: Vec<&str> = nodes.lines().collect();
    assert_eq!(lines.len(), 3);
    let mut slots = 0;
    for line in &lines {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f[0].len(), 40);
        assert!(
            f[1].starts_with("127.0.0.1:") && f[1].contains('@'),
            "{line}"
        );
        assert!(f[2] == "master" || f[2] == "myself,master", "{line}");
        assert_eq!(f[7], "connected");
        for r in &f[8..] {
            let (lo, hi) = r.split_once('-').unwrap_or((r, r));
            slots += hi.parse::<u32>().unwrap() - lo.parse::<u32>().unwrap() + 1;
        }
    }
    assert_eq!(slots, 16384, "every slot has exactly one owner");
    assert!(lines
        .iter()
        .any(|l| l.starts_with(&id) && l.contains("myself")));
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("{user1000}.following")
        .query(&mut c)
        .unwrap();
    assert_eq!(slot, 3443, "Redis's example");
    // RESET is refused with the reason; a bad mode is a syntax error, as in Redis.
    let e = redis::cmd("CLUSTER")
        .arg("RESET")
        .arg("HARD")
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(
        e.to_string().contains("CLUSTER RESET is not supported"),
        "{e}"
    );
    let e = redis::cmd("CLUSTER")
        .arg("RESET")
        .arg("sideways")
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("syntax error"), "{e}");
    // Every member is a master without replicas or failure reports; others are unknown.
    for line in &lines {
        let member = line.split(' ').next().unwrap();
        for sub in ["REPLICAS", "SLAVES"] {
            let r: Vec<String> = redis::cmd("CLUSTER")
                .arg(sub)
                .arg(member)
                .query(&mut c)
                .unwrap();
            assert!(r.is_empty(), "{sub} {member}: {r:?}");
        }
        let n: i64 = redis::cmd("CLUSTER")
            .arg("COUNT-FAILURE-REPORTS")
            .arg(member)
            .query(&mut c)
            .unwrap();
        assert_eq!(n, 0);
    }
    let e = redis::cmd("CLUSTER")
        .arg("REPLICAS")
        .arg("0123")
        .query::<Vec<String>>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("Unknown node 0123"), "{e}");
    // Redis Cluster's administration is refused with the reason.
    for (sub, args) in [
        ("ADDSLOTS", &["1"][..]),
        ("meet", &["127.0.0.1", "7000"][..]),
    ] {
        let e = redis::cmd("CLUSTER")
            .arg(sub)
            .arg(args)
            .query::<String>(&mut c)
            .unwrap_err();
        let want = format!("CLUSTER {} is not supported: ", sub.to_ascii_uppercase());
        assert!(e.to_string().contains(&want), "{e}");
    }
    // COUNTKEYSINSLOT is answered by the slot's owner, whichever node is asked.
    for i in 0..20 {
        let _: () = c.set(format!("{{user1000}}.{i}"), i).unwrap();
    }
    for m in &cluster.members {
        let n: i64 = redis::cmd("CLUSTER")
            .arg("COUNTKEYSINSLOT")
            .arg(3443)
            .query(&mut m.client())
            .unwrap();
        assert_eq!(n, 20);
    }
    let e = redis::cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(16384)
        .query::<i64>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("Invalid slot"), "{e}");
}

/// A client of the inter-node protocol with the wrong secret, or another cluster name, is
/// refused during the handshake and reads nothing.
#[test]
fn a_peer_with_the_wrong_secret_is_refused() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    let _: () = c.set("secret-data", "x").unwrap();
    let target = cluster.members[0].cluster_addr;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = shoal_cluster::message::encode_command(
        shoal_resp::Protocol::Resp2,
        0,
        None,
        &[bytes::Bytes::from("GET"), bytes::Bytes::from("secret-data")],
        0,
        0,
    );
    for (cluster_name, secret) in [("shoal", "wrong"), ("other", TEST_SECRET)] {
        let result = rt.block_on(async {
            let auth = shoal_wire::AuthConfig::new(cluster_name, secret, "intruder");
            let peer = shoal_wire::PeerClient::new(target, auth, Default::default());
            peer.request(1, body.clone()).await
        });
        match result {
            Err(shoal_wire::WireError::Refused(_))
            | Err(shoal_wire::WireError::PeerUnavailable(shoal_wire::Unavailable::Handshake(_))) => {
            }
            other => panic!("{cluster_name}/{secret}: {other:?}"),
        }
    }
    // With the right secret the same request works, so the refusal was the secret's doing.
    let ok = rt.block_on(async {
        let auth = shoal_wire::AuthConfig::new("shoal", TEST_SECRET, "n-test");
        let peer = shoal_wire::PeerClient::new(target, auth, Default::default());
        peer.request(1, body.clone()).await
    });
    let body = ok.expect("right secret is served").body;
    assert!(
        body.starts_with(b"$1\r\nx\r\n") || body.starts_with(b"$-1\r\n"),
        "{body:?}"
    );
}

/// A node still looking for its cluster (alone in its view, its seed unreachable) that gets
/// forwarded reads from a node that already places the key on it sends every one of them on
/// to the next copy (TRYAGAIN "joining"), also those queued on the same key behind the first:
/// it has no copy to fetch the key from, and a nil would be a miss for a key that exists.
#[test]
fn a_joiner_alone_sends_every_read_of_a_key_on() {
    let node = shoal_tests::TestNode::with(|c| {
        c.cluster_mode = "gossip".into();
        c.cluster_secret = TEST_SECRET.into();
        c.cluster_port = Some(0);
        // A seed nobody answers at: the node keeps looking (for a minute) and stays alone.
        c.cluster_seeds = vec!["127.0.0.1:9".into()];
        c.join_timeout_ms = 60_000;
    });
    let target = node
        .cluster_addr
        .expect("a gossip node has a cluster listener");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let get = |k: &str| {
        shoal_cluster::message::encode_command(
            shoal_resp::Protocol::Resp2,
            0,
            None,
            &[bytes::Bytes::from("GET"), bytes::Bytes::from(k.to_owned())],
            0,
            0,
        )
    };
    let replies = rt.block_on(async {
        let auth = shoal_wire::AuthConfig::new("shoal", TEST_SECRET, "n-sender");
        let peer = shoal_wire::PeerClient::new(target, auth, Default::default());
        // Sent together, so they arrive in one read: the second queues behind the first.
        // The sender's view id (42) is not the node's.
        let (a, b, c) = tokio::join!(
            peer.request(42, get("k")),
            peer.request(42, get("k")),
            peer.request(42, get("k")),
        );
        [a, b, c].map(|r| r.expect("the node answers").body)
    });
    for (i, body) in replies.iter().enumerate() {
        assert!(
            body.starts_with(b"-TRYAGAIN this node is joining"),
            "read {i}: {:?}",
            String::from_utf8_lossy(body)
        );
    }
}

/// Replication messages that arrive late or out of order never bring back an older value
/// or a deleted key (versions and tombstones).
#[test]
fn reordered_replication_cannot_resurrect_a_deleted_key() {
    use shoal_cluster::message::encode_replicate;
    use shoal_store::KeyState;

    let cluster = TestCluster::start(3, |_| {});
    let target = cluster.members[2].cluster_addr;
    let mut c = cluster.members[2].client();
    // A key node 2 owns, so that GET through node 2 reads its own copy.
    let me = my_id(&mut c);
    let ghost = (0..1000)
        .map(|i| format!("ghost{i}"))
        .find(|k| owner_of(&mut c, k) == me)
        .expect("node 2 owns some key");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let peer = peer_client(&rt, target);
    let send = |state: KeyState| {
        let body = encode_replicate([(ghost.as_bytes(), &state)].into_iter());
        rt.block_on(peer.request(1, body)).expect("replicate")
    };
    let live = |v: &str, version: u64| KeyState::Live {
        kind: shoal_store::Kind::String,
        value: bytes::Bytes::from(v.to_string()),
        flags: 0,
        expire_at_ms: 0,
        version,
    };
    let haskey = |c: &mut redis::Connection| -> i64 {
        redis::cmd("CLUSTER")
            .arg("HASKEY")
            .arg(&ghost)
            .query(c)
            .unwrap()
    };
    send(live("v1", 1 << 40));
    assert_eq!(haskey(&mut c), 1);
    send(KeyState::Deleted { version: 3 << 40 });
    assert_eq!(haskey(&mut c), 0);
    // The write between the two arrives last: still deleted.
    send(live("v2", 2 << 40));
    assert_eq!(haskey(&mut c), 0);
    // An older value arriving after a newer one does not replace it.
    send(live("v4", 4 << 40));
    send(live("v3-late", (4 << 40) - 1));
    let v: Option<String> = c.get(&ghost).unwrap();
    assert_eq!(v.as_deref(), Some("v4"));
    let stale: u64 = info_field(&mut c, "shoal_repl_stale").parse().unwrap();
    assert!(stale >= 2, "stale {stale}");
}

/// A node dies while a client keeps writing and reading through another node (requests in
/// flight to it at that moment included): no request fails, and with `write-ack = all`
/// every read returns the last value written.
#[test]
fn a_crash_under_load_costs_no_errors() {
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let url = cluster.members[0].url();
    let (crash_tx, crash_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let load = std::thread::spawn(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let mut last = vec![None::<u64>; 200];
        let mut errors = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut crashed_at = None;
        for round in 0..30u64 {
            if std::time::Instant::now() > deadline {
                break;
            }
            if round == 10 {
                // Crash while requests keep flowing: some are in flight to the dead node.
                crash_tx.send(()).unwrap();
                crashed_at = Some(round);
            }
            if round == 20 {
                done_rx.recv().unwrap();
            }
            for (i, slot) in last.iter_mut().enumerate() {
                let k = format!("load:{i}");
                if let Err(e) = c.set::<_, _, ()>(&k, round) {
                    errors.push(format!("SET {k}: {e}"));
                    continue;
                }
                *slot = Some(round);
                match c.get::<_, Option<u64>>(&k) {
                    Ok(v) if v == *slot => {}
                    other => errors.push(format!("GET {k}: {other:?}, wrote {slot:?}")),
                }
            }
        }
        (errors, crashed_at)
    });
    crash_rx.recv().unwrap();
    cluster.crash(1);
    done_tx.send(()).unwrap();
    let (errors, crashed_at) = load.join().unwrap();
    assert_eq!(crashed_at, Some(10), "the crash happened mid-load");
    assert!(
        errors.is_empty(),
        "{} errors: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
}

/// A forwarded command's reply is built within the client's output limit at the owner too:
/// the owner stops at the limit the forwarding node sent along and answers an error, instead
/// of building the whole reply for the forwarding node to drop.
#[test]
fn forwarded_replies_are_built_within_the_clients_output_limit() {
    let cluster = TestCluster::start(3, |c| {
        c.client_output_buffer_limit.normal.hard = 1 << 20;
    });
    let mut c0 = cluster.members[0].client();
    let me = my_id(&mut c0);
    let k = (0..1000)
        .map(key)
        .find(|k| owner_of(&mut c0, k) != me)
        .expect("a key owned elsewhere");
    let big = "v".repeat(200_000);
    let _: () = c0.set(&k, &big).unwrap();
    // 20 x 200 KB = 4 MB of reply against a 1 MB limit.
    let mut mget = redis::cmd("MGET");
    for _ in 0..20 {
        mget.arg(&k);
    }
    let r: redis::RedisResult<Vec<String>> = mget.query(&mut c0);
    let e = r.expect_err("a 4 MB reply over a 1 MB limit");
    assert!(
        e.to_string().contains("output buffer limit"),
        "the owner refused the reply: {e}"
    );
    // Within the limit it is served, and the node is fine.
    let mut c0 = cluster.members[0].client();
    let two: Vec<String> = redis::cmd("MGET").arg(&k).arg(&k).query(&mut c0).unwrap();
    assert_eq!(two, vec![big.clone(), big]);
}

/// Pipelined pairs of writes to one key, in flight to a node as it crashes and sent after:
/// the read right after each pair sees the second write, on every key (those the dead node
/// owned fail over to their replica, here or on the third node), in every round. Before the
/// failover order (`router::FailoverOrder`), the last commands of a long pipeline went to
/// the next copy in reverse order (GET, SET b, SET a), reading the previous round's value.
#[test]
fn pipelined_writes_in_flight_at_a_crash_keep_their_order() {
    let mut cluster = TestCluster::start(3, |_| {});
    let url = cluster.members[0].url();
    let (crash_tx, crash_rx) = std::sync::mpsc::channel::<()>();
    let load = std::thread::spawn(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let mut reordered = Vec::new();
        let mut errors = Vec::new();
        for round in 0..60u64 {
            if round == 20 {
                crash_tx.send(()).unwrap();
            }
            let mut pipe = redis::pipe();
            for i in 0..100 {
                let k = format!("ord:{i}");
                pipe.cmd("SET").arg(&k).arg(format!("{round}-a")).ignore();
                pipe.cmd("SET").arg(&k).arg(format!("{round}-b")).ignore();
                pipe.cmd("GET").arg(&k);
            }
            match pipe.query::<Vec<String>>(&mut c) {
                Ok(got) => {
                    for (i, v) in got.iter().enumerate() {
                        if *v != format!("{round}-b") {
                            reordered.push(format!("ord:{i} round {round}: {v}"));
                        }
                    }
                }
                Err(e) => errors.push(format!("round {round}: {e}")),
            }
        }
        (reordered, errors)
    });
    crash_rx.recv().unwrap();
    cluster.crash(1);
    let (reordered, errors) = load.join().unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let mut c = cluster.members[0].client();
    let failovers: u64 = info_field(&mut c, "shoal_failovers").parse().unwrap();
    assert!(
        failovers > 0,
        "no command failed over: the test did not test it"
    );
    assert!(
        reordered.is_empty(),
        "{} reads saw the first write: {reordered:?}",
        reordered.len()
    );
}

/// A hand-off of a slot a settled node holds no copy of, from a sender that routes by
/// another view, is refused as a whole (the sender tries again once the views agree), and a
/// replicated state of it is refused: neither can bring back a slot the node forgot.
#[test]
fn a_hand_off_of_a_foreign_slot_is_refused() {
    use shoal_cluster::message::{encode_handoff, encode_replicate};
    use shoal_store::KeyState;

    // Each write waits for its replica, so where copies are can be read right after it.
    let cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let target = cluster.members[2].cluster_addr;
    let mut clients: Vec<_> = cluster.members.iter().map(|m| m.client()).collect();
    let holds = haskey;
    // With three nodes and two copies, node 2 holds no copy of about a third of the slots.
    let (copy, foreign) = keys_on_and_off(&mut clients, 2, "late");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let peer = peer_client(&rt, target);
    let state = KeyState::Live {
        kind: shoal_store::Kind::String,
        value: bytes::Bytes::from_static(b"late"),
        flags: 0,
        expire_at_ms: 0,
        version: u64::MAX >> 1,
    };
    // Frames carry the sender's view id; 1 is no view of this cluster.
    let send = |body| rt.block_on(peer.request(1, body)).expect("answered").body;
    let body = send(encode_handoff([(foreign.as_bytes(), &state)].into_iter()));
    assert!(body.starts_with(b"-TRYAGAIN"), "{body:?}");
    assert_eq!(
        holds(&mut clients[2], &foreign),
        0,
        "a hand-off brought it back"
    );
    let v: Option<String> = clients[1].get(&foreign).unwrap();
    assert_eq!(v.as_deref(), Some("x"));
    // The same hand-off of a slot it holds a copy of is applied.
    let body = send(encode_handoff([(copy.as_bytes(), &state)].into_iter()));
    assert!(!body.starts_with(b"-"), "{body:?}");
    let v: Option<String> = clients[2].get(&copy).unwrap();
    assert_eq!(v.as_deref(), Some("late"));
    // Replication from another view is refused for the foreign slot, taken for the copy.
    send(encode_replicate([(foreign.as_bytes(), &state)].into_iter()));
    assert_eq!(
        holds(&mut clients[2], &foreign),
        0,
        "a replication brought it back"
    );
    let foreign_count: u64 = info_field(&mut clients[2], "shoal_repl_foreign")
        .parse()
        .unwrap();
    assert_eq!(foreign_count, 1);
}

/// FLUSHALL raises every node's version floor to the greatest any node had, and every
/// node's clock with it: a write from before the flush by a node whose clock ran ahead (here
/// a replicated state dated ten minutes on, which pulls node 2's clock that far) is refused
/// by the others too, and writes after the flush, on nodes whose clocks are behind that,
/// still reach both copies.
#[test]
fn flushall_holds_against_a_node_whose_clock_runs_ahead() {
    use shoal_cluster::message::encode_replicate;
    use shoal_store::KeyState;

    // Each write waits for its replica, so the copies can be counted right after it.
    let cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let mut clients: Vec<_> = cluster.members.iter().map(|m| m.client()).collect();
    let holds = haskey;
    // `off` has its copies on nodes 0 and 1.
    let (on2, off) = keys_on_and_off(&mut clients, 2, "skew");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let ahead = (now_ms + 600_000) << 12;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let peer = |i: usize| peer_client(&rt, cluster.members[i].cluster_addr);
    let live = |version| KeyState::Live {
        kind: shoal_store::Kind::String,
        value: bytes::Bytes::from_static(b"early"),
        flags: 0,
        expire_at_ms: 0,
        version,
    };
    let replicate = |i: usize, k: &str, version: u64| {
        let body = encode_replicate([(k.as_bytes(), &live(version))].into_iter());
        rt.block_on(peer(i).request(1, body))
            .expect("answered")
            .body
    };
    replicate(2, &on2, ahead);
    let _: () = redis::cmd("FLUSHALL").query(&mut clients[0]).unwrap();
    // A write node 2 made before the flush, by its clock, reaching node 1 after it.
    replicate(1, &off, ahead - (1 << 12));
    assert_eq!(
        holds(&mut clients[1], &off),
        0,
        "a pre-flush write came back"
    );
    // Writes after the flush through every node have both their copies.
    for i in 0..30 {
        let k = format!("after{i}");
        let _: () = clients[i % 3].set(&k, "y").unwrap();
        let copies: i64 = clients.iter_mut().map(|c| holds(c, &k)).sum();
        assert_eq!(copies, 2, "{k} after the flush");
    }
}

/// One HTTP exchange on the metrics port: (status code, body).
fn http(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the metrics port");
    send(&mut s, request);
    let (bytes, _) = read_to_close(&mut s, Duration::from_secs(10));
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// The metrics port of a cluster node: Prometheus's own Python client parses the scrape
/// (its OpenMetrics parser rejects malformed text), and the figures are the node's: commands
/// it ran by name with their durations, errors by code, forwarded requests, members by
/// state. The health checks answer, and bad requests get HTTP errors.
#[test]
fn metrics_are_scraped_and_parsed_and_probes_answer() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    for i in 0..60 {
        let _: () = c.set(key(i), "v").unwrap();
        let _: Option<String> = c.get(key(i)).unwrap();
    }
    // Pipelined: the reads of each other node's keys go in batches.
    until_batching(&mut c);
    let mut pipe = redis::pipe();
    for i in 0..60 {
        pipe.get(key(i));
    }
    let _: Vec<Option<String>> = pipe.query(&mut c).unwrap();
    let _: () = c.set("{m}text", "x").unwrap();
    let failed: redis::RedisResult<i64> = c.incr("{m}text", 1);
    assert!(failed.is_err());
    let unknown: redis::RedisResult<()> = redis::cmd("NOSUCHCOMMAND").query(&mut c);
    assert!(unknown.is_err());
    let node = &cluster.members[0];
    let url = format!("http://{}/metrics", node.metrics_addr);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    let out = std::process::Command::new("python3")
        .args(["metrics.py", &url])
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("content-type application/openmetrics-text"),
        "{text}"
    );
    // "type name labels" -> value
    let samples: std::collections::HashMap<String, f64> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (head, value) = l.rsplit_once(' ')?;
            Some((head.to_string(), value.parse().ok()?))
        })
        .collect();
    let get = |k: &str| {
        *samples
            .get(k)
            .unwrap_or_else(|| panic!("no sample {k:?} in:\n{text}"))
    };
    // Node 0 ran the commands on keys it owns, and forwarded the rest.
    let sets_here = get("counter shoal_commands_total cmd=set");
    let gets_here = get("counter shoal_commands_total cmd=get");
    assert!((1.0..61.0).contains(&sets_here), "{sets_here}");
    assert!(
        get("histogram shoal_command_duration_seconds_count cmd=get") == gets_here,
        "every call is in the histogram"
    );
    assert_eq!(
        get("histogram shoal_command_duration_seconds_bucket cmd=get,le=+Inf"),
        gets_here
    );
    assert!(get("counter shoal_forwarded_total -") >= 60.0 - sets_here);
    // By peer and outcome: everything forwarded was answered.
    let answered: f64 = ["n1", "n2"]
        .iter()
        .map(|p| {
            get(&format!(
                "counter shoal_forward_outcomes_total outcome=answered,peer={p}"
            ))
        })
        .sum();
    assert_eq!(answered, get("counter shoal_forwarded_total -"));
    // Batches as INFO counts them (the scrape and INFO read the same counters).
    let mut c0 = cluster.members[0].client();
    for (metric, field) in [
        ("shoal_forward_batches_total", "shoal_forward_batches"),
        ("shoal_forward_batched_total", "shoal_forward_batched"),
        (
            "shoal_forward_batch_continued_total",
            "shoal_forward_batch_continued",
        ),
        ("shoal_batches_served_total", "shoal_batches_served"),
    ] {
        let info: f64 = info_field(&mut c0, field).parse().unwrap();
        assert_eq!(get(&format!("counter {metric} -")), info, "{metric}");
    }
    assert!(get("counter shoal_forward_batches_total -") > 0.0);
    assert_eq!(
        get("counter shoal_forward_outcomes_total outcome=unreachable,peer=n1"),
        0.0
    );
    assert!(get("counter shoal_error_replies_total code=ERR") >= 1.0);
    assert_eq!(get("gauge shoal_members state=serving"), 3.0);
    assert!(get("counter shoal_requests_total -") >= 120.0);
    assert!(get("gauge shoal_keys -") >= 1.0);
    // The failed INCRBY ran where `{m}` lives; summed over the nodes it is one failure.
    let failed_incrs: f64 = cluster
        .members
        .iter()
        .map(|m| {
            let (status, body) = http(m.metrics_addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            assert_eq!(status, 200);
            assert!(body.ends_with("# EOF\n"), "{body}");
            body.lines()
                .find(|l| l.starts_with("shoal_commands_failed_total{cmd=\"incrby\"}"))
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum();
    assert_eq!(failed_incrs, 1.0);
    // Every metric the Grafana dashboard in deploy/ queries exists (gossip's only in
    // gossip mode: those are checked against the endpoint's source).
    let dashboard = include_str!("../../deploy/grafana/shoal.json");
    let source = include_str!("../../crates/shoal-node/src/metrics.rs");
    let names: std::collections::BTreeSet<&str> = dashboard
        .match_indices("shoal_")
        .map(|(at, _)| {
            let rest = &dashboard[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .filter(|n| *n != "shoal_cache")
        .collect();
    assert!(names.len() > 10, "{names:?}");
    for name in names {
        let base = ["_total", "_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        let scraped = samples.keys().any(|k| k.split(' ').nth(1) == Some(name));
        let declared = source.contains(&format!("\"{base}\""));
        assert!(
            scraped || (base.starts_with("shoal_gossip_") && declared),
            "the dashboard queries {name}, which the endpoint does not serve"
        );
    }
    // Health checks and HTTP errors.
    let addr = node.metrics_addr;
    assert_eq!(
        http(addr, b"GET /healthz HTTP/1.1\r\n\r\n"),
        (200, "ok\n".into())
    );
    assert_eq!(
        http(addr, b"GET /readyz HTTP/1.1\r\n\r\n"),
        (200, "ready\n".into())
    );
    assert_eq!(http(addr, b"GET /nope HTTP/1.1\r\n\r\n").0, 404);
    assert_eq!(http(addr, b"POST /metrics HTTP/1.1\r\n\r\n").0, 405);
    assert_eq!(http(addr, b"NOT HTTP AT ALL\r\n\r\n").0, 400);
    // Clients holding every connection slot open do not fail the probes.
    let held: Vec<_> = (0..64)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    assert_eq!(http(addr, b"GET /healthz HTTP/1.1\r\n\r\n").0, 200);
    assert_eq!(http(addr, b"GET /metrics HTTP/1.1\r\n\r\n").0, 503);
    drop(held);
    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Long: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 10_000));
    assert_eq!(http(addr, &huge).0, 431);
}

/// Runs headless Chromium on `url` with `args` (after the page's scripts ran for a while)
/// and returns its standard output; fails if it does not finish within a minute.
fn chromium(url: &str, args: &[&str]) -> String {
    let mut child = std::process::Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--virtual-time-budget=5000",
        ])
        .args(args)
        .arg(url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromium runs (scripts/test.sh installs it)");
    let done = wait_until(Duration::from_secs(60), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !done {
        let _ = child.kill();
        panic!("chromium did not finish within a minute");
    }
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    out
}

/// The status page at `/` of the metrics port, rendered by headless Chromium against a
/// 3-node cluster, shows every member with its state, slots and keys; `/status.json` gathers
/// the figures from every node over the inter-node protocol.
#[test]
fn the_status_page_shows_the_cluster_in_chromium() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    for i in 0..KEYS {
        let _: () = c.set(key(i), "v").unwrap();
        let _: Option<String> = c.get(key(i)).unwrap();
    }
    let addr = cluster.members[0].metrics_addr;
    let keys_of = |json: &str| -> u64 {
        json.split("\"keys\":")
            .skip(1)
            .filter_map(|s| s.split(',').next()?.parse::<u64>().ok())
            .sum()
    };
    // Two copies of every key across the three nodes, once the replicas applied the
    // writes (`write-ack = owner` answers before they do).
    let mut json = String::new();
    wait_until(Duration::from_secs(10), || {
        let (status, body) = http(addr, b"GET /status.json HTTP/1.1\r\n\r\n");
        assert_eq!(status, 200);
        json = body;
        keys_of(&json) == 2 * KEYS as u64
    });
    for name in ["n0", "n1", "n2"] {
        assert!(json.contains(&format!("\"name\":\"{name}\"")), "{json}");
    }
    assert_eq!(json.matches("\"reachable\":true").count(), 3, "{json}");
    assert_eq!(keys_of(&json), 2 * KEYS as u64, "{json}");

    let url = format!("http://{addr}/");
    let dom = chromium(&url, &["--dump-dom"]);
    assert!(dom.contains("<td>n0 (this node)</td>"), "{dom}");
    for name in ["n1", "n2"] {
        assert!(dom.contains(&format!("<td>{name}</td>")), "{dom}");
    }
    assert!(dom.contains("id=\"members\">3 / 3<"), "{dom}");
    assert!(dom.contains("updated "), "{dom}");
    let shot = std::env::temp_dir().join(format!("shoal-status-{}.png", std::process::id()));
    chromium(
        &url,
        &[
            "--window-size=1100,420",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    let _ = std::fs::remove_file(&shot);
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5_000,
        "{} bytes",
        png.len()
    );
    // Set SHOAL_STATUS_SCREENSHOT=path to keep one (the README's is made so).
    if let Ok(path) = std::env::var("SHOAL_STATUS_SCREENSHOT") {
        std::fs::write(path, &png).unwrap();
    }
}

/// Numbered databases in a cluster: a key of database 5 lives with its client key's copies
/// (two of them), is reached through any node with its database, survives a FLUSHDB of
/// database 0 on nodes whose clients never selected database 5 (they hold its keys by
/// replication only) and its owner's crash, and stays apart from database 0's key of the
/// same name.
#[test]
fn numbered_databases_are_placed_replicated_and_failed_over_like_database_0() {
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let in_db = |m: &shoal_tests::ClusterMember, db: i64| {
        let mut c = m.client();
        let _: () = redis::cmd("SELECT").arg(db).query(&mut c).unwrap();
        c
    };
    // Only n0's client selects database 5, and writes keys n0 owns: n1 and n2 hold them by
    // replication only (no client of theirs, no forwarded command, named database 5).
    let mut db5 = in_db(&cluster.members[0], 5);
    let mut db0: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    let keys: Vec<usize> = (0..KEYS * 4)
        .filter(|&i| cluster.owner_index(&key(i)) == 0)
        .take(KEYS / 3)
        .collect();
    for &i in &keys {
        let k = key(i);
        let _: () = redis::cmd("SET")
            .arg(&k)
            .arg(format!("five:{i}"))
            .query(&mut db5)
            .unwrap();
        let _: () = db0[i % 3].set(&k, format!("zero:{i}")).unwrap();
        let _: i64 = redis::cmd("RPUSH")
            .arg(format!("{{{}}}:l", key(i)))
            .arg(i)
            .query(&mut db5)
            .unwrap();
    }
    let n: i64 = redis::cmd("DBSIZE").query(&mut db0[1]).unwrap();
    assert_eq!(n, keys.len() as i64, "database 0 holds its own keys only");
    // FLUSHDB of database 0 through n1 leaves database 5 whole on every copy.
    let _: () = redis::cmd("FLUSHDB").query(&mut db0[1]).unwrap();
    let n: i64 = redis::cmd("DBSIZE").query(&mut db0[2]).unwrap();
    assert_eq!(n, 0);
    let n: i64 = redis::cmd("DBSIZE").query(&mut db5).unwrap();
    assert_eq!(n, 2 * keys.len() as i64, "DBSIZE of database 5");
    // INFO keyspace through any node: each database's keys, each key counted once.
    let info: String = redis::cmd("INFO")
        .arg("keyspace")
        .query(&mut db0[2])
        .unwrap();
    let line = format!("db5:keys={},expires=0,avg_ttl=0", 2 * keys.len());
    assert!(info.lines().any(|l| l == line), "{info}");
    assert!(!info.contains("db0:"), "database 0 was flushed: {info}");
    // Two copies of each database-5 key, as each node reports for itself.
    let mut per_node: Vec<redis::Connection> =
        cluster.members.iter().map(|m| in_db(m, 5)).collect();
    for &i in &keys {
        assert_eq!(
            holders(&mut per_node, &key(i)),
            2,
            "{} in database 5",
            key(i)
        );
    }
    drop(per_node);
    // Their owner crashes: the database-5 copies are served by the replicas.
    cluster.crash(0);
    for m in cluster.live() {
        let mut c = in_db(m, 5);
        for &i in &keys {
            let v: String = redis::cmd("GET").arg(key(i)).query(&mut c).unwrap();
            assert_eq!(v, format!("five:{i}"), "{} via {}", key(i), m.name);
            let l: Vec<String> = redis::cmd("LRANGE")
                .arg(format!("{{{}}}:l", key(i)))
                .arg(0)
                .arg(-1)
                .query(&mut c)
                .unwrap();
            assert_eq!(l, vec![i.to_string()]);
        }
    }
}

/// SORT in a cluster: BY and GET keys must be in the sorted key's slot (Redis Cluster's
/// rule) and a STORE key on its owner, so the owner holds them; a tagged pattern works
/// through any node.
#[test]
fn sort_reads_and_stores_only_in_its_keys_slot() {
    let cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let elsewhere = first_name(
        |i| format!("elsewhere{i}"),
        |k| cluster.owner_index(k) != cluster.owner_index("{u}l"),
    );
    let mut c = cluster.members[0].client();
    let _: i64 = redis::cmd("RPUSH")
        .arg("{u}l")
        .arg(&[2, 1, 3])
        .query(&mut c)
        .unwrap();
    for (w, v) in [("{u}w_1", 3), ("{u}w_2", 2), ("{u}w_3", 1)] {
        let _: () = c.set(w, v).unwrap();
    }
    let by: Vec<String> = redis::cmd("SORT")
        .arg("{u}l")
        .arg("BY")
        .arg("{u}w_*")
        .query(&mut c)
        .unwrap();
    assert_eq!(by, ["3", "2", "1"]);
    for (args, text) in [
        (
            vec!["{u}l", "BY", "w_*"],
            "BY option of SORT denied in Cluster mode",
        ),
        (
            vec!["{u}l", "GET", "w_*"],
            "GET option of SORT denied in Cluster mode",
        ),
        (
            vec!["{u}l", "STORE", &elsewhere],
            "owned by different nodes",
        ),
    ] {
        let e = redis::cmd("SORT")
            .arg(&args)
            .query::<redis::Value>(&mut c)
            .unwrap_err();
        assert!(e.to_string().contains(text), "{args:?}: {e}");
    }
    let n: i64 = redis::cmd("SORT")
        .arg("{u}l")
        .arg("STORE")
        .arg("{u}sorted")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 3);
    let mut clients: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    assert_eq!(
        holders(&mut clients, "{u}sorted"),
        2,
        "the stored list is replicated"
    );
}

/// A geospatial index is a sorted set like the others in a cluster: GEOADD reaches the
/// replica as a delta, GEORADIUS without STORE (a read) sends nothing, with STORE it sends
/// the stored key, and after the owner's crash the other nodes answer every search as before.
#[test]
fn geo_indexes_replicate_and_fail_over() {
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let tag = first_name(
        |i| format!("{{g{i}}}"),
        |t| cluster.owner_index(&format!("{t}places")) == 0,
    );
    let (places, near) = (format!("{tag}places"), format!("{tag}near"));
    let mut clients: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    let mut add = redis::cmd("GEOADD");
    add.arg(&places);
    for i in 0..300 {
        add.arg(2.0 + f64::from(i % 20) * 0.01)
            .arg(48.0 + f64::from(i / 20) * 0.01)
            .arg(format!("p{i}"));
    }
    let n: i64 = add.query(&mut clients[1]).unwrap();
    assert_eq!(n, 300);
    let counter = |c: &mut redis::Connection, f: &str| -> u64 { info_field(c, f).parse().unwrap() };
    let deltas_before = counter(&mut clients[0], "shoal_repl_deltas");
    for i in 0..20 {
        let n: i64 = redis::cmd("GEOADD")
            .arg(&places)
            .arg(2.5)
            .arg(48.5 + f64::from(i) * 0.001)
            .arg(format!("q{i}"))
            .query(&mut clients[1 + i as usize % 2])
            .unwrap();
        assert_eq!(n, 1);
    }
    let deltas = counter(&mut clients[0], "shoal_repl_deltas") - deltas_before;
    assert!(deltas >= 20, "only {deltas} of 20 GEOADDs went as deltas");
    let search = |c: &mut redis::Connection| -> Vec<(String, String)> {
        redis::cmd("GEOSEARCH")
            .arg(&places)
            .arg("FROMLONLAT")
            .arg(2.1)
            .arg(48.1)
            .arg("BYRADIUS")
            .arg(5)
            .arg("km")
            .arg("ASC")
            .arg("WITHDIST")
            .query(c)
            .unwrap()
    };
    let want = search(&mut clients[2]);
    assert!(want.len() > 50, "{} found", want.len());
    let queued_before = counter(&mut clients[0], "shoal_repl_queued");
    let found: Vec<String> = redis::cmd("GEORADIUS")
        .arg(&places)
        .arg(2.1)
        .arg(48.1)
        .arg(5)
        .arg("km")
        .query(&mut clients[1])
        .unwrap();
    assert_eq!(found.len(), want.len());
    let sorted: Vec<String> = redis::cmd("SORT")
        .arg(&places)
        .arg("ALPHA")
        .arg("LIMIT")
        .arg(0)
        .arg(3)
        .query(&mut clients[1])
        .unwrap();
    assert_eq!(sorted, ["p0", "p1", "p10"]);
    assert_eq!(
        counter(&mut clients[0], "shoal_repl_queued"),
        queued_before,
        "a GEORADIUS or SORT without STORE replicated something"
    );
    let stored: i64 = redis::cmd("GEORADIUS")
        .arg(&places)
        .arg(2.1)
        .arg(48.1)
        .arg(5)
        .arg("km")
        .arg("STORE")
        .arg(&near)
        .query(&mut clients[2])
        .unwrap();
    assert_eq!(stored as usize, want.len());
    assert_eq!(
        holders(&mut clients, &near),
        2,
        "the stored key is replicated"
    );
    drop(clients);
    cluster.crash(0);
    for m in cluster.live() {
        let mut c = m.client();
        assert_eq!(search(&mut c), want, "GEOSEARCH via {}", m.name);
        let n: i64 = redis::cmd("ZCARD").arg(&near).query(&mut c).unwrap();
        assert_eq!(
            n as usize,
            want.len(),
            "ZCARD of the stored key via {}",
            m.name
        );
        let pos: Vec<Option<(f64, f64)>> = redis::cmd("GEOPOS")
            .arg(&places)
            .arg("q19")
            .query(&mut c)
            .unwrap();
        let (lon, lat) = pos[0].expect("q19 has a position");
        assert!((lon - 2.5).abs() < 1e-5 && (lat - 48.519).abs() < 1e-5);
    }
}

/// A write of one field of a large collection goes to the replica as its command (a delta),
/// not as the whole collection; the replica runs it on the same version and ends with the
/// owner's value (read back after the owner's crash). A delta made on a version the replica
/// does not hold is not run: the replica fetches the key's state from the sender instead.
#[test]
fn writes_of_large_collections_replicate_as_deltas() {
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let key = first_name(|i| format!("big:{i}"), |k| cluster.owner_index(k) == 0);
    let mut clients: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    let mut hset = redis::cmd("HSET");
    hset.arg(&key);
    let mut want = std::collections::BTreeMap::new();
    for f in 0..500 {
        hset.arg(format!("f{f}")).arg("v");
        want.insert(format!("f{f}"), "v".to_string());
    }
    let _: i64 = hset.query(&mut clients[0]).unwrap();
    let deltas =
        |c: &mut redis::Connection, field: &str| -> u64 { info_field(c, field).parse().unwrap() };
    let sent_before = deltas(&mut clients[0], "shoal_repl_deltas");
    for i in 0..150 {
        let via = &mut clients[i % 3];
        let f = format!("f{}", i % 40);
        match i % 3 {
            0 => {
                let _: i64 = redis::cmd("HSET")
                    .arg(&key)
                    .arg(&f)
                    .arg(i)
                    .query(via)
                    .unwrap();
                want.insert(f, i.to_string());
            }
            1 => {
                let n: i64 = redis::cmd("HINCRBY")
                    .arg(&key)
                    .arg("counter")
                    .arg(2)
                    .query(via)
                    .unwrap();
                want.insert("counter".into(), n.to_string());
            }
            _ => {
                let _: i64 = redis::cmd("HDEL").arg(&key).arg(&f).query(via).unwrap();
                want.remove(&f);
            }
        }
    }
    let sent = deltas(&mut clients[0], "shoal_repl_deltas") - sent_before;
    assert!(sent >= 140, "only {sent} of 150 writes went as deltas");
    let applied: u64 = (1..3)
        .map(|m| deltas(&mut clients[m], "shoal_repl_deltas_applied"))
        .sum();
    assert!(applied >= sent, "replicas ran {applied} of {sent} deltas");
    let refetched_before: u64 = (1..3)
        .map(|m| deltas(&mut clients[m], "shoal_repl_deltas_refetched"))
        .sum();
    assert_eq!(
        refetched_before, 0,
        "in-order deltas always found their version"
    );
    // A delta on a version no replica holds, sent as if by the owner n0: not run, the
    // state fetched from n0 instead.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let replica = (1..3)
        .find(|&m| holders(&mut clients[m..=m], &key) == 1)
        .expect("one replica holds the key");
    let auth = shoal_wire::AuthConfig::new("shoal", TEST_SECRET, "n0");
    let peer = rt.block_on(async {
        shoal_wire::PeerClient::new(
            cluster.members[replica].cluster_addr,
            auth,
            Default::default(),
        )
    });
    let mut command = bytes::BytesMut::new();
    let args: Vec<bytes::Bytes> = vec![
        "HSET".into(),
        key.clone().into(),
        "f1".into(),
        "bogus".into(),
    ];
    shoal_cluster::message::put_multibulk(&mut command, &args);
    let delta = shoal_cluster::message::Change::Delta {
        base: 12345,
        version: u64::MAX >> 2,
        expire_at_ms: 0,
        command: command.freeze(),
        clock_ms: 0,
    };
    let body =
        shoal_cluster::message::encode_replicate_at(1, [(key.as_bytes(), &delta)].into_iter());
    // Frames carry the sender's view id; 1 is no view of this cluster (the key is a copy
    // here, so it is taken anyway).
    let answer = rt.block_on(peer.request(1, body)).expect("answered").body;
    assert!(!answer.starts_with(b"-"), "{answer:?}");
    assert_eq!(
        deltas(&mut clients[replica], "shoal_repl_deltas_refetched"),
        1
    );
    drop(clients);
    cluster.crash(0);
    for m in cluster.live() {
        let got: std::collections::BTreeMap<String, String> = redis::cmd("HGETALL")
            .arg(&key)
            .query(&mut m.client())
            .unwrap();
        assert_eq!(got, want, "via {}", m.name);
    }
}

/// A stream's writes replicate as deltas once it is large: XADD with `*` as the ID it got,
/// the group commands (XREADGROUP, XCLAIM, XAUTOCLAIM) on the owner's clock, so that after
/// the owner's crash every survivor holds the very same stream, delivery times, consumers'
/// seen and active times and counters included (XINFO STREAM FULL compared whole).
#[test]
fn streams_replicate_as_deltas_and_survive_the_owner() {
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let key = first_name(|i| format!("stream:{i}"), |k| cluster.owner_index(k) == 0);
    let mut clients: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    let counter =
        |c: &mut redis::Connection, field: &str| -> u64 { info_field(c, field).parse().unwrap() };
    let cmd = |c: &mut redis::Connection, line: &str| -> redis::Value {
        let mut parts = line.split(' ');
        let mut cmd = redis::cmd(parts.next().unwrap());
        for a in parts {
            cmd.arg(a);
        }
        cmd.query(c).unwrap_or_else(|e| panic!("{line}: {e}"))
    };
    cmd(
        &mut clients[1],
        &format!("XGROUP CREATE {key} g $ MKSTREAM"),
    );
    for i in 0..250 {
        cmd(
            &mut clients[i % 3],
            &format!("XADD {key} * n {i} pad {}", "p".repeat(20)),
        );
    }
    let sent_before = counter(&mut clients[0], "shoal_repl_deltas");
    for i in 0..60 {
        let via = &mut clients[i % 3];
        match i % 6 {
            0 => cmd(via, &format!("XADD {key} MAXLEN ~ 1000 * n {i}")),
            // Trims whole nodes (of 100): replicas get the exact trim it made.
            1 if i == 49 => cmd(via, &format!("XTRIM {key} MAXLEN ~ 50")),
            1 => cmd(via, &format!("XADD {key} * n {i}")),
            2 => cmd(
                via,
                &format!("XREADGROUP GROUP g c{} COUNT 3 STREAMS {key} >", i % 4),
            ),
            3 => cmd(via, &format!("XCLAIM {key} g c9 0 0-1 FORCE")),
            4 => cmd(via, &format!("XAUTOCLAIM {key} g c{} 0 0 COUNT 2", i % 5)),
            _ => {
                let first: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .arg("COUNT")
                    .arg(1)
                    .query(via)
                    .unwrap();
                cmd(via, &format!("XACK {key} g {}", first[0].0))
            }
        };
    }
    let sent = counter(&mut clients[0], "shoal_repl_deltas") - sent_before;
    assert!(sent >= 50, "only {sent} of 60 writes went as deltas");
    let refetched: u64 = (1..3)
        .map(|m| counter(&mut clients[m], "shoal_repl_deltas_refetched"))
        .sum();
    assert_eq!(refetched, 0, "every delta ran on its version");
    let full = |c: &mut redis::Connection| -> redis::Value {
        redis::cmd("XINFO")
            .arg("STREAM")
            .arg(&key)
            .arg("FULL")
            .arg("COUNT")
            .arg(0)
            .query(c)
            .unwrap()
    };
    let want = full(&mut clients[0]);
    let len: i64 = redis::cmd("XLEN").arg(&key).query(&mut clients[0]).unwrap();
    assert!(
        (50..=90).contains(&len),
        "{len}: trimmed to whole nodes, then added to"
    );
    drop(clients);
    cluster.crash(0);
    for m in cluster.live() {
        assert_eq!(full(&mut m.client()), want, "via {}", m.name);
    }
}

/// Pub/Sub across nodes: a message published on any node reaches the subscribers of every
/// node, in the order one connection published them, and PUBLISH counts them all;
/// PUBSUB's counts add up every node's; a member that is gone counts none, without error.
#[test]
fn published_messages_reach_subscribers_on_every_node_in_order() {
    let mut cluster = TestCluster::start(3, |_| {});
    let timeout = Some(Duration::from_secs(10));
    let mut on_n1 = cluster.members[1].client();
    let mut on_n2 = cluster.members[2].client_resp3();
    let mut sub1 = on_n1.as_pubsub();
    sub1.set_read_timeout(timeout).unwrap();
    sub1.subscribe("news").unwrap();
    sub1.psubscribe("n*").unwrap();
    let mut sub2 = on_n2.as_pubsub();
    sub2.set_read_timeout(timeout).unwrap();
    sub2.subscribe("news").unwrap();

    let mut publisher = cluster.members[0].client();
    // Two on n1 (the channel and the pattern), one on n2.
    let n: i64 = publisher.publish("news", "first").unwrap();
    assert_eq!(n, 3);
    let numsub: Vec<Value> = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg("news")
        .arg("none")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(
        numsub,
        vec![
            Value::BulkString(b"news".to_vec()),
            Value::Int(2),
            Value::BulkString(b"none".to_vec()),
            Value::Int(0)
        ]
    );
    let numpat: i64 = redis::cmd("PUBSUB")
        .arg("NUMPAT")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(numpat, 1);
    let channels: Vec<String> = redis::cmd("PUBSUB")
        .arg("CHANNELS")
        .query(&mut publisher)
        .unwrap();
    assert_eq!(
        channels,
        vec!["news".to_string()],
        "one channel, named once"
    );

    // A pipeline of publishes arrives in order at both nodes.
    const COUNT: usize = 300;
    let mut pipe = redis::pipe();
    for i in 0..COUNT {
        pipe.publish("news", i.to_string());
    }
    let counts: Vec<i64> = pipe.query(&mut publisher).unwrap();
    assert!(counts.iter().all(|&c| c == 3), "{counts:?}");

    let payload = |m: redis::Msg| -> (String, Option<String>, String) {
        let pattern = m.from_pattern().then(|| m.get_pattern::<String>().unwrap());
        (
            m.get_channel_name().to_string(),
            pattern,
            m.get_payload().unwrap(),
        )
    };
    // n1: each message twice, the channel's copy first, as Redis delivers.
    let mut got = Vec::new();
    for _ in 0..2 * (COUNT + 1) {
        got.push(payload(sub1.get_message().expect("n1 receives")));
    }
    let mut want = Vec::new();
    for p in std::iter::once("first".to_string()).chain((0..COUNT).map(|i| i.to_string())) {
        want.push(("news".to_string(), None, p.clone()));
        want.push(("news".to_string(), Some("n*".to_string()), p));
    }
    assert_eq!(got, want);
    let got: Vec<String> = (0..=COUNT)
        .map(|_| payload(sub2.get_message().expect("n2 receives")).2)
        .collect();
    let want: Vec<String> = std::iter::once("first".to_string())
        .chain((0..COUNT).map(|i| i.to_string()))
        .collect();
    assert_eq!(got, want, "RESP3 subscriber on n2");

    // n2 is gone: n1's subscribers still count and receive.
    drop(sub2);
    drop(on_n2);
    cluster.crash(2);
    let n: i64 = publisher.publish("news", "after").unwrap();
    assert_eq!(n, 2);
    assert_eq!(payload(sub1.get_message().unwrap()).2, "after");
    let undelivered: u64 = info_field(&mut publisher, "shoal_pubsub_undelivered")
        .parse()
        .unwrap();
    assert!(undelivered >= 1, "the message n2 did not get is counted");
}

/// A transaction whose keys are all another node's runs there whole, as its EXEC: a client
/// blocked on one of its keys sees it done, not half done (it ran command by command through
/// the connected node, and the blocked client popped what the transaction deleted later:
/// Redis's test suite through a cluster node), and its writes reach the replica.
#[test]
fn a_transaction_on_another_nodes_keys_runs_there_whole() {
    let cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let tag = first_name(|i| format!("{{tx{i}}}"), |t| cluster.owner_index(t) != 0);
    let owner = cluster.owner_index(&tag);
    let list = format!("{tag}list");
    let blocked = {
        let mut c = cluster.members[0].client();
        let list = list.clone();
        std::thread::spawn(move || -> Vec<String> {
            redis::cmd("BLPOP").arg(&list).arg(0).query(&mut c).unwrap()
        })
    };
    let mut at_owner = cluster.members[owner].client();
    let mut c = cluster.members[0].client();
    let waits = |c: &mut redis::Connection| info_field(c, "blocked_clients") == "1";
    assert!(
        wait_until(Duration::from_secs(10), || waits(&mut c)),
        "BLPOP waits"
    );
    let (pushed, deleted, again): (i64, i64, i64) = redis::pipe()
        .atomic()
        .cmd("LPUSH")
        .arg(&list)
        .arg("a")
        .arg("b")
        .arg("c")
        .del(&list)
        .cmd("LPUSH")
        .arg(&list)
        .arg("new")
        .query(&mut c)
        .unwrap();
    assert_eq!((pushed, deleted, again), (3, 1, 1));
    assert_eq!(
        blocked.join().unwrap(),
        vec![list.clone(), "new".to_string()]
    );
    // A transaction's reads see its own writes, and its writes are on both copies.
    let counter = format!("{tag}n");
    let (set, incr, got): (String, i64, String) = redis::pipe()
        .atomic()
        .set(&counter, 1)
        .incr(&counter, 1)
        .get(&counter)
        .query(&mut c)
        .unwrap();
    assert_eq!((set.as_str(), incr, got.as_str()), ("OK", 2, "2"));
    let mut clients: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    assert_eq!(holders(&mut clients, &counter), 2);
    // A restricted user's script in a transaction keeps its checks: such a transaction runs
    // command by command, the script as that user at the owner (a review found the whole
    // transaction running it as the owner's unrestricted session).
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("limited")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("+@all")
        .arg("-set")
        .query(&mut c)
        .unwrap();
    let mut limited = cluster.members[0].client();
    let _: () = redis::cmd("AUTH")
        .arg("limited")
        .arg("pw")
        .query(&mut limited)
        .unwrap();
    let scripted = format!("{tag}scripted");
    let _: redis::RedisResult<redis::Value> = redis::pipe()
        .atomic()
        .cmd("EVAL")
        .arg("return redis.call('SET', KEYS[1], 'x')")
        .arg(1)
        .arg(&scripted)
        .query(&mut limited);
    let set: Option<String> = c.get(&scripted).unwrap();
    assert_eq!(set, None, "the script's SET is refused");
    // The owner ran it as a transaction (its EXEC counted there).
    let execs = |c: &mut redis::Connection| -> bool {
        let stats: redis::InfoDict = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
        stats.get::<String>("cmdstat_exec").is_some()
    };
    assert!(execs(&mut at_owner));
}

/// EXEC's reply to a transaction of one SET (`None`: aborted by a WATCH).
fn set_in_transaction(
    c: &mut redis::Connection,
    key: impl redis::ToRedisArgs,
    value: impl redis::ToRedisArgs,
) -> Option<(String,)> {
    redis::pipe().atomic().set(key, value).query(c).unwrap()
}

/// WATCH of a key another node owns works through any node, as on a single node: what the
/// key held is read at its owner, and the transaction goes there whole with it, so another
/// client's change through any node in between aborts it (a null EXEC), and optimistic
/// increments from two nodes add up. (WATCH answered an error for such a key: Redis's
/// test suite through a cluster node.)
#[test]
fn watch_of_another_nodes_key_works_through_any_node() {
    let cluster = TestCluster::start(3, |_| {});
    let tag = first_name(|i| format!("{{w{i}}}"), |t| cluster.owner_index(t) != 0);
    let owner = cluster.owner_index(&tag);
    let third = (1..3).find(|&i| i != owner).unwrap();
    let k = format!("{tag}k");
    let mut c = cluster.members[0].client();
    let mut at_owner = cluster.members[owner].client();
    let mut at_third = cluster.members[third].client();
    // EXEC of a transaction setting `k` to `value`, after WATCH k and then, if given, a
    // SET of `k` through another client.
    let watched_set = |c: &mut redis::Connection,
                       between: Option<(&mut redis::Connection, &str)>,
                       value: &str|
     -> Option<(String,)> {
        let _: () = redis::cmd("WATCH").arg(&k).query(c).unwrap();
        if let Some((other, v)) = between {
            let _: () = other.set(&k, v).unwrap();
        }
        set_in_transaction(c, &k, value)
    };
    let _: () = c.set(&k, "1").unwrap();
    assert_eq!(watched_set(&mut c, None, "2"), Some(("OK".into(),)));
    assert_eq!(at_owner.get::<_, String>(&k).unwrap(), "2");
    // Changed in between through the owner, through a third node, or rewritten with the
    // same value: aborted, and the change stands.
    let aborted = watched_set(&mut c, Some((&mut at_owner, "3")), "x");
    assert_eq!(aborted, None);
    let aborted = watched_set(&mut c, Some((&mut at_third, "4")), "x");
    assert_eq!(aborted, None);
    let aborted = watched_set(&mut c, Some((&mut at_third, "4")), "x");
    assert_eq!(aborted, None, "the same value written again is a change");
    assert_eq!(at_owner.get::<_, String>(&k).unwrap(), "4");
    // A key created after WATCH is a change; one deleted, too.
    let fresh = format!("{tag}fresh");
    let _: () = redis::cmd("WATCH").arg(&fresh).query(&mut c).unwrap();
    let _: () = at_third.set(&fresh, "x").unwrap();
    let aborted: Option<(String,)> = set_in_transaction(&mut c, &k, "x");
    assert_eq!(aborted, None);
    let _: () = redis::cmd("WATCH").arg(&fresh).query(&mut c).unwrap();
    let _: () = at_owner.del(&fresh).unwrap();
    let aborted: Option<(String,)> = set_in_transaction(&mut c, &k, "x");
    assert_eq!(aborted, None);
    // Redis's own tests' form: WATCH x, MULTI, PING, EXEC (PING goes along).
    let pinged = |c: &mut redis::Connection| -> Option<(String, String)> {
        redis::pipe()
            .atomic()
            .ping()
            .cmd("ECHO")
            .arg("hi")
            .query(c)
            .unwrap()
    };
    let _: () = redis::cmd("WATCH").arg(&k).query(&mut c).unwrap();
    assert_eq!(pinged(&mut c), Some(("PONG".into(), "hi".into())));
    let _: () = redis::cmd("WATCH").arg(&k).query(&mut c).unwrap();
    let _: () = at_third.set(&k, "4").unwrap();
    assert_eq!(pinged(&mut c), None);
    // Several keys in one WATCH: a change of any aborts; keys of every node are read (one
    // request per owner).
    let k2 = format!("{tag}k2");
    let _: () = redis::cmd("WATCH")
        .arg(&fresh)
        .arg(&k)
        .arg(&k2)
        .query(&mut c)
        .unwrap();
    let _: () = at_third.set(&k2, "x").unwrap();
    let aborted: Option<(String,)> = set_in_transaction(&mut c, &k, "x");
    assert_eq!(aborted, None);
    let mine = first_name(|i| format!("m{i}"), |m| cluster.owner_index(m) == 0);
    let theirs = first_name(|i| format!("t{i}"), |t| cluster.owner_index(t) == third);
    let watch: String = redis::cmd("WATCH")
        .arg(&mine)
        .arg(&k)
        .arg(&theirs)
        .arg(&k2)
        .query(&mut c)
        .unwrap();
    assert_eq!(watch, "OK");
    let _: () = redis::cmd("UNWATCH").query(&mut c).unwrap();
    // WATCH, MULTI and EXEC in one write: EXEC waits for what the key held.
    let (watch, multi, queued, exec): (String, String, String, Vec<String>) = redis::pipe()
        .cmd("WATCH")
        .arg(&k)
        .cmd("MULTI")
        .cmd("SET")
        .arg(&k)
        .arg("5")
        .cmd("EXEC")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        (watch.as_str(), multi.as_str(), queued.as_str(), exec),
        ("OK", "OK", "QUEUED", vec!["OK".to_string()])
    );
    // The watched key is the one of the selected database.
    let _: () = redis::cmd("SELECT").arg(1).query(&mut c).unwrap();
    let _: () = redis::cmd("WATCH").arg(&k).query(&mut c).unwrap();
    let _: () = at_owner.set(&k, "db0").unwrap();
    let done: Option<(String,)> = set_in_transaction(&mut c, &k, "db1");
    assert_eq!(
        done,
        Some(("OK".into(),)),
        "a change in database 0 is another key"
    );
    let _: () = redis::cmd("WATCH").arg(&k).query(&mut c).unwrap();
    let _: () = redis::cmd("SELECT").arg(1).query(&mut at_third).unwrap();
    let _: () = at_third.set(&k, "changed").unwrap();
    let aborted: Option<(String,)> = set_in_transaction(&mut c, &k, "x");
    assert_eq!(aborted, None);
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    // Watched keys of two nodes and a transaction on a third's (redis-py's own test of
    // `pipe.watch("a", "b")` then `SET c`): the watched keys are read again at their owners
    // before EXEC, which runs if neither changed and returns nil if one did (not isolated:
    // a change after that reading goes unseen, as for any transaction across owners).
    let elsewhere = first_name(|i| format!("e{i}"), |e| cluster.owner_index(e) != owner);
    let local = first_name(|i| format!("l{i}"), |l| cluster.owner_index(l) == 0);
    let across = |c: &mut redis::Connection, change: Option<&mut redis::Connection>| {
        let _: () = redis::cmd("WATCH").arg(&k).arg(&local).query(c).unwrap();
        let _: Option<String> = c.get(&k).unwrap();
        if let Some(other) = change {
            let _: () = other.set(&k, "changed").unwrap();
        }
        let done: Option<(String,)> = set_in_transaction(c, &elsewhere, "x");
        done
    };
    assert_eq!(across(&mut c, None), Some(("OK".into(),)));
    assert_eq!(at_owner.get::<_, String>(&elsewhere).unwrap(), "x");
    let _: () = c.del(&elsewhere).unwrap();
    assert_eq!(across(&mut c, Some(&mut at_owner)), None);
    assert_eq!(c.exists::<_, i64>(&elsewhere).unwrap(), 0, "nothing ran");
    // Also with the key watched in another database than the one selected at EXEC, and a
    // change of the key of this node.
    let _: () = redis::cmd("SELECT").arg(2).query(&mut c).unwrap();
    let _: () = redis::cmd("WATCH").arg(&k).query(&mut c).unwrap();
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    let done: Option<(String,)> = set_in_transaction(&mut c, &elsewhere, "y");
    assert_eq!(done, Some(("OK".into(),)));
    let _: () = redis::cmd("SELECT").arg(2).query(&mut c).unwrap();
    let _: () = redis::cmd("WATCH").arg(&k).query(&mut c).unwrap();
    let _: () = redis::cmd("SELECT").arg(2).query(&mut at_owner).unwrap();
    let _: () = at_owner.set(&k, "in db 2").unwrap();
    let _: () = redis::cmd("SELECT").arg(0).query(&mut at_owner).unwrap();
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    let done: Option<(String,)> = set_in_transaction(&mut c, &elsewhere, "z");
    assert_eq!(done, None);
    assert_eq!(c.get::<_, String>(&elsewhere).unwrap(), "y");
    let _: () = redis::cmd("WATCH")
        .arg(&k)
        .arg(&local)
        .query(&mut c)
        .unwrap();
    let _: () = at_owner.set(&local, "changed").unwrap();
    let done: Option<(String,)> = set_in_transaction(&mut c, &elsewhere, "z");
    assert_eq!(done, None);
    // Behind a deep pipeline of forwarded reads (more than a connection's window of 512
    // replies) EXEC still waits for its second reading of the watched keys.
    let _: () = redis::cmd("WATCH")
        .arg(&k)
        .arg(&local)
        .query(&mut c)
        .unwrap();
    let mut deep = redis::pipe();
    for _ in 0..2000 {
        deep.get(&k).ignore();
    }
    deep.cmd("MULTI").ignore();
    deep.cmd("SET").arg(&elsewhere).arg("deep").ignore();
    deep.cmd("EXEC");
    let (exec,): (Option<Vec<String>>,) = deep.query(&mut c).unwrap();
    assert_eq!(exec, Some(vec!["OK".to_string()]));
    // An empty transaction too.
    let _: () = redis::cmd("WATCH")
        .arg(&k)
        .arg(&local)
        .query(&mut c)
        .unwrap();
    let _: () = at_owner.set(&k, "again").unwrap();
    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    let empty: Option<Vec<String>> = redis::cmd("EXEC").query(&mut c).unwrap();
    assert_eq!(empty, None);
    // Optimistic increments (WATCH, GET, MULTI, SET, EXEC, again when aborted) from two
    // nodes at once lose none.
    let counter = format!("{tag}counter");
    let _: () = c.set(&counter, 0).unwrap();
    let per_client = 40;
    let workers: Vec<_> = [0, third]
        .into_iter()
        .map(|m| {
            let mut c = cluster.members[m].client();
            let counter = counter.clone();
            std::thread::spawn(move || -> usize {
                let (mut done, mut attempts) = (0, 0);
                while done < per_client && attempts < 100 * per_client {
                    attempts += 1;
                    let _: () = redis::cmd("WATCH").arg(&counter).query(&mut c).unwrap();
                    let n: i64 = c.get(&counter).unwrap();
                    let set: Option<(String,)> = set_in_transaction(&mut c, &counter, n + 1);
                    done += usize::from(set.is_some());
                }
                done
            })
        })
        .collect();
    let done: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    assert_eq!(done, 2 * per_client);
    let total: i64 = at_owner.get(&counter).unwrap();
    assert_eq!(
        total as usize, done,
        "every committed increment counted once"
    );
}

/// SORT ... STORE and GEORADIUS ... STORE run when the destination has the source's owner,
/// in another slot too (they asked for one slot, unlike every other command of several
/// keys: redis-py's own GEORADIUS STORE tests through a cluster node), are refused with
/// CROSSSLOT across owners, and the destination reaches its replica.
#[test]
fn store_destinations_need_the_sources_owner_not_its_slot() {
    let cluster = TestCluster::start(3, |_| {});
    let owner = cluster.owner_index("src");
    let slot = |k: &str| shoal_store::key_slot(k.as_bytes());
    let same = first_name(
        |i| format!("dst{i}"),
        |k| cluster.owner_index(k) == owner && slot(k) != slot("src"),
    );
    let other = first_name(|i| format!("dst{i}"), |k| cluster.owner_index(k) != owner);
    let mut c = cluster.members[0].client();
    let _: () = redis::cmd("RPUSH")
        .arg("src")
        .arg(3)
        .arg(1)
        .arg(2)
        .query(&mut c)
        .unwrap();
    let n: i64 = redis::cmd("SORT")
        .arg("src")
        .arg("STORE")
        .arg(&same)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 3);
    let sorted: Vec<i64> = c.lrange(&same, 0, -1).unwrap();
    assert_eq!(sorted, [1, 2, 3]);
    let mut clients: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    assert!(
        wait_until(Duration::from_secs(10), || holders(&mut clients, &same)
            == 2),
        "the destination reaches its replica"
    );
    let e = redis::cmd("SORT")
        .arg("src")
        .arg("STORE")
        .arg(&other)
        .query::<i64>(&mut c)
        .unwrap_err();
    assert_eq!(e.kind(), redis::ErrorKind::CrossSlot, "{e}");
    let geo = first_name(|i| format!("geo{i}"), |k| cluster.owner_index(k) == owner);
    let near = first_name(
        |i| format!("near{i}"),
        |k| cluster.owner_index(k) == owner && slot(k) != slot(&geo),
    );
    let _: () = redis::cmd("GEOADD")
        .arg(&geo)
        .arg(2.19)
        .arg(41.43)
        .arg("p1")
        .query(&mut c)
        .unwrap();
    for (cmd, args) in [
        ("GEORADIUS", vec!["2.191", "41.433", "1000", "m"]),
        ("GEORADIUSBYMEMBER", vec!["p1", "1000", "m"]),
    ] {
        for store in ["STORE", "STOREDIST"] {
            let n: i64 = redis::cmd(cmd)
                .arg(&geo)
                .arg(&args)
                .arg(store)
                .arg(&near)
                .query(&mut c)
                .unwrap();
            assert_eq!(n, 1, "{cmd} {store}");
        }
    }
    // A script may still name only the keys it declares (the destination too).
    let e = redis::cmd("EVAL")
        .arg("return redis.call('SORT', KEYS[1], 'STORE', ARGV[1])")
        .arg(1)
        .arg("src")
        .arg(&same)
        .query::<i64>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("Script attempted to access"), "{e}");
}

/// DEBUG OBJECT and DIGEST-VALUE of a key another node owns answer from the owner's copy
/// through any node, as on a single node (they answered `ERR no such key` and a digest of
/// nothing from a node without a copy: Redis's test suite through a cluster node). DEBUG
/// POPULATE is refused.
#[test]
fn debug_of_a_key_answers_from_its_owner() {
    let cluster = TestCluster::start(3, |c| c.enable_debug_command = "yes".into());
    let k = first_name(
        |i| format!("dbg:{i}"),
        |k| cluster.owner_index(k) != 0 && haskey(&mut cluster.members[0].client(), k) == 0,
    );
    let mut c = cluster.members[0].client();
    let _: () = c.hset(&k, "foo", "bar").unwrap();
    let object: String = redis::cmd("DEBUG")
        .arg("OBJECT")
        .arg(&k)
        .query(&mut c)
        .unwrap();
    assert!(object.contains("encoding:listpack"), "{object}");
    let mut at_owner = cluster.members[cluster.owner_index(&k)].client();
    let digest = |c: &mut redis::Connection| -> Vec<String> {
        redis::cmd("DEBUG")
            .arg("DIGEST-VALUE")
            .arg(&k)
            .query(c)
            .unwrap()
    };
    let here = digest(&mut c);
    assert_ne!(
        here,
        vec!["0".repeat(40)],
        "the digest of a value, not of nothing"
    );
    assert_eq!(here, digest(&mut at_owner));
    // DEBUG POPULATE would write keys where their owners are not: refused, nothing written.
    let e = redis::cmd("DEBUG")
        .arg("POPULATE")
        .arg(10)
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("not supported in a cluster"), "{e}");
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 1, "only the hash");
}

/// What a script publishes reaches the subscribers of every node once, wherever the script
/// runs (at the owner of its key, this node or another), and counts the receivers of the node
/// that ran it, as Redis Cluster's PUBLISH counts its node's (a script's PUBLISH reached
/// only its own node's subscribers: Redis's test suite through a cluster node). A
/// transaction's PUBLISH goes through the fan-out, once too.
#[test]
fn what_scripts_and_transactions_publish_reaches_every_node_once() {
    let cluster = TestCluster::start(3, |_| {});
    let mut conns: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    let mut subs = subscribers(&mut conns, |sub| sub.subscribe("news"));
    let mut c = cluster.members[0].client();
    let elsewhere = first_name(|i| format!("s{i}"), |k| cluster.owner_index(k) != 0);
    let here = first_name(|i| format!("s{i}"), |k| cluster.owner_index(k) == 0);
    let mut want = Vec::new();
    for (k, message) in [
        (&elsewhere, "by a script elsewhere"),
        (&here, "by a script here"),
    ] {
        let n: i64 = redis::cmd("EVAL")
            .arg("return redis.call('PUBLISH', 'news', ARGV[1])")
            .arg(1)
            .arg(k)
            .arg(message)
            .query(&mut c)
            .unwrap();
        assert_eq!(n, 1, "{message}: the subscriber of the node that ran it");
        want.push(message.to_string());
    }
    let counts: (i64,) = redis::pipe()
        .atomic()
        .publish("news", "by a transaction")
        .query(&mut c)
        .unwrap();
    assert_eq!(counts, (3,));
    want.push("by a transaction".into());
    want.sort();
    for (i, sub) in subs.iter_mut().enumerate() {
        let mut got: Vec<String> = (0..want.len())
            .map(|_| match sub.get_message() {
                Ok(m) => m.get_payload().unwrap(),
                Err(e) => panic!("n{i}: {e}"),
            })
            .collect();
        got.sort();
        assert_eq!(got, want, "n{i}");
    }
    // Once: the next message each subscriber gets is the next one published.
    let n: i64 = c.publish("news", "last").unwrap();
    assert_eq!(n, 3);
    for (i, sub) in subs.iter_mut().enumerate() {
        let m: String = sub.get_message().unwrap().get_payload().unwrap();
        assert_eq!(m, "last", "n{i}");
    }
    // A script's SPUBLISH: a shard message on every node, once (a shard subscriber of each
    // node, over the plain connection: the redis crate has no SSUBSCRIBE).
    let mut shard_subs: Vec<redis::Connection> =
        cluster.members.iter().map(|m| m.client()).collect();
    for sub in &mut shard_subs {
        sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let confirmed: Vec<Value> = redis::cmd("SSUBSCRIBE").arg("sh").query(sub).unwrap();
        assert_eq!(confirmed.len(), 3);
    }
    let n: i64 = redis::cmd("EVAL")
        .arg("return redis.call('SPUBLISH', 'sh', ARGV[1])")
        .arg(1)
        .arg(&elsewhere)
        .arg("shard news")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1, "the shard subscriber of the node that ran it");
    let n: i64 = redis::cmd("SPUBLISH")
        .arg("sh")
        .arg("after")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 3);
    for (i, sub) in shard_subs.iter_mut().enumerate() {
        let mut got: Vec<Vec<String>> = (0..2)
            .map(|_| redis::from_redis_value(&sub.recv_response().unwrap()).unwrap())
            .collect();
        got.sort();
        let m = |text: &str| vec!["smessage".to_string(), "sh".into(), text.into()];
        assert_eq!(got, [m("after"), m("shard news")], "n{i}");
    }
}

/// Keyspace notifications in a cluster: every key's events reach the subscribers of every
/// node once, whichever node the command came through and whichever node owns the key; a
/// key's expiry is announced by its owner only (its replica's copy expires silently).
#[test]
fn keyspace_notifications_reach_every_node_once() {
    let cluster = TestCluster::start(3, |c| c.notify_keyspace_events = "Eg$x".into());
    let mut conns: Vec<redis::Connection> = cluster.members.iter().map(|m| m.client()).collect();
    let mut subs = subscribers(&mut conns, |sub| sub.psubscribe("__keyevent@0__:*"));
    // Through n0: ten keys set then deleted, twenty that expire; most are owned elsewhere.
    let mut via_n0 = cluster.members[0].client();
    let mut pipe = redis::pipe();
    for i in 0..10 {
        pipe.set(format!("a{i}"), "v").ignore();
        pipe.del(format!("a{i}")).ignore();
    }
    for i in 0..20 {
        pipe.cmd("SET")
            .arg(format!("k{i}"))
            .arg("v")
            .arg("PX")
            .arg(200)
            .ignore();
    }
    pipe.query::<()>(&mut via_n0).unwrap();
    let mut want: Vec<(String, String)> = Vec::new();
    for i in 0..10 {
        want.push(("set".into(), format!("a{i}")));
        want.push(("del".into(), format!("a{i}")));
    }
    for i in 0..20 {
        for event in ["set", "expire", "expired"] {
            want.push((event.into(), format!("k{i}")));
        }
    }
    want.sort();
    let event = |m: redis::Msg| -> (String, String) {
        let channel = m.get_channel_name();
        let name = channel.rsplit(':').next().unwrap_or_default().to_string();
        (name, m.get_payload().unwrap())
    };
    for (i, sub) in subs.iter_mut().enumerate() {
        let mut got: Vec<(String, String)> = Vec::new();
        for _ in 0..want.len() {
            match sub.get_message() {
                Ok(m) => got.push(event(m)),
                Err(e) => panic!("n{i}: {e} after {got:?}"),
            }
        }
        got.sort();
        assert_eq!(got, want, "n{i}'s subscriber");
    }
    // Then only what comes next: nothing was sent twice (each node's events reach the
    // others in order, so a duplicate would come before these).
    let mut via_n2 = cluster.members[2].client();
    let mut pipe = redis::pipe();
    for i in 0..30 {
        pipe.set(format!("mark{i}"), "v").ignore();
    }
    pipe.query::<()>(&mut via_n2).unwrap();
    for (i, sub) in subs.iter_mut().enumerate() {
        let mut got: Vec<(String, String)> = (0..30)
            .map(|_| event(sub.get_message().expect("a marker within the deadline")))
            .collect();
        got.sort();
        let mut marks: Vec<(String, String)> = (0..30)
            .map(|k| ("set".to_string(), format!("mark{k}")))
            .collect();
        marks.sort();
        assert_eq!(got, marks, "n{i}'s subscriber got nothing twice");
    }
}

/// `CONFIG SET notify-keyspace-events` through one node turns the events on on every
/// member before it answers (they are heard on every node, so the setting is the
/// cluster's): a subscriber on that node then hears the events of keys the other nodes own,
/// as on a single Redis. Any other setting of the same CONFIG SET stays that node's, as in
/// Redis Cluster.
#[test]
fn config_set_of_keyspace_events_reaches_every_member() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    let me = my_id(&mut c);
    let keys: Vec<String> = (0..)
        .map(|i| format!("ev:{i}"))
        .filter(|k| owner_of(&mut c, k) != me)
        .take(10)
        .collect();
    let get = |c: &mut redis::Connection, name: &str| -> String {
        let kv: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(c).unwrap();
        kv[1].clone()
    };
    let before = get(&mut cluster.members[1].client(), "maxmemory-samples");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-samples")
        .arg("7")
        .arg("notify-keyspace-events")
        .arg("KEA")
        .query(&mut c)
        .unwrap();
    for m in &cluster.members {
        let mut mc = m.client();
        assert_eq!(get(&mut mc, "notify-keyspace-events"), "AKE", "{}", m.name);
    }
    assert_eq!(get(&mut c, "maxmemory-samples"), "7");
    assert_eq!(
        get(&mut cluster.members[1].client(), "maxmemory-samples"),
        before,
        "another setting stays the node's"
    );
    let mut sub_conn = cluster.members[0].client();
    let mut sub = sub_conn.as_pubsub();
    sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    sub.psubscribe("__keyevent@0__:set").unwrap();
    for k in &keys {
        let _: () = c.set(k, "v").unwrap();
    }
    let mut got: Vec<String> = (0..keys.len())
        .map(|_| sub.get_message().unwrap().get_payload().unwrap())
        .collect();
    got.sort();
    let mut want = keys.clone();
    want.sort();
    assert_eq!(got, want, "the events of keys the other nodes own");
    // Off again, everywhere.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("")
        .query(&mut c)
        .unwrap();
    for m in &cluster.members {
        assert_eq!(
            get(&mut m.client(), "notify-keyspace-events"),
            "",
            "{}",
            m.name
        );
    }
    // Inside a transaction CONFIG is the node's alone, run in its place: a key of this node
    // written after it in the same transaction publishes its event.
    let local = (0..)
        .map(|i| format!("here:{i}"))
        .find(|k| owner_of(&mut c, k) == me)
        .unwrap();
    let (ok, set, got): (String, String, Vec<String>) = redis::pipe()
        .atomic()
        .cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("E$")
        .set(&local, "v")
        .cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query(&mut c)
        .unwrap();
    assert_eq!((ok.as_str(), set.as_str()), ("OK", "OK"));
    assert_eq!(got, ["notify-keyspace-events", "$E"]);
    let event: String = sub.get_message().unwrap().get_payload().unwrap();
    assert_eq!(event, local, "the transaction's write after its CONFIG SET");
    assert_eq!(
        get(&mut cluster.members[1].client(), "notify-keyspace-events"),
        ""
    );
}

/// A transaction that runs command by command (keys of several owners) makes cluster-wide
/// changes in their place: a FUNCTION LOAD is there for the FCALL after it, an ACL SETUSER
/// for the commands after it (their permissions checked at their turn, as in Redis), and a
/// FLUSHALL has flushed this node's keys for the reads after it. A write after a FLUSHALL
/// is refused whole (EXECABORT): the other members flush after this node's commands, so
/// its copies could be flushed after it (before, the fan-out ran after this node's own
/// commands, and `MULTI; FLUSHALL; SET k v; EXEC` left `k` flushed).
#[test]
fn a_transaction_across_owners_makes_cluster_wide_changes_in_place() {
    let cluster = TestCluster::start(3, |_| {});
    let mut c = cluster.members[0].client();
    let me = my_id(&mut c);
    let mine = |c: &mut redis::Connection, owned: bool, p: &str| -> String {
        (0..)
            .map(|i| format!("{p}:{i}"))
            .find(|k| (owner_of(c, k) == me) == owned)
            .unwrap()
    };
    let (here, there) = (mine(&mut c, true, "here"), mine(&mut c, false, "there"));
    let _: () = c.set(&there, "old").unwrap();
    let _: () = c.set(&here, "v").unwrap();
    let lib = "#!lua name=inplace\nredis.register_function('inplace', function(keys) return redis.call('GET', keys[1]) end)";
    let (set, loaded, called): (String, String, Option<String>) = redis::pipe()
        .atomic()
        .set(&there, "new")
        .cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .cmd("FCALL")
        .arg("inplace")
        .arg(1)
        .arg(&here)
        .query(&mut c)
        .unwrap();
    assert_eq!((set.as_str(), loaded.as_str()), ("OK", "inplace"));
    assert_eq!(
        called.as_deref(),
        Some("v"),
        "the function loaded before it"
    );
    // Raw RESP: the client library turns an error in EXEC's reply into an error of its own.
    let raw_exec = |queue: &[&[&str]], lines: usize| -> String {
        let mut raw = std::net::TcpStream::connect(cluster.members[0].addr).unwrap();
        for q in queue {
            let mut out = format!("*{}\r\n", q.len());
            for a in *q {
                out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
            }
            std::io::Write::write_all(&mut raw, out.as_bytes()).unwrap();
        }
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while got.windows(2).filter(|w| w == b"\r\n").count() < lines
            && std::time::Instant::now() < deadline
        {
            got.extend(shoal_tests::read_exact_by(
                &mut raw,
                1,
                Duration::from_millis(100),
            ));
        }
        String::from_utf8_lossy(&got).into_owned()
    };
    // Permissions at each command's turn.
    let got = raw_exec(
        &[
            &["MULTI"],
            &["SET", &there, "x"],
            &["ACL", "SETUSER", "default", "-get"],
            &["GET", &there],
            &["GET", &here],
            &["ACL", "SETUSER", "default", "+get"],
            &["EXEC"],
        ],
        12,
    );
    let head = "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*5\r\n+OK\r\n+OK\r\n";
    let rest = got.strip_prefix(head).unwrap_or_else(|| panic!("{got}"));
    let lines: Vec<&str> = rest.split("\r\n").collect();
    assert!(
        lines[0].starts_with("-NOPERM") && lines[1].starts_with("-NOPERM") && lines[2] == "+OK",
        "{got}"
    );
    // A FLUSHALL with reads after it: this node's keys read flushed.
    let (flushed, got_here): (String, Option<String>) = redis::pipe()
        .atomic()
        .get(&there)
        .ignore()
        .cmd("FLUSHALL")
        .get(&here)
        .query(&mut c)
        .unwrap();
    assert_eq!((flushed.as_str(), got_here), ("OK", None));
    // A write after it: refused whole, nothing run.
    let _: () = c.set(&there, "kept").unwrap();
    let got = raw_exec(
        &[&["MULTI"], &["FLUSHALL"], &["SET", &here, "w"], &["EXEC"]],
        4,
    );
    assert!(
        got.starts_with("+OK\r\n+QUEUED\r\n+QUEUED\r\n-EXECABORT") && got.contains("CROSSSLOT"),
        "{got}"
    );
    for m in &cluster.members {
        let v: Option<String> = m.client().get(&there).unwrap();
        assert_eq!(v.as_deref(), Some("kept"), "through {}", m.name);
    }
}

/// Client-side caching through a cluster node with a real client library: node-redis's
/// cache (RESP3, CLIENT TRACKING ON) reads through n0 while another client writes through
/// n1, three rounds of 60 keys on every owner: each write's invalidation reaches the cache
/// (it reads the new value), reads between writes are cache hits, and a FLUSHALL empties
/// it.
#[test]
fn node_redis_client_side_cache_through_a_cluster_node() {
    let cluster = TestCluster::start(3, |_| {});
    let (reader, writer) = (
        cluster.members[0].addr.to_string(),
        cluster.members[1].addr.to_string(),
    );
    shoal_tests::node_client("csc.js", &[&reader, &writer]);
}

/// What `a` sends until it has sent `want` (10 s at most, else the test fails), all of it.
fn read_for(a: &mut std::net::TcpStream, want: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let found = wait_until(Duration::from_secs(10), || {
        a.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        if let Ok(n) = std::io::Read::read(a, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&got).contains(want)
    });
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(found, "waited for {want:?}, got {text:?}");
    text
}

/// A tracking client whose reads of a key go to another copy when the key's owner stops
/// answering is told to drop everything (a null invalidation): the new copy does not know
/// what it read, and would not tell it of the next change (its node notices the owner's
/// connections ending, or its read failing over, whichever comes first). What it reads
/// there is remembered again: a write through another node reaches it.
#[test]
fn a_tracking_client_is_flushed_when_its_reads_move_to_another_copy() {
    // Writes wait for the replica, which has the value when the owner is gone.
    let mut cluster = TestCluster::start(3, |c| c.write_ack = "all".into());
    let k = first_name(|i| format!("moving{i}"), |n| cluster.owner_index(n) == 2);
    let mut c = cluster.members[0].client();
    let _: () = c.set(&k, "before").unwrap();
    let mut a = std::net::TcpStream::connect(cluster.members[0].addr).unwrap();
    let read = read_for;
    send(&mut a, b"HELLO 3\r\nCLIENT TRACKING ON\r\n");
    read(&mut a, "+OK\r\n");
    send(&mut a, format!("GET {k}\r\nPING\r\n").as_bytes());
    let got = read(&mut a, "+PONG\r\n");
    assert!(
        got.contains("before") && !got.contains("invalidate"),
        "{got:?}"
    );
    cluster.crash(2);
    // The read goes to the key's replica (n0 or n1) and answers; a null comes.
    send(&mut a, format!("GET {k}\r\nPING\r\n").as_bytes());
    let null = ">2\r\n$10\r\ninvalidate\r\n_\r\n";
    let mut got = read(&mut a, "+PONG\r\n");
    if !got.contains(null) {
        got += &read(&mut a, null);
    }
    assert!(got.contains("$6\r\nbefore\r\n"), "the reply: {got:?}");
    // Read there again, then changed through n1: told.
    send(&mut a, format!("GET {k}\r\nPING\r\n").as_bytes());
    read(&mut a, "+PONG\r\n");
    let mut via_n1 = cluster.members[1].client();
    let _: () = via_n1.set(&k, "after").unwrap();
    read(
        &mut a,
        &format!("invalidate\r\n*1\r\n${}\r\n{k}\r\n", k.len()),
    );
}

/// A write through another node answers once the reader's node has the invalidation, as
/// Redis sends it before the write's reply: a tracking client that asks anything after the
/// write was answered gets the push first (a client-side cache that then reads the key
/// misses rather than serving the old value). Keys of each owner, the writer on n1, default
/// mode and BCAST.
#[test]
fn an_invalidation_precedes_the_reply_to_a_command_sent_after_the_write() {
    // A write waits for the invalidation a quarter of the timeout at most: long here, so
    // that a slow test machine cannot let it go first.
    let cluster = TestCluster::start(3, |c| {
        c.replicas = 0;
        c.cluster_timeout_ms = 20_000;
    });
    let mut a = std::net::TcpStream::connect(cluster.members[0].addr).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let read_until = |a: &mut std::net::TcpStream, end: &str| -> String {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).ends_with(end) {
            let n = std::io::Read::read(a, &mut buf).expect("a reply within 10 s");
            assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&got).into_owned()
    };
    send(&mut a, b"HELLO 3\r\nCLIENT TRACKING ON\r\n");
    read_until(&mut a, "+OK\r\n");
    let mut writer = cluster.members[1].client();
    for bcast in [false, true] {
        if bcast {
            send(
                &mut a,
                b"CLIENT TRACKING OFF\r\nCLIENT TRACKING ON BCAST\r\n",
            );
            read_until(&mut a, "+OK\r\n+OK\r\n");
        }
        for round in 0..30 {
            let owner = round % 3;
            let k = first_name(
                |i| format!("before{bcast}.{round}.{i}"),
                |n| cluster.owner_index(n) == owner,
            );
            send(&mut a, format!("GET {k}\r\nPING\r\n").as_bytes());
            read_until(&mut a, "_\r\n+PONG\r\n");
            let _: () = writer.set(&k, round).unwrap();
            send(&mut a, b"PING\r\n");
            let got = read_until(&mut a, "+PONG\r\n");
            let push = format!(">2\r\n$10\r\ninvalidate\r\n*1\r\n${}\r\n{k}\r\n", k.len());
            // (Only a null, a flush for a link that ended, could come beside it.)
            assert!(
                got.strip_suffix("+PONG\r\n")
                    .is_some_and(|before| before.ends_with(&push)),
                "owner n{owner}, bcast {bcast}: {got:?}"
            );
        }
    }
}

/// BCAST turned off and on again at once: the reply to ON waits until the other members
/// have the prefixes again, though the set they last took (before OFF's empty one, still
/// on its way) is equal to it, so the next write through another owner is told. (Redis's
/// tracking unit through n0 hung on it now and then: the ON answered at once, the members
/// dropped the prefixes when OFF's arrived and were sent them again only at the next
/// half-second tick, after the write.) n1 sleeps (DEBUG SLEEP) while OFF's set is on its
/// way to it, so that it is still there when ON comes.
#[test]
fn bcast_off_and_on_again_is_told_of_the_next_write() {
    let cluster = TestCluster::start(3, |c| {
        c.replicas = 0;
        c.enable_debug_command = "yes".into();
    });
    let read = read_for;
    let mut a = std::net::TcpStream::connect(cluster.members[0].addr).unwrap();
    let mut sleeper = std::net::TcpStream::connect(cluster.members[1].addr).unwrap();
    send(&mut a, b"HELLO 3\r\nCLIENT TRACKING ON BCAST\r\n");
    read(&mut a, "+OK\r\n");
    let mut writer = cluster.members[1].client();
    for round in 0..8 {
        let k = first_name(
            |i| format!("bcast{round}.{i}"),
            |n| cluster.owner_index(n) == 1,
        );
        send(&mut sleeper, b"DEBUG SLEEP 0.2\r\n");
        send(&mut a, b"CLIENT TRACKING OFF\r\n");
        read(&mut a, "+OK\r\n");
        send(&mut a, b"CLIENT TRACKING ON BCAST\r\n");
        read(&mut a, "+OK\r\n");
        let _: () = writer.set(&k, round).unwrap();
        read(
            &mut a,
            &format!("invalidate\r\n*1\r\n${}\r\n{k}\r\n", k.len()),
        );
        read(&mut sleeper, "+OK\r\n");
    }
}

/// redis-py's Pub/Sub with its subscribers on n1 and its publisher on n0.
#[test]
fn redis_py_pubsub_across_nodes() {
    let cluster = TestCluster::start(3, |_| {});
    let sub = cluster.members[1].addr.to_string();
    let publisher = cluster.members[0].addr.to_string();
    shoal_tests::python_client("pubsub.py", &[&sub, &publisher]);
}

/// redis-py's `Lock` and `register_script` through one node of a 3-node cluster: scripts
/// run at their keys' owner, SCRIPT LOAD and FLUSH reach every node, so an EVALSHA
/// forwarded to another owner finds its script.
#[test]
fn redis_py_locks_and_scripts_work_through_a_cluster_node() {
    let cluster = TestCluster::start(3, |_| {});
    let owners: std::collections::HashSet<usize> = ["lock:2", "lock:3", "counter:2", "counter:3"]
        .iter()
        .map(|k| cluster.owner_index(k))
        .collect();
    assert!(
        owners.iter().any(|&o| o != 0),
        "some keys are owned by another node"
    );
    shoal_tests::python_client("scripts.py", &[&cluster.members[0].addr.to_string()]);
    // A script's keys in two slots are refused, as Redis Cluster refuses them.
    let mut c = cluster.members[0].client();
    let r: redis::RedisResult<i64> = redis::cmd("EVAL")
        .arg("return 1")
        .arg(2)
        .arg("{a}x")
        .arg("{a}y")
        .query(&mut c);
    assert_eq!(r.unwrap(), 1);
    let e = redis::cmd("EVAL")
        .arg("return redis.call('GET', 'elsewhere')")
        .arg(1)
        .arg("{a}x")
        .query::<Option<String>>(&mut c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("non local key"), "{e}");
    // Replicas get the declared keys' states: a key of the slot not declared, or a write
    // with no key, is refused rather than left unreplicated.
    for (script, want) in [
        (
            "return redis.call('SET', '{a}undeclared', 1)",
            "did not declare",
        ),
        (
            "return redis.call('FLUSHALL')",
            "not allowed from a script in a Shoal cluster",
        ),
    ] {
        let e = redis::cmd("EVAL")
            .arg(script)
            .arg(1)
            .arg("{a}x")
            .query::<redis::Value>(&mut c)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{script}: {e}");
    }
    let declared: String = redis::cmd("EVAL")
        .arg("return redis.call('SET', KEYS[1], 'v')")
        .arg(1)
        .arg("{a}x")
        .query(&mut c)
        .unwrap();
    assert_eq!(declared, "OK");
}

/// A write its owner took and did not answer in time (here a script that runs three
/// request timeouts long) is not sent on to the replica in a static cluster, where it would
/// run a second time, from a state that may lack the owner's latest writes, and overwrite
/// them (Redis's test suite through a cluster node lost a SET acknowledged before such a
/// script). The client is told it may have run; it ran once, at the owner, and every copy
/// ends with its result.
#[test]
fn a_write_slower_than_the_request_timeout_runs_once() {
    let cluster = TestCluster::start(3, |c| c.cluster_timeout_ms = 300);
    let k = first_name(|i| format!("slow:{i}"), |k| cluster.owner_index(k) != 0);
    let owner = cluster.owner_index(&k);
    let mut c = cluster.members[0].client();
    let _: () = c.set(&k, 7).unwrap();
    let _: () = c.set(&k, 0).unwrap();
    let script = "local s = redis.call('TIME') \
        repeat local t = redis.call('TIME') \
        until (t[1] - s[1]) * 1000000 + (t[2] - s[2]) > tonumber(ARGV[1]) \
        return redis.call('INCR', KEYS[1])";
    let e = redis::cmd("EVAL")
        .arg(script)
        .arg(1)
        .arg(&k)
        .arg(900_000)
        .query::<i64>(&mut c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("may have run"), "{e}");
    // Each copy, read where it is (READONLY on the cluster-client port), ends with the one
    // INCR after the SET 0.
    let copies: Vec<usize> = (0..3)
        .filter(|&i| haskey(&mut cluster.members[i].client(), &k) == 1)
        .collect();
    assert_eq!(copies.len(), 2, "{copies:?}");
    for &i in &copies {
        let mut local = redis::Client::open(format!(
            "redis://{}",
            cluster.members[i].cluster_client_addr
        ))
        .unwrap()
        .get_connection()
        .unwrap();
        let _: () = redis::cmd("READONLY").query(&mut local).unwrap();
        let mut last = None;
        let settled = wait_until(Duration::from_secs(10), || {
            last = local.get::<_, Option<String>>(&k).unwrap();
            last.as_deref() == Some("1")
        });
        assert!(settled, "n{i}'s copy of {k} is {last:?}");
    }
    // Only the owner ran the script.
    for &i in copies.iter().filter(|&&i| i != owner) {
        let stats: redis::InfoDict = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut cluster.members[i].client())
            .unwrap();
        assert!(
            stats.get::<String>("cmdstat_eval").is_none(),
            "n{i} ran EVAL: {stats:?}"
        );
    }
}

/// Functions in a cluster: FUNCTION LOAD through one node reaches every node, FCALL and
/// FCALL_RO through any node run at the owner of their keys (which must share a slot), a
/// function flagged `no-cluster` is refused as Redis Cluster refuses it, and FUNCTION
/// DELETE and FLUSH reach every node too.
#[test]
fn functions_in_a_cluster() {
    let cluster = shoal_tests::TestCluster::start(3, |_| {});
    let lib = "#!lua name=acc\n\
        redis.register_function('add', function(keys, args) \
            return redis.call('INCRBY', keys[1], args[1]) end)\n\
        redis.register_function{function_name='peek', flags={'no-writes'}, \
            callback=function(keys) return redis.call('GET', keys[1]) end}\n\
        redis.register_function{function_name='single', flags={'no-cluster'}, \
            callback=function() return 1 end}";
    let mut n0 = cluster.members[0].client();
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg(lib)
        .query(&mut n0)
        .unwrap();
    assert_eq!(name, "acc");
    // Keys owned by each member, through each member.
    let mut owned = vec![None; 3];
    for i in 0.. {
        let k = format!("acc:{i}");
        let o = cluster.owner_index(&k);
        owned[o].get_or_insert(k);
        if owned.iter().all(Option::is_some) {
            break;
        }
    }
    for m in &cluster.members {
        let mut con = m.client();
        for k in owned.iter().flatten() {
            let _: i64 = redis::cmd("FCALL")
                .arg("add")
                .arg(1)
                .arg(k)
                .arg(5)
                .query(&mut con)
                .unwrap();
            let v: String = redis::cmd("FCALL_RO")
                .arg("peek")
                .arg(1)
                .arg(k)
                .query(&mut con)
                .unwrap();
            assert!(v.parse::<i64>().unwrap() % 5 == 0, "{k}: {v}");
        }
    }
    for k in owned.iter().flatten() {
        let v: i64 = redis::cmd("GET").arg(k).query(&mut n0).unwrap();
        assert_eq!(v, 15, "{k}: one add through each node");
    }
    let e = redis::cmd("FCALL")
        .arg("single")
        .arg(0)
        .query::<i64>(&mut n0)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("Can not run script on cluster, 'no-cluster' flag is set."),
        "{e}"
    );
    // Keys of two owners in one call cannot run in one place.
    let (a, b) = (owned[0].clone().unwrap(), owned[1].clone().unwrap());
    let e = redis::cmd("FCALL")
        .arg("add")
        .arg(2)
        .arg(&a)
        .arg(&b)
        .arg(1)
        .query::<i64>(&mut n0)
        .unwrap_err();
    assert_eq!(e.kind(), redis::ErrorKind::CrossSlot, "{e}");
    let _: () = redis::cmd("FUNCTION")
        .arg("DELETE")
        .arg("acc")
        .query(&mut cluster.members[2].client())
        .unwrap();
    for m in &cluster.members {
        let list: Vec<redis::Value> = redis::cmd("FUNCTION")
            .arg("LIST")
            .query(&mut m.client())
            .unwrap();
        assert!(list.is_empty(), "{} still lists the library", m.name);
        let e = redis::cmd("FCALL")
            .arg("add")
            .arg(1)
            .arg(&a)
            .arg(1)
            .query::<i64>(&mut m.client())
            .unwrap_err();
        assert!(e.to_string().contains("Function not found"), "{e}");
    }
    // Keys of one owner in two slots: CROSSSLOT before an unknown SHA1 or function is
    // looked at, as in Redis Cluster (the NOSCRIPT came first; a helper's run of kombu).
    let other = (0..)
        .map(|i| format!("acc:x{i}"))
        .find(|k| {
            cluster.owner_index(k) == cluster.owner_index(&a)
                && shoal_store::key_slot(k.as_bytes()) != shoal_store::key_slot(a.as_bytes())
        })
        .unwrap();
    for call in [
        &["EVALSHA", "0123456789012345678901234567890123456789"][..],
        &["FCALL", "nosuch"],
        &["EVAL", "return 1"],
    ] {
        let e = redis::cmd(call[0])
            .arg(&call[1..])
            .arg(2)
            .arg(&a)
            .arg(&other)
            .query::<redis::Value>(&mut n0)
            .unwrap_err();
        assert_eq!(e.kind(), redis::ErrorKind::CrossSlot, "{call:?}: {e}");
    }
}

/// ACL users in a cluster: a user from the configuration is known to every node; one made
/// with ACL SETUSER through one node logs in through every node and one deleted through
/// another is gone everywhere. A user's commands are checked on the node its client is
/// connected to, for keys of every owner; a script of a user with restrictions runs as that
/// user on its keys' owner, which checks its calls.
#[test]
fn acl_users_in_a_cluster() {
    let cluster = shoal_tests::TestCluster::start(3, |c| {
        c.user = vec!["ops on >ops-pw ~* &* +@all -@dangerous".into()];
    });
    let login = |i: usize, user: &str, pass: &str| -> redis::RedisResult<redis::Connection> {
        let url =
            cluster.members[i]
                .url()
                .replacen("redis://", &format!("redis://{user}:{pass}@"), 1);
        redis::Client::open(url)?.get_connection()
    };
    let mut n0 = cluster.members[0].client();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">pw", "~app:*", "+@all", "-del"])
        .query(&mut n0)
        .unwrap();
    let mut owned = vec![None; 3];
    for i in 0.. {
        let k = format!("app:{i}");
        owned[cluster.owner_index(&k)].get_or_insert(k);
        if owned.iter().all(Option::is_some) {
            break;
        }
    }
    let owned: Vec<String> = owned.into_iter().flatten().collect();
    let script = "return redis.call('del', KEYS[1])";
    for (i, _) in cluster.members.iter().enumerate() {
        let mut ops = login(i, "ops", "ops-pw").expect("a configured user logs in everywhere");
        let e = redis::cmd("FLUSHALL").query::<()>(&mut ops).unwrap_err();
        assert_eq!(e.code(), Some("NOPERM"), "{e}");
        let mut app = login(i, "app", "pw").expect("a user made through n0 logs in everywhere");
        for (owner, k) in owned.iter().enumerate() {
            let _: () = redis::cmd("SET").arg(k).arg("v").query(&mut app).unwrap();
            let e = redis::cmd("DEL").arg(k).query::<i64>(&mut app).unwrap_err();
            assert!(
                e.to_string()
                    .contains("has no permissions to run the 'del' command"),
                "{e}"
            );
            let other = format!("other:{owner}");
            let e = redis::cmd("GET")
                .arg(&other)
                .query::<Option<String>>(&mut app)
                .unwrap_err();
            assert_eq!(e.code(), Some("NOPERM"), "{e}");
            let e = redis::cmd("EVAL")
                .arg(script)
                .arg(1)
                .arg(k)
                .query::<i64>(&mut app)
                .unwrap_err();
            // Checked against the user wherever the script runs (on another node it is
            // sent there as `acl.script app EVAL ...`).
            assert!(
                e.to_string().contains(
                    "ACL failure in script: User app has no permissions to run the 'del' command"
                ),
                "{owner} {i}: {e}"
            );
            let v: String = redis::cmd("EVAL")
                .arg("return redis.call('set', KEYS[1], 'v')")
                .arg(1)
                .arg(k)
                .query(&mut app)
                .unwrap();
            assert_eq!(v, "OK", "an allowed call runs on any owner");
            let v: String = redis::cmd("EVAL_RO")
                .arg("return redis.call('get', KEYS[1])")
                .arg(1)
                .arg(k)
                .query(&mut app)
                .unwrap();
            assert_eq!(v, "v", "a read-only script too");
            // The key is still there: nothing deleted it.
            let v: Option<String> = redis::cmd("GET").arg(k).query(&mut app).unwrap();
            assert_eq!(v.as_deref(), Some("v"));
        }
    }
    let mut n1 = cluster.members[1].client();
    let n: i64 = redis::cmd("ACL")
        .arg(&["DELUSER", "app"])
        .query(&mut n1)
        .unwrap();
    assert_eq!(n, 1);
    for i in 0..3 {
        let e = login(i, "app", "pw")
            .err()
            .expect("a deleted user is gone from every node");
        assert_eq!(e.kind(), redis::ErrorKind::AuthenticationFailed, "{e}");
    }
}

/// A client on a cluster node's Unix sockets (`unixsocket`, `memcache-unixsocket`) reaches
/// every key wherever it is owned, as one on its TCP ports: written through n0's sockets,
/// RESP and Memcached, read through every node's TCP port.
#[test]
fn unix_socket_clients_reach_every_owner() {
    use std::io::{Read, Write};
    let dir = std::env::temp_dir().join(format!("shoal-cluster-unix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: String| dir.join(name).to_str().unwrap().to_string();
    let cluster = TestCluster::start(3, |c| {
        c.unixsocket = path(format!("{}.sock", c.node_name));
        c.memcache_unixsocket = path(format!("{}-mc.sock", c.node_name));
    });
    let mut resp = redis::Client::open(format!("redis+unix://{}", path("n0.sock".into())))
        .and_then(|c| c.get_connection())
        .expect("redis client on n0's socket");
    let mut mc = std::os::unix::net::UnixStream::connect(path("n0-mc.sock".into())).unwrap();
    mc.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let keys: Vec<String> = (0..30).map(|i| format!("unix:{i}")).collect();
    let owners: std::collections::HashSet<usize> =
        keys.iter().map(|k| cluster.owner_index(k)).collect();
    assert_eq!(owners.len(), 3, "the keys must have every owner");
    for (i, k) in keys.iter().enumerate() {
        if i % 2 == 0 {
            let _: () = redis::cmd("SET").arg(k).arg(i).query(&mut resp).unwrap();
        } else {
            let value = i.to_string();
            write!(mc, "set {k} 0 0 {}\r\n{value}\r\n", value.len()).unwrap();
            let mut stored = [0u8; 8];
            mc.read_exact(&mut stored).unwrap();
            assert_eq!(&stored, b"STORED\r\n", "{k}");
        }
    }
    for member in &cluster.members {
        let mut c = member.client();
        for (i, k) in keys.iter().enumerate() {
            let got: Option<String> = redis::cmd("GET").arg(k).query(&mut c).unwrap();
            assert_eq!(got, Some(i.to_string()), "{k} through {}", member.name);
        }
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
