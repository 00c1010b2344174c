//! `strands_offload._native`: the PyO3 face of the core.
//!
//! This layer only converts arguments and results and releases the GIL around
//! work that scales with the input; all logic lives in `offload_core`.
use pyo3::prelude::*;

mod errors;
mod grep;
mod heuristic;
mod json;
mod jsonpath;
mod keyword;
mod tokens;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    tokens::register(m)?;
    grep::register(m)?;
    json::register(m)?;
    heuristic::register(m)?;
    keyword::register(m)?;
    jsonpath::register(m)?;
    Ok(())
}
