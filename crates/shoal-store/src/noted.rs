//! What happened to keys without a command saying so (a key expired, was evicted, was
//! created by a write, or a read missed it), noted while the layer above asks for it
//! ([`crate::Store::note_key_events`], for Redis's keyspace notifications). Off by default:
//! then each such change costs one atomic load.
//!
//! What a command's own store operations note goes to its thread's buffer
//! ([`CommandNotes`]), which that command publishes before and after its own events, so they
//! keep its order and no other thread's publishing can reorder them. What happens outside
//! any command (active expiry, the cron's eviction, a replica applying a state) goes to the
//! shared log ([`crate::Store::take_key_events`]), published by the node's cron.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

use bytes::Bytes;

/// A change to a key the store notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Noted {
    /// Its TTL passed (found by a lookup or by active expiry) and it was removed.
    Expired,
    /// `maxmemory`'s policy chose it and it was removed.
    Evicted,
    /// A write stored it where no key was (Redis's `new` event).
    Created,
    /// A read ([`crate::Access::Read`], the reads counted in `keyspace_misses`) did not find
    /// it (Redis's `keymiss` event).
    Missed,
}

impl Noted {
    /// This kind's bit in the mask [`crate::Store::note_key_events`] takes.
    pub const fn bit(self) -> u8 {
        match self {
            Noted::Expired => 1,
            Noted::Evicted => 2,
            Noted::Created => 4,
            Noted::Missed => 8,
        }
    }
}

/// Changes waiting in the shared log, or in one thread's command buffer, at most; later ones
/// are dropped (and counted) until they are taken. A command's buffer is taken before each of
/// its events and when it ends, the shared log after every expiry round of at most 1,000
/// keys: only an eviction run freeing more keys than this at once can reach it.
pub(crate) const MAX_NOTED: usize = 65_536;

#[derive(Default)]
pub(crate) struct NoteLog {
    /// The kinds noted ([`Noted::bit`]s).
    mask: AtomicU8,
    log: parking_lot::Mutex<Vec<(Bytes, Noted)>>,
    dropped: AtomicU64,
}

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// The running command's notes (`Some` between [`CommandNotes::begin`] and its end).
    static COMMAND: RefCell<Option<Vec<(Bytes, Noted)>>> = const { RefCell::new(None) };
}

impl NoteLog {
    pub(crate) fn set_mask(&self, mask: u8) {
        self.mask.store(mask, Relaxed);
        if mask == 0 {
            self.log.lock().clear();
        }
    }

    pub(crate) fn wanted(&self) -> bool {
        self.mask.load(Relaxed) != 0
    }

    /// Notes that `what` happened to `key` (nothing unless that kind is asked for): in the
    /// running command's buffer, or the shared log outside any command.
    pub(crate) fn note(&self, key: &[u8], what: Noted) {
        if self.mask.load(Relaxed) & what.bit() == 0 || QUIET.with(Cell::get) {
            return;
        }
        let entry = || (Bytes::copy_from_slice(key), what);
        let in_command = COMMAND.with(|c| match c.borrow_mut().as_mut() {
            Some(buf) if buf.len() < MAX_NOTED => {
                buf.push(entry());
                true
            }
            Some(_) => {
                self.dropped.fetch_add(1, Relaxed);
                true
            }
            None => false,
        });
        if in_command {
            return;
        }
        let mut log = self.log.lock();
        if log.len() < MAX_NOTED {
            log.push(entry());
        } else {
            self.dropped.fetch_add(1, Relaxed);
        }
    }

    /// Everything in the shared log, oldest first.
    pub(crate) fn take(&self) -> Vec<(Bytes, Noted)> {
        if !self.wanted() {
            return Vec::new();
        }
        std::mem::take(&mut *self.log.lock())
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

/// While alive, what the store notes on this thread belongs to the command running here
/// ([`take_command_notes`]). Nested commands (EXEC's, a script's calls) share the outermost
/// one's buffer; the outermost guard ends it (what was not taken then is dropped).
pub struct CommandNotes {
    outermost: bool,
}

impl CommandNotes {
    pub fn begin() -> CommandNotes {
        let outermost = COMMAND.with(|c| {
            let mut c = c.borrow_mut();
            let outermost = c.is_none();
            if outermost {
                *c = Some(Vec::new());
            }
            outermost
        });
        CommandNotes { outermost }
    }
}

impl Drop for CommandNotes {
    fn drop(&mut self) {
        if self.outermost {
            COMMAND.with(|c| *c.borrow_mut() = None);
        }
    }
}

/// The running command's notes so far, oldest first (empty outside a command).
pub fn take_command_notes() -> Vec<(Bytes, Noted)> {
    COMMAND.with(|c| match c.borrow_mut().as_mut() {
        Some(buf) if !buf.is_empty() => std::mem::take(buf),
        _ => Vec::new(),
    })
}

/// Runs `f` without noting what its writes on this thread do to keys (a command that moves
/// keys as a whole, SWAPDB, creates none in Redis's sense). Not reentrant.
pub fn without_noting<R>(f: impl FnOnce() -> R) -> R {
    struct Loud;
    impl Drop for Loud {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(false));
        }
    }
    QUIET.with(|q| q.set(true));
    let _loud = Loud;
    f()
}
