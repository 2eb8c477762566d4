//! Pub/Sub: the channels, patterns and shard channels this node's clients subscribe to, and
//! each subscriber's mailbox of messages not yet written to it.
//!
//! PUBLISH (`cmd::pubsub`) puts the message in the [`Mailbox`] of every matching subscriber
//! at once, under the registry's read lock; the subscriber's connection takes it from there
//! (it waits in [`Mailbox::poll_take`]) and encodes it in its own protocol. A mailbox is
//! bounded by the `pubsub` class of `client-output-buffer-limit` (Redis's `32mb 8mb 60`): a
//! subscriber past the hard limit, or past the soft one for longer than its seconds, is
//! closed and its messages dropped, as Redis closes it. With no subscription on the node a
//! PUBLISH is one atomic load. In a cluster the layer above runs PUBLISH on every node; each
//! delivers to its own subscribers.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::Bytes;
use shoal_resp::Reply;

use crate::client::{ClientInfo, ClientRegistry};
use crate::config::ClassLimit;

/// The three name spaces of subscriptions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// SUBSCRIBE / PUBLISH.
    Channel,
    /// PSUBSCRIBE: glob patterns over the channels.
    Pattern,
    /// SSUBSCRIBE / SPUBLISH (Redis 7's shard channels; in Shoal a separate name space that
    /// reaches the whole cluster as the plain one does).
    Shard,
}

impl Space {
    fn index(self) -> usize {
        match self {
            Space::Channel => 0,
            Space::Pattern => 1,
            Space::Shard => 2,
        }
    }
}

/// A message on its way to one subscriber.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The pattern it matched (a `pmessage`), if it came through one.
    pub pattern: Option<Bytes>,
    pub channel: Bytes,
    pub payload: Bytes,
    /// Published with SPUBLISH (an `smessage`).
    pub shard: bool,
    /// A client-side caching invalidation (CLIENT TRACKING) instead of a published message.
    pub invalidate: Option<Invalidation>,
}

/// The keys a client-side caching invalidation names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalidation {
    Keys(Vec<Bytes>),
    /// Every key (FLUSHALL, FLUSHDB): a null.
    All,
    /// Not an invalidation: the tracking client's redirect target (this id) is gone, so
    /// its invalidations reach nobody (RESP3 `tracking-redir-broken`, to the client itself).
    RedirBroken(u64),
}

/// Bytes a queued message is counted as beyond its data (its framing and bookkeeping).
const MESSAGE_OVERHEAD: usize = 64;

impl Message {
    fn size(&self) -> usize {
        let keys = match &self.invalidate {
            Some(Invalidation::Keys(k)) => k.iter().map(|k| k.len() + 16).sum(),
            _ => 0,
        };
        MESSAGE_OVERHEAD
            + self.channel.len()
            + self.payload.len()
            + self.pattern.as_ref().map_or(0, Bytes::len)
            + keys
    }

    /// An invalidation of client-side caches.
    pub fn invalidation(what: Invalidation) -> Message {
        Message {
            pattern: None,
            channel: Bytes::from_static(b"__redis__:invalidate"),
            payload: Bytes::new(),
            shard: false,
            invalidate: Some(what),
        }
    }

    /// False for an invalidation that a connection speaking `proto` with `subscriptions`
    /// cannot take (it switched to RESP2 since, and is not subscribed: it would read the
    /// message as a reply).
    pub fn deliverable(&self, proto: shoal_resp::Protocol, subscriptions: usize) -> bool {
        self.invalidate.is_none() || proto == shoal_resp::Protocol::Resp3 || subscriptions > 0
    }

    /// The message as Redis sends it to a client speaking `proto`: `message`, `pmessage` or
    /// `smessage` (a push in RESP3); an invalidation as `invalidate` and its keys (a null for
    /// all) in RESP3, as a message on `__redis__:invalidate` in RESP2 (a redirected one).
    pub fn reply(&self, proto: shoal_resp::Protocol) -> Reply {
        let b = |s: &'static [u8]| Reply::Bulk(Bytes::from_static(s));
        if let Some(what) = &self.invalidate {
            let keys = match what {
                Invalidation::Keys(k) => Reply::Array(k.iter().cloned().map(Reply::Bulk).collect()),
                Invalidation::All => Reply::Nil,
                Invalidation::RedirBroken(id) => {
                    let id = i64::try_from(*id).unwrap_or(i64::MAX);
                    return Reply::Push(vec![b(b"tracking-redir-broken"), Reply::Int(id)]);
                }
            };
            return Reply::Push(match proto {
                shoal_resp::Protocol::Resp3 => vec![b(b"invalidate"), keys],
                _ => vec![b(b"message"), Reply::Bulk(self.channel.clone()), keys],
            });
        }
        let mut items = Vec::with_capacity(4);
        match (&self.pattern, self.shard) {
            (Some(p), _) => {
                items.push(b(b"pmessage"));
                items.push(Reply::Bulk(p.clone()));
            }
            (None, true) => items.push(b(b"smessage")),
            (None, false) => items.push(b(b"message")),
        }
        items.push(Reply::Bulk(self.channel.clone()));
        items.push(Reply::Bulk(self.payload.clone()));
        Reply::Push(items)
    }
}

/// The most a mailbox holds when `client-output-buffer-limit` sets no hard limit for the
/// `pubsub` class (0 means none in Redis; Shoal still bounds every queue).
pub const MAILBOX_CEILING: u64 = 1 << 30;

/// Why a mailbox stopped taking messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

/// Where a delivery accounts the subscriber's memory: the clients and `maxmemory-clients` in
/// bytes (0: off, nothing accounted).
pub type Accounting<'a> = (&'a ClientRegistry, u64);

/// One subscribed connection's undelivered messages.
pub struct Mailbox {
    client: Arc<ClientInfo>,
    state: Mutex<MailState>,
    /// Something is queued or it overflowed: [`Mailbox::take`] looks (every RESP3 client has
    /// a mailbox, and a connection asks it before and after each command).
    has_mail: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct MailState {
    queue: VecDeque<Message>,
    bytes: usize,
    waker: Option<Waker>,
    /// Past its limits: closed, takes nothing more.
    overflowed: bool,
    /// Since when it holds more than the soft limit.
    over_soft_since: Option<Instant>,
}

impl Mailbox {
    fn new(client: Arc<ClientInfo>) -> Mailbox {
        Mailbox {
            client,
            state: Mutex::new(MailState::default()),
            has_mail: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MailState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shows the bytes queued in the client's buffers (`tot-mem`, `maxmemory-clients`).
    fn publish_bytes(&self, bytes: usize) {
        self.client
            .buffers
            .mailbox
            .store(bytes as u64, Ordering::Relaxed);
    }

    /// Queues `message` unless that takes the mailbox past `limit`; then the subscriber is
    /// closed (as Redis closes a client past its output buffer limit) and false returned.
    pub(crate) fn deliver(&self, message: Message, limit: ClassLimit, now: Instant) -> bool {
        let mut s = self.lock();
        if s.overflowed {
            return false;
        }
        let size = message.size();
        let hard = match limit.hard {
            0 => MAILBOX_CEILING,
            h => h.min(MAILBOX_CEILING),
        };
        let after = (s.bytes + size) as u64;
        let soft_expired = match (limit.soft, s.over_soft_since) {
            (0, _) => false,
            (soft, _) if after <= soft => {
                s.over_soft_since = None;
                false
            }
            (_, None) => {
                s.over_soft_since = Some(now);
                false
            }
            (_, Some(since)) => {
                now.saturating_duration_since(since) > Duration::from_secs(limit.soft_seconds)
            }
        };
        if after > hard || soft_expired {
            s.overflowed = true;
            self.has_mail.store(true, Ordering::Release);
            s.queue = VecDeque::new();
            s.bytes = 0;
            self.publish_bytes(0);
            let waker = s.waker.take();
            drop(s);
            tracing::warn!(
                client = self.client.id,
                "closing a subscriber past the pubsub client-output-buffer-limit"
            );
            self.client.kill();
            if let Some(w) = waker {
                w.wake();
            }
            return false;
        }
        s.bytes += size;
        self.publish_bytes(s.bytes);
        s.queue.push_back(message);
        self.has_mail.store(true, Ordering::Release);
        let waker = s.waker.take();
        drop(s);
        if let Some(w) = waker {
            w.wake();
        }
        true
    }

    /// Takes the queued messages, up to about `max_bytes` of them (at least one); `Ok` with
    /// none when the mailbox is empty.
    pub fn take(&self, max_bytes: usize) -> Result<Vec<Message>, Overflow> {
        // (A message queued meanwhile is taken by the next call, or wakes `poll_take`.)
        if !self.has_mail.load(Ordering::Acquire) {
            return Ok(Vec::new());
        }
        let mut s = self.lock();
        if s.overflowed {
            return Err(Overflow);
        }
        let mut out = Vec::new();
        let mut taken = 0;
        while taken < max_bytes {
            let Some(m) = s.queue.pop_front() else { break };
            let size = m.size();
            taken += size;
            s.bytes -= size;
            out.push(m);
        }
        self.publish_bytes(s.bytes);
        if s.queue.is_empty() {
            s.over_soft_since = None;
            self.has_mail.store(false, Ordering::Release);
        }
        Ok(out)
    }

    /// [`Mailbox::take`] for a connection waiting for its next messages: pending until
    /// some are queued (cancel safe: nothing is taken unless it is returned).
    pub fn poll_take(
        &self,
        cx: &mut Context<'_>,
        max_bytes: usize,
    ) -> Poll<Result<Vec<Message>, Overflow>> {
        let mut s = self.lock();
        if s.queue.is_empty() && !s.overflowed {
            s.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        drop(s);
        Poll::Ready(self.take(max_bytes))
    }

    /// True if its client speaks RESP3 (it can take pushes between replies).
    pub(crate) fn resp3(&self) -> bool {
        self.client.resp.load(Ordering::Relaxed) >= 3
    }

    /// Bytes queued.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

type Subscribers = HashMap<u64, Arc<Mailbox>, foldhash::fast::RandomState>;

/// The subscriptions of one node's clients.
#[derive(Default)]
pub struct PubSub {
    /// Subscriptions of every kind: 0 makes PUBLISH free.
    count: AtomicUsize,
    registry: RwLock<[HashMap<Bytes, Subscribers>; 3]>,
    /// The mailboxes of RESP3 clients by id, subscribed or not: a CLIENT TRACKING
    /// redirect's target may be any RESP3 client, as in Redis ([`Subscriber::as_target`]).
    resp3: RwLock<Subscribers>,
}

impl PubSub {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, [HashMap<Bytes, Subscribers>; 3]> {
        self.registry.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, [HashMap<Bytes, Subscribers>; 3]> {
        self.registry.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Delivers `payload` on `channel` (of [`Space::Channel`], or [`Space::Shard`] when
    /// `shard`) to every subscriber here, within `limit`; the number of subscribers that
    /// were given it (one per matching pattern of a client too, as Redis counts; not one
    /// closed at its output limit, which Redis still counts until it is freed).
    pub fn publish(
        &self,
        channel: &Bytes,
        payload: &Bytes,
        shard: bool,
        limit: ClassLimit,
        clients: Accounting<'_>,
    ) -> usize {
        if self.count.load(Ordering::Acquire) == 0 {
            return 0;
        }
        // Copied once, for every receiver, when the first is found: the arguments are slices
        // of the publisher's read buffer, which a queued message must not keep alive (the
        // mailbox counts only these bytes).
        let copied = std::cell::OnceCell::new();
        let copy = || {
            copied.get_or_init(|| {
                (
                    Bytes::copy_from_slice(channel),
                    Bytes::copy_from_slice(payload),
                )
            })
        };
        let now = Instant::now();
        let registry = self.read();
        let mut receivers = 0;
        // The subscribers' memory reached `maxmemory-clients`: evict once the lock is let go.
        let mut over = false;
        let space = if shard { Space::Shard } else { Space::Channel };
        if let Some(subs) = registry[space.index()].get(channel) {
            for mailbox in subs.values() {
                let (channel, payload) = copy().clone();
                let m = Message {
                    pattern: None,
                    channel,
                    payload,
                    shard,
                    invalidate: None,
                };
                // One closed at its output limit (by this message or before) got nothing.
                if mailbox.deliver(m, limit, now) {
                    receivers += 1;
                    over |= clients.0.account(&mailbox.client, clients.1);
                }
            }
        }
        if !shard {
            for (pattern, subs) in registry[Space::Pattern.index()].iter() {
                if !shoal_store::glob_match(pattern, channel, false) {
                    continue;
                }
                for mailbox in subs.values() {
                    let (channel, payload) = copy().clone();
                    let m = Message {
                        pattern: Some(pattern.clone()),
                        channel,
                        payload,
                        shard: false,
                        invalidate: None,
                    };
                    if mailbox.deliver(m, limit, now) {
                        receivers += 1;
                        over |= clients.0.account(&mailbox.client, clients.1);
                    }
                }
            }
        }
        drop(registry);
        if over {
            clients.0.evict_over(clients.1);
        }
        receivers
    }

    /// The channels (of `space`: channels or shard channels) with a subscriber here that
    /// match `pattern` (all when `None`): PUBSUB CHANNELS, SHARDCHANNELS.
    pub fn channels(&self, space: Space, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.read()[space.index()]
            .keys()
            .filter(|c| pattern.is_none_or(|p| shoal_store::glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// How many clients here subscribe to `name` in `space` (PUBSUB NUMSUB, SHARDNUMSUB).
    pub fn subscribers(&self, space: Space, name: &[u8]) -> usize {
        self.read()[space.index()].get(name).map_or(0, HashMap::len)
    }

    /// The mailbox of client `id` if it is subscribed to anything, or speaks RESP3 (a
    /// CLIENT TRACKING redirect's target; a RESP2 one would read a message as a reply).
    pub fn mailbox_of(&self, id: u64) -> Option<Arc<Mailbox>> {
        let subscribed = self
            .read()
            .iter()
            .flat_map(|space| space.values())
            .find_map(|subs| subs.get(&id).cloned());
        subscribed.or_else(|| {
            self.resp3
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(&id)
                .filter(|m| m.resp3())
                .cloned()
        })
    }

    /// How many distinct names have a subscriber in `space` (PUBSUB NUMPAT for patterns;
    /// INFO's `pubsub_channels`, `pubsub_patterns`, `pubsubshard_channels`).
    pub fn names(&self, space: Space) -> usize {
        self.read()[space.index()].len()
    }

    fn add(&self, space: Space, name: &Bytes, mailbox: &Arc<Mailbox>) {
        let mut registry = self.write();
        registry[space.index()]
            .entry(name.clone())
            .or_default()
            .insert(mailbox.client.id, mailbox.clone());
        self.count.fetch_add(1, Ordering::Release);
    }

    fn remove(&self, space: Space, name: &[u8], id: u64) {
        let mut registry = self.write();
        let map = &mut registry[space.index()];
        if let Some(subs) = map.get_mut(name) {
            if subs.remove(&id).is_some() {
                self.count.fetch_sub(1, Ordering::Release);
            }
            if subs.is_empty() {
                map.remove(name);
            }
        }
    }
}

/// One connection's subscriptions (the session holds it from its first SUBSCRIBE): they
/// end when it is dropped (the connection closed, or RESET).
pub struct Subscriber {
    pubsub: Arc<PubSub>,
    mailbox: Arc<Mailbox>,
    names: [HashSet<Bytes>; 3],
    /// Registered as a RESP3 client ([`Subscriber::as_target`]).
    target: bool,
}

impl Subscriber {
    pub fn new(pubsub: Arc<PubSub>, client: Arc<ClientInfo>) -> Subscriber {
        Subscriber {
            pubsub,
            mailbox: Arc::new(Mailbox::new(client)),
            names: Default::default(),
            target: false,
        }
    }

    /// The client speaks RESP3 (HELLO 3): other clients' CLIENT TRACKING ... REDIRECT may
    /// name it, subscribed or not ([`PubSub::mailbox_of`]); until the client goes.
    pub fn as_target(&mut self) {
        if !std::mem::replace(&mut self.target, true) {
            let id = self.mailbox.client.id;
            self.pubsub
                .resp3
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, self.mailbox.clone());
        }
    }

    pub fn mailbox(&self) -> &Arc<Mailbox> {
        &self.mailbox
    }

    /// Subscribes to `name` in `space`; false when it was already.
    pub fn subscribe(&mut self, space: Space, name: &Bytes) -> bool {
        if self.names[space.index()].contains(name) {
            return false;
        }
        // Its own copy: the argument is a slice of the connection's read buffer.
        let name = Bytes::copy_from_slice(name);
        self.names[space.index()].insert(name.clone());
        self.pubsub.add(space, &name, &self.mailbox);
        self.publish_counts();
        true
    }

    /// Unsubscribes from `name` in `space`; false when it was not subscribed.
    pub fn unsubscribe(&mut self, space: Space, name: &[u8]) -> bool {
        if !self.names[space.index()].remove(name) {
            return false;
        }
        self.pubsub.remove(space, name, self.mailbox.client.id);
        self.publish_counts();
        true
    }

    /// Ends every subscription (RESET); the mailbox stays for what reached it before.
    pub fn unsubscribe_all(&mut self) {
        for space in [Space::Channel, Space::Pattern, Space::Shard] {
            for name in self.subscribed(space) {
                self.unsubscribe(space, &name);
            }
        }
    }

    /// The names subscribed to in `space`.
    pub fn subscribed(&self, space: Space) -> Vec<Bytes> {
        self.names[space.index()].iter().cloned().collect()
    }

    /// How many names of `space` are subscribed to.
    pub fn count(&self, space: Space) -> usize {
        self.names[space.index()].len()
    }

    /// Subscriptions of every kind.
    pub fn total(&self) -> usize {
        self.names.iter().map(HashSet::len).sum()
    }

    /// CLIENT LIST's `sub`, `psub`, `ssub`.
    fn publish_counts(&self) {
        for (i, names) in self.names.iter().enumerate() {
            self.mailbox.client.subscriptions[i].store(names.len() as u32, Ordering::Relaxed);
        }
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let id = self.mailbox.client.id;
        if self.target {
            self.pubsub
                .resp3
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
        }
        for space in [Space::Channel, Space::Pattern, Space::Shard] {
            for name in std::mem::take(&mut self.names[space.index()]) {
                self.pubsub.remove(space, &name, id);
            }
        }
        self.publish_counts();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No `maxmemory-clients`: deliveries account nothing.
    fn off() -> Accounting<'static> {
        static NO_CLIENTS: std::sync::LazyLock<ClientRegistry> =
            std::sync::LazyLock::new(ClientRegistry::default);
        (&NO_CLIENTS, 0)
    }
    use std::net::SocketAddr;

    fn client(id: u64) -> Arc<ClientInfo> {
        let reg = crate::client::ClientRegistry::default();
        let a = SocketAddr::from(([127, 0, 0, 1], 1000 + id as u16));
        let mut info = reg.register(a, a, Box::new(|_| {}));
        for _ in 1..id {
            info = reg.register(a, a, Box::new(|_| {}));
        }
        info
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    const NO_LIMIT: ClassLimit = ClassLimit {
        hard: 0,
        soft: 0,
        soft_seconds: 0,
    };

    #[test]
    fn publish_reaches_channels_and_patterns_and_counts_as_redis() {
        let ps = Arc::new(PubSub::default());
        assert_eq!(ps.publish(&b("news"), &b("x"), false, NO_LIMIT, off()), 0);
        let mut one = Subscriber::new(ps.clone(), client(1));
        let mut two = Subscriber::new(ps.clone(), client(2));
        assert!(one.subscribe(Space::Channel, &b("news")));
        assert!(!one.subscribe(Space::Channel, &b("news")), "already");
        assert!(one.subscribe(Space::Pattern, &b("n*")));
        assert!(two.subscribe(Space::Pattern, &b("n*")));
        assert!(two.subscribe(Space::Shard, &b("news")));
        // One client with a channel and a matching pattern gets it twice.
        assert_eq!(ps.publish(&b("news"), &b("hi"), false, NO_LIMIT, off()), 3);
        assert_eq!(ps.publish(&b("news"), &b("s"), true, NO_LIMIT, off()), 1);
        assert_eq!(ps.publish(&b("other"), &b("x"), false, NO_LIMIT, off()), 0);
        let got = one.mailbox().take(usize::MAX).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].pattern, None);
        assert_eq!(got[1].pattern, Some(b("n*")));
        let got = two.mailbox().take(usize::MAX).unwrap();
        assert_eq!(got.len(), 2);
        assert!(got[1].shard && got[1].payload == b("s"));
        assert_eq!(ps.names(Space::Pattern), 1);
        assert_eq!(ps.subscribers(Space::Pattern, b"n*"), 2);
        assert_eq!(ps.channels(Space::Channel, Some(b"ne*")), vec![b("news")]);
        assert_eq!(one.total(), 2);
        drop(one);
        assert_eq!(ps.subscribers(Space::Pattern, b"n*"), 1);
        assert_eq!(ps.names(Space::Channel), 0);
        assert!(two.unsubscribe(Space::Shard, b"news"));
        assert!(!two.unsubscribe(Space::Shard, b"news"));
        drop(two);
        assert_eq!(ps.count.load(Ordering::Relaxed), 0);
        assert_eq!(ps.names(Space::Pattern), 0);
    }

    #[test]
    fn a_queued_message_keeps_no_part_of_the_publishers_buffer() {
        let ps = Arc::new(PubSub::default());
        let mut sub = Subscriber::new(ps.clone(), client(1));
        let read_buffer = Bytes::from(vec![b'c'; 1 << 20]);
        let name = read_buffer.slice(0..1);
        sub.subscribe(Space::Channel, &name);
        let inside = |b: &Bytes| read_buffer.as_ptr_range().contains(&b.as_ptr());
        assert!(sub.subscribed(Space::Channel).iter().all(|n| !inside(n)));
        let payload = read_buffer.slice(10..20);
        assert_eq!(ps.publish(&name, &payload, false, NO_LIMIT, off()), 1);
        let m = sub.mailbox().take(usize::MAX).unwrap().remove(0);
        assert!(!inside(&m.channel) && !inside(&m.payload));
        assert_eq!(m.payload, payload);
    }

    #[test]
    fn a_mailbox_past_its_hard_limit_closes_its_client() {
        let ps = Arc::new(PubSub::default());
        let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let k = killed.clone();
        let reg = crate::client::ClientRegistry::default();
        let a = SocketAddr::from(([127, 0, 0, 1], 1));
        let info = reg.register(a, a, Box::new(move |_| k.store(true, Ordering::Relaxed)));
        let mut sub = Subscriber::new(ps.clone(), info.clone());
        sub.subscribe(Space::Channel, &b("c"));
        let limit = ClassLimit {
            hard: 1000,
            soft: 0,
            soft_seconds: 0,
        };
        let payload = Bytes::from(vec![b'x'; 300]);
        let mut delivered = 0;
        while !killed.load(Ordering::Relaxed) {
            ps.publish(&b("c"), &payload, false, limit, off());
            delivered += 1;
            assert!(delivered < 10, "never closed");
        }
        assert_eq!(delivered, 3, "two fit in 1000 bytes, the third does not");
        assert!(info.killed.load(Ordering::Relaxed));
        assert_eq!(sub.mailbox().take(usize::MAX), Err(Overflow));
        assert_eq!(sub.mailbox().bytes(), 0, "the messages were dropped");
    }

    #[test]
    fn a_mailbox_over_the_soft_limit_for_too_long_closes_its_client() {
        let m = Mailbox::new(client(1));
        let limit = ClassLimit {
            hard: 0,
            soft: 100,
            soft_seconds: 2,
        };
        let msg = Message {
            pattern: None,
            channel: b("c"),
            payload: Bytes::from(vec![b'x'; 80]),
            shard: false,
            invalidate: None,
        };
        let t0 = Instant::now();
        assert!(m.deliver(msg.clone(), limit, t0));
        assert!(
            m.deliver(msg.clone(), limit, t0),
            "over soft: the clock starts"
        );
        assert!(m.deliver(msg.clone(), limit, t0 + Duration::from_secs(2)));
        // Taken: under the soft limit again, so the clock starts over.
        m.take(usize::MAX).unwrap();
        assert!(m.deliver(msg.clone(), limit, t0 + Duration::from_secs(3)));
        assert!(m.deliver(msg.clone(), limit, t0 + Duration::from_secs(5)));
        assert!(!m.deliver(msg, limit, t0 + Duration::from_secs(6)));
        assert_eq!(m.take(1), Err(Overflow));
    }

    #[test]
    fn take_is_bounded_and_poll_waits_for_a_message() {
        let m = Arc::new(Mailbox::new(client(1)));
        let msg = Message {
            pattern: None,
            channel: b("c"),
            payload: b("p"),
            shard: false,
            invalidate: None,
        };
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(m.poll_take(&mut cx, 1).is_pending());
        for _ in 0..3 {
            assert!(m.deliver(msg.clone(), NO_LIMIT, Instant::now()));
        }
        match m.poll_take(&mut cx, 1) {
            Poll::Ready(Ok(v)) => assert_eq!(v.len(), 1, "at least one, no more than the bound"),
            other => panic!("{other:?}"),
        }
        assert_eq!(m.take(usize::MAX).unwrap().len(), 2);
        assert_eq!(m.bytes(), 0);
    }
}
