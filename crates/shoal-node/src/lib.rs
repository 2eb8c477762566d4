//! Shoal's node: listeners, the connection I/O loop, and the two front ends, on top of the
//! cluster layer (`shoal-cluster`) and the engine (`shoal-engine`).
//!
//! Layout (where to look):
//! - `listener`: the accept loops (clients, Memcached, inter-node), `maxclients`, the cron
//!   task (active expiry, memory, stats), and graceful shutdown (`start` / `RunningNode`).
//! - `connection`: one task per client: read, let the front end handle every complete
//!   request, keep replies in request order, write them out within the output limits.
//! - `resp`: the Redis protocol front end: parses RESP (`shoal-resp`), hands each request to
//!   `shoal_cluster::router::dispatch`, encodes the replies.
//! - `memcache`: the Memcached text protocol front end; its commands run in
//!   `shoal_engine::mc`.
//! - `tls`: the `tls-*` settings loaded (and reloaded on CONFIG SET) through `shoal-tls`;
//!   TLS listeners and links hand `shoal_tls::Stream`s to the same loops as plain TCP.
//! - `metrics`: the metrics port: Prometheus metrics read from the node's counters at
//!   scrape time, and the health checks.
//!
//! - `hangup`: which clients' peers closed before their worker noticed (INFO, CLIENT LIST).
//! - `workers`: the daemon's per-core runtimes; accept loops hand each connection to one.
//! - `moved`: the thread a client's long script moves to, so that its worker serves the
//!   others meanwhile; `paused`: what CLIENT PAUSE holds waits there.
//!
//! Task model: one tokio task per connection plus one cron task; shared state is behind
//! short `std::sync` locks and atomics, never held across an `.await`. In the daemon each
//! connection's task stays on one worker thread's runtime (`workers`).

pub mod connection;
pub mod hangup;
pub mod listener;
pub mod memcache;
pub mod metrics;
pub mod moved;
pub mod paused;
pub mod resp;
pub mod signals;
pub mod status;
pub mod tls;
pub mod workers;

pub use listener::{start, start_with, Listeners, RunningNode, StartError};
pub use shoal_cluster::Server;
pub use shoal_engine::cmd::acl;
pub use shoal_engine::{
    clock, config, memory, ByteSize, ClassLimit, Engine, NodeConfig, OutputBufferLimits,
    REDIS_VERSION, SHOAL_VERSION,
};
/// True in a build with the whole-cluster simulation's sockets (`shoal_net::SIMULATED`).
pub use shoal_net::SIMULATED as SIMULATED_NETWORK;
