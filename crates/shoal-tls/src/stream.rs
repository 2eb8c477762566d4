//! A connection that is plain TCP, TLS over TCP or a Unix socket, with the operations Shoal's
//! I/O loops use:
//! reads and writes as any tokio stream, a non-blocking vectored write with a readiness wait
//! (the client loop's fast path), and halves for the inter-node reader and writer tasks.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use shoal_net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use shoal_net::{unix, TcpStream, UnixStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsStream;

/// Most bytes of a TLS session's data [`Stream::writable_or_read`] takes at a time.
const TLS_READ_AHEAD: usize = 16 * 1024;

/// Plain TCP, TLS (either side of the handshake) over TCP, or a Unix socket (a client on
/// this machine: Redis's `unixsocket`, memcached's `-s`).
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
    Unix(UnixStream),
}

impl Stream {
    /// The TCP socket underneath, if it is one.
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(s) => Some(s),
            Stream::Tls(s) => Some(s.get_ref().0),
            Stream::Unix(_) => None,
        }
    }

    /// Writes what it can of `bufs` without waiting; `WouldBlock` when nothing could be
    /// taken. TLS may keep encrypted bytes back: call [`Stream::try_flush`] once the output
    /// is all taken.
    pub fn try_write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            // One piece (an unpipelined reply, most of the time) as a plain write: the
            // kernel's writev first copies in the vector.
            Stream::Plain(s) if bufs.len() == 1 => s.try_write(&bufs[0]),
            Stream::Plain(s) => s.try_write_vectored(bufs),
            Stream::Unix(s) if bufs.len() == 1 => s.try_write(&bufs[0]),
            Stream::Unix(s) => s.try_write_vectored(bufs),
            Stream::Tls(s) => {
                let mut cx = Context::from_waker(Waker::noop());
                match Pin::new(&mut **s).poll_write_vectored(&mut cx, bufs) {
                    Poll::Ready(r) => r,
                    Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
                }
            }
        }
    }

    /// Sends bytes TLS kept back without waiting; `Ok(false)` when some are still held
    /// (wait with [`Stream::writable`] and call again). Plain TCP holds nothing.
    pub fn try_flush(&mut self) -> io::Result<bool> {
        match self {
            Stream::Plain(_) | Stream::Unix(_) => Ok(true),
            Stream::Tls(s) => {
                let mut cx = Context::from_waker(Waker::noop());
                match Pin::new(&mut **s).poll_flush(&mut cx) {
                    Poll::Ready(r) => r.map(|()| true),
                    Poll::Pending => Ok(false),
                }
            }
        }
    }

    /// Waits until the socket can take more bytes.
    pub async fn writable(&self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.writable().await,
            Stream::Tls(s) => s.get_ref().0.writable().await,
            Stream::Unix(s) => s.writable().await,
        }
    }

    /// Waits until the socket can take more bytes (`Ok(None)`) or, when `input` is given,
    /// input arrived, which is read into it (`Ok(Some(n))`, 0 at its end). In the
    /// simulation a TLS stream only waits to write.
    pub async fn writable_or_read(
        &mut self,
        input: Option<&mut bytes::BytesMut>,
    ) -> io::Result<Option<usize>> {
        match (self, input) {
            (Stream::Plain(s), Some(buf)) => shoal_net::tcp_writable_or_read(s, buf).await,
            (Stream::Unix(s), Some(buf)) => shoal_net::unix_writable_or_read(s, buf).await,
            (Stream::Tls(s), Some(buf)) if !shoal_net::SIMULATED => {
                // The session's data, not the socket's readiness: a record may be partial.
                std::future::poll_fn(|cx| {
                    let mut chunk = [0u8; TLS_READ_AHEAD];
                    let mut read = ReadBuf::new(&mut chunk);
                    match Pin::new(&mut **s).poll_read(cx, &mut read) {
                        Poll::Ready(Ok(())) => {
                            buf.extend_from_slice(read.filled());
                            return Poll::Ready(Ok(Some(read.filled().len())));
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => {}
                    }
                    shoal_net::poll_write_ready(s.get_ref().0, cx).map_ok(|()| None)
                })
                .await
            }
            (s, _) => s.writable().await.map(|()| None),
        }
    }

    /// Read and write halves for two tasks: the socket's own halves for plain TCP, a
    /// shared session for TLS.
    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Plain(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Plain(r), WriteHalf::Plain(w))
            }
            Stream::Tls(s) => {
                let (r, w) = tokio::io::split(s);
                (ReadHalf::Tls(r), WriteHalf::Tls(w))
            }
            Stream::Unix(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
        }
    }
}

impl From<TcpStream> for Stream {
    fn from(s: TcpStream) -> Stream {
        Stream::Plain(s)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(&mut **s).poll_write_vectored(cx, bufs),
            Stream::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// The read half of a [`Stream`].
pub enum ReadHalf {
    Plain(OwnedReadHalf),
    Tls(tokio::io::ReadHalf<Box<TlsStream<TcpStream>>>),
    Unix(unix::OwnedReadHalf),
}

/// The write half of a [`Stream`].
pub enum WriteHalf {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<Box<TlsStream<TcpStream>>>),
    Unix(unix::OwnedWriteHalf),
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ReadHalf::Tls(s) => Pin::new(s).poll_read(cx, buf),
            ReadHalf::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_write(cx, buf),
            WriteHalf::Tls(s) => Pin::new(s).poll_write(cx, buf),
            WriteHalf::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_flush(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_flush(cx),
            WriteHalf::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(s) => Pin::new(s).poll_shutdown(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_shutdown(cx),
            WriteHalf::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
