//! The Memcached front end (text and binary protocols): reads requests off a connection (after
//! memcached's `set`-based authentication when `requirepass` is set) and runs each.
//!
//! On a single node a request runs on the store (`mc`), and a multi-key get pauses when the
//! output is full. In a cluster a keyed request travels through the cluster layer as one of
//! the engine's internal rows (`mc::placement` decides, `mc::tunnel` builds it): the router
//! places, forwards, fails over and replicates it as any command, and its reply comes back
//! as the Memcached reply's bytes, in request order through `Replies` as RESP's do. A get of
//! keys with different copies is split by copies and the hits put back in the client's
//! order ([`merge_get`]); flush_all runs on every node.
//!
//! Binary-protocol requests (first byte `0x80`) become the meta command that does the same
//! (`shoal_memcache::binary`), run the same way, and their replies are turned into binary
//! responses, but the plain gets (GET, GETQ, GETK, GETKQ): a single node answers them from
//! the store (`get_here`), a cluster node routes each as the text `gets` of its key. With
//! `requirepass` binary clients authenticate with SASL PLAIN. A sibling of `resp`; the I/O
//! loop is `connection`.

use shoal_engine::cmd::acl;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use futures_util::future::join_all;
use shoal_memcache::auth::{AuthParser, AuthStep, AUTH_FAILURE};
use shoal_memcache::binary::{self, Action, Sasl, Start};
use shoal_memcache::reply::{self, Status};
use shoal_memcache::{Command, Limits, Parser};
use shoal_resp::reply::Sink;
use shoal_resp::{Protocol, Reply};

use crate::connection::{Close, Frontend, Replies, Step, FLUSH_AT, MAX_PENDING};
use shoal_cluster::router::{dispatch, must_wait, InFlight, Outcome, ReplyFuture};
use shoal_cluster::Server;
use shoal_engine::client::ClientInfo;
use shoal_engine::cmd::{ReplyBudget, Session};
use shoal_engine::mc::{self, bump, execute, get_keys, Flow, PendingGet, Placement};
use shoal_engine::Snapshot;
use shoal_store::{key_slot, PREFETCH_MAX};

/// The Memcached front end of one connection.
pub struct McFrontend {
    parser: Parser,
    limits: Limits,
    /// The normal clients' hard output limit, as of this batch.
    hard: u64,
    /// The limits and `hard` as of the last batch.
    settings: Snapshot<(Limits, u64)>,
    /// A multi-key get paused to flush its output.
    pending: Option<PendingGet>,
    /// While the connection has not authenticated (`requirepass` is set): memcached's
    /// `set`-based authentication, which every request must pass first.
    auth: Option<AuthParser>,
    /// In a cluster: what requests are routed with (an internal session: it may send the
    /// engine's internal rows).
    session: Session,
    /// A request held back until the replies before it are in (see `must_wait`).
    held: Option<(Command, Form)>,
    /// Bytes the binary request in progress needs in all (0 when none is in progress).
    wanted: usize,
    /// Bytes still to discard of a binary request refused from its header (too large), as
    /// memcached swallows it: they are dropped as they arrive, never buffered.
    skip: usize,
    /// The slots the requests whose replies are still to come touch (not run here yet).
    in_flight: InFlight,
    /// Binary requests looked at for their keys ([`binary::peek_get_keys`]) and still to
    /// read.
    prefetched: usize,
}

impl McFrontend {
    pub fn new(node: &Server, info: Arc<ClientInfo>) -> McFrontend {
        let mut session = Session::new(info, true);
        session.internal = true;
        session.acl_epoch = acl::registry(&node.engine).epoch();
        McFrontend {
            parser: Parser::new(),
            limits: mc::limits(&node.engine),
            hard: 0,
            settings: Snapshot::default(),
            pending: None,
            auth: acl::memcache_requires_auth(&node.engine).then(AuthParser::default),
            session,
            held: None,
            wanted: 0,
            skip: 0,
            in_flight: InFlight::default(),
            prefetched: 0,
        }
    }

    /// Reads the next request off `input`, answering those that need no store here
    /// (authentication, SASL, malformed binary requests).
    fn next_request(&mut self, node: &Server, input: &mut BytesMut, out: &mut BytesMut) -> Next {
        if self.auth.is_none() && !acl::memcache_still_allowed(&node.engine, &mut self.session) {
            // Its user was deleted or restricted since it logged in (either protocol).
            let why = "the connection's ACL user no longer allows every command".to_owned();
            return Next::Stop(Step::Close(Close::Protocol(why)));
        }
        if self.skip > 0 {
            let n = self.skip.min(input.len());
            input.advance(n);
            self.skip -= n;
            if self.skip > 0 {
                return Next::Stop(Step::NeedInput);
            }
        }
        if self.parser.at_boundary() {
            match binary::start(input) {
                Start::Text => {}
                Start::Partial => return Next::Stop(Step::NeedInput),
                Start::Binary => return self.next_binary(node, input, out),
            }
        }
        if let Some(auth) = self.auth.as_mut() {
            // memcached's `set`-based authentication, before any text request.
            match auth.parse(input) {
                AuthStep::NeedInput => return Next::Stop(Step::NeedInput),
                AuthStep::Refused(text) => out.extend_from_slice(text.as_bytes()),
                AuthStep::Close(text) => {
                    out.extend_from_slice(text.unwrap_or_default().as_bytes());
                    let why = "unauthenticated request too long".to_owned();
                    return Next::Stop(Step::Close(Close::Protocol(why)));
                }
                AuthStep::Credentials { user, password } => {
                    if self.check_password(node, &user, &password) {
                        reply::status(out, Status::Stored);
                    } else {
                        out.extend_from_slice(AUTH_FAILURE.as_bytes());
                    }
                }
            }
            return Next::Answered;
        }
        match self.parser.parse(input, &self.limits) {
            Ok(Some(cmd)) => {
                self.wanted = 0;
                Next::Request(cmd, Form::Text)
            }
            Ok(None) => {
                self.wanted = self.parser.wanted(input.len());
                Next::Stop(Step::NeedInput)
            }
            Err(e) => {
                if e == shoal_memcache::ParseError::TooLarge {
                    bump(&node.engine.mc_stats.store_too_large);
                }
                if !self.parser.is_quiet(&e) {
                    reply::error(out, &e);
                }
                if e.closes() {
                    return Next::Stop(Step::Close(Close::Protocol(e.to_string())));
                }
                // A `set` or `ms` too large also takes the key's old value away.
                if let Some(delete) = self.parser.take_stale() {
                    return Next::Request(delete, Form::Silent);
                }
                Next::Answered
            }
        }
    }

    /// A binary request (see `shoal_memcache::binary`).
    fn next_binary(&mut self, node: &Server, input: &mut BytesMut, out: &mut BytesMut) -> Next {
        if self.auth.is_some() {
            // Unauthenticated: decided from the header, before a body is buffered.
            let (opcode, opaque, body) = binary::peek(input).unwrap_or_default();
            if !binary::allowed_before_auth(opcode) || body > binary::MAX_UNAUTHENTICATED_BODY {
                let refused = binary::error_response(opcode, binary::status::AUTH_ERROR, opaque);
                out.extend_from_slice(&refused);
                let why = "unauthenticated binary request".to_owned();
                return Next::Stop(Step::Close(Close::Protocol(why)));
            }
        }
        let req = match binary::parse(input, &self.limits) {
            Ok(Some(req)) => req,
            Ok(None) => {
                self.wanted = binary::wanted(input);
                return Next::Stop(Step::NeedInput);
            }
            Err(fatal) => {
                out.extend_from_slice(&fatal.response);
                if let Some(skip) = fatal.skip {
                    bump(&node.engine.mc_stats.store_too_large);
                    // Too large: skipped as it arrives, and the connection goes on; a SET
                    // also takes the key's old value away.
                    self.skip = skip;
                    self.wanted = 0;
                    if let Some(delete) = fatal.stale {
                        return Next::Request(*delete, Form::Silent);
                    }
                    return Next::Answered;
                }
                return Next::Stop(Step::Close(Close::Protocol(fatal.reason.to_owned())));
            }
        };
        self.wanted = 0;
        match binary::action(req, &self.limits) {
            Action::Run(cmd, pending) => Next::Request(cmd, Form::Binary(pending)),
            Action::Get { key, pending } => Next::Get(key, pending),
            Action::Answer(bytes) => {
                out.extend_from_slice(&bytes);
                Next::Answered
            }
            Action::Refuse(bytes, delete) => {
                bump(&node.engine.mc_stats.store_too_large);
                out.extend_from_slice(&bytes);
                Next::Request(delete, Form::Silent)
            }
            Action::Sasl(sasl) => {
                self.sasl(node, sasl, out);
                Next::Answered
            }
        }
    }

    /// SASL on the binary protocol: PLAIN with `requirepass` (user `default`, or a name
    /// Shoal has no user of: see `acl::memcache_login`). Without a
    /// password there is no SASL, as in memcached without `-S`.
    fn sasl(&mut self, node: &Server, sasl: Sasl, out: &mut BytesMut) {
        use binary::status;
        let pending = match &sasl {
            Sasl::ListMechs(p) | Sasl::Step(p) | Sasl::Auth { then: p, .. } => p.clone(),
        };
        if !acl::memcache_requires_auth(&node.engine) {
            binary::reply(&pending, status::UNKNOWN_COMMAND, b"Unknown command", out);
            return;
        }
        match sasl {
            Sasl::ListMechs(p) => binary::reply(&p, status::NO_ERROR, b"PLAIN", out),
            Sasl::Auth {
                credentials: Some((user, password)),
                then,
            } if self.check_password(node, &user, &password) => {
                binary::reply(&then, status::NO_ERROR, b"Authenticated", out);
            }
            Sasl::Auth { then, .. } | Sasl::Step(then) => {
                binary::reply(&then, status::AUTH_ERROR, b"Auth failure.", out);
            }
        }
    }

    /// Checks a user and password (counted in `auth_cmds`, `auth_errors`); the connection is
    /// authenticated from then on when they match.
    fn check_password(&mut self, node: &Server, user: &[u8], password: &[u8]) -> bool {
        bump(&node.engine.mc_stats.auth_cmds);
        let Some(user) = acl::memcache_login(&node.engine, user, password) else {
            bump(&node.engine.mc_stats.auth_errors);
            return false;
        };
        self.auth = None;
        *self
            .session
            .info
            .user
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = user;
        true
    }

    /// Runs a request and queues its reply in `form`; `None` when it must wait for the
    /// replies before it (see `route`): it is kept in `held` until they are in.
    fn submit(
        &mut self,
        node: &Arc<Server>,
        cmd: Command,
        form: Form,
        replies: &mut Replies,
        now: u64,
    ) -> Option<Flow> {
        let answer = match node.cluster {
            Some(_) => self.route(node, cmd, replies.held(self.hard), now),
            None => Answer::Here(cmd),
        };
        let flow = match (answer, form) {
            (Answer::Held(cmd), form) => {
                self.held = Some((cmd, form));
                return None;
            }
            // A dump streams on its own, as memcached's: refused behind replies still to go
            // out (memcached's `resp_has_stack`), with its words.
            // (Checked after the crawler's being on, as memcached does.)
            (Answer::Here(Command::MetaDump { .. }), Form::Text)
                if !replies.is_empty() && node.engine.mc_stats.crawler_on() =>
            {
                replies
                    .buf()
                    .extend_from_slice(b"ERROR cannot pipeline other commands before metadump\r\n");
                Flow::Continue
            }
            (Answer::Here(cmd), Form::Text) => {
                execute(&node.engine, cmd, now, replies.buf(), FLUSH_AT)
            }
            (Answer::Here(cmd), Form::Silent) => shoal_engine::prefixes::muted(|| {
                execute(&node.engine, cmd, now, &mut BytesMut::new(), usize::MAX)
            }),
            (Answer::Now(_), Form::Silent) => Flow::Continue,
            (Answer::Later(f), Form::Silent) => {
                // In its turn, so what follows is answered after it ran.
                replies.push_later(Box::pin(async move {
                    f.await;
                    Bytes::new()
                }));
                Flow::Continue
            }
            (Answer::Here(cmd), Form::Binary(p)) => {
                // One key at most: the reply is bounded by one value.
                let mut text = BytesMut::new();
                let flow = execute(&node.engine, cmd, now, &mut text, usize::MAX);
                binary::respond(&p, &text, replies.buf());
                flow
            }
            (Answer::Now(bytes), Form::Text) => {
                replies.put_shared(&bytes);
                Flow::Continue
            }
            (Answer::Now(bytes), Form::Binary(p)) => {
                binary::respond(&p, &bytes, replies.buf());
                Flow::Continue
            }
            (Answer::Later(f), Form::Text) => {
                replies.push_later(f);
                Flow::Continue
            }
            (Answer::Here(cmd), Form::BinaryGet(p, key)) => {
                // One key: the reply is bounded by one value.
                let mut text = BytesMut::new();
                let flow = execute(&node.engine, cmd, now, &mut text, usize::MAX);
                binary::gets_response(&p, &key, &text, replies.buf());
                flow
            }
            (Answer::Now(bytes), Form::BinaryGet(p, key)) => {
                binary::gets_response(&p, &key, &bytes, replies.buf());
                Flow::Continue
            }
            (Answer::Later(f), Form::BinaryGet(p, key)) => {
                replies.push_later(Box::pin(async move {
                    let text = f.await;
                    let mut out = BytesMut::new();
                    binary::gets_response(&p, &key, &text, &mut out);
                    out.freeze()
                }));
                Flow::Continue
            }
            (Answer::Later(f), Form::Binary(p)) => {
                replies.push_later(Box::pin(async move {
                    let text = f.await;
                    let mut out = BytesMut::new();
                    binary::respond(&p, &text, &mut out);
                    out.freeze()
                }));
                Flow::Continue
            }
        };
        Some(flow)
    }
}

/// How a request's reply goes back.
enum Form {
    /// The text protocol's bytes, as they are.
    Text,
    /// None: a request run for its effect alone (the delete of the old value a too-large
    /// `set` leaves, which memcached does without a word).
    Silent,
    /// Turned into the binary response to this request.
    Binary(binary::Pending),
    /// A binary plain get of this key run as a text `gets` of it: answered from that
    /// reply ([`binary::gets_response`]).
    BinaryGet(binary::Pending, Bytes),
}

/// The next request off the input.
enum Next {
    Request(Command, Form),
    /// A binary plain get (GET, GETQ, GETK, GETKQ) of this key.
    Get(Bytes, binary::Pending),
    /// A request answered already (authentication, SASL, an invalid binary request).
    Answered,
    Stop(Step),
}

impl Frontend for McFrontend {
    fn process(
        &mut self,
        node: &Arc<Server>,
        input: &mut BytesMut,
        replies: &mut Replies,
        now: u64,
    ) -> (u64, Step) {
        let mut processed = 0;
        if replies.pending() == 0 {
            self.in_flight.clear();
        }
        let (limits, hard) = self.settings.get(&node.engine, |s| {
            (mc::limits_of(s), s.client_output_buffer_limit.normal.hard)
        });
        self.hard = *hard;
        self.limits.clone_from(limits);
        if let Some(get) = self.pending.take() {
            // The rest of a multi-get, not inside another client's EXEC (`mc::execute`); a
            // busy script ends it with an error rather than holding this worker.
            let busy = || node.engine.running.is_busy();
            let Some(entered) = node.engine.store.enter_unless(&busy) else {
                replies.buf().extend_from_slice(mc::BUSY);
                return (processed, Step::Flush);
            };
            let flow = get_keys(&node.engine, get, now, replies.buf(), FLUSH_AT);
            drop(entered);
            if let Flow::Paused(get) = flow {
                self.pending = Some(get);
                return (processed, Step::Flush);
            }
        }
        loop {
            // A pipeline of binary gets (GETKQ ... NOOP, a client's multi-get): the loads
            // of their keys start side by side, 16 requests at a time (`Server::prefetch`).
            if self.prefetched == 0
                && input.first() == Some(&binary::REQUEST_MAGIC)
                && self.held.is_none()
                && self.auth.is_none()
                && self.skip == 0
                && self.parser.at_boundary()
            {
                let mut keys: [&[u8]; PREFETCH_MAX] = [&[]; PREFETCH_MAX];
                let (seen, found) = binary::peek_get_keys(input, &mut keys);
                node.prefetch(0, &keys[..found]);
                self.prefetched = seen;
            }
            let (cmd, form) = match self.held.take() {
                Some(held) => held,
                None => {
                    self.prefetched = self.prefetched.saturating_sub(1);
                    match self.next_request(node, input, replies.buf()) {
                        Next::Get(key, pending) if node.cluster.is_none() => {
                            processed += 1;
                            get_here(node, &key, &pending, replies.buf(), now);
                            if replies.fresh() >= FLUSH_AT {
                                return (processed, Step::Flush);
                            }
                            continue;
                        }
                        // In a cluster through the router (also for a key owned here: the
                        // router orders it after the connection's forwarded writes and waits
                        // for a hand-off's fetch), as the text `gets` of its key, so the owner
                        // reads it as a single node does; a key no text request can name as
                        // its `mg`.
                        Next::Get(key, pending) if binary::text_safe_key(&key) => {
                            let gets = Command::Get {
                                keys: vec![key.clone()],
                                with_cas: true,
                                touch: None,
                            };
                            (gets, Form::BinaryGet(pending, key))
                        }
                        Next::Get(key, pending) => {
                            (binary::get_command(&key), Form::Binary(pending))
                        }
                        Next::Request(cmd, Form::Silent) => {
                            // The removal of a too-large set's stale value (counted once,
                            // here).
                            mc::count_refused_set(&node.engine, &cmd);
                            (cmd, Form::Silent)
                        }
                        Next::Request(cmd, form) => (cmd, form),
                        Next::Answered => {
                            processed += 1;
                            if replies.fresh() >= FLUSH_AT {
                                return (processed, Step::Flush);
                            }
                            continue;
                        }
                        Next::Stop(step) => {
                            self.prefetched = 0;
                            return (processed, step);
                        }
                    }
                }
            };
            let Some(flow) = self.submit(node, cmd, form, replies, now) else {
                return (processed, Step::Flush);
            };
            processed += 1;
            match flow {
                Flow::Continue => {}
                Flow::Close => return (processed, Step::Close(Close::Quit)),
                Flow::Paused(get) => {
                    self.pending = Some(get);
                    return (processed, Step::Flush);
                }
            }
            if replies.fresh() >= FLUSH_AT || replies.pending() >= MAX_PENDING {
                return (processed, Step::Flush);
            }
        }
    }

    fn bytes_wanted(&self) -> usize {
        self.wanted
    }

    fn movable(&self) -> bool {
        self.pending.is_none() && self.held.is_none()
    }
}

/// Answers the binary plain get `p` of `key` from this node's store.
fn get_here(node: &Server, key: &[u8], p: &binary::Pending, out: &mut BytesMut, now: u64) {
    if !mc::get_one(&node.engine, key, now, |found| {
        binary::get_response(p, found, out)
    }) {
        binary::respond(p, mc::BUSY, out);
    }
}

/// What became of a request in a cluster.
enum Answer {
    /// It runs on this node's store (keyless, or on a single node).
    Here(Command),
    /// Answered already: the Memcached reply's bytes.
    Now(Bytes),
    /// Answered later (forwarded, split, fanned out), in order.
    Later(ReplyFuture),
    /// Held back until the replies before it are in (it touches a key on a slot they touch).
    Held(Command),
}

impl McFrontend {
    /// Where `cmd` runs in a cluster: here, or through the cluster layer (see the module
    /// docs). `queued` is the reply bytes the connection holds already.
    fn route(&mut self, node: &Arc<Server>, cmd: Command, queued: usize, now: u64) -> Answer {
        let quiet = mc::quiet(&cmd);
        let (args, keys, write) = match (mc::placement(&cmd), &cmd) {
            (Placement::Keys { keys, write }, _) => (mc::tunnel(&cmd, &keys, write), keys, write),
            // Refused here when flush_all is disabled (`memcache-disable-flush-all`).
            (Placement::Flush, &Command::FlushAll { delay, noreply })
                if !node.engine.with_settings(|s| s.memcache_disable_flush_all) =>
            {
                (mc::tunnel_flush(delay, noreply, now), Vec::new(), true)
            }
            (Placement::Here, Command::Stats { arg: None }) => {
                return Answer::Later(self.stats_with_cluster_sums(node, cmd, now));
            }
            _ => return Answer::Here(cmd),
        };
        // A request on a key owned here waits for the requests still on their way to its
        // slot (or for a flush on its way), so a pipeline's requests on one key take effect
        // in order (as RESP's do).
        if must_wait(node, &args, &self.in_flight) {
            return Answer::Held(cmd);
        }
        if let Command::Get {
            with_cas, touch, ..
        } = &cmd
        {
            if keys.len() > 1 {
                // Split by copies; the parts share the reply budget.
                let groups = group_by_copies(node, &keys);
                self.session.budget = budget(self.hard, queued, groups.len());
                let get = Get {
                    with_cas: *with_cas,
                    touch: *touch,
                    write,
                };
                let parts: Vec<ReplyFuture> = groups
                    .iter()
                    .map(|g| {
                        let part_keys = g.iter().map(|&i| keys[i].clone()).collect();
                        self.get_part(node, part_keys, get, now)
                    })
                    .collect();
                return Answer::Later(Box::pin(async move {
                    let parts = join_all(parts).await;
                    merge_get(&keys, &groups, &parts)
                }));
            }
        }
        self.session.budget = budget(self.hard, queued, 1);
        match dispatch(node, &mut self.session, &mut self.in_flight, &args, now) {
            Outcome::Reply(r) => Answer::Now(reply_bytes(r, quiet)),
            Outcome::Later(f) => Answer::Later(in_mc(f, quiet)),
            Outcome::Acked(f) => Answer::Later(in_mc(f, quiet)),
        }
    }

    /// The part of a get for `keys` (one copy list when they were grouped), as Memcached
    /// bytes. When the owners changed between the grouping and the routing (a join or leave
    /// in between), the router refuses the keys together (CROSSSLOT): then each key goes on
    /// its own.
    fn get_part(
        &mut self,
        node: &Arc<Server>,
        keys: Vec<Bytes>,
        get: Get,
        now: u64,
    ) -> ReplyFuture {
        let part = Command::Get {
            keys: keys.clone(),
            with_cas: get.with_cas,
            touch: get.touch,
        };
        let args = mc::tunnel(&part, &keys, get.write);
        match dispatch(node, &mut self.session, &mut self.in_flight, &args, now) {
            Outcome::Reply(Reply::Error(e)) if e.starts_with("CROSSSLOT") && keys.len() > 1 => {
                let singles: Vec<ReplyFuture> = keys
                    .iter()
                    .map(|k| self.get_part(node, vec![k.clone()], get, now))
                    .collect();
                let groups: Vec<Vec<usize>> = (0..keys.len()).map(|i| vec![i]).collect();
                Box::pin(async move {
                    let parts = join_all(singles).await;
                    merge_get(&keys, &groups, &parts)
                })
            }
            Outcome::Later(f) if keys.len() > 1 && !get.write => {
                // The owners can change while the part is on its way (a join or leave): the
                // copy it went to then sends it back unrun, and the router gives up on keys
                // that no longer share their copies (TRYAGAIN). A memcached client would
                // take that error for a broken server (libmemcached disables it), so the
                // keys are read again, each on its own. Reads only: a gat's touch is a write.
                // Unlike a split RESP command's part (`router/split.rs`) the part's place in
                // the connection's order is not kept: a set pipelined behind the get may
                // run before the read again, which then sees the newer value.
                let node = node.clone();
                let mut session = Session::new(self.session.info.clone(), true);
                session.internal = true;
                let share = self.session.budget.share(keys.len());
                Box::pin(async move {
                    let first = f.await;
                    let Some(cluster) = node.cluster.as_ref() else {
                        return from_resp(first, false);
                    };
                    let slots: Vec<u16> = keys.iter().map(|k| key_slot(k)).collect();
                    if !first.starts_with(shoal_cluster::handoff::OTHER_VIEW)
                        || shoal_cluster::router::share_copies(&cluster.view(), &slots)
                    {
                        return from_resp(first, false);
                    }
                    cluster
                        .stats
                        .split_resent
                        .fetch_add(keys.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    let now = shoal_engine::clock::now_ms();
                    let singles: Vec<ReplyFuture> = keys
                        .iter()
                        .map(|k| {
                            let one = vec![k.clone()];
                            let part = Command::Get {
                                keys: one.clone(),
                                with_cas: get.with_cas,
                                touch: None,
                            };
                            let args = mc::tunnel(&part, &one, false);
                            session.budget = share;
                            let mut in_flight = InFlight::default();
                            part_reply(dispatch(&node, &mut session, &mut in_flight, &args, now))
                        })
                        .collect();
                    let groups: Vec<Vec<usize>> = (0..keys.len()).map(|i| vec![i]).collect();
                    merge_get(&keys, &groups, &join_all(singles).await)
                })
            }
            other => part_reply(other),
        }
    }

    /// `stats` in a cluster: this node's own figures (what ran on its store, the copies it
    /// holds), then the cluster's: `cluster_nodes`, and `cluster_curr_items`, each key
    /// counted once (DBSIZE across the cluster).
    fn stats_with_cluster_sums(
        &mut self,
        node: &Arc<Server>,
        cmd: Command,
        now: u64,
    ) -> ReplyFuture {
        let mut own = BytesMut::new();
        execute(&node.engine, cmd, now, &mut own, FLUSH_AT);
        let members = node.cluster.as_ref().map_or(1, |c| c.view().len());
        let dbsize = [Bytes::from_static(b"DBSIZE")];
        // A read of counts: keyed requests after it need not wait for it (a connection's
        // `in_flight` would count it as touching every slot).
        let items = dispatch(
            node,
            &mut self.session,
            &mut InFlight::default(),
            &dbsize,
            now,
        )
        .into_future(Protocol::Resp2);
        Box::pin(async move {
            let items = shoal_resp::integer_value(&items.await);
            let body = own.strip_suffix(b"END\r\n").unwrap_or(&own);
            let mut out = BytesMut::from(body);
            reply::stat(&mut out, "cluster_nodes", members);
            // Left out when some slot had no live copy: there is no sum to give.
            if let Some(n) = items {
                reply::stat(&mut out, "cluster_curr_items", n);
            }
            reply::end(&mut out);
            out.freeze()
        })
    }
}

/// What the next reply may take under the client's hard output limit `hard` (as RESP's),
/// with `queued` bytes held already, shared by `parts` parts.
fn budget(hard: u64, queued: usize, parts: usize) -> ReplyBudget {
    match hard {
        0 => ReplyBudget::new(0),
        h => ReplyBudget::new((h.saturating_sub(queued as u64) / parts.max(1) as u64).max(1)),
    }
}

/// What the parts of one get share.
#[derive(Clone, Copy)]
struct Get {
    with_cas: bool,
    touch: Option<i64>,
    write: bool,
}

/// The keys of a get grouped by their copies (owner first, then replicas), as indices into
/// `keys` in request order: each group can go to one node and fail over as one.
fn group_by_copies(node: &Server, keys: &[Bytes]) -> Vec<Vec<usize>> {
    let Some(cluster) = node.cluster.as_ref() else {
        return vec![(0..keys.len()).collect()];
    };
    let view = cluster.view();
    let mut at: HashMap<&[u16], usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let copies = view.owners(key_slot(k));
        let g = *at.entry(copies).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    groups
}

/// A get's reply from the replies of its parts: `parts[g]` answered the keys at indices
/// `groups[g]` of `keys` (hits only, in that order); the hits go back in the client's key
/// order, then END. A part that is not a get reply (an error) is the whole reply.
pub fn merge_get(keys: &[Bytes], groups: &[Vec<usize>], parts: &[Bytes]) -> Bytes {
    let mut found: Vec<Option<Bytes>> = vec![None; keys.len()];
    for (group, part) in groups.iter().zip(parts) {
        let Some(blocks) = reply::value_blocks(part) else {
            return part.clone();
        };
        let mut next = group.iter();
        for b in blocks {
            let key = &part[b.key];
            // The part's hits are in its key order: the block is the next key it names.
            let Some(&i) = next.by_ref().find(|&&i| keys[i][..] == *key) else {
                return Bytes::from_static(
                    b"SERVER_ERROR get reply out of order between nodes\r\n",
                );
            };
            found[i] = Some(part.slice(b.block));
        }
    }
    let mut out =
        BytesMut::with_capacity(found.iter().flatten().map(Bytes::len).sum::<usize>() + 5);
    for block in found.iter().flatten() {
        out.extend_from_slice(block);
    }
    reply::end(&mut out);
    out.freeze()
}

/// A reply of an internal row, as the Memcached bytes it carries; an error (no copy
/// reachable, the node still joining) as memcached's SERVER_ERROR, or nothing for a request
/// sent with `noreply`.
fn reply_bytes(reply: Reply, quiet: bool) -> Bytes {
    let mut out = BytesMut::new();
    match reply {
        Reply::Bulk(b) => return b,
        Reply::Error(_) if quiet => {}
        Reply::Error(text) => server_error(&mut out, &text),
        other => server_error(&mut out, &format!("unexpected reply {other:?}")),
    }
    out.freeze()
}

fn server_error(out: &mut BytesMut, text: &str) {
    out.extend_from_slice(b"SERVER_ERROR ");
    out.extend_from_slice(text.replace(['\r', '\n'], " ").as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// A get part's reply, as Memcached bytes.
fn part_reply(outcome: Outcome) -> ReplyFuture {
    match outcome {
        Outcome::Reply(r) => {
            let bytes = reply_bytes(r, false);
            Box::pin(async move { bytes })
        }
        Outcome::Later(f) | Outcome::Acked(f) => in_mc(f, false),
    }
}

/// A forwarded reply's bytes (RESP2, as the router returns them) in Memcached's protocol.
fn in_mc(f: ReplyFuture, quiet: bool) -> ReplyFuture {
    Box::pin(async move { from_resp(f.await, quiet) })
}

/// The Memcached bytes inside an internal row's encoded reply: a bulk string's content,
/// `OK` for a flush's `+OK`, SERVER_ERROR for an error (nothing when `quiet`).
fn from_resp(resp: Bytes, quiet: bool) -> Bytes {
    match resp.first() {
        Some(b'$') => {
            let Some(header) = resp.windows(2).position(|w| w == b"\r\n") else {
                return Bytes::from_static(b"SERVER_ERROR truncated reply between nodes\r\n");
            };
            let len = std::str::from_utf8(&resp[1..header])
                .ok()
                .and_then(|n| n.parse::<usize>().ok());
            let end = len.and_then(|n| (header + 2).checked_add(n));
            match end {
                Some(end) if end.checked_add(2) == Some(resp.len()) => resp.slice(header + 2..end),
                _ => Bytes::from_static(b"SERVER_ERROR malformed reply between nodes\r\n"),
            }
        }
        _ if quiet => Bytes::new(),
        Some(b'+') => Bytes::from_static(b"OK\r\n"),
        Some(b'-') => {
            let mut out = BytesMut::new();
            let text = String::from_utf8_lossy(&resp[1..]);
            server_error(&mut out, text.trim_end());
            out.freeze()
        }
        _ => Bytes::from_static(b"SERVER_ERROR unexpected reply between nodes\r\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(key: &str, data: &str) -> Vec<u8> {
        let mut out = BytesMut::new();
        reply::value(&mut out, key.as_bytes(), 0, data.as_bytes(), None);
        out.to_vec()
    }

    fn part(values: &[(&str, &str)]) -> Bytes {
        let mut out: Vec<u8> = values.iter().flat_map(|(k, d)| value(k, d)).collect();
        out.extend_from_slice(b"END\r\n");
        Bytes::from(out)
    }

    #[test]
    fn a_split_get_answers_in_the_clients_key_order() {
        let keys: Vec<Bytes> = ["a", "b", "c", "a", "d"]
            .iter()
            .map(|k| Bytes::from(*k))
            .collect();
        // a, c, a on one node (a hit twice, c a miss); b, d on another (both hits).
        let groups = vec![vec![0, 2, 3], vec![1, 4]];
        let parts = vec![
            part(&[("a", "1"), ("a", "1")]),
            part(&[("b", "2"), ("d", "4")]),
        ];
        let merged = merge_get(&keys, &groups, &parts);
        let want = [
            value("a", "1"),
            value("b", "2"),
            value("a", "1"),
            value("d", "4"),
        ]
        .concat();
        assert_eq!(&merged[..], [want, b"END\r\n".to_vec()].concat());
        // A part that failed fails the get.
        let err = Bytes::from_static(b"SERVER_ERROR CLUSTERDOWN no copy\r\n");
        let merged = merge_get(&keys, &groups, &[parts[0].clone(), err.clone()]);
        assert_eq!(merged, err);
        // Hits out of the part's key order are refused, not misfiled.
        let swapped = vec![part(&[("d", "4"), ("b", "2")]), part(&[])];
        let merged = merge_get(&keys, &[vec![1, 4], vec![0, 2, 3]], &swapped);
        assert!(merged.starts_with(b"SERVER_ERROR"));
    }

    #[test]
    fn internal_replies_become_memcached_bytes() {
        assert_eq!(
            &from_resp(Bytes::from_static(b"$8\r\nSTORED\r\n\r\n"), false)[..],
            b"STORED\r\n"
        );
        assert_eq!(&from_resp(Bytes::from_static(b"$0\r\n\r\n"), true)[..], b"");
        assert_eq!(
            &from_resp(Bytes::from_static(b"+OK\r\n"), false)[..],
            b"OK\r\n"
        );
        assert_eq!(&from_resp(Bytes::from_static(b"+OK\r\n"), true)[..], b"");
        assert_eq!(
            &from_resp(Bytes::from_static(b"-TRYAGAIN joining\r\n"), false)[..],
            b"SERVER_ERROR TRYAGAIN joining\r\n"
        );
        assert_eq!(&from_resp(Bytes::from_static(b"-ERR x\r\n"), true)[..], b"");
        for bad in [&b"$5\r\nab\r\n"[..], b"$x\r\n", b":1\r\n", b"$3"] {
            assert!(from_resp(Bytes::copy_from_slice(bad), false).starts_with(b"SERVER_ERROR"));
        }
    }
}
