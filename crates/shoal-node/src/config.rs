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
    /// Password clients must send with AUTH / HELLO AUTH; empty = no password.
    pub requirepass: String,
    /// Connected clients at most; one more gets `-ERR max number of clients reached`.
    pub maxclients: usize,
    /// Close a client idle for this many seconds; 0 = never (Redis's `timeout`).
    pub timeout: u64,
    /// Largest bulk argument accepted (Redis's `proto-max-bulk-len`).
    pub proto_max_bulk_len: ByteSize,
    /// Most arguments in one command (Redis's fixed 1,048,576, here configurable).
    pub proto_max_multibulk_len: usize,
    /// Longest inline command line (Redis's PROTO_INLINE_MAX_SIZE, 64 KiB).
    pub proto_inline_max_size: ByteSize,
    /// Unsent reply bytes one client may hold before it is disconnected (hard limit). Redis
    /// leaves normal clients unlimited; Shoal bounds them so a client that never reads cannot
    /// grow the server's memory. 0 = no limit (replies still wait for the socket: a client
    /// that does not read stops being read from).
    pub client_output_buffer_limit: ByteSize,
    /// How long SIGTERM/SIGINT waits for connections to answer what they already read.
    pub shutdown_timeout_ms: u64,
    /// Active expiry cycles per second (Redis's `hz`).
    pub hz: u32,
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub log_level: String,
    /// Port of the Memcached text protocol listener (on `bind`); absent = no Memcached
    /// listener, 0 = any free port. Memcached's own default is 11211.
    pub memcache_port: Option<u16>,
    /// Largest Memcached item value (Memcached's `-I`, 1 MiB by default).
    pub memcache_max_item_size: ByteSize,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            bind: "127.0.0.1".into(),
            port: 6379,
            maxmemory: ByteSize(1024 * 1024 * 1024),
            maxmemory_policy: "allkeys-lru".into(),
            maxmemory_samples: 5,
            requirepass: String::new(),
            maxclients: 10_000,
            timeout: 0,
            proto_max_bulk_len: ByteSize(512 * 1024 * 1024),
            proto_max_multibulk_len: 1024 * 1024,
            proto_inline_max_size: ByteSize(64 * 1024),
            client_output_buffer_limit: ByteSize(256 * 1024 * 1024),
            shutdown_timeout_ms: 10_000,
            hz: 10,
            log_level: "info".into(),
            memcache_port: None,
            memcache_max_item_size: ByteSize(1024 * 1024),
        }
    }
}

/// The keys `NodeConfig` accepts, for `SHOAL_*` environment overrides and `--help`.
pub const CONFIG_KEYS: &[&str] = &[
    "bind",
    "port",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "requirepass",
    "maxclients",
    "timeout",
    "proto-max-bulk-len",
    "proto-max-multibulk-len",
    "proto-inline-max-size",
    "client-output-buffer-limit",
    "shutdown-timeout-ms",
    "hz",
    "log-level",
    "memcache-port",
    "memcache-max-item-size",
];

/// Keys that have no default value: the feature is off unless they are set.
pub const OPTIONAL_KEYS: &[&str] = &["memcache-port"];

/// A setting's environment variable: `maxmemory-policy` -> `SHOAL_MAXMEMORY_POLICY`.
pub fn env_var_name(key: &str) -> String {
    format!("SHOAL_{}", key.replace('-', "_").to_ascii_uppercase())
}

impl NodeConfig {
    /// Checks values that deserialization alone cannot.
    pub fn validate(&self) -> Result<(), String> {
        shoal_store::EvictionPolicy::from_str(&self.maxmemory_policy)
            .map_err(|_| format!("invalid maxmemory-policy '{}'", self.maxmemory_policy))?;
        if self.maxmemory_samples == 0 || self.maxmemory_samples > 64 {
            return Err("maxmemory-samples must be between 1 and 64".into());
        }
        if self.maxclients == 0 {
            return Err("maxclients must be at least 1".into());
        }
        if self.proto_max_bulk_len.0 < 1024
            || self.proto_max_bulk_len.0 > shoal_store::MAX_KEY_LEN as u64
        {
            return Err("proto-max-bulk-len must be between 1kb and 2gb - 1".into());
        }
        if self.proto_max_multibulk_len == 0 {
            return Err("proto-max-multibulk-len must be at least 1".into());
        }
        if self.hz == 0 || self.hz > 500 {
            return Err("hz must be between 1 and 500".into());
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
        Ok(())
    }
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

    #[test]
    fn env_names() {
        assert_eq!(env_var_name("maxmemory-policy"), "SHOAL_MAXMEMORY_POLICY");
        assert_eq!(env_var_name("port"), "SHOAL_PORT");
    }

    #[test]
    fn defaults_are_valid() {
        NodeConfig::default().validate().unwrap();
    }
}
