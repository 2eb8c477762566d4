//! Shoal's Memcached port against a real memcached 1.6, byte for byte: the same requests to
//! both, the replies compared. memcached listens on a Unix socket in a temporary directory
//! (it cannot be asked for a free TCP port and tell it back); Shoal on 127.0.0.1:0.
//! `.ci/run` installs memcached; a missing one fails the test rather than skipping it.
//!
//! Each case runs on a fresh pair of connections after a `flush_all`; a text case ends with
//! `mn` (whose `MN` closes the replies), a binary one with a NOOP.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shoal_tests::TestNode;

const T: Duration = Duration::from_secs(10);

/// A memcached on a Unix socket, killed when dropped.
struct Memcached {
    child: Child,
    socket: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Memcached {
    fn start() -> Memcached {
        // One directory per server: the tests run in parallel.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("shoal-mc-diff-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let socket = dir.join("memcached.sock");
        let mut cmd = Command::new("memcached");
        cmd.arg("-s")
            .arg(&socket)
            .args(["-a", "0700", "-m", "64", "-U", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // memcached refuses to run as root unless told which user to be.
        if is_root() {
            cmd.args(["-u", "root"]);
        }
        let child = cmd
            .spawn()
            .expect("memcached (apt-get install memcached; scripts/test.sh does)");
        let m = Memcached { child, socket, dir };
        let end = Instant::now() + T;
        while UnixStream::connect(&m.socket).is_err() {
            assert!(
                Instant::now() < end,
                "memcached did not listen within {T:?}"
            );
            std::thread::yield_now();
        }
        m
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

/// Reads until `done` holds for what came, or fails after [`T`].
fn read_until<R: Read + ?Sized>(s: &mut R, what: &str, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let end = Instant::now() + T;
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while !done(&out) {
        assert!(
            Instant::now() < end,
            "{what}: no end of replies in {T:?}: {:?}",
            String::from_utf8_lossy(&out)
        );
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) => panic!("{what}: {e}"),
        }
    }
    out
}

/// True once `out` ends with the response to a binary NOOP.
fn ends_with_noop(out: &[u8]) -> bool {
    let mut at = 0;
    while out.len() >= at + 24 {
        let body = u32::from_be_bytes([out[at + 8], out[at + 9], out[at + 10], out[at + 11]]);
        let next = at + 24 + body as usize;
        if out[at + 1] == 0x0a && next == out.len() {
            return true;
        }
        at = next;
    }
    false
}

/// Sends `input` to both servers (after a flush) and returns their replies.
fn both(node: &TestNode, mc: &Memcached, input: &[u8], binary: bool) -> (Vec<u8>, Vec<u8>) {
    let mut tail = input.to_vec();
    if binary {
        tail.extend_from_slice(&shoal_tests::bin(0x0a, &[], &[], &[], 0));
    } else {
        tail.extend_from_slice(b"mn\r\n");
    }
    let done = |out: &[u8]| {
        if binary {
            ends_with_noop(out)
        } else {
            out.ends_with(b"MN\r\n")
        }
    };
    let connect = || {
        let shoal =
            std::net::TcpStream::connect(node.memcache_addr.expect("memcache port")).unwrap();
        shoal
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let memcached = UnixStream::connect(&mc.socket).unwrap();
        memcached
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        (shoal, memcached)
    };
    // On connections of their own: memcached keeps a connection to the protocol of its
    // first byte.
    let (mut shoal, mut memcached) = connect();
    for s in [&mut shoal as &mut dyn ReadWrite, &mut memcached] {
        s.write_all(b"flush_all\r\nmn\r\n").unwrap();
        read_until(s, "flush_all", |o| o.ends_with(b"MN\r\n"));
    }
    let (mut shoal, mut memcached) = connect();
    // Written from another thread: a large request must not wait for its replies to be read.
    let (a, b) = std::thread::scope(|scope| {
        let mut w1 = shoal.try_clone().unwrap();
        let mut w2 = memcached.try_clone().unwrap();
        let t1 = &tail;
        scope.spawn(move || w1.write_all(t1).unwrap());
        scope.spawn(move || w2.write_all(t1).unwrap());
        (
            read_until(&mut shoal, "shoal", done),
            read_until(&mut memcached, "memcached", done),
        )
    });
    (a, b)
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.len() > 600 {
        format!("{}...({} bytes)", &s[..600], s.len())
    } else {
        s.into_owned()
    }
}

/// Binary responses with their headers' CAS zeroed (a stored item's CAS differs between
/// the servers).
fn strip_cas(mut b: Vec<u8>) -> Vec<u8> {
    let mut at = 0;
    while b.len() >= at + 24 {
        b[at + 16..at + 24].fill(0);
        let body = u32::from_be_bytes([b[at + 8], b[at + 9], b[at + 10], b[at + 11]]);
        at += 24 + body as usize;
    }
    b
}

#[track_caller]
fn same(node: &TestNode, mc: &Memcached, name: &str, input: &[u8], binary: bool) {
    let (shoal, memcached) = both(node, mc, input, binary);
    assert!(
        shoal == memcached,
        "{name}: Shoal answered\n{}\nmemcached answered\n{}",
        show(&shoal),
        show(&memcached)
    );
}

#[test]
fn the_memcached_port_answers_as_memcached_does() {
    let node = TestNode::with(|c| c.memcache_port = Some(0));
    let mc = Memcached::start();
    let mut text: Vec<(&str, Vec<u8>)> = vec![
        (
            "storage and retrieval",
            b"set a 5 0 2\r\nhi\r\nadd a 0 0 1\r\nx\r\nreplace b 0 0 1\r\nx\r\nappend a 0 0 1\r\n!\r\n\
              prepend a 0 0 1\r\n<\r\nget a b a\r\ndelete a\r\ndelete a\r\ndelete a 0\r\nget a\r\n"
                .to_vec(),
        ),
        (
            // (A value a counter makes shorter is read back only through Shoal's own tests:
            // memcached pads it with spaces, Shoal does not; see the README.)
            "counters and their overflow",
            b"set n 0 0 2\r\n99\r\nincr n 1\r\nget n\r\ndecr n 1\r\ndecr n 1000\r\n\
              set m 0 0 20\r\n18446744073709551615\r\nincr m 1\r\nset s 0 0 3\r\n007\r\n\
              incr s 1\r\nset t 0 0 1\r\nx\r\nincr t 1\r\nincr nope 1\r\n"
                .to_vec(),
        ),
        (
            // Without memcached's -A, shutdown is refused, whatever follows it.
            "shutdown not enabled",
            b"shutdown\r\nshutdown graceful\r\nshutdown x y\r\n".to_vec(),
        ),
        // (Not `set k abc 0 1 noreply\r\na\r\n`: Shoal swallows the data block of a line it
        // refuses, where memcached runs it as a command; see shoal-memcache's docs.)
        (
            // Shoal's one class as memcached's: automove is taken (a level past 2 is an
            // unknown command there), a reassign names a class that is not there or the same
            // one twice; fresh memcached has no spare pages.
            "slabs",
            b"slabs automove 1\r\nslabs automove 0 noreply\r\nslabs automove 3\r\n\
              slabs automove x\r\nslabs automove ratio 0.8\r\nslabs automove ratio\r\n\
              slabs reassign 1 1\r\nslabs reassign 1 70\r\nslabs reassign -1 1\r\n\
              slabs reassign a 1\r\nslabs reassign 1\r\nslabs foo\r\nslabs\r\n\
              slabs automove 5 noreply\r\nslabs automove x noreply\r\n"
                .to_vec(),
        ),
        (
            // The LRU's and the crawler's knobs: checked and answered as memcached's (Shoal
            // has neither). Not compared: a valid crawl, whose answer depends on whether
            // memcached's crawler thread is still busy (BUSY), and disable, which stops it
            // in its own time; `Lru::answer`'s unit test covers those.
            "lru and lru_crawler",
            b"lru mode flat\r\nlru mode segmented\r\nlru mode x\r\nlru mode flat extra\r\n\
              lru mode\r\nlru tune 10 10 0.1 2\r\nlru tune 50 50 0.1 2\r\nlru tune 10 10 0 2\r\n\
              lru tune 10 10 x 2\r\nlru tune -1 10 1 2\r\nlru tune 10 10 0.1\r\n\
              lru temp_ttl 5\r\nlru temp_ttl -5\r\nlru temp_ttl x\r\nlru temp_ttl\r\nlru\r\n\
              lru foo\r\nlru mode flat noreply\r\nlru mode x noreply\r\n\
              lru tune 50 50 0.1 2 noreply\r\nlru x noreply\r\n\
              lru_crawler crawl 64\r\nlru_crawler crawl 0\r\nlru_crawler crawl x\r\n\
              lru_crawler crawl 1,x\r\nlru_crawler crawl ,\r\nlru_crawler sleep 100\r\n\
              lru_crawler sleep 1000001\r\n\
              lru_crawler sleep x\r\nlru_crawler tocrawl 10\r\nlru_crawler tocrawl -1\r\n\
              lru_crawler sleep 5 noreply\r\nlru_crawler enable x\r\nlru_crawler\r\n\
              lru_crawler foo\r\nlru_crawler enable\r\n\
              mg nokey v\r\nlru_crawler metadump all\r\n"
                .to_vec(),
        ),
        (
            "noreply silences errors too",
            b"delete k 5 noreply\r\nflush_all abc noreply\r\nincr k abc noreply\r\n\
              set k 0 0 3 noreply\r\nhello\r\n"
                .to_vec(),
        ),
        (
            "meta modes are upper case",
            b"ms k 2 Ms\r\nhi\r\nms k 2 MS\r\nhi\r\nms k 2 M\r\nhi\r\nms k 2 MA\r\n!!\r\nmg k v\r\n\
              set c 0 0 2\r\n10\r\nma c Mi v\r\nma c MD v\r\nma c M+ v\r\n\
              ma v N0 J5 T100 t v\r\n"
                .to_vec(),
        ),
        (
            // memcached checks the flags token by token (the first bad one decides the error),
            // and md and ma answer any flag they cannot read alike.
            "meta flag errors",
            b"mg foo m o o o o\r\nms k 2 m o o\r\nhi\r\nmg foo v v\r\nmd foo x x\r\n\
              md foo q q\r\nma foo z\r\nma foo Dx\r\nmd foo Tx\r\nma foo J-1\r\n\
              ma foo Mincr\r\nmd foo b\r\nmd foo C\r\nma foo T99999999999\r\n\
              mg foo Tx v\r\nma foo N5 J3 v\r\nmd Zm9v b\r\n"
                .to_vec(),
        ),
        (
            // ms answers one error, its flag pre-parse's (N, T, R, C, J, D, in line order)
            // before F's; an unreadable length is a bad command line and its data a command;
            // `ms` alone is no command; twenty tokens are too many (a helper's raw requests:
            // Shoal answered two errors for `Fx Cx`).
            "meta set errors",
            b"ms foo 3 Fx\r\nbar\r\nms foo 3 Fx Cx\r\nbar\r\nms foo 3 Nx F1\r\nbar\r\n\
              ms foo 3 Rx\r\nbar\r\nms foo 3 Jx\r\nbar\r\nms foo 3 Dx\r\nbar\r\n\
              ms foo 3 Fx MZ\r\nbar\r\nms foo abc\r\nbar\r\nms foo -1\r\nms\r\nms foo\r\n\
              ms k 2 Jx Dx\r\nab\r\nms k 2 Nx Jx\r\nab\r\nms k 2 Cx Dx\r\nab\r\n\
              ms k 2 Fx MZZ\r\nab\r\nmg k Cx\r\nmg k Jx\r\nmg k Nx Dx\r\nmg k MZZ v\r\n\
              mg foo v k f s t c h l O1 u T30 N30 R30 E1 q b x y\r\n\
              mg foo v k f s t c h l O1 u T30 N30 R30 E1 q b x\r\n\
              md foo q q q q q q q q q q q q q q q q q q\r\n\
              ma foo q q q q q q q q q q q q q q q q q q\r\n"
                .to_vec(),
        ),
        (
            // ms's modes and a CAS: add takes none, an append or prepend to a missing key
            // is not stored; ma returns t, c, k and O only, k and O on a miss, and a counter
            // N creates answers despite q (a helper's raw requests against memcached 1.6.18).
            "meta set modes with a cas, meta arithmetic's return flags",
            b"set e 0 0 1\r\nx\r\nms e 1 MR C1\r\ny\r\nms e 1 MS C1\r\nz\r\nms e 1 MA C1\r\nz\r\n\
              ms e 1 MP C1\r\nz\r\nms e 1 ME C1\r\nz\r\nms nf 1 ME C1\r\nz\r\nmg nf v\r\n\
              ms nf2 1 MA C1\r\nz\r\nms nf2 1 MP C1\r\nz\r\nms nf3 1 MR C1\r\nz\r\n\
              ms nf4 1 MS C1\r\nz\r\nms nf5 1 MA N0 C1\r\nz\r\nmg e v\r\n\
              ms s 2\r\nab\r\nms s 2 MA C1 I\r\ncd\r\nmg s v\r\nms s 2 MP C1 I\r\ncd\r\n\
              mg s v\r\n\
              set cnt 0 100 2\r\n10\r\nma cnt f s h l t k O1\r\nma cnt C1 k O2 t\r\n\
              ma nope k O3 t\r\nma nope N30 q\r\nma nope2 N30 q v k\r\nma cnt q\r\n\
              ma cnt q v\r\nma nope3 q\r\nma cnt C1 q\r\n"
                .to_vec(),
        ),
        (
            // A count leaves a stale item stale, its win not yet handed out (ma and incr).
            "a count keeps an item stale",
            b"set sc 0 0 1\r\n5\r\nmd sc I\r\nma sc v\r\nmg sc v\r\nmg sc v\r\n\
              set sd 0 0 1\r\n5\r\nmd sd I\r\nincr sd 2\r\nmg sd v\r\n"
                .to_vec(),
        ),
        (
            // The meta protocol's stale-while-revalidate: `md I` marks stale (X), the first
            // reader wins the recache (W), the others see Z; a vivified miss and a TTL under
            // `R` win once; a `ms I` with an older CAS stores a stale value; a plain set ends
            // it all. ms returns only c (0 when nothing was stored), k and O.
            "stale-while-revalidate",
            b"set inv 0 0 3\r\nmoo\r\nmd inv I T30\r\nmg inv s v\r\nmg inv s v\r\n\
              ms inv 1 I T90 C1\r\nf\r\nmg inv s v\r\nms inv 3 T90\r\nnew\r\nmg inv s v\r\n\
              mg nw v N30\r\nmg nw s v N30\r\nms r1 2 T10\r\nab\r\nmg r1 v R30\r\n\
              mg r1 v R30\r\nmg r1 v R5\r\nms r2 2 T100\r\nab\r\nmg r2 v R30\r\n\
              md nope I\r\nset e 0 0 1\r\n1\r\nms e 2 c C99 k Oab s t f\r\nhi\r\n\
              ms e2 2 c C5 k\r\nhi\r\nms e 2 k s t f T50 F3 O1\r\nhi\r\n"
                .to_vec(),
        ),
        (
            "touch and gat",
            b"set k 0 0 1\r\nx\r\ntouch k 100\r\ntouch nope 100\r\ngat 100 k nope\r\n".to_vec(),
        ),
        (
            "gat with no key",
            b"gat 10\r\ngats 10 \r\ngat -1\r\ngat abc\r\ngat\r\n".to_vec(),
        ),
        (
            // (A hit's line holds times and a CAS, which differ: memcache.rs checks one.)
            "me with a base64 key",
            b"me Zm9v b\r\nme !!!! b\r\nme Zm9v\r\n".to_vec(),
        ),
        (
            // memcached reads a text time into 32 bits: libmemcached's -1 ("do not keep", as
            // pylibmc sends Django's timeout 0) is 4294967295 on the wire, -1 again there.
            "times wrap to 32 bits",
            b"set a 0 4294967295 1\r\nx\r\nget a\r\nset b 0 2147483648 1\r\nx\r\nget b\r\n\
              set w 0 -4294967295 1\r\nx\r\nget w\r\nset e 0 0 1\r\nx\r\n\
              touch e 4294967295\r\nget e\r\nset g 0 0 1\r\nx\r\ngat 4294967295 g\r\nget g\r\n\
              ms m 1 T4294967295\r\nx\r\nmg m v\r\nset t 0 0 1\r\nx\r\nmg t T4294967295 v\r\n\
              mg t v\r\nmg z T-1 v\r\nset y 0 0 1\r\nx\r\nmg y T-1 v\r\nmg y v\r\n\
              set r 0 0 1\r\nx\r\nmg r T-1 R30 v\r\nmg r v\r\nmg nv N-1 v\r\nmg nv v\r\n\
              set tb 0 5\t 1\r\nx\r\ntouch tb \t5\r\ngat \t5 tb\r\nflush_all 4294967295 noreply\r\n\
              get tb\r\n"
                .to_vec(),
        ),
        (
            // `h`: read before this request? `u` leaves the item's state as it was.
            "hit before",
            b"ms hf 3 T100\r\nhit\r\nmg hf s t h\r\nmg hf s t h\r\nms hf 3 T100\r\nnew\r\n\
              mg hf h\r\nms nu 3 T100\r\nhit\r\nmg nu s t u h\r\nmg nu s t h\r\n\
              mg nu s t u h\r\nset g 0 0 1\r\nx\r\nget g\r\nmg g h\r\n\
              set t 0 0 1\r\nx\r\ntouch t 100\r\nmg t h\r\n"
                .to_vec(),
        ),
    ];
    // An item at memcached's size limit, counted with its key and header: 1 MiB of data is
    // too large; what fits cannot grow past it by append.
    let mut big = b"set big 0 0 1048576\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'v', 1_048_576));
    big.extend_from_slice(b"\r\nget big\r\nset big 0 0 1000000\r\n");
    big.extend(std::iter::repeat_n(b'v', 1_000_000));
    big.extend_from_slice(b"\r\nappend big 0 0 100000\r\n");
    big.extend(std::iter::repeat_n(b'w', 100_000));
    big.extend_from_slice(b"\r\nmg big s\r\nset big 0 0 2000000 noreply\r\n");
    big.extend(std::iter::repeat_n(b'v', 2_000_000));
    big.extend_from_slice(b"\r\n");
    text.push(("the item size limit", big));
    // A set or ms too large takes the old value away (memcached unlinks it: a client told
    // its write failed must not read the value it meant to replace); add, append keep it.
    let mut stale = Vec::new();
    for (write, key) in [
        ("set k1 0 0 2000000", "k1"),
        ("add k2 0 0 2000000", "k2"),
        ("append k3 0 0 2000000", "k3"),
        ("ms k4 2000000", "k4"),
        ("ms azU= 2000000 b", "k5"),
        ("set k6 0 0 2000000 noreply", "k6"),
        // A base64 key with a space, and one that does not decode: nothing but the error.
        ("ms YSBi 2000000 b", "k7"),
        ("ms !!!! 2000000 b", "k8"),
    ] {
        stale.extend_from_slice(format!("set {key} 0 0 3\r\nold\r\n{write}\r\n").as_bytes());
        stale.extend(std::iter::repeat_n(b'v', 2_000_000));
        stale.extend_from_slice(format!("\r\nget {key}\r\n").as_bytes());
    }
    text.push(("a write too large and the old value", stale));
    // A multi-get far longer than other lines may be (pymemcache's get_many sends one line).
    let mut many = b"set key-0000 0 0 1\r\na\r\nset key-1999 0 0 1\r\nb\r\nget".to_vec();
    for i in 0..2000 {
        many.extend_from_slice(format!(" key-{i:04}{}", "x".repeat(60)).as_bytes());
        if i == 0 || i == 1999 {
            many.extend_from_slice(format!(" key-{i:04}").as_bytes());
        }
    }
    many.extend_from_slice(b"\r\n");
    assert!(many.len() > 128 * 1024);
    text.push(("a multi-get line of 130 KB", many));
    for (name, input) in &text {
        same(&node, &mc, name, input, false);
    }

    // Binary: a value too large is answered and skipped, and the connection goes on.
    let mut too_large = shoal_tests::bin(0x01, &[0; 8], b"k", &vec![b'v'; 1_100_000], 0);
    too_large.extend(shoal_tests::bin(0x00, &[], b"k", &[], 0));
    too_large.extend(shoal_tests::bin(0x01, &[0; 8], b"k", b"ok", 0));
    too_large.extend(shoal_tests::bin(0x00, &[], b"k", &[], 0));
    // INCREMENT of a value that is no number.
    let arith = [
        &1u64.to_be_bytes()[..],
        &0u64.to_be_bytes(),
        &0u32.to_be_bytes(),
    ]
    .concat();
    too_large.extend(shoal_tests::bin(0x05, &arith, b"k", &[], 0));
    // A SET too large of a key no text command can name answers nothing more.
    too_large.extend(shoal_tests::bin(
        0x01,
        &[0; 8],
        b"a b",
        &vec![b'v'; 2_000_000],
        0,
    ));
    // A SET too large takes the old value away (far over the limit, and just over it).
    for size in [1_100_000, 1_048_576] {
        too_large.extend(shoal_tests::bin(0x01, &[0; 8], b"s", b"old", 0));
        too_large.extend(shoal_tests::bin(0x01, &[0; 8], b"s", &vec![b'v'; size], 0));
        too_large.extend(shoal_tests::bin(0x00, &[], b"s", &[], 0));
    }
    let (shoal, memcached) = both(&node, &mc, &too_large, true);
    // The CAS of the stored item differs: compare all but the successful SET's header.
    assert_eq!(
        strip_cas(shoal),
        strip_cas(memcached),
        "a binary SET too large, then GET, SET, GET, INCREMENT, SETs too large and NOOP"
    );
}

/// `stats slabs` names memcached's fields in its order, empty and with items (Shoal's items
/// are all in class 1), and counts the items and the sets in them as memcached does, so
/// `memcached-tool`'s display shows them.
#[test]
fn stats_slabs_names_memcacheds_fields() {
    let node = TestNode::with(|c| c.memcache_port = Some(0));
    let mc = Memcached::start();
    let fields = |out: &[u8]| -> Vec<(String, String)> {
        String::from_utf8_lossy(out)
            .lines()
            .filter_map(|l| l.strip_prefix("STAT "))
            .map(|l| {
                let (name, value) = l.split_once(' ').unwrap_or((l, ""));
                (name.to_string(), value.to_string())
            })
            .collect()
    };
    let names = |f: &[(String, String)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let (shoal, memcached) = both(&node, &mc, b"stats slabs\r\n", false);
    assert_eq!(names(&fields(&shoal)), names(&fields(&memcached)));
    assert_eq!(
        fields(&shoal),
        vec![
            ("active_slabs".into(), "0".into()),
            ("total_malloced".into(), "0".into())
        ]
    );
    let input = b"set a 0 0 1\r\nx\r\nset b 0 0 2\r\nyy\r\nget a\r\nstats slabs\r\n";
    let (shoal, memcached) = both(&node, &mc, input, false);
    let (shoal, memcached) = (fields(&shoal), fields(&memcached));
    assert_eq!(names(&shoal), names(&memcached));
    for name in ["1:used_chunks", "1:cmd_set", "1:get_hits", "active_slabs"] {
        let value = |f: &[(String, String)]| f.iter().find(|(n, _)| n == name).cloned();
        assert_eq!(value(&shoal), value(&memcached), "{name}");
    }
}

/// `stats` gives memcached's general fields, in memcached's order: all but `libevent` (where
/// Shoal names its own version) and the LRU crawler's and maintainer's, which memcached also
/// leaves out when those are off (Shoal has neither).
#[test]
fn stats_names_memcacheds_fields_in_its_order() {
    let node = TestNode::with(|c| c.memcache_port = Some(0));
    let mc = Memcached::start();
    let (shoal, memcached) = both(&node, &mc, b"stats\r\n", false);
    let names = |out: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(out)
            .lines()
            .filter_map(|l| l.strip_prefix("STAT "))
            .map(|l| l.split(' ').next().unwrap_or_default().to_string())
            .collect()
    };
    let crawler = [
        "lru_crawler_running",
        "lru_crawler_starts",
        "lru_maintainer_juggles",
        "evicted_active",
        "moves_to_cold",
        "moves_to_warm",
        "moves_within_lru",
        "direct_reclaims",
        "lru_bumps_dropped",
    ];
    let want: Vec<String> = names(&memcached)
        .into_iter()
        .filter(|n| !crawler.contains(&n.as_str()))
        .map(|n| {
            if n == "libevent" {
                "shoal_version".into()
            } else {
                n
            }
        })
        .collect();
    assert_eq!(names(&shoal), want);
    assert_eq!(
        want.len(),
        83,
        "memcached 1.6.18 without its crawler has 83"
    );
    // Item sizes are not tracked, as memcached's default (`track_sizes no`); Shoal cannot
    // turn it on. (memcached 1.6.18 answers sizes_enable and sizes_disable without END;
    // Shoal ends them, so a client reading to END does not wait for ever.)
    same(&node, &mc, "stats sizes", b"stats sizes\r\n", false);
    let input = b"stats sizes_enable\r\nstats sizes_disable\r\nstats settings\r\n";
    let (shoal, _) = both(&node, &mc, input, false);
    let text = String::from_utf8_lossy(&shoal);
    let want = "STAT sizes_status error\r\nSTAT sizes_error not_supported\r\nEND\r\nSTAT sizes_status disabled\r\nEND\r\n";
    assert!(text.starts_with(want), "{text}");
    assert!(text.contains("STAT track_sizes no\r\n"), "{text}");
}

/// `stats detail on|off|dump` counts gets (and their hits), sets and deletes per key prefix
/// as memcached does, over the text and the binary protocol; `stats reset` forgets them, and
/// `stats settings` shows the switch.
#[test]
fn stats_detail_counts_prefixes_as_memcached_does() {
    let node = TestNode::with(|c| c.memcache_port = Some(0));
    let mc = Memcached::start();
    same(
        &node,
        &mc,
        "stats detail over text",
        b"stats detail dump\r\nstats detail\r\nstats detail bogus\r\nstats detail on\r\n\
          set foo:1 0 0 1\r\nx\r\nadd foo:1 0 0 1\r\ny\r\nset plain 0 0 1\r\nz\r\n\
          get foo:1 foo:2 plain\r\ngat 0 foo:1\r\ndelete foo:3\r\ndelete foo:1\r\n\
          incr foo:4 1\r\ntouch foo:1 10\r\nstats detail dump\r\nstats reset\r\n\
          stats detail dump\r\nget foo:1\r\nstats detail off\r\nget foo:1\r\nset foo:2 0 0 1\r\nx\r\n\
          stats detail dump\r\n",
        false,
    );
    // A set refused as too large counts as that set, and the removal of its old value as
    // nothing.
    let mut too_large =
        b"stats reset\r\nstats detail on\r\nset big:1 0 0 1\r\nx\r\nset big:1 0 0 1100000\r\n"
            .to_vec();
    too_large.extend(vec![b'v'; 1_100_000]);
    too_large.extend_from_slice(b"\r\nget big:1\r\nstats detail dump\r\nstats detail off\r\n");
    same(
        &node,
        &mc,
        "a set too large under stats detail",
        &too_large,
        false,
    );
    let detail = |out: &[u8]| {
        String::from_utf8_lossy(out)
            .lines()
            .find(|l| l.starts_with("STAT detail_enabled "))
            .map(str::to_string)
    };
    let (shoal, memcached) = both(&node, &mc, b"stats detail on\r\nstats settings\r\n", false);
    assert_eq!(detail(&shoal), Some("STAT detail_enabled yes".into()));
    assert_eq!(detail(&shoal), detail(&memcached));

    // Binary: STAT `detail on` and `detail off` answer the end of the stats alone, `detail
    // dump` one stat named `detailed` holding the text dump. SET's CAS differs: compared
    // without the headers' CAS.
    let stat = |group: &[u8]| shoal_tests::bin(0x10, &[], group, &[], 0);
    let mut input = stat(b"reset");
    input.extend(stat(b"detail on"));
    input.extend(shoal_tests::bin(0x01, &[0; 8], b"bin:1", b"v", 0));
    input.extend(shoal_tests::bin(0x00, &[], b"bin:1", &[], 0));
    input.extend(shoal_tests::bin(0x00, &[], b"bin:2", &[], 0));
    input.extend(shoal_tests::bin(0x04, &[], b"bin:2", &[], 0));
    input.extend(stat(b"detail dump"));
    input.extend(stat(b"detail off"));
    input.extend(stat(b"detail bogus"));
    input.extend(stat(b"detail"));
    // Groups only the text protocol has are unknown to a binary STAT.
    input.extend(stat(b"conns"));
    input.extend(stat(b"extstore"));
    let (shoal, memcached) = both(&node, &mc, &input, true);
    let dump = b"PREFIX bin get 2 hit 1 set 1 del 1\r\nEND\r\n";
    assert!(
        shoal.windows(dump.len()).any(|w| w == dump),
        "{}",
        show(&shoal)
    );
    assert_eq!(
        strip_cas(shoal),
        strip_cas(memcached),
        "binary STAT detail on, SET, GETs, DELETE, STAT detail dump, off, bogus"
    );

    // Shoal also counts the meta commands (its binary protocol runs through them; memcached
    // 1.6 leaves `mg`, `ms`, `md` out).
    let input = b"stats reset\r\nstats detail on\r\nms m:1 1\r\nx\r\nmg m:1 v\r\nmg m:2 v\r\n\
                  md m:1\r\nstats detail dump\r\nstats detail off\r\n";
    let (shoal, _) = both(&node, &mc, input, false);
    let want = b"PREFIX m get 2 hit 1 set 1 del 1\r\nEND\r\n";
    assert!(
        shoal.windows(want.len()).any(|w| w == want),
        "{}",
        show(&shoal)
    );
}

/// A binary client's multi-get (pylibmc's, libmemcached's): a pipeline of GET, GETQ, GETK
/// and GETKQ over hits and misses, keys any bytes, ended by a NOOP, longer than one
/// look-ahead of 16 requests; answered byte for byte as memcached answers it (but the CAS),
/// and counted in `cmd_get`, `get_hits` and `get_misses` as memcached counts it.
#[test]
fn binary_get_pipelines_answer_as_memcached_does() {
    let node = TestNode::with(|c| c.memcache_port = Some(0));
    let mc = Memcached::start();
    let key = |i: usize| match i % 7 {
        3 => format!("with space {i}").into_bytes(),
        5 => format!("ctl\x01{i}").into_bytes(),
        _ => format!("key:{i}").into_bytes(),
    };
    let mut input = Vec::new();
    for i in (0..60).filter(|i| i % 3 != 0) {
        let flags = (i as u32 * 7919).to_be_bytes();
        let extras = [&flags[..], &0u32.to_be_bytes()].concat();
        // SETQ: answered only when it fails.
        let value = format!("value {i}").repeat(i % 5 + 1);
        input.extend(shoal_tests::bin(
            0x11,
            &extras,
            &key(i),
            value.as_bytes(),
            0,
        ));
    }
    for i in 0..60 {
        let opcode = [0x00, 0x09, 0x0c, 0x0d][i % 4];
        input.extend(shoal_tests::bin(opcode, &[], &key(i), &[], 0));
    }
    let (shoal, memcached) = both(&node, &mc, &input, true);
    assert_eq!(
        strip_cas(shoal.clone()),
        strip_cas(memcached),
        "binary gets: Shoal answered\n{}",
        show(&shoal)
    );
    let (shoal, memcached) = both(&node, &mc, b"stats\r\n", false);
    let stat = |out: &[u8], name: &str| -> Option<u64> {
        let text = String::from_utf8_lossy(out).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("STAT {name} ")).map(str::to_owned))?
            .parse()
            .ok()
    };
    for name in ["cmd_get", "get_hits", "get_misses"] {
        let theirs = stat(&memcached, name);
        assert!(theirs.is_some(), "memcached's stats have {name}");
        assert_eq!(stat(&shoal, name), theirs, "{name}");
    }
}

/// Shoal's `memcache-unixsocket` against memcached's `-s`: the same requests on both
/// sockets, text and binary, the same replies; the socket's permissions (`-a` 0700 by
/// default) and `stats conns`' lines for the socket and its client (fds and seconds masked).
#[test]
fn the_unix_socket_answers_as_memcached_does() {
    use std::os::unix::fs::PermissionsExt;
    let mc = Memcached::start();
    let path = mc.dir.join("shoal.sock");
    let node = TestNode::with(|c| c.memcache_unixsocket = path.to_str().unwrap().into());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), mode(&mc.socket));
    let ask = |socket: &std::path::Path, input: &[u8], done: &dyn Fn(&[u8]) -> bool| {
        let mut s = UnixStream::connect(socket).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        s.write_all(input).unwrap();
        read_until(&mut s, "reply", done)
    };
    let text = b"flush_all\r\nset a 0 0 1\r\nb\r\nget a\r\nmn\r\n";
    let ends_mn = |o: &[u8]| o.ends_with(b"MN\r\n");
    assert_eq!(
        show(&ask(&path, text, &ends_mn)),
        show(&ask(&mc.socket, text, &ends_mn))
    );
    let mut binary = shoal_tests::bin(0x00, &[], b"a", &[], 0);
    binary.extend_from_slice(&shoal_tests::bin(0x0a, &[], &[], &[], 0));
    assert_eq!(
        strip_cas(ask(&path, &binary, &ends_with_noop)),
        strip_cas(ask(&mc.socket, &binary, &ends_with_noop))
    );
    // The lines of `stats conns` about the socket: its listener (memcached cuts a long
    // path short there: a prefix of the path counts as the path), and the asking client.
    let conns = |socket: &std::path::Path| {
        let out = ask(socket, b"stats conns\r\n", &|o| o.ends_with(b"END\r\n"));
        let text = String::from_utf8(out).unwrap();
        let unix = format!("unix:{}", socket.to_str().unwrap());
        let lines: Vec<(i32, String, String)> = text
            .lines()
            .filter_map(|l| {
                let (fd, rest) = l.strip_prefix("STAT ")?.split_once(':')?;
                let (field, value) = rest.split_once(' ')?;
                let value = if value.len() > 5 && unix.starts_with(value) {
                    "unix:<path>".to_string()
                } else {
                    value.to_string()
                };
                Some((fd.parse().ok()?, field.to_string(), value))
            })
            .collect();
        // The listener and the asking connection (in `conn_parse_cmd`): an earlier
        // connection of this test may still be listed while its close is on its way.
        let state_of = |fd: i32| {
            lines
                .iter()
                .find(|(f, field, _)| *f == fd && field == "state")
                .map(|(_, _, v)| v.clone())
        };
        let mut on_socket: Vec<i32> = lines
            .iter()
            .filter(|(_, _, v)| v == "unix:<path>")
            .map(|(fd, _, _)| *fd)
            .filter(|&fd| {
                matches!(
                    state_of(fd).as_deref(),
                    Some("conn_listening" | "conn_parse_cmd")
                )
            })
            .collect();
        // The listener first, then the asking connection, whatever their numbers (a new
        // connection may take a number below the listener's that a closed one left).
        on_socket.sort_by_key(|&fd| state_of(fd).as_deref() != Some("conn_listening"));
        lines
            .into_iter()
            .filter(|(fd, field, _)| on_socket.contains(fd) && field != "secs_since_last_cmd")
            .map(|(fd, field, value)| {
                let nth = on_socket.iter().position(|&f| f == fd).unwrap();
                (nth, format!("{nth}:{field} {value}"))
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|(_, line)| line)
            .collect::<Vec<_>>()
    };
    // `stats settings`' lines for the socket (`-s`) and its permissions (`-a`).
    let settings = |socket: &std::path::Path| {
        let out = ask(socket, b"stats settings\r\n", &|o| o.ends_with(b"END\r\n"));
        let name = socket.to_str().unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("STAT domain_socket ") || l.starts_with("STAT umask "))
            .map(|l| l.replace(name, "<path>"))
            .collect::<Vec<_>>()
    };
    let want = settings(&mc.socket);
    assert_eq!(want.len(), 2, "{want:?}");
    assert_eq!(settings(&path), want);
    let want = conns(&mc.socket);
    assert!(want.len() >= 4, "{want:?}");
    assert_eq!(conns(&path), want);
    drop(node);
    assert!(!path.exists());
}
