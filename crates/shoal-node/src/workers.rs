//! Per-core runtimes (`threads`): the daemon runs one current-thread tokio runtime per worker
//! thread, and each connection lives on one of them for its whole life, as a memcached
//! connection lives on one of its worker threads. A request's read, run and reply then never
//! wake another thread; with tokio's work-stealing runtime, waking an idle worker for each
//! new event (`try_to_wake_up`, `futex`) was about a fifth of a node's CPU at 4 clients.
//!
//! The thread that runs the node (`shoald`'s main thread, Redis's "main thread", io-thread 0)
//! serves no connection: it runs the cron, gossip and membership, the hand-off and the
//! accept loops, which hand each accepted connection, client or inter-node, to the worker
//! serving the fewest ([`spawn`]; workers are numbered from 1). A long command (KEYS, a
//! large DEL) then holds up only its worker's connections, as it would a single-threaded
//! Redis, never the node's gossip. A peer's replication sender runs on the worker of the
//! first write to it (`shoal_cluster::replicate::Queue`; on the main thread every
//! replicated write woke it, +24 % CPU per SET through a cluster node), so a long command
//! on that worker does delay replication to that peer. Each thread has
//! its own link to each other node (`shoal_wire::use_link`), so a request a worker forwards,
//! and its answer, stay on its thread. Without [`start`] (nodes run in-process by tests, the
//! simulation) connections stay on the runtime that accepted them.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use shoal_net::TcpStream;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

static WORKERS: OnceLock<Workers> = OnceLock::new();

struct Workers {
    seats: Vec<Seat>,
    /// Where the search for the least busy seat starts (ties go round).
    next: AtomicUsize,
    stop: CancellationToken,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

struct Seat {
    handle: Handle,
    /// Connections this worker serves now.
    live: Arc<AtomicUsize>,
}

/// Starts `count` workers (at least one), each a current-thread runtime on its own thread.
/// Once per process, before the node starts (its links are sized by it); `Err` when a
/// runtime or thread cannot be made (or workers exist already).
pub fn start(count: usize) -> std::io::Result<()> {
    let count = count.max(1);
    // Link 0 for the main thread, one for each worker.
    shoal_wire::set_links(count + 1);
    let stop = CancellationToken::new();
    let mut seats = Vec::with_capacity(count);
    let mut threads = Vec::with_capacity(count);
    for i in 1..=count {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        seats.push(Seat {
            handle: runtime.handle().clone(),
            live: Arc::default(),
        });
        let stop = stop.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("shoal-worker-{i}"))
                .spawn(move || {
                    // This worker's requests to other nodes go on its own links.
                    shoal_wire::use_link(i);
                    runtime.block_on(stop.cancelled())
                })?,
        );
    }
    let workers = Workers {
        seats,
        next: AtomicUsize::new(0),
        stop,
        threads: Mutex::new(threads),
    };
    WORKERS
        .set(workers)
        .map_err(|_| std::io::Error::other("the worker runtimes are started already"))
}

/// Stops the workers' runtimes (their remaining tasks are dropped) and waits for their
/// threads. Call after the node stopped serving, outside any runtime.
pub fn stop() {
    let Some(w) = WORKERS.get() else {
        return;
    };
    w.stop.cancel();
    let threads = std::mem::take(&mut *w.threads.lock().unwrap_or_else(|e| e.into_inner()));
    for t in threads {
        let _ = t.join();
    }
}

/// Worker threads serving connections: those [`start`] made, or `None` without them.
pub fn count() -> Option<usize> {
    WORKERS.get().map(|w| w.seats.len())
}

/// Serves the accepted `stream` with `serve` on the worker serving the fewest connections,
/// tracked by `tracker`; on the caller's runtime without workers (or when the stream cannot
/// move). `serve` is told the worker's number (from 1; 0 for the caller's runtime).
pub fn spawn<F, Fut>(tracker: &TaskTracker, stream: TcpStream, serve: F)
where
    F: FnOnce(TcpStream, usize) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(w) = WORKERS.get() else {
        tracker.spawn(serve(stream, 0));
        return;
    };
    let detached = match shoal_net::detach(stream) {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "cannot hand a connection to a worker; closed");
            return;
        }
        Err(stream) => {
            tracker.spawn(serve(*stream, 0));
            return;
        }
    };
    let loads: Vec<usize> = w
        .seats
        .iter()
        .map(|s| s.live.load(Ordering::Relaxed))
        .collect();
    let index = least_busy(&loads, w.next.fetch_add(1, Ordering::Relaxed));
    let seat = &w.seats[index];
    let number = index + 1;
    let live = Live::new(seat.live.clone());
    seat.handle.spawn(tracker.track_future(async move {
        let _live = live;
        match shoal_net::attach(detached) {
            Ok(stream) => serve(stream, number).await,
            Err(e) => tracing::warn!(error = %e, "a worker cannot take a connection; closed"),
        }
    }));
}

/// The seat with the fewest connections; among equals the first at or after `from`
/// (modulo their number), so that ties go round (pure).
fn least_busy(loads: &[usize], from: usize) -> usize {
    let n = loads.len();
    (0..n)
        .map(|i| (from + i) % n)
        .min_by_key(|&i| loads[i])
        .unwrap_or(0)
}

/// One connection counted at its worker while it lives.
struct Live(Arc<AtomicUsize>);

impl Live {
    fn new(count: Arc<AtomicUsize>) -> Live {
        count.fetch_add(1, Ordering::Relaxed);
        Live(count)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::least_busy;

    #[test]
    fn a_connection_goes_to_the_least_busy_worker_and_ties_go_round() {
        assert_eq!(least_busy(&[3, 1, 2], 0), 1);
        assert_eq!(least_busy(&[3, 1, 2], 2), 1);
        assert_eq!(least_busy(&[0, 0, 0], 0), 0);
        assert_eq!(least_busy(&[0, 0, 0], 1), 1);
        assert_eq!(least_busy(&[0, 0, 0], 5), 2);
        assert_eq!(least_busy(&[1, 0, 0], 0), 1);
        assert_eq!(least_busy(&[0], 7), 0);
    }
}
