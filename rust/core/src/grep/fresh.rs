//! A search of text not indexed yet, done in the same read as the indexing.
//!
//! Indexing reads the whole text (newline counts, the UTF-8 check) and so does the
//! search; neither needs the other until the matching lines are numbered. The search
//! follows the indexing read 64 KiB behind, on bytes still in cache (a second thread
//! for the search was tried: on a busy two-core machine it waited for a core more
//! often than it overlapped). Windows end on a `"\n"` (or the end of the text): matches never hold a
//! `"\n"`, and anchors and word boundaries see the same neighbours in a window as in
//! the whole text, so each window gives the lines a whole-text search would.

use super::format::respond;
use super::index::count_newlines;
use super::matcher::BufferSearch;
use super::{GrepError, Query, TextIndex};

/// Indexes `data` (UTF-8) and answers `query` on it. Searches over the whole text
/// with a whole-buffer engine follow the read; anything else indexes first.
pub fn search_fresh(data: &[u8], query: &Query<'_>) -> Result<Vec<u8>, GrepError> {
    let engine = match (query.pattern, query.line_range) {
        (Some((_, matcher)), None) => matcher.buffer_search(),
        _ => None,
    };
    let Some(engine) = engine else {
        return respond(&TextIndex::new(data)?, query, None);
    };
    let mut scan = WindowScan::new(engine);
    let index = TextIndex::new_visiting(data, |bytes, upto| scan.advance(bytes, upto))?;
    let lines = lines_of(&index, &scan.hits);
    respond(&index, query, Some(lines))
}

/// Matches found so far: everything before `pos` (a line start) is searched.
struct WindowScan<'m> {
    engine: BufferSearch<'m>,
    pos: usize,
    /// Offset of the first match in each matching line, ascending.
    hits: Vec<usize>,
}

impl<'m> WindowScan<'m> {
    fn new(engine: BufferSearch<'m>) -> Self {
        WindowScan {
            engine,
            pos: 0,
            hits: Vec::new(),
        }
    }

    /// Searches the lines that end before `upto` (all of them when `upto` is the end).
    fn advance(&mut self, bytes: &[u8], upto: usize) {
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
        while let Some(hit) = self.engine.find(hay, self.pos) {
            self.hits.push(hit);
            match memchr::memchr(b'\n', &hay[hit..]) {
                Some(off) => self.pos = hit + off + 1,
                None => break,
            }
        }
        // Step over the "\n" that ends the window.
        self.pos = end + 1;
    }
}

/// The lines holding `hits` (ascending offsets, one per line): newlines are counted
/// from the previous hit when it is near, else from the index's nearest checkpoint,
/// so no stretch of text is counted twice and none beyond a block per hit.
fn lines_of<S: AsRef<[u8]>>(index: &TextIndex<S>, hits: &[usize]) -> Vec<usize> {
    let bytes = index.bytes();
    let mut lines = Vec::with_capacity(hits.len());
    let mut prev: Option<(usize, usize)> = None;
    for &hit in hits {
        let line = match prev {
            Some((at, line)) if hit - at <= 4096 => line + count_newlines(&bytes[at..hit]),
            _ => index.line_of(hit),
        };
        lines.push(line);
        prev = Some((hit, line));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grep::{search, Matcher, MatcherSpec};

    fn both(text: &[u8], matcher: &Matcher, pattern: &str) -> (Vec<u8>, Vec<u8>) {
        let query = Query {
            pattern: Some((pattern.as_bytes(), matcher)),
            line_range: None,
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
    fn invalid_utf8_is_reported_after_a_search() {
        let mut text = vec![b'a'; 300_000];
        text[200_000] = 0xFF;
        let m = regex("a");
        let query = Query {
            pattern: Some((b"a", &m)),
            line_range: None,
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
