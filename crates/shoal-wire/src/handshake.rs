//! Mutual challenge-response authentication with the cluster secret.
//!
//! ```text
//! client                                              server
//!   Hello { cluster, client_nonce, node }  ------->   version (header) and cluster checked
//!                                          <-------   Challenge { server_nonce, mac_s, node }
//!   mac_s verified                                      mac_s = MAC_k("shoal/v1/server" ‖ v ‖ |c| ‖ c
//!   Proof { mac_c }                        ------->                   ‖ client_nonce ‖ server_nonce)
//!     mac_c = MAC_k("shoal/v1/client" ‖ v ‖ |c| ‖ c                  mac_c verified
//!                   ‖ server_nonce ‖ client_nonce)
//!                                          <-------   Welcome
//! ```
//!
//! `k = blake3::derive_key("shoal cluster secret v1", secret)`, `MAC_k` is BLAKE3 keyed with
//! `k`, `v` the protocol version byte, `|c|` the cluster name's length byte. Each side proves
//! it holds the secret by MACing a nonce the other side just drew, so neither a recorded
//! handshake nor the secret itself (which never crosses the wire) lets a third party in. The
//! two domain strings differ, so a server's MAC can never be replayed as a client's proof
//! (reflection). MACs are compared in constant time (`blake3::Hash`'s `PartialEq`).
//!
//! Any failure is answered with a Refused frame carrying a [`RefuseReason`] (when the other
//! side can still be told), logged with `tracing::warn!`, and the connection is closed.
//!
//! Nonces come from the OS CSPRNG through the `getrandom` crate (by way of
//! `shoal_net::fill_random`, which the whole-cluster simulation seeds instead): it is a few
//! hundred lines over the one system call and handles the platforms where `/dev/urandom` is
//! not the right source (or not there, in a chroot).

use std::fmt;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::frame::{
    decode, Challenge, Frame, FrameError, FrameLimits, Hello, RefuseReason, MAC_LEN, MAX_NAME_LEN,
    NONCE_LEN, PROTOCOL_VERSION,
};

/// Context string of the key derivation: the secret is never used as a key directly.
const KEY_CONTEXT: &str = "shoal cluster secret v1";
/// Domain of the server's MAC.
const SERVER_DOMAIN: &[u8] = b"shoal/v1/server";
/// Domain of the client's MAC.
const CLIENT_DOMAIN: &[u8] = b"shoal/v1/client";

/// Who this node is and what it shares with the rest of its cluster.
#[derive(Clone)]
pub struct AuthConfig {
    /// Must be equal on both sides: keeps two clusters that share a secret (staging and
    /// production built from one template) from talking to each other. At most 255 bytes.
    pub cluster_name: String,
    /// The shared cluster secret. Never sent, never logged (`Debug` redacts it).
    pub secret: Vec<u8>,
    /// This node's name, sent in the clear for the other side's logs. At most 255 bytes.
    pub node_name: String,
    /// TLS for links (`tls-cluster`): both sides wrap the TCP connection before the
    /// handshake, and a peer's certificate must chain to the configured CA.
    pub tls: Option<shoal_tls::Tls>,
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("cluster_name", &self.cluster_name)
            .field("secret", &"<redacted>")
            .field("node_name", &self.node_name)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl AuthConfig {
    pub fn new(
        cluster_name: impl Into<String>,
        secret: impl Into<Vec<u8>>,
        node_name: impl Into<String>,
    ) -> Self {
        AuthConfig {
            cluster_name: cluster_name.into(),
            secret: secret.into(),
            node_name: node_name.into(),
            tls: None,
        }
    }

    /// The same, with TLS on the links.
    pub fn with_tls(mut self, tls: shoal_tls::Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Wraps a connection to `peer` in TLS when links use it, within `limit`.
    pub(crate) async fn secure_outgoing(
        &self,
        tcp: shoal_net::TcpStream,
        peer: std::net::IpAddr,
        limit: Duration,
    ) -> Result<shoal_tls::Stream, HandshakeError> {
        match &self.tls {
            None => Ok(tcp.into()),
            Some(tls) => tokio::time::timeout(limit, tls.connect(tcp, peer))
                .await
                .map_err(|_| HandshakeError::Timeout)?
                .map_err(tls_error),
        }
    }

    /// Wraps an accepted connection in TLS when links use it, within `limit`.
    pub(crate) async fn secure_incoming(
        &self,
        tcp: shoal_net::TcpStream,
        limit: Duration,
    ) -> Result<shoal_tls::Stream, HandshakeError> {
        match &self.tls {
            None => Ok(tcp.into()),
            Some(tls) => tokio::time::timeout(limit, tls.accept_link(tcp))
                .await
                .map_err(|_| HandshakeError::Timeout)?
                .map_err(tls_error),
        }
    }

    /// Checks what the handshake needs: names that fit their length byte, a non-empty secret.
    pub fn validate(&self) -> Result<(), HandshakeError> {
        if self.cluster_name.len() > MAX_NAME_LEN {
            return Err(HandshakeError::Config("cluster name longer than 255 bytes"));
        }
        if self.node_name.len() > MAX_NAME_LEN {
            return Err(HandshakeError::Config("node name longer than 255 bytes"));
        }
        if self.secret.is_empty() {
            return Err(HandshakeError::Config("empty cluster secret"));
        }
        Ok(())
    }

    fn key(&self) -> [u8; 32] {
        blake3::derive_key(KEY_CONTEXT, &self.secret)
    }
}

/// Why a handshake failed. The first three are refusals (the other side's configuration
/// differs from ours); the rest are transport trouble.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("wrong cluster secret")]
    WrongSecret,
    #[error("cluster name mismatch")]
    ClusterMismatch,
    #[error("protocol version mismatch")]
    VersionMismatch,
    #[error("handshake timed out")]
    Timeout,
    #[error("handshake protocol violation: {0}")]
    Protocol(&'static str),
    #[error("bad frame during handshake: {0}")]
    Frame(FrameError),
    #[error("connection closed during handshake")]
    Closed,
    #[error("i/o error during handshake: {0}")]
    Io(std::io::ErrorKind),
    #[error("invalid auth config: {0}")]
    Config(&'static str),
    /// The TLS handshake failed (a certificate the CA did not sign, TLS on one side only).
    #[error("TLS handshake failed: {0}")]
    Tls(String),
}

/// A TLS failure proper (a certificate refused, TLS on one side only) is a refusal; a
/// connection reset or closed mid-handshake (a peer restarting, a port probe) is not.
fn tls_error(e: std::io::Error) -> HandshakeError {
    if e.kind() == std::io::ErrorKind::InvalidData {
        HandshakeError::Tls(e.to_string())
    } else {
        HandshakeError::Io(e.kind())
    }
}

impl HandshakeError {
    /// True for errors that say the peer is configured differently (or misbehaves), as
    /// opposed to the connection failing.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::WrongSecret
                | Self::ClusterMismatch
                | Self::VersionMismatch
                | Self::Protocol(_)
                | Self::Tls(_)
        )
    }

    fn from_reason(reason: RefuseReason) -> Self {
        match reason {
            RefuseReason::VersionMismatch => Self::VersionMismatch,
            RefuseReason::ClusterMismatch => Self::ClusterMismatch,
            RefuseReason::WrongSecret => Self::WrongSecret,
            RefuseReason::Protocol => Self::Protocol("refused by peer"),
        }
    }
}

impl From<std::io::Error> for HandshakeError {
    fn from(e: std::io::Error) -> Self {
        HandshakeError::Io(e.kind())
    }
}

/// What a successful handshake leaves behind.
#[derive(Debug)]
pub(crate) struct Established {
    /// Bytes read past the last handshake frame (the start of the data stream).
    pub read_buf: BytesMut,
    /// The other side's node name, for logs.
    pub peer_node: String,
}

/// Runs the client half on `stream`, within `limit`.
pub(crate) async fn client_handshake<S>(
    stream: &mut S,
    auth: &AuthConfig,
    peer: &(dyn fmt::Display + Sync),
    limit: Duration,
) -> Result<Established, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    auth.validate()?;
    tokio::time::timeout(limit, client_steps(stream, auth, peer))
        .await
        .unwrap_or(Err(HandshakeError::Timeout))
}

/// Connects to `addr`, runs the client half of the handshake and hangs up: tells whether the
/// node there would accept this one (`Ok`, its node name), refuses it (wrong secret, other
/// cluster name or version), or cannot be reached. For diagnosing why a node cannot join.
pub async fn probe(
    addr: std::net::SocketAddr,
    auth: &AuthConfig,
    limit: Duration,
) -> Result<String, HandshakeError> {
    let tcp = tokio::time::timeout(limit, shoal_net::TcpStream::connect(addr))
        .await
        .map_err(|_| HandshakeError::Timeout)?
        .map_err(|e| HandshakeError::Io(e.kind()))?;
    let started = tokio::time::Instant::now();
    let mut stream = auth.secure_outgoing(tcp, addr.ip(), limit).await?;
    let left = limit.saturating_sub(started.elapsed());
    let established = client_handshake(&mut stream, auth, &addr, left).await?;
    Ok(established.peer_node)
}

/// Runs the server half on `stream`, within `limit`.
pub(crate) async fn server_handshake<S>(
    stream: &mut S,
    auth: &AuthConfig,
    peer: &(dyn fmt::Display + Sync),
    limit: Duration,
) -> Result<Established, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    auth.validate()?;
    tokio::time::timeout(limit, server_steps(stream, auth, peer))
        .await
        .unwrap_or(Err(HandshakeError::Timeout))
}

async fn client_steps<S>(
    stream: &mut S,
    auth: &AuthConfig,
    peer: &(dyn fmt::Display + Sync),
) -> Result<Established, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let key = auth.key();
    let client_nonce = nonce()?;
    send(
        stream,
        &Frame::Hello(Hello {
            cluster: auth.cluster_name.clone(),
            client_nonce,
            node: auth.node_name.clone(),
        }),
    )
    .await?;
    let mut buf = BytesMut::with_capacity(256);
    let challenge = match read_frame(stream, &mut buf).await {
        Ok(Frame::Challenge(c)) => c,
        Ok(Frame::Refused { reason, message }) => {
            tracing::warn!(%peer, %reason, %message, "peer refused our handshake");
            return Err(HandshakeError::from_reason(reason));
        }
        Ok(_) => return refuse(stream, peer, RefuseReason::Protocol, "expected Challenge").await,
        Err(HandshakeError::VersionMismatch) => {
            tracing::warn!(%peer, "peer answered in another protocol version");
            return Err(HandshakeError::VersionMismatch);
        }
        Err(e) => return Err(e),
    };
    let expected = mac(
        &key,
        SERVER_DOMAIN,
        &auth.cluster_name,
        &client_nonce,
        &challenge.server_nonce,
    );
    if !mac_eq(&expected, &challenge.mac) {
        let message = format!(
            "node {:?} failed to prove the cluster secret",
            challenge.node
        );
        return refuse(stream, peer, RefuseReason::WrongSecret, &message).await;
    }
    let proof = mac(
        &key,
        CLIENT_DOMAIN,
        &auth.cluster_name,
        &challenge.server_nonce,
        &client_nonce,
    );
    send(stream, &Frame::Proof { mac: proof }).await?;
    match read_frame(stream, &mut buf).await? {
        Frame::Welcome => Ok(Established {
            read_buf: buf,
            peer_node: challenge.node,
        }),
        Frame::Refused { reason, message } => {
            tracing::warn!(%peer, %reason, %message, "peer refused our handshake");
            Err(HandshakeError::from_reason(reason))
        }
        _ => refuse(stream, peer, RefuseReason::Protocol, "expected Welcome").await,
    }
}

async fn server_steps<S>(
    stream: &mut S,
    auth: &AuthConfig,
    peer: &(dyn fmt::Display + Sync),
) -> Result<Established, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = BytesMut::with_capacity(512);
    let hello = match read_frame(stream, &mut buf).await {
        Ok(Frame::Hello(h)) => h,
        Ok(_) => return refuse(stream, peer, RefuseReason::Protocol, "expected Hello").await,
        Err(HandshakeError::VersionMismatch) => {
            let message = format!("this node speaks protocol version {PROTOCOL_VERSION}");
            return refuse(stream, peer, RefuseReason::VersionMismatch, &message).await;
        }
        Err(e) => return Err(e),
    };
    if hello.cluster != auth.cluster_name {
        let message = format!(
            "node {:?} of cluster {:?} is not in cluster {:?}",
            hello.node, hello.cluster, auth.cluster_name
        );
        return refuse(stream, peer, RefuseReason::ClusterMismatch, &message).await;
    }
    let key = auth.key();
    let server_nonce = nonce()?;
    let server_mac = mac(
        &key,
        SERVER_DOMAIN,
        &auth.cluster_name,
        &hello.client_nonce,
        &server_nonce,
    );
    send(
        stream,
        &Frame::Challenge(Challenge {
            server_nonce,
            mac: server_mac,
            node: auth.node_name.clone(),
        }),
    )
    .await?;
    let proof = match read_frame(stream, &mut buf).await? {
        Frame::Proof { mac } => mac,
        Frame::Refused { reason, message } => {
            tracing::warn!(%peer, node = %hello.node, %reason, %message,
                "peer refused our handshake");
            return Err(HandshakeError::from_reason(reason));
        }
        _ => return refuse(stream, peer, RefuseReason::Protocol, "expected Proof").await,
    };
    let expected = mac(
        &key,
        CLIENT_DOMAIN,
        &auth.cluster_name,
        &server_nonce,
        &hello.client_nonce,
    );
    if !mac_eq(&expected, &proof) {
        let message = format!("node {:?} failed to prove the cluster secret", hello.node);
        return refuse(stream, peer, RefuseReason::WrongSecret, &message).await;
    }
    send(stream, &Frame::Welcome).await?;
    Ok(Established {
        read_buf: buf,
        peer_node: hello.node,
    })
}

/// Sends a Refused frame (best effort: the peer may be gone), logs, and returns the error
/// matching `reason`.
async fn refuse<S, T>(
    stream: &mut S,
    peer: &(dyn fmt::Display + Sync),
    reason: RefuseReason,
    message: &str,
) -> Result<T, HandshakeError>
where
    S: AsyncWrite + Unpin,
{
    tracing::warn!(%peer, %reason, %message, "refusing inter-node handshake");
    let frame = Frame::Refused {
        reason,
        message: message.to_owned(),
    };
    // Ignored: the connection is closed right after either way.
    let _ = send(stream, &frame).await;
    let _ = stream.shutdown().await;
    Err(HandshakeError::from_reason(reason))
}

async fn send<S: AsyncWrite + Unpin>(stream: &mut S, frame: &Frame) -> Result<(), HandshakeError> {
    let mut out = BytesMut::with_capacity(128);
    frame.encode(&mut out).map_err(HandshakeError::Frame)?;
    stream.write_all(&out).await?;
    stream.flush().await?;
    Ok(())
}

/// Reads one handshake frame with the small handshake limits.
async fn read_frame<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
) -> Result<Frame, HandshakeError> {
    let limits = FrameLimits::handshake();
    loop {
        match decode(buf, &limits) {
            Ok(Some(frame)) => return Ok(frame),
            Ok(None) => {}
            Err(FrameError::UnsupportedVersion(_)) => return Err(HandshakeError::VersionMismatch),
            Err(e) => return Err(HandshakeError::Frame(e)),
        }
        if stream.read_buf(buf).await? == 0 {
            return Err(HandshakeError::Closed);
        }
    }
}

fn nonce() -> Result<[u8; NONCE_LEN], HandshakeError> {
    let mut n = [0u8; NONCE_LEN];
    shoal_net::fill_random(&mut n).map_err(|_| HandshakeError::Io(std::io::ErrorKind::Other))?;
    Ok(n)
}

fn mac(
    key: &[u8; 32],
    domain: &[u8],
    cluster: &str,
    first: &[u8; NONCE_LEN],
    second: &[u8; NONCE_LEN],
) -> [u8; MAC_LEN] {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(domain);
    // validate() keeps the cluster name within 255 bytes.
    h.update(&[PROTOCOL_VERSION, cluster.len() as u8]);
    h.update(cluster.as_bytes());
    h.update(first);
    h.update(second);
    *h.finalize().as_bytes()
}

/// Constant-time comparison: `blake3::Hash`'s equality is documented constant-time.
fn mac_eq(expected: &[u8; MAC_LEN], got: &[u8; MAC_LEN]) -> bool {
    blake3::Hash::from_bytes(*expected) == blake3::Hash::from_bytes(*got)
}
