//! A fresh text's indexing read done in parts, by the calling thread and the kept
//! helper together (see [`crate::helper`]), each part with its own search riding
//! along.
//!
//! A part starts on a checkpoint-block boundary, so the parts' checkpoints join by
//! adding the newlines before each part, and on a character boundary (the byte there
//! is not a UTF-8 continuation byte), so each part's UTF-8 check stands alone and the
//! first part that fails gives the text's first bad byte. A part's search sees the
//! part as a whole text; only its hits on lines wholly inside it are kept. The line
//! across each cut (its "seam", at most [`SEAM_MAX_BYTES`]) is searched on its own
//! afterwards, in the whole text: matches never hold a `"\n"`, so every match lies on
//! one line, and that line is inside one part or is a seam.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::index::{census, Census, Follower, BLOCK_BYTES};
use super::GrepError;

/// Texts from this size are read in parts: below it the parts' set-up and the
/// helper's wake-up take what the second core saves.
const SPLIT_MIN_BYTES: usize = 2 << 20;
/// About this many bytes per part: parts are claimed one at a time, so a helper
/// that starts late (or never) still leaves the caller no more than one part to wait for.
const PART_BYTES: usize = 1 << 20;
/// The longest line a cut may cross.
const SEAM_MAX_BYTES: usize = 64 << 10;
/// How many blocks a cut may move forward to find a character boundary with a short
/// enough line across it.
const CUT_TRIES: usize = 64;

/// The start of a part after the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The part's first byte: a multiple of the block size, not a continuation byte.
    pub at: usize,
    /// The line across the cut: its first byte, and its `"\n"` (before the next cut).
    pub seam_start: usize,
    pub seam_end: usize,
}

/// What the parts' searches share, and how one part's search is made.
pub(crate) trait PartSearch: Sync {
    type Scan: Follower;
    /// A search of one part (offsets from the part's start) that leaves out the
    /// lines before `pos` (a line start).
    fn scan_from(&self, pos: usize) -> Self::Scan;
    /// One offset in each matching line the search found, ascending.
    fn hits(scan: Self::Scan) -> Vec<usize>;
    /// An offset in the line `data[start..end]` where a match is, if one is.
    fn line_hit(&self, data: &[u8], start: usize, end: usize) -> Option<usize>;
}

/// No search: the read only indexes.
impl PartSearch for () {
    type Scan = ();
    fn scan_from(&self, _pos: usize) {}
    fn hits(_scan: ()) -> Vec<usize> {
        Vec::new()
    }
    fn line_hit(&self, _data: &[u8], _start: usize, _end: usize) -> Option<usize> {
        None
    }
}

/// The cuts for reading `data` in parts, none when it is too short, when no core is
/// spare, or when no cut fits (very long lines, say).
pub(crate) fn plan(data: &[u8]) -> Vec<Cut> {
    #[cfg(test)]
    if let Some((part_bytes, seam_max)) = TEST_LAYOUT.with(std::cell::Cell::get) {
        return cuts(data, part_bytes, seam_max);
    }
    if data.len() < SPLIT_MIN_BYTES || !crate::helper::spare_core() {
        return Vec::new();
    }
    cuts(data, PART_BYTES, SEAM_MAX_BYTES)
}

#[cfg(test)]
thread_local! {
    /// Set by a test: [`plan`] cuts any text into parts of this size, with seams of
    /// at most this many bytes.
    pub(crate) static TEST_LAYOUT: std::cell::Cell<Option<(usize, usize)>> =
        const { std::cell::Cell::new(None) };
}

/// Cuts for parts of about `part_bytes`, each line across a cut at most `seam_max`
/// bytes long (a cut that finds none within [`CUT_TRIES`] blocks is left out).
fn cuts(data: &[u8], part_bytes: usize, seam_max: usize) -> Vec<Cut> {
    let n = data.len();
    let parts = n / part_bytes.max(BLOCK_BYTES);
    let mut cuts: Vec<Cut> = Vec::new();
    for i in 1..parts {
        let target = n / parts * i / BLOCK_BYTES * BLOCK_BYTES;
        let (prev_at, floor) = cuts.last().map_or((0, 0), |c| (c.at, c.seam_end + 1));
        let found = (0..CUT_TRIES)
            .map(|k| target + k * BLOCK_BYTES)
            .take_while(|&at| at < n)
            .filter(|&at| at > prev_at.max(floor) && data[at] & 0xC0 != 0x80)
            .find_map(|at| {
                let lo = floor.max(at.saturating_sub(seam_max));
                let seam_start = lo + memchr::memrchr(b'\n', &data[lo..at])? + 1;
                let hi = n.min(seam_start + seam_max);
                let seam_end = at + memchr::memchr(b'\n', data.get(at..hi)?)?;
                Some(Cut {
                    at,
                    seam_start,
                    seam_end,
                })
            });
        cuts.extend(found);
    }
    cuts
}

/// One part's read: its census and its search's hits (offsets in the whole text).
type PartRead = Result<(Census, Vec<usize>), GrepError>;

/// Reads `data` in the parts `cuts` make (see the module's comment): the census of
/// the whole text and one offset in each matching line, ascending. On text that is
/// not UTF-8, the error of the first bad byte.
pub(crate) fn read_in_parts<P: PartSearch>(
    data: &[u8],
    cuts: &[Cut],
    search: &P,
) -> Result<(Census, Vec<usize>), GrepError> {
    let n = data.len();
    // Part `i`: its bytes, the first line start it searches, the end of its own lines.
    let bounds = |i: usize| {
        let start = if i == 0 { 0 } else { cuts[i - 1].at };
        let end = cuts.get(i).map_or(n, |c| c.at);
        let pos = if i == 0 {
            0
        } else {
            cuts[i - 1].seam_end + 1 - start
        };
        let keep = cuts.get(i).map_or(usize::MAX, |c| c.seam_start - start);
        (start, end, pos, keep)
    };
    let slots: Vec<OnceLock<PartRead>> = (0..=cuts.len()).map(|_| OnceLock::new()).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = slots.get(i) else { break };
        let (start, end, pos, keep) = bounds(i);
        let mut scan = search.scan_from(pos);
        let read = census(&data[start..end], true, &mut scan).map(|found| {
            let mut hits = P::hits(scan);
            hits.retain(|&h| h < keep);
            hits.iter_mut().for_each(|h| *h += start);
            (found, hits)
        });
        let _ = slot.set(read.map_err(|e| shifted(e, start)));
    };
    crate::helper::share(&work);

    let mut blocks = crate::alloc::vec_with_capacity(n / BLOCK_BYTES + 1);
    let (mut newlines, mut is_ascii) = (0, true);
    let mut hits = Vec::new();
    for (i, slot) in slots.into_iter().enumerate() {
        let (found, part_hits) = slot.into_inner().expect("every part is read")?;
        if i > 0 {
            let seam = cuts[i - 1];
            let hit = search.line_hit(data, seam.seam_start, seam.seam_end);
            crate::alloc::extend_iter(&mut hits, hit);
        }
        crate::alloc::extend_iter(&mut blocks, found.blocks.iter().map(|b| b + newlines));
        crate::alloc::extend(&mut hits, &part_hits);
        newlines += found.newlines;
        is_ascii &= found.is_ascii;
    }
    let census = Census {
        blocks,
        newlines,
        is_ascii,
    };
    Ok((census, hits))
}

/// A part's error with its offsets made the whole text's.
fn shifted(e: GrepError, start: usize) -> GrepError {
    match e {
        GrepError::InvalidUtf8 { valid_up_to } => GrepError::InvalidUtf8 {
            valid_up_to: valid_up_to + start,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grep::TextIndex;
    use crate::test_rng::Rng;

    /// Text of short lines, a long one now and then, some characters outside ASCII.
    fn text(rng: &mut Rng, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 64);
        while out.len() < len {
            match rng.below(40) {
                0 => out.extend(std::iter::repeat_n(b'x', rng.below(3 * BLOCK_BYTES))),
                1..=4 => out.extend("é’中😀".as_bytes()),
                5..=9 => out.push(b'\n'),
                _ => out.extend(b"word "),
            }
        }
        out.truncate(len);
        while std::str::from_utf8(&out).is_err() {
            out.pop();
        }
        out
    }

    #[test]
    fn cuts_sit_on_block_and_character_boundaries_with_short_seams() {
        let mut rng = Rng::new(7);
        for _ in 0..50 {
            let len = 40 * BLOCK_BYTES + rng.below(5000);
            let data = text(&mut rng, len);
            let cuts = cuts(&data, 4 * BLOCK_BYTES, 2 * BLOCK_BYTES);
            assert!(!cuts.is_empty());
            let mut prev_end = None;
            for c in &cuts {
                assert_eq!(c.at % BLOCK_BYTES, 0);
                assert_ne!(data[c.at] & 0xC0, 0x80);
                assert!(c.seam_start <= c.at && c.at <= c.seam_end);
                assert!(c.seam_end - c.seam_start <= 2 * BLOCK_BYTES);
                assert_eq!(data[c.seam_end], b'\n');
                assert!(c.seam_start == 0 || data[c.seam_start - 1] == b'\n');
                assert!(!data[c.seam_start..c.seam_end].contains(&b'\n'));
                assert!(prev_end.is_none_or(|e| c.seam_start > e));
                prev_end = Some(c.seam_end);
            }
        }
    }

    #[test]
    fn no_cut_where_every_line_is_too_long() {
        let data = vec![b'a'; 64 * BLOCK_BYTES];
        assert!(cuts(&data, 4 * BLOCK_BYTES, BLOCK_BYTES).is_empty());
    }

    #[test]
    fn the_parts_index_as_the_whole_read_does() {
        let mut rng = Rng::new(11);
        for round in 0..60 {
            let len = 20 * BLOCK_BYTES + rng.below(9000);
            let data = text(&mut rng, len);
            let cuts = cuts(&data, 2 * BLOCK_BYTES + round * 64, BLOCK_BYTES);
            let whole = TextIndex::new(&data[..]).unwrap();
            let (found, hits) = read_in_parts(&data, &cuts, &()).unwrap();
            assert!(hits.is_empty());
            let parts = TextIndex::from_census(&data[..], found);
            assert_eq!(parts.line_count(), whole.line_count());
            assert_eq!(parts.is_ascii(), whole.is_ascii());
            for p in (0..data.len()).step_by(97) {
                assert_eq!(parts.line_of(p), whole.line_of(p), "offset {p}");
            }
        }
    }

    #[test]
    fn the_first_bad_byte_is_the_whole_texts() {
        let mut rng = Rng::new(5);
        for _ in 0..60 {
            let mut data = text(&mut rng, 24 * BLOCK_BYTES);
            let cuts = cuts(&data, 3 * BLOCK_BYTES, BLOCK_BYTES);
            // Bad bytes that leave the cuts where they are (never at a cut itself).
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(data.len());
                if cuts.iter().all(|c| c.at != at) {
                    data[at] = [0xFF, 0x80, 0xC3, 0xED][rng.below(4)];
                }
            }
            let whole = TextIndex::new(&data[..]).err();
            let parts = read_in_parts(&data, &cuts, &()).err();
            assert_eq!(parts, whole);
        }
    }
}
