//! Scanning already-encoded RESP2/RESP3 replies without decoding them, so a node can relay
//! the bytes another node sent and merge array replies split across nodes (for `MGET`: take
//! element i of one node's reply and element j of another's, under a new `*N\r\n` header).
//!
//! ```text
//! type  form                          elements that follow
//! +     +text\r\n                     0
//! -     -text\r\n                     0
//! :     :[+-]digits\r\n               0
//! _     _\r\n                         0
//! #     #t\r\n or #f\r\n              0
//! ,     ,double\r\n                   0
//! (     ([-]digits\r\n                0
//! $     $len\r\n<len bytes>\r\n       0      ($-1\r\n: null bulk, nothing follows)
//! !     !len\r\n<len bytes>\r\n       0
//! =     =len\r\nfmt:<bytes>\r\n       0      (len >= 4, the 4th byte is ':')
//! *     *n\r\n                        n      (*-1\r\n: null array, nothing follows)
//! ~ >   ~n\r\n  >n\r\n                n
//! %     %n\r\n                        2n
//! |     |n\r\n                        2n, then the value it annotates
//! ```
//!
//! The scan is one loop over a count of values still to read, not a recursion, so any
//! nesting depth costs no stack. Declared lengths are only compared with what is there,
//! never used to allocate or reserve. Streamed strings and aggregates (`$?`, `*?`) are not
//! accepted: Redis never sends them.

use std::ops::Range;

/// Why bytes are not a RESP reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// A value starts with a byte that is no RESP2 or RESP3 type.
    #[error("unknown RESP type byte 0x{0:02x}")]
    UnknownType(u8),
    /// A line holds a bare CR or LF, or a blob is not followed by CRLF.
    #[error("bad line ending")]
    BadLineEnd,
    /// A length or element count that is not a decimal integer in range.
    #[error("bad length or element count")]
    BadLength,
    /// The content of a value of this type is malformed (an integer that is not one, a
    /// boolean other than `t`/`f`, a verbatim string without its format prefix, ...).
    #[error("malformed '{}' value", char::from(*.0))]
    BadValue(u8),
    /// Declared sizes add up to more than any buffer could hold.
    #[error("declared sizes overflow")]
    Overflow,
    /// The buffer ends before the value does (for functions that need it complete).
    #[error("incomplete reply")]
    Incomplete,
    /// The value is not an array, set or push (or is a null array).
    #[error("not an array reply")]
    NotAnArray,
    /// More bytes follow the one value expected.
    #[error("bytes after the reply")]
    TrailingBytes,
}

/// Longest line of a length, count or integer: `-9223372036854775808` is 20 bytes, and so
/// is `+9223372036854775807`.
const MAX_NUMBER_LINE: usize = 20;

/// Length in bytes of the one complete RESP2/RESP3 value at the start of `buf`: `Ok(None)`
/// if `buf` ends before the value does, `Err` on malformed input. Every RESP3 type is
/// accepted, attributes (`|`) counting as part of the value they annotate, and so are the
/// RESP2 nulls `$-1` and `*-1`. Never panics; allocates nothing.
pub fn value_len(buf: &[u8]) -> Result<Option<usize>, ScanError> {
    skip_values(buf, 0, 1)
}

/// If the value at the start of `buf` is an array (`*`), a RESP3 set (`~`) or a RESP3 push
/// (`>`): its element count (-1 for a null array) and the length of its header, so the
/// elements start at `buf[header_len..]`. Attributes before it are skipped, counted in the
/// header length. `Ok(None)` for any other type; `Err(Incomplete)` if `buf` ends inside the
/// header (or inside an attribute before it).
pub fn aggregate_header(buf: &[u8]) -> Result<Option<(i64, usize)>, ScanError> {
    let mut pos = 0;
    loop {
        let Some(&kind) = buf.get(pos) else {
            return Err(ScanError::Incomplete);
        };
        if !matches!(kind, b'*' | b'~' | b'>' | b'|') {
            // Not an aggregate of interest; still reject what is no RESP at all.
            return match kind {
                b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' | b'$' | b'!' | b'=' | b'%' => {
                    Ok(None)
                }
                other => Err(ScanError::UnknownType(other)),
            };
        }
        let (n, next) = number_line(buf, pos + 1)?.ok_or(ScanError::Incomplete)?;
        match kind {
            b'*' if n == -1 => return Ok(Some((-1, next))),
            _ if n < 0 => return Err(ScanError::BadLength),
            b'|' => {
                let pairs = 2 * n.unsigned_abs();
                pos = skip_values(buf, next, pairs)?.ok_or(ScanError::Incomplete)?;
            }
            _ => return Ok(Some((n, next))),
        }
    }
}

/// Splits `buf`, which must be exactly one complete array, set or push reply, into the byte
/// ranges of its elements, each covering one complete value (with its attributes, if any).
/// A null array is `Err(NotAnArray)`: it has no elements to take.
pub fn array_elements(buf: &[u8]) -> Result<Vec<Range<usize>>, ScanError> {
    let (count, mut pos) = aggregate_header(buf)?.ok_or(ScanError::NotAnArray)?;
    if count < 0 {
        return Err(ScanError::NotAnArray);
    }
    // The declared count is only a claim; every element takes at least 3 bytes (`_\r\n`).
    let count = count.unsigned_abs();
    let mut elements =
        Vec::with_capacity(usize::try_from(count).map_or(0, |c| c.min(buf.len() / 3)));
    for _ in 0..count {
        let end = skip_values(buf, pos, 1)?.ok_or(ScanError::Incomplete)?;
        elements.push(pos..end);
        pos = end;
    }
    if pos != buf.len() {
        return Err(ScanError::TrailingBytes);
    }
    Ok(elements)
}

/// The integer of a `:` reply, if `buf` is exactly one.
pub fn integer_value(buf: &[u8]) -> Option<i64> {
    if buf.first() != Some(&b':') {
        return None;
    }
    let (end, next) = line(buf, 1, MAX_NUMBER_LINE).ok()??;
    if next != buf.len() {
        return None;
    }
    let digits = &buf[1..end];
    parse_i64(digits.strip_prefix(b"+").unwrap_or(digits))
}

/// The text of a `$` bulk string, a `+` simple string or a `,` double (as written) that is
/// exactly `buf`; `None` for anything else (a null bulk string too).
pub fn string_value(buf: &[u8]) -> Option<&[u8]> {
    match buf.first()? {
        b'$' => {
            let (len, next) = number_line(buf, 1).ok()??;
            let len = usize::try_from(len).ok()?;
            let end = next.checked_add(len)?;
            (buf.get(end..)? == b"\r\n").then(|| &buf[next..end])
        }
        b'+' | b',' => {
            let (end, next) = line(buf, 1, buf.len()).ok()??;
            (next == buf.len()).then(|| &buf[1..end])
        }
        _ => None,
    }
}

/// True if `buf` starts with an error reply: a `-` simple error or a RESP3 `!` blob error.
pub fn is_error(buf: &[u8]) -> bool {
    matches!(buf.first(), Some(b'-' | b'!'))
}

/// Scans `pending` consecutive values starting at `pos`; returns where the last one ends,
/// `Ok(None)` if `buf` ends first.
fn skip_values(buf: &[u8], mut pos: usize, mut pending: u64) -> Result<Option<usize>, ScanError> {
    macro_rules! need {
        ($e:expr) => {
            match $e? {
                Some(v) => v,
                None => return Ok(None),
            }
        };
    }
    while pending > 0 {
        let Some(&kind) = buf.get(pos) else {
            return Ok(None);
        };
        let start = pos + 1;
        match kind {
            b'+' | b'-' => (_, pos) = need!(line(buf, start, usize::MAX)),
            b':' | b'_' | b'#' | b',' | b'(' => {
                let max = if kind == b':' {
                    MAX_NUMBER_LINE
                } else {
                    usize::MAX
                };
                let (end, next) = need!(line(buf, start, max));
                if !scalar_ok(kind, &buf[start..end]) {
                    return Err(ScanError::BadValue(kind));
                }
                pos = next;
            }
            b'$' | b'!' | b'=' => {
                let (len, next) = need!(number_line(buf, start));
                if len == -1 && kind == b'$' {
                    pos = next;
                } else {
                    let len = usize::try_from(len).map_err(|_| ScanError::BadLength)?;
                    let end = next.checked_add(len).ok_or(ScanError::Overflow)?;
                    let after = end.checked_add(2).ok_or(ScanError::Overflow)?;
                    if after > buf.len() {
                        return Ok(None);
                    }
                    if &buf[end..after] != b"\r\n" {
                        return Err(ScanError::BadLineEnd);
                    }
                    // A verbatim string starts with its three-byte format and a colon.
                    if kind == b'=' && (len < 4 || buf[next + 3] != b':') {
                        return Err(ScanError::BadValue(kind));
                    }
                    pos = after;
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let (n, next) = need!(number_line(buf, start));
                pos = next;
                if n == -1 && kind == b'*' {
                    // A null array: a complete value with nothing after it.
                } else {
                    let n = u64::try_from(n).map_err(|_| ScanError::BadLength)?;
                    let (elements, this) = match kind {
                        b'%' => (2 * n, 1),
                        // An attribute is not a value: the one it annotates is still pending.
                        b'|' => (2 * n, 0),
                        _ => (n, 1),
                    };
                    pending = (pending - this)
                        .checked_add(elements)
                        .ok_or(ScanError::Overflow)?;
                    continue;
                }
            }
            other => return Err(ScanError::UnknownType(other)),
        }
        pending -= 1;
    }
    Ok(Some(pos))
}

/// The line whose content starts at `start`: `(content end, index after its CRLF)`.
/// `Ok(None)` if `buf` ends before the CRLF (and within `max` content bytes); `Err` on a
/// bare CR or LF, or on a line longer than `max`.
fn line(buf: &[u8], start: usize, max: usize) -> Result<Option<(usize, usize)>, ScanError> {
    let rest = buf.get(start..).unwrap_or_default();
    match rest.iter().position(|&b| b == b'\r' || b == b'\n') {
        Some(i) if i > max => Err(ScanError::BadLength),
        Some(i) => match rest.get(i..i + 2) {
            Some(b"\r\n") => Ok(Some((start + i, start + i + 2))),
            Some(_) => Err(ScanError::BadLineEnd),
            None if rest[i] == b'\r' => Ok(None),
            None => Err(ScanError::BadLineEnd),
        },
        None if rest.len() > max => Err(ScanError::BadLength),
        None => Ok(None),
    }
}

/// A length or count line starting at `start`: `(value, index after its CRLF)`.
fn number_line(buf: &[u8], start: usize) -> Result<Option<(i64, usize)>, ScanError> {
    let Some((end, next)) = line(buf, start, MAX_NUMBER_LINE)? else {
        return Ok(None);
    };
    let n = parse_i64(&buf[start..end]).ok_or(ScanError::BadLength)?;
    Ok(Some((n, next)))
}

/// Whether `text` is valid content for a one-line scalar of type `kind`.
fn scalar_ok(kind: u8, text: &[u8]) -> bool {
    match kind {
        b':' => parse_i64(text.strip_prefix(b"+").unwrap_or(text)).is_some(),
        b'_' => text.is_empty(),
        b'#' => text == b"t" || text == b"f",
        // What Redis sends (`inf`, `-inf`, `nan`, `1.5`, `1e300`) and what Rust parses.
        b',' => std::str::from_utf8(text).is_ok_and(|t| t.parse::<f64>().is_ok()),
        b'(' => {
            let digits = text.strip_prefix(b"-").unwrap_or(text);
            !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// A decimal `i64` with an optional `-`; leading zeros are tolerated.
fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let d = i64::from(d - b'0');
        // Accumulated negative when the result is, so i64::MIN parses.
        v = v
            .checked_mul(10)?
            .checked_add(if negative { -d } else { d })?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Protocol, Reply};
    use bytes::{Bytes, BytesMut};
    use proptest::prelude::*;

    #[test]
    fn string_values_are_read_exactly() {
        assert_eq!(string_value(b"$3\r\nabc\r\n"), Some(&b"abc"[..]));
        assert_eq!(string_value(b"$0\r\n\r\n"), Some(&b""[..]));
        assert_eq!(string_value(b"+OK\r\n"), Some(&b"OK"[..]));
        assert_eq!(string_value(b",1.5\r\n"), Some(&b"1.5"[..]));
        for not in [
            &b"$-1\r\n"[..],
            b"$3\r\nabcd\r\n",
            b"$4\r\nabc\r\n",
            b"$3\r\nabc",
            b"+OK\r\nx",
            b":1\r\n",
            b"-ERR x\r\n",
            b"$99999999999999999999999\r\n",
            b"",
        ] {
            assert_eq!(string_value(not), None, "{not:?}");
        }
    }

    fn enc(r: &Reply, proto: Protocol) -> Vec<u8> {
        let mut out = BytesMut::new();
        r.encode(proto, &mut out);
        out.to_vec()
    }

    fn arb_scalar() -> impl Strategy<Value = Reply> {
        prop_oneof![
            "[ -~\r\n]{0,12}".prop_map(|s| Reply::Simple(s.into())),
            "[A-Z]{1,8} [ -~\r\n]{0,12}".prop_map(|s| Reply::Error(s.into())),
            any::<i64>().prop_map(Reply::Int),
            prop::collection::vec(any::<u8>(), 0..24).prop_map(Reply::bulk),
            Just(Reply::Nil),
            Just(Reply::NilArray),
            any::<f64>().prop_map(Reply::Double),
            any::<bool>().prop_map(Reply::Bool),
            prop::collection::vec(any::<u8>(), 0..24).prop_map(|v| Reply::Verbatim(Bytes::from(v))),
        ]
    }

    fn arb_reply() -> impl Strategy<Value = Reply> {
        arb_scalar().prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Reply::Array),
                prop::collection::vec(inner.clone(), 0..6).prop_map(Reply::Push),
                prop::collection::vec(inner.clone(), 0..6).prop_map(Reply::Set),
                prop::collection::vec((inner.clone(), inner), 0..4).prop_map(Reply::Map),
            ]
        })
    }

    fn arb_proto() -> impl Strategy<Value = Protocol> {
        prop_oneof![Just(Protocol::Resp2), Just(Protocol::Resp3)]
    }

    /// `|n\r\n` and n key/value pairs, to put before a RESP3 value.
    fn attribute(pairs: &[(Reply, Reply)]) -> Vec<u8> {
        let mut out = format!("|{}\r\n", pairs.len()).into_bytes();
        for (k, v) in pairs {
            out.extend(enc(k, Protocol::Resp3));
            out.extend(enc(v, Protocol::Resp3));
        }
        out
    }

    /// Checks that `bytes` is one complete value and every strict prefix is incomplete.
    fn assert_one_value(bytes: &[u8]) -> Result<(), TestCaseError> {
        prop_assert_eq!(value_len(bytes), Ok(Some(bytes.len())));
        for cut in 0..bytes.len() {
            prop_assert_eq!(value_len(&bytes[..cut]), Ok(None), "prefix of {}", cut);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn value_len_is_the_encoded_length(r in arb_reply(), proto in arb_proto()) {
            let bytes = enc(&r, proto);
            assert_one_value(&bytes)?;
            // A value followed by another: only the first is counted.
            let mut two = bytes.clone();
            two.extend(enc(&Reply::Int(7), proto));
            prop_assert_eq!(value_len(&two), Ok(Some(bytes.len())));
        }

        #[test]
        fn array_elements_are_the_element_encodings(
            items in prop::collection::vec(arb_reply(), 0..8),
            kind in 0..3u8,
            proto in arb_proto(),
        ) {
            let r = match kind {
                0 => Reply::Array(items.clone()),
                1 => Reply::Set(items.clone()),
                _ => Reply::Push(items.clone()),
            };
            let bytes = enc(&r, proto);
            let (count, header) = aggregate_header(&bytes).unwrap().expect("an aggregate");
            prop_assert_eq!(count, items.len() as i64);
            prop_assert_eq!(header, format!("*{}\r\n", items.len()).len());
            let ranges = array_elements(&bytes).unwrap();
            prop_assert_eq!(ranges.len(), items.len());
            let mut pos = header;
            for (range, item) in ranges.iter().zip(&items) {
                prop_assert_eq!(range.start, pos);
                prop_assert_eq!(&bytes[range.clone()], &enc(item, proto)[..]);
                pos = range.end;
            }
            prop_assert_eq!(pos, bytes.len());
        }

        #[test]
        fn attributes_count_with_the_value_they_annotate(
            items in prop::collection::vec(
                (prop::collection::vec((arb_scalar(), arb_reply()), 0..3), arb_reply()),
                0..6,
            ),
            outer in prop::collection::vec((arb_scalar(), arb_scalar()), 1..3),
        ) {
            // An array whose elements may carry attributes, itself under an attribute.
            let mut bytes = attribute(&outer);
            let header = bytes.len() + format!("*{}\r\n", items.len()).len();
            bytes.extend(format!("*{}\r\n", items.len()).into_bytes());
            let mut elements = Vec::new();
            for (attrs, item) in &items {
                let mut element = if attrs.is_empty() { Vec::new() } else { attribute(attrs) };
                element.extend(enc(item, Protocol::Resp3));
                assert_one_value(&element)?;
                bytes.extend(&element);
                elements.push(element);
            }
            assert_one_value(&bytes)?;
            prop_assert_eq!(aggregate_header(&bytes), Ok(Some((items.len() as i64, header))));
            let ranges = array_elements(&bytes).unwrap();
            let got: Vec<&[u8]> = ranges.into_iter().map(|r| &bytes[r]).collect();
            let want: Vec<&[u8]> = elements.iter().map(|e| &e[..]).collect();
            prop_assert_eq!(got, want);
        }

        /// Whatever the input: no panic, and an accepted value is accepted alone, its strict
        /// prefixes are incomplete, and its elements are values that tile it.
        #[test]
        fn arbitrary_input_is_scanned_consistently(
            input in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..64),
                prop::collection::vec(prop::sample::select(TOKENS), 0..24)
                    .prop_map(|tokens| tokens.concat().into_bytes()),
            ]
        ) {
            if let Ok(Some(n)) = value_len(&input) {
                prop_assert!(n > 0 && n <= input.len());
                assert_one_value(&input[..n])?;
            }
            let _ = aggregate_header(&input);
            let _ = integer_value(&input);
            if let Ok(ranges) = array_elements(&input) {
                prop_assert_eq!(value_len(&input), Ok(Some(input.len())));
                let mut pos = ranges.first().map_or(input.len(), |r| r.start);
                for r in ranges {
                    prop_assert_eq!(r.start, pos);
                    prop_assert_eq!(value_len(&input[r.clone()]), Ok(Some(r.len())));
                    pos = r.end;
                }
                prop_assert_eq!(pos, input.len());
            }
        }
    }

    /// Pieces of RESP for generated inputs that get past the first byte.
    const TOKENS: &[&str] = &[
        "*1\r\n",
        "*2\r\n",
        "*0\r\n",
        "*-1\r\n",
        "~1\r\n",
        ">2\r\n",
        "%1\r\n",
        "|1\r\n",
        "$3\r\n",
        "$-1\r\n",
        "!3\r\n",
        "=5\r\n",
        "abc",
        "txt:x",
        "\r\n",
        "\r",
        "\n",
        ":1\r\n",
        ":-9\r\n",
        "_\r\n",
        "#t\r\n",
        ",1.5\r\n",
        "(123\r\n",
        "+OK\r\n",
        "-ERR x\r\n",
        "x",
        "-",
    ];

    #[test]
    fn every_resp3_type_by_hand() {
        for value in [
            &b"+OK\r\n"[..],
            b"+\r\n",
            b"-ERR unknown command\r\n",
            b":0\r\n",
            b":-5\r\n",
            b":+5\r\n",
            b":-9223372036854775808\r\n",
            b"_\r\n",
            b"#t\r\n",
            b"#f\r\n",
            b",1.5\r\n",
            b",-inf\r\n",
            b",nan\r\n",
            b",1e300\r\n",
            b"(3492890328409238509324850943850943825024385\r\n",
            b"(-1\r\n",
            b"$-1\r\n",
            b"$0\r\n\r\n",
            b"$4\r\na\r\nb\r\n",
            b"!21\r\nSYNTAX invalid syntax\r\n",
            b"=15\r\ntxt:Some string\r\n",
            b"=4\r\nmkd:\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*2\r\n:1\r\n$1\r\na\r\n",
            b"%1\r\n+key\r\n*1\r\n_\r\n",
            b"%0\r\n",
            b"~2\r\n+a\r\n+b\r\n",
            b">2\r\n+message\r\n$2\r\nhi\r\n",
            b"|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n",
            b"|1\r\n+a\r\n|1\r\n+b\r\n:1\r\n:2\r\n:3\r\n",
            b"*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
        ] {
            let shown = String::from_utf8_lossy(value);
            assert_eq!(value_len(value), Ok(Some(value.len())), "{shown:?}");
            for cut in 0..value.len() {
                assert_eq!(value_len(&value[..cut]), Ok(None), "{shown:?} cut at {cut}");
            }
        }
    }

    #[test]
    fn malformed_values_are_errors() {
        use ScanError::*;
        for (input, err) in [
            (&b"?\r\n"[..], UnknownType(b'?')),
            (b"\r\n", UnknownType(b'\r')),
            (b"*1\r\n@", UnknownType(b'@')),
            (b"+a\rb\r\n", BadLineEnd),
            (b"+a\nb\r\n", BadLineEnd),
            (b"-a\n", BadLineEnd),
            (b"$3\r\nabcd\r\n", BadLineEnd),
            (b"$3\r\nabc\n\r", BadLineEnd),
            (b"$3\n", BadLineEnd),
            (b"$-2\r\n", BadLength),
            (b"$x\r\n", BadLength),
            (b"$\r\n", BadLength),
            (b"$?\r\n", BadLength),
            (b"*?\r\n", BadLength),
            (b"$ 3\r\n", BadLength),
            (b"$9223372036854775808\r\n", BadLength),
            (b"$123456789012345678901", BadLength),
            (b"!-1\r\n", BadLength),
            (b"=-1\r\n", BadLength),
            (b"*-2\r\n", BadLength),
            (b"~-1\r\n", BadLength),
            (b">-1\r\n", BadLength),
            (b"%-1\r\n", BadLength),
            (b"|-1\r\n", BadLength),
            (b":\r\n", BadValue(b':')),
            (b":12a\r\n", BadValue(b':')),
            (b":9223372036854775808\r\n", BadValue(b':')),
            (b":123456789012345678901", BadLength),
            (b"_x\r\n", BadValue(b'_')),
            (b"#x\r\n", BadValue(b'#')),
            (b"#\r\n", BadValue(b'#')),
            (b",\r\n", BadValue(b',')),
            (b",abc\r\n", BadValue(b',')),
            (b"(\r\n", BadValue(b'(')),
            (b"(12a\r\n", BadValue(b'(')),
            (b"=3\r\ntxt\r\n", BadValue(b'=')),
            (b"=5\r\ntxt;x\r\n", BadValue(b'=')),
            (
                b"%9223372036854775807\r\n%9223372036854775807\r\n",
                Overflow,
            ),
        ] {
            let shown = String::from_utf8_lossy(input);
            assert_eq!(value_len(input), Err(err), "{shown:?}");
        }
    }

    /// A declared length is compared with what is there, never allocated: a huge one is
    /// just incomplete.
    #[test]
    fn huge_declared_sizes_are_incomplete_not_allocated() {
        for input in [
            &b"$9223372036854775807\r\nabc"[..],
            b"!9223372036854775807\r\n",
            b"*9223372036854775807\r\n:1\r\n",
            b"%9223372036854775807\r\n:1\r\n",
            b"|9223372036854775807\r\n",
        ] {
            assert_eq!(value_len(input), Ok(None));
        }
        assert_eq!(
            array_elements(b"*9223372036854775807\r\n:1\r\n"),
            Err(ScanError::Incomplete)
        );
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        const DEPTH: usize = 1_000_000;
        let mut arrays = b"*1\r\n".repeat(DEPTH);
        assert_eq!(value_len(&arrays), Ok(None));
        arrays.extend_from_slice(b":1\r\n");
        assert_eq!(value_len(&arrays), Ok(Some(arrays.len())));
        // Each attribute's one value is annotated by the next attribute: after DEPTH of
        // them, DEPTH attribute values and the annotated value itself are still due.
        let mut attributes = b"|1\r\n+k\r\n".repeat(DEPTH);
        attributes.extend_from_slice(&b"+v\r\n".repeat(DEPTH));
        assert_eq!(value_len(&attributes), Ok(None));
        attributes.extend_from_slice(b"+v\r\n");
        assert_eq!(value_len(&attributes), Ok(Some(attributes.len())));
        let mut nested = b"*1\r\n".repeat(DEPTH);
        nested.extend_from_slice(b"_\r\n");
        let elements = array_elements(&nested).unwrap();
        assert_eq!(elements.len(), 1);
        assert_eq!(elements[0], 4..nested.len());
    }

    #[test]
    fn aggregate_headers() {
        use ScanError::*;
        for (input, want) in [
            (&b"*3\r\n"[..], Ok(Some((3, 4)))),
            (b"*-1\r\n", Ok(Some((-1, 5)))),
            (b"*0\r\n", Ok(Some((0, 4)))),
            (b"~2\r\n+a\r\n+b\r\n", Ok(Some((2, 4)))),
            (b">12\r\n", Ok(Some((12, 5)))),
            (b"|1\r\n+a\r\n+b\r\n*2\r\n", Ok(Some((2, 16)))),
            (b"%1\r\n+a\r\n+b\r\n", Ok(None)),
            (b"$3\r\nabc\r\n", Ok(None)),
            (b"_\r\n", Ok(None)),
            (b"-ERR\r\n", Ok(None)),
            (b"", Err(Incomplete)),
            (b"*3", Err(Incomplete)),
            (b"|1\r\n+a\r\n", Err(Incomplete)),
            (b"*x\r\n", Err(BadLength)),
            (b"~-1\r\n", Err(BadLength)),
            (b"?", Err(UnknownType(b'?'))),
        ] {
            let shown = String::from_utf8_lossy(input);
            assert_eq!(aggregate_header(input), want, "{shown:?}");
        }
    }

    #[test]
    fn array_elements_needs_exactly_one_array() {
        use ScanError::*;
        assert_eq!(array_elements(b"*0\r\n"), Ok(vec![]));
        assert_eq!(
            array_elements(b"*2\r\n:1\r\n$-1\r\n"),
            Ok(vec![4..8, 8..13])
        );
        for (input, err) in [
            (&b":1\r\n"[..], NotAnArray),
            (b"*-1\r\n", NotAnArray),
            (b"_\r\n", NotAnArray),
            (b"%1\r\n:1\r\n:1\r\n", NotAnArray),
            (b"*1\r\n:1\r\n:2\r\n", TrailingBytes),
            (b"*2\r\n:1\r\n", Incomplete),
            (b"*1\r\n:x\r\n", BadValue(b':')),
            (b"", Incomplete),
        ] {
            let shown = String::from_utf8_lossy(input);
            assert_eq!(array_elements(input), Err(err), "{shown:?}");
        }
    }

    #[test]
    fn integer_values() {
        assert_eq!(integer_value(b":42\r\n"), Some(42));
        assert_eq!(integer_value(b":+7\r\n"), Some(7));
        assert_eq!(integer_value(b":-9223372036854775808\r\n"), Some(i64::MIN));
        assert_eq!(integer_value(b":9223372036854775807\r\n"), Some(i64::MAX));
        for not in [
            &b""[..],
            b":42\r",
            b":42\r\n:1\r\n",
            b"$2\r\n42\r\n",
            b"+42\r\n",
            b":x\r\n",
            b":\r\n",
            b":9223372036854775808\r\n",
        ] {
            assert_eq!(
                integer_value(not),
                None,
                "{:?}",
                String::from_utf8_lossy(not)
            );
        }
    }

    #[test]
    fn error_replies() {
        assert!(is_error(b"-ERR x\r\n"));
        assert!(is_error(b"!3\r\nERR\r\n"));
        for not in [
            &b""[..],
            b"+OK\r\n",
            b":-1\r\n",
            b"$-1\r\n",
            b"*1\r\n-ERR\r\n",
        ] {
            assert!(!is_error(not), "{:?}", String::from_utf8_lossy(not));
        }
    }

    /// The use the scanner is for: an `MGET a b c` split across two nodes, answered
    /// `[a, c]` by one and `[b]` by the other, merged back into request order.
    #[test]
    fn split_replies_merge_into_one() {
        for proto in [Protocol::Resp2, Protocol::Resp3] {
            let (a, b, c) = (Reply::bulk("1"), Reply::Nil, Reply::bulk("three"));
            let first = enc(&Reply::Array(vec![a.clone(), c.clone()]), proto);
            let second = enc(&Reply::Array(vec![b.clone()]), proto);
            let (first_items, second_items) = (
                array_elements(&first).unwrap(),
                array_elements(&second).unwrap(),
            );
            let mut merged = b"*3\r\n".to_vec();
            merged.extend_from_slice(&first[first_items[0].clone()]);
            merged.extend_from_slice(&second[second_items[0].clone()]);
            merged.extend_from_slice(&first[first_items[1].clone()]);
            assert_eq!(merged, enc(&Reply::Array(vec![a, b, c]), proto));
        }
    }
}
