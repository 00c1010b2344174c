//! What `json.dumps` raises, worded as it words it, and handing a call over
//! to `json.dumps` itself.
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

/// `TypeError: Object of type X is not JSON serializable`, as `json` words it.
///
/// # Safety
/// `obj` must be a live object and the GIL held.
pub(crate) unsafe fn not_serializable(py: Python<'_>, obj: *mut ffi::PyObject) -> PyErr {
    let any = Bound::from_borrowed_ptr(py, obj);
    let name = any
        .getattr(pyo3::intern!(py, "__class__"))
        .and_then(|c| c.getattr(pyo3::intern!(py, "__name__")))
        .and_then(|n| n.str());
    match name {
        Ok(n) => PyTypeError::new_err(format!(
            "Object of type {} is not JSON serializable",
            n.to_string_lossy()
        )),
        Err(e) => e,
    }
}

/// The error `json.dumps` raises for a key of an unsupported type.
///
/// The compact (C) and indented (Python) encoders name the type differently
/// (`decimal.Decimal` vs `Decimal`), so `json` itself is asked, with a
/// one-key dict in the same layout.
///
/// # Safety
/// `key` must be a live object and the GIL held.
pub(crate) unsafe fn bad_key(
    py: Python<'_>,
    key: *mut ffi::PyObject,
    indent: Option<&Bound<'_, PyAny>>,
) -> PyErr {
    let key = Bound::from_borrowed_ptr(py, key);
    let probe = || -> PyResult<Option<PyErr>> {
        let one = PyDict::new(py);
        one.set_item(&key, py.None())?;
        Ok(dumps_in_python(py, one.as_any(), indent).err())
    };
    match probe() {
        Ok(Some(err)) if err.is_instance_of::<PyTypeError>(py) => err,
        _ => {
            let name = key
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "object".to_owned());
            PyTypeError::new_err(format!(
                "keys must be str, int, float, bool or None, not {name}"
            ))
        }
    }
}

/// `json.dumps(obj, indent=indent)` itself, for the values the walk hands over.
pub(crate) fn dumps_in_python<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    indent: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyString>> {
    let kwargs = PyDict::new(py);
    if let Some(indent) = indent {
        kwargs.set_item("indent", indent)?;
    }
    let text = json_module(py)?
        .getattr("dumps")?
        .call((obj,), Some(&kwargs))?;
    Ok(text.cast_into::<PyString>()?)
}

/// The `json` module, imported once.
fn json_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static JSON: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    JSON.get_or_try_init(py, || py.import("json").map(Bound::unbind))
        .map(|m| m.bind(py))
}
