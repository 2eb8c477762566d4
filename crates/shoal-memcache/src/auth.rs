//! memcached's text-protocol authentication (`-Y` auth file): until a connection has
//! authenticated, every request must be `set <key> <flags> <exptime> <bytes>\r\n` whose data
//! block is `<user> <password>\r\n`; the key, flags and exptime are ignored.
//!
//! Replies, as memcached 1.6 (`proto_text.c`, `process_ascii_auth`): anything but such a
//! `set` line gets `CLIENT_ERROR unauthenticated` (its line is consumed, nothing else); a
//! data block not ending in `\r\n` gets `CLIENT_ERROR bad command line termination`; a
//! block with fewer than two tokens `CLIENT_ERROR bad authentication token format`; the
//! caller answers `STORED` or `CLIENT_ERROR authentication failure` after checking the pair.
//!
//! Limits: memcached closes a connection that sends 2 KiB without a newline; so does this.
//! memcached would wait for any `<bytes>`; here a block over [`MAX_TOKEN_LEN`] is refused
//! and the connection closed, so an unauthenticated client can make the server buffer at
//! most a few KiB.

use bytes::{Buf, Bytes, BytesMut};

/// Longest request line accepted before authentication (memcached's 2048).
pub const MAX_LINE_LEN: usize = 2048;
/// Longest `<user> <password>` block accepted.
pub const MAX_TOKEN_LEN: usize = 1024;

/// What the next bytes of an unauthenticated connection amount to.
#[derive(Debug, PartialEq, Eq)]
pub enum AuthStep {
    /// Not a whole request yet: read more.
    NeedInput,
    /// A reply to send; the connection stays unauthenticated and open.
    Refused(&'static str),
    /// Check this pair; answer `STORED` (authenticated) or [`AUTH_FAILURE`].
    Credentials { user: Bytes, password: Bytes },
    /// Junk or an oversized block: send the reply (if any) and close.
    Close(Option<&'static str>),
}

pub const UNAUTHENTICATED: &str = "CLIENT_ERROR unauthenticated\r\n";
pub const AUTH_FAILURE: &str = "CLIENT_ERROR authentication failure\r\n";
const BAD_TERMINATION: &str = "CLIENT_ERROR bad command line termination\r\n";
const BAD_FORMAT: &str = "CLIENT_ERROR bad authentication token format\r\n";

/// Reads authentication requests; resumable across partial reads.
#[derive(Debug, Default)]
pub struct AuthParser {
    /// After a good `set` line: the data block's length plus its `\r\n`.
    want: Option<usize>,
}

impl AuthParser {
    /// Consumes the next request at the front of `input`, if complete.
    pub fn parse(&mut self, input: &mut BytesMut) -> AuthStep {
        let want = match self.want {
            Some(n) => n,
            None => {
                let Some(eol) = input.iter().position(|&b| b == b'\n') else {
                    return if input.len() > MAX_LINE_LEN {
                        AuthStep::Close(None)
                    } else {
                        AuthStep::NeedInput
                    };
                };
                let line = input.split_to(eol + 1);
                let mut tokens = line[..eol]
                    .split(|&b| b == b' ')
                    .filter(|t| !t.is_empty())
                    .map(|t| t.strip_suffix(b"\r").unwrap_or(t));
                let is_set = tokens.next() == Some(b"set");
                let size = tokens
                    .nth(3)
                    .and_then(|t| std::str::from_utf8(t).ok())
                    .and_then(|t| t.parse::<u32>().ok());
                let Some(size) = size.filter(|_| is_set) else {
                    return AuthStep::Refused(UNAUTHENTICATED);
                };
                if size as usize > MAX_TOKEN_LEN {
                    return AuthStep::Close(Some(BAD_FORMAT));
                }
                let n = size as usize + 2;
                self.want = Some(n);
                n
            }
        };
        if input.len() < want {
            return AuthStep::NeedInput;
        }
        self.want = None;
        let block = input.split_to(want).freeze();
        if !block.ends_with(b"\r\n") {
            return AuthStep::Refused(BAD_TERMINATION);
        }
        let body = block.slice(..want - 2);
        let mut tokens = body
            .split(|&b| b == b' ')
            .filter(|t| !t.is_empty())
            .map(|t| body.slice_ref(t));
        match (tokens.next(), tokens.next()) {
            (Some(user), Some(password)) => AuthStep::Credentials { user, password },
            _ => AuthStep::Refused(BAD_FORMAT),
        }
    }

    /// Bytes the request in progress still needs (0 when unknown).
    pub fn bytes_wanted(&self, input: &impl Buf) -> usize {
        self.want.map_or(0, |n| n.saturating_sub(input.remaining()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(input: &[u8]) -> (Vec<AuthStep>, usize) {
        let mut p = AuthParser::default();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        loop {
            match p.parse(&mut buf) {
                AuthStep::NeedInput => return (out, buf.len()),
                s @ AuthStep::Close(_) => {
                    out.push(s);
                    return (out, buf.len());
                }
                s => out.push(s),
            }
        }
    }

    #[test]
    fn memcached_transcript() {
        let (s, left) = steps(
            b"version\r\nset ignored 0 0 11\r\nalice wrong\r\nset x 99 999 12\r\nalice secret\r\n",
        );
        assert_eq!(left, 0);
        assert_eq!(
            s,
            vec![
                AuthStep::Refused(UNAUTHENTICATED),
                AuthStep::Credentials {
                    user: Bytes::from_static(b"alice"),
                    password: Bytes::from_static(b"wrong")
                },
                AuthStep::Credentials {
                    user: Bytes::from_static(b"alice"),
                    password: Bytes::from_static(b"secret")
                },
            ]
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(
            steps(b"get k\r\n").0,
            vec![AuthStep::Refused(UNAUTHENTICATED)]
        );
        assert_eq!(
            steps(b"set k 0 0\r\n").0,
            vec![AuthStep::Refused(UNAUTHENTICATED)]
        );
        assert_eq!(
            steps(b"set k 0 0 x\r\n").0,
            vec![AuthStep::Refused(UNAUTHENTICATED)]
        );
        assert_eq!(
            steps(b"set k 0 0 5\r\nabcdeXY").0,
            vec![AuthStep::Refused(BAD_TERMINATION)]
        );
        assert_eq!(
            steps(b"set k 0 0 5\r\nalone\r\n").0,
            vec![AuthStep::Refused(BAD_FORMAT)]
        );
    }

    #[test]
    fn partial_input_waits() {
        let mut p = AuthParser::default();
        let mut buf = BytesMut::from(&b"set k 0 0 7\r\na b"[..]);
        assert_eq!(p.parse(&mut buf), AuthStep::NeedInput);
        assert_eq!(p.bytes_wanted(&buf), 6);
        buf.extend_from_slice(b"cdef\r\n");
        assert!(matches!(p.parse(&mut buf), AuthStep::Credentials { .. }));
    }

    #[test]
    fn bounded() {
        assert_eq!(
            steps(&[b'x'; MAX_LINE_LEN + 1]).0,
            vec![AuthStep::Close(None)]
        );
        assert_eq!(steps(&[b'x'; MAX_LINE_LEN]).0, vec![]);
        assert_eq!(
            steps(b"set k 0 0 4294967295\r\n").0,
            vec![AuthStep::Close(Some(BAD_FORMAT))]
        );
    }
}
