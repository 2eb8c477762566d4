//! The variable-length integers (LEB128) that prefix the elements packed in a hash's
//! listpack and a list's chunks.

/// Bytes `n` takes.
pub(crate) fn len(n: usize) -> usize {
    let mut len = 1;
    let mut n = n >> 7;
    while n > 0 {
        len += 1;
        n >>= 7;
    }
    len
}

pub(crate) fn put(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Writes `n` at the start of `out` (which has room for it); the bytes it took.
pub(crate) fn write(out: &mut [u8], mut n: usize) -> usize {
    let mut i = 0;
    while n >= 0x80 {
        out[i] = (n as u8) | 0x80;
        n >>= 7;
        i += 1;
    }
    out[i] = n as u8;
    i + 1
}

/// The varint at the start of `b`: (value, bytes taken). Only for buffers this crate wrote.
pub(crate) fn get(b: &[u8]) -> (usize, usize) {
    let mut n = 0usize;
    for (i, &byte) in b.iter().enumerate() {
        n |= usize::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            return (n, i + 1);
        }
    }
    unreachable!("varints in this crate's buffers are written whole")
}

/// [`get`] for bytes from outside (a replicated value): `None` when the varint is cut short
/// or longer than a `usize` (64 bits here) holds.
pub(crate) fn checked_get(b: &[u8]) -> Option<(usize, usize)> {
    let mut n = 0usize;
    // Ten bytes at most: the tenth holds the 64th bit alone.
    for (i, &byte) in b.iter().enumerate().take(10) {
        let part = usize::from(byte & 0x7F);
        if i == 9 && part > 1 {
            return None;
        }
        n |= part << (7 * i);
        if byte & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips() {
        for n in [0usize, 1, 127, 128, 300, 16_383, 16_384, usize::MAX >> 1] {
            let mut b = Vec::new();
            super::put(&mut b, n);
            assert_eq!(b.len(), super::len(n));
            assert_eq!(super::get(&b), (n, b.len()));
            let mut w = [0u8; 10];
            assert_eq!(super::write(&mut w, n), b.len());
            assert_eq!(&w[..b.len()], &b[..]);
        }
    }
}
