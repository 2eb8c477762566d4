//! Client histories and their checker: pure functions over what the clients did and saw.
//!
//! Every write value is unique (`c<client>-<seq>`), so a value read names the write that
//! produced it. A write's outcome is acknowledged (`Ok`) or unknown: an error reply (a
//! TRYAGAIN or CLUSTERDOWN can follow a first attempt that ran on a copy that then did not
//! answer), or no reply at all. An unknown write may have run; if it did, it ran before its
//! error reply came, or within [`UNKNOWN_SPAN`] of being sent when none came (the nodes give
//! up a forwarded request at its deadline). The rules:
//! - a register (SET/DEL) key, read after the faults healed, holds the value of a write
//!   that no acknowledged write of the key began after it ended (an acknowledged write is
//!   never lost to an older one; nothing deleted comes back);
//! - a client reads its own acknowledged writes: a GET returns its own last acknowledged
//!   write of the key before it, or a write that had not ended when that one began;
//! - a counter's acknowledged INCRs answered distinct values (two INCRs answering the same
//!   value means one was lost to the other), an INCR acknowledged before another began
//!   answered less, and the final value lies between the highest acknowledged answer and
//!   the number of INCRs sent (above it, an INCR ran twice: counted apart);
//! - a log key (APPENDs of unique tokens) holds, after the faults healed, every token of an
//!   acknowledged APPEND, no token that was never sent, and each token once (twice: an
//!   APPEND ran twice, counted apart as for INCR). Its copies agreeing (the caller checks
//!   every key's copies) covers the writes that replicate as deltas.

use std::collections::{BTreeMap, BTreeSet};

/// One operation a client sent.
#[derive(Debug, Clone)]
pub struct Op {
    pub client: usize,
    pub kind: Kind,
    /// Simulated time (µs) when it was sent and when its reply came (`None`: no reply).
    pub invoked: u64,
    pub completed: Option<u64>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Set { key: String, value: String },
    Del { key: String },
    Get { key: String },
    Incr { key: String },
    Append { key: String, token: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged: OK, the DEL count, the INCR's value, or the GET's value.
    Ok(Option<String>),
    /// No reply, or an error reply: it may have run.
    Unknown,
}

/// How long after it was sent a write without a reply may still run (µs): the client's
/// timeout is 3 s and a node runs a forwarded command only before its deadline
/// (`cluster-timeout-ms`, 1 s, per copy tried).
pub const UNKNOWN_SPAN: u64 = 10_000_000;

impl Op {
    fn acked(&self) -> bool {
        matches!(self.outcome, Outcome::Ok(_))
    }

    /// When it ended for the checker: its reply, or [`UNKNOWN_SPAN`] after it was sent.
    fn end(&self) -> u64 {
        self.completed
            .unwrap_or(self.invoked.saturating_add(UNKNOWN_SPAN))
    }
}

/// What the checker found wrong; empty when the history is correct.
#[derive(Debug, Default)]
pub struct Report {
    /// Acknowledged writes lost or not read back, deleted keys back, nodes that disagree.
    pub problems: Vec<String>,
    /// Counters that ended above the number of INCRs sent: an INCR ran twice (its first
    /// run's reply was lost with a crashed owner and the sender ran it again at the next
    /// copy, which had it replicated already). Nothing acknowledged is lost by it.
    pub applied_twice: Vec<String>,
    pub ops: usize,
    /// Requests without a reply or with an error reply (TRYAGAIN, NOREPLICAS, ...).
    pub unknown: usize,
    pub acked_writes: usize,
    pub reads_checked: usize,
    pub keys_checked: usize,
}

/// A write of a register key: its value (`None` for DEL) and its span.
#[derive(Debug, Clone)]
struct Write {
    value: Option<String>,
    invoked: u64,
    end: u64,
    acked: bool,
    client: usize,
}

fn register_writes(ops: &[Op]) -> BTreeMap<&str, Vec<Write>> {
    let mut by_key: BTreeMap<&str, Vec<Write>> = BTreeMap::new();
    for op in ops {
        let (key, value) = match &op.kind {
            Kind::Set { key, value } => (key.as_str(), Some(value.clone())),
            Kind::Del { key } => (key.as_str(), None),
            _ => continue,
        };
        by_key.entry(key).or_default().push(Write {
            value,
            invoked: op.invoked,
            end: op.end(),
            acked: op.acked(),
            client: op.client,
        });
    }
    by_key
}

/// Whether `w` may be the key's state after every write in `writes`: no acknowledged write
/// began after `w` ended.
fn may_be_last(w: &Write, writes: &[Write]) -> bool {
    !writes.iter().any(|o| o.acked && o.invoked > w.end)
}

/// The initial state (absent) as a write that ended at time 0.
fn initial() -> Write {
    Write {
        value: None,
        invoked: 0,
        end: 0,
        acked: true,
        client: usize::MAX,
    }
}

/// Checks the history and the final state: `finals` maps each key to what each node
/// answered for it after the faults healed (register keys: the value; counters: the
/// number).
pub fn check(ops: &[Op], finals: &BTreeMap<String, Vec<Option<String>>>) -> Report {
    let mut report = Report {
        ops: ops.len(),
        unknown: ops.iter().filter(|o| o.outcome == Outcome::Unknown).count(),
        ..Report::default()
    };
    let writes = register_writes(ops);
    report.acked_writes = ops
        .iter()
        .filter(|o| o.acked() && !matches!(o.kind, Kind::Get { .. }))
        .count();

    // Final states of register keys.
    for (key, ws) in &writes {
        let Some(seen) = finals.get(*key) else {
            report
                .problems
                .push(format!("{key}: never read at the end"));
            continue;
        };
        report.keys_checked += 1;
        // Each value once (the nodes that agree are one answer; disagreement is reported
        // by the caller).
        let distinct: BTreeSet<&Option<String>> = seen.iter().collect();
        for value in distinct {
            let ok = std::iter::once(initial())
                .chain(ws.iter().cloned())
                .any(|w| &w.value == value && may_be_last(&w, ws));
            if !ok {
                let last = ws.iter().filter(|w| w.acked).max_by_key(|w| w.end);
                report.problems.push(format!(
                    "{key}: reads {value:?} at the end, but the last acknowledged write is {:?}",
                    last.map(|w| &w.value)
                ));
            }
        }
    }

    // Reads: each client reads its own acknowledged writes.
    for get in ops {
        let (Kind::Get { key }, Outcome::Ok(value)) = (&get.kind, &get.outcome) else {
            continue;
        };
        report.reads_checked += 1;
        let ws = writes.get(key.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        let own = ws
            .iter()
            .filter(|w| w.client == get.client && w.acked && w.end <= get.invoked)
            .max_by_key(|w| w.end);
        let Some(own) = own else { continue };
        let read_end = get.completed.unwrap_or(u64::MAX);
        let ok = ws.iter().any(|w| {
            &w.value == value
                && w.invoked <= read_end
                && (w.end >= own.invoked || std::ptr::eq(w, own))
        });
        if !ok {
            report.problems.push(format!(
                "{key}: client {} read {value:?} at {} after its own write of {:?} was acknowledged at {}",
                get.client, get.invoked, own.value, own.end
            ));
        }
    }

    // Counters.
    let mut incrs: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        if let Kind::Incr { key } = &op.kind {
            incrs.entry(key.as_str()).or_default().push(op);
        }
    }
    for (key, ops) in incrs {
        report.keys_checked += 1;
        let mut answered: BTreeMap<i64, usize> = BTreeMap::new();
        for op in &ops {
            if let Outcome::Ok(Some(v)) = &op.outcome {
                match v.parse::<i64>() {
                    Ok(n) => *answered.entry(n).or_default() += 1,
                    Err(_) => report.problems.push(format!("{key}: INCR answered {v}")),
                }
            }
        }
        for (n, times) in &answered {
            if *times > 1 {
                report.problems.push(format!(
                    "{key}: {times} acknowledged INCRs answered {n} (an increment was lost)"
                ));
            }
        }
        // Real-time order: an INCR acknowledged before another was sent answered less.
        let mut acked: Vec<(u64, u64, i64)> = ops
            .iter()
            .filter_map(|o| match (&o.outcome, o.completed) {
                (Outcome::Ok(Some(v)), Some(done)) => Some((o.invoked, done, v.parse().ok()?)),
                _ => None,
            })
            .collect();
        acked.sort_unstable();
        for (i, &(_, done, value)) in acked.iter().enumerate() {
            if let Some(&(sent_at, _, later)) = acked[i + 1..]
                .iter()
                .find(|&&(sent_at, _, later)| sent_at > done && later <= value)
            {
                report.problems.push(format!(
                    "{key}: an INCR sent at {sent_at} answered {later}, after one acknowledged at {done} answered {value}"
                ));
                break;
            }
        }
        let max_acked = answered.keys().next_back().copied().unwrap_or(0);
        let sent = ops.len() as i64;
        let distinct: BTreeSet<&Option<String>> = finals.get(key).into_iter().flatten().collect();
        for value in distinct {
            let n = value.as_deref().map_or(Ok(0), str::parse::<i64>);
            match n {
                Ok(n) if n >= max_acked && n <= sent => {}
                Ok(n) if n >= max_acked => report.applied_twice.push(format!(
                    "{key}: reads {n} at the end, {sent} INCRs were sent"
                )),
                _ => report.problems.push(format!(
                    "{key}: reads {value:?} at the end; acknowledged INCRs reached {max_acked}, {sent} were sent"
                )),
            }
        }
    }
    // Logs.
    let mut appends: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        if let Kind::Append { key, .. } = &op.kind {
            appends.entry(key.as_str()).or_default().push(op);
        }
    }
    for (key, ops) in appends {
        report.keys_checked += 1;
        let distinct: BTreeSet<&Option<String>> = finals.get(key).into_iter().flatten().collect();
        for value in distinct {
            let text = value.as_deref().unwrap_or("");
            let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
            for token in text.split_terminator(';') {
                *seen.entry(token).or_default() += 1;
            }
            let sent = |t: &str| {
                ops.iter()
                    .any(|o| matches!(&o.kind, Kind::Append { token, .. } if token.trim_end_matches(';') == t))
            };
            for (token, times) in &seen {
                if !sent(token) {
                    report
                        .problems
                        .push(format!("{key}: holds {token:?}, which no client appended"));
                } else if *times > 1 {
                    report
                        .applied_twice
                        .push(format!("{key}: {token:?} appended {times} times"));
                }
            }
            for op in ops.iter().filter(|o| o.acked()) {
                let Kind::Append { token, .. } = &op.kind else {
                    continue;
                };
                if !seen.contains_key(token.trim_end_matches(';')) {
                    report.problems.push(format!(
                        "{key}: the acknowledged append {token:?} is not in {text:?}"
                    ));
                }
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(client: usize, kind: Kind, span: (u64, u64), outcome: Outcome) -> Op {
        Op {
            client,
            kind,
            invoked: span.0,
            completed: Some(span.1),
            outcome,
        }
    }
    fn set(k: &str, v: &str) -> Kind {
        Kind::Set {
            key: k.into(),
            value: v.into(),
        }
    }
    fn ok(v: &str) -> Outcome {
        Outcome::Ok(Some(v.into()))
    }
    fn finals(k: &str, v: Option<&str>) -> BTreeMap<String, Vec<Option<String>>> {
        BTreeMap::from([(k.to_string(), vec![v.map(String::from)])])
    }

    #[test]
    fn an_acknowledged_write_lost_to_an_older_one_is_found() {
        let ops = vec![
            op(0, set("k", "a"), (1, 2), ok("OK")),
            op(0, set("k", "b"), (3, 4), ok("OK")),
        ];
        assert!(check(&ops, &finals("k", Some("b"))).problems.is_empty());
        assert_eq!(check(&ops, &finals("k", Some("a"))).problems.len(), 1);
        // Overlapping writes may land in either order.
        let ops = vec![
            op(0, set("k", "a"), (1, 5), ok("OK")),
            op(1, set("k", "b"), (2, 4), ok("OK")),
        ];
        assert!(check(&ops, &finals("k", Some("a"))).problems.is_empty());
        assert!(check(&ops, &finals("k", Some("b"))).problems.is_empty());
    }

    #[test]
    fn a_deleted_key_that_comes_back_is_found() {
        let ops = vec![
            op(0, set("k", "a"), (1, 2), ok("OK")),
            op(0, Kind::Del { key: "k".into() }, (3, 4), ok("1")),
        ];
        assert!(check(&ops, &finals("k", None)).problems.is_empty());
        assert_eq!(check(&ops, &finals("k", Some("a"))).problems.len(), 1);
        // An unknown write may have run after the DEL...
        let mut ops = ops;
        ops.push(Op {
            client: 1,
            kind: set("k", "c"),
            invoked: 2,
            completed: None,
            outcome: Outcome::Unknown,
        });
        assert!(check(&ops, &finals("k", Some("c"))).problems.is_empty());
        // ...but not after a DEL sent once its span was over.
        ops.push(op(
            0,
            Kind::Del { key: "k".into() },
            (UNKNOWN_SPAN + 10, UNKNOWN_SPAN + 11),
            ok("0"),
        ));
        assert_eq!(check(&ops, &finals("k", Some("c"))).problems.len(), 1);
    }

    #[test]
    fn a_client_that_does_not_read_its_own_write_is_found() {
        let get = |v: Option<&str>, t: u64| {
            op(
                0,
                Kind::Get { key: "k".into() },
                (t, t + 1),
                Outcome::Ok(v.map(String::from)),
            )
        };
        let mut ops = vec![
            op(1, set("k", "x"), (1, 2), ok("OK")),
            op(0, set("k", "a"), (3, 4), ok("OK")),
            get(Some("a"), 5),
        ];
        assert!(check(&ops, &finals("k", Some("a"))).problems.is_empty());
        ops.push(get(Some("x"), 6));
        ops.push(get(None, 7));
        assert_eq!(check(&ops, &finals("k", Some("a"))).problems.len(), 2);
    }

    #[test]
    fn a_lost_or_foreign_append_is_found() {
        let append = |c: usize, t: &str, time: u64, outcome: Outcome| {
            op(
                c,
                Kind::Append {
                    key: "log".into(),
                    token: format!("{t};"),
                },
                (time, time + 1),
                outcome,
            )
        };
        let ops = vec![
            append(0, "a", 1, ok("2")),
            append(1, "b", 3, ok("4")),
            append(1, "c", 5, Outcome::Unknown),
        ];
        assert!(check(&ops, &finals("log", Some("a;b;")))
            .problems
            .is_empty());
        assert!(check(&ops, &finals("log", Some("a;b;c;")))
            .problems
            .is_empty());
        assert_eq!(
            check(&ops, &finals("log", Some("a;"))).problems.len(),
            1,
            "b lost"
        );
        assert_eq!(
            check(&ops, &finals("log", Some("a;b;x;"))).problems.len(),
            1
        );
        let twice = check(&ops, &finals("log", Some("a;b;b;")));
        assert!(twice.problems.is_empty());
        assert_eq!(twice.applied_twice.len(), 1);
    }

    #[test]
    fn a_lost_increment_is_found() {
        let incr = |v: &str, t: u64| op(0, Kind::Incr { key: "c".into() }, (t, t + 1), ok(v));
        let ops = vec![incr("1", 1), incr("2", 3), incr("3", 5)];
        assert!(check(&ops, &finals("c", Some("3"))).problems.is_empty());
        assert_eq!(check(&ops, &finals("c", Some("2"))).problems.len(), 1);
        let ops = vec![incr("1", 1), incr("2", 3), incr("2", 5)];
        assert!(!check(&ops, &finals("c", Some("2"))).problems.is_empty());
        // Answers out of real-time order: the later INCR answered less.
        let ops = vec![incr("2", 1), incr("1", 3)];
        assert_eq!(check(&ops, &finals("c", Some("2"))).problems.len(), 1);
        // One INCR ran twice: nothing lost, counted apart.
        let ops = vec![incr("1", 1), incr("3", 3)];
        let r = check(&ops, &finals("c", Some("3")));
        assert!(r.problems.is_empty());
        assert_eq!(r.applied_twice.len(), 1);
    }
}
