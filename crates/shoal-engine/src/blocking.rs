//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, ...): which clients wait for which
//! key, in the order they blocked.
//!
//! A blocking command that finds nothing to pop sets [`Block`] on its session; the layer
//! above registers it here ([`Blocked::register`]) and runs the command again each time the
//! registration is woken, until it pops something or its timeout passes. Every write
//! command signals the keys it names ([`Blocked::signal`], from `cmd::run`): the signal
//! wakes the first client waiting on the key, which tries again; whatever it finds, it
//! passes the signal on to the next one when it is done (served, timed out or gone), so a
//! push of n elements serves the first n waiters in the order they blocked, as in Redis.
//! Nothing is polled: with no client blocked, a signal is one atomic load. The blocking
//! commands' own argument rules (timeouts, waited keys) are in `cmd::wait`.
//!
//! As in Redis (`handleClientsBlockedOnKeys`), a write served through
//! [`Blocked::serving_after`] serves the clients its keys wake itself, before its own reply:
//! the keys it signals are collected while it runs, then each one's waiters are tried in
//! the order they blocked, on the writer's thread, with the [`Attempt`] each registered,
//! until one finds nothing; what a served client's command writes (BLMOVE's destination) is
//! served in the same loop. So once `LPUSH k x` has answered, a client that was blocked on
//! `k` has popped `x`, and an `LLEN k` sees it gone. A waiter without an attempt, or whose
//! attempt cannot run at once (its keys still arriving in a cluster), is woken to try on
//! its own, as every signal did before.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use shoal_resp::Reply;

/// What a blocking command that found nothing asks of the layer above (set on the session
/// instead of blocking the thread; the command answered `timeout_reply` meanwhile).
#[derive(Debug)]
pub struct Block {
    /// The keys it waits on, as stored (with a numbered database's prefix).
    pub keys: Vec<Bytes>,
    /// When it gives up, in Unix ms; `None` waits for ever (a timeout of 0).
    pub deadline_ms: Option<u64>,
    /// The reply when it gives up (a null array, for every blocking command).
    pub timeout_reply: Reply,
    /// The command to run at each wake-up instead of the one that blocked: XREAD with its
    /// `$` IDs resolved when it blocked. `None`: the same command.
    pub args: Option<Vec<bytes::Bytes>>,
}

/// The clients blocked on keys of one node.
#[derive(Debug, Default)]
pub struct Blocked {
    /// How many registrations exist: 0 makes [`Blocked::signal`] free.
    count: AtomicUsize,
    /// How many of them are this node's clients (not other nodes' forwarded attempts).
    clients: AtomicUsize,
    /// How many of this node's clients wait with a timeout.
    timed: AtomicUsize,
    queues: Mutex<Queues>,
}

/// How a client waits, as INFO tells it: with a timeout (Redis's `clients_in_timeout_table`)
/// or for ever, and whether the deletion of a key it waits on is to wake it (Redis 7.2's
/// XREADGROUP, whose reader then gets an error: `total_blocking_keys_on_nokey`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waits {
    pub timed: bool,
    pub on_nokey: bool,
}

impl Waits {
    /// How the blocking command `args` waits, given when it gives up (`None`: never).
    pub fn of(args: &[Bytes], deadline_ms: Option<u64>) -> Waits {
        Waits {
            timed: deadline_ms.is_some(),
            on_nokey: args
                .first()
                .is_some_and(|c| c.eq_ignore_ascii_case(b"xreadgroup")),
        }
    }
}

#[derive(Debug, Default)]
struct Queues {
    /// The clients waiting on each key, first blocked first.
    by_key: HashMap<Bytes, VecDeque<Arc<Waiter>>>,
    /// Each blocked client's waiter, by client id (CLIENT UNBLOCK).
    by_client: HashMap<u64, Arc<Waiter>>,
}

/// What one try of a blocked client's command gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tried {
    /// It was served (its reply is where its waiting future will find it).
    Served,
    /// Nothing to take: still blocked.
    Blocked,
    /// Still blocked, but one of its keys holds something it cannot take (another type):
    /// the clients behind it may.
    Passed,
    /// It cannot be tried here and now (its keys are not owned here, or still arriving):
    /// the client tries on its own once woken.
    Later,
    /// Its client is leaving (killed, or CLIENT UNBLOCK): it takes nothing, and the clients
    /// behind it are tried.
    Gone,
}

/// A blocked client's command, run once more (`prepared`: by its own waiting future, which
/// made sure its keys are here; otherwise by a writer that woke it). Must not serve twice:
/// once it answered [`Tried::Served`] it answers so again without running.
pub type Attempt = Box<dyn FnMut(bool) -> Tried + Send>;

#[derive(Default)]
struct Waiter {
    /// Signalled since it last cleared it.
    ready: AtomicBool,
    waker: Mutex<Option<Waker>>,
    /// How a writer tries it; locked while it runs, taken away when the client leaves.
    attempt: Mutex<Option<Attempt>>,
    /// The key a writer served it through: the writer went on with the clients behind it
    /// there, so leaving wakes none of them on that key (each would find nothing); on its
    /// other keys the next client is woken as usual.
    served_on: Mutex<Option<Bytes>>,
    /// Its client is to be woken when a key it waits on is deleted ([`Waits::on_nokey`]).
    on_nokey: bool,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("ready", &self.ready)
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// While this thread runs a command inside [`Blocked::serving_after`]: the keys it
    /// signalled, to serve once it is done.
    static READY: RefCell<Option<Vec<Bytes>>> = const { RefCell::new(None) };
}

/// Ends this thread's collecting of ready keys; when a command panicked before they were
/// served, their first waiters are woken to try on their own.
struct Collecting<'a>(&'a Blocked);

impl Drop for Collecting<'_> {
    fn drop(&mut self) {
        let left = READY.with(|r| r.borrow_mut().take()).unwrap_or_default();
        if left.is_empty() {
            return;
        }
        let queues = self.0.queues.lock().unwrap_or_else(|e| e.into_inner());
        for key in left {
            if let Some(first) = queues.by_key.get(&key).and_then(VecDeque::front) {
                first.wake();
            }
        }
    }
}

impl Waiter {
    fn wake(&self) {
        self.ready.store(true, Ordering::Release);
        if let Some(w) = self.waker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            w.wake();
        }
    }
}

impl Blocked {
    /// The number of registrations (this node's clients and other nodes' attempts).
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// The number of this node's blocked clients (INFO's `blocked_clients`).
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// The keys some client waits on (INFO's `total_blocking_keys`; a key of each database
    /// counts apart, as Redis counts them per database).
    pub fn keys(&self) -> usize {
        self.queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_key
            .len()
    }

    /// The keys some client waits on that the key's deletion is to wake (INFO's
    /// `total_blocking_keys_on_nokey`, Redis 7.2: XREADGROUP's).
    pub fn keys_on_nokey(&self) -> usize {
        self.queues
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_key
            .values()
            .filter(|q| q.iter().any(|w| w.on_nokey))
            .count()
    }

    /// This node's clients that wait with a timeout (INFO's `clients_in_timeout_table`).
    pub fn timed_clients(&self) -> usize {
        self.timed.load(Ordering::Relaxed)
    }

    /// Wakes the first client waiting on `key`, if any; inside [`Blocked::serving_after`],
    /// notes the key to serve when the command is done.
    pub fn signal(&self, key: &[u8]) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let Some(first) = queues.by_key.get(key).and_then(VecDeque::front) else {
            return;
        };
        // Inside `serving_after` only the keys someone waits on are noted (a few).
        let collected = READY.with(|r| match r.borrow_mut().as_mut() {
            Some(keys) => {
                if !keys.iter().any(|k| k[..] == *key) {
                    keys.push(Bytes::copy_from_slice(key));
                }
                true
            }
            None => false,
        });
        if !collected {
            first.wake();
        }
    }

    /// Runs `command` (a command's execution, which may write), then serves the clients
    /// blocked on the keys it signalled, as Redis does after each command: see the module
    /// docs. Nested calls (a served client's own command) leave the serving to the
    /// outermost.
    pub fn serving_after<R>(&self, command: impl FnOnce() -> R) -> R {
        if self.count.load(Ordering::Acquire) == 0 {
            return command();
        }
        let outermost = READY.with(|r| {
            let mut r = r.borrow_mut();
            match *r {
                Some(_) => false,
                None => {
                    *r = Some(Vec::new());
                    true
                }
            }
        });
        if !outermost {
            return command();
        }
        let _collecting = Collecting(self);
        let out = command();
        loop {
            let keys = READY.with(|r| r.borrow_mut().as_mut().map(std::mem::take));
            let Some(keys) = keys.filter(|k| !k.is_empty()) else {
                break;
            };
            for key in keys {
                self.serve(&key);
            }
        }
        out
    }

    /// Tries the clients blocked on `key` in the order they blocked, until one is not
    /// served.
    fn serve(&self, key: &[u8]) {
        let waiters: Vec<Arc<Waiter>> = {
            let queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
            match queues.by_key.get(key) {
                Some(q) => q.iter().cloned().collect(),
                None => return,
            }
        };
        for w in waiters {
            let mut attempt = w.attempt.lock().unwrap_or_else(|e| e.into_inner());
            let tried = match attempt.as_mut() {
                Some(run) => run(false),
                // It is leaving, or has not made its first try yet: woken (harmless for
                // one that leaves, and the other looks again), the next ones are tried.
                None => {
                    drop(attempt);
                    w.wake();
                    continue;
                }
            };
            drop(attempt);
            match tried {
                Tried::Served => {
                    *w.served_on.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some(Bytes::copy_from_slice(key));
                    w.wake();
                }
                Tried::Passed | Tried::Gone => {}
                Tried::Blocked => break,
                Tried::Later => {
                    w.wake();
                    break;
                }
            }
        }
    }

    /// Wakes the first client waiting on each key that `which` picks (SWAPDB: every key
    /// of two databases changed at once).
    pub fn signal_where(&self, which: impl Fn(&[u8]) -> bool) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        READY.with(|r| {
            let mut ready = r.borrow_mut();
            // Inside `serving_after`: noted once each (a flush may pick every waited key:
            // a set, not a scan of the list per key).
            let mut noted: Option<HashSet<Bytes>> =
                ready.as_ref().map(|keys| keys.iter().cloned().collect());
            for (key, queue) in &queues.by_key {
                if !which(key) {
                    continue;
                }
                match (ready.as_mut(), noted.as_mut()) {
                    (Some(keys), Some(noted)) => {
                        if noted.insert(key.clone()) {
                            keys.push(key.clone());
                        }
                    }
                    _ => {
                        if let Some(first) = queue.front() {
                            first.wake();
                        }
                    }
                }
            }
        });
    }

    /// Wakes client `id`'s wait, if it has one (CLIENT UNBLOCK; the client's `unblock`
    /// says how it ends). True if it was waiting.
    pub fn unblock(&self, id: u64) -> bool {
        let queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        match queues.by_client.get(&id) {
            Some(w) => {
                w.wake();
                true
            }
            None => false,
        }
    }

    /// Queues a client behind those already waiting on each of `keys` (none: a client
    /// that waits elsewhere, known here for CLIENT UNBLOCK). `client` is its id, `None` for
    /// a request another node sent.
    pub fn register(self: &Arc<Self>, keys: &[Bytes], client: Option<u64>) -> Registration {
        self.register_as(keys, client, Waits::default())
    }

    /// [`Blocked::register`], for a client that waits as `waits` says.
    pub fn register_as(
        self: &Arc<Self>,
        keys: &[Bytes],
        client: Option<u64>,
        waits: Waits,
    ) -> Registration {
        let waiter = Arc::new(Waiter {
            on_nokey: waits.on_nokey,
            ..Waiter::default()
        });
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let mut unique: Vec<Bytes> = Vec::with_capacity(keys.len());
        for k in keys {
            if !unique.contains(k) {
                queues
                    .by_key
                    .entry(k.clone())
                    .or_default()
                    .push_back(waiter.clone());
                unique.push(k.clone());
            }
        }
        let timed = client.is_some() && waits.timed;
        if let Some(id) = client {
            queues.by_client.insert(id, waiter.clone());
            self.clients.fetch_add(1, Ordering::Relaxed);
        }
        if timed {
            self.timed.fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::AcqRel);
        Registration {
            blocked: self.clone(),
            keys: unique,
            client,
            timed,
            waiter,
        }
    }
}

/// One blocked client's place in the queues of its keys; dropping it leaves them and passes
/// a signal on to the next client of each key.
#[derive(Debug)]
pub struct Registration {
    blocked: Arc<Blocked>,
    keys: Vec<Bytes>,
    client: Option<u64>,
    /// Counted in [`Blocked::timed_clients`].
    timed: bool,
    waiter: Arc<Waiter>,
}

impl Registration {
    /// Forgets the signals so far: call it before looking at the keys again, so a signal
    /// that comes while looking is not lost.
    pub fn clear(&self) {
        self.waiter.ready.store(false, Ordering::Release);
    }

    /// Resolves once a key was signalled since the last [`Registration::clear`].
    pub fn signalled(&self) -> Signalled<'_> {
        Signalled { reg: self }
    }

    /// Lets a writer serve this client at once with `attempt` (see [`Blocked::serving_after`]).
    pub fn set_attempt(&self, attempt: Attempt) {
        *self
            .waiter
            .attempt
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(attempt);
    }

    /// Runs this client's attempt here (`prepared`: its keys are known to be here), unless
    /// a writer is running it (then this waits for that one). `None` without an attempt.
    pub fn try_now(&self, prepared: bool) -> Option<Tried> {
        let mut attempt = self
            .waiter
            .attempt
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        attempt.as_mut().map(|run| run(prepared))
    }

    /// No writer serves this client from now on; returns once one that is serving it has
    /// finished.
    pub fn withdraw(&self) {
        drop(
            self.waiter
                .attempt
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    /// Passes a signal this client could not use (what it found was taken, or of another
    /// type) to the client behind it on each of its keys.
    pub fn pass_on(&self) {
        let queues = self
            .blocked
            .queues
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for k in &self.keys {
            let Some(queue) = queues.by_key.get(k) else {
                continue;
            };
            if let Some(at) = queue.iter().position(|w| Arc::ptr_eq(w, &self.waiter)) {
                if let Some(next) = queue.get(at + 1) {
                    next.wake();
                }
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // No writer serves a client that left (waits for one that is serving it now).
        self.withdraw();
        let served_on = self
            .waiter
            .served_on
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let mut queues = self
            .blocked
            .queues
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for k in &self.keys {
            if let Some(queue) = queues.by_key.get_mut(k) {
                queue.retain(|w| !Arc::ptr_eq(w, &self.waiter));
                match queue.front() {
                    // A writer that served this client here tried the next ones already.
                    Some(_) if served_on.as_ref() == Some(k) => {}
                    // What this client was woken for (or left behind) is the next one's.
                    Some(next) => next.wake(),
                    None => {
                        queues.by_key.remove(k);
                    }
                }
            }
        }
        if let Some(id) = self.client {
            self.blocked.clients.fetch_sub(1, Ordering::Relaxed);
            if queues
                .by_client
                .get(&id)
                .is_some_and(|w| Arc::ptr_eq(w, &self.waiter))
            {
                queues.by_client.remove(&id);
            }
        }
        if self.timed {
            self.blocked.timed.fetch_sub(1, Ordering::Relaxed);
        }
        self.blocked.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The future of [`Registration::signalled`].
pub struct Signalled<'a> {
    reg: &'a Registration,
}

impl Future for Signalled<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let w = &self.reg.waiter;
        if w.ready.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        *w.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
        // A signal between the check and storing the waker found no waker: look again.
        if w.ready.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noop_cx() -> Context<'static> {
        Context::from_waker(Waker::noop())
    }

    fn ready(reg: &Registration) -> bool {
        let mut f = std::pin::pin!(reg.signalled());
        f.as_mut().poll(&mut noop_cx()).is_ready()
    }

    #[test]
    fn a_write_serves_its_waiters_in_order_before_it_returns() {
        use std::sync::atomic::AtomicI64;
        let b = Arc::new(Blocked::default());
        let k = Bytes::from_static(b"k");
        // Two elements in "the list"; each waiter takes one, or finds none.
        let left = Arc::new(AtomicI64::new(0));
        let served = Arc::new(Mutex::new(Vec::new()));
        let waiter = |name: &'static str| {
            let reg = b.register(std::slice::from_ref(&k), None);
            let (left, served) = (left.clone(), served.clone());
            reg.set_attempt(Box::new(move |_| {
                if left.load(Ordering::SeqCst) == 0 {
                    return Tried::Blocked;
                }
                left.fetch_sub(1, Ordering::SeqCst);
                served.lock().unwrap().push(name);
                Tried::Served
            }));
            reg
        };
        let (one, two, three) = (waiter("one"), waiter("two"), waiter("three"));
        let got = b.serving_after(|| {
            left.store(2, Ordering::SeqCst);
            b.signal(b"k");
            assert!(
                served.lock().unwrap().is_empty(),
                "served after the command"
            );
            "reply"
        });
        assert_eq!(got, "reply");
        assert_eq!(*served.lock().unwrap(), ["one", "two"]);
        assert!(ready(&one) && ready(&two), "the served are woken to answer");
        assert!(!ready(&three), "the third found nothing and was not woken");
        drop((one, two));
        three.clear();

        // A waiter that cannot take what is there is passed over; a chain is served in
        // the same step: serving the second writes "other", whose waiter is served too.
        let passed = b.register(std::slice::from_ref(&k), None);
        passed.set_attempt(Box::new(|_| Tried::Passed));
        let other = Bytes::from_static(b"other");
        let on_other = b.register(std::slice::from_ref(&other), None);
        let o = served.clone();
        on_other.set_attempt(Box::new(move |_| {
            o.lock().unwrap().push("on other");
            Tried::Served
        }));
        let chained = b.clone();
        three.set_attempt(Box::new(move |_| {
            chained.signal(b"other");
            Tried::Served
        }));
        b.serving_after(|| b.signal(b"k"));
        assert!(ready(&three) && ready(&on_other));
        assert_eq!(served.lock().unwrap().last(), Some(&"on other"));

        // Without an attempt (or once it left) a waiter is woken to try on its own.
        drop((three, on_other));
        passed.withdraw();
        passed.clear();
        b.serving_after(|| b.signal(b"k"));
        assert!(ready(&passed));
        // Outside `serving_after` a signal only wakes, as before.
        passed.clear();
        b.signal(b"k");
        assert!(ready(&passed));
    }

    #[test]
    fn a_signal_wakes_the_first_waiter_and_leaving_passes_it_on() {
        let b = Arc::new(Blocked::default());
        let k = Bytes::from_static(b"k");
        let first = b.register(std::slice::from_ref(&k), Some(1));
        let second = b.register(
            &[k.clone(), Bytes::from_static(b"other"), k.clone()],
            Some(2),
        );
        assert_eq!(b.count(), 2);
        assert!(!ready(&first) && !ready(&second));
        b.signal(b"k");
        assert!(ready(&first), "the first to block is woken");
        assert!(!ready(&second), "only the first");
        b.signal(b"missing");
        drop(first);
        assert!(ready(&second), "the first left: the next one looks");
        second.clear();
        assert!(!ready(&second));
        b.signal(b"other");
        assert!(ready(&second));
        second.clear();
        assert!(b.unblock(2), "CLIENT UNBLOCK finds it");
        assert!(ready(&second));
        assert!(!b.unblock(1), "gone");
        // A signal the first could not use goes to the one behind it.
        let third = b.register(std::slice::from_ref(&k), None);
        second.clear();
        third.clear();
        second.pass_on();
        assert!(ready(&third) && !ready(&second));
        assert_eq!(b.clients(), 1, "the third is another node's attempt");
        drop(third);
        drop(second);
        assert_eq!(b.count(), 0);
        let q = b.queues.lock().unwrap();
        assert!(
            q.by_key.is_empty() && q.by_client.is_empty(),
            "nothing left behind"
        );
    }
}
