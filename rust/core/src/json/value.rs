use super::writer::{JsonWriter, Layout, LenSink, Sink};

// ---------------------------------------------------------------------------
// A plain value tree, for callers (and tests) without their own object model
// ---------------------------------------------------------------------------

/// A JSON value as Python's `json` sees one.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `None`.
    Null,
    /// `True` / `False`.
    Bool(bool),
    /// An `int` that fits 64 bits.
    Int(i64),
    /// A `float`.
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `list` or `tuple`.
    Array(Vec<Value>),
    /// A `dict` with string keys, in insertion order.
    Object(Vec<(String, Value)>),
}

/// Write `value` with the writer.
pub fn write_value<S: Sink>(w: &mut JsonWriter<S>, value: &Value) {
    match value {
        Value::Null => w.null(),
        Value::Bool(b) => w.boolean(*b),
        Value::Int(i) => w.int(*i),
        Value::Float(f) => w.float(*f),
        Value::Str(s) => w.string(s),
        Value::Array(items) if items.is_empty() => w.empty_array(),
        Value::Array(items) => {
            w.begin_array();
            for (i, item) in items.iter().enumerate() {
                w.item(i == 0);
                write_value(w, item);
            }
            w.end_array();
        }
        Value::Object(members) if members.is_empty() => w.empty_object(),
        Value::Object(members) => {
            w.begin_object();
            for (i, (k, v)) in members.iter().enumerate() {
                w.item(i == 0);
                w.string(k);
                w.colon();
                write_value(w, v);
            }
            w.end_object();
        }
    }
}

/// `json.dumps(value, indent=...)` for a [`Value`], as a `String`.
pub fn dumps(value: &Value, layout: Layout) -> String {
    let mut w = JsonWriter::new(Vec::new(), layout);
    write_value(&mut w, value);
    String::from_utf8_lossy(&w.into_sink()).into_owned()
}

/// Length of `json.dumps(value)` (single-line form) without building it.
pub fn dumps_len(value: &Value) -> usize {
    let mut w = JsonWriter::new(LenSink::default(), Layout::Compact);
    write_value(&mut w, value);
    w.into_sink().len
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    fn sample() -> Value {
        Value::Object(vec![
            (
                "a".into(),
                Value::Array(vec![Value::Int(1), Value::Float(2.5)]),
            ),
            ("b".into(), Value::Object(vec![])),
            ("c".into(), Value::Array(vec![])),
            (
                "d".into(),
                Value::Object(vec![
                    ("x".into(), Value::Null),
                    ("y".into(), Value::Bool(true)),
                ]),
            ),
            ("é".into(), Value::Str("ü\n".into())),
        ])
    }

    #[test]
    fn compact_layout() {
        let want = r#"{"a": [1, 2.5], "b": {}, "c": [], "d": {"x": null, "y": true}, "\u00e9": "\u00fc\n"}"#;
        assert_eq!(dumps(&sample(), Layout::Compact), want);
        assert_eq!(dumps_len(&sample()), want.len());
    }

    #[test]
    fn indented_layout() {
        let want = "{\n  \"a\": [\n    1,\n    2.5\n  ],\n  \"b\": {},\n  \"c\": [],\n  \"d\": {\n    \"x\": null,\n    \"y\": true\n  },\n  \"\\u00e9\": \"\\u00fc\\n\"\n}";
        assert_eq!(dumps(&sample(), Layout::spaces(2)), want);
        let zero = dumps(&Value::Array(vec![Value::Int(1)]), Layout::spaces(0));
        assert_eq!(zero, "[\n1\n]");
        assert_eq!(Layout::spaces(-3), Layout::spaces(0));
    }

    #[test]
    fn scalars_at_top_level() {
        assert_eq!(dumps(&Value::Null, Layout::spaces(2)), "null");
        assert_eq!(dumps(&Value::Str("x".into()), Layout::Compact), "\"x\"");
        assert_eq!(dumps(&Value::Array(vec![]), Layout::spaces(2)), "[]");
    }
}
