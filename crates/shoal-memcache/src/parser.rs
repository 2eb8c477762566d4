//! Resumable Memcached text-protocol request parser, following memcached 1.6's
//! `proto_text.c` (`try_read_command_ascii`, `process_command_ascii`, `process_*_command`,
//! `complete_nread_ascii`) rule for rule and error text for error text, except where noted.
//!
//! Wire format:
//!
//! ```text
//! command line:  <cmd> [<token> ...]\r\n      tokens split on one or more ' ', a bare \n ends a line too
//! storage:       <cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply]\r\n<bytes bytes>\r\n
//! meta set:      ms <key> <datalen> <flag>*\r\n<datalen bytes>\r\n
//! ```
//!
//! States: `Line` (looking for the end of a command line), `Data` (the line of a storage
//! command is consumed, waiting for `<bytes>+2` bytes), `Swallow` (discarding the data block
//! of a rejected storage command, counting it down across reads, then reporting the error).
//!
//! Memory discipline: a command line is bounded by `max_line_len` (without a newline in that
//! many bytes the connection is closed); a data block is buffered only when it is at most
//! `max_item_size`, larger ones are discarded as they arrive. Declared lengths are never used
//! to allocate. Keys, tokens and data are zero-copy slices of the caller's read buffer.

use bytes::{Buf, Bytes, BytesMut};

use crate::command::{Command, Lru, MetaFlags, Slabs, StoreMode};

/// Upper bounds on what a client can make the server buffer. Defaults are memcached 1.6's.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Longest key (memcached `KEY_MAX_LENGTH`, 250).
    pub max_key_len: usize,
    /// Longest command line, without its line end (64 KiB), but for gets. memcached closes a
    /// connection that sends 2 KiB without a newline unless the line starts with `get `/`gets `
    /// (multi-key gets are unbounded there).
    pub max_line_len: usize,
    /// Longest get/gets/gat/gats line (2 MiB: 8,000 keys of the longest length, pymemcache's
    /// and libmemcached's multi-gets send them on one line however many keys they name).
    pub max_get_line_len: usize,
    /// Largest item accepted (memcached `-I`, 1 MiB), counted as memcached counts it: the
    /// data block with its key and memcached's own item header ([`item_fits`]); larger blocks
    /// are swallowed and answered `SERVER_ERROR object too large for cache`.
    pub max_item_size: usize,
    /// Most keys in one get/gets/gat/gats line (not in memcached, where only the line length
    /// bounds them): caps the per-request work and the `Vec` of keys.
    pub max_keys: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_key_len: 250,
            max_line_len: 64 * 1024,
            max_get_line_len: 2 * 1024 * 1024,
            max_item_size: 1024 * 1024,
            max_keys: 100_000,
        }
    }
}

/// Whether an item of this key length, client flags and data length fits `max_item_size`
/// as memcached counts it (`item_size_ok`): its 48-byte item header, the key and its NUL,
/// 4 bytes of client flags unless they are 0, the data and its `\r\n`, the 8-byte CAS. So
/// a 1 MiB limit takes a value somewhat smaller than 1 MiB, as in memcached.
pub fn item_fits(limits: &Limits, key_len: usize, flags: u32, data_len: usize) -> bool {
    const ITEM_HEADER: usize = 48;
    const CAS: usize = 8;
    let flags_len = if flags == 0 { 0 } else { 4 };
    ITEM_HEADER
        .saturating_add(key_len + 1 + flags_len)
        .saturating_add(data_len.saturating_add(2))
        .saturating_add(CAS)
        <= limits.max_item_size
}

/// A request the node must answer with an error. [`ParseError::reply`] gives memcached's
/// exact bytes; [`ParseError::closes`] says whether the connection must then be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Unknown command, wrong number of tokens, empty line.
    #[error("ERROR")]
    UnknownCommand,
    /// Key too long, malformed number, bad meta key.
    #[error("CLIENT_ERROR bad command line format")]
    BadCommandLine,
    /// The two bytes after a data block are not `\r\n`.
    #[error("CLIENT_ERROR bad data chunk")]
    BadDataChunk,
    /// The data block is larger than `max_item_size` (already swallowed).
    #[error("SERVER_ERROR object too large for cache")]
    TooLarge,
    /// No line end within `max_line_len` bytes: connection-fatal.
    #[error("CLIENT_ERROR line too long")]
    LineTooLong,
    /// An unknown command whose last token starts with `HTTP/`: closed without a reply,
    /// as memcached does.
    #[error("an HTTP request line")]
    HttpRequest,
    /// `shutdown`: memcached's answer without `-A` (`shutdown_command no` in `stats
    /// settings`); Shoal stops by SIGTERM or Redis's SHUTDOWN.
    #[error("ERROR: shutdown not enabled")]
    ShutdownDisabled,
    /// Other client errors, with memcached's texts (`invalid numeric delta argument`,
    /// `invalid exptime argument`, `duplicate flag`, ...).
    #[error("CLIENT_ERROR {0}")]
    Client(&'static str),
}

impl ParseError {
    /// The reply line: the error text followed by `\r\n`.
    pub fn reply(&self) -> Vec<u8> {
        let mut out = self.to_string().into_bytes();
        out.extend_from_slice(b"\r\n");
        out
    }

    /// Whether the connection must be closed after the reply (the parser cannot find the next
    /// command boundary). memcached 1.6 closes without a reply in that case; sending the
    /// reply first does no harm and tells a human what happened.
    pub fn closes(&self) -> bool {
        matches!(self, ParseError::LineTooLong | ParseError::HttpRequest)
    }

    /// Whether the connection is closed without any reply (memcached's answer to an HTTP
    /// request line).
    pub fn silent(&self) -> bool {
        matches!(self, ParseError::HttpRequest)
    }
}

/// `delete <key> <anything but 0>`: memcached's text, two spaces included.
const DELETE_USAGE: &str = "bad command line format.  Usage: delete <key> [noreply]";
const INVALID_EXPTIME: &str = "invalid exptime argument";
const INVALID_DELTA: &str = "invalid numeric delta argument";
/// memcached `MFLAG_MAX_OPT_LENGTH`: a meta line of this many tokens or more (the command
/// and the key counted) is refused, whatever its flags.
const MAX_META_TOKENS: usize = 20;
/// memcached `MFLAG_MAX_OPAQUE_LENGTH`.
const MAX_OPAQUE_LEN: usize = 32;
/// memcached reads `<bytes>` as an `int32_t` and refuses anything above `INT_MAX - 2`.
const MAX_DECLARED_LEN: i64 = i32::MAX as i64 - 2;

/// Parses requests off the front of a connection's read buffer, one at a time, keeping the
/// state of a partially received request between calls.
#[derive(Debug, Default)]
pub struct Parser {
    state: State,
    /// Bytes at the front of the buffer already searched for `\n` without finding it, so a
    /// slowly arriving line is scanned once, not once per read.
    scanned: usize,
    /// The last command line read was a classic command (storage, delete, incr/decr, touch,
    /// flush_all, verbosity, cache_memlimit) ending in `noreply`: memcached answers its errors
    /// with nothing too ([`Parser::is_quiet`]).
    noreply_line: bool,
    /// The key whose old value a too-large `set` or `ms` just refused must go
    /// ([`Parser::take_stale`]).
    stale: Option<Command>,
}

#[derive(Debug, Default)]
enum State {
    #[default]
    Line,
    /// The command line is consumed; the data block (`len` bytes plus `\r\n`) is awaited.
    Data { pending: Pending, len: usize },
    /// Discarding `remaining` more bytes of a rejected data block, then `error` is returned
    /// (and `stale` kept for [`Parser::take_stale`]).
    Swallow {
        remaining: usize,
        error: ParseError,
        stale: Option<Command>,
    },
}

/// A storage command whose line is parsed, waiting for its data block.
#[derive(Debug)]
enum Pending {
    Store {
        mode: StoreMode,
        key: Bytes,
        flags: u32,
        exptime: i64,
        cas: u64,
        noreply: bool,
    },
    Meta {
        key: Bytes,
        flags: MetaFlags,
    },
}

impl Pending {
    /// Whether its item, with a data block of `len` bytes, fits [`Limits::max_item_size`].
    fn fits(&self, limits: &Limits, len: usize) -> bool {
        match self {
            Pending::Store { key, flags, .. } => item_fits(limits, key.len(), *flags, len),
            Pending::Meta { key, flags } => {
                let client_flags = flags.token(b'F').and_then(parse_u32).unwrap_or(0);
                item_fits(limits, key.len(), client_flags, len)
            }
        }
    }

    /// The delete of the key whose old value goes when this command's block is too large: memcached
    /// unlinks it after a failed `set` or `ms` (any mode), so that a client told its write
    /// failed does not read the value it meant to replace; not after add, replace, cas,
    /// append or prepend.
    fn stale_delete(&self) -> Option<Command> {
        match self {
            Pending::Store {
                mode: StoreMode::Set,
                key,
                ..
            } => crate::command::forget_stale(key.clone(), false),
            Pending::Store { .. } => None,
            Pending::Meta { key, flags } => {
                crate::command::forget_stale(key.clone(), flags.has(b'b'))
            }
        }
    }

    fn complete(self, data: Bytes) -> Command {
        match self {
            Pending::Store {
                mode,
                key,
                flags,
                exptime,
                cas,
                noreply,
            } => Command::Store {
                mode,
                key,
                flags,
                exptime,
                data,
                cas,
                noreply,
            },
            Pending::Meta { key, flags } => Command::MetaSet { key, data, flags },
        }
    }
}

/// What a complete command line asks for next.
enum LineOutcome {
    Done(Command),
    /// Read a data block of this length (plus `\r\n`), then complete the command.
    Data(Pending, usize),
    /// Discard this many bytes, then report the error (and the stale key, if any).
    Swallow(usize, ParseError, Option<Command>),
}

impl Parser {
    /// True between requests: no command line is half read and no data block is awaited, so
    /// the next byte starts a request (where the binary protocol's magic byte can be seen).
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Line) && self.scanned == 0
    }

    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes still to come of the request in progress, when [`Parser::parse`] stopped with
    /// `buffered` bytes left in its buffer: the rest of a data block, 0 between requests,
    /// within a command line, or while a refused block is discarded (that goes through the
    /// smallest reads, as memcached swallows it through its read buffer).
    pub fn wanted(&self, buffered: usize) -> usize {
        match &self.state {
            State::Data { len, .. } => (len + 2).saturating_sub(buffered),
            State::Line | State::Swallow { .. } => 0,
        }
    }

    /// Whether `error`, just returned by [`Parser::parse`], goes unanswered: memcached's
    /// `noreply` silences a classic command's errors as well as its replies (not `ERROR`
    /// for a command it could not read, nor a meta command's errors).
    /// After [`ParseError::TooLarge`]: the delete, answered by nothing, of the key whose old
    /// value must go (a `set` or `ms`, as memcached unlinks it), for the node to run next.
    pub fn take_stale(&mut self) -> Option<Command> {
        self.stale.take()
    }

    pub fn is_quiet(&self, error: &ParseError) -> bool {
        error.silent()
            || (self.noreply_line
                && !matches!(error, ParseError::UnknownCommand | ParseError::LineTooLong))
    }

    /// Parses the next complete command at the front of `buf`, consuming its bytes.
    ///
    /// `Ok(None)`: more bytes are needed; the state to resume is kept (a command line already
    /// consumed is not re-read, a data block is not re-scanned, swallowed bytes are gone).
    ///
    /// `Err(e)`: the node replies `e.reply()`. If `e.closes()`, it then closes the connection
    /// (the parser state is unspecified). Otherwise the offending line, and the data block of
    /// a storage command whose `<bytes>` was readable, have been consumed, and the next call
    /// parses the following command, as memcached does.
    pub fn parse(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<Command>, ParseError> {
        loop {
            match std::mem::take(&mut self.state) {
                State::Line => {
                    let Some(outcome) = self.read_line(buf, limits)? else {
                        return Ok(None);
                    };
                    match outcome {
                        LineOutcome::Done(cmd) => return Ok(Some(cmd)),
                        LineOutcome::Data(pending, len) => {
                            self.state = State::Data { pending, len };
                        }
                        LineOutcome::Swallow(remaining, error, stale) => {
                            self.state = State::Swallow {
                                remaining,
                                error,
                                stale,
                            };
                        }
                    }
                }
                State::Data { pending, len } => {
                    let needed = len + 2;
                    if buf.len() < needed {
                        self.state = State::Data { pending, len };
                        return Ok(None);
                    }
                    // memcached checks for exactly "\r\n" after the block (a bare \n is not
                    // accepted here) and, either way, has consumed <bytes>+2.
                    if &buf[len..needed] != b"\r\n" {
                        buf.advance(needed);
                        return Err(ParseError::BadDataChunk);
                    }
                    let data = buf.split_to(len).freeze();
                    buf.advance(2);
                    return Ok(Some(pending.complete(data)));
                }
                State::Swallow {
                    remaining,
                    error,
                    stale,
                } => {
                    let n = remaining.min(buf.len());
                    buf.advance(n);
                    let remaining = remaining - n;
                    if remaining > 0 {
                        self.state = State::Swallow {
                            remaining,
                            error,
                            stale,
                        };
                        return Ok(None);
                    }
                    self.stale = stale;
                    return Err(error);
                }
            }
        }
    }

    /// Consumes one command line if complete and interprets it.
    fn read_line(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<LineOutcome>, ParseError> {
        let start = self.scanned.min(buf.len());
        // The longest line this one may be: a get's is longer.
        let max_len = |buf: &[u8]| {
            if is_get_line(buf) {
                limits.max_get_line_len.max(limits.max_line_len)
            } else {
                limits.max_line_len
            }
        };
        let nl = match buf[start..].iter().position(|&b| b == b'\n') {
            Some(i) => start + i,
            None => {
                self.scanned = buf.len();
                // A line of exactly the limit may be waiting for the '\n' after its '\r'.
                if buf.len() > limits.max_line_len.saturating_add(1)
                    && buf.len() > max_len(buf).saturating_add(1)
                {
                    return Err(ParseError::LineTooLong);
                }
                return Ok(None);
            }
        };
        self.scanned = 0;
        // Like memcached, one '\r' before the '\n' is part of the line end.
        let end = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        if end > limits.max_line_len && end > max_len(&buf[..end]) {
            return Err(ParseError::LineTooLong);
        }
        let line = buf.split_to(nl + 1).freeze().slice(..end);
        self.noreply_line = classic_noreply(&line);
        interpret(&line, limits).map(Some)
    }
}

/// Whether `line` (or its start) is a get/gets/gat/gats line, whose length has its own limit.
fn is_get_line(line: &[u8]) -> bool {
    let at = line.iter().position(|&b| b != b' ').unwrap_or(line.len());
    let word = &line[at..];
    [&b"get "[..], b"gets ", b"gat ", b"gats "]
        .iter()
        .any(|w| word.starts_with(w))
}

/// Whether `line` is a classic command ending in `noreply` (see `Parser::noreply_line`).
fn classic_noreply(line: &[u8]) -> bool {
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let first = words.next().unwrap_or_default();
    let classic = matches!(
        first,
        b"set"
            | b"add"
            | b"replace"
            | b"append"
            | b"prepend"
            | b"cas"
            | b"delete"
            | b"incr"
            | b"decr"
            | b"touch"
            | b"flush_all"
            | b"verbosity"
            | b"cache_memlimit"
    ) || (first == b"slabs" && words.clone().next() == Some(&b"automove"[..]));
    classic && words.next_back() == Some(&b"noreply"[..])
}

/// The tokens of a command line: `(start, end)` offsets into it.
struct Tokens<'a> {
    line: &'a Bytes,
    spans: Vec<(usize, usize)>,
    /// More tokens followed than were collected.
    overflow: bool,
}

impl<'a> Tokens<'a> {
    /// memcached's `tokenize_command`: split on ' ' only (a tab is part of a token), runs of
    /// spaces and leading/trailing spaces produce no empty tokens. At most `cap` tokens are
    /// kept.
    fn split(line: &'a Bytes, cap: usize) -> Self {
        let mut spans = Vec::new();
        let mut overflow = false;
        let mut i = 0;
        let bytes = &line[..];
        while i < bytes.len() {
            if bytes[i] == b' ' {
                i += 1;
                continue;
            }
            let s = i;
            while i < bytes.len() && bytes[i] != b' ' {
                i += 1;
            }
            if spans.len() == cap {
                overflow = true;
                break;
            }
            spans.push((s, i));
        }
        Tokens {
            line,
            spans,
            overflow,
        }
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn get(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.spans[i];
        &self.line[s..e]
    }

    fn bytes(&self, i: usize) -> Bytes {
        let (s, e) = self.spans[i];
        self.line.slice(s..e)
    }

    /// memcached's `set_noreply_maybe`: the last token is the literal `noreply`.
    fn noreply(&self) -> bool {
        self.len() > 1 && self.get(self.len() - 1) == b"noreply"
    }

    /// memcached's `WANT_TOKENS`: argument count (tokens after the command) in `min..=max`,
    /// else `ERROR`.
    fn want(&self, min: usize, max: usize) -> Result<(), ParseError> {
        let args = self.len() - 1;
        if self.overflow || args < min || args > max {
            return Err(ParseError::UnknownCommand);
        }
        Ok(())
    }
}

/// A command line (without its line end) into what it asks for.
fn interpret(line: &Bytes, limits: &Limits) -> Result<LineOutcome, ParseError> {
    // Enough tokens for the longest get line allowed, and for spotting one too many.
    let cap = limits.max_keys.saturating_add(2).max(MAX_META_TOKENS + 1);
    let t = Tokens::split(line, cap);
    // memcached: "There are also no valid commands shorter than two bytes."
    if t.len() == 0 || t.get(0).len() < 2 {
        return Err(ParseError::UnknownCommand);
    }
    let done = |c| Ok(LineOutcome::Done(c));
    match t.get(0) {
        b"get" => get(&t, limits, false, false),
        b"gets" => get(&t, limits, true, false),
        b"gat" => get(&t, limits, false, true),
        b"gats" => get(&t, limits, true, true),
        b"set" => store(&t, limits, StoreMode::Set),
        b"add" => store(&t, limits, StoreMode::Add),
        b"replace" => store(&t, limits, StoreMode::Replace),
        b"append" => store(&t, limits, StoreMode::Append),
        b"prepend" => store(&t, limits, StoreMode::Prepend),
        b"cas" => store(&t, limits, StoreMode::Cas),
        b"delete" => {
            t.want(1, 3)?;
            let noreply = t.noreply();
            if t.len() > 2 {
                let hold_is_zero = t.get(2) == b"0";
                let valid = (t.len() == 3 && (hold_is_zero || noreply))
                    || (t.len() == 4 && hold_is_zero && noreply);
                if !valid {
                    return Err(ParseError::Client(DELETE_USAGE));
                }
            }
            let key = key(&t, 1, limits)?;
            done(Command::Delete { key, noreply })
        }
        b"incr" | b"decr" => {
            // memcached ignores a fourth token that is not `noreply`; so do we.
            t.want(2, 3)?;
            let noreply = t.noreply();
            let key = key(&t, 1, limits)?;
            let delta = parse_u64(t.get(2)).ok_or(ParseError::Client(INVALID_DELTA))?;
            done(Command::Arith {
                incr: t.get(0) == b"incr",
                key,
                delta,
                noreply,
            })
        }
        b"touch" => {
            t.want(2, 3)?;
            let noreply = t.noreply();
            let key = key(&t, 1, limits)?;
            let exptime = parse_exptime(t.get(2)).ok_or(ParseError::Client(INVALID_EXPTIME))?;
            done(Command::Touch {
                key,
                exptime,
                noreply,
            })
        }
        b"flush_all" => {
            t.want(0, 2)?;
            let noreply = t.noreply();
            // memcached: a delay is present unless the only argument is `noreply`.
            let delay = if t.len() - 1 == usize::from(noreply) {
                0
            } else {
                parse_exptime(t.get(1)).ok_or(ParseError::Client(INVALID_EXPTIME))?
            };
            done(Command::FlushAll { delay, noreply })
        }
        b"version" => done(Command::Version),
        // Of memcached's LRU crawler, only the dump of every item's metadata (what
        // memcached-tool's `dump` and `keys` read).
        b"lru_crawler" if t.len() == 3 && t.get(1) == b"metadump" => {
            let (s, e) = t.spans[2];
            done(Command::MetaDump {
                classes: line.slice(s..e),
            })
        }
        // memcached's exact token counts: `crawl`, `sleep` and `tocrawl` take one argument,
        // `enable` and `disable` none (a `noreply` is an argument too here).
        b"lru_crawler" if t.len() == 3 && t.get(1) == b"crawl" => done(Command::Lru(Lru::Crawl {
            classes: t.bytes(2),
        })),
        b"lru_crawler" if t.len() == 3 && matches!(t.get(1), b"sleep" | b"tocrawl") => {
            let n = parse_u32(t.get(2)).ok_or(ParseError::BadCommandLine)?;
            done(Command::Lru(if t.get(1) == b"sleep" {
                Lru::CrawlerSleep(n)
            } else {
                Lru::CrawlerTocrawl(n)
            }))
        }
        b"lru_crawler" if t.len() == 2 && matches!(t.get(1), b"enable" | b"disable") => {
            done(Command::Lru(Lru::Crawler(t.get(1) == b"enable")))
        }
        // Extra tokens after the needed ones are ignored, as by memcached; a line it does
        // not take is `ERROR`, and `noreply` silences every answer.
        b"lru" => {
            let noreply = t.noreply();
            let word = |i: usize| if i < t.len() { t.get(i) } else { b"" };
            let lru = match word(1) {
                b"tune" if t.len() >= 6 => match (
                    parse_u32(word(2)),
                    parse_u32(word(3)),
                    ratio(word(4)),
                    ratio(word(5)),
                ) {
                    (Some(hot_pct), Some(warm_pct), Some(hot_factor), Some(warm_factor)) => {
                        Some(Lru::Tune {
                            hot_pct,
                            warm_pct,
                            hot_factor,
                            warm_factor,
                            noreply,
                        })
                    }
                    _ => None,
                },
                b"mode" if t.len() >= 3 => match word(2) {
                    b"flat" => Some(false),
                    b"segmented" => Some(true),
                    _ => None,
                }
                .map(|segmented| Lru::Mode { segmented, noreply }),
                b"temp_ttl" if t.len() >= 3 => std::str::from_utf8(word(2))
                    .ok()
                    .and_then(|v| v.parse::<i32>().ok())
                    .map(|ttl| Lru::TempTtl { ttl, noreply }),
                _ => None,
            };
            done(Command::Lru(lru.unwrap_or(Lru::Invalid { noreply })))
        }
        b"quit" => done(Command::Quit),
        b"shutdown" => Err(ParseError::ShutdownDisabled),
        b"cache_memlimit" => {
            t.want(1, 2)?;
            let noreply = t.noreply();
            let megabytes = parse_u64(t.get(1)).ok_or(ParseError::BadCommandLine)?;
            done(Command::CacheMemlimit { megabytes, noreply })
        }
        b"slabs" if t.len() == 4 && t.get(1) == b"reassign" => {
            // `strtol` into an int32, as memcached's `safe_strtol`.
            let class = |w: &[u8]| std::str::from_utf8(w).ok()?.parse::<i32>().ok();
            match (class(t.get(2)), class(t.get(3))) {
                (Some(src), Some(dst)) => done(Command::Slabs(Slabs::Reassign { src, dst })),
                _ => Err(ParseError::BadCommandLine),
            }
        }
        // memcached's `slabs automove ratio <r>` changes a setting Shoal does not have: as
        // memcached, it needs the ratio, and is then taken.
        b"slabs" if t.len() >= 3 && t.get(1) == b"automove" => {
            let noreply = t.noreply();
            let level = match t.get(2) {
                b"ratio" if t.len() >= 4 && ratio(t.get(3)).is_some() => 0,
                b"ratio" => return Err(ParseError::UnknownCommand),
                w => parse_u32(w).ok_or(ParseError::BadCommandLine)?,
            };
            done(Command::Slabs(Slabs::Automove { level, noreply }))
        }
        b"verbosity" => {
            t.want(1, 2)?;
            let noreply = t.noreply();
            // memcached 1.6 takes a lone `verbosity noreply` silently (memccapable checks it).
            if !(noreply && t.len() == 2) {
                parse_u32(t.get(1)).ok_or(ParseError::BadCommandLine)?;
            }
            done(Command::Verbosity { noreply })
        }
        b"stats" => {
            let arg = if t.len() > 1 {
                let s = t.spans[1].0;
                let e = t.spans[t.len() - 1].1;
                // With more tokens than kept, the argument runs to the end of the line.
                Some(line.slice(s..if t.overflow { line.len() } else { e }))
            } else {
                None
            };
            done(Command::Stats { arg })
        }
        b"mn" => done(Command::MetaNoop),
        b"mg" | b"md" | b"ma" => {
            // memcached answers a meta command without a key with ERROR.
            if t.len() < 2 {
                return Err(ParseError::UnknownCommand);
            }
            let key = key(&t, 1, limits)?;
            let md_or_ma = t.get(0) != b"mg";
            // memcached's md and ma say this for any flag they cannot read.
            let unreadable = ParseError::Client("invalid or duplicate flag");
            let flags = meta_flags(&t, 2).map_err(|e| match e {
                ParseError::Client("duplicate flag" | "invalid flag") if md_or_ma => {
                    unreadable.clone()
                }
                e => e,
            })?;
            if md_or_ma && !tokens_readable(&key, &flags) {
                return Err(unreadable);
            }
            done(match t.get(0) {
                b"mg" => Command::MetaGet { key, flags },
                b"md" => Command::MetaDelete { key, flags },
                _ => Command::MetaArith { key, flags },
            })
        }
        b"me" => {
            if t.len() < 2 {
                return Err(ParseError::BadCommandLine);
            }
            let key = key(&t, 1, limits)?;
            // memcached: a base64 key when the token after it is `b` (any others ignored).
            let b64 = t.len() >= 3 && t.get(2) == b"b";
            done(Command::MetaDebug { key, b64 })
        }
        b"ms" => meta_set(&t, limits),
        // An HTTP request line (`GET / HTTP/1.0`): memcached hangs up without a word, so a
        // web request sent to the cache port (cross-protocol scripting) gets nothing back.
        _ if t.get(t.len() - 1).starts_with(b"HTTP/") => Err(ParseError::HttpRequest),
        _ => Err(ParseError::UnknownCommand),
    }
}

/// `get/gets <key>+` and `gat/gats <exptime> <key>+`.
fn get(
    t: &Tokens<'_>,
    limits: &Limits,
    with_cas: bool,
    touch: bool,
) -> Result<LineOutcome, ParseError> {
    let first_key = if touch { 2 } else { 1 };
    // `get` needs a key; `gat <exptime>` alone is an empty answer (`END`), as in memcached.
    if t.len() <= 1 {
        return Err(ParseError::UnknownCommand);
    }
    let touch = if touch {
        Some(parse_exptime(t.get(1)).ok_or(ParseError::Client(INVALID_EXPTIME))?)
    } else {
        None
    };
    if t.overflow || t.len() - first_key > limits.max_keys {
        return Err(ParseError::BadCommandLine);
    }
    let keys = (first_key..t.len())
        .map(|i| key(t, i, limits))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(LineOutcome::Done(Command::Get {
        keys,
        with_cas,
        touch,
    }))
}

/// `set/add/replace/append/prepend <key> <flags> <exptime> <bytes> [noreply]` and
/// `cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]`.
fn store(t: &Tokens<'_>, limits: &Limits, mode: StoreMode) -> Result<LineOutcome, ParseError> {
    let is_cas = mode == StoreMode::Cas;
    // memcached: a wrong token count is `ERROR`, and the data block is then read as commands.
    if is_cas {
        t.want(5, 6)?;
    } else {
        // A sixth token that is not `noreply` is ignored, as in memcached.
        t.want(4, 5)?;
    }
    let noreply = t.noreply();
    let len = declared_len(t.get(4));
    let parsed: Result<(Pending, usize), ParseError> = (|| {
        // memcached's order: key, then flags/exptime/bytes, then cas unique.
        let key = key(t, 1, limits)?;
        let flags = parse_u32(t.get(2)).ok_or(ParseError::BadCommandLine)?;
        let exptime = parse_exptime(t.get(3)).ok_or(ParseError::BadCommandLine)?;
        let len = len.ok_or(ParseError::BadCommandLine)?;
        let cas = if is_cas {
            parse_u64(t.get(5)).ok_or(ParseError::BadCommandLine)?
        } else {
            0
        };
        Ok((
            Pending::Store {
                mode,
                key,
                flags,
                exptime,
                cas,
                noreply,
            },
            len,
        ))
    })();
    with_data_block(parsed, len, limits)
}

/// `ms <key> <datalen> <flag>*`.
fn meta_set(t: &Tokens<'_>, limits: &Limits) -> Result<LineOutcome, ParseError> {
    // memcached answers `ms` without a key with ERROR, as the other meta commands.
    if t.len() < 2 {
        return Err(ParseError::UnknownCommand);
    }
    if t.len() < 3 {
        return Err(ParseError::BadCommandLine);
    }
    // memcached 1.6.18 answers an unreadable datalen with "bad command line format" (after
    // its count of tokens) and cannot swallow.
    let Some(len) = declared_len(t.get(2)) else {
        return Err(too_long(t).unwrap_or(ParseError::BadCommandLine));
    };
    let parsed: Result<(Pending, usize), ParseError> = (|| {
        let key = key(t, 1, limits)?;
        let flags = meta_flags(t, 3)?;
        // memcached decodes a `b` key while it reads the flags, before the size check.
        if flags.has(b'b') && crate::base64::decode(&key).is_none_or(|k| k.is_empty()) {
            return Err(ParseError::Client("error decoding key"));
        }
        Ok((Pending::Meta { key, flags }, len))
    })();
    with_data_block(parsed, Some(len), limits)
}

/// The next step of a storage command: read its block, or swallow it and report the error.
///
/// Not quite memcached, which swallows the block only after a failed allocation (too large,
/// out of memory) and otherwise parses the client's data as commands: whenever `<bytes>` is
/// readable we discard the block, so payload bytes are never executed as commands.
fn with_data_block(
    parsed: Result<(Pending, usize), ParseError>,
    len: Option<usize>,
    limits: &Limits,
) -> Result<LineOutcome, ParseError> {
    match parsed {
        Ok((pending, len)) if pending.fits(limits, len) => Ok(LineOutcome::Data(pending, len)),
        Ok((pending, len)) => Ok(LineOutcome::Swallow(
            len + 2,
            ParseError::TooLarge,
            pending.stale_delete(),
        )),
        Err(e) => match len {
            Some(n) => Ok(LineOutcome::Swallow(n + 2, e, None)),
            None => Err(e),
        },
    }
}

/// Token `i` as a key: 1..=`max_key_len` bytes. Like memcached 1.6, only the length is
/// checked: protocol.txt says keys have no control characters, but memcached stores them
/// and load tools rely on it (memaslap's keys start with 0x10 bytes). A key cannot hold a
/// space or a line end, which end the token or the line.
fn key(t: &Tokens<'_>, i: usize, limits: &Limits) -> Result<Bytes, ParseError> {
    let k = t.get(i);
    if k.is_empty() || k.len() > limits.max_key_len {
        return Err(ParseError::BadCommandLine);
    }
    Ok(t.bytes(i))
}

/// Meta flags from token `from` on (memcached's `_meta_flag_preparse` checks that do not
/// depend on the command).
/// The flag letters memcached 1.6.18's meta commands take (`_meta_flag_preparse`, shared by
/// all four); any other is `invalid flag`, checked token by token with the duplicates, so
/// the first bad token decides the error.
const META_FLAGS: &[u8] = b"bcfhklqstuvCDFIJLMNOPRT";

/// Whether memcached's `_meta_flag_preparse` reads every flag's token: numbers where it
/// wants them (N, T, R signed, C, J, D unsigned), a one-letter M, a key that
/// decodes with `b`.
fn tokens_readable(key: &[u8], flags: &MetaFlags) -> bool {
    flags.items.iter().all(|(f, _)| match f {
        b'N' | b'T' | b'R' => matches!(flags.number::<i64>(*f), Some(Ok(_))),
        b'C' | b'J' | b'D' => matches!(flags.number::<u64>(*f), Some(Ok(_))),
        b'M' => flags.token(b'M').is_some_and(|t| t.len() == 1),
        b'b' => crate::base64::decode(key).is_some_and(|k| !k.is_empty()),
        _ => true,
    })
}

/// memcached's refusal of a meta line of too many tokens (`MAX_META_TOKENS`), in mg's words
/// or in md's, ma's and ms's (theirs lack the "are").
fn too_long(t: &Tokens<'_>) -> Option<ParseError> {
    (t.overflow || t.len() >= MAX_META_TOKENS).then(|| {
        ParseError::Client(if t.get(0) == b"mg" {
            "options flags are too long"
        } else {
            "options flags too long"
        })
    })
}

fn meta_flags(t: &Tokens<'_>, from: usize) -> Result<MetaFlags, ParseError> {
    if let Some(e) = too_long(t) {
        return Err(e);
    }
    let mut seen = [false; 128];
    let mut items = Vec::with_capacity(t.len().saturating_sub(from));
    for i in from..t.len() {
        let tok = t.get(i);
        let f = tok[0];
        if !f.is_ascii_alphabetic() {
            // memcached reports bytes >= 127 as "duplicate flag"; any other non-letter is an
            // unknown flag.
            return Err(ParseError::Client(if f >= 127 {
                "duplicate flag"
            } else {
                "invalid flag"
            }));
        }
        if std::mem::replace(&mut seen[usize::from(f)], true) {
            return Err(ParseError::Client("duplicate flag"));
        }
        if !META_FLAGS.contains(&f) {
            return Err(ParseError::Client("invalid flag"));
        }
        // memcached counts the flag letter in the limit.
        if f == b'O' && tok.len() > MAX_OPAQUE_LEN {
            return Err(ParseError::Client("opaque token too long"));
        }
        let (s, e) = t.spans[i];
        let mut value = t.line.slice(s + 1..e);
        // A time (T, N, R) is read as memcached reads it (`parse_exptime`); the token is
        // rewritten only when that differs from its digits. (The binary protocol's
        // translations to meta commands give times inside 32 bits.)
        if matches!(f, b'T' | b'N' | b'R') {
            if let Some(v) = parse_exptime(&value).filter(|&v| parse_i64(&value) != Some(v)) {
                value = Bytes::from(v.to_string());
            }
        }
        items.push((f, value));
    }
    Ok(MetaFlags { items })
}

/// A data block length: memcached reads it as an `int32_t` and refuses anything outside
/// `0..=INT_MAX - 2`, so `+ 2` never overflows and the value fits `usize`.
fn declared_len(s: &[u8]) -> Option<usize> {
    parse_i64(s)
        .filter(|n| (0..=MAX_DECLARED_LEN).contains(n))
        .and_then(|n| usize::try_from(n).ok())
}

/// Digits with an optional leading sign (`strtol`'s syntax without the whitespace).
fn split_sign(s: &[u8]) -> Option<(bool, &[u8])> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some((neg, digits))
}

fn digits_value(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |v, &d| {
        v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// An unsigned decimal (`safe_strtoull`): optional `+`, no `-`, no overflow.
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    match split_sign(s)? {
        (false, d) => digits_value(d),
        (true, _) => None,
    }
}

/// A decimal fraction (`slabs automove ratio`), as `strtod` reads one.
fn ratio(s: &[u8]) -> Option<f64> {
    std::str::from_utf8(s).ok()?.parse::<f64>().ok()
}

/// A 32-bit unsigned decimal (client flags, verbosity level); above `u32::MAX` is an error.
pub(crate) fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|v| u32::try_from(v).ok())
}

/// A signed decimal (exptime, delay, lengths), `i64` range.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, d) = split_sign(s)?;
    let v = digits_value(d)?;
    if neg {
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    }
}

/// A text command's time (exptime, touch, gat, a flush_all delay, a meta T/N/R): memcached
/// reads it with `safe_strtol` into an `int32_t`, so a number past the 32-bit range wraps
/// (libmemcached sends -1, "already expired", as `4294967295`, which is -1 again), only
/// one past the 64-bit range is refused, and tabs around it are taken.
pub(crate) fn parse_exptime(s: &[u8]) -> Option<i64> {
    // `strtol` skips white space before the number and `safe_strtol` takes it after (a
    // token ends at a space, not at a tab).
    parse_i64(s.trim_ascii()).map(|v| i64::from(v as i32))
}

#[cfg(test)]
#[path = "parser_tests.rs"]
mod tests;
