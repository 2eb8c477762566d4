//! Redis's key specifications: where a command's keys are and what it does to each (read,
//! overwrite, delete, ...), for COMMAND GETKEYSANDFLAGS. The specifications are Redis's
//! own (`keyspecs_table.rs`, generated from its command files by `scripts/keyspecs.py`);
//! finding the keys with them follows Redis's `getKeysUsingKeySpecs`, and the few
//! commands whose flags depend on their arguments (SET, BITFIELD, SORT) have Redis's own
//! rules (`setGetKeys`, `bitfieldGetKeys`, `sortGetKeys`).

use bytes::Bytes;

use super::keyspecs_table::KEY_SPECS;

/// A key specification's flags (Redis's `CMD_KEY_*`), in the order Redis names them.
pub mod flag {
    pub const RO: u16 = 1;
    pub const RW: u16 = 1 << 1;
    pub const OW: u16 = 1 << 2;
    pub const RM: u16 = 1 << 3;
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    pub const NOT_KEY: u16 = 1 << 8;
    pub const INCOMPLETE: u16 = 1 << 9;
    pub const VARIABLE_FLAGS: u16 = 1 << 10;

    /// Each flag with the name COMMAND GETKEYSANDFLAGS and COMMAND INFO give it.
    pub const NAMES: &[(u16, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where the search for a specification's keys starts.
pub enum Begin {
    /// At this argument.
    Index(i32),
    /// After this keyword, searched from argument `startfrom` (from the end if negative).
    Keyword(&'static str, i32),
    /// Only the command knows.
    Unknown,
}

/// Which arguments from there are keys.
pub enum Find {
    /// Up to `lastkey` arguments further (negative: from the end; with `limit`, a
    /// `1/limit` share of what is left), every `step`-th.
    Range { lastkey: i32, step: i32, limit: i32 },
    /// The argument at `keynumidx` counts them; they start `firstkey` after it.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        step: i32,
    },
    /// Only the command knows.
    Unknown,
}

/// The notes Redis's table gives some key specifications (COMMAND INFO shows them): by
/// command and the specification's place among the command's.
pub(super) const NOTES: &[(&str, usize, &str)] = &[
    ("bitfield", 0, "This command allows both access and modification of the key"),
    ("eval", 0, "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"),
    ("eval_ro", 0, "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"),
    ("fcall", 0, "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"),
    ("fcall_ro", 0, "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"),
    ("getex", 0, "RW and UPDATE because it changes the TTL"),
    ("pfcount", 0, "RW because it may change the internal representation of the key, and propagate to replicas"),
    ("set", 0, "RW and ACCESS due to the optional `GET` argument"),
    ("sort", 1, "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
    ("sort", 2, "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"),
    ("sort_ro", 1, "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"),
    ("xadd", 0, "UPDATE instead of INSERT because of the optional trimming feature"),
];

pub struct KeySpec {
    pub flags: u16,
    pub begin: Begin,
    pub find: Find,
}

/// The key specifications of command `name` (`container|sub` for a subcommand).
pub(super) fn specs(name: &str) -> Option<&'static [KeySpec]> {
    KEY_SPECS
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| KEY_SPECS[i].1)
}

/// The keys of `args` (the command and its arguments) with their flags, as positions in
/// `args`: what COMMAND GETKEYSANDFLAGS answers (Redis's `getKeysFromCommandWithSpecs`).
/// `name` is the command's (`container|sub` for a subcommand). `None` when the command
/// has no specifications; empty when its arguments do not hold its keys.
pub fn keys_and_flags(name: &str, args: &[Bytes]) -> Option<Vec<(usize, u16)>> {
    let specs = specs(name)?;
    // Flags that depend on the arguments: the command's own rule.
    match name {
        "set" => return Some(vec![(1, set_flags(args))]),
        "bitfield" => return Some(vec![(1, bitfield_flags(args))]),
        "sort" | "sort_ro" => return Some(sort_keys(name, args)),
        "migrate" => {
            let (first, end) = super::keys::migrate_keys(args);
            let flags = flag::RW | flag::ACCESS | flag::DELETE;
            return Some((first..end).map(|i| (i, flags)).collect());
        }
        _ => {}
    }
    Some(by_specs(specs, args).unwrap_or_default())
}

/// Redis's `getKeysUsingKeySpecs`: `None` for a specification the arguments do not fit
/// (its keys out of range, a bad key count) or that only the command can read.
fn by_specs(specs: &[KeySpec], args: &[Bytes]) -> Option<Vec<(usize, u16)>> {
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for spec in specs {
        if spec.flags & flag::NOT_KEY != 0 {
            continue;
        }
        // Only the command's own rule knows these keys or their flags.
        if spec.flags & (flag::INCOMPLETE | flag::VARIABLE_FLAGS) != 0 {
            return None;
        }
        let first = match spec.begin {
            Begin::Index(pos) => i64::from(pos),
            Begin::Keyword(word, from) => {
                let from = i64::from(from);
                let start = if from > 0 { from } else { argc + from };
                let is_word = |&i: &i64| args[i as usize].eq_ignore_ascii_case(word.as_bytes());
                // Forwards up to the last argument but one (a key follows the keyword), or
                // backwards down to the first.
                let found = if start >= argc {
                    None
                } else if from > 0 {
                    (start..argc - 1).find(is_word)
                } else {
                    (1..=start).rev().find(is_word)
                };
                match found {
                    Some(i) => i + 1,
                    // No keyword: no keys of this kind.
                    None => continue,
                }
            }
            Begin::Unknown => return None,
        };
        let (first, last, step) = match spec.find {
            Find::Range {
                lastkey,
                step,
                limit,
            } => {
                let lastkey = i64::from(lastkey);
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / i64::from(limit) + lastkey)
                };
                (first, last, i64::from(step))
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                let at = first + i64::from(keynumidx);
                if at >= argc {
                    return None;
                }
                // Redis's integer syntax; a count past the arguments fails below (and
                // cannot overflow: it is bounded first).
                let n = super::parse_i64(&args[at as usize]).filter(|&n| n >= 0)?;
                let first = first + i64::from(firstkey);
                (first, first + n.min(argc) - 1, i64::from(step))
            }
            Find::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc || step < 1 {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, spec.flags));
            i += step;
        }
    }
    Some(keys)
}

/// SET's key: overwritten, or read and updated with GET (Redis's `setGetKeys`).
fn set_flags(args: &[Bytes]) -> u16 {
    if args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        flag::RW | flag::ACCESS | flag::UPDATE
    } else {
        flag::OW | flag::UPDATE
    }
}

/// BITFIELD's key: read only when every operation is a GET (or OVERFLOW), else read and
/// updated (Redis's `bitfieldGetKeys`).
fn bitfield_flags(args: &[Bytes]) -> u16 {
    let mut i = 2;
    let mut read_only = true;
    while i < args.len() {
        let left = args.len() - i - 1;
        let op = &args[i];
        if op.eq_ignore_ascii_case(b"get") && left >= 2 {
            i += 3;
        } else if op.eq_ignore_ascii_case(b"overflow") && left >= 1 {
            i += 2;
        } else {
            // SET, INCRBY, or a syntax error: not read only, to be safe (as Redis).
            read_only = false;
            break;
        }
    }
    if read_only {
        flag::RO | flag::ACCESS
    } else {
        flag::RW | flag::ACCESS | flag::UPDATE
    }
}

/// SORT's keys: the one it reads, and the last STORE's destination, overwritten (Redis's
/// `sortGetKeys`; SORT_RO has no STORE).
fn sort_keys(name: &str, args: &[Bytes]) -> Vec<(usize, u16)> {
    let mut keys = vec![(1, flag::RO | flag::ACCESS)];
    if name == "sort_ro" {
        return keys;
    }
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store.map(|at| (at, flag::OW | flag::UPDATE)));
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|a| Bytes::from(a.to_string()))
            .collect()
    }

    fn named(name: &str, line: &str) -> Vec<(usize, u16)> {
        keys_and_flags(name, &args(line)).unwrap()
    }

    #[test]
    fn the_table_is_sorted_and_names_commands_in_lower_case() {
        assert!(KEY_SPECS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(KEY_SPECS.iter().all(|(n, _)| n.to_ascii_lowercase() == *n));
        assert!(specs("xinfo|stream").is_some());
        assert!(specs("ping").is_none());
    }

    #[test]
    fn keys_are_found_as_redis_finds_them() {
        use flag::*;
        // Redis's own examples (its introspection-2 test).
        assert_eq!(named("set", "set k1 v1"), [(1, OW | UPDATE)]);
        assert_eq!(named("set", "set k1 v1 GET"), [(1, RW | ACCESS | UPDATE)]);
        assert_eq!(
            named("mset", "mset k1 v1 k2 v2"),
            [(1, OW | UPDATE), (3, OW | UPDATE)]
        );
        assert_eq!(
            named("lmove", "LMOVE k1 k2 left right"),
            [(1, RW | ACCESS | DELETE), (2, RW | INSERT)]
        );
        assert_eq!(
            named("sort", "sort k1 store k2"),
            [(1, RO | ACCESS), (3, OW | UPDATE)]
        );
        assert_eq!(
            named("sort", "sort k1 by w get # limit 0 1 store a store b"),
            [(1, RO | ACCESS), (12, OW | UPDATE)]
        );
        // A key count (ZUNIONSTORE: the destination, then numkeys sources).
        assert_eq!(
            named("zunionstore", "zunionstore d 2 a b weights 1 2"),
            [(1, OW | UPDATE), (3, RO | ACCESS), (4, RO | ACCESS)]
        );
        // A keyword and a share of what follows (XREAD ... STREAMS k1 k2 id1 id2).
        assert_eq!(
            named("xread", "xread count 1 streams k1 k2 0 0"),
            [(4, RO | ACCESS), (5, RO | ACCESS)]
        );
        // Read-only BITFIELD, and one that writes.
        assert_eq!(named("bitfield", "bitfield k get u8 0"), [(1, RO | ACCESS)]);
        assert_eq!(
            named("bitfield", "bitfield k get u8 0 set u8 0 1"),
            [(1, RW | ACCESS | UPDATE)]
        );
        // A bad key count, or keys past the end: none.
        assert_eq!(named("zunionstore", "zunionstore d x a"), []);
        assert_eq!(named("zunionstore", "zunionstore d 5 a"), []);
        assert_eq!(named("zunionstore", "zunionstore d +2 a b"), []);
        assert_eq!(named("eval", "eval x 9223372036854775807 a"), []);
        // A Pub/Sub channel is not a key.
        assert_eq!(named("spublish", "spublish ch msg"), []);
        assert_eq!(keys_and_flags("ping", &args("ping")), None);
    }
}
