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
use super::index::{count_newlines, line_at, offset_in_block};
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
    let index = TextIndex::new_visiting(data, |bytes, upto, checkpoints| {
        scan.advance(bytes, upto, checkpoints)
    })?;
    respond(&index, query, Some(scan.lines))
}

/// Matches found so far: everything before `pos` (a line start) is searched.
struct WindowScan<'m> {
    engine: BufferSearch<'m>,
    pos: usize,
    /// The matching lines, ascending.
    lines: Vec<usize>,
    /// Where the last hit was and its line.
    last: Option<(usize, usize)>,
}

impl<'m> WindowScan<'m> {
    fn new(engine: BufferSearch<'m>) -> Self {
        WindowScan {
            engine,
            pos: 0,
            lines: Vec::new(),
            last: None,
        }
    }

    /// Searches the lines that end before `upto` (all of them when `upto` is the end).
    fn advance(&mut self, bytes: &[u8], upto: usize, checkpoints: &[usize]) {
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
            // Number the line now, while the bytes are in cache: newlines counted
            // from the last hit or from the block's checkpoint, whichever is nearer.
            let line = match self.last {
                Some((at, line)) if hit - at < offset_in_block(hit) => {
                    line + count_newlines(&bytes[at..hit])
                }
                _ => line_at(bytes, checkpoints, hit),
            };
            self.lines.push(line);
            self.last = Some((hit, line));
            match memchr::memchr(b'\n', &hay[hit..]) {
                Some(off) => self.pos = hit + off + 1,
                None => break,
            }
        }
        // Step over the "\n" that ends the window.
        self.pos = end + 1;
    }
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
