//! Frame layout, encoder and resumable decoder.
//!
//! Every frame is a 16-byte header followed by `length` payload bytes (the full byte-by-byte
//! description, with examples, is in `docs/wire.md`):
//!
//! ```text
//! offset  size  field
//!      0     2  magic           b"SH" (0x53 0x48)
//!      2     1  version         PROTOCOL_VERSION (1)
//!      3     1  kind            FrameKind code
//!      4     8  request id      u64 big-endian; 0 on handshake frames
//!     12     4  payload length  u32 big-endian, header not included
//!     16     n  payload         per kind, below
//!
//! kind  name       payload
//! 0x01  Hello      cluster_len u8, cluster [cluster_len], client_nonce [32],
//!                  node_len u8, node [node_len]                      (names UTF-8)
//! 0x02  Challenge  server_nonce [32], mac [32], node_len u8, node [node_len]
//! 0x03  Proof      mac [32]
//! 0x04  Welcome    (empty)
//! 0x05  Refused    reason u8 (RefuseReason), message UTF-8 [rest]
//! 0x10  Request    epoch u64 BE, body [rest]                         (id != 0)
//! 0x11  Response   epoch u64 BE, body [rest]                         (id of the request)
//! 0x12  Error      code u8 (ErrorCode), message UTF-8 [rest]         (id of the request)
//! ```
//!
//! Memory discipline: the declared length is checked against [`FrameLimits`] as soon as the
//! header is in, before a byte of payload is waited for, and it is never used to allocate:
//! a complete frame is split off the caller's read buffer, so bodies are zero-copy slices.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// First two bytes of every frame: a cheap check that the peer speaks this protocol at all
/// (a RESP client or an HTTP probe hitting the inter-node port fails on its first bytes).
pub const MAGIC: [u8; 2] = *b"SH";

/// The protocol version this build speaks, carried in every header. Peers of different
/// versions refuse each other at the handshake (`RefuseReason::VersionMismatch`).
pub const PROTOCOL_VERSION: u8 = 1;

/// Bytes of the fixed header: magic 2 + version 1 + kind 1 + id 8 + length 4.
pub const HEADER_LEN: usize = 16;

/// Bytes of a nonce in Hello and Challenge.
pub const NONCE_LEN: usize = 32;

/// Bytes of a MAC in Challenge and Proof (a BLAKE3 keyed hash).
pub const MAC_LEN: usize = 32;

/// Longest cluster or node name: its length travels in one byte.
pub const MAX_NAME_LEN: usize = 255;

/// Longest message text in Refused and Error frames; longer texts are cut at a character
/// boundary when the frame is built. Diagnostics only, so a cap costs nothing.
pub const MAX_MESSAGE_LEN: usize = 256;

/// Bytes of the epoch that starts a Request or Response payload.
const EPOCH_LEN: usize = 8;

/// Default largest Request/Response payload: Redis's largest bulk string (512 MiB) plus 64 KiB
/// for the rest of the command and the epoch.
pub const DEFAULT_MAX_DATA_PAYLOAD: usize = 512 * 1024 * 1024 + 64 * 1024;

/// Default largest payload of every other kind (handshake, Refused, Error): these are small
/// by construction, so a peer that is not yet authenticated cannot make us buffer more.
pub const DEFAULT_MAX_CONTROL_PAYLOAD: usize = 1024;

/// What the frame is. Codes are fixed forever for a protocol version.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameKind {
    Hello = 0x01,
    Challenge = 0x02,
    Proof = 0x03,
    Welcome = 0x04,
    Refused = 0x05,
    Request = 0x10,
    Response = 0x11,
    Error = 0x12,
}

impl FrameKind {
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x01 => Self::Hello,
            0x02 => Self::Challenge,
            0x03 => Self::Proof,
            0x04 => Self::Welcome,
            0x05 => Self::Refused,
            0x10 => Self::Request,
            0x11 => Self::Response,
            0x12 => Self::Error,
            _ => return None,
        })
    }

    /// Request, Response and Error carry data and a request id; the rest are control frames
    /// (id 0, small payload limit).
    pub fn is_data(self) -> bool {
        matches!(self, Self::Request | Self::Response)
    }

    /// Kinds whose header carries a request id (every other kind carries 0).
    fn has_id(self) -> bool {
        matches!(self, Self::Request | Self::Response | Self::Error)
    }
}

/// Why a handshake was refused, sent in a Refused frame before the connection is closed.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefuseReason {
    /// The peer's header carried another protocol version.
    VersionMismatch = 0x01,
    /// The peer belongs to another cluster (a misconfigured seed list, a stale address).
    ClusterMismatch = 0x02,
    /// The peer's MAC did not verify: it holds another cluster secret.
    WrongSecret = 0x03,
    /// The peer sent something that is not the next handshake step.
    Protocol = 0x04,
}

impl RefuseReason {
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x01 => Self::VersionMismatch,
            0x02 => Self::ClusterMismatch,
            0x03 => Self::WrongSecret,
            0x04 => Self::Protocol,
            _ => return None,
        })
    }
}

/// Transport-level failure of one request, answered by the serving side instead of a Response.
/// Command errors are not these: they are RESP error replies inside a Response body.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The serving node has too many requests of this connection in flight and did not
    /// handle this one, so the sender may retry it elsewhere.
    Overloaded = 0x01,
    /// The serving node is shutting down and takes no new requests.
    ShuttingDown = 0x02,
    /// The handler failed without producing a response (it panicked), or the response could
    /// not be framed (too large).
    Internal = 0x03,
}

impl ErrorCode {
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x01 => Self::Overloaded,
            0x02 => Self::ShuttingDown,
            0x03 => Self::Internal,
            _ => return None,
        })
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Overloaded => "overloaded",
            Self::ShuttingDown => "shutting down",
            Self::Internal => "internal",
        })
    }
}

impl std::fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::VersionMismatch => "protocol version mismatch",
            Self::ClusterMismatch => "cluster name mismatch",
            Self::WrongSecret => "wrong cluster secret",
            Self::Protocol => "handshake protocol violation",
        })
    }
}

/// First handshake frame, client to server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub cluster: String,
    pub client_nonce: [u8; NONCE_LEN],
    pub node: String,
}

/// Second handshake frame, server to client: the server proves it holds the secret and
/// challenges the client with its own nonce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub server_nonce: [u8; NONCE_LEN],
    pub mac: [u8; MAC_LEN],
    pub node: String,
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Hello(Hello),
    Challenge(Challenge),
    Proof {
        mac: [u8; MAC_LEN],
    },
    Welcome,
    Refused {
        reason: RefuseReason,
        message: String,
    },
    Request {
        id: u64,
        epoch: u64,
        body: Bytes,
    },
    Response {
        id: u64,
        epoch: u64,
        body: Bytes,
    },
    Error {
        id: u64,
        code: ErrorCode,
        message: String,
    },
}

/// A malformed or oversized frame. Connection-fatal: the reader drops the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("bad magic {0:02x?}: not a shoal inter-node peer")]
    BadMagic([u8; 2]),
    #[error("unsupported protocol version {0} (this node speaks {PROTOCOL_VERSION})")]
    UnsupportedVersion(u8),
    #[error("unknown frame kind 0x{0:02x}")]
    UnknownKind(u8),
    #[error("{kind:?} frame of {len} payload bytes exceeds the limit of {max}")]
    TooLarge {
        kind: FrameKind,
        len: u64,
        max: usize,
    },
    #[error("{kind:?} frame carries request id {id}, expected {}", if kind.has_id() { "non-zero" } else { "0" })]
    BadRequestId { kind: FrameKind, id: u64 },
    #[error("malformed {kind:?} payload: {what}")]
    Malformed { kind: FrameKind, what: &'static str },
}

/// Upper bounds on what a peer can make us buffer. The reader applies them to every header
/// before waiting for the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest Request/Response payload (epoch + body).
    pub max_data_payload: usize,
    /// Largest payload of every other kind.
    pub max_control_payload: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            max_data_payload: DEFAULT_MAX_DATA_PAYLOAD,
            max_control_payload: DEFAULT_MAX_CONTROL_PAYLOAD,
        }
    }
}

impl FrameLimits {
    /// Limits for the handshake: nothing but control frames fit, so an unauthenticated peer
    /// can make us buffer at most a kilobyte.
    pub fn handshake() -> Self {
        FrameLimits {
            max_data_payload: DEFAULT_MAX_CONTROL_PAYLOAD,
            max_control_payload: DEFAULT_MAX_CONTROL_PAYLOAD,
        }
    }

    /// Limits for data frames whose body may be up to `max_body` bytes.
    pub fn with_max_body(max_body: usize) -> Self {
        FrameLimits {
            max_data_payload: max_body.saturating_add(EPOCH_LEN),
            ..Self::default()
        }
    }

    fn max_for(&self, kind: FrameKind) -> usize {
        if kind.is_data() {
            self.max_data_payload
        } else {
            self.max_control_payload
        }
    }
}

/// Largest body a Request or Response can carry at all (the length field is a u32).
pub const MAX_BODY: usize = u32::MAX as usize - EPOCH_LEN;

impl Frame {
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Hello(_) => FrameKind::Hello,
            Frame::Challenge(_) => FrameKind::Challenge,
            Frame::Proof { .. } => FrameKind::Proof,
            Frame::Welcome => FrameKind::Welcome,
            Frame::Refused { .. } => FrameKind::Refused,
            Frame::Request { .. } => FrameKind::Request,
            Frame::Response { .. } => FrameKind::Response,
            Frame::Error { .. } => FrameKind::Error,
        }
    }

    /// Appends the encoded frame to `dst`.
    ///
    /// Fails (writing nothing) only for what cannot be framed: a name over
    /// [`MAX_NAME_LEN`] bytes or a body over [`MAX_BODY`]. Messages over
    /// [`MAX_MESSAGE_LEN`] bytes are cut, never refused.
    /// [`Frame::encode`], but for a data frame whose body is [`WRITE_APART`] or longer: its
    /// head (header and epoch) only, the body returned to be written right after it, so a
    /// large body (a replicated 512 MB value) is not copied once more into the writer's
    /// buffer.
    pub fn encode_head(&self, dst: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        match self {
            Frame::Request { id, epoch, body } | Frame::Response { id, epoch, body }
                if body.len() >= WRITE_APART && body.len() <= MAX_BODY =>
            {
                put_data_head(dst, self.kind(), *id, *epoch, body.len());
                Ok(Some(body.clone()))
            }
            _ => self.encode(dst).map(|()| None),
        }
    }

    pub fn encode(&self, dst: &mut BytesMut) -> Result<(), FrameError> {
        let kind = self.kind();
        let name_err = FrameError::Malformed {
            kind,
            what: "name longer than 255 bytes",
        };
        match self {
            Frame::Hello(h) => {
                if h.cluster.len() > MAX_NAME_LEN || h.node.len() > MAX_NAME_LEN {
                    return Err(name_err);
                }
                let len = 1 + h.cluster.len() + NONCE_LEN + 1 + h.node.len();
                put_header(dst, kind, 0, len);
                put_name(dst, &h.cluster);
                dst.put_slice(&h.client_nonce);
                put_name(dst, &h.node);
            }
            Frame::Challenge(c) => {
                if c.node.len() > MAX_NAME_LEN {
                    return Err(name_err);
                }
                put_header(dst, kind, 0, NONCE_LEN + MAC_LEN + 1 + c.node.len());
                dst.put_slice(&c.server_nonce);
                dst.put_slice(&c.mac);
                put_name(dst, &c.node);
            }
            Frame::Proof { mac } => {
                put_header(dst, kind, 0, MAC_LEN);
                dst.put_slice(mac);
            }
            Frame::Welcome => put_header(dst, kind, 0, 0),
            Frame::Refused { reason, message } => {
                let message = truncate(message);
                put_header(dst, kind, 0, 1 + message.len());
                dst.put_u8(*reason as u8);
                dst.put_slice(message.as_bytes());
            }
            Frame::Request { id, epoch, body } | Frame::Response { id, epoch, body } => {
                if body.len() > MAX_BODY {
                    return Err(FrameError::TooLarge {
                        kind,
                        len: body.len() as u64 + EPOCH_LEN as u64,
                        max: MAX_BODY + EPOCH_LEN,
                    });
                }
                put_data_head(dst, kind, *id, *epoch, body.len());
                dst.put_slice(body);
            }
            Frame::Error { id, code, message } => {
                let message = truncate(message);
                put_header(dst, kind, *id, 1 + message.len());
                dst.put_u8(*code as u8);
                dst.put_slice(message.as_bytes());
            }
        }
        Ok(())
    }
}

/// Cuts `s` to at most [`MAX_MESSAGE_LEN`] bytes at a character boundary.
pub(crate) fn truncate(s: &str) -> &str {
    if s.len() <= MAX_MESSAGE_LEN {
        return s;
    }
    let mut end = MAX_MESSAGE_LEN;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn put_header(dst: &mut BytesMut, kind: FrameKind, id: u64, payload_len: usize) {
    dst.reserve(HEADER_LEN + payload_len);
    dst.put_slice(&MAGIC);
    dst.put_u8(PROTOCOL_VERSION);
    dst.put_u8(kind as u8);
    dst.put_u64(id);
    // Callers checked payload_len against MAX_BODY / the name and message caps.
    dst.put_u32(payload_len as u32);
}

/// A data frame's header and epoch, for a body of `len` bytes (checked against MAX_BODY).
fn put_data_head(dst: &mut BytesMut, kind: FrameKind, id: u64, epoch: u64, len: usize) {
    put_header(dst, kind, id, EPOCH_LEN + len);
    dst.put_u64(epoch);
}

fn put_name(dst: &mut BytesMut, name: &str) {
    // Callers checked name.len() <= MAX_NAME_LEN.
    dst.put_u8(name.len() as u8);
    dst.put_slice(name.as_bytes());
}

/// Data frames' bodies this long or longer are written after their head instead of being
/// copied into the writer's buffer ([`Frame::encode_head`]).
pub const WRITE_APART: usize = 64 * 1024;

/// Bytes a connection's read buffer asks for before each read.
pub const READ_CHUNK: usize = 16 * 1024;

/// Room a connection's read buffer keeps at most between frames: past it, the buffer is
/// made anew at [`READ_CHUNK`] (what it holds, less than half of this, copied), so a link
/// that once carried a large frame (a replicated 512 MB value) does not keep its memory:
/// the frame's bodies share the buffer's allocation, which the old buffer kept for good.
pub const READ_KEEP_MAX: usize = 1 << 20;

/// Makes `buf` ready for the next read: [`READ_CHUNK`] of room, and a fresh buffer when it
/// holds more room than [`READ_KEEP_MAX`] for less than half of that of bytes.
pub fn prepare_read(buf: &mut BytesMut) {
    if buf.capacity() > READ_KEEP_MAX && buf.len() < READ_KEEP_MAX / 2 {
        let mut fresh = BytesMut::with_capacity(buf.len() + READ_CHUNK);
        fresh.extend_from_slice(buf);
        *buf = fresh;
    }
    buf.reserve(READ_CHUNK);
}

/// Decodes the next complete frame at the front of `buf`, consuming exactly its bytes.
///
/// `Ok(None)`: more bytes are needed; nothing was consumed, call again after the next read.
/// The header is checked (magic, version, kind, id, declared length against `limits`) as
/// soon as its 16 bytes are in, so an oversized frame fails before its payload arrives.
///
/// `Err`: the stream is unusable; drop the connection (the buffer is left as it was).
pub fn decode(buf: &mut BytesMut, limits: &FrameLimits) -> Result<Option<Frame>, FrameError> {
    let Some(header) = buf.get(..HEADER_LEN) else {
        // Check the magic as early as it is in, so garbage fails on its first bytes.
        if buf.len() >= 2 && buf[..2] != MAGIC {
            return Err(FrameError::BadMagic([buf[0], buf[1]]));
        }
        return Ok(None);
    };
    if header[..2] != MAGIC {
        return Err(FrameError::BadMagic([header[0], header[1]]));
    }
    if header[2] != PROTOCOL_VERSION {
        return Err(FrameError::UnsupportedVersion(header[2]));
    }
    let kind = FrameKind::from_code(header[3]).ok_or(FrameError::UnknownKind(header[3]))?;
    let id = u64::from_be_bytes(header[4..12].try_into().expect("8-byte slice"));
    let len = u32::from_be_bytes(header[12..16].try_into().expect("4-byte slice"));
    let max = limits.max_for(kind);
    // u32 -> u64 is lossless everywhere; compare there so a 32-bit usize cannot wrap.
    if u64::from(len) > max as u64 {
        return Err(FrameError::TooLarge {
            kind,
            len: u64::from(len),
            max,
        });
    }
    if kind.has_id() != (id != 0) {
        return Err(FrameError::BadRequestId { kind, id });
    }
    // Fits usize: len <= max, a usize.
    let len = len as usize;
    if buf.len() - HEADER_LEN < len {
        return Ok(None);
    }
    let mut payload = {
        let mut frame = buf.split_to(HEADER_LEN + len);
        frame.advance(HEADER_LEN);
        frame
    };
    // The payload is consumed now; a malformed one is still connection-fatal.
    parse_payload(kind, id, &mut payload).map(Some)
}

fn parse_payload(kind: FrameKind, id: u64, p: &mut BytesMut) -> Result<Frame, FrameError> {
    let malformed = |what| FrameError::Malformed { kind, what };
    let frame = match kind {
        FrameKind::Hello => {
            let cluster = take_name(p).ok_or(malformed("bad cluster name"))?;
            let client_nonce = take_array(p).ok_or(malformed("short nonce"))?;
            let node = take_name(p).ok_or(malformed("bad node name"))?;
            Frame::Hello(Hello {
                cluster,
                client_nonce,
                node,
            })
        }
        FrameKind::Challenge => {
            let server_nonce = take_array(p).ok_or(malformed("short nonce"))?;
            let mac = take_array(p).ok_or(malformed("short mac"))?;
            let node = take_name(p).ok_or(malformed("bad node name"))?;
            Frame::Challenge(Challenge {
                server_nonce,
                mac,
                node,
            })
        }
        FrameKind::Proof => Frame::Proof {
            mac: take_array(p).ok_or(malformed("short mac"))?,
        },
        FrameKind::Welcome => Frame::Welcome,
        FrameKind::Refused => {
            let code = take_u8(p).ok_or(malformed("missing reason"))?;
            let reason = RefuseReason::from_code(code).ok_or(malformed("unknown reason"))?;
            let message = take_message(p).ok_or(malformed("bad message"))?;
            Frame::Refused { reason, message }
        }
        FrameKind::Request | FrameKind::Response => {
            if p.len() < EPOCH_LEN {
                return Err(malformed("short epoch"));
            }
            let epoch = p.get_u64();
            let body = std::mem::take(p).freeze();
            if kind == FrameKind::Request {
                Frame::Request { id, epoch, body }
            } else {
                Frame::Response { id, epoch, body }
            }
        }
        FrameKind::Error => {
            let code = take_u8(p).ok_or(malformed("missing code"))?;
            let code = ErrorCode::from_code(code).ok_or(malformed("unknown code"))?;
            let message = take_message(p).ok_or(malformed("bad message"))?;
            Frame::Error { id, code, message }
        }
    };
    if !p.is_empty() {
        return Err(malformed("trailing bytes"));
    }
    Ok(frame)
}

fn take_u8(p: &mut BytesMut) -> Option<u8> {
    (!p.is_empty()).then(|| p.get_u8())
}

fn take_array<const N: usize>(p: &mut BytesMut) -> Option<[u8; N]> {
    let bytes: [u8; N] = p.get(..N)?.try_into().ok()?;
    p.advance(N);
    Some(bytes)
}

fn take_name(p: &mut BytesMut) -> Option<String> {
    let len = usize::from(take_u8(p)?);
    let name = std::str::from_utf8(p.get(..len)?).ok()?.to_owned();
    p.advance(len);
    Some(name)
}

fn take_message(p: &mut BytesMut) -> Option<String> {
    if p.len() > MAX_MESSAGE_LEN {
        return None;
    }
    let message = std::str::from_utf8(p).ok()?.to_owned();
    p.clear();
    Some(message)
}

/// The bodies (after the epoch) of the complete Request frames at the front of `buf`, put in
/// `out` in order while it has room; returns how many. Stops at any other frame, at one not
/// all in `buf`, or at a header [`decode`] would refuse for its magic, version or id. A
/// look ahead for [`crate::PeerHandler::look_ahead`]: it consumes nothing and allocates
/// nothing; each frame is checked in full by [`decode`] when it is read.
pub fn peek_request_bodies<'a>(buf: &'a [u8], out: &mut [&'a [u8]]) -> usize {
    let mut at = 0;
    let mut put = 0;
    while put < out.len() {
        let Some(header) = buf.get(at..).and_then(|b| b.get(..HEADER_LEN)) else {
            break;
        };
        if header[..2] != MAGIC
            || header[2] != PROTOCOL_VERSION
            || header[3] != FrameKind::Request as u8
            || header[4..12] == [0; 8]
        {
            break;
        }
        let len = u32::from_be_bytes(header[12..16].try_into().expect("4-byte slice")) as usize;
        let start = at + HEADER_LEN;
        let Some(payload) = start.checked_add(len).and_then(|end| buf.get(start..end)) else {
            break;
        };
        let Some(body) = payload.get(EPOCH_LEN..) else {
            break;
        };
        out[put] = body;
        put += 1;
        at = start + len;
    }
    put
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(frame: &Frame) -> BytesMut {
        let mut b = BytesMut::new();
        frame.encode(&mut b).unwrap();
        b
    }

    /// After a large frame, the read buffer is made anew (what follows the frame kept), and
    /// the frame's body no longer shares an allocation with it; a buffer in the middle of a
    /// large frame, or a small one, keeps its room.
    #[test]
    fn a_read_buffer_a_large_frame_grew_is_made_anew() {
        let big = Frame::Request {
            id: 1,
            epoch: 2,
            body: Bytes::from(vec![7u8; 8 << 20]),
        };
        let mut buf = enc(&big);
        buf.extend_from_slice(
            &enc(&Frame::Request {
                id: 3,
                epoch: 0,
                body: Bytes::from_static(b"next"),
            })[..5],
        );
        let limits = FrameLimits::default();
        let Some(Frame::Request { body, .. }) = decode(&mut buf, &limits).unwrap() else {
            panic!("the large frame");
        };
        assert!(buf.capacity() > READ_KEEP_MAX, "the old buffer's room");
        let at = body.as_ptr() as usize;
        prepare_read(&mut buf);
        assert!(buf.capacity() <= 5 + 2 * READ_CHUNK, "{}", buf.capacity());
        assert_eq!(
            &buf[..],
            &enc(&Frame::Request {
                id: 3,
                epoch: 0,
                body: Bytes::from_static(b"next")
            })[..5]
        );
        let start = buf.as_ptr() as usize;
        assert!(
            start + buf.capacity() <= at || start >= at + body.len(),
            "apart"
        );
        // Half a large frame stays where it is.
        let mut half = BytesMut::with_capacity(4 << 20);
        half.extend_from_slice(&vec![1u8; 3 << 20]);
        let (at, cap) = (half.as_ptr(), half.capacity());
        prepare_read(&mut half);
        assert_eq!((half.as_ptr(), half.capacity()), (at, cap));
        // A small buffer only gets its room.
        let mut small = BytesMut::new();
        prepare_read(&mut small);
        assert!(small.capacity() >= READ_CHUNK);
    }

    fn header(version: u8, kind: u8, id: u64, len: u32) -> BytesMut {
        let mut b = BytesMut::new();
        b.put_slice(&MAGIC);
        b.put_u8(version);
        b.put_u8(kind);
        b.put_u64(id);
        b.put_u32(len);
        b
    }

    fn lim() -> FrameLimits {
        FrameLimits::default()
    }

    #[test]
    fn header_layout_is_as_documented() {
        let b = enc(&Frame::Request {
            id: 0x0102_0304_0506_0708,
            epoch: 9,
            body: Bytes::from_static(b"*1\r\n$4\r\nPING\r\n"),
        });
        assert_eq!(&b[..2], b"SH");
        assert_eq!(b[2], 1);
        assert_eq!(b[3], 0x10);
        assert_eq!(&b[4..12], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[12..16], &(8u32 + 14).to_be_bytes());
        assert_eq!(&b[16..24], &9u64.to_be_bytes());
        assert_eq!(&b[24..], b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(enc(&Frame::Welcome)[..], header(1, 0x04, 0, 0)[..]);
    }

    #[test]
    fn peek_request_bodies_sees_the_complete_requests_in_front() {
        let request = |id: u64, body: &'static [u8]| {
            enc(&Frame::Request {
                id,
                epoch: 7,
                body: Bytes::from_static(body),
            })
        };
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&request(1, b"one"));
        buf.extend_from_slice(&request(2, b""));
        buf.extend_from_slice(&request(3, b"three"));
        {
            let mut out: [&[u8]; 4] = [&[]; 4];
            assert_eq!(peek_request_bodies(&buf, &mut out), 3);
            assert_eq!(&out[..3], &[&b"one"[..], b"", b"three"]);
            // No more than room for; nothing from a frame cut short.
            assert_eq!(peek_request_bodies(&buf, &mut out[..2]), 2);
            assert_eq!(peek_request_bodies(&buf[..buf.len() - 1], &mut out), 2);
        }
        // It stops at another kind of frame, and consumed nothing: decode reads them all.
        buf.extend_from_slice(&enc(&Frame::Welcome));
        buf.extend_from_slice(&request(4, b"four"));
        assert_eq!(peek_request_bodies(&buf, &mut [&[][..]; 4]), 3);
        let mut decoded = 0;
        while decode(&mut buf, &lim()).unwrap().is_some() {
            decoded += 1;
        }
        assert_eq!(decoded, 5);
        // Garbage: nothing.
        assert_eq!(peek_request_bodies(b"XX\x01\x10", &mut [&[][..]; 4]), 0);
    }

    proptest::proptest! {
        /// Frames (requests among others), cut anywhere, maybe with one byte changed:
        /// every body the look ahead sees, decode reads as the same request, in order.
        #[test]
        fn peek_request_bodies_agrees_with_decode(
            frames in proptest::collection::vec(
                (proptest::prelude::any::<bool>(), 1u64..4, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20)),
                0..8,
            ),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            flip in proptest::option::of((proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>())),
        ) {
            let mut bytes = Vec::new();
            for (request, id, body) in &frames {
                let frame = if *request {
                    Frame::Request { id: *id, epoch: 7, body: Bytes::from(body.clone()) }
                } else {
                    Frame::Response { id: *id, epoch: 7, body: Bytes::from(body.clone()) }
                };
                bytes.extend_from_slice(&enc(&frame));
            }
            bytes.truncate(cut.index(bytes.len() + 1));
            if let (Some((at, byte)), false) = (flip, bytes.is_empty()) {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            let mut out: [&[u8]; 8] = [&[]; 8];
            let n = peek_request_bodies(&bytes, &mut out);
            let mut buf = BytesMut::from(&bytes[..]);
            for body in &out[..n] {
                match decode(&mut buf, &lim()) {
                    Ok(Some(Frame::Request { body: got, .. })) => proptest::prop_assert_eq!(&got[..], *body),
                    other => proptest::prop_assert!(false, "decode gave {:?}", other),
                }
            }
        }
    }

    /// The example in docs/wire.md, byte for byte.
    #[test]
    fn documented_example_bytes() {
        let request = enc(&Frame::Request {
            id: 1,
            epoch: 7,
            body: Bytes::from_static(b"*1\r\n$4\r\nPING\r\n"),
        });
        let mut expected = vec![
            0x53, 0x48, 0x01, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x16, 0, 0, 0, 0, 0, 0, 0, 7,
        ];
        expected.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        assert_eq!(&request[..], &expected[..]);
        let response = enc(&Frame::Response {
            id: 1,
            epoch: 7,
            body: Bytes::from_static(b"+PONG\r\n"),
        });
        let mut expected = vec![
            0x53, 0x48, 0x01, 0x11, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0, 7,
        ];
        expected.extend_from_slice(b"+PONG\r\n");
        assert_eq!(&response[..], &expected[..]);
    }

    #[test]
    fn partial_input_needs_more_and_consumes_nothing() {
        let full = enc(&Frame::Response {
            id: 7,
            epoch: 3,
            body: Bytes::from_static(b"+OK\r\n"),
        });
        for cut in 0..full.len() {
            let mut b = BytesMut::from(&full[..cut]);
            assert_eq!(decode(&mut b, &lim()), Ok(None), "cut at {cut}");
            assert_eq!(b.len(), cut);
        }
        let mut b = full.clone();
        b.extend_from_slice(b"SH");
        assert!(matches!(
            decode(&mut b, &lim()),
            Ok(Some(Frame::Response { id: 7, .. }))
        ));
        assert_eq!(&b[..], b"SH");
    }

    #[test]
    fn bad_magic_fails_on_the_first_two_bytes() {
        let mut b = BytesMut::from(&b"*1"[..]);
        assert_eq!(decode(&mut b, &lim()), Err(FrameError::BadMagic(*b"*1")));
        let mut b = BytesMut::from(&b"S"[..]);
        assert_eq!(decode(&mut b, &lim()), Ok(None));
        let mut b = header(1, 0x04, 0, 0);
        b[1] = b'X';
        assert_eq!(decode(&mut b, &lim()), Err(FrameError::BadMagic(*b"SX")));
    }

    #[test]
    fn other_version_and_unknown_kind_are_refused() {
        let mut b = header(2, 0x01, 0, 0);
        assert_eq!(
            decode(&mut b, &lim()),
            Err(FrameError::UnsupportedVersion(2))
        );
        let mut b = header(1, 0x7f, 0, 0);
        assert_eq!(decode(&mut b, &lim()), Err(FrameError::UnknownKind(0x7f)));
    }

    #[test]
    fn oversized_frames_fail_from_the_header_alone() {
        let limits = FrameLimits {
            max_data_payload: 100,
            max_control_payload: 10,
        };
        let mut b = header(1, 0x10, 1, 101);
        assert_eq!(
            decode(&mut b, &limits),
            Err(FrameError::TooLarge {
                kind: FrameKind::Request,
                len: 101,
                max: 100
            })
        );
        // Exactly at the limit is fine (waits for the payload).
        let mut b = header(1, 0x11, 1, 100);
        assert_eq!(decode(&mut b, &limits), Ok(None));
        let mut b = header(1, 0x01, 0, 11);
        assert!(matches!(
            decode(&mut b, &limits),
            Err(FrameError::TooLarge {
                kind: FrameKind::Hello,
                ..
            })
        ));
        // The error frame is a control frame: small limit.
        let mut b = header(1, 0x12, 5, 11);
        assert!(matches!(
            decode(&mut b, &limits),
            Err(FrameError::TooLarge { .. })
        ));
        // Handshake limits refuse a Request bigger than a kilobyte.
        let mut b = header(1, 0x10, 1, 1025);
        assert!(matches!(
            decode(&mut b, &FrameLimits::handshake()),
            Err(FrameError::TooLarge { .. })
        ));
        // u32::MAX against the default limit.
        let mut b = header(1, 0x10, 1, u32::MAX);
        assert!(matches!(
            decode(&mut b, &lim()),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn request_ids_are_checked() {
        let mut b = header(1, 0x10, 0, 8);
        assert!(matches!(
            decode(&mut b, &lim()),
            Err(FrameError::BadRequestId { .. })
        ));
        let mut b = header(1, 0x04, 3, 0);
        assert!(matches!(
            decode(&mut b, &lim()),
            Err(FrameError::BadRequestId { .. })
        ));
        let mut b = header(1, 0x12, 0, 1);
        assert!(matches!(
            decode(&mut b, &lim()),
            Err(FrameError::BadRequestId { .. })
        ));
    }

    fn payload(kind: u8, id: u64, p: &[u8]) -> Result<Option<Frame>, FrameError> {
        let mut b = header(1, kind, id, p.len() as u32);
        b.extend_from_slice(p);
        decode(&mut b, &lim())
    }

    fn malformed(r: Result<Option<Frame>, FrameError>) -> &'static str {
        match r {
            Err(FrameError::Malformed { what, .. }) => what,
            other => panic!("expected Malformed, got {other:?}"),
        }
    }

    #[test]
    fn malformed_payloads_are_refused() {
        assert_eq!(malformed(payload(0x01, 0, &[])), "bad cluster name");
        assert_eq!(malformed(payload(0x01, 0, &[3, b'a'])), "bad cluster name");
        assert_eq!(malformed(payload(0x01, 0, &[1, 0xff])), "bad cluster name");
        assert_eq!(malformed(payload(0x01, 0, &[1, b'a', 0, 0])), "short nonce");
        let mut hello = vec![1, b'a'];
        hello.extend_from_slice(&[0; 32]);
        assert_eq!(malformed(payload(0x01, 0, &hello)), "bad node name");
        hello.extend_from_slice(&[1, b'n', b'x']);
        assert_eq!(malformed(payload(0x01, 0, &hello)), "trailing bytes");
        hello.pop();
        assert!(matches!(
            payload(0x01, 0, &hello),
            Ok(Some(Frame::Hello(_)))
        ));

        assert_eq!(malformed(payload(0x02, 0, &[0; 63])), "short mac");
        assert_eq!(malformed(payload(0x02, 0, &[0; 64])), "bad node name");
        assert_eq!(malformed(payload(0x03, 0, &[0; 31])), "short mac");
        assert_eq!(malformed(payload(0x03, 0, &[0; 33])), "trailing bytes");
        assert_eq!(malformed(payload(0x04, 0, &[0])), "trailing bytes");
        assert_eq!(malformed(payload(0x05, 0, &[])), "missing reason");
        assert_eq!(malformed(payload(0x05, 0, &[0x99])), "unknown reason");
        assert_eq!(malformed(payload(0x05, 0, &[1, 0xc3])), "bad message");
        assert_eq!(malformed(payload(0x10, 1, &[0; 7])), "short epoch");
        assert_eq!(malformed(payload(0x11, 1, &[])), "short epoch");
        assert_eq!(malformed(payload(0x12, 1, &[])), "missing code");
        assert_eq!(malformed(payload(0x12, 1, &[0])), "unknown code");
        let long = vec![b'x'; MAX_MESSAGE_LEN + 1];
        let mut err = vec![1];
        err.extend_from_slice(&long);
        assert_eq!(malformed(payload(0x12, 1, &err)), "bad message");
        // An empty body is a valid request.
        assert_eq!(
            payload(0x10, 1, &[0; 8]),
            Ok(Some(Frame::Request {
                id: 1,
                epoch: 0,
                body: Bytes::new()
            }))
        );
    }

    #[test]
    fn encode_refuses_what_cannot_be_framed_and_cuts_messages() {
        let mut b = BytesMut::new();
        let long = "n".repeat(256);
        let hello = Frame::Hello(Hello {
            cluster: long.clone(),
            client_nonce: [0; 32],
            node: "a".into(),
        });
        assert!(hello.encode(&mut b).is_err());
        assert!(b.is_empty());
        let ch = Frame::Challenge(Challenge {
            server_nonce: [0; 32],
            mac: [0; 32],
            node: long,
        });
        assert!(ch.encode(&mut b).is_err());
        // A message of multi-byte characters is cut at a boundary and still decodes.
        let message = "é".repeat(MAX_MESSAGE_LEN);
        let f = Frame::Error {
            id: 1,
            code: ErrorCode::Internal,
            message,
        };
        f.encode(&mut b).unwrap();
        match decode(&mut b, &lim()).unwrap().unwrap() {
            Frame::Error { message, .. } => {
                assert_eq!(message.len(), MAX_MESSAGE_LEN);
                assert!(message.chars().all(|c| c == 'é'));
            }
            other => panic!("{other:?}"),
        }
    }

    fn name() -> impl Strategy<Value = String> {
        // Up to 85 chars of at most 3 bytes each keeps names within 255 bytes.
        "[a-zA-Z0-9._é€-]{0,85}"
    }

    fn message() -> impl Strategy<Value = String> {
        "[ -~é]{0,128}"
    }

    fn frame() -> impl Strategy<Value = Frame> {
        let body = proptest::collection::vec(any::<u8>(), 0..300).prop_map(Bytes::from);
        prop_oneof![
            (name(), any::<[u8; 32]>(), name()).prop_map(|(cluster, client_nonce, node)| {
                Frame::Hello(Hello {
                    cluster,
                    client_nonce,
                    node,
                })
            }),
            (any::<[u8; 32]>(), any::<[u8; 32]>(), name()).prop_map(|(server_nonce, mac, node)| {
                Frame::Challenge(Challenge {
                    server_nonce,
                    mac,
                    node,
                })
            }),
            any::<[u8; 32]>().prop_map(|mac| Frame::Proof { mac }),
            Just(Frame::Welcome),
            (
                prop_oneof![
                    Just(RefuseReason::VersionMismatch),
                    Just(RefuseReason::ClusterMismatch),
                    Just(RefuseReason::WrongSecret),
                    Just(RefuseReason::Protocol),
                ],
                message()
            )
                .prop_map(|(reason, message)| Frame::Refused { reason, message }),
            (1..=u64::MAX, any::<u64>(), body.clone())
                .prop_map(|(id, epoch, body)| Frame::Request { id, epoch, body }),
            (1..=u64::MAX, any::<u64>(), body).prop_map(|(id, epoch, body)| Frame::Response {
                id,
                epoch,
                body
            }),
            (
                1..=u64::MAX,
                prop_oneof![
                    Just(ErrorCode::Overloaded),
                    Just(ErrorCode::ShuttingDown),
                    Just(ErrorCode::Internal),
                ],
                message()
            )
                .prop_map(|(id, code, message)| Frame::Error { id, code, message }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any sequence of frames, encoded back to back and fed in random chunks, decodes to
        /// the same frames, with nothing left over.
        #[test]
        fn round_trip_in_random_chunks(
            frames in proptest::collection::vec(frame(), 1..8),
            chunks in proptest::collection::vec(1usize..64, 1..16),
        ) {
            let mut wire = BytesMut::new();
            for f in &frames {
                f.encode(&mut wire).unwrap();
            }
            let mut buf = BytesMut::new();
            let mut out = Vec::new();
            let mut pos = 0;
            let mut i = 0;
            while pos < wire.len() {
                let end = (pos + chunks[i % chunks.len()]).min(wire.len());
                i += 1;
                buf.extend_from_slice(&wire[pos..end]);
                pos = end;
                while let Some(f) = decode(&mut buf, &lim()).unwrap() {
                    out.push(f);
                }
            }
            prop_assert!(buf.is_empty());
            prop_assert_eq!(out, frames);
        }

        /// Valid frames with bytes overwritten never panic the decoder; whatever still decodes
        /// consumed exactly the bytes its canonical encoding takes.
        #[test]
        fn corrupted_frames_never_panic(
            frames in proptest::collection::vec(frame(), 1..4),
            hits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        ) {
            let mut wire = BytesMut::new();
            for f in &frames {
                f.encode(&mut wire).unwrap();
            }
            for (at, byte) in hits {
                let i = at.index(wire.len());
                wire[i] = byte;
            }
            let mut buf = wire.clone();
            loop {
                let before = buf.clone();
                match decode(&mut buf, &lim()) {
                    Ok(Some(f)) => {
                        let mut again = BytesMut::new();
                        f.encode(&mut again).unwrap();
                        prop_assert_eq!(&again[..], &before[..before.len() - buf.len()]);
                    }
                    Ok(None) => {
                        prop_assert_eq!(buf, before);
                        break;
                    }
                    Err(_) => break,
                }
            }
        }

        /// Arbitrary bytes never panic the decoder, and it never consumes more than it holds.
        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut buf = BytesMut::from(&data[..]);
            let small = FrameLimits { max_data_payload: 64, max_control_payload: 64 };
            while let Ok(Some(_)) = decode(&mut buf, &small) {}
            prop_assert!(buf.len() <= data.len());
        }
    }
}
