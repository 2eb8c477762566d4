//! Real UDP on loopback: three drivers find each other from a seed list, then one leaves.

use std::net::SocketAddr;
use std::time::Duration;

use shoal_gossip::{
    Auth, Gossip, GossipConfig, GossipHandle, Liveness, Membership, NodeId, NodeState,
};
use shoal_net::UdpSocket;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(20);

async fn wait_for(
    rx: &mut watch::Receiver<Membership>,
    what: &str,
    pred: impl FnMut(&Membership) -> bool,
) {
    let outcome = tokio::time::timeout(DEADLINE, rx.wait_for(pred))
        .await
        .map(|r| r.is_ok());
    match outcome {
        Ok(true) => {}
        Ok(false) => panic!("{what}: gossip task stopped"),
        Err(_) => panic!(
            "{what}: not reached within {DEADLINE:?}; last view: {:?}",
            *rx.borrow()
        ),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn three_drivers_meet_and_one_leaves() {
    let shutdown = CancellationToken::new();
    let mut sockets = Vec::new();
    for _ in 0..3 {
        sockets.push(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    }
    let addrs: Vec<SocketAddr> = sockets.iter().map(|s| s.local_addr().unwrap()).collect();
    let seeds: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
    let auth = Auth::new("udp-test", b"secret").unwrap();
    let mut nodes: Vec<(GossipHandle, watch::Receiver<Membership>)> = Vec::new();
    for (i, socket) in sockets.into_iter().enumerate() {
        let id = NodeId::new(&format!("n{i}"), addrs[i], addrs[i], addrs[i], 1).unwrap();
        nodes.push(Gossip::start(
            GossipConfig::default(),
            auth.clone(),
            id,
            NodeState::Joining,
            socket,
            seeds.clone(),
            shutdown.clone(),
        ));
    }
    for (h, _) in &nodes {
        h.set_state(NodeState::Serving).unwrap();
    }
    for (_, rx) in nodes.iter_mut() {
        wait_for(rx, "3 members up and serving", |m| {
            m.up().count() == 3
                && m.members
                    .iter()
                    .all(|x| x.state == Some(NodeState::Serving))
        })
        .await;
    }
    let version = nodes[0].1.borrow().version;

    let (leaver, _) = nodes.pop().unwrap();
    leaver.set_state(NodeState::Leaving).unwrap();
    for (_, rx) in nodes.iter_mut() {
        wait_for(rx, "n2 leaving", |m| {
            m.get("n2")
                .is_some_and(|x| x.state == Some(NodeState::Leaving))
        })
        .await;
    }
    leaver.leave().await.unwrap();
    for (_, rx) in nodes.iter_mut() {
        wait_for(rx, "n2 down after leave", |m| {
            m.get("n2").is_some_and(|x| x.liveness == Liveness::Down) && m.up().count() == 2
        })
        .await;
    }
    assert!(nodes[0].1.borrow().version > version);
    for (h, _) in &nodes {
        let s = h.stats().snapshot();
        assert_eq!(s.dropped_bad_mac + s.dropped_wrong_cluster, 0, "{s:?}");
    }
    shutdown.cancel();
}
