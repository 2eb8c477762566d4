//! The serving side: [`serve_peer`] runs one accepted inter-node connection.
//!
//! The calling task reads and decodes requests; each request runs as its own task in a
//! `JoinSet` (so requests of one connection are handled concurrently, up to
//! `max_in_flight`, and are aborted with the connection); responses go through a bounded
//! channel to one writer task that batches them. A request over the bound is answered at
//! once with an Error frame (`ErrorCode::Overloaded`) instead of being queued.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::frame::{decode, ErrorCode, Frame, FrameError, FrameKind, FrameLimits, MAX_BODY};
use crate::handshake::{server_handshake, AuthConfig, HandshakeError};
use crate::writer::run_writer;
use crate::Response;

/// Serves forwarded requests.
pub trait PeerHandler: Send + Sync + 'static {
    /// Handles one request: `epoch` is the sender's placement epoch, `body` the opaque
    /// request (a RESP command, for the node).
    ///
    /// MUST always produce a response: the caller waits for it until its request timeout.
    /// MAY run concurrently with other calls, also for the same connection.
    /// MUST tolerate being dropped at any await point: the future is aborted when the
    /// connection goes away.
    /// A panic is answered with an Error frame (`ErrorCode::Internal`).
    fn handle(&self, epoch: u64, body: Bytes) -> impl Future<Output = Response> + Send;
}

/// How [`serve_peer`] behaves, per connection.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Requests of one connection handled at once; more are answered `Overloaded`. Keep it
    /// at least the clients' `PeerConfig::max_in_flight`, or a busy client sees refusals.
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
    mut stream: TcpStream,
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
    let established = tokio::select! {
        biased;
        () = shutdown.cancelled() => return Ok(()),
        r = server_handshake(&mut stream, auth, &peer, config.handshake_timeout) => {
            r.map_err(ServeError::Handshake)?
        }
    };
    tracing::debug!(%peer, node = %established.peer_node, "inter-node peer connected");

    let max_in_flight = config.max_in_flight.max(1);
    let max_body = config.max_frame.min(MAX_BODY);
    let limits = FrameLimits::with_max_body(max_body);
    let (rd, wr) = stream.into_split();
    let mut rd = rd;
    // Room for every handler's response plus a burst of Overloaded answers.
    let (out_tx, out_rx) = mpsc::channel::<Frame>(max_in_flight + 64);
    let writer = tokio::spawn(run_writer(wr, out_rx));
    let permits = Arc::new(Semaphore::new(max_in_flight));
    let mut tasks = JoinSet::new();
    // Tokio task id -> request id, to answer a panicked handler's request.
    let mut request_ids = HashMap::new();
    let mut buf = established.read_buf;

    let end: Result<(), ServeError> = 'conn: loop {
        // Forget finished handlers before taking more: their permits are back already, so
        // without this a busy connection could pile up finished tasks between reaps.
        while let Some(done) = tasks.try_join_next_with_id() {
            reap(done, &mut request_ids, &out_tx, &peer).await;
        }
        loop {
            let (id, epoch, body) = match decode(&mut buf, &limits) {
                Ok(Some(Frame::Request { id, epoch, body })) => (id, epoch, body),
                Ok(Some(other)) => break 'conn Err(ServeError::UnexpectedFrame(other.kind())),
                Ok(None) => break,
                Err(e) => break 'conn Err(ServeError::Frame(e)),
            };
            let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
                let refusal = Frame::Error {
                    id,
                    code: ErrorCode::Overloaded,
                    message: format!("more than {max_in_flight} requests in flight"),
                };
                if out_tx.send(refusal).await.is_err() {
                    break 'conn Ok(()); // The writer failed: the socket is gone.
                }
                continue;
            };
            let handler = Arc::clone(&handler);
            let out = out_tx.clone();
            let task = tasks.spawn(async move {
                let response = handler.handle(epoch, body).await;
                let frame = if response.body.len() > max_body {
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
                };
                // Ignored: the writer is gone only when the connection is.
                let _ = out.send(frame).await;
                drop(permit);
            });
            request_ids.insert(task.id(), id);
        }
        // A no-op while there is room; otherwise reclaims consumed space or grows.
        buf.reserve(16 * 1024);
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break Ok(()),
            // Cancel safe: JoinSet::join_next_with_id.
            Some(done) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                reap(done, &mut request_ids, &out_tx, &peer).await;
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
            reap(done, &mut request_ids, &out_tx, &peer).await;
        }
    } else {
        tasks.shutdown().await;
    }
    drop(out_tx);
    // The writer ends once the handlers' senders are gone and it has written what they sent.
    let _ = writer.await;
    if let Err(e) = &end {
        tracing::debug!(%peer, error = %e, "inter-node connection ended");
    }
    end
}

/// Forgets a finished handler task; answers its request if the handler panicked.
async fn reap(
    done: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
    request_ids: &mut HashMap<tokio::task::Id, u64>,
    out: &mpsc::Sender<Frame>,
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
        let frame = Frame::Error {
            id,
            code: ErrorCode::Internal,
            message: "handler failed".to_owned(),
        };
        let _ = out.send(frame).await;
    }
}
