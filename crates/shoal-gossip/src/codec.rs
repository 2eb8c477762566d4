//! A hand-written foca codec (foca 2 dropped its bincode codec; this one has no serde).
//!
//! Wire format (all integers big-endian), inside the envelope (see `envelope`):
//!
//! ```text
//! identity := name_len:u8 name:[u8; name_len] generation:u64 gossip:addr client:addr cluster:addr
//!             cluster_client_port:u16   (the Redis Cluster client port on client's IP, 0 = none)
//! addr     := 4:u8 ip:[u8; 4] port:u16  |  6:u8 ip:[u8; 16] port:u16
//! header   := src:identity src_incarnation:u16 dst:identity message
//! message  := tag:u8 [fields]       tag: 1 Ping(probe:u8)  2 Ack(probe:u8)
//!             3 PingReq(target:identity probe:u8)  4 IndirectPing(origin:identity probe:u8)
//!             5 IndirectAck(target:identity probe:u8)  6 ForwardedAck(origin:identity probe:u8)
//!             7 Announce  8 Feed  9 Gossip  10 Broadcast  11 TurnUndead
//! member   := identity incarnation:u16 state:u8   state: 1 Alive  2 Suspect  3 Down
//! ```
//!
//! An empty name (`name_len = 0`) is only valid as the destination of an `Announce`: it is
//! how a node announces to a seed known by address only. The decoder replaces it with the
//! local name so that foca (which accepts an Announce addressed to any identity with its
//! own `Addr`) takes it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use bytes::{Buf, BufMut};
use foca::{Header, Member, Message, State};

use crate::identity::NodeId;

/// Why a foca payload did not decode or encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("truncated payload")]
    Truncated,
    #[error("unknown tag {0}")]
    BadTag(u8),
    #[error("node name is not UTF-8 or empty where not allowed")]
    BadName,
    #[error("not enough room in the output buffer")]
    BufferFull,
}

const MSG_PING: u8 = 1;
const MSG_ACK: u8 = 2;
const MSG_PING_REQ: u8 = 3;
const MSG_INDIRECT_PING: u8 = 4;
const MSG_INDIRECT_ACK: u8 = 5;
const MSG_FORWARDED_ACK: u8 = 6;
const MSG_ANNOUNCE: u8 = 7;
const MSG_FEED: u8 = 8;
const MSG_GOSSIP: u8 = 9;
const MSG_BROADCAST: u8 = 10;
const MSG_TURN_UNDEAD: u8 = 11;

const STATE_ALIVE: u8 = 1;
const STATE_SUSPECT: u8 = 2;
const STATE_DOWN: u8 = 3;

const FAMILY_V4: u8 = 4;
const FAMILY_V6: u8 = 6;

/// The foca codec. Holds the local node name to resolve seed placeholders (see module docs).
#[derive(Debug, Clone)]
pub struct WireCodec {
    local_name: Arc<str>,
}

impl WireCodec {
    pub fn new(local_name: Arc<str>) -> Self {
        Self { local_name }
    }
}

fn addr_len(a: &SocketAddr) -> usize {
    match a {
        SocketAddr::V4(_) => 1 + 4 + 2,
        SocketAddr::V6(_) => 1 + 16 + 2,
    }
}

fn id_len(id: &NodeId) -> usize {
    1 + id.name().len()
        + 8
        + addr_len(&id.gossip_addr())
        + addr_len(&id.client_addr())
        + addr_len(&id.cluster_addr())
        + 2
}

fn message_len(m: &Message<NodeId>) -> usize {
    1 + match m {
        Message::Ping(_) | Message::Ack(_) => 1,
        Message::PingReq { target: id, .. }
        | Message::IndirectPing { origin: id, .. }
        | Message::IndirectAck { target: id, .. }
        | Message::ForwardedAck { origin: id, .. } => id_len(id) + 1,
        Message::Announce
        | Message::Feed
        | Message::Gossip
        | Message::Broadcast
        | Message::TurnUndead => 0,
    }
}

fn put_addr(buf: &mut impl BufMut, a: &SocketAddr) {
    match a.ip() {
        IpAddr::V4(ip) => {
            buf.put_u8(FAMILY_V4);
            buf.put_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            buf.put_u8(FAMILY_V6);
            buf.put_slice(&ip.octets());
        }
    }
    buf.put_u16(a.port());
}

fn put_id(buf: &mut impl BufMut, id: &NodeId) {
    // NodeId::new bounds names to 255 bytes; the placeholder is empty.
    buf.put_u8(id.name().len() as u8);
    buf.put_slice(id.name().as_bytes());
    buf.put_u64(id.generation());
    put_addr(buf, &id.gossip_addr());
    put_addr(buf, &id.client_addr());
    put_addr(buf, &id.cluster_addr());
    buf.put_u16(id.cluster_client_port());
}

/// A bounds-checked reader over a contiguous slice.
struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.data.len() < n {
            return Err(CodecError::Truncated);
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, CodecError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u64(&mut self) -> Result<u64, CodecError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    fn addr(&mut self) -> Result<SocketAddr, CodecError> {
        let ip = match self.u8()? {
            FAMILY_V4 => {
                let b = self.take(4)?;
                IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
            }
            FAMILY_V6 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(self.take(16)?);
                IpAddr::V6(Ipv6Addr::from(a))
            }
            other => return Err(CodecError::BadTag(other)),
        };
        Ok(SocketAddr::new(ip, self.u16()?))
    }
    /// An identity; an empty name is returned as such (callers decide whether it is allowed).
    fn id(&mut self) -> Result<NodeId, CodecError> {
        let len = self.u8()? as usize;
        let name = std::str::from_utf8(self.take(len)?).map_err(|_| CodecError::BadName)?;
        let generation = self.u64()?;
        let gossip = self.addr()?;
        let client = self.addr()?;
        let cluster = self.addr()?;
        let cluster_client_port = self.u16()?;
        Ok(
            NodeId::new_unchecked(name.into(), gossip, client, cluster, generation)
                .with_cluster_client_port(cluster_client_port),
        )
    }
    fn named_id(&mut self) -> Result<NodeId, CodecError> {
        let id = self.id()?;
        if id.name().is_empty() {
            return Err(CodecError::BadName);
        }
        Ok(id)
    }
}

/// Runs `f` over the contiguous buffer and advances it by what `f` consumed.
fn decode_with<T>(
    mut buf: impl Buf,
    f: impl FnOnce(&mut Reader<'_>) -> Result<T, CodecError>,
) -> Result<T, CodecError> {
    // foca hands the codec a contiguous buffer (its documented guarantee).
    let chunk = buf.chunk();
    let total = chunk.len();
    let mut r = Reader { data: chunk };
    let value = f(&mut r)?;
    let used = total - r.data.len();
    buf.advance(used);
    Ok(value)
}

impl foca::Codec<NodeId> for WireCodec {
    type Error = CodecError;

    fn encode_header(
        &mut self,
        header: &Header<NodeId>,
        mut buf: impl BufMut,
    ) -> Result<(), CodecError> {
        let len = id_len(&header.src) + 2 + id_len(&header.dst) + message_len(&header.message);
        if buf.remaining_mut() < len {
            return Err(CodecError::BufferFull);
        }
        put_id(&mut buf, &header.src);
        buf.put_u16(header.src_incarnation);
        put_id(&mut buf, &header.dst);
        match &header.message {
            Message::Ping(p) => {
                buf.put_u8(MSG_PING);
                buf.put_u8(*p);
            }
            Message::Ack(p) => {
                buf.put_u8(MSG_ACK);
                buf.put_u8(*p);
            }
            Message::PingReq {
                target,
                probe_number,
            } => {
                buf.put_u8(MSG_PING_REQ);
                put_id(&mut buf, target);
                buf.put_u8(*probe_number);
            }
            Message::IndirectPing {
                origin,
                probe_number,
            } => {
                buf.put_u8(MSG_INDIRECT_PING);
                put_id(&mut buf, origin);
                buf.put_u8(*probe_number);
            }
            Message::IndirectAck {
                target,
                probe_number,
            } => {
                buf.put_u8(MSG_INDIRECT_ACK);
                put_id(&mut buf, target);
                buf.put_u8(*probe_number);
            }
            Message::ForwardedAck {
                origin,
                probe_number,
            } => {
                buf.put_u8(MSG_FORWARDED_ACK);
                put_id(&mut buf, origin);
                buf.put_u8(*probe_number);
            }
            Message::Announce => buf.put_u8(MSG_ANNOUNCE),
            Message::Feed => buf.put_u8(MSG_FEED),
            Message::Gossip => buf.put_u8(MSG_GOSSIP),
            Message::Broadcast => buf.put_u8(MSG_BROADCAST),
            Message::TurnUndead => buf.put_u8(MSG_TURN_UNDEAD),
        }
        Ok(())
    }

    fn decode_header(&mut self, buf: impl Buf) -> Result<Header<NodeId>, CodecError> {
        let local_name = self.local_name.clone();
        decode_with(buf, |r| {
            let src = r.named_id()?;
            let src_incarnation = r.u16()?;
            let dst = r.id()?;
            let message = match r.u8()? {
                MSG_PING => Message::Ping(r.u8()?),
                MSG_ACK => Message::Ack(r.u8()?),
                MSG_PING_REQ => Message::PingReq {
                    target: r.named_id()?,
                    probe_number: r.u8()?,
                },
                MSG_INDIRECT_PING => Message::IndirectPing {
                    origin: r.named_id()?,
                    probe_number: r.u8()?,
                },
                MSG_INDIRECT_ACK => Message::IndirectAck {
                    target: r.named_id()?,
                    probe_number: r.u8()?,
                },
                MSG_FORWARDED_ACK => Message::ForwardedAck {
                    origin: r.named_id()?,
                    probe_number: r.u8()?,
                },
                MSG_ANNOUNCE => Message::Announce,
                MSG_FEED => Message::Feed,
                MSG_GOSSIP => Message::Gossip,
                MSG_BROADCAST => Message::Broadcast,
                MSG_TURN_UNDEAD => Message::TurnUndead,
                other => return Err(CodecError::BadTag(other)),
            };
            let dst = if dst.name().is_empty() {
                if message != Message::Announce {
                    return Err(CodecError::BadName);
                }
                NodeId::new_unchecked(
                    local_name,
                    dst.gossip_addr(),
                    dst.client_addr(),
                    dst.cluster_addr(),
                    dst.generation(),
                )
                .with_cluster_client_port(dst.cluster_client_port())
            } else {
                dst
            };
            Ok(Header {
                src,
                src_incarnation,
                dst,
                message,
            })
        })
    }

    fn encode_member(
        &mut self,
        member: &Member<NodeId>,
        mut buf: impl BufMut,
    ) -> Result<(), CodecError> {
        // foca contract: never leave the buffer dirty when the item does not fit.
        if buf.remaining_mut() < id_len(member.id()) + 3 {
            return Err(CodecError::BufferFull);
        }
        put_id(&mut buf, member.id());
        buf.put_u16(member.incarnation());
        buf.put_u8(match member.state() {
            State::Alive => STATE_ALIVE,
            State::Suspect => STATE_SUSPECT,
            State::Down => STATE_DOWN,
        });
        Ok(())
    }

    fn decode_member(&mut self, buf: impl Buf) -> Result<Member<NodeId>, CodecError> {
        decode_with(buf, |r| {
            let id = r.named_id()?;
            let incarnation = r.u16()?;
            let state = match r.u8()? {
                STATE_ALIVE => State::Alive,
                STATE_SUSPECT => State::Suspect,
                STATE_DOWN => State::Down,
                other => return Err(CodecError::BadTag(other)),
            };
            Ok(Member::new(id, incarnation, state))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foca::Codec;
    use proptest::prelude::*;

    fn id(name: &str, port: u16, generation: u64) -> NodeId {
        let v4: SocketAddr = format!("10.0.0.1:{port}").parse().unwrap();
        let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
        NodeId::new(name, v4, v6, v4, generation)
            .unwrap()
            .with_cluster_client_port(port.wrapping_add(100))
    }

    fn roundtrip(message: Message<NodeId>) {
        let mut codec = WireCodec::new("b".into());
        let header = Header {
            src: id("a", 1, 5),
            src_incarnation: 300,
            dst: id("b", 2, 6),
            message,
        };
        let mut buf = Vec::new();
        codec.encode_header(&header, &mut buf).unwrap();
        let mut slice = &buf[..];
        assert_eq!(codec.decode_header(&mut slice).unwrap(), header);
        assert!(slice.is_empty());
    }

    #[test]
    fn every_message_roundtrips() {
        let t = id("target", 9, u64::MAX);
        for m in [
            Message::Ping(1),
            Message::Ack(255),
            Message::PingReq {
                target: t.clone(),
                probe_number: 3,
            },
            Message::IndirectPing {
                origin: t.clone(),
                probe_number: 4,
            },
            Message::IndirectAck {
                target: t.clone(),
                probe_number: 5,
            },
            Message::ForwardedAck {
                origin: t.clone(),
                probe_number: 6,
            },
            Message::Announce,
            Message::Feed,
            Message::Gossip,
            Message::Broadcast,
            Message::TurnUndead,
        ] {
            roundtrip(m);
        }
    }

    #[test]
    fn members_roundtrip_and_never_leave_the_buffer_dirty() {
        let mut codec = WireCodec::new("x".into());
        for state in [State::Alive, State::Suspect, State::Down] {
            let m = Member::new(id("m", 3, 9), 17, state);
            let mut buf = Vec::new();
            codec.encode_member(&m, &mut buf).unwrap();
            assert_eq!(codec.decode_member(&buf[..]).unwrap(), m);
            let mut small = Vec::new();
            let mut limited = (&mut small).limit(buf.len() - 1);
            assert_eq!(
                codec.encode_member(&m, &mut limited),
                Err(CodecError::BufferFull)
            );
            assert!(small.is_empty());
        }
    }

    #[test]
    fn seed_placeholder_becomes_the_local_name_for_announce_only() {
        let mut codec = WireCodec::new("local".into());
        let seed: SocketAddr = "10.0.0.9:7946".parse().unwrap();
        let mut header = Header {
            src: id("a", 1, 1),
            src_incarnation: 0,
            dst: NodeId::seed_placeholder(seed),
            message: Message::Announce,
        };
        let mut buf = Vec::new();
        codec.encode_header(&header, &mut buf).unwrap();
        let decoded = codec.decode_header(&buf[..]).unwrap();
        assert_eq!(decoded.dst.name(), "local");
        header.message = Message::Gossip;
        buf.clear();
        codec.encode_header(&header, &mut buf).unwrap();
        assert_eq!(codec.decode_header(&buf[..]), Err(CodecError::BadName));
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut codec = WireCodec::new("n".into());
            let _ = codec.decode_header(&data[..]);
            let _ = codec.decode_member(&data[..]);
        }
    }
}
