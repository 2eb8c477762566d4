//! Fuzz target for `shoal_memcache::auth::AuthParser` (what an unauthenticated Memcached
//! client's bytes reach first).
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run memcache_auth -- -dict=fuzz/dict/memcache.dict -max_len=8192
//! ```
//!
//! Input layout: bytes 0..4 give the chunk sizes the rest is fed in (cycled), the rest is the
//! stream. Invariants: no panic; the parser never consumes more than it was fed; the buffer
//! never holds more than one line, one token block and one chunk; credentials fit in the
//! block limit; after a close nothing more is fed.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use shoal_memcache::auth::{AuthParser, AuthStep, MAX_LINE_LEN, MAX_TOKEN_LEN};

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let chunks: Vec<usize> = data[..4].iter().map(|&b| usize::from(b) + 1).collect();
    let stream = &data[4..];
    let bound = MAX_LINE_LEN + 1 + MAX_TOKEN_LEN + 2 + 256;
    let mut parser = AuthParser::default();
    let mut buf = BytesMut::new();
    let (mut pos, mut i) = (0usize, 0usize);
    while pos < stream.len() {
        let end = (pos + chunks[i % chunks.len()]).min(stream.len());
        i += 1;
        buf.extend_from_slice(&stream[pos..end]);
        pos = end;
        loop {
            let before = buf.len();
            match parser.parse(&mut buf) {
                AuthStep::NeedInput => break,
                AuthStep::Close(_) => return,
                AuthStep::Refused(text) => assert!(text.ends_with("\r\n")),
                AuthStep::Credentials { user, password } => {
                    assert!(user.len() + password.len() < MAX_TOKEN_LEN);
                }
            }
            assert!(buf.len() <= before, "parse grew the buffer");
        }
        assert!(buf.len() <= bound, "buffer unbounded: {}", buf.len());
    }
});
