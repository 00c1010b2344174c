//! The named exceptions of `strands_offload`, and how core errors map to them.
//!
//! Every class is a `ValueError` subclass, so code written against the reference
//! (which raises plain `ValueError`) keeps catching them. The core knows none of
//! these: its error enums are mapped here.
use offload_core::grep::GrepError;
use offload_core::jsonpath::JsonQueryError;
use offload_core::tokens::TokenError;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    strands_offload,
    UntranslatablePattern,
    PyValueError,
    "A pattern Python accepts but the native engines cannot match with the same meaning."
);
create_exception!(
    strands_offload,
    PatternTooExpensive,
    PyValueError,
    "A pattern that needs more work than the bounded engines allow on this text."
);
create_exception!(
    strands_offload,
    InvalidJsonQuery,
    PyValueError,
    "A JSONPath query that does not parse."
);
create_exception!(
    strands_offload,
    JsonQueryTooExpensive,
    PyValueError,
    "A JSONPath query that selects too many values or needs too much work on this document."
);
create_exception!(
    strands_offload,
    InvalidJsonDocument,
    PyValueError,
    "Stored content that a JSON query was asked of is not valid JSON."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add(
        "UntranslatablePattern",
        py.get_type::<UntranslatablePattern>(),
    )?;
    m.add("PatternTooExpensive", py.get_type::<PatternTooExpensive>())?;
    m.add("InvalidJsonQuery", py.get_type::<InvalidJsonQuery>())?;
    m.add(
        "JsonQueryTooExpensive",
        py.get_type::<JsonQueryTooExpensive>(),
    )?;
    m.add("InvalidJsonDocument", py.get_type::<InvalidJsonDocument>())?;
    Ok(())
}

/// A grep error: a pattern that needs too much work is [`PatternTooExpensive`],
/// one the native engines cannot match with Python's meaning
/// [`UntranslatablePattern`], bytes that are not UTF-8 a plain `ValueError`.
pub(crate) fn grep_error(err: GrepError) -> PyErr {
    let text = err.to_string();
    match err {
        GrepError::BacktrackLimit { .. } | GrepError::TimeLimit { .. } | GrepError::TooBig(_) => {
            PatternTooExpensive::new_err(text)
        }
        GrepError::Compile(_) | GrepError::SurrogateAmbiguous => {
            UntranslatablePattern::new_err(text)
        }
        GrepError::InvalidUtf8 { .. } => PyValueError::new_err(text),
    }
}

/// A JSON query error: the document, the query, or the work it needs.
pub(crate) fn json_query_error(err: JsonQueryError) -> PyErr {
    let text = err.to_string();
    match err {
        JsonQueryError::Document(_) => InvalidJsonDocument::new_err(text),
        JsonQueryError::Query(_) => InvalidJsonQuery::new_err(text),
        JsonQueryError::TooManyMatches | JsonQueryError::TooMuchWork => {
            JsonQueryTooExpensive::new_err(text)
        }
    }
}

/// A token error: an id outside the vocabulary is `KeyError` (as a lookup in
/// the vocabulary would be), anything else `ValueError`.
pub(crate) fn token_error(err: TokenError) -> PyErr {
    match err {
        TokenError::UnknownToken(_) => PyKeyError::new_err(err.to_string()),
        _ => PyValueError::new_err(err.to_string()),
    }
}

/// Python's `MemoryError` for an allocation the core could not make.
pub(crate) fn memory_error(oom: offload_core::alloc::OutOfMemory) -> PyErr {
    pyo3::exceptions::PyMemoryError::new_err(format!("could not allocate {} bytes", oom.bytes))
}

/// Run `f` with the GIL released; an allocation it could not make is `MemoryError`
/// (the core unwinds with [`offload_core::alloc::OutOfMemory`] instead of aborting).
pub(crate) fn detach_checked<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| offload_core::alloc::catch_out_of_memory(f))
        .map_err(memory_error)
}
