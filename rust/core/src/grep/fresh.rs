//! A search of text not indexed yet, done in the same read as the indexing, and the
//! numbering of matching lines for any search that a whole-buffer engine answers.
//!
//! Indexing reads the whole text (newline counts, the UTF-8 check) and so does the
//! search; neither needs the other until the matching lines are numbered. The search
//! rides along the indexing read: a literal inside it (see [`Probe`]; also a pattern
//! that is a literal up to ASCII case, such as `(?i)python`), anything else
//! 64 KiB behind it, on bytes still in cache. (A second thread for the search was
//! tried: on a busy two-core machine it waited for a core more often than it
//! overlapped.) Windows end on a `"\n"` (or the end of the text): matches never hold
//! a `"\n"`, and anchors and word boundaries see the same neighbours in a window as
//! in the whole text, so each window gives the lines a whole-text search would.
//! Only the matching lines the body's budget can show are numbered.

use super::census::{block_census, block_census_probe, can_probe, Probe};
use super::format::{lines_to_fill, respond, Found};
use super::index::{count_newlines, offset_in_block, Follower, BLOCK_BYTES};
use super::matcher::BufferSearch;
use super::{GrepError, Matcher, Query, TextIndex};

/// Indexes `data` (UTF-8) and answers `query` on it. Searches over the whole text
/// with a whole-buffer engine follow the read; anything else indexes first.
pub fn search_fresh(data: &[u8], query: &Query<'_>) -> Result<Vec<u8>, GrepError> {
    let engine = match (query.pattern, query.line_span) {
        (Some((_, matcher)), None) => matcher.buffer_search(),
        _ => None,
    };
    let Some(engine) = engine else {
        return respond(&TextIndex::new(data)?, query, None);
    };
    // Not yet a folded literal whose classes hold characters outside ASCII: the probe
    // alone would miss their matches.
    let folded = query
        .pattern
        .and_then(|(_, matcher)| matcher.folded_literal())
        .filter(|(_, _, extras)| extras.is_empty())
        .map(|(lower, fold, _)| (lower, fold));
    let mut scan = FollowScan::new(engine, folded, data);
    let index = TextIndex::new_following(data, &mut scan)?;
    let found = number_hits(&index, &scan.hits, lines_to_fill(query.max_chars));
    respond(&index, query, Some(found))
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
        probe: None,
        pos: index.line_start(first),
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
    let mut first_lines = Vec::with_capacity(hits.len().min(needed));
    let mut prev: Option<(usize, usize)> = None;
    for &hit in hits.iter().take(needed) {
        let line = match prev {
            Some((at, line)) if hit - at < offset_in_block(hit) => {
                line + count_newlines(&bytes[at..hit])
            }
            _ => index.line_of(hit),
        };
        first_lines.push(line);
        prev = Some((hit, line));
    }
    Found {
        first_lines,
        total: hits.len(),
        last_line: index.line_of(last_hit),
    }
}

/// Matching lines found so far, one of two ways:
/// - probing: a literal (or a case-folded ASCII literal, see
///   [`Matcher::folded_literal`]) is looked for inside the indexing read itself, each block
///   probed for two rare bytes of the needle in the vectors loaded to count its
///   newlines; while its hits stay sparse;
/// - windows: the engine searches the lines read so far, 64 KiB behind the read.
struct FollowScan<'m> {
    engine: BufferSearch<'m>,
    probe: Option<Probe<'m>>,
    /// Everything before `pos` (a line start) is searched.
    pos: usize,
    /// One offset in each matching line, ascending.
    hits: Vec<usize>,
}

/// Probing stops once the hits are denser than one per this many bytes: each
/// occurrence is then checked, while a window search skips the rest of a matching line.
const PROBE_BYTES_PER_HIT: usize = 2048;
/// The same for a case-folded literal, whose window search (the regex engine) is
/// several times slower per byte than a literal's.
const FOLDED_PROBE_BYTES_PER_HIT: usize = 256;

impl<'m> FollowScan<'m> {
    /// `folded`: the matcher's case-folded literal form, if any (see
    /// [`Matcher::folded_literal`]), probed like a literal.
    fn new(engine: BufferSearch<'m>, folded: Option<(&'m [u8], &'m [u8])>, data: &[u8]) -> Self {
        let (needle, fold) = match (engine, folded) {
            (BufferSearch::Literal(finder), _) => (finder.needle(), None),
            (BufferSearch::Regex(_), Some((lower, fold))) => (lower, Some(fold)),
            _ => (&[][..], None),
        };
        let probe = (needle.len() >= 2 && can_probe()).then(|| {
            let sample = &data[..data.len().min(SAMPLE)];
            let mut seen = [0usize; 256];
            for &b in sample {
                seen[usize::from(b)] += 1;
            }
            // How often needle byte `i` sits in the sample, in either case where folded.
            let count = |i: usize| {
                let b = needle[i];
                let f = fold.map_or(0, |f: &[u8]| f[i]);
                seen[usize::from(b)] + if f != 0 { seen[usize::from(b ^ f)] } else { 0 }
            };
            let (i1, i2) = rare_pair(needle.len(), &count);
            Probe {
                needle,
                fold,
                i1,
                i2,
                gate: count(i1) * GATE_BYTES_PER_HIT <= sample.len(),
            }
        });
        FollowScan {
            engine,
            probe,
            pos: 0,
            hits: Vec::new(),
        }
    }

    /// Records a hit at `hit` (in a line not recorded yet); `pos` moves to the next line.
    fn record(&mut self, bytes: &[u8], hit: usize) {
        self.hits.push(hit);
        self.pos =
            memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len() + 1, |off| hit + off + 1);
    }
}

/// Bytes of the text sampled to rank the needle's bytes by how rare they are there.
const SAMPLE: usize = 16 << 10;

/// The probe's rarer byte gates the compare of the other one when the sample holds
/// at most one per this many bytes: most 128-byte slices then hold none, and skip it.
const GATE_BYTES_PER_HIT: usize = 512;

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

impl Follower for FollowScan<'_> {
    fn read_block(&mut self, data: &[u8], at: usize, len: usize) -> (usize, u32) {
        let Some(probe) = self.probe else {
            return block_census(&data[at..at + len]);
        };
        let mut on_hit = |start: usize| {
            if start >= self.pos {
                self.record(data, start);
            }
        };
        let Some(found) = block_census_probe(data, at, len, &probe, &mut on_hit) else {
            unreachable!("a probe is only set up where it runs");
        };
        let bytes_per_hit = if probe.fold.is_some() {
            FOLDED_PROBE_BYTES_PER_HIT
        } else {
            PROBE_BYTES_PER_HIT
        };
        if self.hits.len() * bytes_per_hit > at + len && at + len >= 16 * BLOCK_BYTES {
            // Dense hits: windows from here on. Starts before `at + len - i1` were all
            // probed, so searching again from `pos` finds no line twice.
            self.probe = None;
        }
        found
    }

    /// Searches the lines that end before `upto` (all of them when `upto` is the end).
    fn advance(&mut self, bytes: &[u8], upto: usize) {
        if self.probe.is_some() || self.pos > upto {
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
        let hay = &bytes[..end];
        // One hit per line: after a hit, resume at the next line.
        while self.pos <= end {
            let Some(hit) = self.engine.find(hay, self.pos) else {
                break;
            };
            self.record(bytes, hit);
        }
        // Step over the "\n" that ends the window.
        self.pos = self.pos.max(end + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grep::{search, Matcher, MatcherSpec};

    fn both(text: &[u8], matcher: &Matcher, pattern: &str) -> (Vec<u8>, Vec<u8>) {
        let query = Query {
            pattern: Some((pattern.as_bytes(), matcher)),
            line_span: None,
            context_lines: 1,
            max_chars: 1_000_000,
        };
        let fresh = search_fresh(text, &query).unwrap();
        let indexed = search(&TextIndex::new(text).unwrap(), &query).unwrap();
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

    #[test]
    fn case_folded_probe_gives_the_whole_text_answer() {
        // `(?i)python` as translated: probed case-blind in the read, sparse hits at
        // block and window edges and at the end, then dense hits (windows take over).
        let pattern = "[Pp][Yy][Tt][Hh][Oo][Nn]";
        let m = regex(pattern);
        assert!(m.folded_literal().is_some());
        for len in [6usize, 5000, 70_000, 300_001] {
            let mut text: Vec<u8> = (0..len)
                .map(|i| match i % 71 {
                    70 => b'\n',
                    5 => b'P',
                    9 => b'n',
                    _ => b"pythoYTHONx"[i % 11],
                })
                .collect();
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
