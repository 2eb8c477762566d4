//! DONE: telling every live peer that this node finished handing off for a view.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::message::encode_done;
use crate::{Peer, View};

/// How often a peer is told the same hand-off state again.
pub(super) const REFRESH: Duration = Duration::from_secs(5);

/// Tells every live peer this node's hand-off state: 0 while it works on a new view, then
/// the view's id once done. One task per peer sends the latest state, in order on that
/// peer's connection, retrying with backoff until it is delivered or superseded, and
/// again every [`REFRESH`]: a report can arrive after a later one (sent on the link while
/// it was cut, delivered when it heals, after the later one went through a relay), and the
/// peer would otherwise wait on the stale one for good.
pub(super) struct Reporter {
    state: watch::Sender<u64>,
    // Ordered, so tasks are started and aborted in the same order every run (the
    // whole-cluster simulation replays a seed exactly).
    tasks: BTreeMap<(String, std::net::SocketAddr), tokio::task::JoinHandle<()>>,
    stop: CancellationToken,
}

impl Reporter {
    pub(super) fn new(stop: CancellationToken) -> Reporter {
        Reporter {
            state: watch::channel(0).0,
            tasks: BTreeMap::new(),
            stop,
        }
    }

    pub(super) fn update(&mut self, view: &View, value: u64) {
        self.state.send_replace(value);
        let live: Vec<((String, std::net::SocketAddr), Arc<Peer>)> = view
            .live_peers()
            .map(|(n, p)| ((n.name.clone(), n.cluster), p.clone()))
            .collect();
        self.tasks.retain(|k, task| {
            let keep = live.iter().any(|(l, _)| l == k) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for (k, peer) in live {
            if self.tasks.contains_key(&k) {
                continue;
            }
            let rx = self.state.subscribe();
            let task = tokio::spawn(report_to(
                peer,
                view.myself.name.clone(),
                rx,
                self.stop.clone(),
            ));
            self.tasks.insert(k, task);
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        for task in self.tasks.values() {
            task.abort();
        }
    }
}

pub(super) async fn report_to(
    peer: Arc<Peer>,
    me: String,
    mut rx: watch::Receiver<u64>,
    stop: CancellationToken,
) {
    'next: loop {
        let value = *rx.borrow_and_update();
        let mut pause = Duration::from_millis(100);
        loop {
            if peer.request(value, encode_done(value, &me)).await.is_ok() {
                break;
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                r = rx.changed() => {
                    if r.is_err() {
                        return;
                    }
                    continue 'next;
                }
                _ = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(Duration::from_secs(2));
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            r = rx.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(REFRESH) => {}
        }
    }
}
