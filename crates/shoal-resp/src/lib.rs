//! RESP wire protocol for Shoal: the request parser, the reply encoder and a reply scanner.
//!
//! Role: turn the bytes a client sends into argument vectors (`Vec<Bytes>`), render a
//! [`Reply`] as RESP2 or RESP3 bytes, and find the value boundaries in encoded replies. This crate knows nothing about commands, keys or the
//! store; it is sans-IO and synchronous, so the connection task owns one [`RequestParser`]
//! per socket and calls it whenever its read buffer grows.
//!
//! Layout:
//! - [`parser`]: [`RequestParser`], resumable across partial reads, with Redis 7's exact
//!   rules and error texts for multibulk (`*`) and inline requests, and the [`Limits`] that
//!   bound what a (possibly unauthenticated) client may make us buffer.
//! - [`inline`]: `sdssplitargs`-compatible splitting of inline command lines (quotes, escapes).
//! - [`reply`]: [`Reply`], [`Protocol`] and the allocation-free encoder, plus the
//!   [`reply::encode_bulk`] / [`reply::encode_int`] helpers for hot paths.
//! - [`scan`]: finding the ends of already-encoded RESP2/RESP3 replies ([`value_len`]) and
//!   the elements of array replies ([`array_elements`]), for relaying and merging replies
//!   that other nodes sent, without decoding them.

pub mod inline;
pub mod parser;
pub mod reply;
pub mod scan;

pub use parser::{peek_keys, string2ll, Limits, ParseError, Peeked, RequestParser, PEEK_MAX_KEY};
pub use reply::{double_bytes, format_int, Protocol, Reply};
pub use scan::{
    aggregate_header, array_elements, integer_value, is_error, string_value, value_len, ScanError,
};
