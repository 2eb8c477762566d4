//! SAVE and BGSAVE: a snapshot of this node's keys (every database, with their expiries)
//! and function libraries in Redis's RDB format ([`crate::rdb::SnapshotWriter`], version
//! 10), written to `dir`/`dbfilename` through a temporary file renamed into place, as Redis
//! does. Shoal never loads it (a node refills from its cluster); redis-server and RDB tools
//! read it. In a cluster each node writes the keys it holds, its copies of others' too.
//!
//! SAVE writes while no other worker runs a command (a point in time, as Redis's SAVE
//! blocks). BGSAVE only asks: the node's cron starts the write on a thread of its own and,
//! as Redis notices its child's end, marks it done on its next round; the keys are read a
//! batch at a time while commands run, so a key changed meanwhile is written as it was when
//! its batch was read.

use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

use crate::config::NodeConfig;
use crate::engine::Engine;
use crate::rdb::SnapshotWriter;

/// The directory snapshots go to: `dir`, or the working directory.
pub fn dir(c: &NodeConfig) -> PathBuf {
    if c.dir.is_empty() {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
    } else {
        PathBuf::from(&c.dir)
    }
}

/// What INFO persistence and LASTSAVE tell of the snapshots, and the one BGSAVE at a time.
#[derive(Debug, Default)]
pub struct Saves {
    /// A BGSAVE was asked for and is not yet marked done.
    running: AtomicBool,
    /// The cron has started the asked-for write.
    started: AtomicBool,
    /// The write ended (the cron then marks the BGSAVE done).
    ended: AtomicBool,
    /// Unix ms the running BGSAVE was asked for.
    asked_ms: AtomicU64,
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
    /// The store's change counter at the last successful save.
    changes_at_save: AtomicU64,
}

/// Why a save could not start.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("ERR Background save already in progress")]
    InProgress,
}

impl Saves {
    /// A new BGSAVE, unless one runs.
    pub fn ask(&self, now_ms: u64) -> Result<(), Refused> {
        if self.running.swap(true, Relaxed) {
            return Err(Refused::InProgress);
        }
        self.started.store(false, Relaxed);
        self.ended.store(false, Relaxed);
        self.asked_ms.store(now_ms, Relaxed);
        Ok(())
    }

    pub fn running(&self) -> bool {
        self.running.load(Relaxed)
    }

    /// For the cron: whether to start the asked-for write now (true once per BGSAVE).
    pub fn take_start(&self) -> bool {
        self.running.load(Relaxed) && !self.started.swap(true, Relaxed)
    }

    /// For the cron: marks a BGSAVE whose write ended done (a round after its end, as Redis
    /// reaps its child in its cron).
    pub fn reap(&self) {
        if self.running.load(Relaxed) && self.ended.load(Relaxed) {
            self.running.store(false, Relaxed);
        }
    }

    /// Records a save's outcome; `background` for BGSAVE's.
    pub fn record(
        &self,
        ok: Result<u64, &std::io::Error>,
        changes: u64,
        now_ms: u64,
        background: bool,
    ) {
        if ok.is_ok() {
            self.last_ok_secs.store(now_ms / 1000, Relaxed);
            self.saves.fetch_add(1, Relaxed);
            self.changes_at_save.store(changes, Relaxed);
        }
        if background {
            self.last_bgsave_failed.store(ok.is_err(), Relaxed);
            let took = now_ms.saturating_sub(self.asked_ms.load(Relaxed)) / 1000;
            self.last_bgsave_secs.store(took as i64, Relaxed);
            self.any_bgsave.store(true, Relaxed);
            self.ended.store(true, Relaxed);
        }
    }

    /// Unix seconds of the last successful save, or `started_secs` if none.
    pub fn last_save_secs(&self, started_secs: u64) -> u64 {
        match self.last_ok_secs.load(Relaxed) {
            0 => started_secs,
            s => s,
        }
    }

    /// Changes since the last successful save, of the store's `changes` now.
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
        if self.running.load(Relaxed) {
            (now_ms.saturating_sub(self.asked_ms.load(Relaxed)) / 1000) as i64
        } else {
            -1
        }
    }
}

/// SAVE's snapshot: written while no other worker runs a command, its outcome recorded.
pub fn save_now(engine: &Engine) -> std::io::Result<u64> {
    let written = engine.store.exclusive(|| write(engine, true));
    let changes = engine.store.stats().changes;
    let now = crate::clock::now_ms();
    engine
        .saves
        .record(written.as_ref().copied(), changes, now, false);
    written
}

/// Writes the snapshot of `engine` to `dir`/`dbfilename` and gives the number of keys
/// written. `entered`: the caller holds the store alone (SAVE); otherwise each batch of
/// keys is read entered, as a command reads.
pub fn write(engine: &Engine, entered: bool) -> std::io::Result<u64> {
    let (dir, name) = engine.with_settings(|c| (dir(c), c.dbfilename.clone()));
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        "temp-{}-{}.rdb",
        std::process::id(),
        SEQ.fetch_add(1, Relaxed)
    ));
    let written = write_to(engine, &tmp, entered);
    match written {
        Ok(n) => match std::fs::rename(&tmp, dir.join(name)) {
            Ok(()) => Ok(n),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        },
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn write_to(engine: &Engine, path: &std::path::Path, entered: bool) -> std::io::Result<u64> {
    let file = std::fs::File::create(path)?;
    let ctime = (crate::clock::now_ms() / 1000).to_string();
    let used = engine.used_memory().to_string();
    let aux = [
        ("redis-ver", crate::REDIS_VERSION),
        ("redis-bits", "64"),
        ("ctime", &ctime),
        ("used-mem", &used),
        ("aof-base", "0"),
    ];
    let mut w = SnapshotWriter::start(BufWriter::new(file), &aux)?;
    let libraries = engine.functions.libraries();
    w.functions(&crate::rdb::dump_functions(
        libraries.iter().map(|l| &l.code[..]),
    ))?;
    let mut keys = 0u64;
    let mut cursor = 0;
    loop {
        let mut failed = None;
        let now = crate::clock::now_ms();
        let mut batch = |cursor| {
            engine.store.scan(cursor, 1024, now, |stored, e| {
                if failed.is_some() {
                    return;
                }
                let (db, key) = shoal_store::split_key(stored);
                let payload = crate::rdb::dump_entry(&e);
                match w.key(db, key, &payload, e.expire_at_ms) {
                    Ok(()) => keys += 1,
                    Err(e) => failed = Some(e),
                }
            })
        };
        cursor = if entered {
            batch(cursor)
        } else {
            let _in = engine.store.enter();
            batch(cursor)
        };
        if let Some(e) = failed {
            return Err(e);
        }
        if cursor == 0 {
            break;
        }
    }
    let file = w.finish()?.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    Ok(keys)
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
        assert!(s.take_start());
        assert!(!s.take_start(), "started once");
        s.reap();
        assert!(s.running(), "not ended yet");
        s.record(Ok(3), 40, 3_500, true);
        assert!(s.running(), "until the cron's next round");
        s.reap();
        assert!(!s.running());
        assert_eq!(s.last_save_secs(1), 3);
        assert_eq!(s.last_bgsave_secs(), 2);
        assert_eq!(s.changes_since(45), 5);
        assert!(!s.last_bgsave_failed());
        assert_eq!(s.ask(4_000), Ok(()));
        assert!(s.take_start());
        let e = std::io::Error::other("disk full");
        s.record(Err(&e), 50, 4_100, true);
        s.reap();
        assert!(s.last_bgsave_failed());
        assert_eq!(s.last_save_secs(1), 3, "a failed save is no save");
        assert_eq!(s.saves(), 1);
    }
}
