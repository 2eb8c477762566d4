//! Fetch on a miss while unsettled: a command on a key this node owns but may not hold yet
//! first fetches the key from its other copies, in arrival order per key (each key's turn).

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use shoal_store::{key_slot, KeyState};
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::message::{decode_states, encode_fetch};
use crate::Server;
use crate::{Cluster, Peer, View};
use shoal_engine::clock::now_ms;
use shoal_wire::WireError;

/// The keys among `keys` that this node should fetch before running a command on them:
/// none once settled; else those it holds no state for, and every key of a slot it is
/// receiving (its local copy may be older than the one on its way).
pub fn missing<'a>(
    node: &Server,
    cluster: &Cluster,
    view: &View,
    keys: impl Iterator<Item = &'a Bytes>,
    now_ms: u64,
) -> Vec<Bytes> {
    if cluster.handoff.settled_in(view) {
        return Vec::new();
    }
    let receiving = cluster.handoff.receiving(view);
    keys.filter(|k| {
        receiving.get(usize::from(key_slot(k))) == Some(&true)
            || node.engine.store.key_state(k, now_ms) == KeyState::Absent
    })
    .cloned()
    .collect()
}

/// How a fetch went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// There was no other copy to ask (a joining node still alone in its view).
    NoCopy,
    /// For every key, at least one copy answered (and its state, if newer, was applied), or
    /// this node held a copy of the key's slot already (its state stands).
    Answered,
    /// For some key of a slot this node is receiving, no copy answered in time while one
    /// that is alive was asked (it was slow, frozen, or failed the request; copies whose
    /// process is gone do not count): this node cannot tell the key's state. A command that reads the key must not run (it could
    /// answer nil for a key that exists); a blind write may
    /// (`shoal_engine::cmd::blind_write`).
    Unanswered,
}

/// What a command must wait for before it runs while this node is unsettled.
pub enum Before {
    /// Nothing: run it now.
    Run,
    /// A fetch of its keys, or its turn behind earlier commands on its key that wait for
    /// one. Resolves to (how the fetch for its keys went, the turn to hold until the
    /// command ran).
    Wait(Pin<Box<dyn Future<Output = (Fetched, KeyTurn)> + Send + 'static>>),
}

/// The commands waiting on one key while its state is fetched.
pub(crate) struct KeyQueue {
    /// The commands queued behind the one that holds the turn, in arrival order.
    waiting: VecDeque<oneshot::Sender<()>>,
    /// How the fetch that started the queue went (`None` until it ended, or if its
    /// command was dropped mid-fetch): the commands queued behind it share its outcome, so
    /// none waits for a fetch of its own.
    fetched: Option<Fetched>,
}

/// Holds a key's turn (or, for a multi-key command, its keys' turns): dropping it lets the
/// next command queued on the key run.
pub struct KeyTurn {
    node: Option<(Arc<Server>, Bytes)>,
    /// The turns of a multi-key command's keys, held until it is dropped.
    _more: Vec<KeyTurn>,
}

impl KeyTurn {
    /// No turn to hold (the command did not queue).
    pub fn none() -> KeyTurn {
        KeyTurn {
            node: None,
            _more: Vec::new(),
        }
    }

    fn of(node: &Arc<Server>, key: &Bytes) -> KeyTurn {
        KeyTurn {
            node: Some((node.clone(), key.clone())),
            _more: Vec::new(),
        }
    }
}

impl Drop for KeyTurn {
    fn drop(&mut self) {
        if let Some((node, key)) = self.node.take() {
            pass_turn(&node, &key, None);
        }
    }
}

/// Hands `key`'s turn to its next live waiter, or frees the key. With `own`, the caller is a
/// waiter dropped before it ran: it passes the turn on only if it had been given it.
pub(super) fn pass_turn(node: &Server, key: &Bytes, own: Option<&mut oneshot::Receiver<()>>) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    let h = &cluster.handoff;
    let mut queues = h.queues.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rx) = own {
        // Under the lock: the turn cannot be handed to this waiter meanwhile.
        if rx.try_recv().is_err() {
            return;
        }
    }
    let Some(queue) = queues.get_mut(key) else {
        return;
    };
    while let Some(next) = queue.waiting.pop_front() {
        if next.send(()).is_ok() {
            return;
        }
    }
    queues.remove(key);
    h.queued.fetch_sub(1, Ordering::AcqRel);
}

/// A command waiting for its key's turn; dropped before it got to run, it passes on a turn
/// it was given and leaves the queue otherwise.
pub(super) struct Waiter {
    node: Arc<Server>,
    key: Bytes,
    rx: Option<oneshot::Receiver<()>>,
}

impl Waiter {
    pub(super) async fn turn(mut self) -> KeyTurn {
        if let Some(rx) = self.rx.as_mut() {
            let _ = rx.await;
        }
        self.rx = None;
        KeyTurn::of(&self.node, &self.key)
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            pass_turn(&self.node, &self.key, Some(&mut rx));
        }
    }
}

/// Decides, when a command on `keys` arrives (in arrival order), what it waits for: while
/// unsettled, a command waits for its turn behind earlier ones on the same keys that wait
/// for a fetch, and the first of them fetches; so commands on one key run in the order they
/// arrived (also across the moment the node settles). A multi-key command takes its place
/// on all its keys at once (under one lock, so two of them queue in the same order on every
/// key they share), waits for every turn, then fetches what is still missing: before, it
/// fetched without queueing, and a `SET x b` that arrived after an `MSET x a z a` whose
/// fetch was still on its way ran first and was overwritten (the scale-out test's loads).
pub fn before(
    node: &Arc<Server>,
    cluster: &Cluster,
    view: &Arc<View>,
    keys: &[Bytes],
    now_ms: u64,
) -> Before {
    let h = &cluster.handoff;
    if keys.is_empty() || (h.settled_in(view) && h.queued.load(Ordering::Acquire) == 0) {
        return Before::Run;
    }
    if let [key] = keys {
        let mut queues = h.queues.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(queue) = queues.get_mut(key) {
            let (tx, rx) = oneshot::channel();
            queue.waiting.push_back(tx);
            let waiter = Waiter {
                node: node.clone(),
                key: key.clone(),
                rx: Some(rx),
            };
            let (node, view, key) = (node.clone(), view.clone(), key.clone());
            return Before::Wait(Box::pin(async move {
                let turn = waiter.turn().await;
                // It shares the outcome of the fetch it waited behind (before, the ones
                // queued behind an unanswered fetch read nil), so it waits for no fetch of
                // its own. Only if that fetch never ended (its command was dropped) does it
                // fetch itself.
                if let Some(fetched) = outcome(&node, &key) {
                    return (fetched, turn);
                }
                let fetched = fetch(&node, &view, vec![key.clone()]).await;
                record(&node, &key, fetched);
                (fetched, turn)
            }));
        }
        let missing = missing(node, cluster, view, keys.iter(), now_ms);
        if missing.is_empty() {
            return Before::Run;
        }
        let turn = open_queue(h, &mut queues, node, key);
        let (node, view, key) = (node.clone(), view.clone(), key.clone());
        return Before::Wait(Box::pin(async move {
            let fetched = fetch(&node, &view, missing).await;
            record(&node, &key, fetched);
            (fetched, turn)
        }));
    }
    let mut unique: Vec<&Bytes> = keys.iter().collect();
    unique.sort_unstable();
    unique.dedup();
    let mut queues = h.queues.lock().unwrap_or_else(|e| e.into_inner());
    let missing = missing(node, cluster, view, keys.iter(), now_ms);
    if missing.is_empty() && unique.iter().all(|k| !queues.contains_key(*k)) {
        return Before::Run;
    }
    let (mut waiters, mut turns) = (Vec::new(), Vec::new());
    for key in unique {
        match queues.get_mut(key) {
            Some(queue) => {
                let (tx, rx) = oneshot::channel();
                queue.waiting.push_back(tx);
                waiters.push(Waiter {
                    node: node.clone(),
                    key: key.clone(),
                    rx: Some(rx),
                });
            }
            None => turns.push(open_queue(h, &mut queues, node, key)),
        }
    }
    drop(queues);
    let (node, view, keys) = (node.clone(), view.clone(), keys.to_vec());
    Before::Wait(Box::pin(async move {
        // The fetch starts at once, beside the wait for the turns (states apply by version,
        // so an earlier command's newer write stands): the command waits at most one fetch
        // past the commands before it, not a fetch of its own after theirs.
        let fetching = async {
            match missing.is_empty() {
                true => Fetched::Answered,
                false => fetch(&node, &view, missing.clone()).await,
            }
        };
        let waiting = async {
            let mut got = Vec::with_capacity(waiters.len());
            for waiter in waiters {
                got.push(waiter.turn().await);
            }
            got
        };
        let (fetched, waited) = tokio::join!(fetching, waiting);
        turns.extend(waited);
        // The commands queued behind it on a key share an outcome: this fetch's for the keys
        // it asked for (unless an earlier one on the key told already), and for the others
        // that they were here.
        for key in &keys {
            let outcome = match missing.contains(key) {
                true => fetched,
                false => Fetched::Answered,
            };
            record_first(&node, key, outcome);
        }
        let turn = KeyTurn {
            node: None,
            _more: turns,
        };
        (fetched, turn)
    }))
}

/// Starts `key`'s queue with the caller holding its turn.
fn open_queue(
    h: &super::Handoff,
    queues: &mut std::collections::HashMap<Bytes, KeyQueue>,
    node: &Arc<Server>,
    key: &Bytes,
) -> KeyTurn {
    queues.insert(
        key.clone(),
        KeyQueue {
            waiting: VecDeque::new(),
            fetched: None,
        },
    );
    h.queued.fetch_add(1, Ordering::AcqRel);
    KeyTurn::of(node, key)
}

/// How the fetch that started `key`'s queue went (the caller holds the key's turn).
fn outcome(node: &Server, key: &Bytes) -> Option<Fetched> {
    let cluster = node.cluster.as_ref()?;
    let queues = cluster
        .handoff
        .queues
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    queues.get(key).and_then(|q| q.fetched)
}

/// Notes how the fetch of `key` went, for the commands queued behind it, unless a command
/// before it on the key did.
fn record_first(node: &Server, key: &Bytes, fetched: Fetched) {
    note_outcome(node, key, |q| {
        q.get_or_insert(fetched);
    });
}

/// Notes how the fetch of `key` went, for the commands queued behind it.
fn record(node: &Server, key: &Bytes, fetched: Fetched) {
    note_outcome(node, key, |q| *q = Some(fetched));
}

/// Runs `f` on the outcome `key`'s queue holds, if it has a queue.
fn note_outcome(node: &Server, key: &Bytes, f: impl FnOnce(&mut Option<Fetched>)) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    let mut queues = cluster
        .handoff
        .queues
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(q) = queues.get_mut(key) {
        f(&mut q.fetched);
    }
}

/// The reply a node gives a forwarded command on a key it does not hold while it knows no
/// other copy to fetch it from (it is starting and has not heard of the others yet): the
/// sender tries the key's next copy instead (`router::outbound::send_to_copies`).
pub const NOT_HERE: &[u8] =
    b"-TRYAGAIN this node is joining and does not know the key's other copies yet\r\n";

/// The reply to a forwarded command whose sender's deadline passed before it could run: the
/// sender gave up on this node and asked another copy, so running it could apply a write
/// twice, or late (a node that was frozen). Like [`NOT_HERE`], it sends the sender on.
pub const EXPIRED: &[u8] = b"-TRYAGAIN the request expired before this node could run it\r\n";

/// The reply of a leaving node to a keyed command from a node that has not heard of the
/// leave yet: the key's next copy in the sender's view is its owner once the node is gone
/// (rendezvous placement only moves the others up), and runs it there, so the two never
/// both write the key (`peer`).
pub const LEAVING: &[u8] = b"-TRYAGAIN this node is leaving the cluster\r\n";

/// The reply to a forwarded command (not a failover) on a key this node does not own in its
/// view, from a sender with another view: the sender took it for the owner. Were it to run
/// a write, it and the owner in its own view would both write the key while the views
/// differ. The sender sends the command again, after the connection's earlier commands,
/// once its view changed or after a pause (`router::outbound::send_to_copies`); it is not a
/// `try_next_copy` reply.
pub const OTHER_VIEW: &[u8] =
    b"-TRYAGAIN this node is not the key's owner in its view of the membership, which differs from the sender's\r\n";

/// The reply to a command that reads a key this node owns while unsettled, when none of the
/// key's other copies answered the fetch in time: without their answer a read could say nil
/// for a key that exists. The client (or a Redis Cluster client by itself) tries again. Not
/// a `try_next_copy` reply: the next copy would run it while this owner runs the others'.
pub const UNANSWERED: &[u8] =
    b"-TRYAGAIN the key's other copies did not answer in time, try again\r\n";

/// The reply of a node cut off from the majority of its cluster to a forwarded command
/// (`Handoff::is_cut_off`): it ran nothing, and the majority may serve the key already
/// without it, so the sender tries the next copy (Redis Cluster's text).
pub const CUT_OFF: &[u8] = b"-CLUSTERDOWN The cluster is down\r\n";

/// The reply of a node whose process stood still and whose view no majority has confirmed
/// since (`crate::fence`) to a forwarded command. It ran nothing, but may not have been
/// declared down (a pause shorter than failure detection): as with [`EXPIRED`], a read goes
/// to the next copy and a write back to the client, never to a second writer.
pub const PAUSED: &[u8] =
    b"-TRYAGAIN this node was paused and waits for its cluster to confirm its view\r\n";

/// True for the replies that tell the sender to try the next copy.
pub fn try_next_copy(body: &[u8]) -> bool {
    body.starts_with(NOT_HERE)
        || body.starts_with(EXPIRED)
        || body.starts_with(LEAVING)
        || body.starts_with(CUT_OFF)
        || body.starts_with(PAUSED)
}

/// True for the replies of a copy that ran nothing and may still be its key's writer: a
/// write is not sent on to the next copy ([`EXPIRED`], [`PAUSED`]).
pub fn owner_may_write(body: &[u8]) -> bool {
    body.starts_with(EXPIRED) || body.starts_with(PAUSED)
}

/// True if a copy that failed a FETCH with `e` is taken as gone, with nothing more to learn
/// from it: its process is not there (connection refused or lost, or a reconnect backing off
/// after that). Counting those copies as "in doubt" answered clients of the scale-out test's
/// SIGKILL step TRYAGAIN by the hundred (2 of 2 runs). A connect that timed out is not
/// one: the host did not answer at all (a partition, a frozen host), and the copy may hold
/// the only state of the key. The whole-cluster simulation (seed 23 of its `all` faults)
/// lost a counter that way: a node restarted empty, the other copy behind a held link, and
/// an INCR ran on nothing.
fn copy_is_gone(e: &WireError) -> bool {
    matches!(e, WireError::PeerUnavailable(u) if u.refused() || u.lost())
}

/// Fetches the state of `keys` from their other copies (see [`Handoff`](super::Handoff)), asking every
/// candidate at once, and applies every answer with last-writer-wins (so the newest copy
/// wins even if one candidate is stale). Tells whether every key had a copy answer.
pub async fn fetch(node: &Arc<Server>, view: &Arc<View>, keys: Vec<Bytes>) -> Fetched {
    let cluster = node.cluster.as_ref().expect("fetch runs in a cluster");
    let stats = &cluster.handoff.stats;
    stats.fetches.fetch_add(1, Ordering::Relaxed);
    // Candidate -> the keys to ask it for, one request per slot: a copy that cannot tell
    // for one slot (it holds no copy of it) answers the whole request so, and a multi-key
    // command's keys of its other slots were taken as unanswered (an MGET part answered
    // TRYAGAIN in the rolling-restart test where single-key reads did not).
    let mut asks: Vec<(Arc<Peer>, Vec<Bytes>)> = Vec::new();
    for k in &keys {
        let slot = key_slot(k);
        for p in cluster.handoff.candidates(view, slot) {
            match asks
                .iter_mut()
                .find(|(q, ks)| Arc::ptr_eq(q, &p) && key_slot(&ks[0]) == slot)
            {
                Some((_, ks)) => ks.push(k.clone()),
                None => asks.push((p, vec![k.clone()])),
            }
        }
    }
    if asks.is_empty() {
        return Fetched::NoCopy;
    }
    let mut requests: futures_util::stream::FuturesUnordered<_> = asks
        .iter()
        .enumerate()
        .map(|(i, (peer, ks))| {
            let body = encode_fetch(ks);
            async move { (i, peer.request(view.id, body).await) }
        })
        .collect();
    // The keys some copy answered for, and those a copy was asked for that is alive but did
    // not answer (still pending at the deadline, or it failed the request).
    let mut answered: HashSet<&Bytes> = HashSet::new();
    let mut unsure: HashSet<&Bytes> = HashSet::new();
    // Half the inter-node timeout at most, so that a forwarded command that waited for this
    // still answers before its sender gives up; answers that came by then are applied.
    let wait = cluster.timeouts.half;
    let until = Instant::now() + wait;
    let mut finished = vec![false; asks.len()];
    while let Ok(Some((i, response))) =
        tokio::time::timeout_at(until, futures_util::StreamExt::next(&mut requests)).await
    {
        finished[i] = true;
        let asked = &asks[i].1;
        let states = match response {
            Ok(r) => decode_states(r.body).ok(),
            Err(e) if copy_is_gone(&e) => continue,
            Err(_) => None,
        };
        // A body that is not states is no answer either.
        let Some(states) = states else {
            unsure.extend(asked.iter());
            continue;
        };
        // Every answer is applied (not only the first per key): a stale copy may answer
        // before the one with the newest state.
        answered.extend(asked.iter());
        let now = now_ms();
        for (key, state) in &states {
            if node.engine.store.apply(key, state, now) {
                stats.fetched.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    // Asks still pending at the deadline: alive (the connection is up) but slow, or frozen.
    drop(requests);
    for ((_, ks), _) in asks.iter().zip(&finished).filter(|(_, done)| !**done) {
        unsure.extend(ks.iter());
    }
    // In doubt: a key of a slot this node is receiving, that no copy answered for while one
    // that could have did not. In a slot it already held a copy of, replication kept it
    // current, so what it holds (or its absence: a key never written) stands; when every
    // copy asked is gone, nothing more can be learnt.
    let receiving = cluster.handoff.receiving(view);
    let in_doubt = keys.iter().any(|k| {
        !answered.contains(k)
            && unsure.contains(k)
            && receiving.get(usize::from(key_slot(k))) == Some(&true)
    });
    if in_doubt {
        stats.unanswered.fetch_add(1, Ordering::Relaxed);
        Fetched::Unanswered
    } else {
        Fetched::Answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_wire::Unavailable;
    use std::io::ErrorKind;

    #[test]
    fn only_a_copy_whose_process_is_not_there_is_gone() {
        let gone = [
            Unavailable::Connect(ErrorKind::ConnectionRefused),
            Unavailable::ConnectionLost,
            Unavailable::Shutdown,
            // A process being killed completes connects from its backlog, then resets them.
            Unavailable::Handshake(shoal_wire::HandshakeError::Io(ErrorKind::ConnectionReset)),
        ];
        for u in gone {
            assert!(copy_is_gone(&WireError::PeerUnavailable(u.clone())), "{u}");
        }
        // No answer at all: the copy may be alive behind a partition, or frozen (its kernel
        // still accepts the connection; the handshake times out).
        assert!(!copy_is_gone(&WireError::PeerUnavailable(
            Unavailable::ConnectTimeout
        )));
        assert!(!copy_is_gone(&WireError::PeerUnavailable(
            Unavailable::Handshake(shoal_wire::HandshakeError::Timeout)
        )));
        assert!(!copy_is_gone(&WireError::PeerUnavailable(
            Unavailable::Connect(ErrorKind::HostUnreachable)
        )));
        assert!(!copy_is_gone(&WireError::Timeout));
    }
}
