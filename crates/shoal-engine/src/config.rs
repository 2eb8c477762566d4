//! The node's settings: names, types and defaults.
//!
//! One struct, deserialized from TOML (`config/shoal.toml` documents every key). Keys use
//! Redis's names where Redis has the setting (`maxmemory-policy`, `proto-max-bulk-len`), so
//! `CONFIG GET` and the file agree. Memory sizes accept Redis's notation (`100mb`, `1gb`,
//! `512k`) or a plain number of bytes.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A size in bytes, written as an integer or in Redis's notation (`1gb`, `64mb`, `512k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    /// Redis's `memtoull`: `k`/`kb` are 1000/1024, `m`/`mb` 10^6/2^20, `g`/`gb` 10^9/2^30.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let unit = &t[digits.len()..];
        let mul: u64 = match unit {
            "" | "b" => 1,
            "k" => 1000,
            "kb" => 1024,
            "m" => 1000 * 1000,
            "mb" => 1024 * 1024,
            "g" => 1000 * 1000 * 1000,
            "gb" => 1024 * 1024 * 1024,
            _ => return Err(format!("invalid memory size '{s}'")),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("invalid memory size '{s}'"))?;
        n.checked_mul(mul)
            .map(ByteSize)
            .ok_or_else(|| format!("memory size '{s}' is too large"))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a byte count or a size such as \"64mb\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("size must not be negative"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// One client class's output limits: more than `hard` unsent reply bytes closes the client
/// at once; more than `soft` for `soft_seconds` seconds in a row closes it too. 0 = none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ClassLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

/// Redis's `client-output-buffer-limit`: a [`ClassLimit`] for normal clients, replicas and
/// pub/sub subscribers, written `<class> <hard> <soft> <soft-seconds>` per class
/// (`normal 256mb 0 0 replica 256mb 64mb 60`). Shoal serves only normal clients today; the
/// other classes are kept and shown so Redis tooling that sets them works. A bare size
/// (`256mb`, the form of earlier Shoal versions) is the normal class's hard limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputBufferLimits {
    pub normal: ClassLimit,
    pub replica: ClassLimit,
    pub pubsub: ClassLimit,
}

impl Default for OutputBufferLimits {
    /// Redis's defaults, except that normal clients are bounded (256 MB hard): Redis leaves
    /// them unlimited, but one client that never reads must not grow a cache without bound.
    fn default() -> Self {
        const MB: u64 = 1024 * 1024;
        OutputBufferLimits {
            normal: ClassLimit {
                hard: 256 * MB,
                soft: 0,
                soft_seconds: 0,
            },
            replica: ClassLimit {
                hard: 256 * MB,
                soft: 64 * MB,
                soft_seconds: 60,
            },
            pubsub: ClassLimit {
                hard: 32 * MB,
                soft: 8 * MB,
                soft_seconds: 60,
            },
        }
    }
}

impl OutputBufferLimits {
    /// Applies `text` on top of `self`: the classes it names change, the others stay (as
    /// Redis's CONFIG SET). Errors are Redis's texts.
    pub fn apply(&self, text: &str) -> Result<OutputBufferLimits, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut out = *self;
        if let [one] = words[..] {
            if let Ok(size) = one.parse::<ByteSize>() {
                out.normal.hard = size.0;
                return Ok(out);
            }
        }
        if words.is_empty() || !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".into());
        }
        for group in words.chunks_exact(4) {
            let class = match group[0].to_ascii_lowercase().as_str() {
                "normal" => &mut out.normal,
                "replica" | "slave" => &mut out.replica,
                "pubsub" => &mut out.pubsub,
                _ => {
                    return Err(
                        "Invalid client class specified in buffer limit configuration.".into(),
                    )
                }
            };
            let bad = || {
                "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                    .to_string()
            };
            *class = ClassLimit {
                hard: group[1].parse::<ByteSize>().map_err(|_| bad())?.0,
                soft: group[2].parse::<ByteSize>().map_err(|_| bad())?.0,
                soft_seconds: group[3].parse().map_err(|_| bad())?,
            };
        }
        Ok(out)
    }
}

impl fmt::Display for OutputBufferLimits {
    /// As Redis's CONFIG GET shows it (bytes, the replica class named `slave`).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let c = |l: &ClassLimit| format!("{} {} {}", l.hard, l.soft, l.soft_seconds);
        write!(
            f,
            "normal {} slave {} pubsub {}",
            c(&self.normal),
            c(&self.replica),
            c(&self.pubsub)
        )
    }
}

impl<'de> Deserialize<'de> for OutputBufferLimits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text_or_number(
            d,
            "\"<class> <hard> <soft> <soft-seconds>\" groups, or a size",
            |v| {
                OutputBufferLimits::default()
                    .apply(v)
                    .map_err(|e| format!("client-output-buffer-limit: {e}"))
            },
        )
    }
}

/// Deserializes a setting that may be written as text or as a number (`700` or `"0770"`),
/// a number read as its decimal text; `parse` reads the text.
fn text_or_number<'de, D: Deserializer<'de>, T>(
    d: D,
    expecting: &'static str,
    parse: fn(&str) -> Result<T, String>,
) -> Result<T, D::Error> {
    struct V<T> {
        expecting: &'static str,
        parse: fn(&str) -> Result<T, String>,
    }
    impl<T> Visitor<'_> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.expecting)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            self.visit_str(&v.to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            self.visit_str(&v.to_string())
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            (self.parse)(v).map_err(E::custom)
        }
    }
    d.deserialize_any(V { expecting, parse })
}

/// The largest `proto-max-bulk-len`: any argument, a numbered database's 4-byte prefix
/// added, still fits a key the store can hold (1 GiB less 5 bytes).
pub const MAX_BULK_LEN: u64 = shoal_store::MAX_KEY_LEN as u64 - 4;

/// A `proto-max-bulk-len` Shoal can take: at least 1 KB, at most [`MAX_BULK_LEN`] (Redis
/// takes more; a larger argument could not be a key here).
pub fn check_bulk_len(n: u64) -> Result<(), String> {
    if n < 1024 {
        return Err("must be a memory value of at least 1024".into());
    }
    if n > MAX_BULK_LEN {
        return Err(format!("must be at most {MAX_BULK_LEN} (1gb less 5 bytes)"));
    }
    Ok(())
}

/// Every setting of one node. Field docs say why the default is what it is.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct NodeConfig {
    /// Address to listen on for RESP clients. Loopback by default, as Redis's protected mode.
    pub bind: String,
    /// RESP port; 0 picks a free port (tests read it back).
    pub port: u16,
    /// Memory limit for the data set (keys, values, per-entry overhead). 0 = no limit.
    /// Unlike Redis (0 by default) Shoal starts bounded, as a cache should.
    pub maxmemory: ByteSize,
    /// What to evict when `maxmemory` is reached (Redis's policy names).
    pub maxmemory_policy: String,
    /// Keys sampled per eviction (Redis's `maxmemory-samples`).
    pub maxmemory_samples: usize,
    /// The LFU policies' counter: how slowly it grows (Redis's `lfu-log-factor`).
    pub lfu_log_factor: u32,
    /// The LFU policies' counter: minutes per halving step (Redis's `lfu-decay-time`).
    pub lfu_decay_time: u32,
    /// Redis's parameters that change nothing here, as CONFIG SET left them
    /// (`cmd::inert`); not a configuration key.
    #[serde(skip)]
    pub inert: std::collections::BTreeMap<String, String>,
    /// Password clients must send with AUTH / HELLO AUTH; empty = no password. It is the
    /// `default` user's password, as in Redis.
    pub requirepass: String,
    /// ACL users, each `<name> <rule> ...` as after Redis's `user` directive (`alice on
    /// >secret ~cache:* +@read`); a string or an array of them.
    #[serde(deserialize_with = "one_or_many")]
    pub user: Vec<String>,
    /// An ACL file (Redis's `aclfile`): the users, read at start-up and by ACL LOAD, written
    /// by ACL SAVE; empty = none. Not together with `user`.
    pub aclfile: String,
    /// Where SAVE and BGSAVE write their snapshot (Redis's `dir`); empty = the working
    /// directory.
    pub dir: String,
    /// The snapshot's file name in `dir` (Redis's `dbfilename`); a name, not a path.
    pub dbfilename: String,
    /// Connected clients at most; one more gets `-ERR max number of clients reached`.
    pub maxclients: usize,
    /// Close a client idle for this many seconds; 0 = never (Redis's `timeout`).
    pub timeout: u64,
    /// TCP keepalive probes on client sockets after this many idle seconds (Redis's
    /// `tcp-keepalive`, 300 by default); 0 = none. New connections take a change.
    pub tcp_keepalive: u64,
    /// SLOWLOG takes commands that ran this many microseconds or more; negative = none.
    pub slowlog_log_slower_than: i64,
    /// SLOWLOG keeps this many entries at most.
    pub slowlog_max_len: u64,
    /// ACL LOG keeps this many entries at most (Redis's `acllog-max-len`).
    pub acllog_max_len: u64,
    /// Keys client-side caching remembers at most (Redis's `tracking-table-max-keys`; past
    /// it the oldest are dropped, their readers told; 0 = no bound, as in Redis).
    pub tracking_table_max_keys: u64,
    /// A stream's node takes no more entries once its listpack would pass this many bytes
    /// (Redis's `stream-node-max-bytes`; 0 = Redis's 1 GB bound).
    pub stream_node_max_bytes: ByteSize,
    /// A stream's node takes at most this many entries (0 = no bound but the bytes).
    pub stream_node_max_entries: u64,
    /// LATENCY samples commands that run at least this many milliseconds; 0 = off.
    pub latency_monitor_threshold: u64,
    /// A script that runs this many milliseconds becomes busy: the other clients are
    /// answered BUSY and SCRIPT KILL may stop it (Redis's `busy-reply-threshold`, alias
    /// `lua-time-limit`; see `crate::busy`).
    pub busy_reply_threshold: u64,
    /// Largest bulk argument accepted (Redis's `proto-max-bulk-len`).
    pub proto_max_bulk_len: ByteSize,
    /// Most arguments in one command (Redis's fixed 1,048,576, here configurable).
    pub proto_max_multibulk_len: usize,
    /// Longest inline command line (Redis's PROTO_INLINE_MAX_SIZE, 64 KiB).
    pub proto_inline_max_size: ByteSize,
    /// What a request still arriving may hold (its bytes in the input and the arguments
    /// already parsed) before its client is closed (Redis's `client-query-buffer-limit`,
    /// 1 GB; at least 1 MB).
    pub client_query_buffer_limit: ByteSize,
    /// Unsent reply bytes a client may hold before it is disconnected, per class (Redis's
    /// form). Enforced while a reply is produced, so no reply grows past it.
    pub client_output_buffer_limit: OutputBufferLimits,
    /// What all clients' buffers may hold together before the largest are closed (Redis's
    /// `maxmemory-clients`): a size or a percentage of `maxmemory`; 0 = no limit.
    pub maxmemory_clients: ClientMemoryLimit,
    /// How long SIGTERM/SIGINT waits for connections to answer what they already read.
    pub shutdown_timeout_ms: u64,
    /// Active expiry cycles per second (Redis's `hz`).
    pub hz: u32,
    /// The keyspace notifications published, in Redis's letters (`KEA`, `Egx`, ...); empty =
    /// none, as in Redis (they cost a little on every write).
    pub notify_keyspace_events: String,
    /// Worker threads that serve connections (memcached's `-t`, Redis's `io-threads` idea);
    /// 0 = one per CPU core. Read at start-up.
    pub threads: usize,
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub log_level: String,
    /// Port of the Memcached text protocol listener (on `bind`); absent = no Memcached
    /// listener, 0 = any free port. Memcached's own default is 11211.
    pub memcache_port: Option<u16>,
    /// Path of a Unix socket that serves RESP beside `port` (Redis's `unixsocket`); empty =
    /// none. A socket file left at the path is replaced; the file goes when the node stops.
    pub unixsocket: String,
    /// Permissions of `unixsocket`, in octal as Redis writes them (`700`); 0 = as the umask
    /// leaves them (Redis's `unixsocketperm`).
    pub unixsocketperm: SocketPerm,
    /// Path of a Unix socket that serves the Memcached protocols (memcached's `-s`), beside
    /// or without `memcache-port`; empty = none.
    pub memcache_unixsocket: String,
    /// Permissions of `memcache-unixsocket` (memcached's `-a`, 0700 by default there too).
    pub memcache_unixsocketperm: SocketPerm,
    /// Who may run DEBUG, as Redis's `enable-debug-command`: `no` (nobody, the default),
    /// `yes` (every client), `local` (clients on a loopback address).
    pub enable_debug_command: String,
    /// Memcached's `flush_all` answers `CLIENT_ERROR flush_all not allowed` (memcached's
    /// `-F`, `--disable-flush-all`); RESP's FLUSHALL is not affected.
    pub memcache_disable_flush_all: bool,
    /// Port of the HTTP listener for Prometheus metrics (`/metrics`) and the health checks
    /// (`/healthz`, `/readyz`), on `bind`; absent = none, 0 = any free port.
    pub metrics_port: Option<u16>,
    /// Largest Memcached item value (Memcached's `-I`, 1 MiB by default).
    pub memcache_max_item_size: ByteSize,
    /// Port of a second Redis-protocol listener that speaks TLS (on `bind`), as Redis's
    /// `tls-port`; absent = none, 0 = any free port. `port` keeps serving plain TCP.
    pub tls_port: Option<u16>,
    /// This node's certificate chain (PEM, leaf first) for every TLS listener and link.
    pub tls_cert_file: String,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1; not encrypted).
    pub tls_key_file: String,
    /// The certificate this node presents when it connects to another node
    /// (`tls-cluster`); empty = `tls-cert-file`.
    pub tls_client_cert_file: String,
    /// The key of `tls-client-cert-file`.
    pub tls_client_key_file: String,
    /// CA certificates (PEM) that client and peer certificates must chain to.
    pub tls_ca_cert_file: String,
    /// A directory of CA certificate files, as `tls-ca-cert-file`.
    pub tls_ca_cert_dir: String,
    /// `yes` (clients must present a certificate the CA signed; Redis's default), `no`, or
    /// `optional` (one that is sent must be valid).
    pub tls_auth_clients: String,
    /// TLS versions accepted: `TLSv1.2`, `TLSv1.3` or both (space-separated); empty = both.
    pub tls_protocols: String,
    /// Inter-node links use TLS, and so does `cluster-client-port` (as Redis Cluster's
    /// `tls-cluster` makes clients use TLS ports). Every node of a cluster must agree.
    pub tls_cluster: bool,
    /// The Memcached port speaks TLS (as memcached's `-Z`).
    pub tls_memcache: bool,
    /// This node's stable name in the cluster; placement hashes it, so it must survive
    /// restarts. Empty = the host name (as Kubernetes gives each pod its own).
    pub node_name: String,
    /// Nodes of two clusters with different names refuse each other even with one secret.
    pub cluster_name: String,
    /// The shared cluster secret (like Erlang's cookie); required when `cluster-nodes` is set.
    /// Never sent over the wire, never shown by CONFIG GET. Usually set through
    /// `SHOAL_CLUSTER_SECRET`.
    pub cluster_secret: String,
    /// The static member list, `name=host:port@cluster-port` each (the RESP address and the
    /// inter-node address), as a TOML array or one comma-separated string. Must include this
    /// node. Empty = a single node, which needs no secret.
    #[serde(deserialize_with = "node_list")]
    pub cluster_nodes: Vec<String>,
    /// Copies of each key besides the owner's (1 = two copies), capped by the member count.
    pub replicas: usize,
    /// When a write is acknowledged: `owner` (once applied at the owner; replicas follow
    /// asynchronously) or `all` (once every reachable replica applied it too).
    pub write_ack: String,
    /// Writes are refused (`NOREPLICAS`) while fewer than this many of the key's replicas
    /// are reachable (Redis's `min-replicas-to-write`; a single node has none). 0 = never.
    pub min_replicas_to_write: u32,
    /// How long a request to another node may take before it counts as failed and the
    /// router tries the next copy.
    pub cluster_timeout_ms: u64,
    /// How long a deleted key's tombstone is kept, so a late replication message cannot bring
    /// it back.
    pub tombstone_ttl_ms: u64,
    /// `off` (a single node, or the static `cluster-nodes` list) or `gossip`: membership by
    /// SWIM gossip, nodes join through `cluster-seeds` and keys move as nodes come and go.
    pub cluster_mode: String,
    /// The inter-node TCP port (on `bind`). Absent = `port` + 10000 (as Redis Cluster's bus),
    /// or any free port when `port` is 0.
    pub cluster_port: Option<u16>,
    /// The gossip UDP port (on `bind`). Absent = the same number as the inter-node port.
    pub gossip_port: Option<u16>,
    /// Gossip addresses (`host:port`) to join through, as a TOML array or one
    /// comma-separated string. Host names are resolved every second for 30 s after the start,
    /// then every 30 s, so a Kubernetes headless Service name finds every pod. Empty = start
    /// a new cluster.
    #[serde(deserialize_with = "node_list")]
    pub cluster_seeds: Vec<String>,
    /// The port that serves Redis Cluster clients (redis-py `RedisCluster`, ioredis
    /// `Cluster`, `redis-cli -c`): on it, a key this node does not own is answered
    /// `-MOVED slot ip:port`, multi-key commands need one slot (`-CROSSSLOT`), and DBSIZE,
    /// KEYS, SCAN and RANDOMKEY cover the keys this node owns, as on a Redis Cluster node.
    /// `port` keeps serving every key for plain clients. Absent = no such port; 0 = any
    /// free port. Gossip mode; with the static `cluster-nodes` list, each entry names it
    /// (`name=host:port@cluster-port+cluster-client-port`).
    pub cluster_client_port: Option<u16>,
    /// The port CLUSTER SLOTS, SHARDS, NODES and MOVED name for this node, when clients
    /// reach it through a mapped port (Redis's `cluster-announce-port`); 0 = the bound
    /// `cluster-client-port`.
    pub cluster_announce_port: u16,
    /// The IP other nodes reach this one at. Empty = `bind` when it is a specific address,
    /// else the address the host name resolves to (a pod's IP in Kubernetes).
    pub cluster_announce_ip: String,
    /// With seeds: how often a node that has not found another member yet logs why (and,
    /// with `cluster-bootstrap`, how long it looks before it starts a new cluster). Commands
    /// on keys answer TRYAGAIN meanwhile.
    pub join_timeout_ms: u64,
    /// Gossip mode, with seeds: may this node start a new cluster when no seed answers within
    /// `join-timeout-ms`? Off by default: a node told of seeds that finds nobody (seeds down,
    /// only itself, a wrong secret or cluster name) answers TRYAGAIN and says why in its log
    /// and INFO until it joins, instead of serving an empty cluster of one.
    pub cluster_bootstrap: bool,
    /// Start with a `cluster-secret` shorter than [`MIN_SECRET_LEN`] bytes, or with the
    /// example one from the Kubernetes manifest ([`EXAMPLE_SECRET`]). Off by default: such a
    /// node refuses to start, since anyone who guesses the secret can join the cluster.
    pub allow_weak_cluster_secret: bool,
    /// Bandwidth limit for handing slots to other nodes, per second.
    pub handoff_rate: ByteSize,
    /// After SIGTERM: how long the node may take to hand its slots to the others before it
    /// exits anyway (a second SIGTERM exits at once).
    pub leave_timeout_ms: u64,
}

/// Accepts `cluster-nodes` as an array of strings or as one comma/space-separated string
/// (the form an environment variable or `--set` gives).
fn node_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let items = one_or_many(d)?;
    Ok(items
        .iter()
        .flat_map(|s| s.split([',', ' ']))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Longest Unix socket path (`sun_path` less its terminating NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// The least [`ClientMemoryLimit::bytes`] gives when set: Redis's floor, so that a tiny
/// setting cannot close every client, the one that would fix it included.
pub const MIN_CLIENT_MEMORY_LIMIT: u64 = 128 * 1024;

/// Redis's `maxmemory-clients`: what the clients' buffers may hold together before the
/// largest are closed (`crate::client::ClientRegistry::evict`): a size, or a percentage of
/// `maxmemory` (`10%`); 0 = no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientMemoryLimit {
    Bytes(u64),
    Percent(u8),
}

impl Default for ClientMemoryLimit {
    fn default() -> Self {
        ClientMemoryLimit::Bytes(0)
    }
}

impl ClientMemoryLimit {
    /// The limit in bytes with `maxmemory` (Redis's `getClientEvictionLimit`): 0 = none (0,
    /// or a percentage without `maxmemory`), else at least [`MIN_CLIENT_MEMORY_LIMIT`].
    pub fn bytes(self, maxmemory: u64) -> u64 {
        let limit = match self {
            ClientMemoryLimit::Bytes(b) => b,
            ClientMemoryLimit::Percent(p) => {
                (u128::from(maxmemory) * u128::from(p) / 100).min(u128::from(u64::MAX)) as u64
            }
        };
        if limit == 0 {
            0
        } else {
            limit.max(MIN_CLIENT_MEMORY_LIMIT)
        }
    }
}

impl FromStr for ClientMemoryLimit {
    type Err = String;

    /// As Redis's CONFIG SET takes it, with its error texts.
    fn from_str(v: &str) -> Result<Self, String> {
        match v.strip_suffix('%') {
            Some(p) if p.starts_with(['+', '-']) => {
                Err("argument must be a memory or percent value".into())
            }
            Some(p) => match p.parse::<u64>() {
                // 0% is no limit, shown as Redis shows it: 0.
                Ok(0) => Ok(ClientMemoryLimit::Bytes(0)),
                Ok(n) if n <= 100 => Ok(ClientMemoryLimit::Percent(n as u8)),
                Ok(_) => Err("percentage argument must be less or equal to 100".into()),
                Err(_) => Err("argument must be a memory or percent value".into()),
            },
            None => v
                .parse::<ByteSize>()
                .map(|b| ClientMemoryLimit::Bytes(b.0))
                .map_err(|_| "argument must be a memory or percent value".into()),
        }
    }
}

/// As Redis's CONFIG GET shows it: bytes, or the percentage with its sign (`10%`).
impl fmt::Display for ClientMemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            ClientMemoryLimit::Bytes(b) => write!(f, "{b}"),
            ClientMemoryLimit::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl<'de> Deserialize<'de> for ClientMemoryLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text_or_number(d, "a size such as 64mb, or a percentage such as 10%", |v| {
            v.parse().map_err(|e| format!("maxmemory-clients: {e}"))
        })
    }
}

/// A Unix socket's permission bits, written in octal as Redis's `unixsocketperm` and
/// memcached's `-a` take them (`700`, `0770`; a number in the TOML file is read the same way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SocketPerm(pub u32);

impl std::str::FromStr for SocketPerm {
    type Err = String;

    fn from_str(v: &str) -> Result<SocketPerm, String> {
        match u32::from_str_radix(v, 8) {
            Ok(bits) if bits <= 0o777 && !v.starts_with(['+', '-']) => Ok(SocketPerm(bits)),
            _ => Err(format!(
                "invalid socket permissions '{v}': octal digits, at most 777"
            )),
        }
    }
}

/// As Redis's CONFIG GET shows it: octal digits without a leading zero (`700`, `0`).
impl std::fmt::Display for SocketPerm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:o}", self.0)
    }
}

impl<'de> Deserialize<'de> for SocketPerm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text_or_number(d, "octal permission digits such as 700", str::parse)
    }
}

/// A string or an array of strings (ACL users: each kept whole).
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum List {
        One(String),
        Many(Vec<String>),
    }
    Ok(match List::deserialize(d)? {
        List::One(s) => vec![s],
        List::Many(v) => v,
    })
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            bind: "127.0.0.1".into(),
            port: 6379,
            maxmemory: ByteSize(1024 * 1024 * 1024),
            maxmemory_policy: "allkeys-lru".into(),
            maxmemory_samples: 5,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            inert: Default::default(),
            requirepass: String::new(),
            user: Vec::new(),
            aclfile: String::new(),
            dir: String::new(),
            dbfilename: "dump.rdb".into(),
            maxclients: 10_000,
            timeout: 0,
            tcp_keepalive: 300,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            acllog_max_len: 128,
            stream_node_max_bytes: ByteSize(shoal_store::STREAM_NODE_MAX_BYTES as u64),
            stream_node_max_entries: u64::from(shoal_store::STREAM_NODE_MAX_ENTRIES),
            tracking_table_max_keys: 1_000_000,
            latency_monitor_threshold: 0,
            busy_reply_threshold: 5000,
            proto_max_bulk_len: ByteSize(512 * 1024 * 1024),
            proto_max_multibulk_len: 1024 * 1024,
            proto_inline_max_size: ByteSize(64 * 1024),
            client_query_buffer_limit: ByteSize(1024 * 1024 * 1024),
            client_output_buffer_limit: OutputBufferLimits::default(),
            maxmemory_clients: ClientMemoryLimit::default(),
            shutdown_timeout_ms: 10_000,
            hz: 10,
            notify_keyspace_events: String::new(),
            threads: 0,
            log_level: "info".into(),
            memcache_port: None,
            unixsocket: String::new(),
            unixsocketperm: SocketPerm(0),
            memcache_unixsocket: String::new(),
            memcache_unixsocketperm: SocketPerm(0o700),
            memcache_disable_flush_all: false,
            enable_debug_command: "no".into(),
            metrics_port: None,
            memcache_max_item_size: ByteSize(1024 * 1024),
            tls_port: None,
            tls_cert_file: String::new(),
            tls_key_file: String::new(),
            tls_client_cert_file: String::new(),
            tls_client_key_file: String::new(),
            tls_ca_cert_file: String::new(),
            tls_ca_cert_dir: String::new(),
            tls_auth_clients: "yes".into(),
            tls_protocols: String::new(),
            tls_cluster: false,
            tls_memcache: false,
            node_name: String::new(),
            cluster_name: "shoal".into(),
            cluster_secret: String::new(),
            cluster_nodes: Vec::new(),
            replicas: 1,
            write_ack: "owner".into(),
            min_replicas_to_write: 0,
            cluster_timeout_ms: 1000,
            tombstone_ttl_ms: 60_000,
            cluster_mode: "off".into(),
            cluster_port: None,
            gossip_port: None,
            cluster_seeds: Vec::new(),
            cluster_client_port: None,
            cluster_announce_port: 0,
            cluster_announce_ip: String::new(),
            join_timeout_ms: 3000,
            cluster_bootstrap: false,
            allow_weak_cluster_secret: false,
            handoff_rate: ByteSize(64 * 1024 * 1024),
            leave_timeout_ms: 60_000,
        }
    }
}

/// Most worker threads `threads` may ask for.
pub const MAX_THREADS: usize = 256;

/// The keys `NodeConfig` accepts, for `SHOAL_*` environment overrides and `--help`.
pub const CONFIG_KEYS: &[&str] = &[
    "bind",
    "port",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "lfu-log-factor",
    "lfu-decay-time",
    "requirepass",
    "user",
    "aclfile",
    "dir",
    "dbfilename",
    "maxclients",
    "timeout",
    "tcp-keepalive",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "acllog-max-len",
    "tracking-table-max-keys",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "latency-monitor-threshold",
    "busy-reply-threshold",
    "proto-max-bulk-len",
    "proto-max-multibulk-len",
    "proto-inline-max-size",
    "client-query-buffer-limit",
    "client-output-buffer-limit",
    "maxmemory-clients",
    "shutdown-timeout-ms",
    "hz",
    "notify-keyspace-events",
    "threads",
    "log-level",
    "memcache-port",
    "unixsocket",
    "unixsocketperm",
    "memcache-unixsocket",
    "memcache-unixsocketperm",
    "memcache-disable-flush-all",
    "enable-debug-command",
    "metrics-port",
    "memcache-max-item-size",
    "tls-port",
    "tls-cert-file",
    "tls-key-file",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-auth-clients",
    "tls-protocols",
    "tls-cluster",
    "tls-memcache",
    "node-name",
    "cluster-name",
    "cluster-secret",
    "cluster-nodes",
    "replicas",
    "write-ack",
    "min-replicas-to-write",
    "cluster-timeout-ms",
    "tombstone-ttl-ms",
    "cluster-mode",
    "cluster-port",
    "gossip-port",
    "cluster-seeds",
    "cluster-client-port",
    "cluster-announce-port",
    "cluster-announce-ip",
    "join-timeout-ms",
    "cluster-bootstrap",
    "allow-weak-cluster-secret",
    "handoff-rate",
    "leave-timeout-ms",
];

/// Keys whose values are text even when they look like numbers (a password `123456`).
pub const STRING_KEYS: &[&str] = &[
    "bind",
    "maxmemory-policy",
    "requirepass",
    "user",
    "aclfile",
    "dir",
    "dbfilename",
    "client-output-buffer-limit",
    "maxmemory-clients",
    "log-level",
    "unixsocket",
    "memcache-unixsocket",
    "enable-debug-command",
    "tls-cert-file",
    "tls-key-file",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-auth-clients",
    "tls-protocols",
    "node-name",
    "cluster-name",
    "cluster-secret",
    "cluster-nodes",
    "write-ack",
    "cluster-mode",
    "cluster-seeds",
    "cluster-announce-ip",
];

/// Keys whose values are booleans (`true`/`yes`, `false`/`no` in the environment and flags).
pub const BOOL_KEYS: &[&str] = &[
    "memcache-disable-flush-all",
    "cluster-bootstrap",
    "allow-weak-cluster-secret",
    "tls-cluster",
    "tls-memcache",
];

/// The shortest `cluster-secret` a node starts with (unless `allow-weak-cluster-secret`).
pub const MIN_SECRET_LEN: usize = 16;
/// The placeholder secret of `deploy/kubernetes/shoal.yaml`, refused like a short one.
pub const EXAMPLE_SECRET: &str = "REPLACE-ME-with-openssl-rand-hex-32";

/// Why `secret` is too weak to start a cluster with, if it is (an empty one is refused
/// elsewhere, with its own message).
pub fn weak_secret(secret: &str) -> Option<String> {
    if secret == EXAMPLE_SECRET {
        Some(
            "cluster-secret is the example from the Kubernetes manifest: make one with \
              `openssl rand -hex 32`"
                .into(),
        )
    } else if !secret.is_empty() && secret.len() < MIN_SECRET_LEN {
        Some(format!(
            "cluster-secret is {} bytes, fewer than {MIN_SECRET_LEN}: make one with \
             `openssl rand -hex 32`",
            secret.len()
        ))
    } else {
        None
    }
}

/// Keys that have no default value: the feature is off unless they are set.
pub const OPTIONAL_KEYS: &[&str] = &[
    "memcache-port",
    "metrics-port",
    "tls-port",
    "cluster-port",
    "gossip-port",
    "cluster-client-port",
];

/// A setting's environment variable: `maxmemory-policy` -> `SHOAL_MAXMEMORY_POLICY`.
pub fn env_var_name(key: &str) -> String {
    format!("SHOAL_{}", key.replace('-', "_").to_ascii_uppercase())
}

impl NodeConfig {
    /// Checks values that deserialization alone cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !self.user.is_empty() && !self.aclfile.is_empty() {
            return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
        }
        if crate::notify::parse(&self.notify_keyspace_events).is_none() {
            return Err(format!(
                "invalid notify-keyspace-events '{}': {}",
                self.notify_keyspace_events,
                crate::notify::INVALID
            ));
        }
        shoal_store::EvictionPolicy::from_str(&self.maxmemory_policy)
            .map_err(|_| format!("invalid maxmemory-policy '{}'", self.maxmemory_policy))?;
        if self.maxmemory_samples == 0 || self.maxmemory_samples > 64 {
            return Err("maxmemory-samples must be between 1 and 64".into());
        }
        if self.maxclients == 0 {
            return Err("maxclients must be at least 1".into());
        }
        if self.timeout > i32::MAX as u64 {
            return Err("timeout must be between 0 and 2147483647".into());
        }
        if self.tcp_keepalive > i32::MAX as u64 {
            return Err("tcp-keepalive must be between 0 and 2147483647".into());
        }
        if let Err(e) = check_bulk_len(self.proto_max_bulk_len.0) {
            return Err(format!("proto-max-bulk-len {e}"));
        }
        if self.proto_max_multibulk_len == 0 {
            return Err("proto-max-multibulk-len must be at least 1".into());
        }
        if self.hz == 0 || self.hz > 500 {
            return Err("hz must be between 1 and 500".into());
        }
        if self.threads > MAX_THREADS {
            return Err(format!(
                "threads must be between 0 (one per core) and {MAX_THREADS}"
            ));
        }
        if self.memcache_max_item_size.0 < 1024
            || self.memcache_max_item_size.0 > self.proto_max_bulk_len.0
        {
            return Err("memcache-max-item-size must be between 1kb and proto-max-bulk-len".into());
        }
        match self.log_level.as_str() {
            "error" | "warn" | "info" | "debug" | "trace" => {}
            other => return Err(format!("invalid log-level '{other}'")),
        }
        if self.dbfilename.is_empty() || self.dbfilename.contains('/') {
            return Err("dbfilename can't be a path, just a filename".into());
        }
        if !matches!(self.enable_debug_command.as_str(), "no" | "yes" | "local") {
            return Err(format!(
                "invalid enable-debug-command '{}': no, yes or local",
                self.enable_debug_command
            ));
        }
        for (key, path) in [
            ("unixsocket", &self.unixsocket),
            ("memcache-unixsocket", &self.memcache_unixsocket),
        ] {
            // A socket address holds 107 bytes of path and its NUL.
            if path.len() > MAX_SOCKET_PATH {
                return Err(format!(
                    "{key} is {} bytes long, more than a Unix socket's {MAX_SOCKET_PATH}",
                    path.len()
                ));
            }
        }
        if !self.unixsocket.is_empty() && self.unixsocket == self.memcache_unixsocket {
            return Err("unixsocket and memcache-unixsocket must be different paths".into());
        }
        WriteAck::from_str(&self.write_ack)?;
        if !matches!(
            self.tls_auth_clients.to_ascii_lowercase().as_str(),
            "yes" | "no" | "optional"
        ) {
            return Err(format!(
                "invalid tls-auth-clients '{}' (yes, no or optional)",
                self.tls_auth_clients
            ));
        }
        if self.tls_cluster && self.cluster_name.len() > 251 {
            return Err("cluster-name must be at most 251 bytes with tls-cluster".into());
        }
        if self.tls_memcache && self.memcache_port.is_none() {
            return Err("tls-memcache is set but there is no memcache-port".into());
        }
        if self.cluster_timeout_ms == 0 {
            return Err("cluster-timeout-ms must be at least 1".into());
        }
        match self.cluster_mode.as_str() {
            "off" => {}
            "gossip" => {
                if !self.cluster_nodes.is_empty() {
                    return Err("cluster-mode gossip finds members through cluster-seeds: \
                        remove cluster-nodes (the static list)"
                        .into());
                }
                if self.cluster_secret.is_empty() {
                    return Err("cluster-mode is gossip but no cluster-secret: set \
                        cluster-secret (or SHOAL_CLUSTER_SECRET)"
                        .into());
                }
                if self.handoff_rate.0 < 64 * 1024 {
                    return Err("handoff-rate must be at least 64kb (per second)".into());
                }
                let name = self.resolved_node_name();
                if name.len() > 255 {
                    return Err("node-name must be at most 255 bytes".into());
                }
                if !self.cluster_announce_ip.is_empty()
                    && self
                        .cluster_announce_ip
                        .parse::<std::net::IpAddr>()
                        .is_err()
                {
                    return Err(format!(
                        "invalid cluster-announce-ip '{}'",
                        self.cluster_announce_ip
                    ));
                }
            }
            other => {
                return Err(format!(
                    "invalid cluster-mode '{other}' (expected off or gossip)"
                ))
            }
        }
        let clustered = self.gossip() || !self.cluster_nodes.is_empty();
        if let Some(why) = weak_secret(&self.cluster_secret).filter(|_| clustered) {
            if !self.allow_weak_cluster_secret {
                return Err(format!(
                    "{why} (or set allow-weak-cluster-secret = true, for a test cluster)"
                ));
            }
        }
        if self.cluster_client_port.is_some() && !self.gossip() {
            return Err(if self.cluster_nodes.is_empty() {
                "cluster-client-port needs a cluster (cluster-mode gossip, or cluster-nodes): \
                 a single node has no slots to redirect"
            } else {
                "with cluster-nodes, name each node's cluster-client port in the list \
                 (name=host:port@cluster-port+cluster-client-port), not in cluster-client-port"
            }
            .into());
        }
        if self.cluster_announce_port != 0 && (self.cluster_client_port.is_none() || !self.gossip())
        {
            return Err("cluster-announce-port is the port gossip announces for \
                cluster-client-port: set cluster-client-port and cluster-mode gossip"
                .into());
        }
        if !self.cluster_nodes.is_empty() {
            let nodes = self.cluster_members()?;
            if self.cluster_secret.is_empty() {
                return Err(
                    "cluster-nodes is set but no cluster-secret: set cluster-secret \
                    (or SHOAL_CLUSTER_SECRET), or remove cluster-nodes to run a single node"
                        .into(),
                );
            }
            let me = self.resolved_node_name();
            if !nodes.iter().any(|n| n.name == me) {
                return Err(format!(
                    "this node's name '{me}' is not in cluster-nodes (set node-name)"
                ));
            }
        }
        Ok(())
    }

    /// True when a listener or the inter-node links use TLS.
    pub fn uses_tls(&self) -> bool {
        self.tls_port.is_some() || self.tls_cluster || self.tls_memcache
    }

    /// True in gossip mode.
    pub fn gossip(&self) -> bool {
        self.cluster_mode == "gossip"
    }

    /// The inter-node TCP port to bind in gossip mode (see `cluster-port`).
    pub fn resolved_cluster_port(&self) -> u16 {
        match self.cluster_port {
            Some(p) => p,
            None if self.port == 0 => 0,
            None => self.port.checked_add(10_000).unwrap_or(0),
        }
    }

    /// `node-name`, or the host name when it is empty.
    pub fn resolved_node_name(&self) -> String {
        if !self.node_name.is_empty() {
            return self.node_name.clone();
        }
        std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|h| h.trim().to_owned())
                    .filter(|h| !h.is_empty())
            })
            .unwrap_or_else(|| "shoal".into())
    }

    /// The parsed `cluster-nodes` list (checked: names unique, addresses valid, at most
    /// `MAX_CLUSTER_NODES`).
    pub fn cluster_members(&self) -> Result<Vec<NodeAddr>, String> {
        let nodes: Vec<NodeAddr> = self
            .cluster_nodes
            .iter()
            .map(|s| s.parse())
            .collect::<Result<_, _>>()?;
        if nodes.len() > MAX_CLUSTER_NODES {
            return Err(format!(
                "cluster-nodes lists more than {MAX_CLUSTER_NODES} nodes"
            ));
        }
        for (i, n) in nodes.iter().enumerate() {
            if nodes[..i].iter().any(|m| m.name == n.name) {
                return Err(format!(
                    "node name '{}' appears twice in cluster-nodes",
                    n.name
                ));
            }
        }
        Ok(nodes)
    }
}

/// Most members of one cluster (the SCAN cursor gives a member index, and a stand-in index
/// plus one, 10 bits each).
pub const MAX_CLUSTER_NODES: usize = 1023;

/// When a write is acknowledged to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteAck {
    Owner,
    All,
}

impl FromStr for WriteAck {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "owner" => Ok(WriteAck::Owner),
            "all" => Ok(WriteAck::All),
            other => Err(format!("invalid write-ack '{other}' (owner or all)")),
        }
    }
}

/// One `cluster-nodes` entry: `name=host:port@cluster-port`, optionally followed by
/// `+cluster-client-port` (the node's Redis Cluster client port, on the same host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAddr {
    pub name: String,
    /// Where clients reach the node (RESP).
    pub client: std::net::SocketAddr,
    /// Where other nodes reach it (the inter-node protocol).
    pub cluster: std::net::SocketAddr,
    /// Where Redis Cluster clients reach it, if it serves them (`cluster-client-port`).
    pub cluster_client: Option<std::net::SocketAddr>,
}

impl FromStr for NodeAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "invalid cluster-nodes entry '{s}': expected \
                 name=host:port@cluster-port[+cluster-client-port]"
            )
        };
        let (name, addrs) = s.split_once('=').ok_or_else(bad)?;
        let (client, ports) = addrs.rsplit_once('@').ok_or_else(bad)?;
        if name.is_empty() || name.len() > 255 {
            return Err(bad());
        }
        let client = resolve(client).ok_or_else(bad)?;
        let (cport, ccport) = match ports.split_once('+') {
            Some((c, cc)) => (c, Some(cc)),
            None => (ports, None),
        };
        let port: u16 = cport.parse().map_err(|_| bad())?;
        // Port 0 would bind a free port that no other node could name.
        let cluster_client = match ccport {
            Some(p) => match p.parse::<u16>() {
                Ok(p) if p != 0 => Some(std::net::SocketAddr::new(client.ip(), p)),
                _ => return Err(bad()),
            },
            None => None,
        };
        Ok(NodeAddr {
            name: name.to_owned(),
            client,
            cluster: std::net::SocketAddr::new(client.ip(), port),
            cluster_client,
        })
    }
}

fn resolve(hostport: &str) -> Option<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    hostport.to_socket_addrs().ok()?.next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_follow_redis_units() {
        assert_eq!("100".parse::<ByteSize>().unwrap().0, 100);
        assert_eq!("1k".parse::<ByteSize>().unwrap().0, 1000);
        assert_eq!("1kb".parse::<ByteSize>().unwrap().0, 1024);
        assert_eq!("64MB".parse::<ByteSize>().unwrap().0, 64 << 20);
        assert_eq!("2gb".parse::<ByteSize>().unwrap().0, 2 << 30);
        assert!("12xb".parse::<ByteSize>().is_err());
        assert!("gb".parse::<ByteSize>().is_err());
        assert!("99999999999999999999gb".parse::<ByteSize>().is_err());
    }

    /// proto-max-bulk-len stops where an argument could no longer be a key of the store.
    #[test]
    fn the_bulk_length_bound_keeps_every_argument_a_possible_key() {
        assert!(check_bulk_len(1023).is_err());
        assert!(check_bulk_len(1024).is_ok());
        assert!(check_bulk_len(MAX_BULK_LEN).is_ok());
        assert!(check_bulk_len(MAX_BULK_LEN + 1).is_err());
        assert_eq!(MAX_BULK_LEN as usize + 4, shoal_store::MAX_KEY_LEN);
        let config = NodeConfig {
            proto_max_bulk_len: ByteSize(1 << 30),
            ..NodeConfig::default()
        };
        assert!(config.validate().is_err());
    }

    #[test]
    fn output_buffer_limits_take_redis_form() {
        let d = OutputBufferLimits::default();
        assert_eq!(
            d.to_string(),
            "normal 268435456 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        let l = d.apply("normal 8mb 4mb 10").unwrap();
        assert_eq!(
            l.normal,
            ClassLimit {
                hard: 8 << 20,
                soft: 4 << 20,
                soft_seconds: 10
            }
        );
        assert_eq!((l.replica, l.pubsub), (d.replica, d.pubsub));
        let l = d.apply("replica 1mb 0 0 PUBSUB 0 0 0").unwrap();
        assert_eq!(
            (l.normal, l.replica.hard, l.pubsub),
            (d.normal, 1 << 20, ClassLimit::default())
        );
        assert_eq!(d.apply("1mb").unwrap().normal.hard, 1 << 20);
        assert_eq!(d.apply(&d.to_string()).unwrap(), d);
        assert!(d
            .apply("normal 1mb 0")
            .unwrap_err()
            .starts_with("Wrong number"));
        assert!(d
            .apply("master 1mb 0 0")
            .unwrap_err()
            .starts_with("Invalid client class"));
        assert!(d
            .apply("normal 1xb 0 0")
            .unwrap_err()
            .starts_with("Error in hard"));
        assert!(d.apply("").is_err());
    }

    #[test]
    fn socket_permissions_are_octal_as_redis_writes_them() {
        assert_eq!("700".parse::<SocketPerm>(), Ok(SocketPerm(0o700)));
        assert_eq!("0770".parse::<SocketPerm>(), Ok(SocketPerm(0o770)));
        assert_eq!("0".parse::<SocketPerm>(), Ok(SocketPerm(0)));
        for bad in ["800", "1777", "-1", "+7", "rwx", ""] {
            assert!(bad.parse::<SocketPerm>().is_err(), "{bad}");
        }
        assert_eq!(SocketPerm(0o700).to_string(), "700");
        assert_eq!(SocketPerm(0).to_string(), "0");
        // A number in the file reads as the same digits in octal.
        let table: toml::Table = "unixsocketperm = 770\nmemcache-unixsocketperm = \"755\""
            .parse()
            .unwrap();
        let c: NodeConfig = toml::Value::Table(table).try_into().unwrap();
        assert_eq!(c.unixsocketperm, SocketPerm(0o770));
        assert_eq!(c.memcache_unixsocketperm, SocketPerm(0o755));
        assert_eq!(
            NodeConfig::default().memcache_unixsocketperm,
            SocketPerm(0o700)
        );
    }

    #[test]
    fn the_client_memory_limit_reads_and_applies_as_redis_s() {
        use ClientMemoryLimit::*;
        assert_eq!("0".parse(), Ok(Bytes(0)));
        assert_eq!("1k".parse(), Ok(Bytes(1000)));
        assert_eq!("1mb".parse(), Ok(Bytes(1 << 20)));
        assert_eq!("10%".parse(), Ok(Percent(10)));
        assert_eq!("100%".parse(), Ok(Percent(100)));
        assert_eq!("0%".parse(), Ok(Bytes(0)), "Redis shows 0");
        assert_eq!(
            "101%".parse::<ClientMemoryLimit>(),
            Err("percentage argument must be less or equal to 100".into())
        );
        for bad in ["-1", "-1%", "+5%", "%", "x%", "1xb", ""] {
            assert_eq!(
                bad.parse::<ClientMemoryLimit>(),
                Err("argument must be a memory or percent value".into()),
                "{bad}"
            );
        }
        assert_eq!(Bytes(1000).to_string(), "1000");
        assert_eq!(Percent(10).to_string(), "10%");
        // 0 and a percentage without maxmemory: no limit; else at least 128 KiB.
        assert_eq!(Bytes(0).bytes(1 << 30), 0);
        assert_eq!(Percent(10).bytes(0), 0);
        assert_eq!(Percent(0).bytes(1 << 30), 0);
        assert_eq!(Percent(10).bytes(10 << 20), 1 << 20);
        assert_eq!(Percent(100).bytes(u64::MAX), u64::MAX);
        assert_eq!(Bytes(1000).bytes(0), MIN_CLIENT_MEMORY_LIMIT);
        assert_eq!(Bytes(5 << 20).bytes(0), 5 << 20);
        let table: toml::Table = "maxmemory-clients = \"5%\"".parse().unwrap();
        let c: NodeConfig = toml::Value::Table(table).try_into().unwrap();
        assert_eq!(c.maxmemory_clients, Percent(5));
        let table: toml::Table = "maxmemory-clients = 1048576".parse().unwrap();
        let c: NodeConfig = toml::Value::Table(table).try_into().unwrap();
        assert_eq!(c.maxmemory_clients, Bytes(1 << 20));
    }

    #[test]
    fn socket_paths_fit_a_socket_address_and_differ() {
        let long = NodeConfig {
            unixsocket: "/".repeat(MAX_SOCKET_PATH + 1),
            ..NodeConfig::default()
        };
        assert!(long.validate().unwrap_err().contains("unixsocket"));
        let fits = NodeConfig {
            unixsocket: "/".repeat(MAX_SOCKET_PATH),
            ..NodeConfig::default()
        };
        assert!(fits.validate().is_ok());
        let same = NodeConfig {
            unixsocket: "/tmp/a.sock".into(),
            memcache_unixsocket: "/tmp/a.sock".into(),
            ..NodeConfig::default()
        };
        assert!(same.validate().is_err());
    }

    #[test]
    fn env_names() {
        assert_eq!(env_var_name("maxmemory-policy"), "SHOAL_MAXMEMORY_POLICY");
        assert_eq!(env_var_name("port"), "SHOAL_PORT");
    }

    #[test]
    fn cluster_node_entries_parse() {
        let n: NodeAddr = "n1=127.0.0.1:7001@17001".parse().unwrap();
        assert_eq!(n.name, "n1");
        assert_eq!(n.client.port(), 7001);
        assert_eq!(n.cluster.to_string(), "127.0.0.1:17001");
        assert_eq!(n.cluster_client, None);
        let n: NodeAddr = "n1=127.0.0.1:7001@17001+7101".parse().unwrap();
        assert_eq!(n.cluster.to_string(), "127.0.0.1:17001");
        assert_eq!(n.cluster_client.unwrap().to_string(), "127.0.0.1:7101");
        for bad in [
            "n1",
            "=127.0.0.1:1@2",
            "n1=127.0.0.1:1",
            "n1=127.0.0.1:1@x",
            "n1=127.0.0.1:1@2+",
            "n1=127.0.0.1:1@2+x",
            "n1=127.0.0.1:1@2+0",
        ] {
            assert!(bad.parse::<NodeAddr>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_cluster_client_port_needs_a_cluster() {
        let mut c = NodeConfig {
            cluster_client_port: Some(0),
            ..NodeConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("needs a cluster"));
        c.cluster_secret = "a-test-cluster-secret".into();
        c.cluster_mode = "gossip".into();
        c.validate().unwrap();
        c.cluster_announce_port = 7000;
        c.validate().unwrap();
        c.cluster_client_port = None;
        assert!(c.validate().unwrap_err().contains("cluster-announce-port"));
    }

    #[test]
    fn a_cluster_needs_a_secret_and_itself() {
        let mut c = NodeConfig {
            node_name: "a".into(),
            cluster_nodes: vec!["a=127.0.0.1:1@2".into(), "b=127.0.0.1:3@4".into()],
            ..NodeConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("cluster-secret"));
        c.cluster_secret = "a-test-cluster-secret".into();
        c.validate().unwrap();
        c.node_name = "z".into();
        assert!(c.validate().unwrap_err().contains("not in cluster-nodes"));
        c.node_name = "a".into();
        c.cluster_nodes.push("a=127.0.0.1:5@6".into());
        assert!(c.validate().unwrap_err().contains("twice"));
    }

    #[test]
    fn node_list_accepts_a_string_or_an_array() {
        let c: NodeConfig =
            toml::from_str("cluster-nodes = \"a=127.0.0.1:1@2, b=127.0.0.1:3@4\"").unwrap();
        assert_eq!(c.cluster_nodes.len(), 2);
        let c: NodeConfig = toml::from_str("cluster-nodes = [\"a=127.0.0.1:1@2\"]").unwrap();
        assert_eq!(c.cluster_nodes, vec!["a=127.0.0.1:1@2".to_string()]);
    }

    #[test]
    fn users_are_a_string_or_an_array_each_kept_whole() {
        let c: NodeConfig = toml::from_str("user = \"app on >pw ~a:* +@all\"").unwrap();
        assert_eq!(c.user, vec!["app on >pw ~a:* +@all".to_string()]);
        let c: NodeConfig = toml::from_str("user = [\"a on\", \"b off\"]").unwrap();
        assert_eq!(c.user, vec!["a on".to_string(), "b off".to_string()]);
    }

    #[test]
    fn a_weak_or_example_secret_is_refused_unless_allowed() {
        let mut c = NodeConfig {
            cluster_mode: "gossip".into(),
            cluster_secret: "short".into(),
            ..NodeConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("5 bytes, fewer than 16"));
        c.cluster_secret = EXAMPLE_SECRET.into();
        assert!(c.validate().unwrap_err().contains("example"));
        c.allow_weak_cluster_secret = true;
        c.validate().unwrap();
        c.allow_weak_cluster_secret = false;
        c.cluster_secret = "0123456789abcdef".into();
        c.validate().unwrap();
        // A single node has no cluster to protect.
        let single = NodeConfig {
            cluster_secret: "short".into(),
            ..NodeConfig::default()
        };
        single.validate().unwrap();
    }

    #[test]
    fn the_manifest_placeholder_is_the_refused_example_and_its_settings_exist() {
        let manifest = include_str!("../../../deploy/kubernetes/shoal.yaml");
        assert!(manifest.contains(&format!("cluster-secret: \"{EXAMPLE_SECRET}\"")));
        for line in manifest.lines() {
            let Some(var) = line.trim().strip_prefix("- name: SHOAL_") else {
                continue;
            };
            let key = var.to_ascii_lowercase().replace('_', "-");
            assert!(
                CONFIG_KEYS.contains(&key.as_str()),
                "SHOAL_{var} sets no setting"
            );
        }
    }

    #[test]
    fn defaults_are_valid() {
        NodeConfig::default().validate().unwrap();
    }
}

#[cfg(test)]
mod gossip_config_tests {
    use super::*;

    #[test]
    fn gossip_mode_needs_a_secret_and_no_static_list() {
        let mut c = NodeConfig {
            cluster_mode: "gossip".into(),
            ..NodeConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("cluster-secret"));
        c.cluster_secret = "a-test-cluster-secret".into();
        c.validate().unwrap();
        c.cluster_nodes = vec!["a=127.0.0.1:1@2".into()];
        assert!(c.validate().unwrap_err().contains("cluster-seeds"));
        c.cluster_nodes.clear();
        c.cluster_mode = "mesh".into();
        assert!(c.validate().unwrap_err().contains("cluster-mode"));
    }

    #[test]
    fn the_cluster_port_defaults_to_port_plus_10000() {
        let mut c = NodeConfig::default();
        assert_eq!(c.resolved_cluster_port(), 16379);
        c.port = 0;
        assert_eq!(c.resolved_cluster_port(), 0);
        c.cluster_port = Some(7000);
        assert_eq!(c.resolved_cluster_port(), 7000);
        c.cluster_port = None;
        c.port = 60000;
        assert_eq!(c.resolved_cluster_port(), 0);
        let c: NodeConfig = toml::from_str("cluster-seeds = \"a:1, b:2\"").unwrap();
        assert_eq!(c.cluster_seeds, vec!["a:1".to_string(), "b:2".to_string()]);
    }
}
