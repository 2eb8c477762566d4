//! The metrics port (`metrics-port`): Prometheus metrics at `/metrics` (OpenMetrics text,
//! encoded by `prometheus-client`), liveness at `/healthz`, readiness at `/readyz`, and the
//! status page at `/` with its figures at `/status.json` (`status`).
//!
//! Every figure is read at scrape time from the counters the node keeps anyway (INFO's), so
//! the endpoint adds nothing to the request path. The HTTP side is the least that serves a
//! scraper and a probe: one GET per connection, the request head at most [`MAX_HEAD`]
//! bytes, [`MAX_CONNECTIONS`] connections at once, each cut off after [`IO_TIMEOUT`].

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use shoal_cluster::Server;
use shoal_engine::cmdstats::LatencyHistogram;
use shoal_net::{TcpListener, TcpStream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Largest request head read (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;
/// Connections served at once; past them, as many again are served the probes only
/// (`/healthz`, `/readyz`), so clients that hold connections open cannot fail a liveness
/// probe; more are closed at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Longest a connection may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest a connection may take to send its request and take the answer.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the metrics port until `shutdown`.
pub async fn serve(node: Arc<Server>, listener: TcpListener, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let probe_slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let status = Arc::new(crate::status::StatusCache::default());
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let (slot, probes_only) = match slots.clone().try_acquire_owned() {
            Ok(slot) => (slot, false),
            Err(_) => match probe_slots.clone().try_acquire_owned() {
                Ok(slot) => (slot, true),
                Err(_) => continue, // dropped: closed at once
            },
        };
        let (node, status) = (node.clone(), status.clone());
        tokio::spawn(async move {
            let answered = answer(&node, &status, stream, probes_only);
            let _ = tokio::time::timeout(IO_TIMEOUT, answered).await;
            drop(slot);
        });
    }
}

/// Reads one request head (within [`HEAD_TIMEOUT`]) and writes the answer; with
/// `probes_only`, anything but a probe is answered 503.
async fn answer(
    node: &Arc<Server>,
    status: &crate::status::StatusCache,
    mut stream: TcpStream,
    probes_only: bool,
) -> std::io::Result<()> {
    let head_by = tokio::time::Instant::now() + HEAD_TIMEOUT;
    let mut head = vec![0u8; MAX_HEAD];
    let mut len = 0;
    let (status, content_type, body) = loop {
        if len == head.len() {
            break response(431, "request head too large\n");
        }
        let Ok(n) = tokio::time::timeout_at(head_by, stream.read(&mut head[len..])).await else {
            return Ok(()); // too slow to ask: closed
        };
        let n = n?;
        if n == 0 {
            return Ok(());
        }
        len += n;
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&head[..len]) {
            Ok(httparse::Status::Partial) => continue,
            Ok(httparse::Status::Complete(_)) => {
                let (method, path) = (request.method.unwrap_or(""), request.path.unwrap_or(""));
                let probe = matches!(path, "/healthz" | "/readyz");
                if probes_only && !probe {
                    break response(503, "busy: only /healthz and /readyz now\n");
                }
                break route(node, status, method, path).await;
            }
            Err(e) => break response(400, &format!("bad request: {e}\n")),
        }
    };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    };
    let allow = if status == 405 { "Allow: GET\r\n" } else { "" };
    let out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         {allow}Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(out.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

type Answer = (u16, &'static str, String);

fn response(status: u16, text: &str) -> Answer {
    (status, "text/plain; charset=utf-8", text.to_owned())
}

/// What a request gets, by method and path (the query string is ignored).
async fn route(
    node: &Arc<Server>,
    status: &crate::status::StatusCache,
    method: &str,
    path: &str,
) -> Answer {
    let path = path.split('?').next().unwrap_or(path);
    if method != "GET" {
        return response(405, "only GET\n");
    }
    match path {
        "/metrics" => match render(node) {
            Ok(text) => (
                200,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                text,
            ),
            Err(_) => response(500, "could not encode the metrics\n"),
        },
        "/" => (
            200,
            "text/html; charset=utf-8",
            crate::status::PAGE.to_owned(),
        ),
        "/status.json" => (200, "application/json", status.get(node).await),
        "/healthz" => response(200, "ok\n"),
        "/readyz" => match not_ready(node) {
            None => response(200, "ready\n"),
            Some(why) => response(503, &format!("not ready: {why}\n")),
        },
        _ => response(404, "not found: try /, /metrics, /healthz or /readyz\n"),
    }
}

/// Why the node should not get traffic now, if it should not: it is shutting down, or its
/// cluster says so (`Cluster::not_ready`: looking for the cluster, joining, leaving).
pub fn not_ready(node: &Server) -> Option<&'static str> {
    if node.shutdown.is_cancelled() {
        return Some("shutting down");
    }
    node.cluster.as_ref()?.not_ready()
}

/// The metrics text.
pub fn render(node: &Arc<Server>) -> Result<String, fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(NodeMetrics(node.clone())));
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry)?;
    Ok(out)
}

/// Reads a node's counters on every scrape.
struct NodeMetrics(Arc<Server>);

impl fmt::Debug for NodeMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NodeMetrics")
    }
}

fn counter(e: &mut DescriptorEncoder<'_>, name: &str, help: &str, v: u64) -> fmt::Result {
    let c = ConstCounter::new(v);
    let m = e.encode_descriptor(name, help, None, c.metric_type())?;
    c.encode(m)
}

fn gauge(e: &mut DescriptorEncoder<'_>, name: &str, help: &str, v: i64) -> fmt::Result {
    let g = ConstGauge::new(v);
    let m = e.encode_descriptor(name, help, None, g.metric_type())?;
    g.encode(m)
}

/// A labelled family: one sample per (label value, value).
fn family<'a>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    kind: MetricType,
    label: &str,
    samples: impl Iterator<Item = (&'a str, u64)>,
) -> fmt::Result {
    let mut m = e.encode_descriptor(name, help, None, kind)?;
    for (value, v) in samples {
        let labels = [(label, value)];
        let f = m.encode_family(&labels)?;
        match kind {
            MetricType::Counter => ConstCounter::new(v).encode(f)?,
            _ => ConstGauge::new(v as i64).encode(f)?,
        }
    }
    Ok(())
}

/// Histogram bucket edges exported: every power of two from 1 µs to about 8.4 s (each an
/// edge of the node's own finer buckets).
const EXPORTED_EDGES: usize = 24;

impl Collector for NodeMetrics {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> fmt::Result {
        let node = &*self.0;
        let engine = &node.engine;
        let s = &engine.stats;
        let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        let store = engine.store.stats();

        // Commands, by name (subcommands as `config|get`), as INFO commandstats.
        let active: Vec<_> = engine
            .commands
            .totals()
            .into_iter()
            .filter(|r| r.calls + r.rejected > 0)
            .collect();
        family(
            &mut e,
            "shoal_commands",
            "Commands run on this node (a forwarded one counts at its owner).",
            MetricType::Counter,
            "cmd",
            active.iter().map(|r| (r.name.as_str(), r.calls)),
        )?;
        family(
            &mut e,
            "shoal_commands_failed",
            "Commands that ran and answered an error.",
            MetricType::Counter,
            "cmd",
            active.iter().map(|r| (r.name.as_str(), r.failed)),
        )?;
        family(
            &mut e,
            "shoal_commands_rejected",
            "Commands refused before they ran (arity, NOAUTH, OOM, ...).",
            MetricType::Counter,
            "cmd",
            active.iter().map(|r| (r.name.as_str(), r.rejected)),
        )?;
        {
            let mut m = e.encode_descriptor(
                "shoal_command_duration_seconds",
                "How long commands ran on this node.",
                None,
                MetricType::Histogram,
            )?;
            for r in active.iter().filter(|r| r.calls > 0) {
                let count: u64 = r.latency.iter().sum();
                let per = LatencyHistogram::per_power_of_two(&r.latency, EXPORTED_EDGES);
                let mut buckets: Vec<(f64, u64)> = per
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| ((1u64 << i) as f64 / 1e6, n))
                    .collect();
                buckets.push((f64::INFINITY, count - per.iter().sum::<u64>()));
                let labels = [("cmd", r.name.as_str())];
                let mut f = m.encode_family(&labels)?;
                f.encode_histogram::<NoLabelSet>(r.usec as f64 / 1e6, count, &buckets, None)?;
            }
        }
        let errors = engine.commands.errors();
        family(
            &mut e,
            "shoal_error_replies",
            "Error replies by code (their first word), as INFO errorstats.",
            MetricType::Counter,
            "code",
            errors.iter().map(|(c, n)| (c.as_str(), *n)),
        )?;

        // The keyspace and memory.
        counter(
            &mut e,
            "shoal_keyspace_hits",
            "Reads that found their key.",
            store.keyspace_hits,
        )?;
        counter(
            &mut e,
            "shoal_keyspace_misses",
            "Reads that did not find their key.",
            store.keyspace_misses,
        )?;
        counter(
            &mut e,
            "shoal_expired_keys",
            "Keys removed because their TTL passed.",
            store.expired_keys,
        )?;
        counter(
            &mut e,
            "shoal_evicted_keys",
            "Keys evicted to stay under maxmemory.",
            store.evicted_keys,
        )?;
        gauge(
            &mut e,
            "shoal_keys",
            "Keys this node holds (its copies included).",
            store.keys as i64,
        )?;
        gauge(
            &mut e,
            "shoal_keys_volatile",
            "Keys with a TTL.",
            store.volatile_keys as i64,
        )?;
        gauge(
            &mut e,
            "shoal_memory_used_bytes",
            "Memory used, as INFO used_memory.",
            engine.used_memory() as i64,
        )?;
        gauge(
            &mut e,
            "shoal_memory_max_bytes",
            "maxmemory (0: no limit).",
            engine.with_settings(|c| c.maxmemory.0) as i64,
        )?;

        // Connections and traffic.
        gauge(
            &mut e,
            "shoal_connected_clients",
            "Client connections open now.",
            engine.clients.len() as i64,
        )?;
        counter(
            &mut e,
            "shoal_connections_received",
            "Client connections accepted.",
            get(&s.total_connections_received),
        )?;
        counter(
            &mut e,
            "shoal_connections_rejected",
            "Connections refused (maxclients).",
            get(&s.rejected_connections),
        )?;
        counter(
            &mut e,
            "shoal_requests",
            "Requests read from clients (forwarded ones included).",
            s.total_commands_processed.get(),
        )?;
        counter(
            &mut e,
            "shoal_net_input_bytes",
            "Bytes read from clients.",
            s.total_net_input_bytes.get(),
        )?;
        counter(
            &mut e,
            "shoal_net_output_bytes",
            "Bytes written to clients.",
            s.total_net_output_bytes.get(),
        )?;

        let Some(cluster) = node.cluster.as_ref() else {
            return Ok(());
        };
        let c = &cluster.stats;
        counter(
            &mut e,
            "shoal_forwarded",
            "Requests sent to another node.",
            get(&c.forwarded),
        )?;
        counter(
            &mut e,
            "shoal_forward_batches",
            "BATCH requests sent: a connection's commands for one node, together.",
            get(&c.batches_sent),
        )?;
        counter(
            &mut e,
            "shoal_forward_batched",
            "Forwarded commands sent in BATCH requests.",
            get(&c.batched),
        )?;
        counter(
            &mut e,
            "shoal_forward_batch_continued",
            "CONTINUE requests sent: batches whose answer came in pieces.",
            get(&c.batch_continued),
        )?;
        counter(
            &mut e,
            "shoal_batches_served",
            "BATCH requests served for other nodes.",
            get(&c.batches_served),
        )?;
        counter(
            &mut e,
            "shoal_forward_failovers",
            "Forwarded requests that went on to the next copy.",
            get(&c.failovers),
        )?;
        counter(
            &mut e,
            "shoal_forward_unreachable",
            "Forwarded requests no copy answered.",
            get(&c.unreachable),
        )?;
        counter(
            &mut e,
            "shoal_forward_writes_not_failed_over",
            "Forwarded writes answered with an error: their copy did not answer and may be alive, or may have run them.",
            get(&c.writes_not_failed_over),
        )?;
        counter(
            &mut e,
            "shoal_forward_sent_back_other_view",
            "Forwarded commands sent back to their sender, whose view of the membership differs.",
            get(&c.other_view_sent_back),
        )?;
        counter(
            &mut e,
            "shoal_forward_resent_other_view",
            "Commands sent again after a node sent them back for another view.",
            get(&c.other_view_resent),
        )?;
        counter(
            &mut e,
            "shoal_relayed",
            "Requests sent through another member, the link to their target being cut.",
            get(&c.relayed),
        )?;
        counter(
            &mut e,
            "shoal_relays_served",
            "Requests passed on for another member whose link to their target is cut.",
            get(&c.relays_served),
        )?;
        counter(
            &mut e,
            "shoal_served_for_peers",
            "Requests other nodes sent here and this node ran.",
            get(&c.served),
        )?;
        counter(
            &mut e,
            "shoal_forward_expired",
            "Forwarded requests that arrived after their deadline.",
            get(&c.expired),
        )?;
        gauge(
            &mut e,
            "shoal_peer_clock_lead_ms",
            "The most another node's clock was seen ahead of this node's, in milliseconds.",
            get(&c.peer_clock_lead_ms) as i64,
        )?;
        counter(
            &mut e,
            "shoal_replication_queued",
            "Key states queued for other copies.",
            get(&c.repl_queued),
        )?;
        counter(
            &mut e,
            "shoal_replication_dropped",
            "Key states dropped (queue full, copy unreachable).",
            get(&c.repl_dropped),
        )?;
        counter(
            &mut e,
            "shoal_replication_applied",
            "Key states received and applied.",
            get(&c.repl_applied),
        )?;
        counter(
            &mut e,
            "shoal_replication_stale",
            "Key states received older than the local copy.",
            get(&c.repl_stale),
        )?;
        counter(
            &mut e,
            "shoal_replication_deltas",
            "Writes sent to replicas as their command (a delta), not the key's state.",
            get(&c.repl_deltas),
        )?;
        counter(
            &mut e,
            "shoal_replication_deltas_applied",
            "Deltas received and run on the version they were made on.",
            get(&c.repl_deltas_applied),
        )?;
        counter(
            &mut e,
            "shoal_replication_deltas_refetched",
            "Deltas received for another version: the key's state fetched instead.",
            get(&c.repl_deltas_refetched),
        )?;
        let view = cluster.view();
        let peers: Vec<(String, u64, u64, u64)> = view
            .live_peers()
            .map(|(n, p)| {
                (
                    n.name.clone(),
                    p.repl_queued_bytes() as u64,
                    p.client.in_flight() as u64,
                    p.client.queued() as u64,
                )
            })
            .collect();
        family(
            &mut e,
            "shoal_replication_queue_bytes",
            "Bytes waiting in the replication queue to each peer.",
            MetricType::Gauge,
            "peer",
            peers.iter().map(|(n, q, _, _)| (n.as_str(), *q)),
        )?;
        family(
            &mut e,
            "shoal_peer_requests_in_flight",
            "Requests to each peer awaiting their answer.",
            MetricType::Gauge,
            "peer",
            peers.iter().map(|(n, _, f, _)| (n.as_str(), *f)),
        )?;
        family(
            &mut e,
            "shoal_peer_requests_queued",
            "Requests to each peer waiting for a place on its links (all places in flight).",
            MetricType::Gauge,
            "peer",
            peers.iter().map(|(n, _, _, w)| (n.as_str(), *w)),
        )?;
        {
            let mut m = e.encode_descriptor(
                "shoal_forward_outcomes",
                "Commands forwarded to each peer, by outcome: answered, next_copy (it sent the \
                 command on to the next copy), unreachable (failed over), failed.",
                None,
                MetricType::Counter,
            )?;
            for (n, p) in view.live_peers() {
                for (outcome, v) in p.forwards.counts() {
                    let labels = [("peer", n.name.as_str()), ("outcome", outcome)];
                    ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        let states = ["joining", "serving", "leaving", "down"];
        let count = |state: &str| {
            view.members
                .iter()
                .filter(|m| m.state.as_str() == state)
                .count() as u64
        };
        let by_state: Vec<(&str, u64)> = states.iter().map(|s| (*s, count(s))).collect();
        family(
            &mut e,
            "shoal_members",
            "Members of the cluster by state, as this node sees them.",
            MetricType::Gauge,
            "state",
            by_state.into_iter(),
        )?;
        gauge(
            &mut e,
            "shoal_view_epoch",
            "The epoch of this node's view of the membership (it changes with every view).",
            view.epoch() as i64,
        )?;
        let h = &cluster.handoff.stats;
        gauge(
            &mut e,
            "shoal_handoff_slots_pending",
            "Slots of the running hand-off still to send.",
            get(&h.slots_pending) as i64,
        )?;
        gauge(
            &mut e,
            "shoal_handoff_slots_planned",
            "Slots the running hand-off sends in all.",
            get(&h.slots_planned) as i64,
        )?;
        counter(
            &mut e,
            "shoal_handoff_keys_sent",
            "Keys streamed to new copies.",
            get(&h.keys_sent),
        )?;
        counter(
            &mut e,
            "shoal_handoff_bytes_sent",
            "Bytes streamed to new copies.",
            get(&h.bytes_sent),
        )?;
        counter(
            &mut e,
            "shoal_handoff_keys_received",
            "Keys received in hand-offs and applied.",
            get(&h.keys_received),
        )?;
        gauge(
            &mut e,
            "shoal_handoff_bytes_per_second",
            "The running hand-off's pace so far (0: none runs).",
            get(&h.bytes_per_sec) as i64,
        )?;
        gauge(
            &mut e,
            "shoal_handoff_eta_seconds",
            "The running hand-off's time left at its pace so far.",
            get(&h.eta_secs) as i64,
        )?;
        counter(
            &mut e,
            "shoal_fetches",
            "Fetches of keys on their way here while unsettled.",
            get(&h.fetches),
        )?;
        counter(
            &mut e,
            "shoal_fetches_unanswered",
            "Fetches for which some key had no copy answer in time.",
            get(&h.unanswered),
        )?;
        if let Some(g) = cluster.gossip.get() {
            let g = g.stats().snapshot();
            counter(
                &mut e,
                "shoal_gossip_datagrams_in",
                "Gossip datagrams received.",
                g.datagrams_in,
            )?;
            counter(
                &mut e,
                "shoal_gossip_datagrams_out",
                "Gossip datagrams sent.",
                g.datagrams_out,
            )?;
            counter(
                &mut e,
                "shoal_gossip_rejected",
                "Gossip datagrams dropped (malformed, or not of this cluster).",
                g.dropped_too_short
                    + g.dropped_too_long
                    + g.dropped_bad_magic
                    + g.dropped_bad_version
                    + g.dropped_bad_kind
                    + g.dropped_wrong_cluster
                    + g.dropped_bad_mac
                    + g.rejected_payloads,
            )?;
        }
        Ok(())
    }
}
