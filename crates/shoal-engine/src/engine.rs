//! `Engine`: one node's data and settings, which every connection shares: the store, the
//! settings, the client registry, the statistics. It knows no cluster and no runtime.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Instant;

use bytes::Bytes;
use shoal_resp::Limits;
use shoal_store::{EvictionPolicy, Store, StoreConfig};

use crate::client::ClientRegistry;
use crate::clock::now_ms;
use crate::config::NodeConfig;
use crate::stats::{McStats, Stats};

/// What the layer above the engine puts in force when CONFIG SET changes settings (TLS
/// certificates): given the names set, in order, and the settings about to be in force, it
/// applies them or refuses with the setting to blame and why; on a refusal CONFIG SET
/// changes nothing.
pub type SettingsHook =
    Box<dyn Fn(&[String], &NodeConfig) -> Result<(), (String, String)> + Send + Sync>;

/// What a connection reads of the settings for every batch, read from them again only once
/// they changed: one load of the settings' version instead of taking their lock, whose line
/// every reader writes (two workers reading it per batch moved it between their cores).
pub struct Snapshot<T> {
    /// The settings' version when `value` was read.
    version: u64,
    value: Option<T>,
}

impl<T> Default for Snapshot<T> {
    fn default() -> Self {
        Snapshot {
            version: 0,
            value: None,
        }
    }
}

impl<T> Snapshot<T> {
    /// What `read` gives of the settings in force now. Pass the same `read` every time: its
    /// answer is kept until the settings change.
    pub fn get(&mut self, engine: &Engine, read: impl FnOnce(&NodeConfig) -> T) -> &T {
        let version = engine.settings_version.load(Ordering::Acquire);
        if self.version != version {
            self.value = None;
            self.version = version;
        }
        self.value.get_or_insert_with(|| engine.with_settings(read))
    }
}

/// The shared state of one node.
pub struct Engine {
    pub store: Store,
    pub clients: ClientRegistry,
    pub stats: Stats,
    /// The effective settings, as CONFIG GET shows them; CONFIG SET writes here and into the
    /// parts that hold a copy (store limits).
    settings: RwLock<NodeConfig>,
    /// Moves on every change of `settings` (see [`Snapshot`]); starts at 1.
    settings_version: AtomicU64,
    /// Held by each writer of `settings` for its whole change.
    writers: std::sync::Mutex<()>,
    pub started: Instant,
    pub started_unix_ms: u64,
    /// The TCP port actually bound (for INFO and HELLO).
    pub port: AtomicU64,
    pub config_file: Option<String>,
    /// Unique per process start, as Redis's `run_id`.
    pub run_id: String,
    /// Highest `used_memory` seen (INFO's `used_memory_peak`).
    peak: AtomicU64,
    /// Memcached `stats` counters.
    pub mc_stats: McStats,
    /// Frees large removed values off the workers (UNLINK, FLUSHALL ASYNC).
    pub lazyfree: crate::lazyfree::LazyFree,
    /// Unix ms of a delayed Memcached `flush_all` (0 = none); the cron task carries it out.
    pub flush_at: AtomicU64,
    /// The I/O threads serving clients (memcached's `threads` stat); set by the listener.
    pub threads: AtomicU64,
    /// The allocator's latest figures (when the binary installed its statistics).
    pub memory: crate::memory::MemoryState,
    /// A database other than 0 was selected, moved to or swapped once: from then on the
    /// commands that count or list keys sort them by database (`cmd::db`).
    pub numbered_dbs: std::sync::atomic::AtomicBool,
    /// The cron's active expiry is off (`DEBUG SET-ACTIVE-EXPIRE 0`): keys expire when read.
    pub active_expire_off: std::sync::atomic::AtomicBool,
    /// The cron does nothing (`DEBUG PAUSE-CRON 1`).
    pub cron_paused: std::sync::atomic::AtomicBool,
    /// Scripts may call DEBUG (`DEBUG SET-DISABLE-DENY-SCRIPTS 1`).
    pub scripts_may_debug: std::sync::atomic::AtomicBool,
    /// SAVE's and BGSAVE's state (`crate::saves`).
    pub saves: crate::saves::Saves,
    /// Per-command counters, error counts and the slow log.
    pub commands: crate::cmdstats::CommandStats,
    /// The latency monitor's events.
    pub latency: crate::latency::LatencyMonitor,
    /// Applies CONFIG SET above the engine (set once by the node layer).
    pub settings_hook: std::sync::OnceLock<SettingsHook>,
    /// Clients blocked on keys (BLPOP, BZPOPMIN, ...), woken by writes to those keys.
    pub blocked: std::sync::Arc<crate::blocking::Blocked>,
    /// CLIENT PAUSE.
    pub pause: crate::pause::Pause,
    /// The Lua scripts loaded (EVAL, SCRIPT LOAD), by SHA1.
    pub scripts: crate::scripts::Scripts,
    /// The function libraries loaded (FUNCTION LOAD, RESTORE).
    pub functions: crate::functions::Functions,
    /// The script or function running now, as the others see it (BUSY, SCRIPT KILL).
    pub running: crate::busy::Running,
    /// This node's Pub/Sub subscriptions (SUBSCRIBE, PUBLISH, ...).
    pub pubsub: std::sync::Arc<crate::pubsub::PubSub>,
    /// The keyspace notifications published (`notify`'s classes; 0: none, the default).
    notify_flags: std::sync::atomic::AtomicU32,
    /// `stream-node-max-bytes` and `stream-node-max-entries`, read by every XADD.
    stream_nodes: (AtomicU64, AtomicU64),
    /// `min-replicas-to-write`, read by every write.
    min_replicas: std::sync::atomic::AtomicU32,
    /// Where notifications go beyond this node (set once by the cluster layer).
    pub event_sink: std::sync::OnceLock<Box<dyn crate::notify::EventSink>>,
    /// Client-side caching: who tracks which keys (CLIENT TRACKING).
    pub tracker: std::sync::Arc<crate::tracking::Tracker>,
    /// The ACL users and log, built on first use from the command table
    /// (`cmd::acl::registry`).
    pub acl: std::sync::OnceLock<crate::acl::Registry>,
}

/// Keys of the tracking table a client command drops at most before it runs, while the
/// table is past a lowered `tracking-table-max-keys` (the cron drops the rest; Redis's
/// `trackingLimitUsedSlots` starts at 100 a command and raises its effort while over).
pub const TRIM_PER_COMMAND: usize = 1000;

impl Engine {
    /// Whether keys of databases other than 0 may exist here (one was selected, moved to or
    /// swapped, or the store took such a key, also from another node): the commands that
    /// count, list or flush keys must then tell the databases apart (`cmd::db`).
    pub fn numbered_dbs(&self) -> bool {
        self.numbered_dbs.load(std::sync::atomic::Ordering::Relaxed)
            || self.store.has_numbered_keys()
    }

    /// An engine on `config` (`config_file` is what CONFIG REWRITE would write).
    pub fn new(config: NodeConfig, config_file: Option<String>) -> Engine {
        let policy = EvictionPolicy::from_str(&config.maxmemory_policy).unwrap_or_default();
        let store = Store::new(StoreConfig {
            maxmemory: config.maxmemory.0,
            policy,
            samples: config.maxmemory_samples,
            lfu_log_factor: config.lfu_log_factor,
            lfu_decay_time: config.lfu_decay_time,
        });
        let started_unix_ms = now_ms();
        let commands = crate::cmdstats::CommandStats::default();
        commands.configure_slowlog(config.slowlog_log_slower_than, config.slowlog_max_len);
        let latency = crate::latency::LatencyMonitor::default();
        latency.configure(config.latency_monitor_threshold);
        let notify_flags = crate::notify::parse(&config.notify_keyspace_events).unwrap_or(0);
        let stream_nodes = (
            config.stream_node_max_bytes.0,
            config.stream_node_max_entries,
        );
        crate::clock::calibrate();
        let engine = Engine {
            store,
            clients: ClientRegistry::default(),
            stats: Stats::default(),
            port: AtomicU64::new(u64::from(config.port)),
            settings: RwLock::new(config),
            settings_version: AtomicU64::new(1),
            writers: std::sync::Mutex::new(()),
            started: Instant::now(),
            started_unix_ms,
            config_file,
            run_id: run_id(started_unix_ms),
            peak: AtomicU64::new(0),
            mc_stats: Default::default(),
            lazyfree: Default::default(),
            flush_at: AtomicU64::new(0),
            threads: AtomicU64::new(1),
            memory: crate::memory::MemoryState::default(),
            numbered_dbs: std::sync::atomic::AtomicBool::new(false),
            active_expire_off: std::sync::atomic::AtomicBool::new(false),
            cron_paused: std::sync::atomic::AtomicBool::new(false),
            scripts_may_debug: std::sync::atomic::AtomicBool::new(false),
            saves: Default::default(),
            commands,
            latency,
            settings_hook: std::sync::OnceLock::new(),
            blocked: Default::default(),
            scripts: crate::scripts::Scripts::default(),
            functions: crate::functions::Functions::default(),
            running: Default::default(),
            pubsub: Default::default(),
            pause: Default::default(),
            notify_flags: Default::default(),
            stream_nodes: Default::default(),
            min_replicas: Default::default(),
            event_sink: std::sync::OnceLock::new(),
            tracker: Default::default(),
            acl: std::sync::OnceLock::new(),
        };
        engine.set_notify_flags(notify_flags);
        engine.set_stream_nodes(stream_nodes.0, stream_nodes.1);
        engine.set_min_replicas(engine.with_settings(|s| s.min_replicas_to_write));
        engine
    }

    /// Writes need this many reachable replicas of their key from now on
    /// (`min-replicas-to-write`; 0: none).
    pub fn set_min_replicas(&self, n: u32) {
        self.min_replicas.store(n, Ordering::Relaxed);
    }

    /// See [`Engine::set_min_replicas`].
    pub fn min_replicas(&self) -> u32 {
        self.min_replicas.load(Ordering::Relaxed)
    }

    /// A stream's nodes from now on: `stream-node-max-bytes`, `stream-node-max-entries`.
    pub fn set_stream_nodes(&self, bytes: u64, entries: u64) {
        self.stream_nodes.0.store(bytes, Ordering::Relaxed);
        self.stream_nodes.1.store(entries, Ordering::Relaxed);
    }

    /// The bounds of a stream's new nodes (see [`Engine::set_stream_nodes`]).
    pub fn stream_nodes(&self) -> shoal_store::NodeLimits {
        shoal_store::NodeLimits::new(
            self.stream_nodes.0.load(Ordering::Relaxed),
            self.stream_nodes.1.load(Ordering::Relaxed),
        )
    }

    /// Publishes from now on the keyspace notifications of `flags` (`notify::parse`'s).
    pub fn set_notify_flags(&self, flags: u32) {
        self.notify_flags.store(flags, Ordering::Relaxed);
        self.refresh_notes();
    }

    /// Has the store note what keyspace notifications and client-side caching need (keys
    /// that expire or are evicted invalidate tracked keys): call when either changes.
    pub fn refresh_notes(&self) {
        use crate::notify::{publishes, EVICTED, EXPIRED, KEY_MISS, NEW};
        use shoal_store::Noted;
        let flags = self.notify_flags.load(Ordering::Relaxed);
        let mut noted = 0;
        if self.tracker.active() {
            noted |= Noted::Expired.bit() | Noted::Evicted.bit();
        }
        for (class, kind) in [
            (EXPIRED, Noted::Expired),
            (EVICTED, Noted::Evicted),
            (NEW, Noted::Created),
            (KEY_MISS, Noted::Missed),
        ] {
            if publishes(flags, class) {
                noted |= kind.bit();
            }
        }
        self.store.note_key_events(noted);
    }

    /// True when some class of keyspace notifications is on (`notify-keyspace-events`).
    pub fn notifications_on(&self) -> bool {
        self.notify_flags.load(Ordering::Relaxed) != 0
    }

    /// Publishes the keyspace notification `event` of `class` for the stored key `key`
    /// (Redis's `notifyKeyspaceEvent`), when that class is on: first whatever the store
    /// noted for the running command (a key it found expired goes before its own event, as
    /// in Redis). One atomic load when notifications are off.
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        let flags = self.notify_flags.load(Ordering::Relaxed);
        if !crate::notify::publishes(flags, class) {
            return;
        }
        self.publish_command_notes();
        self.publish_event(flags, event, key);
    }

    /// Runs `run` as one command for keyspace notifications: what the store notes during it
    /// (keys expired, evicted, created, missed) is published in its order, before each of
    /// its events and when it ends (`shoal_store::CommandNotes`). Without notifications, it
    /// just runs `run`.
    pub fn as_command<R>(&self, run: impl FnOnce() -> R) -> R {
        if !self.store.notes_wanted() {
            return run();
        }
        let _notes = shoal_store::CommandNotes::begin();
        let out = run();
        self.publish_command_notes();
        out
    }

    /// Publishes what the store noted for the running command so far (nothing outside one).
    fn publish_command_notes(&self) {
        let noted = shoal_store::take_command_notes();
        if !noted.is_empty() {
            self.publish_notes(noted, false);
        }
    }

    /// Publishes what the store noted outside any command since the last call (active
    /// expiry, the cron's eviction, a replica's lookups), oldest first; in a cluster only for
    /// the keys this node speaks for (`EventSink::speaks_for`: a replica's copy expires
    /// silently). The cron calls it after each expiry round; one atomic load while nothing
    /// is noted.
    pub fn publish_key_events(&self) {
        let noted = self.store.take_key_events();
        if !noted.is_empty() {
            self.publish_notes(noted, true);
        }
    }

    /// Client-side caching's table back within `tracking-table-max-keys` (lowered by CONFIG
    /// SET since a key was last remembered): the oldest keys go, their readers told. The
    /// cron calls it; one atomic load while no client tracks.
    pub fn trim_tracking(&self) {
        if self.tracker.active() {
            // The count first: the settings read after are at least that setting's.
            let bound = self.tracker.bound_sets_now();
            let (limit, max_keys) = self.tracking_limits();
            self.tracker
                .trim(bound, max_keys, usize::MAX, &self.pubsub, limit);
        }
    }

    /// While `tracking-table-max-keys` was set and the table is not yet within it, drops up
    /// to [`TRIM_PER_COMMAND`] of its oldest keys; one or two atomic loads otherwise. Called
    /// before each client command, as Redis's `processCommand` calls
    /// `trackingLimitUsedSlots`: the evicted keys' invalidations then precede its reply,
    /// also when the command is only queued (MULTI) or the cron paused.
    pub fn trim_tracking_if_set(&self) {
        if !self.tracker.active() {
            return;
        }
        if let Some(bound) = self.tracker.bound_pending() {
            let (limit, max_keys) = self.tracking_limits();
            self.tracker
                .trim(bound, max_keys, TRIM_PER_COMMAND, &self.pubsub, limit);
        }
    }

    /// What bounds client-side caching: the `pubsub` output limit its invalidations count
    /// against, and `tracking-table-max-keys`.
    pub fn tracking_limits(&self) -> (crate::config::ClassLimit, u64) {
        self.with_settings(|s| {
            (
                s.client_output_buffer_limit.pubsub,
                s.tracking_table_max_keys,
            )
        })
    }

    /// INFO's count of keyspace notifications the store could not note (its logs full).
    pub fn notes_dropped(&self) -> u64 {
        self.store.key_events_dropped()
    }

    fn publish_notes(&self, noted: Vec<(Bytes, shoal_store::Noted)>, owner_only: bool) {
        use crate::notify::{EVICTED, EXPIRED, KEY_MISS, NEW};
        let flags = self.notify_flags.load(Ordering::Relaxed);
        let sink = self.event_sink.get().filter(|_| owner_only);
        for (key, what) in noted {
            let (class, event) = match what {
                shoal_store::Noted::Expired => (EXPIRED, "expired"),
                shoal_store::Noted::Evicted => (EVICTED, "evicted"),
                shoal_store::Noted::Created => (NEW, "new"),
                shoal_store::Noted::Missed => (KEY_MISS, "keymiss"),
            };
            let spoken = sink.is_none_or(|s| s.speaks_for(shoal_store::key_slot(&key)));
            if crate::notify::publishes(flags, class) && spoken {
                self.publish_event(flags, event, &key);
            }
            let gone = matches!(
                what,
                shoal_store::Noted::Expired | shoal_store::Noted::Evicted
            );
            if gone && self.tracker.active() {
                let limit = self.with_settings(|s| s.client_output_buffer_limit.pubsub);
                self.tracker
                    .invalidate(std::slice::from_ref(&key), 0, None, &self.pubsub, limit);
            }
        }
    }

    fn publish_event(&self, flags: u32, event: &str, key: &[u8]) {
        use crate::notify::{keyevent_channel, keyspace_channel, KEYEVENT, KEYSPACE};
        let (db, name) = shoal_store::split_key(key);
        let (limit, clients) = self.with_settings(|s| {
            let clients = Engine::client_memory_limit_of(s);
            (s.client_output_buffer_limit.pubsub, clients)
        });
        let sink = self.event_sink.get();
        let send = |channel: Bytes, message: Bytes| {
            let accounting = (&self.clients, clients);
            self.pubsub
                .publish(&channel, &message, false, limit, accounting);
            if let Some(sink) = sink {
                sink.publish(false, channel, message);
            }
        };
        if flags & KEYSPACE != 0 {
            send(
                keyspace_channel(db, name),
                Bytes::copy_from_slice(event.as_bytes()),
            );
        }
        if flags & KEYEVENT != 0 {
            send(keyevent_channel(db, event), Bytes::copy_from_slice(name));
        }
    }

    /// `used_memory` as Redis reports it: what the allocator handed out, or the store's own
    /// count where no allocator statistics are installed.
    pub fn used_memory(&self) -> u64 {
        self.memory
            .sample()
            .map_or(self.store.used_memory(), |s| s.allocated)
    }

    /// Reads the allocator (if its statistics are installed) and sets the store's limit so
    /// that the allocator's total stays under `maxmemory` (see `memory`). Called by the cron
    /// task at `hz` and whenever `maxmemory` changes.
    pub fn refresh_memory(&self) {
        let maxmemory = self.with_settings(|s| s.maxmemory.0);
        let sample = crate::memory::allocator().and_then(|a| a.sample());
        let Some(sample) = sample else {
            self.store.set_maxmemory(maxmemory);
            return;
        };
        self.memory.record(&sample);
        let base = self.memory.base_held.load(Ordering::Relaxed);
        let store = self.store.used_memory();
        let limit = crate::memory::store_limit(maxmemory, store, &sample, base);
        self.store.set_maxmemory(limit);
        self.store.set_overfull(crate::memory::overfull(
            maxmemory,
            self.memory.base_allocated.load(Ordering::Relaxed),
        ));
    }

    /// A copy of the current settings.
    pub fn settings(&self) -> NodeConfig {
        self.settings
            .read()
            .expect("settings lock poisoned")
            .clone()
    }

    /// Reads the settings without copying them.
    pub fn with_settings<R>(&self, f: impl FnOnce(&NodeConfig) -> R) -> R {
        f(&self.settings.read().expect("settings lock poisoned"))
    }

    /// Changes the settings; the closure validates and may refuse. Hold
    /// [`Engine::settings_writer`] around a read-change-commit that spans calls.
    pub fn update_settings<R>(&self, f: impl FnOnce(&mut NodeConfig) -> R) -> R {
        let mut settings = self.settings.write().expect("settings lock poisoned");
        let r = f(&mut settings);
        // Under the write lock: a reader that sees the new version reads the new settings.
        self.settings_version.fetch_add(1, Ordering::Release);
        r
    }

    /// Serializes the writers of settings (CONFIG SET, memcached's `cache_memlimit`), so one
    /// that reads, works without the settings lock, then commits loses no other's change.
    pub fn settings_writer(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The protocol limits in force now.
    pub fn limits(&self) -> Limits {
        self.with_settings(Engine::limits_of)
    }

    /// The protocol limits of `settings`.
    pub fn limits_of(settings: &NodeConfig) -> Limits {
        Limits {
            max_bulk_len: usize::try_from(settings.proto_max_bulk_len.0).unwrap_or(usize::MAX),
            max_args: settings.proto_max_multibulk_len,
            max_inline_len: usize::try_from(settings.proto_inline_max_size.0).unwrap_or(usize::MAX),
            ..Limits::default()
        }
    }

    /// `maxmemory-clients` in bytes now (0 = none; see `ClientMemoryLimit::bytes`).
    pub fn client_memory_limit_of(settings: &NodeConfig) -> u64 {
        settings.maxmemory_clients.bytes(settings.maxmemory.0)
    }

    /// Records `used` and returns the peak so far.
    pub fn peak_memory(&self, used: u64) -> u64 {
        self.peak.fetch_max(used, Ordering::Relaxed).max(used)
    }

    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }
}

fn run_id(seed: u64) -> String {
    // 40 hex characters like Redis's run_id; unique enough per start (time + pid mixed).
    let mut x = seed ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    let mut out = String::with_capacity(40);
    while out.len() < 40 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(&format!("{x:016x}"));
    }
    out.truncate(40);
    out
}

#[cfg(test)]
mod tests {
    use super::{Engine, Snapshot};
    use crate::config::NodeConfig;

    #[test]
    fn a_snapshot_reads_the_settings_again_only_after_they_changed() {
        let engine = Engine::new(NodeConfig::default(), None);
        let mut snapshot = Snapshot::default();
        let mut reads = 0;
        let mut timeout = |engine: &Engine, snapshot: &mut Snapshot<u64>| {
            *snapshot.get(engine, |s| {
                reads += 1;
                s.timeout
            })
        };
        let first = timeout(&engine, &mut snapshot);
        assert_eq!(timeout(&engine, &mut snapshot), first);
        engine.update_settings(|s| s.timeout = first + 7);
        assert_eq!(timeout(&engine, &mut snapshot), first + 7);
        assert_eq!(timeout(&engine, &mut snapshot), first + 7);
        assert_eq!(reads, 2, "read once, and once after the change");
    }
}
