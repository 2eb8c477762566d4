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
//! **Task model.** Client side ([`PeerClient`]): one long-lived connection per peer, owned by
//! one owner task that holds the pending-request table (requests matched by id, many in
//! flight), plus one reader and one writer task per connection. The writer drains a bounded
//! channel into a buffer and issues one `write_all` per drained batch. A semaphore bounds
//! requests in flight (over it: [`WireError::Overloaded`] at once); each request has a
//! timeout; connection loss fails everything in flight at once with
//! [`WireError::PeerUnavailable`] and the next request reconnects (after a short backoff if
//! the connect failed). Server side ([`serve_peer`]): the calling task reads, each request
//! runs as a task (bounded per connection), responses go through the same batching writer.
//!
//! **Layout.**
//! - [`frame`]: constants, [`Frame`], encoder, [`decode`], [`FrameError`].
//! - [`handshake`]: [`AuthConfig`], both halves of the handshake, [`HandshakeError`].
//! - `client`: [`PeerClient`], [`PeerConfig`], [`WireError`].
//! - `server`: [`serve_peer`], [`PeerHandler`], [`ServerConfig`], [`ServeError`].
//! - `writer`: the batching writer task both sides use.

mod client;
pub mod frame;
pub mod handshake;
mod server;
mod writer;

#[cfg(test)]
mod tests;

use bytes::Bytes;

pub use client::{PeerClient, PeerConfig, Unavailable, WireError};
pub use frame::{
    decode, ErrorCode, Frame, FrameError, FrameKind, FrameLimits, RefuseReason, HEADER_LEN, MAGIC,
    PROTOCOL_VERSION,
};
pub use handshake::{AuthConfig, HandshakeError};
pub use server::{serve_peer, PeerHandler, ServeError, ServerConfig};

/// The answer to one request: the responder's placement epoch (so the sender learns it is
/// behind) and the opaque body (RESP reply bytes, for the node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub epoch: u64,
    pub body: Bytes,
}
