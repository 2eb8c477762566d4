//! Node metadata that peers need (the serving state), as small versioned foca broadcasts.
//!
//! Item wire format (big-endian), used both as a foca custom broadcast and as the payload
//! of a `MetaReply` envelope:
//!
//! ```text
//! 0   1  kind = 1 (node state)
//! 1   8  generation of the identity it describes
//! 9   8  version (per generation; the owner bumps it on every change)
//! 17  1  state: 1 Joining, 2 Serving, 3 Leaving
//! 18  1  name length n (1..=255)
//! 19  n  node name
//! ```
//!
//! The latest `(generation, version)` per name wins. A broadcast reaches the members alive
//! when it is sent; a member that joins later, or that missed it, asks the owner directly
//! (`MetaRequest`) while it knows the member but not its metadata for the current generation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A member's serving state, as announced by the member itself.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeState {
    /// Up but not serving its share yet (filling from copies).
    Joining = 1,
    /// Serving its share.
    Serving = 2,
    /// Handing off before it leaves.
    Leaving = 3,
}

impl NodeState {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Joining),
            2 => Some(Self::Serving),
            3 => Some(Self::Leaving),
            _ => None,
        }
    }
}

const ITEM_KIND_STATE: u8 = 1;
const ITEM_FIXED: usize = 19;

/// One decoded metadata item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaItem {
    pub name: Arc<str>,
    pub generation: u64,
    pub version: u64,
    pub state: NodeState,
}

/// Why a metadata item did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("malformed metadata item")]
    Malformed,
}

impl MetaItem {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ITEM_FIXED + self.name.len());
        out.push(ITEM_KIND_STATE);
        out.extend_from_slice(&self.generation.to_be_bytes());
        out.extend_from_slice(&self.version.to_be_bytes());
        out.push(self.state as u8);
        // Names are bounded to 255 bytes by NodeId::new.
        out.push(self.name.len() as u8);
        out.extend_from_slice(self.name.as_bytes());
        out
    }

    pub fn decode(data: &[u8]) -> Result<Self, MetaError> {
        if data.len() < ITEM_FIXED || data[0] != ITEM_KIND_STATE {
            return Err(MetaError::Malformed);
        }
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&data[i..i + 8]);
            u64::from_be_bytes(b)
        };
        let state = NodeState::from_u8(data[17]).ok_or(MetaError::Malformed)?;
        let n = data[18] as usize;
        if n == 0 || data.len() != ITEM_FIXED + n {
            return Err(MetaError::Malformed);
        }
        let name = std::str::from_utf8(&data[ITEM_FIXED..]).map_err(|_| MetaError::Malformed)?;
        Ok(Self {
            name: name.into(),
            generation: u64_at(1),
            version: u64_at(9),
            state,
        })
    }
}

/// The latest metadata known per name.
#[derive(Debug, Default)]
pub(crate) struct MetaTable {
    entries: HashMap<Arc<str>, MetaItem>,
    /// Set on every accepted change; the core clears it when it rebuilds the membership.
    pub(crate) changed: bool,
}

impl MetaTable {
    /// Stores `item` if it is newer than what is known; true if it was.
    pub(crate) fn apply(&mut self, item: MetaItem) -> bool {
        let newer = self
            .entries
            .get(&item.name)
            .is_none_or(|cur| (item.generation, item.version) > (cur.generation, cur.version));
        if newer {
            self.entries.insert(item.name.clone(), item);
            self.changed = true;
        }
        newer
    }

    pub(crate) fn get(&self, name: &str) -> Option<&MetaItem> {
        self.entries.get(name)
    }
}

/// Dissemination key: a newer item about a name replaces the older one in foca's backlog.
#[derive(Debug)]
pub struct MetaKey(Arc<str>);

impl foca::Invalidates for MetaKey {
    fn invalidates(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

/// foca's broadcast handler: keeps the table and tells foca which items are news.
#[derive(Debug)]
pub(crate) struct MetaHandler {
    /// Shared with the core, which owns the foca instance holding this handler. Locked for
    /// a map lookup at a time, from one task.
    pub(crate) table: Arc<Mutex<MetaTable>>,
}

impl<T> foca::BroadcastHandler<T> for MetaHandler {
    type Key = MetaKey;
    type Error = MetaError;

    fn receive_item(
        &mut self,
        data: &[u8],
        sender: Option<&T>,
    ) -> Result<Option<MetaKey>, MetaError> {
        let item = MetaItem::decode(data)?;
        let name = item.name.clone();
        // A poisoned lock only means another holder panicked mid-insert of plain data.
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let newer = table.apply(item);
        // Our own item (sender None, via add_broadcast) is always (re)disseminated: that is
        // how a refresh re-sends an unchanged state to members that missed it.
        Ok((newer || sender.is_none()).then_some(MetaKey(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn item(generation: u64, version: u64, state: NodeState) -> MetaItem {
        MetaItem {
            name: "node-a".into(),
            generation,
            version,
            state,
        }
    }

    #[test]
    fn roundtrip() {
        for s in [NodeState::Joining, NodeState::Serving, NodeState::Leaving] {
            let i = item(3, 9, s);
            assert_eq!(MetaItem::decode(&i.encode()), Ok(i));
        }
    }

    #[test]
    fn latest_generation_then_version_wins() {
        let mut t = MetaTable::default();
        assert!(t.apply(item(1, 5, NodeState::Serving)));
        assert!(!t.apply(item(1, 5, NodeState::Leaving)));
        assert!(!t.apply(item(1, 4, NodeState::Joining)));
        assert!(t.apply(item(1, 6, NodeState::Leaving)));
        assert!(t.apply(item(2, 1, NodeState::Joining)));
        assert!(!t.apply(item(1, 99, NodeState::Serving)));
        assert_eq!(t.get("node-a").unwrap().state, NodeState::Joining);
    }

    #[test]
    fn handler_redisseminates_own_items_only() {
        let table = Arc::new(Mutex::new(MetaTable::default()));
        let mut h = MetaHandler {
            table: table.clone(),
        };
        let data = item(1, 1, NodeState::Serving).encode();
        let sender = 0u8;
        use foca::BroadcastHandler;
        assert!(h.receive_item(&data, Some(&sender)).unwrap().is_some());
        assert!(h.receive_item(&data, Some(&sender)).unwrap().is_none());
        assert!(h.receive_item(&data, None::<&u8>).unwrap().is_some());
        assert!(h.receive_item(b"junk", Some(&sender)).is_err());
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = MetaItem::decode(&data);
        }
    }
}
