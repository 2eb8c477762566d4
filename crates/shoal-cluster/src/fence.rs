//! A node that was paused (SIGSTOP, a VM stalled or migrated, a host that stopped
//! scheduling it) serves nothing until a majority of its cluster confirms its view.
//!
//! A process paused for longer than failure detection wakes with the view it had: it still
//! counts itself the owner of its keys and reaches everyone (it suspected nobody while it
//! did not run), so the cut-off rule (`handoff::cut_off`) does not hold it. Meanwhile the
//! others declared it down and its keys' next copies took writes. Until gossip tells it so,
//! it would run what it finds on waking with the old view: forwarded writes still inside
//! their senders' deadlines on its stale values (their replication to the copy that took
//! over erased that copy's acknowledged writes: the scale-out test's freeze step lost an
//! acknowledged INCR that way in about one run of 30), and reads of its old values.
//!
//! So a thread of its own ([`spawn_pulse`]) notes the time every [`PULSE`]. A gap of more
//! than [`STALL`] since the last note means the whole process stood still: the node is
//! *fenced* ([`Fence::fenced`], part of `Handoff::is_cut_off`) and answers commands on
//! keys as a node cut off from the majority does (CLUSTERDOWN; a forwarded command gets
//! CUT_OFF and its sender tries the next copy, nothing having run). A worker that reads
//! the gap before the pulse thread ran counts it too. The link probes (`reach`) start a
//! round at once; the fence lifts when members that with this node make a majority of its
//! view answered a probe sent after the pause from the same view ([`confirms`]). A node
//! declared down meanwhile finds the others in another view: it stays fenced until it has
//! rejoined under a new generation and the views agree, and then, as any joiner, fetches
//! its keys from their copies before it runs a command on them.
//!
//! [`STALL`] is below the shortest time the others take to declare a member down (a probe
//! period and gossip's 3 s least suspicion); shorter pauses change no view, and a forwarded
//! command whose sender gave up meanwhile answers EXPIRED (its deadline). The fence is
//! armed by the first pulse: in the whole-cluster simulation, whose time is simulated, no
//! pulse runs and nothing is fenced.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How often the pulse thread notes the time.
pub const PULSE: Duration = Duration::from_millis(100);
/// A gap between two notes longer than this is a pause of the whole process.
pub const STALL: Duration = Duration::from_secs(2);

/// The pulse's notes and the pause they showed, if not yet confirmed away.
#[derive(Debug)]
pub struct Fence {
    start: Instant,
    /// The node's clock (`shoal_engine::clock`, ms) at the last pulse; 0 before the first
    /// (unarmed). Commands compare it with the clock reading they have anyway.
    pulse_ms: AtomicU64,
    /// Milliseconds since `start` when a pause was seen, plus one (0: none pending).
    stalled: AtomicU64,
    /// Pauses seen since the start.
    pub stalls: AtomicU64,
    /// Woken when a pause is seen: the link probes go out at once.
    pub seen: Notify,
    /// This node's generation in its current view, and when the last pause was seen.
    generation: AtomicU64,
    stalled_generation: AtomicU64,
    /// The generation this node had before it rejoined after a pause (`u64::MAX`: none): a
    /// view of that generation is stale, however a command came by it ([`Fence::stale`]).
    rejoined_from: AtomicU64,
}

impl Default for Fence {
    fn default() -> Fence {
        Fence {
            start: Instant::now(),
            pulse_ms: AtomicU64::new(0),
            stalled: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
            seen: Notify::new(),
            generation: AtomicU64::new(0),
            stalled_generation: AtomicU64::new(0),
            rejoined_from: AtomicU64::new(u64::MAX),
        }
    }
}

/// True if the time from a pulse at `last` to `now` is a pause (`last` 0: no pulse yet).
pub fn paused(last: u64, now: u64, stall: Duration) -> bool {
    last != 0 && now.saturating_sub(last) > stall.as_millis() as u64
}

/// True when the members that answered a probe from this node's view (`agreeing`), with
/// this node if it is one of them (`member`), are a majority of the `members` of its view,
/// and none answered from another view (`differing`: that member may know this node to be
/// down, and the others will soon).
pub fn confirms(members: usize, agreeing: usize, member: bool, differing: usize) -> bool {
    differing == 0 && (agreeing + usize::from(member)) * 2 > members
}

impl Fence {
    /// Milliseconds since the fence was made, on the monotonic clock (which runs on while
    /// the process is stopped): what probe rounds are timed by ([`Fence::confirmed`]).
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Notes a pulse at `clock_ms` (the node's clock).
    fn pulse(&self, clock_ms: u64) {
        self.pulse_ms.store(clock_ms.max(1), Ordering::Release);
    }

    /// Records a pause: the latest one stands, so that a probe round begun before it (its
    /// answers older than the pause) cannot lift it ([`Fence::confirmed`]).
    fn stall(&self) {
        let now = self.now_ms() + 1;
        self.stalled_generation
            .store(self.generation.load(Ordering::Acquire), Ordering::Release);
        let before = self.stalled.fetch_max(now, Ordering::AcqRel);
        if before == 0 {
            self.stalls.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "this process stood still for more than {STALL:?} (paused or starved): \
                 commands on keys answer CLUSTERDOWN until a majority of the cluster \
                 confirms its view"
            );
        }
        self.seen.notify_one();
    }

    /// Called with the clock reading a command has anyway (`now_ms`): a pulse older than
    /// [`STALL`] means the process stood still and the pulse thread has not run since it
    /// woke. A few loads, no clock reading.
    pub fn check(&self, now_ms: u64) {
        if paused(self.pulse_ms.load(Ordering::Acquire), now_ms, STALL) {
            self.stall();
        }
    }

    /// True while a pause waits for a majority's confirmation.
    pub fn fenced(&self) -> bool {
        self.stalled.load(Ordering::Acquire) != 0
    }

    /// A view with this node under `generation` was installed. Under another generation
    /// than when the pause was seen, the node learnt from the others that it was declared
    /// down and rejoined: its old view is gone, and as a joiner it fetches its keys from
    /// their copies before it runs a command on them. That lifts the fence (at once: the
    /// others send it commands as soon as they hear of it). True if it lifted one.
    pub fn installed(&self, generation: u64) -> bool {
        self.generation.store(generation, Ordering::Release);
        let stalled = self.stalled.load(Ordering::Acquire);
        let before = self.stalled_generation.load(Ordering::Acquire);
        if stalled == 0 || before == generation {
            return false;
        }
        // Before the lift: whoever sees it lifted sees the old generation stale too.
        self.rejoined_from.store(before, Ordering::Release);
        self.lift(stalled)
    }

    /// Whether a view in which this node has `generation` is one from before it rejoined
    /// after a pause: a command routed by it (loaded before the fence lifted) must not run
    /// on this node's copies, which that view still counts as current (a GET answered a
    /// pre-pause value so, once in CI: a helper traced it to the view being read just
    /// before the lift).
    pub fn stale(&self, generation: u64) -> bool {
        self.rejoined_from.load(Ordering::Acquire) == generation
    }

    /// A probe round that started at `round` (from [`Fence::now_ms`]) confirmed this node's
    /// view: lifts a pause seen before the round started. True if one was lifted.
    pub fn confirmed(&self, round: u64) -> bool {
        let stalled = self.stalled.load(Ordering::Acquire);
        if stalled == 0 || stalled > round + 1 {
            return false;
        }
        self.lift(stalled)
    }

    /// Lifts the pause seen at `stalled`, unless a later one was seen since.
    fn lift(&self, stalled: u64) -> bool {
        let lifted = self
            .stalled
            .compare_exchange(stalled, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if lifted {
            tracing::info!("a majority of the cluster confirmed this node's view after its pause");
        }
        lifted
    }
}

/// Starts the pulse thread; it ends when the fence is dropped. A thread of its own, not a
/// task: a worker busy with a long command must not look like a pause. It times its own
/// gaps on the monotonic clock, and notes the node's clock for the commands' check.
pub fn spawn_pulse(fence: &Arc<Fence>) {
    let weak: Weak<Fence> = Arc::downgrade(fence);
    fence.pulse(shoal_engine::clock::now_ms());
    let spawned = std::thread::Builder::new()
        .name("shoal-pulse".into())
        .spawn(move || {
            let mut last = Instant::now();
            loop {
                std::thread::sleep(PULSE);
                let Some(fence) = weak.upgrade() else {
                    return;
                };
                // The node's clock first: stopped between the two readings, the monotonic
                // one shows the gap and the note stays old. The node's clock counts too
                // (the monotonic one stands still while the host is suspended; a clock
                // stepped forward only costs a probe round).
                let clock_ms = shoal_engine::clock::now_ms();
                let now = Instant::now();
                if now.duration_since(last) > STALL
                    || paused(fence.pulse_ms.load(Ordering::Acquire), clock_ms, STALL)
                {
                    fence.stall();
                }
                last = now;
                fence.pulse(clock_ms);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no pulse thread: a paused node is not fenced");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(2);

    #[test]
    fn a_pulse_older_than_the_stall_is_a_pause_and_no_pulse_is_none() {
        assert!(!paused(0, 10_000, S), "unarmed");
        assert!(!paused(1000, 3000, S), "exactly the stall");
        assert!(paused(1000, 3001, S));
        assert!(!paused(5000, 4000, S), "a clock that went back");
    }

    #[test]
    fn a_majority_of_the_view_with_this_node_confirms() {
        let c = |members, agreeing| confirms(members, agreeing, true, 0);
        assert!(c(1, 0), "alone");
        assert!(!c(2, 0));
        assert!(c(2, 1));
        assert!(!c(3, 0));
        assert!(c(3, 1));
        assert!(!c(4, 1));
        assert!(c(4, 2));
        assert!(!c(5, 1));
        assert!(c(5, 2));
        assert!(
            !confirms(5, 2, false, 0),
            "this node is not placed: it has no vote"
        );
        assert!(confirms(5, 3, false, 0));
        assert!(
            !confirms(5, 3, true, 1),
            "one member answered from another view"
        );
    }

    #[test]
    fn a_pause_fences_until_a_round_started_after_it_confirms() {
        let f = Fence {
            start: Instant::now() - Duration::from_secs(10),
            ..Fence::default()
        };
        f.check(1_000_000);
        assert!(!f.fenced(), "unarmed: no pulse yet");
        f.pulse(1_000_000);
        f.check(1_002_000);
        assert!(!f.fenced(), "within the stall");
        f.check(1_002_001);
        assert!(f.fenced(), "a command saw the pulse 2,001 ms old");
        assert_eq!(f.stalls.load(Ordering::Relaxed), 1);
        f.check(1_003_000);
        f.stall();
        assert_eq!(
            f.stalls.load(Ordering::Relaxed),
            1,
            "one pause, counted once"
        );
        let seen = f.stalled.load(Ordering::Acquire) - 1;
        assert!(seen >= 10_000);
        assert!(!f.confirmed(seen - 1), "a round begun before the pause");
        assert!(f.fenced());
        // A second pause while a round is out: its answers are older than that pause.
        f.stalled.store(seen + 2 + 1, Ordering::Release);
        assert!(!f.confirmed(seen), "a round begun before the second pause");
        let seen = seen + 2;
        assert!(f.confirmed(seen));
        assert!(!f.fenced());
        assert!(!f.confirmed(seen), "nothing left to lift");
    }

    #[test]
    fn a_pause_is_lifted_by_a_rejoin_under_a_new_generation() {
        let f = Fence::default();
        assert!(!f.installed(7), "no pause");
        f.pulse(1_000_000);
        f.check(1_005_000);
        assert!(f.fenced());
        assert!(
            !f.installed(7),
            "the same generation: the old view may stand"
        );
        assert!(f.fenced());
        assert!(!f.stale(7), "no rejoin yet");
        assert!(f.installed(8), "rejoined");
        assert!(!f.fenced());
        // A command that read the view from before the rejoin (generation 7) just before
        // the lift still counts as fenced; one by the new view runs.
        assert!(f.stale(7));
        assert!(!f.stale(8));
    }
}
