//! Shoal's inter-node protocol: a node that does not own a key forwards the request to the
//! owner over this. The crate moves opaque bytes; it knows nothing of RESP, keys or rings.
//!
//! **Role.** A request is `(sender's placement epoch, body)`, a response is
//! `(responder's epoch, body)`; the node puts a RESP command in the body and relays the
//! RESP reply bytes verbatim. Transport-level failures (overloaded, shutting down) come back
//! as an Error frame, surfaced as [`WireError::Remote`].
//!
//! **Framing.** Every frame is a 16-byte header (`b"SH"`, version, kind, request id u64 BE,
//! payload length u32 BE) and a payload; [`frame`] documents each kind, `docs/wire.md`
//! the whole layout byte by byte. The decoder is resumable (`Ok(None)` = need more bytes),
//! checks every declared length against [`FrameLimits`] before waiting for or allocating
//! anything (1 KiB for control frames, so an unauthenticated peer is cheap), and never panics
//! (a proptest and the `wire_frame` fuzz target hold it to that).
//!
//! **Handshake.** Version check and mutual challenge-response authentication with the
//! cluster secret (BLAKE3 keyed MACs over both sides' nonces; the secret never crosses the
//! wire). A wrong secret, another cluster name or another version is answered with a
//! Refused frame and a reason code, logged on both sides, and closed. See [`handshake`].
//!
//! **Task model.** Client side ([`PeerClient`]): one long-lived connection per peer, set up
//! and torn down by one owner task, plus one reader and one writer task per connection.
//! While the connection is up the owner is off the request path: `request` enters itself in
//! a pending-request table shared under a short lock (requests matched by id, many in
//! flight) and queues its frame for the writer, and the reader answers it from the table.
//! Only while there is no connection do requests queue for the owner, which connects and
//! then hands them to the writer. The writer takes everything queued in a bounded outbox
//! into a buffer and issues one `write_all` per batch. A counter bounds requests in flight;
//! over it requests wait in the link's queue, in order, and go out as places free (over
//! the queue's own bound: [`WireError::Overloaded`] at once); each request has a timeout (a
//! timer of its own, see the client module), and one that ends
//! unanswered frees its place at once; connection loss fails everything in flight at once
//! with [`WireError::PeerUnavailable`] and the next request reconnects (after a short
//! backoff if the connect failed). Server side ([`serve_peer`]): the calling task reads and
//! calls the [`PeerHandler`] synchronously for each request; an answer it has at once
//! ([`Handled::Ready`]) is queued for the writer right there, and only a request that must
//! wait ([`Handled::Later`]) runs as a task (bounded per connection). Responses go through
//! the same batching writer.
//!
//! **Ordering.** Requests sent through one [`PeerClient`] (clones included) from one task
//! go through one link (the task's thread's, see [`use_link`]: a thread that chooses a link
//! runs its own current-thread runtime, whose tasks never change threads) and are written to
//! its connection in call order, and the server calls
//! [`PeerHandler::handle`] in arrival order, one request at a time per connection; so a
//! handler that does its state changes inside `handle` (which `Later` requires too) applies
//! one sender's requests in the order they were sent: a pipelined `SET k v` then `GET k`
//! forwarded for one client reads its own write. On the client side the order is kept
//! because everything between the call and the socket is first-in first-out: `request`
//! queues its request before its first await, so "call order" is the order in which the
//! request futures are first polled (awaiting them one by one, or polling them together
//! with something like `join_all`, which polls in list order). With the connection up it
//! queues the frame in the writer's outbox itself; without, it queues a command for the
//! owner task, which connects, then moves the queued commands to the outbox in
//! order, and opens the direct way only in the same critical section in which it empties
//! its queue, so a direct request never overtakes a queued one (a connect in between holds
//! back the requests behind it, it does not reorder them); the writer encodes frames in
//! outbox order. What is not ordered: requests from different tasks; a request that failed
//! (`Overloaded`, `PeerUnavailable`, `Timeout` before it was sent) while later ones went
//! through; requests on either side of a reconnect (those on the lost connection may or may
//! not have run); and responses, which come back in any order, matched by id.
//!
//! **Layout.**
//! - [`frame`]: constants, [`Frame`], encoder, [`decode`], [`FrameError`].
//! - [`handshake`]: [`AuthConfig`], both halves of the handshake, [`HandshakeError`].
//! - `client`: [`PeerClient`], [`PeerConfig`], [`WireError`].
//! - `server`: [`serve_peer`], [`PeerHandler`], [`Handled`], [`ServerConfig`], [`ServeError`].
//! - `writer`: the batching writer task both sides use.

mod client;
pub mod frame;
pub mod handshake;
mod server;
mod writer;

#[cfg(test)]
mod tests;

use bytes::Bytes;

pub use client::{
    set_links, transfer_allowance, use_link, PeerClient, PeerConfig, Unavailable, WireError,
};
pub use frame::{
    decode, peek_request_bodies, ErrorCode, Frame, FrameError, FrameKind, FrameLimits,
    RefuseReason, HEADER_LEN, MAGIC, PROTOCOL_VERSION,
};
pub use handshake::{probe, AuthConfig, HandshakeError};
pub use server::{serve_peer, Handled, PeerHandler, ServeError, ServerConfig, LOOK_AHEAD_MAX};

/// The answer to one request: the responder's placement epoch (so the sender learns it is
/// behind) and the opaque body (RESP reply bytes, for the node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub epoch: u64,
    pub body: Bytes,
}
