//! MGET, MSET, DEL, UNLINK, EXISTS, TOUCH in a cluster: split by the copies of their keys,
//! the parts run at once (here or forwarded), the replies merged in the client's key order.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::join_all;
use shoal_engine::cmd::{self, CommandSpec, Merge, Session};
use shoal_resp::{array_elements, integer_value, is_error};
use shoal_store::key_slot;

use super::local::run_owned;
use super::outbound::{send_in_turn, send_to_copies, share_copies, FailoverOrder, Turn};
use super::outcome::{error_bytes, reply_limit, Outcome, ReplyFuture};
use crate::message::encode_command;
use crate::plan::{Copies, Slots};
use crate::{handoff, Server, View};

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
        let part = Part {
            owners: Copies::from_slice(owners),
            args: args.to_vec(),
            step,
            merge,
            access: cmd::access(spec, args),
            proto,
            db: session.db,
            reply_limit: reply_limit(session),
            origin: super::tracked::origin(cluster, session, super::tracked::reads(spec)),
        };
        return Outcome::Later(Box::pin(part.send(
            node.clone(),
            view.clone(),
            order.turn(),
        )));
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
            let part = Part {
                owners: Copies::from_slice(owners),
                access: cmd::access(spec, &sub),
                args: sub,
                step,
                merge,
                proto,
                db: session.db,
                reply_limit: reply_limit(session),
                origin: super::tracked::origin(cluster, session, super::tracked::reads(spec)),
            };
            Box::pin(part.send(node.clone(), view.clone(), order.turn()))
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

/// The keys of a split command that share their copies on other nodes, as a command of
/// their own.
struct Part {
    owners: Copies,
    /// The command name, then the part's keys (with their values: `step` arguments a key).
    args: Vec<Bytes>,
    step: usize,
    merge: Merge,
    access: cmd::Access,
    proto: shoal_resp::Protocol,
    db: u8,
    reply_limit: u64,
    /// The client tracks (`super::tracked`).
    origin: Option<crate::message::Origin>,
}

impl Part {
    /// Sends the part to its copies. When a copy sends it back because it routes by another
    /// view ([`handoff::OTHER_VIEW`]: it did not run) and, in this node's view of now, the
    /// keys no longer share their copies (a join or leave while the part was on its way), the
    /// router gives up on them as one; each key then goes again on its own, and the part's
    /// reply is merged from theirs (not marked as sent again: a key may go to another node
    /// than the one that sent the part back, whose count of commands to come again on the
    /// slot belongs to other commands; one still held back there comes back and is sent
    /// again, marked, by `send_to_copies`). The part keeps its place in the
    /// connection's order until they are done, so a later command of the pipeline on one of
    /// the keys runs after them. A client would otherwise get TRYAGAIN for a command that
    /// runs a moment later.
    async fn send(self, node: Arc<Server>, view: Arc<View>, mut turn: Turn) -> Bytes {
        let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
        let keys = (self.args.len() - 1) / self.step;
        let slots: Slots = (0..keys)
            .map(|i| key_slot(&self.args[1 + i * self.step]))
            .collect();
        let body = self.encode(&self.args, cluster.deadline_ms(), self.reply_limit);
        let reply = send_in_turn(
            node.clone(),
            view,
            self.owners.clone(),
            body,
            self.access,
            &mut turn,
            slots.clone(),
        )
        .await;
        let view = cluster.view();
        if keys < 2
            || !reply.starts_with(handoff::OTHER_VIEW)
            || share_copies(&view, &slots)
            || cluster.standing() != crate::plan::Standing::Serving
        {
            return reply;
        }
        cluster
            .stats
            .split_resent
            .fetch_add(keys as u64, std::sync::atomic::Ordering::Relaxed);
        // Each key's reply gets its share of the part's limit.
        let limit = match self.reply_limit {
            0 => 0,
            n => (n / keys as u64).max(1),
        };
        let mut order = FailoverOrder::default();
        let singles: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(i, &slot)| {
                let at = 1 + i * self.step;
                let mut one = Vec::with_capacity(1 + self.step);
                one.push(self.args[0].clone());
                one.extend_from_slice(&self.args[at..at + self.step]);
                send_to_copies(
                    node.clone(),
                    view.clone(),
                    Copies::from_slice(view.owners(slot)),
                    self.encode(&one, cluster.deadline_ms(), limit),
                    self.access,
                    order.turn(),
                    Slots::from_slice(&[slot]),
                )
            })
            .collect();
        let replies = join_all(singles).await;
        drop(turn);
        let positions: Vec<Vec<usize>> = (0..keys).map(|i| vec![1 + i * self.step]).collect();
        merge_parts(self.merge, keys, self.step, &positions, &replies)
    }

    fn encode(&self, args: &[Bytes], deadline_ms: u64, reply_limit: u64) -> Bytes {
        let body = encode_command(self.proto, self.db, None, args, deadline_ms, reply_limit);
        match &self.origin {
            Some(o) => crate::message::from_origin(body, o),
            None => body,
        }
    }
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
