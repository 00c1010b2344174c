//! One read of a text that yields, per block, its `"\n"` count and where it holds
//! non-ASCII bytes: the line index, the ASCII flag and the UTF-8 check share it
//! instead of each reading the whole text again.

#[cfg(any(fast_x86_64, fast_aarch64))]
use super::slice_vec::{SliceMask, SliceVec};
#[cfg(any(fast_x86_64, fast_aarch64))]
use crate::arch::prefetch_read;

/// Bytes per slice of a block in the non-ASCII mask.
pub(crate) const SLICE: usize = 128;

/// The vector instructions the census loops run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // each build makes only its own architecture's kinds
pub(crate) enum Vectors {
    /// Two 64-byte vectors a slice, compares into mask registers (x86_64 with
    /// AVX-512 BW): a third of AVX2's instructions per slice.
    Avx512,
    /// Four 32-byte vectors a slice.
    Avx2,
    /// Eight 16-byte vectors a slice (the aarch64 baseline).
    Neon,
    /// None: the portable loop, and no probe.
    Portable,
}

/// The widest vectors this CPU runs (what a test forces on its own thread, in tests).
pub(crate) fn vectors() -> Vectors {
    #[cfg(test)]
    if let Some(forced) = tests::FORCED.with(std::cell::Cell::get) {
        return forced;
    }
    #[cfg(fast_x86_64)]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512bw") {
            return Vectors::Avx512;
        }
        if has!("avx2") {
            return Vectors::Avx2;
        }
    }
    #[cfg(fast_aarch64)]
    return Vectors::Neon;
    #[allow(unreachable_code)]
    Vectors::Portable
}

/// `Some($loop::<V>(args))` with `V` the vectors `$kind` names, inside a
/// function that enables their instructions (where the intrinsics inline);
/// `None` for [`Vectors::Portable`]. With `x86 only:`, also `None` for
/// [`Vectors::Neon`] (for a loop written for x86_64's vectors alone).
macro_rules! with_vectors {
    ($kind:expr, $loop:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        with_vectors!(@arms [Neon] $kind, $loop, ($($arg: $ty),*), ($($arg),*) -> $ret)
    };
    (x86 only: $kind:expr, $loop:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        with_vectors!(@arms [] $kind, $loop, ($($arg: $ty),*), ($($arg),*) -> $ret)
    };
    (@arms [$($neon:ident)?] $kind:expr, $loop:ident, $params:tt, $args:tt -> $ret:ty) => {
        match $kind {
            #[cfg(fast_x86_64)]
            Vectors::Avx512 => {
                #[target_feature(enable = "avx512f,avx512bw")]
                unsafe fn run $params -> $ret {
                    // SAFETY: the CPU has AVX-512 BW (this function's own requirement).
                    unsafe { $loop::<super::slice_vec::Avx512> $args }
                }
                // SAFETY: `vectors` found AVX-512 BW on this CPU.
                Some(unsafe { run $args })
            }
            #[cfg(fast_x86_64)]
            Vectors::Avx2 => {
                #[target_feature(enable = "avx2")]
                unsafe fn run $params -> $ret {
                    // SAFETY: the CPU has AVX2 (this function's own requirement).
                    unsafe { $loop::<super::slice_vec::Avx2> $args }
                }
                // SAFETY: `vectors` found AVX2 on this CPU.
                Some(unsafe { run $args })
            }
            $(
                #[cfg(fast_aarch64)]
                // SAFETY: NEON is in the aarch64 baseline.
                Vectors::Neon => Some(unsafe { $loop::<super::slice_vec::$neon> $args }),
            )?
            _ => {
                let _ = $args;
                None
            }
        }
    };
}

/// Newlines in `block` (at most 32 slices long) and a mask whose bit `i` tells
/// that slice `i` (bytes `i * SLICE ..`) holds a non-ASCII byte.
pub(crate) fn block_census(block: &[u8]) -> (usize, u32) {
    with_vectors!(vectors(), census_loop(block: &[u8]) -> (usize, u32))
        .unwrap_or_else(|| block_census_portable(block))
}

/// How far ahead of a census loop its bytes are asked into L1 (see [`prefetch_near`]).
#[cfg(any(fast_x86_64, fast_aarch64))]
const PREFETCH_AHEAD: usize = 1024;

/// How far ahead of a census loop its bytes are asked into L2: a text out of
/// cache (in L3 or memory) needs more loads in flight than the hardware
/// prefetcher alone keeps.
#[cfg(any(fast_x86_64, fast_aarch64))]
const PREFETCH_FAR: usize = 8192;

/// Asks the 128 bytes `PREFETCH_AHEAD` past `p` into L1 when `near`; always on
/// aarch64. On x86_64 (AVX2 and AVX-512 alike) the loops given `near` false
/// (the census alone, a gated probe) ran 8-25% faster without these prefetches
/// on a 10 MB text out of cache, while a probe that loads twice a slice (not
/// gated) ran 24% slower (paired processes, 2026-12-05).
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
fn prefetch_near(p: *const u8, near: bool) {
    if near || cfg!(fast_aarch64) {
        prefetch_read(p.wrapping_add(PREFETCH_AHEAD));
    }
}

/// Asks the 128 bytes at `p` into L2 (a hint: it never faults).
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
fn prefetch_far(p: *const u8) {
    #[cfg(fast_x86_64)]
    // SAFETY: a prefetch is a hint and cannot fault.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        _mm_prefetch::<_MM_HINT_T1>(p.cast());
        _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(64).cast());
    }
    #[cfg(fast_aarch64)]
    let _ = p;
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
        prefetch_near(slice.as_ptr(), false);
        prefetch_far(slice.as_ptr().wrapping_add(PREFETCH_FAR));
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
/// The vectors for a probe: not AVX-512 for one not gated, which loads every
/// slice a second time at the needle's offset (unaligned): with AVX-512 it ran
/// 4-6% slower than with AVX2 (`self` over 10 MB of logs, paired processes).
fn vectors_for_probes(gate: bool) -> Vectors {
    match vectors() {
        Vectors::Avx512 if !gate => Vectors::Avx2,
        kind => kind,
    }
}

pub(crate) fn can_probe() -> bool {
    vectors() != Vectors::Portable
}

/// [`block_census_probe`] for one or more probes: with one, `hit(start)` for every
/// occurrence of its needle starting in the block; with several (at most 4, all
/// with the same `gate`), `hit(pos)`, ascending, for every position `pos` of the
/// block that holds byte `i1` of an occurrence of one of their needles (a position
/// inside the occurrence, so on its line). Also how many candidate positions were
/// checked against the needles (counted with several probes only, else 0). `None`
/// where [`can_probe`] is false.
pub(crate) fn block_census_probes(
    data: &[u8],
    at: usize,
    len: usize,
    probes: &[Probe<'_>],
    hit: &mut impl FnMut(usize),
) -> Option<(usize, u32, usize)> {
    match probes {
        [one] => block_census_probe(data, at, len, one, hit).map(|(n, m)| (n, m, 0)),
        _ => block_census_multi(data, at, len, probes, hit),
    }
}

fn block_census_multi(
    data: &[u8],
    at: usize,
    len: usize,
    probes: &[Probe<'_>],
    hit: &mut impl FnMut(usize),
) -> Option<(usize, u32, usize)> {
    let gate = probes.iter().all(|p| p.gate);
    with_vectors!(vectors_for_probes(gate), multi_loop(
        data: &[u8],
        at: usize,
        len: usize,
        probes: &[Probe<'_>],
        hit: &mut impl FnMut(usize)
    ) -> (usize, u32, usize))
}

/// Whether `data` holds `probe`'s needle with its byte `i1` at `pos` (compared
/// case-blind where the probe folds).
#[cfg_attr(not(any(fast_x86_64, fast_aarch64)), allow(dead_code))]
fn needle_at(data: &[u8], pos: usize, probe: &Probe<'_>) -> bool {
    let Some(start) = pos.checked_sub(probe.i1) else {
        return false;
    };
    let Some(window) = data.get(start..start + probe.needle.len()) else {
        return false;
    };
    match probe.fold {
        None => window == probe.needle,
        Some(fold) => window
            .iter()
            .zip(probe.needle)
            .zip(fold)
            .all(|((&b, &n), &f)| b | f == n),
    }
}

/// [`probe_loop`] for several probes (see [`block_census_probes`]).
///
/// # Safety
/// The CPU must have `V`'s instructions, enabled in the calling function.
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
unsafe fn multi_loop<V: SliceVec>(
    data: &[u8],
    at: usize,
    len: usize,
    probes: &[Probe<'_>],
    hit: &mut impl FnMut(usize),
) -> (usize, u32, usize) {
    let mut candidates = [std::mem::MaybeUninit::<u128>::uninit(); 32];
    let gate = probes.iter().all(|p| p.gate);
    let fold = probes.iter().any(|p| p.fold.is_some());
    let c = &mut candidates;
    let (newlines, mask, slices) = match (probes.len(), gate, fold) {
        (2, false, false) => multi_scan::<V, 2, false, false>(data, at, len, probes, c),
        (2, true, false) => multi_scan::<V, 2, true, false>(data, at, len, probes, c),
        (2, false, true) => multi_scan::<V, 2, false, true>(data, at, len, probes, c),
        (2, true, true) => multi_scan::<V, 2, true, true>(data, at, len, probes, c),
        (3, false, false) => multi_scan::<V, 3, false, false>(data, at, len, probes, c),
        (3, true, false) => multi_scan::<V, 3, true, false>(data, at, len, probes, c),
        (3, false, true) => multi_scan::<V, 3, false, true>(data, at, len, probes, c),
        (3, true, true) => multi_scan::<V, 3, true, true>(data, at, len, probes, c),
        (4, false, false) => multi_scan::<V, 4, false, false>(data, at, len, probes, c),
        (4, true, false) => multi_scan::<V, 4, true, false>(data, at, len, probes, c),
        (4, false, true) => multi_scan::<V, 4, false, true>(data, at, len, probes, c),
        (4, true, true) => multi_scan::<V, 4, true, true>(data, at, len, probes, c),
        _ => unreachable!("two to four probes"),
    };
    let mut check = |pos: usize| {
        if probes.iter().any(|p| needle_at(data, pos, p)) {
            hit(pos);
        }
    };
    let mut slices = slices;
    let mut checked = 0;
    while slices != 0 {
        let slice = slices.trailing_zeros() as usize;
        slices &= slices - 1;
        // SAFETY: `multi_scan` wrote the bits of every slice it flags.
        let mut bits = unsafe { candidates[slice].assume_init() };
        checked += bits.count_ones() as usize;
        let start = at + slice * SLICE;
        while bits != 0 {
            check(start + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
    let rest = len / SLICE * SLICE;
    (at + rest..at + len).for_each(check);
    (newlines, mask, checked + len - rest)
}

/// [`block_scan`] for `N` probes: a position is a candidate when one probe's bytes
/// `i1` and `i2` both sit at their places; with `GATE`, a slice whose vectors hold
/// no probe's byte `i1` is skipped. With `FOLD` (some probe folds), text bytes are
/// ORed with each probe's folds before the compares.
///
/// # Safety
/// The CPU must have `V`'s instructions, enabled in the calling function.
#[cfg(any(fast_x86_64, fast_aarch64))]
#[inline(always)]
unsafe fn multi_scan<V: SliceVec, const N: usize, const GATE: bool, const FOLD: bool>(
    data: &[u8],
    at: usize,
    len: usize,
    probes: &[Probe<'_>],
    candidates: &mut [std::mem::MaybeUninit<u128>; 32],
) -> (usize, u32, u32) {
    // No closures in here: they would not inherit the enabled instructions.
    let zero = V::splat(0);
    let (mut near, mut near_fold, mut far, mut far_fold) =
        ([zero; N], [zero; N], [zero; N], [zero; N]);
    let mut shift = [0usize; N];
    for k in 0..N {
        let q = &probes[k];
        let fold = q.fold.unwrap_or(&[]);
        near[k] = V::splat(q.needle[q.i1]);
        near_fold[k] = V::splat(fold.get(q.i1).copied().unwrap_or(0));
        far[k] = V::splat(q.needle[q.i2]);
        far_fold[k] = V::splat(fold.get(q.i2).copied().unwrap_or(0));
        shift[k] = q.i1;
    }
    // Probe `k`'s second load of the slice at `start` covers `start + i2 - i1 ..`
    // (128 bytes): inside the text for every probe when `start` is in
    // `first_far..=last_far`.
    let mut first_far = 0;
    let mut last_far = Some(usize::MAX);
    for q in probes {
        first_far = first_far.max(q.i1.saturating_sub(q.i2));
        last_far = match ((data.len() + q.i1).checked_sub(q.i2 + SLICE), last_far) {
            (Some(a), Some(b)) => Some(a.min(b)),
            _ => None,
        };
    }
    let newline = V::splat(b'\n');
    let block = &data[at..at + len];
    let full = len / SLICE;
    let mut counts = V::no_counts();
    let mut mask = 0u32;
    let mut slices = 0u32;
    for (i, cand) in candidates.iter_mut().enumerate().take(full) {
        let start = at + i * SLICE;
        // SAFETY: the slice's 128 bytes lie inside `block`; unaligned loads.
        let p = unsafe { block.as_ptr().add(i * SLICE) };
        prefetch_near(p, !GATE);
        prefetch_far(p.wrapping_add(PREFETCH_FAR));
        let v = V::load(p);
        counts = V::count(counts, v.eq(newline));
        mask |= u32::from(v.any_high()) << i;
        let mut near_eq = [V::Mask::none(); N];
        let mut any_near = V::Mask::none();
        for k in 0..N {
            let x = if FOLD { v.or(near_fold[k]) } else { v };
            near_eq[k] = x.eq(near[k]);
            any_near = any_near.or(near_eq[k]);
        }
        if GATE && !any_near.any() {
            continue;
        }
        let in_text = match last_far {
            Some(last) => start >= first_far && start <= last,
            None => false,
        };
        let bits = if !in_text {
            // A second load would reach outside the text: every position.
            u128::MAX
        } else {
            let mut c = V::Mask::none();
            for k in 0..N {
                // SAFETY: `start + i2 - i1 ..` plus 128 bytes lies inside `data` for
                // every probe, checked just above.
                let q = unsafe { data.as_ptr().add(start + probes[k].i2 - shift[k]) };
                let far_v = V::load(q);
                let y = if FOLD { far_v.or(far_fold[k]) } else { far_v };
                c = c.or(near_eq[k].and(y.eq(far[k])));
            }
            if !c.any() {
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
    with_vectors!(vectors_for_probes(probe.gate), probe_loop(
        data: &[u8],
        at: usize,
        len: usize,
        probe: &Probe<'_>,
        hit: &mut impl FnMut(usize)
    ) -> (usize, u32))
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
        prefetch_near(p, !GATE);
        prefetch_far(p.wrapping_add(PREFETCH_FAR));
        let v = V::load(p);
        counts = V::count(counts, v.eq(newline));
        mask |= u32::from(v.any_high()) << i;
        let near_eq = folded(v, f_near).eq(b_near);
        if GATE && !near_eq.any() {
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
            if !c.any() {
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

/// Whether [`utf8_slices`] checks UTF-8 on this CPU (x86_64 with AVX2 or AVX-512).
pub(crate) fn checks_utf8_slices() -> bool {
    matches!(vectors(), Vectors::Avx512 | Vectors::Avx2)
}

/// Checks the non-ASCII slices (`mask`, see [`block_census`]) of the block
/// `data[at..at + len]` are UTF-8, each with the three bytes before it; ASCII slices
/// are UTF-8 as they are. `pending`: the block before ended inside a character (so
/// this block's first slice must go on with it), updated for the next block. False
/// on an error (`data` is then not UTF-8), or where [`checks_utf8_slices`] is false.
pub(crate) fn utf8_slices(
    data: &[u8],
    at: usize,
    len: usize,
    mask: u32,
    pending: &mut bool,
) -> bool {
    if mask == 0 && !*pending {
        return true;
    }
    with_vectors!(x86 only: vectors(), utf8_loop(
        data: &[u8],
        at: usize,
        len: usize,
        mask: u32,
        pending: &mut bool
    ) -> bool)
    .unwrap_or(false)
}

/// The loop of [`utf8_slices`].
///
/// # Safety
/// The CPU must have `V`'s instructions, enabled in the calling function.
#[cfg(fast_x86_64)]
#[inline(always)]
unsafe fn utf8_loop<V: super::slice_vec::Utf8Check>(
    data: &[u8],
    at: usize,
    len: usize,
    mask: u32,
    pending: &mut bool,
) -> bool {
    let full = len / SLICE;
    // The start of the slice that must go on with a character begun before it.
    let mut goes_on = pending.then_some(at);
    let mut m = mask;
    while m != 0 {
        let i = m.trailing_zeros() as usize;
        m &= m - 1;
        let q = at + i * SLICE;
        if goes_on.is_some_and(|g| g != q) {
            return false; // an ASCII slice came between: the character is cut short
        }
        if i < full {
            // SAFETY: `q - SLICE..q + SLICE` lies inside `data` (blocks hold whole slices).
            let before = if q >= SLICE {
                unsafe { V::load(data.as_ptr().add(q - SLICE)) }
            } else {
                unsafe { V::splat(0) }
            };
            // SAFETY: as above.
            let v = unsafe { V::load(data.as_ptr().add(q)) };
            if unsafe { v.utf8_errors(before) } {
                return false;
            }
            goes_on = unsafe { v.utf8_incomplete() }.then_some(q + SLICE);
        } else {
            // The text's last, partial slice, from the start of the character its
            // first byte is in.
            let from = match goes_on {
                Some(_) => (q.saturating_sub(3)..q)
                    .rev()
                    .find(|&k| data[k] & 0xC0 != 0x80)
                    .unwrap_or(q),
                None => q,
            };
            if std::str::from_utf8(&data[from..at + len]).is_err() {
                return false;
            }
            goes_on = None;
        }
    }
    if goes_on.is_some_and(|g| g < at + len) {
        return false;
    }
    *pending = goes_on.is_some();
    true
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
    use std::cell::Cell;

    thread_local! {
        /// The vectors [`vectors`] picks on this thread, when set.
        pub(super) static FORCED: Cell<Option<Vectors>> = const { Cell::new(None) };
    }

    /// Runs `check` once with each kind of vectors this CPU runs, down to the
    /// portable loop (each loop is then compared with the plain scans).
    fn under_each_vectors(check: impl Fn()) {
        let kinds = match vectors() {
            Vectors::Avx512 => vec![Vectors::Avx512, Vectors::Avx2, Vectors::Portable],
            Vectors::Avx2 => vec![Vectors::Avx2, Vectors::Portable],
            Vectors::Neon => vec![Vectors::Neon, Vectors::Portable],
            Vectors::Portable => vec![Vectors::Portable],
        };
        for kind in kinds {
            FORCED.with(|f| f.set(Some(kind)));
            check();
        }
        FORCED.with(|f| f.set(None));
    }

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
        under_each_vectors(|| {
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
        });
    }

    /// Runs several probes over `text` block by block and checks the census and the
    /// hits (the positions of byte `i1` of every occurrence, once each, ascending).
    fn probes_agree(text: &[u8], probes: &[Probe<'_>]) {
        if !can_probe() {
            return;
        }
        let mut hits = Vec::new();
        for at in (0..text.len()).step_by(32 * SLICE) {
            let len = (text.len() - at).min(32 * SLICE);
            let found = block_census_probes(text, at, len, probes, &mut |s| hits.push(s));
            let (n, m, _) = found.unwrap();
            assert_eq!((n, m), block_census(&text[at..at + len]), "{at}");
        }
        let mut expected: Vec<usize> = (0..text.len())
            .flat_map(|s| {
                probes.iter().filter_map(move |p| {
                    let w = text.get(s..s + p.needle.len())?;
                    let fold = p.fold.unwrap_or(&[]);
                    w.iter()
                        .enumerate()
                        .all(|(i, &b)| b | fold.get(i).copied().unwrap_or(0) == p.needle[i])
                        .then_some(s + p.i1)
                })
            })
            .collect();
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(hits, expected);
    }

    #[test]
    fn several_probes_find_every_occurrence_in_order() {
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for len in [
            0usize,
            5,
            127,
            128,
            300,
            4095,
            4096,
            4097,
            9000,
            3 * 4096 + 77,
        ] {
            let mut text: Vec<u8> = (0..len)
                .map(|i| match i % 47 {
                    46 => b'\n',
                    7 => b'R',
                    _ => b"abwrnoe"[i * 7 % 7],
                })
                .collect();
            let words: [&[u8]; 5] = [b"error", b"WARN", b"ErRoR", b"warn", b"rror"];
            for (k, at) in [0, 120, 125, 4090, 4094, 8190, 8193, 8196, len / 2]
                .into_iter()
                .enumerate()
            {
                let w = words[k % words.len()];
                if at + w.len() <= len {
                    text[at..at + w.len()].copy_from_slice(w);
                }
            }
            if len >= 5 {
                text[len - 5..].copy_from_slice(b"error");
            }
            texts.push(text);
        }
        texts.push("é\nerror WARN ".repeat(2000).into_bytes());
        let fold5 = [0x20u8; 5];
        let fold4 = [0x20u8; 4];
        under_each_vectors(|| {
            for text in &texts {
                for (i1, i2, j1, j2) in [(0, 4, 3, 0), (4, 1, 1, 2), (2, 3, 0, 3)] {
                    for gate in [false, true] {
                        for folded in [false, true] {
                            let e = Probe {
                                needle: b"error",
                                fold: folded.then_some(&fold5[..]),
                                i1,
                                i2,
                                gate,
                            };
                            let w = Probe {
                                needle: b"warn",
                                fold: folded.then_some(&fold4[..]),
                                i1: j1,
                                i2: j2,
                                gate,
                            };
                            let r = Probe {
                                needle: b"rr",
                                fold: None,
                                i1: 1,
                                i2: 0,
                                gate,
                            };
                            let n = Probe {
                                needle: b"n\n",
                                fold: None,
                                i1: 0,
                                i2: 1,
                                gate,
                            };
                            probes_agree(text, &[e, w]);
                            probes_agree(text, &[w, e, r]);
                            probes_agree(text, &[r, e, n, w]);
                        }
                    }
                }
            }
        });
    }

    #[test]
    fn counts_newlines_and_spots_non_ascii_slices() {
        under_each_vectors(counts_newlines_and_spots_non_ascii);
    }

    fn counts_newlines_and_spots_non_ascii() {
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

    /// Byte sequences the UTF-8 check must judge as `std` does: valid characters of
    /// each length and at each range's edges, and every kind of error (stray and
    /// extra continuations, overlong forms, surrogates, past U+10FFFF, cut short).
    const UTF8_PIECES: &[&[u8]] = &[
        b"\xC2\x80",
        b"\xDF\xBF",
        b"\xE0\xA0\x80",
        b"\xED\x9F\xBF",
        b"\xEE\x80\x80",
        b"\xEF\xBF\xBF",
        b"\xF0\x90\x80\x80",
        b"\xF4\x8F\xBF\xBF",
        b"\xE2\x80\x99",
        b"\x80",
        b"\xBF",
        b"\xC0\x80",
        b"\xC1\xBF",
        b"\xC2",
        b"\xC2\x80\x80",
        b"\xE0\x80\x80",
        b"\xE0\x9F\xBF",
        b"\xE0\xA0",
        b"\xED\xA0\x80",
        b"\xED\xBF\xBF",
        b"\xF0\x80\x80\x80",
        b"\xF0\x8F\xBF\xBF",
        b"\xF0\x9F\x98",
        b"\xF4\x90\x80\x80",
        b"\xF5\x80\x80\x80",
        b"\xFF",
        b"\xFE",
    ];

    /// The index's UTF-8 check (a non-ASCII slice at a time with vectors, stretches
    /// of them otherwise) accepts what `std::str::from_utf8` accepts and reports the
    /// same first bad byte, with pieces set across slice and block edges and at the end.
    #[test]
    fn the_utf8_check_of_each_vectors_agrees_with_std() {
        let mut rng = crate::test_rng::Rng::new(0x5DEE_CE66_D1CE_4E5B);
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for round in 0..1500 {
            let len = [SLICE * 3, 32 * SLICE, 32 * SLICE * 2 + 77][round % 3] + rng.below(300);
            let mut text = Vec::with_capacity(len + 8);
            while text.len() < len {
                if rng.below(6) == 0 {
                    let piece = UTF8_PIECES[rng.below(9)];
                    text.extend_from_slice(piece);
                } else {
                    text.extend(std::iter::repeat_n(
                        b'a' + rng.below(26) as u8,
                        1 + rng.below(90),
                    ));
                }
            }
            // Valid up to here; then a few pieces of any kind near slice edges.
            for _ in 0..rng.below(3) {
                let piece = UTF8_PIECES[rng.below(UTF8_PIECES.len())];
                let edge = SLICE * (1 + rng.below(len / SLICE));
                let at = (edge + rng.below(7))
                    .saturating_sub(3 + piece.len())
                    .min(len - piece.len());
                text.splice(at..at + piece.len(), piece.iter().copied());
            }
            if rng.below(4) == 0 {
                // Cut at the end, maybe inside a character.
                let piece = UTF8_PIECES[rng.below(UTF8_PIECES.len())];
                text.extend_from_slice(&piece[..1 + rng.below(piece.len())]);
            }
            texts.push(text);
        }
        // Each piece ending just before, at and just after a slice edge and block
        // edges, then ASCII: a character cut short by an ASCII slice, in the block or
        // the next one.
        for edge in [SLICE, 32 * SLICE, 64 * SLICE] {
            for piece in UTF8_PIECES {
                for end in edge - 2..=edge + 1 {
                    let mut text = vec![b'a'; end - piece.len()];
                    text.extend_from_slice(piece);
                    text.extend(std::iter::repeat_n(b'b', 300));
                    texts.push(text);
                }
            }
        }
        // Texts of whole slices that end with each piece, or part of it.
        for len in [SLICE, 32 * SLICE, 33 * SLICE] {
            for piece in UTF8_PIECES {
                for cut in 1..=piece.len() {
                    let mut text = vec![b'a'; len - cut];
                    text.extend_from_slice(&piece[..cut]);
                    texts.push(text);
                }
            }
        }
        let (errors, kinds) = (Cell::new(0usize), Cell::new(0usize));
        under_each_vectors(|| {
            kinds.set(kinds.get() + 1);
            for (k, text) in texts.iter().enumerate() {
                let std_says = std::str::from_utf8(text)
                    .map(|_| ())
                    .map_err(|e| e.valid_up_to());
                errors.set(errors.get() + usize::from(std_says.is_err()));
                let ours =
                    crate::grep::TextIndex::new(&text[..])
                        .map(|_| ())
                        .map_err(|e| match e {
                            crate::grep::GrepError::InvalidUtf8 { valid_up_to } => valid_up_to,
                            other => panic!("{other:?}"),
                        });
                assert_eq!(ours, std_says, "text {k} under {:?}", vectors());
            }
        });
        // Both kinds are well represented.
        let runs = errors.get() / kinds.get();
        assert!(
            runs > texts.len() / 4 && runs < texts.len() * 3 / 4,
            "{runs}"
        );
    }

    /// Every loop gives the portable loop's census on blocks of every length, with
    /// newlines, bytes outside ASCII and `0x80`/`0xff` bytes (the top bit) at
    /// pseudo-random places, densely and sparsely.
    #[test]
    fn every_loop_agrees_with_the_portable_one() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut blocks = Vec::new();
        for len in [1usize, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096] {
            for density in [2u64, 16, 300, 5000] {
                let block: Vec<u8> = (0..len)
                    .map(|_| match next() % density {
                        0 => b'\n',
                        1 => [0x80, 0xC3, 0xA9, 0xFF][(next() % 4) as usize],
                        _ => b'a' + (next() % 26) as u8,
                    })
                    .collect();
                blocks.push(block);
            }
        }
        under_each_vectors(|| {
            for block in &blocks {
                assert_eq!(
                    block_census(block),
                    block_census_portable(block),
                    "{block:?}"
                );
            }
        });
    }
}
