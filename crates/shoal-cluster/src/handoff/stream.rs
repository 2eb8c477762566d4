//! The stream: sending each planned slot's keys to its new copies as HANDOFF batches,
//! paced by `handoff-rate`.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shoal_store::{KeyState, Store};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::plan::plan;
use crate::message::decode_replicate_result;
use crate::message::{encode_handoff, entry_len};
use crate::Server;
use crate::{NodeInfo, View};
use shoal_engine::clock::now_ms;

/// Largest HANDOFF message.
pub(super) const BATCH_BYTES: usize = 1 << 20;

pub(super) enum Scan {
    Complete,
    /// The view changed: scan again against the newest.
    Interrupted,
    /// Some sends failed: retry after a pause.
    Failed,
    Stopped,
}

pub(super) async fn scan(
    node: &Arc<Server>,
    bases: &[Arc<View>],
    current: &Arc<View>,
    delivered: &mut HashSet<(u16, String, u64)>,
    limiter: &mut Limiter,
    stop: &CancellationToken,
) -> Scan {
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let stats = &cluster.handoff.stats;
    // Every view since the last settle may have left keys somewhere: plan from each and
    // merge (a slot streamed twice is harmless, last-writer-wins).
    let mut work: Vec<(u16, Vec<NodeInfo>)> = Vec::new();
    for base in bases {
        for (slot, targets) in plan(base, current) {
            match work.binary_search_by_key(&slot, |(s, _)| *s) {
                Ok(i) => {
                    for t in targets {
                        if !work[i].1.iter().any(|o| o.same_incarnation(&t)) {
                            work[i].1.push(t);
                        }
                    }
                }
                Err(i) => work.insert(i, (slot, targets)),
            }
        }
    }
    for (slot, targets) in &mut work {
        targets.retain(|t| !delivered.contains(&(*slot, t.name.clone(), t.generation)));
    }
    work.retain(|(_, t)| !t.is_empty());
    // Group by the store's walks: the slots of one group are read in one walk of the store.
    work.sort_by_key(|(slot, _)| (Store::slot_group(*slot), *slot));
    stats
        .slots_planned
        .store(work.len() as u64, Ordering::Relaxed);
    stats
        .slots_pending
        .store(work.len() as u64, Ordering::Relaxed);
    if work.is_empty() {
        return Scan::Complete;
    }
    tracing::info!(
        slots = work.len(),
        epoch = current.epoch(),
        "handing off slots to their new copies"
    );
    let started = Instant::now();
    let keys_before = stats.keys_sent.load(Ordering::Relaxed);
    let bytes_before = stats.bytes_sent.load(Ordering::Relaxed);
    let mut failed = false;
    let mut last_log = Instant::now();
    // The states of the rest of the current slot's group, read with it, and when.
    let mut read_ahead: VecDeque<Vec<(Bytes, KeyState)>> = VecDeque::new();
    let mut read_at = Instant::now();
    let mut n = 0;
    while n < work.len() {
        let targets = &work[n].1;
        if stop.is_cancelled() {
            return Scan::Stopped;
        }
        if cluster.view().id != current.id {
            return Scan::Interrupted;
        }
        // The following slots with the same new copies travel together, up to about one
        // message (`BATCH_BYTES`): one round trip for them all instead of one per slot.
        let mut states: Vec<(Bytes, KeyState)> = Vec::new();
        let mut size = 0;
        let mut unit = 0;
        while n + unit < work.len()
            && same_copies(&work[n + unit].1, targets)
            && (unit == 0 || size < BATCH_BYTES)
        {
            // Read again when the group was read a while ago (a slow `handoff-rate`): a
            // state held back longer than a tombstone lives could bring a deleted key back.
            if read_ahead.is_empty() || read_at.elapsed() > READ_AHEAD_FOR {
                read_at = Instant::now();
                let group = Store::slot_group(work[n + unit].0);
                let slots: Vec<u16> = work[n + unit..]
                    .iter()
                    .map(|(s, _)| *s)
                    .take_while(|s| Store::slot_group(*s) == group)
                    .collect();
                read_ahead = node.engine.store.slots_states(&slots, now_ms()).into();
            }
            let slot_states = read_ahead
                .pop_front()
                .expect("one list per slot of the group");
            size += slot_states
                .iter()
                .map(|(k, st)| entry_len(k, st))
                .sum::<usize>();
            states.extend(slot_states);
            unit += 1;
        }
        let mut ok_targets: Vec<&NodeInfo> = targets.iter().collect();
        for batch in batches(&states) {
            let body = encode_handoff(batch.iter().map(|(k, s)| (&k[..], s)));
            // Every target gets the batch: pace the bytes that actually leave.
            limiter.take((body.len() * ok_targets.len()) as u64).await;
            let sends = ok_targets.iter().map(|t| {
                let body = body.clone();
                async move {
                    let Some(peer) = current.link_to(t) else {
                        return false;
                    };
                    match peer.request(current.id, body).await {
                        Ok(r) => decode_replicate_result(&r.body).is_some(),
                        Err(e) => {
                            tracing::debug!(node = %t.name, error = %e, "hand-off send failed");
                            false
                        }
                    }
                }
            });
            let results = futures_util::future::join_all(sends).await;
            let mut i = 0;
            ok_targets.retain(|_| {
                let ok = results[i];
                i += 1;
                ok
            });
            let sent = (results.iter().filter(|&&r| r).count()) as u64;
            stats
                .keys_sent
                .fetch_add(batch.len() as u64 * sent, Ordering::Relaxed);
            stats
                .bytes_sent
                .fetch_add(body.len() as u64 * sent, Ordering::Relaxed);
            if ok_targets.is_empty() {
                break;
            }
        }
        if ok_targets.len() < targets.len() {
            failed = true;
        }
        for (slot, _) in &work[n..n + unit] {
            for t in &ok_targets {
                delivered.insert((*slot, t.name.clone(), t.generation));
            }
        }
        n += unit;
        stats.slots_sent.fetch_add(unit as u64, Ordering::Relaxed);
        stats
            .slots_pending
            .store((work.len() - n) as u64, Ordering::Relaxed);
        let p = progress(
            n,
            work.len(),
            stats.keys_sent.load(Ordering::Relaxed) - keys_before,
            stats.bytes_sent.load(Ordering::Relaxed) - bytes_before,
            started.elapsed(),
        );
        stats.keys_per_sec.store(p.keys_per_sec, Ordering::Relaxed);
        stats
            .bytes_per_sec
            .store(p.bytes_per_sec, Ordering::Relaxed);
        stats.eta_secs.store(p.eta_secs, Ordering::Relaxed);
        if last_log.elapsed() >= PROGRESS_EVERY {
            last_log = Instant::now();
            tracing::info!(
                slots_done = n,
                slots = work.len(),
                keys = p.keys,
                mb = format!("{:.1}", p.bytes as f64 / 1e6),
                keys_per_sec = p.keys_per_sec,
                mb_per_sec = format!("{:.2}", p.bytes_per_sec as f64 / 1e6),
                eta_secs = p.eta_secs,
                "hand-off progress"
            );
        }
    }
    for pace in [&stats.keys_per_sec, &stats.bytes_per_sec, &stats.eta_secs] {
        pace.store(0, Ordering::Relaxed);
    }
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let keys = stats.keys_sent.load(Ordering::Relaxed) - keys_before;
    stats.last_scan_ms.store(elapsed_ms, Ordering::Relaxed);
    stats.last_scan_keys.store(keys, Ordering::Relaxed);
    tracing::info!(
        slots = work.len(),
        keys,
        elapsed_ms,
        failed,
        "hand-off scan finished"
    );
    if failed {
        Scan::Failed
    } else {
        Scan::Complete
    }
}

/// How long states read ahead for the slots of one store shard are sent as read; older
/// ones are read again (the time one slot's states waited for their send before the group
/// was read at once: far below a tombstone's life).
const READ_AHEAD_FOR: Duration = Duration::from_secs(1);

/// Whether two slots go to the same new copies.
fn same_copies(a: &[NodeInfo], b: &[NodeInfo]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.iter().any(|y| y.same_incarnation(x)))
}

/// How often a running scan logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// A running scan's figures: what it sent, its pace so far, and the time left at that pace.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Progress {
    pub keys: u64,
    pub bytes: u64,
    pub keys_per_sec: u64,
    pub bytes_per_sec: u64,
    pub eta_secs: u64,
}

/// The progress after `done` of `total` slots, `keys` and `bytes` sent in `elapsed`. The
/// time left assumes the remaining slots take as long as the done ones on average (the plan
/// counts slots; their keys are unknown until each is read).
pub(super) fn progress(
    done: usize,
    total: usize,
    keys: u64,
    bytes: u64,
    elapsed: Duration,
) -> Progress {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let left = total.saturating_sub(done) as f64;
    let per_slot = secs / done.max(1) as f64;
    Progress {
        keys,
        bytes,
        keys_per_sec: (keys as f64 / secs) as u64,
        bytes_per_sec: (bytes as f64 / secs) as u64,
        eta_secs: (left * per_slot).ceil() as u64,
    }
}

/// Splits a slot's states into messages of at most `BATCH_BYTES` (a larger state goes
/// alone).
pub(super) fn batches(states: &[(Bytes, KeyState)]) -> Vec<&[(Bytes, KeyState)]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (i, (k, s)) in states.iter().enumerate() {
        let len = entry_len(k, s);
        if i > start && size + len > BATCH_BYTES {
            out.push(&states[start..i]);
            start = i;
            size = 0;
        }
        size += len;
    }
    if start < states.len() {
        out.push(&states[start..]);
    }
    out
}

/// Paces the hand-off stream to `rate` bytes per second (bursts of up to one second).
pub(super) struct Limiter {
    rate: u64,
    next: Instant,
}

impl Limiter {
    pub(super) fn new(rate: u64) -> Limiter {
        Limiter {
            rate,
            next: Instant::now(),
        }
    }

    pub(super) async fn take(&mut self, bytes: u64) {
        let now = Instant::now();
        if self.next + Duration::from_secs(1) < now {
            self.next = now - Duration::from_secs(1);
        }
        self.next += Duration::from_micros(bytes.saturating_mul(1_000_000) / self.rate);
        if self.next > now {
            tokio::time::sleep_until(self.next).await;
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn progress_gives_the_pace_and_the_time_left_at_it() {
        let p = progress(10, 40, 5_000, 2_000_000, Duration::from_secs(2));
        assert_eq!(
            p,
            Progress {
                keys: 5_000,
                bytes: 2_000_000,
                keys_per_sec: 2_500,
                bytes_per_sec: 1_000_000,
                eta_secs: 6,
            }
        );
        assert_eq!(progress(40, 40, 1, 1, Duration::from_secs(9)).eta_secs, 0);
        // At the very start nothing divides by zero.
        let p = progress(0, 5, 0, 0, Duration::ZERO);
        assert_eq!((p.keys_per_sec, p.bytes_per_sec), (0, 0));
    }

    use super::*;
    use shoal_store::Kind;

    #[test]
    fn batches_respect_the_size_limit() {
        let big = KeyState::Live {
            kind: Kind::String,
            value: Bytes::from(vec![0u8; 400 << 10]),
            flags: 0,
            expire_at_ms: 0,
            version: 1,
        };
        let states: Vec<(Bytes, KeyState)> = (0..5)
            .map(|i| (Bytes::from(format!("k{i}")), big.clone()))
            .collect();
        let b = batches(&states);
        assert_eq!(b.iter().map(|b| b.len()).collect::<Vec<_>>(), vec![2, 2, 1]);
        assert!(batches(&[]).is_empty());
    }
}
