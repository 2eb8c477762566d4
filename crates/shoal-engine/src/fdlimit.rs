//! `maxclients` against the open-files limit, as Redis's `adjustOpenFilesLimit`: raise the
//! soft `RLIMIT_NOFILE` towards what `maxclients` needs (never above the hard limit), and
//! lower `maxclients` to what the limit allows when it cannot be raised far enough, so a
//! client past the limit gets "max number of clients reached" instead of hanging in the
//! accept queue.

/// Descriptors kept for listeners, cluster links, the gossip socket and logs (Redis's
/// `CONFIG_MIN_RESERVED_FDS`).
pub const RESERVED_FDS: u64 = 32;

/// The outcome of fitting `maxclients` to the open-files limit.
#[derive(Debug, PartialEq, Eq)]
pub struct Fit {
    /// The `maxclients` that fits.
    pub maxclients: usize,
    /// The soft limit now in force (after any raise).
    pub soft: u64,
    /// The hard limit.
    pub hard: u64,
}

/// Why `maxclients` cannot be served at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FdLimitError {
    #[error("the open-files limit ({0}) leaves no room for clients; raise 'ulimit -n'")]
    TooLow(u64),
}

/// The soft limit to ask for, and the `maxclients` that fits a given soft limit (pure).
pub fn wanted_soft(maxclients: usize, hard: u64) -> u64 {
    (maxclients as u64).saturating_add(RESERVED_FDS).min(hard)
}

/// `maxclients` that fits `soft` open files.
pub fn clients_for(maxclients: usize, soft: u64) -> Result<usize, FdLimitError> {
    let room = soft
        .checked_sub(RESERVED_FDS)
        .filter(|&n| n > 0)
        .ok_or(FdLimitError::TooLow(soft))?;
    Ok(maxclients.min(usize::try_from(room).unwrap_or(usize::MAX)))
}

/// Raises the soft open-files limit towards `maxclients` + [`RESERVED_FDS`] and returns
/// the `maxclients` that fits. Where the limit cannot be read, `maxclients` is kept.
pub fn fit(maxclients: usize) -> Result<Fit, FdLimitError> {
    let Ok((soft, hard)) = rlimit::Resource::NOFILE.get() else {
        return Ok(Fit {
            maxclients,
            soft: u64::MAX,
            hard: u64::MAX,
        });
    };
    let want = wanted_soft(maxclients, hard);
    let soft = if want > soft && rlimit::Resource::NOFILE.set(want, hard).is_ok() {
        want
    } else {
        soft
    };
    Ok(Fit {
        maxclients: clients_for(maxclients, soft)?,
        soft,
        hard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maxclients_fits_the_limit_like_redis() {
        // ulimit -n 1024 (soft = hard): Redis reduces maxclients 10000 to 992.
        assert_eq!(wanted_soft(10_000, 1024), 1024);
        assert_eq!(clients_for(10_000, 1024), Ok(992));
        // A high hard limit: the soft one is raised to maxclients + 32.
        assert_eq!(wanted_soft(10_000, 1 << 20), 10_032);
        assert_eq!(clients_for(10_000, 10_032), Ok(10_000));
        assert_eq!(clients_for(10, 1 << 20), Ok(10));
        assert_eq!(clients_for(10_000, 32), Err(FdLimitError::TooLow(32)));
        assert_eq!(clients_for(10_000, 0), Err(FdLimitError::TooLow(0)));
        assert_eq!(wanted_soft(usize::MAX, u64::MAX), u64::MAX);
    }
}
