//! One client connection: read, parse, execute, reply — for every protocol front end.
//!
//! The loop reads into one buffer, lets the connection's [`Frontend`] parse and execute every
//! complete request in it, and writes the replies once per batch, whenever they pass
//! `FLUSH_AT`. A client that does not read its replies while it sends more (a client library
//! that writes a whole pipeline before reading: hiredis, redis-py's pipelines) is read and
//! served on while its output waits, as Redis reads on, up to the output's hard limit (then
//! it is closed, as Redis closes it): stopping to read would leave both ends waiting for the
//! other for ever. Replies still to come from
//! other nodes form a window of at most `MAX_PENDING`: while it has room, input the client
//! sent meanwhile is read and served without waiting for them; when full, the loop waits for
//! its older half.
//!
//! Output limits (`client-output-buffer-limit`, normal class): each command gets the bytes
//! left under the hard limit as its reply budget, and commands whose reply grows with the
//! data stop at it, so no reply is ever built past the limit plus one value; such a client is
//! closed, as Redis closes one over its hard limit. Unsent output above the soft limit for
//! its seconds closes the client too. The output is a queue of chunks ([`OutQueue`]): large
//! values are queued as the reply's own bytes and written with vectored writes, never copied
//! into one buffer with the rest. `timeout` closes a client that neither sends nor reads for
//! that long, also while a reply waits for it to read. The front ends that plug into this
//! loop are siblings: `resp` (Redis protocol) and `memcache`.

use std::collections::VecDeque;
use std::future::Future;
use std::io::IoSlice;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::stream::{FuturesOrdered, StreamExt};
use futures_util::FutureExt;
use shoal_resp::reply::Sink;
use shoal_tls::Stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use shoal_cluster::router::ReplyFuture;
use shoal_cluster::Server;
use shoal_engine::client::ClientInfo;
use shoal_engine::clock::now_ms;
use shoal_engine::config::ClassLimit;
use shoal_engine::engine::Engine;
use shoal_engine::Snapshot;

use crate::signals::{Signals, STOP, TRIM};
use crate::workers::Affinity;

/// Output is written once it reaches this many bytes, even mid-batch.
pub const FLUSH_AT: usize = 64 * 1024;
/// Smallest read; larger when a bulk argument in progress needs more (up to `MAX_READ`).
const MIN_READ: usize = 16 * 1024;
const MAX_READ: usize = 1024 * 1024;
/// Buffers that grew past this are released when empty, so idle clients stay small.
const KEEP_CAPACITY: usize = 64 * 1024;
/// How long closing a connection may wait to send TLS's close_notify.
const CLOSE_WAIT: Duration = Duration::from_secs(1);
/// Chunks handed to one vectored write at most.
const MAX_IOV: usize = 64;

/// Output waiting to be written: sealed chunks (encoded replies, and large values by
/// reference), then `cur`, where the next small pieces are appended.
#[derive(Default)]
pub struct OutQueue {
    chunks: VecDeque<Bytes>,
    chunk_bytes: usize,
    pub cur: BytesMut,
}

impl OutQueue {
    fn with_capacity(n: usize) -> OutQueue {
        OutQueue {
            cur: BytesMut::with_capacity(n),
            ..OutQueue::default()
        }
    }

    pub fn len(&self) -> usize {
        self.chunk_bytes + self.cur.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the output is over the hard limit `hard` (0: none) beyond its largest
    /// value: one value (shared with the store, not copied) always goes out, as a value
    /// that could be written can be read back. Redis leaves normal clients unlimited;
    /// a 300 MB value stored under the default 256 MB limit closed its reader before.
    pub fn over(&self, hard: u64) -> bool {
        hard > 0 && self.beyond_largest(hard) > hard
    }

    /// True while more requests may be served before this output is written: it is below
    /// the hard limit `hard` (0: none) beyond its largest value.
    pub fn room(&self, hard: u64) -> bool {
        hard == 0 || self.beyond_largest(hard) < hard
    }

    /// The output's length, less its largest value's once it reaches `hard` (only then are
    /// the values looked at).
    pub fn beyond_largest(&self, hard: u64) -> u64 {
        let len = self.len() as u64;
        if len < hard {
            return len;
        }
        len - self.chunks.iter().map(Bytes::len).max().unwrap_or(0) as u64
    }

    /// Queues `data` as it is, after everything appended so far.
    pub fn push(&mut self, data: Bytes) {
        self.seal();
        if !data.is_empty() {
            self.chunk_bytes += data.len();
            self.chunks.push_back(data);
        }
    }

    /// Moves `cur` into the chunk queue.
    fn seal(&mut self) {
        if !self.cur.is_empty() {
            let chunk = self.cur.split().freeze();
            self.chunk_bytes += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// Drops the first `n` bytes (they were written).
    fn advance(&mut self, mut n: usize) {
        self.chunk_bytes -= n;
        while n > 0 {
            let front = self
                .chunks
                .front_mut()
                .expect("advance within the queued bytes");
            if front.len() <= n {
                n -= front.len();
                self.chunks.pop_front();
            } else {
                front.advance(n);
                n = 0;
            }
        }
    }

    fn clear(&mut self) {
        self.chunks.clear();
        self.chunk_bytes = 0;
        self.cur.clear();
    }
}

impl Sink for OutQueue {
    fn buf(&mut self) -> &mut BytesMut {
        &mut self.cur
    }

    fn put_shared(&mut self, data: &Bytes) {
        self.push(data.clone());
    }
}

/// Why a connection ended (for the debug log; fields are read through `Debug`).
#[allow(dead_code)]
#[derive(Debug)]
pub enum Close {
    Eof,
    Quit,
    Killed,
    Shutdown,
    Idle,
    /// A protocol violation; the error reply was already written.
    Protocol(String),
    OutputLimit,
    /// A request still arriving passed `client-query-buffer-limit` (no reply, as Redis).
    QueryLimit,
    Io(std::io::Error),
    /// Not closed: the connection moves to worker `n` ([`crate::workers::Affinity`]).
    Move(usize),
}

/// Replies of one batch, in request order. Replies computed here go straight into `out`;
/// from the first reply that must wait (a forwarded request) on, everything queues behind
/// it: later local replies collect in `tail` and join the queue as one ready chunk.
#[derive(Default)]
pub struct Replies {
    /// Bytes ready to write, all before any pending reply.
    pub out: OutQueue,
    pending: FuturesOrdered<ReplyFuture>,
    tail: BytesMut,
    /// A blocked command (BLPOP, ...) is among the pending replies: while they settle the
    /// connection is watched for the client going away, which drops the wait (so it pops
    /// nothing for a client that is gone).
    blocked: bool,
    /// Output bytes left unsent by the last write (its client did not read them yet):
    /// `FLUSH_AT` counts the replies made since ([`Replies::fresh`]).
    unsent: usize,
}

/// Replies are encoded into `out`, or into `tail` behind a pending reply.
impl Sink for Replies {
    fn buf(&mut self) -> &mut BytesMut {
        if self.pending.is_empty() {
            &mut self.out.cur
        } else {
            &mut self.tail
        }
    }

    fn put_shared(&mut self, data: &Bytes) {
        if self.pending.is_empty() {
            self.out.push(data.clone());
        } else {
            self.tail.extend_from_slice(data);
        }
    }
}

/// Replies up to this size are copied into the output rather than queued by reference.
const COPY_REPLY: usize = 512;

/// Replies waiting per connection before the connection stops reading to drain them (the
/// older half of them: see the I/O loop). A window of this size takes a whole 512-command
/// pipeline through a cluster node in one trip to the other nodes; each link to a peer
/// holds `shoal_cluster::PEER_MAX_IN_FLIGHT` (32 such windows).
pub const MAX_PENDING: usize = 512;

impl Replies {
    /// Queues a reply that is still to come.
    pub fn push_later(&mut self, reply: ReplyFuture) {
        self.seal();
        self.pending.push_back(reply);
    }

    /// Queues the reply of a blocked command (see `blocked`).
    pub fn push_blocked(&mut self, reply: ReplyFuture) {
        self.blocked = true;
        self.push_later(reply);
    }

    /// Moves `tail` into the queue, keeping it behind the pending replies.
    fn seal(&mut self) {
        if !self.tail.is_empty() {
            let chunk = self.tail.split().freeze();
            self.pending.push_back(Box::pin(async move { chunk }));
        }
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Something (a reply or a message) waits behind the pending replies.
    pub fn has_tail(&self) -> bool {
        !self.tail.is_empty()
    }

    /// Gives back the empty buffers (an idle connection's: Redis keeps 0 bytes of query
    /// buffer for an idle client, memcached returns its read buffer to the thread's pool).
    fn trim(&mut self) {
        if self.out.is_empty() {
            self.out = OutQueue::default();
        }
        if self.tail.is_empty() {
            self.tail = BytesMut::new();
        }
    }

    /// Publishes the output's state for CLIENT LIST (`obl`, `oll`, `omem`).
    fn publish(&self, info: &ClientInfo) {
        let out = &self.out;
        info.buffers.set_output(
            out.cur.len(),
            out.chunks.len() + self.pending.len() + usize::from(!self.tail.is_empty()),
            out.chunk_bytes + self.tail.len(),
        );
    }

    /// Bytes held, ready or not.
    pub fn len(&self) -> usize {
        self.out.len() + self.tail.len()
    }

    /// Bytes held that count against the hard output limit `hard`: all but the largest
    /// value once the output reaches it ([`OutQueue::over`]). What the next reply may take.
    pub fn held(&self, hard: u64) -> usize {
        self.out.beyond_largest(hard) as usize + self.tail.len()
    }

    /// Bytes of replies made since the output was last written (what `FLUSH_AT` bounds):
    /// output a client has not read yet does not stop the next batch.
    pub fn fresh(&self) -> usize {
        self.len().saturating_sub(self.unsent)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.pending.is_empty()
    }

    /// Waits for the pending replies until at most `keep` of them are left, appending each
    /// to `out` in order; stops (false) once `out` holds more than `hard` bytes (0 = no
    /// limit), dropping the rest.
    async fn settle(&mut self, hard: u64, keep: usize) -> bool {
        self.seal();
        while self.pending.len() > keep {
            let Some(bytes) = self.pending.next().await else {
                break;
            };
            // A small reply is copied, so a batch of forwarded replies goes out as one
            // buffer rather than as many small pieces of one vectored write.
            if bytes.len() <= COPY_REPLY {
                self.out.cur.extend_from_slice(&bytes);
            } else {
                self.out.push(bytes);
            }
            if self.out.over(hard) {
                self.pending = FuturesOrdered::new();
                return false;
            }
        }
        if self.pending.is_empty() {
            self.blocked = false;
        }
        true
    }
}

/// Where a front end stopped processing its input.
pub enum Step {
    /// No complete request left: read more.
    NeedInput,
    /// The output reached `FLUSH_AT` (or `MAX_PENDING` replies wait): write it, then call
    /// `process` again.
    Flush,
    /// Write what is in the output, then close.
    Close(Close),
}

/// A protocol front end: parses and executes requests, encodes replies. The I/O is shared.
pub trait Frontend: Send {
    /// Parses and executes complete requests at the front of `input`, adding replies to
    /// `replies` in order, until one of the `Step`s; returns how many requests ran. `now` is
    /// Unix ms, one reading per batch.
    fn process(
        &mut self,
        node: &Arc<Server>,
        input: &mut BytesMut,
        replies: &mut Replies,
        now: u64,
    ) -> (u64, Step);

    /// Bytes the request in progress still needs (0 when unknown), to size the next read.
    fn bytes_wanted(&self) -> usize;

    /// Output the client did not ask for (MONITOR lines, Pub/Sub messages), encoded: the I/O
    /// loop waits on it beside the socket while it waits for input. Pending for ever when
    /// there is none to come; `Err` when the feed fell too far behind (the client is closed).
    /// Cancel safe: nothing is taken unless it is returned.
    fn next_push(&mut self) -> impl std::future::Future<Output = Result<Bytes, Close>> + Send {
        std::future::pending()
    }

    /// True when what `next_push` gives may be written between replies (RESP3 pushes).
    fn pushes_out_of_band(&self) -> bool {
        false
    }

    /// True while the client subscribes (Pub/Sub): the `pubsub` class of
    /// `client-output-buffer-limit` applies, and `timeout` does not (as in Redis).
    fn subscriber(&self) -> bool {
        false
    }

    /// True when the connection's state may move to another worker between batches: it
    /// waits for nothing (no held request, no feed it is subscribed to).
    fn movable(&self) -> bool {
        false
    }
}

/// A connection leaving its worker for worker `to` (see [`crate::workers::Affinity`]), with
/// what it had read and its protocol state; [`run_connection`] continues it there.
pub struct Moving<F> {
    pub to: usize,
    /// TCP or a Unix socket (a TLS session does not move).
    pub stream: Stream,
    pub carried: Carried,
    pub frontend: F,
}

/// What a connection's I/O loop keeps from one worker to the next (new for a new connection).
#[derive(Default)]
pub struct Carried {
    /// What was read and not served yet (at most part of a request).
    pub input: BytesMut,
    /// What decides the moves: its cooldown holds on the next worker too.
    pub affinity: Affinity,
}

/// Serves one connection with `frontend` until it closes, or until it should move to another
/// worker: then it returns what the move takes. `stop` is a child of the node's shutdown
/// token, that CLIENT KILL also cancels (see `ClientInfo::kill`); `signals` carry the same
/// stop (the node's shutdown raises it in every connection) and the cron's ask to give the
/// buffers back, and are what the connection watches.
///
/// Not an `async fn`: its parameters would be kept twice in the future (as arguments and as
/// the locals they move to), the front end among them, for the connection's whole life; the
/// `async move` block uses them in place.
#[allow(clippy::manual_async_fn)]
pub fn run_connection<F: Frontend>(
    node: Arc<Server>,
    mut stream: Stream,
    mut carried: Carried,
    info: Arc<ClientInfo>,
    stop: CancellationToken,
    signals: Arc<Signals>,
    mut frontend: F,
) -> impl Future<Output = Option<Moving<F>>> + Send {
    async move {
        if let Some(tcp) = stream.tcp() {
            let _ = tcp.set_nodelay(true);
        }
        let id = info.id;
        let shared = info.clone();
        let reason = serve(
            &node,
            &mut stream,
            &mut carried,
            info,
            &stop,
            &signals,
            &mut frontend,
        )
        .await;
        match (reason, stream) {
            (Close::Move(to), stream @ (Stream::Plain(_) | Stream::Unix(_))) => Some(Moving {
                to,
                stream,
                carried,
                frontend,
            }),
            (reason, _) => {
                // Before the socket closes (at the end of this match), so that its
                // descriptor, reused later, is never taken for this client's.
                shared.closing.store(true, Ordering::Relaxed);
                if matches!(reason, Close::Idle) {
                    node.engine
                        .mc_stats
                        .idle_kicks
                        .fetch_add(1, Ordering::Relaxed);
                }
                tracing::debug!(client = id, ?reason, "connection closed");
                None
            }
        }
    }
}

/// Adds what the client's buffers hold now, as just published, to the clients' memory; past
/// `maxmemory-clients` (`limit`, 0 = none) the largest clients are closed, as Redis evicts
/// them (this one may be among them: its loop then finds itself killed, as by CLIENT KILL).
fn account(node: &Server, info: &ClientInfo, limit: u64) {
    if node.engine.clients.account(info, limit) {
        node.engine.clients.evict_over(limit);
    }
}

/// Why the connection was told to stop.
fn stopped(info: &ClientInfo) -> Close {
    if info.killed.load(Ordering::Relaxed) {
        Close::Killed
    } else {
        Close::Shutdown
    }
}

/// When a client that does not read its replies is given up on.
#[derive(Clone, Copy)]
struct WritePolicy {
    /// `timeout`: no byte written for this long closes the client.
    idle: Option<Duration>,
    /// The normal class's limits (the hard one is checked before writing).
    limit: ClassLimit,
}

impl WritePolicy {
    /// The next moment the client must be closed if the write is still stuck, and why.
    fn deadline(
        &self,
        last_progress: Instant,
        over_soft_since: Option<Instant>,
    ) -> Option<(Instant, Close)> {
        // A deadline past what an Instant can hold is no deadline.
        let idle = self
            .idle
            .and_then(|d| last_progress.checked_add(d))
            .map(|t| (t, Close::Idle));
        let soft = over_soft_since
            .and_then(|t| t.checked_add(Duration::from_secs(self.limit.soft_seconds)))
            .map(|t| (t, Close::OutputLimit));
        match (idle, soft) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }
}

/// What [`write_out`] did.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    /// Every byte went out.
    All,
    /// The rest waits for the client to read, and there is input to serve meanwhile: the
    /// input held ([`Meanwhile::Serve`]), or what the client sent since
    /// ([`Meanwhile::Read`]). The output left is kept, to go after.
    MoreInput,
}

/// What a connection does while its output waits for the client to read ([`write_out`]).
enum Meanwhile<'a> {
    /// Nothing: it closes after this output, or replies from other nodes are still due.
    Wait,
    /// Read what the client sends into its input while it holds less than the bound: none
    /// when the input holds no whole request (only the parser's request limits bound it
    /// then), `MAX_READ` when it may.
    Read(&'a mut BytesMut, usize),
    /// Serve the input it holds (the batch stopped at `FLUSH_AT` with requests left).
    Serve,
}

/// A client's wait to read its output, kept across [`write_out`]'s returns for more input.
#[derive(Default)]
struct Stalled {
    /// The last write that took bytes, the socket turning writable or input arriving: read
    /// from the clock only when a wait starts (`None`: just now).
    last_progress: Option<Instant>,
    /// Since when the unsent output has been above the soft limit.
    over_soft_since: Option<Instant>,
}

/// The connection [`write_out`] writes for: its node (the byte counters), its entry in the
/// registry (CLIENT KILL) and its signals (a stop).
#[derive(Clone, Copy)]
struct Conn<'a> {
    node: &'a Server,
    info: &'a ClientInfo,
    signals: &'a Signals,
}

/// Writes `out` and empties it, with vectored writes straight from its chunks. Tries a plain
/// non-blocking write first (the common case: the socket has room); only a client that is
/// slow to read makes it wait, and then a CLIENT KILL interrupts the wait while a shutdown
/// does not: replies already computed are delivered (the listener's shutdown deadline bounds
/// how long a slow reader can hold the exit). `timeout` and the soft output limit close a
/// client whose reading stalls. Over TLS, the bytes the session kept back are sent too.
/// While the output is under the hard limit, input is served `meanwhile` (see [`Meanwhile`]):
/// the write then returns ([`Written::MoreInput`], the rest of `out` kept), as Redis reads
/// and runs a client's commands while its replies queue.
async fn write_out(
    stream: &mut Stream,
    out: &mut OutQueue,
    conn: Conn<'_>,
    policy: WritePolicy,
    stalled: &mut Stalled,
    meanwhile: Meanwhile<'_>,
) -> Result<Written, Close> {
    let Conn {
        node,
        info,
        signals,
    } = conn;
    let (serve, mut input, bound) = match meanwhile {
        Meanwhile::Wait => (false, None, 0),
        Meanwhile::Read(input, bound) => (false, Some(input), bound),
        Meanwhile::Serve => (true, None, 0),
    };
    if out.is_empty() {
        *stalled = Stalled::default();
        return Ok(Written::All);
    }
    out.seal();
    let mut watch_stop = !signals.is_raised(STOP);
    loop {
        if out.is_empty() {
            // Plain TCP holds nothing back; TLS may still hold encrypted records.
            match stream.try_flush() {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return Err(Close::Io(e)),
            }
        } else {
            let mut slices = [IoSlice::new(&[]); MAX_IOV];
            let n = out.chunks.len().min(MAX_IOV);
            for (slice, chunk) in slices.iter_mut().zip(&out.chunks) {
                *slice = IoSlice::new(chunk);
            }
            match stream.try_write_vectored(&slices[..n]) {
                Ok(0) => return Err(Close::Io(std::io::ErrorKind::WriteZero.into())),
                Ok(written) => {
                    out.advance(written);
                    node.engine.stats.total_net_output_bytes.add(written as u64);
                    stalled.last_progress = None;
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(Close::Io(e)),
            }
        }
        let soft = policy.limit.soft;
        if soft > 0 && out.len() as u64 > soft {
            stalled.over_soft_since.get_or_insert_with(Instant::now);
        } else {
            stalled.over_soft_since = None;
        }
        // Killed while this batch ran: its unsent replies are dropped, not waited for.
        if info.killed.load(Ordering::Relaxed) {
            return Err(Close::Killed);
        }
        let since = *stalled.last_progress.get_or_insert_with(Instant::now);
        let deadline = policy.deadline(since, stalled.over_soft_since);
        let until = deadline.as_ref().map(|d| d.0);
        let hard = policy.limit.hard;
        let room = out.room(hard);
        if serve && room {
            return Ok(Written::MoreInput);
        }
        let mut ahead = input.as_deref_mut().filter(|i| room && i.len() < bound);
        if let Some(i) = ahead.as_deref_mut() {
            i.reserve(MIN_READ);
        }
        // Every arm is cancel safe: `writable_or_read` reads nothing unless it returns, and
        // `sleep_until` only waits.
        tokio::select! {
            biased;
            // The socket took bytes: the client reads (over TLS this is the only sign of
            // progress while the session's records drain); or the client sent more.
            r = stream.writable_or_read(ahead) => match r.map_err(Close::Io)? {
                None => stalled.last_progress = None,
                // The input ended: the output still goes, then the next read finds the end.
                Some(0) => input = None,
                Some(n) => {
                    node.engine.stats.total_net_input_bytes.add(n as u64);
                    stalled.last_progress = None;
                    return Ok(Written::MoreInput);
                }
            },
            _ = signals.raised(STOP), if watch_stop => {
                if info.killed.load(Ordering::Relaxed) {
                    return Err(Close::Killed);
                }
                watch_stop = false;
            }
            _ = tokio::time::sleep_until(until.unwrap_or_else(Instant::now)), if until.is_some() => {
                let why = deadline.map_or(Close::Idle, |d| d.1);
                tracing::warn!(client = info.id, unsent = out.len(), reason = ?why, "closing a client that does not read its replies");
                return Err(why);
            }
        }
    }
    out.clear();
    if out.cur.capacity() > KEEP_CAPACITY {
        out.cur = BytesMut::with_capacity(MIN_READ);
    }
    *stalled = Stalled::default();
    Ok(Written::All)
}

async fn serve<F: Frontend>(
    node: &Arc<Server>,
    stream: &mut Stream,
    carried: &mut Carried,
    info: Arc<ClientInfo>,
    token: &CancellationToken,
    signals: &Signals,
    frontend: &mut F,
) -> Close {
    let Carried { input, affinity } = carried;
    if input.capacity() == 0 {
        *input = BytesMut::with_capacity(MIN_READ);
    }
    let workers = crate::workers::count().unwrap_or(1);
    let movable_stream = matches!(stream, Stream::Plain(_) | Stream::Unix(_));
    let mut replies = Replies {
        out: OutQueue::with_capacity(MIN_READ),
        ..Replies::default()
    };
    // Raises wake this task from now on. A shutdown that came before this connection was in
    // the registry to be told (or before it moved here) shows on the token.
    signals.watch().await;
    if token.is_cancelled() {
        return stopped(&info);
    }
    let idle = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(idle);
    // The buffers were given back: the next read takes what arrived into a small buffer.
    let mut trimmed = false;
    let mut settings = Snapshot::default();
    let mut stalled = Stalled::default();
    let conn = Conn {
        node,
        info: &info,
        signals,
    };
    loop {
        // Answer every complete request already read, with one clock reading per batch.
        let mut now = now_ms();
        let (normal, pubsub, timeout, clients_limit) = *settings.get(&node.engine, |s| {
            let limits = &s.client_output_buffer_limit;
            let clients = Engine::client_memory_limit_of(s);
            (limits.normal, limits.pubsub, s.timeout, clients)
        });
        let (limit, idle_secs) = match frontend.subscriber() {
            true => (pubsub, 0),
            false => (normal, timeout),
        };
        let policy = WritePolicy {
            idle: (idle_secs > 0).then(|| Duration::from_secs(idle_secs)),
            limit,
        };
        let mut batch = 0;
        // The end of the input, when a read ahead found it (see below).
        let mut ended = None;
        let closing = loop {
            // Evicted (`maxmemory-clients`) or killed while its batch ran: the requests it
            // holds are not served, as Redis stops before a client's next command.
            if info.killed.load(Ordering::Relaxed) {
                return Close::Killed;
            }
            // The shard hand-overs this batch meets in the store, and only them (other tasks of
            // this thread ran since the last batch).
            shoal_store::take_contention();
            let (processed, mut step) = frontend.process(node, input, &mut replies, now);
            // A large request that ran gives its buffer back before its reply goes: the
            // memory is free for the next command of any client (its eviction reads it).
            if input.is_empty() && input.capacity() > KEEP_CAPACITY {
                *input = BytesMut::with_capacity(MIN_READ);
            }
            affinity.observe(processed, shoal_store::take_contention());
            batch += processed;
            if processed > 0 {
                node.engine.stats.total_commands_processed.add(processed);
                info.last_interaction_ms.store(now, Ordering::Relaxed);
            }
            // Forwarded requests are on their way: requests the client sent since join them
            // (read if they are here already, without waiting) rather than waiting a round
            // trip for these replies first, so a deep pipeline keeps the other nodes busy
            // instead of crossing to them once per read. Bounded as the batch is: by
            // `MAX_PENDING` replies (the front end stops there) and `MAX_READ` of input.
            if matches!(step, Step::NeedInput)
                && replies.pending() > 0
                && !replies.blocked
                && input.len() < MAX_READ
                && !signals.is_raised(STOP)
            {
                input.reserve(MIN_READ);
                match stream.read_buf(input).now_or_never() {
                    Some(Ok(0)) => ended = Some(Close::Eof),
                    Some(Ok(n)) => {
                        node.engine.stats.total_net_input_bytes.add(n as u64);
                        continue;
                    }
                    // The connection ends once the replies owed are written (as a read
                    // in the loop below would have found it).
                    Some(Err(e)) => ended = Some(Close::Io(e)),
                    None => {}
                }
            }
            if replies.pending() > 0 {
                // While it waits (a blocked command, replies from other nodes), the input
                // left is what Redis's trimmed query buffer would hold.
                info.buffers.set_input(input.len(), input.capacity());
                // Forwarded requests: wait for their replies (each is bounded by the
                // inter-node timeout), unless CLIENT KILL comes first. When the front end
                // stopped at a full window (`MAX_PENDING`), only for the older half: the
                // input left is served while the newer half is still on its way, so a deep
                // pipeline does not stop and wait once per window.
                // `settle` is cancel safe: a reply it took is in `out`, the rest still queued.
                let keep = match step {
                    Step::Flush if replies.pending() >= MAX_PENDING && !replies.blocked => {
                        MAX_PENDING / 2
                    }
                    _ => 0,
                };
                let settled = if signals.is_raised(STOP) {
                    if info.killed.load(Ordering::Relaxed) {
                        return Close::Killed;
                    }
                    // Shutting down: a blocked client is closed at once (as below).
                    if replies.blocked {
                        return stopped(&info);
                    }
                    replies.settle(limit.hard, 0).await
                } else {
                    loop {
                        // While a command is blocked the input is read ahead (a bounded
                        // amount, served once the replies are in), so a client that goes
                        // away is noticed and its wait dropped.
                        let watch = replies.blocked && input.len() < MAX_READ;
                        tokio::select! {
                            biased;
                            settled = replies.settle(limit.hard, keep) => break settled,
                            _ = signals.raised(STOP) => {
                                if info.killed.load(Ordering::Relaxed) {
                                    return Close::Killed;
                                }
                                // Shutting down: a blocked client is closed at once, as
                                // Redis closes its blocked clients.
                                if replies.blocked {
                                    return stopped(&info);
                                }
                                break replies.settle(limit.hard, 0).await;
                            }
                            // Pub/Sub messages go out while a command waits, ahead of its
                            // reply, as in Redis: only RESP3 pushes (out of band), and only
                            // while nothing is queued behind the pending replies (a message
                            // there must not be overtaken).
                            pushed = frontend.next_push(), if frontend.pushes_out_of_band() && !replies.has_tail() => match pushed {
                                Ok(bytes) => {
                                    replies.out.push(bytes);
                                    let written = write_out(
                                        stream,
                                        &mut replies.out,
                                        conn,
                                        policy,
                                        &mut stalled,
                                        Meanwhile::Wait,
                                    );
                                    if let Err(c) = written.await {
                                        return c;
                                    }
                                }
                                Err(why) => return why,
                            },
                            r = stream.read_buf(input), if watch => match r {
                                Ok(0) => return Close::Eof,
                                Ok(n) => {
                                    node.engine
                                        .stats
                                        .total_net_input_bytes
                                        .add(n as u64);
                                    info.buffers.set_input(input.len(), input.capacity());
                                    account(node, &info, clients_limit);
                                    // What was read ahead is served next, without waiting
                                    // for more input.
                                    if matches!(step, Step::NeedInput) {
                                        step = Step::Flush;
                                    }
                                }
                                Err(e) => return Close::Io(e),
                            },
                        }
                    }
                };
                if !settled {
                    tracing::warn!(
                        client = info.id,
                        "forwarded replies passed the client output buffer limit, closing"
                    );
                    return Close::OutputLimit;
                }
                // Waiting may have taken a while: later commands need the time of now.
                now = now_ms();
                if keep > 0 {
                    // The newer half is still on its way: serve the input left before
                    // writing. Nothing is written while replies are pending (a write may
                    // wait on a client that does not read, and pending requests hold their
                    // places on the links to other nodes until they are polled): the
                    // output goes once every reply is in, and the front end stops at
                    // `FLUSH_AT` of it, so it stays bounded.
                    continue;
                }
            }
            replies.publish(&info);
            let progressed = processed > 0 || replies.fresh() > 0;
            let out = &mut replies.out;
            if out.over(limit.hard) {
                tracing::warn!(
                    client = info.id,
                    bytes = out.len(),
                    "client output buffer limit reached, closing"
                );
                out.clear();
                break Some(Close::OutputLimit);
            }
            // (After the output limit, which takes precedence, as in Redis: a client closed
            // for it is not evicted as well.)
            account(node, &info, clients_limit);
            match step {
                Step::Flush => {
                    // Serving on while a batch makes progress (requests served, or a paused
                    // multi-get's values); one that made none would only stop again: it reads
                    // instead, up to `MAX_READ` (the input may hold whole requests).
                    let meanwhile = if input.is_empty() {
                        Meanwhile::Read(input, usize::MAX)
                    } else if progressed {
                        Meanwhile::Serve
                    } else {
                        Meanwhile::Read(input, MAX_READ)
                    };
                    let written = write_out(stream, out, conn, policy, &mut stalled, meanwhile);
                    // With more input, the batch goes on; the output left waits for it.
                    match written.await {
                        Ok(Written::All) => replies.unsent = 0,
                        Ok(Written::MoreInput) => replies.unsent = replies.out.len(),
                        Err(c) => return c,
                    }
                    // The write may have waited (a slow reader, a process stopped meanwhile:
                    // the fence reads the pause from this time).
                    now = now_ms();
                }
                Step::NeedInput => break ended,
                Step::Close(c) => break Some(c),
            }
        };
        // A pipelined batch's replies go out after the other connections this worker found
        // ready have run theirs, as Redis writes all replies at the end of an event-loop turn:
        // a client reading many connections (one redis-benchmark, a pooled application) is
        // then woken once for all of them instead of once per connection (at pipeline 16,
        // about 30 % less CPU per request with one worker; see the README). One command
        // alone, or a connection alone on its worker, is answered at once: yielding costs
        // the worker an extra poll of its sockets, which shows at a few unpipelined clients.
        if batch > 1
            && closing.is_none()
            && !replies.out.is_empty()
            && crate::workers::shared(info.io_thread.load(Ordering::Relaxed))
        {
            tokio::task::yield_now().await;
        }
        // What is left of the input is in CLIENT LIST before the replies go: a client that
        // has them and asks finds its commands gone from `qbuf`, as in Redis.
        info.buffers.set_input(input.len(), input.capacity());
        let written = write_out(
            stream,
            &mut replies.out,
            conn,
            policy,
            &mut stalled,
            // The input holds no whole request here (the batch wanted more).
            match closing {
                None => Meanwhile::Read(input, usize::MAX),
                Some(_) => Meanwhile::Wait,
            },
        );
        match written.await {
            Ok(Written::All) => replies.unsent = 0,
            // The client sent more while its output waited: served before the rest goes.
            Ok(Written::MoreInput) => {
                replies.unsent = replies.out.len();
                info.buffers
                    .rbp
                    .store(input.len() as u64, Ordering::Relaxed);
                continue;
            }
            Err(c) => return c,
        }
        replies.publish(&info);
        account(node, &info, clients_limit);
        if let Some(c) = closing {
            // TLS sends close_notify here, which a client that stopped reading never takes:
            // bounded, so the slot is freed anyway.
            let _ = tokio::time::timeout(CLOSE_WAIT, stream.shutdown()).await;
            return c;
        }
        if signals.is_raised(STOP) {
            return stopped(&info);
        }

        // Read more.
        if input.is_empty() && input.capacity() > KEEP_CAPACITY {
            *input = BytesMut::with_capacity(MIN_READ);
        }
        // Everything asked so far is answered: the connection may move to the worker of the
        // key it keeps waiting for.
        let worker = info.io_thread.load(Ordering::Relaxed);
        if let Some(to) = affinity.decide(now, worker, workers) {
            if movable_stream && frontend.movable() {
                tracing::debug!(
                    client = info.id,
                    from = worker,
                    to,
                    "moving a connection to the worker of its hot key or transactions"
                );
                return Close::Move(to);
            }
        }
        let wanted = frontend.bytes_wanted();
        if !trimmed {
            input.reserve(wanted.clamp(MIN_READ, MAX_READ));
        }
        info.buffers.set_input(input.len(), input.capacity());
        info.buffers.wanted.store(wanted as u64, Ordering::Relaxed);
        account(node, &info, clients_limit);
        info.buffers
            .awaiting
            .store(wanted > 0 || !input.is_empty(), Ordering::Relaxed);
        // A subscriber (maybe since this batch) is not closed for being idle, as in Redis.
        let idle_at = (idle_secs > 0 && !frontend.subscriber())
            .then(|| Instant::now().checked_add(Duration::from_secs(idle_secs)))
            .flatten();
        if let Some(at) = idle_at {
            idle.as_mut().reset(at);
        }
        // All arms are cancel safe: read_buf reads nothing if another arm wins. The stop
        // signal goes first: a client killed while its next request was arriving must not
        // be served it (as the check above, for a stop that came earlier). A trim waits on
        // with the same idle deadline (`timeout` counts from the last interaction).
        let n = loop {
            tokio::select! {
                biased;
                _ = signals.raised(STOP) => return stopped(&info),
                r = stream.read_buf(input) => match r {
                    Ok(0) => return Close::Eof,
                    Ok(n) => break Some(n),
                    Err(e) => return Close::Io(e),
                },
                pushed = frontend.next_push() => match pushed {
                    Ok(bytes) => {
                        replies.out.push(bytes);
                        break None;
                    }
                    Err(why) => return why,
                },
                _ = idle.as_mut(), if idle_at.is_some() => return Close::Idle,
                // Idle for a while (`shoal_engine::client::TRIM_IDLE_MS`): give back the
                // buffers, as Redis frees an idle client's query buffer.
                _ = signals.raised(TRIM) => {
                    signals.take(TRIM);
                    if input.is_empty() {
                        *input = BytesMut::new();
                        trimmed = true;
                        info.buffers.set_input(0, 0);
                    }
                    replies.trim();
                    account(node, &info, clients_limit);
                }
            }
        };
        // A message to send (Pub/Sub, MONITOR): written by the loop's next turn.
        let Some(n) = n else { continue };
        if trimmed {
            // Active again: the next reads and replies get their usual room.
            trimmed = false;
            replies.out.cur.reserve(MIN_READ);
        }
        node.engine.stats.total_net_input_bytes.add(n as u64);
        // While the batch runs, qbuf counts all of it, as Redis's query buffer holds the
        // commands it is running (CLIENT LIST shows its own command's bytes there).
        info.buffers.set_input(input.len(), input.capacity());
        info.buffers
            .rbp
            .store(input.len() as u64, Ordering::Relaxed);
    }
}
