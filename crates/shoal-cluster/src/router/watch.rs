//! WATCH of keys another node owns. What each key holds at WATCH time (its type, version
//! and expiry: `cmd::multi::Snapshot`) is read where the key is owned (the internal
//! `multi.snapshot`, routed as a read), and kept in the client's session; EXEC then sends
//! the transaction whole to that node with the snapshots (`message::WATCHING_TRANSACTION`),
//! which compares them as its own EXEC does, isolated. Copies of a key hold the same
//! versions, so a snapshot read on one copy compares on another (after a failover, say).

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
        return Outcome::Reply(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    let snapshot = cmd::lookup(SNAPSHOT).expect("an internal row");
    // The keys not watched yet, by owner: one request per owner.
    let view = cluster.view();
    let mut by_owner: Vec<(u16, Vec<Bytes>, Vec<Cell>)> = Vec::new();
    for key in &args[1..] {
        let stored = cmd::db::stored_key(session.db, key);
        if session.watched.iter().any(|(k, _)| *k == stored) {
            continue;
        }
        let cell = Arc::new(OnceLock::new());
        session.watched.push((stored, Seen::Arriving(cell.clone())));
        let owner = view.owner_of(key);
        let at = match by_owner.iter().position(|(o, _, _)| *o == owner) {
            Some(at) => at,
            None => {
                let request = vec![Bytes::from_static(SNAPSHOT)];
                by_owner.push((owner, request, Vec::new()));
                by_owner.len() - 1
            }
        };
        by_owner[at].1.push(key.clone());
        by_owner[at].2.push(cell);
    }
    let mut parts = Vec::with_capacity(by_owner.len());
    for (_, request, cells) in by_owner {
        let reply = super::route(node, cluster, session, order, snapshot, &request, now_ms);
        parts.push((cells, reply.into_future(session.proto)));
    }
    Outcome::Later(Box::pin(async move {
        let (cells, replies): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        let mut failed = None;
        for (cells, reply) in cells.into_iter().zip(join_all(replies).await) {
            match snapshots(&reply, cells.len()) {
                Some(seen) => {
                    for (cell, seen) in cells.iter().zip(seen) {
                        let _ = cell.set(seen);
                    }
                }
                // No answer from any copy (EXEC then aborts): the error says why.
                None if reply.starts_with(b"-") => {
                    failed.get_or_insert(reply);
                }
                None => {
                    failed.get_or_insert_with(|| error_bytes("ERR WATCH got no answer"));
                }
            }
        }
        failed.unwrap_or_else(|| Bytes::from_static(b"+OK\r\n"))
    }))
}

/// Where a watched key's snapshot goes when it comes.
type Cell = Arc<OnceLock<Option<Snapshot>>>;

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
