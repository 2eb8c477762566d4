//! Pub/Sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH, SPUBLISH,
//! PUBSUB. The subscriptions and mailboxes are `crate::pubsub`; these handlers keep a
//! connection's own subscriptions on its session and answer as Redis 7 does. In a cluster,
//! PUBLISH and PUBSUB's counts reach every node (their rows' `Gather`); each node runs this
//! on its own subscribers.

use bytes::Bytes;
use shoal_resp::{Protocol, Reply};

use super::conn::help_reply;
use super::{is, unknown_subcommand, wrong_arity, Ctx, Session};
use crate::pubsub::{Space, Subscriber};

/// The replies of (UN)SUBSCRIBE-like commands: one per name, RESP3 pushes.
fn confirm(kind: &'static [u8], name: Option<Bytes>, count: usize) -> Reply {
    Reply::Push(vec![
        Reply::Bulk(Bytes::from_static(kind)),
        name.map_or(Reply::Nil, Reply::Bulk),
        Reply::Int(count as i64),
    ])
}

/// One reply, or several in a row.
fn replies(mut all: Vec<Reply>) -> Reply {
    if all.len() == 1 {
        all.pop().expect("one")
    } else {
        Reply::Seq(all)
    }
}

/// The count Redis gives after a change in `space`: channels and patterns together, shard
/// channels on their own.
fn count(sub: &Subscriber, space: Space) -> usize {
    match space {
        Space::Shard => sub.count(Space::Shard),
        _ => sub.count(Space::Channel) + sub.count(Space::Pattern),
    }
}

fn subscriber<'s>(ctx: &'s mut Ctx<'_>) -> &'s mut Subscriber {
    let pubsub = ctx.engine.pubsub.clone();
    let session = &mut *ctx.session;
    let info = session.info.clone();
    session
        .pubsub
        .get_or_insert_with(|| Subscriber::new(pubsub, info))
}

fn subscribe_to(ctx: &mut Ctx<'_>, args: &[Bytes], space: Space, kind: &'static [u8]) -> Reply {
    let sub = subscriber(ctx);
    let mut out = Vec::with_capacity(args.len() - 1);
    for name in &args[1..] {
        sub.subscribe(space, name);
        out.push(confirm(kind, Some(name.clone()), count(sub, space)));
    }
    replies(out)
}

fn unsubscribe_from(ctx: &mut Ctx<'_>, args: &[Bytes], space: Space, kind: &'static [u8]) -> Reply {
    let session = &mut *ctx.session;
    let Some(sub) = session.pubsub.as_mut() else {
        // Never subscribed: as Redis, one reply naming nothing (or each name given).
        if args.len() == 1 {
            return confirm(kind, None, 0);
        }
        return replies(
            args[1..]
                .iter()
                .map(|n| confirm(kind, Some(n.clone()), 0))
                .collect(),
        );
    };
    let names = if args.len() == 1 {
        sub.subscribed(space)
    } else {
        args[1..].to_vec()
    };
    if names.is_empty() {
        return confirm(kind, None, count(sub, space));
    }
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        sub.unsubscribe(space, &name);
        out.push(confirm(kind, Some(name), count(sub, space)));
    }
    replies(out)
}

pub fn subscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    subscribe_to(ctx, args, Space::Channel, b"subscribe")
}

pub fn psubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    subscribe_to(ctx, args, Space::Pattern, b"psubscribe")
}

pub fn ssubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    subscribe_to(ctx, args, Space::Shard, b"ssubscribe")
}

pub fn unsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    unsubscribe_from(ctx, args, Space::Channel, b"unsubscribe")
}

pub fn punsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    unsubscribe_from(ctx, args, Space::Pattern, b"punsubscribe")
}

pub fn sunsubscribe(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    unsubscribe_from(ctx, args, Space::Shard, b"sunsubscribe")
}

fn publish_in(ctx: &mut Ctx<'_>, args: &[Bytes], shard: bool) -> Reply {
    let (limit, clients) = ctx.engine.with_settings(|s| {
        let clients = crate::engine::Engine::client_memory_limit_of(s);
        (s.client_output_buffer_limit.pubsub, clients)
    });
    let accounting = (&ctx.engine.clients, clients);
    let n = ctx
        .engine
        .pubsub
        .publish(&args[1], &args[2], shard, limit, accounting);
    // Called by a script (which runs with `no_block`, as EXEC's commands do) the command
    // runs where the script's keys are, not through the router's fan-out (a transaction's
    // PUBLISH never runs inside a cluster node's EXEC: the router sends it out alone): in a
    // cluster the message goes on to the other members' subscribers as keyspace
    // notifications do, and counts this node's receivers only, as Redis Cluster's PUBLISH
    // does (a script's PUBLISH reached only this node's before).
    if ctx.session.no_block && !ctx.replica {
        if let Some(sink) = ctx.engine.event_sink.get() {
            sink.publish(shard, args[1].clone(), args[2].clone());
        }
    }
    Reply::Int(n as i64)
}

pub fn publish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    publish_in(ctx, args, false)
}

pub fn spublish(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    publish_in(ctx, args, true)
}

const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Print this help.",
];

/// PUBSUB CHANNELS | NUMSUB | NUMPAT | SHARDCHANNELS | SHARDNUMSUB | HELP, over this node's
/// subscribers (a cluster adds up every node's: `shoal_cluster`'s fan-out).
pub fn pubsub(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let ps = &ctx.engine.pubsub;
    let sub = &args[1];
    let names = |space| {
        if args.len() > 3 {
            return Reply::error(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(&sub[..sub.len().min(128)])
            ));
        }
        let pattern = args.get(2).map(|p| &p[..]);
        Reply::Array(
            ps.channels(space, pattern)
                .into_iter()
                .map(Reply::Bulk)
                .collect(),
        )
    };
    let counts = |space| {
        let mut out = Vec::with_capacity(2 * (args.len() - 2));
        for name in &args[2..] {
            out.push(Reply::Bulk(name.clone()));
            out.push(Reply::Int(ps.subscribers(space, name) as i64));
        }
        Reply::Array(out)
    };
    if is(sub, "CHANNELS") {
        names(Space::Channel)
    } else if is(sub, "SHARDCHANNELS") {
        names(Space::Shard)
    } else if is(sub, "NUMSUB") {
        counts(Space::Channel)
    } else if is(sub, "SHARDNUMSUB") {
        counts(Space::Shard)
    } else if is(sub, "NUMPAT") {
        if args.len() != 2 {
            return wrong_arity("pubsub|numpat");
        }
        Reply::Int(ps.names(Space::Pattern) as i64)
    } else if is(sub, "HELP") {
        if args.len() != 2 {
            return wrong_arity("pubsub|help");
        }
        help_reply(PUBSUB_HELP)
    } else {
        unknown_subcommand("pubsub", sub)
    }
}

/// True for the PUBSUB subcommands a cluster answers from every node (CHANNELS,
/// SHARDCHANNELS, NUMSUB, SHARDNUMSUB, NUMPAT); HELP and the errors are answered where asked.
pub fn gathers(args: &[Bytes]) -> bool {
    let Some(sub) = args.get(1) else {
        return false;
    };
    let one_of = |names: &[&str]| names.iter().any(|n| is(sub, n));
    (one_of(&["CHANNELS", "SHARDCHANNELS"]) && args.len() <= 3)
        || one_of(&["NUMSUB", "SHARDNUMSUB"])
        || (one_of(&["NUMPAT"]) && args.len() == 2)
}

/// Commands a RESP2 connection may run while it subscribes to something (Redis's rule).
pub fn allowed_while_subscribed(name: &str) -> bool {
    matches!(name, "ping" | "quit" | "reset")
        || subscribes(name.as_bytes())
        || unsubscribes(name.as_bytes())
}

/// SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE (case-insensitive): their confirmations are sent
/// whatever CLIENT REPLY says, before the first message they bring.
pub fn subscribes(name: &[u8]) -> bool {
    [&b"subscribe"[..], b"psubscribe", b"ssubscribe"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

/// UNSUBSCRIBE, PUNSUBSCRIBE or SUNSUBSCRIBE (case-insensitive).
pub fn unsubscribes(name: &[u8]) -> bool {
    [&b"unsubscribe"[..], b"punsubscribe", b"sunsubscribe"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

/// The refusal of `name` (`container|sub` for a subcommand) in a RESP2 subscribed context.
pub fn refused_while_subscribed(full_name: &str) -> Reply {
    Reply::error(format!(
        "ERR Can't execute '{full_name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ))
}

/// True when `session` subscribes to something and speaks RESP2: only the commands of
/// [`allowed_while_subscribed`] run, and PING answers as a message.
pub fn in_subscribed_context(session: &Session) -> bool {
    session.proto == Protocol::Resp2 && session.pubsub.as_ref().is_some_and(|s| s.total() > 0)
}

/// PING in a RESP2 subscribed context: `["pong", message or ""]`.
pub fn subscribed_pong(args: &[Bytes]) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(Bytes::from_static(b"pong")),
        Reply::Bulk(args.get(1).cloned().unwrap_or_default()),
    ])
}
