//! Fuzz target for the message bodies inside inter-node Request frames
//! (`shoal_cluster::message`: COMMAND, REPLICATE, REPLICATE_AT, HANDOFF, FETCH, DONE,
//! RELAY, RELAYED, BATCH, CONTINUE; `docs/wire.md`), and RELAY's and BATCH's response
//! bodies.
//!
//! Run (from the repository root, needs nightly and cargo-fuzz):
//!
//! ```text
//! cargo +nightly fuzz run cluster_message -- -max_len=4096
//! ```
//!
//! Also a forwarded transaction's arguments (`decode_transaction`).
//!
//! Invariants: no panic on any body; every key and value decoded is a slice within the
//! input; a REPLICATE, REPLICATE_AT or HANDOFF that decodes encodes back to the same bytes,
//! and so does a RELAY or RELAYED, whose inner request is never another relay, and a BATCH,
//! whose parts are COMMANDs, and a CONTINUE; a BATCH answer that decodes encodes back to
//! the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use shoal_cluster::message::{
    decode_batch_answer, decode_relay_response, decode_request, encode_batch,
    encode_batch_answer, encode_continue, encode_handoff, encode_relay, encode_relay_answer,
    encode_relayed, encode_replicate, encode_replicate_at, BatchAnswer, Change, Request,
    KIND_COMMAND, KIND_RELAY, KIND_RELAYED, MAX_BATCH,
};
use shoal_store::{Collection, KeyState, Kind};

fuzz_target!(|data: &[u8]| {
    // The look ahead's key is a slice of the body, or nothing.
    if let Some(key) = shoal_cluster::message::peek_command_key(data) {
        let range = data.as_ptr_range();
        assert!(range.start <= key.as_ptr() && key.as_ptr_range().end <= range.end);
    }
    // A forwarded transaction's arguments (the input split at spaces, after its name):
    // decoded without a panic, and what decodes encodes back to the same arguments.
    // Both names: the input's first byte picks one.
    use shoal_cluster::message::{TRANSACTION, WATCHING_TRANSACTION};
    let name = match data.first() {
        Some(b) if b % 2 == 1 => WATCHING_TRANSACTION,
        _ => TRANSACTION,
    };
    let args: Vec<Bytes> = std::iter::once(name)
        .chain(data.split(|&b| b == b' '))
        .map(Bytes::copy_from_slice)
        .collect();
    if let Some(tx) = shoal_cluster::message::decode_transaction(&args) {
        let again = shoal_cluster::message::encode_transaction(&tx);
        assert!(tx.queue.iter().all(|c| !c.is_empty()));
        assert_eq!(again.len(), args.len());
        assert_eq!(again[0], args[0]);
        // A snapshot's bytes may read back from another encoding (no key, whatever the
        // version): what decodes is what the encoding decodes to.
        assert_eq!(shoal_cluster::message::decode_transaction(&again), Some(tx));
    }
    let body = Bytes::copy_from_slice(data);
    // The RESP part of a COMMAND is not this target's business (request_parser has it).
    match decode_request(body, |_| Ok(Vec::new())) {
        Ok(Request::Replicate(entries)) => {
            check(data, &entries);
            let again = encode_replicate(entries.iter().map(|(k, s)| (&k[..], s)));
            assert_eq!(&again[..], data);
        }
        Ok(Request::ReplicateAt {
            sent_at_ms,
            entries,
        }) => {
            // Deltas carry their command as bytes; the states are checked as the others.
            let mut total = 0;
            let states: Vec<(Bytes, KeyState)> = entries
                .iter()
                .filter_map(|(k, c)| match c {
                    Change::State(s) => Some((k.clone(), s.clone())),
                    Change::Delta { command, .. } => {
                        total += k.len() + command.len();
                        None
                    }
                })
                .collect();
            check(data, &states);
            assert!(total <= data.len());
            let again = encode_replicate_at(sent_at_ms, entries.iter().map(|(k, c)| (&k[..], c)));
            assert_eq!(&again[..], data);
        }
        Ok(Request::Handoff(entries)) => {
            check(data, &entries);
            let again = encode_handoff(entries.iter().map(|(k, s)| (&k[..], s)));
            assert_eq!(&again[..], data);
        }
        Ok(Request::Relay {
            target,
            addr,
            inner,
        }) => {
            assert!(!matches!(
                inner.first(),
                None | Some(&KIND_RELAY) | Some(&KIND_RELAYED)
            ));
            // The address's text need not be canonical ("1.2.3.4:05"): only the name and
            // the request must come back as they were.
            let again = encode_relay(&target, addr, &inner);
            assert!(
                again.ends_with(&inner) && again[..3 + target.len()] == data[..3 + target.len()]
            );
        }
        Ok(Request::Relayed { origin, inner }) => {
            assert!(!matches!(
                inner.first(),
                None | Some(&KIND_RELAY) | Some(&KIND_RELAYED)
            ));
            assert_eq!(&encode_relayed(&origin, &inner)[..], data);
        }
        Ok(Request::Fetch(keys)) => {
            assert!(keys.iter().map(|k| k.len()).sum::<usize>() <= data.len());
        }
        Ok(Request::Batch(parts)) => {
            assert!(!parts.is_empty() && parts.len() <= MAX_BATCH);
            assert!(parts.iter().all(|p| p.first() == Some(&KIND_COMMAND)));
            assert_eq!(&encode_batch(&parts)[..], data);
        }
        Ok(Request::Continue(more)) => {
            assert_ne!(more, 0);
            assert_eq!(&encode_continue(more)[..], data);
        }
        _ => {}
    }
    // The same bytes as a BATCH's answer, expected to hold the replies it says it holds
    // (all of them when it gives no token), or one more.
    if data.len() >= 12 {
        let count = u32::from_be_bytes([data[8], data[9], data[10], data[11]]) as usize;
        for left in [count, count + 1] {
            let answer = decode_batch_answer(Bytes::copy_from_slice(data), left);
            if let BatchAnswer::Replies { replies, more } = answer {
                assert!(replies.len() == left || more != 0);
                assert_eq!(&encode_batch_answer(more, &replies)[..], data);
            }
        }
    }
    // The same bytes as a relay's response: the target's answer or a failure, never a
    // panic; an answer re-encodes to the same bytes.
    if let Ok(r) = decode_relay_response(Bytes::copy_from_slice(data)) {
        assert_eq!(&encode_relay_answer(r.epoch, &r.body)[..], data);
    }
});

fn check(data: &[u8], entries: &[(Bytes, KeyState)]) {
    let mut total = 0;
    for (key, state) in entries {
        total += key.len();
        if let KeyState::Live { kind, value, .. } = state {
            total += value.len();
            // A hash's value decodes or is refused, never panics or over-allocates.
            if *kind != Kind::String {
                // What decodes re-encodes to the same collection (not always the same bytes:
                // an intset's members may arrive in any order).
                if let Some(c) = Collection::decode(*kind, value) {
                    assert!(Collection::decode(*kind, &c.encode()) == Some(c));
                }
            }
        }
    }
    assert!(total <= data.len());
}
