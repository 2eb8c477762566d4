//! Shoal's engine: one node's semantics and nothing else: no ring, no peers, no runtime.
//!
//! Where to look:
//! - `cmd`: the command table (one row a command: arity, flags, key specification, routing
//!   tip, handler) and one module per command family; this is where a command's arguments
//!   are parsed and its Redis semantics live, on top of `shoal-store`. `cmd::prepare` checks
//!   a request, `cmd::run` runs it here.
//! - `mc`: the Memcached commands' semantics on the same store.
//! - `blocking`: which clients wait on which keys (BLPOP and the other blocking commands).
//! - `engine`: the state every connection shares (store, settings, clients, stats).
//! - `hooks`: what the engine asks of the layer above it (the cluster for CLUSTER and INFO,
//!   SHUTDOWN), as traits that layer implements (and `notify::EventSink`, where keyspace
//!   notifications go beyond this node).
//! - `config`: every setting with its default; `client`: CLIENT LIST/KILL bookkeeping;
//!   `stats`, `memory` (the allocator's figures and the store's limit), `clock`, `fdlimit`;
//!   `cmdstats`: INFO commandstats and errorstats, and the slow log; `latency`: the
//!   latency monitor (LATENCY); `notify`: keyspace notifications' classes and channels;
//!   `rdb`: DUMP's payload (Redis's RDB form of one value), written and read; `tracking`:
//!   client-side caching (CLIENT TRACKING), who read what and their invalidations.

pub mod acl;
pub mod blocking;
pub mod busy;
pub mod client;
pub mod clock;
pub mod cmd;
pub mod cmdstats;
pub mod config;
pub mod copying;
pub mod engine;
pub mod fdlimit;
pub mod functions;
pub mod hooks;
pub mod latency;
pub mod lazyfree;
pub mod longdouble;
pub mod mc;
pub mod memory;
pub mod notify;
pub mod pause;
pub mod prefixes;
pub mod pubsub;
pub mod rdb;
pub mod saves;
pub mod scripts;
pub mod snapshot;
pub mod stats;
pub mod tracking;

pub use config::{ByteSize, ClassLimit, NodeConfig, OutputBufferLimits};
pub use engine::{Engine, Snapshot};

/// The Redis release whose behaviour Shoal follows; INFO and HELLO report it.
pub const REDIS_VERSION: &str = "7.2.4";
/// Shoal's own version.
pub const SHOAL_VERSION: &str = env!("CARGO_PKG_VERSION");
