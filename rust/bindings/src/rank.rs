//! Binding of the BM25 ranker of short documents (`offload_core::rank`).
use std::borrow::Cow;
use std::sync::{Mutex, PoisonError};

use offload_core::rank;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::detach_checked;

/// Scores texts against a query with BM25; the index is rebuilt only when the texts change.
#[pyclass(module = "strands_offload._native", frozen)]
pub struct Bm25Ranker {
    inner: Mutex<rank::Ranker>,
}

fn text_of<'a>(item: &'a Bound<'_, PyString>) -> Cow<'a, str> {
    // Lone surrogates cannot be UTF-8: they rank as U+FFFD (ranking only, nothing is returned).
    match item.to_str() {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => Cow::Owned(item.to_string_lossy().into_owned()),
    }
}

#[pymethods]
impl Bm25Ranker {
    #[new]
    fn new() -> Self {
        Self {
            inner: Mutex::new(rank::Ranker::new()),
        }
    }

    /// One score in `[0, 1]` per text (the best match 1, no match 0), with the GIL released.
    fn score(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyString>,
        texts: Vec<Bound<'_, PyString>>,
    ) -> PyResult<Vec<f64>> {
        let query = text_of(query);
        let held: Vec<Cow<'_, str>> = texts.iter().map(text_of).collect();
        let query: &str = &query;
        let held: &[Cow<'_, str>] = &held;
        detach_checked(py, || {
            let mut ranker = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            ranker.score(query, held)
        })
    }

    /// How many times the index was built (once per change of the texts).
    #[getter]
    fn builds(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .builds()
    }
}

/// The terms BM25 ranks `text` by (split on case and separators, folded, stemmed, no stop words).
#[pyfunction]
fn rank_terms(text: &Bound<'_, PyString>) -> Vec<String> {
    rank::terms(&text_of(text))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Bm25Ranker>()?;
    m.add_function(wrap_pyfunction!(rank_terms, m)?)?;
    Ok(())
}
