//! Fuzz target for `shoal_memcache::Parser`.
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run memcache_parser -- -dict=fuzz/dict/memcache.dict -max_len=4096
//! ```
//!
//! Input layout: byte 0 picks the configuration (bit 0: small limits), bytes 1..5 give the
//! chunk sizes the rest is fed in (cycled), the rest is the stream.
//! Invariants: no panic; the parser never consumes more than it was fed; the buffer never
//! holds more than one line, one accepted data block and one chunk; every command respects
//! the limits (key lengths, key count) and its payload fits in what was consumed; after a
//! connection-fatal error nothing more is fed.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use shoal_memcache::{Command, Limits, Parser};

fn key_ok(key: &[u8], limits: &Limits) -> bool {
    !key.is_empty() && key.len() <= limits.max_key_len && key.iter().all(|&b| b > 0x20 && b != 0x7f)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let chunks: Vec<usize> = data[1..5].iter().map(|&b| usize::from(b) + 1).collect();
    let stream = &data[5..];
    let limits = if data[0] & 1 != 0 {
        Limits {
            max_key_len: 8,
            max_line_len: 64,
            max_get_line_len: 96,
            max_item_size: 96,
            max_keys: 4,
        }
    } else {
        Limits::default()
    };
    let max_chunk = 256;
    let bound =
        limits.max_line_len.max(limits.max_get_line_len) + 2 + limits.max_item_size + 2 + max_chunk;

    let mut parser = Parser::new();
    let mut buf = BytesMut::new();
    let mut fed = 0usize;
    let mut payload = 0usize;
    let mut pos = 0usize;
    let mut i = 0usize;
    while pos < stream.len() {
        let end = (pos + chunks[i % chunks.len()]).min(stream.len());
        i += 1;
        buf.extend_from_slice(&stream[pos..end]);
        fed += end - pos;
        pos = end;
        loop {
            let before = buf.len();
            match parser.parse(&mut buf, &limits) {
                Ok(Some(cmd)) => match &cmd {
                    Command::Store { key, data, .. } | Command::MetaSet { key, data, .. } => {
                        assert!(key_ok(key, &limits), "bad key accepted");
                        assert!(data.len() <= limits.max_item_size, "block too large");
                        payload += key.len() + data.len();
                    }
                    Command::Get { keys, .. } => {
                        assert!(!keys.is_empty() && keys.len() <= limits.max_keys);
                        assert!(keys.iter().all(|k| key_ok(k, &limits)), "bad key accepted");
                        payload += keys.iter().map(|k| k.len()).sum::<usize>();
                    }
                    Command::Delete { key, .. }
                    | Command::Arith { key, .. }
                    | Command::Touch { key, .. }
                    | Command::MetaGet { key, .. }
                    | Command::MetaDelete { key, .. }
                    | Command::MetaArith { key, .. }
                    | Command::MetaDebug { key, .. } => {
                        assert!(key_ok(key, &limits), "bad key accepted");
                        payload += key.len();
                    }
                    _ => {}
                },
                Ok(None) => break,
                Err(e) => {
                    assert!(!e.reply().is_empty() && e.reply().ends_with(b"\r\n"));
                    if e.closes() {
                        return;
                    }
                }
            }
            assert!(buf.len() <= before, "parse grew the buffer");
            assert!(buf.len() <= fed, "consumed more than fed");
        }
        assert!(buf.len() <= bound, "buffer unbounded: {}", buf.len());
        assert!(
            payload <= fed - buf.len(),
            "payload larger than consumed bytes"
        );
    }
});
