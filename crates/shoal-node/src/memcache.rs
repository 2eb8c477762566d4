//! The Memcached text protocol front end: reads requests off a connection (after
//! memcached's `set`-based authentication when `requirepass` is set), hands each to `mc`
//! for execution on the store, and pauses a multi-key get when the output is full. A sibling
//! of `resp`; the I/O loop is `connection`.

use std::sync::Arc;

use bytes::BytesMut;
use shoal_memcache::auth::{AuthParser, AuthStep, AUTH_FAILURE};
use shoal_memcache::binary::{self, Start};
use shoal_memcache::reply::{self, Status};
use shoal_memcache::{Limits, Parser};

use crate::connection::{Close, Frontend, Replies, Step, FLUSH_AT};
use shoal_cluster::Server;
use shoal_engine::mc::{bump, execute, get_keys, Flow, PendingGet};

/// The Memcached front end of one connection.
pub struct McFrontend {
    parser: Parser,
    limits: Limits,
    /// A multi-key get paused to flush its output.
    pending: Option<PendingGet>,
    /// While the connection has not authenticated (`requirepass` is set): memcached's
    /// `set`-based authentication, which every request must pass first.
    auth: Option<AuthParser>,
}

impl McFrontend {
    pub fn new(node: &Server) -> McFrontend {
        McFrontend {
            parser: Parser::new(),
            limits: limits(node),
            pending: None,
            auth: node.engine.requires_auth().then(AuthParser::default),
        }
    }

    /// Runs the authentication requests at the front of `input`: how many ran, and where to
    /// stop (`None` once the connection has authenticated: go on with its requests).
    fn authenticate(
        &mut self,
        node: &Server,
        input: &mut BytesMut,
        out: &mut BytesMut,
    ) -> (u64, Option<Step>) {
        let mut processed = 0;
        while let Some(auth) = self.auth.as_mut() {
            match auth.parse(input) {
                AuthStep::NeedInput => return (processed, Some(Step::NeedInput)),
                AuthStep::Refused(text) => out.extend_from_slice(text.as_bytes()),
                AuthStep::Close(text) => {
                    out.extend_from_slice(text.unwrap_or_default().as_bytes());
                    let why = "unauthenticated request too long".to_owned();
                    return (processed, Some(Step::Close(Close::Protocol(why))));
                }
                AuthStep::Credentials { user, password } => {
                    bump(&node.engine.mc_stats.auth_cmds);
                    if node.engine.check_password(&user, &password) {
                        self.auth = None;
                        reply::status(out, Status::Stored);
                    } else {
                        bump(&node.engine.mc_stats.auth_errors);
                        out.extend_from_slice(AUTH_FAILURE.as_bytes());
                    }
                }
            }
            processed += 1;
            if out.len() >= FLUSH_AT {
                return (processed, Some(Step::Flush));
            }
        }
        (processed, None)
    }
}

/// A binary-protocol request at the front of `input` (at a request boundary): answered with
/// memcached's binary "Not supported" error, then the connection closes. `None` when the
/// input is text; `NeedInput` while the binary header is still arriving (24 bytes at most).
fn refuse_binary(input: &BytesMut, out: &mut BytesMut) -> Option<Step> {
    match binary::start(input) {
        Start::Text => None,
        Start::Partial => Some(Step::NeedInput),
        Start::Binary => {
            binary::not_supported(input, out);
            let why = "memcached binary protocol request (not supported)".to_owned();
            Some(Step::Close(Close::Protocol(why)))
        }
    }
}

fn limits(node: &Server) -> Limits {
    node.engine.with_settings(|s| Limits {
        max_item_size: usize::try_from(s.memcache_max_item_size.0).unwrap_or(usize::MAX),
        ..Limits::default()
    })
}

impl Frontend for McFrontend {
    fn process(
        &mut self,
        node: &Arc<Server>,
        input: &mut BytesMut,
        replies: &mut Replies,
        now: u64,
    ) -> (u64, Step) {
        // Memcached requests always run here (the front end is refused in a cluster), so
        // nothing is ever pending and replies go straight to the output.
        let out = &mut replies.out.cur;
        let mut processed = 0;
        if self.parser.at_boundary() {
            if let Some(step) = refuse_binary(input, out) {
                return (processed, step);
            }
        }
        if self.auth.is_some() {
            let (authenticated, stop) = self.authenticate(node, input, out);
            processed = authenticated;
            if let Some(stop) = stop {
                return (processed, stop);
            }
        }
        self.limits = limits(node);
        if let Some(get) = self.pending.take() {
            if let Flow::Paused(get) = get_keys(&node.engine, get, now, out, FLUSH_AT) {
                self.pending = Some(get);
                return (processed, Step::Flush);
            }
        }
        loop {
            if self.parser.at_boundary() {
                if let Some(step) = refuse_binary(input, out) {
                    return (processed, step);
                }
            }
            match self.parser.parse(input, &self.limits) {
                Ok(Some(cmd)) => {
                    processed += 1;
                    match execute(&node.engine, cmd, now, out, FLUSH_AT) {
                        Flow::Continue => {}
                        Flow::Close => return (processed, Step::Close(Close::Quit)),
                        Flow::Paused(get) => {
                            self.pending = Some(get);
                            return (processed, Step::Flush);
                        }
                    }
                }
                Ok(None) => return (processed, Step::NeedInput),
                Err(e) => {
                    reply::error(out, &e);
                    if e.closes() {
                        return (processed, Step::Close(Close::Protocol(e.to_string())));
                    }
                }
            }
            if out.len() >= FLUSH_AT {
                return (processed, Step::Flush);
            }
        }
    }

    fn bytes_wanted(&self) -> usize {
        0
    }
}
