//! Cluster-wide commands: DBSIZE, KEYS, RANDOMKEY, FLUSHALL/FLUSHDB, SCAN and INFO keyspace;
//! PUBLISH and PUBSUB's counts, which every node answers for its own subscribers.
//!
//! Every member (this node included) runs the command on the part of its local keys it
//! answers for (a `Scope`: at first "the slots I own"); the replies are merged. When a
//! member does not answer, the survivors are asked again with it marked down, so each of
//! its slots is answered once, by its first live replica. The reply is an error only when
//! some slot has no live copy at all.
//!
//! SCAN walks node by node: the cursor holds the member whose slots are being walked
//! (bits 42..52), the member standing in for it when it is down plus one (bits 52..62, 0 =
//! itself), and that node's own store cursor (bits 0..42). A call whose member's walk ends
//! with fewer keys than its COUNT goes on to the next member, so a keyspace smaller than
//! COUNT comes back in one call with cursor 0, as from one Redis.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::join_all;
use shoal_resp::{array_elements, integer_value, is_error, Protocol, Reply};
use shoal_wire::WireError;

use super::local::{serve_command, serve_part_blocking};
use super::outbound::fails_over;
use super::outcome::{encode, error_bytes, Outcome};
use crate::message::{encode_command, ScopeSpec};
use crate::{Cluster, Server, View};
use shoal_engine::clock::now_ms;
use shoal_engine::cmd::{self, CommandSpec, Gather, Route};

const LOCAL_BITS: u32 = 42;
const MEMBER_BITS: u32 = 10;
const MEMBER_MASK: u64 = (1 << MEMBER_BITS) - 1;

/// Starts the fan-out of `spec`, a command whose row routes it to all nodes
/// (`Route::AllNodes`: DBSIZE, KEYS, SCAN, RANDOMKEY, FLUSHALL, FLUSHDB), combining the
/// answers as the row says.
pub fn start(
    node: &Arc<Server>,
    _cluster: &Cluster,
    spec: &CommandSpec,
    args: &[Bytes],
    proto: Protocol,
    db: u8,
) -> Outcome {
    let node = node.clone();
    let args = args.to_vec();
    let Route::AllNodes(how) = spec.route else {
        return Outcome::Reply(Reply::error(format!(
            "ERR '{}' does not run on every node",
            spec.name
        )));
    };
    if how == Gather::Publish {
        return publish(&node, args, proto, db);
    }
    Outcome::Later(Box::pin(async move {
        match how {
            Gather::Publish => unreachable!("answered above"),
            Gather::PubSub => pubsub(&node, &args, proto, db).await,
            Gather::Scan => scan(&node, &args, proto, db).await,
            Gather::Flush => flush(&node, &args, proto, db, None).await,
            Gather::Everywhere(_) => everywhere(&node, &args, proto, db, None).await,
            Gather::Setting(names) => setting(&node, &args, names, proto, db).await,
            Gather::Sum | Gather::Concat | Gather::Random => {
                match gather(&node, &args, proto, db).await {
                    Err(e) => e,
                    Ok(replies) => match how {
                        Gather::Sum => sum(&replies),
                        Gather::Concat => concat(&replies),
                        _ => pick_random(&replies, proto),
                    },
                }
            }
        }
    }))
}

/// Whether `args` (of row `spec`) is a cluster-wide change a transaction run command by
/// command makes in its place: FLUSHALL, FLUSHDB, SCRIPT LOAD | FLUSH, FUNCTION LOAD | ...,
/// ACL SETUSER | DELUSER. Run as a fan-out, it would take effect after the transaction's
/// commands run on this node (so `MULTI; FLUSHALL; SET k v; EXEC` lost `k`); run here
/// first ([`after_here`]), only the other members wait.
pub fn changes_in_place(spec: &CommandSpec, args: &[Bytes]) -> bool {
    match spec.route {
        Route::AllNodes(Gather::Flush) => true,
        Route::AllNodes(Gather::Everywhere(subs)) => {
            cmd::names_subcommand(subs, args)
                && !is_sub(args, "script", "kill")
                && !is_sub(args, "function", "kill")
        }
        _ => false,
    }
}

/// The rest of a [`changes_in_place`] command that ran here already and answered `mine`: the
/// other members, combined with it as the fan-out would.
pub fn after_here(
    node: &Arc<Server>,
    spec: &CommandSpec,
    args: &[Bytes],
    proto: Protocol,
    db: u8,
    mine: Bytes,
) -> Outcome {
    let node = node.clone();
    let args = args.to_vec();
    match spec.route {
        Route::AllNodes(Gather::Flush) => Outcome::Later(Box::pin(async move {
            flush(&node, &args, proto, db, Some(mine)).await
        })),
        Route::AllNodes(Gather::Everywhere(_)) => Outcome::Later(Box::pin(async move {
            everywhere(&node, &args, proto, db, Some(mine)).await
        })),
        _ => Outcome::Later(Box::pin(async move { mine })),
    }
}

/// PUBLISH, SPUBLISH: delivered to this node's subscribers now (so one of this connection
/// sees it before the reply, as on a single node), then sent to every other member, whose
/// receivers are added in. Each member's messages from one connection arrive in the order
/// it published them: they travel on the worker's one link to that member, and the member
/// runs them in arrival order. A member that cannot be reached (or an older one that does
/// not know the command) counts no receivers: Pub/Sub is fire and forget, as in Redis.
fn publish(node: &Arc<Server>, args: Vec<Bytes>, proto: Protocol, db: u8) -> Outcome {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    let view = cluster.view();
    let (here, _, _) = serve_command(
        node,
        cluster,
        &view,
        &cluster.internal,
        proto,
        db,
        None,
        &args,
        now_ms(),
        0,
        None,
    );
    let local = integer_value(&here).unwrap_or(0);
    if view.len() <= 1 {
        return Outcome::Reply(Reply::Int(local));
    }
    let node = node.clone();
    Outcome::Later(Box::pin(async move {
        let others: Vec<u16> = (0..view.len() as u16).filter(|&m| m != view.me).collect();
        let asks = others
            .iter()
            .map(|&m| ask(&node, &view, m, proto, db, None, &args));
        let mut total = local;
        for (&m, r) in others.iter().zip(join_all(asks).await) {
            let why = match r.map(|b| integer_value(&b)) {
                Ok(Some(n)) => {
                    total += n;
                    continue;
                }
                // It answered without running it (cut off from its cluster, the request
                // past its deadline, an older version).
                Ok(None) => "the member did not run it".to_string(),
                Err(e) => e.to_string(),
            };
            // Fire and forget, as in Redis, but not silently: a member out of reach, a link
            // over its window (`Overloaded`) or a refusal loses it there.
            let stats = &node.cluster.as_ref().expect("in a cluster").stats;
            let n = stats
                .pubsub_undelivered
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            if n.is_power_of_two() {
                tracing::warn!(node = %view.nodes[usize::from(m)].name, error = %why, undelivered = n, "published messages did not reach a member");
            }
        }
        Bytes::from(format!(":{total}\r\n"))
    }))
}

/// Keyspace notifications this node published, and messages its scripts published (the
/// cluster's event sink; each is (shard channel, channel, message)), for the subscribers of
/// the member named `member`: one PUBLISH (or SPUBLISH) each, in order on the link (as
/// `publish` sends them). Those that do not reach it (it left the view, is out of reach, or
/// its link is over its window) are counted in `pubsub_undelivered`, as a PUBLISH's.
pub async fn publish_to(node: &Arc<Server>, member: &str, events: &[(bool, Bytes, Bytes)]) {
    let cluster = node.cluster.as_ref().expect("in a cluster");
    let view = cluster.view();
    let found =
        (0..view.len() as u16).find(|&m| m != view.me && view.nodes[usize::from(m)].name == member);
    let lost = match found {
        None => events.len(),
        Some(m) => {
            let asks = events.iter().map(|(shard, channel, message)| {
                let publish = Bytes::from_static(if *shard { b"SPUBLISH" } else { b"PUBLISH" });
                let args = [publish, channel.clone(), message.clone()];
                let (node, view) = (node.clone(), view.clone());
                async move { ask(&node, &view, m, Protocol::Resp2, 0, None, &args).await }
            });
            join_all(asks)
                .await
                .into_iter()
                .filter(|r| !matches!(r, Ok(b) if integer_value(b).is_some()))
                .count()
        }
    };
    if lost > 0 {
        let n = cluster
            .stats
            .pubsub_undelivered
            .fetch_add(lost as u64, std::sync::atomic::Ordering::Relaxed)
            + lost as u64;
        tracing::debug!(
            member,
            lost,
            undelivered = n,
            "keyspace notifications did not reach a member"
        );
    }
}

/// PUBSUB CHANNELS, SHARDCHANNELS (the union), NUMSUB, SHARDNUMSUB (the counts added up
/// per channel) and NUMPAT (the sum: a pattern subscribed on two nodes counts twice) over
/// every reachable member.
async fn pubsub(node: &Arc<Server>, args: &[Bytes], proto: Protocol, db: u8) -> Bytes {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    let view = cluster.view();
    let asks = (0..view.len() as u16).map(|m| ask(node, &view, m, proto, db, None, args));
    let mut replies = Vec::with_capacity(view.len());
    for (m, r) in join_all(asks).await.into_iter().enumerate() {
        match r {
            // This node's own error is the client's (another's: an older version that does
            // not know PUBSUB, counted as out of reach).
            Ok(b) if is_error(&b) && m == usize::from(view.me) => return b,
            Ok(b) if is_error(&b) => {}
            Ok(b) => replies.push(b),
            // Subscribers on a member out of reach are not counted.
            Err(_) => {}
        }
    }
    let sub = &args[1];
    if sub.eq_ignore_ascii_case(b"numpat") {
        return sum(&replies);
    }
    let mut names: Vec<Bytes> = Vec::new();
    let mut counts: Vec<i64> = Vec::new();
    let counting = sub.eq_ignore_ascii_case(b"numsub") || sub.eq_ignore_ascii_case(b"shardnumsub");
    for r in &replies {
        let Ok(elements) = array_elements(r) else {
            return error_bytes("ERR unexpected reply from another node");
        };
        if counting {
            // [channel, count, ...] in the order asked, the same from every member.
            for (i, e) in elements.iter().enumerate().skip(1).step_by(2) {
                let n = integer_value(&r[e.clone()]).unwrap_or(0);
                match counts.get_mut(i / 2) {
                    Some(c) => *c += n,
                    None => counts.push(n),
                }
            }
        } else {
            for e in elements {
                let name = r.slice(e);
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    if counting {
        let mut out = Vec::with_capacity(2 * counts.len());
        for (name, n) in args[2..].iter().zip(counts) {
            out.push(Reply::Bulk(name.clone()));
            out.push(Reply::Int(n));
        }
        return encode(&Reply::Array(out), proto);
    }
    let mut out = BytesMut::new();
    out.put_slice(format!("*{}\r\n", names.len()).as_bytes());
    for n in names {
        out.put_slice(&n);
    }
    out.freeze()
}

/// Runs `args` on member `m` with `scope`; `Err` when it cannot be reached.
async fn ask(
    node: &Arc<Server>,
    view: &Arc<View>,
    m: u16,
    proto: Protocol,
    db: u8,
    scope: Option<ScopeSpec>,
    args: &[Bytes],
) -> Result<Bytes, WireError> {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    if let (true, Some(scope)) = (m == view.me, &scope) {
        // This node's part of a read over a scope may walk the whole store.
        let part = serve_part_blocking(
            node.clone(),
            view.clone(),
            proto,
            db,
            scope.clone(),
            args.to_vec(),
        );
        return Ok(part
            .await
            .unwrap_or_else(|| error_bytes("ERR internal error in a fan-out part")));
    }
    if m == view.me {
        let (bytes, _, _) = serve_command(
            node,
            cluster,
            view,
            &cluster.internal,
            proto,
            db,
            scope,
            args,
            now_ms(),
            0,
            None,
        );
        return Ok(bytes);
    }
    let Some(peer) = view.peer(m) else {
        return Err(WireError::PeerUnavailable(
            shoal_wire::Unavailable::Shutdown,
        ));
    };
    let body = encode_command(proto, db, scope.as_ref(), args, cluster.deadline_ms(), 0);
    peer.request(view.id, body).await.map(|r| r.body)
}

/// Asks every live member for its part; see the module docs.
async fn gather(
    node: &Arc<Server>,
    args: &[Bytes],
    proto: Protocol,
    db: u8,
) -> Result<Vec<Bytes>, Bytes> {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    let view = cluster.view();
    let mut down: Vec<u16> = Vec::new();
    loop {
        let scope = ScopeSpec {
            owners: Vec::new(),
            down: down.clone(),
        };
        let members: Vec<u16> = (0..view.len() as u16)
            .filter(|m| !down.contains(m))
            .collect();
        let asks = members
            .iter()
            .map(|&m| ask(node, &view, m, proto, db, Some(scope.clone()), args));
        let results = join_all(asks).await;
        let mut replies = Vec::with_capacity(results.len());
        let mut failed = Vec::new();
        for (&m, r) in members.iter().zip(results) {
            match r {
                Ok(b) if is_error(&b) => return Err(b),
                Ok(b) => replies.push(b),
                // An unreachable member counts as down: its slots are asked of its replicas.
                Err(e) if fails_over(&e, true) => failed.push(m),
                Err(e) => return Err(error_bytes(&format!("ERR fan-out failed: {e}"))),
            }
        }
        if failed.is_empty() {
            return Ok(replies);
        }
        down.extend(failed);
        if slot_without_copy(&view, &down) {
            return Err(error_bytes("CLUSTERDOWN some slots have no reachable copy"));
        }
    }
}

/// True if every copy of some slot is in `down`.
fn slot_without_copy(view: &View, down: &[u16]) -> bool {
    (0..shoal_store::SLOTS).any(|s| view.owners(s).iter().all(|m| down.contains(m)))
}

fn sum(replies: &[Bytes]) -> Bytes {
    let total: i64 = replies.iter().filter_map(|r| integer_value(r)).sum();
    Bytes::from(format!(":{total}\r\n"))
}

fn concat(replies: &[Bytes]) -> Bytes {
    let mut n = 0;
    let mut body = BytesMut::new();
    for r in replies {
        let Ok(elements) = array_elements(r) else {
            return error_bytes("ERR unexpected reply from another node");
        };
        n += elements.len();
        for e in elements {
            body.put_slice(&r[e]);
        }
    }
    let mut out = BytesMut::with_capacity(body.len() + 16);
    out.put_slice(format!("*{n}\r\n").as_bytes());
    out.put_slice(&body);
    out.freeze()
}

/// RANDOMKEY: one of the members' random keys, chosen at random.
fn pick_random(replies: &[Bytes], proto: Protocol) -> Bytes {
    let found: Vec<&Bytes> = replies
        .iter()
        .filter(|r| r.first() == Some(&b'$') && !r.starts_with(b"$-1"))
        .collect();
    if found.is_empty() {
        return encode(&Reply::Nil, proto);
    }
    let i = (now_ms() as usize ^ found.len().wrapping_mul(0x9e37_79b9)) % found.len();
    found[i].clone()
}

/// SCRIPT LOAD | FLUSH, FUNCTION LOAD | DELETE | RESTORE | FLUSH, ACL SETUSER | DELUSER:
/// every member runs it (a script or library loaded or flushed everywhere, so an EVALSHA
/// or FCALL forwarded to any owner finds it; a user known to every node). This node first,
/// whose answer is the client's: an error there (a library that exists, a syntax error, a
/// refused rule) reaches no other member. The others then run it in the form that makes
/// them agree with this node ([`follow_form`]; an ACL SETUSER goes as `acl.follow`, with
/// the user's whole rules as this node has them for a member that lacks the user); the
/// first error of theirs is the answer. A member out of reach
/// is left out (a script it lacks answers NOSCRIPT there, and the client loads it again; a
/// library or user it lacks is copied when it starts again, see `copies`).
async fn everywhere(
    node: &Arc<Server>,
    args: &[Bytes],
    proto: Protocol,
    db: u8,
    ran_here: Option<Bytes>,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    let view = cluster.view();
    if is_sub(args, "script", "kill") || is_sub(args, "function", "kill") {
        return kill_anywhere(node, &view, args, proto, db).await;
    }
    let mine = match here_first(node, &view, args, proto, db, ran_here).await {
        Ok(b) => b,
        Err(reply) => return reply,
    };
    let (mut follow, ignored) = follow_form(args);
    if is_sub(args, "acl", "setuser") {
        // A member that has the user applies the client's rules, as this node did (two
        // SETUSERs through two nodes at once then add up alike everywhere); one that lacks
        // it (it was out of reach, or is copying) takes the whole user as this node has it.
        let ask_rules = [Bytes::from_static(b"acl.rules"), args[2].clone()];
        if let Ok(rules) = ask(node, &view, view.me, Protocol::Resp2, 0, None, &ask_rules).await {
            if let Ok(elements) = array_elements(&rules) {
                let client_rules = &args[3..];
                follow = vec![
                    Bytes::from_static(b"acl.follow"),
                    args[2].clone(),
                    Bytes::from(client_rules.len().to_string()),
                ];
                follow.extend(client_rules.iter().cloned());
                follow.extend(
                    elements
                        .into_iter()
                        .filter_map(|e| bulk_value(&rules.slice(e))),
                );
            }
        }
    }
    on_others(node, &view, args, &follow, ignored, proto, db)
        .await
        .unwrap_or(mine)
}

/// This node's answer to `args` (`ran_here` when it ran in its place already, else asked
/// now): `Err` with the reply to give when it is an error or did not run.
async fn here_first(
    node: &Arc<Server>,
    view: &Arc<View>,
    args: &[Bytes],
    proto: Protocol,
    db: u8,
    ran_here: Option<Bytes>,
) -> Result<Bytes, Bytes> {
    let mine = match ran_here {
        Some(b) => Ok(b),
        None => ask(node, view, view.me, proto, db, None, args).await,
    };
    match mine {
        Ok(b) if is_error(&b) => Err(b),
        Ok(b) => Ok(b),
        Err(_) => Err(error_bytes("ERR the command did not run on this node")),
    }
}

/// `follow` (what the client's `args` became for the others) on every other member, side by
/// side: the first error one gives (but one starting with `ignored`), if any; a member out
/// of reach is logged and left out. A member of an earlier release that knows no internal
/// `follow` command (`acl.follow`) gets the client's command.
async fn on_others(
    node: &Arc<Server>,
    view: &Arc<View>,
    args: &[Bytes],
    follow: &[Bytes],
    ignored: Option<&[u8]>,
    proto: Protocol,
    db: u8,
) -> Option<Bytes> {
    let others = (0..view.len() as u16).filter(|&m| m != view.me);
    let asks = others.map(|m| async move {
        let mut r = ask(node, view, m, proto, db, None, follow).await;
        if follow[0] != args[0] && matches!(&r, Ok(b) if b.starts_with(b"-ERR unknown command")) {
            r = ask(node, view, m, proto, db, None, args).await;
        }
        (m, r)
    });
    for (m, r) in join_all(asks).await {
        match r {
            Ok(b) if is_error(&b) && !ignored.is_some_and(|e| b.starts_with(e)) => return Some(b),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(node = %view.nodes[usize::from(m)].name, command = %String::from_utf8_lossy(&args[0]), error = %e, "a cluster-wide change did not reach a node");
            }
        }
    }
    None
}

/// CONFIG SET of settings every member shares ([`Gather::Setting`]): the whole command
/// here; then, once it took them, `names`' settings with the client's values on every other
/// member, each waited for (so an event right after the reply is published wherever its key
/// is). This node's reply, or the first error a member gave; a member out of reach keeps
/// its setting (logged).
async fn setting(
    node: &Arc<Server>,
    args: &[Bytes],
    names: &[&str],
    proto: Protocol,
    db: u8,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    let view = cluster.view();
    let mine = match here_first(node, &view, args, proto, db, None).await {
        Ok(b) => b,
        Err(reply) => return reply,
    };
    let mut follow = vec![args[0].clone(), args[1].clone()];
    for pair in args[2..].chunks(2) {
        if let [name, value] = pair {
            if names
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
            {
                follow.extend([name.clone(), value.clone()]);
            }
        }
    }
    on_others(node, &view, args, &follow, None, proto, db)
        .await
        .unwrap_or(mine)
}

/// SCRIPT KILL / FUNCTION KILL on every member: a script runs on the owner of its keys,
/// which need not be the node the client asks. OK when one member killed its script (Redis
/// Cluster's `one_succeeded`), else the first refusal other than NOTBUSY (UNKILLABLE, BUSY
/// for the other kind); else, when a member did not answer in time, an error saying so (its
/// link may be served by the very worker that runs its script, which answers nothing until
/// the script ends: a new connection usually takes another link); else NOTBUSY.
async fn kill_anywhere(
    node: &Arc<Server>,
    view: &Arc<View>,
    args: &[Bytes],
    proto: Protocol,
    db: u8,
) -> Bytes {
    let asks = (0..view.len() as u16).map(|m| ask(node, view, m, proto, db, None, args));
    let results = join_all(asks).await;
    let unreached = results.iter().any(Result::is_err);
    let replies: Vec<Bytes> = results.into_iter().flatten().collect();
    let refusal = |b: &&Bytes| is_error(b) && !b.starts_with(b"-NOTBUSY");
    if let Some(reply) = replies
        .iter()
        .find(|b| !is_error(b))
        .or_else(|| replies.iter().find(refusal))
    {
        return reply.clone();
    }
    if unreached {
        return error_bytes(
            "ERR a node did not answer the kill in time (a busy script may hold its link); \
             try again on a new connection",
        );
    }
    replies
        .first()
        .cloned()
        .unwrap_or_else(|| error_bytes(shoal_engine::busy::NOTBUSY))
}

/// How the other members run a SCRIPT or FUNCTION command that succeeded on this node, and
/// the error of theirs that means they agree already. A member that started may have
/// copied a library just loaded here (`copies`), or not yet have one deleted here:
/// FUNCTION LOAD and RESTORE replace there (this node checked the names), and a DELETE of
/// a library a member lacks is no error.
fn follow_form(args: &[Bytes]) -> (Vec<Bytes>, Option<&'static [u8]>) {
    let mut follow = args.to_vec();
    let sub = |name: &str| is_sub(args, "function", name);
    let replace = Bytes::from_static(b"REPLACE");
    if sub("load") {
        // FUNCTION LOAD [REPLACE] code.
        if !(args.len() > 3 && args[2].eq_ignore_ascii_case(b"replace")) {
            follow.insert(2, replace);
        }
    } else if sub("restore") {
        // FUNCTION RESTORE payload [FLUSH | APPEND | REPLACE]: APPEND (the default) replaces.
        match args.get(3) {
            None => follow.push(replace),
            Some(p) if p.eq_ignore_ascii_case(b"append") => follow[3] = replace,
            Some(_) => {}
        }
    } else if sub("delete") {
        return (follow, Some(b"-ERR Library not found"));
    }
    (follow, None)
}

/// True if `args` are the command `container` with subcommand `sub`.
fn is_sub(args: &[Bytes], container: &str, sub: &str) -> bool {
    args.len() > 1
        && args[0].eq_ignore_ascii_case(container.as_bytes())
        && args[1].eq_ignore_ascii_case(sub.as_bytes())
}

/// What a node that starts in a cluster copies from another member (`copies`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copied {
    /// The function libraries (FUNCTION DUMP's payload).
    Functions,
    /// The ACL users (an ACL file's text).
    Users,
}

impl Copied {
    /// The internal commands that ask a member for its copy, and that adopt it here.
    fn commands(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Copied::Functions => (b"function.copy", b"function.adopt"),
            Copied::Users => (b"acl.copy", b"acl.adopt"),
        }
    }

    /// True if a member's copy holds nothing to take: a FUNCTION DUMP payload of no
    /// library is its version and checksum alone; users are there beside `default`.
    fn is_empty(self, payload: &[u8]) -> bool {
        match self {
            Copied::Functions => payload.len() <= 10,
            Copied::Users => payload
                .split(|&b| b == b'\n')
                .all(|line| line.is_empty() || line.starts_with(b"user default ")),
        }
    }
}

/// Copies the function libraries or the users of another member into this node (an
/// internal `function.copy` or `acl.copy` there, `function.adopt` or `acl.adopt` here,
/// which leave out what changed here meanwhile): true once done, false to be tried again.
///
/// The first member that has some is copied. Done without a copy when every other member
/// answered and none had any: each was starting too (LOADING: the whole cluster started
/// again), had none, or is of a release without them (unknown command); or when this node
/// serves alone. A member out of reach, another error, or a copy that cannot be adopted
/// here leaves it to the next round.
pub async fn copy_from_member(node: &Arc<Server>, what: Copied) -> bool {
    let Some(cluster) = node.cluster.as_ref() else {
        return true;
    };
    let view = cluster.view();
    let others: Vec<u16> = (0..view.len() as u16).filter(|&m| m != view.me).collect();
    if others.is_empty() {
        // Alone: done once serving alone; a node still joining waits for its cluster.
        return cluster.accepting.load(std::sync::atomic::Ordering::Acquire);
    }
    let (copy, adopt) = what.commands();
    let ask_copy = [Bytes::from_static(copy)];
    let mut answered = true;
    for &m in &others {
        let Ok(reply) = ask(node, &view, m, Protocol::Resp2, 0, None, &ask_copy).await else {
            answered = false;
            continue;
        };
        if reply.starts_with(b"-LOADING") || reply.starts_with(b"-ERR unknown command") {
            continue;
        }
        let Some(payload) = bulk_value(&reply) else {
            answered = false;
            continue;
        };
        if what.is_empty(&payload) {
            continue;
        }
        let name = &view.nodes[usize::from(m)].name;
        let adopt = [Bytes::from_static(adopt), payload];
        return match ask(node, &view, view.me, Protocol::Resp2, 0, None, &adopt).await {
            Ok(r) if !is_error(&r) => {
                let n = integer_value(&r).unwrap_or(0);
                tracing::info!(from = %name, ?what, adopted = n, "copied from another node");
                true
            }
            Ok(r) => {
                let e = String::from_utf8_lossy(&r).trim_end().to_string();
                tracing::warn!(from = %name, ?what, error = %e, "could not adopt another node's copy");
                false
            }
            Err(e) => {
                tracing::warn!(?what, error = %e, "could not adopt another node's copy");
                false
            }
        };
    }
    answered
}

/// The bytes of a RESP bulk string reply.
fn bulk_value(reply: &Bytes) -> Option<Bytes> {
    let rest = reply.strip_prefix(b"$")?;
    let end = rest.iter().position(|&b| b == b'\r')?;
    let len = usize::try_from(shoal_resp::string2ll(&rest[..end])?).ok()?;
    let start = 1 + end + 2;
    (reply.len() >= start + len).then(|| reply.slice(start..start + len))
}

/// FLUSHALL / FLUSHDB: every member flushes everything it holds. `+OK` only when every
/// member confirmed; otherwise an error naming the members that did not (the others did
/// flush).
///
/// Each member refuses, from its flush on, replicated states older than a floor above
/// every version it handed out or saw, and writes above it. Then every member is raised to
/// the greatest floor (two more rounds of `cluster.floor`), before the reply: a write from
/// before the flush is refused everywhere, one after it taken everywhere, even when the
/// members' clocks differ (a node behind would otherwise write below a replica's floor, one
/// ahead replicate pre-flush writes above it). Memcached's flush_all has one round: a delayed
/// one flushes every node at the same absolute time, its floor.
async fn flush(
    node: &Arc<Server>,
    args: &[Bytes],
    proto: Protocol,
    db: u8,
    ran_here: Option<Bytes>,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    let view = cluster.view();
    let view_ref = &view;
    let asks = (0..view.len() as u16).map(|m| {
        let here = ran_here.clone().filter(|_| m == view_ref.me);
        async move {
            match here {
                Some(b) => Ok(b),
                None => ask(node, view_ref, m, proto, db, None, args).await,
            }
        }
    });
    let results = join_all(asks).await;
    let mut missed = Vec::new();
    for (m, r) in results.into_iter().enumerate() {
        match r {
            Ok(b) if is_error(&b) => return b,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(node = %view.nodes[m].name, error = %e, "flush did not reach node");
                missed.push(view.nodes[m].name.clone());
            }
        }
    }
    // The version floor: every database's after FLUSHALL, the flushed one's after FLUSHDB.
    let one_db = args[0].eq_ignore_ascii_case(b"flushdb").then_some(db);
    if !args[0].eq_ignore_ascii_case(b"mc.flush") {
        let reached: Vec<u16> = (0..view.len() as u16)
            .filter(|&m| !missed.contains(&view.nodes[usize::from(m)].name))
            .collect();
        // First every member's floor, then every member raised to the greatest. A member
        // that does not answer here flushed, but may keep a lower floor and clock: the
        // reply names it as one that did not confirm.
        let mut top = 0;
        for _round in 0..2 {
            let mut raise = vec![
                Bytes::from_static(b"cluster.floor"),
                Bytes::from(top.to_string()),
            ];
            raise.extend(one_db.map(|db| Bytes::from(db.to_string())));
            let asks = reached
                .iter()
                .map(|&m| ask(node, &view, m, Protocol::Resp2, 0, None, &raise));
            for (&m, r) in reached.iter().zip(join_all(asks).await) {
                match r.ok().and_then(|b| integer_value(&b)) {
                    Some(floor) => top = top.max(floor),
                    None => {
                        let name = &view.nodes[usize::from(m)].name;
                        if !missed.contains(name) {
                            tracing::warn!(node = %name, "flush floor did not reach node");
                            missed.push(name.clone());
                        }
                    }
                }
            }
        }
    }
    if missed.is_empty() {
        Bytes::from_static(b"+OK\r\n")
    } else {
        error_bytes(&format!(
            "CLUSTERDOWN {} did not confirm the flush (every other node flushed)",
            missed.join(", ")
        ))
    }
}

/// SCAN across the cluster; see the module docs for the cursor.
async fn scan(node: &Arc<Server>, args: &[Bytes], proto: Protocol, db: u8) -> Bytes {
    let cluster = node.cluster.as_ref().expect("fan-out runs in a cluster");
    let view = cluster.view();
    let Some(cursor) = shoal_engine::cmd::cursor_value(&args[1]) else {
        return error_bytes("ERR invalid cursor");
    };
    let mut local = cursor & ((1 << LOCAL_BITS) - 1);
    let mut target = ((cursor >> LOCAL_BITS) & MEMBER_MASK) as u16;
    let mut stand_in = ((cursor >> (LOCAL_BITS + MEMBER_BITS)) & MEMBER_MASK) as u16;
    let members = view.len() as u16;
    if target >= members || stand_in > members {
        return scan_reply(0, b"*0\r\n");
    }
    let mut sub: Vec<Bytes> = args.to_vec();
    // The keys gathered so far (each an encoded element), and how many a call should have
    // (its COUNT; Redis's default 10).
    let want = scan_count(args);
    let (mut gathered, mut n) = (BytesMut::new(), 0usize);
    let answer = |cursor: u64, gathered: &BytesMut, n: usize| {
        let mut keys = BytesMut::with_capacity(gathered.len() + 16);
        keys.put_slice(format!("*{n}\r\n").as_bytes());
        keys.put_slice(gathered);
        scan_reply(cursor, &keys)
    };
    loop {
        let (who, scope) = if stand_in == 0 {
            (
                target,
                ScopeSpec {
                    owners: vec![target],
                    down: Vec::new(),
                },
            )
        } else {
            (
                stand_in - 1,
                ScopeSpec {
                    owners: vec![target],
                    down: vec![target],
                },
            )
        };
        sub[1] = Bytes::from(local.to_string());
        match ask(node, &view, who, proto, db, Some(scope), &sub).await {
            Ok(reply) if is_error(&reply) => return reply,
            Ok(reply) => {
                let Some((next, keys)) = split_scan_reply(&reply) else {
                    return error_bytes("ERR unexpected SCAN reply from another node");
                };
                let Ok(elements) = array_elements(keys) else {
                    return error_bytes("ERR unexpected SCAN reply from another node");
                };
                n += elements.len();
                for e in elements {
                    gathered.put_slice(&keys[e]);
                }
                if next != 0 {
                    local = next;
                } else {
                    local = 0;
                    if stand_in == 0 {
                        target += 1;
                    } else {
                        // The next stand-in for a down target, or the next target.
                        stand_in = next_stand_in(stand_in, target, members);
                        if stand_in == 0 {
                            target += 1;
                        }
                    }
                    if target >= members {
                        return answer(0, &gathered, n);
                    }
                }
                let c = local
                    | (u64::from(target) << LOCAL_BITS)
                    | (u64::from(stand_in) << (LOCAL_BITS + MEMBER_BITS));
                // A member's walk ended short of COUNT: on to the next one in this call.
                if local == 0 && n < want {
                    continue;
                }
                return answer(c, &gathered, n);
            }
            Err(e) if fails_over(&e, true) && stand_in == 0 => {
                // The target is down: walk its slots on the other members instead, if they
                // hold copies of them.
                if slot_without_copy(&view, &[target]) {
                    return error_bytes("CLUSTERDOWN no copy of some slots is reachable");
                }
                local = 0;
                stand_in = next_stand_in(0, target, members);
                if stand_in == 0 {
                    return error_bytes("CLUSTERDOWN no copy of some slots is reachable");
                }
            }
            Err(e) => {
                return error_bytes(&format!(
                    "CLUSTERDOWN SCAN cannot reach node {}: {e}",
                    view.nodes[usize::from(who)].name
                ))
            }
        }
    }
}

/// SCAN's COUNT (the last one given; 10 without one, as in Redis).
fn scan_count(args: &[Bytes]) -> usize {
    let mut count = 10;
    for pair in args.get(2..).unwrap_or(&[]).chunks_exact(2) {
        if pair[0].eq_ignore_ascii_case(b"count") {
            if let Some(n) = std::str::from_utf8(&pair[1])
                .ok()
                .and_then(|s| s.parse::<usize>().ok())
            {
                count = n;
            }
        }
    }
    count
}

/// The stand-in after `current` (member index + 1, 0 = none left), skipping `target`.
fn next_stand_in(current: u16, target: u16, members: u16) -> u16 {
    let mut next = current + 1;
    while next <= members {
        if next - 1 != target {
            return next;
        }
        next += 1;
    }
    0
}

/// (next cursor, raw key array) of a SCAN reply.
fn split_scan_reply(reply: &[u8]) -> Option<(u64, &[u8])> {
    let elements = array_elements(reply).ok()?;
    if elements.len() != 2 {
        return None;
    }
    let cursor = &reply[elements[0].clone()];
    // `$<len>\r\n<digits>\r\n`
    let start = cursor.iter().position(|&b| b == b'\n')? + 1;
    let digits = cursor.get(start..cursor.len().checked_sub(2)?)?;
    let next = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((next, &reply[elements[1].clone()]))
}

fn scan_reply(cursor: u64, keys: &[u8]) -> Bytes {
    let c = cursor.to_string();
    let mut out = BytesMut::with_capacity(keys.len() + 32);
    out.put_slice(format!("*2\r\n${}\r\n{c}\r\n", c.len()).as_bytes());
    out.put_slice(keys);
    out.freeze()
}

/// INFO with the keyspace section: the cluster-wide key counts of each database (each key
/// counted once, at the node that answers for it: `cluster.keyspace` over a fan-out's
/// scope) in place of this node's own.
pub fn info(node: &Arc<Server>, args: &[Bytes], proto: Protocol, session_id: u64) -> Outcome {
    let node = node.clone();
    let args = args.to_vec();
    Outcome::Later(Box::pin(async move {
        let ask = [Bytes::from_static(b"cluster.keyspace")];
        // Without every answer INFO still answers (monitoring needs it most then), with
        // this node's own counts.
        let databases = match gather(&node, &ask, proto, 0).await {
            Ok(replies) => {
                let mut sums = [(0u64, 0u64); 16];
                for r in &replies {
                    let Ok(elements) = array_elements(r) else {
                        continue;
                    };
                    let values: Vec<u64> = elements
                        .iter()
                        .map(|e| integer_value(&r[e.clone()]).unwrap_or(0).max(0) as u64)
                        .collect();
                    for (db, pair) in values.chunks(2).take(16).enumerate() {
                        sums[db].0 += pair[0];
                        sums[db].1 += pair.get(1).copied().unwrap_or(0);
                    }
                }
                Some(
                    sums.iter()
                        .enumerate()
                        .map(|(db, &(k, v))| (db as u8, k, v))
                        .collect::<Vec<_>>(),
                )
            }
            Err(_) => None,
        };
        let sections: Vec<String> = args[1..]
            .iter()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .collect();
        let info = cmd::Info {
            databases: databases.as_deref(),
            cluster: node
                .cluster
                .as_ref()
                .map(|c| c as &dyn shoal_engine::hooks::ClusterInfo),
            cluster_enabled: false,
            keyspace: None,
            caller: session_id,
        };
        let text = cmd::render_info(&node.engine, &info, &sections);
        encode(&Reply::Verbatim(text.into()), proto)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn other_members_follow_this_nodes_library_change() {
        for (given, follow, ignored) in [
            (
                &["FUNCTION", "LOAD", "code"][..],
                &["FUNCTION", "LOAD", "REPLACE", "code"][..],
                false,
            ),
            (
                &["function", "load", "replace", "code"],
                &["function", "load", "replace", "code"],
                false,
            ),
            // The code may be the word itself.
            (
                &["FUNCTION", "LOAD", "REPLACE"],
                &["FUNCTION", "LOAD", "REPLACE", "REPLACE"],
                false,
            ),
            (
                &["FUNCTION", "RESTORE", "p"],
                &["FUNCTION", "RESTORE", "p", "REPLACE"],
                false,
            ),
            (
                &["FUNCTION", "RESTORE", "p", "append"],
                &["FUNCTION", "RESTORE", "p", "REPLACE"],
                false,
            ),
            (
                &["FUNCTION", "RESTORE", "p", "FLUSH"],
                &["FUNCTION", "RESTORE", "p", "FLUSH"],
                false,
            ),
            (
                &["FUNCTION", "DELETE", "lib"],
                &["FUNCTION", "DELETE", "lib"],
                true,
            ),
            (&["FUNCTION", "FLUSH"], &["FUNCTION", "FLUSH"], false),
            (
                &["SCRIPT", "LOAD", "return 1"],
                &["SCRIPT", "LOAD", "return 1"],
                false,
            ),
        ] {
            let (f, i) = follow_form(&args(given));
            assert_eq!(f, args(follow), "{given:?}");
            assert_eq!(i.is_some(), ignored, "{given:?}");
        }
    }
}
