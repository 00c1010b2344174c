//! The named exceptions of `strands_offload`, and how core errors map to them.
//!
//! Every class is a `ValueError` subclass, so code written against the reference
//! (which raises plain `ValueError`) keeps catching them. The core knows none of
//! these: its error enums are mapped here.
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
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
