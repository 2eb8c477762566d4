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

/// Where a blocking command's timeout is: first for BLMPOP and BZMPOP, last for the rest.
pub fn timeout_at(spec: &CommandSpec, args: &[Bytes]) -> usize {
    match spec.name {
        "blmpop" | "bzmpop" => 1,
        _ => args.len() - 1,
    }
}

/// A blocking command's deadline (see [`parse_timeout`]) and timeout reply (a null array,
/// for every blocking command, as Redis), read from its arguments without running it.
pub fn timeout_of(
    spec: &CommandSpec,
    args: &[Bytes],
    now_ms: u64,
) -> Result<(Option<u64>, Reply), Reply> {
    let deadline = parse_timeout(&args[timeout_at(spec, args)], now_ms)?;
    Ok((deadline, Reply::NilArray))
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
    if ms > i64::MAX as u64 - now_ms {
        return Err(Reply::error("ERR timeout is out of range"));
    }
    Ok((ms > 0).then(|| now_ms + ms))
}

#[cfg(test)]
mod tests {
    use super::*;

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
