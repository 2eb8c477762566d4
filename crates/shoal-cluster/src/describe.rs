//! The cluster as Redis Cluster tools read it: CLUSTER INFO, NODES and MYID, and INFO's
//! cluster section (the command layer asks through `hooks::ClusterInfo`).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use shoal_store::SLOTS;

use super::{Cluster, MemberState};
use shoal_engine::hooks::{ClusterInfo, SlotNode, SlotRange};

impl ClusterInfo for Cluster {
    fn acknowledged_replicas(&self) -> Option<i64> {
        // With write-ack = all a write waits for the replicas that are reachable: all of
        // them only when every member is.
        let view = self.view();
        let all_reachable = (0..view.len() as u16).all(|m| view.reachable(m));
        (self.write_ack == crate::WriteAck::All && all_reachable)
            .then(|| view.placement.width().saturating_sub(1) as i64)
    }

    fn connections(&self) -> u64 {
        let made: u64 = self
            .view()
            .live_peers()
            .map(|(_, p)| p.client.connections_open())
            .sum();
        made + self.stats.inbound_links.load(Ordering::Relaxed)
    }

    fn good_replicas(&self) -> usize {
        // Every slot has as many copies as the placement is wide: `replicas` plus one, at
        // most the members the view holds (gossip drops a member declared down).
        self.view().placement.width().saturating_sub(1)
    }

    fn slot_ranges(&self) -> Option<Vec<SlotRange>> {
        if !self.accepting.load(Ordering::Acquire) {
            return None;
        }
        let view = self.view();
        let node = |m: u16| {
            let n = &view.nodes[usize::from(m)];
            let a = n.redis_addr();
            SlotNode {
                id: n.id.clone(),
                ip: a.ip().to_string(),
                port: a.port(),
            }
        };
        // The primary alone. Redis Cluster clients give each node one role (redis-py,
        // ioredis and node-redis mark a node listed as a replica of any range a replica,
        // and send DBSIZE, KEYS, SCAN and FLUSHALL to primaries only), while every Shoal
        // node is the owner of some slots and a copy of others: listing the copies would
        // hide some owners from those commands.
        let copies = |slot: u16| -> Vec<u16> { vec![view.primary(slot)] };
        let mut out: Vec<SlotRange> = Vec::new();
        let mut run: Option<(u16, Vec<u16>)> = None;
        for slot in 0..SLOTS {
            let c = copies(slot);
            match &run {
                Some((_, prev)) if *prev == c => {}
                _ => {
                    if let Some((first, prev)) = run.take() {
                        out.push(SlotRange {
                            first,
                            last: slot - 1,
                            nodes: prev.into_iter().map(node).collect(),
                        });
                    }
                    run = Some((slot, c));
                }
            }
        }
        if let Some((first, prev)) = run {
            out.push(SlotRange {
                first,
                last: SLOTS - 1,
                nodes: prev.into_iter().map(node).collect(),
            });
        }
        Some(out)
    }

    fn my_id(&self) -> String {
        self.view().myself.id.clone()
    }

    fn cluster_info(&self) -> String {
        let view = self.view();
        let mut s = String::new();
        let n = view.len();
        // A slot is "pfail" when its owner looks unreachable but a copy does not, "fail"
        // when no copy looks reachable.
        let (mut pfail, mut fail) = (0, 0);
        for slot in 0..SLOTS {
            let owners = view.owners(slot);
            if !owners.iter().any(|&m| view.reachable(m)) {
                fail += 1;
            } else if !view.reachable(owners[0]) {
                pfail += 1;
            }
        }
        let ok = SLOTS - pfail - fail;
        // A node cut off from the majority serves no slot (as Redis's minority side).
        let state = if fail == 0 && !self.handoff.is_cut_off() {
            "ok"
        } else {
            "fail"
        };
        let _ = write!(
            s,
            "cluster_state:{state}\r\ncluster_slots_assigned:{SLOTS}\r\ncluster_slots_ok:{ok}\r\n\
             cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{n}\r\n\
             cluster_size:{n}\r\ncluster_current_epoch:{e}\r\ncluster_my_epoch:{e}\r\n\
             cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
             total_cluster_links_buffer_limit_exceeded:0\r\n",
            e = view.epoch()
        );
        let h = &self.handoff.stats;
        let _ = write!(
            s,
            "shoal_state:{}\r\nshoal_members_known:{}\r\nshoal_settled:{}\r\n\
             shoal_handoff_slots_pending:{}\r\nshoal_handoff_keys_sent:{}\r\n",
            self.state_name(),
            view.members.len(),
            u8::from(self.handoff.settled_in(&view)),
            h.slots_pending.load(Ordering::Relaxed),
            h.keys_sent.load(Ordering::Relaxed),
        );
        s
    }

    fn cluster_nodes(&self, now_ms: u64) -> String {
        let view = self.view();
        // Members in the placement are shown as masters with the slot ranges they own;
        // Shoal's own states add a flag: `joining` (still filling), `leaving` (handing off,
        // no slots), `fail` (declared down by gossip, no slots); `fail?` (Redis's PFAIL) is a
        // member gossip suspects or this node's link cannot reach.
        let mut s = String::new();
        let me_state = self.state_name();
        for row in &view.members {
            let n = &row.info;
            let placed = view
                .nodes
                .iter()
                .position(|p| p.name == n.name)
                .filter(|_| row.state.placed());
            let myself = n.name == view.myself.name;
            let up = match placed {
                Some(i) => view.reachable(i as u16),
                None => row.state != MemberState::Down,
            };
            let mut flags = String::from(if myself { "myself,master" } else { "master" });
            let state = if myself { me_state } else { row.state.as_str() };
            match state {
                "joining" => flags.push_str(",joining"),
                "leaving" => flags.push_str(",leaving"),
                "down" => flags.push_str(",fail"),
                _ if !up || row.suspect => flags.push_str(",fail?"),
                _ => {}
            }
            let link = if up { "connected" } else { "disconnected" };
            // The address Redis Cluster clients use (the cluster-client port when there is
            // one), as `ip:port@bus-port`.
            let a = n.redis_addr();
            let _ = write!(
                s,
                "{} {}:{}@{} {flags} - 0 {now_ms} {} {link}",
                n.id,
                a.ip(),
                a.port(),
                n.cluster.port(),
                view.epoch()
            );
            if let Some(i) = placed {
                for (a, b) in view.placement.slot_ranges_of(i) {
                    if a == b {
                        let _ = write!(s, " {a}");
                    } else {
                        let _ = write!(s, " {a}-{b}");
                    }
                }
            }
            s.push('\n');
        }
        s
    }

    fn info_lines(&self, out: &mut String) {
        Cluster::info_lines(self, out);
    }

    fn forget(&self, id: &str) -> Result<(), String> {
        let view = self.view();
        let Some(row) = view.members.iter().find(|r| r.info.id == id) else {
            return Err(format!("ERR Unknown node {id}"));
        };
        if row.info.name == view.myself.name {
            return Err("ERR I tried hard but I can't forget myself...".into());
        }
        if self.mode != crate::Mode::Gossip {
            return Err("ERR a static cluster's members are its configuration: \
                        change cluster-nodes instead"
                .into());
        }
        // A suspected one too: a node cut off from the majority declares nobody down (see
        // `shoal_gossip::GossipHandle::hold_declarations_while`).
        if row.state != MemberState::Down && !row.suspect {
            return Err(format!(
                "ERR {} is {} and not suspected: only a member declared down or suspected \
                 can be forgotten",
                row.info.name,
                row.state.as_str()
            ));
        }
        self.handoff.forget(&row.info.name, &view);
        self.handoff.reevaluate(self);
        Ok(())
    }
}
