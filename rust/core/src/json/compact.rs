//! The single-line text of a value recovered from its indented text.
//!
//! `json.dumps(v, indent=...)` and `json.dumps(v)` differ only outside
//! strings: a line break and the indentation after it replace the space of
//! the single-line item separator (`","` + newline for `", "`), and vanish
//! after an opening or before a closing bracket. So a caller that already
//! holds the indented text (the offloader stores it) gets the single-line
//! text, to count its tokens, without walking the value again.
use crate::alloc;

/// Append to `out` the single-line form of `indented`, which must be the
/// output of the indented writer (ASCII outside strings, strings escaped)
/// with an `indent` made of spaces and tabs only.
pub fn compact_from_indented(indented: &[u8], indent: &[u8], out: &mut Vec<u8>) {
    debug_assert!(indent.iter().all(|&b| b == b' ' || b == b'\t'));
    alloc::reserve(out, indented.len());
    let mut i = 0;
    while i < indented.len() {
        // Copy up to the next string or line break as it is.
        let Some(at) = memchr::memchr2(b'"', b'\n', &indented[i..]) else {
            alloc::extend(out, &indented[i..]);
            break;
        };
        alloc::extend(out, &indented[i..i + at]);
        i += at;
        if indented[i] == b'"' {
            let end = string_end(indented, i);
            alloc::extend(out, &indented[i..end]);
            i = end;
            continue;
        }
        // A line break: drop it and the indentation after it.
        i += 1;
        if !indent.is_empty() {
            while indented[i..].starts_with(indent) {
                i += indent.len();
            }
        }
        if out.last() == Some(&b',') {
            alloc::push(out, b' ');
        }
    }
}

/// Index just past the string that opens at `start` (a `"`), skipping escapes.
fn string_end(text: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(at) = memchr::memchr2(b'"', b'\\', &text[i..]) {
        i += at;
        if text[i] == b'\\' {
            i += 2;
            continue;
        }
        return i + 1;
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{dumps, Layout, Value};

    fn compact(v: &Value, indent: &[u8]) -> String {
        let indented = dumps(v, Layout::Indent(indent.to_vec()));
        let mut out = Vec::new();
        compact_from_indented(indented.as_bytes(), indent, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn equals_the_single_line_writer() {
        let s = |t: &str| Value::Str(t.into());
        let values = [
            Value::Array(vec![]),
            Value::Object(vec![]),
            Value::Array(vec![Value::Int(1), s("a,\n \"b\"\\"), Value::Null]),
            Value::Object(vec![
                (
                    "k, \"x\"\n".into(),
                    Value::Array(vec![Value::Array(vec![]), Value::Object(vec![])]),
                ),
                (
                    "e".into(),
                    Value::Object(vec![("z".into(), Value::Float(1.5))]),
                ),
            ]),
            s("\\\\\""),
        ];
        for v in &values {
            for indent in [&b"  "[..], b"\t", b"", b"    "] {
                assert_eq!(compact(v, indent), dumps(v, Layout::Compact), "{indent:?}");
            }
        }
    }
}
