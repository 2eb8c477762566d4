//! Fuzz target for the memcached binary protocol (`shoal_memcache::binary`): what a binary
//! client's bytes reach, from the frame reader through the translation to a meta command and
//! back to a binary response.
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run memcache_binary -- -max_len=4096
//! ```
//!
//! Input layout: byte 0 is the chunk size the rest is fed in (plus one), the rest is the
//! stream (made to start with the request magic). Invariants: no panic; the reader never
//! waits for more than one request's declared length within the body limit; every request
//! is either answered at once or becomes a command whose text the text parser reads back
//! whole and equal; every response to any reply text (truncated ones included) is whole
//! binary responses; the look-ahead over plain gets (`peek_get_keys`) agrees with the reader.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use shoal_memcache::binary::{self, Action, Sasl};
use shoal_memcache::{Limits, Parser};

/// Replies of every shape the node gives, to feed `respond`.
const REPLIES: &[&[u8]] = &[
    b"VA 2 f1 c2\r\nhi\r\n",
    b"VA 99 f1\r\nx\r\n",
    b"EN\r\n",
    b"HD c5\r\n",
    b"NS\r\n",
    b"EX\r\n",
    b"NF\r\n",
    b"MN\r\n",
    b"OK\r\n",
    b"VERSION 1.6.21\r\n",
    b"STAT pid 1\r\nSTAT x\r\nEND\r\n",
    b"SERVER_ERROR out of memory storing object\r\n",
    b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
    b"ERROR\r\n",
    b"",
    b"VA",
];

/// True if `out` is a sequence of whole binary responses.
fn whole_responses(mut out: &[u8]) -> bool {
    while !out.is_empty() {
        if out.len() < binary::HEADER_LEN || out[0] != binary::RESPONSE_MAGIC {
            return false;
        }
        let body = u32::from_be_bytes([out[8], out[9], out[10], out[11]]) as usize;
        let Some(rest) = out.get(binary::HEADER_LEN + body..) else {
            return false;
        };
        out = rest;
    }
    true
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(chunk) + 1;
    let limits = Limits {
        max_item_size: 1024,
        ..Limits::default()
    };
    let mut buf = BytesMut::new();
    let mut pos = 0;
    while pos < stream.len() {
        let end = (pos + chunk).min(stream.len());
        if buf.is_empty() {
            buf.extend_from_slice(&[binary::REQUEST_MAGIC]);
            buf.extend_from_slice(&stream[pos + 1.min(end - pos)..end]);
        } else {
            buf.extend_from_slice(&stream[pos..end]);
        }
        pos = end;
        loop {
            // The look-ahead reads only whole requests: the first key it gives is the
            // request's that parses next, when that is a plain get.
            let mut keys: [&[u8]; 16] = [&[]; 16];
            let (seen, found) = binary::peek_get_keys(&buf, &mut keys);
            assert!(found <= seen && seen <= keys.len());
            let first_key = (found > 0).then(|| bytes::Bytes::copy_from_slice(keys[0]));
            let req = match binary::parse(&mut buf, &limits) {
                Ok(None) => {
                    assert!(buf.len() < binary::HEADER_LEN + 1024 + 250 + 20 + 1);
                    break;
                }
                Err(fatal) => {
                    assert!(whole_responses(&fatal.response));
                    return;
                }
                Ok(Some(req)) => req,
            };
            if seen > 0 && binary::plain_get(req.opcode) && !req.key.is_empty() {
                assert_eq!(first_key.as_deref(), Some(&req.key[..]));
            }
            match binary::action(req, &limits) {
                Action::Answer(bytes) | Action::Refuse(bytes, _) => {
                    assert!(whole_responses(&bytes))
                }
                Action::Sasl(Sasl::ListMechs(p) | Sasl::Step(p) | Sasl::Auth { then: p, .. }) => {
                    let mut out = BytesMut::new();
                    binary::reply(&p, 0, b"PLAIN", &mut out);
                    assert!(whole_responses(&out));
                }
                Action::Get { key, pending } => {
                    let cmd = binary::get_command(&key);
                    let mut text = BytesMut::new();
                    cmd.encode(&mut text);
                    let mut parser = Parser::new();
                    let parsed = parser.parse(&mut text, &binary::text_limits(&limits));
                    assert_eq!(parsed, Ok(Some(cmd)));
                    let mut out = BytesMut::new();
                    binary::get_response(&pending, Some((7, 9, &key)), &mut out);
                    binary::get_response(&pending, None, &mut out);
                    // As a cluster node routes it: its text `gets` reads back whole and equal,
                    // and is answered from any reply (this input's own bytes included).
                    if binary::text_safe_key(&key) {
                        let gets = shoal_memcache::Command::Get {
                            keys: vec![key.clone()],
                            with_cas: true,
                            touch: None,
                        };
                        let mut text = BytesMut::new();
                        gets.encode(&mut text);
                        let mut parser = Parser::new();
                        let parsed = parser.parse(&mut text, &binary::text_limits(&limits));
                        assert_eq!(parsed, Ok(Some(gets)));
                    }
                    for reply in REPLIES.iter().copied().chain([stream]) {
                        binary::gets_response(&pending, &key, reply, &mut out);
                    }
                    binary::gets_response(
                        &pending,
                        &key,
                        b"VALUE k 1 2 3\r\nhi\r\nEND\r\n",
                        &mut out,
                    );
                    assert!(whole_responses(&out));
                }
                Action::Run(cmd, pending) => {
                    let mut text = BytesMut::new();
                    cmd.encode(&mut text);
                    // In a cluster the command travels as this text: it must read back
                    // whole and equal.
                    let mut parser = Parser::new();
                    let parsed = parser.parse(&mut text, &binary::text_limits(&limits));
                    assert_eq!(parsed, Ok(Some(cmd)));
                    assert!(text.is_empty());
                    for reply in REPLIES {
                        let mut out = BytesMut::new();
                        binary::respond(&pending, reply, &mut out);
                        assert!(whole_responses(&out));
                    }
                }
            }
            if buf.is_empty() {
                break;
            }
        }
    }
});
