//! One client connection: read, parse, execute, reply.
//!
//! The loop reads into one buffer, parses every complete request in it, executes them in
//! order, encodes the replies into one output buffer and writes it once per batch. Back
//! pressure: while a write is pending nothing more is read, and the output buffer is flushed
//! whenever it passes `FLUSH_AT`, so a client that never reads holds at most one batch of
//! replies. A single reply larger than `client-output-buffer-limit` closes the connection.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use shoal_resp::{ParseError, Reply, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

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

pub async fn run_connection(
    node: Arc<Node>,
    stream: TcpStream,
    info: Arc<ClientInfo>,
    shutdown: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let id = info.id;
    let reason = serve(&node, stream, info, &shutdown).await;
    tracing::debug!(client = id, ?reason, "connection closed");
}

async fn write_out(
    stream: &mut TcpStream,
    out: &mut BytesMut,
    node: &Node,
    info: &ClientInfo,
) -> Result<(), Close> {
    if out.is_empty() {
        return Ok(());
    }
    // Shutdown does not interrupt a write: replies already computed are delivered (the
    // listener's shutdown deadline bounds how long a slow reader can hold the exit). A kill
    // drops the connection and whatever it had not sent.
    tokio::select! {
        r = stream.write_all(out) => r.map_err(Close::Io)?,
        _ = info.kill.cancelled() => return Err(Close::Killed),
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

async fn serve(
    node: &Node,
    mut stream: TcpStream,
    info: Arc<ClientInfo>,
    shutdown: &CancellationToken,
) -> Close {
    let mut session = Session::new(info.clone(), !node.requires_auth());
    let mut parser = RequestParser::new();
    let mut input = BytesMut::with_capacity(MIN_READ);
    let mut out = BytesMut::with_capacity(MIN_READ);
    let mut skip_pending = false;
    loop {
        // Answer every complete request already read.
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
            let reply = cmd::execute(node, &mut session, &args, now_ms());
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
                if let Err(c) = write_out(&mut stream, &mut out, node, &info).await {
                    return c;
                }
            }
        }
        if processed > 0 {
            node.stats
                .total_commands_processed
                .fetch_add(processed, Ordering::Relaxed);
            info.last_interaction_ms.store(now_ms(), Ordering::Relaxed);
        }
        if let Err(c) = write_out(&mut stream, &mut out, node, &info).await {
            return c;
        }
        if let Some(c) = closing {
            let _ = stream.shutdown().await;
            return c;
        }
        if info.kill.is_cancelled() {
            return Close::Killed;
        }
        if shutdown.is_cancelled() {
            return Close::Shutdown;
        }

        // Read more.
        if input.is_empty() && input.capacity() > KEEP_CAPACITY {
            input = BytesMut::with_capacity(MIN_READ);
        }
        let want = parser.bytes_wanted().clamp(MIN_READ, MAX_READ);
        input.reserve(want);
        let idle = async {
            if idle_secs == 0 {
                std::future::pending::<()>().await
            } else {
                tokio::time::sleep(Duration::from_secs(idle_secs)).await
            }
        };
        // All arms are cancel safe: read_buf reads nothing if cancelled.
        let n = tokio::select! {
            r = stream.read_buf(&mut input) => match r {
                Ok(0) => return Close::Eof,
                Ok(n) => n,
                Err(e) => return Close::Io(e),
            },
            _ = info.kill.cancelled() => return Close::Killed,
            _ = shutdown.cancelled() => return Close::Shutdown,
            _ = idle => return Close::Idle,
        };
        node.stats
            .total_net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
    }
}
