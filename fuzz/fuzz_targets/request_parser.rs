//! Fuzz target for `shoal_resp::RequestParser`.
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run request_parser -- -dict=fuzz/dict/resp.dict -max_len=4096
//! ```
//!
//! Input layout: byte 0 picks the configuration (bit 0: authenticated, bit 1: small limits),
//! bytes 1..5 give the chunk sizes the rest is fed in (cycled), the rest is the stream.
//! Invariants: no panic; the parser never consumes more than it was fed; every request it
//! returns is non-empty, has at most `max_args` arguments, and its argument bytes fit in what
//! was consumed. The look ahead (`peek_keys`) over the whole stream: no panic, keys are
//! slices of the stream, and they are the second arguments (of up to `PEEK_MAX_KEY` bytes)
//! of the requests it walked, as the parser returns them (fed the stream at once, default
//! limits), up to a request the parser refuses.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use shoal_resp::{peek_keys, Limits, RequestParser, PEEK_MAX_KEY};

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let flags = data[0];
    let chunks: Vec<usize> = data[1..5].iter().map(|&b| usize::from(b) + 1).collect();
    let stream = &data[5..];
    let authenticated = flags & 1 != 0;
    let limits = if flags & 2 != 0 {
        Limits {
            max_bulk_len: 64,
            max_args: 8,
            max_inline_len: 32,
            unauth_max_args: 3,
            unauth_max_bulk_len: 16,
        }
    } else {
        Limits::default()
    };

    check_peek(stream);

    let mut parser = RequestParser::new();
    let mut buf = BytesMut::new();
    let mut fed = 0usize;
    let mut arg_bytes = 0usize;
    let mut pos = 0usize;
    let mut i = 0usize;
    while pos < stream.len() {
        let end = (pos + chunks[i % chunks.len()]).min(stream.len());
        i += 1;
        buf.extend_from_slice(&stream[pos..end]);
        fed += end - pos;
        pos = end;
        loop {
            match parser.parse(&mut buf, &limits, authenticated) {
                Ok(Some(args)) => {
                    assert!(!args.is_empty(), "empty request returned");
                    assert!(args.len() <= limits.max_args, "too many args");
                    arg_bytes += args.iter().map(|a| a.len()).sum::<usize>();
                }
                Ok(None) => break,
                Err(e) => {
                    assert!(e.to_string().starts_with("ERR Protocol error: "));
                    return;
                }
            }
            assert!(buf.len() <= fed, "consumed more than fed");
        }
        assert!(buf.len() <= fed, "consumed more than fed");
        assert!(
            arg_bytes <= fed - buf.len(),
            "args larger than consumed bytes"
        );
    }
});

/// `peek_keys` against the parser fed the stream at once.
fn check_peek(stream: &[u8]) {
    let mut out: [&[u8]; 8] = [&[]; 8];
    let seen = peek_keys(stream, &mut out);
    assert!(seen.keys <= seen.requests && seen.requests <= out.len());
    let range = stream.as_ptr_range();
    for key in &out[..seen.keys] {
        assert!(range.start <= key.as_ptr() && key.as_ptr_range().end <= range.end);
    }
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::from(stream);
    let mut keys = 0;
    for request in 0..seen.requests {
        let args = match parser.parse(&mut buf, &Limits::default(), true) {
            Ok(Some(args)) => args,
            // A request past a limit (a hint may have looked at it; the connection closes).
            Err(_) => return,
            Ok(None) => panic!("peek_keys walked {seen:?}, the parser found {request} complete"),
        };
        if args.len() >= 2 && args[1].len() <= PEEK_MAX_KEY {
            assert_eq!(&args[1][..], out[keys], "peek_keys saw another key");
            keys += 1;
        }
    }
    assert_eq!(keys, seen.keys, "peek_keys saw keys the parser did not");
}
