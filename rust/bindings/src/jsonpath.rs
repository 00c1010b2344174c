//! `json_query`: JSONPath queries on stored JSON bytes, for the retrieval tool.
//!
//! Parsing, selection and formatting are `offload_core::jsonpath`; this layer
//! borrows the bytes, releases the GIL while the core works, and maps errors
//! to `ValueError`.
use offload_core::jsonpath::query_result_text;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Run a JSONPath `query` on the JSON document `data` and return the text the
/// model sees: a match-count header and the matches as an indented JSON array,
/// cut to `max_chars` characters.
#[pyfunction]
#[pyo3(signature = (data, query, *, max_chars = 10_000))]
fn json_query(py: Python<'_>, data: &[u8], query: &str, max_chars: i64) -> PyResult<String> {
    let max_chars = usize::try_from(max_chars)
        .map_err(|_| PyValueError::new_err("max_chars must not be negative"))?;
    py.detach(|| query_result_text(data, query, max_chars))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(json_query, m)?)?;
    Ok(())
}
