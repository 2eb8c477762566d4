//! What INFO persistence and LASTSAVE tell of the snapshots (the snapshot module writes
//! them), and the one BGSAVE at a time: asked by the command, started and reaped by the
//! node's cron, ended by its writer thread.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

/// What INFO persistence and LASTSAVE tell of the snapshots, and the one BGSAVE at a time.
#[derive(Debug, Default)]
pub struct Saves {
    /// The BGSAVE state, changed as one.
    bg: std::sync::Mutex<Background>,
    /// Unix seconds of the last successful save; 0 = none (the start counts).
    last_ok_secs: AtomicU64,
    /// The last BGSAVE failed.
    last_bgsave_failed: AtomicBool,
    /// Seconds the last BGSAVE took.
    last_bgsave_secs: AtomicI64,
    /// A BGSAVE has ended since the start.
    any_bgsave: AtomicBool,
    /// Successful saves since the start.
    saves: AtomicU64,
    /// The store's change counter when the last successful save began.
    changes_at_save: AtomicU64,
}

/// One BGSAVE's course: asked, started by the cron, ended by its thread, then done (reaped).
#[derive(Debug, Default)]
struct Background {
    /// Asked for and not yet reaped.
    running: bool,
    started: bool,
    ended: bool,
    /// Stopped by SHUTDOWN (Redis kills its child): its file is not renamed into place.
    cancelled: bool,
    /// Unix ms it was asked for.
    asked_ms: u64,
    /// The store's change counter when its write started.
    changes_at_start: u64,
}

/// Why a save could not start.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("ERR Background save already in progress")]
    InProgress,
}

impl Saves {
    fn bg(&self) -> std::sync::MutexGuard<'_, Background> {
        self.bg.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new BGSAVE, unless one runs.
    pub fn ask(&self, now_ms: u64) -> Result<(), Refused> {
        let mut bg = self.bg();
        if bg.running {
            return Err(Refused::InProgress);
        }
        *bg = Background {
            running: true,
            asked_ms: now_ms,
            ..Background::default()
        };
        Ok(())
    }

    pub fn running(&self) -> bool {
        self.bg().running
    }

    /// For the cron: whether to start the asked-for write now (true once per BGSAVE), with
    /// the store's change counter at its start (`changes`, read only then).
    pub fn take_start(&self, changes: impl FnOnce() -> u64) -> bool {
        let mut bg = self.bg();
        if !bg.running || bg.started {
            return false;
        }
        bg.started = true;
        if bg.cancelled {
            // Stopped before it started: ends as a failed BGSAVE, nothing written.
            self.last_bgsave_failed.store(true, Relaxed);
            bg.ended = true;
            return false;
        }
        bg.changes_at_start = changes();
        true
    }

    /// Stops the BGSAVE that runs, if one does (SHUTDOWN, as Redis kills its child before
    /// its own save): from now on its write puts no file in place ([`Saves::unless_cancelled`])
    /// and gives up at its next shard ([`Saves::cancelled`]). It still ends and is reaped as
    /// a failed BGSAVE.
    pub fn cancel(&self) {
        let mut bg = self.bg();
        if bg.running && !bg.ended {
            bg.cancelled = true;
        }
    }

    /// The running BGSAVE was stopped: its writer should give up.
    pub fn cancelled(&self) -> bool {
        self.bg().cancelled
    }

    /// `commit` (the BGSAVE's rename into place) unless the BGSAVE was stopped; under the
    /// state's lock, so a [`Saves::cancel`] that returned is never followed by this
    /// BGSAVE's rename (a SAVE after it is the file that stays).
    pub fn unless_cancelled<T>(
        &self,
        commit: impl FnOnce() -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let bg = self.bg();
        if bg.cancelled {
            return Err(std::io::Error::other("stopped by SHUTDOWN"));
        }
        commit()
    }

    /// For the cron: marks a BGSAVE whose write ended done (a round after its end, as Redis
    /// reaps its child in its cron).
    pub fn reap(&self) {
        let mut bg = self.bg();
        if bg.running && bg.ended {
            *bg = Background::default();
        }
    }

    /// Records SAVE's outcome; `changes` is the store's change counter it saved at.
    pub fn record_save(&self, ok: bool, changes: u64, now_ms: u64) {
        if ok {
            self.saved(changes, now_ms);
        }
    }

    /// Records the running BGSAVE's outcome (its thread's last step).
    pub fn record_bgsave(&self, ok: bool, now_ms: u64) {
        let mut bg = self.bg();
        if ok {
            self.saved(bg.changes_at_start, now_ms);
        }
        self.last_bgsave_failed.store(!ok, Relaxed);
        let took = now_ms.saturating_sub(bg.asked_ms) / 1000;
        self.last_bgsave_secs.store(took as i64, Relaxed);
        self.any_bgsave.store(true, Relaxed);
        bg.ended = true;
    }

    fn saved(&self, changes: u64, now_ms: u64) {
        self.last_ok_secs.store(now_ms / 1000, Relaxed);
        self.saves.fetch_add(1, Relaxed);
        self.changes_at_save.store(changes, Relaxed);
    }

    /// Unix seconds of the last successful save, or `started_secs` if none.
    pub fn last_save_secs(&self, started_secs: u64) -> u64 {
        match self.last_ok_secs.load(Relaxed) {
            0 => started_secs,
            s => s,
        }
    }

    /// Changes since the last successful save began, of the store's `changes` now.
    pub fn changes_since(&self, changes: u64) -> u64 {
        changes.saturating_sub(self.changes_at_save.load(Relaxed))
    }

    pub fn saves(&self) -> u64 {
        self.saves.load(Relaxed)
    }

    pub fn last_bgsave_failed(&self) -> bool {
        self.last_bgsave_failed.load(Relaxed)
    }

    /// Seconds the last BGSAVE took; -1 = none yet.
    pub fn last_bgsave_secs(&self) -> i64 {
        if self.any_bgsave.load(Relaxed) {
            self.last_bgsave_secs.load(Relaxed)
        } else {
            -1
        }
    }

    /// Seconds the running BGSAVE has taken so far; -1 = none runs.
    pub fn current_secs(&self, now_ms: u64) -> i64 {
        let bg = self.bg();
        if bg.running {
            (now_ms.saturating_sub(bg.asked_ms) / 1000) as i64
        } else {
            -1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bgsave_at_a_time_done_a_round_after_its_end() {
        let s = Saves::default();
        assert_eq!(s.last_bgsave_secs(), -1);
        assert_eq!(s.ask(1_000), Ok(()));
        assert_eq!(s.ask(1_001), Err(Refused::InProgress));
        s.reap();
        assert!(s.running(), "not started yet");
        assert!(s.take_start(|| 40));
        assert!(!s.take_start(|| 41), "started once");
        s.reap();
        assert!(s.running(), "not ended yet");
        s.record_bgsave(true, 3_500);
        assert!(s.running(), "until the cron's next round");
        assert_eq!(s.ask(3_600), Err(Refused::InProgress));
        s.reap();
        assert!(!s.running());
        assert_eq!(s.last_save_secs(1), 3);
        assert_eq!(s.last_bgsave_secs(), 2);
        assert_eq!(
            s.changes_since(45),
            5,
            "changes from the write's start on count"
        );
        assert!(!s.last_bgsave_failed());
        // A new BGSAVE right after a reap: nothing of the last one's end is left to end it.
        assert_eq!(s.ask(4_000), Ok(()));
        s.reap();
        assert!(s.running());
        assert!(s.take_start(|| 50));
        s.record_bgsave(false, 4_100);
        s.reap();
        assert!(!s.running());
        assert!(s.last_bgsave_failed());
        assert_eq!(s.last_save_secs(1), 3, "a failed save is no save");
        assert_eq!(s.saves(), 1);
        s.record_save(true, 60, 5_000);
        assert_eq!(s.saves(), 2);
        assert_eq!(s.changes_since(61), 1);
    }

    #[test]
    fn a_cancelled_bgsave_puts_no_file_in_place_and_ends_failed() {
        let s = Saves::default();
        s.cancel();
        assert!(!s.cancelled(), "nothing runs: nothing to stop");
        assert_eq!(s.ask(1_000), Ok(()));
        assert!(s.take_start(|| 1));
        assert_eq!(s.unless_cancelled(|| Ok(7)).unwrap(), 7);
        s.cancel();
        assert!(s.cancelled());
        let mut renamed = false;
        assert!(s
            .unless_cancelled(|| {
                renamed = true;
                Ok(())
            })
            .is_err());
        assert!(!renamed, "no rename after a cancel");
        s.record_bgsave(false, 1_100);
        s.reap();
        assert!(!s.running());
        assert!(s.last_bgsave_failed());
        // The next one is not stopped.
        assert_eq!(s.ask(2_000), Ok(()));
        assert!(!s.cancelled());
        assert!(s.take_start(|| 2));
        s.record_bgsave(true, 2_001);
        s.reap();
        assert!(!s.last_bgsave_failed());
        // Stopped before the cron started it: it never starts, and ends failed.
        assert_eq!(s.ask(3_000), Ok(()));
        s.cancel();
        assert!(!s.take_start(|| 2));
        s.reap();
        assert!(!s.running());
        assert!(s.last_bgsave_failed());
    }
}
