//! The accept loop, the cron task and graceful shutdown.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::NodeConfig;
use crate::connection::run_connection;
use crate::node::{now_ms, Node};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
}

/// A node that is serving. Dropping it does not stop it; call `shutdown` then `wait`.
pub struct RunningNode {
    pub node: Arc<Node>,
    pub local_addr: SocketAddr,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl RunningNode {
    /// Stops accepting, lets connections answer what they already read, then closes them.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Waits until every connection is closed (or the shutdown deadline passed).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// Binds the listener and starts serving in the background.
pub async fn start(
    config: NodeConfig,
    config_file: Option<String>,
) -> Result<RunningNode, StartError> {
    config.validate().map_err(StartError::Config)?;
    let addr = format!("{}:{}", config.bind, config.port);
    let listener = TcpListener::bind(&addr)
        .await
        .map_err(|source| StartError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| StartError::Bind { addr, source })?;
    let node = Arc::new(Node::new(config, config_file));
    node.port
        .store(u64::from(local_addr.port()), Ordering::Relaxed);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(serve(node.clone(), listener, shutdown.clone()));
    Ok(RunningNode {
        node,
        local_addr,
        shutdown,
        task,
    })
}

async fn serve(node: Arc<Node>, listener: TcpListener, shutdown: CancellationToken) {
    let tracker = TaskTracker::new();
    tracker.spawn(run_cron(node.clone(), shutdown.clone()));
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            r = listener.accept() => r,
        };
        let (mut stream, addr) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off briefly instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        node.stats
            .total_connections_received
            .fetch_add(1, Ordering::Relaxed);
        let max = node.with_settings(|s| s.maxclients);
        if node.clients.len() >= max {
            node.stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            tracker.spawn(async move {
                let _ = stream
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        let laddr = stream.local_addr().unwrap_or(addr);
        let info = node.clients.register(addr, laddr, shutdown.child_token());
        let node = node.clone();
        tracker.spawn(async move {
            let id = info.id;
            run_connection(node.clone(), stream, info).await;
            node.clients.unregister(id);
        });
    }
    drop(listener);
    tracker.close();
    let deadline = Duration::from_millis(node.with_settings(|s| s.shutdown_timeout_ms));
    if tokio::time::timeout(deadline, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("shutdown deadline passed with connections still open");
    }
    tracing::info!("stopped serving");
}

/// Background work at `hz`: active expiry, eviction after a lowered maxmemory, stats.
async fn run_cron(node: Arc<Node>, shutdown: CancellationToken) {
    let mut last_sample = 0u64;
    loop {
        let period = Duration::from_millis(1000 / u64::from(node.with_settings(|s| s.hz).max(1)));
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        let now = now_ms();
        // Expire due keys for at most ~1/4 of the period, as Redis's active expiry cycle.
        let budget = period / 4;
        let started = Instant::now();
        while node.store.expire_cycle(now, 1000) == 1000 && started.elapsed() < budget {}
        if node.store.maxmemory() > 0 {
            let _ = node.store.ensure_memory(now);
        }
        node.peak_memory(node.store.used_memory());
        if now.saturating_sub(last_sample) >= 100 {
            node.stats.sample_ops(now);
            last_sample = now;
        }
    }
}
