//! A minimal RESP2 client over the simulated network: the sim's clients send commands as
//! arrays of bulk strings and read one reply each (no pipelining).

use std::io;

use shoal_net::TcpStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A reply, as far as the workload needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

/// Replies longer than this are refused (the workload's are small; INFO is a few KB).
const MAX_REPLY: usize = 1 << 20;

pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub async fn connect(addr: (&str, u16)) -> io::Result<Client> {
        let stream = TcpStream::connect(addr).await?;
        Ok(Client {
            stream,
            buf: Vec::new(),
        })
    }

    /// Sends one command and waits for its reply.
    pub async fn call(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out).await?;
        loop {
            if let Some((reply, used)) = parse(&self.buf)? {
                self.buf.drain(..used);
                return Ok(reply);
            }
            if self.buf.len() > MAX_REPLY {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "reply too long"));
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// One complete reply at the start of `buf` and its length, or `None` when more is needed.
pub fn parse(buf: &[u8]) -> io::Result<Option<(Reply, usize)>> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    if end == 0 {
        return Err(bad("empty reply line"));
    }
    let line = std::str::from_utf8(&buf[1..end]).map_err(|_| bad("reply line not UTF-8"))?;
    let next = end + 2;
    let int = || line.parse::<i64>().map_err(|_| bad("bad integer in reply"));
    Ok(match buf[0] {
        b'+' => Some((Reply::Status(line.to_string()), next)),
        b'-' => Some((Reply::Error(line.to_string()), next)),
        b':' => Some((Reply::Int(int()?), next)),
        b'$' => {
            let n = int()?;
            if n < 0 {
                return Ok(Some((Reply::Bulk(None), next)));
            }
            let n = n as usize;
            if n > MAX_REPLY {
                return Err(bad("bulk reply too long"));
            }
            if buf.len() < next + n + 2 {
                return Ok(None);
            }
            Some((
                Reply::Bulk(Some(buf[next..next + n].to_vec())),
                next + n + 2,
            ))
        }
        b'*' => {
            let n = int()?;
            if n < 0 {
                return Ok(Some((Reply::Bulk(None), next)));
            }
            if n as usize > MAX_REPLY {
                return Err(bad("array reply too long"));
            }
            let mut at = next;
            let mut items = Vec::new();
            for _ in 0..n {
                match parse(&buf[at..])? {
                    Some((r, used)) => {
                        items.push(r);
                        at += used;
                    }
                    None => return Ok(None),
                }
            }
            Some((Reply::Array(items), at))
        }
        _ => return Err(bad("unknown reply type")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_reply_type_and_waits_for_more() {
        assert_eq!(
            parse(b"+OK\r\n").unwrap(),
            Some((Reply::Status("OK".into()), 5))
        );
        assert_eq!(parse(b":12\r\n").unwrap(), Some((Reply::Int(12), 5)));
        assert_eq!(parse(b"$-1\r\n").unwrap(), Some((Reply::Bulk(None), 5)));
        assert_eq!(parse(b"$3\r\nab").unwrap(), None);
        assert_eq!(
            parse(b"$3\r\nabc\r\n+x").unwrap(),
            Some((Reply::Bulk(Some(b"abc".to_vec())), 9))
        );
        assert_eq!(
            parse(b"*2\r\n:1\r\n-ERR x\r\n").unwrap(),
            Some((
                Reply::Array(vec![Reply::Int(1), Reply::Error("ERR x".into())]),
                16
            ))
        );
        assert_eq!(parse(b"*2\r\n:1\r\n").unwrap(), None);
        assert!(parse(b"?\r\n").is_err());
    }
}
