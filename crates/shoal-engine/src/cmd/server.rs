//! Server commands: INFO, COMMAND, CONFIG, TIME.

use crate::acl::LogReason;
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use shoal_resp::Reply;
use shoal_store::{glob_match, EvictionPolicy};

use super::conn::help_reply;
use super::{
    err, flag, is, lookup_listed, unknown_subcommand, wrong_arity, CommandSpec, Ctx, TABLE,
};
use crate::clock::now_ms;
use crate::config::{ByteSize, NodeConfig};
use crate::engine::Engine;
use crate::hooks::ClusterInfo;
use crate::{REDIS_VERSION, SHOAL_VERSION};

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: a graceful stop, as on SIGTERM. SAVE writes
/// a snapshot first, as SAVE does (a failure keeps the node up unless FORCE, as in Redis);
/// without it none is written (Shoal has no save points). The caller's connection closes
/// without a reply, as Redis's does.
pub fn shutdown(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let (mut abort, mut nosave, mut save, mut force) = (false, false, false, false);
    for a in &args[1..] {
        if is(a, "ABORT") {
            abort = true;
        } else if is(a, "NOSAVE") {
            nosave = true;
        } else if is(a, "SAVE") {
            save = true;
        } else if is(a, "FORCE") {
            force = true;
        } else if !is(a, "NOW") {
            return err(super::ERR_SYNTAX);
        }
    }
    if save && nosave {
        return err(super::ERR_SYNTAX);
    }
    if abort {
        return if args.len() == 2 {
            err("ERR No shutdown in progress.")
        } else {
            err(super::ERR_SYNTAX)
        };
    }
    // A busy script: only SHUTDOWN NOSAVE, which ends it, as in Redis.
    if let Some(busy) = ctx.engine.running.busy_reply() {
        if !nosave {
            return err(busy);
        }
        ctx.engine.running.abort();
    }
    // A running BGSAVE is stopped, as Redis kills its child: its file, older than what a
    // SAVE now writes, must not be put in place after it.
    ctx.engine.saves.cancel();
    // SAVE writes a snapshot first (`crate::snapshot`); if it fails the node stays up,
    // unless FORCE, as in Redis. Without SAVE none is written (no save points here).
    if save {
        if let Err(e) = crate::snapshot::save_now(ctx.engine) {
            tracing::warn!("SHUTDOWN SAVE: the snapshot failed: {e}");
            if !force {
                return err("ERR Errors trying to SHUTDOWN. Check logs.");
            }
        }
    }
    tracing::warn!(client = ctx.session.info.id, "SHUTDOWN requested");
    ctx.host.shutdown();
    ctx.session.close = true;
    ctx.session.drop_reply = true;
    Reply::ok()
}

pub fn time(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let _ = ctx;
    let us = crate::clock::now_us();
    Reply::Array(vec![
        Reply::bulk((us / 1_000_000).to_string()),
        Reply::bulk((us % 1_000_000).to_string()),
    ])
}

pub fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sections: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    // The walk of every database only when the keyspace section is shown.
    let numbered = ctx.keyspace.is_none() && ctx.engine.numbered_dbs() && info_wants_keyspace(args);
    let databases = numbered.then(|| super::db::keyspace(ctx));
    let info = Info {
        cluster: ctx.host.cluster(),
        cluster_enabled: ctx.session.redis_cluster,
        keyspace: ctx.keyspace,
        databases: databases.as_deref(),
        caller: ctx.session.info.id,
    };
    Reply::Verbatim(render_info(ctx.engine, &info, &sections).into())
}

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "errorstats",
    "cluster",
    "keyspace",
];

/// Every section, in Redis's order (`INFO all`): the default ones and commandstats.
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1024.0 {
        format!("{bytes}B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", b / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", b / 1024.0 / 1024.0 / 1024.0)
    }
}

/// INFO's text for the given sections (empty = the default set), `\r\n`-separated as Redis.
/// Whether INFO with these arguments shows the keyspace section (the router then gathers
/// the cluster-wide counts first).
pub fn info_wants_keyspace(args: &[Bytes]) -> bool {
    args.len() == 1
        || args[1..].iter().any(|a| {
            ["keyspace", "all", "everything", "default"]
                .iter()
                .any(|s| a.eq_ignore_ascii_case(s.as_bytes()))
        })
}

/// What INFO shows beyond the engine's own state.
pub struct Info<'a> {
    /// The cluster this node is in, for INFO's cluster section.
    pub cluster: Option<&'a dyn ClusterInfo>,
    /// `cluster_enabled:1`: asked on the cluster-client port, where Redis Cluster's rules
    /// apply. Elsewhere 0, so plain clients never switch to slot maps and MOVED.
    pub cluster_enabled: bool,
    /// Cluster-wide (keys, volatile keys) to show instead of this node's own counts.
    pub keyspace: Option<(u64, u64)>,
    /// (database, keys, volatile keys) of every database, once numbered ones are in use.
    pub databases: Option<&'a [(u8, u64, u64)]>,
    /// The client asking (0: none), which counts as connected whatever its socket says
    /// (`ClientRegistry::connected`).
    pub caller: u64,
}

/// The INFO text.
pub fn render_info(node: &Engine, info: &Info<'_>, sections: &[String]) -> String {
    let Info {
        cluster,
        cluster_enabled,
        keyspace,
        databases,
        caller,
    } = *info;
    let all = sections.iter().any(|s| s == "all" || s == "everything");
    // `default` is the default set plus any other section named (Redis 7: INFO default
    // commandstats).
    let wanted: Vec<&str> = if all {
        ALL_SECTIONS.to_vec()
    } else if sections.is_empty() || sections.iter().any(|s| s == "default") {
        DEFAULT_SECTIONS
            .iter()
            .copied()
            .chain(sections.iter().map(String::as_str))
            .collect()
    } else {
        sections.iter().map(String::as_str).collect()
    };
    let settings = node.settings();
    let stats = node.store.stats();
    let mut out = String::new();
    let mut section = |name: &str, body: String| {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let _ = write!(out, "# {name}\r\n{body}");
    };
    for w in ALL_SECTIONS {
        if !wanted.contains(w) {
            continue;
        }
        let mut b = String::new();
        macro_rules! line {
            ($($arg:tt)*) => {{ let _ = write!(b, $($arg)*); b.push_str("\r\n"); }};
        }
        match *w {
            "server" => {
                let uptime = node.uptime_secs();
                line!("redis_version:{REDIS_VERSION}");
                line!("shoal_version:{SHOAL_VERSION}");
                line!("redis_git_sha1:00000000");
                line!("redis_git_dirty:0");
                line!("redis_mode:standalone");
                line!("os:{} {}", std::env::consts::OS, std::env::consts::ARCH);
                line!("arch_bits:{}", usize::BITS);
                line!("multiplexing_api:epoll");
                // Rust's `Instant` reads CLOCK_MONOTONIC.
                line!("monotonic_clock:POSIX clock_gettime");
                line!("process_id:{}", std::process::id());
                line!("run_id:{}", node.run_id);
                line!("tcp_port:{}", node.port.load(Ordering::Relaxed));
                line!("server_time_usec:{}", now_ms() * 1000);
                line!("uptime_in_seconds:{uptime}");
                line!("uptime_in_days:{}", uptime / 86400);
                line!("hz:{}", settings.hz);
                line!("configured_hz:{}", settings.hz);
                // Redis's LRU clock: seconds, 24 bits (OBJECT IDLETIME's unit).
                line!("lru_clock:{}", (now_ms() / 1000) & 0xff_ffff);
                line!(
                    "executable:{}",
                    std::env::current_exe()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                );
                line!("config_file:{}", node.config_file.as_deref().unwrap_or(""));
                line!("process_supervised:no");
                section("Server", b);
            }
            "clients" => {
                let clients = node.clients.connected(caller);
                line!("connected_clients:{}", clients.len());
                line!(
                    "cluster_connections:{}",
                    cluster.map_or(0, |c| c.connections())
                );
                line!("maxclients:{}", settings.maxclients);
                // The largest buffers a client holds now (Redis: the peaks of the last
                // seconds): its input buffer, its replies waiting.
                let most = |f: &dyn Fn(&crate::client::Buffers) -> u64| {
                    clients.iter().map(|c| f(&c.buffers)).max().unwrap_or(0)
                };
                line!(
                    "client_recent_max_input_buffer:{}",
                    most(&|b| b.rbs.load(Ordering::Relaxed))
                );
                line!(
                    "client_recent_max_output_buffer:{}",
                    most(&|b| {
                        let (obl, _, omem) = b.shown_output();
                        obl + omem
                    })
                );
                line!(
                    "blocked_clients:{}",
                    node.blocked.clients()
                        + node
                            .pause
                            .waiting
                            .load(std::sync::atomic::Ordering::Relaxed)
                );
                line!("tracking_clients:{}", node.tracker.clients());
                // Redis 7.2's: clients subscribed to anything, clients watching keys, keys
                // clients wait on.
                let subscribed = |c: &crate::client::ClientInfo| {
                    c.subscriptions
                        .iter()
                        .any(|n| n.load(Ordering::Relaxed) > 0)
                };
                line!(
                    "pubsub_clients:{}",
                    clients.iter().filter(|c| subscribed(c)).count()
                );
                line!(
                    "watching_clients:{}",
                    clients
                        .iter()
                        .filter(|c| c.watching.load(Ordering::Relaxed) > 0)
                        .count()
                );
                line!("clients_in_timeout_table:{}", node.blocked.timed_clients());
                line!("total_blocking_keys:{}", node.blocked.keys());
                line!(
                    "total_blocking_keys_on_nokey:{}",
                    node.blocked.keys_on_nokey()
                );
                section("Clients", b);
            }
            "memory" => {
                let (rss, _, _) = crate::stats::process_usage();
                // Read now, not the cron's last sample (up to 1/hz old): a client that
                // writes and then reads INFO sees what it wrote, as in Redis.
                node.refresh_memory();
                let used = node.used_memory();
                let max = node.with_settings(|s| s.maxmemory.0);
                let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 1.0 };
                line!("used_memory:{used}");
                line!("used_memory_human:{}", human(used));
                line!("used_memory_rss:{rss}");
                line!("used_memory_rss_human:{}", human(rss));
                let peak = node.peak_memory(used);
                line!("used_memory_peak:{peak}");
                line!("used_memory_peak_human:{}", human(peak));
                line!("used_memory_peak_perc:{:.2}%", ratio(used, peak) * 100.0);
                line!("used_memory_dataset:{}", stats.used_memory);
                if let Some(a) = node.memory.sample() {
                    line!("allocator_allocated:{}", a.allocated);
                    line!("allocator_active:{}", a.active);
                    line!("allocator_resident:{}", a.resident);
                    line!("allocator_frag_ratio:{:.2}", ratio(a.active, a.allocated));
                    line!(
                        "allocator_frag_bytes:{}",
                        a.active.saturating_sub(a.allocated)
                    );
                    line!("allocator_rss_ratio:{:.2}", ratio(a.resident, a.active));
                    line!(
                        "allocator_rss_bytes:{}",
                        a.resident.saturating_sub(a.active)
                    );
                    line!("rss_overhead_ratio:{:.2}", ratio(rss, a.resident));
                    line!("rss_overhead_bytes:{}", rss as i64 - a.resident as i64);
                }
                if let Some(total) = crate::stats::system_memory() {
                    line!("total_system_memory:{total}");
                    line!("total_system_memory_human:{}", human(total));
                }
                line!("number_of_cached_scripts:{}", node.scripts.count());
                let (libraries, functions) = node.functions.counts();
                line!("number_of_functions:{functions}");
                line!("number_of_libraries:{libraries}");
                line!("maxmemory:{max}");
                line!("maxmemory_human:{}", human(max));
                line!("maxmemory_policy:{}", node.store.policy().name());
                // Keys removed whose memory a background thread has still to free
                // (`crate::lazyfree`); no replication or AOF buffer sits outside `maxmemory`.
                line!("mem_not_counted_for_evict:0");
                line!("mem_fragmentation_ratio:{:.2}", ratio(rss, used));
                line!("mem_fragmentation_bytes:{}", rss as i64 - used as i64);
                line!(
                    "mem_allocator:{}",
                    crate::memory::allocator().map_or_else(|| "libc".to_owned(), |a| a.name())
                );
                // Clients' buffers (CLIENT LIST's tot-mem, summed); no replica, replication
                // backlog, AOF or cluster bus buffers exist.
                let clients: u64 = node.clients.all().iter().map(|c| c.buffers.total()).sum();
                line!("mem_clients_slaves:0");
                line!("mem_clients_normal:{clients}");
                line!("mem_cluster_links:0");
                line!("mem_aof_buffer:0");
                line!("mem_replication_backlog:0");
                line!("mem_total_replication_buffers:0");
                // No active defragmentation (eviction bounds the allocator's pages instead).
                line!("active_defrag_running:0");
                line!("lazyfree_pending_objects:{}", node.lazyfree.pending());
                line!("lazyfreed_objects:{}", node.lazyfree.freed());
                section("Memory", b);
            }
            "persistence" => {
                line!("loading:0");
                line!("async_loading:0");
                // SAVE's and BGSAVE's (`crate::snapshot`); the start counts as the last save.
                let saves = &node.saves;
                let changes = saves.changes_since(node.store.stats().changes);
                line!("rdb_changes_since_last_save:{changes}");
                line!("rdb_bgsave_in_progress:{}", u8::from(saves.running()));
                let started = (now_ms() / 1000).saturating_sub(node.uptime_secs());
                line!("rdb_last_save_time:{}", saves.last_save_secs(started));
                let status = if saves.last_bgsave_failed() {
                    "err"
                } else {
                    "ok"
                };
                line!("rdb_last_bgsave_status:{status}");
                line!("rdb_last_bgsave_time_sec:{}", saves.last_bgsave_secs());
                line!(
                    "rdb_current_bgsave_time_sec:{}",
                    saves.current_secs(now_ms())
                );
                line!("rdb_saves:{}", saves.saves());
                line!("aof_enabled:0");
                line!("aof_rewrite_in_progress:0");
                line!("aof_rewrite_scheduled:0");
                line!("aof_last_rewrite_time_sec:-1");
                line!("aof_current_rewrite_time_sec:-1");
                line!("aof_last_bgrewrite_status:ok");
                line!("aof_rewrites:0");
                line!("aof_last_write_status:ok");
                line!("aof_rewrites_consecutive_failures:0");
                // Nothing forks (no save, no rewrite) and nothing was loaded.
                line!("rdb_last_cow_size:0");
                line!("aof_last_cow_size:0");
                line!("module_fork_in_progress:0");
                line!("module_fork_last_cow_size:0");
                line!("current_cow_peak:0");
                line!("current_cow_size:0");
                line!("current_cow_size_age:0");
                line!("current_fork_perc:0.00");
                line!("current_save_keys_processed:0");
                line!("current_save_keys_total:0");
                line!("rdb_last_load_keys_expired:0");
                line!("rdb_last_load_keys_loaded:0");
                section("Persistence", b);
            }
            "stats" => {
                let s = &node.stats;
                line!(
                    "total_connections_received:{}",
                    s.total_connections_received.load(Ordering::Relaxed)
                );
                line!(
                    "total_commands_processed:{}",
                    s.total_commands_processed.get()
                );
                line!("instantaneous_ops_per_sec:{}", s.instantaneous_ops());
                let (input_kbps, output_kbps) = s.instantaneous_kbps();
                line!("instantaneous_input_kbps:{input_kbps:.2}");
                line!("instantaneous_output_kbps:{output_kbps:.2}");
                line!("total_net_input_bytes:{}", s.total_net_input_bytes.get());
                line!("total_net_output_bytes:{}", s.total_net_output_bytes.get());
                line!(
                    "rejected_connections:{}",
                    s.rejected_connections.load(Ordering::Relaxed)
                );
                line!("expired_keys:{}", stats.expired_keys);
                line!(
                    "expired_time_cap_reached_count:{}",
                    s.expire_time_cap_reached.load(Ordering::Relaxed)
                );
                line!(
                    "expire_cycle_cpu_milliseconds:{}",
                    s.expire_cycle_us.load(Ordering::Relaxed) / 1000
                );
                line!("evicted_keys:{}", stats.evicted_keys);
                line!("evicted_clients:{}", node.clients.evicted());
                line!("keyspace_hits:{}", stats.keyspace_hits);
                line!("keyspace_misses:{}", stats.keyspace_misses);
                line!("tracking_total_keys:{}", node.tracker.keys());
                line!("tracking_total_items:{}", node.tracker.items());
                line!("tracking_total_prefixes:{}", node.tracker.prefixes());
                // No fork, no Redis replication (Shoal's own is in INFO cluster), no
                // defragmentation, no RESTORE payload sanitization: their counters stay 0.
                line!("latest_fork_usec:0");
                line!("total_forks:0");
                line!("sync_full:0");
                line!("sync_partial_ok:0");
                line!("sync_partial_err:0");
                line!("total_net_repl_input_bytes:0");
                line!("total_net_repl_output_bytes:0");
                line!("instantaneous_input_repl_kbps:0.00");
                line!("instantaneous_output_repl_kbps:0.00");
                line!("active_defrag_hits:0");
                line!("active_defrag_misses:0");
                line!("active_defrag_key_hits:0");
                line!("active_defrag_key_misses:0");
                line!("total_active_defrag_time:0");
                line!("current_active_defrag_time:0");
                line!("dump_payload_sanitizations:0");
                // No MIGRATE: no sockets kept for it.
                line!("migrate_cached_sockets:0");
                {
                    use crate::pubsub::Space;
                    line!("pubsub_channels:{}", node.pubsub.names(Space::Channel));
                    line!("pubsub_patterns:{}", node.pubsub.names(Space::Pattern));
                    line!("pubsubshard_channels:{}", node.pubsub.names(Space::Shard));
                }
                line!("total_error_replies:{}", node.commands.total_errors());
                // Redis 7.2's ACL refusals, by reason.
                for reason in [
                    LogReason::Auth,
                    LogReason::Command,
                    LogReason::Key,
                    LogReason::Channel,
                ] {
                    let short = if reason == LogReason::Command {
                        "cmd"
                    } else {
                        reason.name()
                    };
                    line!(
                        "acl_access_denied_{short}:{}",
                        super::acl::registry(node).denied(reason)
                    );
                }
                // Expired, evicted, created or missed keys not published (the store's logs
                // of them were full; see "Keyspace notifications" in the README).
                line!("shoal_notifications_dropped:{}", node.notes_dropped());
                section("Stats", b);
            }
            "replication" => {
                // Redis's fields for a master without replicas or backlog (tools read
                // master_repl_offset); Shoal's own replication is in INFO cluster.
                line!("role:master");
                line!("connected_slaves:0");
                // With min-replicas-to-write on, the copies it counts (Redis's line).
                if node.min_replicas() > 0 {
                    let good = info.cluster.map_or(0, |c| c.good_replicas());
                    line!("min_slaves_good_slaves:{good}");
                }
                line!("master_failover_state:no-failover");
                line!("master_replid:{}", node.run_id);
                line!("master_replid2:0000000000000000000000000000000000000000");
                line!("master_repl_offset:0");
                line!("second_repl_offset:-1");
                line!("repl_backlog_active:0");
                line!("repl_backlog_size:1048576");
                line!("repl_backlog_first_byte_offset:0");
                line!("repl_backlog_histlen:0");
                section("Replication", b);
            }
            "cpu" => {
                let (_, user, sys) = crate::stats::process_usage();
                line!("used_cpu_sys:{sys:.6}");
                line!("used_cpu_user:{user:.6}");
                // No child processes (nothing forks).
                line!("used_cpu_sys_children:0.000000");
                line!("used_cpu_user_children:0.000000");
                section("CPU", b);
            }
            "commandstats" => {
                for r in node.commands.totals() {
                    let (calls, rejected, failed, usec) = (r.calls, r.rejected, r.failed, r.usec);
                    if calls == 0 && rejected == 0 && failed == 0 {
                        continue;
                    }
                    let per_call = if calls == 0 {
                        0.0
                    } else {
                        usec as f64 / calls as f64
                    };
                    line!(
                        "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per_call:.2},\
                         rejected_calls={rejected},failed_calls={failed}",
                        r.name
                    );
                }
                section("Commandstats", b);
            }
            "latencystats" => {
                use crate::cmdstats::LatencyHistogram;
                // Redis's `latency-tracking` and `latency-tracking-info-percentiles`.
                let (tracking, percentiles) = node.with_settings(|s| {
                    let get = |name| super::inert::get(&s.inert, name).unwrap_or_default();
                    (
                        get("latency-tracking"),
                        get("latency-tracking-info-percentiles"),
                    )
                });
                let percentiles: Vec<(&str, f64)> = percentiles
                    .split_ascii_whitespace()
                    .filter_map(|p| Some((p, p.parse().ok()?)))
                    .collect();
                let rows = node.commands.totals().into_iter().filter(|r| r.calls > 0);
                for r in rows.filter(|_| tracking == "yes") {
                    let shown: Vec<String> = percentiles
                        .iter()
                        .map(|&(label, q)| {
                            let v = LatencyHistogram::percentile(&r.latency, q).unwrap_or(0);
                            format!("p{label}={v}.000")
                        })
                        .collect();
                    line!("latency_percentiles_usec_{}:{}", r.name, shown.join(","));
                }
                section("Latencystats", b);
            }
            "errorstats" => {
                for (code, count) in node.commands.errors() {
                    line!("errorstat_{code}:count={count}");
                }
                section("Errorstats", b);
            }
            "cluster" => {
                line!("cluster_enabled:{}", u8::from(cluster_enabled));
                if let Some(c) = cluster {
                    c.info_lines(&mut b);
                }
                section("Cluster", b);
            }
            "keyspace" => {
                match databases {
                    Some(dbs) => {
                        for &(db, keys, volatile) in dbs.iter().filter(|d| d.1 > 0) {
                            line!("db{db}:keys={keys},expires={volatile},avg_ttl=0");
                        }
                    }
                    None => {
                        let (keys, volatile) =
                            keyspace.unwrap_or((stats.keys, stats.volatile_keys));
                        if keys > 0 {
                            line!("db0:keys={keys},expires={volatile},avg_ttl=0");
                        }
                    }
                }
                section("Keyspace", b);
            }
            _ => {}
        }
    }
    out
}

// ---- COMMAND -------------------------------------------------------------------------

/// The destination of `SORT key ... STORE dst` (the last STORE), read as Redis's
/// `sortGetKeys` does: LIMIT takes two arguments, GET, BY and STORE one each.
fn sort_store_key(args: &[Bytes]) -> Option<&Bytes> {
    let mut found = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        let skip = if a.eq_ignore_ascii_case(b"limit") {
            2
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            1
        } else if a.eq_ignore_ascii_case(b"store") {
            found = args.get(i + 1).or(found);
            1
        } else {
            0
        };
        i += 1 + skip;
    }
    found
}

/// A subcommand's COMMAND INFO entry (`container|sub`): Redis's flags and key position
/// (`docs::SUBCOMMAND_META`), ACL categories and key specs.
fn sub_info(c: &CommandSpec, sub: &str) -> Reply {
    let arity = super::docs::subcommand_arity(c.name, sub).unwrap_or(-2);
    let (flags, keyed) = super::docs::subcommand_meta(c.name, sub).unwrap_or_default();
    let name = format!("{}|{}", c.name, sub);
    let tips = own_tips(&name).iter().map(|t| Reply::bulk(*t)).collect();
    // A keyed subcommand's one key, its second argument (`OBJECT ENCODING key`).
    let key = i64::from(keyed) * 2;
    let key_specs = table_key_specs(&name).unwrap_or_default();
    Reply::Array(vec![
        Reply::bulk(name),
        Reply::Int(i64::from(arity)),
        Reply::Set(flags.iter().map(|f| Reply::Simple((*f).into())).collect()),
        Reply::Int(key),
        Reply::Int(key),
        Reply::Int(key / 2),
        Reply::Set(
            super::acl::sub_categories(c, sub)
                .into_iter()
                .map(|cat| Reply::Simple(format!("@{cat}").into()))
                .collect(),
        ),
        Reply::Array(tips),
        Reply::Array(key_specs),
        Reply::Array(vec![]),
    ])
}

/// The key specs of `name` (`container|sub` for a subcommand) as COMMAND shows them, from
/// Redis's table of them (`keyspecs`): each one's notes, flags, begin and find; `None` for
/// a command the table does not have (none with keys: `every_keyed_command_has_key_specs`).
fn table_key_specs(name: &str) -> Option<Vec<Reply>> {
    use super::keyspecs::{flag, Begin, Find, NOTES};
    let specs = super::keyspecs::specs(name)?;
    let part = spec_part;
    let int = |n: i32| Reply::Int(i64::from(n));
    let rendered = specs.iter().enumerate().map(|(i, ks)| {
        let mut fields = Vec::with_capacity(4);
        if let Some((_, _, note)) = NOTES.iter().find(|(n, at, _)| *n == name && *at == i) {
            fields.push((Reply::bulk("notes"), Reply::bulk(*note)));
        }
        let flags = flag::NAMES
            .iter()
            .filter(|(bit, _)| ks.flags & bit != 0)
            .map(|(_, n)| Reply::Simple((*n).into()))
            .collect();
        fields.push((Reply::bulk("flags"), Reply::Set(flags)));
        let begin = match ks.begin {
            Begin::Index(at) => part("index", vec![("index", int(at))]),
            Begin::Keyword(word, from) => part(
                "keyword",
                vec![("keyword", Reply::bulk(word)), ("startfrom", int(from))],
            ),
            Begin::Unknown => part("unknown", vec![]),
        };
        fields.push((Reply::bulk("begin_search"), begin));
        let find = match ks.find {
            Find::Range {
                lastkey,
                step,
                limit,
            } => part(
                "range",
                vec![
                    ("lastkey", int(lastkey)),
                    ("keystep", int(step)),
                    ("limit", int(limit)),
                ],
            ),
            Find::Keynum {
                keynumidx,
                firstkey,
                step,
            } => part(
                "keynum",
                vec![
                    ("keynumidx", int(keynumidx)),
                    ("firstkey", int(firstkey)),
                    ("keystep", int(step)),
                ],
            ),
            Find::Unknown => part("unknown", vec![]),
        };
        fields.push((Reply::bulk("find_keys"), find));
        Reply::Map(fields)
    });
    Some(rendered.collect())
}

/// A key spec's `begin_search` or `find_keys`: its type and that type's fields.
fn spec_part(kind: &'static str, spec: Vec<(&'static str, Reply)>) -> Reply {
    let spec = spec.into_iter().map(|(k, v)| (Reply::bulk(k), v)).collect();
    Reply::Map(vec![
        (Reply::bulk("type"), Reply::bulk(kind)),
        (Reply::bulk("spec"), Reply::Map(spec)),
    ])
}

/// COMMAND INFO of one name: a command, or `container|sub` as COMMAND LIST names it.
fn info_of(name: &[u8]) -> Reply {
    if let Some(at) = name.iter().position(|&b| b == b'|') {
        let sub = name[at + 1..].to_ascii_lowercase();
        return lookup_listed(&name[..at])
            .and_then(|c| {
                c.subcommands
                    .iter()
                    .find(|s| s.as_bytes() == &sub[..])
                    .map(|s| sub_info(c, s))
            })
            .unwrap_or(Reply::Nil);
    }
    lookup_listed(name).map_or(Reply::Nil, command_info)
}

fn command_info(c: &CommandSpec) -> Reply {
    // A container has no flags of its own in Redis (its subcommands have them).
    let mut flags: Vec<Reply> = flag::NAMES
        .iter()
        .filter(|(bit, _)| c.flags & bit != 0 && !super::is_container(c))
        .map(|(_, n)| Reply::Simple((*n).into()))
        .collect();
    // SORT's STORE key is found by reading its options (Redis's `sortGetKeys`).
    if c.numkeys > 0
        || matches!(
            c.name,
            "sort" | "sort_ro" | "georadius" | "georadiusbymember"
        )
    {
        flags.push(Reply::Simple("movablekeys".into()));
    }
    // A container has no keys of its own in Redis either (its subcommands have them; a
    // Redis Cluster client such as redis-py looks there); the sharded channels of SPUBLISH,
    // SSUBSCRIBE and SUNSUBSCRIBE are at Redis's key positions (a `not_key` spec), which
    // Shoal's rows leave at 0 as they route no key.
    let container = super::is_container(c);
    let key_specs = if container {
        vec![]
    } else {
        table_key_specs(c.name).unwrap_or_default()
    };
    let (first, last, step) = match c.name {
        _ if container => (0, 0, 0),
        "spublish" => (1, 1, 1),
        "ssubscribe" | "sunsubscribe" => (1, -1, 1),
        _ => (c.first_key, c.last_key, c.step),
    };
    let subs = c.subcommands.iter().map(|s| sub_info(c, s)).collect();
    Reply::Array(vec![
        Reply::bulk(c.name),
        Reply::Int(i64::from(c.arity)),
        Reply::Set(flags),
        Reply::Int(i64::from(first)),
        Reply::Int(i64::from(last)),
        Reply::Int(i64::from(step)),
        Reply::Set(
            super::acl_categories(c)
                .into_iter()
                .map(|cat| Reply::Simple(format!("@{cat}").into()))
                .collect(),
        ),
        Reply::Array(
            c.route
                .tips()
                .iter()
                .chain(own_tips(c.name))
                .map(|t| Reply::bulk(*t))
                .collect(),
        ),
        Reply::Array(key_specs),
        Reply::Array(subs),
    ])
}

/// The tips Redis 7's table gives a command (or `container|sub`) beyond its route's
/// ([`super::Route::tips`]): replies that differ from run to run or in their order, and the
/// shard policies of keyless commands (a Redis Cluster client sends PING, WAIT, SCRIPT LOAD,
/// CONFIG SET, ... to every node and combines the answers; each node answers for itself).
/// Not MSETNX's `multi_shard` (split by slot it would lose its atomicity), nor FUNCTION
/// LOAD's, DELETE's and RESTORE's `all_shards`: a cluster's members share their libraries,
/// so the second node would answer that the library exists, or not
/// (`command_tips_match_redis`).
fn own_tips(name: &str) -> &'static [&'static str] {
    const OUTPUT: &[&str] = &["nondeterministic_output"];
    const ORDER: &[&str] = &["nondeterministic_output_order"];
    const ALL_NODES_OK: &[&str] = &["request_policy:all_nodes", "response_policy:all_succeeded"];
    const ALL_SHARDS_OK: &[&str] = &["request_policy:all_shards", "response_policy:all_succeeded"];
    const NODE_REPORT: &[&str] = &[
        "nondeterministic_output",
        "request_policy:all_nodes",
        "response_policy:special",
    ];
    const SHARD_REPORT: &[&str] = &[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ];
    match name {
        "config|set" | "script|flush" | "script|load" | "latency|reset" | "slowlog|reset" => {
            ALL_NODES_OK
        }
        "memory|purge" | "function|flush" => ALL_SHARDS_OK,
        "script|exists" => &[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ],
        "script|kill" | "function|kill" => {
            &["request_policy:all_shards", "response_policy:one_succeeded"]
        }
        "memory|malloc-stats" | "memory|doctor" | "memory|stats" | "function|stats" => SHARD_REPORT,
        "latency|latest" | "latency|history" | "latency|graph" | "latency|doctor"
        | "latency|histogram" => NODE_REPORT,
        "slowlog|get" => &["request_policy:all_nodes", "nondeterministic_output"],
        "slowlog|len" => &[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ],
        "function|list" | "command|info" | "command|list" | "command|docs" | "module|list" => ORDER,
        "client|info"
        | "client|list"
        | "object|freq"
        | "object|encoding"
        | "object|idletime"
        | "object|refcount"
        | "cluster|replicas"
        | "cluster|info"
        | "cluster|shards"
        | "cluster|slots"
        | "cluster|nodes"
        | "cluster|getkeysinslot"
        | "cluster|slaves"
        | "cluster|count-failure-reports"
        | "xinfo|consumers" => OUTPUT,
        "sscan" | "xpending" | "xadd" | "spop" | "xautoclaim" | "zscan" | "pttl" | "hscan"
        | "ttl" | "xclaim" | "xtrim" | "srandmember" | "dump" | "lastsave" | "migrate"
        | "zrandmember" | "hrandfield" | "time" => OUTPUT,
        "sdiff" | "smembers" | "hgetall" | "command" | "hkeys" | "sunion" | "hvals" | "sinter" => {
            ORDER
        }
        "ping" => &["request_policy:all_shards", "response_policy:all_succeeded"],
        "wait" => &["request_policy:all_shards", "response_policy:agg_min"],
        _ => &[],
    }
}

fn doc_map(name: &str, summary: String, c: &CommandSpec) -> Vec<(Reply, Reply)> {
    let mut doc = vec![
        (Reply::bulk("summary"), Reply::bulk(summary)),
        (Reply::bulk("since"), Reply::bulk(c.since)),
        (Reply::bulk("group"), Reply::bulk(c.group)),
        (Reply::bulk("complexity"), Reply::bulk("O(1)")),
    ];
    if let Some(line) = super::docs::syntax(name) {
        let args = super::docs::parse(line);
        if !args.is_empty() {
            doc.push((
                Reply::bulk("arguments"),
                Reply::Array(args.iter().map(super::docs::Arg::to_reply).collect()),
            ));
        }
    }
    doc
}

fn command_docs(c: &CommandSpec) -> Reply {
    let mut doc = doc_map(c.name, c.summary.to_string(), c);
    if !c.subcommands.is_empty() {
        let subs = c
            .subcommands
            .iter()
            .map(|s| {
                let full = format!("{}|{}", c.name, s);
                let summary = format!("{} {}", c.name.to_uppercase(), s.to_uppercase());
                let doc = doc_map(&full, summary, c);
                (Reply::bulk(full), Reply::Map(doc))
            })
            .collect();
        doc.push((Reply::bulk("subcommands"), Reply::Map(subs)));
    }
    Reply::Map(doc)
}

const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all commands.",
    "COUNT",
    "    Return the total number of commands in this server.",
    "LIST",
    "    Return a list of all commands in this server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple commands.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple commands.",
    "GETKEYS <full-command>",
    "    Return the keys from a full command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full command.",
    "HELP",
    "    Print this help.",
];

pub fn command(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let _ = ctx;
    let Some(sub) = args.get(1) else {
        return Reply::Array(TABLE.iter().map(command_info).collect());
    };
    let named = || args[2..].iter().map(|n| lookup_listed(n));
    match &sub.to_ascii_lowercase()[..] {
        b"count" if args.len() == 2 => Reply::Int(TABLE.len() as i64),
        b"list" => {
            let pattern = match &args[2..] {
                [] => None,
                [f, k, v] if is(f, "FILTERBY") && is(k, "PATTERN") => Some(v.clone()),
                [f, k, v] if is(f, "FILTERBY") && (is(k, "ACLCAT") || is(k, "MODULE")) => {
                    let v = v.to_ascii_lowercase();
                    if !is(k, "ACLCAT") {
                        return Reply::Array(Vec::new());
                    }
                    let has = |cats: &[&str]| cats.iter().any(|cat| cat.as_bytes() == &v[..]);
                    // A container's subcommands by their own categories, as `container|sub`,
                    // after it (listed itself by its own), as Redis 7 lists them.
                    let mut out = Vec::new();
                    for c in TABLE {
                        if has(&super::acl_categories(c)) {
                            out.push(Reply::bulk(c.name));
                        }
                        for sub in c.subcommands {
                            if has(&super::acl::sub_categories(c, sub)) {
                                out.push(Reply::bulk(format!("{}|{sub}", c.name)));
                            }
                        }
                    }
                    return Reply::Array(out);
                }
                _ => return err(super::ERR_SYNTAX),
            };
            // Each container's subcommands follow it as `container|sub`, as in Redis.
            Reply::Array(
                TABLE
                    .iter()
                    .flat_map(|c| {
                        std::iter::once(c.name.to_string())
                            .chain(c.subcommands.iter().map(|s| format!("{}|{s}", c.name)))
                    })
                    .filter(|name| {
                        pattern
                            .as_ref()
                            .is_none_or(|p| glob_match(p, name.as_bytes(), true))
                    })
                    .map(Reply::bulk)
                    .collect(),
            )
        }
        b"info" if args.len() == 2 => Reply::Array(TABLE.iter().map(command_info).collect()),
        b"info" => Reply::Array(args[2..].iter().map(|n| info_of(n)).collect()),
        b"docs" if args.len() == 2 => Reply::Map(
            TABLE
                .iter()
                .map(|c| (Reply::bulk(c.name), command_docs(c)))
                .collect(),
        ),
        b"docs" => Reply::Map(
            named()
                .flatten()
                .map(|c| (Reply::bulk(c.name), command_docs(c)))
                .collect(),
        ),
        b"getkeys" | b"getkeysandflags" if args.len() >= 3 => {
            let Some(spec) = lookup_listed(&args[2]) else {
                return err("ERR Invalid command specified");
            };
            let cmd_args = &args[2..];
            // Redis's order: keys at all, then the arity.
            if !spec.has_keys() {
                return err("ERR The command has no key arguments");
            }
            if !spec.takes(cmd_args.len()) {
                return err("ERR Invalid number of arguments specified for command");
            }
            if sub.eq_ignore_ascii_case(b"getkeysandflags") {
                return keys_and_flags(spec, cmd_args);
            }
            let mut keys = spec.keys(cmd_args);
            if spec.name == "sort" {
                keys.extend(sort_store_key(cmd_args).cloned());
            }
            if matches!(spec.name, "georadius" | "georadiusbymember") {
                keys.extend(super::geo::store_key(cmd_args).cloned());
            }
            if keys.is_empty() {
                // Scripts and functions may name no key (Redis's `no_mandatory_keys`): the
                // keyed rows of the scripting category.
                if spec.acl.contains(&"scripting") {
                    return Reply::Array(Vec::new());
                }
                return err("ERR Invalid arguments specified for command");
            }
            Reply::Array(keys.into_iter().map(Reply::Bulk).collect())
        }
        b"help" => help_reply(COMMAND_HELP),
        b"count" | b"getkeys" | b"getkeysandflags" => wrong_arity(&format!(
            "command|{}",
            String::from_utf8_lossy(&sub.to_ascii_lowercase())
        )),
        _ => unknown_subcommand("command", sub),
    }
}

/// COMMAND GETKEYSANDFLAGS: each key with what the command does to it (Redis's key
/// specifications, `keyspecs`); a command without them, Shoal's own, lists its keys with no
/// flags.
fn keys_and_flags(spec: &CommandSpec, cmd_args: &[Bytes]) -> Reply {
    let name = match cmd_args.get(1) {
        Some(sub) if !spec.subcommands.is_empty() => {
            format!(
                "{}|{}",
                spec.name,
                String::from_utf8_lossy(sub).to_ascii_lowercase()
            )
        }
        _ => spec.name.to_string(),
    };
    let found = super::keyspecs::keys_and_flags(&name, cmd_args)
        .unwrap_or_else(|| spec.key_positions(cmd_args).map(|i| (i, 0)).collect());
    if found.is_empty() {
        // Scripts and functions may name no key (Redis's `no_mandatory_keys`).
        if spec.acl.contains(&"scripting") {
            return Reply::Array(Vec::new());
        }
        return err("ERR Invalid arguments specified for command");
    }
    Reply::Array(
        found
            .into_iter()
            .map(|(at, flags)| {
                let names = super::keyspecs::flag::NAMES
                    .iter()
                    .filter(|(bit, _)| flags & bit != 0)
                    .map(|(_, n)| Reply::Simple((*n).into()))
                    .collect();
                Reply::Array(vec![Reply::Bulk(cmd_args[at].clone()), Reply::Set(names)])
            })
            .collect(),
    )
}

// ---- CONFIG --------------------------------------------------------------------------

type Getter = fn(&NodeConfig) -> String;

/// A text setting any value of which CONFIG SET takes as it is.
macro_rules! text {
    ($name:literal, $field:ident) => {
        (
            $name,
            |c| c.$field.clone(),
            Some(|c, v| {
                c.$field = v.to_string();
                Ok(())
            }),
        )
    };
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}
type Setter = fn(&mut NodeConfig, &str) -> Result<(), String>;

/// CONFIG SET of `save` or `appendonly`: `off` (an empty save, appendonly no) is what is.
fn no_persistence(off: bool) -> Result<(), String> {
    if off {
        Ok(())
    } else {
        Err(
            "Shoal has no save points and no append-only file (SAVE and BGSAVE write a \
             snapshot when asked): only an empty 'save' and 'appendonly no' are taken"
                .into(),
        )
    }
}

/// `busy-reply-threshold` and its alias `lua-time-limit`.
fn set_busy_reply_threshold(c: &mut NodeConfig, v: &str) -> Result<(), String> {
    c.busy_reply_threshold = ranged(v, 0, i64::MAX)? as u64;
    Ok(())
}

fn parse_num<T: FromStr>(v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())
}

/// An integer within `min..=max`, refused with Redis's words otherwise.
/// `min-replicas-to-write` (and its older name).
fn set_min_replicas(c: &mut NodeConfig, v: &str) -> Result<(), String> {
    c.min_replicas_to_write = ranged(v, 0, i64::from(i32::MAX))? as u32;
    Ok(())
}

fn ranged(v: &str, min: i64, max: i64) -> Result<i64, String> {
    let n: i64 = parse_num(v)?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "argument must be between {min} and {max} inclusive"
        ))
    }
}

/// The least `client-query-buffer-limit` CONFIG SET takes (Redis's 1 MB).
const MIN_QUERY_BUFFER_LIMIT: u64 = 1024 * 1024;

fn parse_size(v: &str) -> Result<ByteSize, String> {
    v.parse()
        .map_err(|_| "argument must be a memory value".to_string())
}

/// CONFIG GET/SET parameters: name, getter, setter (None = immutable at run time).
const PARAMS: &[(&str, Getter, Option<Setter>)] = &[
    ("bind", |c| c.bind.clone(), None),
    ("port", |c| c.port.to_string(), None),
    (
        "maxmemory",
        |c| c.maxmemory.0.to_string(),
        Some(|c, v| {
            c.maxmemory = parse_size(v)?;
            Ok(())
        }),
    ),
    (
        "maxmemory-policy",
        |c| c.maxmemory_policy.clone(),
        Some(|c, v| {
            let p = EvictionPolicy::from_str(v).map_err(|_| "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction".to_string())?;
            c.maxmemory_policy = p.name().to_string();
            Ok(())
        }),
    ),
    (
        "maxmemory-samples",
        |c| c.maxmemory_samples.to_string(),
        Some(|c, v| {
            let n: usize = parse_num(v)?;
            if !(1..=64).contains(&n) {
                return Err("argument must be between 1 and 64 inclusive".into());
            }
            c.maxmemory_samples = n;
            Ok(())
        }),
    ),
    (
        "lfu-log-factor",
        |c| c.lfu_log_factor.to_string(),
        Some(|c, v| {
            c.lfu_log_factor = ranged(v, 0, i64::from(i32::MAX))? as u32;
            Ok(())
        }),
    ),
    (
        "lfu-decay-time",
        |c| c.lfu_decay_time.to_string(),
        Some(|c, v| {
            c.lfu_decay_time = ranged(v, 0, i64::from(i32::MAX))? as u32;
            Ok(())
        }),
    ),
    // Redis's name for `shutdown-timeout-ms`, in seconds.
    (
        "shutdown-timeout",
        |c| (c.shutdown_timeout_ms / 1000).to_string(),
        Some(|c, v| {
            c.shutdown_timeout_ms = ranged(v, 0, i64::from(i32::MAX))? as u64 * 1000;
            Ok(())
        }),
    ),
    // Redis's name for the worker threads.
    ("io-threads", |c| c.threads.to_string(), None),
    text!("requirepass", requirepass),
    ("aclfile", |c| c.aclfile.clone(), None),
    (
        "maxclients",
        |c| c.maxclients.to_string(),
        Some(|c, v| {
            let n: usize = parse_num(v)?;
            if n == 0 {
                return Err("argument must be between 1 and 4294967295 inclusive".into());
            }
            let fits = crate::fdlimit::fit(n).map_or(0, |f| f.maxclients);
            if fits < n {
                return Err(format!("The operating system is not able to handle the specified number of clients, try with {fits}"));
            }
            c.maxclients = n;
            Ok(())
        }),
    ),
    (
        "timeout",
        |c| c.timeout.to_string(),
        Some(|c, v| {
            c.timeout = ranged(v, 0, i32::MAX.into())? as u64;
            Ok(())
        }),
    ),
    (
        "slowlog-log-slower-than",
        |c| c.slowlog_log_slower_than.to_string(),
        Some(|c, v| {
            c.slowlog_log_slower_than = ranged(v, -1, i64::MAX)?;
            Ok(())
        }),
    ),
    (
        "latency-monitor-threshold",
        |c| c.latency_monitor_threshold.to_string(),
        Some(|c, v| {
            c.latency_monitor_threshold = ranged(v, 0, i64::MAX)? as u64;
            Ok(())
        }),
    ),
    (
        "slowlog-max-len",
        |c| c.slowlog_max_len.to_string(),
        Some(|c, v| {
            c.slowlog_max_len = ranged(v, 0, i32::MAX.into())? as u64;
            Ok(())
        }),
    ),
    (
        "tracking-table-max-keys",
        |c| c.tracking_table_max_keys.to_string(),
        Some(|c, v| {
            c.tracking_table_max_keys = ranged(v, 0, i64::MAX)? as u64;
            Ok(())
        }),
    ),
    (
        "acllog-max-len",
        |c| c.acllog_max_len.to_string(),
        Some(|c, v| {
            c.acllog_max_len = ranged(v, 0, i64::MAX)? as u64;
            Ok(())
        }),
    ),
    (
        "proto-max-bulk-len",
        |c| c.proto_max_bulk_len.0.to_string(),
        Some(|c, v| {
            let n = parse_size(v)?;
            crate::config::check_bulk_len(n.0).map_err(|e| format!("argument {e}"))?;
            c.proto_max_bulk_len = n;
            Ok(())
        }),
    ),
    (
        "proto-max-multibulk-len",
        |c| c.proto_max_multibulk_len.to_string(),
        Some(|c, v| {
            let n: usize = parse_num(v)?;
            if n == 0 {
                return Err("argument must be at least 1".into());
            }
            c.proto_max_multibulk_len = n;
            Ok(())
        }),
    ),
    (
        "proto-inline-max-size",
        |c| c.proto_inline_max_size.0.to_string(),
        Some(|c, v| {
            c.proto_inline_max_size = parse_size(v)?;
            Ok(())
        }),
    ),
    (
        "client-output-buffer-limit",
        |c| c.client_output_buffer_limit.to_string(),
        Some(|c, v| {
            c.client_output_buffer_limit = c.client_output_buffer_limit.apply(v)?;
            Ok(())
        }),
    ),
    // Enforced by the RESP front end while a request arrives.
    (
        "client-query-buffer-limit",
        |c| c.client_query_buffer_limit.0.to_string(),
        Some(|c, v| {
            let size = parse_size(v)?;
            if !(MIN_QUERY_BUFFER_LIMIT..=i64::MAX as u64).contains(&size.0) {
                return Err(format!(
                    "argument must be between {MIN_QUERY_BUFFER_LIMIT} and {} inclusive",
                    i64::MAX
                ));
            }
            c.client_query_buffer_limit = size;
            Ok(())
        }),
    ),
    // Enforced by the connections (`crate::client::ClientRegistry::evict`).
    (
        "maxmemory-clients",
        |c| c.maxmemory_clients.to_string(),
        Some(|c, v| {
            c.maxmemory_clients = v.parse()?;
            Ok(())
        }),
    ),
    (
        "shutdown-timeout-ms",
        |c| c.shutdown_timeout_ms.to_string(),
        Some(|c, v| {
            c.shutdown_timeout_ms = parse_num(v)?;
            Ok(())
        }),
    ),
    (
        "hz",
        |c| c.hz.to_string(),
        Some(|c, v| {
            let n: u32 = parse_num(v)?;
            if !(1..=500).contains(&n) {
                return Err("argument must be between 1 and 500 inclusive".into());
            }
            c.hz = n;
            Ok(())
        }),
    ),
    ("threads", |c| c.threads.to_string(), None),
    ("log-level", |c| c.log_level.clone(), None),
    (
        "memcache-port",
        |c| c.memcache_port.map(|p| p.to_string()).unwrap_or_default(),
        None,
    ),
    (
        "metrics-port",
        |c| c.metrics_port.map(|p| p.to_string()).unwrap_or_default(),
        None,
    ),
    ("unixsocket", |c| c.unixsocket.clone(), None),
    ("unixsocketperm", |c| c.unixsocketperm.to_string(), None),
    (
        "memcache-unixsocket",
        |c| c.memcache_unixsocket.clone(),
        None,
    ),
    (
        "memcache-unixsocketperm",
        |c| c.memcache_unixsocketperm.to_string(),
        None,
    ),
    (
        "memcache-max-item-size",
        |c| c.memcache_max_item_size.0.to_string(),
        Some(|c, v| {
            let n = parse_size(v)?;
            if n.0 < 1024 || n.0 > c.proto_max_bulk_len.0 {
                return Err("argument must be between 1024 and proto-max-bulk-len".into());
            }
            c.memcache_max_item_size = n;
            Ok(())
        }),
    ),
    (
        "tls-port",
        |c| c.tls_port.map(|p| p.to_string()).unwrap_or_default(),
        None,
    ),
    // The files are read again by every CONFIG SET that names a tls-* setting (the same
    // path too: that is how renewed certificates are put in force).
    text!("tls-cert-file", tls_cert_file),
    text!("tls-key-file", tls_key_file),
    text!("tls-client-cert-file", tls_client_cert_file),
    text!("tls-client-key-file", tls_client_key_file),
    text!("tls-ca-cert-file", tls_ca_cert_file),
    text!("tls-ca-cert-dir", tls_ca_cert_dir),
    (
        "tls-auth-clients",
        |c| c.tls_auth_clients.clone(),
        Some(|c, v| {
            let v = v.to_ascii_lowercase();
            if !matches!(v.as_str(), "yes" | "no" | "optional") {
                return Err("argument(s) must be one of the following: no, yes, optional".into());
            }
            c.tls_auth_clients = v;
            Ok(())
        }),
    ),
    text!("tls-protocols", tls_protocols),
    ("tls-cluster", |c| yes_no(c.tls_cluster), None),
    ("tls-memcache", |c| yes_no(c.tls_memcache), None),
    ("node-name", |c| c.resolved_node_name(), None),
    ("cluster-name", |c| c.cluster_name.clone(), None),
    // The secret is the cluster's key: never shown, only whether one is set.
    (
        "cluster-secret",
        |c| {
            if c.cluster_secret.is_empty() {
                String::new()
            } else {
                "(set)".into()
            }
        },
        None,
    ),
    ("cluster-nodes", |c| c.cluster_nodes.join(","), None),
    ("replicas", |c| c.replicas.to_string(), None),
    ("write-ack", |c| c.write_ack.clone(), None),
    (
        "min-replicas-to-write",
        |c| c.min_replicas_to_write.to_string(),
        Some(set_min_replicas),
    ),
    // Redis's older name for it.
    (
        "min-slaves-to-write",
        |c| c.min_replicas_to_write.to_string(),
        Some(set_min_replicas),
    ),
    (
        "cluster-timeout-ms",
        |c| c.cluster_timeout_ms.to_string(),
        None,
    ),
    ("tombstone-ttl-ms", |c| c.tombstone_ttl_ms.to_string(), None),
    ("cluster-mode", |c| c.cluster_mode.clone(), None),
    (
        "cluster-port",
        |c| c.cluster_port.map(|p| p.to_string()).unwrap_or_default(),
        None,
    ),
    (
        "gossip-port",
        |c| c.gossip_port.map(|p| p.to_string()).unwrap_or_default(),
        None,
    ),
    ("cluster-seeds", |c| c.cluster_seeds.join(","), None),
    (
        "cluster-announce-ip",
        |c| c.cluster_announce_ip.clone(),
        None,
    ),
    ("join-timeout-ms", |c| c.join_timeout_ms.to_string(), None),
    (
        "cluster-bootstrap",
        |c| if c.cluster_bootstrap { "yes" } else { "no" }.to_string(),
        None,
    ),
    (
        "allow-weak-cluster-secret",
        |c| {
            if c.allow_weak_cluster_secret {
                "yes"
            } else {
                "no"
            }
            .to_string()
        },
        None,
    ),
    ("handoff-rate", |c| c.handoff_rate.0.to_string(), None),
    ("leave-timeout-ms", |c| c.leave_timeout_ms.to_string(), None),
    // Read-only facts clients ask for.
    ("databases", |_| super::db::DATABASES.to_string(), None),
    (
        "enable-debug-command",
        |c| c.enable_debug_command.clone(),
        None,
    ),
    (
        "stream-node-max-bytes",
        |c| c.stream_node_max_bytes.0.to_string(),
        Some(|c, v| {
            c.stream_node_max_bytes = parse_size(v)?;
            Ok(())
        }),
    ),
    (
        "stream-node-max-entries",
        |c| c.stream_node_max_entries.to_string(),
        Some(|c, v| {
            c.stream_node_max_entries = ranged(v, 0, i64::MAX)? as u64;
            Ok(())
        }),
    ),
    // No persistence: turning it off (what tools send to a cache) is taken, turning it on
    // refused.
    (
        "save",
        |_| String::new(),
        Some(|_, v| no_persistence(v.trim().is_empty())),
    ),
    (
        "appendonly",
        |_| "no".into(),
        Some(|_, v| no_persistence(v.eq_ignore_ascii_case("no"))),
    ),
    ("cluster-enabled", |_| "no".into(), None),
    // Read by tools and client libraries; what they mean here.
    (
        "loglevel",
        |c| {
            match c.log_level.as_str() {
                "trace" => "debug",
                "debug" => "verbose",
                "info" => "notice",
                _ => "warning",
            }
            .into()
        },
        None,
    ),
    // How long a script runs before the others are answered BUSY (`crate::busy`).
    (
        "busy-reply-threshold",
        |c| c.busy_reply_threshold.to_string(),
        Some(set_busy_reply_threshold),
    ),
    (
        "lua-time-limit",
        |c| c.busy_reply_threshold.to_string(),
        Some(set_busy_reply_threshold),
    ),
    ("dbfilename", |c| c.dbfilename.clone(), None),
    (
        "dir",
        |c| crate::snapshot::dir(c).display().to_string(),
        None,
    ),
    // Taken by connections accepted after the change, as in Redis.
    (
        "tcp-keepalive",
        |c| c.tcp_keepalive.to_string(),
        Some(|c, v| {
            c.tcp_keepalive = ranged(v, 0, i32::MAX.into())? as u64;
            Ok(())
        }),
    ),
    ("protected-mode", |_| "no".into(), None),
    // Shown in Redis's canonical order (`notify::format`); the engine publishes what it says.
    (
        "notify-keyspace-events",
        |c| {
            crate::notify::parse(&c.notify_keyspace_events)
                .map(crate::notify::format)
                .unwrap_or_default()
        },
        Some(|c, v| {
            crate::notify::parse(v).ok_or(crate::notify::INVALID)?;
            // Kept as given: Redis's display of `A` hides an `n` that still counts.
            c.notify_keyspace_events = v.to_string();
            Ok(())
        }),
    ),
];

const CONFIG_HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Not supported by Shoal: edit the configuration file instead.",
    "HELP",
    "    Print this help.",
];

pub fn config(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    match &sub[..] {
        b"get" if args.len() >= 3 => {
            // Redis: a name without glob characters is echoed as typed; a pattern lists the
            // canonical names it matches. Each parameter appears once.
            let settings = ctx.engine.settings();
            let mut out = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for p in &args[2..] {
                let is_glob = p.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
                // Shoal's rows with their getters, then Redis's idle ones (`inert`); a
                // value is read only for a name that matches.
                let rows = PARAMS
                    .iter()
                    .map(|(name, get, _)| (*name, Some(get)))
                    .chain(super::inert::names().map(|name| (name, None)));
                for (name, get) in rows {
                    let hit = if is_glob {
                        !super::inert::HIDDEN.contains(&name)
                            && glob_match(p, name.as_bytes(), true)
                    } else {
                        p.eq_ignore_ascii_case(name.as_bytes())
                    };
                    if hit && seen.insert(name) {
                        let shown = if is_glob {
                            Reply::bulk(name)
                        } else {
                            Reply::Bulk(p.clone())
                        };
                        let value = match get {
                            Some(get) => get(&settings),
                            None => super::inert::get(&settings.inert, name).unwrap_or_default(),
                        };
                        out.push((shown, Reply::bulk(value)));
                    }
                }
            }
            Reply::Map(out)
        }
        b"set" if args.len() >= 4 && args.len().is_multiple_of(2) => {
            config_set(ctx.engine, &args[2..])
        }
        b"resetstat" if args.len() == 2 => {
            ctx.engine.stats.reset();
            ctx.engine.clients.reset_evicted();
            ctx.engine.store.reset_stats();
            ctx.engine.mc_stats.store_counters_zeroed();
            ctx.engine.lazyfree.reset();
            ctx.engine.commands.reset();
            Reply::ok()
        }
        b"rewrite" if args.len() == 2 => {
            err("ERR CONFIG REWRITE is not supported by Shoal; edit the configuration file")
        }
        b"help" => help_reply(CONFIG_HELP),
        b"get" | b"set" | b"resetstat" | b"rewrite" => {
            wrong_arity(&format!("config|{}", String::from_utf8_lossy(&sub)))
        }
        _ => unknown_subcommand("config", &args[1]),
    }
}

/// Applies every pair or none (Redis 7 semantics), then pushes the result into the store.
fn config_set(node: &Engine, pairs: &[Bytes]) -> Reply {
    // One writer at a time: the settings are read, what lives above the engine is applied
    // (TLS files, read without holding the settings lock, which every connection takes
    // when the settings' version moved), then the result is committed.
    let _one_writer = node.settings_writer();
    let result = (|| {
        let mut next = node.settings();
        let mut seen = std::collections::HashSet::new();
        let mut names = Vec::new();
        for pair in pairs.chunks_exact(2) {
            let typed = String::from_utf8_lossy(&pair[0]).into_owned();
            let name = typed.to_ascii_lowercase();
            let value = String::from_utf8_lossy(&pair[1]).into_owned();
            let Some((_, get, setter)) = PARAMS.iter().find(|(n, _, _)| *n == name) else {
                // One of Redis's that changes nothing here: checked and kept.
                let Some((canonical, _, kind)) = super::inert::find(&name) else {
                    return Err(format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{typed}'"
                    ));
                };
                if !seen.insert(canonical.to_string()) {
                    return Err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"));
                }
                let value = super::inert::check(*kind, &value).map_err(|why| {
                    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
                })?;
                next.inert.insert(canonical.to_string(), value);
                continue;
            };
            if !seen.insert(name.clone()) {
                return Err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"));
            }
            names.push(name.clone());
            let Some(set) = setter else {
                // Its value as it is changes nothing, so it is taken (Redis can change `port`
                // and `bind`, and tools write back what CONFIG GET * showed).
                if get(&next) == value {
                    names.pop();
                    continue;
                }
                return Err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"));
            };
            set(&mut next, &value).map_err(|why| {
                format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
            })?;
        }
        // Settings applied above the engine (TLS files are read here); on a refusal
        // nothing changes.
        if let Some(apply) = node.settings_hook.get() {
            apply(&names, &next).map_err(|(name, why)| {
                format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
            })?;
        }
        node.update_settings(|settings| *settings = next.clone());
        if names.iter().any(|n| n == "tracking-table-max-keys") {
            node.tracker.bound_set();
        }
        // `requirepass` is the default user's password.
        if names.iter().any(|n| n == "requirepass") {
            super::acl::registry(node).set_requirepass(&next.requirepass);
        }
        Ok(next)
    })();
    match result {
        Ok(s) => {
            node.refresh_memory();
            if let Ok(p) = EvictionPolicy::from_str(&s.maxmemory_policy) {
                node.store.set_policy(p);
            }
            node.store.set_samples(s.maxmemory_samples);
            node.store.set_lfu_log_factor(s.lfu_log_factor);
            node.store.set_lfu_decay_time(s.lfu_decay_time);
            node.commands
                .configure_slowlog(s.slowlog_log_slower_than, s.slowlog_max_len);
            node.latency.configure(s.latency_monitor_threshold);
            node.set_notify_flags(crate::notify::parse(&s.notify_keyspace_events).unwrap_or(0));
            node.set_stream_nodes(s.stream_node_max_bytes.0, s.stream_node_max_entries);
            super::inert::apply_encodings(&s.inert);
            // Redis checks nothing with min-replicas-max-lag 0.
            let no_lag =
                super::inert::get(&s.inert, "min-replicas-max-lag").as_deref() == Some("0");
            node.set_min_replicas(if no_lag { 0 } else { s.min_replicas_to_write });
            // A lower `maxmemory-clients` (or `maxmemory` under a percentage) evicts before
            // the next command, as Redis's next event-loop turn does.
            let clients_limit = Engine::client_memory_limit_of(&s);
            if clients_limit > 0 && node.clients.account_all(clients_limit) {
                node.clients.evict_over(clients_limit);
            }
            Reply::ok()
        }
        Err(e) => Reply::error(e),
    }
}

// ---- SLOWLOG, ROLE -------------------------------------------------------------------

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];

/// SLOWLOG GET|LEN|RESET|HELP over the node's slow log (`cmdstats`).
pub fn slowlog(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let log = &ctx.engine.commands;
    let sub = args[1].to_ascii_lowercase();
    match &sub[..] {
        b"get" if args.len() <= 3 => {
            let count = match args.get(2) {
                None => Some(10),
                Some(a) => match crate::cmd::parse_i64(a) {
                    Some(-1) => None,
                    Some(n) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                    // Redis gives this text for a non-integer too.
                    _ => return err("ERR count should be greater than or equal to -1"),
                },
            };
            Reply::Array(
                log.slow_entries(count)
                    .into_iter()
                    .map(|e| {
                        Reply::Array(vec![
                            Reply::Int(e.id as i64),
                            Reply::Int(e.unix_secs as i64),
                            Reply::Int(e.usec as i64),
                            Reply::Array(e.args.into_iter().map(Reply::Bulk).collect()),
                            Reply::bulk(e.peer),
                            Reply::bulk(e.name),
                        ])
                    })
                    .collect(),
            )
        }
        b"len" if args.len() == 2 => Reply::Int(log.slow_len() as i64),
        b"reset" if args.len() == 2 => {
            log.slow_reset();
            Reply::ok()
        }
        b"help" if args.len() == 2 => help_reply(SLOWLOG_HELP),
        // GET's arity (-2) lets a third argument through; Redis's handler then refuses it.
        b"get" => Reply::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
            String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
        )),
        b"len" | b"reset" | b"help" => {
            wrong_arity(&format!("slowlog|{}", String::from_utf8_lossy(&sub)))
        }
        _ => unknown_subcommand("slowlog", &args[1]),
    }
}

/// WAIT numreplicas timeout: how many replicas have every write this connection made: a
/// single node has none (0, as a Redis without replicas); a cluster node with `write-ack =
/// all` and every member reachable the number of a key's replicas (each acknowledged write
/// went to all of them), else 0. Asked for more, it blocks the client until `timeout` (0:
/// for ever, as in Redis; CLIENT UNBLOCK ends it) and then answers that number, as Redis
/// does; inside MULTI it answers at once.
pub fn wait(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if super::parse_i64(&args[1]).is_none() {
        return super::err(super::ERR_NOT_INTEGER);
    }
    let deadline_ms = match super::wait::parse_timeout_ms(&args[2], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return e,
    };
    replicas_or_block(ctx, args, deadline_ms)
}

/// WAITAOF numlocal numreplicas timeout (Redis 7.2): no append-only file here, so a local
/// count is refused as Redis refuses it with `appendonly no`; the replicas as WAIT counts
/// them, after its timeout when it asks for more.
pub fn waitaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    // Redis 7.2's checks, in its order.
    let local = match super::parse_i64(&args[1]) {
        None => return super::err(super::ERR_NOT_INTEGER),
        Some(n) if !(0..=1).contains(&n) => {
            return super::err("ERR value is out of range, value must between 0 and 1")
        }
        Some(n) => n,
    };
    match super::parse_i64(&args[2]) {
        None => return super::err(super::ERR_NOT_INTEGER),
        Some(n) if n < 0 => return super::err("ERR value is out of range, must be positive"),
        Some(_) => {}
    }
    let deadline_ms = match super::wait::parse_timeout_ms(&args[3], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return e,
    };
    if local > 0 {
        return super::err(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        );
    }
    replicas_or_block(ctx, args, deadline_ms)
}

/// WAIT's and WAITAOF's answer once their arguments passed: the replicas that have the
/// writes, in the command's reply (`wait::replicas_wanted`). Asked for more, the client
/// blocks until `deadline_ms` (no key wakes it: its timeout, CLIENT UNBLOCK or, in a
/// cluster, the layer above's recount ends it), unless it may not block (MULTI, a script).
fn replicas_or_block(ctx: &mut Ctx<'_>, args: &[Bytes], deadline_ms: Option<u64>) -> Reply {
    let (wanted, answer) = super::wait::replicas_wanted(args);
    let acked = acknowledged_replicas(ctx);
    let reply = answer(acked);
    if wanted > acked && !ctx.session.no_block {
        ctx.session.block = Some(crate::blocking::Block {
            keys: Vec::new(),
            deadline_ms,
            timeout_reply: reply.clone(),
            args: None,
        });
    }
    reply
}

/// The replicas WAIT counts (see [`wait`]).
fn acknowledged_replicas(ctx: &Ctx<'_>) -> i64 {
    ctx.host
        .cluster()
        .and_then(|c| c.acknowledged_replicas())
        .unwrap_or(0)
}

/// DEBUG: refused unless `enable-debug-command` allows it, as Redis 7 (`no` by default).
const ERR_DEBUG: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is \
     set to \"local\", you can run it from a local connection, otherwise you need to set this \
     option in the configuration file, and then restart the server.";

/// MODULE LOAD, LOADEX and UNLOAD: refused, as Redis 7 refuses them by default
/// (`enable-module-command no`).
const ERR_MODULE: &str = "ERR MODULE command not allowed. If the enable-module-command option \
     is set to \"local\", you can run it from a local connection, otherwise you need to set \
     this option in the configuration file, and then restart the server.";

/// Whether a client at `peer` may run DEBUG under `enable-debug-command` `setting` (`yes`,
/// `local`: from a loopback address or a Unix socket, as Redis's `islocalClient`; else
/// `no`).
pub fn debug_allowed(setting: &str, peer: &crate::client::ClientAddr) -> bool {
    match setting {
        "yes" => true,
        "local" => peer.is_local(),
        _ => false,
    }
}

/// Redis's protected commands, refused before they are queued or run (Redis's
/// `processCommand`): DEBUG unless `debug` (see [`debug_allowed`]), and MODULE LOAD /
/// LOADEX / UNLOAD with their arguments.
pub fn protected_refusal(spec: &CommandSpec, args: &[Bytes], debug: bool) -> Option<Reply> {
    match spec.name {
        "debug" if !debug => Some(err(ERR_DEBUG)),
        "module"
            if args.len() >= 3 && super::names_subcommand(&["load", "loadex", "unload"], args) =>
        {
            Some(err(ERR_MODULE))
        }
        _ => None,
    }
}

const DEBUG_HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message.",
    "OBJECT <key>",
    "    Show low level info about the `key` and associated value.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "SET-DISABLE-DENY-SCRIPTS <0|1>",
    "    Let scripts call DEBUG (1) or not (0, the default).",
    "JMAP, LOG <message>, CHANGE-REPL-ID, RELOAD [MERGE] [NOFLUSH] [NOSAVE],",
    "QUICKLIST-PACKED-THRESHOLD <size>, REPLYBUFFER <option> <value>",
    "    Accepted and change nothing (Shoal loads no dump: RELOAD leaves the data as",
    "    it is; NOFLUSH without MERGE is refused, as Redis refuses the duplicates).",
    "HELP",
    "    Print this help.",
];

/// DEBUG, where `enable-debug-command` lets it run ([`protected_refusal`]): the subcommands
/// client test suites use (ERROR, SLEEP, OBJECT, PROTOCOL, DIGEST, SET-ACTIVE-EXPIRE,
/// PAUSE-CRON), and
/// no-ops for those about Redis's persistence and internals; the ones that crash or restart
/// a server are refused.
pub fn debug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    let arity = |n: usize| args.len() == n;
    match &sub[..] {
        b"help" if arity(2) => help_reply(DEBUG_HELP),
        b"error" if arity(3) => {
            // As Redis's `addReplyError`, the text as it is (a leading '-' stays).
            Reply::error(String::from_utf8_lossy(&args[2]).into_owned())
        }
        b"sleep" if arity(3) => {
            // Redis reads it with `atof`: what is not a number sleeps 0 s.
            let secs = std::str::from_utf8(&args[2])
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(0.0);
            // The whole node stops, as Redis's one thread does: no other worker runs a
            // command meanwhile.
            ctx.engine.store.exclusive(|| {
                std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(1e6)));
            });
            Reply::ok()
        }
        b"object" if arity(3) => {
            // DEBUG names no key to the router: the client's database is added here.
            let key = super::db::stored_key(ctx.session.db, &args[2]);
            debug_object(ctx, &key)
        }
        b"protocol" if arity(3) => {
            debug_protocol(&args[2], ctx.session.proto, ctx.session.scripted)
        }
        b"populate" if (3..=5).contains(&args.len()) => debug_populate(ctx, args),
        b"set-active-expire" | b"pause-cron" if arity(3) => {
            // Redis reads it with `atoi`: 0, or what is not a number, is 0.
            let zero = std::str::from_utf8(&args[2])
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .unwrap_or(0)
                == 0;
            if sub == b"pause-cron" {
                ctx.engine.cron_paused.store(!zero, Ordering::Relaxed);
            } else {
                ctx.engine.active_expire_off.store(zero, Ordering::Relaxed);
            }
            Reply::ok()
        }
        b"digest" if arity(2) => {
            let mut digest = [0u8; 20];
            let mut cursor = 0;
            loop {
                cursor = ctx.engine.store.scan(cursor, 256, ctx.now_ms, |key, e| {
                    let value = crate::rdb::dump_entry(&e);
                    xor_into(&mut digest, &key_digest(key, &value, e.expire_at_ms));
                });
                if cursor == 0 {
                    break;
                }
            }
            Reply::Simple(hex(&digest).into())
        }
        b"digest-value" => Reply::Array(
            args[2..]
                .iter()
                .map(|key| super::db::stored_key(ctx.session.db, key))
                .map(|key| {
                    let value =
                        ctx.engine
                            .store
                            .read(&key, ctx.now_ms, shoal_store::Access::Peek, |e| {
                                e.map(|e| crate::rdb::dump_entry(&e))
                            });
                    let digest = value.map_or([0u8; 20], |v| key_digest(b"", &v, None));
                    Reply::Simple(hex(&digest).into())
                })
                .collect(),
        ),
        b"jmap" | b"change-repl-id" | b"reload" if arity(2) => Reply::ok(),
        // RELOAD's options: NOFLUSH alone would load the dump over the keys, which Redis
        // refuses as duplicates; the others change nothing here.
        b"reload" => {
            let mut flags = (false, false);
            for a in &args[2..] {
                if is(a, "MERGE") {
                    flags.0 = true;
                } else if is(a, "NOFLUSH") {
                    flags.1 = true;
                } else if !is(a, "NOSAVE") {
                    return err(
                        "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
                    );
                }
            }
            // NOFLUSH alone over keys or libraries: Redis's load meets them as duplicates.
            let loaded =
                !ctx.engine.store.is_empty() || !ctx.engine.functions.libraries().is_empty();
            match flags {
                (false, true) if loaded => err("ERR Error trying to load the RDB dump"),
                _ => Reply::ok(),
            }
        }
        // Scripts may call DEBUG (Redis's test suite's `debug protocol` from Lua).
        b"set-disable-deny-scripts" if arity(3) => {
            let on = std::str::from_utf8(&args[2])
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .unwrap_or(0)
                != 0;
            ctx.engine.scripts_may_debug.store(on, Ordering::Relaxed);
            Reply::ok()
        }
        // Redis's reply buffer's resizing: Shoal's output buffers are its own.
        b"replybuffer" if arity(4) => {
            if is(&args[2], "peak-reset-time") || is(&args[2], "resizing") {
                Reply::ok()
            } else {
                Reply::error(format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG \
                     HELP.",
                    String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
                ))
            }
        }
        // Redis's threshold past which a list element gets a quicklist node of its own:
        // Shoal's list chunks have no such nodes, so it is checked and changes nothing.
        b"quicklist-packed-threshold" if arity(3) => {
            match crate::config::ByteSize::from_str(&String::from_utf8_lossy(&args[2])) {
                // Redis's `quicklistisSetPackedThreshold`: 0 is its default again.
                Ok(b) if b.0 <= (1 << 32) - (1 << 20) => Reply::ok(),
                _ => err("ERR argument must be a memory value bigger than 1 and smaller than 4gb"),
            }
        }
        b"log" if arity(3) => Reply::ok(),
        b"segfault" | b"panic" | b"restart" | b"crash-and-recover" | b"oom" | b"assert" => {
            Reply::error(format!(
                "ERR DEBUG {} is not supported by Shoal",
                String::from_utf8_lossy(&sub).to_ascii_uppercase()
            ))
        }
        _ => Reply::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            String::from_utf8_lossy(&args[1][..args[1].len().min(128)])
        )),
    }
}

/// DEBUG POPULATE count [prefix] [size], Redis's: each key `prefix:N` (`key:N`; at most 127
/// bytes, Redis's buffer) for N below `count` that does not exist gets the string
/// `value:N`, or with `size` that text cut or padded with zero bytes to `size` bytes; no
/// keyspace event, but tracking clients are told of the keys it made, as Redis's
/// `signalModifiedKey` does (a WATCH sees them by their versions). Refused in a cluster, where most keys would land on a node that does not
/// own them; a `size` past `proto-max-bulk-len` is refused, and the writes stop with the
/// OOM error when `maxmemory` is reached and nothing can be evicted.
fn debug_populate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    // Redis's getPositiveLongFromObjectOrReply: one text for what is no number too.
    let positive = |b: &Bytes| match super::parse_i64(b) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(err("ERR value is out of range, must be positive")),
    };
    let (count, size) = match (positive(&args[2]), args.get(4).map(positive).transpose()) {
        (Ok(count), Ok(size)) => (count, size),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let limit = ctx.engine.with_settings(|s| s.proto_max_bulk_len.0);
    if size.is_some_and(|s| s > limit) {
        return err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    }
    if ctx.host.cluster().is_some() {
        return err(
            "ERR DEBUG POPULATE is not supported in a cluster: its keys would be \
             written where their owners are not",
        );
    }
    // Redis's up-front `dictTryExpand`: a count no memory holds is refused before anything
    // is written (at least 16 bytes a key; with no `maxmemory`, 2^32 keys at most).
    let maxmemory = ctx.engine.store.maxmemory();
    let most = if maxmemory == 0 {
        1 << 32
    } else {
        maxmemory / 16
    };
    if count > most {
        return err("ERR OOM in dictTryExpand");
    }
    let prefix = args.get(3).map_or(&b"key"[..], |p| &p[..]);
    // Bytes written since memory was last made room for: checked every 64 keys, or sooner
    // when they pass a megabyte (large values).
    let mut unchecked = 0u64;
    // The keys made, told to tracking clients in bounded batches (only while any tracks).
    let mut made: Vec<Bytes> = Vec::new();
    let tell = |made: &mut Vec<Bytes>, ctx: &Ctx<'_>| {
        if made.is_empty() {
            return;
        }
        let engine = ctx.engine;
        let limit = engine.with_settings(|s| s.client_output_buffer_limit.pubsub);
        engine
            .tracker
            .invalidate(made, ctx.session.info.id, None, &engine.pubsub, limit);
        made.clear();
    };
    for n in 0..count {
        // Redis's 128-byte buffer, with its terminating NUL.
        let mut name = [prefix, b":", n.to_string().as_bytes()].concat();
        name.truncate(127);
        let key = super::db::stored_key(ctx.session.db, &name);
        let mut value = format!("value:{n}").into_bytes();
        // A size of 0 is no size, as in Redis.
        if let Some(size) = size.filter(|s| *s > 0) {
            value.resize(size as usize, 0);
        }
        unchecked += (key.len() + value.len()) as u64;
        let created = ctx.engine.store.write(&key, ctx.now_ms, |slot| {
            let new = !slot.exists();
            if new {
                slot.set(&value, None);
            }
            new
        });
        if created && ctx.engine.tracker.active() {
            made.push(key);
            if made.len() >= 1024 {
                tell(&mut made, ctx);
            }
        }
        if (n % 64 == 63 || unchecked >= 1 << 20) && maxmemory != 0 {
            unchecked = 0;
            if ctx.engine.store.ensure_memory(ctx.now_ms).is_err() {
                tell(&mut made, ctx);
                return err(super::ERR_OOM);
            }
        }
    }
    tell(&mut made, ctx);
    Reply::ok()
}

/// A key's digest for DEBUG DIGEST: SHA-1 over its name, its value's DUMP form and its
/// expiry; the dataset's is every key's XORed, so the order keys are met in does not
/// count (as Redis's, though Redis hashes its own serialisation: the hex differs).
fn key_digest(key: &[u8], value: &[u8], expire_at_ms: Option<u64>) -> [u8; 20] {
    let mut data = Vec::with_capacity(key.len() + value.len() + 12);
    data.extend_from_slice(&(key.len() as u32).to_be_bytes());
    data.extend_from_slice(key);
    data.extend_from_slice(value);
    data.extend_from_slice(&expire_at_ms.unwrap_or(0).to_be_bytes());
    sha1_smol::Sha1::from(&data).digest().bytes()
}

fn xor_into(acc: &mut [u8; 20], d: &[u8; 20]) {
    for (a, b) in acc.iter_mut().zip(d) {
        *a ^= b;
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(40), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// DEBUG OBJECT key: Redis's line (`Value at`, `refcount`, `encoding`, `serializedlength`,
/// the value's RDB size here from its DUMP form, `lru`, `lru_seconds_idle`; a list's
/// quicklist figures from its chunks).
fn debug_object(ctx: &mut Ctx<'_>, key: &Bytes) -> Reply {
    let store = &ctx.engine.store;
    let now = ctx.now_ms;
    // Also a key whose time is up and that nothing removed yet, as Redis's DEBUG OBJECT
    // finds it in the keyspace's table (its test suite reads one under SET-ACTIVE-EXPIRE 0).
    let seen = store.read_raw(key, now, |e| {
        e.map(|e| {
            let (encoding, dumped, list) = match e.coll {
                Some(c) => {
                    let list = match c {
                        shoal_store::Collection::List(l) => {
                            Some((l.chunks(), l.len(), c.heap_bytes()))
                        }
                        _ => None,
                    };
                    (c.encoding(), crate::rdb::dump_collection(c).len(), list)
                }
                None => (
                    super::keys::encoding(e.value, e.edited),
                    crate::rdb::dump_string(e.value).len(),
                    None,
                ),
            };
            (encoding, dumped, list, e.access, e.version)
        })
    });
    let Some((encoding, dumped, list, access, version)) = seen else {
        return err("ERR no such key");
    };
    let idle_s = store.idle_ms(access, now) / 1000;
    let lru = (now / 1000).saturating_sub(idle_s) & 0xFF_FFFF;
    // The DUMP form's type byte, RDB version and CRC are not the value's.
    let serialized = dumped.saturating_sub(11);
    let mut line = format!(
        "Value at:0x{:012x} refcount:1 encoding:{encoding} serializedlength:{serialized} lru:{lru} lru_seconds_idle:{idle_s}",
        version & 0xFFFF_FFFF_FFFF
    );
    if let Some((nodes, len, bytes)) = list {
        let avg = if nodes > 0 {
            len as f64 / nodes as f64
        } else {
            0.0
        };
        let _ = write!(
            line,
            " ql_nodes:{nodes} ql_avg_node:{avg:.2} ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:{bytes}"
        );
    }
    Reply::Simple(line.into())
}

/// DEBUG PROTOCOL type: Redis's test value of each reply type, in the client's protocol
/// (an attribute before its reply, to a RESP3 client only, as Redis).
fn debug_protocol(name: &[u8], proto: shoal_resp::Protocol, scripted: bool) -> Reply {
    let ints = || (0..3).map(Reply::Int).collect::<Vec<_>>();
    match &name.to_ascii_lowercase()[..] {
        b"string" => Reply::Bulk(Bytes::from_static(b"Hello World")),
        b"integer" => Reply::Int(12345),
        // Redis's test value, not π.
        b"double" => Reply::DoubleText(Bytes::from_static(b"3.141")),
        b"bignum" => Reply::BigNumber(Bytes::from_static(b"1234567999999999999999999999999999999")),
        b"null" => Reply::Nil,
        b"array" => Reply::Array(ints()),
        b"set" => Reply::Set(ints()),
        b"map" => Reply::Map((0..3).map(|j| (Reply::Int(j), Reply::Bool(j == 1))).collect()),
        // Its attribute goes to RESP3 clients only (and not to a script, whose reading of a
        // reply drops attributes, as Redis's), before the reply it describes.
        b"attrib" => {
            let real = Reply::Bulk(Bytes::from_static(
                b"Some real reply following the attribute",
            ));
            if proto == shoal_resp::Protocol::Resp3 && !scripted {
                let popularity = Reply::Array(vec![Reply::bulk("key:123"), Reply::Int(90)]);
                Reply::Seq(vec![
                    Reply::Attribute(vec![(Reply::bulk("key-popularity"), popularity)]),
                    real,
                ])
            } else {
                real
            }
        }
        b"push" if proto == shoal_resp::Protocol::Resp2 => {
            err("ERR RESP2 is not supported by this command")
        }
        b"push" => Reply::Seq(vec![
            Reply::Push(vec![
                Reply::Bulk(Bytes::from_static(b"server-cpu-usage")),
                Reply::Int(42),
            ]),
            Reply::Bulk(Bytes::from_static(b"Some real reply following the push reply")),
        ]),
        b"verbatim" => Reply::Verbatim(Bytes::from_static(b"This is a verbatim\nstring")),
        b"true" => Reply::Bool(true),
        b"false" => Reply::Bool(false),
        _ => err(
            "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

/// SAVE and BGSAVE [SCHEDULE]: a snapshot of this node's keys in Redis's RDB format
/// (`crate::snapshot`), SAVE while no other worker runs a command, BGSAVE on a thread of its
/// own; one at a time (`Background save already in progress`). BGREWRITEAOF: there is no
/// append-only file, and it says so.
pub fn save(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    if (name == "BGSAVE" && args.len() == 2 && !is(&args[1], "SCHEDULE")) || args.len() > 2 {
        return err(super::ERR_SYNTAX);
    }
    let saves = &ctx.engine.saves;
    match &name[..] {
        "SAVE" if saves.running() => Reply::error(crate::saves::Refused::InProgress.to_string()),
        "SAVE" => {
            match crate::snapshot::save_now(ctx.engine) {
                Ok(_) => Reply::ok(),
                Err(e) => {
                    tracing::warn!("SAVE failed: {e}");
                    // Redis's shared `-ERR`, the reason in the log.
                    err("ERR")
                }
            }
        }
        "BGSAVE" => match saves.ask(now_ms()) {
            Ok(()) => {
                // Started by the cron at once, not at its next tick.
                ctx.host.wake_cron();
                Reply::Simple("Background saving started".into())
            }
            Err(refused) => Reply::error(refused.to_string()),
        },
        _ => Reply::error(format!(
            "ERR {name} is not supported: Shoal keeps no append-only file (SAVE and BGSAVE \
             write an RDB snapshot)"
        )),
    }
}

/// REPLICAOF / SLAVEOF: every Shoal node is a primary. `NO ONE` is what it is already (OK,
/// as a Redis master answers); following another server is not something a node does (its
/// copies are kept by its cluster), so that is refused, after Redis's checks of the port.
/// In a cluster, Redis Cluster's refusal.
pub fn replicaof(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if ctx.host.cluster().is_some() {
        return err("ERR REPLICAOF not allowed in cluster mode.");
    }
    if is(&args[1], "NO") && is(&args[2], "ONE") {
        return Reply::ok();
    }
    match super::parse_i64(&args[2]) {
        None => err(super::ERR_NOT_INTEGER),
        Some(p) if !(0..=65535).contains(&p) => err("ERR Invalid master port"),
        Some(_) => err(
            "ERR REPLICAOF is not supported: a Shoal node keeps its copies on the other members \
             of its cluster (cluster-nodes, cluster-seeds), not on attached replicas",
        ),
    }
}

/// LASTSAVE: the last successful SAVE or BGSAVE, or the start, as a Redis that never saved
/// answers.
pub fn lastsave(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    let started = ctx.engine.started_unix_ms / 1000;
    Reply::Int(ctx.engine.saves.last_save_secs(started) as i64)
}

const MODULE_HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Print this help.",
];

/// MODULE: no module is loaded, and none can be (Redis's answer with
/// `enable-module-command no`, its default).
pub fn module(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    let sub = args[1].to_ascii_lowercase();
    match &sub[..] {
        b"list" if args.len() == 2 => Reply::Array(Vec::new()),
        b"help" if args.len() == 2 => help_reply(MODULE_HELP),
        b"list" | b"help" => {
            super::wrong_arity(&format!("module|{}", String::from_utf8_lossy(&sub)))
        }
        b"load" | b"loadex" | b"unload" if args.len() >= 3 => err(ERR_MODULE),
        b"load" | b"loadex" | b"unload" => {
            super::wrong_arity(&format!("module|{}", String::from_utf8_lossy(&sub)))
        }
        _ => super::unknown_subcommand("module", &args[1]),
    }
}

/// LOLWUT [VERSION v] [...]: what Redis 7 answers without its art (which only its versions
/// 5 and 6 draw): the version line.
pub fn lolwut(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    if args.len() >= 3 && is(&args[1], "VERSION") && super::parse_i64(&args[2]).is_none() {
        return err("ERR value is not an integer or out of range");
    }
    Reply::Verbatim(format!("Redis ver. {REDIS_VERSION}\n").into())
}

/// ROLE: every Shoal node is a primary (its copies are kept by the cluster, not by
/// replicas attached to it), so it answers as a Redis master without replicas.
pub fn role(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Reply {
    Reply::Array(vec![
        Reply::bulk("master"),
        Reply::Int(0),
        Reply::Array(Vec::new()),
    ])
}

// ---- LATENCY -------------------------------------------------------------------------

const LATENCY_HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Print this help.",
];

/// LATENCY DOCTOR | GRAPH | HISTORY | HISTOGRAM | LATEST | RESET | HELP over the node's
/// latency monitor (`latency`) and its per-command histograms (`cmdstats`).
pub fn latency(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Reply {
    use crate::latency;
    let monitor = &ctx.engine.latency;
    let sub = args[1].to_ascii_lowercase();
    let int = |v: u64| Reply::Int(i64::try_from(v).unwrap_or(i64::MAX));
    match &sub[..] {
        b"latest" if args.len() == 2 => Reply::Array(
            monitor
                .events()
                .into_iter()
                .filter_map(|(name, e)| {
                    let &(t, ms) = e.samples.last()?;
                    Some(Reply::Array(vec![
                        Reply::bulk(name),
                        int(t),
                        int(ms),
                        int(e.max),
                    ]))
                })
                .collect(),
        ),
        b"history" if args.len() == 3 => Reply::Array(
            monitor
                .event(&args[2])
                .map(|e| e.samples)
                .unwrap_or_default()
                .into_iter()
                .map(|(t, ms)| Reply::Array(vec![int(t), int(ms)]))
                .collect(),
        ),
        b"reset" => {
            let names: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
            let n = monitor.reset((!names.is_empty()).then_some(&names[..]));
            int(n as u64)
        }
        b"doctor" if args.len() == 2 => {
            Reply::Verbatim(latency::doctor(monitor.threshold_ms(), &monitor.events()).into())
        }
        b"graph" if args.len() == 3 => match monitor.event(&args[2]) {
            Some(e) if !e.samples.is_empty() => {
                let name = String::from_utf8_lossy(&args[2]).into_owned();
                Reply::Verbatim(latency::graph(&name, &e, ctx.now_ms / 1000).into())
            }
            _ => Reply::error(format!(
                "ERR No samples available for event '{}'",
                String::from_utf8_lossy(&args[2][..args[2].len().min(128)])
            )),
        },
        b"histogram" => latency_histogram(ctx.engine, &args[2..]),
        b"help" if args.len() == 2 => help_reply(LATENCY_HELP),
        b"latest" | b"history" | b"doctor" | b"graph" | b"help" => {
            wrong_arity(&format!("latency|{}", String::from_utf8_lossy(&sub)))
        }
        _ => unknown_subcommand("latency", &args[1]),
    }
}

/// LATENCY HISTOGRAM: per command that ran (all, or those named), its calls and the
/// cumulative count of calls at each power-of-two microsecond bound where the count grew,
/// as Redis gives them.
fn latency_histogram(node: &Engine, names: &[Bytes]) -> Reply {
    use crate::cmdstats::LatencyHistogram;
    // A container's name stands for its subcommands too (`client` for `client|id`, ...).
    let wanted = |name: &str| {
        let container = name.split_once('|').map(|(c, _)| c);
        names.is_empty()
            || names.iter().any(|n| {
                n.eq_ignore_ascii_case(name.as_bytes())
                    || container.is_some_and(|c| n.eq_ignore_ascii_case(c.as_bytes()))
            })
    };
    let mut out = Vec::new();
    for r in node.commands.totals() {
        let calls = r.calls;
        if calls == 0 || !wanted(&r.name) {
            continue;
        }
        // Every duration the buckets hold is under 2^40 µs.
        let mut total = 0;
        let mut points = Vec::new();
        for (i, n) in LatencyHistogram::per_power_of_two(&r.latency, 40)
            .into_iter()
            .enumerate()
        {
            if n > 0 {
                total += n;
                points.push((Reply::Int(1 << i), Reply::Int(total as i64)));
            }
        }
        out.push((
            Reply::bulk(r.name.clone()),
            Reply::Map(vec![
                (Reply::bulk("calls"), Reply::Int(calls as i64)),
                (Reply::bulk("histogram_usec"), Reply::Map(points)),
            ]),
        ));
    }
    Reply::Map(out)
}
