//! Shoal's sockets and randomness. Every crate that opens a socket takes its types from here: tokio's
//! (`tokio::net`, re-exported unchanged) in the daemon and every test, or with the `sim`
//! feature turmoil's simulated network, so the whole-cluster simulation
//! (`crates/shoal-sim`) runs the real node code over a network it can delay, drop,
//! reorder and partition.
//!
//! Randomness (handshake nonces, the gossip seed) comes from [`fill_random`] for the same
//! reason: the simulation draws it from its seed.
//!
//! The simulated types offer the subset of tokio's API that Shoal uses, with the same
//! signatures.
//!
//! The `sim` feature is for `crates/shoal-sim` alone. Cargo unifies features within one
//! build, so `cargo build --workspace` would give every crate, the daemon included,
//! simulated sockets: the workspace's `default-members` leave the simulation out, and
//! [`SIMULATED`] lets the daemon refuse to start when it was built that way.

/// True when this build has the simulation's sockets (see above).
pub const SIMULATED: bool = cfg!(feature = "sim");

#[cfg(not(feature = "sim"))]
pub use tokio::net::{lookup_host, tcp, TcpListener, TcpStream, UdpSocket};

#[cfg(feature = "sim")]
mod sim;
/// Unix sockets are tokio's in every build (clients on this machine: the simulation has none).
pub use tokio::net::{unix, UnixListener, UnixStream};

#[cfg(feature = "sim")]
pub use sim::{faults, lookup_host, seed, splitmix64, tcp, TcpListener, TcpStream, UdpSocket};

/// Binds a listener on `addr` (`host:port`, the first address it resolves to that binds)
/// with a listen queue of `backlog` connections (the kernel caps it at `somaxconn`). Tokio's
/// `TcpListener::bind` asks for 128, as the standard library does: 5,000 clients
/// connecting at once overflowed it, and each dropped connect waited a second for its SYN
/// to be sent again. The simulation's listeners have no queue to size.
pub async fn listen(addr: &str, backlog: u32) -> std::io::Result<TcpListener> {
    #[cfg(not(feature = "sim"))]
    {
        let mut last = None;
        for at in lookup_host(addr).await? {
            let socket = if at.is_ipv4() {
                tokio::net::TcpSocket::new_v4()?
            } else {
                tokio::net::TcpSocket::new_v6()?
            };
            socket.set_reuseaddr(true)?;
            match socket.bind(at).and_then(|()| socket.listen(backlog)) {
                Ok(listener) => return Ok(listener),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the address resolved to nothing",
            )
        }))
    }
    #[cfg(feature = "sim")]
    {
        let _ = backlog;
        TcpListener::bind(addr).await
    }
}

/// A connection taken off the runtime that accepted it, to be served on another runtime
/// (the daemon's per-core workers): [`detach`] it on the first, [`attach`] it inside the
/// second. The simulation's connections cannot move (`detach` hands them back).
#[cfg(not(feature = "sim"))]
pub type Detached = std::net::TcpStream;
/// See the non-simulated `Detached`: none exists in the simulation.
#[cfg(feature = "sim")]
pub enum Detached {}

/// Takes `stream` off its runtime's I/O driver (`Err` with the stream when it cannot move:
/// in the simulation); the inner error is the OS's.
pub fn detach(stream: TcpStream) -> Result<std::io::Result<Detached>, Box<TcpStream>> {
    #[cfg(not(feature = "sim"))]
    return Ok(stream.into_std());
    #[cfg(feature = "sim")]
    Err(Box::new(stream))
}

/// Registers a detached connection with the current runtime (call inside it).
pub fn attach(stream: Detached) -> std::io::Result<TcpStream> {
    #[cfg(not(feature = "sim"))]
    return TcpStream::from_std(stream);
    #[cfg(feature = "sim")]
    match stream {}
}

/// The OS's descriptor of a socket, as Redis's CLIENT LIST `fd` and memcached's `stats conns`
/// show it (-1 in the simulation, whose sockets have none).
#[cfg(not(feature = "sim"))]
pub fn fd_of<T: std::os::fd::AsRawFd>(socket: &T) -> i32 {
    socket.as_raw_fd()
}

/// See the non-simulated `fd_of`: -1.
#[cfg(feature = "sim")]
pub fn fd_of<T>(_: &T) -> i32 {
    -1
}

/// Redis's `tcp-keepalive` on a client's socket (`anetKeepAlive`): probes after `secs` idle,
/// then every third of that, and the connection is dropped after three unanswered; 0 leaves
/// the socket as it is. Nothing in the simulation, whose sockets have no such option.
#[cfg(not(feature = "sim"))]
pub fn set_keepalive(stream: &TcpStream, secs: u64) -> std::io::Result<()> {
    if secs == 0 {
        return Ok(());
    }
    let idle = std::time::Duration::from_secs(secs);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(idle)
        .with_interval(std::time::Duration::from_secs((secs / 3).max(1)))
        .with_retries(3);
    socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive)
}

/// See the non-simulated `set_keepalive`: nothing to set.
#[cfg(feature = "sim")]
pub fn set_keepalive(_: &TcpStream, _: u64) -> std::io::Result<()> {
    Ok(())
}

/// Waits until `$stream` can take more bytes (`Ok(None)`) or input arrived, which is read
/// into `$buf` (`Ok(Some(n))`, 0 at its end): a connection whose client does not read its
/// replies yet reads on meanwhile. Both waits take `&self`, so one poll serves both.
macro_rules! writable_or_read {
    ($stream:expr, $buf:expr) => {
        std::future::poll_fn(|cx| loop {
            match $stream.poll_read_ready(cx) {
                std::task::Poll::Ready(Ok(())) => match $stream.try_read_buf($buf) {
                    Ok(n) => return std::task::Poll::Ready(Ok(Some(n))),
                    // Readiness was stale (and is cleared now): poll again, to wait.
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) => return std::task::Poll::Ready(Err(e)),
                },
                std::task::Poll::Ready(Err(e)) => return std::task::Poll::Ready(Err(e)),
                std::task::Poll::Pending => {}
            }
            return $stream.poll_write_ready(cx).map_ok(|()| None);
        })
        .await
    };
}

/// [`writable_or_read!`] on a TCP stream; the simulation's only waits to write.
pub async fn tcp_writable_or_read(
    stream: &TcpStream,
    buf: &mut bytes::BytesMut,
) -> std::io::Result<Option<usize>> {
    #[cfg(not(feature = "sim"))]
    return writable_or_read!(stream, buf);
    #[cfg(feature = "sim")]
    {
        let _ = buf;
        stream.writable().await.map(|()| None)
    }
}

/// Polls whether `stream` can take more bytes. The simulation's streams are not polled so
/// (their callers check [`SIMULATED`] first): there it answers ready.
pub fn poll_write_ready(
    stream: &TcpStream,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<std::io::Result<()>> {
    #[cfg(not(feature = "sim"))]
    return stream.poll_write_ready(cx);
    #[cfg(feature = "sim")]
    {
        let _ = (stream, cx);
        std::task::Poll::Ready(Ok(()))
    }
}

/// [`writable_or_read!`] on a Unix socket.
pub async fn unix_writable_or_read(
    stream: &UnixStream,
    buf: &mut bytes::BytesMut,
) -> std::io::Result<Option<usize>> {
    writable_or_read!(stream, buf)
}

/// Fills `buf` with random bytes: the OS's (`getrandom`), or in the simulation bytes drawn
/// from its seed (see [`seed`]), so that a run does not depend on the OS.
pub fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(not(feature = "sim"))]
    return getrandom::fill(buf).map_err(|_| std::io::ErrorKind::Other.into());
    #[cfg(feature = "sim")]
    {
        sim::fill_random(buf);
        Ok(())
    }
}

/// A random `u64`, as [`fill_random`].
pub fn random_u64() -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    fill_random(&mut b)?;
    Ok(u64::from_le_bytes(b))
}
