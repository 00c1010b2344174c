//! What differs between CPU architectures: cache hints and vector helpers.
//!
//! The fast paths are compiled under `cfg(fast_x86_64)` or `cfg(fast_aarch64)`
//! (set by `build.rs`); every one of them has a portable twin, the only code a
//! `--cfg strands_offload_portable` build or another architecture compiles.

#[cfg(fast_aarch64)]
pub(crate) mod neon;

/// Whether this build compiles vector fast paths (`"x86_64"`, `"aarch64"`) or
/// only the portable ones (`"portable"`).
pub const FAST_PATHS: &str = if cfg!(fast_x86_64) {
    "x86_64"
} else if cfg!(fast_aarch64) {
    "aarch64"
} else {
    "portable"
};

/// Ask the CPU to start loading the two cache lines from `p` into L1.
///
/// A hint only: it never faults, whatever the address (past an allocation's
/// end included), and `p` is never dereferenced.
#[inline(always)]
pub fn prefetch_read(p: *const u8) {
    #[cfg(fast_x86_64)]
    // SAFETY: a prefetch is a hint and cannot fault.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64).cast());
    }
    #[cfg(fast_aarch64)]
    // SAFETY: `prfm` is a hint: it neither faults nor writes memory or flags.
    unsafe {
        std::arch::asm!(
            "prfm pldl1keep, [{a}]",
            "prfm pldl1keep, [{b}]",
            a = in(reg) p,
            b = in(reg) p.wrapping_add(64),
            options(nostack, readonly, preserves_flags),
        );
    }
    #[cfg(not(any(fast_x86_64, fast_aarch64)))]
    let _ = p;
}
