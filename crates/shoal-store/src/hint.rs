//! [`prefetch`]: a hint to the CPU to start loading a cache line, so that the loads of
//! several keys' lookups wait for memory together instead of one after the other (see
//! `Store::prefetch`).
//!
//! The store's second module allowed `unsafe` code (with `thin`): one intrinsic call.

/// Asks the CPU to bring the cache line holding `p` into its caches. Only a hint: it reads
/// nothing the program sees, never faults whatever the address, and does nothing on targets
/// without the instruction (or under Miri).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: PREFETCHT0 has no architectural effect (no fault, even on an unmapped address;
    // no read the program observes), and SSE, which it needs, is part of every x86_64 CPU.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}
