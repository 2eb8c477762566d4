//! CLUSTER: the cluster as Redis Cluster clients and tools read it (SLOTS, SHARDS, NODES,
//! INFO, MYID, MYSHARDID, KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT, REPLICAS, SLAVES,
//! COUNT-FAILURE-REPORTS), FORGET, Redis Cluster's administration refused with the reason
//! (ADDSLOTS, MEET, FAILOVER, ...: Shoal places slots and finds members itself), plus two Shoal
//! introspection subcommands about this node's own memory (LOCALKEYS, HASKEY); and the
//! connection commands of Redis Cluster clients (READONLY, READWRITE, ASKING). The router
//! sends COUNTKEYSINSLOT and GETKEYSINSLOT to the slot's owner; everything else here
//! describes the node that answers.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{key_slot, SLOTS};

use super::{err, unknown_subcommand, wrong_arity, Ctx};
use crate::hooks::{SlotNode, SlotRange};

const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "FORGET <node-id>",
    "    Remove a node declared down or suspected from the members this node needs a majority of",
    "    (after losing half of the cluster at once; send it to every survivor).",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot> (counted at the slot's owner).",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored in <slot> (at the slot's owner).",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MYID",
    "    Return the node id.",
    "MYSHARDID",
    "    Return the node's shard id (in Shoal, its node id).",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas (none: every node is a master, replica copies are per slot).",
    "SLAVES <node-id>",
    "    (Deprecated) Alias for REPLICAS.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return the number of failure reports for <node-id> (none: SWIM gossip has its own).",
    "RESET [HARD|SOFT]",
    "    Not supported: a Shoal node's members are those its seeds and gossip find.",
    "SHARDS",
    "    Return information about slot range mappings and the nodes serving them.",
    "SLOTS",
    "    Return information about slot range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "LOCALKEYS",
    "    Shoal: the number of keys this node holds, its own and its replica copies.",
    "HASKEY <key>",
    "    Shoal: 1 if this node holds a copy of <key>, else 0.",
    "HELP",
    "    Print this help.",
];

/// CLUSTER RESET's answer in a cluster.
const ERR_RESET: &str = "ERR CLUSTER RESET is not supported: a Shoal node's members are those \
     its seeds and gossip find (to take a node out, stop it)";

/// Why Redis Cluster's administration subcommands do not apply to a Shoal cluster, if `sub`
/// (lowercase) is one: Shoal places the slots and finds the members itself.
fn unsupported(sub: &[u8]) -> Option<&'static str> {
    Some(match sub {
        b"addslots" | b"addslotsrange" | b"delslots" | b"delslotsrange" | b"flushslots"
        | b"setslot" | b"bumpepoch" | b"set-config-epoch" => {
            "Shoal places every slot itself (rendezvous hashing over the members)"
        }
        b"meet" => "nodes join through cluster-seeds or cluster-nodes",
        b"replicate" | b"failover" => {
            "every node is a master holding replica copies of other nodes' slots, and a \
             dead owner's slots fail over by themselves"
        }
        b"saveconfig" => "Shoal keeps no cluster configuration on disk",
        b"links" => "the links to other nodes are in INFO cluster and the metrics",
        _ => return None,
    })
}

/// A slot number argument, as Redis's `getSlotOrReply` accepts it.
pub fn parse_slot(arg: &[u8]) -> Option<u16> {
    let n = super::parse_i64(arg)?;
    u16::try_from(n).ok().filter(|&s| s < SLOTS)
}

pub fn cluster(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    let arity_ok = match &sub[..] {
        b"info" | b"nodes" | b"myid" | b"myshardid" | b"slots" | b"shards" | b"help"
        | b"localkeys" => args.len() == 2,
        b"keyslot"
        | b"countkeysinslot"
        | b"haskey"
        | b"forget"
        | b"replicas"
        | b"slaves"
        | b"count-failure-reports" => args.len() == 3,
        b"getkeysinslot" => args.len() == 4,
        b"reset" => args.len() <= 3,
        other => match unsupported(other) {
            Some(why) if ctx.host.cluster().is_some() => {
                return Reply::error(format!(
                    "ERR CLUSTER {} is not supported: {why}",
                    String::from_utf8_lossy(&args[1]).to_ascii_uppercase()
                ))
            }
            Some(_) => return err("ERR This instance has cluster support disabled"),
            None => return unknown_subcommand("cluster", &args[1]),
        },
    };
    if !arity_ok {
        return wrong_arity(&format!("cluster|{}", String::from_utf8_lossy(&sub)));
    }
    // Without a cluster every subcommand, HELP too, answers as a Redis started without
    // `cluster-enabled`.
    let Some(cluster) = ctx.host.cluster() else {
        return err("ERR This instance has cluster support disabled");
    };
    if &sub[..] == b"help" {
        return Reply::Array(HELP.iter().map(|l| Reply::Simple((*l).into())).collect());
    }
    if &sub[..] == b"reset" {
        // CLUSTER RESET [HARD | SOFT]: Redis Cluster's node forgets its members and slots;
        // a Shoal node's members are whoever its seeds and gossip find.
        return match args.get(2).map(|a| a.to_ascii_lowercase()) {
            None => err(ERR_RESET),
            Some(mode) if mode == b"hard" || mode == b"soft" => err(ERR_RESET),
            Some(_) => err(super::ERR_SYNTAX),
        };
    }
    match &sub[..] {
        b"keyslot" => Reply::Int(i64::from(key_slot(&args[2]))),
        // Redis's checks: an integer first, then the range.
        b"countkeysinslot" => match super::parse_i64(&args[2]) {
            None => err(super::ERR_NOT_INTEGER),
            Some(n) => match u16::try_from(n).ok().filter(|&s| s < SLOTS) {
                // The keys of the client's database (a slot holds every database's).
                Some(slot) if ctx.engine.numbered_dbs() => {
                    let keys = ctx.engine.store.keys_in_slot(slot, ctx.now_ms, usize::MAX);
                    let db = ctx.session.db;
                    Reply::Int(
                        keys.iter()
                            .filter(|k| super::db::split_key(k).0 == db)
                            .count() as i64,
                    )
                }
                Some(slot) => Reply::Int(ctx.engine.store.count_in_slot(slot) as i64),
                None => err("ERR Invalid slot"),
            },
        },
        b"getkeysinslot" => {
            let (Some(slot), Some(count)) =
                (super::parse_i64(&args[2]), super::parse_i64(&args[3]))
            else {
                return err(super::ERR_NOT_INTEGER);
            };
            let (Some(slot), Ok(count)) = (
                u16::try_from(slot).ok().filter(|&s| s < SLOTS),
                usize::try_from(count),
            ) else {
                return err("ERR Invalid slot or number of keys");
            };
            let db = ctx.session.db;
            let keys = if ctx.engine.numbered_dbs() {
                // The keys of the client's database, without its prefix.
                let all = ctx.engine.store.keys_in_slot(slot, ctx.now_ms, usize::MAX);
                all.into_iter()
                    .filter(|k| super::db::split_key(k).0 == db)
                    .take(count)
                    .map(|k| Bytes::copy_from_slice(super::db::split_key(&k).1))
                    .collect()
            } else {
                ctx.engine.store.keys_in_slot(slot, ctx.now_ms, count)
            };
            Reply::Array(keys.into_iter().map(Reply::Bulk).collect())
        }
        b"localkeys" => Reply::Int(ctx.engine.store.len() as i64),
        b"haskey" => {
            let key = super::db::stored_key(ctx.session.db, &args[2]);
            let exists = ctx
                .engine
                .store
                .read(&key, ctx.now_ms, shoal_store::Access::Peek, |e| e.is_some());
            Reply::Int(i64::from(exists))
        }
        b"myid" | b"myshardid" => Reply::bulk(cluster.my_id()),
        b"slots" | b"shards" => match cluster.slot_ranges() {
            None => err("TRYAGAIN this node is joining the cluster; retry in a moment"),
            Some(r) if &sub[..] == b"slots" => slots_reply(&r),
            Some(r) => shards_reply(&r),
        },
        b"info" => Reply::Verbatim(cluster.cluster_info().into()),
        b"nodes" => Reply::Verbatim(cluster.cluster_nodes(ctx.now_ms).into()),
        // Known members have no replicas and no failure reports; others are unknown, with
        // Redis's error.
        b"replicas" | b"slaves" | b"count-failure-reports" => {
            let id = String::from_utf8_lossy(&args[2]);
            let nodes = cluster.cluster_nodes(ctx.now_ms);
            if !nodes.lines().any(|l| l.split(' ').next() == Some(&*id)) {
                return Reply::error(format!("ERR Unknown node {id}"));
            }
            match &sub[..] {
                b"count-failure-reports" => Reply::Int(0),
                _ => Reply::Array(Vec::new()),
            }
        }
        b"forget" => match cluster.forget(&String::from_utf8_lossy(&args[2])) {
            Ok(()) => Reply::ok(),
            Err(text) => Reply::error(text),
        },
        _ => unknown_subcommand("cluster", &args[1]),
    }
}

/// CLUSTER SLOTS: `[first, last, [ip, port, id, {}], ...]` per range, as Redis 7 (the fourth
/// element of a node is its networking metadata, none here).
pub fn slots_reply(ranges: &[SlotRange]) -> Reply {
    let node = |n: &SlotNode| {
        Reply::Array(vec![
            Reply::bulk(n.ip.clone()),
            Reply::Int(i64::from(n.port)),
            Reply::bulk(n.id.clone()),
            Reply::Map(Vec::new()),
        ])
    };
    Reply::Array(
        ranges
            .iter()
            .map(|r| {
                let mut item = vec![
                    Reply::Int(i64::from(r.first)),
                    Reply::Int(i64::from(r.last)),
                ];
                item.extend(r.nodes.iter().map(node));
                Reply::Array(item)
            })
            .collect(),
    )
}

/// CLUSTER SHARDS: one shard per node that answers for slots (Shoal places each slot's
/// copies independently, so a node's slots have no one replica set: each shard lists its
/// node alone, as a master), with its slot ranges as `[start, end, ...]`.
pub fn shards_reply(ranges: &[SlotRange]) -> Reply {
    let mut shards: Vec<(&SlotNode, Vec<Reply>)> = Vec::new();
    for r in ranges {
        let Some(master) = r.nodes.first() else {
            continue;
        };
        let bounds = [
            Reply::Int(i64::from(r.first)),
            Reply::Int(i64::from(r.last)),
        ];
        match shards.iter_mut().find(|(n, _)| n.id == master.id) {
            Some((_, slots)) => slots.extend(bounds),
            None => shards.push((master, bounds.into())),
        }
    }
    let text = |s: &str| Reply::bulk(s.to_owned());
    Reply::Array(
        shards
            .into_iter()
            .map(|(n, slots)| {
                let node = Reply::Map(vec![
                    (text("id"), text(&n.id)),
                    (text("port"), Reply::Int(i64::from(n.port))),
                    (text("ip"), text(&n.ip)),
                    (text("endpoint"), text(&n.ip)),
                    (text("role"), text("master")),
                    (text("replication-offset"), Reply::Int(0)),
                    (text("health"), text("online")),
                ]);
                Reply::Map(vec![
                    (text("slots"), Reply::Array(slots)),
                    (text("nodes"), Reply::Array(vec![node])),
                ])
            })
            .collect(),
    )
}

/// READONLY, READWRITE: whether this connection may read replica copies (Redis Cluster's
/// replica reads). Only a cluster node knows them, as in Redis.
pub fn readonly(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    set_readonly(ctx, true)
}

pub fn readwrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    set_readonly(ctx, false)
}

fn set_readonly(ctx: &mut Ctx<'_>, on: bool) -> Reply {
    if ctx.host.cluster().is_none() {
        return err("ERR This instance has cluster support disabled");
    }
    ctx.session.readonly = on;
    ctx.session.info.set_mode(crate::client::READONLY, on);
    Reply::ok()
}

/// ASKING: Redis Cluster clients send it before a command redirected by `-ASK`. Shoal never
/// answers ASK (a slot in transit is served by its new owner, which fetches keys it has not
/// received yet), so the flag changes nothing; it is accepted so those clients work.
pub fn asking(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    if ctx.host.cluster().is_none() {
        return err("ERR This instance has cluster support disabled");
    }
    Reply::ok()
}
