//! MGET, MSET, DEL, UNLINK, EXISTS, TOUCH in a cluster: split by the copies of their keys,
//! the parts run at once (here or forwarded), the replies merged in the client's key order.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::join_all;
use shoal_engine::cmd::{self, CommandSpec, Merge, Session};
use shoal_resp::{array_elements, integer_value, is_error};
use shoal_store::key_slot;

use super::local::run_owned;
use super::outbound::{forward, send_to_copies, FailoverOrder};
use super::outcome::{error_bytes, reply_limit, Outcome, ReplyFuture};
use crate::message::encode_command;
use crate::Server;

/// MGET, MSET, DEL, UNLINK, EXISTS, TOUCH: one part per set of copies, run at once, merged
/// in the client's key order.
pub fn split(
    node: &Arc<Server>,
    session: &mut Session,
    order: &mut FailoverOrder,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
    merge: Merge,
) -> Outcome {
    let step = if merge == Merge::AllOk { 2 } else { 1 };
    if !(args.len() - 1).is_multiple_of(step) {
        // MSET with an odd count: the local handler gives Redis's error.
        return Outcome::Reply(cmd::run(&**node, session, spec, args, now_ms, None));
    }
    let proto = session.proto;
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let view = cluster.view();
    let mut groups: Vec<(&[u16], Vec<usize>)> = Vec::new();
    for pos in (1..args.len()).step_by(step) {
        let owners = view.owners(key_slot(&args[pos]));
        match groups.iter_mut().find(|(o, _)| *o == owners) {
            Some((_, g)) => g.push(pos),
            None => groups.push((owners, vec![pos])),
        }
    }
    if groups.len() == 1 {
        let owners = groups[0].0;
        if owners[0] == view.me {
            return run_owned(node, cluster, &view, session, spec, args, now_ms);
        }
        let owners = owners.to_vec();
        let access = cmd::access(spec, args);
        let body = encode_command(
            proto,
            session.db,
            None,
            args,
            cluster.deadline_ms(),
            reply_limit(session),
        );
        let slots = groups[0].1.iter().map(|&p| key_slot(&args[p])).collect();
        return forward(
            node,
            view.clone(),
            owners,
            body,
            access,
            order.turn(),
            slots,
        );
    }
    let mut positions = Vec::with_capacity(groups.len());
    let mut parts: Vec<ReplyFuture> = Vec::with_capacity(groups.len());
    for (owners, group) in &groups {
        let mut sub = Vec::with_capacity(1 + group.len() * step);
        sub.push(args[0].clone());
        for &p in group {
            sub.extend_from_slice(&args[p..p + step]);
        }
        let part: ReplyFuture = if owners[0] == view.me {
            run_owned(node, cluster, &view, session, spec, &sub, now_ms).into_future(proto)
        } else {
            Box::pin(send_to_copies(
                node.clone(),
                view.clone(),
                owners.to_vec(),
                encode_command(
                    proto,
                    session.db,
                    None,
                    &sub,
                    cluster.deadline_ms(),
                    reply_limit(session),
                ),
                cmd::access(spec, &sub),
                order.turn(),
                group.iter().map(|&p| key_slot(&args[p])).collect(),
            ))
        };
        positions.push(group.clone());
        parts.push(part);
    }
    let keys = (args.len() - 1) / step;
    Outcome::Later(Box::pin(async move {
        let replies = join_all(parts).await;
        merge_parts(merge, keys, step, &positions, &replies)
    }))
}

fn merge_parts(
    merge: Merge,
    keys: usize,
    step: usize,
    positions: &[Vec<usize>],
    replies: &[Bytes],
) -> Bytes {
    if let Some(e) = replies.iter().find(|r| is_error(r)) {
        return e.clone();
    }
    let bad = || error_bytes("ERR unexpected reply from another node");
    match merge {
        Merge::AllOk => Bytes::from_static(b"+OK\r\n"),
        Merge::Sum => {
            let mut sum = 0i64;
            for r in replies {
                match integer_value(r) {
                    Some(n) => sum += n,
                    None => return bad(),
                }
            }
            Bytes::from(format!(":{sum}\r\n"))
        }
        Merge::Values => {
            let mut slots: Vec<&[u8]> = vec![&[]; keys];
            for (group, reply) in positions.iter().zip(replies) {
                let Ok(elements) = array_elements(reply) else {
                    return bad();
                };
                if elements.len() != group.len() {
                    return bad();
                }
                for (&p, range) in group.iter().zip(elements) {
                    slots[(p - 1) / step] = &reply[range];
                }
            }
            let mut out =
                BytesMut::with_capacity(slots.iter().map(|s| s.len()).sum::<usize>() + 16);
            out.put_slice(format!("*{keys}\r\n").as_bytes());
            for s in slots {
                out.put_slice(s);
            }
            out.freeze()
        }
    }
}
