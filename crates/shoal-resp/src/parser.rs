//! Resumable RESP request parser, following Redis 7's `processMultibulkBuffer` and
//! `processInlineBuffer` (networking.c) rule for rule, error text for error text.
//!
//! Wire format of a request:
//!
//! ```text
//! multibulk:  *<count>\r\n  then <count> times:  $<len>\r\n<len bytes>\r\n
//! inline:     any line not starting with '*', ended by \n (an optional \r before it is dropped)
//! ```
//!
//! Memory discipline: a declared length is never used to allocate or reserve. Argument
//! payloads are split off the caller's read buffer (`BytesMut::split_to`), so they are
//! zero-copy slices of it, and each complete argument is consumed as soon as it is available,
//! so a large request is never re-scanned from its first byte on each read.

use bytes::{Buf, Bytes, BytesMut};

/// Upper bounds on what a client can make the server buffer. Defaults are Redis 7's.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest bulk argument accepted (Redis `proto-max-bulk-len`, 512 MiB).
    pub max_bulk_len: usize,
    /// Largest argument count of one multibulk request (1,048,576).
    pub max_args: usize,
    /// Longest inline request or multibulk/bulk header line (Redis `PROTO_INLINE_MAX_SIZE`,
    /// 64 KiB), so a client cannot grow the buffer forever without a line end.
    pub max_inline_len: usize,
    /// Argument count allowed before authentication (CVE-2021-32675: an unauthenticated client
    /// must not make the server preallocate for a huge request).
    pub unauth_max_args: usize,
    /// Bulk length allowed before authentication (same CVE).
    pub unauth_max_bulk_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_args: 1024 * 1024,
            max_inline_len: 64 * 1024,
            unauth_max_args: 10,
            unauth_max_bulk_len: 16384,
        }
    }
}

/// A protocol violation. The connection gets `-{self}\r\n` and is closed.
///
/// Display texts are exactly Redis 7's reply texts (without the leading `-`).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    #[error("ERR Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    #[error("ERR Protocol error: invalid bulk length")]
    InvalidBulkLength,
    #[error("ERR Protocol error: too big mbulk count string")]
    TooBigMultibulkCount,
    #[error("ERR Protocol error: too big bulk count string")]
    TooBigBulkCount,
    #[error("ERR Protocol error: too big inline request")]
    TooBigInline,
    #[error("ERR Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    #[error("ERR Protocol error: expected '$', got '{0}'")]
    ExpectedDollar(char),
    #[error("ERR Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    #[error("ERR Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
}

/// Initial capacity cap for a request's argument vector: the declared count is only a claim.
const MAX_PREALLOC_ARGS: usize = 1024;

/// Parses requests off the front of a connection's read buffer, one at a time, keeping the
/// state of a partially received multibulk request between calls.
#[derive(Debug, Default)]
pub struct RequestParser {
    /// Arguments of the multibulk request in progress, already consumed from the buffer.
    args: Vec<Bytes>,
    /// Arguments of the request in progress still to come; 0 when no multibulk request is in
    /// progress (the next byte starts a new request).
    remaining: usize,
    /// Declared length of the current bulk argument, whose `$<len>\r\n` header is already
    /// consumed; `None` while that header has not been read.
    bulk_len: Option<usize>,
    /// How many bytes at the front of the buffer were already searched for the current line
    /// end without finding it, so a slowly arriving long line is scanned once, not per read.
    scanned: usize,
    /// What the current bulk still needed when `parse` last returned `Ok(None)`.
    wanted: usize,
    /// Bytes of `args` (Redis's `argv-mem`: arguments of the request in progress, already
    /// taken out of the buffer).
    held: usize,
}

impl RequestParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses the next complete request at the front of `buf`, consuming exactly its bytes
    /// (the returned arguments are zero-copy slices of the read buffer).
    ///
    /// `Ok(None)`: more bytes are needed; all state needed to resume is kept, and bytes of
    /// already complete arguments may have been consumed from `buf`. Empty requests (`*0`,
    /// `*-1`, blank inline lines) are skipped. Never returns `Ok(Some(vec![]))`.
    ///
    /// `Err`: the connection must be sent the error text as an error reply and closed; the
    /// parser and buffer are then in an unspecified state.
    pub fn parse(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        authenticated: bool,
    ) -> Result<Option<Vec<Bytes>>, ParseError> {
        self.wanted = 0;
        loop {
            if self.remaining == 0 {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                if first != b'*' {
                    match self.parse_inline(buf, limits)? {
                        Some(args) if args.is_empty() => continue,
                        other => return Ok(other),
                    }
                }
                // Multibulk header: `*<count>\r\n`.
                let Some(nl) = self.find_line_end(buf, b'\r') else {
                    if buf.len() > limits.max_inline_len {
                        return Err(ParseError::TooBigMultibulkCount);
                    }
                    return Ok(None);
                };
                // Redis needs one byte after '\r' and skips it unchecked.
                if nl + 2 > buf.len() {
                    return Ok(None);
                }
                let count = match string2ll(&buf[1..nl]) {
                    Some(n) if n <= i64::from(i32::MAX) => n,
                    _ => return Err(ParseError::InvalidMultibulkLength),
                };
                if count > 0 && count as u64 > limits.max_args as u64 {
                    return Err(ParseError::InvalidMultibulkLength);
                }
                if !authenticated && count > 0 && count as u64 > limits.unauth_max_args as u64 {
                    return Err(ParseError::UnauthenticatedMultibulkLength);
                }
                buf.advance(nl + 2);
                self.scanned = 0;
                if count <= 0 {
                    continue;
                }
                // Checked above: 0 < count <= i32::MAX, fits usize on every supported target.
                let count = count as usize;
                self.remaining = count;
                self.args = Vec::with_capacity(count.min(MAX_PREALLOC_ARGS));
                self.held = 0;
                self.bulk_len = None;
            }

            while self.remaining > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => {
                        let Some(nl) = self.find_line_end(buf, b'\r') else {
                            if buf.len() > limits.max_inline_len {
                                return Err(ParseError::TooBigBulkCount);
                            }
                            return Ok(None);
                        };
                        if nl + 2 > buf.len() {
                            return Ok(None);
                        }
                        if buf[0] != b'$' {
                            return Err(ParseError::ExpectedDollar(char::from(buf[0])));
                        }
                        let len = match string2ll(&buf[1..nl]) {
                            Some(n) if n >= 0 => match usize::try_from(n) {
                                Ok(n) if n <= limits.max_bulk_len => n,
                                _ => return Err(ParseError::InvalidBulkLength),
                            },
                            _ => return Err(ParseError::InvalidBulkLength),
                        };
                        if !authenticated && len > limits.unauth_max_bulk_len {
                            return Err(ParseError::UnauthenticatedBulkLength);
                        }
                        buf.advance(nl + 2);
                        self.scanned = 0;
                        self.bulk_len = Some(len);
                        len
                    }
                };
                let needed = len.saturating_add(2);
                if buf.len() < needed {
                    self.wanted = needed - buf.len();
                    return Ok(None);
                }
                let arg = buf.split_to(len).freeze();
                // Redis skips the two bytes after the payload without checking them.
                buf.advance(2);
                self.held += arg.len();
                self.args.push(arg);
                self.bulk_len = None;
                self.remaining -= 1;
            }
            self.held = 0;
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }

    /// True between requests: the next byte of the buffer starts a new one (what
    /// [`peek_keys`] needs).
    pub fn at_request_start(&self) -> bool {
        self.remaining == 0
    }

    /// Bytes of the arguments of the request in progress already taken out of the buffer
    /// (Redis's `argv-mem`; 0 between requests).
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// Bytes the in-progress bulk argument still needs, including its trailing `\r\n`, as of
    /// the last `parse` call that returned `Ok(None)`; 0 when unknown. The caller may reserve
    /// `min(this, its own cap)`; it is a client's claim, not a promise.
    pub fn bytes_wanted(&self) -> usize {
        self.wanted
    }

    /// Inline request: one line ended by `\n`. `Ok(Some(vec![]))` for a blank line (consumed).
    fn parse_inline(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<Vec<Bytes>>, ParseError> {
        let Some(nl) = self.find_line_end(buf, b'\n') else {
            if buf.len() > limits.max_inline_len {
                return Err(ParseError::TooBigInline);
            }
            return Ok(None);
        };
        let end = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        let args = crate::inline::split_args(&buf[..end]).ok_or(ParseError::UnbalancedQuotes)?;
        // Not in Redis (which bounds inline requests only by the query buffer limit): keep
        // `max_args` a bound on every request, whichever its form.
        if args.len() > limits.max_args {
            return Err(ParseError::TooBigInline);
        }
        buf.advance(nl + 1);
        self.scanned = 0;
        Ok(Some(args))
    }

    /// Position of the first `byte` in `buf`, resuming the search where the last failed one
    /// stopped.
    fn find_line_end(&mut self, buf: &[u8], byte: u8) -> Option<usize> {
        let start = self.scanned.min(buf.len());
        match buf[start..].iter().position(|&b| b == byte) {
            Some(i) => {
                self.scanned = start + i;
                Some(start + i)
            }
            None => {
                self.scanned = buf.len();
                None
            }
        }
    }
}

/// Arguments of one request [`peek_keys`] walks over at most, past its key.
const PEEK_MAX_ARGS: usize = 64;

/// Longest second argument [`peek_keys`] takes for a key (a longer one is most likely a
/// payload, ECHO's say, not worth hashing twice).
pub const PEEK_MAX_KEY: usize = 512;

/// What [`peek_keys`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peeked {
    /// Keys put in `out`.
    pub keys: usize,
    /// Complete requests walked over (those keys are theirs): the requests the caller has
    /// looked at, to run before it looks again.
    pub requests: usize,
}

/// The second argument (the first key of most commands) of each of the complete multibulk
/// requests at the front of `buf`, up to `out.len()` requests, put in `out` in order. A look
/// ahead for prefetching, not a parse: nothing is consumed or checked against limits (the
/// parser does that when the requests run). A request of one argument, or whose second is
/// longer than [`PEEK_MAX_KEY`], is walked over without a key; the walk stops at the first
/// request that is not a complete, well-formed multibulk request (inline, cut short,
/// malformed) or that has more than [`PEEK_MAX_ARGS`] arguments past its key (not looked
/// into). So it reads at most `out.len()` requests' headers of a bounded size each,
/// allocates nothing, and reads only `buf`'s bytes.
pub fn peek_keys<'a>(buf: &'a [u8], out: &mut [&'a [u8]]) -> Peeked {
    /// The number after `mark` on the line at `at`, and where the next line starts.
    fn header(buf: &[u8], at: usize, mark: u8) -> Option<(usize, usize)> {
        let rest = buf.get(at..)?;
        if rest.first() != Some(&mark) {
            return None;
        }
        // A number of fewer than 21 bytes (string2ll's bound), then "\r\n".
        let nl = rest.iter().take(24).position(|&b| b == b'\r')?;
        if rest.get(nl + 1) != Some(&b'\n') {
            return None;
        }
        let n = usize::try_from(string2ll(&rest[1..nl])?).ok()?;
        Some((n, at + nl + 2))
    }
    let mut at = 0;
    let mut seen = Peeked::default();
    while seen.requests < out.len() {
        let Some((count, mut next)) = header(buf, at, b'*') else {
            break;
        };
        if count == 0 {
            break;
        }
        if count > PEEK_MAX_ARGS + 2 {
            break;
        }
        let mut key = None;
        for i in 0..count {
            let Some((len, start)) = header(buf, next, b'$') else {
                return seen;
            };
            let end = match start.checked_add(len) {
                Some(end) if end.saturating_add(2) <= buf.len() => end,
                _ => return seen,
            };
            if i == 1 && len <= PEEK_MAX_KEY {
                key = Some(&buf[start..end]);
            }
            next = end + 2;
        }
        if let Some(key) = key {
            out[seen.keys] = key;
            seen.keys += 1;
        }
        seen.requests += 1;
        at = next;
    }
    seen
}

/// Redis `string2ll` (util.c): optional `-`, then `0` alone or a digit 1-9 followed by digits;
/// no `+`, no spaces, no leading zeros, fewer than 21 bytes, no overflow.
pub fn string2ll(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= 21 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let (&first, rest) = digits.split_first()?;
    if !(b'1'..=b'9').contains(&first) {
        return None;
    }
    let mut v = u64::from(first - b'0');
    for &d in rest {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if negative {
        if v > i64::MAX as u64 + 1 {
            return None;
        }
        Some((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(
        input: &[u8],
        limits: &Limits,
        auth: bool,
    ) -> Result<Vec<Vec<Vec<u8>>>, ParseError> {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(args) = p.parse(&mut buf, limits, auth)? {
            out.push(args.iter().map(|a| a.to_vec()).collect());
        }
        Ok(out)
    }

    fn one(input: &[u8]) -> Result<Option<Vec<Vec<u8>>>, ParseError> {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(input);
        Ok(p.parse(&mut buf, &Limits::default(), true)?
            .map(|args| args.iter().map(|a| a.to_vec()).collect()))
    }

    fn err(input: &[u8], auth: bool) -> ParseError {
        parse_all(input, &Limits::default(), auth).expect_err("should fail")
    }

    fn args(list: &[&[u8]]) -> Vec<Vec<u8>> {
        list.iter().map(|a| a.to_vec()).collect()
    }

    fn multibulk(list: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", list.len()).into_bytes();
        for a in list {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    #[test]
    fn string2ll_matches_redis() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"1"), Some(1));
        assert_eq!(string2ll(b"-1"), Some(-1));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"-0",
            b"00",
            b"1a",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"000000000000000000001",
        ] {
            assert_eq!(string2ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn error_texts_are_redis_texts() {
        let cases = [
            (
                ParseError::InvalidMultibulkLength,
                "ERR Protocol error: invalid multibulk length",
            ),
            (
                ParseError::InvalidBulkLength,
                "ERR Protocol error: invalid bulk length",
            ),
            (
                ParseError::TooBigMultibulkCount,
                "ERR Protocol error: too big mbulk count string",
            ),
            (
                ParseError::TooBigBulkCount,
                "ERR Protocol error: too big bulk count string",
            ),
            (
                ParseError::TooBigInline,
                "ERR Protocol error: too big inline request",
            ),
            (
                ParseError::UnbalancedQuotes,
                "ERR Protocol error: unbalanced quotes in request",
            ),
            (
                ParseError::ExpectedDollar('x'),
                "ERR Protocol error: expected '$', got 'x'",
            ),
            (
                ParseError::UnauthenticatedMultibulkLength,
                "ERR Protocol error: unauthenticated multibulk length",
            ),
            (
                ParseError::UnauthenticatedBulkLength,
                "ERR Protocol error: unauthenticated bulk length",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }

    #[test]
    fn multibulk_basic() {
        assert_eq!(
            one(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n").unwrap(),
            Some(args(&[b"SET", b"k", b"value"]))
        );
        assert_eq!(one(b"*1\r\n$0\r\n\r\n").unwrap(), Some(args(&[b""])));
        // Binary payload with CRLF and NUL inside.
        assert_eq!(
            one(b"*1\r\n$6\r\na\r\n\0\r\n\r\n").unwrap(),
            Some(args(&[b"a\r\n\0\r\n"]))
        );
        // The two bytes after a payload are skipped unchecked, like Redis.
        assert_eq!(one(b"*1\r\n$1\r\naXY").unwrap(), Some(args(&[b"a"])));
        // The byte after a header's '\r' is skipped unchecked too.
        assert_eq!(one(b"*1\rX$1\rXaXY").unwrap(), Some(args(&[b"a"])));
    }

    #[test]
    fn multibulk_header_errors() {
        for bad in [
            &b"*abc\r\n"[..],
            b"*+1\r\n",
            b"* 1\r\n",
            b"*01\r\n",
            b"*\r\n",
            b"*2147483648\r\n",
            b"*99999999999999999999\r\n",
        ] {
            assert_eq!(
                err(bad, true),
                ParseError::InvalidMultibulkLength,
                "{bad:?}"
            );
        }
        // i32::MAX itself passes the Redis check but not max_args.
        assert_eq!(
            err(b"*2147483647\r\n", true),
            ParseError::InvalidMultibulkLength
        );
        let limits = Limits {
            max_args: 3,
            ..Limits::default()
        };
        assert_eq!(
            parse_all(b"*4\r\n", &limits, true).unwrap_err(),
            ParseError::InvalidMultibulkLength
        );
        assert!(parse_all(b"*3\r\n", &limits, true).unwrap().is_empty());
    }

    #[test]
    fn too_big_headers() {
        let limits = Limits::default();
        let mut long = b"*".to_vec();
        long.extend(std::iter::repeat_n(b'1', limits.max_inline_len - 1));
        assert_eq!(
            parse_all(&long, &limits, true),
            Ok(vec![]),
            "exactly the limit waits"
        );
        long.push(b'1');
        assert_eq!(err(&long, true), ParseError::TooBigMultibulkCount);

        let mut long = b"*1\r\n$".to_vec();
        long.extend(std::iter::repeat_n(b'1', limits.max_inline_len + 1));
        assert_eq!(err(&long, true), ParseError::TooBigBulkCount);
    }

    #[test]
    fn bulk_header_errors() {
        assert_eq!(err(b"*1\r\n:1\r\n", true), ParseError::ExpectedDollar(':'));
        assert_eq!(err(b"*1\r\n\r\n", true), ParseError::ExpectedDollar('\r'));
        assert_eq!(
            err(b"*2\r\n$1\r\na\r\nfoo\r\n", true),
            ParseError::ExpectedDollar('f')
        );
        assert_eq!(
            err(b"*1\r\n\xffoo\r\n", true).to_string(),
            "ERR Protocol error: expected '$', got '\u{ff}'"
        );
        for bad in [
            &b"*1\r\n$-1\r\n"[..],
            b"*1\r\n$\r\n",
            b"*1\r\n$x\r\n",
            b"*1\r\n$+1\r\n",
            b"*1\r\n$01\r\n",
            b"*1\r\n$536870913\r\n",
            b"*1\r\n$99999999999999999999\r\n",
        ] {
            assert_eq!(err(bad, true), ParseError::InvalidBulkLength, "{bad:?}");
        }
        // Exactly proto-max-bulk-len is accepted (and waits for its payload).
        assert_eq!(one(b"*1\r\n$536870912\r\n").unwrap(), None);
    }

    #[test]
    fn empty_requests_are_skipped() {
        assert_eq!(
            parse_all(
                b"*0\r\n*-1\r\n*-5\r\n\r\n   \n\n*1\r\n$4\r\nPING\r\n",
                &Limits::default(),
                true
            )
            .unwrap(),
            vec![args(&[b"PING"])]
        );
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(&b"*0\r\n\r\n"[..]);
        assert_eq!(p.parse(&mut buf, &Limits::default(), true).unwrap(), None);
        assert!(buf.is_empty());
    }

    #[test]
    fn inline_requests() {
        assert_eq!(one(b"PING\r\n").unwrap(), Some(args(&[b"PING"])));
        assert_eq!(one(b"PING\n").unwrap(), Some(args(&[b"PING"])));
        assert_eq!(one(b"PING").unwrap(), None);
        assert_eq!(
            one(b"set k \"a b\\x41\"\r\n").unwrap(),
            Some(args(&[b"set", b"k", b"a bA"]))
        );
        // Only one '\r' is stripped; the other is a blank for sdssplitargs.
        assert_eq!(one(b"get k\r\r\n").unwrap(), Some(args(&[b"get", b"k"])));
        assert_eq!(err(b"set k \"v\r\n", true), ParseError::UnbalancedQuotes);
        assert_eq!(err(b"set k 'v'x\n", true), ParseError::UnbalancedQuotes);
        // Inline requests are not subject to the unauthenticated limits (as in Redis).
        let many = b"a b c d e f g h i j k l\n";
        assert_eq!(parse_all(many, &Limits::default(), false).unwrap().len(), 1);
        // But max_args bounds them too.
        let limits = Limits {
            max_args: 11,
            ..Limits::default()
        };
        assert_eq!(
            parse_all(many, &limits, true),
            Err(ParseError::TooBigInline)
        );
    }

    #[test]
    fn too_big_inline() {
        let limits = Limits::default();
        let mut line = vec![b'a'; limits.max_inline_len];
        assert_eq!(parse_all(&line, &limits, true), Ok(vec![]));
        line.push(b'a');
        assert_eq!(err(&line, true), ParseError::TooBigInline);
        // A complete line longer than the limit is fine, as in Redis.
        line.push(b'\n');
        assert_eq!(parse_all(&line, &limits, true).unwrap().len(), 1);
    }

    #[test]
    fn unauthenticated_limits() {
        let l = Limits::default();
        let ten: Vec<&[u8]> = vec![b"x"; 10];
        assert_eq!(parse_all(&multibulk(&ten), &l, false).unwrap().len(), 1);
        assert_eq!(
            err(b"*11\r\n", false),
            ParseError::UnauthenticatedMultibulkLength
        );
        assert_eq!(parse_all(b"*11\r\n", &l, true), Ok(vec![]));
        let big = vec![b'v'; 16384];
        assert_eq!(parse_all(&multibulk(&[&big]), &l, false).unwrap().len(), 1);
        assert_eq!(
            err(b"*1\r\n$16385\r\n", false),
            ParseError::UnauthenticatedBulkLength
        );
        assert_eq!(parse_all(b"*1\r\n$16385\r\n", &l, true), Ok(vec![]));
        // Invalid beats unauthenticated, as in Redis.
        assert_eq!(
            err(b"*1\r\n$536870913\r\n", false),
            ParseError::InvalidBulkLength
        );
        assert_eq!(
            err(b"*2147483648\r\n", false),
            ParseError::InvalidMultibulkLength
        );
    }

    #[test]
    fn huge_declared_bulk_is_not_allocated() {
        // 4 GiB: rejected by the default limit.
        assert_eq!(
            err(b"*1\r\n$4294967296\r\n", true),
            ParseError::InvalidBulkLength
        );
        // With no limit it is accepted, but nothing is reserved: the parser only reports it.
        let limits = Limits {
            max_bulk_len: usize::MAX,
            ..Limits::default()
        };
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(&b"*1\r\n$4294967296\r\nabc"[..]);
        assert_eq!(p.parse(&mut buf, &limits, true).unwrap(), None);
        assert_eq!(buf.len(), 3, "headers consumed, payload kept");
        assert!(buf.capacity() < 1024, "no reservation: {}", buf.capacity());
        assert_eq!(p.bytes_wanted(), 4294967296 + 2 - 3);
        // Huge argument counts are not preallocated either.
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(&b"*1048576\r\n"[..]);
        assert_eq!(p.parse(&mut buf, &Limits::default(), true).unwrap(), None);
        assert!(p.args.capacity() <= MAX_PREALLOC_ARGS);
    }

    #[test]
    fn held_bytes_count_the_arguments_taken_so_far() {
        let mut p = RequestParser::new();
        let l = Limits::default();
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$2\r\nab\r\n$5\r\nxy"[..]);
        assert_eq!(p.parse(&mut buf, &l, true).unwrap(), None);
        assert_eq!(
            p.held_bytes(),
            5,
            "SET and ab, not the value still arriving"
        );
        buf.extend_from_slice(b"zvw\r\n");
        assert!(p.parse(&mut buf, &l, true).unwrap().is_some());
        assert_eq!(p.held_bytes(), 0);
    }

    #[test]
    fn bytes_wanted_tracks_current_bulk() {
        let mut p = RequestParser::new();
        let l = Limits::default();
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$10\r\n0123"[..]);
        assert_eq!(p.parse(&mut buf, &l, true).unwrap(), None);
        assert_eq!(p.bytes_wanted(), 8);
        assert_eq!(&buf[..], b"0123");
        buf.extend_from_slice(b"456789\r\n");
        assert_eq!(
            p.parse(&mut buf, &l, true).unwrap().unwrap(),
            vec![
                Bytes::from_static(b"GET"),
                Bytes::from_static(b"0123456789")
            ]
        );
        assert_eq!(p.bytes_wanted(), 0);
        assert!(buf.is_empty());
    }

    #[test]
    fn pipelined_requests_in_order() {
        let mut input = Vec::new();
        let mut want = Vec::new();
        for i in 0..50 {
            let key = format!("key:{i}");
            if i % 3 == 0 {
                input.extend_from_slice(format!("GET {key}\r\n").as_bytes());
            } else {
                input.extend(multibulk(&[b"SET", key.as_bytes(), b"v\r\nv"]));
            }
            want.push(if i % 3 == 0 {
                args(&[b"GET", key.as_bytes()])
            } else {
                args(&[b"SET", key.as_bytes(), b"v\r\nv"])
            });
        }
        assert_eq!(parse_all(&input, &Limits::default(), true).unwrap(), want);
    }

    #[test]
    fn args_are_zero_copy_slices_of_the_buffer() {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::with_capacity(64);
        buf.extend_from_slice(b"*1\r\n$5\r\nhello\r\n");
        let base = buf.as_ptr() as usize;
        let args = p
            .parse(&mut buf, &Limits::default(), true)
            .unwrap()
            .unwrap();
        assert_eq!(args[0].as_ptr() as usize, base + 8);
    }

    /// Feeds `input` in the given chunks, returning the requests and the bytes left over.
    fn parse_chunked(input: &[u8], cuts: &[usize], limits: &Limits) -> (Vec<Vec<Vec<u8>>>, usize) {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            let cut = cut.clamp(start, input.len());
            buf.extend_from_slice(&input[start..cut]);
            start = cut;
            while let Some(args) = p.parse(&mut buf, limits, true).expect("valid input") {
                assert!(!args.is_empty());
                out.push(args.iter().map(|a| a.to_vec()).collect());
            }
        }
        (out, buf.len())
    }

    #[test]
    fn resumes_at_every_split_point() {
        let binary: &[u8] = b"\r\n\0\xff*$\r\r\n\n";
        let mut input = Vec::new();
        let mut want = Vec::new();
        for req in [
            &[&b"SET"[..], b"key:1", b"some value"][..],
            &[b"PING"],
            &[b"SET", b"bin", binary],
            &[b"MSET", b"a", b"", b"b", b"\r\n"],
        ] {
            input.extend(multibulk(req));
            want.push(args(req));
        }
        input.extend_from_slice(b"set x \"a\\r\\nb\" 'c d'\r\n");
        want.push(args(&[b"set", b"x", b"a\r\nb", b"c d"]));
        input.extend_from_slice(b"*0\r\n\n");
        input.extend_from_slice(b"PING\n");
        want.push(args(&[b"PING"]));

        let limits = Limits::default();
        assert_eq!(parse_chunked(&input, &[], &limits), (want.clone(), 0));
        for split in 0..=input.len() {
            assert_eq!(
                parse_chunked(&input, &[split], &limits),
                (want.clone(), 0),
                "split {split}"
            );
        }
        for a in 0..=input.len() {
            for b in (a..=input.len()).step_by(7) {
                assert_eq!(parse_chunked(&input, &[a, b], &limits), (want.clone(), 0));
            }
        }
        let byte_by_byte: Vec<usize> = (0..input.len()).collect();
        assert_eq!(parse_chunked(&input, &byte_by_byte, &limits), (want, 0));
    }

    #[test]
    fn partial_request_is_not_rescanned() {
        // Completed arguments are consumed from the buffer at once.
        let mut p = RequestParser::new();
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva"[..]);
        assert_eq!(p.parse(&mut buf, &Limits::default(), true).unwrap(), None);
        assert_eq!(&buf[..], b"va");
        assert_eq!(p.args.len(), 2);
    }

    fn arb_args() -> impl Strategy<Value = Vec<Vec<u8>>> {
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..8)
    }

    #[test]
    fn peek_keys_passes_over_one_argument_requests_and_stops_at_the_rest() {
        let peeked = |keys, requests| Peeked { keys, requests };
        let mut input = multibulk(&[b"GET", b"k1"]);
        input.extend(multibulk(&[b"PING"]));
        input.extend(multibulk(&[b"SET", b"k2", b"v"]));
        input.extend(b"GET inline\r\n");
        input.extend(multibulk(&[b"GET", b"k3"]));
        let mut out: [&[u8]; 8] = [&[]; 8];
        let seen = peek_keys(&input, &mut out);
        assert_eq!(seen, peeked(2, 3));
        assert_eq!(&out[..2], &[&b"k1"[..], b"k2"]);
        // Room for two requests: two requests, one key.
        assert_eq!(peek_keys(&input, &mut out[..2]), peeked(1, 2));
        // A request of more than PEEK_MAX_ARGS arguments past its key ends the walk, not
        // looked into (complete or not); one of exactly that many is walked.
        let mut long: Vec<&[u8]> = vec![b"MSET", b"k4"];
        long.extend(std::iter::repeat_n(&b"x"[..], PEEK_MAX_ARGS));
        let mut input = multibulk(&[b"GET", b"k3"]);
        input.extend(multibulk(&long));
        assert_eq!(peek_keys(&input, &mut out), peeked(2, 2));
        long.push(b"x");
        let mut input = multibulk(&[b"GET", b"k3"]);
        input.extend(multibulk(&long));
        input.extend(multibulk(&[b"GET", b"k5"]));
        assert_eq!(peek_keys(&input, &mut out), peeked(1, 1));
        let cut = &input[..input.len() / 2];
        assert_eq!(peek_keys(cut, &mut out), peeked(1, 1));
        // A second argument too long to be worth it: no key, but the walk goes on.
        let payload = vec![b'x'; PEEK_MAX_KEY + 1];
        let mut input = multibulk(&[b"ECHO", &payload]);
        input.extend(multibulk(&[b"GET", b"k5"]));
        assert_eq!(peek_keys(&input, &mut out), peeked(1, 2));
        assert_eq!(out[0], b"k5");
        // A bulk length past the buffer, or a malformed header: nothing.
        let none = Peeked::default();
        assert_eq!(
            peek_keys(b"*2\r\n$3\r\nGET\r\n$99999\r\nk\r\n", &mut out),
            none
        );
        assert_eq!(peek_keys(b"*2\r\n$3\r\nGET\r\n$-1\r\n", &mut out), none);
        assert_eq!(peek_keys(b"*x\r\n", &mut out), none);
    }

    /// However many keyless requests a buffer holds, a look walks at most `out.len()` of
    /// them (a walk to the end on every request would be quadratic in the buffer).
    #[test]
    fn peek_keys_walks_no_further_than_its_room() {
        let ping = multibulk(&[b"PING"]);
        let input: Vec<u8> = ping
            .iter()
            .copied()
            .cycle()
            .take(ping.len() * 1000)
            .collect();
        let mut out: [&[u8]; 16] = [&[]; 16];
        assert_eq!(
            peek_keys(&input, &mut out),
            Peeked {
                keys: 0,
                requests: 16
            }
        );
    }

    proptest! {
        #[test]
        fn round_trip_with_random_chunks(
            reqs in prop::collection::vec(arb_args(), 1..6),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
        ) {
            let mut input = Vec::new();
            for r in &reqs {
                let refs: Vec<&[u8]> = r.iter().map(|a| &a[..]).collect();
                input.extend(multibulk(&refs));
            }
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
            cuts.sort_unstable();
            let (got, left) = parse_chunked(&input, &cuts, &Limits::default());
            prop_assert_eq!(got, reqs);
            prop_assert_eq!(left, 0);
        }

        #[test]
        fn peek_keys_sees_what_the_parser_parses(
            reqs in prop::collection::vec(arb_args(), 0..20),
            cut in any::<prop::sample::Index>(),
            room in 0usize..20,
        ) {
            let mut input = Vec::new();
            for r in &reqs {
                let refs: Vec<&[u8]> = r.iter().map(|a| &a[..]).collect();
                input.extend(multibulk(&refs));
            }
            // Cut anywhere: only the requests complete before the cut are seen.
            let input = &input[..cut.index(input.len() + 1)];
            let parsed = parse_all(input, &Limits::default(), true).unwrap();
            let want: Vec<Vec<u8>> = parsed
                .iter()
                .take(room)
                .filter(|args| args.len() >= 2)
                .map(|args| args[1].clone())
                .collect();
            let mut out: Vec<&[u8]> = vec![&[]; room];
            let seen = peek_keys(input, &mut out);
            let got: Vec<Vec<u8>> = out[..seen.keys].iter().map(|k| k.to_vec()).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(seen.requests, parsed.len().min(room));
        }

        #[test]
        fn peek_keys_never_panics_and_returns_slices_of_the_input(
            input in prop::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut out: [&[u8]; 4] = [&[]; 4];
            let seen = peek_keys(&input, &mut out);
            prop_assert!(seen.keys <= seen.requests && seen.requests <= 4);
            let range = input.as_ptr_range();
            for k in &out[..seen.keys] {
                prop_assert!(range.start <= k.as_ptr() && k.as_ptr_range().end <= range.end);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            input in prop::collection::vec(any::<u8>(), 0..200),
            auth in any::<bool>(),
        ) {
            let limits = Limits { max_inline_len: 16, max_args: 4, max_bulk_len: 16, ..Limits::default() };
            let mut p = RequestParser::new();
            let mut buf = BytesMut::from(&input[..]);
            while let Ok(Some(args)) = p.parse(&mut buf, &limits, auth) {
                prop_assert!(!args.is_empty());
            }
        }
    }
}
