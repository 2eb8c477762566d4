//! The blocking commands' shared argument rules: the timeout (where it is, how Redis reads
//! it) and the keys a command waits on. The registry of waiting clients is
//! `crate::blocking`.

use bytes::Bytes;
use shoal_resp::Reply;

use super::CommandSpec;

/// The keys a blocking command waits on, as stored for database `db`: the source of BLMOVE
/// and BRPOPLPUSH (not the destination), every key of the others.
pub fn waited_keys(spec: &CommandSpec, args: &[Bytes], db: u8) -> Vec<Bytes> {
    match spec.name {
        "blmove" | "brpoplpush" => vec![shoal_store::stored_key(db, &args[1])],
        _ => super::db::stored_keys(spec, args, db),
    }
}

/// Where a blocking command's timeout is: first for BLMPOP and BZMPOP, BLOCK's argument
/// for XREAD and XREADGROUP (`None` without BLOCK: they do not block then), last for the
/// rest.
pub fn timeout_at(spec: &CommandSpec, args: &[Bytes]) -> Option<usize> {
    match spec.name {
        "blmpop" | "bzmpop" => Some(1),
        "xread" | "xreadgroup" => block_at(args),
        _ => Some(args.len() - 1),
    }
}

/// Whether the command reads streams (XREAD, XREADGROUP): a wake-up that gave one waiter
/// nothing may still serve the ones behind it.
pub fn waits_on_streams(spec: &CommandSpec) -> bool {
    in_ms(spec)
}

/// XREAD's and XREADGROUP's BLOCK argument before STREAMS: the last one, as Redis reads
/// its options.
fn block_at(args: &[Bytes]) -> Option<usize> {
    let mut at = None;
    let mut i = 1;
    while i + 1 < args.len() {
        let a = &args[i][..];
        if super::is(a, "BLOCK") {
            at = Some(i + 1);
            i += 2;
        } else if super::is(a, "STREAMS") {
            break;
        } else if super::is(a, "COUNT") {
            i += 2;
        } else if super::is(a, "GROUP") {
            i += 3;
        } else if super::is(a, "NOACK") {
            i += 1;
        } else {
            break;
        }
    }
    at
}

/// XREAD or XREADGROUP without its BLOCK option (what it does inside a transaction, where
/// nothing blocks); `None` for the other commands, or without BLOCK.
pub fn without_block(spec: &CommandSpec, args: &[Bytes]) -> Option<Vec<Bytes>> {
    if !in_ms(spec) {
        return None;
    }
    block_at(args)?;
    // Every BLOCK pair before STREAMS goes.
    let mut out = vec![args[0].clone()];
    let mut i = 1;
    while i < args.len() {
        let a = &args[i][..];
        if super::is(a, "STREAMS") {
            out.extend_from_slice(&args[i..]);
            break;
        }
        let take = if super::is(a, "GROUP") {
            3
        } else if super::is(a, "BLOCK") || super::is(a, "COUNT") {
            2
        } else {
            1
        };
        let end = (i + take).min(args.len());
        if !super::is(a, "BLOCK") {
            out.extend_from_slice(&args[i..end]);
        }
        i = end;
    }
    Some(out)
}

/// Whether the timeout is in milliseconds (XREAD's BLOCK) rather than seconds.
fn in_ms(spec: &CommandSpec) -> bool {
    matches!(spec.name, "xread" | "xreadgroup")
}

/// A blocking command's deadline (see [`parse_timeout`]) and timeout reply (a null array,
/// for every blocking command, as Redis), read from its arguments without running it; an
/// error also for XREAD without BLOCK (it answers at once).
pub fn timeout_of(
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Result<(Option<u64>, Reply), Reply> {
    let at = timeout_at(spec, args).ok_or_else(|| Reply::error("ERR syntax error"))?;
    let deadline = if in_ms(spec) {
        parse_timeout_ms(&args[at], now_ms)?
    } else {
        parse_timeout(&args[at], now_ms)?
    };
    Ok((deadline, Reply::NilArray))
}

/// `args` with its timeout set to `ms` milliseconds (at least one: 0 waits for ever), in the
/// unit the command reads (seconds to the millisecond, or XREAD's milliseconds).
pub fn with_timeout(spec: &CommandSpec, args: &[Bytes], ms: u128) -> Vec<Bytes> {
    let mut out = args.to_vec();
    let ms = ms.max(1);
    if let Some(at) = timeout_at(spec, args) {
        out[at] = if in_ms(spec) {
            Bytes::from(ms.to_string())
        } else {
            Bytes::from(format!("{}.{:03}", ms / 1000, ms % 1000))
        };
    }
    out
}

/// A blocking command's timeout argument, as Redis 7.0 reads it (seconds, a float, rounded
/// up to whole milliseconds, so 0.0001 waits 1 ms): the deadline in Unix ms from `now_ms`,
/// `None` for 0 (no timeout), or Redis's error (an infinite or huge timeout overflows into
/// "negative" there).
pub fn parse_timeout(arg: &[u8], now_ms: u64) -> Result<Option<u64>, Reply> {
    let secs = super::parse_f64(arg)
        .filter(|s| !s.is_nan())
        .ok_or_else(|| Reply::error("ERR timeout is not a float or out of range"))?;
    let ms = (secs * 1000.0).ceil();
    if !(0.0..9_223_372_036_854_775_808.0).contains(&ms) {
        return Err(Reply::error("ERR timeout is negative"));
    }
    let ms = ms as u64;
    if ms > (i64::MAX as u64).saturating_sub(now_ms) {
        return Err(Reply::error("ERR timeout is out of range"));
    }
    Ok((ms > 0).then(|| now_ms + ms))
}

/// XREAD's and XREADGROUP's BLOCK argument, as Redis reads it (whole milliseconds): the
/// deadline in Unix ms from `now_ms`, `None` for 0 (no timeout), or Redis's error.
pub fn parse_timeout_ms(arg: &[u8], now_ms: u64) -> Result<Option<u64>, Reply> {
    let ms = super::parse_i64(arg)
        .ok_or_else(|| Reply::error("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    let ms = ms as u64;
    if ms > (i64::MAX as u64).saturating_sub(now_ms) {
        return Err(Reply::error("ERR timeout is out of range"));
    }
    Ok((ms > 0).then(|| now_ms + ms))
}

/// The command that puts back what a blocking pop took, read from its reply: for a wait
/// forwarded to another node whose client went away before the popped reply came back (the
/// node that forwarded it runs this, so the elements are not lost, as in Redis, where a
/// client that is gone pops nothing). LPUSH or RPUSH for BLPOP, BRPOP and BLMPOP (the
/// elements back at the end they left, in their order), `ZADD NX` for BZPOPMIN, BZPOPMAX
/// and BZMPOP (a member written again meanwhile keeps its new score). `None` for a reply
/// that popped nothing (a timeout, an error) and for the commands that lose nothing:
/// BLMOVE and BRPOPLPUSH moved the element, XREADGROUP keeps its entries pending, XREAD
/// takes nothing.
pub fn undo_pop(spec: &CommandSpec, args: &[Bytes], reply: &[u8]) -> Option<Vec<Bytes>> {
    fn items(buf: &[u8]) -> Option<Vec<&[u8]>> {
        let ranges = shoal_resp::array_elements(buf).ok()?;
        Some(ranges.into_iter().map(|r| &buf[r]).collect())
    }
    fn text(buf: &[u8]) -> Option<Bytes> {
        shoal_resp::string_value(buf).map(Bytes::copy_from_slice)
    }
    let top = items(reply)?;
    let mut out = Vec::new();
    match (spec.name, &top[..]) {
        (name @ ("blpop" | "brpop"), [key, element]) => {
            let push = if name == "blpop" { "LPUSH" } else { "RPUSH" };
            out.extend([
                Bytes::from_static(push.as_bytes()),
                text(key)?,
                text(element)?,
            ]);
        }
        ("blmpop", [key, elements]) => {
            // BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
            let numkeys: usize = std::str::from_utf8(args.get(2)?).ok()?.parse().ok()?;
            let side = args.get(3usize.checked_add(numkeys)?)?;
            let push = if side.eq_ignore_ascii_case(b"left") {
                "LPUSH"
            } else {
                "RPUSH"
            };
            let elements = items(elements)?;
            if elements.is_empty() {
                return None;
            }
            out.extend([Bytes::from_static(push.as_bytes()), text(key)?]);
            // The first popped was at the very end: pushed last, it is there again.
            for element in elements.iter().rev() {
                out.push(text(element)?);
            }
        }
        ("bzpopmin" | "bzpopmax", [key, member, score]) => {
            out.extend([
                Bytes::from_static(b"ZADD"),
                text(key)?,
                Bytes::from_static(b"NX"),
            ]);
            out.extend([text(score)?, text(member)?]);
        }
        ("bzmpop", [key, pairs]) => {
            let pairs = items(pairs)?;
            if pairs.is_empty() {
                return None;
            }
            out.extend([
                Bytes::from_static(b"ZADD"),
                text(key)?,
                Bytes::from_static(b"NX"),
            ]);
            for pair in pairs {
                let [member, score] = items(pair)?[..] else {
                    return None;
                };
                out.extend([text(score)?, text(member)?]);
            }
        }
        _ => return None,
    }
    Some(out)
}

/// How many replicas a WAIT (or WAITAOF) `args` asks for, and its answer once `acked` have
/// the writes: for the command itself and for the layer above, which counts again while it
/// waits (a member that comes back ends it before its timeout).
pub fn replicas_wanted(args: &[Bytes]) -> (i64, fn(i64) -> Reply) {
    if args[0].eq_ignore_ascii_case(b"waitaof") {
        let wanted = args.get(2).and_then(|a| super::parse_i64(a)).unwrap_or(0);
        (wanted, |n| Reply::Array(vec![Reply::Int(0), Reply::Int(n)]))
    } else {
        let wanted = args.get(1).and_then(|a| super::parse_i64(a)).unwrap_or(0);
        (wanted, Reply::Int)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn undo(args: &str, reply: &[u8]) -> Option<String> {
        let args: Vec<Bytes> = args
            .split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect();
        let spec = super::super::lookup(&args[0]).expect("a command");
        undo_pop(spec, &args, reply).map(|cmd| {
            let words: Vec<String> = cmd
                .iter()
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words.join(" ")
        })
    }

    #[test]
    fn a_pop_for_a_client_that_went_away_is_put_back() {
        let pair = b"*2\r\n$1\r\nq\r\n$3\r\nmsg\r\n";
        assert_eq!(undo("BLPOP q r 1", pair).as_deref(), Some("LPUSH q msg"));
        assert_eq!(undo("BRPOP q r 1", pair).as_deref(), Some("RPUSH q msg"));
        let many = b"*2\r\n$1\r\nq\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n";
        assert_eq!(
            undo("BLMPOP 1 2 p q LEFT COUNT 3", many).as_deref(),
            Some("LPUSH q c b a"),
            "a was at the head: pushed last"
        );
        assert_eq!(
            undo("BLMPOP 1 1 q right COUNT 3", many).as_deref(),
            Some("RPUSH q c b a")
        );
        // RESP2's score is a bulk string, RESP3's a double.
        let popped = b"*3\r\n$1\r\nz\r\n$1\r\nm\r\n$3\r\n1.5\r\n";
        assert_eq!(
            undo("BZPOPMIN z 1", popped).as_deref(),
            Some("ZADD z NX 1.5 m")
        );
        let popped = b"*3\r\n$1\r\nz\r\n$1\r\nm\r\n,-inf\r\n";
        assert_eq!(
            undo("BZPOPMAX z 1", popped).as_deref(),
            Some("ZADD z NX -inf m")
        );
        let popped = b"*2\r\n$1\r\nz\r\n*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2\r\n";
        assert_eq!(
            undo("BZMPOP 1 1 z MIN COUNT 2", popped).as_deref(),
            Some("ZADD z NX 1 a 2 b")
        );
    }

    #[test]
    fn nothing_is_put_back_when_nothing_was_lost() {
        // Timeouts (RESP2 and RESP3 nulls), errors, and the commands that lose nothing.
        for reply in [&b"*-1\r\n"[..], b"_\r\n", b"-WRONGTYPE x\r\n", b"$-1\r\n"] {
            assert_eq!(undo("BLPOP q 1", reply), None);
            assert_eq!(undo("BZMPOP 1 1 z MIN", reply), None);
        }
        assert_eq!(undo("BLMOVE a b LEFT RIGHT 1", b"$1\r\nx\r\n"), None);
        assert_eq!(undo("BRPOPLPUSH a b 1", b"$1\r\nx\r\n"), None);
        let entries = b"*1\r\n*2\r\n$1\r\ns\r\n*0\r\n";
        assert_eq!(
            undo("XREADGROUP GROUP g c BLOCK 1 STREAMS s >", entries),
            None
        );
        // A reply of an unexpected shape: nothing.
        assert_eq!(undo("BLPOP q 1", b"*1\r\n$1\r\nq\r\n"), None);
        assert_eq!(undo("BLMPOP 1 1 q LEFT", b"*2\r\n$1\r\nq\r\n*0\r\n"), None);
    }

    #[test]
    fn timeouts_read_as_redis_reads_them() {
        assert_eq!(parse_timeout(b"0", 1000).unwrap(), None);
        assert_eq!(parse_timeout(b"1.5", 1000).unwrap(), Some(2500));
        assert_eq!(
            parse_timeout(b"0.0001", 1000).unwrap(),
            Some(1001),
            "rounded up"
        );
        assert_eq!(parse_timeout(b"0.0019", 1000).unwrap(), Some(1002));
        assert_eq!(parse_timeout(b"-0.0001", 1000).unwrap(), None, "-0 ms is 0");
        let text = |r: Result<Option<u64>, Reply>| match r {
            Err(Reply::Error(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            text(parse_timeout(b"x", 0)),
            "ERR timeout is not a float or out of range"
        );
        assert_eq!(text(parse_timeout(b"-1", 0)), "ERR timeout is negative");
        assert_eq!(text(parse_timeout(b"1e300", 0)), "ERR timeout is negative");
        assert_eq!(text(parse_timeout(b"inf", 0)), "ERR timeout is negative");
        assert_eq!(
            text(parse_timeout(b"nan", 0)),
            "ERR timeout is not a float or out of range"
        );
        assert_eq!(
            text(parse_timeout(b"1000", i64::MAX as u64 - 10)),
            "ERR timeout is out of range"
        );
    }
}
