//! `json_query`: JSONPath queries on stored JSON bytes, for the retrieval tool.
//!
//! Parsing, selection and formatting are `offload_core::jsonpath`; this layer
//! borrows the bytes and releases the GIL while the core works; its errors
//! become the named `ValueError` subclasses in [`crate::errors`].
use offload_core::jsonpath::{query_result_text_worded, ErrorWording};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::{detach_checked, json_query_error};

/// Run a JSONPath `query` on the JSON document `data` and return the text the
/// model sees: a match-count header and the matches as an indented JSON array,
/// cut to `max_chars` characters. Invalid documents fail with `json.loads`'s
/// text; `trailing_comma_errors` selects CPython 3.13's wording of a comma
/// before `]` or `}`.
#[pyfunction]
#[pyo3(signature = (data, query, *, max_chars = 10_000, trailing_comma_errors = false))]
fn json_query<'py>(
    py: Python<'py>,
    data: &[u8],
    query: &str,
    max_chars: i64,
    trailing_comma_errors: bool,
) -> PyResult<Bound<'py, PyString>> {
    let max_chars = usize::try_from(max_chars)
        .map_err(|_| PyValueError::new_err("max_chars must not be negative"))?;
    let wording = if trailing_comma_errors {
        ErrorWording::TrailingComma
    } else {
        ErrorWording::Classic
    };
    let text = detach_checked(py, || {
        query_result_text_worded(data, query, max_chars, wording)
    })?
    .map_err(json_query_error)?;
    crate::fallible::new_str(py, &text)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(json_query, m)?)?;
    Ok(())
}
