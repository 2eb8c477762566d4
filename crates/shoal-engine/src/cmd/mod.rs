//! Commands: the table, dispatch, and the argument helpers every family shares.
//!
//! A request arrives as its argument vector. `prepare` looks the name up in `TABLE` (one row a
//! command: arity, flags, key positions, routing tip, handler) and checks arity,
//! authentication and MULTI queueing; `run` checks memory and calls the handler (the cluster
//! layer decides in between where it runs). `execute` is both, for EXEC's queued commands. Each family lives in its own module and parses its own options:
//! `conn` (PING, HELLO, AUTH, CLIENT, ...), `string` (GET, SET, INCR, ...), `keys` (DEL,
//! EXPIRE, SCAN, ...), `server` (INFO, COMMAND, CONFIG, ...). Error texts are Redis 7's.

pub mod acl;
mod bitmap;
mod cluster;
mod conn;
pub mod db;
mod docs;
mod function;
mod geo;
mod hash;
mod hll;
mod inert;
mod keys;
mod keyspecs;
mod keyspecs_table;
mod list;
mod lua_libs;
mod memcache;
pub mod multi;
mod pubsub;
mod script;
mod server;
mod set;
mod sort;
pub mod stream;
mod string;
#[cfg(test)]
mod tests;
pub mod wait;
mod zcombine;
mod zset;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use shoal_resp::{Protocol, Reply};

use crate::client::ClientInfo;
use crate::engine::Engine;
use crate::hooks::{Host, SlotScope};

pub use cluster::parse_slot;
pub use conn::sets_reply_mode;
pub use pubsub::{gathers as pubsub_gathers, subscribes, unsubscribes};
pub use server::{info_wants_keyspace, render_info, Info};
pub use string::blind_write;

/// Whether a command may run on a key whose state this node could not learn during a
/// hand-off (the cluster layer answers the others TRYAGAIN): blind writes, and every
/// Memcached request, since memcached clients take a miss as a miss and refill it, where an
/// error would fail them.
pub fn runs_in_doubt(args: &[Bytes]) -> bool {
    blind_write(args) || args.first().is_some_and(|n| n.starts_with(b"mc."))
}

/// What a command does to its keys, which decides where it may go when the copy it was sent
/// to does not answer (`shoal_cluster::router::on_failure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads only: any copy may answer it.
    Read,
    /// Writes without reading the key ([`blind_write`], and a Memcached `set`): run twice,
    /// it leaves what running it once leaves.
    BlindWrite,
    /// Any other write (INCR, APPEND, DEL, SET NX, ...): run twice, it may count twice.
    Write,
}

/// Whether a command of row `spec` may change its keys: a write, or a script that may run
/// writes ([`flag::RUNS_WRITES`]).
pub const fn may_write(spec: &CommandSpec) -> bool {
    spec.flags & (flag::WRITE | flag::RUNS_WRITES) != 0
}

/// The [`Access`] of `args`, a command of row `spec`.
pub fn access(spec: &CommandSpec, args: &[Bytes]) -> Access {
    if !may_write(spec) {
        Access::Read
    } else if blind_write(args) || memcache::blind(args) {
        Access::BlindWrite
    } else {
        Access::Write
    }
}

/// Command flags (a subset of Redis's, as COMMAND INFO reports them).
pub mod flag {
    pub const WRITE: u32 = 1;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const FAST: u32 = 1 << 3;
    pub const NOAUTH: u32 = 1 << 4;
    pub const LOADING: u32 = 1 << 5;
    pub const STALE: u32 = 1 << 6;
    pub const ADMIN: u32 = 1 << 7;
    pub const NOSCRIPT: u32 = 1 << 8;
    /// Runs at once even inside MULTI (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
    pub const NOQUEUE: u32 = 1 << 9;
    /// May block the client (BLPOP, BLMOVE, BZPOPMIN, ...): see `crate::blocking`.
    pub const BLOCKING: u32 = 1 << 10;
    /// A deterministic write of one key whose replicas may run it as it is (a replication
    /// delta) instead of taking the key's whole state: run on the same state it gives the
    /// same state. The cluster layer decides when a delta is right (`router::local`).
    pub const DELTA: u32 = 1 << 11;
    /// Refused inside MULTI, which it ends as failed (SHUTDOWN; Redis's `no-multi`).
    pub const NO_MULTI: u32 = 1 << 12;
    /// Pub/Sub (Redis's `pubsub` flag).
    pub const PUBSUB: u32 = 1 << 13;
    /// Not a write, but Redis propagates it (PUBLISH, SPUBLISH, PFCOUNT): a CLIENT PAUSE
    /// WRITE holds it too (Redis's `may-replicate`).
    pub const MAY_REPLICATE: u32 = 1 << 14;
    /// Runs other commands, writes among them (EVAL, EVALSHA): the cluster treats it as a
    /// write of its keys (routed to their owner, never to a copy; the keys replicated after
    /// it), though COMMAND INFO shows Redis's flags (`may_replicate`, not `write`). Not
    /// listed in [`NAMES`].
    pub const RUNS_WRITES: u32 = 1 << 15;
    /// Runs while a script is busy (Redis's `allow-busy`): see [`super::allowed_while_busy`].
    pub const ALLOW_BUSY: u32 = 1 << 16;
    /// Names no key, answers the same on any node and changes nothing of its connection
    /// (PING, ECHO): a cluster may run it inside a transaction sent whole to another node.
    /// Not listed in [`NAMES`].
    pub const ANYWHERE: u32 = 1 << 17;
    /// Redis's `skip_monitor`, `no_mandatory_keys`, `no_async_loading` and `skip_slowlog`,
    /// shown by COMMAND INFO as Redis shows them (what they mean is done where it applies:
    /// a script's calls reach MONITOR after it, EXEC stays out of the slow log).
    pub const SKIP_MONITOR: u32 = 1 << 18;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 19;
    pub const NO_ASYNC_LOADING: u32 = 1 << 20;
    pub const SKIP_SLOWLOG: u32 = 1 << 21;

    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (NOSCRIPT, "noscript"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NOAUTH, "no_auth"),
        (BLOCKING, "blocking"),
        (NO_MULTI, "no_multi"),
        (PUBSUB, "pubsub"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> Reply;

/// One row of the command table.
pub struct CommandSpec {
    pub name: &'static str,
    /// Redis convention: n = exactly n arguments including the name, -n = at least n.
    pub arity: i32,
    pub flags: u32,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    /// The argument index of a `numkeys` count that the keys follow (ZUNION, LMPOP, ...:
    /// Redis's `keynum` key spec, its movable keys), 0 when the keys are all fixed.
    pub numkeys: u8,
    pub group: &'static str,
    pub summary: &'static str,
    pub since: &'static str,
    /// Subcommand names (for COMMAND INFO / DOCS), lowercase, without the container.
    pub subcommands: &'static [&'static str],
    pub handler: Handler,
    /// Where the command runs in a cluster (its routing tip: Redis 7's request and response
    /// policies, as data). By default from the key specification: keyless rows run here,
    /// keyed rows at the owner of their keys.
    pub route: Route,
    /// Redis's ACL categories for the row beyond what its flags imply, without the `@`
    /// (`acl_categories`); empty: its group's (`@string` for a string command, `@keyspace`
    /// for a generic one).
    pub acl: &'static [&'static str],
}

/// A command's ACL categories as Redis 7 reports them (COMMAND INFO's seventh element,
/// `COMMAND LIST FILTERBY ACLCAT`), in Redis's order, without the `@`: the row's own (or its
/// group's), then those its flags imply (Redis's `setImplicitACLCategories`: `write`, `read`,
/// `admin` and `dangerous`, `pubsub`, `fast` or else `slow`, `blocking`). A container
/// (CONFIG, CLIENT, ...) is `slow` alone, its subcommands carry the rest, as in Redis.
pub fn acl_categories(c: &CommandSpec) -> Vec<&'static str> {
    if is_container(c) {
        return vec!["slow"];
    }
    let own: &[&str] = if c.acl.is_empty() {
        match c.group {
            "generic" => &["keyspace"],
            "string" => &["string"],
            "bitmap" => &["bitmap"],
            "hash" => &["hash"],
            "list" => &["list"],
            "set" => &["set"],
            "sorted_set" => &["sortedset"],
            "hyperloglog" => &["hyperloglog"],
            "geo" => &["geo"],
            "stream" => &["stream"],
            "pubsub" => &["pubsub"],
            "connection" => &["connection"],
            "transactions" => &["transaction"],
            _ => &[],
        }
    } else {
        c.acl
    };
    let implied = [
        (WRITE, "write"),
        (READONLY, "read"),
        (ADMIN, "admin"),
        (ADMIN, "dangerous"),
        (PUBSUB, "pubsub"),
        (FAST, "fast"),
        (BLOCKING, "blocking"),
    ];
    let has = |cat: &str| {
        own.contains(&cat)
            || implied.iter().any(|&(bit, name)| {
                // Redis leaves scripting commands out of `@read` (EVAL_RO, FCALL_RO).
                name == cat && c.flags & bit != 0 && !(name == "read" && own.contains(&"scripting"))
            })
            || (cat == "slow" && c.flags & FAST == 0)
    };
    crate::acl::CATEGORIES
        .into_iter()
        .filter(|cat| has(cat))
        .collect()
}

/// A row that only names its subcommands (CONFIG, CLIENT, ...): Redis gives it no flags
/// and no category but `@slow`. COMMAND, which runs without one, is not. (Redis also shows
/// no key positions for OBJECT and MEMORY, but its subcommands' entries carry them; Shoal
/// keeps no data per subcommand, so the container's positions stay in COMMAND INFO, where
/// cluster clients such as redis-py find OBJECT ENCODING's key.)
pub fn is_container(c: &CommandSpec) -> bool {
    !c.subcommands.is_empty() && c.name != "command"
}

/// Where a command runs in a cluster, read by the cluster layer from the command's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// On the node the client is connected to (keyless, or node-local state).
    Here,
    /// At the owner of its keys: one key, or several that one node owns (else CROSSSLOT).
    Owner,
    /// Split by owner, run in parallel, the parts merged (Redis's `multi_shard`).
    Split(Merge),
    /// Every node answers for its share of the keys (Redis's `all_shards`).
    AllNodes(Gather),
    /// INFO: here, with the keyspace section gathered from every node.
    Info,
    /// EXEC: all here when this node owns every queued key, else each queued command routed.
    Exec,
    /// WATCH: its keys must be owned here.
    Watch,
    /// CLUSTER: here, from the cluster's own state.
    Cluster,
}

/// How the parts of a split command are merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    /// MGET: the elements, in the client's key order.
    Values,
    /// MSET: `+OK` when every part said so (Redis's `all_succeeded`).
    AllOk,
    /// DEL, UNLINK, EXISTS, TOUCH: the sum (Redis's `agg_sum`).
    Sum,
}

/// How the answers of every node are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gather {
    /// SCRIPT, FUNCTION: these subcommands run on every node (a script or library loaded
    /// or flushed everywhere), answered with this node's reply, or the first error; the
    /// others here.
    Everywhere(&'static [&'static str]),
    /// DBSIZE: the sum.
    Sum,
    /// KEYS: every node's keys.
    Concat,
    /// RANDOMKEY: one node's answer, picked at random.
    Random,
    /// SCAN: node by node, the cursor saying where.
    Scan,
    /// FLUSHALL, FLUSHDB: every node must succeed.
    Flush,
    /// PUBLISH, SPUBLISH: delivered here at once, then on every other reachable node; the
    /// receivers summed.
    Publish,
    /// PUBSUB: every reachable node's channels and counts, merged by subcommand.
    PubSub,
    /// CONFIG SET of these settings, whose effect is the cluster's (keyspace notifications
    /// are heard on every node, whichever node a key's events come from): the whole
    /// command here, then these settings on every other member, answered with this node's
    /// reply or the first error. Any other CONFIG SET is this node's alone, as in Redis
    /// Cluster.
    Setting(&'static [&'static str]),
}

impl Route {
    /// Redis 7's command tips for this route (COMMAND INFO's tips, as redis-server 7.0
    /// gives them for these commands): how a Redis Cluster
    /// client splits the command across shards and combines the replies. redis-py, for one,
    /// sends a command with `request_policy:all_shards` to every primary and sums an
    /// `agg_sum`; without the tips it would ask one node for DBSIZE.
    pub const fn tips(self) -> &'static [&'static str] {
        match self {
            Route::Split(Merge::Values) => &["request_policy:multi_shard"],
            Route::Split(Merge::AllOk) => &[
                "request_policy:multi_shard",
                "response_policy:all_succeeded",
            ],
            Route::Split(Merge::Sum) => &["request_policy:multi_shard", "response_policy:agg_sum"],
            Route::AllNodes(Gather::Sum) => {
                &["request_policy:all_shards", "response_policy:agg_sum"]
            }
            Route::AllNodes(Gather::Concat) => {
                &["request_policy:all_shards", "nondeterministic_output_order"]
            }
            Route::AllNodes(Gather::Random) => {
                &["request_policy:all_shards", "nondeterministic_output"]
            }
            Route::AllNodes(Gather::Scan) => &["nondeterministic_output", "request_policy:special"],
            Route::AllNodes(Gather::Flush) => {
                &["request_policy:all_shards", "response_policy:all_succeeded"]
            }
            // SCRIPT's tips are its subcommands' in Redis 7.2 (none on the container).
            Route::AllNodes(
                Gather::Publish | Gather::PubSub | Gather::Everywhere(_) | Gather::Setting(_),
            ) => &[],
            Route::Info => &[
                "nondeterministic_output",
                "request_policy:all_shards",
                "response_policy:special",
            ],
            Route::Here | Route::Owner | Route::Exec | Route::Watch | Route::Cluster => &[],
        }
    }

    /// The default route of a row from its first key position.
    pub const fn by_keys(first_key: i32) -> Route {
        if first_key > 0 {
            Route::Owner
        } else {
            Route::Here
        }
    }
}

impl CommandSpec {
    /// Whether `n` arguments (the name included) fit the row's arity: exactly `arity`,
    /// or at least `-arity` when it is negative.
    pub fn takes(&self, n: usize) -> bool {
        arity_takes(self.arity, n)
    }

    /// The argument positions of a request's keys, as Redis reads them: the row's (first,
    /// last, step) range (a negative last counts from the end), then the `numkeys` keys
    /// that follow the count at argument [`CommandSpec::numkeys`]. A count that is not a
    /// positive integer, or runs past the end, names no keys (the handler answers its
    /// error); no allocation.
    pub fn key_positions(&self, args: &[Bytes]) -> KeyPositions {
        let argc = args.len();
        let fixed = if self.first_key <= 0 || self.numkeys == MIGRATE_KEYS {
            (0, 0)
        } else {
            let last = if self.last_key < 0 {
                argc as i64 + i64::from(self.last_key)
            } else {
                i64::from(self.last_key)
            };
            let end = usize::try_from(last + 1).unwrap_or(0).min(argc);
            (self.first_key as usize, end)
        };
        let counted = match args.get(usize::from(self.numkeys)) {
            _ if self.numkeys == STREAMS_KEYS => stream::streams_keys(args).unwrap_or((0, 0)),
            _ if self.numkeys == MIGRATE_KEYS => keys::migrate_keys(args),
            Some(count) if self.numkeys > 0 => match parse_i64(count) {
                // A count past the end names no keys, as Redis's key specs read it.
                Some(n) if n > 0 && n as u64 <= (argc - usize::from(self.numkeys) - 1) as u64 => {
                    let first = usize::from(self.numkeys) + 1;
                    (first, first + n as usize)
                }
                _ => (0, 0),
            },
            _ => (0, 0),
        };
        KeyPositions {
            next: fixed.0,
            end: fixed.1,
            step: self.step.max(1) as usize,
            then: counted,
        }
    }

    /// Whether the row names keys at all (a fixed range or a `numkeys` count).
    pub const fn has_keys(&self) -> bool {
        self.first_key > 0 || self.numkeys > 0
    }

    /// The keys a request of this row names.
    pub fn keys(&self, args: &[Bytes]) -> Vec<Bytes> {
        self.key_positions(args).map(|i| args[i].clone()).collect()
    }
}

/// A row whose keys follow a `numkeys` count at argument `at` (after its fixed keys, if
/// any), routed to the owner of its keys.
const fn movable(mut spec: CommandSpec, at: u8) -> CommandSpec {
    spec.numkeys = at;
    spec.route = Route::Owner;
    spec
}

/// [`CommandSpec::numkeys`] of XREAD and XREADGROUP: their keys follow the STREAMS option
/// (`stream::streams_keys`), routed to their owner.
pub const STREAMS_KEYS: u8 = u8::MAX;

/// [`CommandSpec::numkeys`] of MIGRATE: its key argument, or the keys after its KEYS option
/// (`keys::migrate_keys`), routed to their owner.
pub const MIGRATE_KEYS: u8 = u8::MAX - 1;

const fn migrating(spec: CommandSpec) -> CommandSpec {
    movable(spec, MIGRATE_KEYS)
}

const fn streams(spec: CommandSpec) -> CommandSpec {
    movable(spec, STREAMS_KEYS)
}

/// The key positions of one request (see [`CommandSpec::key_positions`]): a stepped range,
/// then a contiguous one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPositions {
    next: usize,
    end: usize,
    step: usize,
    /// The counted keys' range, taken once the first is done.
    then: (usize, usize),
}

impl Iterator for KeyPositions {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.next >= self.end {
            (self.next, self.end) = std::mem::take(&mut self.then);
            self.step = 1;
        }
        (self.next < self.end).then(|| {
            let at = self.next;
            self.next += self.step;
            at
        })
    }
}

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, ($f:expr, $l:expr, $s:expr), $group:literal, $since:literal, $summary:literal, $handler:expr) => {
        cmd!(
            $name,
            $arity,
            $flags,
            ($f, $l, $s),
            $group,
            $since,
            $summary,
            $handler,
            &[]
        )
    };
    ($name:literal, $arity:expr, $flags:expr, ($f:expr, $l:expr, $s:expr), $group:literal, $since:literal, $summary:literal, $handler:expr, $subs:expr) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $f,
            last_key: $l,
            step: $s,
            numkeys: 0,
            group: $group,
            since: $since,
            summary: $summary,
            subcommands: $subs,
            handler: $handler,
            route: Route::by_keys($f),
            acl: &[],
        }
    };
}

use flag::*;

/// Every supported command. Adding one: a row here and a handler in its family's module.
pub static TABLE: &[CommandSpec] = &[
    // connection
    cmd!("ping", -1, FAST | STALE | ANYWHERE, (0, 0, 0), "connection", "1.0.0", "Returns the server's liveliness response.", conn::ping),
    cmd!("echo", 2, FAST | LOADING | STALE | ANYWHERE, (0, 0, 0), "connection", "1.0.0", "Returns the given string.", conn::echo),
    cmd!("hello", -1, FAST | NOAUTH | NOSCRIPT | LOADING | STALE | ALLOW_BUSY, (0, 0, 0), "connection", "6.0.0", "Handshakes with the Redis server.", conn::hello),
    cmd!("auth", -2, FAST | NOAUTH | NOSCRIPT | LOADING | STALE | ALLOW_BUSY, (0, 0, 0), "connection", "1.0.0", "Authenticates the connection.", conn::auth),
    cmd!("select", 2, FAST | LOADING | STALE, (0, 0, 0), "connection", "1.0.0", "Changes the selected database.", db::select),
    cmd!("quit", -1, NOQUEUE | FAST | NOAUTH | NOSCRIPT | LOADING | STALE | ALLOW_BUSY, (0, 0, 0), "connection", "1.0.0", "Closes the connection.", conn::quit),
    cmd!("reset", 1, NOQUEUE | FAST | NOAUTH | NOSCRIPT | LOADING | STALE | ALLOW_BUSY, (0, 0, 0), "connection", "6.2.0", "Resets the connection.", conn::reset),
    cmd!("multi", 1, NOQUEUE | NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, (0, 0, 0), "transactions", "1.2.0", "Starts a transaction.", multi::multi),
    CommandSpec { route: Route::Exec, ..cmd!("exec", 1, NOQUEUE | NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG, (0, 0, 0), "transactions", "1.2.0", "Executes all commands in a transaction.", multi::exec) },
    cmd!("discard", 1, NOQUEUE | NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, (0, 0, 0), "transactions", "2.0.0", "Discards a transaction.", multi::discard),
    CommandSpec { route: Route::Watch, ..cmd!("watch", -2, NOQUEUE | NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, (1, -1, 1), "transactions", "2.2.0", "Monitors changes to keys to determine the execution of a transaction.", multi::watch) },
    cmd!("unwatch", 1, NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY, (0, 0, 0), "transactions", "2.2.0", "Forgets about watched keys of a transaction.", multi::unwatch),
    cmd!("client", -2, NOSCRIPT | LOADING | STALE, (0, 0, 0), "connection", "2.4.0", "A container for client connection commands.", conn::client,
        &["id", "setname", "getname", "setinfo", "info", "list", "kill", "unblock", "pause", "unpause", "no-evict", "no-touch", "reply", "tracking", "caching", "getredir", "trackinginfo", "help"]),
    // strings
    cmd!("get", 2, READONLY | FAST, (1, 1, 1), "string", "1.0.0", "Returns the string value of a key.", string::get),
    cmd!("set", -3, WRITE | DENYOOM, (1, 1, 1), "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", string::set),
    cmd!("setnx", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", "Set the string value of a key only when the key doesn't exist.", string::setnx),
    cmd!("setex", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", string::setex),
    cmd!("psetex", 4, WRITE | DENYOOM, (1, 1, 1), "string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", string::psetex),
    cmd!("getset", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value.", string::getset),
    cmd!("getdel", 2, WRITE | FAST, (1, 1, 1), "string", "6.2.0", "Returns the string value of a key after deleting the key.", string::getdel),
    cmd!("getex", -2, WRITE | FAST, (1, 1, 1), "string", "6.2.0", "Returns the string value of a key after setting its expiration time.", string::getex),
    CommandSpec { route: Route::Split(Merge::Values), ..cmd!("mget", -2, READONLY | FAST, (1, -1, 1), "string", "1.0.0", "Atomically returns the string values of one or more keys.", string::mget) },
    CommandSpec { route: Route::Split(Merge::AllOk), ..cmd!("mset", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys.", string::mset) },
    cmd!("msetnx", -3, WRITE | DENYOOM, (1, -1, 2), "string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist.", string::msetnx),
    cmd!("append", 3, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist.", string::append),
    cmd!("strlen", 2, READONLY | FAST, (1, 1, 1), "string", "2.2.0", "Returns the length of a string value.", string::strlen),
    cmd!("incr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", string::incr),
    cmd!("decr", 2, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", string::decr),
    cmd!("incrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", string::incrby),
    cmd!("decrby", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "1.0.0", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", string::decrby),
    cmd!("incrbyfloat", 3, WRITE | DENYOOM | FAST, (1, 1, 1), "string", "2.6.0", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", string::incrbyfloat),
    cmd!("getrange", 4, READONLY, (1, 1, 1), "string", "2.4.0", "Returns a substring of the string stored at a key.", string::getrange),
    cmd!("substr", 4, READONLY, (1, 1, 1), "string", "1.0.0", "Returns a substring from a string value.", string::getrange),
    cmd!("setrange", 4, WRITE | DENYOOM | DELTA, (1, 1, 1), "string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", string::setrange),
    cmd!("lcs", -3, READONLY, (1, 2, 1), "string", "7.0.0", "Finds the longest common substring.", string::lcs),
    cmd!("setbit", 4, WRITE | DENYOOM | DELTA, (1, 1, 1), "bitmap", "2.2.0", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", bitmap::setbit),
    cmd!("getbit", 3, READONLY | FAST, (1, 1, 1), "bitmap", "2.2.0", "Returns a bit value by offset.", bitmap::getbit),
    cmd!("bitcount", -2, READONLY, (1, 1, 1), "bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string.", bitmap::bitcount),
    cmd!("bitpos", -3, READONLY, (1, 1, 1), "bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string.", bitmap::bitpos),
    cmd!("bitop", -4, WRITE | DENYOOM, (2, -1, 1), "bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result.", bitmap::bitop),
    cmd!("bitfield", -2, WRITE | DENYOOM, (1, 1, 1), "bitmap", "3.2.0", "Performs arbitrary bitfield integer operations on strings.", bitmap::bitfield),
    cmd!("bitfield_ro", -2, READONLY | FAST, (1, 1, 1), "bitmap", "6.0.0", "Performs arbitrary read-only bitfield integer operations on strings.", bitmap::bitfield_ro),
    // hashes
    cmd!("hset", -4, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "hash", "2.0.0", "Creates or modifies the value of a field in a hash.", hash::hset),
    cmd!("hsetnx", 4, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "hash", "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist.", hash::hsetnx),
    cmd!("hmset", -4, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "hash", "2.0.0", "Sets the values of multiple fields.", hash::hmset),
    cmd!("hget", 3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", "Returns the value of a field in a hash.", hash::hget),
    cmd!("hmget", -3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", "Returns the values of all fields in a hash.", hash::hmget),
    cmd!("hgetall", 2, READONLY, (1, 1, 1), "hash", "2.0.0", "Returns all fields and values in a hash.", hash::hgetall),
    cmd!("hkeys", 2, READONLY, (1, 1, 1), "hash", "2.0.0", "Returns all fields in a hash.", hash::hkeys),
    cmd!("hvals", 2, READONLY, (1, 1, 1), "hash", "2.0.0", "Returns all values in a hash.", hash::hvals),
    cmd!("hdel", -3, WRITE | FAST | DELTA, (1, 1, 1), "hash", "2.0.0", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", hash::hdel),
    cmd!("hexists", 3, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", "Determines whether a field exists in a hash.", hash::hexists),
    cmd!("hlen", 2, READONLY | FAST, (1, 1, 1), "hash", "2.0.0", "Returns the number of fields in a hash.", hash::hlen),
    cmd!("hstrlen", 3, READONLY | FAST, (1, 1, 1), "hash", "3.2.0", "Returns the length of the value of a field.", hash::hstrlen),
    cmd!("hincrby", 4, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "hash", "2.0.0", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", hash::hincrby),
    cmd!("hincrbyfloat", 4, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "hash", "2.6.0", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", hash::hincrbyfloat),
    cmd!("hrandfield", -2, READONLY, (1, 1, 1), "hash", "6.2.0", "Returns one or more random fields from a hash.", hash::hrandfield),
    cmd!("hscan", -3, READONLY, (1, 1, 1), "hash", "2.8.0", "Iterates over fields and values of a hash.", hash::hscan),
    // sets
    cmd!("sadd", -3, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "set", "1.0.0", "Adds one or more members to a set. Creates the key if it doesn't exist.", set::sadd),
    cmd!("srem", -3, WRITE | FAST | DELTA, (1, 1, 1), "set", "1.0.0", "Removes one or more members from a set. Deletes the set if the last member was removed.", set::srem),
    cmd!("smembers", 2, READONLY, (1, 1, 1), "set", "1.0.0", "Returns all members of a set.", set::smembers),
    cmd!("sismember", 3, READONLY | FAST, (1, 1, 1), "set", "1.0.0", "Determines whether a member belongs to a set.", set::sismember),
    cmd!("smismember", -3, READONLY | FAST, (1, 1, 1), "set", "6.2.0", "Determines whether multiple members belong to a set.", set::smismember),
    cmd!("scard", 2, READONLY | FAST, (1, 1, 1), "set", "1.0.0", "Returns the number of members in a set.", set::scard),
    cmd!("spop", -2, WRITE | FAST, (1, 1, 1), "set", "1.0.0", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", set::spop),
    cmd!("srandmember", -2, READONLY, (1, 1, 1), "set", "1.0.0", "Get one or multiple random members from a set", set::srandmember),
    cmd!("smove", 4, WRITE | FAST, (1, 2, 1), "set", "1.0.0", "Moves a member from one set to another.", set::smove),
    cmd!("sscan", -3, READONLY, (1, 1, 1), "set", "2.8.0", "Iterates over members of a set.", set::sscan),
    cmd!("sinter", -2, READONLY, (1, -1, 1), "set", "1.0.0", "Returns the intersect of multiple sets.", set::sinter),
    cmd!("sinterstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", "Stores the intersect of multiple sets in a key.", set::sinterstore),
    cmd!("sunion", -2, READONLY, (1, -1, 1), "set", "1.0.0", "Returns the union of multiple sets.", set::sunion),
    cmd!("sunionstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", "Stores the union of multiple sets in a key.", set::sunionstore),
    cmd!("sdiff", -2, READONLY, (1, -1, 1), "set", "1.0.0", "Returns the difference of multiple sets.", set::sdiff),
    cmd!("sdiffstore", -3, WRITE | DENYOOM, (1, -1, 1), "set", "1.0.0", "Stores the difference of multiple sets in a key.", set::sdiffstore),
    movable(cmd!("sintercard", -3, READONLY, (0, 0, 0), "set", "7.0.0", "Returns the number of members of the intersect of multiple sets.", set::sintercard), 1),
    // lists
    cmd!("lpush", -3, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "list", "1.0.0", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", list::lpush),
    cmd!("rpush", -3, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "list", "1.0.0", "Appends one or more elements to a list. Creates the key if it doesn't exist.", list::rpush),
    cmd!("lpushx", -3, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "list", "2.2.0", "Prepends one or more elements to a list only when the list exists.", list::lpushx),
    cmd!("rpushx", -3, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "list", "2.2.0", "Appends an element to a list only when the list exists.", list::rpushx),
    cmd!("lpop", -2, WRITE | FAST | DELTA, (1, 1, 1), "list", "1.0.0", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", list::lpop),
    cmd!("rpop", -2, WRITE | FAST | DELTA, (1, 1, 1), "list", "1.0.0", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", list::rpop),
    cmd!("llen", 2, READONLY | FAST, (1, 1, 1), "list", "1.0.0", "Returns the length of a list.", list::llen),
    cmd!("lrange", 4, READONLY, (1, 1, 1), "list", "1.0.0", "Returns a range of elements from a list.", list::lrange),
    cmd!("lindex", 3, READONLY, (1, 1, 1), "list", "1.0.0", "Returns an element from a list by its index.", list::lindex),
    cmd!("lset", 4, WRITE | DENYOOM | DELTA, (1, 1, 1), "list", "1.0.0", "Sets the value of an element in a list by its index.", list::lset),
    cmd!("lrem", 4, WRITE | DELTA, (1, 1, 1), "list", "1.0.0", "Removes elements from a list. Deletes the list if the last element was removed.", list::lrem),
    cmd!("ltrim", 4, WRITE | DELTA, (1, 1, 1), "list", "1.0.0", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", list::ltrim),
    cmd!("linsert", 5, WRITE | DENYOOM | DELTA, (1, 1, 1), "list", "2.2.0", "Inserts an element before or after another element in a list.", list::linsert),
    cmd!("lpos", -3, READONLY, (1, 1, 1), "list", "6.0.6", "Returns the index of matching elements in a list.", list::lpos),
    cmd!("lmove", 5, WRITE | DENYOOM, (1, 2, 1), "list", "6.2.0", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", list::lmove),
    cmd!("rpoplpush", 3, WRITE | DENYOOM, (1, 2, 1), "list", "1.2.0", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", list::rpoplpush),
    cmd!("blpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), "list", "2.0.0", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", list::blpop),
    cmd!("brpop", -3, WRITE | NOSCRIPT | BLOCKING, (1, -2, 1), "list", "2.0.0", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", list::brpop),
    cmd!("brpoplpush", 4, WRITE | DENYOOM | NOSCRIPT | BLOCKING, (1, 2, 1), "list", "2.2.0", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", list::brpoplpush),
    cmd!("blmove", 6, WRITE | DENYOOM | NOSCRIPT | BLOCKING, (1, 2, 1), "list", "6.2.0", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", list::blmove),
    movable(cmd!("blmpop", -5, WRITE | BLOCKING, (0, 0, 0), "list", "7.0.0", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", list::blmpop), 2),
    movable(cmd!("lmpop", -4, WRITE, (0, 0, 0), "list", "7.0.0", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", list::lmpop), 1),
    // sorted sets
    cmd!("zadd", -4, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "sorted_set", "1.2.0", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", zset::zadd),
    cmd!("zincrby", 4, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "sorted_set", "1.2.0", "Increments the score of a member in a sorted set.", zset::zincrby),
    cmd!("zscore", 3, READONLY | FAST, (1, 1, 1), "sorted_set", "1.2.0", "Returns the score of a member in a sorted set.", zset::zscore),
    cmd!("zmscore", -3, READONLY | FAST, (1, 1, 1), "sorted_set", "6.2.0", "Returns the score of one or more members in a sorted set.", zset::zmscore),
    cmd!("zcard", 2, READONLY | FAST, (1, 1, 1), "sorted_set", "1.2.0", "Returns the number of members in a sorted set.", zset::zcard),
    cmd!("zcount", 4, READONLY | FAST, (1, 1, 1), "sorted_set", "2.0.0", "Returns the count of members in a sorted set that have scores within a range.", zset::zcount),
    cmd!("zlexcount", 4, READONLY | FAST, (1, 1, 1), "sorted_set", "2.8.9", "Returns the number of members in a sorted set within a lexicographical range.", zset::zlexcount),
    cmd!("zrange", -4, READONLY, (1, 1, 1), "sorted_set", "1.2.0", "Returns members in a sorted set within a range of indexes.", zset::zrange),
    cmd!("zrangebyscore", -4, READONLY, (1, 1, 1), "sorted_set", "1.0.5", "Returns members in a sorted set within a range of scores.", zset::zrangebyscore),
    cmd!("zrevrangebyscore", -4, READONLY, (1, 1, 1), "sorted_set", "2.2.0", "Returns members in a sorted set within a range of scores in reverse order.", zset::zrevrangebyscore),
    cmd!("zrevrange", -4, READONLY, (1, 1, 1), "sorted_set", "1.2.0", "Returns members in a sorted set within a range of indexes in reverse order.", zset::zrevrange),
    cmd!("zrangebylex", -4, READONLY, (1, 1, 1), "sorted_set", "2.8.9", "Returns members in a sorted set within a lexicographical range.", zset::zrangebylex),
    cmd!("zrevrangebylex", -4, READONLY, (1, 1, 1), "sorted_set", "2.8.9", "Returns members in a sorted set within a lexicographical range in reverse order.", zset::zrevrangebylex),
    cmd!("zrangestore", -5, WRITE | DENYOOM, (1, 2, 1), "sorted_set", "6.2.0", "Stores a range of members from sorted set in a key.", zset::zrangestore),
    cmd!("zrank", -3, READONLY | FAST, (1, 1, 1), "sorted_set", "2.0.0", "Returns the index of a member in a sorted set ordered by ascending scores.", zset::zrank),
    cmd!("zrevrank", -3, READONLY | FAST, (1, 1, 1), "sorted_set", "2.0.0", "Returns the index of a member in a sorted set ordered by descending scores.", zset::zrevrank),
    cmd!("zrem", -3, WRITE | FAST | DELTA, (1, 1, 1), "sorted_set", "1.2.0", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", zset::zrem),
    cmd!("zremrangebyrank", 4, WRITE | DELTA, (1, 1, 1), "sorted_set", "2.0.0", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", zset::zremrangebyrank),
    cmd!("zremrangebyscore", 4, WRITE | DELTA, (1, 1, 1), "sorted_set", "1.2.0", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", zset::zremrangebyscore),
    cmd!("zremrangebylex", 4, WRITE | DELTA, (1, 1, 1), "sorted_set", "2.8.9", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", zset::zremrangebylex),
    cmd!("zpopmin", -2, WRITE | FAST | DELTA, (1, 1, 1), "sorted_set", "5.0.0", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zset::zpopmin),
    cmd!("zpopmax", -2, WRITE | FAST | DELTA, (1, 1, 1), "sorted_set", "5.0.0", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zset::zpopmax),
    cmd!("zrandmember", -2, READONLY, (1, 1, 1), "sorted_set", "6.2.0", "Returns one or more random members from a sorted set.", zset::zrandmember),
    cmd!("zscan", -3, READONLY, (1, 1, 1), "sorted_set", "2.8.0", "Iterates over members and scores of a sorted set.", zset::zscan),
    cmd!("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, (1, -2, 1), "sorted_set", "5.0.0", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", zset::bzpopmin),
    cmd!("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, (1, -2, 1), "sorted_set", "5.0.0", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise. Deletes the sorted set if the last element was popped.", zset::bzpopmax),
    movable(cmd!("bzmpop", -5, WRITE | BLOCKING, (0, 0, 0), "sorted_set", "7.0.0", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", zset::bzmpop), 2),
    movable(cmd!("zmpop", -4, WRITE, (0, 0, 0), "sorted_set", "7.0.0", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", zset::zmpop), 1),
    movable(cmd!("zunion", -3, READONLY, (0, 0, 0), "sorted_set", "6.2.0", "Returns the union of multiple sorted sets.", zcombine::zunion), 1),
    movable(cmd!("zinter", -3, READONLY, (0, 0, 0), "sorted_set", "6.2.0", "Returns the intersect of multiple sorted sets.", zcombine::zinter), 1),
    movable(cmd!("zdiff", -3, READONLY, (0, 0, 0), "sorted_set", "6.2.0", "Returns the difference between multiple sorted sets.", zcombine::zdiff), 1),
    movable(cmd!("zunionstore", -4, WRITE | DENYOOM, (1, 1, 1), "sorted_set", "2.0.0", "Stores the union of multiple sorted sets in a key.", zcombine::zunionstore), 2),
    movable(cmd!("zinterstore", -4, WRITE | DENYOOM, (1, 1, 1), "sorted_set", "2.0.0", "Stores the intersect of multiple sorted sets in a key.", zcombine::zinterstore), 2),
    movable(cmd!("zdiffstore", -4, WRITE | DENYOOM, (1, 1, 1), "sorted_set", "6.2.0", "Stores the difference of multiple sorted sets in a key.", zcombine::zdiffstore), 2),
    movable(cmd!("zintercard", -3, READONLY, (0, 0, 0), "sorted_set", "7.0.0", "Returns the number of members of the intersect of multiple sorted sets.", zcombine::zintercard), 1),
    // geospatial indexes (sorted sets of geohashes)
    cmd!("geoadd", -5, WRITE | DENYOOM | DELTA, (1, 1, 1), "geo", "3.2.0", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", geo::geoadd),
    cmd!("geodist", -4, READONLY, (1, 1, 1), "geo", "3.2.0", "Returns the distance between two members of a geospatial index.", geo::geodist),
    cmd!("geohash", -2, READONLY, (1, 1, 1), "geo", "3.2.0", "Returns members from a geospatial index as geohash strings.", geo::geohash),
    cmd!("geopos", -2, READONLY, (1, 1, 1), "geo", "3.2.0", "Returns the longitude and latitude of members from a geospatial index.", geo::geopos),
    cmd!("georadius", -6, WRITE | DENYOOM, (1, 1, 1), "geo", "3.2.0", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", geo::georadius),
    cmd!("georadius_ro", -6, READONLY, (1, 1, 1), "geo", "3.2.10", "Returns members from a geospatial index that are within a distance from a coordinate.", geo::georadius_ro),
    cmd!("georadiusbymember", -5, WRITE | DENYOOM, (1, 1, 1), "geo", "3.2.0", "Queries a geospatial index for members within a distance from a member, optionally stores the result.", geo::georadiusbymember),
    cmd!("georadiusbymember_ro", -5, READONLY, (1, 1, 1), "geo", "3.2.10", "Returns members from a geospatial index that are within a distance from a member.", geo::georadiusbymember_ro),
    cmd!("geosearch", -7, READONLY, (1, 1, 1), "geo", "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle.", geo::geosearch),
    cmd!("geosearchstore", -8, WRITE | DENYOOM, (1, 2, 1), "geo", "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", geo::geosearchstore),
    // scripting
    CommandSpec { acl: &["scripting"], ..movable(cmd!("eval", -3, RUNS_WRITES | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, (0, 0, 0), "scripting", "2.6.0", "Executes a server-side Lua script.", script::eval), 2) },
    CommandSpec { acl: &["scripting"], ..movable(cmd!("evalsha", -3, RUNS_WRITES | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, (0, 0, 0), "scripting", "2.6.0", "Executes a server-side Lua script by SHA1 digest.", script::evalsha), 2) },
    CommandSpec { acl: &["scripting"], ..movable(cmd!("eval_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, (0, 0, 0), "scripting", "7.0.0", "Executes a read-only server-side Lua script.", script::eval_ro), 2) },
    CommandSpec { acl: &["scripting"], ..movable(cmd!("evalsha_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, (0, 0, 0), "scripting", "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest.", script::evalsha_ro), 2) },
    CommandSpec { acl: &["scripting"], route: Route::AllNodes(Gather::Everywhere(&["load", "flush", "kill"])), ..cmd!("script", -2, NOSCRIPT, (0, 0, 0), "scripting", "2.6.0", "A container for Lua scripts management commands.", script::script,
        &["load", "exists", "flush", "kill", "help"]) },
    CommandSpec { acl: &["scripting"], ..movable(cmd!("fcall", -3, RUNS_WRITES | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, (0, 0, 0), "scripting", "7.0.0", "Invokes a function.", function::fcall), 2) },
    CommandSpec { acl: &["scripting"], ..movable(cmd!("fcall_ro", -3, READONLY | NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS, (0, 0, 0), "scripting", "7.0.0", "Invokes a read-only function.", function::fcall_ro), 2) },
    CommandSpec { acl: &["scripting"], route: Route::AllNodes(Gather::Everywhere(&["load", "delete", "flush", "restore", "kill"])), ..cmd!("function", -2, NOSCRIPT, (0, 0, 0), "scripting", "7.0.0", "A container for function commands.", function::function,
        &["load", "delete", "list", "stats", "kill", "flush", "dump", "restore", "help"]) },
    // HyperLogLog
    cmd!("xadd", -5, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "stream", "5.0.0", "Appends a new message to a stream. Creates the key if it doesn't exist.", stream::xadd),
    cmd!("xlen", 2, READONLY | FAST, (1, 1, 1), "stream", "5.0.0", "Return the number of messages in a stream.", stream::xlen),
    cmd!("xrange", -4, READONLY, (1, 1, 1), "stream", "5.0.0", "Returns the messages from a stream within a range of IDs.", stream::xrange),
    cmd!("xrevrange", -4, READONLY, (1, 1, 1), "stream", "5.0.0", "Returns the messages from a stream within a range of IDs in reverse order.", stream::xrevrange),
    cmd!("xdel", -3, WRITE | FAST | DELTA, (1, 1, 1), "stream", "5.0.0", "Returns the number of messages after removing them from a stream.", stream::xdel),
    cmd!("xtrim", -4, WRITE | DELTA, (1, 1, 1), "stream", "5.0.0", "Deletes messages from the beginning of a stream.", stream::xtrim),
    cmd!("xsetid", -3, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "stream", "5.0.0", "An internal command for replicating stream values.", stream::xsetid),
    streams(cmd!("xread", -4, READONLY | BLOCKING, (0, 0, 0), "stream", "5.0.0", "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", stream::xread)),
    streams(cmd!("xreadgroup", -7, WRITE | BLOCKING | DELTA, (0, 0, 0), "stream", "5.0.0", "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", stream::xreadgroup)),
    cmd!("xgroup", -2, WRITE | DELTA, (2, 2, 1), "stream", "5.0.0", "A container for consumer groups commands.", stream::xgroup,
        &["create", "setid", "destroy", "createconsumer", "delconsumer", "help"]),
    cmd!("xack", -4, WRITE | FAST | DELTA, (1, 1, 1), "stream", "5.0.0", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", stream::xack),
    cmd!("xpending", -3, READONLY, (1, 1, 1), "stream", "5.0.0", "Returns the information and entries from a stream consumer group's pending entries list.", stream::xpending),
    cmd!("xclaim", -6, WRITE | FAST | DELTA, (1, 1, 1), "stream", "5.0.0", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", stream::xclaim),
    cmd!("xautoclaim", -6, WRITE | FAST | DELTA, (1, 1, 1), "stream", "6.2.0", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", stream::xautoclaim),
    cmd!("xinfo", -2, READONLY, (2, 2, 1), "stream", "5.0.0", "A container for stream introspection commands.", stream::xinfo,
        &["stream", "groups", "consumers", "help"]),
    cmd!("pfadd", -2, WRITE | DENYOOM | FAST | DELTA, (1, 1, 1), "hyperloglog", "2.8.9", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", hll::pfadd),
    cmd!("pfcount", -2, READONLY | MAY_REPLICATE, (1, -1, 1), "hyperloglog", "2.8.9", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", hll::pfcount),
    cmd!("pfmerge", -2, WRITE | DENYOOM, (1, -1, 1), "hyperloglog", "2.8.9", "Merges one or more HyperLogLog values into a single key.", hll::pfmerge),
    cmd!("pfdebug", 3, WRITE | DENYOOM | ADMIN, (2, 2, 1), "hyperloglog", "2.8.9", "Internal commands for debugging HyperLogLog values", hll::pfdebug),
    cmd!("pfselftest", 1, ADMIN, (0, 0, 0), "hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values", hll::pfselftest),
    // keyspace
    CommandSpec { route: Route::Split(Merge::Sum), ..cmd!("del", -2, WRITE, (1, -1, 1), "generic", "1.0.0", "Deletes one or more keys.", keys::del) },
    CommandSpec { route: Route::Split(Merge::Sum), ..cmd!("unlink", -2, WRITE | FAST, (1, -1, 1), "generic", "4.0.0", "Asynchronously deletes one or more keys.", keys::unlink) },
    CommandSpec { route: Route::Split(Merge::Sum), ..cmd!("exists", -2, READONLY | FAST, (1, -1, 1), "generic", "1.0.0", "Determines whether one or more keys exist.", keys::exists) },
    CommandSpec { route: Route::Split(Merge::Sum), ..cmd!("touch", -2, READONLY | FAST, (1, -1, 1), "generic", "3.2.1", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", keys::touch) },
    cmd!("type", 2, READONLY | FAST, (1, 1, 1), "generic", "1.0.0", "Determines the type of value stored at a key.", keys::type_),
    CommandSpec { acl: &["set", "sortedset", "list", "dangerous"], ..cmd!("sort", -2, WRITE | DENYOOM, (1, 1, 1), "generic", "1.0.0", "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", sort::sort) },
    CommandSpec { acl: &["set", "sortedset", "list", "dangerous"], ..cmd!("sort_ro", -2, READONLY, (1, 1, 1), "generic", "7.0.0", "Returns the sorted elements of a list, a set, or a sorted set.", sort::sort_ro) },
    cmd!("expire", -3, WRITE | FAST, (1, 1, 1), "generic", "1.0.0", "Sets the expiration time of a key in seconds.", keys::expire),
    cmd!("pexpire", -3, WRITE | FAST, (1, 1, 1), "generic", "2.6.0", "Sets the expiration time of a key in milliseconds.", keys::pexpire),
    cmd!("expireat", -3, WRITE | FAST, (1, 1, 1), "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp.", keys::expireat),
    cmd!("pexpireat", -3, WRITE | FAST, (1, 1, 1), "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp.", keys::pexpireat),
    cmd!("ttl", 2, READONLY | FAST, (1, 1, 1), "generic", "1.0.0", "Returns the expiration time in seconds of a key.", keys::ttl),
    cmd!("pttl", 2, READONLY | FAST, (1, 1, 1), "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", keys::pttl),
    cmd!("expiretime", 2, READONLY | FAST, (1, 1, 1), "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp.", keys::expiretime),
    cmd!("pexpiretime", 2, READONLY | FAST, (1, 1, 1), "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp.", keys::pexpiretime),
    cmd!("persist", 2, WRITE | FAST, (1, 1, 1), "generic", "2.2.0", "Removes the expiration time of a key.", keys::persist),
    cmd!("rename", 3, WRITE, (1, 2, 1), "generic", "1.0.0", "Renames a key and overwrites the destination.", keys::rename),
    cmd!("renamenx", 3, WRITE | FAST, (1, 2, 1), "generic", "1.0.0", "Renames a key only when the target key name doesn't exist.", keys::renamenx),
    cmd!("copy", -3, WRITE | DENYOOM, (1, 2, 1), "generic", "6.2.0", "Copies the value of a key to a new key.", keys::copy),
    cmd!("move", 3, WRITE | FAST, (1, 1, 1), "generic", "1.0.0", "Moves a key to another database.", db::move_key),
    cmd!("dump", 2, READONLY, (1, 1, 1), "generic", "2.6.0", "Returns a serialized representation of the value stored at a key.", keys::dump),
    CommandSpec { acl: &["keyspace", "dangerous"], ..migrating(cmd!("migrate", -6, WRITE, (3, 3, 1), "generic", "2.6.0", "Atomically transfers a key from one Redis instance to another.", keys::migrate)) },
    CommandSpec { acl: &["keyspace", "dangerous"], ..cmd!("restore", -4, WRITE | DENYOOM, (1, 1, 1), "generic", "2.6.0", "Creates a key from the serialized representation of a value.", keys::restore) },
    CommandSpec { acl: &["keyspace", "dangerous"], ..cmd!("swapdb", 3, WRITE | FAST, (0, 0, 0), "server", "4.0.0", "Swaps two Redis databases.", db::swapdb) },
    cmd!("object", -2, READONLY, (2, 2, 1), "generic", "2.2.3", "A container for object introspection commands.", keys::object,
        &["encoding", "freq", "idletime", "refcount", "help"]),
    cmd!("memory", -2, READONLY, (2, 2, 1), "server", "4.0.0", "A container for memory diagnostics commands.", keys::memory,
        &["usage", "stats", "doctor", "malloc-stats", "purge", "help"]),
    CommandSpec { acl: &["keyspace", "dangerous"], route: Route::AllNodes(Gather::Concat), ..cmd!("keys", 2, READONLY, (0, 0, 0), "generic", "1.0.0", "Returns all key names that match a pattern.", keys::keys) },
    CommandSpec { route: Route::AllNodes(Gather::Scan), ..cmd!("scan", -2, READONLY, (0, 0, 0), "generic", "2.8.0", "Iterates over the key names in the database.", keys::scan) },
    CommandSpec { route: Route::AllNodes(Gather::Random), ..cmd!("randomkey", 1, READONLY, (0, 0, 0), "generic", "1.0.0", "Returns a random key name from the database.", keys::randomkey) },
    CommandSpec { acl: &["keyspace"], route: Route::AllNodes(Gather::Sum), ..cmd!("dbsize", 1, READONLY | FAST, (0, 0, 0), "server", "1.0.0", "Returns the number of keys in the database.", keys::dbsize) },
    CommandSpec { acl: &["keyspace", "dangerous"], route: Route::AllNodes(Gather::Flush), ..cmd!("flushdb", -1, WRITE, (0, 0, 0), "server", "1.0.0", "Remove all keys from the current database.", keys::flush) },
    CommandSpec { acl: &["keyspace", "dangerous"], route: Route::AllNodes(Gather::Flush), ..cmd!("flushall", -1, WRITE, (0, 0, 0), "server", "1.0.0", "Removes all keys from all databases.", keys::flush) },
    // server
    cmd!("slowlog", -2, ADMIN | LOADING | STALE, (0, 0, 0), "server", "2.2.12", "A container for slow log commands.", server::slowlog,
        &["get", "len", "reset", "help"]),
    cmd!("latency", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.8.13", "A container for latency diagnostics commands.", server::latency,
        &["doctor", "graph", "history", "histogram", "latest", "reset", "help"]),
    CommandSpec { acl: &["connection"], ..cmd!("wait", 3, NOSCRIPT, (0, 0, 0), "generic", "3.0.0", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", server::wait) },
    CommandSpec { acl: &["connection"], ..cmd!("waitaof", 4, NOSCRIPT, (0, 0, 0), "generic", "7.2.0", "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", server::waitaof) },
    cmd!("debug", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "1.0.0", "A container for debugging commands.", server::debug),
    cmd!("monitor", 1, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "1.0.0", "Listens for all requests received by the server in real-time.", conn::monitor),
    // pub/sub (refused inside MULTI, where Redis's replies to them break the protocol)
    cmd!("subscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE | NO_MULTI, (0, 0, 0), "pubsub", "2.0.0", "Listens for messages published to channels.", pubsub::subscribe),
    cmd!("psubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE | NO_MULTI, (0, 0, 0), "pubsub", "2.0.0", "Listens for messages published to channels that match one or more patterns.", pubsub::psubscribe),
    cmd!("ssubscribe", -2, PUBSUB | NOSCRIPT | LOADING | STALE | NO_MULTI, (0, 0, 0), "pubsub", "7.0.0", "Listens for messages published to shard channels.", pubsub::ssubscribe),
    cmd!("unsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE | NO_MULTI, (0, 0, 0), "pubsub", "2.0.0", "Stops listening to messages posted to channels.", pubsub::unsubscribe),
    cmd!("punsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE | NO_MULTI, (0, 0, 0), "pubsub", "2.0.0", "Stops listening to messages published to channels that match one or more patterns.", pubsub::punsubscribe),
    cmd!("sunsubscribe", -1, PUBSUB | NOSCRIPT | LOADING | STALE | NO_MULTI, (0, 0, 0), "pubsub", "7.0.0", "Stops listening to messages posted to shard channels.", pubsub::sunsubscribe),
    CommandSpec { route: Route::AllNodes(Gather::Publish), ..cmd!("publish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, (0, 0, 0), "pubsub", "2.0.0", "Posts a message to a channel.", pubsub::publish) },
    CommandSpec { route: Route::AllNodes(Gather::Publish), ..cmd!("spublish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, (0, 0, 0), "pubsub", "7.0.0", "Post a message to a shard channel", pubsub::spublish) },
    CommandSpec { route: Route::AllNodes(Gather::PubSub), ..cmd!("pubsub", -2, PUBSUB | LOADING | STALE, (0, 0, 0), "pubsub", "2.8.0", "A container for Pub/Sub commands.", pubsub::pubsub,
        &["channels", "numpat", "numsub", "shardchannels", "shardnumsub", "help"]) },
    cmd!("lolwut", -1, READONLY | FAST, (0, 0, 0), "server", "5.0.0", "Displays computer art and the Redis version.", server::lolwut),
    CommandSpec { acl: &["admin", "dangerous"], ..cmd!("lastsave", 1, LOADING | STALE | FAST, (0, 0, 0), "server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk.", server::lastsave) },
    CommandSpec { acl: &["admin", "dangerous"], ..cmd!("module", -2, NOSCRIPT, (0, 0, 0), "server", "4.0.0", "A container for module commands.", server::module,
        &["list", "load", "loadex", "unload", "help"]) },
    cmd!("save", 1, ADMIN | NOSCRIPT | NO_MULTI | NO_ASYNC_LOADING, (0, 0, 0), "server", "1.0.0", "Synchronously saves the database(s) to disk.", server::save),
    cmd!("bgsave", -1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, (0, 0, 0), "server", "1.0.0", "Asynchronously saves the database(s) to disk.", server::save),
    cmd!("bgrewriteaof", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, (0, 0, 0), "server", "1.0.0", "Asynchronously rewrites the append-only file to disk.", server::save),
    cmd!("replicaof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, (0, 0, 0), "server", "5.0.0", "Configures a server as replica of another, or promotes it to a master.", server::replicaof),
    cmd!("slaveof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, (0, 0, 0), "server", "1.0.0", "Sets a Redis server as a replica of another, or promotes it to being a master.", server::replicaof),
    CommandSpec { acl: &["admin", "dangerous"], ..cmd!("role", 1, NOSCRIPT | LOADING | STALE | FAST, (0, 0, 0), "server", "2.8.12", "Returns the replication role.", server::role) },
    CommandSpec { acl: &["dangerous"], route: Route::Info, ..cmd!("info", -1, LOADING | STALE, (0, 0, 0), "server", "1.0.0", "Returns information and statistics about the server.", server::info) },
    CommandSpec { acl: &["connection"], ..cmd!("command", -1, LOADING | STALE, (0, 0, 0), "server", "2.8.13", "Returns detailed information about all commands.", server::command,
        &["count", "list", "info", "docs", "getkeys", "getkeysandflags", "help"]) },
    CommandSpec { route: Route::AllNodes(Gather::Setting(&["notify-keyspace-events"])), ..cmd!("config", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "2.0.0", "A container for server configuration commands.", server::config,
        &["get", "set", "resetstat", "rewrite", "help"]) },
    CommandSpec { route: Route::AllNodes(Gather::Everywhere(&["setuser", "deluser"])), ..cmd!("acl", -2, ADMIN | NOSCRIPT | LOADING | STALE, (0, 0, 0), "server", "6.0.0", "A container for Access List Control commands.", acl::acl,
        &["cat", "deluser", "dryrun", "genpass", "getuser", "list", "load", "log", "save", "setuser", "users", "whoami", "help"]) },
    cmd!("shutdown", -1, ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY, (0, 0, 0), "server", "1.0.0", "Synchronously saves the database(s) to disk and shuts down the Redis server.", server::shutdown),
    CommandSpec { route: Route::Cluster, ..cmd!("cluster", -2, LOADING | STALE, (0, 0, 0), "cluster", "3.0.0", "A container for Redis Cluster commands.", cluster::cluster,
        &["info", "nodes", "slots", "shards", "myid", "myshardid", "keyslot", "countkeysinslot", "getkeysinslot", "replicas", "slaves", "count-failure-reports", "forget", "reset", "localkeys", "haskey", "help"]) },
    CommandSpec { acl: &["connection"], ..cmd!("readonly", 1, FAST | LOADING | STALE, (0, 0, 0), "cluster", "3.0.0", "Enables read-only queries for a connection to a Redis Cluster replica node.", cluster::readonly) },
    CommandSpec { acl: &["connection"], ..cmd!("readwrite", 1, FAST | LOADING | STALE, (0, 0, 0), "cluster", "3.0.0", "Enables read-write queries for a connection to a Redis Cluster replica node.", cluster::readwrite) },
    CommandSpec { acl: &["connection"], ..cmd!("asking", 1, FAST, (0, 0, 0), "cluster", "3.0.0", "Signals that a cluster client is following an -ASK redirect.", cluster::asking) },
    cmd!("time", 1, FAST | LOADING | STALE, (0, 0, 0), "server", "2.6.0", "Returns the server time.", server::time),
];

/// Commands that only Shoal's own front ends send, never a client: a Memcached request
/// carried through the cluster layer (`cmd::memcache`; `[name, request text, keys...]`).
/// `lookup` finds them, so the cluster layer places, forwards and replicates them by their
/// rows like any command; `prepare` answers any other session as for an unknown command, and
/// COMMAND does not list them.
pub static INTERNAL: &[CommandSpec] = &[
    // `acl.script <user> <EVAL|EVALSHA|FCALL> ...` and `acl.script_ro <user> <EVAL_RO|
    // EVALSHA_RO|FCALL_RO> ...`: the script's keys follow its numkeys, two places further.
    movable(
        cmd!(
            "acl.script",
            -5,
            RUNS_WRITES | NOSCRIPT,
            (0, 0, 0),
            "scripting",
            "0.1.0",
            "A script run as an ACL user (its calls checked against the user), sent by the node its client is on.",
            acl::as_user
        ),
        4
    ),
    movable(
        cmd!(
            "acl.script_ro",
            -5,
            READONLY | NOSCRIPT,
            (0, 0, 0),
            "scripting",
            "0.1.0",
            "A read-only script run as an ACL user, sent by the node its client is on.",
            acl::as_user
        ),
        4
    ),
    cmd!(
        "acl.copy",
        1,
        READONLY | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        "server",
        "0.1.0",
        "This node's users as an ACL file holds them, for a node that starts (LOADING while it copies its own).",
        acl::copy
    ),
    cmd!(
        "acl.adopt",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        "server",
        "0.1.0",
        "Ends a starting node's copy with another member's users (acl.copy's text).",
        acl::adopt
    ),
    cmd!(
        "acl.follow",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        "server",
        "0.1.0",
        "Another node's ACL SETUSER: the client's rules where the user exists, the whole user where it does not.",
        acl::follow
    ),
    cmd!(
        "acl.rules",
        2,
        READONLY | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        "server",
        "0.1.0",
        "A user's rules from reset, for the other members to set it as this node has it after an ACL SETUSER.",
        acl::rules
    ),
    cmd!(
        "function.copy",
        1,
        READONLY | NOSCRIPT,
        (0, 0, 0),
        "scripting",
        "0.1.0",
        "This node's function libraries, for a node that starts (LOADING while it copies its own).",
        function::copy
    ),
    cmd!(
        "function.adopt",
        2,
        WRITE | NOSCRIPT,
        (0, 0, 0),
        "scripting",
        "0.1.0",
        "Ends a starting node's copy with another member's libraries (FUNCTION DUMP's payload).",
        function::adopt
    ),
    cmd!(
        "multi.snapshot",
        -2,
        READONLY | FAST,
        (1, -1, 1),
        "transactions",
        "0.1.0",
        "What keys hold now (type, version, expiry), for a WATCH on a node that does not own them.",
        multi::snapshots
    ),
    cmd!(
        "tracking.invalidate",
        -3,
        FAST | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        "connection",
        "0.1.0",
        "Another node's client-side caching invalidations for this node's tracking clients.",
        conn::tracking_invalidate
    ),
    cmd!(
        "tracking.bcast",
        -2,
        FAST | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        "connection",
        "0.1.0",
        "The key prefixes another node's BCAST tracking clients watch: changes under them are told to it.",
        conn::tracking_bcast
    ),
    cmd!(
        "tracking.flush",
        1,
        FAST | NOSCRIPT | LOADING | STALE,
        (0, 0, 0),
        "connection",
        "0.1.0",
        "Another node lost track of this node's clients' reads: they drop every cached key.",
        conn::tracking_flush
    ),
    cmd!(
        "x.lastids",
        -2,
        READONLY | FAST,
        (1, -1, 1),
        "stream",
        "0.1.0",
        "The last IDs of streams, for a blocking XREAD with $ forwarded by another node.",
        stream::last_ids
    ),
    cmd!(
        "mc.read",
        -3,
        READONLY | FAST,
        (2, -1, 1),
        "memcache",
        "0.1.0",
        "A Memcached request that reads its keys.",
        memcache::tunneled
    ),
    cmd!(
        "mc.write",
        -3,
        WRITE | FAST,
        (2, -1, 1),
        "memcache",
        "0.1.0",
        "A Memcached request that may change its keys.",
        memcache::tunneled
    ),
    CommandSpec {
        route: Route::AllNodes(Gather::Flush),
        ..cmd!(
            "mc.flush",
            2,
            WRITE,
            (0, 0, 0),
            "memcache",
            "0.1.0",
            "Memcached's flush_all, on every node.",
            memcache::tunneled
        )
    },
    cmd!(
        "cluster.floor",
        -2,
        WRITE,
        (0, 0, 0),
        "cluster",
        "0.1.0",
        "Raises this node's version floor and clocks (the second step of FLUSHALL).",
        keys::floor
    ),
    cmd!(
        "cluster.keyspace",
        1,
        READONLY,
        (0, 0, 0),
        "cluster",
        "0.1.0",
        "Keys and keys with a TTL per database, in a fan-out's scope (INFO keyspace).",
        db::scoped_keyspace
    ),
];

/// The row at `index` of `TABLE` followed by `INTERNAL`.
fn spec_at(index: usize) -> Option<&'static CommandSpec> {
    TABLE
        .get(index)
        .or_else(|| INTERNAL.get(index.checked_sub(TABLE.len())?))
}

/// A client's CLIENT LIST / CLIENT INFO line, with what the engine knows of it (its last
/// command's name, whether its tracking redirect was found broken).
pub fn describe_client(engine: &Engine, info: &ClientInfo, now_ms: u64) -> String {
    let modes = info.modes.load(std::sync::atomic::Ordering::Relaxed);
    let tracks = modes & crate::client::TRACKING != 0;
    let broken = tracks && engine.tracker.redirect_broken(info.id);
    info.describe(now_ms, &last_command(info), broken)
}

/// The name of the last command a client ran ("" before its first), with its subcommand
/// as Redis 7 shows it in CLIENT LIST (`client|list`).
pub fn last_command(info: &ClientInfo) -> String {
    let packed = info.last_cmd.load(std::sync::atomic::Ordering::Relaxed);
    let Some(spec) = spec_at(packed & LAST_INDEX) else {
        return String::new();
    };
    match (packed >> LAST_SUB_SHIFT).checked_sub(1) {
        Some(sub) if sub < spec.subcommands.len() => {
            format!("{}|{}", spec.name, spec.subcommands[sub])
        }
        _ => spec.name.to_string(),
    }
}

/// `ClientInfo::last_cmd` packs the row's index (low bits) and its subcommand's place + 1
/// (0: none) above `LAST_SUB_SHIFT`.
const LAST_SUB_SHIFT: u32 = 24;
const LAST_INDEX: usize = (1 << LAST_SUB_SHIFT) - 1;

/// Looks a command up by name, case-insensitively (internal rows included).
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    lookup_index(name).and_then(spec_at)
}

/// Bytes a command may make at the node that runs it beyond what its request carries: a
/// SETBIT, SETRANGE or BITFIELD far out grows its string up to the offset (512 MB at most),
/// from a request of a few bytes. What a node that forwards it allows for the time it takes
/// there (`shoal_cluster`'s `forward_large`); 0 for any other command.
pub fn effect_len(spec: &CommandSpec, args: &[Bytes]) -> usize {
    // At most a string's largest size: a wild offset the owner refuses at once must not
    // make a sender wait days for a copy that does not answer.
    const MOST: usize = 512 << 20;
    let len = match spec.name {
        "setbit" | "bitfield" => bitmap::grows_to(spec.name, args),
        "setrange" => match (args.get(2).and_then(|a| parse_i64(a)), args.get(3)) {
            (Some(offset), Some(value)) if offset >= 0 && !value.is_empty() => {
                usize::try_from(offset).map_or(usize::MAX, |o| o.saturating_add(value.len()))
            }
            _ => 0,
        },
        _ => 0,
    };
    len.min(MOST)
}

/// Looks a command up among the rows clients see (COMMAND INFO, DOCS, GETKEYS): not the
/// internal ones.
pub fn lookup_listed(name: &[u8]) -> Option<&'static CommandSpec> {
    lookup_index(name).and_then(|i| TABLE.get(i))
}

/// The command's index in `TABLE`, or past its end in `INTERNAL` (called a few times per
/// request: a fast hash, no UTF-8 check).
fn lookup_index(name: &[u8]) -> Option<usize> {
    type Index = HashMap<&'static [u8], usize, foldhash::fast::FixedState>;
    static INDEX: OnceLock<Index> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        TABLE
            .iter()
            .chain(INTERNAL)
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect()
    });
    // The last name this thread looked up, as the client spelled it: a request is looked
    // up a few times on its way (the pipeline check, `prepare`, the in-flight note), and a
    // pipeline mostly repeats one command.
    thread_local! {
        static LAST: std::cell::Cell<(Option<NameKey>, Option<usize>)> =
            const { std::cell::Cell::new((None, None)) };
    }
    let key = NameKey::of(name);
    let (last, found) = LAST.get();
    if key.is_some() && key == last {
        return found;
    }
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let found = index.get(&*lower).copied();
    if key.is_some() {
        LAST.set((key, found));
    }
    found
}

/// A command name of at most 16 bytes as two words and its length, which tell it from any
/// other such name: [`lookup_index`] compares the name it remembers so, in a few
/// instructions (a slice comparison calls `memcmp`, a few percent of a pipelined GET).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct NameKey(u64, u64, usize);

impl NameKey {
    /// Names of 8 to 16 bytes as their first and last eight (overlapping), 4 to 7 as their
    /// first and last four, shorter ones byte by byte; `None` past 16 bytes.
    fn of(name: &[u8]) -> Option<NameKey> {
        let n = name.len();
        let word = |b: &[u8]| b.iter().rev().fold(0u64, |w, &x| w << 8 | u64::from(x));
        let (a, b) = match n {
            17.. => return None,
            8.. => (
                u64::from_le_bytes(name[..8].try_into().ok()?),
                u64::from_le_bytes(name[n - 8..].try_into().ok()?),
            ),
            4.. => (
                u64::from(u32::from_le_bytes(name[..4].try_into().ok()?)),
                u64::from(u32::from_le_bytes(name[n - 4..].try_into().ok()?)),
            ),
            _ => (word(name), 0),
        };
        Some(NameKey(a, b, n))
    }
}

/// CLIENT REPLY mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command only.
    Skip,
}

/// What a reply may still grow by before the client's output limit is passed. Commands whose
/// reply grows with the data (MGET, KEYS, SCAN) charge each item as they build it and stop
/// at the first that does not fit, so a reply never holds more than the limit plus one item.
#[derive(Clone, Copy, Debug)]
pub struct ReplyBudget {
    left: usize,
    exceeded: bool,
}

/// The budget of a reply that another node asked for: what one inter-node frame can carry.
pub const FORWARDED_REPLY_MAX: usize = 512 * 1024 * 1024;

/// Bytes an item takes in a reply beyond its data: the `Reply` that holds it until it is
/// encoded, and its header (`$<len>\r\n...\r\n`).
pub const ITEM_OVERHEAD: usize = std::mem::size_of::<Reply>() + 16;

impl ReplyBudget {
    /// `bytes` more at most; 0 = unlimited (a limit of 0 means none, as in the config).
    pub fn new(bytes: u64) -> ReplyBudget {
        let left = match bytes {
            0 => usize::MAX,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        ReplyBudget {
            left,
            exceeded: false,
        }
    }

    /// One of `parts` equal shares of what is left (for the parts of one reply).
    pub fn share(self, parts: usize) -> ReplyBudget {
        ReplyBudget {
            left: match self.left {
                usize::MAX => usize::MAX,
                n => (n / parts.max(1)).max(1),
            },
            exceeded: self.exceeded,
        }
    }

    /// Charges an item of `len` data bytes; false (from then on) once it does not fit.
    pub fn charge(&mut self, len: usize) -> bool {
        match self.left.checked_sub(len.saturating_add(ITEM_OVERHEAD)) {
            Some(left) if !self.exceeded => {
                self.left = left;
                true
            }
            _ => {
                self.exceeded = true;
                false
            }
        }
    }

    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// Bytes left.
    pub fn left(&self) -> usize {
        self.left
    }
}

/// Per-connection state the commands read and change.
pub struct Session {
    pub info: Arc<ClientInfo>,
    /// The selected database (SELECT; `cmd::db`).
    pub db: u8,
    pub proto: Protocol,
    pub authenticated: bool,
    pub reply_mode: ReplyMode,
    /// Set by QUIT (and protocol errors): close once the reply is written.
    pub close: bool,
    /// Between MULTI and EXEC/DISCARD.
    pub multi: Option<multi::Multi>,
    /// Keys under WATCH with what they held.
    pub watched: Vec<multi::Watched>,
    /// The command's reply must not be sent (SHUTDOWN closes without one, as Redis).
    pub drop_reply: bool,
    /// What the running command's reply may grow by; the front end sets it before each
    /// command. When a command exceeds it, the client is closed (Redis's hard limit).
    pub budget: ReplyBudget,
    /// The connection came in on the cluster-client port: Redis Cluster's rules apply
    /// (MOVED for keys owned elsewhere, CROSSSLOT, node-local key listings).
    pub redis_cluster: bool,
    /// READONLY: reads of keys this node holds a replica copy of are served here.
    pub readonly: bool,
    /// Shoal's own sender (the Memcached front end, another node): may run `INTERNAL` rows.
    pub internal: bool,
    /// MONITOR ran: the front end turns this connection into a monitor (and clears it).
    pub monitor: bool,
    /// A blocking command found nothing to pop: the layer above waits on its keys and runs
    /// it again (see `crate::blocking`), and takes this.
    pub block: Option<crate::blocking::Block>,
    /// Blocking commands answer at once (inside a transaction, as in Redis).
    pub no_block: bool,
    /// A blocked command runs again after a wake-up: keys of another type are waited past
    /// instead of answering WRONGTYPE (Redis keeps such a client blocked).
    pub block_retry: bool,
    /// A blocked client's attempt: it waits out a busy script instead of answering BUSY
    /// (Redis serves its blocked clients once the script ended).
    pub blocked_attempt: bool,
    /// Its Pub/Sub subscriptions and mailbox, from its first SUBSCRIBE on (`crate::pubsub`),
    /// or from CLIENT TRACKING ON (its invalidations come through the mailbox).
    pub pubsub: Option<crate::pubsub::Subscriber>,
    /// CLIENT TRACKING (`crate::tracking`).
    pub tracking: Option<crate::tracking::Tracking>,
    /// Sent by another node for a client of its own that tracks (`crate::tracking`): its
    /// reads remember that node, its changes name that client.
    pub origin: Option<crate::tracking::Origin>,
    /// Commands running inside this session's current one (EXEC's, a script's).
    pub depth: u32,
    /// Keys the commands inside the current EXEC or script changed, whose client-side
    /// caching invalidations go out together when it ends (BCAST clients get one push per
    /// prefix, as Redis gathers them over its event loop's turn).
    pub changed_inside: Vec<Bytes>,
    /// The running command was called by a script (XREAD's BLOCK is refused there).
    pub scripted: bool,
    /// The running command was called by a script flagged `allow-oom`: it skips the
    /// `maxmemory` check of commands that need memory (the store's own bound still holds).
    pub allow_oom: bool,
    /// What the replicas should run instead of the command that just ran, when its own
    /// arguments would give another result there (XADD's `*` becomes the ID it got: Redis's
    /// `rewriteClientCommandArgument`). Cleared as each command starts.
    pub propagate: Option<Vec<Bytes>>,
    /// The ACL user its commands are checked against (`cmd::acl`); `None` for Shoal's own
    /// sessions (another node's requests, the Memcached front end), which are not checked.
    pub user: Option<Arc<crate::acl::User>>,
    /// The users' epoch `user` was read at: when the users changed since, it is read again.
    pub acl_epoch: u64,
    /// Whether a script that runs long may stop to run again elsewhere, and whether it did
    /// (`crate::busy::ScriptMove`; the front end's to set and read).
    pub script_move: crate::busy::ScriptMove,
}

impl Session {
    pub fn new(info: Arc<ClientInfo>, authenticated: bool) -> Session {
        Session {
            info,
            proto: Protocol::Resp2,
            authenticated,
            reply_mode: ReplyMode::On,
            close: false,
            multi: None,
            watched: Vec::new(),
            drop_reply: false,
            budget: ReplyBudget::new(FORWARDED_REPLY_MAX as u64),
            redis_cluster: false,
            readonly: false,
            db: 0,
            internal: false,
            monitor: false,
            block: None,
            no_block: false,
            block_retry: false,
            blocked_attempt: false,
            pubsub: None,
            tracking: None,
            origin: None,
            depth: 0,
            changed_inside: Vec::new(),
            scripted: false,
            allow_oom: false,
            propagate: None,
            user: None,
            acl_epoch: 0,
            script_move: crate::busy::ScriptMove::Stay,
        }
    }
}

/// What a handler works with.
pub struct Ctx<'a> {
    pub engine: &'a Engine,
    /// The node around the engine (cluster, shutdown).
    pub host: &'a dyn Host,
    pub session: &'a mut Session,
    /// Unix ms, read once per batch of pipelined requests.
    pub now_ms: u64,
    /// In a cluster, the part of the local keys that key-enumerating commands (DBSIZE, KEYS,
    /// SCAN, RANDOMKEY) look at; `None` = every local key.
    pub scope: Option<&'a dyn SlotScope>,
    /// Cluster-wide (keys, volatile keys) for INFO keyspace, gathered by the router.
    pub keyspace: Option<(u64, u64)>,
    /// A replica running its owner's write (`run_replicated`): it publishes no keyspace
    /// notification (the owner did).
    pub replica: bool,
}

impl Ctx<'_> {
    /// Publishes the keyspace notification `event` of `class` (`crate::notify`) for the
    /// stored key `key`, where Redis calls `notifyKeyspaceEvent`.
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        if !self.replica {
            self.engine.notify(class, event, key);
        }
    }

    /// True if `key` is in this request's scope (always, outside a fan-out).
    pub fn in_scope(&self, key: &[u8]) -> bool {
        self.scope
            .is_none_or(|s| s.includes(shoal_store::key_slot(key)))
    }
}

/// A collection write's notifications: `event` of `class` for `key`, then `del` when the
/// write left the collection empty and so removed the key (`gone`), as Redis publishes them.
pub(crate) fn notify_change(ctx: &Ctx<'_>, class: u32, event: &str, key: &[u8], gone: bool) {
    ctx.notify(class, event, key);
    if gone {
        ctx.notify(crate::notify::GENERIC, "del", key);
    }
}

/// A STORE form's notifications (SINTERSTORE, ZUNIONSTORE, SORT ... STORE, ...): `event` of
/// `class` for the destination `key` when the result was stored (`stored`: not empty), else
/// `del` when an empty result removed a key that `existed`.
pub(crate) fn notify_stored(
    ctx: &Ctx<'_>,
    class: u32,
    event: &str,
    key: &[u8],
    stored: bool,
    existed: bool,
) {
    if stored {
        ctx.notify(class, event, key);
    } else if existed {
        ctx.notify(crate::notify::GENERIC, "del", key);
    }
}

/// What `prepare` decided.
pub enum Prepared {
    /// Checks passed: run the command (locally, or wherever the router sends it).
    Run(&'static CommandSpec),
    /// Answered already: an error, or `+QUEUED` inside MULTI.
    Done(Reply),
}

/// A check the layer above adds to [`prepare_checked`] (Redis Cluster's redirections): it
/// sees a command that passed the other checks, before it is queued (inside MULTI) or run,
/// and a reply it returns refuses the command. A refused queued command makes EXEC abort; a
/// refused EXEC discards the transaction, as Redis Cluster's redirections do.
pub type Check<'a> = &'a dyn Fn(&CommandSpec, &[Bytes], &Session) -> Option<Reply>;

/// The checks every request passes before it runs: known command, arity, authentication,
/// MULTI queueing.
pub fn prepare(node: &Engine, session: &mut Session, args: &[Bytes]) -> Prepared {
    prepare_checked(node, session, args, &|_, _, _| None)
}

/// [`prepare`] with one more check, made after authentication.
pub fn prepare_checked(
    node: &Engine,
    session: &mut Session,
    args: &[Bytes],
    check: Check<'_>,
) -> Prepared {
    let found = lookup_index(&args[0])
        .filter(|&i| i < TABLE.len() || session.internal)
        .and_then(|i| Some((i, spec_at(i)?)));
    let Some((index, spec)) = found else {
        let reply = unknown_command(args);
        count_error(node, &reply);
        return Prepared::Done(reject(session, reply));
    };
    let prepared = prepare_found(node, session, args, check, index, spec);
    if let Prepared::Done(Reply::Error(text)) = &prepared {
        count_rejected(node, spec, args, text);
    }
    prepared
}

/// [`prepare_checked`] for a command found in the table at `index`.
fn prepare_found(
    node: &Engine,
    session: &mut Session,
    args: &[Bytes],
    check: Check<'_>,
    index: usize,
    spec: &'static CommandSpec,
) -> Prepared {
    let sub = match args.get(1) {
        Some(a) if !spec.subcommands.is_empty() => spec
            .subcommands
            .iter()
            .position(|s| a.eq_ignore_ascii_case(s.as_bytes()))
            .map_or(0, |i| i + 1),
        _ => 0,
    };
    session.info.last_cmd.store(
        index | (sub << LAST_SUB_SHIFT),
        std::sync::atomic::Ordering::Relaxed,
    );
    if !spec.takes(args.len()) {
        if spec.name == "exec" {
            return Prepared::Done(reject_exec(session, wrong_arity(spec.name)));
        }
        return Prepared::Done(reject(session, wrong_arity(spec.name)));
    }
    // A container's subcommand Redis does not have, or its own arity, is refused before it
    // runs or is queued, as Redis's `processCommand` does (inside MULTI the transaction
    // then aborts).
    match subcommand_misfit(spec, args) {
        Some(Misfit::Unknown) => {
            return Prepared::Done(reject(session, unknown_subcommand(spec.name, &args[1])));
        }
        Some(Misfit::Arity(full)) => return Prepared::Done(reject(session, wrong_arity(&full))),
        None => {}
    }
    // DEBUG and MODULE LOAD are refused before anything else, as Redis refuses its
    // protected commands: inside MULTI too, which the refusal then discards.
    // (Counted as an error by the caller, `prepare_checked`, as every refusal here.)
    let debug = spec.name == "debug"
        && node
            .with_settings(|s| server::debug_allowed(&s.enable_debug_command, &session.info.addr));
    if let Some(reply) = server::protected_refusal(spec, args, debug) {
        return Prepared::Done(reject(session, reply));
    }
    if !session.authenticated && spec.flags & NOAUTH == 0 {
        if acl::requires_auth(node) {
            let noauth = Reply::error("NOAUTH Authentication required.");
            if spec.route == Route::Exec {
                return Prepared::Done(reject_exec(session, noauth));
            }
            return Prepared::Done(reject(session, noauth));
        }
        session.authenticated = true;
    }
    // A RESP2 connection that subscribes takes only Pub/Sub commands, PING, QUIT and RESET.
    if session.pubsub.is_some()
        && pubsub::in_subscribed_context(session)
        && !pubsub::allowed_while_subscribed(spec.name)
    {
        let name = match sub.checked_sub(1) {
            Some(i) => format!("{}|{}", spec.name, spec.subcommands[i]),
            None => spec.name.to_string(),
        };
        let refused = pubsub::refused_while_subscribed(&name);
        if spec.route == Route::Exec {
            return Prepared::Done(reject_exec(session, refused));
        }
        return Prepared::Done(reject(session, refused));
    }
    // The ACL (Redis checks it before its cluster redirections).
    let context = if session.multi.is_some() {
        "multi"
    } else {
        "toplevel"
    };
    if let Some(reply) = acl::refusal(node, session, index, spec, args, context) {
        if spec.route == Route::Exec {
            // In MULTI or not, as Redis's `execCommandAbort`.
            session.multi = None;
            session.watched.clear();
            let text = match &reply {
                Reply::Error(e) => e.to_string(),
                _ => String::new(),
            };
            return Prepared::Done(Reply::error(format!(
                "EXECABORT Transaction discarded because of: {text}"
            )));
        }
        return Prepared::Done(reject(session, reply));
    }
    if let Some(reply) = check(spec, args, session) {
        if spec.route == Route::Exec && session.multi.take().is_some() {
            session.watched.clear();
            return Prepared::Done(reply);
        }
        return Prepared::Done(reject(session, reply));
    }
    if session.multi.is_some() && spec.flags & NO_MULTI != 0 {
        return Prepared::Done(reject(
            session,
            err("ERR Command not allowed inside a transaction"),
        ));
    }
    // Out of memory, nothing more is queued (a queue grows without bound otherwise), as
    // Redis refuses every command inside MULTI but EXEC and DISCARD then.
    if session.multi.is_some()
        && spec.flags & NOQUEUE == 0
        && node.store.maxmemory() > 0
        && node.store.ensure_memory(crate::clock::now_ms()).is_err()
    {
        return Prepared::Done(reject(session, Reply::error(ERR_OOM)));
    }
    // Too few replicas (`min-replicas-to-write`): a write is not queued, as Redis refuses it
    // then. Known here on a single node only (it has none); in a cluster the key's owner
    // decides, and EXEC checks again.
    if session.multi.is_some()
        && spec.flags & WRITE != 0
        && node.min_replicas() > 0
        && node.with_settings(|s| !s.gossip() && s.cluster_nodes.is_empty())
    {
        return Prepared::Done(reject(session, err(ERR_NOREPLICAS)));
    }
    // While a script is busy, what would be queued is refused as it would be run.
    if session.multi.is_some() && spec.flags & NOQUEUE == 0 && !allowed_while_busy(spec, args) {
        if let Some(busy) = node.running.busy_reply() {
            return Prepared::Done(reject(session, err(busy)));
        }
    }
    if let Some(tx) = session.multi.as_mut().filter(|_| spec.flags & NOQUEUE == 0) {
        tx.queue.push(args.to_vec());
        return Prepared::Done(Reply::Simple("QUEUED".into()));
    }
    Prepared::Run(spec)
}

/// Whether a command runs while a script is busy (Redis's `allow-busy`): the rows flagged
/// [`ALLOW_BUSY`], and SCRIPT KILL, FUNCTION KILL and FUNCTION STATS of their containers.
pub fn allowed_while_busy(spec: &CommandSpec, args: &[Bytes]) -> bool {
    spec.flags & ALLOW_BUSY != 0
        || match spec.name {
            "script" => names_subcommand(&["kill"], args),
            "function" => names_subcommand(&["kill", "stats"], args),
            _ => false,
        }
}

/// A command's arguments as the slow log and MONITOR show them: MIGRATE's passwords, ACL
/// SETUSER's user and rules, and the value of a setting Redis marks sensitive (passwords:
/// `requirepass`, `masterauth`, `masteruser`) in CONFIG SET redacted, as Redis redacts them.
pub fn shown_args<'a>(spec: &CommandSpec, args: &'a [Bytes]) -> std::borrow::Cow<'a, [Bytes]> {
    const REDACTED: Bytes = Bytes::from_static(b"(redacted)");
    match spec.name {
        "migrate" => std::borrow::Cow::Owned(keys::migrate_redacted(args)),
        "acl" if names_subcommand(&["setuser"], args) && args.len() > 2 => {
            let mut shown = args.to_vec();
            shown[2..].fill(REDACTED);
            std::borrow::Cow::Owned(shown)
        }
        // CONFIG SET of a setting Redis marks sensitive: the argument after its name (also
        // when the pairs are off by one, so a password never shows).
        "config" if names_subcommand(&["set"], args) => {
            let sensitive = |name: &Bytes| {
                ["requirepass", "masterauth", "masteruser"]
                    .iter()
                    .any(|s| name.eq_ignore_ascii_case(s.as_bytes()))
            };
            let mut shown = args.to_vec();
            for i in 2..shown.len().saturating_sub(1) {
                if sensitive(&args[i]) {
                    shown[i + 1] = REDACTED;
                }
            }
            std::borrow::Cow::Owned(shown)
        }
        _ => std::borrow::Cow::Borrowed(args),
    }
}

/// What MONITOR shows of `args` (with [`shown_args`]'s redactions), or `None` for what it
/// leaves out, as Redis's `call()` does: an administrative command (Redis's `admin` flag; a
/// container's is its subcommand's: MODULE LIST is left out, SLOWLOG HELP shown) and a
/// container's subcommand Redis does not have (no command to Redis's lookup).
pub fn monitor_args<'a>(
    spec: &CommandSpec,
    args: &'a [Bytes],
) -> Option<std::borrow::Cow<'a, [Bytes]>> {
    let admin = match args.get(1).filter(|_| is_container(spec)) {
        Some(sub) => {
            let name = String::from_utf8_lossy(sub).to_ascii_lowercase();
            docs::subcommand_meta(spec.name, &name)
                .is_none_or(|(flags, _)| flags.contains(&"admin"))
        }
        None => spec.flags & flag::ADMIN != 0,
    };
    (!admin).then(|| shown_args(spec, args))
}

/// A subcommand a script may not run though its container's others may (Redis's
/// `noscript` on the subcommand): CLUSTER RESET.
pub fn noscript_subcommand(spec: &CommandSpec, args: &[Bytes]) -> bool {
    spec.name == "cluster" && names_subcommand(&["reset"], args)
}

/// The reply to a write while fewer of its key's replicas are reachable than
/// `min-replicas-to-write` asks.
pub const ERR_NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Whether a write must be refused for want of replicas: the cluster keeps fewer copies of
/// a key besides the owner's than `min-replicas-to-write` (Redis's
/// `checkGoodReplicasStatus`; a single node has none).
pub(crate) fn lacks_replicas(host: &dyn Host) -> bool {
    let wanted = host.engine().min_replicas();
    wanted > 0 && host.cluster().map_or(0, |c| c.good_replicas()) < wanted as usize
}

/// The reply to a command that needs memory when `maxmemory` is reached and nothing can be
/// evicted.
pub const ERR_OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// While some client tracks, what Redis's `processCommand` evicts before `call`: keys of
/// the tracking table past a `tracking-table-max-keys` set since, and over `maxmemory` keys
/// of the store (keeping the command's first key, as `run` does). Their invalidations are
/// then in the mailbox before the command's reply is, and the connection sends them first
/// (a tracking client must not cache a value its reply shows as gone).
pub fn evict_before(node: &Engine, session: &Session, args: &[Bytes], now_ms: u64) {
    if !node.tracker.active() {
        return;
    }
    node.trim_tracking_if_set();
    if node.store.maxmemory() == 0 || !node.store.over_budget(now_ms) {
        return;
    }
    let Some(spec) = lookup(&args[0]) else {
        return;
    };
    let first = db::stored_keys(spec, args, session.db).into_iter().next();
    node.as_command(|| {
        let _ = match &first {
            Some(k) => node.store.ensure_memory_keep(now_ms, k),
            None => node.store.ensure_memory(now_ms),
        };
    });
}

/// The end (Unix ms) of a CLIENT PAUSE that holds `args` back at `now_ms`, if one does: in
/// mode ALL every known command of the right arity, in mode WRITE the writes and Redis's
/// `may-replicate` commands (PUBLISH, SPUBLISH, PFCOUNT), and an EXEC with one of those
/// queued. Errors (unknown command, wrong arity) are answered at once, as in Redis.
pub fn paused_until(node: &Engine, session: &Session, args: &[Bytes], now_ms: u64) -> Option<u64> {
    let (mode, end) = node.pause.at(now_ms)?;
    let spec = lookup_listed(&args[0])?;
    if !spec.takes(args.len()) {
        return None;
    }
    let replicates = |s: &CommandSpec| s.flags & (WRITE | MAY_REPLICATE) != 0;
    // EVAL, EVALSHA, FCALL: may-replicate unless the script or function says `no-writes`.
    let runs_writes = |s: &CommandSpec, a: &[Bytes]| {
        s.flags & RUNS_WRITES != 0 && !script::declares_no_writes(node, a)
    };
    let held = match mode {
        crate::pause::Mode::All => true,
        crate::pause::Mode::Write if spec.route == Route::Exec => {
            session.multi.as_ref().is_some_and(|tx| {
                tx.queue
                    .iter()
                    .any(|a| lookup(&a[0]).is_some_and(|s| replicates(s) || runs_writes(s, a)))
            })
        }
        crate::pause::Mode::Write => replicates(spec) || runs_writes(spec, args),
    };
    held.then_some(end)
}

/// Runs a prepared command on this node's store.
pub fn run(
    host: &dyn Host,
    session: &mut Session,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
    scope: Option<&dyn SlotScope>,
) -> Reply {
    session.propagate = None;
    // Its keyspace notifications in its order, with what the store notes for it (keys it
    // finds expired or evicts, creates, misses) and nothing of another thread's.
    host.engine()
        .as_command(|| run_command(host, session, spec, args, now_ms, scope))
}

fn run_command(
    host: &dyn Host,
    session: &mut Session,
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
    scope: Option<&dyn SlotScope>,
) -> Reply {
    use std::sync::atomic::Ordering::Relaxed;
    let node = host.engine();
    let row = stat_row(node, spec, args);
    // No other thread's EXEC or script runs while this command does (`shoal_store::gate`);
    // a script busy past its threshold answers BUSY instead, but for the few Redis lets
    // through, which then run beside it (`crate::busy`).
    let busy = || !session.blocked_attempt && node.running.is_busy();
    let _entered = match node.store.enter_unless(&busy) {
        Some(entered) => Some(entered),
        None if allowed_while_busy(spec, args) => None,
        None => {
            if let Some(row) = row {
                row.rejected.fetch_add(1, Relaxed);
            }
            let reply = err(node.running.refusal());
            count_error(node, &reply);
            // EXEC is refused whole and ends the transaction, as Redis's `rejectCommand`.
            if spec.route == Route::Exec {
                return reject_exec(session, reply);
            }
            return reject(session, reply);
        }
    };
    let needs_memory = spec.flags & DENYOOM != 0 && !session.allow_oom;
    if needs_memory && node.store.maxmemory() > 0 && node.store.ensure_memory(now_ms).is_err() {
        if let Some(row) = row {
            row.rejected.fetch_add(1, Relaxed);
        }
        let reply = Reply::error(ERR_OOM);
        count_error(node, &reply);
        return reject(session, reply);
    }
    // Not Shoal's own rows (`INTERNAL`: a flush's version floor, Memcached requests, which
    // memcached has no such setting for).
    if spec.flags & WRITE != 0
        && node.min_replicas() > 0
        && !is_internal(spec)
        && lacks_replicas(host)
    {
        if let Some(row) = row {
            row.rejected.fetch_add(1, Relaxed);
        }
        let reply = err(ERR_NOREPLICAS);
        count_error(node, &reply);
        return reject(session, reply);
    }
    let started = crate::clock::Tick::now();
    // In a numbered database the keys are stored under its prefix (`db`).
    let in_db;
    let keyed = if session.db != 0 && spec.has_keys() {
        let Some(rewritten) = db::rewrite(spec, args, session.db) else {
            return reject(session, err("ERR key too long for a numbered database"));
        };
        in_db = rewritten;
        &in_db[..]
    } else {
        args
    };
    // Over `maxmemory`, keys are evicted before every command a client sends, as Redis's
    // `processCommand` does (so a tracking client's invalidation for an evicted key comes
    // before the reply), but for the first key the command names: a GET right after its SET
    // must find it, where Redis's LRU pool would not pick the newest key either (a shard's
    // few samples might).
    if !needs_memory && session.depth == 0 && node.store.over_budget(now_ms) {
        let _ = match spec.key_positions(keyed).next() {
            Some(i) => node.store.ensure_memory_keep(now_ms, &keyed[i]),
            None => node.store.ensure_memory(now_ms),
        };
    }
    let mut ctx = Ctx {
        engine: node,
        host,
        session,
        now_ms,
        scope,
        keyspace: None,
        replica: false,
    };
    // Client-side caching: a write's keys as they were, to tell the ones it changed; a
    // tracking client's read remembers its keys first, so a write racing with it on another
    // worker is seen (its invalidation then follows the read's reply).
    let written = (node.tracker.active() && spec.flags & WRITE != 0).then(|| {
        let keys = db::stored_keys(spec, args, ctx.session.db);
        let marks = crate::tracking::marks(&node.store, &keys, now_ms);
        (keys, marks)
    });
    // A read-only script remembers nothing by itself, only the keys its reads read (Redis
    // 7.2's `call`; 7.0 remembered the script's declared keys).
    let ro_script = matches!(spec.name, "eval_ro" | "evalsha_ro" | "fcall_ro");
    if node.tracker.active()
        && spec.flags & READONLY != 0
        && !ro_script
        && ctx.session.tracking.as_ref().is_some_and(|t| t.remembers())
    {
        let keys = db::stored_keys(spec, args, ctx.session.db);
        let (limit, max_keys) = node.tracking_limits();
        node.tracker
            .remember(ctx.session.info.id, &keys, max_keys, &node.pubsub, limit);
    }
    // Another node's tracking client reads: that node is remembered as the keys' reader.
    if let Some(origin) = ctx.session.origin.as_ref() {
        if origin.tracks && spec.flags & READONLY != 0 && !ro_script {
            let keys = db::stored_keys(spec, args, ctx.session.db);
            let (limit, max_keys) = node.tracking_limits();
            if node
                .tracker
                .remember_for(&origin.member, &keys, max_keys, &node.pubsub, limit)
            {
                node.refresh_notes();
            }
        }
    }
    ctx.session.depth += 1;
    // CLIENT NO-TOUCH: the keys it reads or writes keep their LRU/LFU clock (but TOUCH's).
    let reply = if ctx.session.info.no_touch.load(Relaxed) && spec.name != "touch" {
        shoal_store::without_touching(|| (spec.handler)(&mut ctx, keyed))
    } else {
        (spec.handler)(&mut ctx, keyed)
    };
    session.depth -= 1;
    // The errors a script's reply holds (none for any other command).
    let script_errors = script::take_reply_errors();
    // A script that stopped to run again elsewhere (`crate::busy::ScriptMove`) changed
    // nothing: its run there is the call counted.
    if session.script_move.set_aside() {
        return reply;
    }
    if node.tracker.active() {
        track(node, session, spec, &reply, written, now_ms);
    } else if matches!(spec.name, "flushall" | "flushdb") {
        // Keys remembered for clients that stopped tracking since go too, as Redis frees
        // its whole table (they would tell a client that tracks again later).
        node.tracker.forget_all();
    }
    // A write may give a blocked client something to pop (a command that blocked wrote
    // nothing, and must not wake itself).
    if spec.flags & WRITE != 0 && node.blocked.count() > 0 && session.block.is_none() {
        // Its keys as stored, with MOVE's and COPY ... DB's key in the other database.
        for k in db::stored_keys(spec, args, session.db) {
            node.blocked.signal(&k);
        }
    }
    let usec = started.elapsed_us();
    let event = if spec.flags & FAST != 0 {
        "fast-command"
    } else {
        "command"
    };
    node.latency
        .observe(event, usec, || crate::clock::now_ms() / 1000);
    let arity_error = matches!(&reply, Reply::Error(t) if t.starts_with(ERR_ARITY));
    if let Some(row) = row.filter(|_| arity_error) {
        // A subcommand's arity is checked by its handler here, before Redis would run it.
        row.rejected.fetch_add(1, Relaxed);
    } else if let Some(row) = row {
        // A blocked command's later attempts are the same call, counted once when it first
        // ran (Redis counts a blocking command that waited once); an error it ends with
        // counts as the call's failure.
        if !session.block_retry {
            row.record(usec);
        }
        // A script's reply fails its call once for an error the script made, and once
        // more for each error inside it that a command answered, as Redis counts.
        let failed =
            u64::from(matches!(reply, Reply::Error(_)) || !script_errors.nested.is_empty())
                + u64::from(script_errors.nested_counted);
        if failed > 0 {
            row.failed.fetch_add(failed, Relaxed);
        }
        // EXEC, AUTH and HELLO stay out of the slow log (Redis's `no-slowlog`): EXEC's
        // commands are logged one by one, the other two carry passwords.
        if node.commands.is_slow(usec) && !matches!(spec.name, "exec" | "auth" | "hello") {
            node.commands.log_slow(crate::cmdstats::SlowEntry {
                id: 0,
                unix_secs: crate::clock::now_ms() / 1000,
                usec,
                args: crate::cmdstats::slowlog_args(&shown_args(spec, args)),
                peer: session.info.addr.to_string(),
                name: session
                    .info
                    .name
                    .lock()
                    .ok()
                    .and_then(|n| n.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()))
                    .unwrap_or_default(),
            });
        }
    }
    // An error a command answered inside a script was counted when it answered; one of
    // Shoal's own rows answered a node, not a client (`acl.copy`'s LOADING while this node
    // copies its users as it starts).
    if let Reply::Error(_) = &reply {
        if !script_errors.counted && !is_internal(spec) {
            count_error(node, &reply);
        }
    }
    for e in &script_errors.nested {
        node.commands.error(e);
    }
    reply
}

/// Client-side caching after a command (`crate::tracking`): a write invalidates its keys
/// for the clients that read them (every key for FLUSHALL, FLUSHDB, SWAPDB); a tracking
/// client's read remembers its keys; CLIENT CACHING's word lasts one command.
fn track(
    node: &Engine,
    session: &mut Session,
    spec: &CommandSpec,
    reply: &Reply,
    written: Option<(Vec<Bytes>, Vec<crate::tracking::KeyMark>)>,
    now_ms: u64,
) {
    let limit = node.with_settings(|s| s.client_output_buffer_limit.pubsub);
    if matches!(spec.name, "flushall" | "flushdb") && !matches!(reply, Reply::Error(_)) {
        node.tracker.invalidate_all(&node.pubsub, limit);
    } else {
        // Only the keys it changed (value, type or TTL), as Redis signals them. Inside an
        // EXEC or a script their readers are told now (a read after the write in the same
        // transaction is not invalidated by it, as in Redis), BCAST clients when it ends
        // (one push per prefix for the whole of it).
        let changed = match written {
            Some((keys, before)) => crate::tracking::changed(&node.store, keys, before, now_ms),
            None => Vec::new(),
        };
        let (by, member) = match &session.origin {
            Some(o) => (o.client, Some(&*o.member)),
            None => (session.info.id, None),
        };
        use crate::tracking::Parts;
        let tell = |keys: &[Bytes], parts| {
            if !keys.is_empty() {
                node.tracker
                    .invalidate_parts(keys, by, member, parts, &node.pubsub, limit);
            }
        };
        if session.depth > 0 {
            tell(&changed, Parts::Readers);
            session.changed_inside.extend(changed);
            return;
        }
        if session.changed_inside.is_empty() {
            tell(&changed, Parts::Both);
        } else {
            let mut inside = std::mem::take(&mut session.changed_inside);
            // A key changed twice is told once.
            let mut seen: std::collections::HashSet<Bytes> = std::collections::HashSet::new();
            inside.retain(|k| seen.insert(k.clone()));
            // Its own keys that no command inside changed: their readers now.
            let own: Vec<Bytes> = changed.into_iter().filter(|k| !seen.contains(k)).collect();
            tell(&own, Parts::Readers);
            inside.extend(own);
            tell(&inside, Parts::Prefixes);
        }
    }
    // CLIENT CACHING's word lasts the next command, EXEC's or a script's inner ones included.
    if let Some(t) = session.tracking.as_mut() {
        if spec.name != "client" && session.depth == 0 && session.multi.is_none() {
            t.caching = false;
        }
    }
}

/// The statistics row of a command from the table (not an internal one), or of its
/// subcommand when it is a container and `args[1]` names one.
fn stat_row<'a>(
    node: &'a Engine,
    spec: &CommandSpec,
    args: &[Bytes],
) -> Option<&'a crate::cmdstats::Row> {
    let size = std::mem::size_of::<CommandSpec>();
    let offset = (spec as *const CommandSpec as usize).checked_sub(TABLE.as_ptr() as usize)?;
    let index = offset / size;
    if index >= TABLE.len() {
        return None;
    }
    // A container's row counts only its own arity errors; an unknown subcommand counts
    // nowhere (as in Redis, which refuses it before it finds a command).
    let sub = match args.get(1) {
        Some(a) if !spec.subcommands.is_empty() => Some(
            spec.subcommands
                .iter()
                .position(|s| a.eq_ignore_ascii_case(s.as_bytes()))?,
        ),
        _ => None,
    };
    let rows = node
        .commands
        .rows(|| crate::cmdstats::Rows::new(TABLE.iter().map(|c| (c.name, c.subcommands))));
    rows.row(index, sub)
}

/// Counts an error reply in INFO errorstats.
/// A command that ended in an error outside its run (a blocked one that CLIENT UNBLOCK ...
/// ERROR ended): a failed call and an error reply in INFO, as Redis counts it.
pub fn count_failed(node: &Engine, spec: &CommandSpec, args: &[Bytes], text: &str) {
    if let Some(row) = stat_row(node, spec, args) {
        row.failed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    node.commands.error(text);
}

/// A command refused before it ran (here, or by the cluster's routing: CROSSSLOT, TRYAGAIN,
/// CLUSTERDOWN): Redis's `rejected_calls` and an error reply in INFO.
pub fn count_rejected(node: &Engine, spec: &CommandSpec, args: &[Bytes], text: &str) {
    if let Some(row) = stat_row(node, spec, args) {
        row.rejected
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    node.commands.error(text);
}

/// One of Shoal's own rows ([`INTERNAL`]), which only its nodes send each other.
fn is_internal(spec: &CommandSpec) -> bool {
    INTERNAL.iter().any(|row| std::ptr::eq(row, spec))
}

fn count_error(node: &Engine, reply: &Reply) {
    if let Reply::Error(text) = reply {
        node.commands.error(text);
    }
}

/// Runs one request on this node's store and returns its reply.
pub fn execute(host: &dyn Host, session: &mut Session, args: &[Bytes], now_ms: u64) -> Reply {
    match prepare(host.engine(), session, args) {
        Prepared::Run(spec) => run(host, session, spec, args, now_ms, None),
        Prepared::Done(reply) => reply,
    }
}

/// Runs a replication delta's command (a row with [`flag::DELTA`], keys as stored) on this
/// node's copy: its handler alone, after the arity check, without the maxmemory check (a
/// replica takes its owner's writes, as it takes their states), statistics or wake-ups.
pub fn run_replicated(
    host: &dyn Host,
    session: &mut Session,
    spec: &'static CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Reply {
    let argc = args.len() as i32;
    if spec.flags & flag::DELTA == 0
        || (spec.arity > 0 && argc != spec.arity)
        || (spec.arity < 0 && argc < -spec.arity)
    {
        return err("ERR not a replication delta");
    }
    let mut ctx = Ctx {
        engine: host.engine(),
        host,
        session,
        now_ms,
        scope: None,
        keyspace: None,
        replica: true,
    };
    // What the store notes while it runs (a key created, one found expired) is not
    // published: the owner's command published it.
    let _notes = shoal_store::CommandNotes::begin();
    let reply = (spec.handler)(&mut ctx, args);
    drop(shoal_store::take_command_notes());
    reply
}

/// A refused command; inside MULTI it also dooms the transaction, as in Redis.
fn reject(session: &mut Session, reply: Reply) -> Reply {
    if let Some(tx) = session.multi.as_mut() {
        tx.dirty = true;
    }
    reply
}

/// A refused EXEC, inside MULTI or not, ends the transaction, unwatches the keys and
/// answers EXECABORT, as Redis's `rejectCommand` calls `execCommandAbort` for any EXEC
/// (`EXEC x` alone: `EXECABORT Transaction discarded because of: wrong number of arguments
/// for 'exec' command`).
fn reject_exec(session: &mut Session, reply: Reply) -> Reply {
    session.multi = None;
    session.watched.clear();
    match reply {
        Reply::Error(text) => Reply::error(format!(
            "EXECABORT Transaction discarded because of: {}",
            text.strip_prefix("ERR ").unwrap_or(&text)
        )),
        other => other,
    }
}

/// Redis's text for an unknown command, arguments quoted and cut at 128 bytes.
pub fn unknown_command(args: &[Bytes]) -> Reply {
    let mut list = String::new();
    for a in &args[1..] {
        if list.len() >= 128 {
            break;
        }
        let room = 128 - list.len();
        let text = String::from_utf8_lossy(&a[..a.len().min(room)]).into_owned();
        list.push('\'');
        list.push_str(&text);
        list.push_str("' ");
    }
    let name = String::from_utf8_lossy(&args[0][..args[0].len().min(128)]).into_owned();
    Reply::error(format!(
        "ERR unknown command '{name}', with args beginning with: {list}"
    ))
}

/// How a container's subcommand misfits, as Redis's command lookup sees it before anything
/// runs or is queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Misfit {
    /// Redis has no such subcommand (its lookup finds no command).
    Unknown,
    /// The subcommand's own arity refuses the arguments: its full name (`config|set`).
    Arity(String),
}

/// Whether `args` name a subcommand of `spec` Redis does not have, or give one too few or
/// too many arguments (Redis checks its arity with the command's). Redis's subcommands that
/// Shoal's row does not list (CLUSTER LINKS, SCRIPT DEBUG) have their arity checked, and
/// Shoal's own (CLUSTER HASKEY) check their arguments themselves.
pub(crate) fn subcommand_misfit(spec: &CommandSpec, args: &[Bytes]) -> Option<Misfit> {
    let sub = args.get(1).filter(|_| !spec.subcommands.is_empty())?;
    let listed = spec
        .subcommands
        .iter()
        .find(|s| sub.eq_ignore_ascii_case(s.as_bytes()));
    let name = match listed {
        Some(name) => std::borrow::Cow::Borrowed(*name),
        None => std::borrow::Cow::Owned(String::from_utf8_lossy(sub).to_ascii_lowercase()),
    };
    match docs::subcommand_arity(spec.name, &name) {
        None if listed.is_none() => Some(Misfit::Unknown),
        Some(arity) if !arity_takes(arity, args.len()) => {
            Some(Misfit::Arity(format!("{}|{name}", spec.name)))
        }
        _ => None,
    }
}

/// Whether `n` arguments (the name included) fit `arity`: exactly that many, or (negative)
/// at least its absolute value, as Redis's arities read.
pub fn arity_takes(arity: i32, n: usize) -> bool {
    if arity >= 0 {
        n == arity as usize
    } else {
        n >= arity.unsigned_abs() as usize
    }
}

pub fn wrong_arity(name: &str) -> Reply {
    Reply::error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// How every arity error starts.
const ERR_ARITY: &str = "ERR wrong number of arguments for";

pub fn unknown_subcommand(container: &str, sub: &[u8]) -> Reply {
    let sub = String::from_utf8_lossy(&sub[..sub.len().min(128)]).into_owned();
    Reply::error(format!(
        "ERR unknown subcommand '{sub}'. Try {} HELP.",
        container.to_ascii_uppercase()
    ))
}

/// A container's subcommand (lower case), checked as Redis 7 checks one before it runs: a
/// known name (of `table`: name and arity, Redis's convention), then its arity.
pub(crate) fn subcommand(
    container: &str,
    args: &[Bytes],
    table: &[(&str, i32)],
) -> Result<Vec<u8>, Reply> {
    let sub = args[1].to_ascii_lowercase();
    let Some(&(_, arity)) = table.iter().find(|(n, _)| n.as_bytes() == &sub[..]) else {
        return Err(unknown_subcommand(container, &args[1]));
    };
    let argc = args.len() as i32;
    if (arity > 0 && argc != arity) || (arity < 0 && argc < -arity) {
        return Err(wrong_arity(&format!(
            "{container}|{}",
            String::from_utf8_lossy(&sub)
        )));
    }
    Ok(sub)
}

/// True if `args` are a CONFIG SET of one of `names` (a [`Gather::Setting`] row's settings,
/// which run on every node), in any case.
pub fn sets_any(names: &[&str], args: &[Bytes]) -> bool {
    args.len() > 3
        && args[1].eq_ignore_ascii_case(b"set")
        && args[2..].chunks(2).any(|pair| {
            names
                .iter()
                .any(|n| pair[0].eq_ignore_ascii_case(n.as_bytes()))
        })
}

/// True if `args` name one of `subs` as their subcommand (a [`Gather::Everywhere`] row's
/// subcommands that run on every node).
pub fn names_subcommand(subs: &[&str], args: &[Bytes]) -> bool {
    args.get(1)
        .is_some_and(|a| subs.iter().any(|s| a.eq_ignore_ascii_case(s.as_bytes())))
}

/// Redis's text for a subcommand whose arguments do not fit it.
pub(crate) fn sub_syntax(container: &str, sub: &[u8]) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {container} HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)])
    ))
}

pub const ERR_SYNTAX: &str = "ERR syntax error";
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
pub const ERR_NO_SUCH_KEY: &str = "ERR no such key";
pub const ERR_WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A string command's view of a value: its bytes, or WRONGTYPE for another type.
pub fn string_of(kind: shoal_store::Kind, value: &[u8]) -> Result<&[u8], Reply> {
    match kind {
        shoal_store::Kind::String => Ok(value),
        _ => Err(err(ERR_WRONGTYPE)),
    }
}

/// The options of HSCAN and SSCAN after the cursor: (COUNT, MATCH pattern), Redis's
/// checks. Parsed after the key was looked up, as Redis does (a missing key answers an
/// empty scan whatever the options).
pub fn scan_options(args: &[Bytes]) -> Result<(usize, Option<&[u8]>), Reply> {
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 3;
    while i < args.len() {
        let Some(value) = args.get(i + 1) else {
            return Err(err(ERR_SYNTAX));
        };
        if is(&args[i], "COUNT") {
            let n = int_arg(value)?;
            if n < 1 {
                return Err(err(ERR_SYNTAX));
            }
            count = usize::try_from(n).unwrap_or(usize::MAX).min(1 << 20);
        } else if is(&args[i], "MATCH") {
            pattern = Some(&value[..]).filter(|p| *p != b"*");
        } else {
            return Err(err(ERR_SYNTAX));
        }
        i += 2;
    }
    Ok((count, pattern))
}

/// A random index below `n` (`n > 0`): HRANDFIELD, SRANDMEMBER, SPOP, ZRANDMEMBER.
pub fn random_below(n: usize) -> usize {
    (shoal_store::random_u64() % n as u64) as usize
}

/// `count` distinct indexes below `len` (`count < len`), in random order: a sample of the
/// smaller of the picked and the left-out sets.
pub fn distinct(len: usize, count: usize) -> Vec<usize> {
    let (want, invert) = if count * 2 <= len {
        (count, false)
    } else {
        (len - count, true)
    };
    let mut chosen = std::collections::HashSet::with_capacity(want);
    while chosen.len() < want {
        chosen.insert(random_below(len));
    }
    if invert {
        (0..len).filter(|i| !chosen.contains(i)).collect()
    } else {
        chosen.into_iter().collect()
    }
}

/// A HSCAN / SSCAN / ZSCAN cursor argument.
pub fn scan_cursor(arg: &[u8]) -> Result<u64, Reply> {
    cursor_value(arg).ok_or_else(|| err("ERR invalid cursor"))
}

/// A SCAN-family cursor as Redis's `parseScanCursorOrReply` reads it with `strtoul`: an
/// optional sign and decimal digits, a negative one wrapping round (`-1` is 2^64 - 1),
/// nothing at all 0; a leading space, any other byte, a sign alone or past 64 bits is no
/// cursor (`None`).
pub fn cursor_value(arg: &[u8]) -> Option<u64> {
    let (negative, digits) = match arg.split_first() {
        None => return Some(0),
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        Some(_) => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// A HSCAN / SSCAN / ZSCAN reply: the next cursor and the items.
pub fn scan_reply(cursor: u64, items: Vec<Reply>) -> Reply {
    Reply::Array(vec![Reply::bulk(cursor.to_string()), Reply::Array(items)])
}

/// A collection type the command families read and write: its TYPE and how to find it in a
/// stored value.
pub trait Typed {
    const KIND: shoal_store::Kind;
    fn of(c: &shoal_store::Collection) -> Option<&Self>;
}

macro_rules! typed {
    ($t:ident) => {
        impl Typed for shoal_store::$t {
            const KIND: shoal_store::Kind = shoal_store::Kind::$t;
            fn of(c: &shoal_store::Collection) -> Option<&Self> {
                match c {
                    shoal_store::Collection::$t(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
typed!(Hash);
typed!(Set);
typed!(List);
typed!(ZSet);

/// WRONGTYPE unless the key is absent or a `T`.
pub fn check_kind<T: Typed>(slot: &shoal_store::Slot<'_>) -> Result<(), Reply> {
    match slot.kind() {
        None => Ok(()),
        Some(k) if k == T::KIND => Ok(()),
        Some(_) => Err(err(ERR_WRONGTYPE)),
    }
}

/// Runs `f` on the `T` at `key` (`None`: absent) under its shard's lock, with the client's
/// reply budget and protocol; WRONGTYPE for another type.
pub fn with_typed<T: Typed>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(Option<&T>, &mut ReplyBudget, shoal_resp::Protocol) -> Reply,
) -> Reply {
    let engine = ctx.engine;
    let proto = ctx.session.proto;
    let budget = &mut ctx.session.budget;
    engine
        .store
        .read(key, ctx.now_ms, shoal_store::Access::Read, |e| match e {
            None => f(None, budget, proto),
            Some(e) => match e.coll.and_then(T::of) {
                Some(v) => f(Some(v), budget, proto),
                None => err(ERR_WRONGTYPE),
            },
        })
}

/// A key's type, if it exists (without counting an access).
pub fn kind_of(ctx: &Ctx<'_>, key: &[u8]) -> Option<shoal_store::Kind> {
    ctx.engine
        .store
        .read(key, ctx.now_ms, shoal_store::Access::Peek, |e| {
            e.map(|e| e.kind)
        })
}

/// [`string_of`] for an entry that may be absent.
pub fn entry_string<'a>(e: Option<shoal_store::Entry<'a>>) -> Result<Option<&'a [u8]>, Reply> {
    e.map(|e| string_of(e.kind, e.value)).transpose()
}

/// [`string_of`] for a key's slot in a write.
pub fn slot_string<'a>(slot: &'a shoal_store::Slot<'_>) -> Result<Option<&'a [u8]>, Reply> {
    match slot.kind() {
        None => Ok(None),
        Some(kind) => string_of(kind, slot.value().unwrap_or_default()).map(Some),
    }
}

pub fn err(text: &'static str) -> Reply {
    Reply::error(text)
}

/// Parses a signed 64-bit integer exactly as Redis's `string2ll`.
pub use shoal_resp::string2ll as parse_i64;

/// Parses a float as Redis's `string2ld` (`strtold` over the whole string) accepts it: no
/// surrounding spaces, not empty, no NaN; decimal, `inf`/`infinity`, or C99 hex (`0x1.8p3`).
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return None;
    }
    let (neg, body) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let v: f64 = match body.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => f64::INFINITY,
        h if h.starts_with("0x") => parse_hex_float(&h[2..])?,
        d if d.starts_with(['+', '-']) => return None,
        d => d.parse().ok()?,
    };
    let v = if neg { -v } else { v };
    (!v.is_nan()).then_some(v)
}

/// Parses a double as Redis's `string2d` (`strtod` over the whole string, for scores,
/// weights, coordinates, distances) accepts it: [`parse_f64`]'s forms, but a number past a
/// double's range (`1e309`: `inf` only when written so) or one too small for it that is not
/// zero (`1e-400`) is refused, as `strtod`'s ERANGE makes Redis refuse it.
pub fn parse_double(b: &[u8]) -> Option<f64> {
    let v = parse_f64(b)?;
    let text = b
        .strip_prefix(b"-")
        .or_else(|| b.strip_prefix(b"+"))
        .unwrap_or(b);
    let hex = text.len() > 1 && text[0] == b'0' && (text[1] | 0x20) == b'x';
    if v.is_infinite() {
        let written = text.eq_ignore_ascii_case(b"inf") || text.eq_ignore_ascii_case(b"infinity");
        return written.then_some(v);
    }
    if v == 0.0 {
        // The digits before the exponent: any but zero makes a number that underflowed.
        let (digits, marker) = if hex {
            (&text[2..], b'p')
        } else {
            (text, b'e')
        };
        let mantissa = digits
            .split(|&c| (c | 0x20) == marker)
            .next()
            .unwrap_or_default();
        if mantissa.iter().any(|&c| c.is_ascii_hexdigit() && c != b'0') {
            return None;
        }
    }
    Some(v)
}

/// The part of a C99 hex float after `0x`: hex digits, an optional `.` and fraction digits,
/// an optional binary exponent `p[+-]digits`.
fn parse_hex_float(h: &str) -> Option<f64> {
    let (mantissa, exp) = match h.split_once('p') {
        Some((m, e)) => (m, hex_exponent(e)?),
        None => (h, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    // Scaled in steps: 2^exp alone is 0 or inf past a double's range, where the product
    // need not be (0x0.001p1030 is 2^1018; 0x1p-1074 the least subnormal).
    let mut exp = exp;
    while exp != 0 && v != 0.0 && v.is_finite() {
        let step = exp.clamp(-1000, 1000);
        v *= 2f64.powi(step);
        exp -= step;
    }
    Some(v)
}

/// A hex float's binary exponent (`[+-]digits`), as strtod reads one too long for any
/// double: saturated, so it makes `inf` or 0.
fn hex_exponent(e: &str) -> Option<i32> {
    let (neg, digits) = match e.as_bytes().first() {
        Some(b'-') => (true, &e[1..]),
        Some(b'+') => (false, &e[1..]),
        _ => (false, e),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = digits
        .bytes()
        .fold(0i32, |n, b| {
            n.saturating_mul(10).saturating_add(i32::from(b - b'0'))
        })
        .min(100_000);
    Some(if neg { -n } else { n })
}

/// The integer argument or Redis's "not an integer" error reply.
pub fn int_arg(b: &[u8]) -> Result<i64, Reply> {
    parse_i64(b).ok_or_else(|| err(ERR_NOT_INTEGER))
}

/// The arguments of LMPOP and ZMPOP (and their blocking forms) after the `numkeys` count
/// at `at`: the keys, whether the `ends` word given was the second one (RIGHT, MAX), and
/// the COUNT (1 by default), with Redis's texts for each error.
pub fn mpop_args<'a>(
    args: &'a [Bytes],
    at: usize,
    ends: [&str; 2],
) -> Result<(&'a [Bytes], bool, u64), Reply> {
    let n = match parse_i64(&args[at]) {
        Some(n) if n > 0 => n as u64,
        _ => return Err(err("ERR numkeys should be greater than 0")),
    };
    let end_at = (at as u64).saturating_add(n).saturating_add(1);
    if end_at >= args.len() as u64 {
        return Err(err(ERR_SYNTAX));
    }
    let end_at = end_at as usize;
    let second = if is(&args[end_at], ends[0]) {
        false
    } else if is(&args[end_at], ends[1]) {
        true
    } else {
        return Err(err(ERR_SYNTAX));
    };
    let mut count = None;
    let mut i = end_at + 1;
    while i < args.len() {
        if count.is_none() && is(&args[i], "COUNT") && i + 1 < args.len() {
            count = match parse_i64(&args[i + 1]) {
                Some(c) if c > 0 => Some(c as u64),
                _ => return Err(err("ERR count should be greater than 0")),
            };
            i += 2;
        } else {
            return Err(err(ERR_SYNTAX));
        }
    }
    Ok((&args[at + 1..end_at], second, count.unwrap_or(1)))
}

/// A blocking pop of the form `key [key ...] timeout` (BLPOP, BRPOP, BZPOPMIN, BZPOPMAX):
/// what `pop` takes from the first of the keys that has something, else a wait on all of
/// them until the timeout (a null array if nothing comes).
pub fn block_pop(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    pop: impl FnOnce(&mut Ctx<'_>, &[Bytes]) -> Option<Reply>,
) -> Reply {
    let deadline = tri!(wait::parse_timeout(&args[args.len() - 1], ctx.now_ms));
    let keys = &args[1..args.len() - 1];
    match pop(ctx, keys) {
        Some(reply) => reply,
        None => block_on(ctx, keys, deadline, Reply::NilArray),
    }
}

/// A blocking pop of the form `timeout numkeys key [key ...] END [COUNT count]` (BLMPOP
/// with `ends` LEFT/RIGHT, BZMPOP with MIN/MAX), the keys and options read before the
/// timeout as Redis does: `pop` gets the keys, whether the second end was named, and the
/// count.
pub fn block_mpop(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    ends: [&str; 2],
    pop: impl FnOnce(&mut Ctx<'_>, &[Bytes], bool, u64) -> Option<Reply>,
) -> Reply {
    let (keys, second, count) = tri!(mpop_args(args, 2, ends));
    let deadline = tri!(wait::parse_timeout(&args[1], ctx.now_ms));
    match pop(ctx, keys, second, count) {
        Some(reply) => reply,
        None => block_on(ctx, keys, deadline, Reply::NilArray),
    }
}

/// A blocking command found nothing: asks the layer above to wait on `keys` (stored keys)
/// until `deadline_ms`. Answers `now`, what a command that may not block (inside MULTI)
/// answers at once; after a wait that times out every blocking command answers a null
/// array, as Redis does.
pub fn block_on(ctx: &mut Ctx<'_>, keys: &[Bytes], deadline_ms: Option<u64>, now: Reply) -> Reply {
    if !ctx.session.no_block {
        ctx.session.block = Some(crate::blocking::Block {
            keys: keys.to_vec(),
            deadline_ms,
            timeout_reply: Reply::NilArray,
            args: None,
        });
    }
    now
}

/// Whether a client whose command waits holds back its later commands until it is answered,
/// as a blocked client in Redis: the blocking commands, WAIT and WAITAOF.
pub fn holds_client(spec: &CommandSpec) -> bool {
    spec.flags & flag::BLOCKING != 0 || matches!(spec.name, "wait" | "waitaof")
}

/// Case-insensitive comparison of an argument with an option name (given in uppercase).
pub fn is(arg: &[u8], upper: &str) -> bool {
    arg.eq_ignore_ascii_case(upper.as_bytes())
}

/// Unwraps a `Result<T, Reply>` inside a handler, returning the error reply.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(reply) => return reply,
        }
    };
}
pub(crate) use tri;

#[cfg(test)]
mod helper_tests {
    use super::*;

    #[test]
    fn floats_parse_like_strtold() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-3"), Some(-3.0));
        assert_eq!(parse_f64(b"5.0e3"), Some(5000.0));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b""), None);
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b"-0x1.8p1"), Some(-3.0));
        assert_eq!(parse_f64(b"0x"), None);
        assert_eq!(parse_f64(b"--1"), None);
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        // A double as Redis's string2d reads it: out of range is refused, written inf is not.
        assert_eq!(parse_f64(b"1e309"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"1e309"), None);
        assert_eq!(parse_double(b"-1e309"), None);
        assert_eq!(parse_double(b"0x1p2000"), None);
        assert_eq!(parse_double(b"1e-400"), None);
        assert_eq!(parse_double(b"-0.0001e-400"), None);
        assert_eq!(parse_double(b"0x1p-2000"), None);
        assert_eq!(parse_double(b"0e-400"), Some(0.0));
        assert_eq!(parse_double(b"0.000"), Some(0.0));
        assert_eq!(parse_double(b"-0"), Some(-0.0));
        assert_eq!(parse_double(b"0x0p5"), Some(0.0));
        assert_eq!(parse_double(b"1e-310"), Some(1e-310));
        assert_eq!(parse_double(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b"1.5e3"), Some(1500.0));
        assert_eq!(parse_double(b"nan"), None);
        // Hex exponents past a double's own range, scaled in steps, as strtod reads them.
        assert_eq!(parse_f64(b"0x1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(parse_double(b"0x1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(parse_f64(b"0x0.001p1030"), Some(2f64.powi(1018)));
        assert_eq!(parse_f64(b"0x1p99999999999"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"0x1p-99999999999"), Some(0.0));
        assert_eq!(parse_f64(b"0x1p+3"), Some(8.0));
        assert_eq!(parse_f64(b"0x1p"), None);
        assert_eq!(parse_f64(b"0x1p-"), None);
    }

    #[test]
    fn lookups_in_any_order_and_case_find_their_rows() {
        // The remembered last name must never answer for another one.
        let names: [&[u8]; 9] = [
            b"GET", b"get", b"SET", b"GET", b"nosuch", b"nosuch", b"GETEX", b"GE", b"",
        ];
        for _ in 0..2 {
            for name in names {
                let want = TABLE
                    .iter()
                    .position(|c| c.name.as_bytes().eq_ignore_ascii_case(name));
                assert_eq!(
                    lookup_index(name),
                    want,
                    "{}",
                    String::from_utf8_lossy(name)
                );
            }
        }
        let long = b"a-command-name-longer-than-sixteen";
        assert_eq!(lookup_index(long), None);
        assert_eq!(lookup_index(&long[..16]), None);
        // Any length a client can send, on a thread that remembers nothing yet (a review
        // found the empty memory's length, 255, taken for a remembered one).
        for len in [255, 256, 17, 1000] {
            let name = vec![b'x'; len];
            std::thread::spawn(move || assert_eq!(lookup_index(&name), None))
                .join()
                .unwrap();
        }
    }

    /// Two names of at most 16 bytes have the same key only if they are the same bytes:
    /// every length, a difference in each position, and every table name against every
    /// other (in every case spelling a client may use).
    #[test]
    fn name_keys_tell_names_apart() {
        for n in 0..=16usize {
            let base: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
            let key = NameKey::of(&base).expect("16 bytes or fewer");
            assert_eq!(NameKey::of(&base), Some(key));
            for at in 0..n {
                let mut other = base.clone();
                other[at] ^= 0x20;
                assert_ne!(NameKey::of(&other), Some(key), "{n} bytes, byte {at}");
            }
            // A zero byte is not padding: longer by a zero differs.
            let mut longer = base.clone();
            longer.push(0);
            assert_ne!(NameKey::of(&longer), Some(key));
        }
        assert_eq!(NameKey::of(&[b'x'; 17]), None);
        let names: Vec<Vec<u8>> = TABLE
            .iter()
            .chain(INTERNAL)
            .flat_map(|c| {
                [
                    c.name.as_bytes().to_vec(),
                    c.name.to_ascii_uppercase().into_bytes(),
                ]
            })
            .filter(|n| n.len() <= 16)
            .collect();
        let mut keys = std::collections::HashMap::new();
        for name in &names {
            if let Some(seen) = keys.insert(NameKey::of(name), name) {
                assert_eq!(seen, name, "two names, one key");
            }
        }
    }

    #[test]
    fn key_positions_follow_each_rows_key_spec() {
        let args = |argc: usize| -> Vec<Bytes> { vec![Bytes::from_static(b"x"); argc] };
        let at = |name: &str, argc: usize| -> Vec<usize> {
            lookup(name.as_bytes())
                .unwrap()
                .key_positions(&args(argc))
                .collect()
        };
        let counted = |line: &str| -> Vec<usize> {
            let args: Vec<Bytes> = line
                .split(' ')
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect();
            lookup(&args[0]).unwrap().key_positions(&args).collect()
        };
        assert_eq!(counted("zunionstore d 2 a b WEIGHTS 1 2"), [1, 3, 4]);
        assert_eq!(counted("zunion 2 a b"), [2, 3]);
        assert_eq!(
            counted("zunion 3 a b"),
            Vec::<usize>::new(),
            "a count past the end"
        );
        assert_eq!(counted("zunion 0 a b"), Vec::<usize>::new());
        assert_eq!(counted("zunion x a b"), Vec::<usize>::new());
        assert_eq!(counted("lmpop 1 a LEFT"), [2]);
        assert_eq!(at("get", 2), [1]);
        assert_eq!(at("get", 1), Vec::<usize>::new());
        assert_eq!(at("mset", 5), [1, 3]);
        assert_eq!(at("del", 4), [1, 2, 3]);
        assert_eq!(at("copy", 4), [1, 2]);
        assert_eq!(at("ping", 3), Vec::<usize>::new());
        assert_eq!(at("object", 3), [2]);
        assert_eq!(
            at("object", 2),
            Vec::<usize>::new(),
            "OBJECT HELP names no key"
        );
        for spec in TABLE {
            for argc in 0..8 {
                assert!(
                    spec.key_positions(&args(argc)).all(|i| i < argc && i > 0),
                    "{}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn reply_budget_stops_at_the_first_item_that_does_not_fit() {
        let total = 1000 + 2 * ITEM_OVERHEAD;
        let mut b = ReplyBudget::new(total as u64);
        assert!(b.charge(600));
        assert!(b.charge(400));
        assert!(!b.exceeded());
        assert!(!b.charge(0));
        assert!(b.exceeded());
        assert!(!b.charge(0), "once exceeded, always exceeded");
        let mut unlimited = ReplyBudget::new(0);
        assert!(unlimited.charge(usize::MAX - ITEM_OVERHEAD));
    }

    #[test]
    fn table_is_consistent() {
        let mut names = std::collections::HashSet::new();
        for c in TABLE {
            assert!(names.insert(c.name), "duplicate {}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.arity != 0);
            assert!(lookup(c.name.to_ascii_uppercase().as_bytes()).is_some());
        }
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'x'; 100]).is_none());
    }

    #[test]
    fn unknown_command_text_matches_redis() {
        let args: Vec<Bytes> = vec!["foo".into(), "a".into(), "b".into()];
        assert_eq!(
            unknown_command(&args),
            Reply::error("ERR unknown command 'foo', with args beginning with: 'a' 'b' ")
        );
        let args: Vec<Bytes> = vec!["foo".into()];
        assert_eq!(
            unknown_command(&args),
            Reply::error("ERR unknown command 'foo', with args beginning with: ")
        );
    }
}
