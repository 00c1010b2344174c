//! Binding of the keyword overlap scorer used by `KeywordSearchStrategy`.
use offload_core::keyword::{KeywordQuery, WordTable as CoreWordTable};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Texts longer than this (in UTF-8 bytes) are scored with the GIL released.
const DETACH_ABOVE: usize = 16 * 1024;

/// Which code points are word characters (Python `re` `\w`) for one Unicode version.
#[pyclass(module = "strands_offload._native", frozen)]
pub struct WordTable {
    table: CoreWordTable,
}

#[pymethods]
impl WordTable {
    /// A table from sorted, disjoint, inclusive `(low, high)` code-point ranges.
    #[new]
    fn new(ranges: Vec<(u32, u32)>) -> PyResult<Self> {
        CoreWordTable::from_ranges(ranges)
            .map(|table| Self { table })
            .map_err(|error| PyValueError::new_err(error.to_string()))
    }

    /// The built-in table for `unicode_version`, or None when there is none.
    #[staticmethod]
    fn shipped(unicode_version: &str) -> Option<Self> {
        CoreWordTable::shipped(unicode_version).map(|table| Self { table })
    }

    /// The Unicode versions with a built-in table, oldest first.
    #[staticmethod]
    fn shipped_versions() -> Vec<&'static str> {
        CoreWordTable::shipped_versions().collect()
    }

    /// The table's sorted, inclusive `(low, high)` ranges.
    fn ranges(&self) -> Vec<(u32, u32)> {
        self.table.ranges().to_vec()
    }

    fn is_word_char(&self, c: char) -> bool {
        self.table.is_word_char(c)
    }

    fn __len__(&self) -> usize {
        self.table.range_count()
    }
}

/// Scores lower-cased texts by how many distinct query words they contain.
#[pyclass(module = "strands_offload._native", frozen)]
pub struct KeywordScorer {
    query: KeywordQuery,
}

#[pymethods]
impl KeywordScorer {
    #[new]
    fn new(words: Vec<String>, table: PyRef<'_, WordTable>) -> Self {
        Self {
            query: KeywordQuery::new(words, table.table.clone()),
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
    m.add_class::<WordTable>()?;
    m.add_class::<KeywordScorer>()?;
    Ok(())
}
