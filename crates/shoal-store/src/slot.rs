//! Redis Cluster key -> hash slot mapping: CRC16/XMODEM of the key (or of its `{hash tag}`)
//! modulo 16,384, exactly as `keyHashSlot` in Redis's `cluster.c`; and the stored form of a
//! key of a numbered database (`FF DB 00 n` before the client's key), whose slot is its
//! client key's, so a key of any database lives with the same copies.

/// Number of hash slots in a Redis Cluster keyspace.
pub const SLOTS: u16 = 16384;

/// CRC16/XMODEM lookup table (polynomial 0x1021, init 0), built at compile time.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// `SLICES[k][b]`: the CRC of byte `b` followed by `k` zero bytes, so eight bytes are folded
/// in with eight independent lookups ("slicing-by-8") rather than a chain of eight dependent
/// ones. The CRC is linear, so the register's two bytes are folded into the first two.
const SLICES: [[u16; 256]; 8] = {
    let mut t = [[0u16; 256]; 8];
    t[0] = CRC16_TABLE;
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev << 8) ^ CRC16_TABLE[(prev >> 8) as usize];
            i += 1;
        }
        k += 1;
    }
    t
};

/// CRC16/XMODEM, the checksum Redis Cluster uses for key slots.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut chunks = bytes.chunks_exact(8);
    let mut crc = 0u16;
    for c in &mut chunks {
        let t = &SLICES;
        let [hi, lo] = crc.to_be_bytes();
        crc = t[7][usize::from(c[0] ^ hi)]
            ^ t[6][usize::from(c[1] ^ lo)]
            ^ t[5][usize::from(c[2])]
            ^ t[4][usize::from(c[3])]
            ^ t[3][usize::from(c[4])]
            ^ t[2][usize::from(c[5])]
            ^ t[1][usize::from(c[6])]
            ^ t[0][usize::from(c[7])];
    }
    chunks.remainder().iter().fold(crc, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[usize::from(((crc >> 8) as u8) ^ b)]
    })
}

/// The hash slot of `key`: if the key holds a `{...}` with at least one byte between the first
/// `{` and the first `}` after it, only those bytes are hashed, so related keys share a slot.
/// A stored key of a numbered database has its client key's slot.
pub fn key_slot(key: &[u8]) -> u16 {
    // Every prefix off: a key of a numbered database whose client key itself starts with
    // the prefix is routed by the client key's slot, which skips it too.
    let mut key = key;
    while let (1.., rest) = split_key(key) {
        key = rest;
    }
    crc16(hash_tag(key)) & (SLOTS - 1)
}

/// The prefix of a stored key of database `n > 0`, before `n`.
const DB_MARK: [u8; 3] = [0xFF, 0xDB, 0x00];

/// The key as stored for database `db` (as it is for database 0).
pub fn stored_key(db: u8, key: &[u8]) -> bytes::Bytes {
    if db == 0 {
        return bytes::Bytes::copy_from_slice(key);
    }
    let mut b = Vec::with_capacity(4 + key.len());
    push_stored_key(&mut b, db, key);
    b.into()
}

/// Appends the key as stored for database `db` to `out` (4 bytes more than `key` for a
/// numbered database).
pub fn push_stored_key(out: &mut Vec<u8>, db: u8, key: &[u8]) {
    if db != 0 {
        out.extend_from_slice(&DB_MARK);
        out.push(db);
    }
    out.extend_from_slice(key);
}

/// The database and the client's key of a stored key.
pub fn split_key(stored: &[u8]) -> (u8, &[u8]) {
    match stored {
        [0xFF, 0xDB, 0x00, db @ 1..=15, key @ ..] => (*db, key),
        _ => (0, stored),
    }
}

/// The part of `key` that [`key_slot`] hashes.
fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    match key[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &key[open + 1..open + 1 + len],
        _ => key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushed_stored_keys_are_the_stored_keys_side_by_side() {
        let mut out = Vec::new();
        push_stored_key(&mut out, 0, b"a");
        push_stored_key(&mut out, 7, b"bc");
        let mut want = stored_key(0, b"a").to_vec();
        want.extend_from_slice(&stored_key(7, b"bc"));
        assert_eq!(out, want);
        assert_eq!(split_key(&out[1..]), (7, &b"bc"[..]));
    }

    #[test]
    fn crc16_check_value() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    proptest::proptest! {
        /// The sliced CRC is the byte-at-a-time one, at every length and alignment.
        #[test]
        fn sliced_crc16_is_the_bytewise_one(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let bytewise = bytes.iter().fold(0u16, |crc, &b| {
                (crc << 8) ^ CRC16_TABLE[usize::from(((crc >> 8) as u8) ^ b)]
            });
            proptest::prop_assert_eq!(crc16(&bytes), bytewise);
        }
    }

    #[test]
    fn known_redis_slots() {
        // Values from `CLUSTER KEYSLOT` on redis-server.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"hello"), 866);
        assert_eq!(key_slot(b"somekey"), 11058);
        assert_eq!(key_slot(b""), 0);
        assert_eq!(key_slot(b"123456789"), 0x31C3 & 0x3FFF);
    }

    #[test]
    fn hash_tags() {
        assert_eq!(
            key_slot(b"{user1000}.following"),
            key_slot(b"{user1000}.followers")
        );
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // Empty tag: the whole key is hashed.
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 0x3FFF);
        // Only the first '{' counts, and the first '}' after it.
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
        // No closing brace: whole key.
        assert_eq!(key_slot(b"foo{bar"), crc16(b"foo{bar") & 0x3FFF);
        assert_eq!(key_slot(b"{}"), crc16(b"{}") & 0x3FFF);
    }

    #[test]
    fn slot_in_range() {
        for i in 0..10_000u32 {
            assert!(key_slot(format!("key:{i}").as_bytes()) < SLOTS);
        }
    }
}
