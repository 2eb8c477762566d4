//! One client connection: read, parse, execute, reply.
//!
//! The loop reads into one buffer, parses every complete request in it, executes them in
//! order, encodes the replies into one output buffer and writes it once per batch. Back
//! pressure: while a write is pending nothing more is read, and the output buffer is flushed
//! whenever it passes `FLUSH_AT`, so a client that never reads holds at most one batch of
//! replies. A single reply larger than `client-output-buffer-limit` closes the connection.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use shoal_resp::{ParseError, Reply, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::client::ClientInfo;
use crate::cmd::{self, ReplyMode, Session};
use crate::node::{now_ms, Node};

/// Output is written once it reaches this many bytes, even mid-batch.
const FLUSH_AT: usize = 64 * 1024;
/// Smallest read; larger when a bulk argument in progress needs more (up to `MAX_READ`).
const MIN_READ: usize = 16 * 1024;
const MAX_READ: usize = 1024 * 1024;
/// Buffers that grew past this are released when empty, so idle clients stay small.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Why a connection ended (for the debug log; fields are read through `Debug`).
#[allow(dead_code)]
#[derive(Debug)]
enum Close {
    Eof,
    Quit,
    Killed,
    Shutdown,
    Idle,
    Protocol(ParseError),
    OutputLimit,
    Io(std::io::Error),
}

pub async fn run_connection(node: Arc<Node>, stream: TcpStream, info: Arc<ClientInfo>) {
    let _ = stream.set_nodelay(true);
    let id = info.id;
    let reason = serve(&node, stream, info).await;
    tracing::debug!(client = id, ?reason, "connection closed");
}

/// Why the stop token fired.
fn stopped(info: &ClientInfo) -> Close {
    if info.killed.load(Ordering::Relaxed) {
        Close::Killed
    } else {
        Close::Shutdown
    }
}

/// Writes `out` and clears it. Tries a plain non-blocking write first (the common case: the
/// socket has room); only a client that is slow to read makes it wait, and then a CLIENT KILL
/// interrupts the wait while a shutdown does not: replies already computed are delivered
/// (the listener's shutdown deadline bounds how long a slow reader can hold the exit).
async fn write_out(
    stream: &mut TcpStream,
    out: &mut BytesMut,
    node: &Node,
    info: &ClientInfo,
    mut stop: Pin<&mut WaitForCancellationFutureOwned>,
) -> Result<(), Close> {
    if out.is_empty() {
        return Ok(());
    }
    let mut pos = match stream.try_write(out) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
        Err(e) => return Err(Close::Io(e)),
    };
    let mut watch_stop = !info.stop.is_cancelled();
    while pos < out.len() {
        // `write` is cancel safe: if `stop` wins, nothing of this call was written.
        let written = if watch_stop {
            tokio::select! {
                biased;
                r = stream.write(&out[pos..]) => r,
                _ = stop.as_mut() => {
                    if info.killed.load(Ordering::Relaxed) {
                        return Err(Close::Killed);
                    }
                    watch_stop = false;
                    continue;
                }
            }
        } else {
            stream.write(&out[pos..]).await
        };
        match written {
            Ok(0) => return Err(Close::Io(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => pos += n,
            Err(e) => return Err(Close::Io(e)),
        }
    }
    node.stats
        .total_net_output_bytes
        .fetch_add(out.len() as u64, Ordering::Relaxed);
    out.clear();
    if out.capacity() > KEEP_CAPACITY {
        *out = BytesMut::with_capacity(MIN_READ);
    }
    Ok(())
}

async fn serve(node: &Node, mut stream: TcpStream, info: Arc<ClientInfo>) -> Close {
    let mut session = Session::new(info.clone(), !node.requires_auth());
    let mut parser = RequestParser::new();
    let mut input = BytesMut::with_capacity(MIN_READ);
    let mut out = BytesMut::with_capacity(MIN_READ);
    let mut skip_pending = false;
    // Registered once per connection: polling it is cheaper than a new future per read.
    let stop = info.stop.clone().cancelled_owned();
    tokio::pin!(stop);
    let idle = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(idle);
    loop {
        // Answer every complete request already read, with one clock reading per batch.
        let now = now_ms();
        let limits = node.limits();
        let (out_limit, idle_secs) =
            node.with_settings(|s| (s.client_output_buffer_limit.0, s.timeout));
        let mut processed = 0u64;
        let mut closing = None;
        loop {
            let args = match parser.parse(&mut input, &limits, session.authenticated) {
                Ok(Some(args)) => args,
                Ok(None) => break,
                Err(e) => {
                    Reply::error(e.to_string()).encode(session.proto, &mut out);
                    closing = Some(Close::Protocol(e));
                    break;
                }
            };
            processed += 1;
            let was_skipped = std::mem::take(&mut skip_pending);
            let reply = cmd::execute(node, &mut session, &args, now);
            let suppress = was_skipped || session.reply_mode != ReplyMode::On;
            if session.reply_mode == ReplyMode::Skip {
                session.reply_mode = ReplyMode::On;
                skip_pending = true;
            }
            if !suppress {
                reply.encode(session.proto, &mut out);
            }
            if out_limit > 0 && out.len() as u64 > out_limit {
                tracing::warn!(
                    client = info.id,
                    bytes = out.len(),
                    "client output buffer limit reached, closing"
                );
                closing = Some(Close::OutputLimit);
                out.clear();
                break;
            }
            if session.close {
                closing = Some(Close::Quit);
                break;
            }
            if out.len() >= FLUSH_AT {
                if let Err(c) = write_out(&mut stream, &mut out, node, &info, stop.as_mut()).await {
                    return c;
                }
            }
        }
        if processed > 0 {
            node.stats
                .total_commands_processed
                .fetch_add(processed, Ordering::Relaxed);
            info.last_interaction_ms.store(now, Ordering::Relaxed);
        }
        if let Err(c) = write_out(&mut stream, &mut out, node, &info, stop.as_mut()).await {
            return c;
        }
        if let Some(c) = closing {
            let _ = stream.shutdown().await;
            return c;
        }
        if info.stop.is_cancelled() {
            return stopped(&info);
        }

        // Read more.
        if input.is_empty() && input.capacity() > KEEP_CAPACITY {
            input = BytesMut::with_capacity(MIN_READ);
        }
        let want = parser.bytes_wanted().clamp(MIN_READ, MAX_READ);
        input.reserve(want);
        if idle_secs > 0 {
            idle.as_mut()
                .reset(tokio::time::Instant::now() + Duration::from_secs(idle_secs));
        }
        // All arms are cancel safe: read_buf reads nothing if another arm wins.
        let n = tokio::select! {
            biased;
            r = stream.read_buf(&mut input) => match r {
                Ok(0) => return Close::Eof,
                Ok(n) => n,
                Err(e) => return Close::Io(e),
            },
            _ = stop.as_mut() => return stopped(&info),
            _ = idle.as_mut(), if idle_secs > 0 => return Close::Idle,
        };
        node.stats
            .total_net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
    }
}
