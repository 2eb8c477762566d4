//! A node that starts in a cluster copies the function libraries (FUNCTION LOAD's) of
//! another member, as `redis-cli --cluster add-node` copies them to a new Redis node: a
//! joining or restarted node has none, and an FCALL routed to it would answer "Function not
//! found". Libraries loaded, deleted or flushed later reach every member by the fan-out of
//! FUNCTION LOAD, DELETE, RESTORE and FLUSH (the command's row).

use std::sync::Arc;
use std::time::Duration;

use crate::Server;

/// Pause before asking again when no member could give its libraries; doubled each time
/// up to [`RETRY_MAX`].
const RETRY_PAUSE: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Starts the copy: until it is done (`router::copy_functions`), this node answers other
/// starting nodes that it is copying too, and it asks again on every view change and after
/// a pause.
pub fn start(node: &Arc<Server>) {
    if node.cluster.is_none() {
        return;
    }
    node.engine.functions.set_copying(true);
    let node = node.clone();
    tokio::spawn(async move {
        let Some(cluster) = node.cluster.as_ref() else {
            return;
        };
        let mut changes = cluster.subscribe();
        let mut pause = RETRY_PAUSE;
        loop {
            changes.borrow_and_update();
            if crate::router::copy_functions(&node).await {
                node.engine.functions.set_copying(false);
                return;
            }
            tokio::select! {
                _ = node.shutdown.cancelled() => return,
                r = changes.changed() => if r.is_err() { return },
                _ = tokio::time::sleep(pause) => pause = (pause * 2).min(RETRY_MAX),
            }
        }
    });
}
