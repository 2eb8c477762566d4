//! A client connection's stop and trim requests: raised from any thread (CLIENT KILL, the
//! node's shutdown, the cron asking an idle connection for its buffers), read by the
//! connection's task with one atomic load wherever it checks or waits.
//!
//! A cancellation token and a `Notify` did this before, and cost every request five locks
//! (each check of the token, and each poll of the two futures in the read's `select!`,
//! locks a mutex): about 2 % of a node's CPU at 50 unpipelined clients. Here the task
//! registers its waker once ([`Signals::watch`]) and a raise wakes it by reference, so the
//! waker stays for the next one.

use std::future::{poll_fn, Future};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::task::{Poll, Waker};

/// Close the connection once it has answered what it read (CLIENT KILL, shutdown).
pub const STOP: u8 = 1;
/// Give the buffers back while idle (the cron's `Signal::Trim`).
pub const TRIM: u8 = 2;

/// The requests raised and not yet taken, and whom to wake for them.
#[derive(Default)]
pub struct Signals {
    raised: AtomicU8,
    /// The connection task's waker ([`Signals::watch`]).
    waker: Mutex<Option<Waker>>,
}

impl Signals {
    /// Raises `what` and wakes the watching task.
    pub fn raise(&self, what: u8) {
        self.raised.fetch_or(what, Ordering::Release);
        if let Some(waker) = self.lock().as_ref() {
            waker.wake_by_ref();
        }
    }

    /// True while `what` is raised.
    pub fn is_raised(&self, what: u8) -> bool {
        self.raised.load(Ordering::Acquire) & what != 0
    }

    /// Clears `what`; true if it was raised.
    pub fn take(&self, what: u8) -> bool {
        self.raised.fetch_and(!what, Ordering::AcqRel) & what != 0
    }

    /// Makes the calling task the one a raise wakes. Call it from the task that will wait on
    /// [`Signals::raised`], before it waits (again after the connection moved to another
    /// worker's task).
    pub async fn watch(&self) {
        poll_fn(|cx| {
            *self.lock() = Some(cx.waker().clone());
            Poll::Ready(())
        })
        .await
    }

    /// Resolves once `what` is raised (it stays raised). Only for the task that called
    /// [`Signals::watch`]: a poll registers nothing, that task's waker is woken.
    pub fn raised(&self, what: u8) -> impl Future<Output = ()> + '_ {
        poll_fn(move |_| {
            if self.is_raised(what) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Waker>> {
        self.waker.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::{Signals, STOP, TRIM};
    use std::future::Future;
    use std::pin::pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Wake, Waker};

    #[test]
    fn raise_take_and_is_raised_keep_the_requests_apart() {
        let s = Signals::default();
        assert!(!s.is_raised(STOP) && !s.is_raised(TRIM));
        s.raise(TRIM);
        assert!(s.is_raised(TRIM) && !s.is_raised(STOP));
        assert!(s.take(TRIM));
        assert!(!s.take(TRIM), "taken once");
        s.raise(STOP);
        s.raise(TRIM);
        assert!(s.take(TRIM));
        assert!(s.is_raised(STOP), "taking one leaves the other");
    }

    /// A waker that records that it was woken.
    #[derive(Default)]
    struct Woken(AtomicBool);

    impl Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// The task registers its waker once; each raise from another thread then wakes it (by
    /// reference, so the waker stays), and the wait that was pending is ready.
    #[test]
    fn a_raise_from_another_thread_wakes_the_watching_task_each_time() {
        let s = Arc::new(Signals::default());
        let woken = Arc::new(Woken::default());
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(pin!(s.watch()).poll(&mut cx).is_ready());
        for (round, what) in [TRIM, TRIM, STOP].into_iter().enumerate() {
            let mut wait = pin!(s.raised(what));
            assert!(wait.as_mut().poll(&mut cx).is_pending(), "round {round}");
            assert!(
                !woken.0.load(Ordering::SeqCst),
                "round {round}: nothing raised yet"
            );
            let raiser = s.clone();
            std::thread::spawn(move || raiser.raise(what))
                .join()
                .expect("raiser");
            assert!(
                woken.0.swap(false, Ordering::SeqCst),
                "round {round}: not woken"
            );
            assert!(wait.as_mut().poll(&mut cx).is_ready(), "round {round}");
            assert!(s.take(what));
        }
    }
}
