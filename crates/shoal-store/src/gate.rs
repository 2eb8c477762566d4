//! The transaction gate: what lets EXEC run its queued commands with no other command in
//! between, as Redis's single thread does, while the worker threads otherwise run commands
//! side by side.
//!
//! Every command enters the gate ([`Gate::enter`]) for as long as it runs; a transaction
//! runs inside [`Gate::exclusive`], which waits until no other thread is inside, keeps the
//! others out until it ends, and lets its own thread's commands through. Entering costs one
//! atomic add on a counter of the thread's own (a slot of its own cache line) and one read
//! of a flag that only a transaction writes, so commands on different threads do not
//! contend; a thread that finds a transaction under way waits on the transaction's mutex.
//!
//! The protocol is Dekker's: a command adds to its slot, then reads `pending`; a
//! transaction sets `pending`, then reads every slot (all sequentially consistent), so at
//! least one of them sees the other. Callers enter only at the top of a command, holding no
//! other lock a transaction could need (`cmd::run` in the engine), so a waiting command
//! cannot block the transaction it waits for.
//!
//! A script that runs past Redis's `busy-reply-threshold` is a transaction the others stop
//! waiting for: [`Gate::enter_unless`] and [`Gate::exclusive_unless`] give up while the
//! caller's `busy` test holds, so the command is answered BUSY instead (the engine's
//! `busy` module), as Redis answers the clients it reads while a script runs long.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::*};
use std::time::Duration;

use parking_lot::Mutex;

/// Counter slots per gate; threads beyond it share slots (still correct, a little slower).
const SLOTS: usize = 64;

#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicU32);

/// A flag on a cache line of its own (read by every command, written by transactions).
#[repr(align(128))]
#[derive(Default)]
struct Flag(AtomicBool);

/// See the module docs.
pub struct Gate {
    slots: Box<[Slot]>,
    /// Set while a transaction waits to run or runs.
    pending: Flag,
    /// Held by the transaction for as long as it waits and runs: one at a time, and what
    /// the commands kept out wait on.
    running: Mutex<()>,
}

/// How often a command kept out looks again whether the transaction became a busy script.
const BUSY_POLL: Duration = Duration::from_millis(10);

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot.
    static SLOT: usize = NEXT_SLOT.fetch_add(1, Relaxed) % SLOTS;
    /// How deep this thread is in entered commands (a transaction's commands are entered
    /// inside EXEC's own).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The gate whose transaction this thread runs now (its address), 0 for none.
    static EXCLUSIVE: Cell<usize> = const { Cell::new(0) };
    /// Transactions this thread ran since [`take_exclusive`].
    static RAN: Cell<u32> = const { Cell::new(0) };
}

/// The transactions this thread ran since the last call (`crate::take_contention`).
pub fn take_exclusive() -> u32 {
    RAN.with(Cell::take)
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            pending: Flag::default(),
            running: Mutex::new(()),
        }
    }
}

/// A command inside the gate; it leaves when this is dropped, on the thread that entered
/// (it cannot be sent to another: the counts are the thread's).
#[must_use]
pub struct Entered<'a> {
    slot: Option<&'a AtomicU32>,
    _this_thread: std::marker::PhantomData<*const ()>,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            slot.fetch_sub(1, Release);
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }
}

impl Gate {
    fn addr(&self) -> usize {
        self as *const Gate as usize
    }

    fn my_slot(&self) -> &AtomicU32 {
        &self.slots[SLOT.with(|s| *s)].0
    }

    /// Enters the gate for one command: at once, unless a transaction of another thread
    /// waits or runs, then once it ended.
    pub fn enter(&self) -> Entered<'_> {
        match self.enter_unless(&|| false) {
            Some(entered) => entered,
            None => unreachable!("never busy"),
        }
    }

    /// As [`Gate::enter`], but `None` as soon as `busy()` holds while a transaction of
    /// another thread keeps this one out (a script past its time: the caller answers BUSY).
    pub fn enter_unless(&self, busy: &dyn Fn() -> bool) -> Option<Entered<'_>> {
        if EXCLUSIVE.with(Cell::get) == self.addr() {
            // The transaction's own commands.
            return Some(Entered {
                slot: None,
                _this_thread: std::marker::PhantomData,
            });
        }
        let slot = self.my_slot();
        let depth = DEPTH.with(|d| {
            let depth = d.get();
            d.set(depth + 1);
            depth
        });
        loop {
            slot.fetch_add(1, SeqCst);
            // Nested in a command of this thread that is inside already: a transaction
            // waiting for it must not be waited for.
            if depth > 0 || !self.pending.0.load(SeqCst) {
                return Some(Entered {
                    slot: Some(slot),
                    _this_thread: std::marker::PhantomData,
                });
            }
            slot.fetch_sub(1, SeqCst);
            if !self.wait_unless(busy) {
                DEPTH.with(|d| d.set(depth));
                return None;
            }
        }
    }

    /// Waits for the transaction under way to end: true when it did, false as soon as
    /// `busy()` holds.
    fn wait_unless(&self, busy: &dyn Fn() -> bool) -> bool {
        loop {
            if busy() {
                return false;
            }
            if let Some(running) = self.running.try_lock_for(BUSY_POLL) {
                drop(running);
                return true;
            }
        }
    }

    /// Enters the gate unless a transaction waits or runs (background work that can wait
    /// for its next round: active expiry, eviction, a delayed flush).
    pub fn try_enter(&self) -> Option<Entered<'_>> {
        if EXCLUSIVE.with(Cell::get) == self.addr() || DEPTH.with(Cell::get) > 0 {
            return Some(self.enter());
        }
        if self.pending.0.load(SeqCst) {
            return None;
        }
        let slot = self.my_slot();
        DEPTH.with(|d| d.set(d.get() + 1));
        slot.fetch_add(1, SeqCst);
        let entered = Entered {
            slot: Some(slot),
            _this_thread: std::marker::PhantomData,
        };
        if self.pending.0.load(SeqCst) {
            return None; // `entered` leaves
        }
        Some(entered)
    }

    /// Runs `f` with no command of another thread inside the gate: waits for those inside
    /// to leave (each is one command's work on the store) and keeps the others out until
    /// `f` returns. Called from inside a command (EXEC), whose own entry does not count.
    pub fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.exclusive_unless(&|| false, f) {
            Some(r) => r,
            None => unreachable!("never busy"),
        }
    }

    /// As [`Gate::exclusive`], but `None` (and `f` not run) as soon as `busy()` holds while
    /// another thread's transaction keeps this one waiting.
    pub fn exclusive_unless<R>(&self, busy: &dyn Fn() -> bool, f: impl FnOnce() -> R) -> Option<R> {
        if EXCLUSIVE.with(Cell::get) == self.addr() {
            return Some(f());
        }
        // This thread's own entries stop counting while it waits: another transaction
        // waiting for them would otherwise wait for this one, which waits for it.
        let own = self.my_slot();
        let depth = DEPTH.with(Cell::get);
        own.fetch_sub(depth, SeqCst);
        let running = loop {
            if let Some(running) = self.running.try_lock_for(BUSY_POLL) {
                break running;
            }
            if busy() {
                own.fetch_add(depth, SeqCst);
                return None;
            }
        };
        self.pending.0.store(true, SeqCst);
        // Commands inside are one command's work each, mostly microseconds; a long one
        // (KEYS over a large store) is waited for sleeping, not spinning.
        let mut spins = 0u32;
        while self.slots.iter().any(|s| s.0.load(SeqCst) != 0) {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else if spins < 128 {
                std::thread::yield_now();
            } else {
                let micros = 1u64 << (spins - 128).min(10);
                std::thread::sleep(std::time::Duration::from_micros(micros));
            }
        }
        // Undone also when `f` panics.
        struct Exclusive<'a> {
            gate: &'a Gate,
            own: &'a AtomicU32,
            depth: u32,
            before: usize,
        }
        impl Drop for Exclusive<'_> {
            fn drop(&mut self) {
                EXCLUSIVE.with(|e| e.set(self.before));
                self.gate.pending.0.store(false, SeqCst);
                // Inside again, without waiting: a transaction that starts now waits for
                // this command to end, which waits for nothing.
                self.own.fetch_add(self.depth, SeqCst);
            }
        }
        let before = EXCLUSIVE.with(|e| e.replace(self.addr()));
        RAN.with(|r| r.set(r.get().saturating_add(1)));
        let undo = Exclusive {
            gate: self,
            own,
            depth,
            before,
        };
        let result = f();
        drop(undo);
        drop(running);
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    /// Two counters that a transaction moves together: a command of another thread that
    /// reads both never sees them apart, while commands of several threads run side by
    /// side otherwise.
    #[test]
    fn no_command_runs_inside_another_threads_transaction() {
        let gate = Arc::new(Gate::default());
        let (a, b) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let torn = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for t in 0..4 {
            let (gate, a, b, torn) = (gate.clone(), a.clone(), b.clone(), torn.clone());
            threads.push(std::thread::spawn(move || {
                for _ in 0..20_000 {
                    if t == 0 {
                        // EXEC: entered as a command, then exclusive; its commands enter too.
                        let _exec = gate.enter();
                        gate.exclusive(|| {
                            let _one = gate.enter();
                            a.fetch_add(1, Relaxed);
                            std::hint::spin_loop();
                            let _two = gate.enter();
                            b.fetch_add(1, Relaxed);
                        });
                    } else {
                        let _get = gate.enter();
                        let _nested = gate.enter();
                        if a.load(Relaxed) != b.load(Relaxed) {
                            torn.fetch_add(1, Relaxed);
                        }
                    }
                }
            }));
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(torn.load(Relaxed), 0);
        assert_eq!(a.load(Relaxed), 20_000);
        assert!(gate.slots.iter().all(|s| s.0.load(SeqCst) == 0));
        assert!(!gate.pending.0.load(SeqCst));
    }

    /// Background work skips its round while a transaction waits or runs, and enters
    /// otherwise.
    #[test]
    fn try_enter_stands_aside_for_a_transaction() {
        let gate = Arc::new(Gate::default());
        assert!(gate.try_enter().is_some());
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let g = gate.clone();
        let t = std::thread::spawn(move || {
            g.exclusive(|| {
                tx.send(()).unwrap();
                go_rx.recv().unwrap();
            })
        });
        rx.recv().unwrap();
        assert!(gate.try_enter().is_none(), "a transaction runs");
        go_tx.send(()).unwrap();
        t.join().unwrap();
        assert!(gate.try_enter().is_some());
        assert!(gate.slots.iter().all(|s| s.0.load(SeqCst) == 0));
    }

    /// A command or a transaction kept out by a busy transaction gives up once the caller's
    /// test says busy (and enters normally after), leaving the gate's counts as they were.
    #[test]
    fn a_busy_transaction_turns_the_waiting_away() {
        let gate = Arc::new(Gate::default());
        let busy = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let g = gate.clone();
        let script = std::thread::spawn(move || {
            g.exclusive(|| {
                tx.send(()).unwrap();
                go_rx.recv().unwrap();
            })
        });
        rx.recv().unwrap();
        let b = busy.clone();
        let is_busy = move || b.load(SeqCst);
        // A command that waits gives up once the script turns busy.
        let (gate2, is_busy2) = (gate.clone(), is_busy.clone());
        let waiter = std::thread::spawn(move || {
            let entered = gate2.enter_unless(&is_busy2).is_some();
            let exclusive = gate2.exclusive_unless(&is_busy2, || ()).is_some();
            (entered, exclusive, DEPTH.with(Cell::get))
        });
        busy.store(true, SeqCst);
        assert_eq!(waiter.join().unwrap(), (false, false, 0));
        busy.store(false, SeqCst);
        go_tx.send(()).unwrap();
        script.join().unwrap();
        // Not busy and nothing under way: both go in.
        assert!(gate.enter_unless(&is_busy).is_some());
        assert_eq!(gate.exclusive_unless(&is_busy, || 7), Some(7));
        assert!(gate.slots.iter().all(|s| s.0.load(SeqCst) == 0));
        assert!(!gate.pending.0.load(SeqCst));
    }

    /// Two threads running transactions at once take turns (neither waits for the other's
    /// own entry), and a panic inside one leaves the gate open.
    #[test]
    fn transactions_of_two_threads_take_turns_and_a_panic_reopens_the_gate() {
        let gate = Arc::new(Gate::default());
        let n = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (gate, n) = (gate.clone(), n.clone());
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        let _exec = gate.enter();
                        gate.exclusive(|| {
                            let before = n.load(Relaxed);
                            let _inner = gate.enter();
                            n.store(before + 1, Relaxed);
                        });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(n.load(Relaxed), 20_000, "no increment lost between turns");
        let g = gate.clone();
        let r = std::thread::spawn(move || {
            let _exec = g.enter();
            g.exclusive(|| panic!("a command panicked"));
        })
        .join();
        assert!(r.is_err());
        assert!(!gate.pending.0.load(SeqCst));
        assert!(gate.slots.iter().all(|s| s.0.load(SeqCst) == 0));
        drop(gate.enter());
    }
}
