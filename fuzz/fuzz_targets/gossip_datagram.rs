//! Fuzz target for what a gossip datagram meets before and inside foca: the authenticated
//! envelope (`Auth::open`), the member/header codec (`WireCodec`) and the state broadcasts
//! (`MetaItem::decode`).
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run gossip_datagram -- -max_len=2048
//! ```
//!
//! The input goes to every decoder as it is (random bytes must never panic), and is also
//! sealed in a valid envelope first, so mutations reach the payload decoders past the MAC.
//! Invariants: no panic; what `open` accepts after `seal` is exactly the sealed payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_gossip::{Auth, Kind, MetaItem, WireCodec, MAX_PAYLOAD};

fuzz_target!(|data: &[u8]| {
    let Ok(auth) = Auth::new("shoal", b"fuzz secret") else {
        return;
    };
    let _ = auth.open(data);
    let payload = &data[..data.len().min(MAX_PAYLOAD)];
    let sealed = auth.seal(Kind::Foca, payload);
    let (_, opened) = auth.open(&sealed).expect("a sealed datagram opens");
    assert_eq!(opened, payload);
    let mut codec = WireCodec::new("fuzz".into());
    let _ = foca::Codec::decode_header(&mut codec, payload);
    let _ = foca::Codec::decode_member(&mut codec, payload);
    let _ = MetaItem::decode(payload);
});
