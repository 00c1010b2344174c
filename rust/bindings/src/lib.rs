//! `strands_offload._native`: the PyO3 face of the core.
//!
//! This layer only converts arguments and results and releases the GIL around
//! work that scales with the input; all logic lives in `offload_core`.
use pyo3::prelude::*;

mod counter;
mod deepcopy;
mod errors;
mod fallible;
mod grep;
mod identity;
mod joined;
mod json;
mod jsonpath;
mod keyword;
mod media;
mod meter;
mod rank;
mod relevance;
mod sent;
mod span_json;
mod tokens;

/// Which vector fast paths this build compiled: `"x86_64"`, `"aarch64"` or
/// `"portable"` (see `offload_core::arch`); for tests and bug reports.
#[pyfunction]
fn _fast_paths() -> &'static str {
    offload_core::arch::FAST_PATHS
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_fast_paths, m)?)?;
    errors::register(m)?;
    counter::register(m)?;
    tokens::register(m)?;
    grep::register(m)?;
    identity::register(m)?;
    json::register(m)?;
    meter::register(m)?;
    media::register(m)?;
    sent::register(m)?;
    keyword::register(m)?;
    jsonpath::register(m)?;
    joined::register(m)?;
    rank::register(m)?;
    relevance::register(m)?;
    deepcopy::register(m)?;
    span_json::register(m)?;
    Ok(())
}
