//! Fuzz target for `shoal_resp::scan`, which finds the values in reply bytes other nodes sent.
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run resp_scan -- -dict=fuzz/dict/resp_scan.dict -max_len=4096
//! ```
//!
//! Input layout: the whole input is the buffer scanned.
//! Invariants: no panic; a value `value_len` finds fits in the buffer, is found again in the
//! buffer cut to it, and its strict prefixes are incomplete; `array_elements` succeeds only
//! on exactly one value, agrees with `aggregate_header`, and its ranges tile the buffer after
//! the header, each exactly one value; `integer_value` only answers for exactly one value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_resp::{aggregate_header, array_elements, integer_value, is_error, value_len};

fuzz_target!(|data: &[u8]| {
    let len = value_len(data);
    if let Ok(Some(n)) = len {
        assert!(n > 0 && n <= data.len(), "value length out of the buffer");
        let value = &data[..n];
        assert_eq!(value_len(value), Ok(Some(n)), "not found again alone");
        // Every strict prefix is incomplete; checking a few keeps the run linear.
        for cut in [0, 1, n / 2, n - 1] {
            assert_eq!(
                value_len(&value[..cut.min(n - 1)]),
                Ok(None),
                "prefix {cut}"
            );
        }
    }
    if let Ok(elements) = array_elements(data) {
        assert_eq!(
            len,
            Ok(Some(data.len())),
            "elements of something not one value"
        );
        let (count, header) = aggregate_header(data)
            .expect("array_elements read its header")
            .expect("array_elements found an aggregate");
        assert_eq!(count, elements.len() as i64, "element count");
        let mut pos = header;
        for range in elements {
            assert_eq!(range.start, pos, "elements do not tile the buffer");
            assert_eq!(value_len(&data[range.clone()]), Ok(Some(range.len())));
            pos = range.end;
        }
        assert_eq!(pos, data.len(), "elements do not reach the end");
    }
    if integer_value(data).is_some() {
        assert_eq!(
            len,
            Ok(Some(data.len())),
            "integer of something not one value"
        );
    }
    let _ = is_error(data);
});
