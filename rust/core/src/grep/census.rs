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

/// A needle and two of its bytes (rare ones, at offsets `i1`, `i2`): a start where
/// both sit is a candidate, checked against the whole needle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe<'a> {
    pub needle: &'a [u8],
    pub i1: usize,
    pub i2: usize,
}

/// Whether [`block_census_probe`] runs on this CPU.
pub(crate) fn can_probe() -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return true;
    }
    false
}

/// [`block_census`] of `data[at..at + len]` that also calls `hit(pos)`, ascending,
/// for every occurrence of the needle starting in the block: one read for both.
/// `None` when the CPU lacks AVX2 (then search the bytes apart).
pub(crate) fn block_census_probe(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    hit: &mut impl FnMut(usize),
) -> Option<(usize, u32)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return Some(unsafe { block_census_probe_avx2(data, at, len, probe, hit) });
    }
    let _ = (data, at, len, probe, hit);
    None
}

/// The census loop of [`block_census_avx2`] with the probe folded in: the byte at the
/// needle's lower probe offset is compared in the vectors already loaded for the
/// census (so a candidate start lies `lo` bytes before), the other one in a load
/// `hi - lo` bytes further on. Every position is compared once over all blocks, so
/// every start is, in ascending order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_census_probe_avx2(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    hit: &mut impl FnMut(usize),
) -> (usize, u32) {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_extract_epi64, _mm256_loadu_si256,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_sad_epu8, _mm256_set1_epi8,
        _mm256_setzero_si256, _mm256_sub_epi8,
    };
    let needle = probe.needle;
    let (lo, hi) = (probe.i1.min(probe.i2), probe.i1.max(probe.i2));
    let gap = hi - lo;
    let b_lo = _mm256_set1_epi8(needle[lo] as i8);
    let b_hi = _mm256_set1_epi8(needle[hi] as i8);
    let newline = _mm256_set1_epi8(b'\n' as i8);
    let mut check = |pos: usize| {
        // `pos` holds the needle's byte `lo`: the candidate starts `lo` before.
        if let Some(start) = pos.checked_sub(lo) {
            if data[start..].starts_with(needle) {
                hit(start);
            }
        }
    };
    let block = &data[at..at + len];
    let full = len / SLICE;
    let mut lanes = _mm256_setzero_si256();
    let mut mask = 0u32;
    for i in 0..full {
        let start = at + i * SLICE;
        // SAFETY: the slice's 128 bytes lie inside `block`; unaligned loads.
        let p = unsafe { block.as_ptr().add(i * SLICE) };
        let v = unsafe {
            [
                _mm256_loadu_si256(p.cast::<__m256i>()),
                _mm256_loadu_si256(p.add(32).cast::<__m256i>()),
                _mm256_loadu_si256(p.add(64).cast::<__m256i>()),
                _mm256_loadu_si256(p.add(96).cast::<__m256i>()),
            ]
        };
        for x in v {
            lanes = _mm256_sub_epi8(lanes, _mm256_cmpeq_epi8(x, newline));
        }
        let any = _mm256_or_si256(_mm256_or_si256(v[0], v[1]), _mm256_or_si256(v[2], v[3]));
        mask |= u32::from(_mm256_movemask_epi8(any) != 0) << i;
        if start + SLICE + gap > data.len() {
            // The far probe byte would lie past the end: one position at a time.
            (start..start + SLICE).for_each(&mut check);
            continue;
        }
        // SAFETY: `start + gap + 127 < data.len()`, checked just above.
        let far = |k: usize| unsafe { _mm256_loadu_si256(p.add(k * 32 + gap).cast::<__m256i>()) };
        let c = [0, 1, 2, 3].map(|k| {
            _mm256_and_si256(
                _mm256_cmpeq_epi8(v[k], b_lo),
                _mm256_cmpeq_epi8(far(k), b_hi),
            )
        });
        let any = _mm256_or_si256(_mm256_or_si256(c[0], c[1]), _mm256_or_si256(c[2], c[3]));
        if _mm256_movemask_epi8(any) != 0 {
            for (k, m) in c.into_iter().enumerate() {
                let mut m = _mm256_movemask_epi8(m) as u32;
                while m != 0 {
                    check(start + k * 32 + m.trailing_zeros() as usize);
                    m &= m - 1;
                }
            }
        }
    }
    let sums = _mm256_sad_epu8(lanes, _mm256_setzero_si256());
    let mut newlines = (_mm256_extract_epi64::<0>(sums)
        + _mm256_extract_epi64::<1>(sums)
        + _mm256_extract_epi64::<2>(sums)
        + _mm256_extract_epi64::<3>(sums)) as usize;
    if full * SLICE < len {
        let rest = full * SLICE;
        let (n, last) = block_census_portable(&block[rest..]);
        newlines += n;
        mask |= last << full;
        (at + rest..at + len).for_each(&mut check);
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
