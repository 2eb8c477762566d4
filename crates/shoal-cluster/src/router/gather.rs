//! A read-only command on keys of several owners (SUNION, SINTER, SDIFF, ZUNION, ZINTER,
//! ZDIFF, their CARD forms, PFCOUNT, LCS, ...): each key's value is fetched from its owner
//! (DUMP, routed as a read), restored into a scratch store of this worker thread, and the
//! command runs there, so it answers exactly as the engine does on one node (ordering,
//! errors, WRONGTYPE), then the scratch store is emptied. Reads of several owners are not
//! one snapshot: each key is read at its owner at a slightly different moment, as a
//! pipeline of reads would see them. Writes across owners stay refused (CROSSSLOT): they
//! could not be atomic.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::join_all;
use shoal_engine::cmd::{self, flag, CommandSpec, Route, Session};
use shoal_engine::engine::Engine;
use shoal_engine::hooks::{ClusterInfo, Host};
use shoal_resp::{is_error, Protocol, Reply};

use super::outcome::{encode, error_bytes, Outcome};
use super::Order;
use crate::{Cluster, Server};

/// Whether a command on keys of several owners may run by gathering them: it reads only,
/// does not block, is not a script (which could name other keys), and names at most
/// [`MAX_KEYS`] keys (each is one request to its owner).
pub(super) fn gathers(spec: &CommandSpec, args: &[Bytes]) -> bool {
    gathers_row(spec) && spec.key_positions(args).nth(MAX_KEYS).is_none()
}

/// Keys a gathered command may name at most; one with more answers CROSSSLOT.
pub(super) const MAX_KEYS: usize = 1024;

/// [`gathers`]' rule on the row alone.
fn gathers_row(spec: &CommandSpec) -> bool {
    spec.route == Route::Owner
        && !cmd::may_write(spec)
        && spec.flags & flag::BLOCKING == 0
        && spec.group != "scripting"
}

/// Runs `args` (a command [`gathers`] allows) on its keys fetched from their owners.
pub(super) fn gather(
    node: &Arc<Server>,
    cluster: &Cluster,
    session: &mut Session,
    order: &mut Order,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Outcome {
    let dump = cmd::lookup(b"dump").expect("a table row");
    let mut seen = std::collections::HashSet::new();
    let keys: Vec<Bytes> = spec
        .key_positions(args)
        .filter(|&p| seen.insert(&args[p]))
        .map(|p| args[p].clone())
        .collect();
    let mut parts = Vec::with_capacity(keys.len());
    for key in &keys {
        let request = [Bytes::from_static(b"DUMP"), key.clone()];
        let reply = super::route(node, cluster, session, order, dump, &request, now_ms);
        parts.push(reply.into_future(session.proto));
    }
    let (proto, args, internal) = (session.proto, args.to_vec(), cluster.internal.clone());
    Outcome::Later(Box::pin(async move {
        let replies = join_all(parts).await;
        let mut values = Vec::with_capacity(keys.len());
        for (key, reply) in keys.into_iter().zip(replies) {
            if is_error(&reply) {
                return reply;
            }
            match bulk(&reply) {
                Some(value) => values.push((key, value)),
                None => return error_bytes("ERR unexpected DUMP reply from another node"),
            }
        }
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let scratch = scratch.get_or_insert_with(Scratch::new);
            encode(&scratch.run(internal, proto, &values, &args), proto)
        })
    }))
}

/// A DUMP reply's payload, `Some(None)` for no key; `None` if it is not one.
fn bulk(reply: &[u8]) -> Option<Option<Bytes>> {
    if reply == b"$-1\r\n" || reply == b"_\r\n" {
        return Some(None);
    }
    let rest = reply.strip_prefix(b"$")?;
    let line = rest.iter().position(|&b| b == b'\r')?;
    let len: usize = std::str::from_utf8(&rest[..line]).ok()?.parse().ok()?;
    let body = rest.get(line + 2..)?.strip_suffix(b"\r\n")?;
    (body.len() == len).then(|| Some(Bytes::copy_from_slice(body)))
}

thread_local! {
    /// This worker thread's scratch store (made on first use).
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// An engine of its own, with no cluster, that holds a gathered command's keys while it
/// runs.
struct Scratch {
    engine: Engine,
}

impl Host for Scratch {
    fn engine(&self) -> &Engine {
        &self.engine
    }
    fn cluster(&self) -> Option<&dyn ClusterInfo> {
        None
    }
    fn shutdown(&self) {}
}

impl Scratch {
    fn new() -> Scratch {
        // No memory limit: an eviction would drop a gathered key (the DUMP replies are
        // bounded by the forwarded reply limit).
        let config = shoal_engine::config::NodeConfig {
            maxmemory: shoal_engine::config::ByteSize(0),
            ..Default::default()
        };
        Scratch {
            engine: Engine::new(config, None),
        }
    }

    /// Restores `values` (absent ones stay absent), runs `args`, empties the store.
    fn run(
        &self,
        info: Arc<shoal_engine::client::ClientInfo>,
        proto: Protocol,
        values: &[(Bytes, Option<Bytes>)],
        args: &[Bytes],
    ) -> Reply {
        let mut session = Session::new(info, true);
        session.proto = proto;
        let now_ms = shoal_engine::clock::now_ms();
        let run = |session: &mut Session, args: &[Bytes]| -> Reply {
            match cmd::lookup(&args[0]) {
                Some(spec) => cmd::run(self, session, spec, args, now_ms, None),
                None => Reply::error("ERR unknown command"),
            }
        };
        let mut reply = None;
        for (key, value) in values {
            let Some(value) = value else { continue };
            let restore = [
                Bytes::from_static(b"RESTORE"),
                key.clone(),
                Bytes::from_static(b"0"),
                value.clone(),
            ];
            if let r @ Reply::Error(_) = run(&mut session, &restore) {
                reply = Some(r);
                break;
            }
        }
        let reply = reply.unwrap_or_else(|| run(&mut session, args));
        run(&mut session, &[Bytes::from_static(b"FLUSHALL")]);
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_reply_reads_back_and_nothing_else_does() {
        assert_eq!(bulk(b"$-1\r\n"), Some(None));
        assert_eq!(bulk(b"_\r\n"), Some(None));
        assert_eq!(
            bulk(b"$3\r\na\r\n\r\n"),
            Some(Some(Bytes::from_static(b"a\r\n")))
        );
        for bad in [
            &b"+OK\r\n"[..],
            b"$4\r\nabc\r\n",
            b"$3\r\nabc",
            b"",
            b"$x\r\n",
        ] {
            assert_eq!(bulk(bad), None);
        }
    }

    #[test]
    fn only_reads_that_do_not_block_gather() {
        let g = |name: &str| gathers_row(cmd::lookup(name.as_bytes()).unwrap());
        for yes in [
            "sunion",
            "sinter",
            "sdiff",
            "zunion",
            "zinter",
            "sintercard",
            "pfcount",
            "lcs",
        ] {
            assert!(g(yes), "{yes}");
        }
        for no in [
            "sunionstore",
            "rename",
            "blpop",
            "eval_ro",
            "mset",
            "mget",
            "ping",
        ] {
            assert!(!g(no), "{no}");
        }
        // Every row of several keys that gathers, so that a new one is a choice.
        let several: Vec<&str> = cmd::TABLE
            .iter()
            .filter(|s| gathers_row(s) && (s.last_key != s.first_key || s.numkeys != 0))
            .map(|s| s.name)
            .collect();
        let listed = [
            "lcs",
            "sinter",
            "sunion",
            "sdiff",
            "sintercard",
            "zunion",
            "zinter",
            "zdiff",
            "zintercard",
            "pfcount",
        ];
        assert_eq!(several, listed);
        // At most MAX_KEYS keys (one request each).
        let sunion = cmd::lookup(b"sunion").unwrap();
        let with = |n: usize| -> Vec<Bytes> {
            std::iter::once(Bytes::from_static(b"SUNION"))
                .chain((0..n).map(|i| Bytes::from(format!("k{i}"))))
                .collect()
        };
        assert!(gathers(sunion, &with(MAX_KEYS)));
        assert!(!gathers(sunion, &with(MAX_KEYS + 1)));
    }
}
