//! A search of text not indexed yet, done in the same read as the indexing, and the
//! numbering of matching lines for any search that a whole-buffer engine answers.
//!
//! Indexing reads the whole text (newline counts, the UTF-8 check) and so does the
//! search; neither needs the other until the matching lines are numbered. The search
//! rides along the indexing read: a literal inside it (see [`Probe`]; also a pattern
//! that is a literal up to ASCII case, such as `(?i)python`, or an alternation of a
//! few such literals, such as `error|warn(ing)?`, and the matches made of ASCII of
//! `(?i)unicode`, whose `i` also matches `İ` and `ı`), anything else
//! 64 KiB behind it, on bytes still in cache. (A second thread for the search was
//! tried: on a busy two-core machine it waited for a core more often than it
//! overlapped.) Windows end on a `"\n"` (or the end of the text): matches never hold
//! a `"\n"`, and anchors and word boundaries see the same neighbours in a window as
//! in the whole text, so each window gives the lines a whole-text search would.
//! Only the matching lines the body's budget can show are numbered.

use super::census::{block_census, block_census_probes, can_probe, Probe, SLICE};
use super::index::{count_newlines, offset_in_block, Follower, BLOCK_BYTES};
use super::matcher::{BufferSearch, FoldedSet};
use super::parts::{self, PartSearch};
use super::{GrepError, Matcher, TextIndex};

/// Matching lines of the whole text found beforehand (by a search that followed the
/// indexing read): the first ones, how many there are, and the last one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Found {
    /// The first matching lines, ascending: at least as many as the body can show.
    pub first_lines: Vec<usize>,
    pub total: usize,
    /// The last matching line (its number sets the width of every number shown).
    pub last_line: usize,
}

/// A text indexed with its matching lines found on the way.
pub(crate) type Indexed<'d> = (TextIndex<&'d [u8]>, Found);

/// Indexes `data` (UTF-8) with `matcher`'s whole-buffer search riding along the
/// read, numbering the first `needed` matching lines; `None` (nothing read) when
/// the matcher has no whole-buffer engine.
pub(crate) fn index_following<'d>(
    data: &'d [u8],
    matcher: &Matcher,
    needed: usize,
) -> Result<Option<Indexed<'d>>, GrepError> {
    let Some(engine) = matcher.buffer_search() else {
        return Ok(None);
    };
    let mut scan = FollowScan::new(engine, matcher.folded_set(), data);
    let cuts = parts::plan(data);
    let (index, hits) = if cuts.is_empty() {
        let index = TextIndex::new_following(data, &mut scan)?;
        (index, std::mem::take(&mut scan.hits))
    } else {
        // The helper searches with its own copy of a regex: one shared by two threads
        // hands the second thread its scratch space through a lock on every search.
        let own = match engine {
            BufferSearch::Regex(re) => Some(re.clone()),
            _ => None,
        };
        let helper = FollowScan {
            engine: own.as_ref().map_or(engine, BufferSearch::Regex),
            ..scan.copy_from(0)
        };
        let scans = ByThread {
            caller: &scan,
            helper: &helper,
            caller_id: std::thread::current().id(),
        };
        let (found, hits) = parts::read_in_parts(data, &cuts, &scans)?;
        (TextIndex::from_census(data, found), hits)
    };
    let found = number_hits(&index, &hits, needed);
    Ok(Some((index, found)))
}

/// The matching lines of `first..=last` in an indexed text, numbered as far as a
/// body of `needed` matching lines shows them (see [`number_hits`]); `None` when
/// the matcher needs more than a whole-buffer search (or the text has surrogates,
/// which literals and regular expressions see differently).
pub(crate) fn found_in_scope<S: AsRef<[u8]>>(
    index: &TextIndex<S>,
    matcher: &Matcher,
    first: usize,
    last: usize,
    needed: usize,
) -> Option<Found> {
    let engine = matcher.buffer_search()?;
    if index.has_surrogates() {
        return None;
    }
    let to = index.line_end_from(index.line_start(last));
    let mut scan = FollowScan {
        engine,
        probes: Vec::new(),
        extras: &[],
        pos: index.line_start(first),
        engine_done: 0,
        engine_cost: 0,
        checked: 0,
        starts: Vec::new(),
        hits: Vec::new(),
    };
    scan.advance(&index.bytes()[..to], to);
    Some(number_hits(index, &scan.hits, needed))
}

/// The lines of `hits` (ascending offsets, one per line) as [`Found`]: all are
/// counted, the last is numbered, and only the first `needed` are numbered in order
/// (newlines counted from the previous hit or from the block's checkpoint, whichever
/// is nearer): the lines past those are never shown.
fn number_hits<S: AsRef<[u8]>>(index: &TextIndex<S>, hits: &[usize], needed: usize) -> Found {
    let Some(&last_hit) = hits.last() else {
        return Found::default();
    };
    let bytes = index.bytes();
    let mut first_lines = crate::alloc::vec_with_capacity(hits.len().min(needed));
    let mut prev: Option<(usize, usize)> = None;
    for &hit in hits.iter().take(needed) {
        let line = match prev {
            Some((at, line)) if hit - at < offset_in_block(hit) => {
                line + count_newlines(&bytes[at..hit])
            }
            _ => index.line_of(hit),
        };
        crate::alloc::push(&mut first_lines, line);
        prev = Some((hit, line));
    }
    Found {
        first_lines,
        total: hits.len(),
        last_line: index.line_of(last_hit),
    }
}

/// Matching lines found so far, one of two ways:
/// - probing: a literal (or a few case-folded ASCII literals, see
///   [`Matcher::folded_set`]: `(?i)python`, `error|warn(ing)?`) is looked for inside
///   the indexing read itself, each block probed for two rare bytes of each needle in
///   the vectors loaded to count its newlines; while its hits stay sparse. A folded literal whose classes also hold
///   characters outside ASCII (`(?i)unicode`: `[Ii\x{130}-\x{131}]`) is probed for its
///   ASCII matches; a match using another member holds a byte outside ASCII, so the
///   engine searches the lines overlapping each slice that the census flags, and the
///   two kinds of hits are merged in order;
/// - windows: the engine searches the lines read so far, 64 KiB behind the read.
struct FollowScan<'m> {
    engine: BufferSearch<'m>,
    /// The probes (one per needle; none once windows took over).
    probes: Vec<Probe<'m>>,
    /// The characters outside ASCII a folded literal's classes also hold (UTF-8):
    /// when there are some, the probe finds the ASCII matches only (see above).
    extras: &'m [String],
    /// Everything before `pos` (a line start) is searched.
    pos: usize,
    /// Lines before this line start were searched by the engine (with `extras`).
    engine_done: usize,
    /// What those searches cost, in bytes (see [`ENGINE_SEARCH_BYTES`]).
    engine_cost: usize,
    /// Candidate positions checked against several needles so far.
    checked: usize,
    /// The probe's hits in the block being read (with `extras`), a buffer kept.
    starts: Vec<usize>,
    /// One offset in each matching line, ascending.
    hits: Vec<usize>,
}

/// A needle to probe for, and its fold (see [`Probe::fold`]).
type Needle<'a> = (&'a [u8], Option<&'a [u8]>);

/// Probing stops once the hits are denser than one per this many bytes: each
/// occurrence is then checked, while a window search skips the rest of a matching line.
const PROBE_BYTES_PER_HIT: usize = 2048;
/// The same for a regular expression (case-folded literals, alternations), whose
/// window search (the regex engine) is several times slower per byte than a literal's.
const FOLDED_PROBE_BYTES_PER_HIT: usize = 256;

impl<'m> FollowScan<'m> {
    /// `folded`: the matcher's case-folded literal forms, if any (see
    /// [`Matcher::folded_set`]), probed like literals.
    fn new(engine: BufferSearch<'m>, folded: Option<&'m FoldedSet>, data: &[u8]) -> Self {
        let (needles, extras): (Vec<Needle<'m>>, &[String]) = match (engine, folded) {
            (BufferSearch::Literal(finder), _) => (vec![(finder.needle(), None)], &[]),
            (BufferSearch::Regex(_), Some(set)) => (
                set.needles
                    .iter()
                    .map(|(lower, fold)| {
                        let fold = fold.iter().any(|&f| f != 0).then_some(&fold[..]);
                        (&lower[..], fold)
                    })
                    .collect(),
                &set.extras,
            ),
            _ => (Vec::new(), &[]),
        };
        let mut probes = Vec::new();
        if !needles.is_empty() && needles.iter().all(|(n, _)| n.len() >= 2) && can_probe() {
            let sample = &data[..data.len().min(SAMPLE)];
            let seen = byte_counts(sample);
            let (mut near_total, mut pair_total) = (0, 0);
            for &(needle, fold) in &needles {
                // How often needle byte `i` sits in the sample, in either case where folded.
                let count = |i: usize| {
                    let b = needle[i];
                    let f = fold.map_or(0, |f: &[u8]| f[i]);
                    seen[usize::from(b)] + if f != 0 { seen[usize::from(b ^ f)] } else { 0 }
                };
                let (i1, mut i2) = rare_pair(needle.len(), &count);
                if needles.len() > 1 {
                    // The second byte that least often sits at its place in the sample.
                    let (best, pairs) = rare_partner(sample, needle, fold, i1);
                    i2 = best;
                    pair_total += pairs;
                }
                near_total += count(i1);
                probes.push(Probe {
                    needle,
                    fold,
                    i1,
                    i2,
                    gate: false,
                });
            }
            // Several probes gate together, on all their bytes `i1`.
            let gate = near_total * GATE_BYTES_PER_HIT <= sample.len();
            for p in &mut probes {
                p.gate = gate;
            }
            if pair_total * MULTI_BYTES_PER_CANDIDATE > sample.len() {
                // Each candidate is checked against every needle: with this many, the
                // engine's window search costs less.
                probes.clear();
            }
        }
        FollowScan {
            engine,
            probes,
            extras,
            pos: 0,
            engine_done: 0,
            engine_cost: 0,
            checked: 0,
            starts: Vec::new(),
            hits: Vec::new(),
        }
    }

    /// Records a hit at `hit` (in a line not recorded yet); `pos` moves to the next line.
    fn record(&mut self, bytes: &[u8], hit: usize) {
        crate::alloc::push(&mut self.hits, hit);
        self.pos =
            memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len() + 1, |off| hit + off + 1);
    }

    /// [`Follower::read_block`] with `extras`: the probe's hits of the block, then
    /// [`Self::merge_flagged`]. Kept apart from the plain probe's loop.
    #[inline(never)]
    fn read_block_with_extras(
        &mut self,
        data: &[u8],
        at: usize,
        len: usize,
        probes: &[Probe<'_>],
    ) -> (usize, u32, usize) {
        let mut starts = std::mem::take(&mut self.starts);
        starts.clear();
        let found = block_census_probes(data, at, len, probes, &mut |s| {
            crate::alloc::push(&mut starts, s)
        });
        let Some(found) = found else {
            unreachable!("a probe is only set up where it runs");
        };
        self.merge_flagged(data, at, len, found.1, &starts);
        self.starts = starts;
        found
    }

    /// The engine's hits in the lines from `from` (a line start, not before `pos`) to
    /// `end` (a line's end), one per line: after a hit, resume at the next line.
    fn search_lines(&mut self, bytes: &[u8], from: usize, end: usize) {
        let hay = &bytes[..end];
        let mut p = from;
        while p <= end {
            let Some(hit) = self.engine.find(hay, p) else {
                break;
            };
            self.record(bytes, hit);
            p = self.pos;
        }
    }

    /// Records the probe hit at `start` unless its line is searched already.
    fn record_start(&mut self, bytes: &[u8], start: usize) {
        if start >= self.pos.max(self.engine_done) {
            self.record(bytes, start);
        }
    }

    /// With `extras`: the engine searches the lines overlapping each slice of the block
    /// `at..at + len` flagged in `mask` where one of `extras` starts (not searched yet;
    /// the last one may run past the block), and its hits are recorded in order with
    /// the probe's `starts` (ascending). A match using one of `extras` holds its first
    /// byte, in a flagged slice; most flagged slices hold other characters (`’`, `é`)
    /// and cost no search. Inside a searched line the probe's hits add nothing: the
    /// engine finds them too.
    fn merge_flagged(&mut self, data: &[u8], at: usize, len: usize, mask: u32, starts: &[usize]) {
        let mut starts = starts.iter().copied().peekable();
        let mut mask = mask;
        while mask != 0 {
            let first = at + mask.trailing_zeros() as usize * SLICE;
            mask &= mask - 1;
            let last = (first + SLICE).min(at + len) - 1;
            // A line start: lines before it are done.
            let done = self.pos.max(self.engine_done);
            if last < done || !holds_extra(self.extras, data, first, last) {
                continue;
            }
            let from = match first.checked_sub(done) {
                Some(gap) if gap > 0 => {
                    memchr::memrchr(b'\n', &data[done..first]).map_or(done, |off| done + off + 1)
                }
                _ => done,
            };
            let to = memchr::memchr(b'\n', &data[last..]).map_or(data.len(), |off| last + off);
            while let Some(start) = starts.next_if(|&s| s < from) {
                self.record_start(data, start);
            }
            self.search_lines(data, from, to);
            self.engine_done = to + 1;
            self.engine_cost += ENGINE_SEARCH_BYTES + (to - from);
        }
        for start in starts {
            self.record_start(data, start);
        }
    }
}

/// The same for several needles, each of whose candidates is checked against all
/// of them.
const MULTI_PROBE_BYTES_PER_HIT: usize = 2048;

/// A search by the engine of a few lines costs about as much as its scan of this
/// many more bytes (the search's own set-up).
const ENGINE_SEARCH_BYTES: usize = 1024;

/// Whether one of `extras` (UTF-8) starts in `data[first..=last]`.
fn holds_extra(extras: &[String], data: &[u8], first: usize, last: usize) -> bool {
    extras.iter().any(|c| {
        let c = c.as_bytes();
        memchr::memchr_iter(c[0], &data[first..=last]).any(|off| data[first + off..].starts_with(c))
    })
}

/// How often each byte value occurs in `sample`. Four tables take turns, so runs of
/// one byte (spaces, indentation) do not chain each increment on the one before.
fn byte_counts(sample: &[u8]) -> [usize; 256] {
    let mut tables = [[0u32; 256]; 4];
    let mut quads = sample.chunks_exact(4);
    for q in &mut quads {
        for (table, &b) in tables.iter_mut().zip(q) {
            table[usize::from(b)] += 1;
        }
    }
    for &b in quads.remainder() {
        tables[0][usize::from(b)] += 1;
    }
    std::array::from_fn(|i| tables.iter().map(|t| t[i] as usize).sum())
}

/// Bytes of the text sampled to rank the needle's bytes by how rare they are there.
const SAMPLE: usize = 16 << 10;

/// The probe's rarer byte gates the compare of the other one when the sample holds
/// at most one per this many bytes: most 128-byte slices then hold none, and skip it.
const GATE_BYTES_PER_HIT: usize = 512;

/// Several needles are probed only when the sample holds at most one candidate per
/// this many bytes.
const MULTI_BYTES_PER_CANDIDATE: usize = 256;

/// For a needle (with its fold, at least 2 bytes) and the offset `i1` of its probe
/// byte: the other offset whose byte least often sits at its place beside an
/// occurrence of byte `i1` in `sample` (the farther one among equals), and how
/// often it does (the probe's candidates in the sample).
fn rare_partner(sample: &[u8], needle: &[u8], fold: Option<&[u8]>, i1: usize) -> (usize, usize) {
    let is = |b: u8, i: usize| b | fold.map_or(0, |f| f[i]) == needle[i];
    let mut pairs = [0usize; 64];
    let span = needle.len().min(pairs.len());
    for (p, &b) in sample.iter().enumerate() {
        if !is(b, i1) || p < i1 {
            continue;
        }
        let start = p - i1;
        for (i2, n) in pairs.iter_mut().enumerate().take(span) {
            if sample.get(start + i2).is_some_and(|&c| is(c, i2)) {
                *n += 1;
            }
        }
    }
    (0..span)
        .filter(|&i2| i2 != i1)
        .min_by_key(|&i2| (pairs[i2], std::cmp::Reverse(i2.abs_diff(i1))))
        .map_or((usize::from(i1 == 0), 0), |i2| (i2, pairs[i2]))
}

/// Two offsets of a needle of `len` bytes whose bytes are rare (`count(i)`: how
/// often byte `i` sits in a sample of the text) and that sit apart: bytes next to
/// each other in the needle often sit next to each other in the text too (`req=` in
/// a log), which would make every line a candidate.
fn rare_pair(len: usize, count: &dyn Fn(usize) -> usize) -> (usize, usize) {
    let rarest = |skip: &dyn Fn(usize) -> bool| {
        (0..len)
            .filter(|&i| !skip(i))
            .min_by_key(|&i| (count(i), std::cmp::Reverse(i)))
    };
    let i1 = rarest(&|_| false).unwrap_or(0);
    let apart = 4.min(len - 1);
    let i2 = rarest(&|i| i.abs_diff(i1) < apart).unwrap_or(len - 1 - i1.min(len - 1));
    (i1, i2)
}

impl<'m> FollowScan<'m> {
    /// A fresh copy of this scan for one part of a text read in parts (see
    /// [`parts`]), searching from line start `pos`: the probes keep the bytes they
    /// chose on the whole text's start.
    fn copy_from(&self, pos: usize) -> Self {
        FollowScan {
            engine: self.engine,
            probes: self.probes.clone(),
            extras: self.extras,
            pos,
            engine_done: 0,
            engine_cost: 0,
            checked: 0,
            starts: Vec::new(),
            hits: Vec::new(),
        }
    }
}

/// The scans of a text read in parts: the calling thread's, and the helper's.
struct ByThread<'a, 'm> {
    caller: &'a FollowScan<'m>,
    helper: &'a FollowScan<'m>,
    caller_id: std::thread::ThreadId,
}

impl<'m> PartSearch for ByThread<'_, 'm> {
    type Scan = FollowScan<'m>;

    fn scan_from(&self, pos: usize) -> FollowScan<'m> {
        if std::thread::current().id() == self.caller_id {
            self.caller.copy_from(pos)
        } else {
            self.helper.copy_from(pos)
        }
    }

    fn hits(scan: FollowScan<'m>) -> Vec<usize> {
        scan.hits
    }

    fn line_hit(&self, data: &[u8], start: usize, end: usize) -> Option<usize> {
        self.caller.engine.find(&data[..end], start)
    }
}

impl Follower for FollowScan<'_> {
    fn read_block(&mut self, data: &[u8], at: usize, len: usize) -> (usize, u32) {
        if self.probes.is_empty() {
            return block_census(&data[at..at + len]);
        }
        let probes = std::mem::take(&mut self.probes);
        let found = if !self.extras.is_empty() {
            self.read_block_with_extras(data, at, len, &probes)
        } else {
            // A hit is where a match starts (one probe) or a byte inside it (several):
            // either way on the match's line.
            let mut on_hit = |hit: usize| {
                if hit >= self.pos {
                    self.record(data, hit);
                }
            };
            let Some(found) = block_census_probes(data, at, len, &probes, &mut on_hit) else {
                unreachable!("a probe is only set up where it runs");
            };
            found
        };
        self.probes = probes;
        self.checked += found.2;
        let bytes_per_hit = match (self.engine, self.probes.len()) {
            (BufferSearch::Regex(_), 1) => FOLDED_PROBE_BYTES_PER_HIT,
            (BufferSearch::Regex(_), _) => MULTI_PROBE_BYTES_PER_HIT,
            _ => PROBE_BYTES_PER_HIT,
        };
        let dense = self.hits.len() * bytes_per_hit > at + len;
        // With `extras`, the engine searches around many slices (text in Turkish, say):
        // once their cost passes half the bytes read, windows cost less.
        let engine_busy = self.engine_cost * 2 > at + len;
        // Several needles: each candidate is checked against all of them.
        let crowded = self.checked * MULTI_BYTES_PER_CANDIDATE > at + len;
        if (dense || engine_busy || crowded) && at + len >= 16 * BLOCK_BYTES {
            // Dense hits, or a busy engine: windows from here on. Every byte `i1` before
            // `at + len` was probed, so searching again from `pos` finds no line twice.
            self.probes.clear();
        }
        (found.0, found.1)
    }

    /// Searches the lines that end before `upto` (all of them when `upto` is the end).
    fn advance(&mut self, bytes: &[u8], upto: usize) {
        if !self.probes.is_empty() || self.pos > upto {
            return;
        }
        let end = if upto == bytes.len() {
            upto
        } else {
            match memchr::memrchr(b'\n', &bytes[self.pos..upto]) {
                Some(off) => self.pos + off,
                None => return, // one long line: wait for its end
            }
        };
        self.search_lines(bytes, self.pos, end);
        // Step over the "\n" that ends the window.
        self.pos = self.pos.max(end + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grep::{search, search_fresh, Matcher, MatcherSpec, Query};

    fn both(text: &[u8], matcher: &Matcher, pattern: &str) -> (Vec<u8>, Vec<u8>) {
        let query = Query {
            pattern: Some((pattern.as_bytes(), matcher)),
            line_span: None,
            context_lines: 1,
            max_chars: 1_000_000,
        };
        let fresh = search_fresh(text, &query).unwrap();
        let indexed = search(&TextIndex::new(text).unwrap(), &query).unwrap();
        // Read in parts of a few blocks (where a cut fits): the same answer.
        for layout in [(2 * BLOCK_BYTES, BLOCK_BYTES), (BLOCK_BYTES, 300)] {
            parts::TEST_LAYOUT.with(|l| l.set(Some(layout)));
            let in_parts = search_fresh(text, &query);
            parts::TEST_LAYOUT.with(|l| l.set(None));
            assert_eq!(in_parts.unwrap(), fresh, "parts of {layout:?}");
        }
        (fresh, indexed)
    }

    fn regex(p: &str) -> Matcher {
        Matcher::compile(MatcherSpec::Regex {
            linear: Some(p.to_owned()),
            linear_needs_ascii_text: false,
            backtracking: p.to_owned(),
            prefilter: p.to_owned(),
            surrogate_exact: true,
            min_chars: 0,
        })
        .unwrap()
    }

    #[test]
    fn windows_give_the_whole_text_answer() {
        // Lines of many lengths, some longer than a window, matches near window edges.
        // (Translated patterns anchor per line only: a match never sees the text's end.)
        let mut text = Vec::new();
        for i in 0..40_000usize {
            let len = (i * 7919) % 97 + if i % 5000 == 0 { 150_000 } else { 0 };
            text.extend((0..len).map(|j| {
                if (i + j) % 31 == 0 {
                    b' '
                } else {
                    b'a' + (j % 26) as u8
                }
            }));
            if i % 13 == 0 {
                text.extend_from_slice("zq é".as_bytes());
            }
            text.push(b'\n');
        }
        for p in ["zq", "(?m:^)a", "(?m:$)", "\\bzq\\b", "z|yz", "é(?m:$)"] {
            let m = regex(p);
            let (fresh, indexed) = both(&text, &m, p);
            assert_eq!(fresh, indexed, "{p}");
        }
        let lit = Matcher::compile(MatcherSpec::Literal(b"q \xc3\xa9".to_vec())).unwrap();
        let (fresh, indexed) = both(&text, &lit, "q é");
        assert_eq!(fresh, indexed);
        let (fresh, indexed) = both(b"", &lit, "q");
        assert_eq!(fresh, indexed);
    }

    #[test]
    fn literal_probe_finds_needles_at_block_edges_and_the_end() {
        let needle = b"qzx";
        for len in [3usize, 100, 4096, 70_000, 200_003] {
            let mut text: Vec<u8> = (0..len)
                .map(|i| {
                    if i % 61 == 60 {
                        b'\n'
                    } else {
                        b'a' + (i % 7) as u8
                    }
                })
                .collect();
            for at in [0, 4093, 4095, 65_534, 131_071, len / 2, len - 3] {
                if at + 3 <= len {
                    text[at..at + 3].copy_from_slice(needle);
                }
            }
            let m = Matcher::compile(MatcherSpec::Literal(needle.to_vec())).unwrap();
            let (fresh, indexed) = both(&text, &m, "qzx");
            assert_eq!(fresh, indexed, "{len}");
        }
    }

    /// `len` bytes in lines of 71 made of `fill` (the needle's letters, cut short),
    /// with the bytes `marks` at columns 5 and 9: no match, many near ones.
    fn near_misses(len: usize, marks: (u8, u8), fill: &[u8]) -> Vec<u8> {
        (0..len)
            .map(|i| match i % 71 {
                70 => b'\n',
                5 => marks.0,
                9 => marks.1,
                _ => fill[i % fill.len()],
            })
            .collect()
    }

    #[test]
    fn case_folded_probe_gives_the_whole_text_answer() {
        // `(?i)python` as translated: probed case-blind in the read, sparse hits at
        // block and window edges and at the end, then dense hits (windows take over).
        let pattern = "[Pp][Yy][Tt][Hh][Oo][Nn]";
        let m = regex(pattern);
        assert!(m.folded_set().is_some());
        for len in [6usize, 5000, 70_000, 300_001] {
            let mut text = near_misses(len, (b'P', b'n'), b"pythoYTHONx");
            let words: [&[u8]; 4] = [b"python", b"PYTHON", b"pYtHoN", b"pythoN"];
            for (k, at) in [0, 4090, 4093, 65_530, 65_536, len / 3, len - 6]
                .into_iter()
                .enumerate()
            {
                if at + 6 <= len {
                    text[at..at + 6].copy_from_slice(words[k % 4]);
                }
            }
            if len > 200_000 {
                for at in (200_000..len - 6).step_by(40) {
                    text[at..at + 6].copy_from_slice(b"Python");
                }
            }
            let (fresh, indexed) = both(&text, &m, pattern);
            assert_eq!(fresh, indexed, "{len}");
        }
        // Near misses: another letter with the case bit set is no match.
        let text = b"pythom\nPYTH0N\npython_\n".repeat(500);
        let (fresh, indexed) = both(&text, &m, pattern);
        assert_eq!(fresh, indexed);
    }

    /// `(?i)unicode` and `(?i)ask` as translated: their classes for `i`, `s` and `k`
    /// also hold characters outside ASCII.
    const UNICODE: &str = "[Uu][Nn][Ii\\x{130}-\\x{131}][Cc][Oo][Dd][Ee]";
    const ASK: &str = "[Aa][Ss\\x{17F}][Kk\\x{212A}]";

    #[test]
    fn folded_probe_with_extras_gives_the_whole_text_answer() {
        let m = regex(UNICODE);
        assert!(m.folded_set().is_some_and(|set| set.extras.len() == 2));
        let words: [&str; 6] = [
            "unicode", "UNİCODE", "unıcode", "UnIcOdE", "unİcode", "uNıCoDe",
        ];
        for len in [7usize, 5000, 70_000, 300_001] {
            // Lines of 71 bytes, no match, some with "é" here and there.
            let mut text = near_misses(len, (b'U', b'e'), b"unicodNICODx");
            // Matches (ASCII or not) across slice and block edges, several in a line,
            // an "é" in lines with and without a match.
            let spots = [
                0,
                120,
                125,
                4090,
                4093,
                4096,
                8100,
                65_530,
                65_536,
                len / 3,
                len.saturating_sub(9),
            ];
            for (k, at) in spots.into_iter().enumerate() {
                let word = words[k % words.len()].as_bytes();
                if at + word.len() <= len {
                    text[at..at + word.len()].copy_from_slice(word);
                }
                let at = at + 40 + k;
                if at + 2 <= len && text[at] != b'\n' && text[at + 1] != b'\n' {
                    text[at..at + 2].copy_from_slice("é".as_bytes());
                }
            }
            let text = String::from_utf8_lossy(&text).into_owned().into_bytes();
            let (fresh, indexed) = both(&text, &m, UNICODE);
            assert_eq!(fresh, indexed, "{len}");
        }
    }

    #[test]
    fn folded_probe_with_extras_on_ascii_text_and_dense_hits() {
        let m = regex(UNICODE);
        // No byte outside ASCII: the probe alone answers.
        let text = b"unicode x\nUNICODE\nunicod\nnothing here\nUnIcOdE\n".repeat(3000);
        let (fresh, indexed) = both(&text, &m, UNICODE);
        assert_eq!(fresh, indexed);
        // Dense hits, some outside ASCII: windows take over part way.
        let text = "a unıcode\nb\nc UNICODE\nd é unİcode\n"
            .repeat(20_000)
            .into_bytes();
        let (fresh, indexed) = both(&text, &m, UNICODE);
        assert_eq!(fresh, indexed);
        // Sparse first, then dense.
        let mut text = "é filler line without it\n".repeat(20_000);
        text.push_str(&"é x unİcode\nunicode\n".repeat(20_000));
        let (fresh, indexed) = both(text.as_bytes(), &m, UNICODE);
        assert_eq!(fresh, indexed);
        // "ı" in every line, matches rare: the engine searches around nearly every
        // slice, until windows take over.
        let mut text = String::new();
        for i in 0..30_000 {
            text.push_str(
                ["ıx yz\n", "qı\n", "an unıcode\n", "UNICODE ı\n"]
                    [usize::from(i % 97 == 0) * (1 + i % 3)],
            );
        }
        let (fresh, indexed) = both(text.as_bytes(), &m, UNICODE);
        assert_eq!(fresh, indexed);
        // One long line flagged in many slices, its match at the end only.
        let mut text = "é ".repeat(100_000);
        text.push_str("UNİCODE\nunicode\n");
        let (fresh, indexed) = both(text.as_bytes(), &m, UNICODE);
        assert_eq!(fresh, indexed);
    }

    /// Random texts from pieces holding matches made of ASCII and not, the Kelvin
    /// sign, the long s, near misses and newlines: the fresh search gives what the
    /// indexed one gives.
    #[test]
    fn folded_probe_with_extras_agrees_on_random_texts() {
        let pieces = [
            "unicode",
            "UNİCODE",
            "unıcode",
            "UnIcOdE",
            "unicod",
            "ſ",
            "K",
            "k",
            "a",
            "AS",
            "aſK",
            "asK",
            "é",
            "’",
            "İ",
            "ı",
            "\n",
            "\n",
            " ",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "nicode",
        ];
        let mut next = crate::test_rng::xorshift(0x9E37_79B9_7F4A_7C15);
        let (unicode, ask) = (regex(UNICODE), regex(ASK));
        for round in 0..60 {
            let target = [50, 4000, 9000, 70_000][round % 4];
            // Some rounds leave out the pieces outside ASCII, or the newlines.
            let skip = |p: &str| match round % 5 {
                1 => !p.is_ascii(),
                2 => p == "\n",
                _ => false,
            };
            let mut text = String::new();
            while text.len() < target {
                let piece = pieces[(next() % pieces.len() as u64) as usize];
                if !skip(piece) {
                    text.push_str(piece);
                }
            }
            for (m, p) in [(&unicode, UNICODE), (&ask, ASK)] {
                let (fresh, indexed) = both(text.as_bytes(), m, p);
                assert_eq!(fresh, indexed, "{round} {p}");
            }
        }
    }

    /// Alternations of a few literals as translated (`error|warn(ing)?`, with and
    /// without `(?i)`, and one whose classes hold characters outside ASCII).
    const ALTERNATIONS: [&str; 4] = [
        "(?:error|warn(?:(ing))?)",
        "(?:[Ee][Rr][Rr][Oo][Rr]|[Ww][Aa][Rr][Nn](?:([Ii\\x{130}-\\x{131}][Nn][Gg]))?)",
        "(?:[Aa][Ss\\x{17F}][Kk\\x{212A}]|rr|[Uu][Nn][Ii\\x{130}-\\x{131}][Cc][Oo][Dd][Ee])",
        "(?:ab|ba|aab|bb)",
    ];

    /// Random texts of pieces holding the needles in every case, near misses, the
    /// characters outside ASCII the classes hold, and newlines; some long enough for
    /// the probes to give way to windows (dense hits, or many candidates): the fresh
    /// search gives what the indexed one gives.
    #[test]
    fn alternations_agree_on_random_texts() {
        let pieces = [
            "error",
            "ERROR",
            "Error",
            "erro",
            "rror",
            "warn",
            "WARNING",
            "warnİng",
            "warn",
            "wrn",
            "ask",
            "aſK",
            "AsK",
            "unİcode",
            "UNICODE",
            "unicod",
            "ab",
            "ba",
            "b",
            "a",
            "é",
            "’",
            "\n",
            "\n",
            " ",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ];
        let mut next = crate::test_rng::xorshift(0x5DEE_CE66_D1CE_4E5B);
        let matchers: Vec<Matcher> = ALTERNATIONS.iter().map(|p| regex(p)).collect();
        for m in &matchers {
            assert!(m.folded_set().is_some());
        }
        for round in 0..48 {
            let target = [60, 5000, 9000, 90_000, 200_000][round % 5];
            // Some rounds use the filler mostly (sparse hits), some leave out newlines.
            let sparse = round % 3 == 0;
            let mut text = String::new();
            while text.len() < target {
                let mut piece = pieces[(next() % pieces.len() as u64) as usize];
                if sparse && !next().is_multiple_of(8) {
                    piece = pieces[pieces.len() - 1 - (next() % 3) as usize];
                }
                if !(round % 4 == 1 && piece == "\n") {
                    text.push_str(piece);
                }
            }
            for (m, p) in matchers.iter().zip(ALTERNATIONS) {
                let (fresh, indexed) = both(text.as_bytes(), m, p);
                assert_eq!(fresh, indexed, "{round} {p}");
            }
        }
    }

    #[test]
    fn only_the_lines_a_budget_shows_are_numbered() {
        // Many short matching lines, numbers of growing width: every budget (and
        // context) gives what the whole list of lines gives.
        let text: Vec<u8> = (0..30_000)
            .flat_map(|i| format!("{}\n", if i % 3 == 0 { "ab" } else { "c" }).into_bytes())
            .collect();
        let m = regex("a");
        for max_chars in [-7, 0, 1, 4, 5, 6, 11, 57, 1_000, 100_000] {
            for context_lines in [0, 2] {
                let query = Query {
                    pattern: Some((b"a", &m)),
                    line_span: None,
                    context_lines,
                    max_chars,
                };
                let fresh = search_fresh(&text, &query).unwrap();
                let indexed = search(&TextIndex::new(&text[..]).unwrap(), &query).unwrap();
                assert_eq!(fresh, indexed, "{max_chars} {context_lines}");
            }
        }
    }

    fn pair_in(needle: &[u8], sample: &[u8]) -> (usize, usize) {
        let count = |i: usize| sample.iter().filter(|&&b| b == needle[i]).count();
        rare_pair(needle.len(), &count)
    }

    #[test]
    fn the_probe_pair_is_rare_and_apart() {
        let log = b"req=12ab req=34cd req=56ef\n".repeat(100);
        let (i1, i2) = pair_in(b"req=deadbeef", &log);
        assert!(i1.abs_diff(i2) >= 4, "{i1} {i2}");
        let (i1, i2) = pair_in(b"abc", b"aaabbbccc");
        assert_ne!(i1, i2);
    }

    #[test]
    fn byte_counts_count_every_byte() {
        let mut next = crate::test_rng::xorshift(99);
        for len in [0, 1, 3, 4, 5, 1000, SAMPLE] {
            let sample: Vec<u8> = (0..len).map(|_| (next() % 7) as u8 * 37).collect();
            let mut naive = [0usize; 256];
            sample.iter().for_each(|&b| naive[usize::from(b)] += 1);
            assert_eq!(byte_counts(&sample), naive);
        }
    }

    #[test]
    fn invalid_utf8_is_reported_after_a_search() {
        let mut text = vec![b'a'; 300_000];
        text[200_000] = 0xFF;
        let m = regex("a");
        let query = Query {
            pattern: Some((b"a", &m)),
            line_span: None,
            context_lines: 0,
            max_chars: 100,
        };
        assert_eq!(
            search_fresh(&text, &query),
            Err(GrepError::InvalidUtf8 {
                valid_up_to: 200_000
            })
        );
    }
}
