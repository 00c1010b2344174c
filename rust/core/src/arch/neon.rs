//! NEON helpers (part of every aarch64 CPU, so no runtime detection).
use std::arch::aarch64::{
    uint8x16_t, vget_lane_u64, vreinterpret_u64_u8, vreinterpretq_u16_u8, vshrn_n_u16,
};

/// Four bits per byte of `flags` (each byte `0x00` or `0xff`), byte `i` in bits
/// `4 * i ..`: `shrn` packs them into one word, NEON's stand-in for x86's
/// `movemask`. The first set byte is `trailing_zeros() / 4`.
#[inline(always)]
pub(crate) fn nibble_mask(flags: uint8x16_t) -> u64 {
    // SAFETY: NEON is in the aarch64 baseline; register-only operations.
    unsafe {
        vget_lane_u64::<0>(vreinterpret_u64_u8(vshrn_n_u16::<4>(vreinterpretq_u16_u8(
            flags,
        ))))
    }
}
