//! The authenticated envelope around every gossip datagram.
//!
//! ```text
//! offset  size  field
//! 0       2     magic "SG" (0x53 0x47)
//! 2       1     protocol version (2: identities carry the cluster-client port; 1 did not)
//! 3       1     kind: 1 foca payload, 2 metadata request, 3 metadata reply
//! 4       1     cluster name length n (1..=255)
//! 5       n     cluster name
//! 5+n     p     payload (kind 1: a foca packet, at most `max_payload` bytes;
//!               kind 2: empty; kind 3: one metadata item, see `metadata`)
//! end-16  16    MAC: first 16 bytes of keyed BLAKE3 over every byte before it, with the key
//!               blake3::derive_key(KEY_CONTEXT, cluster secret)
//! ```
//!
//! A datagram that fails any check (size, magic, version, kind, cluster name, MAC) is
//! dropped before foca sees it, and counted. There is no replay protection: SWIM messages
//! carry incarnations and generations, so a replayed datagram repeats old news that foca
//! already discards; the MAC keeps out anyone without the secret.

use crate::GossipError;

/// First two bytes of every datagram.
pub const MAGIC: [u8; 2] = *b"SG";
/// The only protocol version this build speaks. 2 since identities carry the cluster-client
/// port (`codec`): a version-1 node would misread them, so the two refuse each other's
/// datagrams instead.
pub const VERSION: u8 = 2;
/// Bytes of MAC at the end of every datagram.
pub const MAC_LEN: usize = 16;
/// Context string for deriving the MAC key from the cluster secret (BLAKE3 KDF).
pub const KEY_CONTEXT: &str = "shoal-gossip 2025-01 datagram MAC key v1";
/// Largest foca payload (foca's own `max_packet_size`, sized for a 1500-byte MTU).
pub const MAX_PAYLOAD: usize = 1400;

const FIXED_HEADER: usize = 5;

/// What an envelope carries.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A foca packet.
    Foca = 1,
    /// "Send me your metadata" (repairs metadata a node missed; see `metadata`).
    MetaRequest = 2,
    /// One metadata item, in answer to a request.
    MetaReply = 3,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Foca),
            2 => Some(Self::MetaRequest),
            3 => Some(Self::MetaReply),
            _ => None,
        }
    }
}

/// Why a datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("datagram too short")]
    TooShort,
    #[error("datagram too long")]
    TooLong,
    #[error("not a shoal gossip datagram")]
    BadMagic,
    #[error("unsupported protocol version {0}")]
    UnsupportedVersion(u8),
    #[error("unknown datagram kind {0}")]
    BadKind(u8),
    #[error("datagram from another cluster")]
    WrongCluster,
    #[error("bad MAC (wrong secret or corrupted)")]
    BadMac,
}

/// Cluster name and MAC key: what a datagram must match to be accepted.
#[derive(Clone)]
pub struct Auth {
    cluster: Box<[u8]>,
    key: [u8; 32],
    max_datagram: usize,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("cluster", &String::from_utf8_lossy(&self.cluster))
            .finish_non_exhaustive()
    }
}

impl Auth {
    /// `cluster_name` MUST be 1..=255 bytes. The secret may be any length; an empty secret
    /// still yields a key but authenticates nothing (the node refuses clusters without one).
    pub fn new(cluster_name: &str, secret: &[u8]) -> Result<Self, GossipError> {
        if cluster_name.is_empty() || cluster_name.len() > 255 {
            return Err(GossipError::BadClusterName);
        }
        let cluster: Box<[u8]> = cluster_name.as_bytes().into();
        let max_datagram = FIXED_HEADER + cluster.len() + MAX_PAYLOAD + MAC_LEN;
        Ok(Self {
            cluster,
            key: blake3::derive_key(KEY_CONTEXT, secret),
            max_datagram,
        })
    }

    /// Largest datagram this cluster accepts.
    pub fn max_datagram(&self) -> usize {
        self.max_datagram
    }

    /// Bytes the envelope adds to a payload.
    pub fn overhead(&self) -> usize {
        FIXED_HEADER + self.cluster.len() + MAC_LEN
    }

    /// Wraps `payload` into a datagram.
    pub fn seal(&self, kind: Kind, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.overhead() + payload.len());
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(kind as u8);
        // Auth::new bounds the name to 255 bytes.
        out.push(self.cluster.len() as u8);
        out.extend_from_slice(&self.cluster);
        out.extend_from_slice(payload);
        let mac = blake3::keyed_hash(&self.key, &out);
        out.extend_from_slice(&mac.as_bytes()[..MAC_LEN]);
        out
    }

    /// Checks a datagram and returns its kind and payload.
    pub fn open<'a>(&self, datagram: &'a [u8]) -> Result<(Kind, &'a [u8]), EnvelopeError> {
        if datagram.len() > self.max_datagram {
            return Err(EnvelopeError::TooLong);
        }
        if datagram.len() < FIXED_HEADER + 1 + MAC_LEN {
            return Err(EnvelopeError::TooShort);
        }
        if datagram[..2] != MAGIC {
            return Err(EnvelopeError::BadMagic);
        }
        if datagram[2] != VERSION {
            return Err(EnvelopeError::UnsupportedVersion(datagram[2]));
        }
        let kind = Kind::from_u8(datagram[3]).ok_or(EnvelopeError::BadKind(datagram[3]))?;
        let name_len = datagram[4] as usize;
        let body_end = datagram.len() - MAC_LEN;
        if FIXED_HEADER + name_len > body_end {
            return Err(EnvelopeError::TooShort);
        }
        if datagram[FIXED_HEADER..FIXED_HEADER + name_len] != *self.cluster {
            return Err(EnvelopeError::WrongCluster);
        }
        let mac = blake3::keyed_hash(&self.key, &datagram[..body_end]);
        if !constant_time_eq(&mac.as_bytes()[..MAC_LEN], &datagram[body_end..]) {
            return Err(EnvelopeError::BadMac);
        }
        Ok((kind, &datagram[FIXED_HEADER + name_len..body_end]))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn auth() -> Auth {
        Auth::new("shoal", b"s3cret").unwrap()
    }

    #[test]
    fn seal_then_open() {
        let a = auth();
        let d = a.seal(Kind::Foca, b"hello");
        assert_eq!(d.len(), a.overhead() + 5);
        assert_eq!(a.open(&d), Ok((Kind::Foca, &b"hello"[..])));
        let r = a.seal(Kind::MetaRequest, b"");
        assert_eq!(a.open(&r), Ok((Kind::MetaRequest, &b""[..])));
    }

    #[test]
    fn every_check_rejects() {
        let a = auth();
        let d = a.seal(Kind::Foca, b"hello");
        let other_secret = Auth::new("shoal", b"other").unwrap();
        assert_eq!(other_secret.open(&d), Err(EnvelopeError::BadMac));
        let other_cluster = Auth::new("shoal2", b"s3cret").unwrap();
        assert_eq!(other_cluster.open(&d), Err(EnvelopeError::WrongCluster));
        // The previous version (identities without the cluster-client port) and a later one.
        for other in [1, 3] {
            let mut v = d.clone();
            v[2] = other;
            assert_eq!(a.open(&v), Err(EnvelopeError::UnsupportedVersion(other)));
        }
        let mut m = d.clone();
        m[0] = b'X';
        assert_eq!(a.open(&m), Err(EnvelopeError::BadMagic));
        let mut k = d.clone();
        k[3] = 9;
        assert_eq!(a.open(&k), Err(EnvelopeError::BadKind(9)));
        for i in FIXED_HEADER + 5..d.len() {
            let mut c = d.clone();
            c[i] ^= 1;
            assert_eq!(a.open(&c), Err(EnvelopeError::BadMac), "flip at {i}");
        }
        assert_eq!(a.open(&d[..10]), Err(EnvelopeError::TooShort));
        let big = a.seal(Kind::Foca, &[0u8; MAX_PAYLOAD + 1]);
        assert_eq!(a.open(&big), Err(EnvelopeError::TooLong));
        let max = a.seal(Kind::Foca, &[0u8; MAX_PAYLOAD]);
        assert!(a.open(&max).is_ok());
    }

    #[test]
    fn cluster_names_are_bounded() {
        assert!(Auth::new("", b"x").is_err());
        assert!(Auth::new(&"c".repeat(256), b"x").is_err());
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic_nor_pass(data in proptest::collection::vec(any::<u8>(), 0..1800)) {
            prop_assert!(auth().open(&data).is_err());
        }

        #[test]
        fn prefixed_random_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..64), kind in 0u8..5) {
            let mut d = vec![b'S', b'G', VERSION, kind, 5];
            d.extend_from_slice(b"shoal");
            d.extend_from_slice(&tail);
            prop_assert!(auth().open(&d).is_err());
        }
    }
}
