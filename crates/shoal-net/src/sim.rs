//! turmoil's simulated sockets behind tokio's API (the part of it Shoal uses).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The halves of a split stream, as `tokio::net::tcp`.
pub mod tcp {
    pub use turmoil::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
}

/// Resolves `host:port` through the simulation's names (an IP address resolves to itself).
pub async fn lookup_host(target: &str) -> io::Result<std::vec::IntoIter<SocketAddr>> {
    let (host, port) = target
        .rsplit_once(':')
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "missing port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "invalid port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // turmoil gives a name it does not know an address of its own, where nothing answers.
    let ip = host.parse().unwrap_or_else(|_| turmoil::lookup(host));
    Ok(vec![SocketAddr::new(ip, port)].into_iter())
}

/// A simulated TCP listener.
pub struct TcpListener(turmoil::net::TcpListener);

impl std::fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TcpListener")
            .field(&self.0.local_addr())
            .finish()
    }
}

impl TcpListener {
    pub async fn bind<A: turmoil::ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        turmoil::net::TcpListener::bind(addr).await.map(TcpListener)
    }

    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, a) = self.0.accept().await?;
        Ok((TcpStream(s), a))
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// A simulated TCP stream.
#[derive(Debug)]
pub struct TcpStream(turmoil::net::TcpStream);

impl TcpStream {
    pub async fn connect<A: turmoil::ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        turmoil::net::TcpStream::connect(addr).await.map(TcpStream)
    }

    pub fn set_nodelay(&self, _nodelay: bool) -> io::Result<()> {
        Ok(())
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.0.peer_addr()
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    /// Writes what the simulated socket takes of the first non-empty buffer (turmoil's
    /// flow control: `WouldBlock` while the peer has not read enough).
    pub fn try_write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let buf = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        self.0.try_write(buf)
    }

    pub async fn writable(&self) -> io::Result<()> {
        self.0.writable().await
    }

    pub fn into_split(self) -> (tcp::OwnedReadHalf, tcp::OwnedWriteHalf) {
        self.0.into_split()
    }
}

impl AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// Starts a run: forgets every datagram fault and seeds the datagram losses and
/// [`crate::fill_random`].
pub fn seed(seed: u64) {
    faults::reset(seed);
    RANDOM.with(|r| r.set(seed ^ 0x005E_ED0F_5A4D_0000));
}

thread_local! {
    static RANDOM: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One SplitMix64 step: the simulation's random numbers (here and in `shoal-sim`).
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(crate) fn fill_random(buf: &mut [u8]) {
    RANDOM.with(|r| {
        let mut state = r.get();
        for chunk in buf.chunks_mut(8) {
            let v = splitmix64(&mut state).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        r.set(state);
    });
}

/// Faults on datagrams that turmoil's links do not model: loss of single datagrams and
/// partitions of UDP alone, one way or both. turmoil drops or holds whole links, TCP
/// included, and a TCP segment it drops is never sent again (real TCP would resend it), so
/// the simulation holds TCP through a partition and drops datagrams here. Sockets are told
/// apart by the port they are bound to (each simulated node gossips on its own port).
pub mod faults {
    use super::*;

    #[derive(Default)]
    pub(super) struct UdpFaults {
        pub(super) drop: HashMap<(u16, u16), f64>,
        pub(super) rng: u64,
    }

    thread_local! {
        pub(super) static UDP: RefCell<UdpFaults> = RefCell::new(UdpFaults::default());
    }

    /// Forgets every fault and seeds the choice of dropped datagrams.
    pub(super) fn reset(seed: u64) {
        UDP.with(|f| {
            *f.borrow_mut() = UdpFaults {
                drop: HashMap::new(),
                rng: seed,
            }
        });
    }

    /// Datagrams from the socket on port `from` to port `to` are dropped with probability
    /// `p` (1.0: all of them, 0.0: none).
    pub fn udp_drop(from: u16, to: u16, p: f64) {
        UDP.with(|f| {
            let mut f = f.borrow_mut();
            if p > 0.0 {
                f.drop.insert((from, to), p);
            } else {
                f.drop.remove(&(from, to));
            }
        });
    }

    /// Whether this datagram is dropped.
    pub(super) fn dropped(from: u16, to: u16) -> bool {
        UDP.with(|f| {
            let mut f = f.borrow_mut();
            let Some(&p) = f.drop.get(&(from, to)) else {
                return false;
            };
            // Drawn from the seed, so a seed drops the same datagrams every run.
            let z = splitmix64(&mut f.rng);
            ((z >> 11) as f64 / (1u64 << 53) as f64) < p
        })
    }
}

/// A simulated UDP socket, with the datagram faults of [`faults`].
#[derive(Debug)]
pub struct UdpSocket(turmoil::net::UdpSocket);

impl UdpSocket {
    pub async fn bind<A: turmoil::ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        turmoil::net::UdpSocket::bind(addr).await.map(UdpSocket)
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }

    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.0.recv_from(buf).await
    }

    /// Sends, or drops the datagram as the faults say (a dropped one counts as sent).
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        let from = self.0.local_addr()?.port();
        if faults::dropped(from, target.port()) {
            return Ok(buf.len());
        }
        self.0.try_send_to(buf, target)
    }
}
