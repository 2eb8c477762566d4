//! Shoal's node: everything that turns the leaf crates into a running cache node.
//!
//! Layout (where to look):
//! - `listener`: the accept loop, `maxclients`, the cron task (active expiry, stats), and
//!   graceful shutdown (`start` / `RunningNode`).
//! - `connection`: one task per client: read, parse every complete request (`shoal-resp`),
//!   execute, encode replies for the connection's protocol, flush once per batch.
//! - `cmd`: the command table and one module per command family; this is where a command's
//!   arguments are parsed and its Redis semantics live, on top of `shoal-store`.
//! - `engine`: one node's data and settings, shared by every connection (store, settings,
//!   clients, stats); `hooks` is what it asks of the layer above (cluster info, shutdown).
//! - `cluster::Server`: the engine plus its cluster (if any) and shutdown signal; what the
//!   listener, connections and the cluster layer hold.
//! - `cluster`: the data path across nodes: `cluster::router` decides where each command
//!   runs (here, at the key's owner, split by owner, or fanned out); `cluster::peer` serves
//!   what other nodes send; `cluster::replicate` copies writes to the replicas. Placement is
//!   `shoal-ring`, the inter-node protocol `shoal-wire`.
//! - `memcache`: the Memcached text protocol front end on the same store.
//! - `config`: every setting with its default; `client`: CLIENT LIST/KILL bookkeeping.
//!
//! Task model: one tokio task per connection plus one cron task; shared state is behind
//! short `std::sync` locks and atomics, never held across an `.await`.

pub mod client;
pub mod clock;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod connection;
pub mod engine;
pub mod fdlimit;
pub mod hooks;
pub mod listener;
pub mod mc;
pub mod memcache;
pub mod memory;
pub mod resp;
pub mod stats;

pub use cluster::Server;
pub use config::{ByteSize, ClassLimit, NodeConfig, OutputBufferLimits};
pub use engine::Engine;
pub use listener::{start, start_with, Listeners, RunningNode, StartError};

/// The Redis release whose behaviour Shoal follows; INFO and HELLO report it.
pub const REDIS_VERSION: &str = "7.2.4";
/// Shoal's own version.
pub const SHOAL_VERSION: &str = env!("CARGO_PKG_VERSION");
