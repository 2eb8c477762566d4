//! CLUSTER: the cluster as Redis Cluster tools read it (INFO, NODES, MYID, KEYSLOT,
//! COUNTKEYSINSLOT) plus two Shoal introspection subcommands about this node's own memory
//! (LOCALKEYS, HASKEY). The router sends COUNTKEYSINSLOT to the slot's owner; everything
//! else here describes the node that answers.

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{key_slot, SLOTS};

use super::{err, unknown_subcommand, wrong_arity, Ctx};

const HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot> (counted at the slot's owner).",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "LOCALKEYS",
    "    Shoal: the number of keys this node holds, its own and its replica copies.",
    "HASKEY <key>",
    "    Shoal: 1 if this node holds a copy of <key>, else 0.",
    "HELP",
    "    Print this help.",
];

/// A slot number argument, as Redis's `getSlotOrReply` accepts it.
pub fn parse_slot(arg: &[u8]) -> Option<u16> {
    let n = super::parse_i64(arg)?;
    u16::try_from(n).ok().filter(|&s| s < SLOTS)
}

pub fn cluster(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    let arity_ok = match &sub[..] {
        b"info" | b"nodes" | b"myid" | b"help" | b"localkeys" => args.len() == 2,
        b"keyslot" | b"countkeysinslot" | b"haskey" => args.len() == 3,
        _ => return unknown_subcommand("cluster", &args[1]),
    };
    if !arity_ok {
        return wrong_arity(&format!("cluster|{}", String::from_utf8_lossy(&sub)));
    }
    if &sub[..] == b"help" {
        return Reply::Array(HELP.iter().map(|l| Reply::Simple((*l).into())).collect());
    }
    let Some(cluster) = ctx.host.cluster() else {
        return err("ERR This instance has cluster support disabled");
    };
    match &sub[..] {
        b"keyslot" => Reply::Int(i64::from(key_slot(&args[2]))),
        b"countkeysinslot" => match parse_slot(&args[2]) {
            Some(slot) => Reply::Int(ctx.engine.store.count_in_slot(slot) as i64),
            None => err("ERR Invalid slot"),
        },
        b"localkeys" => Reply::Int(ctx.engine.store.len() as i64),
        b"haskey" => {
            let exists =
                ctx.engine
                    .store
                    .read(&args[2], ctx.now_ms, shoal_store::Access::Peek, |e| {
                        e.is_some()
                    });
            Reply::Int(i64::from(exists))
        }
        b"myid" => Reply::bulk(cluster.my_id()),
        b"info" => Reply::Verbatim(cluster.cluster_info().into()),
        b"nodes" => Reply::Verbatim(cluster.cluster_nodes(ctx.now_ms).into()),
        _ => unknown_subcommand("cluster", &args[1]),
    }
}
