//! The memcached binary protocol, as far as Shoal speaks it: it recognises a binary request
//! and answers it with a binary "not supported" error, so a binary client (pylibmc with
//! `binary=True`, memjs) fails at once instead of waiting for a text reply that never comes.
//!
//! A binary request starts with the magic byte `0x80` and a 24-byte header (memcached's
//! `protocol_binary.h`):
//!
//! ```text
//! offset size field
//! 0      1    magic (0x80 request, 0x81 response)
//! 1      1    opcode
//! 2      2    key length
//! 4      1    extras length
//! 5      1    data type
//! 6      2    vbucket id (request) / status (response)
//! 8      4    total body length
//! 12     4    opaque (echoed in the response)
//! 16     8    CAS
//! ```
//!
//! A text request never starts with `0x80`, so the first byte tells the two apart, as
//! memcached decides per connection.

use bytes::{BufMut, BytesMut};

/// First byte of every binary request.
pub const REQUEST_MAGIC: u8 = 0x80;
/// First byte of every binary response.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// Bytes of a binary header.
pub const HEADER_LEN: usize = 24;
/// Status "Not supported" (memcached's `PROTOCOL_BINARY_RESPONSE_NOT_SUPPORTED`).
pub const STATUS_NOT_SUPPORTED: u16 = 0x0083;
/// The error text the response carries as its value.
pub const NOT_SUPPORTED_TEXT: &[u8] = b"Not supported: Shoal speaks the memcached text protocol";

/// What the start of a connection's input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Not a binary request (text, or nothing yet).
    Text,
    /// A binary request whose header has not fully arrived yet.
    Partial,
    /// A binary request: answer [`not_supported`] and close.
    Binary,
}

/// Classifies the start of `input` (at a request boundary).
pub fn start(input: &[u8]) -> Start {
    match input.first() {
        Some(&REQUEST_MAGIC) if input.len() >= HEADER_LEN => Start::Binary,
        Some(&REQUEST_MAGIC) => Start::Partial,
        _ => Start::Text,
    }
}

/// The binary error response to the request whose header starts `input` (at least
/// [`HEADER_LEN`] bytes): the request's opcode and opaque, status "Not supported", the error
/// text as the value.
pub fn not_supported(input: &[u8], out: &mut BytesMut) {
    let header = &input[..HEADER_LEN];
    out.put_u8(RESPONSE_MAGIC);
    out.put_u8(header[1]); // opcode
    out.extend_from_slice(&0u16.to_be_bytes()); // key length
    out.put_u8(0); // extras length
    out.put_u8(0); // data type
    out.extend_from_slice(&STATUS_NOT_SUPPORTED.to_be_bytes());
    // The text is a constant far below 4 GiB.
    out.extend_from_slice(&(NOT_SUPPORTED_TEXT.len() as u32).to_be_bytes());
    out.extend_from_slice(&header[12..16]); // opaque
    out.extend_from_slice(&0u64.to_be_bytes()); // CAS
    out.extend_from_slice(NOT_SUPPORTED_TEXT);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary GET of "k" (opcode 0x00) with opaque 0xdeadbeef.
    fn get_k() -> Vec<u8> {
        let mut r = vec![REQUEST_MAGIC, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
        r.extend_from_slice(&0xdead_beef_u32.to_be_bytes());
        r.extend_from_slice(&[0; 8]);
        r.push(b'k');
        r
    }

    #[test]
    fn the_first_byte_tells_binary_from_text() {
        assert_eq!(start(b""), Start::Text);
        assert_eq!(start(b"get k\r\n"), Start::Text);
        let req = get_k();
        assert_eq!(start(&req[..1]), Start::Partial);
        assert_eq!(start(&req[..HEADER_LEN - 1]), Start::Partial);
        assert_eq!(start(&req), Start::Binary);
    }

    #[test]
    fn the_refusal_is_a_binary_response_to_that_request() {
        let mut out = BytesMut::new();
        not_supported(&get_k(), &mut out);
        assert_eq!(out.len(), HEADER_LEN + NOT_SUPPORTED_TEXT.len());
        assert_eq!(out[0], RESPONSE_MAGIC);
        assert_eq!(out[1], 0x00);
        assert_eq!(u16::from_be_bytes([out[6], out[7]]), STATUS_NOT_SUPPORTED);
        let body = u32::from_be_bytes([out[8], out[9], out[10], out[11]]) as usize;
        assert_eq!(body, NOT_SUPPORTED_TEXT.len());
        assert_eq!(&out[12..16], &0xdead_beef_u32.to_be_bytes());
        assert_eq!(&out[HEADER_LEN..], NOT_SUPPORTED_TEXT);
    }
}
