//! Fuzz target for `shoal_wire::decode`, the inter-node frame decoder.
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run wire_frame -- -max_len=4096
//! ```
//!
//! Input layout: byte 0 picks the limits (bit 0: handshake limits, bit 1: tiny limits) and
//! the mode, bytes 1..5 give the chunk sizes the stream is fed in (cycled), the rest is the
//! stream. Bit 2 set (structured mode): the rest is a list of records `kind u8, id u8,
//! declared length u16 BE, payload`, each turned into a frame with a valid magic and version
//! and the declared length (the payload is cut at the next record's start or at the end),
//! so mutations reach the payload parsers without first guessing the magic.
//! Invariants: no panic; `Ok(None)` consumes nothing; a decoded frame consumed exactly its
//! header plus a payload within the limit for its kind; re-encoding a decoded frame gives
//! back exactly the bytes it was decoded from (the encoding is canonical). The look ahead
//! (`peek_request_bodies`) over the whole stream: each body it sees, decode (default limits)
//! reads as the same request, in turn.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use shoal_wire::{
    decode, peek_request_bodies, Frame, FrameLimits, HEADER_LEN, MAGIC, PROTOCOL_VERSION,
};

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let flags = data[0];
    let chunks: Vec<usize> = data[1..5].iter().map(|&b| usize::from(b) + 1).collect();
    let stream = if flags & 4 != 0 {
        structured(&data[5..])
    } else {
        data[5..].to_vec()
    };
    let stream = &stream[..];
    let limits = if flags & 2 != 0 {
        FrameLimits {
            max_data_payload: 64,
            max_control_payload: 48,
        }
    } else if flags & 1 != 0 {
        FrameLimits::handshake()
    } else {
        FrameLimits::default()
    };

    check_peek(stream);

    let mut buf = BytesMut::new();
    let mut pos = 0usize;
    let mut i = 0usize;
    while pos < stream.len() {
        let end = (pos + chunks[i % chunks.len()]).min(stream.len());
        i += 1;
        buf.extend_from_slice(&stream[pos..end]);
        pos = end;
        loop {
            let before = buf.clone();
            match decode(&mut buf, &limits) {
                Ok(Some(frame)) => {
                    let used = before.len() - buf.len();
                    assert!(used >= HEADER_LEN, "frame shorter than a header");
                    let max = if frame.kind().is_data() {
                        limits.max_data_payload
                    } else {
                        limits.max_control_payload
                    };
                    assert!(used - HEADER_LEN <= max, "payload over the limit");
                    let mut again = BytesMut::new();
                    frame
                        .encode(&mut again)
                        .expect("a decoded frame re-encodes");
                    assert_eq!(&again[..], &before[..used], "encoding not canonical");
                }
                Ok(None) => {
                    assert_eq!(buf, before, "Ok(None) consumed bytes");
                    break;
                }
                Err(_) => return,
            }
        }
    }
});

/// Builds a stream of well-headed frames from `kind, id, len u16, payload` records. The
/// payload of a record runs for its declared length or to the end of the input.
fn structured(mut input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while input.len() >= 4 {
        let (kind, id, len) = (
            input[0],
            u64::from(input[1]),
            usize::from(u16::from_be_bytes([input[2], input[3]])),
        );
        input = &input[4..];
        let take = len.min(input.len());
        out.extend_from_slice(&MAGIC);
        out.push(PROTOCOL_VERSION);
        out.push(kind);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&(len as u32).to_be_bytes());
        out.extend_from_slice(&input[..take]);
        input = &input[take..];
    }
    out
}

/// `peek_request_bodies` against `decode` fed the stream at once.
fn check_peek(stream: &[u8]) {
    let mut bodies: [&[u8]; 8] = [&[]; 8];
    let n = peek_request_bodies(stream, &mut bodies);
    let mut buf = BytesMut::from(stream);
    for body in &bodies[..n] {
        match decode(&mut buf, &FrameLimits::default()) {
            Ok(Some(Frame::Request { body: got, .. })) => assert_eq!(&got[..], *body),
            other => panic!("peek_request_bodies saw a request, decode gave {other:?}"),
        }
    }
}
