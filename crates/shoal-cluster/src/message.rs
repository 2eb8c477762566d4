//! The bodies Shoal puts inside `shoal-wire` request frames (the wire crate moves them as
//! opaque bytes). All integers are big-endian. Byte 0 is the kind:
//!
//! ```text
//! 1 COMMAND    deadline_ms u64 · reply_limit u64 · proto u8 (2 | 3) · scope ·
//!              RESP multibulk (one command)
//!              deadline_ms: Unix ms after which the sender no longer waits for the answer
//!              (it tried the next copy): the receiver must not run it then (0 = none)
//!              reply_limit: the reply bytes the sender's client may still take (its
//!              output limit); the receiver stops building a reply that passes it and
//!              answers an error instead (0 = only the frame limit)
//!              proto | 0x40: sent again after the receiver sent it back for another view
//!              (the receiver stops sending back the link's commands on its slots)
//!              proto | 0x80: a failover (the key's owner did not answer): the receiver
//!              orders its writes past the greatest peer clock lead it saw, so they order
//!              after whatever the owner wrote (whose replication may still arrive)
//!              scope = 0                          every local key
//!                    | 1 · n u16 · n × u16 owners · m u16 · m × u16 down
//!              scope | 2: at once (a blocking command answers as inside MULTI)
//!              response body: the RESP reply, encoded in `proto`
//! 2 REPLICATE  count u32 · count × entry
//!              entry = 1 (live) · version u64 · key_len u32 · key · flags u32 ·
//!                      expire_at_ms u64 (0 = none) · value_len u32 · value
//!                    | 2 (deleted) · version u64 · key_len u32 · key
//!              response body: applied u32 · stale u32
//! 3 HANDOFF    as REPLICATE (slots handed to a new copy); the same response
//! 4 FETCH      count u32 · count × (key_len u32 · key)
//!              response body: a REPLICATE body of the keys' states (absent ones left out)
//! 5 DONE       view u64 · name_len u16 · name
//!              "node `name` finished handing off for the view with id `view`"
//!              response body: empty
//! 6 REPLICATE_AT  sent_at_ms u64 · as REPLICATE, entries may be deltas (docs/wire.md)
//! 7 RELAY      target_len u16 · target · addr_len u8 · addr (the target's cluster
//!              address, text) · inner request body (not 7 or 8)
//!              response body: 0 · epoch u64 · the target's response body
//!                           | 1 · failure u8 · text        (`RelayFailure`)
//! 8 RELAYED    origin_len u16 · origin · inner request body (not 7 or 8)
//!              response body: the inner request's
//! 9 BATCH      count u32 (1..=MAX_BATCH) · count × (len u32 · COMMAND body)
//!              commands of one client's pipeline for this node, run in order as if
//!              each came in a request of its own
//!              response body: an ANSWER: more u64 · count u32 · count × (len u32 · that
//!              COMMAND's response body), the first `count` of the batch's answers in
//!              order; more = 0 when that is all, else the token to CONTINUE with (the
//!              rest ran too: only their replies wait, so that each answer fits a frame)
//! 10 CONTINUE  more u64 (a token an ANSWER gave)
//!              response body: an ANSWER of the next replies of that batch
//! ```
//!
//! A scope restricts the key-enumerating commands of a fan-out (DBSIZE, KEYS, SCAN,
//! RANDOMKEY) to the slots this node answers for: a slot is in scope when its owner is one
//! of `owners` (any owner if empty) and this node is the first of the slot's copies that is
//! not in `down`. With both empty that is "the slots I own"; after a node failed, the others
//! are asked again with it in `down`, so each of its slots is counted once, by its first
//! live replica.
//!
//! Decoding checks every length against what is left of the body (itself bounded by the
//! frame limit) before slicing; values are zero-copy slices of the body. `docs/wire.md` describes
//! them with an example.

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use shoal_engine::cmd;
use shoal_engine::cmd::multi::Snapshot;
use shoal_resp::{format_int, Protocol};
use shoal_store::{KeyState, Kind, MAX_KEY_LEN};

use super::View;
use shoal_engine::config::MAX_CLUSTER_NODES;
pub use shoal_engine::tracking::Origin;

pub const KIND_COMMAND: u8 = 1;
pub const KIND_REPLICATE: u8 = 2;
pub const KIND_HANDOFF: u8 = 3;
pub const KIND_FETCH: u8 = 4;
pub const KIND_DONE: u8 = 5;
pub const KIND_REPLICATE_AT: u8 = 6;
pub const KIND_RELAY: u8 = 7;
pub const KIND_RELAYED: u8 = 8;
pub const KIND_BATCH: u8 = 9;
pub const KIND_CONTINUE: u8 = 10;
/// Most commands one BATCH carries.
pub const MAX_BATCH: usize = 1024;
/// Longest node name a RELAY or RELAYED body may carry.
pub const MAX_NODE_NAME: usize = 255;

const TAG_LIVE: u8 = 1;
const TAG_DELETED: u8 = 2;
/// A live hash: TAG_LIVE's layout, the value in `Hash::encode`'s form.
const TAG_LIVE_HASH: u8 = 3;
/// A live set: TAG_LIVE's layout, the value in `Set::encode`'s form.
const TAG_LIVE_SET: u8 = 4;
/// A live list: TAG_LIVE's layout, the value in `List::encode`'s form.
const TAG_LIVE_LIST: u8 = 5;
/// A live sorted set: TAG_LIVE's layout, the value in `ZSet::encode`'s form.
const TAG_LIVE_ZSET: u8 = 6;
/// A delta (REPLICATE_AT only): a command to run on the key's state of version `base`.
const TAG_DELTA: u8 = 7;
/// A live stream: TAG_LIVE's layout, the value in `Stream::encode`'s form.
const TAG_LIVE_STREAM: u8 = 8;
/// A delta run on the owner's clock (REPLICATE_AT only): TAG_DELTA's layout, then the
/// owner's Unix ms when the command ran.
const TAG_DELTA_AT: u8 = 9;

/// One entry of a replication batch (REPLICATE_AT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The key's whole state.
    State(KeyState),
    /// A write of a collection as its command: run `command` (a RESP multibulk, keys as
    /// stored) on the key's state of version `base`, giving it version `version`. A replica
    /// that holds another version fetches the key's state instead.
    Delta {
        base: u64,
        version: u64,
        /// The key's expiry after the write (Unix ms, 0 = none): a TTL change alone does
        /// not change the version, so the replica takes it from here.
        expire_at_ms: u64,
        command: Bytes,
        /// The owner's Unix ms when the command ran, for a command whose result depends on
        /// the time (a stream's delivery times and idle checks): the replica runs it at that
        /// time. 0: on the replica's own clock.
        clock_ms: u64,
    },
}

/// Bytes one replicated change takes.
pub fn change_len(key: &[u8], change: &Change) -> usize {
    match change {
        Change::State(state) => entry_len(key, state),
        Change::Delta {
            command, clock_ms, ..
        } => 1 + 8 + 4 + key.len() + 8 + 8 + 4 + command.len() + 8 * usize::from(*clock_ms != 0),
    }
}

/// Which slots a fan-out asks about (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeSpec {
    pub owners: Vec<u16>,
    pub down: Vec<u16>,
}

/// A scope resolved against the receiving node's view.
pub struct Scope {
    pub spec: ScopeSpec,
    pub view: Arc<View>,
}

impl shoal_engine::hooks::SlotScope for Scope {
    fn includes(&self, slot: u16) -> bool {
        Scope::includes(self, slot)
    }
}

impl Scope {
    pub fn new(spec: ScopeSpec, view: Arc<View>) -> Scope {
        Scope { spec, view }
    }

    /// True if this node answers for `slot` in this scope.
    pub fn includes(&self, slot: u16) -> bool {
        let owners = self.view.owners(slot);
        if !self.spec.owners.is_empty() && !self.spec.owners.contains(&owners[0]) {
            return false;
        }
        owners.iter().find(|m| !self.spec.down.contains(m)) == Some(&self.view.me)
    }
}

/// A decoded request body.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    Command {
        proto: Protocol,
        /// The database it runs in (SELECT; 0 but for numbered databases).
        db: u8,
        scope: Option<ScopeSpec>,
        args: Vec<Bytes>,
        deadline_ms: u64,
        reply_limit: u64,
        failover: bool,
        /// Sent again after this node sent it back (`handoff::OTHER_VIEW`).
        resent: bool,
        /// A blocking command answers at once, as inside MULTI ([`at_once`]).
        once: bool,
        /// Sent for a tracking client of the sender ([`from_origin`]).
        origin: Option<Origin>,
    },
    Replicate(Vec<(Bytes, KeyState)>),
    /// A REPLICATE stamped with the sender's clock when it sent it (Unix ms): the
    /// replication queues send these, so that a replica knows how far ahead of its own its
    /// owners' clocks run (`shoal_peer_clock_lead_ms`) even when they forward nothing to it.
    ReplicateAt {
        sent_at_ms: u64,
        entries: Vec<(Bytes, Change)>,
    },
    Handoff(Vec<(Bytes, KeyState)>),
    Fetch(Vec<Bytes>),
    Done {
        view: u64,
        name: String,
    },
    /// "Send `inner` to member `target` for me, and give me its answer": sent to a member
    /// this node and the target both reach while this node's own link to the target is cut
    /// (`relay`). `inner` is any request body but RELAY and RELAYED, left undecoded.
    Relay {
        target: String,
        /// The target's cluster address as the sender knows it (its link's).
        addr: std::net::SocketAddr,
        inner: Bytes,
    },
    /// What the relaying member sends the target: `inner` comes from member `origin` (the
    /// node that sent the RELAY, as it authenticated to the relay), which the target serves
    /// as if `origin` had sent it on a link of its own.
    Relayed {
        origin: String,
        inner: Bytes,
    },
    /// Commands of one client's pipeline for this node (COMMAND bodies, left undecoded),
    /// to run in order as if each had come in a request of its own.
    Batch(Vec<Bytes>),
    /// The next replies of a batch whose ANSWER gave this token.
    Continue(u64),
}

/// Why a body could not be decoded (the peer runs another version, or is broken).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("empty message")]
    Empty,
    #[error("unknown message kind {0}")]
    Kind(u8),
    #[error("message truncated")]
    Truncated,
    #[error("bad field: {0}")]
    Field(&'static str),
    #[error("bad command: {0}")]
    Command(String),
}

fn proto_byte(p: Protocol) -> u8 {
    match p {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    }
}

/// Appends `args` as a RESP multibulk.
pub fn put_multibulk(dst: &mut BytesMut, args: &[Bytes]) {
    let mut num = [0u8; 20];
    dst.put_u8(b'*');
    dst.put_slice(format_int(args.len() as i64, &mut num));
    dst.put_slice(b"\r\n");
    for a in args {
        dst.put_u8(b'$');
        dst.put_slice(format_int(a.len() as i64, &mut num));
        dst.put_slice(b"\r\n");
        dst.put_slice(a);
        dst.put_slice(b"\r\n");
    }
}

/// The name of an internal command: a client's MULTI ... EXEC whose keys all have the same
/// copies on another node, sent whole to their owner (`router::exec`) and run there as the
/// client's transaction, isolated, as EXEC runs on one node. Only another node's request
/// can carry it (`local::serve_command`); a client's command of that name is unknown.
pub const TRANSACTION: &[u8] = b"shoal.exec";

/// The name of [`TRANSACTION`] for one that WATCHes keys: then the number of watched keys,
/// each key (as stored, in its database) with what it held at WATCH time
/// (`cmd::multi::snapshot_bytes`), then the queued commands as in [`TRANSACTION`]. The
/// owner aborts it (a null reply) when one of them changed, as EXEC does. A node that does
/// not know the name answers it as an unknown command, so nothing runs.
pub const WATCHING_TRANSACTION: &[u8] = b"shoal.exec.watch";

/// A client's transaction sent whole ([`TRANSACTION`], [`WATCHING_TRANSACTION`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Transaction {
    pub queue: Vec<Vec<Bytes>>,
    /// The watched keys (as stored) and what each held at WATCH time.
    pub watched: Vec<(Bytes, Option<Snapshot>)>,
}

/// True if `name` is the name of a transaction sent whole.
pub fn is_transaction(name: &[u8]) -> bool {
    name == TRANSACTION || name == WATCHING_TRANSACTION
}

/// The arguments of a transaction sent whole: its name, the watched keys if any, then each
/// queued command as its argument count and its arguments.
pub fn encode_transaction(tx: &Transaction) -> Vec<Bytes> {
    let (queue, watched) = (&tx.queue, &tx.watched);
    let size = 2 + 2 * watched.len() + queue.iter().map(|a| 1 + a.len()).sum::<usize>();
    let mut args = Vec::with_capacity(size);
    if watched.is_empty() {
        args.push(Bytes::from_static(TRANSACTION));
    } else {
        args.push(Bytes::from_static(WATCHING_TRANSACTION));
        args.push(Bytes::from(watched.len().to_string()));
        for (key, seen) in watched {
            let mut b = Vec::with_capacity(cmd::multi::SNAPSHOT_LEN);
            cmd::multi::snapshot_bytes(*seen, &mut b);
            args.push(key.clone());
            args.push(b.into());
        }
    }
    for command in queue {
        args.push(Bytes::from(command.len().to_string()));
        args.extend(command.iter().cloned());
    }
    args
}

/// The transaction of a transaction's arguments, or `None` if they are not one (a count
/// that is not a number, zero, or past the arguments left; a snapshot that is not one).
pub fn decode_transaction(args: &[Bytes]) -> Option<Transaction> {
    let (name, mut rest) = args.split_first()?;
    let count = |b: &Bytes| -> Option<usize> { std::str::from_utf8(b).ok()?.parse().ok() };
    let mut watched = Vec::new();
    if name[..] == *WATCHING_TRANSACTION {
        let (n, after) = rest.split_first()?;
        let n = count(n)?;
        if n == 0 || n > after.len() / 2 {
            return None;
        }
        for pair in after[..2 * n].chunks_exact(2) {
            watched.push((pair[0].clone(), cmd::multi::snapshot_from(&pair[1])?));
        }
        rest = &after[2 * n..];
    } else if name[..] != *TRANSACTION {
        return None;
    }
    let mut queue = Vec::new();
    while let Some((n, after)) = rest.split_first() {
        let n = count(n)?;
        if n == 0 || n > after.len() {
            return None;
        }
        queue.push(after[..n].to_vec());
        rest = &after[n..];
    }
    Some(Transaction { queue, watched })
}

/// A COMMAND body carrying `deadline_ms` (Unix ms; see `Cluster::deadline_ms`) and the
/// sender's `reply_limit` (0 = none but the frame's), to run in database `db` (0-15, in the
/// protocol byte's bits 2-5).
pub fn encode_command(
    proto: Protocol,
    db: u8,
    scope: Option<&ScopeSpec>,
    args: &[Bytes],
    deadline_ms: u64,
    reply_limit: u64,
) -> Bytes {
    let size: usize = args.iter().map(|a| a.len() + 16).sum::<usize>() + 40;
    let mut b = BytesMut::with_capacity(size);
    b.put_u8(KIND_COMMAND);
    b.put_u64(deadline_ms);
    b.put_u64(reply_limit);
    b.put_u8(proto_byte(proto) | ((db & 0x0F) << DB_SHIFT));
    match scope {
        None => b.put_u8(0),
        Some(s) => {
            b.put_u8(1);
            for list in [&s.owners, &s.down] {
                b.put_u16(list.len() as u16);
                for &m in list {
                    b.put_u16(m);
                }
            }
        }
    }
    put_multibulk(&mut b, args);
    b.freeze()
}

/// The first key of a COMMAND body in database 0 scoped to every local key (a command
/// forwarded to its key's owner): its command's second argument
/// ([`shoal_resp::peek_keys`]). `None` for any other body. A look ahead only: the body is
/// checked in full when it is read.
pub fn peek_command_key(body: &[u8]) -> Option<&[u8]> {
    let proto = *body.get(SCOPE_AT - 1)?;
    let scope = *body.get(SCOPE_AT)?;
    if body[0] != KIND_COMMAND || proto & DB_BITS != 0 || scope & !SCOPE_ONCE != 0 {
        return None;
    }
    let mut key: [&[u8]; 1] = [&[]];
    (shoal_resp::peek_keys(&body[SCOPE_AT + 1..], &mut key).keys == 1).then_some(key[0])
}

/// The scope byte's flag for a command to run at once (see [`at_once`]).
const SCOPE_ONCE: u8 = 2;
/// The scope byte's flag for a command sent for a tracking client ([`from_origin`]).
const SCOPE_ORIGIN: u8 = 4;

/// A COMMAND body (of scope 0, every local key) sent for `origin`, a tracking client of the
/// sender (`shoal_engine::tracking`): the receiver remembers the sender as a reader of what
/// it reads when `origin.tracks`, and names the client in the invalidations of what it
/// changes. Any other body comes back as it is.
pub fn from_origin(body: Bytes, origin: &Origin) -> Bytes {
    if body.first() != Some(&KIND_COMMAND)
        || body.len() <= SCOPE_AT
        || body[SCOPE_AT] & !SCOPE_ONCE != 0
    {
        return body;
    }
    let name = &origin.member.as_bytes()[..origin.member.len().min(MAX_NODE_NAME)];
    let mut b = BytesMut::with_capacity(body.len() + 11 + name.len());
    b.put_slice(&body[..=SCOPE_AT]);
    b[SCOPE_AT] |= SCOPE_ORIGIN;
    b.put_u64(origin.client);
    b.put_u8(u8::from(origin.tracks));
    b.put_u16(name.len() as u16);
    b.put_slice(name);
    b.put_slice(&body[SCOPE_AT + 1..]);
    b.freeze()
}
/// Where a COMMAND body's scope byte is: after the kind, deadline, reply limit and proto.
const SCOPE_AT: usize = 1 + 8 + 8 + 1;

/// A COMMAND body marked to run at once: a blocking command answers as inside MULTI
/// instead of waiting (a transaction's blocking command sent to its key's owner).
pub fn at_once(body: Bytes) -> Bytes {
    let mut b = BytesMut::from(&body[..]);
    if b.first() == Some(&KIND_COMMAND) && b.len() > SCOPE_AT {
        b[SCOPE_AT] |= SCOPE_ONCE;
    }
    b.freeze()
}

/// A copy of a COMMAND body for a failover: a new deadline, and the failover mark.
pub fn restamp(body: &Bytes, deadline_ms: u64) -> Bytes {
    marked(body, deadline_ms, FAILOVER)
}

/// A COMMAND body sent again (after a copy sent it back for another view): a new deadline,
/// and the resend mark when it goes back to the copy that sent it back (`again`), none
/// otherwise.
pub fn redate(body: &Bytes, deadline_ms: u64, again: bool) -> Bytes {
    let mut b = marked(body, deadline_ms, if again { RESENT } else { 0 });
    if !again && b.len() >= 18 && b[0] == KIND_COMMAND {
        let mut m = BytesMut::from(&b[..]);
        m[17] &= !RESENT;
        b = m.freeze();
    }
    b
}

/// A copy of a COMMAND body with a new deadline and `mark` set on its protocol byte.
fn marked(body: &Bytes, deadline_ms: u64, mark: u8) -> Bytes {
    if body.len() < 18 || body[0] != KIND_COMMAND {
        return body.clone();
    }
    let mut b = BytesMut::from(&body[..]);
    b[1..9].copy_from_slice(&deadline_ms.to_be_bytes());
    b[17] |= mark;
    b.freeze()
}

/// The resend mark on a COMMAND's protocol byte.
const RESENT: u8 = 0x40;

/// Where a COMMAND's protocol byte carries its database (4 bits).
const DB_SHIFT: u8 = 2;
const DB_BITS: u8 = 0x0F << DB_SHIFT;

/// The failover mark on a COMMAND's protocol byte.
const FAILOVER: u8 = 0x80;

/// Bytes one replicated entry takes.
pub fn entry_len(key: &[u8], state: &KeyState) -> usize {
    match state {
        KeyState::Live { value, .. } => 1 + 8 + 4 + key.len() + 4 + 8 + 4 + value.len(),
        _ => 1 + 8 + 4 + key.len(),
    }
}

/// A REPLICATE body; `Absent` entries are skipped.
pub fn encode_replicate<'a>(entries: impl Iterator<Item = (&'a [u8], &'a KeyState)>) -> Bytes {
    encode_states(KIND_REPLICATE, entries)
}

/// A REPLICATE_AT body: a REPLICATE stamped with the sender's clock (Unix ms), whose
/// entries may also be deltas.
pub fn encode_replicate_at<'a>(
    sent_at_ms: u64,
    entries: impl Iterator<Item = (&'a [u8], &'a Change)>,
) -> Bytes {
    encode_counted(
        KIND_REPLICATE_AT,
        Some(sent_at_ms),
        entries,
        |b, (key, change)| match change {
            Change::State(state) => put_state(b, key, state),
            Change::Delta {
                base,
                version,
                expire_at_ms,
                command,
                clock_ms,
            } => {
                let tag = if *clock_ms != 0 {
                    TAG_DELTA_AT
                } else {
                    TAG_DELTA
                };
                put_head(b, tag, *version, key);
                b.put_u64(*base);
                b.put_u64(*expire_at_ms);
                b.put_u32(command.len() as u32);
                b.put_slice(command);
                if *clock_ms != 0 {
                    b.put_u64(*clock_ms);
                }
                true
            }
        },
    )
}

/// A HANDOFF body (REPLICATE's layout).
pub fn encode_handoff<'a>(entries: impl Iterator<Item = (&'a [u8], &'a KeyState)>) -> Bytes {
    encode_states(KIND_HANDOFF, entries)
}

/// A FETCH body.
pub fn encode_fetch(keys: &[Bytes]) -> Bytes {
    let mut b = BytesMut::with_capacity(5 + keys.iter().map(|k| 4 + k.len()).sum::<usize>());
    b.put_u8(KIND_FETCH);
    b.put_u32(keys.len() as u32);
    for k in keys {
        b.put_u32(k.len() as u32);
        b.put_slice(k);
    }
    b.freeze()
}

/// A DONE body.
pub fn encode_done(view: u64, name: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(11 + name.len());
    b.put_u8(KIND_DONE);
    b.put_u64(view);
    b.put_u16(name.len() as u16);
    b.put_slice(name.as_bytes());
    b.freeze()
}

/// A RELAY body: `inner` for member `target` at cluster address `addr`.
pub fn encode_relay(target: &str, addr: std::net::SocketAddr, inner: &[u8]) -> Bytes {
    let addr = addr.to_string();
    encode_named(KIND_RELAY, target, Some(&addr), inner)
}

/// A RELAYED body: `inner` from member `origin`.
pub fn encode_relayed(origin: &str, inner: &[u8]) -> Bytes {
    encode_named(KIND_RELAYED, origin, None, inner)
}

fn encode_named(kind: u8, name: &str, addr: Option<&str>, inner: &[u8]) -> Bytes {
    let name = &name.as_bytes()[..name.len().min(MAX_NODE_NAME)];
    let mut b = BytesMut::with_capacity(4 + name.len() + 64 + inner.len());
    b.put_u8(kind);
    b.put_u16(name.len() as u16);
    b.put_slice(name);
    if let Some(addr) = addr {
        // A socket address's text is at most 58 bytes (IPv6 with a scope id).
        b.put_u8(addr.len() as u8);
        b.put_slice(addr.as_bytes());
    }
    b.put_slice(inner);
    b.freeze()
}

/// Why a relayed request got no answer from its target, as the relay saw it: the sender
/// decides on it as on the same failure of its own link (`router::on_failure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayFailure {
    /// No answer within the relay's wait (the target may have run it).
    Timeout = 1,
    /// Nothing listens at the target (connect refused or reset, closed in the handshake):
    /// it ran nothing.
    Refused = 2,
    /// The connection broke with the request sent.
    Lost = 3,
    /// The relay cannot reach the target either (its connect or handshake timed out);
    /// nothing was sent.
    Unreachable = 4,
    /// The target answered that it is shutting down.
    ShuttingDown = 5,
    /// Any other failure (refused handshake, overload, a bad frame).
    Failed = 6,
}

impl RelayFailure {
    /// The failure of the relay's request to the target, as the sender tells it.
    pub fn of(e: &shoal_wire::WireError) -> RelayFailure {
        use shoal_wire::WireError;
        match e {
            WireError::Timeout => RelayFailure::Timeout,
            WireError::PeerUnavailable(u) if u.refused() => RelayFailure::Refused,
            WireError::PeerUnavailable(u) if u.lost() => RelayFailure::Lost,
            WireError::PeerUnavailable(_) => RelayFailure::Unreachable,
            WireError::Remote { code, .. } if *code == shoal_wire::ErrorCode::ShuttingDown => {
                RelayFailure::ShuttingDown
            }
            _ => RelayFailure::Failed,
        }
    }

    fn from_code(code: u8) -> Option<RelayFailure> {
        use RelayFailure::*;
        [Timeout, Refused, Lost, Unreachable, ShuttingDown, Failed]
            .into_iter()
            .find(|f| *f as u8 == code)
    }

    /// The error the sender acts on: the same kind its own link would have given.
    pub fn to_error(self, message: String) -> shoal_wire::WireError {
        use shoal_wire::{ErrorCode, Unavailable, WireError};
        match self {
            RelayFailure::Timeout => WireError::Timeout,
            RelayFailure::Refused => WireError::PeerUnavailable(Unavailable::Connect(
                std::io::ErrorKind::ConnectionRefused,
            )),
            RelayFailure::Lost => WireError::PeerUnavailable(Unavailable::ConnectionLost),
            RelayFailure::Unreachable => WireError::PeerUnavailable(Unavailable::ConnectTimeout),
            RelayFailure::ShuttingDown => WireError::Remote {
                code: ErrorCode::ShuttingDown,
                message,
            },
            RelayFailure::Failed => WireError::Remote {
                code: ErrorCode::Internal,
                message,
            },
        }
    }
}

/// A RELAY's response body when the target answered: its view id and its response body.
pub fn encode_relay_answer(epoch: u64, body: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(9 + body.len());
    b.put_u8(0);
    b.put_u64(epoch);
    b.put_slice(body);
    b.freeze()
}

/// A RELAY's response body when the target did not answer.
pub fn encode_relay_failure(failure: RelayFailure, message: &str) -> Bytes {
    let message = &message.as_bytes()[..message.len().min(1024)];
    let mut b = BytesMut::with_capacity(2 + message.len());
    b.put_u8(1);
    b.put_u8(failure as u8);
    b.put_slice(message);
    b.freeze()
}

/// Decodes a RELAY's response body: the target's response, or the failure the relay saw.
/// A body that is neither is a bad frame from the relay.
pub fn decode_relay_response(
    mut body: Bytes,
) -> Result<shoal_wire::Response, shoal_wire::WireError> {
    match body.first() {
        Some(0) if body.len() >= 9 => {
            body.advance(1);
            let epoch = body.get_u64();
            Ok(shoal_wire::Response { epoch, body })
        }
        Some(1) if body.len() >= 2 => {
            let failure = RelayFailure::from_code(body[1]).unwrap_or(RelayFailure::Failed);
            let message = String::from_utf8_lossy(&body[2..]).into_owned();
            Err(failure.to_error(format!("through a relay: {message}")))
        }
        _ => Err(RelayFailure::Failed.to_error("a relay sent a response it cannot have".into())),
    }
}

/// Decodes a FETCH response (a REPLICATE body).
pub fn decode_states(body: Bytes) -> Result<Vec<(Bytes, KeyState)>, MessageError> {
    match decode_request(body, |_| Err("not a command".into()))? {
        Request::Replicate(entries) => Ok(entries),
        _ => Err(MessageError::Field("expected key states")),
    }
}

fn encode_states<'a>(kind: u8, entries: impl Iterator<Item = (&'a [u8], &'a KeyState)>) -> Bytes {
    encode_stamped(kind, None, entries)
}

/// Kind, the stamp if any, then the count and the entries.
fn encode_stamped<'a>(
    kind: u8,
    stamp: Option<u64>,
    entries: impl Iterator<Item = (&'a [u8], &'a KeyState)>,
) -> Bytes {
    encode_counted(kind, stamp, entries, |b, (key, state)| {
        put_state(b, key, state)
    })
}

/// Kind, the stamp if any, then the count and the entries `put` wrote (it answers whether
/// it wrote one).
fn encode_counted<T>(
    kind: u8,
    stamp: Option<u64>,
    entries: impl Iterator<Item = T>,
    mut put: impl FnMut(&mut BytesMut, T) -> bool,
) -> Bytes {
    let mut b = BytesMut::new();
    b.put_u8(kind);
    if let Some(at) = stamp {
        b.put_u64(at);
    }
    let count_at = b.len();
    b.put_u32(0);
    let mut count = 0u32;
    for entry in entries {
        count += u32::from(put(&mut b, entry));
    }
    b[count_at..count_at + 4].copy_from_slice(&count.to_be_bytes());
    b.freeze()
}

/// Appends one key's state; false (nothing written) for `Absent`.
fn put_state(b: &mut BytesMut, key: &[u8], state: &KeyState) -> bool {
    match state {
        KeyState::Live {
            kind,
            value,
            flags,
            expire_at_ms,
            version,
        } => {
            let tag = match kind {
                Kind::String => TAG_LIVE,
                Kind::Hash => TAG_LIVE_HASH,
                Kind::Set => TAG_LIVE_SET,
                Kind::List => TAG_LIVE_LIST,
                Kind::ZSet => TAG_LIVE_ZSET,
                Kind::Stream => TAG_LIVE_STREAM,
            };
            put_head(b, tag, *version, key);
            b.put_u32(*flags);
            b.put_u64(*expire_at_ms);
            b.put_u32(value.len() as u32);
            b.put_slice(value);
        }
        KeyState::Deleted { version } => put_head(b, TAG_DELETED, *version, key),
        KeyState::Absent => return false,
    }
    true
}

/// What every replicated entry starts with: tag · version u64 · key_len u32 · key.
fn put_head(b: &mut BytesMut, tag: u8, version: u64, key: &[u8]) {
    b.put_u8(tag);
    b.put_u64(version);
    b.put_u32(key.len() as u32);
    b.put_slice(key);
}

/// The REPLICATE response.
pub fn encode_replicate_result(applied: u32, stale: u32) -> Bytes {
    let mut b = BytesMut::with_capacity(8);
    b.put_u32(applied);
    b.put_u32(stale);
    b.freeze()
}

/// A reader over a body that checks each length before taking it.
struct Reader {
    buf: Bytes,
}

impl Reader {
    fn need(&self, n: usize) -> Result<(), MessageError> {
        if self.buf.remaining() < n {
            Err(MessageError::Truncated)
        } else {
            Ok(())
        }
    }
    fn u8(&mut self) -> Result<u8, MessageError> {
        self.need(1)?;
        Ok(self.buf.get_u8())
    }
    fn u16(&mut self) -> Result<u16, MessageError> {
        self.need(2)?;
        Ok(self.buf.get_u16())
    }
    fn u32(&mut self) -> Result<u32, MessageError> {
        self.need(4)?;
        Ok(self.buf.get_u32())
    }
    fn u64(&mut self) -> Result<u64, MessageError> {
        self.need(8)?;
        Ok(self.buf.get_u64())
    }
    fn bytes(&mut self, n: usize) -> Result<Bytes, MessageError> {
        self.need(n)?;
        Ok(self.buf.split_to(n))
    }
    fn members(&mut self) -> Result<Vec<u16>, MessageError> {
        let n = usize::from(self.u16()?);
        if n > MAX_CLUSTER_NODES {
            return Err(MessageError::Field("member list too long"));
        }
        self.need(2 * n)?;
        Ok((0..n).map(|_| self.buf.get_u16()).collect())
    }
}

/// Decodes a request body. `parse` turns the RESP part into arguments (the node's request
/// parser, with its limits).
pub fn decode_request(
    body: Bytes,
    parse: impl FnOnce(Bytes) -> Result<Vec<Bytes>, String>,
) -> Result<Request, MessageError> {
    let mut r = Reader { buf: body };
    match r.u8().map_err(|_| MessageError::Empty)? {
        KIND_COMMAND => {
            let deadline_ms = r.u64()?;
            let reply_limit = r.u64()?;
            let proto = r.u8()?;
            let failover = proto & FAILOVER != 0;
            let resent = proto & RESENT != 0;
            let db = (proto & DB_BITS) >> DB_SHIFT;
            let proto = match proto & !(FAILOVER | RESENT | DB_BITS) {
                2 => Protocol::Resp2,
                3 => Protocol::Resp3,
                _ => return Err(MessageError::Field("protocol")),
            };
            let scope_byte = r.u8()?;
            let once = scope_byte & SCOPE_ONCE != 0;
            let scope = match scope_byte & !(SCOPE_ONCE | SCOPE_ORIGIN) {
                0 => None,
                1 => Some(ScopeSpec {
                    owners: r.members()?,
                    down: r.members()?,
                }),
                _ => return Err(MessageError::Field("scope")),
            };
            let origin = if scope_byte & SCOPE_ORIGIN != 0 {
                let client = r.u64()?;
                let tracks = match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(MessageError::Field("origin")),
                };
                let len = usize::from(r.u16()?);
                if len == 0 || len > MAX_NODE_NAME {
                    return Err(MessageError::Field("node name"));
                }
                let name = String::from_utf8(r.bytes(len)?.to_vec())
                    .map_err(|_| MessageError::Field("node name"))?;
                Some(Origin {
                    member: name.into(),
                    client,
                    tracks,
                })
            } else {
                None
            };
            let args = parse(r.buf).map_err(MessageError::Command)?;
            Ok(Request::Command {
                proto,
                db,
                scope,
                args,
                deadline_ms,
                reply_limit,
                failover,
                resent,
                once,
                origin,
            })
        }
        KIND_FETCH => {
            let count = r.u32()? as usize;
            // Every key takes at least 4 bytes.
            if count > r.buf.remaining() / 4 {
                return Err(MessageError::Truncated);
            }
            let mut keys = Vec::with_capacity(count);
            for _ in 0..count {
                let len = r.u32()? as usize;
                if len > MAX_KEY_LEN {
                    return Err(MessageError::Field("key length"));
                }
                keys.push(r.bytes(len)?);
            }
            if r.buf.has_remaining() {
                return Err(MessageError::Field("trailing bytes"));
            }
            Ok(Request::Fetch(keys))
        }
        kind @ (KIND_RELAY | KIND_RELAYED) => {
            let len = usize::from(r.u16()?);
            if len > MAX_NODE_NAME {
                return Err(MessageError::Field("node name"));
            }
            let name = String::from_utf8(r.bytes(len)?.to_vec())
                .map_err(|_| MessageError::Field("node name"))?;
            let addr = if kind == KIND_RELAY {
                let len = usize::from(r.u8()?);
                let text = r.bytes(len)?;
                let addr = std::str::from_utf8(&text)
                    .ok()
                    .and_then(|t| t.parse::<std::net::SocketAddr>().ok())
                    .ok_or(MessageError::Field("cluster address"))?;
                Some(addr)
            } else {
                None
            };
            let inner = r.buf;
            // One hop: a relayed request is not relayed again.
            if matches!(
                inner.first(),
                None | Some(&KIND_RELAY) | Some(&KIND_RELAYED)
            ) {
                return Err(MessageError::Field("relayed request"));
            }
            Ok(if let Some(addr) = addr {
                Request::Relay {
                    target: name,
                    addr,
                    inner,
                }
            } else {
                Request::Relayed {
                    origin: name,
                    inner,
                }
            })
        }
        KIND_DONE => {
            let view = r.u64()?;
            let len = usize::from(r.u16()?);
            let name = r.bytes(len)?;
            if r.buf.has_remaining() {
                return Err(MessageError::Field("trailing bytes"));
            }
            let name =
                String::from_utf8(name.to_vec()).map_err(|_| MessageError::Field("node name"))?;
            Ok(Request::Done { view, name })
        }
        kind @ (KIND_REPLICATE | KIND_HANDOFF | KIND_REPLICATE_AT) => {
            let sent_at_ms = if kind == KIND_REPLICATE_AT {
                r.u64()?
            } else {
                0
            };
            let count = r.u32()? as usize;
            // Every entry takes at least 13 bytes: a count beyond that is a lie.
            if count > r.buf.remaining() / 13 {
                return Err(MessageError::Truncated);
            }
            let mut entries = Vec::with_capacity(count);
            for _ in 0..count {
                let tag = r.u8()?;
                let version = r.u64()?;
                let key_len = r.u32()? as usize;
                if key_len > MAX_KEY_LEN {
                    return Err(MessageError::Field("key length"));
                }
                let key = r.bytes(key_len)?;
                let state = match tag {
                    TAG_DELTA | TAG_DELTA_AT if kind == KIND_REPLICATE_AT => {
                        let base = r.u64()?;
                        let expire_at_ms = r.u64()?;
                        let len = r.u32()? as usize;
                        let command = r.bytes(len)?;
                        let clock_ms = if tag == TAG_DELTA_AT { r.u64()? } else { 0 };
                        // A delta without a clock is tag 7: one form for each (the encoding
                        // is canonical, as the fuzz target checks).
                        if tag == TAG_DELTA_AT && clock_ms == 0 {
                            return Err(MessageError::Field("clock"));
                        }
                        entries.push((
                            key,
                            Change::Delta {
                                base,
                                version,
                                expire_at_ms,
                                command,
                                clock_ms,
                            },
                        ));
                        continue;
                    }
                    TAG_LIVE | TAG_LIVE_HASH | TAG_LIVE_SET | TAG_LIVE_LIST | TAG_LIVE_ZSET
                    | TAG_LIVE_STREAM => {
                        let flags = r.u32()?;
                        let expire_at_ms = r.u64()?;
                        let len = r.u32()? as usize;
                        KeyState::Live {
                            kind: match tag {
                                TAG_LIVE => Kind::String,
                                TAG_LIVE_HASH => Kind::Hash,
                                TAG_LIVE_SET => Kind::Set,
                                TAG_LIVE_LIST => Kind::List,
                                TAG_LIVE_STREAM => Kind::Stream,
                                _ => Kind::ZSet,
                            },
                            value: r.bytes(len)?,
                            flags,
                            expire_at_ms,
                            version,
                        }
                    }
                    TAG_DELETED => KeyState::Deleted { version },
                    _ => return Err(MessageError::Field("entry tag")),
                };
                entries.push((key, Change::State(state)));
            }
            if r.buf.has_remaining() {
                return Err(MessageError::Field("trailing bytes"));
            }
            if kind == KIND_REPLICATE_AT {
                return Ok(Request::ReplicateAt {
                    sent_at_ms,
                    entries,
                });
            }
            // Only REPLICATE_AT carries deltas (refused above for the others).
            let states = entries
                .into_iter()
                .filter_map(|(k, c)| match c {
                    Change::State(s) => Some((k, s)),
                    Change::Delta { .. } => None,
                })
                .collect();
            Ok(match kind {
                KIND_HANDOFF => Request::Handoff(states),
                _ => Request::Replicate(states),
            })
        }
        KIND_BATCH => {
            let parts = get_parts(&mut r)?;
            if parts.iter().any(|p| p.first() != Some(&KIND_COMMAND)) {
                return Err(MessageError::Field("batch part"));
            }
            Ok(Request::Batch(parts))
        }
        KIND_CONTINUE => {
            let more = r.u64()?;
            if r.buf.has_remaining() || more == 0 {
                return Err(MessageError::Field("continue"));
            }
            Ok(Request::Continue(more))
        }
        k => Err(MessageError::Kind(k)),
    }
}

/// A BATCH of COMMAND bodies (at most [`MAX_BATCH`]).
pub fn encode_batch(bodies: &[Bytes]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + bodies.iter().map(|b| 4 + b.len()).sum::<usize>());
    out.put_u8(KIND_BATCH);
    put_parts(&mut out, bodies);
    out.freeze()
}

/// An ANSWER (to a BATCH or a CONTINUE): `replies`, the next of the batch's in order, and
/// `more`, the token to ask for the rest with (0: none).
pub fn encode_batch_answer(more: u64, replies: &[Bytes]) -> Bytes {
    let len: usize = replies.iter().map(|r| 4 + r.len()).sum();
    let mut out = BytesMut::with_capacity(12 + len);
    out.put_u64(more);
    put_parts(&mut out, replies);
    out.freeze()
}

/// A CONTINUE body: the rest of the replies `more` stands for.
pub fn encode_continue(more: u64) -> Bytes {
    let mut out = BytesMut::with_capacity(9);
    out.put_u8(KIND_CONTINUE);
    out.put_u64(more);
    out.freeze()
}

fn put_parts(out: &mut BytesMut, bodies: &[Bytes]) {
    out.put_u32(bodies.len() as u32);
    for b in bodies {
        out.put_u32(b.len() as u32);
        out.put_slice(b);
    }
}

/// Reads `count u32 · count × (len u32 · bytes)` to the end of `r` (zero-copy slices;
/// 1 to MAX_BATCH of them).
fn get_parts(r: &mut Reader) -> Result<Vec<Bytes>, MessageError> {
    let count = r.u32()? as usize;
    // Each part takes at least its length's 4 bytes: a count beyond that is a lie.
    if count == 0 || count > MAX_BATCH || count > r.buf.remaining() / 4 {
        return Err(MessageError::Field("batch count"));
    }
    let mut parts = Vec::with_capacity(count);
    for _ in 0..count {
        let len = r.u32()? as usize;
        parts.push(r.bytes(len)?);
    }
    if r.buf.has_remaining() {
        return Err(MessageError::Field("trailing bytes"));
    }
    Ok(parts)
}

/// What a BATCH's (or a CONTINUE's) sender got back.
#[derive(Debug, PartialEq, Eq)]
pub enum BatchAnswer {
    /// The next replies in order (zero-copy slices of the body), and the token for the
    /// rest (0: none).
    Replies { replies: Vec<Bytes>, more: u64 },
    /// The receiver does not know BATCH (a node of an earlier release answers its kind as
    /// a bad message): it ran none of them.
    Unknown,
    /// Anything else: the receiver may have run them, the answers are lost.
    Malformed,
}

/// Decodes an ANSWER that holds at most `left` replies (those of the batch not had yet),
/// all of them when it says there is no more.
pub fn decode_batch_answer(body: Bytes, left: usize) -> BatchAnswer {
    if body.starts_with(UNKNOWN_KIND_ANSWER) {
        return BatchAnswer::Unknown;
    }
    let mut r = Reader { buf: body };
    let read = |r: &mut Reader| -> Result<(u64, Vec<Bytes>), MessageError> {
        let more = r.u64()?;
        let replies = get_parts(r)?;
        let whole = replies.len() == left;
        if replies.len() > left || (more == 0) != whole {
            return Err(MessageError::Field("batch answer count"));
        }
        Ok((more, replies))
    };
    match read(&mut r) {
        Ok((more, replies)) => BatchAnswer::Replies { replies, more },
        Err(_) => BatchAnswer::Malformed,
    }
}

/// How a node answers a body it cannot decode (`peer`): an earlier release's answer to a
/// BATCH starts so (its kind unknown there).
pub const UNKNOWN_KIND_ANSWER: &[u8] = b"-ERR bad inter-node message: unknown message kind";

/// Decodes a REPLICATE response: (applied, stale).
pub fn decode_replicate_result(body: &[u8]) -> Option<(u32, u32)> {
    if body.len() != 8 {
        return None;
    }
    let a = u32::from_be_bytes(body[..4].try_into().ok()?);
    let s = u32::from_be_bytes(body[4..].try_into().ok()?);
    Some((a, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip_and_malformed_ones_are_refused() {
        let args =
            |s: &str| -> Vec<Bytes> { s.split(' ').map(|a| Bytes::from(a.to_string())).collect() };
        let bodies: Vec<Bytes> = ["SET k 1", "GET k", "INCR n"]
            .iter()
            .map(|c| encode_command(Protocol::Resp2, 0, None, &args(c), 7, 0))
            .collect();
        let batch = encode_batch(&bodies);
        assert_eq!(
            decode_request(batch.clone(), |_| Ok(Vec::new())),
            Ok(Request::Batch(bodies.clone()))
        );
        // Bad counts, lengths, trailing bytes, and parts that are not COMMANDs.
        let raw = |count: u32, parts: &[&[u8]], tail: &[u8]| {
            let mut b = vec![KIND_BATCH];
            b.extend_from_slice(&count.to_be_bytes());
            for p in parts {
                b.extend_from_slice(&(p.len() as u32).to_be_bytes());
                b.extend_from_slice(p);
            }
            b.extend_from_slice(tail);
            decode_request(Bytes::from(b), |_| Ok(Vec::new()))
        };
        let cmd = &bodies[1][..];
        assert!(raw(1, &[cmd], &[]).is_ok());
        assert!(raw(0, &[], &[]).is_err(), "an empty batch");
        assert!(raw(2, &[cmd], &[]).is_err(), "a count past the parts");
        assert!(
            raw(u32::MAX, &[cmd], &[]).is_err(),
            "a count past the bytes"
        );
        assert!(raw(1, &[cmd], b"x").is_err(), "trailing bytes");
        assert!(
            raw(1, &[&cmd[..cmd.len() - 1]], b"").is_ok(),
            "a part is opaque here"
        );
        assert!(
            raw(1, &[&batch[..]], &[]).is_err(),
            "a batch inside a batch"
        );
        assert!(raw(1, &[b""], &[]).is_err(), "an empty part");
        let mut long = vec![KIND_BATCH];
        long.extend_from_slice(&(MAX_BATCH as u32 + 1).to_be_bytes());
        for _ in 0..=MAX_BATCH {
            long.extend_from_slice(&(cmd.len() as u32).to_be_bytes());
            long.extend_from_slice(cmd);
        }
        assert!(decode_request(Bytes::from(long), |_| Ok(Vec::new())).is_err());
        // A truncated length prefix.
        let mut cut = batch.to_vec();
        cut.truncate(7);
        assert!(decode_request(Bytes::from(cut), |_| Ok(Vec::new())).is_err());
    }

    #[test]
    fn batch_answers_are_read_and_an_earlier_release_is_told_apart() {
        let replies = [
            Bytes::from_static(b"+OK\r\n"),
            Bytes::from_static(b"$1\r\n1\r\n"),
        ];
        // All of a batch's replies, and the first of three with a token for the rest.
        let all = encode_batch_answer(0, &replies);
        let want = |more| BatchAnswer::Replies {
            replies: replies.to_vec(),
            more,
        };
        assert_eq!(decode_batch_answer(all.clone(), 2), want(0));
        let part = encode_batch_answer(7, &replies);
        assert_eq!(decode_batch_answer(part.clone(), 3), want(7));
        let read = |b: &[u8], left| decode_batch_answer(Bytes::copy_from_slice(b), left);
        // Fewer than left without a token, as many as left with one, more than left.
        assert_eq!(read(&all, 3), BatchAnswer::Malformed);
        assert_eq!(read(&part, 2), BatchAnswer::Malformed);
        assert_eq!(read(&all, 1), BatchAnswer::Malformed);
        assert_eq!(read(&all[..all.len() - 1], 2), BatchAnswer::Malformed);
        let mut trailing = all.to_vec();
        trailing.push(0);
        assert_eq!(read(&trailing, 2), BatchAnswer::Malformed);
        assert_eq!(
            read(&all[..12], 0),
            BatchAnswer::Malformed,
            "an empty answer"
        );
        // CONTINUE: a token, nothing else.
        assert_eq!(
            decode_request(encode_continue(7), |_| Ok(Vec::new())),
            Ok(Request::Continue(7))
        );
        assert!(decode_request(encode_continue(0), |_| Ok(Vec::new())).is_err());
        let mut long = encode_continue(7).to_vec();
        long.push(1);
        assert!(decode_request(Bytes::from(long), |_| Ok(Vec::new())).is_err());
        // What a node that does not know BATCH answers (`peer`): none of it ran.
        let old = crate::router::error_bytes(&format!(
            "ERR bad inter-node message: {}",
            MessageError::Kind(KIND_BATCH)
        ));
        assert_eq!(decode_batch_answer(old, 2), BatchAnswer::Unknown);
        let other = crate::router::error_bytes("ERR bad inter-node message: message truncated");
        assert_eq!(decode_batch_answer(other, 2), BatchAnswer::Malformed);
    }

    #[test]
    fn transactions_round_trip_and_malformed_ones_are_refused() {
        let b =
            |s: &str| -> Vec<Bytes> { s.split(' ').map(|a| Bytes::from(a.to_string())).collect() };
        let queue = vec![b("SET k 1"), b("INCR k"), b("MSET a 1 b 2"), b("PING")];
        let tx =
            |queue: &[Vec<Bytes>], watched: &[(&str, Option<cmd::multi::Snapshot>)]| Transaction {
                queue: queue.to_vec(),
                watched: watched
                    .iter()
                    .map(|(k, s)| (Bytes::from(k.to_string()), *s))
                    .collect(),
            };
        let plain = tx(&queue, &[]);
        let args = encode_transaction(&plain);
        assert_eq!(args[0], TRANSACTION);
        assert_eq!(decode_transaction(&args), Some(plain));
        let empty = tx(&[], &[]);
        assert_eq!(decode_transaction(&encode_transaction(&empty)), Some(empty));
        // Watched keys: absent, with and without an expiry; with or without commands.
        let watched = [
            ("w", None),
            ("x", Some((Kind::Hash, 42 << 12, None))),
            ("y", Some((Kind::Stream, 7, Some(1_700_000_000_000)))),
        ];
        for queue in [&queue[..], &[]] {
            let watching = tx(queue, &watched);
            let args = encode_transaction(&watching);
            assert_eq!(args[0], WATCHING_TRANSACTION);
            assert!(is_transaction(&args[0]) && is_transaction(TRANSACTION));
            assert_eq!(decode_transaction(&args), Some(watching));
        }
        // A line of words, SNAP standing for a snapshot of no key.
        let line = |s: &str| -> Vec<Bytes> {
            let mut snap = Vec::new();
            cmd::multi::snapshot_bytes(None, &mut snap);
            b(s).into_iter()
                .map(|w| match &w[..] {
                    b"SNAP" => Bytes::from(snap.clone()),
                    _ => w,
                })
                .collect()
        };
        for bad in [
            "shoal.exec 3 SET k",
            "shoal.exec 0",
            "shoal.exec x GET",
            "shoal.exec -1 GET",
            "EXEC 1 GET",
            "shoal.exec.watch 0 1 PING",
            "shoal.exec.watch 1 w",
            "shoal.exec.watch 1 w short 1 PING",
            "shoal.exec.watch 2 w SNAP 1 PING",
            "shoal.exec.watch 1 w SNAP 2 PING",
        ] {
            assert_eq!(decode_transaction(&line(bad)), None, "{bad}");
        }
        assert_eq!(
            decode_transaction(&line("shoal.exec.watch 1 w SNAP 1 PING")),
            Some(tx(&[b("PING")], &[("w", None)]))
        );
    }

    fn parse_resp(b: Bytes) -> Result<Vec<Bytes>, String> {
        let mut buf = BytesMut::from(&b[..]);
        let mut p = shoal_resp::RequestParser::new();
        match p.parse(&mut buf, &shoal_resp::Limits::default(), true) {
            Ok(Some(args)) if buf.is_empty() => Ok(args),
            other => Err(format!("{other:?}")),
        }
    }

    /// The COMMAND example of `docs/wire.md`, byte for byte.
    #[test]
    fn the_command_example_of_the_wire_doc() {
        let args: Vec<Bytes> = vec!["GET".into(), "a".into()];
        let body = encode_command(Protocol::Resp2, 0, None, &args, 0x0190_0000_0000, 0);
        let mut want: Vec<u8> = vec![1, 0, 0, 1, 0x90, 0, 0, 0, 0];
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
        want.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n");
        assert_eq!(&body[..], &want[..]);
        assert_eq!(body.len(), 39);
    }

    /// The RELAY example of `docs/wire.md`: the GET above for member `n2`, through a relay.
    #[test]
    fn relays_carry_their_inner_request_untouched_one_hop_only() {
        let args: Vec<Bytes> = vec!["GET".into(), "a".into()];
        let inner = encode_command(Protocol::Resp2, 0, None, &args, 0x0190_0000_0000, 0);
        let addr: std::net::SocketAddr = "10.0.0.2:7000".parse().unwrap();
        let relay = encode_relay("n1", addr, &inner);
        assert_eq!(&relay[..5], &[7, 0, 2, b'n', b'1']);
        assert_eq!(&relay[5..19], b"\x0d10.0.0.2:7000");
        assert_eq!(&relay[19..], &inner[..]);
        assert_eq!(relay.len(), 58);
        match decode_request(relay, |_| panic!("a relay does not parse the command")) {
            Ok(Request::Relay {
                target,
                addr: a,
                inner: got,
            }) => {
                assert_eq!((target.as_str(), a), ("n1", addr));
                assert_eq!(got, inner);
            }
            other => panic!("{other:?}"),
        }
        let relayed = encode_relayed("n0", &inner);
        assert_eq!(relayed[0], KIND_RELAYED);
        assert!(matches!(
            decode_request(relayed.clone(), parse_resp),
            Ok(Request::Relayed { origin, inner: got }) if origin == "n0" && got == inner
        ));
        // Never two hops, never empty, never a name longer than the limit or not UTF-8.
        let v6: std::net::SocketAddr = "[::1]:7000".parse().unwrap();
        assert!(matches!(
            decode_request(encode_relay("n1", v6, &inner), parse_resp),
            Ok(Request::Relay { addr, .. }) if addr == v6
        ));
        for bad in [
            encode_relay("n2", addr, &relayed),
            encode_relay("n2", addr, &encode_relay("n3", addr, &inner)),
            encode_relayed("n0", &[]),
            encode_relay("n2", addr, &[]),
            Bytes::from_static(&[7, 0, 2, 0xff, 0xfe, 1]),
            Bytes::from_static(&[7, 0, 1, b'a', 3, b'x', b':', b'1', 1]),
            Bytes::from_static(&[7, 0, 1, b'a', 9, b'1']),
            Bytes::from_static(&[7, 1, 0]),
            Bytes::from_static(&[8, 0]),
        ] {
            assert!(decode_request(bad.clone(), parse_resp).is_err(), "{bad:?}");
        }
    }

    /// What the relay answers comes back as the target's response, or as the failure the
    /// sender's own link would have given.
    #[test]
    fn relay_responses_round_trip() {
        let r = decode_relay_response(encode_relay_answer(42, b"$1\r\nx\r\n")).unwrap();
        assert_eq!((r.epoch, &r.body[..]), (42, &b"$1\r\nx\r\n"[..]));
        let r = decode_relay_response(encode_relay_answer(7, b"")).unwrap();
        assert_eq!((r.epoch, r.body.len()), (7, 0));
        use shoal_wire::{Unavailable, WireError};
        let refused =
            WireError::PeerUnavailable(Unavailable::Connect(std::io::ErrorKind::ConnectionRefused));
        for (e, f) in [
            (WireError::Timeout, RelayFailure::Timeout),
            (refused, RelayFailure::Refused),
            (
                WireError::PeerUnavailable(Unavailable::ConnectionLost),
                RelayFailure::Lost,
            ),
            (
                WireError::PeerUnavailable(Unavailable::ConnectTimeout),
                RelayFailure::Unreachable,
            ),
            (WireError::Overloaded, RelayFailure::Failed),
        ] {
            assert_eq!(RelayFailure::of(&e), f);
            let back = decode_relay_response(encode_relay_failure(f, "why")).unwrap_err();
            assert_eq!(RelayFailure::of(&back), f, "{back}");
        }
        let shut = decode_relay_response(encode_relay_failure(RelayFailure::ShuttingDown, ""))
            .unwrap_err();
        assert_eq!(RelayFailure::of(&shut), RelayFailure::ShuttingDown);
        for bad in [&b""[..], &[0, 1, 2][..], &[1][..], &[2, 0][..]] {
            assert!(decode_relay_response(Bytes::copy_from_slice(bad)).is_err());
        }
        // An unknown failure code is a failure, not an answer.
        let e = decode_relay_response(Bytes::from_static(&[1, 99])).unwrap_err();
        assert_eq!(RelayFailure::of(&e), RelayFailure::Failed);
    }

    #[test]
    fn commands_round_trip() {
        let args: Vec<Bytes> = vec!["SET".into(), "k".into(), Bytes::from(vec![0u8, 13, 10])];
        let scope = ScopeSpec {
            owners: vec![2],
            down: vec![0, 1],
        };
        for s in [None, Some(&scope)] {
            let body = encode_command(Protocol::Resp3, 7, s, &args, 1234, 99);
            let Request::Command {
                proto,
                db,
                scope,
                args: got,
                deadline_ms,
                reply_limit,
                failover,
                resent,
                once,
                origin,
            } = decode_request(body.clone(), parse_resp).unwrap()
            else {
                panic!("not a command");
            };
            assert!(!resent && !once && origin.is_none());
            // Marked to run at once: the same command, scope and all.
            let Request::Command {
                once,
                scope: same_scope,
                args: same_args,
                ..
            } = decode_request(at_once(body.clone()), parse_resp).unwrap()
            else {
                panic!("not a command");
            };
            assert!(once);
            assert_eq!((same_scope, same_args), (s.cloned(), args.clone()));
            assert_eq!(
                (proto, scope, got),
                (Protocol::Resp3, s.cloned(), args.clone())
            );
            assert_eq!((deadline_ms, reply_limit, db), (1234, 99, 7));
            assert!(!failover);
            // A failover copy: a fresh deadline and the mark, the protocol unchanged.
            let Request::Command {
                deadline_ms: later,
                failover,
                proto: again,
                ..
            } = decode_request(restamp(&body, 5678), parse_resp).unwrap()
            else {
                panic!("not a command");
            };
            assert_eq!(later, 5678);
            assert!(failover);
            assert_eq!(again, Protocol::Resp3);
            // Sent again after a send-back: the resend mark, no failover mark.
            let Request::Command {
                deadline_ms: later,
                failover,
                resent,
                proto: again,
                ..
            } = decode_request(redate(&body, 6789, true), parse_resp).unwrap()
            else {
                panic!("not a command");
            };
            assert_eq!(
                (later, failover, resent, again),
                (6789, false, true, Protocol::Resp3)
            );
            // Sent on to another copy than the one that sent it back: the mark is cleared.
            let marked = redate(&body, 6789, true);
            let Request::Command {
                deadline_ms: later,
                resent,
                db,
                proto: again,
                ..
            } = decode_request(redate(&marked, 7000, false), parse_resp).unwrap()
            else {
                panic!("not a command");
            };
            assert_eq!(
                (later, resent, db, again),
                (7000, false, 7, Protocol::Resp3)
            );
        }
    }

    #[test]
    fn a_tracking_clients_command_carries_its_origin() {
        let args: Vec<Bytes> = vec!["GET".into(), "k".into()];
        let origin = Origin {
            member: "n1".into(),
            client: 42,
            tracks: true,
        };
        let body = encode_command(Protocol::Resp3, 3, None, &args, 1234, 99);
        let carried = from_origin(body.clone(), &origin);
        // With the other marks too: run at once, a failover copy.
        let marked = restamp(&at_once(carried.clone()), 5678);
        for (b, once, failover) in [(carried, false, false), (marked, true, true)] {
            let Request::Command {
                origin: got,
                args: same,
                db,
                once: o,
                failover: f,
                deadline_ms,
                ..
            } = decode_request(b, parse_resp).unwrap()
            else {
                panic!("not a command");
            };
            assert_eq!(got.as_ref(), Some(&origin));
            assert_eq!((same, db, o, f), (args.clone(), 3, once, failover));
            assert_eq!(deadline_ms, if failover { 5678 } else { 1234 });
        }
        // A fan-out part (a scope) is not marked.
        let scope = ScopeSpec {
            owners: vec![1],
            down: vec![],
        };
        let part = encode_command(Protocol::Resp2, 0, Some(&scope), &args, 0, 0);
        assert_eq!(from_origin(part.clone(), &origin), part);
        // Bad origins: a tracks byte other than 0 and 1, an empty or cut name.
        let good = from_origin(body, &origin);
        let at = SCOPE_AT + 1;
        let mut bad_tracks = good.to_vec();
        bad_tracks[at + 8] = 2;
        let mut empty_name = good.to_vec();
        empty_name[at + 9..at + 11].copy_from_slice(&[0, 0]);
        for bad in [bad_tracks, empty_name, good[..at + 12].to_vec()] {
            assert!(decode_request(Bytes::from(bad), parse_resp).is_err());
        }
    }

    #[test]
    fn replication_batches_round_trip() {
        let live = KeyState::Live {
            kind: Kind::String,
            value: Bytes::from_static(b"v"),
            flags: 7,
            expire_at_ms: 99,
            version: 5,
        };
        let dead = KeyState::Deleted { version: 6 };
        let entries = [
            (&b"a"[..], &live),
            (&b"b"[..], &dead),
            (&b"c"[..], &KeyState::Absent),
        ];
        let body = encode_replicate(entries.iter().copied());
        assert_eq!(
            body.len(),
            5 + entry_len(b"a", &live) + entry_len(b"b", &dead)
        );
        let Request::Replicate(got) = decode_request(body.clone(), parse_resp).unwrap() else {
            panic!("not a replicate message");
        };
        assert_eq!(
            got,
            vec![
                (Bytes::from("a"), live.clone()),
                (Bytes::from("b"), dead.clone())
            ]
        );
        // Every truncation is an error, never a panic.
        for n in 0..body.len() {
            assert!(decode_request(body.slice(..n), parse_resp).is_err(), "{n}");
        }
        // Stamped with the sender's clock: 8 bytes more, the same entries; and a delta.
        let changes: Vec<(&[u8], Change)> = entries
            .iter()
            .map(|(k, s)| (*k, Change::State((*s).clone())))
            .collect();
        let stamped = encode_replicate_at(1_800_000_000_123, changes.iter().map(|(k, c)| (*k, c)));
        assert_eq!(stamped.len(), body.len() + 8);
        assert_eq!(stamped[0], KIND_REPLICATE_AT);
        let Request::ReplicateAt {
            sent_at_ms,
            entries: again,
        } = decode_request(stamped.clone(), parse_resp).unwrap()
        else {
            panic!("not a stamped replicate message");
        };
        assert_eq!(sent_at_ms, 1_800_000_000_123);
        let states: Vec<(Bytes, Change)> = got
            .iter()
            .map(|(k, s)| (k.clone(), Change::State(s.clone())))
            .collect();
        assert_eq!(again, states);
        for n in 0..stamped.len() {
            assert!(
                decode_request(stamped.slice(..n), parse_resp).is_err(),
                "{n}"
            );
        }
        let delta = Change::Delta {
            base: 7,
            version: 9,
            expire_at_ms: 123,
            command: Bytes::from_static(b"*3\r\n$4\r\nHDEL\r\n$1\r\nh\r\n$1\r\nf\r\n"),
            clock_ms: 0,
        };
        let body = encode_replicate_at(5, [(&b"h"[..], &delta)].into_iter());
        assert_eq!(body.len(), 1 + 8 + 4 + change_len(b"h", &delta));
        let Request::ReplicateAt { entries, .. } =
            decode_request(body.clone(), parse_resp).unwrap()
        else {
            panic!("not a stamped replicate message");
        };
        assert_eq!(entries, vec![(Bytes::from("h"), delta)]);
        for n in 0..body.len() {
            assert!(decode_request(body.slice(..n), parse_resp).is_err(), "{n}");
        }
        // A delta is refused in a plain REPLICATE (only the replication queue sends them).
        let mut plain = body.to_vec();
        plain[0] = KIND_REPLICATE;
        plain.drain(1..9);
        assert!(decode_request(Bytes::from(plain), parse_resp).is_err());
        // A clocked delta (tag 9) whose clock is 0 is refused: that delta is a tag 7.
        let mut zero = body.to_vec();
        zero[1 + 8 + 4] = TAG_DELTA_AT;
        zero.extend_from_slice(&0u64.to_be_bytes());
        assert_eq!(
            decode_request(Bytes::from(zero.clone()), parse_resp),
            Err(MessageError::Field("clock"))
        );
        let n = zero.len();
        zero[n - 1] = 1;
        assert!(decode_request(Bytes::from(zero), parse_resp).is_ok());
    }

    #[test]
    fn lying_lengths_are_refused_before_allocating() {
        let mut b = BytesMut::new();
        b.put_u8(KIND_REPLICATE);
        b.put_u32(u32::MAX);
        assert_eq!(
            decode_request(b.freeze(), parse_resp),
            Err(MessageError::Truncated)
        );
        let mut b = BytesMut::new();
        b.put_u8(KIND_REPLICATE);
        b.put_u32(1);
        b.put_u8(TAG_LIVE);
        b.put_u64(1);
        b.put_u32(u32::MAX);
        assert!(decode_request(b.freeze(), parse_resp).is_err());
        assert_eq!(
            decode_request(Bytes::from_static(&[11]), parse_resp),
            Err(MessageError::Kind(11))
        );
        assert_eq!(
            decode_request(Bytes::new(), parse_resp),
            Err(MessageError::Empty)
        );
    }

    #[test]
    fn handoff_fetch_and_done_round_trip() {
        let live = KeyState::Live {
            kind: Kind::String,
            value: Bytes::from_static(b"v"),
            flags: 0,
            expire_at_ms: 0,
            version: 9,
        };
        let body = encode_handoff([(&b"k"[..], &live)].into_iter());
        assert_eq!(
            decode_request(body, parse_resp).unwrap(),
            Request::Handoff(vec![(Bytes::from("k"), live.clone())])
        );
        let keys = vec![Bytes::from("a"), Bytes::new(), Bytes::from("ccc")];
        let body = encode_fetch(&keys);
        assert_eq!(
            decode_request(body.clone(), parse_resp).unwrap(),
            Request::Fetch(keys)
        );
        for n in 0..body.len() {
            assert!(decode_request(body.slice(..n), parse_resp).is_err(), "{n}");
        }
        let body = encode_done(42, "node-1");
        assert_eq!(
            decode_request(body.clone(), parse_resp).unwrap(),
            Request::Done {
                view: 42,
                name: "node-1".into()
            }
        );
        for n in 0..body.len() {
            assert!(decode_request(body.slice(..n), parse_resp).is_err(), "{n}");
        }
        let states = encode_replicate([(&b"k"[..], &live)].into_iter());
        assert_eq!(
            decode_states(states).unwrap(),
            vec![(Bytes::from("k"), live)]
        );
        // A FETCH that claims more keys than its bytes could hold.
        let mut b = BytesMut::new();
        b.put_u8(KIND_FETCH);
        b.put_u32(u32::MAX);
        assert_eq!(
            decode_request(b.freeze(), parse_resp),
            Err(MessageError::Truncated)
        );
    }
}
