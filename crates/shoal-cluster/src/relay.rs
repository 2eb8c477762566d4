//! Relaying: the way to a member whose link from this node is cut while others reach it.
//!
//! Two members that cannot reach each other over TCP, while both reach the rest (a firewall
//! rule, a broken route between two hosts), both stay up: the others answer for each in
//! SWIM's indirect probes. Without a relay every command this node forwards to the other
//! waits for its timeout, then goes to the next copy (a read) or answers TRYAGAIN (a
//! write), and replication and hand-off between the two stop until the cut heals.
//!
//! So each member's requests go through its [`Route`]: straight on its link, or, while
//! `reach` finds that link cut (its probes have all failed for `reach::cut_after`) and
//! names a member whose probes answer, as a RELAY request to that member, which sends the
//! request on as RELAYED on its own link and answers with the target's response, or with
//! what went wrong (`message::RelayFailure`), which this node then treats as the same
//! failure of its own link would be: a relay that finds the target gone (connection
//! refused) sends a read or a write to the next copy at once, one that gets no answer from
//! a frozen target answers after its wait as a timeout. The target serves a relayed request
//! as if the origin had sent it on a link of its own (`peer`), so a hand-off report counts
//! for the origin and a delta's fetch goes back to it.
//!
//! Order: one target's relayed requests all go through the same member, on one link each
//! way, so they keep their order (the relay queues each on its link as it reads it); when
//! the link comes back, or the relay changes, a request waits until every request relayed
//! before it was answered (at most half of `cluster-timeout-ms`, so that a command's
//! deadline has room left), and the requests after it wait behind it in turn, so none
//! overtakes them on the other way. Requests sent straight just before the link was found
//! cut are not waited for: nothing answered on the link for two seconds by then, and a
//! command that arrives after its deadline does not run. One hop only: a relayed request
//! is never relayed again.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use shoal_wire::{PeerClient, Response, Unavailable, WireError};
use tokio::sync::{Notify, Semaphore};

use crate::message::{decode_relay_response, encode_relay};
use crate::ClusterStats;

/// The member requests to another member go through while the link to it is cut.
#[derive(Clone, Debug)]
pub struct Via {
    pub name: String,
    pub client: PeerClient,
}

/// How this node's requests reach one member.
pub struct Route {
    /// The member's name (what the relay looks it up by).
    target: String,
    direct: PeerClient,
    /// True while requests go through `via` (set by `reach`).
    relaying: AtomicBool,
    /// The relay, and a number that changes with it.
    via: Mutex<(Option<Via>, u64)>,
    /// Relayed requests not answered yet, the number of the relay they went through, and
    /// who waits for them to be answered.
    in_flight: AtomicUsize,
    sent_through: AtomicU64,
    drained: Notify,
    /// How long a request waits for the relayed ones before it to be answered.
    drain_wait: Duration,
    /// Requests that could not take the fast path pass one at a time, in the order they
    /// came (a fair semaphore), until each is queued on its link; while any waits, later
    /// requests join them, so none overtakes one that waits for a drain.
    gate: Semaphore,
    waiting: AtomicUsize,
    stats: Arc<ClusterStats>,
}

impl Route {
    pub fn new(
        target: String,
        direct: PeerClient,
        drain_wait: Duration,
        stats: Arc<ClusterStats>,
    ) -> Route {
        Route {
            target,
            direct,
            relaying: AtomicBool::new(false),
            via: Mutex::new((None, 0)),
            in_flight: AtomicUsize::new(0),
            sent_through: AtomicU64::new(0),
            drained: Notify::new(),
            drain_wait,
            gate: Semaphore::new(1),
            waiting: AtomicUsize::new(0),
            stats,
        }
    }

    /// The member's direct link.
    pub fn direct(&self) -> &PeerClient {
        &self.direct
    }

    /// Sends requests through `via` from now on, or straight again with `None`.
    pub fn set_via(&self, via: Option<Via>) {
        let mut slot = self.via.lock().unwrap_or_else(|e| e.into_inner());
        self.relaying.store(via.is_some(), Ordering::Release);
        *slot = (via, slot.1 + 1);
    }

    fn current(&self) -> (Option<Via>, u64) {
        self.via.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The member requests go through now, if any: its name and cluster address.
    pub fn via(&self) -> Option<(String, std::net::SocketAddr)> {
        if !self.relaying.load(Ordering::Acquire) {
            return None;
        }
        let slot = self.via.lock().unwrap_or_else(|e| e.into_inner());
        slot.0.as_ref().map(|v| (v.name.clone(), v.client.addr()))
    }

    /// Sends `body` to the member and waits for its response: straight, or through the
    /// relay while there is one. Like [`PeerClient::request`], the request takes its place
    /// on the way on the first poll.
    pub async fn request(&self, epoch: u64, body: Bytes) -> Result<Response, WireError> {
        self.request_allowing(epoch, body, Duration::ZERO).await
    }

    /// [`Route::request`] with `extra` time for the answer ([`PeerClient::request_allowing`]).
    pub async fn request_allowing(
        &self,
        epoch: u64,
        body: Bytes,
        extra: Duration,
    ) -> Result<Response, WireError> {
        if !self.relaying.load(Ordering::Acquire)
            && self.in_flight.load(Ordering::Acquire) == 0
            && self.waiting.load(Ordering::Acquire) == 0
        {
            return self.direct.request_allowing(epoch, body, extra).await;
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let mut waiting = Waiting(Some(self));
        let permit = self.gate.acquire().await;
        let (mut via, mut number) = self.current();
        if self.in_flight.load(Ordering::Acquire) > 0
            && self.sent_through.load(Ordering::Acquire) != number
        {
            // The link is back, or the relay changed: what was relayed before goes first.
            self.wait_drained().await;
            (via, number) = self.current();
        }
        let (mut sent, _done) = match via {
            None => (
                Box::pin(self.direct.request_allowing(epoch, body, extra)) as RequestFuture,
                None,
            ),
            Some(via) => {
                self.in_flight.fetch_add(1, Ordering::AcqRel);
                self.sent_through.store(number, Ordering::Release);
                self.stats.relayed.fetch_add(1, Ordering::Relaxed);
                let done = InFlight(self);
                let relayed = encode_relay(&self.target, self.direct.addr(), &body);
                let client = via.client;
                let sent = async move {
                    match client.request_allowing(epoch, relayed, extra).await {
                        Ok(response) => decode_relay_response(response.body),
                        Err(e) => Err(relay_link_failed(e)),
                    }
                };
                (Box::pin(sent) as RequestFuture, Some(done))
            }
        };
        // Queued on its link before the next request may pass.
        if let std::task::Poll::Ready(r) = futures_util::poll!(sent.as_mut()) {
            return r;
        }
        drop(permit);
        waiting.done();
        sent.await
    }

    async fn wait_drained(&self) {
        let until = tokio::time::Instant::now() + self.drain_wait;
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight.load(Ordering::Acquire) == 0 {
                return;
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                return;
            }
        }
    }
}

type RequestFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, WireError>> + Send + 'a>>;

/// Counts a request off the gate's queue once it is on its way (or dropped).
struct Waiting<'a>(Option<&'a Route>);

impl Waiting<'_> {
    fn done(&mut self) {
        if let Some(r) = self.0.take() {
            r.waiting.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// Counts a relayed request as answered when dropped (answered, failed or abandoned).
struct InFlight<'a>(&'a Route);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.drained.notify_waiters();
        }
    }
}

/// What the relay's own link failing tells about the target: nothing for sure, so never
/// that the target's process is gone (which would send a write to the next copy while the
/// target may run it). Refused before anything was sent, or a relay shutting down: the
/// target is out of reach and ran nothing (as a connect that timed out). Lost with the
/// request sent: the relay may have passed it on, and the target run it (as a timeout).
pub fn relay_link_failed(e: WireError) -> WireError {
    match e {
        WireError::PeerUnavailable(u) if u.refused() => {
            WireError::PeerUnavailable(Unavailable::ConnectTimeout)
        }
        WireError::PeerUnavailable(u) if u.lost() => WireError::Timeout,
        WireError::Remote {
            code: shoal_wire::ErrorCode::ShuttingDown,
            ..
        } => WireError::PeerUnavailable(Unavailable::ConnectTimeout),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relay_that_refuses_says_nothing_of_the_target() {
        let refused =
            WireError::PeerUnavailable(Unavailable::Connect(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(
            relay_link_failed(refused).to_string(),
            WireError::PeerUnavailable(Unavailable::ConnectTimeout).to_string()
        );
        assert!(matches!(
            relay_link_failed(WireError::Timeout),
            WireError::Timeout
        ));
        // Lost or shut down: the target may be alive (and may have run it), never "gone".
        for lost in [Unavailable::ConnectionLost, Unavailable::Shutdown] {
            assert!(matches!(
                relay_link_failed(WireError::PeerUnavailable(lost)),
                WireError::Timeout
            ));
        }
        let shutting = WireError::Remote {
            code: shoal_wire::ErrorCode::ShuttingDown,
            message: String::new(),
        };
        assert!(matches!(
            relay_link_failed(shutting),
            WireError::PeerUnavailable(Unavailable::ConnectTimeout)
        ));
        for e in [
            WireError::PeerUnavailable(Unavailable::Connect(std::io::ErrorKind::ConnectionRefused)),
            WireError::PeerUnavailable(Unavailable::ConnectionLost),
            WireError::PeerUnavailable(Unavailable::Shutdown),
        ] {
            assert!(
                !matches!(relay_link_failed(e), WireError::PeerUnavailable(u) if u.refused() || u.lost()),
                "a relay's failure never says the target is gone"
            );
        }
    }
}
