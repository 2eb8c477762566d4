//! A routed command's reply: now, or later as bytes in the client's protocol; and the helpers
//! that turn replies into those bytes.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use shoal_engine::cmd::{self, Session};
use shoal_resp::{Protocol, Reply};

use crate::replicate::{unconfirmed, wait_acks, Acks};

/// A reply still to come, as encoded bytes in the client's protocol.
pub type ReplyFuture = Pin<Box<dyn Future<Output = Bytes> + Send + 'static>>;

/// The result of routing one command.
pub enum Outcome {
    /// Answered here, now.
    Reply(Reply),
    /// Answered later, and not run yet (forwarded, fanned out, split, waiting for a fetch):
    /// what it writes is not in the local store until the reply comes.
    Later(ReplyFuture),
    /// Ran here already; only the reply waits (for the replicas' acks, `write-ack = all`).
    /// A later write on this connection need not wait for it: its effect is in the store.
    Acked(ReplyFuture),
}

impl Outcome {
    /// The reply as a future of its bytes (for a part of a split or a transaction).
    pub fn into_future(self, proto: Protocol) -> ReplyFuture {
        match self {
            Outcome::Reply(r) => {
                let bytes = encode(&r, proto);
                Box::pin(async move { bytes })
            }
            Outcome::Later(f) | Outcome::Acked(f) => f,
        }
    }
}

/// A reply that, with `write-ack = all`, waits for the replicas' acks (at most `ack_wait`).
pub fn with_acks(reply: Reply, proto: Protocol, acks: Acks, ack_wait: Duration) -> Outcome {
    if acks.is_empty() {
        return Outcome::Reply(reply);
    }
    let bytes = encode(&reply, proto);
    Outcome::Acked(Box::pin(async move {
        if wait_acks(acks, ack_wait).await {
            bytes
        } else {
            unconfirmed(bytes)
        }
    }))
}

pub fn encode(reply: &Reply, proto: Protocol) -> Bytes {
    let mut b = BytesMut::new();
    reply.encode(proto, &mut b);
    b.freeze()
}

/// An error reply's bytes (the same in RESP2 and RESP3).
pub fn error_bytes(text: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(text.len() + 3);
    b.put_u8(b'-');
    b.put_slice(text.replace(['\r', '\n'], " ").as_bytes());
    b.put_slice(b"\r\n");
    b.freeze()
}

/// What a forwarded command's reply may take: the client's budget (0 = only the frame's).
pub fn reply_limit(session: &Session) -> u64 {
    match session.budget.left() {
        n if n >= cmd::FORWARDED_REPLY_MAX => 0,
        n => n as u64,
    }
}
