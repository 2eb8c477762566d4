//! The status page on the metrics port: `/` is a small HTML page (`status.html`) that
//! fetches `/status.json` every second and shows the cluster at a glance.
//!
//! `/status.json` is this node's INFO and every live peer's, gathered over the inter-node
//! protocol (INFO sent as a forwarded command, so no new message kind), boiled down to the
//! figures the page shows. A peer that does not answer within [`PEER_WAIT`] is listed as
//! unreachable.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use shoal_cluster::message::encode_command;
use shoal_cluster::Server;
use shoal_engine::cmd::{render_info, Info};
use shoal_engine::hooks::Host;

/// The page itself.
pub const PAGE: &str = include_str!("status/status.html");

/// How long `/status.json` waits for a peer's figures.
pub const PEER_WAIT: Duration = Duration::from_secs(1);

/// How long one gathering of `/status.json` is served again (the page asks every second):
/// however many ask, the peers are asked at most once per this.
pub const REUSE: Duration = Duration::from_secs(1);

/// The last `/status.json`, shared by the metrics port's connections; the lock is held
/// while gathering, so concurrent requests wait for one gathering.
#[derive(Default)]
pub struct StatusCache(tokio::sync::Mutex<Option<(tokio::time::Instant, String)>>);

impl StatusCache {
    /// A gathering at most [`REUSE`] old.
    pub async fn get(&self, node: &Arc<Server>) -> String {
        let mut last = self.0.lock().await;
        if let Some((at, json)) = last.as_ref() {
            if at.elapsed() < REUSE {
                return json.clone();
            }
        }
        let json = status_json(node).await;
        *last = Some((tokio::time::Instant::now(), json.clone()));
        json
    }
}

/// The INFO fields the page shows, under their JSON names.
const FIELDS: &[(&str, &str)] = &[
    ("state", "shoal_state"),
    ("slots", "shoal_owned_slots"),
    ("memory", "used_memory"),
    ("maxmemory", "maxmemory"),
    ("ops", "instantaneous_ops_per_sec"),
    ("requests", "total_commands_processed"),
    ("hits", "keyspace_hits"),
    ("misses", "keyspace_misses"),
    ("forwarded", "shoal_forwarded"),
    ("served", "shoal_served_for_peers"),
    ("handoff_pending", "shoal_handoff_slots_pending"),
    ("handoff_planned", "shoal_handoff_slots_planned"),
    ("handoff_eta", "shoal_handoff_eta_secs"),
    ("handoff_bytes_per_sec", "shoal_handoff_bytes_per_sec"),
];

/// INFO's text as field -> value (`db0:keys=..` gives `keys`).
pub fn parse_info(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if k == "db0" {
            for kv in v.split(',') {
                if let Some(("keys", n)) = kv.split_once('=') {
                    out.insert("keys".to_string(), n.to_string());
                }
            }
        } else {
            out.insert(k.to_string(), v.trim().to_string());
        }
    }
    out
}

/// One node's entry in `/status.json`.
fn node_json(
    out: &mut String,
    name: &str,
    addr: &str,
    me: bool,
    info: Option<&HashMap<String, String>>,
) {
    let _ = write!(
        out,
        "{{\"name\":{},\"addr\":{},\"me\":{me},\"reachable\":{}",
        json_string(name),
        json_string(addr),
        info.is_some()
    );
    if let Some(info) = info {
        let _ = write!(out, ",\"keys\":{}", number(info.get("keys")));
        for (json, field) in FIELDS {
            match info.get(*field) {
                Some(v) if v.parse::<f64>().is_ok() => {
                    let _ = write!(out, ",\"{json}\":{v}");
                }
                Some(v) => {
                    let _ = write!(out, ",\"{json}\":{}", json_string(v));
                }
                None => {}
            }
        }
    }
    out.push('}');
}

fn number(v: Option<&String>) -> &str {
    v.map(String::as_str)
        .filter(|v| v.parse::<f64>().is_ok())
        .unwrap_or("0")
}

/// `s` as a JSON string.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// This node's INFO (every section).
fn local_info(node: &Server) -> String {
    let info = Info {
        databases: None,
        cluster: node.cluster(),
        cluster_enabled: false,
        keyspace: None,
        caller: 0,
    };
    render_info(&node.engine, &info, &["all".to_string()])
}

/// A peer's INFO, asked as a forwarded command; None if it does not answer in time.
async fn peer_info(node: &Server, peer: &shoal_cluster::Peer, view_id: u64) -> Option<String> {
    let cluster = node.cluster.as_ref()?;
    let args = [Bytes::from_static(b"INFO"), Bytes::from_static(b"all")];
    let body = encode_command(
        shoal_resp::Protocol::Resp2,
        0,
        None,
        &args,
        cluster.deadline_ms(),
        0,
    );
    let reply = tokio::time::timeout(PEER_WAIT, peer.request(view_id, body))
        .await
        .ok()?
        .ok()?
        .body;
    // A bulk string: `$<len>\r\n<text>\r\n`.
    let text = std::str::from_utf8(&reply).ok()?;
    let (head, rest) = text.split_once("\r\n")?;
    head.strip_prefix('$')?;
    Some(rest.strip_suffix("\r\n").unwrap_or(rest).to_string())
}

/// `/status.json`: this node and every member of its cluster.
pub async fn status_json(node: &Arc<Server>) -> String {
    let mine = parse_info(&local_info(node));
    let mut out = String::from("{\"nodes\":[");
    match node.cluster.as_ref() {
        None => node_json(&mut out, "this node", "", true, Some(&mine)),
        Some(cluster) => {
            let view = cluster.view();
            let me = view.myself.clone();
            node_json(
                &mut out,
                &me.name,
                &me.redis_addr().to_string(),
                true,
                Some(&mine),
            );
            let peers: Vec<_> = view
                .live_peers()
                .map(|(n, p)| (n.clone(), p.clone()))
                .collect();
            let infos = futures_util::future::join_all(
                peers.iter().map(|(_, p)| peer_info(node, p, view.id)),
            )
            .await;
            for ((n, _), info) in peers.iter().zip(infos) {
                out.push(',');
                let info = info.map(|t| parse_info(&t));
                node_json(
                    &mut out,
                    &n.name,
                    &n.redis_addr().to_string(),
                    false,
                    info.as_ref(),
                );
            }
            // Members known but down: listed, without figures.
            for row in view.members.iter().filter(|r| r.state.as_str() == "down") {
                out.push(',');
                node_json(
                    &mut out,
                    &row.info.name,
                    &row.info.redis_addr().to_string(),
                    false,
                    None,
                );
            }
        }
    }
    let _ = write!(out, "],\"time_ms\":{}}}", shoal_engine::clock::now_ms());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_is_boiled_down_to_the_pages_figures() {
        let info = parse_info(
            "# Stats\r\nkeyspace_hits:7\r\nshoal_state:serving\r\n\r\n# Keyspace\r\ndb0:keys=42,expires=1,avg_ttl=0\r\n",
        );
        let mut out = String::new();
        node_json(&mut out, "n\"0", "127.0.0.1:1", true, Some(&info));
        assert_eq!(
            out,
            "{\"name\":\"n\\\"0\",\"addr\":\"127.0.0.1:1\",\"me\":true,\"reachable\":true,\"keys\":42,\"state\":\"serving\",\"hits\":7}"
        );
        let mut out = String::new();
        node_json(&mut out, "n1", "x", false, None);
        assert_eq!(
            out,
            "{\"name\":\"n1\",\"addr\":\"x\",\"me\":false,\"reachable\":false}"
        );
        assert_eq!(json_string("a\u{1}\\"), "\"a\\u0001\\\\\"");
    }
}
