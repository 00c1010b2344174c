//! One read of a text that yields, per block, its `"\n"` count and where it holds
//! non-ASCII bytes: the line index, the ASCII flag and the UTF-8 check share it
//! instead of each reading the whole text again.

#[cfg(any(fast_x86_64, fast_aarch64))]
use super::slice_vec::SliceVec;
#[cfg(any(fast_x86_64, fast_aarch64))]
use crate::arch::prefetch_read;

/// Bytes per slice of a block in the non-ASCII mask.
pub(crate) const SLICE: usize = 128;

/// Newlines in `block` (at most 32 slices long) and a mask whose bit `i` tells
/// that slice `i` (bytes `i * SLICE ..`) holds a non-ASCII byte.
pub(crate) fn block_census(block: &[u8]) -> (usize, u32) {
    #[cfg(fast_x86_64)]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { block_census_avx2(block) };
    }
    #[cfg(fast_aarch64)]
    // SAFETY: NEON is in the aarch64 baseline.
    return unsafe { census_loop::<super::slice_vec::Neon>(block) };
    #[allow(unreachable_code)]
    block_census_portable(block)
}

/// How far ahead of a census loop its bytes are asked into L1. Both loops wait on
/// their loads (a 10 MB text comes from L3, the hardware prefetcher alone leaves
/// the loads stalling); 512 to 2048 bytes ahead measured alike (on x86_64).
#[cfg(any(fast_x86_64, fast_aarch64))]
const PREFETCH_AHEAD: usize = 1024;

#[cfg(fast_x86_64)]
#[target_feature(enable = "avx2")]
unsafe fn block_census_avx2(block: &[u8]) -> (usize, u32) {
    // SAFETY: the CPU supports AVX2 (this function's own requirement).
    unsafe { census_loop::<super::slice_vec::Avx2>(block) }
}

/// Per 128-byte slice: newlines summed in the vector counters, the slice's
/// non-ASCII test one reduction of its bytes' top bits.
///
/// # Safety
/// The CPU must have `V`'s instructions, enabled in the calling function.
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
unsafe fn census_loop<V: SliceVec>(block: &[u8]) -> (usize, u32) {
    debug_assert!(block.len() <= 32 * SLICE);
    let full = block.len() / SLICE;
    let newline = V::splat(b'\n');
    let mut counts = V::no_counts();
    let mut mask = 0u32;
    for (i, slice) in block.chunks_exact(SLICE).enumerate() {
        prefetch_read(slice.as_ptr().wrapping_add(PREFETCH_AHEAD));
        // SAFETY: `slice` holds 128 bytes.
        let v = V::load(slice.as_ptr());
        counts = V::count(counts, v.eq(newline));
        mask |= u32::from(v.any_high()) << i;
    }
    let mut newlines = V::total(counts);
    if full * SLICE < block.len() {
        let (n, last) = block_census_portable(&block[full * SLICE..]);
        newlines += n;
        mask |= last << full;
    }
    (newlines, mask)
}

/// A needle and two of its bytes (rare ones, at offsets `i1`, `i2`): a start where
/// both sit is a candidate, checked against the whole needle.
///
/// A portable build never probes ([`can_probe`] is false there), so its fields
/// go unread; the type stays so that the search has one shape on every build.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(any(fast_x86_64, fast_aarch64)), allow(dead_code))]
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
    #[cfg(fast_x86_64)]
    if std::arch::is_x86_feature_detected!("avx2") {
        return true;
    }
    cfg!(fast_aarch64)
}

/// [`block_census`] of `data[at..at + len]` that also calls `hit(pos)`, ascending,
/// for every occurrence of the needle starting in the block: one read for both.
/// `None` where [`can_probe`] is false (then search the bytes apart).
pub(crate) fn block_census_probe(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    hit: &mut impl FnMut(usize),
) -> Option<(usize, u32)> {
    #[cfg(fast_x86_64)]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return Some(unsafe { block_census_probe_avx2(data, at, len, probe, hit) });
    }
    #[cfg(fast_aarch64)]
    // SAFETY: NEON is in the aarch64 baseline.
    return Some(unsafe { probe_loop::<super::slice_vec::Neon>(data, at, len, probe, hit) });
    #[allow(unreachable_code)]
    {
        let _ = (data, at, len, probe, hit);
        None
    }
}

#[cfg(fast_x86_64)]
#[target_feature(enable = "avx2")]
unsafe fn block_census_probe_avx2(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    hit: &mut impl FnMut(usize),
) -> (usize, u32) {
    // SAFETY: the CPU supports AVX2 (this function's own requirement).
    unsafe { probe_loop::<super::slice_vec::Avx2>(data, at, len, probe, hit) }
}

/// The census loop with the probe folded in: the needle's rarer probe byte (`i1`)
/// is compared in the vectors already loaded for the census (so a candidate start
/// lies `i1` bytes before), the other one (`i2`) in a load `i2 - i1` bytes away
/// (before or after). Every position is compared once over all blocks, so every
/// start is, in ascending order.
///
/// # Safety
/// The CPU must have `V`'s instructions, enabled in the calling function.
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
unsafe fn probe_loop<V: SliceVec>(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    hit: &mut impl FnMut(usize),
) -> (usize, u32) {
    let mut candidates = [std::mem::MaybeUninit::<u128>::uninit(); 32];
    let (newlines, mask, slices) = match (probe.gate, probe.fold.is_some()) {
        (false, false) => block_scan::<V, false, false>(data, at, len, probe, &mut candidates),
        (true, false) => block_scan::<V, true, false>(data, at, len, probe, &mut candidates),
        (false, true) => block_scan::<V, false, true>(data, at, len, probe, &mut candidates),
        (true, true) => block_scan::<V, true, true>(data, at, len, probe, &mut candidates),
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

/// The vector loop of [`probe_loop`]: the block's census, plus a mask of the full
/// slices that hold candidates, whose position bits (where the probe's byte `i1`
/// sits with byte `i2` at its place, or all bits where the second load would reach
/// outside the text) go to `candidates[slice]`. The positions of a partial last
/// slice are left to the caller. No calls inside: a call clobbers every vector
/// register, and calling out of this loop made the compiler keep the vectors on
/// the stack. With `GATE`, the second load and compare are skipped for a slice
/// whose vectors hold no byte `i1`. With `FOLD`, text bytes are ORed with the
/// probe's fold before the compares.
///
/// # Safety
/// The CPU must have `V`'s instructions, enabled in the calling function.
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
unsafe fn block_scan<V: SliceVec, const GATE: bool, const FOLD: bool>(
    data: &[u8],
    at: usize,
    len: usize,
    probe: &Probe<'_>,
    candidates: &mut [std::mem::MaybeUninit<u128>; 32],
) -> (usize, u32, u32) {
    let needle = probe.needle;
    let (near, other) = (probe.i1, probe.i2);
    let b_near = V::splat(needle[near]);
    let b_other = V::splat(needle[other]);
    let fold_of = |i: usize| V::splat(probe.fold.map_or(0, |f| f[i]));
    let (f_near, f_other) = (fold_of(near), fold_of(other));
    let folded = |x: V, f: V| if FOLD { x.or(f) } else { x };
    let newline = V::splat(b'\n');
    // The second load of slice `start` covers `start + other - near ..` (128 bytes):
    // inside the text for starts in `first_far..=last_far`.
    let first_far = near.saturating_sub(other);
    let last_far = (data.len() + near).checked_sub(other + SLICE);
    let block = &data[at..at + len];
    let full = len / SLICE;
    let mut counts = V::no_counts();
    let mut mask = 0u32;
    let mut slices = 0u32;
    for (i, cand) in candidates.iter_mut().enumerate().take(full) {
        let start = at + i * SLICE;
        // SAFETY: the slice's 128 bytes lie inside `block`; unaligned loads.
        let p = unsafe { block.as_ptr().add(i * SLICE) };
        prefetch_read(p.wrapping_add(PREFETCH_AHEAD));
        let v = V::load(p);
        counts = V::count(counts, v.eq(newline));
        mask |= u32::from(v.any_high()) << i;
        let near_eq = folded(v, f_near).eq(b_near);
        if GATE && !near_eq.any_high() {
            continue;
        }
        let bits = if start < first_far || last_far.is_none_or(|last| start > last) {
            // The second load would reach outside the text: every position.
            u128::MAX
        } else {
            // SAFETY: `start + other - near ..` plus 128 bytes lies inside `data`,
            // checked just above.
            let far = V::load(unsafe { data.as_ptr().add(start + other - near) });
            let c = near_eq.and(folded(far, f_other).eq(b_other));
            if !c.any_high() {
                continue;
            }
            c.bits()
        };
        cand.write(bits);
        slices |= 1 << i;
    }
    let mut newlines = V::total(counts);
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
        // The most a block holds: every lane's counters at their largest.
        assert_eq!(block_census(&[b'\n'; 32 * SLICE]), (4096, 0));
        assert_eq!(block_census(&[0xff; 32 * SLICE]), (0, u32::MAX));
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
