//! Memcached protocol for Shoal: the text protocol's request parser and reply writer, and the
//! binary protocol's translation to it.
//!
//! Role: turn the bytes a memcached client sends into [`Command`]s, and write memcached's
//! replies. This crate knows nothing of the store, the ring or the network; it is sans-IO and
//! synchronous, so the connection task owns one [`Parser`] per socket, calls
//! [`Parser::parse`] whenever its read buffer grows, executes each command, and renders the
//! answer with the [`reply`] functions.
//!
//! Layout:
//! - [`parser`]: [`Parser`] (resumable across partial reads, swallows rejected data blocks
//!   without buffering them), [`Limits`], and [`ParseError`] with memcached's exact reply texts.
//! - [`command`]: [`Command`], [`StoreMode`], [`MetaFlags`], and [`Command::encode`] (the
//!   canonical request text, for forwarding and tests).
//! - [`reply`]: `VALUE`/`END`/status/number/`STAT`/error/meta reply writers.
//! - [`base64`]: the codec of the meta `b` (binary key) flag.
//! - [`auth`]: [`auth::AuthParser`], memcached's `set`-based authentication (`-Y`) that an
//!   unauthenticated connection must pass before the [`Parser`] sees its requests.
//! - [`binary`]: the binary protocol (first byte `0x80`): its frame reader (lengths checked
//!   before buffering), the translation of each request into the meta command that does the
//!   same, and of the meta reply into the binary response (the plain gets are memcached's
//!   plain get: from the item itself, or a text `gets`); SASL PLAIN is left to the node.
//!
//! Compatible with memcached 1.6 (`proto_text.c`): command words (lowercase, case-sensitive),
//! tokenization (runs of spaces, `\r\n` or bare `\n`), token counts (`ERROR` when wrong),
//! number syntax, `noreply` as the literal last token, the legacy `delete <key> 0`, the
//! error texts, `<bytes>+2` consumed after a bad data chunk, too-large blocks swallowed, meta
//! flag checks (`duplicate flag`, `invalid flag`, `opaque token too long`, `options flags are
//! too long`).
//!
//! Deliberately different:
//! - a storage command rejected after its `<bytes>` was read (bad key, bad number, bad meta
//!   flag) has its data block swallowed too; memcached would parse that data as commands;
//! - a line limit ([`Limits::max_line_len`], 64 KiB; [`Limits::max_get_line_len`], 2 MiB, for
//!   gets) and a key-count limit for gets ([`Limits::max_keys`]); memcached bounds non-get
//!   lines at 2 KiB and gets not at all;
//! - the connection-fatal "line too long" gets a `CLIENT_ERROR line too long` reply before
//!   the close (memcached 1.6 closes silently);
//! - a binary request whose framing is broken is answered with an error and the connection
//!   closed (one whose body is over the limit is answered and skipped, as memcached does);
//! - not parsed (answered `ERROR`): `shutdown`, `lru_crawler mgdump` (1.6.19), `watch`,
//!   `extstore`, `bget`, `misbehave`; `slabs`, `lru` and `lru_crawler` are checked and
//!   answered as memcached's, but change nothing; an HTTP request
//!   line is not special-cased (memcached closes the connection).
//! - `noreply` is not attached to a [`ParseError`]: the node asks [`Parser::is_quiet`]
//!   whether memcached would have answered it (a classic command's errors go unanswered
//!   with `noreply`, a meta command's are answered).

pub mod auth;
pub mod base64;
pub mod binary;
pub mod command;
pub mod parser;
pub mod reply;

pub use command::{Command, Lru, MetaFlags, Slabs, StoreMode};
pub use parser::{item_fits, Limits, ParseError, Parser};
