//! CLIENT PAUSE: this node's clients' commands wait until CLIENT UNPAUSE or the pause's end
//! (Redis's `pauseClients`): every command in mode ALL, in mode WRITE the writes and the
//! commands Redis marks `may-replicate` (PUBLISH, SPUBLISH, PFCOUNT, EVAL, EVALSHA or FCALL
//! of a script or function not declared `no-writes`, an EXEC with one of those queued). A new pause while one lasts keeps the later end and the stricter mode, as in
//! Redis. The front end holds a paused command (and those behind it) and waits on
//! [`Pause::ended`]; with no pause a command pays one atomic load.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

/// What a pause holds back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// Writes and `may-replicate` commands.
    Write,
    /// Every command.
    All,
}

#[derive(Default)]
struct State {
    mode: Option<Mode>,
    /// Unix ms when it ends by itself.
    end_ms: u64,
    wakers: Vec<Waker>,
}

/// The node's client pause.
#[derive(Default)]
pub struct Pause {
    /// A pause was set and not yet seen over (the one load every command pays).
    active: AtomicBool,
    state: Mutex<State>,
    /// Clients waiting for the pause to end (INFO's `blocked_clients` counts them).
    pub waiting: AtomicUsize,
}

impl Pause {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// CLIENT PAUSE: pauses `mode` until `end_ms` (the later end and the stricter mode of
    /// this one and any lasting one). `until` gets the pause's end, under the pause's lock
    /// (so a racing pause or unpause cannot leave it behind another's).
    pub fn pause(&self, mode: Mode, end_ms: u64, now_ms: u64, until: impl FnOnce(u64)) {
        let mut s = self.lock();
        if s.mode.is_none() || s.end_ms <= now_ms {
            s.mode = Some(mode);
            s.end_ms = end_ms;
        } else {
            s.mode = s.mode.max(Some(mode));
            s.end_ms = s.end_ms.max(end_ms);
        }
        until(s.end_ms);
        self.active.store(true, Ordering::Release);
    }

    /// CLIENT UNPAUSE: ends the pause; the waiting clients go on. `until` gets 0, under the
    /// pause's lock (see [`Pause::pause`]).
    pub fn unpause(&self, until: impl FnOnce(u64)) {
        let wakers = {
            let mut s = self.lock();
            s.mode = None;
            until(0);
            std::mem::take(&mut s.wakers)
        };
        self.active.store(false, Ordering::Release);
        for w in wakers {
            w.wake();
        }
    }

    /// The pause in force at `now_ms` and when it ends, if any.
    pub fn at(&self, now_ms: u64) -> Option<(Mode, u64)> {
        if !self.active.load(Ordering::Acquire) {
            return None;
        }
        let s = self.lock();
        match s.mode {
            Some(mode) if now_ms < s.end_ms => Some((mode, s.end_ms)),
            _ => None,
        }
    }

    /// Resolves when CLIENT UNPAUSE is called (the caller also waits for the end time, with
    /// a timer of its own).
    pub fn ended(&self) -> Ended<'_> {
        Ended { pause: self }
    }
}

/// The future of [`Pause::ended`].
pub struct Ended<'a> {
    pause: &'a Pause,
}

impl Future for Ended<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.pause.lock();
        if s.mode.is_none() {
            return Poll::Ready(());
        }
        if !s.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            s.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_keeps_the_later_end_and_stricter_mode_until_unpaused() {
        let p = Pause::default();
        assert_eq!(p.at(0), None);
        let mut end = 0;
        p.pause(Mode::All, 1_000, 0, |e| end = e);
        assert_eq!(end, 1_000);
        p.pause(Mode::Write, 5_000, 10, |e| end = e);
        assert_eq!(end, 5_000);
        p.pause(Mode::Write, 2_000, 20, |e| end = e);
        assert_eq!(end, 5_000, "a shorter pause does not shorten it");
        assert_eq!(
            p.at(100),
            Some((Mode::All, 5_000)),
            "stricter mode, later end"
        );
        assert_eq!(p.at(5_000), None, "over at its end");
        // A pause after one that ended starts afresh.
        p.pause(Mode::Write, 9_000, 6_000, |e| end = e);
        assert_eq!(end, 9_000);
        assert_eq!(p.at(6_000), Some((Mode::Write, 9_000)));
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut ended = std::pin::pin!(p.ended());
        assert!(ended.as_mut().poll(&mut cx).is_pending());
        p.unpause(|e| end = e);
        assert_eq!(end, 0);
        assert!(ended.as_mut().poll(&mut cx).is_ready());
        assert_eq!(p.at(6_000), None);
    }
}
