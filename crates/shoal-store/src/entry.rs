//! The per-key record ([`Item`]) and its access clock ([`Clock`]: LRU or Redis-style LFU).

use crate::rng;

/// Bytes charged per entry on top of its key and value, for `used_memory` and `maxmemory`.
///
/// How it was chosen (64-bit, glibc malloc): the [`Item`] itself is 32 bytes in the shard's
/// dense `Vec` (which runs ~25% slack on average after doubling: ~8 bytes); its slot in the
/// `HashTable<u32>` is 4 bytes + 1 control byte at a load factor between 7/16 and 7/8 (~8
/// bytes); the key+value allocation pays an 8-byte malloc header plus rounding up to 16 bytes
/// (~8 bytes on average). That is ~56 bytes; volatile keys add a 16-byte expiry-heap item,
/// which we spread over all keys rather than charge separately. Measured RSS for 1M keys with
/// 16-byte keys and 100-byte values is ~175 B/key (`used_memory` says 116 + 56 = 172).
pub const ENTRY_OVERHEAD: usize = 56;

/// One stored key: a single heap allocation holds the key bytes followed by the value bytes.
///
/// 32 bytes. Adding a 64-bit version and 32-bit flags later grows it to 48 (or 40 if the
/// flags share a word with `key_len`).
pub(crate) struct Item {
    data: Box<[u8]>,
    key_len: u32,
    /// LRU: the low 32 bits of the last access in Unix ms (wrapping, ~49 days). LFU: Redis's
    /// layout, `(minutes & 0xFFFF) << 8 | log counter`. Reinterpreted when the policy changes,
    /// as Redis does.
    pub(crate) access: u32,
    /// Unix ms; 0 = no TTL.
    pub(crate) expire_at_ms: u64,
}

impl Item {
    pub(crate) fn new(key: &[u8], value: &[u8], expire_at_ms: u64, access: u32) -> Item {
        let mut data = Vec::with_capacity(key.len() + value.len());
        data.extend_from_slice(key);
        data.extend_from_slice(value);
        Item {
            data: data.into_boxed_slice(),
            key_len: u32::try_from(key.len()).expect("keys are bounded by the protocol's 512 MB"),
            access,
            expire_at_ms,
        }
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.data[self.key_len as usize..]
    }

    pub(crate) fn expire_at(&self) -> Option<u64> {
        (self.expire_at_ms != 0).then_some(self.expire_at_ms)
    }

    pub(crate) fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// Bytes this entry counts for in `used_memory`.
    pub(crate) fn charge(&self) -> u64 {
        (self.data.len() + ENTRY_OVERHEAD) as u64
    }

    /// Replace the value; reuses the allocation when the size is unchanged.
    pub(crate) fn replace_value(&mut self, value: &[u8]) {
        let k = self.key_len as usize;
        if self.data.len() - k == value.len() {
            self.data[k..].copy_from_slice(value);
        } else {
            let mut data = Vec::with_capacity(k + value.len());
            data.extend_from_slice(&self.data[..k]);
            data.extend_from_slice(value);
            self.data = data.into_boxed_slice();
        }
    }
}

/// Redis's initial LFU counter for a new key, so fresh keys are not evicted at once.
const LFU_INIT_VAL: u32 = 5;

/// The access clock for one operation: the policy family, the time and the LFU tunables.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    pub(crate) lfu: bool,
    pub(crate) now_ms: u64,
    pub(crate) lfu_log_factor: u32,
    pub(crate) lfu_decay_time: u32,
}

impl Clock {
    fn lru_now(&self) -> u32 {
        self.now_ms as u32
    }

    fn lfu_minutes(&self) -> u32 {
        ((self.now_ms / 60_000) & 0xFFFF) as u32
    }

    /// The access word of a new key.
    pub(crate) fn initial(&self) -> u32 {
        if self.lfu {
            (self.lfu_minutes() << 8) | LFU_INIT_VAL
        } else {
            self.lru_now()
        }
    }

    /// Record an access (Redis `updateLFU` / LRU clock refresh).
    pub(crate) fn touch(&self, access: &mut u32) {
        if self.lfu {
            let counter = self.lfu_incr(self.lfu_decayed(*access));
            *access = (self.lfu_minutes() << 8) | counter;
        } else {
            *access = self.lru_now();
        }
    }

    /// Milliseconds since the last access (LRU reading).
    pub(crate) fn lru_idle(&self, access: u32) -> u64 {
        u64::from(self.lru_now().wrapping_sub(access))
    }

    /// The LFU counter after decay (Redis `LFUDecrAndReturn`).
    pub(crate) fn lfu_decayed(&self, access: u32) -> u32 {
        let last = (access >> 8) & 0xFFFF;
        let counter = access & 0xFF;
        let now = self.lfu_minutes();
        let elapsed = if now >= last {
            now - last
        } else {
            65535 - last + now
        };
        let periods = elapsed.checked_div(self.lfu_decay_time).unwrap_or(0);
        counter.saturating_sub(periods)
    }

    /// Logarithmic increment (Redis `LFULogIncr`).
    fn lfu_incr(&self, counter: u32) -> u32 {
        if counter >= 255 {
            return 255;
        }
        let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
        let p = 1.0 / (base * f64::from(self.lfu_log_factor) + 1.0);
        if rng::next_f64() < p {
            counter + 1
        } else {
            counter
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_layout_and_accessors() {
        assert_eq!(std::mem::size_of::<Item>(), 32);
        let mut it = Item::new(b"key", b"value", 0, 0);
        assert_eq!(it.key(), b"key");
        assert_eq!(it.value(), b"value");
        assert_eq!(it.charge(), 8 + ENTRY_OVERHEAD as u64);
        it.replace_value(b"VALUE");
        assert_eq!(it.value(), b"VALUE");
        it.replace_value(b"longer value");
        assert_eq!((it.key(), it.value()), (&b"key"[..], &b"longer value"[..]));
        assert_eq!(it.expire_at(), None);
        it.expire_at_ms = 10;
        assert!(!it.is_expired(9));
        assert!(it.is_expired(10));
    }

    #[test]
    fn lfu_counter_grows_and_decays() {
        let mut clock = Clock {
            lfu: true,
            now_ms: 0,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
        };
        let mut access = clock.initial();
        assert_eq!(clock.lfu_decayed(access), LFU_INIT_VAL);
        for _ in 0..1000 {
            clock.touch(&mut access);
        }
        let hot = clock.lfu_decayed(access);
        assert!(hot > LFU_INIT_VAL + 3, "counter {hot}");
        clock.now_ms += 3 * 60_000;
        assert_eq!(clock.lfu_decayed(access), hot - 3);
    }

    #[test]
    fn lru_idle_wraps() {
        let clock = Clock {
            lfu: false,
            now_ms: (1u64 << 32) + 5,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
        };
        assert_eq!(clock.lru_idle(u32::MAX), 6);
    }
}
