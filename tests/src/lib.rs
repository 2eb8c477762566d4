//! Test support: a real Shoal node on 127.0.0.1:0 in its own runtime, plus client helpers.
//!
//! The node is the same code `shoald` runs (`shoal_node::start`), with real TCP; tests talk to
//! it only through sockets (the `redis` crate, `redis-cli`, raw `TcpStream`s).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use shoal_node::{NodeConfig, RunningNode};

/// A node serving on a free loopback port; shut down when dropped.
pub struct TestNode {
    pub addr: SocketAddr,
    /// The Memcached listener, when the config set `memcache_port`.
    pub memcache_addr: Option<SocketAddr>,
    /// The inter-node listener (in a cluster).
    pub cluster_addr: Option<SocketAddr>,
    /// The TLS listener, when the config set `tls_port`.
    pub tls_addr: Option<SocketAddr>,
    runtime: tokio::runtime::Runtime,
    node: Option<RunningNode>,
}

impl TestNode {
    pub fn start() -> TestNode {
        TestNode::with(|_| {})
    }

    /// Starts a node with the default settings changed by `f` (port is always 0).
    pub fn with(f: impl FnOnce(&mut NodeConfig)) -> TestNode {
        let mut config = NodeConfig::default();
        f(&mut config);
        config.bind = "127.0.0.1".into();
        config.port = 0;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("test runtime starts");
        let node = runtime
            .block_on(shoal_node::start(config, None))
            .expect("node starts");
        TestNode {
            addr: node.local_addr,
            memcache_addr: node.memcache_addr,
            cluster_addr: node.cluster_addr,
            tls_addr: node.tls_addr,
            runtime,
            node: Some(node),
        }
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// A RESP2 connection from the `redis` crate.
    pub fn client(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("redis client connects")
    }

    /// A RESP3 connection (the client sends HELLO 3).
    pub fn client_resp3(&self) -> redis::Connection {
        redis::Client::open(format!("{}?protocol=resp3", self.url()))
            .and_then(|c| c.get_connection())
            .expect("redis client connects with RESP3")
    }

    /// A raw socket with a read timeout, for protocol-level tests.
    pub fn raw(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).expect("raw connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// The node's engine, for checks a client could also make through INFO.
    pub fn engine(&self) -> &shoal_node::Engine {
        &self.node.as_ref().expect("node running").node.engine
    }

    /// Stops the node and waits until every connection closed.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(node) = self.node.take() {
            node.shutdown();
            self.runtime.block_on(node.wait());
        }
    }
}

impl Drop for TestNode {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One INFO field as a string, read over the connection.
pub fn info_field(con: &mut redis::Connection, field: &str) -> String {
    let info: String = redis::cmd("INFO")
        .arg("everything")
        .query(con)
        .expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("INFO has no field {field}"))
        .trim()
        .to_string()
}

/// Reads from `s` until `expected` bytes have arrived or the deadline passes; returns them.
pub fn read_exact_by(s: &mut TcpStream, expected: usize, deadline: Duration) -> Vec<u8> {
    let end = Instant::now() + deadline;
    let mut out = Vec::with_capacity(expected);
    let mut buf = [0u8; 65536];
    while out.len() < expected && Instant::now() < end {
        let _ = s.set_read_timeout(Some(
            end.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        ));
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    out
}

/// Reads until the peer closes the connection (or the deadline); returns what arrived and
/// whether EOF was seen.
pub fn read_to_close(s: &mut TcpStream, deadline: Duration) -> (Vec<u8>, bool) {
    let end = Instant::now() + deadline;
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while Instant::now() < end {
        let _ = s.set_read_timeout(Some(
            end.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        ));
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(_) => break,
        }
    }
    (out, false)
}

/// Writes all of `bytes` to the node.
pub fn send(s: &mut TcpStream, bytes: &[u8]) {
    s.write_all(bytes).expect("write to node");
}

/// Polls `cond` until it holds or `deadline` passes; true if it held.
pub fn wait_until(deadline: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One member of a [`TestCluster`]: its own runtime, so it can be crashed on its own.
pub struct ClusterMember {
    pub name: String,
    pub addr: SocketAddr,
    pub cluster_addr: SocketAddr,
    /// The Redis Cluster client port (MOVED, CROSSSLOT).
    pub cluster_client_addr: SocketAddr,
    /// The Memcached port.
    pub memcache_addr: SocketAddr,
    /// The metrics and health-check port.
    pub metrics_addr: SocketAddr,
    /// The TLS client port, when the config set `tls_port`.
    pub tls_addr: Option<SocketAddr>,
    runtime: Option<tokio::runtime::Runtime>,
    node: Option<RunningNode>,
}

impl ClusterMember {
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("redis client connects")
    }

    pub fn client_resp3(&self) -> redis::Connection {
        redis::Client::open(format!("{}?protocol=resp3", self.url()))
            .and_then(|c| c.get_connection())
            .expect("redis client connects with RESP3")
    }

    pub fn is_running(&self) -> bool {
        self.node.is_some()
    }
}

/// Nodes of one cluster on 127.0.0.1, each in its own runtime, every listener bound on port
/// 0 first so that each node's `cluster-nodes` can name the others' real ports.
pub struct TestCluster {
    pub members: Vec<ClusterMember>,
}

/// The secret test clusters share.
pub const TEST_SECRET: &str = "test-cluster-secret";

impl TestCluster {
    /// `n` nodes named n0, n1, ... with `replicas = 1`, changed by `f`.
    pub fn start(n: usize, f: impl Fn(&mut NodeConfig)) -> TestCluster {
        let mut bound = Vec::new();
        for _ in 0..n {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("test runtime starts");
            let (resp, cluster, cluster_client, memcache, metrics, tls) = runtime.block_on(async {
                let bind = || shoal_net::TcpListener::bind("127.0.0.1:0");
                let (resp, cluster, cluster_client) = (bind().await, bind().await, bind().await);
                let (memcache, metrics, tls) = (bind().await, bind().await, bind().await);
                (
                    resp.expect("bind"),
                    cluster.expect("bind"),
                    cluster_client.expect("bind"),
                    memcache.expect("bind"),
                    metrics.expect("bind"),
                    tls.expect("bind"),
                )
            });
            bound.push((
                runtime,
                resp,
                cluster,
                cluster_client,
                memcache,
                metrics,
                tls,
            ));
        }
        let port = |l: &shoal_net::TcpListener| l.local_addr().unwrap().port();
        let nodes: Vec<String> = bound
            .iter()
            .enumerate()
            .map(|(i, (_, r, c, cc, _, _, _))| {
                format!("n{i}=127.0.0.1:{}@{}+{}", port(r), port(c), port(cc))
            })
            .collect();
        let mut members = Vec::new();
        for (i, (runtime, resp, cluster, cluster_client, memcache, metrics, tls)) in
            bound.into_iter().enumerate()
        {
            let mut config = NodeConfig {
                bind: "127.0.0.1".into(),
                port: 0,
                node_name: format!("n{i}"),
                cluster_secret: TEST_SECRET.into(),
                cluster_nodes: nodes.clone(),
                replicas: 1,
                ..NodeConfig::default()
            };
            f(&mut config);
            let addr = resp.local_addr().unwrap();
            let cluster_addr = cluster.local_addr().unwrap();
            let cluster_client_addr = cluster_client.local_addr().unwrap();
            let memcache_addr = memcache.local_addr().unwrap();
            let metrics_addr = metrics.local_addr().unwrap();
            // The TLS listener is handed over only when the settings ask for one.
            let tls = config.tls_port.map(|_| tls);
            let tls_addr = tls.as_ref().map(|l| l.local_addr().unwrap());
            let node = runtime
                .block_on(shoal_node::start_with(
                    config,
                    None,
                    shoal_node::Listeners {
                        resp,
                        memcache: Some(memcache),
                        cluster: Some(cluster),
                        gossip: None,
                        cluster_client: Some(cluster_client),
                        metrics: Some(metrics),
                        tls,
                    },
                ))
                .expect("cluster node starts");
            members.push(ClusterMember {
                name: format!("n{i}"),
                addr,
                cluster_addr,
                cluster_client_addr,
                memcache_addr,
                metrics_addr,
                tls_addr,
                runtime: Some(runtime),
                node: Some(node),
            });
        }
        TestCluster { members }
    }

    /// Crashes member `i`: its runtime is dropped at once, every socket closes without a
    /// goodbye and nothing is flushed, as when the process dies.
    pub fn crash(&mut self, i: usize) {
        let m = &mut self.members[i];
        m.node.take();
        if let Some(rt) = m.runtime.take() {
            rt.shutdown_background();
        }
    }

    /// The index of the member that owns `key`'s slot (CLUSTER KEYSLOT and CLUSTER NODES
    /// asked of a running member, the owner's id matched with each member's CLUSTER MYID).
    pub fn owner_index(&self, key: &str) -> usize {
        let ask = self.live().next().expect("a member runs");
        let mut con = ask.client();
        let slot: i64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut con)
            .unwrap();
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con).unwrap();
        let owner = nodes
            .lines()
            .find_map(|line| {
                let f: Vec<&str> = line.split(' ').collect();
                f[8..]
                    .iter()
                    .any(|r| {
                        let (lo, hi) = r.split_once('-').unwrap_or((r, r));
                        (lo.parse::<i64>().unwrap()..=hi.parse::<i64>().unwrap()).contains(&slot)
                    })
                    .then(|| f[0].to_string())
            })
            .unwrap_or_else(|| panic!("slot {slot} has no owner in {nodes}"));
        self.members
            .iter()
            .position(|m| {
                m.is_running() && {
                    let id: String = redis::cmd("CLUSTER")
                        .arg("MYID")
                        .query(&mut m.client())
                        .unwrap();
                    id == owner
                }
            })
            .expect("the owner is a running member")
    }

    /// Members still running.
    pub fn live(&self) -> impl Iterator<Item = &ClusterMember> {
        self.members.iter().filter(|m| m.is_running())
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        for m in &mut self.members {
            if let (Some(node), Some(rt)) = (m.node.take(), m.runtime.take()) {
                node.shutdown();
                rt.block_on(node.wait());
            }
        }
    }
}

/// Runs libmemcached's `memccapable` against the Memcached port at `addr` with `mode` (`-a`
/// for the text protocol) and fails unless every check passed. A missing memccapable fails
/// too (`scripts/test.sh` installs libmemcached-tools).
#[track_caller]
pub fn memccapable(addr: SocketAddr, mode: &str) {
    let out = std::process::Command::new("memccapable")
        .args([
            "-h",
            &addr.ip().to_string(),
            "-p",
            &addr.port().to_string(),
            mode,
        ])
        .output()
        .expect("memccapable must be installed (apt-get install libmemcached-tools)");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "memccapable {mode} failed on {addr}:\n{text}"
    );
    assert!(!text.contains("[FAIL]"), "{text}");
    assert!(text.contains("[pass]"), "{text}");
}

/// Runs the Python client script `tests/clients/<script>` with `args` and fails unless it
/// exits 0 and prints `ok` (the scripts' packages are installed by `scripts/test.sh`).
#[track_caller]
pub fn python_client(script: &str, args: &[&str]) {
    run_client("python3", script, args);
}

/// Runs `tests/clients/<script>` with Node.js (the clients `scripts/test.sh` installs into
/// `tests/clients/node_modules`); it must exit 0 and print exactly `ok`.
#[track_caller]
pub fn node_client(script: &str, args: &[&str]) {
    run_client("node", script, args);
}

/// Runs `program tests/clients/<script> args...`: it must exit 0 and print exactly `ok`.
#[track_caller]
fn run_client(program: &str, script: &str, args: &[&str]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    let out = std::process::Command::new(program)
        .arg(script)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} must be installed: {e}"));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{text}");
    assert_eq!(text.trim_end(), "ok", "{script}");
}

/// A memcached binary-protocol request frame (opaque 0x01020304).
pub fn bin(opcode: u8, extras: &[u8], key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
    let mut r = vec![0x80, opcode];
    r.extend_from_slice(&(key.len() as u16).to_be_bytes());
    r.push(extras.len() as u8);
    r.extend_from_slice(&[0, 0, 0]);
    r.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
    r.extend_from_slice(&[1, 2, 3, 4]);
    r.extend_from_slice(&cas.to_be_bytes());
    r.extend_from_slice(extras);
    r.extend_from_slice(key);
    r.extend_from_slice(value);
    r
}

/// One binary response: (opcode, status, cas, extras, key, value).
pub type BinResponse = (u8, u16, u64, Vec<u8>, Vec<u8>, Vec<u8>);

/// Reads one memcached binary-protocol response (which must echo opaque 0x01020304).
pub fn read_bin(s: &mut std::net::TcpStream) -> BinResponse {
    use std::io::Read;
    let mut h = [0u8; 24];
    s.read_exact(&mut h).expect("a whole response header");
    assert_eq!(h[0], 0x81, "a binary response");
    assert_eq!(&h[12..16], &[1, 2, 3, 4], "the opaque echoed");
    let body = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    let mut b = vec![0u8; body];
    s.read_exact(&mut b).expect("the whole response body");
    let (key_len, extras_len) = (
        usize::from(u16::from_be_bytes([h[2], h[3]])),
        usize::from(h[4]),
    );
    (
        h[1],
        u16::from_be_bytes([h[6], h[7]]),
        u64::from_be_bytes(h[16..24].try_into().unwrap()),
        b[..extras_len].to_vec(),
        b[extras_len..extras_len + key_len].to_vec(),
        b[extras_len + key_len..].to_vec(),
    )
}

/// Reads a Memcached reply that ends with `END\r\n` (a get or `stats`), whole; fails when
/// nothing more arrives within `deadline` (no endless wait on a reply that never ends).
#[track_caller]
pub fn read_until_end(s: &mut TcpStream, deadline: Duration) -> String {
    let mut buf = Vec::new();
    while !buf.ends_with(b"END\r\n") {
        let chunk = read_exact_by(s, 1, deadline);
        assert!(!chunk.is_empty(), "the reply stopped before END: {buf:?}");
        buf.extend_from_slice(&chunk);
    }
    String::from_utf8(buf).expect("a text reply")
}

/// A CA and certificates signed by it, made with the `openssl` command in a directory of
/// their own (removed when dropped), for TLS tests.
pub struct TestCerts {
    pub dir: std::path::PathBuf,
}

impl TestCerts {
    /// A new CA named `ca` in a fresh directory, with a certificate `node` (for 127.0.0.1
    /// and localhost) and `client` signed by it.
    pub fn make(tag: &str) -> TestCerts {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("shoal-tls-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("certificate directory");
        let certs = TestCerts { dir };
        certs.ca("ca");
        certs.signed("node", "ca");
        certs.signed("client", "ca");
        certs
    }

    /// The path of `name.crt` or `name.key` (as a string for settings and command lines).
    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).to_string_lossy().into_owned()
    }

    /// A self-signed CA `name.crt`/`name.key`.
    pub fn ca(&self, name: &str) {
        self.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN=Shoal test {name}"),
            "-keyout",
            &self.path(&format!("{name}.key")),
            "-out",
            &self.path(&format!("{name}.crt")),
        ]);
    }

    /// A certificate `name.crt`/`name.key` for 127.0.0.1 and localhost, signed by `ca`.
    pub fn signed(&self, name: &str, ca: &str) {
        let csr = self.path(&format!("{name}.csr"));
        self.openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &self.path(&format!("{name}.key")),
            "-out",
            &csr,
        ]);
        let ext = self.path(&format!("{name}.ext"));
        std::fs::write(&ext, "subjectAltName=DNS:localhost,IP:127.0.0.1\n").expect("write ext");
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &self.path(&format!("{ca}.crt")),
            "-CAkey",
            &self.path(&format!("{ca}.key")),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &self.path(&format!("{name}.crt")),
        ]);
    }

    fn openssl(&self, args: &[&str]) {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl must be installed (apt-get install openssl)");
        assert!(
            out.status.success(),
            "openssl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Sets `config` to serve TLS with `node.crt`, checking clients against `ca.crt`.
    pub fn configure(&self, config: &mut NodeConfig) {
        config.tls_cert_file = self.path("node.crt");
        config.tls_key_file = self.path("node.key");
        config.tls_ca_cert_file = self.path("ca.crt");
    }
}

impl Drop for TestCerts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
