//! SAVE and BGSAVE: a snapshot of this node's keys (every database, with their expiries)
//! and function libraries in Redis's RDB format ([`crate::rdb::SnapshotWriter`], version
//! 10), written to `dir`/`dbfilename` through a temporary file renamed into place, as Redis
//! does. Shoal never loads it (a node refills from its cluster); redis-server and RDB tools
//! read it. In a cluster each node writes the keys it holds, its copies of others' too.
//!
//! SAVE writes while no other worker runs a command (a point in time, as Redis's SAVE
//! blocks). BGSAVE only asks: the node's cron starts the write on a thread of its own and,
//! as Redis notices its child's end, marks it done on its next round (`crate::saves`); the
//! keys are read a store shard at a time while commands run, so a key changed meanwhile is
//! written as it was when its shard was read. SHUTDOWN stops a running BGSAVE, as Redis
//! kills its child: it writes no more and its file is not put in place.

use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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

/// The BGSAVE the cron started: its write on this (blocking) thread, its outcome recorded
/// whatever happens, a panic included (the next BGSAVE must not be refused for ever).
pub fn run_bgsave(engine: &Engine) {
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(engine, true)));
    let ok = match written {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            tracing::warn!("BGSAVE failed: {e}");
            false
        }
        Err(_) => {
            tracing::warn!("BGSAVE failed: its writer panicked");
            false
        }
    };
    engine.saves.record_bgsave(ok, crate::clock::now_ms());
}

/// SAVE's snapshot: written while no other worker runs a command, its outcome recorded.
pub fn save_now(engine: &Engine) -> std::io::Result<u64> {
    let (written, changes) = engine
        .store
        .exclusive(|| (write(engine, false), engine.store.stats().changes));
    engine
        .saves
        .record_save(written.is_ok(), changes, crate::clock::now_ms());
    written
}

/// Writes the snapshot of `engine` to `dir`/`dbfilename` and gives the number of keys
/// written. `background` (BGSAVE): each shard's keys are read entered, as a command reads,
/// and a SHUTDOWN stops it (`Saves::cancel`); otherwise the caller holds the store alone
/// (SAVE).
pub fn write(engine: &Engine, background: bool) -> std::io::Result<u64> {
    let (dir, name) = engine.with_settings(|c| (dir(c), c.dbfilename.clone()));
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        "temp-{}-{}.rdb",
        std::process::id(),
        SEQ.fetch_add(1, Relaxed)
    ));
    let rename = || std::fs::rename(&tmp, dir.join(&name));
    let written = write_to(engine, &tmp, background).and_then(|n| {
        if background {
            engine.saves.unless_cancelled(rename)?;
        } else {
            rename()?;
        }
        Ok(n)
    });
    match written {
        Ok(n) => {
            // The rename made durable, as Redis 7 syncs the directory.
            if let Ok(d) = std::fs::File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(n)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// One key read from a shard for the file: database, name, DUMP payload, expiry.
type Saved = (u8, Vec<u8>, Vec<u8>, Option<u64>);

fn write_to(engine: &Engine, path: &std::path::Path, background: bool) -> std::io::Result<u64> {
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
    // A shard at a time, whole under its lock (so no key twice, as a walk in steps could
    // give), its keys' payloads made there and written after the lock is let go (no disk
    // write under it).
    let mut keys = 0u64;
    let mut batch: Vec<Saved> = Vec::new();
    for shard in 0..engine.store.shards() {
        if background && engine.saves.cancelled() {
            return Err(std::io::Error::other("stopped by SHUTDOWN"));
        }
        let now = crate::clock::now_ms();
        let mut read = || {
            engine.store.each_in_shard(shard, now, |stored, e| {
                let (db, key) = shoal_store::split_key(stored);
                let payload = crate::rdb::dump_entry(&e);
                batch.push((db, key.to_vec(), payload, e.expire_at_ms));
            })
        };
        if background {
            let _in = engine.store.enter();
            read();
        } else {
            read();
        }
        for (db, key, payload, expire_at_ms) in batch.drain(..) {
            w.key(db, &key, &payload, expire_at_ms)?;
            keys += 1;
        }
    }
    let file = w.finish()?.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    Ok(keys)
}
