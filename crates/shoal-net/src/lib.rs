//! Shoal's sockets. Every crate that opens a socket takes its types from here: tokio's
//! (`tokio::net`, re-exported unchanged) in the daemon and every test, or with the `sim`
//! feature turmoil's simulated network, so the whole-cluster simulation
//! (`crates/shoal-sim`) runs the real node code over a network it can delay, drop,
//! reorder and partition.
//!
//! The simulated types offer the subset of tokio's API that Shoal uses, with the same
//! signatures: a simulated TCP write never blocks (turmoil queues it), so the non-blocking
//! write takes everything and writability is always ready.

#[cfg(not(feature = "sim"))]
pub use tokio::net::{lookup_host, tcp, TcpListener, TcpStream, UdpSocket};

#[cfg(feature = "sim")]
mod sim;
#[cfg(feature = "sim")]
pub use sim::{faults, lookup_host, tcp, TcpListener, TcpStream, UdpSocket};
