//! A node that starts in a cluster copies the function libraries (FUNCTION LOAD's) and the
//! ACL users (ACL SETUSER's) of another member, as `redis-cli --cluster add-node` copies
//! libraries to a new Redis node: a joining or restarted node has none of either beyond its
//! configuration, and an FCALL routed to it would answer "Function not found", a client
//! logging in through it as a user made at run time WRONGPASS. Libraries and users changed
//! later reach every member by the fan-out of FUNCTION LOAD, DELETE, RESTORE and FLUSH and
//! of ACL SETUSER and DELUSER (the commands' rows); a change that reaches a node while it
//! copies wins over the copy.

use std::sync::Arc;
use std::time::Duration;

use crate::router::Copied;
use crate::Server;

/// Pause before asking again when no member could give its copy; doubled each time up to
/// [`RETRY_MAX`].
const RETRY_PAUSE: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Starts both copies: until one is done (`router::copy_from_member`), this node answers
/// other starting nodes that it is copying too, and it asks again on every view change and
/// after a pause.
pub fn start(node: &Arc<Server>) {
    if node.cluster.is_none() {
        return;
    }
    node.engine.functions.set_copying(true);
    shoal_engine::cmd::acl::registry(&node.engine).set_copying(true);
    for what in [Copied::Functions, Copied::Users] {
        tokio::spawn(copy(node.clone(), what));
    }
}

async fn copy(node: Arc<Server>, what: Copied) {
    let Some(cluster) = node.cluster.as_ref() else {
        return;
    };
    let mut changes = cluster.subscribe();
    let mut pause = RETRY_PAUSE;
    loop {
        changes.borrow_and_update();
        if crate::router::copy_from_member(&node, what).await {
            match what {
                Copied::Functions => node.engine.functions.set_copying(false),
                Copied::Users => shoal_engine::cmd::acl::registry(&node.engine).set_copying(false),
            }
            return;
        }
        tokio::select! {
            _ = node.shutdown.cancelled() => return,
            r = changes.changed() => if r.is_err() { return },
            _ = tokio::time::sleep(pause) => pause = (pause * 2).min(RETRY_MAX),
        }
    }
}
