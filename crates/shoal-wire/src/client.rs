//! The calling side: one [`PeerClient`] per peer node, with one link (a connection and the
//! owner task that holds it) per thread that calls it through [`use_link`] (the daemon's
//! worker threads), so a worker's requests and their answers stay on its own thread; every
//! other thread uses link 0. Each link works as follows.
//!
//! ```text
//!                   connection up: direct ─────────────────────┐
//! request() ──lock──┤                                          ├─try_push─> writer task ─> socket
//!                   no connection: cmd channel ─> owner task ──┘ (outbox)    (batches)
//!     ^
//!     └── oneshot <── lock: pending table <── reader task <── socket
//! ```
//!
//! "lock" is one `std::sync::Mutex` over the state the handles, the owner and the reader
//! share: the pending table, the next request id and the current connection's writer.
//!
//! **Direct path.** While a connection is up its outbox (the writer's queue, `writer.rs`) is
//! published in the shared state. `request` then, under the lock, takes an id and enters
//! its reply in the pending table, and after the lock queues its frame in the outbox
//! itself; the reader looks the id up under the same lock and answers the caller. The owner
//! task is on neither leg.
//!
//! **Through the owner.** With no connection published (first use, after a loss, during a
//! backoff), `request` queues a command on the owner's channel instead, under the lock. The
//! owner connects and runs the handshake, then in one critical section publishes the writer
//! and moves every queued command to it in order. So whenever a writer is published the
//! command channel is empty, and a direct request can never overtake a queued one: the
//! requests of one task reach the outbox, and so the socket, in the order their
//! futures were first polled (the crate docs spell out that guarantee and its limits).
//!
//! **Bounds.** A request sent (on the connection, or queued for the owner) holds one of
//! `max_in_flight` places (a counter) until its future completes or is dropped. A request
//! that finds no place, or finds requests already waiting for one, waits in the link's
//! queue (the backlog, under the lock, first come first served, at most `max_queued`; over
//! that `request` fails at once with [`WireError::Overloaded`]). Whoever gives a place
//! back while requests wait sends the oldest of them, under the lock, on the freed place
//! (`Shared::send_queued`); so a busy link makes requests wait, as a busy Redis makes
//! clients wait, rather than fail, and the queue keeps first-poll order. A request that
//! times out still queued was never sent and fails with `Overloaded`. A request that ends
//! without its answer (timed out, dropped by its caller) takes its entry out of the pending
//! table as it goes, so the table never holds more entries than there are places out and a
//! place is back the moment its request ends; one that ends while queued leaves its entry,
//! marked by its closed reply, to be skipped when reached. The command channel and the
//! outbox hold `max_in_flight` as well; one that is full anyway (frames of expired requests
//! waiting for a stalled socket, or commands of expired requests waiting for a slow
//! connect) answers `Overloaded`.
//!
//! **Timeouts.** Each request times out `request_timeout` after its first poll (a tokio
//! timer), and when the owner goes (its runtime shut down) it fails what is in flight.
//! Timing requests out by a sweep of the pending table instead (no timer per request) saved
//! a clock reading and two timer-wheel operations per forwarded command, but made a request
//! end up to an eighth of the timeout after its deadline: a copy thawed from a freeze then
//! answered late writes, and the scale-out test's freeze step failed 4 of 36 runs (two late
//! EXPIRED answers, two acknowledged INCRs lost; none of 24 with the timer).
//!
//! **Failures.** When the reader or writer sees the connection end, the owner withdraws the
//! writer and fails every request in flight on it with [`WireError::PeerUnavailable`] in
//! one critical section, then drops the connection; the next request reconnects. A failed
//! connect or handshake starts a backoff during which requests fail with the same error
//! without touching the network.

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use shoal_net::TcpStream;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::frame::{decode, ErrorCode, Frame, FrameError, FrameKind, FrameLimits, MAX_BODY};
use crate::handshake::{client_handshake, AuthConfig, HandshakeError};
use crate::writer::{run_writer, Outbox, PushError};
use crate::Response;

/// How a [`PeerClient`] behaves. Every bound here is per peer.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// Requests sent (or queued for the connect) and awaiting a response at once; one more
    /// waits for a place in the link's queue. Also sizes the command channel and the
    /// writer's outbox.
    pub max_in_flight: usize,
    /// Requests waiting for a place at once, per link; one more fails with `Overloaded`.
    pub max_queued: usize,
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
            max_queued: 8 * 1024,
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
    /// `max_in_flight` requests are already in flight to this peer and `max_queued` wait for
    /// a place, or the request waited for one until its timeout: it was not sent.
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

impl Unavailable {
    /// True when nothing was sent and the peer's process is not there to run anything:
    /// nothing listens (connection refused or reset), or it closed the connection during the
    /// handshake (a process being killed still completes connects from its backlog, then
    /// resets them). A connect or handshake that timed out is not: the host may be alive
    /// behind a partition, or frozen.
    pub fn refused(&self) -> bool {
        use std::io::ErrorKind::*;
        match self {
            Unavailable::Connect(kind) => matches!(kind, ConnectionRefused | ConnectionReset),
            Unavailable::Handshake(HandshakeError::Closed) => true,
            Unavailable::Handshake(HandshakeError::Io(kind)) => matches!(
                kind,
                ConnectionReset | ConnectionAborted | UnexpectedEof | BrokenPipe
            ),
            _ => false,
        }
    }

    /// True when the connection broke, or this side shut the link, with requests possibly
    /// on it: the peer's process most likely died, but it may have run them.
    pub fn lost(&self) -> bool {
        matches!(self, Unavailable::ConnectionLost | Unavailable::Shutdown)
    }
}

/// Links each [`PeerClient`] made from now on has room for ([`set_links`]; 1 by default).
static LINKS: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    static LINK: Cell<usize> = const { Cell::new(0) };
}

/// Gives every [`PeerClient`] made from now on `n` links (at least 1): call once, before
/// the clients are made, with the number of threads that will [`use_link`].
pub fn set_links(n: usize) {
    LINKS.store(n.max(1), Ordering::Relaxed);
}

/// Requests this thread makes from now on go through link `index` of every [`PeerClient`]:
/// its own connection to each peer, opened on the first request and served by tasks of the
/// runtime the request runs on. Only for a thread that runs its own current-thread runtime
/// for as long as the clients live (a task there never moves to another thread, so one
/// task's requests keep their order, see the crate docs; and the link's tasks stay up). Other
/// threads use link 0; an `index` beyond [`set_links`]'s shares a link (modulo), which is
/// only safe among threads whose runtimes live as long as the clients.
pub fn use_link(index: usize) {
    LINK.with(|l| l.set(index));
}

/// Handle to one peer. Cheap to clone; every clone shares the links and their in-flight
/// bounds. A link's owner task ends when the last clone is dropped, failing what is in
/// flight.
#[derive(Clone, Debug)]
pub struct PeerClient {
    addr: SocketAddr,
    links: Arc<Links>,
    seen: Arc<Seen>,
}

/// A client's links, each opened on first use (see [`use_link`]).
#[derive(Debug)]
struct Links {
    auth: AuthConfig,
    config: PeerConfig,
    slots: Box<[OnceLock<Link>]>,
}

/// What every link of a client reports to (their reader tasks write it).
#[derive(Debug, Default)]
struct Seen {
    /// The placement epoch the peer's latest response carried (0 before any).
    peer_epoch: AtomicU64,
    /// Responses received so far (error frames included), on every connection.
    responses: AtomicU64,
    /// Connections that ended (the peer closed them, or they failed) so far.
    lost: AtomicU64,
    /// Connections made (their handshake done) so far, and those of them closed since
    /// (ended, or dropped by their owner): the difference is those open now.
    made: AtomicU64,
    closed: AtomicU64,
}

/// Counts a connection in [`Seen::made`] while its reader lives, in [`Seen::closed`] once
/// it ends or is aborted.
struct Open(Arc<Shared>);

impl Open {
    fn new(shared: &Arc<Shared>) -> Open {
        shared.seen.made.fetch_add(1, Ordering::Release);
        Open(Arc::clone(shared))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.seen.closed.fetch_add(1, Ordering::Release);
    }
}

/// One connection's worth of a client: its shared state and its owner's command channel.
#[derive(Debug)]
struct Link {
    shared: Arc<Shared>,
    cmd_tx: mpsc::Sender<Cmd>,
    request_timeout: Duration,
    max_body: usize,
    max_queued: usize,
}

type Reply = oneshot::Sender<Result<Response, WireError>>;

/// Hashes the pending table's keys, request ids, which are sequential and never chosen by
/// a peer: one multiplication spreads them (SipHash cost a measurable share per request).
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type PendingTable = HashMap<u64, Reply, std::hash::BuildHasherDefault<IdHasher>>;

/// What the handles, the owner and the reader share.
#[derive(Debug)]
struct Shared {
    /// Sized `max_in_flight`; a sent request holds one place for as long as its future
    /// lives.
    permits: Permits,
    /// `State::backlog`'s length, written under the lock, read without it: a request goes
    /// straight only while none waits, and a place given back is offered to the queue.
    queued: AtomicUsize,
    /// The owner's command channel, for queued requests sent while no connection is up
    /// (weak: the owner ends when the last handle goes).
    cmd_tx: mpsc::WeakSender<Cmd>,
    state: Mutex<State>,
    seen: Arc<Seen>,
}

/// Everything a request touches on its way, behind one lock. Every critical section is a
/// few map and channel operations: none awaits, none wakes a task where it can be avoided.
#[derive(Debug)]
struct State {
    /// The current connection's outbox (its writer's queue); `Some` only while a connection
    /// is up, and then the owner's command channel is empty (see the module docs).
    writer: Option<Arc<Outbox>>,
    /// Requests sent on the current connection and not answered yet, by request id.
    pending: PendingTable,
    /// Request ids are unique for the life of the client, across connections.
    next_id: u64,
    /// Requests waiting for a place, oldest first (so in id order); one whose caller has
    /// gone (reply closed) is skipped when reached.
    backlog: std::collections::VecDeque<Cmd>,
    /// The answer (request id, payload length) whose frame is arriving, if it is at least
    /// [`ARRIVING_MIN`] long: its request's timer gets the [`transfer_allowance`] of it.
    arriving: Option<(u64, usize)>,
}

/// Frames at least this long are noted while they arrive ([`State::arriving`]).
const ARRIVING_MIN: usize = 1 << 20;

/// Bytes per second a request's timer allows for moving and handling its payload, beyond
/// `request_timeout` ([`transfer_allowance`]).
pub const ALLOWANCE_RATE: u64 = 32 << 20;

/// The time a request or answer of `len` bytes gets beyond `request_timeout` (and the
/// receiver beyond the request's deadline): `len` at [`ALLOWANCE_RATE`], 16 s for 512 MiB,
/// nothing worth counting for a small one. A 512 MB SET through a node that does not own
/// the key took most of the one-second timeout on loopback, and failed under load; a link
/// much slower than loopback could not carry it in time at all.
pub fn transfer_allowance(len: usize) -> Duration {
    Duration::from_micros((len as u64).saturating_mul(1_000_000) / ALLOWANCE_RATE)
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // No critical section panics halfway through a change, so the state behind a
        // poisoned lock is consistent: carry on with it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives a sent request's place back; if requests wait, sends the oldest on it.
    fn release(&self) {
        // SeqCst with the store in `Link::request`'s queued path (which stores, then tries
        // for a place): either that request sees this place free, or this sees it queued.
        self.permits.out.fetch_sub(1, Ordering::SeqCst);
        if self.queued.load(Ordering::SeqCst) > 0 {
            let failed = {
                let mut state = self.state();
                self.send_queued(&mut state)
            };
            fail(failed);
        }
    }

    /// Sends queued requests, oldest first, while places are free, under the lock (so a
    /// request going straight after this cannot overtake one sent here). A request the
    /// connection cannot take now (its outbox full of expired requests' frames, or gone
    /// before the owner heard; the owner's channel full during a slow connect) goes back to
    /// the front with its place given back: it waits, as it would for a place, and the next
    /// release or `Owner::lose_connection` tries again. Returns the replies of those that
    /// cannot be sent at all (the owner is gone), with why, to be answered after the lock.
    fn send_queued(&self, state: &mut State) -> Vec<(Reply, WireError)> {
        let mut failed = Vec::new();
        while let Some(cmd) = state.backlog.front() {
            // Checked under the lock, which `Waiting::drop` holds while it closes.
            if cmd.reply.is_closed() {
                state.backlog.pop_front();
                continue;
            }
            if !self.permits.try_acquire() {
                break;
            }
            let Some(cmd) = state.backlog.pop_front() else {
                unreachable!("looked at just above")
            };
            // The place is the request's now: its `Waiting` gives it back.
            let back = match state.writer.clone() {
                Some(writer) => {
                    let Cmd {
                        id,
                        epoch,
                        body,
                        reply,
                    } = cmd;
                    // Entered after the push: the reader looks it up under this lock.
                    match writer.offer(Frame::Request { id, epoch, body }) {
                        Ok(()) => {
                            state.pending.insert(id, reply);
                            None
                        }
                        Err((_, Frame::Request { id, epoch, body })) => Some(Cmd {
                            id,
                            epoch,
                            body,
                            reply,
                        }),
                        Err((_, other)) => unreachable!("offered a request, got {other:?} back"),
                    }
                }
                None => match self.cmd_tx.upgrade() {
                    Some(tx) => match tx.try_send(cmd) {
                        Ok(()) => None,
                        Err(mpsc::error::TrySendError::Full(cmd)) => Some(cmd),
                        Err(mpsc::error::TrySendError::Closed(cmd)) => {
                            failed.push((
                                cmd.reply,
                                WireError::PeerUnavailable(Unavailable::Shutdown),
                            ));
                            None
                        }
                    },
                    None => {
                        failed.push((cmd.reply, WireError::PeerUnavailable(Unavailable::Shutdown)));
                        None
                    }
                },
            };
            if let Some(cmd) = back {
                state.backlog.push_front(cmd);
                self.permits.out.fetch_sub(1, Ordering::SeqCst);
                break;
            }
        }
        if state.backlog.is_empty() && state.backlog.capacity() > 1024 {
            // A burst's queue is not kept for ever (it held up to `max_queued` entries).
            state.backlog = std::collections::VecDeque::new();
        }
        self.queued.store(state.backlog.len(), Ordering::SeqCst);
        failed
    }
}

/// Answers requests that could not be sent (after the lock: answering wakes their tasks).
fn fail(failed: Vec<(Reply, WireError)>) {
    for (reply, error) in failed {
        let _ = reply.send(Err(error));
    }
}

/// A request for the owner to send once it has a connection.
#[derive(Debug)]
struct Cmd {
    id: u64,
    epoch: u64,
    body: Bytes,
    reply: Reply,
}

impl PeerClient {
    /// Creates the handle. Connects lazily: each link on the first request made through it,
    /// spawning its owner task on that request's runtime.
    pub fn new(addr: SocketAddr, auth: AuthConfig, config: PeerConfig) -> PeerClient {
        PeerClient {
            addr,
            links: Arc::new(Links {
                auth,
                config,
                slots: (0..LINKS.load(Ordering::Relaxed))
                    .map(|_| OnceLock::new())
                    .collect(),
            }),
            seen: Arc::default(),
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The placement epoch of the peer's latest response (0 before its first): what the
    /// peer's view of the membership was when it last answered.
    pub fn peer_epoch(&self) -> u64 {
        self.seen.peer_epoch.load(Ordering::Relaxed)
    }

    /// How many responses (error frames included) the peer sent so far: one that grew since
    /// an earlier reading shows the peer reached in between, whatever asked it.
    pub fn responses(&self) -> u64 {
        self.seen.responses.load(Ordering::Relaxed)
    }

    /// How many of its connections to the peer ended so far (noticed as they end, requests
    /// or not: a peer that restarted closed them): one that grew since an earlier reading
    /// shows the peer may have lost what it knew of this node's requests.
    pub fn connections_lost(&self) -> u64 {
        self.seen.lost.load(Ordering::Relaxed)
    }

    /// How many connections to the peer are open now (INFO's `cluster_connections`).
    pub fn connections_open(&self) -> u64 {
        // `closed` first: a connection counts in `made` before it can count in `closed`.
        let closed = self.seen.closed.load(Ordering::Acquire);
        self.seen
            .made
            .load(Ordering::Acquire)
            .saturating_sub(closed)
    }

    /// Requests in flight right now on every link: sent (or waiting for the connect) and
    /// awaiting a response; those waiting for a place are [`PeerClient::queued`]. A request
    /// that timed out or was dropped no longer counts.
    pub fn in_flight(&self) -> usize {
        self.links
            .slots
            .iter()
            .filter_map(OnceLock::get)
            .map(Link::in_flight)
            .sum()
    }

    /// Requests waiting for a place on every link right now (those whose callers went may
    /// count until the queue reaches them).
    pub fn queued(&self) -> usize {
        self.links
            .slots
            .iter()
            .filter_map(OnceLock::get)
            .map(|l| l.shared.queued.load(Ordering::Relaxed))
            .sum()
    }

    /// Sends `body` (tagged with the sender's placement `epoch`) and waits for the peer's
    /// response, through this thread's link (see [`use_link`]). Sends at most
    /// `max_in_flight` at once on the link, and queues at most `max_queued` more, in order,
    /// for a place; times out after `request_timeout` (see "Timeouts" in the module docs).
    ///
    /// The request is queued on the first poll, before anything is awaited: the requests of
    /// one task go out, and are handled by the peer, in the order their futures are first
    /// polled (see "Ordering" in the crate docs). Dropping the future withdraws the request
    /// (if it was sent already, its answer is ignored) and frees its place at once.
    pub async fn request(&self, epoch: u64, body: Bytes) -> Result<Response, WireError> {
        self.request_allowing(epoch, body, Duration::ZERO).await
    }

    /// [`PeerClient::request`], waiting `extra` longer for the answer: for a small request
    /// whose effect at the peer is large (a SETBIT far out makes a value of hundreds of MB),
    /// as a large request gets its [`transfer_allowance`].
    pub async fn request_allowing(
        &self,
        epoch: u64,
        body: Bytes,
        extra: Duration,
    ) -> Result<Response, WireError> {
        // On the first poll: inside the runtime, on the thread that polls.
        let index = LINK.with(Cell::get) % self.links.slots.len();
        let link = self.links.slots[index].get_or_init(|| self.open_link());
        link.request(epoch, body, extra).await
    }

    /// A new link: its state, and its owner task spawned on the current runtime.
    fn open_link(&self) -> Link {
        let config = self.links.config.clone();
        let max_in_flight = config.max_in_flight.max(1);
        let (cmd_tx, cmd_rx) = mpsc::channel(max_in_flight);
        let shared = Arc::new(Shared {
            permits: Permits {
                out: AtomicUsize::new(0),
                max: max_in_flight,
            },
            queued: AtomicUsize::new(0),
            cmd_tx: cmd_tx.downgrade(),
            state: Mutex::new(State {
                writer: None,
                pending: PendingTable::default(),
                next_id: 1,
                backlog: std::collections::VecDeque::new(),
                arriving: None,
            }),
            seen: Arc::clone(&self.seen),
        });
        let link = Link {
            shared: Arc::clone(&shared),
            cmd_tx,
            request_timeout: config.request_timeout,
            max_body: config.max_frame.min(MAX_BODY),
            max_queued: config.max_queued,
        };
        let owner = Owner::new(self.addr, self.links.auth.clone(), config, shared, cmd_rx);
        tokio::spawn(owner.run());
        link
    }
}

impl Link {
    fn in_flight(&self) -> usize {
        self.shared.permits.out.load(Ordering::Relaxed)
    }

    async fn request(
        &self,
        epoch: u64,
        body: Bytes,
        extra: Duration,
    ) -> Result<Response, WireError> {
        let timeout = self.request_timeout + transfer_allowance(body.len()) + extra;
        if body.len() > self.max_body {
            return Err(WireError::Frame(FrameError::TooLarge {
                kind: FrameKind::Request,
                len: body.len() as u64,
                max: self.max_body,
            }));
        }
        // Straight only while no request waits for a place (a queued one of this task would
        // be overtaken); this task's own queued requests are seen here, as it queued them.
        let placed =
            self.shared.queued.load(Ordering::SeqCst) == 0 && self.shared.permits.try_acquire();
        if !placed {
            return self.request_queued(epoch, body, timeout).await;
        }
        let (reply, rx) = oneshot::channel();
        let (id, direct) = {
            let mut state = self.shared.state();
            let id = state.next_id;
            state.next_id += 1;
            match state.writer.clone() {
                Some(writer) => {
                    state.pending.insert(id, reply);
                    (id, Some((writer, Frame::Request { id, epoch, body })))
                }
                None => {
                    // Under the lock, so the owner cannot publish a writer between our look
                    // and this send and leave the command to be overtaken.
                    let cmd = Cmd {
                        id,
                        epoch,
                        body,
                        reply,
                    };
                    match self.cmd_tx.try_send(cmd) {
                        Ok(()) => (id, None),
                        Err(e) => {
                            drop(state);
                            self.shared.release();
                            return Err(match e {
                                // Only with commands of callers that gave up still in it.
                                mpsc::error::TrySendError::Full(_) => WireError::Overloaded,
                                mpsc::error::TrySendError::Closed(_) => {
                                    WireError::PeerUnavailable(Unavailable::Shutdown)
                                }
                            });
                        }
                    }
                }
            }
        };
        let waiting = Waiting {
            shared: &self.shared,
            id,
            rx,
            answered: false,
            queued: false,
            never_sent: false,
        };
        if let Some((writer, frame)) = direct {
            // After the lock: this may wake the writer task. Ordering still holds, since the
            // next request of this task starts only after this call.
            match writer.try_push(frame) {
                Ok(()) => {}
                // `waiting` takes the pending entry out as it drops.
                Err(PushError::Full) => return Err(WireError::Overloaded),
                // The writer ended, its connection lost: nothing was sent (`waiting` takes
                // the pending entry out as it drops).
                Err(PushError::Closed) => {
                    return Err(WireError::PeerUnavailable(Unavailable::ConnectionLost))
                }
            }
        }
        waiting.wait(timeout).await
    }

    /// `request` when no place is free or requests wait for one: queues the request behind
    /// them (or fails with `Overloaded` if `max_queued` wait), sends what the free places
    /// allow, and waits.
    async fn request_queued(
        &self,
        epoch: u64,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Response, WireError> {
        let (reply, rx) = oneshot::channel();
        let (id, failed) = {
            let mut state = self.shared.state();
            // Entries of callers that went are not worth a refusal.
            while state.backlog.front().is_some_and(|c| c.reply.is_closed()) {
                state.backlog.pop_front();
            }
            if state.backlog.len() >= self.max_queued {
                self.shared
                    .queued
                    .store(state.backlog.len(), Ordering::SeqCst);
                return Err(WireError::Overloaded);
            }
            let id = state.next_id;
            state.next_id += 1;
            state.backlog.push_back(Cmd {
                id,
                epoch,
                body,
                reply,
            });
            // Stored before `send_queued` tries for a place (see `Shared::release`).
            self.shared
                .queued
                .store(state.backlog.len(), Ordering::SeqCst);
            (id, self.shared.send_queued(&mut state))
        };
        let waiting = Waiting {
            shared: &self.shared,
            id,
            rx,
            answered: false,
            queued: true,
            never_sent: false,
        };
        fail(failed);
        waiting.wait(timeout).await
    }
}

/// One request from the moment it was queued until its future ends: holds its place once
/// sent and, if it ends unanswered (timeout, or the caller dropped it), takes its entry out
/// of the pending table (or leaves it to be skipped in the backlog), so neither waits for
/// an answer that may never come.
struct Waiting<'a> {
    shared: &'a Shared,
    id: u64,
    rx: oneshot::Receiver<Result<Response, WireError>>,
    answered: bool,
    /// Entered in the backlog (it holds a place only once sent from there).
    queued: bool,
    /// Withdrawn while still queued: it holds no place.
    never_sent: bool,
}

impl Waiting<'_> {
    /// Waits for the answer until `timeout` after the first poll (every request keeps its
    /// own timer, see "Timeouts" in the module docs), and, if its large answer is arriving
    /// then, for that answer's [`transfer_allowance`] more.
    async fn wait(mut self, timeout: Duration) -> Result<Response, WireError> {
        let mut result = tokio::time::timeout(timeout, &mut self.rx).await;
        if result.is_err() {
            let arriving = self.shared.state().arriving;
            if let Some((_, len)) = arriving.filter(|&(id, _)| id == self.id) {
                result = tokio::time::timeout(transfer_allowance(len), &mut self.rx).await;
            }
        }
        // Whoever answered (or dropped the reply) took the pending entry out already.
        self.answered = result.is_ok();
        match result {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(WireError::PeerUnavailable(Unavailable::Shutdown)),
            Err(_) if self.withdraw() => {
                self.never_sent = true;
                Err(WireError::Overloaded)
            }
            Err(_) => {
                self.answered = true; // withdrawn
                Err(WireError::Timeout)
            }
        }
    }

    /// Ends an unanswered request: closes its reply and takes it out of the pending table,
    /// under the lock. True if it was still queued, never sent (then it holds no place and
    /// is skipped when the queue reaches it).
    fn withdraw(&mut self) -> bool {
        let entry;
        {
            let mut state = self.shared.state();
            // Closed under the lock, where `send_queued` looks: a queued request is either
            // sent before this or skipped after.
            self.rx.close();
            if self.queued && state.backlog.front().is_some_and(|c| c.id <= self.id) {
                return true;
            }
            entry = state.pending.remove(&self.id);
        }
        drop(entry);
        false
    }
}

/// The in-flight bound: a counter (a semaphore's release took its lock on every request);
/// waiting for a place is the backlog's job, under the state lock.
#[derive(Debug)]
struct Permits {
    out: AtomicUsize,
    max: usize,
}

impl Permits {
    /// Takes a place if one is free; [`Shared::release`] gives it back.
    fn try_acquire(&self) -> bool {
        self.out
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |out| {
                (out < self.max).then_some(out + 1)
            })
            .is_ok()
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.never_sent || (!self.answered && self.withdraw()) {
            return; // never sent: no place to give back
        }
        self.shared.release();
    }
}

/// The reader or writer saw connection `generation` end.
#[derive(Debug)]
struct Lost {
    generation: u64,
    error: WireError,
}

/// The owner's hold on the current connection.
struct Conn {
    generation: u64,
    outbox: Arc<Outbox>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Both halves go at once: the writer may be stuck on a peer that stopped reading.
        self.outbox.close();
        self.reader.abort();
        self.writer.abort();
    }
}

/// The task that owns one peer's connection: connects, publishes it, and drops it.
/// Dropped (its task ended, or its runtime shut down), it fails what is in flight: a request
/// sent straight has no timer of its own and would otherwise wait for ever.
struct Owner {
    addr: SocketAddr,
    auth: AuthConfig,
    config: PeerConfig,
    limits: FrameLimits,
    shared: Arc<Shared>,
    cmd_rx: mpsc::Receiver<Cmd>,
    lost_tx: mpsc::Sender<Lost>,
    lost_rx: mpsc::Receiver<Lost>,
    conn: Option<Conn>,
    generation: u64,
    /// Until when requests fail fast with the stored error after a failed connect.
    backoff: Option<(Instant, WireError)>,
}

impl Owner {
    fn new(
        addr: SocketAddr,
        auth: AuthConfig,
        config: PeerConfig,
        shared: Arc<Shared>,
        cmd_rx: mpsc::Receiver<Cmd>,
    ) -> Self {
        // Two reports at most per connection (reader and writer); a sender that finds it
        // full waits, or is aborted with its connection.
        let (lost_tx, lost_rx) = mpsc::channel(4);
        Owner {
            addr,
            auth,
            limits: FrameLimits::with_max_body(config.max_frame.min(MAX_BODY)),
            config,
            shared,
            cmd_rx,
            lost_tx,
            lost_rx,
            conn: None,
            generation: 0,
            backoff: None,
        }
    }

    async fn run(mut self) {
        loop {
            tokio::select! {
                biased;
                // Cancel safe: mpsc::Receiver::recv. Never `None`: we hold a sender.
                Some(lost) = self.lost_rx.recv() => self.on_lost(lost),
                // Cancel safe: mpsc::Receiver::recv. `None`: every PeerClient is gone.
                cmd = self.cmd_rx.recv() => match cmd {
                    Some(cmd) => self.submit(cmd).await,
                    None => break,
                },
            }
        }
        self.lose_connection(WireError::PeerUnavailable(Unavailable::Shutdown));
    }

    /// Sends `cmd`, connecting first if needed, and with it every command queued behind it.
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
        let mut overloaded = Vec::new();
        let unsent;
        {
            let mut state = self.shared.state();
            // Published and drained in one critical section: requests queue only while no
            // writer is published, so from here on none queue and none are left behind.
            state.writer = Some(Arc::clone(&conn.outbox));
            let mut next = Some(cmd);
            while let Some(cmd) = next {
                // Checked under the lock, which `Waiting::drop` takes after closing.
                if !cmd.reply.is_closed() {
                    let id = cmd.id;
                    state.pending.insert(id, cmd.reply);
                    let frame = Frame::Request {
                        id,
                        epoch: cmd.epoch,
                        body: cmd.body,
                    };
                    match conn.outbox.try_push(frame) {
                        Ok(()) => {}
                        // Sized like the in-flight bound, so this only happens while frames
                        // of requests that already ended still wait for a stalled socket.
                        Err(PushError::Full) => {
                            overloaded.extend(state.pending.remove(&id));
                        }
                        // The writer is gone; its report is on the way and fails this too.
                        Err(PushError::Closed) => {}
                    }
                }
                next = self.cmd_rx.try_recv().ok();
            }
            // Requests that found the channel full wait in the backlog; places freed by
            // commands whose callers went are theirs now.
            unsent = self.shared.send_queued(&mut state);
        }
        for reply in overloaded {
            let _ = reply.send(Err(WireError::Overloaded));
        }
        fail(unsent);
    }

    async fn connect(&mut self) -> Result<Conn, WireError> {
        let unavailable = WireError::PeerUnavailable;
        let tcp =
            match tokio::time::timeout(self.config.connect_timeout, TcpStream::connect(self.addr))
                .await
            {
                Err(_) => return Err(unavailable(Unavailable::ConnectTimeout)),
                Ok(Err(e)) => return Err(unavailable(Unavailable::Connect(e.kind()))),
                Ok(Ok(stream)) => stream,
            };
        // Requests are small and latency-bound; the writer batches already.
        let _ = tcp.set_nodelay(true);
        let handshake_failed = |e: HandshakeError| {
            if e.is_refusal() || matches!(e, HandshakeError::Config(_)) {
                WireError::Refused(e)
            } else {
                unavailable(Unavailable::Handshake(e))
            }
        };
        // TLS (with `tls-cluster`) and the secret's handshake share one limit.
        let limit = self.config.handshake_timeout;
        let started = tokio::time::Instant::now();
        let mut stream = self
            .auth
            .secure_outgoing(tcp, self.addr.ip(), limit)
            .await
            .map_err(handshake_failed)?;
        let left = limit.saturating_sub(started.elapsed());
        let established = client_handshake(&mut stream, &self.auth, &self.addr, left)
            .await
            .map_err(handshake_failed)?;
        tracing::debug!(peer = %self.addr, node = %established.peer_node, "inter-node connection up");
        self.generation += 1;
        let generation = self.generation;
        let (rd, wr) = stream.into_split();
        let outbox = Arc::new(Outbox::new(self.config.max_in_flight));
        let lost = self.lost_tx.clone();
        let queued = Arc::clone(&outbox);
        let writer = tokio::spawn(async move {
            if run_writer(wr, &queued).await.is_err() {
                let error = WireError::PeerUnavailable(Unavailable::ConnectionLost);
                let _ = lost.send(Lost { generation, error }).await;
            }
        });
        let reader = tokio::spawn(run_reader(
            self.addr,
            generation,
            rd,
            established.read_buf,
            self.limits,
            Arc::clone(&self.shared),
            self.lost_tx.clone(),
        ));
        Ok(Conn {
            generation,
            outbox,
            reader,
            writer,
        })
    }

    fn on_lost(&mut self, lost: Lost) {
        // A report from a connection already replaced is old news.
        if self.conn.as_ref().map(|c| c.generation) == Some(lost.generation) {
            tracing::debug!(peer = %self.addr, error = %lost.error, "inter-node connection lost");
            self.lose_connection(lost.error);
        }
    }

    /// Withdraws the writer and fails every request in flight with `err`, in one critical
    /// section, so no request can be entered for the connection after the sweep; then drops
    /// the connection.
    fn lose_connection(&mut self, err: WireError) {
        let (mut failed, unsent): (Vec<(u64, Reply)>, _) = {
            let mut state = self.shared.state();
            state.writer = None;
            let failed = state.pending.drain().collect();
            // Requests that found the closed outbox wait in the backlog: with a place free
            // they go to the channel now, and this owner connects again for them.
            (failed, self.shared.send_queued(&mut state))
        };
        fail(unsent);
        self.conn = None;
        // In request order: callers woken in that order retry elsewhere in that order, so
        // a pipeline's writes that fail over keep their order.
        failed.sort_unstable_by_key(|(id, _)| *id);
        for (_, reply) in failed {
            let _ = reply.send(Err(err.clone()));
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.lose_connection(WireError::PeerUnavailable(Unavailable::Shutdown));
    }
}

/// Decodes frames off the read half and answers their requests until the connection ends,
/// then reports the end to the owner.
async fn run_reader(
    addr: SocketAddr,
    generation: u64,
    mut rd: shoal_tls::ReadHalf,
    mut buf: BytesMut,
    limits: FrameLimits,
    shared: Arc<Shared>,
    lost: mpsc::Sender<Lost>,
) {
    let _open = Open::new(&shared);
    // The arriving answer last noted in the shared state.
    let mut noted = None;
    let error = loop {
        match decode(&mut buf, &limits) {
            Ok(Some(Frame::Response { id, epoch, body })) => {
                shared.seen.peer_epoch.store(epoch, Ordering::Relaxed);
                shared.seen.responses.fetch_add(1, Ordering::Relaxed);
                answer(&shared, id, Ok(Response { epoch, body }));
                continue;
            }
            Ok(Some(Frame::Error { id, code, message })) => {
                shared.seen.responses.fetch_add(1, Ordering::Relaxed);
                answer(&shared, id, Err(WireError::Remote { code, message }));
                continue;
            }
            Ok(Some(other)) => {
                tracing::warn!(peer = %addr, kind = ?other.kind(),
                    "unexpected frame from peer; dropping the connection");
                break WireError::PeerUnavailable(Unavailable::ConnectionLost);
            }
            Ok(None) => note_arriving(&shared, &buf, &mut noted),
            Err(e) => break WireError::Frame(e),
        }
        crate::frame::prepare_read(&mut buf);
        match rd.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break WireError::PeerUnavailable(Unavailable::ConnectionLost),
            Ok(_) => {}
        }
    };
    shared.seen.lost.fetch_add(1, Ordering::Relaxed);
    let _ = lost.send(Lost { generation, error }).await;
}

/// Notes in the shared state which answer is arriving when the head of a frame of at least
/// [`ARRIVING_MIN`] bytes is in `buf` (its body not yet whole), once per frame.
fn note_arriving(shared: &Shared, buf: &[u8], noted: &mut Option<(u64, usize)>) {
    let now = buf.get(..crate::frame::HEADER_LEN).and_then(|head| {
        let id = u64::from_be_bytes(head[4..12].try_into().expect("8-byte slice"));
        let len = u32::from_be_bytes(head[12..16].try_into().expect("4-byte slice")) as usize;
        (len >= ARRIVING_MIN).then_some((id, len))
    });
    if now != *noted {
        *noted = now;
        shared.state().arriving = now;
    }
}

/// Hands `result` to request `id`'s caller, if it still waits. The reply is sent after the
/// lock: sending wakes the caller's task.
fn answer(shared: &Shared, id: u64, result: Result<Response, WireError>) {
    let reply = shared.state().pending.remove(&id);
    if let Some(reply) = reply {
        let _ = reply.send(result);
    }
}
