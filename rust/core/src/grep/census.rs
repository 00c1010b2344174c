//! One read of a text that yields, per block, its `"\n"` count and where it holds
//! non-ASCII bytes: the line index, the ASCII flag and the UTF-8 check share it
//! instead of each reading the whole text again.

/// Bytes per slice of a block in the non-ASCII mask.
pub(crate) const SLICE: usize = 128;

/// Newlines in `block` (at most 32 slices long) and a mask whose bit `i` tells
/// that slice `i` (bytes `i * SLICE ..`) holds a non-ASCII byte.
pub(crate) fn block_census(block: &[u8]) -> (usize, u32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { block_census_avx2(block) };
    }
    block_census_portable(block)
}

/// Four 32-byte vectors per slice: newlines summed in one-byte lanes (at most 4 per
/// lane per slice, 128 per block), the slice's non-ASCII test one `movemask`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_census_avx2(block: &[u8]) -> (usize, u32) {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_extract_epi64, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_sad_epu8, _mm256_set1_epi8, _mm256_setzero_si256, _mm256_sub_epi8,
    };
    debug_assert!(block.len() <= 32 * SLICE);
    let full = block.len() / SLICE;
    let newline = _mm256_set1_epi8(b'\n' as i8);
    let mut lanes = _mm256_setzero_si256();
    let mut mask = 0u32;
    for (i, slice) in block.chunks_exact(SLICE).enumerate() {
        let p = slice.as_ptr().cast::<__m256i>();
        // SAFETY: `slice` holds 128 bytes, four unaligned 32-byte loads.
        let (a, b, c, d) = unsafe {
            (
                _mm256_loadu_si256(p),
                _mm256_loadu_si256(p.add(1)),
                _mm256_loadu_si256(p.add(2)),
                _mm256_loadu_si256(p.add(3)),
            )
        };
        // A compare gives -1 per newline byte: subtracting it adds one.
        lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(a, newline));
        lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(b, newline));
        lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(c, newline));
        lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(d, newline));
        let any = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
        mask |= u32::from(_mm256_movemask_epi8(any) != 0) << i;
    }
    let sums = _mm256_sad_epu8(lanes, _mm256_setzero_si256());
    let mut newlines = (_mm256_extract_epi64::<0>(sums)
        + _mm256_extract_epi64::<1>(sums)
        + _mm256_extract_epi64::<2>(sums)
        + _mm256_extract_epi64::<3>(sums)) as usize;
    if full * SLICE < block.len() {
        let (n, last) = block_census_portable(&block[full * SLICE..]);
        newlines += n;
        mask |= last << full;
    }
    (newlines, mask)
}

/// One-byte counters over 128-byte slices: the compiler turns the inner loop into
/// vector compares, adds and ors.
#[inline(always)]
fn block_census_portable(block: &[u8]) -> (usize, u32) {
    debug_assert!(block.len() <= 32 * SLICE);
    let mut newlines = 0usize;
    let mut mask = 0u32;
    for (i, slice) in block.chunks(SLICE).enumerate() {
        let mut n = 0u8;
        let mut bits = 0u8;
        for &b in slice {
            n += u8::from(b == b'\n');
            bits |= b;
        }
        newlines += usize::from(n);
        mask |= u32::from(bits >> 7) << i;
    }
    (newlines, mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_newlines_and_spots_non_ascii_slices() {
        assert_eq!(block_census(b""), (0, 0));
        let mut text: Vec<u8> = (0..4096)
            .map(|i| if i % 3 == 0 { b'\n' } else { b'a' })
            .collect();
        assert_eq!(block_census(&text), (1366, 0));
        text[SLICE * 5 + 7] = 0xC3;
        text[4095] = 0xA9;
        assert_eq!(block_census(&text), (1365, 1 << 5 | 1 << 31));
        assert_eq!(block_census("a\né\n".as_bytes()), (2, 1));
        // A partial last slice, and the portable loop agrees with the vector one.
        text.truncate(4000);
        text[3999] = 0xA9;
        let expected = (
            text.iter().filter(|&&b| b == b'\n').count(),
            1 << 5 | 1 << 31,
        );
        assert_eq!(block_census(&text), expected);
        assert_eq!(block_census_portable(&text), expected);
    }
}
