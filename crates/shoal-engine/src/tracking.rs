//! Client-side caching (Redis 6's CLIENT TRACKING): which tracking clients read which keys,
//! or watch which key prefixes (BCAST), and the invalidations a change of those keys sends
//! them. A client's invalidations go to its own connection in RESP3 (`invalidate` pushes),
//! or, with REDIRECT, to another client's, which in RESP2 gets them as messages on
//! `__redis__:invalidate` (it must be subscribed), as in Redis. Every hook is one atomic
//! load while no client tracks.
//!
//! In a cluster a key's changes happen at its owner, so a client's reads of keys another
//! node owns are remembered twice: here, for the client, when the read's reply arrives
//! ([`Tracker::arrived`]); and at the owner, for this node as a whole (a *member reader*,
//! [`Origin`]), before the read runs there. The owner's invalidations for a member reader go
//! to that member through the cluster layer ([`RemoteSink`]), which hands them to this
//! node's tracker ([`Tracker::invalidated_elsewhere`]) to tell its own clients. An
//! invalidation that arrives before the reply it follows (two connections) is remembered a
//! while ([`RECENT`]) so that reply is followed by it too; what cannot be told for sure (a
//! lost batch, a view change) ends in a flush of every tracking client (a null), which
//! Redis's clients read as "drop everything".

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{
    AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;

use crate::config::ClassLimit;
use crate::pubsub::{Invalidation, Mailbox, Message, PubSub};

/// How one client tracks (CLIENT TRACKING's options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    /// Where its invalidations go (a client id); 0: its own connection.
    pub redirect: u64,
    pub bcast: bool,
    pub prefixes: Vec<Bytes>,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
}

/// Who made a change, or who reads, when it came from another node's client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The member its client is connected to.
    pub member: Arc<str>,
    /// The client's id on that member.
    pub client: u64,
    /// The client tracks what this command reads (default mode): the member is remembered as
    /// a reader of its keys here.
    pub tracks: bool,
}

/// Where this node's invalidations for another member's readers go (the cluster layer's
/// queues; set once).
pub trait RemoteSink: Send + Sync {
    /// `key` (as stored) changed, by client `by` of `member` (0: by anyone else).
    fn invalidate(&self, member: &str, key: Bytes, by: u64);
    /// Everything `member` read here is void (FLUSHALL, or its table entry was dropped).
    fn flush(&self, member: &str);
    /// The prefixes this node's BCAST clients watch changed ([`Tracker::bcast_prefixes`]):
    /// the other members are to learn them.
    fn prefixes_changed(&self);
}

/// Invalidations from other nodes remembered, at most, for the replies still on their way
/// that they may have overtaken (past it a reply of a read sent before the oldest is
/// followed by an invalidation of its keys anyway); and their keys' bytes at most.
pub const RECENT: usize = 4096;
const RECENT_BYTES: usize = 1 << 20;

/// Where a tracking client's invalidations go.
enum To {
    /// A client of this node.
    Mailbox(Arc<Mailbox>),
    /// Another member (its clients' reads of keys this node owns).
    Member(Arc<str>),
}

struct Client {
    mode: Mode,
    to: To,
    /// Its redirect target disconnected ([`Tracker::client_gone`]).
    target_gone: bool,
    /// An invalidation found the target gone: CLIENT TRACKINGINFO's `broken_redirect`.
    broken: std::sync::atomic::AtomicBool,
    /// It read something since its last null ([`Tracker::flushed_elsewhere`] skips it
    /// otherwise: a FLUSHALL's null comes from every node that flushed).
    dirty: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct State {
    clients: HashMap<u64, Client>,
    /// Default mode: who read each key since its last invalidation.
    keys: HashMap<Bytes, HashSet<u64>>,
    /// Keys in the order they were first remembered, to drop the oldest past the bound
    /// (`tracking-table-max-keys`; past it each goes with an invalidation, as in Redis).
    order: std::collections::VecDeque<Bytes>,
    /// BCAST clients.
    bcast: HashSet<u64>,
    /// The ids of the members reading here (their entries in `clients`).
    members: HashMap<Arc<str>, u64>,
    /// The prefixes each member's BCAST clients watch (by the member's id).
    member_prefixes: HashMap<u64, Vec<Bytes>>,
    next_member: u64,
    /// Invalidations from other nodes, numbered, the latest [`RECENT`] (stored keys), and
    /// their keys' bytes.
    recent: std::collections::VecDeque<(u64, Bytes)>,
    recent_bytes: usize,
    /// The number of the last invalidation from another node (or flush).
    seq: u64,
    /// The number of the last flush (every key void).
    flushed_at: u64,
}

/// Which of a change's clients [`Tracker::invalidate_parts`] tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parts {
    /// Those that read the keys (and the members whose clients did).
    Readers,
    /// Those that watch their prefixes (BCAST; and the members whose clients do).
    Prefixes,
    Both,
}

/// Member readers' ids: above any client id.
const MEMBER_IDS: u64 = 1 << 62;

#[derive(Default)]
pub struct Tracker {
    state: Mutex<State>,
    /// Tracking clients and member readers: 0 makes every hook free.
    count: AtomicUsize,
    /// Member readers (in `count`, not in INFO's `tracking_clients`).
    member_count: AtomicUsize,
    /// How many times `tracking-table-max-keys` was set ([`Tracker::bound_set`]), and which
    /// of those the table was last brought within ([`Tracker::trim`]): while they differ
    /// the table may hold more than its bound ([`Tracker::bound_pending`]).
    bound_sets: AtomicU64,
    bound_met: AtomicU64,
    sink: std::sync::OnceLock<Box<dyn RemoteSink>>,
}

impl Tracker {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True while some client tracks.
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) > 0
    }

    /// Client `id` tracks from now on as `mode`; its own invalidations go to `mailbox`.
    pub fn enable(&self, id: u64, mode: Mode, mailbox: Arc<Mailbox>) {
        let mut s = self.lock();
        let was_bcast = if mode.bcast {
            !s.bcast.insert(id)
        } else {
            s.bcast.remove(&id)
        };
        let client = Client {
            mode,
            to: To::Mailbox(mailbox),
            target_gone: false,
            broken: Default::default(),
            dirty: std::sync::atomic::AtomicBool::new(true),
        };
        if s.clients.insert(id, client).is_none() {
            self.count.fetch_add(1, Relaxed);
        }
        if s.clients[&id].mode.bcast || was_bcast {
            self.prefixes_changed();
        }
    }

    /// Client `id` disconnected: the clients redirecting to it have nowhere to send to.
    pub fn client_gone(&self, id: u64) {
        if !self.active() {
            return;
        }
        for c in self.lock().clients.values_mut() {
            if c.mode.redirect == id {
                c.target_gone = true;
            }
        }
    }

    /// Whether client `id`'s redirect was found broken (CLIENT TRACKINGINFO).
    pub fn redirect_broken(&self, id: u64) -> bool {
        self.lock()
            .clients
            .get(&id)
            .is_some_and(|c| c.broken.load(Relaxed))
    }

    /// Client `id` no longer tracks (CLIENT TRACKING OFF, or it went). Its remembered keys
    /// are forgotten lazily (an invalidation finds it gone).
    pub fn disable(&self, id: u64) {
        let mut s = self.lock();
        if s.bcast.remove(&id) {
            self.prefixes_changed();
        }
        if s.clients.remove(&id).is_some() {
            self.count.fetch_sub(1, Relaxed);
        }
    }

    /// Sets where invalidations for other members go (once; the cluster layer).
    pub fn set_sink(&self, sink: Box<dyn RemoteSink>) {
        let _ = self.sink.set(sink);
    }

    fn prefixes_changed(&self) {
        if let Some(sink) = self.sink.get() {
            sink.prefixes_changed();
        }
    }

    /// Every prefix this node's BCAST clients watch, in byte order, once each (the empty
    /// one: every key).
    pub fn bcast_prefixes(&self) -> Vec<Bytes> {
        let s = self.lock();
        let mut all: Vec<Bytes> = s
            .bcast
            .iter()
            .filter_map(|id| s.clients.get(id))
            .flat_map(|c| c.mode.prefixes.iter().cloned())
            .collect();
        all.sort();
        all.dedup();
        all
    }

    /// Member `member`'s BCAST clients watch `prefixes` (all of them; none: it has none):
    /// every change of a key under one of them here is told to it. True if the member is
    /// new here (see [`Tracker::remember_for`]).
    pub fn set_member_prefixes(&self, member: &Arc<str>, prefixes: Vec<Bytes>) -> bool {
        let mut s = self.lock();
        let (id, new) = self.member_id(&mut s, member);
        if prefixes.is_empty() {
            s.member_prefixes.remove(&id);
        } else {
            s.member_prefixes.insert(id, prefixes);
        }
        new
    }

    /// Member `member`'s id here, and whether it was new.
    fn member_id(&self, s: &mut State, member: &Arc<str>) -> (u64, bool) {
        if let Some(&id) = s.members.get(member) {
            return (id, false);
        }
        let id = MEMBER_IDS + s.next_member;
        s.next_member += 1;
        s.members.insert(member.clone(), id);
        let client = Client {
            mode: Mode::default(),
            to: To::Member(member.clone()),
            target_gone: false,
            broken: Default::default(),
            dirty: std::sync::atomic::AtomicBool::new(true),
        };
        s.clients.insert(id, client);
        self.count.fetch_add(1, Relaxed);
        self.member_count.fetch_add(1, Relaxed);
        (id, true)
    }

    /// Client `id` read `keys` (stored keys of a read-only command): they are remembered
    /// for it (default mode).
    /// Past `max_keys` remembered (0: no bound), the oldest go, their readers told.
    pub fn remember(
        &self,
        id: u64,
        keys: &[Bytes],
        max_keys: u64,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) {
        let mut s = self.lock();
        self.remember_locked(&mut s, id, keys, max_keys, pubsub, limit);
    }

    /// Another member's client read `keys` here (`origin.tracks`): the member is remembered
    /// as their reader, as a client would be. True if the member reads here from now on
    /// (the engine then notes expiries and evictions: `Engine::refresh_notes`).
    pub fn remember_for(
        &self,
        member: &Arc<str>,
        keys: &[Bytes],
        max_keys: u64,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) -> bool {
        let mut s = self.lock();
        let (id, new) = self.member_id(&mut s, member);
        self.remember_locked(&mut s, id, keys, max_keys, pubsub, limit);
        new
    }

    /// Member `member` left the cluster: what it read here is forgotten (lazily).
    pub fn forget_member(&self, member: &str) {
        let mut s = self.lock();
        if let Some(id) = s.members.remove(member) {
            s.clients.remove(&id);
            s.member_prefixes.remove(&id);
            self.count.fetch_sub(1, Relaxed);
            self.member_count.fetch_sub(1, Relaxed);
        }
    }

    /// The number of the latest invalidation from another node: a forwarded read sent now
    /// passes it to [`Tracker::arrived`] with its reply.
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }

    /// The reply of client `id`'s forwarded read of `keys` (stored) arrived, the read sent
    /// when [`Tracker::seq`] was `since`: the keys are remembered for the client, and those
    /// an invalidation from another node named since (all of them after a flush, or when
    /// that is no longer known) are returned: their invalidation may have come before the
    /// reply, and must follow it. Returned only for a client told on its own connection,
    /// which sends them right behind the reply; one that redirects is told here.
    pub fn arrived(
        &self,
        id: u64,
        keys: &[Bytes],
        since: u64,
        max_keys: u64,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) -> Vec<Bytes> {
        let mut s = self.lock();
        let Some(c) = s.clients.get(&id) else {
            return Vec::new();
        };
        let redirects = c.mode.redirect != 0;
        self.remember_locked(&mut s, id, keys, max_keys, pubsub, limit);
        if s.seq == since {
            return Vec::new();
        }
        let unknown = s.flushed_at > since || s.recent.front().is_none_or(|(n, _)| *n > since + 1);
        let overtaken: Vec<Bytes> = keys
            .iter()
            .filter(|k| {
                unknown
                    || s.recent
                        .iter()
                        .rev()
                        .take_while(|(n, _)| *n > since)
                        .any(|(_, r)| r == *k)
            })
            .cloned()
            .collect();
        if overtaken.is_empty() {
            return overtaken;
        }
        // Told now, so forgotten again.
        for k in &overtaken {
            if let Some(ids) = s.keys.get_mut(&k[..]) {
                ids.remove(&id);
                if ids.is_empty() {
                    s.keys.remove(&k[..]);
                }
            }
        }
        let names: Vec<Bytes> = overtaken
            .iter()
            .map(|k| Bytes::copy_from_slice(shoal_store::split_key(k).1))
            .collect();
        if redirects {
            send(self, &s, id, Invalidation::Keys(names), pubsub, limit);
            return Vec::new();
        }
        names
    }

    /// Another node's invalidations for this node's readers: each (stored key, the client
    /// of this node that made the change or 0) is told to the clients here that read it.
    /// Consecutive changes by the same client go as one change of their keys (a BCAST
    /// client gets one push per prefix for them).
    pub fn invalidated_elsewhere(
        &self,
        changes: &[(Bytes, u64)],
        pubsub: &PubSub,
        limit: ClassLimit,
    ) {
        for (key, _) in changes {
            {
                let mut s = self.lock();
                s.seq += 1;
                let n = s.seq;
                s.recent_bytes += key.len();
                s.recent.push_back((n, Bytes::copy_from_slice(key)));
                while s.recent.len() > RECENT || s.recent_bytes > RECENT_BYTES {
                    let Some((_, old)) = s.recent.pop_front() else {
                        break;
                    };
                    s.recent_bytes -= old.len();
                }
            }
        }
        for run in changes.chunk_by(|a, b| a.1 == b.1) {
            let keys: Vec<Bytes> = run.iter().map(|(k, _)| k.clone()).collect();
            self.invalidate(&keys, run[0].1, None, pubsub, limit);
        }
    }

    /// Every read of another node's keys may be void (a batch of invalidations was lost,
    /// the view changed): every tracking client is told with a null, as after a FLUSHALL.
    pub fn flushed_elsewhere(&self, pubsub: &PubSub, limit: ClassLimit) {
        let mut s = self.lock();
        s.seq += 1;
        s.flushed_at = s.seq;
        s.recent.clear();
        s.recent_bytes = 0;
        if self.clients() == 0 {
            return;
        }
        // The clients' reads are forgotten; the other members' stay (their owners are here).
        s.keys.retain(|_, ids| {
            ids.retain(|id| *id >= MEMBER_IDS);
            !ids.is_empty()
        });
        // Not again to a client that read nothing since its last null (a FLUSHALL's nulls
        // come from every node), but always to a BCAST one (its reads are not seen here).
        let ids: Vec<u64> = s
            .clients
            .iter()
            .filter(|(id, c)| **id < MEMBER_IDS && (c.mode.bcast || c.dirty.swap(false, Relaxed)))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            send(self, &s, id, Invalidation::All, pubsub, limit);
        }
    }

    fn remember_locked(
        &self,
        s: &mut State,
        id: u64,
        keys: &[Bytes],
        max_keys: u64,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) {
        let Some(c) = s.clients.get(&id) else {
            return;
        };
        c.dirty.store(true, Relaxed);
        for k in keys {
            match s.keys.get_mut(&k[..]) {
                Some(ids) => {
                    ids.insert(id);
                }
                None => {
                    let k = Bytes::copy_from_slice(k);
                    s.keys.insert(k.clone(), HashSet::from([id]));
                    s.order.push_back(k);
                }
            }
        }
        compact(s);
        self.evict_past(s, max_keys, usize::MAX, pubsub, limit);
    }

    /// Past `max_keys` remembered (`tracking-table-max-keys`, 0: no bound), the oldest keys
    /// go, their readers told, `at_most` of them; for a bound lowered by CONFIG SET, the
    /// cron and each client command call it. `bound` is [`Tracker::bound_pending`]'s (or
    /// [`Tracker::bound_sets_now`]'s), read before `max_keys`: once the table is within
    /// `max_keys`, that setting counts as met.
    pub fn trim(
        &self,
        bound: u64,
        max_keys: u64,
        at_most: usize,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) {
        if self.active() {
            let mut s = self.lock();
            if self.evict_past(&mut s, max_keys, at_most, pubsub, limit) {
                self.bound_met.fetch_max(bound, Release);
            }
        }
    }

    /// `tracking-table-max-keys` was set (CONFIG SET, after the new settings are in): the
    /// table is trimmed to it before the next client commands (`Engine::trim_tracking_if_set`)
    /// and by the cron.
    pub fn bound_set(&self) {
        self.bound_sets.fetch_add(1, Release);
    }

    /// The setting of `tracking-table-max-keys` (a count, for [`Tracker::trim`]) the table
    /// may not be within yet, if any: one atomic load or two.
    pub fn bound_pending(&self) -> Option<u64> {
        let sets = self.bound_sets.load(Acquire);
        (sets != self.bound_met.load(Acquire)).then_some(sets)
    }

    /// The settings of `tracking-table-max-keys` so far (for [`Tracker::trim`] by the cron).
    pub fn bound_sets_now(&self) -> u64 {
        self.bound_sets.load(Acquire)
    }

    /// Drops the oldest keys past `max_keys`, `at_most` of them; true if the table is then
    /// within it.
    fn evict_past(
        &self,
        s: &mut State,
        max_keys: u64,
        at_most: usize,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) -> bool {
        let max_keys = match usize::try_from(max_keys) {
            Ok(0) | Err(_) => usize::MAX,
            Ok(n) => n,
        };
        for _ in 0..at_most {
            if s.keys.len() <= max_keys {
                break;
            }
            let Some(old) = s.order.pop_front() else {
                break;
            };
            if let Some(ids) = s.keys.remove(&old) {
                for target in ids {
                    tell(self, s, target, &old, 0, None, pubsub, limit);
                }
            }
        }
        s.keys.len() <= max_keys
    }

    /// `keys` (as stored) changed, by client `by` (0: not a client's command) of member
    /// `by_member` (`None`: of this node): every client that read one of them since, or
    /// watches a prefix of it, is told (but `by` itself under NOLOOP), and every member
    /// whose clients read it.
    pub fn invalidate(
        &self,
        keys: &[Bytes],
        by: u64,
        by_member: Option<&str>,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) {
        self.invalidate_parts(keys, by, by_member, Parts::Both, pubsub, limit);
    }

    /// [`Tracker::invalidate`], for the clients (and members) that read the keys, or for
    /// those that watch their prefixes (BCAST), or both: inside an EXEC or a script the
    /// readers are told as each command changes a key, as in Redis (a read after the write
    /// in the same transaction is not invalidated by it), and the BCAST clients once at its
    /// end, one push per prefix.
    pub fn invalidate_parts(
        &self,
        keys: &[Bytes],
        by: u64,
        by_member: Option<&str>,
        parts: Parts,
        pubsub: &PubSub,
        limit: ClassLimit,
    ) {
        let (readers_too, prefixes_too) = match parts {
            Parts::Readers => (true, false),
            Parts::Prefixes => (false, true),
            Parts::Both => (true, true),
        };
        let mut s = self.lock();
        // BCAST clients get one push per prefix with the prefix's keys in byte order, as
        // Redis sends them (it gathers them over its event loop's turn, Shoal over a command).
        let mut broadcast: HashMap<u64, std::collections::BTreeMap<Bytes, Vec<Bytes>>> =
            HashMap::new();
        for k in keys {
            let (_, name) = shoal_store::split_key(k);
            let by_here = if by_member.is_none() { by } else { 0 };
            // A member is told once, whether its clients read the key or watch its prefix
            // (then with the prefixes).
            let watches = |s: &State, id: &u64| {
                s.member_prefixes
                    .get(id)
                    .is_some_and(|ps| ps.iter().any(|p| name.starts_with(p)))
            };
            let mut members: Vec<u64> = Vec::new();
            if readers_too {
                // A client now in BCAST mode is told through its prefixes only.
                let readers: Vec<u64> = s
                    .keys
                    .remove(&k[..])
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|id| !s.bcast.contains(id))
                    .collect();
                for target in readers {
                    if target >= MEMBER_IDS {
                        if !watches(&s, &target) {
                            members.push(target);
                        }
                    } else if !(target == by_here
                        && s.clients.get(&target).is_some_and(|c| c.mode.noloop))
                    {
                        tell(self, &s, target, k, by, by_member, pubsub, limit);
                    }
                }
            }
            if prefixes_too {
                for id in s.member_prefixes.keys() {
                    if watches(&s, id) && !members.contains(id) {
                        members.push(*id);
                    }
                }
            }
            for target in members {
                tell(self, &s, target, k, by, by_member, pubsub, limit);
            }
            if !prefixes_too {
                continue;
            }
            for id in &s.bcast {
                let Some(c) = s.clients.get(id) else { continue };
                if *id == by_here && c.mode.noloop {
                    continue;
                }
                for p in c.mode.prefixes.iter().filter(|p| name.starts_with(p)) {
                    broadcast
                        .entry(*id)
                        .or_default()
                        .entry(p.clone())
                        .or_default()
                        .push(Bytes::copy_from_slice(name));
                }
            }
        }
        for (target, prefixes) in broadcast {
            for (_, mut names) in prefixes {
                names.sort();
                names.dedup();
                send(self, &s, target, Invalidation::Keys(names), pubsub, limit);
            }
        }
        compact(&mut s);
    }

    /// Every key changed (FLUSHALL, FLUSHDB): every tracking client is told with a null, and
    /// the table is emptied. In a cluster (a sink is set) every node that flushed tells, so
    /// a client that read nothing since its last null is not told again (but a BCAST one).
    pub fn invalidate_all(&self, pubsub: &PubSub, limit: ClassLimit) {
        let mut s = self.lock();
        s.keys.clear();
        s.order.clear();
        let clustered = self.sink.get().is_some();
        let ids: Vec<u64> = s
            .clients
            .iter()
            .filter(|(_, c)| {
                let dirty = c.dirty.swap(false, Relaxed);
                !clustered || dirty || c.mode.bcast || matches!(c.to, To::Member(_))
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            send(self, &s, id, Invalidation::All, pubsub, limit);
        }
    }

    /// Forgets every remembered key, telling nobody (FLUSHALL while no client tracks).
    pub fn forget_all(&self) {
        let mut s = self.lock();
        s.keys.clear();
        s.order.clear();
    }

    /// Keys remembered (for INFO's `tracking_total_keys`).
    pub fn keys(&self) -> usize {
        self.lock().keys.len()
    }

    /// Keys remembered, counted once per client that read them (INFO's
    /// `tracking_total_items`).
    pub fn items(&self) -> usize {
        self.lock().keys.values().map(HashSet::len).sum()
    }

    /// Distinct prefixes BCAST clients watch (INFO's `tracking_total_prefixes`).
    pub fn prefixes(&self) -> usize {
        let s = self.lock();
        let all: HashSet<&Bytes> = s
            .bcast
            .iter()
            .filter_map(|id| s.clients.get(id))
            .flat_map(|c| c.mode.prefixes.iter())
            .collect();
        all.len()
    }

    /// Clients tracking (INFO's `tracking_clients`).
    pub fn clients(&self) -> usize {
        self.count.load(Relaxed) - self.member_count.load(Relaxed)
    }
}

/// Drops from `order` the keys no longer remembered (and repeats) once it holds twice as
/// many as the table, so it stays within a constant of the table's size.
fn compact(s: &mut State) {
    if s.order.len() <= 2 * s.keys.len() + 1024 {
        return;
    }
    let mut seen = HashSet::with_capacity(s.keys.len());
    let keys = &s.keys;
    s.order
        .retain(|k| keys.contains_key(k) && seen.insert(k.clone()));
}

/// Tells reader `id` that stored key `key` changed by client `by` of `by_member` (`None`:
/// this node's): a client gets the key's name, a member the stored key (and `by` when the
/// change came from one of its clients, for NOLOOP there).
#[allow(clippy::too_many_arguments)]
fn tell(
    t: &Tracker,
    s: &State,
    id: u64,
    key: &Bytes,
    by: u64,
    by_member: Option<&str>,
    pubsub: &PubSub,
    limit: ClassLimit,
) {
    match s.clients.get(&id).map(|c| &c.to) {
        Some(To::Member(m)) => {
            if let Some(sink) = t.sink.get() {
                let by = if by_member == Some(&**m) { by } else { 0 };
                sink.invalidate(m, key.clone(), by);
            }
        }
        Some(To::Mailbox(_)) => {
            // The client's key, without a numbered database's prefix.
            let name = Bytes::copy_from_slice(shoal_store::split_key(key).1);
            send(t, s, id, Invalidation::Keys(vec![name]), pubsub, limit);
        }
        None => {}
    }
}

/// Sends an invalidation to tracking client `id`: on its connection, or its redirect
/// target's (subscribed, as Redis asks of a RESP2 target). A member reader is sent only
/// flushes this way ([`tell`] sends it keys).
fn send(t: &Tracker, s: &State, id: u64, what: Invalidation, pubsub: &PubSub, limit: ClassLimit) {
    let Some(c) = s.clients.get(&id) else { return };
    let own = match &c.to {
        To::Mailbox(m) => m,
        To::Member(member) => {
            if let (Invalidation::All, Some(sink)) = (&what, t.sink.get()) {
                sink.flush(member);
            }
            return;
        }
    };
    // RESP2 cannot push between replies: a RESP2 client is told only through a redirect.
    let (mailbox, what) = match c.mode.redirect {
        0 => (Some(own.clone()).filter(|m| m.resp3()), what),
        target => match pubsub.mailbox_of(target) {
            Some(m) => (Some(m), what),
            // The target is gone: a RESP3 client is told so instead, as Redis tells it.
            None if c.target_gone => {
                c.broken.store(true, Relaxed);
                (
                    Some(own.clone()).filter(|m| m.resp3()),
                    Invalidation::RedirBroken(target),
                )
            }
            // Connected but subscribed to nothing: it has no mailbox to take it (README).
            None => (None, what),
        },
    };
    if let Some(m) = mailbox {
        m.deliver(Message::invalidation(what), limit, Instant::now());
    }
}

/// A client's tracking, held by its session; dropping it (CLIENT TRACKING OFF, or the
/// client went) ends it.
pub struct Tracking {
    pub mode: Mode,
    /// CLIENT CACHING YES (OPTIN) or NO (OPTOUT) was given for the next command.
    pub caching: bool,
    tracker: Arc<Tracker>,
    id: u64,
}

impl Tracking {
    pub fn new(tracker: Arc<Tracker>, id: u64, mode: Mode, mailbox: Arc<Mailbox>) -> Tracking {
        tracker.enable(id, mode.clone(), mailbox);
        Tracking {
            mode,
            caching: false,
            tracker,
            id,
        }
    }

    /// Tracks as `mode` from now on.
    pub fn change(&mut self, mode: Mode, mailbox: Arc<Mailbox>) {
        self.tracker.enable(self.id, mode.clone(), mailbox);
        self.mode = mode;
    }

    /// True if the keys of the read it just ran are remembered (default mode; OPTIN only
    /// after CACHING YES, OPTOUT unless after CACHING NO).
    pub fn remembers(&self) -> bool {
        let m = &self.mode;
        if m.bcast {
            false
        } else if m.optin {
            self.caching
        } else if m.optout {
            !self.caching
        } else {
            true
        }
    }
}

impl Drop for Tracking {
    fn drop(&mut self) {
        self.tracker.disable(self.id);
    }
}

/// What of a key a change shows in: its version (a new value), its TTL; `None` when absent.
pub type KeyMark = Option<(u64, Option<u64>)>;

/// `key`'s mark now, read without counting or touching it.
pub fn key_mark(store: &shoal_store::Store, key: &[u8], now_ms: u64) -> KeyMark {
    store.read(key, now_ms, shoal_store::Access::Peek, |e| {
        e.map(|e| (e.version, e.expire_at_ms))
    })
}

/// The marks of `keys` now (a write's keys before it runs).
pub fn marks(store: &shoal_store::Store, keys: &[Bytes], now_ms: u64) -> Vec<KeyMark> {
    keys.iter().map(|k| key_mark(store, k, now_ms)).collect()
}

/// Those of `keys` whose mark is no longer `before`'s: the keys a write changed.
pub fn changed(
    store: &shoal_store::Store,
    keys: Vec<Bytes>,
    before: Vec<KeyMark>,
    now_ms: u64,
) -> Vec<Bytes> {
    keys.into_iter()
        .zip(before)
        .filter(|(k, m)| key_mark(store, k, now_ms) != *m)
        .map(|(k, _)| k)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientInfo;
    use crate::pubsub::Subscriber;

    /// What the tracker sent to other members, as text.
    #[derive(Default)]
    struct Sent(Arc<Mutex<Vec<String>>>);

    impl RemoteSink for Sent {
        fn invalidate(&self, member: &str, key: Bytes, by: u64) {
            let key = String::from_utf8_lossy(&key).into_owned();
            self.0
                .lock()
                .unwrap()
                .push(format!("{member} {key} by {by}"));
        }
        fn flush(&self, member: &str) {
            self.0.lock().unwrap().push(format!("{member} flush"));
        }
        fn prefixes_changed(&self) {
            self.0.lock().unwrap().push("prefixes".into());
        }
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    /// A RESP3 client's mailbox, and what it holds (invalidations as text).
    fn mailbox(ps: &Arc<PubSub>) -> Arc<Mailbox> {
        let info = ClientInfo::internal();
        info.resp.store(3, Relaxed);
        Subscriber::new(ps.clone(), info).mailbox().clone()
    }

    fn told(m: &Mailbox) -> Vec<String> {
        m.take(usize::MAX)
            .unwrap()
            .into_iter()
            .map(|m| format!("{:?}", m.reply(shoal_resp::Protocol::Resp3)))
            .collect()
    }

    fn tracker() -> (Tracker, Arc<Mutex<Vec<String>>>, Arc<PubSub>) {
        let t = Tracker::default();
        let sent = Sent::default();
        let log = sent.0.clone();
        t.set_sink(Box::new(sent));
        (t, log, Arc::new(PubSub::default()))
    }

    const LIMIT: ClassLimit = ClassLimit {
        hard: 0,
        soft: 0,
        soft_seconds: 0,
    };

    #[test]
    fn a_members_reads_are_told_to_it_with_the_writer_for_noloop() {
        let (t, sent, ps) = tracker();
        let n1: Arc<str> = "n1".into();
        assert!(t.remember_for(&n1, &[b("a"), b("b")], 0, &ps, LIMIT));
        assert!(
            !t.remember_for(&n1, &[b("c")], 0, &ps, LIMIT),
            "known already"
        );
        assert!(t.active());
        assert_eq!(t.clients(), 0, "a member is not a tracking client");
        // Changed by client 7 of n1 (named for its NOLOOP), then by a client of n2 and of
        // this node (named 0), then again: told once per read.
        t.invalidate(&[b("a")], 7, Some("n1"), &ps, LIMIT);
        t.invalidate(&[b("b")], 7, Some("n2"), &ps, LIMIT);
        t.invalidate(&[b("c")], 9, None, &ps, LIMIT);
        t.invalidate(&[b("a"), b("b"), b("c")], 9, None, &ps, LIMIT);
        assert_eq!(
            *sent.lock().unwrap(),
            ["n1 a by 7", "n1 b by 0", "n1 c by 0"]
        );
        // A FLUSHALL flushes it; once it left it hears nothing more.
        t.remember_for(&n1, &[b("d")], 0, &ps, LIMIT);
        t.invalidate_all(&ps, LIMIT);
        assert_eq!(sent.lock().unwrap().last().unwrap(), "n1 flush");
        t.remember_for(&n1, &[b("e")], 0, &ps, LIMIT);
        t.forget_member("n1");
        assert!(!t.active());
        t.invalidate(&[b("e")], 0, None, &ps, LIMIT);
        assert_eq!(sent.lock().unwrap().len(), 4);
    }

    #[test]
    fn a_reply_overtaken_by_its_invalidation_is_followed_by_it() {
        let (t, _, ps) = tracker();
        let m = mailbox(&ps);
        t.enable(1, Mode::default(), m.clone());
        // Sent, then an invalidation of one of its keys came first: that key is told with
        // the reply (returned), and not remembered; the other is.
        let since = t.seq();
        t.invalidated_elsewhere(&[(b("a"), 0), (b("z"), 0)], &ps, LIMIT);
        assert!(told(&m).is_empty(), "nobody read them yet");
        let overtaken = t.arrived(1, &[b("a"), b("b")], since, 0, &ps, LIMIT);
        assert_eq!(overtaken, [b("a")]);
        assert_eq!(t.keys(), 1);
        // Nothing came between: nothing to add.
        let since = t.seq();
        assert!(t.arrived(1, &[b("c")], since, 0, &ps, LIMIT).is_empty());
        // Later invalidations reach the mailbox as usual, by NOLOOP's rule for its own.
        t.invalidated_elsewhere(&[(b("b"), 0)], &ps, LIMIT);
        assert_eq!(told(&m).len(), 1);
        // A flush since it was sent: every key of the reply.
        let since = t.seq();
        t.flushed_elsewhere(&ps, LIMIT);
        assert_eq!(told(&m).len(), 1, "the flush itself: a null");
        assert_eq!(t.keys(), 0);
        let overtaken = t.arrived(1, &[b("x"), b("y")], since, 0, &ps, LIMIT);
        assert_eq!(overtaken, [b("x"), b("y")]);
        // More invalidations since than are remembered: every key too.
        let since = t.seq();
        let many: Vec<(Bytes, u64)> = (0..RECENT + 1).map(|i| (b(&format!("k{i}")), 0)).collect();
        t.invalidated_elsewhere(&many, &ps, LIMIT);
        assert_eq!(t.arrived(1, &[b("q")], since, 0, &ps, LIMIT), [b("q")]);
        // The keys of a numbered database come back without its prefix.
        let stored = shoal_store::stored_key(3, b"n");
        let since = t.seq();
        t.invalidated_elsewhere(&[(stored.clone(), 0)], &ps, LIMIT);
        assert_eq!(t.arrived(1, &[stored], since, 0, &ps, LIMIT), [b("n")]);
    }

    #[test]
    fn a_members_prefixes_tell_it_of_every_change_under_them_once() {
        let (t, sent, ps) = tracker();
        let n1: Arc<str> = "n1".into();
        assert!(t.set_member_prefixes(&n1, vec![b("user:"), b("user:1")]));
        t.remember_for(&n1, &[b("user:12")], 0, &ps, LIMIT);
        // Read and under two prefixes: told once; under none: not at all.
        t.invalidate(&[b("user:12"), b("other")], 3, Some("n1"), &ps, LIMIT);
        assert_eq!(*sent.lock().unwrap(), ["n1 user:12 by 3"]);
        // Its BCAST clients went: nothing more.
        assert!(!t.set_member_prefixes(&n1, Vec::new()));
        t.invalidate(&[b("user:9")], 0, None, &ps, LIMIT);
        assert_eq!(sent.lock().unwrap().len(), 1);
        // This node's own BCAST clients' prefixes, for the other members, once each.
        let m = mailbox(&ps);
        let bcast = |prefixes: &[&str]| Mode {
            bcast: true,
            prefixes: prefixes.iter().map(|p| b(p)).collect(),
            ..Mode::default()
        };
        t.enable(1, bcast(&["b", "a"]), m.clone());
        t.enable(2, bcast(&["a", ""]), m);
        assert_eq!(t.bcast_prefixes(), [b(""), b("a"), b("b")]);
        assert_eq!(
            sent.lock()
                .unwrap()
                .iter()
                .filter(|s| *s == "prefixes")
                .count(),
            2
        );
        t.disable(1);
        assert_eq!(t.bcast_prefixes(), [b(""), b("a")]);
        assert_eq!(sent.lock().unwrap().last().unwrap(), "prefixes");
    }

    #[test]
    fn a_flush_keeps_what_other_members_read_here() {
        let (t, sent, ps) = tracker();
        let m = mailbox(&ps);
        t.enable(1, Mode::default(), m.clone());
        t.remember(1, &[b("a")], 0, &ps, LIMIT);
        t.remember_for(&"n1".into(), &[b("a")], 0, &ps, LIMIT);
        t.flushed_elsewhere(&ps, LIMIT);
        assert_eq!(told(&m).len(), 1);
        assert!(sent.lock().unwrap().is_empty(), "n1 is not flushed");
        t.invalidate(&[b("a")], 0, None, &ps, LIMIT);
        assert_eq!(*sent.lock().unwrap(), ["n1 a by 0"]);
        assert!(told(&m).is_empty(), "the client's read was forgotten");
    }

    #[test]
    fn a_lowered_bound_is_pending_until_the_table_is_within_it() {
        let (t, _, ps) = tracker();
        let m = mailbox(&ps);
        t.enable(1, Mode::default(), m.clone());
        t.remember(1, &[b("a"), b("b"), b("c")], 0, &ps, LIMIT);
        assert_eq!(t.bound_pending(), None);
        // Set to 1 (twice: the count is of settings): pending until within it.
        t.bound_set();
        t.bound_set();
        let bound = t.bound_pending().expect("pending");
        t.trim(bound, 1, 1, &ps, LIMIT);
        assert_eq!(told(&m).len(), 1, "one key per call at most");
        assert_eq!(t.bound_pending(), Some(bound));
        t.trim(bound, 1, 1, &ps, LIMIT);
        assert_eq!(told(&m).len(), 1);
        assert_eq!((t.keys(), t.bound_pending()), (1, None));
        // A trim that read an older setting does not meet a newer one.
        t.bound_set();
        t.trim(bound, 1, usize::MAX, &ps, LIMIT);
        assert_eq!(t.bound_pending(), Some(bound + 1));
        t.trim(bound + 1, 1, usize::MAX, &ps, LIMIT);
        assert_eq!(t.bound_pending(), None);
    }
}
