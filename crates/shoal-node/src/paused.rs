//! Requests a CLIENT PAUSE holds: a client's next command (`resp`), a moved script's
//! second run (`moved`).

use std::sync::Arc;

use shoal_cluster::Server;

/// Waits until CLIENT UNPAUSE or the pause's end (Unix ms `end_ms`), counted in INFO's
/// `blocked_clients` meanwhile; its "reply" is empty (the held command runs after it).
pub fn wait_for_unpause(node: Arc<Server>, end_ms: u64) -> shoal_cluster::router::ReplyFuture {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    /// Counts the client as waiting while it lives (also when the client goes away).
    struct Waiting<'a>(&'a AtomicUsize);
    impl Drop for Waiting<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Relaxed);
        }
    }
    Box::pin(async move {
        let pause = &node.engine.pause;
        pause.waiting.fetch_add(1, Relaxed);
        let _waiting = Waiting(&pause.waiting);
        let left = end_ms.saturating_sub(shoal_engine::clock::now_ms());
        let _ = tokio::time::timeout(std::time::Duration::from_millis(left), pause.ended()).await;
        bytes::Bytes::new()
    })
}
