//! Per-core runtimes (`threads`): the daemon runs one current-thread tokio runtime per worker
//! thread, and each connection lives on one of them, as a memcached connection lives on one
//! of its worker threads (unless [`Affinity`] moves it to the worker of the hot key it works
//! on, or of transactions, between two of its requests). A request's read, run and reply then never
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
use shoal_tls::Stream;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

static WORKERS: OnceLock<Workers> = OnceLock::new();

/// A connection that can leave the runtime that accepted it for a worker's.
pub trait Movable: Sized + Send + 'static {
    type Detached: Send + 'static;
    /// Takes it off its runtime's I/O driver (`Err` with it when it cannot move: a simulated
    /// socket, a TLS session); the inner error is the OS's.
    fn detach(self) -> Result<std::io::Result<Self::Detached>, Box<Self>>;
    /// Registers a detached connection with the current runtime (call inside it).
    fn attach(detached: Self::Detached) -> std::io::Result<Self>;
}

impl Movable for TcpStream {
    type Detached = shoal_net::Detached;

    fn detach(self) -> Result<std::io::Result<Self::Detached>, Box<Self>> {
        shoal_net::detach(self)
    }

    fn attach(detached: Self::Detached) -> std::io::Result<Self> {
        shoal_net::attach(detached)
    }
}

/// A client's [`Stream`] off its runtime: TCP or a Unix socket (a TLS session stays where
/// its handshake ran).
pub enum DetachedStream {
    Tcp(shoal_net::Detached),
    Unix(std::os::unix::net::UnixStream),
}

impl Movable for Stream {
    type Detached = DetachedStream;

    fn detach(self) -> Result<std::io::Result<DetachedStream>, Box<Self>> {
        match self {
            Stream::Plain(s) => match shoal_net::detach(s) {
                Ok(d) => Ok(d.map(DetachedStream::Tcp)),
                Err(s) => Err(Box::new(Stream::Plain(*s))),
            },
            Stream::Unix(s) => Ok(s.into_std().map(DetachedStream::Unix)),
            tls @ Stream::Tls(_) => Err(Box::new(tls)),
        }
    }

    fn attach(detached: DetachedStream) -> std::io::Result<Self> {
        match detached {
            DetachedStream::Tcp(s) => shoal_net::attach(s).map(Stream::Plain),
            DetachedStream::Unix(s) => shoal_net::UnixStream::from_std(s).map(Stream::Unix),
        }
    }
}

struct Workers {
    seats: Vec<Seat>,
    /// Where the search for the least busy seat starts (ties go round).
    next: AtomicUsize,
    stop: CancellationToken,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

struct Seat {
    handle: Handle,
    /// Its thread, which a busy script may hold ([`spawn`] then sends no one there).
    thread: std::thread::ThreadId,
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
        let handle = runtime.handle().clone();
        let stop = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("shoal-worker-{i}"))
            .spawn(move || {
                // This worker's requests to other nodes go on its own links.
                shoal_wire::use_link(i);
                runtime.block_on(stop.cancelled())
            })?;
        seats.push(Seat {
            handle,
            thread: thread.thread().id(),
            live: Arc::default(),
        });
        threads.push(thread);
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

/// Keeps a timer on every worker's timer wheel (`keep_a_timer`), for a node that
/// forwards requests to other nodes. Not for a single node: a worker with a timer waits in
/// `epoll_wait` with a timeout, which arms and cancels a kernel timer each time (a few per
/// cent of the CPU per unpipelined request), and a single node's requests set no timers.
pub fn keep_timers() {
    if let Some(w) = WORKERS.get() {
        for seat in &w.seats {
            seat.handle.spawn(keep_a_timer());
        }
    }
}

/// Keeps a timer on the runtime's timer wheel that ends before any inter-node request's
/// timeout would, for ever (one wake-up of the worker every [`WHEEL_TICK`]).
///
/// tokio's time driver notes when it must wake next only when it parks or fires timers,
/// and a timer registered afterwards that ends before that noted time (or with nothing
/// noted: the wheel was empty) writes to the runtime's eventfd to wake the driver, though
/// the driver runs on this very thread and looks at the wheel before it sleeps again.
/// Every forwarded command registers a timer (its request's timeout), so a worker that had
/// nothing in flight when it last parked paid a `write` system call for each one it
/// forwarded in the next turn: about one per forwarded command at pipeline 16 through a
/// cluster node. With this timer on the wheel the noted time is at most a tick away, and a
/// request's timer, which ends later, wakes nothing (a request timeout shorter than the
/// tick only costs the writes again).
async fn keep_a_timer() {
    loop {
        tokio::time::sleep(WHEEL_TICK).await;
    }
}

/// The period of [`keep_a_timer`]: shorter than the inter-node request timeouts (seconds by
/// default), as rare as Redis's 10 Hz cron.
const WHEEL_TICK: std::time::Duration = std::time::Duration::from_millis(100);

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

/// True unless worker `number` (from 1) is known to serve one connection alone.
pub fn shared(number: usize) -> bool {
    WORKERS
        .get()
        .and_then(|w| w.seats.get(number.checked_sub(1)?))
        .is_none_or(|seat| seat.live.load(Ordering::Relaxed) > 1)
}

/// Serves the accepted `stream` with `serve` on the worker serving the fewest connections,
/// tracked by `tracker`; on the caller's runtime without workers (or when the stream cannot
/// move). `serve` is told the worker's number (from 1; 0 for the caller's runtime).
/// `stuck`: the thread a busy script holds (its connections wait for the script), which
/// gets no new connection; with no other worker the caller's runtime (the main thread)
/// serves it, so a client can still send SCRIPT KILL.
pub fn spawn<S: Movable, F, Fut>(
    tracker: &TaskTracker,
    stream: S,
    stuck: Option<std::thread::ThreadId>,
    serve: F,
) where
    F: FnOnce(S, usize) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(w) = WORKERS.get() else {
        tracker.spawn(serve(stream, 0));
        return;
    };
    let loads: Vec<Option<usize>> = w
        .seats
        .iter()
        .map(|s| (Some(s.thread) != stuck).then(|| s.live.load(Ordering::Relaxed)))
        .collect();
    match least_busy(&loads, w.next.fetch_add(1, Ordering::Relaxed)) {
        Some(index) => spawn_at(w, index, tracker, stream, serve),
        None => {
            tracker.spawn(serve(stream, 0));
        }
    }
}

/// Serves `stream` with `serve` on worker `number` (from 1), as [`spawn`] does on the one it
/// picks: a connection moving to another worker ([`Affinity`]). On the caller's runtime
/// without workers, or when there is no such worker.
pub fn spawn_on<S: Movable, F, Fut>(number: usize, tracker: &TaskTracker, stream: S, serve: F)
where
    F: FnOnce(S, usize) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    match WORKERS.get() {
        Some(w) if (1..=w.seats.len()).contains(&number) => {
            spawn_at(w, number - 1, tracker, stream, serve)
        }
        _ => {
            tracker.spawn(serve(stream, 0));
        }
    }
}

fn spawn_at<S: Movable, F, Fut>(
    w: &Workers,
    index: usize,
    tracker: &TaskTracker,
    stream: S,
    serve: F,
) where
    F: FnOnce(S, usize) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let detached = match stream.detach() {
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
    let seat = &w.seats[index];
    let number = index + 1;
    let live = Live::new(seat.live.clone());
    seat.handle.spawn(tracker.track_future(async move {
        let _live = live;
        match S::attach(detached) {
            Ok(stream) => serve(stream, number).await,
            Err(e) => tracing::warn!(error = %e, "a worker cannot take a connection; closed"),
        }
    }));
}

/// The seat with the fewest connections among those open (`Some`); among equals the first
/// at or after `from` (modulo their number), so that ties go round; `None` when none is
/// open (pure).
fn least_busy(loads: &[Option<usize>], from: usize) -> Option<usize> {
    let n = loads.len();
    (0..n)
        .map(|i| (from + i) % n)
        .filter_map(|i| loads[i].map(|load| (i, load)))
        .min_by_key(|&(_, load)| load)
        .map(|(i, _)| i)
}

/// The worker (from 1, of `workers`) that [`Affinity`] sends a hot shard's connections to.
pub fn home(shard: u16, workers: usize) -> usize {
    usize::from(shard) % workers.max(1) + 1
}

/// The worker [`Affinity`] sends the connections that often run transactions to.
pub const TRANSACTIONS_HOME: usize = 1;

/// Commands a connection runs before [`Affinity`] looks at what they met.
const AFFINITY_WINDOW: u64 = 256;
/// A window's commands move their connection when at least one in this many took their
/// shard over from another thread (in one run of hand-overs of one shard).
const AFFINITY_SHARE: u64 = 16;
/// A connection moves at most once in this long (ms).
const AFFINITY_COOLDOWN_MS: u64 = 1_000;

/// Where a connection should be served. A key that connections on several workers work on
/// at once (one counter, one list, one leaderboard) makes its shard's lock, and its data,
/// change threads for nearly every command: at pipeline 16, one hot key cost two workers
/// up to nearly twice the CPU per request of one (ZADD; HSET a third more, LPUSH even; see
/// the README's Performance). A connection whose
/// commands keep taking one shard over from another thread moves to that shard's [`home`]
/// worker, so all the connections of a hot key end up on one thread, as they would on a
/// single-threaded Redis, while connections spread over many keys stay spread (their
/// hand-overs are of ever other shards and never add up). Transactions (EXEC, scripts)
/// keep every other thread out while they run (`shoal_store::gate`), so two workers that
/// run them side by side wake each other for each one: scripts from 50 clients on two
/// workers cost three times the CPU of Redis's, most of it in `futex` wake-ups. A
/// connection whose commands are often transactions moves to [`TRANSACTIONS_HOME`], where
/// they run one after another without waking anyone. Pure: fed with what the store
/// counted ([`shoal_store::take_contention`]); the I/O loop moves the connection.
#[derive(Debug, Default)]
pub struct Affinity {
    commands: u64,
    /// Hand-overs of `shard` in this window, since they moved to it.
    handovers: u32,
    /// Transactions this window's commands ran.
    exclusive: u32,
    shard: u16,
    /// No move before this (Unix ms).
    settled_until: u64,
}

impl Affinity {
    /// Counts a batch of `commands` and the hand-overs they met.
    pub fn observe(&mut self, commands: u64, met: shoal_store::Contention) {
        self.commands += commands;
        self.exclusive = self.exclusive.saturating_add(met.exclusive);
        if met.handovers > 0 {
            if met.shard != self.shard {
                self.handovers = 0;
                self.shard = met.shard;
            }
            self.handovers = self.handovers.saturating_add(met.handovers);
        }
    }

    /// At the end of a window of commands: the worker to move to, when the window's
    /// commands ran transactions often enough ([`TRANSACTIONS_HOME`]), or else took one
    /// shard over often enough (that shard's [`home`]), and that is not `worker` (of
    /// `workers`). Starts a new window.
    pub fn decide(&mut self, now_ms: u64, worker: usize, workers: usize) -> Option<usize> {
        if self.commands < AFFINITY_WINDOW {
            return None;
        }
        let transactions = u64::from(self.exclusive) * AFFINITY_SHARE >= self.commands;
        let hot = u64::from(self.handovers) * AFFINITY_SHARE >= self.commands;
        let to = match transactions {
            true => TRANSACTIONS_HOME,
            false => home(self.shard, workers),
        };
        self.commands = 0;
        self.handovers = 0;
        self.exclusive = 0;
        if !(transactions || hot) || to == worker || workers < 2 || now_ms < self.settled_until {
            return None;
        }
        self.settled_until = now_ms.saturating_add(AFFINITY_COOLDOWN_MS);
        Some(to)
    }
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
    use super::{
        home, least_busy, Affinity, AFFINITY_COOLDOWN_MS, AFFINITY_WINDOW, TRANSACTIONS_HOME,
    };
    use shoal_store::Contention;

    fn met(handovers: u32, shard: u16) -> Contention {
        Contention {
            handovers,
            shard,
            exclusive: 0,
        }
    }

    fn ran(exclusive: u32) -> Contention {
        Contention {
            exclusive,
            ..Contention::default()
        }
    }

    #[test]
    fn a_connection_that_often_runs_transactions_moves_to_their_home() {
        let mut a = Affinity::default();
        a.observe(AFFINITY_WINDOW, ran(AFFINITY_WINDOW as u32 / 16));
        assert_eq!(a.decide(10_000, 2, 2), Some(TRANSACTIONS_HOME));
        // Ahead of a hot shard whose home is elsewhere.
        a.observe(AFFINITY_WINDOW, met(200, 7));
        a.observe(0, ran(AFFINITY_WINDOW as u32));
        assert_eq!(a.decide(20_000, 2, 2), Some(TRANSACTIONS_HOME));
        // Home already, or too few of them: it stays.
        a.observe(AFFINITY_WINDOW, ran(AFFINITY_WINDOW as u32));
        assert_eq!(a.decide(30_000, TRANSACTIONS_HOME, 2), None);
        a.observe(AFFINITY_WINDOW, ran(AFFINITY_WINDOW as u32 / 16 - 1));
        assert_eq!(a.decide(40_000, 2, 2), None);
        // One worker: nowhere to go.
        a.observe(AFFINITY_WINDOW, ran(AFFINITY_WINDOW as u32));
        assert_eq!(a.decide(50_000, 1, 1), None);
    }

    #[test]
    fn a_connection_that_keeps_waiting_for_one_shard_moves_to_its_home() {
        let mut a = Affinity::default();
        // Not before a window's worth of commands.
        a.observe(AFFINITY_WINDOW - 1, met(200, 7));
        assert_eq!(a.decide(10_000, 1, 2), None);
        a.observe(1, met(0, 0));
        // Shard 7's home of two workers is worker 2.
        assert_eq!(home(7, 2), 2);
        assert_eq!(a.decide(10_000, 1, 2), Some(2));
        // Moved: not again within the cooldown, whatever the commands meet.
        a.observe(AFFINITY_WINDOW, met(200, 8));
        assert_eq!(a.decide(10_000 + AFFINITY_COOLDOWN_MS - 1, 2, 2), None);
        a.observe(AFFINITY_WINDOW, met(200, 8));
        assert_eq!(a.decide(10_000 + AFFINITY_COOLDOWN_MS, 2, 2), Some(1));
    }

    #[test]
    fn rare_or_scattered_handovers_or_the_home_itself_keep_a_connection_where_it_is() {
        let mut a = Affinity::default();
        // One hand-over in 17 commands is under the share.
        a.observe(17 * 20, met(19, 7));
        assert_eq!(a.decide(0, 1, 2), None);
        // Hand-overs of ever other shards never add up.
        for shard in 0..AFFINITY_WINDOW as u16 {
            a.observe(1, met(1, shard));
        }
        assert_eq!(a.decide(0, 1, 2), None);
        // Already home.
        a.observe(AFFINITY_WINDOW, met(200, 6));
        assert_eq!(a.decide(0, 1, 2), None);
        // One worker: nowhere to go.
        a.observe(AFFINITY_WINDOW, met(200, 7));
        assert_eq!(a.decide(0, 1, 1), None);
        // The window starts again after each decision: the hand-overs above are forgotten.
        a.observe(AFFINITY_WINDOW, met(1, 7));
        assert_eq!(a.decide(0, 1, 2), None);
    }

    #[test]
    fn homes_spread_shards_over_the_workers() {
        assert_eq!(home(0, 3), 1);
        assert_eq!(home(1, 3), 2);
        assert_eq!(home(5, 3), 3);
        assert_eq!(home(1023, 1), 1);
        assert_eq!(home(4, 0), 1);
    }

    #[test]
    fn a_connection_goes_to_the_least_busy_worker_and_ties_go_round() {
        let open = |loads: &[usize]| loads.iter().map(|&l| Some(l)).collect::<Vec<_>>();
        assert_eq!(least_busy(&open(&[3, 1, 2]), 0), Some(1));
        assert_eq!(least_busy(&open(&[3, 1, 2]), 2), Some(1));
        assert_eq!(least_busy(&open(&[0, 0, 0]), 0), Some(0));
        assert_eq!(least_busy(&open(&[0, 0, 0]), 1), Some(1));
        assert_eq!(least_busy(&open(&[0, 0, 0]), 5), Some(2));
        assert_eq!(least_busy(&open(&[1, 0, 0]), 0), Some(1));
        assert_eq!(least_busy(&open(&[0]), 7), Some(0));
        // The worker a busy script holds is passed over, however idle; none left: none.
        assert_eq!(least_busy(&[Some(5), None, Some(9)], 0), Some(0));
        assert_eq!(least_busy(&[None, Some(7)], 0), Some(1));
        assert_eq!(least_busy(&[None], 0), None);
    }
}
