//! Sending a command to the copies of its keys: the first that answers, in rank order, with
//! failover to the next when a copy cannot be reached. This is where a request crosses to
//! another node.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use shoal_wire::{ErrorCode, WireError};
use tokio::sync::oneshot;

use super::local::serve_body_here;
use super::outcome::{error_bytes, Outcome};
use crate::{handoff, message, Server, View};

pub fn forward(
    node: &Arc<Server>,
    view: Arc<View>,
    owners: Vec<u16>,
    body: Bytes,
    write: bool,
    turn: Turn,
) -> Outcome {
    Outcome::Later(Box::pin(send_to_copies(
        node.clone(),
        view,
        owners,
        body,
        write,
        turn,
    )))
}

/// The order in which one connection's forwarded commands may go on to a next copy.
///
/// A command's first attempt leaves in the order the client sent it (the wire client queues
/// a request on its first poll). But when a copy fails, the callers of its failed requests
/// are woken in no set order: the runtime defers the wake-ups of a task that used up its
/// budget and runs them last first, which sent a pipeline's `GET k` to the next copy before
/// its `SET k b` and `SET k a`. So before trying another copy, a command waits until the one
/// forwarded before it on its connection has finished: a pipeline's commands on one key
/// reach the next copy in order. Failovers are rare; the wait costs nothing otherwise.
#[derive(Debug, Default)]
pub struct FailoverOrder {
    last: Option<oneshot::Receiver<()>>,
}

impl FailoverOrder {
    /// The place of the next forwarded command.
    pub fn turn(&mut self) -> Turn {
        let (done, next) = oneshot::channel();
        Turn {
            after: self.last.replace(next),
            _done: done,
        }
    }

    /// Every command forwarded so far has finished.
    pub fn clear(&mut self) {
        self.last = None;
    }
}

/// One forwarded command's place in its connection's [`FailoverOrder`]; dropping it (the
/// command finished) lets the next one fail over.
#[derive(Debug)]
pub struct Turn {
    after: Option<oneshot::Receiver<()>>,
    _done: oneshot::Sender<()>,
}

impl Turn {
    /// Waits until the command forwarded before this one finished (at once the second time),
    /// at most `limit`: when the next copies do not answer either, a chain of failovers
    /// would otherwise take one timeout per command.
    async fn after_previous(&mut self, limit: std::time::Duration) {
        if let Some(after) = self.after.take() {
            // Err: the previous command's future was dropped, which also finishes it.
            let _ = tokio::time::timeout(limit, after).await;
        }
    }
}

/// Whether a failed request should go to the next copy: when the copy cannot be reached
/// (connection refused or reset, no answer in time, shutting down), reads and writes alike,
/// as the cluster issue asks: a cache stays available, and last-writer-wins on versions
/// settles a write that both a slow owner and its replica applied (a retried INCR may then
/// count twice). A handshake refusal (another secret or cluster name) is a configuration
/// error: reads go on, writes do not, so a misconfigured pair cannot make a second writer
/// for good.
pub fn fails_over(e: &WireError, write: bool) -> bool {
    match e {
        WireError::PeerUnavailable(_) | WireError::Timeout => true,
        WireError::Remote { code, .. } => *code == ErrorCode::ShuttingDown,
        WireError::Refused(_) => !write,
        WireError::Overloaded | WireError::Frame(_) => false,
    }
}

/// Sends a COMMAND body to the first copy that answers, in `owners` order (this node runs
/// it itself when its turn comes), and returns the reply bytes.
pub async fn send_to_copies(
    node: Arc<Server>,
    view: Arc<View>,
    owners: Vec<u16>,
    body: Bytes,
    write: bool,
    mut turn: Turn,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let mut last_error = String::new();
    for (i, &m) in owners.iter().enumerate() {
        if i > 0 {
            cluster.stats.failovers.fetch_add(1, Ordering::Relaxed);
            turn.after_previous(cluster.timeouts.request).await;
        }
        if m == view.me {
            // This node is the next copy: run it here, a millisecond ahead when it is a
            // failover (see `message`).
            return serve_body_here(&node, &view, body, u64::from(i > 0)).await;
        }
        let Some(peer) = view.peer(m) else { continue };
        cluster.stats.forwarded.fetch_add(1, Ordering::Relaxed);
        let name = &view.nodes[usize::from(m)].name;
        // A later attempt gets a deadline of its own.
        let attempt = if i == 0 {
            body.clone()
        } else {
            message::restamp(&body, cluster.deadline_ms())
        };
        match peer.client.request(view.id, attempt).await {
            Ok(response) => {
                peer.reachable.store(true, Ordering::Relaxed);
                let next_copy = handoff::try_next_copy(&response.body);
                let outcome = if next_copy {
                    &peer.forwards.next_copy
                } else {
                    &peer.forwards.answered
                };
                outcome.fetch_add(1, Ordering::Relaxed);
                if next_copy && i + 1 < owners.len() {
                    // A copy that is starting, or that got the request too late: the next
                    // copy has the key.
                    last_error = format!(
                        "{name}: {}",
                        String::from_utf8_lossy(&response.body).trim_end()
                    );
                    continue;
                }
                return response.body;
            }
            Err(e) if fails_over(&e, write) => {
                peer.forwards.unreachable.fetch_add(1, Ordering::Relaxed);
                peer.reachable.store(false, Ordering::Relaxed);
                tracing::debug!(node = %name, error = %e, "copy unreachable, trying the next");
                last_error = format!("{name}: {e}");
            }
            Err(e) => {
                peer.forwards.failed.fetch_add(1, Ordering::Relaxed);
                cluster.stats.unreachable.fetch_add(1, Ordering::Relaxed);
                return error_bytes(&format!("ERR request to node {name} failed: {e}"));
            }
        }
    }
    cluster.stats.unreachable.fetch_add(1, Ordering::Relaxed);
    error_bytes(&format!(
        "CLUSTERDOWN no copy of this key is reachable (last error: {last_error})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_wire::Unavailable;

    #[test]
    fn unreachable_copies_fail_over_refusals_only_for_reads() {
        let unreachable = [
            WireError::PeerUnavailable(Unavailable::Connect(std::io::ErrorKind::ConnectionRefused)),
            WireError::PeerUnavailable(Unavailable::ConnectTimeout),
            WireError::PeerUnavailable(Unavailable::ConnectionLost),
            WireError::Timeout,
        ];
        for e in &unreachable {
            assert!(fails_over(e, true) && fails_over(e, false), "{e}");
        }
        let refused = WireError::Refused(shoal_wire::HandshakeError::Config("x"));
        assert!(!fails_over(&refused, true) && fails_over(&refused, false));
        assert!(!fails_over(&WireError::Overloaded, false));
    }
}
