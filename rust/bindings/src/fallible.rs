//! Python `str` / `bytes` built from buffers whose size follows the input.
//!
//! PyO3's `PyString::new` and `PyBytes::new` panic when CPython cannot allocate
//! the object, which reaches Python as `PanicException` (not an `Exception`);
//! these raise the `MemoryError` CPython set instead.
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A `str` of UTF-8 text.
pub(crate) fn new_str<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: valid UTF-8 of the given length; the result is a new reference or
    // NULL with an error set.
    unsafe {
        let p =
            ffi::PyUnicode_FromStringAndSize(text.as_ptr().cast(), text.len() as ffi::Py_ssize_t);
        Ok(Bound::from_owned_ptr_or_err(py, p)?.cast_into_unchecked::<PyString>())
    }
}

/// A `bytes` copy of `data`.
pub(crate) fn new_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: as above, for bytes.
    unsafe {
        let p = ffi::PyBytes_FromStringAndSize(data.as_ptr().cast(), data.len() as ffi::Py_ssize_t);
        Ok(Bound::from_owned_ptr_or_err(py, p)?.cast_into_unchecked::<PyBytes>())
    }
}
