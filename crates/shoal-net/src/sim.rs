//! turmoil's simulated sockets behind tokio's API (the part of it Shoal uses).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::io::{self, IoSlice};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `AsyncWrite` for a type with an `inner` turmoil writer and its `link`: writes and
/// flushes wait while the link is cut (see [`faults::tcp_cut`]).
macro_rules! cut_writes {
    ($t:ty) => {
        impl AsyncWrite for $t {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                let this = self.get_mut();
                if faults::tcp_blocked(this.link, Some(cx.waker())) {
                    return Poll::Pending;
                }
                Pin::new(&mut this.inner).poll_write(cx, buf)
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                let this = self.get_mut();
                if faults::tcp_blocked(this.link, Some(cx.waker())) {
                    return Poll::Pending;
                }
                Pin::new(&mut this.inner).poll_flush(cx)
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
            }
        }
    };
}

/// The halves of a split stream, as `tokio::net::tcp`. The write half obeys the TCP cuts
/// of [`faults`](super::faults).
pub mod tcp {
    use super::*;

    pub use turmoil::net::tcp::OwnedReadHalf;

    /// The write half of a split [`TcpStream`](super::TcpStream).
    #[derive(Debug)]
    pub struct OwnedWriteHalf {
        pub(super) inner: turmoil::net::tcp::OwnedWriteHalf,
        pub(super) link: (IpAddr, IpAddr),
    }

    cut_writes!(OwnedWriteHalf);
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
        Ok((TcpStream::new(s)?, a))
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// A simulated TCP stream. What it writes waits while its link is cut (see
/// [`faults::tcp_cut`]), as real TCP resends until the network heals.
#[derive(Debug)]
pub struct TcpStream {
    inner: turmoil::net::TcpStream,
    /// (this end's address, the peer's).
    link: (IpAddr, IpAddr),
}

impl TcpStream {
    fn new(inner: turmoil::net::TcpStream) -> io::Result<TcpStream> {
        let link = (inner.local_addr()?.ip(), inner.peer_addr()?.ip());
        Ok(TcpStream { inner, link })
    }

    /// Connects; while the link is cut either way (the SYN or its answer lost), the
    /// connection is not established (the caller's timeout ends the wait).
    pub async fn connect<A: turmoil::ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let s = TcpStream::new(turmoil::net::TcpStream::connect(addr).await?)?;
        let (a, b) = s.link;
        std::future::poll_fn(|cx| {
            let cut = faults::tcp_blocked((a, b), Some(cx.waker()))
                || faults::tcp_blocked((b, a), Some(cx.waker()));
            if cut {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
        Ok(s)
    }

    pub fn set_nodelay(&self, _nodelay: bool) -> io::Result<()> {
        Ok(())
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// Writes what the simulated socket takes of the first non-empty buffer (turmoil's
    /// flow control: `WouldBlock` while the peer has not read enough, or the link is cut).
    pub fn try_write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if faults::tcp_blocked(self.link, None) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let buf = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        self.inner.try_write(buf)
    }

    /// [`TcpStream::try_write_vectored`] with one buffer.
    pub fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.try_write_vectored(&[IoSlice::new(buf)])
    }

    pub async fn writable(&self) -> io::Result<()> {
        let link = self.link;
        std::future::poll_fn(|cx| {
            if faults::tcp_blocked(link, Some(cx.waker())) {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
        self.inner.writable().await
    }

    pub fn into_split(self) -> (tcp::OwnedReadHalf, tcp::OwnedWriteHalf) {
        let (r, w) = self.inner.into_split();
        (
            r,
            tcp::OwnedWriteHalf {
                inner: w,
                link: self.link,
            },
        )
    }
}

impl AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

cut_writes!(TcpStream);

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

/// Faults that turmoil's links do not model: loss of single datagrams, partitions of UDP
/// alone (one way or both), and cuts of TCP alone. turmoil drops or holds whole links, TCP
/// and UDP together, and a TCP segment it drops is never sent again (real TCP would resend
/// it), so the simulation holds TCP through a partition and drops datagrams here. Datagram
/// sockets are told apart by the port they are bound to (each simulated node gossips on its
/// own port), TCP streams by their hosts' addresses.
pub mod faults {
    use super::*;

    #[derive(Default)]
    pub(super) struct UdpFaults {
        pub(super) drop: HashMap<(u16, u16), f64>,
        pub(super) rng: u64,
    }

    /// TCP cut from one host to another, and the tasks waiting to write across a cut.
    #[derive(Default)]
    pub(super) struct TcpFaults {
        cut: HashSet<(IpAddr, IpAddr)>,
        waiting: Vec<Waker>,
    }

    thread_local! {
        pub(super) static UDP: RefCell<UdpFaults> = RefCell::new(UdpFaults::default());
        static TCP: RefCell<TcpFaults> = RefCell::new(TcpFaults::default());
    }

    /// Forgets every fault and seeds the choice of dropped datagrams.
    pub(super) fn reset(seed: u64) {
        UDP.with(|f| {
            *f.borrow_mut() = UdpFaults {
                drop: HashMap::new(),
                rng: seed,
            }
        });
        TCP.with(|f| *f.borrow_mut() = TcpFaults::default());
    }

    /// Cuts (`on`) or heals the TCP segments from host `from` to host `to` (datagrams are
    /// untouched). Across a cut, writes wait and connections are not established; what was
    /// written before it is delivered, and what waits goes on once it heals, as real TCP
    /// resends (a cut longer than the peers' timeouts ends their connections there). Two
    /// differences from a real network: the far end's `accept` returns even while the link
    /// is cut (turmoil completes the connection first; the connecting side waits), and a
    /// close crosses the cut.
    pub fn tcp_cut(from: IpAddr, to: IpAddr, on: bool) {
        let woken = TCP.with(|f| {
            let mut f = f.borrow_mut();
            if on {
                f.cut.insert((from, to));
                Vec::new()
            } else {
                f.cut.remove(&(from, to));
                std::mem::take(&mut f.waiting)
            }
        });
        woken.into_iter().for_each(Waker::wake);
    }

    /// Whether writes on `link` (this end, the peer) wait; `waker` is woken when a cut
    /// heals.
    pub(super) fn tcp_blocked(link: (IpAddr, IpAddr), waker: Option<&Waker>) -> bool {
        TCP.with(|f| {
            let mut f = f.borrow_mut();
            if !f.cut.contains(&link) {
                return false;
            }
            if let Some(w) = waker {
                if !f.waiting.iter().any(|o| o.will_wake(w)) {
                    f.waiting.push(w.clone());
                }
            }
            true
        })
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
