//! Per-command statistics and the slow log, as Redis keeps them: each node counts the
//! commands it runs (a command forwarded to its owner counts at the owner).
//!
//! - `INFO commandstats`: per command (and per subcommand of a container, `config|get`),
//!   calls, microseconds spent running it, calls refused before running (`rejected_calls`:
//!   arity, NOAUTH, OOM, ...) and calls that ran and answered an error (`failed_calls`).
//! - `INFO errorstats`: error replies by their code (the first word: `ERR`, `WRONGTYPE`),
//!   at most [`ERROR_CODES`] codes; `total_error_replies` counts them all.
//! - `SLOWLOG`: the last `slowlog-max-len` commands that ran for at least
//!   `slowlog-log-slower-than` microseconds.
//! - `INFO latencystats` and the metrics endpoint's histograms: each row's run times in
//!   [`LatencyHistogram`] buckets (a quarter of a power of two wide).
//!
//! The command table lives in `cmd`; this module knows only rows by number and their names,
//! given once by `cmd` on first use ([`CommandStats::rows`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use bytes::Bytes;

/// Distinct error codes `errorstats` tracks (Redis's limit too); errors with other codes
/// still count in `total_error_replies`.
pub const ERROR_CODES: usize = 128;
/// Arguments a slow log entry keeps (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
pub const SLOWLOG_MAX_ARGS: usize = 32;
/// Bytes of one argument a slow log entry keeps (Redis's `SLOWLOG_ENTRY_MAX_STRING`).
pub const SLOWLOG_MAX_STRING: usize = 128;

/// One command's (or subcommand's) counters, in one shard.
#[derive(Debug)]
pub struct Row {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    pub rejected: AtomicU64,
    pub failed: AtomicU64,
    /// Run times of the calls.
    pub latency: LatencyHistogram,
}

impl Row {
    fn new() -> Row {
        Row {
            calls: AtomicU64::new(0),
            usec: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            latency: LatencyHistogram::default(),
        }
    }

    /// Counts a call that ran for `usec` microseconds.
    pub fn record(&self, usec: u64) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.usec.fetch_add(usec, Ordering::Relaxed);
        self.latency.record(usec);
    }
}

/// Buckets of a [`LatencyHistogram`].
pub const LATENCY_BUCKETS: usize = 128;

/// Microsecond durations counted in buckets: 0, 1, 2 and 3 µs exactly, then four buckets per
/// power of two (each at most 25 % wide), up to about 2.4 hours (longer ones count in the
/// last bucket). Recording is one relaxed atomic add.
#[derive(Debug)]
pub struct LatencyHistogram {
    counts: Box<[AtomicU64]>,
}

impl Default for LatencyHistogram {
    fn default() -> LatencyHistogram {
        LatencyHistogram {
            counts: (0..LATENCY_BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl LatencyHistogram {
    /// The bucket `usec` counts in.
    pub fn bucket(usec: u64) -> usize {
        if usec < 4 {
            return usec as usize;
        }
        let e = 63 - usec.leading_zeros() as usize; // 2 or more
        let sub = ((usec >> (e - 2)) & 3) as usize;
        (4 + (e - 2) * 4 + sub).min(LATENCY_BUCKETS - 1)
    }

    /// The smallest duration past bucket `i` (its exclusive upper bound), in microseconds.
    pub fn upper(i: usize) -> u64 {
        if i < 4 {
            return i as u64 + 1;
        }
        let (e, sub) = ((i - 4) / 4 + 2, (i - 4) % 4);
        (5 + sub as u64) << (e - 2)
    }

    pub fn record(&self, usec: u64) {
        self.counts[Self::bucket(usec)].fetch_add(1, Ordering::Relaxed);
    }

    /// `counts` regrouped by power of two: element `i` (for `i` in `0..n`) holds the
    /// durations under `2^i` µs and not under `2^(i-1)` (element 0: under 1 µs), each an
    /// edge of the finer buckets; longer durations are left out. What LATENCY HISTOGRAM and
    /// the metrics' histogram show.
    pub fn per_power_of_two(counts: &[u64], n: usize) -> Vec<u64> {
        let mut bucket = 0;
        (0..n)
            .map(|i| {
                let edge = 1u64.checked_shl(i as u32).unwrap_or(u64::MAX);
                let mut sum = 0;
                while bucket < counts.len() && Self::upper(bucket) <= edge {
                    sum += counts[bucket];
                    bucket += 1;
                }
                sum
            })
            .collect()
    }

    /// The counts, bucket by bucket.
    pub fn counts(&self) -> Vec<u64> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// The `p`th percentile (0 < p <= 100) of the recorded durations, as the upper bound of
    /// the bucket it falls in (so at most 25 % above the true value); None when empty.
    pub fn percentile(counts: &[u64], p: f64) -> Option<u64> {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Self::upper(i));
            }
        }
        Some(Self::upper(counts.len() - 1))
    }

    fn reset(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Copies of the rows: each thread records into one (picked once per thread), so the
/// threads serving clients do not contend for the same counters; readers sum them.
pub const SHARDS: usize = 4;

/// The rows, and where each command's rows start.
#[derive(Debug)]
pub struct Rows {
    /// Row names: `get`, `config|get`, ...
    pub names: Box<[String]>,
    /// [`SHARDS`] copies of the rows, in `names` order.
    shards: Box<[Box<[Row]>]>,
    /// Per command (table order): its row; its subcommands' rows follow it.
    pub first: Box<[u32]>,
}

/// One row's counters summed over the shards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowTotals {
    pub name: String,
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
    /// The latency histogram's counts ([`LatencyHistogram`] buckets).
    pub latency: Vec<u64>,
}

/// This thread's shard (of [`SHARDS`]; the INFO stats' counters use it too).
pub(crate) fn shard() -> usize {
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

impl Rows {
    /// Rows for commands given as (name, subcommand names), in table order.
    pub fn new<'a>(commands: impl Iterator<Item = (&'a str, &'a [&'a str])>) -> Rows {
        let (mut names, mut first) = (Vec::new(), Vec::new());
        for (name, subs) in commands {
            first.push(names.len() as u32);
            names.push(name.to_owned());
            names.extend(subs.iter().map(|s| format!("{name}|{s}")));
        }
        let shards = (0..SHARDS)
            .map(|_| names.iter().map(|_| Row::new()).collect())
            .collect();
        Rows {
            names: names.into(),
            shards,
            first: first.into(),
        }
    }

    /// This thread's row of command `index`, subcommand `sub` (its position in the
    /// command's list).
    pub fn row(&self, index: usize, sub: Option<usize>) -> Option<&Row> {
        let at = *self.first.get(index)? as usize + sub.map_or(0, |s| s + 1);
        self.shards[shard()].get(at)
    }

    /// Every row's counters, summed over the shards, in table order.
    pub fn totals(&self) -> Vec<RowTotals> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        self.names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut t = RowTotals {
                    name: name.clone(),
                    calls: 0,
                    usec: 0,
                    rejected: 0,
                    failed: 0,
                    latency: vec![0; LATENCY_BUCKETS],
                };
                for shard in self.shards.iter() {
                    let r = &shard[i];
                    t.calls += get(&r.calls);
                    t.usec += get(&r.usec);
                    t.rejected += get(&r.rejected);
                    t.failed += get(&r.failed);
                    for (sum, c) in t.latency.iter_mut().zip(r.latency.counts()) {
                        *sum += c;
                    }
                }
                t
            })
            .collect()
    }
}

/// One slow log entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowEntry {
    pub id: u64,
    pub unix_secs: u64,
    pub usec: u64,
    pub args: Vec<Bytes>,
    pub peer: String,
    pub name: String,
}

#[derive(Debug, Default)]
struct SlowLog {
    next_id: u64,
    entries: VecDeque<SlowEntry>,
}

/// A node's command statistics and slow log.
#[derive(Debug)]
pub struct CommandStats {
    rows: OnceLock<Rows>,
    errors: Mutex<Vec<(String, u64)>>,
    total_errors: AtomicU64,
    slow: Mutex<SlowLog>,
    /// `slowlog-log-slower-than` (µs; negative: off).
    slower_than: AtomicI64,
    /// `slowlog-max-len`.
    max_len: AtomicU64,
}

impl Default for CommandStats {
    fn default() -> CommandStats {
        CommandStats {
            rows: OnceLock::new(),
            errors: Mutex::new(Vec::new()),
            total_errors: AtomicU64::new(0),
            slow: Mutex::new(SlowLog::default()),
            slower_than: AtomicI64::new(10_000),
            max_len: AtomicU64::new(128),
        }
    }
}

/// An error reply's code, as `errorstats` names it: its first word.
pub fn error_code(text: &str) -> &str {
    text.split(' ').next().unwrap_or(text)
}

/// A slow log entry's copy of a command's arguments: at most [`SLOWLOG_MAX_ARGS`], the
/// last one saying how many more there were, each cut at [`SLOWLOG_MAX_STRING`] bytes with
/// how many more it had (as Redis).
pub fn slowlog_args(args: &[Bytes]) -> Vec<Bytes> {
    let keep = if args.len() > SLOWLOG_MAX_ARGS {
        SLOWLOG_MAX_ARGS - 1
    } else {
        args.len()
    };
    let mut out: Vec<Bytes> = args[..keep]
        .iter()
        .map(|a| {
            if a.len() > SLOWLOG_MAX_STRING {
                let mut b = a[..SLOWLOG_MAX_STRING].to_vec();
                b.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - SLOWLOG_MAX_STRING).as_bytes(),
                );
                Bytes::from(b)
            } else {
                // A copy: the argument may share the connection's whole read buffer.
                Bytes::copy_from_slice(a)
            }
        })
        .collect();
    if keep < args.len() {
        out.push(Bytes::from(format!(
            "... ({} more arguments)",
            args.len() - keep
        )));
    }
    out
}

impl CommandStats {
    /// The rows, built by `init` on first use.
    pub fn rows(&self, init: impl FnOnce() -> Rows) -> &Rows {
        self.rows.get_or_init(init)
    }

    /// Every row's counters summed (none before the first command).
    pub fn totals(&self) -> Vec<RowTotals> {
        self.rows.get().map_or_else(Vec::new, Rows::totals)
    }

    /// Counts an error reply with `text` (without the leading `-`).
    pub fn error(&self, text: &str) {
        self.total_errors.fetch_add(1, Ordering::Relaxed);
        let code = error_code(text);
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = errors.iter_mut().find(|(c, _)| c == code) {
            *n += 1;
        } else if errors.len() < ERROR_CODES {
            errors.push((code.to_owned(), 1));
        }
    }

    pub fn total_errors(&self) -> u64 {
        self.total_errors.load(Ordering::Relaxed)
    }

    /// Error codes and counts, by code (as Redis lists them).
    pub fn errors(&self) -> Vec<(String, u64)> {
        let mut errors = self
            .errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        errors.sort();
        errors
    }

    /// Whether a command that ran for `usec` goes into the slow log.
    pub fn is_slow(&self, usec: u64) -> bool {
        let t = self.slower_than.load(Ordering::Relaxed);
        t >= 0 && usec >= t as u64
    }

    /// Adds an entry (its id is set here), dropping the oldest past `slowlog-max-len`.
    pub fn log_slow(&self, mut entry: SlowEntry) {
        let max = self.max_len.load(Ordering::Relaxed) as usize;
        let mut slow = self.slow.lock().unwrap_or_else(|e| e.into_inner());
        entry.id = slow.next_id;
        slow.next_id += 1;
        slow.entries.push_front(entry);
        slow.entries.truncate(max);
    }

    /// The newest `count` entries (all with None), newest first.
    pub fn slow_entries(&self, count: Option<usize>) -> Vec<SlowEntry> {
        let slow = self.slow.lock().unwrap_or_else(|e| e.into_inner());
        let n = count.unwrap_or(usize::MAX);
        slow.entries.iter().take(n).cloned().collect()
    }

    pub fn slow_len(&self) -> usize {
        self.slow
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .len()
    }

    pub fn slow_reset(&self) {
        self.slow
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .clear();
    }

    /// Applies `slowlog-log-slower-than` and `slowlog-max-len`.
    pub fn configure_slowlog(&self, slower_than: i64, max_len: u64) {
        self.slower_than.store(slower_than, Ordering::Relaxed);
        self.max_len.store(max_len, Ordering::Relaxed);
        let mut slow = self.slow.lock().unwrap_or_else(|e| e.into_inner());
        slow.entries.truncate(max_len as usize);
    }

    /// CONFIG RESETSTAT: every counter and error count back to zero (the slow log stays, as
    /// in Redis).
    pub fn reset(&self) {
        if let Some(rows) = self.rows.get() {
            for r in rows.shards.iter().flat_map(|s| s.iter()) {
                for c in [&r.calls, &r.usec, &r.rejected, &r.failed] {
                    c.store(0, Ordering::Relaxed);
                }
                r.latency.reset();
            }
        }
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.total_errors.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_their_command_and_subcommands() {
        let rows = Rows::new(
            [
                ("get", &[][..]),
                ("config", &["get", "set"][..]),
                ("set", &[][..]),
            ]
            .into_iter(),
        );
        assert_eq!(
            &rows.names[..],
            ["get", "config", "config|get", "config|set", "set"]
        );
        rows.row(1, Some(1)).unwrap().record(7);
        // Recorded from other threads (other shards), summed by the reader.
        std::thread::scope(|s| {
            for _ in 0..2 * SHARDS {
                s.spawn(|| rows.row(2, None).unwrap().record(5));
            }
        });
        let totals = rows.totals();
        assert_eq!(totals[3].name, "config|set");
        assert_eq!((totals[3].calls, totals[3].usec), (1, 7));
        let n = 2 * SHARDS as u64;
        assert_eq!((totals[4].calls, totals[4].usec), (n, 5 * n));
        assert_eq!(totals[4].latency.iter().sum::<u64>(), n);
        assert!(rows.row(3, None).is_none());
    }

    #[test]
    fn latency_buckets_cover_every_duration_within_a_quarter() {
        let mut last = 0;
        for v in (0..5000u64).chain([1 << 20, 123_456_789, u64::MAX / 2]) {
            let b = LatencyHistogram::bucket(v);
            assert!(b >= last || v > 4999, "buckets grow with the duration");
            last = b;
            let upper = LatencyHistogram::upper(b);
            if b < LATENCY_BUCKETS - 1 {
                assert!(v < upper, "{v} in bucket {b} below {upper}");
                assert!(
                    b == 0 || v >= LatencyHistogram::upper(b - 1),
                    "{v}, bucket {b}"
                );
                assert!(upper as f64 <= (v as f64 + 1.0) * 1.25, "{v}: {upper}");
            }
        }
        let h = LatencyHistogram::default();
        assert_eq!(LatencyHistogram::percentile(&h.counts(), 50.0), None);
        for v in [0, 1, 3, 5, 7, 8, 100] {
            h.record(v);
        }
        // Under 1, 2, 4, 8, 16 µs: 0 | 1 | 3 | 5, 7 | 8 (100 is past 16).
        assert_eq!(
            LatencyHistogram::per_power_of_two(&h.counts(), 5),
            [1, 1, 1, 2, 1]
        );
        let h = LatencyHistogram::default();
        for v in 1..=100 {
            h.record(v * 10);
        }
        let counts = h.counts();
        let p50 = LatencyHistogram::percentile(&counts, 50.0).unwrap();
        assert!((500..=625).contains(&p50), "{p50}");
        let p99 = LatencyHistogram::percentile(&counts, 99.0).unwrap();
        assert!((990..=1280).contains(&p99), "{p99}");
    }

    #[test]
    fn error_codes_are_the_first_word_and_bounded() {
        let s = CommandStats::default();
        s.error("ERR unknown command 'x'");
        s.error("WRONGTYPE Operation against a key holding the wrong kind of value");
        s.error("ERR syntax error");
        s.error("NOPE");
        assert_eq!(
            s.errors(),
            vec![
                ("ERR".into(), 2),
                ("NOPE".into(), 1),
                ("WRONGTYPE".into(), 1)
            ]
        );
        for i in 0..2 * ERROR_CODES {
            s.error(&format!("E{i} x"));
        }
        assert_eq!(s.errors().len(), ERROR_CODES);
        assert_eq!(s.total_errors(), 4 + 2 * ERROR_CODES as u64);
        s.reset();
        assert!(s.errors().is_empty() && s.total_errors() == 0);
    }

    #[test]
    fn the_slow_log_keeps_the_newest_and_cuts_long_arguments() {
        let s = CommandStats::default();
        s.configure_slowlog(0, 2);
        assert!(s.is_slow(0));
        for i in 0..3u8 {
            s.log_slow(SlowEntry {
                id: 0,
                unix_secs: 1,
                usec: 5,
                args: vec![Bytes::from(vec![b'a' + i])],
                peer: "127.0.0.1:1".into(),
                name: String::new(),
            });
        }
        let got = s.slow_entries(None);
        assert_eq!(got.iter().map(|e| e.id).collect::<Vec<_>>(), [2, 1]);
        assert_eq!(s.slow_entries(Some(1)).len(), 1);
        s.configure_slowlog(-1, 2);
        assert!(!s.is_slow(u64::MAX));
        let long: Vec<Bytes> = (0..40).map(|_| Bytes::from(vec![b'x'; 130])).collect();
        let cut = slowlog_args(&long);
        assert_eq!(cut.len(), SLOWLOG_MAX_ARGS);
        assert_eq!(&cut[31][..], b"... (9 more arguments)");
        assert!(cut[0].ends_with(b"... (2 more bytes)"));
        assert_eq!(cut[0].len(), 128 + b"... (2 more bytes)".len());
        s.slow_reset();
        assert_eq!(s.slow_len(), 0);
    }
}
