//! The Lua scripts a node has loaded (EVAL, SCRIPT LOAD), by SHA1: the server's script
//! cache, as Redis keeps it. Running them is `cmd::script`'s.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

/// The most script bytes a node keeps.
const SCRIPTS_MAX_BYTES: usize = 64 << 20;

/// The cache holds its most already (64 MB of scripts).
#[derive(Debug)]
pub struct CacheFull;

/// The scripts loaded (by EVAL or SCRIPT LOAD), by lower-case hex SHA1.
#[derive(Default)]
pub struct Scripts {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    bodies: HashMap<String, Bytes>,
    /// The bodies' lengths and a little per entry, summed.
    bytes: usize,
}

impl Scripts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, sha: &str) -> Option<Bytes> {
        self.lock().bodies.get(sha).cloned()
    }

    /// Keeps a copy of `body` (not a slice of the request's buffer, which it would pin).
    pub fn add(&self, sha: String, body: &[u8]) -> Result<(), CacheFull> {
        let mut cache = self.lock();
        if !cache.bodies.contains_key(&sha) {
            let size = body.len() + 128;
            if cache.bytes + size > SCRIPTS_MAX_BYTES {
                return Err(CacheFull);
            }
            cache.bytes += size;
            cache.bodies.insert(sha, Bytes::copy_from_slice(body));
        }
        Ok(())
    }

    pub fn flush(&self) {
        *self.lock() = Cache::default();
    }

    /// The number of scripts kept (INFO's `number_of_cached_scripts`).
    pub fn count(&self) -> usize {
        self.lock().bodies.len()
    }

    pub fn contains(&self, sha: &str) -> bool {
        self.lock().bodies.contains_key(sha)
    }
}
