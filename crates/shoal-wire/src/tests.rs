//! Client, server and handshake over real TCP on 127.0.0.1:0.
//!
//! Time is real here (paused time would jump while sockets wait), so timing assertions
//! compare against bounds many times larger than the work takes.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use shoal_net::{TcpListener, TcpStream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::frame::{Challenge, Hello, MAC_LEN, NONCE_LEN};
use crate::handshake::{client_handshake, server_handshake};
use crate::*;

const SECRET: &[u8] = b"correct horse battery staple 0123456789";
const HANDSHAKE: Duration = Duration::from_secs(5);

fn auth(cluster: &str, secret: &[u8], node: &str) -> AuthConfig {
    AuthConfig::new(cluster, secret, node)
}

fn good_auth(node: &str) -> AuthConfig {
    auth("prod", SECRET, node)
}

/// Generous timeouts, so only the test's own bound decides.
fn config() -> PeerConfig {
    PeerConfig {
        request_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(5),
        handshake_timeout: HANDSHAKE,
        ..PeerConfig::default()
    }
}

/// The future type of test handlers that answer `Later`.
type BoxResponse = Pin<Box<dyn Future<Output = Response> + Send>>;

/// Answers at once with epoch + 1 and the body unchanged.
struct Echo;

impl PeerHandler for Echo {
    type Fut = std::future::Ready<Response>;
    type Conn = ();

    fn connect(&self, _peer_node: &str) {}

    fn handle(&self, _conn: &mut (), epoch: u64, body: Bytes) -> Handled<Self::Fut> {
        Handled::Ready(Response {
            epoch: epoch + 1,
            body,
        })
    }
}

/// Reports each arrival, then answers `Later`, once it gets a permit of `gate` (none at
/// first), with the request echoed.
struct Gated {
    arrived: mpsc::UnboundedSender<u64>,
    gate: Arc<Semaphore>,
}

impl PeerHandler for Gated {
    type Fut = BoxResponse;
    type Conn = ();

    fn connect(&self, _peer_node: &str) {}

    fn handle(&self, _conn: &mut (), epoch: u64, body: Bytes) -> Handled<Self::Fut> {
        let _ = self.arrived.send(epoch);
        let gate = Arc::clone(&self.gate);
        Handled::Later(Box::pin(async move {
            let _permit = gate.acquire().await;
            Response { epoch, body }
        }))
    }
}

fn gated() -> (Arc<Gated>, mpsc::UnboundedReceiver<u64>, Arc<Semaphore>) {
    let (arrived, rx) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let handler = Arc::new(Gated {
        arrived,
        gate: Arc::clone(&gate),
    });
    (handler, rx, gate)
}

/// Panics in `handle` itself, or with `in_future` in the `Later` future it returns.
struct Panics {
    in_future: bool,
}

impl PeerHandler for Panics {
    type Fut = BoxResponse;
    type Conn = ();

    fn connect(&self, _peer_node: &str) {}

    fn handle(&self, _conn: &mut (), _epoch: u64, _body: Bytes) -> Handled<Self::Fut> {
        if self.in_future {
            Handled::Later(Box::pin(async { panic!("handler bug, deferred") }))
        } else {
            panic!("handler bug");
        }
    }
}

/// Records the body of every request in the order `handle` sees them. Answers every third
/// request `Later`, after a few yields, so answers to requests sent after it can overtake
/// it: the order of handling is what counts, not the order of answers.
#[derive(Default)]
struct Ledger {
    seen: Mutex<Vec<Bytes>>,
}

impl PeerHandler for Ledger {
    type Fut = BoxResponse;
    type Conn = ();

    fn connect(&self, _peer_node: &str) {}

    fn handle(&self, _conn: &mut (), epoch: u64, body: Bytes) -> Handled<Self::Fut> {
        let n = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(body.clone());
            seen.len()
        };
        let response = Response { epoch, body };
        if n % 3 == 0 {
            Handled::Later(Box::pin(async move {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                response
            }))
        } else {
            Handled::Ready(response)
        }
    }
}

/// Polls `futures` together from the calling task, giving each its first poll in list order
/// (as `join_all` does), and returns their outputs in list order.
async fn all_in_order<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (fut, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|out| out.expect("every future completed"))
        .collect()
}

/// A listener serving every accepted connection with `serve_peer`.
struct TestServer {
    addr: SocketAddr,
    shutdown: CancellationToken,
    conns: Arc<Mutex<Vec<AbortHandle>>>,
    results: mpsc::UnboundedReceiver<Result<(), ServeError>>,
    accepted: Arc<AtomicUsize>,
    acceptor: AbortHandle,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.kill_connections();
    }
}

impl TestServer {
    async fn start<H: PeerHandler>(
        auth: AuthConfig,
        handler: Arc<H>,
        config: ServerConfig,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let conns = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (results_tx, results) = mpsc::unbounded_channel();
        let acceptor = {
            let (shutdown, conns, accepted) =
                (shutdown.clone(), Arc::clone(&conns), Arc::clone(&accepted));
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let (auth, handler, config, token, tx) = (
                        auth.clone(),
                        Arc::clone(&handler),
                        config.clone(),
                        shutdown.clone(),
                        results_tx.clone(),
                    );
                    let conn = tokio::spawn(async move {
                        let r = serve_peer(stream, &auth, handler, &config, token).await;
                        let _ = tx.send(r);
                    });
                    conns.lock().unwrap().push(conn.abort_handle());
                }
            })
            .abort_handle()
        };
        TestServer {
            addr,
            shutdown,
            conns,
            results,
            accepted,
            acceptor,
        }
    }

    /// Drops every served connection at once, as a crashed server would (the listener stays).
    fn kill_connections(&self) {
        for conn in self.conns.lock().unwrap().drain(..) {
            conn.abort();
        }
    }

    async fn next_result(&mut self) -> Result<(), ServeError> {
        within(Duration::from_secs(10), self.results.recv())
            .await
            .expect("serve_peer returned")
    }
}

/// Awaits `fut`, failing the test if it takes longer than `limit`.
async fn within<F: std::future::Future>(limit: Duration, fut: F) -> F::Output {
    tokio::time::timeout(limit, fut)
        .await
        .expect("condition not met before the deadline")
}

/// Waits until `n` requests reached the gated handler.
async fn arrivals(rx: &mut mpsc::UnboundedReceiver<u64>, n: usize) {
    within(Duration::from_secs(10), async {
        for _ in 0..n {
            rx.recv().await.expect("handler alive");
        }
    })
    .await;
}

#[tokio::test]
async fn request_round_trip_after_handshake() {
    let server = TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    let r = client
        .request(41, Bytes::from_static(b"*1\r\n$4\r\nPING\r\n"))
        .await;
    assert_eq!(
        r,
        Ok(Response {
            epoch: 42,
            body: Bytes::from_static(b"*1\r\n$4\r\nPING\r\n")
        })
    );
    // Empty bodies are fine, and the connection is reused.
    assert_eq!(
        client.request(0, Bytes::new()).await.unwrap().body,
        Bytes::new()
    );
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    assert_eq!(client.in_flight(), 0);
}

/// A thread that chose a link (`use_link`, the daemon's worker threads, each on its own
/// current-thread runtime) gets its own connection to the peer; every other thread shares
/// link 0, and the client's figures count every link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_thread_that_chose_a_link_gets_its_own_connection() {
    let server = TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    // The only test that calls `set_links`: the clients of the others, on threads that
    // choose no link, use link 0 whatever it sets.
    set_links(4);
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    assert_eq!(
        client
            .request(1, Bytes::from_static(b"x"))
            .await
            .unwrap()
            .epoch,
        2
    );
    let on_link = |link: Option<usize>| {
        let client = client.clone();
        std::thread::spawn(move || {
            if let Some(link) = link {
                use_link(link);
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                for epoch in 10..13 {
                    let r = client.request(epoch, Bytes::from_static(b"y")).await;
                    assert_eq!(r.unwrap().epoch, epoch + 1);
                }
            });
        })
    };
    // Each thread's runtime ends with the thread: no two share a link (their link's tasks
    // would end with the first).
    for t in [on_link(Some(1)), on_link(Some(2)), on_link(None)] {
        t.join().expect("the thread's requests were answered");
    }
    // Links 0 (this thread and the one that chose none), 1 and 2.
    assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
    assert_eq!(client.responses(), 10);
    assert_eq!(client.peer_epoch(), 13);
    assert_eq!(client.in_flight(), 0);
}

#[tokio::test]
async fn handshake_reports_both_node_names() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        server_handshake(&mut s, &good_auth("server-node"), &"test", HANDSHAKE).await
    });
    let mut s = TcpStream::connect(addr).await.unwrap();
    let client = client_handshake(&mut s, &good_auth("client-node"), &"test", HANDSHAKE)
        .await
        .unwrap();
    assert_eq!(client.peer_node, "server-node");
    assert!(client.read_buf.is_empty());
    assert_eq!(server.await.unwrap().unwrap().peer_node, "client-node");
}

#[tokio::test]
async fn wrong_secret_is_refused_on_both_sides() {
    let mut server =
        TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let client = PeerClient::new(server.addr, auth("prod", b"another secret", "a"), config());
    let r = client.request(1, Bytes::from_static(b"x")).await;
    assert_eq!(r, Err(WireError::Refused(HandshakeError::WrongSecret)));
    // The client detected the server's bad MAC first and told it so.
    assert_eq!(
        server.next_result().await,
        Err(ServeError::Handshake(HandshakeError::WrongSecret))
    );
}

#[tokio::test]
async fn probe_tells_accepted_refused_and_unreachable_apart() {
    let server = TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    assert_eq!(
        crate::probe(server.addr, &good_auth("a"), HANDSHAKE).await,
        Ok("b".to_owned())
    );
    assert_eq!(
        crate::probe(
            server.addr,
            &auth("prod", b"another secret", "a"),
            HANDSHAKE
        )
        .await,
        Err(HandshakeError::WrongSecret)
    );
    assert_eq!(
        crate::probe(
            server.addr,
            &auth("staging", b"0123456789abcdef", "a"),
            HANDSHAKE
        )
        .await,
        Err(HandshakeError::ClusterMismatch)
    );
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = closed.local_addr().unwrap();
    drop(closed);
    assert_eq!(
        crate::probe(gone, &good_auth("a"), HANDSHAKE).await,
        Err(HandshakeError::Io(std::io::ErrorKind::ConnectionRefused))
    );
}

/// A client that skips verifying the server and sends a made-up proof is refused by the
/// server with a Refused frame, then the connection is closed.
#[tokio::test]
async fn server_refuses_a_bad_proof() {
    let mut server =
        TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    let hello = Frame::Hello(Hello {
        cluster: "prod".into(),
        client_nonce: [7; NONCE_LEN],
        node: "impostor".into(),
    });
    write_frame(&mut s, &hello).await;
    assert!(matches!(
        read_frame(&mut s).await,
        Some(Frame::Challenge(_))
    ));
    write_frame(&mut s, &Frame::Proof { mac: [0; MAC_LEN] }).await;
    match read_frame(&mut s).await {
        Some(Frame::Refused { reason, .. }) => assert_eq!(reason, RefuseReason::WrongSecret),
        other => panic!("expected Refused, got {other:?}"),
    }
    assert_eq!(read_frame(&mut s).await, None, "closed after refusing");
    assert_eq!(
        server.next_result().await,
        Err(ServeError::Handshake(HandshakeError::WrongSecret))
    );
}

/// A server that does not hold the secret cannot produce the right MAC: the client refuses it
/// before sending a proof of its own.
#[tokio::test]
async fn client_refuses_a_server_with_a_bad_mac() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let impostor = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        assert!(matches!(read_frame(&mut s).await, Some(Frame::Hello(_))));
        let challenge = Frame::Challenge(Challenge {
            server_nonce: [1; NONCE_LEN],
            mac: [2; MAC_LEN],
            node: "impostor".into(),
        });
        write_frame(&mut s, &challenge).await;
        (read_frame(&mut s).await, read_frame(&mut s).await)
    });
    let client = PeerClient::new(addr, good_auth("a"), config());
    let r = client.request(1, Bytes::from_static(b"x")).await;
    assert_eq!(r, Err(WireError::Refused(HandshakeError::WrongSecret)));
    let (refusal, after) = impostor.await.unwrap();
    match refusal {
        Some(Frame::Refused { reason, .. }) => assert_eq!(reason, RefuseReason::WrongSecret),
        other => panic!("expected Refused, got {other:?}"),
    }
    assert_eq!(after, None, "no proof sent, connection closed");
}

#[tokio::test]
async fn cluster_mismatch_is_refused() {
    let mut server =
        TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let client = PeerClient::new(server.addr, auth("staging", SECRET, "a"), config());
    let r = client.request(1, Bytes::from_static(b"x")).await;
    assert_eq!(r, Err(WireError::Refused(HandshakeError::ClusterMismatch)));
    assert_eq!(
        server.next_result().await,
        Err(ServeError::Handshake(HandshakeError::ClusterMismatch))
    );
}

#[tokio::test]
async fn version_mismatch_is_refused_by_the_server() {
    let mut server =
        TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    let mut hello = BytesMut::new();
    Frame::Hello(Hello {
        cluster: "prod".into(),
        client_nonce: [7; NONCE_LEN],
        node: "future".into(),
    })
    .encode(&mut hello)
    .unwrap();
    hello[2] = PROTOCOL_VERSION + 1;
    s.write_all(&hello).await.unwrap();
    match read_frame(&mut s).await {
        Some(Frame::Refused { reason, message }) => {
            assert_eq!(reason, RefuseReason::VersionMismatch);
            assert!(message.contains("version 1"), "{message}");
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    assert_eq!(read_frame(&mut s).await, None);
    assert_eq!(
        server.next_result().await,
        Err(ServeError::Handshake(HandshakeError::VersionMismatch))
    );
}

#[tokio::test]
async fn version_mismatch_is_refused_by_the_client() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let _ = read_frame(&mut s).await;
        let mut reply = BytesMut::new();
        Frame::Welcome.encode(&mut reply).unwrap();
        reply[2] = PROTOCOL_VERSION + 1;
        s.write_all(&reply).await.unwrap();
        let _ = read_frame(&mut s).await;
    });
    let client = PeerClient::new(addr, good_auth("a"), config());
    let r = client.request(1, Bytes::from_static(b"x")).await;
    assert_eq!(r, Err(WireError::Refused(HandshakeError::VersionMismatch)));
}

#[tokio::test]
async fn garbage_on_the_peer_port_fails_the_handshake() {
    let mut server =
        TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    assert_eq!(
        server.next_result().await,
        Err(ServeError::Handshake(HandshakeError::Frame(
            FrameError::BadMagic(*b"*1")
        )))
    );
}

/// Records every byte read and written through it.
struct Recorder {
    inner: TcpStream,
    log: Vec<u8>,
}

impl AsyncRead for Recorder {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let new = buf.filled()[before..].to_vec();
        self.log.extend_from_slice(&new);
        r
    }
}

impl AsyncWrite for Recorder {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.log.extend_from_slice(&buf[..n]);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn the_secret_never_crosses_the_wire() {
    let server = TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let mut s = Recorder {
        inner: TcpStream::connect(server.addr).await.unwrap(),
        log: Vec::new(),
    };
    client_handshake(&mut s, &good_auth("a"), &"test", HANDSHAKE)
        .await
        .unwrap();
    let log = s.log;
    // Hello + Challenge + Proof + Welcome, both directions.
    assert!(
        log.len() > 4 * HEADER_LEN + 2 * NONCE_LEN + 2 * MAC_LEN,
        "{}",
        log.len()
    );
    let key = blake3::derive_key("shoal cluster secret v1", SECRET);
    for needle in [SECRET, &key[..], &SECRET[..8], &key[..8]] {
        assert!(
            !log.windows(needle.len()).any(|w| w == needle),
            "secret material on the wire"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_requests_on_one_connection() {
    const N: u64 = 10_000;
    let server_config = ServerConfig {
        max_in_flight: N as usize,
        ..ServerConfig::default()
    };
    let server = TestServer::start(good_auth("b"), Arc::new(Echo), server_config).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_in_flight: N as usize,
            ..config()
        },
    );
    let mut tasks = JoinSet::new();
    for i in 0..N {
        let client = client.clone();
        tasks.spawn(async move {
            let body = Bytes::from(format!(
                "request number {i} {}",
                "x".repeat((i % 97) as usize)
            ));
            let r = client.request(i, body.clone()).await.unwrap();
            assert_eq!(r.epoch, i + 1, "response matched to request {i}");
            assert_eq!(r.body, body, "body of request {i}");
            i
        });
    }
    let mut seen = vec![false; N as usize];
    while let Some(done) = tasks.join_next().await {
        seen[done.unwrap() as usize] = true;
    }
    assert!(seen.iter().all(|&s| s));
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1, "one connection");
    assert_eq!(client.in_flight(), 0);
}

/// Requests one task sends without awaiting each are handled in the order sent, whether
/// they are answered at once or later: what forwarding relies on, so that a client's
/// pipelined `SET k v` then `GET k` reads its own write at the owner. On a multi-thread
/// runtime, where a task per request would let them race.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_task_s_requests_are_handled_in_the_order_sent() {
    const N: usize = 1000;
    let ledger = Arc::new(Ledger::default());
    let server =
        TestServer::start(good_auth("b"), Arc::clone(&ledger), ServerConfig::default()).await;
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    // The first round starts before the connection is up (queued for the owner, which may
    // publish the connection partway), the second on the connection (sent directly).
    let sent: Vec<Bytes> = (0..2 * N)
        .map(|i| Bytes::from(format!("request {i}")))
        .collect();
    for round in sent.chunks(N) {
        let requests = round.iter().map(|body| client.request(7, body.clone()));
        let responses = all_in_order(requests.collect()).await;
        for (body, response) in round.iter().zip(responses) {
            assert_eq!(response.unwrap().body, *body);
        }
    }
    let seen = ledger.seen.lock().unwrap();
    assert_eq!(seen.len(), 2 * N);
    if let Some(i) = (0..2 * N).find(|&i| seen[i] != sent[i]) {
        panic!("handled {:?} where {:?} was sent", seen[i], sent[i]);
    }
}

/// Polls a growing list of futures from one task, each first polled in list order.
struct InOrder<'a, T> {
    futures: Vec<Pin<Box<dyn Future<Output = T> + Send + 'a>>>,
    outputs: Vec<Option<T>>,
}

impl<'a, T> InOrder<'a, T> {
    fn new() -> Self {
        InOrder {
            futures: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Adds a future; its first poll comes with the next `poll_once`, after every future
    /// added before it has had its first.
    fn push(&mut self, fut: impl Future<Output = T> + Send + 'a) {
        self.futures.push(Box::pin(fut));
        self.outputs.push(None);
    }

    /// Polls every unfinished future once, in list order.
    async fn poll_once(&mut self) {
        std::future::poll_fn(|cx| {
            for (fut, out) in self.futures.iter_mut().zip(self.outputs.iter_mut()) {
                if out.is_none() {
                    if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                        *out = Some(v);
                    }
                }
            }
            Poll::Ready(())
        })
        .await
    }

    fn is_done(&self, i: usize) -> bool {
        self.outputs[i].is_some()
    }

    /// Polls until every future has finished; their outputs in list order.
    async fn finish(mut self) -> Vec<T> {
        std::future::poll_fn(|cx| {
            let mut done = true;
            for (fut, out) in self.futures.iter_mut().zip(self.outputs.iter_mut()) {
                if out.is_none() {
                    match fut.as_mut().poll(cx) {
                        Poll::Ready(v) => *out = Some(v),
                        Poll::Pending => done = false,
                    }
                }
            }
            if done {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        self.outputs
            .into_iter()
            .map(|out| out.expect("every future completed"))
            .collect()
    }
}

/// One task's requests keep their order across the switch from queueing for the owner
/// (while the handshake is held up) to going straight to the connection (once a request has
/// been answered, the connection is published), and while the owner sends the queue
/// (requests sent one by one, yielding in between, until the first answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_task_s_requests_keep_their_order_when_the_connection_comes_up() {
    const QUEUED: usize = 200;
    const DIRECT: usize = 200;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let ledger = Arc::new(Ledger::default());
    let (open, opened) = tokio::sync::oneshot::channel::<()>();
    let server = {
        let ledger = Arc::clone(&ledger);
        tokio::spawn(async move {
            // The client's connect completes in the backlog; its handshake waits for this.
            opened.await.unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            let config = ServerConfig::default();
            let token = CancellationToken::new();
            serve_peer(stream, &good_auth("b"), ledger, &config, token).await
        })
    };
    let client = PeerClient::new(addr, good_auth("a"), config());
    let body = |i: usize| Bytes::from(format!("request {i}"));
    let mut requests = InOrder::new();
    for i in 0..QUEUED {
        requests.push(client.request(7, body(i)));
    }
    requests.poll_once().await;
    assert_eq!(client.in_flight(), QUEUED);
    open.send(()).unwrap();
    let mut n = QUEUED;
    within(Duration::from_secs(10), async {
        while !requests.is_done(0) {
            requests.push(client.request(7, body(n)));
            n += 1;
            requests.poll_once().await;
            tokio::task::yield_now().await;
        }
    })
    .await;
    for _ in 0..DIRECT {
        requests.push(client.request(7, body(n)));
        n += 1;
    }
    requests.poll_once().await;
    let responses = within(Duration::from_secs(10), requests.finish()).await;
    assert_eq!(responses.len(), n);
    for (i, response) in responses.into_iter().enumerate() {
        assert_eq!(response.unwrap().body, body(i));
    }
    drop(client);
    assert_eq!(
        within(Duration::from_secs(5), server).await.unwrap(),
        Ok(())
    );
    let seen = ledger.seen.lock().unwrap();
    assert_eq!(seen.len(), n);
    if let Some(i) = (0..n).find(|&i| seen[i] != body(i)) {
        panic!("handled {:?} where {:?} was sent", seen[i], body(i));
    }
}

/// Answers the handler has at once hold no in-flight permit: a server bounded to one
/// pending `Later` request still serves a thousand pipelined `Ready` ones.
#[tokio::test]
async fn ready_answers_take_no_in_flight_permit() {
    let server_config = ServerConfig {
        max_in_flight: 1,
        ..ServerConfig::default()
    };
    let server = TestServer::start(good_auth("b"), Arc::new(Echo), server_config).await;
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    let requests = (0..1000).map(|i| client.request(i, Bytes::new()));
    for (i, response) in all_in_order(requests.collect())
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(response.unwrap().epoch, i as u64 + 1);
    }
}

/// Polls `fut` once, which must not be ready.
async fn poll_once<F: Future>(fut: Pin<&mut F>) {
    tokio::select! {
        biased;
        _ = fut => panic!("answered"),
        () = std::future::ready(()) => {}
    }
}

/// Waits (with a deadline) until `client` has `sent` requests in flight and `queued` more
/// waiting for a place.
async fn until_placed(client: &PeerClient, sent: usize, queued: usize) {
    within(Duration::from_secs(10), async {
        while (client.in_flight(), client.queued()) != (sent, queued) {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// Over the in-flight bound requests wait for a place, first come first served, and go out
/// as places free, as a busy Redis makes its clients wait: none fails, and one task's
/// requests reach the peer in the order they were first polled.
#[tokio::test]
async fn over_the_in_flight_bound_requests_wait_and_go_in_order() {
    const N: u64 = 200;
    let (handler, mut arrived, gate) = gated();
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_in_flight: 4,
            ..config()
        },
    );
    let c = client.clone();
    let all = tokio::spawn(async move {
        let requests = (0..N).map(|i| c.request(i, Bytes::from(i.to_string())));
        all_in_order(requests.collect()).await
    });
    let mut order = Vec::new();
    for _ in 0..4 {
        order.push(
            within(Duration::from_secs(10), arrived.recv())
                .await
                .unwrap(),
        );
    }
    until_placed(&client, 4, N as usize - 4).await;
    assert!(arrived.try_recv().is_err(), "sent past the bound");
    gate.add_permits(N as usize);
    let results = within(Duration::from_secs(10), all).await.unwrap();
    for (i, r) in results.into_iter().enumerate() {
        let r = r.unwrap_or_else(|e| panic!("request {i}: {e}"));
        assert_eq!(r.body, Bytes::from(i.to_string()), "answer to request {i}");
    }
    while let Ok(epoch) = arrived.try_recv() {
        order.push(epoch);
    }
    assert_eq!(order, (0..N).collect::<Vec<_>>(), "handled out of order");
    assert_eq!((client.in_flight(), client.queued()), (0, 0));
}

/// Past the queue's own bound a request fails at once with `Overloaded`, unsent; the
/// requests in flight and queued are not disturbed.
#[tokio::test]
async fn over_the_queue_bound_fails_fast_with_overloaded() {
    let (handler, mut arrived, gate) = gated();
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_in_flight: 2,
            max_queued: 3,
            ..config()
        },
    );
    let mut waiting = JoinSet::new();
    for i in 0..5u64 {
        let client = client.clone();
        waiting.spawn(async move { client.request(i, Bytes::from(vec![i as u8])).await });
    }
    arrivals(&mut arrived, 2).await;
    until_placed(&client, 2, 3).await;
    // Nothing has been answered (the gate is shut), so this did not wait for a place.
    assert_eq!(
        client.request(9, Bytes::from_static(b"one too many")).await,
        Err(WireError::Overloaded)
    );
    gate.add_permits(1000);
    while let Some(done) = waiting.join_next().await {
        done.unwrap().unwrap();
    }
    assert_eq!(arrived.recv().await, Some(2));
    assert!(
        !std::iter::from_fn(|| arrived.try_recv().ok()).any(|e| e == 9),
        "the refused request was sent"
    );
    assert_eq!((client.in_flight(), client.queued()), (0, 0));
    client.request(5, Bytes::new()).await.unwrap();
}

/// A request that times out while it waits for a place was never sent: it fails with
/// `Overloaded` (not `Timeout`, which may have run), holds no place, and the queue skips it.
#[tokio::test]
async fn a_request_that_times_out_while_queued_was_never_sent() {
    let (handler, mut arrived, gate) = gated();
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_in_flight: 1,
            request_timeout: Duration::from_millis(200),
            ..config()
        },
    );
    // Polled once (sent), then neither polled nor dropped: it holds the only place.
    let mut first = Box::pin(client.request(0, Bytes::new()));
    poll_once(first.as_mut()).await;
    arrivals(&mut arrived, 1).await;
    // Dropped by its caller while queued.
    let mut dropped = Box::pin(client.request(1, Bytes::new()));
    poll_once(dropped.as_mut()).await;
    assert_eq!((client.in_flight(), client.queued()), (1, 1));
    drop(dropped);
    // Times out while queued.
    assert_eq!(
        client.request(2, Bytes::new()).await,
        Err(WireError::Overloaded)
    );
    assert_eq!(client.in_flight(), 1);
    drop(first);
    assert_eq!((client.in_flight(), client.queued()), (0, 0));
    gate.add_permits(1000);
    let r = client.request(3, Bytes::from_static(b"ok")).await.unwrap();
    assert_eq!(r.body, Bytes::from_static(b"ok"));
    // The withdrawn requests never reached the peer.
    assert_eq!(arrived.recv().await, Some(3));
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn server_over_its_bound_answers_overloaded() {
    let (handler, mut arrived, gate) = gated();
    let server_config = ServerConfig {
        max_in_flight: 2,
        ..ServerConfig::default()
    };
    let server = TestServer::start(good_auth("b"), handler, server_config).await;
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    let mut waiting = JoinSet::new();
    for i in 0..2u64 {
        let client = client.clone();
        waiting.spawn(async move { client.request(i, Bytes::new()).await });
    }
    arrivals(&mut arrived, 2).await;
    match client.request(3, Bytes::new()).await {
        Err(WireError::Remote { code, .. }) => assert_eq!(code, ErrorCode::Overloaded),
        other => panic!("expected a remote Overloaded, got {other:?}"),
    }
    assert!(arrived.try_recv().is_err(), "refused without being handled");
    gate.add_permits(1000);
    while let Some(done) = waiting.join_next().await {
        done.unwrap().unwrap();
    }
}

#[tokio::test]
async fn a_request_that_gets_no_answer_times_out() {
    let (handler, mut arrived, _gate) = gated();
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let timeout = Duration::from_millis(200);
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            request_timeout: timeout,
            ..config()
        },
    );
    // Connect first, so the timed request measures only itself.
    let c = client.clone();
    let first = tokio::spawn(async move { c.request(0, Bytes::new()).await });
    arrivals(&mut arrived, 1).await;
    let started = Instant::now();
    assert_eq!(
        client.request(1, Bytes::new()).await,
        Err(WireError::Timeout)
    );
    let took = started.elapsed();
    assert!(took >= timeout && took < timeout * 10, "{took:?}");
    // A large request gets the time to travel and be handled beyond `request_timeout`
    // (`transfer_allowance`: its length at 32 MB/s): 16 MiB, half a second more.
    let large = Bytes::from(vec![b'v'; 16 << 20]);
    let allowance = crate::transfer_allowance(large.len());
    assert_eq!(allowance, Duration::from_millis(500));
    let started = Instant::now();
    assert_eq!(client.request(2, large).await, Err(WireError::Timeout));
    let took = started.elapsed();
    assert!(took >= timeout + allowance, "{took:?}");
    // A small request whose effect at the peer is large (a SETBIT far out) waits as long as
    // its sender allows (`request_allowing`).
    let extra = Duration::from_millis(300);
    let started = Instant::now();
    assert_eq!(
        client.request_allowing(3, Bytes::new(), extra).await,
        Err(WireError::Timeout)
    );
    let took = started.elapsed();
    assert!(took >= timeout + extra, "{took:?}");
    assert_eq!(first.await.unwrap(), Err(WireError::Timeout));
    // An expired request takes its pending entry with it: nothing is left in flight.
    assert_eq!(client.in_flight(), 0);
}

#[test]
fn the_transfer_allowance_is_the_length_at_32_mb_a_second() {
    assert_eq!(crate::transfer_allowance(0), Duration::ZERO);
    assert_eq!(crate::transfer_allowance(32 << 20), Duration::from_secs(1));
    assert_eq!(
        crate::transfer_allowance(512 << 20),
        Duration::from_secs(16)
    );
    assert!(crate::transfer_allowance(100) < Duration::from_micros(10));
}

/// A request the peer never answers gives its in-flight permit back the moment it times out
/// or its caller drops it, whether it was queued behind the connect or sent directly: with
/// room for one request, the next one is never refused.
#[tokio::test]
async fn a_request_that_times_out_or_is_dropped_gives_its_permit_back_at_once() {
    let (handler, mut arrived, gate) = gated();
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_in_flight: 1,
            request_timeout: Duration::from_millis(100),
            ..config()
        },
    );
    // Queued while the client connects, then sent by the owner.
    assert_eq!(
        client.request(0, Bytes::new()).await,
        Err(WireError::Timeout)
    );
    assert_eq!(client.in_flight(), 0);
    // Sent directly on the connection now up.
    assert_eq!(
        client.request(1, Bytes::new()).await,
        Err(WireError::Timeout)
    );
    assert_eq!(client.in_flight(), 0);
    // Dropped by its caller once the server has it.
    tokio::select! {
        r = client.request(2, Bytes::new()) => panic!("answered: {r:?}"),
        () = arrivals(&mut arrived, 3) => {}
    }
    assert_eq!(client.in_flight(), 0);
    // The late answers to all three find no one waiting; the connection carries on.
    gate.add_permits(1000);
    let r = client.request(3, Bytes::from_static(b"ok")).await.unwrap();
    assert_eq!(r.body, Bytes::from_static(b"ok"));
    assert_eq!(client.in_flight(), 0);
    assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn server_loss_fails_everything_in_flight_at_once_then_reconnects() {
    let (handler, mut arrived, gate) = gated();
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    let mut waiting = JoinSet::new();
    for i in 0..100u64 {
        let client = client.clone();
        waiting.spawn(async move { client.request(i, Bytes::new()).await });
    }
    arrivals(&mut arrived, 100).await;
    let killed = Instant::now();
    server.kill_connections();
    while let Some(done) = waiting.join_next().await {
        assert_eq!(
            done.unwrap(),
            Err(WireError::PeerUnavailable(Unavailable::ConnectionLost))
        );
    }
    // The request timeout is 30 s: this is the connection loss, not timeouts.
    assert!(
        killed.elapsed() < Duration::from_secs(2),
        "{:?}",
        killed.elapsed()
    );
    assert_eq!(client.in_flight(), 0);

    // The listener is still there: the next request reconnects.
    gate.add_permits(1000);
    let r = client
        .request(7, Bytes::from_static(b"again"))
        .await
        .unwrap();
    assert_eq!(r.body, Bytes::from_static(b"again"));
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
}

/// Requests waiting for a place when the connection is lost were never sent: they wait on
/// and go out, in order, on the next connection, while those in flight fail.
#[tokio::test]
async fn queued_requests_outlive_a_lost_connection_and_go_out_on_the_next() {
    let (handler, mut arrived, gate) = gated();
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_in_flight: 2,
            ..config()
        },
    );
    let c = client.clone();
    let all = tokio::spawn(async move {
        let requests = (0..5u64).map(|i| c.request(i, Bytes::from(i.to_string())));
        all_in_order(requests.collect()).await
    });
    arrivals(&mut arrived, 2).await;
    until_placed(&client, 2, 3).await;
    server.kill_connections();
    // The gate stays shut until the next connection carries the queued requests, so
    // nothing is answered on the first.
    let mut later = Vec::new();
    for _ in 0..2 {
        later.push(
            within(Duration::from_secs(10), arrived.recv())
                .await
                .unwrap(),
        );
    }
    gate.add_permits(1000);
    let results = within(Duration::from_secs(10), all).await.unwrap();
    let lost = Err(WireError::PeerUnavailable(Unavailable::ConnectionLost));
    assert_eq!(results[..2], [lost.clone(), lost]);
    for (i, r) in results.into_iter().enumerate().skip(2) {
        let r = r.unwrap_or_else(|e| panic!("request {i}: {e}"));
        assert_eq!(r.body, Bytes::from(i.to_string()), "answer to request {i}");
    }
    later.extend(std::iter::from_fn(|| arrived.try_recv().ok()));
    assert_eq!(later, [2, 3, 4], "sent on the next connection, in order");
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    assert_eq!((client.in_flight(), client.queued()), (0, 0));
}

/// Answers at once like `Echo`, except epoch 0, which it reports and never answers: a
/// request that stays in flight until its connection goes.
struct HangsOnZero {
    arrived: mpsc::UnboundedSender<u64>,
}

impl PeerHandler for HangsOnZero {
    type Fut = BoxResponse;
    type Conn = ();

    fn connect(&self, _peer_node: &str) {}

    fn handle(&self, _conn: &mut (), epoch: u64, body: Bytes) -> Handled<Self::Fut> {
        if epoch == 0 {
            let _ = self.arrived.send(epoch);
            return Handled::Later(Box::pin(std::future::pending()));
        }
        Handled::Ready(Response {
            epoch: epoch + 1,
            body,
        })
    }
}

/// Connection after connection: requests go through, the connection drops (the request
/// left on it fails at once), and the next requests reconnect and succeed.
#[tokio::test]
async fn requests_reconnect_and_succeed_after_each_connection_loss() {
    let (arrived, mut arrivals_rx) = mpsc::unbounded_channel();
    let handler = Arc::new(HangsOnZero { arrived });
    let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    for connection in 1..=3 {
        for epoch in 1..=20u64 {
            let body = Bytes::from(format!("{connection}/{epoch}"));
            let r = client.request(epoch, body.clone()).await.unwrap();
            assert_eq!((r.epoch, r.body), (epoch + 1, body));
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), connection);
        let c = client.clone();
        let left = tokio::spawn(async move { c.request(0, Bytes::new()).await });
        arrivals(&mut arrivals_rx, 1).await;
        server.kill_connections();
        // Failed in the sweep that also withdraws the connection: from here on, requests
        // reconnect.
        assert_eq!(
            within(Duration::from_secs(5), left).await.unwrap(),
            Err(WireError::PeerUnavailable(Unavailable::ConnectionLost))
        );
        assert_eq!(client.in_flight(), 0);
    }
    client.request(1, Bytes::new()).await.unwrap();
    assert_eq!(server.accepted.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn connect_refused_fails_fast_and_backs_off() {
    let addr = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let client = PeerClient::new(
        addr,
        good_auth("a"),
        PeerConfig {
            reconnect_backoff: Duration::from_secs(60),
            ..config()
        },
    );
    let started = Instant::now();
    let refused = Err(WireError::PeerUnavailable(Unavailable::Connect(
        io::ErrorKind::ConnectionRefused,
    )));
    assert_eq!(client.request(1, Bytes::new()).await, refused);
    // During the backoff the same answer comes without another connect.
    assert_eq!(client.request(2, Bytes::new()).await, refused);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

/// A peer that drops the first connection mid-handshake: requests fail during the backoff
/// without new connects, and once it has passed the client connects again and succeeds.
#[tokio::test]
async fn after_a_failed_connect_the_client_retries_once_the_backoff_passed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let acc = Arc::clone(&accepted);
    let acceptor = tokio::spawn(async move {
        let (first, _) = listener.accept().await.unwrap();
        acc.fetch_add(1, Ordering::SeqCst);
        drop(first);
        let (second, _) = listener.accept().await.unwrap();
        acc.fetch_add(1, Ordering::SeqCst);
        let config = ServerConfig::default();
        serve_peer(
            second,
            &good_auth("b"),
            Arc::new(Echo),
            &config,
            CancellationToken::new(),
        )
        .await
    });
    let backoff = Duration::from_millis(200);
    let client = PeerClient::new(
        addr,
        good_auth("a"),
        PeerConfig {
            reconnect_backoff: backoff,
            ..config()
        },
    );
    let started = Instant::now();
    // EOF or a reset, depending on whether the Hello was in before the close.
    let first = client.request(1, Bytes::new()).await;
    assert!(
        matches!(
            first,
            Err(WireError::PeerUnavailable(Unavailable::Handshake(
                HandshakeError::Closed | HandshakeError::Io(_)
            )))
        ),
        "{first:?}"
    );
    assert_eq!(client.request(2, Bytes::new()).await, first);
    if started.elapsed() < backoff {
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "no connect during the backoff"
        );
    }
    tokio::time::sleep_until(started + backoff).await;
    let r = client.request(3, Bytes::from_static(b"up")).await.unwrap();
    assert_eq!(r.body, Bytes::from_static(b"up"));
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    drop(client);
    assert_eq!(
        within(Duration::from_secs(5), acceptor).await.unwrap(),
        Ok(())
    );
}

#[tokio::test]
async fn a_panicking_handler_is_answered_with_an_internal_error() {
    for in_future in [false, true] {
        let handler = Arc::new(Panics { in_future });
        let server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
        let client = PeerClient::new(server.addr, good_auth("a"), config());
        for epoch in 1..=2 {
            // The second request shows the connection survived the first panic.
            match client.request(epoch, Bytes::new()).await {
                Err(WireError::Remote { code, .. }) => assert_eq!(code, ErrorCode::Internal),
                other => panic!("in_future {in_future}: expected Internal, got {other:?}"),
            }
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn an_oversized_body_fails_before_sending() {
    let server = TestServer::start(good_auth("b"), Arc::new(Echo), ServerConfig::default()).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_frame: 16,
            ..config()
        },
    );
    assert!(matches!(
        client.request(1, Bytes::from(vec![0; 17])).await,
        Err(WireError::Frame(FrameError::TooLarge { .. }))
    ));
    assert_eq!(server.accepted.load(Ordering::SeqCst), 0, "nothing sent");
    assert!(client.request(1, Bytes::from(vec![0; 16])).await.is_ok());
}

/// Answers with the body twice.
struct Doubler;

impl PeerHandler for Doubler {
    type Fut = std::future::Ready<Response>;
    type Conn = ();

    fn connect(&self, _peer_node: &str) {}

    fn handle(&self, _conn: &mut (), epoch: u64, body: Bytes) -> Handled<Self::Fut> {
        Handled::Ready(Response {
            epoch,
            body: Bytes::from([&body[..], &body[..]].concat()),
        })
    }
}

#[tokio::test]
async fn a_response_over_the_client_limit_is_a_frame_error() {
    let server =
        TestServer::start(good_auth("b"), Arc::new(Doubler), ServerConfig::default()).await;
    let client = PeerClient::new(
        server.addr,
        good_auth("a"),
        PeerConfig {
            max_frame: 16,
            ..config()
        },
    );
    assert_eq!(
        client
            .request(1, Bytes::from(vec![1; 8]))
            .await
            .unwrap()
            .body
            .len(),
        16
    );
    assert!(matches!(
        client.request(2, Bytes::from(vec![1; 9])).await,
        Err(WireError::Frame(FrameError::TooLarge {
            len: 26,
            max: 24,
            ..
        }))
    ));
    // The connection was dropped; the next request reconnects.
    assert!(client.request(3, Bytes::from(vec![1; 2])).await.is_ok());
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn shutdown_finishes_requests_in_flight_then_closes() {
    let (handler, mut arrived, gate) = gated();
    let mut server = TestServer::start(good_auth("b"), handler, ServerConfig::default()).await;
    let client = PeerClient::new(server.addr, good_auth("a"), config());
    let c = client.clone();
    let pending = tokio::spawn(async move { c.request(1, Bytes::from_static(b"last")).await });
    arrivals(&mut arrived, 1).await;
    server.shutdown.cancel();
    gate.add_permits(1);
    assert_eq!(
        pending.await.unwrap().unwrap().body,
        Bytes::from_static(b"last")
    );
    assert_eq!(server.next_result().await, Ok(()));
    // The connection is gone; the next request reconnects and the server closes it at once.
    assert!(client.request(2, Bytes::new()).await.is_err());
}

/// Writes one frame.
async fn write_frame(s: &mut TcpStream, frame: &Frame) {
    let mut out = BytesMut::new();
    frame.encode(&mut out).unwrap();
    s.write_all(&out).await.unwrap();
}

/// Reads one frame; `None` once the peer closed the connection (or reset it).
async fn read_frame(s: &mut TcpStream) -> Option<Frame> {
    let mut buf = BytesMut::new();
    within(Duration::from_secs(10), async {
        loop {
            if let Some(frame) = decode(&mut buf, &FrameLimits::default()).unwrap() {
                return Some(frame);
            }
            buf.reserve(1024);
            match s.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    })
    .await
}

#[test]
fn auth_config_debug_redacts_the_secret() {
    let shown = format!("{:?}", good_auth("a"));
    assert!(!shown.contains("correct horse"), "{shown}");
    assert!(shown.contains("redacted"));
    let mut long = good_auth("a");
    long.node_name = "n".repeat(256);
    assert!(matches!(long.validate(), Err(HandshakeError::Config(_))));
    assert!(matches!(
        auth("c", b"", "a").validate(),
        Err(HandshakeError::Config(_))
    ));
}
