//! Parsed Memcached requests: what the node executes against its store.
//!
//! Every `Bytes` in a [`Command`] is a zero-copy slice of the connection's read buffer.

use std::str::FromStr;

use bytes::{BufMut, Bytes, BytesMut};

/// Which storage command a [`Command::Store`] came from; the node applies its semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    Cas,
}

impl StoreMode {
    /// The command word on the wire (`set`, `add`, ...).
    pub fn name(self) -> &'static str {
        match self {
            StoreMode::Set => "set",
            StoreMode::Add => "add",
            StoreMode::Replace => "replace",
            StoreMode::Append => "append",
            StoreMode::Prepend => "prepend",
            StoreMode::Cas => "cas",
        }
    }
}

/// The `slabs` subcommands (see [`Command::Slabs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slabs {
    /// `slabs automove <level> [noreply]` (memcached takes 0, 1 or 2).
    Automove { level: u32, noreply: bool },
    /// `slabs reassign <src> <dst>`.
    Reassign { src: i32, dst: i32 },
}

impl Slabs {
    /// memcached's answer, as if its only class were 1 (`do_slabs_reassign`: the same class
    /// twice is SAME; classes 0, the page pool, and 1 exist but have no page to spare).
    pub fn answer(&self) -> &'static str {
        match *self {
            Slabs::Automove { level, .. } if level <= 2 => "OK",
            Slabs::Automove { .. } => "ERROR",
            Slabs::Reassign { src, dst } if src == dst => "SAME src and dst class are identical",
            Slabs::Reassign { src, dst } if (0..=1).contains(&src) && (0..=1).contains(&dst) => {
                "NOSPARE source class has no spare pages"
            }
            Slabs::Reassign { .. } => "BADCLASS invalid src or dst class id",
        }
    }
}

/// memcached's `lru` and `lru_crawler` settings (see [`Command::Lru`]). Shoal has no
/// segmented LRU and no crawler thread with these knobs (its eviction and active expiry are
/// its own), so each is checked as memcached checks it, answered as memcached answers, and
/// changes nothing but the crawler's on/off answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Lru {
    /// `lru tune <hot pct> <warm pct> <hot age factor> <warm age factor> [noreply]`.
    Tune {
        hot_pct: u32,
        warm_pct: u32,
        hot_factor: f64,
        warm_factor: f64,
        noreply: bool,
    },
    /// `lru mode <flat|segmented> [noreply]`.
    Mode { segmented: bool, noreply: bool },
    /// `lru temp_ttl <ttl> [noreply]`.
    TempTtl { ttl: i32, noreply: bool },
    /// An `lru` line memcached does not take (`ERROR`, silenced by `noreply` too).
    Invalid { noreply: bool },
    /// `lru_crawler crawl <all | class[,class...]>`.
    Crawl { classes: Bytes },
    /// `lru_crawler sleep <microseconds>`.
    CrawlerSleep(u32),
    /// `lru_crawler tocrawl <items>`.
    CrawlerTocrawl(u32),
    /// `lru_crawler enable` (true) / `disable` (false).
    Crawler(bool),
}

/// memcached's slab class ids: 1 to 63 (`MAX_NUMBER_OF_SLAB_CLASSES` is 64).
pub const MAX_SLAB_CLASS: u32 = 63;

impl Lru {
    /// memcached's answer, given whether its crawler is on (`crawler_on`), and whether the
    /// crawler is on after it; `None` when `noreply` silences it (an `lru` line's answer,
    /// its errors too, as memcached 1.6.18 does).
    pub fn answer(&self, crawler_on: bool) -> (Option<&'static str>, bool) {
        let answer = match self {
            Lru::Tune { noreply: true, .. }
            | Lru::Mode { noreply: true, .. }
            | Lru::TempTtl { noreply: true, .. }
            | Lru::Invalid { noreply: true } => None,
            Lru::Invalid { .. } => Some("ERROR"),
            Lru::Tune {
                hot_pct,
                warm_pct,
                hot_factor,
                warm_factor,
                ..
            } => {
                // memcached adds them as 32-bit unsigned numbers, wrapping.
                if hot_pct.wrapping_add(*warm_pct) > 80 {
                    Some("ERROR hot and warm pcts must not exceed 80")
                } else if *hot_factor <= 0.0 || *warm_factor <= 0.0 {
                    Some("ERROR hot/warm age factors must be greater than 0")
                } else {
                    Some("OK")
                }
            }
            Lru::Mode { .. } | Lru::TempTtl { .. } => Some("OK"),
            Lru::Crawl { .. } if !crawler_on => Some("CLIENT_ERROR lru crawler disabled"),
            Lru::Crawl { classes } => Some(crawl_answer(classes)),
            Lru::CrawlerSleep(us) if *us > 1_000_000 => {
                Some("CLIENT_ERROR sleep must be one second or less")
            }
            Lru::CrawlerSleep(_) | Lru::CrawlerTocrawl(_) => Some("OK"),
            Lru::Crawler(true) if crawler_on => Some("ERROR failed to start lru crawler thread"),
            Lru::Crawler(_) => Some("OK"),
        };
        let on = match self {
            Lru::Crawler(on) => *on,
            _ => crawler_on,
        };
        (answer, on)
    }
}

/// A crawl's answer for its class list: `all`, or class ids in `1..=MAX_SLAB_CLASS`
/// separated by commas (empty pieces skipped, as memcached's `strtok_r` skips them; none at
/// all is nothing to crawl).
fn crawl_answer(classes: &[u8]) -> &'static str {
    if classes == b"all" {
        return "OK";
    }
    let mut ids = classes.split(|&b| b == b',').filter(|id| !id.is_empty());
    let mut any = false;
    let valid = ids.all(|id| {
        any = true;
        std::str::from_utf8(id)
            .ok()
            .and_then(|id| id.parse::<u32>().ok())
            .is_some_and(|id| (1..=MAX_SLAB_CLASS).contains(&id))
    });
    match (valid, any) {
        (false, _) => "BADCLASS invalid class id",
        (true, false) => "NOTSTARTED no items to crawl",
        (true, true) => "OK",
    }
}

/// One Memcached text-protocol request.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `set/add/replace/append/prepend/cas <key> <flags> <exptime> <bytes> [cas unique] [noreply]\r\n<data>\r\n`
    Store {
        mode: StoreMode,
        key: Bytes,
        flags: u32,
        exptime: i64,
        data: Bytes,
        /// The `cas unique` argument; 0 unless `mode` is [`StoreMode::Cas`].
        cas: u64,
        noreply: bool,
    },
    /// `get/gets <key>*` ; `gat/gats <exptime> <key>*`
    Get {
        /// 1..=`Limits::max_keys` keys, in request order (duplicates kept, as memcached answers
        /// each occurrence).
        keys: Vec<Bytes>,
        /// `gets`/`gats`: the reply's VALUE lines carry the cas unique.
        with_cas: bool,
        /// `gat`/`gats`: the new exptime to apply to every hit.
        touch: Option<i64>,
    },
    /// `delete <key> [0] [noreply]`
    Delete { key: Bytes, noreply: bool },
    /// `incr/decr <key> <value> [noreply]`
    Arith {
        incr: bool,
        key: Bytes,
        delta: u64,
        noreply: bool,
    },
    /// `touch <key> <exptime> [noreply]`
    Touch {
        key: Bytes,
        exptime: i64,
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`
    FlushAll { delay: i64, noreply: bool },
    /// `version`
    Version,
    /// `verbosity <level> [noreply]` (the level is validated, then ignored: Shoal logs through
    /// its own configuration).
    Verbosity { noreply: bool },
    /// `stats [args]`: `arg` is the text from the first argument to the end of the last one
    /// (e.g. `settings`, `detail dump`), `None` for bare `stats`.
    Stats { arg: Option<Bytes> },
    /// `quit`: the node closes the connection without a reply.
    Quit,
    /// `cache_memlimit <megabytes> [noreply]`: change the memory limit.
    CacheMemlimit { megabytes: u64, noreply: bool },
    /// `slabs automove <0|1|2> [noreply]` and `slabs reassign <src> <dst>`: Shoal has no slab
    /// classes (its items are all memcached's class 1), so automove is taken and changes
    /// nothing, and a reassign names the same class twice or a class that is not there.
    Slabs(Slabs),
    /// `lru tune|mode|temp_ttl ...` and `lru_crawler crawl|sleep|tocrawl|enable|disable`.
    Lru(Lru),
    /// `mg <key> <flags>*`
    MetaGet { key: Bytes, flags: MetaFlags },
    /// `ms <key> <datalen> <flags>*\r\n<data>\r\n`
    MetaSet {
        key: Bytes,
        data: Bytes,
        flags: MetaFlags,
    },
    /// `md <key> <flags>*`
    MetaDelete { key: Bytes, flags: MetaFlags },
    /// `ma <key> <flags>*`
    MetaArith { key: Bytes, flags: MetaFlags },
    /// `mn`
    MetaNoop,
    /// `me <key> [b]`: with `b` (`b64`), the key as given is base64.
    MetaDebug { key: Bytes, b64: bool },
    /// `lru_crawler metadump <all | class[,class...]>`: one line per item, then END.
    MetaDump { classes: Bytes },
}

/// Meta-command flags: single letters, each optionally followed by a token (e.g. `T30`,
/// `Oopaque`, `q`, `v`), in request order.
///
/// The parser guarantees: every letter is ASCII alphabetic, no letter appears twice
/// (memcached's `CLIENT_ERROR duplicate flag`), an `O` token is at most 32 bytes. Which letters
/// a given meta command understands, and what their tokens mean, is the node's business; a
/// key sent with the `b` flag is still base64 here (see [`crate::base64::decode`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaFlags {
    /// `(letter, token)`; the token is empty when absent.
    pub items: Vec<(u8, Bytes)>,
}

/// The delete that takes away the old value of `key` after a `set` of it failed as too
/// large (memcached unlinks it then), for the node to run without a reply; `base64` when
/// the key is in base64 (a meta key's `b`, or a binary key no text command could name), as
/// `md <key> b`. `None` for a base64 key that does not decode: no item has it.
pub fn forget_stale(key: Bytes, base64: bool) -> Option<Command> {
    if !base64 {
        return Some(Command::Delete { key, noreply: true });
    }
    crate::base64::decode(&key).filter(|k| !k.is_empty())?;
    let flags = MetaFlags {
        items: vec![(b'b', Bytes::new()), (b'q', Bytes::new())],
    };
    Some(Command::MetaDelete { key, flags })
}

impl MetaFlags {
    /// Whether flag `f` was given.
    pub fn has(&self, f: u8) -> bool {
        self.items.iter().any(|(l, _)| *l == f)
    }

    /// The token of flag `f` (its last occurrence), empty if the flag had none.
    pub fn token(&self, f: u8) -> Option<&[u8]> {
        self.items
            .iter()
            .rev()
            .find(|(l, _)| *l == f)
            .map(|(_, t)| t.as_ref())
    }

    /// The token of flag `f` parsed as a number: `None` when the flag is absent, `Some(Err(()))`
    /// when its token is not a valid `T` (memcached then answers
    /// `CLIENT_ERROR bad token in command line format`).
    pub fn number<T: FromStr>(&self, f: u8) -> Option<Result<T, ()>> {
        self.token(f).map(|t| {
            std::str::from_utf8(t)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or(())
        })
    }
}

impl Command {
    /// A meta command (`mg`, `ms`, `md`, `ma`, `mn`, `me`: memcached's `cmd_meta`).
    pub fn is_meta(&self) -> bool {
        matches!(
            self,
            Command::MetaGet { .. }
                | Command::MetaSet { .. }
                | Command::MetaDelete { .. }
                | Command::MetaArith { .. }
                | Command::MetaNoop
                | Command::MetaDebug { .. }
        )
    }

    /// Renders the command as a client would send it (canonical form: single spaces, `\r\n`).
    /// Parsing the output gives back an equal command. Useful to forward a request to a peer
    /// speaking the same protocol, and for tests.
    pub fn encode(&self, out: &mut BytesMut) {
        fn noreply(out: &mut BytesMut, on: bool) {
            if on {
                out.put_slice(b" noreply");
            }
        }
        fn meta(out: &mut BytesMut, name: &[u8], key: &[u8], flags: &MetaFlags) {
            out.put_slice(name);
            out.put_u8(b' ');
            out.put_slice(key);
            meta_flags(out, flags);
        }
        fn meta_flags(out: &mut BytesMut, flags: &MetaFlags) {
            for (f, t) in &flags.items {
                out.put_u8(b' ');
                out.put_u8(*f);
                out.put_slice(t);
            }
        }
        match self {
            Command::Store {
                mode,
                key,
                flags,
                exptime,
                data,
                cas,
                noreply: nr,
            } => {
                out.put_slice(mode.name().as_bytes());
                out.put_u8(b' ');
                out.put_slice(key);
                out.put_slice(format!(" {flags} {exptime} {}", data.len()).as_bytes());
                if *mode == StoreMode::Cas {
                    out.put_slice(format!(" {cas}").as_bytes());
                }
                noreply(out, *nr);
                out.put_slice(b"\r\n");
                out.put_slice(data);
            }
            Command::Get {
                keys,
                with_cas,
                touch,
            } => {
                out.put_slice(match (touch.is_some(), with_cas) {
                    (false, false) => b"get".as_slice(),
                    (false, true) => b"gets",
                    (true, false) => b"gat",
                    (true, true) => b"gats",
                });
                if let Some(t) = touch {
                    out.put_slice(format!(" {t}").as_bytes());
                }
                for k in keys {
                    out.put_u8(b' ');
                    out.put_slice(k);
                }
            }
            Command::Delete { key, noreply: nr } => {
                out.put_slice(b"delete ");
                out.put_slice(key);
                noreply(out, *nr);
            }
            Command::Arith {
                incr,
                key,
                delta,
                noreply: nr,
            } => {
                out.put_slice(if *incr { b"incr " } else { b"decr " });
                out.put_slice(key);
                out.put_slice(format!(" {delta}").as_bytes());
                noreply(out, *nr);
            }
            Command::Touch {
                key,
                exptime,
                noreply: nr,
            } => {
                out.put_slice(b"touch ");
                out.put_slice(key);
                out.put_slice(format!(" {exptime}").as_bytes());
                noreply(out, *nr);
            }
            Command::FlushAll { delay, noreply: nr } => {
                out.put_slice(format!("flush_all {delay}").as_bytes());
                noreply(out, *nr);
            }
            Command::Version => out.put_slice(b"version"),
            Command::Verbosity { noreply: nr } => {
                out.put_slice(b"verbosity 1");
                noreply(out, *nr);
            }
            Command::Stats { arg } => {
                out.put_slice(b"stats");
                if let Some(a) = arg {
                    out.put_u8(b' ');
                    out.put_slice(a);
                }
            }
            Command::Quit => out.put_slice(b"quit"),
            Command::CacheMemlimit { megabytes, noreply } => {
                out.put_slice(format!("cache_memlimit {megabytes}").as_bytes());
                if *noreply {
                    out.put_slice(b" noreply");
                }
            }
            Command::Slabs(Slabs::Automove { level, noreply: nr }) => {
                out.put_slice(format!("slabs automove {level}").as_bytes());
                noreply(out, *nr);
            }
            Command::Slabs(Slabs::Reassign { src, dst }) => {
                out.put_slice(format!("slabs reassign {src} {dst}").as_bytes());
            }
            Command::Lru(lru) => {
                let text = match lru {
                    Lru::Tune {
                        hot_pct,
                        warm_pct,
                        hot_factor,
                        warm_factor,
                        ..
                    } => format!("lru tune {hot_pct} {warm_pct} {hot_factor} {warm_factor}"),
                    Lru::Mode { segmented, .. } => {
                        format!("lru mode {}", if *segmented { "segmented" } else { "flat" })
                    }
                    Lru::TempTtl { ttl, .. } => format!("lru temp_ttl {ttl}"),
                    Lru::Invalid { .. } => "lru".into(),
                    Lru::Crawl { classes } => {
                        format!("lru_crawler crawl {}", String::from_utf8_lossy(classes))
                    }
                    Lru::CrawlerSleep(us) => format!("lru_crawler sleep {us}"),
                    Lru::CrawlerTocrawl(n) => format!("lru_crawler tocrawl {n}"),
                    Lru::Crawler(on) => {
                        format!("lru_crawler {}", if *on { "enable" } else { "disable" })
                    }
                };
                out.put_slice(text.as_bytes());
                if let Lru::Tune { noreply: nr, .. }
                | Lru::Mode { noreply: nr, .. }
                | Lru::TempTtl { noreply: nr, .. }
                | Lru::Invalid { noreply: nr } = lru
                {
                    noreply(out, *nr);
                }
            }
            Command::MetaGet { key, flags } => meta(out, b"mg", key, flags),
            Command::MetaSet { key, data, flags } => {
                out.put_slice(b"ms ");
                out.put_slice(key);
                out.put_slice(format!(" {}", data.len()).as_bytes());
                meta_flags(out, flags);
                out.put_slice(b"\r\n");
                out.put_slice(data);
            }
            Command::MetaDelete { key, flags } => meta(out, b"md", key, flags),
            Command::MetaArith { key, flags } => meta(out, b"ma", key, flags),
            Command::MetaNoop => out.put_slice(b"mn"),
            Command::MetaDebug { key, b64 } => {
                out.put_slice(b"me ");
                out.put_slice(key);
                if *b64 {
                    out.put_slice(b" b");
                }
            }
            Command::MetaDump { classes } => {
                out.put_slice(b"lru_crawler metadump ");
                out.put_slice(classes);
            }
        }
        out.put_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_answers_as_memcached_and_keeps_the_crawler_on_or_off() {
        let tune = |hot_pct, warm_pct, hot_factor, noreply| Lru::Tune {
            hot_pct,
            warm_pct,
            hot_factor,
            warm_factor: 2.0,
            noreply,
        };
        assert_eq!(tune(10, 10, 0.1, false).answer(true), (Some("OK"), true));
        assert_eq!(
            tune(50, 31, 0.1, false).answer(true).0,
            Some("ERROR hot and warm pcts must not exceed 80")
        );
        assert_eq!(
            tune(10, 10, 0.0, false).answer(true).0,
            Some("ERROR hot/warm age factors must be greater than 0")
        );
        // memcached's 32-bit sum wraps.
        assert_eq!(tune(u32::MAX, 2, 0.1, false).answer(true).0, Some("OK"));
        // noreply silences everything of `lru`, its errors too.
        assert_eq!(tune(50, 50, 0.0, true).answer(true).0, None);
        assert_eq!(Lru::Invalid { noreply: true }.answer(true).0, None);
        assert_eq!(
            Lru::Invalid { noreply: false }.answer(true).0,
            Some("ERROR")
        );
        let crawl = |c: &'static [u8]| Lru::Crawl {
            classes: Bytes::from_static(c),
        };
        for (classes, answer) in [
            (&b"all"[..], "OK"),
            (b"1,2,63", "OK"),
            (b"64", "BADCLASS invalid class id"),
            (b"0", "BADCLASS invalid class id"),
            (b"1,x", "BADCLASS invalid class id"),
            (b"1,", "OK"),
            (b",1,,2", "OK"),
            (b",", "NOTSTARTED no items to crawl"),
        ] {
            assert_eq!(
                crawl(classes).answer(true),
                (Some(answer), true),
                "{classes:?}"
            );
        }
        assert_eq!(
            crawl(b"all").answer(false),
            (Some("CLIENT_ERROR lru crawler disabled"), false)
        );
        // On by default: enable says it could not start another; disable, then enable.
        assert_eq!(
            Lru::Crawler(true).answer(true),
            (Some("ERROR failed to start lru crawler thread"), true)
        );
        assert_eq!(Lru::Crawler(false).answer(true), (Some("OK"), false));
        assert_eq!(Lru::Crawler(false).answer(false), (Some("OK"), false));
        assert_eq!(Lru::Crawler(true).answer(false), (Some("OK"), true));
        assert_eq!(
            Lru::CrawlerSleep(1_000_001).answer(true).0,
            Some("CLIENT_ERROR sleep must be one second or less")
        );
        assert_eq!(
            Lru::CrawlerSleep(1_000_000).answer(false),
            (Some("OK"), false)
        );
    }

    fn flags(list: &[(u8, &'static [u8])]) -> MetaFlags {
        MetaFlags {
            items: list
                .iter()
                .map(|(f, t)| (*f, Bytes::from_static(t)))
                .collect(),
        }
    }

    #[test]
    fn meta_flags_lookup() {
        let f = flags(&[(b'v', b""), (b'T', b"30"), (b'N', b"x1"), (b'O', b"abc")]);
        assert!(f.has(b'v'));
        assert!(!f.has(b'q'));
        assert_eq!(f.token(b'v'), Some(&b""[..]));
        assert_eq!(f.token(b'O'), Some(&b"abc"[..]));
        assert_eq!(f.token(b'q'), None);
        assert_eq!(f.number::<i64>(b'T'), Some(Ok(30)));
        assert_eq!(f.number::<i64>(b'N'), Some(Err(())));
        assert_eq!(f.number::<u32>(b'v'), Some(Err(())));
        assert_eq!(f.number::<u32>(b'q'), None);
    }

    #[test]
    fn token_is_last_occurrence() {
        let f = flags(&[(b'T', b"1"), (b'T', b"2")]);
        assert_eq!(f.token(b'T'), Some(&b"2"[..]));
    }

    #[test]
    fn encode_store_and_get() {
        let mut out = BytesMut::new();
        Command::Store {
            mode: StoreMode::Cas,
            key: Bytes::from_static(b"k"),
            flags: 5,
            exptime: -1,
            data: Bytes::from_static(b"a\r\nb"),
            cas: 77,
            noreply: true,
        }
        .encode(&mut out);
        Command::Get {
            keys: vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
            with_cas: true,
            touch: Some(10),
        }
        .encode(&mut out);
        assert_eq!(
            &out[..],
            b"cas k 5 -1 4 77 noreply\r\na\r\nb\r\ngats 10 a b\r\n"
        );
    }
}
