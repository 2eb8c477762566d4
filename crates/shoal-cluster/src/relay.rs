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
//! way, so they keep their order; when the link comes back, or the relay changes, a request
//! waits until every request relayed before it was answered (at most `cluster-timeout-ms`),
//! so none overtakes them on the other way. One hop only: a relayed request is never
//! relayed again.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use shoal_wire::{PeerClient, Response, Unavailable, WireError};
use tokio::sync::Notify;

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

    /// The member requests go through now, if any.
    pub fn via(&self) -> Option<String> {
        if !self.relaying.load(Ordering::Acquire) {
            return None;
        }
        let slot = self.via.lock().unwrap_or_else(|e| e.into_inner());
        slot.0.as_ref().map(|v| v.name.clone())
    }

    /// Sends `body` to the member and waits for its response: straight, or through the
    /// relay while there is one.
    pub async fn request(&self, epoch: u64, body: Bytes) -> Result<Response, WireError> {
        if !self.relaying.load(Ordering::Acquire) && self.in_flight.load(Ordering::Acquire) == 0 {
            return self.direct.request(epoch, body).await;
        }
        let (mut via, mut number) = self.current();
        if self.in_flight.load(Ordering::Acquire) > 0
            && self.sent_through.load(Ordering::Acquire) != number
        {
            // The link is back, or the relay changed: what was relayed before goes first.
            self.wait_drained().await;
            (via, number) = self.current();
        }
        let Some(via) = via else {
            return self.direct.request(epoch, body).await;
        };
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.sent_through.store(number, Ordering::Release);
        self.stats.relayed.fetch_add(1, Ordering::Relaxed);
        let _done = InFlight(self);
        match via
            .client
            .request(epoch, encode_relay(&self.target, self.direct.addr(), &body))
            .await
        {
            Ok(response) => decode_relay_response(response.body),
            Err(e) => Err(relay_link_failed(e)),
        }
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

/// Counts a relayed request as answered when dropped (answered, failed or abandoned).
struct InFlight<'a>(&'a Route);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.drained.notify_waiters();
        }
    }
}

/// What the relay's own link failing tells about the target: nothing for sure. A relay
/// that refused the connection sent nothing on, but says nothing of the target, which may
/// be alive (so not "refused", which would send a write to the next copy); a timeout or a
/// lost connection may have sent it on, as they may have run it on a direct link.
pub fn relay_link_failed(e: WireError) -> WireError {
    match e {
        WireError::PeerUnavailable(u) if u.refused() => {
            WireError::PeerUnavailable(Unavailable::ConnectTimeout)
        }
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
        assert!(matches!(
            relay_link_failed(WireError::PeerUnavailable(Unavailable::ConnectionLost)),
            WireError::PeerUnavailable(Unavailable::ConnectionLost)
        ));
    }
}
