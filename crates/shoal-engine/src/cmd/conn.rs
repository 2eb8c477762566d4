//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use shoal_resp::{Protocol, Reply};

use super::{
    err, int_arg, is, parse_i64, tri, unknown_subcommand, wrong_arity, Ctx, ReplyMode, ERR_SYNTAX,
};
use crate::REDIS_VERSION;

pub fn ping(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if args.len() <= 2 && super::pubsub::in_subscribed_context(ctx.session) {
        return super::pubsub::subscribed_pong(args);
    }
    match args.len() {
        1 => Reply::Simple("PONG".into()),
        2 => Reply::Bulk(args[1].clone()),
        _ => wrong_arity("ping"),
    }
}

pub fn echo(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    Reply::Bulk(args[1].clone())
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

pub fn auth(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (user, pass): (&[u8], &[u8]) = match args.len() {
        2 => {
            if super::acl::registry(ctx.engine).default_user().nopass {
                return err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
            }
            (b"default", &args[1])
        }
        3 => (&args[1], &args[2]),
        _ => return err(ERR_SYNTAX),
    };
    if super::acl::authenticate(ctx.engine, ctx.session, user, pass, &args[0]) {
        Reply::ok()
    } else {
        err(WRONGPASS)
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

pub fn hello(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut proto = None;
    if let Some(v) = args.get(1) {
        match parse_i64(v) {
            Some(2) => proto = Some(Protocol::Resp2),
            Some(3) => proto = Some(Protocol::Resp3),
            Some(_) => return err("NOPROTO unsupported protocol version"),
            None => return err("ERR Protocol version is not an integer or out of range"),
        }
    }
    let mut name = None;
    let mut credentials = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - i - 1;
        if is(&args[i], "AUTH") && more >= 2 {
            // The last AUTH counts, as in Redis.
            credentials = Some((&args[i + 1], &args[i + 2]));
            i += 3;
        } else if is(&args[i], "SETNAME") && more >= 1 {
            if !valid_name(&args[i + 1]) {
                return err(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            name = Some(args[i + 1].clone());
            i += 2;
        } else {
            return Reply::error(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(&args[i])
            ));
        }
    }
    if let Some((user, pass)) = credentials {
        if !super::acl::authenticate(ctx.engine, ctx.session, user, pass, &args[0]) {
            return err(WRONGPASS);
        }
    }
    if !ctx.session.authenticated && super::acl::requires_auth(ctx.engine) {
        return err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    ctx.session.authenticated = true;
    if let Some(name) = name {
        *ctx.session
            .info
            .name
            .lock()
            .expect("client name lock poisoned") = Some(name).filter(|n| !n.is_empty());
    }
    if let Some(p) = proto {
        ctx.session.proto = p;
        let n = if p == Protocol::Resp3 { 3 } else { 2 };
        ctx.session.info.resp.store(n, Ordering::Relaxed);
        if p == Protocol::Resp3 {
            // Any RESP3 client may be a tracking redirect's target, as in Redis.
            let (engine, info) = (ctx.engine, ctx.session.info.clone());
            ctx.session
                .pubsub
                .get_or_insert_with(|| crate::pubsub::Subscriber::new(engine.pubsub.clone(), info))
                .as_target();
        }
    }
    let proto_num = if ctx.session.proto == Protocol::Resp3 {
        3
    } else {
        2
    };
    let s = |t: &'static str| Reply::bulk(t);
    Reply::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(REDIS_VERSION)),
        (s("proto"), Reply::Int(proto_num)),
        (s("id"), Reply::Int(ctx.session.info.id as i64)),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Reply::Array(vec![])),
    ])
}

pub fn quit(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    ctx.session.close = true;
    // Gone for the clients redirecting their invalidations here from now on, as Redis frees
    // the client right after the reply: a write another client sends after reading this OK
    // tells them `tracking-redir-broken` (the connection's own end comes in its own time).
    ctx.engine.tracker.client_gone(ctx.session.info.id);
    Reply::ok()
}

pub fn reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let s = &mut *ctx.session;
    s.proto = Protocol::Resp2;
    s.info.resp.store(2, Ordering::Relaxed);
    s.reply_mode = ReplyMode::On;
    s.authenticated = !super::acl::requires_auth(ctx.engine);
    if s.user.is_some() {
        super::acl::start_session(ctx.engine, s);
    }
    *s.info.name.lock().expect("client name lock poisoned") = None;
    s.info.no_evict.store(false, Ordering::Relaxed);
    s.info.no_touch.store(false, Ordering::Relaxed);
    s.multi = None;
    s.watched.clear();
    s.readonly = false;
    s.info
        .set_mode(crate::client::READONLY | crate::client::MONITOR, false);
    // Every subscription ends; messages that reached them before are still sent, before
    // the reply.
    if let Some(sub) = s.pubsub.as_mut() {
        sub.unsubscribe_all();
    }
    s.db = 0;
    s.info.db.store(0, Ordering::Relaxed);
    // Client-side caching ends too, as Redis's RESET disables tracking.
    publish_tracking(&s.info, None);
    if s.tracking.take().is_some() {
        ctx.engine.refresh_notes();
    }
    Reply::Simple("RESET".into())
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are: ID <id>, ADDR <ip:port>, LADDR <ip:port>,",
    "    TYPE (NORMAL|PUBSUB), USER default, SKIPME (YES|NO), MAXAGE <seconds>.",
    "LIST [options ...]",
    "    Return information about client connections. Options: TYPE (NORMAL|PUBSUB), ID <id> [...].",
    "NO-EVICT (ON|OFF)",
    "    Accepted for compatibility; Shoal never evicts clients.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Set client library name or version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "TRACKINGINFO",
    "    Return information about current client's tracking status.",
    "HELP",
    "    Print this help.",
];

pub fn help_reply(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::Simple((*l).into())).collect())
}

/// True for CLIENT REPLY ON|OFF|SKIP, which answers by the mode it sets rather than the
/// mode it found (the front end needs to know which).
pub fn sets_reply_mode(args: &[Bytes]) -> bool {
    args.len() == 3
        && args[0].eq_ignore_ascii_case(b"client")
        && args[1].eq_ignore_ascii_case(b"reply")
}

pub fn client(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    let arity = |ok: bool, name: &str| {
        if ok {
            None
        } else {
            Some(wrong_arity(&format!("client|{name}")))
        }
    };
    let info = ctx.session.info.clone();
    match &sub[..] {
        b"id" => arity(args.len() == 2, "id").unwrap_or(Reply::Int(info.id as i64)),
        b"getname" => arity(args.len() == 2, "getname").unwrap_or_else(|| {
            info.name
                .lock()
                .expect("client name lock poisoned")
                .clone()
                .map_or(Reply::Nil, Reply::Bulk)
        }),
        b"setname" => {
            if let Some(r) = arity(args.len() == 3, "setname") {
                return r;
            }
            if !valid_name(&args[2]) {
                return err(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            *info.name.lock().expect("client name lock poisoned") =
                Some(args[2].clone()).filter(|n| !n.is_empty());
            Reply::ok()
        }
        b"pause" => {
            if let Some(r) = arity(args.len() >= 3, "pause") {
                return r;
            }
            if args.len() > 4 {
                // Redis's row takes any count from 3; its handler refuses more than 4.
                return Reply::error(format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                    String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
                ));
            }
            let mode = match args.get(3) {
                None => crate::pause::Mode::All,
                Some(m) if is(m, "WRITE") => crate::pause::Mode::Write,
                Some(m) if is(m, "ALL") => crate::pause::Mode::All,
                Some(_) => return err("ERR CLIENT PAUSE mode must be WRITE or ALL"),
            };
            let ms = match parse_i64(&args[2]) {
                Some(n) if n < 0 => return err("ERR timeout is negative"),
                Some(n) => n as u64,
                None => return err("ERR timeout is not an integer or out of range"),
            };
            let now = crate::clock::now_ms();
            // No key expires or is evicted until it ends, as in Redis.
            let store = &ctx.engine.store;
            ctx.engine
                .pause
                .pause(mode, now.saturating_add(ms), now, |end| {
                    store.hold_expiry(end)
                });
            Reply::ok()
        }
        b"unpause" => {
            if let Some(r) = arity(args.len() == 2, "unpause") {
                return r;
            }
            let store = &ctx.engine.store;
            ctx.engine.pause.unpause(|end| store.hold_expiry(end));
            Reply::ok()
        }
        b"setinfo" => {
            if let Some(r) = arity(args.len() == 4, "setinfo") {
                return r;
            }
            let slot = if is(&args[2], "LIB-NAME") {
                &info.lib_name
            } else if is(&args[2], "LIB-VER") {
                &info.lib_ver
            } else {
                return Reply::error(format!(
                    "ERR Unrecognized option '{}'",
                    String::from_utf8_lossy(&args[2])
                ));
            };
            if !valid_name(&args[3]) {
                return Reply::error(format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    String::from_utf8_lossy(&args[2]).to_ascii_lowercase()
                ));
            }
            *slot.lock().expect("client lib lock poisoned") =
                Some(args[3].clone()).filter(|n| !n.is_empty());
            Reply::ok()
        }
        b"info" => arity(args.len() == 2, "info").unwrap_or_else(|| {
            Reply::Verbatim(
                format!(
                    "{}\n",
                    super::describe_client(ctx.engine, &info, ctx.now_ms)
                )
                .into(),
            )
        }),
        b"list" => client_list(ctx, args),
        b"kill" => client_kill(ctx, args),
        b"unblock" => {
            if let Some(r) = arity(matches!(args.len(), 3 | 4), "unblock") {
                return r;
            }
            let id = tri!(super::int_arg(&args[2]));
            let how = match args.get(3) {
                None => crate::client::UNBLOCK_TIMEOUT,
                Some(a) if is(a, "TIMEOUT") => crate::client::UNBLOCK_TIMEOUT,
                Some(a) if is(a, "ERROR") => crate::client::UNBLOCK_ERROR,
                Some(_) => return err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
            };
            let target = ctx
                .engine
                .clients
                .all()
                .into_iter()
                .find(|c| c.id as i64 == id && c.blocked.load(Ordering::Relaxed));
            let Some(target) = target else {
                return Reply::Int(0);
            };
            target.unblock.store(how, Ordering::Relaxed);
            Reply::Int(i64::from(ctx.engine.blocked.unblock(target.id)))
        }
        b"no-evict" | b"no-touch" => {
            let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
            if let Some(r) = arity(args.len() == 3, &sub) {
                return r;
            }
            let on = if is(&args[2], "ON") {
                true
            } else if is(&args[2], "OFF") {
                false
            } else {
                return err(ERR_SYNTAX);
            };
            let flag = if sub == "no-evict" {
                &info.no_evict
            } else {
                &info.no_touch
            };
            flag.store(on, Ordering::Relaxed);
            Reply::ok()
        }
        b"reply" => {
            if let Some(r) = arity(args.len() == 3, "reply") {
                return r;
            }
            ctx.session.reply_mode = if is(&args[2], "ON") {
                ReplyMode::On
            } else if is(&args[2], "OFF") {
                ReplyMode::Off
            } else if is(&args[2], "SKIP") {
                ReplyMode::Skip
            } else {
                return err(ERR_SYNTAX);
            };
            Reply::ok()
        }
        b"tracking" => match arity(args.len() >= 3, "tracking") {
            Some(r) => r,
            None => client_tracking(ctx, args),
        },
        b"caching" => match arity(args.len() == 3, "caching") {
            Some(r) => r,
            None => client_caching(ctx, &args[2]),
        },
        b"getredir" => arity(args.len() == 2, "getredir").unwrap_or_else(|| {
            Reply::Int(
                ctx.session
                    .tracking
                    .as_ref()
                    .map_or(-1, |t| t.mode.redirect as i64),
            )
        }),
        b"trackinginfo" => {
            arity(args.len() == 2, "trackinginfo").unwrap_or_else(|| tracking_info(ctx))
        }
        b"help" => help_reply(CLIENT_HELP),
        _ => unknown_subcommand("client", &args[1]),
    }
}

/// What CLIENT LIST shows of a client's tracking (`mode`, or none).
fn publish_tracking(info: &crate::client::ClientInfo, mode: Option<&crate::tracking::Mode>) {
    use crate::client::{TRACKING, TRACKING_BCAST};
    info.set_mode(TRACKING | TRACKING_BCAST, false);
    if let Some(m) = mode {
        info.set_mode(TRACKING | if m.bcast { TRACKING_BCAST } else { 0 }, true);
    }
    info.redirect
        .store(mode.map_or(0, |m| m.redirect), Ordering::Relaxed);
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP],
/// with Redis's checks in Redis's order (`crate::tracking`).
fn client_tracking(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut mode = crate::tracking::Mode::default();
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        let a = &args[i];
        if is(a, "REDIRECT") && more {
            if mode.redirect != 0 {
                return err("ERR A client can only redirect to a single other client");
            }
            let Some(id) = super::parse_i64(&args[i + 1]) else {
                return err("ERR value is not an integer or out of range");
            };
            let exists = id > 0 && ctx.engine.clients.contains(id as u64);
            if id as u64 != ctx.session.info.id && !exists {
                return err("ERR The client ID you want redirect to does not exist");
            }
            mode.redirect = id as u64;
            i += 1;
        } else if is(a, "BCAST") {
            mode.bcast = true;
        } else if is(a, "OPTIN") {
            mode.optin = true;
        } else if is(a, "OPTOUT") {
            mode.optout = true;
        } else if is(a, "NOLOOP") {
            mode.noloop = true;
        } else if is(a, "PREFIX") && more {
            mode.prefixes.push(Bytes::copy_from_slice(&args[i + 1]));
            i += 1;
        } else {
            return err(ERR_SYNTAX);
        }
        i += 1;
    }
    // The options first, then ON or OFF, as Redis reads them.
    if is(&args[2], "OFF") {
        publish_tracking(&ctx.session.info, None);
        ctx.session.tracking = None;
        ctx.engine.refresh_notes();
        return Reply::ok();
    }
    if !is(&args[2], "ON") {
        return err(ERR_SYNTAX);
    }
    if !mode.bcast && !mode.prefixes.is_empty() {
        return err("ERR PREFIX option requires BCAST mode to be enabled");
    }
    if let Some(t) = &ctx.session.tracking {
        if t.mode.bcast != mode.bcast {
            return err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
        }
    }
    if mode.bcast && (mode.optin || mode.optout) {
        return err("ERR OPTIN and OPTOUT are not compatible with BCAST");
    }
    if mode.optin && mode.optout {
        return err("ERR You can't specify both OPTIN mode and OPTOUT mode");
    }
    if let Some(t) = &ctx.session.tracking {
        if (mode.optin && t.mode.optout) || (mode.optout && t.mode.optin) {
            return err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
        }
    }
    let old: &[Bytes] = ctx
        .session
        .tracking
        .as_ref()
        .map_or(&[], |t| &t.mode.prefixes);
    let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
    for (i, p) in mode.prefixes.iter().enumerate() {
        let overlaps = |q: &Bytes| p.starts_with(q) || q.starts_with(p);
        if let Some(q) = old.iter().find(|q| overlaps(q)) {
            return Reply::error(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                text(p),
                text(q)
            ));
        }
        if let Some(q) = mode.prefixes[i + 1..].iter().find(|q| overlaps(q)) {
            return Reply::error(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                text(p),
                text(q)
            ));
        }
    }
    // BCAST without PREFIX watches the empty prefix (every key), as Redis stores it: also
    // beside prefixes it had (Redis's `enableTracking` adds it unchecked).
    if mode.bcast && mode.prefixes.is_empty() {
        mode.prefixes.push(Bytes::new());
    }
    // A client turning tracking on again keeps its earlier prefixes.
    let mut prefixes = old.to_vec();
    for p in std::mem::take(&mut mode.prefixes) {
        if !prefixes.contains(&p) {
            prefixes.push(p);
        }
    }
    mode.prefixes = prefixes;
    let (engine, info) = (ctx.engine, ctx.session.info.clone());
    let mailbox = ctx
        .session
        .pubsub
        .get_or_insert_with(|| crate::pubsub::Subscriber::new(engine.pubsub.clone(), info.clone()))
        .mailbox()
        .clone();
    let redirect = mode.redirect;
    publish_tracking(&info, Some(&mode));
    match ctx.session.tracking.as_mut() {
        Some(t) => t.change(mode, mailbox),
        None => {
            let t = crate::tracking::Tracking::new(engine.tracker.clone(), info.id, mode, mailbox);
            ctx.session.tracking = Some(t);
        }
    }
    // A target that went between the check above and now was not seen going: told again.
    if redirect != 0 && !engine.clients.contains(redirect) {
        engine.tracker.client_gone(redirect);
    }
    engine.refresh_notes();
    Reply::ok()
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked (OPTIN, OPTOUT).
fn client_caching(ctx: &mut Ctx<'_>, arg: &[u8]) -> Reply {
    let Some(t) = ctx.session.tracking.as_mut() else {
        return err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    };
    if is(arg, "YES") {
        if !t.mode.optin {
            return err(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
        }
    } else if is(arg, "NO") {
        if !t.mode.optout {
            return err(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
        }
    } else {
        return err(ERR_SYNTAX);
    }
    t.caching = true;
    Reply::ok()
}

/// CLIENT TRACKINGINFO: Redis's map of flags, redirect and prefixes.
fn tracking_info(ctx: &Ctx<'_>) -> Reply {
    let b = |s: &str| Reply::bulk(s.to_string());
    let Some(t) = &ctx.session.tracking else {
        return Reply::Map(vec![
            (b("flags"), Reply::Set(vec![b("off")])),
            (b("redirect"), Reply::Int(-1)),
            (b("prefixes"), Reply::Array(Vec::new())),
        ]);
    };
    let m = &t.mode;
    let mut flags = vec![b("on")];
    if m.bcast {
        flags.push(b("bcast"));
    }
    if m.optin {
        flags.push(b("optin"));
        if t.caching {
            flags.push(b("caching-yes"));
        }
    }
    if m.optout {
        flags.push(b("optout"));
        if t.caching {
            flags.push(b("caching-no"));
        }
    }
    if m.noloop {
        flags.push(b("noloop"));
    }
    if ctx.engine.tracker.redirect_broken(ctx.session.info.id) {
        flags.push(b("broken_redirect"));
    }
    Reply::Map(vec![
        (b("flags"), Reply::Set(flags)),
        (b("redirect"), Reply::Int(m.redirect as i64)),
        (
            b("prefixes"),
            // In byte order, as Redis keeps them (a radix tree).
            Reply::Array({
                let mut p = m.prefixes.clone();
                p.sort();
                p.into_iter().map(Reply::Bulk).collect()
            }),
        ),
    ])
}

fn client_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let mut ids: Option<Vec<u64>> = None;
    // TYPE: `Some(Some(subscriber))` for pubsub or normal, `Some(None)` for a type no
    // client here has.
    let mut wanted: Option<Option<bool>> = None;
    // Redis's forms: `TYPE type` alone, or `ID id [id ...]`.
    if args.len() == 4 && is(&args[2], "TYPE") {
        let t = &args[3];
        let known = ["NORMAL", "MASTER", "REPLICA", "SLAVE", "PUBSUB"];
        if !known.iter().any(|k| is(t, k)) {
            return Reply::error(format!(
                "ERR Unknown client type '{}'",
                String::from_utf8_lossy(t)
            ));
        }
        // Redis's client types: a subscriber is `pubsub`, every other client here
        // `normal` (no masters or replicas).
        wanted = Some(if is(t, "PUBSUB") {
            Some(true)
        } else if is(t, "NORMAL") {
            Some(false)
        } else {
            None
        });
    } else if args.len() > 3 && is(&args[2], "ID") {
        let mut list = Vec::new();
        for a in &args[3..] {
            match parse_i64(a) {
                // An id no client has (0, negative) matches none, as in Redis.
                Some(n) => list.extend(u64::try_from(n).ok()),
                None => return err("ERR Invalid client ID"),
            }
        }
        ids = Some(list);
    } else if args.len() != 2 {
        return err(ERR_SYNTAX);
    }
    let all = ctx.engine.clients.connected(ctx.session.info.id);
    // ID's clients in the order named, as often as named (Redis's); else every client.
    let listed: Vec<&std::sync::Arc<crate::client::ClientInfo>> = match &ids {
        Some(ids) => {
            let by_id: std::collections::HashMap<u64, &std::sync::Arc<crate::client::ClientInfo>> =
                all.iter().map(|c| (c.id, c)).collect();
            ids.iter().filter_map(|id| by_id.get(id).copied()).collect()
        }
        None => all.iter().collect(),
    };
    let mut out = String::new();
    for c in listed {
        if wanted.is_some_and(|t| t != Some(c.is_subscriber())) {
            continue;
        }
        out.push_str(&super::describe_client(ctx.engine, c, ctx.now_ms));
        out.push('\n');
    }
    Reply::Verbatim(out.into())
}

fn client_kill(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let me = ctx.session.info.id;
    if args.len() < 3 {
        return wrong_arity("client|kill");
    }
    if args.len() == 3 {
        // Old form: CLIENT KILL addr:port.
        let addr = String::from_utf8_lossy(&args[2]);
        let victim = ctx
            .engine
            .clients
            .all()
            .into_iter()
            .find(|c| c.addr.to_string() == addr);
        return match victim {
            Some(c) => {
                kill(ctx, me, &c);
                Reply::ok()
            }
            None => err("ERR No such client"),
        };
    }
    if !args.len().is_multiple_of(2) || args.len() < 4 {
        return err(ERR_SYNTAX);
    }
    let (mut id, mut addr, mut laddr, mut maxage, mut user) = (None, None, None, None, None);
    let mut skipme = true;
    // TYPE, as in CLIENT LIST.
    let mut kind: Option<Option<bool>> = None;
    for pair in args[2..].chunks_exact(2) {
        let (k, v) = (&pair[0], &pair[1]);
        if is(k, "ID") {
            match parse_i64(v).filter(|&n| n > 0) {
                Some(n) => id = Some(n as u64),
                None => return err("ERR client-id should be greater than 0"),
            }
        } else if is(k, "ADDR") {
            addr = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(k, "LADDR") {
            laddr = Some(String::from_utf8_lossy(v).into_owned());
        } else if is(k, "USER") {
            if super::acl::registry(ctx.engine).user(v).is_none() {
                return Reply::error(format!("ERR No such user '{}'", String::from_utf8_lossy(v)));
            }
            user = Some(v.clone());
        } else if is(k, "TYPE") {
            if !(is(v, "NORMAL") || is(v, "MASTER") || is(v, "REPLICA") || is(v, "PUBSUB")) {
                return Reply::error(format!(
                    "ERR Unknown client type '{}'",
                    String::from_utf8_lossy(v)
                ));
            }
            kind = if is(v, "PUBSUB") {
                Some(Some(true))
            } else if is(v, "NORMAL") {
                Some(Some(false))
            } else {
                Some(None)
            };
        } else if is(k, "SKIPME") {
            skipme = if is(v, "YES") {
                true
            } else if is(v, "NO") {
                false
            } else {
                return err(ERR_SYNTAX);
            };
        } else if is(k, "MAXAGE") {
            maxage = Some(tri!(int_arg(v)));
        } else {
            return err(ERR_SYNTAX);
        }
    }
    let mut killed = 0;
    if kind != Some(None) {
        for c in ctx.engine.clients.all() {
            let age = ctx.now_ms.saturating_sub(c.created_ms) / 1000;
            if id.is_some_and(|id| id != c.id)
                || kind.is_some_and(|k| k != Some(c.is_subscriber()))
                || addr.as_ref().is_some_and(|a| *a != c.addr.to_string())
                || laddr.as_ref().is_some_and(|a| *a != c.laddr.to_string())
                || maxage.is_some_and(|m| (age as i64) < m)
                || user.as_ref().is_some_and(|u: &Bytes| {
                    *u != *c.user.lock().expect("client user lock poisoned")
                })
                || (skipme && c.id == me)
            {
                continue;
            }
            kill(ctx, me, &c);
            killed += 1;
        }
    }
    Reply::Int(killed)
}

/// Kills a client; killing oneself closes after this reply, as Redis does.
fn kill(ctx: &mut Ctx<'_>, me: u64, victim: &crate::client::ClientInfo) {
    if victim.id == me {
        ctx.session.close = true;
    } else {
        victim.kill();
    }
}

/// MONITOR: the connection becomes a monitor (the front end subscribes it; see
/// `shoal_cluster::monitor`). Only the Redis protocol's front end honours it.
pub fn monitor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    // Inside EXEC (where nothing may block), as Redis.
    if ctx.session.no_block {
        return Reply::error("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    ctx.session.monitor = true;
    ctx.session.info.set_mode(crate::client::MONITOR, true);
    Reply::ok()
}

/// `tracking.invalidate by key [by key ...]` (internal): another node's invalidations for
/// this node's tracking clients (`crate::tracking`): each stored key changed, by this
/// node's client `by` (0: by another).
pub fn tracking_invalidate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if args.len().is_multiple_of(2) {
        return wrong_arity("tracking.invalidate");
    }
    let mut changes = Vec::with_capacity(args.len() / 2);
    for pair in args[1..].chunks_exact(2) {
        let Some(by) = std::str::from_utf8(&pair[0])
            .ok()
            .and_then(|t| t.parse().ok())
        else {
            return err("ERR tracking.invalidate: bad client id");
        };
        changes.push((pair[1].clone(), by));
    }
    let limit = ctx
        .engine
        .with_settings(|s| s.client_output_buffer_limit.pubsub);
    ctx.engine
        .tracker
        .invalidated_elsewhere(&changes, &ctx.engine.pubsub, limit);
    Reply::ok()
}

/// `tracking.flush` (internal): another node lost track of what this node's clients read
/// there: every tracking client here is told to drop everything.
pub fn tracking_flush(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let limit = ctx
        .engine
        .with_settings(|s| s.client_output_buffer_limit.pubsub);
    ctx.engine
        .tracker
        .flushed_elsewhere(&ctx.engine.pubsub, limit);
    Reply::ok()
}

/// `tracking.bcast member [prefix ...]` (internal): the prefixes member `member`'s BCAST
/// clients watch, all of them (none: it has no BCAST client any more); every change of a
/// key under one of them here is told to that member (`crate::tracking`).
pub fn tracking_bcast(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let member: std::sync::Arc<str> = match std::str::from_utf8(&args[1]) {
        Ok(m) if !m.is_empty() => m.into(),
        _ => return err("ERR tracking.bcast: bad member name"),
    };
    if ctx
        .engine
        .tracker
        .set_member_prefixes(&member, args[2..].to_vec())
    {
        ctx.engine.refresh_notes();
    }
    Reply::ok()
}
