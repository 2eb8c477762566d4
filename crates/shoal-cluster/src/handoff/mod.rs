//! Moving keys when the copies of a slot change (gossip mode): joins, failures, restarts
//! and leaves.
//!
//! # The rule
//!
//! Every node keeps `base`, the last view it finished handing off for. When a view with
//! another placement arrives, it compares, slot by slot, the copies under `base` with the
//! copies under the new view, by incarnation (name and generation: a restarted node lost its
//! copies). For a slot whose copies changed:
//! - the old copies still alive (placed, leaving, or this node) are assumed to hold it;
//! - the first of them in rank order is the slot's sender;
//! - the sender streams the slot's keys to each new copy that is not an old live copy,
//!   whole slot by whole slot, as HANDOFF messages (key states with versions, applied with
//!   last-writer-wins, so a write made at the new owner during the move is never overwritten
//!   by the older streamed value), paced by `handoff-rate`.
//!
//! One rule covers a join (the old owner streams to the newcomer), a failure (the surviving
//! copy re-replicates to the slot's new copy), a restart (the new generation is a new copy
//! and is refilled) and a leave (the leaving node, no longer placed but alive, streams its
//! slots to their successors). If the view changes mid-way the scan starts again against
//! the newest view; slots already delivered to the same incarnation are skipped. A send that
//! fails is retried after a pause.
//!
//! # Settling
//!
//! When its scan is complete a node sends DONE (with the view id) to every live peer. A node
//! is *settled* when its own scan and the DONE of every live peer match its current view.
//! Until then, a command on a key this node owns but does not hold first fetches the key's
//! state from its other copies and from the copies under the previous views (FETCH), so
//! clients see no cold misses during a scale-out or after a restart. Once settled, a node
//! forgets the slots it no longer holds a copy of, and a joining node announces it serves.
//!
//! The parts: `settle` (the state: base view, window, DONE reports, what is arriving),
//! `plan` (which copy sends which slot, pure), `stream` (sending slots as HANDOFF batches),
//! `report` (DONE to the peers), `fetch` (fetch on a miss, per-key turns); this file runs
//! the hand-off task and forgets foreign slots once settled.

mod fetch;
mod plan;
mod report;
mod settle;
mod stream;

pub use fetch::{
    before, fetch, missing, owner_may_write, try_next_copy, Before, Fetched, KeyTurn, CUT_OFF,
    EXPIRED, LEAVING, NOT_HERE, OTHER_VIEW, PAUSED, UNANSWERED,
};
pub use settle::{Handoff, HandoffStats};

use report::Reporter;
use stream::{scan, Limiter, Scan};

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::Server;
use crate::View;

/// Pause before retrying a hand-off whose sends failed.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// The hand-off task (gossip mode): runs a scan after every view change, then reports DONE;
/// forgets foreign slots once settled, and calls `on_settled` (membership's: a joining node
/// starts serving). Ends with `stop`.
pub async fn run(node: Arc<Server>, stop: CancellationToken, on_settled: fn(&Server)) {
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let mut changes = cluster.subscribe();
    let mut limiter = Limiter::new(cluster.handoff.rate);
    // A node with seeds waits until it found the cluster (or gave up looking), so that it
    // does not settle alone in the meantime.
    while !cluster.accepting.load(Ordering::Acquire) {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = cluster.handoff.wake.notified() => {}
            _ = changes.changed() => {}
        }
    }
    let mut scanned_for = 0u64;
    let mut forgot_at = 0u64;
    // (slot, new copy) pairs delivered since `base` (valid for one base).
    let mut delivered: HashSet<(u16, String, u64)> = HashSet::new();
    let mut delivered_base = u64::MAX;
    let mut reporter = Reporter::new(stop.clone());
    loop {
        changes.borrow_and_update();
        let current = cluster.view();
        let base = cluster.handoff.base();
        let base_id = base.as_ref().map_or(0, |b| b.id);
        if base_id != delivered_base {
            delivered.clear();
            delivered_base = base_id;
        }
        if current.id != scanned_for {
            reporter.update(&current, 0);
            let bases = cluster.handoff.plan_bases(&current);
            let outcome = if bases.is_empty() {
                // Nothing moved since the last settle, or nothing was held before.
                Scan::Complete
            } else {
                scan(&node, &bases, &current, &mut delivered, &mut limiter, &stop).await
            };
            match outcome {
                Scan::Complete => {
                    scanned_for = current.id;
                    cluster.handoff.stats.rounds.fetch_add(1, Ordering::Relaxed);
                    cluster.handoff.my_scan_done(cluster, current.id);
                    reporter.update(&current, current.id);
                }
                Scan::Interrupted => continue,
                Scan::Failed => {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = changes.changed() => {}
                        _ = tokio::time::sleep(RETRY_PAUSE) => {}
                    }
                    continue;
                }
                Scan::Stopped => return,
            }
        } else {
            // Same placement, maybe another live peer (a leaving one): tell it too.
            reporter.update(&current, current.id);
        }
        loop {
            let view = cluster.view();
            if view.id != current.id {
                break;
            }
            let settles = cluster.handoff.settle_count();
            if cluster.handoff.settled_in(&view) && forgot_at != settles {
                forgot_at = settles;
                tracing::info!(
                    epoch = view.epoch(),
                    "settled: every hand-off for this membership is complete"
                );
                forget_foreign_slots(&node, &view);
                on_settled(&node);
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                r = changes.changed() => {
                    if r.is_err() {
                        return;
                    }
                    break;
                }
                _ = cluster.handoff.wake.notified() => {}
            }
        }
    }
}

/// After settling: drop the keys of slots this node holds no copy of any more.
fn forget_foreign_slots(node: &Server, view: &View) {
    if !view.is_member() {
        return;
    }
    let cluster = node.cluster.as_ref().expect("hand-off runs in a cluster");
    let forgotten = node
        .engine
        .store
        .drop_slots(|slot| !view.owners(slot).contains(&view.me));
    if forgotten > 0 {
        tracing::info!(keys = forgotten, "forgot keys of slots held elsewhere now");
    }
    cluster
        .handoff
        .stats
        .forgotten
        .fetch_add(forgotten as u64, Ordering::Relaxed);
}
