//! The serving side: [`serve_peer`] runs one accepted inter-node connection.
//!
//! The calling task reads and decodes requests and calls [`PeerHandler::handle`] for each,
//! synchronously and in arrival order. A [`Handled::Ready`] response goes straight to the
//! writer's outbox; a [`Handled::Later`] future runs as its own task in a `JoinSet` (so slow
//! requests of one connection wait concurrently, up to `max_in_flight`, and are aborted with
//! the connection). One writer task batches every response. A request that arrives while
//! `max_in_flight` futures are pending is answered at once with an Error frame
//! (`ErrorCode::Overloaded`), without calling the handler, instead of being queued.

use std::collections::HashMap;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shoal_net::TcpStream;
use tokio::io::AsyncReadExt;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::frame::{
    decode, peek_request_bodies, ErrorCode, Frame, FrameError, FrameKind, FrameLimits, MAX_BODY,
};
use crate::handshake::{server_handshake, AuthConfig, HandshakeError};
use crate::writer::{run_writer, Outbox};
use crate::Response;

/// What [`PeerHandler::handle`] made of one request.
#[derive(Debug)]
pub enum Handled<F> {
    /// Answered at once; [`serve_peer`] queues it for the writer in arrival order, without
    /// spawning a task.
    Ready(Response),
    /// Needs to wait (e.g. for replication acks). The handler MUST have done every state
    /// change that orders with later requests before returning this; only the waiting is
    /// deferred. Runs as its own task, bounded by `ServerConfig::max_in_flight`.
    Later(F),
}

/// Serves forwarded requests.
pub trait PeerHandler: Send + Sync + 'static {
    /// The future of a [`Handled::Later`] request. A handler that never defers can name
    /// any future type here, e.g. `std::future::Ready<Response>`.
    type Fut: Future<Output = Response> + Send + 'static;

    /// What the handler keeps per connection (`()` if nothing).
    type Conn: Send;

    /// Called once a connection's handshake succeeded, with the node name the peer
    /// authenticated as: the state [`handle`](Self::handle) gets for that connection.
    fn connect(&self, peer_node: &str) -> Self::Conn;

    /// Handles one request: `conn` is the connection's state, `epoch` the sender's
    /// placement epoch, `body` the opaque request (a RESP command, for the node).
    ///
    /// Called on the connection's task, synchronously, once per request in the order the
    /// requests arrived, never concurrently with itself for one connection (calls for
    /// different connections MAY run concurrently). Together with the client's guarantee
    /// (see the crate docs) this keeps the order of one sender's requests.
    ///
    /// MUST NOT block (no blocking I/O, no lock held for long): the connection reads nothing
    /// else meanwhile. Work that has to wait goes into [`Handled::Later`], after the state
    /// changes that order with later requests are done.
    /// MUST always produce a response: the caller waits for it until its request timeout.
    /// A `Later` future MUST tolerate being dropped at any await point: it is aborted when
    /// the connection goes away.
    /// A panic, in `handle` or in the future, is answered with an Error frame
    /// (`ErrorCode::Internal`) and the connection carries on.
    fn handle(&self, conn: &mut Self::Conn, epoch: u64, body: Bytes) -> Handled<Self::Fut>;

    /// Shown the bodies of the next requests of a connection (up to [`LOOK_AHEAD_MAX`] of
    /// those already read, in order; only when there are two or more) before
    /// [`handle`](Self::handle) gets them one by one:
    /// a chance to start loading what they will need. A hint: it MUST NOT change what
    /// handling them does. By default nothing.
    fn look_ahead(&self, bodies: &[&[u8]]) {
        let _ = bodies;
    }
}

/// Most requests [`PeerHandler::look_ahead`] is shown at once.
pub const LOOK_AHEAD_MAX: usize = 16;

/// How [`serve_peer`] behaves, per connection.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// [`Handled::Later`] futures of one connection pending at once (`Ready` answers take
    /// none). While that many are pending, new requests are answered `Overloaded` without
    /// calling the handler: once it ran, a request can no longer be refused. Keep it at
    /// least the clients' `PeerConfig::max_in_flight`, or a busy client sees refusals.
    pub max_in_flight: usize,
    /// Largest request and response body accepted.
    pub max_frame: usize,
    /// Limit on the whole handshake.
    pub handshake_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_in_flight: 1024,
            max_frame: crate::frame::DEFAULT_MAX_DATA_PAYLOAD - 8,
            handshake_timeout: Duration::from_secs(1),
        }
    }
}

/// Why a served connection ended other than by the peer closing it or by shutdown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeError {
    #[error("handshake failed: {0}")]
    Handshake(HandshakeError),
    #[error("bad frame from peer: {0}")]
    Frame(FrameError),
    #[error("unexpected {0:?} frame after the handshake")]
    UnexpectedFrame(FrameKind),
    #[error("i/o error: {0}")]
    Io(std::io::ErrorKind),
}

/// Runs one inter-node connection: the server half of the handshake, then requests until
/// the peer closes the connection (`Ok`), breaks the protocol or the socket fails (`Err`),
/// or `shutdown` is cancelled.
///
/// On shutdown it stops reading, lets the requests already in flight finish and sends their
/// responses, then closes; the caller puts a deadline on that (a handler that never
/// finishes would hold it). Otherwise, requests still in flight are aborted.
pub async fn serve_peer<H: PeerHandler>(
    stream: TcpStream,
    auth: &AuthConfig,
    handler: Arc<H>,
    config: &ServerConfig,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let peer = match stream.peer_addr() {
        Ok(addr) => addr.to_string(),
        Err(_) => "unknown".to_owned(),
    };
    let _ = stream.set_nodelay(true);
    // TLS first (with `tls-cluster`), then the secret's handshake, both within the limit.
    let limit = config.handshake_timeout;
    let handshake = async {
        let started = tokio::time::Instant::now();
        let mut stream = auth.secure_incoming(stream, limit).await?;
        let left = limit.saturating_sub(started.elapsed());
        let established = server_handshake(&mut stream, auth, &peer, left).await?;
        Ok::<_, HandshakeError>((stream, established))
    };
    let (stream, established) = tokio::select! {
        biased;
        () = shutdown.cancelled() => return Ok(()),
        r = handshake => r.map_err(ServeError::Handshake)?,
    };
    tracing::debug!(%peer, node = %established.peer_node, "inter-node peer connected");
    let mut conn = handler.connect(&established.peer_node);

    let max_in_flight = config.max_in_flight.max(1);
    let max_body = config.max_frame.min(MAX_BODY);
    let limits = FrameLimits::with_max_body(max_body);
    let (rd, wr) = stream.into_split();
    let mut rd = rd;
    // Room for every Later response plus a burst of Ready and Overloaded ones; when it is
    // full the read loop waits for the writer.
    let outbox = Arc::new(Outbox::new(max_in_flight + 64));
    let queued = Arc::clone(&outbox);
    let writer = tokio::spawn(async move { run_writer(wr, &queued).await });
    // However this task ends (aborted too), the writer then writes what is queued and closes
    // the connection.
    let _closes = CloseOnDrop(Arc::clone(&outbox));
    let permits = Arc::new(Semaphore::new(max_in_flight));
    let mut tasks = JoinSet::new();
    // Tokio task id -> request id, to answer a panicked handler's request.
    let mut request_ids = HashMap::new();
    let mut buf = established.read_buf;
    // Requests read whose bodies the handler was shown (`look_ahead`) and not yet handed.
    let mut ahead = 0;

    let end: Result<(), ServeError> = 'conn: loop {
        // Forget finished handlers before taking more: their permits are back already, so
        // without this a busy connection could pile up finished tasks between reaps.
        while let Some(done) = tasks.try_join_next_with_id() {
            reap(done, &mut request_ids, &outbox, &peer).await;
        }
        loop {
            // Every LOOK_AHEAD_MAX requests, the handler sees the next ones read.
            if ahead == 0 {
                let mut bodies: [&[u8]; LOOK_AHEAD_MAX] = [&[]; LOOK_AHEAD_MAX];
                ahead = peek_request_bodies(&buf, &mut bodies);
                if ahead > 1 {
                    let _ = catch_unwind(AssertUnwindSafe(|| {
                        handler.look_ahead(&bodies[..ahead]);
                    }));
                }
            }
            let (id, epoch, body) = match decode(&mut buf, &limits) {
                Ok(Some(Frame::Request { id, epoch, body })) => {
                    ahead = ahead.saturating_sub(1);
                    (id, epoch, body)
                }
                Ok(Some(other)) => break 'conn Err(ServeError::UnexpectedFrame(other.kind())),
                Ok(None) => break,
                Err(e) => break 'conn Err(ServeError::Frame(e)),
            };
            // Checked before the handler runs: a request it has handled cannot be refused.
            if permits.available_permits() == 0 {
                let refusal = Frame::Error {
                    id,
                    code: ErrorCode::Overloaded,
                    message: format!("more than {max_in_flight} requests in flight"),
                };
                if outbox.push(refusal).await.is_err() {
                    break 'conn Ok(()); // The writer failed: the socket is gone.
                }
                continue;
            }
            let frame =
                match catch_unwind(AssertUnwindSafe(|| handler.handle(&mut conn, epoch, body))) {
                    Ok(Handled::Ready(response)) => response_frame(id, response, max_body),
                    Ok(Handled::Later(fut)) => {
                        let permit = Arc::clone(&permits)
                            .try_acquire_owned()
                            .expect("a permit was free above and only this loop takes them");
                        let out = Arc::clone(&outbox);
                        let task = tasks.spawn(async move {
                            let frame = response_frame(id, fut.await, max_body);
                            // Ignored: the writer is gone only when the connection is.
                            let _ = out.push(frame).await;
                            drop(permit);
                        });
                        request_ids.insert(task.id(), id);
                        continue;
                    }
                    Err(_) => {
                        tracing::error!(%peer, request = id, "inter-node request handler panicked");
                        handler_failed(id)
                    }
                };
            // Waits while the writer is behind: reading stops, which pushes back on the peer.
            if outbox.push(frame).await.is_err() {
                break 'conn Ok(()); // The writer failed: the socket is gone.
            }
        }
        // A no-op while there is room; otherwise reclaims consumed space or grows (and a
        // buffer a large frame grew is made anew).
        crate::frame::prepare_read(&mut buf);
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break Ok(()),
            // Cancel safe: JoinSet::join_next_with_id.
            Some(done) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                reap(done, &mut request_ids, &outbox, &peer).await;
            }
            // Cancel safe: read_buf either read into buf or did nothing.
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(ServeError::Io(e.kind())),
            },
        }
    };

    if shutdown.is_cancelled() && end.is_ok() {
        while let Some(done) = tasks.join_next_with_id().await {
            reap(done, &mut request_ids, &outbox, &peer).await;
        }
    } else {
        tasks.shutdown().await;
    }
    outbox.close();
    // The writer ends once it has written what the handlers queued.
    let _ = writer.await;
    if let Err(e) = &end {
        tracing::debug!(%peer, error = %e, "inter-node connection ended");
    }
    end
}

/// Closes an outbox when dropped.
struct CloseOnDrop(Arc<Outbox>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Forgets a finished handler task; answers its request if the handler panicked.
async fn reap(
    done: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
    request_ids: &mut HashMap<tokio::task::Id, u64>,
    out: &Outbox,
    peer: &str,
) {
    let task = match &done {
        Ok((task, ())) => *task,
        Err(e) => e.id(),
    };
    let Some(id) = request_ids.remove(&task) else {
        return;
    };
    if done.is_err() {
        tracing::error!(%peer, request = id, "inter-node request handler panicked");
        let _ = out.push(handler_failed(id)).await;
    }
}

/// The frame answering request `id` with `response`, or an Internal error if the response
/// is too large to frame.
fn response_frame(id: u64, response: Response, max_body: usize) -> Frame {
    if response.body.len() > max_body {
        Frame::Error {
            id,
            code: ErrorCode::Internal,
            message: format!("response of {} bytes too large", response.body.len()),
        }
    } else {
        Frame::Response {
            id,
            epoch: response.epoch,
            body: response.body,
        }
    }
}

/// The frame answering request `id` whose handler panicked.
fn handler_failed(id: u64) -> Frame {
    Frame::Error {
        id,
        code: ErrorCode::Internal,
        message: "handler failed".to_owned(),
    }
}
