//! Relevance previews of long tool results: the text cut into verbatim chunks, each scored
//! against a query with BM25.
//!
//! Chunks hold at most `max_chars` code points, end just after a newline where the window holds
//! one (a longer line is cut by character), and concatenate back to the text exactly. Each knows
//! its first and last line (1-based; a chunk ending with a newline ends on the line that newline
//! closes).
//!
//! The scores are those of [`crate::rank::Index::scores`] over the chunk texts (same terms, same
//! constants, divided by the best), computed without building an index of every term: only the
//! query's terms are counted, and the runs of ASCII letters and digits (most of a tool result) are
//! split, folded, filtered and stemmed in a reused buffer instead of one `String` per term. A run
//! holding any other alphanumeric character goes through [`crate::rank::terms`] itself.

use std::thread;

use crate::rank::terms;

/// BM25's term-frequency saturation (as in `rank`).
const K1: f64 = 1.2;
/// BM25's document-length normalisation (as in `rank`).
const B: f64 = 0.75;

/// Texts shorter than this are scored on one thread.
const PARALLEL_MIN_BYTES: usize = 256 * 1024;

/// One chunk: code point bounds in the text, byte bounds, first and last line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// First code point.
    pub start: usize,
    /// One past the last code point.
    pub end: usize,
    /// First byte (UTF-8).
    pub start_byte: usize,
    /// One past the last byte.
    pub end_byte: usize,
    /// The line the chunk starts on (1-based).
    pub first_line: usize,
    /// The line its last character is on.
    pub last_line: usize,
}

/// `text` cut into chunks of at most `max_chars` code points (at least 1), each ending after a
/// newline when its window holds one. An empty text has no chunk.
pub fn chunks(text: &str, max_chars: usize) -> Vec<Chunk> {
    let max_chars = max_chars.max(1);
    let bytes = text.as_bytes();
    let ascii = text.is_ascii();
    let mut out = Vec::new();
    let (mut pos_byte, mut pos_char, mut line) = (0usize, 0usize, 1usize);
    while pos_byte < bytes.len() {
        // The window: up to max_chars code points from pos.
        let (window_end, window_chars) = if ascii {
            let end = (pos_byte + max_chars).min(bytes.len());
            (end, end - pos_byte)
        } else {
            advance_chars(bytes, pos_byte, max_chars)
        };
        let (end_byte, chars) = if window_end < bytes.len() {
            match memchr::memrchr(b'\n', &bytes[pos_byte..window_end]) {
                Some(at) => {
                    let end = pos_byte + at + 1;
                    let chars = if ascii {
                        end - pos_byte
                    } else {
                        count_chars(&bytes[pos_byte..end])
                    };
                    (end, chars)
                }
                None => (window_end, window_chars),
            }
        } else {
            (window_end, window_chars)
        };
        let piece = &bytes[pos_byte..end_byte];
        let newlines = memchr::memchr_iter(b'\n', piece).count();
        let ends_with_newline = piece.last() == Some(&b'\n');
        let last_line = line + newlines - usize::from(ends_with_newline);
        out.push(Chunk {
            start: pos_char,
            end: pos_char + chars,
            start_byte: pos_byte,
            end_byte,
            first_line: line,
            last_line,
        });
        line += newlines;
        pos_byte = end_byte;
        pos_char += chars;
    }
    out
}

/// The byte `max_chars` code points after `from` (or the end), and how many code points that is.
fn advance_chars(bytes: &[u8], from: usize, max_chars: usize) -> (usize, usize) {
    let mut seen = 0usize;
    let mut at = from;
    while at < bytes.len() && seen < max_chars {
        at += utf8_len(bytes[at]);
        seen += 1;
    }
    (at.min(bytes.len()), seen)
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// The query's distinct terms, and each one's weight: how often it occurs in each part of the
/// query, times that part's weight.
struct QueryTerms {
    terms: Vec<(Vec<u8>, f64)>,
    /// Bit `n` set: some term is `n` bytes long (`n < 64`).
    lengths: u64,
    /// Some term is 64 bytes or longer.
    long_terms: bool,
    /// Each term as a [`packed`] key (0 for terms over 7 bytes: no key of a short word is 0).
    keys: Vec<u64>,
}

impl QueryTerms {
    fn new(parts: &[(&str, f64)]) -> Self {
        let mut found: Vec<(Vec<u8>, f64)> = Vec::new();
        for (part, weight) in parts {
            for term in terms(part) {
                let term = term.into_bytes();
                match found.iter_mut().find(|(known, _)| *known == term) {
                    Some((_, total)) => *total += weight,
                    None => found.push((term, *weight)),
                }
            }
        }
        found.retain(|(_, weight)| *weight > 0.0);
        let lengths = found
            .iter()
            .map(|(t, _)| if t.len() < 64 { 1u64 << t.len() } else { 0 })
            .fold(0, |a, b| a | b);
        let long_terms = found.iter().any(|(t, _)| t.len() >= 64);
        let keys = found
            .iter()
            .map(|(t, _)| if t.len() <= 7 { packed(t) } else { 0 })
            .collect();
        QueryTerms {
            terms: found,
            lengths,
            long_terms,
            keys,
        }
    }

    /// Whether a piece of `len` bytes can stem to a query term (stemming removes at most 3).
    #[inline]
    fn may_match(&self, len: usize) -> bool {
        if len >= 64 {
            return true;
        }
        let window = (1u64 << (len + 1)) - 1; // bits 0..=len
        let below = (1u64 << len.saturating_sub(3)) - 1; // bits 0..len-3
        self.lengths & (window & !below) != 0 || self.long_terms
    }

    #[inline]
    fn find(&self, term: &[u8]) -> Option<usize> {
        let len = term.len();
        if len < 64 && self.lengths & (1u64 << len) == 0 {
            return None;
        }
        if len <= 7 {
            let key = packed(term);
            return self.keys.iter().position(|&k| k == key);
        }
        self.terms.iter().position(|(t, _)| t.as_slice() == term)
    }
}

/// Per chunk: how many terms it has, and how often each query term occurs in it.
struct Counts {
    lengths: Vec<u32>,
    /// `chunks x query terms`, row-major.
    frequencies: Vec<u32>,
}

/// Stop words of `rank::terms` (sorted), as bytes; none is longer than [`STOP_MAX`].
const STOP_WORDS: &[&[u8]] = &[
    b"a", b"about", b"after", b"all", b"also", b"an", b"and", b"any", b"are", b"as", b"at", b"be",
    b"been", b"but", b"by", b"can", b"could", b"do", b"does", b"for", b"from", b"had", b"has",
    b"have", b"he", b"her", b"his", b"how", b"i", b"if", b"in", b"into", b"is", b"it", b"its",
    b"me", b"my", b"no", b"not", b"of", b"on", b"or", b"our", b"she", b"should", b"so", b"some",
    b"than", b"that", b"the", b"their", b"them", b"then", b"there", b"these", b"they", b"this",
    b"those", b"to", b"too", b"up", b"us", b"was", b"we", b"were", b"what", b"when", b"where",
    b"which", b"while", b"who", b"will", b"with", b"would", b"you", b"your",
];
const STOP_MAX: usize = 6;

/// `rank`'s suffix rule on a folded ASCII word.
fn stem(word: &mut Vec<u8>) {
    let len = word.len();
    if len <= 3 {
        return;
    }
    if len > 4 && word.ends_with(b"ies") {
        word.truncate(len - 3);
        word.push(b'y');
    } else if word.ends_with(b"sses") {
        word.truncate(len - 2);
    } else if word.ends_with(b"s")
        && !word.ends_with(b"ss")
        && !word.ends_with(b"us")
        && !word.ends_with(b"is")
    {
        word.truncate(len - 1);
    } else if len > 5 && word.ends_with(b"ing") {
        word.truncate(len - 3);
    } else if len > 4 && word.ends_with(b"ed") {
        word.truncate(len - 2);
    }
}

/// Counts the terms of one chunk: its length and the query terms' frequencies (into `row`).
struct Scanner<'q> {
    query: &'q QueryTerms,
    word: Vec<u8>,
    bounds: Vec<usize>,
}

impl<'q> Scanner<'q> {
    fn new(query: &'q QueryTerms) -> Self {
        Scanner {
            query,
            word: Vec::with_capacity(64),
            bounds: Vec::with_capacity(16),
        }
    }

    /// The number of terms of `text`; the frequency of each query term added to `row`.
    fn scan(&mut self, text: &str, row: &mut [u32]) -> u32 {
        let bytes = text.as_bytes();
        let mut length = 0u32;
        let mut at = 0usize;
        while at < bytes.len() {
            let byte = bytes[at];
            if byte < 0x80 && !byte.is_ascii_alphanumeric() {
                at += 1;
                continue;
            }
            if byte >= 0x80 && !char_at(text, at).is_some_and(char::is_alphanumeric) {
                at += utf8_len(byte);
                continue;
            }
            // A run of alphanumeric characters starts here.
            let start = at;
            let mut ascii = true;
            while at < bytes.len() {
                let b = bytes[at];
                if b < 0x80 {
                    if !b.is_ascii_alphanumeric() {
                        break;
                    }
                    at += 1;
                } else {
                    if !char_at(text, at).is_some_and(char::is_alphanumeric) {
                        break;
                    }
                    ascii = false;
                    at += utf8_len(b);
                }
            }
            if ascii {
                length = length.saturating_add(self.ascii_run(&bytes[start..at], row));
            } else {
                for term in terms(&text[start..at]) {
                    length = length.saturating_add(1);
                    if let Some(q) = self.query.find(term.as_bytes()) {
                        row[q] += 1;
                    }
                }
            }
        }
        length
    }

    /// The terms of a run of ASCII letters and digits (as `rank::terms` makes them).
    fn ascii_run(&mut self, run: &[u8], row: &mut [u32]) -> u32 {
        self.bounds.clear();
        self.bounds.push(0);
        for i in 1..run.len() {
            let (previous, current) = (run[i - 1], run[i]);
            let lower_to_upper = (previous.is_ascii_lowercase() || previous.is_ascii_digit())
                && current.is_ascii_uppercase();
            let acronym_end = previous.is_ascii_uppercase()
                && current.is_ascii_uppercase()
                && run.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            if lower_to_upper || acronym_end {
                self.bounds.push(i);
            }
        }
        self.bounds.push(run.len());
        let mut length = 0u32;
        for i in 0..self.bounds.len() - 1 {
            let (from, to) = (self.bounds[i], self.bounds[i + 1]);
            length += self.term(&run[from..to], row);
        }
        for i in 0..self.bounds.len().saturating_sub(2) {
            let (from, to) = (self.bounds[i], self.bounds[i + 2]);
            length += self.term(&run[from..to], row);
        }
        length
    }

    /// One piece: dropped if a stop word (0), else counted (1) and, when its length allows a
    /// query term, folded, stemmed and matched.
    #[inline]
    fn term(&mut self, piece: &[u8], row: &mut [u32]) -> u32 {
        let len = piece.len();
        if len <= STOP_MAX && is_stop_word(piece) {
            return 0;
        }
        if self.query.may_match(len) {
            self.word.clear();
            self.word.extend(piece.iter().map(u8::to_ascii_lowercase));
            stem(&mut self.word);
            if let Some(q) = self.query.find(&self.word) {
                row[q] += 1;
            }
        }
        1
    }
}

/// A word of at most 7 bytes as one integer: its bytes, and its length in the top byte.
#[inline]
fn packed(word: &[u8]) -> u64 {
    let mut key = (word.len() as u64) << 56;
    for (i, byte) in word.iter().enumerate().take(7) {
        key |= u64::from(*byte) << (8 * i);
    }
    key
}

/// The stop words as [`packed`] keys, sorted.
fn stop_keys() -> &'static [u64] {
    static KEYS: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys: Vec<u64> = STOP_WORDS.iter().map(|w| packed(w)).collect();
        keys.sort_unstable();
        keys
    })
}

/// Whether an ASCII piece folds to a stop word.
#[inline]
fn is_stop_word(piece: &[u8]) -> bool {
    let mut folded = [0u8; STOP_MAX];
    let len = piece.len();
    if len > STOP_MAX {
        return false;
    }
    for (out, byte) in folded.iter_mut().zip(piece) {
        *out = byte.to_ascii_lowercase();
    }
    stop_keys().binary_search(&packed(&folded[..len])).is_ok()
}

fn char_at(text: &str, at: usize) -> Option<char> {
    text.get(at..).and_then(|rest| rest.chars().next())
}

fn count_range(text: &str, chunks: &[Chunk], query: &QueryTerms, out: &mut Counts) {
    let width = query.terms.len();
    let mut scanner = Scanner::new(query);
    for (i, chunk) in chunks.iter().enumerate() {
        let row = &mut out.frequencies[i * width..(i + 1) * width];
        let piece = text.get(chunk.start_byte..chunk.end_byte).unwrap_or("");
        out.lengths[i] = scanner.scan(piece, row);
    }
}

fn count(text: &str, chunks: &[Chunk], query: &QueryTerms) -> Counts {
    let width = query.terms.len();
    let empty = |n: usize| Counts {
        lengths: vec![0; n],
        frequencies: vec![0; n * width],
    };
    let threads = thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || text.len() < PARALLEL_MIN_BYTES || chunks.len() < 2 {
        let mut counts = empty(chunks.len());
        count_range(text, chunks, query, &mut counts);
        return counts;
    }
    let half = chunks.len() / 2;
    let (first, second) = chunks.split_at(half);
    let mut a = empty(first.len());
    let b = thread::scope(|scope| {
        let spawned = thread::Builder::new().spawn_scoped(scope, || {
            let mut b = empty(second.len());
            count_range(text, second, query, &mut b);
            b
        });
        count_range(text, first, query, &mut a);
        match spawned {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // The OS refused the thread: its half is counted here.
            Err(_) => {
                let mut b = empty(second.len());
                count_range(text, second, query, &mut b);
                b
            }
        }
    });
    a.lengths.extend_from_slice(&b.lengths);
    a.frequencies.extend_from_slice(&b.frequencies);
    a
}

/// BM25 scores of `chunks` of `text` for `query`, divided by the best (the best 1; all 0 when no
/// chunk holds a query term): [`crate::rank::Index::scores`] of the chunk texts.
pub fn scores(query: &str, text: &str, chunks: &[Chunk]) -> Vec<f64> {
    weighted_scores(&[(query, 1.0)], text, chunks)
}

/// The scores of [`scores`] for a query made of a question and a tool call's input, the input's
/// terms weighing less: the input as a whole counts as one term of the question (each of its `n`
/// term occurrences weighs `1/n`; a term in both parts weighs its question count plus its input
/// share). The question says what is asked; the input names what was fetched, which the whole
/// result is about (a URL, a path, a table), so its words mostly match the result's header, and
/// without this a header holding every word of the input outranks the part the question asks
/// about. With no question term, the input's terms alone rank the chunks (as in [`scores`]).
pub fn question_and_input_scores(
    question: &str,
    tool_input: &str,
    text: &str,
    chunks: &[Chunk],
) -> Vec<f64> {
    let input_terms = terms(tool_input).len();
    let weight = if input_terms == 0 {
        0.0
    } else {
        1.0 / input_terms as f64
    };
    weighted_scores(&[(question, 1.0), (tool_input, weight)], text, chunks)
}

/// BM25 scores for a query of weighted parts (each term's query frequency is the sum over the
/// parts of its count times the part's weight), divided by the best.
fn weighted_scores(parts: &[(&str, f64)], text: &str, chunks: &[Chunk]) -> Vec<f64> {
    let query = QueryTerms::new(parts);
    let mut scores = vec![0.0; chunks.len()];
    if chunks.is_empty() || query.terms.is_empty() {
        return scores;
    }
    let counts = count(text, chunks, &query);
    let width = query.terms.len();
    let documents = chunks.len() as f64;
    let total: f64 = counts.lengths.iter().map(|&l| f64::from(l)).sum();
    let average = if total > 0.0 { total / documents } else { 1.0 };
    for (q, (_, query_frequency)) in query.terms.iter().enumerate() {
        let containing = (0..chunks.len())
            .filter(|&i| counts.frequencies[i * width + q] > 0)
            .count() as f64;
        if containing == 0.0 {
            continue;
        }
        let idf = (1.0 + (documents - containing + 0.5) / (containing + 0.5)).ln();
        let weight = idf * *query_frequency;
        for (i, score) in scores.iter_mut().enumerate() {
            let frequency = counts.frequencies[i * width + q];
            if frequency == 0 {
                continue;
            }
            let tf = f64::from(frequency);
            let norm = K1 * (1.0 - B + B * f64::from(counts.lengths[i]) / average);
            *score += weight * tf * (K1 + 1.0) / (tf + norm);
        }
    }
    let best = scores.iter().copied().fold(0.0_f64, f64::max);
    if best > 0.0 {
        for score in &mut scores {
            *score /= best;
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::Index;
    use crate::test_rng::Rng;

    fn texts<'a>(text: &'a str, chunks: &[Chunk]) -> Vec<&'a str> {
        chunks
            .iter()
            .map(|c| &text[c.start_byte..c.end_byte])
            .collect()
    }

    #[test]
    fn chunks_concatenate_back_and_end_after_newlines() {
        let text = "alpha\nbeta gamma\ndelta\nepsilon zeta eta theta\n";
        let found = chunks(text, 12);
        assert_eq!(texts(text, &found).concat(), text);
        assert_eq!(
            texts(text, &found),
            [
                "alpha\n",
                "beta gamma\n",
                "delta\n",
                "epsilon zeta",
                " eta theta\n"
            ]
        );
        let lines: Vec<(usize, usize)> =
            found.iter().map(|c| (c.first_line, c.last_line)).collect();
        assert_eq!(lines, [(1, 1), (2, 2), (3, 3), (4, 4), (4, 4)]);
        assert!(chunks("", 10).is_empty());
    }

    #[test]
    fn chunks_count_code_points() {
        let text = "ééé\nüü\nxyz";
        let found = chunks(text, 4);
        assert_eq!(texts(text, &found), ["ééé\n", "üü\n", "xyz"]);
        assert_eq!((found[1].start, found[1].end), (4, 7));
        assert_eq!((found[2].first_line, found[2].last_line), (3, 3));
    }

    #[test]
    fn scores_match_the_rank_index() {
        let mut rng = Rng::new(42);
        let words = [
            "getFileContents",
            "HTTPServer",
            "user_id",
            "files",
            "listing",
            "the",
            "Über",
            "naïve",
            "status",
            "ERROR",
            "timeout",
            "GitHub",
            "s3",
            "42",
            "café",
            "résumé",
            "repositories",
            "passes",
            "pushed",
            "x",
            "API",
            "IDs",
            "{",
            "\"name\":",
            "\n",
        ];
        for round in 0..200 {
            let mut text = String::new();
            for _ in 0..(rng.below(400) + 1) {
                text.push_str(words[rng.below(words.len())]);
                text.push(if rng.below(5) == 0 { '\n' } else { ' ' });
            }
            let mut query = String::new();
            for _ in 0..(rng.below(6) + 1) {
                query.push_str(words[rng.below(words.len())]);
                query.push(' ');
            }
            let size = rng.below(200) + 1;
            let found = chunks(&text, size);
            let expected = Index::build(&texts(&text, &found)).scores(&query);
            let got = scores(&query, &text, &found);
            assert_eq!(got.len(), expected.len());
            for (a, b) in got.iter().zip(&expected) {
                assert!(
                    (a - b).abs() < 1e-9,
                    "round {round}: {got:?} vs {expected:?}"
                );
            }
        }
    }

    #[test]
    #[ignore = "timing, run by hand"]
    fn timing_of_a_large_text() {
        let mut text = String::new();
        for i in 0..300_000 {
            text.push_str(&format!("  {{\n    \"id\": {i},\n    \"email\": \"u{i}@example.com\",\n    \"status\": \"active\"\n  }},\n"));
        }
        let started = std::time::Instant::now();
        let found = chunks(&text, 1000);
        let chunked = started.elapsed();
        let got = scores("what is the email of user 51234 status", &text, &found);
        eprintln!(
            "{} MB: chunks {:?}, scores {:?}, {}",
            text.len() / 1_000_000,
            chunked,
            started.elapsed(),
            got.len()
        );
    }

    #[test]
    fn a_question_term_outweighs_the_tool_input_terms() {
        // The page's title holds every word of the URL it was fetched from; the question's words
        // are in one section only.
        let mut text = String::from("# R7 Service Manual (docs.example.com)\n");
        for i in 0..40 {
            text.push_str(&format!("## Section {i}\nUse part XR-{i}; keep it dry.\n"));
        }
        text.push_str("## Replacing the pump\nUse part XR-99; keep it dry.\n");
        for i in 40..80 {
            text.push_str(&format!("## Section {i}\nUse part XR-{i}; keep it dry.\n"));
        }
        let found = chunks(&text, 64);
        let question = "What is required for replacing the pump?";
        let input = r#"{"url": "https://docs.example.com/r7/service-manual"}"#;
        let pump = found
            .iter()
            .position(|c| text[c.start_byte..c.end_byte].contains("Replacing the pump"))
            .unwrap_or(usize::MAX);
        // As one query, the title wins and the section falls under half of it.
        let plain = scores(&format!("{question}\n{input}"), &text, &found);
        assert_eq!(plain[0], 1.0);
        assert!(plain[pump] < 0.5, "{plain:?}");
        // Weighed apart, the section is the best and the title under half of it.
        let got = question_and_input_scores(question, input, &text, &found);
        assert_eq!(got[pump], 1.0);
        assert!(got[0] < 0.5, "{got:?}");
        // One part alone ranks as it does by itself.
        let alone = scores(question, &text, &found);
        let empty_input = question_and_input_scores(question, "", &text, &found);
        let input_only = question_and_input_scores("", input, &text, &found);
        for (a, b) in alone.iter().zip(&empty_input) {
            assert!((a - b).abs() < 1e-12);
        }
        for (a, b) in scores(input, &text, &found).iter().zip(&input_only) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn no_shared_term_is_all_zero() {
        let text = "one two\nthree four\n";
        let found = chunks(text, 8);
        assert_eq!(scores("zebra", text, &found), vec![0.0; found.len()]);
        assert_eq!(scores("", text, &found), vec![0.0; found.len()]);
    }

    #[test]
    fn long_texts_score_on_two_threads_as_on_one() {
        let mut text = String::new();
        for i in 0..40_000 {
            text.push_str(&format!(
                "{{\"id\": {i}, \"name\": \"user{i}\", \"status\": \"ok\"}}\n"
            ));
        }
        text.push_str("{\"id\": -1, \"name\": \"needle\", \"status\": \"failed\"}\n");
        let found = chunks(&text, 1000);
        let got = scores("failed needle", &text, &found);
        let expected = Index::build(&texts(&text, &found)).scores("failed needle");
        assert_eq!(got.len(), expected.len());
        assert_eq!(got[found.len() - 1], 1.0);
        for (a, b) in got.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-9);
        }
    }
}
