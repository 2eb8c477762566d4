//! Client-side caching (Redis 6's CLIENT TRACKING): which tracking clients read which keys,
//! or watch which key prefixes (BCAST), and the invalidations a change of those keys sends
//! them. A client's invalidations go to its own connection in RESP3 (`invalidate` pushes),
//! or, with REDIRECT, to another client's, which in RESP2 gets them as messages on
//! `__redis__:invalidate` (it must be subscribed), as in Redis. Every hook is one atomic
//! load while no client tracks.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
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

struct Client {
    mode: Mode,
    mailbox: Arc<Mailbox>,
    /// Its redirect target disconnected ([`Tracker::client_gone`]).
    target_gone: bool,
    /// An invalidation found the target gone: CLIENT TRACKINGINFO's `broken_redirect`.
    broken: std::sync::atomic::AtomicBool,
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
}

#[derive(Default)]
pub struct Tracker {
    state: Mutex<State>,
    /// Tracking clients: 0 makes every hook free.
    count: AtomicUsize,
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
        if mode.bcast {
            s.bcast.insert(id);
        } else {
            s.bcast.remove(&id);
        }
        let client = Client {
            mode,
            mailbox,
            target_gone: false,
            broken: Default::default(),
        };
        if s.clients.insert(id, client).is_none() {
            self.count.fetch_add(1, Relaxed);
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
        s.bcast.remove(&id);
        if s.clients.remove(&id).is_some() {
            self.count.fetch_sub(1, Relaxed);
        }
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
        let max_keys = match usize::try_from(max_keys) {
            Ok(0) | Err(_) => usize::MAX,
            Ok(n) => n,
        };
        let mut s = self.lock();
        if !s.clients.contains_key(&id) {
            return;
        }
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
        compact(&mut s);
        // Past the table's bound: the oldest keys go, their readers told.
        while s.keys.len() > max_keys {
            let Some(old) = s.order.pop_front() else {
                break;
            };
            if let Some(ids) = s.keys.remove(&old) {
                // The client's key, without a numbered database's prefix.
                let name = Bytes::copy_from_slice(shoal_store::split_key(&old).1);
                for target in ids {
                    let what = Invalidation::Keys(vec![name.clone()]);
                    send(&s, target, what, pubsub, limit);
                }
            }
        }
    }

    /// `keys` (as stored) changed, by client `by` (0: not a client's command): every client
    /// that read one of them since, or watches a prefix of it, is told (but `by` itself
    /// under NOLOOP).
    pub fn invalidate(&self, keys: &[Bytes], by: u64, pubsub: &PubSub, limit: ClassLimit) {
        let mut s = self.lock();
        // BCAST clients get one push per prefix with the prefix's keys in byte order, as
        // Redis sends them (it gathers them over its event loop's turn, Shoal over a command).
        let mut broadcast: HashMap<u64, std::collections::BTreeMap<Bytes, Vec<Bytes>>> =
            HashMap::new();
        for k in keys {
            let (_, name) = shoal_store::split_key(k);
            // A client now in BCAST mode is told through its prefixes only.
            let readers: Vec<u64> = s
                .keys
                .remove(&k[..])
                .unwrap_or_default()
                .into_iter()
                .filter(|id| !s.bcast.contains(id))
                .collect();
            for target in readers {
                if !(target == by && s.clients.get(&target).is_some_and(|c| c.mode.noloop)) {
                    let what = Invalidation::Keys(vec![Bytes::copy_from_slice(name)]);
                    send(&s, target, what, pubsub, limit);
                }
            }
            for id in &s.bcast {
                let Some(c) = s.clients.get(id) else { continue };
                if *id == by && c.mode.noloop {
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
                send(&s, target, Invalidation::Keys(names), pubsub, limit);
            }
        }
        compact(&mut s);
    }

    /// Every key changed (FLUSHALL, FLUSHDB): every tracking client is told with a null, and
    /// the table is emptied.
    pub fn invalidate_all(&self, pubsub: &PubSub, limit: ClassLimit) {
        let mut s = self.lock();
        s.keys.clear();
        s.order.clear();
        let ids: Vec<u64> = s.clients.keys().copied().collect();
        for id in ids {
            send(&s, id, Invalidation::All, pubsub, limit);
        }
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
        self.count.load(Relaxed)
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

/// Sends an invalidation to tracking client `id`: on its connection, or its redirect
/// target's (subscribed, as Redis asks of a RESP2 target).
fn send(s: &State, id: u64, what: Invalidation, pubsub: &PubSub, limit: ClassLimit) {
    let Some(c) = s.clients.get(&id) else { return };
    // RESP2 cannot push between replies: a RESP2 client is told only through a redirect.
    let (mailbox, what) = match c.mode.redirect {
        0 => (Some(c.mailbox.clone()).filter(|m| m.resp3()), what),
        target => match pubsub.mailbox_of(target) {
            Some(m) => (Some(m), what),
            // The target is gone: a RESP3 client is told so instead, as Redis tells it.
            None if c.target_gone => {
                c.broken.store(true, Relaxed);
                (
                    Some(c.mailbox.clone()).filter(|m| m.resp3()),
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
