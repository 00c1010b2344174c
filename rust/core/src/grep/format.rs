//! The search: scope, matching lines, visible windows, numbered body and budget.
//!
//! Output is built lazily: once the body is known to exceed the budget, nothing
//! more is formatted, so a listing of a 10 MB text costs time in proportion to the
//! budget (plus the line index, built once per text).

use std::io::Write;

use super::fresh::found_in_scope;
use super::{GrepError, Matcher, TextIndex};

/// The lines a request is limited to, checked by the caller against the text
/// (`first <= last < line count`), with the label a search shows for them.
#[derive(Debug, Clone, Copy)]
pub struct LineSpan<'a> {
    /// First line, 0-based.
    pub first: usize,
    /// Last line, 0-based, inclusive.
    pub last: usize,
    /// Shown after a search's match count (`" in lines 3-9"`).
    pub label: &'a str,
}

/// One search or page request.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The pattern as the caller wrote it (UTF-8 or WTF-8) and its compiled form;
    /// `None` for a listing of the scope.
    pub pattern: Option<(&'a [u8], &'a Matcher)>,
    pub line_span: Option<LineSpan<'a>>,
    /// Lines of context on each side of a match (negative means 0).
    pub context_lines: i64,
    /// Character budget of the body (negative behaves like a Python negative slice end).
    pub max_chars: i64,
}

const EMPTY: &str = "Content is empty (0 lines).";
const TRUNCATED_SEARCH: &str = "output truncated, narrow your search";
const TRUNCATED_RANGE: &str = "output truncated, narrow your range";

fn is_char_start(b: u8) -> bool {
    b & 0xC0 != 0x80
}

fn count_chars(s: &[u8]) -> usize {
    s.iter().filter(|&&b| is_char_start(b)).count()
}

/// Byte length of the first `n` code points of `s` (all of `s` if shorter), and
/// how many code points that is.
fn prefix_chars(s: &[u8], n: usize) -> (usize, usize) {
    if s.len() <= n {
        return (s.len(), count_chars(s));
    }
    let mut seen = 0;
    for (i, &b) in s.iter().enumerate() {
        if is_char_start(b) {
            if seen == n {
                return (i, n);
            }
            seen += 1;
        }
    }
    (s.len(), seen)
}

/// The body under construction, keeping at most `max_chars + 1` code points when
/// the budget is non-negative (enough to know it was exceeded).
struct Body {
    out: Vec<u8>,
    chars: usize,
    keep: Option<usize>,
}

impl Body {
    fn new(max_chars: i64) -> Body {
        let keep = usize::try_from(max_chars).ok().map(|m| m.saturating_add(1));
        Body {
            out: Vec::new(),
            chars: 0,
            keep,
        }
    }

    /// Appends `s`; returns false once the budget is exceeded (stop writing).
    fn push(&mut self, s: &[u8]) -> bool {
        match self.keep {
            None => {
                crate::alloc::extend(&mut self.out, s);
                self.chars += count_chars(s);
                true
            }
            Some(keep) => {
                let room = keep.saturating_sub(self.chars);
                let (bytes, n) = prefix_chars(s, room);
                crate::alloc::extend(&mut self.out, &s[..bytes]);
                self.chars += n;
                self.chars < keep
            }
        }
    }

    /// Applies the budget: cut at the last `"\n"` before code point `max_chars` when
    /// there is one past position 0, else hard at `max_chars`, then the notice.
    fn finish(self, max_chars: i64, notice: &str) -> Vec<u8> {
        let total = self.chars as i64;
        if total <= max_chars {
            return self.out;
        }
        // Python slice semantics for a negative end.
        let end_chars = if max_chars >= 0 {
            max_chars as usize
        } else {
            (total + max_chars).max(0) as usize
        };
        let (end_byte, _) = prefix_chars(&self.out, end_chars);
        let cut = match memchr::memrchr(b'\n', &self.out[..end_byte]) {
            Some(p) if p > 0 => p,
            _ => end_byte,
        };
        let mut out = self.out;
        out.truncate(cut);
        crate::alloc::extend(&mut out, b"\n\n[");
        crate::alloc::extend(&mut out, notice.as_bytes());
        crate::alloc::push(&mut out, b']');
        out
    }
}

fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// Writes `{marker} {number right-aligned}| {line}` for each visible line, joined by
/// `"\n"`, with `---` between runs that are not adjacent. `runs` are inclusive,
/// ascending, non-overlapping, non-adjacent line spans; `matched` is ascending;
/// numbers are padded to `width` digits.
fn write_body<S: AsRef<[u8]>>(
    body: &mut Body,
    index: &TextIndex<S>,
    runs: &[(usize, usize)],
    matched: &[usize],
    width: usize,
) {
    if runs.is_empty() {
        return;
    }
    let mut next_match = matched.iter().peekable();
    let mut prefix = Vec::with_capacity(width + 4);
    let mut first = true;
    for &(a, b) in runs {
        if !first && !body.push(b"\n---") {
            return;
        }
        let mut start = index.line_start(a);
        for i in a..=b {
            let end = index.line_end_from(start);
            let line = &index.bytes()[start..end];
            start = end + 1;
            while next_match.next_if(|&&m| m < i).is_some() {}
            let marker = if next_match.peek() == Some(&&i) {
                '>'
            } else {
                ' '
            };
            prefix.clear();
            if !first {
                prefix.push(b'\n');
            }
            first = false;
            // Writing to a Vec cannot fail.
            let _ = write!(prefix, "{marker} {:>width$}| ", i + 1);
            if !body.push(&prefix) || !body.push(line) {
                return;
            }
        }
    }
}

/// The pattern as the header shows it: `"\n"`, `"\r"`, `/` and `]` become spaces,
/// then the first 50 code points.
fn display_pattern(pattern: &[u8]) -> Vec<u8> {
    let (bytes, _) = prefix_chars(pattern, 50);
    pattern[..bytes]
        .iter()
        .map(|&b| match b {
            b'\n' | b'\r' | b'/' | b']' => b' ',
            other => other,
        })
        .collect()
}

/// Runs one request against an indexed text and returns the reference's output
/// (UTF-8, or WTF-8 when the text or pattern held lone surrogates).
pub fn search<S: AsRef<[u8]>>(
    index: &TextIndex<S>,
    query: &Query<'_>,
) -> Result<Vec<u8>, GrepError> {
    respond(index, query, None)
}

/// Matching lines of the whole text found beforehand (by a search that followed the
/// indexing read): the first ones, how many there are, and the last one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Found {
    /// The first matching lines, ascending: at least [`lines_to_fill`] of them.
    pub first_lines: Vec<usize>,
    pub total: usize,
    /// The last matching line (its number sets the width of every number shown).
    pub last_line: usize,
}

/// How many matching lines fill a body of `max_chars`: each is printed as a line of
/// at least five characters (`"> "`, a digit, `"| "`), so lines past this many are
/// never written. All of them for a negative budget (cut from the end).
pub(crate) fn lines_to_fill(max_chars: i64) -> usize {
    usize::try_from(max_chars).map_or(usize::MAX, |m| {
        m.saturating_add(1).div_ceil(5).saturating_add(1)
    })
}

/// [`search`], with the matching lines of the whole text found beforehand when
/// `found` is given.
pub(crate) fn respond<S: AsRef<[u8]>>(
    index: &TextIndex<S>,
    query: &Query<'_>,
    found: Option<Found>,
) -> Result<Vec<u8>, GrepError> {
    if index.is_empty() {
        return Ok(EMPTY.as_bytes().to_vec());
    }
    let total = index.line_count();
    let mut first = 0usize;
    let mut last = total - 1;
    if let Some(span) = &query.line_span {
        // Checked by the caller; kept inside the text all the same.
        last = span.last.min(last);
        first = span.first.min(last);
    }
    let context = usize::try_from(query.context_lines.max(0)).unwrap_or(usize::MAX);

    match query.pattern {
        Some((pattern, matcher)) => {
            let label = query.line_span.map_or("", |span| span.label);
            let Found {
                first_lines: matched,
                total: n,
                last_line,
            } = match found {
                Some(found) => found,
                None => match found_in_scope(
                    index,
                    matcher,
                    first,
                    last,
                    lines_to_fill(query.max_chars),
                ) {
                    Some(found) => found,
                    None => {
                        let lines = matcher.matching_lines(index, first, last)?;
                        Found {
                            total: lines.len(),
                            last_line: lines.last().copied().unwrap_or(0),
                            first_lines: lines,
                        }
                    }
                },
            };
            if n == 0 {
                let mut out = b"No matches found for pattern '".to_vec();
                crate::alloc::extend(&mut out, pattern);
                let _ = write!(out, "'{label} (searched {} lines).", last - first + 1);
                return Ok(out);
            }
            // Merge the context windows into runs.
            let mut runs: Vec<(usize, usize)> = Vec::new();
            for &m in &matched {
                let a = m.saturating_sub(context).max(first);
                let b = m.saturating_add(context).min(last);
                match runs.last_mut() {
                    Some(run) if a <= run.1.saturating_add(1) => run.1 = run.1.max(b),
                    _ => runs.push((a, b)),
                }
            }
            // The last run ends `context` lines after the last match (within scope).
            let width = digits(last_line.saturating_add(context).min(last) + 1);
            let mut out = format!("[{n} match{} for /", if n > 1 { "es" } else { "" }).into_bytes();
            crate::alloc::extend(&mut out, &display_pattern(pattern));
            let _ = write!(out, "/{label}]\n\n");
            let mut body = Body::new(query.max_chars);
            write_body(&mut body, index, &runs, &matched, width);
            crate::alloc::extend(&mut out, &body.finish(query.max_chars, TRUNCATED_SEARCH));
            Ok(out)
        }
        None => {
            let mut out = format!("[Lines {}-{} of {total}]\n\n", first + 1, last + 1).into_bytes();
            let mut body = Body::new(query.max_chars);
            write_body(&mut body, index, &[(first, last)], &[], digits(last + 1));
            crate::alloc::extend(&mut out, &body.finish(query.max_chars, TRUNCATED_RANGE));
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grep::MatcherSpec;

    fn literal(p: &str) -> Matcher {
        Matcher::compile(MatcherSpec::Literal(p.as_bytes().to_vec())).unwrap()
    }

    /// A search of `text`; `range` is 1-based and inclusive, already valid
    /// (the caller checks ranges), its end clamped to the text.
    fn run(
        text: &str,
        pattern: Option<&str>,
        range: Option<(usize, usize)>,
        ctx: i64,
        max: i64,
    ) -> Result<String, GrepError> {
        let idx = TextIndex::new(text).unwrap();
        let m = pattern.map(literal);
        let total = idx.line_count();
        let label = range.map(|(s, e)| format!(" in lines {s}-{}", e.min(total)));
        let q = Query {
            pattern: pattern.zip(m.as_ref()).map(|(p, m)| (p.as_bytes(), m)),
            line_span: range.zip(label.as_deref()).map(|((s, e), label)| LineSpan {
                first: s - 1,
                last: e.min(total).saturating_sub(1),
                label,
            }),
            context_lines: ctx,
            max_chars: max,
        };
        search(&idx, &q).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn empty_text_ignores_the_span() {
        assert_eq!(run("", None, Some((1, 5)), 5, 10).unwrap(), EMPTY);
    }

    #[test]
    fn listing_pads_numbers_to_the_widest() {
        let text: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let out = run(&text, None, Some((8, 99)), 0, 10_000).unwrap();
        assert_eq!(
            out,
            "[Lines 8-13 of 13]\n\n   8| l8\n   9| l9\n  10| l10\n  11| l11\n  12| l12\n  13| "
        );
    }

    #[test]
    fn matches_get_markers_windows_and_separators() {
        let text = "x\na\nb\nc\nd\ne\nx\nf";
        let out = run(text, Some("x"), None, 1, 10_000).unwrap();
        assert_eq!(
            out,
            "[2 matches for /x/]\n\n> 1| x\n  2| a\n---\n  6| e\n> 7| x\n  8| f"
        );
        let out = run(text, Some("x"), Some((2, 100)), 0, 10_000).unwrap();
        assert_eq!(out, "[1 match for /x/ in lines 2-8]\n\n> 7| x");
        let out = run(text, Some("zz/]"), Some((2, 3)), 0, 10_000).unwrap();
        assert_eq!(
            out,
            "No matches found for pattern 'zz/]' in lines 2-3 (searched 2 lines)."
        );
    }

    #[test]
    fn budget_cuts_at_last_newline_before_the_limit() {
        let text = "aaaa\nbbbb\ncccc";
        // body: "  1| aaaa\n  2| bbbb\n  3| cccc" (29 code points)
        let out = run(text, None, None, 0, 29).unwrap();
        assert!(out.ends_with("cccc"));
        let out = run(text, None, None, 0, 20).unwrap();
        assert_eq!(
            out,
            "[Lines 1-3 of 3]\n\n  1| aaaa\n  2| bbbb\n\n[output truncated, narrow your range]"
        );
        // No newline before the limit: hard cut.
        let out = run(text, None, None, 0, 4).unwrap();
        assert_eq!(
            out,
            "[Lines 1-3 of 3]\n\n  1|\n\n[output truncated, narrow your range]"
        );
        // Zero budget keeps nothing of the body.
        let out = run(text, None, None, 0, 0).unwrap();
        assert_eq!(
            out,
            "[Lines 1-3 of 3]\n\n\n\n[output truncated, narrow your range]"
        );
    }

    #[test]
    fn negative_budget_slices_from_the_end_like_python() {
        let text = "aaaa\nbbbb\ncccc";
        // Body is 29 code points; -10 keeps the first 19 and cuts at the "\n" at 9.
        let out = run(text, None, None, 0, -10).unwrap();
        assert_eq!(
            out,
            "[Lines 1-3 of 3]\n\n  1| aaaa\n\n[output truncated, narrow your range]"
        );
        let out = run(text, None, None, 0, -1000).unwrap();
        assert_eq!(
            out,
            "[Lines 1-3 of 3]\n\n\n\n[output truncated, narrow your range]"
        );
    }

    #[test]
    fn budget_counts_code_points() {
        let text = "ééééé\nb";
        // body "  1| ééééé\n  2| b": 17 code points, 22 bytes.
        assert!(!run(text, None, None, 0, 17).unwrap().contains("truncated"));
        assert!(run(text, None, None, 0, 16).unwrap().contains("truncated"));
    }

    #[test]
    fn header_pattern_is_cleaned_and_cut() {
        let p = format!("a/b]c\r{}", "x".repeat(100));
        let text = format!("{p}\n");
        let out = run(&text, Some(&p), None, 0, 10_000).unwrap();
        let head = out.lines().next().unwrap();
        assert_eq!(head, format!("[1 match for /a b c {}/]", "x".repeat(44)));
    }
}
