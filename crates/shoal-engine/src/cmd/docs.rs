//! Argument documentation for COMMAND DOCS, from the syntax lines of Redis's manual.
//!
//! redis-cli 7.2+ builds its command hints from the `arguments` of COMMAND DOCS, and client
//! libraries use them to introspect. Each command's syntax is written once, as in the Redis
//! manual (`key value [NX | XX] [EX seconds | PX milliseconds]`), and `parse` turns it into
//! Redis's argument tree: `[...]` is optional, `a | b` a oneof, `x [x ...]` multiple, an
//! upper-case word a token (alone: a pure-token), a group of several words a block.

use shoal_resp::Reply;

/// Syntax per command (and `container|sub` for subcommands), after the command name.
pub static SYNTAX: &[(&str, &str)] = &[
    ("ping", "[message]"),
    ("echo", "message"),
    ("hello", "[protover [AUTH username password] [SETNAME clientname]]"),
    ("auth", "[username] password"),
    ("select", "index"),
    ("quit", ""),
    ("reset", ""),
    ("multi", ""),
    ("exec", ""),
    ("discard", ""),
    ("watch", "key [key ...]"),
    ("unwatch", ""),
    ("client", ""),
    ("client|id", ""),
    ("client|setname", "connection-name"),
    ("client|getname", ""),
    ("client|setinfo", "LIB-NAME libname | LIB-VER libver"),
    ("client|info", ""),
    ("client|list", "[TYPE NORMAL | MASTER | REPLICA | PUBSUB] [ID client-id [client-id ...]]"),
    ("client|kill", "ip:port | [ID client-id] [TYPE NORMAL | MASTER | SLAVE | REPLICA | PUBSUB] [USER username] [ADDR ip:port] [LADDR ip:port] [SKIPME YES | NO] [MAXAGE maxage]"),
    ("client|no-evict", "ON | OFF"),
    ("client|no-touch", "ON | OFF"),
    ("client|tracking", "ON | OFF [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]"),
    ("client|caching", "YES | NO"),
    ("client|unblock", "client-id [TIMEOUT | ERROR]"),
    ("client|pause", "timeout [WRITE | ALL]"),
    ("client|unpause", ""),
    ("client|reply", "ON | OFF | SKIP"),
    ("client|help", ""),
    ("client|getredir", ""),
    ("client|trackinginfo", ""),
    ("lastsave", ""),
    ("save", ""),
    ("bgsave", "[SCHEDULE]"),
    ("bgrewriteaof", ""),
    ("replicaof", "host port"),
    ("slaveof", "host port"),
    ("eval", "script numkeys [key [key ...]] [arg [arg ...]]"),
    ("evalsha", "sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    ("eval_ro", "script numkeys [key [key ...]] [arg [arg ...]]"),
    ("evalsha_ro", "sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    ("script", ""),
    ("script|load", "script"),
    ("script|exists", "sha1 [sha1 ...]"),
    ("script|flush", "[ASYNC | SYNC]"),
    ("script|kill", ""),
    ("script|help", ""),
    ("fcall", "function numkeys [key [key ...]] [arg [arg ...]]"),
    ("fcall_ro", "function numkeys [key [key ...]] [arg [arg ...]]"),
    ("function", ""),
    ("function|load", "[REPLACE] function-code"),
    ("function|delete", "library-name"),
    ("function|list", "[LIBRARYNAME library-name-pattern] [WITHCODE]"),
    ("function|stats", ""),
    ("function|kill", ""),
    ("function|flush", "[ASYNC | SYNC]"),
    ("function|dump", ""),
    ("function|restore", "serialized-value [FLUSH | APPEND | REPLACE]"),
    ("function|help", ""),
    ("module", ""),
    ("module|list", ""),
    ("module|load", "path [arg [arg ...]]"),
    ("module|loadex", "path [CONFIG name value [CONFIG name value ...]] [ARGS args [args ...]]"),
    ("module|unload", "name"),
    ("module|help", ""),
    ("get", "key"),
    ("set", "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"),
    ("setnx", "key value"),
    ("setex", "key seconds value"),
    ("psetex", "key milliseconds value"),
    ("getset", "key value"),
    ("getdel", "key"),
    ("getex", "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]"),
    ("mget", "key [key ...]"),
    ("mset", "key value [key value ...]"),
    ("msetnx", "key value [key value ...]"),
    ("append", "key value"),
    ("strlen", "key"),
    ("incr", "key"),
    ("decr", "key"),
    ("incrby", "key increment"),
    ("decrby", "key decrement"),
    ("incrbyfloat", "key increment"),
    ("getrange", "key start end"),
    ("substr", "key start end"),
    ("setrange", "key offset value"),
    ("lcs", "key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]"),
    ("setbit", "key offset value"),
    ("getbit", "key offset"),
    ("bitcount", "key [start end [BYTE | BIT]]"),
    ("bitpos", "key bit [start [end [BYTE | BIT]]]"),
    ("bitop", "operation destkey key [key ...]"),
    ("bitfield", "key [GET encoding offset | SET encoding offset value | INCRBY encoding offset increment | OVERFLOW overflow-type]"),
    ("bitfield_ro", "key [GET encoding offset [GET encoding offset ...]]"),
    ("hset", "key field value [field value ...]"),
    ("hsetnx", "key field value"),
    ("hmset", "key field value [field value ...]"),
    ("hget", "key field"),
    ("hmget", "key field [field ...]"),
    ("hgetall", "key"),
    ("hkeys", "key"),
    ("hvals", "key"),
    ("hdel", "key field [field ...]"),
    ("hexists", "key field"),
    ("hlen", "key"),
    ("hstrlen", "key field"),
    ("hincrby", "key field increment"),
    ("hincrbyfloat", "key field increment"),
    ("hrandfield", "key [count [WITHVALUES]]"),
    ("hscan", "key cursor [MATCH pattern] [COUNT count]"),
    ("sadd", "key member [member ...]"),
    ("srem", "key member [member ...]"),
    ("smembers", "key"),
    ("sismember", "key member"),
    ("smismember", "key member [member ...]"),
    ("scard", "key"),
    ("spop", "key [count]"),
    ("srandmember", "key [count]"),
    ("smove", "source destination member"),
    ("sscan", "key cursor [MATCH pattern] [COUNT count]"),
    ("sinter", "key [key ...]"),
    ("sinterstore", "destination key [key ...]"),
    ("sintercard", "numkeys key [key ...] [LIMIT limit]"),
    ("sunion", "key [key ...]"),
    ("sunionstore", "destination key [key ...]"),
    ("sdiff", "key [key ...]"),
    ("sdiffstore", "destination key [key ...]"),
    ("lpush", "key element [element ...]"),
    ("rpush", "key element [element ...]"),
    ("lpushx", "key element [element ...]"),
    ("rpushx", "key element [element ...]"),
    ("lpop", "key [count]"),
    ("rpop", "key [count]"),
    ("llen", "key"),
    ("lrange", "key start stop"),
    ("lindex", "key index"),
    ("lset", "key index element"),
    ("lrem", "key count element"),
    ("ltrim", "key start stop"),
    ("linsert", "key BEFORE | AFTER pivot element"),
    ("lpos", "key element [RANK rank] [COUNT num-matches] [MAXLEN len]"),
    ("lmove", "source destination LEFT | RIGHT LEFT | RIGHT"),
    ("lmpop", "numkeys key [key ...] LEFT | RIGHT [COUNT count]"),
    ("blpop", "key [key ...] timeout"),
    ("brpop", "key [key ...] timeout"),
    ("brpoplpush", "source destination timeout"),
    ("blmove", "source destination LEFT | RIGHT LEFT | RIGHT timeout"),
    ("blmpop", "timeout numkeys key [key ...] LEFT | RIGHT [COUNT count]"),
    ("rpoplpush", "source destination"),
    ("zadd", "key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]"),
    ("geoadd", "key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]"),
    ("geodist", "key member1 member2 [M | KM | FT | MI]"),
    ("geohash", "key [member [member ...]]"),
    ("geopos", "key [member [member ...]]"),
    ("georadius", "key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]"),
    ("georadius_ro", "key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]"),
    ("georadiusbymember", "key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key | STOREDIST key]"),
    ("georadiusbymember_ro", "key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]"),
    ("geosearch", "key <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>> [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]"),
    ("geosearchstore", "destination source <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>> [ASC | DESC] [COUNT count [ANY]] [STOREDIST]"),
    ("zincrby", "key increment member"),
    ("zscore", "key member"),
    ("zmscore", "key member [member ...]"),
    ("zcard", "key"),
    ("zcount", "key min max"),
    ("zlexcount", "key min max"),
    ("zrange", "key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]"),
    ("zrangebyscore", "key min max [WITHSCORES] [LIMIT offset count]"),
    ("zrevrangebyscore", "key max min [WITHSCORES] [LIMIT offset count]"),
    ("zrevrange", "key start stop [WITHSCORES]"),
    ("zrangebylex", "key min max [LIMIT offset count]"),
    ("zrevrangebylex", "key max min [LIMIT offset count]"),
    ("zrangestore", "dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]"),
    ("zrank", "key member [WITHSCORE]"),
    ("zrevrank", "key member [WITHSCORE]"),
    ("zrem", "key member [member ...]"),
    ("zremrangebyrank", "key start stop"),
    ("zremrangebyscore", "key min max"),
    ("zremrangebylex", "key min max"),
    ("zpopmin", "key [count]"),
    ("zpopmax", "key [count]"),
    ("zmpop", "numkeys key [key ...] MIN | MAX [COUNT count]"),
    ("bzpopmin", "key [key ...] timeout"),
    ("bzpopmax", "key [key ...] timeout"),
    ("bzmpop", "timeout numkeys key [key ...] MIN | MAX [COUNT count]"),
    ("zunion", "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX] [WITHSCORES]"),
    ("zinter", "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX] [WITHSCORES]"),
    ("zdiff", "numkeys key [key ...] [WITHSCORES]"),
    ("zunionstore", "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX]"),
    ("zinterstore", "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX]"),
    ("zdiffstore", "destination numkeys key [key ...]"),
    ("zintercard", "numkeys key [key ...] [LIMIT limit]"),
    ("zrandmember", "key [count [WITHSCORES]]"),
    ("zscan", "key cursor [MATCH pattern] [COUNT count]"),
    ("wait", "numreplicas timeout"),
    ("waitaof", "numlocal numreplicas timeout"),
    ("debug", ""),
    ("xadd", "key [NOMKSTREAM] [MAXLEN | MINID [= | ~] threshold [LIMIT count]] * | id field value [field value ...]"),
    ("xlen", "key"),
    ("xrange", "key start end [COUNT count]"),
    ("xrevrange", "key end start [COUNT count]"),
    ("xdel", "key id [id ...]"),
    ("xtrim", "key MAXLEN | MINID [= | ~] threshold [LIMIT count]"),
    ("xsetid", "key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]"),
    ("xread", "[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]"),
    ("xreadgroup", "GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]"),
    ("xgroup", ""),
    ("xgroup|create", "key group id | $ [MKSTREAM] [ENTRIESREAD entries-read]"),
    ("xgroup|setid", "key group id | $ [ENTRIESREAD entries-read]"),
    ("xgroup|destroy", "key group"),
    ("xgroup|createconsumer", "key group consumer"),
    ("xgroup|delconsumer", "key group consumer"),
    ("xgroup|help", ""),
    ("xack", "key group id [id ...]"),
    ("xpending", "key group [[IDLE min-idle-time] start end count [consumer]]"),
    ("xclaim", "key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]"),
    ("xautoclaim", "key group consumer min-idle-time start [COUNT count] [JUSTID]"),
    ("xinfo", ""),
    ("xinfo|stream", "key [FULL [COUNT count]]"),
    ("xinfo|groups", "key"),
    ("xinfo|consumers", "key group"),
    ("xinfo|help", ""),
    ("pfadd", "key [element [element ...]]"),
    ("pfcount", "key [key ...]"),
    ("pfmerge", "destkey [sourcekey [sourcekey ...]]"),
    ("pfdebug", "subcommand key"),
    ("pfselftest", ""),
    ("del", "key [key ...]"),
    ("unlink", "key [key ...]"),
    ("exists", "key [key ...]"),
    ("touch", "key [key ...]"),
    ("type", "key"),
    ("sort", "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA] [STORE destination]"),
    ("sort_ro", "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA]"),
    ("expire", "key seconds [NX | XX | GT | LT]"),
    ("pexpire", "key milliseconds [NX | XX | GT | LT]"),
    ("expireat", "key unix-time-seconds [NX | XX | GT | LT]"),
    ("pexpireat", "key unix-time-milliseconds [NX | XX | GT | LT]"),
    ("ttl", "key"),
    ("pttl", "key"),
    ("expiretime", "key"),
    ("pexpiretime", "key"),
    ("persist", "key"),
    ("rename", "key newkey"),
    ("renamenx", "key newkey"),
    ("copy", "source destination [DB destination-db] [REPLACE]"),
    ("move", "key db"),
    ("dump", "key"),
    ("migrate", "host port <key | \"\"> destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key [key ...]]"),
    ("restore", "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"),
    ("swapdb", "index1 index2"),
    ("keys", "pattern"),
    ("object", ""),
    ("object|encoding", "key"),
    ("object|freq", "key"),
    ("object|idletime", "key"),
    ("object|refcount", "key"),
    ("object|help", ""),
    ("memory", ""),
    ("memory|usage", "key [SAMPLES count]"),
    ("memory|help", ""),
    ("memory|stats", ""),
    ("memory|doctor", ""),
    ("memory|malloc-stats", ""),
    ("memory|purge", ""),
    ("scan", "cursor [MATCH pattern] [COUNT count] [TYPE type]"),
    ("randomkey", ""),
    ("dbsize", ""),
    ("flushdb", "[ASYNC | SYNC]"),
    ("flushall", "[ASYNC | SYNC]"),
    ("info", "[section [section ...]]"),
    ("cluster", ""),
    ("cluster|info", ""),
    ("cluster|nodes", ""),
    ("cluster|slots", ""),
    ("cluster|shards", ""),
    ("cluster|myid", ""),
    ("cluster|myshardid", ""),
    ("cluster|keyslot", "key"),
    ("cluster|countkeysinslot", "slot"),
    ("cluster|getkeysinslot", "slot count"),
    ("cluster|replicas", "node-id"),
    ("cluster|slaves", "node-id"),
    ("cluster|count-failure-reports", "node-id"),
    ("cluster|forget", "node-id"),
    ("cluster|reset", "[HARD | SOFT]"),
    ("cluster|localkeys", ""),
    ("cluster|haskey", "key"),
    ("cluster|help", ""),
    ("readonly", ""),
    ("readwrite", ""),
    ("asking", ""),
    ("command", ""),
    ("command|count", ""),
    ("command|list", "[FILTERBY MODULE module-name | ACLCAT category | PATTERN pattern]"),
    ("command|info", "[command-name [command-name ...]]"),
    ("command|docs", "[command-name [command-name ...]]"),
    ("command|getkeys", "command [arg [arg ...]]"),
    ("command|getkeysandflags", "command [arg [arg ...]]"),
    ("command|help", ""),
    ("config", ""),
    ("config|get", "parameter [parameter ...]"),
    ("config|set", "parameter value [parameter value ...]"),
    ("config|resetstat", ""),
    ("config|rewrite", ""),
    ("config|help", ""),
    ("acl", ""),
    ("acl|cat", "[category]"),
    ("acl|deluser", "username [username ...]"),
    ("acl|dryrun", "username command [arg [arg ...]]"),
    ("acl|genpass", "[bits]"),
    ("acl|getuser", "username"),
    ("acl|list", ""),
    ("acl|load", ""),
    ("acl|log", "[count | RESET]"),
    ("acl|save", ""),
    ("acl|setuser", "username [rule [rule ...]]"),
    ("acl|users", ""),
    ("acl|whoami", ""),
    ("acl|help", ""),
    ("slowlog", ""),
    ("slowlog|get", "[count]"),
    ("slowlog|len", ""),
    ("slowlog|reset", ""),
    ("slowlog|help", ""),
    ("lolwut", "[VERSION version]"),
    ("role", ""),
    ("monitor", ""),
    ("subscribe", "channel [channel ...]"),
    ("psubscribe", "pattern [pattern ...]"),
    ("ssubscribe", "shardchannel [shardchannel ...]"),
    ("unsubscribe", "[channel [channel ...]]"),
    ("punsubscribe", "[pattern [pattern ...]]"),
    ("sunsubscribe", "[shardchannel [shardchannel ...]]"),
    ("publish", "channel message"),
    ("spublish", "shardchannel message"),
    ("pubsub", ""),
    ("pubsub|channels", "[pattern]"),
    ("pubsub|numpat", ""),
    ("pubsub|numsub", "[channel [channel ...]]"),
    ("pubsub|shardchannels", "[pattern]"),
    ("pubsub|shardnumsub", "[shardchannel [shardchannel ...]]"),
    ("pubsub|help", ""),
    ("latency", ""),
    ("latency|doctor", ""),
    ("latency|graph", "event"),
    ("latency|history", "event"),
    ("latency|histogram", "[command [command ...]]"),
    ("latency|latest", ""),
    ("latency|reset", "[event [event ...]]"),
    ("latency|help", ""),
    ("shutdown", "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]"),
    ("time", ""),
];

/// The syntax line of a command or `container|sub`, if documented.
pub fn syntax(name: &str) -> Option<&'static str> {
    SYNTAX.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Each subcommand's arity, as Redis's COMMAND INFO gives it (`container|sub`, sorted; 7.0's
/// numbers, with 7.2's for what changed: COMMAND GETKEYS and GETKEYSANDFLAGS take a command
/// alone, and CLIENT SETINFO, NO-TOUCH and CLUSTER MYSHARDID are 7.2's):
/// checked before the subcommand runs or is queued in MULTI, as Redis checks it, with its
/// error (`ERR wrong number of arguments for 'config|set' command`). Shoal's own
/// subcommands (CLUSTER HASKEY, LOCALKEYS) check their arguments themselves. Redis's that
/// Shoal's rows do not list (CLUSTER's slot administration, SCRIPT DEBUG) are here too: a
/// container's subcommand found nowhere is unknown (`cmd::prepare_found`).
const SUBCOMMAND_ARITY: &[(&str, i32)] = &[
    ("acl|cat", -2),
    ("acl|deluser", -3),
    ("acl|dryrun", -4),
    ("acl|genpass", -2),
    ("acl|getuser", 3),
    ("acl|help", 2),
    ("acl|list", 2),
    ("acl|load", 2),
    ("acl|log", -2),
    ("acl|save", 2),
    ("acl|setuser", -3),
    ("acl|users", 2),
    ("acl|whoami", 2),
    ("client|caching", 3),
    ("client|getname", 2),
    ("client|getredir", 2),
    ("client|help", 2),
    ("client|id", 2),
    ("client|info", 2),
    ("client|kill", -3),
    ("client|list", -2),
    ("client|no-evict", 3),
    ("client|no-touch", 3),
    ("client|pause", -3),
    ("client|reply", 3),
    ("client|setinfo", 4),
    ("client|setname", 3),
    ("client|tracking", -3),
    ("client|trackinginfo", 2),
    ("client|unblock", -3),
    ("client|unpause", 2),
    ("cluster|addslots", -3),
    ("cluster|addslotsrange", -4),
    ("cluster|bumpepoch", 2),
    ("cluster|count-failure-reports", 3),
    ("cluster|countkeysinslot", 3),
    ("cluster|delslots", -3),
    ("cluster|delslotsrange", -4),
    ("cluster|failover", -2),
    ("cluster|flushslots", 2),
    ("cluster|forget", 3),
    ("cluster|getkeysinslot", 4),
    ("cluster|help", 2),
    ("cluster|info", 2),
    ("cluster|keyslot", 3),
    ("cluster|links", 2),
    ("cluster|meet", -4),
    ("cluster|myid", 2),
    ("cluster|myshardid", 2),
    ("cluster|nodes", 2),
    ("cluster|replicas", 3),
    ("cluster|replicate", 3),
    ("cluster|reset", -2),
    ("cluster|saveconfig", 2),
    ("cluster|set-config-epoch", 3),
    ("cluster|setslot", -4),
    ("cluster|shards", 2),
    ("cluster|slaves", 3),
    ("cluster|slots", 2),
    ("command|count", 2),
    ("command|docs", -2),
    ("command|getkeys", -3),
    ("command|getkeysandflags", -3),
    ("command|help", 2),
    ("command|info", -2),
    ("command|list", -2),
    ("config|get", -3),
    ("config|help", 2),
    ("config|resetstat", 2),
    ("config|rewrite", 2),
    ("config|set", -4),
    ("function|delete", 3),
    ("function|dump", 2),
    ("function|flush", -2),
    ("function|help", 2),
    ("function|kill", 2),
    ("function|list", -2),
    ("function|load", -3),
    ("function|restore", -3),
    ("function|stats", 2),
    ("latency|doctor", 2),
    ("latency|graph", 3),
    ("latency|help", 2),
    ("latency|histogram", -2),
    ("latency|history", 3),
    ("latency|latest", 2),
    ("latency|reset", -2),
    ("memory|doctor", 2),
    ("memory|help", 2),
    ("memory|malloc-stats", 2),
    ("memory|purge", 2),
    ("memory|stats", 2),
    ("memory|usage", -3),
    ("module|help", 2),
    ("module|list", 2),
    ("module|load", -3),
    ("module|loadex", -3),
    ("module|unload", 3),
    ("object|encoding", 3),
    ("object|freq", 3),
    ("object|help", 2),
    ("object|idletime", 3),
    ("object|refcount", 3),
    ("pubsub|channels", -2),
    ("pubsub|help", 2),
    ("pubsub|numpat", 2),
    ("pubsub|numsub", -2),
    ("pubsub|shardchannels", -2),
    ("pubsub|shardnumsub", -2),
    ("script|debug", 3),
    ("script|exists", -3),
    ("script|flush", -2),
    ("script|help", 2),
    ("script|kill", 2),
    ("script|load", 3),
    ("slowlog|get", -2),
    ("slowlog|help", 2),
    ("slowlog|len", 2),
    ("slowlog|reset", 2),
    ("xgroup|create", -5),
    ("xgroup|createconsumer", 5),
    ("xgroup|delconsumer", 5),
    ("xgroup|destroy", 4),
    ("xgroup|help", 2),
    ("xgroup|setid", -5),
    ("xinfo|consumers", 4),
    ("xinfo|groups", 3),
    ("xinfo|help", 2),
    ("xinfo|stream", -3),
];

/// The arity of `container|sub` (Redis's sign rule: negative = at least that many), if
/// known. Looked up without making the name (no container's name begins another's, and `|`
/// sorts after every character of a name, so the table's order is (container, sub)'s).
pub fn subcommand_arity(container: &str, sub: &str) -> Option<i32> {
    SUBCOMMAND_ARITY
        .binary_search_by(|(n, _)| {
            let (c, s) = n.split_once('|').unwrap_or((n, ""));
            (c, s).cmp(&(container, sub))
        })
        .ok()
        .map(|i| SUBCOMMAND_ARITY[i].1)
}

/// A subcommand's row of [`SUBCOMMAND_META`]: name, flags, whether its key is its second
/// argument.
type SubcommandMeta = (&'static str, &'static [&'static str], bool);

/// Each subcommand's flags as Redis's COMMAND gives them (7.0.15's, with 7.2's CLIENT
/// SETINFO, NO-TOUCH and CLUSTER MYSHARDID, and Shoal's own CLUSTER HASKEY and LOCALKEYS as
/// CLUSTER COUNTKEYSINSLOT), and whether its key is its second argument (`OBJECT ENCODING
/// key`, `XINFO STREAM key`, ...): `container|sub`, sorted. (Its ACL categories are the ACL's
/// own rule, `acl::sub_categories`.)
const SUBCOMMAND_META: &[SubcommandMeta] = &[
    ("acl|cat", &["noscript", "loading", "stale"], false),
    (
        "acl|deluser",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "acl|dryrun",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("acl|genpass", &["noscript", "loading", "stale"], false),
    (
        "acl|getuser",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("acl|help", &["loading", "stale"], false),
    (
        "acl|list",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "acl|load",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("acl|log", &["admin", "noscript", "loading", "stale"], false),
    (
        "acl|save",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "acl|setuser",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "acl|users",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("acl|whoami", &["noscript", "loading", "stale"], false),
    ("client|caching", &["noscript", "loading", "stale"], false),
    ("client|getname", &["noscript", "loading", "stale"], false),
    ("client|getredir", &["noscript", "loading", "stale"], false),
    ("client|help", &["loading", "stale"], false),
    ("client|id", &["noscript", "loading", "stale"], false),
    ("client|info", &["noscript", "loading", "stale"], false),
    (
        "client|kill",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "client|list",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "client|no-evict",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("client|no-touch", &["noscript", "loading", "stale"], false),
    (
        "client|pause",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("client|reply", &["noscript", "loading", "stale"], false),
    ("client|setinfo", &["noscript", "loading", "stale"], false),
    ("client|setname", &["noscript", "loading", "stale"], false),
    ("client|tracking", &["noscript", "loading", "stale"], false),
    (
        "client|trackinginfo",
        &["noscript", "loading", "stale"],
        false,
    ),
    (
        "client|unblock",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "client|unpause",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "cluster|addslots",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|addslotsrange",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|bumpepoch",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    ("cluster|count-failure-reports", &["admin", "stale"], false),
    ("cluster|countkeysinslot", &["stale"], false),
    (
        "cluster|delslots",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|delslotsrange",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|failover",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|flushslots",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|forget",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    ("cluster|getkeysinslot", &["stale"], false),
    ("cluster|haskey", &["stale"], false),
    ("cluster|help", &["loading", "stale"], false),
    ("cluster|info", &["stale"], false),
    ("cluster|keyslot", &["stale"], false),
    ("cluster|links", &["stale"], false),
    ("cluster|localkeys", &["stale"], false),
    (
        "cluster|meet",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    ("cluster|myid", &["stale"], false),
    ("cluster|myshardid", &["loading", "stale"], false),
    ("cluster|nodes", &["stale"], false),
    ("cluster|replicas", &["admin", "stale"], false),
    (
        "cluster|replicate",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    ("cluster|reset", &["admin", "noscript", "stale"], false),
    (
        "cluster|saveconfig",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|set-config-epoch",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    (
        "cluster|setslot",
        &["admin", "stale", "no_async_loading"],
        false,
    ),
    ("cluster|shards", &["stale"], false),
    ("cluster|slaves", &["admin", "stale"], false),
    ("cluster|slots", &["stale"], false),
    ("command|count", &["loading", "stale"], false),
    ("command|docs", &["loading", "stale"], false),
    ("command|getkeys", &["loading", "stale"], false),
    ("command|getkeysandflags", &["loading", "stale"], false),
    ("command|help", &["loading", "stale"], false),
    ("command|info", &["loading", "stale"], false),
    ("command|list", &["loading", "stale"], false),
    (
        "config|get",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("config|help", &["loading", "stale"], false),
    (
        "config|resetstat",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "config|rewrite",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "config|set",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("function|delete", &["write", "noscript"], false),
    ("function|dump", &["noscript"], false),
    ("function|flush", &["write", "noscript"], false),
    ("function|help", &["loading", "stale"], false),
    ("function|kill", &["noscript", "allow_busy"], false),
    ("function|list", &["noscript"], false),
    ("function|load", &["write", "denyoom", "noscript"], false),
    ("function|restore", &["write", "denyoom", "noscript"], false),
    ("function|stats", &["noscript", "allow_busy"], false),
    (
        "latency|doctor",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "latency|graph",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("latency|help", &["loading", "stale"], false),
    (
        "latency|histogram",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "latency|history",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "latency|latest",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    (
        "latency|reset",
        &["admin", "noscript", "loading", "stale"],
        false,
    ),
    ("memory|doctor", &[], false),
    ("memory|help", &["loading", "stale"], false),
    ("memory|malloc-stats", &[], false),
    ("memory|purge", &[], false),
    ("memory|stats", &[], false),
    ("memory|usage", &["readonly"], true),
    ("module|help", &["loading", "stale"], false),
    ("module|list", &["admin", "noscript"], false),
    (
        "module|load",
        &["admin", "noscript", "no_async_loading"],
        false,
    ),
    (
        "module|loadex",
        &["admin", "noscript", "no_async_loading"],
        false,
    ),
    (
        "module|unload",
        &["admin", "noscript", "no_async_loading"],
        false,
    ),
    ("object|encoding", &["readonly"], true),
    ("object|freq", &["readonly"], true),
    ("object|help", &["loading", "stale"], false),
    ("object|idletime", &["readonly"], true),
    ("object|refcount", &["readonly"], true),
    ("pubsub|channels", &["pubsub", "loading", "stale"], false),
    ("pubsub|help", &["loading", "stale"], false),
    ("pubsub|numpat", &["pubsub", "loading", "stale"], false),
    ("pubsub|numsub", &["pubsub", "loading", "stale"], false),
    (
        "pubsub|shardchannels",
        &["pubsub", "loading", "stale"],
        false,
    ),
    ("pubsub|shardnumsub", &["pubsub", "loading", "stale"], false),
    ("script|debug", &["noscript"], false),
    ("script|exists", &["noscript"], false),
    ("script|flush", &["noscript"], false),
    ("script|help", &["loading", "stale"], false),
    ("script|kill", &["noscript", "allow_busy"], false),
    ("script|load", &["noscript", "stale"], false),
    ("slowlog|get", &["admin", "loading", "stale"], false),
    ("slowlog|help", &["loading", "stale"], false),
    ("slowlog|len", &["admin", "loading", "stale"], false),
    ("slowlog|reset", &["admin", "loading", "stale"], false),
    ("xgroup|create", &["write", "denyoom"], true),
    ("xgroup|createconsumer", &["write", "denyoom"], true),
    ("xgroup|delconsumer", &["write"], true),
    ("xgroup|destroy", &["write"], true),
    ("xgroup|help", &["loading", "stale"], false),
    ("xgroup|setid", &["write"], true),
    ("xinfo|consumers", &["readonly"], true),
    ("xinfo|groups", &["readonly"], true),
    ("xinfo|help", &["loading", "stale"], false),
    ("xinfo|stream", &["readonly"], true),
];

/// A subcommand's flags and whether its key is its second argument, as COMMAND shows them
/// (see [`SUBCOMMAND_META`]); `None` for a name Redis and Shoal lack.
pub fn subcommand_meta(container: &str, sub: &str) -> Option<(&'static [&'static str], bool)> {
    SUBCOMMAND_META
        .binary_search_by(|(n, ..)| {
            let (c, s) = n.split_once('|').unwrap_or((n, ""));
            (c, s).cmp(&(container, sub))
        })
        .ok()
        .map(|i| {
            let (_, flags, keyed) = SUBCOMMAND_META[i];
            (flags, keyed)
        })
}

/// One documented argument, as COMMAND DOCS describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    pub name: String,
    /// string, integer, double, key, pattern, unix-time, pure-token, oneof, block.
    pub kind: &'static str,
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    pub args: Vec<Arg>,
}

impl Arg {
    fn plain(word: &str) -> Arg {
        Arg {
            name: word.to_string(),
            kind: kind_of(word),
            token: None,
            optional: false,
            multiple: false,
            args: Vec::new(),
        }
    }

    fn group(kind: &'static str, args: Vec<Arg>) -> Arg {
        let name = args
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join("-");
        Arg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
            args,
        }
    }

    pub fn to_reply(&self) -> Reply {
        let s = |t: &str| Reply::bulk(t.to_string());
        let mut m = vec![
            (s("name"), s(&self.name.to_ascii_lowercase())),
            (s("type"), s(self.kind)),
        ];
        if self.kind == "key" {
            m.push((s("key_spec_index"), Reply::Int(0)));
        }
        if let Some(t) = &self.token {
            m.push((s("token"), s(t)));
        }
        let mut flags = Vec::new();
        if self.optional {
            flags.push(Reply::Simple("optional".into()));
        }
        if self.multiple {
            flags.push(Reply::Simple("multiple".into()));
        }
        if !flags.is_empty() {
            m.push((s("flags"), Reply::Set(flags)));
        }
        if !self.args.is_empty() {
            m.push((
                s("arguments"),
                Reply::Array(self.args.iter().map(Arg::to_reply).collect()),
            ));
        }
        Reply::Map(m)
    }
}

fn kind_of(word: &str) -> &'static str {
    match word {
        "key" | "newkey" | "source" | "destination" => "key",
        "pattern" => "pattern",
        "unix-time-seconds" | "unix-time-milliseconds" => "unix-time",
        "seconds" | "milliseconds" | "increment" | "decrement" | "start" | "end" | "offset"
        | "count" | "index" | "protover" | "client-id" | "maxage" | "destination-db" => "integer",
        "cursor" => "integer",
        _ if word.chars().all(|c| c.is_ascii_uppercase() || c == '-') => "pure-token",
        _ => "string",
    }
}

fn is_token(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_uppercase())
        && word.chars().all(|c| c.is_ascii_uppercase() || c == '-')
}

/// Splits a syntax line into `[`, `]`, `<`, `>`, `|`, `...` and words.
fn lex(line: &str) -> Vec<String> {
    let spaced = line
        .replace('[', " [ ")
        .replace(']', " ] ")
        .replace('<', " < ")
        .replace('>', " > ")
        .replace('|', " | ");
    spaced.split_whitespace().map(str::to_string).collect()
}

/// Parses a syntax line into its top-level arguments.
pub fn parse(line: &str) -> Vec<Arg> {
    let tokens = lex(line);
    let mut pos = 0;
    let alts = parse_alts(&tokens, &mut pos);
    // A top-level `a | b` is a single oneof argument.
    match alts.len() {
        0 => Vec::new(),
        1 => alts.into_iter().next().unwrap_or_default(),
        _ => vec![oneof(alts)],
    }
}

fn oneof(alts: Vec<Vec<Arg>>) -> Arg {
    Arg::group("oneof", alts.into_iter().map(single).collect())
}

/// One alternative as one argument: itself, or a block of its parts.
fn single(mut seq: Vec<Arg>) -> Arg {
    if seq.len() == 1 {
        seq.remove(0)
    } else {
        Arg::group("block", seq)
    }
}

fn parse_alts(t: &[String], pos: &mut usize) -> Vec<Vec<Arg>> {
    let mut alts = vec![parse_seq(t, pos)];
    while t.get(*pos).map(String::as_str) == Some("|") {
        *pos += 1;
        alts.push(parse_seq(t, pos));
    }
    alts.retain(|a| !a.is_empty());
    alts
}

fn parse_seq(t: &[String], pos: &mut usize) -> Vec<Arg> {
    let mut seq: Vec<Arg> = Vec::new();
    while let Some(tok) = t.get(*pos) {
        match tok.as_str() {
            "]" | "|" | ">" => break,
            // `<a | b>`: a required group, as the manual writes one inside a line.
            "<" => {
                *pos += 1;
                let alts = parse_alts(t, pos);
                if t.get(*pos).map(String::as_str) == Some(">") {
                    *pos += 1;
                }
                seq.push(if alts.len() == 1 {
                    single(alts.into_iter().next().unwrap_or_default())
                } else {
                    oneof(alts)
                });
            }
            "[" => {
                *pos += 1;
                let alts = parse_alts(t, pos);
                if t.get(*pos).map(String::as_str) == Some("]") {
                    *pos += 1;
                }
                // `x [x ...]`: the bracket repeats what precedes it.
                let repeats = alts.len() == 1 && alts[0].last().is_some_and(|a| a.name == "...");
                if repeats {
                    let n = alts[0].len() - 1;
                    let start = seq.len().saturating_sub(n);
                    let group: Vec<Arg> = seq.drain(start..).collect();
                    let mut arg = single(group);
                    arg.multiple = true;
                    seq.push(arg);
                    continue;
                }
                let mut arg = if alts.len() == 1 {
                    single(alts.into_iter().next().unwrap_or_default())
                } else {
                    oneof(alts)
                };
                arg.optional = true;
                seq.push(arg);
            }
            "..." => {
                *pos += 1;
                seq.push(Arg::plain("..."));
            }
            word if is_token(word) => {
                *pos += 1;
                // A token followed by a value word is one argument; alone it is a pure-token.
                match t.get(*pos) {
                    Some(next)
                        if !is_token(next)
                            && !matches!(next.as_str(), "[" | "]" | "<" | ">" | "|" | "...") =>
                    {
                        *pos += 1;
                        let mut arg = Arg::plain(next);
                        arg.token = Some(word.to_string());
                        seq.push(arg);
                    }
                    _ => {
                        let mut arg = Arg::plain(&word.to_ascii_lowercase());
                        arg.kind = "pure-token";
                        arg.token = Some(word.to_string());
                        seq.push(arg);
                    }
                }
            }
            word => {
                *pos += 1;
                seq.push(Arg::plain(word));
            }
        }
    }
    seq
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::TABLE;

    /// The subcommand arities are sorted (they are searched), each names a subcommand of
    /// the table, and every subcommand of the table but Shoal's own has one.
    #[test]
    fn every_subcommand_has_its_flags() {
        assert!(
            SUBCOMMAND_META.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted (it is searched)"
        );
        for c in TABLE {
            for s in c.subcommands {
                assert!(subcommand_meta(c.name, s).is_some(), "{}|{s}", c.name);
            }
        }
    }

    #[test]
    fn every_subcommand_has_redis_s_arity() {
        assert!(
            SUBCOMMAND_ARITY.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted"
        );
        let listed: Vec<String> = TABLE
            .iter()
            .flat_map(|c| c.subcommands.iter().map(move |s| format!("{}|{s}", c.name)))
            .collect();
        // Redis's subcommands that Shoal's rows do not list (their handlers refuse them):
        // their arity is still checked as Redis checks it.
        let unlisted = [
            "cluster|addslots",
            "cluster|addslotsrange",
            "cluster|bumpepoch",
            "cluster|delslots",
            "cluster|delslotsrange",
            "cluster|failover",
            "cluster|flushslots",
            "cluster|links",
            "cluster|meet",
            "cluster|replicate",
            "cluster|saveconfig",
            "cluster|set-config-epoch",
            "cluster|setslot",
            "script|debug",
        ];
        for (name, _) in SUBCOMMAND_ARITY {
            assert!(
                listed.iter().any(|l| l == name) || unlisted.contains(name),
                "{name}"
            );
        }
        let own = ["cluster|haskey", "cluster|localkeys"];
        for name in &listed {
            let (c, s) = name.split_once('|').unwrap();
            assert!(
                subcommand_arity(c, s).is_some() || own.contains(&name.as_str()),
                "{name}"
            );
        }
        assert_eq!(subcommand_arity("config", "set"), Some(-4));
        assert_eq!(subcommand_arity("object", "help"), Some(2));
        assert_eq!(subcommand_arity("object", "nosuch"), None);
    }

    #[test]
    fn every_command_and_subcommand_is_documented() {
        for c in TABLE {
            assert!(syntax(c.name).is_some(), "{} has no syntax line", c.name);
            for s in c.subcommands {
                let full = format!("{}|{}", c.name, s);
                assert!(syntax(&full).is_some(), "{full} has no syntax line");
            }
        }
    }

    #[test]
    fn set_syntax_becomes_redis_argument_tree() {
        let args = parse(syntax("set").unwrap());
        assert_eq!(args.len(), 5);
        assert_eq!((args[0].name.as_str(), args[0].kind), ("key", "key"));
        assert_eq!((args[1].name.as_str(), args[1].kind), ("value", "string"));
        assert_eq!(args[2].kind, "oneof");
        assert!(args[2].optional);
        assert_eq!(args[2].args[0].token.as_deref(), Some("NX"));
        assert_eq!(args[3].kind, "pure-token");
        assert_eq!(args[3].token.as_deref(), Some("GET"));
        let ttl = &args[4];
        assert_eq!((ttl.kind, ttl.args.len()), ("oneof", 5));
        assert_eq!(ttl.args[0].token.as_deref(), Some("EX"));
        assert_eq!(
            (ttl.args[0].name.as_str(), ttl.args[0].kind),
            ("seconds", "integer")
        );
        assert_eq!(ttl.args[4].kind, "pure-token");
    }

    #[test]
    fn repetition_marks_multiple() {
        let args = parse(syntax("mget").unwrap());
        assert_eq!(args.len(), 1);
        assert!(args[0].multiple && args[0].kind == "key");
        let args = parse(syntax("mset").unwrap());
        assert_eq!(args.len(), 1);
        assert_eq!(args[0].kind, "block");
        assert!(args[0].multiple);
        assert_eq!(args[0].args.len(), 2);
        let args = parse(syntax("client|setinfo").unwrap());
        assert_eq!(args.len(), 1);
        assert_eq!(args[0].kind, "oneof");
        assert!(parse("").is_empty());
    }
}
