//! MONITOR: each command a client sends this node, as Redis prints it, to the connections
//! that asked. A bounded broadcast: a monitor that falls more than [`BACKLOG`] lines behind
//! is closed, as Redis closes a client past its output buffer limit, so a slow monitor
//! never holds memory without bound or slows the others.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::broadcast;

/// Lines a monitor may fall behind before it is closed.
pub const BACKLOG: usize = 1024;
/// Longest line shown: its arguments are cut there (with how many bytes were left out), so
/// the lines waiting for a slow monitor hold at most `BACKLOG` x this (64 MB).
pub const LINE_MAX: usize = 64 * 1024;

/// The node's monitors.
pub struct Monitors {
    tx: broadcast::Sender<Bytes>,
    count: Arc<AtomicUsize>,
}

impl Default for Monitors {
    fn default() -> Monitors {
        Monitors {
            tx: broadcast::channel(BACKLOG).0,
            count: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// One monitor's feed; dropping it stops the feeding when it was the last.
pub struct MonitorFeed {
    rx: broadcast::Receiver<Bytes>,
    count: Arc<AtomicUsize>,
}

impl Drop for MonitorFeed {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a feed ended.
#[derive(Debug, PartialEq, Eq)]
pub enum FeedEnd {
    /// More than [`BACKLOG`] lines behind.
    TooSlow,
    Closed,
}

impl MonitorFeed {
    /// The next line (cancel safe).
    pub async fn next(&mut self) -> Result<Bytes, FeedEnd> {
        match self.rx.recv().await {
            Ok(line) => Ok(line),
            Err(broadcast::error::RecvError::Lagged(_)) => Err(FeedEnd::TooSlow),
            Err(broadcast::error::RecvError::Closed) => Err(FeedEnd::Closed),
        }
    }
}

impl Monitors {
    pub fn subscribe(&self) -> MonitorFeed {
        self.count.fetch_add(1, Ordering::Relaxed);
        MonitorFeed {
            rx: self.tx.subscribe(),
            count: self.count.clone(),
        }
    }

    /// True while some connection monitors (one relaxed load: the cost for every command).
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Sends `line` to every monitor.
    pub fn feed(&self, line: Bytes) {
        let _ = self.tx.send(line);
    }
}

/// The MONITOR line for `args` from the client at `addr` at `unix_micros`: Redis's
/// `+<seconds>.<microseconds> [0 <addr>] "<arg>" ...`, each argument quoted and escaped
/// as Redis's `sdscatrepr` does. The password of AUTH, and of HELLO's AUTH option, shows as
/// `(redacted)`, as in Redis.
pub fn line(unix_micros: u64, addr: &str, args: &[Bytes]) -> Bytes {
    let mut out = Vec::with_capacity(64 + args.iter().map(|a| a.len() + 3).sum::<usize>());
    out.extend_from_slice(
        format!(
            "+{}.{:06} [0 {addr}]",
            unix_micros / 1_000_000,
            unix_micros % 1_000_000
        )
        .as_bytes(),
    );
    let hidden = redacted(args);
    let total: usize = args.iter().map(Bytes::len).sum();
    let mut shown = 0;
    for (i, a) in args.iter().enumerate() {
        if out.len() >= LINE_MAX {
            out.extend_from_slice(format!(" ... ({} more bytes)", total - shown).as_bytes());
            break;
        }
        out.push(b' ');
        if hidden.contains(&i) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            // Escaping makes a byte up to 4: keep the line near LINE_MAX.
            let room = (LINE_MAX.saturating_sub(out.len()) / 4).max(1);
            let cut = &a[..a.len().min(room)];
            repr(cut, &mut out);
            if cut.len() < a.len() {
                out.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - cut.len()).as_bytes(),
                );
            }
        }
        shown += a.len();
    }
    out.extend_from_slice(b"\r\n");
    Bytes::from(out)
}

/// Positions of the arguments MONITOR must not show.
fn redacted(args: &[Bytes]) -> Vec<usize> {
    let Some(name) = args.first() else {
        return Vec::new();
    };
    if name.eq_ignore_ascii_case(b"auth") {
        return (1..args.len()).collect();
    }
    if name.eq_ignore_ascii_case(b"hello") {
        // HELLO [protover [AUTH username password] [SETNAME clientname]], read in order so
        // that a client named "auth" does not hide the wrong arguments.
        let mut i = 2;
        while i < args.len() {
            if args[i].eq_ignore_ascii_case(b"auth") {
                return vec![i + 1, i + 2];
            }
            i += if args[i].eq_ignore_ascii_case(b"setname") {
                2
            } else {
                1
            };
        }
    }
    Vec::new()
}

/// `a` quoted as Redis's `sdscatrepr`.
fn repr(a: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in a {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(c),
            _ => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&[u8]]) -> Vec<Bytes> {
        a.iter().map(|x| Bytes::copy_from_slice(x)).collect()
    }

    #[test]
    fn lines_are_quoted_escaped_and_redacted_as_redis() {
        let l = line(
            1_700_000_000_000_042,
            "127.0.0.1:5000",
            &args(&[b"SET", b"k\"1\n", b"\x00\xffz\\"]),
        );
        assert_eq!(
            &l[..],
            b"+1700000000.000042 [0 127.0.0.1:5000] \"SET\" \"k\\\"1\\n\" \"\\x00\\xffz\\\\\"\r\n"
        );
        let l = line(1_000_000, "a:1", &args(&[b"auth", b"user", b"secret"]));
        assert_eq!(
            &l[..],
            b"+1.000000 [0 a:1] \"auth\" \"(redacted)\" \"(redacted)\"\r\n"
        );
        let l = line(
            1_000_000,
            "a:1",
            &args(&[b"HELLO", b"3", b"AUTH", b"u", b"p", b"SETNAME", b"n"]),
        );
        assert_eq!(
            &l[..],
            b"+1.000000 [0 a:1] \"HELLO\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"n\"\r\n"
        );
        // A client named "auth" hides nothing of its own; the password still is hidden.
        let l = line(
            1_000_000,
            "a:1",
            &args(&[b"HELLO", b"3", b"SETNAME", b"auth", b"AUTH", b"u", b"pw"]),
        );
        assert!(
            l.ends_with(b"\"SETNAME\" \"auth\" \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"),
            "{l:?}"
        );
        // A huge argument is cut, so a line stays bounded.
        let big = vec![0u8; 1 << 20];
        let l = line(
            1_000_000,
            "a:1",
            &[
                Bytes::from_static(b"SET"),
                Bytes::from_static(b"k"),
                Bytes::from(big),
            ],
        );
        assert!(l.len() < LINE_MAX + 100, "{}", l.len());
        assert!(l.ends_with(b" more bytes)\r\n"));
    }

    #[tokio::test]
    async fn a_monitor_that_falls_behind_is_told_so() {
        let m = Monitors::default();
        assert!(!m.active());
        let mut feed = m.subscribe();
        assert!(m.active());
        m.feed(Bytes::from_static(b"one"));
        assert_eq!(feed.next().await.unwrap(), Bytes::from_static(b"one"));
        for _ in 0..=BACKLOG {
            m.feed(Bytes::from_static(b"x"));
        }
        assert_eq!(feed.next().await, Err(FeedEnd::TooSlow));
        drop(feed);
        assert!(!m.active());
    }
}
