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

/// How far ahead of a census loop its bytes are asked into L1. Both loops wait on
/// their loads (a 10 MB text comes from L3, the hardware prefetcher alone leaves
/// the loads stalling); 512 to 2048 bytes ahead measured alike.
const PREFETCH_AHEAD: usize = 1024;

/// Asks for the two cache lines `PREFETCH_AHEAD` bytes after `p` (a 128-byte slice).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_ahead(p: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    let ahead = p.wrapping_add(PREFETCH_AHEAD);
    // SAFETY: a prefetch is a hint: it never faults (also past the text's end) and
    // the pointer is not dereferenced.
    unsafe {
        _mm_prefetch::<_MM_HINT_T0>(ahead.cast());
        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(64).cast());
    }
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
        prefetch_ahead(slice.as_ptr());
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
    /// Per needle byte, what to OR into a text byte before comparing: `0x20` where
    /// the needle holds a lowercase letter to match in either case. `None`: exact.
    pub fold: Option<&'a [u8]>,
    pub i1: usize,
    pub i2: usize,
    /// Whether byte `i1` is rare enough that most slices hold none: then the
    /// compare of byte `i2` is done only in slices that hold one.
    pub gate: bool,
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

/// The census loop of [`block_census_avx2`] with the probe folded in: the needle's
/// rarer probe byte (`i1`) is compared in the vectors already loaded for the census
/// (so a candidate start lies `i1` bytes before), the other one (`i2`) in a load
/// `i2 - i1` bytes away (before or after). Every position is compared once over all
/// blocks, so every start is, in ascending order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_census_probe_avx2(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    hit: &mut impl FnMut(usize),
) -> (usize, u32) {
    let mut candidates = [std::mem::MaybeUninit::<u128>::uninit(); 32];
    // SAFETY: the CPU supports AVX2 (this function's own requirement).
    let (newlines, mask, slices) = unsafe {
        match (probe.gate, probe.fold.is_some()) {
            (false, false) => block_scan::<false, false>(data, at, len, probe, &mut candidates),
            (true, false) => block_scan::<true, false>(data, at, len, probe, &mut candidates),
            (false, true) => block_scan::<false, true>(data, at, len, probe, &mut candidates),
            (true, true) => block_scan::<true, true>(data, at, len, probe, &mut candidates),
        }
    };
    let needle = probe.needle;
    let mut check = |pos: usize| {
        // `pos` holds the needle's byte `i1`: the candidate starts `i1` before.
        let Some(start) = pos.checked_sub(probe.i1) else {
            return;
        };
        let found = match probe.fold {
            None => data[start..].starts_with(needle),
            Some(fold) => data.get(start..start + needle.len()).is_some_and(|w| {
                w.iter()
                    .zip(needle)
                    .zip(fold)
                    .all(|((&b, &n), &f)| b | f == n)
            }),
        };
        if found {
            hit(start);
        }
    };
    let mut slices = slices;
    while slices != 0 {
        let slice = slices.trailing_zeros() as usize;
        slices &= slices - 1;
        // SAFETY: `block_scan` wrote the bits of every slice it flags.
        let mut bits = unsafe { candidates[slice].assume_init() };
        let start = at + slice * SLICE;
        while bits != 0 {
            check(start + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
    let rest = len / SLICE * SLICE;
    (at + rest..at + len).for_each(check);
    (newlines, mask)
}

/// The vector loop of [`block_census_probe_avx2`]: the block's census, plus a mask
/// of the full slices that hold candidates, whose position bits (where the probe's
/// byte `i1` sits with byte `i2` at its place, or all bits where the second load
/// would reach outside the text) go to `candidates[slice]`. The positions of a
/// partial last slice are left to the caller. No calls inside: a call clobbers every
/// vector register, and calling out of this loop made the compiler keep the vectors
/// on the stack. With `GATE`, the second load and compare are skipped for a slice
/// whose vectors hold no byte `i1`. With `FOLD`, text bytes are ORed with the
/// probe's fold before the compares.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_scan<const GATE: bool, const FOLD: bool>(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    candidates: &mut [std::mem::MaybeUninit<u128>; 32],
) -> (usize, u32, u32) {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_extract_epi64, _mm256_loadu_si256,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_sad_epu8, _mm256_set1_epi8,
        _mm256_setzero_si256, _mm256_sub_epi8,
    };
    let needle = probe.needle;
    let (near, other) = (probe.i1, probe.i2);
    let b_near = _mm256_set1_epi8(needle[near] as i8);
    let b_other = _mm256_set1_epi8(needle[other] as i8);
    let fold_of = |i: usize| _mm256_set1_epi8(probe.fold.map_or(0, |f| f[i]) as i8);
    let (f_near, f_other) = (fold_of(near), fold_of(other));
    let folded = |x: __m256i, f: __m256i| if FOLD { _mm256_or_si256(x, f) } else { x };
    let newline = _mm256_set1_epi8(b'\n' as i8);
    // The second load of slice `start` covers `start + other - near ..` (128 bytes):
    // inside the text for starts in `first_far..=last_far`.
    let first_far = near.saturating_sub(other);
    let last_far = (data.len() + near).checked_sub(other + SLICE);
    let block = &data[at..at + len];
    let full = len / SLICE;
    let mut lanes = _mm256_setzero_si256();
    let mut mask = 0u32;
    let mut slices = 0u32;
    for (i, cand) in candidates.iter_mut().enumerate().take(full) {
        let start = at + i * SLICE;
        // SAFETY: the slice's 128 bytes lie inside `block`; unaligned loads.
        let p = unsafe { block.as_ptr().add(i * SLICE) };
        prefetch_ahead(p);
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
        let near_eq = v.map(|x| _mm256_cmpeq_epi8(folded(x, f_near), b_near));
        if GATE {
            let any = _mm256_or_si256(
                _mm256_or_si256(near_eq[0], near_eq[1]),
                _mm256_or_si256(near_eq[2], near_eq[3]),
            );
            if _mm256_movemask_epi8(any) == 0 {
                continue;
            }
        }
        let bits = if start < first_far || last_far.is_none_or(|last| start > last) {
            // The second load would reach outside the text: every position.
            u128::MAX
        } else {
            // SAFETY: `start + other - near ..` plus 128 bytes lies inside `data`,
            // checked just above.
            let q = unsafe { data.as_ptr().add(start + other - near) };
            let far = |k: usize| unsafe { _mm256_loadu_si256(q.add(k * 32).cast::<__m256i>()) };
            let c = [0, 1, 2, 3].map(|k| {
                let eq = _mm256_cmpeq_epi8(folded(far(k), f_other), b_other);
                _mm256_and_si256(near_eq[k], eq)
            });
            let any = _mm256_or_si256(_mm256_or_si256(c[0], c[1]), _mm256_or_si256(c[2], c[3]));
            if _mm256_movemask_epi8(any) == 0 {
                continue;
            }
            c.into_iter().enumerate().fold(0u128, |bits, (k, c)| {
                bits | u128::from(_mm256_movemask_epi8(c) as u32) << (k * 32)
            })
        };
        cand.write(bits);
        slices |= 1 << i;
    }
    let sums = _mm256_sad_epu8(lanes, _mm256_setzero_si256());
    let mut newlines = (_mm256_extract_epi64::<0>(sums)
        + _mm256_extract_epi64::<1>(sums)
        + _mm256_extract_epi64::<2>(sums)
        + _mm256_extract_epi64::<3>(sums)) as usize;
    if full * SLICE < len {
        let (count, last) = block_census_portable(&block[full * SLICE..]);
        newlines += count;
        mask |= last << full;
    }
    (newlines, mask, slices)
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

    /// Runs the probe over `text` block by block, as the index does, and checks the
    /// census and the hits against a plain scan.
    fn probe_agrees(text: &[u8], needle: &[u8], i1: usize, i2: usize, gate: bool) {
        if !can_probe() {
            return;
        }
        let probe = Probe {
            needle,
            fold: None,
            i1,
            i2,
            gate,
        };
        let mut hits = Vec::new();
        for at in (0..text.len()).step_by(32 * SLICE) {
            let len = (text.len() - at).min(32 * SLICE);
            let found = block_census_probe(text, at, len, &probe, &mut |s| hits.push(s));
            assert_eq!(found, Some(block_census(&text[at..at + len])), "{at}");
        }
        let expected: Vec<usize> = (0..text.len())
            .filter(|&s| text[s..].starts_with(needle))
            .collect();
        assert_eq!(hits, expected, "{needle:?} {i1} {i2} {gate}");
    }

    #[test]
    fn probe_finds_every_start_in_order_gated_or_not() {
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for len in [0usize, 5, 127, 128, 4095, 4096, 4097, 9000, 3 * 4096 + 77] {
            let mut text: Vec<u8> = (0..len)
                .map(|i| match i % 53 {
                    52 => b'\n',
                    7 => b'z', // the gate byte, in every slice
                    _ => b'a' + (i * 7 % 5) as u8,
                })
                .collect();
            // Needles at the start, across slice and block edges, overlapping, at the end.
            for at in [0, 120, 125, 4090, 4094, 4095, 8190, 8192, 8193, 8196] {
                if at + 6 <= len {
                    text[at..at + 6].copy_from_slice(b"xqzxqz");
                }
            }
            if len >= 6 {
                text[len - 6..].copy_from_slice(b"zxqzxq");
            }
            texts.push(text);
        }
        // A non-ASCII slice.
        texts.push("é\nxqz ".repeat(2000).into_bytes());
        for text in &texts {
            for needle in [&b"xqz"[..], b"zxq", b"qzxqz", b"xq", b"zz"] {
                for i1 in 0..needle.len() {
                    for i2 in 0..needle.len() {
                        if i1 != i2 {
                            for gate in [false, true] {
                                probe_agrees(text, needle, i1, i2, gate);
                            }
                        }
                    }
                }
            }
        }
    }

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
