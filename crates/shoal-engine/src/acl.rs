//! ACL users, as Redis 7.2 keeps them: who may log in with which passwords, and which
//! commands, keys and channels each user may use (`ACL SETUSER`'s rules, selectors
//! included), the text forms `ACL LIST` and `ACL GETUSER` show, the permission check every
//! command passes, and the `ACL LOG`.
//!
//! Pure: commands are known only through a [`Catalog`] (ids, full names, categories), which
//! the command table builds (`cmd::acl_catalog`), so that this module depends on nothing of
//! the engine and its tests use a catalog of their own. What a command does to its keys and
//! channels is handed to [`User::check`] by the caller, from the command's row.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use shoal_store::glob::glob_match;

use crate::copying::ChangedSince;

/// Redis's ACL categories, in the order Redis lists them (`ACL CAT`).
pub const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of category `name` (case-insensitive, as Redis), if it is one.
pub fn category_bit(name: &str) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// The commands an ACL rule can name: one id per command, and one per subcommand of a
/// container (CONFIG, CLIENT, ...), each with its full name (`config|get`) and categories.
#[derive(Default)]
pub struct Catalog {
    names: Vec<String>,
    cats: Vec<u32>,
    /// For each id: the ids of its subcommands (empty for a command without any and for a
    /// subcommand).
    subs: Vec<std::ops::Range<usize>>,
    /// The container of each subcommand id (`None` for a command).
    parent: Vec<Option<usize>>,
    by_name: HashMap<String, usize>,
}

impl Catalog {
    /// Adds a command (lowercase `name`) with its categories (bits of [`CATEGORIES`]) and
    /// its subcommands' names and categories; returns the command's id (its subcommands
    /// follow it).
    pub fn add(&mut self, name: &str, cats: u32, subs: &[(&str, u32)]) -> usize {
        let id = self.names.len();
        self.push(name.to_string(), cats, None);
        for (sub, sub_cats) in subs {
            self.push(format!("{name}|{sub}"), *sub_cats, Some(id));
        }
        self.subs[id] = id + 1..id + 1 + subs.len();
        id
    }

    fn push(&mut self, name: String, cats: u32, parent: Option<usize>) {
        self.by_name.insert(name.clone(), self.names.len());
        self.names.push(name);
        self.cats.push(cats);
        self.subs.push(0..0);
        self.parent.push(parent);
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The id of `name` (`get`, `config|get`; any case).
    pub fn id(&self, name: &str) -> Option<usize> {
        self.by_name.get(&name.to_ascii_lowercase()).copied()
    }

    pub fn name(&self, id: usize) -> &str {
        &self.names[id]
    }

    /// The full names of the commands and subcommands in category `cat`, in catalog order
    /// (`ACL CAT <category>`).
    pub fn in_category(&self, cat: u32) -> impl Iterator<Item = &str> {
        (0..self.len())
            .filter(move |&i| self.cats[i] & cat != 0)
            .map(|i| self.names[i].as_str())
    }
}

/// A fixed-size set of command ids.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(len: usize, on: bool) -> Bits {
        Bits(vec![if on { u64::MAX } else { 0 }; len.div_ceil(64)])
    }

    fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set(&mut self, i: usize, on: bool) {
        if let Some(w) = self.0.get_mut(i / 64) {
            if on {
                *w |= 1 << (i % 64);
            } else {
                *w &= !(1 << (i % 64));
            }
        }
    }
}

/// Why a rule was refused: the reason part of `ERR Error in ACL SETUSER modifier '<rule>':
/// <reason>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("Syntax error")]
    Syntax,
    #[error("Unknown command or category name in ACL")]
    Unknown,
    #[error("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")]
    AfterAllKeys,
    #[error("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")]
    AfterAllChannels,
    #[error("The password you are trying to remove from the user does not exist")]
    NoSuchPassword,
    #[error("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")]
    BadHash,
    #[error("Allowing first-arg of a subcommand is not supported")]
    SubcommandFirstArg,
    #[error("Unmatched parenthesis in acl selector starting at")]
    Unmatched,
}

/// A pattern may hold no whitespace and no NUL (it could not be written back as a rule).
fn clean(pattern: &[u8]) -> bool {
    !pattern.iter().any(|&b| b == 0 || b.is_ascii_whitespace())
}

/// A key pattern with the access it grants: `~p` (both), `%R~p`, `%W~p`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyPattern {
    read: bool,
    write: bool,
    pattern: Vec<u8>,
}

/// What a command needs of a key: to read its value, to change it, or neither (EXISTS,
/// TYPE: any pattern that matches the key will do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KeyNeeds {
    pub read: bool,
    pub write: bool,
}

impl KeyNeeds {
    pub const NONE: KeyNeeds = KeyNeeds {
        read: false,
        write: false,
    };
    pub const READ: KeyNeeds = KeyNeeds {
        read: true,
        write: false,
    };
    pub const WRITE: KeyNeeds = KeyNeeds {
        read: false,
        write: true,
    };
    pub const BOTH: KeyNeeds = KeyNeeds {
        read: true,
        write: true,
    };
}

/// One set of permissions: the user's own (the root) or a selector's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    allowed: Bits,
    /// Set by `+@all` (`allcommands`) and cleared by `-@all`: the description starts from
    /// `+@all` (Redis's bit for commands added later).
    all_commands: bool,
    /// First arguments allowed for commands not otherwise allowed (`+select|0`).
    first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    /// The command rules since the last `+@all`/`-@all`, as given (lowercased), without
    /// repeats: what `ACL GETUSER` and `ACL LIST` show after the `+@all`/`-@all`.
    rules: Vec<(bool, String)>,
    keys: Vec<KeyPattern>,
    all_keys: bool,
    channels: Vec<Vec<u8>>,
    all_channels: bool,
}

impl Selector {
    fn new(catalog: &Catalog) -> Selector {
        Selector {
            allowed: Bits::new(catalog.len(), false),
            all_commands: false,
            first_args: BTreeMap::new(),
            rules: Vec::new(),
            keys: Vec::new(),
            all_keys: false,
            channels: Vec::new(),
            all_channels: false,
        }
    }

    /// Every command, key and channel.
    fn is_open(&self) -> bool {
        self.all_keys && self.all_channels && self.allowed.0.iter().all(|&w| w == u64::MAX)
    }

    fn set_all_commands(&mut self, on: bool) {
        self.allowed = Bits::new(self.allowed.0.len() * 64, on);
        self.all_commands = on;
        self.first_args.clear();
        self.rules.clear();
    }

    /// Notes a command rule as Redis 7.2 keeps it: a rule on the same command, category
    /// or subcommand goes (and a command's rule takes its subcommands' with it), the new
    /// one is added at the end.
    fn note_rule(&mut self, allow: bool, body: String) {
        let prefix = format!("{body}|");
        self.rules
            .retain(|(_, r)| *r != body && !r.starts_with(&prefix));
        self.rules.push((allow, body));
    }

    /// Applies one rule that is not a user rule (`on`, `>pass`, ...).
    fn apply(&mut self, op: &[u8], catalog: &Catalog) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.all_keys = true;
                self.keys.clear();
                return Ok(());
            }
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
                return Ok(());
            }
            b"allchannels" | b"&*" => {
                self.all_channels = true;
                self.channels.clear();
                return Ok(());
            }
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
                return Ok(());
            }
            b"allcommands" | b"+@all" => {
                self.set_all_commands(true);
                return Ok(());
            }
            b"nocommands" | b"-@all" => {
                self.set_all_commands(false);
                return Ok(());
            }
            _ => {}
        }
        let bytes = op;
        match bytes.first() {
            Some(b'~') | Some(b'%') => self.add_key_pattern(bytes),
            Some(b'&') => {
                if self.all_channels {
                    return Err(RuleError::AfterAllChannels);
                }
                let pattern = bytes[1..].to_vec();
                if !clean(&pattern) {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.contains(&pattern) {
                    self.channels.push(pattern);
                }
                Ok(())
            }
            Some(&sign @ (b'+' | b'-')) => {
                let allow = sign == b'+';
                // Command and category names are ASCII: anything else names none.
                let name = std::str::from_utf8(&lower[1..]).map_err(|_| RuleError::Unknown)?;
                if let Some(cat) = name.strip_prefix('@') {
                    let bit = category_bit(cat).ok_or(RuleError::Unknown)?;
                    for id in 0..catalog.len() {
                        if catalog.cats[id] & bit != 0 {
                            self.allowed.set(id, allow);
                        }
                    }
                    if !allow {
                        // The first arguments of the commands taken away go with them.
                        self.first_args.retain(|id, _| catalog.cats[*id] & bit == 0);
                    }
                    self.note_rule(allow, format!("@{cat}"));
                    return Ok(());
                }
                self.command_rule(allow, name, catalog)
            }
            _ => Err(RuleError::Syntax),
        }
    }

    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let (read, write, pattern) = if op[0] == b'~' {
            (true, true, &op[1..])
        } else {
            let (mut read, mut write) = (false, false);
            let mut at = 1;
            loop {
                match op.get(at).map(u8::to_ascii_uppercase) {
                    Some(b'R') if !read => read = true,
                    Some(b'W') if !write => write = true,
                    Some(b'~') => break,
                    _ => return Err(RuleError::Syntax),
                }
                at += 1;
            }
            if !read && !write {
                return Err(RuleError::Syntax);
            }
            (read, write, &op[at + 1..])
        };
        if self.all_keys {
            return Err(RuleError::AfterAllKeys);
        }
        if !clean(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(k) => {
                k.read |= read;
                k.write |= write;
            }
            None => self.keys.push(KeyPattern {
                read,
                write,
                pattern: pattern.to_vec(),
            }),
        }
        Ok(())
    }

    /// `+name`, `-name`, `+container|sub`, `-container|sub`, `+command|first-arg` (still
    /// allowed in Redis 7.2, though deprecated).
    fn command_rule(
        &mut self,
        allow: bool,
        name: &str,
        catalog: &Catalog,
    ) -> Result<(), RuleError> {
        if let Some(id) = catalog.id(name) {
            self.allowed.set(id, allow);
            for sub in catalog.subs[id].clone() {
                self.allowed.set(sub, allow);
            }
            self.first_args.remove(&id);
            self.note_rule(allow, name.to_string());
            return Ok(());
        }
        // Only a command or subcommand can be taken away.
        let (command, arg) = match name.rsplit_once('|') {
            Some(split) if allow => split,
            _ => return Err(RuleError::Unknown),
        };
        let id = catalog.id(command).ok_or(RuleError::Unknown)?;
        if catalog.parent[id].is_some() {
            return Err(RuleError::SubcommandFirstArg);
        }
        if arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !catalog.subs[id].is_empty() {
            // A container's unknown subcommand.
            return Err(RuleError::Unknown);
        }
        let args = self.first_args.entry(id).or_default();
        if !args.iter().any(|a| a.eq_ignore_ascii_case(arg.as_bytes())) {
            args.push(arg.as_bytes().to_vec());
        }
        self.note_rule(true, name.to_string());
        Ok(())
    }

    /// The command rules, one a word.
    fn command_words(&self) -> Vec<Vec<u8>> {
        let first: &[u8] = if self.all_commands {
            b"+@all"
        } else {
            b"-@all"
        };
        std::iter::once(first.to_vec())
            .chain(self.rules.iter().map(|(allow, rule)| {
                [if *allow { &b"+"[..] } else { b"-" }, rule.as_bytes()].concat()
            }))
            .collect()
    }

    fn commands_text(&self) -> String {
        String::from_utf8_lossy(&self.command_words().join(&b' ')).into_owned()
    }

    /// The key patterns, one a word (bytes, as given: a pattern need not be UTF-8).
    fn key_words(&self) -> Vec<Vec<u8>> {
        if self.all_keys {
            return vec![b"~*".to_vec()];
        }
        self.keys
            .iter()
            .map(|k| {
                let flags: &[u8] = match (k.read, k.write) {
                    (true, true) => b"",
                    (true, false) => b"%R",
                    _ => b"%W",
                };
                [flags, b"~", &k.pattern].concat()
            })
            .collect()
    }

    fn keys_text(&self) -> Vec<u8> {
        self.key_words().join(&b' ')
    }

    fn channels_text(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        let parts: Vec<Vec<u8>> = self
            .channels
            .iter()
            .map(|c| [b"&", &c[..]].concat())
            .collect();
        parts.join(&b' ')
    }

    /// The selector's rules, one a word: keys, channels, commands. Joined with spaces, what
    /// `ACL LIST` writes.
    fn words(&self) -> Vec<Vec<u8>> {
        let mut out = self.key_words();
        if self.all_channels {
            out.push(b"&*".to_vec());
        } else {
            out.push(b"resetchannels".to_vec());
            out.extend(self.channels.iter().map(|c| [b"&", &c[..]].concat()));
        }
        out.extend(self.command_words());
        out
    }

    /// The selector as `ACL LIST` writes it: keys, channels, commands.
    fn describe(&self) -> Vec<u8> {
        self.words().join(&b' ')
    }

    /// `ACL GETUSER`'s commands, keys and channels of the selector.
    pub fn texts(&self) -> [Vec<u8>; 3] {
        [
            self.commands_text().into_bytes(),
            self.keys_text(),
            self.channels_text(),
        ]
    }

    fn check(&self, req: &Request<'_>) -> Result<(), Denied> {
        let allowed = self.allowed.get(req.id)
            || req.first_arg.is_some_and(|a| {
                self.first_args
                    .get(&req.id)
                    .is_some_and(|list| list.iter().any(|x| x.eq_ignore_ascii_case(a)))
            });
        if !allowed {
            return Err(Denied::Command);
        }
        if !self.all_keys {
            for &(at, needs, key) in req.keys {
                let ok = self.keys.iter().any(|k| {
                    (k.read || !needs.read)
                        && (k.write || !needs.write)
                        && glob_match(&k.pattern, key, false)
                });
                if !ok {
                    return Err(Denied::Key(at));
                }
            }
        }
        if !self.all_channels {
            for &(at, literal, channel) in req.channels {
                let ok = self.channels.iter().any(|c| {
                    if literal {
                        c[..] == channel[..]
                    } else {
                        glob_match(c, channel, false)
                    }
                });
                if !ok {
                    return Err(Denied::Channel(at));
                }
            }
        }
        Ok(())
    }
}

/// What a command asks of the ACL: its id, its first argument (for `+command|arg` rules),
/// its keys and channels with their argument positions.
pub struct Request<'a> {
    pub id: usize,
    pub first_arg: Option<&'a [u8]>,
    /// `(argument index, what it needs, key)`.
    pub keys: &'a [(usize, KeyNeeds, &'a [u8])],
    /// `(argument index, literal, channel)`: a PSUBSCRIBE pattern must be allowed as it is
    /// (`literal`), a channel must match an allowed pattern.
    pub channels: &'a [(usize, bool, &'a [u8])],
}

/// Why a command was refused; the argument index of the key or channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    /// Redis's order of relevance when no selector allows a command: a channel over a
    /// key over the command, and a later argument over an earlier one.
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (0, 0),
            Denied::Key(at) => (1, at),
            Denied::Channel(at) => (2, at),
        }
    }
}

/// A user: its name, whether it may log in, its passwords (SHA-256) and permissions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub nopass: bool,
    /// `skip-sanitize-payload` (`Some(true)`) or `sanitize-payload` (`Some(false)`), as set.
    pub skip_sanitize: Option<bool>,
    passwords: Vec<[u8; 32]>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
    /// The root allows everything (every command, key and channel): no check is needed.
    open: bool,
}

/// SHA-256 of a password.
pub fn hash_password(pass: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, pass);
    let mut out = [0; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hash(text: &[u8]) -> Result<[u8; 32], RuleError> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if text.len() != 64 {
        return Err(RuleError::BadHash);
    }
    let mut out = [0; 32];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (digit(pair[0]), digit(pair[1])) else {
            return Err(RuleError::BadHash);
        };
        *byte = hi << 4 | lo;
    }
    Ok(out)
}

impl User {
    /// A user as `ACL SETUSER` creates it (Redis 7.2): off, `sanitize-payload`, no password,
    /// no command, key or channel.
    pub fn new(name: &[u8], catalog: &Catalog) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            skip_sanitize: Some(false),
            passwords: Vec::new(),
            root: Selector::new(catalog),
            selectors: Vec::new(),
            open: false,
        }
    }

    /// Redis's `default` user as it starts: on, no password, everything allowed.
    pub fn default_user(catalog: &Catalog) -> User {
        let mut u = User::new(b"default", catalog);
        for rule in ["on", "nopass", "~*", "&*", "+@all"] {
            u.apply(rule, catalog)
                .expect("the default user's rules are valid");
        }
        u
    }

    /// Whether a rule of this user looks at keys (a selector without `allkeys`).
    pub fn checks_keys(&self) -> bool {
        !(self.root.all_keys && self.selectors.iter().all(|s| s.all_keys))
    }

    /// Whether a rule of this user looks at channels (a selector without `allchannels`).
    pub fn checks_channels(&self) -> bool {
        !(self.root.all_channels && self.selectors.iter().all(|s| s.all_channels))
    }

    /// Whether anyone may use it with no password and do everything: the default user of a
    /// node whose Memcached port asks for no authentication.
    pub fn lets_anyone_in(&self) -> bool {
        self.enabled && self.nopass && self.is_open()
    }

    /// Whether no command needs checking for this user.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Whether `pass` logs this user in (it must also be enabled).
    pub fn accepts(&self, pass: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let h = hash_password(pass);
        // Compared in time independent of where they differ.
        self.passwords.iter().fold(false, |ok, p| {
            ok | (p.iter().zip(&h).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0)
        })
    }

    /// Applies one `ACL SETUSER` rule (a selector `(...)` as one rule).
    pub fn apply(&mut self, op: impl AsRef<[u8]>, catalog: &Catalog) -> Result<(), RuleError> {
        let result = self.apply_rule(op.as_ref(), catalog);
        self.open = self.root.is_open();
        result
    }

    fn apply_rule(&mut self, op: &[u8], catalog: &Catalog) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            // An empty rule changes nothing, as in Redis's `ACLSetUser`.
            b"" => {}
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"skip-sanitize-payload" => self.skip_sanitize = Some(true),
            b"sanitize-payload" => self.skip_sanitize = Some(false),
            b"clearselectors" => self.selectors.clear(),
            b"reset" => {
                for rule in [
                    &b"resetpass"[..],
                    b"resetkeys",
                    b"resetchannels",
                    b"off",
                    b"clearselectors",
                    b"-@all",
                ] {
                    self.apply_rule(rule, catalog)?;
                }
                self.skip_sanitize = Some(false);
            }
            _ => match op.first() {
                Some(b'>') => {
                    let h = hash_password(&op[1..]);
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'#') => {
                    let h = parse_hash(&op[1..])?;
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                Some(b'<') => {
                    let h = hash_password(&op[1..]);
                    let before = self.passwords.len();
                    self.passwords.retain(|p| *p != h);
                    if self.passwords.len() == before {
                        return Err(RuleError::NoSuchPassword);
                    }
                    self.nopass = false;
                }
                Some(b'!') => {
                    let h = parse_hash(&op[1..])?;
                    let before = self.passwords.len();
                    self.passwords.retain(|p| *p != h);
                    if self.passwords.len() == before {
                        return Err(RuleError::NoSuchPassword);
                    }
                    self.nopass = false;
                }
                Some(b'(') if op.ends_with(b")") => {
                    let mut selector = Selector::new(catalog);
                    // Split as Redis's `sdssplitargs` (quotes allowed).
                    let inside = shoal_resp::inline::split_args(&op[1..op.len() - 1])
                        .ok_or(RuleError::Syntax)?;
                    for rule in &inside {
                        selector.apply(rule, catalog)?;
                    }
                    self.selectors.push(selector);
                }
                _ => self.root.apply(op, catalog)?,
            },
        }
        Ok(())
    }

    /// Whether `new` (this user changed) may no longer use a channel this one could: no
    /// selector of `new` allows every channel, and a pattern of this one (or its every
    /// channel) is in none of `new`'s (Redis then checks the user's subscribers).
    pub fn loses_channels(&self, new: &User) -> bool {
        fn selectors(u: &User) -> Vec<&Selector> {
            std::iter::once(&u.root).chain(&u.selectors).collect()
        }
        let (old, new) = (selectors(self), selectors(new));
        if new.iter().any(|s| s.all_channels) {
            return false;
        }
        let kept: Vec<&Vec<u8>> = new.iter().flat_map(|s| &s.channels).collect();
        old.iter()
            .any(|s| s.all_channels || s.channels.iter().any(|c| !kept.contains(&c)))
    }

    /// The flags `ACL GETUSER` lists and `ACL LIST` starts with.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut out = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            out.push("nopass");
        }
        match self.skip_sanitize {
            Some(true) => out.push("skip-sanitize-payload"),
            Some(false) => out.push("sanitize-payload"),
            None => {}
        }
        out
    }

    /// The passwords as `ACL GETUSER` shows them (SHA-256, hex).
    pub fn password_hashes(&self) -> Vec<String> {
        self.passwords.iter().map(|p| hex(p)).collect()
    }

    /// The user as an `ACL LIST` line (and an ACL file's): bytes, as its name and
    /// patterns are.
    pub fn describe(&self) -> Vec<u8> {
        let mut out = [b"user ", &self.name[..]].concat();
        for flag in self.flags() {
            out.push(b' ');
            out.extend_from_slice(flag.as_bytes());
        }
        for p in &self.passwords {
            out.extend_from_slice(b" #");
            out.extend_from_slice(hex(p).as_bytes());
        }
        out.push(b' ');
        out.extend_from_slice(&self.root.describe());
        for s in &self.selectors {
            out.extend_from_slice(b" (");
            out.extend_from_slice(&s.describe());
            out.push(b')');
        }
        out
    }

    /// The rules that make a user from `reset` into this one, each a SETUSER argument (a
    /// selector one in its parentheses, its words quoted as SETUSER splits them, so a
    /// pattern with a quote in it survives): what another node applies to agree with this
    /// one.
    pub fn rules(&self) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = vec![b"reset".to_vec()];
        out.extend(self.flags().into_iter().map(|f| f.as_bytes().to_vec()));
        out.extend(
            self.passwords
                .iter()
                .map(|p| format!("#{}", hex(p)).into_bytes()),
        );
        out.extend(self.root.words());
        out.extend(self.selectors.iter().map(|s| {
            let words: Vec<Vec<u8>> = s.words().iter().map(|w| quoted(w)).collect();
            [&b"("[..], &words.join(&b' '), b")"].concat()
        }));
        out
    }

    /// The user as one line of words quoted as an ACL file's (and redis-cli's) are read:
    /// `user <name> <rule> ...` from [`User::rules`], whatever bytes its name and patterns
    /// hold. What a starting node copies ([`Registry::copy_text`]).
    pub fn copy_line(&self) -> Vec<u8> {
        let mut words = vec![b"user".to_vec(), quoted(&self.name)];
        words.extend(self.rules().iter().map(|r| quoted(r)));
        words.join(&b' ')
    }

    /// Whether a selector that allows the request may also read every key (`allkeys`, or
    /// a `*` pattern with read access): Redis's condition for SORT's BY and GET patterns.
    pub fn reads_every_key(&self, req: &Request<'_>) -> bool {
        self.open
            || std::iter::once(&self.root).chain(&self.selectors).any(|s| {
                s.check(req).is_ok()
                    && (s.all_keys || s.keys.iter().any(|k| k.read && k.pattern == b"*"))
            })
    }

    /// Whether the user may run the request: its root or any selector allows it all. The
    /// refusal is the most relevant one (see [`Denied::rank`]).
    pub fn check(&self, req: &Request<'_>) -> Result<(), Denied> {
        if self.open {
            return Ok(());
        }
        let mut worst = match self.root.check(req) {
            Ok(()) => return Ok(()),
            Err(d) => d,
        };
        for s in &self.selectors {
            match s.check(req) {
                Ok(()) => return Ok(()),
                Err(d) if d.rank() > worst.rank() => worst = d,
                Err(_) => {}
            }
        }
        Err(worst)
    }
}

/// Joins `ACL SETUSER`'s arguments into rules: a selector may come split over several
/// arguments, `(` opening in one and `)` closing in a later one (Redis's
/// `ACLMergeSelectorArguments`). The error names the argument that opened an unclosed one.
pub fn merge_selector_args<A: AsRef<[u8]>>(args: &[A]) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut out = Vec::new();
    // The selector being joined, and the argument that opened it.
    let mut open: Option<(Vec<u8>, &[u8])> = None;
    for arg in args {
        let arg = arg.as_ref();
        match open.as_mut() {
            Some((acc, _)) => {
                acc.push(b' ');
                acc.extend_from_slice(arg);
                if arg.ends_with(b")") {
                    out.extend(open.take().map(|(acc, _)| acc));
                }
            }
            None if arg.starts_with(b"(") && !arg.ends_with(b")") => {
                open = Some((arg.to_vec(), arg))
            }
            None => out.push(arg.to_vec()),
        }
    }
    match open {
        Some((_, first)) => Err(first.to_vec()),
        None => Ok(out),
    }
}

/// `word` as `split_args` reads it back: as it is when it is plain printable text, else in
/// double quotes with `\"`, `\\` and `\xHH` escapes.
fn quoted(word: &[u8]) -> Vec<u8> {
    let plain = !word.is_empty()
        && word
            .iter()
            .all(|&b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\'' | b'\\'));
    if plain {
        return word.to_vec();
    }
    let mut out = vec![b'"'];
    for &b in word {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            b' '..=b'~' => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
    out
}

/// Reads an ACL file (Redis's format: one `user <name> <rule> ...` a line, quoted as in
/// redis-cli, blank lines skipped) into its users, all or nothing: on an error, every line's
/// problem, named `<file>:<line>`, as `ACL LOAD` reports them.
pub fn parse_file(text: &[u8], file: &str, catalog: &Catalog) -> Result<Vec<User>, String> {
    let mut users: Vec<User> = Vec::new();
    let mut errors = String::new();
    for (n, line) in text.split(|&b| b == b'\n').enumerate() {
        let at = n + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Some(words) = shoal_resp::inline::split_args(line) else {
            errors.push_str(&format!("{file}:{at}: unbalanced quotes in acl line. "));
            continue;
        };
        if &words[0][..] != b"user" || words.len() < 2 {
            errors.push_str(&format!("{file}:{at} should start with user keyword. "));
            continue;
        }
        let name = &words[1];
        if name.iter().any(|&b| b == 0 || b.is_ascii_whitespace()) {
            let shown = String::from_utf8_lossy(name);
            errors.push_str(&format!(
                "{file}:{at}: username '{shown}' contains invalid characters. "
            ));
            continue;
        }
        if users.iter().any(|u| u.name == name[..]) {
            let shown = String::from_utf8_lossy(name);
            errors.push_str(&format!(
                "WARNING: Duplicate user '{shown}' found on line {at}. "
            ));
            continue;
        }
        let rules = match merge_selector_args(&words[2..]) {
            Ok(rules) => rules,
            Err(open) => {
                let shown = String::from_utf8_lossy(&open);
                errors.push_str(&format!(
                    "{file}:{at}: Unmatched parenthesis in acl selector starting at '{shown}'. "
                ));
                continue;
            }
        };
        let mut user = User::new(name, catalog);
        match rules.iter().try_for_each(|r| user.apply(r, catalog)) {
            Ok(()) => users.push(user),
            Err(why) => errors.push_str(&format!("{file}:{at}: {why}. ")),
        }
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        Err(errors)
    }
}

/// Why an entry went into the ACL LOG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogReason {
    Auth,
    Command,
    Key,
    Channel,
}

impl LogReason {
    pub fn name(self) -> &'static str {
        match self {
            LogReason::Auth => "auth",
            LogReason::Command => "command",
            LogReason::Key => "key",
            LogReason::Channel => "channel",
        }
    }
}

/// One ACL LOG entry (`ACL LOG`'s fields).
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry {
    pub count: u64,
    pub reason: LogReason,
    /// `toplevel`, `multi`, `lua`.
    pub context: &'static str,
    pub object: String,
    pub username: String,
    pub client_info: String,
    pub entry_id: u64,
    pub created_ms: u64,
    pub updated_ms: u64,
}

/// Entries alike (reason, context, object, user) within this many ms count as one.
const LOG_GROUPING_MS: u64 = 60_000;

/// The ACL LOG: newest first, at most `max_len` entries (Redis's `acllog-max-len`).
#[derive(Default)]
pub struct Log {
    entries: VecDeque<LogEntry>,
    next_id: u64,
}

impl Log {
    /// Records a refusal. One alike among the 10 newest entries, updated within the
    /// grouping time, counts once more instead and moves to the front.
    pub fn add(&mut self, mut entry: LogEntry, now_ms: u64, max_len: usize) {
        let alike = self.entries.iter().take(10).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && now_ms.saturating_sub(e.updated_ms) < LOG_GROUPING_MS
        });
        if let Some(mut e) = alike.and_then(|i| self.entries.remove(i)) {
            e.count += 1;
            e.updated_ms = now_ms;
            e.client_info = entry.client_info;
            self.entries.push_front(e);
            return;
        }
        entry.count = 1;
        entry.entry_id = self.next_id;
        entry.created_ms = now_ms;
        entry.updated_ms = now_ms;
        self.next_id += 1;
        self.entries.push_front(entry);
        self.entries.truncate(max_len);
    }

    /// The newest `count` entries.
    pub fn newest(&self, count: usize) -> impl Iterator<Item = &LogEntry> {
        self.entries.iter().take(count)
    }

    pub fn reset(&mut self) {
        self.entries.clear();
    }
}

/// The node's users and ACL LOG. Each change bumps an epoch, which connections compare
/// with the one they last read their user at (one atomic load per command).
pub struct Registry {
    catalog: Catalog,
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    epoch: AtomicU64,
    pub log: std::sync::Mutex<Log>,
    /// Refusals by reason (INFO's `acl_access_denied_*`), indexed by [`LogReason`].
    denied: [AtomicU64; 4],
    /// Set while a cluster node that started copies the users of another member: the users
    /// set, deleted or replaced (ACL LOAD) here since, which the copy must not undo (the
    /// fan-out of ACL SETUSER and DELUSER through another node). Taken after `users`' lock,
    /// never before it.
    copying: std::sync::Mutex<Option<ChangedSince<Vec<u8>>>>,
}

impl Registry {
    pub fn new(catalog: Catalog) -> Registry {
        let default = User::default_user(&catalog);
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), Arc::new(default));
        Registry {
            catalog,
            users: RwLock::new(users),
            epoch: AtomicU64::new(1),
            log: std::sync::Mutex::new(Log::default()),
            denied: Default::default(),
            copying: std::sync::Mutex::new(None),
        }
    }

    fn copy_state(&self) -> std::sync::MutexGuard<'_, Option<ChangedSince<Vec<u8>>>> {
        self.copying.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes, while copying, that the users `names` (or all, `all`) changed here.
    fn note<'n>(&self, names: impl IntoIterator<Item = &'n [u8]>, all: bool) {
        if let Some(c) = &mut *self.copy_state() {
            c.note(names.into_iter().map(<[u8]>::to_vec), all);
        }
    }

    /// Starts (or ends, without a copy) this node's copy of another member's users; see
    /// [`Registry::adopt`].
    pub fn set_copying(&self, copying: bool) {
        let _users = self.users.write().unwrap_or_else(|e| e.into_inner());
        *self.copy_state() = copying.then(ChangedSince::default);
    }

    /// True while this node copies another member's users (it has none to give).
    pub fn copying(&self) -> bool {
        self.copy_state().is_some()
    }

    /// Ends this node's copy with `copied`, another member's users: those this node knows
    /// already (from its configuration or ACL file: they win, so a changed configuration
    /// is not undone by a rolling restart), and those set, deleted or replaced here since
    /// the copy began, are left out. The names of the users adopted; none when the copy
    /// was over already.
    pub fn adopt(&self, copied: Vec<User>) -> Vec<Vec<u8>> {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let Some(copy) = self.copy_state().take() else {
            return Vec::new();
        };
        let mut adopted = Vec::new();
        for user in copied {
            if !users.contains_key(&user.name) && copy.untouched(&user.name[..]) {
                adopted.push(user.name.clone());
                users.insert(user.name.clone(), Arc::new(user));
            }
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
        adopted
    }

    /// Counts a refusal.
    pub fn note_denied(&self, reason: LogReason) {
        self.denied[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals for `reason` so far.
    pub fn denied(&self, reason: LogReason) -> u64 {
        self.denied[reason as usize].load(Ordering::Relaxed)
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Bumped by every change of a user.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Vec<u8>, Arc<User>>> {
        self.users.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.read().get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
        self.user(b"default")
            .expect("the default user cannot be deleted")
    }

    /// Every user, by name.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.read().values().cloned().collect()
    }

    /// Applies `rules` to user `name` (created if new), all or nothing; the error names
    /// the rule refused.
    pub fn set_user<R: AsRef<[u8]>>(
        &self,
        name: &[u8],
        rules: &[R],
    ) -> Result<(), (String, RuleError)> {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let mut user = match users.get(name) {
            Some(u) => User::clone(u),
            None => User::new(name, &self.catalog),
        };
        for rule in rules {
            let rule = rule.as_ref();
            user.apply(rule, &self.catalog)
                .map_err(|e| (String::from_utf8_lossy(rule).into_owned(), e))?;
        }
        users.insert(name.to_vec(), Arc::new(user));
        self.note([name], false);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Replaces every user with `users` (ACL LOAD); `default` as it starts when they do not
    /// name it. Returns the users as they were.
    pub fn replace_all(&self, users: Vec<User>) -> BTreeMap<Vec<u8>, Arc<User>> {
        let mut fresh: BTreeMap<Vec<u8>, Arc<User>> = users
            .into_iter()
            .map(|u| (u.name.clone(), Arc::new(u)))
            .collect();
        fresh
            .entry(b"default".to_vec())
            .or_insert_with(|| Arc::new(User::default_user(&self.catalog)));
        let mut current = self.users.write().unwrap_or_else(|e| e.into_inner());
        let before = std::mem::replace(&mut *current, fresh);
        self.note([], true);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        before
    }

    /// Every user as [`User::copy_line`] writes it, a line each: what `acl.copy` gives a
    /// starting node, read back whatever bytes names and patterns hold.
    pub fn copy_text(&self) -> Vec<u8> {
        self.lines(User::copy_line)
    }

    /// Every user as `line` writes it, a line each.
    fn lines(&self, line: impl Fn(&User) -> Vec<u8>) -> Vec<u8> {
        self.read()
            .values()
            .flat_map(|u| {
                let mut l = line(u);
                l.push(b'\n');
                l
            })
            .collect()
    }

    /// Every user as an ACL file holds it (ACL SAVE): its `ACL LIST` line each.
    pub fn file_text(&self) -> Vec<u8> {
        self.lines(User::describe)
    }

    /// Deletes the users named (never `default`); how many there were.
    pub fn delete(&self, names: &[&[u8]]) -> usize {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let n = names.iter().filter(|n| users.remove(**n).is_some()).count();
        // Noted even when not here yet: the copy must not bring them.
        self.note(names.iter().copied(), false);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        n
    }

    /// The user `name` if `pass` logs it in.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        self.user(name).filter(|u| u.accepts(pass))
    }

    /// Sets the default user's password to `requirepass` (none when empty), as Redis does
    /// when `requirepass` is set.
    pub fn set_requirepass(&self, pass: &str) {
        let rules = if pass.is_empty() {
            vec![b"nopass".to_vec()]
        } else {
            vec![b"resetpass".to_vec(), [b">", pass.as_bytes()].concat()]
        };
        // The rules are valid for any password.
        let _ = self.set_user(b"default", &rules);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bit(name: &str) -> u32 {
        category_bit(name).unwrap()
    }

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        c.add("get", bit("read") | bit("string") | bit("fast"), &[]);
        c.add("set", bit("write") | bit("string") | bit("slow"), &[]);
        c.add("select", bit("fast") | bit("connection"), &[]);
        c.add(
            "config",
            bit("slow"),
            &[
                ("get", bit("admin") | bit("slow") | bit("dangerous")),
                ("help", bit("slow")),
            ],
        );
        c.add("publish", bit("pubsub") | bit("fast"), &[]);
        c
    }

    fn user(rules: &[&str]) -> (User, Catalog) {
        let c = catalog();
        let mut u = User::new(b"u", &c);
        for r in rules {
            u.apply(r, &c).unwrap();
        }
        (u, c)
    }

    fn cmd<'a>(c: &Catalog, name: &str, keys: &'a [(usize, KeyNeeds, &'a [u8])]) -> Request<'a> {
        Request {
            id: c.id(name).unwrap(),
            first_arg: None,
            keys,
            channels: &[],
        }
    }

    const R: KeyNeeds = KeyNeeds::READ;
    const W: KeyNeeds = KeyNeeds::WRITE;

    #[test]
    fn a_new_user_may_do_nothing_and_the_default_everything() {
        let c = catalog();
        let u = User::new(b"u", &c);
        assert_eq!(
            u.describe(),
            "user u off sanitize-payload resetchannels -@all".as_bytes()
        );
        assert_eq!(u.check(&cmd(&c, "get", &[])), Err(Denied::Command));
        let d = User::default_user(&c);
        assert!(d.is_open());
        assert_eq!(
            d.describe(),
            "user default on nopass sanitize-payload ~* &* +@all".as_bytes()
        );
        assert!(d.accepts(b"anything"));
    }

    #[test]
    fn a_users_rules_make_it_again_from_any_user() {
        let c = catalog();
        for rules in [
            &[
                "on",
                ">pw",
                ">other",
                "~k*",
                "%R~r*",
                "&ch",
                "+@string",
                "-set",
                "+config|get",
            ][..],
            &[
                "on",
                "nopass",
                "allkeys",
                "allchannels",
                "+@all",
                "-publish",
                "(~x* +get)",
            ],
            &[
                "skip-sanitize-payload",
                "resetchannels",
                "+select|0",
                "(%W~w* +set)",
                "(&c +publish)",
            ],
            &[],
        ] {
            let (u, _) = user(
                &merge_selector_args(rules)
                    .unwrap()
                    .iter()
                    .map(|r| std::str::from_utf8(r).unwrap())
                    .collect::<Vec<_>>(),
            );
            // From another user entirely, as a node that had it otherwise.
            let (mut again, _) = user(&["on", ">x", "~*", "&*", "+@all", "(~y +get)"]);
            for r in u.rules() {
                again.apply(&r, &c).unwrap();
            }
            assert_eq!(again.describe(), u.describe(), "{rules:?}");
            assert_eq!(again, u, "{rules:?}");
        }
    }

    #[test]
    fn a_copied_user_reads_back_exactly_whatever_its_bytes() {
        let c = catalog();
        let odd: &[(&[u8], &[&[u8]])] = &[
            (b"a\"b", &[b"on", b">pw", b"+get"]),
            (b"it's", &[b"on", b"~it's*", b"%R~back\\slash", b"&ch\"an"]),
            (
                b"\xff\x01bin",
                &[b"on", b"~\x01\xfe*", b"(\"~q'*\" +get)", b"(~x +set)"],
            ),
            (b"plain", &[b"nopass", b"allkeys", b"+@all"]),
        ];
        for (name, rules) in odd {
            let mut u = User::new(name, &c);
            for r in merge_selector_args(rules).unwrap() {
                u.apply(&r, &c).unwrap();
            }
            let line = u.copy_line();
            let back = parse_file(&line, "copy", &c)
                .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(&line)));
            assert_eq!(back, [u.clone()], "{}", String::from_utf8_lossy(&line));
            // And as SETUSER arguments from any user (what acl.follow sends).
            let (mut again, _) = user(&["on", "~other", "(~y +get)"]);
            for r in u.rules() {
                again.apply(&r, &c).unwrap();
            }
            assert_eq!(again.rules(), u.rules());
        }
    }

    #[test]
    fn a_copy_of_users_leaves_out_what_is_known_or_changed_here() {
        let c = catalog();
        let reg = Registry::new(catalog());
        reg.set_user(b"configured", &["on", ">mine"]).unwrap();
        reg.set_copying(true);
        assert!(reg.copying());
        reg.set_user(b"changed", &["on", ">new"]).unwrap();
        assert_eq!(reg.delete(&[b"deleted"]), 0);
        let copied = parse_file(
            b"user default on nopass ~* &* +@all\n\
              user configured on #0000000000000000000000000000000000000000000000000000000000000000 +@all\n\
              user changed on >old +@all\n\
              user deleted on >d +@all\n\
              user fresh on >f ~* +get\n",
            "copy",
            &c,
        )
        .unwrap();
        let epoch = reg.epoch();
        assert_eq!(reg.adopt(copied.clone()), [b"fresh".to_vec()]);
        assert!(reg.epoch() > epoch && !reg.copying());
        assert!(reg.authenticate(b"configured", b"mine").is_some());
        assert!(reg.authenticate(b"changed", b"new").is_some());
        assert!(reg.user(b"deleted").is_none());
        assert!(reg.authenticate(b"fresh", b"f").is_some());
        assert!(reg.default_user().is_open());
        // Over already: nothing more.
        reg.delete(&[b"fresh"]);
        assert!(reg.adopt(copied.clone()).is_empty());
        assert!(reg.user(b"fresh").is_none());
        // An ACL LOAD while copying: the copy brings nothing.
        reg.set_copying(true);
        reg.replace_all(Vec::new());
        assert!(reg.adopt(copied).is_empty());
        assert!(reg.user(b"fresh").is_none());
    }

    #[test]
    fn command_rules_are_kept_in_order_without_repeats() {
        let (u, _) = user(&["+@string", "-set", "+get", "+set", "+config|get"]);
        assert_eq!(
            u.root.commands_text(),
            "-@all +@string +get +set +config|get"
        );
        let (u, _) = user(&["+config|get", "+config"]);
        assert_eq!(u.root.commands_text(), "-@all +config");
        let (u, _) = user(&["+get", "+@all", "-set"]);
        assert_eq!(u.root.commands_text(), "+@all -set");
        let (u, _) = user(&["+GET", "-@STRING"]);
        assert_eq!(u.root.commands_text(), "-@all +get -@string");
    }

    #[test]
    fn categories_and_subcommands_set_the_right_commands() {
        let (u, c) = user(&["+@all", "-@dangerous"]);
        assert!(u.check(&cmd(&c, "get", &[])).is_ok());
        assert_eq!(u.check(&cmd(&c, "config|get", &[])), Err(Denied::Command));
        assert!(u.check(&cmd(&c, "config|help", &[])).is_ok());
        let (u, c) = user(&["+config|help", "allkeys", "allchannels"]);
        assert!(u.check(&cmd(&c, "config|help", &[])).is_ok());
        assert_eq!(u.check(&cmd(&c, "config|get", &[])), Err(Denied::Command));
        let (u, c) = user(&["+select|0", "allkeys"]);
        let mut req = cmd(&c, "select", &[]);
        req.first_arg = Some(b"0");
        assert!(u.check(&req).is_ok());
        req.first_arg = Some(b"1");
        assert_eq!(u.check(&req), Err(Denied::Command));
    }

    #[test]
    fn keys_need_a_pattern_with_the_access_the_command_needs() {
        let (u, c) = user(&["+@all", "~cache:*", "%R~ro:*", "%W~wo:*"]);
        assert_eq!(u.root.keys_text(), b"~cache:* %R~ro:* %W~wo:*");
        assert!(u.check(&cmd(&c, "get", &[(1, R, b"cache:1")])).is_ok());
        assert!(u.check(&cmd(&c, "get", &[(1, R, b"ro:1")])).is_ok());
        assert_eq!(
            u.check(&cmd(&c, "get", &[(1, R, b"wo:1")])),
            Err(Denied::Key(1))
        );
        assert!(u.check(&cmd(&c, "set", &[(1, W, b"wo:1")])).is_ok());
        assert_eq!(
            u.check(&cmd(&c, "set", &[(1, W, b"ro:1")])),
            Err(Denied::Key(1))
        );
        // Neither read nor write (EXISTS): any matching pattern.
        assert!(u
            .check(&cmd(&c, "get", &[(1, KeyNeeds::NONE, b"wo:1")]))
            .is_ok());
        let (mut u, c) = user(&["allkeys"]);
        assert_eq!(u.apply("~x", &c), Err(RuleError::AfterAllKeys));
        assert_eq!(u.apply("%X~x", &c), Err(RuleError::Syntax));
    }

    #[test]
    fn channels_match_patterns_and_psubscribe_needs_the_pattern_itself() {
        let (u, c) = user(&["+@all", "allkeys", "&news.*"]);
        let ok = [(1, false, &b"news.a"[..])];
        let req = Request {
            id: c.id("publish").unwrap(),
            first_arg: None,
            keys: &[],
            channels: &ok,
        };
        assert!(u.check(&req).is_ok());
        let pattern = [(1, true, &b"news.*"[..]), (2, true, &b"n*"[..])];
        let req = Request {
            id: c.id("publish").unwrap(),
            first_arg: None,
            keys: &[],
            channels: &pattern,
        };
        assert_eq!(u.check(&req), Err(Denied::Channel(2)));
    }

    #[test]
    fn a_selector_that_allows_the_command_is_enough() {
        let (u, c) = user(&["+get", "~a*", "(+set ~b*)"]);
        assert!(u.check(&cmd(&c, "set", &[(1, W, b"b1")])).is_ok());
        assert_eq!(
            u.check(&cmd(&c, "set", &[(1, W, b"a1")])),
            Err(Denied::Key(1))
        );
        assert_eq!(
            u.describe(),
            "user u off sanitize-payload ~a* resetchannels -@all +get (~b* resetchannels -@all +set)".as_bytes()
        );
    }

    #[test]
    fn passwords_and_patterns_are_bytes() {
        let (u, _) = user(&["on"]);
        let (mut u, c) = (u, catalog());
        u.apply(b">\xff\xfe", &c).unwrap();
        assert!(u.accepts(b"\xff\xfe"));
        assert!(!u.accepts("\u{fffd}\u{fffd}".as_bytes()));
        u.apply(b"~k\xff*", &c).unwrap();
        u.apply(b"+get", &c).unwrap();
        assert!(u.check(&cmd(&c, "get", &[(1, R, b"k\xff1")])).is_ok());
        assert_eq!(
            u.check(&cmd(&c, "get", &[(1, R, b"k1")])),
            Err(Denied::Key(1))
        );
    }

    #[test]
    fn a_selector_is_split_as_redis_splits_arguments() {
        let (mut u, c) = user(&[]);
        u.apply(b"(~\"ab\" +get)", &c).unwrap();
        assert_eq!(u.selectors[0].keys_text(), b"~ab".to_vec());
        // A pattern holds no whitespace, quoted or not (as in Redis).
        assert_eq!(u.apply(b"(~\"a b\" +get)", &c), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"(~\"a +get)", &c), Err(RuleError::Syntax));
    }

    #[test]
    fn losing_a_channel_is_noticed() {
        let (old, _) = user(&["&a*", "(&b*)"]);
        let (same, _) = user(&["&b*", "&a*"]);
        let (fewer, _) = user(&["&a*"]);
        let (all, _) = user(&["(&*)"]);
        assert!(!old.loses_channels(&same));
        assert!(old.loses_channels(&fewer));
        assert!(!old.loses_channels(&all));
        assert!(all.loses_channels(&old));
    }

    #[test]
    fn passwords_by_text_and_by_hash() {
        let (mut u, c) = user(&["on", ">secret"]);
        assert!(u.accepts(b"secret") && !u.accepts(b"other"));
        let h = u.password_hashes()[0].clone();
        assert_eq!(
            h,
            "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"
        );
        assert_eq!(u.apply("<nope", &c), Err(RuleError::NoSuchPassword));
        // An empty rule is no rule (Redis's `ACL SETUSER u ""` is OK).
        u.apply("", &c).unwrap();
        assert!(u.accepts(b"secret"));
        u.apply(format!("!{h}"), &c).unwrap();
        assert!(!u.accepts(b"secret"));
        assert_eq!(u.apply("#ABC", &c), Err(RuleError::BadHash));
        u.apply("off", &c).unwrap();
        u.apply("nopass", &c).unwrap();
        assert!(!u.accepts(b""), "a disabled user never logs in");
    }

    #[test]
    fn selector_arguments_join_until_the_closing_parenthesis() {
        let words = |w: &[&str]| w.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            merge_selector_args(&["on", "(+get", "~a*)", "(+set)"]).unwrap(),
            words(&["on", "(+get ~a*)", "(+set)"])
        );
        assert_eq!(
            merge_selector_args(&["(+get", "~a*"]),
            Err(b"(+get".to_vec())
        );
    }

    #[test]
    fn an_acl_file_loads_whole_or_not_at_all() {
        let c = catalog();
        let text =
            b"user default on nopass ~* &* +@all\n\nuser app on >pw ~a:* \"(+set ~b*)\" +get\r\n";
        let users = parse_file(text, "users.acl", &c).unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(
            users[1].describe(),
            "user app on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~a:* resetchannels -@all +get (~b* resetchannels -@all +set)".as_bytes()
        );
        assert!(
            parse_file(b"USER a on", "f", &c).is_err(),
            "the keyword is lowercase"
        );
        let bad = b"user a on\nuser b +nosuch\nfoo\nuser a off\nuser c \"on\n";
        assert_eq!(
            parse_file(bad, "f", &c).unwrap_err(),
            "f:2: Unknown command or category name in ACL. f:3 should start with user keyword. WARNING: Duplicate user 'a' found on line 4. f:5: unbalanced quotes in acl line. "
        );
        let r = Registry::new(catalog());
        r.set_user(b"old", &["on"]).unwrap();
        let before = r.replace_all(parse_file(b"user app on", "f", &c).unwrap());
        assert_eq!(
            before.keys().collect::<Vec<_>>(),
            vec![&b"default".to_vec(), &b"old".to_vec()]
        );
        assert_eq!(
            r.file_text(),
            "user app on sanitize-payload resetchannels -@all\nuser default on nopass sanitize-payload ~* &* +@all\n".as_bytes()
        );
    }

    #[test]
    fn the_log_groups_alike_entries_and_keeps_the_newest() {
        let mut log = Log::default();
        let e = |object: &str| LogEntry {
            count: 0,
            reason: LogReason::Command,
            context: "toplevel",
            object: object.into(),
            username: "u".into(),
            client_info: String::new(),
            entry_id: 0,
            created_ms: 0,
            updated_ms: 0,
        };
        log.add(e("get"), 1_000, 2);
        log.add(e("get"), 2_000, 2);
        log.add(e("set"), 3_000, 2);
        log.add(e("del"), 4_000, 2);
        let got: Vec<_> = log
            .newest(10)
            .map(|e| (e.object.as_str(), e.count))
            .collect();
        assert_eq!(got, vec![("del", 1), ("set", 1)]);
        log.add(e("set"), 5_000, 2);
        let got: Vec<_> = log
            .newest(10)
            .map(|e| (e.object.as_str(), e.count))
            .collect();
        assert_eq!(
            got,
            vec![("set", 2), ("del", 1)],
            "the alike entry moves to the front"
        );
        log.add(e("set"), 5_000 + LOG_GROUPING_MS, 2);
        assert_eq!(
            log.newest(1).next().unwrap().count,
            1,
            "a new entry after a minute"
        );
    }
}
