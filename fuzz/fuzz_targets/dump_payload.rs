//! Fuzz target for RESTORE's payload reader (`shoal_engine::rdb`): the input is a DUMP
//! payload's value part, sealed here with a valid RDB version and CRC-64 so that the reader
//! itself is exercised (a bad checksum stops it at once).
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run dump_payload -- -max_len=65536
//! ```
//!
//! Invariants: no panic and no allocation beyond the input's size (plus a decompressed
//! string's, capped at 1 MiB here) on any payload; a value that reads writes back as a
//! payload that reads as the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_engine::rdb::{crc64, dump_collection, dump_string, restore, Value};

fuzz_target!(|data: &[u8]| {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&11u16.to_le_bytes());
    let crc = crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(value) = restore(&payload, 1 << 20) {
        let again = match &value {
            Value::Str(s) => dump_string(s),
            Value::Coll(c) => dump_collection(c),
        };
        assert_eq!(restore(&again, usize::MAX).as_ref(), Ok(&value));
    }
});
