//! Redis's configuration parameters that change nothing in Shoal: replication, AOF and RDB,
//! defragmentation, lazy freeing, Redis Cluster's own bus, process management. Tools and
//! test suites read and set them (`CONFIG SET lazyfree-lazy-user-del yes`, `CONFIG GET
//! repl-backlog-size`), and a CONFIG SET naming one among others fails whole in Redis if
//! any is unknown; so CONFIG GET shows Redis 7's default or the value last set, and CONFIG
//! SET checks the value as Redis does and keeps it, with no other effect (README). The
//! ones Redis cannot change at run time are refused as it refuses them. Some of them do act,
//! read where they apply: `latency-tracking` and `latency-tracking-info-percentiles` shape
//! INFO latencystats (`server`), `lazyfree-lazy-user-del` and `lazyfree-lazy-user-flush`
//! make DEL and FLUSHALL/FLUSHDB free lazily (`keys`), and the collections' encoding
//! thresholds (`hash-max-listpack-entries`, ...) go to the store ([`apply_encodings`]; not
//! `list-max-listpack-size`: a list's nodes are 8 KB). Parameters whose
//! Redis meaning Shoal has are real settings in `server`'s table instead; TLS and ACL ones
//! that would suggest a security setting that is not applied are left unknown.

use std::collections::BTreeMap;

/// What a value may be.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `yes` or `no`.
    Bool,
    /// An integer within the bounds.
    Int(i64, i64),
    /// A size (`1mb`, `1048576`), shown in bytes.
    Memory,
    /// One of these words.
    Enum(&'static [&'static str]),
    /// Any of these words, space-separated (`shutdown-on-sigterm`).
    Flags(&'static [&'static str]),
    /// Percentiles, space-separated, each 0 to 100.
    Percentiles,
    /// Three integers (`oom-score-adj-values`).
    ThreeInts,
    /// Any text.
    Text,
    /// Not changed at run time, in Redis either.
    Immutable,
}

use Kind::*;

const INT_MAX: i64 = i32::MAX as i64;
const INT_MIN: i64 = i32::MIN as i64;

/// Redis's hidden parameters (`HIDDEN_CONFIG`): CONFIG GET shows them when named, not for a
/// pattern.
pub const HIDDEN: &[&str] = &[
    "key-load-delay",
    "loading-process-events-interval-bytes",
    "rdb-key-save-delay",
    "use-exit-on-panic",
    "watchdog-period",
];

/// Each parameter: its name, Redis 7's default (as CONFIG GET shows it) and its values.
pub const PARAMS: &[(&str, &str, Kind)] = &[
    ("active-defrag-cycle-max", "25", Int(1, 99)),
    ("active-defrag-cycle-min", "1", Int(1, 99)),
    ("active-defrag-ignore-bytes", "104857600", Memory),
    ("active-defrag-max-scan-fields", "1000", Int(1, i64::MAX)),
    ("active-defrag-threshold-lower", "10", Int(0, 1000)),
    ("active-defrag-threshold-upper", "100", Int(0, 1000)),
    ("active-expire-effort", "1", Int(1, 10)),
    ("activedefrag", "no", Bool),
    ("activerehashing", "yes", Bool),
    ("always-show-logo", "no", Immutable),
    ("aof-disable-auto-gc", "no", Bool),
    ("aof-load-truncated", "yes", Bool),
    ("aof-rewrite-incremental-fsync", "yes", Bool),
    ("aof-timestamp-enabled", "no", Bool),
    ("aof-use-rdb-preamble", "yes", Bool),
    ("aof_rewrite_cpulist", "", Immutable),
    ("appenddirname", "appendonlydir", Immutable),
    ("appendfilename", "appendonly.aof", Immutable),
    (
        "appendfsync",
        "everysec",
        Enum(&["everysec", "always", "no"]),
    ),
    ("auto-aof-rewrite-min-size", "67108864", Memory),
    ("auto-aof-rewrite-percentage", "100", Int(0, INT_MAX)),
    ("bgsave_cpulist", "", Immutable),
    ("bind-source-addr", "", Text),
    ("bio_cpulist", "", Immutable),
    ("cluster-allow-pubsubshard-when-down", "yes", Bool),
    ("cluster-allow-reads-when-down", "no", Bool),
    ("cluster-allow-replica-migration", "yes", Bool),
    ("cluster-announce-bus-port", "0", Int(0, 65535)),
    ("cluster-announce-hostname", "", Text),
    ("cluster-announce-tls-port", "0", Int(0, 65535)),
    ("cluster-config-file", "nodes.conf", Immutable),
    ("cluster-link-sendbuf-limit", "0", Memory),
    ("cluster-migration-barrier", "1", Int(0, INT_MAX)),
    ("cluster-node-timeout", "15000", Int(0, i64::MAX)),
    (
        "cluster-preferred-endpoint-type",
        "ip",
        Enum(&["ip", "hostname", "unknown-endpoint"]),
    ),
    ("cluster-replica-no-failover", "no", Bool),
    ("cluster-replica-validity-factor", "10", Int(0, INT_MAX)),
    ("cluster-require-full-coverage", "yes", Bool),
    ("crash-log-enabled", "yes", Bool),
    ("crash-memcheck-enabled", "yes", Bool),
    ("daemonize", "no", Immutable),
    ("disable-thp", "yes", Immutable),
    ("dynamic-hz", "yes", Bool),
    ("enable-module-command", "no", Immutable),
    ("enable-protected-configs", "no", Immutable),
    // The collections' encoding thresholds act (`shoal_store::encoding`, `apply_encodings`),
    // but for lists': their nodes are 8 KB (`-2`) whatever this says.
    ("hash-max-listpack-entries", "512", Int(0, i64::MAX)),
    ("hash-max-listpack-value", "64", Memory),
    ("hll-sparse-max-bytes", "3000", Memory),
    ("ignore-warnings", "", Text),
    ("io-threads-do-reads", "no", Immutable),
    ("jemalloc-bg-thread", "yes", Bool),
    ("key-load-delay", "0", Int(INT_MIN, INT_MAX)),
    ("latency-tracking", "yes", Bool),
    (
        "latency-tracking-info-percentiles",
        "50 99 99.9",
        Percentiles,
    ),
    ("lazyfree-lazy-eviction", "no", Bool),
    ("lazyfree-lazy-expire", "no", Bool),
    ("lazyfree-lazy-server-del", "no", Bool),
    ("lazyfree-lazy-user-del", "no", Bool),
    ("lazyfree-lazy-user-flush", "no", Bool),
    ("list-compress-depth", "0", Int(0, INT_MAX)),
    ("list-max-listpack-size", "-2", Int(INT_MIN, INT_MAX)),
    (
        "loading-process-events-interval-bytes",
        "2097152",
        Int(1024, INT_MAX),
    ),
    ("logfile", "", Immutable),
    ("masterauth", "", Text),
    ("masteruser", "", Text),
    ("maxmemory-eviction-tenacity", "10", Int(0, 100)),
    ("min-replicas-max-lag", "10", Int(0, INT_MAX)),
    ("no-appendfsync-on-rewrite", "no", Bool),
    (
        "oom-score-adj",
        "no",
        Enum(&["no", "yes", "relative", "absolute"]),
    ),
    ("oom-score-adj-values", "0 200 800", ThreeInts),
    ("pidfile", "", Immutable),
    (
        "proc-title-template",
        "{title} {listen-addr} {server-mode}",
        Text,
    ),
    (
        "propagation-error-behavior",
        "ignore",
        Enum(&["ignore", "panic", "panic-on-replicas"]),
    ),
    ("rdb-del-sync-files", "no", Bool),
    ("rdb-key-save-delay", "0", Int(INT_MIN, INT_MAX)),
    ("rdb-save-incremental-fsync", "yes", Bool),
    ("rdbchecksum", "yes", Immutable),
    ("rdbcompression", "yes", Bool),
    ("repl-backlog-size", "1048576", Memory),
    ("repl-backlog-ttl", "3600", Int(0, INT_MAX)),
    ("repl-disable-tcp-nodelay", "no", Bool),
    (
        "repl-diskless-load",
        "disabled",
        Enum(&["disabled", "on-empty-db", "swapdb"]),
    ),
    ("repl-diskless-sync", "yes", Bool),
    ("repl-diskless-sync-delay", "5", Int(0, INT_MAX)),
    ("repl-diskless-sync-max-replicas", "0", Int(0, INT_MAX)),
    ("repl-ping-replica-period", "10", Int(1, INT_MAX)),
    ("repl-timeout", "60", Int(1, INT_MAX)),
    ("replica-announce-ip", "", Text),
    ("replica-announce-port", "0", Int(0, 65535)),
    ("replica-announced", "yes", Bool),
    ("replica-ignore-disk-write-errors", "no", Bool),
    ("replica-ignore-maxmemory", "yes", Bool),
    ("replica-lazy-flush", "no", Bool),
    ("replica-priority", "100", Int(0, INT_MAX)),
    ("replica-read-only", "yes", Bool),
    ("replica-serve-stale-data", "yes", Bool),
    ("replicaof", "", Immutable),
    (
        "sanitize-dump-payload",
        "no",
        Enum(&["no", "yes", "clients"]),
    ),
    ("server_cpulist", "", Immutable),
    ("set-max-intset-entries", "512", Int(0, i64::MAX)),
    ("set-max-listpack-entries", "128", Int(0, i64::MAX)),
    ("set-max-listpack-value", "64", Memory),
    ("set-proc-title", "yes", Immutable),
    (
        "shutdown-on-sigint",
        "default",
        Flags(&["default", "save", "nosave", "now", "force"]),
    ),
    (
        "shutdown-on-sigterm",
        "default",
        Flags(&["default", "save", "nosave", "now", "force"]),
    ),
    ("socket-mark-id", "0", Immutable),
    ("stop-writes-on-bgsave-error", "yes", Bool),
    ("supervised", "no", Immutable),
    ("syslog-enabled", "no", Immutable),
    ("syslog-facility", "local0", Immutable),
    ("syslog-ident", "redis", Immutable),
    ("tcp-backlog", "511", Immutable),
    ("use-exit-on-panic", "no", Bool),
    ("watchdog-period", "0", Int(0, INT_MAX)),
    ("zset-max-listpack-entries", "128", Int(0, i64::MAX)),
    ("zset-max-listpack-value", "64", Memory),
];

/// The collections' encoding thresholds in `set` (or their defaults), handed to the store
/// (`shoal_store::encoding`): after a CONFIG SET that named one.
pub fn apply_encodings(set: &BTreeMap<String, String>) {
    use shoal_store::encoding::*;
    for (name, threshold) in [
        ("hash-max-listpack-entries", &HASH_ENTRIES),
        ("hash-max-listpack-value", &HASH_VALUE),
        ("set-max-intset-entries", &SET_INTSET_ENTRIES),
        ("set-max-listpack-entries", &SET_ENTRIES),
        ("set-max-listpack-value", &SET_VALUE),
        ("zset-max-listpack-entries", &ZSET_ENTRIES),
        ("zset-max-listpack-value", &ZSET_VALUE),
    ] {
        if let Some(n) = get(set, name).and_then(|v| v.parse::<u64>().ok()) {
            threshold.set(usize::try_from(n).unwrap_or(usize::MAX));
        }
    }
}

/// Redis's older names, which CONFIG GET lists too and which set the same value.
pub const ALIASES: &[(&str, &str)] = &[
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    (
        "cluster-slave-validity-factor",
        "cluster-replica-validity-factor",
    ),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-priority", "replica-priority"),
    ("slave-read-only", "replica-read-only"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slaveof", "replicaof"),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
];

/// The parameter `name` (lower case; an alias gives its canonical row) names.
pub fn find(name: &str) -> Option<&'static (&'static str, &'static str, Kind)> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, canonical)| canonical);
    PARAMS.iter().find(|(n, _, _)| *n == name)
}

/// Every name CONFIG GET lists, canonical and alias alike.
pub fn names() -> impl Iterator<Item = &'static str> {
    PARAMS
        .iter()
        .map(|(n, _, _)| *n)
        .chain(ALIASES.iter().map(|(a, _)| *a))
}

/// What CONFIG GET shows for `name`: the value set, else the default.
pub fn get(set: &BTreeMap<String, String>, name: &str) -> Option<String> {
    let (canonical, default, _) = find(name)?;
    Some(
        set.get(*canonical)
            .cloned()
            .unwrap_or_else(|| default.to_string()),
    )
}

/// Checks `value` for the parameter of `kind` as Redis checks it; `Ok` holds it as CONFIG
/// GET will show it, `Err` Redis's reason.
pub fn check(kind: Kind, value: &str) -> Result<String, String> {
    let int = |v: &str| v.parse::<i64>().ok();
    let memory = |v: &str| {
        v.parse::<crate::ByteSize>()
            .map(|b| b.0.to_string())
            .map_err(|_| "argument must be a memory value".to_string())
    };
    let one_of = |words: &[&str]| {
        format!(
            "argument(s) must be one of the following: {}",
            words.join(", ")
        )
    };
    match kind {
        Bool => match value.to_ascii_lowercase().as_str() {
            v @ ("yes" | "no") => Ok(v.to_string()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Int(min, max) => match int(value) {
            Some(n) if (min..=max).contains(&n) => Ok(n.to_string()),
            Some(_) => Err(format!(
                "argument must be between {min} and {max} inclusive"
            )),
            None => Err("argument couldn't be parsed into an integer".into()),
        },
        Memory => memory(value),
        Enum(words) => {
            let v = value.to_ascii_lowercase();
            if words.contains(&v.as_str()) {
                Ok(v)
            } else {
                Err(one_of(words))
            }
        }
        Flags(words) => {
            let v = value.to_ascii_lowercase();
            let tokens: Vec<&str> = v.split_ascii_whitespace().collect();
            if !tokens.is_empty() && tokens.iter().all(|t| words.contains(t)) {
                Ok(tokens.join(" "))
            } else {
                Err(one_of(words))
            }
        }
        Percentiles => {
            let parsed: Option<Vec<f64>> = value
                .split_ascii_whitespace()
                .map(|p| p.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p)))
                .collect();
            match parsed {
                Some(ps) => Ok(ps
                    .iter()
                    .map(|p| String::from_utf8_lossy(&shoal_resp::double_bytes(*p)).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")),
                None => Err("Invalid latency-tracking-info-percentiles parameters".into()),
            }
        }
        ThreeInts => {
            let parts: Vec<&str> = value.split_ascii_whitespace().collect();
            if parts.len() != 3 {
                return Err("wrong number of arguments".into());
            }
            let ints: Option<Vec<i64>> = parts.iter().map(|p| int(p)).collect();
            match ints {
                Some(ns) if ns.iter().all(|n| (-2000..=2000).contains(n)) => {
                    Ok(ns.iter().map(i64::to_string).collect::<Vec<_>>().join(" "))
                }
                _ => Err("Invalid oom-score-adj-values".into()),
            }
        }
        Text => Ok(value.to_string()),
        Immutable => Err("can't set immutable config".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_checked_as_redis_checks_them() {
        assert_eq!(check(Bool, "YES"), Ok("yes".into()));
        assert!(check(Bool, "maybe").is_err());
        assert_eq!(
            check(Int(1, 10), "20"),
            Err("argument must be between 1 and 10 inclusive".into())
        );
        assert_eq!(check(Memory, "1mb"), Ok("1048576".into()));
        assert_eq!(
            check(Memory, "1x"),
            Err("argument must be a memory value".into())
        );
        assert_eq!(
            check(Flags(&["default", "nosave", "now"]), "NOSAVE now"),
            Ok("nosave now".into())
        );
        assert!(check(Flags(&["default"]), "bad").is_err());
        assert_eq!(check(Percentiles, "50 99.9"), Ok("50 99.9".into()));
        assert!(check(Percentiles, "abc").is_err());
        assert_eq!(check(ThreeInts, "0 200 800"), Ok("0 200 800".into()));
        assert!(check(ThreeInts, "1").is_err());
        assert_eq!(
            check(Immutable, "x"),
            Err("can't set immutable config".into())
        );
    }

    #[test]
    fn aliases_share_their_canonical_value() {
        let mut set = BTreeMap::new();
        assert_eq!(get(&set, "slave-read-only").as_deref(), Some("yes"));
        set.insert("replica-read-only".to_string(), "no".to_string());
        assert_eq!(get(&set, "slave-read-only").as_deref(), Some("no"));
        assert!(find("no-such-thing").is_none());
        // Each default is a value its own check takes (but immutables').
        for (name, default, kind) in PARAMS {
            if !matches!(kind, Immutable) {
                assert!(check(*kind, default).is_ok(), "{name} = {default:?}");
            }
        }
    }
}
