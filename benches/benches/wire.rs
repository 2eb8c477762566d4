//! Inter-node round trips: a `PeerClient` and a `serve_peer` server with a handler that
//! answers at once, over 127.0.0.1 in one multi-thread Tokio runtime. Every iteration is one
//! request, so criterion's "time" is per request:
//!
//! - `one_at_a_time`: one task sends a request and awaits it before the next;
//! - `concurrent_64`: one task polls 64 requests together (as `join_all` does), batch after
//!   batch.
//!
//! Group `wire` measures wall-clock time; group `wire_cpu` runs the same loops but reports
//! the CPU time the whole process spent (client, server and runtime threads: both ends are
//! here, so this is the full cost of a forwarded request's transport on both nodes). CPU is
//! read from `/proc/self/task/*/schedstat` (nanoseconds, Linux only; on other systems that
//! group is skipped). The runtime's threads live for the whole run, so none of their time
//! is lost with an exited thread.
//!
//! The runtime has 2 worker threads, or `WIRE_WORKERS`. With 2, `one_at_a_time` depends on
//! which worker each task (caller, client reader and writer, server connection and writer)
//! ends up on: cross-thread wake-ups cost more than the work, and whole runs differ by up
//! to 2x, so compare several runs. `WIRE_WORKERS=1` puts everything on one
//! thread: the cost of the code path itself, steady from run to run.
//!
//! Run: `cargo bench -p shoal-benches --bench wire` (`WIRE_WORKERS=1 cargo bench ...`)

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use shoal_net::TcpListener;
use shoal_wire::{
    serve_peer, AuthConfig, Handled, PeerClient, PeerConfig, PeerHandler, Response, ServerConfig,
};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

/// Requests one task keeps in flight in `concurrent_64`.
const BATCH: usize = 64;

/// A forwarded `GET key:000000000042`, and a bulk-string reply of 100 bytes.
const REQUEST: &[u8] = b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000042\r\n";

/// Answers every request at once with the same reply.
struct Ready {
    reply: Bytes,
}

impl PeerHandler for Ready {
    type Fut = std::future::Ready<Response>;
    type Conn = ();

    fn connect(&self, _peer_node: &str) {}

    fn handle(&self, _conn: &mut (), epoch: u64, _body: Bytes) -> Handled<Self::Fut> {
        Handled::Ready(Response {
            epoch,
            body: self.reply.clone(),
        })
    }
}

fn auth(node: &str) -> AuthConfig {
    AuthConfig::new("bench", b"bench secret".to_vec(), node)
}

/// Starts a server on 127.0.0.1:0 and a connected client to it.
fn setup(rt: &Runtime) -> (PeerClient, CancellationToken) {
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("bound address");
        let shutdown = CancellationToken::new();
        let token = shutdown.clone();
        let mut reply = b"$100\r\n".to_vec();
        reply.extend_from_slice(&[b'v'; 100]);
        reply.extend_from_slice(b"\r\n");
        let handler = Arc::new(Ready {
            reply: Bytes::from(reply),
        });
        tokio::spawn(async move {
            let config = ServerConfig::default();
            let auth = auth("server");
            while let Ok((stream, _)) = listener.accept().await {
                let (handler, token, config, auth) = (
                    Arc::clone(&handler),
                    token.clone(),
                    config.clone(),
                    auth.clone(),
                );
                tokio::spawn(async move {
                    let _ = serve_peer(stream, &auth, handler, &config, token).await;
                });
            }
        });
        let client = PeerClient::new(addr, auth("client"), PeerConfig::default());
        // Connect before measuring.
        client
            .request(1, Bytes::from_static(REQUEST))
            .await
            .expect("first request");
        (client, shutdown)
    })
}

/// Sends `n` requests one after the other from a task on the runtime (as a node's
/// connection task would), returning the wall-clock time taken.
fn one_at_a_time(rt: &Runtime, client: &PeerClient, n: u64) -> Duration {
    let client = client.clone();
    rt.block_on(async move {
        tokio::spawn(async move {
            let started = Instant::now();
            for _ in 0..n {
                client
                    .request(1, Bytes::from_static(REQUEST))
                    .await
                    .expect("request");
            }
            started.elapsed()
        })
        .await
        .expect("bench task")
    })
}

/// Sends `n` requests, `BATCH` at a time polled together by one task.
fn concurrent(rt: &Runtime, client: &PeerClient, n: u64) -> Duration {
    let client = client.clone();
    rt.block_on(async move {
        tokio::spawn(async move {
            let started = Instant::now();
            let mut left = n as usize;
            while left > 0 {
                let batch = left.min(BATCH);
                left -= batch;
                let requests = (0..batch).map(|_| client.request(1, Bytes::from_static(REQUEST)));
                for r in all(requests.collect()).await {
                    r.expect("request");
                }
            }
            started.elapsed()
        })
        .await
        .expect("bench task")
    })
}

/// Polls `futures` together, each first polled in list order (as `join_all` does).
async fn all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
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

/// CPU time of every thread of this process so far, or `None` where `/proc` does not say.
fn process_cpu() -> Option<Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        // A thread that exited since the listing no longer counts; none do while measuring.
        let Ok(stat) = std::fs::read_to_string(path) else {
            continue;
        };
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(total))
}

/// Runs `run` and returns the process CPU time it took instead of its wall-clock time.
fn cpu_of(run: impl FnOnce() -> Duration) -> Duration {
    let before = process_cpu().expect("checked before benchmarking");
    run();
    process_cpu()
        .expect("checked before benchmarking")
        .saturating_sub(before)
}

type Scenario = fn(&Runtime, &PeerClient, u64) -> Duration;

const SCENARIOS: [(&str, Scenario); 2] = [
    ("one_at_a_time", one_at_a_time),
    ("concurrent_64", concurrent),
];

fn bench_wire(c: &mut Criterion) {
    let workers = std::env::var("WIRE_WORKERS").map_or(2, |v| {
        v.parse()
            .expect("WIRE_WORKERS is a number of worker threads")
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("runtime");
    let (client, shutdown) = setup(&rt);

    let mut group = c.benchmark_group("wire");
    group.throughput(Throughput::Elements(1));
    for (name, run) in SCENARIOS {
        group.bench_function(name, |b| b.iter_custom(|n| run(&rt, &client, n)));
    }
    group.finish();

    if process_cpu().is_some() {
        let mut group = c.benchmark_group("wire_cpu");
        group.throughput(Throughput::Elements(1));
        for (name, run) in SCENARIOS {
            group.bench_function(name, |b| b.iter_custom(|n| cpu_of(|| run(&rt, &client, n))));
        }
        group.finish();
    }

    shutdown.cancel();
    drop(client);
    rt.shutdown_timeout(Duration::from_secs(1));
}

criterion_group!(benches, bench_wire);
criterion_main!(benches);
