//! Memcached's per-prefix statistics (`stats detail on|off|dump`): while detail is on, each
//! get, set and delete of a key with a prefix (the bytes before its first `:`) is counted
//! under that prefix, as memcached's `stats_prefix.c` counts them.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bytes::BytesMut;

/// Ends a key's prefix (memcached's `-D`, default `:`).
pub const DELIMITER: u8 = b':';

/// Prefixes counted at most: past it a new prefix is not counted (memcached's table is
/// unbounded; this bounds its memory to about this many keys' bytes).
pub const MAX_PREFIXES: usize = 10_000;

/// What a request did to a key, as `stats detail dump` counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A read; `hit` when the key was there.
    Get {
        hit: bool,
    },
    Set,
    Delete,
}

/// One prefix's counts: `get hit set del`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub get: u64,
    pub hit: u64,
    pub set: u64,
    pub del: u64,
}

impl Counts {
    fn add(&mut self, op: Op) {
        match op {
            Op::Get { hit } => {
                self.get += 1;
                self.hit += u64::from(hit);
            }
            Op::Set => self.set += 1,
            Op::Delete => self.del += 1,
        }
    }
}

/// The prefix of `key`: its bytes before the first [`DELIMITER`], `None` when it has none
/// before its end or a NUL byte (memcached reads keys as C strings there).
pub fn prefix(key: &[u8]) -> Option<&[u8]> {
    let end = key
        .iter()
        .position(|&b| b == DELIMITER || b == 0)
        .filter(|&at| key[at] == DELIMITER)?;
    Some(&key[..end])
}

/// The switch and the table (`stats detail`). Off, recording costs one relaxed load.
#[derive(Default)]
pub struct PrefixStats {
    on: AtomicBool,
    table: Mutex<BTreeMap<Box<[u8]>, Counts>>,
}

impl PrefixStats {
    /// True while detail is on.
    pub fn enabled(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// `stats detail on` / `off`; the counts stay either way.
    pub fn set_enabled(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Counts `op` on `key` under its prefix, if detail is on, the key has one, and this
    /// thread is not inside [`muted`].
    pub fn record(&self, key: &[u8], op: Op) {
        if !self.enabled() || MUTED.with(Cell::get) {
            return;
        }
        let Some(prefix) = prefix(key) else {
            return;
        };
        let mut table = self.lock();
        if let Some(counts) = table.get_mut(prefix) {
            counts.add(op);
        } else if table.len() < MAX_PREFIXES {
            table.entry(prefix.into()).or_default().add(op);
        }
    }

    /// `stats reset`: forgets every prefix.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// `stats detail dump`: a `PREFIX <prefix> get <n> hit <n> set <n> del <n>` line per
    /// prefix, then `END`.
    pub fn dump(&self, out: &mut BytesMut) {
        for (prefix, c) in self.lock().iter() {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(prefix);
            out.extend_from_slice(
                format!(
                    " get {} hit {} set {} del {}\r\n",
                    c.get, c.hit, c.set, c.del
                )
                .as_bytes(),
            );
        }
        out.extend_from_slice(b"END\r\n");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Box<[u8]>, Counts>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

thread_local! {
    static MUTED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` without counting what it does (the removal of a stale value after a `set` refused
/// as too large, which memcached counts as that set alone).
pub fn muted<R>(f: impl FnOnce() -> R) -> R {
    struct Unmute(bool);
    impl Drop for Unmute {
        fn drop(&mut self) {
            MUTED.with(|m| m.set(self.0));
        }
    }
    let _unmute = Unmute(MUTED.with(|m| m.replace(true)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_at_the_first_colon() {
        assert_eq!(prefix(b"foo:123"), Some(&b"foo"[..]));
        assert_eq!(prefix(b"a:b:c"), Some(&b"a"[..]));
        assert_eq!(prefix(b":x"), Some(&b""[..]));
        assert_eq!(prefix(b"plain"), None);
        assert_eq!(prefix(b"nul\0:after"), None);
    }

    #[test]
    fn counts_follow_memcached_while_on() {
        let p = PrefixStats::default();
        p.record(b"foo:1", Op::Set);
        let mut out = BytesMut::new();
        p.dump(&mut out);
        assert_eq!(&out[..], b"END\r\n", "off: nothing counted");
        p.set_enabled(true);
        p.record(b"foo:1", Op::Set);
        p.record(b"foo:1", Op::Get { hit: true });
        p.record(b"foo:2", Op::Get { hit: false });
        p.record(b"foo:3", Op::Delete);
        p.record(b"bar:1", Op::Get { hit: false });
        p.record(b"nokey", Op::Set);
        muted(|| p.record(b"foo:9", Op::Delete));
        out.clear();
        p.dump(&mut out);
        assert_eq!(
            &out[..],
            &b"PREFIX bar get 1 hit 0 set 0 del 0\r\nPREFIX foo get 2 hit 1 set 1 del 1\r\nEND\r\n"
                [..]
        );
        p.clear();
        out.clear();
        p.dump(&mut out);
        assert_eq!(&out[..], b"END\r\n");
    }

    #[test]
    fn the_table_is_bounded() {
        let p = PrefixStats::default();
        p.set_enabled(true);
        for i in 0..MAX_PREFIXES + 5 {
            p.record(format!("p{i}:k").as_bytes(), Op::Set);
        }
        assert_eq!(p.lock().len(), MAX_PREFIXES);
        // A prefix already there is still counted.
        p.record(b"p0:k", Op::Set);
        assert_eq!(p.lock()[&b"p0"[..]].set, 2);
    }
}
