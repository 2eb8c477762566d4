//! Connected clients as CLIENT LIST / KILL / INFO see them.
//!
//! Each connection registers a `ClientInfo` and keeps an `Arc` to it; the registry holds the
//! others'. Fields another task reads are atomics or short mutexes; the connection itself is
//! the only writer.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::clock::now_ms;

/// What the engine asks of a connection's I/O loop, through the [`SignalFn`] it registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// CLIENT KILL (`ClientInfo::kill`) or the node's shutdown (`ClientInfo::stop`): close
    /// at the next turn.
    Stop,
    /// Idle for [`TRIM_IDLE_MS`]: give the empty input and output buffers back.
    Trim,
}

/// How the engine signals a connection (it has no runtime: the front end says how).
pub type SignalFn = Box<dyn Fn(Signal) + Send + Sync>;

/// Which of these sockets (descriptors; -1 = none) the peer has closed with nothing left to
/// read, as the front end can tell without reading (the engine has no sockets):
/// `closed[i]` for `fds[i]`.
pub type HangupProbe = fn(fds: &[i32], closed: &mut [bool]);

/// A connection idle this long gives its buffers back, as Redis frees an idle client's query
/// buffer after 2 s (`clientsCronResizeQueryBuffer`).
pub const TRIM_IDLE_MS: u64 = 2000;

/// Whether a connection last active at `last_ms`, holding `buffer_bytes` of buffers, is asked
/// to give them back at `now_ms`: idle for [`TRIM_IDLE_MS`] and not `busy` (blocked: its
/// command ends with a reply that needs the output buffer; or holding part of a request,
/// whose buffer is not empty).
pub fn trim_due(last_ms: u64, now_ms: u64, buffer_bytes: u64, busy: bool) -> bool {
    !busy && buffer_bytes > 0 && now_ms.saturating_sub(last_ms) >= TRIM_IDLE_MS
}

/// Where a client is connected: a TCP address, or a Unix socket (Redis's `unixsocket`,
/// memcached's `-s`), known by the listening socket's path on both ends as in Redis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientAddr {
    Tcp(SocketAddr),
    Unix(Arc<str>),
}

impl ClientAddr {
    /// On this machine: a loopback address or a Unix socket (Redis's `islocalClient`).
    pub fn is_local(&self) -> bool {
        match self {
            ClientAddr::Tcp(a) => a.ip().to_canonical().is_loopback(),
            ClientAddr::Unix(_) => true,
        }
    }

    pub fn is_unix(&self) -> bool {
        matches!(self, ClientAddr::Unix(_))
    }

    /// As MONITOR shows the client: `ip:port`, or `unix:<path>` (Redis's form).
    pub fn monitor_text(&self) -> String {
        match self {
            ClientAddr::Tcp(a) => a.to_string(),
            ClientAddr::Unix(path) => format!("unix:{path}"),
        }
    }

    /// As memcached's `stats conns` shows it: `tcp:ip:port`, `tcp6:[ip]:port`, `unix:<path>`.
    pub fn memcached_text(&self) -> String {
        match self {
            ClientAddr::Tcp(a @ SocketAddr::V4(_)) => format!("tcp:{a}"),
            ClientAddr::Tcp(a) => format!("tcp6:{a}"),
            ClientAddr::Unix(path) => format!("unix:{path}"),
        }
    }
}

/// CLIENT LIST's `addr=` / `laddr=` and CLIENT KILL's ADDR: `ip:port`, or `<path>:0` for a
/// Unix socket, as Redis writes them.
impl std::fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientAddr::Tcp(a) => a.fmt(f),
            ClientAddr::Unix(path) => write!(f, "{path}:0"),
        }
    }
}

impl From<SocketAddr> for ClientAddr {
    fn from(a: SocketAddr) -> ClientAddr {
        ClientAddr::Tcp(a)
    }
}

/// [`ClientInfo::modes`]: the client tracks (CLIENT LIST's flag `t`).
pub const TRACKING: u8 = 1;
/// [`ClientInfo::modes`]: tracking in BCAST mode (flag `B`).
pub const TRACKING_BCAST: u8 = 2;
/// [`ClientInfo::modes`]: a MONITOR (flag `O`).
pub const MONITOR: u8 = 4;
/// [`ClientInfo::modes`]: READONLY on a cluster (flag `r`).
pub const READONLY: u8 = 8;

/// What other tasks may read of one connection.
pub struct ClientInfo {
    pub id: u64,
    pub addr: ClientAddr,
    pub laddr: ClientAddr,
    /// The socket's descriptor (-1 until the front end sets it, or where there is none).
    pub fd: AtomicI32,
    pub created_ms: u64,
    pub last_interaction_ms: AtomicU64,
    /// 2 or 3.
    pub resp: AtomicU8,
    /// The selected database (SELECT).
    pub db: AtomicU8,
    pub name: Mutex<Option<Bytes>>,
    /// The ACL user it is logged in as (CLIENT LIST's `user=`, CLIENT KILL USER).
    pub user: Mutex<Bytes>,
    pub lib_name: Mutex<Option<Bytes>>,
    pub lib_ver: Mutex<Option<Bytes>>,
    /// Index in the command table of the last command run, for CLIENT LIST's `cmd=`
    /// (`usize::MAX` before the first).
    pub last_cmd: AtomicUsize,
    pub no_evict: AtomicBool,
    /// CLIENT NO-TOUCH: its commands leave the LRU/LFU clocks of their keys alone.
    pub no_touch: AtomicBool,
    /// Modes CLIENT LIST shows as flags: [`TRACKING`], [`TRACKING_BCAST`], [`MONITOR`],
    /// [`READONLY`] bits ([`ClientInfo::set_mode`]); and the tracking's redirect target (0:
    /// none; `redir=` shows it while tracking).
    pub modes: AtomicU8,
    pub redirect: AtomicU64,
    /// The connection came in on the cluster-client port (Redis Cluster's rules).
    pub redis_cluster: AtomicBool,
    /// Signals the connection (CLIENT KILL stops it, the cron asks an idle one to trim its
    /// buffers); given by the front end that registered it.
    signal: SignalFn,
    /// Set by CLIENT KILL: a killed connection drops even the replies it has not sent, a
    /// connection stopped by shutdown delivers them first.
    pub killed: AtomicBool,
    /// Its connection ended: the front end sets it before the socket is closed, so a
    /// descriptor number reused meanwhile is never taken for this client's
    /// ([`ClientRegistry::connected`]).
    pub closing: AtomicBool,
    /// The connection's buffers and transaction, as it last published them.
    pub buffers: Buffers,
    /// Its bytes in the registry's sum of all clients' memory ([`ClientRegistry::account`]).
    counted: AtomicU64,
    /// A blocking command of this client is waiting (CLIENT LIST's flag `b`).
    pub blocked: AtomicBool,
    /// CLIENT UNBLOCK asked its wait to end: [`UNBLOCK_TIMEOUT`] or [`UNBLOCK_ERROR`]
    /// (0: not asked).
    pub unblock: AtomicU8,
    /// The worker thread serving the connection (CLIENT LIST's `io-thread`, as Redis 8's;
    /// see `threads`).
    pub io_thread: AtomicUsize,
    /// Its subscriptions to channels, patterns and shard channels (CLIENT LIST's `sub`,
    /// `psub`, `ssub`; kept by the Pub/Sub subscriber of the connection).
    pub subscriptions: [AtomicU32; 3],
    /// Keys it WATCHes (INFO's `watching_clients`; published by its front end).
    pub watching: AtomicU32,
}

/// CLIENT UNBLOCK ... TIMEOUT: the blocked command answers as if its timeout passed.
pub const UNBLOCK_TIMEOUT: u8 = 1;
/// CLIENT UNBLOCK ... ERROR: the blocked command answers `-UNBLOCKED`.
pub const UNBLOCK_ERROR: u8 = 2;

/// What one watched key, subscription or BCAST prefix counts in a client's memory: about
/// what its entries take in the connection's and the registries' tables (the name is
/// counted once more only where it is not shared).
pub const STATE_ENTRY_BYTES: u64 = 64;

/// What CLIENT LIST shows of a connection's buffers, published by its I/O loop (each read
/// and each write) and its front end (each command), with Redis's meanings:
/// - `qbuf`: bytes in the input buffer: while a batch runs, all it read (the running command
///   included, as in Redis), else those not parsed yet (a command still arriving);
///   `qbuf_free`: the input buffer's room left; `rbs`: its size; `rbp`: the most it held after the last read;
/// - `obl`: bytes in the buffer small replies are appended to; `oll`: reply chunks queued
///   behind it (large values, and replies still to come from other nodes); `omem`: their
///   bytes;
/// - `multi`: commands queued in MULTI (-1: not in MULTI); `multi_mem`: their bytes.
#[derive(Debug)]
pub struct Buffers {
    pub qbuf: AtomicU64,
    pub qbuf_free: AtomicU64,
    pub rbs: AtomicU64,
    pub rbp: AtomicU64,
    pub obl: AtomicU64,
    pub oll: AtomicU64,
    pub omem: AtomicU64,
    pub multi: AtomicI64,
    pub multi_mem: AtomicU64,
    /// Part of a request is in and its front end awaits the rest (memcached's `conn_nread`).
    pub awaiting: AtomicBool,
    /// Bytes the request in progress still needs (0: none or unknown): the input counts at
    /// most its bytes and these for `maxmemory-clients`, not the room a growing buffer
    /// reserved past them (never written, so not resident).
    pub wanted: AtomicU64,
    /// Bytes of Pub/Sub messages and invalidations waiting in its mailbox for the
    /// connection to take them (Redis keeps them in the output buffer: part of `tot-mem`).
    pub mailbox: AtomicU64,
    /// The arguments of the request in progress already taken out of the input (CLIENT
    /// LIST's `argv-mem`; the bulk still arriving is in `qbuf`).
    pub argv_mem: AtomicU64,
    /// Its watched keys, subscriptions and BCAST prefixes, [`STATE_ENTRY_BYTES`] each (as
    /// Redis counts them in a client's memory: per entry, not the names).
    pub state: AtomicU64,
}

impl Default for Buffers {
    fn default() -> Buffers {
        Buffers {
            qbuf: AtomicU64::new(0),
            qbuf_free: AtomicU64::new(0),
            rbs: AtomicU64::new(0),
            rbp: AtomicU64::new(0),
            obl: AtomicU64::new(0),
            oll: AtomicU64::new(0),
            omem: AtomicU64::new(0),
            multi: AtomicI64::new(-1),
            multi_mem: AtomicU64::new(0),
            awaiting: AtomicBool::new(false),
            wanted: AtomicU64::new(0),
            mailbox: AtomicU64::new(0),
            state: AtomicU64::new(0),
            argv_mem: AtomicU64::new(0),
        }
    }
}

impl Buffers {
    /// The input buffer: `len` bytes unparsed of `capacity`.
    pub fn set_input(&self, len: usize, capacity: usize) {
        self.qbuf.store(len as u64, Ordering::Relaxed);
        self.qbuf_free
            .store(capacity.saturating_sub(len) as u64, Ordering::Relaxed);
        self.rbs.store(capacity as u64, Ordering::Relaxed);
    }

    /// Bytes the connection holds in its buffers, MULTI queue, mailbox and state (CLIENT
    /// LIST's `tot-mem`): its input buffer's size, or while a request arrives the bytes in and still
    /// wanted if less (see `wanted`).
    pub fn total(&self) -> u64 {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let input = match get(&self.wanted) {
            0 => get(&self.rbs),
            wanted => get(&self.rbs).min(get(&self.qbuf) + wanted),
        };
        input
            + get(&self.argv_mem)
            + get(&self.obl)
            + get(&self.omem)
            + get(&self.multi_mem)
            + get(&self.mailbox)
            + get(&self.state)
    }

    /// The output as CLIENT LIST and INFO show it (`obl`, `oll`, `omem`): the replies, and
    /// the Pub/Sub messages and invalidations waiting in the mailbox as one more chunk (Redis
    /// writes those to the output buffer; a subscriber that does not read shows its backlog).
    pub fn shown_output(&self) -> (u64, u64, u64) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mailbox = get(&self.mailbox);
        (
            get(&self.obl),
            get(&self.oll) + u64::from(mailbox > 0),
            get(&self.omem) + mailbox,
        )
    }

    /// Notes the connection's state entries (watched keys, subscriptions, prefixes).
    pub fn set_state_entries(&self, entries: usize) {
        let bytes = entries as u64 * STATE_ENTRY_BYTES;
        if self.state.load(Ordering::Relaxed) != bytes {
            self.state.store(bytes, Ordering::Relaxed);
        }
    }

    /// The output: `buffered` bytes in the small-reply buffer, then `chunks` chunks of
    /// `chunk_bytes` bytes.
    pub fn set_output(&self, buffered: usize, chunks: usize, chunk_bytes: usize) {
        self.obl.store(buffered as u64, Ordering::Relaxed);
        self.oll.store(chunks as u64, Ordering::Relaxed);
        self.omem.store(chunk_bytes as u64, Ordering::Relaxed);
    }
}

impl ClientInfo {
    /// The pseudo-client that runs requests arriving from other nodes (never registered, so
    /// CLIENT LIST and CLIENT KILL do not see it).
    pub fn internal() -> Arc<ClientInfo> {
        let unspecified = ClientAddr::Tcp(SocketAddr::from(([0, 0, 0, 0], 0)));
        Arc::new(ClientInfo::new(
            0,
            unspecified.clone(),
            unspecified,
            Box::new(|_| {}),
        ))
    }

    fn new(id: u64, addr: ClientAddr, laddr: ClientAddr, signal: SignalFn) -> ClientInfo {
        let now = now_ms();
        ClientInfo {
            id,
            addr,
            laddr,
            fd: AtomicI32::new(-1),
            created_ms: now,
            last_interaction_ms: AtomicU64::new(now),
            resp: AtomicU8::new(2),
            db: AtomicU8::new(0),
            name: Mutex::new(None),
            user: Mutex::new(Bytes::from_static(b"default")),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            last_cmd: AtomicUsize::new(usize::MAX),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            modes: AtomicU8::new(0),
            redirect: AtomicU64::new(0),
            redis_cluster: AtomicBool::new(false),
            signal,
            killed: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            buffers: Buffers::default(),
            counted: AtomicU64::new(0),
            blocked: AtomicBool::new(false),
            unblock: AtomicU8::new(0),
            io_thread: AtomicUsize::new(0),
            subscriptions: Default::default(),
            watching: AtomicU32::new(0),
        }
    }

    /// CLIENT KILL: close the connection at its next turn, unsent replies dropped.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Relaxed);
        (self.signal)(Signal::Stop);
    }

    /// Shutdown: close the connection once it has answered what it read.
    pub fn stop(&self) {
        (self.signal)(Signal::Stop);
    }

    /// True when the cron should ask it to give its buffers back ([`trim_due`]).
    fn wants_trim(&self, now_ms: u64) -> bool {
        let rbs = self.buffers.rbs.load(Ordering::Relaxed);
        let busy =
            self.blocked.load(Ordering::Relaxed) || self.buffers.qbuf.load(Ordering::Relaxed) > 0;
        trim_due(
            self.last_interaction_ms.load(Ordering::Relaxed),
            now_ms,
            rbs,
            busy,
        )
    }

    /// True while it subscribes to something (CLIENT LIST's flag `P`, `TYPE pubsub`).
    pub fn is_subscriber(&self) -> bool {
        self.subscriptions
            .iter()
            .any(|n| n.load(Ordering::Relaxed) > 0)
    }

    /// Turns the [`ClientInfo::modes`] bits `bits` on or off.
    pub fn set_mode(&self, bits: u8, on: bool) {
        if on {
            self.modes.fetch_or(bits, Ordering::Relaxed);
        } else {
            self.modes.fetch_and(!bits, Ordering::Relaxed);
        }
    }

    /// CLIENT LIST's flags, in Redis's order (`O` MONITOR, `P` subscribed, `x` in MULTI, `b`
    /// blocked, `t` tracking, `R` its redirect target gone, `B` BCAST, `U` on a Unix socket,
    /// `r` READONLY, `e` NO-EVICT, `T` NO-TOUCH), or `N` for none.
    fn flags(&self, multi: bool, redirect_broken: bool) -> String {
        let modes = self.modes.load(Ordering::Relaxed);
        let flags: String = [
            (modes & MONITOR != 0, 'O'),
            (self.is_subscriber(), 'P'),
            (multi, 'x'),
            (self.blocked.load(Ordering::Relaxed), 'b'),
            (modes & TRACKING != 0, 't'),
            (redirect_broken, 'R'),
            (modes & TRACKING_BCAST != 0, 'B'),
            (self.addr.is_unix(), 'U'),
            (modes & READONLY != 0, 'r'),
            (self.no_evict.load(Ordering::Relaxed), 'e'),
            (self.no_touch.load(Ordering::Relaxed), 'T'),
        ]
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
        .collect();
        if flags.is_empty() {
            "N".into()
        } else {
            flags
        }
    }

    /// One CLIENT LIST / CLIENT INFO line (without the trailing newline): Redis 7's fields,
    /// then Redis 8's `io-thread`; `last_cmd` is the name of the command at `self.last_cmd` in the
    /// command table, `redirect_broken` whether its tracking's redirect target was found gone
    /// (the caller looks them up: the table and the tracker live above this module).
    pub fn describe(&self, now_ms: u64, last_cmd: &str, redirect_broken: bool) -> String {
        let name = self.name.lock().expect("client name lock poisoned").clone();
        let lib_name = self
            .lib_name
            .lock()
            .expect("client lib lock poisoned")
            .clone();
        let lib_ver = self
            .lib_ver
            .lock()
            .expect("client lib lock poisoned")
            .clone();
        let cmd = last_cmd;
        let s = |b: Option<Bytes>| b.map(|b| String::from_utf8_lossy(&b).into_owned());
        let b = &self.buffers;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let multi = b.multi.load(Ordering::Relaxed);
        let (obl, oll, omem) = b.shown_output();
        let (multi_mem, rbs) = (get(&b.multi_mem), get(&b.rbs));
        let db = self.db.load(Ordering::Relaxed);
        let argv_mem = get(&b.argv_mem);
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={db} sub={} psub={} ssub={} multi={multi} qbuf={} qbuf-free={} argv-mem={argv_mem} multi-mem={multi_mem} rbs={rbs} rbp={} obl={obl} oll={} omem={omem} tot-mem={} events={} cmd={} user={} redir={} resp={} lib-name={} lib-ver={} io-thread={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd.load(Ordering::Relaxed),
            s(name).unwrap_or_default(),
            now_ms.saturating_sub(self.created_ms) / 1000,
            now_ms.saturating_sub(self.last_interaction_ms.load(Ordering::Relaxed)) / 1000,
            self.flags(multi >= 0, redirect_broken),
            self.subscriptions[0].load(Ordering::Relaxed),
            self.subscriptions[1].load(Ordering::Relaxed),
            self.subscriptions[2].load(Ordering::Relaxed),
            get(&b.qbuf),
            get(&b.qbuf_free),
            get(&b.rbp),
            oll,
            b.total(),
            if obl + omem > 0 { "rw" } else { "r" },
            if cmd.is_empty() { "NULL" } else { cmd },
            String::from_utf8_lossy(&self.user.lock().expect("client user lock poisoned")),
            // The target's id while tracking (0 without one), -1 while not, as Redis.
            match self.modes.load(Ordering::Relaxed) & TRACKING {
                0 => -1,
                _ => self.redirect.load(Ordering::Relaxed) as i64,
            },
            self.resp.load(Ordering::Relaxed),
            s(lib_name).unwrap_or_default(),
            s(lib_ver).unwrap_or_default(),
            self.io_thread.load(Ordering::Relaxed),
        )
    }
}

/// One client's memory, as [`to_evict`] weighs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    pub id: u64,
    pub bytes: u64,
    /// False under CLIENT NO-EVICT ON: its memory counts, it is never closed for it.
    pub evictable: bool,
}

/// The clients to close so that the rest hold less than `limit` bytes together (Redis
/// evicts while they hold the limit or more): the largest
/// evictable ones first (Redis evicts from its largest memory bucket down), as many as it
/// takes; all evictable ones when even that is not enough (the NO-EVICT clients' memory
/// counts, as in Redis). Ties go to the older client.
pub fn to_evict(limit: u64, mut clients: Vec<Held>) -> Vec<u64> {
    let mut sum: u64 = clients.iter().map(|c| c.bytes).sum();
    if sum < limit {
        return Vec::new();
    }
    clients.retain(|c| c.evictable);
    clients.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.id.cmp(&b.id)));
    let mut out = Vec::new();
    for c in clients {
        if sum < limit {
            break;
        }
        sum -= c.bytes;
        out.push(c.id);
    }
    out
}

/// All connected clients, by id.
#[derive(Default)]
pub struct ClientRegistry {
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// The clients' memory (CLIENT LIST's `tot-mem`) summed, as they last accounted it
    /// ([`ClientRegistry::account`]), for `maxmemory-clients`.
    memory: AtomicU64,
    /// Clients closed for `maxmemory-clients` (INFO's `evicted_clients`).
    evicted: AtomicU64,
    /// The Memcached protocol's listening sockets (TCP and Unix): descriptor and address
    /// (memcached's `stats conns` lists them).
    listeners: Mutex<Vec<(i32, ClientAddr)>>,
    /// Tells the clients whose peer closed before their I/O loop noticed
    /// ([`ClientRegistry::connected`]); set once by the front end.
    hangup: std::sync::OnceLock<HangupProbe>,
}

impl ClientRegistry {
    /// Registers a new connection and returns its shared info; ids start at 1 and only grow.
    /// `signal` reaches the connection's I/O loop (CLIENT KILL, trimming when idle).
    pub fn register(
        &self,
        addr: impl Into<ClientAddr>,
        laddr: impl Into<ClientAddr>,
        signal: SignalFn,
    ) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo::new(id, addr.into(), laddr.into(), signal));
        self.lock().insert(id, info.clone());
        info
    }

    pub fn unregister(&self, id: u64) {
        if let Some(c) = self.lock().remove(&id) {
            let counted = c.counted.swap(0, Ordering::Relaxed);
            self.memory.fetch_sub(counted, Ordering::Relaxed);
        }
    }

    /// Brings the sum of the clients' memory up to date with what `info` last published;
    /// true when it grew to `limit` or past it (`maxmemory-clients` in bytes): then
    /// [`ClientRegistry::evict_over`] is due. With no limit (0) nothing is summed, so the
    /// I/O loops call it whenever they publish their buffers at no cost by default (the cron's
    /// [`ClientRegistry::account_all`] catches up once a limit is set). Concurrent calls may
    /// leave the sum off for a moment (each swap's delta lands on its own), never the
    /// eviction, which weighs each client's own figure.
    pub fn account(&self, info: &ClientInfo, limit: u64) -> bool {
        limit > 0 && self.sync(info).is_some_and(|sum| sum >= limit)
    }

    /// Accounts every client as it is now (the cron's pass: what grew or shrank without its
    /// I/O loop accounting it, such as while the limit was off); true when the sum is at
    /// `limit` or more (0: none).
    pub fn account_all(&self, limit: u64) -> bool {
        for c in self.lock().values() {
            self.sync(c);
        }
        limit > 0 && self.memory() >= limit
    }

    /// Moves `info`'s share of the sum to what its buffers hold now; the sum, when it grew.
    fn sync(&self, info: &ClientInfo) -> Option<u64> {
        let now = info.buffers.total();
        let old = info.counted.swap(now, Ordering::Relaxed);
        if now > old {
            Some(self.memory.fetch_add(now - old, Ordering::Relaxed) + (now - old))
        } else {
            if now < old {
                self.memory.fetch_sub(old - now, Ordering::Relaxed);
            }
            None
        }
    }

    /// The clients' memory, summed as they accounted it.
    pub fn memory(&self) -> u64 {
        self.memory.load(Ordering::Relaxed)
    }

    /// Clients evicted so far (INFO's `evicted_clients`).
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT.
    pub fn reset_evicted(&self) {
        self.evicted.store(0, Ordering::Relaxed);
    }

    /// Redis's client eviction, once the clients' memory reached `limit` ([`account`]
    /// said so): closes the largest ([`ClientRegistry::evict`]), counts and logs them.
    ///
    /// [`account`]: ClientRegistry::account
    pub fn evict_over(&self, limit: u64) {
        let evicted = self.evict(limit);
        if evicted.is_empty() {
            return;
        }
        self.evicted
            .fetch_add(evicted.len() as u64, Ordering::Relaxed);
        let now = crate::clock::now_ms();
        for c in evicted {
            tracing::info!(
                client = c.id,
                "Evicting client: {} (maxmemory-clients is {limit} bytes, the clients hold {})",
                c.describe(now, "", false),
                self.memory()
            );
        }
    }

    /// Redis's client eviction: closes the clients that hold the most memory, largest
    /// first, until what the clients hold together is under `limit` ([`to_evict`]); returns
    /// them (closed as by CLIENT KILL: their unsent replies dropped). Clients already
    /// closing do not count. Takes the registry's lock once, so two connections that both
    /// found the sum over the limit do not close twice as many.
    pub fn evict(&self, limit: u64) -> Vec<Arc<ClientInfo>> {
        if limit == 0 {
            return Vec::new();
        }
        let clients = self.lock();
        let held: Vec<Held> = clients
            .values()
            .filter(|c| !c.killed.load(Ordering::Relaxed))
            .map(|c| Held {
                id: c.id,
                bytes: c.counted.load(Ordering::Relaxed),
                evictable: !c.no_evict.load(Ordering::Relaxed),
            })
            .collect();
        to_evict(limit, held)
            .into_iter()
            .filter_map(|id| clients.get(&id).cloned())
            .inspect(|c| c.kill())
            .collect()
    }

    /// True if client `id` is connected.
    pub fn contains(&self, id: u64) -> bool {
        self.lock().contains_key(&id)
    }

    /// A snapshot of the connected clients in id order.
    /// The connected clients, but those killed and not gone yet (their I/O loop has still
    /// to notice): Redis unlinks a killed client at once, so CLIENT LIST right after CLIENT
    /// KILL no longer shows it (redis-py's `test_client_kill_filter_by_addr`).
    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.lock()
            .values()
            .filter(|c| !c.killed.load(Ordering::Relaxed))
            .cloned()
            .collect()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Sets how [`ClientRegistry::connected`] tells a closed peer (once; later calls are
    /// ignored).
    pub fn set_hangup_probe(&self, probe: HangupProbe) {
        let _ = self.hangup.set(probe);
    }

    /// The clients as Redis would count them now (INFO's `connected_clients`, CLIENT
    /// LIST, asked by client `caller`): [`ClientRegistry::all`] without those whose
    /// connection ended or whose peer has closed with nothing left to read or run. Redis's
    /// one thread reads a closed socket's end before a later request of another client;
    /// here each worker notices its clients' ends in its own time, so a client that closed
    /// just before another asked would still count (Perl Redis.pm's tests found it). The
    /// probe asks the sockets themselves; a client whose input still holds requests, and
    /// the caller (its request is running), count whatever the socket says, as in Redis
    /// (which reads a half-closed client's requests before its end). Of clients sharing a
    /// descriptor only the newest (the largest id) is counted.
    pub fn connected(&self, caller: u64) -> Vec<Arc<ClientInfo>> {
        let all: Vec<Arc<ClientInfo>> = self
            .all()
            .into_iter()
            .filter(|c| !c.closing.load(Ordering::Relaxed))
            .collect();
        let Some(probe) = self.hangup.get() else {
            return all;
        };
        let fds: Vec<i32> = all.iter().map(|c| c.fd.load(Ordering::Relaxed)).collect();
        let mut closed = vec![false; fds.len()];
        probe(&fds, &mut closed);
        // In id order: a later client with the same descriptor replaces the earlier one.
        let mut newest: HashMap<i32, u64> = HashMap::new();
        for (c, &fd) in all.iter().zip(&fds) {
            if fd >= 0 {
                newest.insert(fd, c.id);
            }
        }
        all.into_iter()
            .zip(fds)
            .zip(closed)
            .filter_map(|((c, fd), closed)| {
                let reused = fd >= 0 && newest.get(&fd) != Some(&c.id);
                let gone = closed && c.id != caller && c.buffers.qbuf.load(Ordering::Relaxed) == 0;
                (!gone && !reused).then_some(c)
            })
            .collect()
    }

    /// Notes a listening socket (see `listeners`).
    pub fn add_listener(&self, fd: i32, addr: impl Into<ClientAddr>) {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((fd, addr.into()));
    }

    /// The listening sockets: descriptor and address.
    pub fn listeners(&self) -> Vec<(i32, ClientAddr)> {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Asks each connection idle for [`TRIM_IDLE_MS`] that still holds buffers to give them
    /// back (the cron's once a second, as Redis's `clientsCron`); returns how many were asked.
    pub fn trim_idle(&self, now_ms: u64) -> usize {
        let clients = self.lock();
        let mut asked = 0;
        for c in clients.values().filter(|c| c.wants_trim(now_ms)) {
            (c.signal)(Signal::Trim);
            asked += 1;
        }
        asked
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<ClientInfo>>> {
        self.clients.lock().expect("client registry lock poisoned")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the sockets: descriptors from 100 up have a closed peer.
    fn hundred_and_up_closed(fds: &[i32], closed: &mut [bool]) {
        for (c, &fd) in closed.iter_mut().zip(fds) {
            *c = fd >= 100;
        }
    }

    #[test]
    fn connected_leaves_out_closed_peers_killed_and_reused_descriptors() {
        let reg = ClientRegistry::default();
        let addr: std::net::SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let fds = [7, 100, 8, 7, -1, -1];
        let infos: Vec<_> = fds
            .iter()
            .map(|&fd| {
                let c = reg.register(addr, addr, Box::new(|_| {}));
                c.fd.store(fd, Ordering::Relaxed);
                c
            })
            .collect();
        let ids = |v: Vec<Arc<ClientInfo>>| v.iter().map(|c| c.id).collect::<Vec<_>>();
        // No probe set: every registered client.
        assert_eq!(ids(reg.connected(0)), vec![1, 2, 3, 4, 5, 6]);
        reg.set_hangup_probe(hundred_and_up_closed);
        infos[2].killed.store(true, Ordering::Relaxed);
        // 2: its peer closed; 3: killed; 1: its descriptor now belongs to 4; the two
        // without a descriptor both count.
        assert_eq!(ids(reg.connected(0)), vec![4, 5, 6]);
        // A closed peer still counts while its input holds requests, and when it asks.
        infos[1].buffers.qbuf.store(10, Ordering::Relaxed);
        assert_eq!(ids(reg.connected(0)), vec![2, 4, 5, 6]);
        infos[1].buffers.qbuf.store(0, Ordering::Relaxed);
        assert_eq!(ids(reg.connected(2)), vec![2, 4, 5, 6]);
        // One whose connection ended is gone at once, whatever its descriptor says now.
        infos[4].closing.store(true, Ordering::Relaxed);
        assert_eq!(ids(reg.connected(0)), vec![4, 6]);
        assert_eq!(reg.len(), 6, "still registered until their loops end");
    }

    fn held(id: u64, bytes: u64, evictable: bool) -> Held {
        Held {
            id,
            bytes,
            evictable,
        }
    }

    #[test]
    fn eviction_closes_the_largest_clients_until_the_rest_fit() {
        let clients = vec![
            held(1, 100, true),
            held(2, 900, true),
            held(3, 500, true),
            held(4, 500, true),
        ];
        // Under the limit: nobody; at it, as in Redis, the largest.
        assert_eq!(to_evict(2001, clients.clone()), Vec::<u64>::new());
        assert_eq!(to_evict(2000, clients.clone()), vec![2]);
        // 2000 held, 1500 allowed: the largest alone is enough.
        assert_eq!(to_evict(1500, clients.clone()), vec![2]);
        // 1000 allowed: the largest, then the older of two equal ones.
        assert_eq!(to_evict(1000, clients.clone()), vec![2, 3]);
        assert_eq!(to_evict(0, clients.clone()), vec![2, 3, 4, 1]);
        // A NO-EVICT client is never closed, but what it holds counts: the others go.
        let clients = vec![held(1, 50, true), held(2, 5000, false), held(3, 60, true)];
        assert_eq!(to_evict(1000, clients), vec![3, 1]);
    }

    #[test]
    fn the_registry_sums_what_clients_account_and_evicts_over_the_limit() {
        let reg = ClientRegistry::default();
        let addr = SocketAddr::from(([127, 0, 0, 1], 1));
        let a = reg.register(addr, addr, Box::new(|_| {}));
        let b = reg.register(addr, addr, Box::new(|_| {}));
        let c = reg.register(addr, addr, Box::new(|_| {}));
        c.no_evict.store(true, Ordering::Relaxed);
        a.buffers.set_input(0, 16_384);
        assert!(!reg.account(&a, 0), "no limit, never over");
        assert!(!reg.account(&a, 20_000));
        b.buffers.set_output(0, 1, 30_000);
        assert!(reg.account(&b, 40_000), "46,384 held, over 40,000");
        assert_eq!(reg.memory(), 46_384);
        // Accounting again with nothing changed: no growth, so nothing is due.
        assert!(!reg.account(&b, 40_000));
        c.buffers.set_input(0, 1000);
        assert!(reg.account(&c, 40_000));
        let evicted: Vec<u64> = reg.evict(40_000).iter().map(|c| c.id).collect();
        assert_eq!(evicted, vec![b.id]);
        assert!(b.killed.load(Ordering::Relaxed));
        // A killed client no longer counts for the next pass, and its memory goes with it.
        assert!(reg.evict(40_000).is_empty());
        reg.unregister(b.id);
        assert_eq!(reg.memory(), 17_384);
        // Shrinking gives the bytes back.
        a.buffers.set_input(0, 0);
        assert!(!reg.account(&a, 40_000));
        assert_eq!(reg.memory(), 1000);
        assert!(reg.evict(0).is_empty(), "0 is no limit");
        // A request arriving counts its bytes and those still wanted, not the room reserved
        // past them; a mailbox's messages count.
        a.buffers.set_input(10_000, 65_536);
        a.buffers.wanted.store(5_000, Ordering::Relaxed);
        assert_eq!(a.buffers.total(), 15_000);
        a.buffers.mailbox.store(700, Ordering::Relaxed);
        assert_eq!(a.buffers.total(), 15_700);
        // What changed without being accounted is taken by the cron's pass.
        assert!(reg.account_all(16_000), "16,700 held");
        assert_eq!(reg.memory(), 16_700);
        assert!(!reg.account_all(0));
    }

    #[test]
    fn an_address_reads_as_redis_and_memcached_write_it() {
        let v4 = ClientAddr::from(SocketAddr::from(([127, 0, 0, 1], 1)));
        let v6 = ClientAddr::from("[::1]:11211".parse::<SocketAddr>().unwrap());
        let unix = ClientAddr::Unix("/run/shoal.sock".into());
        assert_eq!(v4.to_string(), "127.0.0.1:1");
        assert_eq!(unix.to_string(), "/run/shoal.sock:0");
        assert_eq!(v4.monitor_text(), "127.0.0.1:1");
        assert_eq!(unix.monitor_text(), "unix:/run/shoal.sock");
        assert_eq!(v4.memcached_text(), "tcp:127.0.0.1:1");
        assert_eq!(v6.memcached_text(), "tcp6:[::1]:11211");
        assert_eq!(unix.memcached_text(), "unix:/run/shoal.sock");
        assert!(v4.is_local() && v6.is_local() && unix.is_local());
        assert!(!ClientAddr::from(SocketAddr::from(([10, 0, 0, 1], 1))).is_local());
        assert!(unix.is_unix() && !v4.is_unix());
    }

    #[test]
    fn trim_is_due_for_an_idle_client_holding_buffers() {
        assert!(trim_due(1_000, 1_000 + TRIM_IDLE_MS, 16_384, false));
        assert!(
            !trim_due(1_000, 999 + TRIM_IDLE_MS, 16_384, false),
            "not idle long enough"
        );
        assert!(
            !trim_due(1_000, 1_000 + TRIM_IDLE_MS, 0, false),
            "nothing to give back"
        );
        assert!(
            !trim_due(1_000, 1_000 + TRIM_IDLE_MS, 16_384, true),
            "blocked"
        );
        // A clock that went back is no idleness.
        assert!(!trim_due(5_000, 1_000, 16_384, false));
    }

    #[test]
    fn the_registry_asks_only_idle_clients_with_buffers() {
        let reg = ClientRegistry::default();
        let addr = SocketAddr::from(([127, 0, 0, 1], 1));
        let asked = Arc::new(AtomicU64::new(0));
        let mut infos = Vec::new();
        for _ in 0..3 {
            let asked = asked.clone();
            infos.push(reg.register(
                addr,
                addr,
                Box::new(move |s| {
                    if s == Signal::Trim {
                        asked.fetch_add(1, Ordering::Relaxed);
                    }
                }),
            ));
        }
        let now = infos[0].last_interaction_ms.load(Ordering::Relaxed) + TRIM_IDLE_MS;
        // 0 holds buffers and is idle, 1 gave them back, 2 was active a moment ago.
        infos[0].buffers.set_input(0, 16_384);
        infos[2].buffers.set_input(0, 16_384);
        infos[2]
            .last_interaction_ms
            .store(now - 1, Ordering::Relaxed);
        assert_eq!(reg.trim_idle(now), 1);
        assert_eq!(asked.load(Ordering::Relaxed), 1);
        // CLIENT KILL is the other signal, not a trim.
        infos[1].kill();
        assert_eq!(asked.load(Ordering::Relaxed), 1);
    }
}
