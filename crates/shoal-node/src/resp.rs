//! The Redis protocol front end: parses RESP requests, routes each through the cluster layer
//! (or runs it here on a single node), and encodes the replies in the connection's protocol,
//! in request order. The I/O loop it plugs into is `connection`.

use std::sync::Arc;

use bytes::BytesMut;
use shoal_resp::{Limits, Reply, RequestParser};
use shoal_store::PREFETCH_MAX;

use crate::connection::{Close, Frontend, Replies, Step, FLUSH_AT, MAX_PENDING};
use shoal_cluster::monitor::MonitorFeed;
use shoal_cluster::router::{dispatch, must_wait, InFlight, Outcome};
use shoal_cluster::Server;
use shoal_engine::busy::ScriptMove;
use shoal_engine::client::ClientInfo;
use shoal_engine::cmd::{acl, ReplyBudget, ReplyMode, Session};
use shoal_engine::{Engine, Snapshot};

/// The Redis protocol front end.
pub struct RespFrontend {
    session: Session,
    parser: RequestParser,
    limits: Limits,
    /// The protocol limits, the normal clients' hard output limit and
    /// `client-query-buffer-limit`, as of the last batch.
    settings: Snapshot<(Limits, u64, u64)>,
    /// CLIENT REPLY SKIP was the previous command: drop this command's reply.
    skip_pending: bool,
    /// A parsed command held back until the forwarded replies before it are in.
    held: Option<Vec<bytes::Bytes>>,
    /// The slots the commands whose replies are still to come touch (not run here yet).
    in_flight: InFlight,
    /// This connection's MONITOR feed, once it asked for one.
    monitor: Option<MonitorFeed>,
    /// Requests looked at for their keys ([`Server::prefetch`]) and still to run.
    prefetched: usize,
    /// A cluster node: a tracking client's invalidations must not overtake replies to come.
    clustered: bool,
    /// The session is away with a moved script (`crate::moved`): it comes back here with
    /// the script's reply, before the next command runs.
    away: Option<Arc<std::sync::Mutex<Option<crate::moved::Returned>>>>,
}

impl RespFrontend {
    pub fn new(node: &Server, info: Arc<ClientInfo>) -> RespFrontend {
        let mut session = Session::new(info, !acl::requires_auth(&node.engine));
        acl::start_session(&node.engine, &mut session);
        RespFrontend {
            session,
            parser: RequestParser::new(),
            limits: node.engine.limits(),
            settings: Snapshot::default(),
            skip_pending: false,
            held: None,
            in_flight: InFlight::default(),
            monitor: None,
            prefetched: 0,
            clustered: node.cluster.is_some(),
            away: None,
        }
    }
}

impl RespFrontend {
    /// Serves this connection by Redis Cluster's rules (the `cluster-client-port`).
    pub fn redis_cluster(&mut self) {
        self.session.redis_cluster = true;
        self.session
            .info
            .redis_cluster
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Shows a client's command to the node's monitors, as Redis does: known commands that are
/// not administrative (CONFIG, MONITOR, SHUTDOWN, ... stay out), the time it arrived.
fn feed_monitors(node: &Server, session: &Session, args: &[bytes::Bytes]) {
    let Some(spec) = shoal_engine::cmd::lookup_listed(&args[0]) else {
        return;
    };
    let Some(shown) = shoal_engine::cmd::monitor_args(spec, args) else {
        return;
    };
    let micros = shoal_engine::clock::now_us();
    let addr = session.info.addr.monitor_text();
    node.monitors
        .feed(shoal_cluster::monitor::line(micros, &addr, &shown));
}

/// Moves every message waiting in the connection's mailbox (bounded by the pubsub output
/// limit) into its replies, in order.
fn drain_messages(session: &Session, replies: &mut Replies) {
    if let Some(sub) = &session.pubsub {
        if let Ok(messages) = sub.mailbox().take(usize::MAX) {
            for m in messages {
                m.reply(session.proto).encode(session.proto, replies);
            }
        }
    }
}

/// Publishes the connection's MULTI queue for CLIENT LIST (`multi`, `multi-mem`, flag `x`)
/// after `args` ran: it is counted in when it was queued.
fn publish_multi(session: &Session, args: &[bytes::Bytes]) {
    use std::sync::atomic::Ordering::Relaxed;
    let b = &session.info.buffers;
    let was = b.multi.load(Relaxed);
    match session.multi.as_ref().map(|tx| tx.queue.len() as i64) {
        None if was < 0 => {}
        None => {
            b.multi.store(-1, Relaxed);
            b.multi_mem.store(0, Relaxed);
        }
        Some(n) => {
            if was < 0 {
                b.multi_mem.store(0, Relaxed);
            }
            if n > was.max(0) {
                let bytes: usize = args.iter().map(|a| a.len()).sum();
                b.multi_mem.fetch_add(bytes as u64, Relaxed);
            }
            b.multi.store(n, Relaxed);
        }
    }
}

/// Publishes how many watched keys, subscriptions and BCAST prefixes the connection holds
/// (`tot-mem`, `maxmemory-clients`; each a few loads).
fn publish_state(session: &Session) {
    use std::sync::atomic::Ordering::Relaxed;
    let subscriptions: u32 = session
        .info
        .subscriptions
        .iter()
        .map(|n| n.load(Relaxed))
        .sum();
    let prefixes = session
        .tracking
        .as_ref()
        .map_or(0, |t| t.mode.prefixes.len());
    let entries = session.watched.len() + subscriptions as usize + prefixes;
    session.info.buffers.set_state_entries(entries);
    let watching = session.watched.len() as u32;
    if session.info.watching.load(Relaxed) != watching {
        session.info.watching.store(watching, Relaxed);
    }
}

impl Frontend for RespFrontend {
    fn process(
        &mut self,
        node: &Arc<Server>,
        input: &mut BytesMut,
        replies: &mut Replies,
        now: u64,
    ) -> (u64, Step) {
        let (limits, hard, query_limit) = self.settings.get(&node.engine, |s| {
            (
                Engine::limits_of(s),
                s.client_output_buffer_limit.normal.hard,
                s.client_query_buffer_limit.0,
            )
        });
        let (hard, query_limit) = (*hard, *query_limit);
        self.limits.clone_from(limits);
        let mut processed = 0;
        // A moved script's session is back (its reply was the blocked one, so it is in).
        if let Some(away) = self.away.take() {
            let back = away.lock().unwrap_or_else(|e| e.into_inner()).take();
            let Some(back) = back else {
                tracing::warn!(
                    client = self.session.info.id,
                    "a moved script's session was lost; closing"
                );
                return (0, Step::Close(Close::Killed));
            };
            self.session = back.session;
            if back.over_limit {
                tracing::warn!(
                    client = self.session.info.id,
                    "reply would pass the client output buffer limit, closing"
                );
                return (0, Step::Close(Close::OutputLimit));
            }
        }
        if replies.pending() == 0 {
            self.in_flight.clear();
        }
        loop {
            // Before a pipeline's requests run, the loads of their keys start side by side,
            // 16 requests at a time, so their lookups wait for memory once rather than in turn.
            if self.prefetched == 0 && self.held.is_none() && self.parser.at_request_start() {
                let mut keys: [&[u8]; PREFETCH_MAX] = [&[]; PREFETCH_MAX];
                let seen = shoal_resp::peek_keys(input, &mut keys);
                node.prefetch(self.session.db, &keys[..seen.keys]);
                self.prefetched = seen.requests;
            }
            // What the request holds so far, to tell a whole request past the limit.
            let (before, held_before) = (input.len(), self.parser.held_bytes());
            let parsed = match self.held.take() {
                Some(args) => Ok(Some(args)),
                None => self
                    .parser
                    .parse(input, &self.limits, self.session.authenticated),
            };
            let args = match parsed {
                // A request past `client-query-buffer-limit` that the last read completed
                // (a read takes up to 1 MB): closed as one still arriving is, as Redis
                // closes a client whose query buffer passed the limit after a read.
                Ok(Some(_))
                    if (before + held_before) as u64 > query_limit
                        && (before - input.len() + held_before) as u64 > query_limit =>
                {
                    tracing::warn!(
                        client = self.session.info.id,
                        "closing a client that reached client-query-buffer-limit"
                    );
                    return (processed, Step::Close(Close::QueryLimit));
                }
                Ok(Some(args)) => args,
                Ok(None) => {
                    // The arguments of a request still arriving (CLIENT LIST's `argv-mem`,
                    // `maxmemory-clients`).
                    let held = self.parser.held_bytes() as u64;
                    let argv_mem = &self.session.info.buffers.argv_mem;
                    if argv_mem.load(std::sync::atomic::Ordering::Relaxed) != held {
                        argv_mem.store(held, std::sync::atomic::Ordering::Relaxed);
                    }
                    // Past `client-query-buffer-limit` the client is closed without a reply,
                    // as Redis closes it (which counts the input alone; the arguments taken
                    // from it count too here, so no request grows without bound).
                    let holds = held + input.len() as u64;
                    if holds > query_limit {
                        tracing::warn!(
                            client = self.session.info.id,
                            holds,
                            "closing a client that reached client-query-buffer-limit"
                        );
                        return (processed, Step::Close(Close::QueryLimit));
                    }
                    return (processed, Step::NeedInput);
                }
                Err(e) => {
                    Reply::error(e.to_string()).encode(self.session.proto, replies);
                    return (processed, Step::Close(Close::Protocol(e.to_string())));
                }
            };
            // Commands on the same slots are still on their way (forwarded, or waiting for a
            // fetch), or a FLUSHALL is: a command on keys owned here waits for them, so a
            // pipeline's commands on one key take effect in order. Replies that only wait for
            // replica acks hold nothing: their writes are in the store already.
            if (self.session.multi.is_none() || self.in_flight.watching())
                && must_wait(node, &args, &self.in_flight)
            {
                self.held = Some(args);
                return (processed, Step::Flush);
            }
            // CLIENT PAUSE holds it (and what follows it) until the pause ends.
            if let Some(end) =
                shoal_engine::cmd::paused_until(&node.engine, &self.session, &args, now)
            {
                self.held = Some(args);
                replies.push_blocked(crate::paused::wait_for_unpause(node.clone(), end));
                return (processed, Step::Flush);
            }
            // An EXEC whose WATCHed keys another node owns, and which cannot run there, reads
            // them there again first (held meanwhile).
            if let Some(reading) = shoal_cluster::router::before_exec(
                node,
                &mut self.session,
                &mut self.in_flight,
                &args,
                now,
            ) {
                self.held = Some(args);
                replies.push_later(reading);
                return (processed, Step::Flush);
            }
            processed += 1;
            self.prefetched = self.prefetched.saturating_sub(1);
            // Messages published before this command go out before its reply (among them
            // the invalidations of keys evicted to make room for it).
            shoal_engine::cmd::evict_before(&node.engine, &self.session, &args, now);
            drain_messages(&self.session, replies);
            if node.monitors.active() {
                feed_monitors(node, &self.session, &args);
            }
            let was_skipped = std::mem::take(&mut self.skip_pending);
            let session = &mut self.session;
            let mode_before = session.reply_mode;
            session.budget = match hard {
                0 => ReplyBudget::new(0),
                h => ReplyBudget::new(h.saturating_sub(replies.held(h) as u64).max(1)),
            };
            // A client's script on a single node may move when it runs long (`crate::moved`).
            if !self.clustered {
                session.script_move = ScriptMove::May;
            }
            let caching = session.tracking.as_ref().map(|t| t.caching);
            let outcome = dispatch(node, session, &mut self.in_flight, &args, now);
            let moving = match std::mem::take(&mut session.script_move) {
                ScriptMove::Stopped { ran } => {
                    // CLIENT CACHING YES holds for the run that counts.
                    if let (Some(t), Some(caching)) = (session.tracking.as_mut(), caching) {
                        t.caching = caching;
                    }
                    Some(ran)
                }
                _ => None,
            };
            publish_multi(session, &args);
            publish_state(session);
            if std::mem::take(&mut session.monitor) {
                self.monitor = Some(node.monitors.subscribe());
            } else if self.monitor.is_some() && args[0].eq_ignore_ascii_case(b"reset") {
                // RESET ends monitoring, as in Redis.
                self.monitor = None;
            }
            if session.budget.exceeded() {
                tracing::warn!(
                    client = session.info.id,
                    "reply would pass the client output buffer limit, closing"
                );
                return (processed, Step::Close(Close::OutputLimit));
            }
            // CLIENT REPLY itself answers by the mode it sets (ON replies, OFF/SKIP do not),
            // also right after a SKIP (Redis clears the skip before ON replies); any other
            // command by the mode it found, so an EXEC that runs a queued CLIENT REPLY OFF
            // still sends its own reply, as in Redis.
            // RESET turns replies back on before its own (`+RESET` after CLIENT REPLY OFF),
            // as Redis's `clearClientConnectionState` does; a SKIP still takes it.
            let sets_mode = shoal_engine::cmd::sets_reply_mode(&args)
                || (args.len() == 1 && args[0].eq_ignore_ascii_case(b"reset"));
            // Only a valid CLIENT REPLY ON ends a SKIP before its own reply (an erroneous
            // CLIENT REPLY is the skipped command, as in Redis).
            let turns_on = sets_mode && args.len() == 3 && args[2].eq_ignore_ascii_case(b"on");
            let mode = if sets_mode {
                session.reply_mode
            } else {
                mode_before
            };
            // Pub/Sub's confirmations are sent whatever CLIENT REPLY says, as in Redis.
            use shoal_engine::cmd::{subscribes, unsubscribes};
            let confirms = subscribes(&args[0]) || unsubscribes(&args[0]);
            let suppress = !confirms
                && ((was_skipped && !turns_on)
                    || mode != ReplyMode::On
                    || std::mem::take(&mut session.drop_reply));
            if session.reply_mode == ReplyMode::Skip {
                session.reply_mode = ReplyMode::On;
                self.skip_pending = true;
            }
            // An UNSUBSCRIBE's confirmation comes after every message that reached the
            // subscription before it ended (a RESP2 client takes what follows a count of 0 as
            // replies).
            let unsubscribing = unsubscribes(&args[0]) || args[0].eq_ignore_ascii_case(b"reset");
            if unsubscribing {
                drain_messages(session, replies);
            }
            let later = match outcome {
                // Its first run's reply is no answer: the session goes with the command to
                // run again on the scripts' thread, and a stand-in stays until it is back.
                _ if moving.is_some() => {
                    let mut stand_in = Session::new(session.info.clone(), session.authenticated);
                    stand_in.proto = session.proto;
                    let session = std::mem::replace(session, stand_in);
                    let slot = Arc::new(std::sync::Mutex::new(None));
                    self.away = Some(slot.clone());
                    let (node, args) = (node.clone(), args.clone());
                    let ran = moving.unwrap_or_default();
                    let reply: shoal_cluster::router::ReplyFuture = Box::pin(async move {
                        let returned = crate::moved::run_elsewhere(node, session, args, ran).await;
                        let reply = returned.as_ref().map(|r| r.reply.clone());
                        *slot.lock().unwrap_or_else(|e| e.into_inner()) = returned;
                        reply.unwrap_or_default()
                    });
                    Some(reply)
                }
                Outcome::Reply(reply) => {
                    if !suppress {
                        reply.encode(session.proto, replies);
                    }
                    None
                }
                // Noted in `in_flight` by `dispatch`.
                Outcome::Later(reply) => Some(reply),
                // Ran here already: later writes need not wait for it.
                Outcome::Acked(reply) => Some(reply),
            };
            if let Some(reply) = later {
                let blocking = shoal_engine::cmd::lookup(&args[0])
                    .is_some_and(shoal_engine::cmd::holds_client);
                let reply = if suppress {
                    // Still run it (it may write), but send nothing.
                    Box::pin(async move {
                        reply.await;
                        bytes::Bytes::new()
                    })
                } else {
                    reply
                };
                if blocking || moving.is_some() {
                    // A blocked client's next commands wait until it is served, as in Redis
                    // (they must not overtake it); a moved script's, for its session.
                    replies.push_blocked(reply);
                    return (processed, Step::Flush);
                }
                replies.push_later(reply);
            }
            // Messages published while it ran (by this very command too, or inside its
            // EXEC) go after its reply, as in Redis 7.2 (redis/redis#12326; 7.0 sent a
            // PUBLISH's own message first, and inside EXEC's array); a subscription's
            // confirmation so comes before the first message it brings.
            if !unsubscribing {
                drain_messages(session, replies);
            }
            if session.close {
                return (processed, Step::Close(Close::Quit));
            }
            if replies.fresh() >= FLUSH_AT || replies.pending() >= MAX_PENDING {
                return (processed, Step::Flush);
            }
        }
    }

    fn bytes_wanted(&self) -> usize {
        self.parser.bytes_wanted()
    }

    async fn next_push(&mut self) -> Result<bytes::Bytes, Close> {
        if let Some(feed) = self.monitor.as_mut() {
            return feed.next().await.map_err(|why| {
                tracing::warn!(
                    client = self.session.info.id,
                    ?why,
                    "closing a monitor that does not keep up"
                );
                Close::OutputLimit
            });
        }
        let Some(mailbox) = self.session.pubsub.as_ref().map(|s| s.mailbox().clone()) else {
            return std::future::pending().await;
        };
        let messages = std::future::poll_fn(|cx| mailbox.poll_take(cx, FLUSH_AT))
            .await
            .map_err(|_| Close::OutputLimit)?;
        let mut out = BytesMut::new();
        for m in messages {
            m.reply(self.session.proto)
                .encode(self.session.proto, &mut out);
        }
        Ok(out.freeze())
    }

    fn pushes_out_of_band(&self) -> bool {
        // In a cluster a tracking client's invalidation may concern a read whose reply is
        // still to come (forwarded): it waits behind the replies, as Redis sends it after.
        self.monitor.is_none()
            && self.session.proto == shoal_resp::Protocol::Resp3
            && !(self.clustered && self.session.tracking.is_some())
    }

    fn subscriber(&self) -> bool {
        self.session.pubsub.as_ref().is_some_and(|s| s.total() > 0)
    }

    fn movable(&self) -> bool {
        self.held.is_none() && self.monitor.is_none() && !self.subscriber() && self.away.is_none()
    }
}
