//! Reply writer: appends memcached's exact reply bytes to a connection's write buffer.
//!
//! Every function appends to `out` and never clears it, so a pipeline of replies can be
//! batched in one buffer and written with one syscall.

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};

use crate::parser::ParseError;

/// `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n` (one hit of get/gets/gat/gats).
pub fn value(out: &mut BytesMut, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
    out.reserve(key.len() + data.len() + 64);
    out.put_slice(b"VALUE ");
    out.put_slice(key);
    put_number(out, b' ', u64::from(flags));
    put_number(out, b' ', data.len() as u64);
    if let Some(cas) = cas {
        put_number(out, b' ', cas);
    }
    out.put_slice(b"\r\n");
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

/// One `VALUE` block of an encoded get reply: where its key and the whole block (header,
/// data and line end) are in the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueBlock {
    pub key: std::ops::Range<usize>,
    pub block: std::ops::Range<usize>,
}

/// The `VALUE` blocks of a complete get/gets/gat/gats reply (`VALUE ...` blocks, then
/// `END\r\n` and nothing after), in order; `None` if `reply` is anything else (an error
/// line, a truncated or malformed reply). Lengths are checked against the bytes present;
/// nothing is allocated but the list.
pub fn value_blocks(reply: &[u8]) -> Option<Vec<ValueBlock>> {
    let mut blocks = Vec::new();
    let mut at = 0;
    loop {
        let rest = &reply[at..];
        if rest == b"END\r\n" {
            return Some(blocks);
        }
        let line_len = rest.windows(2).position(|w| w == b"\r\n")?;
        let line = rest[..line_len].strip_prefix(b"VALUE ")?;
        let mut fields = line.split(|&b| b == b' ');
        let key = fields.next().filter(|k| !k.is_empty())?;
        let _flags = fields.next()?;
        let len: usize = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
        let data_at = line_len + 2;
        let end = data_at.checked_add(len)?.checked_add(2)?;
        if rest.len() < end || &rest[end - 2..end] != b"\r\n" {
            return None;
        }
        let key_at = at + 6;
        blocks.push(ValueBlock {
            key: key_at..key_at + key.len(),
            block: at..at + end,
        });
        at += end;
    }
}

/// `END\r\n` (end of a get/gets/gat/gats or stats reply).
pub fn end(out: &mut BytesMut) {
    out.put_slice(b"END\r\n");
}

/// The one-word replies of storage, delete, touch and admin commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Stored,
    NotStored,
    Exists,
    NotFound,
    Deleted,
    Touched,
    Ok,
}

impl Status {
    /// The reply word, without its line end.
    pub fn text(self) -> &'static str {
        match self {
            Status::Stored => "STORED",
            Status::NotStored => "NOT_STORED",
            Status::Exists => "EXISTS",
            Status::NotFound => "NOT_FOUND",
            Status::Deleted => "DELETED",
            Status::Touched => "TOUCHED",
            Status::Ok => "OK",
        }
    }
}

/// `STORED\r\n`, `NOT_STORED\r\n`, ...
pub fn status(out: &mut BytesMut, s: Status) {
    out.put_slice(s.text().as_bytes());
    out.put_slice(b"\r\n");
}

/// `<n>\r\n` (the new value after incr/decr).
pub fn number(out: &mut BytesMut, n: u64) {
    out.put_slice(itoa::Buffer::new().format(n).as_bytes());
    out.put_slice(b"\r\n");
}

/// `VERSION <v>\r\n`
pub fn version(out: &mut BytesMut, v: &str) {
    put_fmt(out, format_args!("VERSION {v}\r\n"));
}

/// `STAT <name> <value>\r\n` (one line of a stats reply; finish with [`end`]).
pub fn stat(out: &mut BytesMut, name: &str, value: impl std::fmt::Display) {
    put_fmt(out, format_args!("STAT {name} {value}\r\n"));
}

/// The error's reply line (`ERROR\r\n`, `CLIENT_ERROR ...\r\n`, `SERVER_ERROR ...\r\n`).
pub fn error(out: &mut BytesMut, e: &ParseError) {
    put_fmt(out, format_args!("{e}\r\n"));
}

/// A meta reply: `<code>[ <datalen>]( <letter><token>)*\r\n[<data>\r\n]`.
///
/// `code` is `VA`, `HD`, `EN`, `NF`, `NS`, `EX`, `MN` or `ME`; `flags` are the return flags
/// already rendered, each written as ` <letter><token>`. With `value` (the `VA` case) the data
/// length is written before the flags and the data block after the line.
pub fn meta(out: &mut BytesMut, code: &str, value: Option<&[u8]>, flags: &[(u8, &[u8])]) {
    out.put_slice(code.as_bytes());
    if let Some(v) = value {
        put_number(out, b' ', v.len() as u64);
    }
    for (letter, token) in flags {
        out.put_u8(b' ');
        out.put_u8(*letter);
        out.put_slice(token);
    }
    out.put_slice(b"\r\n");
    if let Some(v) = value {
        out.put_slice(v);
        out.put_slice(b"\r\n");
    }
}

/// `sep` and the decimal digits of `n` (the reply lines every get writes: no formatter).
fn put_number(out: &mut BytesMut, sep: u8, n: u64) {
    out.put_u8(sep);
    out.put_slice(itoa::Buffer::new().format(n).as_bytes());
}

fn put_fmt(out: &mut BytesMut, args: std::fmt::Arguments<'_>) {
    // `BytesMut` grows as needed, so its `fmt::Write` cannot fail (only a `Display` impl
    // returning an error could, and then the partial text is all we can write).
    let _ = out.write_fmt(args);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
        let mut out = BytesMut::new();
        f(&mut out);
        out.to_vec()
    }

    #[test]
    fn value_lines() {
        assert_eq!(
            written(|o| value(o, b"foo", 5, b"a\r\nb", None)),
            b"VALUE foo 5 4\r\na\r\nb\r\n"
        );
        assert_eq!(
            written(|o| value(o, b"k", u32::MAX, b"", Some(u64::MAX))),
            b"VALUE k 4294967295 0 18446744073709551615\r\n\r\n"
        );
        assert_eq!(written(end), b"END\r\n");
    }

    #[test]
    fn statuses() {
        let all = [
            (Status::Stored, &b"STORED\r\n"[..]),
            (Status::NotStored, b"NOT_STORED\r\n"),
            (Status::Exists, b"EXISTS\r\n"),
            (Status::NotFound, b"NOT_FOUND\r\n"),
            (Status::Deleted, b"DELETED\r\n"),
            (Status::Touched, b"TOUCHED\r\n"),
            (Status::Ok, b"OK\r\n"),
        ];
        for (s, bytes) in all {
            assert_eq!(written(|o| status(o, s)), bytes);
        }
    }

    #[test]
    fn scalars() {
        assert_eq!(written(|o| number(o, 0)), b"0\r\n");
        assert_eq!(
            written(|o| number(o, u64::MAX)),
            b"18446744073709551615\r\n"
        );
        assert_eq!(written(|o| version(o, "1.6.21")), b"VERSION 1.6.21\r\n");
        assert_eq!(written(|o| stat(o, "pid", 42)), b"STAT pid 42\r\n");
        assert_eq!(
            written(|o| stat(o, "version", "0.1.0")),
            b"STAT version 0.1.0\r\n"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            written(|o| error(o, &ParseError::UnknownCommand)),
            b"ERROR\r\n"
        );
        assert_eq!(
            written(|o| error(o, &ParseError::Client("invalid numeric delta argument"))),
            b"CLIENT_ERROR invalid numeric delta argument\r\n"
        );
        assert_eq!(
            written(|o| error(o, &ParseError::TooLarge)),
            b"SERVER_ERROR object too large for cache\r\n"
        );
    }

    #[test]
    fn meta_replies() {
        assert_eq!(
            written(|o| meta(o, "VA", Some(b"hi\r\n"), &[(b'f', b"5"), (b'c', b"9")])),
            b"VA 4 f5 c9\r\nhi\r\n\r\n"
        );
        assert_eq!(
            written(|o| meta(
                o,
                "HD",
                None,
                &[(b'O', b"abc"), (b'k', b"key"), (b'b', b"")]
            )),
            b"HD Oabc kkey b\r\n"
        );
        assert_eq!(written(|o| meta(o, "EN", None, &[])), b"EN\r\n");
        assert_eq!(written(|o| meta(o, "MN", None, &[])), b"MN\r\n");
        assert_eq!(written(|o| meta(o, "VA", Some(b""), &[])), b"VA 0\r\n\r\n");
    }

    #[test]
    fn value_blocks_find_each_hit_and_refuse_anything_else() {
        let mut out = BytesMut::new();
        value(&mut out, b"a", 1, b"x\r\ny", None);
        value(&mut out, b"bb", 0, b"", Some(7));
        end(&mut out);
        let blocks = value_blocks(&out).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(&out[blocks[0].key.clone()], b"a");
        assert_eq!(&out[blocks[0].block.clone()], b"VALUE a 1 4\r\nx\r\ny\r\n");
        assert_eq!(&out[blocks[1].key.clone()], b"bb");
        assert_eq!(&out[blocks[1].block.clone()], b"VALUE bb 0 0 7\r\n\r\n");
        assert_eq!(value_blocks(b"END\r\n"), Some(Vec::new()));
        for bad in [
            &b"SERVER_ERROR out of memory\r\n"[..],
            b"",
            b"END\r\nEND\r\n",
            b"VALUE a 0 5\r\nab\r\nEND\r\n",
            b"VALUE a 0 99999999999999999999999\r\n",
            b"VALUE a 0 1\r\nxyEND\r\n",
            b"VALUE  0 1\r\nx\r\nEND\r\n",
        ] {
            assert_eq!(
                value_blocks(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn appends() {
        let mut out = BytesMut::from(&b"x"[..]);
        status(&mut out, Status::Stored);
        end(&mut out);
        assert_eq!(&out[..], b"xSTORED\r\nEND\r\n");
    }
}
