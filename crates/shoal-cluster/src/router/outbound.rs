//! Sending a command to the copies of its keys: the first that answers, in rank order, with
//! failover to the next when a copy cannot be reached. This is where a request crosses to
//! another node.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use shoal_engine::cmd::Access;
use shoal_wire::{ErrorCode, WireError};

use super::local::serve_body_here;
use super::outcome::{error_bytes, Outcome};
use crate::plan::{Copies, Slots};
use crate::{batching, handoff, message, Server, View};

pub fn forward(
    node: &Arc<Server>,
    view: Arc<View>,
    owners: Copies,
    body: Bytes,
    access: Access,
    turn: Turn,
    slots: Slots,
) -> Outcome {
    Outcome::Later(Box::pin(send_to_copies(
        node.clone(),
        view,
        owners,
        body,
        access,
        turn,
        slots,
    )))
}

/// [`forward`] for a command whose effect at the copy is large for its request
/// (`shoal_engine::cmd::effect_len`: a SETBIT or SETRANGE far out makes a value of up to
/// 512 MB there): alone, not in a batch, and each copy is given `extra` more time to
/// answer, as a large request is given its transfer allowance. Without it the sender gave
/// up after `cluster-timeout-ms` on a write that was still running, and answered that it
/// may have run.
#[allow(clippy::too_many_arguments)]
pub fn forward_large(
    node: &Arc<Server>,
    view: Arc<View>,
    owners: Copies,
    body: Bytes,
    access: Access,
    mut turn: Turn,
    slots: Slots,
    extra: std::time::Duration,
) -> Outcome {
    let node = node.clone();
    Outcome::Later(Box::pin(async move {
        let sent = send_from(
            node, view, owners, body, access, &mut turn, slots, None, extra,
        );
        Box::pin(sent).await
    }))
}

/// [`forward`], first in a batch of the connection's commands for the key's first copy
/// ([`Batches`]) when it can go in one.
pub fn forward_batched(
    node: &Arc<Server>,
    view: Arc<View>,
    owners: Copies,
    body: Bytes,
    access: Access,
    order: &mut FailoverOrder,
    slots: Slots,
) -> Outcome {
    let part = view
        .peer_shared(owners[0])
        .and_then(|peer| order.batches.join(node, peer, view.id, &body));
    let Some(part) = part else {
        return forward(node, view, owners, body, access, order.turn(), slots);
    };
    let (node, mut turn) = (node.clone(), order.turn_in_batch());
    Outcome::Later(Box::pin(async move {
        // The answer of a copy that ran it (counted by the batch): no failover to prepare
        // for, so the future stays small and the rest comes only when needed.
        let first = match part.answer().await {
            Ok(r) if final_answer(&r.body) => return r.body,
            first => first,
        };
        let rest = send_from(
            node,
            view,
            owners,
            body,
            access,
            &mut turn,
            slots,
            Some(first),
            std::time::Duration::ZERO,
        );
        Box::pin(rest).await
    }))
}

/// Commands one batch takes at most (at most `message::MAX_BATCH`), and bytes of their
/// bodies (a batch is one connection's: a 16-deep pipeline through a node of three fills
/// five or six places for each other node).
const BATCH_COMMANDS: usize = 256;
const BATCH_BYTES: usize = 256 << 10;
/// A command whose body is longer goes in a request of its own (its copy into a batch
/// would cost more than the request).
const BATCH_PART_MAX: usize = 16 << 10;
/// Replies up to this long are copied into the connection's output when their turn comes
/// (`shoal_node::connection`'s `COPY_REPLY`).
const COPIED_ANYWAY: usize = 512;

/// The batches one connection's forwarded commands join: the commands of a pipeline that go
/// to one node travel in one BATCH request (`message`) and come back in one response, so
/// that the link's per-request work (its place in the pending table, a timer, a frame on
/// each side, a wake-up for the answer) is paid once per batch instead of once per command.
///
/// A batch is open from its first command until it is sent, which is when the first of its
/// commands' reply futures is first polled: after the connection routed the requests it had
/// read, as a forwarded command alone is sent on its first poll. So a batch holds the
/// commands for its node that were routed before then, in order, and goes out where its
/// first command would have gone alone. Any other command of the connection that will
/// answer later and did not go in batches alone (forwarded alone, split, fanned out,
/// blocked) closes the open batches (`close`, called by the router): commands after it
/// start new ones, so nothing sent after it in a batch reaches a node before it. Only the
/// newest batch for a node takes more commands. The receiver runs every command of a batch
/// in order, each as a request of its own, and answers in pieces that each fit a frame
/// (CONTINUE asks for the next).
///
/// A failed batch fails each of its commands, which then go on to the next copy (or answer
/// an error) as a command sent alone would after the same failure (`try_copies`); once a
/// piece of its answer came they all ran, and a later failure counts for the rest as a
/// copy that took a command and did not answer in time. Scripts go alone (they may run
/// long, and every reply of a batch waits for its last).
///
/// A member gets batches once it answered one (a probe of one PING, sent when a command
/// first could join a batch for it): a node of an earlier release answers the probe as a
/// message of unknown kind, gets one request per command, and is asked again a minute later.
#[derive(Default)]
pub struct Batches {
    open: Vec<OpenBatch>,
    /// Commands that joined a batch so far, and forwarded commands that went alone (what
    /// the router compares to tell whether a command closes the batches).
    pub joined: u64,
    pub alone: u64,
    /// No command joins a batch meanwhile (an EXEC routing its queue command by command,
    /// whose fan-outs and local commands would otherwise not close them).
    pub held: bool,
}

impl std::fmt::Debug for Batches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batches")
            .field("open", &self.open.len())
            .finish()
    }
}

struct OpenBatch {
    peer: Arc<crate::Peer>,
    view_id: u64,
    /// The bodies joined so far; taken (`None`) when the batch is sent.
    bodies: Arc<std::sync::Mutex<Option<Vec<Bytes>>>>,
    /// Set when the batch is sent (read without taking the lock).
    sent: Arc<std::sync::atomic::AtomicBool>,
    /// The batch's answer until its first command takes it; then a weak handle, from which
    /// each later command takes one (only the commands hold the answer alive).
    first: Option<BatchFuture>,
    weak: Option<futures_util::future::WeakShared<BatchSend>>,
    count: usize,
    bytes: usize,
}

/// Each command's answer, in order, and the bytes of the answers the batch got.
struct Answers {
    replies: Vec<Result<shoal_wire::Response, WireError>>,
    bytes: usize,
}

type BatchSend = std::pin::Pin<Box<dyn std::future::Future<Output = Arc<Answers>> + Send>>;
type BatchFuture = futures_util::future::Shared<BatchSend>;

/// One command's place in a batch.
pub struct Part {
    answer: BatchFuture,
    index: usize,
}

impl Part {
    /// The command's answer (its batch is sent by the first of its commands to ask).
    pub async fn answer(self) -> Result<shoal_wire::Response, WireError> {
        let answers = self.answer.await;
        match answers.replies.get(self.index) {
            // A reply that is less than half of the answer's bytes is copied out, so that a
            // client slow to read it does not hold the whole answer (a slice would); but for
            // a short one, which the connection copies into its output anyway.
            Some(Ok(r)) if r.body.len() > COPIED_ANYWAY && r.body.len() * 2 < answers.bytes => {
                Ok(shoal_wire::Response {
                    epoch: r.epoch,
                    body: Bytes::copy_from_slice(&r.body),
                })
            }
            Some(answer) => answer.clone(),
            None => Err(WireError::Remote {
                code: ErrorCode::Internal,
                message: "a batch answered fewer commands than it carried".into(),
            }),
        }
    }
}

impl Batches {
    /// `body`'s place in the open batch for `peer` (a new one if none has room), or `None`
    /// when it goes alone: too long, or `peer` does not take batches (yet).
    pub fn join(
        &mut self,
        node: &Arc<Server>,
        peer: &Arc<crate::Peer>,
        view_id: u64,
        body: &Bytes,
    ) -> Option<Part> {
        if self.held || body.len() > BATCH_PART_MAX || !takes_batches(node, peer, view_id) {
            return None;
        }
        // Only the peer's newest batch takes more: one that a newer batch follows is sent
        // first, and a command joining it would overtake those in the newer one.
        let fits = |b: &OpenBatch| {
            !b.sent.load(Ordering::Relaxed)
                && b.view_id == view_id
                && b.count < BATCH_COMMANDS
                && b.bytes + body.len() <= BATCH_BYTES
        };
        let newest = self.open.iter().rposition(|b| Arc::ptr_eq(&b.peer, peer));
        let at = match newest.filter(|&at| fits(&self.open[at])) {
            Some(at) => at,
            None => {
                self.open.retain(|b| !b.sent.load(Ordering::Relaxed));
                self.open
                    .push(OpenBatch::new(node.clone(), peer.clone(), view_id));
                self.open.len() - 1
            }
        };
        let batch = &mut self.open[at];
        let answer = match batch.first.take() {
            Some(answer) => answer,
            // (Gone only if every command of it was dropped: then it was never sent.)
            None => batch.weak.as_ref()?.upgrade()?,
        };
        batch
            .bodies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()?
            .push(body.clone());
        batch.count += 1;
        batch.bytes += body.len();
        self.joined += 1;
        Some(Part {
            answer,
            index: batch.count - 1,
        })
    }

    /// Closes the open batches: commands routed from now on start new ones.
    pub fn close(&mut self) {
        self.open.clear();
    }
}

impl OpenBatch {
    fn new(node: Arc<Server>, peer: Arc<crate::Peer>, view_id: u64) -> OpenBatch {
        let bodies = Arc::new(std::sync::Mutex::new(Some(Vec::new())));
        let sent = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let send: BatchSend = {
            let (bodies, sent, peer) = (bodies.clone(), sent.clone(), peer.clone());
            Box::pin(async move {
                // Sent: nothing joins any more.
                let taken = bodies.lock().unwrap_or_else(|e| e.into_inner()).take();
                sent.store(true, Ordering::Relaxed);
                Arc::new(send_counted(&node, &peer, view_id, taken.unwrap_or_default()).await)
            })
        };
        let answer = futures_util::FutureExt::shared(send);
        OpenBatch {
            peer,
            view_id,
            bodies,
            sent,
            weak: answer.downgrade(),
            first: Some(answer),
            count: 0,
            bytes: 0,
        }
    }
}

/// How long a member that answered as an earlier release gets no batches, and how long one
/// whose probe failed waits before the next.
const PROBE_AGAIN_AFTER_NO_MS: u64 = 60_000;
const PROBE_AGAIN_AFTER_ERROR_MS: u64 = 1_000;

/// True if `peer` takes batches; if not known (or not for a while), a probe goes (one at a
/// time).
fn takes_batches(node: &Arc<Server>, peer: &Arc<crate::Peer>, view_id: u64) -> bool {
    let state = peer.batches.load(Ordering::Relaxed);
    if state == batching::YES {
        return true;
    }
    if state == batching::PROBING
        || shoal_engine::clock::now_ms() < peer.probe_after_ms.load(Ordering::Relaxed)
    {
        return false;
    }
    let probing = peer
        .batches
        .compare_exchange(
            state,
            batching::PROBING,
            Ordering::Relaxed,
            Ordering::Relaxed,
        )
        .is_ok();
    if probing {
        tokio::spawn(probe(node.clone(), peer.clone(), view_id));
    }
    false
}

/// Asks `peer` a BATCH of one PING: it takes batches if it answers one.
async fn probe(node: Arc<Server>, peer: Arc<crate::Peer>, view_id: u64) {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let ping = [Bytes::from_static(b"PING")];
    let body = message::encode_command(
        shoal_resp::Protocol::Resp2,
        0,
        None,
        &ping,
        cluster.deadline_ms(),
        0,
    );
    let (state, again_in) = match peer.request(view_id, message::encode_batch(&[body])).await {
        Ok(r) => {
            cluster.stats.batches_sent.fetch_add(1, Ordering::Relaxed);
            cluster.stats.batched.fetch_add(1, Ordering::Relaxed);
            match message::decode_batch_answer(r.body, 1) {
                message::BatchAnswer::Replies { .. } => (batching::YES, 0),
                _ => (batching::NO, PROBE_AGAIN_AFTER_NO_MS),
            }
        }
        Err(_) => (batching::UNKNOWN, PROBE_AGAIN_AFTER_ERROR_MS),
    };
    let after = shoal_engine::clock::now_ms() + again_in;
    peer.probe_after_ms.store(after, Ordering::Relaxed);
    peer.batches.store(state, Ordering::Relaxed);
}

/// An answer that goes to the client as it is: not one asking for the next copy or for
/// the command again (`handoff`).
fn final_answer(body: &[u8]) -> bool {
    !handoff::try_next_copy(body) && !body.starts_with(handoff::OTHER_VIEW)
}

/// [`send_batch`], counted: every command as forwarded, and those whose copy answered
/// (not asking for the next copy) as answered, once for the batch; `try_copies` counts
/// the rest of a command's way.
async fn send_counted(
    node: &Arc<Server>,
    peer: &crate::Peer,
    view_id: u64,
    bodies: Vec<Bytes>,
) -> Answers {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let n = bodies.len() as u64;
    cluster.stats.forwarded.fetch_add(n, Ordering::Relaxed);
    if n > 1 {
        cluster.stats.batches_sent.fetch_add(1, Ordering::Relaxed);
        cluster.stats.batched.fetch_add(n, Ordering::Relaxed);
    }
    let answers = send_batch(cluster, peer, view_id, bodies).await;
    let answered = answers
        .replies
        .iter()
        .filter(|a| a.as_ref().is_ok_and(|r| !handoff::try_next_copy(&r.body)))
        .count() as u64;
    // (A batch an earlier release refused counts as answered: its commands answer.)
    if answered > 0 {
        peer.forwards
            .answered
            .fetch_add(answered, Ordering::Relaxed);
        // (Read first: a store on every batch would dirty the line for every core.)
        if !peer.reachable.load(Ordering::Relaxed) && !peer.reachable.swap(true, Ordering::Relaxed)
        {
            crate::invalidations::route_changed(node);
        }
    }
    answers
}

/// Sends `bodies` to `peer`: one alone as itself, more as a BATCH (and its CONTINUEs);
/// each body's answer.
async fn send_batch(
    cluster: &crate::Cluster,
    peer: &crate::Peer,
    view_id: u64,
    bodies: Vec<Bytes>,
) -> Answers {
    let count = bodies.len();
    if count < 2 {
        let mut replies = Vec::with_capacity(1);
        for body in bodies {
            replies.push(peer.request(view_id, body).await);
        }
        let bytes = replies.iter().flatten().map(|r| r.body.len()).sum();
        return Answers { replies, bytes };
    }
    let mut replies = Vec::with_capacity(count);
    let mut bytes = 0;
    let mut request = message::encode_batch(&bodies);
    // Once a piece of the answer came, every command of the batch ran: if the rest is lost,
    // each answers as a command alone whose copy took it and did not answer in time (a
    // read goes to the next copy, a write says it may have run).
    let lost = WireError::Timeout;
    let failure: Result<(u64, &str), WireError> = loop {
        let response = match peer.request(view_id, request).await {
            Ok(response) => response,
            Err(_) if !replies.is_empty() => break Err(lost),
            Err(e) => break Err(e),
        };
        let epoch = response.epoch;
        bytes += response.body.len();
        match message::decode_batch_answer(response.body, count - replies.len()) {
            message::BatchAnswer::Replies { replies: got, more } => {
                let got = got
                    .into_iter()
                    .map(|body| Ok(shoal_wire::Response { epoch, body }));
                replies.extend(got);
                if more == 0 {
                    return Answers { replies, bytes };
                }
                cluster
                    .stats
                    .batch_continued
                    .fetch_add(1, Ordering::Relaxed);
                request = message::encode_continue(more);
            }
            // It answered the probe, and now does not know BATCH (it went back to an
            // earlier release): none of them ran; retryable.
            message::BatchAnswer::Unknown if replies.is_empty() => {
                peer.batches.store(batching::UNKNOWN, Ordering::Relaxed);
                break Ok((
                    epoch,
                    "TRYAGAIN the key's owner no longer takes batches of commands; it ran none",
                ));
            }
            _ => break Err(lost),
        }
    };
    let left = count - replies.len();
    match failure {
        Err(e) => replies.extend(std::iter::repeat_n(Err(e), left)),
        Ok((epoch, text)) => {
            let body = error_bytes(text);
            let answer = Ok(shoal_wire::Response { epoch, body });
            replies.extend(std::iter::repeat_n(answer, left));
        }
    }
    Answers { replies, bytes }
}

/// The order in which one connection's forwarded commands may go on to a next copy.
///
/// A command's first attempt leaves in the order the client sent it (the wire client queues
/// a request on its first poll). But when a copy fails, the callers of its failed requests
/// are woken in no set order: the runtime defers the wake-ups of a task that used up its
/// budget and runs them last first, which sent a pipeline's `GET k` to the next copy before
/// its `SET k b` and `SET k a`. So before trying another copy (or the same one again), a
/// command waits until every command forwarded before it on its connection has finished: a
/// pipeline's commands on one key reach the next copy in order. Every one, not just the one
/// before: the parts of a split command run at once, and a `SET x` after `MSET x 1 y 2`
/// waited only for the `y` part, went again before the `x` part, and was overwritten by it
/// (the scale-out test's loads). Failovers are rare; the wait costs nothing otherwise.
#[derive(Debug, Default)]
pub struct FailoverOrder {
    next: u64,
    state: Option<Arc<OrderState>>,
    /// The batches the connection's forwarded commands join.
    pub batches: Batches,
}

/// The finished turns of one [`FailoverOrder`].
#[derive(Debug, Default)]
struct OrderState {
    done: std::sync::Mutex<Done>,
    advanced: tokio::sync::Notify,
    /// Turns in `after_previous` now: only then does a finished turn notify (a notify
    /// takes the Notify's lock, on every forwarded command otherwise).
    waiting: std::sync::atomic::AtomicUsize,
}

#[derive(Debug, Default)]
struct Done {
    /// Every turn below this one has finished.
    low: u64,
    /// Finished turns above `low` (finished before one below them).
    above: std::collections::BTreeSet<u64>,
}

impl Done {
    /// Notes that turn `seq` finished; true if every turn up to it has now.
    fn finish(&mut self, seq: u64) -> bool {
        if seq != self.low {
            self.above.insert(seq);
            return false;
        }
        self.low += 1;
        while self.above.remove(&self.low) {
            self.low += 1;
        }
        true
    }
}

impl FailoverOrder {
    /// The place of the next forwarded command.
    pub fn turn(&mut self) -> Turn {
        self.batches.alone += 1;
        self.turn_in_batch()
    }

    /// [`FailoverOrder::turn`] of a command that joined a batch.
    fn turn_in_batch(&mut self) -> Turn {
        let state = self.state.get_or_insert_with(Default::default).clone();
        let seq = self.next;
        self.next += 1;
        Turn {
            seq,
            state,
            waited: false,
        }
    }

    /// Every command forwarded so far has finished.
    pub fn clear(&mut self) {
        self.state = None;
        self.next = 0;
        self.batches.close();
    }
}

/// One forwarded command's place in its connection's [`FailoverOrder`]; dropping it (the
/// command finished) lets the ones after it fail over once those before it finished too.
#[derive(Debug)]
pub struct Turn {
    seq: u64,
    state: Arc<OrderState>,
    waited: bool,
}

impl Turn {
    /// Waits until every command forwarded before this one finished (at once the second
    /// time), at most `limit`: when the next copies do not answer either, a chain of
    /// failovers would otherwise take one timeout per command.
    async fn after_previous(&mut self, limit: std::time::Duration) {
        if std::mem::replace(&mut self.waited, true) {
            return;
        }
        let state = &self.state;
        // Counted before `low` is read below: a turn that finishes after that read sees
        // the count and notifies (both sides order through `done`'s lock and SeqCst).
        state.waiting.fetch_add(1, Ordering::SeqCst);
        // Counted off however the wait ends (its future may be dropped).
        struct Counted<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _counted = Counted(&state.waiting);
        let all_done = async {
            loop {
                let advanced = state.advanced.notified();
                tokio::pin!(advanced);
                advanced.as_mut().enable();
                if state.done.lock().unwrap_or_else(|e| e.into_inner()).low >= self.seq {
                    return;
                }
                advanced.await;
            }
        };
        let _ = tokio::time::timeout(limit, all_done).await;
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let advanced = self
            .state
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .finish(self.seq);
        if advanced && self.state.waiting.load(Ordering::SeqCst) > 0 {
            self.state.advanced.notify_waiters();
        }
    }
}

/// Whether a member that failed a cluster-wide request with `e` counts as down (its slots
/// are asked of their other copies): it cannot be reached, or answers nothing in time.
pub fn fails_over(e: &WireError, write: bool) -> bool {
    match e {
        WireError::PeerUnavailable(_) | WireError::Timeout => true,
        WireError::Remote { code, .. } => *code == ErrorCode::ShuttingDown,
        WireError::Refused(_) => !write,
        WireError::Overloaded | WireError::Frame(_) => false,
    }
}

/// What a sender does when its request to a copy of a key failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Send the command to the key's next copy.
    NextCopy,
    /// Answer `-TRYAGAIN`: the command did not run, or running it again is harmless.
    TryAgain,
    /// Answer an error that says the command may have run: the client cannot know.
    MayHaveRun,
    /// Answer the failure as it is (a configuration error, an overload).
    Fail,
}

/// Where a command of `access` goes after its copy failed with `e`. Only one node may write
/// a key, so a write goes to the next copy only when the copy it was sent to is known not
/// to be running any more; a read goes on whenever the copy does not answer.
///
/// - Refused (nothing listens, or the connection was closed during the handshake: a process
///   being killed): nothing more runs there; every command goes on.
/// - The connection broke with the command on it, or this node dropped the link: the
///   process most likely died (a process that is gone closes its sockets), but it may have
///   run the command first. Reads and blind writes go on; another write answers that it may
///   have run, where sending it on let an INCR count twice (the whole-cluster simulation
///   found it).
/// - No answer in time (the connect, the handshake or the request timed out): the copy may
///   be alive behind a partition or paused, still running other senders' writes. A write
///   sent on made a second writer, and the simulation saw acknowledged writes lost that way
///   (two INCRs answering one value, reads missing the reader's own writes). Writes answer
///   TRYAGAIN until gossip declares the copy down (about `cluster-timeout-ms` plus gossip's
///   detection) and the view moves its keys, as Redis Cluster answers nothing for a failed
///   master's keys until a replica takes over; an INCR that was sent answers that it may
///   have run.
/// - A handshake refusal (another secret or cluster name) is a configuration error: reads go
///   on, writes do not, so a misconfigured pair cannot make a second writer for good.
///
/// A static cluster (`cluster-nodes`, no gossip) has no failure detector that would ever
/// move a silent copy's keys: there a command goes on whenever its copy cannot be reached
/// (`detector` false), and a write the owner also ran is settled by last-writer-wins (a
/// retried INCR may count twice). Except a write whose request the copy took and did not
/// answer in time: that copy is most likely alive and busy (a long script, a large DEL on
/// its worker) and still running it, so sent on it ran twice, and the copy that ran it
/// last, from a state that lacked the owner's latest writes, overwrote them (Redis's test
/// suite through a cluster node: a 4-second script lost the SET acknowledged before it).
/// It answers as with a failure detector.
pub fn on_failure(e: &WireError, access: Access, detector: bool) -> OnFailure {
    use OnFailure::*;
    if !detector {
        return match (e, access) {
            (WireError::Timeout, Access::BlindWrite) => TryAgain,
            (WireError::Timeout, Access::Write) => MayHaveRun,
            _ if fails_over(e, access != Access::Read) => NextCopy,
            _ => Fail,
        };
    }
    let read = access == Access::Read;
    let blind = access == Access::BlindWrite;
    match e {
        WireError::PeerUnavailable(u) if u.refused() => NextCopy,
        WireError::Remote { code, .. } if *code == ErrorCode::ShuttingDown => NextCopy,
        WireError::PeerUnavailable(u) if u.lost() => {
            if read || blind {
                NextCopy
            } else {
                MayHaveRun
            }
        }
        WireError::PeerUnavailable(_) => {
            if read {
                NextCopy
            } else {
                TryAgain
            }
        }
        WireError::Timeout if read => NextCopy,
        WireError::Timeout if blind => TryAgain,
        WireError::Timeout => MayHaveRun,
        WireError::Refused(_) if read => NextCopy,
        WireError::Refused(_) | WireError::Remote { .. } => Fail,
        WireError::Overloaded | WireError::Frame(_) => Fail,
    }
}

/// Sends a COMMAND body on keys of `slots` to the first copy that answers, in `owners` order
/// (this node runs it itself when its turn comes), and returns the reply bytes. A copy that
/// sends it back because it routes by another view ([`handoff::OTHER_VIEW`]) gets it again,
/// after the connection's earlier commands, once this node's view changed or after a pause
/// (10 ms, doubling, at most 200 ms) in case the copy's view was the one behind, while
/// twice `cluster-timeout-ms` has not passed since it first came back; then, or when the keys
/// no longer share their copies, or this node no longer serves, the client gets the
/// TRYAGAIN.
pub async fn send_to_copies(
    node: Arc<Server>,
    view: Arc<View>,
    owners: Copies,
    body: Bytes,
    access: Access,
    mut turn: Turn,
    slots: Slots,
) -> Bytes {
    send_in_turn(node, view, owners, body, access, &mut turn, slots).await
}

/// [`send_to_copies`], leaving the command's place in its connection's order to the caller:
/// the commands forwarded after it wait (to fail over or be sent again) until the caller
/// drops `turn`, for instance after it sent the keys of a part again one by one.
pub async fn send_in_turn(
    node: Arc<Server>,
    view: Arc<View>,
    owners: Copies,
    body: Bytes,
    access: Access,
    turn: &mut Turn,
    slots: Slots,
) -> Bytes {
    send_from(
        node,
        view,
        owners,
        body,
        access,
        turn,
        slots,
        None,
        std::time::Duration::ZERO,
    )
    .await
}

/// [`send_in_turn`], where `first` is the first copy's answer when it was asked already
/// (in a batch).
#[allow(clippy::too_many_arguments)]
async fn send_from(
    node: Arc<Server>,
    view: Arc<View>,
    owners: Copies,
    body: Bytes,
    access: Access,
    turn: &mut Turn,
    slots: Slots,
    mut first: Option<Result<shoal_wire::Response, WireError>>,
    extra: std::time::Duration,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let (mut view, mut owners, mut body) = (view, owners, body);
    // Read once a copy sent the command back (rarely): a clock reading per forwarded
    // command showed in profiles. The first try took at most one request timeout.
    let mut until = None;
    let mut pause = std::time::Duration::from_millis(10);
    loop {
        let mut by = None;
        let reply = try_copies(
            &node,
            &view,
            &owners,
            body.clone(),
            access,
            turn,
            &mut by,
            first.take(),
            extra,
        )
        .await;
        if slots.is_empty() || !reply.starts_with(handoff::OTHER_VIEW) {
            return reply;
        }
        // Twice `cluster-timeout-ms` from the first time it came back (usually at once):
        // gossip under load took more than one to bring two joins' views together (the
        // scale-out test's step (f) answered TRYAGAIN so with the machine busy). The
        // receiver holds the link's later commands on these slots for three.
        let until = *until
            .get_or_insert_with(|| tokio::time::Instant::now() + cluster.timeouts.request * 2);
        // The member that sent it back, which counts it as to come again (`peer::held_back`).
        let sent_back_by = by.map(|m| view.nodes[usize::from(m)].clone());
        // The connection's earlier commands go first (they may be on their way again too):
        // a pipeline's read follows its writes.
        turn.after_previous(cluster.timeouts.request).await;
        let mut changes = cluster.subscribe();
        let seen = view.id;
        let wait = pause.min(until.saturating_duration_since(tokio::time::Instant::now()));
        let _ = tokio::time::timeout(wait, async {
            while cluster.view().id == seen {
                if changes.changed().await.is_err() {
                    break;
                }
            }
        })
        .await;
        pause = (pause * 2).min(std::time::Duration::from_millis(200));
        view = cluster.view();
        let replanned = view.owners(slots[0]);
        if tokio::time::Instant::now() >= until
            || cluster.standing() != crate::plan::Standing::Serving
            || !share_copies(&view, &slots)
        {
            return reply;
        }
        cluster
            .stats
            .other_view_resent
            .fetch_add(1, Ordering::Relaxed);
        owners = Copies::from_slice(replanned);
        // Marked as sent again only towards the member that sent it back: another one
        // counts other commands of this link as to come again, and the mark would use up
        // one of theirs (a later write of theirs could then run before one still held).
        let again = sent_back_by
            .as_ref()
            .is_some_and(|n| view.nodes[usize::from(owners[0])].same_incarnation(n));
        body = message::redate(&body, cluster.deadline_ms(), again);
    }
}

/// True when every one of `slots` has the same copies in `view` as the first (they can go
/// to one node as one command).
pub fn share_copies(view: &View, slots: &[u16]) -> bool {
    match slots.split_first() {
        Some((&first, rest)) => {
            let owners = view.owners(first);
            rest.iter().all(|&s| view.owners(s) == owners)
        }
        None => true,
    }
}

/// One pass of [`send_to_copies`] over `owners`; `first` is the first copy's answer when it
/// was asked already.
#[allow(clippy::too_many_arguments)]
async fn try_copies(
    node: &Arc<Server>,
    view: &Arc<View>,
    owners: &[u16],
    body: Bytes,
    access: Access,
    turn: &mut Turn,
    answered_by: &mut Option<u16>,
    mut first: Option<Result<shoal_wire::Response, WireError>>,
    extra: std::time::Duration,
) -> Bytes {
    let cluster = node.cluster.as_ref().expect("routing runs in a cluster");
    let mut last_error = String::new();
    // The first copy was asked in a batch, which counted it (`send_counted`).
    let batched = first.is_some();
    for (i, &m) in owners.iter().enumerate() {
        if i > 0 {
            cluster.stats.failovers.fetch_add(1, Ordering::Relaxed);
            turn.after_previous(cluster.timeouts.request).await;
        }
        if m == view.me {
            // This node is the next copy: run it here, a millisecond ahead when it is a
            // failover (see `message`).
            return serve_body_here(node, view, body, u64::from(i > 0)).await;
        }
        let Some(peer) = view.peer(m) else { continue };
        let counted = batched && i == 0;
        if !counted {
            cluster.stats.forwarded.fetch_add(1, Ordering::Relaxed);
        }
        let name = &view.nodes[usize::from(m)].name;
        // A later attempt gets a deadline of its own.
        let attempt = if i == 0 {
            body.clone()
        } else {
            message::restamp(&body, cluster.deadline_ms())
        };
        let answer = match first.take().filter(|_| i == 0) {
            Some(answer) => answer,
            None => peer.request_allowing(view.id, attempt, extra).await,
        };
        match answer {
            Ok(response) => {
                // (Read first: a store on every request would dirty the line for every core.)
                if !peer.reachable.load(Ordering::Relaxed)
                    && !peer.reachable.swap(true, Ordering::Relaxed)
                {
                    crate::invalidations::route_changed(node);
                }
                // A write the owner let expire, or refused as it waits to be confirmed after a
                // pause, did not run, but the owner is alive: it goes back to the client as
                // TRYAGAIN, not to a second writer.
                let next_copy = handoff::try_next_copy(&response.body)
                    && (access == Access::Read || !handoff::owner_may_write(&response.body));
                if next_copy {
                    peer.forwards.next_copy.fetch_add(1, Ordering::Relaxed);
                } else if !counted || handoff::try_next_copy(&response.body) {
                    // (A write's EXPIRED answer is final but was not counted as answered.)
                    peer.forwards.answered.fetch_add(1, Ordering::Relaxed);
                }
                if next_copy && i + 1 < owners.len() {
                    // A copy that is starting, or that got the request too late: the next
                    // copy has the key.
                    last_error = format!(
                        "{name}: {}",
                        String::from_utf8_lossy(&response.body).trim_end()
                    );
                    continue;
                }
                *answered_by = Some(m);
                return response.body;
            }
            Err(e) => {
                let then = on_failure(&e, access, cluster.mode == crate::Mode::Gossip);
                if then != OnFailure::Fail {
                    peer.forwards.unreachable.fetch_add(1, Ordering::Relaxed);
                    if peer.reachable.swap(false, Ordering::Relaxed) {
                        crate::invalidations::route_changed(node);
                    }
                }
                match then {
                    OnFailure::NextCopy => {
                        tracing::debug!(node = %name, error = %e, "copy unreachable, trying the next");
                        last_error = format!("{name}: {e}");
                        continue;
                    }
                    OnFailure::TryAgain | OnFailure::MayHaveRun => {
                        cluster
                            .stats
                            .writes_not_failed_over
                            .fetch_add(1, Ordering::Relaxed);
                        return error_bytes(&if then == OnFailure::TryAgain {
                            format!(
                                "TRYAGAIN the key's copy {name} did not answer ({e}); a write \
                                 goes to another copy once that one is known to be down"
                            )
                        } else {
                            format!(
                                "ERR the key's copy {name} did not answer ({e}); the command \
                                 may have run there"
                            )
                        });
                    }
                    OnFailure::Fail => {
                        peer.forwards.failed.fetch_add(1, Ordering::Relaxed);
                        cluster.stats.unreachable.fetch_add(1, Ordering::Relaxed);
                        return error_bytes(&format!("ERR request to node {name} failed: {e}"));
                    }
                }
            }
        }
    }
    cluster.stats.unreachable.fetch_add(1, Ordering::Relaxed);
    error_bytes(&format!(
        "CLUSTERDOWN no copy of this key is reachable (last error: {last_error})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_wire::Unavailable;

    #[test]
    fn turns_count_as_done_only_once_every_earlier_one_is() {
        let mut d = Done::default();
        assert!(!d.finish(2));
        assert!(!d.finish(1));
        assert_eq!(d.low, 0);
        assert!(d.finish(0));
        assert_eq!(d.low, 3);
        assert!(d.above.is_empty());
        assert!(d.finish(3));
        assert_eq!(d.low, 4);
    }

    #[tokio::test]
    async fn a_turn_waits_for_every_earlier_turn_not_just_the_one_before() {
        let mut order = FailoverOrder::default();
        let (first, second, mut third) = (order.turn(), order.turn(), order.turn());
        // The second part of a split command finished before the first.
        drop(second);
        let waiter = tokio::spawn(async move {
            third
                .after_previous(std::time::Duration::from_secs(60))
                .await;
        });
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        assert!(
            !waiter.is_finished(),
            "the third turn went before the first"
        );
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .expect("the third turn goes once the first finished")
            .unwrap();
        // After a clear (every command so far answered), a new turn waits for no earlier one.
        let _unfinished = order.turn();
        order.clear();
        let mut fresh = order.turn();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            fresh.after_previous(std::time::Duration::from_secs(60)),
        )
        .await
        .expect("a turn after a clear goes at once");
    }

    #[test]
    fn only_reads_go_on_from_a_copy_that_may_be_alive() {
        use std::io::ErrorKind;
        use Access::*;
        use OnFailure::*;
        let refused =
            WireError::PeerUnavailable(Unavailable::Connect(ErrorKind::ConnectionRefused));
        let lost = WireError::PeerUnavailable(Unavailable::ConnectionLost);
        let dropped = WireError::PeerUnavailable(Unavailable::Shutdown);
        let connect_timeout = WireError::PeerUnavailable(Unavailable::ConnectTimeout);
        let unreachable =
            WireError::PeerUnavailable(Unavailable::Connect(ErrorKind::HostUnreachable));
        let handshake =
            WireError::PeerUnavailable(Unavailable::Handshake(shoal_wire::HandshakeError::Timeout));
        let reset_in_handshake = WireError::PeerUnavailable(Unavailable::Handshake(
            shoal_wire::HandshakeError::Io(ErrorKind::ConnectionReset),
        ));
        let config = WireError::Refused(shoal_wire::HandshakeError::Config("x"));
        let shutting_down = WireError::Remote {
            code: ErrorCode::ShuttingDown,
            message: String::new(),
        };
        // (error, then for Read, BlindWrite, Write)
        let table = [
            (&refused, [NextCopy, NextCopy, NextCopy]),
            (&reset_in_handshake, [NextCopy, NextCopy, NextCopy]),
            (&shutting_down, [NextCopy, NextCopy, NextCopy]),
            (&lost, [NextCopy, NextCopy, MayHaveRun]),
            (&dropped, [NextCopy, NextCopy, MayHaveRun]),
            (&connect_timeout, [NextCopy, TryAgain, TryAgain]),
            (&unreachable, [NextCopy, TryAgain, TryAgain]),
            (&handshake, [NextCopy, TryAgain, TryAgain]),
            (&WireError::Timeout, [NextCopy, TryAgain, MayHaveRun]),
            (&config, [NextCopy, Fail, Fail]),
            (&WireError::Overloaded, [Fail, Fail, Fail]),
        ];
        for (e, expected) in table {
            for (access, then) in [Read, BlindWrite, Write].into_iter().zip(expected) {
                assert_eq!(on_failure(e, access, true), then, "{e} {access:?}");
            }
        }
        // Without a failure detector (a static cluster) an unreachable copy's commands go
        // on; a write the copy took and did not answer in time does not run twice.
        for e in [&connect_timeout, &handshake, &lost, &refused] {
            for access in [Read, BlindWrite, Write] {
                assert_eq!(on_failure(e, access, false), NextCopy, "{e} {access:?}");
            }
        }
        let timeout = &WireError::Timeout;
        assert_eq!(on_failure(timeout, Read, false), NextCopy);
        assert_eq!(on_failure(timeout, BlindWrite, false), TryAgain);
        assert_eq!(on_failure(timeout, Write, false), MayHaveRun);
        assert_eq!(on_failure(&config, Write, false), Fail);
    }

    #[test]
    fn unreachable_copies_fail_over_refusals_only_for_reads() {
        let unreachable = [
            WireError::PeerUnavailable(Unavailable::Connect(std::io::ErrorKind::ConnectionRefused)),
            WireError::PeerUnavailable(Unavailable::ConnectTimeout),
            WireError::PeerUnavailable(Unavailable::ConnectionLost),
            WireError::Timeout,
        ];
        for e in &unreachable {
            assert!(fails_over(e, true) && fails_over(e, false), "{e}");
        }
        let refused = WireError::Refused(shoal_wire::HandshakeError::Config("x"));
        assert!(!fails_over(&refused, true) && fails_over(&refused, false));
        assert!(!fails_over(&WireError::Overloaded, false));
    }
}
