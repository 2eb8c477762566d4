//! The calling side: one [`PeerClient`] per peer node, backed by one owner task that holds
//! the connection and the table of requests in flight.
//!
//! ```text
//! request() ──try_send──> cmd channel ──> owner task ──try_send──> writer task ──> socket
//!     ^                      (bounded)     pending map  (bounded)   (batches)
//!     └──── oneshot <──────────────────── owner task <── events <── reader task <── socket
//! ```
//!
//! Every stage is first-in first-out and the command is queued before `request` first
//! awaits, so the requests of one task reach the socket in the order their futures were
//! first polled (the crate docs spell out that guarantee and its limits).
//!
//! The owner connects lazily on the first request after a loss, runs the handshake, and
//! spawns one reader and one writer for the connection. Every request takes a permit of a
//! semaphore sized `max_in_flight` before it is queued and gives it back when it completes,
//! fails or expires, so the channels and the pending map can never hold more than that; over
//! it `request` fails at once with [`WireError::Overloaded`]. When the reader or writer sees
//! the connection end, the owner fails every request in flight with
//! [`WireError::PeerUnavailable`] in one sweep and forgets the connection; the next request
//! reconnects. A failed connect or handshake starts a backoff during which requests fail
//! with the same error without touching the network.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::frame::{decode, ErrorCode, Frame, FrameError, FrameKind, FrameLimits, MAX_BODY};
use crate::handshake::{client_handshake, AuthConfig, HandshakeError};
use crate::writer::run_writer;
use crate::Response;

/// How a [`PeerClient`] behaves. Every bound here is per peer.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// Requests queued or awaiting a response at once; one more fails with `Overloaded`.
    /// Also sizes the command and writer channels, so nothing queues beyond it.
    pub max_in_flight: usize,
    /// How long one request may take, from `request` to its response, before `Timeout`.
    pub request_timeout: Duration,
    /// Limit on the TCP connect; kept short because the router fails over on the error.
    pub connect_timeout: Duration,
    /// Limit on the handshake after the TCP connect.
    pub handshake_timeout: Duration,
    /// After a failed connect or handshake, requests fail fast for this long before the next
    /// attempt, so a dead peer is not hammered by every request.
    pub reconnect_backoff: Duration,
    /// Largest request and response body (the RESP command or reply). Bigger requests fail
    /// with `WireError::Frame` before sending; bigger responses are a protocol error.
    pub max_frame: usize,
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig {
            max_in_flight: 1024,
            request_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_millis(500),
            handshake_timeout: Duration::from_secs(1),
            reconnect_backoff: Duration::from_millis(100),
            max_frame: crate::frame::DEFAULT_MAX_DATA_PAYLOAD - 8,
        }
    }
}

/// Why a request failed. Cloneable: one connection loss is reported to every request in
/// flight.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// `max_in_flight` requests are already in flight to this peer.
    #[error("too many requests in flight to the peer")]
    Overloaded,
    /// No response within `request_timeout`.
    #[error("request to the peer timed out")]
    Timeout,
    /// The peer could not be reached or the connection was lost: fail over.
    #[error("peer unavailable: {0}")]
    PeerUnavailable(Unavailable),
    /// The peer (or we) refused the handshake: it is configured for another cluster, secret
    /// or protocol version. Retrying will not help until someone fixes the configuration.
    #[error("peer handshake refused: {0}")]
    Refused(HandshakeError),
    /// The peer answered this request with a transport-level error instead of a response.
    #[error("peer answered with error ({code}): {message}")]
    Remote { code: ErrorCode, message: String },
    /// A frame could not be built (request body too large) or the peer sent a bad frame
    /// (the connection was dropped).
    #[error("frame error: {0}")]
    Frame(FrameError),
}

/// Why the peer is unavailable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("connect failed: {0}")]
    Connect(std::io::ErrorKind),
    #[error("connect timed out")]
    ConnectTimeout,
    #[error("handshake failed: {0}")]
    Handshake(HandshakeError),
    #[error("connection lost")]
    ConnectionLost,
    #[error("peer client shut down")]
    Shutdown,
}

/// Handle to one peer. Cheap to clone; every clone shares the connection and the in-flight
/// bound. The owner task ends when the last clone is dropped, failing what is in flight.
#[derive(Clone, Debug)]
pub struct PeerClient {
    addr: SocketAddr,
    cmd_tx: mpsc::Sender<Cmd>,
    permits: Arc<Semaphore>,
    request_timeout: Duration,
    max_body: usize,
}

type Reply = oneshot::Sender<Result<Response, WireError>>;

#[derive(Debug)]
struct Cmd {
    epoch: u64,
    body: Bytes,
    reply: Reply,
    permit: OwnedSemaphorePermit,
}

impl PeerClient {
    /// Creates the handle and spawns its owner task (so it must be called within a Tokio
    /// runtime). Connects lazily, on the first request.
    pub fn new(addr: SocketAddr, auth: AuthConfig, config: PeerConfig) -> PeerClient {
        let max_in_flight = config.max_in_flight.max(1);
        let (cmd_tx, cmd_rx) = mpsc::channel(max_in_flight);
        let client = PeerClient {
            addr,
            cmd_tx,
            permits: Arc::new(Semaphore::new(max_in_flight)),
            request_timeout: config.request_timeout,
            max_body: config.max_frame.min(MAX_BODY),
        };
        let owner = Owner::new(addr, auth, config, cmd_rx);
        tokio::spawn(owner.run());
        client
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests in flight right now (queued or awaiting a response).
    pub fn in_flight(&self) -> usize {
        // The semaphore's size is max_in_flight; permits out = requests in flight.
        self.max_in_flight() - self.permits.available_permits()
    }

    fn max_in_flight(&self) -> usize {
        self.cmd_tx.max_capacity()
    }

    /// Sends `body` (tagged with the sender's placement `epoch`) and waits for the peer's
    /// response. Never queues beyond `max_in_flight`; never waits beyond `request_timeout`.
    ///
    /// The request is queued on the first poll, before anything is awaited: the requests of
    /// one task go out, and are handled by the peer, in the order their futures are first
    /// polled (see "Ordering" in the crate docs).
    pub async fn request(&self, epoch: u64, body: Bytes) -> Result<Response, WireError> {
        if body.len() > self.max_body {
            return Err(WireError::Frame(FrameError::TooLarge {
                kind: FrameKind::Request,
                len: body.len() as u64,
                max: self.max_body,
            }));
        }
        let permit = Arc::clone(&self.permits)
            .try_acquire_owned()
            .map_err(|_| WireError::Overloaded)?;
        let (reply, rx) = oneshot::channel();
        let cmd = Cmd {
            epoch,
            body,
            reply,
            permit,
        };
        // The channel holds max_in_flight commands and each holds a permit: never full.
        self.cmd_tx.try_send(cmd).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => WireError::Overloaded,
            mpsc::error::TrySendError::Closed(_) => {
                WireError::PeerUnavailable(Unavailable::Shutdown)
            }
        })?;
        match tokio::time::timeout(self.request_timeout, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(WireError::PeerUnavailable(Unavailable::Shutdown)),
            Err(_) => Err(WireError::Timeout),
        }
    }
}

/// What the reader and writer tell the owner, tagged with the connection's generation so
/// news from a connection already replaced is ignored.
#[derive(Debug)]
enum Event {
    Frame(u64, Frame),
    Closed(u64, WireError),
}

struct Pending {
    reply: Reply,
    /// Held until the request completes: this is what bounds requests in flight.
    _permit: OwnedSemaphorePermit,
}

struct Conn {
    generation: u64,
    writer_tx: mpsc::Sender<Frame>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Both halves go at once: the writer may be stuck on a peer that stopped reading.
        self.reader.abort();
        self.writer.abort();
    }
}

/// The task that owns one peer's connection and its pending requests.
struct Owner {
    addr: SocketAddr,
    auth: AuthConfig,
    config: PeerConfig,
    limits: FrameLimits,
    cmd_rx: mpsc::Receiver<Cmd>,
    events_tx: mpsc::Sender<Event>,
    events_rx: mpsc::Receiver<Event>,
    conn: Option<Conn>,
    generation: u64,
    /// Until when requests fail fast with the stored error after a failed connect.
    backoff: Option<(Instant, WireError)>,
    pending: HashMap<u64, Pending>,
    /// Expiry times in the order requests were sent; one request timeout for all, so this is
    /// sorted and needs no heap. Entries of completed requests are skipped when popped.
    deadlines: VecDeque<(Instant, u64)>,
    next_id: u64,
}

impl Owner {
    fn new(
        addr: SocketAddr,
        auth: AuthConfig,
        config: PeerConfig,
        cmd_rx: mpsc::Receiver<Cmd>,
    ) -> Self {
        let (events_tx, events_rx) = mpsc::channel(config.max_in_flight.clamp(16, 4096));
        Owner {
            addr,
            auth,
            limits: FrameLimits::with_max_body(config.max_frame.min(MAX_BODY)),
            config,
            cmd_rx,
            events_tx,
            events_rx,
            conn: None,
            generation: 0,
            backoff: None,
            pending: HashMap::new(),
            deadlines: VecDeque::new(),
            next_id: 1,
        }
    }

    async fn run(mut self) {
        loop {
            let next_deadline = self.deadlines.front().map(|&(at, _)| at);
            tokio::select! {
                biased;
                // Cancel safe: mpsc::Receiver::recv.
                Some(event) = self.events_rx.recv() => self.on_event(event),
                // Cancel safe: mpsc::Receiver::recv. `None`: every PeerClient is gone.
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(cmd) => self.submit(cmd).await,
                    None => break,
                },
                // Cancel safe: a timer.
                () = sleep_until_opt(next_deadline), if next_deadline.is_some() => {
                    self.expire(Instant::now());
                }
            }
        }
        self.fail_all(WireError::PeerUnavailable(Unavailable::Shutdown));
    }

    async fn submit(&mut self, cmd: Cmd) {
        if cmd.reply.is_closed() {
            return; // The caller timed out or went away while this was queued.
        }
        if self.conn.is_none() {
            if let Some((until, err)) = &self.backoff {
                if Instant::now() < *until {
                    let _ = cmd.reply.send(Err(err.clone()));
                    return;
                }
            }
            match self.connect().await {
                Ok(conn) => {
                    self.backoff = None;
                    self.conn = Some(conn);
                }
                Err(err) => {
                    self.backoff =
                        Some((Instant::now() + self.config.reconnect_backoff, err.clone()));
                    let _ = cmd.reply.send(Err(err));
                    return;
                }
            }
        }
        let Some(conn) = &self.conn else {
            unreachable!("connected just above")
        };
        let id = self.next_id;
        self.next_id += 1;
        let frame = Frame::Request {
            id,
            epoch: cmd.epoch,
            body: cmd.body,
        };
        match conn.writer_tx.try_send(frame) {
            Ok(()) => {}
            // Sized like the in-flight bound, so this only happens while frames of requests
            // that already timed out still wait for a stalled socket.
            Err(mpsc::error::TrySendError::Full(_)) => {
                let _ = cmd.reply.send(Err(WireError::Overloaded));
                return;
            }
            // The writer is gone; its Closed event is on the way and will fail this too.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
        self.pending.insert(
            id,
            Pending {
                reply: cmd.reply,
                _permit: cmd.permit,
            },
        );
        self.deadlines
            .push_back((Instant::now() + self.config.request_timeout, id));
    }

    async fn connect(&mut self) -> Result<Conn, WireError> {
        let unavailable = WireError::PeerUnavailable;
        let mut stream =
            match tokio::time::timeout(self.config.connect_timeout, TcpStream::connect(self.addr))
                .await
            {
                Err(_) => return Err(unavailable(Unavailable::ConnectTimeout)),
                Ok(Err(e)) => return Err(unavailable(Unavailable::Connect(e.kind()))),
                Ok(Ok(stream)) => stream,
            };
        // Requests are small and latency-bound; the writer batches already.
        let _ = stream.set_nodelay(true);
        let established = client_handshake(
            &mut stream,
            &self.auth,
            &self.addr,
            self.config.handshake_timeout,
        )
        .await
        .map_err(|e| {
            if e.is_refusal() || matches!(e, HandshakeError::Config(_)) {
                WireError::Refused(e)
            } else {
                unavailable(Unavailable::Handshake(e))
            }
        })?;
        tracing::debug!(peer = %self.addr, node = %established.peer_node, "inter-node connection up");
        self.generation += 1;
        let generation = self.generation;
        let (rd, wr) = stream.into_split();
        let (writer_tx, writer_rx) = mpsc::channel(self.config.max_in_flight.max(1));
        let events = self.events_tx.clone();
        let writer = tokio::spawn(async move {
            if run_writer(wr, writer_rx).await.is_err() {
                let lost = WireError::PeerUnavailable(Unavailable::ConnectionLost);
                let _ = events.send(Event::Closed(generation, lost)).await;
            }
        });
        let reader = tokio::spawn(run_reader(
            generation,
            rd,
            established.read_buf,
            self.limits,
            self.events_tx.clone(),
        ));
        Ok(Conn {
            generation,
            writer_tx,
            reader,
            writer,
        })
    }

    fn on_event(&mut self, event: Event) {
        let current = self.conn.as_ref().map(|c| c.generation);
        match event {
            Event::Frame(generation, frame) if Some(generation) == current => match frame {
                Frame::Response { id, epoch, body } => {
                    if let Some(p) = self.pending.remove(&id) {
                        let _ = p.reply.send(Ok(Response { epoch, body }));
                    }
                }
                Frame::Error { id, code, message } => {
                    if let Some(p) = self.pending.remove(&id) {
                        let _ = p.reply.send(Err(WireError::Remote { code, message }));
                    }
                }
                other => {
                    tracing::warn!(peer = %self.addr, kind = ?other.kind(),
                        "unexpected frame from peer; dropping the connection");
                    self.lose_connection(WireError::PeerUnavailable(Unavailable::ConnectionLost));
                }
            },
            Event::Closed(generation, err) if Some(generation) == current => {
                tracing::debug!(peer = %self.addr, error = %err, "inter-node connection lost");
                self.lose_connection(err);
            }
            // From a connection already replaced.
            Event::Frame(..) | Event::Closed(..) => {}
        }
    }

    fn lose_connection(&mut self, err: WireError) {
        self.conn = None;
        self.fail_all(err);
    }

    fn fail_all(&mut self, err: WireError) {
        for (_, p) in self.pending.drain() {
            let _ = p.reply.send(Err(err.clone()));
        }
        self.deadlines.clear();
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.deadlines.front() {
            if at > now {
                break;
            }
            self.deadlines.pop_front();
            if let Some(p) = self.pending.remove(&id) {
                let _ = p.reply.send(Err(WireError::Timeout));
            }
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Decodes frames off the read half and hands them to the owner until the connection ends.
async fn run_reader(
    generation: u64,
    mut rd: OwnedReadHalf,
    mut buf: BytesMut,
    limits: FrameLimits,
    events: mpsc::Sender<Event>,
) {
    let err = loop {
        match decode(&mut buf, &limits) {
            Ok(Some(frame)) => {
                if events.send(Event::Frame(generation, frame)).await.is_err() {
                    return; // The owner is gone.
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => break WireError::Frame(e),
        }
        buf.reserve(16 * 1024);
        match rd.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break WireError::PeerUnavailable(Unavailable::ConnectionLost),
            Ok(_) => {}
        }
    };
    let _ = events.send(Event::Closed(generation, err)).await;
}
