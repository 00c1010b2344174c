//! A text held once, with the offsets of its line separators.

use super::census::{block_census, checks_utf8_slices, utf8_slices, SLICE};
use super::GrepError;

/// Bytes per checkpoint of the line index (32 census slices).
const BLOCK: usize = 32 * SLICE;
/// Blocks read between two calls of a search that follows the read (64 KiB).
const GROUP: usize = 16;

/// A text and its line index.
///
/// Lines are what Python's `str.split("\n")` yields: `"\r"` stays on its line, a
/// trailing `"\n"` gives a last empty line, and the empty text is one empty line.
///
/// The index keeps, for every 4 KiB block, how many `"\n"` come before it: built in
/// one vectorised counting pass (no per-line work), it finds any line's start or any
/// offset's line by a binary search plus a scan of at most one block, and sequential
/// walks (search, listing) just step from one `"\n"` to the next.
///
/// `S` owns (or borrows) the bytes: UTF-8, or WTF-8 for text that came from a
/// Python `str` holding lone surrogates (see [`TextIndex::from_wtf8`]).
#[derive(Debug)]
pub struct TextIndex<S> {
    data: S,
    /// Same length as `data`, every lone surrogate replaced by U+FFFD (both are
    /// 3 bytes): the regex engines only accept UTF-8. `None` when `data` is UTF-8.
    replaced: Option<Vec<u8>>,
    /// `block_newlines[b]` = number of `"\n"` in `data[..b * BLOCK]`.
    block_newlines: Vec<usize>,
    newlines: usize,
    is_ascii: bool,
}

/// Number of `"\n"` bytes in `s`.
pub(crate) fn count_newlines(s: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', s).count()
}

/// The 0-based line that holds byte offset `pos` of `data`, given the checkpoints
/// (`checkpoints[b]` = newlines before block `b`) of the blocks up to `pos`.
fn line_at(data: &[u8], checkpoints: &[usize], pos: usize) -> usize {
    if checkpoints.is_empty() {
        return 0;
    }
    let block = (pos / BLOCK).min(checkpoints.len() - 1);
    checkpoints[block] + count_newlines(&data[block * BLOCK..pos])
}

/// Bytes per checkpoint block.
pub(crate) const BLOCK_BYTES: usize = BLOCK;

/// Offset within its checkpoint block of byte `pos`.
pub(crate) fn offset_in_block(pos: usize) -> usize {
    pos % BLOCK
}

/// Work that rides along the indexing read (a search, on bytes still in cache).
pub(crate) trait Follower {
    /// Newlines and non-ASCII slice mask (see [`block_census`]) of the block
    /// `data[at..at + len]`.
    fn read_block(&mut self, data: &[u8], at: usize, len: usize) -> (usize, u32) {
        block_census(&data[at..at + len])
    }

    /// The read reached `upto` (after every [`GROUP`] blocks, and at the end).
    fn advance(&mut self, data: &[u8], upto: usize) {
        let _ = (data, upto);
    }
}

/// Nothing rides along.
impl Follower for () {}

/// What one read of the text finds: the per-block checkpoints, the newline total
/// and whether the text is all ASCII.
pub(crate) struct Census {
    pub(crate) blocks: Vec<usize>,
    pub(crate) newlines: usize,
    pub(crate) is_ascii: bool,
}

/// Reads `data` once, block by block; when `validate`, checks it is UTF-8 on the way.
///
/// Only the non-ASCII slices need the UTF-8 check. On x86_64 each is checked with
/// vectors right after its block is read, with the three bytes before it (see
/// [`utf8_slices`]): on English prose with a curly quote every few hundred bytes
/// this took the check from a quarter of a rare word's search to a sixth.
/// Elsewhere the stretches of non-ASCII slices are checked with `simdutf8`, each
/// alone: it starts after an ASCII slice (or at the start) and ends before one (or
/// at the end), so on character boundaries whenever the text is valid. A stretch
/// runs from a non-ASCII slice to the last one that follows it with at most
/// [`GAP_SLICES`] ASCII slices between each two (across blocks too), and is checked
/// once it ends, while it is still in cache.
///
/// `follower` reads each block and is told after every [`GROUP`] blocks and at the
/// end how far the read went: a search can follow while the bytes are in cache.
pub(crate) fn census(
    data: &[u8],
    validate: bool,
    follower: &mut impl Follower,
) -> Result<Census, GrepError> {
    let mut blocks = crate::alloc::vec_with_capacity(data.len() / BLOCK + 1);
    let mut newlines = 0;
    let mut is_ascii = true;
    let mut utf8 = if !validate {
        Utf8Check::Done
    } else if checks_utf8_slices() {
        Utf8Check::Slices { pending: false }
    } else {
        Utf8Check::Stretches { open: None }
    };
    for (b, chunk) in data.chunks(BLOCK).enumerate() {
        if b % GROUP == 0 && b > 0 {
            follower.advance(data, b * BLOCK);
        }
        crate::alloc::push(&mut blocks, newlines);
        let (n, mask) = follower.read_block(data, b * BLOCK, chunk.len());
        newlines += n;
        is_ascii &= mask == 0;
        match &mut utf8 {
            Utf8Check::Slices { pending } => {
                if !utf8_slices(data, b * BLOCK, chunk.len(), mask, pending) {
                    validate_utf8(data, 0)?;
                    // Never reached while the check is exact: the whole text is UTF-8.
                    utf8 = Utf8Check::Done;
                }
            }
            Utf8Check::Stretches { open } => {
                check_stretches(data, b * BLOCK, chunk.len(), mask, open)?;
            }
            Utf8Check::Done => {}
        }
    }
    match utf8 {
        // The text ends inside a character.
        Utf8Check::Slices { pending: true } => validate_utf8(data, 0)?,
        Utf8Check::Stretches {
            open: Some((start, end)),
        } => validate_utf8(&data[start..end], start)?,
        _ => {}
    }
    follower.advance(data, data.len());
    Ok(Census {
        blocks,
        newlines,
        is_ascii,
    })
}

/// How [`census`] checks UTF-8, and what it carries from block to block.
enum Utf8Check {
    /// Each non-ASCII slice with vectors ([`utf8_slices`]); `pending`: the last
    /// block ended inside a character.
    Slices { pending: bool },
    /// Stretches of non-ASCII slices ([`check_stretches`]); `open`: one not checked yet.
    Stretches { open: Option<(usize, usize)> },
    /// Not asked for, or already known.
    Done,
}

/// Non-ASCII slices at most this many ASCII slices apart are checked as one stretch:
/// a check's set-up costs about as much as checking a few hundred bytes.
const GAP_SLICES: usize = 4;

/// Checks the stretches of non-ASCII slices of the block `data[at..at + len]` (its
/// `mask`, see [`block_census`]) as [`census`] says. `open` is a stretch not checked
/// yet (`start..end`), left open when it reaches the block's end.
fn check_stretches(
    data: &[u8],
    at: usize,
    len: usize,
    mask: u32,
    open: &mut Option<(usize, usize)>,
) -> Result<(), GrepError> {
    let mut m = mask;
    while m != 0 {
        let s = at + m.trailing_zeros() as usize * SLICE;
        m &= m - 1;
        let e = (s + SLICE).min(at + len);
        match open {
            Some((_, end)) if s - *end <= GAP_SLICES * SLICE => *end = e,
            _ => {
                // The slices since the open stretch's end are ASCII: it is whole.
                if let Some((start, end)) = open.replace((s, e)) {
                    validate_utf8(&data[start..end], start)?;
                }
            }
        }
    }
    if let Some((start, end)) = *open {
        if end < at + len {
            // An ASCII slice follows it in this block: check it while it is in cache.
            validate_utf8(&data[start..end], start)?;
            *open = None;
        }
    }
    Ok(())
}

/// Checks `data` (which starts at byte `offset` of the text) is UTF-8.
fn validate_utf8(data: &[u8], offset: usize) -> Result<(), GrepError> {
    if simdutf8::basic::from_utf8(data).is_ok() {
        return Ok(());
    }
    match std::str::from_utf8(data) {
        Ok(_) => Ok(()),
        Err(e) => Err(GrepError::InvalidUtf8 {
            valid_up_to: offset + e.valid_up_to(),
        }),
    }
}

/// Replaces each WTF-8 encoded surrogate (`ED A0..BF 80..BF`) by U+FFFD.
fn replace_surrogates(data: &[u8]) -> Vec<u8> {
    let mut out = crate::alloc::to_vec(data);
    let mut i = 0;
    while let Some(off) = memchr::memchr(0xED, &out[i..]) {
        let p = i + off;
        if p + 2 < out.len() && (0xA0..=0xBF).contains(&out[p + 1]) {
            out[p..p + 3].copy_from_slice("\u{FFFD}".as_bytes());
            i = p + 3;
        } else {
            i = p + 1;
        }
    }
    out
}

impl<S: AsRef<[u8]>> TextIndex<S> {
    /// Indexes UTF-8 text, rejecting anything else.
    pub fn new(data: S) -> Result<Self, GrepError> {
        // A long text is read in parts on two threads (see `parts`).
        let cuts = super::parts::plan(data.as_ref());
        if cuts.is_empty() {
            return Self::new_following(data, &mut ());
        }
        let (found, _) = super::parts::read_in_parts(data.as_ref(), &cuts, &())?;
        Ok(Self::from_census(data, found))
    }

    /// Indexes UTF-8 text like [`Self::new`] with `follower` reading along (see
    /// [`Follower`]). The bytes are not yet known to be UTF-8 when it sees them.
    pub(crate) fn new_following(data: S, follower: &mut impl Follower) -> Result<Self, GrepError> {
        let found = census(data.as_ref(), true, follower)?;
        Ok(Self::from_census(data, found))
    }

    /// The index of UTF-8 `data` from its census (read whole, or in parts joined).
    pub(crate) fn from_census(data: S, found: Census) -> Self {
        TextIndex {
            data,
            replaced: None,
            block_newlines: found.blocks,
            newlines: found.newlines,
            is_ascii: found.is_ascii,
        }
    }

    /// Indexes WTF-8 text: UTF-8 in which lone surrogates are encoded as their own
    /// 3-byte sequences (what Python's `"surrogatepass"` error handler writes).
    pub fn from_wtf8(data: S) -> Result<Self, GrepError> {
        if simdutf8::basic::from_utf8(data.as_ref()).is_ok() {
            return Self::new(data);
        }
        let replaced = replace_surrogates(data.as_ref());
        validate_utf8(&replaced, 0)?;
        let found = census(data.as_ref(), false, &mut ())?;
        Ok(TextIndex {
            data,
            replaced: Some(replaced),
            block_newlines: found.blocks,
            newlines: found.newlines,
            is_ascii: false,
        })
    }

    /// The stored bytes, exactly as given.
    pub fn bytes(&self) -> &[u8] {
        self.data.as_ref()
    }

    /// The bytes the regex engines see (valid UTF-8, offsets equal to [`Self::bytes`]).
    pub fn match_bytes(&self) -> &[u8] {
        match &self.replaced {
            Some(r) => r,
            None => self.data.as_ref(),
        }
    }

    /// Whether the text held lone surrogates.
    pub fn has_surrogates(&self) -> bool {
        self.replaced.is_some()
    }

    /// Whether every byte is ASCII.
    pub fn is_ascii(&self) -> bool {
        self.is_ascii
    }

    /// Length in bytes of the longest line (an upper bound on its length in code
    /// points), found in one pass over the text.
    pub fn longest_line_bytes(&self) -> usize {
        let bytes = self.data.as_ref();
        let mut longest = 0;
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', bytes) {
            longest = longest.max(nl - start);
            start = nl + 1;
        }
        longest.max(bytes.len() - start)
    }

    /// Whether the text is empty (zero bytes).
    pub fn is_empty(&self) -> bool {
        self.data.as_ref().is_empty()
    }

    /// Number of lines, as `len(text.split("\n"))`.
    pub fn line_count(&self) -> usize {
        self.newlines + 1
    }

    /// Byte offset where line `i` (0-based, `i < line_count()`) starts.
    pub fn line_start(&self, i: usize) -> usize {
        if i == 0 {
            return 0;
        }
        let n = i - 1; // the n-th newline (0-based) ends line i - 1
        let block = self.block_newlines.partition_point(|&c| c <= n) - 1;
        let from = block * BLOCK;
        let skip = n - self.block_newlines[block];
        let data = self.data.as_ref();
        memchr::memchr_iter(b'\n', &data[from..])
            .nth(skip)
            .map_or(data.len(), |off| from + off + 1)
    }

    /// Byte offset where the line that starts (or continues) at `pos` ends.
    pub fn line_end_from(&self, pos: usize) -> usize {
        let data = self.data.as_ref();
        memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |off| pos + off)
    }

    /// Byte span `[start, end)` of line `i` (0-based), without its `"\n"`.
    pub fn line_span(&self, i: usize) -> (usize, usize) {
        let start = self.line_start(i);
        (start, self.line_end_from(start))
    }

    /// The bytes of line `i` (0-based), without its `"\n"`.
    pub fn line(&self, i: usize) -> &[u8] {
        let (s, e) = self.line_span(i);
        &self.data.as_ref()[s..e]
    }

    /// The 0-based line that holds byte offset `pos` (a `"\n"` belongs to the line
    /// it ends).
    pub fn line_of(&self, pos: usize) -> usize {
        line_at(self.data.as_ref(), &self.block_newlines, pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_follow_str_split() {
        let idx = TextIndex::new("a\r\nb\n\nc\n").unwrap();
        assert_eq!(idx.line_count(), 5);
        assert_eq!(idx.line(0), b"a\r");
        assert_eq!(idx.line(1), b"b");
        assert_eq!(idx.line(2), b"");
        assert_eq!(idx.line(3), b"c");
        assert_eq!(idx.line(4), b"");
        assert_eq!(idx.line_of(0), 0);
        assert_eq!(idx.line_of(2), 0);
        assert_eq!(idx.line_of(3), 1);
        let empty = TextIndex::new("").unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.line_count(), 1);
    }

    #[test]
    fn checkpoints_agree_with_a_plain_split_across_blocks() {
        for (len, every) in [
            (0usize, 3usize),
            (1, 1),
            (4095, 7),
            (4096, 4096),
            (4097, 1),
            (20_000, 13),
            (20_000, 5000),
        ] {
            let data: Vec<u8> = (0..len)
                .map(|i| if i % every == every - 1 { b'\n' } else { b'a' })
                .collect();
            let idx = TextIndex::new(data.clone()).unwrap();
            let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
            assert_eq!(idx.line_count(), lines.len());
            let mut pos = 0;
            for (i, line) in lines.iter().enumerate() {
                assert_eq!(idx.line(i), *line);
                assert_eq!(idx.line_start(i), pos);
                for p in pos..=pos + line.len() {
                    if p < data.len() || i + 1 == lines.len() {
                        assert_eq!(idx.line_of(p), i);
                    }
                }
                pos += line.len() + 1;
            }
        }
    }

    #[test]
    fn rejects_invalid_utf8() {
        let err = TextIndex::new(&b"ab\xffc"[..]).unwrap_err();
        assert_eq!(err, GrepError::InvalidUtf8 { valid_up_to: 2 });
        // Checked per run of non-ASCII blocks: errors are found, with whole-text
        // offsets, in any run, and characters across block edges stay valid.
        let mut data = vec![b'a'; 3 * BLOCK];
        data[BLOCK - 1..BLOCK + 1].copy_from_slice("\u{e9}".as_bytes());
        assert!(TextIndex::new(data.clone()).is_ok());
        data[2 * BLOCK + 5] = 0xC3;
        let err = TextIndex::new(data.clone()).unwrap_err();
        assert_eq!(
            err,
            GrepError::InvalidUtf8 {
                valid_up_to: 2 * BLOCK + 5
            }
        );
        data[BLOCK] = b'a';
        let err = TextIndex::new(data).unwrap_err();
        assert_eq!(
            err,
            GrepError::InvalidUtf8 {
                valid_up_to: BLOCK - 1
            }
        );
    }

    /// Texts of ASCII runs of every width around the slice and stretch sizes, with
    /// characters of 2-4 bytes across slice and block edges, some bytes then spoiled:
    /// the index accepts exactly what `std::str::from_utf8` accepts, and reports its
    /// first bad byte.
    #[test]
    fn the_utf8_check_agrees_with_std() {
        let mut rng = crate::test_rng::Rng::new(0x2545_F491_4F6C_DD1D);
        let chars = ["\u{e9}", "\u{2019}", "\u{1F600}", "\u{4e2d}"];
        for round in 0..400 {
            let mut data = Vec::new();
            while data.len() < 3 * BLOCK {
                let ascii = match rng.below(4) {
                    0 => rng.below(8),
                    1 => rng.below(8 * SLICE),
                    2 => SLICE * (1 + rng.below(8)) - rng.below(4),
                    _ => rng.below(2 * BLOCK),
                };
                data.extend(std::iter::repeat_n(b'x', ascii));
                data.extend(chars[rng.below(4)].as_bytes());
            }
            for _ in 0..round % 3 {
                let at = rng.below(data.len());
                data[at] = [0xFF, 0x80, 0xC3, 0xED, 0xF0, b'x'][rng.below(6)];
            }
            let std_says = std::str::from_utf8(&data)
                .map(|_| ())
                .map_err(|e| e.valid_up_to());
            let ours = TextIndex::new(&data[..]).map(|_| ()).map_err(|e| match e {
                GrepError::InvalidUtf8 { valid_up_to } => valid_up_to,
                other => panic!("{other:?}"),
            });
            assert_eq!(ours, std_says, "round {round}");
        }
    }

    #[test]
    fn surrogates_are_replaced_for_matching_only() {
        // "a" + U+D800 (surrogatepass) + "b"
        let data = b"a\xed\xa0\x80b".to_vec();
        let idx = TextIndex::from_wtf8(data.clone()).unwrap();
        assert!(idx.has_surrogates());
        assert_eq!(idx.bytes(), &data[..]);
        assert_eq!(idx.match_bytes(), "a\u{FFFD}b".as_bytes());
    }
}
