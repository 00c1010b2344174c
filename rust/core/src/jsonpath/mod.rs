//! JSON queries on stored JSON: parse the bytes once, select with a JSONPath
//! subset, and write the matches as `json.dumps(matches, indent=2)` would.
//!
//! - [`document`]: the parser (what `json.loads` accepts, Python's error messages).
//! - [`query`]: the query language and its parser.
//! - [`eval`]: which values a query selects.
//! - this module: the matches written with [`crate::json::JsonWriter`]
//!   (numbers keep their text as stored, strings are re-escaped the
//!   `ensure_ascii` way) and the model-facing result text.
use std::fmt;

pub mod document;
pub mod eval;
pub mod query;

use crate::json::{JsonWriter, Layout, Units};
pub use document::ErrorWording;
use document::{decode_escaped, Document, DocumentError, Kind};
use eval::{children, SelectLimit, MAX_SELECTED, MAX_STEPS, NO_KEY};
use query::QueryError;

/// Why a query could not be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonQueryError {
    /// The stored bytes are not JSON.
    Document(DocumentError),
    /// The query does not parse.
    Query(QueryError),
    /// The query selects more than [`MAX_SELECTED`] values.
    TooManyMatches,
    /// The query needs more than [`MAX_STEPS`] units of work on this document.
    TooMuchWork,
}

impl fmt::Display for JsonQueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonQueryError::Document(e) => write!(f, "stored content is not valid JSON: {e}"),
            JsonQueryError::Query(e) => e.fmt(f),
            JsonQueryError::TooManyMatches => write!(
                f,
                "query selects more than {MAX_SELECTED} values; narrow it"
            ),
            JsonQueryError::TooMuchWork => write!(
                f,
                "query needs more than {MAX_STEPS} steps on this content (its cost grows with \
                 every descendant segment and filter term); narrow it"
            ),
        }
    }
}

impl std::error::Error for JsonQueryError {}

impl From<SelectLimit> for JsonQueryError {
    fn from(limit: SelectLimit) -> Self {
        match limit {
            SelectLimit::TooManyMatches => JsonQueryError::TooManyMatches,
            SelectLimit::TooMuchWork => JsonQueryError::TooMuchWork,
        }
    }
}

/// Appended to a result cut at the character budget.
pub const TRUNCATION_NOTE: &str = "\n\n[output truncated, narrow your query]";

/// Write the JSON array of `matches` in `indent=2` layout into `out`, and
/// stop soon after `out` passes `cap` bytes (the text is then incomplete).
/// Returns false when it stopped early.
pub fn write_matches(doc: &Document<'_>, matches: &[u32], cap: usize, out: &mut Vec<u8>) -> bool {
    let mut w = JsonWriter::new(std::mem::take(out), Layout::spaces(2));
    let complete = write_array(doc, matches, cap, &mut w);
    *out = w.into_sink();
    complete
}

fn write_scalar(doc: &Document<'_>, node: u32, w: &mut JsonWriter<Vec<u8>>) {
    let n = doc.node(node);
    match n.kind {
        Kind::Null => w.null(),
        Kind::True => w.boolean(true),
        Kind::False => w.boolean(false),
        Kind::Number => w.raw(doc.text_of(n).as_bytes()),
        Kind::String => write_string(doc, node, w),
        Kind::Array => w.empty_array(),
        Kind::Object => w.empty_object(),
    }
}

fn write_string(doc: &Document<'_>, node: u32, w: &mut JsonWriter<Vec<u8>>) {
    let n = doc.node(node);
    if n.flag {
        w.string_units(Units::Ucs4(&decode_escaped(doc.text_of(n))));
    } else {
        w.string(doc.text_of(n));
    }
}

fn write_array(
    doc: &Document<'_>,
    matches: &[u32],
    cap: usize,
    w: &mut JsonWriter<Vec<u8>>,
) -> bool {
    if matches.is_empty() {
        w.empty_array();
        return true;
    }
    // Child lists of open containers stacked in one buffer; frames hold
    // (start of the list, next position, is an object).
    let mut lists: Vec<(u32, u32)> = crate::alloc::vec_with_capacity(matches.len());
    crate::alloc::extend_iter(&mut lists, matches.iter().map(|&m| (NO_KEY, m)));
    let mut frames: Vec<(usize, usize, bool)> = vec![(0, 0, false)];
    w.begin_array();
    while let Some(frame) = frames.last_mut() {
        let (begin, pos, object) = *frame;
        if pos == lists.len() {
            if object {
                w.end_object();
            } else {
                w.end_array();
            }
            lists.truncate(begin);
            frames.pop();
            continue;
        }
        if w.sink().len() > cap {
            return false;
        }
        frame.1 += 1;
        let (key, value) = lists[pos];
        w.item(pos == begin);
        if key != NO_KEY {
            write_string(doc, key, w);
            w.colon();
        }
        let n = doc.node(value);
        if matches!(n.kind, Kind::Array | Kind::Object) && n.a > 0 {
            let at = lists.len();
            children(doc, value, &mut lists);
            if n.kind == Kind::Object {
                w.begin_object();
            } else {
                w.begin_array();
            }
            crate::alloc::push(&mut frames, (at, at, n.kind == Kind::Object));
        } else {
            write_scalar(doc, value, w);
        }
    }
    true
}

/// Parse `data`, run `query`, and return the selected values as the text
/// of `json.dumps(matches, indent=2)` (complete, no budget), with their count.
pub fn query_json(data: &[u8], query: &str) -> Result<(usize, String), JsonQueryError> {
    let parsed = query::parse(query).map_err(JsonQueryError::Query)?;
    let doc = Document::parse(data).map_err(JsonQueryError::Document)?;
    let matches = eval::select(&doc, &parsed)?;
    let mut out = Vec::new();
    write_matches(&doc, &matches, usize::MAX, &mut out);
    Ok((matches.len(), ascii_text(out)))
}

/// The retrieval tool's answer to `query` on stored JSON `data`.
///
/// A header (`[1 match for Q]`, `[N matches for Q]`), a blank line and the
/// matches as an indented JSON array; `No matches for query 'Q'.` when
/// nothing matches. A body longer than `max_chars` code points is cut at the
/// last line break before `max_chars` and followed by [`TRUNCATION_NOTE`].
pub fn query_result_text(
    data: &[u8],
    query: &str,
    max_chars: usize,
) -> Result<String, JsonQueryError> {
    query_result_text_worded(data, query, max_chars, ErrorWording::Classic)
}

/// [`query_result_text`] with document errors worded as `wording` says (the CPython whose
/// `json.loads` the caller mirrors).
pub fn query_result_text_worded(
    data: &[u8],
    query: &str,
    max_chars: usize,
    wording: ErrorWording,
) -> Result<String, JsonQueryError> {
    let parsed = query::parse(query).map_err(JsonQueryError::Query)?;
    let doc = Document::parse_worded(data, wording).map_err(JsonQueryError::Document)?;
    let matches = eval::select(&doc, &parsed)?;
    if matches.is_empty() {
        return Ok(format!("No matches for query '{query}'."));
    }
    let noun = if matches.len() == 1 {
        "match"
    } else {
        "matches"
    };
    let mut body = Vec::new();
    // The body is ASCII (ensure_ascii escaping, space indents): bytes are code points.
    let complete = write_matches(&doc, &matches, max_chars, &mut body);
    let truncated = !complete || body.len() > max_chars;
    if truncated {
        let head = &body[..max_chars.min(body.len())];
        let cut = head.iter().rposition(|&b| b == b'\n').unwrap_or(head.len());
        body.truncate(cut);
    }
    let header = format!("[{} {noun} for {query}]\n\n", matches.len());
    let mut text = crate::alloc::string_with_capacity(
        header.len() + body.len() + if truncated { TRUNCATION_NOTE.len() } else { 0 },
    );
    text.push_str(&header);
    text.push_str(&ascii_text(body));
    if truncated {
        text.push_str(TRUNCATION_NOTE);
    }
    Ok(text)
}

/// The writer's output as a `String` without a copy (it is ASCII, written with
/// `ensure_ascii`; anything else would be replaced as `from_utf8_lossy` does).
fn ascii_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(doc: &str, query: &str) -> String {
        query_json(doc.as_bytes(), query)
            .map(|r| r.1)
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn basic_selection_and_layout() {
        let doc = r#"{"items": [{"name": "a", "n": 1}, {"name": "b\u00e9", "n": 2.50}], "x": NaN}"#;
        assert_eq!(q(doc, "$.items[1].name"), "[\n  \"b\\u00e9\"\n]");
        assert_eq!(q(doc, "$.items[-1].n"), "[\n  2.50\n]");
        assert_eq!(q(doc, "$..name"), "[\n  \"a\",\n  \"b\\u00e9\"\n]");
        assert_eq!(q(doc, "$.x"), "[\n  NaN\n]");
        assert_eq!(q(doc, "$.items[?(@.n > 1)].name"), "[\n  \"b\\u00e9\"\n]");
        assert_eq!(
            q(doc, "$.items[0]"),
            "[\n  {\n    \"name\": \"a\",\n    \"n\": 1\n  }\n]"
        );
        assert_eq!(q(doc, "$.nothing"), "[]");
    }

    #[test]
    fn filter_logic() {
        let doc = r#"[{"a": 1, "b": 0}, {"a": 0, "b": 2}, {"b": 3}]"#;
        assert_eq!(q(doc, "$[?@.a == 1 || @.b > 2].b"), "[\n  0,\n  3\n]");
        assert_eq!(q(doc, "$[?(@.a && @.b >= 2)].b"), "[\n  2\n]");
        assert_eq!(q(doc, "$[?!@.a].b"), "[\n  3\n]");
        assert_eq!(q(doc, "$[?!(@.a == 0 || @.a == 1)].b"), "[\n  3\n]");
        assert_eq!(q(doc, "$[?@.a != 1].b"), "[\n  2,\n  3\n]");
    }

    #[test]
    fn duplicate_keys_last_wins_at_first_position() {
        let doc = r#"{"a": 1, "b": 2, "a": 3}"#;
        assert_eq!(q(doc, "$"), "[\n  {\n    \"a\": 3,\n    \"b\": 2\n  }\n]");
        assert_eq!(q(doc, "$.*"), "[\n  3,\n  2\n]");
        assert_eq!(q(doc, "$.a"), "[\n  3\n]");
        // Escaped and plain spellings of one key are the same key.
        assert_eq!(q(r#"{"a": 1, "\u0061": 2}"#, "$.*"), "[\n  2\n]");
    }

    #[test]
    fn descendant_order_is_rfc_9535() {
        let doc = r#"{"a": {"b": 1}, "c": 2}"#;
        assert_eq!(q(doc, "$..*"), "[\n  {\n    \"b\": 1\n  },\n  2,\n  1\n]");
    }

    #[test]
    fn result_text_and_truncation() {
        let doc = br#"{"items": [1, 2, 3]}"#;
        assert_eq!(
            query_result_text(doc, "$.items[0]", 100).unwrap(),
            "[1 match for $.items[0]]\n\n[\n  1\n]"
        );
        assert_eq!(
            query_result_text(doc, "$.items[9]", 100).unwrap(),
            "No matches for query '$.items[9]'."
        );
        let full = query_json(doc, "$.items[*]").unwrap().1;
        assert_eq!(full, "[\n  1,\n  2,\n  3\n]");
        let cut = query_result_text(doc, "$.items[*]", 10).unwrap();
        // body[:10] = "[\n  1,\n  2" -> cut at its last newline.
        assert_eq!(
            cut,
            format!("[3 matches for $.items[*]]\n\n[\n  1,{TRUNCATION_NOTE}")
        );
        assert!(!query_result_text(doc, "$.items[*]", full.len())
            .unwrap()
            .contains("truncated"));
    }

    #[test]
    fn errors() {
        assert_eq!(
            q("[1,", "$"),
            "stored content is not valid JSON: Expecting value: line 1 column 4 (char 3)"
        );
        assert!(q("[1]", "$[").starts_with("invalid query at position 2:"));
    }

    #[test]
    fn number_comparisons_are_exact() {
        use std::cmp::Ordering::*;
        let c = eval::compare_number_texts;
        assert_eq!(c("1", "1.0"), Some(Equal));
        assert_eq!(c("9007199254740993", "9007199254740992.0"), Some(Greater));
        assert_eq!(c("-1", "-0.5"), Some(Less));
        assert_eq!(c("-0", "0.0"), Some(Equal));
        assert_eq!(c("100000000000000000000000", "1e23"), Some(Greater));
        assert_eq!(c("NaN", "1"), None);
        assert_eq!(c("Infinity", "1e400"), Some(Equal));
        assert_eq!(c("-Infinity", "-99999999999999999999999"), Some(Less));
        assert_eq!(c("007", "7"), Some(Equal));
    }

    #[test]
    fn slices_follow_python() {
        let s = |len, a, b, c| eval::slice_positions(len, a, b, c).collect::<Vec<_>>();
        assert_eq!(s(5, None, None, Some(-1)), vec![4, 3, 2, 1, 0]);
        assert_eq!(s(5, Some(-2), None, None), vec![3, 4]);
        assert_eq!(s(5, Some(1), Some(100), Some(2)), vec![1, 3]);
        assert_eq!(s(5, Some(-100), Some(-3), None), vec![0, 1]);
        assert_eq!(s(5, Some(10), Some(-10), Some(-3)), vec![4, 1]);
        assert_eq!(s(0, None, None, Some(-1)), Vec::<usize>::new());
        assert_eq!(
            s(3, Some(i64::MIN), Some(i64::MAX), Some(i64::MIN)),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn quadratic_query_with_a_huge_filter_hits_the_work_budget() {
        let doc = format!("{}1{}", "[".repeat(2000), "]".repeat(2000));
        let query = format!("$..*..*[?(@[0] == 5{})]", " || @[0] == 5".repeat(1000));
        // The budget counts work, not time: the error is the bound (no clock here,
        // so the verdict is the same on a slow or emulated machine).
        assert_eq!(
            query_json(doc.as_bytes(), &query),
            Err(JsonQueryError::TooMuchWork)
        );
        // The same shape with a small filter stays within the budget.
        assert!(query_json(doc.as_bytes(), "$..*..*[?(@[0] == 5)]").is_ok());
    }
}
