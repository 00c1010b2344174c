//! Token counters as objects: a name is resolved once into a shared
//! `TokenCounter`, and only counters cross the native boundary afterwards
//! (the package's public functions take names and resolve them first).
use offload_core::tokens::{Bpe, Encoding, TokenError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::errors::token_error;

/// How tokens are counted: an exact BPE vocabulary (`cl100k_base`,
/// `o200k_base`) or the SDK's chars/4 heuristic. One shared object per name.
#[pyclass(module = "strands_offload._native", frozen)]
pub struct TokenCounter {
    encoding: Encoding,
}

impl TokenCounter {
    pub(crate) fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The BPE vocabulary, or the error encode and decode give for the heuristic.
    pub(crate) fn bpe(&self) -> PyResult<Bpe> {
        match self.encoding {
            Encoding::Bpe(bpe) => Ok(bpe),
            Encoding::Heuristic => Err(token_error(TokenError::NoTokenIds("heuristic".into()))),
        }
    }
}

#[pymethods]
impl TokenCounter {
    /// The name the counter was resolved from.
    #[getter]
    fn name(&self) -> &'static str {
        match self.encoding {
            Encoding::Bpe(bpe) => bpe.name(),
            Encoding::Heuristic => "heuristic",
        }
    }

    /// Whether counts are exact BPE tokens (not the heuristic estimate).
    #[getter]
    fn exact(&self) -> bool {
        matches!(self.encoding, Encoding::Bpe(_))
    }

    fn __repr__(&self) -> String {
        format!("token_counter({:?})", self.name())
    }
}

/// The shared counter for `name` ("cl100k_base", "o200k_base" or
/// "heuristic"); an unknown name raises `ValueError` listing the known ones.
#[pyfunction]
fn token_counter(py: Python<'_>, name: &str) -> PyResult<Py<TokenCounter>> {
    static SHARED: [PyOnceLock<Py<TokenCounter>>; 3] =
        [PyOnceLock::new(), PyOnceLock::new(), PyOnceLock::new()];
    let encoding = name.parse::<Encoding>().map_err(token_error)?;
    let slot = match encoding {
        Encoding::Bpe(Bpe::Cl100kBase) => 0,
        Encoding::Bpe(Bpe::O200kBase) => 1,
        Encoding::Heuristic => 2,
    };
    SHARED[slot]
        .get_or_try_init(py, || Py::new(py, TokenCounter { encoding }))
        .map(|shared| shared.clone_ref(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TokenCounter>()?;
    m.add_function(wrap_pyfunction!(token_counter, m)?)?;
    Ok(())
}
