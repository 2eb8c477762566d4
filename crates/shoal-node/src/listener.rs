//! The accept loop, the cron task and graceful shutdown.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shoal_net::{TcpListener, UnixListener};
use tokio::io::AsyncWriteExt;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use shoal_tls::{Stream, Tls};
use shoal_wire::{serve_peer, ServeError, ServerConfig};

use crate::connection::{run_connection, Carried, Frontend, Moving};
use crate::memcache::McFrontend;
use crate::resp::RespFrontend;
use crate::signals::{self, Signals};
use shoal_cluster::membership::{self, GossipStart};
use shoal_cluster::peer::PeerService;
use shoal_cluster::Server;
use shoal_cluster::{Cluster, NodeInfo};
use shoal_engine::client::{ClientAddr, Signal};
use shoal_engine::clock::now_ms;
use shoal_engine::config::NodeConfig;
use shoal_engine::engine::Engine;
use shoal_engine::fdlimit;

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
    pub node: Arc<Server>,
    pub local_addr: SocketAddr,
    /// The Memcached listener's address, when `memcache-port` is set.
    pub memcache_addr: Option<SocketAddr>,
    /// The inter-node listener's address, in a cluster.
    pub cluster_addr: Option<SocketAddr>,
    /// The Redis Cluster client listener's address (`cluster-client-port`).
    pub cluster_client_addr: Option<SocketAddr>,
    /// The gossip socket's address (gossip mode).
    pub gossip_addr: Option<SocketAddr>,
    /// The metrics and health-check listener's address (`metrics-port`).
    pub metrics_addr: Option<SocketAddr>,
    /// The TLS client listener's address (`tls-port`).
    pub tls_addr: Option<SocketAddr>,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl RunningNode {
    /// Stops accepting, lets connections answer what they already read, then closes them.
    /// A script still running is stopped (as SHUTDOWN NOSAVE stops it), and so is a BGSAVE
    /// (as Redis kills its child on SIGTERM): its file is not put in place.
    pub fn shutdown(&self) {
        self.node.engine.running.abort();
        self.node.engine.saves.cancel();
        self.shutdown.cancel();
    }

    /// Resolves once the node was asked to stop (`shutdown`, or a client's SHUTDOWN).
    pub async fn stopping(&self) {
        self.shutdown.cancelled().await;
    }

    /// Gossip mode: announces that this node leaves, hands its slots to the others and
    /// leaves the gossip cluster (at most until `deadline`); true if the hand-off completed.
    /// Then call [`RunningNode::shutdown`]. Does nothing in other modes.
    pub async fn leave(&self, deadline: tokio::time::Instant) -> bool {
        shoal_cluster::membership::leave(&self.node, deadline).await
    }

    /// Waits until every connection is closed (or the shutdown deadline passed).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// The listen queue of every TCP listener: Redis's `tcp-backlog` default (511), which
/// CONFIG GET shows.
const TCP_BACKLOG: u32 = 511;

/// Binds `bind:port` for `what` (named in the error).
async fn bind(host: &str, port: u16) -> Result<(TcpListener, SocketAddr), StartError> {
    let addr = format!("{host}:{port}");
    let listener = shoal_net::listen(&addr, TCP_BACKLOG)
        .await
        .map_err(|source| StartError::Bind {
            addr: addr.clone(),
            source,
        })?;
    let local = listener
        .local_addr()
        .map_err(|source| StartError::Bind { addr, source })?;
    Ok((listener, local))
}

/// Listeners bound by the caller (tests bind port 0 first so that every node of a cluster
/// can be told the others' ports before any starts).
pub struct Listeners {
    pub resp: TcpListener,
    pub memcache: Option<TcpListener>,
    /// The inter-node listener; required when `cluster-nodes` is set or in gossip mode.
    pub cluster: Option<TcpListener>,
    /// The gossip UDP socket; required in gossip mode.
    pub gossip: Option<shoal_net::UdpSocket>,
    /// The Redis Cluster client listener (`cluster-client-port`, or this node's
    /// `+port` in `cluster-nodes`).
    pub cluster_client: Option<TcpListener>,
    /// The metrics and health-check listener (`metrics-port`).
    pub metrics: Option<TcpListener>,
    /// The Redis-protocol listener that speaks TLS (`tls-port`).
    pub tls: Option<TcpListener>,
}

/// Binds the listeners the configuration asks for and starts serving in the background.
pub async fn start(
    config: NodeConfig,
    config_file: Option<String>,
) -> Result<RunningNode, StartError> {
    config.validate().map_err(StartError::Config)?;
    let (resp, _) = bind(&config.bind, config.port).await?;
    let memcache = match config.memcache_port {
        Some(port) => Some(bind(&config.bind, port).await?.0),
        None => None,
    };
    let metrics = match config.metrics_port {
        Some(port) => Some(bind(&config.bind, port).await?.0),
        None => None,
    };
    let tls = match config.tls_port {
        Some(port) => Some(bind(&config.bind, port).await?.0),
        None => None,
    };
    let mut gossip = None;
    let mut cluster_client = match config.cluster_client_port {
        Some(port) => Some(bind(&config.bind, port).await?.0),
        None => None,
    };
    let cluster = if config.gossip() {
        let (l, addr) = bind(&config.bind, config.resolved_cluster_port()).await?;
        let port = config.gossip_port.unwrap_or(addr.port());
        let at = format!("{}:{port}", config.bind);
        gossip = Some(
            shoal_net::UdpSocket::bind(&at)
                .await
                .map_err(|source| StartError::Bind { addr: at, source })?,
        );
        Some(l)
    } else if config.cluster_nodes.is_empty() {
        None
    } else {
        let me = config.resolved_node_name();
        let members = config.cluster_members().map_err(StartError::Config)?;
        let mine = members
            .iter()
            .find(|m| m.name == me)
            .ok_or_else(|| StartError::Config(format!("'{me}' is not in cluster-nodes")))?;
        if let Some(a) = mine.cluster_client {
            cluster_client = Some(bind(&config.bind, a.port()).await?.0);
        }
        Some(bind(&config.bind, mine.cluster.port()).await?.0)
    };
    start_with(
        config,
        config_file,
        Listeners {
            resp,
            memcache,
            cluster,
            gossip,
            cluster_client,
            metrics,
            tls,
        },
    )
    .await
}

/// Starts serving on listeners the caller bound.
pub async fn start_with(
    mut config: NodeConfig,
    config_file: Option<String>,
    mut listeners: Listeners,
) -> Result<RunningNode, StartError> {
    config.validate().map_err(StartError::Config)?;
    // The users (configured, or an ACL file's): a refused rule stops the start, as in Redis.
    let (users, problem) = crate::acl::build(&config.requirepass, &config.user, &config.aclfile);
    if let Some(why) = problem {
        return Err(StartError::Config(why));
    }
    let fit = fdlimit::fit(config.maxclients).map_err(|e| StartError::Config(e.to_string()))?;
    if fit.maxclients < config.maxclients {
        tracing::warn!(
            "maxclients lowered from {} to {}: the open-files limit is {} (hard limit {}) and \
             {} are kept for listeners and cluster links; raise 'ulimit -n' for more clients",
            config.maxclients,
            fit.maxclients,
            fit.soft,
            fit.hard,
            fdlimit::RESERVED_FDS
        );
        config.maxclients = fit.maxclients;
    }
    let local_addr = local(&listeners.resp)?;
    let memcache_addr = listeners.memcache.as_ref().map(local).transpose()?;
    let cluster_addr = listeners.cluster.as_ref().map(local).transpose()?;
    let cluster_client_addr = listeners.cluster_client.as_ref().map(local).transpose()?;
    let metrics_addr = listeners.metrics.as_ref().map(local).transpose()?;
    let tls_addr = listeners.tls.as_ref().map(local).transpose()?;
    if config.tls_port.is_some() != listeners.tls.is_some() {
        return Err(StartError::Config(
            "tls-port is set but there is no TLS listener (or the other way round)".into(),
        ));
    }
    let tls = crate::tls::load(&config).map_err(StartError::Config)?;
    let link_tls = tls.clone().filter(|_| config.tls_cluster);
    let unix = UnixSockets {
        resp: bind_unix(&config.unixsocket, config.unixsocketperm)?,
        memcache: bind_unix(&config.memcache_unixsocket, config.memcache_unixsocketperm)?,
    };
    let mut gossip_start = None;
    let cluster = if config.gossip() {
        let (Some(cluster_addr), Some(socket)) = (cluster_addr, listeners.gossip.take()) else {
            return Err(StartError::Config(
                "cluster-mode gossip needs an inter-node listener and a gossip socket".into(),
            ));
        };
        let gossip_local = socket.local_addr().map_err(|source| StartError::Bind {
            addr: "gossip socket".into(),
            source,
        })?;
        let ip = announce_ip(&config).map_err(StartError::Config)?;
        let start = GossipStart {
            socket,
            gossip_addr: SocketAddr::new(ip, gossip_local.port()),
            client_addr: SocketAddr::new(ip, local_addr.port()),
            cluster_addr: SocketAddr::new(ip, cluster_addr.port()),
            cluster_client_port: match (config.cluster_announce_port, cluster_client_addr) {
                (0, Some(a)) => a.port(),
                (0, None) => 0,
                (announced, _) => announced,
            },
        };
        let id = membership::identity(&config, &start).map_err(StartError::Config)?;
        let myself = NodeInfo::new(
            id.name(),
            start.client_addr,
            start.cluster_addr,
            id.generation(),
        )
        .with_cluster_client(
            (start.cluster_client_port != 0)
                .then(|| SocketAddr::new(ip, start.cluster_client_port)),
        );
        gossip_start = Some((start, id));
        Some(
            Cluster::for_gossip(&config, myself, link_tls)
                .map_err(|e| StartError::Config(e.to_string()))?,
        )
    } else if config.cluster_nodes.is_empty() {
        None
    } else {
        if listeners.cluster.is_none() {
            return Err(StartError::Config(
                "cluster-nodes is set but there is no inter-node listener".into(),
            ));
        }
        Some(
            Cluster::from_config(&config, link_tls)
                .map_err(|e| StartError::Config(e.to_string()))?,
        )
    };
    let tls_memcache = config.tls_memcache;
    let tls_cluster = config.tls_cluster;
    let tombstone_ttl = config.tombstone_ttl_ms;
    let gossip_config = gossip_start.as_ref().map(|_| config.clone());
    let node = Arc::new(Server::new(Engine::new(config, config_file), cluster));
    node.engine.clients.set_hangup_probe(crate::hangup::probe);
    // Nothing has read the users yet: the registry just built is the node's.
    let _ = node.engine.acl.set(users);
    // The first allocator reading is the empty server's resident size.
    node.engine.refresh_memory();
    // Eviction reads the memory again first (`Store::set_remeasure`).
    let weak = Arc::downgrade(&node);
    node.engine.store.set_remeasure(Box::new(move || {
        if let Some(node) = weak.upgrade() {
            node.engine.refresh_memory();
        }
    }));
    if node.cluster.is_some() {
        node.engine.store.set_tombstone_ttl(tombstone_ttl.max(1));
        shoal_cluster::events::start(&node);
        shoal_cluster::invalidations::start(&node);
        shoal_cluster::copies::start(&node);
        if node
            .cluster
            .as_ref()
            .is_some_and(|c| c.mode == shoal_cluster::Mode::Static)
        {
            tokio::spawn(shoal_cluster::reach::run_static(
                node.clone(),
                node.shutdown.child_token(),
            ));
        }
    }
    node.engine
        .port
        .store(u64::from(local_addr.port()), Ordering::Relaxed);
    let workers = crate::workers::count()
        .unwrap_or_else(|| tokio::runtime::Handle::current().metrics().num_workers());
    node.engine.threads.store(workers as u64, Ordering::Relaxed);
    if let Some(tls) = &tls {
        crate::tls::reload_on_config_set(&node, tls.clone());
    }
    let shutdown = node.shutdown.clone();
    let mut gossip_addr = None;
    if let (Some((start, id)), Some(config)) = (gossip_start, gossip_config) {
        gossip_addr = Some(start.gossip_addr);
        membership::start(&node, &config, start, id, shutdown.child_token())
            .map_err(StartError::Config)?;
    }
    // Which client listeners speak TLS.
    let secured = Secured {
        tls_port: tls.clone(),
        memcache: tls.clone().filter(|_| tls_memcache),
        cluster_client: tls.filter(|_| tls_cluster),
    };
    let task = tokio::spawn(serve(
        node.clone(),
        listeners,
        unix,
        secured,
        shutdown.clone(),
    ));
    Ok(RunningNode {
        node,
        local_addr,
        memcache_addr,
        cluster_addr,
        cluster_client_addr,
        gossip_addr,
        metrics_addr,
        tls_addr,
        shutdown,
        task,
    })
}

/// The IP other nodes reach this one at: `cluster-announce-ip`, else `bind` when specific,
/// else what the host name resolves to.
fn announce_ip(config: &NodeConfig) -> Result<IpAddr, String> {
    if !config.cluster_announce_ip.is_empty() {
        return config.cluster_announce_ip.parse().map_err(|_| {
            format!(
                "invalid cluster-announce-ip '{}'",
                config.cluster_announce_ip
            )
        });
    }
    if let Ok(ip) = config.bind.parse::<IpAddr>() {
        if !ip.is_unspecified() {
            return Ok(ip);
        }
    }
    let host = config.resolved_node_name();
    std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 0))
        .ok()
        .and_then(|mut a| a.find(|a| !a.ip().is_loopback()).map(|a| a.ip()))
        .ok_or_else(|| {
            format!(
                "cannot tell which address other nodes reach this one at (bind is {}, the \
                 name '{host}' does not resolve to a non-loopback address): set \
                 cluster-announce-ip",
                config.bind
            )
        })
}

/// The Unix sockets `unixsocket` and `memcache-unixsocket` ask for.
struct UnixSockets {
    resp: Option<ClientListener>,
    memcache: Option<ClientListener>,
}

/// Binds a Unix socket at `path` (none when empty) with permissions `perm` (0: as the umask
/// leaves them). A socket file already there (a node that did not stop cleanly) is replaced,
/// as Redis and memcached replace it; another kind of file is left alone and refused.
fn bind_unix(
    path: &str,
    perm: shoal_engine::config::SocketPerm,
) -> Result<Option<ClientListener>, StartError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    if path.is_empty() {
        return Ok(None);
    }
    let failed = |source| StartError::Bind {
        addr: path.to_string(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path).map_err(failed)?,
        Ok(_) => {
            return Err(failed(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the path exists and is not a socket",
            )))
        }
        Err(_) => {}
    }
    let listener = UnixListener::bind(path).map_err(failed)?;
    if perm.0 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm.0)).map_err(failed)?;
    }
    let made = std::fs::symlink_metadata(path).map_err(failed)?;
    Ok(Some(ClientListener::Unix {
        listener,
        file: SocketFile {
            path: path.into(),
            id: (made.dev(), made.ino()),
        },
    }))
}

/// A Unix socket's file, removed when its listener closes (as Redis removes it on
/// shutdown) unless another socket took the path meanwhile.
struct SocketFile {
    path: Arc<str>,
    /// Device and inode of the socket bound.
    id: (u64, u64),
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        let path = &*self.path;
        if std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == self.id) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A client listener: TCP, or a Unix socket.
enum ClientListener {
    Tcp(TcpListener),
    Unix {
        listener: UnixListener,
        file: SocketFile,
    },
}

/// An accepted client connection: its stream, descriptor, and both ends' addresses.
struct Accepted {
    stream: Stream,
    fd: i32,
    addr: ClientAddr,
    laddr: ClientAddr,
}

impl ClientListener {
    /// The listening socket's descriptor and address, for memcached's `stats conns`.
    fn describe(&self) -> Option<(i32, ClientAddr)> {
        match self {
            ClientListener::Tcp(l) => l.local_addr().ok().map(|a| (shoal_net::fd_of(l), a.into())),
            ClientListener::Unix { listener, file } => Some((
                shoal_net::fd_of(listener),
                ClientAddr::Unix(file.path.clone()),
            )),
        }
    }

    async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            ClientListener::Tcp(l) => {
                let (stream, addr) = l.accept().await?;
                let laddr = stream.local_addr().unwrap_or(addr);
                Ok(Accepted {
                    fd: shoal_net::fd_of(&stream),
                    stream: Stream::Plain(stream),
                    addr: addr.into(),
                    laddr: laddr.into(),
                })
            }
            // Both ends are known by the listening socket's path, as in Redis.
            ClientListener::Unix { listener, file } => {
                let (stream, _) = listener.accept().await?;
                let path = ClientAddr::Unix(file.path.clone());
                Ok(Accepted {
                    fd: shoal_net::fd_of(&stream),
                    stream: Stream::Unix(stream),
                    addr: path.clone(),
                    laddr: path,
                })
            }
        }
    }
}

fn local(l: &TcpListener) -> Result<SocketAddr, StartError> {
    l.local_addr().map_err(|source| StartError::Bind {
        addr: "listener".into(),
        source,
    })
}

/// Which protocol a listener speaks.
#[derive(Clone, Copy)]
enum Protocol {
    Resp,
    /// RESP with Redis Cluster's rules (MOVED, CROSSSLOT, node-local key listings).
    RespCluster,
    Memcache,
}

/// The TLS configuration of each client listener that speaks TLS.
struct Secured {
    tls_port: Option<Tls>,
    memcache: Option<Tls>,
    cluster_client: Option<Tls>,
}

async fn serve(
    node: Arc<Server>,
    listeners: Listeners,
    unix: UnixSockets,
    secured: Secured,
    shutdown: CancellationToken,
) {
    let Listeners {
        resp: listener,
        memcache,
        cluster,
        gossip: _,
        cluster_client,
        metrics,
        tls,
    } = listeners;
    let tracker = TaskTracker::new();
    tracker.spawn(run_cron(node.clone(), shutdown.clone()));
    // Connections watch their own signals, not the shutdown token: tell each one (one that
    // registers after this sees the token when it starts).
    tracker.spawn({
        let (node, shutdown) = (node.clone(), shutdown.clone());
        async move {
            shutdown.cancelled().await;
            for client in node.engine.clients.all() {
                client.stop();
            }
        }
    });
    if let Some(l) = metrics {
        tracker.spawn(crate::metrics::serve(node.clone(), l, shutdown.clone()));
    }
    if let Some(l) = cluster {
        let (node, shutdown, t) = (node.clone(), shutdown.clone(), tracker.clone());
        tracker.spawn(async move { peer_accept_loop(node, l, shutdown, t).await });
    }
    if let Some(l) = memcache {
        let (node, shutdown, t) = (node.clone(), shutdown.clone(), tracker.clone());
        let tls = secured.memcache;
        let l = ClientListener::Tcp(l);
        tracker
            .spawn(async move { accept_loop(node, l, Protocol::Memcache, tls, shutdown, t).await });
    }
    // Unix sockets are plain: TLS is for the network.
    for (l, protocol) in [
        (unix.resp, Protocol::Resp),
        (unix.memcache, Protocol::Memcache),
    ] {
        if let Some(l) = l {
            let (node, shutdown, t) = (node.clone(), shutdown.clone(), tracker.clone());
            tracker.spawn(async move { accept_loop(node, l, protocol, None, shutdown, t).await });
        }
    }
    if let Some(l) = cluster_client {
        let (node, shutdown, t) = (node.clone(), shutdown.clone(), tracker.clone());
        let tls = secured.cluster_client;
        let l = ClientListener::Tcp(l);
        tracker.spawn(async move {
            accept_loop(node, l, Protocol::RespCluster, tls, shutdown, t).await
        });
    }
    if let (Some(l), Some(tls)) = (tls, secured.tls_port) {
        let (node, shutdown, t) = (node.clone(), shutdown.clone(), tracker.clone());
        let l = ClientListener::Tcp(l);
        tracker.spawn(
            async move { accept_loop(node, l, Protocol::Resp, Some(tls), shutdown, t).await },
        );
    }
    accept_loop(
        node.clone(),
        ClientListener::Tcp(listener),
        Protocol::Resp,
        None,
        shutdown,
        tracker.clone(),
    )
    .await;
    tracker.close();
    let deadline = Duration::from_millis(node.engine.with_settings(|s| s.shutdown_timeout_ms));
    if tokio::time::timeout(deadline, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("shutdown deadline passed with connections still open");
    }
    tracing::info!("stopped serving");
}

/// A connected client's entry in the registry, removed when dropped.
struct Registered {
    node: Arc<Server>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.node.engine.clients.unregister(self.id);
        self.node.engine.tracker.client_gone(self.id);
    }
}

/// How often a failing `accept` (out of file descriptors) is logged at most.
const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(10);

/// Failed accepts, logged once per [`ACCEPT_WARN_EVERY`] with how many there were.
#[derive(Default)]
struct AcceptFailures {
    last_warn: Option<Instant>,
    since: u64,
}

impl AcceptFailures {
    fn note(&mut self, e: &std::io::Error) {
        self.since += 1;
        if self
            .last_warn
            .is_none_or(|t| t.elapsed() >= ACCEPT_WARN_EVERY)
        {
            tracing::warn!(error = %e, failures = self.since, "accept failed (lower maxclients or raise 'ulimit -n')");
            self.last_warn = Some(Instant::now());
            self.since = 0;
        }
    }
}

/// Accepts connections until shutdown; the listener is closed when it returns. With `tls`,
/// each connection's TLS handshake runs in its own task before it is served.
async fn accept_loop(
    node: Arc<Server>,
    listener: ClientListener,
    protocol: Protocol,
    tls: Option<Tls>,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    // Memcached's `stats conns` lists its own listening sockets (not the RESP ones).
    if let (Protocol::Memcache, Some((fd, addr))) = (protocol, listener.describe()) {
        node.engine.clients.add_listener(fd, addr);
    }
    let mut failures = AcceptFailures::default();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            r = listener.accept() => r,
        };
        let Accepted {
            stream,
            fd,
            addr,
            laddr,
        } = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off briefly instead of spinning,
                // and say so once per `ACCEPT_WARN_EVERY`, not at every retry.
                failures.note(&e);
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        node.engine
            .stats
            .total_connections_received
            .fetch_add(1, Ordering::Relaxed);
        let (max, keepalive) = node
            .engine
            .with_settings(|s| (s.maxclients, s.tcp_keepalive));
        if let Stream::Plain(tcp) = &stream {
            if let Err(e) = shoal_net::set_keepalive(tcp, keepalive) {
                tracing::debug!(error = %e, "tcp-keepalive not set");
            }
        }
        if node.engine.clients.len() >= max {
            node.engine
                .stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            let refusal: &'static [u8] = match protocol {
                Protocol::Resp | Protocol::RespCluster => b"-ERR max number of clients reached\r\n",
                // memcached 1.6's words (`ERROR`, not `SERVER_ERROR`; its own maxconns.t
                // reads them).
                Protocol::Memcache => b"ERROR Too many open connections\r\n",
            };
            // A TLS client is simply closed: it could not read a plain refusal.
            if tls.is_none() {
                crate::workers::spawn(&tracker, stream, None, move |mut stream, _| async move {
                    let _ = stream.write_all(refusal).await;
                });
            }
            continue;
        }
        let stop = shutdown.child_token();
        let signals = Arc::new(Signals::default());
        let (kill, raise) = (stop.clone(), signals.clone());
        let info = node.engine.clients.register(
            addr,
            laddr,
            Box::new(move |signal| match signal {
                Signal::Stop => {
                    raise.raise(signals::STOP);
                    kill.cancel();
                }
                Signal::Trim => raise.raise(signals::TRIM),
            }),
        );
        info.fd.store(fd, Ordering::Relaxed);
        // Frees the client's place however the task ends (a panic included), or when it
        // never runs (the connection could not move to a worker).
        let registered = Registered {
            node: node.clone(),
            id: info.id,
        };
        let node = node.clone();
        let tls = tls.clone();
        let moves = tracker.clone();
        // Not on a worker a busy script holds: a client may be there to kill it.
        let stuck = node.engine.running.busy_thread();
        crate::workers::spawn(&tracker, stream, stuck, move |stream, worker| async move {
            info.io_thread.store(worker, Ordering::Relaxed);
            let stream = match (&tls, stream) {
                // Boxed: the handshake's state would otherwise size every connection's
                // task, TLS or not, for its whole life (1,664 bytes against 256).
                (Some(tls), Stream::Plain(tcp)) => {
                    match Box::pin(crate::tls::accept(tls, tcp, &stop, info.id)).await {
                        Some(stream) => stream,
                        None => return,
                    }
                }
                (_, stream) => stream,
            };
            let client = Client {
                node: node.clone(),
                info: info.clone(),
                stop,
                signals,
                _registered: registered,
                tracker: moves,
            };
            // The front end moves into the connection's own future: made in a scope that
            // ends before the wait, so this task does not keep room for it as well.
            let connection = match protocol {
                Protocol::Resp | Protocol::RespCluster => {
                    let mut frontend = RespFrontend::new(&node, info);
                    if matches!(protocol, Protocol::RespCluster) {
                        frontend.redis_cluster();
                    }
                    serve_client(client, stream, Carried::default(), frontend)
                }
                Protocol::Memcache => {
                    let frontend = McFrontend::new(&node, info);
                    serve_client(client, stream, Carried::default(), frontend)
                }
            };
            connection.await;
        });
    }
}

/// A client connection's identity, kept while it moves between workers.
struct Client {
    node: Arc<Server>,
    info: Arc<shoal_engine::client::ClientInfo>,
    stop: CancellationToken,
    /// Its stop, and the cron's ask to give the buffers back when idle a while.
    signals: Arc<Signals>,
    /// Frees the client's place when the connection ends (not when it moves).
    _registered: Registered,
    tracker: TaskTracker,
}

/// Serves a client until it closes; when it should move to another worker
/// ([`crate::workers::Affinity`]), continues it there with what it had read.
fn serve_client<F: Frontend + 'static>(
    client: Client,
    stream: Stream,
    carried: Carried,
    frontend: F,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    // Boxed on its own and made here: moved into the block below, the stream, the front end
    // and what was read would stay in the block's state too, beside the future's own copy.
    let connection = Box::pin(run_connection(
        client.node.clone(),
        stream,
        carried,
        client.info.clone(),
        client.stop.clone(),
        client.signals.clone(),
        frontend,
    ));
    Box::pin(async move {
        let moving = connection.await;
        let Some(Moving {
            to,
            stream,
            carried,
            frontend,
        }) = moving
        else {
            return;
        };
        let tracker = client.tracker.clone();
        // Boxed: the new worker's task keeps what its closure took for as long as the
        // connection lives there, so that is a pointer, not the front end.
        let parts = Box::new((client, carried, frontend));
        crate::workers::spawn_on(to, &tracker, stream, move |stream, worker| {
            let (client, carried, frontend) = *parts;
            client.info.io_thread.store(worker, Ordering::Relaxed);
            serve_client(client, stream, carried, frontend)
        });
    })
}

/// Accepts inter-node connections until shutdown; each runs `serve_peer` (handshake with the
/// cluster secret first).
async fn peer_accept_loop(
    node: Arc<Server>,
    listener: TcpListener,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    let auth = cluster.auth.clone();
    let service = Arc::new(PeerService::new(node.clone()));
    // At least what each peer's client may have in flight (the wire crate's rule).
    let config = ServerConfig {
        max_in_flight: shoal_cluster::PEER_MAX_IN_FLIGHT,
        ..ServerConfig::default()
    };
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            r = listener.accept() => r,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "inter-node accept failed");
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        let (auth, service, config, stop) = (
            auth.clone(),
            service.clone(),
            config.clone(),
            shutdown.child_token(),
        );
        crate::workers::spawn(&tracker, stream, None, move |stream, _| async move {
            if let Err(e) = serve_peer(stream, &auth, service, &config, stop).await {
                match e {
                    ServeError::Handshake(h) if h.is_refusal() => {
                        tracing::warn!(error = %h, "refused an inter-node connection");
                    }
                    other => tracing::debug!(error = %other, "inter-node connection ended"),
                }
            }
        });
    }
}

/// Background work at `hz`: active expiry, eviction after a lowered maxmemory, stats.
async fn run_cron(node: Arc<Server>, shutdown: CancellationToken) {
    let mut last_sample = 0u64;
    let mut last_trim = 0u64;
    // Rounds on a fixed beat, as Redis's serverCron: a wake-up between them (a BGSAVE asked
    // for) starts the write and moves no round, so its end is reaped at the next one.
    let mut next_round = tokio::time::Instant::now();
    loop {
        let period =
            Duration::from_millis(1000 / u64::from(node.engine.with_settings(|s| s.hz).max(1)));
        next_round = (next_round + period).max(tokio::time::Instant::now());
        let woken = tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep_until(next_round) => false,
            _ = node.cron_wake.notified() => true,
        };
        // BGSAVE: a write asked for starts on a thread of its own, even while the cron is
        // paused (as Redis's child runs then).
        if node
            .engine
            .saves
            .take_start(|| node.engine.store.stats().changes)
        {
            let node = Arc::clone(&node);
            tokio::task::spawn_blocking(move || shoal_engine::snapshot::run_bgsave(&node.engine));
        }
        if woken {
            // Back to the same beat.
            next_round -= period;
            continue;
        }
        let now = now_ms();
        // DEBUG PAUSE-CRON 1: nothing until it is 0 again.
        if node
            .engine
            .cron_paused
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            continue;
        }
        // One that ended is done (not while the cron is paused, as Redis's child is reaped
        // by its cron).
        node.engine.saves.reap();
        // Not inside a transaction (EXEC runs alone, `shoal_store::gate`): this round's
        // expiry, eviction and delayed flush wait for the next one then, and this thread,
        // which also runs gossip, never waits for one.
        let Some(entered) = node.engine.store.try_enter() else {
            continue;
        };
        // Expire due keys for at most ~1/4 of the period, as Redis's active expiry cycle.
        let budget = period / 4;
        let started = Instant::now();
        // (Off after DEBUG SET-ACTIVE-EXPIRE 0: keys then expire when read.)
        let active_expire = !node
            .engine
            .active_expire_off
            .load(std::sync::atomic::Ordering::Relaxed);
        if active_expire {
            loop {
                let removed = node.engine.store.expire_cycle(now, 1000);
                // Their `expired` notifications, if on (a round's at most 1,000 keys).
                node.engine.publish_key_events();
                if removed < 1000 {
                    break;
                }
                if started.elapsed() >= budget {
                    node.engine
                        .stats
                        .expire_time_cap_reached
                        .fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
        // LATENCY's `expire-cycle` event, as Redis's active expiry records it.
        let usec = started.elapsed().as_micros() as u64;
        if active_expire {
            node.engine
                .stats
                .expire_cycle_us
                .fetch_add(usec, Ordering::Relaxed);
        }
        node.engine
            .latency
            .observe("expire-cycle", usec, || now / 1000);
        node.engine.refresh_memory();
        // The store notes expiries for client-side caching only while a client tracks (the
        // last one may have gone without turning it off).
        node.engine.refresh_notes();
        node.engine.trim_tracking();
        if node.engine.store.maxmemory() > 0 {
            let _ = node.engine.store.ensure_memory(now);
            node.engine.publish_key_events();
        }
        node.engine.peak_memory(node.engine.used_memory());
        // Connections idle for a while give their buffers back (Redis's clientsCron).
        if now.saturating_sub(last_trim) >= 1000 {
            node.engine.clients.trim_idle(now);
            last_trim = now;
        }
        // `maxmemory-clients`: every client accounted as it is now (what changed while the
        // limit was off, or without its I/O loop accounting it), and evicted if over, as
        // Redis's clientsCron and next event-loop turn would.
        let limit = node.engine.with_settings(Engine::client_memory_limit_of);
        if limit > 0 && node.engine.clients.account_all(limit) {
            node.engine.clients.evict_over(limit);
        }
        let flush_at = node.engine.flush_at.load(Ordering::Relaxed);
        if flush_at != 0 && now >= flush_at {
            node.engine.flush_at.store(0, Ordering::Relaxed);
            node.engine.store.clear();
            // As an immediate flush: no replicated write from before it brings a key back,
            // and the clients blocked on keys it removed try again.
            node.engine.store.refuse_versions_below(flush_at << 12);
            node.engine.blocked.signal_where(|_| true);
        }
        drop(entered);
        if now.saturating_sub(last_sample) >= 100 {
            node.engine.stats.sample_rates(now);
            last_sample = now;
        }
    }
}
