//! [`Thin`]: an item's one allocation behind one pointer, 8 bytes where a boxed slice takes
//! 16: a string's bytes with their length (and two bits of its owner's, the mark and the
//! note) in front of them, or a boxed value of another type, told apart by the pointer's low bit. It is what
//! keeps the store's per-key record (`entry.rs`) at 24 bytes.
//!
//! The only `unsafe` code of the store lives here; every block says why it holds.

use std::alloc::{self, Layout};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A length below this takes a 4-byte header (a `u32`, little-endian: the length, [`MARK`],
/// [`NOTE`], [`LONG`] clear); a longer one (512 MiB and more) an 8-byte one: the high bits of
/// the length with [`LONG`], the mark and the note, then the low 32 bits.
const SHORT_MAX: usize = 1 << 29;

/// In the header's first word: the header is 8 bytes.
const LONG: u32 = 1 << 31;

/// In the header's first word: the owner's first bit ([`Thin::marked`]).
const MARK: u32 = 1 << 30;

/// In the header's first word: the owner's second bit ([`Thin::noted`]).
const NOTE: u32 = 1 << 29;

/// The owner's two bits of a header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bits {
    mark: bool,
    note: bool,
}

impl Bits {
    fn word(self) -> u32 {
        (if self.mark { MARK } else { 0 }) | if self.note { NOTE } else { 0 }
    }
}

/// The header's size for `len` bytes.
fn header_len(len: usize) -> usize {
    if len < SHORT_MAX {
        4
    } else {
        8
    }
}

/// Writes the header for `len` and `bits` into `out` (at least [`header_len`] bytes);
/// returns its size.
fn write_header(len: usize, bits: Bits, out: &mut [u8]) -> usize {
    assert!(len as u64 >> 61 == 0, "a length fits the header's 61 bits");
    let bits = bits.word();
    if len < SHORT_MAX {
        out[..4].copy_from_slice(&(len as u32 | bits).to_le_bytes());
        4
    } else {
        let len = len as u64;
        out[..4].copy_from_slice(&((len >> 32) as u32 | LONG | bits).to_le_bytes());
        out[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        8
    }
}

/// Reads a header: `(length, header size, bits)`. `first` is the header's first 4 bytes,
/// `rest` reads the next 4 (only called for a long header).
fn read_header(first: [u8; 4], rest: impl FnOnce() -> [u8; 4]) -> (usize, usize, Bits) {
    let first = u32::from_le_bytes(first);
    let bits = Bits {
        mark: first & MARK != 0,
        note: first & NOTE != 0,
    };
    let high = first & !(LONG | MARK | NOTE);
    if first & LONG == 0 {
        return (high as usize, 4, bits);
    }
    let low = u32::from_le_bytes(rest());
    let len = (u64::from(high) << 32) | u64::from(low);
    (usize::try_from(len).unwrap_or(usize::MAX), 8, bits)
}

/// The allocation for `len` bytes and their header. Alignment 2 keeps the low bit free for
/// the tag (every allocator here gives 8 or more anyway).
fn layout(len: usize) -> Layout {
    header_len(len)
        .checked_add(len)
        .and_then(|size| Layout::from_size_align(size, 2).ok())
        .expect("a string's size fits a layout")
}

/// Set in the pointer of a boxed `T`.
const TAG: usize = 1;

/// Either bytes (a length header, then the bytes) or a `Box<T>`, in one pointer.
pub(crate) struct Thin<T> {
    ptr: NonNull<u8>,
    _owns: PhantomData<Box<T>>,
}

// SAFETY: a `Thin<T>` owns its allocation exactly as a `Box<[u8]>` or a `Box<T>` would, with
// no shared state: it is `Send`/`Sync` when those are.
unsafe impl<T: Send> Send for Thin<T> {}
// SAFETY: as above; `&Thin` hands out only `&[u8]` and `&T`.
unsafe impl<T: Sync> Sync for Thin<T> {}

impl<T> Thin<T> {
    /// The bytes of `parts`, one after the other, and the mark (the note clear).
    pub(crate) fn bytes(parts: &[&[u8]], mark: bool) -> Thin<T> {
        let len = parts.iter().map(|p| p.len()).sum();
        let mut thin = Thin::zeroed(len, Bits { mark, note: false });
        let out = thin.as_bytes_mut().expect("made as bytes");
        let mut at = 0;
        for p in parts {
            out[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        thin
    }

    /// `len` zero bytes.
    fn zeroed(len: usize, bits: Bits) -> Thin<T> {
        let layout = layout(len);
        // SAFETY: the layout's size is at least 4 (the header), never zero.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        // SAFETY: the allocation holds `layout.size()` initialized (zeroed) bytes.
        let head = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), header_len(len)) };
        write_header(len, bits, head);
        Thin {
            ptr,
            _owns: PhantomData,
        }
    }

    /// A boxed `value`.
    pub(crate) fn boxed(value: Box<T>) -> Thin<T> {
        const {
            assert!(
                std::mem::align_of::<T>() >= 2,
                "the tag needs a free low bit"
            )
        };
        let raw = Box::into_raw(value);
        // `map_addr` keeps the pointer's provenance; a box's address is aligned, so its low
        // bit is free and the tagged address is not null.
        let tagged = raw.map_addr(|a| a | TAG).cast::<u8>();
        Thin {
            ptr: NonNull::new(tagged).expect("a box is not null"),
            _owns: PhantomData,
        }
    }

    fn is_boxed(&self) -> bool {
        self.ptr.as_ptr().addr() & TAG != 0
    }

    fn boxed_ptr(&self) -> *mut T {
        self.ptr.as_ptr().map_addr(|a| a & !TAG).cast::<T>()
    }

    /// `(length, header size, bits)` of the bytes; only for bytes.
    fn header(&self) -> (usize, usize, Bits) {
        let p = self.ptr.as_ptr();
        // SAFETY: bytes start with a header of at least 4 bytes, and a long header (top bit
        // of the first 4 set) has 8.
        unsafe {
            read_header(p.cast::<[u8; 4]>().read_unaligned(), || {
                p.add(4).cast::<[u8; 4]>().read_unaligned()
            })
        }
    }

    pub(crate) fn as_bytes(&self) -> Option<&[u8]> {
        if self.is_boxed() {
            return None;
        }
        let (len, head, _) = self.header();
        // SAFETY: the allocation holds the header and then `len` initialized bytes, owned by
        // `self` and borrowed for `&self`'s lifetime.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(head), len) })
    }

    pub(crate) fn as_bytes_mut(&mut self) -> Option<&mut [u8]> {
        if self.is_boxed() {
            return None;
        }
        let (len, head, _) = self.header();
        // SAFETY: as in `as_bytes`, borrowed mutably for `&mut self`'s lifetime.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(head), len) })
    }

    /// The mark the bytes were made or last marked with; false for a box.
    pub(crate) fn marked(&self) -> bool {
        !self.is_boxed() && self.header().2.mark
    }

    /// Sets the mark of bytes (a box has none).
    pub(crate) fn set_mark(&mut self, mark: bool) {
        self.set_bits(|b| b.mark = mark);
    }

    /// The note the bytes were last given (clear when made); false for a box.
    pub(crate) fn noted(&self) -> bool {
        !self.is_boxed() && self.header().2.note
    }

    /// Sets the note of bytes (a box has none).
    pub(crate) fn set_note(&mut self, note: bool) {
        self.set_bits(|b| b.note = note);
    }

    fn set_bits(&mut self, change: impl FnOnce(&mut Bits)) {
        if self.is_boxed() {
            return;
        }
        let (len, head, mut bits) = self.header();
        change(&mut bits);
        // SAFETY: bytes start with a header of `head` bytes, owned by `self`.
        let out = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), head) };
        write_header(len, bits, out);
    }

    /// Where the allocation starts (its header, or the boxed value), without reading it:
    /// for [`crate::hint::prefetch`].
    pub(crate) fn addr(&self) -> *const u8 {
        self.ptr.as_ptr().map_addr(|a| a & !TAG).cast_const()
    }

    pub(crate) fn as_boxed(&self) -> Option<&T> {
        // SAFETY: a tagged pointer came from `Box::into_raw` and is owned by `self`.
        self.is_boxed().then(|| unsafe { &*self.boxed_ptr() })
    }

    pub(crate) fn as_boxed_mut(&mut self) -> Option<&mut T> {
        // SAFETY: as in `as_boxed`, borrowed mutably for `&mut self`'s lifetime.
        self.is_boxed().then(|| unsafe { &mut *self.boxed_ptr() })
    }

    /// Makes the bytes `new_len` long, cutting them or zero-filling the new ones, in place
    /// where the allocator can (a realloc: large blocks are remapped, not copied). Only for
    /// bytes.
    pub(crate) fn resize(&mut self, new_len: usize) {
        assert!(!self.is_boxed(), "resize is for bytes");
        let (len, head, bits) = self.header();
        if header_len(new_len) != head {
            // Crossing 512 MiB: the header changes size, so the bytes move.
            let mut next = Thin::zeroed(new_len, bits);
            let keep = len.min(new_len);
            let src = &self.as_bytes().expect("bytes")[..keep];
            next.as_bytes_mut().expect("bytes")[..keep].copy_from_slice(src);
            *self = next;
            return;
        }
        let new_layout = layout(new_len);
        // SAFETY: `ptr` was allocated with `layout(len)` (the same alignment), and the new
        // size is not zero.
        let raw = unsafe { alloc::realloc(self.ptr.as_ptr(), layout(len), new_layout.size()) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(new_layout)
        };
        self.ptr = ptr;
        // SAFETY: the block holds `head + new_len` bytes; those past `head + len` are new
        // and get zeroed before anything reads them.
        unsafe {
            if new_len > len {
                ptr.as_ptr().add(head + len).write_bytes(0, new_len - len);
            }
            let out = std::slice::from_raw_parts_mut(ptr.as_ptr(), head);
            write_header(new_len, bits, out);
        }
    }
}

impl<T> Drop for Thin<T> {
    fn drop(&mut self) {
        if self.is_boxed() {
            // SAFETY: the pointer came from `Box::into_raw` and is dropped once, here.
            drop(unsafe { Box::from_raw(self.boxed_ptr()) });
        } else {
            let (len, _, _) = self.header();
            // SAFETY: bytes were allocated with `layout(len)` for their current length.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout(len)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_short_and_long() {
        for len in [
            0,
            1,
            255,
            1 << 20,
            SHORT_MAX - 1,
            SHORT_MAX,
            3 << 31,
            (1 << 40) + 7,
            (1 << 61) - 1,
        ] {
            for (mark, note) in [(false, false), (true, false), (false, true), (true, true)] {
                let bits = Bits { mark, note };
                let mut buf = [0u8; 8];
                let n = write_header(len, bits, &mut buf);
                assert_eq!(n, header_len(len));
                let first = buf[..4].try_into().unwrap();
                let rest = || buf[4..8].try_into().unwrap();
                assert_eq!(read_header(first, rest), (len, n, bits), "{len}");
            }
        }
    }

    #[test]
    fn bytes_and_boxes_share_one_pointer() {
        assert_eq!(std::mem::size_of::<Thin<u64>>(), 8);
        assert_eq!(std::mem::size_of::<Option<Thin<u64>>>(), 8);
        let mut t: Thin<u64> = Thin::bytes(&[b"key", b"", b"value"], false);
        assert_eq!(t.as_bytes(), Some(&b"keyvalue"[..]));
        assert!(t.as_boxed().is_none());
        assert!(!t.marked());
        assert!(!t.noted());
        t.set_mark(true);
        assert!(t.marked());
        assert!(!t.noted(), "the two bits are apart");
        t.set_note(true);
        t.set_mark(false);
        assert!(t.noted() && !t.marked());
        t.set_mark(true);
        assert_eq!(t.as_bytes(), Some(&b"keyvalue"[..]));
        let mut b: Thin<u64> = Thin::boxed(Box::new(7));
        assert!(b.as_bytes().is_none());
        b.set_mark(true);
        b.set_note(true);
        assert!(!b.marked() && !b.noted());
        *b.as_boxed_mut().unwrap() += 1;
        assert_eq!(b.as_boxed(), Some(&8));
        let empty: Thin<u64> = Thin::bytes(&[], true);
        assert!(empty.marked());
        assert_eq!(empty.as_bytes(), Some(&b""[..]));
    }

    #[test]
    fn resize_grows_with_zeros_and_cuts() {
        let mut t: Thin<u64> = Thin::bytes(&[b"abc"], true);
        t.set_note(true);
        t.resize(6);
        assert!(t.marked() && t.noted(), "resizing keeps the bits");
        assert_eq!(t.as_bytes(), Some(&b"abc\0\0\0"[..]));
        t.as_bytes_mut().unwrap()[5] = b'z';
        t.resize(100_000);
        assert_eq!(&t.as_bytes().unwrap()[..7], b"abc\0\0z\0");
        assert!(t.as_bytes().unwrap()[6..].iter().all(|&b| b == 0));
        t.resize(2);
        assert_eq!(t.as_bytes(), Some(&b"ab"[..]));
        t.resize(0);
        assert_eq!(t.as_bytes(), Some(&b""[..]));
        assert!(t.marked() && t.noted());
    }

    #[test]
    #[should_panic(expected = "a string's size fits a layout")]
    fn a_size_past_the_address_space_panics_before_allocating() {
        let mut t: Thin<u64> = Thin::bytes(&[b"abc"], false);
        t.resize(usize::MAX - 3);
    }

    #[test]
    fn boxed_values_are_dropped() {
        let counted = std::rc::Rc::new(());
        // `Rc` is 8-aligned, so it can be boxed in a `Thin`.
        let t: Thin<std::rc::Rc<()>> = Thin::boxed(Box::new(counted.clone()));
        assert_eq!(std::rc::Rc::strong_count(&counted), 2);
        drop(t);
        assert_eq!(std::rc::Rc::strong_count(&counted), 1);
    }
}
