//! The memcached binary protocol (memcached's `protocol_binary.h`), on the same port as the
//! text protocol: a request starts with the magic byte `0x80`, which no text request does,
//! so each request says which protocol it speaks.
//!
//! ```text
//! header (24 bytes, integers big-endian)
//! offset size field
//! 0      1    magic (0x80 request, 0x81 response)
//! 1      1    opcode
//! 2      2    key length
//! 4      1    extras length
//! 5      1    data type (0: raw bytes)
//! 6      2    vbucket id (request) / status (response)
//! 8      4    total body length (extras + key + value)
//! 12     4    opaque (echoed in the response)
//! 16     8    CAS
//! body: extras, key, value
//! ```
//!
//! Shoal speaks it by translation, so there is one implementation of each command: [`parse`]
//! reads a request (its lengths checked against [`Limits`] before anything is buffered),
//! [`action`] turns it into the meta command that does the same (`mg` for the gets and touch,
//! `ms` for the storage commands, `md`, `ma` for incr/decr with their initial value, ...),
//! the node runs that command as it runs any text request (on its store, or at the key's
//! owner in a cluster), and [`respond`] turns the meta reply into the binary response. Keys
//! that the text protocol cannot carry (spaces, control bytes) travel base64-encoded (`b`).
//! SASL (`LIST_MECHS`, `AUTH` with `PLAIN`) is left to the node, which knows the password.
//!
//! The plain gets (GET, GETQ, GETK, GETKQ; a client's multi-get is a pipeline of them) are
//! the one exception, for their cost: [`action`] gives them as [`Action::Get`], which a
//! single node answers from its store with [`get_response`] (the text `get`'s semantics),
//! looking ahead at a pipeline's keys with [`peek_get_keys`]; a cluster node routes it as
//! the text `gets` of its key and answers from that reply ([`gets_response`]), or, for a
//! key no text request can name ([`text_safe_key`]), as [`get_command`]'s `mg`, whose
//! reply [`respond`] answers with the same response.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::command::{Command, MetaFlags};
use crate::parser::Limits;

/// First byte of every binary request.
pub const REQUEST_MAGIC: u8 = 0x80;
/// First byte of every binary response.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// Bytes of a binary header.
pub const HEADER_LEN: usize = 24;
/// Largest extras a request may carry (incr/decr: delta, initial, expiry).
const MAX_EXTRAS: usize = 20;
/// Longest key token of a translated request: a 250-byte key in base64.
pub const MAX_KEY_TOKEN: usize = 4 * 250_usize.div_ceil(3);

/// The text limits a translated request is read back with (in a cluster the meta command
/// travels as text): a binary key of up to 250 bytes may need [`MAX_KEY_TOKEN`] characters.
pub fn text_limits(limits: &Limits) -> Limits {
    Limits {
        max_key_len: limits.max_key_len.max(MAX_KEY_TOKEN),
        ..limits.clone()
    }
}

/// Largest body an unauthenticated connection may send (SASL credentials): more is refused
/// from the header, before it is buffered, as the text protocol bounds its lines.
pub const MAX_UNAUTHENTICATED_BODY: usize = 2048;

/// Opcodes (`protocol_binary_command`).
pub mod op {
    pub const GET: u8 = 0x00;
    pub const SET: u8 = 0x01;
    pub const ADD: u8 = 0x02;
    pub const REPLACE: u8 = 0x03;
    pub const DELETE: u8 = 0x04;
    pub const INCREMENT: u8 = 0x05;
    pub const DECREMENT: u8 = 0x06;
    pub const QUIT: u8 = 0x07;
    pub const FLUSH: u8 = 0x08;
    pub const GETQ: u8 = 0x09;
    pub const NOOP: u8 = 0x0a;
    pub const VERSION: u8 = 0x0b;
    pub const GETK: u8 = 0x0c;
    pub const GETKQ: u8 = 0x0d;
    pub const APPEND: u8 = 0x0e;
    pub const PREPEND: u8 = 0x0f;
    pub const STAT: u8 = 0x10;
    pub const SETQ: u8 = 0x11;
    pub const ADDQ: u8 = 0x12;
    pub const REPLACEQ: u8 = 0x13;
    pub const DELETEQ: u8 = 0x14;
    pub const INCREMENTQ: u8 = 0x15;
    pub const DECREMENTQ: u8 = 0x16;
    pub const QUITQ: u8 = 0x17;
    pub const FLUSHQ: u8 = 0x18;
    pub const APPENDQ: u8 = 0x19;
    pub const PREPENDQ: u8 = 0x1a;
    pub const VERBOSITY: u8 = 0x1b;
    pub const TOUCH: u8 = 0x1c;
    pub const GAT: u8 = 0x1d;
    pub const GATQ: u8 = 0x1e;
    pub const SASL_LIST_MECHS: u8 = 0x20;
    pub const SASL_AUTH: u8 = 0x21;
    pub const SASL_STEP: u8 = 0x22;
    pub const GATK: u8 = 0x23;
    pub const GATKQ: u8 = 0x24;
}

/// Response statuses (`protocol_binary_response_status`) and the texts memcached sends with
/// them as the value.
pub mod status {
    pub const NO_ERROR: u16 = 0x0000;
    pub const KEY_NOT_FOUND: u16 = 0x0001;
    pub const KEY_EXISTS: u16 = 0x0002;
    pub const TOO_LARGE: u16 = 0x0003;
    pub const INVALID_ARGUMENTS: u16 = 0x0004;
    pub const NOT_STORED: u16 = 0x0005;
    pub const NON_NUMERIC: u16 = 0x0006;
    pub const AUTH_ERROR: u16 = 0x0020;
    pub const UNKNOWN_COMMAND: u16 = 0x0081;
    pub const OUT_OF_MEMORY: u16 = 0x0082;
    pub const INTERNAL_ERROR: u16 = 0x0084;
    pub const TEMPORARY_FAILURE: u16 = 0x0086;

    pub fn text(status: u16) -> &'static str {
        match status {
            KEY_NOT_FOUND => "Not found",
            KEY_EXISTS => "Data exists for key.",
            TOO_LARGE => "Too large.",
            INVALID_ARGUMENTS => "Invalid arguments",
            NOT_STORED => "Not stored.",
            NON_NUMERIC => "Non-numeric server-side value for incr or decr",
            AUTH_ERROR => "Auth failure.",
            UNKNOWN_COMMAND => "Unknown command",
            OUT_OF_MEMORY => "Out of memory",
            TEMPORARY_FAILURE => "Temporary failure",
            _ => "Internal error",
        }
    }
}

/// What the start of a connection's input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Not a binary request (text, or nothing yet).
    Text,
    /// A binary request whose header has not fully arrived yet.
    Partial,
    /// A binary request with its whole header.
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

/// One binary request; its parts are zero-copy slices of the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub opcode: u8,
    pub data_type: u8,
    pub opaque: u32,
    pub cas: u64,
    pub extras: Bytes,
    pub key: Bytes,
    pub value: Bytes,
}

/// A request the node answers `response` without running it: one whose framing cannot be
/// trusted, after which the node closes, as the stream cannot be read further; or one whose
/// body is over the limit, which the node skips (`skip`: the request's bytes in all, header
/// included, to discard as they arrive, never buffered) and goes on, as memcached swallows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fatal {
    pub response: Bytes,
    pub reason: &'static str,
    pub skip: Option<usize>,
    /// A SET too large: the delete of its key's old value, when the key has arrived with
    /// the header, for the node to run (memcached unlinks it, so a client told its write
    /// failed does not read the value it meant to replace).
    pub stale: Option<Box<Command>>,
}

/// The largest body a request may declare: the largest item, the longest key, extras.
fn max_body(limits: &Limits) -> usize {
    limits
        .max_item_size
        .saturating_add(limits.max_key_len)
        .saturating_add(MAX_EXTRAS)
}

/// The opcode, opaque and declared body length of the request whose header starts `input`.
pub fn peek(input: &[u8]) -> Option<(u8, u32, usize)> {
    let h = input.get(..HEADER_LEN)?;
    let opaque = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
    let body = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    Some((h[1], opaque, body))
}

/// True for the opcodes an unauthenticated connection may send (memcached lets SASL and
/// VERSION through).
pub fn allowed_before_auth(opcode: u8) -> bool {
    matches!(
        opcode,
        op::SASL_LIST_MECHS | op::SASL_AUTH | op::SASL_STEP | op::VERSION
    )
}

/// Bytes the request at the front of `input` needs in all (0 when its header is not in).
pub fn wanted(input: &[u8]) -> usize {
    if input.len() < HEADER_LEN {
        return 0;
    }
    HEADER_LEN
        .saturating_add(u32::from_be_bytes([input[8], input[9], input[10], input[11]]) as usize)
}

/// Reads the binary request at the front of `input` (which starts with [`REQUEST_MAGIC`]):
/// `Ok(None)` until all of it has arrived. The declared lengths are checked before waiting
/// for the body, so a client cannot make the node buffer more than one item.
pub fn parse(input: &mut BytesMut, limits: &Limits) -> Result<Option<Request>, Fatal> {
    if input.len() < HEADER_LEN {
        return Ok(None);
    }
    let h = &input[..HEADER_LEN];
    let opcode = h[1];
    let opaque = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
    let fatal = |status, reason| Fatal {
        response: error_response(opcode, status, opaque),
        reason,
        skip: None,
        stale: None,
    };
    if h[0] != REQUEST_MAGIC {
        return Err(fatal(status::INVALID_ARGUMENTS, "bad magic byte"));
    }
    let key_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let extras_len = usize::from(h[4]);
    let body_len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    if key_len + extras_len > body_len {
        return Err(fatal(
            status::INVALID_ARGUMENTS,
            "binary request key and extras longer than its body",
        ));
    }
    if body_len > max_body(limits) {
        // A SET's key names the old value to delete: waited for (it follows the header and
        // extras, at most a few hundred bytes), whatever the segments it arrives in.
        let key_at = HEADER_LEN + extras_len;
        let names_stale =
            matches!(opcode, op::SET | op::SETQ) && (1..=limits.max_key_len).contains(&key_len);
        if names_stale && input.len() < key_at + key_len {
            return Ok(None);
        }
        let stale = names_stale.then(|| {
            let key = Bytes::copy_from_slice(&input[key_at..key_at + key_len]);
            Box::new(stale_delete(&key))
        });
        return Err(Fatal {
            skip: Some(HEADER_LEN + body_len),
            stale,
            ..fatal(status::TOO_LARGE, "binary request body over the limit")
        });
    }
    if input.len() < HEADER_LEN + body_len {
        return Ok(None);
    }
    let mut frame = input.split_to(HEADER_LEN + body_len).freeze();
    let data_type = frame[5];
    let cas = u64::from_be_bytes(frame[16..24].try_into().unwrap_or([0; 8]));
    frame.advance(HEADER_LEN);
    let extras = frame.split_to(extras_len);
    let key = frame.split_to(key_len);
    Ok(Some(Request {
        opcode,
        data_type,
        opaque,
        cas,
        extras,
        key,
        value: frame,
    }))
}

/// The groups a binary STAT may name (the empty one is the general stats).
const BINARY_STAT_GROUPS: &[&[u8]] = &[
    b"",
    b"reset",
    b"settings",
    b"detail on",
    b"detail off",
    b"detail dump",
    b"items",
    b"slabs",
    b"sizes",
    b"sizes_enable",
    b"sizes_disable",
];

/// What a response needs to know of its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub opcode: u8,
    pub opaque: u32,
    /// The key, for the responses that carry it (GETK, GATK and their quiet forms), and
    /// STAT's `detail dump`, whose response differs.
    pub key: Bytes,
}

/// SASL requests, which the node answers with its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sasl {
    ListMechs(Pending),
    /// `PLAIN` credentials (`[authzid] NUL authcid NUL password`), or `None` when the
    /// mechanism is another or the token is malformed.
    Auth {
        credentials: Option<(Bytes, Bytes)>,
        then: Pending,
    },
    /// SASL_STEP: PLAIN has no second step.
    Step(Pending),
}

/// What the node does with a binary request.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Run `Command` (as any text request) and answer [`respond`] with its reply.
    Run(Command, Pending),
    /// GET, GETQ, GETK or GETKQ of `key` (as it came, any bytes): memcached's plain get,
    /// answered by [`get_response`] from a single node's store, or routed by a cluster node
    /// as a text `gets` ([`gets_response`]) or [`get_command`]'s `mg`.
    Get {
        key: Bytes,
        pending: Pending,
    },
    /// Answer these bytes now (an invalid or unknown request).
    Answer(Bytes),
    /// Answer these bytes now, then run this delete (answered by nothing): a SET too large
    /// takes the key's old value away, as memcached does.
    Refuse(Bytes, Command),
    Sasl(Sasl),
}

/// Meta flags from `(letter, token)` pairs.
fn flags(list: Vec<(u8, Vec<u8>)>) -> MetaFlags {
    MetaFlags {
        items: list.into_iter().map(|(f, t)| (f, Bytes::from(t))).collect(),
    }
}

/// The delete of `key`'s old value after a SET too large (see [`Action::Refuse`]).
fn stale_delete(key: &Bytes) -> Command {
    let (key, base64) = meta_key(key);
    // `meta_key`'s base64 always decodes (to the key, never empty here); a no-op otherwise.
    crate::command::forget_stale(key, base64).unwrap_or(Command::MetaNoop)
}

/// The key as a meta command names it, and whether it went base64 (`b`): the text protocol
/// cannot carry spaces or control bytes.
fn meta_key(key: &Bytes) -> (Bytes, bool) {
    if text_safe_key(key) {
        (key.clone(), false)
    } else {
        (Bytes::from(crate::base64::encode(key)), true)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut n = [0; 8];
    n.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(n)
}

/// Turns a request into what the node does with it (pure; see the module docs).
pub fn action(req: Request, limits: &Limits) -> Action {
    use op::*;
    let pending = Pending {
        opcode: req.opcode,
        opaque: req.opaque,
        key: match req.opcode {
            GETK | GETKQ | GATK | GATKQ => req.key.clone(),
            STAT if &req.key[..] == b"detail dump" => req.key.clone(),
            _ => Bytes::new(),
        },
    };
    let invalid = || {
        Action::Answer(error_response(
            req.opcode,
            status::INVALID_ARGUMENTS,
            req.opaque,
        ))
    };
    // The shape every opcode expects: (extras lengths allowed, key required, value allowed).
    let (extras_ok, keyed, valued): (&[usize], bool, bool) = match req.opcode {
        GET | GETQ | GETK | GETKQ => (&[0], true, false),
        SET | SETQ | ADD | ADDQ | REPLACE | REPLACEQ => (&[8], true, true),
        APPEND | APPENDQ | PREPEND | PREPENDQ => (&[0], true, true),
        DELETE | DELETEQ => (&[0], true, false),
        INCREMENT | INCREMENTQ | DECREMENT | DECREMENTQ => (&[20], true, false),
        TOUCH | GAT | GATQ | GATK | GATKQ => (&[4], true, false),
        FLUSH | FLUSHQ => (&[0, 4], false, false),
        VERBOSITY => (&[4], false, false),
        QUIT | QUITQ | NOOP | VERSION | SASL_LIST_MECHS => (&[0], false, false),
        STAT => (&[0], false, false),
        SASL_AUTH | SASL_STEP => (&[0], true, true),
        _ => {
            return Action::Answer(error_response(
                req.opcode,
                status::UNKNOWN_COMMAND,
                req.opaque,
            ))
        }
    };
    let key_ok = if keyed {
        !req.key.is_empty() && req.key.len() <= limits.max_key_len
    } else {
        req.key.is_empty() || req.opcode == STAT
    };
    if req.data_type != 0
        || !extras_ok.contains(&req.extras.len())
        || !key_ok
        || (!valued && !req.value.is_empty())
    {
        return invalid();
    }
    // Set, add and replace carry the client flags first in their extras.
    let client_flags = if req.extras.len() == 8 {
        u32_at(&req.extras, 0)
    } else {
        0
    };
    if valued && !crate::item_fits(limits, req.key.len(), client_flags, req.value.len()) {
        let response = error_response(req.opcode, status::TOO_LARGE, req.opaque);
        if matches!(req.opcode, SET | SETQ) {
            return Action::Refuse(response, stale_delete(&req.key));
        }
        return Action::Answer(response);
    }
    // The STAT groups memcached's binary protocol serves (`process_bin_stat`, `get_stats`);
    // any other (`conns`, which only the text `stats` has, or a name the text could read
    // back as another) is memcached's answer to an unknown group.
    if req.opcode == STAT && !BINARY_STAT_GROUPS.contains(&&req.key[..]) {
        return Action::Answer(error_response(
            req.opcode,
            status::KEY_NOT_FOUND,
            req.opaque,
        ));
    }
    if plain_get(req.opcode) {
        return Action::Get {
            key: req.key,
            pending,
        };
    }
    let (key, b64) = meta_key(&req.key);
    let mut list: Vec<(u8, Vec<u8>)> = Vec::new();
    if b64 {
        list.push((b'b', Vec::new()));
    }
    let num = |n: u64| n.to_string().into_bytes();
    // A binary expiry is unsigned; the text it travels as reads a time as memcached's
    // `int32_t` (`parser::parse_exptime`), so one past that range (an absolute Unix time
    // after January 2038, far future either way) is given as the last time it holds.
    let time = |n: u32| i64::from(i32::try_from(n).unwrap_or(i32::MAX));
    let time_token = |n: u32| time(n).to_string().into_bytes();
    let x = &req.extras;
    let command = match req.opcode {
        // (The plain gets were given as `Action::Get` above.)
        GAT | GATQ | GATK | GATKQ => {
            list.extend([(b'v', vec![]), (b'f', vec![]), (b'c', vec![])]);
            list.push((b'T', time_token(u32_at(x, 0))));
            Command::MetaGet {
                key,
                flags: flags(list),
            }
        }
        TOUCH => {
            // As memcached, a touch answers the item's flags and CAS, not its value.
            list.extend([(b'f', vec![]), (b'c', vec![])]);
            list.push((b'T', time_token(u32_at(x, 0))));
            Command::MetaGet {
                key,
                flags: flags(list),
            }
        }
        SET | SETQ | ADD | ADDQ | REPLACE | REPLACEQ | APPEND | APPENDQ | PREPEND | PREPENDQ => {
            let mode = match req.opcode {
                SET | SETQ => b"S",
                ADD | ADDQ => b"E",
                REPLACE | REPLACEQ => b"R",
                APPEND | APPENDQ => b"A",
                _ => b"P",
            };
            list.push((b'M', mode.to_vec()));
            if !x.is_empty() {
                list.push((b'F', num(u64::from(u32_at(x, 0)))));
                list.push((b'T', time_token(u32_at(x, 4))));
            }
            if req.cas != 0 {
                list.push((b'C', num(req.cas)));
            }
            list.push((b'c', vec![]));
            Command::MetaSet {
                key,
                data: req.value,
                flags: flags(list),
            }
        }
        DELETE | DELETEQ => {
            if req.cas != 0 {
                list.push((b'C', num(req.cas)));
            }
            Command::MetaDelete {
                key,
                flags: flags(list),
            }
        }
        INCREMENT | INCREMENTQ | DECREMENT | DECREMENTQ => {
            let incr = matches!(req.opcode, INCREMENT | INCREMENTQ);
            list.push((b'M', if incr { b"I" } else { b"D" }.to_vec()));
            list.push((b'D', num(u64_at(x, 0))));
            // An expiry of all ones: no initial value, a missing key is not found.
            let exptime = u32_at(x, 16);
            if exptime != u32::MAX {
                list.push((b'J', num(u64_at(x, 8))));
                list.push((b'N', time_token(exptime)));
            }
            if req.cas != 0 {
                list.push((b'C', num(req.cas)));
            }
            list.extend([(b'v', vec![]), (b'c', vec![])]);
            Command::MetaArith {
                key,
                flags: flags(list),
            }
        }
        FLUSH | FLUSHQ => Command::FlushAll {
            // (Every node reads the delay again as text: `mc::tunnel_flush`.)
            delay: if x.is_empty() { 0 } else { time(u32_at(x, 0)) },
            noreply: false,
        },
        VERBOSITY => Command::Verbosity { noreply: false },
        NOOP => Command::MetaNoop,
        VERSION => Command::Version,
        QUIT | QUITQ => Command::Quit,
        STAT => Command::Stats {
            arg: (!req.key.is_empty()).then_some(req.key),
        },
        SASL_LIST_MECHS => return Action::Sasl(Sasl::ListMechs(pending)),
        SASL_STEP => return Action::Sasl(Sasl::Step(pending)),
        SASL_AUTH => {
            let credentials = (&req.key[..] == b"PLAIN")
                .then(|| {
                    let mut parts = req.value.split(|&b| b == 0);
                    let (_authzid, user, password) = (parts.next()?, parts.next()?, parts.next()?);
                    parts.next().is_none().then(|| {
                        (
                            Bytes::copy_from_slice(user),
                            Bytes::copy_from_slice(password),
                        )
                    })
                })
                .flatten();
            return Action::Sasl(Sasl::Auth {
                credentials,
                then: pending,
            });
        }
        _ => return invalid(),
    };
    Action::Run(command, pending)
}

/// GET, GETQ, GETK and GETKQ: a key's value, flags and CAS, and nothing else.
pub fn plain_get(opcode: u8) -> bool {
    matches!(opcode, op::GET | op::GETQ | op::GETK | op::GETKQ)
}

/// The meta command that does what the plain get of `key` ([`Action::Get`]) does, for a
/// request that a cluster's router places (it may travel as text): `mg <key> v f c`, with the
/// key in base64 when the text protocol cannot carry it.
pub fn get_command(key: &Bytes) -> Command {
    let (key, b64) = meta_key(key);
    let mut list: Vec<(u8, Vec<u8>)> = Vec::with_capacity(4);
    if b64 {
        list.push((b'b', Vec::new()));
    }
    list.extend([(b'v', vec![]), (b'f', vec![]), (b'c', vec![])]);
    Command::MetaGet {
        key,
        flags: flags(list),
    }
}

/// The response to the plain get `p` ([`Action::Get`]) or to a GAT: the item's client flags, CAS and
/// value when `found`; on a miss KEY_NOT_FOUND, or nothing from the quiet forms. GETK and
/// GETKQ carry the key (a miss's response carries it instead of a text).
pub fn get_response(p: &Pending, found: Option<(u32, u64, &[u8])>, out: &mut BytesMut) {
    match found {
        Some((flags, cas, value)) => put_response(
            out,
            p.opcode,
            status::NO_ERROR,
            p.opaque,
            cas,
            &flags.to_be_bytes(),
            &p.key,
            value,
        ),
        // (Also GATQ and GATKQ, whose hits `respond` answers here too.)
        None if matches!(p.opcode, op::GETQ | op::GETKQ | op::GATQ | op::GATKQ) => {}
        None => {
            let text = if p.key.is_empty() {
                status::text(status::KEY_NOT_FOUND).as_bytes()
            } else {
                &[]
            };
            put_response(
                out,
                p.opcode,
                status::KEY_NOT_FOUND,
                p.opaque,
                0,
                &[],
                &p.key,
                text,
            );
        }
    }
}

/// True when a text request can name `key` as it is (no space, control byte or DEL).
pub fn text_safe_key(key: &[u8]) -> bool {
    key.iter().all(|&b| b > b' ' && b != 0x7f)
}

/// The response to the plain get `p` of `key` from the reply of the text `gets <key>` it
/// was routed as (a cluster node's; [`text_safe_key`] keys only): its hit or miss, as
/// [`get_response`] gives them; a reply that is not a get reply (an error line) answered
/// as [`respond`] answers that line.
pub fn gets_response(p: &Pending, key: &[u8], reply: &[u8], out: &mut BytesMut) {
    let Some(blocks) = crate::reply::value_blocks(reply) else {
        return respond(p, reply, out);
    };
    let hit = match &blocks[..] {
        [] => None,
        [b] if reply[b.key.clone()] == *key => {
            // `VALUE <key> <flags> <bytes> <cas>\r\n<data>\r\n`
            let block = &reply[b.block.clone()];
            let line_end = block.windows(2).position(|w| w == b"\r\n");
            let hit = line_end.and_then(|end| {
                let mut fields = block[..end].split(|&b| b == b' ').skip(2);
                let mut number =
                    || -> Option<u64> { std::str::from_utf8(fields.next()?).ok()?.parse().ok() };
                let (flags, len, cas) = (number()?, number()?, number()?);
                let len = usize::try_from(len).ok()?;
                let data = block.get(end + 2..end.checked_add(2)?.checked_add(len)?)?;
                Some((u32::try_from(flags).ok()?, cas, data))
            });
            match hit {
                Some(hit) => Some(hit),
                None => return respond(p, b"SERVER_ERROR malformed get reply", out),
            }
        }
        _ => return respond(p, b"SERVER_ERROR get reply for another key", out),
    };
    get_response(p, hit, out);
}

/// The keys of the plain gets ([`plain_get`]) among the whole binary requests at the front
/// of `input`, into `out` (a pipeline's GETKQ ... NOOP): `(requests looked at, keys)`. Reads
/// only the buffer and allocates nothing; stops at anything that is not a whole binary
/// request, and passes over the other opcodes.
pub fn peek_get_keys<'a>(input: &'a [u8], out: &mut [&'a [u8]]) -> (usize, usize) {
    let (mut at, mut requests, mut keys) = (0, 0, 0);
    while requests < out.len() {
        let Some(h) = input.get(at..at + HEADER_LEN) else {
            break;
        };
        if h[0] != REQUEST_MAGIC {
            break;
        }
        let key_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
        let extras_len = usize::from(h[4]);
        let body = u32_at(h, 8) as usize;
        let Some(end) = (at + HEADER_LEN).checked_add(body) else {
            break;
        };
        if end > input.len() || key_len + extras_len > body {
            break;
        }
        if plain_get(h[1]) && key_len > 0 {
            let key_at = at + HEADER_LEN + extras_len;
            out[keys] = &input[key_at..key_at + key_len];
            keys += 1;
        }
        requests += 1;
        at = end;
    }
    (requests, keys)
}

/// Writes one response.
#[allow(clippy::too_many_arguments)]
fn put_response(
    out: &mut BytesMut,
    opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    out.reserve(HEADER_LEN + extras.len() + key.len() + value.len());
    out.put_u8(RESPONSE_MAGIC);
    out.put_u8(opcode);
    out.put_u16(key.len() as u16);
    out.put_u8(extras.len() as u8);
    out.put_u8(0);
    out.put_u16(status);
    out.put_u32((extras.len() + key.len() + value.len()) as u32);
    out.put_u32(opaque);
    out.put_u64(cas);
    out.put_slice(extras);
    out.put_slice(key);
    out.put_slice(value);
}

/// An error response: the status and memcached's text for it.
pub fn error_response(opcode: u8, status: u16, opaque: u32) -> Bytes {
    let mut out = BytesMut::new();
    put_response(
        &mut out,
        opcode,
        status,
        opaque,
        0,
        &[],
        &[],
        status::text(status).as_bytes(),
    );
    out.freeze()
}

/// A response to `p` with `status` and `value` (SASL's answers).
pub fn reply(p: &Pending, status: u16, value: &[u8], out: &mut BytesMut) {
    put_response(out, p.opcode, status, p.opaque, 0, &[], &[], value);
}

/// The error response for a reply line that is an error (`SERVER_ERROR ...`,
/// `CLIENT_ERROR ...`, `ERROR`), if it is one.
fn error_of(p: &Pending, line: &[u8], out: &mut BytesMut) -> bool {
    let (status, text) = if let Some(t) = line.strip_prefix(b"SERVER_ERROR ") {
        let status = if t.starts_with(b"out of memory") {
            status::OUT_OF_MEMORY
        } else if t.starts_with(b"object too large") {
            status::TOO_LARGE
        } else if t.windows(8).any(|w| w == b"TRYAGAIN") {
            status::TEMPORARY_FAILURE
        } else {
            status::INTERNAL_ERROR
        };
        (status, t)
    } else if let Some(t) = line.strip_prefix(b"CLIENT_ERROR ") {
        if t.starts_with(b"cannot increment or decrement") {
            // memcached's binary text for it.
            let text = status::text(status::NON_NUMERIC).as_bytes();
            (status::NON_NUMERIC, text)
        } else if t.starts_with(b"flush_all not allowed") {
            // memcached's binary answer to a disabled flush (`-F`).
            (
                status::AUTH_ERROR,
                status::text(status::AUTH_ERROR).as_bytes(),
            )
        } else {
            (status::INVALID_ARGUMENTS, t)
        }
    } else if line == b"ERROR" {
        (status::UNKNOWN_COMMAND, &b"Unknown command"[..])
    } else {
        return false;
    };
    put_response(out, p.opcode, status, p.opaque, 0, &[], &[], text);
    true
}

/// The return flag `f` of a meta reply line's tokens, as a number.
fn token(tokens: &[&[u8]], f: u8) -> u64 {
    tokens
        .iter()
        .find_map(|t| t.strip_prefix(&[f]))
        .and_then(|t| std::str::from_utf8(t).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Turns the reply of the command [`action`] made for `p` (the meta or text reply bytes)
/// into the binary response, in `out`. The quiet forms answer nothing on success (GETQ and
/// GETKQ nothing on a miss either); errors are always answered. A reply of an unexpected
/// shape answers an internal error, never a panic.
pub fn respond(p: &Pending, reply: &[u8], out: &mut BytesMut) {
    use op::*;
    let quiet = matches!(
        p.opcode,
        GETQ | GETKQ
            | GATQ
            | GATKQ
            | SETQ
            | ADDQ
            | REPLACEQ
            | APPENDQ
            | PREPENDQ
            | DELETEQ
            | INCREMENTQ
            | DECREMENTQ
            | FLUSHQ
            | QUITQ
    );
    let line_end = reply
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(reply.len());
    let line = &reply[..line_end];
    let rest = reply.get(line_end + 2..).unwrap_or(&[]);
    let ok = |out: &mut BytesMut, cas: u64, extras: &[u8], key: &[u8], value: &[u8]| {
        let s = status::NO_ERROR;
        put_response(out, p.opcode, s, p.opaque, cas, extras, key, value);
    };
    // memcached's error responses carry its text; a GETK miss carries the key instead.
    let fail = |out: &mut BytesMut, status: u16, key: &[u8]| {
        let text = if key.is_empty() {
            status::text(status).as_bytes()
        } else {
            &[]
        };
        put_response(out, p.opcode, status, p.opaque, 0, &[], key, text);
    };
    if p.opcode == STAT && (line == b"ERROR" || line.starts_with(b"CLIENT_ERROR")) {
        // An unknown stats group, or `detail` without on/off/dump (memcached: not found).
        return fail(out, status::KEY_NOT_FOUND, &[]);
    }
    if error_of(p, line, out) {
        return;
    }
    let tokens: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let code = tokens[0];
    // The return flags after the code (`VA` also has its length first).
    let flags_after = |n: usize| tokens.get(n..).unwrap_or(&[]);
    match p.opcode {
        GET | GETQ | GETK | GETKQ | GAT | GATQ | GATK | GATKQ => match code {
            b"VA" => {
                let Some(len) = tokens
                    .get(1)
                    .and_then(|t| std::str::from_utf8(t).ok()?.parse::<usize>().ok())
                    .filter(|&n| n <= rest.len())
                else {
                    return fail(out, status::INTERNAL_ERROR, &[]);
                };
                let flags = token(flags_after(2), b'f') as u32;
                let cas = token(flags_after(2), b'c');
                get_response(p, Some((flags, cas, &rest[..len])), out);
            }
            b"EN" => get_response(p, None, out),
            _ => fail(out, status::INTERNAL_ERROR, &[]),
        },
        // As memcached: a touch answers the item's flags and CAS, not its value.
        TOUCH => match code {
            b"HD" => {
                let flags = token(flags_after(1), b'f') as u32;
                ok(
                    out,
                    token(flags_after(1), b'c'),
                    &flags.to_be_bytes(),
                    &[],
                    &[],
                );
            }
            b"EN" => fail(out, status::KEY_NOT_FOUND, &[]),
            _ => fail(out, status::INTERNAL_ERROR, &[]),
        },
        SET | SETQ | ADD | ADDQ | REPLACE | REPLACEQ | APPEND | APPENDQ | PREPEND | PREPENDQ => {
            match code {
                b"HD" if quiet => {}
                b"HD" => ok(out, token(flags_after(1), b'c'), &[], &[], &[]),
                b"NS" => fail(
                    out,
                    match p.opcode {
                        ADD | ADDQ => status::KEY_EXISTS,
                        REPLACE | REPLACEQ => status::KEY_NOT_FOUND,
                        _ => status::NOT_STORED,
                    },
                    &[],
                ),
                b"EX" => fail(out, status::KEY_EXISTS, &[]),
                b"NF" => fail(out, status::KEY_NOT_FOUND, &[]),
                _ => fail(out, status::INTERNAL_ERROR, &[]),
            }
        }
        DELETE | DELETEQ => match code {
            b"HD" if quiet => {}
            b"HD" => ok(out, 0, &[], &[], &[]),
            b"NF" => fail(out, status::KEY_NOT_FOUND, &[]),
            b"EX" => fail(out, status::KEY_EXISTS, &[]),
            _ => fail(out, status::INTERNAL_ERROR, &[]),
        },
        INCREMENT | INCREMENTQ | DECREMENT | DECREMENTQ => match code {
            b"VA" if quiet => {}
            b"VA" => {
                let digits = rest
                    .windows(2)
                    .position(|w| w == b"\r\n")
                    .map_or(&[][..], |end| &rest[..end]);
                let Some(n) = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| d.parse::<u64>().ok())
                else {
                    return fail(out, status::INTERNAL_ERROR, &[]);
                };
                ok(out, token(flags_after(2), b'c'), &[], &[], &n.to_be_bytes());
            }
            b"NF" => fail(out, status::KEY_NOT_FOUND, &[]),
            b"EX" => fail(out, status::KEY_EXISTS, &[]),
            _ => fail(out, status::INTERNAL_ERROR, &[]),
        },
        FLUSH | FLUSHQ | VERBOSITY => match code {
            b"OK" if quiet => {}
            b"OK" => ok(out, 0, &[], &[], &[]),
            _ => fail(out, status::INTERNAL_ERROR, &[]),
        },
        NOOP | QUIT => ok(out, 0, &[], &[], &[]),
        QUITQ => {}
        VERSION => {
            let v = line.strip_prefix(b"VERSION ").unwrap_or(line);
            ok(out, 0, &[], &[], v);
        }
        // `stats detail dump`: the text dump as the value of one stat, as memcached sends it.
        STAT if &p.key[..] == b"detail dump" => {
            ok(out, 0, &[], b"detailed", reply);
            ok(out, 0, &[], &[], &[]);
        }
        STAT => {
            // One response per `STAT name value` line, then an empty one for END (`stats
            // detail on|off` answer OK: the empty one alone).
            for stat in reply.split(|&b| b == b'\n') {
                let stat = stat.strip_suffix(b"\r").unwrap_or(stat);
                if let Some(s) = stat.strip_prefix(b"STAT ") {
                    let (name, value) = match s.iter().position(|&b| b == b' ') {
                        Some(at) => (&s[..at], &s[at + 1..]),
                        None => (s, &[][..]),
                    };
                    ok(out, 0, &[], name, value);
                }
            }
            ok(out, 0, &[], &[], &[]);
        }
        _ => fail(out, status::UNKNOWN_COMMAND, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request frame.
    fn frame(opcode: u8, extras: &[u8], key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
        let mut r = vec![REQUEST_MAGIC, opcode];
        r.extend_from_slice(&(key.len() as u16).to_be_bytes());
        r.push(extras.len() as u8);
        r.extend_from_slice(&[0, 0, 0]);
        r.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
        r.extend_from_slice(&0xdead_beef_u32.to_be_bytes());
        r.extend_from_slice(&cas.to_be_bytes());
        r.extend_from_slice(extras);
        r.extend_from_slice(key);
        r.extend_from_slice(value);
        r
    }

    /// Incr/decr extras: delta, initial value, expiry.
    fn arith(delta: u64, initial: u64, exptime: u32) -> Vec<u8> {
        [
            &delta.to_be_bytes()[..],
            &initial.to_be_bytes(),
            &exptime.to_be_bytes(),
        ]
        .concat()
    }

    fn parsed(bytes: &[u8]) -> Request {
        let mut buf = BytesMut::from(bytes);
        let r = parse(&mut buf, &Limits::default()).unwrap().unwrap();
        assert!(buf.is_empty());
        r
    }

    /// The fields of one response.
    fn fields(out: &[u8]) -> (u8, u16, u64, Vec<u8>, Vec<u8>, Vec<u8>) {
        assert_eq!(out[0], RESPONSE_MAGIC);
        let key_len = usize::from(u16::from_be_bytes([out[2], out[3]]));
        let extras_len = usize::from(out[4]);
        let body = u32_at(out, 8) as usize;
        assert_eq!(out.len(), HEADER_LEN + body, "one whole response");
        assert_eq!(u32_at(out, 12), 0xdead_beef, "opaque echoed");
        let b = &out[HEADER_LEN..];
        (
            out[1],
            u16::from_be_bytes([out[6], out[7]]),
            u64_at(out, 16),
            b[..extras_len].to_vec(),
            b[extras_len..extras_len + key_len].to_vec(),
            b[extras_len + key_len..].to_vec(),
        )
    }

    /// The command a request runs as (a plain get: the `mg` it travels as).
    fn run(bytes: &[u8]) -> (Command, Pending) {
        match action(parsed(bytes), &Limits::default()) {
            Action::Run(c, p) => (c, p),
            Action::Get { key, pending } => (get_command(&key), pending),
            other => panic!("not a command: {other:?}"),
        }
    }

    fn text(c: &Command) -> String {
        let mut out = BytesMut::new();
        c.encode(&mut out);
        String::from_utf8(out.to_vec()).unwrap()
    }

    fn respond_to(p: &Pending, reply: &str) -> BytesMut {
        let mut out = BytesMut::new();
        respond(p, reply.as_bytes(), &mut out);
        out
    }

    #[test]
    fn the_first_byte_tells_binary_from_text() {
        assert_eq!(start(b""), Start::Text);
        assert_eq!(start(b"get k\r\n"), Start::Text);
        let req = frame(op::GET, &[], b"k", &[], 0);
        assert_eq!(start(&req[..1]), Start::Partial);
        assert_eq!(start(&req[..HEADER_LEN - 1]), Start::Partial);
        assert_eq!(start(&req), Start::Binary);
    }

    #[test]
    fn requests_are_read_whole_and_lengths_checked_first() {
        let req = frame(op::SET, &[0, 0, 0, 5, 0, 0, 0, 0], b"key", b"value", 7);
        let mut buf = BytesMut::new();
        for (i, &b) in req.iter().enumerate() {
            assert_eq!(parse(&mut buf, &Limits::default()), Ok(None), "byte {i}");
            buf.put_u8(b);
        }
        let r = parse(&mut buf, &Limits::default()).unwrap().unwrap();
        assert_eq!(
            (r.opcode, r.cas, &r.key[..], &r.value[..]),
            (op::SET, 7, &b"key"[..], &b"value"[..])
        );
        assert_eq!(&r.extras[..], &[0, 0, 0, 5, 0, 0, 0, 0]);
        // A body over the limit is refused from its header alone, to be skipped.
        let mut huge = frame(op::SET, &[0; 8], b"k", b"", 0);
        huge[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = parse(&mut BytesMut::from(&huge[..]), &Limits::default()).unwrap_err();
        assert_eq!(fields(&e.response).1, status::TOO_LARGE);
        assert_eq!(e.skip, Some(HEADER_LEN + u32::MAX as usize));
        // A SET's key names the old value to delete: until it has arrived, nothing is
        // decided; a GET too large names none.
        assert!(matches!(
            e.stale.as_deref(),
            Some(Command::Delete { key, noreply: true }) if key == "k"
        ));
        assert_eq!(
            parse(&mut BytesMut::from(&huge[..24]), &Limits::default()),
            Ok(None)
        );
        assert_eq!(
            parse(&mut BytesMut::from(&huge[..32]), &Limits::default()),
            Ok(None)
        );
        let e = parse(&mut BytesMut::from(&huge[..33]), &Limits::default()).unwrap_err();
        assert!(e.stale.is_some() && e.skip.is_some());
        let mut get = frame(op::GET, &[], b"k", b"", 0);
        get[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = parse(&mut BytesMut::from(&get[..24]), &Limits::default()).unwrap_err();
        assert_eq!((e.stale, e.skip.is_some()), (None, true));
        // Key and extras longer than the body: the framing is broken.
        let mut bad = frame(op::GET, &[], b"k", b"", 0);
        bad[2..4].copy_from_slice(&100u16.to_be_bytes());
        let e = parse(&mut BytesMut::from(&bad[..]), &Limits::default()).unwrap_err();
        assert_eq!(fields(&e.response).1, status::INVALID_ARGUMENTS);
        assert_eq!(e.skip, None);
        assert_eq!(wanted(&req), req.len());
        assert_eq!(wanted(&req[..10]), 0);
    }

    #[test]
    fn each_request_becomes_its_meta_command() {
        let exp = |e: u32| e.to_be_bytes();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (frame(op::GET, &[], b"k", &[], 0), "mg k v f c\r\n"),
            (frame(op::GETKQ, &[], b"k", &[], 0), "mg k v f c\r\n"),
            (frame(op::GAT, &exp(30), b"k", &[], 0), "mg k v f c T30\r\n"),
            (frame(op::TOUCH, &exp(30), b"k", &[], 0), "mg k f c T30\r\n"),
            (
                frame(op::SET, &[0, 0, 0, 9, 0, 0, 0, 60], b"k", b"v", 0),
                "ms k 1 MS F9 T60 c\r\nv\r\n",
            ),
            (
                frame(op::ADDQ, &[0; 8], b"k", b"v", 0),
                "ms k 1 ME F0 T0 c\r\nv\r\n",
            ),
            (
                frame(op::REPLACE, &[0; 8], b"k", b"v", 5),
                "ms k 1 MR F0 T0 C5 c\r\nv\r\n",
            ),
            (
                frame(op::APPEND, &[], b"k", b"v", 0),
                "ms k 1 MA c\r\nv\r\n",
            ),
            (
                frame(op::PREPENDQ, &[], b"k", b"v", 0),
                "ms k 1 MP c\r\nv\r\n",
            ),
            (frame(op::DELETE, &[], b"k", &[], 0), "md k\r\n"),
            (frame(op::DELETEQ, &[], b"k", &[], 3), "md k C3\r\n"),
            (
                frame(op::INCREMENT, &arith(2, 7, 0), b"k", &[], 0),
                "ma k MI D2 J7 N0 v c\r\n",
            ),
            (
                frame(op::DECREMENT, &arith(1, 0, u32::MAX), b"k", &[], 0),
                "ma k MD D1 v c\r\n",
            ),
            (frame(op::FLUSH, &[], b"", &[], 0), "flush_all 0\r\n"),
            (frame(op::FLUSHQ, &exp(5), b"", &[], 0), "flush_all 5\r\n"),
            (frame(op::NOOP, &[], b"", &[], 0), "mn\r\n"),
            (frame(op::VERSION, &[], b"", &[], 0), "version\r\n"),
            (frame(op::STAT, &[], b"", &[], 0), "stats\r\n"),
            (
                frame(op::STAT, &[], b"settings", &[], 0),
                "stats settings\r\n",
            ),
            (frame(op::QUIT, &[], b"", &[], 0), "quit\r\n"),
            // A key the text protocol cannot carry travels base64.
            (
                frame(op::GET, &[], b"a b\x01", &[], 0),
                "mg YSBiAQ== b v f c\r\n",
            ),
        ];
        for (req, want) in cases {
            let (cmd, p) = run(&req);
            assert_eq!(text(&cmd), want);
            assert_eq!(p.opaque, 0xdead_beef);
        }
    }

    #[test]
    fn a_translated_request_reads_back_whole_even_with_a_long_base64_key() {
        // 250 bytes with a space: the longest key, base64-encoded past the text key limit.
        let key: Vec<u8> = (0..250u8)
            .map(|i| if i == 7 { b' ' } else { b'a' + i % 26 })
            .collect();
        let (cmd, _) = run(&frame(op::SET, &[0; 8], &key, b"v", 0));
        let mut text = BytesMut::new();
        cmd.encode(&mut text);
        let mut parser = crate::Parser::new();
        let limits = text_limits(&Limits::default());
        assert_eq!(parser.parse(&mut text, &limits), Ok(Some(cmd)));
        assert!(text.is_empty());
    }

    #[test]
    fn a_stat_group_no_text_stats_could_name_is_not_found() {
        // Found by `translations_round_trip`: "stats \n" would read back as plain "stats".
        let limits = Limits::default();
        for key in [&b"\n"[..], b"a b", b"\x7f"] {
            let mut buf = BytesMut::from(&frame(op::STAT, &[], key, b"", 0)[..]);
            let parsed = parse(&mut buf, &limits).unwrap().unwrap();
            let Action::Answer(bytes) = action(parsed, &limits) else {
                panic!("{key:?} is answered at once");
            };
            assert_eq!(fields(&bytes).1, status::KEY_NOT_FOUND);
        }
    }

    proptest::proptest! {
        /// Any request of a known opcode with any key bytes: either answered at once, or a
        /// command whose text reads back whole and equal (as it travels in a cluster); and
        /// any reply to it becomes whole responses.
        #[test]
        fn translations_round_trip(
            opcode in proptest::sample::select(vec![
                op::GET, op::GETQ, op::GETK, op::GETKQ, op::SET, op::ADDQ, op::REPLACE,
                op::APPEND, op::PREPENDQ, op::DELETE, op::INCREMENT, op::DECREMENTQ, op::TOUCH,
                op::GAT, op::GATKQ, op::FLUSH, op::STAT, op::VERSION, op::NOOP,
            ]),
            key in proptest::collection::vec(proptest::num::u8::ANY, 0..260),
            value in proptest::collection::vec(proptest::num::u8::ANY, 0..40),
            extras in proptest::collection::vec(proptest::num::u8::ANY, 0..21),
            cas in proptest::num::u64::ANY,
        ) {
            let limits = Limits::default();
            let req = frame(opcode, &extras, &key, &value, cas);
            let mut buf = BytesMut::from(&req[..]);
            let parsed = parse(&mut buf, &limits).unwrap().unwrap();
            let run = match action(parsed, &limits) {
                // A plain get travels as its `mg` in a cluster.
                Action::Get { key, pending } => Some((get_command(&key), pending)),
                Action::Run(cmd, pending) => Some((cmd, pending)),
                Action::Answer(bytes) | Action::Refuse(bytes, _) => {
                    proptest::prop_assert_eq!(bytes[0], RESPONSE_MAGIC);
                    None
                }
                Action::Sasl(_) => {
                    proptest::prop_assert!(false, "no SASL opcode was sent");
                    None
                }
            };
            if let Some((cmd, pending)) = run {
                let mut text = BytesMut::new();
                cmd.encode(&mut text);
                let mut parser = crate::Parser::new();
                let back = parser.parse(&mut text, &text_limits(&limits));
                proptest::prop_assert_eq!(back, Ok(Some(cmd)));
                for reply in ["VA 2 f1 c2\r\nhi\r\n", "EN\r\n", "HD c1\r\n", "NS\r\n", "VA"] {
                    let out = respond_to(&pending, reply);
                    proptest::prop_assert!(out.is_empty() || out[0] == RESPONSE_MAGIC);
                }
            }
        }
    }

    #[test]
    fn malformed_and_unknown_requests_are_answered_not_run() {
        let limits = Limits::default();
        let status_of = |req: Vec<u8>| match action(parsed(&req), &limits) {
            Action::Answer(b) => fields(&b).1,
            // A SET too large also deletes the key's old value.
            Action::Refuse(b, Command::Delete { key, noreply: true }) if key == "k" => fields(&b).1,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            status_of(frame(0x55, &[], b"", &[], 0)),
            status::UNKNOWN_COMMAND
        );
        assert_eq!(
            status_of(frame(op::GET, &[], b"", &[], 0)),
            status::INVALID_ARGUMENTS
        );
        assert_eq!(
            status_of(frame(op::GET, &[], b"k", b"v", 0)),
            status::INVALID_ARGUMENTS
        );
        assert_eq!(
            status_of(frame(op::SET, &[0; 4], b"k", b"v", 0)),
            status::INVALID_ARGUMENTS
        );
        assert_eq!(
            status_of(frame(op::NOOP, &[], b"k", &[], 0)),
            status::INVALID_ARGUMENTS
        );
        let long = vec![b'k'; 251];
        assert_eq!(
            status_of(frame(op::GET, &[], &long, &[], 0)),
            status::INVALID_ARGUMENTS
        );
        let big = vec![b'v'; limits.max_item_size + 1];
        assert_eq!(
            status_of(frame(op::APPEND, &[], b"k", &big, 0)),
            status::TOO_LARGE
        );
        // As memcached counts an item: 1 MiB of data is too large with its key and header.
        let mib = vec![b'v'; 1024 * 1024];
        assert_eq!(
            status_of(frame(op::SET, &[0; 8], b"k", &mib, 0)),
            status::TOO_LARGE
        );
        let fits = vec![b'v'; 1024 * 1024 - 48 - 2 - 2 - 8];
        let runs = action(parsed(&frame(op::SET, &[0; 8], b"k", &fits, 0)), &limits);
        assert!(matches!(runs, Action::Run(Command::MetaSet { .. }, _)));
        assert_eq!(
            status_of(frame(op::SET, &[0, 0, 0, 1, 0, 0, 0, 0], b"k", &fits, 0)),
            status::TOO_LARGE,
            "four bytes of client flags"
        );
        // SASL goes to the node.
        let auth = frame(op::SASL_AUTH, &[], b"PLAIN", b"\0user\0pw", 0);
        match action(parsed(&auth), &limits) {
            Action::Sasl(Sasl::Auth { credentials, .. }) => {
                assert_eq!(credentials, Some((Bytes::from("user"), Bytes::from("pw"))));
            }
            other => panic!("{other:?}"),
        }
        let other = frame(op::SASL_AUTH, &[], b"CRAM-MD5", b"x", 0);
        assert!(matches!(
            action(parsed(&other), &limits),
            Action::Sasl(Sasl::Auth {
                credentials: None,
                ..
            })
        ));
    }

    #[test]
    fn meta_replies_become_binary_responses() {
        let p = |opcode: u8| Pending {
            opcode,
            opaque: 0xdead_beef,
            key: if matches!(opcode, op::GETK | op::GETKQ) {
                Bytes::from_static(b"k")
            } else {
                Bytes::new()
            },
        };
        let (o, s, cas, extras, key, value) =
            fields(&respond_to(&p(op::GETK), "VA 2 f9 c77\r\nhi\r\n"));
        assert_eq!((o, s, cas), (op::GETK, status::NO_ERROR, 77));
        assert_eq!(
            (extras, key, value),
            (9u32.to_be_bytes().to_vec(), b"k".to_vec(), b"hi".to_vec())
        );
        let (_, s, _, _, key, value) = fields(&respond_to(&p(op::GETK), "EN\r\n"));
        assert_eq!(
            (s, key, value),
            (status::KEY_NOT_FOUND, b"k".to_vec(), Vec::new())
        );
        let (_, s, _, _, _, value) = fields(&respond_to(&p(op::GET), "EN\r\n"));
        assert_eq!((s, value), (status::KEY_NOT_FOUND, b"Not found".to_vec()));
        let (_, s, cas, extras, _, value) = fields(&respond_to(&p(op::TOUCH), "HD f3 c8\r\n"));
        assert_eq!(
            (s, cas, extras, value),
            (0, 8, 3u32.to_be_bytes().to_vec(), Vec::new())
        );
        assert_eq!(
            fields(&respond_to(&p(op::STAT), "ERROR\r\n")).1,
            status::KEY_NOT_FOUND
        );
        // Replies of an unexpected shape answer an error, never panic.
        for bad in ["VA", "VA 9", "VA x f", "HD", "", "EN"] {
            for opcode in [
                op::GET,
                op::INCREMENT,
                op::TOUCH,
                op::SET,
                op::VERSION,
                op::STAT,
            ] {
                let out = respond_to(&p(opcode), bad);
                assert!(out.is_empty() || out[0] == RESPONSE_MAGIC);
            }
        }
        assert!(
            respond_to(&p(op::GETQ), "EN\r\n").is_empty(),
            "a quiet miss is silent"
        );
        let (_, s, cas, ..) = fields(&respond_to(&p(op::SET), "HD c42\r\n"));
        assert_eq!((s, cas), (status::NO_ERROR, 42));
        assert!(respond_to(&p(op::SETQ), "HD c42\r\n").is_empty());
        assert_eq!(
            fields(&respond_to(&p(op::ADD), "NS\r\n")).1,
            status::KEY_EXISTS
        );
        assert_eq!(
            fields(&respond_to(&p(op::REPLACE), "NS\r\n")).1,
            status::KEY_NOT_FOUND
        );
        assert_eq!(
            fields(&respond_to(&p(op::APPENDQ), "NS\r\n")).1,
            status::NOT_STORED
        );
        assert_eq!(
            fields(&respond_to(&p(op::SET), "EX\r\n")).1,
            status::KEY_EXISTS
        );
        assert_eq!(
            fields(&respond_to(&p(op::DELETE), "NF\r\n")).1,
            status::KEY_NOT_FOUND
        );
        let (_, s, cas, _, _, value) = fields(&respond_to(&p(op::INCREMENT), "VA 2 c5\r\n12\r\n"));
        assert_eq!(
            (s, cas, value),
            (status::NO_ERROR, 5, 12u64.to_be_bytes().to_vec())
        );
        let non_numeric = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
        assert_eq!(
            fields(&respond_to(&p(op::INCREMENTQ), non_numeric)).1,
            status::NON_NUMERIC
        );
        let oom = "SERVER_ERROR out of memory storing object\r\n";
        assert_eq!(
            fields(&respond_to(&p(op::SETQ), oom)).1,
            status::OUT_OF_MEMORY
        );
        let (_, s, _, _, _, value) = fields(&respond_to(&p(op::VERSION), "VERSION 1.6.21\r\n"));
        assert_eq!((s, value), (status::NO_ERROR, b"1.6.21".to_vec()));
        assert!(respond_to(&p(op::QUITQ), "").is_empty());
        assert_eq!(fields(&respond_to(&p(op::QUIT), "")).1, status::NO_ERROR);
        // STAT: one response per line, then an empty one.
        let out = respond_to(&p(op::STAT), "STAT pid 1\r\nSTAT version 1.6.21\r\nEND\r\n");
        let first = HEADER_LEN + u32_at(&out, 8) as usize;
        let (_, _, _, _, key, value) = fields(&out[..first]);
        assert_eq!((key, value), (b"pid".to_vec(), b"1".to_vec()));
        let second = first + HEADER_LEN + u32_at(&out, first + 8) as usize;
        let (_, _, _, _, key, _) = fields(&out[first..second]);
        assert_eq!(key, b"version".to_vec());
        let (_, _, _, _, key, value) = fields(&out[second..]);
        assert!(key.is_empty() && value.is_empty());
    }

    /// The key and pending response of a plain get request of `key`.
    fn plain_get_of(opcode: u8, key: &[u8]) -> (Bytes, Pending) {
        match action(parsed(&frame(opcode, &[], key, &[], 0)), &Limits::default()) {
            Action::Get { key, pending } => (key, pending),
            other => panic!("opcode {opcode:#x} is a plain get: {other:?}"),
        }
    }

    /// A plain get is answered from the item itself, as its `mg` reply would be.
    #[test]
    fn plain_gets_are_answered_from_the_item() {
        for opcode in [op::GET, op::GETQ, op::GETK, op::GETKQ] {
            let (key, pending) = plain_get_of(opcode, b"k");
            assert_eq!(&key[..], b"k");
            let mut out = BytesMut::new();
            get_response(&pending, Some((9, 77, b"hi")), &mut out);
            assert_eq!(out, respond_to(&pending, "VA 2 f9 c77\r\nhi\r\n"));
            let (o, s, cas, extras, shown, value) = fields(&out);
            assert_eq!((o, s, cas, &value[..]), (opcode, 0, 77, &b"hi"[..]));
            assert_eq!(extras, 9u32.to_be_bytes());
            let keyed = matches!(opcode, op::GETK | op::GETKQ);
            assert_eq!(shown, if keyed { &b"k"[..] } else { b"" });
            let mut miss = BytesMut::new();
            get_response(&pending, None, &mut miss);
            assert_eq!(miss, respond_to(&pending, "EN\r\n"));
            let quiet = matches!(opcode, op::GETQ | op::GETKQ);
            assert_eq!(miss.is_empty(), quiet, "opcode {opcode:#x}");
        }
        // Any key bytes; in a cluster it travels in base64.
        let (key, _) = plain_get_of(op::GETKQ, b"a b\x01");
        assert_eq!(&key[..], b"a b\x01");
        assert_eq!(text(&get_command(&key)), "mg YSBiAQ== b v f c\r\n");
    }

    /// The look-ahead gives the plain gets' keys of the whole requests at the front, in
    /// order, passes over other opcodes, and stops at a request not all in.
    #[test]
    fn the_look_ahead_reads_whole_requests_only() {
        let mut input = Vec::new();
        input.extend(frame(op::GETKQ, &[], b"a", &[], 0));
        input.extend(frame(op::SET, &[0; 8], b"s", b"v", 0));
        input.extend(frame(op::GETQ, &[], b"bb", &[], 0));
        input.extend(frame(op::NOOP, &[], b"", &[], 0));
        let whole = input.len();
        input.extend(frame(op::GET, &[], b"ccc", &[], 0));
        let mut keys: [&[u8]; 16] = [&[]; 16];
        assert_eq!(peek_get_keys(&input, &mut keys), (5, 3));
        assert_eq!(keys[..3], [&b"a"[..], b"bb", b"ccc"]);
        assert_eq!(peek_get_keys(&input[..input.len() - 1], &mut keys), (4, 2));
        assert_eq!(peek_get_keys(&input[..whole + 23], &mut keys), (4, 2));
        let mut two: [&[u8]; 2] = [&[]; 2];
        assert_eq!(peek_get_keys(&input, &mut two), (2, 1));
        assert_eq!(peek_get_keys(b"get a\r\n", &mut keys), (0, 0));
        // A header whose key and extras overrun its body: no request to look at.
        let mut bad = frame(op::GET, &[], b"key", &[], 0);
        bad[11] = 1;
        assert_eq!(peek_get_keys(&bad, &mut keys), (0, 0));
    }

    /// A plain get routed as a text `gets` of its key is answered from that reply as from
    /// the item; an error line or a reply for another key answers an error.
    #[test]
    fn a_plain_get_is_answered_from_its_gets_reply() {
        for opcode in [op::GET, op::GETQ, op::GETK, op::GETKQ] {
            let (key, pending) = plain_get_of(opcode, b"k");
            let answer = |reply: &[u8]| {
                let mut out = BytesMut::new();
                gets_response(&pending, &key, reply, &mut out);
                out
            };
            let mut hit = BytesMut::new();
            get_response(&pending, Some((5, 77, b"hi")), &mut hit);
            assert_eq!(answer(b"VALUE k 5 2 77\r\nhi\r\nEND\r\n"), hit);
            let mut miss = BytesMut::new();
            get_response(&pending, None, &mut miss);
            assert_eq!(answer(b"END\r\n"), miss);
            for bad in [
                &b"SERVER_ERROR out of memory storing object\r\n"[..],
                b"VALUE other 5 2 77\r\nhi\r\nEND\r\n",
                b"VALUE k 5 2\r\nhi\r\nEND\r\n",
                b"VALUE k 5 2 77\r\nhi\r\nVALUE k 5 2 77\r\nhi\r\nEND\r\n",
                b"",
            ] {
                let (o, s, ..) = fields(&answer(bad));
                assert_eq!(o, opcode);
                assert_ne!(s, status::NO_ERROR, "{:?}", String::from_utf8_lossy(bad));
                assert_ne!(
                    s,
                    status::KEY_NOT_FOUND,
                    "{:?}",
                    String::from_utf8_lossy(bad)
                );
            }
        }
        // The `gets` a cluster node routes reads back whole and equal.
        let gets = Command::Get {
            keys: vec![Bytes::from_static(b"k:1")],
            with_cas: true,
            touch: None,
        };
        assert_eq!(text(&gets), "gets k:1\r\n");
        let mut wire = BytesMut::from(text(&gets).as_bytes());
        let limits = text_limits(&Limits::default());
        assert_eq!(
            crate::Parser::new().parse(&mut wire, &limits),
            Ok(Some(gets))
        );
        assert!(text_safe_key(b"k:1"));
        assert!(!text_safe_key(b"a b") && !text_safe_key(b"a\x01") && !text_safe_key(b"\x7f"));
    }
}
