//! Binding of the keyword overlap scorer used by `KeywordSearchStrategy`.
use offload_core::keyword::KeywordQuery;
use pyo3::prelude::*;

/// Texts longer than this (in UTF-8 bytes) are scored with the GIL released.
const DETACH_ABOVE: usize = 16 * 1024;

/// Scores lower-cased texts by how many distinct query words they contain.
#[pyclass(module = "strands_offload._native", frozen)]
pub struct KeywordScorer {
    query: KeywordQuery,
}

#[pymethods]
impl KeywordScorer {
    #[new]
    fn new(words: Vec<String>) -> Self {
        Self {
            query: KeywordQuery::new(words),
        }
    }

    /// Count the distinct query words found among the words of `key` and `text`.
    fn score(&self, py: Python<'_>, key: &str, text: &str) -> usize {
        if key.len() + text.len() > DETACH_ABOVE {
            py.detach(|| self.query.score([key, text]))
        } else {
            self.query.score([key, text])
        }
    }

    fn __len__(&self) -> usize {
        self.query.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KeywordScorer>()?;
    Ok(())
}
