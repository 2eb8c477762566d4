//! The Redis Cluster protocol on the cluster-client port: three real nodes on 127.0.0.1,
//! driven by the `redis` crate's plain connections (to see each reply) and by its cluster
//! client (`ClusterClient`, which reads CLUSTER SLOTS and follows MOVED as it does against
//! Redis Cluster).

use std::collections::{BTreeMap, HashSet};

use redis::cluster::ClusterClient;
use redis::{Commands, Value};
use shoal_tests::TestCluster;

fn connect(addr: std::net::SocketAddr) -> redis::Connection {
    redis::Client::open(format!("redis://{addr}/"))
        .and_then(|c| c.get_connection())
        .expect("connects")
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        other => panic!("not text: {other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

/// CLUSTER SLOTS as (first, last, [(ip:port, id)]) per range.
type Ranges = Vec<(i64, i64, Vec<(String, String)>)>;

fn slots(c: &mut redis::Connection) -> Ranges {
    let v: Value = redis::cmd("CLUSTER").arg("SLOTS").query(c).unwrap();
    let Value::Array(ranges) = v else {
        panic!("CLUSTER SLOTS is an array: {v:?}")
    };
    ranges
        .iter()
        .map(|r| {
            let Value::Array(r) = r else { panic!("{r:?}") };
            let nodes = r[2..]
                .iter()
                .map(|n| {
                    let Value::Array(n) = n else { panic!("{n:?}") };
                    assert_eq!(n.len(), 4, "ip, port, id, metadata: {n:?}");
                    (format!("{}:{}", text(&n[0]), int(&n[1])), text(&n[2]))
                })
                .collect();
            (int(&r[0]), int(&r[1]), nodes)
        })
        .collect()
}

/// CLUSTER SLOTS covers every slot once, names each slot's owner by its cluster-client port
/// (and no replicas: see `slot_ranges`), and is the same whichever node (and whichever port)
/// is asked.
#[test]
fn cluster_slots_map_every_slot_to_cluster_client_ports() {
    let cluster = TestCluster::start(3, |_| {});
    let ports: HashSet<String> = cluster
        .members
        .iter()
        .map(|m| m.cluster_client_addr.to_string())
        .collect();
    let mut c = connect(cluster.members[0].cluster_client_addr);
    let map = slots(&mut c);
    let mut next = 0;
    for (first, last, nodes) in &map {
        assert_eq!(*first, next, "ranges are in order and leave no gap");
        assert!(last >= first);
        next = last + 1;
        assert_eq!(nodes.len(), 1, "the owner alone: {nodes:?}");
        for (addr, id) in nodes {
            assert!(ports.contains(addr), "{addr} is a cluster-client port");
            assert_eq!(id.len(), 40);
        }
    }
    assert_eq!(next, 16384);
    // Every node, on either port, gives the same map.
    for m in &cluster.members {
        assert_eq!(slots(&mut connect(m.cluster_client_addr)), map);
        assert_eq!(slots(&mut m.client()), map);
    }
    // CLUSTER SHARDS: one shard per node, the slot pairs adding up to all slots.
    let shards: Value = redis::cmd("CLUSTER").arg("SHARDS").query(&mut c).unwrap();
    let Value::Array(shards) = shards else {
        panic!("{shards:?}")
    };
    assert_eq!(shards.len(), 3);
    let mut covered = 0;
    for shard in &shards {
        let Value::Array(fields) = shard else {
            panic!("{shard:?}")
        };
        assert_eq!(text(&fields[0]), "slots");
        assert_eq!(text(&fields[2]), "nodes");
        let Value::Array(pairs) = &fields[1] else {
            panic!("{shard:?}")
        };
        for p in pairs.chunks(2) {
            covered += int(&p[1]) - int(&p[0]) + 1;
        }
        let Value::Array(nodes) = &fields[3] else {
            panic!("{shard:?}")
        };
        let Value::Array(node) = &nodes[0] else {
            panic!("{shard:?}")
        };
        let fields: BTreeMap<String, &Value> =
            node.chunks(2).map(|kv| (text(&kv[0]), &kv[1])).collect();
        assert_eq!(text(fields["role"]), "master");
        assert_eq!(text(fields["health"]), "online");
        let addr = format!("{}:{}", text(fields["ip"]), int(fields["port"]));
        assert!(ports.contains(&addr), "{addr}");
    }
    assert_eq!(covered, 16384);
    let id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut c).unwrap();
    let shard: String = redis::cmd("CLUSTER")
        .arg("MYSHARDID")
        .query(&mut c)
        .unwrap();
    assert_eq!(id, shard);
    let info: String = redis::cmd("INFO").arg("cluster").query(&mut c).unwrap();
    assert!(info.contains("cluster_enabled:1\r\n"), "{info}");
    let plain: String = redis::cmd("INFO")
        .arg("cluster")
        .query(&mut cluster.members[0].client())
        .unwrap();
    assert!(plain.contains("cluster_enabled:0\r\n"), "{plain}");
}

/// The owner of `key`'s slot according to CLUSTER SLOTS: its address and id.
fn owner(map: &Ranges, key: &str, c: &mut redis::Connection) -> (String, String) {
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(c)
        .unwrap();
    let (_, _, nodes) = map
        .iter()
        .find(|(f, l, _)| (*f..=*l).contains(&slot))
        .expect("every slot is mapped");
    nodes[0].clone()
}

/// On the cluster-client port a key owned elsewhere is answered MOVED (to the owner CLUSTER
/// SLOTS names), keys of two slots CROSSSLOT, a READONLY connection reads its replica
/// copies, and DBSIZE and KEYS count only the keys each node owns. The plain port still
/// answers every key.
#[test]
fn cluster_port_redirects_and_plain_port_serves_everything() {
    let cluster = TestCluster::start(3, |_| {});
    let mut plain = cluster.members[0].client();
    let keys: Vec<String> = (0..60).map(|i| format!("rc:{i}")).collect();
    for k in &keys {
        let _: () = plain.set(k, format!("v-{k}")).unwrap();
    }
    let me = &cluster.members[0];
    let mut c = connect(me.cluster_client_addr);
    let map = slots(&mut c);
    let my_id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut c).unwrap();
    let (mut moved, mut served, mut replica_reads) = (0, 0, 0);
    let mut ro = connect(me.cluster_client_addr);
    let _: () = redis::cmd("READONLY").query(&mut ro).unwrap();
    // CLIENT LIST's flag `r`, as Redis's.
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut ro).unwrap();
    assert!(info.contains(" flags=r "), "{info}");
    for k in &keys {
        let (addr, id) = owner(&map, k, &mut c);
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(k)
            .query(&mut c)
            .unwrap();
        let got = redis::cmd("GET").arg(k).query::<String>(&mut c);
        if id == my_id {
            assert_eq!(got.unwrap(), format!("v-{k}"));
            served += 1;
        } else {
            let e = got.unwrap_err();
            assert_eq!(e.code(), Some("MOVED"), "{e}");
            assert_eq!(e.redirect_node(), Some((addr.as_str(), slot as u16)), "{e}");
            moved += 1;
            // A write is MOVED even on a READONLY connection; a read of a copy held here
            // is served.
            let w = redis::cmd("SET")
                .arg(k)
                .arg("x")
                .query::<()>(&mut ro)
                .unwrap_err();
            assert_eq!(w.code(), Some("MOVED"), "{w}");
            let holds_copy: i64 = redis::cmd("CLUSTER")
                .arg("HASKEY")
                .arg(k)
                .query(&mut plain)
                .unwrap();
            let r = redis::cmd("GET").arg(k).query::<String>(&mut ro);
            if holds_copy == 1 {
                assert_eq!(r.unwrap(), format!("v-{k}"));
                replica_reads += 1;
            } else {
                assert_eq!(r.unwrap_err().code(), Some("MOVED"));
            }
        }
        // The plain port answers every key, whoever owns it.
        let v: String = plain.get(k).unwrap();
        assert_eq!(v, format!("v-{k}"));
    }
    assert!(
        moved > 0 && served > 0 && replica_reads > 0,
        "{moved} {served} {replica_reads}"
    );
    // RESET ends READONLY: a key held here as a copy only is MOVED again.
    let _: String = redis::cmd("RESET").query(&mut ro).unwrap();
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut ro).unwrap();
    assert!(info.contains(" flags=N "), "{info}");
    let copy = keys
        .iter()
        .find(|k| {
            owner(&map, k, &mut c).1 != my_id
                && redis::cmd("CLUSTER")
                    .arg("HASKEY")
                    .arg(k.as_str())
                    .query::<i64>(&mut plain)
                    .unwrap()
                    == 1
        })
        .expect("node 0 holds a replica copy of some key");
    let e = redis::cmd("GET")
        .arg(copy)
        .query::<String>(&mut ro)
        .unwrap_err();
    assert_eq!(e.code(), Some("MOVED"), "{e}");
    // GETKEYSINSLOT lists a slot's keys (at its owner), COUNTKEYSINSLOT counts them; their
    // errors are Redis's.
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(copy)
        .query(&mut c)
        .unwrap();
    let n: i64 = redis::cmd("CLUSTER")
        .arg("COUNTKEYSINSLOT")
        .arg(slot)
        .query(&mut c)
        .unwrap();
    let listed: Vec<String> = redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(100)
        .query(&mut c)
        .unwrap();
    assert!(
        n >= 1 && listed.len() as i64 == n && listed.contains(copy),
        "{n} {listed:?}"
    );
    let none: Vec<String> = redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert!(none.is_empty());
    for (args, text) in [
        (
            &["COUNTKEYSINSLOT", "x"][..],
            "value is not an integer or out of range",
        ),
        (&["COUNTKEYSINSLOT", "16384"][..], "Invalid slot"),
        (
            &["GETKEYSINSLOT", "1", "x"][..],
            "value is not an integer or out of range",
        ),
        (
            &["GETKEYSINSLOT", "1", "-1"][..],
            "Invalid slot or number of keys",
        ),
        (
            &["GETKEYSINSLOT", "-1", "1"][..],
            "Invalid slot or number of keys",
        ),
    ] {
        let e = redis::cmd("CLUSTER")
            .arg(args)
            .query::<Value>(&mut c)
            .unwrap_err();
        assert_eq!(e.code(), Some("ERR"), "{args:?}: {e}");
        assert!(e.to_string().contains(text), "{args:?}: {e}");
    }
    let e = redis::cmd("MGET")
        .arg("{a}1")
        .arg("{b}1")
        .query::<Value>(&mut c)
        .unwrap_err();
    assert_eq!(e.code(), Some("CROSSSLOT"), "{e}");
    assert!(
        e.to_string()
            .contains("Keys in request don't hash to the same slot"),
        "{e}"
    );
    // The plain port splits the same MGET across owners.
    let both: Vec<Option<String>> = redis::cmd("MGET")
        .arg("{a}1")
        .arg("{b}1")
        .query(&mut plain)
        .unwrap();
    assert_eq!(both, vec![None, None]);
    // A transaction whose queued commands are each owned here but span two slots is refused
    // at EXEC, and discarded.
    let mine: Vec<&String> = keys
        .iter()
        .filter(|k| owner(&map, k, &mut c).1 == my_id)
        .take(2)
        .collect();
    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    for k in &mine {
        let q: String = redis::cmd("INCR").arg(k.as_str()).query(&mut c).unwrap();
        assert_eq!(q, "QUEUED");
    }
    let e = redis::cmd("EXEC").query::<Value>(&mut c).unwrap_err();
    assert_eq!(e.code(), Some("CROSSSLOT"), "{e}");
    let e = redis::cmd("EXEC").query::<Value>(&mut c).unwrap_err();
    assert!(
        e.to_string().contains("EXEC without MULTI"),
        "discarded: {e}"
    );
    // Inside MULTI a redirected command aborts the transaction, as in Redis Cluster.
    let foreign = keys
        .iter()
        .find(|k| owner(&map, k, &mut c).1 != my_id)
        .unwrap();
    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    let e = redis::cmd("INCR")
        .arg(foreign)
        .query::<()>(&mut c)
        .unwrap_err();
    assert_eq!(e.code(), Some("MOVED"), "{e}");
    let e = redis::cmd("EXEC").query::<Value>(&mut c).unwrap_err();
    assert_eq!(e.code(), Some("EXECABORT"), "{e}");
    // DBSIZE and KEYS on each node's cluster port add up to the keys, each counted once.
    let mut total = 0;
    let mut listed = HashSet::new();
    for m in &cluster.members {
        let mut c = connect(m.cluster_client_addr);
        total += redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap();
        let ks: Vec<String> = redis::cmd("KEYS").arg("rc:*").query(&mut c).unwrap();
        for k in ks {
            assert!(listed.insert(k), "a key listed by two nodes");
        }
    }
    assert_eq!(total, keys.len() as i64);
    assert_eq!(listed.len(), keys.len());
    let plain_total: i64 = redis::cmd("DBSIZE").query(&mut plain).unwrap();
    assert_eq!(plain_total, keys.len() as i64);
}

/// The `redis` crate's cluster client, pointed at one node's cluster-client port, finds the
/// others through CLUSTER SLOTS and runs commands and pipelines on keys of every owner.
#[test]
fn the_redis_crates_cluster_client_works() {
    let cluster = TestCluster::start(3, |_| {});
    let client = ClusterClient::new(vec![format!(
        "redis://{}/",
        cluster.members[1].cluster_client_addr
    )])
    .unwrap();
    let mut c = client.get_connection().unwrap();
    for i in 0..200 {
        let _: () = c.set(format!("cc:{i}"), i).unwrap();
    }
    for i in 0..200 {
        let v: i64 = c.get(format!("cc:{i}")).unwrap();
        assert_eq!(v, i);
    }
    let n: i64 = c.incr("cc:counter", 5).unwrap();
    assert_eq!(n, 5);
    // A pipeline the client splits by node.
    let mut pipe = redis::cluster::cluster_pipe();
    for i in 0..50 {
        pipe.set(format!("cp:{i}"), i * 2).ignore();
    }
    for i in 0..50 {
        pipe.get(format!("cp:{i}"));
    }
    let got: Vec<i64> = pipe.query(&mut c).unwrap();
    assert_eq!(got, (0..50).map(|i| i * 2).collect::<Vec<i64>>());
    // Multi-key commands within one hash tag.
    let _: () = c.mset(&[("{u1}a", "1"), ("{u1}b", "2")]).unwrap();
    let v: Vec<String> = c.mget(&["{u1}a", "{u1}b"]).unwrap();
    assert_eq!(v, vec!["1", "2"]);
    // Every key landed where the plain port finds it too.
    let mut plain = cluster.members[0].client();
    let v: i64 = plain.get("cc:199").unwrap();
    assert_eq!(v, 199);
}

/// Before a node has heard from a key's owner under its own view, it does not send cluster
/// clients there (the owner might send them back): it serves the request as the plain port
/// does, and MOVED follows once the owner has answered under the same view. Nodes talk from
/// the start (a starting node asks the others for their function libraries), so the owner
/// that never confirms is one whose view differs: n1 is configured with two replicas where
/// the others have one.
#[test]
fn no_moved_until_the_owner_confirmed_the_view() {
    let cluster = TestCluster::start(3, |c| {
        if c.node_name == "n1" {
            c.replicas = 2;
        }
    });
    let mut c = connect(cluster.members[0].cluster_client_addr);
    let map = slots(&mut c);
    let id = |m: usize| -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut cluster.members[m].client())
            .unwrap()
    };
    let key_of = |m: usize| {
        let want = id(m);
        (0..)
            .map(|i| format!("fresh:{i}"))
            .find(|k| {
                owner(
                    &map,
                    k,
                    &mut connect(cluster.members[0].cluster_client_addr),
                )
                .1 == want
            })
            .unwrap()
    };
    // n2 shares n0's view: once a request has crossed, clients are sent there.
    let same = key_of(2);
    let _ = redis::cmd("GET").arg(&same).query::<Option<String>>(&mut c);
    let e = redis::cmd("GET")
        .arg(&same)
        .query::<Option<String>>(&mut c)
        .unwrap_err();
    assert_eq!(e.code(), Some("MOVED"), "{e}");
    // n1 answers under another view: never MOVED there, however often asked.
    let other = key_of(1);
    for _ in 0..3 {
        let r = redis::cmd("GET")
            .arg(&other)
            .query::<Option<String>>(&mut c);
        if let Err(e) = r {
            assert_ne!(
                e.code(),
                Some("MOVED"),
                "sent to an owner with another view: {e}"
            );
        }
    }
}
