//! Parser tests: every command, every error path with its reply bytes, resumption at every
//! split point, bounded swallowing, and property tests.

use super::*;
use proptest::prelude::*;

fn b(s: &'static [u8]) -> Bytes {
    Bytes::from_static(s)
}

fn flags(list: &[(u8, &'static [u8])]) -> MetaFlags {
    MetaFlags {
        items: list.iter().map(|(f, t)| (*f, b(t))).collect(),
    }
}

/// Everything `input` yields in one buffer, continuing after non-fatal errors, plus the bytes
/// left unconsumed.
fn run(input: &[u8], limits: &Limits) -> (Vec<Result<Command, ParseError>>, usize) {
    let mut p = Parser::new();
    let mut buf = BytesMut::from(input);
    let mut out = Vec::new();
    loop {
        match p.parse(&mut buf, limits) {
            Ok(Some(c)) => out.push(Ok(c)),
            Ok(None) => break,
            Err(e) => {
                let fatal = e.closes();
                out.push(Err(e));
                if fatal {
                    break;
                }
            }
        }
    }
    (out, buf.len())
}

fn all(input: &[u8]) -> Vec<Result<Command, ParseError>> {
    let (out, left) = run(input, &Limits::default());
    assert_eq!(left, 0, "unconsumed input");
    out
}

fn one(input: &[u8]) -> Command {
    let mut out = all(input);
    assert_eq!(out.len(), 1, "{out:?}");
    out.remove(0).expect("a command")
}

fn err(input: &[u8]) -> ParseError {
    let mut out = all(input);
    assert_eq!(out.len(), 1, "{out:?}");
    out.remove(0).expect_err("an error")
}

fn store(mode: StoreMode, key: &'static [u8], fl: u32, exp: i64, data: &'static [u8]) -> Command {
    Command::Store {
        mode,
        key: b(key),
        flags: fl,
        exptime: exp,
        data: b(data),
        cas: 0,
        noreply: false,
    }
}

#[test]
fn storage_modes() {
    for (word, mode) in [
        ("set", StoreMode::Set),
        ("add", StoreMode::Add),
        ("replace", StoreMode::Replace),
        ("append", StoreMode::Append),
        ("prepend", StoreMode::Prepend),
    ] {
        let line = format!("{word} foo 7 -3 5\r\nhello\r\n");
        assert_eq!(one(line.as_bytes()), store(mode, b"foo", 7, -3, b"hello"));
    }
}

#[test]
fn storage_noreply_cas_and_binary_data() {
    assert_eq!(
        one(b"set k 0 0 4 noreply\r\na\r\nb\r\n"),
        Command::Store {
            mode: StoreMode::Set,
            key: b(b"k"),
            flags: 0,
            exptime: 0,
            data: b(b"a\r\nb"),
            cas: 0,
            noreply: true,
        }
    );
    assert_eq!(
        one(b"cas k 4294967295 100 0 18446744073709551615\r\n\r\n"),
        Command::Store {
            mode: StoreMode::Cas,
            key: b(b"k"),
            flags: u32::MAX,
            exptime: 100,
            data: b(b""),
            cas: u64::MAX,
            noreply: false,
        }
    );
    assert_eq!(
        one(b"cas k 1 2 1 99 noreply\r\nx\r\n"),
        Command::Store {
            mode: StoreMode::Cas,
            key: b(b"k"),
            flags: 1,
            exptime: 2,
            data: b(b"x"),
            cas: 99,
            noreply: true,
        }
    );
}

#[test]
fn storage_tolerances() {
    // Runs of spaces, a bare \n line end, `+` signs (strtol syntax).
    assert_eq!(
        one(b"  set   k  1   2 3  \nabc\r\n"),
        store(StoreMode::Set, b"k", 1, 2, b"abc")
    );
    assert_eq!(
        one(b"set k +1 +2 +3\r\nabc\r\n"),
        store(StoreMode::Set, b"k", 1, 2, b"abc")
    );
    // memcached ignores a sixth token that is not `noreply`.
    assert_eq!(
        one(b"set k 1 2 3 junk\r\nabc\r\n"),
        store(StoreMode::Set, b"k", 1, 2, b"abc")
    );
    // Bytes >= 0x80 are allowed in keys.
    assert_eq!(
        one("set clé 0 0 1\r\nx\r\n".as_bytes()),
        store(StoreMode::Set, "clé".as_bytes(), 0, 0, b"x")
    );
}

#[test]
fn gets() {
    assert_eq!(
        one(b"get a\r\n"),
        Command::Get {
            keys: vec![b(b"a")],
            with_cas: false,
            touch: None
        }
    );
    assert_eq!(
        one(b"gets a  b c\r\n"),
        Command::Get {
            keys: vec![b(b"a"), b(b"b"), b(b"c")],
            with_cas: true,
            touch: None
        }
    );
    assert_eq!(
        one(b"gat -1 a b\n"),
        Command::Get {
            keys: vec![b(b"a"), b(b"b")],
            with_cas: false,
            touch: Some(-1)
        }
    );
    // An exptime and no key: an empty answer, as in memcached.
    assert_eq!(
        one(b"gat 10\r\n"),
        Command::Get {
            keys: vec![],
            with_cas: false,
            touch: Some(10)
        }
    );
    assert_eq!(
        one(b"gats 300 a a\r\n"),
        Command::Get {
            keys: vec![b(b"a"), b(b"a")],
            with_cas: true,
            touch: Some(300)
        }
    );
    let keys: Vec<String> = (0..4096).map(|i| format!("key:{i}")).collect();
    let line = format!("get {}\r\n", keys.join(" "));
    match one(line.as_bytes()) {
        Command::Get { keys: got, .. } => {
            assert_eq!(got.len(), 4096);
            assert_eq!(&got[4095][..], b"key:4095");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn delete_forms() {
    let del = |k: &'static [u8], noreply| Command::Delete { key: b(k), noreply };
    assert_eq!(one(b"delete k\r\n"), del(b"k", false));
    assert_eq!(one(b"delete k noreply\r\n"), del(b"k", true));
    assert_eq!(one(b"delete k 0\r\n"), del(b"k", false));
    assert_eq!(one(b"delete k 0 noreply\r\n"), del(b"k", true));
}

#[test]
fn arith_touch_flush() {
    assert_eq!(
        one(b"incr n 18446744073709551615\r\n"),
        Command::Arith {
            incr: true,
            key: b(b"n"),
            delta: u64::MAX,
            noreply: false
        }
    );
    assert_eq!(
        one(b"decr n 3 noreply\r\n"),
        Command::Arith {
            incr: false,
            key: b(b"n"),
            delta: 3,
            noreply: true
        }
    );
    assert_eq!(
        one(b"touch k -5\r\n"),
        Command::Touch {
            key: b(b"k"),
            exptime: -5,
            noreply: false
        }
    );
    assert_eq!(
        one(b"touch k 10 noreply\r\n"),
        Command::Touch {
            key: b(b"k"),
            exptime: 10,
            noreply: true
        }
    );
    let flush = |delay, noreply| Command::FlushAll { delay, noreply };
    assert_eq!(one(b"flush_all\r\n"), flush(0, false));
    assert_eq!(one(b"flush_all 10\r\n"), flush(10, false));
    assert_eq!(one(b"flush_all noreply\r\n"), flush(0, true));
    assert_eq!(one(b"flush_all -1 noreply\r\n"), flush(-1, true));
}

/// memcached reads every text time into an `int32_t` (`safe_strtol`): libmemcached's -1
/// ("do not keep"), sent as `4294967295`, is -1 again; past the 64-bit range is an error.
#[test]
fn text_times_wrap_to_32_bits_as_in_memcached() {
    let set = |line: &'static [u8]| match one(line) {
        Command::Store { exptime, .. } => exptime,
        other => panic!("{other:?}"),
    };
    assert_eq!(set(b"set a 0 4294967295 1\r\nx\r\n"), -1);
    assert_eq!(set(b"set a 0 2147483648 1\r\nx\r\n"), i64::from(i32::MIN));
    assert_eq!(set(b"set a 0 -4294967295 1\r\nx\r\n"), 1);
    assert_eq!(set(b"set a 0 2147483647 1\r\nx\r\n"), i64::from(i32::MAX));
    assert_eq!(
        err(b"set a 0 9223372036854775808 1\r\nx\r\n"),
        ParseError::BadCommandLine
    );
    assert_eq!(
        one(b"touch k 4294967295\r\n"),
        Command::Touch {
            key: b(b"k"),
            exptime: -1,
            noreply: false
        }
    );
    match one(b"gat 4294967296 k\r\n") {
        Command::Get { touch, .. } => assert_eq!(touch, Some(0)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        one(b"flush_all 4294967295\r\n"),
        Command::FlushAll {
            delay: -1,
            noreply: false
        }
    );
    assert_eq!(
        one(b"mg k T4294967295 N4294967306 R30 v\r\n"),
        Command::MetaGet {
            key: b(b"k"),
            flags: flags(&[(b'T', b"-1"), (b'N', b"10"), (b'R', b"30"), (b'v', b"")]),
        }
    );
}

#[test]
fn lru_and_crawler_settings() {
    use crate::command::Lru;
    assert_eq!(
        one(b"lru tune 10 20 0.5 2 noreply\r\n"),
        Command::Lru(Lru::Tune {
            hot_pct: 10,
            warm_pct: 20,
            hot_factor: 0.5,
            warm_factor: 2.0,
            noreply: true
        })
    );
    assert_eq!(
        one(b"lru mode segmented extra\r\n"),
        Command::Lru(Lru::Mode {
            segmented: true,
            noreply: false
        })
    );
    assert_eq!(
        one(b"lru temp_ttl -5\r\n"),
        Command::Lru(Lru::TempTtl {
            ttl: -5,
            noreply: false
        })
    );
    for bad in [
        &b"lru\r\n"[..],
        b"lru mode\r\n",
        b"lru mode x\r\n",
        b"lru tune 1 2 3\r\n",
        b"lru tune -1 2 3 4\r\n",
        b"lru temp_ttl x\r\n",
    ] {
        assert_eq!(
            one(bad),
            Command::Lru(Lru::Invalid { noreply: false }),
            "{bad:?}"
        );
    }
    assert_eq!(
        one(b"lru x noreply\r\n"),
        Command::Lru(Lru::Invalid { noreply: true })
    );
    assert_eq!(
        one(b"lru_crawler crawl 1,2\r\n"),
        Command::Lru(Lru::Crawl {
            classes: Bytes::from_static(b"1,2")
        })
    );
    assert_eq!(
        one(b"lru_crawler sleep 10\r\n"),
        Command::Lru(Lru::CrawlerSleep(10))
    );
    assert_eq!(
        one(b"lru_crawler tocrawl 7\r\n"),
        Command::Lru(Lru::CrawlerTocrawl(7))
    );
    assert_eq!(
        one(b"lru_crawler disable\r\n"),
        Command::Lru(Lru::Crawler(false))
    );
    assert_eq!(err(b"lru_crawler sleep x\r\n"), ParseError::BadCommandLine);
    assert_eq!(
        err(b"lru_crawler tocrawl -1\r\n"),
        ParseError::BadCommandLine
    );
    // memcached's exact token counts.
    assert_eq!(
        err(b"lru_crawler sleep 5 noreply\r\n"),
        ParseError::UnknownCommand
    );
    assert_eq!(err(b"lru_crawler enable x\r\n"), ParseError::UnknownCommand);
    assert_eq!(err(b"lru_crawler\r\n"), ParseError::UnknownCommand);
}

#[test]
fn admin_commands() {
    assert_eq!(one(b"version\r\n"), Command::Version);
    assert_eq!(
        one(b"lru_crawler metadump all\r\n"),
        Command::MetaDump {
            classes: Bytes::from_static(b"all")
        }
    );
    assert_eq!(one(b"quit\r\n"), Command::Quit);
    assert_eq!(
        one(b"cache_memlimit 50 noreply\r\n"),
        Command::CacheMemlimit {
            megabytes: 50,
            noreply: true
        }
    );
    assert_eq!(
        one(b"verbosity 1\r\n"),
        Command::Verbosity { noreply: false }
    );
    assert_eq!(
        one(b"verbosity 0 noreply\r\n"),
        Command::Verbosity { noreply: true }
    );
    assert_eq!(
        one(b"verbosity noreply\r\n"),
        Command::Verbosity { noreply: true }
    );
    assert_eq!(
        one(b"slabs automove 2 noreply\r\n"),
        Command::Slabs(Slabs::Automove {
            level: 2,
            noreply: true
        })
    );
    assert_eq!(
        Slabs::Automove {
            level: 3,
            noreply: false
        }
        .answer(),
        "ERROR"
    );
    let reassign = one(b"slabs reassign -1 1\r\n");
    assert_eq!(
        reassign,
        Command::Slabs(Slabs::Reassign { src: -1, dst: 1 })
    );
    let mut encoded = BytesMut::new();
    reassign.encode(&mut encoded);
    assert_eq!(&encoded[..], b"slabs reassign -1 1\r\n");
    assert_eq!(
        Slabs::Reassign { src: 1, dst: 1 }.answer(),
        "SAME src and dst class are identical"
    );
    assert_eq!(
        Slabs::Reassign { src: 0, dst: 1 }.answer(),
        "NOSPARE source class has no spare pages"
    );
    assert_eq!(
        Slabs::Reassign { src: 2, dst: 1 }.answer(),
        "BADCLASS invalid src or dst class id"
    );
    assert_eq!(one(b"stats\r\n"), Command::Stats { arg: None });
    assert_eq!(
        one(b"stats settings\r\n"),
        Command::Stats {
            arg: Some(b(b"settings"))
        }
    );
    assert_eq!(
        one(b"stats  detail  dump \r\n"),
        Command::Stats {
            arg: Some(b(b"detail  dump"))
        }
    );
}

#[test]
fn meta_commands() {
    assert_eq!(
        one(b"mg foo v t T30 Oopaque123 q k\r\n"),
        Command::MetaGet {
            key: b(b"foo"),
            flags: flags(&[
                (b'v', b""),
                (b't', b""),
                (b'T', b"30"),
                (b'O', b"opaque123"),
                (b'q', b""),
                (b'k', b"")
            ]),
        }
    );
    assert_eq!(
        one(b"mg foo\r\n"),
        Command::MetaGet {
            key: b(b"foo"),
            flags: MetaFlags::default()
        }
    );
    assert_eq!(
        one(b"ms foo 4 T0 F5 I MS\r\nab\r\n\r\n"),
        Command::MetaSet {
            key: b(b"foo"),
            data: b(b"ab\r\n"),
            flags: flags(&[(b'T', b"0"), (b'F', b"5"), (b'I', b""), (b'M', b"S")]),
        }
    );
    assert_eq!(
        one(b"ms Zm9v 0 b\r\n\r\n"),
        Command::MetaSet {
            key: b(b"Zm9v"),
            data: b(b""),
            flags: flags(&[(b'b', b"")]),
        }
    );
    assert_eq!(
        one(b"md foo q C12\r\n"),
        Command::MetaDelete {
            key: b(b"foo"),
            flags: flags(&[(b'q', b""), (b'C', b"12")]),
        }
    );
    assert_eq!(
        one(b"ma cnt N0 J13 MI D5 v\r\n"),
        Command::MetaArith {
            key: b(b"cnt"),
            flags: flags(&[
                (b'N', b"0"),
                (b'J', b"13"),
                (b'M', b"I"),
                (b'D', b"5"),
                (b'v', b"")
            ]),
        }
    );
    assert_eq!(one(b"mn\r\n"), Command::MetaNoop);
    assert_eq!(
        one(b"me foo\r\n"),
        Command::MetaDebug {
            key: b(b"foo"),
            b64: false
        }
    );
    assert_eq!(
        one(b"me Zm9v b x\r\n"),
        Command::MetaDebug {
            key: b(b"Zm9v"),
            b64: true
        }
    );
    let Command::MetaGet { flags: f, .. } = one(b"mg k T30 Nx\r\n") else {
        panic!("mg")
    };
    assert_eq!(f.number::<i64>(b'T'), Some(Ok(30)));
    assert_eq!(f.number::<i64>(b'N'), Some(Err(())));
}

/// Every error path, with memcached's reply bytes.
#[test]
fn error_replies() {
    let bad_line = b"CLIENT_ERROR bad command line format\r\n".to_vec();
    let error = b"ERROR\r\n".to_vec();
    let cases: Vec<(&[u8], Vec<u8>)> = vec![
        (b"\r\n", error.clone()),
        (b"   \r\n", error.clone()),
        (b"\n", error.clone()),
        (b"bogus\r\n", error.clone()),
        (b"GET a\r\n", error.clone()),
        (b"g\r\n", error.clone()),
        (b"mx foo\r\n", error.clone()),
        (b"get\r\n", error.clone()),
        (b"gets   \r\n", error.clone()),
        (b"gat\r\n", error.clone()),
        (b"set k 0 0\r\n", error.clone()),
        (b"set k 0 0 1 noreply extra\r\n", error.clone()),
        (b"cas k 0 0 1\r\n", error.clone()),
        (b"delete\r\n", error.clone()),
        (b"delete k 0 noreply x\r\n", error.clone()),
        (b"incr k\r\n", error.clone()),
        (b"touch k\r\n", error.clone()),
        (b"flush_all 1 noreply x\r\n", error.clone()),
        (b"verbosity\r\n", error.clone()),
        (
            b"delete k 1\r\n",
            b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n".to_vec(),
        ),
        (
            b"delete k noreply 0\r\n",
            b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n".to_vec(),
        ),
        (b"set k -1 0 1\r\nx\r\n", bad_line.clone()),
        (b"set k 0 0 -1\r\n", bad_line.clone()),
        (b"set k 0 0 2147483646\r\n", bad_line.clone()),
        (b"set k 0 0 x\r\n", bad_line.clone()),
        (
            b"flush_all soon\r\n",
            b"CLIENT_ERROR invalid exptime argument\r\n".to_vec(),
        ),
        (b"verbosity high\r\n", bad_line.clone()),
        (b"mg\r\n", b"ERROR\r\n".to_vec()),
        (b"md\r\n", b"ERROR\r\n".to_vec()),
        (b"ma\r\n", b"ERROR\r\n".to_vec()),
        (b"me\r\n", bad_line.clone()),
        (b"ms foo\r\n", bad_line.clone()),
        (
            b"incr k -1\r\n",
            b"CLIENT_ERROR invalid numeric delta argument\r\n".to_vec(),
        ),
        (
            b"decr k 18446744073709551616\r\n",
            b"CLIENT_ERROR invalid numeric delta argument\r\n".to_vec(),
        ),
        (
            b"touch k soon\r\n",
            b"CLIENT_ERROR invalid exptime argument\r\n".to_vec(),
        ),
        (
            b"gat x k\r\n",
            b"CLIENT_ERROR invalid exptime argument\r\n".to_vec(),
        ),
        (b"mg k v v\r\n", b"CLIENT_ERROR duplicate flag\r\n".to_vec()),
        (b"mg k 1\r\n", b"CLIENT_ERROR invalid flag\r\n".to_vec()),
        // md and ma answer any flag they cannot read alike (memcached 1.6.18).
        (
            b"md k \xff\r\n",
            b"CLIENT_ERROR invalid or duplicate flag\r\n".to_vec(),
        ),
        (
            b"mg k \xff\r\n",
            b"CLIENT_ERROR duplicate flag\r\n".to_vec(),
        ),
        (b"mg k m v v\r\n", b"CLIENT_ERROR invalid flag\r\n".to_vec()),
        (
            b"ma k Dx\r\n",
            b"CLIENT_ERROR invalid or duplicate flag\r\n".to_vec(),
        ),
        (
            b"mg k O12345678901234567890123456789012\r\n",
            b"CLIENT_ERROR opaque token too long\r\n".to_vec(),
        ),
        (
            b"mg k a b c d e f g h i j k l m n o p q r s t u\r\n",
            b"CLIENT_ERROR options flags are too long\r\n".to_vec(),
        ),
        // memcached 1.6.18's words for an unreadable length (a helper's raw requests).
        (
            b"ms k x\r\n",
            b"CLIENT_ERROR bad command line format\r\n".to_vec(),
        ),
        (
            b"ms k -1 T0\r\n",
            b"CLIENT_ERROR bad command line format\r\n".to_vec(),
        ),
        // Twenty tokens or more, the command and key counted: before any flag is read, in
        // mg's words or in the others' (without "are").
        (
            b"mg k v k f s t c h l O1 u T30 N30 R30 E1 q b x y\r\n",
            b"CLIENT_ERROR options flags are too long\r\n".to_vec(),
        ),
        (
            b"md k q q q q q q q q q q q q q q q q q q\r\n",
            b"CLIENT_ERROR options flags too long\r\n".to_vec(),
        ),
        (
            b"ma k q q q q q q q q q q q q q q q q q q\r\n",
            b"CLIENT_ERROR options flags too long\r\n".to_vec(),
        ),
        (
            b"ms k x q q q q q q q q q q q q q q q q q\r\n",
            b"CLIENT_ERROR options flags too long\r\n".to_vec(),
        ),
    ];
    for (input, reply) in cases {
        let e = err(input);
        assert_eq!(
            e.reply(),
            reply,
            "{:?} gave {e:?}",
            String::from_utf8_lossy(input)
        );
        assert!(!e.closes());
    }
    let long_key = format!("get {}\r\n", "k".repeat(251));
    assert_eq!(err(long_key.as_bytes()), ParseError::BadCommandLine);
    let ok_key = format!("get {}\r\n", "k".repeat(250));
    assert!(matches!(one(ok_key.as_bytes()), Command::Get { .. }));
    let long_flag = b"set k 4294967296 0 1\r\nx\r\n";
    assert_eq!(all(long_flag), vec![Err(ParseError::BadCommandLine)]);
}

#[test]
fn exact_error_texts() {
    assert_eq!(ParseError::UnknownCommand.reply(), b"ERROR\r\n");
    assert_eq!(
        ParseError::BadDataChunk.reply(),
        b"CLIENT_ERROR bad data chunk\r\n"
    );
    assert_eq!(
        ParseError::TooLarge.reply(),
        b"SERVER_ERROR object too large for cache\r\n"
    );
    assert_eq!(
        ParseError::LineTooLong.reply(),
        b"CLIENT_ERROR line too long\r\n"
    );
    assert!(ParseError::LineTooLong.closes());
    assert!(!ParseError::TooLarge.closes());
}

#[test]
fn too_many_keys() {
    let limits = Limits {
        max_keys: 3,
        ..Limits::default()
    };
    let (out, _) = run(
        b"get a b c\r\nget a b c d\r\ngat 1 a b c d e f g h\r\n",
        &limits,
    );
    assert!(matches!(out[0], Ok(Command::Get { .. })));
    assert_eq!(out[1], Err(ParseError::BadCommandLine));
    assert_eq!(out[2], Err(ParseError::BadCommandLine));
    assert_eq!(out.len(), 3);
}

#[test]
fn parsing_continues_after_errors() {
    let input = b"bogus\r\nget a\r\nincr k x\r\nmn\r\n";
    let out = all(input);
    assert_eq!(
        out,
        vec![
            Err(ParseError::UnknownCommand),
            Ok(Command::Get {
                keys: vec![b(b"a")],
                with_cas: false,
                touch: None
            }),
            Err(ParseError::Client("invalid numeric delta argument")),
            Ok(Command::MetaNoop),
        ]
    );
}

#[test]
fn bad_data_chunk_consumes_declared_length_plus_two() {
    // memcached 1.6 reads <bytes>+2, finds no "\r\n" at the end, and goes on after them.
    let out = all(b"set k 0 0 3\r\nabcde\r\nmn\r\n");
    assert_eq!(
        out,
        vec![
            Err(ParseError::BadDataChunk),
            Err(ParseError::UnknownCommand), // "e" (one byte: too short for a command)
            Ok(Command::MetaNoop),
        ]
    );
    // A bare \n does not end a data block: "x\nm" is the block, "n" a line too short.
    let out = all(b"set k 0 0 1\r\nx\nmn\r\n");
    assert_eq!(
        out,
        vec![
            Err(ParseError::BadDataChunk),
            Err(ParseError::UnknownCommand)
        ]
    );
    let out = all(b"ms k 2\r\nxyz\r\nmn\r\n");
    assert_eq!(
        out,
        vec![
            Err(ParseError::BadDataChunk),
            Err(ParseError::UnknownCommand),
            Ok(Command::MetaNoop)
        ]
    );
}

#[test]
fn keys_may_hold_control_bytes_as_in_memcached() {
    // memaslap's keys start with 0x10 bytes; memcached checks only the length.
    let keys: Vec<Bytes> = vec![
        Bytes::from_static(b"\x10\x10abc"),
        Bytes::from_static(b"a\tb"),
        Bytes::from_static(b"\x7f"),
    ];
    assert_eq!(
        all(b"get \x10\x10abc a\tb \x7f\r\n"),
        vec![Ok(Command::Get {
            keys,
            with_cas: false,
            touch: None
        })]
    );
}

#[test]
fn rejected_storage_lines_swallow_their_block() {
    let long = "k".repeat(251);
    let input = format!("set {long} 0 0 5\r\nmn\r\n\r\r\nversion\r\n");
    assert_eq!(
        all(input.as_bytes()),
        vec![Err(ParseError::BadCommandLine), Ok(Command::Version)]
    );
    let input = format!("set {long} 0 0 4\r\nmn\r\n\r\nset k 0 x 4\r\nmn\r\n\r\ncas k 0 0 4 x\r\nmn\r\n\r\nversion\r\n");
    assert_eq!(
        all(input.as_bytes()),
        vec![
            Err(ParseError::BadCommandLine),
            Err(ParseError::BadCommandLine),
            Err(ParseError::BadCommandLine),
            Ok(Command::Version)
        ]
    );
    let input = format!("ms {long} 4 T0\r\nmn\r\n\r\nms k 4 v v\r\nmn\r\n\r\nversion\r\n");
    assert_eq!(
        all(input.as_bytes()),
        vec![
            Err(ParseError::BadCommandLine),
            Err(ParseError::Client("duplicate flag")),
            Ok(Command::Version)
        ]
    );
    // Without a readable length nothing can be swallowed: the data is read as commands,
    // as memcached does.
    assert_eq!(
        all(b"set k 0 0 z\r\nmn\r\n"),
        vec![Err(ParseError::BadCommandLine), Ok(Command::MetaNoop)]
    );
}

#[test]
fn too_large_is_swallowed_in_one_buffer() {
    // An 8-byte value with a 1-byte key and memcached's item overhead (see `item_fits`).
    let limits = Limits {
        max_item_size: 48 + 2 + 10 + 8,
        ..Limits::default()
    };
    let (out, left) = run(
        b"set k 0 0 9\r\n123456789\r\nms k 9 T0\r\n12\r\n45678\r\nset k 0 0 8\r\n12345678\r\n",
        &limits,
    );
    assert_eq!(left, 0);
    assert_eq!(
        out,
        vec![
            Err(ParseError::TooLarge),
            Err(ParseError::TooLarge),
            Ok(store(StoreMode::Set, b"k", 0, 0, b"12345678")),
        ]
    );
}

#[test]
fn too_large_swallow_never_buffers() {
    let limits = Limits::default();
    let size = 5 * 1024 * 1024;
    let mut p = Parser::new();
    let mut buf = BytesMut::new();
    buf.extend_from_slice(format!("set big 0 0 {size}\r\n").as_bytes());
    assert_eq!(p.parse(&mut buf, &limits), Ok(None));
    assert!(buf.is_empty(), "the line is consumed");
    let chunk = vec![b'x'; 1000];
    let mut sent = 0;
    let mut got = None;
    while sent < size + 2 {
        let n = chunk.len().min(size + 2 - sent);
        buf.extend_from_slice(&chunk[..n]);
        sent += n;
        if sent == size + 2 {
            buf.extend_from_slice(b"mn\r\n");
        }
        match p.parse(&mut buf, &limits) {
            Ok(None) => assert!(buf.is_empty(), "swallowed bytes are dropped at once"),
            other => {
                got = Some(other);
                break;
            }
        }
        assert!(buf.len() <= chunk.len());
    }
    assert_eq!(got, Some(Err(ParseError::TooLarge)));
    assert_eq!(sent, size + 2);
    assert_eq!(p.parse(&mut buf, &limits), Ok(Some(Command::MetaNoop)));
    assert!(buf.is_empty());
}

#[test]
fn line_too_long_closes() {
    let limits = Limits {
        max_line_len: 16,
        max_get_line_len: 16,
        ..Limits::default()
    };
    // Without a newline: detected as soon as the buffer passes the limit.
    let mut p = Parser::new();
    let mut buf = BytesMut::from(&b"get aaaaaaaaaaaaa"[..]);
    assert_eq!(p.parse(&mut buf, &limits), Ok(None));
    buf.extend_from_slice(b"a");
    let e = p.parse(&mut buf, &limits).unwrap_err();
    assert_eq!(e, ParseError::LineTooLong);
    assert!(e.closes());
    // With a newline, after a line too long.
    let (out, _) = run(b"get aaaaaaaaaaaaaaaaaa\r\n", &limits);
    assert_eq!(out, vec![Err(ParseError::LineTooLong)]);
    // Exactly at the limit is fine, the \r\n does not count.
    let (out, _) = run(b"get aaaaaaaaaaaa\r\n", &limits);
    assert!(matches!(out[..], [Ok(Command::Get { .. })]));
    let out = chunked(b"get aaaaaaaaaaaa\r\nmn\r\n", &[1], &limits);
    assert!(matches!(
        out[..],
        [Ok(Command::Get { .. }), Ok(Command::MetaNoop)]
    ));
}

#[test]
fn a_get_line_may_be_longer_than_others() {
    let limits = Limits {
        max_line_len: 16,
        max_get_line_len: 32,
        ..Limits::default()
    };
    let long_get = b"get aaaaaaaaaa bbbbbbbbbb cccccc\r\n";
    assert_eq!(long_get.len() - 2, 32);
    for line in [
        &long_get[..],
        b"  gets aaaaaaaaaa bbbbbbbbbb cc\r\n",
        b"gat 1 aaaaaaaaaa bbbbbbbbbbbbb\r\n",
    ] {
        let (out, left) = run(line, &limits);
        assert!(matches!(out[..], [Ok(Command::Get { .. })]), "{out:?}");
        assert_eq!(left, 0);
    }
    // Arriving a byte at a time: not too long before its newline.
    let out = chunked(long_get, &[1], &limits);
    assert!(matches!(out[..], [Ok(Command::Get { .. })]), "{out:?}");
    for line in [
        &b"get aaaaaaaaaa bbbbbbbbbb ccccccc\r\n"[..],
        b"delete aaaaaaaaaaaaa\r\n",
        b"getx aaaaaaaaaaaaaaa\r\n",
    ] {
        let (out, _) = run(line, &limits);
        assert_eq!(out, vec![Err(ParseError::LineTooLong)], "{line:?}");
    }
    let mut p = Parser::new();
    let mut buf = BytesMut::from(&b"delete aaaaaaaaaaa"[..]);
    assert_eq!(p.parse(&mut buf, &limits), Err(ParseError::LineTooLong));
    let mut buf = BytesMut::from(&b"get aaaaaaaaaaaaaa"[..]);
    assert_eq!(Parser::new().parse(&mut buf, &limits), Ok(None));
}

#[test]
fn noreply_silences_a_classic_commands_errors() {
    let limits = Limits::default();
    let cases: [(&[u8], bool); 11] = [
        (b"delete k 5 noreply\r\n", true),
        (b"delete k 5\r\n", false),
        (b"incr k abc noreply\r\n", true),
        (b"flush_all abc noreply\r\n", true),
        (b"set k abc 0 1 noreply\r\na\r\n", true),
        (b"set k 0 0 3 noreply\r\nhello\r\n", true),
        (b"set k 0 0 2000000 noreply\r\n", true),
        // The delta is `noreply`: memcached took it as the flag too.
        (b"incr k noreply\r\n", true),
        // A command memcached could not read: ERROR all the same.
        (b"incr noreply\r\n", false),
        // A meta command's errors are answered: its quiet mode is the q flag.
        (b"mg k !x q\r\n", false),
        (b"ms k abc noreply\r\nhi\r\n", false),
    ];
    for (input, quiet) in cases {
        let mut p = Parser::new();
        let mut buf = BytesMut::from(input);
        let e = loop {
            match p.parse(&mut buf, &limits) {
                Err(e) => break e,
                Ok(None) => {
                    // The too-large block: swallowed as it comes.
                    buf.extend_from_slice(&vec![b'a'; 2_000_002]);
                }
                Ok(Some(c)) => panic!("{input:?}: {c:?}"),
            }
        };
        assert_eq!(
            p.is_quiet(&e),
            quiet,
            "{:?}: {e}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn need_more_keeps_state() {
    let limits = Limits::default();
    let mut p = Parser::new();
    let mut buf = BytesMut::from(&b"set k 0 0 10\r\n01234"[..]);
    assert_eq!(p.parse(&mut buf, &limits), Ok(None));
    // The line is consumed; the partial block stays in the buffer untouched.
    assert_eq!(&buf[..], b"01234");
    buf.extend_from_slice(b"56789\r");
    assert_eq!(p.parse(&mut buf, &limits), Ok(None));
    buf.extend_from_slice(b"\n");
    assert_eq!(
        p.parse(&mut buf, &limits),
        Ok(Some(store(StoreMode::Set, b"k", 0, 0, b"0123456789")))
    );
    assert_eq!(p.parse(&mut buf, &limits), Ok(None));
}

/// A pipeline of every command kind, with a binary block containing "\r\n", and some errors.
fn pipeline() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(b"set bin 1 0 6 noreply\r\n\r\n\x00\r\n\xff\r\n");
    v.extend_from_slice(b"get a b\r\ngets a\r\ngat 10 a\r\ngats 0 a b c\r\n");
    v.extend_from_slice(b"add k 2 3 1\nx\r\nreplace k 0 0 0\r\n\r\n");
    v.extend_from_slice(b"append k 0 0 2\r\nab\r\nprepend k 0 0 2\r\nyz\r\n");
    v.extend_from_slice(b"cas k 0 0 3 42\r\n\r\n\n\r\n");
    v.extend_from_slice(b"bogus line\r\n");
    v.extend_from_slice(b"delete k\r\ndelete k 0 noreply\r\n");
    v.extend_from_slice(b"incr n 5\r\ndecr n 1 noreply\r\ntouch k 9\r\n");
    v.extend_from_slice(b"set k 0 0 2\r\nabc\r\n");
    v.extend_from_slice(b"flush_all\r\nflush_all 5 noreply\r\nversion\r\nverbosity 1\r\n");
    v.extend_from_slice(b"stats\r\nstats items\r\n");
    v.extend_from_slice(b"mg k v T30 Oop\r\nms k 3 T0 F1\r\n\r\n\x01\r\nmd k q\r\n");
    v.extend_from_slice(b"ma k D2\r\nmn\r\nme k\r\nquit\r\n");
    v
}

fn chunked(input: &[u8], sizes: &[usize], limits: &Limits) -> Vec<Result<Command, ParseError>> {
    let mut p = Parser::new();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < input.len() {
        let end = (pos + sizes[i % sizes.len()].max(1)).min(input.len());
        i += 1;
        buf.extend_from_slice(&input[pos..end]);
        pos = end;
        loop {
            match p.parse(&mut buf, limits) {
                Ok(Some(c)) => out.push(Ok(c)),
                Ok(None) => break,
                Err(e) => {
                    let fatal = e.closes();
                    out.push(Err(e));
                    if fatal {
                        return out;
                    }
                }
            }
        }
    }
    assert!(buf.is_empty(), "unconsumed: {:?}", &buf[..]);
    out
}

#[test]
fn pipeline_at_every_split_point() {
    let input = pipeline();
    let limits = Limits::default();
    let whole = all(&input);
    // The bad chunk "abc\r\n" (declared 2) leaves "\n": an empty line, ERROR.
    assert_eq!(whole.len(), 31);
    assert_eq!(whole.iter().filter(|r| r.is_err()).count(), 3, "{whole:?}");
    for split in 0..=input.len() {
        let mut p = Parser::new();
        let mut buf = BytesMut::from(&input[..split]);
        let mut out = Vec::new();
        for part in [&input[split..], &[][..]] {
            loop {
                match p.parse(&mut buf, &limits) {
                    Ok(Some(c)) => out.push(Ok(c)),
                    Ok(None) => break,
                    Err(e) => out.push(Err(e)),
                }
            }
            buf.extend_from_slice(part);
        }
        assert_eq!(out, whole, "split at {split}");
    }
    assert_eq!(chunked(&input, &[1], &limits), whole, "byte by byte");
}

#[test]
fn long_line_is_scanned_once() {
    // 64 KiB of get line arriving a byte at a time must stay linear (the scan resumes).
    let keys: Vec<String> = (0..4000).map(|i| format!("k{i}")).collect();
    let line = format!("get {}\r\n", keys.join(" "));
    let out = chunked(line.as_bytes(), &[1], &Limits::default());
    assert!(matches!(&out[..], [Ok(Command::Get { keys, .. })] if keys.len() == 4000));
}

/// A time as a text command carries it: memcached's `int32_t` (`parse_exptime`).
fn text_time() -> impl Strategy<Value = i64> {
    any::<i32>().prop_map(i64::from)
}

fn arb_key() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(0x21u8..=0xff, 1..20)
        .prop_filter("no DEL", |k| !k.contains(&0x7f))
        .prop_map(Bytes::from)
}

fn arb_token() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(0x21u8..0x7f, 0..8).prop_map(Bytes::from)
}

fn arb_meta_flags() -> impl Strategy<Value = MetaFlags> {
    // The letters memcached takes whose tokens it does not read (any token round-trips).
    proptest::collection::btree_map(
        proptest::sample::select(b"cfhklqstuvILOP".to_vec()),
        arb_token(),
        0..6,
    )
    .prop_map(|m| MetaFlags {
        items: m.into_iter().collect(),
    })
}

fn arb_data() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(
        prop_oneof![Just(b'\r'), Just(b'\n'), Just(b' '), any::<u8>()],
        0..40,
    )
    .prop_map(Bytes::from)
}

fn arb_command() -> impl Strategy<Value = Command> {
    let mode = proptest::sample::select(vec![
        StoreMode::Set,
        StoreMode::Add,
        StoreMode::Replace,
        StoreMode::Append,
        StoreMode::Prepend,
        StoreMode::Cas,
    ]);
    prop_oneof![
        (
            mode,
            arb_key(),
            any::<u32>(),
            text_time(),
            arb_data(),
            any::<u64>(),
            any::<bool>()
        )
            .prop_map(|(mode, key, flags, exptime, data, cas, noreply)| {
                Command::Store {
                    mode,
                    key,
                    flags,
                    exptime,
                    data,
                    cas: if mode == StoreMode::Cas { cas } else { 0 },
                    noreply,
                }
            }),
        (
            proptest::collection::vec(arb_key(), 1..6),
            any::<bool>(),
            proptest::option::of(text_time())
        )
            .prop_map(|(keys, with_cas, touch)| Command::Get {
                keys,
                with_cas,
                touch
            }),
        (arb_key(), any::<bool>()).prop_map(|(key, noreply)| Command::Delete { key, noreply }),
        (arb_key(), any::<bool>(), any::<u64>(), any::<bool>()).prop_map(
            |(key, incr, delta, noreply)| Command::Arith {
                incr,
                key,
                delta,
                noreply
            }
        ),
        (arb_key(), text_time(), any::<bool>()).prop_map(|(key, exptime, noreply)| {
            Command::Touch {
                key,
                exptime,
                noreply,
            }
        }),
        (text_time(), any::<bool>())
            .prop_map(|(delay, noreply)| Command::FlushAll { delay, noreply }),
        Just(Command::Version),
        any::<bool>().prop_map(|noreply| Command::Verbosity { noreply }),
        proptest::option::of(arb_key()).prop_map(|arg| Command::Stats { arg }),
        Just(Command::Quit),
        (arb_key(), arb_meta_flags()).prop_map(|(key, flags)| Command::MetaGet { key, flags }),
        (arb_key(), arb_data(), arb_meta_flags()).prop_map(|(key, data, flags)| Command::MetaSet {
            key,
            data,
            flags
        }),
        (arb_key(), arb_meta_flags()).prop_map(|(key, flags)| Command::MetaDelete { key, flags }),
        (arb_key(), arb_meta_flags()).prop_map(|(key, flags)| Command::MetaArith { key, flags }),
        Just(Command::MetaNoop),
        (arb_key(), any::<bool>()).prop_map(|(key, b64)| Command::MetaDebug { key, b64 }),
    ]
}

/// A key equal to `noreply` as the last token changes the meaning, as in memcached; keep the
/// generated commands unambiguous.
fn unambiguous(c: &Command) -> bool {
    let noreply_key = |k: &Bytes| &k[..] == b"noreply";
    match c {
        Command::Delete { key, .. } => !noreply_key(key) && &key[..] != b"0",
        Command::Stats { arg: Some(a) } => !a.is_empty(),
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_with_random_chunks(
        cmds in proptest::collection::vec(arb_command().prop_filter("ambiguous", unambiguous), 1..12),
        sizes in proptest::collection::vec(1usize..64, 1..8),
    ) {
        let mut wire = BytesMut::new();
        for c in &cmds {
            c.encode(&mut wire);
        }
        let got = chunked(&wire, &sizes, &Limits::default());
        let want: Vec<_> = cmds.into_iter().map(Ok).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn random_bytes_never_panic(
        input in proptest::collection::vec(
            prop_oneof![
                Just(b'\r'), Just(b'\n'), Just(b' '), Just(b'0'), Just(b'9'), Just(b'-'),
                Just(b'a'), Just(b'k'), any::<u8>()
            ],
            0..512,
        ),
        prefix in proptest::sample::select(vec![
            &b""[..], b"set k 0 0 ", b"get ", b"ms k ", b"mg k ", b"cas k 0 0 ", b"delete k ",
            b"gat ", b"incr k ", b"flush_all ",
        ]),
        sizes in proptest::collection::vec(1usize..32, 1..6),
    ) {
        let limits = Limits {
            max_key_len: 8,
            max_line_len: 64,
            max_get_line_len: 96,
            max_item_size: 80,
            max_keys: 4,
        };
        let mut stream = prefix.to_vec();
        stream.extend_from_slice(&input);
        let mut p = Parser::new();
        let mut buf = BytesMut::new();
        let (mut pos, mut i) = (0, 0);
        'feed: while pos < stream.len() {
            let end = (pos + sizes[i % sizes.len()]).min(stream.len());
            i += 1;
            buf.extend_from_slice(&stream[pos..end]);
            pos = end;
            loop {
                let before = buf.len();
                match p.parse(&mut buf, &limits) {
                    Ok(Some(Command::Get { keys, .. })) => prop_assert!(keys.len() <= 4),
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) if e.closes() => break 'feed,
                    Err(_) => {}
                }
                prop_assert!(buf.len() <= before);
            }
            // Never more buffered than one (get) line plus one accepted block plus one chunk.
            prop_assert!(buf.len() <= 96 + 2 + 80 + 2 + 32);
        }
    }
}

#[test]
fn wanted_is_the_rest_of_a_data_block() {
    let limits = Limits::default();
    let mut p = Parser::new();
    let mut buf = BytesMut::from(&b"set k 0 0 10\r\n0123"[..]);
    assert!(p.parse(&mut buf, &limits).unwrap().is_none());
    // 10 bytes and the CRLF, 4 of them in.
    assert_eq!(p.wanted(buf.len()), 8);
    buf.extend_from_slice(b"456789\r\n");
    assert!(p.parse(&mut buf, &limits).unwrap().is_some());
    assert_eq!(p.wanted(buf.len()), 0);
    // Within a command line nothing is known.
    let mut buf = BytesMut::from(&b"get so"[..]);
    assert!(p.parse(&mut buf, &limits).unwrap().is_none());
    assert_eq!(p.wanted(buf.len()), 0);
    // A block refused as too large is discarded through small reads, not one sized to it.
    let mut p = Parser::new();
    let mut buf = BytesMut::from(&b"set k 0 0 2000000\r\nab"[..]);
    assert_eq!(p.parse(&mut buf, &limits).unwrap(), None, "swallowing");
    assert!(matches!(p.state, State::Swallow { .. }));
    assert_eq!(p.wanted(buf.len()), 0);
}
