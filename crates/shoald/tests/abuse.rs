//! Process-level tests of issue #10, "bounded under abuse": a real `shoald` driven by a
//! hostile client or started by a careless operator. Each test failed on the build before
//! the fix it covers.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use support::*;

/// A raw Memcached text connection.
struct Mc(TcpStream);

impl Mc {
    fn connect(addr: SocketAddr) -> Mc {
        let s = TcpStream::connect(addr).expect("connect to the memcached port");
        s.set_read_timeout(Some(IO_TIMEOUT)).expect("read timeout");
        Mc(s)
    }

    /// Sends `request` and reads exactly `expect.len()` bytes of reply, which must match.
    fn check(&mut self, request: &str, expect: &str) {
        self.0.write_all(request.as_bytes()).expect("write");
        let mut got = vec![0; expect.len()];
        self.0
            .read_exact(&mut got)
            .unwrap_or_else(|e| panic!("{request:?}: reading {expect:?}: {e}"));
        assert_eq!(
            String::from_utf8_lossy(&got),
            expect,
            "reply to {request:?}"
        );
    }
}

/// Item 0: with requirepass set, the Memcached port answers nothing but memcached's
/// `set`-based authentication until the client passes it; before, it served, wrote, flushed
/// and changed maxmemory for anyone.
#[test]
fn memcached_port_requires_the_password() {
    let daemon = Daemon::start(
        &[
            "--port",
            "0",
            "--requirepass",
            "s3cret",
            "--memcache-port",
            "0",
        ],
        &[],
    );
    let mc_addr = daemon.memcache_addr();
    let line = daemon.wait_line("requirepass is set");
    assert!(line.contains("memcached"), "{line}");

    let mut resp = daemon.connect();
    assert_eq!(resp.call(&["AUTH", "s3cret"]), Resp::ok());
    assert_eq!(resp.call(&["SET", "secretkey", "hidden"]), Resp::ok());
    let maxmemory = resp.config_get("maxmemory");

    let mut mc = Mc::connect(mc_addr);
    let unauthenticated = "CLIENT_ERROR unauthenticated\r\n";
    mc.check("get secretkey\r\n", unauthenticated);
    mc.check("flush_all\r\n", unauthenticated);
    mc.check("cache_memlimit 1\r\n", unauthenticated);
    mc.check("version\r\n", unauthenticated);
    // A set is an authentication attempt: its data is not stored.
    mc.check(
        "set secretkey 0 0 5\r\nowned\r\n",
        "CLIENT_ERROR bad authentication token format\r\n",
    );
    mc.check(
        "set a 0 0 13\r\ndefault wrong\r\n",
        "CLIENT_ERROR authentication failure\r\n",
    );
    mc.check(
        "set a 0 0 12\r\nother s3cret\r\n",
        "CLIENT_ERROR authentication failure\r\n",
    );
    assert_eq!(resp.call(&["GET", "secretkey"]), Resp::bulk("hidden"));
    assert_eq!(resp.config_get("maxmemory"), maxmemory);
    assert_eq!(resp.call(&["DBSIZE"]), Resp::Int(1));

    mc.check("set a 0 0 14\r\ndefault s3cret\r\n", "STORED\r\n");
    mc.check(
        "get secretkey\r\n",
        "VALUE secretkey 0 6\r\nhidden\r\nEND\r\n",
    );
    mc.check("set mckey 0 0 1\r\nx\r\n", "STORED\r\n");
    assert_eq!(resp.call(&["GET", "mckey"]), Resp::bulk("x"));

    // Authentication is per connection.
    Mc::connect(mc_addr).check("get secretkey\r\n", unauthenticated);
    // Junk without a newline closes the connection, as memcached does after 2 KiB.
    let mut junk = Mc::connect(mc_addr);
    junk.0.write_all(&[b'x'; 4096]).expect("write junk");
    let mut buf = [0u8; 16];
    assert_eq!(junk.0.read(&mut buf).expect("EOF, not a timeout"), 0);
}

/// Without requirepass the Memcached port stays open, as memcached without `-Y`.
#[test]
fn memcached_port_without_a_password_is_open() {
    let daemon = Daemon::start(&["--port", "0", "--memcache-port", "0"], &[]);
    let mut mc = Mc::connect(daemon.memcache_addr());
    mc.check("set k 0 0 1\r\nv\r\n", "STORED\r\n");
    mc.check("get k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n");
}
