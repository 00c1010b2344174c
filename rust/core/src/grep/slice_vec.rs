//! A 128-byte slice of text in vector registers, and the few operations the
//! census loops ([`super::census`]) need: written once over this trait, compiled
//! for AVX-512 (two 64-byte vectors), AVX2 (four 32-byte ones) and NEON (eight
//! 16-byte ones).
//!
//! Every method is `#[inline(always)]`: the loops are instantiated inside a
//! function that enables the instructions (`#[target_feature]` on x86_64, the
//! baseline on aarch64), where the intrinsics inline too.

/// 128 bytes loaded as vectors.
pub(super) trait SliceVec: Copy {
    /// Newline counters carried over the slices of one block (at most 32).
    type Counts: Copy;
    /// Which of the 128 bytes a compare found equal: vectors of `0xff` per equal
    /// byte (AVX2, NEON), or mask registers (AVX-512).
    type Mask: SliceMask;
    /// # Safety
    /// `p..p + 128` must be readable (unaligned is fine), and the CPU must have
    /// the instructions (see the module comment).
    unsafe fn load(p: *const u8) -> Self;
    unsafe fn splat(b: u8) -> Self;
    unsafe fn or(self, other: Self) -> Self;
    unsafe fn eq(self, other: Self) -> Self::Mask;
    /// Whether any byte has its top bit set: a byte outside ASCII.
    unsafe fn any_high(self) -> bool;
    unsafe fn no_counts() -> Self::Counts;
    /// Adds the bytes a compare found equal to the counters.
    unsafe fn count(counts: Self::Counts, eq: Self::Mask) -> Self::Counts;
    unsafe fn total(counts: Self::Counts) -> usize;
}

/// The result of a compare over a slice's 128 bytes.
pub(super) trait SliceMask: Copy {
    /// No byte.
    unsafe fn none() -> Self;
    unsafe fn and(self, other: Self) -> Self;
    unsafe fn or(self, other: Self) -> Self;
    /// Whether any byte is set.
    unsafe fn any(self) -> bool;
    /// Byte `i` gives bit `i`.
    unsafe fn bits(self) -> u128;
}

/// A UTF-8 check of 128 bytes in vectors (x86_64 only; elsewhere the census checks
/// stretches of bytes with `simdutf8`).
///
/// Keiser and Lemire's lookup check ("Validating UTF-8 in less than one instruction
/// per byte", 2021): each byte, with the three before it, is classified by three
/// table lookups of nibbles; a set bit in both the lookups of a byte and the one
/// before, or a missing or extra continuation, is an error.
#[cfg(fast_x86_64)]
pub(super) trait Utf8Check: SliceVec {
    /// Whether these 128 bytes hold an error, the 128 bytes before them being
    /// `before` (only its last three bytes matter; zeros at the start of a text).
    unsafe fn utf8_errors(self, before: Self) -> bool;
    /// Whether the last three bytes start a character that does not end in them.
    unsafe fn utf8_incomplete(self) -> bool;
}

/// The error kinds of the lookup check (a byte's bit set by all three lookups).
#[cfg(fast_x86_64)]
mod utf8_tables {
    const TOO_SHORT: u8 = 1 << 0;
    const TOO_LONG: u8 = 1 << 1;
    const OVERLONG_3: u8 = 1 << 2;
    const TOO_LARGE: u8 = 1 << 3;
    const SURROGATE: u8 = 1 << 4;
    const OVERLONG_2: u8 = 1 << 5;
    const TOO_LARGE_1000: u8 = 1 << 6;
    const OVERLONG_4: u8 = 1 << 6;
    const TWO_CONTS: u8 = 1 << 7;
    const CARRY: u8 = TOO_SHORT | TOO_LONG | TWO_CONTS;

    /// By the high nibble of the byte before.
    pub(crate) const BEFORE_HIGH: [u8; 16] = [
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TOO_SHORT | OVERLONG_2,
        TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE,
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
    ];
    /// By the low nibble of the byte before.
    pub(crate) const BEFORE_LOW: [u8; 16] = [
        CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
        CARRY | OVERLONG_2,
        CARRY,
        CARRY,
        CARRY | TOO_LARGE,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
    ];
    /// By the high nibble of the byte itself.
    pub(crate) const HIGH: [u8; 16] = [
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
    ];
}

/// The vector types whose compares give vectors of `0xff` / `0x00` bytes are
/// their own masks: their vector methods do the work.
macro_rules! vector_mask {
    ($t:ty) => {
        impl SliceMask for $t {
            #[inline(always)]
            unsafe fn none() -> Self {
                // SAFETY: the caller's function enables the instructions.
                unsafe { <$t as SliceVec>::splat(0) }
            }
            #[inline(always)]
            unsafe fn and(self, other: Self) -> Self {
                // SAFETY: as above.
                unsafe { self.and_vec(other) }
            }
            #[inline(always)]
            unsafe fn or(self, other: Self) -> Self {
                // SAFETY: as above.
                unsafe { <$t as SliceVec>::or(self, other) }
            }
            #[inline(always)]
            unsafe fn any(self) -> bool {
                // SAFETY: as above.
                unsafe { self.any_high() }
            }
            #[inline(always)]
            unsafe fn bits(self) -> u128 {
                // SAFETY: as above.
                unsafe { self.top_bits() }
            }
        }
    };
}

#[cfg(fast_x86_64)]
pub(super) use avx512::Avx512;

#[cfg(fast_x86_64)]
mod avx512 {
    use super::{SliceMask, SliceVec};
    use std::arch::x86_64::*;

    #[derive(Clone, Copy)]
    pub(crate) struct Avx512([__m512i; 2]);

    /// A compare's result: one mask register per 64 bytes.
    #[derive(Clone, Copy)]
    pub(crate) struct Masks([__mmask64; 2]);

    impl SliceVec for Avx512 {
        /// One-byte lanes: at most 2 newlines per lane per slice, 64 per block.
        type Counts = __m512i;
        type Mask = Masks;

        #[inline(always)]
        unsafe fn load(p: *const u8) -> Self {
            // SAFETY: the caller's 128 bytes are readable.
            unsafe {
                Avx512([
                    _mm512_loadu_si512(p.cast()),
                    _mm512_loadu_si512(p.add(64).cast()),
                ])
            }
        }

        #[inline(always)]
        unsafe fn splat(b: u8) -> Self {
            Avx512([_mm512_set1_epi8(b as i8); 2])
        }

        #[inline(always)]
        unsafe fn or(self, other: Self) -> Self {
            let (a, b) = (self.0, other.0);
            Avx512([_mm512_or_si512(a[0], b[0]), _mm512_or_si512(a[1], b[1])])
        }

        #[inline(always)]
        unsafe fn eq(self, other: Self) -> Masks {
            let (a, b) = (self.0, other.0);
            Masks([
                _mm512_cmpeq_epi8_mask(a[0], b[0]),
                _mm512_cmpeq_epi8_mask(a[1], b[1]),
            ])
        }

        #[inline(always)]
        unsafe fn any_high(self) -> bool {
            _mm512_movepi8_mask(_mm512_or_si512(self.0[0], self.0[1])) != 0
        }

        #[inline(always)]
        unsafe fn no_counts() -> __m512i {
            _mm512_setzero_si512()
        }

        #[inline(always)]
        unsafe fn count(counts: __m512i, eq: Masks) -> __m512i {
            let one = _mm512_set1_epi8(1);
            let c = _mm512_mask_add_epi8(counts, eq.0[0], counts, one);
            _mm512_mask_add_epi8(c, eq.0[1], c, one)
        }

        #[inline(always)]
        unsafe fn total(counts: __m512i) -> usize {
            _mm512_reduce_add_epi64(_mm512_sad_epu8(counts, _mm512_setzero_si512())) as usize
        }
    }

    impl SliceMask for Masks {
        #[inline(always)]
        unsafe fn none() -> Self {
            Masks([0; 2])
        }

        #[inline(always)]
        unsafe fn and(self, other: Self) -> Self {
            Masks([self.0[0] & other.0[0], self.0[1] & other.0[1]])
        }

        #[inline(always)]
        unsafe fn or(self, other: Self) -> Self {
            Masks([self.0[0] | other.0[0], self.0[1] | other.0[1]])
        }

        #[inline(always)]
        unsafe fn any(self) -> bool {
            self.0[0] | self.0[1] != 0
        }

        #[inline(always)]
        unsafe fn bits(self) -> u128 {
            u128::from(self.0[0]) | u128::from(self.0[1]) << 64
        }
    }

    /// The 64 bytes before each byte of `cur` by `K` (1 to 3), those of `prev` first.
    #[inline(always)]
    unsafe fn shifted_in<const K: i32>(prev: __m512i, cur: __m512i) -> __m512i {
        // Each 16-byte lane of `cur` beside the lane before it.
        let lanes_before =
            _mm512_permutex2var_epi64(prev, _mm512_setr_epi64(6, 7, 8, 9, 10, 11, 12, 13), cur);
        match K {
            1 => _mm512_alignr_epi8::<15>(cur, lanes_before),
            2 => _mm512_alignr_epi8::<14>(cur, lanes_before),
            _ => _mm512_alignr_epi8::<13>(cur, lanes_before),
        }
    }

    #[inline(always)]
    unsafe fn table(t: &[u8; 16]) -> __m512i {
        _mm512_broadcast_i32x4(_mm_loadu_si128(t.as_ptr().cast()))
    }

    /// The lookup check's error bytes of the 64 bytes `cur` after `prev`.
    #[inline(always)]
    unsafe fn utf8_error_bytes(prev: __m512i, cur: __m512i) -> __m512i {
        use super::utf8_tables::{BEFORE_HIGH, BEFORE_LOW, HIGH};
        let low4 = _mm512_set1_epi8(0x0F);
        let high_nibble = |v: __m512i| _mm512_and_si512(_mm512_srli_epi16::<4>(v), low4);
        let before1 = shifted_in::<1>(prev, cur);
        let special = _mm512_and_si512(
            _mm512_and_si512(
                _mm512_shuffle_epi8(table(&BEFORE_HIGH), high_nibble(before1)),
                _mm512_shuffle_epi8(table(&BEFORE_LOW), _mm512_and_si512(before1, low4)),
            ),
            _mm512_shuffle_epi8(table(&HIGH), high_nibble(cur)),
        );
        // A byte two after a lead of 3 or 4 bytes, or three after one of 4, must be a
        // continuation: its 0x80 bit is then set in `special` by the lookups alone.
        let third = _mm512_subs_epu8(
            shifted_in::<2>(prev, cur),
            _mm512_set1_epi8(0xE0u8 as i8 - 0x80u8 as i8),
        );
        let fourth = _mm512_subs_epu8(
            shifted_in::<3>(prev, cur),
            _mm512_set1_epi8(0xF0u8 as i8 - 0x80u8 as i8),
        );
        let must_continue = _mm512_and_si512(
            _mm512_or_si512(third, fourth),
            _mm512_set1_epi8(0x80u8 as i8),
        );
        _mm512_xor_si512(must_continue, special)
    }

    impl super::Utf8Check for Avx512 {
        #[inline(always)]
        unsafe fn utf8_errors(self, before: Self) -> bool {
            let e0 = utf8_error_bytes(before.0[1], self.0[0]);
            let e1 = utf8_error_bytes(self.0[0], self.0[1]);
            _mm512_test_epi8_mask(_mm512_or_si512(e0, e1), _mm512_or_si512(e0, e1)) != 0
        }

        #[inline(always)]
        unsafe fn utf8_incomplete(self) -> bool {
            // Above these, the last three bytes lead characters of 4, 3 or 2 bytes.
            let mut limits = [0xFFu8; 64];
            limits[61..].copy_from_slice(&[0xF0 - 1, 0xE0 - 1, 0xC0 - 1]);
            let limits = _mm512_loadu_si512(limits.as_ptr().cast());
            _mm512_test_epi8_mask(_mm512_subs_epu8(self.0[1], limits), _mm512_set1_epi8(-1)) != 0
        }
    }
}

#[cfg(fast_x86_64)]
pub(super) use avx2::Avx2;

#[cfg(fast_x86_64)]
mod avx2 {
    use super::{SliceMask, SliceVec};
    use std::arch::x86_64::*;

    #[derive(Clone, Copy)]
    pub(crate) struct Avx2([__m256i; 4]);

    impl Avx2 {
        #[inline(always)]
        unsafe fn map2(self, other: Self, f: impl Fn(__m256i, __m256i) -> __m256i) -> Self {
            let (a, b) = (self.0, other.0);
            Avx2([f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2]), f(a[3], b[3])])
        }

        #[inline(always)]
        unsafe fn folded(self) -> __m256i {
            let v = self.0;
            _mm256_or_si256(_mm256_or_si256(v[0], v[1]), _mm256_or_si256(v[2], v[3]))
        }

        #[inline(always)]
        unsafe fn and_vec(self, other: Self) -> Self {
            self.map2(other, |a, b| _mm256_and_si256(a, b))
        }

        #[inline(always)]
        unsafe fn top_bits(self) -> u128 {
            self.0.iter().enumerate().fold(0u128, |bits, (k, &v)| {
                bits | u128::from(_mm256_movemask_epi8(v) as u32) << (k * 32)
            })
        }
    }

    impl SliceVec for Avx2 {
        /// One-byte lanes: at most 4 newlines per lane per slice, 128 per block.
        type Counts = __m256i;
        type Mask = Self;

        #[inline(always)]
        unsafe fn load(p: *const u8) -> Self {
            let p = p.cast::<__m256i>();
            Avx2([
                _mm256_loadu_si256(p),
                _mm256_loadu_si256(p.add(1)),
                _mm256_loadu_si256(p.add(2)),
                _mm256_loadu_si256(p.add(3)),
            ])
        }

        #[inline(always)]
        unsafe fn splat(b: u8) -> Self {
            Avx2([_mm256_set1_epi8(b as i8); 4])
        }

        #[inline(always)]
        unsafe fn or(self, other: Self) -> Self {
            self.map2(other, |a, b| _mm256_or_si256(a, b))
        }

        #[inline(always)]
        unsafe fn eq(self, other: Self) -> Self {
            self.map2(other, |a, b| _mm256_cmpeq_epi8(a, b))
        }

        #[inline(always)]
        unsafe fn any_high(self) -> bool {
            _mm256_movemask_epi8(self.folded()) != 0
        }

        #[inline(always)]
        unsafe fn no_counts() -> __m256i {
            _mm256_setzero_si256()
        }

        #[inline(always)]
        unsafe fn count(counts: __m256i, eq: Self) -> __m256i {
            // A set byte is -1: subtracting it adds one.
            eq.0.iter().fold(counts, |c, &e| _mm256_sub_epi8(c, e))
        }

        #[inline(always)]
        unsafe fn total(counts: __m256i) -> usize {
            let sums = _mm256_sad_epu8(counts, _mm256_setzero_si256());
            (_mm256_extract_epi64::<0>(sums)
                + _mm256_extract_epi64::<1>(sums)
                + _mm256_extract_epi64::<2>(sums)
                + _mm256_extract_epi64::<3>(sums)) as usize
        }
    }

    vector_mask!(Avx2);

    /// The 32 bytes before each byte of `cur` by `K` (1 to 3), those of `prev` first.
    #[inline(always)]
    unsafe fn shifted_in<const K: i32>(prev: __m256i, cur: __m256i) -> __m256i {
        // Each 16-byte lane of `cur` beside the lane before it.
        let lanes_before = _mm256_permute2x128_si256::<0x21>(prev, cur);
        match K {
            1 => _mm256_alignr_epi8::<15>(cur, lanes_before),
            2 => _mm256_alignr_epi8::<14>(cur, lanes_before),
            _ => _mm256_alignr_epi8::<13>(cur, lanes_before),
        }
    }

    #[inline(always)]
    unsafe fn table(t: &[u8; 16]) -> __m256i {
        _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast()))
    }

    /// The lookup check's error bytes of the 32 bytes `cur` after `prev`.
    #[inline(always)]
    unsafe fn utf8_error_bytes(prev: __m256i, cur: __m256i) -> __m256i {
        use super::utf8_tables::{BEFORE_HIGH, BEFORE_LOW, HIGH};
        let low4 = _mm256_set1_epi8(0x0F);
        let high_nibble = |v: __m256i| _mm256_and_si256(_mm256_srli_epi16::<4>(v), low4);
        let before1 = shifted_in::<1>(prev, cur);
        let special = _mm256_and_si256(
            _mm256_and_si256(
                _mm256_shuffle_epi8(table(&BEFORE_HIGH), high_nibble(before1)),
                _mm256_shuffle_epi8(table(&BEFORE_LOW), _mm256_and_si256(before1, low4)),
            ),
            _mm256_shuffle_epi8(table(&HIGH), high_nibble(cur)),
        );
        // As in the AVX-512 check.
        let third = _mm256_subs_epu8(
            shifted_in::<2>(prev, cur),
            _mm256_set1_epi8(0xE0u8 as i8 - 0x80u8 as i8),
        );
        let fourth = _mm256_subs_epu8(
            shifted_in::<3>(prev, cur),
            _mm256_set1_epi8(0xF0u8 as i8 - 0x80u8 as i8),
        );
        let must_continue = _mm256_and_si256(
            _mm256_or_si256(third, fourth),
            _mm256_set1_epi8(0x80u8 as i8),
        );
        _mm256_xor_si256(must_continue, special)
    }

    impl super::Utf8Check for Avx2 {
        #[inline(always)]
        unsafe fn utf8_errors(self, before: Self) -> bool {
            let v = self.0;
            let e = [
                utf8_error_bytes(before.0[3], v[0]),
                utf8_error_bytes(v[0], v[1]),
                utf8_error_bytes(v[1], v[2]),
                utf8_error_bytes(v[2], v[3]),
            ];
            let any = _mm256_or_si256(_mm256_or_si256(e[0], e[1]), _mm256_or_si256(e[2], e[3]));
            _mm256_testz_si256(any, any) == 0
        }

        #[inline(always)]
        unsafe fn utf8_incomplete(self) -> bool {
            // As in the AVX-512 check.
            let mut limits = [0xFFu8; 32];
            limits[29..].copy_from_slice(&[0xF0 - 1, 0xE0 - 1, 0xC0 - 1]);
            let limits = _mm256_loadu_si256(limits.as_ptr().cast());
            let over = _mm256_subs_epu8(self.0[3], limits);
            _mm256_testz_si256(over, over) == 0
        }
    }
}

#[cfg(fast_aarch64)]
pub(super) use neon::Neon;

#[cfg(fast_aarch64)]
mod neon {
    use super::{SliceMask, SliceVec};
    use std::arch::aarch64::*;

    #[derive(Clone, Copy)]
    pub(crate) struct Neon([uint8x16_t; 8]);

    impl Neon {
        #[inline(always)]
        unsafe fn map2(
            self,
            other: Self,
            f: impl Fn(uint8x16_t, uint8x16_t) -> uint8x16_t,
        ) -> Self {
            let (a, b) = (self.0, other.0);
            Neon(std::array::from_fn(|k| f(a[k], b[k])))
        }

        /// Bits of 64 bytes: each byte keeps its own bit weight (1..=128 in each
        /// eight), then three pairwise adds gather them byte by byte.
        #[inline(always)]
        unsafe fn bits64(v: &[uint8x16_t]) -> u64 {
            const WEIGHTS: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
            let w = vld1q_u8(WEIGHTS.as_ptr());
            let m: [uint8x16_t; 4] = std::array::from_fn(|k| vandq_u8(v[k], w));
            let s = vpaddq_u8(vpaddq_u8(m[0], m[1]), vpaddq_u8(m[2], m[3]));
            vgetq_lane_u64::<0>(vreinterpretq_u64_u8(vpaddq_u8(s, s)))
        }

        #[inline(always)]
        unsafe fn and_vec(self, other: Self) -> Self {
            self.map2(other, |a, b| vandq_u8(a, b))
        }

        #[inline(always)]
        unsafe fn top_bits(self) -> u128 {
            u128::from(Self::bits64(&self.0[..4])) | u128::from(Self::bits64(&self.0[4..])) << 64
        }
    }

    impl SliceVec for Neon {
        /// Two-byte lanes, fed eight-lane sums of each slice (`vpadalq`).
        type Counts = uint16x8_t;
        type Mask = Self;

        #[inline(always)]
        unsafe fn load(p: *const u8) -> Self {
            Neon(std::array::from_fn(|k| vld1q_u8(p.add(16 * k))))
        }

        #[inline(always)]
        unsafe fn splat(b: u8) -> Self {
            Neon([vdupq_n_u8(b); 8])
        }

        #[inline(always)]
        unsafe fn or(self, other: Self) -> Self {
            self.map2(other, |a, b| vorrq_u8(a, b))
        }

        #[inline(always)]
        unsafe fn eq(self, other: Self) -> Self {
            self.map2(other, |a, b| vceqq_u8(a, b))
        }

        #[inline(always)]
        unsafe fn any_high(self) -> bool {
            let v = self.0;
            let a = vorrq_u8(vorrq_u8(v[0], v[1]), vorrq_u8(v[2], v[3]));
            let b = vorrq_u8(vorrq_u8(v[4], v[5]), vorrq_u8(v[6], v[7]));
            vmaxvq_u8(vorrq_u8(a, b)) >= 0x80
        }

        #[inline(always)]
        unsafe fn no_counts() -> uint16x8_t {
            vdupq_n_u16(0)
        }

        #[inline(always)]
        unsafe fn count(counts: uint16x8_t, eq: Self) -> uint16x8_t {
            // A set byte is 0xff (-1): subtracting it adds one; at most 8 a lane.
            let slice = eq.0.iter().fold(vdupq_n_u8(0), |c, &e| vsubq_u8(c, e));
            vpadalq_u8(counts, slice)
        }

        #[inline(always)]
        unsafe fn total(counts: uint16x8_t) -> usize {
            vaddlvq_u16(counts) as usize
        }
    }

    vector_mask!(Neon);
}
