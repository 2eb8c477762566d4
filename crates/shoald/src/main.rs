//! `shoald`: the Shoal daemon. Reads the configuration (flag > environment > file > default),
//! sets up logging, starts the node and turns SIGINT/SIGTERM into a graceful shutdown.

#[cfg(feature = "jemalloc")]
mod alloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use shoal_node::config::{env_var_name, BOOL_KEYS, CONFIG_KEYS, STRING_KEYS};
use shoal_node::NodeConfig;
use toml::{Table, Value};

const AFTER_HELP: &str = "\
Precedence: command-line flag > SHOAL_* environment variable > configuration file > built-in
default. Every key of the configuration file (see config/shoal.toml) can be set from the
environment as SHOAL_<KEY> with dashes as underscores, e.g. SHOAL_MAXMEMORY_POLICY=allkeys-lfu,
or with --set KEY=VALUE. With no arguments shoald serves one node on 127.0.0.1:6379.";

#[derive(Parser, Debug)]
#[command(name = "shoald", version, about = "Shoal: a Redis-compatible partitioned cache", after_help = AFTER_HELP)]
struct Cli {
    /// TOML configuration file (optional; built-in defaults otherwise).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// RESP port; 0 picks a free one [default: 6379].
    #[arg(long)]
    port: Option<u16>,
    /// Memory limit for the data set, e.g. 512mb or 2gb; 0 = none [default: 1gb].
    #[arg(long, value_name = "SIZE")]
    maxmemory: Option<String>,
    /// Password clients must AUTH with [default: none].
    #[arg(long, value_name = "PASSWORD")]
    requirepass: Option<String>,
    /// error, warn, info, debug or trace [default: info].
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Also serve the Memcached text protocol on this port (0 = any free port) [default: off].
    #[arg(long, value_name = "PORT")]
    memcache_port: Option<u16>,
    /// Any other configuration key, as KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// A string from the environment or a flag, typed by the key it sets.
fn typed(key: &str, v: &str) -> Value {
    if STRING_KEYS.contains(&key) {
        return Value::String(v.to_string());
    }
    if BOOL_KEYS.contains(&key) {
        match v.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => return Value::Boolean(true),
            "false" | "no" | "0" => return Value::Boolean(false),
            _ => {}
        }
    }
    v.parse::<i64>()
        .map(Value::Integer)
        .unwrap_or_else(|_| Value::String(v.to_string()))
}

fn load_config(cli: &Cli) -> Result<NodeConfig, String> {
    let mut table = match &cli.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            text.parse::<Table>()
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => Table::new(),
    };
    for key in CONFIG_KEYS {
        if let Ok(v) = std::env::var(env_var_name(key)) {
            table.insert((*key).to_string(), typed(key, &v));
        }
    }
    for kv in &cli.set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--set expects KEY=VALUE, got '{kv}'"))?;
        if !CONFIG_KEYS.contains(&k) {
            return Err(format!("unknown configuration key '{k}'"));
        }
        table.insert(k.to_string(), typed(k, v));
    }
    let flags: [(&str, Option<Value>); 6] = [
        (
            "memcache-port",
            cli.memcache_port.map(|p| Value::Integer(i64::from(p))),
        ),
        ("bind", cli.bind.clone().map(Value::String)),
        ("port", cli.port.map(|p| Value::Integer(i64::from(p)))),
        (
            "maxmemory",
            cli.maxmemory.as_deref().map(|v| typed("maxmemory", v)),
        ),
        ("requirepass", cli.requirepass.clone().map(Value::String)),
        ("log-level", cli.log_level.clone().map(Value::String)),
    ];
    for (k, v) in flags {
        if let Some(v) = v {
            table.insert(k.to_string(), v);
        }
    }
    let config: NodeConfig = Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| e.to_string())?;
    config.validate()?;
    Ok(config)
}

fn main() -> ExitCode {
    if shoal_node::SIMULATED_NETWORK {
        eprintln!(
            "shoald: this build has the simulation's sockets (the `sim` feature of shoal-net, \
             turned on by building the whole workspace with shoal-sim); build it with \
             `cargo build --release -p shoald`"
        );
        return ExitCode::from(2);
    }
    let cli = Cli::parse();
    let config = match load_config(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shoald: {e}");
            return ExitCode::from(2);
        }
    };
    let level: tracing::Level = config.log_level.parse().unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    #[cfg(feature = "jemalloc")]
    shoal_node::memory::install(Box::new(alloc::Jemalloc));
    // This thread runs the node's background work; the connections run on `threads`
    // workers, one current-thread runtime each (`shoal_node::workers`).
    let threads = match config.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("shoald: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = shoal_node::workers::start(threads) {
        eprintln!("shoald: cannot start the worker threads: {e}");
        return ExitCode::FAILURE;
    }
    if config.gossip() || !config.cluster_nodes.is_empty() {
        // Forwarded requests set timers: see `keep_timers`.
        shoal_node::workers::keep_timers();
    }
    let code = runtime.block_on(run(config, cli.config.map(|p| p.display().to_string())));
    drop(runtime);
    shoal_node::workers::stop();
    code
}

async fn run(config: NodeConfig, file: Option<String>) -> ExitCode {
    use tokio::signal::unix::{signal, SignalKind};
    // Installed before the node starts, so a signal right after the start line is graceful.
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(i)) => (t, i),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!("cannot install signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let maxmemory = config.maxmemory.0;
    let leave_timeout = std::time::Duration::from_millis(config.leave_timeout_ms);
    let policy = config.maxmemory_policy.clone();
    let node = match shoal_node::start(config, file).await {
        Ok(n) => n,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(
        "shoald {} listening on {} (RESP), maxmemory {} bytes ({}), Redis {} compatible",
        shoal_node::SHOAL_VERSION,
        node.local_addr,
        maxmemory,
        policy,
        shoal_node::REDIS_VERSION
    );
    if let Some(addr) = node.metrics_addr {
        tracing::info!("metrics and health checks on http://{addr}/metrics (/healthz, /readyz)");
    }
    let settings = node.node.engine.settings();
    let over_tls = |on: bool| if on { " over TLS" } else { "" };
    if let Some(addr) = node.tls_addr {
        tracing::info!("RESP over TLS listening on {addr} (tls-port)");
    }
    if let Some(addr) = node.memcache_addr {
        tracing::info!(
            "memcached protocol listening on {addr}{}",
            over_tls(settings.tls_memcache)
        );
    }
    if !settings.unixsocket.is_empty() {
        tracing::info!("RESP listening on Unix socket {}", settings.unixsocket);
    }
    if !settings.memcache_unixsocket.is_empty() {
        tracing::info!(
            "memcached protocol listening on Unix socket {}",
            settings.memcache_unixsocket
        );
    }
    if let Some(addr) = node.cluster_client_addr {
        tracing::info!(
            "Redis Cluster clients listening on {addr}{} (cluster-client-port: MOVED, CROSSSLOT)",
            over_tls(settings.tls_cluster)
        );
    }
    let memcached = node.memcache_addr.is_some() || !settings.memcache_unixsocket.is_empty();
    let sockets = !settings.unixsocket.is_empty() || !settings.memcache_unixsocket.is_empty();
    let protected = match (memcached, node.cluster_client_addr.is_some()) {
        (true, _) => "RESP and memcached ports",
        (false, true) => "RESP ports",
        (false, false) => "RESP port",
    };
    let protected = if sockets {
        format!("{protected} and Unix sockets")
    } else {
        protected.to_string()
    };
    if shoal_node::acl::requires_auth(&node.node.engine) {
        tracing::info!("requirepass is set: the {protected} require the password (AUTH; memcached: a set of 'default <password>')");
    } else {
        tracing::info!("no requirepass: the {protected} accept any client");
    }
    if let (Some(addr), Some(cluster)) = (node.cluster_addr, node.node.cluster.as_ref()) {
        let view = cluster.view();
        tracing::info!(
            "cluster '{}' as node '{}': inter-node protocol on {addr}{}, {} members, {} copies of each key",
            cluster.name,
            cluster.me().name,
            over_tls(settings.tls_cluster),
            view.len(),
            view.placement.width()
        );
    }
    if let Some(addr) = node.gossip_addr {
        tracing::info!("gossip on {addr} (UDP), state joining");
    }
    let by_client = tokio::select! {
        _ = term.recv() => false,
        _ = int.recv() => false,
        _ = node.stopping() => {
            tracing::info!("SHUTDOWN requested by a client");
            true
        }
    };
    if !by_client && node.gossip_addr.is_some() {
        // Hand every slot to its successors first; a second signal or the deadline cuts it
        // short.
        let deadline = tokio::time::Instant::now() + leave_timeout;
        tokio::select! {
            _ = node.leave(deadline) => {}
            _ = term.recv() => tracing::warn!("second signal: exiting before the hand-off completed"),
            _ = int.recv() => tracing::warn!("second signal: exiting before the hand-off completed"),
        }
    }
    tracing::info!("shutting down: no new connections, answering what was read");
    node.shutdown();
    node.wait().await;
    ExitCode::SUCCESS
}
