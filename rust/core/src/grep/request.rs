//! One grep or page request: its scope, the matching lines (found beforehand by
//! a search that followed the indexing read, or now), the visible windows around
//! them, and the answer the reference gives, byte for byte.

use std::io::Write;

use super::format::{
    digits, display_pattern, lines_to_fill, write_body, Body, EMPTY, TRUNCATED_RANGE,
    TRUNCATED_SEARCH,
};
use super::fresh::{found_in_scope, index_following, Found};
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

/// Runs one request against an indexed text and returns the reference's output
/// (UTF-8, or WTF-8 when the text or pattern held lone surrogates).
pub fn search<S: AsRef<[u8]>>(
    index: &TextIndex<S>,
    query: &Query<'_>,
) -> Result<Vec<u8>, GrepError> {
    respond(index, query, None)
}

/// Indexes `data` (UTF-8) and answers `query` on it. Searches over the whole text
/// with a whole-buffer engine follow the read; anything else indexes first.
pub fn search_fresh(data: &[u8], query: &Query<'_>) -> Result<Vec<u8>, GrepError> {
    if let (Some((_, matcher)), None) = (query.pattern, query.line_span) {
        if let Some((index, found)) =
            index_following(data, matcher, lines_to_fill(query.max_chars))?
        {
            return respond(&index, query, Some(found));
        }
    }
    respond(&TextIndex::new(data)?, query, None)
}

/// [`search`], with the matching lines of the whole text found beforehand when
/// `found` is given.
fn respond<S: AsRef<[u8]>>(
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
                    _ => crate::alloc::push(&mut runs, (a, b)),
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
