//! Keyspace notifications (Redis's `notify-keyspace-events`): the event classes, their
//! letters as CONFIG takes and shows them, and the channels an event is published on. The
//! publishing itself is `Engine::notify`; the commands call it where Redis's call
//! `notifyKeyspaceEvent`.

use bytes::Bytes;

/// `K`: events on `__keyspace@<db>__:<key>`, the event's name as the message.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: events on `__keyevent@<db>__:<event>`, the key as the message.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: a key expired.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: a key was evicted.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands (Shoal has no streams: taken, never sent).
pub const STREAM: u32 = 1 << 10;
/// `m`: a read missed its key.
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events (Shoal has no modules: taken, never sent).
pub const MODULE: u32 = 1 << 12;
/// `n`: a key was created.
pub const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`, as in Redis.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The letters of `notify-keyspace-events` (Redis's `keyspaceEventsStringToFlags`); `None`
/// for a letter Redis does not know.
pub fn parse(classes: &str) -> Option<u32> {
    classes.chars().try_fold(0, |flags, c| {
        let class = match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
        Some(flags | class)
    })
}

/// What CONFIG SET says of a value [`parse`] refuses (Redis 7's words).
pub const INVALID: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// The flags as CONFIG GET shows them (Redis's `keyspaceEventsFlagsToString`: `A` for all
/// of its classes, then `K`, `E`, `m`).
pub fn format(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (class, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & class != 0 {
                out.push(c);
            }
        }
    }
    for (class, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & class != 0 {
            out.push(c);
        }
    }
    out
}

/// True if events of `class` are published under `flags` (the class is on, and so is at
/// least one of the two channel kinds).
pub fn publishes(flags: u32, class: u32) -> bool {
    flags & class != 0 && flags & (KEYSPACE | KEYEVENT) != 0
}

/// `__keyspace@<db>__:<key>`.
pub fn keyspace_channel(db: u8, key: &[u8]) -> Bytes {
    let mut c = format!("__keyspace@{db}__:").into_bytes();
    c.extend_from_slice(key);
    Bytes::from(c)
}

/// `__keyevent@<db>__:<event>`.
pub fn keyevent_channel(db: u8, event: &str) -> Bytes {
    Bytes::from(format!("__keyevent@{db}__:{event}"))
}

/// Where keyspace notifications go beyond this node's own subscribers, and which keys' events
/// this node speaks for: in a cluster, every member's subscribers hear every key's events,
/// once, from the key's owner. The cluster layer implements it; a single node has none.
pub trait EventSink: Send + Sync {
    /// True if this node publishes the events the store notes for keys of `slot` (expired,
    /// evicted, new): its owner. A replica's copy expires or is created silently.
    fn speaks_for(&self, slot: u16) -> bool;
    /// Delivers one message to the other members' subscribers of `channel` (a shard channel
    /// if `shard`): a notification, or what a script or a transaction published (fire and
    /// forget, as Pub/Sub; it must not block).
    fn publish(&self, shard: bool, channel: bytes::Bytes, message: bytes::Bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_parse_and_show_as_redis_does() {
        // (set, shown): Redis 7's CONFIG GET after CONFIG SET.
        for (set, shown) in [
            ("", ""),
            ("KEA", "AKE"),
            ("AKE", "AKE"),
            ("Egx", "gxE"),
            ("Ex", "xE"),
            ("KElg$", "g$lKE"),
            ("g$lshzxetd", "A"),
            ("nKEm", "nKEm"),
            ("x", "x"),
        ] {
            let flags = parse(set).expect(set);
            assert_eq!(format(flags), shown, "{set}");
            assert_eq!(parse(&format(flags)), Some(flags), "{set}");
        }
        // Redis shows `A` without the `n` that still counts (so CONFIG keeps the value as
        // given, not as shown).
        let all_and_new = parse("AnmKE").unwrap();
        assert_eq!(format(all_and_new), "AKEm");
        assert!(all_and_new & NEW != 0);
        assert_eq!(parse("KEZ"), None);
        // Letters are case-sensitive: `k` is none of them.
        assert_eq!(parse("ke"), None);
    }

    #[test]
    fn an_event_needs_its_class_and_a_channel_kind() {
        let f = parse("Kg").unwrap();
        assert!(publishes(f, GENERIC));
        assert!(!publishes(f, STRING));
        assert!(!publishes(parse("g").unwrap(), GENERIC));
        assert!(!publishes(parse("KE").unwrap(), GENERIC));
        assert_eq!(&keyspace_channel(3, b"k:1")[..], b"__keyspace@3__:k:1");
        assert_eq!(
            &keyevent_channel(0, "expired")[..],
            b"__keyevent@0__:expired"
        );
    }
}
