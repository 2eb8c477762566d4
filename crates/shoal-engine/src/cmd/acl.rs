//! ACL users on the command table: the catalog of command ids and categories the ACL rules
//! name, what each command needs of its keys and channels, the check every command passes
//! ([`refusal`]), authentication, and the ACL command (CAT, DELUSER, DRYRUN, GENPASS,
//! GETUSER, LIST, LOAD, LOG, SAVE, SETUSER, USERS, WHOAMI, HELP). The rules themselves are
//! in `crate::acl`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use shoal_resp::Reply;

use super::{
    acl_categories, err, flag, is, lookup_index, parse_i64, spec_at, CommandSpec, Ctx, Session,
    TABLE,
};
use crate::acl::{self, Catalog, Denied, KeyNeeds, LogEntry, LogReason, Registry, Request, User};
use crate::client::ClientInfo;
use crate::Engine;

/// The node's users: built on first use from the command table, `requirepass` and the
/// configuration's `user` entries (see [`build`]).
pub fn registry(node: &Engine) -> &Registry {
    node.acl.get_or_init(|| {
        let settings = node.settings();
        let (registry, problem) = build(&settings.requirepass, &settings.user, &settings.aclfile);
        if let Some(why) = problem {
            tracing::warn!("{why}");
        }
        registry
    })
}

/// A registry with the default user's password set from `requirepass` and the users of
/// the configuration (each `<name> <rule> ...`, as after Redis's `user` directive), and
/// what was wrong with the first entry refused (left out). As in Redis, `requirepass`
/// comes first and a `default` entry starts from `reset` (so it decides alone), and a
/// user may be declared once. With an ACL file (`aclfile`), its users instead.
pub fn build(requirepass: &str, users: &[String], aclfile: &str) -> (Registry, Option<String>) {
    let registry = Registry::new(catalog());
    if !requirepass.is_empty() {
        registry.set_requirepass(requirepass);
    }
    if !aclfile.is_empty() {
        let problem = load_file(&registry, aclfile).err();
        return (registry, problem);
    }
    let mut problem = None;
    let mut seen = std::collections::HashSet::new();
    for line in users {
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        let Some((name, rules)) = words.split_first() else {
            continue;
        };
        let applied = if !seen.insert(*name) {
            Err("Duplicate user found. A user can only be defined once in config files".into())
        } else {
            acl::merge_selector_args(rules)
                .map_err(|open| {
                    format!(
                        "Unmatched parenthesis in acl selector starting at '{}'.",
                        text(&open)
                    )
                })
                .and_then(|mut rules| {
                    if *name == "default" {
                        rules.insert(0, b"reset".to_vec());
                    }
                    registry
                        .set_user(name.as_bytes(), &rules)
                        .map_err(|(rule, why)| format!("Error in user declaration '{rule}': {why}"))
                })
        };
        if let Err(why) = applied {
            problem.get_or_insert(format!("user '{name}': {why}"));
        }
    }
    (registry, problem)
}

/// Replaces the users with those of the ACL file `path`, all or nothing; the error says why
/// not (every line's problem).
fn load_file(registry: &Registry, path: &str) -> Result<BTreeMap<Vec<u8>, Arc<User>>, String> {
    let text = std::fs::read(path).map_err(|e| {
        // Redis's `strerror` text, without Rust's "(os error n)".
        let why = e.to_string();
        let why = why
            .split(" (os error")
            .next()
            .unwrap_or_default()
            .to_string();
        format!("Error loading ACLs, opening file '{path}': {why}")
    })?;
    let users = acl::parse_file(&text, path, registry.catalog()).map_err(|errors| {
        format!("{errors}WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
    })?;
    Ok(registry.replace_all(users))
}

/// Writes every user to the ACL file `path` (a temporary file beside it, renamed over it,
/// so a reader never sees half of it).
fn save_file(registry: &Registry, path: &str) -> std::io::Result<()> {
    use std::io::Write;
    // One save at a time (each worker may run one).
    static SAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = SAVING.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&registry.file_text())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // The rename itself is durable once the folder is.
        let dir = std::path::Path::new(path)
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The catalog ACL rules are read against: every row clients see, each container's
/// subcommands after it, with Redis's categories.
fn catalog() -> Catalog {
    let mut c = Catalog::default();
    for spec in TABLE {
        let cats = bits(&acl_categories(spec));
        let subs: Vec<(&str, u32)> = spec
            .subcommands
            .iter()
            .map(|sub| (*sub, bits(&sub_categories(spec, sub))))
            .collect();
        c.add(spec.name, cats, &subs);
    }
    c
}

fn bits(cats: &[&str]) -> u32 {
    cats.iter()
        .filter_map(|c| acl::category_bit(c))
        .fold(0, |a, b| a | b)
}

/// The catalog id of each row of `TABLE` (a container's subcommands follow its id).
fn row_ids() -> &'static [usize] {
    static IDS: OnceLock<Vec<usize>> = OnceLock::new();
    IDS.get_or_init(|| {
        let mut next = 0;
        TABLE
            .iter()
            .map(|spec| {
                let id = next;
                next += 1 + spec.subcommands.len();
                id
            })
            .collect()
    })
}

/// Redis's categories of a container's subcommand (COMMAND INFO's for `config|get`): its
/// container's family, `admin` and `dangerous` for the administrative ones, `write` or
/// `read` for those that change or read keys, and `slow`.
pub fn sub_categories(container: &CommandSpec, sub: &str) -> Vec<&'static str> {
    let help = sub == "help";
    let family: &[&str] = match container.name {
        "client" | "command" => &["connection"],
        "script" | "function" => &["scripting"],
        "object" => &["keyspace"],
        "xinfo" | "xgroup" => &["stream"],
        "pubsub" if !help => &["pubsub"],
        _ => &[],
    };
    let admin = !help
        && match container.name {
            "acl" => !matches!(sub, "cat" | "genpass" | "whoami"),
            "client" => matches!(
                sub,
                "pause" | "kill" | "unblock" | "unpause" | "list" | "no-evict"
            ),
            "cluster" => matches!(
                sub,
                "set-config-epoch"
                    | "delslotsrange"
                    | "forget"
                    | "saveconfig"
                    | "failover"
                    | "addslotsrange"
                    | "reset"
                    | "replicas"
                    | "slaves"
                    | "flushslots"
                    | "delslots"
                    | "addslots"
                    | "meet"
                    | "setslot"
                    | "bumpepoch"
                    | "replicate"
                    | "count-failure-reports"
            ),
            "config" | "latency" | "module" | "slowlog" => true,
            _ => false,
        };
    let write = !help
        && match container.name {
            "function" => matches!(sub, "restore" | "delete" | "flush" | "load"),
            "xgroup" => true,
            _ => false,
        };
    let read = !help
        && (matches!(container.name, "object" | "xinfo")
            || (container.name == "memory" && sub == "usage"));
    acl::CATEGORIES
        .into_iter()
        .filter(|cat| {
            family.contains(cat)
                || (*cat == "admin" || *cat == "dangerous") && admin
                || *cat == "write" && write
                || *cat == "read" && read
                || *cat == "slow"
        })
        .collect()
}

/// What a command needs of each of its keys, from Redis 7's key specifications: reads
/// need `%R`, changes `%W`, both a pattern with both; a few commands touch a key without
/// reading its value (EXISTS, TYPE, ...), where any pattern will do.
fn key_needs(spec: &CommandSpec, sub: Option<&str>, args: &[Bytes], nth: usize) -> KeyNeeds {
    const R: KeyNeeds = KeyNeeds::READ;
    const W: KeyNeeds = KeyNeeds::WRITE;
    const RW: KeyNeeds = KeyNeeds::BOTH;
    const NONE: KeyNeeds = KeyNeeds::NONE;
    let name = spec.name;
    match (name, sub) {
        ("object", _) | ("memory", _) => return NONE,
        ("xgroup", _) => return W,
        ("xinfo", _) => return R,
        // Redis 7's key spec: RO ACCESS (the group's state is not the key's value).
        ("xreadgroup", _) => return R,
        _ => {}
    }
    match name {
        "exists" | "hexists" | "hlen" | "hstrlen" | "llen" | "scard" | "sismember" | "strlen"
        | "touch" | "type" | "watch" | "xlen" | "zcard" => NONE,
        "append" | "del" | "expire" | "expireat" | "geoadd" | "hdel" | "hmset" | "hset"
        | "hsetnx" | "linsert" | "lpush" | "lpushx" | "lrem" | "lset" | "ltrim" | "mset"
        | "msetnx" | "persist" | "pexpire" | "pexpireat" | "pfadd" | "psetex" | "restore"
        | "rpush" | "rpushx" | "sadd" | "setex" | "setnx" | "setrange" | "srem" | "unlink"
        | "xack" | "xadd" | "xautoclaim" | "xclaim" | "xdel" | "xsetid" | "xtrim" | "zadd"
        | "zrem" | "zremrangebylex" | "zremrangebyrank" | "zremrangebyscore" => W,
        // The destination first, the sources after it.
        "bitop" | "geosearchstore" | "sdiffstore" | "sinterstore" | "sunionstore"
        | "zdiffstore" | "zinterstore" | "zrangestore" | "zunionstore" => {
            if nth == 0 {
                W
            } else {
                R
            }
        }
        // A source that loses an element, then the destination.
        "blmove" | "brpoplpush" | "lmove" | "rename" | "renamenx" | "rpoplpush" | "smove" => {
            if nth == 0 {
                RW
            } else {
                W
            }
        }
        "copy" | "sort" | "georadius" | "georadiusbymember" => {
            if nth == 0 {
                R
            } else {
                W
            }
        }
        "pfmerge" => {
            if nth == 0 {
                RW
            } else {
                R
            }
        }
        // SET reads the old value only with GET.
        "set" => {
            if args.iter().skip(3).any(|a| is(a, "GET")) {
                RW
            } else {
                W
            }
        }
        "bitfield" => {
            if args.iter().skip(2).any(|a| is(a, "SET") || is(a, "INCRBY")) {
                RW
            } else {
                R
            }
        }
        _ if spec.flags & flag::WRITE != 0 || spec.flags & flag::RUNS_WRITES != 0 => RW,
        _ => R,
    }
}

/// The keys a command writes that its row's key positions leave out, found by reading its
/// options (Redis's `sortGetKeys`, `georadiusGetKeys`): SORT's STORE, GEORADIUS's STORE and
/// STOREDIST. They come after the row's keys (see [`key_needs`]: written).
fn option_keys(spec: &CommandSpec, args: &[Bytes]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = match spec.name {
        "sort" => 2,
        "georadius" => 6,
        "georadiusbymember" => 5,
        _ => return out,
    };
    while i < args.len() {
        let a = &args[i];
        if (is(a, "STORE") || (spec.name != "sort" && is(a, "STOREDIST"))) && i + 1 < args.len() {
            out.push(i + 1);
            i += 2;
        } else if spec.name == "sort" && is(a, "LIMIT") {
            i += 3;
        } else if (spec.name == "sort" && (is(a, "BY") || is(a, "GET"))) || is(a, "COUNT") {
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// SORT's BY and GET patterns read keys the command does not name: only a user that may
/// read every key may use them (Redis's rule, checked where the client is connected).
fn sort_patterns_refused(
    user: &User,
    index: usize,
    spec: &CommandSpec,
    args: &[Bytes],
) -> Option<Reply> {
    if !matches!(spec.name, "sort" | "sort_ro") || user.is_open() {
        return None;
    }
    let mut i = 2;
    while i + 1 < args.len() {
        let a = &args[i];
        let refused = if is(a, "BY") && args[i + 1].contains(&b'*') {
            Some("ERR BY option of SORT denied due to insufficient ACL permissions.")
        } else if is(a, "GET") {
            Some("ERR GET option of SORT denied due to insufficient ACL permissions.")
        } else {
            None
        };
        if let Some(e) = refused {
            if !with_request(user, index, spec, args, |request, _| {
                user.reads_every_key(request)
            }) {
                return Some(err(e));
            }
        }
        i += if is(a, "LIMIT") {
            3
        } else if is(a, "BY") || is(a, "GET") || is(a, "STORE") {
            2
        } else {
            1
        };
    }
    None
}

/// The channels a command names, with whether each is a pattern that must be allowed as
/// it is (PSUBSCRIBE).
fn channels<'a>(spec: &CommandSpec, args: &'a [Bytes]) -> Vec<(usize, bool, &'a [u8])> {
    match spec.name {
        "publish" | "spublish" => args
            .get(1)
            .map(|c| (1, false, &c[..]))
            .into_iter()
            .collect(),
        "subscribe" | "ssubscribe" => (1..args.len()).map(|i| (i, false, &args[i][..])).collect(),
        "psubscribe" => (1..args.len()).map(|i| (i, true, &args[i][..])).collect(),
        _ => Vec::new(),
    }
}

/// Why a check refused a command, in the words of the ACL LOG and ACL DRYRUN.
struct Refusal {
    reason: LogReason,
    /// The command's full name, the key or the channel.
    object: String,
}

/// Checks `args` (a known command of row `spec`, index `index` in the table) against
/// `user`.
fn check(user: &User, index: usize, spec: &CommandSpec, args: &[Bytes]) -> Result<(), Refusal> {
    // AUTH, HELLO, QUIT and RESET run for every user.
    if user.is_open() || index >= TABLE.len() || spec.flags & flag::NOAUTH != 0 {
        return Ok(());
    }
    // A key of database 0 spelled as another database's stored key (`FF DB 00 n ...`, see
    // `shoal_store::stored_key`) would reach that database, which the user may not be
    // allowed to select: refused.
    let disguised = spec
        .key_positions(args)
        .chain(option_keys(spec, args))
        .find(|&at| shoal_store::split_key(&args[at]).0 != 0);
    with_request(user, index, spec, args, |request, sub| {
        let verdict = match disguised {
            Some(at) => Err(Denied::Key(at)),
            None => user.check(request),
        };
        verdict.map_err(|denied| match denied {
            Denied::Command => Refusal {
                reason: LogReason::Command,
                object: match sub {
                    Some(sub) => format!("{}|{sub}", spec.name),
                    None => spec.name.to_string(),
                },
            },
            Denied::Key(at) => Refusal {
                reason: LogReason::Key,
                object: String::from_utf8_lossy(&args[at]).into_owned(),
            },
            Denied::Channel(at) => Refusal {
                reason: LogReason::Channel,
                object: String::from_utf8_lossy(&args[at]).into_owned(),
            },
        })
    })
}

/// Calls `f` with what `args` (a command of row `spec` at `index`) asks of the ACL, and
/// its subcommand's name.
///
/// Only what the user's rules look at is gathered (a user of `~*` and `&*` has its keys and
/// channels checked by no rule).
fn with_request<T>(
    user: &User,
    index: usize,
    spec: &CommandSpec,
    args: &[Bytes],
    f: impl FnOnce(&Request<'_>, Option<&str>) -> T,
) -> T {
    let sub_at = if spec.subcommands.is_empty() {
        None
    } else {
        args.get(1).and_then(|a| {
            spec.subcommands
                .iter()
                .position(|s| a.eq_ignore_ascii_case(s.as_bytes()))
        })
    };
    let id = row_ids()[index] + sub_at.map_or(0, |i| i + 1);
    let sub = sub_at.map(|i| spec.subcommands[i]);
    let keys: Vec<(usize, KeyNeeds, &[u8])> = if user.checks_keys() {
        spec.key_positions(args)
            .chain(option_keys(spec, args))
            .enumerate()
            .map(|(nth, at)| (at, key_needs(spec, sub, args, nth), &args[at][..]))
            .collect()
    } else {
        Vec::new()
    };
    let channels = if user.checks_channels() {
        channels(spec, args)
    } else {
        Vec::new()
    };
    let request = Request {
        id,
        first_arg: if spec.subcommands.is_empty() {
            args.get(1).map(|a| &a[..])
        } else {
            None
        },
        keys: &keys,
        channels: &channels,
    };
    f(&request, sub)
}

/// Reads the session's user again when the users changed since (one atomic load when
/// they did not). The callers borrow it, never clone it: the user is shared by every
/// connection of every worker, and a reference count per command would bounce its cache
/// line between them.
fn refresh_user(node: &Engine, session: &mut Session) {
    let Some(user) = session.user.as_ref() else {
        return;
    };
    let registry = registry(node);
    let epoch = registry.epoch();
    if session.acl_epoch != epoch {
        session.acl_epoch = epoch;
        match registry.user(&user.name) {
            Some(fresh) => session.user = Some(fresh),
            // Deleted (ACL DELUSER closes its connections; this one raced it): the
            // connection ends after this command, checked as the user was.
            None => session.close = true,
        }
    }
}

/// The error a command refused by the ACL gets, after it was logged; `None` when the
/// session's user may run it. `context` is the ACL LOG's (`toplevel`, `multi`, `lua`).
pub fn refusal(
    node: &Engine,
    session: &mut Session,
    index: usize,
    spec: &CommandSpec,
    args: &[Bytes],
    context: &'static str,
) -> Option<Reply> {
    refresh_user(node, session);
    let user = session.user.as_deref().filter(|u| !u.is_open())?;
    let refused = match check(user, index, spec, args) {
        Ok(()) => return sort_patterns_refused(user, index, spec, args),
        Err(refused) => refused,
    };
    // Redis answers a container's unknown subcommand before the ACL (nothing logged):
    // redis-py 8 sends `CLIENT MAINT_NOTIFICATIONS` on each RESP3 connection.
    if refused.reason == LogReason::Command
        && super::is_container(spec)
        && !super::names_subcommand(spec.subcommands, args)
    {
        return Some(super::unknown_subcommand(spec.name, &args[1]));
    }
    log(
        node,
        session,
        &user.name,
        refused.reason,
        context,
        refused.object.clone(),
    );
    Some(Reply::error(match refused.reason {
        LogReason::Command => format!(
            "NOPERM User {} has no permissions to run the '{}' command",
            String::from_utf8_lossy(&user.name),
            refused.object
        ),
        LogReason::Key => "NOPERM No permissions to access a key".into(),
        _ => "NOPERM No permissions to access a channel".into(),
    }))
}

fn log(
    node: &Engine,
    session: &Session,
    user: &[u8],
    reason: LogReason,
    context: &'static str,
    object: String,
) {
    let now = crate::clock::now_ms();
    let entry = LogEntry {
        count: 1,
        reason,
        context,
        object,
        username: String::from_utf8_lossy(user).into_owned(),
        client_info: super::describe_client(node, &session.info, now),
        entry_id: 0,
        created_ms: now,
        updated_ms: now,
    };
    let max_len = node.with_settings(|s| usize::try_from(s.acllog_max_len).unwrap_or(usize::MAX));
    let registry = registry(node);
    registry.note_denied(reason);
    registry
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .add(entry, now, max_len);
}

/// The error of a command a script's caller may not run (`redis.call`), after it was
/// logged (context `lua`); `None` when it may.
pub fn script_refusal(node: &Engine, session: &mut Session, args: &[Bytes]) -> Option<String> {
    match refusal_of(node, session, args, "lua")? {
        Reply::Error(e) => Some(format!(
            "ERR ACL failure in script: {}",
            e.strip_prefix("NOPERM ").unwrap_or(&e)
        )),
        _ => None,
    }
}

/// `redis.acl_check_cmd`: whether the session's user may run `args` (nothing logged), or
/// `None` for a command this node does not know (nor a container's subcommand).
pub fn may_run(node: &Engine, session: &mut Session, args: &[Bytes]) -> Option<bool> {
    let index = lookup_index(&args[0]).filter(|&i| i < TABLE.len())?;
    let spec = spec_at(index)?;
    if !spec.subcommands.is_empty() && args.len() > 1 {
        let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        spec.subcommands.iter().find(|s| **s == sub)?;
    }
    refresh_user(node, session);
    match session.user.as_deref().filter(|u| !u.is_open()) {
        Some(user) => Some(check(user, index, spec, args).is_ok()),
        None => Some(true),
    }
}

/// The reply of a queued command EXEC may no longer run (the users changed since it was
/// queued), after it was logged (context `multi`); `None` when it may run.
pub fn exec_refusal(node: &Engine, session: &mut Session, args: &[Bytes]) -> Option<Reply> {
    let index = lookup_index(&args[0]).filter(|&i| i < TABLE.len())?;
    let spec = spec_at(index)?;
    refresh_user(node, session);
    let user = session.user.as_deref().filter(|u| !u.is_open())?;
    let refused = match check(user, index, spec, args) {
        // SORT's BY and GET patterns are checked when it runs, as in Redis.
        Ok(()) => return sort_patterns_refused(user, index, spec, args),
        Err(refused) => refused,
    };
    let why = match refused.reason {
        LogReason::Command => "no permission to execute the command or subcommand",
        LogReason::Key => "no permission to touch the specified keys",
        _ => "no permission to access one of the channels used as arguments",
    };
    log(
        node,
        session,
        &user.name,
        refused.reason,
        "multi",
        refused.object,
    );
    Some(Reply::error(format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {why}")))
}

/// A blocked command's check when it is tried again (Redis 7.2 checks it each time it
/// wakes), against its user as the users are now; logged and counted as a refusal.
pub fn recheck(node: &Engine, session: &mut Session, args: &[Bytes]) -> Option<Reply> {
    refusal_of(node, session, args, "toplevel")
}

/// [`refusal`] for `args` as they are (a command clients may send, looked up by name).
fn refusal_of(
    node: &Engine,
    session: &mut Session,
    args: &[Bytes],
    context: &'static str,
) -> Option<Reply> {
    let index = lookup_index(&args[0]).filter(|&i| i < TABLE.len())?;
    refusal(node, session, index, spec_at(index)?, args, context)
}

/// What a script (EVAL, EVALSHA, FCALL and their _RO forms) is sent to another node as
/// when the session's user has restrictions, so that its `redis.call`s are checked there
/// against that user: `acl.script <user> <command> ...` (`acl.script_ro` for a read-only
/// one, so it may go where the command could), see [`as_user`]. `None` for any other
/// command or user.
pub fn runs_as(session: &Session, spec: &CommandSpec, args: &[Bytes]) -> Option<Vec<Bytes>> {
    let user = session.user.as_ref().filter(|u| !u.is_open())?;
    if !spec.acl.contains(&"scripting") || !spec.subcommands.is_empty() {
        return None;
    }
    let row: &'static [u8] = if spec.flags & flag::READONLY != 0 {
        b"acl.script_ro"
    } else {
        b"acl.script"
    };
    let head = [Bytes::from_static(row), Bytes::copy_from_slice(&user.name)];
    Some(head.into_iter().chain(args.iter().cloned()).collect())
}

/// `acl.script <user> <command> ...` (internal: sent by the node the client is on, see
/// [`runs_as`]): runs the command as `user`, whose ACL the script's calls are checked
/// against, as on the client's node.
pub fn as_user(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let registry = registry(ctx.engine);
    let epoch = registry.epoch();
    let Some(user) = registry.user(&args[1]) else {
        let text = format!(
            "NOPERM User {} does not exist on this node (a node that started may not have copied it yet)",
            text(&args[1])
        );
        // The client's error (this row's own are not counted: see `cmd::run`).
        ctx.engine.commands.error(&text);
        return Reply::error(text);
    };
    let before = ctx.session.user.replace(user);
    let before_epoch = std::mem::replace(&mut ctx.session.acl_epoch, epoch);
    let reply = super::execute(ctx.host, ctx.session, &args[2..], ctx.now_ms);
    ctx.session.user = before;
    ctx.session.acl_epoch = before_epoch;
    reply
}

/// `acl.copy` (internal): this node's users for a node that starts (`cluster::copies`),
/// as an ACL file holds them; `LOADING` while this node is copying them itself.
pub fn copy(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let registry = registry(ctx.engine);
    if registry.copying() {
        return err("LOADING this node is copying its users");
    }
    Reply::Bulk(Bytes::from(registry.copy_text()))
}

/// `acl.adopt <text>` (internal): ends this node's copy of another member's users with
/// that member's `acl.copy` text; the users this node knows already, or that changed here
/// since the copy began, stay as they are ([`acl::Registry::adopt`]). A user this node
/// cannot read (a rule of a later release) is left out, and logged; the others are taken.
/// The number adopted.
pub fn adopt(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let registry = registry(ctx.engine);
    let mut users = Vec::new();
    for line in args[1].split(|&b| b == b'\n') {
        match acl::parse_file(line, "copy", registry.catalog()) {
            Ok(read) => users.extend(read),
            Err(e) => tracing::warn!(error = %e, "a copied ACL user was left out"),
        }
    }
    Reply::Int(registry.adopt(users).len() as i64)
}

/// `acl.follow <user> <n> <n client rules> <whole rules>` (internal): another node's ACL
/// SETUSER, run here as the client's rules when this node has the user, else as the whole
/// user that node has (from `reset`, [`rules`]), so a node that lacked the user does not
/// make it from a few rules alone. Answers as ACL SETUSER.
pub fn follow(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let n = super::parse_i64(&args[2])
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| 3 + n <= args.len());
    let Some(n) = n else {
        return err("ERR bad acl.follow from another node");
    };
    let (client, whole) = args[3..].split_at(n);
    let rules = if registry(ctx.engine).user(&args[1]).is_some() {
        client
    } else {
        whole
    };
    let setuser = [
        Bytes::from_static(b"ACL"),
        Bytes::from_static(b"SETUSER"),
        args[1].clone(),
    ];
    let command: Vec<Bytes> = setuser.into_iter().chain(rules.iter().cloned()).collect();
    acl(ctx, &command)
}

/// `acl.rules <user>` (internal): the SETUSER rules that make the user from `reset` as it
/// is here, or nil. After an ACL SETUSER here, the other members apply them instead of the
/// client's rules (`router::fanout`), so a member that lacked the user, or had it
/// otherwise, agrees with this node.
pub fn rules(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    match registry(ctx.engine).user(&args[1]) {
        Some(u) => Reply::Array(
            u.rules()
                .into_iter()
                .map(|r| Reply::Bulk(Bytes::from(r)))
                .collect(),
        ),
        None => Reply::Nil,
    }
}

/// Whether a new connection must authenticate: the default user has a password or is
/// off.
pub fn requires_auth(node: &Engine) -> bool {
    let default = registry(node).default_user();
    !(default.enabled && default.nopass)
}

/// Logs `session` in as `name` if `pass` is right (AUTH, HELLO AUTH); a failure is
/// logged in the ACL LOG under `command`'s name as the client sent it.
pub fn authenticate(
    node: &Engine,
    session: &mut Session,
    name: &[u8],
    pass: &[u8],
    command: &[u8],
) -> bool {
    let registry = registry(node);
    // The epoch before the user is read: a change in between makes the next command read
    // the user again.
    let epoch = registry.epoch();
    match registry.authenticate(name, pass) {
        Some(user) => {
            session.acl_epoch = epoch;
            *session.info.user.lock().unwrap_or_else(|e| e.into_inner()) =
                Bytes::copy_from_slice(&user.name);
            session.user = Some(user);
            session.authenticated = true;
            true
        }
        None => {
            let context = if session.multi.is_some() {
                "multi"
            } else {
                "toplevel"
            };
            log(node, session, name, LogReason::Auth, context, text(command));
            false
        }
    }
}

/// Whether a Memcached connection must log in: unless the default user is on, has no
/// password and may do everything (Memcached's commands are not checked one by one).
pub fn memcache_requires_auth(node: &Engine) -> bool {
    !registry(node).default_user().lets_anyone_in()
}

/// Whether a Memcached connection may go on after the users changed (one atomic load when
/// they did not): its user (`default` unless it logged in as another) must still exist
/// and allow everything.
pub fn memcache_still_allowed(node: &Engine, session: &mut Session) -> bool {
    let registry = registry(node);
    let epoch = registry.epoch();
    if session.acl_epoch == epoch {
        return true;
    }
    session.acl_epoch = epoch;
    let name = session
        .info
        .user
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    registry.user(&name).is_some_and(|u| u.is_open())
}

/// Checks a user/password pair for a front end whose commands are not checked one by one
/// (Memcached's): only a user allowed every command, key and channel logs in there.
fn check_password(node: &Engine, name: &[u8], pass: &[u8]) -> bool {
    registry(node)
        .authenticate(name, pass)
        .is_some_and(|u| u.is_open())
}

/// The user a Memcached login (memcached's text login or SASL PLAIN) logs in as, when its
/// password is right and that user may use the port ([`check_password`]): the user it
/// names, or `default` for a name Shoal has no user of. memcached's clients are set up
/// with a SASL user of their own; its password is then `requirepass`, as Redis's AUTH with
/// the password alone logs in as `default` (nobody gets in who could not so).
pub fn memcache_login(node: &Engine, name: &[u8], pass: &[u8]) -> Option<Bytes> {
    let known = registry(node).user(name).is_some();
    let name: &[u8] = if known { name } else { b"default" };
    check_password(node, name, pass).then(|| Bytes::copy_from_slice(name))
}

/// The user a new client connection starts as (and RESET goes back to): `default`.
pub fn start_session(node: &Engine, session: &mut Session) {
    let registry = registry(node);
    session.acl_epoch = registry.epoch();
    session.user = Some(registry.default_user());
    *session.info.user.lock().unwrap_or_else(|e| e.into_inner()) = Bytes::from_static(b"default");
}

// ---- the ACL command -------------------------------------------------------------------

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Print this help.",
];

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// ACL CAT | DELUSER | DRYRUN | GENPASS | GETUSER | LIST | LOAD | LOG | SAVE | SETUSER |
/// USERS | WHOAMI | HELP.
pub fn acl(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    let n = args.len();
    // Each subcommand's arity, as Redis's table has it (counting ACL and the subcommand).
    let arity: i32 = match &sub[..] {
        b"cat" | b"genpass" | b"log" => -2,
        b"deluser" | b"setuser" => -3,
        b"dryrun" => -4,
        b"getuser" => 3,
        b"list" | b"load" | b"save" | b"users" | b"whoami" | b"help" => 2,
        _ => 0,
    };
    if (arity > 0 && n != arity as usize) || (arity < 0 && n < arity.unsigned_abs() as usize) {
        return super::wrong_arity(&format!("acl|{}", text(&sub)));
    }
    let registry = registry(ctx.engine);
    match (&sub[..], n) {
        (b"cat", 2) => Reply::Array(acl::CATEGORIES.iter().map(|c| Reply::bulk(*c)).collect()),
        (b"cat", 3) => {
            let name = text(&args[2]);
            match acl::category_bit(&name) {
                Some(bit) => Reply::Array(
                    registry
                        .catalog()
                        .in_category(bit)
                        .map(|n| Reply::bulk(n.to_string()))
                        .collect(),
                ),
                None => Reply::error(format!(
                    "ERR Unknown category '{}'",
                    text(&args[2][..args[2].len().min(128)])
                )),
            }
        }
        (b"deluser", 3..) => {
            if args[2..].iter().any(|a| &a[..] == b"default") {
                return err("ERR The 'default' user cannot be removed");
            }
            let names: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
            let deleted = registry.delete(&names);
            // Their connections end, as in Redis.
            for name in &names {
                kill_clients_of(ctx, name, |_| true);
            }
            Reply::Int(deleted as i64)
        }
        (b"dryrun", 4..) => dryrun(registry, &args[2..]),
        (b"genpass", 2 | 3) => {
            let bits = match args.get(2) {
                None => 256,
                Some(a) => match parse_i64(a) {
                    Some(b @ 1..=4096) => b as usize,
                    Some(_) => return err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"),
                    None => return err(super::ERR_NOT_INTEGER),
                },
            };
            let mut random = vec![0u8; bits.div_ceil(8)];
            if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random)
                .is_err()
            {
                return err("ERR Failed to generate random bytes");
            }
            let mut hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
            hex.truncate(bits.div_ceil(4));
            Reply::bulk(hex)
        }
        (b"getuser", 3) => match registry.user(&args[2]) {
            Some(user) => getuser(&user),
            None => Reply::Nil,
        },
        (b"list", 2) => Reply::Array(
            registry
                .users()
                .iter()
                .map(|u| Reply::Bulk(Bytes::from(u.describe())))
                .collect(),
        ),
        (b"load" | b"save", 2) => {
            let path = ctx.engine.settings().aclfile;
            if path.is_empty() {
                return err(NO_ACL_FILE);
            }
            if &sub[..] == b"save" {
                return match save_file(registry, &path) {
                    Ok(()) => Reply::ok(),
                    Err(e) => {
                        tracing::warn!("ACL SAVE to {path}: {e}");
                        err("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
                    }
                };
            }
            match load_file(registry, &path) {
                Ok(before) => {
                    // The connections of users no longer there end, and the subscribers of
                    // users that lost channels, as in Redis.
                    for (name, old) in &before {
                        match registry.user(name) {
                            None => kill_clients_of(ctx, name, |_| true),
                            Some(new) if old.loses_channels(&new) => {
                                kill_clients_of(ctx, name, |c| c.is_subscriber())
                            }
                            Some(_) => {}
                        }
                    }
                    Reply::ok()
                }
                Err(why) => Reply::error(format!("ERR {why}")),
            }
        }
        (b"log", 2 | 3) => acl_log(registry, args.get(2)),
        (b"setuser", 3..) => {
            if args[2].iter().any(|&b| b == 0 || b.is_ascii_whitespace()) {
                return err("ERR Usernames can't contain spaces or null characters");
            }
            // Rules are bytes: a password may be any.
            let rules = match acl::merge_selector_args(&args[3..]) {
                Ok(rules) => rules,
                Err(open) => {
                    return Reply::error(format!(
                        "ERR Unmatched parenthesis in acl selector starting at '{}'.",
                        text(&open)
                    ))
                }
            };
            let before = registry.user(&args[2]);
            match registry.set_user(&args[2], &rules) {
                Ok(()) => {
                    // A user that lost channels loses its subscribed connections (Redis
                    // closes those whose subscriptions it no longer allows; Shoal, which
                    // does not see another connection's subscriptions, all of them).
                    let after = registry.user(&args[2]);
                    if let (Some(before), Some(after)) = (before, after) {
                        if before.loses_channels(&after) {
                            kill_clients_of(ctx, &args[2], |c| c.is_subscriber());
                        }
                    }
                    Reply::ok()
                }
                Err((rule, why)) => {
                    Reply::error(format!("ERR Error in ACL SETUSER modifier '{rule}': {why}"))
                }
            }
        }
        (b"users", 2) => Reply::Array(
            registry
                .users()
                .iter()
                .map(|u| Reply::Bulk(Bytes::copy_from_slice(&u.name)))
                .collect(),
        ),
        (b"whoami", 2) => {
            let name = ctx
                .session
                .user
                .as_ref()
                .map_or(Bytes::from_static(b"default"), |u| {
                    Bytes::copy_from_slice(&u.name)
                });
            Reply::Bulk(name)
        }
        (b"help", 2) => super::conn::help_reply(HELP),
        _ if arity != 0 => super::sub_syntax("ACL", &args[1]),
        _ => super::unknown_subcommand("acl", &args[1]),
    }
}

/// Closes the connections logged in as `user` that `which` picks; the caller's after its
/// reply, as Redis does.
fn kill_clients_of(ctx: &mut Ctx<'_>, user: &[u8], which: impl Fn(&ClientInfo) -> bool) {
    for client in ctx.engine.clients.all() {
        let theirs = client
            .user
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if theirs != user || !which(&client) {
            continue;
        }
        if client.id == ctx.session.info.id {
            ctx.session.close = true;
        } else {
            client.kill();
        }
    }
}

/// ACL DRYRUN user command [arg ...]: whether the user could run it, in words.
fn dryrun(registry: &Registry, args: &[Bytes]) -> Reply {
    let Some(user) = registry.user(&args[0]) else {
        return Reply::error(format!("ERR User '{}' not found", text(&args[0])));
    };
    let command = &args[1..];
    let Some((index, spec)) = lookup_index(&command[0])
        .filter(|&i| i < TABLE.len())
        .and_then(|i| Some((i, spec_at(i)?)))
    else {
        return Reply::error(format!("ERR Command '{}' not found", text(&command[0])));
    };
    // A container's unknown subcommand is not a command either.
    if super::is_container(spec) && !super::names_subcommand(spec.subcommands, command) {
        return Reply::error(format!("ERR Command '{}' not found", text(&command[0])));
    }
    if !spec.takes(command.len()) {
        return super::wrong_arity(spec.name);
    }
    let who = text(&user.name);
    match check(&user, index, spec, command) {
        Ok(()) => Reply::ok(),
        Err(r) => Reply::bulk(match r.reason {
            LogReason::Command => format!(
                "User {who} has no permissions to run the '{}' command",
                r.object
            ),
            LogReason::Key => format!(
                "User {who} has no permissions to access the '{}' key",
                r.object
            ),
            _ => format!(
                "User {who} has no permissions to access the '{}' channel",
                r.object
            ),
        }),
    }
}

fn getuser(user: &User) -> Reply {
    let s = |t: &str| Reply::bulk(t.to_string());
    let b = |t: Vec<u8>| Reply::Bulk(Bytes::from(t));
    let [commands, keys, channels] = user.root.texts();
    let selectors = user
        .selectors
        .iter()
        .map(|sel| {
            let [commands, keys, channels] = sel.texts();
            Reply::Map(vec![
                (s("commands"), b(commands)),
                (s("keys"), b(keys)),
                (s("channels"), b(channels)),
            ])
        })
        .collect();
    Reply::Map(vec![
        (
            s("flags"),
            Reply::Set(user.flags().into_iter().map(s).collect()),
        ),
        (
            s("passwords"),
            Reply::Array(user.password_hashes().iter().map(|h| s(h)).collect()),
        ),
        (s("commands"), b(commands)),
        (s("keys"), b(keys)),
        (s("channels"), b(channels)),
        (s("selectors"), Reply::Array(selectors)),
    ])
}

fn acl_log(registry: &Registry, arg: Option<&Bytes>) -> Reply {
    let count = match arg {
        None => 10,
        Some(a) if is(a, "RESET") => {
            registry
                .log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .reset();
            return Reply::ok();
        }
        // A negative count lists nothing, as in Redis.
        Some(a) => match parse_i64(a) {
            Some(n) => usize::try_from(n).unwrap_or(0),
            None => return err(super::ERR_NOT_INTEGER),
        },
    };
    let now = crate::clock::now_ms();
    let log = registry.log.lock().unwrap_or_else(|e| e.into_inner());
    let s = |t: &str| Reply::bulk(t.to_string());
    Reply::Array(
        log.newest(count)
            .map(|e| {
                Reply::Map(vec![
                    (s("count"), Reply::Int(e.count as i64)),
                    (s("reason"), s(e.reason.name())),
                    (s("context"), s(e.context)),
                    (s("object"), s(&e.object)),
                    (s("username"), s(&e.username)),
                    (
                        s("age-seconds"),
                        Reply::Double(now.saturating_sub(e.updated_ms) as f64 / 1000.0),
                    ),
                    (s("client-info"), s(&e.client_info)),
                    (s("entry-id"), Reply::Int(e.entry_id as i64)),
                    (s("timestamp-created"), Reply::Int(e.created_ms as i64)),
                    (s("timestamp-last-updated"), Reply::Int(e.updated_ms as i64)),
                ])
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::is_container;

    #[test]
    fn every_row_and_subcommand_has_an_id_in_table_order() {
        let c = catalog();
        for (i, spec) in TABLE.iter().enumerate() {
            assert_eq!(c.name(row_ids()[i]), spec.name);
            for (j, sub) in spec.subcommands.iter().enumerate() {
                assert_eq!(c.name(row_ids()[i] + 1 + j), format!("{}|{sub}", spec.name));
            }
        }
        assert!(is_container(
            TABLE.iter().find(|s| s.name == "acl").unwrap()
        ));
    }

    #[test]
    fn subcommands_take_redis_categories() {
        let config = TABLE.iter().find(|s| s.name == "config").unwrap();
        assert_eq!(
            sub_categories(config, "get"),
            vec!["admin", "slow", "dangerous"]
        );
        assert_eq!(sub_categories(config, "help"), vec!["slow"]);
        let object = TABLE.iter().find(|s| s.name == "object").unwrap();
        assert_eq!(
            sub_categories(object, "encoding"),
            vec!["keyspace", "read", "slow"]
        );
        assert_eq!(sub_categories(object, "help"), vec!["keyspace", "slow"]);
    }
}
