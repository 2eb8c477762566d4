//! Standard base64 (RFC 4648 alphabet, `=` padding), as memcached's meta `b` flag uses for
//! binary keys: the client sends the key encoded, and keys in `k` return flags are encoded
//! the same way.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes `input`, padding the last group with `=`.
pub fn encode(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        out.push(ALPHABET[(n >> 18) as usize & 63]);
        out.push(ALPHABET[(n >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 {
            ALPHABET[(n >> 6) as usize & 63]
        } else {
            b'='
        });
        out.push(if chunk.len() > 2 {
            ALPHABET[n as usize & 63]
        } else {
            b'='
        });
    }
    out
}

fn sextet(c: u8) -> Option<u32> {
    Some(u32::from(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    }))
}

/// Decodes padded standard base64; `None` for a length not a multiple of 4, a byte outside
/// the alphabet, padding anywhere but the end of the last group, or non-zero bits under the
/// padding (so every accepted input is the canonical encoding of its output).
pub fn decode(input: &[u8]) -> Option<Vec<u8>> {
    if !input.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() / 4 * 3);
    let groups = input.len() / 4;
    for (i, g) in input.chunks_exact(4).enumerate() {
        let last = i + 1 == groups;
        let pad = match (g[2], g[3]) {
            (b'=', b'=') if last => 2,
            (_, b'=') if last => 1,
            _ => 0,
        };
        let mut n = 0u32;
        for &c in &g[..4 - pad] {
            n = n << 6 | sextet(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        match pad {
            0 => out.extend_from_slice(&bytes),
            1 if n & 0xff == 0 => out.extend_from_slice(&bytes[..2]),
            2 if n & 0xffff == 0 => out.push(bytes[0]),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rfc4648_vectors() {
        let vectors: [(&[u8], &[u8]); 7] = [
            (b"", b""),
            (b"f", b"Zg=="),
            (b"fo", b"Zm8="),
            (b"foo", b"Zm9v"),
            (b"foob", b"Zm9vYg=="),
            (b"fooba", b"Zm9vYmE="),
            (b"foobar", b"Zm9vYmFy"),
        ];
        for (plain, coded) in vectors {
            assert_eq!(encode(plain), coded);
            assert_eq!(decode(coded).as_deref(), Some(plain));
        }
        assert_eq!(encode(&[0xfb, 0xff, 0xfe]), b"+//+");
        assert_eq!(decode(b"+//+"), Some(vec![0xfb, 0xff, 0xfe]));
    }

    #[test]
    fn invalid_inputs() {
        for bad in [
            &b"Zg="[..],  // length
            b"Zg",        // no padding
            b"Z===",      // too much padding
            b"Zg==Zg==",  // padding before the end
            b"Zm9v Yg==", // space
            b"Zm-v",      // url-safe alphabet
            b"Zh==",      // non-zero bits under padding
            b"Zm9=",      // non-zero bits under padding
            b"=Zm9",
            b"====",
        ] {
            assert_eq!(decode(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let coded = encode(&data);
            prop_assert_eq!(coded.len() % 4, 0);
            prop_assert_eq!(decode(&coded), Some(data));
        }

        #[test]
        fn decode_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Some(plain) = decode(&data) {
                prop_assert_eq!(encode(&plain), data);
            }
        }
    }
}
