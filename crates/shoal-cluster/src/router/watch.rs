//! WATCH of keys another node owns. What each key holds at WATCH time (its type, version
//! and expiry: `cmd::multi::Snapshot`) is read where the key is owned (the internal
//! `multi.snapshot`, routed as a read), and kept in the client's session; EXEC then sends
//! the transaction whole to that node with the snapshots (`message::WATCHING_TRANSACTION`),
//! which compares them as its own EXEC does, isolated. Copies of a key hold the same
//! versions, so a snapshot read on one copy compares on another (after a failover, say).
//! A transaction that cannot go there whole has its watched keys read there again just
//! before EXEC ([`before_exec`]), compared, then runs command by command (not isolated).

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures_util::future::join_all;
use shoal_engine::cmd::multi::{snapshot_from, Seen, Snapshot, SNAPSHOT_LEN};
use shoal_engine::cmd::{self, Session};
use shoal_resp::Reply;

use super::outcome::{error_bytes, Outcome};
use super::Order;
use crate::{Cluster, Server};

/// WATCH in a cluster, of keys some of which this node does not own.
pub(super) fn watch(
    node: &Arc<Server>,
    cluster: &Cluster,
    session: &mut Session,
    order: &mut Order,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    if session.multi.is_some() {
        return Outcome::Reply(Reply::error(cmd::multi::ERR_WATCH_IN_MULTI));
    }
    // The keys not watched yet.
    let view = cluster.view();
    let mut readings = Readings::default();
    for key in &args[1..] {
        let stored = cmd::db::stored_key(session.db, key);
        if session.watched.iter().any(|(k, _)| *k == stored) {
            continue;
        }
        let cell = Arc::new(OnceLock::new());
        readings.add(view.owner_of(key), &stored, cell.clone());
        session.watched.push((stored, Seen::Arriving(cell)));
    }
    let read = readings.send(node, cluster, session, order, now_ms);
    Outcome::Later(Box::pin(async move {
        // A key no copy answered for (EXEC then aborts): the error says why.
        read.await.unwrap_or_else(|| Bytes::from_static(b"+OK\r\n"))
    }))
}

/// Where a watched key's snapshot goes when it comes.
type Cell = Arc<OnceLock<Option<Snapshot>>>;

/// Keys to read snapshots of: one `multi.snapshot` request per owner and database (a key
/// may be watched in another database than the one selected when it is read again), with
/// the cells its answer fills.
#[derive(Default)]
struct Readings(Vec<Reading>);

struct Reading {
    owner: u16,
    db: u8,
    request: Vec<Bytes>,
    cells: Vec<Cell>,
}

impl Readings {
    /// Key `stored` (in its database), owned by member `owner`, to be read into `cell`.
    fn add(&mut self, owner: u16, stored: &[u8], cell: Cell) {
        let (db, key) = cmd::db::split_key(stored);
        let at = match self.0.iter().position(|r| (r.owner, r.db) == (owner, db)) {
            Some(at) => at,
            None => {
                self.0.push(Reading {
                    owner,
                    db,
                    request: vec![Bytes::from_static(SNAPSHOT)],
                    cells: Vec::new(),
                });
                self.0.len() - 1
            }
        };
        self.0[at].request.push(Bytes::copy_from_slice(key));
        self.0[at].cells.push(cell);
    }

    /// Routes the requests (in `session`'s order, each in its database) and returns the
    /// future that fills the cells: its output is the first error, if a request got one
    /// (its keys' cells then stay empty).
    fn send(
        self,
        node: &Arc<Server>,
        cluster: &Cluster,
        session: &mut Session,
        order: &mut Order,
        now_ms: u64,
    ) -> impl std::future::Future<Output = Option<Bytes>> + Send + 'static {
        let snapshot = cmd::lookup(SNAPSHOT).expect("an internal row");
        let selected = session.db;
        let mut parts = Vec::with_capacity(self.0.len());
        for r in self.0 {
            session.db = r.db;
            let reply = super::route(node, cluster, session, order, snapshot, &r.request, now_ms);
            parts.push((r.cells, reply.into_future(session.proto)));
        }
        session.db = selected;
        async move {
            let (cells, replies): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
            let mut failed = None;
            for (cells, reply) in cells.into_iter().zip(join_all(replies).await) {
                match snapshots(&reply, cells.len()) {
                    Some(seen) => {
                        for (cell, seen) in cells.iter().zip(seen) {
                            let _ = cell.set(seen);
                        }
                    }
                    None if reply.starts_with(b"-") => {
                        failed.get_or_insert(reply);
                    }
                    None => {
                        failed.get_or_insert_with(|| error_bytes("ERR WATCH got no answer"));
                    }
                }
            }
            failed
        }
    }
}

/// Before EXEC (`args`) on a plain connection: when the transaction WATCHes keys another
/// node owns and cannot go there whole (its keys are on other nodes), the keys are read
/// again at their owners (`Seen::Reread`); the future ends once they are in, and EXEC
/// then runs (the connection holds it), aborting if one changed since WATCH. `None` when
/// EXEC needs no such reading (or has it already).
///
/// This is not isolation: a change between this reading and the queued commands goes
/// unseen, as a transaction across owners is not isolated either (it runs command by
/// command). Redis Cluster refuses such a transaction (CROSSSLOT); a client written for
/// one Redis (redis-py's `pipe.watch("a", "b")` then `SET c`) expects it to run.
pub fn before_exec(
    node: &Arc<Server>,
    session: &mut Session,
    in_flight: &mut super::InFlight,
    args: &[Bytes],
    now_ms: u64,
) -> Option<super::ReplyFuture> {
    if session.watched.is_empty() || session.redis_cluster {
        return None;
    }
    let tx = session.multi.as_ref().filter(|tx| !tx.dirty)?;
    let cluster = node.cluster.as_ref()?;
    if cmd::lookup(&args[0]).map(|s| s.route) != Some(cmd::Route::Exec) {
        return None;
    }
    let view = cluster.view();
    // Keys of another node read at WATCH time (one whose WATCH got no answer aborts EXEC
    // anyway).
    let elsewhere = |(k, seen): &(Bytes, Seen)| {
        matches!(seen, Seen::Arriving(c) if c.get().is_some()) && view.owner_of(k) != view.me
    };
    if !session.watched.iter().any(elsewhere) {
        return None;
    }
    let keys = session.watched.iter().map(|(k, _)| k);
    if crate::plan::transaction_elsewhere(&view.placement, view.me, &tx.queue, keys).is_some() {
        return None;
    }
    let mut readings = Readings::default();
    for entry in session.watched.iter_mut() {
        if !elsewhere(entry) {
            continue;
        }
        let (key, seen) = entry;
        let now = Arc::new(OnceLock::new());
        readings.add(view.owner_of(key), key, now.clone());
        let then = seen.get().flatten();
        *seen = Seen::Reread { then, now };
    }
    // A reading that fails leaves its keys unread: EXEC then aborts. EXEC waits until every
    // reply before it is in (`must_wait`), the readings' too, also when the connection
    // settles only half of a full window of replies.
    in_flight.watching = true;
    let read = readings.send(node, cluster, session, &mut in_flight.order, now_ms);
    // Not routed by `dispatch`, which closes the batches after a reply to come.
    in_flight.order.batches.close();
    Some(Box::pin(async move {
        read.await;
        Bytes::new()
    }))
}

/// The internal command that reads snapshots (`cmd::multi::snapshots`).
const SNAPSHOT: &[u8] = b"multi.snapshot";

/// The snapshots in a reply of `multi.snapshot` for `n` keys: a bulk string of `n` times
/// [`SNAPSHOT_LEN`] bytes (the same in RESP2 and RESP3).
fn snapshots(reply: &[u8], n: usize) -> Option<Vec<Option<Snapshot>>> {
    let header = format!("${}\r\n", n * SNAPSHOT_LEN);
    let body = reply
        .strip_prefix(header.as_bytes())?
        .strip_suffix(b"\r\n")?;
    if body.len() != n * SNAPSHOT_LEN {
        return None;
    }
    body.chunks_exact(SNAPSHOT_LEN).map(snapshot_from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_store::Kind;

    #[test]
    fn snapshots_read_back_from_their_reply_and_nothing_else_does() {
        let seen = [None, Some((Kind::List, 9 << 12, Some(1_800_000_000_000)))];
        let mut b = Vec::new();
        for s in seen {
            shoal_engine::cmd::multi::snapshot_bytes(s, &mut b);
        }
        assert_eq!(b.len(), 2 * SNAPSHOT_LEN);
        let mut reply = format!("${}\r\n", b.len()).into_bytes();
        reply.extend_from_slice(&b);
        reply.extend_from_slice(b"\r\n");
        assert_eq!(snapshots(&reply, 2), Some(seen.to_vec()));
        assert_eq!(snapshots(&reply, 1), None);
        assert_eq!(snapshots(&reply, 3), None);
        assert_eq!(snapshots(&reply[..reply.len() - 1], 2), None);
        for bad in [
            &b"-ERR x\r\n"[..],
            b"$-1\r\n",
            b"+OK\r\n",
            b"$3\r\nabc\r\n",
            b"",
        ] {
            assert_eq!(snapshots(bad, 1), None);
        }
        let mut unknown_kind = b"$17\r\n".to_vec();
        unknown_kind.extend_from_slice(&[9; 17]);
        unknown_kind.extend_from_slice(b"\r\n");
        assert_eq!(snapshots(&unknown_kind, 1), None);
    }
}
