//! CLUSTER: the cluster as Redis Cluster tools read it (INFO, NODES, MYID, KEYSLOT,
//! COUNTKEYSINSLOT) plus two Shoal introspection subcommands about this node's own memory
//! (LOCALKEYS, HASKEY). The router sends COUNTKEYSINSLOT to the slot's owner; everything
//! else here describes the node that answers.

use std::fmt::Write as _;

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{key_slot, SLOTS};

use super::{err, unknown_subcommand, wrong_arity, Ctx};
use crate::cluster::MemberState;

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
    let Some(cluster) = &ctx.node.cluster else {
        return err("ERR This instance has cluster support disabled");
    };
    let view = cluster.view();
    match &sub[..] {
        b"keyslot" => Reply::Int(i64::from(key_slot(&args[2]))),
        b"countkeysinslot" => match parse_slot(&args[2]) {
            Some(slot) => Reply::Int(ctx.node.store.count_in_slot(slot) as i64),
            None => err("ERR Invalid slot"),
        },
        b"localkeys" => Reply::Int(ctx.node.store.len() as i64),
        b"haskey" => {
            let exists =
                ctx.node
                    .store
                    .read(&args[2], ctx.now_ms, shoal_store::Access::Peek, |e| {
                        e.is_some()
                    });
            Reply::Int(i64::from(exists))
        }
        b"myid" => Reply::bulk(view.myself.id.clone()),
        b"info" => {
            let mut s = String::new();
            let n = view.len();
            // A slot is "pfail" when its owner looks unreachable but a copy does not, "fail"
            // when no copy looks reachable.
            let (mut pfail, mut fail) = (0, 0);
            for slot in 0..SLOTS {
                let owners = view.owners(slot);
                if !owners.iter().any(|&m| view.reachable(m)) {
                    fail += 1;
                } else if !view.reachable(owners[0]) {
                    pfail += 1;
                }
            }
            let ok = SLOTS - pfail - fail;
            let state = if fail == 0 { "ok" } else { "fail" };
            let _ = write!(
                s,
                "cluster_state:{state}\r\ncluster_slots_assigned:{SLOTS}\r\ncluster_slots_ok:{ok}\r\n\
                 cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{n}\r\n\
                 cluster_size:{n}\r\ncluster_current_epoch:{e}\r\ncluster_my_epoch:{e}\r\n\
                 cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
                 total_cluster_links_buffer_limit_exceeded:0\r\n",
                e = view.epoch()
            );
            if let Some(c) = ctx.node.cluster.as_ref() {
                let h = &c.handoff.stats;
                let _ = write!(
                    s,
                    "shoal_state:{}\r\nshoal_members_known:{}\r\nshoal_settled:{}\r\n\
                     shoal_handoff_slots_pending:{}\r\nshoal_handoff_keys_sent:{}\r\n",
                    c.state_name(),
                    view.members.len(),
                    u8::from(c.handoff.settled_in(&view)),
                    h.slots_pending.load(std::sync::atomic::Ordering::Relaxed),
                    h.keys_sent.load(std::sync::atomic::Ordering::Relaxed),
                );
            }
            Reply::Verbatim(s.into())
        }
        b"nodes" => {
            // Every Shoal node owns some slots and holds replica copies of others, so each
            // is shown as a master with the slot ranges it owns.
            // Members in the placement are shown as masters with the slot ranges they own;
            // Shoal's own states add a flag: `joining` (still filling), `leaving` (handing
            // off, no slots), `fail` (declared down by gossip, no slots).
            let mut s = String::new();
            let me_state = ctx
                .node
                .cluster
                .as_ref()
                .map(|c| c.state_name())
                .unwrap_or("serving");
            for row in &view.members {
                let n = &row.info;
                let placed = view
                    .nodes
                    .iter()
                    .position(|p| p.name == n.name)
                    .filter(|_| row.state.placed());
                let myself = n.name == view.myself.name;
                let up = match placed {
                    Some(i) => view.reachable(i as u16),
                    None => row.state != MemberState::Down,
                };
                let mut flags = String::from(if myself { "myself,master" } else { "master" });
                let state = if myself { me_state } else { row.state.as_str() };
                match state {
                    "joining" => flags.push_str(",joining"),
                    "leaving" => flags.push_str(",leaving"),
                    "down" => flags.push_str(",fail"),
                    _ if !up => flags.push_str(",fail?"),
                    _ => {}
                }
                let link = if up { "connected" } else { "disconnected" };
                let _ = write!(
                    s,
                    "{} {}:{}@{} {flags} - 0 {} {} {link}",
                    n.id,
                    n.client.ip(),
                    n.client.port(),
                    n.cluster.port(),
                    ctx.now_ms,
                    view.epoch()
                );
                if let Some(i) = placed {
                    for (a, b) in view.placement.slot_ranges_of(i) {
                        if a == b {
                            let _ = write!(s, " {a}");
                        } else {
                            let _ = write!(s, " {a}-{b}");
                        }
                    }
                }
                s.push('\n');
            }
            Reply::Verbatim(s.into())
        }
        _ => unknown_subcommand("cluster", &args[1]),
    }
}
