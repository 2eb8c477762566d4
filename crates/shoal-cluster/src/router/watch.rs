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
    let mut parts = Vec::with_capacity(args.len() - 1);
    for key in &args[1..] {
        let stored = cmd::db::stored_key(session.db, key);
        if session.watched.iter().any(|(k, _)| *k == stored) {
            continue;
        }
        let cell = Arc::new(OnceLock::new());
        session.watched.push((stored, Seen::Arriving(cell.clone())));
        let request = [Bytes::from_static(SNAPSHOT), key.clone()];
        let reply = super::route(node, cluster, session, order, snapshot, &request, now_ms);
        parts.push((cell, reply.into_future(session.proto)));
    }
    Outcome::Later(Box::pin(async move {
        let (cells, replies): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        let mut failed = None;
        for (cell, reply) in cells.into_iter().zip(join_all(replies).await) {
            match one_snapshot(&reply) {
                Some(seen) => {
                    let _ = cell.set(seen);
                }
                // No answer from any copy (the key's EXEC then aborts): the error says why.
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

/// The internal command that reads snapshots (`cmd::multi::snapshots`).
const SNAPSHOT: &[u8] = b"multi.snapshot";

/// The snapshot in a reply of `multi.snapshot` for one key: a bulk string of
/// [`SNAPSHOT_LEN`] bytes (the same in RESP2 and RESP3).
fn one_snapshot(reply: &[u8]) -> Option<Option<Snapshot>> {
    let rest = reply.strip_prefix(b"$17\r\n")?;
    let body = rest.strip_suffix(b"\r\n")?;
    (body.len() == SNAPSHOT_LEN).then_some(())?;
    snapshot_from(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_store::Kind;

    #[test]
    fn a_snapshot_reads_back_from_its_reply_and_nothing_else_does() {
        for seen in [None, Some((Kind::List, 9 << 12, Some(1_800_000_000_000)))] {
            let mut b = Vec::new();
            shoal_engine::cmd::multi::snapshot_bytes(seen, &mut b);
            let mut reply = format!("${}\r\n", b.len()).into_bytes();
            reply.extend_from_slice(&b);
            reply.extend_from_slice(b"\r\n");
            assert_eq!(SNAPSHOT_LEN, b.len());
            assert_eq!(one_snapshot(&reply), Some(seen));
            assert_eq!(one_snapshot(&reply[..reply.len() - 1]), None);
        }
        for bad in [
            &b"-ERR x\r\n"[..],
            b"$-1\r\n",
            b"+OK\r\n",
            b"$3\r\nabc\r\n",
            b"",
        ] {
            assert_eq!(one_snapshot(bad), None);
        }
        let mut unknown_kind = b"$17\r\n".to_vec();
        unknown_kind.extend_from_slice(&[9; 17]);
        unknown_kind.extend_from_slice(b"\r\n");
        assert_eq!(one_snapshot(&unknown_kind), None);
    }
}
