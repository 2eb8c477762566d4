//! A tracking client's commands in a cluster (`shoal_engine::tracking`): what a command
//! sent to another node carries for it ([`carry`]: the client, and whether the owner is to
//! remember this node as a reader of what it reads), the client's reads remembered here
//! when their replies arrive ([`Tracked::arrival`]), and CLIENT TRACKING ... BCAST
//! answering once the other members know its prefixes ([`registered`]).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use shoal_engine::cmd::{self, flag::READONLY, CommandSpec, Route, Session};
use shoal_engine::pubsub::{Invalidation, Message};
use shoal_resp::{is_error, Protocol};

use super::outcome::{Outcome, ReplyFuture};
use crate::message::{from_origin, Origin};
use crate::{Cluster, Server};

/// What a command of `session` carries to the node that runs it, when its client tracks:
/// `reads` tells whether it reads keys (then the owner remembers this node as their reader,
/// unless OPTIN/OPTOUT say otherwise).
pub(super) fn origin(cluster: &Cluster, session: &Session, reads: bool) -> Option<Origin> {
    let t = session.tracking.as_ref()?;
    Some(Origin {
        member: Arc::from(cluster.view_now().myself.name.as_str()),
        client: session.info.id,
        tracks: reads && t.remembers(),
    })
}

/// `body` (a COMMAND) marked with [`origin`] when the client tracks; as it is otherwise.
pub(super) fn carry(cluster: &Cluster, session: &Session, reads: bool, body: Bytes) -> Bytes {
    match origin(cluster, session, reads) {
        Some(o) => from_origin(body, &o),
        None => body,
    }
}

/// True for a command whose keys a tracking client's read remembers.
pub(super) fn reads(spec: &CommandSpec) -> bool {
    spec.flags & READONLY != 0
}

/// A tracking client's read (or EXEC with reads) whose reply is to come: its keys as stored,
/// and the tracker's count of invalidations from other nodes when it was sent.
pub(super) struct Tracked {
    keys: Vec<Bytes>,
    since: u64,
}

/// The keys `args` reads for `session`'s client, if it tracks them (default mode, OPTIN
/// after CACHING YES, OPTOUT but after CACHING NO): a read's keys, or an EXEC's queued
/// reads' keys.
pub(super) fn read_keys(node: &Server, session: &Session, args: &[Bytes]) -> Option<Tracked> {
    if !session.tracking.as_ref()?.remembers() {
        return None;
    }
    let spec = cmd::lookup(&args[0])?;
    let keys = if spec.route == Route::Exec {
        let tx = session.multi.as_ref()?;
        tx.queue
            .iter()
            .filter_map(|a| Some((cmd::lookup(&a[0]).filter(|s| reads(s))?, a)))
            .flat_map(|(s, a)| cmd::db::stored_keys(s, a, session.db))
            .collect()
    } else if reads(spec) {
        cmd::db::stored_keys(spec, args, session.db)
    } else {
        return None;
    };
    if keys.is_empty() {
        return None;
    }
    Some(Tracked {
        keys,
        since: node.engine.tracker.seq(),
    })
}

impl Tracked {
    /// `reply`, after which the read's keys are remembered for the client
    /// ([`shoal_engine::tracking::Tracker::arrived`]); an invalidation from another node
    /// that came before the reply is sent again right behind it (RESP3 on the client's own
    /// connection; a redirect target is told at once).
    pub(super) fn arrival(
        self,
        node: &Arc<Server>,
        session: &Session,
        reply: ReplyFuture,
    ) -> ReplyFuture {
        let node = node.clone();
        let (id, proto) = (session.info.id, session.proto);
        Box::pin(async move {
            let reply = reply.await;
            if is_error(&reply) {
                return reply;
            }
            let engine = &node.engine;
            let (limit, max_keys) = engine.tracking_limits();
            let overtaken =
                engine
                    .tracker
                    .arrived(id, &self.keys, self.since, max_keys, &engine.pubsub, limit);
            if overtaken.is_empty() || proto != Protocol::Resp3 {
                return reply;
            }
            let mut out = BytesMut::from(&reply[..]);
            Message::invalidation(Invalidation::Keys(overtaken))
                .reply(proto)
                .encode(proto, &mut out);
            out.freeze()
        })
    }
}

/// How long CLIENT TRACKING ... BCAST waits for the reachable members to take its prefixes.
const REGISTER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `outcome` of `args`; for a CLIENT TRACKING that left the client in BCAST mode, it comes
/// once the reachable members have this node's prefixes, so a change anywhere right after
/// the reply is told to it (`crate::invalidations`).
pub(super) fn registered(
    node: &Arc<Server>,
    session: &Session,
    args: &[Bytes],
    outcome: Outcome,
) -> Outcome {
    let bcast = session.tracking.as_ref().is_some_and(|t| t.mode.bcast);
    let tracking = args.len() > 2
        && args[0].eq_ignore_ascii_case(b"client")
        && args[1].eq_ignore_ascii_case(b"tracking");
    if !bcast || !tracking || node.cluster.is_none() {
        return outcome;
    }
    let reply = outcome.into_future(session.proto);
    let node = node.clone();
    Outcome::Later(Box::pin(async move {
        if let Some(cluster) = &node.cluster {
            cluster.bcast.wait(&node, REGISTER_WAIT).await;
        }
        reply.await
    }))
}
